//! OACP inbox messages (`reference/oacp-inbox-outbox.md`, kiloloop/oacp's
//! `validate_message.py`): one YAML file per message, converted to and
//! from [`Message`] without loss.
//!
//! Reading keeps everything: the OACP `type` and `priority` and every field
//! AEA has no place for travel in `message.context.oacp` and are written
//! back unchanged. Writing produces only what OACP's validator accepts (it
//! rejects unknown top-level fields), so the AEA fields OACP has no place
//! for travel as one [`Patch`] line at the end of `context_keys`, the one
//! free-form reference list OACP has.
//!
//! A file another tool wrote comes back byte for byte. OACP signs a
//! message over the exact bytes of its file up to the final `auth:` line
//! (`message_signing.py`: "no canonicalization anywhere; nothing is ever
//! re-rendered"), so key order, quoting, comments and the body's block
//! style are all part of what is signed. Reading such a file keeps its
//! text in `message.context.oacp_source`; writing a message that still
//! is exactly what that text says writes the text itself.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::{PATCH_PREFIX, Patch, yaml_quoted, yaml_text_field};
use crate::message::{self, Body, Content, Message, Metadata, PROTOCOL_VERSION, Party};

mod base_yaml;
mod schema;

use schema::{FIELD_ORDER, is_oacp_conversation, looks_like_handoff_packet, one_line, scalar};
pub use schema::{
    MAX_BODY_CHARS, MAX_ID_CHARS, MAX_RECIPIENTS, OacpPriority, OacpType, fields_of, oacp_problems,
};

/// The key inside `message.context` that holds what only OACP has.
pub(crate) const CONTEXT_KEY: &str = "oacp";

/// The key inside `message.context` that holds the file as its sender
/// wrote it, when writing the message again would not give those bytes.
pub(crate) const SOURCE_KEY: &str = "oacp_source";

/// Reads one OACP message file; the error is a one-line reason for the
/// quarantine. A file that [`render`] would not write byte for byte from
/// the message it describes (any file another tool wrote) is kept whole in
/// the message, so that exporting the message writes that file again.
pub(crate) fn parse(text: &str) -> Result<Message, String> {
    let mut message = read(text)?;
    if write(&message) != text {
        if let Value::Object(context) = &mut message.message.context {
            context.insert(SOURCE_KEY.into(), Value::String(text.to_string()));
        }
        // What is delivered must read back from the inbox: the copy made
        // the message no deeper, but it is checked as any message is.
        message::validate(&message)?;
    }
    Ok(message)
}

/// Drops the copy of its file a message keeps; whether it had one.
pub(crate) fn drop_source(message: &mut Message) -> bool {
    match &mut message.message.context {
        Value::Object(context) => context.remove(SOURCE_KEY).is_some(),
        _ => false,
    }
}

/// The message a file's own fields and patch describe.
fn read(text: &str) -> Result<Message, String> {
    let value = base_yaml::load(text).map_err(|e| format!("not valid YAML: {}", one_line(&e)))?;
    let Value::Object(mut fields) = value else {
        return Err("the top level is not a YAML mapping".into());
    };
    let mut patch = None;
    match fields.get_mut("context_keys") {
        Some(Value::String(keys)) => {
            if let Some((rest, line)) = split_patch(keys) {
                patch = Some(Patch::from_line(line).expect("split_patch found the prefix")?);
                if rest.is_empty() {
                    fields.remove("context_keys");
                } else {
                    let rest = rest.to_string();
                    fields.insert("context_keys".into(), Value::String(rest));
                }
            }
        }
        // The reference text's list form: the patch is the last item.
        Some(Value::Array(items)) => {
            if let Some(Value::String(last)) = items.last()
                && let Some(found) = Patch::from_line(last)
            {
                patch = Some(found?);
                items.pop();
            }
        }
        _ => {}
    }
    let message = from_fields(fields)?;
    super::finish(message, patch.as_ref(), &format!("{PATCH_PREFIX:?}line"))
}

/// The file text a message keeps from OACP, if writing it again gives
/// exactly this message: a message changed since (or one whose
/// `oacp_source` another agent made up) is written from its fields.
fn source(message: &Message) -> Option<&str> {
    let text = message.message.context.get(SOURCE_KEY)?.as_str()?;
    (parse(text).ok()? == *message).then_some(text)
}

/// The patch is the last line of `context_keys`; what comes before it is
/// the sender's own references.
fn split_patch(keys: &str) -> Option<(&str, &str)> {
    let body = keys.strip_suffix('\n').unwrap_or(keys);
    let (rest, last) = match body.rsplit_once('\n') {
        Some((rest, last)) => (rest, last),
        None => ("", body),
    };
    last.starts_with(PATCH_PREFIX).then_some((rest, last))
}

fn take_text(fields: &mut Map<String, Value>, key: &str) -> Result<String, String> {
    let value = fields
        .remove(key)
        .ok_or_else(|| format!("missing required field `{key}`"))?;
    let text = scalar(&value).ok_or_else(|| format!("field `{key}` must be a single value"))?;
    if text.trim().is_empty() {
        return Err(format!("field `{key}` is empty"));
    }
    Ok(text)
}

/// An OACP agent name as an AEA agent id: the same when it is one, else
/// the name with what AEA ids do not allow (`.`) replaced; the original is
/// kept in `context.oacp`.
fn agent_id(name: &str) -> String {
    if message::check_agent_id(name).is_ok() {
        name.to_string()
    } else {
        message::sanitize_agent_id(name)
    }
}

/// A message id AEA can use in file names and hook output: the OACP id
/// when it is one, else `oacp-` and a hash of it (the original is kept).
fn message_id(id: &str) -> String {
    if message::check_message_id(id).is_ok() {
        return id.to_string();
    }
    let digest = <sha2::Sha256 as sha2::Digest>::digest(id.as_bytes());
    let hex = digest[..16].iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    });
    format!("oacp-{hex}")
}

