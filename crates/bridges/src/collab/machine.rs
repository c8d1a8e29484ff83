//! The state machine of the protocol: the phase, the proposal owner and who
//! the collaboration waits for follow from the event log alone. Each event
//! is checked against the state before it (is it allowed in this phase, is
//! its author the one waited for) and then applied, even when it breaks a
//! rule, as the protocol's own validator does, so that one bad event does
//! not hide the ones after it.

use std::collections::BTreeSet;

use super::log::Logged;
use super::schema::{Role, Schema};
use super::{Advice, CONCLUSION, EventName, Phase, Refusal, Rule};

/// What the log says so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct State {
    pub schema: Schema,
    /// `None` until `initialized`.
    pub phase: Option<Phase>,
    pub owner: Option<String>,
    /// Sorted, as the protocol's tools write it, except while drafting,
    /// revising and in readiness, where it is the owner alone.
    pub waiting: Vec<String>,
    reviewers: BTreeSet<String>,
    accepters: BTreeSet<String>,
    /// Seq of the latest `question_classified` since the latest decision input.
    classified: u64,
    /// Seq of the latest `proposal_revised` or `decision_proposed`.
    decision_input: u64,
    pub readiness_passed: bool,
    /// Schema 2: a `deliverable_drafted` (or `_revised`) of the primary.
    pub primary_drafted: bool,
    /// Schema 2: the primary's `deliverable_frozen`.
    pub primary_frozen: bool,
}

/// What a phase waits for: the advice of a refusal by the phase rule.
pub(crate) fn awaited(phase: Option<Phase>) -> Advice {
    let words = match phase {
        None => return Advice::Start,
        Some(Phase::Drafting) => {
            "in drafting the proposal owner appends proposal_submitted (schema 2: after deliverable_drafted)"
        }
        Some(Phase::Reviewing) => {
            "in reviewing each participant in waitingFor appends review_submitted"
        }
        Some(Phase::Revising) => {
            "in revising the proposal owner appends proposal_revised (or proposal_submitted, decision_proposed)"
        }
        Some(Phase::DecisionReview) => {
            "in decision_review the proposal owner appends question_classified, then each participant decision_accepted"
        }
        Some(Phase::ReadinessCheck) => {
            "in readiness_check the proposal owner appends readiness_passed, then completed (schema 2: deliverable_frozen first)"
        }
        Some(Phase::Completed) => "the collaboration is completed; start a new one",
        Some(Phase::Blocked) => "the collaboration is blocked; start a new one",
    };
    Advice::Plain(words.to_string())
}

fn phase_name(phase: Option<Phase>) -> &'static str {
    phase.map_or("none (no initialized event)", Phase::as_str)
}

impl State {
    /// The state of a log with no event yet.
    pub(crate) fn new(schema: Schema) -> State {
        State {
            schema,
            phase: None,
            owner: None,
            waiting: Vec::new(),
            reviewers: BTreeSet::new(),
            accepters: BTreeSet::new(),
            classified: 0,
            decision_input: 0,
            readiness_passed: false,
            primary_drafted: false,
            primary_frozen: false,
        }
    }

    /// The state after `events`, with every rule they break.
    pub(crate) fn derive(
        schema: Schema,
        participants: &[String],
        events: &[Logged],
    ) -> (State, Vec<Refusal>) {
        let mut state = State::new(schema);
        let mut problems = Vec::new();
        for event in events {
            problems.extend(state.apply(participants, event));
        }
        (state, problems)
    }

