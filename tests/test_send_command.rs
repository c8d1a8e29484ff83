//! `aea send`: messages travel between two repositories and come back as
//! replies; every type and priority, recipients by path, registry and
//! sibling, broadcasts, options, expiry; what send refuses before writing
//! anything; keys naming one message; staging leftovers; a delivery whose
//! own log line fails; and the size and broadcast limits of the receiver.

use crate::common::*;

const TYPES: [&str; 6] = [
    "handoff", "request", "issue", "question", "update", "response",
];
const PRIORITIES: [&str; 4] = ["urgent", "high", "normal", "low"];

#[test]
fn every_type_and_priority_round_trips_in_processing_order() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    // Send in the reverse of processing order, so sorting has work to do.
    let mut sent = Vec::new();
    for priority in PRIORITIES.iter().rev() {
        for kind in TYPES.iter().rev() {
            let subject = format!("{kind} at {priority}");
            let id = env.send(
                &api,
                "web",
                &[
                    "--type",
                    kind,
                    "--priority",
                    priority,
                    "--subject",
                    &subject,
                    "--body",
                    "body text",
                ],
            );
            sent.push((id, kind.to_string(), priority.to_string(), subject));
        }
    }
    let report = env.json(&web, &["check", "--all"]);
    assert_eq!(report["unprocessed"], 24);
    assert_eq!(report["invalid"].as_array().unwrap().len(), 0);
    let listed: Vec<(String, String)> = report["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["priority"].as_str().unwrap().into(),
                m["type"].as_str().unwrap().into(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = PRIORITIES
        .iter()
        .flat_map(|p| TYPES.iter().map(move |t| (p.to_string(), t.to_string())))
        .collect();
    assert_eq!(listed, expected, "processing order: priority, then type");

    for (id, kind, priority, subject) in &sent {
        let shown = env.json(&web, &["show", id]);
        let m = &shown["message"];
        assert_eq!(m["message_id"], id.as_str());
        assert_eq!(m["message_type"], kind.as_str());
        assert_eq!(m["priority"], priority.as_str());
        assert_eq!(m["message"]["subject"], subject.as_str());
        assert_eq!(m["message"]["body"], "body text");
        assert_eq!(m["from"]["agent_id"], "api");
        assert_eq!(m["to"]["agent_id"], "web");
        assert_eq!(m["protocol_version"], "1.0");
        assert_eq!(shown["processed"], false);
    }
    // The sender keeps one copy of each in sent/ and none in its own inbox.
    assert_eq!(
        std::fs::read_dir(env.state(&api).join("sent"))
            .unwrap()
            .count(),
        24
    );
    assert!(inbox_files(&api).is_empty());

    let mut approved = 0;
    for (id, ..) in &sent {
        let gated = env.json(&web, &["show", id])["decision"]["action"] == "require_approval";
        if gated {
            env.ok(&web, &["approve", id, "--note", "fine"]);
            approved += 1;
        }
        env.ok(&web, &["process", id]);
    }
    // Handoffs (4) and high/urgent issues (2) wait for a person by default.
    assert_eq!(approved, 6);
    assert_eq!(env.json(&web, &["check"])["unprocessed"], 0);
    let log = env.ok(&web, &["--json", "log", "--event", "processed"]);
    assert_eq!(log.lines().count(), 24);
    // Processed mail left the inbox for the private store, where `show`
    // still finds it.
    assert!(inbox_files(&web).is_empty());
    assert_eq!(
        std::fs::read_dir(env.state(&web).join("processed"))
            .unwrap()
            .count(),
        24
    );
    for (id, ..) in &sent {
        let shown = env.json(&web, &["show", id]);
        assert_eq!(shown["processed"], true, "{shown}");
        assert_eq!(shown["message"]["message_id"], id.as_str());
    }
}

#[test]
fn reply_chain_three_deep_stays_in_one_conversation() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let first = env.question(&api, "web", "Which port?");
    let reply_in = |repo: &std::path::Path, parent: &str, body: &str| -> String {
        let v = env.json(repo, &["reply", parent, "--body", body]);
        v["message_id"].as_str().unwrap().to_string()
    };
    let second = reply_in(&web, &first, "5173");
    let third = reply_in(&api, &second, "thanks, and the host?");
    let fourth = reply_in(&web, &third, "localhost");

    let chain = [
        (&web, &first, None),
        (&api, &second, Some(&first)),
        (&web, &third, Some(&second)),
        (&api, &fourth, Some(&third)),
    ];
    for (repo, id, parent) in chain {
        let m = env.json(repo, &["show", id])["message"].clone();
        assert_eq!(m["metadata"]["conversation_id"], first.as_str(), "{id}");
        assert_eq!(
            m["metadata"]["reply_to"].as_str(),
            parent.map(String::as_str),
            "{id}"
        );
        if parent.is_some() {
            assert_eq!(m["message_type"], "response");
            assert_eq!(m["message"]["subject"], "Re: Which port?");
        }
    }
}

