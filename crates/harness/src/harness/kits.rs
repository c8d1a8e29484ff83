//! What aea installs for each agent harness (SPEC §16), each piece next to
//! the documentation that defines it.

use std::path::Path;

use super::json::{Edit, HOOK_GUARD, Shape};
use super::mcp::Style;
use super::names::{Agent, Harness};

/// The marker line of a whole file aea owns, which the layout also reads
/// (whether a bash checker is aea's shim).
pub use crate::layout::OWNED_MARKER;

const PLUGIN: &str = include_str!("../../../../templates/opencode/aea.js");

/// One file aea adds for a harness.
#[derive(Debug, Clone)]
pub(crate) struct Piece {
    /// Relative to the repository.
    pub path: String,
    pub kind: Kind,
}

#[derive(Debug, Clone)]
pub(crate) enum Kind {
    /// The AEA section between markers in an instructions file.
    Section,
    /// A whole file aea writes, recognised by [`OWNED_MARKER`].
    Owned(String),
    /// A whole file aea writes and marks executable, recognised by
    /// [`OWNED_MARKER`]: a hook the harness runs as a program.
    Script(String),
    /// Entries merged into a JSON settings file.
    Json(Edit),
    /// aea's MCP server as a table appended to Codex's TOML config (see
    /// [`super::mcp`]).
    Toml,
    /// Patterns added to the end of a `.gitignore`.
    Ignore(Ignore),
}

/// Patterns aea adds to a `.gitignore` (after a comment line that says
/// whose they are), and what git must then say of the paths they are for.
#[derive(Debug, Clone)]
pub(crate) struct Ignore {
    pub comment: String,
    pub patterns: Vec<String>,
    /// Paths git must ignore once the patterns are in effect.
    pub ignored: Vec<String>,
    /// Paths git must not ignore.
    pub kept: Vec<String>,
}

/// The read-only aea commands Claude Code may run without asking (SPEC
/// §16): reading mail never needs a person; approving and rejecting always
/// do and are never listed.
pub(crate) const READ_ONLY: [&str; 6] = ["check", "show", "pending", "status", "log", "validate"];

/// The tools of `aea mcp` that only read, which Claude Code may call
/// without asking; sending, replying and processing ask, and no tool
/// approves.
pub(crate) const READ_ONLY_TOOLS: [&str; 6] =
    ["check", "show", "thread", "status", "sent", "whoami"];

/// The hook command for `harness` and `event` (see [`HOOK_GUARD`]).
pub(crate) fn hook_command(harness: Harness, event: &str) -> String {
    format!("{HOOK_GUARD}check --hook {harness} --event {event}")
}

fn hooks(harness: Harness, events: &[&str]) -> Vec<(String, String)> {
    events
        .iter()
        .map(|e| ((*e).to_string(), hook_command(harness, e)))
        .collect()
}

fn marker_html(what: &str) -> String {
    format!("<!-- {OWNED_MARKER}: {what} (written by `aea init`; `aea uninstall` removes it) -->")
}

/// The events Cline runs aea's hook files for. PostToolUse is the one
/// whose output Cline CLI reads (3.0.65); TaskStart and UserPromptSubmit
/// are the documented session and prompt events, which it runs without
/// reading them (see `reminder`).
pub(crate) const CLINE_EVENTS: [&str; 3] = ["TaskStart", "UserPromptSubmit", "PostToolUse"];

/// Cline's hook file for `event`: a POSIX sh script (Cline runs a hook
/// file through the interpreter its `#!` line names) that names no path
/// of this machine, since it is committed.
fn cline_hook(event: &str) -> String {
    format!(
        "#!/bin/sh\n{}\n# Tells the model how much mail from agents in other repositories waits\n# (counts and aea's own short references, never message text).\n{}\n",
        marker_hash(&format!("Cline {event} hook")),
        hook_command(Harness::Cline, event)
    )
}

fn marker_hash(what: &str) -> String {
    format!("# {OWNED_MARKER}: {what} (written by `aea init`; `aea uninstall` removes it)")
}

/// A project MCP file that holds only servers: aea's is merged beside
/// the person's own (see [`super::mcp`]).
fn mcp_file(style: Style) -> Kind {
    Kind::Json(Edit {
        shape: Shape::Grouped,
        hooks: Vec::new(),
        allow: Vec::new(),
        mcp: Some(style),
    })
}

