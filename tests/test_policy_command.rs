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
        stdout(&out).contains("unknown key `hard_stop`: did you mean `hard_stops`?"),
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

/// `web`'s config with `from` replaced by `to`, written to `name` beside
/// the repository: a proposed config for `policy replay --config`.
fn proposed(env: &TestEnv, web: &Path, name: &str, from: &str, to: &str) -> String {
    let text = std::fs::read_to_string(web.join(".aea/agent-config.yaml")).unwrap();
    assert!(text.contains(from), "the config has no {from:?}");
    let path = env.path().join(name);
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    path.display().to_string()
}

const STRICTER: (&str, &str) = (
    "rules: []",
    "rules:\n  - id: questions-need-me\n    type: question\n    action: require_approval",
);
const LOOSER: (&str, &str) = (
    "  handoff:\n    approval_required: true",
    "  handoff:\n    auto_respond: true",
);

/// `web` holding mail from `api` in every place a replay reads: waiting
/// (a question, a handoff, a handoff tripping a hard stop), processed (an
/// update, a question) and archived (a question). Returns `web` and the
/// ids by name.
fn held_mail(env: &TestEnv) -> (std::path::PathBuf, Vec<(&'static str, String)>) {
    let api = env.repo("api");
    let web = env.repo("web");
    let archived = env.question(&api, "web", "Archived question");
    env.ok(&web, &["process", &archived]);
    env.ok(&web, &["gc", "--older-than", "0s"]);
    let processed_q = env.question(&api, "web", "Processed question");
    env.ok(&web, &["process", &processed_q]);
    let update = env.send(&api, "web", &["--type", "update", "--subject", "Deployed"]);
    env.ok(&web, &["process", &update]);
    let waiting_q = env.question(&api, "web", "Which port?");
    let handoff = env.send(
        &api,
        "web",
        &["--type", "handoff", "--subject", "Take over", "--body", "b"],
    );
    let stopped = env.send(
        &api,
        "web",
        &[
            "--type",
            "handoff",
            "--subject",
            "Clean up",
            "--body",
            "then rm -rf build",
        ],
    );
    let ids = vec![
        ("archived question", archived),
        ("processed question", processed_q),
        ("processed update", update),
        ("waiting question", waiting_q),
        ("waiting handoff", handoff),
        ("hard-stopped handoff", stopped),
    ];
    (web, ids)
}

/// The ids of `changed` (a `policy replay --json` document), with where
/// each is held and its decision before and after, as `held action/rule ->
/// action/rule`.
fn changes(doc: &Value, ids: &[(&str, String)]) -> Vec<String> {
    let name = |id: &str| ids.iter().find(|(_, i)| i == id).map_or("?", |(n, _)| *n);
    let mut found: Vec<String> = doc["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{} ({}): {} by {} -> {} by {}",
                name(c["id"].as_str().unwrap()),
                c["held"].as_str().unwrap(),
                c["before"]["action"].as_str().unwrap(),
                c["before"]["rule"].as_str().unwrap(),
                c["after"]["action"].as_str().unwrap(),
                c["after"]["rule"].as_str().unwrap()
            )
        })
        .collect();
    found.sort();
    found
}

