//! The `--json` document of every command that prints one, snapshotted with
//! a fixed clock and seeded ids. These documents are an interface: a change
//! to a field name, a type or the order shows up here as a diff to review.
//! Also `aea doctor` and `aea policy explain` as people read them, and the
//! files `init` writes into git and Claude Code.
//!
//! Real `--json` output is checked against the schemas shipped in
//! `schemas/` (which `cargo test schemas` keeps equal to the types) with a
//! small validator (`tests/common/checks.rs`) for the keywords schemars
//! emits, rather than a JSON Schema crate: it is stricter where it matters
//! for drift (a property the schema does not declare is an error) and adds
//! no dependency.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

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

/// Runs `aea --json <args>` in `dir`, expecting exit status `want`, and
/// returns the document (the last line for JSON Lines output).
fn json_exiting(env: &TestEnv, dir: &Path, args: &[&str], want: i32) -> Value {
    let mut full = vec!["--json"];
    full.extend_from_slice(args);
    let out = env.run(dir, &full);
    assert_eq!(code(&out), want, "{args:?}: {}", stderr(&out));
    let text = stdout(&out);
    serde_json::from_str(&text)
        .or_else(|_| serde_json::from_str(text.lines().last().unwrap_or_default()))
        .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {text}"))
}

#[test]
fn json_output_fits_the_shipped_schemas() {
    let env = TestEnv::new();
    let api_dir = env.path().join("api");
    std::fs::create_dir(&api_dir).unwrap();
    let init = json_exiting(&env, &api_dir, &["init", "--no-agent-files"], 0);
    assert_fits("init", &init);
    let web = env.path().join("web");
    std::fs::create_dir(&web).unwrap();
    git_command(&web).args(["init", "-q"]).output().unwrap();
    env.ok(&web, &["init", "--no-agent-files", "--no-git-hooks"]);

    let sent = json_exiting(
        &env,
        &api_dir,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "handoff",
            "--subject",
            "Rotate the keys",
            "--body",
            "Please.",
            "--context",
            r#"{"ticket": "OPS-1"}"#,
            "--tag",
            "ops",
        ],
        0,
    );
    assert_fits("send", &sent);
    let request = sent["message_id"].as_str().unwrap().to_string();
    let question = env.question(&api_dir, "web", "Which port?");

    assert_fits("check", &json_exiting(&env, &web, &["check"], 0));
    assert_fits("pending", &json_exiting(&env, &web, &["pending"], 0));
    assert_fits("show", &json_exiting(&env, &web, &["show", &request], 0));
    assert_fits(
        "policy-explain",
        &json_exiting(&env, &web, &["policy", "explain", &request], 0),
    );
    assert_fits(
        "policy-show",
        &json_exiting(&env, &web, &["policy", "show"], 0),
    );
    let looser = env.path().join("looser.yaml");
    let config = std::fs::read_to_string(web.join(".aea/agent-config.yaml")).unwrap();
    std::fs::write(
        &looser,
        config.replacen(
            "unknown_senders: require_approval",
            "unknown_senders: reject",
            1,
        ),
    )
    .unwrap();
    assert_fits(
        "policy-replay",
        &json_exiting(
            &env,
            &web,
            &["policy", "replay", "--config", looser.to_str().unwrap()],
            0,
        ),
    );
    assert_fits(
        "watch",
        &json_exiting(&env, &web, &["watch", "--pending", "--timeout", "5s"], 0),
    );
    assert_fits(
        "approve",
        &json_exiting(&env, &web, &["approve", &request], 0),
    );
    let reply = json_exiting(&env, &web, &["reply", &question, "--body", "8080"], 0);
    assert_fits("reply", &reply);
    let processed = json_exiting(&env, &web, &["process", &question, "--note", "answered"], 0);
    assert_fits("process", &processed);
    // A processed message shows its marker.
    assert_fits("show", &json_exiting(&env, &web, &["show", &question], 0));
    assert_fits(
        "status",
        &json_exiting(&env, &api_dir, &["status", &question], 0),
    );
    assert_fits("sent", &json_exiting(&env, &api_dir, &["sent"], 0));
    assert_fits(
        "thread",
        &json_exiting(&env, &api_dir, &["thread", &question], 0),
    );
    assert_fits(
        "show-copy",
        &json_exiting(&env, &api_dir, &["show", &question], 0),
    );

    assert_fits("gc", &json_exiting(&env, &web, &["gc", "--dry-run"], 0));
    assert_fits("validate", &json_exiting(&env, &web, &["validate"], 0));
    assert_fits(
        "monitor",
        &json_exiting(&env, &web, &["monitor", "status"], 0),
    );
    assert_fits("agents", &json_exiting(&env, &web, &["agents"], 0));
    assert_fits("whoami", &json_exiting(&env, &web, &["whoami"], 0));
    assert_fits("trust", &json_exiting(&env, &web, &["trust", "--show"], 0));
    assert_fits(
        "hooks-install",
        &json_exiting(&env, &web, &["hooks", "install"], 0),
    );
    assert_fits(
        "hooks-status",
        &json_exiting(&env, &web, &["hooks", "status"], 0),
    );
    let doctor = env.run(&web, &["--json", "doctor"]);
    assert_fits("doctor", &serde_json::from_slice(&doctor.stdout).unwrap());
    assert_fits(
        "hooks-uninstall",
        &json_exiting(&env, &web, &["hooks", "uninstall"], 0),
    );
    assert_fits(
        "quarantine",
        &json_exiting(
            &env,
            &web,
            &["quarantine", &request, "--reason", "testing"],
            0,
        ),
    );
}