/// OACP conversation ids must look like `conv-<YYYYMMDD>-<agent>-<seq>`;
/// an AEA conversation id that does not is written as
/// `conv-00000000-<id>-0`, which reads back as the id itself.
fn wrap_conversation(id: &str) -> Option<String> {
    if is_oacp_conversation(id) {
        return Some(id.to_string());
    }
    let fits = (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    fits.then(|| format!("conv-00000000-{id}-0"))
}

fn unwrap_conversation(id: &str) -> &str {
    id.strip_prefix("conv-00000000-")
        .and_then(|rest| rest.strip_suffix("-0"))
        .filter(|inner| !inner.is_empty())
        .unwrap_or(id)
}

/// The message an OACP file's own fields describe (no patch applied).
fn from_fields(mut fields: Map<String, Value>) -> Result<Message, String> {
    let mut oacp = Map::new();
    let id = take_text(&mut fields, "id")?;
    let from = take_text(&mut fields, "from")?;
    let kind: OacpType = take_text(&mut fields, "type")?.trim().parse()?;
    let priority: OacpPriority = take_text(&mut fields, "priority")?.trim().parse()?;
    let created = take_text(&mut fields, "created_at_utc")?;
    let subject = take_text(&mut fields, "subject")?;
    let body = match fields.remove("body") {
        None => return Err("missing required field `body`".into()),
        Some(Value::Null) => return Err("field `body` is empty".into()),
        Some(v @ (Value::Object(_) | Value::Array(_))) => Body::Structured(v),
        Some(v) => Body::Text(scalar(&v).expect("not null, object or array")),
    };
    let to_value = fields.remove("to").ok_or("missing required field `to`")?;
    let recipients: Vec<String> = match &to_value {
        Value::Array(items) => items
            .iter()
            .map(|v| scalar(v).ok_or("field `to` holds a non-name"))
            .collect::<Result<_, _>>()?,
        v => vec![scalar(v).ok_or("field `to` must be a name or a list of names")?],
    };
    if recipients.is_empty() || recipients.iter().any(|r| r.trim().is_empty()) {
        return Err("field `to` names no recipient".into());
    }
    if recipients.len() > MAX_RECIPIENTS {
        return Err(format!(
            "field `to` lists more than {MAX_RECIPIENTS} recipients"
        ));
    }
    if recipients.len() > 1 && !kind.may_broadcast() {
        return Err(format!("type `{kind}` cannot be broadcast"));
    }
    let timestamp = DateTime::parse_from_rfc3339(created.trim())
        .map_err(|_| format!("created_at_utc {created:?} is not an ISO 8601 time"))?
        .with_timezone(&Utc);

    let message_id = message_id(&id);
    if message_id != id {
        oacp.insert("id".into(), Value::String(id));
    }
    let from_id = agent_id(&from);
    if from_id != from {
        oacp.insert("from".into(), Value::String(from));
    }
    let to_id = agent_id(&recipients[0]);
    let broadcast =
        (recipients.len() > 1).then(|| recipients.iter().map(|r| agent_id(r)).collect::<Vec<_>>());
    let to_kept = match &to_value {
        Value::String(s) => *s != to_id,
        _ => true,
    };
    if to_kept {
        oacp.insert("to".into(), to_value);
    }
    oacp.insert("type".into(), Value::String(kind.as_str().into()));
    oacp.insert("priority".into(), Value::String(priority.as_str().into()));
    let time = message::format_time(timestamp);
    if time != created {
        oacp.insert("created_at_utc".into(), Value::String(created));
    }
    let conversation_id = match fields.remove("conversation_id") {
        Some(v) => scalar(&v).map(|raw| {
            let id = unwrap_conversation(&raw).to_string();
            // Written back as found, not in our wrapped form.
            if wrap_conversation(&id).as_deref() != Some(raw.as_str()) {
                oacp.insert("conversation_id".into(), v.clone());
            }
            id
        }),
        None => None,
    };
    let reply_to = fields.remove("parent_message_id").and_then(|v| scalar(&v));
    let expires_at = match fields.remove("expires_at") {
        Some(v) => match scalar(&v).and_then(|s| message::parse_time(&s).map(|t| (s, t))) {
            Some((s, t)) if message::format_time(t) == s => Some(s),
            Some((_, t)) => {
                oacp.insert("expires_at".into(), v);
                Some(message::format_time(t))
            }
            None => {
                oacp.insert("expires_at".into(), v);
                None
            }
        },
        None => None,
    };
    // Everything else (channel, related_packet, related_pr, context_keys,
    // autonomy_hint, review telemetry, and fields a newer OACP may add)
    // travels as found.
    oacp.extend(fields);

    let mut context = Map::new();
    context.insert(CONTEXT_KEY.into(), Value::Object(oacp));
    Ok(Message {
        protocol_version: PROTOCOL_VERSION.into(),
        message_id,
        message_type: kind.to_aea(),
        timestamp: time,
        priority: priority.to_aea(),
        requires_response: kind.expects_response(),
        from: Party {
            agent_id: from_id,
            repo_path: None,
            user: None,
            also_unsigned: false,
        },
        to: Party {
            agent_id: to_id,
            repo_path: None,
            user: None,
            also_unsigned: false,
        },
        message: Content {
            subject,
            body,
            context: Value::Object(context),
            attachments: Vec::new(),
            extra: serde_json::Map::new(),
        },
        metadata: Metadata {
            conversation_id,
            reply_to,
            tags: Vec::new(),
            broadcast,
            refs: None,
        },
        expires_at,
        signature: None,
        digest: None,
        extra: serde_json::Map::new(),
    })
}

/// What the message carries from OACP, if it came from there.
fn kept(message: &Message) -> Map<String, Value> {
    match message.message.context.get(CONTEXT_KEY) {
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    }
}

/// The OACP type a message carries in `context.oacp.type`: kept from the
/// OACP file it came from, or chosen by its sender (`--oacp-type`, or the
/// answer `aea reply` gives to an OACP type). Any of the twelve is written
/// as it is, whatever the AEA type: an AEA `response` may go out as a
/// `handoff_complete` or a `notification`.
fn kept_type(message: &Message) -> Option<OacpType> {
    message.message.context.as_object().and_then(context_type)
}

/// The OACP type a message is written as: the one it carries, else the
/// one its AEA type maps to.
pub fn oacp_type(message: &Message) -> OacpType {
    kept_type(message).unwrap_or_else(|| OacpType::from_aea(message.message_type))
}

/// The OACP type an answer to `parent` goes out as, by OACP's table of
/// expected responses, when `parent` carries an OACP type that names one.
pub fn answer_type(parent: &Message) -> Option<OacpType> {
    kept_type(parent)?.answer()
}

/// Puts OACP type `kind` into the context of a message being written
/// (`--oacp-type`, or the answer `aea reply` gives); refused when the
/// context holds an `oacp` that is not an object.
pub fn set_type(context: &mut Map<String, Value>, kind: OacpType) -> Result<(), String> {
    match context
        .entry(CONTEXT_KEY)
        .or_insert_with(|| Value::Object(Map::new()))
    {
        Value::Object(oacp) => {
            oacp.insert("type".into(), Value::String(kind.as_str().into()));
            Ok(())
        }
        _ => Err(format!(
            "the context's `{CONTEXT_KEY}` is not an object, and the OACP type goes in it"
        )),
    }
}

/// The OACP type a context being written names (`{"oacp": {"type": …}}`),
/// if it is one of the twelve: the type its OACP files are written as.
pub fn context_type(context: &Map<String, Value>) -> Option<OacpType> {
    context
        .get(CONTEXT_KEY)?
        .get("type")
        .and_then(scalar)?
        .parse()
        .ok()
}

/// Whether a context being written names an OACP type already.
pub fn names_type(context: &Map<String, Value>) -> bool {
    context
        .get(CONTEXT_KEY)
        .and_then(|oacp| oacp.get("type"))
        .is_some()
}

/// Writes a message as an OACP inbox file that OACP's validator accepts,
/// and that [`parse`] reads back as exactly `message`: the file it came
/// from, byte for byte, if it came from one and is unchanged.
pub(crate) fn render(message: &Message) -> String {
    match source(message) {
        Some(text) => text.to_string(),
        None => write(message),
    }
}

/// The file [`render`] writes from a message's fields.
fn write(message: &Message) -> String {
    let fields = to_fields(message);
    let mut text = write_fields(&fields);
    let read_back = parse_unpatched(&text);
    let wanted = serde_json::to_value(message).expect("a message always serialises");
    let patch = match read_back {
        Some(read) => Patch::between(&read, &wanted),
        None => Patch {
            set: std::iter::once((String::new(), wanted)).collect(),
            unset: Vec::new(),
        },
    };
    if !patch.is_empty() {
        let mut with_patch = fields;
        let keys = match with_patch.remove("context_keys") {
            Some(Value::String(keys)) if !keys.is_empty() => Value::String(format!(
                "{}\n{}",
                keys.strip_suffix('\n').unwrap_or(&keys),
                patch.to_line()
            )),
            Some(Value::Array(mut items)) => {
                items.push(Value::String(patch.to_line()));
                Value::Array(items)
            }
            _ => Value::String(patch.to_line()),
        };
        with_patch.insert("context_keys".into(), keys);
        text = write_fields(&with_patch);
    }
    text
}

fn parse_unpatched(text: &str) -> Option<Value> {
    let value = base_yaml::load(text).ok()?;
    let Value::Object(fields) = value else {
        return None;
    };
    let message = from_fields(fields).ok()?;
    Some(serde_json::to_value(&message).expect("a message always serialises"))
}

/// The OACP fields for a message: what it kept from OACP where that still
/// agrees with it, else mapped from its AEA fields.
fn to_fields(message: &Message) -> Map<String, Value> {
    let mut kept = kept(message);
    let mut out = Map::new();
    let text = |s: &str| Value::String(s.to_string());

    let id = kept
        .remove("id")
        .filter(|v| scalar(v).is_some_and(|s| message_id(&s) == message.message_id))
        .unwrap_or_else(|| text(&message.message_id));
    out.insert("id".into(), id);
    let from = kept
        .remove("from")
        .filter(|v| scalar(v).is_some_and(|s| agent_id(&s) == message.from.agent_id))
        .unwrap_or_else(|| text(&message.from.agent_id));
    out.insert("from".into(), from);

    kept.remove("type");
    let kept_kind = kept_type(message);
    let kind = oacp_type(message);
    let to = kept.remove("to").filter(|v| match v {
        Value::Array(items) => {
            kind.may_broadcast()
                && items.len() <= MAX_RECIPIENTS
                && items
                    .first()
                    .and_then(scalar)
                    .is_some_and(|s| agent_id(&s) == message.to.agent_id)
        }
        v => scalar(v).is_some_and(|s| agent_id(&s) == message.to.agent_id),
    });
    let to = to.unwrap_or_else(|| match &message.metadata.broadcast {
        Some(list)
            if kind.may_broadcast()
                && (2..=MAX_RECIPIENTS).contains(&list.len())
                && list.first() == Some(&message.to.agent_id) =>
        {
            Value::Array(list.iter().map(|r| text(r)).collect())
        }
        _ => text(&message.to.agent_id),
    });
    out.insert("to".into(), to);
    out.insert("type".into(), text(kind.as_str()));

    let priority = kept
        .remove("priority")
        .and_then(|v| scalar(&v)?.parse::<OacpPriority>().ok())
        .filter(|p| p.to_aea() == message.priority)
        .unwrap_or_else(|| OacpPriority::from_aea(message.priority));
    out.insert("priority".into(), text(priority.as_str()));

    let sent = message.sent_at();
    let created = kept
        .remove("created_at_utc")
        .filter(|v| {
            scalar(v)
                .and_then(|s| message::parse_time(s.trim()))
                .is_some_and(|t| Some(t) == sent)
        })
        .unwrap_or_else(|| match sent {
            Some(t) => text(&t.format("%Y-%m-%dT%H:%M:%SZ").to_string()),
            None => text(&message.timestamp),
        });
    out.insert("created_at_utc".into(), created);

    let expires = kept.remove("expires_at");
    if let Some(e) = &message.expires_at {
        let t = message::parse_time(e);
        let value = expires
            .filter(|v| scalar(v).and_then(|s| message::parse_time(s.trim())) == t)
            .unwrap_or_else(|| match t {
                Some(t) => text(&t.format("%Y-%m-%dT%H:%M:%SZ").to_string()),
                None => text(e),
            });
        out.insert("expires_at".into(), value);
    }
    let conversation = kept.remove("conversation_id");
    if let Some(c) = &message.metadata.conversation_id {
        let found = conversation
            .filter(|v| scalar(v).is_some_and(|raw| unwrap_conversation(&raw) == c))
            .or_else(|| wrap_conversation(c).map(Value::String));
        if let Some(v) = found {
            out.insert("conversation_id".into(), v);
        }
    }
    if let Some(parent) = &message.metadata.reply_to
        && parent.chars().count() <= MAX_ID_CHARS
    {
        out.insert("parent_message_id".into(), text(parent));
    }
    out.insert("subject".into(), text(&message.message.subject));
    let body = match &message.message.body {
        Body::Text(t) if !t.trim().is_empty() && t.chars().count() <= MAX_BODY_CHARS => {
            // A handoff that came from OACP goes back with the body its
            // sender wrote: OACP's sender and validator take any text (the
            // packet is the handoff workflow's rule), and a round trip must
            // not change it (found by scripts/oacp-e2e).
            if kind == OacpType::Handoff
                && kept_kind != Some(OacpType::Handoff)
                && !looks_like_handoff_packet(t)
            {
                text(&handoff_packet(message))
            } else {
                text(t)
            }
        }
        Body::Text(t) if t.trim().is_empty() => text("(no body)"),
        Body::Text(t) => {
            let head: String = t.chars().take(MAX_BODY_CHARS - 200).collect();
            text(&format!(
                "{head}\n\n[cut at {} characters; the whole text travels in the \
                 `aea-patch` line of context_keys]",
                MAX_BODY_CHARS - 200
            ))
        }
        Body::Structured(v) => v.clone(),
    };
    out.insert("body".into(), body);
    // What is left of the kept fields goes out as found: channel,
    // related_packet, related_pr, context_keys, autonomy_hint, telemetry;
    // but only where OACP's validator takes it. A field it would refuse
    // (one a sender put in its `--context`, one that no longer fits the
    // type written) travels in the patch instead, as AEA's own fields do.
    let refused = oacp_problems(&out);
    for (key, value) in kept {
        if FIELD_ORDER.contains(&key.as_str()) && !out.contains_key(&key) {
            out.insert(key.clone(), value);
            if oacp_problems(&out).iter().any(|p| !refused.contains(p)) {
                out.remove(&key);
            }
        }
    }
    out
}

fn handoff_packet(message: &Message) -> String {
    let quoted = |s: &str| yaml_quoted(s);
    let mut artifacts: Vec<String> = message
        .message
        .attachments
        .iter()
        .filter_map(|a| a.get("path").and_then(Value::as_str).map(str::to_string))
        .collect();
    if artifacts.is_empty() {
        artifacts.push("the notes below".into());
    }
    let list = |items: &[String], indent: &str| {
        items.iter().fold(String::new(), |mut out, i| {
            let _ = writeln!(out, "{indent}- {}", quoted(i));
            out
        })
    };
    let notes = message.message.body.to_text();
    let mut out = format!(
        "source_agent: {}\ntarget_agent: {}\nintent: {}\nartifacts_to_review:\n{}\
         definition_of_done:\n  - \"the receiver confirms with handoff_complete\"\n\
         context_bundle:\n  files_touched:\n{}  decisions_made:\n    - \"see notes\"\n  \
         blockers_hit:\n    - \"see notes\"\n  suggested_next_steps:\n    - \"see notes\"\n",
        message.from.agent_id,
        message.to.agent_id,
        quoted(&message.message.subject),
        list(&artifacts, "  "),
        list(&artifacts, "    "),
    );
    out.push_str(&yaml_text_field("notes", &notes));
    out
}

fn write_fields(fields: &Map<String, Value>) -> String {
    let mut out = String::new();
    for key in FIELD_ORDER {
        let Some(value) = fields.get(key) else {
            continue;
        };
        match value {
            Value::String(s) if matches!(key, "body" | "context_keys") => {
                out.push_str(&yaml_text_field(key, s));
            }
            Value::Array(items) => {
                out.push_str(key);
                out.push_str(":\n");
                for item in items {
                    out.push_str("  - ");
                    out.push_str(&yaml_value(item));
                    out.push('\n');
                }
            }
            Value::Object(_) => {
                // A structured body (AEA allows one, OACP wants text): JSON
                // is YAML, and the patch restores the exact value.
                let _ = writeln!(out, "{key}: {}", yaml_quoted(&value.to_string()));
            }
            v => {
                let _ = writeln!(out, "{key}: {}", yaml_value(v));
            }
        }
    }
    out
}

fn yaml_value(value: &Value) -> String {
    match value {
        Value::String(s) => yaml_quoted(s),
        Value::Number(_) | Value::Bool(_) => value.to_string(),
        Value::Null => "null".into(),
        other => yaml_quoted(&other.to_string()),
    }
}

/// A file name for a message in an OACP inbox, as OACP's sender makes
/// them (`<UTC stamp>_<from>_<type>.yaml`) plus part of the id, so two
/// messages of one second never share a name.
pub(crate) fn file_name(message: &Message) -> String {
    let stamp = message.sent_at().map_or_else(
        || "00000000T000000Z".into(),
        |t| t.format("%Y%m%dT%H%M%SZ").to_string(),
    );
    let kind = oacp_type(message);
    let id: String = message
        .message_id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(12)
        .collect();
    format!("{stamp}_{}_{kind}_{id}.yaml", message.from.agent_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{MessageType, Priority};
    use serde_json::json;

    fn corpus(kind: &str) -> Vec<(String, String)> {
        super::super::test_corpus("oacp", kind)
    }

    /// A message with every AEA field set, in every shape the patch must carry.
    fn full(kind: MessageType) -> Message {
        serde_json::from_value(json!({
            "protocol_version": "1.0",
            "message_id": "5b0e8e8e-1111-4222-8333-444455556666",
            "message_type": kind,
            "timestamp": "2026-11-21T22:48:14.123Z",
            "priority": "high",
            "requires_response": kind != MessageType::Response,
            "from": {"agent_id": "api", "repo_path": "/r/api", "user": "ana"},
            "to": {"agent_id": "web", "repo_path": "/r/web"},
            "message": {
                "subject": "Port 8080 \"or\" 9090?",
                "body": "line one\n  indented\n\ttab\u{2028}\n\n",
                "context": {"question": "which", "n": [1, null, {"x": true}], "empty": {}},
                "attachments": [{"path": "src/a.rs", "sha256": "ab"}]
            },
            "metadata": {
                "conversation_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7",
                "reply_to": "0a0a0a0a-1111-4222-8333-444455556666",
                "tags": ["x", "y"],
                "broadcast": ["web", "docs"],
                "refs": {"commit": "abc", "paths": ["src"]}
            },
            "expires_at": "2026-11-22T00:00:00.500+01:00",
            "signature": {"alg": "ed25519", "key": "ed25519:00", "value": "ff"}
        }))
        .unwrap()
    }

    fn problems(text: &str) -> Vec<String> {
        oacp_problems(&fields_of(text).unwrap())
    }

    #[test]
    fn every_aea_type_survives_a_round_trip_through_oacp() {
        for kind in MessageType::ALL {
            let message = full(*kind);
            let text = render(&message);
            assert_eq!(problems(&text), Vec::<String>::new(), "{kind}:\n{text}");
            assert_eq!(parse(&text).unwrap(), message, "{kind}:\n{text}");
        }
    }

    #[test]
    fn plain_messages_need_no_patch() {
        let mut message = full(MessageType::Question);
        message.message.body = Body::Text("Which port?\n".into());
        message.message.context = json!({});
        message.message.attachments.clear();
        message.metadata.tags.clear();
        message.metadata.broadcast = None;
        message.metadata.refs = None;
        message.metadata.conversation_id = Some("conv-20261121-api-1".into());
        message.timestamp = "2026-11-21T22:48:14.000Z".into();
        message.expires_at = None;
        message.signature = None;
        message.from.repo_path = None;
        message.from.user = None;
        message.to.repo_path = None;
        let text = render(&message);
        // The type and priority read back into context.oacp: that, and
        // nothing else, is what the patch removes again.
        assert!(text.contains("priority: \"P1\"\n"), "{text}");
        assert!(text.contains("type: \"question\"\n"), "{text}");
        assert!(text.contains("body: |\n  Which port?\n"), "{text}");
        let fields = fields_of(&text).unwrap();
        assert_eq!(
            fields["context_keys"],
            json!("aea-patch: {\"unset\":[\"/message/context/oacp\"]}")
        );
        assert_eq!(parse(&text).unwrap(), message);
    }

    #[test]
    fn oacp_types_and_priorities_come_back_unchanged() {
        for kind in OacpType::ALL {
            for priority in OacpPriority::ALL {
                let body = if *kind == OacpType::Handoff {
                    "source_agent: a1\ntarget_agent: b1\nintent: x\nartifacts_to_review:\n  - f\n\
                     definition_of_done:\n  - d\ncontext_bundle:\n  files_touched:\n    - f\n  \
                     decisions_made:\n    - d\n  blockers_hit:\n    - b\n  suggested_next_steps:\n    - s\n"
                        .to_string()
                } else {
                    "text\n".to_string()
                };
                let text = format!(
                    "id: \"m-1\"\nfrom: a1\nto: b1\ntype: {kind}\npriority: {priority}\n\
                     created_at_utc: \"2025-01-15T14:30:00Z\"\nsubject: \"s\"\n{}",
                    yaml_text_field("body", &body)
                );
                let message = parse(&text).unwrap();
                assert_eq!(message.message_type, kind.to_aea());
                assert_eq!(message.priority, priority.to_aea());
                assert_eq!(message.requires_response, kind.expects_response());
                let again = render(&message);
                let fields = fields_of(&again).unwrap();
                assert_eq!(fields["type"], json!(kind.as_str()));
                assert_eq!(fields["priority"], json!(priority.as_str()));
                assert!(!fields.contains_key("context_keys"), "{again}");
                assert_eq!(problems(&again), Vec::<String>::new(), "{again}");
                assert_eq!(parse(&again).unwrap(), message);
            }
        }
    }

    #[test]
    fn the_reference_example_imports_with_every_field() {
        let (_, text) = corpus("valid")
            .into_iter()
            .find(|(n, _)| n == "reference-example.yaml")
            .unwrap();
        let m = parse(&text).unwrap();
        assert_eq!(m.message_id, "a1b2c3d4-5678-9abc-def0-1234567890ab");
        assert_eq!(
            (m.from.agent_id.as_str(), m.to.agent_id.as_str()),
            ("claude", "codex")
        );
        assert_eq!(
            (m.message_type, m.priority),
            (MessageType::Request, Priority::High)
        );
        assert_eq!(m.timestamp, "2025-01-15T14:30:00.000Z");
        assert_eq!(m.message.subject, "Review auth middleware PR");
        assert_eq!(
            m.message.body,
            Body::Text("PR #42 adds JWT validation middleware.\nFocus areas: token expiry handling, error responses.\n".into())
        );
        assert_eq!(m.metadata.conversation_id.as_deref(), Some("review-pr-42"));
        assert_eq!(
            m.message.context["oacp"],
            json!({
                "type": "review_request",
                "priority": "P1",
                "created_at_utc": "2025-01-15T14:30:00Z",
                "related_pr": "https://github.com/kiloloop/oacp/pull/42",
                "conversation_id": "review-pr-42"
            })
        );
    }

    #[test]
    fn threads_broadcasts_and_odd_names_import() {
        let all: std::collections::BTreeMap<_, _> = corpus("valid").into_iter().collect();
        let thread = parse(&all["reference-thread.yaml"]).unwrap();
        assert_eq!(
            thread.metadata.reply_to.as_deref(),
            Some("a1b2c3d4-5678-9abc-def0-1234567890ab")
        );
        assert_eq!(
            thread.message.context["oacp"]["context_keys"],
            json!(["pr:42", "file:src/middleware/auth.ts"])
        );
        let broadcast = parse(&all["broadcast.yaml"]).unwrap();
        assert_eq!(
            broadcast.metadata.broadcast,
            Some(vec![
                "codex".into(),
                "gemini".into(),
                "claude-reviewer".into()
            ])
        );
        assert_eq!(
            broadcast.expires_at.as_deref(),
            Some("2025-01-17T09:00:00.000Z")
        );
        assert_eq!(
            broadcast.message.context["oacp"]["channel"],
            json!("release-1_2")
        );
        let shaped = parse(&all["validator-shape.yaml"]).unwrap();
        assert_eq!(
            shaped.metadata.conversation_id.as_deref(),
            Some("conv-20250115-claude-1")
        );
        assert_eq!(
            shaped.message.context["oacp"]["related_packet"],
            json!("packets/2025-01-16-auth")
        );
        assert_eq!(
            shaped.message.context["oacp"]["est_cost_usd"],
            json!("0.12")
        );
        let odd = parse(&all["odd-names.yaml"]).unwrap();
        assert!(odd.message_id.starts_with("oacp-"));
        assert_eq!(odd.from.agent_id, "agenta");
        assert_eq!(odd.to.agent_id, "team-lead");
        assert_eq!(odd.timestamp, "2025-01-16T09:00:00.000Z");
    }

    #[test]
    fn foreign_files_come_back_as_they_were() {
        for (name, text) in corpus("valid") {
            let message = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            let again = render(&message);
            assert_eq!(parse(&again).unwrap(), message, "{name}:\n{again}");
            // Byte for byte, as an OACP signature over the file needs.
            assert_eq!(again, text, "{name}");
            let before = fields_of(&text).unwrap();
            let after = fields_of(&again).unwrap();
            // What the sender wrote comes back field for field.
            assert_eq!(after, before, "{name}:\n{again}");
            if name == "validator-shape.yaml" || name == "handoff.yaml" {
                assert_eq!(problems(&again), Vec::<String>::new(), "{name}:\n{again}");
            }
        }
    }

    #[test]
    fn a_handoff_from_oacp_keeps_the_body_its_sender_wrote() {
        // OACP's own sender writes a handoff with any body (the packet is
        // checked by the handoff workflow, not by validate_message.py).
        let text = "id: msg-20261123112426-claude-71c1\nfrom: claude\nto: web\n\
                    type: handoff\npriority: P0\ncreated_at_utc: \"2026-11-23T11:24:26Z\"\n\
                    conversation_id: conv-20261123-claude-4\nsubject: \"Take over\"\n\
                    body: |\n  Plain notes.\n  key: value # hash\n";
        let message = parse(text).unwrap();
        let again = render(&message);
        assert_eq!(
            fields_of(&again).unwrap(),
            fields_of(text).unwrap(),
            "{again}"
        );
        assert_eq!(parse(&again).unwrap(), message);
        // An AEA handoff still goes out as a packet.
        let ours = render(&full(MessageType::Handoff));
        assert!(looks_like_handoff_packet(
            fields_of(&ours).unwrap()["body"].as_str().unwrap()
        ));
    }

    #[test]
    fn bodies_with_blank_lines_before_an_indented_line_stay_valid_yaml() {
        // PyYAML refused this body without an indentation indicator (found
        // by scripts/oacp-e2e).
        let mut message = full(MessageType::Update);
        message.message.body = Body::Text("\n\n   indented first line\ntrailing\n\n\n".into());
        let text = render(&message);
        assert!(
            text.contains("body: |2+\n\n\n     indented first line\n  trailing\n"),
            "{text}"
        );
        assert_eq!(problems(&text), Vec::<String>::new());
        assert_eq!(parse(&text).unwrap(), message);
    }

    #[test]
    fn broken_files_are_refused_with_a_reason() {
        let corpus = corpus("broken");
        assert!(corpus.len() >= 10);
        for (name, text) in corpus {
            let err = parse(&text).expect_err(&name);
            assert!(!err.contains('\n'), "{name}: {err}");
        }
    }

    #[test]
    fn handoffs_are_never_broadcast() {
        let mut message = full(MessageType::Handoff);
        message.metadata.broadcast = Some(vec!["web".into(), "docs".into()]);
        let text = render(&message);
        assert_eq!(fields_of(&text).unwrap()["to"], json!("web"));
        assert_eq!(problems(&text), Vec::<String>::new());
        let mut update = full(MessageType::Update);
        update.metadata.broadcast = Some(vec!["web".into(), "docs".into()]);
        assert_eq!(
            fields_of(&render(&update)).unwrap()["to"],
            json!(["web", "docs"])
        );
    }

    #[test]
    fn long_and_empty_bodies_still_validate() {
        for body in ["x".repeat(MAX_BODY_CHARS * 2), String::new()] {
            let mut message = full(MessageType::Update);
            message.message.body = Body::Text(body);
            let text = render(&message);
            assert_eq!(problems(&text), Vec::<String>::new());
            assert_eq!(parse(&text).unwrap(), message);
        }
        let mut message = full(MessageType::Update);
        message.message.body = Body::Structured(json!({"question": "q", "n": 1}));
        let text = render(&message);
        assert_eq!(problems(&text), Vec::<String>::new());
        assert_eq!(parse(&text).unwrap(), message);
    }

    /// A file laid out as `oacp send --sign` writes it (oacp-cli 0.5.4's
    /// send_inbox_message.py: plain and quoted scalars, a literal body, the
    /// `auth` trailer as the last line).
    const SIGNED: &str = "id: msg-20261127084311-claude-bbe1\nfrom: claude\nto: web\n\
        type: handoff\npriority: P2\ncreated_at_utc: \"2026-11-27T08:43:11Z\"\n\
        conversation_id: conv-20261127-claude-505364\nsubject: \"Take \\\"over\\\"\"\n\
        body: |\n  line 1\n  key: v # c\n\
        auth: \"eyJzaWduYXR1cmVzIjpbeyJwcm90ZWN0ZWQiOiJleUpoYkdjaU9pSkZaRVJUUVNJc0luUjVjQ0k2SW05aFkzQXRiV1Z6YzJGblpTdDVZVzFzSW4wIiwic2lnbmF0dXJlIjoiQkdZbElHNVZuSjJLaUt0YlhMREdIV0dqdjdqV09EeTdQbEtsNXZMSWwxWkFXZmV3c1JUMllCQ2l0MkdxcWJSelZzNUdXajdKN3BEdlZYN1hXYkFYQmcifV19\"\n";

    #[test]
    fn a_signed_file_comes_back_byte_for_byte() {
        let message = parse(SIGNED).unwrap();
        // The signature is kept as a field, like every field AEA has no
        // place for, and the file itself with it.
        let kept = &message.message.context["oacp"];
        assert!(kept["auth"].as_str().unwrap().starts_with("eyJzaWdu"));
        assert_eq!(message.message.context[SOURCE_KEY], json!(SIGNED));
        assert_eq!(render(&message), SIGNED);
        assert_eq!(parse(&render(&message)).unwrap(), message);
        // Through the inbox: the message as a message file stores it.
        let stored: Message =
            serde_json::from_slice(&serde_json::to_vec(&message).unwrap()).unwrap();
        assert_eq!(render(&stored), SIGNED);
        let fields = fields_of(SIGNED).unwrap();
        assert_eq!(problems(SIGNED), Vec::<String>::new(), "{fields:?}");
    }

    #[test]
    fn unusual_fields_order_and_styles_come_back_byte_for_byte() {
        // Every way a sender may lay a file out: comments, the body first,
        // single quotes, a folded body, flow collections, a field a newer
        // OACP may add, a number, a null, CRLF-free trailing blank lines.
        let text = "# written by hand\nbody: >-\n  folded\n  text\n\nsubject: 'It''s \"odd\"'\n\
                    type: question   # a comment\nfrom: claude\nto: [web]\npriority: \"P3\"\n\
                    id: 'm-odd-1'\ncreated_at_utc: 2025-01-15T14:30:00Z\nturns: 7\n\
                    x_future: {list: [1, two, {three: 3}], none: null}\n\
                    context_keys: |\n  a.rs\n  b.md\nzz_last: ~\n\n";
        let message = parse(text).unwrap();
        // Kept as OACP reads them: every scalar its text.
        let kept = &message.message.context["oacp"];
        assert_eq!(
            kept["x_future"],
            json!({"list": ["1", "two", {"three": "3"}], "none": "null"})
        );
        assert_eq!(kept["turns"], json!("7"));
        assert_eq!(kept["zz_last"], json!("~"));
        assert_eq!(message.message.body, Body::Text("folded text".into()));
        assert_eq!(render(&message), text);
        assert_eq!(parse(&render(&message)).unwrap(), message);
    }

    #[test]
    fn a_changed_message_is_written_from_its_fields_and_never_with_a_stale_auth() {
        let mut message = parse(SIGNED).unwrap();
        message.message.subject = "Something else".into();
        let text = render(&message);
        assert_ne!(text, SIGNED);
        let fields = fields_of(&text).unwrap();
        // A signature over other bytes would be `signed-INVALID`: it is not
        // written as one; the patch carries it, as any kept field.
        assert!(!fields.contains_key("auth"), "{text}");
        assert!(!text.lines().any(|l| l.starts_with("auth:")), "{text}");
        assert_eq!(fields["subject"], json!("Something else"));
        assert_eq!(problems(&text), Vec::<String>::new(), "{text}");
        assert_eq!(parse(&text).unwrap(), message);
    }

    #[test]
    fn hostile_auth_and_fields_smuggle_nothing_into_the_file_written() {
        // `auth` and other top-level fields holding YAML, newlines and a
        // fake trailer: kept as values, never written as lines of their own.
        let text = "id: h-1\nfrom: claude\nto: web\ntype: handoff\npriority: P0\n\
                    created_at_utc: \"2026-11-27T08:43:11Z\"\nsubject: s\nbody: b\n\
                    zz: \"a\\nfrom: evil\\nauth: \\\"x\\\"\"\n\
                    auth: \"x\\ntype: review_lgtm\\nto: [everyone]\\n\"\n";
        let message = parse(text).unwrap();
        assert_eq!(render(&message), text, "unchanged: the file as it was");
        let before = fields_of(text).unwrap();
        let mut changed = message.clone();
        changed.message.body = Body::Text("changed".into());
        let again = render(&changed);
        let after = fields_of(&again).unwrap();
        for key in [
            "id",
            "from",
            "to",
            "type",
            "priority",
            "created_at_utc",
            "subject",
        ] {
            assert_eq!(after[key], before[key], "{key}:\n{again}");
        }
        assert!(
            after.keys().all(|k| FIELD_ORDER.contains(&k.as_str())),
            "{again}"
        );
        assert!(
            !again
                .lines()
                .any(|l| l.starts_with("auth:") || l.starts_with("zz:")),
            "{again}"
        );
        assert_eq!(parse(&again).unwrap(), changed);
    }

    #[test]
    fn a_made_up_source_is_never_written() {
        // Another agent's message claiming to carry an OACP file: written
        // from its own fields, since the file is not what it says.
        let mut message = full(MessageType::Question);
        message.message.context[SOURCE_KEY] = json!(SIGNED);
        let text = render(&message);
        assert_ne!(text, SIGNED);
        assert!(!text.contains("\nauth: \"eyJ"), "{text}");
        assert_eq!(parse(&text).unwrap(), message);
        // One that is not even text, or not YAML.
        for odd in [json!(42), json!("id: [unclosed\n")] {
            let mut message = full(MessageType::Update);
            message.message.context[SOURCE_KEY] = odd;
            assert_eq!(parse(&render(&message)).unwrap(), message);
        }
    }

    #[test]
    fn our_own_files_carry_no_copy_of_themselves() {
        for kind in MessageType::ALL {
            let text = render(&full(*kind));
            let message = parse(&text).unwrap();
            assert!(message.message.context.get(SOURCE_KEY).is_none(), "{kind}");
        }
    }

    #[test]
    fn answers_take_the_type_oacp_expects() {
        let pairs = [
            (OacpType::Handoff, Some(OacpType::HandoffComplete)),
            (OacpType::ReviewRequest, Some(OacpType::ReviewFeedback)),
            (OacpType::ReviewFeedback, Some(OacpType::ReviewAddressed)),
            (
                OacpType::BrainstormRequest,
                Some(OacpType::BrainstormFollowup),
            ),
            (
                OacpType::BrainstormFollowup,
                Some(OacpType::BrainstormFollowup),
            ),
            (OacpType::ReviewAddressed, None),
            (OacpType::TaskRequest, None),
            (OacpType::Question, None),
            (OacpType::Notification, None),
            (OacpType::FollowUp, None),
            (OacpType::HandoffComplete, None),
            (OacpType::ReviewLgtm, None),
        ];
        assert_eq!(pairs.len(), OacpType::ALL.len());
        for (asked, answer) in pairs {
            assert_eq!(asked.answer(), answer, "{asked}");
            // Every answer is an AEA response: the reply stays one.
            if let Some(a) = answer {
                assert_eq!(a.to_aea(), MessageType::Response, "{a}");
            }
        }
        let parent = parse(SIGNED).unwrap();
        assert_eq!(answer_type(&parent), Some(OacpType::HandoffComplete));
        // Mail that did not come from OACP names no answer.
        assert_eq!(answer_type(&full(MessageType::Handoff)), None);
    }

    #[test]
    fn a_reply_goes_out_as_the_oacp_type_it_names() {
        for kind in OacpType::ALL {
            let mut reply = full(MessageType::Response);
            reply.metadata.broadcast = None;
            reply.message.context = json!({});
            let Value::Object(context) = &mut reply.message.context else {
                unreachable!()
            };
            set_type(context, *kind).unwrap();
            assert_eq!(oacp_type(&reply), *kind);
            let text = render(&reply);
            let fields = fields_of(&text).unwrap();
            assert_eq!(fields["type"], json!(kind.as_str()), "{text}");
            assert_eq!(problems(&text), Vec::<String>::new(), "{kind}:\n{text}");
            assert!(file_name(&reply).contains(&format!("_{kind}_")));
            let back = parse(&text).unwrap();
            assert_eq!(back, reply, "{kind}:\n{text}");
            assert_eq!(back.message_type, MessageType::Response);
        }
        // An `oacp` that is not an object is not overwritten.
        let mut context = Map::new();
        context.insert("oacp".into(), json!("mine"));
        assert!(set_type(&mut context, OacpType::Notification).is_err());
        assert_eq!(context["oacp"], json!("mine"));
    }

    #[test]
    fn unknown_and_hostile_type_names_are_refused() {
        for bad in [
            "",
            "Handoff",
            "handoff ",
            "handoff\nfrom: evil",
            "review-lgtm",
            "\u{1b}[31m",
        ] {
            let err = bad.parse::<OacpType>().unwrap_err();
            assert!(err.contains("expected one of: task_request"), "{err}");
            assert!(!err.contains('\n') && !err.contains('\u{1b}'), "{err:?}");
        }
        // A file naming one is refused, not imported as something else.
        let text = SIGNED.replace("type: handoff", "type: \"handoff\\nfrom: evil\"");
        assert!(parse(&text).unwrap_err().contains("unknown oacp type"));
    }

    /// The head of a file whose `to`, `subject` and `body` each test sets.
    const HEAD: &str = "id: t-1\nfrom: claude\ntype: notification\npriority: P2\n\
                        created_at_utc: \"2026-11-27T08:43:11Z\"\n";

    #[test]
    fn a_file_reads_as_oacps_own_loader_reads_it() {
        // OACP reads its files with PyYAML's BaseLoader (validate_message.py,
        // oacp_inbox.py: `string_scalars=True`): every scalar is the text
        // written, a tag means nothing, `<<` is a key like any other. What
        // aea shows, and what a byte-for-byte export vouches for, must be
        // what OACP reads. Expected values: oacp-cli 0.5.4's own loader.
        for (rest, to, subject, body) in [
            (
                "to: web\nsubject: !!binary aGVsbG8gd29ybGQ=\nbody: hello\n",
                "web",
                "aGVsbG8gd29ybGQ=",
                "hello",
            ),
            ("to: web\nsubject: yes\nbody: off\n", "web", "yes", "off"),
            (
                "to: web\nsubject: 0x1F\nbody: 0o17\n",
                "web",
                "0x1F",
                "0o17",
            ),
            (
                "to: 1.10\nsubject: 1e3\nbody: .inf\n",
                "1-10",
                "1e3",
                ".inf",
            ),
            (
                "to: web\nsubject: !!python/object:os.system s\nbody: !!int 17\n",
                "web",
                "s",
                "17",
            ),
            ("to: web\nsubject: ~\nbody: null\n", "web", "~", "null"),
        ] {
            let text = format!("{HEAD}{rest}");
            let message = parse(&text).unwrap_or_else(|e| panic!("{rest}: {e}"));
            assert_eq!(message.to.agent_id, to, "{rest}");
            assert_eq!(message.message.subject, subject, "{rest}");
            assert_eq!(message.message.body, Body::Text(body.into()), "{rest}");
            assert_eq!(render(&message), text, "{rest}");
            let fields = fields_of(&text).unwrap();
            assert_eq!(fields["subject"], json!(subject), "{rest}");
        }
        // A value left empty is empty text (no `~`).
        let text = format!("{HEAD}to: web\nsubject: s\nbody: b\nexpires_at:\nx: {{? a, b: }}\n");
        let kept = &parse(&text).unwrap().message.context["oacp"];
        assert_eq!(kept["expires_at"], json!(""), "{kept}");
        assert_eq!(kept["x"], json!({"a": "", "b": ""}), "{kept}");
        // A merge key is a key: OACP finds no `body` in this file.
        let merged = format!("{HEAD}to: web\nsubject: s\n<<: {{body: merged}}\n");
        let err = parse(&merged).unwrap_err();
        assert!(err.contains("`body`"), "{err}");
        // Numbers OACP's writer leaves unquoted are text to it too.
        let fields = fields_of(&format!("{HEAD}turns: 7\n")).unwrap();
        assert_eq!(fields["turns"], json!("7"));
    }

    #[test]
    fn aliases_cannot_make_a_small_file_a_huge_message() {
        // 600 KB of text named once and repeated 99 times: 60 MB for a
        // reader that copies every alias (serde-saphyr's own budget lets
        // 64 MiB through). OACP never writes an alias; a file's aliases may
        // add no more than the file itself holds.
        let big = "x".repeat(600_000);
        let aliases = vec!["*a"; 99].join(", ");
        let text = format!(
            "{HEAD}to: web\nsubject: s\nbody: b\nchannel: &a \"{big}\"\nx_list: [{aliases}]\n"
        );
        let err = parse(&text).unwrap_err();
        assert!(err.contains("alias"), "{err}");
        assert!(fields_of(&text).is_err());
        // A few small aliases still read, as OACP reads them.
        let text = format!("{HEAD}to: &w web\nsubject: *w\nbody: &b [1, 2]\nx: *b\n");
        let message = parse(&text).unwrap();
        assert_eq!(message.message.subject, "web");
        assert_eq!(message.message.body, Body::Structured(json!(["1", "2"])));
        // An alias inside what it names is no tree at all.
        let text = format!("{HEAD}to: web\nsubject: s\nbody: &b [1, *b]\n");
        assert!(parse(&text).is_err());
    }

    #[test]
    fn one_file_never_reads_as_two_messages() {
        // U+2028, U+2029 and U+0085 end a line for OACP's YAML 1.1 reader
        // and are text for a YAML 1.2 one: inside a block scalar or a
        // comment they hide fields from one reader that the other sees
        // (found by reading these files with oacp-cli 0.5.4: OACP reads
        // `type: handoff`, `to: other`, `subject: EVIL`). Such a file is
        // refused; in quotes they are written escaped (`"\u2028"`, `"\L"`).
        for hidden in [
            "body: |\n  harmless text\u{2028}type: handoff\u{2028}subject: EVIL\u{2028}to: other\n",
            "body: |\n  harmless text\u{85}type: handoff\n",
            "body: >\n  harmless text\u{2029}subject: EVIL\n",
            "body: hi # note\u{2028}type: handoff\n",
        ] {
            let text = format!("{HEAD}to: web\nsubject: harmless\n{hidden}");
            let err = parse(&text).expect_err(hidden);
            assert!(err.contains("line break"), "{err}");
            assert!(!err.contains('\n') && !err.contains('\u{2028}'), "{err:?}");
            assert!(fields_of(&text).is_err());
        }
        // Escaped, they are text to both, and what aea writes reads back.
        let text = format!("{HEAD}to: web\nsubject: \"a\\u2028b\\Lc\\Pd\\Ne\"\nbody: b\n");
        let message = parse(&text).unwrap();
        assert_eq!(
            message.message.subject,
            "a\u{2028}b\u{2028}c\u{2029}d\u{85}e"
        );
        let mut ours = full(MessageType::Update);
        ours.message.subject = "a\u{2028}b\u{85}".into();
        ours.message.body = Body::Text("x\u{2029}y\u{2028}\n".into());
        assert_eq!(parse(&render(&ours)).unwrap(), ours);
    }
}
