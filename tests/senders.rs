//! A sender id is a claim until the receiver verified it (SPEC §15.2):
//! what the receiver grants by name — `trust.allow_senders`, a rule's
//! `from`, reading attachments from the sender's repository — goes to
//! verified senders only. Real binary, hostile files planted as any
//! process that can write to the inbox could.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::*;

fn sha256(bytes: &[u8]) -> String {
    aea::fsutil::sha256_hex(bytes)
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
    plant_json(
        &web,
        "message-20261122T100000000Z-from-ci-bot-00000001.json",
        &claim,
    );
    let it = env.listed(&web, "claim-1").expect("listed");
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
    let it = env.listed(&web, &id).expect("listed");
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
    plant_json(
        &web,
        "message-20261122T100000000Z-from-ci-legacy-00000002.json",
        &unsigned,
    );
    let it = env.listed(&web, "legacy-1").expect("listed");
    assert_eq!(it["sender"], "unverified");
    assert_eq!(it["decision"]["action"], "auto_respond", "{it}");
}

/// Everything one `aea attachment` run printed, on both streams.
fn both(out: &std::process::Output) -> String {
    format!("{}\n{}", stdout(out), stderr(out))
}

#[test]
fn an_unverified_sender_cannot_name_a_file_of_the_receivers_as_an_attachment() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let planted = env.path().join("private-notes.txt");
    std::fs::write(&planted, b"the receiver's own notes\n").unwrap();
    let real = sha256(b"the receiver's own notes\n");
    let inside_root = planted
        .to_str()
        .unwrap()
        .trim_start_matches('/')
        .to_string();
    let passwd = std::fs::read("/etc/passwd").unwrap();
    // `from.repo_path: "/"`: every file the receiver can read is "inside".
    // One attachment with the right digest (to copy the file out), the
    // others with a wrong one (to learn the file's digest from the error).
    let attachments = json!([
        {"path": inside_root, "sha256": real},
        {"path": inside_root, "sha256": "0".repeat(64)},
        {"path": "etc/passwd", "sha256": "1".repeat(64)},
    ]);
    plant_json(
        &web,
        "message-20261122T100000000Z-from-mallory-00000003.json",
        &message("update", "mallory", "/", "steal-1", &attachments),
    );
    let listed = env.run(&web, &["--json", "attachment", "steal-1"]);
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    let value: Value = serde_json::from_str(stdout(&listed).trim()).unwrap();
    for a in value["attachments"].as_array().unwrap() {
        assert_eq!(a["available"], false, "{a}");
        assert!(
            a["reason"].as_str().unwrap().contains("not verified"),
            "{a}"
        );
    }
    let mut seen = both(&listed);
    seen.push_str(&both(&env.run(&web, &["attachment", "steal-1"])));
    for n in ["1", "2", "3"] {
        let out = env.run(&web, &["attachment", "steal-1", n, "--out", "got"]);
        assert_eq!(code(&out), 5, "attachment {n}: {}", both(&out));
        assert!(!web.join("got").exists(), "attachment {n} was written");
        // Attachment 1 names the file's digest itself; 2 and 3 do not, so
        // their refusal must not tell it.
        if n != "1" {
            assert!(!both(&out).contains(&real), "{}", both(&out));
        }
        seen.push_str(&both(&out));
    }
    assert!(!seen.contains(&sha256(&passwd)), "{seen}");
    assert!(!seen.contains("receiver's own notes"), "{seen}");
}

#[test]
fn a_verified_sender_is_read_from_its_registered_folder_never_the_claimed_one() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    std::fs::write(api.join("a.txt"), b"from api\n").unwrap();
    let id = env.send(
        &api,
        "web",
        &["--type", "update", "--subject", "file", "--attach", "a.txt"],
    );
    // Read from api's registered folder: its kept copy, then the file.
    let listed = env.json(&web, &["attachment", &id]);
    assert_eq!(listed["attachments"][0]["source"], "sender_repository");
    env.ok(&web, &["attachment", &id, "--out", "one.txt"]);
    assert_eq!(std::fs::read(web.join("one.txt")).unwrap(), b"from api\n");
    std::fs::remove_dir_all(env.state(&api).join("attachments")).unwrap();
    env.ok(&web, &["attachment", &id, "--out", "two.txt"]);
    assert_eq!(std::fs::read(web.join("two.txt")).unwrap(), b"from api\n");

    // The genuine sender, signing a message that claims another folder
    // ("/") and names a file of the receiver's there with its right
    // digest: the registered folder is read, where there is no such file.
    let planted = env.path().join("web-notes.txt");
    std::fs::write(&planted, b"web's notes\n").unwrap();
    let file = inbox_files(&web)
        .into_iter()
        .map(|n| web.join(".aea").join(n))
        .find(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(&id)))
        .unwrap();
    let mut value: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    value["from"]["repo_path"] = json!("/");
    value["message"]["attachments"] = json!([{
        "path": planted.to_str().unwrap().trim_start_matches('/'),
        "sha256": sha256(b"web's notes\n"),
    }]);
    env.resign(&mut value);
    std::fs::write(&file, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
    assert_eq!(env.listed(&web, &id).expect("listed")["sender"], "verified");
    let out = env.run(&web, &["attachment", &id, "--out", "three.txt"]);
    assert_eq!(code(&out), 5, "{}", both(&out));
    assert!(!web.join("three.txt").exists());

    // A wrong digest for a file in api's own folder: refused, and the
    // file's own digest is not told.
    value["message"]["attachments"] = json!([{"path": "a.txt", "sha256": "2".repeat(64)}]);
    env.resign(&mut value);
    std::fs::write(&file, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
    let out = env.run(&web, &["attachment", &id, "--out", "four.txt"]);
    assert_eq!(code(&out), 5, "{}", both(&out));
    assert!(both(&out).contains("does not match"), "{}", both(&out));
    assert!(
        !both(&out).contains(&sha256(b"from api\n")),
        "{}",
        both(&out)
    );

    // A link in api's folder out of it, naming a file that exists and one
    // that does not: the listing tells them apart in no way.
    std::os::unix::fs::symlink(env.path(), api.join("out")).unwrap();
    value["message"]["attachments"] = json!([
        {"path": "out/web-notes.txt", "sha256": "3".repeat(64)},
        {"path": "out/no-such-file.txt", "sha256": "3".repeat(64)},
    ]);
    env.resign(&mut value);
    std::fs::write(&file, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
    let listed = env.json(&web, &["attachment", &id]);
    let reasons: Vec<&Value> = listed["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["reason"])
        .collect();
    assert_eq!(reasons.len(), 2, "{listed}");
    assert!(reasons[0].is_string(), "{listed}");
    assert_eq!(reasons[0], reasons[1], "{listed}");
}

#[test]
fn an_attachment_in_the_private_store_is_written_whoever_named_it() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let content = b"carried by sync\n";
    let digest = sha256(content);
    // What `aea sync` keeps once a blob verified: content by its digest.
    let store = env.state(&web).join("attachments");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(store.join(&digest), content).unwrap();
    plant_json(
        &web,
        "message-20261122T100000000Z-from-faraway-00000004.json",
        &message(
            "update",
            "faraway",
            "/",
            "store-1",
            &json!([{"path": "log.txt", "sha256": digest}]),
        ),
    );
    let listed = env.json(&web, &["attachment", "store-1"]);
    assert_eq!(listed["attachments"][0]["source"], "store");
    env.ok(&web, &["attachment", "store-1", "--out", "log.txt"]);
    assert_eq!(std::fs::read(web.join("log.txt")).unwrap(), content);
}
