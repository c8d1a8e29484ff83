//! `aea gc` (SPEC §2, §3.2): keeps the inbox small. The work is
//! [`crate::housekeeping`]'s; this turns the flags into a request and
//! prints the report.

use super::context::Context;
use crate::cli::GcArgs;
use crate::error::{ExitCode, Result};
use crate::housekeeping::{self, Request};
use crate::printer::untrusted_short;

pub(crate) fn run(args: &GcArgs, ctx: &Context) -> Result<ExitCode> {
    let now = ctx.rt.now();
    let cutoff = args
        .older_than
        .shift(now, false, &args.older_than.to_string())
        .map_err(|e| e.of_flag("--older-than"))?;
    let mailbox = ctx.mailbox()?;
    let request = if args.auto {
        let limit = mailbox.config()?.limits.auto_gc().ok_or_else(|| {
            crate::error::Error::usage(
                "limits.auto_gc_over is 0 in agent-config.yaml: automatic housekeeping is off",
                "archive by age with `aea gc --older-than 7d`, or set limits.auto_gc_over",
            )
        })?;
        Request {
            // Age alone moves nothing; the count does.
            cutoff: chrono::DateTime::<chrono::Utc>::MIN_UTC,
            keep_processed: Some(usize::try_from(limit / 2).unwrap_or(usize::MAX)),
            dry_run: args.dry_run,
            // Started by another command: never waits for a gc already running.
            lock_wait: std::time::Duration::ZERO,
        }
    } else {
        Request {
            cutoff,
            keep_processed: None,
            dry_run: args.dry_run,
            lock_wait: housekeeping::LOCK_WAIT,
        }
    };
    let report = housekeeping::collect(&mailbox, request, &ctx.rt)?;
    if ctx.printer.json() {
        ctx.printer.value(&report);
        return Ok(ExitCode::Success);
    }
    if report.busy {
        ctx.printer.line(format_args!(
            "skipped: another aea gc held the gc lock for over {}s and is cleaning this inbox",
            housekeeping::LOCK_WAIT.as_secs()
        ));
        return Ok(ExitCode::Success);
    }
    let verb = if args.dry_run { "would move" } else { "moved" };
    ctx.printer.line(format_args!(
        "{verb}: {} processed and {} expired to the archive, {} invalid to .aea/.quarantine/",
        report.archived.len(),
        report.expired.len(),
        report.quarantined.len()
    ));
    // A dry run is asked to show what it would do: every file, by name (a
    // name from the inbox is a sender's choice, so escaped).
    if args.dry_run {
        for (files, what) in [
            (&report.archived, "would archive (processed)"),
            (&report.expired, "would archive (expired)"),
            (&report.quarantined, "would quarantine (invalid)"),
        ] {
            for file in files {
                ctx.printer
                    .line(format_args!("  {what} {}", untrusted_short(file, 120)));
            }
        }
    }
    // Nothing moved is not nothing to say: why the processed mail stayed.
    if report.kept_recent > 0 && !args.auto {
        ctx.printer.line(format_args!(
            "kept {} processed message{}: processed more recently than --older-than {}",
            report.kept_recent,
            if report.kept_recent == 1 { "" } else { "s" },
            args.older_than
        ));
    }
    for skipped in &report.skipped {
        ctx.printer.line(format_args!(
            "skipped {}: {}",
            untrusted_short(&skipped.file, 120),
            untrusted_short(&skipped.reason, 300)
        ));
    }
    Ok(ExitCode::Success)
}
