//! Git hooks (SPEC §9): the scripts aea installs, and installing,
//! removing and inspecting them in a hooks directory. A foreign hook already
//! there is kept as `<hook>.aea-orig` and still runs first.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::fsutil;
use crate::words::word_enum;

pub use crate::config::GitHook;

/// Bumped whenever the script changes, so `status` can say "outdated".
pub const HOOK_VERSION: u32 = 7;
const TEMPLATE: &str = include_str!("../../../hooks/aea-hook.sh");
const ORIG_SUFFIX: &str = ".aea-orig";

fn id_line(hook: GitHook) -> String {
    format!("# aea-hook: {hook}\n")
}

/// Quotes `text` for POSIX sh: single quotes, with `'` as `'\''`.
pub(crate) fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The script for `hook` that calls the aea binary at `binary`.
pub(crate) fn script(hook: GitHook, binary: &Path) -> String {
    TEMPLATE
        .replace("@HOOK@", hook.as_str())
        .replace("@VERSION@", &HOOK_VERSION.to_string())
        .replace("@AEA@", &sh_quote(&binary.to_string_lossy()))
}

/// Whether `text` is a hook aea wrote for `hook`.
fn is_ours(text: &str, hook: GitHook) -> bool {
    text.lines()
        .take(3)
        .any(|l| format!("{l}\n") == id_line(hook))
}

fn read_text(path: &Path) -> Option<String> {
    fs::read(path)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Installed,
    Updated,
    Unchanged,
    Removed,
    Absent,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HookChange {
    pub hook: GitHook,
    pub path: PathBuf,
    pub change: Change,
    /// A foreign hook that was moved aside (install) or put back (uninstall).
    pub foreign: bool,
}

/// Writes aea's hooks into `dir`, keeping foreign hooks as `.aea-orig`.
pub fn install(dir: &Path, binary: &Path) -> Result<Vec<HookChange>> {
    fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, e))?;
    let mut changes = Vec::new();
    for &hook in GitHook::ALL {
        let path = dir.join(hook.as_str());
        let orig = dir.join(format!("{hook}{ORIG_SUFFIX}"));
        let wanted = script(hook, binary);
        let exists = fs::symlink_metadata(&path).is_ok();
        let current = if exists { read_text(&path) } else { None };
        let mut foreign = false;
        let change = match &current {
            Some(text) if is_ours(text, hook) && *text == wanted => Change::Unchanged,
            Some(text) if is_ours(text, hook) => Change::Updated,
            _ if exists => {
                if fs::symlink_metadata(&orig).is_ok() {
                    return Err(Error::HookConflict { path: orig });
                }
                fs::rename(&path, &orig).map_err(|e| Error::io("move aside", &path, e))?;
                foreign = true;
                Change::Installed
            }
            _ => Change::Installed,
        };
        if change != Change::Unchanged {
            fsutil::replace_atomic(&path, wanted.as_bytes())?;
            make_executable(&path)?;
        }
        changes.push(HookChange {
            hook,
            path,
            change,
            foreign: foreign || fs::symlink_metadata(&orig).is_ok(),
        });
    }
    Ok(changes)
}

/// Removes aea's hooks from `dir` and puts foreign ones back.
pub(crate) fn uninstall(dir: &Path) -> Result<Vec<HookChange>> {
    let mut changes = Vec::new();
    for &hook in GitHook::ALL {
        let path = dir.join(hook.as_str());
        let orig = dir.join(format!("{hook}{ORIG_SUFFIX}"));
        let ours = read_text(&path).is_some_and(|t| is_ours(&t, hook));
        if !ours {
            changes.push(HookChange {
                hook,
                path,
                change: Change::Absent,
                foreign: false,
            });
            continue;
        }
        fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
        let foreign = fs::symlink_metadata(&orig).is_ok();
        if foreign {
            fs::rename(&orig, &path).map_err(|e| Error::io("restore", &orig, e))?;
        }
        changes.push(HookChange {
            hook,
            path,
            change: Change::Removed,
            foreign,
        });
    }
    Ok(changes)
}

word_enum! {
    pub enum State {
        NotInstalled = "not_installed",
        Installed = "installed",
        /// Ours, but written by another version or for another binary path.
        Outdated = "outdated",
        /// Ours, in a directory git does not run hooks from.
        Bypassed = "bypassed",
        /// Ours and current, but the binary it calls is gone.
        BinaryNotFound = "binary_not_found",
    }
}

impl State {
    /// Words for people (`hooks status`, `doctor`); `as_str` is the
    /// `--json` name.
    pub fn label(self) -> &'static str {
        match self {
            State::NotInstalled => "not installed",
            State::Installed => "installed",
            State::Outdated => "outdated",
            State::Bypassed => "bypassed by core.hooksPath",
            State::BinaryNotFound => "binary not found",
        }
    }
}

