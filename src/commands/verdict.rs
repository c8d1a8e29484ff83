//! The edge that `approve` and `reject` share: resolve the message, record
//! the person's decision ([`crate::approval`]), print it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::context::Context;
use crate::approval::{self, Verdict};
use crate::error::{ExitCode, Result};
use crate::mailbox::ApprovalRecord;
use crate::mailbox::Held;

/// `aea approve --json` and `aea reject --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct ApprovalOutput<'a> {
    /// The record written in the private `approvals/`.
    pub record: &'a Path,
    pub approval: &'a ApprovalRecord,
}

/// `approve` and `reject` from the command line: resolve, record, print.
pub(crate) fn decide(
    ctx: &Context,
    reference: &str,
    verdict: Verdict,
    text: Option<String>,
    signing: &crate::cli::SigningArgs,
    expected: Option<&str>,
) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let judge = ctx.judge(&mailbox);
    let entry = mailbox.inbox().find(reference, &[Held::Inbox])?.0;
    if let Some(expected) = expected {
        let expected = expected.to_ascii_lowercase();
        if expected.len() < 8 || !expected.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(crate::error::Error::usage(
                "--sha256 takes at least 8 hex digits",
                "copy the `sha256:` line `aea show` printed",
            ));
        }
        if !entry
            .sha256
            .as_deref()
            .is_some_and(|sha| sha.starts_with(&expected))
        {
            return Err(crate::error::Error::DecisionRefused {
                message: format!(
                    "{} was not {}: its SHA-256 begins {}, not {expected}; the file changed since the digest you named was shown",
                    crate::shortref::of(&entry.ref_key()),
                    match verdict {
                        Verdict::Approve => "approved",
                        Verdict::Reject => "rejected",
                    },
                    entry
                        .sha256
                        .as_deref()
                        .map_or("unknown", super::frame::short_digest),
                ),
                hint: format!(
                    "read what it holds now: `aea show {}`",
                    crate::shortref::of(&entry.ref_key())
                ),
            });
        }
    }
    let by = crate::repo::identity(mailbox.repo());
    // Before the person touches their key: which bytes they sign, by the
    // digest `aea show` printed (never the sender's text).
    if mailbox.signatures_required() && !ctx.printer.json() {
        ctx.printer.err_line(format_args!(
            "signing the {} of {} whose sha256 begins {}: the `sha256:` line of `aea show` must say the same (or pass --sha256)",
            match verdict {
                Verdict::Approve => "approval",
                Verdict::Reject => "rejection",
            },
            crate::shortref::of(&entry.ref_key()),
            entry
                .sha256
                .as_deref()
                .map_or("unknown", super::frame::short_digest)
        ));
    }
    let sign = ctx.sign_with(signing);
    let (record, path) =
        approval::record(&mailbox, &judge, &entry, verdict, text, by, &ctx.rt, &sign)?;
    print(ctx, &entry, &record, &path);
    Ok(ExitCode::Success)
}

/// Says which message was decided by aea's own reference, its type, its
/// sender and whether that sender is verified, never by the text the
/// person typed: a sender can choose an id that looks like another's.
fn print(ctx: &Context, entry: &crate::mailbox::Entry, record: &ApprovalRecord, path: &PathBuf) {
    if ctx.printer.json() {
        ctx.printer.value(&ApprovalOutput {
            record: path,
            approval: record,
        });
    } else {
        let sender = entry.verification.as_ref().map_or(
            crate::keyring::SenderState::Unverified,
            crate::keyring::Verification::state,
        );
        match entry.valid() {
            Some(m) => ctx.printer.line(format_args!(
                "{} {} ({} from {}, {sender}; rule {}) as {}",
                record.decision,
                crate::shortref::of(&entry.ref_key()),
                m.message_type,
                m.from.agent_id,
                record.rule,
                record.by
            )),
            None => ctx.printer.line(format_args!(
                "{} {} (rule {}) as {}",
                record.decision,
                crate::shortref::of(&entry.ref_key()),
                record.rule,
                record.by
            )),
        }
    }
}
