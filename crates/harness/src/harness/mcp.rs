//! aea's MCP server (`aea mcp`, SPEC §18) in each harness's project MCP
//! file: the entry that starts it, how aea knows an entry is its own, and
//! the Codex TOML table, added to the end of the user's file and taken out
//! again without touching the rest.
//!
//! What each harness reads, from its own code (the versions pinned in
//! `scripts/harness-e2e`), and how it starts a stdio server:
//!
//! - Claude Code (2.1.330, the bundle in `bin/claude.exe`): `.mcp.json`
//!   `mcpServers.NAME = {type: "stdio", command, args, env}`; started with
//!   the MCP SDK's `StdioClientTransport` (`cross-spawn`, `shell: false`).
//!   A server from `.mcp.json` stays "pending" until a person approves it
//!   (the dialog on start, or `enabledMcpjsonServers` /
//!   `enableAllProjectMcpServers` in their settings).
//! - Codex CLI (0.169.0): `.codex/config.toml` `[mcp_servers.NAME]`
//!   `command`, `args`; read only in a trusted project ("Config, hooks, and
//!   exec policies from untrusted folders stay disabled").
//! - Gemini CLI (0.61.0, `bundle/chunk-*.js` `connectToMcpServer`):
//!   `.gemini/settings.json` `mcpServers.NAME = {command, args}`, spawned
//!   with `shell: false`; a stdio server in an untrusted folder is refused
//!   ("uses stdio transport but current folder is not trusted").
//! - OpenCode (1.18.33, `MCP.connectLocal`): `opencode.json` `mcp.NAME =
//!   {type: "local", command: [program, ...args], enabled}`; the first
//!   element is spawned with the rest as arguments, no shell.
//! - Cursor (`.cursor/mcp.json`) and Roo Code (`.roo/mcp.json`):
//!   `mcpServers.NAME = {command, args}` as their documentation gives it
//!   (neither is among the harnesses `scripts/harness-e2e` installs).
//!   Cline CLI (3.0.65) reads MCP servers only from the user's own
//!   `cline_mcp_settings.json`, never from the repository.
//!
//! No harness runs the command through a shell, and each file is
//! committed: the command is `sh -c` with [`HOOK_GUARD`], which finds aea
//! on PATH or in ~/.cargo/bin as the hooks do, and names no path of this
//! machine.

use serde_json::{Value, json};

use super::guard::HOOK_GUARD;

/// The name of aea's server in every MCP file.
pub(crate) const NAME: &str = "aea";

/// What `sh -c` runs: the guard, then `aea mcp`.
pub(crate) fn script() -> String {
    format!("{HOOK_GUARD}mcp")
}

/// How a harness's JSON MCP file lays out one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// `mcpServers.aea = {"command", "args"}`: Cursor, Gemini CLI, Roo.
    Plain,
    /// `mcpServers.aea = {"type": "stdio", "command", "args"}`: Claude Code.
    Stdio,
    /// `mcp.aea = {"type": "local", "command": [..], "enabled": true}`:
    /// OpenCode.
    Opencode,
}

impl Style {
    /// The key of the object that holds the servers.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Style::Plain | Style::Stdio => "mcpServers",
            Style::Opencode => "mcp",
        }
    }

    /// aea's entry in this style.
    pub(crate) fn entry(self) -> Value {
        let script = script();
        match self {
            Style::Plain => json!({ "command": "sh", "args": ["-c", script] }),
            Style::Stdio => json!({ "type": "stdio", "command": "sh", "args": ["-c", script] }),
            Style::Opencode => json!({
                "type": "local",
                "command": ["sh", "-c", script],
                "enabled": true
            }),
        }
    }
}

