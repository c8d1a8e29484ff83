//! Human-facing output and generated files, snapshotted with a fixed clock
//! and fixed ids so that any change to them shows up in review.

use crate::common::*;
use std::path::Path;

const NOW: &str = "2026-11-21T10:00:00.000Z";

fn fixed(env: &TestEnv, dir: &Path, seed: &str, args: &[&str]) -> String {
    let out = env
        .cmd(dir)
        .env("AEA_TEST_NOW", NOW)
        .env("AEA_TEST_SEED", seed)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out).replace(env.path().to_str().unwrap(), "[ROOT]")
}

#[test]
fn check_and_show_output() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let sends: [&[&str]; 3] = [
        &[
            "--type",
            "question",
            "--subject",
            "Which port?",
            "--body",
            "For the proxy.",
            "--requires-response",
        ],
        &[
            "--type",
            "issue",
            "--priority",
            "urgent",
            "--subject",
            "Login returns 500",
            "--body",
            "Since 14:02.",
        ],
        &[
            "--type",
            "handoff",
            "--subject",
            "Take over the migration",
            "--tag",
            "migration",
            "--context",
            r#"{"branch":"m"}"#,
        ],
    ];
    for (seed, extra) in sends.iter().enumerate() {
        let mut args = vec!["send", "--to", "web"];
        args.extend_from_slice(extra);
        fixed(&env, &api, &(seed + 1).to_string(), &args);
    }
    insta::assert_snapshot!("check", fixed(&env, &web, "9", &["check"]));
    let question = env.json(&web, &["check"])["messages"][2]["id"]
        .as_str()
        .unwrap()
        .to_string();
    insta::assert_snapshot!("show", fixed(&env, &web, "9", &["show", &question]));
    insta::assert_snapshot!(
        "hook_plain",
        fixed(&env, &web, "9", &["check", "--hook", "plain"])
    );
}

#[test]
fn generated_files() {
    let env = TestEnv::new();
    let repo = env.path().join("svc");
    std::fs::create_dir(&repo).unwrap();
    env.ok(&repo, &["init"]);
    let read = |rel: &str| std::fs::read_to_string(repo.join(rel)).unwrap();
    insta::assert_snapshot!("claude_md", read("CLAUDE.md"));
    assert_eq!(read("CLAUDE.md"), read("AGENTS.md"));
    insta::assert_snapshot!("gitignore", read(".aea/.gitignore"));
    // The key is new on every run: keep its place, not its value.
    let config: String = read(".aea/agent-config.yaml")
        .lines()
        .map(|l| match l.split_once("public_key: ") {
            Some((indent, _)) => {
                format!("{indent}public_key: \"ed25519:<this agent's public key>\"\n")
            }
            None => format!("{l}\n"),
        })
        .collect();
    insta::assert_snapshot!("config_default", config);
}
