//! The `--json` document of every command that prints one, snapshotted with
//! a fixed clock and seeded ids. These documents are an interface: a change
//! to a field name, a type or the order shows up here as a diff to review.
//! Also `aea doctor` and `aea policy explain` as people read them, and the
//! files `init` writes into git and Claude Code.

use std::path::Path;

use crate::common::*;

/// Runs `args` with `--json`, asserts success and that stdout is JSON (one
/// document, or JSON Lines), and returns the rendering.
fn json_doc(fixed: &Fixed, dir: &Path, args: &[&str]) -> String {
    json_doc_exiting(fixed, dir, args, 0)
}

/// [`json_doc`] for a command that exits with `want`.
fn json_doc_exiting(fixed: &Fixed, dir: &Path, args: &[&str], want: i32) -> String {
    let mut full = vec!["--json"];
    full.extend_from_slice(args);
    let out = fixed.run(dir, &full);
    assert_eq!(code(&out), want, "{args:?}: {}", stderr(&out));
    let text = stdout(&out);
    if serde_json::from_str::<serde_json::Value>(&text).is_err() {
        for line in text.lines() {
            serde_json::from_str::<serde_json::Value>(line)
                .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {text}"));
        }
    }
    fixed.env.render(&out)
}

fn message_id(doc: &str) -> String {
    let start = doc.find("\"message_id\": \"").expect("a message id") + 15;
    doc[start..start + 36].to_string()
}

/// Every `--json` document, in the order a user meets them.
#[test]
fn json_documents() {
    let env = TestEnv::new();
    let fixed = Fixed::new(&env);
    for name in ["api", "web"] {
        let dir = env.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        git_command(&dir).args(["init", "-q"]).output().unwrap();
    }
    let (api, web) = (env.path().join("api"), env.path().join("web"));
    let snap = |name: &str, dir: &Path, args: &[&str]| {
        let doc = json_doc(&fixed, dir, args);
        insta::assert_snapshot!(format!("json_{name}"), doc);
        doc
    };
    snap("init", &api, &["init", "--no-agent-files"]);
    fixed.ok(&web, &["init", "--no-agent-files"]);

    let sent = snap(
        "send",
        &api,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "question",
            "--subject",
            "Which port?",
            "--body",
            "For the proxy.",
            "--requires-response",
        ],
    );
    let question = message_id(&sent);
    let handoff = message_id(&json_doc(
        &fixed,
        &api,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "handoff",
            "--subject",
            "Take over",
        ],
    ));
    json_doc(
        &fixed,
        &api,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "update",
            "--priority",
            "high",
            "--subject",
            "Deployed",
        ],
    );
    snap("check", &web, &["check"]);
    snap("show", &web, &["show", &question]);
    snap("pending", &web, &["pending"]);
    snap("policy_show", &web, &["policy", "show"]);
    snap("policy_explain", &web, &["policy", "explain", &handoff]);
    snap("status_delivered", &api, &["status", &question]);
    snap("reply", &web, &["reply", &question, "--body", "8080"]);
    snap(
        "process",
        &web,
        &["process", &question, "--note", "answered"],
    );
    snap("status_processed", &api, &["status", &question]);
    snap("approve", &web, &["approve", &handoff, "--note", "ok"]);
    let reject_me = message_id(&json_doc(
        &fixed,
        &api,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "handoff",
            "--subject",
            "Drop the tables",
        ],
    ));
    snap("reject", &web, &["reject", &reject_me, "--reason", "no"]);
    snap("watch_pending", &web, &["watch", "--pending"]);
    insta::assert_snapshot!(
        "json_watch_timeout",
        json_doc_exiting(&fixed, &web, &["watch", "--timeout", "10ms"], 4)
    );
    snap("monitor_status", &web, &["monitor", "status"]);
    let invalid = "message-20261121T100000000Z-from-api-0badf11e.json";
    std::fs::write(web.join(".aea").join(invalid), "{ not json").unwrap();
    insta::assert_snapshot!(
        "json_validate",
        json_doc_exiting(&fixed, &web, &["validate"], 6)
    );
    snap(
        "quarantine",
        &web,
        &["quarantine", invalid, "--reason", "broken"],
    );
    snap("gc", &web, &["gc", "--dry-run"]);
    snap("log", &web, &["log"]);
    snap("agents", &web, &["agents"]);
    snap("whoami", &web, &["whoami"]);
    snap("hooks_status", &web, &["hooks", "status"]);
    // 0: the agent files were left out by choice (`init --no-agent-files`),
    // which doctor reports as skipped, not as a problem.
    insta::assert_snapshot!(
        "json_doctor",
        json_doc_exiting(&fixed, &web, &["doctor"], 0)
    );
    snap("trust_show", &web, &["trust", "--show"]);
    let config = web.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!(
            "{text}\nmonitoring:\n  transports:\n    - type: command\n      program: /bin/true\n"
        ),
    )
    .unwrap();
    snap("trust", &web, &["trust"]);
    let remote = env.path().join("mail.git");
    git_command(env.path().as_path())
        .args(["init", "-q", "--bare", remote.to_str().unwrap()])
        .output()
        .unwrap();
    snap(
        "sync",
        &web,
        &["sync", "--remote", remote.to_str().unwrap()],
    );
    snap("hooks_uninstall", &web, &["hooks", "uninstall"]);
    snap("hooks_install", &web, &["hooks", "install"]);
    snap("uninstall", &web, &["uninstall"]);
}

