//! Taking an inbox over from the layout of older versions, which kept the
//! receiver's state inside `.aea/` (see [`crate::layout::OLD_STATE_NAMES`]),
//! into the private state. It runs once per inbox, by itself, on the first
//! command in it (and on `aea init`).
//!
//! What was in `.aea/` may have been written by git (a clone, a pull), so
//! it is never taken as a decision:
//!
//! - processed mail is moved out of the inbox with a record rebuilt from
//!   its `.processed/` marker — except mail the policy gates, which stays
//!   where it is: a marker aea cannot tell from one a commit planted hides
//!   it from listings, and `pending` lists it for a person, as it does
//!   any gated mail another tool marked processed;
//! - approvals are not taken: mail that still waits and was approved
//!   before is listed by `pending` as "approve again";
//! - sent copies and the `aea sync` queue are taken only if they carry
//!   this agent's own signature (nobody else can make one);
//! - attachments are taken only under the SHA-256 of their content;
//! - the old archive is left where it is, for a person to read: what it
//!   holds cannot be told from files a commit planted, and taken over it
//!   would answer `show`, `status` and a sender's retry ("held already");
//! - the sync store is made anew, and the refs and objects of the old one
//!   fetched into it without its config or hooks;
//! - claims, deferrals, send records, reminders, remembered answers,
//!   bridge and collaboration records, what `init` installed, locks and
//!   the monitor's files are not taken: they are rebuilt as aea works.
//!
//! Everything it leaves in `.aea/` is named by `aea doctor` and never read.
//! Each step is idempotent and a run can stop anywhere (a kill, or its
//! budget): the next picks up what is left, and only the private state is
//! honoured meanwhile. A large inbox moves in bounded steps, so no hook
//! waits for it.

use std::fs;
use std::path::Path;

use ed25519_dalek::VerifyingKey;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fsutil;
use crate::layout::{Private, Shared};
use crate::mailbox::{Entry, Mailbox, Marker};
use crate::message::{self, Message};

use crate::layout::old::{
    APPROVALS as OLD_APPROVALS, ATTACHMENTS as OLD_ATTACHMENTS, OUTGOING as OLD_OUTGOING,
    SENT as OLD_SENT, SYNC as OLD_SYNC,
};

/// What a migration is told about this agent.
pub struct Context<'a> {
    /// Whether the policy waits for a person on `message`.
    pub gated: &'a dyn Fn(&Message) -> bool,
    /// This agent's public key: only what it signed is taken over.
    pub own_key: Option<VerifyingKey>,
    /// The run stops moving files at this time (`None`: it moves them all);
    /// the next run goes on.
    pub until: Option<std::time::Instant>,
}

/// What the migration found and did, kept in the private state
/// (`migrated.json`) and shown by `doctor`.
#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Record {
    /// Everything was taken over; the next commands skip the migration.
    pub done: bool,
    /// Processed messages moved out of the inbox, with rebuilt records.
    pub processed: usize,
    /// Gated mail marked processed that stays in the inbox for a person.
    pub gated_left: Vec<String>,
    /// Mail still waiting that had an approval before: approve again.
    pub approve_again: Vec<String>,
    /// Sent copies and queued mail taken over (signed by this agent).
    pub signed_taken: usize,
    /// Sent copies and queued mail not taken (not signed by this agent).
    pub dropped: Vec<String>,
    /// Attachments taken over.
    pub attachments: usize,
    /// The sync store's refs were fetched into the new store.
    pub sync_store: bool,
}

impl Record {
    /// How much it found to take over or to leave: 0 for an inbox that
    /// had no state of an older aea.
    pub fn found(&self) -> usize {
        self.processed
            + self.gated_left.len()
            + self.approve_again.len()
            + self.signed_taken
            + self.dropped.len()
            + self.attachments
    }
}

/// The record of an earlier migration, if one ran.
pub fn record(mailbox: &Mailbox) -> Option<Record> {
    let path = mailbox.layout().private(Private::Migrated);
    let bytes = fsutil::read_state(&path, fsutil::SMALL_STATE_LIMIT).ok()??;
    serde_json::from_slice(&bytes).ok()
}

