//! Attacks on what `send` records before it delivers (`.aea/.sent-keys/`)
//! and on what `doctor --fix` repairs from it (issue 11): a retry must not
//! deliver again what a recipient already holds, nor hold back what it
//! does not; a repair must not take someone else's word for what we sent.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::*;

/// The one send record in `repo`'s `.sent-keys/`.
fn record(repo: &Path) -> PathBuf {
    let records: Vec<PathBuf> = std::fs::read_dir(repo.join(".aea/.sent-keys"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    records[0].clone()
}

/// Turns the record of a send that finished into the record of one killed
/// before it finished, five minutes ago (its process unknown: judged by
/// age), after `edit`.
fn interrupt(repo: &Path, edit: impl FnOnce(&mut serde_json::Map<String, Value>)) {
    let path = record(repo);
    let mut value: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let object = value.as_object_mut().unwrap();
    for field in ["finished", "pid", "host", "boot_id", "started"] {
        object.remove(field);
    }
    let at = chrono::Utc::now() - chrono::Duration::minutes(5);
    object.insert("at".into(), aea::message::format_time(at).into());
    edit(object);
    std::fs::write(&path, serde_json::to_vec(&value).unwrap()).unwrap();
}

/// `doctor --json`'s check named `name`.
fn check(report: &Value, name: &str) -> Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {report}"))
        .clone()
}

fn doctor(env: &TestEnv, repo: &Path, fix: bool) -> Value {
    let mut args = vec!["--json", "doctor"];
    if fix {
        args.push("--fix");
    }
    let out = env.run(repo, &args);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)))
}

fn inbox_ids(env: &TestEnv, repo: &Path) -> Vec<String> {
    env.json(repo, &["check"])["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

/// The same subject and body in another conversation, or asking for an
/// answer this time, is another message: it was held back as "not sent
/// twice" because the record's digest left those out.
#[test]
fn another_conversation_or_a_request_for_an_answer_is_not_a_repeat() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let base = ["--type", "update", "--subject", "status?", "--body", "b"];
    let first = env.send(
        &api,
        "web",
        &[&base[..], &["--conversation", "c1"]].concat(),
    );
    let second = env.send(
        &api,
        "web",
        &[&base[..], &["--conversation", "c2"]].concat(),
    );
    assert_ne!(first, second, "another conversation, another message");
    let asking = env.send(
        &api,
        "web",
        &[&base[..], &["--conversation", "c2", "--requires-response"]].concat(),
    );
    assert_ne!(second, asking, "a request for an answer is another message");
    let report = env.json(&web, &["check"]);
    let messages = report["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{report}");
    assert!(messages.iter().any(|m| m["requires_response"] == true));
}

/// A keyed send whose recipient processed the message and let `gc` move
/// it to `.archive/` is not "interrupted, reached nobody": doctor named it
/// so, `doctor --fix` dropped the key's record and said "send it again",
/// and the same keyed send delivered it a second time.
#[test]
fn a_keyed_send_the_recipient_archived_is_neither_reported_nor_sent_again() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let args = [
        "--type",
        "update",
        "--subject",
        "deployed",
        "--idempotency-key",
        "deploy-42",
    ];
    let id = env.send(&api, "web", &args);
    env.ok(&web, &["process", &id, "--outcome", "done"]);
    env.ok(&web, &["gc", "--older-than", "0s"]);
    assert!(inbox_files(&web).is_empty(), "gc archived it");

    let report = doctor(&env, &api, false);
    assert_eq!(check(&report, "sends")["ok"], true, "{report}");
    let fixed = doctor(&env, &api, true);
    assert_eq!(fixed["fixed"], serde_json::json!([]), "{fixed}");

    let again = env.send(&api, "web", &args);
    assert_eq!(again, id);
    assert!(inbox_files(&web).is_empty(), "delivered a second time");
}

