//! `aea status` (SPEC §11): how far a message this repository sent got.

use serde::Serialize;

use super::context::Context;
use crate::cli::ShowArgs;
use crate::error::{Error, ExitCode, Result};
use crate::mailbox::Held;
use crate::tracking::{self, Leg};

/// `aea status --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct StatusOutput<'a> {
    pub message_id: &'a str,
    pub recipients: &'a [Leg],
}

pub(crate) fn run(args: &ShowArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let entry = mailbox
        .inbox()
        .find(&args.reference, &[Held::Sent])
        .map(|(entry, _)| entry)
        .map_err(|e| match e {
            Error::MessageNotFound { reference } => Error::SentNotFound {
                received: mailbox.inbox().find(&reference, &[Held::Inbox]).is_ok(),
                reference,
            },
            other => other,
        })?;
    let message = entry.require_valid()?;
    let id = message.message_id.clone();
    let legs = tracking::legs(&mailbox, &message);
    if ctx.printer.json() {
        ctx.printer.value(&StatusOutput {
            message_id: &id,
            recipients: &legs,
        });
        return Ok(ExitCode::Success);
    }
    ctx.printer.line(format_args!(
        "{}  id {id}",
        crate::shortref::of(&entry.ref_key())
    ));
    for leg in &legs {
        ctx.printer.line(format_args!(
            "  {:<16} {}{}",
            leg.to,
            leg.state.label(),
            leg.detail
                .as_ref()
                .map_or(String::new(), |d| format!(" ({d})"))
        ));
    }
    Ok(ExitCode::Success)
}
