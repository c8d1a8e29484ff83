//! `aea watch` (SPEC §10): blocks until mail that was not there when it
//! started arrives, prints one JSON line (aea's short references and counts,
//! never anything the sender wrote: not text, ids or file names) and
//! exits 0; exits 4 on `--timeout`. Meant to run in the background of a
//! harness that wakes the agent when a background command exits.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::{Context, Judge, parse_std_duration};
use crate::cli::WatchArgs;
use crate::error::{ExitCode, Result};
use crate::mailbox::Mailbox;
use crate::policy::Action;
use crate::watch::DirWatch;

/// Short references of the valid unprocessed messages, by file name,
/// leaving out mail the policy rejects: nobody should be woken for it. The
/// references are those `aea check` prints.
pub(super) fn waiting(mailbox: &Mailbox, judge: &Judge) -> Result<Vec<(String, String)>> {
    let entries = mailbox.unprocessed()?;
    let refs = super::check::refs_of(&entries);
    Ok(entries
        .into_iter()
        .zip(refs)
        .filter_map(|(e, r)| {
            let m = e.valid()?;
            (judge.decide(m).action != Action::Reject).then_some((e.name, r))
        })
        .collect())
}

pub fn run(args: &WatchArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let timeout = args
        .timeout
        .as_deref()
        .map(|t| parse_std_duration(t, "--timeout"))
        .transpose()?;
    // Watch first, then look: mail arriving in between is seen either way.
    let judge = Judge::load(&mailbox, ctx);
    let watch = DirWatch::new(mailbox.dir(), &[]);
    let start = waiting(&mailbox, &judge)?;
    if args.pending && !start.is_empty() {
        let refs: Vec<&str> = start.iter().map(|(_, r)| r.as_str()).collect();
        ctx.printer.value_line(&serde_json::json!({
            "event": "pending",
            "refs": refs,
            "new": 0,
            "unprocessed": start.len(),
        }));
        return Ok(ExitCode::Success);
    }
    let known: HashSet<String> = start.into_iter().map(|(name, _)| name).collect();
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
                    ctx.printer.value_line(&serde_json::json!({
                        "event": "timeout",
                        "refs": [],
                        "new": 0,
                        "unprocessed": now.len(),
                    }));
                    return Ok(ExitCode::Timeout);
                }
            },
            // Without a deadline, wake now and then to notice a lost watch.
            None => Duration::from_secs(3600),
        };
        if !watch.wait(left) {
            continue;
        }
        let now = waiting(&mailbox, &judge)?;
        let new: Vec<&str> = now
            .iter()
            .filter(|(name, _)| !known.contains(name))
            .map(|(_, r)| r.as_str())
            .collect();
        if !new.is_empty() {
            ctx.printer.value_line(&serde_json::json!({
                "event": "new_mail",
                "refs": new,
                "new": new.len(),
                "unprocessed": now.len(),
            }));
            return Ok(ExitCode::Success);
        }
    }
}
