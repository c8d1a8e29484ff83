//! `aea review` (SPEC §6): walks a person through the messages waiting for
//! approval on a terminal — show each, then approve, reject or skip. An
//! approval asks for a number shown on the terminal to be typed back.

use std::io::{self, BufRead, IsTerminal};

use super::context::Context;
use crate::approval::{self, Verdict};
use crate::error::{Error, ExitCode, Result};
use crate::policy::Action;

pub fn run(ctx: &Context) -> Result<ExitCode> {
    // Approval is a person's act: never take answers from a pipe or a script.
    if !io::stdin().is_terminal() || !ctx.printer.stdout_is_terminal() {
        return Err(Error::NeedsTerminal);
    }
    let mailbox = ctx.mailbox()?;
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
    if waiting.is_empty() {
        ctx.printer.line("nothing waits for approval");
        return Ok(ExitCode::Success);
    }
    let stdin = io::stdin();
    let mut lines = stdin.lock().lines();
    let mut ask = |prompt: &str| -> Option<String> {
        ctx.printer.raw(prompt);
        lines.next()?.ok().map(|l| l.trim().to_string())
    };
    let (mut approved, mut rejected, mut skipped) = (0, 0, 0);
    let total = waiting.len();
    'messages: for (n, (entry, message)) in waiting.iter().enumerate() {
        ctx.printer.raw(&format!("\n[{} of {total}]\n", n + 1));
        let held = super::frame::hold(&mailbox, entry, ctx);
        ctx.printer
            .raw(&super::frame::render(&mailbox, &judge, entry, message, ctx));
        loop {
            let Some(answer) = ask("[a]pprove, [r]eject, [s]kip, [q]uit? ") else {
                break 'messages;
            };
            let (verdict, text) = match answer.as_str() {
                "a" | "approve" => {
                    let code = confirmation_code()?;
                    ctx.printer
                        .raw(&format!("to approve, type this number back: {code}\n"));
                    let Some(typed) = ask("number: ") else {
                        break 'messages;
                    };
                    if typed != code {
                        ctx.printer
                            .line("that is not the number shown; not approved, skipped");
                        skipped += 1;
                        continue 'messages;
                    }
                    let note = ask("note (optional): ").unwrap_or_default();
                    (Verdict::Approve, (!note.is_empty()).then_some(note))
                }
                "r" | "reject" => {
                    let reason = loop {
                        match ask("reason (required): ") {
                            None => break 'messages,
                            Some(r) if r.is_empty() => {}
                            Some(r) => break r,
                        }
                    };
                    (Verdict::Reject, Some(reason))
                }
                "s" | "skip" | "" => {
                    skipped += 1;
                    continue 'messages;
                }
                "q" | "quit" => break 'messages,
                _ => continue,
            };
            let by = crate::repo::identity(mailbox.repo());
            let (saved, _) = approval::record(&mailbox, &judge, &held, verdict, text, by, &ctx.rt)?;
            ctx.printer
                .line(format_args!("{} {}", saved.decision, saved.message_id));
            match verdict {
                Verdict::Approve => approved += 1,
                Verdict::Reject => rejected += 1,
            }
            continue 'messages;
        }
    }
    ctx.printer.line("");
    ctx.printer.line(format_args!(
        "reviewed: {approved} approved, {rejected} rejected, {skipped} skipped, {} left",
        total - approved - rejected - skipped
    ));
    Ok(ExitCode::Success)
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
