//! `aea hooks install|uninstall|status` (SPEC §9) and `aea hooks run`, the
//! command the installed hook scripts call.

use std::collections::HashSet;
use std::path::Path;

use serde::Serialize;

use super::{context::Context, listing};
use crate::audit::{AuditEvent, Event};
use crate::cli::{HooksCommand, HooksInstallArgs, HooksRunArgs, HooksUninstallArgs};
use crate::error::{Error, ExitCode, Result};
use crate::harness::{self, Agent};
use crate::hook_gate::{self, setting};
use crate::hooks::{self, Change, GitHook, State};
use crate::mailbox::Mailbox;
use crate::message::Priority;
use crate::repo::{self, HooksPathSource};

pub(crate) fn run(command: &HooksCommand, ctx: &Context) -> Result<ExitCode> {
    match command {
        HooksCommand::Install(args) => install(args, ctx),
        HooksCommand::Uninstall(args) => uninstall(args, ctx),
        HooksCommand::Status => status(ctx),
        HooksCommand::Run(args) => run_hook(args, ctx),
    }
}

fn binary(ctx: &Context) -> Result<&Path> {
    ctx.exe.as_deref().ok_or(Error::UnknownExecutable)
}

/// `aea hooks install --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct HooksInstallOutput<'a> {
    /// Where the git hooks went.
    pub hooks_dir: &'a Path,
    pub hooks: &'a [hooks::HookChange],
    /// With `--agents`: the agent-harness files written.
    pub agent_files: &'a [String],
}

/// `aea hooks uninstall --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct HooksUninstallOutput<'a> {
    /// Only the hooks that were removed.
    pub hooks: &'a [hooks::HookChange],
    /// With `--agents`: the agent-harness files reverted.
    pub agent_files: &'a [String],
}

fn install(args: &HooksInstallArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let dirs = repo::hook_dirs(mailbox.repo())?;
    if dirs.source == HooksPathSource::Inherited && !args.force {
        return Err(Error::HooksPathInherited { path: dirs.active });
    }
    if let Some(root) = dirs.runs_elsewhere_than(mailbox.repo()) {
        return Err(Error::HooksCannotSee {
            root: root.to_path_buf(),
            repo: mailbox.repo().to_path_buf(),
        });
    }
    let changes = hooks::install(&dirs.active, binary(ctx)?)?;
    for c in changes.iter().filter(|c| c.change != Change::Unchanged) {
        mailbox.log(
            &Event::new(&ctx.rt, AuditEvent::HookInstalled)
                .with("hook", c.hook.as_str())
                .with("path", c.path.display().to_string()),
        )?;
    }
    let agent_files = if let Some(listed) = &args.agents {
        let agents = if listed.is_empty() {
            let before = harness::installed(mailbox.dir());
            if before.is_empty() {
                harness::detect(mailbox.repo())
            } else {
                before
            }
        } else {
            listed.clone()
        };
        let (files, warnings) =
            harness::install(mailbox.repo(), mailbox.dir(), &agents, binary(ctx)?)?;
        for w in warnings {
            ctx.printer.warn(w);
        }
        files
    } else {
        Vec::new()
    };
    if ctx.printer.json() {
        ctx.printer.value(&HooksInstallOutput {
            hooks_dir: &dirs.active,
            hooks: &changes,
            agent_files: &agent_files,
        });
    } else {
        for c in &changes {
            let kept = if c.foreign && c.change == Change::Installed {
                format!(
                    " (kept the existing hook as {}.aea-orig; it still runs first)",
                    c.hook
                )
            } else {
                String::new()
            };
            ctx.printer.line(format_args!(
                "{:<14} {}{kept}",
                c.hook,
                match c.change {
                    Change::Installed => "installed",
                    Change::Updated => "updated",
                    _ => "already installed",
                }
            ));
        }
        ctx.printer
            .line(format_args!("in {}", dirs.active.display()));
        for f in &agent_files {
            ctx.printer.line(format_args!("wrote {f}"));
        }
    }
    Ok(ExitCode::Success)
}

fn uninstall(args: &HooksUninstallArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let removed = hooks::remove_from_repository(mailbox.repo(), mailbox.dir(), &ctx.rt)?;
    let agent_files = if args.agents {
        harness::uninstall(mailbox.repo(), mailbox.dir())?
    } else {
        Vec::new()
    };
    if ctx.printer.json() {
        ctx.printer.value(&HooksUninstallOutput {
            hooks: &removed,
            agent_files: &agent_files,
        });
    } else {
        if removed.is_empty() {
            ctx.printer.line("no aea hooks were installed");
        }
        for c in &removed {
            let restored = if c.foreign {
                " (restored the hook it had replaced)"
            } else {
                ""
            };
            ctx.printer
                .line(format_args!("removed {}{restored}", c.path.display()));
        }
        for f in &agent_files {
            ctx.printer.line(format_args!("reverted {f}"));
        }
    }
    Ok(ExitCode::Success)
}

