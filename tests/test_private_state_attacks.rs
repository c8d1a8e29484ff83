//! An adversary's pass over the private state (SPEC §2, §15.1) and the
//! pre-commit gate that guards it: a hostile upstream whose commits reach
//! the victim by `git clone` / `git pull`, and a sender who floods the
//! inbox so that aea does not answer within the hook's time limit.
//!
//! Each test plays the attack with real git and the real binary and
//! asserts what the README promises the victim; they check only what a
//! user sees (exit codes, what git commits, what `pending` / `doctor`
//! say), not where aea keeps its state.

use crate::common::*;
use serde_json::json;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

/// The author's machine: `web`, a git repository that uses aea (config
/// and prompts committed as `init` leaves them, no hooks).
struct Upstream {
    env: TestEnv,
    repo: PathBuf,
}

impl Upstream {
    fn new() -> Self {
        let env = TestEnv::new();
        let repo = env.path().join("web");
        std::fs::create_dir_all(&repo).unwrap();
        env.git_ok(&repo, &["init", "-q"]);
        env.ok(&repo, &["init", "--no-git-hooks", "--no-agent-files"]);
        std::fs::write(repo.join("README.md"), "web\n").unwrap();
        env.git_ok(&repo, &["add", "-A"]);
        env.git_ok(&repo, &["commit", "-q", "-m", "web, with aea"]);
        Upstream { env, repo }
    }

    /// Commits everything in the work tree, ignored files under `paths`
    /// included (`git add -f`), deletions too.
    fn commit_all(&self, paths: &[&str], message: &str) {
        self.env.git_ok(&self.repo, &["add", "-A"]);
        if !paths.is_empty() {
            let mut args = vec!["add", "-f", "--"];
            args.extend_from_slice(paths);
            self.env.git_ok(&self.repo, &args);
        }
        self.env
            .git_ok(&self.repo, &["commit", "-q", "-m", message]);
    }
}

/// The victim's machine: a clone of the upstream as `web` with aea's
/// hooks installed, and `api`, a local agent whose key `web` knows.
struct Victim {
    env: TestEnv,
    web: PathBuf,
    api: PathBuf,
}

impl Victim {
    fn clone_of(up: &Upstream) -> Self {
        let env = TestEnv::new();
        let web = env.path().join("web");
        env.git_ok(
            &env.path(),
            &[
                "clone",
                "-q",
                up.repo.to_str().unwrap(),
                web.to_str().unwrap(),
            ],
        );
        env.ok(&web, &["init", "--no-agent-files"]);
        let api = env.repo("api");
        Victim { env, web, api }
    }

    /// An urgent handoff from `api`: gated, it waits for a person.
    fn urgent_handoff(&self, subject: &str) -> String {
        self.env.urgent(&self.api, "web", "handoff", subject)
    }

    fn pull(&self) -> Output {
        self.env.git(&self.web, &["pull", "-q", "--no-rebase"])
    }

    /// `git commit` of a new file, with aea's hooks on.
    fn try_commit(&self, file: &str) -> Output {
        std::fs::write(self.web.join(file), file).unwrap();
        self.env.git_ok(&self.web, &["add", "--", file]);
        self.env.git(&self.web, &["commit", "-q", "-m", file])
    }
}

// ---------------------------------------------------------------------------
// A file committed where `.aea/` keeps a folder

/// A commit that puts a regular file where `.aea/` has one of its folders
/// (`.processed`, `.tmp`, `.quarantine`; `git add -f`, as any ignored path)
/// makes every aea command stop with "exists but is not a directory",
/// exit 1, and the pre-commit script lets git go on after any exit but 5,
/// 124 and 137: the gate opens while an urgent handoff waits for a person.
/// (The same with a symbolic link there is exit 5 and blocks, as it should.)
#[test]
fn a_pulled_file_in_place_of_an_inbox_folder_does_not_open_the_commit_gate() {
    let mut opened = Vec::new();
    for folder in [".processed", ".tmp", ".quarantine"] {
        let up = Upstream::new();
        let victim = Victim::clone_of(&up);
        victim.urgent_handoff("deploy to prod");
        assert_commit_blocked(&victim.try_commit("a.txt"), "before the pull");

        let path = up.repo.join(".aea").join(folder);
        if path.exists() {
            std::fs::remove_dir_all(&path).unwrap();
        }
        std::fs::write(&path, "not a folder\n").unwrap();
        up.commit_all(&[&format!(".aea/{folder}")], "tidy .aea");
        let pulled = victim.pull();
        assert!(pulled.status.success(), "git pull: {}", stderr(&pulled));
        assert!(
            std::fs::symlink_metadata(victim.web.join(".aea").join(folder))
                .unwrap()
                .is_file(),
            "the pull did not bring the file"
        );

        let out = victim.try_commit("b.txt");
        if out.status.success() {
            opened.push(format!(".aea/{folder}: {}", stderr(&out).trim()));
        }
    }
    assert!(
        opened.is_empty(),
        "a pulled file in place of an inbox folder opened the pre-commit gate while an urgent handoff waits for a person:\n{}",
        opened.join("\n")
    );
}

