//! `aea demo`: two repositories exchanging mail end to end, and a kept
//! demo that stays in its own config folder.

use crate::common::*;

#[test]
fn demo_runs_end_to_end() {
    let env = TestEnv::new();
    let keep = env.path().join("demo");
    let out = env.ok(&env.path(), &["demo", "--keep", keep.to_str().unwrap()]);
    for step in [
        "aea send --to web --type question",
        "aea check",
        "BEGIN UNTRUSTED MESSAGE",
        "aea reply",
        "processed ",
        "api receives the answer",
    ] {
        assert!(out.contains(step), "missing {step:?} in\n{out}");
    }
    // web processed the question and the handoff (they left its inbox
    // for its private store); the urgent issue waits.
    let web = keep.join("web");
    assert_eq!(inbox_files(&web).len(), 1);
    let store = env.state(&web).join("processed");
    assert_eq!(std::fs::read_dir(&store).unwrap().count(), 2);
    assert_eq!(inbox_files(&keep.join("api")).len(), 1, "the reply arrived");
    assert!(
        !env.registry().exists(),
        "the demo never touches the user's registry"
    );
}

/// A kept demo says how to use it with its own config dir, and used so it
/// works on its own: its agents are not in the user's registry.
#[test]
fn a_kept_demo_is_used_through_its_own_config_dir() {
    let env = TestEnv::new();
    let keep = env.path().join("demo");
    let out = env.ok(&env.path(), &["demo", "--keep", keep.to_str().unwrap()]);
    let config = keep.join("config");
    let line = format!(
        "export AEA_CONFIG_DIR={}; unset AEA_REGISTRY",
        config.display()
    );
    assert!(out.contains(&line), "no {line:?} in\n{out}");
    assert!(config.join("registry.toml").is_file());
    assert!(!env.registry().exists(), "the user's registry is untouched");

    let demo = |dir: &std::path::Path, args: &[&str]| {
        let mut cmd = env.cmd(dir);
        cmd.env_remove("AEA_REGISTRY")
            .env("AEA_CONFIG_DIR", &config);
        cmd.args(args).output().unwrap()
    };
    let api = keep.join("api");
    let sent = demo(
        &api,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "update",
            "--subject",
            "again",
        ],
    );
    assert_eq!(code(&sent), 0, "{}", stderr(&sent));
    let check = demo(&keep.join("web"), &["--json", "check"]);
    let report: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    let again = report["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["subject"] == "again")
        .unwrap_or_else(|| panic!("not delivered: {report}"));
    assert_eq!(again["sender"], "verified", "{again}");
    assert!(again.get("sender_path_mismatch").is_none(), "{again}");
}

/// `aea demo --keep DIR` builds its repositories and config in DIR: a
/// folder that already holds something (`--keep .` in a home with a `web`
/// project, `--keep ~`) is refused before a file is written, since the
/// demo would initialise `web/` and `api/` there and replace
/// `config/registry.toml`.
#[test]
fn a_kept_demo_refuses_a_folder_that_is_not_empty() {
    let env = TestEnv::new();
    let keep = env.path().join("home-like");
    std::fs::create_dir_all(keep.join("web")).unwrap();
    std::fs::write(keep.join("web/README"), "my project\n").unwrap();
    std::fs::create_dir_all(keep.join("config")).unwrap();
    std::fs::write(keep.join("config/registry.toml"), "# mine\n").unwrap();
    let before = snapshot(&keep);
    let out = env.run(&env.path(), &["demo", "--keep", keep.to_str().unwrap()]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("not empty"), "{}", stderr(&out));
    assert_eq!(snapshot(&keep), before, "the folder was changed");
    // A new folder, or an empty one, is fine.
    let empty = env.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    env.ok(&env.path(), &["demo", "--keep", empty.to_str().unwrap()]);
}

/// A kept demo used without its `export` line would send by the user's
/// own registry and keys, into real repositories: send refuses, naming
/// the line; with it, the demo's repositories work.
#[test]
fn a_kept_demo_sends_only_with_its_config_dir() {
    let env = TestEnv::new();
    let kept = env.path().join("demo");
    env.ok(&env.path(), &["demo", "--keep", kept.to_str().unwrap()]);
    // The user's own web, in their own registry.
    env.repo("web");
    let api = kept.join("api");
    let args = [
        "send",
        "--to",
        "web",
        "--type",
        "question",
        "--subject",
        "s",
        "--body",
        "b",
    ];
    let out = env.run(&api, &args);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("a repository of `aea demo`"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("export AEA_CONFIG_DIR="),
        "{}",
        stderr(&out)
    );
    assert!(
        inbox_files(&env.path().join("web")).is_empty(),
        "nothing reached the real web"
    );
    let out = env
        .cmd(&api)
        .env("AEA_CONFIG_DIR", kept.join("config"))
        .env_remove("AEA_REGISTRY")
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}
