//! `aea import` / `aea export` with other protocols' files (SPEC §12):
//! real files in temporary folders, hostile ones included.

use crate::common::*;
use std::fmt::Write as _;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::Duration;

const REFERENCE: &str = "id: \"a1b2c3d4-5678-9abc-def0-1234567890ab\"
from: claude
to: codex
type: review_request
priority: P1
created_at_utc: \"2025-01-15T14:30:00Z\"
subject: \"Review auth middleware PR\"
body: |
  PR #42 adds JWT validation middleware.
related_pr: \"https://github.com/kiloloop/oacp/pull/42\"
conversation_id: \"review-pr-42\"
";

fn oacp_inbox(env: &TestEnv) -> std::path::PathBuf {
    let dir = env.path().join("oacp/projects/p/agents/codex/inbox");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn oacp_import_is_idempotent_and_lands_in_check() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let inbox = oacp_inbox(&env);
    std::fs::write(inbox.join("a.yaml"), REFERENCE).unwrap();
    let dir = inbox.to_str().unwrap();

    let report = env.json(&web, &["import", "oacp", dir]);
    assert_eq!(report[0]["status"], "imported", "{report}");
    let again = env.json(&web, &["import", "oacp", dir]);
    assert_eq!(again[0]["status"], "already-held", "{again}");
    assert_eq!(inbox_files(&web).len(), 1);

    let check = env.json(&web, &["check"]);
    assert_eq!(check["unprocessed"], 1, "{check}");
    let shown = env.json(&web, &["show", "a1b2c3d4-5678-9abc-def0-1234567890ab"]);
    let text = shown.to_string();
    assert!(text.contains("review_request"), "{text}");
    assert!(text.contains("Review auth middleware PR"), "{text}");
    // The foreign file is left as it was.
    assert_eq!(
        std::fs::read_to_string(inbox.join("a.yaml")).unwrap(),
        REFERENCE
    );
}

#[test]
fn oacp_import_refuses_hostile_files_and_keeps_them() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let inbox = oacp_inbox(&env);
    std::fs::write(inbox.join("bad.yaml"), "id: [unclosed\n").unwrap();
    let mut big = String::from("body: \"");
    big.push_str(&"x".repeat(1024 * 1024 + 10));
    big.push_str("\"\n");
    std::fs::write(inbox.join("huge.yaml"), &big).unwrap();
    std::fs::write(env.path().join("elsewhere.yaml"), REFERENCE).unwrap();
    symlink(env.path().join("elsewhere.yaml"), inbox.join("link.yaml")).unwrap();
    let fifo = inbox.join("pipe.yaml");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let before = snapshot(&inbox);

    let out = env.run(&web, &["--json", "import", "oacp", inbox.to_str().unwrap()]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let reasons: Vec<(String, String)> = report
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["status"].as_str().unwrap().to_string(),
                r["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(reasons.len(), 4, "{report}");
    assert!(reasons.iter().all(|(s, _)| s == "refused"), "{report}");
    assert!(reasons[0].1.starts_with("not valid YAML"), "{report}");
    assert!(
        reasons[1].1.contains("over the 1048576 byte limit"),
        "{report}"
    );
    assert!(reasons[2].1.contains("symbolic link"), "{report}");
    assert!(reasons[3].1.contains("not a regular file"), "{report}");
    assert!(inbox_files(&web).is_empty());
    assert_eq!(snapshot(&inbox), before, "nothing moved or lost");
}

#[test]
fn oacp_export_round_trips_and_never_overwrites() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let api = env.repo("api");
    let id = env.send(
        &api,
        "web",
        &[
            "--type",
            "question",
            "--priority",
            "P1",
            "--subject",
            "Which port?",
            "--body",
            "8080 or 9090?",
        ],
    );
    let out_dir = env.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.to_str().unwrap();

    let written = env.json(&web, &["export", "oacp", &id, "--out", out]);
    let path = written[0]["path"].as_str().unwrap().to_string();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("priority: \"P1\""), "{text}");
    assert!(text.contains("type: \"question\""), "{text}");
    // Again: the same file is there already; nothing doubled or replaced.
    env.json(&web, &["export", "oacp", &id, "--out", out]);
    assert_eq!(names(&out_dir).len(), 1);
    // A different file under that name is never replaced.
    std::fs::write(&path, "someone else's\n").unwrap();
    let again = env.json(&web, &["export", "oacp", &id, "--out", out]);
    assert_ne!(again[0]["path"].as_str().unwrap(), path);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "someone else's\n");

    // Imported back elsewhere, it is the message sent, field for field.
    let docs = env.repo("docs");
    let imported = env.json(
        &docs,
        &["import", "oacp", again[0]["path"].as_str().unwrap()],
    );
    assert_eq!(imported[0]["status"], "imported", "{imported}");
    let original: serde_json::Value = serde_json::from_slice(
        &std::fs::read(web.join(".aea").join(&inbox_files(&web)[0])).unwrap(),
    )
    .unwrap();
    let copy: serde_json::Value = serde_json::from_slice(
        &std::fs::read(docs.join(".aea").join(&inbox_files(&docs)[0])).unwrap(),
    )
    .unwrap();
    assert_eq!(copy, original);
}

#[test]
fn send_takes_oacp_priorities() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let api = env.repo("api");
    for (given, want) in [
        ("P0", "urgent"),
        ("P1", "high"),
        ("P2", "normal"),
        ("P3", "low"),
    ] {
        env.send(
            &api,
            "web",
            &[
                "--type",
                "update",
                "--priority",
                given,
                "--subject",
                given,
                "--body",
                "b",
            ],
        );
        let check = env.json(&web, &["check"]);
        let found = check.to_string();
        assert!(found.contains(want), "{given}: {found}");
    }
}

const ROO_EXAMPLE: &str = "---
from: nestjs-developer
timestamp: \"2025-07-07T11:15:00Z\"
id: \"msg-a4b1c9e0\"
priority: high
---

**Request: Integration Test**

Please run integration tests on the new `auth-service`.
";

