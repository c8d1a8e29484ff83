//! Keeping the inbox small (`aea gc`, SPEC §2, §3.2): processed messages
//! older than a cutoff (in the private store, or left in the inbox by
//! another tool's marker) and expired unprocessed ones move to the
//! private archive, invalid files to `.aea/.quarantine/` with the reason.
//! Nothing is deleted but the records of interrupted plain sends too old
//! for a retry to use (`sent-keys/retry-*`, after a day).
//!
//! One gc at a time per mailbox: a run holds the private `gc.lock` (taken like
//! the log's and sync's locks, [`fsutil::try_lock_within`]); a second run
//! waits for it up to [`LOCK_WAIT`], then finds the work done, or steps
//! aside and says so. The moves themselves are safe without the lock too
//! (`aea quarantine`, an older aea): a file another process moved first is
//! left out, never archived twice, never an error. What cannot be moved (a
//! folder named like a message) is skipped with the reason and reported;
//! the rest of the inbox is still cleaned.

use std::collections::HashSet;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::audit::{self, AuditEvent, Event};
use crate::error::{Error, Result};
use crate::fsutil;
use crate::layout::Private;
use crate::mailbox::{Aside, Mailbox, Marker, NOT_A_FILE, Processed};
use crate::message::parse_time;
use crate::runtime::Runtime;

/// How often a listing may start `gc --auto` while the inbox stays over
/// its limit (it may be over because all of it is recent and gated).
pub(crate) const AUTO_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);

/// How long a second gc waits for the first before it steps aside. A gc
/// moves a few thousand files a second; one that holds the lock longer
/// than this is stuck, or has a very large inbox to itself.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The inbox over its limit, as a listing just found it: when
/// [`auto_due`] says a background `aea gc --auto` is due.
#[derive(Debug, Clone, Copy)]
pub struct AutoDue {
    /// Processed messages the listing found in the inbox.
    pub count: usize,
    /// `limits.auto_gc_over`.
    pub limit: u64,
}

/// Whether the listing just made found more processed mail than
/// `limits.auto_gc_over` (the way `git gc --auto` keeps a repository
/// small), at most once per [`AUTO_EVERY`]: when it is due, the start is
/// stamped (under `seen/`) and the caller starts `aea gc --auto`.
pub fn auto_due(mailbox: &Mailbox) -> Option<AutoDue> {
    let (Some(count), Some(limit), Some(seen)) = (
        mailbox.inbox().listed_processed(),
        mailbox.config().ok().and_then(|c| c.limits.auto_gc()),
        mailbox.seen_dir(),
    ) else {
        return None;
    };
    if count as u64 <= limit {
        return None;
    }
    let stamp = seen.join(crate::layout::seen::AUTO_GC);
    let recent = std::fs::symlink_metadata(&stamp)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age < AUTO_EVERY);
    if recent || fsutil::replace_cache_via(&seen, &stamp, b"").is_err() {
        return None;
    }
    Some(AutoDue { count, limit })
}

/// What a gc run is asked to do.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    /// Processed messages processed before this are archived.
    pub cutoff: DateTime<Utc>,
    /// Besides: the oldest processed messages (by file name, which starts
    /// with the time it was sent) until at most this many remain.
    pub keep_processed: Option<usize>,
    /// Say what would move, move nothing (and take no lock).
    pub dry_run: bool,
    /// How long to wait for another gc ([`LOCK_WAIT`]).
    pub lock_wait: std::time::Duration,
}

/// What a gc run moved, or would move, and what it left alone.
#[derive(Debug, Default, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Report {
    /// Processed messages moved to the private archive.
    pub archived: Vec<String>,
    /// Unprocessed messages past their `expires_at`, moved to the archive.
    pub expired: Vec<String>,
    /// Invalid files moved to `.quarantine/` with a `.reason` file.
    pub quarantined: Vec<String>,
    /// Entries gc could not move, with the reason; they stay where they are.
    pub skipped: Vec<Skipped>,
    /// Another gc held the lock for the whole wait: this run moved nothing
    /// (that one is doing the work).
    pub busy: bool,
    /// Processed messages left in place because they were processed after
    /// the cutoff (too recently to archive).
    pub kept_recent: usize,
}

