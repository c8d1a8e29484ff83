//! `aea policy show`, `explain` and `validate`, and the policy
//! conformance corpus: `tests/policy-corpus/<case>/` holds a
//! `message.json`, a `config.yaml` (or names a preset in `expected.json`)
//! and the expected decision (action, rule, whether the user is notified,
//! and optionally the operations). One test runs them all.

use crate::common::*;
use aea::config::AgentConfig;
use aea::policy::{Facts, Policy};
use serde_json::Value;
use std::path::Path;

fn decide(dir: &Path, expected: &Value) -> aea::policy::Decision {
    let config_text = match expected.get("preset").and_then(Value::as_str) {
        Some(preset) => aea::templates::policy(preset.parse().expect("a known preset"), "web"),
        None => std::fs::read_to_string(dir.join("config.yaml")).expect("config.yaml or a preset"),
    };
    let policy = AgentConfig::parse(&config_text, &dir.join("config.yaml"))
        .ok()
        .and_then(|config| Policy::from_config(config).ok())
        .unwrap_or_else(Policy::strictest);
    let bytes = std::fs::read(dir.join("message.json")).unwrap();
    let message = aea::message::parse(&bytes, None)
        .unwrap_or_else(|e| panic!("{}: message.json is invalid: {e}", dir.display()));
    let facts = Facts {
        sender_registered: expected
            .get("registered")
            .and_then(Value::as_bool)
            .unwrap_or(true),
    };
    policy.decide(&message, facts)
}

/// How many cases `tests/policy-corpus/` holds. Counted exactly so that a
/// case that goes missing (a renamed or deleted folder) fails the test;
/// whoever adds a case raises this number in the same commit.
const CASES: usize = 109;

#[test]
fn every_corpus_case_gets_its_expected_decision() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/policy-corpus");
    let mut cases: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert_eq!(
        cases.len(),
        CASES,
        "the corpus has {} cases, expected {CASES}: update CASES in tests/test_policy_command.rs when adding a case",
        cases.len()
    );
    let mut failures = Vec::new();
    for dir in &cases {
        let expected: Value =
            serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();
        let decision = decide(dir, &expected);
        let name = dir.file_name().unwrap().to_string_lossy();
        if decision.action.as_str() != expected["action"] || decision.rule != expected["rule"] {
            failures.push(format!(
                "{name}: got {} by {}, expected {} by {}",
                decision.action.as_str(),
                decision.rule,
                expected["action"],
                expected["rule"]
            ));
        }
        match expected.get("notify_user").and_then(Value::as_bool) {
            Some(want) if want == decision.notify_user => {}
            Some(want) => failures.push(format!(
                "{name}: notify_user {}, expected {want}",
                decision.notify_user
            )),
            None => failures.push(format!(
                "{name}: expected.json has no boolean \"notify_user\" (the decision's is {})",
                decision.notify_user
            )),
        }
        if let Some(ops) = expected.get("operations") {
            let want: Vec<&str> = ops
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o.as_str().unwrap())
                .collect();
            if decision.operations != want {
                failures.push(format!(
                    "{name}: operations {:?}, expected {want:?}",
                    decision.operations
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn policy_explain_and_show() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let config = web.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&config).unwrap().replacen(
        "rules: []",
        "rules:\n  - id: only-ci\n    from: \"ci-*\"\n    action: reject\n  - id: questions-need-me\n    type: question\n    action: require_approval",
        1,
    );
    std::fs::write(&config, text).unwrap();
    let id = env.question(&api, "web", "Which port?");
    let out = env.ok(&web, &["policy", "explain", &id]);
    assert!(out.contains("- only-ci"), "{out}");
    assert!(out.contains("sender api does not match ci-*"), "{out}");
    assert!(out.contains("* questions-need-me"), "{out}");
    assert!(
        out.contains("decision: require_approval by questions-need-me"),
        "{out}"
    );
    let v = env.json(&web, &["policy", "explain", &id]);
    assert_eq!(v["decision"]["rule"], "questions-need-me");
    assert_eq!(v["steps"][0]["matched"], false);

    let show = env.json(&web, &["policy", "show"]);
    assert_eq!(show["rules"][1]["id"], "questions-need-me");
    assert_eq!(show["table"].as_array().unwrap().len(), 24);
    assert!(
        show["hard_stops"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h == "rm -rf")
    );
    let text = env.ok(&web, &["policy", "show"]);
    assert!(
        text.contains("handoff   low     require_approval"),
        "{text}"
    );
}

#[test]
fn validate_fails_on_unknown_keys_and_bad_rules() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let config = web.join(".aea/agent-config.yaml");
    let original = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{original}\nhard_stop: [\"oops\"]\n")).unwrap();
    let out = env.run(&web, &["validate"]);
    assert_eq!(code(&out), 6, "a typo must not silently drop a safeguard");
    assert!(
        stdout(&out).contains("unknown field `hard_stop`"),
        "{}",
        stdout(&out)
    );

    std::fs::write(
        &config,
        original.replacen("rules: []", "rules:\n  - action: perhaps", 1),
    )
    .unwrap();
    let out = env.run(&web, &["validate"]);
    assert_eq!(code(&out), 6);
    assert!(stdout(&out).contains("rules[0].action"), "{}", stdout(&out));
    // check still works, with the strictest policy and a warning.
    let out = env.run(&web, &["check"]);
    assert!(out.status.success());
    assert!(stderr(&out).contains("every message needs approval"));
}
