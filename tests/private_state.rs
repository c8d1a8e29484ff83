//! Where the receiver's private state lives (`crates/store/src/layout.rs`): in the git
//! directory of the work tree holding the inbox, one per inbox and per
//! worktree, checked before use; and what `doctor` says of the work tree's
//! shared log.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::Value;

use crate::common::*;

fn question(env: &TestEnv, from: &Path, to: &Path, subject: &str) -> String {
    env.send(
        from,
        to.to_str().unwrap(),
        &["--type", "question", "--subject", subject],
    )
}

#[test]
fn package_inboxes_and_linked_worktrees_keep_state_of_their_own() {
    let env = TestEnv::new();
    let top = env.path().join("mono");
    fs::create_dir(&top).unwrap();
    git(&top, &["init", "-q"]);
    let ui = top.join("packages/ui");
    fs::create_dir_all(&ui).unwrap();
    env.ok(
        &top,
        &["init", "--no-agent-files", "--no-git-hooks", "--id", "mono"],
    );
    env.ok(
        &ui,
        &["init", "--no-agent-files", "--no-git-hooks", "--id", "ui"],
    );
    git(&top, &["add", "-A"]);
    git(&top, &["commit", "-q", "-m", "base"]);
    let wt = env.path().join("mono-wt");
    git(&top, &["worktree", "add", "-q", wt.to_str().unwrap()]);
    // The worktree checks out the committed config (id mono): another id.
    let config = wt.join(".aea/agent-config.yaml");
    let text = fs::read_to_string(&config).unwrap();
    fs::write(&config, text.replace("id: \"mono\"", "id: \"mono-wt\"")).unwrap();
    env.ok(&wt, &["init", "--no-agent-files", "--no-git-hooks"]);
    let api = env.repo("api");

    let git_dir = fs::canonicalize(top.join(".git")).unwrap();
    let expected = [
        (&top, git_dir.join("aea/root")),
        (&ui, git_dir.join("aea/in-packages%2Fui")),
        (&wt, git_dir.join("worktrees/mono-wt/aea/root")),
    ];
    for (repo, state) in &expected {
        assert_eq!(&env.state(repo), state);
        let id = question(&env, &api, repo, "hello");
        env.ok(repo, &["process", &id]);
        // Processed mail left the work tree for the git directory.
        assert!(inbox_files(repo).is_empty(), "{}", repo.display());
        assert_eq!(fs::read_dir(state.join("processed")).unwrap().count(), 1);
        assert_eq!(fs::read_dir(state.join("records")).unwrap().count(), 1);
        assert_eq!(
            env.json(repo, &["show", &id])["message"]["message_id"],
            id.as_str()
        );
    }
    // Nothing aea decides on is in a work tree: git sees no change there
    // but what it ignores (mail, markers, the log).
    let status = stdout(&git(&top, &["status", "--porcelain", "--ignored"]));
    for line in status.lines() {
        assert!(
            line.starts_with("!! ") && line.contains(".aea/"),
            "unexpected in the work tree: {line}\n{status}"
        );
    }
}

#[test]
fn a_private_state_that_is_not_the_receivers_own_folder_is_refused() {
    let env = TestEnv::new();
    let web = env.path().join("web");
    fs::create_dir(&web).unwrap();
    git(&web, &["init", "-q"]);
    env.ok(&web, &["init", "--no-agent-files", "--no-git-hooks"]);
    let state = env.state(&web);
    // A symlink in its place, to a folder elsewhere holding an approval.
    let elsewhere = env.path().join("elsewhere");
    fs::rename(&state, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &state).unwrap();
    let out = env.run(&web, &["check"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    fs::remove_file(&state).unwrap();
    // A folder anyone may write.
    fs::rename(&elsewhere, &state).unwrap();
    fs::set_permissions(&state, fs::Permissions::from_mode(0o777)).unwrap();
    let out = env.run(&web, &["check"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(stderr(&out).contains("writable"), "{}", stderr(&out));
    fs::set_permissions(&state, fs::Permissions::from_mode(0o700)).unwrap();
    env.ok(&web, &["check"]);
}

fn log_history(env: &TestEnv, repo: &Path) -> Value {
    let out = env.run(repo, &["--json", "doctor"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "log history")
        .unwrap()
        .clone()
}

#[test]
fn doctor_notices_a_rewritten_log() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let api = env.repo("api");
    question(&env, &api, &web, "one");
    assert_eq!(log_history(&env, &web)["ok"], true);
    // Appending is what a log does.
    question(&env, &api, &web, "two");
    assert_eq!(log_history(&env, &web)["ok"], true);
    // A line changed in place (a pull, a tool) is noticed once.
    let log = web.join(".aea/agent.log");
    let text = fs::read_to_string(&log).unwrap();
    fs::write(&log, text.replacen("delivered", "dELIVERED", 1)).unwrap();
    let found = log_history(&env, &web);
    assert_eq!(found["ok"], false, "{found}");
    assert!(
        found["detail"].as_str().unwrap().contains("rewritten"),
        "{found}"
    );
    assert_eq!(log_history(&env, &web)["ok"], true);
    // Lines cut off, or the file replaced.
    fs::write(&log, "").unwrap();
    assert_eq!(log_history(&env, &web)["ok"], false);
    let other = web.join(".aea/agent.log.new");
    fs::write(&other, "{}\n").unwrap();
    fs::rename(&other, &log).unwrap();
    let found = log_history(&env, &web);
    assert!(
        found["detail"].as_str().unwrap().contains("another file"),
        "{found}"
    );
}

#[test]
fn state_kept_before_git_init_moves_into_the_git_directory() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let api = env.repo("api");
    let id = question(&env, &api, &web, "before git");
    env.ok(&web, &["process", &id]);
    let before = env.state(&web);
    assert!(before.join("processed").is_dir());
    git(&web, &["init", "-q"]);
    let after = env.state(&web);
    assert_ne!(before, after);
    // The first command after `git init` finds everything it had.
    assert_eq!(
        env.json(&web, &["show", &id])["message"]["message_id"],
        id.as_str()
    );
    assert!(after.join("processed").is_dir() && !before.exists());
    let doctor = env.run(&web, &["--json", "doctor"]);
    let report: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    assert_eq!(report["checks"][0]["ok"], true, "{report}");
}
