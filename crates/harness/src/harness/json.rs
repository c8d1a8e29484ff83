//! aea's entries in a harness's JSON settings: hooks (and, for Claude Code,
//! pre-allowed read-only commands) and its MCP server (see [`super::mcp`]),
//! added next to the user's own entries and taken out again without
//! touching them. The user's keys and their order are kept.

use serde_json::{Map, Value};

use super::mcp::{self, Style};

/// How a harness lays out its hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `hooks.<Event>: [{ "hooks": [{ "type": "command", "command": … }] }]`:
    /// Claude Code (`.claude/settings.json`), Codex (`.codex/hooks.json`),
    /// Gemini CLI (`.gemini/settings.json`).
    Grouped,
    /// `{"version": 1, "hooks": {"<event>": [{ "command": … }]}}`: Cursor
    /// (`.cursor/hooks.json`).
    Cursor,
    /// `{"version": 1, "hooks": {"<event>": [{ "type": "command", "bash":
    /// …, "timeoutSec": … }]}}`: Copilot CLI (`.github/hooks/*.json`).
    Copilot,
}

/// What aea puts into one JSON file.
#[derive(Debug, Clone)]
pub(crate) struct Edit {
    pub shape: Shape,
    /// (event, command) pairs.
    pub hooks: Vec<(String, String)>,
    /// `permissions.allow` entries (Claude Code).
    pub allow: Vec<String>,
    /// aea's MCP server, in the harness's style, when this file holds it.
    pub mcp: Option<Style>,
}

pub(crate) use super::guard::HOOK_GUARD;

/// Whether `command` is one aea wrote: the guarded form (see
/// [`HOOK_GUARD`]), or what an older aea wrote, an `aea`
/// binary (bare or by any path, quoted or not) run with `check --hook`.
pub(crate) fn is_ours(command: &str) -> bool {
    let command = command.trim_start();
    if let Some(rest) = command.strip_prefix(HOOK_GUARD) {
        return rest.starts_with("check --hook ");
    }
    let (program, rest) = if let Some(quoted) = command.strip_prefix('\'') {
        match quoted.find('\'') {
            Some(end) => (&quoted[..end], &quoted[end + 1..]),
            None => return false,
        }
    } else {
        match command.split_once(' ') {
            Some((program, rest)) => (program, rest),
            None => return false,
        }
    };
    let name = program.rsplit('/').next().unwrap_or(program);
    name == "aea" && rest.trim_start().starts_with("check --hook ")
}

/// The command of a hook entry, whichever key the shape uses.
fn command_of(entry: &Value) -> Option<&str> {
    entry
        .get("command")
        .or_else(|| entry.get("bash"))
        .and_then(Value::as_str)
}

fn entry_is_ours(entry: &Value) -> bool {
    command_of(entry).is_some_and(is_ours)
}

fn parse(existing: Option<&str>) -> Result<Value, String> {
    match existing {
        None => Ok(Value::Object(Map::new())),
        Some(text) if text.trim().is_empty() => Ok(Value::Object(Map::new())),
        Some(text) => serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}")),
    }
}

fn render(root: &Value) -> String {
    let mut text = serde_json::to_string_pretty(root).expect("JSON always serialises");
    text.push('\n');
    text
}

/// The new entry for `command` in `shape`.
fn entry(shape: Shape, command: &str) -> Value {
    match shape {
        // No timeout: each harness has its own default and unit (seconds
        // in Claude Code and Codex, milliseconds in Gemini CLI), and aea's
        // hook answers in milliseconds.
        Shape::Grouped => serde_json::json!({
            "hooks": [{ "type": "command", "command": command }]
        }),
        Shape::Cursor => serde_json::json!({ "command": command }),
        Shape::Copilot => {
            serde_json::json!({ "type": "command", "bash": command, "timeoutSec": 10 })
        }
    }
}