#[test]
fn policy_replay_lists_exactly_what_a_stricter_or_looser_config_changes() {
    let env = TestEnv::new();
    let (web, ids) = held_mail(&env);
    let stricter = proposed(&env, &web, "stricter.yaml", STRICTER.0, STRICTER.1);
    let doc = env.json(&web, &["policy", "replay", "--config", &stricter]);
    assert_fits("policy-replay", &doc);
    assert_eq!(doc["decided"], 6, "{doc:#}");
    assert_eq!(
        changes(&doc, &ids),
        [
            "archived question (archived): auto_respond by response_policy.question -> require_approval by questions-need-me",
            "processed question (processed): auto_respond by response_policy.question -> require_approval by questions-need-me",
            "waiting question (waiting): auto_respond by response_policy.question -> require_approval by questions-need-me",
        ],
        "{doc:#}"
    );

    // Handoffs no longer wait for a person, except the one a hard stop
    // holds: replay decides as check does, hard stops included. That one
    // still waits, now by the hard stop rather than by the handoff row.
    let looser = proposed(&env, &web, "looser.yaml", LOOSER.0, LOOSER.1);
    let doc = env.json(&web, &["policy", "replay", "--config", &looser]);
    assert_fits("policy-replay", &doc);
    assert_eq!(
        changes(&doc, &ids),
        [
            "hard-stopped handoff (waiting): require_approval by response_policy.handoff -> require_approval by hard_stop:rm -rf",
            "waiting handoff (waiting): require_approval by response_policy.handoff -> auto_respond by response_policy.handoff",
        ],
        "{doc:#}"
    );

    let text = env.ok(&web, &["policy", "replay", "--config", &looser]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "two messages of two lines, a count: {text}");
    let at = lines
        .iter()
        .position(|l| l.ends_with("from api  Take over"))
        .unwrap_or_else(|| panic!("{text}"));
    let reference = doc["changed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["subject"] == "Take over")
        .unwrap()["ref"]
        .as_str()
        .unwrap();
    assert!(lines[at].starts_with(reference), "{text}");
    assert!(
        lines[at].contains(" waiting ") && lines[at].contains(" handoff "),
        "{text}"
    );
    assert_eq!(
        lines[at + 1],
        "  require_approval by response_policy.handoff -> auto_respond by response_policy.handoff"
    );
    assert!(
        lines[4].starts_with("2 of 6 held messages would be decided otherwise (current: "),
        "{text}"
    );
    // The reference is one `show` resolves.
    assert!(env.ok(&web, &["show", reference]).contains("Take over"));
}

#[test]
fn policy_replay_since_leaves_out_older_mail() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let old = env
        .cmd(&api)
        .env("AEA_TEST_NOW", "2020-01-01T00:00:00.000Z")
        .args(["--json", "send", "--to", "web", "--type", "question"])
        .args(["--subject", "Old question", "--body", "b"])
        .output()
        .unwrap();
    assert!(old.status.success(), "{}", stderr(&old));
    let old: Value = serde_json::from_slice(&old.stdout).unwrap();
    let new = env.question(&api, "web", "New question");
    let stricter = proposed(&env, &web, "stricter.yaml", STRICTER.0, STRICTER.1);

    let all = env.json(&web, &["policy", "replay", "--config", &stricter]);
    assert_eq!(all["decided"], 2);
    assert_eq!(all["changed"].as_array().unwrap().len(), 2);
    assert!(all["since"].is_null());

    let recent = env.json(
        &web,
        &["policy", "replay", "--config", &stricter, "--since", "30d"],
    );
    assert_fits("policy-replay", &recent);
    assert_eq!(recent["decided"], 1, "{recent:#}");
    let changed = recent["changed"].as_array().unwrap();
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0]["id"], new.as_str());
    assert_ne!(changed[0]["id"], old["message_id"]);
    assert!(recent["since"].is_string());

    let out = env.run(
        &web,
        &["policy", "replay", "--config", &stricter, "--since", "soon"],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("--since"), "{}", stderr(&out));
}