#[test]
fn recipients_resolve_by_path_registry_and_sibling() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    // By path, relative to the current directory.
    env.question(&api, "../web", "by path");
    // By registry id.
    env.question(&api, "web", "by registry");
    // By sibling discovery, once the registry no longer knows web.
    std::fs::write(env.registry(), "").unwrap();
    env.question(&api, "web", "by sibling");
    let subjects: Vec<String> = env.json(&web, &["check"])["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["subject"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(subjects, ["by path", "by registry", "by sibling"]);

    let out = env.update(&api, "nobody");
    assert_eq!(code(&out), 3);
    let err = stderr(&out);
    assert!(err.contains("no agent \"nobody\" found"), "{err}");
    assert!(
        err.contains("registry") && err.contains("sibling"),
        "names what was tried: {err}"
    );
    assert!(err.contains("hint:"), "{err}");
}

#[test]
fn broadcast_delivers_one_file_each_and_reports_failures() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let db = env.repo("db");
    // small takes less than this message; a name found nowhere would stop
    // the whole send before anything is delivered.
    let small = env.repo("small");
    let config = small.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("max_message_bytes: 1048576", "max_message_bytes: 1024");
    std::fs::write(&config, text).unwrap();
    let body = "x".repeat(2000);
    let out = env.run(
        &api,
        &[
            "--json",
            "send",
            "--to",
            "web",
            "--to",
            "db",
            "--to",
            "small",
            "--type",
            "update",
            "--subject",
            "deploy at 5",
            "--body",
            &body,
        ],
    );
    assert_eq!(code(&out), 1, "a failed recipient makes the send fail");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = v["results"].as_array().unwrap();
    let delivered: Vec<bool> = results
        .iter()
        .map(|r| r["delivered"].as_bool().unwrap())
        .collect();
    assert_eq!(delivered, [true, true, false]);
    assert!(
        stderr(&out).contains("delivered: web, db; failed: small"),
        "{}",
        stderr(&out)
    );
    for repo in [&web, &db] {
        let files = inbox_files(repo);
        assert_eq!(files.len(), 1);
        let m: serde_json::Value =
            serde_json::from_slice(&std::fs::read(repo.join(".aea").join(&files[0])).unwrap())
                .unwrap();
        assert_eq!(
            m["metadata"]["broadcast"],
            serde_json::json!(["web", "db", "small"])
        );
    }
    assert_eq!(
        std::fs::read_dir(env.state(&api).join("sent"))
            .unwrap()
            .count(),
        1,
        "one sent copy"
    );

    let many: Vec<String> = (0..11).map(|i| format!("agent{i}")).collect();
    let mut args = vec!["send", "--type", "update", "--subject", "s"];
    for m in &many {
        args.extend(["--to", m.as_str()]);
    }
    assert_eq!(code(&env.run(&api, &args)), 2);
}

#[test]
fn send_options_land_in_the_message() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    std::fs::write(api.join("notes.txt"), "hello").unwrap();
    std::fs::write(api.join("body.md"), "from a file\n").unwrap();
    let id = env.send(
        &api,
        "web",
        &[
            "--type",
            "request",
            "--subject",
            "Review",
            "--body-file",
            "body.md",
            "--context",
            r#"{"pr": 12}"#,
            "--tag",
            "review",
            "--tag",
            "api",
            "--attach",
            "notes.txt",
            "--requires-response",
            "--expires",
            "2h",
            "--conversation",
            "conv-1",
        ],
    );
    let m = env.json(&web, &["show", &id])["message"].clone();
    assert_eq!(m["message"]["body"], "from a file\n");
    assert_eq!(m["message"]["context"]["pr"], 12);
    assert_eq!(m["metadata"]["tags"], serde_json::json!(["review", "api"]));
    assert_eq!(m["metadata"]["conversation_id"], "conv-1");
    assert_eq!(m["requires_response"], true);
    assert_eq!(m["message"]["attachments"][0]["path"], "notes.txt");
    assert_eq!(
        m["message"]["attachments"][0]["sha256"],
        "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    );
    assert!(m["expires_at"].as_str().is_some());

    // Attachments outside the repository are refused.
    let outside = env.path().join("secret.txt");
    std::fs::write(&outside, "x").unwrap();
    let out = env.run(
        &api,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "update",
            "--subject",
            "s",
            "--attach",
            outside.to_str().unwrap(),
        ],
    );
    // Refused (SPEC §13): a file outside the repository is never attached.
    assert_eq!(code(&out), 5);
    assert!(stderr(&out).contains("outside this repository"));
}

