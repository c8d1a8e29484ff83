//! Roo mailbox messages (`reference/roo-mailbox.md`): `.roo/mailbox/to-<slug>.md`,
//! Markdown with `from`, `timestamp`, `id` and `priority` front matter,
//! converted to and from [`Message`] without loss.
//!
//! Roo has no subject, type, recipient field or conversation: the
//! recipient is the file name's slug; the subject is a bold first line
//! (`**Subject**` and a blank line, as in the protocol's example), which
//! is not part of the body, else the body's first line; and an imported
//! message is a `request` (the protocol's messages are
//! "actionable requests or notifications"). Front-matter keys Roo does not
//! define are kept in `message.context.roo`. What AEA has and Roo does not
//! travels as one more front-matter key, `aea-patch` (see [`Patch`]), which
//! a Roo agent reads as one more header.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::{Patch, yaml_quoted};
use crate::message::{
    self, Body, Content, MAX_SUBJECT_CHARS, Message, MessageType, Metadata, PROTOCOL_VERSION,
    Party, Priority,
};

pub(crate) const CONTEXT_KEY: &str = "roo";
const PATCH_KEY: &str = "aea-patch";

/// The recipient slug of a mailbox file name, `to-<slug>.md`.
pub(crate) fn slug_of(name: &str) -> Option<&str> {
    name.strip_prefix("to-")
        .and_then(|s| s.strip_suffix(".md"))
        .filter(|s| !s.is_empty())
}

pub(crate) fn file_name(message: &Message) -> String {
    format!("to-{}.md", message.to.agent_id)
}

/// Splits `---\n<front matter>---\n<body>`.
fn split(text: &str) -> Result<(&str, &str), String> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("does not start with `---` front matter")?;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Ok((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    Err("the front matter has no closing `---`".into())
}

/// Reads one Roo mailbox file; `slug` is the recipient from its name. A
/// file saved with a UTF-8 byte order mark or Windows line ends (CRLF)
/// reads as the same file without them.
pub(crate) fn parse(text: &str, slug: &str) -> Result<Message, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let unix;
    let text = if text.contains("\r\n") {
        unix = text.replace("\r\n", "\n");
        unix.as_str()
    } else {
        text
    };
    let (front, rest) = split(text)?;
    let value: Value = serde_saphyr::from_str(front).map_err(|e| {
        format!(
            "front matter is not valid YAML: {}",
            e.to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        )
    })?;
    let mut fields = match value {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        _ => return Err("the front matter is not a mapping".into()),
    };
    let patch = match fields.remove(PATCH_KEY) {
        Some(Value::String(json)) => Some(
            serde_json::from_str::<Patch>(&json)
                .map_err(|e| format!("unreadable {PATCH_KEY}: {e}"))?,
        ),
        Some(_) => return Err(format!("{PATCH_KEY} is not text")),
        None => None,
    };
    let body = rest.strip_prefix('\n').unwrap_or(rest);
    let message = from_fields(fields, body, slug)?;
    super::finish(message, patch.as_ref(), PATCH_KEY)
}

fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn required(fields: &mut Map<String, Value>, key: &str) -> Result<String, String> {
    let value = fields
        .remove(key)
        .ok_or_else(|| format!("missing required header `{key}`"))?;
    text_of(&value)
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| format!("header `{key}` is empty or not a single value"))
}

/// The subject Roo does not have: the body's first line, without Markdown
/// emphasis and heading marks.
fn subject_of(body: &str) -> String {
    let line = body
        .lines()
        .map(|l| {
            l.trim()
                .trim_matches(|c| matches!(c, '*' | '#' | '_'))
                .trim()
        })
        .find(|l| !l.is_empty())
        .unwrap_or("(no subject)");
    line.chars().take(MAX_SUBJECT_CHARS).collect()
}

/// A bold first line, `**Subject**`, followed by a blank line or nothing:
/// the subject a Roo agent reads first. Returns it and the body after it.
fn heading(text: &str) -> Option<(String, &str)> {
    let (line, rest) = text.split_once('\n').unwrap_or((text, ""));
    let inner = line.strip_prefix("**")?.strip_suffix("**")?;
    let rest = match rest {
        "" => "",
        _ => rest.strip_prefix('\n')?,
    };
    let ok = !inner.trim().is_empty()
        && inner.trim() == inner
        && !inner.contains('*')
        && inner.chars().count() <= MAX_SUBJECT_CHARS;
    ok.then(|| (inner.to_string(), rest))
}