/// The state of `hook` for a repository whose hooks run from `active`;
/// `default` is the common dir's hooks folder, checked for bypassed hooks.
pub fn state(hook: GitHook, active: &Path, default: &Path, binary: &Path) -> State {
    let text = read_text(&active.join(hook.as_str()));
    match text {
        Some(t) if is_ours(&t, hook) => {
            let recorded = recorded_binary(&t);
            if t == script(hook, binary) {
                State::Installed
            } else if recorded.as_deref().is_some_and(|b| !Path::new(b).exists()) {
                State::BinaryNotFound
            } else {
                State::Outdated
            }
        }
        _ if active != default
            && read_text(&default.join(hook.as_str())).is_some_and(|t| is_ours(&t, hook)) =>
        {
            State::Bypassed
        }
        _ => State::NotInstalled,
    }
}

/// The binary path a hook script calls (its `aea='…'` line).
fn recorded_binary(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with("aea='"))?;
    let quoted = line.strip_prefix("aea=")?;
    Some(quoted.trim_matches('\'').replace(r"'\''", "'"))
}

#[cfg(unix)]
pub(crate) fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .map_err(|e| Error::io("make executable", path, e))
}

#[cfg(not(unix))]
pub(crate) fn make_executable(_: &Path) -> Result<()> {
    Ok(())
}

/// Removes `dir` if it is empty (a hooks directory install created).
pub(crate) fn remove_if_empty(dir: &Path) {
    if fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none()) {
        let _ = fs::remove_dir(dir);
    }
}

/// Every place aea's hooks may sit: where git runs hooks now, and the common
/// dir's hooks folder when `core.hooksPath` points elsewhere.
pub(crate) fn places(dirs: &crate::repo::HookDirs) -> Vec<PathBuf> {
    let mut places = vec![dirs.active.clone()];
    if dirs.default != dirs.active {
        places.push(dirs.default.clone());
    }
    places
}

/// What installing aea's hooks for one inbox did.
#[derive(Debug)]
pub struct Installed {
    pub changes: Vec<HookChange>,
    /// For an inbox below the top of its work tree (a package of a
    /// monorepo): its folder relative to the top, recorded as one the
    /// hooks there serve ([`crate::served`]).
    pub served_from_top: Option<String>,
    /// The record ([`crate::served`]), when this call added the inbox to it.
    pub recorded: Option<PathBuf>,
}

/// Installs aea's hooks where git runs them (`dirs`) for the inbox of
/// `layout`, whose `.aea/` `owner` owns. Git runs hooks at the top of the
/// work tree: an inbox below it is recorded as served there, so the hooks
/// run for it too. Where git runs hooks at the top of another work tree
/// than this inbox's, nothing is installed ([`Error::HooksCannotSee`]).
pub fn install_for(
    layout: &crate::layout::Layout,
    owner: Option<u32>,
    dirs: &crate::repo::HookDirs,
    binary: &Path,
) -> Result<Installed> {
    let repo = layout.repo();
    let mut served_from_top = None;
    let mut recorded = None;
    if let Some(root) = dirs.runs_elsewhere_than(repo) {
        let cannot_see = || Error::HooksCannotSee {
            root: root.to_path_buf(),
            repo: repo.to_path_buf(),
        };
        let Some((tree, rel)) = layout.work_tree() else {
            return Err(cannot_see());
        };
        let same_top = fs::canonicalize(root).is_ok_and(|r| r == tree.top());
        if !same_top || rel.as_os_str().is_empty() {
            return Err(cannot_see());
        }
        // Recorded first: a path the scripts could not read back is
        // refused before any hook is written.
        if crate::served::record(layout, owner)? {
            recorded = Some(tree.served_file());
        }
        served_from_top = Some(rel.to_string_lossy().into_owned());
    }
    Ok(Installed {
        changes: install(&dirs.active, binary)?,
        served_from_top,
        recorded,
    })
}

/// Whether the hooks git runs serve one inbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Serving {
    /// Git runs them right at this inbox (the top of its work tree).
    Here,
    /// Below the top of the work tree, recorded: the hooks there serve it.
    FromTop { rel: String },
    /// Below the top, recorded, and skipped.
    Skipped {
        rel: String,
        why: crate::served::Skip,
    },
    /// Below the top, not recorded: `aea hooks install` in it records it.
    NotRecorded { rel: String },
    /// Git runs them at the top of another work tree: they cannot see it.
    CannotSee { root: PathBuf },
}