    /// Checks `event` against this state, then applies it. Returns the
    /// rules it breaks, the most telling first.
    pub(crate) fn apply(&mut self, participants: &[String], event: &Logged) -> Vec<Refusal> {
        let Some(name) = event.name().filter(|n| self.schema.has_event(*n)) else {
            // An unknown event changes nothing; the shape check reports it.
            return Vec::new();
        };
        let mut problems = Vec::new();
        let label = event.label();
        let actor = event.from().map(str::to_string);
        let seq = event.seq().unwrap_or(0);
        let allowed: &[Phase] = match name {
            // Checked below: allowed anywhere, or by their own rule.
            EventName::Initialized | EventName::Blocked | EventName::Completed => &[],
            // Only the primary deliverable's events have a phase (schema 2).
            _ if name.is_deliverable() && event.role() != Some(Role::Primary) => &[],
            EventName::DeliverableDrafted => {
                &[Phase::Drafting, Phase::Revising, Phase::DecisionReview]
            }
            EventName::ProposalSubmitted => &[Phase::Drafting, Phase::Revising],
            EventName::ReviewSubmitted => &[Phase::Reviewing],
            EventName::ProposalRevised => &[Phase::Revising],
            EventName::DeliverableRevised | EventName::DecisionProposed => {
                &[Phase::Revising, Phase::DecisionReview]
            }
            EventName::QuestionClassified | EventName::DecisionAccepted => &[Phase::DecisionReview],
            EventName::DeliverableFrozen | EventName::ReadinessPassed => &[Phase::ReadinessCheck],
        };
        if !allowed.is_empty() && !self.phase.is_some_and(|p| allowed.contains(&p)) {
            problems.push(Refusal::new(
                Rule::Phase,
                format!(
                    "{label}: {name} is not allowed in phase {}",
                    phase_name(self.phase)
                ),
                awaited(self.phase),
            ));
        }
        match name {
            EventName::Initialized => {
                if seq != 1 {
                    problems.push(Refusal::new(
                        Rule::Seq,
                        format!("{label}: initialized must be seq 1, the first event"),
                        Advice::OneInitialized,
                    ));
                }
                if !actor.as_ref().is_some_and(|a| participants.contains(a)) {
                    problems.push(Refusal::new(
                        Rule::Participant,
                        format!(
                            "{label}: initialized by a participant not listed in protocol.json"
                        ),
                        "the first participant of protocol.json initializes the collaboration",
                    ));
                }
                self.owner.clone_from(&actor);
                self.phase = Some(Phase::Drafting);
                self.waiting = self.owner.iter().cloned().collect();
            }
            EventName::Blocked => {
                self.phase = Some(Phase::Blocked);
                self.waiting.clear();
            }
            // A supporting deliverable's events have no rule of order.
            _ if name.is_deliverable() && event.role() != Some(Role::Primary) => {}
            EventName::DeliverableDrafted | EventName::DeliverableRevised => {
                if name == EventName::DeliverableRevised && self.primary_frozen {
                    problems.insert(
                        0,
                        Refusal::new(
                            Rule::DeliverableOrder,
                            format!("{label}: deliverable_revised after the primary deliverable was frozen"),
                            "a frozen deliverable stays as frozen; there is no unfreezing",
                        ),
                    );
                }
                problems.extend(self.owner_only(&label, name, actor.as_deref()));
                self.primary_drafted = true;
            }
            EventName::DeliverableFrozen => {
                if self.primary_frozen {
                    problems.insert(
                        0,
                        Refusal::new(
                            Rule::DeliverableOrder,
                            format!("{label}: the primary deliverable is frozen already (it is frozen once)"),
                            "a frozen deliverable stays as frozen; there is no second freeze",
                        ),
                    );
                }
                problems.extend(self.owner_only(&label, name, actor.as_deref()));
                self.primary_frozen = true;
            }
            EventName::ProposalSubmitted => {
                if self.schema == Schema::Two && !self.primary_drafted {
                    problems.push(Refusal::new(
                        Rule::DeliverableOrder,
                        format!("{label}: proposal_submitted needs a prior deliverable_drafted of the primary deliverable"),
                        "draft the primary deliverable and append deliverable_drafted (--role primary) first",
                    ));
                }
                // Before any owner is known (no initialized), the author becomes it.
                if self.owner.is_some() {
                    problems.extend(self.owner_only(&label, name, actor.as_deref()));
                } else {
                    self.owner.clone_from(&actor);
                }
                self.reviewers = participants
                    .iter()
                    .filter(|p| Some(*p) != self.owner.as_ref())
                    .cloned()
                    .collect();
                if self.reviewers.is_empty() {
                    problems.push(Refusal::new(
                        Rule::NoReviewer,
                        format!("{label}: proposal_submitted needs at least one reviewer"),
                        "a collaboration needs a participant besides the proposal owner",
                    ));
                }
                self.phase = Some(Phase::Reviewing);
                self.waiting = self.reviewers.iter().cloned().collect();
            }
            EventName::ReviewSubmitted => {
                problems.extend(waited_for(&label, name, actor.as_deref(), &self.reviewers));
                if let Some(actor) = &actor {
                    self.reviewers.remove(actor);
                }
                if self.reviewers.is_empty() {
                    self.phase = Some(Phase::Revising);
                    self.waiting = self.owner.iter().cloned().collect();
                } else {
                    self.phase = Some(Phase::Reviewing);
                    self.waiting = self.reviewers.iter().cloned().collect();
                }
            }
            EventName::ProposalRevised | EventName::DecisionProposed => {
                problems.extend(self.owner_only(&label, name, actor.as_deref()));
                self.decision_input = seq;
                self.classified = 0;
                self.phase = Some(Phase::DecisionReview);
                self.waiting = self.owner.iter().cloned().collect();
            }
            EventName::QuestionClassified => {
                problems.extend(self.owner_only(&label, name, actor.as_deref()));
                self.classified = seq;
                self.accepters = participants.iter().cloned().collect();
                self.phase = Some(Phase::DecisionReview);
                self.waiting = self.accepters.iter().cloned().collect();
            }
            EventName::DecisionAccepted => {
                if self.decision_input > 0 && self.classified <= self.decision_input {
                    problems.insert(
                        0,
                        Refusal::new(
                            Rule::Classification,
                            format!(
                                "{label}: decision_accepted needs a question_classified after the latest proposal_revised or decision_proposed (seq {})",
                                self.decision_input
                            ),
                            format!(
                                "the proposal owner{} classifies every open question in readiness.md first and appends question_classified",
                                self.owner_words()
                            ),
                        ),
                    );
                } else {
                    problems.extend(waited_for(&label, name, actor.as_deref(), &self.accepters));
                }
                if let Some(actor) = &actor {
                    self.accepters.remove(actor);
                }
                if self.accepters.is_empty() {
                    self.phase = Some(Phase::ReadinessCheck);
                    self.waiting = self.owner.iter().cloned().collect();
                } else {
                    self.phase = Some(Phase::DecisionReview);
                    self.waiting = self.accepters.iter().cloned().collect();
                }
            }
            EventName::ReadinessPassed => {
                if self.schema == Schema::Two && !self.primary_frozen {
                    problems.push(Refusal::new(
                        Rule::DeliverableOrder,
                        format!("{label}: readiness_passed needs the primary deliverable frozen first (deliverable_frozen)"),
                        "set Status: Frozen in the primary deliverable, fill every section, then append deliverable_frozen",
                    ));
                }
                problems.extend(self.owner_only(&label, name, actor.as_deref()));
                self.readiness_passed = true;
                self.phase = Some(Phase::ReadinessCheck);
                self.waiting = self.owner.iter().cloned().collect();
            }
            EventName::Completed => {
                if self.phase != Some(Phase::ReadinessCheck) || !self.readiness_passed {
                    problems.push(Refusal::new(
                        Rule::CompletionOrder,
                        format!(
                            "{label}: completed needs a prior readiness_passed (phase is {})",
                            phase_name(self.phase)
                        ),
                        "in readiness_check the proposal owner appends readiness_passed before completed",
                    ));
                }
                if event.doc() != Some(CONCLUSION) {
                    problems.push(Refusal::new(
                        Rule::CompletionDoc,
                        format!("{label}: completed must reference conclusion.md"),
                        Advice::Doc {
                            event: EventName::Completed,
                            doc: CONCLUSION.to_string(),
                        },
                    ));
                }
                problems.extend(self.owner_only(&label, name, actor.as_deref()));
                self.phase = Some(Phase::Completed);
                self.waiting.clear();
            }
        }
        problems
    }

