//! What aea remembers of an inbox (`crates/store/src/seen.rs`): `check`, the
//! harness hooks and the git hooks answer from a remembered report while
//! nothing moved. Every change made right after a remembered answer must
//! show in the next one, and a memo that someone else wrote is ignored.
//!
//! The suite runs with a 20 ms settle time (tests/common): a memo is kept
//! once what it was made from lay unchanged that long. Waiting for that is
//! the condition itself, not a stand-in for readiness: change times cannot
//! be set back.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Lets everything written so far settle (the tests' settle time is 20 ms).
fn settle() {
    std::thread::sleep(Duration::from_millis(80));
}

/// The private `seen/` of `repo`: memos, the quiet marker, the id index.
fn seen_dir(env: &TestEnv, repo: &Path) -> PathBuf {
    env.state(repo).join("seen")
}

fn memo(env: &TestEnv, repo: &Path) -> PathBuf {
    seen_dir(env, repo).join("report.json")
}

/// The quiet marker the pre-commit script trusts.
fn quiet(env: &TestEnv, repo: &Path) -> PathBuf {
    seen_dir(env, repo).join("quiet")
}

/// `check --json` after letting the inbox settle, asserting that the
/// report was remembered (so the next check can answer from it).
fn remembered_check(env: &TestEnv, repo: &Path) -> Value {
    // The first command in an inbox makes the private `seen/`: that one
    // may remember nothing.
    if !seen_dir(env, repo).exists() {
        env.ok(repo, &["check"]);
    }
    settle();
    let page = seen_dir(env, repo).join("page.json");
    let _ = std::fs::remove_file(memo(env, repo));
    let _ = std::fs::remove_file(&page);
    // The whole report (every message judged), then the page from it.
    env.ok(repo, &["check", "--all"]);
    let report = env.json(repo, &["check"]);
    assert!(
        memo(env, repo).exists() && page.exists(),
        "a settled inbox's report and page are remembered"
    );
    // Answered again from memory: the same report, and the memo left as
    // it was (one worked out again is kept anew, with its own time).
    let kept = std::fs::read(&page).unwrap();
    assert_eq!(env.json(repo, &["check"]), report);
    assert!(
        std::fs::read(&page).unwrap() == kept,
        "the remembered page was recalled"
    );
    report
}

fn ids(report: &Value) -> Vec<String> {
    report_ids(report)
}

#[test]
fn every_change_after_a_remembered_check_shows_in_the_next() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let first = env.question(&api, "web", "first");
    let second = env.question(&api, "web", "second");
    assert_eq!(ids(&remembered_check(&env, &web)).len(), 2);

    // New mail.
    let third = env.question(&api, "web", "third");
    assert!(ids(&env.json(&web, &["check"])).contains(&third));

    // Processed: gone.
    remembered_check(&env, &web);
    env.ok(&web, &["process", &first]);
    assert!(!ids(&env.json(&web, &["check"])).contains(&first));

    // Marked processed by another tool (the bash AEA `touch`es an empty
    // marker): hidden.
    remembered_check(&env, &web);
    let name = inbox_files(&web)
        .into_iter()
        .find(|n| {
            std::fs::read_to_string(web.join(".aea").join(n))
                .unwrap()
                .contains(&second)
        })
        .unwrap();
    let marker = web.join(".aea/.processed").join(name);
    std::fs::write(&marker, "").unwrap();
    assert!(!ids(&env.json(&web, &["check"])).contains(&second));

    // Its marker taken away: back.
    remembered_check(&env, &web);
    std::fs::remove_file(&marker).unwrap();
    assert!(ids(&env.json(&web, &["check"])).contains(&second));

    // Deferred: flagged.
    remembered_check(&env, &web);
    env.ok(&web, &["process", &second, "--outcome", "deferred"]);
    let report = env.json(&web, &["check"]);
    assert_eq!(report["deferred"], 1, "{report}");

    // A message rewritten in place, same size: its signature no longer
    // holds, and the next check says so.
    remembered_check(&env, &web);
    let file = inbox_files(&web)
        .into_iter()
        .map(|name| web.join(".aea").join(name))
        .find(|p| std::fs::read_to_string(p).unwrap().contains("\"third\""))
        .unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("\"third\"", "\"THIRD\"")).unwrap();
    let report = env.json(&web, &["check"]);
    assert!(!ids(&report).contains(&third), "{report}");
    assert_eq!(report["invalid"].as_array().unwrap().len(), 1, "{report}");

    // A policy change: the decision follows.
    let before = remembered_check(&env, &web);
    let rule = |r: &Value| r["messages"][0]["decision"]["action"].clone();
    let config = web.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    let stricter = text.replace(
        "question:\n    auto_respond: true",
        "question:\n    auto_respond: false",
    );
    assert_ne!(stricter, text, "the default config changed shape");
    std::fs::write(&config, stricter).unwrap();
    let after = env.json(&web, &["check"]);
    assert_ne!(rule(&after), rule(&before), "{after}");
}