// ---------------------------------------------------------------------------
// A hook whose aea does not decide in time

/// A git repository `web` under `env` with aea's hooks and `policy`.
fn hooked_repository(env: &TestEnv, policy: &str) -> PathBuf {
    std::fs::set_permissions(env.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let web = env.path().join("web");
    std::fs::create_dir(&web).unwrap();
    git(&web, &["init", "-q"]);
    env.ok(
        &web,
        &["init", "--no-agent-files", "--shared", "--policy", policy],
    );
    git(&web, &["add", "-A"]);
    git(&web, &["commit", "-q", "-m", "base"]);
    web
}

/// Points the installed pre-commit hook at a program that never answers
/// in time, as aea does under a flood (see the test with a real flood).
fn make_the_hooks_aea_hang(env: &TestEnv, web: &Path) {
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
}

/// `git commit` of a new file with the hook's time limit at 1 s.
fn commit_within_a_second(env: &TestEnv, repo: &Path, name: &str) -> Output {
    std::fs::write(repo.join(name), name).unwrap();
    git(repo, &["add", name]);
    git_command(repo)
        .env("HOME", env.path().join("home"))
        .env("AEA_REGISTRY", env.registry())
        .env("AEA_HOOK_TIMEOUT", "1")
        .args(["commit", "-q", "-m", name])
        .output()
        .unwrap()
}

/// An unsigned urgent handoff from `mallory` to `web`, as a sender writes
/// it straight into the inbox: valid JSON whose priority is `urgent`, but
/// spelled with a JSON escape (`"\u0075rgent"`), or with the value on the
/// next line — what the script's `grep '"priority"[[:space:]]*:[[:space:]]*"urgent"'`
/// does not see.
fn urgent_spelled_otherwise(id: &str, spelling: &str) -> (String, String) {
    let name = format!("message-20261121T100000000Z-from-mallory-{}.json", &id[..8]);
    let body = json!({
        "protocol_version": "1.0",
        "message_id": id,
        "message_type": "handoff",
        "timestamp": "2026-11-21T10:00:00.000Z",
        "priority": "PRIORITY",
        "requires_response": false,
        "from": {"agent_id": "mallory", "repo_path": "/src/mallory", "user": "m"},
        "to": {"agent_id": "web"},
        "message": {"subject": "merge my branch now", "body": "b", "context": {}, "attachments": []},
        "metadata": {"conversation_id": id, "tags": []},
    })
    .to_string()
    .replace("\"PRIORITY\"", spelling);
    (name, body)
}

const SPELLINGS: [&str; 2] = ["\"\\u0075rgent\"", "\n\"urgent\""];

/// The script's fallback for an aea that did not decide in time greps the
/// inbox for `"priority": "urgent"` literally. A sender who writes the
/// same JSON another way (an escape, a line break) gets its urgent gated
/// handoff past the gate whenever aea is slow — and a flood makes it slow.
#[test]
fn a_hook_timeout_lets_no_urgent_mail_spelled_otherwise_through() {
    let mut opened = Vec::new();
    for (n, spelling) in SPELLINGS.iter().enumerate() {
        let env = TestEnv::new();
        let web = hooked_repository(&env, "default");
        let id = format!("0badc0de-0000-4000-8000-00000000000{n}");
        let (name, text) = urgent_spelled_otherwise(&id, spelling);
        std::fs::write(web.join(".aea").join(&name), text).unwrap();
        // aea itself reads it as urgent and gated: the gate holds.
        let item = &env.json(&web, &["check"])["messages"][0];
        assert_eq!(item["priority"], "urgent", "{item}");
        assert_eq!(item["approval"], "pending", "{item}");
        assert_commit_blocked(
            &commit_within_a_second(&env, &web, "a"),
            "with aea answering",
        );

        make_the_hooks_aea_hang(&env, &web);
        let out = commit_within_a_second(&env, &web, "b");
        if out.status.success() {
            opened.push(format!("{spelling:?}: {}", stderr(&out).trim()));
        }
    }
    assert!(
        opened.is_empty(),
        "with aea not answering in time, urgent gated mail spelled otherwise let a commit through:\n{}",
        opened.join("\n")
    );
}

/// `policies/strict.yaml` blocks commits on every gated message
/// (`block_on: gated_pending`); the script's fallback for an aea that did
/// not decide in time only looks for urgent mail, so a high-priority
/// handoff from a known agent, sent with `aea send`, no longer holds a
/// commit once aea is slow (a flood).
#[test]
fn a_hook_timeout_under_gated_pending_lets_no_gated_mail_through() {
    let env = TestEnv::new();
    let web = hooked_repository(&env, "strict");
    let api = env.repo("api");
    env.send(
        &api,
        "../web",
        &[
            "--type",
            "handoff",
            "--priority",
            "high",
            "--subject",
            "take over the release",
        ],
    );
    assert_commit_blocked(
        &commit_within_a_second(&env, &web, "a"),
        "with aea answering",
    );
    make_the_hooks_aea_hang(&env, &web);
    assert_commit_blocked(
        &commit_within_a_second(&env, &web, "b"),
        "with aea not answering in time (block_on: gated_pending)",
    );
}

/// The same as [`a_hook_timeout_lets_no_urgent_mail_spelled_otherwise_through`]
/// with nothing faked: another OS user, in an inbox shared with
/// `--shared`, delivers its urgent handoff (priority spelled with an
/// escape) and a few hundred valid messages under the size limit whose
/// bodies are slow to judge (hard-stop words). The hook reads fewer files
/// than its cap, so it does not fail closed on "not read"; aea takes
/// longer than the hook's limit to judge them, is killed, and the
/// fallback grep finds nothing urgent: the commit goes through.
#[test]
fn a_flood_from_another_user_cannot_time_the_gate_out_for_its_urgent_mail() {
    let ids = match sender_user() {
        Ok(ids) => ids,
        Err(why) => {
            eprintln!("SKIPPED a_flood_from_another_user_cannot_time_the_gate_out…: {why}");
            return;
        }
    };
    let env = TestEnv::new();
    let web = hooked_repository(&env, "default");
    let home = env.path().join("sender-home");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(ids.0), Some(ids.1)).unwrap();

    // What the sender writes, made here and copied in as that user.
    let staged = env.path().join("staged");
    std::fs::create_dir(&staged).unwrap();
    let (name, text) =
        urgent_spelled_otherwise("0badc0de-0000-4000-8000-00000000f100", SPELLINGS[0]);
    std::fs::write(staged.join(&name), text).unwrap();
    let body = "rm -r f ".repeat(120_000);
    for i in 0..200 {
        let id = format!("0badc0de-0000-4000-8000-{i:012x}");
        let message = json!({
            "protocol_version": "1.0",
            "message_id": id,
            "message_type": "question",
            "timestamp": "2026-11-21T10:00:00.000Z",
            "priority": "low",
            "requires_response": false,
            "from": {"agent_id": "mallory", "repo_path": "/src/mallory", "user": "m"},
            "to": {"agent_id": "web"},
            "message": {"subject": format!("q{i}"), "body": body, "context": {}, "attachments": []},
            "metadata": {"conversation_id": id, "tags": []},
        });
        std::fs::write(
            staged.join(format!(
                "message-20261121T1001{i:05}Z-from-mallory-{i:08x}.json"
            )),
            message.to_string(),
        )
        .unwrap();
    }
    for entry in std::fs::read_dir(&staged).unwrap() {
        std::fs::set_permissions(
            entry.unwrap().path(),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
    }
    std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o755)).unwrap();
    let copy = format!("cp {}/message-* .aea/", staged.display());
    let out = as_user(
        ids,
        &home,
        &web,
        "sh",
        &["-c", &copy],
        Duration::from_secs(120),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(inbox_files(&web).len() < aea::mailbox::HOOK_READ_CAP);

    let out = commit_within_a_second(&env, &web, "a");
    assert_commit_blocked(
        &out,
        "a flood under the hook's read cap timed aea out and the fallback missed the urgent handoff",
    );
}

