//! Everything that touches git goes through here (and only here uses git2).

use std::path::Path;

/// Who a person is, for approvals: git's `user.name` / `user.email` of the
/// repository (with the user's global config), if set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub name: Option<String>,
    pub email: Option<String>,
}

/// The git identity configured for `repo`, or an empty one when `repo` is
/// not a git repository and no global identity is set.
pub fn identity(repo: &Path) -> Identity {
    let config = git2::Repository::discover(repo)
        .and_then(|r| r.config())
        .or_else(|_| git2::Config::open_default());
    let Ok(config) = config else {
        return Identity::default();
    };
    let get = |key: &str| {
        config
            .get_string(key)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    Identity {
        name: get("user.name"),
        email: get("user.email"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_local_identity() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        let mut config = repo.config().unwrap();
        config.set_str("user.name", "Ana Reviewer").unwrap();
        config.set_str("user.email", "ana@example.com").unwrap();
        let sub = dir.path().join("deep");
        std::fs::create_dir(&sub).unwrap();
        let id = identity(&sub);
        assert_eq!(id.name.as_deref(), Some("Ana Reviewer"));
        assert_eq!(id.email.as_deref(), Some("ana@example.com"));
    }
}