#[test]
fn the_claude_hook_sees_mail_that_arrives_after_a_remembered_answer() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.question(&api, "web", "first");
    let hook = |input: &str| {
        let mut cmd = env.cmd(&web);
        cmd.args(["check", "--hook", "claude"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
        stdout(&child.wait_with_output().unwrap())
    };
    let prompt = r#"{"session_id":"s1","hook_event_name":"UserPromptSubmit"}"#;
    assert!(hook(prompt).contains("AEA: 1 unprocessed message"));
    remembered_check(&env, &web);
    // Nothing new: nothing said.
    assert_eq!(hook(prompt), "");
    let id = env.question(&api, "web", "second");
    let said = hook(prompt);
    assert!(said.contains("AEA: 2 unprocessed messages"), "{said}");
    assert!(said.contains(&env.short_ref(&web, &id)), "{said}");
}

#[test]
fn a_memo_written_by_anyone_else_is_ignored() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let other = env.repo("other");
    let id = env.question(&api, "web", "hello");
    remembered_check(&env, &web);
    remembered_check(&env, &other);

    // A memo that says the inbox is empty, with a made-up seal.
    let genuine = std::fs::read(memo(&env, &web)).unwrap();
    let body = String::from_utf8(genuine[65..].to_vec()).unwrap();
    let emptied = body.replace("\"unprocessed\":1", "\"unprocessed\":0");
    assert_ne!(emptied, body);
    std::fs::write(memo(&env, &web), format!("{}\n{emptied}", "0".repeat(64))).unwrap();
    assert_eq!(ids(&env.json(&web, &["check"])), std::slice::from_ref(&id));

    // The genuine memo of another inbox, sealed with this user's key.
    std::fs::copy(memo(&env, &other), memo(&env, &web)).unwrap();
    assert_eq!(ids(&env.json(&web, &["check"])), std::slice::from_ref(&id));

    // A genuine memo under another user's key (another HOME's cache).
    remembered_check(&env, &web);
    let sealed = std::fs::read(memo(&env, &web)).unwrap();
    std::fs::remove_dir_all(env.path().join("home/.cache")).unwrap();
    std::fs::write(memo(&env, &web), &sealed).unwrap();
    assert_eq!(ids(&env.json(&web, &["check"])), [id]);
}

#[test]
fn a_remembered_answer_ends_when_a_message_expires() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.send(
        &api,
        "web",
        &[
            "--type",
            "update",
            "--subject",
            "soon stale",
            "--expires",
            "2s",
        ],
    );
    let report = remembered_check(&env, &web);
    assert_eq!(report["messages"][0]["expired"], false, "{report}");
    // Nothing in the inbox moves; only the clock does.
    std::thread::sleep(Duration::from_millis(2100));
    let report = env.json(&web, &["check"]);
    assert_eq!(report["messages"][0]["expired"], true, "{report}");
}

