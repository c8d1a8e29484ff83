//! The validator: every check the protocol lists, on a folder as found —
//! required and forbidden files, `protocol.json`'s fields, the shape of the
//! log, the phase transitions and turns, `protocol.json` agreeing with the
//! log, review headings, readiness, conclusion and completion order.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::Value;

use super::deliverables::{self, Deliverables, Role, Schema};
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
    /// The schema the folder was judged by; `None` when `protocol.json`
    /// could not be read or declares a schema aea does not speak.
    pub schema: Option<Schema>,
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
    // A schema aea does not speak is one clear error: judged by the rules
    // of another schema it would only give misleading ones.
    let schema = match protocol.schema() {
        Ok(schema) => schema,
        Err(refusal) => {
            report.errors.push(refusal.into());
            return Ok(report);
        }
    };
    report.schema = Some(schema);
    check_protocol_fields(&protocol, schema, &mut report);
    let declared = Deliverables::of(&protocol);
    let declaration_ok = match schema {
        Schema::One => true,
        Schema::Two => {
            let problems = Deliverables::declaration_problems(&protocol, folder);
            let ok = problems.is_empty();
            report
                .errors
                .extend(problems.into_iter().map(Finding::from));
            ok
        }
    };

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
    let mut shape = Shape::new(schema);
    for event in &events {
        report
            .errors
            .extend(shape.check(event).into_iter().map(Finding::from));
        report
            .warnings
            .extend(log::event_warnings(event, schema).map(Finding::from));
    }
    let has = |name: EventName| events.iter().any(|e| e.name() == Some(name));
    let primary_ref = declared.primary_ref();
    if let Some(review) = texts.get(REVIEW) {
        check_review_headings(review, &events, &mut report);
        if schema == Schema::Two && has(EventName::ReviewSubmitted) {
            report.errors.extend(
                docs::review_scope_problems(review, primary_ref.as_deref())
                    .into_iter()
                    .map(Finding::from),
            );
        }
    }
    let (state, problems) = State::derive(schema, &participants, &events);
    report
        .errors
        .extend(problems.into_iter().map(Finding::from));
    check_derived(&protocol, &state, &mut report);
    if schema == Schema::Two && declaration_ok {
        let frozen_content =
            state.primary_frozen || has(EventName::ReadinessPassed) || has(EventName::Completed);
        check_deliverables(folder, &declared, &events, frozen_content, &mut report);
        if let Some(decisions) = texts.get(super::DECISIONS) {
            report.errors.extend(
                docs::decisions_problems(decisions, &declared.refs())
                    .into_iter()
                    .map(Finding::from),
            );
        }
    }

    let readiness = docs::scan_readiness(texts.get(READINESS).map_or("", String::as_str));
    let conclusion = texts.get(CONCLUSION).map(|t| {
        docs::scan_conclusion_for(
            t,
            schema,
            primary_ref.as_deref().filter(|_| schema == Schema::Two),
        )
    });
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

