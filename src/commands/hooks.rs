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
    /// For an inbox below the top of its git work tree (a package of a
    /// monorepo): its folder relative to the top, now recorded as one
    /// the hooks there serve; `null` at the top.
    pub served_from_top: Option<&'a str>,
}

/// `aea hooks uninstall --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct HooksUninstallOutput<'a> {
    /// Only the hooks that were removed.
    pub hooks: &'a [hooks::HookChange],
    /// With `--agents`: the agent-harness files reverted.
    pub agent_files: &'a [String],
    /// Whether this inbox, below the top of its work tree, was recorded as
    /// served by the hooks there and no longer is.
    pub forgot: bool,
    /// The other inboxes of the work tree the hooks still serve (relative
    /// to the top, `.` for the top's own), which kept them in place.
    pub kept_for: &'a [String],
}

fn install(args: &HooksInstallArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let dirs = repo::hook_dirs(mailbox.repo())?;
    if dirs.source == HooksPathSource::Inherited && !args.force {
        return Err(Error::HooksPathInherited { path: dirs.active });
    }
    let installed = hooks::install_for(mailbox.layout(), mailbox.owner(), &dirs, binary(ctx)?)?;
    let changes = installed.changes;
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
        let (files, warnings) = harness::install(mailbox.repo(), mailbox.dir(), &agents)?;
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
            served_from_top: installed.served_from_top.as_deref(),
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
        if let (Some(rel), Some(top)) = (&installed.served_from_top, &dirs.workdir) {
            ctx.printer.line(format_args!(
                "they serve this inbox as {} (git runs them at {})",
                crate::printer::untrusted_short(rel, 200),
                top.display()
            ));
        }
        for f in &agent_files {
            ctx.printer.line(format_args!("wrote {f}"));
        }
    }
    Ok(ExitCode::Success)
}

