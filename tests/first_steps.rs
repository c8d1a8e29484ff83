//! What a new user trips on: documented config keys, re-running
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

#[test]
fn init_remembers_what_the_user_left_out_and_doctor_does_not_count_it() {
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
    let claude = web.join("CLAUDE.md");
    env.ok(&web, &["init", "--no-git-hooks", "--no-agent-files"]);
    assert!(!hook.exists() && !claude.exists());

    // A plain re-run (to repair, to update) keeps both out, and says so.
    let out = env.run(&web, &["init"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!hook.exists(), "re-init installed the hooks");
    assert!(!claude.exists(), "re-init wrote CLAUDE.md");
    let said = stderr(&out);
    assert!(said.contains("left out git hooks"), "{said}");
    assert!(said.contains("aea init --agent-files"), "{said}");

    let doctor = env.json(&web, &["doctor"]);
    for check in ["git hooks", "harnesses"] {
        let finding = doctor["checks"]
            .as_array()
            .or_else(|| doctor.as_array())
            .unwrap()
            .iter()
            .find(|f| f["check"] == check)
            .unwrap_or_else(|| panic!("no {check} in {doctor}"));
        assert_eq!(finding["ok"], true, "{finding}");
        assert!(
            finding["detail"]
                .as_str()
                .unwrap()
                .contains("skipped by choice"),
            "{finding}"
        );
    }

    // Asking again turns them on, and that is remembered too.
    env.ok(&web, &["init", "--git-hooks", "--agent-files"]);
    assert!(hook.exists() && claude.exists());
    std::fs::remove_file(&hook).unwrap();
    env.ok(&web, &["init"]);
    assert!(hook.exists(), "a repair run puts back hooks the user wants");
}

#[test]
fn completions_and_man_page_cover_the_subcommands() {
    let env = TestEnv::new();
    let dir = env.path();
    for shell in ["bash", "zsh", "fish"] {
        let text = env.ok(&dir, &["completions", shell]);
        for sub in ["send", "check", "review", "doctor"] {
            assert!(text.contains(sub), "{shell} completion lacks {sub}");
        }
    }
    let man = env.ok(&dir, &["man"]);
    assert!(man.starts_with(".ie") || man.contains(".TH aea 1"), "{man}");
    for sub in ["aea\\-send", "aea\\-review", "aea\\-completions"] {
        assert!(man.contains(sub), "man page lacks {sub}");
    }
    assert_eq!(code(&env.run(&dir, &["completions", "tcsh"])), 2);
}
