//! `aea reject` (SPEC §6): a person's refusal of a gated message, with a reason.

use super::{context::Context, verdict};
use crate::approval::Verdict;
use crate::cli::RejectArgs;
use crate::error::{Error, ExitCode, Result};

pub(crate) fn run(args: &RejectArgs, ctx: &Context) -> Result<ExitCode> {
    if args.reason.trim().is_empty() {
        return Err(Error::usage(
            "--reason is empty",
            "say why, for the record and for the agent",
        ));
    }
    verdict::decide(
        ctx,
        &args.reference,
        Verdict::Reject,
        Some(args.reason.clone()),
        &args.signing,
        args.sha256.as_deref(),
    )
}
