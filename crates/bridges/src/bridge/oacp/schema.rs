//! OACP's own format as its `validate_message.py` defines it: the types,
//! priorities and limits, the fields it knows, what its conversation ids
//! and handoff packets look like, and the checks a file must pass. The
//! conversion to and from AEA messages is the parent's.

use serde_json::{Map, Value};

use crate::message::{MessageType, Priority};
use crate::words::word_enum;

/// OACP's limits (validate_message.py).
pub const MAX_BODY_CHARS: usize = 20_000;
pub const MAX_ID_CHARS: usize = 200;
pub const MAX_RECIPIENTS: usize = 10;

word_enum! {
    /// The 12 OACP message types.
    pub enum OacpType {
        TaskRequest = "task_request",
        Question = "question",
        Notification = "notification",
        FollowUp = "follow_up",
        Handoff = "handoff",
        HandoffComplete = "handoff_complete",
        ReviewRequest = "review_request",
        ReviewFeedback = "review_feedback",
        ReviewAddressed = "review_addressed",
        ReviewLgtm = "review_lgtm",
        BrainstormRequest = "brainstorm_request",
        BrainstormFollowup = "brainstorm_followup",
    }
}

word_enum! {
    pub enum OacpPriority {
        P0 = "P0",
        P1 = "P1",
        P2 = "P2",
        P3 = "P3",
    }
}

impl OacpType {
    /// The AEA type an OACP type is read as (the table in docs/src/other-tools.md).
    pub(crate) fn to_aea(self) -> MessageType {
        match self {
            OacpType::TaskRequest | OacpType::ReviewRequest => MessageType::Request,
            OacpType::Question | OacpType::BrainstormRequest => MessageType::Question,
            OacpType::Notification => MessageType::Update,
            OacpType::Handoff => MessageType::Handoff,
            OacpType::FollowUp
            | OacpType::HandoffComplete
            | OacpType::ReviewFeedback
            | OacpType::ReviewAddressed
            | OacpType::ReviewLgtm
            | OacpType::BrainstormFollowup => MessageType::Response,
        }
    }

    /// The OACP type an AEA message is written as when it did not come
    /// from OACP.
    pub(crate) fn from_aea(t: MessageType) -> OacpType {
        match t {
            MessageType::Handoff => OacpType::Handoff,
            MessageType::Request | MessageType::Issue => OacpType::TaskRequest,
            MessageType::Question => OacpType::Question,
            MessageType::Update => OacpType::Notification,
            MessageType::Response => OacpType::FollowUp,
        }
    }

    /// Whether the reference's "Expected response" column names one.
    pub(crate) fn expects_response(self) -> bool {
        matches!(
            self,
            OacpType::TaskRequest
                | OacpType::Question
                | OacpType::Handoff
                | OacpType::ReviewRequest
                | OacpType::ReviewFeedback
                | OacpType::ReviewAddressed
                | OacpType::BrainstormRequest
        )
    }

    /// The type an answer to a message of this type goes out as (`aea
    /// reply`), where OACP's table of message types names the response its
    /// recipient gives (reference/oacp-inbox-outbox.md, "Expected
    /// response"; OACP's SPEC.md, "Message Types"). The others are answered
    /// with the type an AEA `response` maps to, `follow_up` (the
    /// reference's answer to a `question` and a `task_request`), unless the
    /// replier names one (`--oacp-type`): a `review_request` approved is
    /// answered `review_lgtm`; a `review_addressed` is followed by the
    /// author's own next `review_request`, not by an answer of its reader.
    pub fn answer(self) -> Option<OacpType> {
        match self {
            OacpType::Handoff => Some(OacpType::HandoffComplete),
            OacpType::ReviewRequest => Some(OacpType::ReviewFeedback),
            OacpType::ReviewFeedback => Some(OacpType::ReviewAddressed),
            OacpType::BrainstormRequest | OacpType::BrainstormFollowup => {
                Some(OacpType::BrainstormFollowup)
            }
            _ => None,
        }
    }

    /// `handoff` and `handoff_complete` are point to point only.
    pub fn may_broadcast(self) -> bool {
        !matches!(self, OacpType::Handoff | OacpType::HandoffComplete)
    }
}

impl OacpPriority {
    pub fn to_aea(self) -> Priority {
        match self {
            OacpPriority::P0 => Priority::Urgent,
            OacpPriority::P1 => Priority::High,
            OacpPriority::P2 => Priority::Normal,
            OacpPriority::P3 => Priority::Low,
        }
    }

    pub(crate) fn from_aea(p: Priority) -> OacpPriority {
        match p {
            Priority::Urgent => OacpPriority::P0,
            Priority::High => OacpPriority::P1,
            Priority::Normal => OacpPriority::P2,
            Priority::Low => OacpPriority::P3,
        }
    }
}

/// Fields the OACP validator knows, in the order of its template; written
/// in this order, and the only top-level keys we ever write.
pub(super) const FIELD_ORDER: [&str; 22] = [
    "id",
    "from",
    "to",
    "type",
    "priority",
    "created_at_utc",
    "expires_at",
    "channel",
    "related_packet",
    "related_pr",
    "conversation_id",
    "parent_message_id",
    "autonomy_hint",
    "model",
    "turns",
    "input_tokens",
    "output_tokens",
    "wall_time_s",
    "est_cost_usd",
    "subject",
    "body",
    "context_keys",
];

pub(super) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(super) fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