#[test]
fn expired_messages_are_flagged() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let mut cmd = env.cmd(&api);
    cmd.env("AEA_TEST_NOW", "2026-01-01T00:00:00Z").args([
        "send",
        "--to",
        "web",
        "--type",
        "update",
        "--subject",
        "short-lived",
        "--expires",
        "1h",
    ]);
    assert!(cmd.output().unwrap().status.success());
    let check = |now: &str| {
        let out = env
            .cmd(&web)
            .env("AEA_TEST_NOW", now)
            .args(["--json", "check"])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["messages"][0]["expired"].as_bool().unwrap()
    };
    assert!(!check("2026-01-01T00:30:00Z"));
    assert!(check("2026-01-01T01:00:01Z"));
}

#[test]
fn a_broadcast_with_a_wrong_name_reaches_no_one() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let docs = env.repo("docs");
    for wrong in ["nobody", "api"] {
        let out = env.run(
            &api,
            &[
                "send",
                "--to",
                "web",
                "--to",
                "docs",
                "--to",
                wrong,
                "--type",
                "update",
                "--subject",
                "s",
            ],
        );
        assert_ne!(code(&out), 0, "{wrong}: {}", stdout(&out));
        assert!(!stdout(&out).contains("delivered to"), "{}", stdout(&out));
    }
    assert!(inbox_files(&web).is_empty(), "nothing delivered to web");
    assert!(inbox_files(&docs).is_empty(), "nothing delivered to docs");
}

#[test]
fn an_expiry_in_the_past_is_refused() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let out = env.run(
        &api,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "update",
            "--subject",
            "s",
            "--expires",
            "2020-01-01T00:00:00Z",
        ],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--expires 2020-01-01T00:00:00")
            && stderr(&out).contains("not in the future"),
        "{}",
        stderr(&out)
    );
    assert!(inbox_files(&web).is_empty());
}

#[test]
fn recipient_hints_point_at_what_works() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let docs = env.repo("docs");
    let update = |to: &str| {
        env.run(
            &api,
            &["send", "--to", to, "--type", "update", "--subject", "s"],
        )
    };

    // A typo: the near id is named.
    let out = update("wbe");
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("did you mean `web`?"),
        "{}",
        stderr(&out)
    );

    // A list in one --to is two recipients (an id holds no comma).
    let out = update("web,docs");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(inbox_files(&web).len(), 1);
    assert_eq!(inbox_files(&docs).len(), 1);

    // The folder that holds the repositories is not one of them.
    let out = update("..");
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("neither an aea nor a git repository"), "{err}");
    assert!(err.contains("api, docs, web"), "{err}");
    assert!(err.contains("`--to ../api`"), "{err}");
    assert!(
        !err.contains("aea init"),
        "init there would be wrong: {err}"
    );

    // A registered repository that moved: fix the registry, not the old path.
    let moved = env.path().join("web-new");
    std::fs::rename(&web, &moved).unwrap();
    let out = update("web");
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("which no longer exists"), "{err}");
    assert!(err.contains("aea agents add web --path"), "{err}");
    assert!(
        !err.contains(&format!("aea init {}", web.display())),
        "{err}"
    );
    // The hint works: `aea init` in the new place takes over the entry.
    env.ok(&moved, &["init", "--no-agent-files"]);
    let out = update("web");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(inbox_files(&moved).len(), 2);
}

