//! Policy replay: every message this repository still holds for its agent
//! (waiting in the inbox, processed, archived) decided by two judges, and
//! the ones whose decision differs. Each decision is the judge's own
//! ([`Judge::decide`]: rules, trust, sender verification, hard stops), the
//! one `check` and `policy explain` make, so a replay says exactly what
//! `check` would say under either policy and keeps no logic of its own.

use std::collections::HashSet;

use chrono::{DateTime, Utc};

use crate::error::Result;
use crate::judge::Judge;
use crate::layout::Private;
use crate::mailbox::{Entry, Mailbox};
use crate::policy::Decision;
use crate::words::word_enum;

word_enum! {
    /// Where a replayed message is held.
    pub enum Place {
        /// In the inbox, not processed yet.
        Waiting = "waiting",
        /// Processed (the private `processed/`, or marked by another tool).
        Processed = "processed",
        /// Moved out of the way by `gc` (the private `archive/`).
        Archived = "archived",
    }
}

/// One message whose decision differs between the two judges.
pub struct Change {
    /// The message file; its message is valid.
    pub entry: Entry,
    /// Its short reference, unique among every message replayed.
    pub short_ref: String,
    pub place: Place,
    pub before: Decision,
    pub after: Decision,
}

/// What a replay found.
pub struct Replay {
    /// How many valid messages were decided (those `since` let through).
    pub decided: usize,
    /// The ones whose action or deciding rule differs, oldest place first
    /// (waiting, processed, archived), by file name within each.
    pub changes: Vec<Change>,
}

/// Decides every valid message `mailbox` holds for its agent, and newer
/// than `since` when given, with `before` and `after`. A message whose
/// timestamp does not read as a time is kept: it cannot be shown older.
/// Files that are not valid messages have no decision and are left out.
pub fn replay(
    mailbox: &Mailbox,
    before: &Judge,
    after: &Judge,
    since: Option<DateTime<Utc>>,
) -> Result<Replay> {
    let inbox = mailbox.inbox();
    let held = inbox
        .unprocessed()?
        .into_iter()
        .map(|e| (e, Place::Waiting))
        .chain(
            inbox
                .processed_entries()?
                .into_iter()
                .map(|(e, _)| (e, Place::Processed)),
        )
        .chain(
            inbox
                .read_all_in(Private::Archive)?
                .into_iter()
                .map(|e| (e, Place::Archived)),
        );
    let mut seen = HashSet::new();
    let held: Vec<(Entry, Place)> = held
        .filter(|(entry, _)| {
            entry.valid().is_some_and(|m| {
                let recent = since.is_none_or(|since| {
                    crate::duration::parse_time(&m.timestamp).is_none_or(|t| t > since)
                });
                recent && seen.insert(m.message_id.clone())
            })
        })
        .collect();
    let refs =
        crate::shortref::for_messages(&crate::mailbox::keys_and_names(held.iter().map(|(e, _)| e)));
    let decided = held.len();
    let changes = held
        .into_iter()
        .zip(refs)
        .filter_map(|((entry, place), short_ref)| {
            let message = entry.valid()?;
            let (was, will) = (before.decide(message), after.decide(message));
            (was.action != will.action || was.rule != will.rule).then(|| Change {
                entry,
                short_ref,
                place,
                before: was,
                after: will,
            })
        })
        .collect();
    Ok(Replay { decided, changes })
}