/// Whether this inbox still has to be taken over: one `stat` once it was.
pub fn needed(mailbox: &Mailbox) -> bool {
    let path = mailbox.layout().private(Private::Migrated);
    if fs::symlink_metadata(&path).is_ok() {
        return !record(mailbox).is_some_and(|r| r.done);
    }
    true
}

/// Takes the inbox over (see the module comment), as far as the budget
/// goes. Returns the record, `done` once nothing is left.
pub fn run(mailbox: &Mailbox, cx: &Context<'_>) -> Result<Record> {
    mailbox.ensure_state()?;
    let mut record = record(mailbox).unwrap_or_default();
    if record.done {
        return Ok(record);
    }
    let layout = mailbox.layout();
    if !record.sync_store {
        record.sync_store = take_sync_store(mailbox)?;
    }
    for (old, place) in [(OLD_OUTGOING, Private::Outgoing), (OLD_SENT, Private::Sent)] {
        take_signed(mailbox, &layout.old(old), place, cx, &mut record)?;
    }
    record.attachments += take_attachments(mailbox, &layout.old(OLD_ATTACHMENTS))?;
    // Said from the first run on, however long the rest takes.
    record.approve_again = approved_before(mailbox);
    if take_processed(mailbox, cx, &mut record)? {
        record.done = true;
    }
    save(mailbox, &record)?;
    Ok(record)
}

fn save(mailbox: &Mailbox, record: &Record) -> Result<()> {
    let path = mailbox.private_file(Private::Migrated)?;
    let staging = mailbox.make_private_dir(Private::Tmp)?;
    let text = serde_json::to_vec_pretty(record).expect("a record always serialises");
    fsutil::replace_atomic_via(&staging, &path, &text)
}

/// The message files (regular, within the size limit) of an old folder.
fn messages_in(dir: &Path, limit: u64) -> Vec<(String, Vec<u8>)> {
    if !fsutil::state_dir_exists(dir).unwrap_or(false) {
        return Vec::new();
    }
    let mut names = crate::mailbox::message_names_in(dir).unwrap_or_default();
    names.sort();
    names
        .into_iter()
        .filter_map(|name| {
            let bytes = fsutil::read_limited(&dir.join(&name), limit).ok()?;
            Some((name, bytes))
        })
        .collect()
}

/// Sent copies and queued mail: taken only when this agent signed them.
fn take_signed(
    mailbox: &Mailbox,
    old: &Path,
    place: Private,
    cx: &Context<'_>,
    record: &mut Record,
) -> Result<()> {
    let ceiling = *crate::config::MESSAGE_BYTES_RANGE.end();
    for (name, bytes) in messages_in(old, ceiling) {
        let ours = cx.own_key.is_some_and(|key| {
            message::parse(&bytes, Some(&name)).is_ok_and(|m| crate::identity::signed_by(&m, &key))
        });
        if !ours {
            let label = format!("{}/{name}", place.name());
            if !record.dropped.contains(&label) && record.dropped.len() < 1000 {
                record.dropped.push(label);
            }
            continue;
        }
        if mailbox.sent().keep_as(place, &name, &bytes)? {
            record.signed_taken += 1;
        }
    }
    Ok(())
}

/// Attachments whose content hashes to their name.
fn take_attachments(mailbox: &Mailbox, old: &Path) -> Result<usize> {
    if !fsutil::state_dir_exists(old).unwrap_or(false) {
        return Ok(0);
    }
    let mut taken = 0;
    for entry in fs::read_dir(old).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !crate::attachments::is_digest(&name) {
            continue;
        }
        let Some(bytes) = crate::attachments::load(old, &name) else {
            continue;
        };
        let store = mailbox.make_private_dir(Private::Attachments)?;
        if !crate::attachments::has(&store, &name) {
            crate::attachments::keep(&store, &bytes)?;
            taken += 1;
        }
    }
    Ok(taken)
}