#[test]
fn errors_under_json_are_one_json_object_on_stderr() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let out = env.run(
        &api,
        &[
            "--json",
            "send",
            "--to",
            "nobody",
            "--type",
            "update",
            "--subject",
            "s",
        ],
    );
    assert_eq!(code(&out), 3, "the exit code is kept");
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    let err: serde_json::Value = serde_json::from_str(stderr(&out).trim()).unwrap();
    assert_eq!(err["error"]["code"], 3);
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no agent \"nobody\" found"),
        "{err}"
    );
    assert!(err["error"]["hint"].as_str().is_some(), "{err}");

    // A command-line syntax error too.
    let out = env.run(&api, &["send", "--json", "--to", "web"]);
    assert_eq!(code(&out), 2);
    let err: serde_json::Value = serde_json::from_str(stderr(&out).trim()).unwrap();
    assert_eq!(err["error"]["code"], 2);
    assert!(
        err["error"]["message"].as_str().unwrap().contains("--type"),
        "{err}"
    );
    // Without --json, text as before.
    let out = env.run(
        &api,
        &[
            "send",
            "--to",
            "nobody",
            "--type",
            "update",
            "--subject",
            "s",
        ],
    );
    assert!(stderr(&out).starts_with("error: "), "{}", stderr(&out));
}

/// Staging files of a send killed mid-way are swept by the next command
/// that touches the folder; a fresh one (a send in progress) is left alone.
#[test]
fn staging_leftovers_are_swept_by_the_next_command() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let tmp = web.join(".aea/.tmp");
    let old = tmp.join(".deliver.dead0001.tmp");
    let fresh = tmp.join(".deliver.live0001.tmp");
    std::fs::write(&old, "{").unwrap();
    std::fs::write(&fresh, "{").unwrap();
    let aged = std::process::Command::new("touch")
        .args(["-d", "2 hours ago"])
        .arg(&old)
        .status()
        .unwrap();
    assert!(aged.success());
    env.ok(&web, &["check"]);
    assert!(!old.exists(), "an old leftover is swept");
    assert!(fresh.exists(), "a fresh staging file is left alone");

    // A send into web sweeps web's staging folder too.
    std::fs::write(&old, "{").unwrap();
    std::process::Command::new("touch")
        .args(["-d", "2 hours ago"])
        .arg(&old)
        .status()
        .unwrap();
    env.question(&api, "web", "sweeps");
    assert!(!old.exists());
}

/// A send that delivered succeeds even when keeping its own log line
/// fails afterwards: an error would make the caller send it again.
#[test]
fn a_delivered_send_succeeds_when_its_own_log_fails() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let log = api.join(".aea/agent.log");
    std::fs::remove_file(&log).unwrap();
    std::fs::create_dir(&log).unwrap();
    let out = env.run(
        &api,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "update",
            "--subject",
            "once",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: delivered, but"),
        "{}",
        stderr(&out)
    );
    assert_eq!(inbox_files(&web).len(), 1);
}

/// The same message sent twice on purpose is two messages: only the
/// retry of a send that was killed before it answered reuses its id (the
/// fault suite kills them). A finished send leaves no record behind.
#[test]
fn the_same_send_twice_is_two_messages() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let args = ["--type", "update", "--subject", "build green"];
    let first = env.send(&api, "web", &args);
    let second = env.send(&api, "web", &args);
    assert_ne!(first, second);
    assert_eq!(inbox_files(&web).len(), 2);
    // Records only: `.lock` is the lock records are judged under.
    // The folder exists: a send writes its record before it delivers.
    let records = std::fs::read_dir(env.state(&api).join("sent-keys"))
        .unwrap()
        .filter(|e| {
            !e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('.')
        })
        .count();
    assert_eq!(records, 0, "a finished send lets its record go");
}

/// `--idempotency-key`: the same send again delivers nothing new and names
/// the same message; the key with another message is refused.
#[test]
fn a_key_names_one_message() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let send = |subject: &str| {
        env.run(
            &api,
            &[
                "--json",
                "send",
                "--to",
                "web",
                "--type",
                "update",
                "--subject",
                subject,
                "--idempotency-key",
                "deploy-42",
            ],
        )
    };
    let first: serde_json::Value = serde_json::from_slice(&send("deployed").stdout).unwrap();
    let again = send("deployed");
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    let again: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(first["message_id"], again["message_id"]);
    assert_eq!(inbox_files(&web).len(), 1);
    let sent = env.state(&api).join("sent");
    assert_eq!(std::fs::read_dir(&sent).unwrap().count(), 1);
    let other = send("something else");
    assert_eq!(code(&other), 2);
    assert!(
        stderr(&other).contains("was used for another message"),
        "{}",
        stderr(&other)
    );
    assert_eq!(inbox_files(&web).len(), 1);
}

