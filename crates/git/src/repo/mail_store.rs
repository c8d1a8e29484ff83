//! The mail store of `aea sync` (SPEC §11): a private bare repository in
//! `sync/` in the private state (see `crate::layout`) that holds mail and receipts as commits on `refs/aea/…`. Local object work uses
//! git2; the network goes through the user's own `git` (credential helpers,
//! ssh configuration), as SPEC §11 asks. The user's repository, branches,
//! index and working tree are never involved.
//!
//! Only a sync that holds the sync lock writes here, and every `git` it
//! runs on the store holds that lock too: it gets the locked file as its
//! stdin, and a lock taken with `flock` stays taken while any process has
//! the file open (a `git fetch` outlives an `aea sync` killed alone). Auto
//! maintenance runs in the foreground for the same reason. So whoever
//! takes the lock knows no writer of the store is left, and a git lock
//! file still there was left by one that was killed: it is removed when
//! the store is opened (a stale ref lock made every later sync fail).
//!
//! git configures itself from files in the repository it runs on, and
//! where the store sits a clone or a pull can write those files (SPEC
//! §15.1: git writes ignored files too). So the git that runs here gets no
//! configuration that aea did not write: each open replaces the store's
//! `config` with aea's own and removes the other files git would read as
//! configuration or as a redirection ([`seal`]), and every `git` run gets
//! options and an environment that leave the store no say ([`MailStore::git`]).

use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};

use git2::Repository;

use crate::error::{Error, GitError, Result};
use crate::fsutil;

/// Local copies of the remote's `refs/aea/*` live under this prefix.
pub const FETCHED_PREFIX: &str = "refs/fetched/";

/// The whole of the store's `config`: what a bare repository needs and
/// nothing else. The rest of the code relies on no setting: aea's own
/// `git` options come with each run ([`MailStore::git`]).
const CONFIG: &[u8] = b"[core]\n\trepositoryformatversion = 0\n\tbare = true\n";

/// What git reads from a bare `GIT_DIR` besides `config` that could
/// configure it or send it elsewhere (gitrepository-layout):
/// - `config.worktree` is read as config once `extensions.worktreeConfig`
///   is on (not in aea's config: removed all the same);
/// - `commondir` names another folder whose `config`, refs and objects git
///   then uses instead;
/// - `remotes/<name>` and `branches/<name>` define a remote by name, and a
///   remote without a `/` (`host:mail.git`, `mail.git`) is looked up as one
///   there before it is taken as the address it is.
///
/// Left alone: `hooks/` (off with `core.hooksPath`); `info/attributes`,
/// whose filters and drivers run only what a config defines, and apply to
/// no fetch or push; `objects/info/alternates`, `info/grafts` and
/// `shallow`, data that runs nothing.
const NOT_OURS: [&str; 4] = ["config.worktree", "commondir", "remotes", "branches"];

/// The variables git itself lists as describing one repository
/// (`git rev-parse --local-env-vars`), which it drops when it moves to
/// another: set in a hook, they would point the store's git at the
/// user's repository, its index, objects or config file (`GIT_CONFIG`).
/// Not `GIT_CONFIG_PARAMETERS` nor `GIT_CONFIG_COUNT` (with its
/// `GIT_CONFIG_KEY_n`/`VALUE_n`): they carry the user's own `git -c …`
/// into a hook, and aea's options come after them.
const OTHER_REPOSITORY: [&str; 13] = [
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
];

/// A file's bytes, or its size when it is over the cap it was read with.
pub(crate) type Capped = std::result::Result<Vec<u8>, u64>;

pub struct MailStore {
    repo: Repository,
    dir: PathBuf,
    /// The sync lock the caller holds, passed on to every `git` run here.
    held: File,
}

/// How a push ended when git itself ran fine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pushed {
    Done,
    /// Someone else pushed first: fetch, rebuild, retry. `lock` is the
    /// remote's ref lock file when git said it exists (another push holds
    /// it now — or a killed one left it behind).
    Rejected {
        lock: Option<String>,
    },
}

