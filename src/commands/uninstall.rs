//! `aea uninstall` (SPEC §9): reverts everything `aea init` did — git hooks,
//! agent-harness files, the registry entry — and keeps `.aea/` as a backup
//! unless `--purge`.

use std::fs;
use std::path::Path;

use serde::Serialize;

use super::context::Context;
use crate::cli::UninstallArgs;
use crate::error::{Error, ExitCode, Result};
use crate::fsutil;
use crate::harness;
use crate::registry::Registry;

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
    /// Where `.aea/` was kept; `null` with `--purge`.
    pub backup: Option<&'a Path>,
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
    let backup = if args.purge {
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
    match &backup {
        Some(path) => p.line(format_args!(
            "kept messages, markers and the log in {}",
            path.display()
        )),
        None => p.line("deleted .aea/ with its messages and log"),
    }
    if unprocessed > 0 {
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
