//! Agent-harness integration files (SPEC §9): the AEA section of `CLAUDE.md`
//! and `AGENTS.md`, Claude Code's `SessionStart` / `UserPromptSubmit` hooks
//! in `.claude/settings.json`, and the `/aea` command. Every file written is
//! recorded in `.aea/.installed.json` with what it held before, so that
//! `aea uninstall` restores it exactly when nobody edited it since, and
//! removes only aea's parts when somebody did.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::fsutil;
use crate::templates;
use crate::words::word_enum;

pub const AGENT_FILES: [&str; 2] = ["CLAUDE.md", "AGENTS.md"];
pub const CLAUDE_SETTINGS: &str = ".claude/settings.json";
pub const CLAUDE_COMMAND: &str = ".claude/commands/aea.md";
const COMMAND_TEXT: &str = include_str!("../templates/claude/aea-command.md");
const COMMAND_MARKER: &str = "<!-- aea:command";
pub const CLAUDE_EVENTS: [&str; 2] = ["SessionStart", "UserPromptSubmit"];
const STATE_FILE: &str = ".installed.json";

word_enum! {
    /// The agent harnesses `aea check --hook` writes for, each in the
    /// output shape it documents (see [`crate::reminder`]); `plain` is text
    /// for anything else.
    pub enum Harness {
        Claude = "claude",
        Codex = "codex",
        Gemini = "gemini",
        Copilot = "copilot",
        Cursor = "cursor",
        Plain = "plain",
    }
}

/// Commands aea puts into Claude Code's settings start with this.
const HOOK_COMMAND_PREFIX: &str = "aea check --hook claude";

fn hook_command(event: &str) -> String {
    format!("{HOOK_COMMAND_PREFIX} --event {event}")
}

