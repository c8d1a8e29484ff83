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

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, SubsecRound, Utc};
use serde::Serialize;
use serde_json::{Map, Value};

use super::deliverables::{self, DeliverableType, Deliverables, Role, Schema};
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

    /// Schema 2 (the deliverable is named by `protocol.json`, which a
    /// wake-up never quotes: `aea collab next` and the folder say which).
    pub const DRAFT_DELIVERABLE: &str = "write the primary deliverable (deliverables.primary of protocol.json), append deliverable_drafted, write proposal.md, then append proposal_submitted";
    pub const REVIEW_DELIVERABLE: &str = "read proposal.md and the primary deliverable, then append your review (`aea collab review`)";
    pub const REVISE_DELIVERABLE: &str = "address the required changes of review.md in proposal.md and the primary deliverable (append deliverable_revised when it changed), then append proposal_revised (or proposal_submitted for another review round)";
    pub const CLASSIFY_DECISIONS: &str = "write the decisions in decisions.md (### D1. <title> with - Decision: and - Reflected in: the deliverable), classify every open question in readiness.md ([resolved], [deferred_nonblocking] with Reason: …, or [blocking]), then append question_classified";
    /// Schema 2, readiness check, before the freeze (`aea collab next`
    /// says this too).
    pub const FREEZE: &str = "fill every section of the primary deliverable, set its Status: Frozen, then append deliverable_frozen (aea records its sha256); readiness_passed and completed follow";

    /// Whether `action` is what a wake-up in `phase` says to do next.
    pub fn is_wake_action(phase: Option<Phase>, action: &str) -> bool {
        action == REPAIR
            || match phase {
                Some(Phase::Drafting) => action == DRAFT || action == DRAFT_DELIVERABLE,
                Some(Phase::Reviewing) => action == REVIEW || action == REVIEW_DELIVERABLE,
                Some(Phase::Revising) => action == REVISE || action == REVISE_DELIVERABLE,
                Some(Phase::DecisionReview) => {
                    action == CLASSIFY || action == CLASSIFY_DECISIONS || action == ACCEPT
                }
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

/// How `init` starts a collaboration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Init {
    /// The participants' ids; the first owns the proposal.
    pub participants: Vec<String>,
    pub objective: String,
    /// The objective's completion gates (schema 2 adds the generated ones).
    pub completion_gates: Vec<String>,
    pub schema: Schema,
    /// Schema 2: the primary deliverable's type.
    pub primary_type: DeliverableType,
    /// Schema 2: its Markdown file (a plain name); the type's default file
    /// when `None` (required for `custom`).
    pub primary_file: Option<String>,
    /// Schema 2: the sections of a `custom` deliverable (its checklist).
    pub primary_checks: Vec<String>,
    /// Schema 2: the directory of the deliverables, inside the folder.
    pub deliverables_dir: String,
    /// Keep an existing collaboration, writing only missing documents.
    pub resume: bool,
}

impl Init {
    /// A schema 2 start with a `design-spec` primary deliverable in
    /// `deliverables/`.
    pub fn new(participants: &[String], objective: &str, completion_gates: &[String]) -> Init {
        Init {
            participants: participants.to_vec(),
            objective: objective.to_string(),
            completion_gates: completion_gates.to_vec(),
            schema: Schema::Two,
            primary_type: DeliverableType::DesignSpec,
            primary_file: None,
            primary_checks: Vec::new(),
            deliverables_dir: "deliverables".into(),
            resume: false,
        }
    }

    /// The primary deliverable to declare, its options checked.
    fn declaration(&self) -> std::result::Result<deliverables::Declared, Refusal> {
        let bad = |message: String, advice: &str| {
            Refusal::new(Rule::Deliverables, message, Advice::Plain(advice.into()))
        };
        let checks: Vec<String> = self
            .primary_checks
            .iter()
            .map(|c| docs::one_line(c))
            .filter(|c| !c.is_empty())
            .collect();
        let custom = self.primary_type == DeliverableType::Custom;
        if custom && self.primary_file.is_none() {
            return Err(bad(
                "a custom deliverable needs its file named".into(),
                "name it with --primary-deliverable-file NAME.md",
            ));
        }
        if custom && checks.is_empty() {
            return Err(bad(
                "a custom deliverable needs at least one section to check".into(),
                "name each required section with --primary-deliverable-check TEXT",
            ));
        }
        let file = self
            .primary_file
            .clone()
            .or_else(|| self.primary_type.default_file().map(str::to_string))
            .unwrap_or_default();
        if !deliverables::is_markdown(&file) || !is_plain_name(&file) || file == ".md" {
            return Err(bad(
                format!(
                    "the primary deliverable file {file:?} must be a plain Markdown file name (NAME.md)"
                ),
                "name a .md file without folders; it is written into the deliverables directory",
            ));
        }
        let dir = &self.deliverables_dir;
        let parts_ok = !dir.is_empty()
            && dir
                .split('/')
                .all(|p| is_plain_name(p) && p != "." && p != "..");
        if !parts_ok {
            return Err(bad(
                format!(
                    "the deliverables directory {dir:?} must be relative, inside the folder, without . or .."
                ),
                "name a directory such as deliverables",
            ));
        }
        Ok(deliverables::Declared {
            kind: Some(self.primary_type),
            file,
            checklist: checks,
            frozen: false,
        })
    }
}

/// The participants as `protocol.json` lists them: `{"id": …}` objects.
fn participant_list(ids: &[String]) -> Value {
    Value::Array(
        ids.iter()
            .map(|id| serde_json::json!({ "id": id }))
            .collect(),
    )
}

/// Schema 2's `objectiveGates`, the strings among them.
fn objective_gates(protocol: &Protocol) -> Vec<String> {
    match protocol.map.get("objectiveGates") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
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
    /// The ACP schema the folder speaks (1 or 2).
    pub schema: Schema,
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

/// The fields of an event besides its author, name and summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields {
    /// The document the event is about.
    pub doc: Option<String>,
    /// The seq of the event this one answers.
    pub reply_to: Option<u64>,
    /// Schema 2, `deliverable_*`: primary or supporting.
    pub role: Option<Role>,
    /// Schema 2, `deliverable_frozen`: the SHA-256 the caller froze.
    pub sha256: Option<String>,
}

/// What a writer read from the folder under the lock.
struct Loaded {
    protocol: Protocol,
    schema: Schema,
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
    /// the documents (in schema 2 the primary deliverable's template too),
    /// each created only where missing. Refuses a folder that holds
    /// `protocol.json` unless `resume`, which then only writes missing
    /// documents, in the schema the folder already speaks, and returns
    /// `None`.
    pub fn init(&self, init: &Init, now: DateTime<Utc>) -> Result<Option<Event>> {
        let objective = init.objective.trim();
        if objective.is_empty() {
            return Err(Error::CollabIncomplete {
                missing: CollabPart::Objective,
            });
        }
        let mut ids: Vec<String> = Vec::new();
        for id in init.participants.iter().map(|p| p.trim()) {
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
        let gates: Vec<String> = init
            .completion_gates
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
        let declared = match init.schema {
            Schema::One => None,
            Schema::Two => Some(init.declaration().map_err(refused)?),
        };

        if let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::io("create directory", parent, e))?;
        }
        fsutil::ensure_dir(&self.path)?;
        let _lock = self.lock()?;

        let exists = |name: &str| std::fs::symlink_metadata(self.path.join(name)).is_ok();
        if exists(PROTOCOL) && !init.resume {
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
            // protocol.json reads as one, before writing anything there;
            // its missing documents are those of its own schema.
            let text = log::read_text(&self.path, PROTOCOL, log::PROTOCOL_LIMIT)
                .map_err(refused)?
                .unwrap_or_default();
            let found = Protocol::parse(&text).map_err(refused)?;
            let schema = found.schema().map_err(refused)?;
            let found_gates = found.gates();
            match schema {
                Schema::One => self.write_documents(objective, &found_gates)?,
                Schema::Two => {
                    let d = Deliverables::of(&found);
                    let objective_gates = objective_gates(&found);
                    self.write_documents_2(objective, &objective_gates, &found_gates, &d)?;
                }
            }
            return Ok(None);
        }

        // Whole seconds, as every event (see `commit`).
        let at = log::format_time(now.trunc_subsecs(0));
        let mut map = Map::new();
        let summary = match &declared {
            None => {
                self.write_documents(objective, &gates)?;
                map.insert("objective".into(), objective.into());
                map.insert("participants".into(), participant_list(&ids));
                map.insert("completionGates".into(), gates.into());
                "Collaboration initialized"
            }
            Some(primary) => {
                let kind = primary.kind.unwrap_or(DeliverableType::Custom);
                let mut d = Deliverables {
                    dir: init.deliverables_dir.clone(),
                    primary: Some(primary.clone()),
                    ..Deliverables::default()
                };
                d.external = false;
                let primary_ref = d.primary_ref().unwrap_or_default();
                let generated = super::schema::generated_gates(&primary_ref, kind);
                let all: Vec<String> = gates.iter().chain(&generated).cloned().collect();
                self.write_documents_2(objective, &gates, &all, &d)?;
                let gate_objects: Vec<Value> = gates
                    .iter()
                    .map(|g| serde_json::json!({ "source": "objective", "text": g }))
                    .chain(
                        generated
                            .iter()
                            .map(|g| serde_json::json!({ "source": "generated", "text": g })),
                    )
                    .collect();
                map.insert("protocol".into(), "acp".into());
                map.insert("schemaVersion".into(), 2.into());
                map.insert("objective".into(), objective.into());
                map.insert("objectiveGates".into(), gates.clone().into());
                map.insert("participants".into(), participant_list(&ids));
                map.insert("completionGates".into(), Value::Array(gate_objects));
                map.insert(
                    "deliverables".into(),
                    serde_json::json!({
                        "mode": "internal",
                        "dir": init.deliverables_dir,
                        "owner": owner,
                        "coAuthors": [],
                        "primary": {
                            "type": kind.as_str(),
                            "file": primary.file,
                            "checklist": primary.checklist,
                        },
                        "supporting": [],
                        "attachments": [],
                    }),
                );
                "Collaboration initialized (ACP schema 2)"
            }
        };
        let event = Event {
            seq: 1,
            from: owner.clone(),
            event: EventName::Initialized,
            at: at.clone(),
            summary: summary.into(),
            doc: Some(PROTOCOL.into()),
            reply_to: None,
            role: None,
            sha256: None,
        };
        map.insert("currentPhase".into(), Phase::Drafting.as_str().into());
        map.insert("proposalOwner".into(), owner.clone().into());
        map.insert("waitingFor".into(), vec![owner].into());
        map.insert("createdAt".into(), at.clone().into());
        map.insert("updatedAt".into(), at.into());
        let protocol = Protocol { map };

        let line = event.to_line();
        fsutil::create_exclusive(&self.path.join(EVENTS), line.as_bytes())?;
        sign::record(
            &self.path,
            self.signer.as_deref(),
            &sign::collaboration(&line, &protocol),
            &line,
            1,
        );
        // Last: a folder with protocol.json is an initialized one.
        fsutil::create_exclusive_whole(
            &self.path.join(PROTOCOL),
            protocol.to_text(init.schema).as_bytes(),
        )?;
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

    /// Writes each missing document of a schema 2 folder, and the primary
    /// deliverable's template when it is kept in the folder; never
    /// replaces one. `all_gates` are the objective's and the generated
    /// ones, in that order.
    fn write_documents_2(
        &self,
        objective: &str,
        objective_gates: &[String],
        all_gates: &[String],
        d: &Deliverables,
    ) -> Result<()> {
        let primary_ref = d.primary_ref().unwrap_or_default();
        let kind = d
            .primary
            .as_ref()
            .and_then(|p| p.kind)
            .map_or("custom", DeliverableType::as_str);
        let generated: Vec<String> = all_gates
            .iter()
            .filter(|g| !objective_gates.contains(g))
            .cloned()
            .collect();
        let documents = [
            (
                "proposal.md",
                docs::proposal_skeleton_2(objective, &primary_ref),
            ),
            (REVIEW, docs::REVIEW_SKELETON_2.to_string()),
            ("decisions.md", docs::DECISIONS_SKELETON_2.to_string()),
            (
                READINESS,
                docs::readiness_skeleton_2(objective_gates, &generated, &primary_ref),
            ),
            (CONCLUSION, docs::conclusion_skeleton_2(&primary_ref, kind)),
        ];
        for (name, text) in documents {
            fsutil::create_exclusive(&self.path.join(name), text.as_bytes())?;
        }
        // Only inside the folder: aea writes nowhere else.
        let Some(primary) = d.primary.as_ref().filter(|_| !d.external) else {
            return Ok(());
        };
        if deliverables::path_escapes(&d.dir)
            || deliverables::path_escapes(&primary.file)
            || !is_plain_name(&primary.file)
        {
            return Ok(());
        }
        let mut dir = self.path.clone();
        for part in d.dir.split('/').filter(|p| !p.is_empty() && *p != ".") {
            dir.push(part);
            fsutil::ensure_dir(&dir)?;
        }
        fsutil::create_exclusive(
            &dir.join(&primary.file),
            deliverables::template(primary).as_bytes(),
        )?;
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
        let fields = Fields {
            doc: doc.map(str::to_string),
            reply_to,
            ..Fields::default()
        };
        self.commit(participant, event, summary, &fields, None, now)
    }

    /// [`Folder::append`] with every field an event may carry: in schema 2
    /// a `deliverable_*` event's `role` and `sha256`. For those, `doc`
    /// defaults to the deliverable of `role` (the primary one when no role
    /// is given), `role` to the one `doc` is declared as, and the `sha256`
    /// of `deliverable_frozen` to the file's own (one given must match it).
    pub fn append_fields(
        &self,
        participant: &str,
        event: EventName,
        summary: &str,
        fields: &Fields,
        now: DateTime<Utc>,
    ) -> Result<Appended> {
        self.commit(participant, event, summary, fields, None, now)
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
        let fields = Fields {
            doc: Some(REVIEW.into()),
            reply_to: Some(reply_to),
            ..Fields::default()
        };
        self.commit(
            participant,
            EventName::ReviewSubmitted,
            summary,
            &fields,
            Some(review),
            now,
        )
    }

    fn commit(
        &self,
        participant: &str,
        name: EventName,
        summary: &str,
        fields: &Fields,
        review: Option<&Review>,
        now: DateTime<Utc>,
    ) -> Result<Appended> {
        fsutil::require_real_dir(&self.path)?;
        let summary = docs::one_line(summary);
        check_input(participant, &summary).map_err(refused)?;
        let _lock = self.lock()?;
        let Loaded {
            protocol,
            schema,
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
        if !schema.has_event(name) {
            return Err(refused(deliverables::not_in_schema_one(name.as_str())));
        }
        let declared = Deliverables::of(&protocol);
        let (doc, role) = event_doc(schema, name, fields, &declared).map_err(refused)?;
        if (fields.role.is_some() || fields.sha256.is_some()) && !name.is_deliverable() {
            return Err(refused(Refusal::new(
                Rule::DeliverableEvent,
                format!("{name} carries no role or sha256; only deliverable_* events do"),
                "leave --role and --sha256 out",
            )));
        }
        // A deliverable event's file: read safely, its text checked, its
        // hash recorded on freezing.
        let mut sha256 = None;
        let mut problems = Vec::new();
        if let (Some(role), Some(doc)) = (role, doc.as_deref()) {
            let item = declared
                .by_ref(doc, role)
                .cloned()
                .expect("event_doc found the deliverable");
            let bytes = declared
                .read(&self.path, &item.file)
                .map_err(refused)?
                .ok_or_else(|| {
                    refused(Refusal::new(
                        Rule::DeliverableContent,
                        format!("the deliverable {doc} does not exist"),
                        "write the deliverable first (`aea collab init` writes a template of the primary one)",
                    ))
                })?;
            let text = String::from_utf8(bytes.clone()).map_err(|_| {
                refused(Refusal::new(
                    Rule::UnsafeFile,
                    format!("the deliverable {doc} is not UTF-8 text"),
                    "a deliverable is a Markdown file",
                ))
            })?;
            let freezing = name == EventName::DeliverableFrozen;
            problems.extend(deliverables::content_problems(doc, &item, &text, freezing));
            if freezing {
                let actual = crate::fsutil::sha256_hex(&bytes);
                if let Some(given) = &fields.sha256
                    && *given != actual
                {
                    return Err(refused(Refusal::new(
                        Rule::DeliverableEvent,
                        format!("the sha256 given is not that of {doc} as it is now ({actual})"),
                        "freeze the file as it is: leave --sha256 out and aea records its hash, or pass the hash of the file's current bytes",
                    )));
                }
                sha256 = Some(actual);
            }
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
            doc,
            reply_to: fields.reply_to,
            role,
            sha256,
        };
        let candidate = Logged::from_event(&event);
        problems.splice(0..0, shape.check(&candidate));
        let waiting_before = state.waiting.clone();
        let machine = state.apply(&protocol.participants(), &candidate);
        problems.splice(0..0, machine);

        let review_before = read_doc(&self.path, REVIEW)?;
        let review_after = match review {
            Some(review) => Some(
                with_review(
                    review_before.as_deref().unwrap_or_default(),
                    &event,
                    review,
                    (schema == Schema::Two).then_some(&declared),
                )
                .map_err(refused)?,
            ),
            None => None,
        };
        let review_text = review_after.as_deref().or(review_before.as_deref());
        problems.extend(heading_problems(review_text.unwrap_or_default(), &event));
        if schema == Schema::Two && name == EventName::ReviewSubmitted {
            // This review itself says what it reviewed (the protocol's
            // tools look anywhere in review.md; aea holds each review to it).
            let body = docs::review_body(review_text.unwrap_or_default(), event.seq);
            problems.extend(docs::review_scope_problems(
                &body,
                declared.primary_ref().as_deref(),
            ));
        }
        if matches!(
            name,
            EventName::DecisionAccepted | EventName::ReadinessPassed | EventName::Completed
        ) {
            problems.extend(self.document_gates(&protocol, schema, &declared, &events, name)?);
        }
        if let Some(first) = problems.into_iter().next() {
            return Err(refused(first));
        }

        // Every rule holds: write the review, the event, then protocol.json.
        let review_path = self.path.join(REVIEW);
        if let Some(text) = &review_after {
            fsutil::replace_atomic(&review_path, text.as_bytes())?;
        }
        if let Err(e) = log::append(&self.path, &events_text, &event) {
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
        // The line as the log now holds it (a digest leaves out line ends).
        let line = event.to_line();
        let written = line.as_str();
        let first = events_text.lines().find(|l| !l.trim().is_empty());
        sign::record(
            &self.path,
            self.signer.as_deref(),
            &sign::collaboration(first.unwrap_or(written), &protocol),
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
        if name == EventName::DeliverableFrozen && role == Some(Role::Supporting) {
            // The protocol marks a frozen supporting deliverable in
            // protocol.json too; its validator wants both or neither.
            mark_supporting_frozen(
                &mut map,
                &declared,
                event.doc.as_deref().unwrap_or_default(),
            );
        }
        fsutil::replace_atomic(
            &self.path.join(PROTOCOL),
            Protocol { map }.to_text(schema).as_bytes(),
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

    /// The document gates of `decision_accepted`, `readiness_passed` and
    /// `completed`: readiness, decisions, the completion gates and the
    /// conclusion; in schema 2 also the frozen deliverable as frozen.
    fn document_gates(
        &self,
        protocol: &Protocol,
        schema: Schema,
        declared: &Deliverables,
        events: &[Logged],
        name: EventName,
    ) -> Result<Vec<Refusal>> {
        let mut problems = Vec::new();
        let readiness = docs::scan_readiness(&read_doc(&self.path, READINESS)?.unwrap_or_default());
        let primary_ref = declared.primary_ref();
        let conclusion = read_doc(&self.path, CONCLUSION)?.map(|t| {
            docs::scan_conclusion_for(
                &t,
                schema,
                primary_ref.as_deref().filter(|_| schema == Schema::Two),
            )
        });
        let decisions = read_doc(&self.path, DECISIONS)?;
        if schema == Schema::Two {
            problems.extend(docs::decisions_problems(
                decisions.as_deref().unwrap_or_default(),
                &declared.refs(),
            ));
        }
        problems.extend(docs::decisions_gate(name, decisions.as_deref(), schema));
        problems.extend(docs::gate(
            name,
            &readiness,
            &protocol.gates(),
            conclusion.as_ref(),
        ));
        if schema == Schema::Two && name != EventName::DecisionAccepted {
            problems.extend(frozen_problems(&self.path, declared, events));
        }
        Ok(problems)
    }
    /// Reads `protocol.json` and the log, and checks the log: a writer
    /// never appends to a log that already breaks a rule, nor to a folder
    /// of a schema aea does not read.
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
        let schema = protocol.schema()?;
        let events_text = log::read_text(&self.path, EVENTS, log::EVENTS_LIMIT)?
            .ok_or_else(|| missing(EVENTS))?;
        let (events, mut problems) = log::parse_events(&events_text);
        let mut shape = Shape::new(schema);
        for event in &events {
            problems.extend(shape.check(event));
        }
        let (state, machine_problems) = State::derive(schema, &protocol.participants(), &events);
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
            schema,
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
        let (schema, events, state, problems) = self.derive(&protocol, &participants)?;
        let your_turn = problems.is_empty() && state.waiting.iter().any(|w| w == participant);
        let action = match problems.first() {
            Some(first) => format!(
                "repair the folder first: {} (`aea collab validate` lists every problem)",
                first.message
            ),
            None => self.action(&protocol, &events, &state, participant)?,
        };
        Ok(Next {
            participant: participant.to_string(),
            schema,
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

    /// The phase the event log gives, when every rule of it holds: what a
    /// hook asks of a folder (has it ended?), without the documents and
    /// deliverables [`Folder::next`] reads for its next action.
    pub fn valid_phase(&self) -> Result<Option<Phase>> {
        let protocol = self.protocol()?;
        let (_, _, state, problems) = self.derive(&protocol, &protocol.participants())?;
        Ok(if problems.is_empty() {
            state.phase
        } else {
            None
        })
    }

    /// The folder's schema, its events, the state they give and every
    /// problem of the log's shape and order.
    fn derive(
        &self,
        protocol: &Protocol,
        participants: &[String],
    ) -> Result<(Schema, Vec<Logged>, State, Vec<Refusal>)> {
        let schema = protocol.schema().map_err(refused)?;
        let events_text = log::read_text(&self.path, EVENTS, log::EVENTS_LIMIT)
            .map_err(refused)?
            .unwrap_or_default();
        let (events, mut problems) = log::parse_events(&events_text);
        let mut shape = Shape::new(schema);
        for event in &events {
            problems.extend(shape.check(event));
        }
        let (state, machine_problems) = State::derive(schema, participants, &events);
        problems.extend(machine_problems);
        Ok((schema, events, state, problems))
    }

    fn action(
        &self,
        protocol: &Protocol,
        events: &[Logged],
        state: &State,
        me: &str,
    ) -> Result<String> {
        let owner = state.owner.as_deref().unwrap_or("the proposal owner");
        let is_owner = state.owner.as_deref() == Some(me);
        let waiting = state.waiting.join(", ");
        let mine = state.waiting.iter().any(|w| w == me);
        let two = state.schema == Schema::Two;
        let action = match state.phase {
            None => "initialize the collaboration (`aea collab init`)".to_string(),
            Some(Phase::Drafting) if is_owner && two && !state.primary_drafted => {
                turn::DRAFT_DELIVERABLE.into()
            }
            Some(Phase::Drafting) if is_owner => turn::DRAFT.into(),
            Some(Phase::Drafting) => format!("wait for {owner} to submit the proposal"),
            Some(Phase::Reviewing) if mine && two => turn::REVIEW_DELIVERABLE.into(),
            Some(Phase::Reviewing) if mine => turn::REVIEW.into(),
            Some(Phase::Reviewing) if is_owner => format!(
                "wait for the reviews of {waiting}; leave proposal.md, decisions.md, readiness.md and protocol.json as they are meanwhile"
            ),
            Some(Phase::Reviewing) => format!("wait for {waiting} to review"),
            Some(Phase::Revising) if is_owner && two => turn::REVISE_DELIVERABLE.into(),
            Some(Phase::Revising) if is_owner => turn::REVISE.into(),
            Some(Phase::Revising) => format!("wait for {owner} to revise the proposal"),
            Some(Phase::DecisionReview) if state.awaits_classification() && is_owner && two => {
                turn::CLASSIFY_DECISIONS.into()
            }
            Some(Phase::DecisionReview) if state.awaits_classification() && is_owner => {
                turn::CLASSIFY.into()
            }
            Some(Phase::DecisionReview) if state.awaits_classification() => {
                format!("wait for {owner} to classify the open questions")
            }
            Some(Phase::DecisionReview) if mine => turn::ACCEPT.into(),
            Some(Phase::DecisionReview) => format!("wait for {waiting} to accept the decisions"),
            Some(Phase::ReadinessCheck) if is_owner => {
                self.readiness_action(protocol, events, state)?
            }
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

    fn readiness_action(
        &self,
        protocol: &Protocol,
        events: &[Logged],
        state: &State,
    ) -> Result<String> {
        let schema = state.schema;
        if schema == Schema::Two && !state.primary_frozen {
            return Ok(turn::FREEZE.into());
        }
        let event = if state.readiness_passed {
            EventName::Completed
        } else {
            EventName::ReadinessPassed
        };
        let declared = Deliverables::of(protocol);
        let problems = self.document_gates(protocol, schema, &declared, events, event)?;
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
fn check_input(participant: &str, summary: &str) -> std::result::Result<(), Refusal> {
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
    Ok(())
}

/// The `doc` and `role` an event is written with. A `doc` is a plain file
/// name of the folder or, in schema 2, a declared deliverable's
/// reference. A `deliverable_*` event names a declared deliverable in its
/// role: missing, each is filled in from the other (the primary one when
/// neither is given).
fn event_doc(
    schema: Schema,
    name: EventName,
    fields: &Fields,
    declared: &Deliverables,
) -> std::result::Result<(Option<String>, Option<Role>), Refusal> {
    let doc = fields.doc.as_deref();
    let is_reference = |d: &str| schema == Schema::Two && declared.role_of(d).is_some();
    if let Some(doc) = doc
        && !is_plain_name(doc)
        && !is_reference(doc)
    {
        let also = if schema == Schema::Two {
            " or a declared deliverable's reference"
        } else {
            ""
        };
        return Err(Refusal::new(
            Rule::DocPath,
            format!("doc {doc:?} is not a plain file name inside the folder{also}"),
            "name a file of the collaboration folder, such as proposal.md (no folders, no ..)",
        ));
    }
    if !name.is_deliverable() {
        return Ok((doc.map(str::to_string), None));
    }
    let role = fields
        .role
        .or_else(|| doc.and_then(|d| declared.role_of(d)))
        .unwrap_or(Role::Primary);
    let doc = match doc {
        Some(doc) => doc.to_string(),
        None if role == Role::Primary => declared.primary_ref().ok_or_else(|| {
            Refusal::new(
                Rule::Deliverables,
                "protocol.json declares no primary deliverable",
                "`aea collab validate` says what the declaration lacks",
            )
        })?,
        None => {
            return Err(Refusal::new(
                Rule::DeliverableEvent,
                format!("{name} of a supporting deliverable needs --doc, its reference"),
                "name the supporting deliverable as protocol.json declares it",
            ));
        }
    };
    if declared.by_ref(&doc, role).is_none() {
        let expected = match role {
            Role::Primary => declared.primary_ref().unwrap_or_default(),
            Role::Supporting => declared
                .supporting
                .iter()
                .map(|s| declared.reference(&s.file))
                .collect::<Vec<_>>()
                .join(", "),
        };
        return Err(Refusal::new(
            Rule::DeliverableEvent,
            format!(
                "doc {doc:?} is not the {role} deliverable protocol.json declares ({})",
                if expected.is_empty() {
                    "none".into()
                } else {
                    expected
                }
            ),
            "name the deliverable as protocol.json declares it (leave --doc out for the primary one)",
        ));
    }
    Ok((Some(doc), Some(role)))
}

/// Schema 2, before `readiness_passed` and `completed`: every frozen
/// deliverable still has the bytes it was frozen with, and the primary one
/// is frozen in content (`Status: Frozen`, no empty section).
fn frozen_problems(folder: &Path, declared: &Deliverables, events: &[Logged]) -> Vec<Refusal> {
    let mut problems = Vec::new();
    for event in events {
        if event.name() != Some(EventName::DeliverableFrozen) {
            continue;
        }
        let (Some(doc), Some(role), Some(sha)) = (event.doc(), event.role(), event.sha256()) else {
            continue;
        };
        let Some(item) = declared.by_ref(doc, role) else {
            continue;
        };
        match declared.read(folder, &item.file) {
            Ok(Some(bytes)) => {
                if crate::fsutil::sha256_hex(&bytes) != sha {
                    problems.push(Refusal::new(
                        Rule::DeliverableEvent,
                        format!("{doc} changed since it was frozen ({})", event.label()),
                        "a frozen deliverable keeps its bytes; restore it as frozen",
                    ));
                }
                if role == Role::Primary {
                    let text = String::from_utf8_lossy(&bytes);
                    problems.extend(deliverables::content_problems(doc, item, &text, true));
                }
            }
            Ok(None) => problems.push(Refusal::new(
                Rule::DeliverableContent,
                format!("the frozen deliverable {doc} is missing"),
                "restore it as frozen",
            )),
            Err(refusal) => problems.push(refusal),
        }
    }
    problems
}

/// Sets `frozen: true` on the supporting deliverable `doc` references.
fn mark_supporting_frozen(map: &mut Map<String, Value>, declared: &Deliverables, doc: &str) {
    let Some(Value::Object(d)) = map.get_mut("deliverables") else {
        return;
    };
    let Some(Value::Array(items)) = d.get_mut("supporting") else {
        return;
    };
    for item in items.iter_mut().filter_map(Value::as_object_mut) {
        let file = item.get("file").and_then(Value::as_str).unwrap_or_default();
        if declared.reference(file) == doc {
            item.insert("frozen".into(), true.into());
        }
    }
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
fn with_review(
    text: &str,
    event: &Event,
    review: &Review,
    deliverables: Option<&Deliverables>,
) -> std::result::Result<String, Refusal> {
    let primary = deliverables
        .and_then(Deliverables::primary_ref)
        .unwrap_or_default();
    let supporting: Vec<String> = deliverables
        .map(|d| d.supporting.iter().map(|s| d.reference(&s.file)).collect())
        .unwrap_or_default();
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
        deliverables.map(|_| (primary.as_str(), supporting.as_slice())),
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