#[test]
fn roo_import_is_idempotent_and_export_never_overwrites() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let mailbox = env.path().join("ws/.roo/mailbox");
    std::fs::create_dir_all(&mailbox).unwrap();
    std::fs::write(mailbox.join("to-web.md"), ROO_EXAMPLE).unwrap();
    std::fs::write(mailbox.join("notes.md"), "not a message\n").unwrap();
    let dir = mailbox.to_str().unwrap();

    let report = env.json(&web, &["import", "roo", dir]);
    assert_eq!(report.as_array().unwrap().len(), 1, "{report}");
    assert_eq!(report[0]["status"], "imported", "{report}");
    assert_eq!(
        env.json(&web, &["import", "roo", dir])[0]["status"],
        "already-held"
    );
    let check = env.json(&web, &["check"]).to_string();
    assert!(check.contains("Request: Integration Test"), "{check}");

    // Out again: to-<slug>.md; a second message for a slug with one
    // waiting is refused and stays in our mailbox, the waiting one intact.
    let api = env.repo("api");
    let first = env.send(
        &api,
        "web",
        &["--type", "update", "--subject", "one", "--body", "1"],
    );
    let second = env.send(
        &api,
        "web",
        &["--type", "update", "--subject", "two", "--body", "2"],
    );
    let out_dir = env.path().join("roo-out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.to_str().unwrap();
    let written = env.json(&web, &["export", "roo", &first, "--out", out]);
    assert!(
        written[0]["path"].as_str().unwrap().ends_with("/to-web.md"),
        "{written}"
    );
    let waiting = std::fs::read(out_dir.join("to-web.md")).unwrap();
    // The same message again is already there: fine.
    env.json(&web, &["export", "roo", &first, "--out", out]);
    let refused = env.run(&web, &["export", "roo", &second, "--out", out]);
    assert_eq!(code(&refused), 5, "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("one per recipient"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(std::fs::read(out_dir.join("to-web.md")).unwrap(), waiting);
    assert_eq!(names(&out_dir), ["to-web.md"]);
}

/// An OACP agent folder registered with `aea agents add --oacp`.
fn oacp_agent(env: &TestEnv, from: &Path, name: &str) -> std::path::PathBuf {
    let agent = env.path().join("oacp/projects/p/agents").join(name);
    std::fs::create_dir_all(agent.join("inbox")).unwrap();
    std::fs::create_dir_all(agent.join("outbox")).unwrap();
    env.ok(
        from,
        &["agents", "add", name, "--oacp", agent.to_str().unwrap()],
    );
    agent
}

#[test]
fn send_to_an_oacp_agent_writes_a_valid_inbox_file_and_replies_come_back() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let codex = oacp_agent(&env, &web, "codex");
    let listed = env.json(&web, &["agents"]);
    let row = &listed["agents"][0];
    assert_eq!(row["health"], "oacp", "{listed}");
    assert!(row["oacp"].as_str().unwrap().ends_with("agents/codex"));

    let id = env.send(
        &web,
        "codex",
        &[
            "--type",
            "question",
            "--priority",
            "P1",
            "--subject",
            "Which port?",
            "--body",
            "The API listens where?\n",
        ],
    );
    let inbox = codex.join("inbox");
    let files = names(&inbox);
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(inbox.join(&files[0])).unwrap();
    let fields = aea::bridge::oacp::fields_of(&text).unwrap();
    assert_eq!(
        aea::bridge::oacp::oacp_problems(&fields),
        Vec::<String>::new()
    );
    assert_eq!(fields["id"], id.as_str());
    assert_eq!(fields["from"], "web");
    assert_eq!(fields["to"], "codex");
    assert_eq!(fields["type"], "question");
    assert_eq!(fields["priority"], "P1");
    // Our own copy is in sent/, as for any send; nothing in our inbox.
    assert!(
        env.json(&web, &["status", &id])
            .to_string()
            .contains("codex")
    );
    assert!(inbox_files(&web).is_empty());

    // Their answer, written as OACP's sender would, imports and threads.
    let answer = format!(
        "id: \"b7f0c1d2-0000-4000-8000-000000000001\"\nfrom: codex\nto: web\ntype: follow_up\n\
         priority: P2\ncreated_at_utc: \"2026-11-23T10:00:00Z\"\nsubject: \"Re: Which port?\"\n\
         body: \"8080\"\nparent_message_id: \"{id}\"\nconversation_id: \"{id}\"\n"
    );
    let theirs = env.path().join("their-answer");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("answer.yaml"), answer).unwrap();
    let report = env.json(&web, &["import", "oacp", theirs.to_str().unwrap()]);
    assert_eq!(report[0]["status"], "imported", "{report}");

    // Our reply to it goes back into their inbox, threaded, once a person
    // let us act on mail from an agent that cannot sign.
    env.ok(&web, &["approve", "b7f0c1d2-0000-4000-8000-000000000001"]);
    env.ok(
        &web,
        &[
            "reply",
            "b7f0c1d2-0000-4000-8000-000000000001",
            "--body",
            "thanks",
        ],
    );
    let files = names(&inbox);
    assert_eq!(files.len(), 2, "{files:?}");
    let reply = files
        .iter()
        .map(|f| {
            aea::bridge::oacp::fields_of(&std::fs::read_to_string(inbox.join(f)).unwrap()).unwrap()
        })
        .find(|f| f["id"] != id.as_str())
        .unwrap();
    assert_eq!(
        aea::bridge::oacp::oacp_problems(&reply),
        Vec::<String>::new()
    );
    assert_eq!(
        reply["parent_message_id"],
        "b7f0c1d2-0000-4000-8000-000000000001"
    );
    assert_eq!(reply["to"], "codex");
}

#[test]
fn send_to_an_oacp_agent_refuses_a_swapped_inbox_and_never_overwrites() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let codex = oacp_agent(&env, &web, "codex");
    let inbox = codex.join("inbox");
    // The inbox swapped for a symlink to somewhere else: nothing written there.
    let elsewhere = env.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::remove_dir(&inbox).unwrap();
    symlink(&elsewhere, &inbox).unwrap();
    let out = env.run(
        &web,
        &[
            "send",
            "--to",
            "codex",
            "--type",
            "update",
            "--subject",
            "s",
            "--body",
            "b",
        ],
    );
    assert_ne!(code(&out), 0, "{}", stdout(&out));
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    assert!(names(&elsewhere).is_empty());

    // Ten sends at once into a real inbox: ten files, none replaced.
    std::fs::remove_file(&inbox).unwrap();
    std::fs::create_dir(&inbox).unwrap();
    let children: Vec<_> = (0..10)
        .map(|i| {
            env.cmd(&web)
                .args(["send", "--to", "codex", "--type", "update", "--subject"])
                .arg(format!("same subject {}", i % 2))
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
    }
    assert_eq!(names(&inbox).len(), 10, "{:?}", names(&inbox));
}

#[test]
fn send_to_a_roo_agent_writes_its_one_file_and_refuses_while_it_waits() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let mailbox = env.path().join("app/.roo/mailbox");
    std::fs::create_dir_all(&mailbox).unwrap();
    env.ok(
        &web,
        &[
            "agents",
            "add",
            "tester",
            "--roo",
            mailbox.to_str().unwrap(),
        ],
    );
    let first = env.send(
        &web,
        "tester",
        &[
            "--type",
            "request",
            "--priority",
            "high",
            "--subject",
            "Run the tests",
            "--body",
            "please",
        ],
    );
    let text = std::fs::read_to_string(mailbox.join("to-tester.md")).unwrap();
    assert!(text.starts_with("---\n"), "{text}");
    assert!(
        text.contains(&format!("id: \"{first}\"")) || text.contains(&first),
        "{text}"
    );
    assert!(text.contains("from: \"web\""), "{text}");
    assert!(text.contains("\n\n**Run the tests**\n\nplease"), "{text}");
    assert!(text.contains("priority: high"), "{text}");

    let out = env.run(
        &web,
        &[
            "send",
            "--to",
            "tester",
            "--type",
            "update",
            "--subject",
            "again",
            "--body",
            "b",
        ],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("one per recipient"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(mailbox.join("to-tester.md")).unwrap(),
        text
    );

    // Once the Roo agent deleted it (processed), the next one goes.
    std::fs::remove_file(mailbox.join("to-tester.md")).unwrap();
    env.send(
        &web,
        "tester",
        &["--type", "update", "--subject", "again", "--body", "b"],
    );
    assert!(
        std::fs::read_to_string(mailbox.join("to-tester.md"))
            .unwrap()
            .contains("again")
    );
}

/// `web` with two bridges in its config, trusted: its OACP agent folder
/// and a Roo mailbox. Returns (OACP inbox, Roo mailbox).
fn bridged(env: &TestEnv, web: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let agent = env.path().join("oacp/projects/p/agents/web");
    std::fs::create_dir_all(agent.join("inbox")).unwrap();
    let mailbox = web.join(".roo/mailbox");
    std::fs::create_dir_all(&mailbox).unwrap();
    let config = web.join(".aea/agent-config.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    let _ = write!(
        text,
        "\nbridges:\n  - protocol: oacp\n    path: {}\n  - protocol: roo\n    path: .roo/mailbox\n",
        agent.display()
    );
    std::fs::write(&config, text).unwrap();
    // The senders, known: OACP and Roo mail is unsigned.
    let codex = env.path().join("oacp/projects/p/agents/codex");
    std::fs::create_dir_all(codex.join("inbox")).unwrap();
    for (id, flag, dir) in [
        ("codex", "--oacp", &codex),
        ("nestjs-developer", "--roo", &mailbox),
    ] {
        env.ok(web, &["agents", "add", id, flag, dir.to_str().unwrap()]);
        env.ok(web, &["agents", "trust", id, "--allow-unsigned"]);
    }
    (agent.join("inbox"), mailbox)
}

fn oacp_file(id: &str, subject: &str) -> String {
    format!(
        "id: \"{id}\"\nfrom: codex\nto: web\ntype: task_request\npriority: P1\n\
         created_at_utc: \"2026-11-23T09:00:00Z\"\nsubject: \"{subject}\"\nbody: \"do it\"\n"
    )
}

