//! The append-only audit log `.aea/agent.log` (SPEC §7): JSON Lines, one
//! line per action, each appended with a single write under a lock.
//! Readers skip lines that are not JSON, which older tools wrote.
//!
//! Rotation never drops a line. Past `limits.log_bytes` (10 MiB unless the
//! config says otherwise) `agent.log` becomes `agent.log.1`, the previous
//! `agent.log.1` becomes `agent.log.2`, and so on (logrotate's numbering:
//! the newest lowest, so `agent.log.1` stays the file SPEC §7 names and
//! that older readers know). All of them are kept unless
//! `limits.log_files` caps their number. Rotation happens under the same
//! lock as every append, so no appender writes into a file being renamed;
//! readers open every file under that lock too, so a rotation in the
//! middle of a read neither hides nor repeats a line.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::config::{AgentConfig, LimitsConfig};
use crate::error::{Error, Result};
use crate::message::format_time;
use crate::runtime::Runtime;
use crate::words::word_enum;

pub(crate) const LOG_FILE: &str = crate::layout::Shared::Log.name();
pub(crate) const LOCK_FILE: &str = crate::layout::Shared::LogLock.name();
/// Where the log rotates unless `limits.log_bytes` says otherwise.
pub(crate) const DEFAULT_ROTATE_AT: u64 = 10 * 1024 * 1024;
/// Reading stops after this many bytes of one file (older tools did not
/// rotate); a line is never longer than this either. Above the largest
/// `limits.log_bytes`, so a rotated file is always read whole.
const READ_LIMIT: u64 = 8 * DEFAULT_ROTATE_AT;
/// How long an append waits for the log lock before giving up.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// When the log rotates and how many rotated files it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rotation {
    /// `agent.log` is rotated before an append once it is this large.
    pub at_bytes: u64,
    /// Rotated files kept (`agent.log.1` … `agent.log.N`); `None`: all.
    pub keep: Option<u32>,
}

impl Default for Rotation {
    fn default() -> Self {
        Rotation {
            at_bytes: DEFAULT_ROTATE_AT,
            keep: None,
        }
    }
}

impl Rotation {
    /// The rotation `limits` asks for.
    pub(crate) fn of(limits: &LimitsConfig) -> Self {
        Rotation {
            at_bytes: limits.log_bytes.unwrap_or(DEFAULT_ROTATE_AT),
            keep: limits.log_files,
        }
    }

    /// The rotation of the folder's config. A config that does not read
    /// (missing, a typo) gives the built-in one, which keeps every file:
    /// a broken config never costs a line of the log.
    pub fn configured(aea_dir: &Path) -> Self {
        AgentConfig::load_file(&crate::layout::config_file(aea_dir))
            .map_or_else(|_| Rotation::default(), |c| Rotation::of(&c.limits))
    }
}

/// The name of rotated file `n` (1 is the newest).
pub(crate) fn rotated_name(n: u64) -> String {
    format!("{LOG_FILE}.{n}")
}

word_enum! {
    /// What a line of the log records, its `event`. Lines from older tools
    /// or newer versions may name others: `read` keeps them all.
    pub enum AuditEvent {
        Init = "init",
        Sent = "sent",
        Queued = "queued",
        Delivered = "delivered",
        Pushed = "pushed",
        LostOnRemote = "lost_on_remote",
        Processed = "processed",
        Deferred = "deferred",
        ClaimTakenOver = "claim_taken_over",
        MarkerReplaced = "marker_replaced",
        Approved = "approved",
        Rejected = "rejected",
        Quarantined = "quarantined",
        Archived = "archived",
        Expired = "expired",
        HookInstalled = "hook_installed",
        HookRemoved = "hook_removed",
        MonitorStarted = "monitor_started",
        MonitorStopped = "monitor_stopped",
        Notified = "notified",
        NotifyFailed = "notify_failed",
        /// Another protocol's file delivered into the inbox (`aea import`,
        /// `aea bridge`).
        Imported = "imported",
        /// A bridged message processed here, and its file removed from the
        /// other protocol's folder (SPEC §12).
        BridgeCompleted = "bridge_completed",
    }
}

/// One log line under construction: `{"ts", "event", "actor", …}`.
#[derive(Debug, Clone)]
pub struct Event(Map<String, Value>);

