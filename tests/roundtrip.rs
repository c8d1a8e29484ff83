//! Messages travel between two repositories and come back as replies.

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
