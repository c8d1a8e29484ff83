//! Marking one message processed (SPEC §5.4): claim it exclusively, move it
//! out of the inbox with the record of how it was processed (and the marker
//! for other readers), release the claim, log it. `aea process` goes
//! through here, and so does aea's own clean-up of mail it knows to be
//! over (the wake-ups of a collaboration that has ended), so that every
//! processing is checked, recorded and logged the same way.

use std::path::PathBuf;

use crate::audit::{AuditEvent, Event};
use crate::error::{Error, Result};
use crate::judge::Judge;
use crate::mailbox::{Entry, Mailbox, Marker, Outcome, Processed};
use crate::message::format_time;
use crate::runtime::Runtime;

/// What [`process`] did.
pub struct Finished {
    /// aea's record of it, in the private state (its deferral when
    /// deferred).
    pub marker: PathBuf,
    /// The message id, or the file name of a file that is no message.
    pub message_id: String,
}

/// Marks `entry` processed with `outcome` and `note`, by `rt`'s user at
/// `rt`'s time. `done` is refused for what the judge says may not be done
/// ([`Judge::why_not_done`]: invalid, rejected, or waiting for a person).
pub fn process(
    mailbox: &Mailbox,
    judge: &Judge,
    entry: &Entry,
    outcome: Outcome,
    note: Option<&str>,
    rt: &Runtime,
) -> Result<Finished> {
    // In a shared inbox what is recorded is what aea read, never what the
    // sender made of the file since.
    entry.require_custody("process")?;
    // A record for other bytes means the file was replaced after it was
    // processed: the new content is processed (and judged) afresh. A
    // marker another tool wrote hides mail from listings but proves
    // nothing: processing it here records it as aea's own.
    let replaced = match mailbox.records().processed(entry)? {
        Processed::Done(_) => {
            // A process killed after its record but before releasing its
            // claim left the claim behind.
            mailbox.records().drop_stale_claim(&entry.name, rt.now());
            return Err(Error::AlreadyProcessed {
                name: entry.name.clone(),
            });
        }
        Processed::Replaced(_) => true,
        Processed::No | Processed::Marked(_) => false,
    };
    // Invalid files are never acted on, but may be marked ignored.
    let decision = entry.valid().map(|m| judge.decide(m));
    if outcome == Outcome::Done
        && let Some(refusal) = judge.why_not_done(entry, decision.as_ref(), mailbox)
    {
        return Err(refusal);
    }
    let claim = mailbox.records().claim(&entry.name, rt)?;
    let id = entry
        .valid()
        .map_or_else(|| entry.name.clone(), |m| m.message_id.clone());
    if let Some(previous) = &claim.took_over_from {
        mailbox.log(
            &Event::new(rt, AuditEvent::ClaimTakenOver)
                .with("message", id.as_str())
                .with("file", entry.name.as_str())
                .with("previous", previous.as_str()),
        )?;
    }
    // Checked again under the claim: a process that finished just before we
    // claimed has written its marker by now.
    if let Processed::Done(_) = mailbox.records().processed(entry)? {
        return Err(Error::AlreadyProcessed {
            name: entry.name.clone(),
        });
    }
    // The marker binds these bytes; in a shared inbox the sender can no
    // longer change them once the receiver owns the file.
    mailbox.records().adopt(entry)?;
    if replaced && let Some(old) = mailbox.records().retire_record(&entry.name)? {
        mailbox.log(
            &Event::new(rt, AuditEvent::MarkerReplaced)
                .with("file", entry.name.as_str())
                .with("kept_as", old.display().to_string()),
        )?;
    }
    let marker = Marker {
        processed_at: format_time(rt.now()),
        by: rt.user().to_string(),
        outcome: outcome.into(),
        note: note.map(str::to_string),
        message_id: entry.valid().map(|m| m.message_id.clone()),
        sha256: entry.sha256.clone(),
    };
    // Deferred mail stays unprocessed, listed after new mail, and is
    // finished later by another `process`.
    let deferring = outcome == Outcome::Deferred;
    let path = if deferring {
        mailbox.records().defer(&entry.name, &marker)?
    } else {
        let path = mailbox.records().finish(entry, &marker)?;
        mailbox.records().undefer(&entry.name)?;
        path
    };
    let kind = if deferring {
        AuditEvent::Deferred
    } else {
        AuditEvent::Processed
    };
    let mut event = Event::new(rt, kind)
        .with("message", id.as_str())
        .with("file", entry.name.as_str())
        .with("outcome", outcome.as_str());
    if let Some(d) = &decision {
        event = event
            .with("rule", d.rule.as_str())
            .with("action", d.action.as_str());
    }
    if let Some(note) = note {
        event = event.with("note", note);
    }
    mailbox.log(&event)?;
    drop(claim);
    Ok(Finished {
        marker: path,
        message_id: id,
    })
}