impl Serving {
    /// Whether the hooks run for this inbox.
    pub fn serves(&self) -> bool {
        matches!(self, Serving::Here | Serving::FromTop { .. })
    }
}

/// Whether the hooks git runs (`dirs`) serve the inbox of `layout`, given
/// what its work tree records (`served`).
pub fn serving(
    layout: &crate::layout::Layout,
    dirs: &crate::repo::HookDirs,
    served: Option<&crate::served::Served>,
) -> Serving {
    let Some(root) = dirs.runs_elsewhere_than(layout.repo()) else {
        return Serving::Here;
    };
    let below = layout.work_tree().filter(|(tree, rel)| {
        crate::served::can_record(rel) && fs::canonicalize(root).is_ok_and(|r| r == tree.top())
    });
    let Some((_, rel)) = below else {
        return Serving::CannotSee {
            root: root.to_path_buf(),
        };
    };
    let rel = rel.to_string_lossy().into_owned();
    match served.and_then(|s| s.entries.iter().find(|e| e.rel == rel)) {
        Some(entry) => match &entry.skipped {
            None => Serving::FromTop { rel },
            Some(why) => Serving::Skipped {
                rel,
                why: why.clone(),
            },
        },
        None => Serving::NotRecorded { rel },
    }
}

/// The foreign hooks in `dir` that `install` could not move aside: a
/// `<hook>.aea-orig` is already there.
pub fn conflicts(dir: &Path) -> Vec<PathBuf> {
    GitHook::ALL
        .iter()
        .filter_map(|&hook| {
            let path = dir.join(hook.as_str());
            let orig = dir.join(format!("{hook}{ORIG_SUFFIX}"));
            let foreign = fs::symlink_metadata(&path).is_ok()
                && !read_text(&path).is_some_and(|t| is_ours(&t, hook));
            (foreign && fs::symlink_metadata(&orig).is_ok()).then_some(orig)
        })
        .collect()
}

/// What giving up aea's hooks for one inbox did.
#[derive(Debug, Default)]
pub struct Released {
    /// The hooks removed.
    pub removed: Vec<HookChange>,
    /// Whether the inbox (below the top) was recorded as served and no
    /// longer is.
    pub forgot: bool,
    /// The other inboxes of the work tree the hooks still serve (relative
    /// to the top, `.` for the top's own), which kept them in place.
    pub kept_for: Vec<String>,
    /// At the top, hooks removed: the recorded inboxes below that they
    /// served and no longer do.
    pub unserved: Vec<String>,
}

/// Gives up aea's hooks for the inbox of `layout` (logging in its `.aea/`):
/// an inbox below the top is no longer served there, and the hooks stay
/// while they serve another inbox of the work tree — the top's own, or a
/// recorded one. At the top the hooks go, unless `keep_for_others` and an
/// inbox below is recorded (`aea uninstall`, which takes the top's inbox
/// away, leaves the packages their hooks).
pub fn release(
    layout: &crate::layout::Layout,
    rt: &crate::runtime::Runtime,
    keep_for_others: bool,
) -> Result<Released> {
    let mut released = Released::default();
    let below = layout
        .work_tree()
        .filter(|(_, rel)| !rel.as_os_str().is_empty());
    if below.is_some() {
        released.forgot = crate::served::forget_inbox(layout)?;
    }
    if below.is_some() || keep_for_others {
        if let Some(served) = crate::served::of(layout.repo())? {
            let top_inbox = served.tree.top().join(crate::layout::AEA_DIR);
            if below.is_some() && fs::symlink_metadata(&top_inbox).is_ok() {
                released.kept_for.push(".".to_string());
            }
            released
                .kept_for
                .extend(served.entries.iter().map(|e| e.rel.clone()));
        }
        if !released.kept_for.is_empty() {
            return Ok(released);
        }
    }
    released.kept_for = served_elsewhere(layout.repo());
    if !released.kept_for.is_empty() {
        return Ok(released);
    }
    released.removed = remove_from_repository(layout.repo(), Some((layout.inbox(), rt)))?;
    if below.is_none() && !released.removed.is_empty() {
        // An unsound record is the pre-commit gate's and doctor's to report.
        if let Ok(Some(served)) = crate::served::of(layout.repo()) {
            released.unserved = served.entries.into_iter().map(|e| e.rel).collect();
        }
    }
    Ok(released)
}

/// The other work trees of the repository of `repo` whose inbox, or a
/// recorded one, the hooks serve: they are the repository's, shared by
/// all its work trees.
fn served_elsewhere(repo: &Path) -> Vec<String> {
    crate::repo::other_worktrees(repo)
        .into_iter()
        .filter(|top| {
            fs::symlink_metadata(top.join(crate::layout::AEA_DIR)).is_ok()
                || crate::served::of(top)
                    .ok()
                    .flatten()
                    .is_some_and(|s| !s.entries.is_empty())
        })
        .map(|top| format!("work tree {}", top.display()))
        .collect()
}