#[test]
fn validate_accepts_what_send_writes() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.question(&api, "web", "fine");
    let out = env.run(&web, &["--json", "validate"]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["checked"], 2, "the config and one message");
    let file = web.join(".aea").join(inbox_files(&web).remove(0));
    assert_eq!(
        code(&env.run(&web, &["validate", file.to_str().unwrap()])),
        0
    );
    std::fs::write(web.join(".aea/message-bad-name.json"), "{}").unwrap();
    let out = env.run(&web, &["validate"]);
    assert_eq!(code(&out), 6);
    assert!(stdout(&out).contains("file name does not follow"));
}

/// The size limit that counts is the receiver's, wherever it is applied:
/// the sender's own smaller limit does not refuse a send after delivery, a
/// larger receiver limit lets `--body-file` carry more than the built-in
/// 1 MiB, and a receiver config broken elsewhere keeps its limit.
#[test]
fn the_receivers_size_limit_is_the_one_that_counts() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let set = |repo: &std::path::Path, from: &str, to: &str| {
        let config = repo.join(".aea/agent-config.yaml");
        let text = std::fs::read_to_string(&config).unwrap();
        assert!(text.contains(from), "{from} not in {text}");
        std::fs::write(&config, text.replace(from, to)).unwrap();
    };
    // The sender's own limit is for its inbox: the send succeeds, with its
    // sent/ copy and log line, instead of exit 5 after delivering.
    set(
        &api,
        "max_message_bytes: 1048576",
        "max_message_bytes: 2000",
    );
    let big = "x".repeat(3000);
    let id = env.send(
        &api,
        "web",
        &["--type", "update", "--subject", "big", "--body", &big],
    );
    assert_eq!(inbox_files(&web).len(), 1);
    assert_eq!(
        std::fs::read_dir(env.state(&api).join("sent"))
            .unwrap()
            .count(),
        1,
        "the sent/ copy is kept"
    );
    let status = env.json(&api, &["status", &id]);
    assert!(status.to_string().contains("delivered"), "{status}");

    // A receiver that takes 4 MiB gets a 2 MB body from a file.
    set(
        &web,
        "max_message_bytes: 1048576",
        "max_message_bytes: 4194304",
    );
    let body = env.path().join("body.txt");
    std::fs::write(&body, "y".repeat(2_000_000)).unwrap();
    env.send(
        &api,
        "web",
        &[
            "--type",
            "update",
            "--subject",
            "bigger",
            "--body-file",
            body.to_str().unwrap(),
        ],
    );
    assert_eq!(inbox_files(&web).len(), 2);

    // A receiver config with an unknown key does not read, but its limit
    // still holds: the 2 MB message is listed invalid, not valid.
    set(
        &web,
        "max_message_bytes: 4194304",
        "max_message_bytes: 2000",
    );
    let config = web.join(".aea/agent-config.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("typo_key: 1\n");
    std::fs::write(&config, text).unwrap();
    let report = env.json(&web, &["check"]);
    let invalid = report["invalid"].as_array().unwrap();
    assert_eq!(invalid.len(), 2, "{report}");
    assert!(
        invalid.iter().all(|i| i["reason"]
            .as_str()
            .unwrap()
            .contains("over the 2000 byte limit")),
        "{report}"
    );
}