/// aea's commands under one event's list, whatever the shape.
fn ours_in(shape: Shape, list: &[Value]) -> Vec<String> {
    let commands = |e: &Value| -> Vec<String> {
        match shape {
            Shape::Grouped => e
                .get("hooks")
                .and_then(Value::as_array)
                .map(|hs| {
                    hs.iter()
                        .filter(|h| entry_is_ours(h))
                        .filter_map(command_of)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            Shape::Cursor | Shape::Copilot => command_of(e)
                .filter(|c| is_ours(c))
                .map(str::to_string)
                .into_iter()
                .collect(),
        }
    };
    list.iter().flat_map(commands).collect()
}

/// Takes aea's entries out of one event's list; whether any went.
fn remove_from(shape: Shape, list: &mut Vec<Value>) -> bool {
    let before = list.clone();
    match shape {
        Shape::Grouped => {
            for group in list.iter_mut() {
                if let Some(hooks) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                    hooks.retain(|h| !entry_is_ours(h));
                }
            }
            list.retain(|g| {
                g.get("hooks")
                    .and_then(Value::as_array)
                    .is_none_or(|l| !l.is_empty())
            });
        }
        Shape::Cursor | Shape::Copilot => list.retain(|e| !entry_is_ours(e)),
    }
    *list != before
}

/// The entries of `hooks.<event>` written as one object `{"command",
/// "description", "enabled"}`, the form the bash AEA's `install-aea.sh`
/// (openSVM/aea) writes and no harness reads. Its own entries (a command
/// under `.aea/scripts/`) go: aea's hook does their job, and the shims
/// `init` puts there call aea. Any other command keeps its place in the
/// list form; a disabled one cannot be carried (the list form has no
/// switch) and is said rather than silently dropped or turned on.
fn from_object_form(shape: Shape, event: &str, object: &Value) -> Result<Vec<Value>, String> {
    let Some(command) = object.get("command").and_then(Value::as_str) else {
        return Err(format!("`hooks.{event}` is not a list"));
    };
    if command.contains(".aea/scripts/") {
        return Ok(Vec::new());
    }
    if object.get("enabled") == Some(&Value::Bool(false)) {
        return Err(format!(
            "`hooks.{event}` is a disabled single entry; remove it or make it a list"
        ));
    }
    Ok(vec![entry(shape, command)])
}

/// aea's hooks merged into `top`; whether anything changed.
fn merge_hooks(top: &mut Map<String, Value>, edit: &Edit) -> Result<bool, String> {
    let mut changed = false;
    if matches!(edit.shape, Shape::Cursor | Shape::Copilot) && !top.contains_key("version") {
        top.insert("version".into(), Value::from(1));
        changed = true;
    }
    let hooks = top
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        return Err("`hooks` is not an object".into());
    };
    for (event, command) in &edit.hooks {
        let list = hooks
            .entry(event.as_str())
            .or_insert_with(|| Value::Array(Vec::new()));
        if list.is_object() {
            *list = Value::Array(from_object_form(edit.shape, event, list)?);
            changed = true;
        }
        let Value::Array(list) = list else {
            return Err(format!("`hooks.{event}` is not a list"));
        };
        if ours_in(edit.shape, list) == [command.clone()] {
            continue;
        }
        remove_from(edit.shape, list);
        list.push(entry(edit.shape, command));
        changed = true;
    }
    // An entry that looks like aea's under an event aea does not hook is
    // no hook of aea's (an older aea's, or one a commit added): it goes.
    let others: Vec<String> = hooks
        .keys()
        .filter(|event| !edit.hooks.iter().any(|(e, _)| e == *event))
        .cloned()
        .collect();
    for event in others {
        if let Some(Value::Array(list)) = hooks.get_mut(&event)
            && remove_from(edit.shape, list)
        {
            changed = true;
            if list.is_empty() {
                hooks.remove(&event);
            }
        }
    }
    Ok(changed)
}

