//! What a process killed mid-way leaves half-done, found and finished
//! (`aea doctor`, `aea doctor --fix`).
//!
//! - An interrupted send: its record in the private `sent-keys/` (written before
//!   anything was delivered) names the message id and every recipient. The
//!   `sent/` copy is completed from a recipient's copy signed with our key;
//!   a send that reached nobody leaves nothing; one that reached only some
//!   recipients is finished by running the same `aea send` again.
//! - A missing log line: every record of processed or deferred mail, inbox
//!   message and `sent/` copy holds what its log line said, so a line that a
//!   kill cut off is written again from it, marked `"repaired"`. Only what
//!   is newer than the log's first line is looked at: older lines went with
//!   rotation, not with a kill. Mail no aea process logged by design (other
//!   OS users' deliveries into a shared inbox, unsigned mail other tools
//!   wrote) is not looked at either.

use std::collections::HashSet;

use chrono::{DateTime, Utc};

use crate::audit::{AuditEvent, Event};
use ed25519_dalek::VerifyingKey;

use crate::delivery::{Destination, ForeignFiles, Intent, RETRY_PREFIX, held};
use crate::error::Result;
use crate::layout::Private;
use crate::mailbox::Mailbox;
use crate::message::{Message, format_time, parse_time};
use crate::runtime::Runtime;

/// A send whose process is gone before it finished.
#[derive(Debug)]
pub struct Interrupted {
    /// The record's name in the private `sent-keys/`.
    pub record: String,
    pub intent: Intent,
    /// Recipients that hold the message.
    pub reached: Vec<String>,
    /// Recipients that do not.
    pub missing: Vec<String>,
    /// Whether `sent/` holds its copy.
    pub sent_copy: bool,
    /// Whether the same `aea send` is still taken for its retry
    /// ([`Intent::recent`]); past that, it would be a new message.
    pub retriable: bool,
}

impl Interrupted {
    /// One line for a person.
    pub fn describe(&self) -> String {
        let reached = if self.reached.is_empty() {
            "reached nobody".to_string()
        } else {
            format!("reached {}", self.reached.join(", "))
        };
        let missing = if self.missing.is_empty() {
            String::new()
        } else {
            format!(", not {}", self.missing.join(", "))
        };
        let copy = if self.sent_copy {
            ""
        } else {
            ", no sent/ copy"
        };
        let old = if self.retriable || self.missing.is_empty() {
            ""
        } else {
            ", too old to be retried under its id"
        };
        format!(
            "message {} (started {}) {reached}{missing}{copy}{old}",
            self.intent.message_id, self.intent.at
        )
    }
}

/// Every send recorded in the private `sent-keys/` by `sender` that did not finish
/// and whose process is gone. A recipient reached is one that holds the
/// message signed with `key` (see [`held`]); an OACP or Roo agent's folder
/// is read through `foreign`.
pub fn interrupted_sends(
    mailbox: &Mailbox,
    sender: &str,
    key: Option<&VerifyingKey>,
    now: DateTime<Utc>,
    foreign: &dyn ForeignFiles,
) -> Result<Vec<Interrupted>> {
    let mut found = Vec::new();
    for (record, bytes) in mailbox.sent().send_keys()? {
        let Some(intent) = Intent::parse(&bytes) else {
            continue;
        };
        if !intent.interrupted(now) {
            continue;
        }
        let sent_copy = sent_copy(mailbox, &intent.message_id).is_some();
        let (reached, missing): (Vec<&Destination>, Vec<&Destination>) = intent
            .to
            .iter()
            .partition(|d| held(mailbox, d, sender, &intent.message_id, key, foreign).is_some());
        // A keyed record of an older version names no recipients: its
        // sent/ copy says it finished.
        if sent_copy && missing.is_empty() {
            continue;
        }
        let ids = |d: Vec<&Destination>| d.into_iter().map(|d| d.agent_id.clone()).collect();
        found.push(Interrupted {
            retriable: intent.recent(now),
            record,
            reached: ids(reached),
            missing: ids(missing),
            sent_copy,
            intent,
        });
    }
    Ok(found)
}

/// Our `sent/` copy of message `id`.
fn sent_copy(mailbox: &Mailbox, id: &str) -> Option<Message> {
    let entry = mailbox
        .inbox()
        .find(id, &[crate::mailbox::Held::Sent])
        .ok()?
        .0;
    entry.valid().filter(|m| m.message_id == id).cloned()
}

