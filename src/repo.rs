//! Everything that touches git goes through here (and only here uses git2):
//! the identity of the person approving, and where git runs hooks.
//!
//! Repositories are opened with libgit2's `FROM_ENV` flag so that git's own
//! environment (`GIT_CONFIG_GLOBAL`, `GIT_CONFIG_NOSYSTEM`, `GIT_DIR`, …)
//! means the same to aea as to the `git` that runs the hooks.

use std::path::{Path, PathBuf};

use git2::{ConfigLevel, Repository, RepositoryOpenFlags};

use crate::error::{Error, Result};

fn open(path: &Path) -> std::result::Result<Repository, git2::Error> {
    Repository::open_ext(
        path,
        RepositoryOpenFlags::FROM_ENV,
        std::iter::empty::<&str>(),
    )
}

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
    let config = open(repo)
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
}

/// Finds where git runs hooks for the repository at or above `path`.
pub fn hook_dirs(path: &Path) -> Result<HookDirs> {
    let repo = open(path).map_err(|e| Error::NotAGitRepository {
        path: path.to_path_buf(),
        detail: e.message().to_string(),
    })?;
    let default = repo.commondir().join("hooks");
    let workdir = repo.workdir().map(Path::to_path_buf);
    let config = repo.config().map_err(|e| git_error(path, &e))?;
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
    let base = workdir.unwrap_or_else(|| repo.path().to_path_buf());
    Ok(HookDirs {
        active: base.join(expanded),
        source,
        default,
    })
}