const DESCRIPTION: &str = "Check and handle messages from agents in other repositories (aea)";

/// Every piece `agent` needs in `repo`.
pub(crate) fn pieces(agent: Agent, repo: &Path) -> Vec<Piece> {
    let piece = |path: &str, kind: Kind| Piece {
        path: path.to_string(),
        kind,
    };
    match agent {
        // docs.claude.com/en/docs/claude-code: CLAUDE.md memory; hooks and
        // `permissions.allow` in .claude/settings.json ("Hooks",
        // "Settings"); slash commands in .claude/commands/ with
        // `allowed-tools` frontmatter ("Slash commands").
        Agent::Claude => vec![
            piece("CLAUDE.md", Kind::Section),
            piece("AGENTS.md", Kind::Section),
            piece(
                ".claude/settings.json",
                Kind::Json(Edit {
                    shape: Shape::Grouped,
                    hooks: hooks(
                        Harness::Claude,
                        &["SessionStart", "UserPromptSubmit", "Stop"],
                    ),
                    allow: READ_ONLY
                        .iter()
                        .map(|c| format!("Bash(aea {c}:*)"))
                        .chain(READ_ONLY_TOOLS.iter().map(|t| format!("mcp__aea__{t}")))
                        .collect(),
                    mcp: None,
                }),
            ),
            piece(".mcp.json", mcp_file(Style::Stdio)),
            piece(
                ".claude/commands/aea.md",
                Kind::Owned(format!(
                    "---\ndescription: {DESCRIPTION}\nallowed-tools: {}\n---\n{}\n{}",
                    ["check", "show", "pending", "status", "reply", "process"]
                        .iter()
                        .map(|c| format!("Bash(aea {c}:*)"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    marker_html("command"),
                    crate::templates::command_steps()
                )),
            ),
        ],
        // developers.openai.com/codex: AGENTS.md; hooks in .codex/hooks.json
        // (same layout as Claude Code's; SessionStart, UserPromptSubmit,
        // Stop). Codex runs project hooks only in a trusted project, each
        // once a person trusted it (`/hooks`): aea cannot, and must not,
        // trust them itself. MCP servers in .codex/config.toml.
        Agent::Codex => vec![
            piece("AGENTS.md", Kind::Section),
            piece(
                ".codex/hooks.json",
                Kind::Json(Edit {
                    shape: Shape::Grouped,
                    hooks: hooks(
                        Harness::Codex,
                        &["SessionStart", "UserPromptSubmit", "Stop"],
                    ),
                    allow: Vec::new(),
                    mcp: None,
                }),
            ),
            piece(".codex/config.toml", Kind::Toml),
        ],
        // geminicli.com/docs: GEMINI.md context file; hooks in
        // .gemini/settings.json (SessionStart, BeforeAgent, AfterAgent;
        // project hooks run in trusted folders only), and `mcpServers` in
        // the same file; custom commands as TOML in .gemini/commands/
        // (`description`, `prompt`).
        Agent::Gemini => vec![
            piece("GEMINI.md", Kind::Section),
            piece(
                ".gemini/settings.json",
                Kind::Json(Edit {
                    shape: Shape::Grouped,
                    hooks: hooks(
                        Harness::Gemini,
                        &["SessionStart", "BeforeAgent", "AfterAgent"],
                    ),
                    allow: Vec::new(),
                    mcp: Some(Style::Plain),
                }),
            ),
            piece(
                ".gemini/commands/aea.toml",
                Kind::Owned(format!(
                    "{}\ndescription = \"{DESCRIPTION}\"\nprompt = \"\"\"\n{}\"\"\"\n",
                    marker_hash("command"),
                    crate::templates::command_steps()
                )),
            ),
        ],
        // opencode.ai/docs: AGENTS.md; plugins loaded from
        // .opencode/plugin/*.js (`chat.message`, `event` with
        // `session.idle`); commands from .opencode/command/*.md; MCP
        // servers under `mcp` in opencode.json.
        Agent::Opencode => vec![
            piece("AGENTS.md", Kind::Section),
            piece("opencode.json", mcp_file(Style::Opencode)),
            piece(".opencode/plugin/aea.js", Kind::Owned(PLUGIN.to_string())),
            piece(
                ".opencode/command/aea.md",
                Kind::Owned(format!(
                    "---\ndescription: {DESCRIPTION}\n---\n{}\n{}",
                    marker_html("command"),
                    crate::templates::command_steps()
                )),
            ),
        ],
        // docs.github.com/en/copilot (Copilot CLI): AGENTS.md; hooks in
        // .github/hooks/*.json (`version: 1`; sessionStart and
        // userPromptSubmitted add `additionalContext`, agentStop may block
        // with a reason that becomes the next prompt; see
        // `reminder::moment`). Run only in a folder the person trusted.
        Agent::Copilot => vec![
            piece("AGENTS.md", Kind::Section),
            piece(
                ".github/hooks/aea.json",
                Kind::Json(Edit {
                    shape: Shape::Copilot,
                    hooks: hooks(
                        Harness::Copilot,
                        &["sessionStart", "userPromptSubmitted", "agentStop"],
                    ),
                    allow: Vec::new(),
                    mcp: None,
                }),
            ),
        ],
        // cursor.com/docs: project rules in .cursor/rules/*.mdc
        // (`alwaysApply`); hooks in .cursor/hooks.json (`stop` may return a
        // `followup_message`); MCP servers in .cursor/mcp.json.
        Agent::Cursor => vec![
            piece(
                ".cursor/rules/aea.mdc",
                Kind::Owned(format!(
                    "---\ndescription: {DESCRIPTION}\nalwaysApply: true\n---\n{}\n{}",
                    marker_html("rule"),
                    crate::templates::agent_section()
                )),
            ),
            piece(
                ".cursor/hooks.json",
                Kind::Json(Edit {
                    shape: Shape::Cursor,
                    hooks: hooks(Harness::Cursor, &["stop"]),
                    allow: Vec::new(),
                    mcp: None,
                }),
            ),
            piece(".cursor/mcp.json", mcp_file(Style::Plain)),
        ],
        // docs.cline.bot: rules in .clinerules/ (a folder of .md files, or
        // one .clinerules file in older setups); hooks are files named by
        // their event in .clinerules/hooks/, which Cline CLI also reads
        // from .cline/hooks/ (@cline/shared `resolveHooksConfigSearchPaths`,
        // 3.0.65): there when .clinerules is a single file. Cline CLI
        // reads MCP servers only from the user's own settings; Roo Code,
        // the Cline fork (retired in 2026, docs.roocode.com/sunset), reads
        // .roo/mcp.json, written where the repository has a .roo folder.
        Agent::Cline => {
            let (mut kit, hooks_dir) = if repo.join(".clinerules").is_file() {
                (vec![piece(".clinerules", Kind::Section)], ".cline/hooks")
            } else {
                let rule = piece(
                    ".clinerules/aea.md",
                    Kind::Owned(format!(
                        "{}\n{}",
                        marker_html("rule"),
                        crate::templates::agent_section()
                    )),
                );
                (vec![rule], ".clinerules/hooks")
            };
            for event in CLINE_EVENTS {
                kit.push(piece(
                    &format!("{hooks_dir}/{event}"),
                    Kind::Script(cline_hook(event)),
                ));
            }
            if repo.join(".roo").is_dir() {
                kit.push(piece(".roo/mcp.json", mcp_file(Style::Plain)));
            }
            kit
        }
        // aider.chat/docs/config/aider_conf.html: `read:` files are added
        // to every chat read-only. Only with `--agents aider`.
        //
        // aider/main.py `check_gitignore` (aider-chat 0.86.2): unless `git
        // check-ignore .aider` says it is ignored, Aider's first run appends
        // `.aider*` to .gitignore, which hides .aider.conf.yml from git
        // too, so a teammate's clone would never get it. With `.aider*` and
        // then `!.aider.conf.yml` in .gitignore Aider appends nothing, its
        // chat history stays out of git and the config goes in.
        Agent::Aider => vec![
            piece("AGENTS.md", Kind::Section),
            piece(
                ".aider.conf.yml",
                Kind::Owned(format!("{}\nread:\n  - AGENTS.md\n", marker_hash("config"))),
            ),
            piece(
                ".gitignore",
                Kind::Ignore(Ignore {
                    comment: "# aea: Aider's files stay out of git, its config goes in (`aea uninstall` removes these lines)".to_string(),
                    patterns: vec![".aider*".to_string(), "!.aider.conf.yml".to_string()],
                    ignored: vec![".aider".to_string()],
                    kept: vec![".aider.conf.yml".to_string()],
                }),
            ),
        ],
    }
}

/// Every instruction text an agent reads: the section, the prompt, and
/// each whole file a harness gets (commands, rules). For tests only (the
/// command line's checks that every command named there exists).
#[cfg(any(test, feature = "test-support"))]
pub fn instructions() -> Vec<(String, String)> {
    let mut texts = vec![
        (
            "agent section".to_string(),
            crate::templates::agent_section(),
        ),
        (
            "check-messages.md".to_string(),
            crate::templates::check_messages_prompt(),
        ),
        ("/aea steps".to_string(), crate::templates::command_steps()),
    ];
    for agent in Agent::ALL {
        for piece in pieces(*agent, std::path::Path::new("/r")) {
            if let Kind::Owned(text) = piece.kind
                && [".md", ".mdc", ".toml"]
                    .iter()
                    .any(|ext| piece.path.ends_with(ext))
            {
                texts.push((piece.path, text));
            }
        }
    }
    texts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file aea owns parses as what its harness reads, and none
    /// names a path of this machine: they are committed.
    #[test]
    fn owned_files_parse() {
        let repo = Path::new("/nonexistent");
        for agent in Agent::ALL {
            for piece in pieces(*agent, repo) {
                let (Kind::Owned(text) | Kind::Script(text)) = &piece.kind else {
                    continue;
                };
                assert!(text.contains(OWNED_MARKER), "{}", piece.path);
                if piece.path == ".gemini/commands/aea.toml" {
                    let parsed: toml::Table = toml::from_str(text).unwrap();
                    assert!(parsed["prompt"].as_str().unwrap().contains("aea check"));
                }
                if piece.path == ".opencode/plugin/aea.js" {
                    assert!(
                        text.contains(
                            r#"const AEA = ["aea", join(homedir(), ".cargo", "bin", "aea")];"#
                        ),
                        "{text}"
                    );
                }
                if let Kind::Script(text) = &piece.kind {
                    assert!(text.starts_with("#!/bin/sh\n"), "{}", piece.path);
                    assert!(text.contains(HOOK_GUARD), "{}", piece.path);
                }
                assert!(!text.contains("/nonexistent"), "{}", piece.path);
            }
        }
        assert_eq!(
            hook_command(Harness::Claude, "Stop"),
            format!("{HOOK_GUARD}check --hook claude --event Stop")
        );
    }

    /// The guard runs in `sh`: aea from PATH, else from ~/.cargo/bin, else
    /// one line on stderr and exit 0, so a clone without aea goes on.
    #[test]
    fn the_hook_guard_finds_aea_or_says_so_and_lets_the_harness_go_on() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().to_path_buf();
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let fake = bin.join("aea");
        std::fs::write(&fake, "#!/bin/sh\necho \"ran: $*\"\n").unwrap();
        crate::hooks::make_executable(&fake).unwrap();
        let run = |path: &str, home: &Path| {
            std::process::Command::new("sh")
                .args(["-c", &hook_command(Harness::Codex, "Stop")])
                .env("PATH", path)
                .env("HOME", home)
                .output()
                .unwrap()
        };
        let on_path = run(&format!("{}:/usr/bin:/bin", bin.display()), &dir);
        assert_eq!(
            String::from_utf8_lossy(&on_path.stdout),
            "ran: check --hook codex --event Stop\n"
        );
        let home = dir.join("home");
        std::fs::create_dir_all(home.join(".cargo/bin")).unwrap();
        std::fs::copy(&fake, home.join(".cargo/bin/aea")).unwrap();
        let in_cargo = run("/usr/bin:/bin", &home);
        assert!(String::from_utf8_lossy(&in_cargo.stdout).starts_with("ran: check"));
        let missing = run("/usr/bin:/bin", &dir);
        assert!(missing.status.success());
        assert!(missing.stdout.is_empty());
        assert_eq!(
            String::from_utf8_lossy(&missing.stderr),
            "aea: not found on PATH or in ~/.cargo/bin: mail not checked (install aea)\n"
        );
    }

    #[test]
    fn every_instruction_file_says_the_same_about_decisions() {
        for (name, text) in instructions() {
            assert!(
                text.contains(crate::templates::DECISIONS),
                "{name} lacks the shared text"
            );
            assert!(
                !text.contains(crate::templates::PLACEHOLDER.trim_end()),
                "{name}"
            );
        }
        for word in ["`reject`", "Approved by a person", "`require_approval`"] {
            assert!(crate::templates::DECISIONS.contains(word), "{word}");
        }
    }
}
