//! `aea uninstall` (SPEC §9): reverts everything `aea init` did — git hooks,
//! agent-harness files, the registry entry — and keeps `.aea/` as a backup
//! unless `--purge`.

use std::fs;
use std::path::Path;

use serde::Serialize;

use super::context::Context;
use crate::cli::UninstallArgs;
use crate::config::AgentConfig;
use crate::error::{Error, ExitCode, Result};
use crate::fsutil;
use crate::harness;
use crate::layout::{AEA_DIR, Shared};
use crate::registry::Registry;
use crate::templates;

/// `aea uninstall --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct UninstallOutput<'a> {
    pub hooks_removed: Vec<&'a Path>,
    /// Whether this inbox, below the top of its git work tree, was
    /// recorded as served by the hooks there and no longer is.
    pub unrecorded: bool,
    /// The other inboxes of the work tree the git hooks still serve
    /// (relative to the top, `.` for the top's own), which kept them.
    pub hooks_kept_for: &'a [String],
    pub files_reverted: &'a [String],
    /// Whether this repository's entry left the agent registry.
    pub unregistered: bool,
    /// Where `.aea/` was kept; `null` with `--purge`, and where `.aea/`
    /// stays in place (`bash_install`).
    pub backup: Option<&'a Path>,
    /// `.aea/` is also the bash AEA's install (its `aea-check.sh` or
    /// `aea-send.sh` is there and is not aea's shim): it stays where its
    /// scripts and the hooks put back read it, with its config, scripts
    /// and mail; only what `init` added there left it (`removed`), even
    /// with `--purge`.
    pub bash_install: bool,
    /// What `init` added to the bash AEA's `.aea/` and `uninstall` took
    /// out again, relative to the repository.
    pub removed: &'a [String],
    /// Where the private state (processed mail, sent copies, records) was
    /// kept; `null` with `--purge` or when there was none.
    pub private_backup: Option<&'a Path>,
    /// How many messages still waited unprocessed (kept in the backup, or
    /// deleted with `--purge`).
    pub unprocessed: usize,
}

pub(crate) fn run(args: &UninstallArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let repo = mailbox.repo().to_path_buf();
    let id = mailbox.agent_id().ok();
    // Said at the end: mail nobody read goes with the folder.
    let unprocessed = mailbox.inbox().unprocessed().map_or(0, |entries| {
        entries.iter().filter(|e| e.valid().is_some()).count()
    });
    // Below the top of a work tree this inbox is no longer served there;
    // the hooks stay while they serve another inbox of the work tree.
    let released = crate::hooks::release(mailbox.layout(), &ctx.rt, true)?;
    let hooks = &released.removed;
    let files = harness::uninstall(&repo, mailbox.dir())?;
    let mut unregistered = false;
    if let (Some(id), Some(path)) = (&id, ctx.registry())
        && Registry::load(path)?
            .get(id)
            .is_some_and(|e| e.path == repo)
    {
        Registry::update(path, |r| {
            r.agents.remove(id);
            Ok(())
        })?;
        unregistered = true;
    }
    let aea = mailbox.dir().to_path_buf();
    // A bash AEA install keeps its folder: its scripts, config and mail
    // live there, and the hooks put back above run them.
    let bash_install = crate::layout::bash_install(&aea);
    let stamp = ctx.rt.now().format("%Y%m%dT%H%M%SZ");
    let state = mailbox.layout().state().to_path_buf();
    let private_backup = if !matches!(mailbox.layout().state_exists(mailbox.owner()), Ok(true)) {
        None
    } else if args.purge {
        fs::remove_dir_all(&state).map_err(|e| Error::io("remove", &state, e))?;
        None
    } else {
        // Beside itself, in the git directory: never in the work tree,
        // and a later `aea init` starts afresh.
        let mut name = state.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".uninstalled-{stamp}"));
        let target = state.with_file_name(name);
        if fs::symlink_metadata(&target).is_ok() {
            return Err(Error::BackupExists { path: target });
        }
        fs::rename(&state, &target).map_err(|e| Error::io("move", &state, e))?;
        Some(target)
    };
    let mut removed = Vec::new();
    let backup = if bash_install {
        removed = remove_additions(&aea)?;
        None
    } else if args.purge {
        fs::remove_dir_all(&aea).map_err(|e| Error::io("remove", &aea, e))?;
        None
    } else {
        let target = repo.join(format!(".aea-backup-{stamp}"));
        if fs::symlink_metadata(&target).is_ok() {
            return Err(Error::BackupExists { path: target });
        }
        fs::rename(&aea, &target).map_err(|e| Error::io("move", &aea, e))?;
        // The backup is this machine's mail, not part of the repository:
        // `.aea/.gitignore` let the config and prompts through, which would
        // show the backup in `git status`.
        fsutil::replace_atomic(
            &target.join(".gitignore"),
            b"# Written by `aea uninstall`: a backup of .aea/, never committed.\n*\n",
        )?;
        Some(target)
    };
    if ctx.printer.json() {
        ctx.printer.value(&UninstallOutput {
            hooks_removed: hooks.iter().map(|h| h.path.as_path()).collect(),
            unrecorded: released.forgot,
            hooks_kept_for: &released.kept_for,
            files_reverted: &files,
            unregistered,
            backup: backup.as_deref(),
            bash_install,
            removed: &removed,
            private_backup: private_backup.as_deref(),
            unprocessed,
        });
        return Ok(ExitCode::Success);
    }
    let p = &ctx.printer;
    for h in hooks {
        p.line(format_args!("removed git hook {}", h.path.display()));
    }
    if released.forgot {
        p.line("the git hooks at the top of the work tree no longer serve this inbox");
    }
    if !released.kept_for.is_empty() {
        p.line(format_args!(
            "kept the git hooks: they still serve {}",
            crate::served::names(&released.kept_for)
        ));
    }
    for f in &files {
        p.line(format_args!("reverted {f}"));
    }
    if unregistered {
        p.line(format_args!(
            "removed {} from the registry",
            id.as_deref().unwrap_or_default()
        ));
    }
    for f in &removed {
        p.line(format_args!("removed {f}"));
    }
    match &backup {
        Some(path) => p.line(format_args!(
            "kept messages, markers and the log in {}",
            path.display()
        )),
        None if bash_install => p.line(
            "kept .aea/ where it is: it is the bash AEA's install, whose scripts read its config and mail there",
        ),
        None => p.line("deleted .aea/ with its messages and log"),
    }
    if unprocessed > 0 && !bash_install {
        p.warn(format_args!(
            "{unprocessed} message{} still waited unprocessed: {}",
            if unprocessed == 1 { "" } else { "s" },
            backup.as_deref().map_or_else(
                || "deleted with --purge".to_string(),
                |b| format!("they are in {}, where nothing reads them", b.display())
            )
        ));
    }
    if let Some(path) = &private_backup {
        p.line(format_args!(
            "kept processed mail, sent copies and records in {}",
            path.display()
        ));
    } else if args.purge {
        p.line("deleted the private state with processed mail and records");
    }
    Ok(ExitCode::Success)
}