#[test]
fn policy_replay_refuses_an_invalid_proposed_config_naming_its_line() {
    let env = TestEnv::new();
    let (web, _) = held_mail(&env);
    let bad = proposed(
        &env,
        &web,
        "bad.yaml",
        "rules: []",
        "rules:\n  - action: perhaps",
    );
    let out = env.run(&web, &["policy", "replay", "--config", &bad]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("bad.yaml"), "{err}");
    assert!(err.contains("rules[0].action"), "{err}");
    assert!(err.contains("hint:"), "{err}");
    assert!(
        stdout(&out).is_empty(),
        "nothing replayed: {}",
        stdout(&out)
    );

    let typo = proposed(
        &env,
        &web,
        "typo.yaml",
        "rules: []",
        "rules: []\nhard_stop: [oops]",
    );
    let out = env.run(&web, &["policy", "replay", "--config", &typo]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(
        err.contains("unknown key `hard_stop`: did you mean `hard_stops`?"),
        "{err}"
    );
    assert!(err.contains("line "), "the line of the typo: {err}");

    let out = env.run(&web, &["policy", "replay", "--config", "missing.yaml"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("missing.yaml"), "{}", stderr(&out));
}

#[test]
fn policy_replay_without_config_compares_the_work_tree_with_head() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = plain_git_repo(&env, "web");
    env.ok(&web, &["init", "--no-agent-files", "--no-git-hooks"]);
    let question = env.question(&api, "web", "Which port?");

    // No commit yet: nothing to compare with.
    let out = env.run(&web, &["policy", "replay"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("--config FILE"), "{}", stderr(&out));

    env.git_ok(&web, &["add", ".aea/agent-config.yaml"]);
    env.git_ok(&web, &["commit", "-q", "-m", "aea"]);
    let out = env.run(&web, &["policy", "replay"]);
    assert_eq!(code(&out), 2, "an unedited config: {}", stderr(&out));
    assert!(
        stderr(&out).contains("nothing to replay"),
        "{}",
        stderr(&out)
    );

    let config = web.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replacen(STRICTER.0, STRICTER.1, 1)).unwrap();
    let doc = env.json(&web, &["policy", "replay"]);
    assert_fits("policy-replay", &doc);
    assert_eq!(doc["current"], "HEAD:.aea/agent-config.yaml");
    assert_eq!(doc["changed"][0]["id"], question.as_str());
    assert_eq!(doc["changed"][0]["after"]["rule"], "questions-need-me");
}

#[test]
fn policy_replay_escapes_hostile_subjects() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let subject = "\u{1b}]0;PWNED\u{7}\u{9b}2J\u{202e}txt.exe";
    let message = serde_json::json!({
        "protocol_version": "1.0",
        "message_id": "hostile-1",
        "message_type": "question",
        "timestamp": "2026-11-22T10:15:00.000Z",
        "priority": "normal",
        "requires_response": false,
        "from": {"agent_id": "evil", "repo_path": "/nonexistent/evil"},
        "to": {"agent_id": "web"},
        "message": {"subject": subject, "body": "body", "context": {}, "attachments": []},
        "metadata": {"conversation_id": "hostile-1", "tags": []}
    });
    plant_json(
        &web,
        "message-20261122T101500000Z-from-evil-0000000c.json",
        &message,
    );
    // An unknown sender waits for a person; a config that lets unknown
    // senders through changes that, so the message is listed.
    let open = proposed(
        &env,
        &web,
        "open.yaml",
        "unknown_senders: require_approval",
        "unknown_senders: allow",
    );
    for json in [false, true] {
        let mut args = vec!["policy", "replay", "--config", &open];
        if json {
            args.insert(0, "--json");
        }
        let out = env.run(&web, &args);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_clean(&format!("aea {args:?} stdout"), &out.stdout);
        assert_clean(&format!("aea {args:?} stderr"), &out.stderr);
        if json {
            let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_fits("policy-replay", &doc);
            assert_eq!(doc["changed"][0]["subject"], subject, "kept whole, escaped");
        } else {
            let text = stdout(&out);
            assert!(text.contains("from evil"), "{text}");
            assert!(text.contains("\\u{1b}]0;PWNED\\u{7}"), "{text}");
        }
    }
}

/// A YAML mistake is said as the person made it: a misindented line, a
/// key left empty, a misspelt key with the one it likely meant; the fix
/// points at a preset the binary prints.
#[test]
fn yaml_mistakes_are_said_as_made_and_the_presets_are_printed() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let config = web.join(".aea/agent-config.yaml");
    for (yaml, said) in [
        (
            "agent:\n  id: web\nresponse_policy:\n  question:\n    auto_respond: true\n     actions: [answer]\n",
            "line 6 is indented further than line 5, which already has a value",
        ),
        (
            "agent:\n  id: web\nresponse_policy:\n  question:\n  auto_respond: true\n",
            "`question:` has nothing under it",
        ),
        (
            "agent:\n  id: web\nlimit:\n  max_recipients: 3\n",
            "unknown key `limit`: did you mean `limits`?",
        ),
        (
            "agent:\n  id: web\nresponse_policy:\n  question:\n    auto_respnd: true\n",
            "did you mean `auto_respond`?",
        ),
    ] {
        std::fs::write(&config, yaml).unwrap();
        let out = env.run(&web, &["validate"]);
        assert!(stdout(&out).contains(said), "{yaml}: {}", stdout(&out));
        let out = env.run(&web, &["policy", "show"]);
        assert!(stderr(&out).contains(said), "{yaml}: {}", stderr(&out));
    }
    std::fs::write(&config, "agent:\n  id: web\nzzzz: 1\n").unwrap();
    let listed = stdout(&env.run(&web, &["validate"]));
    assert!(listed.contains("the keys here are agent,"), "{listed}");
    assert!(listed.contains("bridges"), "the whole list: {listed}");
    // The hint names a command that prints a preset, from anywhere.
    let out = env.run(&web, &["whoami"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("aea policy preset default"),
        "{}",
        stderr(&out)
    );
    let preset = env.ok(&env.path(), &["policy", "preset", "strict"]);
    assert!(preset.starts_with("# aea policy: strict"), "{preset}");
    assert!(!preset.contains("{{"), "{preset}");
    // What it prints is a config aea reads, once the id is filled in.
    std::fs::write(&config, preset.replace("<agent-id>", "web")).unwrap();
    env.ok(&web, &["validate"]);
}
