//! `aea doctor` (SPEC §9): checks the whole installation and prints the
//! exact fix for each problem. Exit 6 when something needs attention.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::context::Context;
use super::listing::{Replaced, lost_line};
use crate::bridge::transfer::ProtocolFiles;
use crate::cli::DoctorArgs;
use crate::error::{Error, ExitCode, Result};
use crate::harness;
use crate::health;
use crate::hooks::{self, GitHook, State};
use crate::housekeeping;
use crate::layout::{Layout, Private, Shared};
use crate::mailbox::Mailbox;
use crate::printer::shell_quote;
use crate::recovery;
use crate::registry::Registry;
use crate::repo::{self, HooksPathSource};

/// `aea doctor --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct DoctorOutput<'a> {
    /// What `--fix` finished before the checks ran (empty without it).
    pub fixed: &'a [String],
    /// How many checks failed; 0 when all is well. A warning is not
    /// counted.
    pub problems: usize,
    pub checks: &'a [Finding],
}

#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct Finding {
    check: &'static str,
    ok: bool,
    /// Not ok, and still no problem: something only a person can do that
    /// aea cannot do for them (a harness's own trust gate, closed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    warning: bool,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

/// State an older aea kept inside `.aea/` ([`health::old_state`]).
fn old_state(layout: &Layout) -> Finding {
    let found = health::old_state(layout);
    Finding::new(
        "old state",
        (!found.is_empty()).then(|| {
            (
                format!(
                    "in .aea/, never read: {} (state of an older aea, or put there by a commit or a pull; aea keeps its state in {})",
                    found.join(", "),
                    layout.state().display()
                ),
                format!(
                    "look at them, then remove them: cd {} && rm -r {}",
                    shell_quote(&layout.inbox().display().to_string()),
                    found.join(" ")
                ),
            )
        }),
        "no state of an older aea in .aea/",
    )
}

pub(crate) fn run(args: &DoctorArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = match ctx.mailbox() {
        Ok(mailbox) => mailbox,
        // A pull or a checkout put a file or a symlink where `.aea/` was:
        // that is a finding, with what git deleted, not a failure.
        Err(e) => match Replaced::of(ctx) {
            Some(replaced) => return Ok(report(&[], &replaced_inbox(&replaced), ctx)),
            None => return Err(e),
        },
    };
    let repo = mailbox.repo();
    let aea = mailbox.dir();
    let fixed = if args.fix {
        fix(&mailbox, ctx)?
    } else {
        Vec::new()
    };
    let mut out = vec![layout_check(mailbox.layout())];
    let (config_findings, id) = config_checks(aea, repo, ctx);
    out.extend(config_findings);
    out.push(registry(ctx, repo, id.as_deref()));
    out.extend(peer_keys(ctx, id.as_deref()));
    let opted_out = harness::opt_outs(aea);
    out.push(git_hooks(ctx, mailbox.layout(), opted_out.git_hooks));
    out.extend(served_inboxes(mailbox.layout()));
    out.push(harnesses(
        &mailbox,
        &ctx.aea_candidates,
        opted_out.agent_files,
    ));
    out.extend(trust_gates(repo, aea, ctx));
    out.extend(mcp_servers(repo, aea));
    out.extend(state(mailbox.layout()));
    out.push(old_state(mailbox.layout()));
    out.extend(inbox(&mailbox));
    out.extend(unapproved(&mailbox, ctx));
    out.extend(signatures(&mailbox));
    out.extend(processed_unapproved(&mailbox, ctx));
    out.extend(leftovers(&mailbox, ctx.rt.now()));
    out.push(log_history(&mailbox));
    out.extend(ignored(&mailbox));
    out.push(vanished(&mailbox));
    out.extend(half_done(&mailbox, ctx));
    Ok(report(&fixed, &out, ctx))
}

