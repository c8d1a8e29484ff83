//! A collaboration folder and what can be done to it: start one, append an
//! event (every rule checked before a byte is written), append a review
//! with its event, classify a readiness item, ask what comes next.
//!
//! Writers hold `.acp.lock` in the folder for the whole read-check-write,
//! so two participants appending at once get continuous seqs and lose
//! nothing. The event line goes first (one `O_APPEND` write, flushed),
//! `protocol.json` after it, replaced atomically: a crash in between
//! leaves `protocol.json` behind the log, which the validator reports and
//! the next append rewrites from the log.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, SubsecRound, Utc};
use serde::Serialize;
use serde_json::{Map, Value};

use super::docs::{self, Classification, ReadinessItem, ReadinessScan};
use super::log::{self, Logged, Protocol, Shape};
use super::machine::State;
use super::sign::{self, Signer};
use super::validate::{self, Report};
use super::{
    Advice, CONCLUSION, DECISIONS, EVENTS, Event, EventName, FORBIDDEN_FILES, LOCK, PROTOCOL,
    Phase, READINESS, REVIEW, Refusal, Rule,
};
use crate::error::{CollabPart, Error, Result};
use crate::fsutil;
use crate::message::check_agent_id;

/// How long a writer waits for another to release the folder's lock.
/// What `next` tells the participant whose turn it is, in aea's own words
/// (no names): also the "Next:" line of a wake-up, which is how aea
/// recognises its own wake-ups once a collaboration has ended.
pub mod turn {
    use super::Phase;

    pub const DRAFT: &str = "write proposal.md, then append proposal_submitted";
    pub const REVIEW: &str = "read proposal.md, then append your review (`aea collab review`)";
    pub const REVISE: &str = "address the required changes of review.md in proposal.md, then append proposal_revised (or proposal_submitted for another review round)";
    pub const CLASSIFY: &str = "write the decisions in decisions.md, classify every open question in readiness.md ([resolved], [deferred_nonblocking] with Reason: …, or [blocking]), then append question_classified";
    pub const ACCEPT: &str = "read decisions.md and readiness.md; append decision_accepted if the decisions are explicit, or blocked";
    /// A wake-up in the readiness check names the step (the detail may
    /// quote readiness.md, which a wake-up never carries).
    pub const READINESS: &str = "check readiness.md and conclusion.md against the gates, then append readiness_passed or completed";
    /// A wake-up about a broken log (what is wrong quotes the log).
    pub const REPAIR: &str = "repair the folder first (`aea collab validate` lists every problem)";

    /// Whether `action` is what a wake-up in `phase` says to do next.
    pub fn is_wake_action(phase: Option<Phase>, action: &str) -> bool {
        action == REPAIR
            || match phase {
                Some(Phase::Drafting) => action == DRAFT,
                Some(Phase::Reviewing) => action == REVIEW,
                Some(Phase::Revising) => action == REVISE,
                Some(Phase::DecisionReview) => action == CLASSIFY || action == ACCEPT,
                Some(Phase::ReadinessCheck) => action == READINESS,
                _ => false,
            }
    }
}

const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Longest `summary` accepted: the protocol asks for one short sentence.
const SUMMARY_LIMIT: usize = 1000;

/// A collaboration folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folder {
    path: PathBuf,
    /// Who signs the events appended through it (see [`sign`]).
    signer: Option<Arc<Signer>>,
}

/// The sections of one review (`aea collab review`); each item becomes a
/// bullet, an empty section `- None.`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Review {
    /// The `review_submitted` event's summary; a default when blank.
    pub summary: String,
    pub position: Vec<String>,
    pub concerns: Vec<String>,
    pub required_changes: Vec<String>,
    pub questions: Vec<String>,
}

/// What an append did: the event as written, and where it left the
/// collaboration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Appended {
    pub event: Event,
    pub phase: Phase,
    pub waiting_for: Vec<String>,
    /// Who the event put into `waitingFor` (not its author, not those
    /// waited for already): the participants to tell it is their turn.
    pub woken: Vec<String>,
}

/// The last event of the log, as found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LastEvent {
    pub seq: Option<u64>,
    pub event: Option<String>,
    pub from: Option<String>,
    pub at: Option<String>,
    pub summary: Option<String>,
}