/// The program and arguments an MCP server entry runs, in any of the
/// harnesses' forms (`command` a string with `args`, or one array).
pub(crate) fn argv(entry: &Value) -> Option<Vec<String>> {
    let strings = |v: &Value| -> Option<Vec<String>> {
        v.as_array()?
            .iter()
            .map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    match entry.get("command")? {
        Value::String(program) => {
            let mut argv = vec![program.clone()];
            if let Some(args) = entry.get("args") {
                argv.extend(strings(args)?);
            }
            Some(argv)
        }
        command @ Value::Array(_) => strings(command),
        _ => None,
    }
}

/// Whether `entry` is recognisably aea's: `sh -c` with the guard running
/// `aea mcp` (what aea writes, perhaps edited after `mcp`), or an `aea`
/// binary (bare or by any path) run with `mcp`. Anything else under the
/// name `aea` is a person's own server: aea neither replaces nor removes
/// it.
pub(crate) fn is_ours(entry: &Value) -> bool {
    let Some(argv) = argv(entry) else {
        return false;
    };
    match argv.as_slice() {
        [sh, c, script] if sh == "sh" && c == "-c" => script
            .strip_prefix(HOOK_GUARD)
            .is_some_and(|rest| rest.split_whitespace().next() == Some("mcp")),
        [program, first, ..] => program.rsplit('/').next() == Some("aea") && first == "mcp",
        _ => false,
    }
}

/// The keys of an entry that say what runs.
const RUNS: [&str; 3] = ["type", "command", "args"];

/// The keys a person may set on aea's entry, which change nothing about
/// what runs or what it may do unasked: switching it off, timeouts. Any
/// other key (`env`, which can put a committed `aea` first on PATH; a
/// `cwd`, which points it at another repository; Gemini's `trust`, which
/// lets every tool run unconfirmed) came from a hand or a commit that aea
/// cannot vouch for, and goes when aea writes the entry.
const KEPT: [&str; 6] = [
    "enabled",
    "disabled",
    "timeout",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
];

/// Whether `entry` runs exactly what aea writes in `style`, with nothing
/// set on it but [`KEPT`] keys.
pub(crate) fn current(entry: &Value, style: Style) -> bool {
    let want = style.entry();
    RUNS.iter().all(|k| entry.get(k) == want.get(k)) && only_kept(entry, &want)
}

/// Whether every key of `entry` is aea's own (in `want`) or [`KEPT`].
fn only_kept(entry: &Value, want: &Value) -> bool {
    entry.as_object().is_some_and(|keys| {
        keys.keys()
            .all(|k| KEPT.contains(&k.as_str()) || want.get(k).is_some())
    })
}

/// `entry` (aea's, perhaps an older form) running what aea writes now,
/// with the person's other settings kept.
pub(crate) fn updated(entry: &Value, style: Style) -> Value {
    let Value::Object(want) = style.entry() else {
        unreachable!("an entry is an object")
    };
    let mut now = entry.as_object().cloned().unwrap_or_default();
    now.retain(|key, _| KEPT.contains(&key.as_str()));
    for (key, value) in want {
        if RUNS.contains(&key.as_str()) || !now.contains_key(&key) {
            now.insert(key, value);
        }
    }
    Value::Object(now)
}

/// The command line of `entry`, for saying what a server someone else
/// wrote runs.
pub(crate) fn shown(entry: &Value) -> String {
    argv(entry).map_or_else(|| "no command".to_string(), |a| a.join(" "))
}

/// The step that lets `agent`'s harness start aea's server once a person
/// allowed it, where the harness asks first.
pub fn approval_step(agent: super::names::Agent) -> Option<&'static str> {
    use super::names::Agent;
    match agent {
        Agent::Claude => Some(
            "Claude Code asks to approve the `aea` server of .mcp.json when it starts here (or list \"aea\" in `enabledMcpjsonServers` of .claude/settings.local.json)",
        ),
        Agent::Codex => Some(
            "Codex reads .codex/config.toml only in a trusted project (start `codex` here and trust it)",
        ),
        Agent::Gemini => Some(
            "Gemini CLI starts the server only in a trusted folder (it asks on first start; `/permissions` changes it)",
        ),
        Agent::Cursor => Some(
            "Cursor asks to enable the `aea` server of .cursor/mcp.json (Settings > MCP; `cursor-agent mcp enable aea` in its CLI)",
        ),
        Agent::Opencode | Agent::Copilot | Agent::Cline | Agent::Aider => None,
    }
}

/// The Codex table aea appends: a comment that says whose it is, then
/// `[mcp_servers.aea]`.
pub(crate) fn toml_block() -> String {
    let quoted = toml::Value::String(script()).to_string();
    format!(
        "# aea: its MCP server, the mail tools (`aea uninstall` removes this table)\n[mcp_servers.{NAME}]\ncommand = \"sh\"\nargs = [\"-c\", {quoted}]\n"
    )
}

