//! Reading what a folder holds, as found: `protocol.json` as a JSON object
//! whose unknown keys are kept, `events.jsonl` as one JSON object a line,
//! each field looked at only when a rule needs it (a wrong type is a
//! finding, never a panic), and the shape rules of the log (seq, fields,
//! names, `reply_to`, time) checked event by event.

use std::collections::BTreeSet;
use std::path::Path;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value};

use super::schema::{self as deliverables, Role, Schema};
use super::{Advice, Event, EventName, Refusal, Rule};
use crate::error::{Error, Result};
use crate::fsutil::{self, ReadLimited};

/// Caps on what is read from a folder: far above any real collaboration,
/// low enough that a hostile folder cannot exhaust memory.
pub(crate) const PROTOCOL_LIMIT: u64 = 1024 * 1024;
pub(crate) const EVENTS_LIMIT: u64 = 16 * 1024 * 1024;
pub(crate) const DOCUMENT_LIMIT: u64 = 4 * 1024 * 1024;

/// Reads the text file `name` of `folder`: `Ok(None)` when missing, a
/// refusal (rule `unsafe_file`) for a symlink, FIFO, device, oversized or
/// non-UTF-8 file, or one that cannot be read.
pub(crate) fn read_text(
    folder: &Path,
    name: &str,
    limit: u64,
) -> std::result::Result<Option<String>, Refusal> {
    let path = folder.join(name);
    let unsafe_file = |what: String| {
        Refusal::new(
            Rule::UnsafeFile,
            format!("{name} {what}"),
            format!("replace {name} with a regular UTF-8 file of the collaboration"),
        )
    };
    let bytes = match fsutil::read_limited(&path, limit) {
        Ok(bytes) => bytes,
        Err(ReadLimited::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(ReadLimited::Symlink) => {
            return Err(unsafe_file("is a symbolic link; it is not followed".into()));
        }
        Err(ReadLimited::NotAFile) => {
            return Err(unsafe_file(
                "is not a regular file (a FIFO, socket, device or folder)".into(),
            ));
        }
        Err(ReadLimited::TooLarge(n)) => {
            return Err(unsafe_file(format!(
                "is {n} bytes, over the {limit} byte cap"
            )));
        }
        Err(ReadLimited::Io(e)) => return Err(unsafe_file(format!("cannot be read: {e}"))),
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| unsafe_file("is not UTF-8 text".into()))
}

/// `protocol.json` as found. Unknown keys stay, in their order, so that a
/// rewrite keeps what another tool put there.
#[derive(Debug, Clone, Default)]
pub(crate) struct Protocol {
    pub map: Map<String, Value>,
}

impl Protocol {
    /// Parses the text of `protocol.json`.
    pub(crate) fn parse(text: &str) -> std::result::Result<Protocol, Refusal> {
        let hint = "protocol.json must be one JSON object; restore it from the folder's history";
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Ok(Protocol { map }),
            Ok(_) => Err(Refusal::new(
                Rule::ProtocolFile,
                "protocol.json is not a JSON object",
                hint,
            )),
            Err(e) => Err(Refusal::new(
                Rule::ProtocolFile,
                format!("protocol.json is not valid JSON: {e}"),
                hint,
            )),
        }
    }

    /// The participant ids, written either as strings or as `{"id": …}`
    /// objects (the protocol's initializer writes the latter).
    pub(crate) fn participants(&self) -> Vec<String> {
        let Some(Value::Array(items)) = self.map.get("participants") else {
            return Vec::new();
        };
        items
            .iter()
            .filter_map(|item| match item {
                Value::String(id) => Some(id.clone()),
                Value::Object(o) => o.get("id").and_then(Value::as_str).map(str::to_string),
                _ => None,
            })
            .collect()
    }

    /// The texts of the completion gates: strings (schema 1) or the
    /// `text` of `{"source": …, "text": …}` objects (schema 2).
    pub(crate) fn gates(&self) -> Vec<String> {
        let Some(Value::Array(items)) = self.map.get("completionGates") else {
            return Vec::new();
        };
        items
            .iter()
            .filter_map(|g| match g {
                Value::String(text) => Some(text.clone()),
                Value::Object(o) => o.get("text").and_then(Value::as_str).map(str::to_string),
                _ => None,
            })
            .collect()
    }

    /// The schema the file declares (see [`Schema::of`]).
    pub(crate) fn schema(&self) -> std::result::Result<Schema, Refusal> {
        Schema::of(&self.map)
    }

    /// The text serialised as aea writes it: two-space indent, a final
    /// newline; for schema 2 with every object's keys sorted, as the
    /// protocol's own tools write it, so that a rewrite by either leaves
    /// the same bytes.
    pub(crate) fn to_text(&self, schema: Schema) -> String {
        let value = Value::Object(self.map.clone());
        let value = match schema {
            Schema::One => value,
            Schema::Two => sorted(value),
        };
        let mut text =
            serde_json::to_string_pretty(&value).expect("a JSON value always serialises");
        text.push('\n');
        text
    }
}