fn log_events(repo: &Path, event: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(repo.join(".aea/agent.log"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["event"] == event)
        .collect()
}

#[test]
fn bridge_imports_and_processing_completes_their_side() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let (inbox, mailbox) = bridged(&env, &web);
    let first = "c0ffee00-0000-4000-8000-000000000001";
    std::fs::write(inbox.join("a.yaml"), oacp_file(first, "Build it")).unwrap();
    std::fs::write(mailbox.join("to-web.md"), ROO_EXAMPLE).unwrap();
    std::fs::write(mailbox.join("to-tester.md"), ROO_EXAMPLE).unwrap();

    // Bridges read and delete outside .aea/: nothing until trusted.
    let untrusted = env.run(&web, &["bridge", "--once"]);
    assert_eq!(code(&untrusted), 2, "{}", stderr(&untrusted));
    assert!(
        stderr(&untrusted).contains("aea trust"),
        "{}",
        stderr(&untrusted)
    );
    assert!(inbox_files(&web).is_empty());
    env.ok(&web, &["trust"]);

    let report = env.json(&web, &["bridge", "--once"]);
    let statuses: Vec<&str> = report["imported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["status"].as_str().unwrap())
        .collect();
    // Our OACP file and our Roo file; the Roo file for someone else is not ours.
    assert_eq!(statuses, ["imported", "imported"], "{report}");
    assert_eq!(inbox_files(&web).len(), 2);
    assert_eq!(log_events(&web, "imported").len(), 2);
    // Again: nothing new, nothing doubled.
    let again = env.json(&web, &["bridge", "--once"]);
    assert!(again.to_string().contains("already-held"), "{again}");
    assert_eq!(inbox_files(&web).len(), 2);

    // Processing here deletes their file, as their reader would.
    let done = env.json(&web, &["process", first]);
    assert_eq!(done["bridge"]["done"], "removed", "{done}");
    assert!(!inbox.join("a.yaml").exists());
    let done = env.json(&web, &["process", "msg-a4b1c9e0"]);
    assert_eq!(done["bridge"]["done"], "removed", "{done}");
    assert!(!mailbox.join("to-web.md").exists());
    assert!(mailbox.join("to-tester.md").exists());
    // Roo's reader logs the id it archived; ours is in the audit log.
    let completed = log_events(&web, "bridge_completed");
    assert_eq!(completed.len(), 2, "{completed:?}");
    assert!(completed.iter().any(|e| e["foreign_id"] == "msg-a4b1c9e0"));

    // Human output says it too.
    let second = "c0ffee00-0000-4000-8000-000000000002";
    std::fs::write(inbox.join("b.yaml"), oacp_file(second, "More")).unwrap();
    env.ok(&web, &["bridge", "--once"]);
    let said = env.ok(&web, &["process", second]);
    assert!(
        said.contains("completed on the OACP side (removed)"),
        "{said}"
    );
}

#[test]
fn bridge_never_removes_a_file_it_did_not_import() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let (inbox, _) = bridged(&env, &web);
    env.ok(&web, &["trust"]);

    // A file rewritten after it was imported holds someone else's words:
    // processing ours leaves it.
    let changed = "c0ffee00-0000-4000-8000-00000000000c";
    std::fs::write(inbox.join("c.yaml"), oacp_file(changed, "Before")).unwrap();
    env.ok(&web, &["bridge", "--once"]);
    std::fs::write(inbox.join("c.yaml"), oacp_file(changed, "After")).unwrap();
    let done = env.json(&web, &["process", changed]);
    assert_eq!(done["bridge"]["done"], "changed", "{done}");
    assert!(inbox.join("c.yaml").exists());

    // A file swapped for a symlink: neither followed nor removed.
    let linked = "c0ffee00-0000-4000-8000-00000000000d";
    std::fs::write(inbox.join("d.yaml"), oacp_file(linked, "Linked")).unwrap();
    env.ok(&web, &["bridge", "--once"]);
    let target = env.path().join("precious.yaml");
    std::fs::rename(inbox.join("d.yaml"), &target).unwrap();
    symlink(&target, inbox.join("d.yaml")).unwrap();
    let done = env.json(&web, &["process", linked]);
    assert_eq!(done["bridge"]["done"], "refused", "{done}");
    assert!(target.exists());
    assert!(std::fs::symlink_metadata(inbox.join("d.yaml")).is_ok());

    // A record planted where older versions kept them, in the work
    // tree's .aea/.bridged/ (a cloned repository can carry one), pointing
    // outside every bridge at a file with the right bytes: it is never
    // read, so processing the message completes nothing and the file
    // stays.
    let api = env.repo("api");
    let send = || {
        env.send(
            &api,
            "web",
            &["--type", "update", "--subject", "s", "--body", "b"],
        )
    };
    let victim = env.path().join("victim.yaml");
    std::fs::write(&victim, "keep me\n").unwrap();
    let record = |id: &str| {
        serde_json::json!({
            "protocol": "oacp",
            "source": victim,
            "sha256": aea::fsutil::sha256_hex(b"keep me\n"),
            "foreign_id": id,
        })
        .to_string()
    };
    let planted = send();
    let old = web.join(".aea/.bridged");
    std::fs::create_dir_all(&old).unwrap();
    std::fs::write(old.join(format!("{planted}.json")), record(&planted)).unwrap();
    let done = env.json(&web, &["process", &planted]);
    assert!(done.get("bridge").is_none(), "{done}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");

    // The same record in the private state (a bridge taken out of the
    // config since the import leaves one like it): the file lies in no
    // bridge in force, so it stays.
    let recorded = send();
    let private = env.state(&web).join("bridged");
    std::fs::write(private.join(format!("{recorded}.json")), record(&recorded)).unwrap();
    let done = env.json(&web, &["process", &recorded]);
    assert_eq!(done["bridge"]["done"], "not-bridged", "{done}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");
    assert!(log_events(&web, "bridge_completed").is_empty());
}

#[test]
fn a_running_bridge_imports_mail_as_it_arrives() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let (inbox, mailbox) = bridged(&env, &web);
    env.ok(&web, &["trust"]);
    let mut child = env
        .cmd(&web)
        .arg("bridge")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = Lines::read(child.stdout.take().unwrap());
    lines.wait_for("the bridge waiting", Duration::from_secs(20), |l| {
        l.contains("waiting for mail")
    });
    // Written as OACP's sender does: staged, then renamed into the inbox.
    let id = "c0ffee00-0000-4000-8000-0000000000aa";
    std::fs::write(inbox.join(".staged"), oacp_file(id, "Live")).unwrap();
    std::fs::rename(inbox.join(".staged"), inbox.join("live.yaml")).unwrap();
    lines.wait_for("the OACP file imported", Duration::from_secs(20), |l| {
        l.starts_with("imported:") && l.contains(id)
    });
    std::fs::write(mailbox.join("to-web.md"), ROO_EXAMPLE).unwrap();
    lines.wait_for("the Roo file imported", Duration::from_secs(20), |l| {
        l.starts_with("imported:") && l.contains("msg-a4b1c9e0")
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(inbox_files(&web).len(), 2);
}

#[test]
fn a_completion_left_undone_is_finished_by_the_next_pass() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let (inbox, _) = bridged(&env, &web);
    env.ok(&web, &["trust"]);
    let id = "c0ffee00-0000-4000-8000-0000000000bb";
    std::fs::write(inbox.join("e.yaml"), oacp_file(id, "Later")).unwrap();
    env.ok(&web, &["bridge", "--once"]);
    // Processed while the bridges are not trusted: their file stays.
    env.ok(&web, &["trust", "--revoke"]);
    let done = env.json(&web, &["process", id]);
    assert_eq!(done["bridge"]["done"], "not-bridged", "{done}");
    assert!(inbox.join("e.yaml").exists());
    // Trusted again, the next pass finishes it.
    env.ok(&web, &["trust"]);
    let report = env.json(&web, &["bridge", "--once"]);
    assert_eq!(report["completed"][0]["done"], "removed", "{report}");
    assert!(!inbox.join("e.yaml").exists());
}

