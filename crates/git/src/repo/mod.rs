//! Everything that touches git goes through here (and only here uses git2,
//! a rule `clippy.toml` keeps): the user's repository — the identity of
//! the person approving, and where git runs hooks — in this file, and the
//! private mail store of `aea sync` in [`mail_store`].
//!
//! Repositories are opened with libgit2's `FROM_ENV` flag so that git's own
//! environment (`GIT_CONFIG_GLOBAL`, `GIT_CONFIG_NOSYSTEM`, `GIT_DIR`, …)
//! means the same to aea as to the `git` that runs the hooks.

use std::path::{Path, PathBuf};

use git2::{ConfigLevel, Repository, RepositoryOpenFlags};

use crate::approval::Person;
use crate::error::{Error, Result};

mod mail_store;

pub use mail_store::{FETCHED_PREFIX, MailStore, Pushed};

fn open(path: &Path) -> std::result::Result<Repository, git2::Error> {
    Repository::open_ext(
        path,
        RepositoryOpenFlags::FROM_ENV,
        std::iter::empty::<&str>(),
    )
}

/// Makes `path` (an existing folder) an empty git repository, as `git
/// init` would.
pub fn init(path: &Path) -> Result<()> {
    Repository::init(path)
        .map(drop)
        .map_err(|e| git_error(path, "create a repository in", e))
}

/// The paths under the folder `dir` (of a git work tree) that the next
/// commit would add or change: in git's index (or the index file `index`,
/// relative to the top of the work tree, that git made the commit from),
/// and not in `HEAD` with the same content. Relative to `dir`. Empty
/// outside git.
pub fn staged_under(dir: &Path, index: Option<&Path>) -> Result<Vec<String>> {
    let Ok(repo) = open(dir) else {
        return Ok(Vec::new());
    };
    let Some(prefix) = relative_to_workdir(&repo, dir) else {
        return Ok(Vec::new());
    };
    let named = index.and_then(|file| {
        let file = repo
            .workdir()
            .map_or_else(|| file.to_path_buf(), |w| w.join(file));
        git2::Index::open(&file).ok()
    });
    let index = match named {
        Some(index) => index,
        None => repo
            .index()
            .map_err(|e| git_error(dir, "read the index of", e))?,
    };
    let head = repo.head().ok().and_then(|h| h.peel_to_tree().ok());
    let mut staged = Vec::new();
    for entry in index.iter() {
        let path = String::from_utf8_lossy(&entry.path).into_owned();
        let Some(rel) = path.strip_prefix(&prefix) else {
            continue;
        };
        let unchanged = head
            .as_ref()
            .and_then(|t| t.get_path(Path::new(&path)).ok())
            .is_some_and(|e| e.id() == entry.id);
        if !unchanged {
            staged.push(rel.to_string());
        }
    }
    Ok(staged)
}

/// The bytes of `name` in the folder `dir` (of a git work tree) as the
/// commit `HEAD` holds them; `None` outside git, before the first commit,
/// or when `HEAD` has no such file.
pub fn committed_under(dir: &Path, name: &str) -> Result<Option<Vec<u8>>> {
    let Ok(repo) = open(dir) else {
        return Ok(None);
    };
    let Some(prefix) = relative_to_workdir(&repo, dir) else {
        return Ok(None);
    };
    let Some(tree) = repo.head().ok().and_then(|h| h.peel_to_tree().ok()) else {
        return Ok(None);
    };
    let Ok(entry) = tree.get_path(Path::new(&format!("{prefix}{name}"))) else {
        return Ok(None);
    };
    let blob = repo
        .find_blob(entry.id())
        .map_err(|e| git_error(dir, "read HEAD of", e))?;
    Ok(Some(blob.content().to_vec()))
}

/// Whether git ignores each of `names` (paths relative to the folder
/// `dir` of a git work tree); `None` outside git.
pub fn ignored_under(dir: &Path, names: &[&str]) -> Option<Vec<bool>> {
    let repo = open(dir).ok()?;
    let prefix = relative_to_workdir(&repo, dir)?;
    names
        .iter()
        .map(|n| {
            repo.status_should_ignore(Path::new(&format!("{prefix}{n}")))
                .ok()
        })
        .collect()
}

/// `dir` relative to the top of `repo`'s work tree, as git writes index
/// paths, with a trailing `/` (empty for the top itself).
fn relative_to_workdir(repo: &Repository, dir: &Path) -> Option<String> {
    let top = std::fs::canonicalize(repo.workdir()?).ok()?;
    let dir = std::fs::canonicalize(dir).ok()?;
    let rel = dir.strip_prefix(&top).ok()?;
    let mut text = rel.to_str()?.replace('\\', "/");
    if !text.is_empty() {
        text.push('/');
    }
    Some(text)
}

/// The git identity configured for `repo` (`user.name` / `user.email`,
/// with the user's global config): who decides an approval. An empty one
/// when `repo` is not a git repository and no global identity is set.
pub fn identity(repo: &Path) -> Person {
    let config = open(repo)
        .and_then(|r| r.config())
        .or_else(|_| git2::Config::open_default());
    let Ok(config) = config else {
        return Person::default();
    };
    let get = |key: &str| {
        config
            .get_string(key)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    Person {
        name: get("user.name"),
        email: get("user.email"),
    }
}

/// Where `core.hooksPath` came from, when it is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HooksPathSource {
    /// Not set: git runs hooks from `<common dir>/hooks`.
    Default,
    /// Set in this repository's own config (or its worktree config).
    Local,
    /// Set in the user's or the system's config: it applies to every
    /// repository of this user.
    Inherited,
}

