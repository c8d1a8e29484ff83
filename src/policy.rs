//! What the receiving agent may do with a message on its own (SPEC §6).
//!
//! A [`Policy`] is built from the repository's config and turns a message
//! into a [`Decision`]: an action, the operations allowed unasked, and the id
//! of the rule that decided. The receiver decides: nothing in the message
//! itself lowers what the receiver's policy asks for.
//!
//! Today the decision comes from `response_policy` in `agent-config.yaml`,
//! falling back to the default table. Ordered `rules`, `trust` and
//! `hard_stops` slot in as further steps of [`Policy::decide`].

use serde::Serialize;

use crate::config::{AgentConfig, PolicyEntry};
use crate::message::{Message, MessageType, Priority};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    AutoRespond,
    Acknowledge,
    RequireApproval,
    Reject,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::AutoRespond => "auto_respond",
            Action::Acknowledge => "acknowledge",
            Action::RequireApproval => "require_approval",
            Action::Reject => "reject",
        }
    }

    /// Whether a person must approve before the message is acted on.
    pub fn is_gated(self) -> bool {
        matches!(self, Action::RequireApproval | Action::Reject)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    pub action: Action,
    /// What the agent may do without asking.
    pub operations: Vec<String>,
    /// Which rule decided, e.g. `default.issue.high` or `response_policy.question`.
    pub rule: String,
    /// Whether the user should be told about the message.
    pub notify_user: bool,
}

#[derive(Debug, Clone)]
pub struct Policy {
    config: AgentConfig,
    /// Set when the config could not be read: every message then needs approval.
    strictest: bool,
}

impl Policy {
    pub fn from_config(config: AgentConfig) -> Self {
        Policy {
            config,
            strictest: false,
        }
    }

    /// The policy used when the configured one cannot be read: fail closed.
    pub fn strictest() -> Self {
        Policy {
            config: AgentConfig::default(),
            strictest: true,
        }
    }

    pub fn decide(&self, message: &Message) -> Decision {
        if self.strictest {
            return Decision {
                action: Action::RequireApproval,
                operations: vec!["read".into()],
                rule: "fallback.unreadable-config".into(),
                notify_user: true,
            };
        }
        let default = default_decision(message.message_type, message.priority);
        let Some(configured) = self.configured(message) else {
            return default;
        };
        let (entry, rule) = configured;
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
}

/// The default table of SPEC §6 (AEA v1.0 with its gaps filled).
pub fn default_decision(kind: MessageType, priority: Priority) -> Decision {
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
mod tests {
    use super::*;
    use std::path::Path;

    fn message(kind: MessageType, priority: Priority) -> Message {
        let json = serde_json::json!({
            "protocol_version": "1.0", "message_id": "m1", "message_type": kind,
            "timestamp": "2026-11-21T22:48:14.123Z", "priority": priority,
            "requires_response": false, "from": {"agent_id": "api"}, "to": {"agent_id": "web"},
            "message": {"subject": "s"}, "metadata": {}
        });
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn default_table() {
        use Action::*;
        use MessageType::*;
        use Priority::*;
        let expect = [
            (Question, Urgent, AutoRespond),
            (Update, Low, Acknowledge),
            (Issue, Normal, AutoRespond),
            (Issue, High, RequireApproval),
            (Issue, Urgent, RequireApproval),
            (Handoff, Low, RequireApproval),
            (Request, High, AutoRespond),
            (Response, Normal, Acknowledge),
        ];
        let policy = Policy::from_config(AgentConfig::default());
        for (kind, priority, action) in expect {
            assert_eq!(
                policy.decide(&message(kind, priority)).action,
                action,
                "{kind} {priority}"
            );
        }
        assert!(policy.decide(&message(Update, Urgent)).notify_user);
        assert!(!policy.decide(&message(Update, Normal)).notify_user);
    }

    #[test]
    fn response_policy_overrides_per_priority() {
        let yaml = "response_policy:\n  question:\n    approval_required: true\n  issue:\n    auto_respond: true\n    urgent:\n      approval_required: true\n      actions: [page_oncall]\n";
        let config = AgentConfig::parse(yaml, Path::new("c")).unwrap();
        let policy = Policy::from_config(config);
        let q = policy.decide(&message(MessageType::Question, Priority::Low));
        assert_eq!(
            (q.action, q.rule.as_str()),
            (Action::RequireApproval, "response_policy.question")
        );
        let urgent = policy.decide(&message(MessageType::Issue, Priority::Urgent));
        assert_eq!(urgent.action, Action::RequireApproval);
        assert_eq!(urgent.operations, vec!["page_oncall".to_string()]);
        assert_eq!(urgent.rule, "response_policy.issue.urgent");
        let high = policy.decide(&message(MessageType::Issue, Priority::High));
        assert_eq!(high.action, Action::AutoRespond);
    }

    #[test]
    fn unreadable_config_fails_closed() {
        let d = Policy::strictest().decide(&message(MessageType::Question, Priority::Low));
        assert_eq!(d.action, Action::RequireApproval);
    }
}