/// An entry of the inbox gc left in place, and why.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Skipped {
    pub file: String,
    pub reason: String,
}

/// Where gc moves a file.
#[derive(Debug, Clone, Copy)]
enum Move {
    Archive,
    Expire,
    Quarantine,
}

impl Move {
    fn aside(self) -> Aside {
        match self {
            Move::Archive | Move::Expire => Aside::Archive,
            Move::Quarantine => Aside::Quarantine,
        }
    }

    fn event(self) -> AuditEvent {
        match self {
            Move::Archive => AuditEvent::Archived,
            Move::Expire => AuditEvent::Expired,
            Move::Quarantine => AuditEvent::Quarantined,
        }
    }
}

/// Runs gc on `mailbox` (see the module comment).
pub fn collect(mailbox: &Mailbox, request: Request, rt: &Runtime) -> Result<Report> {
    let mut report = Report::default();
    // Every state folder is checked first: a `.processed` or `.archive`
    // swapped for a symlink stops gc before it moves or unlinks anything.
    mailbox.check_state()?;
    let _lock = if request.dry_run {
        None
    } else {
        let path = mailbox.private_file(Private::GcLock)?;
        let Some(lock) = fsutil::try_lock_within(&path, request.lock_wait)? else {
            report.busy = true;
            return Ok(report);
        };
        fsutil::require_owner(&lock, &path, fsutil::dir_owner(mailbox.dir()))?;
        Some(lock)
    };
    let rotation = mailbox.log_rotation();
    let now = rt.now();
    if !request.dry_run {
        // Records of interrupted sends no retry will use any more.
        crate::recovery::forget_old_records(mailbox, now)?;
        // What a gc killed between a message and its record left apart.
        mailbox.records().carry_left_behind_state()?;
        // Replays leave as a listing sets them aside (quarantined alone,
        // logged), never archived as if they were the mail they copy.
        mailbox.inbox().unprocessed()?;
    }
    let mut names = mailbox.inbox().message_names()?;
    names.sort();
    let mut stored = mailbox
        .inbox()
        .processed_store()
        .map(|store| crate::mailbox::message_names_in(&store))
        .transpose()?
        .unwrap_or_default();
    stored.sort();
    // The processed messages beyond `keep_processed`, oldest first (by
    // name, which starts with the time it was sent), go whatever their age.
    let over: HashSet<String> = match request.keep_processed {
        Some(keep) => {
            let marked = names.iter().filter(|n| {
                matches!(
                    mailbox.records().processed(&mailbox.inbox().read(n)),
                    Ok(Processed::Done(_) | Processed::Marked(_))
                )
            });
            let mut done: Vec<&String> = stored.iter().chain(marked).collect();
            done.sort();
            let extra = done.len().saturating_sub(keep);
            done.into_iter().take(extra).cloned().collect()
        }
        None => HashSet::new(),
    };
    let candidates = names
        .into_iter()
        .map(|n| (n, false))
        .chain(stored.into_iter().map(|n| (n, true)));
    for (name, in_store) in candidates {
        let cutoff = if over.contains(&name) {
            DateTime::<Utc>::MAX_UTC
        } else {
            request.cutoff
        };
        let judged = if in_store {
            judge_stored(mailbox, &name, cutoff)
        } else {
            judge(mailbox, &name, cutoff, now)
        };
        let (kind, reason) = match judged {
            Judged::Stays => continue,
            Judged::Recent => {
                report.kept_recent += 1;
                continue;
            }
            Judged::Skip(reason) => {
                report.skipped.push(Skipped { file: name, reason });
                continue;
            }
            Judged::Move(kind, reason) => (kind, reason),
        };
        if !request.dry_run {
            // Mail leaving the inbox for the archive keeps its id taken: a
            // copy of it later is a replay (what was processed is taken
            // when it is processed).
            let leaving = (!in_store && !matches!(kind, Move::Quarantine))
                .then(|| mailbox.inbox().read(&name));
            let moved = if in_store {
                mailbox.records().archive_processed(&name)
            } else {
                mailbox
                    .records()
                    .move_out(&name, kind.aside(), reason.as_deref())
            };
            match moved {
                Ok(Some(_)) => {
                    if let Some(entry) = &leaving {
                        mailbox.inbox().note_left(entry);
                    }
                }
                // Another process moved it first; it reports the move.
                Ok(None) => continue,
                // This file could not be moved (its own permissions, a
                // name taken a thousand times): said, and the rest goes on.
                Err(e @ (Error::Io { .. } | Error::NoFreeName { .. })) => {
                    report.skipped.push(Skipped {
                        file: name,
                        reason: crate::error::one_line(&e),
                    });
                    continue;
                }
                Err(e) => return Err(e),
            }
            let mut event = Event::new(rt, kind.event()).with("file", name.as_str());
            if let Some(reason) = &reason {
                event = event.with("reason", reason.as_str());
            }
            audit::append_rotating(mailbox.dir(), &event, rotation)?;
        }
        match kind {
            Move::Archive => report.archived.push(name),
            Move::Expire => report.expired.push(name),
            Move::Quarantine => report.quarantined.push(name),
        }
    }
    Ok(report)
}