/// Where a collaboration stands for one participant (`aea collab next`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Next {
    pub participant: String,
    /// `protocol.json`'s objective (the folder's text: untrusted).
    pub objective: Option<String>,
    /// `None` before `initialized`.
    pub phase: Option<Phase>,
    pub proposal_owner: Option<String>,
    pub waiting_for: Vec<String>,
    pub last_event: Option<LastEvent>,
    /// Whether `participant` is in `waitingFor`.
    pub your_turn: bool,
    /// What `participant` does next, in words.
    pub action: String,
    /// The seq a reply names (the last event's).
    pub reply_to: Option<u64>,
    /// Whether the log obeys every rule (see `validate` for the whole folder).
    pub log_valid: bool,
}

impl Next {
    /// Whether a participant waiting for its turn can stop waiting: it is
    /// its turn, or the collaboration has ended (completed or blocked).
    pub fn settled(&self) -> bool {
        self.your_turn || matches!(self.phase, Some(Phase::Completed | Phase::Blocked))
    }
}

/// What a writer read from the folder under the lock.
struct Loaded {
    protocol: Protocol,
    events: Vec<Logged>,
    events_text: String,
    state: State,
    shape: Shape,
}

impl Folder {
    pub fn new(path: impl Into<PathBuf>) -> Folder {
        Folder {
            path: path.into(),
            signer: None,
        }
    }

    /// The folder, its events appended from now on signed by `signer`.
    #[must_use]
    pub fn signed_by(mut self, signer: Arc<Signer>) -> Folder {
        self.signer = Some(signer);
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Takes the folder's lock. aea's writers hold it for a moment; one
    /// held far longer is a hung or hostile process (any participant on
    /// the machine can open it), so the wait is bounded: an error, never a
    /// command that hangs.
    fn lock(&self) -> Result<std::fs::File> {
        fsutil::lock_within(&self.path.join(LOCK), LOCK_WAIT)
    }

    /// Starts a collaboration: `protocol.json`, `events.jsonl` with
    /// `initialized` by the first participant (the proposal owner), and
    /// the documents, each created only where missing. Refuses a folder
    /// that holds `protocol.json` unless `resume`, which then only writes
    /// missing documents and returns `None`.
    pub fn init(
        &self,
        participants: &[String],
        objective: &str,
        completion_gates: &[String],
        resume: bool,
        now: DateTime<Utc>,
    ) -> Result<Option<Event>> {
        let objective = objective.trim();
        if objective.is_empty() {
            return Err(Error::CollabIncomplete {
                missing: CollabPart::Objective,
            });
        }
        let mut ids: Vec<String> = Vec::new();
        for id in participants.iter().map(|p| p.trim()) {
            check_agent_id(id).map_err(|reason| Error::InvalidAgentId {
                id: id.to_string(),
                reason,
            })?;
            if !ids.iter().any(|i| i == id) {
                ids.push(id.to_string());
            }
        }
        let Some(owner) = ids.first().cloned() else {
            return Err(Error::CollabIncomplete {
                missing: CollabPart::Participants,
            });
        };
        let gates: Vec<String> = completion_gates
            .iter()
            .map(|g| docs::one_line(g))
            .filter(|g| !g.is_empty())
            .collect();
        if gates.is_empty() {
            return Err(Error::CollabIncomplete {
                missing: CollabPart::CompletionGates,
            });
        }
        for gate in &gates {
            if let Some(file) = FORBIDDEN_FILES.iter().find(|f| gate.contains(*f)) {
                return Err(refused(Refusal::new(
                    Rule::ForbiddenReference,
                    format!("completion gate {gate:?} names {file}, which is not a protocol file"),
                    "name protocol files only (proposal.md, decisions.md, readiness.md, conclusion.md)",
                )));
            }
        }

        if let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::io("create directory", parent, e))?;
        }
        fsutil::ensure_dir(&self.path)?;
        let _lock = self.lock()?;