/// The same, for an interrupted plain send: the recipient that processed
/// and archived the message meanwhile holds it; the retry reaches only
/// the recipient that does not.
#[test]
fn a_retry_does_not_deliver_again_what_a_recipient_archived() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let db = env.repo("db");
    let argv = [
        "send",
        "--to",
        "web",
        "--to",
        "db",
        "--type",
        "update",
        "--subject",
        "s",
    ];
    env.ok(&api, &argv);
    let id = inbox_ids(&env, &web).remove(0);
    // Killed before db: db never got it.
    for name in inbox_files(&db) {
        std::fs::remove_file(db.join(".aea").join(name)).unwrap();
    }
    interrupt(&api, |_| {});
    env.ok(&web, &["process", &id, "--outcome", "done"]);
    env.ok(&web, &["gc", "--older-than", "0s"]);

    let report = doctor(&env, &api, false);
    let sends = check(&report, "sends");
    let detail = sends["detail"].as_str().unwrap();
    assert!(detail.contains("reached web, not db"), "{report}");

    env.ok(&api, &argv);
    assert!(inbox_files(&web).is_empty(), "web got it again");
    assert_eq!(inbox_ids(&env, &db), [id]);
}

/// A repeat of a send queued for a remote recipient is not queued again
/// (it was, while stderr said "not sent twice"); nor, once `aea sync`
/// pushed it, is a keyed send's record reported as having reached nobody,
/// or the keyed send queued again.
#[test]
fn a_repeat_for_a_remote_recipient_is_not_queued_twice() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let remote = env.path().join("remote.git");
    let made = git_command(&env.path())
        .args(["init", "--quiet", "--bare"])
        .arg(&remote)
        .status()
        .unwrap();
    assert!(made.success());
    let config = api.join(".aea/agent-config.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    let _ = write!(text, "\nsync:\n  remote: {}\n", remote.display());
    std::fs::write(&config, text).unwrap();
    env.ok(&api, &["trust"]);
    let mut registry = std::fs::read_to_string(env.registry()).unwrap();
    let _ = write!(
        registry,
        "\n[agents.far]\nremote = \"{}\"\nkey = \"{}\"\n",
        remote.display(),
        env.public_key("far")
    );
    std::fs::write(env.registry(), registry).unwrap();
    let queued = || {
        std::fs::read_dir(api.join(".aea/outgoing"))
            .unwrap()
            .count()
    };

    let plain = ["--type", "update", "--subject", "plain"];
    let first = env.send(&api, "far", &plain);
    let again = env.send(&api, "far", &plain);
    assert_eq!(first, again);
    assert_eq!(queued(), 1, "queued twice");

    let keyed = [
        "--type",
        "update",
        "--subject",
        "k",
        "--idempotency-key",
        "K",
    ];
    let id = env.send(&api, "far", &keyed);
    env.ok(&api, &["sync"]);
    assert_eq!(queued(), 0);
    let report = doctor(&env, &api, false);
    assert_eq!(check(&report, "sends")["ok"], true, "{report}");
    assert_eq!(env.send(&api, "far", &keyed), id);
    assert_eq!(queued(), 0, "pushed already, queued again");
}

/// `doctor --fix` keeps the `sent/` copy of an interrupted send from a
/// recipient's copy: only from one signed with our key. A recipient that
/// changed its copy (here the first one looked at) does not get its words
/// into our `sent/` as what we said.
#[test]
fn doctor_fix_keeps_as_our_copy_only_what_we_signed() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let db = env.repo("db");
    env.ok(
        &api,
        &[
            "send",
            "--to",
            "web",
            "--to",
            "db",
            "--type",
            "update",
            "--subject",
            "s",
            "--body",
            "what we said",
        ],
    );
    for entry in std::fs::read_dir(api.join(".aea/sent")).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    interrupt(&api, |_| {});
    // web, the first recipient looked at, changes its copy; db's stays as
    // we signed it.
    let path = web.join(".aea").join(&inbox_files(&web)[0]);
    let mut message: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    message["message"]["body"] = "api agreed to drop the database".into();
    std::fs::write(&path, serde_json::to_vec(&message).unwrap()).unwrap();
    assert_eq!(inbox_files(&db).len(), 1);
    let fixed = doctor(&env, &api, true);
    let copies: Vec<PathBuf> = std::fs::read_dir(api.join(".aea/sent"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(copies.len(), 1, "{fixed}");
    for copy in &copies {
        let message: Value = serde_json::from_slice(&std::fs::read(copy).unwrap()).unwrap();
        assert_eq!(
            message["message"]["body"], "what we said",
            "an altered copy kept as ours: {fixed}"
        );
    }
}
