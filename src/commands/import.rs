//! `aea import PROTOCOL PATH…` (SPEC §12): another protocol's files into
//! this inbox. The work is [`crate::bridge::transfer`]'s.

use super::Context;
use crate::bridge::transfer::{self, Status};
use crate::cli::ImportArgs;
use crate::error::{ExitCode, Result};
use crate::printer::untrusted_short;

pub fn run(args: &ImportArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let report = transfer::import(&mailbox, args.protocol, &args.paths, &ctx.rt)?;
    if ctx.printer.json() {
        ctx.printer.value(&report);
    } else {
        for item in &report {
            let source = untrusted_short(&item.source.display().to_string(), 200);
            match (&item.message_id, &item.reason) {
                (_, Some(reason)) => ctx.printer.line(format_args!(
                    "{}: {source}: {}",
                    item.status,
                    untrusted_short(reason, 300)
                )),
                (Some(id), None) => ctx.printer.line(format_args!(
                    "{}: {source} (message {})",
                    item.status,
                    untrusted_short(id, 130)
                )),
                (None, None) => ctx.printer.line(format_args!("{}: {source}", item.status)),
            }
        }
    }
    // A refused file is left where it was; exit 6 (as `validate` finding
    // problems) says some were.
    if report.iter().any(|i| i.status == Status::Refused) {
        return Ok(ExitCode::Attention);
    }
    Ok(ExitCode::Success)
}
