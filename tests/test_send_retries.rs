//! Attacks on what `send` records before it delivers (the private
//! `sent-keys/`) and on what `doctor --fix` repairs from it: a retry must
//! not deliver again what a recipient already holds, nor hold back what it
//! does not; a repair must not take someone else's word for what we sent.

use crate::common::*;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The one send record in `repo`'s private `sent-keys/`.
fn record(env: &TestEnv, repo: &Path) -> PathBuf {
    let records: Vec<PathBuf> = std::fs::read_dir(env.state(repo).join("sent-keys"))
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
fn interrupt(env: &TestEnv, repo: &Path, edit: impl FnOnce(&mut serde_json::Map<String, Value>)) {
    let path = record(env, repo);
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

/// How many processed messages `gc` archived in `repo` (their records
/// went with them), with none left in its processed store.
fn archived(env: &TestEnv, repo: &Path) -> usize {
    let state = env.state(repo);
    let count = |dir: &str| std::fs::read_dir(state.join(dir)).unwrap().count();
    assert_eq!(count("processed"), 0, "processed mail left unarchived");
    count("archive/records")
}

fn inbox_ids(env: &TestEnv, repo: &Path) -> Vec<String> {
    env.json(repo, &["check", "--all"])["messages"]
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
/// it to its archive is not "interrupted, reached nobody": doctor named it
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
    assert_eq!(archived(&env, &web), 1, "gc archived it");
    assert!(inbox_files(&web).is_empty());

    let report = doctor(&env, &api, false);
    assert_eq!(check(&report, "sends")["ok"], true, "{report}");
    let fixed = doctor(&env, &api, true);
    assert_eq!(fixed["fixed"], serde_json::json!([]), "{fixed}");

    let again = env.send(&api, "web", &args);
    assert_eq!(again, id);
    assert!(inbox_files(&web).is_empty(), "delivered a second time");
    assert_eq!(archived(&env, &web), 1);
}

/// The same, for an interrupted plain send: the recipient that processed
/// and archived the message meanwhile holds it; the retry reaches only
/// the recipient that does not.
#[test]
fn a_retry_does_not_deliver_again_what_a_recipient_archived() {
    let env = TestEnv::new();
    // Sends keep their record, as one killed after answering does.
    env.set_var("AEA_TEST_KEEP_SEND_RECORD", "1");
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
    interrupt(&env, &api, |_| {});
    env.ok(&web, &["process", &id, "--outcome", "done"]);
    env.ok(&web, &["gc", "--older-than", "0s"]);
    assert_eq!(archived(&env, &web), 1, "gc archived it");

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
    // Sends keep their record, as one killed after answering does.
    env.set_var("AEA_TEST_KEEP_SEND_RECORD", "1");
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
        std::fs::read_dir(env.state(&api).join("outgoing"))
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
    // Sends keep their record, as one killed after answering does.
    env.set_var("AEA_TEST_KEEP_SEND_RECORD", "1");
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
    for entry in std::fs::read_dir(env.state(&api).join("sent")).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    interrupt(&env, &api, |_| {});
    // web, the first recipient looked at, changes its copy; db's stays as
    // we signed it.
    let path = web.join(".aea").join(&inbox_files(&web)[0]);
    let mut message: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    message["message"]["body"] = "api agreed to drop the database".into();
    std::fs::write(&path, serde_json::to_vec(&message).unwrap()).unwrap();
    assert_eq!(inbox_files(&db).len(), 1);
    let fixed = doctor(&env, &api, true);
    let copies: Vec<PathBuf> = std::fs::read_dir(env.state(&api).join("sent"))
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

/// Mail that other tools write straight into the inbox (the bash AEA,
/// bridges: unsigned, never logged) and mail other OS users deliver into
/// a shared inbox (whose log is not theirs to write) have no `delivered`
/// line by design: doctor took each for "a process killed before its log
/// line", and `--fix` wrote a line saying aea had delivered it.
#[test]
fn mail_no_aea_process_logged_is_not_a_missing_log_line() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let now = aea::message::format_time(chrono::Utc::now());
    let legacy = serde_json::json!({
        "protocol_version": "0.1.0",
        "message_id": "msg-1760436000-abc",
        "message_type": "issue",
        "timestamp": now,
        "sender": {"agent_id": "claude-backend"},
        "recipient": {"agent_id": "web"},
        "routing": {"priority": "high"},
        "content": {"subject": "Build broken", "body": "see CI"}
    });
    let name = "message-20251014T100000Z-from-claude-backend.json";
    std::fs::write(web.join(".aea").join(name), legacy.to_string()).unwrap();
    let report = doctor(&env, &web, false);
    assert_eq!(check(&report, "log")["ok"], true, "{report}");
    let fixed = doctor(&env, &web, true);
    assert_eq!(fixed["fixed"], serde_json::json!([]), "{fixed}");
    let log = std::fs::read_to_string(web.join(".aea/agent.log")).unwrap();
    assert!(!log.contains("\"repaired\""), "{log}");

    // A shared inbox: a signed message with no line, as another OS user's
    // delivery leaves it.
    let shared = env.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    env.ok(&shared, &["init", "--no-agent-files", "--shared"]);
    let api = env.repo("api");
    env.send(&api, "../shared", &["--type", "update", "--subject", "s"]);
    let log = shared.join(".aea/agent.log");
    let text = std::fs::read_to_string(&log).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("\"delivered\""))
        .collect();
    let kept = kept.join("\n") + "\n";
    std::fs::write(&log, kept).unwrap();
    let report = doctor(&env, &shared, false);
    assert_eq!(check(&report, "log")["ok"], true, "{report}");
}

/// A `sent-keys/` that is not a real folder (a symlink to elsewhere):
/// `doctor --fix` stopped on it with an error instead of naming it, and
/// plain `doctor` said "no interrupted sends" without looking.
#[test]
fn doctor_names_an_unsound_send_record_folder_instead_of_stopping() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let elsewhere = env.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let keys = env.state(&api).join("sent-keys");
    let _ = std::fs::remove_dir(&keys);
    std::os::unix::fs::symlink(&elsewhere, &keys).unwrap();
    for fix in [false, true] {
        let mut args = vec!["--json", "doctor"];
        if fix {
            args.push("--fix");
        }
        let out = env.run(&api, &args);
        assert_eq!(code(&out), 6, "{}", stderr(&out));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let sends = check(&report, "sends");
        assert_eq!(sends["ok"], false, "{report}");
        assert!(
            sends["detail"].as_str().unwrap().contains("not checked"),
            "{report}"
        );
        let state = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["check"] == "state" && c["ok"] == false);
        assert!(state, "{report}");
    }
}

