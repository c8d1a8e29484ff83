//! Structured collaboration (SPEC §17): folders of the Agent Collaboration
//! Protocol (`reference/acp-skill.md`). What belongs here is the protocol
//! itself — its words (events, phases, rules), reading a folder that may
//! come from anyone, the state machine that the event log drives, the
//! Markdown gates (readiness, conclusion, review headings), appending an
//! event with every rule checked first, and the validator. Mail, waiting
//! and printing belong to the commands that call it.
//!
//! Every folder is hostile input: it may come from another agent, another
//! ACP tool or a git remote. Files are opened with [`crate::fsutil`]'s
//! capped, no-symlink readers; a bad file is a finding or a refusal, never
//! a panic; nothing is ever written outside the folder.

mod deliverables;
mod docs;
mod folder;
mod handover;
mod log;
mod machine;
mod schema;
mod sign;
mod validate;

#[cfg(test)]
mod tests;

use std::fmt;

use serde::Serialize;

use crate::error::Error;
use crate::words::word_enum;

pub use docs::{
    Classification, ConclusionScan, ReadinessItem, ReadinessScan, conclusion_skeleton,
    readiness_items, scan_conclusion, scan_readiness, set_classification,
};
pub use folder::{Appended, Fields, Folder, Init, LastEvent, Next, Review, turn};
pub use handover::Handover;
pub use schema::{DeliverableType, Role, Schema};
pub use sign::{Authors, Authorship, EventAuthor, SIDECAR, Signer, findings as author_findings};
pub use validate::{Finding, Report};

/// The files of a collaboration folder (the protocol's list).
pub const REQUIRED_FILES: [&str; 7] = [
    PROTOCOL,
    EVENTS,
    "proposal.md",
    REVIEW,
    "decisions.md",
    READINESS,
    CONCLUSION,
];
/// Files the protocol forbids: an older draft of it used them as a loose
/// conversation, which the event log replaces.
pub(crate) const FORBIDDEN_FILES: [&str; 3] = ["state.log", "discussion.md", "opinions.md"];

pub const PROTOCOL: &str = "protocol.json";
pub const EVENTS: &str = "events.jsonl";

/// Whether a file of a collaboration folder, by name, may change whose
/// turn it is (what `collab wait` and the monitor watch).
pub fn turn_file(name: &str) -> bool {
    name == PROTOCOL || name == EVENTS
}
pub(crate) const REVIEW: &str = "review.md";
pub(crate) const READINESS: &str = "readiness.md";
pub(crate) const DECISIONS: &str = "decisions.md";
pub(crate) const CONCLUSION: &str = "conclusion.md";
/// The lock every writer of a folder holds (aea's own; other ACP tools
/// write without one, which the protocol allows).
pub(crate) const LOCK: &str = ".acp.lock";

word_enum! {
    /// The events of the protocol, in the order a collaboration meets them.
    pub enum EventName {
        Initialized = "initialized",
        /// Schema 2: the proposal owner drafted a deliverable (`role`, `doc`).
        DeliverableDrafted = "deliverable_drafted",
        /// Schema 2: the proposal owner revised a deliverable.
        DeliverableRevised = "deliverable_revised",
        /// Schema 2: a deliverable is final, its `sha256` recorded.
        DeliverableFrozen = "deliverable_frozen",
        ProposalSubmitted = "proposal_submitted",
        ReviewSubmitted = "review_submitted",
        ProposalRevised = "proposal_revised",
        QuestionClassified = "question_classified",
        DecisionProposed = "decision_proposed",
        DecisionAccepted = "decision_accepted",
        ReadinessPassed = "readiness_passed",
        Completed = "completed",
        Blocked = "blocked",
    }
}

impl EventName {
    /// The `deliverable_*` events of schema 2.
    pub fn is_deliverable(self) -> bool {
        matches!(
            self,
            EventName::DeliverableDrafted
                | EventName::DeliverableRevised
                | EventName::DeliverableFrozen
        )
    }
}