impl Event {
    pub fn new(rt: &Runtime, event: AuditEvent) -> Self {
        let mut map = Map::new();
        map.insert("ts".into(), format_time(rt.now()).into());
        map.insert("event".into(), event.as_str().into());
        map.insert("actor".into(), rt.user().into());
        Event(map)
    }

    #[must_use]
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.0.insert(key.into(), value.into());
        self
    }
}

/// Appends `event` to `<aea_dir>/agent.log`, rotating as the folder's
/// config says.
pub fn append(aea_dir: &Path, event: &Event) -> Result<()> {
    append_rotating(aea_dir, event, Rotation::configured(aea_dir))
}

/// Appends `event` to `<aea_dir>/agent.log`, rotating as `rotation` says.
pub(crate) fn append_rotating(aea_dir: &Path, event: &Event, rotation: Rotation) -> Result<()> {
    let mut line = serde_json::to_vec(&event.0).expect("a JSON map always serialises");
    line.push(b'\n');
    let lock_path = aea_dir.join(LOCK_FILE);
    let log_path = aea_dir.join(LOG_FILE);
    crate::fsutil::refuse_symlink(&log_path)?;
    let owner = crate::fsutil::dir_owner(aea_dir);
    // A separate lock file: rotation renames the log, and a lock held on the
    // renamed file would no longer exclude writers of the new one. Writers
    // hold it for one write (and a rotation); a holder that never lets go
    // is an error, not a hung git hook.
    let lock = crate::fsutil::lock_within(&lock_path, LOCK_WAIT)?;
    crate::fsutil::require_owner(&lock, &lock_path, owner)?;
    match fs::symlink_metadata(&log_path) {
        Ok(meta) if meta.is_file() && meta.len() >= rotation.at_bytes => {
            rotate(aea_dir, rotation)?;
        }
        _ => {}
    }
    let mut file = crate::fsutil::open_append(&log_path)?;
    crate::fsutil::require_owner(&file, &log_path, owner)?;
    file.write_all(&line)
        .map_err(|e| Error::io("append to", &log_path, e))?;
    drop(lock);
    Ok(())
}

/// The numbers of the rotated files (`agent.log.<n>`, written the way
/// [`rotated_name`] writes them), highest (oldest) first. Whatever holds
/// the name counts, file or not: rotation moves every one along, so it
/// never renames onto one.
fn rotated_numbers(aea_dir: &Path) -> Result<Vec<u64>> {
    let prefix = format!("{LOG_FILE}.");
    let mut numbers = Vec::new();
    for entry in fs::read_dir(aea_dir).map_err(|e| Error::io("list", aea_dir, e))? {
        let entry = entry.map_err(|e| Error::io("list", aea_dir, e))?;
        let name = entry.file_name();
        let Some(digits) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        if let Ok(n) = digits.parse::<u64>()
            && n > 0
            && n.to_string() == digits
        {
            numbers.push(n);
        }
    }
    numbers.sort_unstable_by(|a, b| b.cmp(a));
    Ok(numbers)
}

/// Moves every rotated file one number up, oldest first so that no rename
/// lands on a file, then `agent.log` to `agent.log.1`. Called under the
/// log lock. Where `limits.log_files` caps the count, the files that would
/// pass it are removed first (the only lines aea ever deletes, and only
/// because the config asks).
fn rotate(aea_dir: &Path, rotation: Rotation) -> Result<()> {
    let path = |n: u64| aea_dir.join(rotated_name(n));
    for n in rotated_numbers(aea_dir)? {
        if rotation.keep.is_some_and(|keep| n >= u64::from(keep)) {
            fs::remove_file(path(n)).map_err(|e| Error::io("remove", path(n), e))?;
            continue;
        }
        fs::rename(path(n), path(n + 1)).map_err(|e| Error::io("rotate", path(n), e))?;
    }
    let log_path = aea_dir.join(LOG_FILE);
    fs::rename(&log_path, path(1)).map_err(|e| Error::io("rotate", &log_path, e))?;
    crate::fsutil::sync_dir(aea_dir)
}

/// The messages (their `message` field) that lines of `event` in the log
/// name.
pub fn messages_with(
    aea_dir: &Path,
    event: AuditEvent,
) -> Result<std::collections::HashSet<String>> {
    let mut ids = std::collections::HashSet::new();
    for_each(aea_dir, |line| {
        if line.get("event").and_then(Value::as_str) == Some(event.as_str())
            && let Some(Value::String(id)) = line.get("message")
        {
            ids.insert(id.clone());
        }
    })?;
    Ok(ids)
}