/// `value` with the keys of every object in it sorted (by code point, as
/// Python's `sort_keys` sorts them).
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// Appends `event` to `events.jsonl` of `folder`: its one compact line
/// (see [`Event::to_line`]), on a line of its own even when the log's
/// last line was left unended (`log_text` is the log as read under the
/// folder's lock), in one write on an `O_APPEND` descriptor, flushed
/// before returning. The only place aea appends an event: once this
/// returns, the event is in the log for good (a record of it kept next to
/// the log, such as a signature, goes here, after the flush).
pub(crate) fn append(folder: &Path, log_text: &str, event: &Event) -> Result<()> {
    let path = folder.join(super::EVENTS);
    let mut line = event.to_line();
    if !log_text.is_empty() && !log_text.ends_with('\n') {
        line.insert(0, '\n');
    }
    let mut file = fsutil::open_append(&path)?;
    std::io::Write::write_all(&mut file, line.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| Error::io("append to", &path, e))
}

/// One line of `events.jsonl` that is a JSON object.
#[derive(Debug, Clone)]
pub(crate) struct Logged {
    /// 1-based line number in `events.jsonl` (0 for a candidate event).
    pub line: usize,
    pub map: Map<String, Value>,
}

impl Logged {
    pub(crate) fn from_event(event: &super::Event) -> Logged {
        match serde_json::to_value(event).expect("an event always serialises") {
            Value::Object(map) => Logged { line: 0, map },
            _ => unreachable!("an event serialises to an object"),
        }
    }

    /// `seq`, when it is a non-negative integer.
    pub(crate) fn seq(&self) -> Option<u64> {
        self.map.get("seq").and_then(Value::as_u64)
    }

    /// How messages name this event: `seq 4`, or the line when the seq is unusable.
    pub(crate) fn label(&self) -> String {
        match self.map.get("seq") {
            Some(Value::Number(n)) => format!("seq {n}"),
            _ if self.line > 0 => format!("events.jsonl line {}", self.line),
            _ => "the new event".into(),
        }
    }

    pub(crate) fn from(&self) -> Option<&str> {
        self.map.get("from").and_then(Value::as_str)
    }

    pub(crate) fn name(&self) -> Option<EventName> {
        self.map.get("event")?.as_str()?.parse().ok()
    }

    pub(crate) fn at(&self) -> Option<DateTime<Utc>> {
        parse_time(self.map.get("at")?.as_str()?)
    }

    pub(crate) fn doc(&self) -> Option<&str> {
        self.map.get("doc").and_then(Value::as_str)
    }

    pub(crate) fn summary(&self) -> Option<&str> {
        self.map.get("summary").and_then(Value::as_str)
    }

    pub(crate) fn reply_to(&self) -> Option<&Value> {
        self.map.get("reply_to").filter(|v| !v.is_null())
    }