fn from_fields(mut fields: Map<String, Value>, text: &str, slug: &str) -> Result<Message, String> {
    let (subject, body) = heading(text).unwrap_or_else(|| (subject_of(text), text));
    let mut roo = Map::new();
    let from = required(&mut fields, "from")?;
    let id = required(&mut fields, "id")?;
    let timestamp = required(&mut fields, "timestamp")?;
    let time = message::parse_time(timestamp.trim())
        .ok_or_else(|| format!("timestamp {timestamp:?} is not an ISO 8601 time"))?;
    let priority = match fields.remove("priority") {
        None => Priority::Normal,
        Some(v) => match text_of(&v).as_deref().map(str::trim) {
            Some("high") => Priority::High,
            Some("normal") => Priority::Normal,
            _ => return Err("header `priority` must be `high` or `normal`".into()),
        },
    };
    let from_id = if message::check_agent_id(&from).is_ok() {
        from
    } else {
        roo.insert("from".into(), Value::String(from.clone()));
        message::sanitize_agent_id(&from)
    };
    let to_id = if message::check_agent_id(slug).is_ok() {
        slug.to_string()
    } else {
        roo.insert("to".into(), Value::String(slug.to_string()));
        message::sanitize_agent_id(slug)
    };
    let message_id = if message::check_message_id(&id).is_ok() {
        id
    } else {
        let digest = <sha2::Sha256 as sha2::Digest>::digest(id.as_bytes());
        roo.insert("id".into(), Value::String(id));
        digest[..16].iter().fold("roo-".to_string(), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
    };
    let formatted = message::format_time(time);
    if formatted != timestamp {
        roo.insert("timestamp".into(), Value::String(timestamp));
    }
    roo.extend(fields);
    let mut context = Map::new();
    if !roo.is_empty() {
        context.insert(CONTEXT_KEY.into(), Value::Object(roo));
    }
    Ok(Message {
        protocol_version: PROTOCOL_VERSION.into(),
        message_id,
        message_type: MessageType::Request,
        timestamp: formatted,
        priority,
        requires_response: false,
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
            body: Body::Text(body.to_string()),
            context: Value::Object(context),
            attachments: Vec::new(),
            extra: serde_json::Map::new(),
        },
        metadata: Metadata::default(),
        expires_at: None,
        signature: None,
        digest: None,
        extra: serde_json::Map::new(),
    })
}

/// Writes a message as a Roo mailbox file that [`parse`] reads back as
/// exactly `message`. Its name is [`file_name`].
pub(crate) fn render(message: &Message) -> String {
    let kept = match message.message.context.get(CONTEXT_KEY) {
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    };
    let pick = |key: &str, ours: &str| {
        kept.get(key)
            .and_then(text_of)
            .unwrap_or_else(|| ours.to_string())
    };
    let priority = match message.priority {
        Priority::Urgent | Priority::High => "high",
        Priority::Normal | Priority::Low => "normal",
    };
    let mut front = format!(
        "from: {}\ntimestamp: {}\nid: {}\npriority: {priority}\n",
        yaml_quoted(&pick("from", &message.from.agent_id)),
        yaml_quoted(&pick("timestamp", &message.timestamp)),
        yaml_quoted(&pick("id", &message.message_id)),
    );
    for (key, value) in &kept {
        if !matches!(
            key.as_str(),
            "from" | "timestamp" | "id" | "to" | "priority"
        ) {
            // JSON is YAML (flow style): the value reads back as it was.
            let _ = writeln!(
                front,
                "{}: {}",
                yaml_quoted(key),
                serde_json::to_string(value).expect("a JSON value always serialises")
            );
        }
    }
    let body = message.message.body.to_text();
    // The subject as a Roo agent reads it: a bold first line, unless the
    // body's own first line is the subject already.
    let subject = &message.message.subject;
    let body = if heading(&body).is_some() || subject_of(&body) != *subject {
        format!("**{subject}**\n\n{body}")
    } else {
        body
    };
    let slug = message.to.agent_id.clone();
    let plain = format!("---\n{front}---\n\n{body}");
    let wanted = serde_json::to_value(message).expect("a message always serialises");
    let patch = match parse_unpatched(&plain, &slug) {
        Some(read) => Patch::between(&read, &wanted),
        None => Patch {
            set: std::iter::once((String::new(), wanted)).collect(),
            unset: Vec::new(),
        },
    };
    if patch.is_empty() {
        return plain;
    }
    let json = serde_json::to_string(&patch).expect("a patch always serialises");
    format!(
        "---\n{front}{PATCH_KEY}: {}\n---\n\n{body}",
        yaml_quoted(&json)
    )
}