#[test]
fn a_symlinked_memo_folder_stops_check() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let elsewhere = env.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let seen = seen_dir(&env, &web);
    let _ = std::fs::remove_dir_all(&seen);
    std::fs::create_dir_all(seen.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &seen).unwrap();
    let out = env.run(&web, &["check"]);
    assert_ne!(code(&out), 0);
    assert!(
        stderr(&out).contains(&seen.display().to_string()),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

/// A git repository `name` with aea and its hooks, whose pre-commit hook
/// calls aea through a wrapper that notes each start in `starts.log`.
fn hooked_repo(env: &TestEnv, name: &str) -> PathBuf {
    let dir = env.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    assert!(
        git_command(&dir)
            .arg("init")
            .arg("-q")
            .status()
            .unwrap()
            .success()
    );
    env.ok(&dir, &["init", "--no-agent-files"]);
    // A first commit writes git's index, which the hook compares with the
    // quiet marker too: the commits measured come after it.
    env.git_ok(
        &dir,
        &[
            "commit",
            "-q",
            "--allow-empty",
            "--no-verify",
            "-m",
            "start",
        ],
    );
    let wrapper = env.path().join(format!("{name}-aea"));
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho start >> '{}'\nexec '{BIN}' \"$@\"\n",
            env.path().join(format!("{name}-starts.log")).display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let hook = dir.join(".git/hooks/pre-commit");
    let text = std::fs::read_to_string(&hook).unwrap();
    let line = text.lines().find(|l| l.starts_with("aea=")).unwrap();
    let text = text.replace(line, &format!("aea='{}'", wrapper.display()));
    std::fs::write(&hook, text).unwrap();
    dir
}

/// `git commit` in `dir`, as a person would.
fn try_commit(env: &TestEnv, dir: &Path) -> std::process::Output {
    env.git_with(
        dir,
        &["commit", "-q", "--allow-empty", "-m", "c"],
        &[("AEA_TEST_SEEN_SETTLE_MS", "20")],
    )
}

/// Commits in `dir`, returning stderr and how often the hook started aea
/// so far.
fn commit(env: &TestEnv, dir: &Path, name: &str) -> (String, usize) {
    let out = try_commit(env, dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = env.path().join(format!("{name}-starts.log"));
    let starts = std::fs::read_to_string(log).map_or(0, |t| t.lines().count());
    (stderr(&out), starts)
}

#[test]
fn the_pre_commit_hook_starts_aea_only_when_the_inbox_moved() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = hooked_repo(&env, "web");
    // aea found nothing after the folders settled: quiet.
    remembered_check(&env, &web);
    assert!(quiet(&env, &web).is_dir());
    let (said, starts) = commit(&env, &web, "web");
    assert_eq!((said.as_str(), starts), ("", 0));

    // New mail: aea starts and says so.
    let id = env.question(&api, "web", "hello");
    let (said, starts) = commit(&env, &web, "web");
    assert_eq!(starts, 1);
    assert!(said.contains("aea: 1 unprocessed message"), "{said}");

    // Processed, and quiet again once settled.
    env.ok(&web, &["process", &id]);
    remembered_check(&env, &web);
    assert_eq!(commit(&env, &web, "web").1, 1);

    // Mail another tool marked processed (the bash AEA `touch`es an
    // empty marker): quiet again once settled.
    env.question(&api, "web", "again");
    let name = inbox_files(&web).pop().unwrap();
    let marker = web.join(".aea/.processed").join(name);
    std::fs::write(&marker, "").unwrap();
    remembered_check(&env, &web);
    assert_eq!(commit(&env, &web, "web").1, 1);

    // Its marker taken away: aea starts and finds the message again.
    std::fs::remove_file(&marker).unwrap();
    let (said, starts) = commit(&env, &web, "web");
    assert_eq!(starts, 2);
    assert!(said.contains("aea: 1 unprocessed message"), "{said}");

    // A quiet folder that is not empty (aea never puts anything in it) is
    // not aea's: aea starts.
    std::fs::write(&marker, "").unwrap();
    remembered_check(&env, &web);
    assert_eq!(commit(&env, &web, "web").1, 2);
    std::fs::write(quiet(&env, &web).join("x"), "").unwrap();
    assert_eq!(commit(&env, &web, "web").1, 3);
}

/// The quiet marker stands for git's index too. A commit whose index is
/// older than the marker skips aea; after a `git add`, or with `git
/// commit -a` (made from another index file), git says whether anything
/// under a `.aea/` is staged: nothing, and aea is not started; this
/// machine's state, and aea starts and refuses the commit.
#[test]
fn the_pre_commit_hook_asks_git_what_is_staged_after_git_add() {
    let env = TestEnv::new();
    let web = hooked_repo(&env, "web");
    std::fs::write(web.join("a.txt"), "a").unwrap();
    env.git_ok(&web, &["add", "a.txt"]);
    env.git_ok(&web, &["commit", "-q", "--no-verify", "-m", "a"]);
    remembered_check(&env, &web);
    assert!(quiet(&env, &web).is_dir());
    assert_eq!(commit(&env, &web, "web").1, 0);

    std::fs::write(web.join("b.txt"), "b").unwrap();
    env.git_ok(&web, &["add", "b.txt"]);
    assert_eq!(commit(&env, &web, "web").1, 0);
    std::fs::write(web.join("a.txt"), "a, changed").unwrap();
    let out = env.git_with(
        &web,
        &["commit", "-q", "-a", "-m", "all"],
        &[("AEA_TEST_SEEN_SETTLE_MS", "20")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(commit(&env, &web, "web").1, 0);

    env.git_ok(&web, &["add", "-f", ".aea/agent.log"]);
    let out = try_commit(&env, &web);
    assert!(
        !out.status.success() && stderr(&out).contains("of this machine's .aea/ are staged"),
        "{}",
        stderr(&out)
    );
    let log = env.path().join("web-starts.log");
    assert_eq!(std::fs::read_to_string(log).unwrap().lines().count(), 1);
}

#[test]
fn a_config_broken_in_place_blocks_a_quiet_inbox_commit() {
    // The gate fails closed on a config it cannot read, whatever the inbox
    // holds. An editor that saves in place does not move `.aea/`.
    let env = TestEnv::new();
    let web = hooked_repo(&env, "web");
    remembered_check(&env, &web);
    assert!(quiet(&env, &web).is_dir());
    assert_eq!(commit(&env, &web, "web").1, 0);
    let config = web.join(".aea/agent-config.yaml");
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let before = inode(&config);
    std::fs::write(&config, "response_policy: [\n").unwrap();
    assert_eq!(inode(&config), before, "written in place");
    let out = try_commit(&env, &web);
    assert!(
        !out.status.success(),
        "the broken config let the commit through"
    );
    assert!(stderr(&out).contains("commit blocked"), "{}", stderr(&out));
}

/// The index file of message id `id` in `repo` (see
/// `crates/store/src/mailbox/index.rs`).
fn id_bucket(env: &TestEnv, repo: &Path, id: &str) -> PathBuf {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(id.as_bytes());
    seen_dir(env, repo)
        .join("ids")
        .join(format!("{:02x}", digest[0]))
}

fn subject_shown(env: &TestEnv, repo: &Path, reference: &str) -> String {
    env.json(repo, &["show", reference])["message"]["message"]["subject"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn lookups_by_id_use_the_index_but_never_trust_it() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.ok(&web, &["check"]);
    let a = env.question(&api, "web", "alpha");
    let b = env.question(&api, "web", "beta");
    // Senders never write the receiver's private state: its listing
    // notes both ids.
    let bucket = id_bucket(&env, &web, &a);
    assert!(!bucket.exists(), "a sender wrote the receiver's index");
    env.ok(&web, &["check"]);
    let text = std::fs::read_to_string(&bucket).unwrap();
    assert!(text.contains(&a), "{text}");
    assert_eq!(subject_shown(&env, &web, &a), "alpha");

    // A line that sends a's id to b's file: b's file does not hold a's id,
    // so it is passed over.
    let name_of = |id: &str| {
        inbox_files(&web)
            .into_iter()
            .find(|n| {
                std::fs::read_to_string(web.join(".aea").join(n))
                    .unwrap()
                    .contains(id)
            })
            .unwrap()
    };
    let lie = format!("{a}\t{}\n{text}", name_of(&b));
    std::fs::write(&bucket, lie).unwrap();
    assert_eq!(subject_shown(&env, &web, &a), "alpha");
    let (a_name, b_name) = (name_of(&a), name_of(&b));
    env.ok(&web, &["process", &a]);
    assert!(
        env.state(&web).join("records").join(&a_name).exists(),
        "process recorded the right file"
    );
    assert!(
        web.join(".aea/.processed").join(&a_name).exists(),
        "process marked the right file"
    );
    assert_eq!(inbox_files(&web), [b_name], "only a's file left the inbox");

    // An index that points nowhere, holds junk, or is not a file: the
    // inbox is listed instead.
    std::fs::write(
        id_bucket(&env, &web, &b),
        format!("{b}\tmessage-gone.json\n"),
    )
    .unwrap();
    assert_eq!(subject_shown(&env, &web, &b), "beta");
    std::fs::write(
        id_bucket(&env, &web, &b),
        [0u8, 159, 146, 150, b'\n', b'\t'],
    )
    .unwrap();
    assert_eq!(subject_shown(&env, &web, &b), "beta");
    std::fs::remove_file(id_bucket(&env, &web, &b)).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(id_bucket(&env, &web, &b))
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(subject_shown(&env, &web, &b), "beta");
    // The whole index swapped for a symlink to elsewhere: not followed.
    let ids = seen_dir(&env, &web).join("ids");
    std::fs::remove_dir_all(&ids).unwrap();
    let elsewhere = env.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &ids).unwrap();
    assert_eq!(subject_shown(&env, &web, &b), "beta");
    env.question(&api, "web", "gamma");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn a_message_the_index_never_saw_is_found_and_indexed() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    // Delivered before web had an index (as by another OS user, who may
    // not write web's state): not indexed.
    let id = env.question(&api, "web", "unseen");
    assert!(!seen_dir(&env, &web).join("ids").exists());
    assert_eq!(subject_shown(&env, &web, &id), "unseen");
    // Listing it for the lookup indexed it.
    let text = std::fs::read_to_string(id_bucket(&env, &web, &id)).unwrap();
    assert!(text.contains(&id), "{text}");
}

#[test]
fn an_id_two_messages_share_names_neither() {
    // A sender copies the id of a gated message it can read (another
    // sender's) into mail of its own, named to sort first. `approve <id>`
    // must not pick one of the two: the person named the one they read.
    let env = TestEnv::new();
    let api = env.repo("api");
    let ops = env.repo("ops");
    let web = env.repo("web");
    env.ok(&web, &["check"]);
    let id = env.send(
        &api,
        "web",
        &[
            "--type",
            "issue",
            "--priority",
            "urgent",
            "--subject",
            "Login is down",
        ],
    );
    let genuine = inbox_files(&web).pop().unwrap();
    let mut copy: Value =
        serde_json::from_slice(&std::fs::read(web.join(".aea").join(&genuine)).unwrap()).unwrap();
    copy["from"]["agent_id"] = "ops".into();
    copy["from"]["repo_path"] = ops.display().to_string().into();
    copy["message"]["subject"] = "Run the cleanup script".into();
    env.resign(&mut copy);
    let planted = "message-20000101T000000Z-from-ops-00000000.json";
    std::fs::write(
        web.join(".aea").join(planted),
        serde_json::to_vec(&copy).unwrap(),
    )
    .unwrap();
    // Listed, and so indexed, both under the one id.
    let report = env.json(&web, &["check"]);
    assert_eq!(ids(&report), [id.clone(), id.clone()], "{report}");
    for command in [
        vec!["approve", &id],
        vec!["process", &id],
        vec!["show", &id],
    ] {
        let out = env.run(&web, &command);
        assert_ne!(code(&out), 0, "{command:?} picked one: {}", stdout(&out));
        assert!(
            stderr(&out).contains("matches 2 messages"),
            "{}",
            stderr(&out)
        );
    }
    assert!(
        !env.state(&web)
            .join("approvals")
            .join(format!("{planted}.json"))
            .exists()
    );
    // Without the index, the same.
    std::fs::remove_dir_all(seen_dir(&env, &web).join("ids")).unwrap();
    assert_ne!(code(&env.run(&web, &["approve", &id])), 0);
}

#[test]
fn an_index_bucket_past_its_limit_stops_growing() {
    // Past the read limit a bucket is never read: appending to it would
    // only grow it with every lookup that lists the inbox instead.
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.ok(&web, &["check"]);
    let id = env.question(&api, "web", "hello");
    // Listed, so indexed, before its buckets are filled with junk.
    env.ok(&web, &["check"]);
    let line = "x\tmessage-junk.json\n";
    let junk = line.repeat(4 * 1024 * 1024 / line.len() + 1);
    let bucket = id_bucket(&env, &web, &id);
    std::fs::write(&bucket, &junk).unwrap();
    for _ in 0..3 {
        assert_eq!(subject_shown(&env, &web, &id), "hello");
    }
    assert_eq!(std::fs::metadata(&bucket).unwrap().len(), junk.len() as u64);
}

#[test]
fn mail_copied_in_with_the_folder_time_kept_still_starts_aea() {
    // `rsync -a`, `cp -a` and `tar` set a folder's modification time back
    // to the source's: only its change time says that it moved.
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = hooked_repo(&env, "web");
    remembered_check(&env, &web);
    assert_eq!(commit(&env, &web, "web").1, 0);
    env.question(&api, "web", "hello");
    assert!(
        Command::new("touch")
            .args(["-m", "-d", "@946684800"])
            .arg(web.join(".aea"))
            .status()
            .unwrap()
            .success()
    );
    let (said, starts) = commit(&env, &web, "web");
    assert_eq!(starts, 1);
    assert!(said.contains("aea: 1 unprocessed message"), "{said}");
}

#[test]
fn a_quiet_marker_brought_by_a_pull_does_not_open_the_gate() {
    // A commit can hold a submodule entry (a gitlink), which git checks
    // out as an empty folder: a remote can put one at .aea/.seen/quiet,
    // where the quiet marker used to be. Only the one in the private
    // state, in the git dir where no pull writes, counts.
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = hooked_repo(&env, "web");
    let git = |args: &[&str]| {
        let out = git_command(&web)
            .env("AEA_SKIP_HOOKS", "1")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    };
    git(&["commit", "-q", "--allow-empty", "-m", "base"]);
    env.send(
        &api,
        "web",
        &[
            "--type",
            "issue",
            "--priority",
            "urgent",
            "--subject",
            "Login is down",
        ],
    );
    let out = try_commit(&env, &web);
    assert!(!out.status.success(), "a gated message blocks");
    assert!(!quiet(&env, &web).exists());
    // The hostile history, fetched and merged.
    settle();
    git(&["checkout", "-q", "-b", "upstream"]);
    git(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("160000,{},.aea/.seen/quiet", "1".repeat(40)),
    ]);
    git(&["commit", "-q", "-m", "quiet"]);
    git(&["checkout", "-q", "-"]);
    git(&["merge", "-q", "--ff-only", "upstream"]);
    assert!(web.join(".aea/.seen/quiet").is_dir(), "git made the folder");
    let out = try_commit(&env, &web);
    assert!(!out.status.success(), "the gate opened");
    assert!(stderr(&out).contains("commit blocked"), "{}", stderr(&out));

    // Nor a symlink to an empty sticky folder of the user's (as /dev/shm
    // is for root).
    let sticky = env.path().join("sticky");
    std::fs::create_dir(&sticky).unwrap();
    std::fs::set_permissions(
        &sticky,
        std::os::unix::fs::PermissionsExt::from_mode(0o1700),
    )
    .unwrap();
    git(&["checkout", "-q", "upstream"]);
    git(&["rm", "-q", "--cached", ".aea/.seen/quiet"]);
    let _ = std::fs::remove_dir(web.join(".aea/.seen/quiet"));
    std::os::unix::fs::symlink(&sticky, web.join(".aea/.seen/quiet")).unwrap();
    git(&["add", "-f", ".aea/.seen/quiet"]);
    git(&["commit", "-q", "-m", "quiet, linked"]);
    git(&["checkout", "-q", "-"]);
    git(&["merge", "-q", "--ff-only", "upstream"]);
    assert!(web.join(".aea/.seen/quiet").is_symlink());
    let out = try_commit(&env, &web);
    assert!(!out.status.success(), "the gate opened through a symlink");
}

#[test]
fn a_sender_key_that_comes_back_shows_its_mail_valid_again() {
    // api's mail verifies by the key pinned in the registry (never by its
    // committed config): mail listed as forged under another pin must
    // follow the pin back.
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let genuine = env.public_key("api");
    let other = env.public_key("someone-else");
    let id = env.question(&api, "web", "hello");
    assert_eq!(ids(&env.json(&web, &["check"])), std::slice::from_ref(&id));
    // What api's committed config says changes nothing.
    let config = api.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace(&genuine, &other)).unwrap();
    assert_eq!(
        ids(&remembered_check(&env, &web)),
        std::slice::from_ref(&id)
    );
    std::fs::write(&config, &text).unwrap();
    env.ok(&web, &["agents", "trust", "api", "--key", &other]);
    let report = remembered_check(&env, &web);
    assert_eq!(report["invalid"].as_array().unwrap().len(), 1, "{report}");
    env.ok(&web, &["agents", "trust", "api", "--key", &genuine]);
    assert_eq!(ids(&env.json(&web, &["check"])), [id]);
}

#[test]
fn a_check_on_a_broken_config_leaves_the_inbox_not_quiet() {
    // `check` answers on a config that does not read (with the strictest
    // policy, and a warning); the gate blocks on it. A quiet marker made
    // by that check would let the script skip the gate.
    let env = TestEnv::new();
    let web = hooked_repo(&env, "web");
    env.ok(&web, &["check"]);
    std::fs::write(web.join(".aea/agent-config.yaml"), "response_policy: [\n").unwrap();
    settle();
    env.run(&web, &["check"]);
    settle();
    env.run(&web, &["check"]);
    let out = try_commit(&env, &web);
    assert!(
        !out.status.success(),
        "the broken config let the commit through"
    );
    assert!(stderr(&out).contains("commit blocked"), "{}", stderr(&out));
}

/// `check --json` twice: as the inbox is now, working out only what the
/// last report cannot vouch for, then with nothing remembered (every file
/// read, verified and judged again). The two must say the same.
fn partly_and_whole(env: &TestEnv, repo: &Path) -> Value {
    let partly = env.json(repo, &["check"]);
    std::fs::remove_file(memo(env, repo)).unwrap();
    let _ = std::fs::remove_file(seen_dir(env, repo).join("page.json"));
    let whole = env.json(repo, &["check"]);
    assert_eq!(
        partly, whole,
        "a report made in part differs from a whole one"
    );
    partly
}

/// The file in `repo`'s inbox holding `needle`.
fn file_with(repo: &Path, needle: &str) -> PathBuf {
    inbox_files(repo)
        .into_iter()
        .map(|name| repo.join(".aea").join(name))
        .find(|p| std::fs::read_to_string(p).unwrap().contains(needle))
        .unwrap()
}

#[test]
fn a_report_made_again_only_where_files_changed_says_what_a_whole_one_says() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    for n in 0..6 {
        env.question(&api, "web", &format!("waiting {n}"));
    }
    remembered_check(&env, &web);

    // Urgent mail arrives: it goes first, and the references are those of
    // the whole inbox.
    let urgent = env.send(
        &api,
        "web",
        &[
            "--type",
            "issue",
            "--priority",
            "urgent",
            "--subject",
            "fire",
        ],
    );
    let report = partly_and_whole(&env, &web);
    assert_eq!(report["messages"][0]["id"], urgent.as_str(), "{report}");
    assert_eq!(report["unprocessed"], 7);

    // A file that is no message.
    remembered_check(&env, &web);
    let junk = "message-20260101T000000Z-from-api-00000001.json";
    std::fs::write(web.join(".aea").join(junk), "{not json").unwrap();
    let report = partly_and_whole(&env, &web);
    assert_eq!(report["invalid"].as_array().unwrap().len(), 1, "{report}");

    // One kept file rewritten in place while new mail arrives: both show.
    remembered_check(&env, &web);
    let file = file_with(&web, "\"waiting 3\"");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("\"waiting 3\"", "\"WAITING 3\"")).unwrap();
    env.question(&api, "web", "late");
    let report = partly_and_whole(&env, &web);
    assert_eq!(report["invalid"].as_array().unwrap().len(), 2, "{report}");
    assert_eq!(report["unprocessed"], 7, "{report}");

    // A kept file gone (another tool archived it) and new mail: the gone
    // one is not listed from memory.
    remembered_check(&env, &web);
    let gone = file_with(&web, "\"waiting 4\"");
    std::fs::remove_file(&gone).unwrap();
    env.question(&api, "web", "later");
    let report = partly_and_whole(&env, &web);
    assert_eq!(report["unprocessed"], 7, "{report}");

    // A copy of a waiting message under a new name (a replay): judged over
    // both files, as a whole listing does; the copy is set aside.
    remembered_check(&env, &web);
    let original = file_with(&web, "\"waiting 0\"");
    let copy = web
        .join(".aea")
        .join("message-20990101T000000Z-from-api-0000beef.json");
    std::fs::copy(&original, &copy).unwrap();
    let report = partly_and_whole(&env, &web);
    assert_eq!(report["unprocessed"], 7, "{report}");
    assert!(!copy.exists(), "the replayed copy was not set aside");
    assert!(original.exists(), "the original was taken for the copy");

    // The registry forgets the sender while mail arrives: nothing of the
    // last report is kept, every message is judged again.
    remembered_check(&env, &web);
    let registry = env.path().join("home").join("registry.toml");
    let text = std::fs::read_to_string(&registry).unwrap();
    let without_key = text
        .lines()
        .filter(|l| !l.starts_with("key = "))
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(without_key, text, "the registry has no key to take away");
    std::fs::write(&registry, without_key).unwrap();
    env.question(&api, "web", "unsigned now");
    let report = partly_and_whole(&env, &web);
    assert!(
        report["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["sender"] != "verified"),
        "a message kept from before the key went still says verified: {report}"
    );
}

