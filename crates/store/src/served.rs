//! Which inboxes below the top of a git work tree its git hooks serve
//! (SPEC §9). Git runs hooks at the top of the work tree, so an inbox in a
//! package of a monorepo (`packages/ui/.aea/`) is served only when it is
//! recorded here: by `aea init` or `aea hooks install` run in it, in the
//! private state of the work tree ([`WorkTree::served_file`], in the git
//! directory, where no clone, pull or merge writes).
//!
//! Inboxes are never found by walking the tree: a pulled commit can add a
//! `.aea/` folder anywhere, and only inboxes this user initialised count.
//! A recorded inbox is served only while every folder from the top down to
//! its `.aea/` is a real directory (no symlink on the way) and `.aea/`
//! belongs to the user who recorded it; otherwise it is skipped — never
//! followed — and `aea doctor` says so.
//!
//! The file holds one line per inbox: the name of its private state, a
//! space, and its path relative to the top. The hook scripts read it too
//! (in `sh`, to find each inbox's quiet marker without starting aea), so a
//! path that `read` would not give back whole — a control character, space
//! at either end — is not recorded.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};
use crate::fsutil;
use crate::layout::{AEA_DIR, Layout, WorkTree};

/// Why a recorded inbox is not served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// Its folder, or the `.aea/` in it, is no longer there.
    Gone,
    /// A symlink (relative to the top) where a folder was: never followed.
    Symlink(String),
    /// Something other than a folder (relative to the top) where one was.
    NotAFolder(String),
    /// Its `.aea/` belongs to the user `uid`, not to the user who recorded it.
    NotYours { uid: u32 },
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Skip::Gone => f.write_str("its .aea/ is gone"),
            Skip::Symlink(at) => write!(
                f,
                "{} is a symlink (never followed)",
                crate::printer::untrusted_short(at, 120)
            ),
            Skip::NotAFolder(at) => write!(
                f,
                "{} is not a folder",
                crate::printer::untrusted_short(at, 120)
            ),
            Skip::NotYours { uid } => write!(
                f,
                "its .aea/ belongs to uid {uid}, not to the user who recorded it"
            ),
        }
    }
}

/// One recorded inbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its folder relative to the top of the work tree.
    pub rel: String,
    /// Why it is skipped; `None` when the hooks serve it.
    pub skipped: Option<Skip>,
}

/// The inboxes below the top of one work tree that its git hooks serve.
#[derive(Debug, Clone)]
pub struct Served {
    pub tree: WorkTree,
    /// In the order they were recorded.
    pub entries: Vec<Entry>,
}

impl Served {
    /// The repositories (folders holding `.aea/`) the hooks serve, each
    /// with its path relative to the top.
    pub fn inboxes(&self) -> impl Iterator<Item = (&str, PathBuf)> {
        self.entries
            .iter()
            .filter(|e| e.skipped.is_none())
            .map(|e| (e.rel.as_str(), self.tree.top().join(&e.rel)))
    }

    /// The recorded inboxes that are skipped, with why.
    pub fn skipped(&self) -> impl Iterator<Item = (&str, &Skip)> {
        self.entries
            .iter()
            .filter_map(|e| e.skipped.as_ref().map(|s| (e.rel.as_str(), s)))
    }

    /// Whether the inbox at `rel` is recorded.
    pub fn has(&self, rel: &str) -> bool {
        self.entries.iter().any(|e| e.rel == rel)
    }
}

/// The inboxes recorded for the work tree holding `path` (a canonical
/// path); `None` outside git. The record is the receiver's private state:
/// one that is a symlink, not a regular file, or in a folder others may
/// write is an error (the pre-commit gate fails closed on it).
pub fn of(path: &Path) -> Result<Option<Served>> {
    let Some(tree) = WorkTree::of(path) else {
        return Ok(None);
    };
    let (rels, owner) = read(&tree)?;
    let entries = rels
        .into_iter()
        .map(|rel| {
            let skipped = check(tree.top(), &rel, owner).err();
            Entry { rel, skipped }
        })
        .collect();
    Ok(Some(Served { tree, entries }))
}

