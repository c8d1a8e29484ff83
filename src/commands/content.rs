//! The edge that `send` and `reply` share: message flags ([`ContentArgs`])
//! into a checked [`Draft`], and a [`Delivery`] into output and an exit code.

use std::fs;
use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::context::Context;
use crate::cli::ContentArgs;
use crate::compose::{self, Draft};
use crate::delivery::{self, Delivery, Sender};
use crate::error::{Error, ExitCode, Result};
use crate::mailbox::Mailbox;
use crate::message::{MessageType, Priority};
use crate::route::Route;

/// A checked draft of what `content` says; nothing is written yet.
pub(crate) fn draft(
    content: &ContentArgs,
    ctx: &Context,
    repo: &Path,
    message_type: MessageType,
    subject: String,
) -> Result<Draft> {
    let mut draft = Draft::new(message_type, subject, read_body(content, ctx)?);
    draft.priority = content.priority.unwrap_or(Priority::Normal);
    draft.requires_response = content.requires_response;
    draft.tags.clone_from(&content.tags);
    if let Some(text) = &content.context {
        draft.context = parse_context(text)?;
    }
    draft.expires_at = content
        .expires
        .as_ref()
        .map(|when| {
            when.resolve(ctx.rt.now(), true)
                .map_err(|e| e.of_flag("--expires"))
        })
        .transpose()?;
    // Mail that is expired on arrival is shown EXPIRED and never acted on.
    if let Some(at) = draft.expires_at
        && at <= ctx.rt.now()
    {
        return Err(Error::usage(
            format!(
                "--expires {} is not in the future",
                crate::message::format_time(at)
            ),
            "give a duration (`2h`, `7d`) or a time still to come; leave --expires out for mail that never expires",
        ));
    }
    (draft.attachments, draft.attachment_bytes) = content
        .attach
        .iter()
        .map(|p| compose::attachment(&ctx.cwd.join(p), repo))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .unzip();
    draft.check(&ctx.own_keys()?, content.allow_secrets)?;
    Ok(draft)
}

fn parse_context(text: &str) -> Result<serde_json::Map<String, Value>> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Error::usage(
            "--context must be a JSON object",
            r#"for example --context '{"ticket": "API-12"}'"#,
        )),
        Err(e) => Err(Error::usage(
            format!("--context is not valid JSON: {e}"),
            r#"quote it for the shell, e.g. --context '{"ticket": "API-12"}'"#,
        )),
    }
}

/// `--body`, or `--body-file` (`-` for stdin), at most the largest message.
fn read_body(content: &ContentArgs, ctx: &Context) -> Result<String> {
    if let Some(body) = &content.body {
        return Ok(body.clone());
    }
    let Some(file) = &content.body_file else {
        return Ok(String::new());
    };
    // No receiver takes more than this; the recipient's own limit is
    // checked when the message is delivered (exit 5).
    let limit = *crate::config::MESSAGE_BYTES_RANGE.end();
    let mut bytes = Vec::new();
    if file.as_os_str() == "-" {
        std::io::stdin()
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("read", "standard input", e))?;
    } else {
        let path = ctx.cwd.join(file);
        fs::File::open(&path)
            .and_then(|f| f.take(limit + 1).read_to_end(&mut bytes))
            .map_err(|e| Error::io("read", &path, e))?;
    }
    if bytes.len() as u64 > limit {
        return Err(Error::usage(
            format!("the body is over {limit} bytes, more than any receiver accepts"),
            "attach large files with --attach instead of inlining them",
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        Error::usage(
            "the body is not UTF-8 text",
            "attach binary files with --attach instead",
        )
    })
}

/// Delivers `draft` from `sender` (signed with its key on this machine) and
/// prints what happened per recipient.
pub(crate) fn send(
    draft: &Draft,
    sender: &Mailbox,
    sender_id: &str,
    recipients: Vec<(String, Result<Route>)>,
    once: Option<&str>,
    ctx: &Context,
) -> Result<ExitCode> {
    // Every message is signed by the sender's key (SPEC §15.2); without one
    // nothing is sent, so no unsigned mail leaves under a signing agent's id.
    let key = ctx.signing_key(sender_id)?;
    // The sender keeps what it attached, by content: `aea sync` carries it
    // from there, and the file in the repository may change after.
    if !draft.attachment_bytes.is_empty() {
        let store = sender.make_private_dir(crate::layout::Private::Attachments)?;
        for bytes in &draft.attachment_bytes {
            crate::attachments::keep(&store, bytes)?;
        }
    }
    let from = Sender {
        mailbox: sender,
        id: sender_id,
        key: &key,
    };
    let delivery = delivery::deliver(
        draft,
        &from,
        recipients,
        &ctx.rt,
        once,
        &crate::bridge::transfer::ProtocolFiles,
    )?;
    for warning in &delivery.warnings {
        ctx.printer.warn(warning);
    }
    print(&delivery, ctx);
    if !ctx.keep_send_record {
        delivery::settle(&from, &delivery);
    }
    delivery.complete()?;
    Ok(ExitCode::Success)
}

fn print(delivery: &Delivery, ctx: &Context) {
    if ctx.printer.json() {
        ctx.printer.value(delivery);
        return;
    }
    for outcome in &delivery.results {
        let who = outcome.agent_id.as_deref().unwrap_or(&outcome.recipient);
        match (&outcome.path, &outcome.error) {
            (Some(path), _) if outcome.queued => ctx.printer.line(format_args!(
                "queued for {who} (not on this machine; `aea sync` carries it): {}",
                path.display()
            )),
            (Some(path), _) => ctx
                .printer
                .line(format_args!("delivered to {who}: {}", path.display())),
            (None, Some(error)) => ctx
                .printer
                .line(format_args!("FAILED for {}: {error}", outcome.recipient)),
            // A retry: `aea sync` carried it to the remote already.
            (None, None) if outcome.delivered => ctx.printer.line(format_args!(
                "pushed for {who} already (a retry): not queued again"
            )),
            (None, None) => {}
        }
    }
    // The reference every command takes, on this side and the other.
    ctx.printer.line(format_args!(
        "ref {}  id {}",
        delivery.short_ref, delivery.message_id
    ));
}