/// One agent harness in `aea hooks status --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct AgentStatus {
    pub agent: Agent,
    /// Empty when its files are in place and its hooks call an aea that runs.
    pub problems: Vec<String>,
}

/// `aea hooks status --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct HooksStatusOutput<'a> {
    /// Where git runs hooks from.
    pub hooks_dir: &'a Path,
    pub hooks: &'a [HookStatus],
    /// Whether aea's Claude Code hooks are in `.claude/settings.json`.
    pub claude_hooks: bool,
    /// Every harness installed for, and what is wrong with its files.
    pub agents: &'a [AgentStatus],
    /// False when git runs hooks at the top of a working tree other than
    /// this repository (a package of a monorepo): they cannot see its
    /// `.aea/`, whatever their state says.
    pub serve_this_inbox: bool,
}

#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct HookStatus {
    hook: GitHook,
    state: State,
}

fn status(ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let dirs = repo::hook_dirs(mailbox.repo())?;
    let bin = binary(ctx)?;
    let rows: Vec<HookStatus> = GitHook::ALL
        .iter()
        .map(|&hook| HookStatus {
            hook,
            state: hooks::state(hook, &dirs.active, &dirs.default, bin),
        })
        .collect();
    let problems = harness::problems(mailbox.repo(), mailbox.dir(), bin);
    let agents: Vec<AgentStatus> = harness::installed(mailbox.dir())
        .into_iter()
        .map(|agent| AgentStatus {
            agent,
            problems: problems
                .iter()
                .filter(|p| p.agent == agent)
                .map(|p| p.detail.clone())
                .collect(),
        })
        .collect();
    let claude = agents
        .iter()
        .any(|a| a.agent == Agent::Claude && a.problems.is_empty());
    let elsewhere = dirs.runs_elsewhere_than(mailbox.repo());
    let source = match dirs.source {
        HooksPathSource::Default => "the repository's hooks folder",
        HooksPathSource::Local => "core.hooksPath in this repository's config",
        HooksPathSource::Inherited => "core.hooksPath in your global or system git config",
    };
    if ctx.printer.json() {
        ctx.printer.value(&HooksStatusOutput {
            hooks_dir: &dirs.active,
            hooks: &rows,
            claude_hooks: claude,
            agents: &agents,
            serve_this_inbox: elsewhere.is_none(),
        });
        return Ok(ExitCode::Success);
    }
    if let Some(root) = elsewhere {
        ctx.printer.line(format_args!(
            "NOT SERVING this inbox: git runs hooks at {}, which cannot see {}",
            root.display(),
            mailbox.dir().display()
        ));
    }
    ctx.printer.line(format_args!(
        "git runs hooks from {} ({source})",
        dirs.active.display()
    ));
    for row in &rows {
        ctx.printer
            .line(format_args!("  {:<14} {}", row.hook, row.state.label()));
    }
    if agents.is_empty() {
        ctx.printer
            .line("agent harnesses: none installed (`aea hooks install --agents` adds them)");
    }
    for a in &agents {
        if a.problems.is_empty() {
            ctx.printer
                .line(format_args!("  {:<14} installed", a.agent.as_str()));
        } else {
            ctx.printer.line(format_args!(
                "  {:<14} {}",
                a.agent.as_str(),
                a.problems.join("; ")
            ));
        }
    }
    if rows.iter().any(|r| r.state != State::Installed) {
        ctx.printer
            .line("run `aea hooks install` to install or update them");
    }
    Ok(ExitCode::Success)
}

