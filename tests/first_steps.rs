//! What a new user trips on (issue 15): documented config keys, re-running
//! init, `review` at a scripted terminal, completions, `gc --dry-run`.

use crate::common::*;

#[test]
fn documented_config_keys_are_not_called_unknown() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let config = web.join(".aea/agent-config.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(
        "sync:\n  remote: /nowhere/mail.git\nbridges:\n  - protocol: roo\n    path: .roo/mailbox\n",
    );
    std::fs::write(&config, &text).unwrap();
    for args in [&["validate"][..], &["doctor"]] {
        let out = env.run(&web, args);
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(!all.contains("unknown"), "{args:?}: {all}");
        assert!(!all.contains("not a valid aea config"), "{args:?}: {all}");
    }

    std::fs::write(&config, format!("{text}colour: blue\n")).unwrap();
    for args in [&["validate"][..], &["doctor"]] {
        let out = env.run(&web, args);
        assert_ne!(code(&out), 0, "{args:?}");
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(all.contains("colour"), "{args:?}: {all}");
    }
}

#[test]
fn init_says_where_it_kept_an_existing_git_hook() {
    let env = TestEnv::new();
    let web = env.path().join("web");
    std::fs::create_dir_all(&web).unwrap();
    assert!(
        git_command(&web)
            .args(["init", "-q"])
            .status()
            .unwrap()
            .success()
    );
    let hook = web.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
    let out = env.ok(&web, &["init", "--no-agent-files"]);
    let kept = format!(
        "kept as {}.aea-orig",
        hook.canonicalize().unwrap().display()
    );
    assert!(out.contains(&kept), "{out}");
    assert!(out.contains("still runs first"), "{out}");
}

#[test]
fn the_backup_uninstall_leaves_is_ignored_by_git() {
    let env = TestEnv::new();
    let web = env.path().join("web");
    std::fs::create_dir_all(&web).unwrap();
    assert!(
        git_command(&web)
            .args(["init", "-q"])
            .status()
            .unwrap()
            .success()
    );
    env.ok(&web, &["init", "--no-agent-files"]);
    env.ok(&web, &["uninstall"]);
    let backup = std::fs::read_dir(&web)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with(".aea-backup-"))
        .expect("uninstall keeps a backup");
    assert!(web.join(&backup).join("agent-config.yaml").is_file());
    let status = git_command(&web)
        .args(["status", "--porcelain", "--untracked-files=all"])
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(!status.contains(".aea-backup"), "{status}");
}
