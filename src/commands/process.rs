//! `aea process` (SPEC §5.4): claim a message exclusively, move it out of
//! the inbox with the record of how it was processed (and the marker for
//! other readers), release the claim, log it.

use std::path::Path;

use serde::Serialize;

use super::context::Context;
use crate::audit::{AuditEvent, Event};
use crate::cli::ProcessArgs;
use crate::error::{Error, ExitCode, Result};
use crate::mailbox::Held;
use crate::mailbox::{Marker, Outcome, Processed};
use crate::message::format_time;

/// `aea process --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct ProcessOutput<'a> {
    pub file: &'a str,
    pub message_id: &'a str,
    /// aea's record of it, in the private state (its deferral when
    /// deferred); the AEA v1.0 marker for other readers is
    /// `.aea/.processed/<file>`.
    pub marker: &'a Path,
    pub outcome: Outcome,
    /// For a message `aea bridge` brought in from an OACP or Roo folder:
    /// what became of its file there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bridge: Option<crate::bridge::live::Completed>,
}

pub(crate) fn run(args: &ProcessArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let judge = ctx.judge(&mailbox);
    let entry = mailbox.inbox().find(&args.reference, &[Held::Inbox])?.0;
    // In a shared inbox what is recorded is what aea read, never what the
    // sender made of the file since.
    entry.require_custody("process")?;
    // A record for other bytes means the file was replaced after it was
    // processed: the new content is processed (and judged) afresh. A
    // marker another tool wrote hides mail from listings but proves
    // nothing: processing it here records it as aea's own.
    let replaced = match mailbox.records().processed(&entry)? {
        Processed::Done(_) => {
            // A process killed after its record but before releasing its
            // claim left the claim behind.
            mailbox
                .records()
                .drop_stale_claim(&entry.name, ctx.rt.now());
            return Err(Error::AlreadyProcessed { name: entry.name });
        }
        Processed::Replaced(_) => true,
        Processed::No | Processed::Marked(_) => false,
    };
    // Invalid files are never acted on, but may be marked ignored.
    let decision = entry.valid().map(|m| judge.decide(m));
    if args.outcome == Outcome::Done
        && let Some(refusal) = judge.why_not_done(&entry, decision.as_ref(), &mailbox)
    {
        return Err(refusal);
    }
    let claim = mailbox.records().claim(&entry.name, &ctx.rt)?;
    let id = entry
        .valid()
        .map_or_else(|| entry.name.clone(), |m| m.message_id.clone());
    if let Some(previous) = &claim.took_over_from {
        mailbox.log(
            &Event::new(&ctx.rt, AuditEvent::ClaimTakenOver)
                .with("message", id.as_str())
                .with("file", entry.name.as_str())
                .with("previous", previous.as_str()),
        )?;
    }
    // Checked again under the claim: a process that finished just before we
    // claimed has written its marker by now.
    if let Processed::Done(_) = mailbox.records().processed(&entry)? {
        return Err(Error::AlreadyProcessed { name: entry.name });
    }
    // The marker binds these bytes; in a shared inbox the sender can no
    // longer change them once the receiver owns the file.
    mailbox.records().adopt(&entry)?;
    if replaced && let Some(old) = mailbox.records().retire_record(&entry.name)? {
        mailbox.log(
            &Event::new(&ctx.rt, AuditEvent::MarkerReplaced)
                .with("file", entry.name.as_str())
                .with("kept_as", old.display().to_string()),
        )?;
    }
    let marker = Marker {
        processed_at: format_time(ctx.rt.now()),
        by: ctx.rt.user().to_string(),
        outcome: args.outcome.into(),
        note: args.note.clone(),
        message_id: entry.valid().map(|m| m.message_id.clone()),
        sha256: entry.sha256.clone(),
    };
    // Deferred mail stays unprocessed, listed after new mail, and is
    // finished later by another `process`.
    let deferring = args.outcome == Outcome::Deferred;
    let path = if deferring {
        mailbox.records().defer(&entry.name, &marker)?
    } else {
        let path = mailbox.records().finish(&entry, &marker)?;
        mailbox.records().undefer(&entry.name)?;
        path
    };
    let kind = if deferring {
        AuditEvent::Deferred
    } else {
        AuditEvent::Processed
    };
    let mut event = Event::new(&ctx.rt, kind)
        .with("message", id.as_str())
        .with("file", entry.name.as_str())
        .with("outcome", args.outcome.as_str());
    if let Some(d) = &decision {
        event = event
            .with("rule", d.rule.as_str())
            .with("action", d.action.as_str());
    }
    if let Some(note) = &args.note {
        event = event.with("note", note.as_str());
    }
    mailbox.log(&event)?;
    drop(claim);
    // Processed here: the other protocol's reader would now delete its
    // file. The message is processed either way; a failure is said.
    let bridge = match entry.valid() {
        Some(m) if !deferring => complete_bridged(&mailbox, &m.message_id, ctx),
        _ => None,
    };
    if ctx.printer.json() {
        ctx.printer.value(&ProcessOutput {
            file: &entry.name,
            message_id: &id,
            marker: &path,
            outcome: args.outcome,
            bridge,
        });
    } else {
        if deferring {
            // Not "deferred m… (deferred)": deferring is the whole news,
            // and what follows it.
            ctx.printer.line(format_args!(
                "deferred {}: it stays unprocessed, listed after new mail; `aea process {0}` finishes it",
                crate::shortref::of(entry.ref_key()),
            ));
        } else {
            ctx.printer.line(format_args!(
                "processed {} ({})",
                crate::shortref::of(entry.ref_key()),
                args.outcome
            ));
        }
        if let Some(done) = &bridge {
            super::transfers::print_completed(done, ctx);
        }
    }
    Ok(ExitCode::Success)
}

/// Completes the other side of a bridged message (see
/// [`crate::bridge::live::complete`]); `None` for any other message.
fn complete_bridged(
    mailbox: &crate::mailbox::Mailbox,
    id: &str,
    ctx: &Context,
) -> Option<crate::bridge::live::Completed> {
    // Most mail came by no bridge: one missing file says so, before the
    // config's trust is looked at.
    if !matches!(mailbox.sent().bridged(id), Ok(Some(_))) {
        return None;
    }
    let done = ctx
        .bridges(mailbox)
        .and_then(|bridges| crate::bridge::live::complete(mailbox, id, &bridges, &ctx.rt));
    match done {
        Ok(done) => done,
        Err(e) => {
            ctx.printer.warn(format_args!(
                "processed, but its file on the other side was not removed: {}",
                crate::error::one_line(&e)
            ));
            None
        }
    }
}