/// `--fix`: finishes what killed processes left half-done (the checks
/// `claims`, `staging`, `sends` and `log`), and says what it did. One
/// repair at a time, under gc's lock: two at once would each keep the
/// same `sent/` copy and write the same lost lines. A second one waits,
/// then finds the work done.
fn fix(mailbox: &Mailbox, ctx: &Context) -> Result<Vec<String>> {
    let aea = mailbox.dir();
    let lock_path = mailbox.private_file(Private::GcLock)?;
    let Some(lock) = crate::fsutil::try_lock_within(&lock_path, housekeeping::LOCK_WAIT)? else {
        return Ok(vec![format!(
            "nothing: another aea gc or doctor --fix held the gc lock for over {}s",
            housekeeping::LOCK_WAIT.as_secs()
        )]);
    };
    crate::fsutil::require_owner(&lock, &lock_path, mailbox.owner())?;
    let now = ctx.rt.now();
    let mut fixed = Vec::new();
    // What an older aea kept in `.aea/` is taken over, all that is left.
    if crate::migrate::needed(mailbox) {
        let record = ctx.take_over(mailbox, None)?;
        fixed.push(format!(
            "took this inbox over from the layout of an older aea ({} processed message(s) moved to the private state)",
            record.processed
        ));
    }
    let gone = mailbox.inbox().vanished();
    if !gone.is_empty() {
        mailbox.inbox().forget_vanished();
        fixed.push(format!(
            "forgot {} message(s) noted as vanished: {}",
            gone.len(),
            gone.iter()
                .map(crate::mailbox::Vanished::short_ref)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for name in health::stale_claims(mailbox, now) {
        mailbox.records().drop_stale_claim(&name, now);
        fixed.push(format!("removed the stale claim on {name}"));
    }
    for path in health::old_staging(mailbox, now) {
        if fs::remove_file(&path).is_ok() {
            fixed.push(format!("removed {}", path.display()));
        }
    }
    // What cannot be looked at (an unsound `.sent-keys/`, say) is left
    // to the checks below, which name it with its fix.
    if let Ok(id) = mailbox.agent_id() {
        let key = own_key(ctx, &id);
        let sends = recovery::interrupted_sends(mailbox, &id, key.as_ref(), now, &ProtocolFiles);
        for send in sends.unwrap_or_default() {
            fixed.push(recovery::finish_send(
                mailbox,
                &id,
                key.as_ref(),
                &send,
                &ctx.rt,
                &ProtocolFiles,
            )?);
        }
    }
    // Hook files an older aea wrote with this machine's path are rewritten.
    let installed = harness::installed(aea);
    if let Some(exe) = ctx.exe.as_deref()
        && !installed.is_empty()
        && !harness::problems(mailbox, &ctx.aea_candidates).is_empty()
    {
        let (files, _) = harness::install(mailbox.repo(), aea, &installed)?;
        for rel in harness::shims::install(aea, exe)? {
            fixed.push(format!("rewrote .aea/{rel}"));
        }
        fixed.extend(
            files
                .iter()
                .map(|f| format!("rewrote aea's entries in {f}")),
        );
    }
    // A recorded inbox the git hooks skip serves nothing: forgetting it
    // opens no gate.
    if let Ok(Some(served)) = crate::served::of(mailbox.repo()) {
        for (rel, why) in served.skipped() {
            if crate::served::forget(&served.tree, rel)? {
                fixed.push(format!(
                    "forgot the inbox {} below the top of the work tree ({why})",
                    crate::printer::untrusted_short(rel, 200)
                ));
            }
        }
    }
    let lines = recovery::missing_log_lines(mailbox, &ctx.rt).unwrap_or_default();
    for line in &lines {
        mailbox.log(line)?;
    }
    if !lines.is_empty() {
        fixed.push(format!(
            "wrote {} log line(s) a kill had cut off, marked \"repaired\"",
            lines.len()
        ));
    }
    Ok(fixed)
}

/// The public key that signs what agent `id` sends, on this machine.
fn own_key(ctx: &Context, id: &str) -> Option<ed25519_dalek::VerifyingKey> {
    ctx.signing_key(id).ok().map(|k| k.verifying_key())
}

/// Sends interrupted mid-way, and log lines a kill cut off.
fn half_done(mailbox: &Mailbox, ctx: &Context) -> Vec<Finding> {
    let now = ctx.rt.now();
    // Where unsound state (reported above) stops the looking, these
    // checks say so rather than "ok".
    let not_checked = |e: &Error| {
        (
            format!("not checked: {}", crate::error::one_line(e)),
            crate::hints::hint(e).unwrap_or_else(|| "fix the state named above".to_string()),
        )
    };
    let sends = match mailbox.agent_id() {
        Ok(id) => recovery::interrupted_sends(
            mailbox,
            &id,
            own_key(ctx, &id).as_ref(),
            now,
            &ProtocolFiles,
        ),
        Err(_) => Ok(Vec::new()),
    };
    let sends = Finding::new(
        "sends",
        match sends {
            Err(e) => Some(not_checked(&e)),
            Ok(sends) if sends.is_empty() => None,
            Ok(sends) => Some((
                format!(
                    "interrupted: {}",
                    sends
                        .iter()
                        .map(recovery::Interrupted::describe)
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
                "run the same `aea send` again within 24 hours of its start (it reuses the id and reaches only who is missing), or `aea doctor --fix` (keeps the sent/ copy of what was delivered)".to_string(),
            )),
        },
        "no interrupted sends",
    );
    let log = Finding::new(
        "log",
        match recovery::missing_log_lines(mailbox, &ctx.rt) {
            Err(e) => Some(not_checked(&e)),
            Ok(lines) if lines.is_empty() => None,
            Ok(lines) => Some((
                format!("{} operation(s) with no log line (a process killed after the work, before the line)", lines.len()),
                "aea doctor --fix (writes them from the markers, inbox and sent/ copies, marked \"repaired\")".to_string(),
            )),
        },
        "every marker, delivery and sent/ copy has its log line",
    );
    vec![sends, log]
}

impl Finding {
    /// `ok` when there is no problem, else the problem and its fix.
    fn new(check: &'static str, problem: Option<(String, String)>, ok: &str) -> Self {
        match problem {
            None => Finding {
                check,
                ok: true,
                warning: false,
                detail: ok.to_string(),
                fix: None,
            },
            Some((detail, fix)) => Finding {
                check,
                ok: false,
                warning: false,
                detail,
                fix: Some(fix),
            },
        }
    }

    /// [`Finding::new`] whose problem is a warning: said, not counted.
    fn warning(check: &'static str, problem: Option<(String, String)>, ok: &str) -> Self {
        let mut finding = Finding::new(check, problem, ok);
        finding.warning = !finding.ok;
        finding
    }
}

fn layout_check(layout: &Layout) -> Finding {
    let missing = health::missing_folders(layout);
    if let Some(before) = layout.state_before_git() {
        return Finding::new(
            "layout",
            Some((
                format!(
                    "the private state of this inbox from before its folder became a git repository is still at {}, on another file system",
                    before.display()
                ),
                format!(
                    "mv {} {}   (when no aea command runs here)",
                    shell_quote(&before.display().to_string()),
                    shell_quote(&layout.state().display().to_string())
                ),
            )),
            "",
        );
    }
    Finding::new(
        "layout",
        (!missing.is_empty()).then(|| {
            (
                format!("missing: {}", missing.join(", ")),
                "aea init".to_string(),
            )
        }),
        "all folders of .aea/ and the private state present",
    )
}

/// The config as every command reads it, and what in it waits for `aea
/// trust`. Also returns the agent id, when the config has one.
fn config_checks(aea: &Path, repo: &Path, ctx: &Context) -> (Vec<Finding>, Option<String>) {
    let config_path = crate::layout::config_file(aea);
    let health::ConfigHealth {
        id: parsed,
        untrusted,
    } = health::config_health(&config_path, repo, ctx.trust_store());
    let id = parsed.as_ref().ok().cloned().flatten();
    let config = Finding::new(
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
    let trust = Finding::new(
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
    (vec![config, trust], id)
}

fn registry(ctx: &Context, repo: &Path, id: Option<&str>) -> Finding {
    match (ctx.registry(), id) {
        (Some(path), Some(id)) => {
            let problem = health::registry_problem(path, repo, id).unwrap_or_else(|e| {
                Some((
                    crate::error::one_line(&e),
                    crate::hints::hint(&e).unwrap_or_default(),
                ))
            });
            Finding::new("registry", problem, "registered under this path")
        }
        // The id comes from the config, reported above when it does not
        // read: nothing to check the registry against until it does.
        (Some(_), None) => Finding::new(
            "registry",
            None,
            "not checked: the config above names no agent it can be checked for",
        ),
        (None, _) => Finding::new(
            "registry",
            Some((
                "no registry available".into(),
                "set HOME (or XDG_CONFIG_HOME), or AEA_REGISTRY to a file path".into(),
            )),
            "",
        ),
    }
}

/// Peers whose mail does not verify as their repository would have it
/// ([`health::peer_key_problems`]).
fn peer_keys(ctx: &Context, own: Option<&str>) -> Vec<Finding> {
    // A registry that does not read is the `registry` check's to report.
    let Some(registry) = ctx.registry().and_then(|p| Registry::load(p).ok()) else {
        return Vec::new();
    };
    let found = health::peer_key_problems(&registry, own);
    if found.is_empty() {
        return vec![Finding::new(
            "peer keys",
            None,
            "every peer registered by path has the key its repository publishes pinned",
        )];
    }
    found
        .into_iter()
        .map(|problem| Finding::new("peer keys", Some(problem), ""))
        .collect()
}

fn git_hooks(ctx: &Context, layout: &Layout, opted_out: bool) -> Finding {
    match repo::hook_dirs(layout.repo()) {
        Err(Error::NotAGitRepository { .. }) => {
            Finding::new("git hooks", None, "not a git repository: none needed")
        }
        Err(e) => Finding::new(
            "git hooks",
            Some((
                crate::error::one_line(&e),
                crate::hints::hint(&e).unwrap_or_default(),
            )),
            "",
        ),
        Ok(dirs) if dirs.source == HooksPathSource::Inherited => Finding::new(
            "git hooks",
            Some((
                format!(
                    "core.hooksPath is set globally to {}",
                    dirs.active.display()
                ),
                crate::hints::hint(&Error::HooksPathInherited { path: dirs.active })
                    .unwrap_or_default(),
            )),
            "",
        ),
        Ok(dirs) if dirs.runs_elsewhere_than(layout.repo()).is_some() => {
            let served = crate::served::of(layout.repo()).ok().flatten();
            match hooks::serving(layout, &dirs, served.as_ref()) {
                hooks::Serving::FromTop { rel } => hook_states(
                    ctx,
                    &dirs,
                    false,
                    &format!(
                        "all four hooks installed and current at {}, serving this inbox as {}",
                        dirs.workdir.as_deref().unwrap_or(Path::new("?")).display(),
                        crate::printer::untrusted_short(&rel, 200)
                    ),
                ),
                hooks::Serving::NotRecorded { .. } if opted_out => Finding::new(
                    "git hooks",
                    None,
                    "skipped by choice (init --no-git-hooks; `aea init --git-hooks` installs them)",
                ),
                hooks::Serving::NotRecorded { .. } => Finding::new(
                    "git hooks",
                    Some((
                        format!(
                            "git runs hooks at {}, and this inbox is not recorded there: they do not serve it",
                            dirs.workdir.as_deref().unwrap_or(Path::new("?")).display()
                        ),
                        "aea hooks install".to_string(),
                    )),
                    "",
                ),
                hooks::Serving::Skipped { why, .. } => Finding::new(
                    "git hooks",
                    Some((
                        format!("recorded at the top of the work tree, but skipped: {why}"),
                        "look at what is in the inbox's place; `aea hooks install` here records it again once it is a real folder of yours".to_string(),
                    )),
                    "",
                ),
                hooks::Serving::Here | hooks::Serving::CannotSee { .. } => {
                    let why = Error::HooksCannotSee {
                        root: dirs.workdir.clone().unwrap_or_default(),
                        repo: layout.repo().to_path_buf(),
                    };
                    Finding::new(
                        "git hooks",
                        Some((
                            why.to_string(),
                            crate::hints::hint(&why).unwrap_or_default(),
                        )),
                        "",
                    )
                }
            }
        }
        Ok(dirs) => hook_states(
            ctx,
            &dirs,
            opted_out,
            "all four hooks installed and current",
        ),
    }
}

/// The state of the four hooks where git runs them.
fn hook_states(ctx: &Context, dirs: &repo::HookDirs, opted_out: bool, ok: &str) -> Finding {
    let binary = ctx.exe.clone().unwrap_or_default();
    let bad: Vec<String> = GitHook::ALL
        .iter()
        .map(|&h| (h, hooks::state(h, &dirs.active, &dirs.default, &binary)))
        .filter(|(_, s)| *s != State::Installed)
        .map(|(h, s)| format!("{h} {}", s.label()))
        .collect();
    // `hooks install` refuses to move a foreign hook aside over an
    // earlier one: the fix says what to do first.
    let conflicts = hooks::conflicts(&dirs.active);
    if opted_out && bad.len() == GitHook::ALL.len() && conflicts.is_empty() {
        return Finding::new(
            "git hooks",
            None,
            "skipped by choice (init --no-git-hooks; `aea init --git-hooks` installs them)",
        );
    }
    let fix = match conflicts.first() {
        Some(orig) => format!(
            "move {} aside by hand, then run `aea hooks install`",
            orig.display()
        ),
        None => "aea hooks install".to_string(),
    };
    Finding::new(
        "git hooks",
        (!bad.is_empty()).then(|| (bad.join(", "), fix)),
        ok,
    )
}

/// The inboxes below the top of the work tree recorded as served by its
/// git hooks: each one skipped (gone, a symlink or something else in its
/// place, another user's) is named. Nothing outside git or without any.
fn served_inboxes(layout: &Layout) -> Option<Finding> {
    let served = match crate::served::of(layout.repo()) {
        Ok(Some(served)) if !served.entries.is_empty() => served,
        Ok(_) => return None,
        Err(e) => {
            return Some(Finding::new(
                "served inboxes",
                Some((
                    format!(
                        "the record of the inboxes below the top that the git hooks serve is unsound: {}",
                        crate::error::one_line(&e)
                    ),
                    crate::hints::hint(&e).unwrap_or_else(|| {
                        "remove it; `aea hooks install` in each package inbox records it again"
                            .to_string()
                    }),
                )),
                "",
            ));
        }
    };
    let skipped: Vec<String> = served
        .skipped()
        .map(|(rel, why)| {
            format!(
                "{} skipped: {why}",
                crate::printer::untrusted_short(rel, 200)
            )
        })
        .collect();
    let all: Vec<String> = served.entries.iter().map(|e| e.rel.clone()).collect();
    Some(Finding::new(
        "served inboxes",
        (!skipped.is_empty()).then(|| {
            (
                format!("{} (recorded in {})", skipped.join("; "), served.tree.served_file().display()),
                "look at what is in their place; `aea doctor --fix` forgets them (`aea init` in one records it again)".to_string(),
            )
        }),
        &format!(
            "the git hooks at {} also serve {}",
            served.tree.top().display(),
            crate::served::names(&all)
        ),
    ))
}

/// Each installed harness's files in place, and its hooks calling an aea
/// that runs (SPEC §16).
fn harnesses(mailbox: &Mailbox, candidates: &[PathBuf], opted_out: bool) -> Finding {
    let installed = harness::installed(mailbox.dir());
    if opted_out && installed.is_empty() {
        return Finding::new(
            "harnesses",
            None,
            "skipped by choice (init --no-agent-files; `aea init --agent-files` writes them)",
        );
    }
    let problems = harness::problems(mailbox, candidates);
    let names: Vec<&str> = installed.iter().map(|a| a.as_str()).collect();
    Finding::new(
        "harnesses",
        if installed.is_empty() {
            Some((
                "no agent harness is told about new mail".to_string(),
                "aea hooks install --agents".to_string(),
            ))
        } else {
            problems.first().map(|p| {
                (
                    problems
                        .iter()
                        .map(|p| format!("{}: {}", p.agent, p.detail))
                        .collect::<Vec<_>>()
                        .join("; "),
                    p.fix.clone(),
                )
            })
        },
        &format!(
            "{}: files in place, hooks find an aea here{}",
            names.join(", "),
            hook_runs(mailbox, &installed),
        ),
    )
}

/// When each installed harness's hooks last ran here, and which aea they
/// ran: a harness whose hooks never ran has not started here yet, or its
/// trust gate is still closed.
fn hook_runs(mailbox: &Mailbox, installed: &[harness::Agent]) -> String {
    let runs: Vec<String> = installed
        .iter()
        .filter(|a| harness::hook_runs::hooks_of(**a).is_some())
        .map(|a| match harness::hook_runs::last(mailbox, *a) {
            Some(run) => format!(
                "{a} {} ({})",
                run.at.format("%Y-%m-%d %H:%M UTC"),
                harness::hook_runs::reaches(&run)
                    .map_or_else(|| "no aea now".to_string(), |p| p.display().to_string())
            ),
            None => format!("{a} never"),
        })
        .collect();
    if runs.is_empty() {
        return String::new();
    }
    format!("; hooks last ran: {}", runs.join(", "))
}

/// Each installed harness's own trust gate (SPEC §16), as its own files
/// say: until a person opens it, that harness hears of no mail. A closed
/// or unknown gate is a warning, never a problem: only a person may open
/// it, and aea may not know every way they did.
fn trust_gates(repo: &Path, aea: &Path, ctx: &Context) -> Vec<Finding> {
    harness::trust::gates(repo, &harness::installed(aea), &ctx.harness_homes)
        .into_iter()
        .map(|gate| {
            let step = gate.step.clone().unwrap_or_default();
            let detail = match gate.gate {
                harness::trust::Gate::Open => None,
                harness::trust::Gate::Closed => Some(format!(
                    "{}: trust gate closed ({}); {}",
                    gate.harness,
                    gate.reason,
                    if gate.harness == harness::Agent::Claude {
                        "until it opens the agent asks before each `aea` command"
                    } else {
                        "until it opens it hears of no mail"
                    }
                )),
                harness::trust::Gate::Unknown => Some(format!(
                    "{}: aea cannot tell whether its trust gate is open ({})",
                    gate.harness, gate.reason
                )),
            };
            Finding::warning("trust gate", detail.map(|d| (d, step)), &gate.line())
        })
        .collect()
}

/// Each installed harness's project MCP file naming `aea mcp` (SPEC §18)
/// and, where the harness asks a person before it starts a project's
/// server, the step: a note, not a problem (the files themselves are
/// checked with the harness's other files).
fn mcp_servers(repo: &Path, aea: &Path) -> Option<Finding> {
    let installed = harness::installed(aea);
    let mut files = Vec::new();
    let mut steps = Vec::new();
    for agent in installed {
        let own = harness::mcp_files(agent, repo);
        if own.is_empty() {
            continue;
        }
        files.push(format!("{agent} {}", own.join(", ")));
        steps.extend(harness::mcp::approval_step(agent));
    }
    if files.is_empty() {
        return None;
    }
    let mut detail = format!("`aea mcp` in {}", files.join("; "));
    if !steps.is_empty() {
        detail = format!("{detail}; approved by a person first: {}", steps.join("; "));
    }
    Some(Finding::new("mcp servers", None, &detail))
}

fn state(layout: &Layout) -> Vec<Finding> {
    let state = health::state_problems(layout);
    if state.is_empty() {
        return vec![Finding::new(
            "state",
            None,
            "state folders and files are the receiver's, real and regular",
        )];
    }
    state
        .into_iter()
        .map(|problem| Finding::new("state", Some(problem), ""))
        .collect()
}

/// Gated mail processed `done` with no approval that counts now. Said
/// only when there is some.
fn processed_unapproved(mailbox: &Mailbox, ctx: &Context) -> Option<Finding> {
    let judge = ctx.judge(mailbox);
    let list = crate::approval::processed_without_valid_approval(mailbox, &judge).ok()?;
    if list.is_empty() {
        return None;
    }
    Some(Finding::new(
        "processed approvals",
        Some((
            format!(
                "{} gated message(s) processed without an approval that counts now: {}",
                list.len(),
                list.join(", ")
            ),
            "aea never processes gated mail `done` without one: it was aea run with another approver list, config folder or policy, an older aea, or state written by hand — or the approval came before signatures were required; `aea log --message <file>` shows who approved and processed it".to_string(),
        )),
        "",
    ))
}

/// Signed approvals (SPEC §19): said only where they are required or an
/// approver list exists.
fn signatures(mailbox: &Mailbox) -> Option<Finding> {
    let required = mailbox.signatures_required();
    let list = mailbox.signoff().approvers().ok();
    if !required && list.is_none_or(|l| l.version == 0 && l.ignored.is_none()) {
        return None;
    }
    let problem = if let Some(why) = mailbox.signatures_unusable() {
        Some((
            why,
            "`aea approvers add NAME --key ~/.ssh/id_ed25519_sk.pub` (a hardware key: see the approvals section of the README)".to_string(),
        ))
    } else {
        list.and_then(|l| l.ignored.clone()).map(|(line, why)| {
            (
                format!("line {line} of the approver list and those after it change nothing: {why}"),
                "nobody with an approver's key wrote it: find what edited your config; the next change an approver signs (`aea approvers`) drops those lines".to_string(),
            )
        })
    };
    // Named with their fingerprints: a list an agent replaced whole
    // shows here as a key that is not yours.
    let ok = list.map_or(String::new(), |l| {
        format!(
            "signatures {}; approvers: {}",
            if required { "required" } else { "not required" },
            l.approvers
                .iter()
                .map(|a| format!("{} {}", a.name, a.fingerprint()))
                .collect::<Vec<_>>()
                .join(", ")
        )
    });
    Some(Finding::new("signatures", problem, &ok))
}

/// Gated mail another tool (the bash AEA's `touch`) marked processed with
/// no approval on record. Said only when there is some: it is not a fault
/// of this repository's state, and a repository without a bash neighbour
/// never sees the line.
fn unapproved(mailbox: &Mailbox, ctx: &Context) -> Option<Finding> {
    let judge = ctx.judge(mailbox);
    let list = crate::approval::processed_without_approval(mailbox, &judge).ok()?;
    if list.is_empty() {
        return None;
    }
    let names: Vec<&str> = list.iter().map(|e| e.name.as_str()).collect();
    Some(Finding::new(
        "approvals",
        Some((
            format!(
                "{} gated message(s) marked processed by another tool without approval: {}",
                list.len(),
                names.join(", ")
            ),
            "check with the person what was done about them (`aea show <file>`); aea never marks gated mail processed without `aea approve`".to_string(),
        )),
        "",
    ))
}

/// Forged and invalid mail, and processed messages replaced since.
fn inbox(mailbox: &Mailbox) -> Vec<Finding> {
    // Where unsound state (reported above) stops the listing, the mail
    // checks say they could not look rather than "ok".
    let health::InboxHealth {
        invalid,
        forged,
        replaced,
    } = match health::inbox(mailbox) {
        Ok(found) => found,
        Err(e) => {
            return vec![Finding::new(
                "inbox",
                Some((
                    format!("not checked, the inbox cannot be listed: {e}"),
                    crate::hints::hint(&e)
                        .unwrap_or_else(|| "fix the state named above".to_string()),
                )),
                "",
            )];
        }
    };
    let identity = Finding::new(
        "identity",
        (!forged.is_empty()).then(|| {
            (
                format!(
                    "{} forged file(s), in a known agent's name without its signature: {}",
                    forged.len(),
                    forged.join(", ")
                ),
                "do not act on them; `aea quarantine` moves them aside with the reason. If the agent's key changed, check its fingerprint with its owner, then `aea agents trust ID`".to_string(),
            )
        }),
        "no forged mail",
    );
    let inbox = Finding::new(
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

    let processed = Finding::new(
        "processed",
        (!replaced.is_empty()).then(|| {
            (
                format!(
                    "replaced after they were processed (their markers are for other bytes): {}",
                    replaced.join(", ")
                ),
                "read each with `aea show <file>`, then `aea process <file>` again (the old marker is kept)".to_string(),
            )
        }),
        "every processed message is the one that was processed",
    );
    vec![identity, inbox, processed]
}

/// Whether `.aea/agent.log` still starts with what the last `doctor` saw
/// of it ([`health::log_rewritten`]).
fn log_history(mailbox: &Mailbox) -> Finding {
    let problem = health::log_rewritten(mailbox).map(|why| {
        (
            why,
            "compare it with your backups or `git log -p .aea/agent.log` if it is tracked; aea decides nothing from the log, and the next `aea doctor` takes it as it is now".to_string(),
        )
    });
    Finding::new(
        "log history",
        problem,
        "agent.log only grew since the last `aea doctor`",
    )
}

/// The findings for an inbox whose `.aea/` is a file or a symlink: what
/// is there, the mail that waited and went with the folder, and the other
/// inboxes the work tree's hooks serve.
fn replaced_inbox(replaced: &Replaced) -> Vec<Finding> {
    let mut out = vec![Finding::new(
        "layout",
        Some((
            format!(
                ".aea is {} (never followed): a pull or a checkout may have put it there",
                replaced.what
            ),
            "see which commit did (`git log --stat -- .aea`), move it aside, then run `aea init` here".to_string(),
        )),
        "",
    )];
    out.push(Finding::new(
        "vanished mail",
        (!replaced.lost.is_empty()).then(|| {
            (
                lost_line(&replaced.lost, &replaced.why()),
                "ask each sender to send again (`aea status` on their side)".to_string(),
            )
        }),
        "no mail waited in it at aea's last listing",
    ));
    out.extend(served_inboxes(&Layout::of(&replaced.repo)));
    out
}

/// Mail that waited and is gone without aea moving it (git deletes the
/// ignored files of a folder it replaces), until `--fix` says a person
/// looked.
fn vanished(mailbox: &Mailbox) -> Finding {
    let gone = mailbox.inbox().vanished();
    Finding::new(
        "vanished mail",
        (!gone.is_empty()).then(|| {
            (
                lost_line(
                    &gone,
                    "a checkout or pull that replaced .aea/ deletes what git ignores there",
                ),
                "ask each sender to send again (`aea status` on their side), then `aea doctor --fix` to forget this list".to_string(),
            )
        }),
        "no waiting mail vanished",
    )
}

/// Whether git ignores what of `.aea/` is this machine's (mail, markers,
/// the log): `.aea/.gitignore` is committed, and a pull can change it. Not
/// said outside git.
fn ignored(mailbox: &Mailbox) -> Option<Finding> {
    let names = [
        "message-20260101T000000000Z-from-x-00000000.json",
        Shared::Log.name(),
        ".processed/message-20260101T000000000Z-from-x-00000000.json",
    ];
    let ignored = crate::repo::ignored_under(mailbox.dir(), &names)?;
    let not: Vec<&str> = names
        .iter()
        .zip(ignored)
        .filter(|(_, ignored)| !ignored)
        .map(|(n, _)| *n)
        .collect();
    Some(Finding::new(
        "ignore rules",
        (!not.is_empty()).then(|| {
            (
                format!(
                    "git does not ignore {} in .aea/: received mail and the log would be committed (and pushed) with `git add -A`",
                    not.join(", ")
                ),
                "make .aea/.gitignore start with a line `*` (then `!.gitignore`, `!agent-config.yaml`, `!prompts/`, `!prompts/**`), as `aea init` writes it, and commit that".to_string(),
            )
        }),
        "git ignores mail, markers and the log in .aea/",
    ))
}

/// Claims and staging files older than anything alive would leave them.
fn leftovers(mailbox: &Mailbox, now: chrono::DateTime<chrono::Utc>) -> Vec<Finding> {
    let stale = health::stale_claims(mailbox, now);
    let claims = Finding::new(
        "claims",
        (!stale.is_empty()).then(|| {
            (
                format!("stale claims: {}", stale.join(", ")),
                "run `aea process <file>` again (stale claims are taken over), or `aea doctor --fix`".to_string(),
            )
        }),
        "no stale claims",
    );
    let leftovers = health::old_staging(mailbox, now);
    let staging = Finding::new(
        "staging",
        (!leftovers.is_empty()).then(|| {
            (
                format!(
                    "{} file(s) left in staging by interrupted writes: {}",
                    leftovers.len(),
                    leftovers
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                "aea doctor --fix".to_string(),
            )
        }),
        "no leftovers from interrupted sends",
    );
    vec![claims, staging]
}

/// Prints the findings; exit 6 when any needs a fix.
fn report(fixed: &[String], out: &[Finding], ctx: &Context) -> ExitCode {
    let problems = out.iter().filter(|f| !f.ok && !f.warning).count();
    if ctx.printer.json() {
        ctx.printer.value(&DoctorOutput {
            fixed,
            problems,
            checks: out,
        });
    } else {
        for line in fixed {
            ctx.printer.line(format_args!("fixed {line}"));
        }
        for f in out {
            if f.ok {
                ctx.printer
                    .line(format_args!("ok    {:<18} {}", f.check, f.detail));
            } else {
                let mark = if f.warning { "WARN" } else { "FIX" };
                ctx.printer
                    .line(format_args!("{mark:<6}{:<18} {}", f.check, f.detail));
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
    if problems == 0 {
        ExitCode::Success
    } else {
        ExitCode::Attention
    }
}
