//! Every error of `crates/ground/src/error.rs` (with the hints of `src/hints.rs`) that a user can reach from the command
//! line, rendered as they see it: stdout, stderr (`error:`, `caused by:`,
//! `hint:`) and the exit status in one normalised text, snapshotted under
//! `tests/snapshots/`. One snapshot per variant, named after it, so that a
//! changed message or exit code shows up as a reviewable diff.

use crate::common::*;
use std::path::Path;

/// Runs `args` in `dir`, asserts that it failed, and snapshots the rendering
/// as `error_<name>`.
/// The private state of `dir` is shown as `[STATE]`: outside git its name
/// carries a digest of the path, which differs on every run.
fn snap_error(fixed: &Fixed, name: &str, dir: &Path, args: &[&str]) {
    let out = fixed.run(dir, args);
    assert!(!out.status.success(), "{name}: {args:?} succeeded");
    let state = fixed.env.state(dir);
    let rendered = fixed
        .env
        .render(&out)
        .replace(&fixed.env.normalise(state.to_str().unwrap()), "[STATE]");
    assert!(rendered.contains("error: "), "{name}: {rendered}");
    insta::assert_snapshot!(format!("error_{name}"), rendered);
}

/// Errors about where aea runs: no repository, a missing or unsafe `.aea/`,
/// no git, no terminal.
#[test]
fn errors_about_the_repository() {
    let env = TestEnv::new();
    let fixed = Fixed::new(&env);
    let bare = env.path().join("plain");
    std::fs::create_dir(&bare).unwrap();
    snap_error(&fixed, "no_repository", &bare, &["check"]);
    snap_error(
        &fixed,
        "not_initialized",
        &bare,
        &["--repo", bare.to_str().unwrap(), "check"],
    );

    let linked = env.path().join("linked");
    std::fs::create_dir(&linked).unwrap();
    std::fs::create_dir(env.path().join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(env.path().join("elsewhere"), linked.join(".aea")).unwrap();
    snap_error(&fixed, "symlink", &linked, &["init", "--no-agent-files"]);

    let file = env.path().join("file");
    std::fs::create_dir(&file).unwrap();
    std::fs::write(file.join(".aea"), "not a folder").unwrap();
    // Said before `init` reads the config inside it.
    snap_error(
        &fixed,
        "not_a_directory_where_aea_is_a_file",
        &file,
        &["init", "--no-agent-files"],
    );

    let web = env.repo("web");
    // `env.repo` runs no `git init`.
    snap_error(&fixed, "not_a_git_repository", &web, &["hooks", "install"]);
    // A repository git cannot read is not "no repository, run git init".
    let broken = env.repo("broken");
    git_command(&broken).args(["init", "-q"]).output().unwrap();
    let mut config = std::fs::OpenOptions::new()
        .append(true)
        .open(broken.join(".git/config"))
        .unwrap();
    std::io::Write::write_all(&mut config, b"[core\n bad").unwrap();
    snap_error(&fixed, "git", &broken, &["hooks", "install"]);
    // A package of a monorepo whose path the hook scripts at the top
    // could not read back: its git hooks cannot serve it.
    let mono = env.path().join("mono");
    std::fs::create_dir_all(mono.join("pkg ")).unwrap();
    git_command(&mono).args(["init", "-q"]).output().unwrap();
    fixed.ok(&mono.join("pkg "), &["init", "--no-agent-files"]);
    snap_error(
        &fixed,
        "hooks_cannot_see",
        &mono.join("pkg "),
        &["hooks", "install"],
    );
    snap_error(&fixed, "needs_terminal", &web, &["review"]);
    snap_error(
        &fixed,
        "usage",
        &web,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "update",
            "--subject",
            "s",
            "--context",
            "[1]",
        ],
    );
    // A duration clap refuses at the flag, and one that parses but leaves
    // the calendar once applied (`Error::BadDuration`).
    snap_error(
        &fixed,
        "duration_at_the_flag",
        &web,
        &["watch", "--timeout", "soon"],
    );
    snap_error(
        &fixed,
        "bad_duration",
        &web,
        &["gc", "--older-than", "99999999w"],
    );
    snap_error(
        &fixed,
        "invalid_agent_id",
        &web,
        &[
            "send",
            "--to",
            "bad id!",
            "--type",
            "update",
            "--subject",
            "s",
        ],
    );
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Errors of `send`: recipients, secrets, keys.
#[test]
fn errors_of_send() {
    let env = TestEnv::new();
    let fixed = Fixed::new(&env);
    let api = env.repo("api");
    let _web = env.repo("web");
    let update = |to: &str| -> Vec<String> {
        ["send", "--to", to, "--type", "update", "--subject", "s"]
            .map(str::to_string)
            .to_vec()
    };
    let to_nobody = update("nobody");
    snap_error(&fixed, "recipient_not_found", &api, &args(&to_nobody));
    let to_self = update("api");
    snap_error(&fixed, "send_to_self", &api, &args(&to_self));
    let mut secret = update("web");
    secret.extend([
        "--body".into(),
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789".into(),
    ]);
    snap_error(&fixed, "secret_detected", &api, &args(&secret));
    // A recipient that takes less than this message: the others get it
    // (a name that resolves nowhere stops the whole send before that).
    let small = env.repo("small");
    let config = small.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("max_message_bytes: 1048576", "max_message_bytes: 1024");
    std::fs::write(&config, text).unwrap();
    let mut partial = update("web");
    partial.extend([
        "--to".into(),
        "small".into(),
        "--body".into(),
        "x".repeat(2000),
    ]);
    snap_error(&fixed, "partial_delivery", &api, &args(&partial));
    let mut missing = update("web");
    missing.extend(["--body-file".into(), "no-such-file.txt".into()]);
    snap_error(&fixed, "io", &api, &args(&missing));

    // Two unregistered siblings that both call themselves `twin`.
    for dir in ["twin-a", "twin-b"] {
        let path = env.path().join(dir);
        std::fs::create_dir(&path).unwrap();
        let out = env
            .cmd(&path)
            .env("AEA_REGISTRY", env.path().join(format!("{dir}.toml")))
            .args(["init", "--no-agent-files", "--id", "twin"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let to_twin = update("twin");
    snap_error(&fixed, "recipient_ambiguous", &api, &args(&to_twin));

    let mut tagged = update("web");
    tagged.extend(["--tag".into(), " ".into()]);
    snap_error(&fixed, "invalid_draft", &api, &args(&tagged));
    let keyed = |body: &str| -> Vec<String> {
        let mut v = update("web");
        v.extend([
            "--idempotency-key".into(),
            "job-1".into(),
            "--body".into(),
            body.into(),
        ]);
        v
    };
    fixed.ok(&api, &args(&keyed("first")));
    snap_error(&fixed, "send_key_taken", &api, &args(&keyed("second")));
    snap_error(
        &fixed,
        "collab_incomplete",
        &api,
        &[
            "collab",
            "init",
            "--folder",
            "collab",
            "--participant",
            "api",
            "--objective",
            " ",
            "--completion",
            "conclusion.md says proceed",
        ],
    );

    let key = env.keys_dir().join("api.key");
    std::fs::write(&key, "not a key\n").unwrap();
    snap_error(&fixed, "key_invalid", &api, &args(&update("web")));
    std::fs::remove_file(&key).unwrap();
    snap_error(&fixed, "no_signing_key", &api, &args(&update("web")));
}

/// Errors about messages and their processing.
#[test]
fn errors_about_messages() {
    let env = TestEnv::new();
    let fixed = Fixed::new(&env);
    let api = env.repo("api");
    let web = env.repo("web");
    let send = |kind: &str, subject: &str| {
        let v: serde_json::Value = serde_json::from_str(&fixed.ok(
            &api,
            &[
                "--json",
                "send",
                "--to",
                "web",
                "--type",
                kind,
                "--subject",
                subject,
            ],
        ))
        .unwrap();
        v["message_id"].as_str().unwrap().to_string()
    };
    let question = send("question", "Which port?");
    let handoff = send("handoff", "Take over");
    let update = send("update", "Deployed");
    snap_error(&fixed, "message_not_found", &web, &["show", "m00000000"]);
    // Not a short reference: a prefix of every file name.
    snap_error(&fixed, "ambiguous_reference", &web, &["show", "message-"]);
    fixed.ok(&web, &["process", &update]);
    snap_error(&fixed, "already_processed", &web, &["process", &update]);
    snap_error(&fixed, "gated", &web, &["process", &handoff]);
    snap_error(&fixed, "not_gated", &web, &["approve", &question]);
    fixed.ok(&web, &["approve", &handoff]);
    snap_error(&fixed, "already_decided", &web, &["approve", &handoff]);

    // Another user's file (as in an inbox shared with other OS users;
    // root gives it away), rewritten in place after aea read it.
    let later = send("handoff", "Rewritten later");
    let file = web.join(".aea").join(
        inbox_files(&web)
            .into_iter()
            .find(|n| {
                std::fs::read_to_string(web.join(".aea").join(n))
                    .unwrap()
                    .contains(&later)
            })
            .unwrap(),
    );
    if std::os::unix::fs::chown(&file, Some(65534), None).is_ok() {
        fixed.ok(&web, &["show", &later]);
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&file)
            .and_then(|mut f| {
                std::io::Write::write_all(
                    &mut f,
                    text.replace("Rewritten later", "Quite another").as_bytes(),
                )
            })
            .unwrap();
        snap_error(&fixed, "changed_after_read", &web, &["approve", &later]);
    } else {
        eprintln!("SKIPPED error_changed_after_read: cannot give a file to another user");
    }

    let name = inbox_files(&web)
        .into_iter()
        .find(|n| {
            std::fs::read_to_string(web.join(".aea").join(n))
                .unwrap()
                .contains(&question)
        })
        .unwrap();
    let claims = env.state(&web).join("claims");
    std::fs::create_dir_all(&claims).unwrap();
    std::fs::write(
        claims.join(&name),
        format!(r#"{{"claimed_at":"{NOW}","by":"someone","pid":4242}}"#),
    )
    .unwrap();
    snap_error(&fixed, "claimed", &web, &["process", &question]);

    let invalid = "message-20261121T100000000Z-from-api-0badf11e.json";
    std::fs::write(web.join(".aea").join(invalid), "{ not json").unwrap();
    snap_error(&fixed, "invalid_message", &web, &["show", invalid]);
    // Invalid mail can only be ignored: the hint must not offer approval.
    snap_error(&fixed, "not_actionable", &web, &["process", invalid]);

    // A message from an agent that is neither registered nor reachable.
    let stranger = serde_json::json!({
        "protocol_version": "1.0",
        "message_id": "00000000-0000-4000-8000-00000000beef",
        "message_type": "question",
        "timestamp": NOW,
        "priority": "normal",
        "requires_response": true,
        "from": {"agent_id": "stranger"},
        "to": {"agent_id": "web"},
        "message": {"subject": "hello", "body": "b", "context": {}, "attachments": []},
        "metadata": {"conversation_id": "c-1", "tags": []}
    });
    std::fs::write(
        web.join(".aea/message-20261121T100000000Z-from-stranger-00000001.json"),
        serde_json::to_vec_pretty(&stranger).unwrap(),
    )
    .unwrap();
    snap_error(
        &fixed,
        "no_return_address",
        &web,
        &[
            "reply",
            "00000000-0000-4000-8000-00000000beef",
            "--body",
            "hi",
        ],
    );

    // The private `claims` is a file, not a folder.
    std::fs::remove_dir_all(&claims).unwrap();
    std::fs::write(&claims, "").unwrap();
    snap_error(&fixed, "not_a_directory", &web, &["process", &question]);
    std::fs::remove_file(&claims).unwrap();

    // A `.processed/` every user may write to is not trusted.
    let processed = web.join(".aea/.processed");
    std::fs::set_permissions(
        &processed,
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    snap_error(&fixed, "unsafe_state", &web, &["process", &question]);
}

/// Errors about the registry, configs, the trust store and git hooks.
#[test]
fn errors_about_configuration() {
    let env = TestEnv::new();
    let fixed = Fixed::new(&env);
    let api = env.repo("api");
    let other = env.path().join("other");
    std::fs::create_dir(&other).unwrap();
    snap_error(
        &fixed,
        "registry_conflict",
        &other,
        &["init", "--no-agent-files", "--id", "api"],
    );

    let web = env.repo("web");
    let config = web.join(".aea/agent-config.yaml");
    let original = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{original}\nmonitoring:\n  transports: 5\n"),
    )
    .unwrap();
    snap_error(&fixed, "config_invalid", &web, &["monitor", "run"]);
    std::fs::write(&config, &original).unwrap();

    snap_error(&fixed, "no_mail_remote", &web, &["sync"]);
    snap_error(
        &fixed,
        "remote_looks_like_option",
        &web,
        &["sync", "--remote=--upload-pack=touch /tmp/x"],
    );
    snap_error(
        &fixed,
        "remote_refused",
        &web,
        &["sync", "--remote", "ext::sh -c touch% /tmp/x"],
    );
    let missing = env.path().join("no-such-remote.git");
    snap_error(
        &fixed,
        "sync_failed",
        &web,
        &["sync", "--remote", missing.to_str().unwrap()],
    );

    let trust_store = env.path().join("home/.config/aea/trusted.toml");
    std::fs::create_dir_all(trust_store.parent().unwrap()).unwrap();
    std::fs::write(&trust_store, "[repos\nnot toml").unwrap();
    // `trust` reads the store only when the config names something to trust.
    std::fs::write(
        &config,
        format!("{original}\nmonitoring:\n  transports:\n    - type: command\n      program: /bin/true\n"),
    )
    .unwrap();
    snap_error(&fixed, "trust_store_corrupt", &web, &["trust"]);
    std::fs::remove_file(&trust_store).unwrap();
    std::fs::write(&config, &original).unwrap();

    std::fs::create_dir_all(web.join(".claude")).unwrap();
    std::fs::write(web.join(".claude/settings.json"), "{ not json").unwrap();
    git_command(&web).args(["init", "-q"]).output().unwrap();
    snap_error(
        &fixed,
        "settings_invalid",
        &web,
        &["hooks", "install", "--agents"],
    );

    // A foreign pre-commit hook with a copy already set aside.
    let hooks = web.join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(hooks.join("pre-commit"), "#!/bin/sh\necho mine\n").unwrap();
    std::fs::write(hooks.join("pre-commit.aea-orig"), "#!/bin/sh\necho older\n").unwrap();
    snap_error(&fixed, "hook_conflict", &web, &["hooks", "install"]);

    let global = env.path().join("global-gitconfig");
    std::fs::write(&global, "[core]\n\thooksPath = /tmp/shared-hooks\n").unwrap();
    git_command(&api).args(["init", "-q"]).output().unwrap();
    let out = fixed
        .cmd(&api)
        .env("GIT_CONFIG_GLOBAL", &global)
        .args(["hooks", "install"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", stdout(&out));
    insta::assert_snapshot!("error_hooks_path_inherited", env.render(&out));

    std::fs::write(env.registry(), "[agents\nnot toml").unwrap();
    snap_error(&fixed, "registry_corrupt", &web, &["agents"]);
}

/// Errors that are not `usage` (exit 2) but have variants of their own:
/// what a user can reach of them.
#[test]
fn errors_that_are_not_usage() {
    let env = TestEnv::new();
    let fixed = Fixed::new(&env);
    let api = env.repo("api");
    let web = env.repo("web");

    // An attachment outside the sender's repository.
    let outside = env.path().join("outside.txt");
    std::fs::write(&outside, "x").unwrap();
    snap_error(
        &fixed,
        "attachment_outside",
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
            outside.to_str().unwrap(),
        ],
    );

    // A message over the receiver's `limits.max_message_bytes`.
    let config = web.join(".aea/agent-config.yaml");
    let original = std::fs::read_to_string(&config).unwrap();
    assert!(original.contains("max_message_bytes: 1048576"));
    std::fs::write(
        &config,
        original.replace("max_message_bytes: 1048576", "max_message_bytes: 1024"),
    )
    .unwrap();
    let body = "x".repeat(2000);
    snap_error(
        &fixed,
        "message_too_large",
        &api,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "update",
            "--subject",
            "s",
            "--body",
            &body,
        ],
    );
    std::fs::write(&config, &original).unwrap();

    // A registry entry whose path holds another agent.
    fixed.ok(
        &api,
        &["agents", "add", "ghost", "--path", web.to_str().unwrap()],
    );
    snap_error(
        &fixed,
        "registry_mismatch",
        &api,
        &["agents", "trust", "ghost"],
    );

    // An agent reached only by a mail remote: no key to read.
    fixed.ok(&api, &["agents", "add", "far", "--remote", "/srv/mail.git"]);
    snap_error(&fixed, "no_key_to_pin", &api, &["agents", "trust", "far"]);

    // web's repository now publishes another key than the one api pinned.
    let config = web.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    let old_key = env.public_key("web");
    std::fs::write(
        &config,
        text.replace(&old_key, &env.public_key("web-renamed")),
    )
    .unwrap();
    snap_error(&fixed, "key_changed", &api, &["agents", "trust", "web"]);
    std::fs::write(&config, &text).unwrap();

    // `uninstall` keeps `.aea/` as `.aea-backup-<time>`: one of that second
    // is already there (the tests' clock stands still).
    std::fs::create_dir(web.join(".aea-backup-20261121T100000Z")).unwrap();
    snap_error(&fixed, "backup_exists", &web, &["uninstall"]);
}