        let exists = |name: &str| std::fs::symlink_metadata(self.path.join(name)).is_ok();
        if exists(PROTOCOL) && !resume {
            return Err(refused(Refusal::new(
                Rule::Exists,
                format!(
                    "{} already holds a collaboration (protocol.json)",
                    self.path.display()
                ),
                Advice::Resume,
            )));
        }
        if !exists(PROTOCOL) && exists(EVENTS) {
            return Err(refused(Refusal::new(
                Rule::Exists,
                format!(
                    "{} holds events.jsonl but no protocol.json",
                    self.path.display()
                ),
                "move events.jsonl aside or choose another folder; a log is never started over",
            )));
        }
        if exists(PROTOCOL) {
            // What makes a folder a collaboration: resume only one whose
            // protocol.json reads as one, before writing anything there.
            let text = log::read_text(&self.path, PROTOCOL, log::PROTOCOL_LIMIT)
                .map_err(refused)?
                .unwrap_or_default();
            Protocol::parse(&text).map_err(refused)?;
        }
        self.write_documents(objective, &gates)?;
        if exists(PROTOCOL) {
            return Ok(None);
        }

        // Whole seconds, as every event (see `commit`).
        let at = log::format_time(now.trunc_subsecs(0));
        let event = Event {
            seq: 1,
            from: owner.clone(),
            event: EventName::Initialized,
            at: at.clone(),
            summary: "Collaboration initialized".into(),
            doc: Some(PROTOCOL.into()),
            reply_to: None,
        };
        let mut map = Map::new();
        map.insert("objective".into(), objective.into());
        let listed: Vec<Value> = ids
            .iter()
            .map(|id| serde_json::json!({ "id": id }))
            .collect();
        map.insert("participants".into(), Value::Array(listed));
        map.insert("completionGates".into(), gates.into());
        map.insert("currentPhase".into(), Phase::Drafting.as_str().into());
        map.insert("proposalOwner".into(), owner.clone().into());
        map.insert("waitingFor".into(), vec![owner].into());
        map.insert("createdAt".into(), at.clone().into());
        map.insert("updatedAt".into(), at.into());
        let protocol = Protocol { map };

