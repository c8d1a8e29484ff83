//! The AEA message: the v1.0 wire format (SPEC §3.1), validation and limits
//! (§3.2), reading the older `0.1.0` shape (§3.3), agent ids and file names
//! (§2). Pure data: no file-system access here.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::words::word_enum;

pub const PROTOCOL_VERSION: &str = "1.0";
/// Default size limit of one message file (SPEC §3.2).
pub const MAX_MESSAGE_BYTES: u64 = 1024 * 1024;
pub const MAX_SUBJECT_CHARS: usize = 200;
pub const MAX_DEPTH: usize = 32;

word_enum! {
    /// Declared in processing order (SPEC §5.1): `Ord` sorts handoffs first.
    pub enum MessageType {
        Handoff = "handoff",
        Request = "request",
        Issue = "issue",
        Question = "question",
        Update = "update",
        Response = "response",
    }
}

word_enum! {
    /// Declared in processing order: `Ord` sorts urgent first.
    pub enum Priority {
        Urgent = "urgent",
        High = "high",
        Normal = "normal",
        Low = "low",
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Message {
    pub protocol_version: String,
    pub message_id: String,
    pub message_type: MessageType,
    pub timestamp: String,
    pub priority: Priority,
    pub requires_response: bool,
    pub from: Party,
    pub to: Party,
    pub message: Content,
    pub metadata: Metadata,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// The sender's Ed25519 signature (SPEC §15.2); a v1.0 reader ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<Signature>,
    /// What the signature covers: [`signed_digest`] of the file as read.
    /// Set when a signed file is parsed; never written.
    #[serde(skip)]
    pub digest: Option<[u8; 32]>,
    /// Top-level keys of a v1.0 file this version has no field for, in
    /// file order: the 0.1.0 copy that mail to a bash AEA recipient
    /// carries ([`Message::add_legacy_copy`]) and whatever a sender or a
    /// later aea adds. Never read as the message's fields (a v1.0 file is
    /// read by its v1.0 fields only, whatever these say); kept so that a
    /// message written again (the `sent/` copy, sync, export) loses
    /// nothing and its signature, which covers them, still verifies.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `signature`: who signed (`key`, `ed25519:<hex>`) and the signature over
/// [`signed_digest`] (`value`, hex).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Signature {
    pub alg: String,
    pub key: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Party {
    pub agent_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// In `from` of signed mail: the sender's repository also sends
    /// unsigned mail (the bash AEA's own `aea-send.sh` is still there), so
    /// its unsigned mail is no forgery. Said under the sender's signature;
    /// a receiver only names it to a person, who decides with `aea agents
    /// trust ID --allow-unsigned` (SPEC §15.2).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub also_unsigned: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Content {
    pub subject: String,
    #[serde(default)]
    pub body: Body,
    #[serde(default = "empty_object")]
    pub context: Value,
    #[serde(default)]
    pub attachments: Vec<Value>,
    /// Keys of `message` this version has no field for, in file order: the
    /// type-specific fields of the protocol's own examples (`question`,
    /// `changes`, `issue_description`, `handoff_details`, `next_steps`, …)
    /// and whatever a sender adds. Kept so that nothing a sender wrote is
    /// lost when aea writes the message again, shown by `show` as
    /// untrusted text like the body, and scanned by the hard stops.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `message.body` is text in v1.0, but older writers put structured keys there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum Body {
    Text(String),
    Structured(Value),
}

impl Default for Body {
    fn default() -> Self {
        Body::Text(String::new())
    }
}

impl Body {
    /// The body as text; structured bodies are rendered as indented JSON.
    pub fn to_text(&self) -> String {
        match self {
            Body::Text(s) => s.clone(),
            Body::Structured(v) => serde_json::to_string_pretty(v).unwrap_or_default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Metadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broadcast: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refs: Option<Value>,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

impl Message {
    pub fn to_json(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("a message always serialises");
        bytes.push(b'\n');
        bytes
    }

    pub fn is_legacy(&self) -> bool {
        self.protocol_version != PROTOCOL_VERSION
    }

    pub fn sent_at(&self) -> Option<DateTime<Utc>> {
        parse_time(&self.timestamp)
    }

    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        self.expires_at
            .as_deref()
            .and_then(parse_time)
            .is_some_and(|t| t <= now)
    }

    /// The conversation this message belongs to: its own id when it starts one.
    pub fn conversation(&self) -> &str {
        self.metadata
            .conversation_id
            .as_deref()
            .unwrap_or(&self.message_id)
    }

    /// Adds the 0.1.0 fields the original bash AEA's readers parse, so mail
    /// to a bash recipient shows there with its type, priority, sender and
    /// subject, and is offered for automatic handling exactly when its
    /// type and priority allow (see [`LEGACY_COPY_KEYS`]). Call it before
    /// signing: the signature covers the copy like every other field.
    pub fn add_legacy_copy(&mut self) {
        let copy = serde_json::json!({
            "sender": {"agent_id": self.from.agent_id},
            "recipient": {"agent_id": self.to.agent_id},
            "routing": {
                "priority": self.priority.as_str(),
                "requires_response": self.requires_response,
            },
            "content": {
                "subject": self.message.subject,
                "body": self.message.body.to_text(),
            },
        });
        let Value::Object(copy) = copy else {
            unreachable!("a json! object is an object")
        };
        self.extra.extend(copy);
    }
}

/// The top-level keys of the 0.1.0 copy ([`Message::add_legacy_copy`]):
/// exactly the 0.1.0 paths the bash AEA's readers parse besides
/// `message_type`, which both versions share. Its `aea-check.sh` lists
/// `.message_type`, `.routing.priority`, `.sender.agent_id`,
/// `.content.subject` (defaults "unknown", "normal", "unknown", "No
/// subject": what v1.0 mail showed there before); its
/// `process-messages-iterative.sh` reads `.routing.requires_response` too,
/// prints `.content`, and offers a message for automatic handling by type
/// and `.routing.priority` (an issue only below high); its
/// `aea-validate-message.sh` wants `.recipient.agent_id` and
/// `.content.body`. `show --json` leaves them out: they repeat fields the
/// message already shows.
pub const LEGACY_COPY_KEYS: [&str; 4] = ["sender", "recipient", "routing", "content"];

/// Times as messages carry them: kept with durations, in the ground layer,
/// which the flags that take a time or a duration share.
pub use crate::duration::{format_time, parse_time};

// ---------------------------------------------------------------------------
// Agent ids

/// Checks an agent id against `^[A-Za-z0-9][A-Za-z0-9_-]{1,63}$` (SPEC §2).
pub fn check_agent_id(id: &str) -> Result<(), &'static str> {
    let bytes = id.as_bytes();
    if bytes.len() < 2 {
        return Err("it must be at least 2 characters long");
    }
    if bytes.len() > 64 {
        return Err("it must be at most 64 characters long");
    }
    if !bytes[0].is_ascii_alphanumeric() {
        return Err("it must start with a letter or digit");
    }
    if !bytes
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
    {
        return Err("only letters, digits, `_` and `-` are allowed");
    }
    Ok(())
}

/// Turns a directory name into a valid agent id (the default id, SPEC §2).
pub fn sanitize_agent_id(name: &str) -> String {
    let mapped: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let trimmed = mapped.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
    let mut id: String = trimmed.chars().take(64).collect();
    if id.len() < 2 {
        id = format!("agent{id}");
    }
    id
}

/// Message ids are printed in hook output and used in file-system lookups:
/// keep them to a plain alphabet.
pub fn check_message_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > 128 {
        return Err("message_id must be 1-128 characters".into());
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
    {
        return Err("message_id may only hold letters, digits and `-_.:`".into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// File names

/// `message-<YYYYMMDDTHHMMSSmmmZ>-from-<sender>-<rand>.json`
pub fn file_name(ts: DateTime<Utc>, sender: &str, rand: &str) -> String {
    format!(
        "message-{}-from-{sender}-{rand}.json",
        ts.format("%Y%m%dT%H%M%S%3fZ")
    )
}

/// Whether a directory entry is a message file at all (SPEC §2: only
/// `message-*.json` directly inside `.aea/`). The protocol's names are
/// lower case; `MESSAGE-x.JSON` is not a message.
#[allow(clippy::case_sensitive_file_extension_comparisons)]
pub fn is_message_file_name(name: &str) -> bool {
    name.starts_with("message-") && name.ends_with(".json")
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameParts<'a> {
    pub time: DateTime<Utc>,
    pub sender: &'a str,
    pub rand: Option<&'a str>,
}

/// Parses a message file name, accepting the seconds-only form and names
/// without `<rand>` written by older tools.
pub fn parse_file_name(name: &str) -> Option<NameParts<'_>> {
    let inner = name.strip_prefix("message-")?.strip_suffix(".json")?;
    let (ts, rest) = inner.split_once("-from-")?;
    let time = match ts.len() {
        16 => NaiveDateTime::parse_from_str(ts, "%Y%m%dT%H%M%SZ").ok()?,
        19 => {
            let (secs, millis) = ts.split_at(15);
            let millis = millis.strip_suffix('Z')?;
            if !millis.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let base = NaiveDateTime::parse_from_str(secs, "%Y%m%dT%H%M%S").ok()?;
            base + chrono::Duration::milliseconds(millis.parse().ok()?)
        }
        _ => return None,
    }
    .and_utc();
    let (sender, rand) = match rest.rsplit_once('-') {
        Some((sender, rand))
            if rand.len() == 8
                && rand.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
                && check_agent_id(sender).is_ok() =>
        {
            (sender, Some(rand))
        }
        _ => (rest, None),
    };
    check_agent_id(sender).ok()?;
    Some(NameParts { time, sender, rand })
}

// ---------------------------------------------------------------------------
// Parsing and validation

/// The top-level fields a v1.0 file must have. The protocol's own examples
/// of each type (reference `aea-v1.0.md`, "Message Types") leave out
/// `requires_response` and `metadata`; those get the protocol's defaults
/// ([`default_requires_response`], an empty `metadata`) instead of a
/// rejection. Who sent a message, to whom, which and when cannot be
/// guessed, so the rest stays required.
const REQUIRED_V1: [&str; 8] = [
    "protocol_version",
    "message_id",
    "message_type",
    "timestamp",
    "priority",
    "from",
    "to",
    "message",
];

/// `requires_response` when a v1.0 file leaves it out. The protocol's
/// message format shows `true`, and its examples of questions, issues,
/// requests and handoffs, which leave the field out, are all answered
/// ("provides answer", "suggests fix", "responds with implementation
/// plan", user review). Its update example says `false` explicitly and an
/// update is acknowledged only "if `requires_response: true`"; a response
/// answering a response would never end. So: false for updates and
/// responses, true for the rest.
pub(crate) fn default_requires_response(message_type: MessageType) -> bool {
    !matches!(message_type, MessageType::Update | MessageType::Response)
}

/// Parses and validates a message file's bytes. `name` (the file name) fills
/// gaps in the older shape. The error is a one-line reason for `check`.
pub fn parse(bytes: &[u8], name: Option<&str>) -> Result<Message, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not valid JSON: {e}"))?;
    if depth(&value) > MAX_DEPTH {
        return Err(format!("JSON nested deeper than {MAX_DEPTH} levels"));
    }
    let Value::Object(object) = value else {
        return Err("not a JSON object".into());
    };
    let message = match object.get("protocol_version").and_then(Value::as_str) {
        Some(v) if v == "1" || v.starts_with("1.") => from_v1(object)?,
        _ if is_legacy_shape(&object) => from_legacy(&object, name)?,
        Some(v) => return Err(format!("unsupported protocol_version {v:?}")),
        None => return Err("missing required field `protocol_version`".into()),
    };
    validate(&message)?;
    Ok(message)
}

/// How deeply `value` nests arrays and objects.
pub fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn from_v1(mut object: Map<String, Value>) -> Result<Message, String> {
    if let Some(missing) = REQUIRED_V1.iter().find(|k| !object.contains_key(**k)) {
        return Err(format!("missing required field `{missing}`"));
    }
    // The signature covers the file as read, before any default is filled.
    let digest = object
        .contains_key("signature")
        .then(|| signed_digest(&object));
    if !object.contains_key("requires_response") {
        let message_type = object
            .get("message_type")
            .and_then(Value::as_str)
            .ok_or("message_type is not a string")?
            .parse::<MessageType>()?;
        object.insert(
            "requires_response".into(),
            default_requires_response(message_type).into(),
        );
    }
    object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let mut message: Message =
        serde_json::from_value(Value::Object(object)).map_err(|e| e.to_string())?;
    message.digest = digest;
    Ok(message)
}

/// What a message signature covers: SHA-256 over a domain tag and the
/// canonical JSON of every field of the file except `signature`.
///
/// Canonical means object keys sorted by their UTF-8 bytes, no whitespace,
/// strings and numbers as serde_json writes them. It is computed from the
/// parsed JSON value, not the file's bytes, so pretty-printing or key order
/// cannot matter, and it covers fields this version does not know, so a
/// field added by a sender (or by a later aea) is signed too: every byte a
/// reader acts on is in it. The tag keeps a message signature from ever
/// being valid as a receipt signature and the other way round.
pub(crate) fn signed_digest(object: &Map<String, Value>) -> [u8; 32] {
    use sha2::Digest;
    let mut text = String::from("aea-message-v1\n");
    canonical_object(object, &mut text, Some("signature"));
    sha2::Sha256::digest(text.as_bytes()).into()
}

/// Appends the canonical JSON of `value` (see [`signed_digest`]).
pub fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => canonical_object(map, out, None),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn canonical_object(map: &Map<String, Value>, out: &mut String, skip: Option<&str>) {
    let mut keys: Vec<&String> = map.keys().filter(|k| Some(k.as_str()) != skip).collect();
    keys.sort_unstable();
    out.push('{');
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(key.clone()).to_string());
        out.push(':');
        canonical(&map[key], out);
    }
    out.push('}');
}

fn is_legacy_shape(object: &Map<String, Value>) -> bool {
    object.get("protocol_version").and_then(Value::as_str) == Some("0.1.0")
        || (object.contains_key("sender") && object.contains_key("content"))
}

/// Maps the `0.1.0` shape of the older bash tools onto the v1.0 model (SPEC §3.3).
fn from_legacy(object: &Map<String, Value>, name: Option<&str>) -> Result<Message, String> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let field = |path: &[&str]| {
        let mut v = object.get(path[0]);
        for key in &path[1..] {
            v = v.and_then(|x| x.get(key));
        }
        v
    };
    let party = |key: &str| -> Result<Party, String> {
        match object.get(key) {
            Some(Value::String(id)) => Ok(Party {
                agent_id: id.clone(),
                repo_path: None,
                user: None,
                also_unsigned: false,
            }),
            Some(Value::Object(p)) => Ok(Party {
                agent_id: text(
                    p.get("agent_id")
                        .or_else(|| p.get("id"))
                        .or_else(|| p.get("name")),
                )
                .ok_or_else(|| format!("`{key}` has no agent_id"))?,
                repo_path: text(p.get("repo_path").or_else(|| p.get("path"))),
                user: text(p.get("user")),
                also_unsigned: false,
            }),
            _ => Err(format!("missing required field `{key}`")),
        }
    };
    let parts = name.and_then(parse_file_name);
    let message_id = text(object.get("message_id").or_else(|| object.get("id")))
        .or_else(|| name.map(|n| n.trim_end_matches(".json").to_string()))
        .ok_or("missing required field `message_id`")?;
    let message_type = text(object.get("message_type").or_else(|| object.get("type")))
        .ok_or("missing required field `message_type`")?
        .parse::<MessageType>()?;
    let priority = match text(field(&["routing", "priority"]).or_else(|| object.get("priority"))) {
        Some(p) => p.parse::<Priority>()?,
        None => Priority::Normal,
    };
    let timestamp = text(object.get("timestamp"))
        .or_else(|| parts.as_ref().map(|p| format_time(p.time)))
        .ok_or("missing required field `timestamp`")?;
    let body = match field(&["content", "body"]) {
        Some(Value::String(s)) => Body::Text(s.clone()),
        Some(v @ Value::Object(_)) => Body::Structured(v.clone()),
        _ => Body::default(),
    };
    Ok(Message {
        protocol_version: text(object.get("protocol_version")).unwrap_or_else(|| "0.1.0".into()),
        message_id,
        message_type,
        timestamp,
        priority,
        requires_response: field(&["routing", "requires_response"])
            .and_then(Value::as_bool)
            .unwrap_or(false),
        from: party("sender")?,
        to: party("recipient")?,
        message: Content {
            subject: text(field(&["content", "subject"]))
                .ok_or("missing required field `content.subject`")?,
            body,
            context: field(&["content", "context"])
                .cloned()
                .unwrap_or_else(empty_object),
            attachments: Vec::new(),
            // What else `content` carries is kept as in a v1.0 `message`.
            extra: field(&["content"])
                .and_then(Value::as_object)
                .map(|c| {
                    c.iter()
                        .filter(|(k, _)| !matches!(k.as_str(), "subject" | "body" | "context"))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                })
                .unwrap_or_default(),
        },
        metadata: Metadata {
            conversation_id: text(field(&["metadata", "conversation_id"])),
            reply_to: text(field(&["metadata", "in_reply_to"])),
            tags: field(&["metadata", "tags"])
                .and_then(Value::as_array)
                .map(|tags| tags.iter().filter_map(|t| text(Some(t))).collect())
                .unwrap_or_default(),
            broadcast: None,
            refs: None,
        },
        expires_at: None,
        signature: None,
        digest: None,
        extra: Map::new(),
    })
}

/// The checks of SPEC §3.2 that the type system does not already make.
pub fn validate(message: &Message) -> Result<(), String> {
    check_message_id(&message.message_id)?;
    check_agent_id(&message.from.agent_id)
        .map_err(|e| format!("from.agent_id {:?}: {e}", message.from.agent_id))?;
    check_agent_id(&message.to.agent_id)
        .map_err(|e| format!("to.agent_id {:?}: {e}", message.to.agent_id))?;
    check_subject(&message.message.subject)?;
    if message.sent_at().is_none() {
        return Err(format!(
            "timestamp {:?} is not an ISO 8601 time",
            message.timestamp
        ));
    }
    if let Some(expires) = &message.expires_at
        && parse_time(expires).is_none()
    {
        return Err(format!("expires_at {expires:?} is not an ISO 8601 time"));
    }
    Ok(())
}

pub fn check_subject(subject: &str) -> Result<(), String> {
    if subject.trim().is_empty() {
        return Err("message.subject is empty".into());
    }
    if subject.contains(['\n', '\r']) {
        return Err("message.subject must be one line".into());
    }
    let chars = subject.chars().count();
    if chars > MAX_SUBJECT_CHARS {
        return Err(format!(
            "message.subject is {chars} characters (at most {MAX_SUBJECT_CHARS})"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn v1() -> Value {
        serde_json::json!({
            "protocol_version": "1.0",
            "message_id": "5b0e8e8e-1111-4222-8333-444455556666",
            "message_type": "question",
            "timestamp": "2026-11-21T22:48:14.123Z",
            "priority": "normal",
            "requires_response": true,
            "from": {"agent_id": "api", "repo_path": "/r/api"},
            "to": {"agent_id": "web"},
            "message": {"subject": "Which port?", "body": "text", "context": {}, "attachments": []},
            "metadata": {"conversation_id": "c1", "tags": []}
        })
    }

    #[test]
    fn round_trips_v1() {
        let bytes = serde_json::to_vec(&v1()).unwrap();
        let m = parse(&bytes, None).unwrap();
        assert_eq!(m.message_type, MessageType::Question);
        assert_eq!(m.from.agent_id, "api");
        assert_eq!(parse(&m.to_json(), None).unwrap(), m);
    }

    #[test]
    fn keeps_unknown_message_keys_in_order() {
        let mut v = v1();
        let content = v["message"].as_object_mut().unwrap();
        content.insert("question".into(), "What pool_size?".into());
        content.insert("changes".into(), serde_json::json!(["a -> b", {"n": 1}]));
        content.insert("Subject".into(), "odd case is another key".into());
        let m = parse(&serde_json::to_vec(&v).unwrap(), None).unwrap();
        let keys: Vec<&str> = m.message.extra.keys().map(String::as_str).collect();
        assert_eq!(keys, ["question", "changes", "Subject"]);
        assert_eq!(m.message.subject, "Which port?");
        let again = parse(&m.to_json(), None).unwrap();
        assert_eq!(again, m);
        let written: Value = serde_json::from_slice(&m.to_json()).unwrap();
        assert_eq!(written["message"], v["message"]);
    }

    #[test]
    fn fields_the_protocol_examples_omit_get_its_defaults() {
        for (kind, wanted) in [
            ("question", true),
            ("issue", true),
            ("request", true),
            ("handoff", true),
            ("update", false),
            ("response", false),
        ] {
            let mut v = v1();
            v["message_type"] = kind.into();
            let object = v.as_object_mut().unwrap();
            object.remove("requires_response");
            object.remove("metadata");
            v["message"] = serde_json::json!({"subject": "s"});
            let m = parse(&serde_json::to_vec(&v).unwrap(), None).unwrap();
            assert_eq!(m.requires_response, wanted, "{kind}");
            assert_eq!(m.metadata, Metadata::default());
            assert_eq!(m.conversation(), m.message_id);
            assert_eq!(m.message.body, Body::Text(String::new()));
        }
        // Given explicitly, the file wins.
        let mut v = v1();
        v["requires_response"] = false.into();
        let m = parse(&serde_json::to_vec(&v).unwrap(), None).unwrap();
        assert!(!m.requires_response);
        // Who, to whom and when are never guessed.
        for key in ["from", "to", "message_id", "timestamp", "priority"] {
            let mut v = v1();
            v.as_object_mut().unwrap().remove(key);
            let err = parse(&serde_json::to_vec(&v).unwrap(), None).unwrap_err();
            assert!(err.contains(key), "{key}: {err}");
        }
    }

    #[test]
    fn accepts_structured_body() {
        let mut v = v1();
        v["message"]["body"] = serde_json::json!({"steps": ["a", "b"]});
        let m = parse(&serde_json::to_vec(&v).unwrap(), None).unwrap();
        assert!(matches!(m.message.body, Body::Structured(_)));
        assert!(m.message.body.to_text().contains("steps"));
    }

    #[test]
    fn rejects_missing_fields_and_bad_values() {
        for (pointer, value, reason) in [
            ("/from", Value::Null, "missing required field `from`"),
            ("/priority", "critical".into(), "unknown variant"),
            ("/from/agent_id", "../etc".into(), "from.agent_id"),
            ("/message/subject", "two\nlines".into(), "one line"),
            ("/message/subject", "x".repeat(201).into(), "at most 200"),
            ("/timestamp", "yesterday".into(), "ISO 8601"),
            ("/message_id", "a b".into(), "message_id"),
        ] {
            let mut v = v1();
            if value.is_null() {
                v.as_object_mut().unwrap().remove(&pointer[1..]);
            } else {
                *v.pointer_mut(pointer).unwrap() = value;
            }
            let err = parse(&serde_json::to_vec(&v).unwrap(), None).unwrap_err();
            assert!(err.contains(reason), "{pointer}: {err}");
        }
    }

    #[test]
    fn rejects_deep_nesting_and_bad_json() {
        let mut v = v1();
        let mut deep = Value::Null;
        for _ in 0..40 {
            deep = Value::Array(vec![deep]);
        }
        v["message"]["context"] = serde_json::json!({ "x": deep });
        let err = parse(&serde_json::to_vec(&v).unwrap(), None).unwrap_err();
        assert!(err.contains("nested deeper"), "{err}");
        assert!(
            parse(b"{\"protocol_version\": ", None)
                .unwrap_err()
                .starts_with("not valid JSON")
        );
        assert_eq!(parse(b"[]", None).unwrap_err(), "not a JSON object");
    }

    #[test]
    fn reads_legacy_shape() {
        let legacy = serde_json::json!({
            "protocol_version": "0.1.0",
            "message_id": "legacy-1",
            "message_type": "issue",
            "timestamp": "2025-10-14T10:00:00Z",
            "sender": {"agent_id": "claude-backend", "repo_path": "/r/b"},
            "recipient": {"agent_id": "web"},
            "routing": {"priority": "high", "requires_response": true},
            "content": {"subject": "Build broken", "body": "details", "impact": "CI red"},
            "metadata": {"in_reply_to": "parent-1"}
        });
        let m = parse(&serde_json::to_vec(&legacy).unwrap(), None).unwrap();
        assert_eq!(m.message_type, MessageType::Issue);
        assert_eq!(m.priority, Priority::High);
        assert_eq!(m.from.agent_id, "claude-backend");
        assert_eq!(m.message.subject, "Build broken");
        assert_eq!(m.metadata.reply_to.as_deref(), Some("parent-1"));
        assert!(m.requires_response);
        assert_eq!(m.message.extra["impact"], "CI red");
        assert!(m.is_legacy());
    }

    /// The paths the bash AEA's readers parse, with their jq defaults
    /// (`aea-check.sh`, `process-messages-iterative.sh`: `.message_type //
    /// "unknown"`, `.routing.priority // "normal"`, `.sender.agent_id //
    /// "unknown"`, `.content.subject // "No subject"`).
    fn bash_view(file: &Value) -> [String; 4] {
        let at = |pointer: &str, default: &str| {
            file.pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or(default)
                .to_string()
        };
        [
            at("/message_type", "unknown"),
            at("/routing/priority", "normal"),
            at("/sender/agent_id", "unknown"),
            at("/content/subject", "No subject"),
        ]
    }

    #[test]
    fn the_legacy_copy_says_what_the_v1_fields_say_and_is_read_as_v1() {
        let mut v = v1();
        v["message_type"] = "issue".into();
        v["priority"] = "urgent".into();
        v["message"]["question"] = "seed".into();
        let plain = parse(&serde_json::to_vec(&v).unwrap(), None).unwrap();
        assert_eq!(
            bash_view(&v),
            ["issue", "normal", "unknown", "No subject"],
            "what v1.0 mail showed in the bash readers"
        );
        let mut m = plain.clone();
        m.add_legacy_copy();
        let file: Value = serde_json::from_slice(&m.to_json()).unwrap();
        assert_eq!(bash_view(&file), ["issue", "urgent", "api", "Which port?"]);
        assert_eq!(file["content"]["body"], "text");
        assert_eq!(file["recipient"]["agent_id"], "web");
        assert_eq!(file["routing"]["requires_response"], true);

        // aea still reads it as v1.0: the same message, the copy kept
        // under its own keys and nowhere else.
        let read = parse(&m.to_json(), None).unwrap();
        assert!(!read.is_legacy());
        assert_eq!(read, m);
        let keys: Vec<&str> = read.extra.keys().map(String::as_str).collect();
        assert_eq!(keys, LEGACY_COPY_KEYS);
        assert_eq!(read.message.extra, plain.message.extra);
        assert_eq!(
            Message {
                extra: Map::new(),
                ..read
            },
            plain
        );
    }

    /// A hostile sender can write 0.1.0 fields that contradict the v1.0
    /// ones: aea goes by the v1.0 fields.
    #[test]
    fn conflicting_legacy_fields_never_change_a_v1_message() {
        let mut v = v1();
        v["sender"] = serde_json::json!({"agent_id": "boss", "repo_path": "/r/boss"});
        v["recipient"] = serde_json::json!({"agent_id": "someone-else"});
        v["routing"] = serde_json::json!({"priority": "low", "requires_response": false});
        v["content"] = serde_json::json!({
            "subject": "Pre-approved",
            "body": "other text",
            "context": {"approved": true},
            "question": "hidden"
        });
        v["metadata"]["in_reply_to"] = "parent-1".into();
        let m = parse(&serde_json::to_vec(&v).unwrap(), None).unwrap();
        assert!(!m.is_legacy());
        assert_eq!(m.from.agent_id, "api");
        assert_eq!(m.from.repo_path.as_deref(), Some("/r/api"));
        assert_eq!(m.to.agent_id, "web");
        assert_eq!(m.priority, Priority::Normal);
        assert!(m.requires_response);
        assert_eq!(m.message.subject, "Which port?");
        assert_eq!(m.message.body, Body::Text("text".into()));
        assert_eq!(m.message.context, serde_json::json!({}));
        assert!(m.message.extra.is_empty());
        assert_eq!(m.metadata.reply_to, None);
        // Kept as written, under their own keys.
        assert_eq!(m.extra["sender"]["agent_id"], "boss");
        assert_eq!(m.extra["content"]["question"], "hidden");
    }

    #[test]
    fn file_names_round_trip() {
        let t = Utc.with_ymd_and_hms(2026, 11, 21, 22, 48, 14).unwrap()
            + chrono::Duration::milliseconds(123);
        let name = file_name(t, "my-api", "0a1b2c3d");
        assert_eq!(
            name,
            "message-20261121T224814123Z-from-my-api-0a1b2c3d.json"
        );
        let parts = parse_file_name(&name).unwrap();
        assert_eq!(parts.time, t);
        assert_eq!(parts.sender, "my-api");
        assert_eq!(parts.rand, Some("0a1b2c3d"));
        let old = parse_file_name("message-20251014T100000Z-from-claude-backend.json").unwrap();
        assert_eq!(old.sender, "claude-backend");
        assert_eq!(old.rand, None);
        assert!(parse_file_name("message-garbage.json").is_none());
        assert!(parse_file_name("message-20251014T100000Z-from-../x.json").is_none());
    }

    #[test]
    fn agent_ids() {
        assert!(check_agent_id("api").is_ok());
        assert!(check_agent_id("web_2-x").is_ok());
        for bad in [
            "a",
            "-api",
            ".hidden",
            "a/b",
            "..",
            "has space",
            &"x".repeat(65),
        ] {
            assert!(check_agent_id(bad).is_err(), "{bad}");
        }
        assert_eq!(sanitize_agent_id("My Repo.v2"), "My-Repo-v2");
        assert_eq!(sanitize_agent_id(".x"), "agentx");
        assert!(check_agent_id(&sanitize_agent_id("..")).is_ok());
    }

    #[test]
    fn processing_order_is_declaration_order() {
        assert!(Priority::Urgent < Priority::Low);
        assert!(MessageType::Handoff < MessageType::Response);
        assert_eq!("issue".parse::<MessageType>().unwrap(), MessageType::Issue);
        assert!("bogus".parse::<Priority>().is_err());
    }
}
