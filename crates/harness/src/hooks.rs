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
pub const HOOK_VERSION: u32 = 5;
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

/// Removes aea's hooks from every place of `repo` (a foreign hook kept as
/// `<hook>.aea-orig` goes back), logging each in `aea_dir`'s log. Outside a
/// git repository there is nothing to remove.
pub fn remove_from_repository(
    repo: &Path,
    aea_dir: &Path,
    rt: &crate::runtime::Runtime,
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
                audit::append(
                    aea_dir,
                    &Event::new(rt, AuditEvent::HookRemoved)
                        .with("hook", c.hook.as_str())
                        .with("path", c.path.display().to_string()),
                )?;
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
        assert!(text.starts_with("#!/bin/sh\n# aea-hook: pre-commit\n# aea-hook-version: 5\n"));
        assert!(!text.contains('\r'));
        assert!(text.contains(r"aea='/opt/it'\''s/aea'"));
        assert_eq!(recorded_binary(&text).as_deref(), Some("/opt/it's/aea"));
        assert!(text.lines().count() < 70);
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