fn parse_unpatched(text: &str, slug: &str) -> Option<Value> {
    let (front, rest) = split(text).ok()?;
    let Value::Object(fields) = serde_saphyr::from_str::<Value>(front).ok()? else {
        return None;
    };
    let message = from_fields(fields, rest.strip_prefix('\n').unwrap_or(rest), slug).ok()?;
    Some(serde_json::to_value(&message).expect("a message always serialises"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn corpus(kind: &str) -> Vec<(String, String)> {
        super::super::test_corpus("roo", kind)
    }

    fn full(kind: MessageType, priority: Priority) -> Message {
        serde_json::from_value(json!({
            "protocol_version": "1.0",
            "message_id": "5b0e8e8e-1111-4222-8333-444455556666",
            "message_type": kind,
            "timestamp": "2026-11-21T22:48:14.123Z",
            "priority": priority,
            "requires_response": true,
            "from": {"agent_id": "api", "repo_path": "/r/api", "user": "ana"},
            "to": {"agent_id": "tester"},
            "message": {
                "subject": "Port \"8080\"?",
                "body": "---\nnot front matter\n\u{7f}",
                "context": {"q": [1, null]},
                "attachments": [{"path": "a"}]
            },
            "metadata": {"conversation_id": "c1", "reply_to": "r1", "tags": ["t"]},
            "expires_at": "2026-11-22T00:00:00Z"
        }))
        .unwrap()
    }

    #[test]
    fn every_type_and_priority_survives_a_round_trip_through_roo() {
        for kind in MessageType::ALL {
            for priority in Priority::ALL {
                let message = full(*kind, *priority);
                let text = render(&message);
                assert!(text.starts_with("---\nfrom: \"api\"\n"), "{text}");
                assert_eq!(parse(&text, "tester").unwrap(), message, "{text}");
            }
        }
    }

    #[test]
    fn the_reference_example_imports_and_comes_back_as_it_was() {
        for (name, text) in corpus("valid") {
            let slug = slug_of(&name).unwrap();
            let message = parse(&text, slug).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(message.to.agent_id, slug);
            let again = render(&message);
            assert_eq!(parse(&again, slug).unwrap(), message, "{name}:\n{again}");
        }
        let (_, text) = &corpus("valid")[1];
        let m = parse(text, "tester").unwrap();
        assert_eq!(m.message_id, "msg-a4b1c9e0");
        assert_eq!(m.from.agent_id, "nestjs-developer");
        assert_eq!(m.priority, Priority::High);
        assert_eq!(m.timestamp, "2025-07-07T11:15:00.000Z");
        assert_eq!(m.message.subject, "Request: Integration Test");
        assert!(m.message.body.to_text().starts_with("Please run"));
        // The body a Roo agent reads comes back byte for byte (the front
        // matter's quoting may differ).
        let body = |t: &str| t.split_once("---\n\n").unwrap().1.to_string();
        assert_eq!(body(&render(&m)), body(text));
        let (_, text) = &corpus("valid")[0];
        let m = parse(text, "architect").unwrap();
        assert_eq!(m.priority, Priority::Normal);
        assert!(m.message_id.starts_with("roo-"));
        assert_eq!(
            m.message.context["roo"],
            json!({"id": "msg with spaces", "timestamp": "2025-07-07T12:00:00+02:00", "mode": "architect"})
        );
    }

    /// Saved by an editor on Windows: a byte order mark, CRLF line ends.
    #[test]
    fn a_bom_and_crlf_read_as_the_same_file_without_them() {
        let mut m = full(MessageType::Question, Priority::Normal);
        m.message.subject = "Which port?".into();
        m.message.body = Body::Text("line one\nline two".into());
        let text = render(&m);
        let windows = format!("\u{feff}{}", text.replace('\n', "\r\n"));
        assert_eq!(parse(&windows, "tester").unwrap(), m, "{windows:?}");
        assert_eq!(parse(&format!("\u{feff}{text}"), "tester").unwrap(), m);
    }

    #[test]
    fn a_roo_agent_reads_the_subject_first() {
        let mut m = full(MessageType::Request, Priority::High);
        m.message.subject = "Run the tests".into();
        m.message.body = Body::Text("please".into());
        let text = render(&m);
        assert!(
            text.contains("---\n\n**Run the tests**\n\nplease"),
            "{text}"
        );
        assert_eq!(parse(&text, "tester").unwrap(), m);
        // Bodies that look like a heading, or repeat it, still come back.
        for body in [
            "**Run the tests**\n\nplease",
            "**other**",
            "Run the tests\nmore",
            "",
        ] {
            m.message.body = Body::Text(body.into());
            assert_eq!(parse(&render(&m), "tester").unwrap(), m, "{body:?}");
        }
    }

    #[test]
    fn broken_files_are_refused_with_a_reason() {
        let corpus = corpus("broken");
        assert_eq!(corpus.len(), 5);
        for (name, text) in corpus {
            let err = parse(&text, "x1").expect_err(&name);
            assert!(!err.contains('\n'), "{name}: {err}");
        }
    }
}