// ---------------------------------------------------------------------------
// Git deletes what `.aea/` ignores

/// A commit that turns `.aea/` into a file makes `git pull` (or a checkout
/// of that commit: reviewing a branch) delete everything in the victim's
/// `.aea/`, ignored files included — waiting mail and the v1.0 log; the
/// next commit puts `.aea/` back. An urgent handoff that waited for a
/// person is then gone without a trace: `check`, `pending` and the hooks
/// are quiet, `doctor` finds nothing, while the sender's `status` says
/// delivered. The private state (SPEC §2) remembered the message (its id
/// index), but nothing asks it.
#[test]
fn a_pull_that_swaps_the_inbox_for_a_file_loses_no_waiting_mail_unnoticed() {
    let up = Upstream::new();
    let victim = Victim::clone_of(&up);
    // `init` wrote this machine's key into the committed config; the
    // victim keeps that out of the project (a dirty config would only make
    // git refuse the pull).
    victim
        .env
        .git_ok(&victim.web, &["checkout", "--", ".aea/agent-config.yaml"]);
    let id = victim.urgent_handoff("rotate the prod credentials");
    let short = victim.env.short_ref(&victim.web, &id);
    let pending = victim.env.json(&victim.web, &["pending"]);
    assert!(pending.to_string().contains(&id), "{pending}");

    let inbox = up.repo.join(".aea");
    std::fs::remove_dir_all(&inbox).unwrap();
    std::fs::write(&inbox, "moved to docs/\n").unwrap();
    up.commit_all(&[], "move the agent config");
    let pulled = victim.pull();
    assert!(pulled.status.success(), "git pull: {}", stderr(&pulled));
    assert!(
        victim.web.join(".aea").is_file(),
        "the pull did not bring the file"
    );
    up.env.git_ok(&up.repo, &["revert", "--no-edit", "HEAD"]);
    let pulled = victim.pull();
    assert!(pulled.status.success(), "git pull: {}", stderr(&pulled));
    assert!(victim.web.join(".aea/agent-config.yaml").is_file());

    let pending = victim.env.json(&victim.web, &["pending"]);
    if pending.to_string().contains(&id) {
        return;
    }
    let out = victim.env.run(&victim.web, &["doctor"]);
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        code(&out) == 6 && (said.contains(&id) || said.contains(&short)),
        "an urgent handoff ({short}) that waited for a person vanished with a pull and nothing names it\npending: {pending}\ndoctor (exit {}):\n{said}",
        code(&out)
    );
}

