//! `aea import PROTOCOL PATH…` (SPEC §12): another protocol's files into
//! this inbox. The work is [`crate::bridge::transfer`]'s.

use super::context::Context;
use super::transfers::print_item;
use crate::bridge::transfer::{self, Status};
use crate::cli::ImportArgs;
use crate::error::{ExitCode, Result};

pub fn run(args: &ImportArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let report = transfer::import(&mailbox, args.protocol, &args.paths, &ctx.rt)?;
    if ctx.printer.json() {
        ctx.printer.value(&report);
    } else {
        for item in &report {
            print_item(item, ctx);
        }
    }
    // A refused file is left where it was; exit 6 (as `validate` finding
    // problems) says some were.
    if report.iter().any(|i| i.status == Status::Refused) {
        return Ok(ExitCode::Attention);
    }
    Ok(ExitCode::Success)
}