        let line = event.to_line();
        fsutil::create_exclusive(&self.path.join(EVENTS), line.as_bytes())?;
        sign::record(&self.path, self.signer.as_deref(), &line, &line, 1);
        // Last: a folder with protocol.json is an initialized one.
        fsutil::create_exclusive_whole(&self.path.join(PROTOCOL), protocol.to_text().as_bytes())?;
        Ok(Some(event))
    }

    /// Writes each missing document; never replaces one.
    fn write_documents(&self, objective: &str, gates: &[String]) -> Result<()> {
        let documents = [
            ("proposal.md", docs::proposal_skeleton(objective)),
            (REVIEW, docs::REVIEW_SKELETON.to_string()),
            ("decisions.md", docs::DECISIONS_SKELETON.to_string()),
            (READINESS, docs::readiness_skeleton(gates)),
            (CONCLUSION, docs::conclusion_skeleton()),
        ];
        for (name, text) in documents {
            fsutil::create_exclusive(&self.path.join(name), text.as_bytes())?;
        }
        Ok(())
    }

    /// Appends one event by `participant`, every rule of the protocol
    /// checked first: a refusal ([`Error::CollabRefused`]) writes nothing.
    /// Returns the event and who it puts into `waitingFor`.
    /// `at` is `now`, or the previous event's time if the clock went back.
    pub fn append(
        &self,
        participant: &str,
        event: EventName,
        summary: &str,
        doc: Option<&str>,
        reply_to: Option<u64>,
        now: DateTime<Utc>,
    ) -> Result<Appended> {
        self.commit(participant, event, summary, doc, reply_to, None, now)
    }

    /// Appends `review` to `review.md` under the heading of the
    /// `review_submitted` event it comes with, and that event, in one step:
    /// when the event is refused, `review.md` is left as it was.
    pub fn review(
        &self,
        participant: &str,
        reply_to: u64,
        review: &Review,
        now: DateTime<Utc>,
    ) -> Result<Appended> {
        let summary = if review.summary.trim().is_empty() {
            "Review submitted"
        } else {
            review.summary.as_str()
        };
        self.commit(
            participant,
            EventName::ReviewSubmitted,
            summary,
            Some(REVIEW),
            Some(reply_to),
            Some(review),
            now,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn commit(
        &self,
        participant: &str,
        name: EventName,
        summary: &str,
        doc: Option<&str>,
        reply_to: Option<u64>,
        review: Option<&Review>,
        now: DateTime<Utc>,
    ) -> Result<Appended> {
        fsutil::require_real_dir(&self.path)?;
        let summary = docs::one_line(summary);
        check_input(participant, &summary, doc).map_err(refused)?;
        let _lock = self.lock()?;
        let Loaded {
            protocol,
            events,
            events_text,
            mut state,
            mut shape,
        } = self.load().map_err(refused)?;
        if !protocol.participants().iter().any(|p| p == participant) {
            return Err(refused(Refusal::new(
                Rule::Participant,
                format!("{participant} is not a participant of this collaboration"),
                format!(
                    "the participants are: {}",
                    protocol.participants().join(", ")
                ),
            )));
        }

        let seq = events.len() as u64 + 1;
        // Whole seconds, as the protocol's tools write them; never before
        // the previous event, even when this machine's clock is behind.
        let now = now.trunc_subsecs(0);
        let at = match events.last().and_then(Logged::at) {
            Some(previous) if previous > now => previous,
            _ => now,
        };
        let event = Event {
            seq,
            from: participant.to_string(),
            event: name,
            at: log::format_time(at),
            summary,
            doc: doc.map(str::to_string),
            reply_to,
        };
        let candidate = Logged::from_event(&event);
        let mut problems = shape.check(&candidate);
        let waiting_before = state.waiting.clone();
        problems.extend(state.apply(&protocol.participants(), &candidate));

        let review_before = read_doc(&self.path, REVIEW)?;
        let review_after = match review {
            Some(review) => Some(
                with_review(review_before.as_deref().unwrap_or_default(), &event, review)
                    .map_err(refused)?,
            ),
            None => None,
        };
        let review_text = review_after.as_deref().or(review_before.as_deref());
        problems.extend(heading_problems(review_text.unwrap_or_default(), &event));
        if matches!(
            name,
            EventName::DecisionAccepted | EventName::ReadinessPassed | EventName::Completed
        ) {
            let readiness =
                docs::scan_readiness(&read_doc(&self.path, READINESS)?.unwrap_or_default());
            let conclusion = read_doc(&self.path, CONCLUSION)?.map(|t| docs::scan_conclusion(&t));
            let decisions = read_doc(&self.path, DECISIONS)?;
            problems.extend(docs::decisions_gate(name, decisions.as_deref()));
            problems.extend(docs::gate(
                name,
                &readiness,
                &protocol.gates(),
                conclusion.as_ref(),
            ));
        }
        if let Some(first) = problems.into_iter().next() {
            return Err(refused(first));
        }

        // Every rule holds: write the review, the event, then protocol.json.
        let review_path = self.path.join(REVIEW);
        if let Some(text) = &review_after {
            fsutil::replace_atomic(&review_path, text.as_bytes())?;
        }
        let mut line = event.to_line();
        if !events_text.is_empty() && !events_text.ends_with('\n') {
            line.insert(0, '\n');
        }
        if let Err(e) = append_line(&self.path.join(EVENTS), &line) {
            // The review must not stay without its event.
            if review_after.is_some() {
                let _ = match &review_before {
                    Some(before) => fsutil::replace_atomic(&review_path, before.as_bytes()),
                    None => std::fs::remove_file(&review_path)
                        .map_err(|e| Error::io("remove", &review_path, e)),
                };
            }
            return Err(e);
        }
        // The line as the log now holds it, without a newline put before it.
        let written = line.trim_start_matches('\n');
        let first = events_text.lines().find(|l| !l.trim().is_empty());
        sign::record(
            &self.path,
            self.signer.as_deref(),
            first.unwrap_or(written),
            written,
            seq,
        );
        let mut map = protocol.map;
        map.insert(
            "currentPhase".into(),
            state.phase.map_or(Value::Null, |p| p.as_str().into()),
        );
        map.insert(
            "proposalOwner".into(),
            state.owner.clone().map_or(Value::Null, Value::from),
        );
        map.insert("waitingFor".into(), state.waiting.clone().into());
        map.insert("updatedAt".into(), event.at.clone().into());
        fsutil::replace_atomic(
            &self.path.join(PROTOCOL),
            Protocol { map }.to_text().as_bytes(),
        )?;
        let woken = state
            .waiting
            .iter()
            .filter(|w| !waiting_before.contains(w) && **w != event.from)
            .cloned()
            .collect();
        Ok(Appended {
            event,
            phase: state
                .phase
                .expect("an appended event leaves the collaboration in a phase"),
            waiting_for: state.waiting,
            woken,
        })
    }

    /// Reads `protocol.json` and the log, and checks the log: a writer
    /// never appends to a log that already breaks a rule.
    fn load(&self) -> std::result::Result<Loaded, Refusal> {
        let missing = |name: &str| {
            Refusal::new(
                Rule::MissingFile,
                format!("{} has no {name}", self.path.display()),
                Advice::Init,
            )
        };
        let protocol_text = log::read_text(&self.path, PROTOCOL, log::PROTOCOL_LIMIT)?
            .ok_or_else(|| missing(PROTOCOL))?;
        let protocol = Protocol::parse(&protocol_text)?;
        let events_text = log::read_text(&self.path, EVENTS, log::EVENTS_LIMIT)?
            .ok_or_else(|| missing(EVENTS))?;
        let (events, mut problems) = log::parse_events(&events_text);
        let mut shape = Shape::default();
        for event in &events {
            problems.extend(shape.check(event));
        }
        let (state, machine_problems) = State::derive(&protocol.participants(), &events);
        problems.extend(machine_problems);
        if let Some(first) = problems.into_iter().next() {
            return Err(Refusal::new(
                first.rule,
                format!("events.jsonl already breaks a rule: {}", first.message),
                Advice::Validate,
            ));
        }
        Ok(Loaded {
            protocol,
            events,
            events_text,
            state,
            shape,
        })
    }

    /// The classified items and gates of `readiness.md`, read safely (for
    /// the readiness helper's listing).
    pub fn readiness(&self) -> Result<ReadinessScan> {
        fsutil::require_real_dir(&self.path)?;
        Ok(docs::scan_readiness(
            &read_doc(&self.path, READINESS)?.unwrap_or_default(),
        ))
    }

    /// Gives readiness item `number` (1-based, see [`docs::set_classification`])
    /// the classification `class`, under the folder's lock.
    pub fn classify(
        &self,
        number: usize,
        class: Classification,
        reason: Option<&str>,
    ) -> Result<ReadinessItem> {
        fsutil::require_real_dir(&self.path)?;
        let _lock = self.lock()?;
        let text = read_doc(&self.path, READINESS)?.ok_or_else(|| {
            refused(Refusal::new(
                Rule::MissingFile,
                format!("{} has no readiness.md", self.path.display()),
                Advice::WriteMissing { name: None },
            ))
        })?;
        let updated = docs::set_classification(&text, number, class, reason).map_err(refused)?;
        fsutil::replace_atomic(&self.path.join(READINESS), updated.as_bytes())?;
        let item = docs::readiness_items(&updated)
            .into_iter()
            .nth(number - 1)
            .expect("the item just written is there");
        Ok(item)
    }

    /// The participants `protocol.json` names (the folder's text: anyone
    /// who can write the folder decides it).
    pub fn participants(&self) -> Result<Vec<String>> {
        Ok(self.protocol()?.participants())
    }

    /// `protocol.json`, refused when the folder is no real directory or
    /// holds none.
    fn protocol(&self) -> Result<Protocol> {
        fsutil::require_real_dir(&self.path)?;
        let text = log::read_text(&self.path, PROTOCOL, log::PROTOCOL_LIMIT)
            .map_err(refused)?
            .ok_or_else(|| {
                refused(Refusal::new(
                    Rule::MissingFile,
                    format!("{} has no protocol.json", self.path.display()),
                    Advice::Init,
                ))
            })?;
        Protocol::parse(&text).map_err(refused)
    }

    /// Where the collaboration stands for `participant`, and what it does next.
    pub fn next(&self, participant: &str) -> Result<Next> {
        let protocol = self.protocol()?;
        let participants = protocol.participants();
        if !participants.iter().any(|p| p == participant) {
            return Err(refused(Refusal::new(
                Rule::Participant,
                format!("{participant} is not a participant of this collaboration"),
                format!("the participants are: {}", participants.join(", ")),
            )));
        }
        let events_text = log::read_text(&self.path, EVENTS, log::EVENTS_LIMIT)
            .map_err(refused)?
            .unwrap_or_default();
        let (events, mut problems) = log::parse_events(&events_text);
        let mut shape = Shape::default();
        for event in &events {
            problems.extend(shape.check(event));
        }
        let (state, machine_problems) = State::derive(&participants, &events);
        problems.extend(machine_problems);

        let your_turn = problems.is_empty() && state.waiting.iter().any(|w| w == participant);
        let action = match problems.first() {
            Some(first) => format!(
                "repair the folder first: {} (`aea collab validate` lists every problem)",
                first.message
            ),
            None => self.action(&state, participant)?,
        };
        Ok(Next {
            participant: participant.to_string(),
            objective: protocol
                .map
                .get("objective")
                .and_then(Value::as_str)
                .map(Into::into),
            phase: state.phase,
            proposal_owner: state.owner.clone(),
            waiting_for: state.waiting.clone(),
            last_event: events.last().map(|e| LastEvent {
                seq: e.seq(),
                event: e.map.get("event").and_then(Value::as_str).map(Into::into),
                from: e.from().map(Into::into),
                at: e.map.get("at").and_then(Value::as_str).map(Into::into),
                summary: e.summary().map(Into::into),
            }),
            your_turn,
            action,
            reply_to: events.last().and_then(Logged::seq),
            log_valid: problems.is_empty(),
        })
    }

    fn action(&self, state: &State, me: &str) -> Result<String> {
        let owner = state.owner.as_deref().unwrap_or("the proposal owner");
        let is_owner = state.owner.as_deref() == Some(me);
        let waiting = state.waiting.join(", ");
        let mine = state.waiting.iter().any(|w| w == me);
        let action = match state.phase {
            None => "initialize the collaboration (`aea collab init`)".to_string(),
            Some(Phase::Drafting) if is_owner => turn::DRAFT.into(),
            Some(Phase::Drafting) => format!("wait for {owner} to submit the proposal"),
            Some(Phase::Reviewing) if mine => turn::REVIEW.into(),
            Some(Phase::Reviewing) if is_owner => format!(
                "wait for the reviews of {waiting}; leave proposal.md, decisions.md, readiness.md and protocol.json as they are meanwhile"
            ),
            Some(Phase::Reviewing) => format!("wait for {waiting} to review"),
            Some(Phase::Revising) if is_owner => turn::REVISE.into(),
            Some(Phase::Revising) => format!("wait for {owner} to revise the proposal"),
            Some(Phase::DecisionReview) if state.awaits_classification() && is_owner => {
                turn::CLASSIFY.into()
            }
            Some(Phase::DecisionReview) if state.awaits_classification() => {
                format!("wait for {owner} to classify the open questions")
            }
            Some(Phase::DecisionReview) if mine => turn::ACCEPT.into(),
            Some(Phase::DecisionReview) => format!("wait for {waiting} to accept the decisions"),
            Some(Phase::ReadinessCheck) if is_owner => self.readiness_action(state)?,
            Some(Phase::ReadinessCheck) => {
                format!("wait for {owner} to pass readiness and complete the collaboration")
            }
            Some(Phase::Completed) => "nothing: the collaboration is completed".into(),
            Some(Phase::Blocked) => {
                "nothing: the collaboration is blocked; resolve the blocker in a new one".into()
            }
        };
        Ok(action)
    }

    fn readiness_action(&self, state: &State) -> Result<String> {
        let readiness = docs::scan_readiness(&read_doc(&self.path, READINESS)?.unwrap_or_default());
        let event = if state.readiness_passed {
            EventName::Completed
        } else {
            EventName::ReadinessPassed
        };
        let conclusion = read_doc(&self.path, CONCLUSION)?.map(|t| docs::scan_conclusion(&t));
        let protocol = log::read_text(&self.path, PROTOCOL, log::PROTOCOL_LIMIT)
            .ok()
            .flatten()
            .and_then(|t| Protocol::parse(&t).ok())
            .unwrap_or_default();
        let decisions = read_doc(&self.path, DECISIONS)?;
        let problems: Vec<_> = docs::decisions_gate(event, decisions.as_deref())
            .into_iter()
            .chain(docs::gate(
                event,
                &readiness,
                &protocol.gates(),
                conclusion.as_ref(),
            ))
            .collect();
        Ok(match problems.first() {
            // The gates' advice names no command.
            Some(first) => match &first.advice {
                Advice::Plain(advice) => format!("{advice}: {}", first.message),
                _ => first.message.clone(),
            },
            None if event == EventName::ReadinessPassed => "append readiness_passed".into(),
            None => "append completed with --doc conclusion.md".into(),
        })
    }

    /// Validates the folder (see [`validate::validate`]).
    pub fn validate(&self) -> Result<Report> {
        validate::validate(&self.path)
    }
}

fn refused(refusal: Refusal) -> Error {
    Error::CollabRefused(Box::new(refusal))
}

/// Reads a document of the folder, capped, never through a symlink.
fn read_doc(folder: &Path, name: &str) -> Result<Option<String>> {
    log::read_text(folder, name, log::DOCUMENT_LIMIT).map_err(refused)
}

/// The checks on what the caller gives, before the folder is read.
fn check_input(
    participant: &str,
    summary: &str,
    doc: Option<&str>,
) -> std::result::Result<(), Refusal> {
    if participant.is_empty() || participant.chars().any(char::is_control) {
        return Err(Refusal::new(
            Rule::Participant,
            format!("{participant:?} is not a participant id"),
            "pass the id listed in protocol.json",
        ));
    }
    if summary.is_empty() {
        return Err(Refusal::new(
            Rule::EventField,
            "the summary must not be blank",
            Advice::Summary,
        ));
    }
    if summary.chars().count() > SUMMARY_LIMIT {
        return Err(Refusal::new(
            Rule::EventField,
            format!("the summary is over {SUMMARY_LIMIT} characters"),
            "one short sentence; the documents hold the detail",
        ));
    }
    if let Some(doc) = doc
        && !is_plain_name(doc)
    {
        return Err(Refusal::new(
            Rule::DocPath,
            format!("doc {doc:?} is not a plain file name inside the folder"),
            "name a file of the collaboration folder, such as proposal.md (no folders, no ..)",
        ));
    }
    Ok(())
}

/// A file name with no folder part: not empty, not `.` or `..`, no
/// separators, no control characters.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 255
        && !name.contains(['/', '\\'])
        && !name.chars().any(char::is_control)
}

