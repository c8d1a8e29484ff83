//! Each harness's own trust gate (SPEC §16), read from where the harness
//! records it: whether a person already opened it for this repository, and
//! the step that opens it when not. aea only reads these files, never
//! writes them: opening a gate is a person's decision.
//!
//! What each harness reads, from its own code (the versions pinned in
//! `scripts/harness-e2e`):
//!
//! - Codex CLI (0.169.0, `codex-rs/config/src/loader`, `codex-rs/hooks/src/
//!   engine/discovery.rs`): `$CODEX_HOME/config.toml` (`~/.codex/`) holds
//!   `[projects."PATH"] trust_level = "trusted"`; without it no project hook
//!   runs. Each project hook runs only once trusted in `/hooks`, recorded as
//!   `[hooks.state."PATH/.codex/hooks.json:EVENT:GROUP:HANDLER"]
//!   trusted_hash = "sha256:…"`: the SHA-256 of the hook's normalised
//!   definition, so a hook changed since is "modified" and off again.
//! - Gemini CLI (0.61.0, `packages/cli/src/config/trustedFolders.ts`):
//!   `security.folderTrust.enabled` (default on) in the user's or the
//!   system's settings; `~/.gemini/trustedFolders.json` maps folders to
//!   `TRUST_FOLDER`, `TRUST_PARENT` or `DO_NOT_TRUST`, the longest matching
//!   rule winning. In an untrusted folder it loads no project settings, so
//!   no hooks, and a headless run refuses to start.
//! - Claude Code (2.1.330): `~/.claude.json` (`$CLAUDE_CONFIG_DIR/`)
//!   `projects["PATH"].hasTrustDialogAccepted`, for the folder or one
//!   above it inside its git checkout; until then it ignores the
//!   repository's `permissions.allow`.
//! - Copilot CLI (1.0.102): `$COPILOT_HOME/config.json` (`~/.copilot/`,
//!   JSON after `//` comment lines) lists `trustedFolders`, absolute
//!   paths, each covering the folders below it; in any other folder a
//!   session loads no repository hooks.
//!
//! A file that is missing means nothing was trusted there, as the harness
//! reads it. One that cannot be read, is too large, or does not parse
//! makes the gate unknown: the harness may read it differently.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Agent;
use crate::env::HarnessHomes;
use crate::fsutil;

/// The most aea reads of one harness file (`~/.claude.json` grows with
/// every project Claude Code was started in).
const LIMIT: u64 = 16 * 1024 * 1024;

/// Whether a harness's trust gate is open for a repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Gate {
    Open,
    Closed,
    /// Its file could not be read, or says something aea does not know.
    Unknown,
}

/// One harness's trust gate in one repository.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TrustGate {
    pub harness: Agent,
    pub gate: Gate,
    /// What the harness's own file says, and which file.
    pub reason: String,
    /// What a person does to open it; absent when it is open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
}

impl TrustGate {
    fn new(harness: Agent, gate: Gate, reason: impl Into<String>, step: Option<String>) -> Self {
        TrustGate {
            harness,
            gate,
            reason: reason.into(),
            step: if gate == Gate::Open { None } else { step },
        }
    }

    /// One line for a person: "open", "trust gate closed (…): STEP", or
    /// the step with why aea cannot tell.
    pub fn line(&self) -> String {
        let step = self.step.as_deref().unwrap_or("");
        match self.gate {
            Gate::Open => format!("{}: open ({})", self.harness, self.reason),
            Gate::Closed => format!(
                "{}: trust gate closed ({}): {step}",
                self.harness, self.reason
            ),
            Gate::Unknown => format!(
                "{}: {step} (aea cannot tell: {})",
                self.harness, self.reason
            ),
        }
    }
}