word_enum! {
    /// The phases of a collaboration (`protocol.json` `currentPhase`).
    pub enum Phase {
        Drafting = "drafting",
        Reviewing = "reviewing",
        Revising = "revising",
        DecisionReview = "decision_review",
        ReadinessCheck = "readiness_check",
        Completed = "completed",
        Blocked = "blocked",
    }
}

word_enum! {
    /// The rule a refused event or a validation finding is about: stable
    /// words for scripts (`--json`) and for the corpus of broken folders.
    pub enum Rule {
        /// `init` on a folder that already holds a collaboration.
        Exists = "exists",
        MissingFile = "missing_file",
        ForbiddenFile = "forbidden_file",
        /// A symlink, FIFO, device, oversized or non-UTF-8 file.
        UnsafeFile = "unsafe_file",
        /// `protocol.json` is not a JSON object or a field has the wrong type.
        ProtocolFile = "protocol_file",
        VersionField = "version_field",
        BlankField = "blank_field",
        /// A completion gate names a forbidden file.
        ForbiddenReference = "forbidden_reference",
        /// `currentPhase`, `proposalOwner` or `waitingFor` differ from the log.
        DerivedState = "derived_state",
        /// A line of `events.jsonl` is not a JSON object.
        EventLine = "event_line",
        /// A required field is missing, or a field has the wrong shape.
        EventField = "event_field",
        UnknownEvent = "unknown_event",
        Seq = "seq",
        Time = "time",
        ReplyTo = "reply_to",
        /// The author is not a participant of `protocol.json`.
        Participant = "participant",
        /// `doc` is not a plain file name inside the folder.
        DocPath = "doc_path",
        /// The event is not allowed in the current phase.
        Phase = "phase",
        /// The author is not the one the phase waits for.
        Turn = "turn",
        /// A proposal with no one to review it.
        NoReviewer = "no_reviewer",
        /// `decision_accepted` before the open questions were classified.
        Classification = "classification",
        BlockingItem = "blocking_item",
        UnresolvedItem = "unresolved_item",
        DeferredReason = "deferred_reason",
        ReadyToImplement = "ready_to_implement",
        /// `decisions.md` still holds no accepted decision (the skeleton
        /// `init` wrote).
        Decisions = "decisions",
        /// `completed` without a prior `readiness_passed`.
        CompletionOrder = "completion_order",
        /// `completed` does not reference `conclusion.md`.
        CompletionDoc = "completion_doc",
        CompletionGates = "completion_gates",
        /// `conclusion.md` lacks a heading, its one outcome, or has placeholders.
        Conclusion = "conclusion",
        ReviewHeading = "review_heading",
        /// The readiness helper was pointed at an item that is not there.
        ReadinessItem = "readiness_item",
        /// An event carries no signature (`events.sig.jsonl`): nothing
        /// shows that its `from` wrote it.
        Unsigned = "unsigned",
        /// An event's signature does not hold, or cannot be checked.
        Signature = "signature",
        /// A schema aea does not read (`schemaVersion` 3), a schema 2
        /// folder without its markers, or a schema 2 event in a schema 1
        /// folder.
        Schema = "schema",
        /// Schema 2: `deliverables` in `protocol.json` is not a valid
        /// declaration (mode, dir, primary, supporting, attachments, repoRoot).
        Deliverables = "deliverables",
        /// Schema 2: a deliverable file is missing, has no `Status:`, lacks
        /// a required section, or is frozen with an empty one.
        DeliverableContent = "deliverable_content",
        /// Schema 2: a `deliverable_*` event without its role, with a doc
        /// that is no declared deliverable, or a `sha256` that does not match.
        DeliverableEvent = "deliverable_event",
        /// Schema 2: a deliverable step out of order (a proposal before the
        /// draft, readiness before the freeze, a revision or a second
        /// freeze after it).
        DeliverableOrder = "deliverable_order",
        /// Schema 2: review.md does not say what was reviewed (its review
        /// scope and the primary deliverable).
        ReviewScope = "review_scope",
    }
}

