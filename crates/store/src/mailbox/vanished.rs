//! Mail that waited and is gone without aea moving it. Git deletes the
//! ignored files of a folder it replaces (a pull, or a checkout of a
//! commit that turns `.aea/` into a file and back), and a person can
//! delete a file: either way a message that waited for the agent or a
//! person must not disappear without a word. The receiver keeps the names
//! and reference keys (sender and id, see [`crate::shortref::key`]) of what
//! waited at its last listing (private `seen/waiting.json`)
//! and notes what is gone since, neither processed, archived nor
//! quarantined (`seen/vanished.json`), until a person looked (`aea doctor
//! --fix`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Inbox;
use crate::fsutil;
use crate::layout::{Private, Shared, seen};

/// At most this many vanished messages are kept.
const KEPT: usize = 1000;

/// A message that waited and is gone.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Vanished {
    pub file: String,
    /// Its reference key (`sender/id`): the reference the sender's `aea
    /// sent` shows is derived from it. An older aea kept the id alone.
    #[serde(alias = "id")]
    pub key: String,
}

impl Vanished {
    /// The short reference it was listed under.
    pub fn short_ref(&self) -> String {
        crate::shortref::of(&self.key)
    }
}

impl Inbox<'_> {
    /// Notes what waits now (`waiting`: file name and reference key of each
    /// unprocessed message listed) and returns what waited at the last
    /// note and is gone without aea moving it. Best effort: state that
    /// cannot be read or written notes nothing.
    pub fn note_waiting<S: AsRef<str>>(&self, waiting: &[(&str, S)]) -> Vec<Vanished> {
        let Some(dir) = self.seen_dir() else {
            return Vec::new();
        };
        let path = dir.join(seen::WAITING);
        let before: BTreeMap<String, String> = read_json(&path).unwrap_or_default();
        let now: BTreeMap<String, String> = waiting
            .iter()
            .map(|(n, key)| ((*n).to_string(), key.as_ref().to_string()))
            .collect();
        let gone: Vec<Vanished> = before
            .iter()
            .filter(|(name, _)| !now.contains_key(*name) && !self.accounted_for(name))
            .map(|(file, key)| Vanished {
                file: file.clone(),
                key: key.clone(),
            })
            .collect();
        if now != before {
            let text = serde_json::to_vec(&now).expect("names always serialise");
            let _ = fsutil::replace_cache_via(&dir, &path, &text);
        }
        if !gone.is_empty() {
            let mut all = self.vanished();
            all.extend(gone.iter().cloned());
            let skip = all.len().saturating_sub(KEPT);
            let text = serde_json::to_vec(&all[skip..]).expect("names always serialise");
            let _ = fsutil::replace_cache_via(&dir, &dir.join(seen::VANISHED), &text);
        }
        gone
    }

    /// The messages noted as vanished and not yet looked at.
    pub fn vanished(&self) -> Vec<Vanished> {
        let Ok(Some(dir)) = self.private_dir(Private::Seen) else {
            return Vec::new();
        };
        read_json(&dir.join(seen::VANISHED)).unwrap_or_default()
    }

    /// Forgets the vanished messages (a person looked at them).
    pub fn forget_vanished(&self) {
        if let Ok(Some(dir)) = self.private_dir(Private::Seen) {
            let _ = std::fs::remove_file(dir.join(seen::VANISHED));
        }
    }

    /// Whether file `name`, gone from the top of `.aea/`, is where aea or
    /// another reader put it: still there (hidden by a marker), processed,
    /// archived or quarantined.
    fn accounted_for(&self, name: &str) -> bool {
        let here = |dir: Option<std::path::PathBuf>| {
            dir.is_some_and(|d| std::fs::symlink_metadata(d.join(name)).is_ok())
        };
        here(Some(self.dir().to_path_buf()))
            || here(self.private_dir(Private::Processed).ok().flatten())
            || here(self.private_dir(Private::Archive).ok().flatten())
            || here(self.shared_dir(Shared::Quarantine).ok().flatten())
    }
}

/// The mail that waited at the last listing of an inbox whose `.aea/` is
/// no longer a folder, `state` being its private state ([`Layout::state`]):
/// git replaced `.aea/` by a file or a symlink (a pull, a checkout) and
/// deleted what it ignored there, so everything that waited and is
/// neither processed nor archived is gone. Read from the private state,
/// which no pull writes; nothing when it is missing or unsound.
///
/// [`Layout::state`]: crate::layout::Layout::state
pub fn lost_with_inbox(state: &Path) -> Vec<Vanished> {
    let sound = |dir: &Path| fsutil::check_private_dir(dir, None).is_ok_and(|found| found);
    let seen = state.join(Private::Seen.name());
    if !sound(state) || !sound(&seen) {
        return Vec::new();
    }
    let waiting: BTreeMap<String, String> =
        read_json(&seen.join(seen::WAITING)).unwrap_or_default();
    let kept = |entry: Private, name: &str| {
        let dir = state.join(entry.name());
        sound(&dir) && std::fs::symlink_metadata(dir.join(name)).is_ok()
    };
    waiting
        .into_iter()
        .filter(|(file, _)| !kept(Private::Processed, file) && !kept(Private::Archive, file))
        .map(|(file, key)| Vanished { file, key })
        .collect()
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    let bytes = fsutil::read_state(path, fsutil::STATE_LIMIT).ok()??;
    serde_json::from_slice(&bytes).ok()
}