/// Schema 2: the deliverable events against the declaration and the
/// files (a doc that is declared, a freeze whose hash still matches, a
/// supporting freeze marked in protocol.json), and the deliverables' text.
fn check_deliverables(
    folder: &Path,
    declared: &Deliverables,
    events: &[Logged],
    frozen_content: bool,
    report: &mut Report,
) {
    let mut frozen_refs: Vec<String> = Vec::new();
    for event in events {
        let Some(name) = event.name().filter(|n| n.is_deliverable()) else {
            continue;
        };
        let (Some(role), Some(doc)) = (event.role(), event.doc()) else {
            continue;
        };
        let Some(item) = declared.by_ref(doc, role) else {
            report.error(
                Rule::DeliverableEvent,
                format!(
                    "{}: doc {doc:?} is not the {role} deliverable protocol.json declares",
                    event.label()
                ),
                "a deliverable event names the deliverable as protocol.json declares it",
            );
            continue;
        };
        if name != EventName::DeliverableFrozen {
            continue;
        }
        let Some(sha) = event.sha256().filter(|s| deliverables::is_sha256(s)) else {
            continue;
        };
        match declared.read(folder, &item.file) {
            Ok(Some(bytes)) if crate::fsutil::sha256_hex(&bytes) != sha => report.error(
                Rule::DeliverableEvent,
                format!(
                    "{}: {doc} no longer matches the sha256 it was frozen with",
                    event.label()
                ),
                "a frozen deliverable keeps its bytes; restore it as frozen",
            ),
            Ok(Some(_)) => {}
            Ok(None) => report.error(
                Rule::DeliverableContent,
                format!("{}: the frozen deliverable {doc} is missing", event.label()),
                "restore it as frozen",
            ),
            Err(refusal) => report.errors.push(refusal.into()),
        }
        frozen_refs.push(doc.to_string());
    }
    for item in &declared.supporting {
        let reference = declared.reference(&item.file);
        let has_event = frozen_refs.contains(&reference);
        if item.frozen && !has_event {
            report.error(
                Rule::DeliverableOrder,
                format!("supporting deliverable {reference} is marked frozen but has no deliverable_frozen event"),
                "append deliverable_frozen for it (aea marks it frozen in protocol.json then)",
            );
        } else if !item.frozen && has_event {
            report.error(
                Rule::DeliverableOrder,
                format!("supporting deliverable {reference} has a deliverable_frozen event but protocol.json does not mark it frozen"),
                "set \"frozen\": true on it in protocol.json",
            );
        }
    }
    let documents = declared
        .primary
        .iter()
        .map(|p| (p, Role::Primary))
        .chain(declared.supporting.iter().map(|s| (s, Role::Supporting)));
    for (item, role) in documents {
        let reference = declared.reference(&item.file);
        let frozen = match role {
            Role::Primary => frozen_content,
            Role::Supporting => item.frozen || frozen_refs.contains(&reference),
        };
        match declared.read(folder, &item.file) {
            Ok(Some(bytes)) => {
                let text = String::from_utf8_lossy(&bytes);
                report.errors.extend(
                    deliverables::content_problems(&reference, item, &text, frozen)
                        .into_iter()
                        .map(Finding::from),
                );
            }
            Ok(None) => report.error(
                Rule::DeliverableContent,
                format!("{role} deliverable {reference} is missing"),
                match role {
                    Role::Primary => "write the primary deliverable (`aea collab init --resume` writes its template)",
                    Role::Supporting => "write the supporting deliverable, or remove it from protocol.json",
                },
            ),
            Err(refusal) => report.errors.push(refusal.into()),
        }
    }
    for file in &declared.attachments {
        if deliverables::path_escapes(file) {
            continue;
        }
        if let Ok(None) = declared.read(folder, file) {
            report.error(
                Rule::DeliverableContent,
                format!("attachment {} is missing", declared.reference(file)),
                "add the attachment, or remove it from protocol.json",
            );
        }
    }
}

fn check_protocol_fields(protocol: &Protocol, schema: Schema, report: &mut Report) {
    let map = &protocol.map;
    if schema == Schema::Two {
        if map.get("protocol").and_then(Value::as_str) != Some("acp") {
            report.error(
                Rule::Schema,
                format!(
                    "protocol.json protocol is {}, expected \"acp\" (ACP schema 2)",
                    shown(map.get("protocol"))
                ),
                "a schema 2 folder says \"protocol\": \"acp\" in protocol.json",
            );
        }
        if map.get("schemaVersion").and_then(Value::as_u64) != Some(2) {
            report.error(
                Rule::Schema,
                "protocol.json names protocol acp but no schemaVersion; schema 2 folders say \"schemaVersion\": 2",
                "add \"schemaVersion\": 2 to protocol.json",
            );
        }
    }
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
    } else if schema == Schema::Two
        && let Some(Value::Array(gates)) = map.get("completionGates")
    {
        for (index, gate) in gates.iter().enumerate() {
            let ok = gate.as_object().is_some_and(|g| {
                matches!(
                    g.get("source").and_then(Value::as_str),
                    Some("objective" | "generated")
                ) && g
                    .get("text")
                    .and_then(Value::as_str)
                    .is_some_and(|t| !t.trim().is_empty())
            });
            if !ok {
                report.error(
                    Rule::ProtocolFile,
                    format!(
                        "protocol.json completionGates[{}] must be an object with source (objective or generated) and text",
                        index + 1
                    ),
                    "schema 2 writes each gate as {\"source\": \"objective\", \"text\": …}",
                );
            }
        }
    }
    if schema == Schema::One && map.contains_key("version") {
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