/// What to do about a refusal or a finding. Advice in the protocol's own
/// terms is [`Advice::Plain`]; advice that needs a command or a flag of the
/// command line is a kind of its own, carrying the data its words need, and
/// the command line words it (`src/hints.rs`), since only it knows its
/// commands and flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Advice {
    /// Advice that names no command or flag, worded here.
    Plain(String),
    /// `init` on a folder that holds a collaboration: keep it (resume) or
    /// choose another folder.
    Resume,
    /// The folder holds no collaboration: start one.
    Init,
    /// No event yet: the collaboration starts with `initialized`, which
    /// starting it writes.
    Start,
    /// A second `initialized`: starting a collaboration writes the one.
    OneInitialized,
    /// A document is missing: resuming the start writes missing documents;
    /// `name` says which one, when the folder was validated.
    WriteMissing { name: Option<String> },
    /// The log already breaks a rule: validating lists every problem.
    Validate,
    /// The summary is blank: say what the event does.
    Summary,
    /// `event` must reference document `doc`.
    Doc { event: EventName, doc: String },
    /// A review heading is missing: writing the review with its event puts
    /// it under the right heading.
    Review,
    /// Review headings disagree with the log: how a heading looks, and
    /// that writing the review with its event does both.
    ReviewHeadings,
    /// Not this participant's turn: wait for `owner`; asking what is next
    /// says what is one's own to do.
    WaitFor { owner: String },
    /// The author is not waited for: asking what is next says what is
    /// one's own to do.
    NotWaitedFor,
    /// A line of the log is not an event: append events, never edit.
    EventLine,
    /// The last line of the log is partial: remove it and append again.
    TornLine,
    /// The seqs have a gap or a repeat: appending numbers events.
    Seq,
    /// `reply_to` is missing: name the event this one answers.
    ReplyTo,
    /// `currentPhase` is not a phase: it follows from the log, which
    /// asking what is next shows.
    PhaseFromLog,
    /// A derived field of `protocol.json` is missing: the next appended
    /// event rewrites it.
    MissingDerived,
    /// A derived field of `protocol.json` differs from the log: the next
    /// appended event rewrites it.
    Derived,
    /// There is no readiness item of that number: asking what is next
    /// lists them.
    ItemNumber,
    /// A deferred item needs a reason.
    Reason,
}

impl From<&str> for Advice {
    fn from(text: &str) -> Self {
        Advice::Plain(text.to_string())
    }
}

impl From<String> for Advice {
    fn from(text: String) -> Self {
        Advice::Plain(text)
    }
}

/// An event or an edit refused by a rule of the protocol: which rule, what
/// is wrong, and what to do to satisfy it. Nothing was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub rule: Rule,
    pub message: String,
    pub advice: Advice,
}

impl Refusal {
    /// The refusal `err` carries, if it is one ([`Error::CollabRefused`]).
    pub fn of(err: &Error) -> Option<&Refusal> {
        match err {
            Error::CollabRefused(refusal) => refusal.downcast_ref(),
            _ => None,
        }
    }

    pub fn new(rule: Rule, message: impl Into<String>, advice: impl Into<Advice>) -> Self {
        Refusal {
            rule,
            message: message.into(),
            advice: advice.into(),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (rule {})", self.message, self.rule)
    }
}

impl std::error::Error for Refusal {}

/// One event as aea writes it: the protocol's required fields, then the
/// recommended ones when present, as one compact JSON line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Event {
    pub seq: u64,
    pub from: String,
    pub event: EventName,
    pub at: String,
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<u64>,
    /// Schema 2, `deliverable_*` events: which deliverable `doc` is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// Schema 2, `deliverable_frozen`: the SHA-256 of the frozen file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

impl Event {
    /// The line appended to `events.jsonl`, newline included. Line and
    /// paragraph separators are escaped too: JSON allows them raw inside a
    /// string, but a reader that splits on every Unicode line break (the
    /// protocol's own Python tools do) would cut the event in two.
    pub(crate) fn to_line(&self) -> String {
        let json = serde_json::to_string(self).expect("an event always serialises");
        let mut line = String::with_capacity(json.len() + 1);
        for c in json.chars() {
            match c {
                '\u{2028}' => line.push_str("\\u2028"),
                '\u{2029}' => line.push_str("\\u2029"),
                '\u{85}' => line.push_str("\\u0085"),
                c => line.push(c),
            }
        }
        line.push('\n');
        line
    }
}
