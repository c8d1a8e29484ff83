//! `aea log` (SPEC §7): reads the audit log, with filters.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{Context, shift_time};
use crate::audit;
use crate::cli::LogArgs;
use crate::error::{Error, ExitCode, Result};
use crate::message::parse_time;
use crate::printer::untrusted_short;

pub fn run(args: &LogArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let since = args
        .since
        .as_deref()
        .map(|s| parse_since(s, ctx.rt.now()))
        .transpose()?;
    let by_ref = args.message.as_deref().and_then(crate::shortref::parse);
    let events: Vec<_> = audit::read(mailbox.dir())?
        .into_iter()
        .filter(|e| {
            let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
            since.is_none_or(|t| parse_time(text("ts")).is_some_and(|ts| ts >= t))
                && args.event.as_deref().is_none_or(|ev| text("event") == ev)
                && args.message.as_deref().is_none_or(|r| match &by_ref {
                    Some(digits) => crate::shortref::matches(text("file"), digits),
                    None => {
                        !r.is_empty()
                            && (text("message").starts_with(r) || text("file").starts_with(r))
                    }
                })
        })
        .collect();
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

fn parse_since(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
    if let Some(at) = shift_time(now, text, "--since", false)? {
        return Ok(at);
    }
    parse_time(text).ok_or_else(|| {
        Error::usage(
            format!("--since {text:?} is neither a duration nor an RFC 3339 time"),
            "use e.g. `--since 1h` or `--since 2026-11-21T00:00:00Z`",
        )
    })
}
