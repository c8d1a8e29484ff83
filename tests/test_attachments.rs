//! Attachments that travel: the sender keeps a copy by SHA-256, `aea sync`
//! carries it next to the mail, the receiver keeps it only once it
//! verifies, and `aea attachment` writes it, verified, to a new file. Every
//! name, path and byte from the other side is hostile.

use crate::common::*;
use serde_json::Value;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Adds `files` to the tree at `git_ref` in the bare `remote`, as anyone
/// with push access can: the names there stay, a name given is replaced.
fn add_on_remote(remote: &Path, git_ref: &str, files: &[(&str, &[u8])]) {
    let mut listing = String::new();
    for line in stdout(&git(remote, &["ls-tree", git_ref])).lines() {
        let name = line.split('\t').nth(1).unwrap();
        if !files.iter().any(|(n, _)| *n == name) {
            let _ = writeln!(listing, "{line}");
        }
    }
    for (name, bytes) in files {
        let mut hash = Command::new("git")
            .args(["hash-object", "-w", "--stdin"])
            .current_dir(remote)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        hash.stdin.take().unwrap().write_all(bytes).unwrap();
        let blob = stdout(&output_within(hash, Duration::from_secs(60), "hash"));
        let _ = writeln!(listing, "100644 blob {}\t{name}", blob.trim());
    }
    let mut mktree = Command::new("git")
        .args(["mktree"])
        .current_dir(remote)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    mktree
        .stdin
        .take()
        .unwrap()
        .write_all(listing.as_bytes())
        .unwrap();
    let tree = stdout(&output_within(mktree, Duration::from_secs(30), "mktree"));
    let parent = stdout(&git(remote, &["rev-parse", git_ref]));
    let commit = stdout(&git(
        remote,
        &[
            "commit-tree",
            tree.trim(),
            "-p",
            parent.trim(),
            "-m",
            "forged",
        ],
    ));
    git(remote, &["update-ref", git_ref, commit.trim()]);
}

/// `aa` sends `bb` an update attaching `notes/log.txt` (`content`) and
/// pushes it; returns the message id.
fn send_with_attachment(env: &TestEnv, a: &Machine, content: &[u8]) -> String {
    std::fs::create_dir_all(a.repo.join("notes")).unwrap();
    std::fs::write(a.repo.join("notes/log.txt"), content).unwrap();
    let sent = a.json(
        env,
        &[
            "send",
            "--to",
            "bb",
            "--type",
            "update",
            "--subject",
            "the log",
            "--attach",
            "notes/log.txt",
        ],
    );
    a.ok(env, &["sync"]);
    sent["message_id"].as_str().unwrap().to_string()
}

/// The sender's copies gone: on another machine, only what sync carried
/// is there to read.
fn forget_on_sender(a: &Machine) {
    std::fs::remove_file(a.repo.join("notes/log.txt")).unwrap();
    std::fs::remove_dir_all(a.state.join("attachments")).unwrap();
}

