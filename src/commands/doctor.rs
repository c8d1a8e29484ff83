//! `aea doctor` (SPEC §9): checks the whole installation and prints the
//! exact fix for each problem. Exit 6 when something needs attention.

use std::fs;

use chrono::Duration;
use serde::Serialize;

use super::Context;
use crate::config;
use crate::error::{Error, ExitCode, Result};
use crate::harness;
use crate::hooks::{self, HOOK_NAMES, State};
use crate::mailbox::{CLAIMS_DIR, LAYOUT_DIRS, TMP_DIR};
use crate::registry::{Health, Registry};
use crate::repo::{self, HooksPathSource};

#[derive(Debug, Serialize)]
struct Finding {
    check: &'static str,
    ok: bool,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

pub fn run(ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let repo = mailbox.repo();
    let aea = mailbox.dir();
    let mut out = Vec::new();
    let mut check = |check: &'static str, problem: Option<(String, String)>, ok: &str| {
        out.push(match problem {
            None => Finding {
                check,
                ok: true,
                detail: ok.to_string(),
                fix: None,
            },
            Some((detail, fix)) => Finding {
                check,
                ok: false,
                detail,
                fix: Some(fix),
            },
        });
    };

    let missing: Vec<&str> = LAYOUT_DIRS
        .iter()
        .copied()
        .filter(|d| !aea.join(d).is_dir())
        .collect();
    check(
        "layout",
        (!missing.is_empty()).then(|| {
            (
                format!("missing in .aea/: {}", missing.join(", ")),
                "aea init".to_string(),
            )
        }),
        "all folders of .aea/ present",
    );

    let config_path = aea.join(config::FILE_NAME);
    let text = fs::read_to_string(&config_path).unwrap_or_default();
    // The same check every command and the pre-commit gate make.
    let checked = config::Checked::parse(&text, &config_path);
    let untrusted = checked.as_ref().ok().map(|c| {
        crate::config_trust::trusted_settings(&c.config, aea, repo, ctx.trust_store())
            .map(|t| t.ignored.keys())
            .map_err(|e| e.to_string())
    });
    let parsed = checked
        .map(|c| c.config.agent.id)
        .map_err(|e| e.to_string());
    let id = parsed.as_ref().ok().cloned().flatten();
    check(
        "config",
        match &parsed {
            Err(e) => Some((
                e.clone(),
                format!("edit {} at the place named", config_path.display()),
            )),
            Ok(None) => Some((
                "agent.id is missing".into(),
                format!("add `agent:\\n  id: <id>` to {}", config_path.display()),
            )),
            Ok(Some(_)) => None,
        },
        "agent-config.yaml reads and compiles",
    );
    check(
        "config trust",
        match untrusted {
            Some(Ok(keys)) if !keys.is_empty() => Some((
                format!("ignored until you trust them: {}", keys.join(", ")),
                "read what they run with `aea trust --show`, then trust them with `aea trust`"
                    .to_string(),
            )),
            Some(Err(e)) => Some((e, "see the error".to_string())),
            _ => None,
        },
        "nothing in the config runs a program or reaches a host untrusted",
    );

    match (ctx.registry(), &id) {
        (Some(path), Some(id)) => {
            let problem = match Registry::load(path) {
                Err(e) => Some((e.to_string(), e.hint().unwrap_or_default())),
                Ok(registry) => match registry.get(id) {
                    None => Some((
                        format!("{id} is not registered"),
                        format!("aea init {}", repo.display()),
                    )),
                    Some(entry) if entry.path != repo => Some((
                        format!("{id} is registered for {}", entry.path.display()),
                        "choose another id with `aea init --id`, or fix the registry entry"
                            .to_string(),
                    )),
                    Some(entry) => match Registry::health(id, entry) {
                        Health::Ok => None,
                        other => Some((
                            format!("registry entry: {}", other.as_str()),
                            format!("aea init {}", repo.display()),
                        )),
                    },
                },
            };
            check("registry", problem, "registered under this path");
        }
        _ => check(
            "registry",
            Some((
                "no registry available".into(),
                "set AEA_REGISTRY to a file path".into(),
            )),
            "",
        ),
    }