    /// `role`, when it is one of schema 2's.
    pub(crate) fn role(&self) -> Option<Role> {
        self.map.get("role")?.as_str()?.parse().ok()
    }

    pub(crate) fn sha256(&self) -> Option<&str> {
        self.map.get("sha256").and_then(Value::as_str)
    }
}

/// An ISO-8601 time with a zone (`Z` or an offset), in UTC.
pub(crate) fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// How aea writes `at`: UTC, `Z`, whole seconds unless the time has a fraction.
pub(crate) fn format_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// Splits `events.jsonl` into its objects, with a finding (rule
/// `event_line`) for each line that is not one. Blank lines are skipped.
pub(crate) fn parse_events(text: &str) -> (Vec<Logged>, Vec<Refusal>) {
    let mut events = Vec::new();
    let mut problems = Vec::new();
    // The last line, when the text does not end it: one a writer may have
    // stopped in the middle of.
    let unended = if text.ends_with('\n') {
        None
    } else {
        Some(text.split('\n').count())
    };
    for (index, line) in text.split('\n').enumerate() {
        let line_no = index + 1;
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let parsed = serde_json::from_str::<Value>(line);
        if parsed.is_err() && unended == Some(line_no) {
            problems.push(Refusal::new(
                Rule::EventLine,
                format!(
                    "events.jsonl line {line_no} is incomplete: a writer stopped in the middle of an event"
                ),
                Advice::TornLine,
            ));
            continue;
        }
        match parsed {
            Ok(Value::Object(map)) => events.push(Logged { line: line_no, map }),
            Ok(_) => problems.push(Refusal::new(
                Rule::EventLine,
                format!("events.jsonl line {line_no}: an event must be a JSON object"),
                Advice::EventLine,
            )),
            Err(e) => problems.push(Refusal::new(
                Rule::EventLine,
                format!("events.jsonl line {line_no}: invalid JSON: {e}"),
                Advice::EventLine,
            )),
        }
    }
    (events, problems)
}

/// The shape rules of the log, checked one event at a time in order: seq
/// continuous from 1, the required fields, a known event name, `reply_to`
/// after `initialized` pointing to an earlier event, `at` an ISO-8601
/// time that never goes back.
#[derive(Debug)]
pub(crate) struct Shape {
    schema: Schema,
    count: u64,
    seen: BTreeSet<u64>,
    previous_at: Option<DateTime<Utc>>,
}

const REQUIRED_FIELDS: [&str; 5] = ["seq", "from", "event", "at", "summary"];

impl Shape {
    pub(crate) fn new(schema: Schema) -> Shape {
        Shape {
            schema,
            count: 0,
            seen: BTreeSet::new(),
            previous_at: None,
        }
    }

