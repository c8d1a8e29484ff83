//! Each harness's own trust gate (SPEC §16), read by `init` and `doctor`
//! from fake HOMEs holding the files the harnesses write: open, closed,
//! missing, corrupt, a symlink, huge. The Codex hashes are the ones Codex
//! 0.169.0 itself reported (`codex app-server`, `hooks/list`) for the hooks
//! `aea init --agents codex` writes: if aea's hooks change, people must
//! trust them again in Codex, and these tests say so.

use crate::common::*;
use serde_json::Value;
use std::fmt::Write;
use std::path::{Path, PathBuf};

const CODEX_HASHES: [(&str, &str); 3] = [
    (
        "session_start",
        "sha256:0efb557d951df272ab650f8b8db6861ad43f2c2579aed8062017dd0ddbb49fd9",
    ),
    (
        "user_prompt_submit",
        "sha256:92edf8f95daa950dfc9f6f449d52e06dbba2d98ef722fe83577366e6099fb887",
    ),
    (
        "stop",
        "sha256:00d79bd3bccc9f2429818df6e623a419b6fdfdb25d5606efb02ea96b5a6fc662",
    ),
];

fn home(env: &TestEnv) -> PathBuf {
    env.path().join("home")
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A repository set up for `agents`, and its canonical path.
fn repo_for(env: &TestEnv, agents: &str) -> PathBuf {
    let repo = plain_git_repo(env, "web");
    env.ok(&repo, &["init", "--agents", agents]);
    std::fs::canonicalize(repo).unwrap()
}

/// `harness`'s gate as `doctor --json` reports it: (ok, warning, detail, fix).
fn doctor_gate(env: &TestEnv, repo: &Path, harness: &str) -> (bool, bool, String, String) {
    let doc = env.json(repo, &["doctor"]);
    assert_eq!(doc["problems"], 0, "{doc:#}");
    let prefix = format!("{harness}: ");
    let check = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "trust gate" && c["detail"].as_str().unwrap().starts_with(&prefix))
        .unwrap_or_else(|| panic!("no trust gate for {harness}: {doc:#}"))
        .clone();
    (
        check["ok"].as_bool().unwrap(),
        check["warning"].as_bool().unwrap_or(false),
        check["detail"].as_str().unwrap().to_string(),
        check["fix"].as_str().unwrap_or("").to_string(),
    )
}