#[test]
fn limits_bound_broadcasts_and_message_size() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.repo("db");
    let set = |repo: &std::path::Path, from: &str, to: &str| {
        let config = repo.join(".aea/agent-config.yaml");
        let text = std::fs::read_to_string(&config).unwrap().replace(from, to);
        std::fs::write(&config, text).unwrap();
    };
    set(&api, "max_recipients: 10", "max_recipients: 1");
    let out = env.run(
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
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("at most 1"), "{}", stderr(&out));

    set(
        &web,
        "max_message_bytes: 1048576",
        "max_message_bytes: 2000",
    );
    let big = "x".repeat(3000);
    let out = env.run(
        &api,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "update",
            "--subject",
            "s",
            "--body",
            &big,
        ],
    );
    // Refused by the receiver's limit (SPEC §13), not a usage error.
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("over the 2000 byte limit"),
        "{}",
        stderr(&out)
    );
    assert!(inbox_files(&web).is_empty());
    // A file over the receiver's limit that arrives anyway is listed invalid.
    env.ok(
        &api,
        &[
            "send",
            "--to",
            "db",
            "--type",
            "update",
            "--subject",
            "s",
            "--body",
            &big,
        ],
    );
    let file = inbox_files(&env.path().join("db")).remove(0);
    std::fs::copy(
        env.path().join("db/.aea").join(&file),
        web.join(".aea").join(&file),
    )
    .unwrap();
    let report = env.json(&web, &["check"]);
    assert!(
        report["invalid"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("over the 2000 byte limit")
    );
    // Every command that opens the inbox applies the receiver's limit, not
    // only `check`: an invalid file can only be ignored or quarantined.
    let id = report["invalid"][0]["file"].as_str().unwrap().to_string();
    for (args, exit, why) in [
        (vec!["show", id.as_str()], 1, "over the 2000 byte limit"),
        (vec!["process", id.as_str()], 5, "can only be ignored"),
        (vec!["approve", id.as_str()], 1, "over the 2000 byte limit"),
        (
            vec!["reply", id.as_str(), "--body", "ok"],
            1,
            "over the 2000 byte limit",
        ),
        (
            vec!["policy", "explain", id.as_str()],
            1,
            "over the 2000 byte limit",
        ),
    ] {
        let out = env.run(&web, &args);
        assert_eq!(code(&out), exit, "{args:?}: {}", stdout(&out));
        assert!(stderr(&out).contains(why), "{args:?}: {}", stderr(&out));
    }
    assert!(!web.join(".aea/.processed").join(&file).exists());
    assert!(!env.state(&web).join("records").join(&file).exists());
    env.ok(&web, &["process", &id, "--outcome", "ignored"]);
    assert!(env.state(&web).join("records").join(&file).is_file());
}

/// A message without a body — a forgotten `--body`, or text piped in that
/// send does not read — is said on stderr; `--body-file -` reads it.
#[test]
fn a_send_without_a_body_says_so_and_reads_stdin_when_asked() {
    use std::io::Write;
    let env = TestEnv::new();
    let api = env.repo("api");
    env.repo("web");
    let out = env.run(
        &api,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "question",
            "--subject",
            "s",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the message has no body"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("--body-file -"), "{}", stderr(&out));
    let mut child = env
        .cmd(&api)
        .args([
            "--json",
            "send",
            "--to",
            "web",
            "--type",
            "question",
            "--subject",
            "piped",
            "--body-file",
            "-",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"the text piped in\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("no body"), "{}", stderr(&out));
    let sent: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = sent["message_id"].as_str().unwrap();
    let web = env.path().join("web");
    let shown = env.json(&web, &["show", id]);
    assert_eq!(
        shown["message"]["message"]["body"], "the text piped in\n",
        "{shown}"
    );
}

/// `--expires` says what it takes: a bare number is neither a duration nor
/// a time, and a negative duration is named as such, not read as a flag.
#[test]
fn expires_values_are_refused_in_words() {
    let env = TestEnv::new();
    let api = env.repo("api");
    env.repo("web");
    let base = [
        "send",
        "--to",
        "web",
        "--type",
        "question",
        "--subject",
        "s",
        "--body",
        "b",
        "--expires",
    ];
    let out = env.run(&api, &[&base[..], &["2"]].concat());
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("\"2\" is neither a duration"),
        "{}",
        stderr(&out)
    );
    let out = env.run(&api, &[&base[..], &["-1h"]].concat());
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("\"-1h\" is negative"),
        "{}",
        stderr(&out)
    );
    assert!(
        !stderr(&out).contains("unexpected argument"),
        "{}",
        stderr(&out)
    );
}

/// Rewrites the message in `repo`'s inbox file `file` to carry the id
/// `id`, signed again by its sender: what a sender that copies or grinds an
/// id sends.
fn give_id(env: &TestEnv, repo: &std::path::Path, file: &str, id: &str) -> serde_json::Value {
    let path = repo.join(".aea").join(file);
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    value["message_id"] = id.into();
    env.resign(&mut value);
    std::fs::write(&path, value.to_string()).unwrap();
    value
}

/// The `ref` of each `check --json` item in `repo`, by message id.
fn refs_in_check(env: &TestEnv, repo: &std::path::Path) -> Vec<(String, String)> {
    env.json(repo, &["check", "--all"])["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().to_string(),
                m["ref"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A message has one reference: the one `send` prints is the one the
/// sender's `sent` and `status` and every recipient's `check`, hook and
/// `show` use, though the files are named differently on each side.
#[test]
fn one_reference_names_a_message_on_both_sides() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let docs = env.repo("docs");
    let out = env.ok(
        &api,
        &[
            "send",
            "--to",
            "web",
            "--to",
            "docs",
            "--type",
            "question",
            "--subject",
            "port?",
            "--body",
            "which one",
        ],
    );
    let printed = out
        .lines()
        .find_map(|l| l.strip_prefix("ref "))
        .unwrap_or_else(|| panic!("send prints the reference: {out}"));
    let (short, id) = printed.split_once("  id ").unwrap();
    assert!(short.starts_with('m') && short.len() == 9, "{short}");

    let sent = env.json(&api, &["sent"]);
    assert_eq!(sent["messages"][0]["ref"], short, "{sent}");
    assert_ne!(
        sent["messages"][0]["file"].as_str(),
        Some(file_of(&web, id).as_str()),
        "the sender's copy is named apart from the delivered file"
    );
    let status = env.ok(&api, &["status", short]);
    assert!(status.contains(id), "{status}");

    for repo in [&web, &docs] {
        assert_eq!(
            refs_in_check(&env, repo),
            [(id.to_string(), short.to_string())]
        );
        let shown = env.ok(repo, &["show", short]);
        assert!(shown.contains(&format!("ref:          {short}")), "{shown}");
        let hook = env.ok(repo, &["check", "--hook", "plain"]);
        assert!(hook.contains(short), "{hook}");
    }
    // The JSON of send carries it too.
    let v = env.json(
        &api,
        &["send", "--to", "web", "--type", "update", "--subject", "s"],
    );
    let id2 = v["message_id"].as_str().unwrap();
    assert!(
        refs_in_check(&env, &web)
            .contains(&(id2.to_string(), v["ref"].as_str().unwrap().to_string()))
    );
}

/// A reference typed in the wrong repository, or too short, says so.
#[test]
fn a_reference_used_wrongly_says_what_to_do() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.question(&api, "web", "port?");
    let short = env.short_ref(&web, &id);
    let out = env.cmd(&web).args(["status", &short]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("mail this repository received") && err.contains("aea show"),
        "{err}"
    );
    let out = env.cmd(&web).args(["show", &short[..4]]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("at least 4 hex digits"), "{err}");
    // Four digits are enough where nothing else starts alike.
    env.ok(&web, &["show", &short[..5]]);
    // Typed without its `m`, or too short for `status`: said how.
    let out = env.cmd(&web).args(["show", &short[1..]]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("did you mean `{short}`?")), "{err}");
    let out = env
        .cmd(&api)
        .args(["status", &short[..3]])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("at least 4 hex digits"), "{err}");
}