fn parse_toml(text: &str) -> Result<toml::Table, String> {
    // The parser's message only, never the file's text: the file may be
    // a commit's, and this reaches a terminal.
    toml::from_str(text).map_err(|e| {
        let message: String = e
            .message()
            .lines()
            .next()
            .unwrap_or_default()
            .chars()
            .filter(|c| c.is_ascii() && !c.is_ascii_control())
            .take(120)
            .collect();
        format!("not valid TOML: {message}")
    })
}

/// `mcp_servers.aea` of a parsed Codex config, as JSON.
fn server_of(table: &toml::Table) -> Option<Value> {
    let server = table.get("mcp_servers")?.as_table()?.get(NAME)?;
    serde_json::to_value(server).ok()
}

/// `table` without `mcp_servers.aea` (nor `mcp_servers`, once empty).
fn without_server(mut table: toml::Table) -> toml::Table {
    if let Some(servers) = table.get_mut("mcp_servers").and_then(|v| v.as_table_mut()) {
        servers.remove(NAME);
        if servers.is_empty() {
            table.remove("mcp_servers");
        }
    }
    table
}

/// aea's server in the Codex config `text`: `Ok(None)` when it has none.
pub(crate) fn toml_server(text: &str) -> Result<Option<Value>, String> {
    Ok(server_of(&parse_toml(text)?))
}

/// aea's server as Codex reads it from what [`toml_block`] writes.
fn wanted() -> Value {
    server_of(&parse_toml(&toml_block()).expect("aea's table parses")).expect("it names aea")
}

/// Whether aea's server in a Codex config runs exactly what aea writes,
/// with nothing set on it but [`KEPT`] keys.
pub(crate) fn toml_current(server: &Value) -> bool {
    let want = wanted();
    ["command", "args"]
        .iter()
        .all(|k| server.get(k) == want.get(k))
        && only_kept(server, &want)
}

/// The Codex config with aea's table added (or an older one of aea's
/// rewritten), `Ok(None)` when already current. `Err` says why aea leaves
/// the file alone: not TOML, a server named `aea` that is someone else's,
/// or one written in a form aea cannot take out as a whole.
pub(crate) fn toml_merged(existing: Option<&str>) -> Result<Option<String>, String> {
    let text = existing.unwrap_or_default();
    let before = parse_toml(text)?;
    let base = match server_of(&before) {
        Some(server) if toml_current(&server) => return Ok(None),
        Some(server) if !is_ours(&server) => {
            return Err(format!(
                "`[mcp_servers.aea]` is a server aea did not write (it runs `{}`)",
                crate::printer::untrusted_short(&shown(&server), 80)
            ));
        }
        Some(_) => toml_removed(text)?
            .ok_or("`mcp_servers.aea` is not a table of its own, which aea cannot rewrite")?,
        None => text.to_string(),
    };
    let mut merged = base;
    if !merged.is_empty() && !merged.ends_with('\n') {
        merged.push('\n');
    }
    if !merged.trim().is_empty() {
        merged.push('\n');
    }
    merged.push_str(&toml_block());
    // Appending a table changes nothing else the file says: checked, since
    // a file can end inside a construct (an inline `mcp_servers = {…}`)
    // that a new table header would clash with.
    let after = parse_toml(&merged)
        .map_err(|_| "aea's table cannot be added to it without breaking it".to_string())?;
    if server_of(&after).as_ref() != Some(&wanted())
        || without_server(after) != without_server(before)
    {
        return Err("aea's table cannot be added to it without changing what else it says".into());
    }
    Ok(Some(merged))
}

