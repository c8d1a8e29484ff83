//! Whose turn `protocol.json` says it is, and the event that made it so:
//! what a participant's monitor looks at to notice its turn, whoever
//! wrote the event (aea, another ACP tool, a person).
//!
//! `protocol.json` is read as the protocol's own waiting script reads it
//! (`waitingFor`, `currentPhase`), not derived from the log: other tools
//! write the event first and `protocol.json` after it, not atomically, so
//! a look between the two sees the old turn, and the next look the new.
//! A `protocol.json` caught half-written does not parse: no handover is
//! read then, never a wrong one.

use ed25519_dalek::VerifyingKey;
use serde_json::Value;

use super::log::{self, Protocol};
use super::sign::EventAuthor;
use super::{Folder, PROTOCOL, Phase, Refusal, Rule};
use crate::error::{Error, Result};

/// Whom `protocol.json` waits for, in which phase, after which event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handover {
    /// `waitingFor`, its strings (the folder's text: untrusted).
    pub waiting_for: Vec<String>,
    /// `currentPhase`, when it is a phase.
    pub phase: Option<Phase>,
    /// The participants `protocol.json` names.
    pub participants: Vec<String>,
    /// The last event of the log, and who can be told to have written it.
    pub last: Option<EventAuthor>,
    /// Whether the log holds a `completed` or `blocked` event (whatever
    /// came after it, and whatever `protocol.json` says).
    pub ended_in_log: bool,
}

impl Handover {
    /// Whether the collaboration has ended, by `protocol.json` or by its log.
    pub fn ended(&self) -> bool {
        self.ended_in_log || matches!(self.phase, Some(Phase::Completed | Phase::Blocked))
    }
}

impl Folder {
    /// Whom the folder waits for now, and the last event, its author told
    /// by the keys `keys` says are pinned. An error when `protocol.json`
    /// is missing, unsafe or does not parse (perhaps half-written).
    pub fn handover(&self, keys: &dyn Fn(&str) -> Option<VerifyingKey>) -> Result<Handover> {
        let refused = |r: Refusal| Error::CollabRefused(Box::new(r));
        let text = log::read_text(self.path(), PROTOCOL, log::PROTOCOL_LIMIT)
            .map_err(refused)?
            .ok_or_else(|| {
                refused(Refusal::new(
                    Rule::MissingFile,
                    format!("{} has no protocol.json", self.path().display()),
                    super::Advice::Init,
                ))
            })?;
        let protocol = Protocol::parse(&text).map_err(refused)?;
        let waiting_for = match protocol.map.get("waitingFor") {
            Some(Value::Array(ids)) => ids
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        };
        let phase = protocol
            .map
            .get("currentPhase")
            .and_then(Value::as_str)
            .and_then(|p| p.parse().ok());
        let mut events = self.authors(keys)?.events;
        let ended_in_log = events.iter().any(|e| {
            matches!(
                e.event,
                Some(super::EventName::Completed | super::EventName::Blocked)
            )
        });
        Ok(Handover {
            waiting_for,
            phase,
            participants: protocol.participants(),
            last: events.pop(),
            ended_in_log,
        })
    }
}