/// `aea doctor` as a person reads it: a healthy repository, then one with
/// several problems at once.
#[test]
fn doctor_output() {
    let env = TestEnv::new();
    let fixed = Fixed::new(&env);
    let web = env.path().join("web");
    std::fs::create_dir(&web).unwrap();
    git_command(&web).args(["init", "-q"]).output().unwrap();
    fixed.ok(&web, &["init"]);
    insta::assert_snapshot!("doctor_healthy", fixed.render(&web, &["doctor"]));

    // A hook removed, the CLAUDE.md section missing, a message that is not
    // valid, a stale claim and a leftover staging file. (Unsound state such as a world-writable folder is
    // left out: with it, doctor cannot list the inbox; see the report.)
    std::fs::remove_file(web.join(".git/hooks/post-merge")).unwrap();
    std::fs::write(
        web.join(".aea/message-20261121T100000000Z-from-api-0badf11e.json"),
        "{ not json",
    )
    .unwrap();
    // The claim is in the private state, in the git directory.
    let claims = env.state(&web).join("claims");
    std::fs::create_dir_all(&claims).unwrap();
    let claim = claims.join("message-20261121T090000000Z-from-api-00000001.json");
    std::fs::write(
        &claim,
        r#"{"claimed_at":"2026-11-20T10:00:00.000Z","by":"someone","pid":4242}"#,
    )
    .unwrap();
    let staged = web.join(".aea/.tmp/.deliver.x.tmp");
    std::fs::write(&staged, "{").unwrap();
    // Doctor ages them by mtime against the (fixed) clock: a day before it.
    let day_before = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_168_800);
    for path in [&claim, &staged] {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(day_before)
            .unwrap();
    }
    std::fs::write(
        web.join("CLAUDE.md"),
        "# My notes, without the aea section\n",
    )
    .unwrap();
    insta::assert_snapshot!("doctor_problems", fixed.render(&web, &["doctor"]));
}

/// `aea policy explain` for a message the table decides, one a rule
/// decides, one a hard stop raises, and one from a denied sender.
#[test]
fn policy_explain_output() {
    let env = TestEnv::new();
    let fixed = Fixed::new(&env);
    let api = env.repo("api");
    let ops = env.repo("ops");
    let web = env.repo("web");
    let config = web.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("deny_senders: []", "deny_senders: [ops]")
        .replace(
            "rules: []",
            "rules:\n  - id: ci-updates\n    type: update\n    from: \"ap*\"\n    action: acknowledge\n    operations: [read]",
        );
    std::fs::write(&config, text).unwrap();
    let send = |from: &Path, extra: &[&str]| {
        let mut args = vec!["--json", "send", "--to", "web"];
        args.extend_from_slice(extra);
        message_id(&fixed.ok(from, &args))
    };
    let cases = [
        (
            "table",
            send(
                &api,
                &["--type", "issue", "--priority", "high", "--subject", "500s"],
            ),
        ),
        (
            "rule",
            send(&api, &["--type", "update", "--subject", "CI green"]),
        ),
        (
            "hard_stop",
            send(
                &api,
                &[
                    "--type",
                    "request",
                    "--subject",
                    "Clean up",
                    "--body",
                    "run rm -rf build/ then push -f",
                ],
            ),
        ),
        (
            "denied",
            send(&ops, &["--type", "question", "--subject", "Hi"]),
        ),
    ];
    for (name, id) in cases {
        insta::assert_snapshot!(
            format!("policy_explain_{name}"),
            fixed.render(&web, &["policy", "explain", &id])
        );
    }
}

/// The files `init` writes for git and Claude Code, as installed.
#[test]
fn installed_hook_and_claude_settings() {
    let env = TestEnv::new();
    let fixed = Fixed::new(&env);
    let web = env.path().join("web");
    std::fs::create_dir(&web).unwrap();
    git_command(&web).args(["init", "-q"]).output().unwrap();
    fixed.ok(&web, &["init"]);
    let read = |rel: &str| env.normalise(&std::fs::read_to_string(web.join(rel)).unwrap());
    for hook in ["pre-commit", "post-merge", "post-checkout", "post-rewrite"] {
        let text = read(&format!(".git/hooks/{hook}"));
        assert!(text.contains("[AEA]"), "{hook} names the binary: {text}");
        insta::assert_snapshot!(format!("hook_{hook}"), text);
    }
    insta::assert_snapshot!("claude_settings", read(".claude/settings.json"));
}

/// Under `--json`, stdout is one JSON object or nothing: the completion
/// script and the man page are not JSON, so `--json` asks for them is an
/// error, as JSON.
#[test]
fn completions_and_man_under_json_are_a_json_error_not_a_script() {
    let env = TestEnv::new();
    let dir = env.path();
    for args in [
        &["--json", "completions", "bash"][..],
        &["--json", "man"][..],
    ] {
        let out = env.run(&dir, args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stdout(&out));
        assert!(stdout(&out).is_empty(), "{args:?}: {}", stdout(&out));
        let error: serde_json::Value = serde_json::from_str(stderr(&out).trim()).unwrap();
        assert!(error["error"]["message"].is_string(), "{error}");
    }
}