/// Finishes what can be finished of an interrupted send, and says what
/// was done: the `sent/` copy (and its log line) from a recipient's copy
/// signed with our `key` (never from one we cannot tell is ours); the
/// record goes when the send reached nobody (it can be sent anew) or, for
/// a plain send, everyone; a keyed send's is marked finished (it is the
/// key). A send that reached only some recipients keeps its record, so
/// that the same `aea send` again reaches the rest under the same id. An
/// OACP or Roo agent's folder is read through `foreign`.
pub fn finish_send(
    mailbox: &Mailbox,
    sender_id: &str,
    key: Option<&VerifyingKey>,
    send: &Interrupted,
    rt: &Runtime,
    foreign: &dyn ForeignFiles,
) -> Result<String> {
    let id = &send.intent.message_id;
    // Under the lock a retry takes records over by: a retry of this send
    // running now owns the record (its process alive) and keeps the
    // sent/ copy itself; doctor keeping one too made two.
    let _lock = mailbox.sent().lock_send_keys()?;
    let still = mailbox
        .sent()
        .send_key(&send.record)?
        .and_then(|b| Intent::parse(&b))
        .is_some_and(|i| i.message_id == *id && i.finished.is_none() && i.interrupted(rt.now()));
    if !still {
        return Ok(format!(
            "message {id}: left to the send that took it over meanwhile"
        ));
    }
    if send.reached.is_empty() {
        mailbox.sent().forget_send_key(&send.record)?;
        return Ok(format!(
            "message {id} reached nobody: its record is removed; send it again"
        ));
    }
    let mut done: Vec<String> = Vec::new();
    // Looked at again under the lock: a retry that ran meanwhile (and was
    // killed before it let its record go) kept the copy already.
    if !send.sent_copy
        && sent_copy(mailbox, id).is_none()
        && let Some(key) = key
    {
        let held = send
            .intent
            .to
            .iter()
            .find_map(|d| held(mailbox, d, sender_id, id, Some(key), foreign)?.message);
        if let Some(message) = held {
            mailbox.sent().store_sent(&message, rt)?;
            let to: Vec<String> = send.intent.to.iter().map(|d| d.agent_id.clone()).collect();
            mailbox.log(
                &Event::new(rt, AuditEvent::Sent)
                    .with("message", id.as_str())
                    .with("type", message.message_type.as_str())
                    .with("priority", message.priority.as_str())
                    .with("to", to)
                    .with("repaired", "from a recipient's copy"),
            )?;
            done.push("its sent/ copy is kept".into());
        }
    }
    if send.missing.is_empty() {
        if send.record.starts_with(RETRY_PREFIX) {
            mailbox.sent().forget_send_key(&send.record)?;
        } else {
            let mut intent = send.intent.clone();
            intent.finished = Some(format_time(rt.now()));
            mailbox
                .sent()
                .replace_send_key(&send.record, &intent.bytes())?;
        }
        done.push("every recipient has it".into());
    } else if send.retriable {
        done.push("run the same `aea send` again to reach the rest (it reuses the id)".into());
    } else {
        // No retry will use the record any more: a send now is new.
        mailbox.sent().forget_send_key(&send.record)?;
        done.push(format!(
            "too old to be retried under its id: send it to {} as a new message (its record is removed)",
            send.missing.join(", ")
        ));
    }
    Ok(format!("message {id}: {}", done.join("; ")))
}