/// The trust gate of each of `agents` that has one, in the repository at
/// `repo`.
pub fn gates(repo: &Path, agents: &[Agent], homes: &HarnessHomes) -> Vec<TrustGate> {
    let real = std::fs::canonicalize(repo).unwrap_or_else(|_| repo.to_path_buf());
    agents
        .iter()
        .filter_map(|agent| gate(*agent, &real, homes))
        .collect()
}

/// `agent`'s trust gate in `repo` (a canonical path), `None` when it has
/// none.
pub fn gate(agent: Agent, repo: &Path, homes: &HarnessHomes) -> Option<TrustGate> {
    match agent {
        Agent::Claude => Some(claude(repo, homes)),
        Agent::Codex => Some(codex(repo, homes)),
        Agent::Gemini => Some(gemini(repo, homes)),
        Agent::Copilot => Some(copilot(repo, homes)),
        Agent::Opencode | Agent::Cursor | Agent::Cline | Agent::Aider => None,
    }
}

/// What reading one harness file gave.
enum Read {
    Missing,
    Text(String),
    /// Why it could not be read.
    Unreadable(String),
}

/// Reads a harness's file: a symlink is followed (people keep these files
/// in a dotfiles repository), but only a regular file of at most
/// [`LIMIT`] bytes is read, and opening never blocks on a FIFO.
fn read(path: &Path) -> Read {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC);
    }
    let file: File = match options.open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Read::Missing,
        Err(e) => return Read::Unreadable(format!("{} cannot be read: {e}", path.display())),
    };
    match file.metadata() {
        Ok(meta) if meta.is_file() => {}
        _ => return Read::Unreadable(format!("{} is not a regular file", path.display())),
    }
    match fsutil::read_opened(file, LIMIT) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => Read::Text(text),
            Err(_) => Read::Unreadable(format!("{} is not UTF-8 text", path.display())),
        },
        Err(fsutil::ReadLimited::TooLarge(n)) => Read::Unreadable(format!(
            "{} is {n} bytes, more than aea reads ({LIMIT})",
            path.display()
        )),
        Err(_) => Read::Unreadable(format!("{} cannot be read", path.display())),
    }
}

/// `path` and its canonical form, each once: the keys a harness may have
/// recorded a folder under.
fn keys(repo: &Path) -> Vec<String> {
    let mut keys = vec![repo.to_string_lossy().into_owned()];
    if let Ok(real) = std::fs::canonicalize(repo) {
        let real = real.to_string_lossy().into_owned();
        if !keys.contains(&real) {
            keys.insert(0, real);
        }
    }
    keys
}

// ------------------------------------------------------------------ Claude Code

const CLAUDE_STEP: &str = "start `claude` in this folder once and accept its trust dialog; until then it ignores the allowed `aea` commands";

/// What aea reads of `~/.claude.json`.
#[derive(Deserialize)]
struct ClaudeConfig {
    #[serde(default)]
    projects: BTreeMap<String, ClaudeProject>,
}

#[derive(Deserialize)]
struct ClaudeProject {
    #[serde(default, rename = "hasTrustDialogAccepted")]
    accepted: Option<serde_json::Value>,
}

fn claude(repo: &Path, homes: &HarnessHomes) -> TrustGate {
    let step = Some(CLAUDE_STEP.to_string());
    let Some(dir) = homes.claude_config_dir.as_ref().or(homes.home.as_ref()) else {
        return TrustGate::new(Agent::Claude, Gate::Unknown, "HOME is not set", step);
    };
    let path = dir.join(".claude.json");
    let text = match read(&path) {
        Read::Missing => {
            return TrustGate::new(
                Agent::Claude,
                Gate::Closed,
                format!("no {} yet", path.display()),
                step,
            );
        }
        Read::Unreadable(why) => return TrustGate::new(Agent::Claude, Gate::Unknown, why, step),
        Read::Text(text) => text,
    };
    let Ok(config) = serde_json::from_str::<ClaudeConfig>(&text) else {
        return TrustGate::new(
            Agent::Claude,
            Gate::Unknown,
            format!("{} is not the JSON aea knows", path.display()),
            step,
        );
    };
    // Claude Code takes the folder's own answer, or that of a folder above
    // it up to the top of its git checkout.
    for dir in up_to_checkout(repo) {
        for key in keys(dir) {
            if let Some(project) = config.projects.get(&key)
                && project.accepted == Some(serde_json::Value::Bool(true))
            {
                return TrustGate::new(
                    Agent::Claude,
                    Gate::Open,
                    format!("trust dialog accepted for {key}"),
                    None,
                );
            }
        }
    }
    TrustGate::new(
        Agent::Claude,
        Gate::Closed,
        format!("{} has no accepted trust dialog here", path.display()),
        step,
    )
}