#[test]
fn a_handoff_is_never_broadcast() {
    let env = TestEnv::new();
    let api = env.repo("api");
    env.repo("web");
    env.repo("db");
    let out = env.run(
        &api,
        &[
            "send",
            "--to",
            "web",
            "--to",
            "db",
            "--type",
            "handoff",
            "--subject",
            "s",
            "--body",
            "b",
        ],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("one agent"), "{}", stderr(&out));
    for repo in ["web", "db"] {
        assert!(inbox_files(&env.path().join(repo)).is_empty());
    }
}

/// A record in the private `bridged/` for a message we processed that
/// names another file of the bridge with that file's own digest (damage,
/// or a record an older version kept in `.aea/`, where a cloned repository
/// could plant one): the file holds another message, never imported, and
/// stays.
#[test]
fn a_planted_record_never_removes_another_file_of_the_bridge() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let (inbox, _) = bridged(&env, &web);
    env.ok(&web, &["trust"]);
    let ours = "c0ffee00-0000-4000-8000-0000000000c1";
    std::fs::write(inbox.join("a.yaml"), oacp_file(ours, "Ours")).unwrap();
    env.ok(&web, &["bridge", "--once"]);
    // Arrived since the last pass; not imported yet.
    let victim = inbox.join("victim.yaml");
    let text = oacp_file("c0ffee00-0000-4000-8000-0000000000c2", "Not yet read");
    std::fs::write(&victim, &text).unwrap();
    let recorded = env.state(&web).join(format!("bridged/{ours}.json"));
    assert!(recorded.is_file(), "the import recorded where it read");
    std::fs::write(
        recorded,
        serde_json::json!({
            "protocol": "oacp",
            "source": victim,
            "sha256": aea::fsutil::sha256_hex(text.as_bytes()),
            "foreign_id": ours,
        })
        .to_string(),
    )
    .unwrap();
    let done = env.json(&web, &["process", ours]);
    assert_ne!(done["bridge"]["done"], "removed", "{done}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), text);
    assert!(log_events(&web, "bridge_completed").is_empty());
    // And the next pass still brings it in.
    let report = env.json(&web, &["bridge", "--once"]);
    assert!(
        report.to_string().contains("0000000000c2"),
        "victim not imported: {report}"
    );

    // A file nested deeper than a message may be is refused, once, not
    // delivered unreadable (and again on every pass).
    let deep = format!(
        "{}channel: {}{}\n",
        oacp_file("c0ffee00-0000-4000-8000-0000000000c3", "Deep"),
        "[".repeat(60),
        "]".repeat(60)
    );
    std::fs::write(inbox.join("deep.yaml"), deep).unwrap();
    let before = inbox_files(&web).len();
    for _ in 0..2 {
        let out = env.run(&web, &["bridge", "--once"]);
        assert_eq!(code(&out), 6, "{}", stderr(&out));
        assert!(stdout(&out).contains("deeper than"), "{}", stdout(&out));
    }
    assert_eq!(inbox_files(&web).len(), before);
    assert!(inbox.join("deep.yaml").exists());
}

/// `path: .roo/mailbox` is trusted as text; `.roo` committed (or pulled
/// later) as a symbolic link would send the bridge elsewhere to read and
/// delete. A relative bridge folder is reached through no link.
#[test]
fn a_bridge_folder_behind_a_symlink_is_neither_read_nor_emptied() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let (_, mailbox) = bridged(&env, &web);
    env.ok(&web, &["trust"]);
    std::fs::write(mailbox.join("to-web.md"), ROO_EXAMPLE).unwrap();
    env.ok(&web, &["bridge", "--once"]);
    // The repository's `.roo` becomes a link to a folder elsewhere, which
    // holds the same bytes: the config (and so its trust) is unchanged.
    let elsewhere = env.path().join("elsewhere");
    std::fs::rename(web.join(".roo"), &elsewhere).unwrap();
    symlink(&elsewhere, web.join(".roo")).unwrap();
    let done = env.json(&web, &["process", "msg-a4b1c9e0"]);
    assert_eq!(done["bridge"]["done"], "refused", "{done}");
    assert!(elsewhere.join("mailbox/to-web.md").exists());
    // Nor is anything read there.
    std::fs::write(
        elsewhere.join("mailbox/to-web.md"),
        ROO_EXAMPLE.replace("msg-a4b1c9e0", "msg-elsewhere"),
    )
    .unwrap();
    let out = env.run(&web, &["bridge", "--once"]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(stdout(&out).contains("symbolic link"), "{}", stdout(&out));
    assert!(!stdout(&out).contains("msg-elsewhere"), "{}", stdout(&out));
    // Only the one processed (in the store); nothing new waits.
    assert_eq!(inbox_files(&web), Vec::<String>::new());
    assert_eq!(received_files(&web, &env.state(&web)).len(), 1);

    // The same folder written out in full is held to the same rule.
    let config = web.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "path: .roo/mailbox",
        &format!("path: {}", web.join(".roo/mailbox").display()),
    );
    std::fs::write(&config, text).unwrap();
    env.ok(&web, &["trust"]);
    let out = env.run(&web, &["bridge", "--once"]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(stdout(&out).contains("symbolic link"), "{}", stdout(&out));
    assert!(!stdout(&out).contains("msg-elsewhere"), "{}", stdout(&out));
}

/// One bridge folder missing (an OACP agent not set up yet) is said, and
/// the other bridges are still read, once and running.
#[test]
fn a_missing_bridge_folder_does_not_stop_the_others() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let (inbox, mailbox) = bridged(&env, &web);
    env.ok(&web, &["trust"]);
    std::fs::remove_dir(&inbox).unwrap();
    std::fs::write(mailbox.join("to-web.md"), ROO_EXAMPLE).unwrap();
    let out = env.run(&web, &["bridge", "--once"]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(stdout(&out).contains("msg-a4b1c9e0"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(&format!("refused: {}", inbox.display())),
        "{}",
        stdout(&out)
    );
    assert_eq!(inbox_files(&web).len(), 1);
    // A new user's slip, `path:` naming the inbox itself, is said.
    let config = web.join(".aea/agent-config.yaml");
    let agent = inbox.parent().unwrap().to_path_buf();
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace(
            &format!("path: {}", agent.display()),
            &format!("path: {}", agent.join("inbox").display()),
        ),
    )
    .unwrap();
    std::fs::create_dir(&inbox).unwrap();
    env.ok(&web, &["trust"]);
    let out = env.run(&web, &["bridge", "--once"]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("is the agent's folder, whose inbox/ is read"),
        "{}",
        stdout(&out)
    );

    let mut child = env
        .cmd(&web)
        .arg("bridge")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = Lines::read(child.stdout.take().unwrap());
    lines.wait_for("the bridge waiting", Duration::from_secs(20), |l| {
        l.contains("waiting for mail")
    });
    std::fs::remove_file(mailbox.join("to-web.md")).unwrap();
    std::fs::write(
        mailbox.join("to-web.md"),
        ROO_EXAMPLE.replace("msg-a4b1c9e0", "msg-second"),
    )
    .unwrap();
    lines.wait_for("the Roo file imported", Duration::from_secs(20), |l| {
        l.starts_with("imported:") && l.contains("msg-second")
    });
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Completing a file moves it aside first; a file already holding the
/// aside name (theirs, or one an earlier completion had to leave there)
/// is never replaced by that move.
#[test]
fn completing_a_file_never_replaces_another_in_their_folder() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let (inbox, _) = bridged(&env, &web);
    env.ok(&web, &["trust"]);
    let id = "c0ffee00-0000-4000-8000-0000000000d1";
    std::fs::write(inbox.join("a.yaml"), oacp_file(id, "Done soon")).unwrap();
    env.ok(&web, &["bridge", "--once"]);
    let theirs = inbox.join(".aea-completing-a.yaml");
    std::fs::write(&theirs, "someone's file\n").unwrap();
    let done = env.json(&web, &["process", id]);
    assert_eq!(done["bridge"]["done"], "removed", "{done}");
    assert!(!inbox.join("a.yaml").exists());
    assert_eq!(
        std::fs::read_to_string(&theirs).unwrap(),
        "someone's file\n"
    );
    assert_eq!(names(&inbox), [".aea-completing-a.yaml"]);
}

