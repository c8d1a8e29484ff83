//! `aea thread REF`: every message of the conversation REF belongs to
//! that this repository holds — received, sent and archived — oldest
//! first. Message text is the sender's: every value is escaped.

use serde::Serialize;

use super::context::Context;
use crate::cli::ShowArgs;
use crate::error::{ExitCode, Result};
use crate::keyring::SenderState;
use crate::mailbox::Held;
use crate::message::MessageType;
use crate::printer::untrusted_short;

/// `aea thread --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct ThreadOutput {
    pub conversation: String,
    pub messages: Vec<ThreadItem>,
}

#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct ThreadItem {
    /// aea's short reference of the file (`aea show` finds it).
    #[serde(rename = "ref")]
    pub short_ref: String,
    pub file: String,
    /// inbox, sent or archive.
    pub place: Held,
    pub id: String,
    pub from: String,
    pub to: String,
    #[serde(rename = "type")]
    pub message_type: MessageType,
    pub subject: String,
    pub timestamp: String,
    pub reply_to: Option<String>,
    /// How the sender checks out; absent for mail this repository sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender: Option<SenderState>,
    /// Where the registry says a known sender lives, when the message
    /// comes from another folder (as `check` and `show` flag it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_path_mismatch: Option<String>,
}

pub(crate) fn run(args: &ShowArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let judge = ctx.judge(&mailbox);
    let (entry, _) = mailbox.inbox().find(&args.reference, Held::ALL)?;
    let start = entry.require_valid()?;
    let conversation = start.conversation().to_string();
    let mut messages: Vec<ThreadItem> = mailbox
        .inbox()
        .everything()?
        .into_iter()
        .filter_map(|(entry, place)| {
            let m = entry.valid()?;
            (m.conversation() == conversation).then(|| ThreadItem {
                short_ref: crate::shortref::of(&entry.ref_key()),
                file: entry.name.clone(),
                place,
                id: m.message_id.clone(),
                from: m.from.agent_id.clone(),
                to: m.to.agent_id.clone(),
                message_type: m.message_type,
                subject: m.message.subject.clone(),
                timestamp: m.timestamp.clone(),
                reply_to: m.metadata.reply_to.clone(),
                sender: (place != Held::Sent).then(|| judge.verify(m).state()),
                sender_path_mismatch: (place != Held::Sent)
                    .then(|| judge.sender_path_mismatch(m))
                    .flatten()
                    .map(|p| p.display().to_string()),
            })
        })
        .collect();
    // A sender chooses its timestamp; the file name's time breaks ties.
    messages.sort_by(|a, b| (&a.timestamp, &a.file).cmp(&(&b.timestamp, &b.file)));
    if ctx.printer.json() {
        ctx.printer.value(&ThreadOutput {
            conversation,
            messages,
        });
        return Ok(ExitCode::Success);
    }
    ctx.printer.line(format_args!(
        "conversation {}: {} message{}",
        untrusted_short(&conversation, 80),
        messages.len(),
        if messages.len() == 1 { "" } else { "s" }
    ));
    for m in &messages {
        ctx.printer.line(format_args!(
            "{}  {:<7} {}  {} -> {}  {:<8} {}{}",
            m.short_ref,
            m.place,
            untrusted_short(&m.timestamp, 30),
            untrusted_short(&m.from, 40),
            untrusted_short(&m.to, 40),
            m.message_type,
            untrusted_short(&m.subject, 72),
            match m.sender {
                Some(SenderState::Verified) | None => String::new(),
                Some(state) => format!("  [sender {state}]"),
            } + &m
                .sender_path_mismatch
                .as_deref()
                .map_or(String::new(), |registered| format!(
                    "  [NOT FROM {}'s REGISTERED FOLDER {}]",
                    untrusted_short(&m.from, 40),
                    untrusted_short(registered, 80)
                ))
        ));
    }
    Ok(ExitCode::Success)
}