/// `repo` and the folders above it up to the top of its git checkout (the
/// first holding `.git`), or up to `/` outside git.
fn up_to_checkout(repo: &Path) -> Vec<&Path> {
    let mut dirs = Vec::new();
    for dir in repo.ancestors() {
        dirs.push(dir);
        if std::fs::symlink_metadata(dir.join(".git")).is_ok() {
            break;
        }
    }
    dirs
}

// ------------------------------------------------------------------ Codex

const CODEX_PROJECT_STEP: &str =
    "start `codex` in this folder and trust it, then trust aea's hooks in its `/hooks` menu";
const CODEX_HOOKS_STEP: &str =
    "start `codex` in this folder and trust aea's hooks in its `/hooks` menu";

/// aea's hooks in `.codex/hooks.json`, by the event Codex files them under
/// and the name it keys their trust with.
const CODEX_EVENTS: [(&str, &str); 3] = [
    ("SessionStart", "session_start"),
    ("UserPromptSubmit", "user_prompt_submit"),
    ("Stop", "stop"),
];

fn codex(repo: &Path, homes: &HarnessHomes) -> TrustGate {
    let project_step = Some(CODEX_PROJECT_STEP.to_string());
    let Some(home) = homes
        .codex_home
        .clone()
        .or_else(|| homes.home.as_ref().map(|h| h.join(".codex")))
    else {
        return TrustGate::new(Agent::Codex, Gate::Unknown, "HOME is not set", project_step);
    };
    let path = home.join("config.toml");
    let config: toml::Table = match read(&path) {
        Read::Missing => toml::Table::new(),
        Read::Unreadable(why) => {
            return TrustGate::new(Agent::Codex, Gate::Unknown, why, project_step);
        }
        Read::Text(text) => match text.parse() {
            Ok(table) => table,
            Err(_) => {
                return TrustGate::new(
                    Agent::Codex,
                    Gate::Unknown,
                    format!("{} is not TOML aea can read", path.display()),
                    project_step,
                );
            }
        },
    };
    let projects = config.get("projects").and_then(toml::Value::as_table);
    let level = keys(repo).into_iter().find_map(|key| {
        projects?
            .get(&key)?
            .get("trust_level")?
            .as_str()
            .map(str::to_string)
    });
    match level.as_deref() {
        Some("trusted") => {}
        Some("untrusted") => {
            return TrustGate::new(
                Agent::Codex,
                Gate::Closed,
                format!("this project is marked untrusted in {}", path.display()),
                project_step,
            );
        }
        Some(other) => {
            return TrustGate::new(
                Agent::Codex,
                Gate::Unknown,
                format!(
                    "trust_level {:?} in {} is not one aea knows",
                    crate::printer::untrusted_short(other, 40),
                    path.display()
                ),
                project_step,
            );
        }
        None if std::fs::symlink_metadata(repo.join(".git")).is_ok_and(|m| m.is_file()) => {
            // A linked worktree: Codex also asks about its main checkout,
            // and runs that checkout's hooks.
            return TrustGate::new(
                Agent::Codex,
                Gate::Unknown,
                "a linked git worktree, which Codex trusts through its main checkout",
                project_step,
            );
        }
        None => {
            return TrustGate::new(
                Agent::Codex,
                Gate::Closed,
                format!("this project is not trusted in {}", path.display()),
                project_step,
            );
        }
    }
    codex_hooks(repo, &config, &path)
}