fn uninstall(args: &HooksUninstallArgs, ctx: &Context) -> Result<ExitCode> {
    let (released, agent_files, inbox_here) = match ctx.mailbox() {
        Ok(mailbox) => {
            let released = hooks::release(mailbox.layout(), &ctx.rt, false)?;
            let agent_files = if args.agents {
                harness::uninstall(mailbox.repo(), mailbox.dir())?
            } else {
                Vec::new()
            };
            (released, agent_files, true)
        }
        // The top of a monorepo whose inboxes are all in packages: the
        // hooks are there, and no inbox.
        Err(e @ Error::NoRepository { .. }) => {
            let cwd = std::fs::canonicalize(&ctx.cwd).unwrap_or_else(|_| ctx.cwd.clone());
            let Some(tree) = crate::layout::WorkTree::of(&cwd).filter(|_| ctx.repo.is_none())
            else {
                return Err(e);
            };
            (hooks::release_without_inbox(tree.top())?, Vec::new(), false)
        }
        Err(e) => return Err(e),
    };
    let removed = released.removed;
    if ctx.printer.json() {
        ctx.printer.value(&HooksUninstallOutput {
            hooks: &removed,
            agent_files: &agent_files,
            forgot: released.forgot,
            kept_for: &released.kept_for,
        });
    } else {
        if released.forgot {
            ctx.printer
                .line("the git hooks at the top of the work tree no longer serve this inbox");
        }
        if !released.unserved.is_empty() {
            ctx.printer.warn(format_args!(
                "the git hooks no longer serve the inboxes below the top either: {} (`aea hooks install` in one of them puts them back)",
                crate::served::names(&released.unserved)
            ));
        }
        if !released.kept_for.is_empty() {
            ctx.printer.line(format_args!(
                "kept the git hooks: they still serve {}{}",
                crate::served::names(&released.kept_for),
                if inbox_here {
                    ""
                } else {
                    " (`aea hooks uninstall` in each of them forgets it; the hooks go with the last)"
                }
            ));
        } else if removed.is_empty() {
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
    /// When its hooks last ran here, which aea and where they looked;
    /// absent when they never ran (or it has no hooks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_run: Option<harness::hook_runs::HookRun>,
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
    /// Whether the hooks git runs serve this inbox: at the top of its
    /// work tree, or below it (a package of a monorepo) once recorded
    /// there by `aea init` or `aea hooks install` run in it. False for an
    /// inbox below the top that is not recorded, or is skipped, and where
    /// git runs hooks in another work tree.
    pub serve_this_inbox: bool,
    /// For an inbox below the top of its work tree: its folder relative to
    /// the top; `null` at the top or outside git.
    pub served_from_top: Option<&'a str>,
    /// The inboxes below the top of this work tree recorded as served by
    /// its hooks (whichever inbox of the work tree this runs in).
    pub recorded_inboxes: &'a [RecordedInbox],
}

/// One inbox below the top of the work tree that its git hooks serve.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct RecordedInbox {
    /// Its folder relative to the top of the work tree.
    pub path: String,
    /// Why the hooks skip it (never following a symlink, never another
    /// user's `.aea/`); `null` when they serve it.
    pub skipped: Option<String>,
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
    let problems = harness::problems(&mailbox, &ctx.aea_candidates);
    let agents: Vec<AgentStatus> = harness::installed(mailbox.dir())
        .into_iter()
        .map(|agent| AgentStatus {
            agent,
            problems: problems
                .iter()
                .filter(|p| p.agent == agent)
                .map(|p| p.detail.clone())
                .collect(),
            last_run: harness::hook_runs::last(&mailbox, agent),
        })
        .collect();
    let claude = agents
        .iter()
        .any(|a| a.agent == Agent::Claude && a.problems.is_empty());
    let served = crate::served::of(mailbox.repo());
    let serving = hooks::serving(
        mailbox.layout(),
        &dirs,
        served.as_ref().ok().and_then(Option::as_ref),
    );
    let recorded: Vec<RecordedInbox> = served
        .as_ref()
        .ok()
        .and_then(Option::as_ref)
        .map(|s| {
            s.entries
                .iter()
                .map(|e| RecordedInbox {
                    path: e.rel.clone(),
                    skipped: e.skipped.as_ref().map(ToString::to_string),
                })
                .collect()
        })
        .unwrap_or_default();
    let below = match &serving {
        hooks::Serving::FromTop { rel }
        | hooks::Serving::Skipped { rel, .. }
        | hooks::Serving::NotRecorded { rel } => Some(rel.as_str()),
        _ => None,
    };
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
            serve_this_inbox: serving.serves(),
            served_from_top: below,
            recorded_inboxes: &recorded,
        });
        return Ok(ExitCode::Success);
    }
    let p = &ctx.printer;
    let top = dirs.workdir.as_deref().unwrap_or(Path::new("?")).display();
    match &serving {
        hooks::Serving::Here => {}
        hooks::Serving::FromTop { rel } => p.line(format_args!(
            "this inbox is served by the git hooks at {top} (recorded as {})",
            crate::printer::untrusted_short(rel, 200)
        )),
        hooks::Serving::Skipped { rel, why } => p.line(format_args!(
            "NOT SERVING this inbox: it is recorded at {top} as {}, and skipped: {why} (`aea doctor` says more)",
            crate::printer::untrusted_short(rel, 200)
        )),
        hooks::Serving::NotRecorded { .. } => p.line(format_args!(
            "NOT SERVING this inbox: git runs hooks at {top}, and this inbox is not recorded there (`aea hooks install` here records it)"
        )),
        hooks::Serving::CannotSee { root } => p.line(format_args!(
            "NOT SERVING this inbox: git runs hooks at {}, which cannot see {}",
            root.display(),
            mailbox.dir().display()
        )),
    }
    p.line(format_args!(
        "git runs hooks from {} ({source})",
        dirs.active.display()
    ));
    for row in &rows {
        p.line(format_args!("  {:<14} {}", row.hook, row.state.label()));
    }
    match &served {
        Err(e) => p.line(format_args!(
            "the record of the inboxes below the top is unsound: {} (`aea doctor` says how to fix it)",
            crate::error::one_line(e)
        )),
        Ok(_) if recorded.is_empty() => {}
        Ok(_) => {
            p.line("inboxes below the top they serve:");
            for r in &recorded {
                p.line(format_args!(
                    "  {}{}",
                    crate::printer::untrusted_short(&r.path, 200),
                    r.skipped
                        .as_ref()
                        .map(|why| format!(" (skipped: {why})"))
                        .unwrap_or_default()
                ));
            }
        }
    }
    if agents.is_empty() {
        ctx.printer
            .line("agent harnesses: none installed (`aea hooks install --agents` adds them)");
    }
    for a in &agents {
        if a.problems.is_empty() {
            let ran = match (&a.last_run, harness::hook_runs::hooks_of(a.agent)) {
                (Some(run), _) => format!(
                    ", hooks last ran {} with {}",
                    run.at.format("%Y-%m-%d %H:%M UTC"),
                    harness::hook_runs::reaches(run)
                        .map_or_else(|| "?".to_string(), |p| p.display().to_string())
                ),
                (None, Some(_)) => ", hooks never ran here yet".to_string(),
                (None, None) => String::new(),
            };
            ctx.printer
                .line(format_args!("  {:<14} installed{ran}", a.agent.as_str()));
        } else {
            ctx.printer.line(format_args!(
                "  {:<14} {}",
                a.agent.as_str(),
                a.problems.join("; ")
            ));
        }
    }
    if agents.iter().any(|a| !a.problems.is_empty()) {
        p.line(
            "run `aea hooks install --agents` to put aea's harness files back as aea writes them",
        );
    }
    // Only a command that then does it: `hooks install` refuses a global
    // hooks folder without --force, a hook it cannot move aside, and hooks
    // in another work tree.
    let wanted = rows.iter().any(|r| r.state != State::Installed)
        || matches!(serving, hooks::Serving::NotRecorded { .. });
    let conflicts = hooks::conflicts(&dirs.active);
    if !wanted || matches!(serving, hooks::Serving::CannotSee { .. }) {
        // Nothing to do, or nothing `hooks install` would do here.
    } else if let Some(orig) = conflicts.first() {
        p.line(format_args!(
            "move {} aside by hand, then run `aea hooks install`",
            orig.display()
        ));
    } else if dirs.source == HooksPathSource::Inherited {
        p.line("run `aea hooks install --force` to install them there, for every repository of yours (or give this repository its own: `git config core.hooksPath .git/hooks`, then `aea hooks install`)");
    } else {
        p.line("run `aea hooks install` to install or update them");
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

/// One inbox a hook runs for, and how its lines name it.
struct Inbox {
    mailbox: Mailbox,
    /// The context of its own repository (its pinned keys), with the
    /// commit's index.
    ctx: Context,
    /// `aea:` for the top's inbox, `aea: packages/ui:` for one below it.
    tag: String,
    /// Its `.aea/` as a command run at the top names it.
    aea: String,
    /// `aea`, or `aea -C packages/ui` for an inbox below the top: how a
    /// command run at the top reaches it.
    cmd: String,
}

impl Inbox {
    /// The inbox of the repository at `repo`, as a hook reads it: verified
    /// like every listing, so that a replay is set aside here too; taken
    /// over a bounded step at a time from an older aea's layout; reading at
    /// most [`crate::mailbox::HOOK_READ_CAP`] files.
    fn open(repo: Option<&Path>, rel: Option<&str>, ctx: &Context) -> Option<Inbox> {
        let mailbox = match repo {
            Some(repo) => Mailbox::at(repo),
            None => Mailbox::discover(&ctx.cwd),
        };
        let mailbox = mailbox.ok()?.owned();
        let mut own = ctx.for_repo(mailbox.repo().to_path_buf());
        own.git_index_file.clone_from(&ctx.git_index_file);
        let mailbox = mailbox
            .verified_by(own.keyring())
            .signed_off_by(own.signoff())
            .audited_by(std::rc::Rc::new(own.rt.clone()));
        if crate::migrate::needed(&mailbox) {
            let _ = own.take_over(&mailbox, Some(super::context::TAKE_OVER_HOOK_STEP));
        }
        let (tag, aea, cmd) = match rel {
            None => ("aea:".to_string(), ".aea/".to_string(), "aea".to_string()),
            Some(rel) => (
                format!("aea: {}:", crate::printer::untrusted_short(rel, 120)),
                crate::printer::shell_quote(&format!("{rel}/.aea/")),
                format!("aea -C {}", crate::printer::shell_quote(rel)),
            ),
        };
        Some(Inbox {
            mailbox: mailbox.capped(crate::mailbox::HOOK_READ_CAP),
            ctx: own,
            tag,
            aea,
            cmd,
        })
    }
}

/// What a hook does (SPEC §9): pre-commit summarises waiting mail and blocks
/// where the policy says; post-* hooks report mail that arrived since their
/// last report and never fail. Counts and aea's own short references only:
/// never message text, ids or file names, which the sender chose.
///
/// Git runs hooks at the top of the work tree: they run for the inbox
/// there, if any, and for each inbox below it that this user recorded
/// ([`crate::served`]) — each decided by its own policy, the commit
/// blocked if any blocks, each line naming the inbox by its path from the
/// top. Never for a `.aea/` found by looking: a pull can put one anywhere.
fn run_hook(args: &HooksRunArgs, ctx: &Context) -> Result<ExitCode> {
    let cwd = std::fs::canonicalize(&ctx.cwd).unwrap_or_else(|_| ctx.cwd.clone());
    let served = crate::served::of(&cwd);
    // In a work tree, its top's own inbox; elsewhere (no git) the nearest.
    let top = match &served {
        Ok(Some(s)) => Some(s.tree.top().to_path_buf()),
        _ => crate::layout::WorkTree::of(&cwd).map(|t| t.top().to_path_buf()),
    };
    let root = match &top {
        Some(top) if std::fs::symlink_metadata(top.join(crate::layout::AEA_DIR)).is_ok() => {
            let root = Inbox::open(Some(top), None, ctx);
            if root.is_none() && args.hook != GitHook::PreCommit {
                let state = crate::layout::Layout::of(top).state().to_path_buf();
                if let Some(replaced) = listing::Replaced::at(top, &state) {
                    say_lost("aea:", &replaced.lost, &replaced.why(), ctx);
                }
            }
            root
        }
        Some(_) => None,
        None => Inbox::open(None, None, ctx),
    };
    let mut refused = false;
    if let Some(root) = &root {
        refused |= run_one(args.hook, root)? == ExitCode::Refused;
    }
    let served = match served {
        Ok(served) => served,
        Err(e) => {
            ctx.printer.err_line(format_args!(
                "aea: the record of the inboxes below the top that these hooks serve is unsound: {}; run `aea doctor`",
                crate::error::one_line(&e)
            ));
            if args.hook == GitHook::PreCommit {
                ctx.printer.err_line("aea: commit blocked: the inboxes it names cannot be checked. To commit anyway: `git commit --no-verify`, or `AEA_SKIP_HOOKS=1 git commit` to skip only aea's check.");
                return Ok(ExitCode::Refused);
            }
            None
        }
    };
    for entry in served.iter().flat_map(|s| &s.entries) {
        let Some(why) = &entry.skipped else {
            let repo = served.as_ref().map(|s| s.tree.top().join(&entry.rel));
            let Some(inbox) = Inbox::open(repo.as_deref(), Some(&entry.rel), ctx) else {
                continue;
            };
            match run_one(args.hook, &inbox) {
                Ok(code) => refused |= code == ExitCode::Refused,
                // Its error is its own: the other inboxes are still
                // decided, and a gate that cannot decide holds.
                Err(e) => {
                    ctx.printer.err_line(format_args!(
                        "{} {}; run `aea doctor` there",
                        inbox.tag,
                        crate::error::one_line(&e)
                    ));
                    refused |= args.hook == GitHook::PreCommit;
                }
            }
            continue;
        };
        // Gone is only gone (`aea doctor` says so); anything else in its
        // place may be a pull's doing, and is said every time.
        let tag = format!("aea: {}:", crate::printer::untrusted_short(&entry.rel, 120));
        if *why != crate::served::Skip::Gone {
            ctx.printer
                .err_line(format_args!("{tag} skipped: {why}; see `aea doctor`"));
        }
        // What waited there went with the folder git replaced or removed.
        if args.hook != GitHook::PreCommit
            && !matches!(why, crate::served::Skip::NotYours { .. })
            && let Some(served) = &served
        {
            let state = served.tree.inbox_state(Path::new(&entry.rel));
            let why = format!("{why}, and git deleted what its .aea/ held");
            say_lost(&tag, &crate::mailbox::lost_with_inbox(&state), &why, ctx);
        }
    }
    Ok(if refused {
        ExitCode::Refused
    } else {
        ExitCode::Success
    })
}

/// One line on mail that waited in an inbox and is gone without aea
/// processing it, when there is any.
fn say_lost(tag: &str, lost: &[crate::mailbox::Vanished], why: &str, ctx: &Context) {
    if !lost.is_empty() {
        ctx.printer
            .err_line(format_args!("{tag} {}", listing::lost_line(lost, why)));
    }
}

/// `hook` for one inbox.
fn run_one(hook: GitHook, inbox: &Inbox) -> Result<ExitCode> {
    match hook {
        GitHook::PreCommit => pre_commit(inbox),
        hook => {
            sync_if_asked(&inbox.mailbox, hook, &inbox.ctx);
            announce(inbox, hook)
        }
    }
}

/// post-merge, post-checkout, post-rewrite: one line about mail new since
/// the last announcement. Never fails the git command.
fn announce(inbox: &Inbox, hook: GitHook) -> Result<ExitCode> {
    let (mailbox, ctx) = (&inbox.mailbox, &inbox.ctx);
    let report = listing::unprocessed_report(mailbox, ctx, true, |warn| {
        crate::judge::Judge::load(mailbox, ctx.keyring(), warn)
    })?;
    let unread = listing::unread(&report);
    let hooks = mailbox
        .config()
        .map(|c| c.hooks.clone())
        .unwrap_or_default();
    if setting(&hooks, hook).enabled == Some(false) {
        return Ok(ExitCode::Success);
    }
    vanished_since(inbox);
    if unread.is_empty() {
        return Ok(ExitCode::Success);
    }
    let p = &ctx.printer;
    let current: HashSet<String> = unread.iter().map(|u| u.name.clone()).collect();
    let announced = mailbox.announcements().announced("git");
    let new: Vec<String> = unread
        .iter()
        .filter(|u| !announced.contains(&u.name))
        .map(|u| {
            if u.valid {
                u.short_ref.clone()
            } else {
                format!("{} invalid", u.short_ref)
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
            "{} {} new message{} ({}); {} unprocessed in all. Run `{} check`.",
            inbox.tag,
            new.len(),
            if new.len() == 1 { "" } else { "s" },
            crate::reminder::some_refs(&new),
            unread.len(),
            inbox.cmd
        ));
    }
    Ok(ExitCode::Success)
}

/// Mail noted as gone from `.aea/` without aea processing it (a checkout
/// or pull that replaced the folder and put it back), said once by the
/// git hooks: `aea doctor` names it until a person looked.
fn vanished_since(inbox: &Inbox) {
    let vanished = inbox.mailbox.inbox().vanished();
    if vanished.is_empty() {
        return;
    }
    let announcements = inbox.mailbox.announcements();
    let said = announcements.announced(VANISHED_CHANNEL);
    let now: HashSet<String> = vanished.iter().map(|v| v.file.clone()).collect();
    if now.is_subset(&said) {
        return;
    }
    say_lost(
        &inbox.tag,
        &vanished,
        "a checkout or pull that replaced .aea/ deleted what git ignores there (`aea doctor` lists them)",
        &inbox.ctx,
    );
    let _ = announcements.set_announced(VANISHED_CHANNEL, &now);
}

/// The channel under which the git hooks remember which vanished mail
/// they said.
const VANISHED_CHANNEL: &str = "git-vanished";

/// The gate: a count line, and a refusal where `hooks.pre_commit.block_on`
/// says. It fails closed: a config it cannot read or compile blocks the
/// commit, whatever the inbox holds, until it is fixed.
fn pre_commit(inbox: &Inbox) -> Result<ExitCode> {
    let (mailbox, ctx, tag, cmd) = (&inbox.mailbox, &inbox.ctx, &inbox.tag, &inbox.cmd);
    let p = &ctx.printer;
    let staged = hook_gate::staged_state(mailbox.dir(), ctx.git_index_file.as_deref());
    if !staged.is_empty() {
        let shown: Vec<String> = staged
            .iter()
            .take(5)
            .map(|rel| crate::printer::untrusted_short(rel, 80))
            .collect();
        p.err_line(format_args!(
            "{tag} commit blocked: {} file(s) of this machine's .aea/ are staged ({}{}): received mail, markers and the log never belong in a commit.",
            staged.len(),
            shown.join(", "),
            if staged.len() > shown.len() { ", …" } else { "" }
        ));
        p.err_line(format_args!("{tag} unstage them with `git reset -q -- {}` (the files stay), then make .aea/.gitignore start with `*` again (`{cmd} doctor` checks it).", inbox.aea));
        return Ok(ExitCode::Refused);
    }
    // A report remembered without a warning was worked out from this very
    // config (its stamp is part of the memo), which compiled then: it needs
    // no second compile on every commit.
    if let Some(report) = listing::remembered_clean(mailbox, ctx)? {
        let hooks = &mailbox.config()?.hooks;
        let code = gate(&report, &setting(hooks, GitHook::PreCommit), inbox);
        // Nothing staged, nothing waiting: the next commit need not start
        // aea again (a listing worked out anew marks it itself).
        if code == ExitCode::Success {
            listing::renew_quiet(mailbox, ctx);
        }
        return Ok(code);
    }
    let path = mailbox.layout().shared(crate::layout::Shared::Config);
    let checked = match mailbox
        .config()
        .and_then(|c| crate::policy::Checked::compile(c.clone(), &path))
    {
        Ok(checked) => checked,
        Err(e) => {
            p.err_line(format_args!(
                "{tag} commit blocked: {}",
                crate::error::one_line(&e)
            ));
            if let Some(hint) = crate::hints::hint(&e) {
                p.err_line(format_args!(
                    "{tag} fix: {hint}; `aea validate` shows the problem"
                ));
            }
            p.err_line(format_args!("{tag} {BYPASS}"));
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
    Ok(gate(&report, &setting, inbox))
}

/// The way past a refusal, said after each.
const BYPASS: &str = "to commit anyway: `git commit --no-verify`, or `AEA_SKIP_HOOKS=1 git commit` to skip only aea's check.";

/// The count line and the refusal of the pre-commit hook for `report`.
fn gate(report: &listing::Report, setting: &crate::config::HookConfig, inbox: &Inbox) -> ExitCode {
    let (p, tag, cmd) = (&inbox.ctx.printer, &inbox.tag, &inbox.cmd);
    if setting.enabled == Some(false) {
        return ExitCode::Success;
    }
    if report.not_read > 0 {
        // A flood: what the unread files hold is unknown, so the gate
        // cannot say nothing urgent waits. It fails closed.
        p.err_line(format_args!(
            "{tag} commit blocked: {} files in .aea/ were not read (a hook reads {} at most): the gate cannot tell what waits.",
            report.not_read,
            crate::mailbox::HOOK_READ_CAP
        ));
        p.err_line(format_args!("{tag} run `{cmd} check` (it reads them all and remembers the invalid ones), then `{cmd} gc` to move invalid files aside."));
        p.err_line(format_args!("{tag} {BYPASS}"));
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
        "{tag} {} unprocessed message{}{}. Run `{cmd} check`.",
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
        "{tag} commit blocked: {} waiting for a person's approval (`{cmd} pending`, then `{cmd} approve` or `{cmd} reject`).",
        crate::reminder::some_refs(&blocking)
    ));
    p.err_line(format_args!("{tag} {BYPASS}"));
    ExitCode::Refused
}
