//! The validator: every check the protocol lists, on a folder as found —
//! required and forbidden files, `protocol.json`'s fields, the shape of the
//! log, the phase transitions and turns, `protocol.json` agreeing with the
//! log, review headings, readiness, conclusion and completion order.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::Value;

use super::docs::{self, ReadinessScan};
use super::log::{self, Logged, Protocol, Shape};
use super::machine::State;
use super::{
    Advice, CONCLUSION, EVENTS, EventName, FORBIDDEN_FILES, PROTOCOL, Phase, READINESS,
    REQUIRED_FILES, REVIEW, Refusal, Rule,
};
use crate::error::Result;
use crate::fsutil;

/// One thing the validator found: the rule, what is wrong, what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub rule: Rule,
    pub message: String,
    pub advice: Advice,
}

impl From<Refusal> for Finding {
    fn from(r: Refusal) -> Self {
        Finding {
            rule: r.rule,
            message: r.message,
            advice: r.advice,
        }
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What [`validate`] found. Valid when there are no errors; warnings do
/// not make a folder invalid.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub errors: Vec<Finding>,
    pub warnings: Vec<Finding>,
}

impl Report {
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }

    fn error(&mut self, rule: Rule, message: impl Into<String>, advice: impl Into<Advice>) {
        self.errors.push(Finding {
            rule,
            message: message.into(),
            advice: advice.into(),
        });
    }
}

/// Validates the collaboration folder `folder`. Only a folder that is not
/// a real directory is an error; everything in it is a finding.
pub(crate) fn validate(folder: &Path) -> Result<Report> {
    fsutil::require_real_dir(folder)?;
    let mut report = Report::default();
    let mut texts: BTreeMap<&str, String> = BTreeMap::new();
    for name in REQUIRED_FILES {
        match log::read_text(folder, name, limit(name)) {
            Ok(Some(text)) => {
                texts.insert(name, text);
            }
            Ok(None) => report.error(
                Rule::MissingFile,
                format!("missing {name}"),
                Advice::WriteMissing {
                    name: Some(name.to_string()),
                },
            ),
            Err(refusal) => report.errors.push(refusal.into()),
        }
    }
    for name in FORBIDDEN_FILES {
        if fs::symlink_metadata(folder.join(name)).is_ok() {
            report.error(
                Rule::ForbiddenFile,
                format!("{name} is not part of the protocol"),
                format!("remove {name}; use events.jsonl and readiness.md instead"),
            );
        }
    }
    let Some(protocol_text) = texts.get(PROTOCOL) else {
        return Ok(report);
    };
    let protocol = match Protocol::parse(protocol_text) {
        Ok(p) => p,
        Err(refusal) => {
            report.errors.push(refusal.into());
            return Ok(report);
        }
    };
    check_protocol_fields(&protocol, &mut report);

    let participants = protocol.participants();
    let events = match texts.get(EVENTS) {
        Some(text) => {
            let (events, problems) = log::parse_events(text);
            report
                .errors
                .extend(problems.into_iter().map(Finding::from));
            events
        }
        None => Vec::new(),
    };
    let mut shape = Shape::default();
    for event in &events {
        report
            .errors
            .extend(shape.check(event).into_iter().map(Finding::from));
    }
    if let Some(review) = texts.get(REVIEW) {
        check_review_headings(review, &events, &mut report);
    }
    let (state, problems) = State::derive(&participants, &events);
    report
        .errors
        .extend(problems.into_iter().map(Finding::from));
    check_derived(&protocol, &state, &mut report);

    let readiness = docs::scan_readiness(texts.get(READINESS).map_or("", String::as_str));
    let conclusion = texts.get(CONCLUSION).map(|t| docs::scan_conclusion(t));
    let has = |name: EventName| events.iter().any(|e| e.name() == Some(name));
    let gated = if has(EventName::Completed) {
        Some(EventName::Completed)
    } else if has(EventName::ReadinessPassed) {
        Some(EventName::ReadinessPassed)
    } else if has(EventName::DecisionAccepted) {
        Some(EventName::DecisionAccepted)
    } else {
        None
    };
    match gated {
        Some(event) => {
            for refusal in docs::gate(event, &readiness, &protocol.gates(), conclusion.as_ref()) {
                report.errors.push(refusal.into());
            }
        }
        None => warn_early(&readiness, &mut report),
    }
    Ok(report)
}

fn limit(name: &str) -> u64 {
    match name {
        PROTOCOL => log::PROTOCOL_LIMIT,
        EVENTS => log::EVENTS_LIMIT,
        _ => log::DOCUMENT_LIMIT,
    }
}