#[test]
fn a_remembered_answer_that_warned_says_its_warning_again() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.question(&api, "web", "hello");
    std::fs::write(web.join(".aea/agent-config.yaml"), "response_policy: [\n").unwrap();
    env.run(&web, &["check"]);
    settle();
    let first = env.run(&web, &["check"]);
    let kept = std::fs::read(memo(&env, &web)).expect("a report that warned is remembered");
    let again = env.run(&web, &["check"]);
    assert_eq!(
        std::fs::read(memo(&env, &web)).unwrap(),
        kept,
        "the remembered report was not used"
    );
    assert!(
        stderr(&first).contains("every message needs approval"),
        "{}",
        stderr(&first)
    );
    assert_eq!(stderr(&again), stderr(&first));
    assert_eq!(stdout(&again), stdout(&first));
}

#[test]
fn a_remembered_page_shows_every_change_to_what_it_lists() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    for n in 0..24 {
        env.question(&api, "web", &format!("waiting {n:02}"));
    }
    let page = remembered_check(&env, &web);
    assert_eq!(
        (
            page["messages"].as_array().unwrap().len(),
            page["more"].as_u64()
        ),
        (20, Some(4))
    );
    assert!(
        seen_dir(&env, &web).join("page.json").exists(),
        "the page is remembered"
    );
    // Another page size is worked out, not taken from the remembered one.
    let small = env.json(&web, &["check", "--limit", "3"]);
    assert_eq!(small["messages"].as_array().unwrap().len(), 3, "{small}");
    assert_eq!(small["more"], 21);
    // A message on the page rewritten in place, same size: shown invalid.
    remembered_check(&env, &web);
    let first = page["messages"][0]["subject"].as_str().unwrap().to_string();
    let file = file_with(&web, &format!("\"{first}\""));
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace(&first, &first.to_uppercase())).unwrap();
    let after = env.json(&web, &["check"]);
    assert_eq!(after["invalid"].as_array().unwrap().len(), 1, "{after}");
    assert_eq!(after["unprocessed"], 23, "{after}");
    // New mail, first in order, shows on the page at once.
    remembered_check(&env, &web);
    let urgent = env.send(
        &api,
        "web",
        &[
            "--type",
            "issue",
            "--priority",
            "urgent",
            "--subject",
            "fire",
        ],
    );
    let after = env.json(&web, &["check"]);
    assert_eq!(after["messages"][0]["id"], urgent.as_str(), "{after}");
}

