//! `aea check` (SPEC §5.1): unprocessed messages in processing order with
//! the policy's decision for each, invalid files with the reason, and the
//! `--hook` output for agent harnesses (counts and aea's own short
//! references, never anything a sender wrote).

use std::io::{IsTerminal, Read};

use super::context::Context;
use super::listing::{
    Item, Replaced, Report, build_report, lost_line, plural, print_item, print_unapproved,
    unprocessed_page, unprocessed_report, unread,
};
use crate::cli::CheckArgs;
use crate::error::{ExitCode, Result};
use crate::harness::Harness;
use crate::judge::Judge;
use crate::mailbox::{Entry, Mailbox};
use crate::printer::untrusted_short;
use crate::reminder::{self, HookInput};

pub(crate) fn run(args: &CheckArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = match ctx.mailbox() {
        Ok(mailbox) => mailbox,
        Err(e) => {
            // A pull that put a file or a symlink where `.aea/` was made
            // git delete the mail waiting there: say so, as well as why
            // this inbox cannot be read.
            if let Some(replaced) = Replaced::of(ctx).filter(|r| !r.lost.is_empty()) {
                ctx.printer.warn(lost_line(&replaced.lost, &replaced.why()));
            }
            return Err(e);
        }
    };
    // A hook reads at most so many files: a flood must not hold a prompt up.
    let mailbox = if args.hook.is_some() {
        mailbox.capped(crate::mailbox::HOOK_READ_CAP)
    } else {
        mailbox
    };
    let judge = |warn| Judge::load(&mailbox, ctx.keyring(), warn);
    if let Some(harness) = args.hook {
        // A hook prints nothing but counts and references: no warnings.
        let mut report = unprocessed_report(&mailbox, ctx, true, judge)?;
        // Only when a wake-up waits is the inbox read again and a folder
        // looked at: a hook must not hold a prompt up.
        if report.messages.iter().any(looks_like_wake_up)
            && ctx.retire_ended_collabs(&mailbox, None, true) > 0
        {
            report = unprocessed_report(&mailbox, ctx, true, judge)?;
        }
        return Ok(hook(
            &mailbox,
            &unread(&report),
            harness,
            args.event.as_deref(),
            ctx,
        ));
    }
    let limit = (!args.all).then(|| args.limit.map_or(PAGE, |n| n as usize));
    let unprocessed = || match limit {
        Some(limit) => unprocessed_page(&mailbox, ctx, limit, judge),
        None => unprocessed_report(&mailbox, ctx, false, judge),
    };
    let mut report = if args.deferred || args.processed {
        report_of(&mailbox, &ctx.judge(&mailbox), args, ctx)?
    } else {
        let report = unprocessed()?;
        // A collaboration that has ended leaves no "your turn" behind. The
        // inbox is read again only when a wake-up may wait among what is
        // shown: one past the page is retired once it comes into view.
        if report.messages.iter().any(looks_like_wake_up)
            && ctx.retire_ended_collabs(&mailbox, None, false) > 0
        {
            unprocessed()?
        } else {
            report
        }
    };
    let waiting = report.unprocessed + report.invalid.len() + report.more_invalid;
    if let Some(limit) = limit {
        report.page(limit);
    }
    if ctx.printer.json() {
        ctx.printer.value(&report);
    } else {
        print_human(&report, ctx);
    }
    Ok(if args.exit_code && waiting > 0 {
        ExitCode::Attention
    } else {
        ExitCode::Success
    })
}

/// Whether `item` may be a collaboration's wake-up: worth a closer look
/// ([`crate::collab_wake::retire_ended`] decides).
fn looks_like_wake_up(item: &Item) -> bool {
    item.message_type == crate::message::MessageType::Request
        && item.subject.starts_with(crate::collab_wake::SUBJECT_HEAD)
}

/// How many messages `check` lists unless told otherwise: what an agent
/// takes in at once. The rest are counted, so a flood or a week away
/// costs a page, not the whole inbox, in what is printed.
const PAGE: usize = 20;

/// The report `args` ask for besides the unprocessed mail: only the
/// deferred, or only the processed.
fn report_of(mailbox: &Mailbox, judge: &Judge, args: &CheckArgs, ctx: &Context) -> Result<Report> {
    // The counts are always of the unprocessed mail.
    let mut report = build_report(mailbox, &mailbox.inbox().unprocessed()?, judge, ctx);
    if args.deferred {
        report.messages.retain(|m| m.deferred.is_some());
        report.invalid.clear();
    }
    if args.processed {
        report.messages = processed_items(mailbox, judge, ctx)?;
        report.invalid.clear();
    }
    Ok(report)
}

