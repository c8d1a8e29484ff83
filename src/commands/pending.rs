//! `aea pending` (SPEC §6): the messages that wait for a person.

use std::path::PathBuf;

use serde::Serialize;

use super::context::Context;
use super::listing::{Item, Unapproved, build_report, plural, print_item, print_unapproved};
use crate::cli::PendingArgs;
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

/// `aea pending --all --json`: what waits in each repository.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct AllOutput {
    pub repositories: Vec<RepositoryPending>,
}

/// The mail waiting for a person in one repository, oldest first.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct RepositoryPending {
    pub agent: String,
    pub repository: PathBuf,
    pub pending: Vec<Item>,
}

pub(crate) fn run(args: &PendingArgs, ctx: &Context) -> Result<ExitCode> {
    if args.all {
        return run_all(ctx);
    }
    run_here(ctx)
}

fn run_all(ctx: &Context) -> Result<ExitCode> {
    let mut repositories = Vec::new();
    for (agent, path) in ctx.own_repositories()? {
        let here = ctx.for_repo(path.clone());
        // One repository that cannot be read (a damaged inbox, a state
        // folder swapped for a file) is said, and the others still listed.
        let mailbox = match here.mailbox() {
            Ok(mailbox) => mailbox,
            Err(e) => {
                ctx.printer.warn(format_args!(
                    "{} ({}) left out: {e}",
                    crate::printer::untrusted_short(&agent, 80),
                    crate::printer::untrusted_short(&path.to_string_lossy(), 200)
                ));
                continue;
            }
        };
        let judge = here.judge(&mailbox);
        let entries = mailbox.inbox().unprocessed()?;
        let report = build_report(&mailbox, &entries, &judge, &here);
        let mut pending: Vec<Item> = report
            .messages
            .into_iter()
            .filter(|m| m.approval.waits() && !m.decision.action.eq(&crate::policy::Action::Reject))
            .collect();
        pending.sort_by(|a, b| a.timestamp.cmp(&b.timestamp));
        repositories.push(RepositoryPending {
            agent,
            repository: path,
            pending,
        });
    }
    if ctx.printer.json() {
        ctx.printer.value(&AllOutput { repositories });
        return Ok(ExitCode::Success);
    }
    let waiting: usize = repositories.iter().map(|r| r.pending.len()).sum();
    if waiting == 0 {
        ctx.printer.summary(format_args!(
            "nothing waits for approval in {} repositor{}",
            repositories.len(),
            if repositories.len() == 1 { "y" } else { "ies" }
        ));
        return Ok(ExitCode::Success);
    }
    ctx.printer.summary(format_args!(
        "{waiting} message{} waiting for a person's approval:",
        plural(waiting)
    ));
    for repository in repositories.iter().filter(|r| !r.pending.is_empty()) {
        ctx.printer.line(format_args!(
            "{} ({})",
            crate::printer::untrusted_short(&repository.agent, 80),
            crate::printer::untrusted_short(&repository.repository.to_string_lossy(), 200)
        ));
        for (n, m) in repository.pending.iter().enumerate() {
            print_item(n + 1, m, ctx);
        }
    }
    ctx.printer.line(
        "decide in each repository with `aea approve <ref>` or `aea reject <ref> --reason ...` (`aea --repo PATH …` from here)",
    );
    Ok(ExitCode::Success)
}

fn run_here(ctx: &Context) -> Result<ExitCode> {
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
        ctx.printer.summary("nothing waits for approval");
        print_unapproved(&report.processed_without_approval, ctx);
        return Ok(ExitCode::Success);
    }
    ctx.printer.summary(format_args!(
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
