//! `aea quarantine` (SPEC §3.2): moves a file out of the inbox into
//! `.aea/.quarantine/` with a `.reason` file. Nothing is deleted.

use std::path::Path;

use serde::Serialize;

use super::context::Context;
use crate::audit::{AuditEvent, Event};
use crate::cli::QuarantineArgs;
use crate::error::{Error, ExitCode, Result};
use crate::mailbox::Aside;
use crate::mailbox::Held;

/// `aea quarantine --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct QuarantineOutput<'a> {
    pub file: &'a str,
    pub moved_to: &'a Path,
}

pub(crate) fn run(args: &QuarantineArgs, ctx: &Context) -> Result<ExitCode> {
    if args.reason.trim().is_empty() {
        return Err(Error::usage(
            "--reason is empty",
            "say why, for whoever looks later",
        ));
    }
    let mailbox = ctx.mailbox()?;
    let entry = mailbox.inbox().find(&args.reference, &[Held::Inbox])?.0;
    // Gone since it was found: another process (gc) moved it first.
    let path = mailbox
        .records()
        .move_out(&entry.name, Aside::Quarantine, Some(&args.reason))?
        .ok_or_else(|| Error::MessageNotFound {
            reference: args.reference.clone(),
        })?;
    // Set aside by a person: a copy of it later is no new mail either.
    mailbox.inbox().note_left(&entry);
    let mut event = Event::new(&ctx.rt, AuditEvent::Quarantined)
        .with("file", entry.name.as_str())
        .with("reason", args.reason.as_str());
    if let Some(m) = entry.valid() {
        event = event.with("message", m.message_id.as_str());
    }
    mailbox.log(&event)?;
    if ctx.printer.json() {
        ctx.printer.value(&QuarantineOutput {
            file: &entry.name,
            moved_to: &path,
        });
    } else {
        ctx.printer
            .line(format_args!("moved {} to {}", entry.name, path.display()));
    }
    Ok(ExitCode::Success)
}