/// What gc does with one inbox entry.
enum Judged {
    Stays,
    /// Processed, but after the cutoff: stays, and is counted.
    Recent,
    Move(Move, Option<String>),
    Skip(String),
}

fn judge(mailbox: &Mailbox, name: &str, cutoff: DateTime<Utc>, now: DateTime<Utc>) -> Judged {
    // Gone since the listing: another process moved it.
    let Some(entry) = mailbox.inbox().read_listed(mailbox.dir(), name) else {
        return Judged::Stays;
    };
    if is_folder(&entry.path) {
        // `link(2)` cannot move a folder, and a folder is nobody's message:
        // it stays for a person to look at (`aea doctor` names it).
        return Judged::Skip(format!(
            "{NOT_A_FILE} but a folder; gc moves files only: move it out of .aea/ by hand"
        ));
    }
    let processed = match mailbox.records().processed(&entry) {
        Ok(processed) => processed,
        Err(e) => return Judged::Skip(crate::error::one_line(&e)),
    };
    if let Processed::Done(marker) | Processed::Marked(marker) = processed {
        // An empty marker from an older tool has no time: use the file's.
        return archive_if_before(marker.as_ref(), &entry.path, cutoff);
    }
    match entry.message {
        Ok(m) if m.is_expired(now) => Judged::Move(
            Move::Expire,
            Some("expired before it was processed".to_string()),
        ),
        Ok(_) => Judged::Stays,
        Err(reason) => Judged::Move(Move::Quarantine, Some(reason)),
    }
}

/// What gc does with processed mail `name` in the private store: archive
/// it once it was processed before `cutoff`.
fn judge_stored(mailbox: &Mailbox, name: &str, cutoff: DateTime<Utc>) -> Judged {
    let Some(store) = mailbox.inbox().processed_store() else {
        return Judged::Stays;
    };
    archive_if_before(
        mailbox.records().record(name).as_ref(),
        &store.join(name),
        cutoff,
    )
}

/// Archived if processed before `cutoff`: by its record, else (an empty
/// marker from an older tool, a record lost to a kill) by the file's time.
fn archive_if_before(marker: Option<&Marker>, file: &Path, cutoff: DateTime<Utc>) -> Judged {
    let when = marker
        .and_then(|m| parse_time(&m.processed_at))
        .or_else(|| {
            let modified = std::fs::symlink_metadata(file).ok()?.modified().ok()?;
            Some(DateTime::<Utc>::from(modified))
        });
    match when {
        None => Judged::Stays,
        Some(t) if t >= cutoff => Judged::Recent,
        Some(_) => Judged::Move(Move::Archive, None),
    }
}

fn is_folder(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}
