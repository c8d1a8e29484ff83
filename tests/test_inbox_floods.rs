//! A flood of files in the inbox — thousands dropped by a sender, or by
//! another OS user into a shared inbox — must neither hold a commit up
//! nor open the pre-commit gate while urgent gated mail waits.

use crate::common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

/// A git repository `web` under `env` with aea's hooks, shared with other
/// OS users, holding one urgent handoff from `api` that waits for a
/// person; returns the repository.
fn gated_repository(env: &TestEnv) -> std::path::PathBuf {
    std::fs::set_permissions(env.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let web = env.path().join("web");
    std::fs::create_dir(&web).unwrap();
    git(&web, &["init", "-q"]);
    env.ok(&web, &["init", "--no-agent-files", "--shared"]);
    git(&web, &["add", "-A"]);
    git(&web, &["commit", "-q", "-m", "base"]);
    let api = env.repo("api");
    env.ok(
        &api,
        &[
            "send",
            "--to",
            "../web",
            "--type",
            "handoff",
            "--priority",
            "urgent",
            "--subject",
            "deploy to prod",
        ],
    );
    assert_eq!(
        env.json(&web, &["pending"])["pending"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    web
}

/// `git commit` of a new file in `repo`, with aea's hooks on.
fn commit(env: &TestEnv, repo: &Path, name: &str) -> std::process::Output {
    env.commit_new_file(repo, name, &[("AEA_HOOK_TIMEOUT", "1")])
}

#[test]
fn a_flood_from_another_user_neither_stalls_nor_opens_the_commit_gate() {
    let ids = match sender_user() {
        Ok(ids) => ids,
        Err(why) => {
            eprintln!("SKIPPED a_flood_from_another_user…: {why}");
            return;
        }
    };
    let env = TestEnv::new();
    let web = gated_repository(&env);
    let home = env.path().join("sender-home");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(ids.0), Some(ids.1)).unwrap();
    // 5,000 junk files named like mail, written by the other user: more
    // than a hook reads at once, and more than an aea that reads them all
    // gets through within the hook's time limit (1 s here, as 20,000 take
    // past the default 10 s): without a bound the gate timed out and let
    // the commit pass.
    let flood = "BEGIN { for (i = 0; i < 5000; i++) { \
        f = sprintf(\".aea/message-20260101T000000000Z-from-x-%08x.json\", i); \
        printf \"junk %d\", i > f; close(f) } }";
    let out = as_user(ids, &home, &web, "awk", &[flood], Duration::from_secs(120));
    assert!(out.status.success(), "{}", stderr(&out));

    // The hook reads a bounded number of files and blocks on the rest (on
    // a machine too loaded to read even those in time, the script blocks
    // on the waiting mail it finds itself).
    let out = commit(&env, &web, "a");
    assert!(!out.status.success(), "a flood opened the commit gate");
    let said = stderr(&out);
    assert!(
        said.contains("were not read") || said.contains("could not decide"),
        "{said}"
    );
    // `check` reads them all once and remembers them as invalid: the next
    // listing does not read them again, and the gate sees what waits.
    let report = env.json(&web, &["check"]);
    assert_eq!(report["invalid"].as_array().unwrap().len(), 20, "a page");
    assert_eq!(report["more_invalid"], 4980);
    assert_eq!(report["messages"].as_array().unwrap().len(), 1);
    let out = commit(&env, &web, "b");
    assert!(!out.status.success(), "urgent gated mail let a commit pass");
    assert!(stderr(&out).contains("commit blocked"), "{}", stderr(&out));
    // gc moves the junk aside; the gate still holds for the handoff, and
    // lets the commit pass once a person approved it.
    env.ok(&web, &["gc"]);
    assert!(
        env.json(&web, &["check"])["invalid"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert!(!commit(&env, &web, "c").status.success());
    let id = env.json(&web, &["pending"])["pending"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    env.ok(&web, &["approve", &id]);
    let out = commit(&env, &web, "d");
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn an_aea_that_does_not_answer_in_time_blocks_a_commit_while_urgent_mail_waits() {
    let env = TestEnv::new();
    let web = gated_repository(&env);
    // The hook calls aea by the path it was installed with: point it at a
    // program that hangs, as aea would on a very slow disk.
    let hang = env.path().join("hang");
    std::fs::write(&hang, "#!/bin/sh\nsleep 30\n").unwrap();
    std::fs::set_permissions(&hang, std::fs::Permissions::from_mode(0o755)).unwrap();
    let hook = web.join(".git/hooks/pre-commit");
    let text = std::fs::read_to_string(&hook).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("aea="))
        .unwrap()
        .to_string();
    std::fs::write(
        &hook,
        text.replace(&line, &format!("aea={}", hang.display())),
    )
    .unwrap();
    std::fs::write(web.join("x"), "x").unwrap();
    git(&web, &["add", "x"]);
    let out = git_command(&web)
        .env("AEA_HOOK_TIMEOUT", "1")
        .args(["commit", "-q", "-m", "x"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "the commit passed");
    assert!(
        stderr(&out).contains("could not decide (exit 124) and mail waits"),
        "{}",
        stderr(&out)
    );
    // Without urgent mail waiting, a hung aea lets git go on (fail open,
    // as before, unless AEA_HOOKS_FAIL_CLOSED=1).
    for name in inbox_files(&web) {
        std::fs::remove_file(web.join(".aea").join(name)).unwrap();
    }
    let out = git_command(&web)
        .env("AEA_HOOK_TIMEOUT", "1")
        .args(["commit", "-q", "-m", "x"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("could not run aea"),
        "{}",
        stderr(&out)
    );
}