/// The processed messages as report items, each with its marker.
fn processed_items(mailbox: &Mailbox, judge: &Judge, ctx: &Context) -> Result<Vec<Item>> {
    let (entries, markers): (Vec<Entry>, Vec<_>) =
        mailbox.inbox().processed_entries()?.into_iter().unzip();
    let mut done = build_report(mailbox, &entries, judge, ctx).messages;
    for item in &mut done {
        if let Some(i) = entries.iter().position(|e| e.name == item.file) {
            item.processed.clone_from(&markers[i]);
        }
    }
    Ok(done)
}

fn print_human(report: &Report, ctx: &Context) {
    let me = report.agent_id.as_deref().unwrap_or("this repository");
    let p = &ctx.printer;
    if report.unprocessed == 0 {
        p.summary(format_args!("{me}: no unprocessed messages"));
    } else {
        let mut notes = Vec::new();
        if report.unjudged > 0 {
            // Only the page was judged: say what is known of it.
            notes.push(format!(
                "{} of the first {} waiting for approval; `aea pending` lists all",
                report.needs_approval,
                report.messages.len()
            ));
        } else if report.needs_approval > 0 {
            notes.push(format!("{} waiting for approval", report.needs_approval));
        }
        if report.deferred > 0 {
            notes.push(format!("{} deferred, listed last", report.deferred));
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join(", "))
        };
        p.summary(format_args!(
            "{me}: {} unprocessed message{}{notes}",
            report.unprocessed,
            plural(report.unprocessed)
        ));
    }
    for (n, m) in report.messages.iter().enumerate() {
        print_item(n + 1, m, ctx);
    }
    if report.more > 0 {
        p.line(format_args!(
            "     ... and {} more (`aea check --limit N` or `--all` lists them)",
            report.more
        ));
    }
    if !report.invalid.is_empty() {
        let total = report.invalid.len() + report.more_invalid;
        p.line(format_args!(
            "{total} invalid file{} (never acted on; `aea validate` explains):",
            plural(total)
        ));
        for i in &report.invalid {
            p.line(format_args!(
                "  {}  {}: {}",
                i.short_ref,
                untrusted_short(&i.file, 120),
                untrusted_short(&i.reason, 160)
            ));
        }
        if report.more_invalid > 0 {
            p.line(format_args!("  ... and {} more", report.more_invalid));
        }
    }
    print_unapproved(&report.processed_without_approval, ctx);
    if !report.messages.is_empty() {
        p.line("read one with `aea show <ref>`; mark it done with `aea process <ref>`");
    }
}

/// `--hook`: what a harness shows the model ([`reminder`]): counts and
/// aea's own short references, never a message id or file name, which the
/// sender chose and could fill with instructions.
fn hook(
    mailbox: &Mailbox,
    unread: &[reminder::Unread],
    harness: Harness,
    event: Option<&str>,
    ctx: &Context,
) -> ExitCode {
    crate::harness::hook_runs::record(
        mailbox,
        harness,
        ctx.exe.as_deref(),
        &ctx.aea_candidates,
        ctx.rt.now(),
    );
    let mut input = hook_input();
    if let Some(event) = event {
        input.event = Some(event.to_string());
    }
    match reminder::remind(mailbox, unread, harness, &input) {
        Some(reminder::Output::Json(line)) => ctx.printer.raw(&format!("{line}\n")),
        Some(reminder::Output::Text(text)) => ctx.printer.raw(&format!("{text}\n")),
        None => {}
    }
    ExitCode::Success
}

/// The harness's hook input (JSON on stdin), when there is one.
fn hook_input() -> HookInput {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return HookInput::default();
    }
    // A harness writes its JSON and closes stdin; one that keeps stdin open
    // must not hang the hook: read on a thread, wait a moment,
    // and go on without the input if nothing complete arrived. The thread
    // ends with the process.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut input = Vec::new();
        if std::io::stdin()
            .take(1024 * 1024)
            .read_to_end(&mut input)
            .is_ok()
        {
            let _ = tx.send(input);
        }
    });
    rx.recv_timeout(STDIN_WAIT)
        .map(|input| HookInput::parse(&input))
        .unwrap_or_default()
}

/// How long `check --hook` waits for a harness's hook input on stdin.
const STDIN_WAIT: std::time::Duration = std::time::Duration::from_millis(500);