    match repo::hook_dirs(repo) {
        Err(Error::NotAGitRepository { .. }) => {
            check("git hooks", None, "not a git repository: none needed");
        }
        Err(e) => check(
            "git hooks",
            Some((e.to_string(), e.hint().unwrap_or_default())),
            "",
        ),
        Ok(dirs) if dirs.source == HooksPathSource::Inherited => check(
            "git hooks",
            Some((
                format!(
                    "core.hooksPath is set globally to {}",
                    dirs.active.display()
                ),
                Error::HooksPathInherited { path: dirs.active }
                    .hint()
                    .unwrap_or_default(),
            )),
            "",
        ),
        Ok(dirs) => {
            let binary = ctx.exe.clone().unwrap_or_default();
            let bad: Vec<String> = HOOK_NAMES
                .iter()
                .map(|h| (h, hooks::state(h, &dirs.active, &dirs.default, &binary)))
                .filter(|(_, s)| *s != State::Installed)
                .map(|(h, s)| format!("{h} {}", s.as_str()))
                .collect();
            check(
                "git hooks",
                (!bad.is_empty()).then(|| (bad.join(", "), "aea hooks install".to_string())),
                "all four hooks installed and current",
            );
        }
    }

    let sections: Vec<&str> = harness::AGENT_FILES
        .iter()
        .copied()
        .filter(|f| {
            !fs::read_to_string(repo.join(f))
                .is_ok_and(|t| t.contains(crate::templates::SECTION_BEGIN))
        })
        .collect();
    check(
        "agent instructions",
        (!sections.is_empty()).then(|| {
            (
                format!("no AEA section in {}", sections.join(", ")),
                "aea hooks install --agents".to_string(),
            )
        }),
        "CLAUDE.md and AGENTS.md tell the agent to run `aea check`",
    );
    check(
        "claude hooks",
        (!harness::claude_hooks_present(repo)).then(|| {
            (
                format!(
                    "{} lacks the SessionStart/UserPromptSubmit hooks",
                    harness::CLAUDE_SETTINGS
                ),
                "aea hooks install --agents".to_string(),
            )
        }),
        "Claude Code is told about new mail",
    );

    let entries = mailbox.unprocessed()?;
    let invalid: Vec<&str> = entries
        .iter()
        .filter(|e| e.message.is_err())
        .map(|e| e.name.as_str())
        .collect();
    check(
        "inbox",
        (!invalid.is_empty()).then(|| {
            (
                format!("{} invalid file(s): {}", invalid.len(), invalid.join(", ")),
                "aea validate, then `aea gc` (moves them to .aea/.quarantine/ with the reason)"
                    .to_string(),
            )
        }),
        "every unprocessed file is a valid message",
    );

    let old = |dir: &str, age: Duration| -> Vec<String> {
        let now = ctx.rt.now();
        fs::read_dir(aea.join(dir))
            .into_iter()
            .flatten()
            .filter_map(std::result::Result::ok)
            .filter(|e| {
                e.metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| now - chrono::DateTime::<chrono::Utc>::from(t) > age)
            })
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    };
    let stale = old(CLAIMS_DIR, Duration::minutes(30));
    check(
        "claims",
        (!stale.is_empty()).then(|| {
            (
                format!("stale claims: {}", stale.join(", ")),
                "run `aea process <file>` again (stale claims are taken over), or delete them from .aea/.claims/".to_string(),
            )
        }),
        "no stale claims",
    );
    let leftovers = old(TMP_DIR, Duration::hours(1));
    check(
        "staging",
        (!leftovers.is_empty()).then(|| {
            (
                format!(
                    "{} file(s) left in .aea/.tmp/ by interrupted sends",
                    leftovers.len()
                ),
                format!("rm {}/.tmp/.deliver.*", aea.display()),
            )
        }),
        "no leftovers from interrupted sends",
    );

    let problems = out.iter().filter(|f| !f.ok).count();
    if ctx.printer.json() {
        ctx.printer
            .value(&serde_json::json!({ "problems": problems, "checks": out }));
    } else {
        for f in &out {
            if f.ok {
                ctx.printer
                    .line(format_args!("ok    {:<18} {}", f.check, f.detail));
            } else {
                ctx.printer
                    .line(format_args!("FIX   {:<18} {}", f.check, f.detail));
                if let Some(fix) = &f.fix {
                    ctx.printer.line(format_args!("      {:<18} -> {fix}", ""));
                }
            }
        }
        ctx.printer.line(format_args!(
            "{problems} problem{}",
            if problems == 1 { "" } else { "s" }
        ));
    }
    Ok(if problems == 0 {
        ExitCode::Success
    } else {
        ExitCode::Attention
    })
}