/// Records the inbox of `layout` as one the hooks at the top of its work
/// tree serve; `owner` owns its `.aea/`. Returns whether it was new. An
/// inbox at the top, or outside git, is not recorded (the top's own inbox
/// is always served); a path the hook scripts could not read back is
/// refused.
pub fn record(layout: &Layout, owner: Option<u32>) -> Result<bool> {
    let Some((tree, rel)) = layout.work_tree() else {
        return Ok(false);
    };
    if rel.as_os_str().is_empty() {
        return Ok(false);
    }
    let Some(text) = recordable(&rel) else {
        return Err(Error::HooksCannotSee {
            root: tree.top().to_path_buf(),
            repo: layout.inbox().parent().unwrap_or(tree.top()).to_path_buf(),
        });
    };
    fsutil::ensure_state_dir(tree.base())?;
    fsutil::check_private_dir(tree.base(), owner)?;
    update(&tree, |rels| {
        if rels.iter().any(|r| r == text) {
            return false;
        }
        rels.push(text.to_string());
        true
    })
}

/// Forgets the inbox at `rel` (relative to the top of `tree`); returns
/// whether it was recorded.
pub fn forget(tree: &WorkTree, rel: &str) -> Result<bool> {
    if fs::symlink_metadata(tree.served_file()).is_err() {
        return Ok(false);
    }
    update(tree, |rels| {
        let before = rels.len();
        rels.retain(|r| r != rel);
        rels.len() != before
    })
}

/// Forgets the inbox of `layout`, if it was recorded.
pub fn forget_inbox(layout: &Layout) -> Result<bool> {
    match layout.work_tree() {
        Some((tree, rel)) => match rel.to_str() {
            Some(rel) if !rel.is_empty() => forget(&tree, rel),
            _ => Ok(false),
        },
        None => Ok(false),
    }
}

/// Inbox paths relative to the top, for a line of output (each made safe
/// for a terminal: a folder name can come from a commit).
pub fn names(rels: &[String]) -> String {
    rels.iter()
        .map(|r| crate::printer::untrusted_short(r, 200))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether the inbox at `rel` (relative to the top) can be recorded: the
/// hook scripts read its path back whole.
pub fn can_record(rel: &Path) -> bool {
    recordable(rel).is_some()
}

/// `rel` as the record spells it, if the hook scripts can read it back.
fn recordable(rel: &Path) -> Option<&str> {
    let text = rel.to_str()?;
    let plain = rel.components().all(|c| matches!(c, Component::Normal(_)))
        && rel.components().collect::<PathBuf>().as_os_str() == rel.as_os_str();
    (plain && !text.is_empty() && text.trim() == text && !text.chars().any(char::is_control))
        .then_some(text)
}

/// Changes the record under its lock: `change` edits the list and says
/// whether it changed. An empty list leaves no file.
fn update(tree: &WorkTree, change: impl FnOnce(&mut Vec<String>) -> bool) -> Result<bool> {
    let file = tree.served_file();
    let _lock = fsutil::lock(&tree.served_lock())?;
    let (mut rels, _) = read(tree)?;
    if !change(&mut rels) {
        return Ok(false);
    }
    if rels.is_empty() {
        match fs::remove_file(&file) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(Error::io("remove", &file, e));
            }
            _ => {}
        }
        return Ok(true);
    }
    let mut text = String::new();
    for rel in &rels {
        text.push_str(&WorkTree::state_name(Path::new(rel)));
        text.push(' ');
        text.push_str(rel);
        text.push('\n');
    }
    fsutil::replace_atomic(&file, text.as_bytes())?;
    Ok(true)
}

