//! `aea reject` (SPEC §6): a person's refusal of a gated message, with a reason.

use super::approve::{Verdict, print, record};
use super::{Context, Judge};
use crate::cli::RejectArgs;
use crate::error::{Error, ExitCode, Result};

pub fn run(args: &RejectArgs, ctx: &Context) -> Result<ExitCode> {
    if args.reason.trim().is_empty() {
        return Err(Error::usage(
            "--reason is empty",
            "say why, for the record and for the agent",
        ));
    }
    let mailbox = ctx.mailbox()?;
    let judge = Judge::load(&mailbox, ctx);
    let entry = mailbox.resolve(&args.reference)?;
    let (record, path) = record(
        ctx,
        &mailbox,
        &judge,
        &entry,
        Verdict::Reject,
        Some(args.reason.clone()),
    )?;
    print(ctx, &record, &path);
    Ok(ExitCode::Success)
}