/// A foreign id shaped like aea's short reference (`m3f9a01c2`) or the
/// start of a message file name is still found by id: imported once, held
/// after, by the bridge and by `aea import`.
#[test]
fn ids_shaped_like_references_are_imported_once() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let (inbox, _) = bridged(&env, &web);
    env.ok(&web, &["trust"]);
    std::fs::write(inbox.join("a.yaml"), oacp_file("m3f9a01c2", "Short")).unwrap();
    std::fs::write(inbox.join("b.yaml"), oacp_file("message-2026", "Prefix")).unwrap();
    env.ok(&web, &["bridge", "--once"]);
    assert_eq!(inbox_files(&web).len(), 2);
    let again = env.ok(&web, &["bridge", "--once"]);
    assert!(!again.contains("imported:"), "{again}");
    let by_hand = env.ok(&web, &["import", "oacp", inbox.to_str().unwrap()]);
    assert!(!by_hand.contains("imported:"), "{by_hand}");
    assert_eq!(inbox_files(&web).len(), 2);
}

/// A file under the size limit whose message is over it (JSON escapes
/// what YAML holds raw) is refused with a reason, and the files after it
/// are still imported.
#[test]
fn a_file_that_grows_past_the_limit_is_refused_and_the_rest_imported() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let (inbox, _) = bridged(&env, &web);
    env.ok(&web, &["trust"]);
    let big = oacp_file("c0ffee00-0000-4000-8000-0000000000e1", "Quotes").replace(
        "body: \"do it\"\n",
        &format!("body: |\n  {}\n", "\"".repeat(700_000)),
    );
    std::fs::write(inbox.join("a.yaml"), big).unwrap();
    let after = "c0ffee00-0000-4000-8000-0000000000e2";
    std::fs::write(inbox.join("z.yaml"), oacp_file(after, "After")).unwrap();
    let out = env.run(&web, &["bridge", "--once"]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(stdout(&out).contains("over the"), "{}", stdout(&out));
    assert!(stdout(&out).contains(after), "{}", stdout(&out));
    assert_eq!(inbox_files(&web).len(), 1);
    assert!(inbox.join("a.yaml").exists());
}

/// A Roo agent writes its file in place; a running bridge woken as the
/// file is created must not import the half written so far (and then
/// hold the whole one as already imported).
#[test]
fn a_running_bridge_waits_for_a_file_being_written() {
    use std::io::Write as _;
    let env = TestEnv::new();
    let web = env.repo("web");
    let (_, mailbox) = bridged(&env, &web);
    env.ok(&web, &["trust"]);
    let mut child = env
        .cmd(&web)
        .arg("bridge")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = Lines::read(child.stdout.take().unwrap());
    lines.wait_for("the bridge waiting", Duration::from_secs(20), |l| {
        l.contains("waiting for mail")
    });
    let (head, tail) = ROO_EXAMPLE.split_at(ROO_EXAMPLE.len() - 20);
    let mut file = std::fs::File::create(mailbox.join("to-web.md")).unwrap();
    file.write_all(head.as_bytes()).unwrap();
    file.flush().unwrap();
    // A writer that takes its time (the only sleep: it is the writer's).
    std::thread::sleep(Duration::from_millis(700));
    file.write_all(tail.as_bytes()).unwrap();
    drop(file);
    lines.wait_for("the Roo file imported", Duration::from_secs(20), |l| {
        l.starts_with("imported:") && l.contains("msg-a4b1c9e0")
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let shown = env.ok(&web, &["show", "msg-a4b1c9e0"]);
    assert!(shown.contains("`auth-service`."), "{shown}");
}

/// The one message in `repo`'s inbox, as JSON.
fn only_inbox_message(repo: &Path) -> serde_json::Value {
    let files = inbox_files(repo);
    assert_eq!(files.len(), 1, "{files:?}");
    serde_json::from_slice(&std::fs::read(repo.join(".aea").join(&files[0])).unwrap()).unwrap()
}

/// Sends a message from `api` to `web` and gives it, signed again by
/// `api`, everything `fill` adds: what no `aea send` flag writes.
fn planted(
    env: &TestEnv,
    api: &Path,
    web: &Path,
    args: &[&str],
    fill: impl Fn(&mut serde_json::Value),
) -> String {
    let id = env.send(api, "web", args);
    let name = inbox_files(web).pop().unwrap();
    let path = web.join(".aea").join(&name);
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    fill(&mut value);
    env.resign(&mut value);
    std::fs::write(&path, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
    id
}

/// The protocol's seed fields inside `message` (`question`, `changes`,
/// `handoff_details`, …, nested objects and arrays) and a top-level key
/// this version has no field for.
fn seed_fields(value: &mut serde_json::Value) {
    let message = &mut value["message"];
    message["question"] = "Which pool_size for 10k updates/sec?".into();
    message["changes"] = serde_json::json!([
        "moved /auth to /api/v2/auth",
        {"file": "src/auth.rs", "lines": [10, 12], "note": null}
    ]);
    message["handoff_details"] = serde_json::json!({
        "owner": "api",
        "steps": ["migrate", {"then": ["test", {"deep": [true, 1.5, ""]}]}],
        "empty": {},
        "none": []
    });
    message["next_steps"] = serde_json::json!([]);
    message["documentation"] = "line one\n  indented\n\ttab\n".into();
    value["x-later"] = serde_json::json!({"kept": [1, "two", {"three": 3}]});
}

/// Every field of an AEA message set, in the shapes the bridges must carry.
fn every_field(value: &mut serde_json::Value) {
    value["requires_response"] = true.into();
    value["from"]["user"] = "ana".into();
    value["to"]["repo_path"] = "/elsewhere/web".into();
    let message = &mut value["message"];
    message["body"] = "line one\n  indented\n\ttab \"quoted\" ü\u{2028}\n\n".into();
    message["context"] =
        serde_json::json!({"ticket": 42, "nested": {"n": [1, null, {"x": true}]}, "empty": {}});
    message["attachments"] = serde_json::json!([{"path": "src/proxy.rs", "sha256": "ab"}]);
    value["metadata"] = serde_json::json!({
        "conversation_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7",
        "reply_to": "0a0a0a0a-1111-4222-8333-444455556666",
        "tags": ["proxy", "ports"],
        "broadcast": ["web", "docs"],
        "refs": {"commit": "abc", "paths": ["src"]}
    });
    value["expires_at"] = "2099-01-01T00:00:00.500+01:00".into();
    seed_fields(value);
}

/// A named message: the `aea send` arguments and what to add to its file.
type Case<'a> = (&'a str, &'a [&'a str], fn(&mut serde_json::Value));

/// AEA → OACP → AEA and AEA → Roo → AEA through `aea export` and `aea
/// import`: the imported file is the message sent, field for field (seed
/// fields, nested values, unknown top-level keys and the signature over
/// them included), and its signature still checks out.
#[test]
fn every_field_and_seed_field_survives_export_and_import() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let api = env.repo("api");
    let cases: [Case; 2] = [
        (
            "seed fields",
            &[
                "--type",
                "question",
                "--subject",
                "Pool size?",
                "--body",
                "b",
            ],
            seed_fields,
        ),
        (
            "every field",
            &[
                "--type",
                "request",
                "--priority",
                "high",
                "--subject",
                "Ports \"or\" paths?",
                "--body",
                "b",
            ],
            every_field,
        ),
    ];
    for (n, (case, args, fill)) in cases.into_iter().enumerate() {
        let id = planted(&env, &api, &web, args, fill);
        let original = only_inbox_message(&web);
        assert_eq!(
            env.json(&web, &["show", &id])["sender"]["state"],
            "verified"
        );
        for protocol in ["oacp", "roo"] {
            let out_dir = env.path().join(format!("out-{protocol}-{n}"));
            std::fs::create_dir(&out_dir).unwrap();
            let written = env.json(
                &web,
                &["export", protocol, &id, "--out", out_dir.to_str().unwrap()],
            );
            let path = written[0]["path"].as_str().unwrap();
            let docs = env.repo(&format!("docs-{protocol}-{n}"));
            let imported = env.json(&docs, &["import", protocol, path]);
            assert_eq!(
                imported[0]["status"], "imported",
                "{case} {protocol}: {imported}"
            );
            assert_eq!(
                only_inbox_message(&docs),
                original,
                "{case} through {protocol}:\n{}",
                std::fs::read_to_string(path).unwrap()
            );
            let shown = env.json(&docs, &["show", &id]);
            // Signed by api's key for web: genuine, though not for docs.
            assert_eq!(
                shown["sender"]["state"], "unverified",
                "{case} {protocol}: {shown}"
            );
            assert!(
                shown["sender"]["reason"]
                    .as_str()
                    .unwrap()
                    .starts_with("signed for web"),
                "{shown}"
            );
            assert_eq!(
                shown["message"]["message"]["handoff_details"],
                original["message"]["handoff_details"]
            );
        }
        std::fs::remove_file(web.join(".aea").join(inbox_files(&web).pop().unwrap())).unwrap();
    }
}

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/bridge-corpus");