/// `text` (review.md) with `review` appended under the heading of `event`,
/// its review_submitted.
fn with_review(text: &str, event: &Event, review: &Review) -> std::result::Result<String, Refusal> {
    let section = docs::review_section(
        &event.at,
        &event.from,
        event.seq,
        event.reply_to.unwrap_or(0),
        [
            ("Position", &review.position),
            ("Concerns", &review.concerns),
            ("Required Changes", &review.required_changes),
            ("Questions", &review.questions),
        ],
    );
    // An id another tool allowed (` - ` or `seq 9` in it) could make a
    // heading that reads back as someone else's or another seq.
    let heading = section.lines().find(|l| l.starts_with("## ")).unwrap_or("");
    if docs::review_heading(heading) != Some((event.seq, event.from.clone())) {
        return Err(Refusal::new(
            Rule::Participant,
            format!("{:?} cannot be written in a review heading", event.from),
            "participant ids are plain words (letters, digits, `_`, `-`)",
        ));
    }
    let mut out = text.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&section);
    Ok(out)
}

/// A review heading for `event`'s seq other than its own review.
fn heading_problems(review_text: &str, event: &Event) -> Vec<Refusal> {
    let headings = docs::review_headings(review_text);
    let for_seq: Vec<&String> = headings
        .iter()
        .filter(|(seq, _)| *seq == event.seq)
        .map(|(_, p)| p)
        .collect();
    if event.event == EventName::ReviewSubmitted {
        // The protocol's tools read the last heading of a seq.
        if for_seq.last().map(|p| p.as_str()) != Some(event.from.as_str()) {
            return vec![Refusal::new(
                Rule::ReviewHeading,
                format!(
                    "review.md has no heading `## <time> - {} - seq {}` for this review_submitted",
                    event.from, event.seq
                ),
                Advice::Review,
            )];
        }
    } else if !for_seq.is_empty() {
        return vec![Refusal::new(
            Rule::ReviewHeading,
            format!(
                "review.md already has a review headed seq {}, which would belong to this {}",
                event.seq, event.event
            ),
            "a review heading carries the seq of its own review_submitted; correct the heading in review.md",
        )];
    }
    Vec::new()
}

/// Appends `line` to the log: one write on an `O_APPEND` descriptor,
/// flushed before returning.
fn append_line(path: &Path, line: &str) -> Result<()> {
    let mut file = fsutil::open_append(path)?;
    file.write_all(line.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| Error::io("append to", path, e))
}