    /// In decision_review: whether the open questions still wait for the
    /// owner's question_classified (none since the latest decision input).
    pub(crate) fn awaits_classification(&self) -> bool {
        self.phase == Some(Phase::DecisionReview) && self.classified <= self.decision_input
    }

    fn owner_words(&self) -> String {
        self.owner
            .as_ref()
            .map_or_else(String::new, |o| format!(" ({o})"))
    }

    fn owner_only(&self, label: &str, name: EventName, actor: Option<&str>) -> Option<Refusal> {
        let owner = self.owner.as_deref()?;
        (actor != Some(owner)).then(|| {
            Refusal::new(
                Rule::Turn,
                format!(
                    "{label}: {name} is the proposal owner's ({owner}) to append, not {}'s",
                    actor.unwrap_or("an unnamed participant")
                ),
                Advice::WaitFor {
                    owner: owner.to_string(),
                },
            )
        })
    }
}

fn waited_for(
    label: &str,
    name: EventName,
    actor: Option<&str>,
    waiting: &BTreeSet<String>,
) -> Option<Refusal> {
    if actor.is_some_and(|a| waiting.contains(a)) {
        return None;
    }
    let list = if waiting.is_empty() {
        "no participant".to_string()
    } else {
        waiting.iter().cloned().collect::<Vec<_>>().join(", ")
    };
    Some(Refusal::new(
        Rule::Turn,
        format!(
            "{label}: {name} is reserved for {list}; {} is not waited for",
            actor.unwrap_or("an unnamed participant")
        ),
        Advice::NotWaitedFor,
    ))
}