/// A folder of foreign files for `aea import`: `held` (imported once
/// before), `new` and `broken`, copied from the corpus under `names`.
fn import_folder(
    env: &TestEnv,
    protocol: &str,
    names: [&str; 3],
    sources: [&str; 3],
) -> std::path::PathBuf {
    let dir = env.path().join(format!("{protocol}-in"));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, source) in names.into_iter().zip(sources) {
        let text = std::fs::read(Path::new(CORPUS).join(protocol).join(source)).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
    }
    dir
}

/// What `aea import` and `aea export` print, human and `--json`: one file
/// imported, one already held, one refused (exit 6); exported files.
#[test]
fn import_and_export_output() {
    let env = TestEnv::new();
    let fixed = Fixed::new(&env);
    let oacp = import_folder(
        &env,
        "oacp",
        ["a-held.yaml", "b-new.yaml", "c-broken.yaml"],
        [
            "valid/reference-example.yaml",
            "valid/handoff.yaml",
            "broken/bad-priority.yaml",
        ],
    );
    let roo = import_folder(
        &env,
        "roo",
        ["to-architect.md", "to-tester.md", "to-badprio.md"],
        [
            "valid/to-architect.md",
            "valid/to-tester.md",
            "broken/to-badprio.md",
        ],
    );
    for (protocol, dir, held) in [
        ("oacp", &oacp, "a-held.yaml"),
        ("roo", &roo, "to-architect.md"),
    ] {
        for json in [false, true] {
            let repo = env.repo(&format!(
                "{protocol}-{}",
                if json { "json" } else { "human" }
            ));
            fixed.ok(
                &repo,
                &["import", protocol, dir.join(held).to_str().unwrap()],
            );
            let mut args = vec!["import", protocol, dir.to_str().unwrap()];
            if json {
                args.insert(0, "--json");
            }
            insta::assert_snapshot!(
                format!("import_{protocol}{}", if json { "_json" } else { "" }),
                fixed.render(&repo, &args)
            );
        }
    }

    let api = env.repo("api");
    let web = env.repo("web");
    let id = fixed.ok(
        &api,
        &[
            "--json",
            "send",
            "--to",
            "web",
            "--type",
            "question",
            "--priority",
            "P1",
            "--subject",
            "Which port?",
            "--body",
            "8080 or 9090?",
        ],
    );
    let id: serde_json::Value = serde_json::from_str(&id).unwrap();
    let id = id["message_id"].as_str().unwrap();
    for protocol in ["oacp", "roo"] {
        for json in [false, true] {
            let out = env.path().join(format!("{protocol}-out-{json}"));
            std::fs::create_dir(&out).unwrap();
            let mut args = vec!["export", protocol, id, "--out", out.to_str().unwrap()];
            if json {
                args.insert(0, "--json");
            }
            insta::assert_snapshot!(
                format!("export_{protocol}{}", if json { "_json" } else { "" }),
                fixed.render(&web, &args)
            );
        }
    }
}

/// A handoff as `oacp send --sign` lays it out (oacp-cli 0.5.4): plain and
/// quoted scalars, a literal body, the `auth` trailer as the last line.
const SIGNED_HANDOFF: &str = "id: msg-20261127084311-codex-bbe1\nfrom: codex\nto: web\n\
type: handoff\npriority: P1\ncreated_at_utc: \"2026-11-27T08:43:11Z\"\n\
conversation_id: conv-20261127-codex-505364\nsubject: \"Take \\\"over\\\" the release\"\n\
body: |\n  Branch release-2, CI is red.\n  key: v # not a comment\n\
auth: \"eyJzaWduYXR1cmVzIjpbeyJwcm90ZWN0ZWQiOiJleUpoYkdjaU9pSkZaRVJUUVNJc0luUjVjQ0k2SW05aFkzQXRiV1Z6YzJGblpTdDVZVzFzSW4wIiwic2lnbmF0dXJlIjoiQkdZbElHNVZuSjJLaUt0YlhMREdIV0dqdjdqV09EeTdQbEtsNXZMSWwxWkFXZmV3c1JUMllCQ2l0MkdxcWJSelZzNUdXajdKN3BEdlZYN1hXYkFYQmcifV19\"\n";

