//! What each harness's hooks last ran with (SPEC §16): the aea the hook's
//! guard found and the places it looked, from the PATH the harness gave
//! the hook, which may not be the PATH of the shell `doctor` runs in. Kept
//! in the private state (`seen/hook-runs.json`); written by a hook only
//! when something changed or an hour went by, so a hook stays fast.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::names::{Agent, Harness};
use crate::fsutil;
use crate::layout::{Private, seen};
use crate::mailbox::Mailbox;

/// The record of one harness's last hook run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HookRun {
    /// When it last ran (the record is rewritten at most hourly while
    /// nothing else changes).
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub at: DateTime<Utc>,
    /// The aea the hook ran.
    pub aea: Option<PathBuf>,
    /// Where the hook's guard looks for aea with the hook's PATH, in order.
    pub candidates: Vec<PathBuf>,
}

/// At most so many bytes are read or kept: a PATH is short.
const LIMIT: u64 = 64 * 1024;
/// At most so many candidates are kept of one PATH.
const MAX_CANDIDATES: usize = 64;

fn path_in(mailbox: &Mailbox) -> Option<PathBuf> {
    mailbox
        .private_dir(Private::Seen)
        .ok()
        .flatten()
        .map(|dir| dir.join(seen::HOOK_RUNS))
}

fn read(path: &Path) -> BTreeMap<String, HookRun> {
    fsutil::read_state(path, LIMIT)
        .ok()
        .flatten()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Records that `harness`'s hook ran now, as `exe`, looking in
/// `candidates`. Quietly does nothing when the state cannot be written: a
/// hook never fails for its own bookkeeping.
pub fn record(
    mailbox: &Mailbox,
    harness: Harness,
    exe: Option<&Path>,
    candidates: &[PathBuf],
    now: DateTime<Utc>,
) {
    if harness == Harness::Plain {
        return;
    }
    let Ok(dir) = mailbox.make_private_dir(Private::Seen) else {
        return;
    };
    let path = dir.join(seen::HOOK_RUNS);
    let mut runs = read(&path);
    let run = HookRun {
        at: now,
        aea: exe.map(Path::to_path_buf),
        candidates: candidates.iter().take(MAX_CANDIDATES).cloned().collect(),
    };
    if let Some(last) = runs.get(harness.as_str())
        && last.aea == run.aea
        && last.candidates == run.candidates
        && (now - last.at).num_minutes().abs() < 60
    {
        return;
    }
    runs.insert(harness.as_str().to_string(), run);
    let bytes = serde_json::to_vec(&runs).expect("records always serialise");
    if bytes.len() as u64 <= LIMIT {
        let _ = fsutil::replace_atomic(&path, &bytes);
    }
}

/// The last run of the hooks `agent` installs, `None` when they never ran
/// here (or the agent has no hooks).
pub fn last(mailbox: &Mailbox, agent: Agent) -> Option<HookRun> {
    let harness = hooks_of(agent)?;
    read(&path_in(mailbox)?).remove(harness.as_str())
}

/// The `--hook` name `agent`'s installed hooks run `aea check` with, when
/// it has hooks (Aider has none).
pub fn hooks_of(agent: Agent) -> Option<Harness> {
    agent.as_str().parse().ok()
}

/// What the hook's guard will run next time, given what it saw: the first
/// candidate that is an executable file, `None` when none is.
pub fn reaches(run: &HookRun) -> Option<&Path> {
    run.candidates
        .iter()
        .find(|c| runs(c))
        .map(PathBuf::as_path)
}

/// Whether `program` is an executable file given by its path. A bare name
/// counts as broken: a harness's PATH need not hold it (a hook failed with
/// exit 127 while `doctor` said all was well).
pub(crate) fn runs(program: &Path) -> bool {
    program.is_absolute() && is_executable(program)
}

/// Whether the file `path` resolves to has an executable bit set.
pub(crate) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