/// Before any decision is accepted, a deferred item without a reason is
/// only a warning: there is time to add it.
fn warn_early(readiness: &ReadinessScan, report: &mut Report) {
    if !readiness.deferred_missing_reason.is_empty() {
        report.warnings.push(Finding {
            rule: Rule::DeferredReason,
            message: format!(
                "deferred_nonblocking readiness items should include a reason: {}",
                readiness.deferred_missing_reason.join("; ")
            ),
            advice: "add `Reason: …` to the item before decision_accepted".into(),
        });
    }
}

fn check_protocol_fields(protocol: &Protocol, report: &mut Report) {
    let map = &protocol.map;
    let phase_ok = map
        .get("currentPhase")
        .and_then(Value::as_str)
        .is_some_and(|p| p.parse::<Phase>().is_ok());
    if !phase_ok {
        report.error(
            Rule::ProtocolFile,
            format!(
                "protocol.json currentPhase must be one of {}",
                Phase::NAMES.join(", ")
            ),
            Advice::PhaseFromLog,
        );
    }
    if map
        .get("objective")
        .and_then(Value::as_str)
        .is_none_or(|o| o.trim().is_empty())
    {
        report.error(
            Rule::BlankField,
            "protocol.json objective must not be blank",
            "state what the collaboration must decide or produce",
        );
    }
    if protocol.participants().is_empty() {
        report.error(
            Rule::BlankField,
            "protocol.json participants must not be empty",
            "list every participant id",
        );
    }
    if protocol.gates().is_empty() {
        report.error(
            Rule::BlankField,
            "protocol.json completionGates must not be empty",
            "list the concrete gates that end the collaboration",
        );
    }
    if map.contains_key("version") {
        report.error(
            Rule::VersionField,
            "protocol.json must not include a protocol version field",
            "remove \"version\" from protocol.json",
        );
    }
    for gate in protocol.gates() {
        for forbidden in FORBIDDEN_FILES {
            if gate.contains(forbidden) {
                report.error(
                    Rule::ForbiddenReference,
                    format!("completion gate {gate:?} references obsolete file {forbidden}"),
                    "completion gates name protocol files only",
                );
            }
        }
    }
    for field in ["waitingFor", "proposalOwner"] {
        if !map.contains_key(field) {
            report.error(
                Rule::ProtocolFile,
                format!("protocol.json {field} must be present"),
                Advice::MissingDerived,
            );
        }
    }
}

fn check_derived(protocol: &Protocol, state: &State, report: &mut Report) {
    let map = &protocol.map;
    if let Some(phase) = state.phase
        && map.get("currentPhase").and_then(Value::as_str) != Some(phase.as_str())
    {
        report.error(
            Rule::DerivedState,
            format!(
                "protocol.json currentPhase is {}, expected {phase}",
                shown(map.get("currentPhase"))
            ),
            Advice::Derived,
        );
    }
    if let (Some(found), Some(owner)) = (map.get("proposalOwner"), &state.owner)
        && found.as_str() != Some(owner.as_str())
    {
        report.error(
            Rule::DerivedState,
            format!(
                "protocol.json proposalOwner is {}, expected {owner:?}",
                shown(Some(found))
            ),
            Advice::Derived,
        );
    }
    if let Some(found) = map.get("waitingFor") {
        let expected = Value::from(state.waiting.clone());
        if *found != expected {
            report.error(
                Rule::DerivedState,
                format!(
                    "protocol.json waitingFor is {}, expected {expected}",
                    shown(Some(found))
                ),
                Advice::Derived,
            );
        }
    }
}

fn shown(value: Option<&Value>) -> String {
    value.map_or_else(|| "missing".into(), Value::to_string)
}

/// Every `review_submitted` has a heading with its seq and author, and
/// every heading belongs to such an event.
fn check_review_headings(review: &str, events: &[Logged], report: &mut Report) {
    let headings: BTreeMap<u64, String> = docs::review_headings(review).into_iter().collect();
    let by_seq: BTreeMap<u64, &Logged> =
        events.iter().filter_map(|e| Some((e.seq()?, e))).collect();
    for event in events {
        if event.name() == Some(EventName::ReviewSubmitted)
            && !event.seq().is_some_and(|s| headings.contains_key(&s))
        {
            report.error(
                Rule::ReviewHeading,
                format!(
                    "{}: review_submitted has no matching review.md heading",
                    event.label()
                ),
                Advice::ReviewHeadings,
            );
        }
    }
    for (seq, participant) in &headings {
        let message = match by_seq.get(seq) {
            None => format!("review.md heading seq {seq}: no matching event"),
            Some(e) if e.name() != Some(EventName::ReviewSubmitted) => format!(
                "review.md heading seq {seq}: matching event is {}, not review_submitted",
                shown(e.map.get("event"))
            ),
            Some(e) if e.from() != Some(participant.as_str()) => format!(
                "review.md heading seq {seq}: participant {participant:?} does not match event from {}",
                shown(e.map.get("from"))
            ),
            Some(_) => continue,
        };
        report.error(Rule::ReviewHeading, message, Advice::ReviewHeadings);
    }
}