/// Gives up aea's hooks at the top of a work tree, `top`, that has no
/// inbox of its own (a monorepo whose inboxes are all in packages): they
/// go unless they still serve an inbox recorded below, or another work
/// tree's; the recorded inboxes that are skipped are named as no longer
/// served. Nothing is logged: no inbox is there to log in.
pub fn release_without_inbox(top: &Path) -> Result<Released> {
    let mut released = Released::default();
    let served = crate::served::of(top)?;
    // A recorded inbox that is skipped (its `.aea/` gone, or a symlink a
    // pull put there) is not served: it keeps no hooks.
    let (kept, unserved): (Vec<_>, Vec<_>) = served
        .map(|s| s.entries)
        .unwrap_or_default()
        .into_iter()
        .partition(|e| e.skipped.is_none());
    released.kept_for = kept.into_iter().map(|e| e.rel).collect();
    if released.kept_for.is_empty() {
        released.kept_for = served_elsewhere(top);
    }
    if released.kept_for.is_empty() {
        released.removed = remove_from_repository(top, None)?;
        if !released.removed.is_empty() {
            released.unserved = unserved.into_iter().map(|e| e.rel).collect();
        }
    }
    Ok(released)
}

/// Removes aea's hooks from every place of `repo` (a foreign hook kept as
/// `<hook>.aea-orig` goes back), logging each in the log of `log`'s
/// `.aea/`. Outside a git repository there is nothing to remove.
fn remove_from_repository(
    repo: &Path,
    log: Option<(&Path, &crate::runtime::Runtime)>,
) -> Result<Vec<HookChange>> {
    use crate::audit::{self, AuditEvent, Event};
    let dirs = match crate::repo::hook_dirs(repo) {
        Ok(dirs) => dirs,
        Err(Error::NotAGitRepository { .. }) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut removed = Vec::new();
    for place in places(&dirs) {
        for c in uninstall(&place)? {
            if c.change == Change::Removed {
                if let Some((aea_dir, rt)) = log {
                    audit::append(
                        aea_dir,
                        &Event::new(rt, AuditEvent::HookRemoved)
                            .with("hook", c.hook.as_str())
                            .with("path", c.path.display().to_string()),
                    )?;
                }
                removed.push(c);
            }
        }
        if place != dirs.default {
            remove_if_empty(&place);
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_are_short_posix_sh_with_an_id_line() {
        let text = script(GitHook::PreCommit, Path::new("/opt/it's/aea"));
        assert!(text.starts_with("#!/bin/sh\n# aea-hook: pre-commit\n# aea-hook-version: 7\n"));
        assert!(!text.contains('\r'));
        assert!(text.contains(r"aea='/opt/it'\''s/aea'"));
        assert_eq!(recorded_binary(&text).as_deref(), Some("/opt/it's/aea"));
        assert!(text.lines().count() < 90);
    }

    #[test]
    fn install_keeps_a_foreign_hook_and_uninstall_restores_it() {
        let dir = tempfile::tempdir().unwrap();
        let hooks = dir.path().join("hooks");
        fs::create_dir(&hooks).unwrap();
        fs::write(hooks.join("pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
        let bin = Path::new("/usr/bin/aea");
        let changes = install(&hooks, bin).unwrap();
        assert!(changes.iter().all(|c| c.change == Change::Installed));
        assert!(changes[0].foreign);
        assert_eq!(
            fs::read_to_string(hooks.join("pre-commit.aea-orig")).unwrap(),
            "#!/bin/sh\nexit 0\n"
        );
        assert!(
            install(&hooks, bin)
                .unwrap()
                .iter()
                .all(|c| c.change == Change::Unchanged)
        );
        assert_eq!(
            state(GitHook::PreCommit, &hooks, &hooks, bin),
            State::Installed
        );
        assert_eq!(
            state(
                GitHook::PostMerge,
                &hooks,
                &hooks,
                Path::new("/elsewhere/aea")
            ),
            State::BinaryNotFound
        );
        uninstall(&hooks).unwrap();
        assert_eq!(
            fs::read_to_string(hooks.join("pre-commit")).unwrap(),
            "#!/bin/sh\nexit 0\n"
        );
        assert!(!hooks.join("post-merge").exists());
        assert_eq!(
            state(GitHook::PreCommit, &hooks, &hooks, bin),
            State::NotInstalled
        );
    }
}