impl MailStore {
    /// Makes a bare store at `new` hold the refs and objects of the store
    /// an older aea kept at `old` (inside `.aea/`, where a commit could
    /// have written it). libgit2 reads it as data: its local transport
    /// runs no program, and nothing of the old store's config or hooks is
    /// copied.
    pub fn import(old: &Path, new: &Path) -> Result<()> {
        let repo = if new.join("HEAD").exists() {
            Repository::open_bare(new)
        } else {
            Repository::init_bare(new)
        }
        .map_err(|e| store_error(new, "open", e))?;
        let url = old.to_str().ok_or_else(|| Error::UnsafeState {
            path: old.to_path_buf(),
            detail: "is not a UTF-8 path; its mail is fetched again from the remote instead".into(),
        })?;
        let mut remote = repo
            .remote_anonymous(url)
            .map_err(|e| store_error(old, "read", e))?;
        remote
            .fetch(&["+refs/*:refs/*"], None, None)
            .map_err(|e| store_error(old, "fetch from", e))?;
        Ok(())
    }

    /// Opens the store in the folder `dir` (which must exist), creating an
    /// empty bare repository there. `held` is the sync lock, taken by the
    /// caller (see the module comment): the git lock files left in the
    /// store by a killed sync are removed first.
    pub(crate) fn open(dir: &Path, held: File) -> Result<Self> {
        remove_stale_locks(dir);
        // Before libgit2 reads a byte: it would hang on a FIFO, and when it
        // creates the repository it writes its settings into the `config`
        // already there, through a symlink too.
        seal(dir)?;
        if !dir.join("HEAD").exists() {
            Repository::init_bare(dir).map_err(|e| store_error(dir, "create", e))?;
            // libgit2 wrote a config of its own: aea's replaces it.
            seal(dir)?;
        }
        let repo = Repository::open_bare(dir).map_err(|e| store_error(dir, "open", e))?;
        Ok(MailStore {
            repo,
            dir: dir.to_path_buf(),
            held,
        })
    }

    /// Runs the user's git on the store. It takes the user's own settings
    /// (their global config and the `git -c …` aea may run under: ssh,
    /// credentials, proxies) and the config [`seal`] wrote, nothing else;
    /// the options given here come after all of them, so they win over a
    /// key any of them sets.
    fn git(&self, args: &[&str]) -> std::result::Result<std::process::Output, GitError> {
        let held = self.held.try_clone().map_err(GitError::Spawn)?;
        let mut git = std::process::Command::new("git");
        git.arg("--git-dir")
            .arg(&self.dir)
            // The store's hooks folder is git's data, never run.
            .args(["-c", "core.hooksPath=/dev/null"])
            // A command git would start to watch files; a bare store has no
            // work tree to watch, so nothing is lost.
            .args(["-c", "core.fsmonitor=false"])
            // Maintenance git starts after a fetch stays its child, under
            // the sync lock, instead of going on alone in the background.
            .args([
                "-c",
                "maintenance.autoDetach=false",
                "-c",
                "gc.autoDetach=false",
            ])
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
            // Only the user's global config, not the machine's
            // (`/etc/gitconfig`): aea's git takes no settings beyond what
            // this user chose and what aea writes. A credential helper set
            // only there (some installers do) goes unused: the user sets
            // it in their own config.
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0");
        // What describes another repository (a hook runs with the user's
        // `GIT_DIR`, `GIT_INDEX_FILE`, …) or another config file for it.
        for name in OTHER_REPOSITORY {
            git.env_remove(name);
        }
        git
            // Nothing is read from it: it keeps the sync lock taken for as
            // long as this git (or a child that inherits it) runs.
            .stdin(held)
            .output()
            .map_err(GitError::Spawn)
    }

