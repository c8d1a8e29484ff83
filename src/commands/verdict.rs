//! The edge that `approve` and `reject` share: resolve the message, record
//! the person's decision ([`crate::approval`]), print it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Context;
use crate::approval::{self, Verdict};
use crate::error::{ExitCode, Result};
use crate::mailbox::ApprovalRecord;

/// `aea approve --json` and `aea reject --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct ApprovalOutput<'a> {
    /// The record written in the private `approvals/`.
    pub record: &'a Path,
    pub approval: &'a ApprovalRecord,
}

/// `approve` and `reject` from the command line: resolve, record, print.
pub fn decide(
    ctx: &Context,
    reference: &str,
    verdict: Verdict,
    text: Option<String>,
) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let judge = ctx.judge(&mailbox);
    let entry = mailbox.resolve(reference)?;
    let (record, path) = approval::record(&mailbox, &judge, &entry, verdict, text, &ctx.rt)?;
    print(ctx, &record, &path);
    Ok(ExitCode::Success)
}

fn print(ctx: &Context, record: &ApprovalRecord, path: &PathBuf) {
    if ctx.printer.json() {
        ctx.printer.value(&ApprovalOutput {
            record: path,
            approval: record,
        });
    } else {
        ctx.printer.line(format_args!(
            "{} {} (rule {}) as {}",
            record.decision, record.message_id, record.rule, record.by
        ));
    }
}
