//! What the receiving agent may do with a message on its own (SPEC §6).
//!
//! A [`Policy`] is compiled from the repository's config and turns a message
//! into a [`Decision`]: an action, the operations allowed unasked, and the id
//! of the rule that decided. [`Policy::explain`] records every step.
//!
//! The order of evaluation, and why:
//! 1. `trust.deny_senders` rejects outright: a denied sender's mail is never
//!    offered for handling, whatever else matches.
//! 2. The first matching entry of `rules` decides; without one, the
//!    `response_policy` entry for the type and priority; without that, the
//!    default table.
//! 3. Trust raises: a sender outside `allow_senders`, or one neither
//!    registered nor allowed, needs approval (or is rejected, per
//!    `unknown_senders`).
//! 4. `hard_stops` raise: a pattern anywhere in the subject, body, context,
//!    tags, attachments or metadata (code blocks included, compared after
//!    normalising case, Unicode forms, invisible characters and spacing; see
//!    [`crate::hardstop`]) forces approval whatever a rule said.
//!
//! Steps 3 and 4 only ever make a decision stricter. The receiver decides:
//! no field of the message is read as an approval or a trust signal, so a
//! message saying it is "pre-approved" changes nothing.
//!
//! A sender id is a claim until the receiver has verified it (SPEC §15.2:
//! [`Facts::sender_registered`]). So what the config grants by sender —
//! `allow_senders`, and a rule's `from` — is granted to verified senders
//! only: unverified mail whose claimed id matches is decided as from an
//! unknown sender. What the config withholds by sender (`deny_senders`, a
//! stricter rule's `from`) holds for the claim as well: a claim can only
//! ever cost its sender.

mod checked;

pub use checked::Checked;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

use crate::config::{AgentConfig, OneOrMany, PolicyEntry, RuleConfig};
use crate::error::ConfigProblem;
use crate::hardstop::{DEFAULT_HARD_STOPS, HardStops, Hit};
use crate::message::{Message, MessageType, Priority};
use crate::words::word_enum;

word_enum! {
    /// Declared from least to most restrictive: `max` is "the stricter one".
    pub enum Action {
        AutoRespond = "auto_respond",
        Acknowledge = "acknowledge",
        RequireApproval = "require_approval",
        Reject = "reject",
    }
}

impl Action {
    /// Whether the message may not be acted on (processed as `done`)
    /// without a person: it needs approval, or the policy rejects it.
    pub(crate) fn is_gated(self) -> bool {
        matches!(self, Action::RequireApproval | Action::Reject)
    }

    /// Whether a person's approval can release the message. Rejected mail
    /// cannot be approved: the policy has to change.
    pub fn awaits_approval(self) -> bool {
        self == Action::RequireApproval
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Decision {
    pub action: Action,
    /// What the agent may do without asking.
    pub operations: Vec<String>,
    /// Which rule decided, e.g. `rules[0]`, `default.issue.high`, `hard_stop:rm -rf`.
    pub rule: String,
    /// Whether the user should be told about the message.
    pub notify_user: bool,
}

/// What the policy knows about a message beyond its content.
#[derive(Debug, Clone, Copy, Default)]
pub struct Facts {
    /// The claimed sender is one the receiver's registry vouches for: the
    /// message is signed by the key pinned for that id, or unsigned from
    /// an entry the registry accepts unsigned mail from
    /// ([`crate::keyring::Verification::known_sender`]). Anything else is
    /// decided as from an unknown sender, whatever id it claims.
    pub sender_registered: bool,
}

/// One step of an evaluation, for `aea policy explain`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Step {
    pub rule: String,
    pub matched: bool,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    pub steps: Vec<Step>,
    pub decision: Decision,
}

word_enum! {
    /// `trust.unknown_senders`: what mail from an unregistered sender gets.
    pub enum UnknownSenders {
        RequireApproval = "require_approval",
        Reject = "reject",
        Allow = "allow",
    }
}

#[derive(Debug, Clone)]
struct Globs {
    patterns: Vec<String>,
    set: GlobSet,
}

impl Globs {
    fn new(
        patterns: Vec<String>,
        case_insensitive: bool,
        what: &str,
    ) -> Result<Self, ConfigProblem> {
        let mut builder = GlobSetBuilder::new();
        for p in &patterns {
            let glob = GlobBuilder::new(p)
                .case_insensitive(case_insensitive)
                .build()
                .map_err(|source| ConfigProblem::Glob {
                    key: what.to_string(),
                    pattern: p.clone(),
                    source,
                })?;
            builder.add(glob);
        }
        let set = builder
            .build()
            .map_err(|e| ConfigProblem::value(what, e.to_string()))?;
        Ok(Globs { patterns, set })
    }