/// `text` imported into `repo` from a folder of its own; the message id.
fn import_one_file(env: &TestEnv, repo: &Path, name: &str, text: &str) -> String {
    let dir = env.path().join(format!("from-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), text).unwrap();
    let report = env.json(repo, &["import", "oacp", dir.join(name).to_str().unwrap()]);
    assert_eq!(report[0]["status"], "imported", "{report}");
    report[0]["message_id"].as_str().unwrap().to_string()
}

fn oacp_files(dir: &Path) -> Vec<serde_json::Map<String, serde_json::Value>> {
    names(dir)
        .iter()
        .filter(|n| Path::new(n).extension().is_some_and(|e| e == "yaml"))
        .map(|n| {
            aea::bridge::oacp::fields_of(&std::fs::read_to_string(dir.join(n)).unwrap()).unwrap()
        })
        .collect()
}

#[test]
fn a_signed_oacp_file_is_exported_byte_for_byte() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let id = import_one_file(&env, &web, "signed.yaml", SIGNED_HANDOFF);
    let out_dir = env.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let written = env.json(
        &web,
        &["export", "oacp", &id, "--out", out_dir.to_str().unwrap()],
    );
    let path = written[0]["path"].as_str().unwrap();
    // The bytes OACP signed, `auth` still the last line.
    assert_eq!(std::fs::read_to_string(path).unwrap(), SIGNED_HANDOFF);
    // And `aea show` tells the signature apart from the mail.
    let shown = env.json(&web, &["show", &id]);
    assert!(shown.to_string().contains("eyJzaWduYXR1cmVz"), "{shown}");
}

#[test]
fn an_oacp_file_too_large_to_keep_twice_is_imported_from_its_fields() {
    let env = TestEnv::new();
    let web = env.repo("web");
    // Under the 1 MiB limit as a file, over it with a copy of itself.
    let keys = "src/file.rs\n".repeat(60_000);
    let text = format!(
        "id: big-1\nfrom: codex\nto: web\ntype: notification\npriority: P3\n\
         created_at_utc: \"2026-11-27T08:43:11Z\"\nsubject: big\nbody: b\n\
         context_keys: |\n{}",
        keys.lines().fold(String::new(), |mut s, l| {
            let _ = writeln!(s, "  {l}");
            s
        })
    );
    assert!(text.len() < 1024 * 1024 && text.len() > 600 * 1024);
    let dir = env.path().join("big");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("big.yaml"), &text).unwrap();
    let report = env.json(&web, &["import", "oacp", dir.to_str().unwrap()]);
    assert_eq!(report[0]["status"], "imported", "{report}");
    assert!(
        report[0]["reason"]
            .as_str()
            .unwrap()
            .contains("without the copy of its file"),
        "{report}"
    );
    let out_dir = env.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    env.json(
        &web,
        &[
            "export",
            "oacp",
            "big-1",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    let exported = oacp_files(&out_dir);
    let original = aea::bridge::oacp::fields_of(&text).unwrap();
    assert_eq!(exported, vec![original]);
}

#[test]
fn a_reply_to_oacp_mail_takes_the_type_oacp_expects() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let codex = oacp_agent(&env, &web, "codex");
    let inbox = codex.join("inbox");

    // A handoff is answered `handoff_complete`; the AEA reply stays a response.
    let id = import_one_file(&env, &web, "handoff.yaml", SIGNED_HANDOFF);
    env.ok(&web, &["approve", &id]);
    env.ok(&web, &["reply", &id, "--body", "Released; CI green."]);
    let files = oacp_files(&inbox);
    assert_eq!(files.len(), 1, "{files:?}");
    let reply = &files[0];
    assert_eq!(reply["type"], "handoff_complete", "{reply:?}");
    assert_eq!(reply["to"], "codex");
    assert_eq!(reply["parent_message_id"], id.as_str());
    assert_eq!(reply["conversation_id"], "conv-20261127-codex-505364");
    assert_eq!(
        aea::bridge::oacp::oacp_problems(reply),
        Vec::<String>::new()
    );
    let sent = env.json(&web, &["sent"]).to_string();
    assert!(sent.contains("response"), "{sent}");

    // A review request is answered `review_feedback`, or as the replier says.
    let review = |n: u32| {
        format!(
            "id: rr-{n}\nfrom: codex\nto: web\ntype: review_request\npriority: P2\n\
             created_at_utc: \"2026-11-27T09:00:0{n}Z\"\nsubject: \"PR {n}\"\nbody: \"Please review.\"\n"
        )
    };
    for (n, extra, want) in [
        (1, None, "review_feedback"),
        (2, Some("review_lgtm"), "review_lgtm"),
        (3, Some("notification"), "notification"),
    ] {
        let id = import_one_file(&env, &web, &format!("rr-{n}.yaml"), &review(n));
        env.ok(&web, &["approve", &id]);
        let mut args = vec!["reply", id.as_str(), "--body", "Looks fine."];
        if let Some(kind) = extra {
            args.extend(["--oacp-type", kind]);
        }
        env.ok(&web, &args);
        let reply = oacp_files(&inbox)
            .into_iter()
            .find(|f| f["parent_message_id"] == id.as_str())
            .unwrap();
        assert_eq!(reply["type"], want, "{reply:?}");
        assert_eq!(
            aea::bridge::oacp::oacp_problems(&reply),
            Vec::<String>::new()
        );
    }
}

#[test]
fn oacp_type_is_refused_when_unknown_hostile_or_going_nowhere() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let api = env.repo("api");
    let codex = oacp_agent(&env, &web, "codex");
    let inbox = codex.join("inbox");
    let before = snapshot(&codex);

    for bad in [
        "handoff_done",
        "handoff\nfrom: evil",
        "\u{1b}[31mreview_lgtm",
        "; rm -rf /",
    ] {
        let out = env.run(
            &web,
            &[
                "send",
                "--to",
                "codex",
                "--type",
                "update",
                "--subject",
                "s",
                "--body",
                "b",
                "--oacp-type",
                bad,
            ],
        );
        assert_eq!(code(&out), 2, "{bad:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("handoff_complete"), "lists the types: {err}");
        assert!(!err.contains('\u{1b}'), "{err:?}");
    }
    assert_eq!(snapshot(&codex), before, "nothing written");

    // A type for mail that reaches no OACP agent.
    let out = env.run(
        &web,
        &[
            "send",
            "--to",
            "api",
            "--type",
            "update",
            "--subject",
            "s",
            "--body",
            "b",
            "--oacp-type",
            "notification",
        ],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no recipient is one"),
        "{}",
        stderr(&out)
    );
    assert!(inbox_files(&api).is_empty());
    // A point-to-point type to two agents.
    oacp_agent(&env, &web, "claude");
    let out = env.run(
        &web,
        &[
            "send",
            "--to",
            "codex,claude",
            "--type",
            "update",
            "--subject",
            "s",
            "--body",
            "b",
            "--oacp-type",
            "handoff_complete",
        ],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(oacp_files(&inbox).is_empty());

    // One that fits goes out as named.
    env.ok(
        &web,
        &[
            "send",
            "--to",
            "codex",
            "--type",
            "update",
            "--subject",
            "Done: x",
            "--body",
            "b",
            "--oacp-type",
            "notification",
        ],
    );
    let files = oacp_files(&inbox);
    assert_eq!(files.len(), 1);
    assert_eq!(files[0]["type"], "notification");

    // A reply to an AEA agent has no OACP type to take.
    let question = env.question(&api, "web", "Which port?");
    let out = env.run(
        &web,
        &[
            "reply",
            &question,
            "--body",
            "8080",
            "--oacp-type",
            "follow_up",
        ],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("not one"), "{}", stderr(&out));
}

#[test]
fn a_handoff_claimed_by_an_unregistered_sender_gets_no_reply() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let codex = oacp_agent(&env, &web, "codex");
    // `claude` is registered nowhere: a file saying it is from claude,
    // handing work over, has no return address.
    let text = SIGNED_HANDOFF.replace("codex", "claude");
    let id = import_one_file(&env, &web, "claude.yaml", &text);
    let _ = env.run(&web, &["approve", &id]);
    let before = snapshot(&env.path().join("oacp"));
    for extra in [&[][..], &["--oacp-type", "handoff_complete"][..]] {
        let mut args = vec!["reply", id.as_str(), "--body", "done"];
        args.extend(extra);
        let out = env.run(&web, &args);
        assert_ne!(code(&out), 0, "{}", stdout(&out));
        let said = format!("{}{}", stdout(&out), stderr(&out));
        assert!(said.contains("cannot reply to claude"), "{said}");
    }
    assert_eq!(
        snapshot(&env.path().join("oacp")),
        before,
        "nothing written"
    );
    assert!(oacp_files(&codex.join("inbox")).is_empty());
}

#[test]
fn an_oacp_file_is_read_as_oacp_reads_it_and_never_as_two_messages() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let head = "id: {id}\nfrom: codex\nto: web\ntype: notification\npriority: P2\n\
                created_at_utc: \"2026-11-27T08:43:11Z\"\n";
    // OACP's reader (PyYAML's BaseLoader) takes a tag for nothing and
    // `yes` for text: so does `aea show`, and so the export vouches for it.
    let tagged = format!(
        "{}subject: !!binary aGlkZGVu\nbody: yes\n",
        head.replace("{id}", "tagged-1")
    );
    let id = import_one_file(&env, &web, "tagged.yaml", &tagged);
    let shown = env.json(&web, &["show", &id]);
    assert_eq!(
        shown["message"]["message"]["subject"], "aGlkZGVu",
        "{shown}"
    );
    assert_eq!(shown["message"]["message"]["body"], "yes", "{shown}");

    // U+2028 ends a line for OACP's reader only: this file is a handoff
    // to `other` for OACP, a notification to us for a YAML 1.2 reader.
    // Refused, left where it lies, the reason said on one line.
    let hidden = format!(
        "{}subject: harmless\nbody: |\n  fine\u{2028}type: handoff\u{2028}to: other\n",
        head.replace("{id}", "hidden-1")
    );
    let dir = env.path().join("hidden");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("h.yaml"), &hidden).unwrap();
    let out = env.run(&web, &["--json", "import", "oacp", dir.to_str().unwrap()]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report[0]["status"], "refused", "{report}");
    assert!(
        report[0]["reason"].as_str().unwrap().contains("U+2028"),
        "{report}"
    );
    assert_eq!(std::fs::read_to_string(dir.join("h.yaml")).unwrap(), hidden);
    let text = stdout(&env.run(&web, &["import", "oacp", dir.to_str().unwrap()]));
    assert!(text.contains("refused"), "{text}");
    assert!(!text.contains('\u{2028}'), "{text:?}");
}