/// The same pull, seen as it happens: while a file or a symlink stands
/// where `.aea/` was, the mail git deleted with it is said to be gone —
/// by the post-merge hook, `check` and `doctor` (a finding, not a
/// failure), each in one line with a count and aea's own reference, never
/// the sender's words or names, and how to get it back. Once a later pull
/// puts `.aea/` back, the hook says it once more, and only once.
#[test]
fn mail_a_pull_deletes_with_the_inbox_is_said_to_be_lost() {
    for what in ["file", "symlink"] {
        let up = Upstream::new();
        let victim = Victim::clone_of(&up);
        victim
            .env
            .git_ok(&victim.web, &["checkout", "--", ".aea/agent-config.yaml"]);
        let id = victim.urgent_handoff("rotate the prod credentials");
        let short = victim.env.short_ref(&victim.web, &id);
        let lost = |said: &str, moment: &str| {
            assert!(
                said.contains(&format!(
                    "1 message that waited ({short}) is gone without aea processing it"
                )) && said.contains("Ask its sender to send it again (`aea status` on their side"),
                "{what}, {moment}: the lost handoff is not said\n{said}"
            );
            assert!(
                !said.contains("rotate") && !said.contains(&id) && !said.contains("from-api"),
                "{what}, {moment}: {said}"
            );
        };

        let inbox = up.repo.join(".aea");
        std::fs::remove_dir_all(&inbox).unwrap();
        if what == "file" {
            std::fs::write(&inbox, "moved to docs/\n").unwrap();
        } else {
            std::fs::create_dir(up.repo.join("docs")).unwrap();
            std::fs::write(up.repo.join("docs/agent.md"), "here now\n").unwrap();
            std::os::unix::fs::symlink("docs", &inbox).unwrap();
        }
        up.commit_all(&[], "move the agent config");
        let pulled = victim.pull();
        assert!(pulled.status.success(), "git pull: {}", stderr(&pulled));
        lost(&stderr(&pulled), "post-merge");
        let out = victim.env.run(&victim.web, &["check"]);
        assert!(!out.status.success(), "{}", stdout(&out));
        lost(&stderr(&out), "check");
        let out = victim.env.run(&victim.web, &["doctor"]);
        assert_eq!(
            code(&out),
            6,
            "{what}: doctor\n{}{}",
            stdout(&out),
            stderr(&out)
        );
        let said = stdout(&out);
        assert!(said.contains(&format!(".aea is a {what}")), "{said}");
        lost(&said, "doctor");

        up.env.git_ok(&up.repo, &["revert", "--no-edit", "HEAD"]);
        let pulled = victim.pull();
        assert!(pulled.status.success(), "git pull: {}", stderr(&pulled));
        lost(&stderr(&pulled), "post-merge, .aea/ back");
        let out = victim
            .env
            .git(&victim.web, &["checkout", "-q", "-b", "next"]);
        assert!(
            !stderr(&out).contains("gone without aea"),
            "{what}: said twice\n{}",
            stderr(&out)
        );
    }
}

