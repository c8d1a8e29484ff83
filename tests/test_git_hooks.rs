//! Git hooks with real git: what fires when, composition with foreign
//! hooks, where hooks go (worktrees, submodules, core.hooksPath), and
//! installing/uninstalling without leaving a trace. Also the Claude Code
//! settings merge and `aea uninstall` / `aea doctor`.

use crate::common::*;
use std::path::{Path, PathBuf};

/// A git repository named `name` with aea initialised (hooks and agent files).
fn git_repo(env: &TestEnv, name: &str) -> PathBuf {
    let dir = plain_git_repo(env, name);
    env.ok(&dir, &["init"]);
    dir
}

fn set_config(repo: &Path, from: &str, to: &str) {
    let path = repo.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{from}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn commit_checkout_and_merge_fire_their_hooks() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = git_repo(&env, "web");
    let out = env.commit_new_file(&web, "a.txt", &[]);
    assert!(out.status.success());
    assert!(
        !stderr(&out).contains("aea:"),
        "quiet without mail: {}",
        stderr(&out)
    );

    let first = env.question(&api, "web", "q1");
    let out = env.commit_new_file(&web, "b.txt", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("aea: 1 unprocessed message. Run `aea check`."),
        "{}",
        stderr(&out)
    );

    let out = env.git_ok(&web, &["checkout", "-q", "-b", "feature"]);
    let first_ref = env.short_ref(&web, &first);
    assert!(
        stderr(&out).contains(&format!("aea: 1 new message ({first_ref})")),
        "{}",
        stderr(&out)
    );
    let out = env.git_ok(&web, &["checkout", "-q", "main"]);
    assert!(
        !stderr(&out).contains("aea:"),
        "announced once: {}",
        stderr(&out)
    );

    env.git_ok(&web, &["checkout", "-q", "feature"]);
    assert!(env.commit_new_file(&web, "c.txt", &[]).status.success());
    env.git_ok(&web, &["checkout", "-q", "main"]);
    let second = env.question(&api, "web", "q2");
    let out = env.git_ok(&web, &["merge", "-q", "--no-ff", "-m", "merge", "feature"]);
    let err = stderr(&out);
    let second_ref = env.short_ref(&web, &second);
    assert!(
        err.contains(&second_ref) && !err.contains(&first_ref),
        "post-merge reports only the new one: {err}"
    );
    assert!(!err.contains(&second), "never the sender's id: {err}");
    assert!(err.contains("2 unprocessed in all"), "{err}");
}