/// Log lines a kill cut off, rebuilt from what the operation left: the
/// markers, the inbox, the `sent/` copies. Not yet written.
pub fn missing_log_lines(mailbox: &Mailbox, rt: &Runtime) -> Result<Vec<Event>> {
    let mut first: Option<DateTime<Utc>> = None;
    let mut logged: HashSet<(String, String)> = HashSet::new();
    crate::audit::for_each(mailbox.dir(), |line| {
        let text = |k: &str| line.get(k).and_then(|v| v.as_str()).map(str::to_string);
        if first.is_none() {
            first = text("ts").as_deref().and_then(parse_time);
        }
        if let Some(event) = text("event") {
            for key in ["file", "message"] {
                if let Some(v) = text(key) {
                    logged.insert((event.clone(), v));
                }
            }
        }
    })?;
    let Some(first) = first else {
        // No log at all: nothing to compare with.
        return Ok(Vec::new());
    };
    let since = |at: Option<DateTime<Utc>>| at.is_some_and(|t| t >= first);
    let has = |event: AuditEvent, key: &str| {
        logged.contains(&(event.as_str().to_string(), key.to_string()))
    };
    let mut lines = Vec::new();
    // aea's own records only: a marker another tool (or a commit) wrote in
    // `.aea/.processed/` is not a step of aea's that a kill cut short.
    for entry in mailbox
        .inbox()
        .read_all_in(crate::layout::Private::Processed)?
    {
        let Some(marker) = mailbox.records().record(&entry.name) else {
            continue;
        };
        if has(AuditEvent::Processed, &entry.name) || !since(parse_time(&marker.processed_at)) {
            continue;
        }
        lines.push(repaired_marker(
            rt,
            AuditEvent::Processed,
            &entry.name,
            &marker,
        ));
    }
    for (name, marker) in mailbox.records().deferrals()? {
        let Some(marker) = marker else { continue };
        if has(AuditEvent::Deferred, &name) || !since(parse_time(&marker.processed_at)) {
            continue;
        }
        lines.push(repaired_marker(rt, AuditEvent::Deferred, &name, &marker));
    }
    // Deliveries nobody logged by design are not cut-off lines: where
    // other OS users deliver (the log is not theirs to write, SPEC §15.1),
    // and mail other tools wrote straight into the inbox (the bash AEA,
    // bridges), which aea would have signed.
    let names = if writable_by_others(mailbox.dir()) {
        Vec::new()
    } else {
        mailbox.inbox().message_names()?
    };
    for name in names {
        let entry = mailbox.inbox().read(&name);
        let Some(m) = entry.valid().filter(|m| m.signature.is_some()) else {
            continue;
        };
        if has(AuditEvent::Delivered, &m.message_id) || !since(parse_time(&m.timestamp)) {
            continue;
        }
        lines.push(
            Event::new(rt, AuditEvent::Delivered)
                .with("ts", m.timestamp.as_str())
                .with("message", m.message_id.as_str())
                .with("file", name.as_str())
                .with("from", m.from.agent_id.as_str())
                .with("repaired", "from the inbox"),
        );
    }
    for entry in mailbox.inbox().read_all_in(Private::Sent)? {
        let Some(m) = entry.valid().filter(|m| m.signature.is_some()) else {
            continue;
        };
        if has(AuditEvent::Sent, &m.message_id) || !since(parse_time(&m.timestamp)) {
            continue;
        }
        let to: Vec<String> = m
            .metadata
            .broadcast
            .clone()
            .unwrap_or_else(|| vec![m.to.agent_id.clone()]);
        lines.push(
            Event::new(rt, AuditEvent::Sent)
                .with("ts", m.timestamp.as_str())
                .with("message", m.message_id.as_str())
                .with("type", m.message_type.as_str())
                .with("priority", m.priority.as_str())
                .with("to", to)
                .with("repaired", "from the sent/ copy"),
        );
    }
    Ok(lines)
}

/// Whether other OS users may create files in `.aea/` (`init --shared`).
fn writable_by_others(dir: &std::path::Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o022 != 0)
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        false
    }
}

fn repaired_marker(
    rt: &Runtime,
    event: AuditEvent,
    name: &str,
    marker: &crate::mailbox::Marker,
) -> Event {
    let mut line = Event::new(rt, event)
        .with("ts", marker.processed_at.as_str())
        .with("actor", marker.by.as_str())
        .with("file", name)
        .with("outcome", marker.outcome.to_string())
        .with("repaired", "from the marker");
    if let Some(id) = &marker.message_id {
        line = line.with("message", id.as_str());
    }
    line
}

/// Records of plain sends no retry will use any more (older than
/// [`crate::delivery::RETRY_WITHIN_HOURS`], or that do not read), removed
/// by `aea gc`. Only records last written before that are read. Returns
/// how many went.
pub(crate) fn forget_old_records(mailbox: &Mailbox, now: DateTime<Utc>) -> Result<usize> {
    let cutoff = now - chrono::Duration::hours(crate::delivery::RETRY_WITHIN_HOURS);
    let mut gone = 0;
    for record in mailbox.sent().send_keys_written_before(cutoff.into())? {
        if !record.starts_with(RETRY_PREFIX) {
            continue;
        }
        let Some(bytes) = mailbox.sent().send_key(&record).ok().flatten() else {
            continue;
        };
        // One that does not read is no send's: no retry can use it.
        let useless = Intent::parse(&bytes).is_none_or(|i| !i.recent(now));
        if useless {
            mailbox.sent().forget_send_key(&record)?;
            gone += 1;
        }
    }
    Ok(gone)
}