/// `.aea/.gitignore` is committed, so the upstream decides what of `.aea/`
/// git tracks. A pull that rewrites it to ignore nothing makes the
/// victim's next `git add -A && git commit` (what agents run) commit the
/// mail it received and the audit log — and push them upstream; neither
/// the pre-commit hook nor `doctor` says a word.
#[test]
fn a_pulled_gitignore_gets_no_received_mail_committed() {
    let up = Upstream::new();
    let victim = Victim::clone_of(&up);
    std::fs::write(up.repo.join(".aea/.gitignore"), "# shared\n!*\n").unwrap();
    up.commit_all(&[], "share the agent files");
    let pulled = victim.pull();
    assert!(pulled.status.success(), "git pull: {}", stderr(&pulled));

    victim.env.send(
        &victim.api,
        "web",
        &[
            "--type",
            "question",
            "--subject",
            "the acquisition",
            "--body",
            "confidential: we sign on Friday",
        ],
    );
    std::fs::write(victim.web.join("work.txt"), "work\n").unwrap();
    victim.env.git_ok(&victim.web, &["add", "-A"]);
    let out = victim.env.git(&victim.web, &["commit", "-q", "-m", "work"]);
    if !out.status.success() {
        return;
    }
    let tree = stdout(&victim.env.git_ok(
        &victim.web,
        &["ls-tree", "-r", "--name-only", "HEAD", "--", ".aea"],
    ));
    let leaked: Vec<&str> = tree
        .lines()
        .filter(|p| p.contains("/message-") || p.ends_with("agent.log"))
        .collect();
    assert!(
        leaked.is_empty(),
        "received mail and the log were committed after a pull rewrote .aea/.gitignore: {leaked:?}"
    );
}

/// The same pulled `.gitignore`, with nothing waiting: the pre-commit
/// script skips aea while aea's quiet marker says the inbox is still, and
/// it is aea that refuses to commit this machine's `.aea/` state. The
/// marker made after the pull, then `git add -A`: the commit must still be
/// refused, and the processed message's marker and the log stay out of it.
#[test]
fn a_quiet_inbox_does_not_let_its_staged_state_be_committed() {
    let up = Upstream::new();
    let victim = Victim::clone_of(&up);
    let id = victim.env.question(&victim.api, "web", "the acquisition");
    victim.env.ok(&victim.web, &["process", &id]);
    std::fs::write(up.repo.join(".aea/.gitignore"), "# shared\n!*\n").unwrap();
    up.commit_all(&[], "share the agent files");
    let pulled = victim.pull();
    assert!(pulled.status.success(), "git pull: {}", stderr(&pulled));
    victim.env.until_quiet(&victim.web);

    std::fs::write(victim.web.join("work.txt"), "work\n").unwrap();
    victim.env.git_ok(&victim.web, &["add", "-A"]);
    let staged = stdout(&victim.env.git_ok(
        &victim.web,
        &["diff", "--cached", "--name-only", "--", ".aea"],
    ));
    assert!(staged.contains(".aea/.processed/"), "{staged}");
    let out = victim.env.git(&victim.web, &["commit", "-q", "-m", "work"]);
    assert!(
        !out.status.success() && stderr(&out).contains("of this machine's .aea/ are staged"),
        "a commit staging .aea/.processed/ and the log went through a quiet inbox's hook\n{}",
        stderr(&out)
    );
    // `git commit -a` makes the commit from another index: aea decides.
    let out = victim
        .env
        .git(&victim.web, &["commit", "-q", "-a", "-m", "work"]);
    assert!(!out.status.success(), "commit -a: {}", stderr(&out));
}