/// With the project trusted: whether Codex trusts each of aea's hooks as
/// they are now.
fn codex_hooks(repo: &Path, config: &toml::Table, config_path: &Path) -> TrustGate {
    let step = Some(CODEX_HOOKS_STEP.to_string());
    let unknown = |why: String| TrustGate::new(Agent::Codex, Gate::Unknown, why, step.clone());
    let hooks_path = repo.join(".codex/hooks.json");
    let text = match read(&hooks_path) {
        Read::Text(text) => text,
        Read::Missing => return unknown(format!("no {}", hooks_path.display())),
        Read::Unreadable(why) => return unknown(why),
    };
    let Ok(file) = serde_json::from_str::<serde_json::Value>(&text) else {
        return unknown(format!("{} is not JSON", hooks_path.display()));
    };
    let states = config
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(toml::Value::as_table);
    let (mut ours, mut untrusted, mut modified, mut off) = (0, 0, 0, 0);
    for (event, label) in CODEX_EVENTS {
        let groups = file["hooks"][event]
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        for (g, group) in groups.iter().enumerate() {
            let handlers = group["hooks"].as_array().map_or(&[][..], Vec::as_slice);
            for (h, handler) in handlers.iter().enumerate() {
                // Only the very command aea writes is aea's: one that merely
                // mentions aea is another hook, which aea must never ask a
                // person to trust in its name.
                let is_ours = handler["command"].as_str()
                    == Some(super::kits::hook_command(super::Harness::Codex, event).as_str());
                if !is_ours {
                    continue;
                }
                ours += 1;
                let Some(hash) = codex_hook_hash(label, group, handler) else {
                    return unknown(format!(
                        "aea's {event} hook in {} has settings aea cannot weigh as Codex does",
                        hooks_path.display()
                    ));
                };
                let key = format!("{}:{label}:{g}:{h}", hooks_path.display());
                let state = states.and_then(|s| s.get(&key));
                if state
                    .and_then(|s| s.get("enabled"))
                    .and_then(toml::Value::as_bool)
                    == Some(false)
                {
                    off += 1;
                }
                match state
                    .and_then(|s| s.get("trusted_hash"))
                    .and_then(toml::Value::as_str)
                {
                    Some(trusted) if trusted == hash => {}
                    Some(_) => modified += 1,
                    None => untrusted += 1,
                }
            }
        }
    }
    let file = config_path.display();
    if ours == 0 {
        return unknown(format!("no aea hook in {}", hooks_path.display()));
    }
    if off > 0 {
        return TrustGate::new(
            Agent::Codex,
            Gate::Closed,
            format!("{off} of aea's {ours} hooks turned off in {file}"),
            Some("turn aea's hooks back on in Codex's `/hooks` menu".to_string()),
        );
    }
    match (untrusted, modified) {
        (0, 0) => TrustGate::new(
            Agent::Codex,
            Gate::Open,
            format!("project and aea's {ours} hooks trusted in {file}"),
            None,
        ),
        (0, m) => TrustGate::new(
            Agent::Codex,
            Gate::Closed,
            format!("{m} of aea's {ours} hooks changed since they were trusted in {file}"),
            step,
        ),
        (u, _) => TrustGate::new(
            Agent::Codex,
            Gate::Closed,
            format!("{u} of aea's {ours} hooks not yet trusted in {file}"),
            step,
        ),
    }
}