#[test]
fn collab_json_output_fits_the_shipped_schemas() {
    let env = TestEnv::new();
    let web = env.repo("web");
    env.repo("api");
    let folder = env.path().join("c");
    let f = folder.to_str().unwrap();
    let run = |args: &[&str], want: i32| {
        let mut full = vec!["collab"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["--folder", f]);
        json_exiting(&env, &web, &full, want)
    };
    assert_fits(
        "collab-init",
        &run(
            &[
                "init",
                "--schema",
                "1",
                "--participant",
                "web",
                "--participant",
                "api",
                "--objective",
                "o",
                "--completion",
                "g",
            ],
            0,
        ),
    );
    assert_fits("collab-next", &run(&["next", "--participant", "web"], 0));
    assert_fits(
        "collab-wait",
        &run(&["wait", "--participant", "web", "--timeout", "1s"], 0),
    );
    assert_fits(
        "collab-event",
        &run(
            &[
                "event",
                "--participant",
                "web",
                "--event",
                "proposal_submitted",
                "--summary",
                "s",
                "--doc",
                "proposal.md",
                "--reply-to",
                "1",
            ],
            0,
        ),
    );
    assert_fits(
        "collab-wait",
        &run(&["wait", "--participant", "web", "--timeout", "1s"], 4),
    );
    assert_fits("collab-classify", &run(&["classify"], 0));
    assert_fits("collab-validate", &run(&["validate"], 0));
    std::fs::write(folder.join("opinions.md"), "x").unwrap();
    assert_fits("collab-validate", &run(&["validate"], 6));
    assert_fits(
        "collab-list",
        &json_exiting(&env, &web, &["collab", "list"], 0),
    );
}

/// The validator itself: it must reject what the schemas rule out, or the
/// test above proves nothing.
#[test]
fn the_schema_check_catches_drift() {
    let schema = shipped("process");
    let good = serde_json::json!({
        "file": "f.json", "message_id": "m", "marker": "/x", "outcome": "done"
    });
    let mut problems = Vec::new();
    check_schema(&schema, &schema, &good, "$", &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    for (bad, why) in [
        (
            serde_json::json!({"file": "f.json", "message_id": "m", "marker": "/x", "outcome": "finished"}),
            "not one of",
        ),
        (
            serde_json::json!({"file": "f.json", "message_id": "m", "marker": "/x"}),
            "missing",
        ),
        (
            serde_json::json!({"file": 1, "message_id": "m", "marker": "/x", "outcome": "done"}),
            "is integer",
        ),
        (
            serde_json::json!({"file": "f", "message_id": "m", "marker": "/x", "outcome": "done", "extra": true}),
            "not in the schema",
        ),
    ] {
        let mut problems = Vec::new();
        check_schema(&schema, &schema, &bad, "$", &mut problems);
        assert!(
            problems.iter().any(|p| p.contains(why)),
            "{bad}: {problems:?}"
        );
    }
}

/// A failed command under `--json` prints its error as `schemas/error.json`
/// on stderr.
#[test]
fn json_errors_fit_the_shipped_schema() {
    let env = TestEnv::new();
    let web = env.repo("web");
    for args in [
        vec!["--json", "show", "zzzz"],
        vec!["--json", "send", "--to", "nobody"],
    ] {
        let out = env.run(&web, &args);
        assert_ne!(code(&out), 0);
        let doc: Value = serde_json::from_str(stderr(&out).trim())
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stderr(&out)));
        assert_fits("error", &doc);
    }
}