/// Two senders that choose one id each get a reference of their own
/// (from the file names), and each resolves to its own file: a copied id
/// never makes a person's reference name the copier's mail.
#[test]
fn a_copied_id_from_another_sender_gets_references_of_its_own() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let ops = env.repo("ops");
    let web = env.repo("web");
    let id = env.question(&api, "web", "Which port?");
    let genuine = file_of(&web, &id);
    let theirs = env.question(&ops, "web", "Cleanup?");
    let ops_file = file_of(&web, &theirs);
    let inbox = web.join(".aea");
    let planted = "message-20200101T000000000Z-from-ops-00000001.json";
    std::fs::rename(inbox.join(&ops_file), inbox.join(planted)).unwrap();
    give_id(&env, &web, planted, &id);

    let refs = refs_in_check(&env, &web);
    assert_eq!(refs.len(), 2, "{refs:?}");
    assert_ne!(refs[0].1, refs[1].1, "{refs:?}");
    let mut files: Vec<String> = refs
        .iter()
        .map(|(_, r)| {
            let shown = env.ok(&web, &["show", r]);
            shown
                .lines()
                .find_map(|l| l.strip_prefix("file:         "))
                .unwrap()
                .to_string()
        })
        .collect();
    files.sort();
    let mut expected = vec![genuine, planted.to_string()];
    expected.sort();
    assert_eq!(files, expected);
}

