//! `aea pending` (SPEC §6): the messages that wait for a person.

use serde::Serialize;

use super::Context;
use super::listing::{Item, build_report, plural, print_item};
use crate::error::{ExitCode, Result};

/// `aea pending --json`: the items of `aea check` that wait for a person.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct PendingOutput<'a> {
    pub pending: Vec<&'a Item>,
}

pub fn run(ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let judge = ctx.judge(&mailbox);
    let entries = mailbox.unprocessed()?;
    let report = build_report(&mailbox, &entries, &judge, ctx);
    let pending: Vec<_> = report
        .messages
        .iter()
        .filter(|m| m.approval.waits() && !m.decision.action.eq(&crate::policy::Action::Reject))
        .collect();
    if ctx.printer.json() {
        ctx.printer.value(&PendingOutput { pending });
        return Ok(ExitCode::Success);
    }
    if pending.is_empty() {
        ctx.printer.line("nothing waits for approval");
        return Ok(ExitCode::Success);
    }
    ctx.printer.line(format_args!(
        "{} message{} waiting for a person's approval:",
        pending.len(),
        plural(pending.len())
    ));
    for (n, m) in pending.iter().enumerate() {
        print_item(n + 1, m, ctx);
    }
    ctx.printer
        .line("decide with `aea approve <ref> [--note ...]` or `aea reject <ref> --reason ...`, or walk through them with `aea review`");
    Ok(ExitCode::Success)
}