/// Calls `f` with every JSON event of the log, oldest first: the rotated
/// files from the highest number down, then `agent.log`. Lines that are
/// not JSON objects are skipped.
///
/// Every file is opened under the log lock, then read after it is let go:
/// an open file is read whole whatever it is renamed to meanwhile, so a
/// rotation during the read neither hides nor repeats a line, and
/// appenders wait only for the opening. Where the lock cannot be had (a
/// read-only `.aea/`, a holder that never lets go) the files are read
/// without it.
pub fn for_each(aea_dir: &Path, mut f: impl FnMut(Map<String, Value>)) -> Result<()> {
    let lock = crate::fsutil::lock_within(&aea_dir.join(LOCK_FILE), LOCK_WAIT).ok();
    let mut files: Vec<(PathBuf, File)> = Vec::new();
    let names = rotated_numbers(aea_dir)?
        .into_iter()
        .map(rotated_name)
        .chain([LOG_FILE.to_string()]);
    for name in names {
        let path = aea_dir.join(name);
        match crate::fsutil::open_read(&path) {
            Ok(file) => files.push((path, file)),
            Err(crate::fsutil::ReadLimited::Io(e)) if e.kind() == io::ErrorKind::NotFound => {}
            // A symlink, folder or FIFO under a rotated name is not a file
            // aea rotated: not read. The log itself must be a file.
            Err(crate::fsutil::ReadLimited::Symlink | crate::fsutil::ReadLimited::NotAFile)
                if path.file_name().is_some_and(|n| n != LOG_FILE) => {}
            Err(e) => return Err(e.into_error(&path, READ_LIMIT)),
        }
    }
    drop(lock);
    for (path, file) in files {
        for line in BufReader::new(file.take(READ_LIMIT)).split(b'\n') {
            let line = line.map_err(|e| Error::io("read", &path, e))?;
            if let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(&line) {
                f(map);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every JSON event in the log, oldest first (lines that are not JSON
    /// objects are skipped).
    fn read(aea_dir: &Path) -> Result<Vec<Map<String, Value>>> {
        let mut events = Vec::new();
        for_each(aea_dir, |event| events.push(event))?;
        Ok(events)
    }
    use aea_ground::env::Env;

    fn small(at_bytes: u64) -> Rotation {
        Rotation {
            at_bytes,
            keep: None,
        }
    }

    #[test]
    fn appends_rotates_and_skips_plain_text() {
        let dir = tempfile::tempdir().unwrap();
        let rt = Runtime::new(&Env::default());
        fs::write(
            dir.path().join(LOG_FILE),
            "2025-10-14 legacy plain text line\n",
        )
        .unwrap();
        append_rotating(dir.path(), &Event::new(&rt, AuditEvent::Init), small(1024)).unwrap();
        append_rotating(
            dir.path(),
            &Event::new(&rt, AuditEvent::Sent).with("message", "m1"),
            small(1024),
        )
        .unwrap();
        let events = read(dir.path()).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1]["message"], "m1");
        // Past the limit the next append starts a new file; nothing is lost.
        append_rotating(
            dir.path(),
            &Event::new(&rt, AuditEvent::Archived),
            small(10),
        )
        .unwrap();
        assert!(dir.path().join(rotated_name(1)).exists());
        let events = read(dir.path()).unwrap();
        let names: Vec<_> = events
            .iter()
            .map(|e| e["event"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["init", "sent", "archived"]);
    }

    /// Every append past the limit rotates: the second rotation used to
    /// overwrite `agent.log.1`, losing what the first had kept.
    #[test]
    fn rotation_keeps_every_line_in_numbered_files() {
        let dir = tempfile::tempdir().unwrap();
        let rt = Runtime::new(&Env::default());
        for n in 0..5 {
            let event = Event::new(&rt, AuditEvent::Sent).with("message", format!("m{n}"));
            append_rotating(dir.path(), &event, small(1)).unwrap();
        }
        let messages: Vec<_> = read(dir.path())
            .unwrap()
            .iter()
            .map(|e| e["message"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(messages, ["m0", "m1", "m2", "m3", "m4"]);
        assert_eq!(rotated_numbers(dir.path()).unwrap(), [4, 3, 2, 1]);
        let newest_rotated = fs::read_to_string(dir.path().join(rotated_name(1))).unwrap();
        assert!(newest_rotated.contains("m3"), "{newest_rotated}");

        // A cap on the count drops the oldest files, and only those.
        let capped = Rotation {
            at_bytes: 1,
            keep: Some(2),
        };
        let event = Event::new(&rt, AuditEvent::Sent).with("message", "m5");
        append_rotating(dir.path(), &event, capped).unwrap();
        assert_eq!(rotated_numbers(dir.path()).unwrap(), [2, 1]);
        let messages: Vec<_> = read(dir.path())
            .unwrap()
            .iter()
            .map(|e| e["message"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(messages, ["m3", "m4", "m5"]);
    }

    /// Names that only look like rotated files are neither read nor moved
    /// onto; a planted symlink is moved along but never followed.
    #[cfg(unix)]
    #[test]
    fn odd_rotated_names_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let rt = Runtime::new(&Env::default());
        fs::write(dir.path().join("agent.log.01"), "{\"event\":\"x\"}\n").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join(rotated_name(1))).unwrap();
        append_rotating(dir.path(), &Event::new(&rt, AuditEvent::Init), small(1)).unwrap();
        append_rotating(dir.path(), &Event::new(&rt, AuditEvent::Sent), small(1)).unwrap();
        let names: Vec<_> = read(dir.path())
            .unwrap()
            .iter()
            .map(|e| e["event"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["init", "sent"]);
        assert!(
            fs::symlink_metadata(dir.path().join(rotated_name(2)))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
}

/// What `aea doctor` last saw of the log: the file (device, inode), how
/// long it was and the SHA-256 of those bytes. The log is append-only, so
/// the next look must find the same bytes at the start of that file (or
/// of the rotated file it became); anything else means someone rewrote
/// it — a commit, a pull, a tool. Nothing is decided from the log, so this
/// is said, not acted on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Witness {
    dev: u64,
    ino: u64,
    len: u64,
    sha256: String,
}

/// The largest log prefix a witness hashes (rotation keeps files near
/// 10 MiB; past this only the length is compared).
const WITNESS_LIMIT: u64 = 64 * 1024 * 1024;

impl Witness {
    /// The log of `aea_dir` as it is now; `None` without one.
    pub fn take(aea_dir: &Path) -> Option<Witness> {
        let path = aea_dir.join(LOG_FILE);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        let (dev, ino) = crate::fsutil::identity(&meta);
        let bytes = crate::fsutil::read_limited(&path, WITNESS_LIMIT).ok()?;
        Some(Witness {
            dev,
            ino,
            len: bytes.len() as u64,
            sha256: crate::fsutil::sha256_hex(&bytes),
        })
    }

    /// Whether the log of `aea_dir` still starts with what this witness
    /// saw: found in `agent.log` or a rotated file by its inode. `Err`
    /// says what changed.
    pub fn holds(&self, aea_dir: &Path) -> std::result::Result<(), String> {
        let mut names = vec![LOG_FILE.to_string()];
        names.extend(
            rotated_numbers(aea_dir)
                .unwrap_or_default()
                .into_iter()
                .map(rotated_name),
        );
        for name in names {
            let path = aea_dir.join(&name);
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if crate::fsutil::identity(&meta) != (self.dev, self.ino) {
                continue;
            }
            let Ok(bytes) = crate::fsutil::read_limited(&path, WITNESS_LIMIT) else {
                return Err(format!("{name} no longer reads"));
            };
            if (bytes.len() as u64) < self.len {
                return Err(format!(
                    "{name} is shorter than when `aea doctor` last read it ({} < {} bytes): lines were removed",
                    bytes.len(),
                    self.len
                ));
            }
            let prefix = &bytes[..usize::try_from(self.len).unwrap_or(bytes.len())];
            if crate::fsutil::sha256_hex(prefix) != self.sha256 {
                return Err(format!(
                    "{name} was rewritten since `aea doctor` last read it: earlier lines changed"
                ));
            }
            return Ok(());
        }
        Err("agent.log is another file than when `aea doctor` last read it (replaced, or its rotated file removed)".into())
    }
}