/// A reference taken for processed mail, or from `send`, keeps naming that
/// mail when another sender copies its id into the inbox, and a forged copy
/// of its sender and id makes it neither ambiguous nor another message.
#[test]
fn a_copied_or_forged_id_never_takes_a_reference_over() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let ops = env.repo("ops");
    let web = env.repo("web");
    let id = env.question(&api, "web", "Which db?");
    let genuine = file_of(&web, &id);
    let short = env.short_ref(&web, &id);
    env.ok(&web, &["process", &short]);

    // ops copies the id into a message of its own, signed by ops.
    let theirs = env.question(&ops, "web", "Which db?");
    let ops_file = file_of(&web, &theirs);
    let inbox = web.join(".aea");
    let value = give_id(&env, &web, &ops_file, &id);
    // And a file claiming api and the id, with api's signature over other
    // words: forged.
    let mut forged: serde_json::Value = value.clone();
    forged["from"] = serde_json::json!({"agent_id": "api", "repo_path": api.display().to_string()});
    forged["message"]["subject"] = "Which db? (forged)".into();
    let forged_file = "message-20200101T000000000Z-from-api-00000001.json";
    std::fs::write(inbox.join(forged_file), forged.to_string()).unwrap();

    let copied = env.short_ref(&web, &id);
    assert_ne!(
        copied, short,
        "the copier's mail has a reference of its own"
    );
    let shown = env.json(&web, &["show", &short]);
    assert_eq!(shown["file"], genuine.as_str(), "{shown}");
    let out = env.ok(&web, &["reply", &short, "--body", "postgres"]);
    assert!(out.contains("delivered to api"), "{out}");
    assert!(!out.contains("delivered to ops"), "{out}");
}

/// A recipient whose config does not read takes no mail; the sender is
/// told that nothing was sent and that the file named is the recipient's.
#[test]
fn a_recipient_whose_config_does_not_read_is_said_to_be_the_problem() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let config = web.join(".aea/agent-config.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("bogus: [\n");
    std::fs::write(&config, text).unwrap();
    let out = env.run(
        &api,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "question",
            "--subject",
            "s",
            "--body",
            "b",
        ],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("nothing was sent: the recipient's config does not read"),
        "{err}"
    );
    assert!(inbox_files(&web).is_empty());
}

/// Which folder a reference is found in first decides nothing: the same id,
/// or a reference prefix ground to match, in the inbox and among processed
/// or sent mail is ambiguous, and nothing is acted on.
#[test]
fn a_reference_matching_in_two_folders_is_ambiguous() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let ops = env.repo("ops");
    let web = env.repo("web");
    let id = env.question(&api, "web", "Which db?");
    let short = env.short_ref(&web, &id);
    env.ok(&web, &["process", &short]);
    // ops copies the whole id into mail of its own (signed by ops)...
    let theirs = env.question(&ops, "web", "Which db?");
    let ops_file = file_of(&web, &theirs);
    give_id(&env, &web, &ops_file, &id);
    env.ok(&web, &["check"]);
    let out = env.run(&web, &["reply", &id, "--body", "postgres"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("matches 2 messages"),
        "{}",
        stderr(&out)
    );
    // ...and grinds an id whose reference starts with the processed
    // message's first four digits, which a person may type.
    let typed = &short[..5];
    // Four hex digits: about 65,536 tries; ten million never all miss.
    let ground = (0u64..10_000_000)
        .map(|i| format!("ground-{i}"))
        .find(|g| aea::shortref::of(&aea::shortref::key(Some(("ops", g)), "")).starts_with(typed))
        .unwrap();
    let second = env.question(&ops, "web", "Cleanup?");
    let second_file = file_of(&web, &second);
    give_id(&env, &web, &second_file, &ground);
    let out = env.run(&web, &["reply", typed, "--body", "postgres"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(!stdout(&out).contains("delivered"), "{}", stdout(&out));
    // The full reference still names api's message alone.
    let shown = env.json(&web, &["show", &short]);
    assert_eq!(shown["message"]["from"]["agent_id"], "api", "{shown}");

    // On the sender's side: its own sent copy and an impostor that took
    // the id. The id is ambiguous; the reference `send` printed is not.
    let sent = env.json(
        &api,
        &[
            "send",
            "--to",
            "ops",
            "--type",
            "update",
            "--subject",
            "plan",
            "--body",
            "b",
        ],
    );
    let (sent_id, sent_ref) = (
        sent["message_id"].as_str().unwrap().to_string(),
        sent["ref"].as_str().unwrap().to_string(),
    );
    let impostor = env.question(&ops, "api", "IMPOSTOR");
    let impostor_file = file_of(&api, &impostor);
    give_id(&env, &api, &impostor_file, &sent_id);
    let out = env.run(&api, &["show", &sent_id]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let shown = env.json(&api, &["show", &sent_ref]);
    assert_eq!(shown["message"]["message"]["subject"], "plan", "{shown}");
}
