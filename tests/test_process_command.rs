//! `aea process`: claims that exclude each other (stale and dead-owner
//! claims taken over, fresh ones respected), deferred mail, and the outcome
//! and note it records.

use crate::common::*;

#[test]
fn stale_claims_are_taken_over_and_fresh_ones_respected() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let fresh = env.question(&api, "web", "fresh");
    let stale = env.question(&api, "web", "stale");
    let name_of = |id: &str| {
        env.json(&web, &["show", id])["file"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let claims = env.state(&web).join("claims");
    std::fs::create_dir_all(&claims).unwrap();
    let claim = |id: &str, at: &str| {
        let body = format!(r#"{{"claimed_at":"{at}","by":"someone","pid":1}}"#);
        std::fs::write(claims.join(name_of(id)), body).unwrap();
    };
    let now = "2026-11-21T12:00:00.000Z";
    claim(&fresh, "2026-11-21T11:50:00.000Z");
    claim(&stale, "2026-11-21T11:00:00.000Z");

    let run = |id: &str| {
        env.cmd(&web)
            .env("AEA_TEST_NOW", now)
            .args(["process", id])
            .output()
            .unwrap()
    };
    let out = run(&fresh);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("being processed by someone"),
        "{}",
        stderr(&out)
    );
    assert!(claims.join(name_of(&fresh)).exists(), "fresh claim kept");

    let out = run(&stale);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = env.ok(&web, &["--json", "log", "--event", "claim_taken_over"]);
    assert_eq!(log.lines().count(), 1);
    assert!(log.contains("someone"));
}

/// A claim whose process died is taken over at once, not after 30
/// minutes; one whose process lives is respected; `doctor` names the dead
/// one. The holder is a real process (`sleep`), identified the way aea
/// identifies its own claims: host, boot, pid and start time.
#[test]
fn a_claim_whose_process_died_is_taken_over_at_once() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.question(&api, "web", "claimed");
    let name = env.json(&web, &["show", &id])["file"]
        .as_str()
        .unwrap()
        .to_string();
    let mut holder = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = holder.id();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let started: u64 = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    let read = |p: &str| std::fs::read_to_string(p).unwrap().trim().to_string();
    let body = serde_json::json!({
        "claimed_at": "2099-01-01T00:00:00.000Z",
        "by": "worker",
        "pid": pid,
        "host": read("/proc/sys/kernel/hostname"),
        "boot_id": read("/proc/sys/kernel/random/boot_id"),
        "started": started,
    });
    let claims = env.state(&web).join("claims");
    std::fs::create_dir_all(&claims).unwrap();
    let claim = claims.join(&name);
    std::fs::write(&claim, body.to_string()).unwrap();

    // Alive: respected, whatever its age says.
    let out = env.run(&web, &["process", &id]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("being processed by worker"));
    assert!(stdout(&env.run(&web, &["doctor"])).contains("no stale claims"));

    holder.kill().unwrap();
    holder.wait().unwrap();
    assert!(
        stdout(&env.run(&web, &["doctor"])).contains("stale claims:"),
        "doctor names the dead holder's claim"
    );
    env.ok(&web, &["process", &id]);
    let log = env.ok(&web, &["--json", "log", "--event", "claim_taken_over"]);
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(!claim.exists(), "the claim was released");
}

/// `--outcome deferred` puts mail off without losing it: it stays on the
/// list after new mail, with when and why, wakes nobody, and `process`
/// finishes it later.
#[test]
fn deferred_mail_stays_listed_and_can_be_finished() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let first = env.question(&api, "web", "first, put off");
    let second = env.question(&api, "web", "second, new");
    env.ok(
        &web,
        &[
            "process",
            &first,
            "--outcome",
            "deferred",
            "--note",
            "needs the db",
        ],
    );

    let report = env.json(&web, &["check"]);
    assert_eq!(report["unprocessed"], 2, "{report}");
    assert_eq!(report["deferred"], 1, "{report}");
    let messages = report["messages"].as_array().unwrap();
    assert_eq!(messages[0]["id"], second.as_str(), "new mail first");
    assert_eq!(messages[1]["id"], first.as_str(), "deferred mail last");
    assert_eq!(messages[1]["deferred"]["note"], "needs the db");
    assert!(messages[0].get("deferred").is_none());
    let text = env.ok(&web, &["check"]);
    assert!(text.contains("1 deferred, listed last"), "{text}");
    assert!(text.contains("DEFERRED"), "{text}");

    let only = env.json(&web, &["check", "--deferred"]);
    let ids: Vec<_> = only["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].clone())
        .collect();
    assert_eq!(ids, [serde_json::json!(first)]);

    // Deferred again (a new reason), then finished.
    env.ok(
        &web,
        &[
            "process",
            &first,
            "--outcome",
            "deferred",
            "--note",
            "still",
        ],
    );
    let report = env.json(&web, &["check", "--deferred"]);
    assert_eq!(report["messages"][0]["deferred"]["note"], "still");
    env.ok(&web, &["process", &first, "--note", "done now"]);
    let report = env.json(&web, &["check"]);
    assert_eq!(report["unprocessed"], 1);
    assert_eq!(report["deferred"], 0);
    assert_eq!(
        std::fs::read_dir(env.state(&web).join("deferred"))
            .unwrap()
            .count(),
        0,
        "the deferral is gone once processed"
    );
    let done = env.json(&web, &["check", "--processed"]);
    assert_eq!(done["messages"][0]["id"], first.as_str(), "{done}");
    assert_eq!(done["messages"][0]["processed"]["outcome"], "done");
    let all = env.json(&web, &["check", "--all"]);
    assert_eq!(all["messages"].as_array().unwrap().len(), 1, "{all}");
    assert_eq!(all["more"], 0, "{all}");
    let log = env.ok(&web, &["--json", "log", "--event", "deferred"]);
    assert_eq!(log.lines().count(), 2, "{log}");

    // Deferred mail wakes nobody: with only deferred mail waiting, `watch
    // --pending` does not return at once.
    let said = env.ok(&web, &["process", &second, "--outcome", "deferred"]);
    assert!(said.starts_with("deferred m"), "{said}");
    assert!(!said.contains("(deferred)"), "said once: {said}");
    assert!(said.contains("stays unprocessed"), "{said}");
    let out = env.run(&web, &["watch", "--pending", "--timeout", "300ms"]);
    assert_eq!(code(&out), 4, "{}", stdout(&out));
}

#[test]
fn process_records_outcome_and_note() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.question(&api, "web", "later");
    let name = env.json(&web, &["show", &id])["file"]
        .as_str()
        .unwrap()
        .to_string();
    env.ok(
        &web,
        &[
            "process",
            &id[..8],
            "--outcome",
            "ignored",
            "--note",
            "after release",
        ],
    );
    // aea's record, in the private state, and the marker it writes for
    // other readers say the same.
    let record = std::fs::read(env.state(&web).join("records").join(&name)).unwrap();
    let marker = std::fs::read(web.join(".aea/.processed").join(&name)).unwrap();
    assert_eq!(record, marker);
    let marker: serde_json::Value = serde_json::from_slice(&record).unwrap();
    assert_eq!(marker["outcome"], "ignored");
    assert_eq!(marker["note"], "after release");
    assert_eq!(marker["by"], "tester");
    assert!(marker["processed_at"].as_str().unwrap().ends_with('Z'));
    let shown = env.json(&web, &["show", &id]);
    assert_eq!(shown["processed"], true);
    assert_eq!(shown["marker"]["outcome"], "ignored");
}
