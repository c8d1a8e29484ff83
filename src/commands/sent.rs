//! `aea sent`: the mail this repository sent (its copies in the private `sent/`),
//! newest first, each with how far it got per recipient (as `aea status`).

use serde::Serialize;

use super::context::Context;
use crate::error::{ExitCode, Result};
use crate::layout::Private;
use crate::message::{MessageType, Priority};
use crate::printer::untrusted_short;
use crate::tracking::{self, Leg};

/// `aea sent --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct SentOutput {
    pub messages: Vec<SentItem>,
}

#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct SentItem {
    /// aea's short reference of the sent copy (`aea show`, `aea status`).
    #[serde(rename = "ref")]
    pub short_ref: String,
    pub file: String,
    pub id: String,
    #[serde(rename = "type")]
    pub message_type: MessageType,
    pub priority: Priority,
    pub subject: String,
    pub timestamp: String,
    pub recipients: Vec<Leg>,
}

pub(crate) fn run(ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let mut messages: Vec<SentItem> = mailbox
        .inbox()
        .read_all_in(Private::Sent)?
        .iter()
        .filter_map(|entry| {
            let m = entry.valid()?;
            Some(SentItem {
                short_ref: crate::shortref::of(&entry.ref_key()),
                file: entry.name.clone(),
                id: m.message_id.clone(),
                message_type: m.message_type,
                priority: m.priority,
                subject: m.message.subject.clone(),
                timestamp: m.timestamp.clone(),
                recipients: tracking::legs(&mailbox, m),
            })
        })
        .collect();
    // File names start with the UTC time, so they sort by when sent.
    messages.sort_by(|a, b| b.file.cmp(&a.file));
    if ctx.printer.json() {
        ctx.printer.value(&SentOutput { messages });
        return Ok(ExitCode::Success);
    }
    if messages.is_empty() {
        ctx.printer.line("nothing sent from this repository yet");
        return Ok(ExitCode::Success);
    }
    for m in &messages {
        ctx.printer.line(format_args!(
            "{}  {:<8} {}  {}",
            m.short_ref,
            m.message_type,
            untrusted_short(&m.timestamp, 30),
            untrusted_short(&m.subject, 72)
        ));
        for leg in &m.recipients {
            ctx.printer.line(format_args!(
                "    to {:<16} {}{}",
                untrusted_short(&leg.to, 40),
                leg.state.label(),
                leg.detail
                    .as_ref()
                    .map_or(String::new(), |d| format!(" ({})", untrusted_short(d, 120)))
            ));
        }
    }
    Ok(ExitCode::Success)
}
