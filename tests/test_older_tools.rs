//! Reading what older AEA tools wrote (SPEC §3.3, §5.4, §7).

use crate::common::*;

#[test]
fn legacy_0_1_0_message_shows_up_with_type_priority_sender_subject() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let legacy = serde_json::json!({
        "protocol_version": "0.1.0",
        "message_id": "msg-1760436000-abc",
        "message_type": "issue",
        "timestamp": "2025-10-14T10:00:00Z",
        "sender": {"agent_id": "claude-backend", "repo_path": "/nonexistent/backend"},
        "recipient": {"agent_id": "web"},
        "routing": {"priority": "high", "requires_response": true},
        "content": {"subject": "Build broken on main", "body": "see CI"},
        "metadata": {"in_reply_to": "msg-1"}
    });
    // Seconds-only name without <rand>, as the bash tools wrote them.
    let name = "message-20251014T100000Z-from-claude-backend.json";
    std::fs::write(web.join(".aea").join(name), legacy.to_string()).unwrap();

    let report = env.json(&web, &["check"]);
    let m = &report["messages"][0];
    assert_eq!(m["file"], name);
    assert_eq!(m["type"], "issue");
    assert_eq!(m["priority"], "high");
    assert_eq!(m["from"], "claude-backend");
    assert_eq!(m["subject"], "Build broken on main");
    assert_eq!(m["requires_response"], true);
    assert_eq!(m["decision"]["action"], "require_approval");

    let shown = env.ok(&web, &["show", "msg-1760436000"]);
    assert!(shown.contains("older AEA 0.1.0"), "{shown}");
    assert!(shown.contains("see CI"));
    let out = env.run(&web, &["validate"]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
}

#[test]
fn v1_message_with_structured_body_is_read() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let msg = serde_json::json!({
        "protocol_version": "1.0",
        "message_id": "6f1c2a7e-0000-4000-8000-000000000001",
        "message_type": "handoff",
        "timestamp": "2026-11-21T09:00:00.000Z",
        "priority": "normal",
        "requires_response": false,
        "from": {"agent_id": "api", "repo_path": "/nonexistent/api"},
        "to": {"agent_id": "web"},
        "message": {"subject": "Take over", "body": {"summary": "half done", "steps": ["a", "b"]}},
        "metadata": {"conversation_id": "c-1", "tags": ["migration"]}
    });
    let name = "message-20261121T090000000Z-from-api-1a2b3c4d.json";
    std::fs::write(web.join(".aea").join(name), msg.to_string()).unwrap();
    let shown = env.json(&web, &["show", "6f1c2a7e"]);
    assert_eq!(shown["message"]["message"]["body"]["summary"], "half done");
    let text = env.ok(&web, &["show", name]);
    assert!(text.contains("\"summary\": \"half done\""), "{text}");
}

/// The bash AEA `touch`es an empty marker: the message counts as processed
/// for listings, but the marker is not aea's record; `process` makes it
/// aea's own (moving the file to the private store) and keeps the marker.
#[test]
fn empty_marker_from_an_older_tool_counts_as_processed() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.question(&api, "web", "old");
    let name = inbox_files(&web).remove(0);
    let marker = web.join(".aea/.processed").join(&name);
    std::fs::write(&marker, "").unwrap();
    assert_eq!(env.json(&web, &["check"])["unprocessed"], 0);
    let shown = env.ok(&web, &["show", &name]);
    assert!(
        shown.contains("marked processed by another tool"),
        "{shown}"
    );
    env.ok(&web, &["process", &name]);
    let state = env.state(&web);
    assert!(inbox_files(&web).is_empty(), "moved out of .aea/");
    assert!(state.join("processed").join(&name).is_file());
    assert!(state.join("records").join(&name).is_file());
    assert_eq!(std::fs::read(&marker).unwrap(), b"", "marker untouched");
    let out = env.run(&web, &["process", &name]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("already processed"));
}

#[test]
fn marker_with_an_outcome_this_version_does_not_know_still_counts() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.question(&api, "web", "from a newer tool");
    let name = inbox_files(&web).remove(0);
    let sha256 = env.json(&web, &["show", &name])["sha256"].clone();
    let marker = serde_json::json!({
        "processed_at": "2026-11-21T10:00:00.000Z",
        "by": "other-tool",
        "outcome": "escalated",
        "sha256": sha256,
    });
    let path = web.join(".aea/.processed").join(&name);
    std::fs::write(&path, marker.to_string()).unwrap();

    assert_eq!(env.json(&web, &["check"])["unprocessed"], 0);
    let shown = env.json(&web, &["show", &name]);
    assert_eq!(shown["processed"], true);
    assert_eq!(shown["marker"]["outcome"], "escalated", "{shown}");
    let text = env.ok(&web, &["show", &name]);
    assert!(text.contains("marked processed by another tool"), "{text}");

    // The marker was read, not just found: its digest still binds the
    // bytes, so a replaced file is shown again and can be processed, and
    // the other tool's marker is kept as it was.
    // (Signed again by its sender, so only the digest can tell.)
    let file = web.join(".aea").join(&name);
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    value["message"]["subject"] = "changed afterwards".into();
    env.resign(&mut value);
    std::fs::write(&file, serde_json::to_vec(&value).unwrap()).unwrap();
    // (`check` may answer from what it remembers: a file hidden by a
    // marker is not re-read on every listing. `show` judges the bytes.)
    let shown = env.json(&web, &["show", &name]);
    assert_eq!(shown["processed"], false, "{shown}");
    assert_eq!(shown["replaced_after_processing"], true, "{shown}");
    env.ok(&web, &["process", &name, "--outcome", "ignored"]);
    let kept = std::fs::read_to_string(&path).unwrap();
    assert!(kept.contains("\"escalated\""), "{kept}");
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(env.state(&web).join("records").join(&name)).unwrap(),
    )
    .unwrap();
    assert_eq!(record["outcome"], "ignored", "{record}");
}

#[test]
fn plain_text_log_lines_are_skipped() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let log = web.join(".aea/agent.log");
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str("[2025-10-14 10:00:00] processed message-x.json\n");
    std::fs::write(&log, text).unwrap();
    let events = env.ok(&web, &["--json", "log"]);
    assert_eq!(events.lines().count(), 1, "{events}");
    assert!(events.contains("\"event\":\"init\""));
}

/// Events a newer version or another tool logged are shown like any other;
/// `--event` takes only the names this version writes, so a misspelt one
/// is a usage error pointing at the right name instead of an empty result.
#[test]
fn unknown_log_events_are_shown_and_event_names_are_checked() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let log = web.join(".aea/agent.log");
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str(
        r#"{"ts":"2026-11-21T10:00:00.000Z","event":"escalated","actor":"newer-tool","message":"m1"}"#,
    );
    text.push('\n');
    std::fs::write(&log, text).unwrap();

    let events = env.ok(&web, &["--json", "log"]);
    assert_eq!(events.lines().count(), 2, "{events}");
    assert!(events.contains("\"event\":\"escalated\""), "{events}");
    assert!(env.ok(&web, &["log"]).contains("escalated"));
    let init = env.ok(&web, &["--json", "log", "--event", "init"]);
    assert_eq!(init.lines().count(), 1, "{init}");

    let out = env.run(&web, &["log", "--event", "approve"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("invalid value 'approve' for '--event <EVENT>'"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("a similar value exists: 'approved'"),
        "{}",
        stderr(&out)
    );
    let out = env.run(&web, &["log", "--event", "escalated"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}