fn git_error(path: &Path, e: &git2::Error) -> Error {
    Error::NotAGitRepository {
        path: path.to_path_buf(),
        detail: e.message().to_string(),
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

// ---------------------------------------------------------------------------
// The mail store: a private bare repository in `.aea/.sync/` that holds
// mail and receipts as commits on `refs/aea/…`. Local object work uses
// git2; the network goes through the user's own `git` (credential helpers,
// ssh configuration), as SPEC §11 asks. The user's repository, branches,
// index and working tree are never involved.

/// Local copies of the remote's `refs/aea/*` live under this prefix.
pub const FETCHED_PREFIX: &str = "refs/fetched/";

pub struct MailStore {
    repo: Repository,
    dir: PathBuf,
}

/// How a push ended when git itself ran fine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    Done,
    /// Someone else pushed first: fetch, rebuild, retry.
    Rejected,
}

impl MailStore {
    /// Opens the store at `dir`, creating an empty bare repository there.
    pub fn open(dir: &Path) -> Result<Self> {
        let repo = if dir.join("HEAD").exists() {
            Repository::open_bare(dir)
        } else {
            Repository::init_bare(dir)
        }
        .map_err(|e| git_error(dir, &e))?;
        Ok(MailStore {
            repo,
            dir: dir.to_path_buf(),
        })
    }

    /// Runs the user's git on the store, with the hook-time variables that
    /// would point it at another repository removed.
    fn git(&self, args: &[&str]) -> std::result::Result<std::process::Output, String> {
        std::process::Command::new("git")
            .arg("--git-dir")
            .arg(&self.dir)
            .args(["-c", "core.hooksPath=/dev/null"])
            // A remote is data, never a program: no `ext::`/`fd::` transport
            // helpers, whatever a config or a URL says (second wall behind
            // `config_trust::check_remote`).
            .args([
                "-c",
                "protocol.ext.allow=never",
                "-c",
                "protocol.fd.allow=never",
            ])
            .env("GIT_ALLOW_PROTOCOL", "file:git:http:https:ssh")
            .args(args)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_OBJECT_DIRECTORY")
            .env_remove("GIT_COMMON_DIR")
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("cannot run git: {e}"))
    }

    /// Fetches every `refs/aea/*` of `url` into `refs/fetched/aea/*`.
    pub fn fetch(&self, url: &str) -> std::result::Result<(), String> {
        let out = self.git(&[
            "fetch",
            "--quiet",
            "--no-tags",
            "--prune",
            // Everything after `--` is a repository or a refspec, never an
            // option (`--upload-pack=…` as a remote runs nothing).
            "--",
            url,
            "+refs/aea/*:refs/fetched/aea/*",
        ])?;
        if out.status.success() {
            Ok(())
        } else {
            Err(last_line(&out.stderr))
        }
    }

    /// Pushes `local` to `remote` on `url`, never forcing.
    pub fn push(
        &self,
        url: &str,
        local: &str,
        remote: &str,
    ) -> std::result::Result<Pushed, String> {
        let out = self.git(&[
            "push",
            "--porcelain",
            "--quiet",
            "--",
            url,
            &format!("{local}:{remote}"),
        ])?;
        let text = String::from_utf8_lossy(&out.stdout);
        if out.status.success() {
            return Ok(Pushed::Done);
        }
        // `--porcelain` marks a refused ref with `!`: behind (fetch first,
        // non-fast-forward) or losing a race for the remote's ref lock.
        // Both are settled by fetching and trying again; a connection or
        // permission failure refuses no ref and is reported as it is.
        if text.lines().any(|l| l.starts_with('!')) {
            return Ok(Pushed::Rejected);
        }
        Err(last_line(&out.stderr))
    }

    /// The commit `refname` points at, if the ref exists.
    pub fn tip(&self, refname: &str) -> Option<String> {
        let reference = self.repo.find_reference(refname).ok()?;
        Some(reference.peel_to_commit().ok()?.id().to_string())
    }

    /// Whether commit `new` is `old` or has it in its history. False when
    /// either is unknown here.
    pub fn descends(&self, new: &str, old: &str) -> bool {
        if new == old {
            return true;
        }
        match (git2::Oid::from_str(new), git2::Oid::from_str(old)) {
            (Ok(n), Ok(o)) => self.repo.graph_descendant_of(n, o).unwrap_or(false),
            _ => false,
        }
    }

    /// The file names at the tip of `refname`; empty if no such ref.
    pub fn names(&self, refname: &str) -> Vec<String> {
        let Ok(tree) = self
            .repo
            .find_reference(refname)
            .and_then(|r| r.peel_to_tree())
        else {
            return Vec::new();
        };
        tree.iter()
            .filter_map(|e| e.name().map(str::to_string))
            .collect()
    }

    /// The files (name -> bytes) at the tip of `refname`; empty if no such ref.
    pub fn files(&self, refname: &str) -> Result<Vec<(String, Vec<u8>)>> {
        let Ok(reference) = self.repo.find_reference(refname) else {
            return Ok(Vec::new());
        };
        let tree = reference
            .peel_to_tree()
            .map_err(|e| git_error(&self.dir, &e))?;
        let mut files = Vec::new();
        for entry in &tree {
            let (Some(name), Ok(object)) = (entry.name(), entry.to_object(&self.repo)) else {
                continue;
            };
            if let Some(blob) = object.as_blob() {
                files.push((name.to_string(), blob.content().to_vec()));
            }
        }
        Ok(files)
    }

    /// Makes `out` a commit on top of `base` (if that ref exists) whose tree
    /// adds `files` (name -> bytes). Existing names are kept as they are.
    /// Returns false when there was nothing to add.
    pub fn append(
        &self,
        base: &str,
        out: &str,
        files: &[(String, Vec<u8>)],
        summary: &str,
        replace: bool,
    ) -> Result<bool> {
        let err = |e: git2::Error| git_error(&self.dir, &e);
        let parent = self
            .repo
            .find_reference(base)
            .ok()
            .and_then(|r| r.peel_to_commit().ok());
        let base_tree = parent
            .as_ref()
            .map(git2::Commit::tree)
            .transpose()
            .map_err(err)?;
        let mut builder = self.repo.treebuilder(base_tree.as_ref()).map_err(err)?;
        let mut added = false;
        for (name, bytes) in files {
            let blob = self.repo.blob(bytes).map_err(err)?;
            if let Some(existing) = builder.get(name).map_err(err)?
                && (!replace || existing.id() == blob)
            {
                continue;
            }
            builder.insert(name, blob, 0o100_644).map_err(err)?;
            added = true;
        }
        if !added {
            return Ok(false);
        }
        let tree = self
            .repo
            .find_tree(builder.write().map_err(err)?)
            .map_err(err)?;
        let who = git2::Signature::now("aea", "aea@localhost").map_err(err)?;
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let commit = self
            .repo
            .commit(None, &who, &who, summary, &tree, &parents)
            .map_err(err)?;
        self.repo
            .reference(out, commit, true, summary)
            .map_err(err)?;
        Ok(true)
    }
}

/// The line of git's stderr that says what went wrong: the first
/// `fatal:`/`error:` line, else the last non-empty one.
fn last_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines
        .iter()
        .find(|l| l.starts_with("fatal:") || l.starts_with("error:"))
        .or(lines.last())
        .map_or_else(
            || "git failed without saying why".to_string(),
            |l| (*l).to_string(),
        )
}
