//! Approval-gated review: `pending`, `approve`, `reject`, `review`, the
//! gate on `process --outcome done`, and what `show` says is allowed
//! before and after a person decides.

use crate::common::*;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

fn git_identity(repo: &std::path::Path, name: &str, email: &str) {
    for args in [
        vec!["init", "-q"],
        vec!["config", "user.name", name],
        vec!["config", "user.email", email],
    ] {
        assert!(git_command(repo).args(&args).status().unwrap().success());
    }
}

#[test]
fn gated_mail_waits_for_approval_and_records_who() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    git_identity(&web, "Ana Reviewer", "ana@example.com");
    let id = env.urgent(&api, "web", "issue", "Login is down");

    let out = env.run(&web, &["process", &id]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("requires approval, which is pending"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("hint: a person decides it: `aea approve"));

    let pending = env.json(&web, &["pending"]);
    assert_eq!(pending["pending"][0]["id"], id.as_str());
    assert_eq!(
        pending["pending"][0]["decision"]["rule"],
        "response_policy.issue.urgent"
    );

    let approved = env.json(&web, &["approve", &id, "--note", "go ahead"]);
    let record = &approved["approval"];
    assert_eq!(record["decision"], "approved");
    assert_eq!(record["by"], "Ana Reviewer");
    assert_eq!(record["email"], "ana@example.com");
    assert_eq!(record["user"], "tester");
    assert_eq!(record["rule"], "response_policy.issue.urgent");
    assert_eq!(record["note"], "go ahead");
    // The record is the receiver's, in its private state.
    let file = std::path::Path::new(approved["record"].as_str().unwrap());
    assert!(
        file.starts_with(env.state(&web).join("approvals")) && file.is_file(),
        "{}",
        file.display()
    );

    assert_eq!(
        env.json(&web, &["check"])["messages"][0]["approval"],
        "approved"
    );
    assert_eq!(
        env.json(&web, &["pending"])["pending"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    let shown = env.ok(&web, &["show", &id]);
    assert!(
        shown.contains("person:       approved by Ana Reviewer"),
        "{shown}"
    );

    // A decision is never replaced.
    let out = env.run(&web, &["reject", &id, "--reason", "changed my mind"]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("already approved by Ana Reviewer"),
        "{}",
        stderr(&out)
    );

    env.ok(&web, &["process", &id]);
    let log = env.ok(&web, &["--json", "log", "--message", &id]);
    let events: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["delivered", "approved", "processed"]);
    assert_eq!(events[1]["rule"], "response_policy.issue.urgent");
    assert_eq!(events[1]["by"], "Ana Reviewer");
    assert_eq!(events[2]["rule"], "response_policy.issue.urgent");
}

#[test]
fn rejected_and_denied_mail_can_only_be_ignored() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.urgent(&api, "web", "issue", "Login is down");
    let out = env.run(&web, &["reject", &id, "--reason", ""]);
    assert_eq!(code(&out), 2, "an empty reason is refused");
    assert_eq!(
        code(&env.run(&web, &["reject", &id])),
        2,
        "--reason is required"
    );
    let rejected = env.json(&web, &["reject", &id, "--reason", "not our bug"]);
    assert_eq!(
        rejected["approval"]["by"], "tester",
        "no git identity: the OS user"
    );
    assert_eq!(rejected["approval"]["reason"], "not our bug");
    let out = env.run(&web, &["process", &id]);
    assert_eq!(code(&out), 5);
    assert!(
        stderr(&out).contains("which is rejected"),
        "{}",
        stderr(&out)
    );
    env.ok(&web, &["process", &id, "--outcome", "ignored"]);

    // Nothing to approve on ordinary mail.
    let q = env.question(&api, "web", "plain question");
    let out = env.run(&web, &["approve", &q]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("does not need approval"));

    // A denied sender's mail is rejected, never pending, never approvable.
    let config = web.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("deny_senders: []", "deny_senders: [api]");
    std::fs::write(&config, text).unwrap();
    let d = env.question(&api, "web", "let me in");
    let check = env.json(&web, &["check"]);
    let item = check["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == d.as_str())
        .unwrap()
        .clone();
    assert_eq!(item["decision"]["action"], "reject");
    assert_eq!(item["decision"]["rule"], "trust.deny_senders");
    assert_eq!(item["decision"]["operations"], serde_json::json!([]));
    assert_eq!(
        item["approval"], "not_needed",
        "nothing a person can approve"
    );
    assert!(
        env.json(&web, &["pending"])["pending"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert_eq!(code(&env.run(&web, &["approve", &d])), 5);
    assert_eq!(code(&env.run(&web, &["process", &d])), 5);
    env.ok(&web, &["process", &d, "--outcome", "ignored"]);
}

#[test]
fn review_needs_a_terminal() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.urgent(&api, "web", "issue", "Login is down");
    let out = env.run(&web, &["review"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("interactive terminal"),
        "{}",
        stderr(&out)
    );
    // Nothing was decided: no record, and the message still waits.
    let approvals = env.state(&web).join("approvals");
    assert!(
        std::fs::read_dir(&approvals).map_or(true, |mut d| d.next().is_none()),
        "{}",
        approvals.display()
    );
    assert_eq!(
        env.json(&web, &["pending"])["pending"][0]["id"],
        id.as_str()
    );
}

/// `aea review` in `web` on a real terminal: `script` gives it one and
/// feeds it what the test writes to its stdin.
fn review_under_script(env: &TestEnv, web: &std::path::Path) -> std::process::Child {
    review_under_script_with(env, web, "review")
}

/// `aea <args>` (a review) under `script`, in `dir`.
pub(crate) fn review_under_script_with(
    env: &TestEnv,
    dir: &std::path::Path,
    args: &str,
) -> std::process::Child {
    assert!(
        Command::new("script").arg("--version").output().is_ok(),
        "util-linux `script` is required for this test (.ci/run installs it)"
    );
    Command::new("script")
        .args(["-qec", &format!("{BIN} {args}"), "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.path().join("home"))
        .env("USER", "tester")
        .env("AEA_REGISTRY", env.registry())
        .env("SHELL", "/bin/sh")
        .env("TERM", "dumb")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The confirmation number `aea review` printed on the terminal.
pub(crate) fn shown_code(screen: &mut Lines) -> String {
    let line = screen.wait_for("the confirmation number", Duration::from_secs(60), |l| {
        l.contains("type this number back: ")
    });
    line.rsplit(' ').next().unwrap().trim().to_string()
}

#[test]
fn review_refuses_an_approval_typed_blind() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.urgent(&api, "web", "issue", "Login is down");
    // The old trick: `printf 'a\n…' | script -qc "aea review"` answers
    // every prompt without seeing the terminal.
    for blind in [&b"a\n"[..], b"a\nlooks right\n", b"a\nyes\n\n"] {
        let mut child = review_under_script(&env, &web);
        child.stdin.take().unwrap().write_all(blind).unwrap();
        let out = output_within(child, Duration::from_secs(60), "`aea review` under script");
        let text = stdout(&out);
        assert!(text.contains("type this number back"), "{text}");
        assert_eq!(
            env.json(&web, &["show", &id])["approval"],
            "pending",
            "{}",
            String::from_utf8_lossy(blind)
        );
    }
    // From a pipe, without a terminal, it does not start at all.
    let out = env.run(&web, &["review"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

#[test]
fn review_walks_through_pending_mail_on_a_terminal() {
    assert!(
        Command::new("script").arg("--version").output().is_ok(),
        "util-linux `script` is required for this test (.ci/run installs it)"
    );
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let first = env.urgent(&api, "web", "issue", "Login is down");
    let second = env.send(
        &api,
        "web",
        &["--type", "handoff", "--subject", "Take over"],
    );
    let third = env.send(&api, "web", &["--type", "handoff", "--subject", "And this"]);
    let mut child = review_under_script(&env, &web);
    let mut input = child.stdin.take().unwrap();
    let mut screen = Lines::read(child.stdout.take().unwrap());
    // Approve the first with a note (typing back the number the terminal
    // shows), reject the second (an empty reason is asked again), skip the
    // third.
    input.write_all(b"a\n").unwrap();
    let code = shown_code(&mut screen);
    input
        .write_all(format!("{code}\nlooks right\nr\n\nnot ours\ns\n").as_bytes())
        .unwrap();
    drop(input);
    screen.wait_for("the summary", Duration::from_secs(60), |l| {
        l.contains("reviewed: 1 approved, 1 rejected, 1 skipped, 0 left")
    });
    let out = output_within(child, Duration::from_secs(60), "`aea review` under script");
    assert!(out.status.success(), "{}", stderr(&out));
    let state = |id: &str| {
        env.json(&web, &["show", id])["approval"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(state(&first), "approved");
    assert_eq!(state(&second), "rejected");
    assert_eq!(state(&third), "pending");
    let record = env.json(&web, &["show", &second])["approval_record"].clone();
    assert_eq!(record["reason"], "not ours");
}

/// The `processed:` line of `show` names the next step; the command in it
/// (the first backquoted `aea process …`) is run as an agent would.
fn next_step(shown: &str) -> Option<Vec<String>> {
    let line = shown.lines().find(|l| l.starts_with("processed:"))?;
    let start = line.find("`aea process ")? + 1;
    let end = start + line[start..].find('`')?;
    Some(
        line[start..end]
            .split_whitespace()
            .skip(1)
            .map(str::to_string)
            .collect(),
    )
}

fn may(shown: &str) -> &str {
    shown
        .lines()
        .find_map(|l| l.strip_prefix("you may:"))
        .unwrap()
        .trim()
}

#[test]
fn show_says_what_is_allowed_before_and_after_a_person_decides() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");

    // Pending: only the pre-approval operations, and no step that
    // `process` would refuse.
    let id = env.urgent(&api, "web", "issue", "Login is down");
    let shown = env.ok(&web, &["show", &id]);
    assert!(
        may(&shown).ends_with("and nothing more until a person decides"),
        "{shown}"
    );
    assert!(!shown.contains("when done"), "{shown}");
    assert!(shown.contains("waits for a person"), "{shown}");

    // Approved: what the message asks, then a `process` that succeeds.
    env.ok(&web, &["approve", &id, "--note", "fix it"]);
    let shown = env.ok(&web, &["show", &id]);
    assert!(may(&shown).starts_with("what the message asks"), "{shown}");
    let step = next_step(&shown).expect(&shown);
    assert_eq!((step.len(), step[0].as_str()), (2, "process"), "{shown}");
    env.ok(&web, &step.iter().map(String::as_str).collect::<Vec<_>>());

    // Rejected by a person, and rejected by the policy: nothing, and the
    // suggested `process --outcome ignored` succeeds.
    let r = env.urgent(&api, "web", "issue", "Login is down");
    env.ok(&web, &["reject", &r, "--reason", "not ours"]);
    let rejected_by_person = env.ok(&web, &["show", &r]);
    let config = web.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("deny_senders: []", "deny_senders: [api]");
    std::fs::write(&config, text).unwrap();
    let d = env.question(&api, "web", "let me in");
    let rejected_by_policy = env.ok(&web, &["show", &d]);
    for (shown, why) in [
        (rejected_by_person, "a person rejected it"),
        (rejected_by_policy, "the policy rejects it"),
    ] {
        assert_eq!(may(&shown), format!("nothing: {why}"), "{shown}");
        let step = next_step(&shown).expect(&shown);
        assert_eq!(step[2..], ["--outcome", "ignored"]);
        env.ok(&web, &step.iter().map(String::as_str).collect::<Vec<_>>());
    }
}

/// `aea pending --all` lists what waits in every registered repository of
/// this user, grouped by repository and oldest first, from anywhere; it
/// leaves out an inbox another OS user owns and an agent whose key this
/// user does not hold.
#[test]
fn pending_all_lists_every_repository_of_this_user() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let docs = env.repo("docs");
    let ops = env.repo("ops");
    let first = env.urgent(&api, "web", "issue", "first for web");
    let second = env.urgent(&api, "web", "handoff", "second for web");
    let for_docs = env.urgent(&api, "docs", "issue", "for docs");
    env.urgent(&api, "ops", "issue", "for ops");
    // ops: an agent whose key is not in this user's key store.
    std::fs::remove_file(env.keys_dir().join("ops.key")).unwrap();
    // Another OS user's inbox, where one can be made.
    let theirs = match receiver_user() {
        Ok((uid, gid)) => {
            let other = env.repo("other");
            env.urgent(&api, "other", "issue", "for another user");
            std::os::unix::fs::chown(other.join(".aea"), Some(uid), Some(gid)).unwrap();
            true
        }
        Err(why) => {
            eprintln!("SKIPPED the other user's inbox: {why}");
            false
        }
    };
    let report = env.json(&env.path(), &["pending", "--all"]);
    assert_fits("pending-all", &report);
    let repos = report["repositories"].as_array().unwrap();
    let agents: Vec<&str> = repos.iter().map(|r| r["agent"].as_str().unwrap()).collect();
    assert_eq!(agents, ["api", "docs", "web"], "{report}");
    let ids = |agent: &str| -> Vec<String> {
        repos.iter().find(|r| r["agent"] == agent).unwrap()["pending"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids("web"), [first.clone(), second.clone()], "oldest first");
    assert_eq!(ids("docs"), [for_docs]);
    assert!(ids("api").is_empty());
    let text = env.ok(&env.path(), &["pending", "--all"]);
    assert!(text.contains("3 messages waiting"), "{text}");
    assert!(text.contains(&web.display().to_string()), "{text}");
    assert!(text.contains(&docs.display().to_string()), "{text}");
    assert!(!text.contains(&ops.display().to_string()), "{text}");
    if theirs {
        assert!(!text.contains("other"), "{text}");
    }
    // A repository that cannot be read is said and left out; the others
    // are still listed.
    let broken = env.repo("broken");
    std::fs::remove_dir_all(env.state(&broken)).ok();
    std::fs::write(env.state(&broken), "not a folder").unwrap();
    let out = env.run(&env.path(), &["--json", "pending", "--all"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("broken"), "{}", stderr(&out));
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        listed["repositories"].as_array().unwrap().len(),
        3,
        "{listed}"
    );
    std::fs::remove_file(env.state(&broken)).unwrap();
    // Deciding still happens in each repository, from anywhere.
    env.ok(
        &env.path(),
        &["--repo", web.to_str().unwrap(), "approve", &first],
    );
    let report = env.json(&env.path(), &["pending", "--all"]);
    let web_pending = report["repositories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["agent"] == "web")
        .unwrap()["pending"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(web_pending, 1, "{report}");
}

/// `aea review --all` walks through what waits in every repository of this
/// user, one after another, writing each decision into its own repository.
#[test]
fn review_all_walks_through_every_repository() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let docs = env.repo("docs");
    let for_docs = env.urgent(&api, "docs", "issue", "for docs");
    let for_web = env.urgent(&api, "web", "issue", "for web");
    let mut child = review_under_script_with(&env, &env.path(), "review --all");
    let mut input = child.stdin.take().unwrap();
    let mut screen = Lines::read(child.stdout.take().unwrap());
    // docs comes first (the registry's order): approve it; then reject web's.
    input.write_all(b"a\n").unwrap();
    let code = shown_code(&mut screen);
    input
        .write_all(format!("{code}\n\nr\nnot now\n").as_bytes())
        .unwrap();
    drop(input);
    screen.wait_for("the summary", Duration::from_secs(60), |l| {
        l.contains("reviewed: 1 approved, 1 rejected, 0 skipped, 0 left")
    });
    let out = output_within(
        child,
        Duration::from_secs(60),
        "`aea review --all` under script",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let state = |repo: &std::path::Path, id: &str| {
        env.json(repo, &["show", id])["approval"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(state(&docs, &for_docs), "approved");
    assert_eq!(state(&web, &for_web), "rejected");
}