/// post-* hooks run `aea sync` first when `hooks.<hook>.sync` asks for it
/// and a mail remote is configured — both only once the user trusted them
/// (`aea trust`); a failure is one line, never an error.
fn sync_if_asked(mailbox: &Mailbox, hook: GitHook, ctx: &Context) {
    let Ok(config) = mailbox.config() else {
        return;
    };
    let trusted = ctx.trusted(mailbox, config);
    let (true, Some(url), Some(me)) = (
        trusted.hook_syncs(hook),
        trusted.sync_remote,
        config.agent.id.clone(),
    ) else {
        return;
    };
    if let Err(e) = crate::config_trust::check_remote(&url) {
        ctx.printer.err_line(format_args!("aea: {e}"));
        return;
    }
    let signing = ctx.receipt_key(&me);
    let ring = ctx.keyring();
    let keys = crate::sync::Keys {
        signing: signing.as_ref(),
        ring: &ring,
    };
    match crate::sync::sync(mailbox, &me, &url, &ctx.rt, &keys) {
        Ok(report) if !report.received.is_empty() || !report.pushed.is_empty() => {
            ctx.printer.err_line(format_args!(
                "aea: synced with {url}: {} received, {} pushed",
                report.received.len(),
                report.pushed.values().map(Vec::len).sum::<usize>()
            ));
        }
        Ok(_) => {}
        Err(e) => ctx
            .printer
            .err_line(format_args!("aea: {}", crate::error::one_line(&e))),
    }
}

/// What a hook does (SPEC §9): pre-commit summarises waiting mail and blocks
/// where the policy says; post-* hooks report mail that arrived since their
/// last report and never fail. Counts and aea's own short references only:
/// never message text, ids or file names, which the sender chose.
fn run_hook(args: &HooksRunArgs, ctx: &Context) -> Result<ExitCode> {
    let Ok(mailbox) = Mailbox::discover(&ctx.cwd).map(Mailbox::owned) else {
        return Ok(ExitCode::Success);
    };
    // Verified like every listing, so that a replay is set aside here too.
    let mailbox = mailbox
        .verified_by(ctx.keyring())
        .signed_off_by(ctx.signoff())
        .audited_by(std::rc::Rc::new(ctx.rt.clone()));
    // An inbox an older aea kept is taken over a bounded step at a time.
    if crate::migrate::needed(&mailbox) {
        let _ = ctx.take_over(&mailbox, Some(super::context::TAKE_OVER_HOOK_STEP));
    }
    let mailbox = mailbox.capped(crate::mailbox::HOOK_READ_CAP);
    match args.hook {
        GitHook::PreCommit => pre_commit(&mailbox, ctx),
        hook => {
            sync_if_asked(&mailbox, hook, ctx);
            announce(&mailbox, hook, ctx)
        }
    }
}

/// post-merge, post-checkout, post-rewrite: one line about mail new since
/// the last announcement. Never fails the git command.
fn announce(mailbox: &Mailbox, hook: GitHook, ctx: &Context) -> Result<ExitCode> {
    let report = listing::unprocessed_report(mailbox, ctx, true, |warn| {
        crate::judge::Judge::load(mailbox, ctx.keyring(), warn)
    })?;
    let unread = listing::unread(&report);
    let hooks = mailbox
        .config()
        .map(|c| c.hooks.clone())
        .unwrap_or_default();
    if unread.is_empty() || setting(&hooks, hook).enabled == Some(false) {
        return Ok(ExitCode::Success);
    }
    let p = &ctx.printer;
    let refs = crate::shortref::for_names(&unread.iter().map(|(n, _)| n).collect::<Vec<_>>());
    let current: HashSet<String> = unread.iter().map(|(n, _)| n.clone()).collect();
    let announced = mailbox.announcements().announced("git");
    let new: Vec<String> = unread
        .iter()
        .zip(&refs)
        .filter(|((name, _), _)| !announced.contains(name))
        .map(|((_, valid), r)| {
            if *valid {
                r.clone()
            } else {
                format!("{r} invalid")
            }
        })
        .collect();
    // A post-* hook must never fail the git command: state is best effort.
    // Written only when it changed: a write into `.aea/` itself would move
    // the inbox's stamp and make the next command list it again.
    if current != announced {
        let _ = mailbox.announcements().set_announced("git", &current);
    }
    if !new.is_empty() {
        p.err_line(format_args!(
            "aea: {} new message{} ({}); {} unprocessed in all. Run `aea check`.",
            new.len(),
            if new.len() == 1 { "" } else { "s" },
            crate::reminder::some_refs(&new),
            unread.len()
        ));
    }
    Ok(ExitCode::Success)
}