#[test]
fn a_handoff_goes_to_one_agent_however_its_oacp_type_is_named() {
    // `--oacp-type handoff` to two agents is refused; the same type named
    // in `--context` ({"oacp": {"type": …}}, which the OACP file is
    // written from) must be too, or two OACP agents each take the work.
    let env = TestEnv::new();
    let web = env.repo("web");
    let codex = oacp_agent(&env, &web, "codex");
    let claude = oacp_agent(&env, &web, "claude");
    let before = (snapshot(&codex), snapshot(&claude));
    for kind in ["handoff", "handoff_complete"] {
        let context = format!(r#"{{"oacp": {{"type": "{kind}"}}}}"#);
        let out = env.run(
            &web,
            &[
                "send",
                "--to",
                "codex,claude",
                "--type",
                "update",
                "--subject",
                "take it",
                "--body",
                "both of you",
                "--context",
                &context,
            ],
        );
        assert_eq!(code(&out), 2, "{kind}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("goes to one agent"),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(
        (snapshot(&codex), snapshot(&claude)),
        before,
        "nothing written"
    );
    // To one agent it goes, as that type.
    env.ok(
        &web,
        &[
            "send",
            "--to",
            "codex",
            "--type",
            "update",
            "--subject",
            "take it",
            "--body",
            "you",
            "--context",
            r#"{"oacp": {"type": "handoff"}}"#,
        ],
    );
    assert_eq!(oacp_files(&codex.join("inbox"))[0]["type"], "handoff");
}

#[test]
fn oacp_fields_a_sender_names_in_its_context_never_make_an_invalid_file() {
    // `--context '{"oacp": {...}}'` from a careless teammate: OACP fields
    // its validator refuses (a channel with spaces, a PR that is no
    // number, telemetry on a notification, an unknown autonomy hint)
    // travel in the patch; the file OACP reads still validates, and the
    // message comes back whole.
    let env = TestEnv::new();
    let web = env.repo("web");
    let mirror = env.repo("mirror");
    let codex = oacp_agent(&env, &web, "codex");
    let context = r#"{"oacp": {"channel": "bad channel!", "related_pr": "not a number",
        "turns": "x", "model": "m", "autonomy_hint": "weird", "related_packet": "packets/p1"}}"#;
    let id = env.send(
        &web,
        "codex",
        &[
            "--type",
            "update",
            "--subject",
            "s",
            "--body",
            "b",
            "--context",
            context,
        ],
    );
    let files = oacp_files(&codex.join("inbox"));
    assert_eq!(files.len(), 1);
    assert_eq!(
        aea::bridge::oacp::oacp_problems(&files[0]),
        Vec::<String>::new(),
        "{:?}",
        files[0]
    );
    // What validates is written as a field.
    assert_eq!(files[0]["related_packet"], "packets/p1");
    // Imported elsewhere: the context as sent.
    env.ok(
        &mirror,
        &["import", "oacp", codex.join("inbox").to_str().unwrap()],
    );
    let shown = env.json(&mirror, &["show", &id]);
    let sent: serde_json::Value = serde_json::from_str(context).unwrap();
    assert_eq!(shown["message"]["message"]["context"], sent, "{shown}");
}

#[test]
fn a_file_changed_after_its_import_is_said_to_differ_never_taken_for_the_same() {
    // The same id and sender, one byte changed (the body): not imported
    // over what the inbox holds, and not reported as the same mail either.
    let env = TestEnv::new();
    let web = env.repo("web");
    let dir = env.path().join("twice");
    std::fs::create_dir(&dir).unwrap();
    let file = dir.join("a.yaml");
    std::fs::write(&file, SIGNED_HANDOFF).unwrap();
    let first = env.json(&web, &["import", "oacp", file.to_str().unwrap()]);
    assert_eq!(first[0]["status"], "imported", "{first}");
    let again = env.json(&web, &["import", "oacp", file.to_str().unwrap()]);
    assert_eq!(again[0]["status"], "already-held", "{again}");
    assert!(again[0].get("reason").is_none(), "{again}");

    std::fs::write(&file, SIGNED_HANDOFF.replace("CI is red", "CI is rod")).unwrap();
    let out = env.run(&web, &["--json", "import", "oacp", file.to_str().unwrap()]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report[0]["status"], "already-held", "{report}");
    assert!(
        report[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("differs")),
        "{report}"
    );
    assert_eq!(inbox_files(&web).len(), 1);
    let shown = env.json(&web, &["show", "msg-20261127084311-codex-bbe1"]);
    assert!(
        shown["message"]["message"]["body"]
            .as_str()
            .unwrap()
            .contains("CI is red"),
        "{shown}"
    );
}

/// An id is held per sender: a file from one OACP sender that takes the
/// id another sender's mail will carry does not keep that mail out.
#[test]
fn a_file_that_takes_another_senders_id_does_not_keep_its_mail_out() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let dir = env.path().join("oacp-in");
    std::fs::create_dir(&dir).unwrap();
    let planted = dir.join("20261127084000_mallory_notification_0001.yaml");
    std::fs::write(
        &planted,
        "id: msg-20261127084311-codex-bbe1\nfrom: mallory\nto: web\ntype: notification\n\
         priority: P3\ncreated_at_utc: \"2026-11-27T08:40:00Z\"\nsubject: first\nbody: x\n",
    )
    .unwrap();
    let first = env.json(&web, &["import", "oacp", planted.to_str().unwrap()]);
    assert_eq!(first[0]["status"], "imported", "{first}");
    let real = dir.join("20261127084311_codex_handoff_bbe1.yaml");
    std::fs::write(&real, SIGNED_HANDOFF).unwrap();
    let second = env.json(&web, &["import", "oacp", real.to_str().unwrap()]);
    assert_eq!(second[0]["status"], "imported", "{second}");
    assert_eq!(inbox_files(&web).len(), 2);
    // Each sender's file is still held as its own afterwards.
    for file in [&planted, &real] {
        let again = env.json(&web, &["import", "oacp", file.to_str().unwrap()]);
        assert_eq!(again[0]["status"], "already-held", "{again}");
        assert!(again[0].get("reason").is_none(), "{again}");
    }
}

#[test]
fn another_agents_signed_oacp_file_planted_in_a_message_is_never_exported_as_its_own() {
    // An aea sender (api, signing its mail) puts in its message's context
    // the bytes of a file codex signed for OACP, and the OACP fields of
    // that file. Exported, the message is written from its own fields:
    // codex's signed bytes never go out as api's message.
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = planted(
        &env,
        &api,
        &web,
        &["--type", "handoff", "--subject", "Take over", "--body", "b"],
        |value| {
            value["message"]["context"] = serde_json::json!({
                "oacp_source": SIGNED_HANDOFF,
                "oacp": {"type": "handoff", "priority": "P1",
                         "auth": "eyJzaWduYXR1cmVzIjpbXX0"},
            });
        },
    );
    let out_dir = env.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let written = env.json(
        &web,
        &["export", "oacp", &id, "--out", out_dir.to_str().unwrap()],
    );
    let text = std::fs::read_to_string(written[0]["path"].as_str().unwrap()).unwrap();
    assert_ne!(text, SIGNED_HANDOFF);
    assert!(!text.lines().any(|l| l.starts_with("auth:")), "{text}");
    let fields = aea::bridge::oacp::fields_of(&text).unwrap();
    assert_eq!(fields["from"], "api", "{text}");
    assert_eq!(fields["id"], id.as_str(), "{text}");
    assert_eq!(
        aea::bridge::oacp::oacp_problems(&fields),
        Vec::<String>::new()
    );
}