    /// Fetches every `refs/aea/*` of `url` into `refs/fetched/aea/*`.
    pub(crate) fn fetch(&self, url: &str) -> std::result::Result<(), GitError> {
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
            Err(GitError::Failed {
                command: "fetch",
                said: last_line(&out.stderr),
            })
        }
    }

    /// Pushes `local` to `remote` on `url`, never forcing.
    pub(crate) fn push(
        &self,
        url: &str,
        local: &str,
        remote: &str,
    ) -> std::result::Result<Pushed, GitError> {
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
            return Ok(Pushed::Rejected {
                lock: lock_named(&String::from_utf8_lossy(&out.stderr)),
            });
        }
        Err(GitError::Failed {
            command: "push",
            said: last_line(&out.stderr),
        })
    }

    /// The commit `refname` points at, if the ref exists.
    pub(crate) fn tip(&self, refname: &str) -> Option<String> {
        let reference = self.repo.find_reference(refname).ok()?;
        Some(reference.peel_to_commit().ok()?.id().to_string())
    }

    /// Whether commit `new` is `old` or has it in its history. False when
    /// either is unknown here.
    pub(crate) fn descends(&self, new: &str, old: &str) -> bool {
        if new == old {
            return true;
        }
        match (git2::Oid::from_str(new), git2::Oid::from_str(old)) {
            (Ok(n), Ok(o)) => self.repo.graph_descendant_of(n, o).unwrap_or(false),
            _ => false,
        }
    }

    /// The file names at the tip of `refname`; empty if no such ref.
    pub(crate) fn names(&self, refname: &str) -> Vec<String> {
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
    pub(crate) fn files(&self, refname: &str) -> Result<Vec<(String, Vec<u8>)>> {
        let Ok(reference) = self.repo.find_reference(refname) else {
            return Ok(Vec::new());
        };
        let tree = reference
            .peel_to_tree()
            .map_err(|e| store_error(&self.dir, "read", e))?;
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

    /// The names at the tip of `refname` that commit `since` does not
    /// have with the same content: new files, and files changed under a
    /// name it had. `None` when every name counts: no `since`, or the tip
    /// does not descend from it (history rewritten), or either is unknown.
    pub(crate) fn changed_since(
        &self,
        refname: &str,
        since: Option<&str>,
    ) -> Option<HashSet<String>> {
        let since = git2::Oid::from_str(since?).ok()?;
        let tip = self
            .repo
            .find_reference(refname)
            .ok()?
            .peel_to_commit()
            .ok()?;
        if tip.id() != since && !self.repo.graph_descendant_of(tip.id(), since).ok()? {
            return None;
        }
        let old = self.repo.find_commit(since).ok()?.tree().ok()?;
        let new = tip.tree().ok()?;
        // Both trees are sorted by name: one pass over each (git's diff
        // would look at every entry too, the tree being flat).
        Some(
            new.iter()
                .filter(|e| {
                    old.get_name_bytes(e.name_bytes())
                        .is_none_or(|o| o.id() != e.id())
                })
                .filter_map(|e| e.name().map(str::to_string))
                .collect(),
        )
    }

    /// Hands each file at the tip of `refname` that `want` (given its name
    /// and size, before a byte is read) asks for to `each`, one at a time:
    /// its bytes, or its size when over `cap`. Only one file's bytes are
    /// held at once, however many the ref holds. With `only`, the files
    /// not named there are passed over without a look.
    pub(crate) fn each_file(
        &self,
        refname: &str,
        cap: u64,
        only: Option<&HashSet<String>>,
        mut want: impl FnMut(&str, u64) -> bool,
        mut each: impl FnMut(&str, Capped) -> Result<()>,
    ) -> Result<()> {
        let Ok(reference) = self.repo.find_reference(refname) else {
            return Ok(());
        };
        let err = |e: git2::Error| store_error(&self.dir, "read", e);
        let tree = reference.peel_to_tree().map_err(err)?;
        let odb = self.repo.odb().map_err(err)?;
        for entry in &tree {
            let Some(name) = entry.name() else { continue };
            if only.is_some_and(|only| !only.contains(name)) {
                continue;
            }
            let Ok((size, kind)) = odb.read_header(entry.id()) else {
                continue;
            };
            if kind != git2::ObjectType::Blob || !want(name, size as u64) {
                continue;
            }
            if size as u64 > cap {
                each(name, Err(size as u64))?;
                continue;
            }
            if let Ok(blob) = self.repo.find_blob(entry.id()) {
                each(name, Ok(blob.content().to_vec()))?;
            }
        }
        Ok(())
    }

    /// Makes `out` a commit on top of `base` (if that ref exists) whose tree
    /// adds `files` (name -> bytes). Existing names are kept as they are.
    /// Returns false when there was nothing to add.
    pub(crate) fn append(
        &self,
        base: &str,
        out: &str,
        files: &[(String, Vec<u8>)],
        summary: &str,
        replace: bool,
    ) -> Result<bool> {
        let err = |e: git2::Error| store_error(&self.dir, "write", e);
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

/// A failure of the store itself (not of the remote): a damaged or
/// unwritable store.
fn store_error(path: &Path, op: &'static str, e: git2::Error) -> Error {
    Error::MailStore {
        path: path.to_path_buf(),
        op,
        source: Box::new(e),
    }
}

/// Makes the store's configuration aea's alone, whatever a clone, a pull
/// or anyone else left in `dir`: `config` becomes [`CONFIG`] and what
/// [`NOT_OURS`] names is removed. Nothing found there is opened but as
/// a regular file, and nothing is followed: a symlink or a FIFO named
/// `config` is replaced, not written through or read. A folder there
/// cannot be replaced at once, so the store is refused.
fn seal(dir: &Path) -> Result<()> {
    let failed = |op: &'static str, e: Error| Error::MailStore {
        path: dir.to_path_buf(),
        op,
        source: Box::new(e),
    };
    for name in NOT_OURS {
        let path = dir.join(name);
        // `symlink_metadata`, then `remove_dir_all` on a real folder only:
        // a symlink goes, what it points at stays.
        let removed = match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&path),
            Ok(_) => std::fs::remove_file(&path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => Err(e),
        };
        removed.map_err(|e| failed("clear out", Error::io("remove", &path, e)))?;
    }
    let config = dir.join("config");
    // Most opens find aea's own config: then nothing is written.
    let len = CONFIG.len() as u64;
    if fsutil::read_limited(&config, len).is_ok_and(|bytes| bytes == CONFIG) {
        return Ok(());
    }
    // Staged under git's own lock name for the file: git's writers keep
    // off it, and one left by a killed sync is a stale lock, removed on
    // the next open.
    let staged = dir.join("config.lock");
    if !fsutil::create_exclusive(&staged, CONFIG).map_err(|e| failed("write its config", e))? {
        let taken = std::io::Error::from(std::io::ErrorKind::AlreadyExists);
        return Err(failed(
            "write its config",
            Error::io("create", &staged, taken),
        ));
    }
    // rename(2) replaces a symlink or a FIFO itself and fails on a folder.
    std::fs::rename(&staged, &config).map_err(|e| {
        let _ = std::fs::remove_file(&staged);
        failed("write its config", Error::io("replace", &config, e))
    })
}

/// Removes the lock files git leaves behind when it is killed in the
/// middle of an update: a ref's (`refs/**.lock`), those next to the
/// store's own files (`packed-refs.lock`, `HEAD.lock`, `config.lock`, …)
/// and maintenance's. Called with the sync lock held, when no writer of
/// the store is left (module comment). What cannot be removed is left for
/// git to name when it trips on it.
fn remove_stale_locks(dir: &Path) {
    let is_lock = |path: &Path| path.extension().is_some_and(|e| e == "lock");
    let mut stale = vec![dir.join("objects").join("maintenance.lock")];
    // The store's own files, not its folders: `objects/` holds thousands
    // of files and no other lock.
    let mut folders = vec![(dir.to_path_buf(), false), (dir.join("refs"), true)];
    while let Some((folder, deep)) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(kind) if kind.is_dir() && deep => folders.push((path, true)),
                Ok(kind) if kind.is_file() && is_lock(&path) => stale.push(path),
                _ => {}
            }
        }
    }
    for file in stale {
        let _ = std::fs::remove_file(file);
    }
}