pub(super) fn is_oacp_conversation(id: &str) -> bool {
    let Some(rest) = id.strip_prefix("conv-") else {
        return false;
    };
    let Some((date, rest)) = rest.split_at_checked(8) else {
        return false;
    };
    let Some((agent, seq)) = rest.strip_prefix('-').and_then(|r| r.rsplit_once('-')) else {
        return false;
    };
    date.bytes().all(|b| b.is_ascii_digit())
        && (1..=64).contains(&agent.len())
        && agent
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && (1..=6).contains(&seq.len())
        && seq.bytes().all(|b| b.is_ascii_digit())
}

/// OACP validates a handoff's body as a packet; an AEA handoff's text is
/// put inside one (its exact text comes back through the patch).
pub(super) fn looks_like_handoff_packet(text: &str) -> bool {
    [
        "source_agent:",
        "target_agent:",
        "intent:",
        "context_bundle:",
    ]
    .iter()
    .all(|k| text.lines().any(|l| l.starts_with(k)))
}

/// The checks of OACP's `validate_message.py` (oacp-cli 0.5.4) that a file
/// we write must pass, over the fields as PyYAML's BaseLoader reads them (every scalar
/// a string). Returns the problems found.
pub fn oacp_problems(fields: &Map<String, Value>) -> Vec<String> {
    let mut problems = Vec::new();
    let utc = |s: &str| {
        s.len() == 20 && chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%SZ").is_ok()
    };
    let agent = |s: &str| {
        (1..=64).contains(&s.len())
            && s.as_bytes()[0].is_ascii_alphanumeric()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    };
    for key in fields.keys() {
        // `auth`, a signed file's last line, is only ever written as the
        // sender wrote it (a file kept byte for byte), never by us.
        if !FIELD_ORDER.contains(&key.as_str()) && key != "auth" {
            problems.push(format!("unknown field {key}"));
        }
    }
    let get = |k: &str| fields.get(k).and_then(scalar).unwrap_or_default();
    for key in [
        "id",
        "from",
        "type",
        "priority",
        "created_at_utc",
        "subject",
        "body",
    ] {
        if get(key).trim().is_empty() {
            problems.push(format!("{key} missing, empty or not a scalar"));
        }
    }
    if !agent(get("from").trim()) {
        problems.push("from is not an agent name".into());
    }
    let kind = get("type").trim().parse::<OacpType>();
    if kind.is_err() {
        problems.push("unknown type".into());
    }
    if get("priority").trim().parse::<OacpPriority>().is_err() {
        problems.push("unknown priority".into());
    }
    match fields.get("to") {
        Some(Value::Array(items)) => {
            if items.is_empty() || items.len() > MAX_RECIPIENTS {
                problems.push("to: 1-10 recipients".into());
            }
            if items
                .iter()
                .any(|i| !scalar(i).is_some_and(|s| agent(s.trim())))
            {
                problems.push("to: not an agent name".into());
            }
            if items.iter().any(|i| scalar(i) == Some(get("from"))) {
                problems.push("to includes the sender".into());
            }
            if items.len() > 1 && kind.as_ref().is_ok_and(|k| !k.may_broadcast()) {
                problems.push("handoff broadcast".into());
            }
        }
        Some(v) if scalar(v).is_some_and(|s| agent(s.trim())) => {}
        _ => problems.push("to missing or not an agent name".into()),
    }
    for key in FIELD_ORDER.iter().skip(6).chain(&["auth"]) {
        if matches!(fields.get(*key), Some(Value::Array(_) | Value::Object(_))) {
            problems.push(format!("{key} is not a scalar"));
        }
    }
    // Review telemetry belongs to the review answers only.
    let telemetry = [
        "model",
        "turns",
        "input_tokens",
        "output_tokens",
        "wall_time_s",
        "est_cost_usd",
    ];
    if telemetry.iter().any(|k| fields.contains_key(*k))
        && !matches!(
            kind,
            Ok(OacpType::ReviewFeedback | OacpType::ReviewLgtm | OacpType::ReviewAddressed)
        )
    {
        problems.push("review telemetry on a type that is not a review answer".into());
    }
    if !utc(get("created_at_utc").trim()) {
        problems.push("created_at_utc is not YYYY-MM-DDTHH:MM:SSZ".into());
    }
    let expires = get("expires_at");
    if !expires.trim().is_empty() && !utc(expires.trim()) {
        problems.push("expires_at is not YYYY-MM-DDTHH:MM:SSZ".into());
    }
    let pr = get("related_pr");
    if !pr.trim().is_empty() && !pr.trim().bytes().all(|b| b.is_ascii_digit()) {
        problems.push("related_pr is not numeric".into());
    }
    let conv = get("conversation_id");
    if !conv.trim().is_empty() && !is_oacp_conversation(conv.trim()) {
        problems.push("conversation_id is not conv-<YYYYMMDD>-<agent>-<seq>".into());
    }
    let channel = get("channel");
    if !channel.trim().is_empty()
        && (channel.trim().len() > 64
            || !channel
                .trim()
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-')))
    {
        problems.push("channel".into());
    }
    if get("id").trim().chars().count() > MAX_ID_CHARS
        || get("parent_message_id").trim().chars().count() > MAX_ID_CHARS
    {
        problems.push("id too long".into());
    }
    if get("subject").trim().chars().count() > 200 {
        problems.push("subject too long".into());
    }
    if get("body").trim().chars().count() > MAX_BODY_CHARS {
        problems.push("body too long".into());
    }
    // Since OACP 0.5.3 the validator leaves a handoff's body to the
    // handoff workflow (its inbox_outbox.md, "Validation boundary").
    problems
}

/// The fields of a file as OACP's validator sees them, for tests and
/// `aea doctor`: PyYAML's BaseLoader reads every scalar as a string.
pub fn fields_of(text: &str) -> Result<Map<String, Value>, String> {
    match super::base_yaml::load(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("not a mapping".into()),
        Err(e) => Err(one_line(&e)),
    }
}