#[test]
fn pull_rebase_fires_post_rewrite() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let remote = env.path().join("remote.git");
    env.git_ok(
        &env.path(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    let web = git_repo(&env, "web");
    // Only post-rewrite may speak, so what is printed is its doing.
    set_config(
        &web,
        "post_checkout:\n    enabled: true",
        "post_checkout:\n    enabled: false",
    );
    assert!(env.commit_new_file(&web, "base.txt", &[]).status.success());
    env.git_ok(&web, &["remote", "add", "origin", remote.to_str().unwrap()]);
    env.git_ok(&web, &["push", "-q", "origin", "main"]);
    let other = env.path().join("other");
    env.git_ok(
        &env.path(),
        &[
            "clone",
            "-q",
            remote.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
    );
    assert!(
        env.commit_new_file(&other, "theirs.txt", &[])
            .status
            .success()
    );
    env.git_ok(&other, &["push", "-q", "origin", "main"]);

    assert!(env.commit_new_file(&web, "mine.txt", &[]).status.success());
    let id = env.question(&api, "web", "arrived during the rebase");
    let out = env.git_ok(&web, &["pull", "-q", "--rebase", "origin", "main"]);
    let short_ref = env.short_ref(&web, &id);
    assert!(
        stderr(&out).contains(&format!("aea: 1 new message ({short_ref})")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_foreign_hook_still_runs_first_and_its_failure_still_blocks() {
    let env = TestEnv::new();
    let web = plain_git_repo(&env, "web");
    let hook = web.join(".git/hooks/pre-commit");
    let marker = env.path().join("foreign-ran");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\necho ran >> '{}'\nexit \"${{FOREIGN_EXIT:-0}}\"\n",
            marker.display()
        ),
    )
    .unwrap();
    make_executable(&hook);
    env.ok(&web, &["init", "--no-agent-files"]);
    assert!(web.join(".git/hooks/pre-commit.aea-orig").exists());

    assert!(env.commit_new_file(&web, "a.txt", &[]).status.success());
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");

    std::fs::write(web.join("b.txt"), "b").unwrap();
    env.git_ok(&web, &["add", "b.txt"]);
    let out = git_command(&web)
        .env("FOREIGN_EXIT", "3")
        .args(["commit", "-q", "-m", "b"])
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "the foreign hook's failure blocks the commit"
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\nran\n");
}

#[test]
fn pre_commit_blocks_only_where_the_policy_says_and_names_the_bypass() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = git_repo(&env, "web");
    env.send(
        &api,
        "web",
        &[
            "--type",
            "issue",
            "--priority",
            "urgent",
            "--subject",
            "down",
        ],
    );
    let out = env.commit_new_file(&web, "a.txt", &[]);
    assert!(
        !out.status.success(),
        "the default preset blocks on urgent mail awaiting approval"
    );
    let err = stderr(&out);
    assert!(err.contains("commit blocked"), "{err}");
    assert!(
        err.contains("--no-verify") && err.contains("AEA_SKIP_HOOKS=1"),
        "{err}"
    );

    let out = env.git(&web, &["commit", "-q", "--no-verify", "-m", "a"]);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::write(web.join("b.txt"), "b").unwrap();
    env.git_ok(&web, &["add", "b.txt"]);
    let out = env.git_with(
        &web,
        &["commit", "-q", "-m", "b"],
        &[("AEA_SKIP_HOOKS", "1")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("aea:"));

    set_config(&web, "block_on: urgent_pending", "block_on: never");
    let out = env.commit_new_file(&web, "c.txt", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("waiting for a person's approval"),
        "still reported"
    );
}

#[test]
fn a_missing_binary_prints_one_line_and_lets_git_go_on() {
    let env = TestEnv::new();
    let web = plain_git_repo(&env, "web");
    env.ok(&web, &["init", "--no-agent-files"]);
    // The binary the hook recorded is gone. (Deleting a copy of the real
    // binary would race with other tests forking: ETXTBSY.)
    let hook = web.join(".git/hooks/pre-commit");
    let text = std::fs::read_to_string(&hook).unwrap();
    let gone = env.path().join("gone").join("aea");
    std::fs::write(&hook, text.replace(BIN, gone.to_str().unwrap())).unwrap();
    assert!(
        std::fs::read_to_string(&hook)
            .unwrap()
            .contains("/gone/aea")
    );
    // PATH without any aea.
    let out = git_command(&web)
        .env("PATH", "/usr/bin:/bin:/usr/local/bin")
        .args(["commit", "-q", "--allow-empty", "-m", "x"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<String> = stderr(&out).lines().map(str::to_string).collect();
    assert_eq!(
        lines,
        ["aea: binary not found, mail not checked (run `aea hooks install` again)"]
    );
}

/// A binary that is garbage, crashes or hangs at the hook's aea path says
/// one line and lets the commit go on (a hang bounded by `timeout`); only
/// aea's own decision (exit 5) blocks, and AEA_HOOKS_FAIL_CLOSED=1 turns
/// the rest into a block too.
#[test]
fn a_broken_binary_fails_open_unless_asked_to_fail_closed() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = plain_git_repo(&env, "web");
    env.ok(&web, &["init", "--no-agent-files"]);
    // Mail waits, so the pre-commit hook starts aea.
    let id = env.question(&api, &web.display().to_string(), "waiting");
    let hook = web.join(".git/hooks/pre-commit");
    let original = std::fs::read_to_string(&hook).unwrap();
    let fake = env.path().join("fake-aea");
    let broken = [
        ("garbage", "\u{7f}ELF\u{1}\u{1}garbage that is no program\n"),
        ("crash", "#!/bin/sh\nkill -SEGV $$\n"),
        ("exit 1", "#!/bin/sh\nexit 1\n"),
        ("hang", "#!/bin/sh\nexec sleep 60\n"),
    ];
    let commit = |what: &str, fail_closed: bool| {
        let mut cmd = git_command(&web);
        cmd.env("AEA_HOOK_TIMEOUT", "1");
        if fail_closed {
            cmd.env("AEA_HOOKS_FAIL_CLOSED", "1");
        }
        let start = std::time::Instant::now();
        let out = cmd
            .args(["commit", "-q", "--allow-empty", "-m", what])
            .output()
            .unwrap();
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "{what}"
        );
        out
    };
    // While mail waits, an aea that cannot decide holds the gate: a pull
    // that breaks `.aea/`, or a flood that times aea out, must not open it.
    for (what, script) in broken {
        std::fs::write(&fake, script).unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(&hook, original.replace(BIN, fake.to_str().unwrap())).unwrap();
        let out = commit(what, false);
        assert!(
            !out.status.success(),
            "{what}: the gate opened with mail waiting"
        );
        assert!(
            stderr(&out).contains("could not decide") && stderr(&out).contains("mail waits"),
            "{what}: {}",
            stderr(&out)
        );
    }
    // With nothing waiting, a broken aea says one line and git goes on,
    // unless the user asked for the gate to fail closed.
    std::fs::write(&hook, &original).unwrap();
    env.ok(&web, &["process", &id]);
    for (what, script) in broken {
        std::fs::write(&fake, script).unwrap();
        std::fs::write(&hook, original.replace(BIN, fake.to_str().unwrap())).unwrap();
        let out = commit(what, false);
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("the hook could not run aea"),
            "{what}: {}",
            stderr(&out)
        );
        assert!(
            !commit(what, true).status.success(),
            "{what}: fail closed was asked"
        );
    }
}

/// The inboxes below the top of `tree` recorded as served by its hooks,
/// as `hooks status --json` run in `inbox` lists them.
fn recorded(env: &TestEnv, inbox: &Path) -> Vec<String> {
    env.json(inbox, &["hooks", "status"])["recorded_inboxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect()
}

/// A monorepo with two package inboxes and none at the top: `aea init` in
/// each installs the root's hooks and records the package, and the root's
/// pre-commit decides for each by its own policy, naming the package.
/// Only inboxes this user initialised count: a `.aea/` a pull brings is
/// not served, nor is a recorded one replaced by a symlink; uninstall
/// forgets a package, and the hooks go with the last one.
#[test]
fn package_inboxes_are_served_by_the_roots_hooks() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let mono = plain_git_repo(&env, "mono");
    let ui = mono.join("packages/ui");
    let svc = mono.join("packages/api");
    for (dir, id) in [(&ui, "ui"), (&svc, "svc")] {
        std::fs::create_dir_all(dir).unwrap();
        let out = env.run(dir, &["init", "--no-agent-files", "--id", id]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(!stderr(&out).contains("not installed"), "{}", stderr(&out));
    }
    assert!(mono.join(".git/hooks/pre-commit").exists());
    assert!(!mono.join(".aea").exists());
    let status = env.json(&ui, &["hooks", "status"]);
    assert_eq!(status["serve_this_inbox"], true, "{status}");
    assert_eq!(status["served_from_top"], "packages/ui", "{status}");
    assert_eq!(recorded(&env, &svc), ["packages/ui", "packages/api"]);
    let text = env.ok(&ui, &["hooks", "status"]);
    assert!(
        text.contains("this inbox is served by the git hooks at") && !text.contains("run `aea"),
        "{text}"
    );
    let doctor = env.run(&ui, &["doctor"]);
    assert_eq!(code(&doctor), 0, "{}", stdout(&doctor));

    // Quiet: nothing said, and aea not even started (the quiet markers).
    let out = env.commit_new_file(&mono, "a.txt", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("aea"), "{}", stderr(&out));

    // Urgent gated mail to one package blocks a commit at the top, naming
    // the package and never the message's words.
    let id = env.urgent(&api, "ui", "issue", "Login is down");
    let out = env.commit_new_file(&mono, "b.txt", &[]);
    assert_commit_blocked(&out, "urgent mail to packages/ui");
    let err = stderr(&out);
    assert!(err.contains("aea: packages/ui: commit blocked"), "{err}");
    assert!(
        !err.contains("packages/api"),
        "the quiet one is quiet: {err}"
    );
    assert!(!err.contains("Login") && !err.contains(&id), "{err}");
    // What it says to run works from the top, where the commit was made;
    // `aea check` alone there names the packages instead of `aea init`.
    assert!(
        err.contains("Run `aea -C packages/ui check`")
            && err.contains("(`aea -C packages/ui pending`"),
        "{err}"
    );
    let listed = env.json(&mono, &["-C", "packages/ui", "check"]);
    assert_eq!(listed["messages"][0]["id"], id.as_str(), "{listed}");
    let out = env.run(&mono, &["check"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("packages/ui, packages/api") && !stderr(&out).contains("aea init"),
        "{}",
        stderr(&out)
    );
    // Its own policy decides: the other package's says nothing about it.
    set_config(&svc, "block_on: urgent_pending", "block_on: gated_pending");
    env.ok(&ui, &["approve", &id]);
    env.ok(&ui, &["process", &id]);
    let out = env.commit_new_file(&mono, "b.txt", &[]);
    assert!(out.status.success(), "{}", stderr(&out));

    // A package of someone else's: its `.aea/`, with urgent mail waiting,
    // arrives by a pull. Nobody here initialised it, so no hook serves it.
    let remote = env.path().join("remote.git");
    env.git_ok(
        &env.path(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    env.git_ok(
        &mono,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    env.git_ok(&mono, &["push", "-q", "origin", "main"]);
    let other = env.path().join("other");
    env.git_ok(
        &env.path(),
        &[
            "clone",
            "-q",
            remote.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
    );
    let evil = other.join("packages/evil");
    std::fs::create_dir_all(&evil).unwrap();
    env.ok(
        &evil,
        &["init", "--no-agent-files", "--no-git-hooks", "--id", "evil"],
    );
    env.urgent(&api, "evil", "issue", "pulled");
    env.git_ok(&other, &["add", "-f", "packages/evil/.aea"]);
    env.git_ok(&other, &["commit", "-q", "--no-verify", "-m", "evil"]);
    env.git_ok(&other, &["push", "-q", "origin", "main"]);
    env.git_ok(&mono, &["pull", "-q", "--no-rebase", "origin", "main"]);
    assert!(
        std::fs::read_dir(mono.join("packages/evil/.aea"))
            .unwrap()
            .any(|e| e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("message-")),
        "the pull brought the mail"
    );
    let out = env.commit_new_file(&mono, "c.txt", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("evil"), "{}", stderr(&out));
    assert_eq!(recorded(&env, &ui), ["packages/ui", "packages/api"]);

    // A package inbox without git hooks: status says how to have them serve
    // it, and that command does it.
    let web = mono.join("packages/web");
    std::fs::create_dir_all(&web).unwrap();
    env.ok(
        &web,
        &["init", "--no-agent-files", "--no-git-hooks", "--id", "web"],
    );
    let text = env.ok(&web, &["hooks", "status"]);
    assert!(
        text.contains("NOT SERVING this inbox") && text.contains("`aea hooks install` here"),
        "{text}"
    );
    assert_eq!(
        env.json(&web, &["hooks", "status"])["serve_this_inbox"],
        false
    );
    env.ok(&web, &["hooks", "install"]);
    assert_eq!(
        env.json(&web, &["hooks", "status"])["serve_this_inbox"],
        true
    );
    // Uninstalled, it is forgotten; the hooks stay for the others.
    let out = env.ok(&web, &["uninstall", "--purge"]);
    assert!(
        out.contains("kept the git hooks: they still serve packages/ui, packages/api"),
        "{out}"
    );
    assert_eq!(recorded(&env, &ui), ["packages/ui", "packages/api"]);
    assert!(mono.join(".git/hooks/pre-commit").exists());

    // A recorded package replaced by a symlink to an inbox where urgent
    // mail waits: skipped, said, never followed.
    let decoy = env.repo("decoy");
    env.urgent(&api, "decoy", "issue", "through the link");
    std::fs::rename(&svc, env.path().join("svc-moved")).unwrap();
    std::os::unix::fs::symlink(&decoy, &svc).unwrap();
    let out = env.commit_new_file(&mono, "d.txt", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("aea: packages/api: skipped: packages/api is a symlink (never followed)"),
        "{err}"
    );
    assert!(!err.contains("commit blocked"), "{err}");
    let doctor = env.run(&ui, &["doctor"]);
    assert_eq!(code(&doctor), 6);
    assert!(
        stdout(&doctor).contains("packages/api skipped: packages/api is a symlink"),
        "{}",
        stdout(&doctor)
    );
    let out = env.ok(&ui, &["doctor", "--fix"]);
    assert!(out.contains("forgot the inbox packages/api"), "{out}");
    assert_eq!(recorded(&env, &ui), ["packages/ui"]);

    // The last package uninstalled takes the hooks with it.
    let out = env.ok(&ui, &["uninstall", "--purge"]);
    assert!(out.contains("removed git hook"), "{out}");
    assert!(!mono.join(".git/hooks/pre-commit").exists());
    assert!(!mono.join(".git/aea/served-inboxes").exists());
}

/// A monorepo `mono` with a package inbox `packages/ui` (initialised,
/// committed) and a clone of it, `other`, sharing a bare remote: a
/// collaborator whose commits reach `mono` by `git pull`.
fn monorepo_with_a_collaborator(env: &TestEnv) -> (PathBuf, PathBuf, PathBuf) {
    let mono = plain_git_repo(env, "mono");
    let ui = mono.join("packages/ui");
    std::fs::create_dir_all(&ui).unwrap();
    env.ok(&ui, &["init", "--no-agent-files", "--id", "ui"]);
    env.git_ok(&mono, &["add", "-A"]);
    env.git_ok(&mono, &["commit", "-q", "-m", "ui, with aea"]);
    let remote = env.path().join("remote.git");
    let remote = remote.to_str().unwrap();
    env.git_ok(&env.path(), &["init", "-q", "--bare", remote]);
    env.git_ok(&mono, &["remote", "add", "origin", remote]);
    env.git_ok(&mono, &["push", "-q", "-u", "origin", "main"]);
    let other = env.path().join("other");
    env.git_ok(
        &env.path(),
        &["clone", "-q", remote, other.to_str().unwrap()],
    );
    (mono, ui, other)
}

/// Commits all of `other` (without hooks) and pushes it.
fn push_all(env: &TestEnv, other: &Path, message: &str) {
    env.git_ok(other, &["add", "-A"]);
    env.git_ok(other, &["commit", "-q", "--no-verify", "-m", message]);
    env.git_ok(other, &["push", "-q", "origin", "main"]);
}

/// A pull that makes a package's `.aea/.gitignore` ignore nothing, with
/// the package's inbox quiet (the script skips aea while its quiet marker
/// holds): `git add -A` at the top stages the package's markers and log,
/// and the commit is refused, naming the package.
#[test]
fn a_quiet_package_does_not_let_its_staged_state_be_committed() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let (mono, ui, other) = monorepo_with_a_collaborator(&env);
    let id = env.question(&api, "ui", "the roadmap");
    env.ok(&ui, &["process", &id]);
    std::fs::write(other.join("packages/ui/.aea/.gitignore"), "!*\n").unwrap();
    push_all(&env, &other, "share the agent files");
    env.git_ok(&mono, &["pull", "-q", "--no-rebase", "origin", "main"]);
    env.until_quiet(&ui);

    std::fs::write(mono.join("work.txt"), "work\n").unwrap();
    env.git_ok(&mono, &["add", "-A"]);
    let staged = stdout(&env.git_ok(&mono, &["diff", "--cached", "--name-only"]));
    assert!(staged.contains("packages/ui/.aea/.processed/"), "{staged}");
    let out = env.git(&mono, &["commit", "-q", "-m", "work"]);
    assert!(
        !out.status.success()
            && stderr(&out).contains("aea: packages/ui: commit blocked")
            && stderr(&out).contains("of this machine's .aea/ are staged"),
        "a commit staging packages/ui/.aea/.processed/ went through a quiet package's hook\n{}",
        stderr(&out)
    );
}

/// A pull that puts a symlink where a package's `.aea/` was: git deletes
/// the mail waiting there. The post-merge hook at the top says the package
/// is skipped and what went with it; `doctor` in the package reports it
/// instead of failing. `aea hooks uninstall` at the top, which has no
/// inbox of its own, keeps the hooks while a package is served and takes
/// them away once none is.
#[test]
fn a_package_a_pull_replaces_is_said_and_its_hooks_can_go() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let (mono, ui, other) = monorepo_with_a_collaborator(&env);
    let out = env.ok(&mono, &["hooks", "uninstall"]);
    assert!(
        out.contains("kept the git hooks: they still serve packages/ui"),
        "{out}"
    );
    assert!(mono.join(".git/hooks/pre-commit").exists());

    let id = env.urgent(&api, "ui", "handoff", "the keys are in the vault");
    let short = env.short_ref(&ui, &id);
    let inbox = other.join("packages/ui/.aea");
    std::fs::remove_dir_all(&inbox).unwrap();
    std::fs::create_dir_all(other.join("shared/.aea")).unwrap();
    std::fs::write(other.join("shared/.aea/agent-config.yaml"), "x: 1\n").unwrap();
    std::os::unix::fs::symlink("../../shared/.aea", &inbox).unwrap();
    push_all(&env, &other, "share the agent config");
    let pulled = env.git(&mono, &["pull", "-q", "--no-rebase", "origin", "main"]);
    assert!(pulled.status.success(), "{}", stderr(&pulled));
    let said = stderr(&pulled);
    assert!(
        said.contains("aea: packages/ui: skipped: packages/ui/.aea is a symlink")
            && said.contains(&format!(
                "aea: packages/ui: 1 message that waited ({short}) is gone without aea processing it"
            ))
            && said.contains("send it again"),
        "{said}"
    );
    assert!(!said.contains("vault") && !said.contains(&id), "{said}");

    let out = env.run(&ui, &["doctor"]);
    let text = stdout(&out);
    assert_eq!(code(&out), 6, "{text}{}", stderr(&out));
    assert!(
        text.contains(".aea is a symlink") && text.contains(&short),
        "{text}"
    );

    // No package is served now: the hooks go, and the one left behind is named.
    let out = env.run(&mono, &["hooks", "uninstall"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("removed"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("no longer serve the inboxes below the top either: packages/ui"),
        "{}",
        stderr(&out)
    );
    assert!(!mono.join(".git/hooks/pre-commit").exists());
}

/// When aea cannot decide, the script's own fallback names the package
/// where mail waits: a folder name with a character that reorders text on
/// a terminal (U+202E, recordable) reaches it as `?`, never raw.
#[test]
fn the_scripts_fallback_never_prints_a_package_path_raw() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let api = env.repo("api");
    let mono = plain_git_repo(&env, "mono");
    let odd = mono.join("packages/ui\u{202e}txt.exe");
    std::fs::create_dir_all(&odd).unwrap();
    env.ok(&odd, &["init", "--no-agent-files", "--id", "ui"]);
    env.question(&api, "ui", "waiting");
    let hook = mono.join(".git/hooks/pre-commit");
    let fake = env.path().join("fake-aea");
    std::fs::write(&fake, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let original = std::fs::read_to_string(&hook).unwrap();
    std::fs::write(&hook, original.replace(BIN, fake.to_str().unwrap())).unwrap();
    let out = env.git(&mono, &["commit", "-q", "--allow-empty", "-m", "x"]);
    let err = stderr(&out);
    assert!(
        !out.status.success() && err.contains("could not decide (exit 1) and mail waits in"),
        "{err}"
    );
    assert!(!err.contains('\u{202e}'), "{err:?}");
    assert!(err.contains("packages/ui???txt.exe/.aea/"), "{err:?}");
}

/// A package inbox and one at the top: both served, each line naming its
/// inbox; a package whose path the hook scripts could not read back, or
/// one in another work tree, is refused with the choices.
#[test]
fn the_tops_inbox_and_a_packages_are_both_served() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let mono = git_repo(&env, "mono");
    let ui = mono.join("packages/ui");
    std::fs::create_dir_all(&ui).unwrap();
    env.ok(&ui, &["init", "--no-agent-files", "--id", "ui"]);
    env.question(&api, "mono", "to the top");
    env.urgent(&api, "ui", "issue", "to the package");
    let out = env.commit_new_file(&mono, "a.txt", &[]);
    assert_commit_blocked(&out, "urgent mail to the package");
    let err = stderr(&out);
    assert!(err.contains("aea: 1 unprocessed message. Run"), "{err}");
    assert!(
        err.contains("aea: packages/ui: 1 unprocessed message, 1 waiting"),
        "{err}"
    );
    // Hooks uninstalled at the top serve neither, and say so; installed
    // again from the package, they serve both.
    let out = env.run(&mono, &["hooks", "uninstall"]);
    assert!(
        stderr(&out).contains("no longer serve the inboxes below the top either: packages/ui"),
        "{}",
        stderr(&out)
    );
    assert!(!mono.join(".git/hooks/pre-commit").exists());
    env.ok(&ui, &["hooks", "install"]);
    assert_commit_blocked(&env.commit_new_file(&mono, "a.txt", &[]), "installed again");

    // The package uninstalled: the top's inbox keeps the hooks.
    let out = env.ok(&ui, &["uninstall", "--purge"]);
    assert!(
        out.contains("kept the git hooks: they still serve ."),
        "{out}"
    );
    assert!(mono.join(".git/hooks/pre-commit").exists());
    let out = env.commit_new_file(&mono, "b.txt", &[]);
    assert!(out.status.success(), "{}", stderr(&out));

    // A folder name with a space at its end cannot be recorded for the
    // scripts: init says so and installs nothing for it.
    let odd = mono.join("odd ");
    std::fs::create_dir_all(&odd).unwrap();
    let out = env.run(&odd, &["init", "--no-agent-files", "--id", "odd"]);
    assert!(
        stderr(&out).contains("git hooks not installed: git runs this repository's hooks at"),
        "{}",
        stderr(&out)
    );
    let out = env.run(&odd, &["hooks", "install"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert_eq!(
        env.json(&odd, &["hooks", "status"])["serve_this_inbox"],
        false
    );
    assert!(
        !env.ok(&odd, &["hooks", "status"])
            .contains("run `aea hooks install`")
    );
}

#[test]
fn hooks_go_to_the_common_dir_for_worktrees_and_submodules() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = git_repo(&env, "web");
    // The shared part of .aea/ is committed, so a linked worktree has it too.
    env.git_ok(&web, &["add", ".aea"]);
    env.git_ok(&web, &["commit", "-q", "-m", "aea"]);
    let wt = env.path().join("web-wt");
    env.git_ok(&web, &["worktree", "add", "-q", wt.to_str().unwrap()]);
    assert!(wt.join(".aea/agent-config.yaml").exists());
    let status = env.json(&wt, &["hooks", "status"]);
    assert_eq!(
        PathBuf::from(status["hooks_dir"].as_str().unwrap()),
        std::fs::canonicalize(web.join(".git/hooks")).unwrap()
    );
    assert!(
        status["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["state"] == "installed")
    );
    for dir in [".processed", ".tmp"] {
        std::fs::create_dir_all(wt.join(".aea").join(dir)).unwrap();
    }
    env.send(
        &api,
        "../web-wt",
        &["--type", "update", "--subject", "to the worktree"],
    );
    let out = env.commit_new_file(&wt, "wt.txt", &[]);
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("aea: 1 unprocessed message"),
        "{}",
        stderr(&out)
    );

    // A submodule's hooks live in the superproject's .git/modules/<name>/hooks.
    let lib = env.path().join("lib");
    std::fs::create_dir(&lib).unwrap();
    env.git_ok(&lib, &["init", "-q"]);
    assert!(env.commit_new_file(&lib, "lib.txt", &[]).status.success());
    env.git_ok(
        &web,
        &["submodule", "add", "-q", lib.to_str().unwrap(), "lib"],
    );
    let sub = web.join("lib");
    env.ok(&sub, &["init", "--no-agent-files", "--id", "web-lib"]);
    let hook = web.join(".git/modules/lib/hooks/pre-commit");
    assert!(
        std::fs::read_to_string(&hook)
            .unwrap()
            .contains("# aea-hook: pre-commit")
    );
    env.send(
        &api,
        "web-lib",
        &["--type", "update", "--subject", "to the submodule"],
    );
    let out = env.commit_new_file(&sub, "sub.txt", &[]);
    assert!(
        stderr(&out).contains("aea: 1 unprocessed message"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn core_hooks_path_local_and_global() {
    let env = TestEnv::new();
    let web = plain_git_repo(&env, "web");
    env.git_ok(&web, &["config", "core.hooksPath", ".githooks"]);
    env.ok(&web, &["init", "--no-agent-files"]);
    assert!(web.join(".githooks/pre-commit").exists());
    assert!(!web.join(".git/hooks/pre-commit").exists());
    let status = env.json(&web, &["hooks", "status"]);
    assert!(
        status["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["state"] == "installed")
    );
    env.ok(&web, &["hooks", "uninstall"]);
    assert!(
        !web.join(".githooks").exists(),
        "the folder install created is gone"
    );

    // Bypassed: installed in .git/hooks while core.hooksPath points elsewhere.
    env.git_ok(&web, &["config", "--unset", "core.hooksPath"]);
    env.ok(&web, &["hooks", "install"]);
    env.git_ok(&web, &["config", "core.hooksPath", "elsewhere"]);
    let status = env.json(&web, &["hooks", "status"]);
    assert_eq!(status["hooks"][0]["state"], "bypassed");
    env.git_ok(&web, &["config", "--unset", "core.hooksPath"]);
    env.ok(&web, &["hooks", "uninstall"]);

    // A global core.hooksPath is not written into without --force.
    let global_hooks = env.path().join("global-hooks");
    let gitconfig = env.path().join("home/.gitconfig");
    std::fs::write(
        &gitconfig,
        format!("[core]\n\thooksPath = {}\n", global_hooks.display()),
    )
    .unwrap();
    // Status suggests only what then succeeds: not a plain install.
    let out = env
        .cmd(&web)
        .env("GIT_CONFIG_GLOBAL", &gitconfig)
        .args(["hooks", "status"])
        .output()
        .unwrap();
    assert!(
        stdout(&out).contains("run `aea hooks install --force`")
            && !stdout(&out).contains("run `aea hooks install` to"),
        "{}",
        stdout(&out)
    );
    let out = env
        .cmd(&web)
        .env("GIT_CONFIG_GLOBAL", &gitconfig)
        .args(["hooks", "install"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("global or system git config"), "{err}");
    assert!(
        err.contains("--force") && err.contains("git config core.hooksPath .git/hooks"),
        "{err}"
    );
    assert!(!global_hooks.exists());
    let out = env
        .cmd(&web)
        .env("GIT_CONFIG_GLOBAL", &gitconfig)
        .args(["hooks", "install", "--force"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(global_hooks.join("post-merge").exists());
}

#[test]
fn a_temporary_index_is_not_corrupted() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = git_repo(&env, "web");
    env.question(&api, "web", "mail so the hook has work");
    assert!(env.commit_new_file(&web, "base.txt", &[]).status.success());
    std::fs::write(web.join("a.txt"), "a").unwrap();
    std::fs::write(web.join("b.txt"), "b").unwrap();
    env.git_ok(&web, &["add", "a.txt", "b.txt"]);
    // A partial commit: git runs pre-commit with GIT_INDEX_FILE pointing at
    // a temporary index that holds only a.txt.
    let out = env.git(&web, &["commit", "-q", "-m", "only a", "--", "a.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("aea: 1 unprocessed message"),
        "the hook ran: {}",
        stderr(&out)
    );
    let files = stdout(&env.git_ok(&web, &["show", "--name-only", "--format=", "HEAD"]));
    assert_eq!(files.trim(), "a.txt");
    let status = stdout(&env.git_ok(&web, &["status", "--porcelain", "--", "a.txt", "b.txt"]));
    assert_eq!(
        status, "A  b.txt\n",
        "b.txt is still staged, a.txt committed"
    );
    env.git_ok(&web, &["fsck", "--no-progress"]);
}

/// A foreign hook with an `.aea-orig` beside it cannot be moved aside:
/// status and doctor say what to do first instead of a plain install,
/// which would refuse.
#[test]
fn a_hook_install_cannot_move_aside_is_named_before_install() {
    let env = TestEnv::new();
    let web = plain_git_repo(&env, "web");
    env.ok(&web, &["init", "--no-agent-files"]);
    env.ok(&web, &["hooks", "uninstall"]);
    let hooks = web.join(".git/hooks");
    for name in ["pre-commit", "pre-commit.aea-orig"] {
        std::fs::write(hooks.join(name), "#!/bin/sh\nexit 0\n").unwrap();
    }
    let out = env.run(&web, &["hooks", "install"]);
    assert!(
        !out.status.success() && stderr(&out).contains("is not aea's; it was kept"),
        "{}",
        stderr(&out)
    );
    let status = env.ok(&web, &["hooks", "status"]);
    assert!(
        status.contains("pre-commit.aea-orig aside by hand, then run `aea hooks install`"),
        "{status}"
    );
    let doctor = stdout(&env.run(&web, &["doctor"]));
    assert!(
        doctor.contains("pre-commit.aea-orig aside by hand"),
        "{doctor}"
    );
}

#[test]
fn install_then_uninstall_leaves_the_hooks_byte_for_byte() {
    let env = TestEnv::new();
    let web = plain_git_repo(&env, "web");
    let hooks = web.join(".git/hooks");
    std::fs::write(hooks.join("post-merge"), "#!/bin/sh\necho mine\n").unwrap();
    make_executable(&hooks.join("post-merge"));
    env.ok(&web, &["init", "--no-agent-files", "--no-git-hooks"]);
    let before = snapshot_with_modes(&hooks);
    env.ok(&web, &["hooks", "install"]);
    assert_ne!(snapshot_with_modes(&hooks), before);
    env.ok(&web, &["hooks", "install"]);
    env.ok(&web, &["hooks", "uninstall"]);
    assert_eq!(snapshot_with_modes(&hooks), before);
}

#[test]
fn claude_settings_keep_user_hooks_and_uninstall_restores_them_exactly() {
    let env = TestEnv::new();
    let web = env.path().join("web");
    std::fs::create_dir_all(web.join(".claude")).unwrap();
    let user = "{\n    \"permissions\": {\"allow\": [\"Bash(npm test)\"]},\n    \"hooks\": {\n        \"UserPromptSubmit\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"./remind.sh\"}]}]\n    }\n}\n";
    std::fs::write(web.join(".claude/settings.json"), user).unwrap();
    std::fs::write(web.join("CLAUDE.md"), "# Rules\n").unwrap();
    let before = snapshot(&web);
    env.ok(&web, &["init"]);
    let settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(web.join(".claude/settings.json")).unwrap())
            .unwrap();
    let submit = settings["hooks"]["UserPromptSubmit"].as_array().unwrap();
    assert_eq!(submit[0]["hooks"][0]["command"], "./remind.sh");
    // aea found by the hook itself (PATH, else ~/.cargo/bin): the file is
    // committed, and names no path of this machine.
    for (event, command) in [
        ("UserPromptSubmit", &submit[1]["hooks"][0]["command"]),
        (
            "SessionStart",
            &settings["hooks"]["SessionStart"][0]["hooks"][0]["command"],
        ),
        ("Stop", &settings["hooks"]["Stop"][0]["hooks"][0]["command"]),
    ] {
        let command = command.as_str().unwrap();
        assert!(command.starts_with("a=$(command -v aea)"), "{command}");
        assert!(
            command.ends_with(&format!("exec \"$a\" check --hook claude --event {event}")),
            "{command}"
        );
        assert!(!command.contains(BIN), "{command}");
    }
    assert_eq!(settings["permissions"]["allow"][0], "Bash(npm test)");
    assert_eq!(settings["permissions"]["allow"][1], "Bash(aea check:*)");
    assert!(
        !settings["permissions"]["allow"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str().unwrap().contains("approve")),
        "approving is never pre-allowed"
    );
    assert!(web.join(".claude/commands/aea.md").exists());
    let after_first = snapshot(&web.join(".claude"));
    env.ok(&web, &["init"]);
    assert_eq!(
        snapshot(&web.join(".claude")),
        after_first,
        "re-running changes nothing"
    );

    let out = env.ok(&web, &["uninstall", "--purge"]);
    assert!(out.contains("reverted .claude/settings.json"), "{out}");
    assert_eq!(
        snapshot(&web),
        before,
        "the repository is as it was before init"
    );
    assert!(
        !std::fs::read_to_string(env.registry())
            .unwrap()
            .contains("[agents.web]")
    );
}

#[test]
fn edited_files_lose_only_aeas_parts_and_uninstall_keeps_a_backup() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = git_repo(&env, "web");
    env.question(&api, "web", "keep me");
    // The user edits both files after init.
    let claude = web.join("CLAUDE.md");
    std::fs::write(
        &claude,
        format!(
            "{}\nMy own rule.\n",
            std::fs::read_to_string(&claude).unwrap()
        ),
    )
    .unwrap();
    let settings = web.join(".claude/settings.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    v["model"] = "sonnet".into();
    std::fs::write(&settings, serde_json::to_string_pretty(&v).unwrap()).unwrap();

    let out = env.ok(&web, &["uninstall"]);
    assert!(
        out.contains("kept messages, markers and the log in"),
        "{out}"
    );
    let text = std::fs::read_to_string(&claude).unwrap();
    assert!(
        !text.contains("aea:begin") && text.contains("My own rule."),
        "{text}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(v, serde_json::json!({"model": "sonnet"}));
    assert!(!web.join(".aea").exists());
    assert!(!web.join(".git/hooks/pre-commit").exists());
    let backup = std::fs::read_dir(&web)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".aea-backup-")
        })
        .expect("a backup folder");
    let kept: Vec<_> = std::fs::read_dir(&backup)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("message-"))
        .collect();
    assert_eq!(kept.len(), 1);
    assert!(backup.join("agent.log").exists());
}

#[test]
fn doctor_names_each_problem_with_its_fix() {
    let env = TestEnv::new();
    let web = git_repo(&env, "web");
    let out = env.run(&web, &["doctor"]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    // The hook as an older aea wrote it (whatever version this one writes).
    let hook = web.join(".git/hooks/post-merge");
    let current = format!("aea-hook-version: {}", aea::hooks::HOOK_VERSION);
    let text = std::fs::read_to_string(&hook).unwrap();
    assert!(text.contains(&current), "{text}");
    std::fs::write(&hook, text.replace(&current, "aea-hook-version: 0")).unwrap();
    std::fs::remove_file(web.join(".claude/settings.json")).unwrap();
    let out = env.run(&web, &["doctor"]);
    assert_eq!(code(&out), 6);
    let text = stdout(&out);
    assert!(text.contains("post-merge outdated"), "{text}");
    assert!(text.contains("-> aea hooks install"), "{text}");
    assert!(text.contains("-> aea hooks install --agents"), "{text}");
    env.ok(&web, &["hooks", "install", "--agents"]);
    assert_eq!(code(&env.run(&web, &["doctor"])), 0);
}

/// Files with their bytes and permission bits.
fn snapshot_with_modes(dir: &Path) -> Vec<(PathBuf, Vec<u8>, u32)> {
    use std::os::unix::fs::PermissionsExt;
    snapshot(dir)
        .into_iter()
        .map(|(p, bytes)| {
            let mode = std::fs::symlink_metadata(&p).unwrap().permissions().mode();
            (p, bytes, mode)
        })
        .collect()
}

/// `hooks run` takes the hooks aea installs and nothing else: a hook it
/// does not know is a usage error naming the valid ones, not silently run
/// as some other hook.
#[test]
fn hooks_run_refuses_a_hook_it_does_not_install() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let out = env.run(&web, &["hooks", "run", "pre-push"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("[possible values: pre-commit, post-merge, post-checkout, post-rewrite]"),
        "{}",
        stderr(&out)
    );
}

/// After a flood, a post-* hook names a few of the new messages and
/// counts the rest: one short line, however many arrived.
#[test]
fn a_post_checkout_line_names_five_new_messages_and_counts_the_rest() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = git_repo(&env, "web");
    env.commit_new_file(&web, "a.txt", &[]);
    for n in 0..8 {
        env.question(&api, "web", &format!("q{n}"));
    }
    let out = env.git_ok(&web, &["checkout", "-q", "-b", "feature"]);
    let said = stderr(&out);
    assert!(
        said.contains("aea: 8 new messages (") && said.contains(" and 3 more);"),
        "{said}"
    );
    assert_eq!(refs_named(&said), 5, "{said}");
}

/// An aea the hook timed out (a flood of files planted by a pull, many
/// inboxes) blocks the commit: the fallback would have read `.processed/`
/// markers, which the same pull can plant for the waiting mail itself.
#[test]
fn a_hook_that_times_out_blocks_the_commit_whatever_the_markers_say() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = git_repo(&env, "web");
    let id = env.urgent(&api, "web", "handoff", "waiting");
    // A marker planted for the waiting message, as a pulled commit could.
    let file = file_of(&web, &id);
    std::fs::create_dir_all(web.join(".aea/.processed")).unwrap();
    std::fs::write(web.join(".aea/.processed").join(&file), "").unwrap();
    let out = env.commit_new_file(&web, "a.txt", &[("AEA_HOOK_TIMEOUT", "0.001")]);
    assert_commit_blocked(&out, "aea timed out in the hook");
    assert!(
        stderr(&out).contains("could not decide (exit 124)"),
        "{}",
        stderr(&out)
    );
    // Given the time, aea decides itself, and the planted marker proves
    // nothing: still blocked, by aea's decision.
    let out = env.commit_new_file(&web, "b.txt", &[]);
    assert_commit_blocked(&out, "aea decides with the planted marker");
}

/// The hooks are the repository's, shared by its work trees: giving them
/// up for a package of a linked work tree keeps them while the main work
/// tree's packages are served, and gated mail there still blocks.
#[test]
fn a_linked_work_trees_uninstall_keeps_the_hooks_another_serves() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let mono = plain_git_repo(&env, "mono");
    let ui = mono.join("packages/ui");
    std::fs::create_dir_all(&ui).unwrap();
    env.ok(&ui, &["init", "--no-agent-files", "--id", "ui"]);
    env.commit_new_file(&mono, "base.txt", &[]);
    let linked = env.path().join("mono-linked");
    env.git_ok(&mono, &["worktree", "add", "-q", linked.to_str().unwrap()]);
    let other = linked.join("packages/other");
    std::fs::create_dir_all(&other).unwrap();
    env.ok(
        &other,
        &[
            "init",
            "--no-agent-files",
            "--no-git-hooks",
            "--id",
            "other",
        ],
    );
    env.ok(&other, &["hooks", "install"]);
    let out = env.run(&other, &["uninstall"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        mono.join(".git/hooks/pre-commit").exists(),
        "the main work tree's package lost its hooks"
    );
    env.urgent(&api, "ui", "handoff", "waiting");
    let out = env.commit_new_file(&mono, "after.txt", &[]);
    assert_commit_blocked(&out, "urgent mail to the main work tree's package");
}