/// What `init` wrote, so `uninstall` can take exactly that back.
#[derive(Debug, Default, Serialize, Deserialize)]
struct InstallState {
    #[serde(default)]
    files: BTreeMap<String, FileRecord>,
    #[serde(default)]
    dirs_created: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct FileRecord {
    /// The text before aea first touched the file; `None` if aea created it.
    original: Option<String>,
    /// The text aea last wrote.
    written: String,
}

impl InstallState {
    fn load(aea_dir: &Path) -> InstallState {
        fsutil::read_state(&aea_dir.join(STATE_FILE), fsutil::STATE_LIMIT)
            .ok()
            .flatten()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    fn save(&self, aea_dir: &Path) -> Result<()> {
        let text = serde_json::to_vec_pretty(self).expect("the state always serialises");
        fsutil::replace_atomic(&aea_dir.join(STATE_FILE), &text)
    }

    /// Writes `text` to `repo/rel`, remembering what was there first.
    fn write(&mut self, repo: &Path, rel: &str, before: Option<&str>, text: &str) -> Result<()> {
        let path = repo.join(rel);
        if let Some(parent) = path.parent() {
            self.create_dirs(repo, parent)?;
        }
        fsutil::replace_atomic(&path, text.as_bytes())?;
        let original = match self.files.get(rel) {
            Some(record) => record.original.clone(),
            None => before.map(str::to_string),
        };
        self.files.insert(
            rel.to_string(),
            FileRecord {
                original,
                written: text.to_string(),
            },
        );
        Ok(())
    }

    fn create_dirs(&mut self, repo: &Path, dir: &Path) -> Result<()> {
        if dir.is_dir() {
            return Ok(());
        }
        if let Some(parent) = dir.parent() {
            self.create_dirs(repo, parent)?;
        }
        fsutil::ensure_dir(dir)?;
        if let Ok(rel) = dir.strip_prefix(repo) {
            self.dirs_created.push(rel.to_string_lossy().into_owned());
        }
        Ok(())
    }
}

/// Reads a text file inside the repository, `None` when missing. Symlinks
/// are followed only when they stay inside the repository.
fn read_inside(repo: &Path, rel: &str) -> Result<(PathBuf, Option<String>)> {
    let path = repo.join(rel);
    let real = match fs::canonicalize(&path) {
        Ok(real) if !real.starts_with(repo) => {
            return Err(Error::LinkLeavesRepository { path });
        }
        Ok(real) => real,
        Err(_) if fs::symlink_metadata(&path).is_ok() => {
            return Err(Error::DanglingLink { path });
        }
        Err(_) => return Ok((path, None)),
    };
    // A regular file only, capped: a FIFO committed as CLAUDE.md must not hang init.
    let text = fsutil::read_optional(&real)?;
    Ok((real, text))
}

/// Adds aea's agent files; returns what changed and warnings.
pub fn install(repo: &Path, aea_dir: &Path) -> Result<(Vec<String>, Vec<String>)> {
    let mut state = InstallState::load(aea_dir);
    let mut changed = Vec::new();
    let mut warnings = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    for name in AGENT_FILES {
        let (real, text) = match read_inside(repo, name) {
            Ok(found) => found,
            Err(e) => {
                warnings.push(format!("{}; left alone", crate::error::one_line(&e)));
                continue;
            }
        };
        if seen.contains(&real) {
            continue;
        }
        seen.push(real.clone());
        let current = text.clone().unwrap_or_default();
        if let Some(updated) = templates::with_agent_section(&current) {
            let rel = real
                .strip_prefix(repo)
                .map_or_else(|_| name.to_string(), |r| r.to_string_lossy().into_owned());
            state.write(repo, &rel, text.as_deref(), &updated)?;
            changed.push(rel);
        }
    }

    let (_, settings) = read_inside(repo, CLAUDE_SETTINGS)?;
    if let Some(updated) =
        merge_claude_hooks(settings.as_deref()).map_err(|detail| Error::SettingsInvalid {
            path: repo.join(CLAUDE_SETTINGS),
            detail,
        })?
    {
        state.write(repo, CLAUDE_SETTINGS, settings.as_deref(), &updated)?;
        changed.push(CLAUDE_SETTINGS.into());
    }

    let (_, command) = read_inside(repo, CLAUDE_COMMAND)?;
    match command {
        None => {
            state.write(repo, CLAUDE_COMMAND, None, COMMAND_TEXT)?;
            changed.push(CLAUDE_COMMAND.into());
        }
        Some(text) if text.contains(COMMAND_MARKER) && text != COMMAND_TEXT => {
            state.write(repo, CLAUDE_COMMAND, Some(&text), COMMAND_TEXT)?;
            changed.push(CLAUDE_COMMAND.into());
        }
        Some(text) if !text.contains(COMMAND_MARKER) => {
            warnings.push(format!(
                "{CLAUDE_COMMAND} exists and is not aea's; left alone"
            ));
        }
        Some(_) => {}
    }
    if !changed.is_empty() {
        state.save(aea_dir)?;
    }
    Ok((changed, warnings))
}

/// Takes back what `install` did; returns what changed.
pub fn uninstall(repo: &Path, aea_dir: &Path) -> Result<Vec<String>> {
    let mut state = InstallState::load(aea_dir);
    let mut changed = Vec::new();
    let mut names: Vec<String> = AGENT_FILES.iter().map(|s| (*s).to_string()).collect();
    names.extend([CLAUDE_SETTINGS.to_string(), CLAUDE_COMMAND.to_string()]);
    for rel in state.files.keys() {
        if !names.contains(rel) {
            names.push(rel.clone());
        }
    }
    for rel in names {
        let path = repo.join(&rel);
        let Some(current) = read_regular(&path) else {
            continue;
        };
        let record = state.files.remove(&rel);
        let untouched = record.as_ref().filter(|r| r.written == current);
        // `Some(None)`: the file goes; `Some(Some(text))`: it becomes `text`.
        let restored: Option<Option<String>> = match untouched {
            // Nobody edited it since: put back exactly what was there.
            Some(r) => Some(r.original.clone()),
            // Edited, or never recorded: take out only aea's part, and the
            // file too when nothing else is left in one aea created.
            None => remove_ours(&rel, &current).map(|text| {
                let created = record.as_ref().is_none_or(|r| r.original.is_none());
                (!(created && text.trim().is_empty())).then_some(text)
            }),
        };
        match restored {
            None => {}
            Some(Some(text)) if text == current => {}
            Some(Some(text)) => {
                fsutil::replace_atomic(&path, text.as_bytes())?;
                changed.push(rel);
            }
            Some(None) => {
                fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
                changed.push(rel);
            }
        }
    }
    for dir in state.dirs_created.iter().rev() {
        let path = repo.join(dir);
        if fs::read_dir(&path).is_ok_and(|mut d| d.next().is_none()) {
            let _ = fs::remove_dir(&path);
        }
    }
    let _ = fs::remove_file(aea_dir.join(STATE_FILE));
    Ok(changed)
}

/// The text of the regular file `path` resolves to (capped, never a FIFO
/// or device), `None` when there is none.
fn read_regular(path: &Path) -> Option<String> {
    let real = fs::canonicalize(path).ok()?;
    fsutil::read_optional(&real).ok()?
}

/// `current` without aea's part, `None` when there is none.
fn remove_ours(rel: &str, current: &str) -> Option<String> {
    if rel == CLAUDE_SETTINGS {
        return remove_claude_hooks(current).ok().flatten();
    }
    if rel == CLAUDE_COMMAND {
        return None;
    }
    templates::without_agent_section(current)
}

/// Whether `.claude/settings.json` holds aea's hooks for both events.
pub fn claude_hooks_present(repo: &Path) -> bool {
    let Some(text) = read_regular(&repo.join(CLAUDE_SETTINGS)) else {
        return false;
    };
    matches!(merge_claude_hooks(Some(&text)), Ok(None))
}

fn our_hook(hook: &Value) -> bool {
    hook.get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| c.starts_with(HOOK_COMMAND_PREFIX))
}

/// Settings text with aea's hooks added, `None` when already there. The
/// user's keys, order and hooks are kept.
pub fn merge_claude_hooks(existing: Option<&str>) -> std::result::Result<Option<String>, String> {
    let mut root: Value = match existing {
        None => Value::Object(Map::new()),
        Some(text) if text.trim().is_empty() => Value::Object(Map::new()),
        Some(text) => serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?,
    };
    let Value::Object(top) = &mut root else {
        return Err("not a JSON object".into());
    };
    let hooks = top
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        return Err("`hooks` is not an object".into());
    };
    let mut changed = false;
    for event in CLAUDE_EVENTS {
        let groups = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(groups) = groups else {
            return Err(format!("`hooks.{event}` is not a list"));
        };
        let present = groups.iter().any(|g| {
            g.get("hooks")
                .and_then(Value::as_array)
                .is_some_and(|hs| hs.iter().any(our_hook))
        });
        if !present {
            groups.push(serde_json::json!({
                "hooks": [{ "type": "command", "command": hook_command(event) }]
            }));
            changed = true;
        }
    }
    if !changed {
        return Ok(None);
    }
    let mut text = serde_json::to_string_pretty(&root).expect("JSON always serialises");
    text.push('\n');
    Ok(Some(text))
}