/// aea's MCP server put into `top` (or an older one of aea's brought up
/// to date); whether anything changed. A server named `aea` that aea did
/// not write is the person's: left as it is (see [`foreign_server`]).
fn merge_server(top: &mut Map<String, Value>, style: Style) -> Result<bool, String> {
    let key = style.key();
    let servers = top.entry(key).or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        return Err(format!("`{key}` is not an object"));
    };
    let new = match servers.get(mcp::NAME) {
        Some(now) if mcp::current(now, style) || !mcp::is_ours(now) => return Ok(false),
        Some(now) => mcp::updated(now, style),
        None => style.entry(),
    };
    servers.insert(mcp::NAME.to_string(), new);
    Ok(true)
}

/// What to say of a server named `aea` in `text` that aea did not write
/// (install leaves it, doctor names it), `None` when there is none.
pub(crate) fn foreign_server(text: &str, style: Style) -> Option<String> {
    let entry = server(text, style)?;
    (!mcp::is_ours(&entry)).then(|| {
        format!(
            "`{}.aea` is a server aea did not write (it runs `{}`)",
            style.key(),
            crate::printer::untrusted_short(&mcp::shown(&entry), 80)
        )
    })
}

/// The server named `aea` in `text`, whoever wrote it.
pub(crate) fn server(text: &str, style: Style) -> Option<Value> {
    let root: Value = serde_json::from_str(text).ok()?;
    root.get(style.key())?.get(mcp::NAME).cloned()
}

/// The settings text with aea's entries added or brought up to date (an
/// older command, another path to aea), `None` when already current.
pub(crate) fn merge(existing: Option<&str>, edit: &Edit) -> Result<Option<String>, String> {
    let mut root = parse(existing)?;
    let Value::Object(top) = &mut root else {
        return Err("not a JSON object".into());
    };
    let mut changed = false;
    if !edit.hooks.is_empty() {
        changed |= merge_hooks(top, edit)?;
    }
    if let Some(style) = edit.mcp {
        changed |= merge_server(top, style)?;
    }
    if !edit.allow.is_empty() {
        let permissions = top
            .entry("permissions")
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(permissions) = permissions else {
            return Err("`permissions` is not an object".into());
        };
        let allow = permissions
            .entry("allow")
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(allow) = allow else {
            return Err("`permissions.allow` is not a list".into());
        };
        for rule in &edit.allow {
            if !allow.iter().any(|v| v.as_str() == Some(rule)) {
                allow.push(Value::from(rule.as_str()));
                changed = true;
            }
        }
    }
    Ok(changed.then(|| render(&root)))
}

/// The settings text without aea's entries (and without containers left
/// empty by their removal), `None` when there were none. `allow` are the
/// `permissions.allow` rules aea adds.
pub(crate) fn remove(text: &str, edit: &Edit) -> Result<Option<String>, String> {
    let (shape, allow) = (edit.shape, &edit.allow);
    let mut root: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Some(top) = root.as_object_mut() else {
        return Ok(None);
    };
    let mut changed = false;
    if let Some(hooks) = top.get_mut("hooks").and_then(Value::as_object_mut) {
        let events: Vec<String> = hooks.keys().cloned().collect();
        for event in events {
            let Some(list) = hooks.get_mut(&event).and_then(Value::as_array_mut) else {
                continue;
            };
            if remove_from(shape, list) {
                changed = true;
                if list.is_empty() {
                    hooks.remove(&event);
                }
            }
        }
        if changed && hooks.is_empty() {
            top.remove("hooks");
        }
    }
    if let Some(permissions) = top.get_mut("permissions").and_then(Value::as_object_mut) {
        if let Some(list) = permissions.get_mut("allow").and_then(Value::as_array_mut) {
            let before = list.len();
            list.retain(|v| v.as_str().is_none_or(|r| !allow.iter().any(|a| a == r)));
            if list.len() != before {
                changed = true;
                if list.is_empty() {
                    permissions.remove("allow");
                }
            }
        }
        if changed && permissions.is_empty() {
            top.remove("permissions");
        }
    }
    if let Some(style) = edit.mcp
        && let Some(servers) = top.get_mut(style.key()).and_then(Value::as_object_mut)
        && servers.get(mcp::NAME).is_some_and(mcp::is_ours)
    {
        servers.remove(mcp::NAME);
        changed = true;
        if servers.is_empty() {
            top.remove(style.key());
        }
    }
    if !changed {
        return Ok(None);
    }
    // A file aea created holds nothing of the user's once only `version`
    // (which aea added) is left.
    if top.len() == 1 && top.contains_key("version") && shape != Shape::Grouped {
        top.clear();
    }
    if top.is_empty() {
        return Ok(Some(String::new()));
    }
    Ok(Some(render(&root)))
}

