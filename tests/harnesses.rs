//! Agent harnesses (SPEC §16, issue 12): what each hook event says, in the
//! shape each harness documents, and the per-session memory of what was
//! said. The output types below are the harnesses' documented schemas,
//! with unknown fields refused: a field aea adds that the harness does not
//! define fails here.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;

use crate::common::*;

/// Claude Code (and Gemini CLI): `hookSpecificOutput` for events that take
/// context.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ContextOutput {
    hook_specific_output: HookContext,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct HookContext {
    hook_event_name: String,
    additional_context: String,
}

/// Claude Code, Codex and Copilot CLI Stop hooks.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BlockOutput {
    decision: String,
    reason: String,
}

/// Cursor's stop hook.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FollowUp {
    followup_message: String,
}

/// Runs `aea check --hook HARNESS` in `repo` with `input` on stdin, as the
/// harness does; its stdout.
fn hook(env: &TestEnv, repo: &Path, harness: &str, input: &str) -> String {
    let mut child = env
        .cmd(repo)
        .args(["check", "--hook", harness])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = output_within(child, Duration::from_secs(30), "aea check --hook");
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

fn event(name: &str, session: &str) -> String {
    format!(r#"{{"hook_event_name":"{name}","session_id":"{session}","cwd":"/x"}}"#)
}

#[test]
fn every_session_hears_of_waiting_mail_on_its_own() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.question(&api, "web", "first");

    let told = hook(&env, &web, "claude", &event("UserPromptSubmit", "one"));
    let told: ContextOutput = serde_json::from_str(&told).unwrap();
    assert_eq!(
        told.hook_specific_output.hook_event_name,
        "UserPromptSubmit"
    );
    assert!(
        told.hook_specific_output
            .additional_context
            .contains("AEA: 1 unprocessed message")
    );
    // The same session is not told twice.
    assert_eq!(
        hook(&env, &web, "claude", &event("UserPromptSubmit", "one")),
        ""
    );
    // Another session, another harness: each hears it.
    let other = hook(&env, &web, "claude", &event("UserPromptSubmit", "two"));
    assert!(other.contains("1 unprocessed message"), "{other}");
    let codex = hook(&env, &web, "codex", &event("UserPromptSubmit", "one"));
    assert!(codex.starts_with("AEA: 1 unprocessed message"), "{codex}");
    // A resumed, cleared or compacted session starts again: told the count
    // even though nothing is new to it.
    let resumed = hook(&env, &web, "claude", &event("SessionStart", "one"));
    let resumed: ContextOutput = serde_json::from_str(&resumed).unwrap();
    assert_eq!(resumed.hook_specific_output.hook_event_name, "SessionStart");
    assert!(
        resumed
            .hook_specific_output
            .additional_context
            .contains("1 unprocessed message")
    );
}

#[test]
fn a_stop_hook_continues_the_turn_once_per_new_message() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.question(&api, "web", "before");
    assert!(!hook(&env, &web, "claude", &event("UserPromptSubmit", "s")).is_empty());
    // Nothing arrived during the turn: the agent stops.
    assert_eq!(hook(&env, &web, "claude", &event("Stop", "s")), "");
    let during = env.question(&api, "web", "during");
    let stop = hook(&env, &web, "claude", &event("Stop", "s"));
    let stop: BlockOutput = serde_json::from_str(&stop).unwrap();
    assert_eq!(stop.decision, "block");
    assert!(
        stop.reason.contains("2 unprocessed messages"),
        "{}",
        stop.reason
    );
    assert!(
        stop.reason.contains(&env.short_ref(&web, &during)),
        "{}",
        stop.reason
    );
    // The continued turn stops again: no loop.
    assert_eq!(hook(&env, &web, "claude", &event("Stop", "s")), "");
    // Codex's Stop takes the same two fields, and nothing else.
    env.question(&api, "web", "for codex");
    let codex = hook(&env, &web, "codex", &event("Stop", "c"));
    let codex: BlockOutput = serde_json::from_str(&codex).unwrap();
    assert_eq!(codex.decision, "block");
    // Cursor's stop sends a follow-up message.
    let cursor = hook(
        &env,
        &web,
        "cursor",
        r#"{"conversation_id":"k","status":"completed"}"#,
    );
    let cursor: FollowUp = serde_json::from_str(&cursor).unwrap();
    assert!(cursor.followup_message.contains("3 unprocessed messages"));
}

#[test]
fn events_that_take_no_context_get_no_output() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.question(&api, "web", "q");
    for name in ["PreCompact", "SessionEnd", "Notification"] {
        assert_eq!(hook(&env, &web, "claude", &event(name, name)), "", "{name}");
    }
    // Gemini CLI has no UserPromptSubmit; its BeforeAgent takes JSON context.
    assert_eq!(
        hook(&env, &web, "gemini", &event("UserPromptSubmit", "g")),
        ""
    );
    let gemini = hook(&env, &web, "gemini", &event("BeforeAgent", "g"));
    let gemini: ContextOutput = serde_json::from_str(&gemini).unwrap();
    assert_eq!(gemini.hook_specific_output.hook_event_name, "BeforeAgent");
}

#[test]
fn a_hostile_session_id_names_no_file() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.question(&api, "web", "q");
    let out = hook(
        &env,
        &web,
        "claude",
        &event("UserPromptSubmit", "../../../escape"),
    );
    assert!(out.contains("1 unprocessed message"), "{out}");
    assert!(!env.path().join("escape.json").exists());
    assert!(!web.join("escape.json").exists());
    for entry in std::fs::read_dir(web.join(".aea/.announced"))
        .unwrap()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-.".contains(&b)),
            "{name}"
        );
    }
}