/// The lock file in git's "Unable to create '<path>.lock': File exists".
fn lock_named(stderr: &str) -> Option<String> {
    let start = stderr.find("Unable to create '")? + "Unable to create '".len();
    let rest = &stderr[start..];
    let end = rest.find("': File exists")?;
    let path = &rest[..end];
    std::path::Path::new(path)
        .extension()
        .is_some_and(|e| e == "lock")
        .then(|| path.replace("/./", "/"))
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::{CONFIG, MailStore};

    /// A bare repository at `dir` whose `refs/aea/mail/bb` holds one
    /// commit: the remote to fetch from. Returns that commit.
    fn remote_with_mail(dir: &Path) -> String {
        let repo = git2::Repository::init_bare(dir).unwrap();
        let blob = repo.blob(b"{}").unwrap();
        let mut tree = repo.treebuilder(None).unwrap();
        tree.insert("m.json", blob, 0o100_644).unwrap();
        let tree = repo.find_tree(tree.write().unwrap()).unwrap();
        let who = git2::Signature::now("t", "t@example.com").unwrap();
        let commit = repo
            .commit(Some("refs/aea/mail/bb"), &who, &who, "m", &tree, &[])
            .unwrap();
        commit.to_string()
    }

    /// Config that runs a program writing `marker`, whichever way git
    /// takes it: the ssh command of a URL every local path is rewritten to,
    /// and a file system monitor.
    fn hostile_config(root: &Path, marker: &Path) -> String {
        let monitor = root.join("monitor.sh");
        std::fs::write(
            &monitor,
            format!("#!/bin/sh\ntouch '{}'\n", marker.display()),
        )
        .unwrap();
        let mut mode = std::fs::metadata(&monitor).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
        std::fs::set_permissions(&monitor, mode).unwrap();
        format!(
            "[core]\n\trepositoryformatversion = 0\n\tbare = true\n\
             \tsshCommand = sh -c 'touch {marker}'\n\tfsmonitor = {monitor}\n\
             [extensions]\n\tworktreeConfig = true\n\
             [url \"ssh://x/\"]\n\tinsteadOf = /\n",
            marker = marker.display(),
            monitor = monitor.display(),
        )
    }

    fn opened(store: &Path) -> MailStore {
        MailStore::open(store, tempfile::tempfile().unwrap()).unwrap()
    }

    fn store_config(store: &Path) -> Vec<u8> {
        let meta = std::fs::symlink_metadata(store.join("config")).unwrap();
        assert!(meta.is_file(), "config is a regular file: {meta:?}");
        std::fs::read(store.join("config")).unwrap()
    }

    /// A remote with mail, an empty store folder to plant things in, and
    /// where a planted command would leave its mark.
    struct Planted {
        _root: tempfile::TempDir,
        root: PathBuf,
        store: PathBuf,
        remote: String,
        commit: String,
        marker: PathBuf,
    }

    fn planted() -> Planted {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let commit = remote_with_mail(&root.join("mail.git"));
        let store = root.join("store");
        std::fs::create_dir(&store).unwrap();
        Planted {
            remote: root.join("mail.git").to_str().unwrap().to_string(),
            marker: root.join("PWNED"),
            _root: dir,
            root,
            store,
            commit,
        }
    }

    #[test]
    fn git_on_the_store_takes_no_configuration_planted_in_it() {
        let p = planted();
        git2::Repository::init_bare(&p.store).unwrap();
        let hostile = hostile_config(&p.root, &p.marker);
        std::fs::write(p.store.join("config"), &hostile).unwrap();
        std::fs::write(p.store.join("config.worktree"), &hostile).unwrap();
        // Another repository whose config git would take for the store's.
        let elsewhere = p.root.join("elsewhere.git");
        git2::Repository::init_bare(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("config"), &hostile).unwrap();
        std::fs::write(p.store.join("commondir"), "../elsewhere.git\n").unwrap();
        // A remote by the name of an address without a slash.
        std::fs::create_dir(p.store.join("remotes")).unwrap();
        std::fs::write(p.store.join("remotes/host:mail.git"), "URL: ssh://x/y\n").unwrap();
        std::fs::create_dir(p.store.join("branches")).unwrap();
        std::fs::write(p.store.join("branches/mail.git"), "ssh://x/y\n").unwrap();

        let store = opened(&p.store);
        let fetched = store.fetch(&p.remote);

        assert!(!p.marker.exists(), "a command planted in the store ran");
        fetched.unwrap();
        assert_eq!(
            store.tip("refs/fetched/aea/mail/bb").as_deref(),
            Some(p.commit.as_str())
        );
        assert_eq!(store_config(&p.store), CONFIG);
        for gone in ["config.worktree", "commondir", "remotes", "branches"] {
            assert!(!p.store.join(gone).exists(), "{gone} is still there");
        }
        assert_eq!(
            std::fs::read_to_string(elsewhere.join("config")).unwrap(),
            hostile
        );
    }

    #[test]
    fn a_config_symlink_is_replaced_not_followed() {
        let p = planted();
        let target = p.root.join("target-config");
        let hostile = hostile_config(&p.root, &p.marker);
        std::fs::write(&target, &hostile).unwrap();
        // A new store: libgit2 would write its settings into the target.
        std::os::unix::fs::symlink(&target, p.store.join("config")).unwrap();

        let store = opened(&p.store);
        let fetched = store.fetch(&p.remote);

        assert!(!p.marker.exists(), "a command planted in the store ran");
        fetched.unwrap();
        assert!(store.tip("refs/fetched/aea/mail/bb").is_some());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), hostile);
        assert_eq!(store_config(&p.store), CONFIG);
    }

    #[test]
    fn a_config_fifo_is_replaced_unread_and_a_folder_refused() {
        let p = planted();
        let made = std::process::Command::new("mkfifo")
            .arg(p.store.join("config"))
            .status()
            .unwrap();
        assert!(made.success());
        // On a thread: a store that reads the FIFO waits for a writer
        // that never comes, and the test fails at the deadline instead.
        let (store, remote) = (p.store.clone(), p.remote.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(opened(&store).fetch(&remote)));
        rx.recv_timeout(std::time::Duration::from_secs(20))
            .expect("opening the store blocked on a FIFO")
            .unwrap();
        assert_eq!(store_config(&p.store), CONFIG);

        std::fs::remove_file(p.store.join("config")).unwrap();
        std::fs::create_dir(p.store.join("config")).unwrap();
        let Err(err) = MailStore::open(&p.store, tempfile::tempfile().unwrap()) else {
            panic!("a store whose config is a folder was opened");
        };
        assert!(
            matches!(err, crate::error::Error::MailStore { .. }),
            "{err:?}"
        );
        assert!(p.store.join("config").is_dir());
    }

    #[test]
    fn the_lock_git_names_is_found() {
        let said = "remote: error: cannot lock ref 'refs/aea/mail/bb': Unable to create '/srv/m.git/./refs/aea/mail/bb.lock': File exists.\nremote: ...";
        assert_eq!(
            super::lock_named(said).as_deref(),
            Some("/srv/m.git/refs/aea/mail/bb.lock")
        );
        assert_eq!(super::lock_named("! rejected (fetch first)"), None);
    }
}
