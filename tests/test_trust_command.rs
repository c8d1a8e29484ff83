//! A committed config is untrusted input:
//! nothing in it runs a program, hands an option to git or reaches a host
//! until `aea trust`; a config that does not read blocks the commit gate;
//! durations and limits out of range are errors, never panics.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn config_path(repo: &Path) -> PathBuf {
    repo.join(".aea/agent-config.yaml")
}

/// A remote git reads as `--upload-pack`, and a
/// post-checkout hook setting that syncs with it.
fn hostile_config(pwned: &Path) -> String {
    format!(
        "agent:\n  id: evil\nhooks:\n  post_checkout:\n    sync: true\n  post_merge:\n    sync: true\nsync:\n  remote: \"--upload-pack=sh -c 'touch {}' #\"\n",
        pwned.display()
    )
}

#[test]
fn a_cloned_config_runs_nothing_on_checkout_or_sync() {
    let env = TestEnv::new();
    let pwned = env.path().join("pwned");
    let origin = env.path().join("origin");
    std::fs::create_dir_all(&origin).unwrap();
    env.git_ok(&origin, &["init", "-q"]);
    env.ok(&origin, &["init", "--no-agent-files", "--no-git-hooks"]);
    std::fs::write(config_path(&origin), hostile_config(&pwned)).unwrap();
    env.git_ok(&origin, &["add", "-A"]);
    env.git_ok(&origin, &["commit", "-q", "-m", "a friendly repository"]);

    let root = env.path();
    env.git_ok(&root, &["clone", "-q", "origin", "clone"]);
    let clone = root.join("clone");
    env.ok(&clone, &["init", "--no-agent-files"]);
    assert!(clone.join(".git/hooks/post-checkout").exists());

    let out = env.git_ok(&clone, &["checkout", "-q", "-b", "feature"]);
    assert!(!pwned.exists(), "post-checkout ran the committed remote");
    assert!(stderr(&out).contains("aea trust"), "{}", stderr(&out));

    let out = env.run(&clone, &["sync"]);
    assert!(!pwned.exists(), "aea sync ran the committed remote");
    assert_eq!(code(&out), 2, "as if no remote: {}", stderr(&out));
    assert!(stderr(&out).contains("sync.remote"), "{}", stderr(&out));
    assert!(stderr(&out).contains("aea trust"), "{}", stderr(&out));

    // The user's own --remote needs no trust, but an option is refused.
    let hostile = format!("--remote=--upload-pack=touch {}", pwned.display());
    let out = env.run(&clone, &["sync", &hostile]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(!pwned.exists());

    // Even trusted, a remote git would read as an option is refused.
    let shown = env.ok(&clone, &["trust"]);
    assert!(shown.contains("sync.remote"), "{shown}");
    assert!(shown.contains("hooks.post_checkout.sync"), "{shown}");
    assert!(shown.contains("sha256:"), "{shown}");
    let out = env.run(&clone, &["sync"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(stderr(&out).contains("begins with `-`"), "{}", stderr(&out));
    let out = env.git_ok(&clone, &["checkout", "-q", "main"]);
    assert!(stderr(&out).contains("begins with `-`"), "{}", stderr(&out));
    assert!(!pwned.exists());
    // The trust lives outside the repository.
    assert!(
        !std::fs::read_dir(clone.join(".aea")).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains("trust"))
    );
}

#[test]
fn trust_is_bound_to_the_settings_and_can_be_revoked() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let config = config_path(&web);
    let original = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{original}\nsync:\n  remote: /srv/mail.git\n"),
    )
    .unwrap();

    let nothing = env.run(&web, &["sync"]);
    assert_eq!(code(&nothing), 2, "{}", stderr(&nothing));
    let v = env.json(&web, &["trust", "--show"]);
    assert_eq!(v["trusted"], false, "{v}");
    let doctor = env.run(&web, &["doctor"]);
    assert!(
        stdout(&doctor).contains("ignored until you trust them: sync.remote"),
        "{}",
        stdout(&doctor)
    );
    let v = env.json(&web, &["trust"]);
    assert_eq!(v["trusted"], true, "{v}");
    assert_eq!(env.json(&web, &["trust", "--show"])["trusted"], true);
    assert_eq!(v["settings"]["sync_remote"], "/srv/mail.git", "{v}");
    let digest = v["digest"].as_str().unwrap().to_string();
    assert!(digest.starts_with("sha256:"), "{digest}");
    let store = std::fs::read_to_string(env.path().join("home/.config/aea/trusted.toml")).unwrap();
    assert!(store.contains(&digest), "{store}");

    // Trusted: the remote is used (and fails to reach, which is exit 1).
    let out = env.run(&web, &["sync"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(!stderr(&out).contains("aea trust"), "{}", stderr(&out));

    // A policy edit keeps the trust; a changed remote loses it.
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replacen("rules: []", "rules:\n  - action: reject\n    from: evil", 1),
    )
    .unwrap();
    assert_eq!(code(&env.run(&web, &["sync"])), 1);
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("/srv/mail.git", "/srv/other.git")).unwrap();
    let out = env.run(&web, &["sync"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("aea trust"), "{}", stderr(&out));
    env.ok(&web, &["trust"]);
    assert_eq!(code(&env.run(&web, &["sync"])), 1);

    let v = env.json(&web, &["trust", "--revoke"]);
    assert_eq!(v["revoked"], true, "{v}");
    assert_eq!(code(&env.run(&web, &["sync"])), 2);
}

/// The audit log's events, in order.
fn events(repo: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(repo.join(".aea/agent.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Starts the monitor and waits until it has rung (or not) for the waiting
/// mail: its `notified` event is the signal. Returns the transports it
/// rang, then stops it.
fn one_monitor_round(env: &TestEnv, repo: &Path) -> Vec<String> {
    let before = events(repo).len();
    let out = env.run(repo, &["--json", "monitor", "start"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["state"], "started", "{v}");
    // Untrusted doorbells are named where the user started the monitor.
    let untrusted = stderr(&out).contains("monitoring.transports");
    let rang = || -> Vec<String> {
        events(repo)[before..]
            .iter()
            .filter(|e| e["event"] == "notified" || e["event"] == "notify_failed")
            .map(|e| e["transport"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let done = poll_until(Duration::from_secs(10), || !rang().is_empty());
    env.ok(repo, &["monitor", "stop"]);
    assert!(done, "the monitor never got to the waiting mail");
    let rang = rang();
    assert_eq!(untrusted, rang == ["none"], "{rang:?}: {}", stderr(&out));
    rang
}

#[test]
fn a_committed_doorbell_command_runs_only_after_aea_trust() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let ran = env.path().join("ran");
    let script = env.path().join("ring.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$@\" >> '{}'\n", ran.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = config_path(&web);
    let original = std::fs::read_to_string(&config).unwrap();
    let with = |arg: &str| {
        format!(
            "{original}\nmonitoring:\n  debounce: 10ms\n  transports:\n    - type: command\n      program: '{}'\n      args: [{arg}]\n",
            script.display()
        )
    };
    std::fs::write(&config, with("first")).unwrap();
    env.question(&api, "web", "hello");

    assert_eq!(one_monitor_round(&env, &web), ["none"]);
    assert!(!ran.exists(), "an untrusted transport ran");

    env.ok(&web, &["trust"]);
    assert_eq!(one_monitor_round(&env, &web), ["command"]);
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "first\n");

    // Another program or argument needs trusting again.
    std::fs::write(&config, with("second")).unwrap();
    assert_eq!(one_monitor_round(&env, &web), ["none"]);
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "first\n");
    env.ok(&web, &["trust"]);
    assert_eq!(one_monitor_round(&env, &web), ["command"]);
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "first\nsecond\n");
}

/// A git repository with aea and its hooks, and one message waiting in it.
fn gated_repo(env: &TestEnv) -> PathBuf {
    let api = env.repo("api");
    let web = env.path().join("web");
    std::fs::create_dir_all(&web).unwrap();
    env.git_ok(&web, &["init", "-q"]);
    env.ok(&web, &["init", "--no-agent-files"]);
    env.question(&api, "web", "waiting");
    web
}

#[test]
fn a_config_that_does_not_read_blocks_the_commit_gate() {
    let env = TestEnv::new();
    let web = gated_repo(&env);
    let config = config_path(&web);
    let original = std::fs::read_to_string(&config).unwrap();
    assert!(original.contains("block_on: urgent_pending"));
    // A correct config lets this commit through: nothing urgent waits.
    assert!(env.commit_new_file(&web, "ok.txt", &[]).status.success());

    for (i, (broken, needle)) in [
        (format!("{original}agent:\n  id: [web\n"), "line"),
        (
            original.replace("block_on: urgent_pending", "block_on: [urgent_pending]"),
            "line",
        ),
        (
            original.replace("block_on: urgent_pending", "block_on: urgent_pendng"),
            "urgent_pendng",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        std::fs::write(&config, &broken).unwrap();
        let out = env.commit_new_file(&web, &format!("f{i}.txt"), &[]);
        assert!(!out.status.success(), "case {i}: the commit went through");
        let err = stderr(&out);
        assert!(err.contains("commit blocked"), "case {i}: {err}");
        assert!(err.contains(needle), "case {i}: {err}");
        assert!(err.contains("aea validate"), "case {i}: the fix: {err}");
        // check agrees: it cannot read the config either.
        let check = env.run(&web, &["check"]);
        assert!(
            stderr(&check).contains(needle),
            "case {i}: {}",
            stderr(&check)
        );
        // validate and doctor report the same problem.
        let v = env.run(&web, &["validate"]);
        assert_eq!(code(&v), 6, "case {i}: {}", stdout(&v));
        assert!(stdout(&v).contains(needle), "case {i}: {}", stdout(&v));
        let d = env.run(&web, &["doctor"]);
        assert!(stdout(&d).contains(needle), "case {i}: {}", stdout(&d));
        assert_ne!(code(&d), 0, "case {i}");
        // The documented bypass still works.
        let out = env.commit_new_file(&web, &format!("skip{i}.txt"), &[("AEA_SKIP_HOOKS", "1")]);
        assert!(out.status.success(), "case {i}: {}", stderr(&out));
    }

    // The documented `sync:` key is not an unknown key.
    std::fs::write(
        &config,
        format!("{original}\nsync:\n  remote: /srv/mail.git\n"),
    )
    .unwrap();
    let v = env.run(&web, &["validate"]);
    assert_eq!(code(&v), 0, "{}", stdout(&v));
    assert!(!stdout(&env.run(&web, &["doctor"])).contains("unknown"));
}

#[test]
fn huge_durations_are_usage_errors_not_panics() {
    let env = TestEnv::new();
    let api = env.repo("api");
    env.repo("web");
    for args in [
        &[
            "send",
            "--to",
            "web",
            "--type",
            "update",
            "--subject",
            "s",
            "--expires",
            "99999999w",
        ][..],
        &["log", "--since", "99999999w"],
        &["gc", "--older-than", "99999999w"],
        &["gc", "--older-than", "99999999999999999999999w"],
        &["watch", "--timeout", "99999999999999999999999w"],
        // A period of zero would spin (git started without pause).
        &["sync", "--watch", "0s"],
        &["sync", "--watch", "0ms"],
    ] {
        let out = env.run(&api, args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        // Refused by the one duration parser, at the flag (clap) or when the
        // time is computed; either way the error shows what works.
        assert!(
            stderr(&out).contains("use e.g. 250ms, 30s"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // humantime's syntax, combined units included.
    env.ok(&api, &["log", "--since", "1h 30m"]);
    env.ok(&api, &["gc", "--older-than", "2weeks"]);
}

#[test]
fn an_absurd_message_limit_is_a_config_error_with_the_range() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.question(&api, "web", "before");
    let config = config_path(&web);
    let original = std::fs::read_to_string(&config).unwrap();
    for bad in ["18446744073709551615", "0", "99999999999"] {
        std::fs::write(
            &config,
            original.replace(
                "max_message_bytes: 1048576",
                &format!("max_message_bytes: {bad}"),
            ),
        )
        .unwrap();
        let v = env.run(&web, &["validate"]);
        assert_eq!(code(&v), 6, "{bad}");
        assert!(
            stdout(&v).contains("limits.max_message_bytes"),
            "{}",
            stdout(&v)
        );
        assert!(stdout(&v).contains("1024 to 67108864"), "{}", stdout(&v));
        let check = env.run(&web, &["check"]);
        assert!(
            !stdout(&check).contains("not valid JSON"),
            "{}",
            stdout(&check)
        );
        assert!(
            stderr(&check).contains("out of range"),
            "{}",
            stderr(&check)
        );
    }
}

/// `monitoring:` is read with the rest of the config: a duration that does
/// not parse or a misspelt key is reported by validate, doctor and `monitor
/// start` (which used to wait for a monitor that exited and time out), with
/// the key; what the bash AEA wrote there still reads.
#[test]
fn monitoring_is_checked_with_the_config() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let config = config_path(&web);
    let original = std::fs::read_to_string(&config).unwrap();
    for (section, needle) in [
        (
            "  retry_initial: abc\n",
            "monitoring.retry_initial: \"abc\" is not a duration",
        ),
        (
            "  retyr_initial: 1s\n",
            "unknown key `retyr_initial`: did you mean `retry_initial`?",
        ),
        // Zero would ring without pause.
        (
            "  retry_initial: 0s\n",
            "monitoring.retry_initial: \"0s\" is no time at all",
        ),
        (
            "  transports:\n    - type: desktop\n      taget: x\n",
            "taget",
        ),
        // The config is committed: a password there would reach every
        // clone. The error says where it goes instead, and never echoes it.
        (
            "  transports:\n    - type: opencode\n      url: http://127.0.0.1:4096\n      password: hunter2\n",
            "opencode `password`: a secret must not go into the committed config",
        ),
        (
            "  transports:\n    - type: opencode\n      url: http://opencode:hunter2@127.0.0.1:4096\n",
            "holds credentials",
        ),
        (
            "  transports:\n    - type: opencode\n      url: http://127.0.0.1:4096\n      session: ../../config\n",
            "opencode session \"../../config\" does not start with ses_",
        ),
    ] {
        std::fs::write(&config, format!("{original}\nmonitoring:\n{section}")).unwrap();
        let v = env.run(&web, &["validate"]);
        assert_eq!(code(&v), 6, "{section}: {}", stdout(&v));
        assert!(stdout(&v).contains(needle), "{section}: {}", stdout(&v));
        assert!(!stdout(&v).contains("hunter2"), "{}", stdout(&v));
        let d = env.run(&web, &["doctor"]);
        assert_ne!(code(&d), 0, "{section}");
        assert!(stdout(&d).contains(needle), "{section}: {}", stdout(&d));
        let start = env.run(&web, &["monitor", "start"]);
        assert_ne!(code(&start), 0, "{section}");
        assert_ne!(code(&start), 4, "{section}: said why, not timed out");
        assert!(
            stderr(&start).contains(needle),
            "{section}: {}",
            stderr(&start)
        );
    }
    // openSVM/aea's scripts/install-aea.sh, and the agent-config.yaml its
    // install.sh downloads.
    let bash = "monitoring:\n  enabled: true\n  log_file: \".aea/agent.log\"\n  check_interval: 60  # seconds\n  watch_directories:\n    - \"./.aea\"\n  auto_process:\n    - message_type: \"question\"\n      requires_response: true\n      action: \"auto_respond\"\n";
    std::fs::write(&config, format!("{original}\n{bash}")).unwrap();
    let v = env.run(&web, &["validate"]);
    assert_eq!(code(&v), 0, "{}", stdout(&v));
}
