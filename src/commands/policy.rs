//! `aea policy show|explain` (SPEC §6): the effective policy, and how it
//! decided one message.

use serde::Serialize;

use super::context::Context;
use crate::cli::PolicyCommand;
use crate::error::{ExitCode, Result};
use crate::judge::Judge;
use crate::mailbox::Held;
use crate::policy::{Decision, Step};

pub(crate) fn run(command: &PolicyCommand, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let judge = ctx.judge(&mailbox);
    match command {
        PolicyCommand::Show => Ok(show(&judge, ctx)),
        PolicyCommand::Explain(args) => {
            let entry = mailbox.inbox().find(&args.reference, &[Held::Inbox])?.0;
            let message = entry.require_valid()?;
            let explanation = judge.explain(&message);
            if ctx.printer.json() {
                ctx.printer.value(&ExplainOutput {
                    file: &entry.name,
                    message_id: &message.message_id,
                    steps: &explanation.steps,
                    decision: &explanation.decision,
                });
                return Ok(ExitCode::Success);
            }
            let p = &ctx.printer;
            p.line(format_args!(
                "{} ({} {} from {})",
                message.message_id, message.message_type, message.priority, message.from.agent_id
            ));
            for step in &explanation.steps {
                p.line(format_args!(
                    "  {} {:<30} {}",
                    if step.matched { "*" } else { "-" },
                    step.rule,
                    crate::printer::untrusted_short(&step.detail, 160)
                ));
            }
            let d = &explanation.decision;
            p.line(format_args!(
                "decision: {} by {}; may do unasked: {}",
                d.action.as_str(),
                d.rule,
                if d.operations.is_empty() {
                    "nothing".to_string()
                } else {
                    d.operations.join(", ")
                }
            ));
            Ok(ExitCode::Success)
        }
    }
}

/// `aea policy explain --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct ExplainOutput<'a> {
    pub file: &'a str,
    pub message_id: &'a str,
    /// Every rule and check considered, in order.
    pub steps: &'a [Step],
    pub decision: &'a Decision,
}

fn show(judge: &Judge, ctx: &Context) -> ExitCode {
    let summary = judge.policy.summary();
    if ctx.printer.json() {
        ctx.printer.value(&summary);
        return ExitCode::Success;
    }
    let p = &ctx.printer;
    if summary.fallback {
        p.line("the config could not be read: every message needs approval");
    }
    p.line("decision by type and priority (before rules, trust and hard stops):");
    for row in &summary.table {
        p.line(format_args!(
            "  {:<9} {:<7} {:<17} {:<32} {}",
            row.message_type.as_str(),
            row.priority.as_str(),
            row.action.as_str(),
            row.rule,
            row.operations.join(", ")
        ));
    }
    p.line("rules (first match wins):");
    if summary.rules.is_empty() {
        p.line("  none");
    }
    for rule in &summary.rules {
        p.line(format_args!(
            "  {:<20} when {} -> {}{}",
            rule.id,
            rule.when,
            rule.action,
            rule.operations
                .as_ref()
                .map_or(String::new(), |ops| format!(" [{}]", ops.join(", ")))
        ));
    }
    p.line("trust:");
    p.line(format_args!(
        "  allow_senders: {}",
        summary
            .allow_senders
            .as_ref()
            .map_or("(any)".to_string(), |a| format!(
                "{} (verified senders only: a claimed id counts as unknown)",
                a.join(", ")
            ))
    ));
    p.line(format_args!(
        "  deny_senders: {}",
        if summary.deny_senders.is_empty() {
            "(none)".to_string()
        } else {
            summary.deny_senders.join(", ")
        }
    ));
    p.line(format_args!(
        "  unknown senders (not verified, not allowed): {}",
        summary.unknown_senders
    ));
    p.line(format_args!(
        "hard stops (force approval): {}",
        if summary.hard_stops.is_empty() {
            "(none)".to_string()
        } else {
            summary.hard_stops.join(" | ")
        }
    ));
    p.line(format_args!(
        "never unasked: {}",
        summary.approval_required_operations.join(", ")
    ));
    p.line(format_args!(
        "limits: {} bytes per message, {} recipients per broadcast",
        summary.max_message_bytes, summary.max_recipients
    ));
    ExitCode::Success
}