/// A broadcast that reached one recipient and not the other (unreachable
/// then): the hint said "resend to the failed recipients only", which
/// sends them a new message under another id and leaves the first send's
/// record unfinished. The same send again is the way: it reuses the id
/// and reaches only the rest.
#[test]
fn a_partial_broadcast_is_finished_by_the_same_send_as_the_hint_says() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let db = env.repo("db");
    // db takes less than this message (a recipient that cannot be found
    // stops the whole send before anything is delivered).
    let config = db.join(".aea/agent-config.yaml");
    let full = std::fs::read_to_string(&config).unwrap();
    let small = full.replace("max_message_bytes: 1048576", "max_message_bytes: 1024");
    std::fs::write(&config, small).unwrap();
    let body = "x".repeat(2000);
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
        "--body",
        body.as_str(),
    ];
    let out = env.run(&api, &argv);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("run the same `aea send` again"),
        "{}",
        stderr(&out)
    );
    std::fs::write(&config, full).unwrap();
    env.ok(&api, &argv);
    assert_eq!(inbox_ids(&env, &web), inbox_ids(&env, &db));
    assert_eq!(inbox_files(&web).len(), 1);
    let left = std::fs::read_dir(env.state(&api).join("sent-keys"))
        .unwrap()
        .filter(|e| {
            !e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('.')
        })
        .count();
    assert_eq!(left, 0, "the finished send let its record go");
}