#[test]
fn an_attachment_travels_by_sync_and_is_written_verified_on_the_other_machine() {
    let env = TestEnv::new();
    let remote = bare_remote(&env);
    let a = Machine::new(&env, "aa", &remote, &["bb"]);
    let b = Machine::new(&env, "bb", &remote, &["aa"]);
    let content = b"line 1\nstack trace\n\x00binary\xff";
    let digest = aea::fsutil::sha256_hex(content);
    let id = send_with_attachment(&env, &a, content);
    assert_eq!(
        std::fs::read(a.state.join("attachments").join(&digest)).unwrap(),
        content,
        "the sender keeps a copy by content"
    );
    let tree = stdout(&git(
        &remote,
        &["ls-tree", "--name-only", "refs/aea/mail/bb"],
    ));
    assert!(tree.contains(&format!("{digest}.blob")), "{tree}");
    forget_on_sender(&a);

    let got = b.json(&env, &["sync"]);
    assert_fits("sync", &got);
    assert_eq!(got["received"], serde_json::json!([id]));
    assert_eq!(got["attachments_received"], serde_json::json!([digest]));
    assert_eq!(
        std::fs::read(b.state.join("attachments").join(&digest)).unwrap(),
        content
    );

    let listed = b.json(&env, &["attachment", &id]);
    assert_fits("attachment", &listed);
    let first = &listed["attachments"][0];
    assert_eq!(first["path"], "notes/log.txt");
    assert_eq!(first["sha256"], digest.as_str());
    assert_eq!(first["available"], true);
    assert_eq!(first["source"], "store");
    assert_eq!(first["size"], content.len());

    let written = b.json(&env, &["attachment", &id, "--out", "got.bin"]);
    assert_fits("attachment-write", &written);
    assert_eq!(std::fs::read(b.repo.join("got.bin")).unwrap(), content);

    // An existing file is never overwritten.
    std::fs::write(b.repo.join("mine.txt"), b"keep me").unwrap();
    let out = b.run(&env, &["attachment", &id, "1", "--out", "mine.txt"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(stderr(&out).contains("not overwritten"), "{}", stderr(&out));
    assert_eq!(std::fs::read(b.repo.join("mine.txt")).unwrap(), b"keep me");
    // Nor a folder made for it.
    let out = b.run(&env, &["attachment", &id, "--out", "no/such/dir/x"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(!b.repo.join("no").exists());
    // Nothing of the content on the terminal.
    let shown = b.ok(&env, &["attachment", &id]);
    assert!(!shown.contains("stack trace"), "{shown}");
    assert!(shown.contains("available"), "{shown}");
}

#[test]
fn attachment_blobs_on_the_remote_that_do_not_verify_are_refused_and_never_stored() {
    let env = TestEnv::new();
    let remote = bare_remote(&env);
    let a = Machine::new(&env, "aa", &remote, &["bb"]);
    let b = Machine::new(&env, "bb", &remote, &["aa"]);
    let content = b"the real log\n";
    let digest = aea::fsutil::sha256_hex(content);
    let id = send_with_attachment(&env, &a, content);
    forget_on_sender(&a);
    // Someone with push access swaps the content, and adds blobs under a
    // name that is no digest and one over the limit.
    let big = vec![b'x'; 8 * 1024 * 1024 + 1];
    let big_name = format!("{}.blob", aea::fsutil::sha256_hex(&big));
    add_on_remote(
        &remote,
        "refs/aea/mail/bb",
        &[
            (&format!("{digest}.blob"), b"rm -rf /\n"),
            ("not-a-digest.blob", content),
            (&big_name, &big),
            // Content no message names: not kept, not worth a warning.
            (
                &format!("{}.blob", aea::fsutil::sha256_hex(b"unasked")),
                b"unasked",
            ),
        ],
    );

    let out = b.run(&env, &["--json", "sync"]);
    assert_eq!(code(&out), 6, "refused blobs need a look: {}", stderr(&out));
    let got: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_fits("sync", &got);
    assert_eq!(got["received"], serde_json::json!([id]));
    let refused: Vec<&str> = got["attachments_refused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(refused.len(), 3, "{refused:?}");
    assert!(
        refused
            .iter()
            .any(|r| r.starts_with(&format!("{digest}.blob: the content's SHA-256")))
    );
    assert!(
        refused
            .iter()
            .any(|r| r.starts_with("not-a-digest.blob: the name"))
    );
    assert!(refused.iter().any(|r| r.contains("over the 8388608 byte")));
    assert!(got.get("attachments_received").is_none(), "{got}");
    assert!(
        !b.state.join("attachments").exists()
            || std::fs::read_dir(b.state.join("attachments"))
                .unwrap()
                .next()
                .is_none(),
        "nothing stored"
    );
    // Reported once, not on every sync.
    let again = b.json(&env, &["sync"]);
    assert!(again.get("attachments_refused").is_none(), "{again}");

    // And the attachment cannot be written: nothing matches its SHA-256.
    let listed = b.json(&env, &["attachment", &id]);
    assert_eq!(listed["attachments"][0]["available"], false);
    let out = b.run(&env, &["attachment", &id, "--out", "got.txt"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(!b.repo.join("got.txt").exists());
}

/// On one machine: `api` attaches `name` and `web` receives it; returns
/// the message id.
fn local_send(env: &TestEnv, api: &Path, name: &str, content: &[u8]) -> String {
    std::fs::write(api.join(name), content).unwrap();
    env.send(
        api,
        "web",
        &["--type", "update", "--subject", "file", "--attach", name],
    )
}

#[test]
fn an_attachment_on_the_same_machine_is_read_from_the_sender_repository_and_verified() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = local_send(&env, &api, "a.txt", b"from api\n");
    // Changed after it was sent: the copy the sender kept is what was sent.
    std::fs::write(api.join("a.txt"), b"changed\n").unwrap();
    let listed = env.json(&web, &["attachment", &id]);
    assert_eq!(listed["attachments"][0]["source"], "sender_repository");
    env.ok(&web, &["attachment", &id, "--out", "a.txt"]);
    assert_eq!(std::fs::read(web.join("a.txt")).unwrap(), b"from api\n");

    // Without that copy, the changed file is refused, nothing written.
    std::fs::remove_dir_all(env.state(&api).join("attachments")).unwrap();
    let out = env.run(&web, &["attachment", &id, "--out", "b.txt"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("changed since it was sent"),
        "{}",
        stderr(&out)
    );
    assert!(!web.join("b.txt").exists());

    // The file itself, as sent, is read from the sender's repository.
    std::fs::write(api.join("a.txt"), b"from api\n").unwrap();
    env.ok(&web, &["attachment", &id, "--out", "c.txt"]);
    assert_eq!(std::fs::read(web.join("c.txt")).unwrap(), b"from api\n");
}

#[test]
fn a_hostile_attachment_path_never_reads_outside_the_sender_repository() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let secret = env.path().join("secret.txt");
    std::fs::write(&secret, b"top secret\n").unwrap();
    // A symlink that leads out, put where a sent file was, with the same
    // content so that only where it leads can refuse it.
    let id = local_send(&env, &api, "leak", b"top secret\n");
    std::fs::remove_dir_all(env.state(&api).join("attachments")).unwrap();
    std::fs::remove_file(api.join("leak")).unwrap();
    std::os::unix::fs::symlink(&secret, api.join("leak")).unwrap();
    let out = env.run(&web, &["attachment", &id, "--out", "got"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("missing, or a symbolic link out of it"),
        "{}",
        stderr(&out)
    );
    assert!(!web.join("got").exists());

    // A message whose path climbs out, or is absolute, with the SHA-256
    // of what is there.
    let file = &web.join(".aea").join(file_of(&web, &id));
    for hostile in [
        "../secret.txt",
        "../../secret.txt",
        secret.to_str().unwrap(),
    ] {
        let mut value: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        value["message"]["attachments"] = serde_json::json!([{"path": hostile, "sha256": aea::fsutil::sha256_hex(b"top secret\n")}]);
        env.resign(&mut value);
        std::fs::write(file, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
        let listed = env.ok(&web, &["attachment", &id]);
        assert!(listed.contains("not available"), "{hostile}: {listed}");
        assert!(!listed.contains("top secret"), "{listed}");
        let out = env.run(&web, &["attachment", &id, "--out", "got"]);
        assert_eq!(code(&out), 5, "{hostile}: {}", stderr(&out));
        assert!(!web.join("got").exists(), "{hostile}");
        assert!(!stdout(&out).contains("top secret"));
    }
}

#[test]
fn an_attachment_over_the_limit_is_refused_at_send_time() {
    let env = TestEnv::new();
    let api = env.repo("api");
    env.repo("web");
    std::fs::write(api.join("big.bin"), vec![0u8; 8 * 1024 * 1024 + 1]).unwrap();
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
            "big.bin",
        ],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("attachment limit"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("hint:"), "{}", stderr(&out));
    // Nothing of it was kept: the sender's store has no copy.
    let store = env.state(&api).join("attachments");
    assert!(
        std::fs::read_dir(&store).map_or(true, |mut d| d.next().is_none()),
        "{}",
        store.display()
    );
}

#[test]
fn a_symlinked_attachment_store_is_never_written_through() {
    let env = TestEnv::new();
    let remote = bare_remote(&env);
    let a = Machine::new(&env, "aa", &remote, &["bb"]);
    let b = Machine::new(&env, "bb", &remote, &["aa"]);
    send_with_attachment(&env, &a, b"log\n");
    let outside = env.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    // In place of the private store (the sync has not made it yet).
    let store = b.state.join("attachments");
    assert!(!store.exists());
    std::os::unix::fs::symlink(&outside, &store).unwrap();
    let out = b.run(&env, &["sync"]);
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(stderr(&out).contains("attachments"), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

/// A remote full of blobs just under the limit (each compresses to almost
/// nothing on the wire) must not make a sync hold them all in memory: a
/// sync reads at most one blob at a time. Run with its data segment capped
/// well under what the blobs add up to.
#[test]
fn many_blobs_on_the_remote_are_never_held_in_memory_at_once() {
    let env = TestEnv::new();
    let remote = bare_remote(&env);
    // No delta search on the remote's side: the test is about aea.
    git(&remote, &["config", "pack.window", "0"]);
    let a = Machine::new(&env, "aa", &remote, &["bb"]);
    let b = Machine::new(&env, "bb", &remote, &["aa"]);
    let id = send_with_attachment(&env, &a, b"the real log\n");
    let blobs: Vec<(String, Vec<u8>)> = (0..40u8)
        .map(|i| {
            let mut bytes = vec![b'x'; 8 * 1024 * 1024 - 64];
            bytes[0] = i;
            (format!("{}.blob", aea::fsutil::sha256_hex(&bytes)), bytes)
        })
        .collect();
    let named: Vec<(&str, &[u8])> = blobs
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    add_on_remote(&remote, "refs/aea/mail/bb", &named);

    // The same command, its data segment capped (`ulimit -d`, KiB) by a shell.
    let base = b.cmd(&env);
    let mut sync = Command::new("sh");
    sync.env_clear()
        .args(["-c", "ulimit -d 163840 && exec \"$0\" \"$@\""])
        .arg(base.get_program())
        .args(["--json", "sync"])
        .current_dir(base.get_current_dir().unwrap());
    for (key, value) in base.get_envs() {
        if let Some(value) = value {
            sync.env(key, value);
        }
    }
    let out = output_within(
        sync.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
        Duration::from_secs(120),
        "sync",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let got: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(got["received"], serde_json::json!([id]));
}

/// A message may name thousands of attachments (1 MiB holds ~10,000), each
/// a large file in the sender's repository: listing them must not read
/// and hash every one, or `aea attachment REF` runs for hours.
#[test]
fn listing_a_message_with_thousands_of_attachments_finishes_quickly() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let big: Vec<u8> = (0..4 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let id = local_send(&env, &api, "big.bin", &big);
    let file = &web.join(".aea").join(file_of(&web, &id));
    let mut value: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let one = value["message"]["attachments"][0].clone();
    value["message"]["attachments"] = Value::Array(vec![one; 2000]);
    env.resign(&mut value);
    std::fs::write(file, serde_json::to_vec(&value).unwrap()).unwrap();

    let started = std::time::Instant::now();
    let child = env
        .cmd(&web)
        .args(["--json", "attachment", &id])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = output_within(child, Duration::from_secs(60), "attachment listing");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    let listed: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_fits("attachment", &listed);
    let all = listed["attachments"].as_array().unwrap();
    assert_eq!(all.len(), 2000, "every one is listed");
    assert_eq!(all[0]["available"], true);
    // Any one of them can still be written.
    env.ok(&web, &["attachment", &id, "1999", "--out", "got.bin"]);
    assert_eq!(std::fs::read(web.join("got.bin")).unwrap(), big);
}

/// Thousands of blobs that do not verify (one push makes them) are
/// reported in a few lines, and what a sync remembers of them stays
/// small: its state file holds what it applied and the tips it saw.
#[test]
fn stress_a_flood_of_bad_blobs_is_reported_in_a_few_lines_and_remembered_within_bounds() {
    let env = TestEnv::new();
    let remote = bare_remote(&env);
    let a = Machine::new(&env, "aa", &remote, &["bb"]);
    let b = Machine::new(&env, "bb", &remote, &["aa"]);
    send_with_attachment(&env, &a, b"log\n");
    let names: Vec<String> = (0..3000).map(|i| format!("bad-{i:04}.blob")).collect();
    let files: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
    add_on_remote(&remote, "refs/aea/mail/bb", &files);

    let out = b.run(&env, &["--json", "sync"]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    let got: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_fits("sync", &got);
    let refused = got["attachments_refused"].as_array().unwrap();
    assert!(refused.len() <= 21, "{} lines", refused.len());
    assert!(
        refused.last().unwrap().as_str().unwrap().contains("more"),
        "{refused:?}"
    );
    let state: u64 = ["journal", "tips.json"]
        .iter()
        .map(|f| {
            std::fs::metadata(b.state.join("sync").join(f))
                .unwrap()
                .len()
        })
        .sum();
    assert!(state < 64 * 1024, "{state} bytes of sync state");
}

/// Something that is no file where a blob would be kept (a folder, a
/// FIFO, put there by anyone on the machine) is never reported as
/// received: the blob is refused, saying what is in the way.
#[test]
fn a_blob_whose_place_in_the_store_is_taken_is_not_reported_received() {
    let env = TestEnv::new();
    let remote = bare_remote(&env);
    let a = Machine::new(&env, "aa", &remote, &["bb"]);
    let b = Machine::new(&env, "bb", &remote, &["aa"]);
    let content = b"the log\n";
    let digest = aea::fsutil::sha256_hex(content);
    send_with_attachment(&env, &a, content);
    std::fs::create_dir_all(b.state.join("attachments").join(&digest)).unwrap();
    let out = b.run(&env, &["--json", "sync"]);
    let got: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert!(got.get("attachments_received").is_none(), "{got}");
    let refused = got["attachments_refused"].as_array().unwrap();
    assert!(
        refused
            .iter()
            .any(|r| r.as_str().unwrap().contains("not a regular file")),
        "{refused:?}"
    );
    assert_eq!(code(&out), 6, "{}", stderr(&out));
}
