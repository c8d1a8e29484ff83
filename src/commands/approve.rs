//! `aea approve` (SPEC §6): a person's go-ahead for a gated message, kept in
//! `.approvals/` and the log.

use super::{context::Context, verdict};
use crate::approval::Verdict;
use crate::cli::ApproveArgs;
use crate::error::{ExitCode, Result};

pub(crate) fn run(args: &ApproveArgs, ctx: &Context) -> Result<ExitCode> {
    verdict::decide(
        ctx,
        &args.reference,
        Verdict::Approve,
        args.note.clone(),
        &args.signing,
        args.sha256.as_deref(),
    )
}