/// Settings text without aea's hooks (and without containers left empty by
/// their removal), `None` when there were none.
pub fn remove_claude_hooks(text: &str) -> std::result::Result<Option<String>, String> {
    let mut root: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut) else {
        return Ok(None);
    };
    let mut changed = false;
    for event in CLAUDE_EVENTS {
        let Some(groups) = hooks.get_mut(event).and_then(Value::as_array_mut) else {
            continue;
        };
        for group in groups.iter_mut() {
            if let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                let before = list.len();
                list.retain(|h| !our_hook(h));
                changed |= list.len() != before;
            }
        }
        groups.retain(|g| {
            g.get("hooks")
                .and_then(Value::as_array)
                .is_none_or(|l| !l.is_empty())
        });
        if groups.is_empty() {
            hooks.remove(event);
        }
    }
    if !changed {
        return Ok(None);
    }
    if hooks.is_empty()
        && let Some(top) = root.as_object_mut()
    {
        top.remove("hooks");
    }
    let mut out = serde_json::to_string_pretty(&root).expect("JSON always serialises");
    out.push('\n');
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_next_to_user_hooks_and_removes_only_ours() {
        let user = r#"{
  "model": "opus",
  "hooks": {
    "UserPromptSubmit": [
      { "hooks": [ { "type": "command", "command": "./lint.sh" } ] }
    ],
    "PreToolUse": [ { "matcher": "Bash", "hooks": [ { "type": "command", "command": "guard" } ] } ]
  }
}"#;
        let merged = merge_claude_hooks(Some(user)).unwrap().unwrap();
        let v: Value = serde_json::from_str(&merged).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["model", "hooks"], "user order kept");
        let submit = v["hooks"]["UserPromptSubmit"].as_array().unwrap();
        assert_eq!(submit.len(), 2);
        assert_eq!(submit[0]["hooks"][0]["command"], "./lint.sh");
        assert_eq!(
            submit[1]["hooks"][0]["command"],
            "aea check --hook claude --event UserPromptSubmit"
        );
        assert_eq!(v["hooks"]["SessionStart"][0]["hooks"][0]["type"], "command");
        assert_eq!(
            merge_claude_hooks(Some(&merged)).unwrap(),
            None,
            "idempotent"
        );

        let removed = remove_claude_hooks(&merged).unwrap().unwrap();
        let back: Value = serde_json::from_str(&removed).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(user).unwrap());
        assert!(merge_claude_hooks(Some("[1]")).is_err());
        assert!(merge_claude_hooks(Some("{not json")).is_err());
    }
}