    pub(crate) fn check(&mut self, event: &Logged) -> Vec<Refusal> {
        let mut problems = Vec::new();
        let label = event.label();
        self.count += 1;
        let expected = self.count;
        if event.seq() != Some(expected) {
            let found = event
                .map
                .get("seq")
                .map_or_else(|| "none".to_string(), Value::to_string);
            problems.push(Refusal::new(
                Rule::Seq,
                format!("events.jsonl: expected seq {expected}, found {found}"),
                Advice::Seq,
            ));
        }
        for field in REQUIRED_FIELDS {
            if !event.map.contains_key(field) {
                problems.push(Refusal::new(
                    Rule::EventField,
                    format!("{label}: missing required field {field}"),
                    "every event has seq, from, event, at and summary",
                ));
            }
        }
        for field in ["from", "summary"] {
            if let Some(value) = event.map.get(field)
                && !value.is_string()
            {
                problems.push(Refusal::new(
                    Rule::EventField,
                    format!("{label}: {field} must be a string"),
                    "from is a participant id and summary one short sentence",
                ));
            }
        }
        let name = event.map.get("event");
        match event.name() {
            None => {
                let found = name.map_or_else(|| "none".to_string(), deliverables::shown_value);
                let names: Vec<&str> = EventName::ALL
                    .iter()
                    .filter(|n| self.schema.has_event(**n))
                    .map(|n| n.as_str())
                    .collect();
                problems.push(Refusal::new(
                    Rule::UnknownEvent,
                    format!("{label}: unknown event {found}"),
                    format!("the events are: {}", names.join(", ")),
                ));
            }
            Some(n) if !self.schema.has_event(n) => {
                problems.push(deliverables::not_in_schema_one(&format!("{label}: {n}")));
            }
            Some(n) if n.is_deliverable() => {
                if event.role().is_none() {
                    problems.push(Refusal::new(
                        Rule::DeliverableEvent,
                        format!("{label}: {n} requires role primary or supporting"),
                        "a deliverable event names its role: primary or supporting",
                    ));
                }
                if !event.map.get("doc").is_some_and(Value::is_string) {
                    problems.push(Refusal::new(
                        Rule::DeliverableEvent,
                        format!("{label}: {n} requires doc, the deliverable's reference"),
                        "doc names the deliverable as protocol.json declares it, such as deliverables/design-spec.md",
                    ));
                }
                if n == EventName::DeliverableFrozen
                    && !event.sha256().is_some_and(deliverables::is_sha256)
                {
                    problems.push(Refusal::new(
                        Rule::DeliverableEvent,
                        format!(
                            "{label}: deliverable_frozen requires sha256, 64 lowercase hex digits"
                        ),
                        "sha256 is the SHA-256 of the frozen file",
                    ));
                }
            }
            Some(_) => {}
        }
        let reply_to = event.reply_to();
        if event.name() != Some(EventName::Initialized) && reply_to.is_none() {
            problems.push(Refusal::new(
                Rule::ReplyTo,
                format!("{label}: reply_to is required after initialized"),
                Advice::ReplyTo,
            ));
        }
        if let Some(target) = reply_to
            && !target.as_u64().is_some_and(|t| self.seen.contains(&t))
        {
            problems.push(Refusal::new(
                Rule::ReplyTo,
                format!("{label}: reply_to {target} must point to an earlier event"),
                "reply_to names the seq of an event already in events.jsonl",
            ));
        }
        match event.at() {
            None => problems.push(Refusal::new(
                Rule::Time,
                format!("{label}: at must be an ISO-8601 timestamp with a time zone"),
                "write at as UTC, e.g. 2026-01-31T09:00:00Z",
            )),
            Some(at) => {
                if let Some(previous) = self.previous_at
                    && at < previous
                {
                    problems.push(Refusal::new(
                        Rule::Time,
                        format!(
                            "{label}: at {} is earlier than the previous event ({})",
                            format_time(at),
                            format_time(previous)
                        ),
                        "event times never go back as seq increases; correct with a new event, never by rewriting",
                    ));
                }
                self.previous_at = Some(at);
            }
        }
        if let Some(seq) = event.seq() {
            self.seen.insert(seq);
        }
        problems
    }
}

/// What is odd in an event without breaking a rule: a `schemaVersion` of
/// its own. The folder's schema is `protocol.json`'s alone; an event that
/// claims another is kept as written and said so, never followed.
pub(crate) fn event_warnings(event: &Logged, schema: Schema) -> Option<Refusal> {
    let claimed = event.map.get("schemaVersion")?;
    if claimed.as_u64() == Some(u64::from(schema.number())) {
        return None;
    }
    Some(Refusal::new(
        Rule::Schema,
        format!(
            "{}: the event claims schemaVersion {}; the folder is schema {} (protocol.json decides, the event is read as schema {})",
            event.label(),
            deliverables::shown_value(claimed),
            schema.number(),
            schema.number()
        ),
        "events carry no schemaVersion; protocol.json's decides for the whole folder",
    ))
}