/// The Codex config without aea's table (and the comment line aea puts
/// above it), `Ok(None)` when it holds no server named `aea` or one aea
/// did not write. `Err` when the server is aea's but not a table of its own
/// that can be taken out leaving everything else as it was.
pub(crate) fn toml_removed(text: &str) -> Result<Option<String>, String> {
    let before = parse_toml(text)?;
    match server_of(&before) {
        Some(server) if is_ours(&server) => {}
        _ => return Ok(None),
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let header = format!("[mcp_servers.{NAME}]");
    let Some(start) = lines.iter().position(|l| l.trim() == header) else {
        return Err("`mcp_servers.aea` is not a table of its own".into());
    };
    // The table runs to the next header; comments and blank lines just
    // before that header belong to what follows.
    let mut end = lines[start + 1..]
        .iter()
        .position(|l| l.trim_start().starts_with('['))
        .map_or(lines.len(), |i| start + 1 + i);
    while end > start + 1 && {
        let l = lines[end - 1].trim();
        l.is_empty() || l.starts_with('#')
    } {
        end -= 1;
    }
    let mut from = start;
    if from > 0 && lines[from - 1].starts_with("# aea: its MCP server") {
        from -= 1;
    }
    // The blank line aea put before its comment.
    if from > 0 && lines[from - 1].trim().is_empty() {
        from -= 1;
    }
    let mut kept: String = lines[..from].concat();
    let rest: String = lines[end..].concat();
    kept.push_str(&rest);
    let after = parse_toml(&kept)
        .map_err(|_| "aea's table cannot be taken out of it as a whole".to_string())?;
    if after != without_server(before) {
        return Err(
            "aea's table cannot be taken out of it without changing what else it says".into(),
        );
    }
    Ok(Some(kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_style_is_recognised_and_names_no_path() {
        for style in [Style::Plain, Style::Stdio, Style::Opencode] {
            let entry = style.entry();
            assert!(is_ours(&entry), "{style:?}");
            assert!(!entry.to_string().contains("/home/"), "{entry}");
        }
        assert!(is_ours(&json!({"command": "aea", "args": ["mcp"]})));
        assert!(is_ours(&json!({"command": ["/opt/bin/aea", "mcp"]})));
        assert!(!is_ours(
            &json!({"command": "node", "args": ["aea-server.js"]})
        ));
        assert!(!is_ours(
            &json!({"command": "sh", "args": ["-c", "aea mcp; curl x | sh"]})
        ));
        assert!(!is_ours(&json!({"command": "aea", "args": ["check"]})));
        assert!(!is_ours(&json!({"url": "http://x"})));
    }

    /// What `sh -c` gets runs `aea mcp` through the same guard as the
    /// hooks, and `sh -c` is how every harness would run it: no shell of
    /// its own (see the module's notes).
    #[test]
    fn the_server_command_runs_aea_mcp_through_the_guard() {
        let temp = tempfile::tempdir().unwrap();
        let bin = temp.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let fake = bin.join("aea");
        std::fs::write(&fake, "#!/bin/sh\necho \"ran: $*\"\n").unwrap();
        crate::hooks::make_executable(&fake).unwrap();
        let argv = argv(&Style::Opencode.entry()).unwrap();
        let out = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("HOME", temp.path())
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ran: mcp\n");
    }

    #[test]
    fn the_codex_table_is_appended_and_taken_out_leaving_the_rest() {
        let user = "model = \"o4\"\n\n[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"docs\"]\n";
        let merged = toml_merged(Some(user)).unwrap().unwrap();
        assert!(merged.starts_with(user), "{merged}");
        assert!(toml_current(&toml_server(&merged).unwrap().unwrap()));
        assert_eq!(toml_merged(Some(&merged)).unwrap(), None, "idempotent");
        assert_eq!(toml_removed(&merged).unwrap().unwrap(), user);
        // A table of the user's after aea's stays, with its comment.
        let later = format!("{merged}\n# mine\n[profiles.x]\nmodel = \"y\"\n");
        let removed = toml_removed(&later).unwrap().unwrap();
        assert_eq!(
            removed,
            format!("{user}\n# mine\n[profiles.x]\nmodel = \"y\"\n")
        );
        // Created from nothing, and nothing again after.
        let created = toml_merged(None).unwrap().unwrap();
        assert_eq!(created, toml_block());
        assert_eq!(toml_removed(&created).unwrap().unwrap(), "");
    }

    #[test]
    fn a_codex_server_named_aea_that_is_not_aeas_is_left_alone() {
        let theirs = "[mcp_servers.aea]\ncommand = \"node\"\nargs = [\"mine.js\"]\n";
        assert!(
            toml_merged(Some(theirs))
                .unwrap_err()
                .contains("node mine.js")
        );
        assert_eq!(toml_removed(theirs).unwrap(), None);
        assert!(
            toml_merged(Some("not = [toml"))
                .unwrap_err()
                .contains("not valid TOML")
        );
        // An inline table cannot take a new header: said, not broken.
        let inline = "mcp_servers = { docs = { command = \"npx\" } }\n";
        assert!(toml_merged(Some(inline)).is_err());
        // An older aea's entry (bare `aea mcp`) is brought up to date.
        let older = "[mcp_servers.aea]\ncommand = \"aea\"\nargs = [\"mcp\"]\n";
        let merged = toml_merged(Some(older)).unwrap().unwrap();
        assert_eq!(merged, toml_block());
    }
}
