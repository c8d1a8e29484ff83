//! What the reminders have already told about (SPEC §5.1): per channel
//! (git hooks, agent hooks) and per agent-harness session, in the private
//! state.

use std::collections::HashSet;
use std::fs;
use std::path::Path;

use super::Announcements;
use crate::error::{Error, Result};
use crate::fsutil;
use crate::layout::Private;

impl Announcements<'_> {
    /// The message files `channel` has already told about. A state file
    /// that is not a regular file, or not the receiver's, counts as empty
    /// (everything is new).
    pub fn announced(&self, channel: &str) -> HashSet<String> {
        if !matches!(self.state_root(), Ok(true)) {
            return HashSet::new();
        }
        let path = self.layout().announced_channel(channel);
        let Ok(file) = fsutil::open_read(&path) else {
            return HashSet::new();
        };
        if fsutil::require_owner(&file, &path, self.owner).is_err() {
            return HashSet::new();
        }
        fsutil::read_opened(file, fsutil::STATE_LIMIT)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    pub fn set_announced(&self, channel: &str, names: &HashSet<String>) -> Result<()> {
        self.ensure_state()?;
        let mut sorted: Vec<&String> = names.iter().collect();
        sorted.sort();
        let bytes = serde_json::to_vec(&sorted).expect("names always serialise");
        fsutil::replace_atomic(&self.layout().announced_channel(channel), &bytes)
    }

    /// The message files one harness session has been told about
    /// (`announced/<key>.json`, see the reminder module); empty for a new
    /// session, or when the folder is not the receiver's own.
    pub fn session_announced(&self, key: &str) -> HashSet<String> {
        let Ok(Some(dir)) = self.private_dir(Private::Announced) else {
            return HashSet::new();
        };
        let path = dir.join(format!("{key}.json"));
        fsutil::read_state(&path, fsutil::STATE_LIMIT)
            .ok()
            .flatten()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Records what one harness session has been told. A session seen for
    /// the first time also clears the memories of sessions idle for a
    /// week, so the folder stays small.
    pub fn set_session_announced(&self, key: &str, names: &HashSet<String>) -> Result<()> {
        let dir = self.make_private_dir(Private::Announced)?;
        let path = dir.join(format!("{key}.json"));
        if fs::symlink_metadata(&path).is_err() {
            forget_idle_sessions(&dir);
        }
        let mut sorted: Vec<&String> = names.iter().collect();
        sorted.sort();
        let bytes = serde_json::to_vec(&sorted).expect("names always serialise");
        fsutil::replace_atomic(&path, &bytes)
    }
}

impl Announcements<'_> {
    /// How many Stops in a row one harness session was kept going for new
    /// mail since its last prompt or start (0 when none is recorded).
    pub fn stop_run(&self, key: &str) -> u32 {
        let Ok(Some(dir)) = self.private_dir(Private::Announced) else {
            return 0;
        };
        fsutil::read_state(&dir.join(format!("{key}.stops")), 64)
            .ok()
            .flatten()
            .and_then(|bytes| std::str::from_utf8(&bytes).ok()?.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Records [`Self::stop_run`]; a run of 0 removes the record.
    pub fn set_stop_run(&self, key: &str, run: u32) -> Result<()> {
        let dir = self.make_private_dir(Private::Announced)?;
        let path = dir.join(format!("{key}.stops"));
        if run == 0 {
            return match fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(Error::io("remove", &path, e))
                }
                _ => Ok(()),
            };
        }
        fsutil::replace_atomic(&path, run.to_string().as_bytes())
    }
}

/// Removes the session memories in `dir` untouched for a week.
fn forget_idle_sessions(dir: &Path) {
    let week = std::time::Duration::from_secs(7 * 24 * 3600);
    let now = std::time::SystemTime::now();
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let idle = entry
            .metadata()
            .ok()
            .filter(fs::Metadata::is_file)
            .and_then(|m| m.modified().ok())
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age > week);
        if idle {
            let _ = fs::remove_file(entry.path());
        }
    }
}
