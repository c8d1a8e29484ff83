//! `aea review` (SPEC §6): walks a person through the messages waiting for
//! approval on a terminal — show each, then approve, reject or skip. An
//! approval asks for a number shown on the terminal to be typed back.

use std::io::{self, BufRead, IsTerminal};

use super::context::Context;
use crate::approval::{self, Verdict};
use crate::cli::ReviewArgs;
use crate::error::{Error, ExitCode, Result};
use crate::policy::Action;

pub fn run(args: &ReviewArgs, ctx: &Context) -> Result<ExitCode> {
    // Approval is a person's act: never take answers from a pipe or a script.
    if !io::stdin().is_terminal() || !ctx.printer.stdout_is_terminal() {
        return Err(Error::NeedsTerminal);
    }
    // With --all, every repository `pending --all` lists, one after another.
    let repositories: Vec<(Option<String>, Context)> = if args.all {
        ctx.own_repositories()?
            .into_iter()
            .map(|(agent, path)| (Some(agent), ctx.for_repo(path)))
            .collect()
    } else {
        vec![(None, ctx.again())]
    };
    let stdin = io::stdin();
    let mut lines = stdin.lock().lines();
    let mut ask = |prompt: &str| -> Option<String> {
        ctx.printer.raw(prompt);
        lines.next()?.ok().map(|l| l.trim().to_string())
    };
    let mut tally = Tally::default();
    for (agent, here) in &repositories {
        if let Some(agent) = agent {
            ctx.printer.raw(&format!(
                "\n== {} ({})\n",
                crate::printer::untrusted_short(agent, 80),
                crate::printer::untrusted_short(
                    &here.repo.as_deref().unwrap_or(&here.cwd).to_string_lossy(),
                    200
                )
            ));
        }
        if !review_repository(here, !args.all, &args.signing, &mut ask, &mut tally)? {
            break;
        }
    }
    if tally.total == 0 {
        ctx.printer.line("nothing waits for approval");
        return Ok(ExitCode::Success);
    }
    ctx.printer.line("");
    ctx.printer.line(format_args!(
        "reviewed: {} approved, {} rejected, {} skipped, {} left",
        tally.approved,
        tally.rejected,
        tally.skipped,
        tally.total - tally.approved - tally.rejected - tally.skipped
    ));
    Ok(ExitCode::Success)
}

/// What a review decided, over every repository it went through.
#[derive(Default)]
struct Tally {
    total: usize,
    approved: usize,
    rejected: usize,
    skipped: usize,
}

/// Walks the person through what waits in `ctx`'s repository; `false` when
/// they quit (or the input ended), so no other repository follows.
fn review_repository(
    ctx: &Context,
    alone: bool,
    signing: &crate::cli::SigningArgs,
    ask: &mut impl FnMut(&str) -> Option<String>,
    tally: &mut Tally,
) -> Result<bool> {
    let mailbox = match ctx.mailbox() {
        Ok(mailbox) => mailbox,
        // With --all, one repository that cannot be read is said and the
        // others still reviewed; alone, it is the command's error.
        Err(e) if !alone => {
            ctx.printer.warn(format_args!("left out: {e}"));
            return Ok(true);
        }
        Err(e) => return Err(e),
    };
    let judge = ctx.judge(&mailbox);
    let waiting: Vec<_> = mailbox
        .inbox()
        .unprocessed()?
        .into_iter()
        .filter_map(|e| {
            let message = e.message.clone().ok()?;
            let decision = judge.decide(&message);
            (decision.action == Action::RequireApproval
                && mailbox.approvals().approval(&e, true).waits())
            .then_some((e, message))
        })
        .collect();
    let total = waiting.len();
    tally.total += total;
    for (n, (entry, message)) in waiting.iter().enumerate() {
        ctx.printer.raw(&format!("\n[{} of {total}]\n", n + 1));
        let held = super::frame::hold(&mailbox, entry, ctx);
        ctx.printer
            .raw(&super::frame::render(&mailbox, &judge, entry, message, ctx));
        loop {
            let Some(answer) = ask("[a]pprove, [r]eject, [s]kip, [q]uit? ") else {
                return Ok(false);
            };
            let (verdict, text) = match answer.as_str() {
                "a" | "approve" => {
                    let code = confirmation_code()?;
                    ctx.printer
                        .raw(&format!("to approve, type this number back: {code}\n"));
                    let Some(typed) = ask("number: ") else {
                        return Ok(false);
                    };
                    if typed != code {
                        ctx.printer
                            .line("that is not the number shown; not approved, skipped");
                        tally.skipped += 1;
                        break;
                    }
                    let note = ask("note (optional): ").unwrap_or_default();
                    (Verdict::Approve, (!note.is_empty()).then_some(note))
                }
                "r" | "reject" => {
                    let reason = loop {
                        match ask("reason (required): ") {
                            None => return Ok(false),
                            Some(r) if r.is_empty() => {}
                            Some(r) => break r,
                        }
                    };
                    (Verdict::Reject, Some(reason))
                }
                "s" | "skip" | "" => {
                    tally.skipped += 1;
                    break;
                }
                "q" | "quit" => return Ok(false),
                _ => continue,
            };
            let by = crate::repo::identity(mailbox.repo());
            let sign = ctx.sign_with(signing);
            let saved = match approval::record(
                &mailbox, &judge, &held, verdict, text, by, &ctx.rt, &sign,
            ) {
                Ok((saved, _)) => saved,
                // A signature that was not made or is not an approver's:
                // said, nothing recorded, and the walk goes on.
                Err(e @ crate::error::Error::DecisionRefused { .. }) => {
                    ctx.printer.warn(format_args!(
                        "{e}; skipped{}",
                        crate::hints::hint(&e).map_or(String::new(), |h| format!(" ({h})"))
                    ));
                    tally.skipped += 1;
                    break;
                }
                Err(e) => return Err(e),
            };
            ctx.printer.line(format_args!(
                "{} {}",
                saved.decision,
                crate::shortref::of(&held.ref_key())
            ));
            match verdict {
                Verdict::Approve => tally.approved += 1,
                Verdict::Reject => tally.rejected += 1,
            }
            break;
        }
    }
    Ok(true)
}

/// A fresh six-digit number a person reads off the terminal and types back
/// before an approval counts. Input written blind into the terminal (`printf
/// 'a\n' | script -qc "aea review"`) cannot know it; a wrong answer skips the
/// message, so blind input gets one guess in a million per message. It comes
/// from the OS and never from `AEA_TEST_SEED`: a number the caller can fix
/// in advance would protect nothing.
fn confirmation_code() -> Result<String> {
    let mut bytes = [0u8; 4];
    getrandom::fill(&mut bytes).map_err(|e| {
        Error::io(
            "read randomness for",
            "the confirmation number",
            io::Error::other(e.to_string()),
        )
    })?;
    Ok(format!("{:06}", u32::from_le_bytes(bytes) % 1_000_000))
}