/// A record whose message id is not one (a cloned repository's planted
/// record, a hand edit) is not reused: the retry went out under the id
/// `../../x`, which every recipient reads as invalid mail.
#[test]
fn a_record_with_a_bad_message_id_is_not_reused() {
    let env = TestEnv::new();
    // Sends keep their record, as one killed after answering does.
    env.set_var("AEA_TEST_KEEP_SEND_RECORD", "1");
    let api = env.repo("api");
    let web = env.repo("web");
    let argv = ["send", "--to", "web", "--type", "update", "--subject", "s"];
    env.ok(&api, &argv);
    for name in inbox_files(&web) {
        std::fs::remove_file(web.join(".aea").join(name)).unwrap();
    }
    interrupt(&env, &api, |r| {
        r.insert("message_id".into(), "../../x y".into());
    });
    let report = doctor(&env, &api, false);
    assert_eq!(check(&report, "sends")["ok"], true, "{report}");
    env.ok(&api, &argv);
    let report = env.json(&web, &["check"]);
    assert_eq!(report["messages"].as_array().unwrap().len(), 1, "{report}");
    assert_eq!(report["invalid"], serde_json::json!([]), "{report}");
}

/// A send whose record says it finished in the future (the clock was
/// ahead then, or the record lies) is no proof of a send "moments ago":
/// the same message an hour later is sent, not held back as a repeat.
#[test]
fn a_record_dated_in_the_future_does_not_hold_back_a_send() {
    let env = TestEnv::new();
    // Sends keep their record, as one killed after answering does.
    env.set_var("AEA_TEST_KEEP_SEND_RECORD", "1");
    let api = env.repo("api");
    let web = env.repo("web");
    let argv = ["send", "--to", "web", "--type", "update", "--subject", "s"];
    env.ok(&api, &argv);
    let now = chrono::Utc::now();
    let path = record(&env, &api);
    let mut value: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    value["at"] = aea::message::format_time(now + chrono::Duration::days(2)).into();
    std::fs::write(&path, serde_json::to_vec(&value).unwrap()).unwrap();
    let later = aea::message::format_time(now + chrono::Duration::hours(1));
    let out = env
        .cmd(&api)
        .env("AEA_TEST_NOW", &later)
        .args(argv)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("interrupted earlier"),
        "{}",
        stderr(&out)
    );
    assert_eq!(inbox_files(&web).len(), 2);
}

/// An interrupted send older than the retry window: the same send now is
/// a new message, yet doctor kept saying "run the same `aea send` again
/// (it reuses the id …)" and `--fix` kept the record for that retry, so
/// the send was reported forever.
#[test]
fn doctor_does_not_promise_a_retry_past_its_window() {
    let env = TestEnv::new();
    // Sends keep their record, as one killed after answering does.
    env.set_var("AEA_TEST_KEEP_SEND_RECORD", "1");
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
        ],
    );
    for name in inbox_files(&db) {
        std::fs::remove_file(db.join(".aea").join(name)).unwrap();
    }
    interrupt(&env, &api, |r| {
        let at = chrono::Utc::now() - chrono::Duration::hours(25);
        r.insert("at".into(), aea::message::format_time(at).into());
    });
    let report = doctor(&env, &api, false);
    let sends = check(&report, "sends");
    let said = format!("{} {}", sends["detail"], sends["fix"]);
    assert!(said.contains("too old to be retried"), "{report}");
    let fixed = doctor(&env, &api, true);
    let fixed_text = fixed["fixed"].to_string();
    assert!(fixed_text.contains("as a new message"), "{fixed}");
    assert_eq!(check(&fixed, "sends")["ok"], true, "{fixed}");
    assert_eq!(inbox_files(&web).len(), 1);
}

