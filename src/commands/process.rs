//! `aea process` (SPEC §5.4): find the message, mark it processed
//! ([`crate::processing`]), complete its other side when a bridge brought
//! it, and say so.

use std::path::Path;

use serde::Serialize;

use super::context::Context;
use crate::cli::ProcessArgs;
use crate::error::{ExitCode, Result};
use crate::mailbox::{Held, Outcome};

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
    let finished = crate::processing::process(
        &mailbox,
        &judge,
        &entry,
        args.outcome,
        args.note.as_deref(),
        &ctx.rt,
    )?;
    let deferring = args.outcome == Outcome::Deferred;
    let id = finished.message_id;
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
            marker: &finished.marker,
            outcome: args.outcome,
            bridge,
        });
    } else {
        if deferring {
            // Not "deferred m… (deferred)": deferring is the whole news,
            // and what follows it.
            ctx.printer.line(format_args!(
                "deferred {}: it stays unprocessed, listed after new mail; `aea process {0}` finishes it",
                crate::shortref::of(&entry.ref_key()),
            ));
        } else {
            ctx.printer.line(format_args!(
                "processed {} ({})",
                crate::shortref::of(&entry.ref_key()),
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