/// A marker is judged with the file it marks, but stamped only through
/// its folder: one rewritten in place (another tool marks with `>`,
/// which truncates the file it finds) leaves `.processed/` as it was.
/// Before a report was made in part, the next change of `.aea/` listed
/// the inbox whole and the rewrite showed; now the waiting file's line is
/// kept for as long as the folders stay, through any new mail: the
/// message another tool marked processed is still listed, with the old
/// marker's complaint, and the gated mail it hid without an approval is
/// not named.
#[test]
fn a_marker_rewritten_in_place_shows_when_new_mail_arrives() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let gated = env.send(
        &api,
        "web",
        &["--type", "handoff", "--subject", "take over", "--body", "b"],
    );
    let name = inbox_files(&web).pop().unwrap();
    // A marker made for other bytes: the file is shown, with why.
    let marker = web.join(".aea/.processed").join(&name);
    let stale = serde_json::json!({
        "processed_at": "2026-01-01T00:00:00Z",
        "by": "bash",
        "outcome": "done",
        "sha256": "0".repeat(64),
    });
    std::fs::write(&marker, stale.to_string()).unwrap();
    let before = remembered_check(&env, &web);
    assert!(ids(&before).contains(&gated), "{before}");
    assert!(
        before["messages"][0]["stale_marker"].is_string(),
        "{before}"
    );

    // Marked again in place, as `: > marker` does: processed by another
    // tool, without an approval.
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&marker)
        .unwrap();
    env.question(&api, "web", "new mail");
    let report = partly_and_whole(&env, &web);
    assert!(!ids(&report).contains(&gated), "{report}");
    assert_eq!(
        report["processed_without_approval"][0]["id"],
        gated.as_str(),
        "{report}"
    );
}