    fn matches(&self, text: &str) -> bool {
        // An empty set matches nothing; skipping it also skips the CPU
        // feature probe memchr runs on first use (a cpuid trap under a VM).
        !self.set.is_empty() && self.set.is_match(text)
    }
}

#[derive(Debug, Clone)]
struct Rule {
    id: String,
    types: Option<Vec<MessageType>>,
    priorities: Option<Vec<Priority>>,
    min_priority: Option<Priority>,
    from: Option<Globs>,
    subject: Option<Globs>,
    tags: Option<Vec<String>>,
    action: Action,
    operations: Option<Vec<String>>,
}

#[derive(Debug, Clone)]
struct Trust {
    allow: Option<Globs>,
    deny: Globs,
    unknown: UnknownSenders,
}

#[derive(Debug, Clone)]
pub struct Policy {
    config: AgentConfig,
    rules: Vec<Rule>,
    trust: Trust,
    hard_stops: HardStops,
    /// Set when the config could not be read: every message needs approval.
    strictest: bool,
}

fn parse_list<T>(
    list: Option<&OneOrMany>,
    what: &str,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<Option<Vec<T>>, ConfigProblem> {
    list.map(|l| {
        l.items()
            .iter()
            .map(|s| parse(s).map_err(|e| ConfigProblem::value(what, e)))
            .collect()
    })
    .transpose()
}

fn compile_rule(index: usize, rule: &RuleConfig) -> Result<Rule, ConfigProblem> {
    let id = rule.id.clone().unwrap_or_else(|| format!("rules[{index}]"));
    let at = |field: &str| format!("rules[{index}].{field}");
    let action_text = rule.action.as_deref().ok_or_else(|| {
        ConfigProblem::value(
            at("action"),
            format!("missing (one of {})", Action::NAMES.join(", ")),
        )
    })?;
    let action = action_text.parse::<Action>().map_err(|_| {
        ConfigProblem::value(
            at("action"),
            format!(
                "unknown action {action_text:?} (one of {})",
                Action::NAMES.join(", ")
            ),
        )
    })?;
    let globs = |list: Option<&OneOrMany>, field: &str, ci: bool| {
        list.map(|l| Globs::new(l.items(), ci, &at(field)))
            .transpose()
    };
    Ok(Rule {
        types: parse_list(rule.message_type.as_ref(), &at("type"), str::parse)?,
        priorities: parse_list(rule.priority.as_ref(), &at("priority"), str::parse)?,
        min_priority: rule
            .min_priority
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(|e| ConfigProblem::value(at("min_priority"), e))?,
        from: globs(rule.from.as_ref(), "from", false)?,
        subject: globs(rule.subject.as_ref(), "subject", true)?,
        tags: rule.tags.as_ref().map(OneOrMany::items),
        action,
        operations: rule.operations.clone(),
        id,
    })
}

impl Policy {
    /// Compiles the policy; an error names the offending key.
    pub fn from_config(config: AgentConfig) -> Result<Self, ConfigProblem> {
        let rules = config
            .rules
            .iter()
            .enumerate()
            .map(|(i, r)| compile_rule(i, r))
            .collect::<Result<Vec<_>, _>>()?;
        let unknown = match config.trust.unknown_senders.as_deref() {
            None => UnknownSenders::RequireApproval,
            Some(text) => text.parse().map_err(|_| {
                ConfigProblem::value(
                    "trust.unknown_senders",
                    format!("unknown value {text:?} (require_approval, reject or allow)"),
                )
            })?,
        };
        let trust = Trust {
            allow: config
                .trust
                .allow_senders
                .clone()
                .map(|p| Globs::new(p, false, "trust.allow_senders"))
                .transpose()?,
            deny: Globs::new(
                config.trust.deny_senders.clone(),
                false,
                "trust.deny_senders",
            )?,
            unknown,
        };
        for kind in config.response_policy.keys() {
            kind.parse::<MessageType>()
                .map_err(|e| ConfigProblem::value(format!("response_policy.{kind}"), e))?;
        }
        let hard_stops = match &config.hard_stops {
            Some(list) => HardStops::compile(list),
            None => HardStops::compile(DEFAULT_HARD_STOPS),
        }
        .map_err(|e| ConfigProblem::value("hard_stops", e))?;
        Ok(Policy {
            config,
            rules,
            trust,
            hard_stops,
            strictest: false,
        })
    }

    /// The policy used when the configured one cannot be read: fail closed.
    pub fn strictest() -> Self {
        Policy {
            config: AgentConfig::default(),
            rules: Vec::new(),
            trust: Trust {
                allow: None,
                deny: Globs::new(Vec::new(), false, "").expect("an empty set compiles"),
                unknown: UnknownSenders::RequireApproval,
            },
            hard_stops: HardStops::default(),
            strictest: true,
        }
    }

    pub fn decide(&self, message: &Message, facts: Facts) -> Decision {
        self.explain(message, facts).decision
    }

    pub fn explain(&self, message: &Message, facts: Facts) -> Explanation {
        let mut steps = Vec::new();
        if self.strictest {
            let rule = "fallback.unreadable-config".to_string();
            steps.push(Step {
                rule: rule.clone(),
                matched: true,
                detail: "the config could not be read, so every message needs approval".into(),
            });
            let decision = Decision {
                action: Action::RequireApproval,
                operations: vec!["read".into()],
                rule,
                notify_user: true,
            };
            return Explanation { steps, decision };
        }
        let sender = message.from.agent_id.as_str();

        if self.trust.deny.matches(sender) {
            steps.push(Step {
                rule: "trust.deny_senders".into(),
                matched: true,
                detail: format!(
                    "sender {sender} matches {}",
                    self.trust.deny.patterns.join(", ")
                ),
            });
            let decision = Decision {
                action: Action::Reject,
                operations: Vec::new(),
                rule: "trust.deny_senders".into(),
                notify_user: true,
            };
            return Explanation { steps, decision };
        }

        let mut decision = self.base_decision(message, &mut steps, true);
        if !facts.sender_registered && self.decided_by_sender(&decision) {
            decision = self.as_unknown_sender(message, decision, &mut steps);
        }

        let allowed = self.trust.allow.as_ref().map(|a| a.matches(sender));
        match allowed {
            Some(false) => raise(
                &mut decision,
                &mut steps,
                Action::RequireApproval,
                "trust.allow_senders",
                &format!("sender {sender} is not in allow_senders"),
            ),
            Some(true) if facts.sender_registered => steps.push(Step {
                rule: "trust.allow_senders".into(),
                matched: false,
                detail: format!("sender {sender} is verified and allowed"),
            }),
            // The id is only claimed: as from a sender outside the list.
            Some(true) => raise(
                &mut decision,
                &mut steps,
                Action::RequireApproval,
                "trust.allow_senders",
                &format!(
                    "sender {sender} matches allow_senders but is not verified (unsigned, or no key is pinned for it), and allow_senders admits verified senders only"
                ),
            ),
            None if facts.sender_registered => steps.push(Step {
                rule: "trust.unknown_senders".into(),
                matched: false,
                detail: format!("sender {sender} is registered"),
            }),
            None => match self.trust.unknown {
                UnknownSenders::Allow => steps.push(Step {
                    rule: "trust.unknown_senders".into(),
                    matched: false,
                    detail: format!(
                        "sender {sender} is not registered; unknown senders are allowed"
                    ),
                }),
                UnknownSenders::RequireApproval | UnknownSenders::Reject => {
                    let action = if self.trust.unknown == UnknownSenders::Reject {
                        Action::Reject
                    } else {
                        Action::RequireApproval
                    };
                    raise(
                        &mut decision,
                        &mut steps,
                        action,
                        "trust.unknown_senders",
                        &format!("sender {sender} is neither registered nor in allow_senders"),
                    );
                }
            },
        }

        if let Some(hit) = self.hard_stop_in(message) {
            raise(
                &mut decision,
                &mut steps,
                Action::RequireApproval,
                &format!("hard_stop:{}", hit.pattern),
                &format!(
                    "the {} contains {:?} (compared after normalising case, Unicode forms, invisible characters and spacing)",
                    hit.field, hit.pattern
                ),
            );
        } else if !self.hard_stops.is_empty() {
            steps.push(Step {
                rule: "hard_stops".into(),
                matched: false,
                detail:
                    "no hard-stop pattern in subject, body, context, tags, attachments or metadata"
                        .into(),
            });
        }

        let forbidden = &self.config.approval_required_operations;
        decision.operations.retain(|op| !forbidden.contains(op));
        if decision.action == Action::Reject {
            decision.operations.clear();
        }
        Explanation { steps, decision }
    }

    /// Whether `decision` came from a rule that names senders (`from`).
    fn decided_by_sender(&self, decision: &Decision) -> bool {
        self.rules
            .iter()
            .any(|r| r.from.is_some() && r.id == decision.rule)
    }

    /// `decision`, made by a rule that matched an unverified sender's
    /// claimed id, made no looser than the decision on the same message
    /// from an unknown sender (every rule by sender skipped): the stricter
    /// action; for the same action, only the operations both allow.
    fn as_unknown_sender(
        &self,
        message: &Message,
        decision: Decision,
        steps: &mut Vec<Step>,
    ) -> Decision {
        let unknown = self.base_decision(message, &mut Vec::new(), false);
        let sender = &message.from.agent_id;
        let (rule, id) = (&decision.rule, &unknown.rule);
        if unknown.action > decision.action {
            steps.push(Step {
                rule: rule.clone(),
                matched: false,
                detail: format!(
                    "sender {sender} is not verified, so a rule by sender cannot loosen its decision: as from an unknown sender, {id} decides {}",
                    unknown.action.as_str()
                ),
            });
            return unknown;
        }
        if unknown.action < decision.action {
            return decision;
        }
        let operations: Vec<String> = decision
            .operations
            .iter()
            .filter(|op| unknown.operations.contains(op))
            .cloned()
            .collect();
        if operations.len() < decision.operations.len() {
            steps.push(Step {
                rule: rule.clone(),
                matched: false,
                detail: format!(
                    "sender {sender} is not verified: only the operations {id} also allows an unknown sender"
                ),
            });
        }
        Decision {
            operations,
            notify_user: decision.notify_user || unknown.notify_user,
            ..decision
        }
    }

    /// Step 2: the first matching rule, else `response_policy`, else the
    /// table. Without `by_sender`, a rule that names senders never matches.
    fn base_decision(&self, message: &Message, steps: &mut Vec<Step>, by_sender: bool) -> Decision {
        let default = default_decision(message.message_type, message.priority);
        for rule in &self.rules {
            if !by_sender && rule.from.is_some() {
                continue;
            }
            match rule_mismatch(rule, message) {
                Some(why) => steps.push(Step {
                    rule: rule.id.clone(),
                    matched: false,
                    detail: why,
                }),
                None => {
                    steps.push(Step {
                        rule: rule.id.clone(),
                        matched: true,
                        detail: format!("all conditions hold; action {}", rule.action.as_str()),
                    });
                    return Decision {
                        action: rule.action,
                        operations: rule.operations.clone().unwrap_or(default.operations),
                        rule: rule.id.clone(),
                        notify_user: default.notify_user || rule.action.is_gated(),
                    };
                }
            }
        }
        let decision = match self.configured(message) {
            Some((entry, rule)) => {
                let action = if entry.approval_required == Some(true) {
                    Action::RequireApproval
                } else if entry.auto_respond == Some(true) {
                    Action::AutoRespond
                } else if entry.auto_respond == Some(false) {
                    Action::Acknowledge
                } else {
                    default.action
                };
                Decision {
                    action,
                    operations: entry.actions.unwrap_or(default.operations),
                    rule,
                    notify_user: entry.notify_user.unwrap_or(default.notify_user),
                }
            }
            None => default,
        };
        steps.push(Step {
            rule: decision.rule.clone(),
            matched: true,
            detail: format!(
                "{} {} -> {}",
                message.message_type,
                message.priority,
                decision.action.as_str()
            ),
        });
        decision
    }

    /// The `response_policy` entry for the message's type and priority, with
    /// priority-specific keys laid over the type's.
    fn configured(&self, message: &Message) -> Option<(PolicyEntry, String)> {
        let kind = message.message_type.as_str();
        let by_type = self.config.response_policy.get(kind)?;
        let by_priority = match message.priority {
            Priority::Low => &by_type.low,
            Priority::Normal => &by_type.normal,
            Priority::High => &by_type.high,
            Priority::Urgent => &by_type.urgent,
        };
        let base = by_type.base.clone();
        Some(match by_priority {
            Some(p) => (
                PolicyEntry {
                    auto_respond: p.auto_respond.or(base.auto_respond),
                    approval_required: p.approval_required.or(base.approval_required),
                    notify_user: p.notify_user.or(base.notify_user),
                    actions: p.actions.clone().or(base.actions),
                },
                format!("response_policy.{kind}.{}", message.priority),
            ),
            None => (base, format!("response_policy.{kind}")),
        })
    }

    /// The first hard stop found in any field a sender wrote.
    fn hard_stop_in(&self, message: &Message) -> Option<Hit<'_>> {
        self.hard_stops.find(message)
    }

    /// A description of the effective policy, for `aea policy show`.
    pub fn summary(&self) -> Summary {
        let mut table = Vec::new();
        for &kind in MessageType::ALL {
            for &priority in Priority::ALL {
                let probe = probe_message(kind, priority);
                let mut steps = Vec::new();
                let d = if self.strictest {
                    self.explain(&probe, Facts::default()).decision
                } else {
                    Policy {
                        rules: Vec::new(),
                        ..self.clone()
                    }
                    .base_decision(&probe, &mut steps, true)
                };
                table.push(TableRow {
                    message_type: kind,
                    priority,
                    action: d.action,
                    rule: d.rule,
                    operations: d.operations,
                });
            }
        }
        Summary {
            fallback: self.strictest,
            table,
            rules: self
                .config
                .rules
                .iter()
                .enumerate()
                .map(|(i, r)| RuleSummary {
                    id: r.id.clone().unwrap_or_else(|| format!("rules[{i}]")),
                    when: describe_rule(r),
                    action: r.action.clone().unwrap_or_default(),
                    operations: r.operations.clone(),
                })
                .collect(),
            allow_senders: self.trust.allow.as_ref().map(|a| a.patterns.clone()),
            deny_senders: self.trust.deny.patterns.clone(),
            unknown_senders: self.trust.unknown,
            hard_stops: self.hard_stops.names(),
            auto_safe_operations: self.config.auto_safe_operations.clone(),
            approval_required_operations: self.config.approval_required_operations.clone(),
            max_message_bytes: self.config.limits.message_bytes(),
            max_recipients: self.config.limits.recipients(),
        }
    }
}

/// Why `rule` does not match `message`, or `None` when it does.
fn rule_mismatch(rule: &Rule, m: &Message) -> Option<String> {
    if let Some(types) = &rule.types
        && !types.contains(&m.message_type)
    {
        return Some(format!("type {} is not {}", m.message_type, join(types)));
    }
    if let Some(priorities) = &rule.priorities
        && !priorities.contains(&m.priority)
    {
        return Some(format!(
            "priority {} is not {}",
            m.priority,
            join(priorities)
        ));
    }
    // Priorities are declared urgent-first, so "at least" is "<=".
    if let Some(min) = rule.min_priority
        && m.priority > min
    {
        return Some(format!("priority {} is below {min}", m.priority));
    }
    if let Some(from) = &rule.from
        && !from.matches(&m.from.agent_id)
    {
        return Some(format!(
            "sender {} does not match {}",
            m.from.agent_id,
            from.patterns.join(", ")
        ));
    }
    if let Some(subject) = &rule.subject
        && !subject.matches(&m.message.subject)
    {
        return Some(format!(
            "subject does not match {}",
            subject.patterns.join(", ")
        ));
    }
    if let Some(tags) = &rule.tags
        && !tags.iter().any(|t| m.metadata.tags.contains(t))
    {
        return Some(format!("no tag among {}", tags.join(", ")));
    }
    None
}

fn join<T: std::fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("|")
}