// ---------------------------------------------------------------------------
// Files another OS user still owns, in the private state

/// In an inbox shared with `--shared`, `gc` moves expired (and invalid)
/// mail into the private `archive/` by linking the sender's own inode
/// there: the file stays the sender's, and a sender who kept a hard link
/// to it (its own file: the kernel allows that) rewrites the archived
/// message afterwards — `aea show` then prints the new text. `process`
/// and `approve` take the file over first (`Mailbox::adopt`); `gc`, and
/// the migration's move of processed mail, do not.
#[test]
fn mail_gc_archived_from_another_user_cannot_be_rewritten_afterwards() {
    let ids = match sender_user() {
        Ok(ids) => ids,
        Err(why) => {
            eprintln!("SKIPPED mail_gc_archived_from_another_user…: {why}");
            return;
        }
    };
    let env = TestEnv::new();
    let web = hooked_repository(&env, "default");
    let home = env.path().join("sender-home");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(ids.0), Some(ids.1)).unwrap();

    let id = "0badc0de-0000-4000-8000-0000000a2c41";
    let name = format!("message-20260101T000000000Z-from-mallory-{}.json", &id[..8]);
    let message = json!({
        "protocol_version": "1.0",
        "message_id": id,
        "message_type": "update",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "expires_at": "2026-01-02T00:00:00.000Z",
        "priority": "low",
        "requires_response": false,
        "from": {"agent_id": "mallory", "repo_path": "/src/mallory", "user": "m"},
        "to": {"agent_id": "web"},
        "message": {"subject": "old news", "body": "original", "context": {}, "attachments": []},
        "metadata": {"conversation_id": id, "tags": []},
    })
    .to_string();
    let keep = home.join("keep.json");
    let deliver = format!(
        "printf '%s' '{message}' > .aea/{name} && ln .aea/{name} {}",
        keep.display()
    );
    let out = as_user(
        ids,
        &home,
        &web,
        "sh",
        &["-c", &deliver],
        Duration::from_secs(30),
    );
    assert!(out.status.success(), "{}", stderr(&out));

    env.ok(&web, &["gc"]);
    assert!(
        !web.join(".aea").join(&name).exists(),
        "gc did not archive it"
    );
    assert!(env.ok(&web, &["show", id]).contains("original"));

    // Same length, written in place through the sender's own link.
    let rewrite = format!(
        "sed s/original/tampered/ {k} > {k}.new && cat {k}.new 1<> {k}",
        k = keep.display()
    );
    let out = as_user(
        ids,
        &home,
        &web,
        "sh",
        &["-c", &rewrite],
        Duration::from_secs(30),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = env.ok(&web, &["show", id]);
    assert!(
        !shown.contains("tampered"),
        "another OS user rewrote a message in the receiver's private archive:\n{shown}"
    );
}

/// A marker for a waiting message, committed upstream by someone who could
/// read the names in a shared inbox: it hides the message from listings
/// (as another tool's marker does) but approves nothing, so the commit
/// gate still holds for urgent gated mail, and the quiet marker is never
/// made while it waits.
#[test]
fn a_pulled_marker_for_waiting_gated_mail_does_not_open_the_commit_gate() {
    let up = Upstream::new();
    let victim = Victim::clone_of(&up);
    let id = victim.urgent_handoff("deploy to prod");
    let name = inbox_files(&victim.web)
        .into_iter()
        .next()
        .expect("the handoff waits");
    assert_commit_blocked(&victim.try_commit("a.txt"), "before the pull");
    let markers = up.repo.join(".aea/.processed");
    std::fs::create_dir_all(&markers).unwrap();
    std::fs::write(markers.join(&name), "").unwrap();
    up.commit_all(&[&format!(".aea/.processed/{name}")], "mark it");
    let pulled = victim.pull();
    assert!(pulled.status.success(), "git pull: {}", stderr(&pulled));
    let pending = victim.env.json(&victim.web, &["pending"]);
    assert!(pending.to_string().contains(&id), "{pending}");
    // Twice: the second commit meets whatever the first listing left.
    assert_commit_blocked(&victim.try_commit("b.txt"), "after the pull");
    assert_commit_blocked(&victim.try_commit("c.txt"), "once more");
}
