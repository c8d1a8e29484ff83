//! `aea log` (SPEC §7): reads the audit log, with filters.

use serde_json::Value;

use super::context::Context;
use crate::audit;
use crate::cli::LogArgs;
use crate::error::{Error, ExitCode, Result};
use crate::mailbox::Held;
use crate::message::parse_time;
use crate::printer::untrusted_short;

pub(crate) fn run(args: &LogArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let since = args
        .since
        .as_ref()
        .map(|when| {
            when.resolve(ctx.rt.now(), false)
                .map_err(|e| e.of_flag("--since"))
        })
        .transpose()?;
    let by_ref = args.message.as_deref().and_then(crate::shortref::parse);
    // A reference names a message by its sender and id: the message it
    // resolves to, where it is still held; else the events whose sender
    // (their `from`, or this agent for what it sent) and id give it.
    let named = by_ref.as_ref().and_then(|_| {
        let reference = args.message.as_deref()?;
        let (entry, _) = mailbox.inbox().find(reference, Held::ALL).ok()?;
        let m = entry.valid()?;
        Some((m.from.agent_id.clone(), m.message_id.clone()))
    });
    let own = mailbox.agent_id().unwrap_or_default();
    // Every file of the log, rotated ones first (oldest first); only the
    // lines that pass the filters are kept in memory.
    let mut events = Vec::new();
    audit::for_each(mailbox.dir(), |e| {
        let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
        let sender = match text("from") {
            "" => own.as_str(),
            from => from,
        };
        let wanted = since.is_none_or(|t| parse_time(text("ts")).is_some_and(|ts| ts >= t))
            && args.event.is_none_or(|ev| text("event") == ev.as_str())
            && args
                .message
                .as_deref()
                .is_none_or(|r| match (&named, &by_ref) {
                    (Some((from, id)), _) => {
                        text("message") == id && (text("from").is_empty() || text("from") == from)
                    }
                    (None, Some(digits)) => {
                        let key =
                            crate::shortref::key(Some((sender, text("message"))), text("file"));
                        crate::shortref::matches(&key, digits)
                            || crate::shortref::matches(text("file"), digits)
                    }
                    (None, None) => {
                        !r.is_empty()
                            && (text("message").starts_with(r) || text("file").starts_with(r))
                    }
                });
        if wanted {
            events.push(e);
        }
    })?;
    // A reference that names no message is most likely a typo: saying
    // nothing, exit 0, read as "nothing happened to it".
    if let Some(reference) = args.message.as_deref()
        && events.is_empty()
    {
        return Err(Error::NoLogEntries {
            reference: reference.to_string(),
            filtered: since.is_some() || args.event.is_some(),
        });
    }
    if ctx.printer.json() {
        for event in &events {
            ctx.printer.value_line(event);
        }
        return Ok(ExitCode::Success);
    }
    for event in &events {
        let text = |k: &str| event.get(k).and_then(Value::as_str).unwrap_or_default();
        let rest: Vec<String> = event
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "ts" | "event" | "actor"))
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect();
        ctx.printer.line(format_args!(
            "{}  {:<10} {:<10} {}",
            untrusted_short(text("ts"), 30),
            untrusted_short(text("event"), 30),
            untrusted_short(text("actor"), 30),
            untrusted_short(&rest.join(" "), 200)
        ));
    }
    Ok(ExitCode::Success)
}
