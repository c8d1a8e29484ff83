use super::*;
use std::path::Path;

fn message(kind: MessageType, priority: Priority) -> Message {
    probe_message(kind, priority)
}

fn known() -> Facts {
    Facts {
        sender_registered: true,
    }
}

fn policy(yaml: &str) -> Policy {
    Policy::from_config(AgentConfig::parse(yaml, Path::new("c")).unwrap()).unwrap()
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
    let policy = policy("{}");
    for (kind, priority, action) in expect {
        let d = policy.decide(&message(kind, priority), known());
        assert_eq!(d.action, action, "{kind} {priority}");
    }
    assert!(policy.decide(&message(Update, Urgent), known()).notify_user);
    assert!(!policy.decide(&message(Update, Normal), known()).notify_user);
}

/// Whether the bash AEA's `process-messages-iterative.sh` offers a
/// message for automatic handling (its `case "$message_type"`): by
/// `.message_type` and `.routing.priority` only.
fn bash_iterative_offers(file: &serde_json::Value) -> bool {
    let kind = file["message_type"].as_str().unwrap_or("unknown");
    let priority = file
        .pointer("/routing/priority")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("normal");
    match kind {
        "question" | "update" => true,
        "issue" => !matches!(priority, "high" | "urgent"),
        _ => false,
    }
}

/// Whether the bash AEA's `aea-auto-processor.sh` (the hook
/// `install-aea.sh` sets up) acts on its own (its `classify_message`
/// says `AUTO_PROCESS`): by `.message_type` and the v1.0 `.priority`.
/// A question also has to look simple; taken as simple here.
fn bash_auto_processor_acts(file: &serde_json::Value) -> bool {
    let kind = file["message_type"].as_str().unwrap_or("");
    let priority = file["priority"].as_str().unwrap_or("");
    matches!(
        (kind, priority),
        ("question" | "update", "low" | "normal") | ("response", _) | ("issue", "low")
    )
}

/// Mail to a bash recipient carries the 0.1.0 copy: what the default
/// table holds for a person, the bash readers do not handle on their
/// own either (the bash readers offered an urgent issue to the agent).
#[test]
fn bash_readers_hold_back_what_the_default_table_gates() {
    let policy = policy("{}");
    let mut offered_before = Vec::new();
    for &kind in MessageType::ALL {
        for &priority in Priority::ALL {
            let mut m = message(kind, priority);
            let plain: serde_json::Value = serde_json::from_slice(&m.to_json()).unwrap();
            m.add_legacy_copy();
            let file: serde_json::Value = serde_json::from_slice(&m.to_json()).unwrap();
            if !policy.decide(&m, known()).action.is_gated() {
                continue;
            }
            assert!(!bash_iterative_offers(&file), "{kind} {priority}");
            assert!(!bash_auto_processor_acts(&file), "{kind} {priority}");
            if bash_iterative_offers(&plain) {
                offered_before.push(format!("{kind} {priority}"));
            }
        }
    }
    // Without the copy, high and urgent issues were offered.
    assert_eq!(offered_before, ["issue urgent", "issue high"]);
}

#[test]
fn response_policy_overrides_per_priority() {
    let policy = policy(
        "response_policy:\n  question:\n    approval_required: true\n  issue:\n    auto_respond: true\n    urgent:\n      approval_required: true\n      actions: [page_oncall]\n",
    );
    let q = policy.decide(&message(MessageType::Question, Priority::Low), known());
    assert_eq!(
        (q.action, q.rule.as_str()),
        (Action::RequireApproval, "response_policy.question")
    );
    let urgent = policy.decide(&message(MessageType::Issue, Priority::Urgent), known());
    assert_eq!(urgent.operations, vec!["page_oncall".to_string()]);
    assert_eq!(urgent.rule, "response_policy.issue.urgent");
    let high = policy.decide(&message(MessageType::Issue, Priority::High), known());
    assert_eq!(high.action, Action::AutoRespond);
}

#[test]
fn first_matching_rule_wins_and_hard_stops_raise() {
    let policy = policy(
        "rules:\n  - id: ci\n    from: ci-*\n    action: auto_respond\n  - id: all-issues\n    type: issue\n    action: require_approval\n",
    );
    let mut m = message(MessageType::Issue, Priority::Low);
    m.from.agent_id = "ci-bot".into();
    assert_eq!(policy.decide(&m, known()).rule, "ci");
    m.from.agent_id = "web".into();
    assert_eq!(policy.decide(&m, known()).rule, "all-issues");
    m.from.agent_id = "ci-bot".into();
    m.message.body = crate::message::Body::Text("then `git push --force`".into());
    let d = policy.decide(&m, known());
    assert_eq!(
        (d.action, d.rule.as_str()),
        (Action::RequireApproval, "hard_stop:--force")
    );
}