/// `harness`'s gate in `init --json` (run again, which repairs nothing).
fn init_gate(env: &TestEnv, repo: &Path, harness: &str) -> Value {
    let doc = env.json(repo, &["init"]);
    doc["trust_gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["harness"] == harness)
        .unwrap_or_else(|| panic!("no gate for {harness}: {doc:#}"))
        .clone()
}

fn codex_config(repo: &Path, level: Option<&str>, hashes: &[(&str, &str)]) -> String {
    let mut text = "model = \"fake\"\n".to_string();
    if let Some(level) = level {
        writeln!(
            text,
            "\n[projects.\"{}\"]\ntrust_level = \"{level}\"",
            repo.display()
        )
        .unwrap();
    }
    for (event, hash) in hashes {
        writeln!(
            text,
            "\n[hooks.state.\"{}/.codex/hooks.json:{event}:0:0\"]\ntrusted_hash = \"{hash}\"",
            repo.display()
        )
        .unwrap();
    }
    text
}

#[test]
fn a_fresh_home_has_every_gate_closed_and_init_says_each_step() {
    let env = TestEnv::new();
    let repo = plain_git_repo(&env, "web");
    let out = env.ok(
        &repo,
        &["init", "--agents", "claude,codex,gemini,copilot,opencode"],
    );
    let trust: Vec<&str> = out.lines().filter(|l| l.starts_with("  trust: ")).collect();
    assert_eq!(trust.len(), 4, "{out}");
    assert!(
        trust[0].starts_with("  trust: claude: trust gate closed (no "),
        "{out}"
    );
    assert!(trust[0].ends_with("start `claude` in this folder once and accept its trust dialog; until then it ignores the allowed `aea` commands"), "{out}");
    assert!(
        trust[1].starts_with("  trust: codex: trust gate closed (this project is not trusted in "),
        "{out}"
    );
    assert!(trust[1].ends_with(": start `codex` in this folder and trust it, then trust aea's hooks in its `/hooks` menu"), "{out}");
    assert!(
        trust[2].starts_with("  trust: gemini: trust gate closed (no "),
        "{out}"
    );
    assert!(
        trust[2].contains(
            "trustedFolders.json yet): start `gemini` in this folder and trust it when it asks"
        ),
        "{out}"
    );
    assert!(
        trust[3].starts_with("  trust: copilot: trust gate closed (no "),
        "{out}"
    );
    assert!(
        trust[3].ends_with(".copilot/config.json yet): start `copilot` in this folder and trust it when it asks; until then it runs none of the repository's hooks"),
        "{out}"
    );
}

/// Copilot CLI keeps `trustedFolders` in `~/.copilot/config.json` (or
/// `$COPILOT_HOME`), JSON after `//` comment lines as it writes it; a
/// folder covers the folders below it.
#[test]
fn copilot_reads_its_trusted_folders() {
    let env = TestEnv::new();
    let repo = repo_for(&env, "copilot");
    let config = home(&env).join(".copilot/config.json");
    let listed = |folders: &[&str]| {
        format!(
            "// User settings belong in settings.json.\n// This file is managed automatically.\n{}\n",
            serde_json::json!({"trustedFolders": folders, "banner": "never"})
        )
    };
    write(&config, &listed(&["/somewhere/else"]));
    let (ok, warning, detail, fix) = doctor_gate(&env, &repo, "copilot");
    assert!(!ok && warning, "{detail}");
    assert!(detail.contains("not among trustedFolders"), "{detail}");
    assert!(fix.starts_with("start `copilot` in this folder"), "{fix}");
    let parent = repo.parent().unwrap().to_str().unwrap().to_string();
    write(&config, &listed(&["/somewhere/else", &parent]));
    let (ok, _, detail, _) = doctor_gate(&env, &repo, "copilot");
    assert!(ok, "{detail}");
    assert_eq!(init_gate(&env, &repo, "copilot")["gate"], "open");
    // A folder whose name only starts like it is no parent.
    write(&config, &listed(&[&format!("{parent}/we")]));
    assert!(!doctor_gate(&env, &repo, "copilot").0);
    // A relative entry, a list that is not one, a file that is not JSON.
    write(&config, &listed(&["web"]));
    assert!(!doctor_gate(&env, &repo, "copilot").0);
    write(&config, r#"{"trustedFolders": "/"}"#);
    let (_, _, detail, _) = doctor_gate(&env, &repo, "copilot");
    assert!(
        detail.contains("cannot tell") && detail.contains("not a list"),
        "{detail}"
    );
    write(&config, "{not json");
    assert!(
        doctor_gate(&env, &repo, "copilot")
            .2
            .contains("cannot tell")
    );
    // COPILOT_HOME is where Copilot CLI looks instead.
    let elsewhere = env.path().join("copilot-home");
    write(&elsewhere.join("config.json"), &listed(&[&parent]));
    env.set_var("COPILOT_HOME", elsewhere.to_str().unwrap());
    assert!(doctor_gate(&env, &repo, "copilot").0);
}

/// A closed gate is a warning in doctor: said with its step, and the exit
/// status stays that of a healthy repository.
#[test]
fn doctor_warns_of_a_closed_gate_and_still_exits_zero() {
    let env = TestEnv::new();
    let repo = repo_for(&env, "codex,opencode");
    let out = env.ok(&repo, &["doctor"]);
    let line = out.lines().find(|l| l.contains("trust gate")).unwrap();
    assert!(
        line.starts_with(
            "WARN  trust gate         codex: trust gate closed (this project is not trusted in "
        ),
        "{out}"
    );
    assert!(out.contains("-> start `codex` in this folder and trust it, then trust aea's hooks in its `/hooks` menu"), "{out}");
    assert!(out.ends_with("0 problems\n"), "{out}");
    let gates = out
        .lines()
        .filter(|l| l.get(6..).is_some_and(|c| c.starts_with("trust gate ")))
        .count();
    assert_eq!(gates, 1, "OpenCode has no gate: {out}");
    let (ok, warning, _, _) = doctor_gate(&env, &repo, "codex");
    assert!(!ok && warning);
}

#[test]
fn codex_opens_with_the_project_and_each_hook_trusted() {
    let env = TestEnv::new();
    let repo = repo_for(&env, "codex");
    let config = home(&env).join(".codex/config.toml");

    write(
        &config,
        &codex_config(&repo, Some("trusted"), &CODEX_HASHES),
    );
    let (ok, warning, detail, _) = doctor_gate(&env, &repo, "codex");
    assert!(ok && !warning, "{detail}");
    assert!(
        detail.starts_with("codex: open (project and aea's 3 hooks trusted in "),
        "{detail}"
    );
    let gate = init_gate(&env, &repo, "codex");
    assert_eq!(gate["gate"], "open", "{gate}");
    assert!(gate.get("step").is_none(), "{gate}");

    // The project trusted, the hooks not yet (Codex's `/hooks`).
    write(
        &config,
        &codex_config(&repo, Some("trusted"), &CODEX_HASHES[..2]),
    );
    let (_, warning, detail, fix) = doctor_gate(&env, &repo, "codex");
    assert!(
        warning && detail.contains("(1 of aea's 3 hooks not yet trusted in "),
        "{detail}"
    );
    assert_eq!(
        fix,
        "start `codex` in this folder and trust aea's hooks in its `/hooks` menu"
    );

    // A hook trusted as it was before: Codex calls it modified, and skips it.
    let mut changed = CODEX_HASHES;
    changed[2].1 = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
    write(&config, &codex_config(&repo, Some("trusted"), &changed));
    let (_, _, detail, _) = doctor_gate(&env, &repo, "codex");
    assert!(
        detail.contains("(1 of aea's 3 hooks changed since they were trusted in "),
        "{detail}"
    );

    // Turned off in `/hooks`.
    write(
        &config,
        &(codex_config(&repo, Some("trusted"), &CODEX_HASHES).replace(
            "hooks.json:stop:0:0\"]\n",
            "hooks.json:stop:0:0\"]\nenabled = false\n",
        )),
    );
    let (_, _, detail, fix) = doctor_gate(&env, &repo, "codex");
    assert!(
        detail.contains("(1 of aea's 3 hooks turned off in "),
        "{detail}"
    );
    assert_eq!(fix, "turn aea's hooks back on in Codex's `/hooks` menu");

    // Hooks trusted, but the project marked untrusted: nothing runs.
    write(
        &config,
        &codex_config(&repo, Some("untrusted"), &CODEX_HASHES),
    );
    let (_, _, detail, _) = doctor_gate(&env, &repo, "codex");
    assert!(
        detail.contains("(this project is marked untrusted in "),
        "{detail}"
    );

    // An edited hook (a timeout) has another hash: no longer trusted.
    write(
        &config,
        &codex_config(&repo, Some("trusted"), &CODEX_HASHES),
    );
    let hooks = repo.join(".codex/hooks.json");
    let text = std::fs::read_to_string(&hooks).unwrap();
    std::fs::write(
        &hooks,
        text.replacen(
            "\"type\": \"command\",",
            "\"type\": \"command\", \"timeout\": 30,",
            1,
        ),
    )
    .unwrap();
    let (_, _, detail, _) = doctor_gate(&env, &repo, "codex");
    assert!(
        detail.contains("(1 of aea's 3 hooks changed since they were trusted in "),
        "{detail}"
    );
}

#[test]
fn codex_reads_codex_home_when_it_is_set() {
    let env = TestEnv::new();
    let repo = repo_for(&env, "codex");
    let elsewhere = env.path().join("codex-home");
    write(
        &elsewhere.join("config.toml"),
        &codex_config(&repo, Some("trusted"), &CODEX_HASHES),
    );
    assert!(
        doctor_gate(&env, &repo, "codex")
            .2
            .contains("trust gate closed")
    );
    env.set_var("CODEX_HOME", elsewhere.to_str().unwrap());
    let (ok, _, detail, _) = doctor_gate(&env, &repo, "codex");
    assert!(ok, "{detail}");
    assert!(
        detail.contains(&elsewhere.join("config.toml").display().to_string()),
        "{detail}"
    );
}

/// What cannot be read is unknown, with the step and why; a symlink to a
/// real file (a dotfiles repository) is read like the file.
#[test]
fn a_corrupt_huge_or_odd_codex_config_makes_the_gate_unknown() {
    let env = TestEnv::new();
    let repo = repo_for(&env, "codex");
    let config = home(&env).join(".codex/config.toml");

    write(&config, "[projects\nthis is not toml");
    let (ok, warning, detail, fix) = doctor_gate(&env, &repo, "codex");
    assert!(!ok && warning, "{detail}");
    assert!(
        detail.starts_with("codex: aea cannot tell whether its trust gate is open ("),
        "{detail}"
    );
    assert!(
        detail.contains("config.toml is not TOML aea can read"),
        "{detail}"
    );
    assert_eq!(
        fix,
        "start `codex` in this folder and trust it, then trust aea's hooks in its `/hooks` menu"
    );
    assert_eq!(init_gate(&env, &repo, "codex")["gate"], "unknown");

    // Huge: refused by its size before a byte is read (a sparse file).
    std::fs::remove_file(&config).unwrap();
    let file = std::fs::File::create(&config).unwrap();
    file.set_len(64 * 1024 * 1024).unwrap();
    let (_, _, detail, _) = doctor_gate(&env, &repo, "codex");
    assert!(
        detail.contains("is 67108864 bytes, more than aea reads"),
        "{detail}"
    );

    // A FIFO in its place: never opened for long, never read.
    std::fs::remove_file(&config).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(&config)
        .status()
        .unwrap();
    assert!(status.success());
    let (_, _, detail, _) = doctor_gate(&env, &repo, "codex");
    assert!(detail.contains("is not a regular file"), "{detail}");

    // A symlink to a real file is that file.
    std::fs::remove_file(&config).unwrap();
    let dotfiles = env.path().join("dotfiles/codex.toml");
    write(
        &dotfiles,
        &codex_config(&repo, Some("trusted"), &CODEX_HASHES),
    );
    std::os::unix::fs::symlink(&dotfiles, &config).unwrap();
    assert!(doctor_gate(&env, &repo, "codex").0);

    // A dangling one is a missing file: nothing trusted.
    std::fs::remove_file(&dotfiles).unwrap();
    let (_, _, detail, _) = doctor_gate(&env, &repo, "codex");
    assert!(
        detail.contains("trust gate closed (this project is not trusted in "),
        "{detail}"
    );
}

#[test]
fn gemini_follows_its_trusted_folders_rules() {
    let env = TestEnv::new();
    let repo = repo_for(&env, "gemini");
    let folders = home(&env).join(".gemini/trustedFolders.json");
    let rule = |text: String| write(&folders, &text);

    rule(format!("{{\"{}\": \"TRUST_FOLDER\"}}", repo.display()));
    let (ok, _, detail, _) = doctor_gate(&env, &repo, "gemini");
    assert!(ok, "{detail}");
    assert_eq!(init_gate(&env, &repo, "gemini")["gate"], "open");

    // TRUST_PARENT on a sibling trusts the folder above, and so this one;
    // comments are allowed, as Gemini CLI allows them.
    rule(format!(
        "{{\n  // trusted when first started\n  \"{}\": \"TRUST_PARENT\"\n}}",
        repo.parent().unwrap().join("other").display()
    ));
    assert!(doctor_gate(&env, &repo, "gemini").0);

    // The longest rule wins: the folder above trusted, this one not.
    rule(format!(
        "{{\"{}\": \"TRUST_FOLDER\", \"{}\": \"DO_NOT_TRUST\"}}",
        repo.parent().unwrap().display(),
        repo.display()
    ));
    let (ok, warning, detail, fix) = doctor_gate(&env, &repo, "gemini");
    assert!(!ok && warning, "{detail}");
    assert!(
        detail.contains("is marked not to be trusted in "),
        "{detail}"
    );
    assert!(
        fix.starts_with("trust this folder in `gemini` with `/permissions`"),
        "{fix}"
    );

    // Another folder trusted only.
    rule(format!(
        "{{\"{}\": \"TRUST_FOLDER\"}}",
        env.path().join("elsewhere").display()
    ));
    let (_, _, detail, _) = doctor_gate(&env, &repo, "gemini");
    assert!(
        detail.contains("trust gate closed (this folder is not trusted in "),
        "{detail}"
    );

    // A level Gemini CLI refuses, and a file that is not JSON: unknown.
    rule(format!("{{\"{}\": \"YES\"}}", repo.display()));
    let (_, _, detail, _) = doctor_gate(&env, &repo, "gemini");
    assert!(
        detail.contains("holds a trust level Gemini CLI refuses"),
        "{detail}"
    );
    rule("{ not json".to_string());
    let (_, _, detail, _) = doctor_gate(&env, &repo, "gemini");
    assert!(
        detail.contains("trustedFolders.json is not JSON aea can read"),
        "{detail}"
    );
    assert_eq!(init_gate(&env, &repo, "gemini")["gate"], "unknown");

    // Folder trust turned off in the user's settings: every folder is open.
    write(
        &home(&env).join(".gemini/settings.json"),
        "{\"security\": {\"folderTrust\": {\"enabled\": false}}}",
    );
    let (ok, _, detail, _) = doctor_gate(&env, &repo, "gemini");
    assert!(
        ok && detail.contains("folder trust is turned off in its settings"),
        "{detail}"
    );
    // ... unless the system's settings, which win, turn it on.
    let system = env.path().join("etc-gemini/settings.json");
    write(
        &system,
        "{\"security\": {\"folderTrust\": {\"enabled\": true}}}",
    );
    env.set_var("GEMINI_CLI_SYSTEM_SETTINGS_PATH", system.to_str().unwrap());
    assert!(!doctor_gate(&env, &repo, "gemini").0);
}

#[test]
fn gemini_reads_its_own_home_and_trusted_folders_path() {
    let env = TestEnv::new();
    let repo = repo_for(&env, "gemini");
    let elsewhere = env.path().join("gemini-home");
    write(
        &elsewhere.join(".gemini/trustedFolders.json"),
        &format!("{{\"{}\": \"TRUST_FOLDER\"}}", repo.display()),
    );
    env.set_var("GEMINI_CLI_HOME", elsewhere.to_str().unwrap());
    assert!(doctor_gate(&env, &repo, "gemini").0);
    let other = env.path().join("folders.json");
    write(&other, "{}");
    env.set_var("GEMINI_CLI_TRUSTED_FOLDERS_PATH", other.to_str().unwrap());
    let (ok, _, detail, _) = doctor_gate(&env, &repo, "gemini");
    assert!(
        !ok && detail.contains(&other.display().to_string()),
        "{detail}"
    );
}

#[test]
fn claude_opens_once_its_trust_dialog_was_accepted() {
    let env = TestEnv::new();
    let repo = repo_for(&env, "claude");
    let config = home(&env).join(".claude.json");
    let accepted = |path: &Path, yes: bool| {
        write(
            &config,
            &format!(
                "{{\"numStartups\": 3, \"projects\": {{\"{}\": {{\"allowedTools\": [], \"hasTrustDialogAccepted\": {yes}}}}}}}",
                path.display()
            ),
        );
    };

    accepted(&repo, true);
    let (ok, _, detail, _) = doctor_gate(&env, &repo, "claude");
    assert!(
        ok && detail.contains("trust dialog accepted for "),
        "{detail}"
    );

    accepted(&repo, false);
    let (ok, _, detail, fix) = doctor_gate(&env, &repo, "claude");
    assert!(
        !ok && detail.contains("has no accepted trust dialog here"),
        "{detail}"
    );
    assert_eq!(
        fix,
        "start `claude` in this folder once and accept its trust dialog; until then it ignores the allowed `aea` commands"
    );

    // A folder above the git checkout does not count, as in Claude Code.
    accepted(repo.parent().unwrap(), true);
    assert!(!doctor_gate(&env, &repo, "claude").0);

    // A package folder inside a trusted checkout does.
    let package = repo.join("packages/api");
    std::fs::create_dir_all(&package).unwrap();
    env.ok(&package, &["init", "--agents", "claude"]);
    accepted(&repo, true);
    assert!(doctor_gate(&env, &package, "claude").0);

    write(&config, "{\"projects\": ");
    let (_, warning, detail, _) = doctor_gate(&env, &repo, "claude");
    assert!(
        warning && detail.contains(".claude.json is not the JSON aea knows"),
        "{detail}"
    );

    // CLAUDE_CONFIG_DIR moves the file.
    let elsewhere = env.path().join("claude-config");
    write(
        &elsewhere.join(".claude.json"),
        &format!(
            "{{\"projects\": {{\"{}\": {{\"hasTrustDialogAccepted\": true}}}}}}",
            repo.display()
        ),
    );
    env.set_var("CLAUDE_CONFIG_DIR", elsewhere.to_str().unwrap());
    assert!(doctor_gate(&env, &repo, "claude").0);
}

/// A later `init --agents` on a repository says the gates too; a repair
/// run without it does not.
#[test]
fn a_later_init_with_agents_says_the_gates() {
    let env = TestEnv::new();
    let repo = plain_git_repo(&env, "web");
    env.ok(&repo, &["init", "--agents", "opencode"]);
    let out = env.ok(&repo, &["init", "--agents", "opencode,codex"]);
    assert!(out.contains("  trust: codex: trust gate closed ("), "{out}");
    assert!(!env.ok(&repo, &["init"]).contains("trust:"));
}