/// A marker that does not read (over the 64 KiB a marker may hold) hides
/// nothing and earns its file no complaint: the report keeps that file's line with no stale
/// marker noted, so the line is kept when only new mail moves `.aea/`.
/// Another tool then marks the file by truncating that marker in place
/// (`: > marker`), which moves no folder: a whole listing hides the
/// message (an empty marker), a report made in part still lists it.
#[test]
fn a_marker_that_did_not_read_rewritten_in_place_shows_when_new_mail_arrives() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let gated = env.send(
        &api,
        "web",
        &["--type", "handoff", "--subject", "take over", "--body", "b"],
    );
    let name = inbox_files(&web).pop().unwrap();
    let marker = web.join(".aea/.processed").join(&name);
    std::fs::create_dir_all(marker.parent().unwrap()).unwrap();
    std::fs::write(&marker, vec![b' '; 65 * 1024]).unwrap();
    let before = remembered_check(&env, &web);
    assert!(ids(&before).contains(&gated), "{before}");

    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&marker)
        .unwrap();
    env.question(&api, "web", "new mail");
    let report = partly_and_whole(&env, &web);
    assert!(!ids(&report).contains(&gated), "{report}");
}

/// A reference to processed mail is looked up through the id index (the
/// store can hold thousands), but a file the index lost or misnames is
/// still found, and a wrong index line finds nothing else.
#[test]
fn references_to_processed_mail_use_the_index_but_never_trust_it() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let first = env.question(&api, "web", "first");
    let second = env.question(&api, "web", "second");
    let (first_ref, second_ref) = (env.short_ref(&web, &first), env.short_ref(&web, &second));
    let second_file = file_of(&web, &second);
    env.ok(&web, &["process", &first_ref]);
    env.ok(&web, &["process", &second_ref]);
    assert_eq!(subject_shown(&env, &web, &first_ref), "first");
    // The index forgets one file and says the other holds another id.
    std::fs::write(id_bucket(&env, &web, &first), "").unwrap();
    std::fs::write(
        id_bucket(&env, &web, &second),
        format!("{first}\t{second_file}\n"),
    )
    .unwrap();
    assert_eq!(subject_shown(&env, &web, &first_ref), "first");
    assert_eq!(subject_shown(&env, &web, &second_ref), "second");
}