/// Two `doctor --fix` at once (an agent's hook and a person, say) each
/// kept the sent/ copy of the same interrupted send and each wrote the
/// lines a kill cut off: four runs left four copies and four `sent` lines
/// per message. One repairs at a time.
#[test]
fn concurrent_doctor_fixes_repair_once() {
    let env = TestEnv::new();
    // Sends keep their record, as one killed after answering does.
    env.set_var("AEA_TEST_KEEP_SEND_RECORD", "1");
    let api = env.repo("api");
    env.repo("web");
    let argv = ["send", "--to", "web", "--type", "update", "--subject", "s"];
    env.ok(&api, &argv);
    for entry in std::fs::read_dir(env.state(&api).join("sent")).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    interrupt(&env, &api, |_| {});
    let log = api.join(".aea/agent.log");
    let text = std::fs::read_to_string(&log).unwrap();
    let kept: Vec<&str> = text.lines().filter(|l| !l.contains("\"sent\"")).collect();
    std::fs::write(&log, kept.join("\n") + "\n").unwrap();

    let children: Vec<std::process::Child> = (0..4)
        .map(|_| {
            env.cmd(&api)
                .args(["doctor", "--fix"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        output_within(child, std::time::Duration::from_secs(60), "doctor --fix");
    }
    let copies = std::fs::read_dir(env.state(&api).join("sent"))
        .unwrap()
        .count();
    assert_eq!(copies, 1, "one sent/ copy");
    let sent_lines = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"sent\""))
        .count();
    assert_eq!(sent_lines, 1, "one sent line");
}

/// The retry of an interrupted send and `doctor --fix` at the same time
/// (real processes): each kept the sent/ copy, two copies in 27 runs of
/// 30. Doctor now finishes a send only under the lock a retry takes it
/// over by, and leaves to a running retry what that retry does.
#[test]
fn a_retry_and_doctor_fix_at_once_keep_one_sent_copy() {
    let env = TestEnv::new();
    // Sends keep their record, as one killed after answering does.
    env.set_var("AEA_TEST_KEEP_SEND_RECORD", "1");
    let api = env.repo("api");
    env.repo("web");
    let db = env.repo("db");
    for round in 0..10 {
        let subject = format!("m{round}");
        let argv = [
            "send",
            "--to",
            "web",
            "--to",
            "db",
            "--type",
            "update",
            "--subject",
            &subject,
        ];
        env.ok(&api, &argv);
        // Killed after web, before db and the sent/ copy.
        for name in inbox_files(&db) {
            let path = db.join(".aea").join(name);
            if std::fs::read_to_string(&path).unwrap().contains(&subject) {
                std::fs::remove_file(path).unwrap();
            }
        }
        let mut id = String::new();
        for entry in std::fs::read_dir(env.state(&api).join("sent")).unwrap() {
            let path = entry.unwrap().path();
            let message: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            if message["message"]["subject"] == subject.as_str() {
                id = message["message_id"].as_str().unwrap().to_string();
                std::fs::remove_file(path).unwrap();
            }
        }
        for entry in std::fs::read_dir(env.state(&api).join("sent-keys")).unwrap() {
            let path = entry.unwrap().path();
            let Ok(mut record) = serde_json::from_slice::<Value>(&std::fs::read(&path).unwrap())
            else {
                continue;
            };
            if record["message_id"] == id.as_str() {
                let object = record.as_object_mut().unwrap();
                for field in ["finished", "pid", "host", "boot_id", "started"] {
                    object.remove(field);
                }
                let at = chrono::Utc::now() - chrono::Duration::minutes(5);
                object.insert("at".into(), aea::message::format_time(at).into());
                std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
            }
        }
        let spawn = |args: &[&str]| {
            env.cmd(&api)
                .args(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let retry = spawn(&argv);
        let doctor = spawn(&["doctor", "--fix"]);
        let limit = std::time::Duration::from_secs(60);
        let out = output_within(retry, limit, "the retry");
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        output_within(doctor, limit, "doctor --fix");
        let copies = std::fs::read_dir(env.state(&api).join("sent"))
            .unwrap()
            .filter(|e| {
                std::fs::read_to_string(e.as_ref().unwrap().path())
                    .unwrap()
                    .contains(&id)
            })
            .count();
        assert_eq!(copies, 1, "round {round}: sent/ copies of {id}");
        assert_eq!(
            inbox_ids(&env, &db).iter().filter(|i| **i == id).count(),
            1,
            "round {round}"
        );
    }
}

/// A record that names other repositories (a cloned repository's planted
/// record, pointing at `/`, at a folder with no `.aea/`, at another
/// agent's inbox): `doctor` and `doctor --fix` read there at most, and
/// write nothing outside the repository they were pointed at: neither in
/// another's `.aea/` nor in its private state.
#[test]
fn a_planted_record_makes_doctor_write_nowhere_else() {
    let env = TestEnv::new();
    // Sends keep their record, as one killed after answering does.
    env.set_var("AEA_TEST_KEEP_SEND_RECORD", "1");
    let api = env.repo("api");
    let web = env.repo("web");
    let victim = env.repo("victim");
    env.question(&api, "victim", "private");
    std::fs::remove_file(record(&env, &api)).unwrap();
    env.ok(
        &api,
        &["send", "--to", "web", "--type", "update", "--subject", "s"],
    );
    let everything = |repo: &Path| (snapshot(repo), snapshot(&env.state(repo)));
    let before_victim = everything(&victim);
    let before_web = everything(&web);
    interrupt(&env, &api, |r| {
        r.insert(
            "to".into(),
            serde_json::json!([
                {"agent_id": "root", "repo": "/"},
                {"agent_id": "nowhere", "repo": env.path().join("nowhere")},
                {"agent_id": "victim", "repo": victim},
                {"agent_id": "web", "repo": web},
            ]),
        );
    });
    doctor(&env, &api, false);
    doctor(&env, &api, true);
    assert_eq!(everything(&victim), before_victim);
    assert_eq!(everything(&web), before_web);
}

#[test]
fn a_retry_does_not_write_an_oacp_or_roo_file_twice() {
    let env = TestEnv::new();
    // Sends keep their record, as one killed after delivering but before
    // answering does.
    env.set_var("AEA_TEST_KEEP_SEND_RECORD", "1");
    let api = env.repo("api");
    let agent = env.path().join("oacp/projects/p/agents/codex");
    std::fs::create_dir_all(agent.join("inbox")).unwrap();
    let mailbox = env.path().join("app/.roo/mailbox");
    std::fs::create_dir_all(&mailbox).unwrap();
    env.ok(
        &api,
        &["agents", "add", "codex", "--oacp", agent.to_str().unwrap()],
    );
    env.ok(
        &api,
        &[
            "agents",
            "add",
            "tester",
            "--roo",
            mailbox.to_str().unwrap(),
        ],
    );
    let argv = [
        "send",
        "--to",
        "codex",
        "--to",
        "tester",
        "--type",
        "update",
        "--subject",
        "s",
        "--body",
        "b",
    ];
    env.ok(&api, &argv);
    let retried = env.run(&api, &argv);
    assert_eq!(code(&retried), 0, "{}", stderr(&retried));
    assert!(
        stderr(&retried).contains("interrupted earlier"),
        "{}",
        stderr(&retried)
    );
    // Once each: a second OACP file would be a second message; a second
    // Roo message would have been refused (its one file is taken).
    assert_eq!(std::fs::read_dir(agent.join("inbox")).unwrap().count(), 1);
    assert_eq!(std::fs::read_dir(&mailbox).unwrap().count(), 1);
}

/// Identical sends at once are each a message of their own: one that
/// finds another's record just as that one lets it go and exits must not
/// take it for an interrupted send and reuse its id (delivering nothing).
#[test]
fn identical_sends_at_once_are_each_delivered() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    for round in 0..3 {
        let children: Vec<_> = (0..12)
            .map(|_| {
                env.cmd(&api)
                    .args(["send", "--to", "web", "--type", "update", "--subject"])
                    .arg(format!("same {round}"))
                    .args(["--body", "b"])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert_eq!(code(&out), 0, "{}", stderr(&out));
            assert!(!stderr(&out).contains("interrupted"), "{}", stderr(&out));
        }
        assert_eq!(inbox_files(&web).len(), 12 * (round + 1));
    }
}