/// Makes `decision` at least `action`, recording why.
fn raise(decision: &mut Decision, steps: &mut Vec<Step>, action: Action, rule: &str, why: &str) {
    if action > decision.action {
        decision.action = action;
        decision.rule = rule.to_string();
        decision.notify_user = true;
        steps.push(Step {
            rule: rule.to_string(),
            matched: true,
            detail: format!("{why}: raised to {}", action.as_str()),
        });
    } else {
        steps.push(Step {
            rule: rule.to_string(),
            matched: true,
            detail: format!("{why}: already {}", decision.action.as_str()),
        });
    }
}

fn describe_rule(r: &RuleConfig) -> String {
    let mut parts = Vec::new();
    let mut add = |name: &str, v: &Option<OneOrMany>| {
        if let Some(v) = v {
            parts.push(format!("{name} {}", v.items().join("|")));
        }
    };
    add("type", &r.message_type);
    add("priority", &r.priority);
    add("from", &r.from);
    add("subject", &r.subject);
    add("tags", &r.tags);
    if let Some(min) = &r.min_priority {
        parts.push(format!("priority >= {min}"));
    }
    if parts.is_empty() {
        "any message".into()
    } else {
        parts.join(", ")
    }
}

fn probe_message(kind: MessageType, priority: Priority) -> Message {
    use crate::message::{Body, Content, Metadata, Party};
    let party = |id: &str| Party {
        agent_id: id.into(),
        repo_path: None,
        user: None,
        also_unsigned: false,
    };
    Message {
        protocol_version: crate::message::PROTOCOL_VERSION.into(),
        message_id: "probe".into(),
        message_type: kind,
        timestamp: "1970-01-01T00:00:00.000Z".into(),
        priority,
        requires_response: false,
        from: party("probe"),
        to: party("probe"),
        message: Content {
            subject: "probe".into(),
            body: Body::default(),
            context: serde_json::Value::Object(serde_json::Map::new()),
            attachments: Vec::new(),
            extra: serde_json::Map::new(),
        },
        metadata: Metadata::default(),
        expires_at: None,
        signature: None,
        digest: None,
        extra: serde_json::Map::new(),
    }
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TableRow {
    #[serde(rename = "type")]
    pub message_type: MessageType,
    pub priority: Priority,
    pub action: Action,
    pub rule: String,
    pub operations: Vec<String>,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RuleSummary {
    pub id: String,
    pub when: String,
    pub action: String,
    pub operations: Option<Vec<String>>,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Summary {
    pub fallback: bool,
    pub table: Vec<TableRow>,
    pub rules: Vec<RuleSummary>,
    pub allow_senders: Option<Vec<String>>,
    pub deny_senders: Vec<String>,
    pub unknown_senders: UnknownSenders,
    pub hard_stops: Vec<String>,
    pub auto_safe_operations: Vec<String>,
    pub approval_required_operations: Vec<String>,
    pub max_message_bytes: u64,
    pub max_recipients: usize,
}

/// The default table of SPEC §6 (AEA v1.0 with its gaps filled).
pub(crate) fn default_decision(kind: MessageType, priority: Priority) -> Decision {
    let urgent_or_high = matches!(priority, Priority::High | Priority::Urgent);
    let ops = |list: &[&str]| list.iter().map(|s| (*s).to_string()).collect();
    let (action, operations, rule, notify_user) = match kind {
        MessageType::Question => (
            Action::AutoRespond,
            ops(&["read_code", "answer"]),
            "default.question",
            false,
        ),
        MessageType::Update => (
            Action::Acknowledge,
            ops(&["read", "acknowledge"]),
            if urgent_or_high {
                "default.update.high"
            } else {
                "default.update"
            },
            urgent_or_high,
        ),
        MessageType::Issue if urgent_or_high => (
            Action::RequireApproval,
            ops(&["read_code", "analyse"]),
            "default.issue.high",
            true,
        ),
        MessageType::Issue => (
            Action::AutoRespond,
            ops(&["read_code", "analyse", "suggest_fix"]),
            "default.issue",
            false,
        ),
        MessageType::Handoff => (
            Action::RequireApproval,
            ops(&["read_code", "summarise"]),
            "default.handoff",
            true,
        ),
        MessageType::Request => (
            Action::AutoRespond,
            ops(&["read_code", "plan"]),
            "default.request",
            false,
        ),
        MessageType::Response => (
            Action::Acknowledge,
            ops(&["read"]),
            "default.response",
            false,
        ),
    };
    Decision {
        action,
        operations,
        rule: rule.to_string(),
        notify_user,
    }
}

#[cfg(test)]
mod tests;
