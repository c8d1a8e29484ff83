//! `aea pending` (SPEC §6): the messages that wait for a person.

use serde::Serialize;

use super::context::Context;
use super::listing::{Item, Unapproved, build_report, plural, print_item, print_unapproved};
use crate::error::{ExitCode, Result};

/// `aea pending --json`: the items of `aea check` that wait for a person.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct PendingOutput<'a> {
    pub pending: Vec<&'a Item>,
    /// Gated mail another tool marked processed with no approval on record:
    /// nothing waits, but nobody approved it either.
    #[serde(default, skip_serializing_if = "<[Unapproved]>::is_empty")]
    pub processed_without_approval: &'a [Unapproved],
}

pub(crate) fn run(ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let judge = ctx.judge(&mailbox);
    let entries = mailbox.inbox().unprocessed()?;
    let report = build_report(&mailbox, &entries, &judge, ctx);
    let pending: Vec<_> = report
        .messages
        .iter()
        .filter(|m| m.approval.waits() && !m.decision.action.eq(&crate::policy::Action::Reject))
        .collect();
    if ctx.printer.json() {
        ctx.printer.value(&PendingOutput {
            pending,
            processed_without_approval: &report.processed_without_approval,
        });
        return Ok(ExitCode::Success);
    }
    if pending.is_empty() {
        ctx.printer.line("nothing waits for approval");
        print_unapproved(&report.processed_without_approval, ctx);
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
    print_unapproved(&report.processed_without_approval, ctx);
    ctx.printer
        .line("decide with `aea approve <ref> [--note ...]` or `aea reject <ref> --reason ...`, or walk through them with `aea review`");
    Ok(ExitCode::Success)
}
