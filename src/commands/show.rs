//! `aea show` (SPEC §5.2): one message, framed as untrusted data, with the
//! decision and what the agent may do; or a copy outside the inbox (sent by
//! this repository, or archived by `gc`), labelled as such.

use serde::Serialize;

use super::context::Context;
use crate::cli::ShowArgs;
use crate::error::{ExitCode, Result};
use crate::keyring::Verification;
use crate::mailbox::{Approval, ApprovalRecord, Held, Marker, Processed};
use crate::message::Message;
use crate::policy::Decision;

/// `aea show --json`: the message with everything this repository knows
/// about it.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
// A JSON document of flags, each a yes or no a script reads by name.
#[allow(clippy::struct_excessive_bools)]
pub(super) struct ShowOutput<'a> {
    /// aea's short reference, unique in this inbox.
    #[serde(rename = "ref")]
    pub short_ref: String,
    pub file: &'a str,
    /// SHA-256 of the file as read.
    pub sha256: Option<&'a str>,
    pub processed: bool,
    /// The processed marker, also when it was written for other bytes.
    pub marker: Option<&'a Marker>,
    /// A marker exists, but the file was replaced after it was processed.
    pub replaced_after_processing: bool,
    pub approval: Approval,
    pub approval_record: Option<ApprovalRecord>,
    pub decision: Decision,
    pub sender: Verification,
    /// Where the registry says the sender lives, when the message says it
    /// comes from another folder (see `check --json`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_path_mismatch: Option<String>,
    pub expired: bool,
    /// In an inbox shared with other OS users: its sender rewrote the file
    /// after aea first read it. `message` is what aea read then (its copy),
    /// now back in the file's place; the rewritten file is in
    /// `.aea/.quarantine/`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub changed_after_read: bool,
    /// The message as aea reads it: its v1.0 fields, the seed fields and
    /// any other top-level key, but not the 0.1.0 copy mail to a bash
    /// recipient carries, which repeats the v1.0 fields (or, from a
    /// hostile sender, contradicts them; aea goes by the v1.0 fields).
    #[serde(serialize_with = "without_legacy_copy")]
    pub message: &'a Message,
}

/// `aea show --json` of a message outside the inbox: a sent copy or an
/// archived message. Nothing is decided on it, so no decision or marker.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct CopyOutput<'a> {
    #[serde(rename = "ref")]
    pub short_ref: String,
    pub file: &'a str,
    pub place: Held,
    pub sha256: Option<&'a str>,
    /// How the sender checks out; absent for a sent copy (this
    /// repository's own mail).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender: Option<Verification>,
    #[serde(serialize_with = "without_legacy_copy")]
    pub message: &'a Message,
}

// serde hands `serialize_with` a reference to the field, itself a reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn without_legacy_copy<S: serde::Serializer>(
    message: &&Message,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    let mut shown = (*message).clone();
    shown
        .extra
        .retain(|key, _| !crate::message::LEGACY_COPY_KEYS.contains(&key.as_str()));
    shown.serialize(s)
}

fn show_copy(
    entry: &crate::mailbox::Entry,
    place: Held,
    judge: &crate::judge::Judge,
    ctx: &Context,
) -> Result<ExitCode> {
    let message = entry.require_valid()?;
    if ctx.printer.json() {
        ctx.printer.value(&CopyOutput {
            short_ref: crate::shortref::of(&entry.ref_key()),
            file: &entry.name,
            place,
            sha256: entry.sha256.as_deref(),
            sender: (place == Held::Archive).then(|| judge.verify(&message)),
            message: &message,
        });
    } else {
        let label = match place {
            Held::Sent => {
                "SENT by this repository (its copy in the private state); `aea status <ref>` shows how far it got"
            }
            Held::Archive | Held::Inbox => {
                "ARCHIVED by `aea gc` (in the private archive): processed earlier, or expired unprocessed"
            }
        };
        ctx.printer.raw(&super::frame::render_copy(
            judge,
            entry,
            &message,
            label,
            place == Held::Sent,
            ctx,
        ));
    }
    Ok(ExitCode::Success)
}

pub(crate) fn run(args: &ShowArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let judge = ctx.judge(&mailbox);
    let entry = match mailbox.inbox().find(&args.reference, Held::ALL)? {
        (entry, Held::Inbox) => entry,
        // Not in the inbox: mail this repository sent, or one gc archived.
        (entry, place) => return show_copy(&entry, place, &judge, ctx),
    };
    let message = entry.require_valid()?;
    super::frame::hold(&mailbox, &entry, ctx);
    if ctx.printer.json() {
        let decision = judge.decide(&message);
        let processed = mailbox.records().processed(&entry)?;
        ctx.printer.value(&ShowOutput {
            short_ref: mailbox.inbox().short_ref(&entry),
            file: &entry.name,
            sha256: entry.sha256.as_deref(),
            processed: matches!(processed, Processed::Done(_) | Processed::Marked(_)),
            marker: match &processed {
                Processed::Done(m) | Processed::Marked(m) => m.as_ref(),
                Processed::Replaced(m) => Some(m),
                Processed::No => None,
            },
            replaced_after_processing: matches!(processed, Processed::Replaced(_)),
            approval: mailbox
                .approvals()
                .approval(&entry, decision.action.awaits_approval()),
            approval_record: mailbox.approvals().approval_record(&entry.name),
            sender: judge.verify(&message),
            sender_path_mismatch: judge
                .sender_path_mismatch(&message)
                .map(|p| p.display().to_string()),
            expired: message.is_expired(ctx.rt.now()),
            changed_after_read: entry.changed_after_read(),
            decision,
            message: &message,
        });
    } else {
        ctx.printer.raw(&super::frame::render(
            &mailbox, &judge, &entry, &message, ctx,
        ));
    }
    Ok(ExitCode::Success)
}