/// The recorded paths, and the owner of the record (`None` when there is
/// none). A line whose name is not the one its path gives is not aea's
/// and is left out.
fn read(tree: &WorkTree) -> Result<(Vec<String>, Option<u32>)> {
    let file = tree.served_file();
    let (bytes, owner) = match fsutil::read_limited_owned(&file, fsutil::SMALL_STATE_LIMIT) {
        Ok(read) => read,
        Err(fsutil::ReadLimited::Io(e)) if e.kind() == io::ErrorKind::NotFound => {
            return Ok((Vec::new(), None));
        }
        Err(e) => return Err(e.into_error(&file, fsutil::SMALL_STATE_LIMIT)),
    };
    fsutil::check_private_dir(tree.base(), owner)?;
    let rels = String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|line| {
            let (name, rel) = line.split_once(' ')?;
            let plain = recordable(Path::new(rel))?;
            (WorkTree::state_name(Path::new(plain)) == name).then(|| plain.to_string())
        })
        .fold(Vec::new(), |mut rels, rel| {
            if !rels.contains(&rel) {
                rels.push(rel);
            }
            rels
        });
    Ok((rels, owner))
}

/// Whether the inbox at `rel` below `top` may be served: every folder on
/// the way a real directory, and `.aea/` one that `owner` owns.
fn check(top: &Path, rel: &str, owner: Option<u32>) -> std::result::Result<(), Skip> {
    let mut at = top.to_path_buf();
    let mut shown = PathBuf::new();
    for part in Path::new(rel).join(AEA_DIR).components() {
        at.push(part);
        shown.push(part);
        let Ok(meta) = fs::symlink_metadata(&at) else {
            return Err(Skip::Gone);
        };
        let name = || shown.to_string_lossy().into_owned();
        if meta.file_type().is_symlink() {
            return Err(Skip::Symlink(name()));
        }
        if !meta.is_dir() {
            return Err(Skip::NotAFolder(name()));
        }
        if part.as_os_str() == AEA_DIR
            && let (Some(expected), Some(uid)) = (owner, fsutil::owner(&meta))
            && expected != uid
        {
            return Err(Skip::NotYours { uid });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_the_scripts_read_back_whole_are_recorded() {
        assert_eq!(recordable(Path::new("packages/ui")), Some("packages/ui"));
        assert_eq!(recordable(Path::new("a b/c")), Some("a b/c"));
        for bad in [
            "",
            " lead",
            "trail ",
            "new\nline",
            "../up",
            "/abs",
            "a/./b",
            "a/",
        ] {
            assert_eq!(recordable(Path::new(bad)), None, "{bad:?}");
        }
    }

    #[test]
    fn recorded_as_lines_the_scripts_read_and_forgotten_whole() {
        let dir = tempfile::tempdir().unwrap();
        let top = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir(top.join(".git")).unwrap();
        fs::create_dir_all(top.join("packages/ui/.aea")).unwrap();
        let ui = Layout::of(&top.join("packages/ui"));
        assert!(record(&ui, None).unwrap());
        assert!(!record(&ui, None).unwrap(), "once");
        assert!(!record(&Layout::of(&top), None).unwrap(), "the top is not");
        let file = top.join(".git/aea/served-inboxes");
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            "in-packages%2Fui packages/ui\n"
        );
        // A line whose name is not its path's is not aea's.
        fs::write(&file, "in-packages%2Fui packages/ui\nroot packages/api\n").unwrap();
        let served = of(&top).unwrap().unwrap();
        assert_eq!(
            served.inboxes().map(|(r, _)| r).collect::<Vec<_>>(),
            ["packages/ui"]
        );
        assert!(forget_inbox(&ui).unwrap());
        assert!(!file.exists(), "an empty record leaves no file");
        assert!(!forget_inbox(&ui).unwrap());
    }

    #[test]
    fn a_symlink_on_the_way_or_a_missing_inbox_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let top = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir_all(top.join("packages/ui/.aea")).unwrap();
        fs::create_dir_all(top.join("elsewhere/.aea")).unwrap();
        assert_eq!(check(&top, "packages/ui", None), Ok(()));
        assert_eq!(check(&top, "packages/api", None), Err(Skip::Gone));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(top.join("elsewhere"), top.join("packages/api")).unwrap();
            assert_eq!(
                check(&top, "packages/api", None),
                Err(Skip::Symlink("packages/api".into()))
            );
            let uid = fsutil::owner(&fs::metadata(&top).unwrap()).unwrap();
            assert_eq!(
                check(&top, "packages/ui", Some(uid + 1)),
                Err(Skip::NotYours { uid })
            );
        }
    }
}