/// The hash Codex keys a command hook's trust with: SHA-256 of the
/// canonical JSON (keys sorted, no spaces) of the event's label and the
/// hook's group holding only this handler, normalised (a timeout of 600
/// when unset, `async` false, unset fields left out). `None` for a hook
/// with anything else in it (a matcher, a Windows command, fields newer
/// Codex versions add), whose hash aea cannot be sure of.
fn codex_hook_hash(
    label: &str,
    group: &serde_json::Value,
    handler: &serde_json::Value,
) -> Option<String> {
    // Field order is the sorted order: the canonical form.
    #[derive(Serialize)]
    struct Identity<'a> {
        event_name: &'a str,
        hooks: [Handler<'a>; 1],
    }
    #[derive(Serialize)]
    struct Handler<'a> {
        #[serde(rename = "async")]
        is_async: bool,
        command: &'a str,
        #[serde(rename = "statusMessage", skip_serializing_if = "Option::is_none")]
        status_message: Option<&'a str>,
        timeout: u64,
        #[serde(rename = "type")]
        kind: &'a str,
    }
    let group = group.as_object()?;
    if group.keys().any(|k| k != "hooks") {
        return None;
    }
    let handler = handler.as_object()?;
    let known = ["type", "command", "timeout", "async", "statusMessage"];
    if handler.keys().any(|k| !known.contains(&k.as_str())) {
        return None;
    }
    if handler.get("type")?.as_str()? != "command" {
        return None;
    }
    let optional = |name: &str| handler.get(name).filter(|v| !v.is_null());
    let identity = Identity {
        event_name: label,
        hooks: [Handler {
            is_async: match optional("async") {
                None => false,
                Some(v) => v.as_bool()?,
            },
            command: handler.get("command")?.as_str()?,
            status_message: match optional("statusMessage") {
                None => None,
                Some(v) => Some(v.as_str()?),
            },
            timeout: match optional("timeout") {
                None => 600,
                Some(v) => v.as_u64()?.max(1),
            },
            kind: "command",
        }],
    };
    let bytes = serde_json::to_vec(&identity).ok()?;
    Some(format!("sha256:{}", fsutil::sha256_hex(&bytes)))
}

// ------------------------------------------------------------------ Gemini CLI

const GEMINI_STEP: &str =
    "start `gemini` in this folder and trust it when it asks (`/permissions` changes it later)";

