//! `aea policy show|explain|replay` (SPEC §6): the effective policy, how
//! it decided one message, and which held messages a proposed policy would
//! decide otherwise.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::context::Context;
use crate::cli::{PolicyCommand, ReplayArgs};
use crate::error::{ConfigProblem, Error, ExitCode, Result};
use crate::judge::Judge;
use crate::layout::Shared;
use crate::mailbox::{Held, Mailbox};
use crate::message::{MessageType, Priority};
use crate::policy::{Checked, Decision, Step};
use crate::printer::untrusted_short;
use crate::replay::Place;

pub(crate) fn run(command: &PolicyCommand, ctx: &Context) -> Result<ExitCode> {
    match command {
        PolicyCommand::Show => Ok(show(&ctx.judge(&ctx.mailbox()?), ctx)),
        PolicyCommand::Explain(args) => explain(&args.reference, &ctx.mailbox()?, ctx),
        PolicyCommand::Replay(args) => replay(args, &ctx.mailbox()?, ctx),
        // Needs no repository: it is what a broken config is compared with.
        PolicyCommand::Preset { name } => {
            ctx.printer
                .raw(&crate::templates::policy(*name, "<agent-id>"));
            Ok(ExitCode::Success)
        }
    }
}

fn explain(reference: &str, mailbox: &Mailbox, ctx: &Context) -> Result<ExitCode> {
    let judge = ctx.judge(mailbox);
    let entry = mailbox.inbox().find(reference, &[Held::Inbox])?.0;
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
            untrusted_short(&step.detail, 160)
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

/// `aea policy replay --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct ReplayOutput<'a> {
    /// The config decisions are replayed from: the file every command
    /// decides with, or with no `--config`, that file as `HEAD` commits it.
    pub current: String,
    /// The config they are replayed under.
    pub proposed: String,
    /// With `--since`: only messages whose timestamp is after this time.
    pub since: Option<String>,
    /// How many held messages were decided under both.
    pub decided: usize,
    /// Those whose action or deciding rule would change.
    pub changed: Vec<ReplayChange<'a>>,
}

/// One message of `aea policy replay --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct ReplayChange<'a> {
    /// aea's short reference, unique among the messages replayed.
    #[serde(rename = "ref")]
    pub short_ref: &'a str,
    pub file: &'a str,
    pub id: &'a str,
    pub held: Place,
    #[serde(rename = "type")]
    pub message_type: MessageType,
    pub priority: Priority,
    pub from: &'a str,
    pub subject: &'a str,
    pub timestamp: &'a str,
    pub before: &'a Decision,
    pub after: &'a Decision,
}

/// The two judges of a replay, each with the name of its config.
struct Compared {
    current: (Judge, String),
    proposed: (Judge, String),
}

fn replay(args: &ReplayArgs, mailbox: &Mailbox, ctx: &Context) -> Result<ExitCode> {
    let since = args
        .since
        .map(|d| d.shift(ctx.rt.now(), false, &d.to_string()))
        .transpose()
        .map_err(|e| e.of_flag("--since"))?;
    let Compared { current, proposed } = match &args.config {
        Some(file) => against_file(&ctx.cwd.join(file), mailbox, ctx)?,
        None => against_head(mailbox, ctx)?,
    };
    let found = crate::replay::replay(mailbox, &current.0, &proposed.0, since)?;
    if ctx.printer.json() {
        let changed = found
            .changes
            .iter()
            .filter_map(|c| {
                let m = c.entry.valid()?;
                Some(ReplayChange {
                    short_ref: &c.short_ref,
                    file: &c.entry.name,
                    id: &m.message_id,
                    held: c.place,
                    message_type: m.message_type,
                    priority: m.priority,
                    from: &m.from.agent_id,
                    subject: &m.message.subject,
                    timestamp: &m.timestamp,
                    before: &c.before,
                    after: &c.after,
                })
            })
            .collect();
        ctx.printer.value(&ReplayOutput {
            current: current.1,
            proposed: proposed.1,
            since: since.map(crate::duration::format_time),
            decided: found.decided,
            changed,
        });
        return Ok(ExitCode::Success);
    }
    let p = &ctx.printer;
    for c in &found.changes {
        let Some(m) = c.entry.valid() else { continue };
        p.line(format_args!(
            "{:<10} {:<9} {:<8} {:<6} from {}  {}",
            c.short_ref,
            c.place,
            m.message_type,
            m.priority,
            untrusted_short(&m.from.agent_id, 40),
            untrusted_short(&m.message.subject, 60)
        ));
        p.line(format_args!(
            "  {} by {} -> {} by {}",
            c.before.action,
            untrusted_short(&c.before.rule, 80),
            c.after.action,
            untrusted_short(&c.after.rule, 80)
        ));
    }
    p.line(format_args!(
        "{} of {} held messages would be decided otherwise (current: {}; proposed: {})",
        found.changes.len(),
        found.decided,
        untrusted_short(&current.1, 120),
        untrusted_short(&proposed.1, 120)
    ));
    Ok(ExitCode::Success)
}

/// The config every command decides with, against the config in `file`,
/// which must read and compile as `aea validate` requires.
fn against_file(file: &Path, mailbox: &Mailbox, ctx: &Context) -> Result<Compared> {
    let text = std::fs::read_to_string(file).map_err(|e| Error::io("read", file, e))?;
    let checked = Checked::parse(&text, file)?;
    Ok(Compared {
        current: (
            ctx.judge(mailbox),
            mailbox
                .layout()
                .shared(Shared::Config)
                .display()
                .to_string(),
        ),
        proposed: (
            Judge::from_checked(checked, ctx.keyring(), ctx.warnings()),
            file.display().to_string(),
        ),
    })
}

/// The config as `HEAD` commits it against the work tree's: what an edit
/// not yet committed changes. aea reads the work tree's file on every
/// command, so the edit already decides in this work tree, while every
/// clone, and this one before the edit, decides with the committed one.
fn against_head(mailbox: &Mailbox, ctx: &Context) -> Result<Compared> {
    let path = mailbox.layout().shared(Shared::Config);
    let name = Shared::Config.name();
    let head_name = PathBuf::from(format!(
        "HEAD:{}",
        mailbox
            .dir()
            .parent()
            .and_then(|top| path.strip_prefix(top).ok())
            .unwrap_or(&path)
            .display()
    ));
    let committed = crate::repo::committed_under(mailbox.dir(), name)?.ok_or_else(|| {
        Error::usage(
            format!("HEAD commits no {name} to compare the work tree's with"),
            "name the proposed config with `aea policy replay --config FILE`",
        )
    })?;
    let committed = String::from_utf8(committed).map_err(|_| Error::ConfigInvalid {
        path: head_name.clone(),
        problem: ConfigProblem::Yaml {
            line: None,
            column: None,
            message: "the file is not UTF-8".into(),
        },
    })?;
    let worktree = Judge::load_checked(mailbox, ctx.keyring(), ctx.warnings())?;
    if std::fs::read_to_string(&path).is_ok_and(|text| text == committed) {
        return Err(Error::usage(
            format!("the work tree's {name} is the one HEAD commits: nothing to replay"),
            "edit it first, or name the proposed config with `aea policy replay --config FILE`",
        ));
    }
    Ok(Compared {
        current: (
            Judge::from_checked(
                Checked::parse(&committed, &head_name)?,
                ctx.keyring(),
                ctx.warnings(),
            ),
            head_name.display().to_string(),
        ),
        proposed: (worktree, path.display().to_string()),
    })
}