/// Takes what `init` added out of the bash AEA's `.aea/` at `aea`, and
/// nothing of the bash AEA's: aea's shims, its `.gitignore` and prompt
/// as aea wrote them, its empty working folders and lock file, and the
/// `agent.public_key` line it added to the config (the installer writes
/// none). Returns them, relative to the repository.
fn remove_additions(aea: &Path) -> Result<Vec<String>> {
    let at = |rel: &str| format!("{AEA_DIR}/{rel}");
    let mut removed: Vec<String> = harness::shims::remove(aea)?
        .iter()
        .map(|rel| at(rel))
        .collect();
    let prompt = format!("{}/check-messages.md", Shared::Prompts.name());
    for (rel, text) in [
        (".gitignore".to_string(), templates::GITIGNORE.to_string()),
        (prompt.clone(), templates::check_messages_prompt()),
    ] {
        let path = aea.join(&rel);
        // Never followed, never a FIFO: only aea's own text goes.
        let ours = fsutil::read_limited(&path, 1 << 20).is_ok_and(|b| b == text.as_bytes())
            || (rel == prompt && templates::is_earlier_prompt(&path));
        if ours {
            fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
            removed.push(at(&rel));
        }
    }
    // Only when empty: staged or quarantined mail stays.
    for dir in [Shared::Staging, Shared::Quarantine] {
        let path = aea.join(dir.name());
        if fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) && fs::remove_dir(&path).is_ok() {
            removed.push(at(dir.name()));
        }
    }
    let lock = aea.join(Shared::LogLock.name());
    if fs::symlink_metadata(&lock).is_ok_and(|m| m.is_file() && m.len() == 0) {
        fs::remove_file(&lock).map_err(|e| Error::io("remove", &lock, e))?;
    }
    let config = aea.join(Shared::Config.name());
    if unpublish_key(&config)? {
        removed.push(format!("{} (agent.public_key)", at(Shared::Config.name())));
    }
    Ok(removed)
}

/// Removes the `public_key:` line of the `agent:` block `init` added to
/// the config at `path`, when the file still reads without it; whether it
/// did.
fn unpublish_key(path: &Path) -> Result<bool> {
    let Some(text) = fsutil::read_optional(path)? else {
        return Ok(false);
    };
    let lines: Vec<&str> = text.lines().collect();
    let Some(start) = lines.iter().position(|l| l.trim_end() == "agent:") else {
        return Ok(false);
    };
    let Some(at) = lines[start + 1..]
        .iter()
        .take_while(|l| l.is_empty() || l.starts_with([' ', '\t']) || l.starts_with('#'))
        .position(|l| l.trim_start().starts_with("public_key:"))
        .map(|i| start + 1 + i)
    else {
        return Ok(false);
    };
    let mut kept = lines;
    kept.remove(at);
    let mut new_text = kept.join("\n");
    new_text.push('\n');
    match AgentConfig::parse(&new_text, path) {
        Ok(config) if config.agent.public_key.is_none() => {
            fsutil::replace_atomic(path, new_text.as_bytes())?;
            Ok(true)
        }
        _ => Ok(false),
    }
}