fn gemini(repo: &Path, homes: &HarnessHomes) -> TrustGate {
    let step = Some(GEMINI_STEP.to_string());
    let Some(home) = homes.gemini_cli_home.as_ref().or(homes.home.as_ref()) else {
        return TrustGate::new(Agent::Gemini, Gate::Unknown, "HOME is not set", step);
    };
    let dir = home.join(".gemini");
    let system = homes
        .gemini_system_settings
        .clone()
        .unwrap_or_else(|| PathBuf::from("/etc/gemini-cli/settings.json"));
    // The system's settings win over the user's.
    let mut enabled = true;
    for path in [dir.join("settings.json"), system] {
        match json_file(&path) {
            Ok(None) => {}
            Ok(Some(settings)) => {
                if let Some(on) = settings["security"]["folderTrust"]["enabled"].as_bool() {
                    enabled = on;
                }
            }
            Err(why) => return TrustGate::new(Agent::Gemini, Gate::Unknown, why, step),
        }
    }
    if !enabled {
        return TrustGate::new(
            Agent::Gemini,
            Gate::Open,
            "folder trust is turned off in its settings",
            None,
        );
    }
    // What Gemini CLI's environment says wins over its files; aea sees its
    // own environment, which a harness started from this shell shares.
    if homes.gemini_restricted_mode.as_deref() == Some("true")
        || homes.gemini_trust_workspace.as_deref() == Some("false")
    {
        return TrustGate::new(
            Agent::Gemini,
            Gate::Closed,
            "GEMINI_RESTRICTED_MODE=true or GEMINI_CLI_TRUST_WORKSPACE=false in this environment",
            Some(
                "unset that variable, then start `gemini` in this folder and trust it when it asks"
                    .to_string(),
            ),
        );
    }
    if homes.gemini_trust_workspace.as_deref() == Some("true") {
        return TrustGate::new(
            Agent::Gemini,
            Gate::Open,
            "GEMINI_CLI_TRUST_WORKSPACE=true in this environment",
            None,
        );
    }
    let path = homes
        .gemini_trusted_folders
        .clone()
        .unwrap_or_else(|| dir.join("trustedFolders.json"));
    let rules = match json_file(&path) {
        Ok(None) => {
            return TrustGate::new(
                Agent::Gemini,
                Gate::Closed,
                format!("no {} yet", path.display()),
                step,
            );
        }
        Ok(Some(serde_json::Value::Object(rules))) => rules,
        Ok(Some(_)) => {
            return TrustGate::new(
                Agent::Gemini,
                Gate::Unknown,
                format!("{} is not a JSON object", path.display()),
                step,
            );
        }
        Err(why) => return TrustGate::new(Agent::Gemini, Gate::Unknown, why, step),
    };
    // The longest rule whose folder holds this one decides.
    let mut best: Option<(usize, &str, &str)> = None;
    for (rule, level) in &rules {
        let Some(level) = level
            .as_str()
            .filter(|l| ["TRUST_FOLDER", "TRUST_PARENT", "DO_NOT_TRUST"].contains(l))
        else {
            // Gemini CLI stops with an error on such a file.
            return TrustGate::new(
                Agent::Gemini,
                Gate::Unknown,
                format!("{} holds a trust level Gemini CLI refuses", path.display()),
                Some(format!("fix {}, then {GEMINI_STEP}", path.display())),
            );
        };
        // Gemini CLI resolves each rule's path before it weighs them.
        let normal = fsutil::lexically_normal(Path::new(rule));
        let folder = normal.as_path();
        let folder = if level == "TRUST_PARENT" {
            folder.parent().unwrap_or(folder)
        } else {
            folder
        };
        let folder =
            std::fs::canonicalize(folder).unwrap_or_else(|_| fsutil::lexically_normal(folder));
        let len = normal.as_os_str().len();
        if repo.starts_with(&folder) && best.is_none_or(|(best, _, _)| len > best) {
            best = Some((len, rule, level));
        }
    }
    let file = path.display();
    match best {
        Some((_, rule, "DO_NOT_TRUST")) => TrustGate::new(
            Agent::Gemini,
            Gate::Closed,
            format!(
                "{} is marked not to be trusted in {file}",
                crate::printer::untrusted_short(rule, 200)
            ),
            Some(format!(
                "trust this folder in `gemini` with `/permissions` (or remove its DO_NOT_TRUST line from {file})"
            )),
        ),
        Some((_, rule, _)) => TrustGate::new(
            Agent::Gemini,
            Gate::Open,
            format!(
                "{} trusted in {file}",
                crate::printer::untrusted_short(rule, 200)
            ),
            None,
        ),
        None => TrustGate::new(
            Agent::Gemini,
            Gate::Closed,
            format!("this folder is not trusted in {file}"),
            step,
        ),
    }
}

// ------------------------------------------------------------------ Copilot CLI

const COPILOT_STEP: &str = "start `copilot` in this folder and trust it when it asks; until then it runs none of the repository's hooks";

