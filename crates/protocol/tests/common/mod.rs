//! What the hard-stop tests share: the default stops, and a message that
//! carries a text in one chosen sender-controlled field.

// Each test binary uses part of this module.
#![allow(dead_code)]

use aea_protocol::hardstop::{DEFAULT_HARD_STOPS, HardStops};
use aea_protocol::message::Message;
use serde_json::{Value, json};

/// The stops a config without `hard_stops` gets.
pub fn defaults() -> HardStops {
    HardStops::compile(DEFAULT_HARD_STOPS).expect("the default hard stops compile")
}

/// A place in a message where a sender can put text that reaches the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Subject,
    Body,
    /// A body written as JSON, as older writers do.
    StructuredBody,
    Context,
    /// `context` holding the command as an argv array, one word a string.
    ContextArgv,
    /// `message.request_details`, one of the type-specific fields.
    RequestDetails,
    Tag,
    Attachment,
    MetadataRefs,
    ConversationId,
    FromUser,
    FromRepoPath,
    ToRepoPath,
    /// A top-level key aea has no field for.
    UnknownTopLevel,
}

impl Field {
    pub const ALL: [Field; 14] = [
        Field::Subject,
        Field::Body,
        Field::StructuredBody,
        Field::Context,
        Field::ContextArgv,
        Field::RequestDetails,
        Field::Tag,
        Field::Attachment,
        Field::MetadataRefs,
        Field::ConversationId,
        Field::FromUser,
        Field::FromRepoPath,
        Field::ToRepoPath,
        Field::UnknownTopLevel,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Field::Subject => "subject",
            Field::Body => "body",
            Field::StructuredBody => "structured body",
            Field::Context => "context",
            Field::ContextArgv => "context argv",
            Field::RequestDetails => "message.request_details",
            Field::Tag => "tag",
            Field::Attachment => "attachment",
            Field::MetadataRefs => "metadata refs",
            Field::ConversationId => "conversation id",
            Field::FromUser => "from.user",
            Field::FromRepoPath => "from.repo_path",
            Field::ToRepoPath => "to.repo_path",
            Field::UnknownTopLevel => "unknown top-level field",
        }
    }
}

/// A well-formed question from `api` to `web` with `text` in `field` and
/// nothing else a stop could match.
pub fn message_with(field: Field, text: &str) -> Message {
    let mut m = json!({
        "protocol_version": "1.0",
        "message_id": "msg-20261121T100000Z-0001",
        "message_type": "question",
        "timestamp": "2026-11-21T10:00:00Z",
        "priority": "normal",
        "requires_response": false,
        "from": {"agent_id": "api"},
        "to": {"agent_id": "web"},
        "message": {"subject": "a question", "body": "see below"},
        "metadata": {},
    });
    let text = Value::String(text.to_string());
    match field {
        Field::Subject => m["message"]["subject"] = text,
        Field::Body => m["message"]["body"] = text,
        Field::StructuredBody => m["message"]["body"] = json!({"steps": ["first", text]}),
        Field::Context => m["message"]["context"] = json!({"command": text}),
        Field::ContextArgv => {
            let argv: Vec<&str> = text.as_str().unwrap_or_default().split(' ').collect();
            m["message"]["context"] = json!({ "argv": argv });
        }
        Field::RequestDetails => {
            m["message"]["request_details"] = json!({"steps": ["then", text]});
        }
        Field::Tag => m["metadata"]["tags"] = json!(["ops", text]),
        Field::Attachment => {
            m["message"]["attachments"] = json!([{"path": "notes.txt", "description": text}]);
        }
        Field::MetadataRefs => m["metadata"]["refs"] = json!({"note": text}),
        Field::ConversationId => m["metadata"]["conversation_id"] = text,
        Field::FromUser => m["from"]["user"] = text,
        Field::FromRepoPath => m["from"]["repo_path"] = text,
        Field::ToRepoPath => m["to"]["repo_path"] = text,
        Field::UnknownTopLevel => m["x-runbook"] = json!({"step": text}),
    }
    serde_json::from_value(m).expect("a well-formed message")
}