/// Where git runs the hooks of one repository.
#[derive(Debug, Clone)]
pub struct HookDirs {
    /// The directory git runs hooks from.
    pub active: PathBuf,
    pub source: HooksPathSource,
    /// `<common dir>/hooks`, shared by all linked worktrees.
    pub default: PathBuf,
    /// The top of the working tree, where git runs hooks (none when bare).
    pub workdir: Option<PathBuf>,
}

impl HookDirs {
    /// Where git runs hooks from, if that is not `repo`: hooks look for
    /// `.aea/` there, so they cannot serve one in a subdirectory (a package
    /// of a monorepo).
    pub fn runs_elsewhere_than(&self, repo: &Path) -> Option<&Path> {
        let root = self.workdir.as_deref()?;
        let same = match (std::fs::canonicalize(root), std::fs::canonicalize(repo)) {
            (Ok(a), Ok(b)) => a == b,
            _ => root == repo,
        };
        (!same).then_some(root)
    }
}

/// The tops of the other work trees sharing the repository at or above
/// `path` (its main work tree and its linked ones, `git worktree`), which
/// share its hooks. None when it has no other, or cannot be read.
pub fn other_worktrees(path: &Path) -> Vec<PathBuf> {
    let Ok(repo) = open(path) else {
        return Vec::new();
    };
    let here = repo.workdir().and_then(|w| std::fs::canonicalize(w).ok());
    let mut tops = Vec::new();
    // The main work tree holds the common git dir (`<top>/.git`).
    if let Some(main) = repo.commondir().parent()
        && repo.commondir().file_name().is_some_and(|n| n == ".git")
    {
        tops.push(main.to_path_buf());
    }
    if let Ok(names) = repo.worktrees() {
        for name in names.iter().flatten() {
            if let Ok(tree) = repo.find_worktree(name) {
                tops.push(tree.path().to_path_buf());
            }
        }
    }
    tops.retain(|t| std::fs::canonicalize(t).ok() != here);
    tops.sort();
    tops.dedup();
    tops
}

/// Finds where git runs hooks for the repository at or above `path`.
pub fn hook_dirs(path: &Path) -> Result<HookDirs> {
    let repo = open(path).map_err(|e| git_error(path, "open", e))?;
    let default = repo.commondir().join("hooks");
    // Without the trailing slash libgit2 gives it, for messages.
    let workdir = repo.workdir().map(|p| p.components().collect::<PathBuf>());
    let config = repo
        .config()
        .map_err(|e| git_error(path, "read the config of", e))?;
    // The entry that wins is the last one listed (highest level).
    let mut found: Option<(ConfigLevel, String)> = None;
    if let Ok(mut entries) = config.entries(Some("core.hookspath")) {
        while let Some(Ok(entry)) = entries.next() {
            if let Some(value) = entry.value() {
                found = Some((entry.level(), value.to_string()));
            }
        }
    }
    let Some((level, value)) = found.filter(|(_, v)| !v.is_empty()) else {
        return Ok(HookDirs {
            active: default.clone(),
            source: HooksPathSource::Default,
            default,
            workdir,
        });
    };
    let source = match level {
        ConfigLevel::Local | ConfigLevel::Worktree | ConfigLevel::App | ConfigLevel::Highest => {
            HooksPathSource::Local
        }
        ConfigLevel::ProgramData | ConfigLevel::System | ConfigLevel::XDG | ConfigLevel::Global => {
            HooksPathSource::Inherited
        }
    };
    // git takes a relative hooksPath from where hooks run: the working tree,
    // or the git dir of a bare repository.
    let expanded = match value.strip_prefix("~/") {
        Some(rest) => directories::BaseDirs::new()
            .map_or_else(|| PathBuf::from(&value), |d| d.home_dir().join(rest)),
        None => PathBuf::from(&value),
    };
    let base = workdir.clone().unwrap_or_else(|| repo.path().to_path_buf());
    Ok(HookDirs {
        active: base.join(expanded),
        source,
        default,
        workdir,
    })
}

/// "Not a repository" only when git found none; anything else (a
/// config git cannot parse, a damaged repository) is said as it is.
fn git_error(path: &Path, op: &'static str, e: git2::Error) -> Error {
    if e.code() == git2::ErrorCode::NotFound && op == "open" {
        return Error::NotAGitRepository {
            path: path.to_path_buf(),
            detail: e.message().to_string(),
        };
    }
    Error::Git {
        path: path.to_path_buf(),
        op,
        source: Box::new(e),
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

    #[test]
    fn hooks_go_to_the_common_dir_or_a_local_hooks_path() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        let dirs = hook_dirs(dir.path()).unwrap();
        assert_eq!(dirs.source, HooksPathSource::Default);
        assert!(
            dirs.active.ends_with(".git/hooks"),
            "{}",
            dirs.active.display()
        );
        repo.config()
            .unwrap()
            .set_str("core.hooksPath", "githooks")
            .unwrap();
        let dirs = hook_dirs(dir.path()).unwrap();
        assert_eq!(dirs.source, HooksPathSource::Local);
        assert_eq!(dirs.active, dir.path().join("githooks"));
    }
}