/// The gate: a count line, and a refusal where `hooks.pre_commit.block_on`
/// says. It fails closed: a config it cannot read or compile blocks the
/// commit, whatever the inbox holds, until it is fixed.
fn pre_commit(mailbox: &Mailbox, ctx: &Context) -> Result<ExitCode> {
    let p = &ctx.printer;
    let staged = hook_gate::staged_state(mailbox.dir(), ctx.git_index_file.as_deref());
    if !staged.is_empty() {
        let shown: Vec<String> = staged
            .iter()
            .take(5)
            .map(|rel| crate::printer::untrusted_short(rel, 80))
            .collect();
        p.err_line(format_args!(
            "aea: commit blocked: {} file(s) of this machine's .aea/ are staged ({}{}): received mail, markers and the log never belong in a commit.",
            staged.len(),
            shown.join(", "),
            if staged.len() > shown.len() { ", …" } else { "" }
        ));
        p.err_line("aea: unstage them with `git reset -q -- .aea/` (the files stay), then make .aea/.gitignore start with `*` again (`aea doctor` checks it).");
        return Ok(ExitCode::Refused);
    }
    // A report remembered without a warning was worked out from this very
    // config (its stamp is part of the memo), which compiled then: it needs
    // no second compile on every commit.
    if let Some(report) = listing::remembered_clean(mailbox, ctx)? {
        let hooks = &mailbox.config()?.hooks;
        return Ok(gate(&report, &setting(hooks, GitHook::PreCommit), ctx));
    }
    let path = mailbox.layout().shared(crate::layout::Shared::Config);
    let checked = match mailbox
        .config()
        .and_then(|c| crate::policy::Checked::compile(c.clone(), &path))
    {
        Ok(checked) => checked,
        Err(e) => {
            p.err_line(format_args!(
                "aea: commit blocked: {}",
                crate::error::one_line(&e)
            ));
            if let Some(hint) = crate::hints::hint(&e) {
                p.err_line(format_args!(
                    "aea: fix: {hint}; `aea validate` shows the problem"
                ));
            }
            p.err_line("aea: to commit anyway: `git commit --no-verify`, or `AEA_SKIP_HOOKS=1 git commit` to skip only aea's check.");
            return Ok(ExitCode::Refused);
        }
    };
    let setting = setting(&checked.config.hooks, GitHook::PreCommit);
    if setting.enabled == Some(false) {
        return Ok(ExitCode::Success);
    }
    let report = listing::unprocessed_report(mailbox, ctx, true, |warn| {
        crate::judge::Judge::from_checked(checked, ctx.keyring(), warn)
    })?;
    Ok(gate(&report, &setting, ctx))
}

/// The count line and the refusal of the pre-commit hook for `report`.
fn gate(report: &listing::Report, setting: &crate::config::HookConfig, ctx: &Context) -> ExitCode {
    let p = &ctx.printer;
    if setting.enabled == Some(false) {
        return ExitCode::Success;
    }
    if report.not_read > 0 {
        // A flood: what the unread files hold is unknown, so the gate
        // cannot say nothing urgent waits. It fails closed.
        p.err_line(format_args!(
            "aea: commit blocked: {} files in .aea/ were not read (a hook reads {} at most): the gate cannot tell what waits.",
            report.not_read,
            crate::mailbox::HOOK_READ_CAP
        ));
        p.err_line("aea: run `aea check` (it reads them all and remembers the invalid ones), then `aea gc` to move invalid files aside.");
        p.err_line("aea: to commit anyway: `git commit --no-verify`, or `AEA_SKIP_HOOKS=1 git commit` to skip only aea's check.");
        return ExitCode::Refused;
    }
    let count = report.unprocessed + report.invalid.len();
    if count == 0 && report.processed_without_approval.is_empty() {
        return ExitCode::Success;
    }
    // Waiting: gated by the policy and not decided by a person yet — also
    // what a `.processed/` marker aea did not write hides (another tool's,
    // or one a pull brought): it approves nothing.
    let waiting: Vec<(&str, Priority)> = report
        .messages
        .iter()
        .filter(|m| m.approval.waits())
        .map(|m| (m.short_ref.as_str(), m.priority))
        .chain(
            report
                .processed_without_approval
                .iter()
                .map(|u| (u.short_ref.as_str(), u.priority)),
        )
        .collect();
    p.err_line(format_args!(
        "aea: {} unprocessed message{}{}. Run `aea check`.",
        count,
        if count == 1 { "" } else { "s" },
        if waiting.is_empty() {
            String::new()
        } else {
            format!(", {} waiting for a person's approval", waiting.len())
        }
    ));
    let blocking = hook_gate::blocking(&waiting, setting.block_on);
    if blocking.is_empty() {
        return ExitCode::Success;
    }
    p.err_line(format_args!(
        "aea: commit blocked: {} waiting for a person's approval (`aea pending`, then `aea approve` or `aea reject`).",
        crate::reminder::some_refs(&blocking)
    ));
    p.err_line("aea: to commit anyway: `git commit --no-verify`, or `AEA_SKIP_HOOKS=1 git commit` to skip only aea's check.");
    ExitCode::Refused
}
