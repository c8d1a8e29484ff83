//! The append-only audit log `.aea/agent.log` (SPEC §7): JSON Lines, one
//! line per action, each appended with a single write under a lock, rotated
//! to `agent.log.1` at 10 MiB. Readers skip lines that are not JSON, which
//! older tools wrote.

use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::message::format_time;
use crate::runtime::Runtime;
use crate::words::word_enum;

pub const LOG_FILE: &str = "agent.log";
pub const ROTATED_FILE: &str = "agent.log.1";
pub const LOCK_FILE: &str = ".agent.log.lock";
pub const ROTATE_AT: u64 = 10 * 1024 * 1024;
/// Reading stops after this many bytes of one file (older tools did not
/// rotate); a line is never longer than this either.
const READ_LIMIT: u64 = 8 * ROTATE_AT;
/// How long an append waits for the log lock before giving up.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

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

/// Appends `event` to `<aea_dir>/agent.log`.
pub fn append(aea_dir: &Path, event: &Event) -> Result<()> {
    append_with_limit(aea_dir, event, ROTATE_AT)
}

fn append_with_limit(aea_dir: &Path, event: &Event, rotate_at: u64) -> Result<()> {
    let mut line = serde_json::to_vec(&event.0).expect("a JSON map always serialises");
    line.push(b'\n');
    let lock_path = aea_dir.join(LOCK_FILE);
    let log_path = aea_dir.join(LOG_FILE);
    crate::fsutil::refuse_symlink(&log_path)?;
    let owner = crate::fsutil::dir_owner(aea_dir);
    // A separate lock file: rotation renames the log, and a lock held on the
    // renamed file would no longer exclude writers of the new one. Writers
    // hold it for one write; a holder that never lets go is an error, not a
    // hung git hook.
    let lock = crate::fsutil::lock_within(&lock_path, LOCK_WAIT)?;
    crate::fsutil::require_owner(&lock, &lock_path, owner)?;
    match fs::symlink_metadata(&log_path) {
        Ok(meta) if meta.is_file() && meta.len() >= rotate_at => {
            let rotated = aea_dir.join(ROTATED_FILE);
            fs::rename(&log_path, &rotated).map_err(|e| Error::io("rotate", &log_path, e))?;
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

/// Every JSON event in the log, oldest first (the rotated file, then the
/// current one). Lines that are not JSON objects are skipped.
pub fn read(aea_dir: &Path) -> Result<Vec<Map<String, Value>>> {
    let mut events = Vec::new();
    for name in [ROTATED_FILE, LOG_FILE] {
        let path = aea_dir.join(name);
        let file = match crate::fsutil::open_read(&path) {
            Ok(f) => f,
            Err(crate::fsutil::ReadLimited::Io(e)) if e.kind() == io::ErrorKind::NotFound => {
                continue;
            }
            Err(e) => return Err(e.into_error(&path, READ_LIMIT)),
        };
        for line in BufReader::new(file.take(READ_LIMIT)).split(b'\n') {
            let line = line.map_err(|e| Error::io("read", &path, e))?;
            if let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(&line) {
                events.push(map);
            }
        }
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::Env;

    #[test]
    fn appends_rotates_and_skips_plain_text() {
        let dir = tempfile::tempdir().unwrap();
        let rt = Runtime::new(&Env::default());
        fs::write(
            dir.path().join(LOG_FILE),
            "2025-10-14 legacy plain text line\n",
        )
        .unwrap();
        append_with_limit(dir.path(), &Event::new(&rt, AuditEvent::Init), 1024).unwrap();
        append_with_limit(
            dir.path(),
            &Event::new(&rt, AuditEvent::Sent).with("message", "m1"),
            1024,
        )
        .unwrap();
        let events = read(dir.path()).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1]["message"], "m1");
        // Past the limit the next append starts a new file; nothing is lost.
        append_with_limit(dir.path(), &Event::new(&rt, AuditEvent::Archived), 10).unwrap();
        assert!(dir.path().join(ROTATED_FILE).exists());
        let events = read(dir.path()).unwrap();
        let names: Vec<_> = events
            .iter()
            .map(|e| e["event"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["init", "sent", "archived"]);
    }
}
