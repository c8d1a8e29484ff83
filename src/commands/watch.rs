//! `aea watch` (SPEC §10): blocks until mail that was not there when it
//! started arrives, prints one JSON line (aea's short references and counts,
//! never anything the sender wrote: not text, ids or file names) and
//! exits 0; exits 4 on `--timeout`. Meant to run in the background of a
//! harness that wakes the agent when a background command exits.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::context::Context;
use crate::cli::WatchArgs;
use crate::error::{ExitCode, Result};
use crate::wake::{Known, waiting};
use crate::watch::{DirWatch, Woke};
use crate::words::word_enum;

word_enum! {
    /// Why `aea watch` returned.
    pub(super) enum WatchEvent {
        /// `--pending`, and unprocessed mail was already waiting.
        Pending = "pending",
        /// `--timeout` passed first (exit status 4).
        Timeout = "timeout",
        /// Mail arrived that was not there when the watch started.
        NewMail = "new_mail",
    }
}

/// `aea watch --json`: one JSON line. Counts and aea's short references
/// only, never anything the sender wrote.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct WatchOutput<'a> {
    pub event: WatchEvent,
    /// The short references of the new (or, with `--pending`, waiting) mail.
    pub refs: Vec<&'a str>,
    pub new: usize,
    pub unprocessed: usize,
}

pub(crate) fn run(args: &WatchArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let timeout = args.timeout.map(crate::duration::Duration::std);
    // Watch first, then look: mail arriving in between is seen either way.
    let judge = ctx.judge(&mailbox);
    let watch = DirWatch::new(mailbox.dir(), &[]);
    let known = Known::look(&mailbox, &judge)?;
    if args.pending && !known.waiting.is_empty() {
        let_go(watch, ctx);
        let refs: Vec<&str> = known.waiting.iter().map(|w| w.short_ref.as_str()).collect();
        ctx.printer.value_line(&WatchOutput {
            event: WatchEvent::Pending,
            refs,
            new: 0,
            unprocessed: known.waiting.len(),
        });
        return Ok(ExitCode::Success);
    }
    // The watch is set up and the first look taken: mail from now on wakes
    // us. Saying so lets a harness (and the tests) wait for this instead of
    // guessing with a sleep; stdout stays the one JSON line.
    ctx.printer.err_line(format_args!(
        "aea watch: listening for mail in {}",
        mailbox.dir().display()
    ));
    // A timeout past what the clock can represent means no deadline.
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    loop {
        let left = match deadline {
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => left,
                _ => {
                    let now = waiting(&mailbox, &judge)?;
                    let_go(watch, ctx);
                    ctx.printer.value_line(&WatchOutput {
                        event: WatchEvent::Timeout,
                        refs: Vec::new(),
                        new: 0,
                        unprocessed: now.len(),
                    });
                    return Ok(ExitCode::Timeout);
                }
            },
            // Without a deadline, wake now and then to notice a lost watch.
            None => Duration::from_secs(3600),
        };
        // A wake-up that names its files costs a read of each new one;
        // one that cannot (an overflowed queue, a lost watch, polling)
        // reads the whole inbox, as the first look did.
        let new = match watch.wait_names(left) {
            Woke::TimedOut => continue,
            Woke::Names(names) => known.new_mail(&mailbox, &judge, Some(&names))?,
            Woke::Unknown => known.new_mail(&mailbox, &judge, None)?,
        };
        if let Some(new) = new {
            let_go(watch, ctx);
            ctx.printer.value_line(&WatchOutput {
                event: WatchEvent::NewMail,
                new: new.refs.len(),
                refs: new.refs.iter().map(String::as_str).collect(),
                unprocessed: new.unprocessed,
            });
            return Ok(ExitCode::Success);
        }
    }
}

/// What is left to do before the line, done before it: a harness waits
/// for this process to exit, not for the line, so after the line there
/// should be nothing but the exit. The verified cache would be
/// written when the context goes; the inotify descriptor goes to a holder
/// process (see [`DirWatch::hand_off`]).
fn let_go(watch: DirWatch, ctx: &Context) {
    ctx.keyring().save_verified();
    watch.hand_off();
}