/// aea's hook commands in `text`, by event.
pub(crate) fn commands(text: &str, shape: Shape) -> Vec<(String, String)> {
    let Ok(root) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let Some(hooks) = root.get("hooks").and_then(Value::as_object) else {
        return Vec::new();
    };
    hooks
        .iter()
        .filter_map(|(event, list)| Some((event, list.as_array()?)))
        .flat_map(|(event, list)| {
            ours_in(shape, list)
                .into_iter()
                .map(move |c| (event.clone(), c))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude(command: &str) -> Edit {
        Edit {
            shape: Shape::Grouped,
            hooks: vec![
                (
                    "SessionStart".into(),
                    format!("{command} --event SessionStart"),
                ),
                (
                    "UserPromptSubmit".into(),
                    format!("{command} --event UserPromptSubmit"),
                ),
            ],
            allow: vec!["Bash(aea check:*)".into()],
            mcp: None,
        }
    }

    #[test]
    fn merges_next_to_user_hooks_and_removes_only_ours() {
        let user = r#"{
  "model": "opus",
  "hooks": {
    "UserPromptSubmit": [
      { "hooks": [ { "type": "command", "command": "./lint.sh" } ] }
    ],
    "PreToolUse": [ { "matcher": "Bash", "hooks": [ { "type": "command", "command": "guard" } ] } ]
  },
  "permissions": { "allow": ["Bash(npm test:*)"] }
}"#;
        let edit = claude("'/opt/bin/aea' check --hook claude");
        let merged = merge(Some(user), &edit).unwrap().unwrap();
        let v: Value = serde_json::from_str(&merged).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["model", "hooks", "permissions"], "user order kept");
        let submit = v["hooks"]["UserPromptSubmit"].as_array().unwrap();
        assert_eq!(submit.len(), 2);
        assert_eq!(submit[0]["hooks"][0]["command"], "./lint.sh");
        assert_eq!(
            submit[1]["hooks"][0]["command"],
            "'/opt/bin/aea' check --hook claude --event UserPromptSubmit"
        );
        assert_eq!(v["permissions"]["allow"][1], "Bash(aea check:*)");
        assert_eq!(merge(Some(&merged), &edit).unwrap(), None, "idempotent");
        // aea moved: the commands are rewritten, not added twice.
        let moved = merge(Some(&merged), &claude("'/new/aea' check --hook claude"))
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&moved).unwrap();
        assert_eq!(v["hooks"]["UserPromptSubmit"].as_array().unwrap().len(), 2);
        assert!(moved.contains("/new/aea") && !moved.contains("/opt/bin/aea"));

        let removed = remove(&merged, &edit).unwrap().unwrap();
        let back: Value = serde_json::from_str(&removed).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(user).unwrap());
        assert!(merge(Some("[1]"), &edit).is_err());
        assert!(merge(Some("{not json"), &edit).is_err());
    }

    /// install-aea.sh writes `hooks.SessionStart` as one object: its own
    /// entry makes room for aea's, anyone else's moves into the list form.
    #[test]
    fn the_bash_object_form_is_converted() {
        let bash = r#"{"model": "x", "hooks": {
            "SessionStart": {"command": "bash .aea/scripts/aea-auto-processor.sh", "description": "d", "enabled": true},
            "Stop": {"command": "make lint", "enabled": true}}}"#;
        let edit = Edit {
            shape: Shape::Grouped,
            hooks: vec![
                ("SessionStart".into(), "aea check --hook claude".into()),
                ("Stop".into(), "aea check --hook claude".into()),
            ],
            allow: Vec::new(),
            mcp: None,
        };
        let merged: Value =
            serde_json::from_str(&merge(Some(bash), &edit).unwrap().unwrap()).unwrap();
        assert_eq!(merged["model"], "x");
        let start = merged["hooks"]["SessionStart"].as_array().unwrap();
        assert_eq!(start.len(), 1);
        assert_eq!(start[0]["hooks"][0]["command"], "aea check --hook claude");
        let stop = merged["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop[0]["hooks"][0]["command"], "make lint");
        assert_eq!(stop[1]["hooks"][0]["command"], "aea check --hook claude");
        let disabled = r#"{"hooks": {"Stop": {"command": "make lint", "enabled": false}}}"#;
        assert!(
            merge(Some(disabled), &edit)
                .unwrap_err()
                .contains("disabled")
        );
    }

    #[test]
    fn recognises_aea_by_its_name_whatever_the_path() {
        assert!(is_ours("aea check --hook claude --event Stop"));
        assert!(is_ours("'/home/u/.cargo/bin/aea' check --hook codex"));
        assert!(is_ours("/usr/local/bin/aea check --hook gemini"));
        assert!(!is_ours("./lint.sh"));
        assert!(!is_ours("notaea check --hook claude"));
        assert!(!is_ours("aea process x"));
        assert!(!is_ours("'unterminated"));
    }

    #[test]
    fn a_file_aea_created_is_empty_again_after_removal() {
        let edit = Edit {
            shape: Shape::Cursor,
            hooks: vec![("stop".into(), "aea check --hook cursor --event stop".into())],
            allow: Vec::new(),
            mcp: None,
        };
        let created = merge(None, &edit).unwrap().unwrap();
        assert!(created.contains("\"version\": 1"));
        assert_eq!(remove(&created, &edit).unwrap(), Some(String::new()));
        assert_eq!(
            commands(&created, Shape::Cursor),
            [(
                "stop".to_string(),
                "aea check --hook cursor --event stop".to_string()
            )]
        );
    }

    fn servers(style: Style) -> Edit {
        Edit {
            shape: Shape::Grouped,
            hooks: Vec::new(),
            allow: Vec::new(),
            mcp: Some(style),
        }
    }

    /// What the person may set on aea's server (OpenCode's `enabled`, a
    /// timeout) stays when aea brings the command up to date; an
    /// environment, which could put another `aea` first on PATH, goes; a
    /// file of servers gets no `hooks`.
    #[test]
    fn aeas_server_keeps_what_the_person_set_on_it() {
        let edit = servers(Style::Opencode);
        let created = merge(None, &edit).unwrap().unwrap();
        let v: Value = serde_json::from_str(&created).unwrap();
        assert_eq!(v.as_object().unwrap().keys().collect::<Vec<_>>(), ["mcp"]);
        let older = r#"{"mcp": {"aea": {"type": "local", "command": ["aea", "mcp"], "enabled": false, "environment": {"X": "1"}}}}"#;
        let merged: Value =
            serde_json::from_str(&merge(Some(older), &edit).unwrap().unwrap()).unwrap();
        let aea = &merged["mcp"]["aea"];
        assert!(mcp::current(aea, Style::Opencode), "{aea}");
        assert_eq!(aea["enabled"], false, "the person turned it off");
        assert!(aea.get("environment").is_none(), "{aea}");
        let text = serde_json::to_string(&merged).unwrap();
        assert_eq!(merge(Some(&text), &edit).unwrap(), None, "current");
        assert_eq!(remove(&text, &edit).unwrap(), Some(String::new()));
        // Someone else's `aea` is neither replaced nor removed.
        let theirs = r#"{"mcpServers": {"aea": {"command": "node", "args": ["x.js"]}}}"#;
        let edit = servers(Style::Stdio);
        assert_eq!(merge(Some(theirs), &edit).unwrap(), None);
        assert_eq!(remove(theirs, &edit).unwrap(), None);
        assert!(
            foreign_server(theirs, Style::Stdio)
                .unwrap()
                .contains("node x.js")
        );
        assert!(merge(Some(r#"{"mcpServers": []}"#), &edit).is_err());
    }
}
