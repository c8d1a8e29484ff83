//! `aea gc` (SPEC §2, §3.2): keeps the inbox small. Processed messages older
//! than `--older-than` and expired unprocessed ones move to `.archive/`,
//! invalid files to `.quarantine/` with the reason. Nothing is deleted.

use serde::Serialize;

use super::Context;
use crate::audit::{self, AuditEvent, Event};
use crate::cli::GcArgs;
use crate::error::{Error, ExitCode, Result};
use crate::mailbox::{ARCHIVE_DIR, Processed, QUARANTINE_DIR};
use crate::message::parse_time;

/// Where gc moves a file: `.archive/` (processed, or expired unprocessed)
/// or `.quarantine/` (invalid).
#[derive(Debug, Clone, Copy)]
enum Move {
    Archive,
    Expire,
    Quarantine,
}

impl Move {
    fn dir(self) -> &'static str {
        match self {
            Move::Archive | Move::Expire => ARCHIVE_DIR,
            Move::Quarantine => QUARANTINE_DIR,
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

#[derive(Debug, Default, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct Moves {
    archived: Vec<String>,
    expired: Vec<String>,
    quarantined: Vec<String>,
}

pub fn run(args: &GcArgs, ctx: &Context) -> Result<ExitCode> {
    let now = ctx.rt.now();
    let cutoff = args
        .older_than
        .shift(now, false, &args.older_than.to_string())
        .map_err(|source| Error::BadDuration {
            what: "--older-than",
            source,
        })?;
    let mailbox = ctx.mailbox()?;
    let mut moves = Moves::default();
    // Every state folder is checked first: a `.processed` or `.archive`
    // swapped for a symlink stops gc before it moves or unlinks anything.
    mailbox.check_state()?;
    let mut names = mailbox.message_names()?;
    names.sort();
    for name in names {
        let entry = mailbox.read(&name);
        let (kind, reason) = if let Processed::Done(marker) = mailbox.processed(&entry)? {
            // An empty marker from an older tool has no time: use the file's.
            let when = marker
                .and_then(|m| parse_time(&m.processed_at))
                .or_else(|| {
                    let modified = std::fs::symlink_metadata(
                        mailbox
                            .dir()
                            .join(crate::mailbox::PROCESSED_DIR)
                            .join(&name),
                    )
                    .ok()?
                    .modified()
                    .ok()?;
                    Some(chrono::DateTime::<chrono::Utc>::from(modified))
                });
            if when.is_none_or(|t| t >= cutoff) {
                continue;
            }
            (Move::Archive, None)
        } else {
            match entry.message {
                Ok(m) if m.is_expired(now) => (
                    Move::Expire,
                    Some("expired before it was processed".to_string()),
                ),
                Ok(_) => continue,
                Err(reason) => (Move::Quarantine, Some(reason)),
            }
        };
        if !args.dry_run {
            mailbox.move_out(&name, kind.dir(), reason.as_deref())?;
            let mut event = Event::new(&ctx.rt, kind.event()).with("file", name.as_str());
            if let Some(reason) = &reason {
                event = event.with("reason", reason.as_str());
            }
            audit::append(mailbox.dir(), &event)?;
        }
        match kind {
            Move::Archive => moves.archived.push(name),
            Move::Expire => moves.expired.push(name),
            Move::Quarantine => moves.quarantined.push(name),
        }
    }
    if ctx.printer.json() {
        ctx.printer.value(&moves);
    } else {
        let verb = if args.dry_run { "would move" } else { "moved" };
        ctx.printer.line(format_args!(
            "{verb}: {} processed to .archive/, {} expired to .archive/, {} invalid to .quarantine/",
            moves.archived.len(),
            moves.expired.len(),
            moves.quarantined.len()
        ));
    }
    Ok(ExitCode::Success)
}
