//! A sender id is a claim until the receiver verified it (SPEC §15.2):
//! what the receiver grants by name — `trust.allow_senders`, a rule's
//! `from` — goes to verified senders only. Real binary, hostile files
//! planted as any process that can write to the inbox could.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::*;

/// A v1.0 message written straight into `repo`'s inbox, unsigned.
fn plant(repo: &Path, name: &str, value: &Value) {
    std::fs::write(
        repo.join(".aea").join(name),
        serde_json::to_vec_pretty(value).unwrap(),
    )
    .unwrap();
}

fn message(kind: &str, from: &str, repo_path: &str, id: &str, attachments: &Value) -> Value {
    json!({
        "protocol_version": "1.0",
        "message_id": id,
        "message_type": kind,
        "timestamp": "2026-11-22T10:00:00.000Z",
        "priority": "normal",
        "requires_response": false,
        "from": {"agent_id": from, "repo_path": repo_path},
        "to": {"agent_id": "web"},
        "message": {"subject": "run the suite", "body": "b", "context": {}, "attachments": attachments},
        "metadata": {"tags": []}
    })
}

/// The `check --json` item of message `id`.
fn item(env: &TestEnv, repo: &Path, id: &str) -> Value {
    let report = env.json(repo, &["check"]);
    report["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no message {id}: {report}"))
}

/// Adds a `trust:` section to `repo`'s config (the presets keep theirs
/// commented out, so it is the only one).
fn allow_senders(repo: &Path, globs: &str) {
    let config = repo.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    let mut kept: Vec<&str> = Vec::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.starts_with("trust:") {
            skipping = true;
            continue;
        }
        if skipping && line.starts_with(' ') {
            continue;
        }
        skipping = false;
        kept.push(line);
    }
    let text = format!("{}\ntrust:\n  allow_senders: {globs}\n", kept.join("\n"));
    std::fs::write(&config, text).unwrap();
}

#[test]
fn allow_senders_does_not_admit_an_unsigned_claim_to_a_matching_id() {
    let env = TestEnv::new();
    let web = env.repo("web");
    allow_senders(&web, r#"["ci-*"]"#);
    // Nobody registered ci-bot: anyone who can write to the inbox can
    // claim that id.
    let claim = message("request", "ci-bot", "/nowhere", "claim-1", &json!([]));
    plant(
        &web,
        "message-20261122T100000000Z-from-ci-bot-00000001.json",
        &claim,
    );
    let it = item(&env, &web, "claim-1");
    assert_eq!(it["sender"], "unverified");
    assert_eq!(
        it["decision"]["action"], "require_approval",
        "a claimed id in allow_senders is an unknown sender: {it}"
    );
    assert_eq!(it["decision"]["rule"], "trust.allow_senders");
    let explained = env.ok(&web, &["policy", "explain", "claim-1"]);
    assert!(
        explained.contains("matches allow_senders but is not verified"),
        "{explained}"
    );
    let shown = env.ok(&web, &["policy", "show"]);
    assert!(shown.contains("ci-* (verified senders only"), "{shown}");
    // And the gate holds: it cannot be processed as done unapproved.
    let out = env.run(&web, &["process", "claim-1", "--outcome", "done"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
}

#[test]
fn allow_senders_admits_a_signed_pinned_sender_and_one_the_registry_accepts_unsigned() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let ci = env.repo("ci-bot");
    allow_senders(&web, r#"["ci-*"]"#);
    env.ok(
        &web,
        &[
            "agents",
            "trust",
            "ci-bot",
            "--key",
            &env.public_key("ci-bot"),
        ],
    );
    let id = env.send(
        &ci,
        "web",
        &[
            "--type",
            "request",
            "--subject",
            "run the suite",
            "--body",
            "b",
        ],
    );
    let it = item(&env, &web, &id);
    assert_eq!(it["sender"], "verified");
    assert_eq!(it["decision"]["action"], "auto_respond", "{it}");
    let explained = env.ok(&web, &["policy", "explain", &id]);
    assert!(explained.contains("is verified and allowed"), "{explained}");

    // An agent that cannot sign, whose unsigned mail the person accepted.
    let legacy = env.path().join("ci-legacy");
    std::fs::create_dir_all(&legacy).unwrap();
    env.ok(
        &web,
        &[
            "agents",
            "add",
            "ci-legacy",
            "--path",
            legacy.to_str().unwrap(),
        ],
    );
    env.ok(&web, &["agents", "trust", "ci-legacy", "--allow-unsigned"]);
    let unsigned = message("request", "ci-legacy", "/nowhere", "legacy-1", &json!([]));
    plant(
        &web,
        "message-20261122T100000000Z-from-ci-legacy-00000002.json",
        &unsigned,
    );
    let it = item(&env, &web, "legacy-1");
    assert_eq!(it["sender"], "unverified");
    assert_eq!(it["decision"]["action"], "auto_respond", "{it}");
}