fn copilot(repo: &Path, homes: &HarnessHomes) -> TrustGate {
    let step = Some(COPILOT_STEP.to_string());
    let Some(dir) = homes
        .copilot_home
        .clone()
        .or_else(|| homes.home.as_ref().map(|h| h.join(".copilot")))
    else {
        return TrustGate::new(Agent::Copilot, Gate::Unknown, "HOME is not set", step);
    };
    let path = dir.join("config.json");
    let config = match json_file(&path) {
        Ok(None) => {
            return TrustGate::new(
                Agent::Copilot,
                Gate::Closed,
                format!("no {} yet", path.display()),
                step,
            );
        }
        Ok(Some(config)) => config,
        Err(why) => return TrustGate::new(Agent::Copilot, Gate::Unknown, why, step),
    };
    let folders = match config.get("trustedFolders") {
        None => &Vec::new(),
        Some(serde_json::Value::Array(folders)) => folders,
        Some(_) => {
            return TrustGate::new(
                Agent::Copilot,
                Gate::Unknown,
                format!("trustedFolders in {} is not a list", path.display()),
                step,
            );
        }
    };
    let trusted = folders
        .iter()
        .filter_map(serde_json::Value::as_str)
        .find(|folder| {
            let folder = Path::new(folder);
            folder.is_absolute() && {
                let folder = std::fs::canonicalize(folder)
                    .unwrap_or_else(|_| fsutil::lexically_normal(folder));
                repo.starts_with(&folder)
            }
        });
    match trusted {
        Some(folder) => TrustGate::new(
            Agent::Copilot,
            Gate::Open,
            format!(
                "{} trusted in {}",
                crate::printer::untrusted_short(folder, 200),
                path.display()
            ),
            None,
        ),
        None => TrustGate::new(
            Agent::Copilot,
            Gate::Closed,
            format!(
                "this folder is not among trustedFolders in {}",
                path.display()
            ),
            step,
        ),
    }
}

/// A Gemini CLI JSON file (comments allowed, as it allows them): `None`
/// when missing, why it cannot be read otherwise.
fn json_file(path: &Path) -> Result<Option<serde_json::Value>, String> {
    match read(path) {
        Read::Missing => Ok(None),
        Read::Unreadable(why) => Err(why),
        Read::Text(text) => serde_json::from_str(&strip_json_comments(&text))
            .map(Some)
            .map_err(|_| format!("{} is not JSON aea can read", path.display())),
    }
}

/// `text` with its `//` and `/* */` comments blanked out, strings kept.
fn strip_json_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let (mut in_string, mut escaped) = (false, false);
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hashes Codex 0.169.0 reported (`codex app-server`, `hooks/list`,
    /// `currentHash`) for the hooks `aea init --agents codex` writes.
    #[test]
    fn codex_hook_hashes_match_what_codex_computes() {
        let command = |event: &str| {
            format!(
                "a=$(command -v aea) || a=\"$HOME/.cargo/bin/aea\"; [ -x \"$a\" ] || {{ echo 'aea: not found on PATH or in ~/.cargo/bin: mail not checked (install aea)' >&2; exit 0; }}; exec \"$a\" check --hook codex --event {event}"
            )
        };
        for (event, label, want) in [
            (
                "SessionStart",
                "session_start",
                "sha256:0efb557d951df272ab650f8b8db6861ad43f2c2579aed8062017dd0ddbb49fd9",
            ),
            (
                "UserPromptSubmit",
                "user_prompt_submit",
                "sha256:92edf8f95daa950dfc9f6f449d52e06dbba2d98ef722fe83577366e6099fb887",
            ),
            (
                "Stop",
                "stop",
                "sha256:00d79bd3bccc9f2429818df6e623a419b6fdfdb25d5606efb02ea96b5a6fc662",
            ),
        ] {
            let handler = serde_json::json!({"type": "command", "command": command(event)});
            let group = serde_json::json!({"hooks": [handler.clone()]});
            assert_eq!(
                codex_hook_hash(label, &group, &handler).as_deref(),
                Some(want),
                "{event}"
            );
        }
    }

    #[test]
    fn a_hook_with_a_matcher_is_not_weighed() {
        let handler = serde_json::json!({"type": "command", "command": "x"});
        let group = serde_json::json!({"matcher": "startup", "hooks": [handler.clone()]});
        assert_eq!(codex_hook_hash("session_start", &group, &handler), None);
    }

    #[test]
    fn comments_are_stripped_but_not_inside_strings() {
        let text = "{\n // a note\n \"a//b\": \"TRUST_FOLDER\", /* x */ \"c\": 1\n}";
        let value: serde_json::Value = serde_json::from_str(&strip_json_comments(text)).unwrap();
        assert_eq!(value["a//b"], "TRUST_FOLDER");
        assert_eq!(value["c"], 1);
    }
}