#[test]
fn trust_rejects_denied_and_gates_unknown_senders() {
    let policy = policy("trust:\n  deny_senders: [evil*]\n");
    let mut m = message(MessageType::Question, Priority::Low);
    m.from.agent_id = "evil-twin".into();
    let d = policy.decide(&m, known());
    assert_eq!((d.action, d.operations.len()), (Action::Reject, 0));
    m.from.agent_id = "stranger".into();
    let d = policy.decide(&m, Facts::default());
    assert_eq!(
        (d.action, d.rule.as_str()),
        (Action::RequireApproval, "trust.unknown_senders")
    );
}

#[test]
fn allow_senders_admits_verified_senders_only() {
    let strict = policy("trust:\n  allow_senders: [\"ci-*\"]\n");
    let mut m = message(MessageType::Request, Priority::Normal);
    m.from.agent_id = "ci-bot".into();
    let d = strict.decide(&m, known());
    assert_eq!(d.action, Action::AutoRespond);
    // The same id, only claimed: as from a sender outside the list.
    let e = strict.explain(&m, Facts::default());
    assert_eq!(
        (e.decision.action, e.decision.rule.as_str()),
        (Action::RequireApproval, "trust.allow_senders")
    );
    assert!(
        e.steps
            .iter()
            .any(|s| s.matched && s.detail.contains("not verified")),
        "{:?}",
        e.steps
    );
    // Not even an `allow` for unknown senders lets a claim past the list.
    let loose = policy("trust:\n  allow_senders: [\"ci-*\"]\n  unknown_senders: allow\n");
    assert_eq!(
        loose.decide(&m, Facts::default()).action,
        Action::RequireApproval
    );
}

#[test]
fn a_rule_by_sender_loosens_for_verified_senders_only() {
    let policy = policy(
        "trust:\n  unknown_senders: allow\nrules:\n  - id: ci\n    from: ci-*\n    action: auto_respond\n    operations: [read_code, push_branch]\n",
    );
    let mut m = message(MessageType::Handoff, Priority::Normal);
    m.from.agent_id = "ci-bot".into();
    assert_eq!(
        policy.decide(&m, known()).action,
        Action::AutoRespond,
        "verified"
    );
    let d = policy.decide(&m, Facts::default());
    assert_eq!(
        (d.action, d.rule.as_str()),
        (Action::RequireApproval, "default.handoff"),
        "a claimed id gets what an unknown sender gets"
    );
    // Same action either way: only the operations both allow.
    m.message_type = MessageType::Request;
    let d = policy.decide(&m, Facts::default());
    assert_eq!((d.action, d.rule.as_str()), (Action::AutoRespond, "ci"));
    assert_eq!(d.operations, vec!["read_code".to_string()]);
}

#[test]
fn a_rule_by_sender_still_restricts_a_claimed_id() {
    let policy = policy(
        "trust:\n  unknown_senders: allow\n  deny_senders: [\"evil-*\"]\nrules:\n  - id: ci-quiet\n    from: ci-*\n    action: reject\n",
    );
    let mut m = message(MessageType::Question, Priority::Low);
    m.from.agent_id = "ci-bot".into();
    let d = policy.decide(&m, Facts::default());
    assert_eq!((d.action, d.rule.as_str()), (Action::Reject, "ci-quiet"));
    m.from.agent_id = "evil-twin".into();
    let d = policy.decide(&m, Facts::default());
    assert_eq!(d.action, Action::Reject);
}

#[test]
fn bad_rules_are_config_errors() {
    for (yaml, text) in [
        ("rules:\n  - type: issue\n", "rules[0].action: missing"),
        ("rules:\n  - action: maybe\n", "unknown action"),
        (
            "rules:\n  - type: bogus\n    action: reject\n",
            "rules[0].type",
        ),
        (
            "rules:\n  - from: '[x'\n    action: reject\n",
            "invalid glob",
        ),
        (
            "trust:\n  unknown_senders: sometimes\n",
            "trust.unknown_senders",
        ),
    ] {
        let config = AgentConfig::parse(yaml, Path::new("c")).unwrap();
        let err = crate::error::one_line(&Policy::from_config(config).unwrap_err());
        assert!(err.contains(text), "{yaml}: {err}");
    }
}

#[test]
fn unreadable_config_fails_closed() {
    let d = Policy::strictest().decide(&message(MessageType::Question, Priority::Low), known());
    assert_eq!(d.action, Action::RequireApproval);
}