/// Processed mail of the inbox (a `.processed/` marker) moves to the
/// private store with a record rebuilt from the marker; gated mail stays.
/// `false` when its time ran out first. The folders are flushed once at
/// the end, not after each file: a file a crash puts back is marked still,
/// and moves again next time.
fn take_processed(mailbox: &Mailbox, cx: &Context<'_>, record: &mut Record) -> Result<bool> {
    let Some(markers) = mailbox.shared_dir(Shared::Markers)? else {
        return Ok(true);
    };
    let mut names = mailbox.inbox().message_names()?;
    names.sort();
    for name in names {
        let marker_path = markers.join(&name);
        if !fs::symlink_metadata(&marker_path).is_ok_and(|m| m.is_file()) {
            continue;
        }
        let Some(entry) = mailbox.inbox().read_listed(mailbox.dir(), &name) else {
            continue;
        };
        if entry.valid().is_some_and(|m| (cx.gated)(m)) {
            if !record.gated_left.contains(&name) {
                record.gated_left.push(name);
            }
            continue;
        }
        if cx.until.is_some_and(|t| std::time::Instant::now() >= t) {
            flush(mailbox)?;
            return Ok(false);
        }
        let marker = fsutil::read_state(&marker_path, fsutil::SMALL_STATE_LIMIT)
            .ok()
            .flatten()
            .and_then(|b| serde_json::from_slice::<Marker>(&b).ok());
        // A marker for other bytes: the file was replaced after it was
        // processed; it stays, unprocessed.
        if marker
            .as_ref()
            .is_some_and(|m| m.sha256.is_some() && m.sha256 != entry.sha256)
        {
            continue;
        }
        let rebuilt = marker.unwrap_or_else(|| rebuilt_from(&entry, &marker_path));
        match mailbox.records().finish_unflushed(&entry, &rebuilt) {
            Ok(_) => record.processed += 1,
            // Processed by a command meanwhile, or gone: nothing to take.
            Err(Error::AlreadyProcessed { .. } | Error::MessageNotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    flush(mailbox)?;
    Ok(true)
}

/// Flushes the folders processed mail moved between.
fn flush(mailbox: &Mailbox) -> Result<()> {
    for place in [Private::Processed, Private::Records] {
        if let Some(dir) = mailbox.private_dir(place)? {
            fsutil::sync_dir(&dir)?;
        }
    }
    fsutil::sync_dir(mailbox.dir())
}

/// A record for mail an older tool marked with an empty file: when (the
/// marker's time), by whom (unknown), with what outcome (done).
fn rebuilt_from(entry: &Entry, marker: &Path) -> Marker {
    let at = fs::symlink_metadata(marker)
        .and_then(|m| m.modified())
        .map_or_else(
            |_| chrono::Utc::now(),
            chrono::DateTime::<chrono::Utc>::from,
        );
    Marker {
        processed_at: message::format_time(at),
        by: "unknown (an empty marker, taken over from .aea/.processed/)".into(),
        outcome: crate::mailbox::Outcome::Done.into(),
        note: None,
        message_id: entry.valid().map(|m| m.message_id.clone()),
        sha256: entry.sha256.clone(),
    }
}

/// Mail still waiting (no `.processed/` marker) whose old approval record
/// names it: approved before, to be approved again.
fn approved_before(mailbox: &Mailbox) -> Vec<String> {
    let old = mailbox.layout().old(OLD_APPROVALS);
    if !fsutil::state_dir_exists(&old).unwrap_or(false) {
        return Vec::new();
    }
    let marked: std::collections::HashSet<String> = mailbox
        .inbox()
        .marked_names()
        .unwrap_or_default()
        .into_iter()
        .collect();
    let mut names: Vec<String> = mailbox
        .inbox()
        .message_names()
        .unwrap_or_default()
        .into_iter()
        .filter(|n| !marked.contains(n))
        .filter(|n| fs::symlink_metadata(old.join(format!("{n}.json"))).is_ok())
        .collect();
    names.sort();
    names.truncate(1000);
    names
}

/// The old sync store's refs and objects, fetched into a new store
/// without anything of its config or hooks. `true` when there is nothing
/// to take or it was taken.
fn take_sync_store(mailbox: &Mailbox) -> Result<bool> {
    let old = mailbox.layout().old(OLD_SYNC);
    if !fsutil::state_dir_exists(&old).unwrap_or(false) || !old.join("HEAD").is_file() {
        return Ok(true);
    }
    let new = mailbox.make_private_dir(Private::SyncStore)?;
    crate::repo::MailStore::import(&old, &new)?;
    Ok(true)
}
