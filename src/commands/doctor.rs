//! `aea doctor` (SPEC §9): checks the whole installation and prints the
//! exact fix for each problem. Exit 6 when something needs attention.

use std::fs;
use std::path::Path;

use chrono::Duration;
use serde::Serialize;

use super::Context;
use crate::bridge::transfer::ProtocolFiles;
use crate::cli::DoctorArgs;
use crate::error::{Error, ExitCode, Result};
use crate::harness;
use crate::hooks::{self, GitHook, State};
use crate::housekeeping;
use crate::layout::{self, Layout, Private, Shared};
use crate::mailbox::{Mailbox, Processed, SHARED_STATE_DIRS};
use crate::printer::shell_quote;
use crate::recovery;
use crate::registry::{Health, Registry};
use crate::repo::{self, HooksPathSource};

/// `aea doctor --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct DoctorOutput<'a> {
    /// What `--fix` finished before the checks ran (empty without it).
    pub fixed: &'a [String],
    /// How many checks failed; 0 when all is well.
    pub problems: usize,
    pub checks: &'a [Finding],
}

#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct Finding {
    check: &'static str,
    ok: bool,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

/// What is wrong with the receiver's state (SPEC §15.1), each with the
/// exact command that fixes it: state folders (the private state, and the
/// folders of `.aea/` aea writes) that are symlinks, not directories,
/// owned by another user or writable by others; state files that are
/// symlinks, special files or another user's; special files anywhere in
/// `.aea/`; a world-writable `.aea/` that is not sticky.
fn state_problems(layout: &Layout) -> Vec<(String, String)> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let aea = layout.inbox();
    let mut found = Vec::new();
    let Ok(top) = fs::symlink_metadata(aea) else {
        return found;
    };
    let owner = top.uid();
    let shared = top.mode() & 0o1000 != 0;
    // Paths go into commands a person or an agent runs: quoted for the
    // shell, whatever a sender named a file it delivered.
    let shown = |p: &Path| crate::printer::shell_quote(&p.to_string_lossy());
    if top.mode() & 0o022 != 0 && !shared {
        found.push((
            format!("{} is writable by other users but not sticky: they can rename or delete the receiver's state", shown(aea)),
            format!("chmod 1777 {0}   (or `chmod go-w {0}` if no other user sends here)", shown(aea)),
        ));
    }
    let aside =
        |p: &Path, mode: &str| format!("mv {0} {0}.suspect && mkdir -m {mode} {0}", shown(p));
    // The private state may be written by its owner alone; the folders of
    // `.aea/` aea writes by no other user.
    let private = std::iter::once((layout.state().to_path_buf(), 0o022))
        .chain(Private::FOLDERS.iter().map(|p| (layout.private(*p), 0o022)));
    let shared_dirs = SHARED_STATE_DIRS.iter().map(|s| (layout.shared(*s), 0o002));
    for (path, forbidden) in shared_dirs.chain(private) {
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() || !meta.is_dir() {
            found.push((
                format!(
                    "{} is {}, not a real folder: aea does not use it",
                    shown(&path),
                    kind(&meta)
                ),
                aside(&path, "700"),
            ));
            continue;
        }
        if meta.uid() != owner {
            found.push((
                format!("{} belongs to uid {}, not to uid {owner} who owns .aea/: its content is not trusted", shown(&path), meta.uid()),
                format!("{}   (after checking what is in it)", aside(&path, "700")),
            ));
        } else if meta.mode() & forbidden != 0 || (shared && meta.mode() & 0o077 != 0) {
            found.push((
                format!(
                    "{} has mode {:o}: other users can look or write inside",
                    shown(&path),
                    meta.permissions().mode() & 0o7777
                ),
                format!("chmod 700 {}", shown(&path)),
            ));
        }
        if path == layout.state() {
            continue;
        }
        // `accepted/` holds its records as symlinks, never followed (see
        // `mailbox::accepted`): there, anything else is out of place.
        let links = path == layout.private(Private::Accepted);
        for entry in fs::read_dir(&path).into_iter().flatten().flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            let path = entry.path();
            let record = || {
                fs::read_link(&path)
                    .ok()
                    .and_then(|t| t.to_str().map(crate::mailbox::is_accepted_record))
                    .unwrap_or(false)
            };
            if links && (!meta.file_type().is_symlink() || !record()) {
                found.push((
                    format!(
                        "{} is {}: not a record aea wrote (a copy of the mail it stood for would not be known as a replay)",
                        shown(&path),
                        kind(&meta)
                    ),
                    // The next listing starts the missing records again
                    // from the id index.
                    format!(
                        "rm -r {} {}",
                        shown(&path),
                        shown(&layout.private(Private::Accepted).join(".seeded"))
                    ),
                ));
            } else if !links
                && (meta.file_type().is_symlink() || !(meta.is_file() || meta.is_dir()))
            {
                found.push((
                    format!("{} is {}: aea never reads it", shown(&path), kind(&meta)),
                    format!("rm {}", shown(&path)),
                ));
            } else if meta.uid() != owner {
                found.push((
                    format!(
                        "{} belongs to uid {}, not to the receiver (uid {owner})",
                        shown(&path),
                        meta.uid()
                    ),
                    format!("mv {0} {0}.suspect", shown(&path)),
                ));
            }
        }
    }
    for entry in fs::read_dir(aea).into_iter().flatten().flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let ours = name == Shared::Config.name()
            || name == Shared::GitIgnore.name()
            || name.starts_with(Shared::Log.name())
            || crate::mailbox::TOP_STATE_FILES
                .iter()
                .any(|(n, _)| n.name() == name);
        let special = !(meta.is_file() || meta.is_dir() || meta.file_type().is_symlink());
        if special {
            found.push((
                format!("{} is {}: aea never reads it", shown(&path), kind(&meta)),
                format!("rm {}", shown(&path)),
            ));
        } else if ours && meta.file_type().is_symlink() {
            found.push((
                format!("{} is a symbolic link: aea never follows it", shown(&path)),
                format!("rm {}   (aea writes a new one)", shown(&path)),
            ));
        } else if ours && meta.uid() != owner {
            found.push((
                format!("{} belongs to uid {}, not to uid {owner} who owns .aea/: not written by the receiver", shown(&path), meta.uid()),
                format!("mv {0} {0}.suspect", shown(&path)),
            ));
        }
    }
    found
}

/// Names of the receiver's state that an older aea kept inside `.aea/`,
/// found there now: left over from before the state moved to the private
/// state, or planted by a commit (a clone or a pull writes ignored files
/// too). aea never reads them; what it could verify was taken over once
/// (see `crate::migrate`).
fn old_state(layout: &Layout) -> Finding {
    let found: Vec<&str> = layout::OLD_STATE_NAMES
        .iter()
        .copied()
        .filter(|name| fs::symlink_metadata(layout.old(name)).is_ok())
        .collect();
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

fn kind(meta: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else if t.is_dir() {
        "a folder"
    } else {
        "a file"
    }
}

pub fn run(args: &DoctorArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
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
    out.push(git_hooks(ctx, repo, opted_out.git_hooks));
    out.push(harnesses(repo, aea, ctx, opted_out.agent_files));
    out.extend(state(mailbox.layout()));
    out.push(old_state(mailbox.layout()));
    out.extend(inbox(&mailbox));
    out.extend(unapproved(&mailbox, ctx));
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
                .map(|v| crate::printer::untrusted_short(&v.id, 64))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for name in stale_claims(mailbox, now) {
        mailbox.records().drop_stale_claim(&name, now);
        fixed.push(format!("removed the stale claim on {name}"));
    }
    for path in old_staging(mailbox, now) {
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
    // Hooks that call an aea that moved (`cargo install`) are rewritten.
    let installed = harness::installed(aea);
    if let Some(exe) = ctx.exe.as_deref()
        && !installed.is_empty()
        && !harness::problems(mailbox.repo(), aea, exe).is_empty()
    {
        let (files, _) = harness::install(mailbox.repo(), aea, &installed, exe)?;
        for rel in harness::shims::install(aea, exe)? {
            fixed.push(format!("rewrote .aea/{rel}"));
        }
        fixed.extend(
            files
                .iter()
                .map(|f| format!("rewrote aea's entries in {f}")),
        );
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
                detail: ok.to_string(),
                fix: None,
            },
            Some((detail, fix)) => Finding {
                check,
                ok: false,
                detail,
                fix: Some(fix),
            },
        }
    }
}

fn layout_check(layout: &Layout) -> Finding {
    let mut missing: Vec<String> = Shared::FOLDERS
        .iter()
        .filter(|d| !layout.shared(**d).is_dir())
        .map(|d| format!(".aea/{}", d.name()))
        .collect();
    if !layout.state().is_dir() {
        missing.push(format!("the private state {}", layout.state().display()));
    }
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
    let config_path = layout::config_file(aea);
    // Never a FIFO or a symlink: an unreadable config reads as empty here
    // and the state check below names the file.
    let text = crate::fsutil::read_optional(&config_path)
        .ok()
        .flatten()
        .unwrap_or_default();
    // The same check every command and the pre-commit gate make.
    let checked = crate::policy::Checked::parse(&text, &config_path);
    let untrusted = checked.as_ref().ok().map(|c| {
        crate::config_trust::trusted_settings(&c.config, repo, ctx.trust_store())
            .map(|t| t.ignored.keys())
            .map_err(|e| crate::error::one_line(&e))
    });
    let parsed = checked
        .map(|c| c.config.agent.id)
        .map_err(|e| crate::error::one_line(&e));
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
            let problem = match Registry::load(path) {
                Err(e) => Some((
                    crate::error::one_line(&e),
                    crate::hints::hint(&e).unwrap_or_default(),
                )),
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
                    Some(entry) => match Registry::health(
                        id,
                        entry,
                        &entry.path.join(layout::AEA_DIR),
                        &layout::repo_config_file(&entry.path),
                    ) {
                        Health::Ok => None,
                        other => Some((
                            format!("registry entry: {}", other.as_str()),
                            format!("aea init {}", repo.display()),
                        )),
                    },
                },
            };
            Finding::new("registry", problem, "registered under this path")
        }
        _ => Finding::new(
            "registry",
            Some((
                "no registry available".into(),
                "set AEA_REGISTRY to a file path".into(),
            )),
            "",
        ),
    }
}

/// Peers on this machine whose mail does not verify as their repository
/// would have it (SPEC §15.2): an entry with no pinned key (a registry
/// written before aea had keys) while the repository publishes one, and a
/// pinned key the repository no longer publishes. Each with the exact line
/// that pins the published key, to run once the agent's owner confirmed
/// its fingerprint: doctor reads the committed key, it never pins it.
fn peer_keys(ctx: &Context, own: Option<&str>) -> Vec<Finding> {
    use crate::identity;
    use crate::keyring::{self, Published};
    // A registry that does not read is the `registry` check's to report.
    let Some(registry) = ctx.registry().and_then(|p| Registry::load(p).ok()) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for (id, entry) in &registry.agents {
        if Some(id.as_str()) == own
            || !entry.enabled
            || entry.path.as_os_str().is_empty()
            || crate::message::check_agent_id(id).is_err()
        {
            continue;
        }
        let Ok(Published::Key(published)) =
            keyring::published_key(&layout::repo_config_file(&entry.path), id)
        else {
            continue;
        };
        let new = identity::fingerprint(&published);
        let pin = format!(
            "aea agents trust {id} --key {}",
            identity::public_text(&published)
        );
        let path = entry.path.display();
        match entry.key.as_deref().map(identity::parse_public) {
            Some(Ok(pinned)) if pinned == published => {}
            Some(Ok(pinned)) => found.push((
                format!(
                    "{id}: {path} now publishes key {new}, not the pinned {}: mail signed with the new key is refused as forged",
                    identity::fingerprint(&pinned)
                ),
                format!("only if {id}'s owner confirms {new} (`aea whoami` in its repository): {pin}"),
            )),
            _ => found.push((
                format!(
                    "{id}: no key pinned, so its mail is unverified (decided as from an unknown sender); {path} publishes {new}"
                ),
                format!("compare {new} with `aea whoami` run by {id}'s owner, then: {pin}"),
            )),
        }
    }
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

fn git_hooks(ctx: &Context, repo: &Path, opted_out: bool) -> Finding {
    match repo::hook_dirs(repo) {
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
        Ok(dirs) if dirs.runs_elsewhere_than(repo).is_some() => {
            let why = Error::HooksCannotSee {
                root: dirs.workdir.clone().unwrap_or_default(),
                repo: repo.to_path_buf(),
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
        Ok(dirs) => {
            let binary = ctx.exe.clone().unwrap_or_default();
            let bad: Vec<String> = GitHook::ALL
                .iter()
                .map(|&h| (h, hooks::state(h, &dirs.active, &dirs.default, &binary)))
                .filter(|(_, s)| *s != State::Installed)
                .map(|(h, s)| format!("{h} {}", s.label()))
                .collect();
            if opted_out && bad.len() == GitHook::ALL.len() {
                return Finding::new(
                    "git hooks",
                    None,
                    "skipped by choice (init --no-git-hooks; `aea init --git-hooks` installs them)",
                );
            }
            Finding::new(
                "git hooks",
                (!bad.is_empty()).then(|| (bad.join(", "), "aea hooks install".to_string())),
                "all four hooks installed and current",
            )
        }
    }
}

/// Each installed harness's files in place, and its hooks calling an aea
/// that runs (SPEC §16).
fn harnesses(repo: &Path, aea: &Path, ctx: &Context, opted_out: bool) -> Finding {
    let installed = harness::installed(aea);
    if opted_out && installed.is_empty() {
        return Finding::new(
            "harnesses",
            None,
            "skipped by choice (init --no-agent-files; `aea init --agent-files` writes them)",
        );
    }
    let exe = ctx.exe.as_deref().unwrap_or_else(|| Path::new("aea"));
    let problems = harness::problems(repo, aea, exe);
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
            "{}: files in place, hooks call an aea that runs",
            names.join(", ")
        ),
    )
}

fn state(layout: &Layout) -> Vec<Finding> {
    let state = state_problems(layout);
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
    let entries = match mailbox.inbox().unprocessed() {
        Ok(entries) => entries,
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
    let invalid: Vec<&str> = entries
        .iter()
        .filter(|e| e.message.is_err())
        .map(|e| e.name.as_str())
        .collect();
    // Forged mail (SPEC §15.2) is invalid too, but says more: someone wrote
    // in a known agent's name without its key.
    let forged: Vec<&str> = entries
        .iter()
        .filter(|e| e.message.as_ref().is_err_and(|r| r.starts_with("forged")))
        .map(|e| e.name.as_str())
        .collect();
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

    // Every file of the inbox with a record or marker, against the bytes
    // it was written for.
    let replaced: Vec<String> = mailbox
        .inbox()
        .message_names()
        .unwrap_or_default()
        .into_iter()
        .filter(|name| {
            matches!(
                mailbox.records().processed(&mailbox.inbox().read(name)),
                Ok(Processed::Replaced(_))
            )
        })
        .collect();
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
/// of it (it is append-only; git or a tool may rewrite it, and nothing is
/// decided from it, so this is said, not acted on). Remembers what it
/// sees now for the next run.
fn log_history(mailbox: &Mailbox) -> Finding {
    let path = mailbox.layout().private(Private::LogWitness);
    let before: Option<crate::audit::Witness> =
        crate::fsutil::read_state(&path, crate::fsutil::SMALL_STATE_LIMIT)
            .ok()
            .flatten()
            .and_then(|b| serde_json::from_slice(&b).ok());
    let problem = before
        .as_ref()
        .and_then(|w| w.holds(mailbox.dir()).err())
        .map(|why| {
            (
                why,
                "compare it with your backups or `git log -p .aea/agent.log` if it is tracked; aea decides nothing from the log, and the next `aea doctor` takes it as it is now".to_string(),
            )
        });
    if let (Some(now), Ok(path)) = (
        crate::audit::Witness::take(mailbox.dir()),
        mailbox.private_file(Private::LogWitness),
    ) && before.as_ref() != Some(&now)
    {
        let text = serde_json::to_vec(&now).expect("a witness always serialises");
        let _ = crate::fsutil::replace_atomic(&path, &text);
    }
    Finding::new(
        "log history",
        problem,
        "agent.log only grew since the last `aea doctor`",
    )
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
                format!(
                    "{} message(s) that waited are gone from .aea/ without aea processing, archiving or quarantining them: {}",
                    gone.len(),
                    gone.iter()
                        .map(|v| format!(
                            "{} (id {})",
                            crate::shortref::of(&v.file),
                            crate::printer::untrusted_short(&v.id, 64)
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                "a checkout or pull that replaced .aea/ deletes what git ignores there: ask each sender to send again (`aea status` on their side), then `aea doctor --fix` to forget this list".to_string(),
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
    let stale = stale_claims(mailbox, now);
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
    let leftovers = old_staging(mailbox, now);
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

/// Claims whose process is gone or that are older than 30 minutes: the
/// same rule `process` takes claims over by.
fn stale_claims(mailbox: &Mailbox, now: chrono::DateTime<chrono::Utc>) -> Vec<String> {
    mailbox
        .records()
        .claim_names()
        .into_iter()
        .filter(|name| {
            let Some(path) = mailbox.records().claim_path(name) else {
                return false;
            };
            if !fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                return false;
            }
            let body = crate::fsutil::read_state(&path, crate::fsutil::SMALL_STATE_LIMIT)
                .ok()
                .flatten()
                .unwrap_or_default();
            crate::mailbox::claim_is_stale(&path, &body, now)
        })
        .collect()
}

/// Files in the staging folders (`.aea/.tmp/`, the private `tmp/`)
/// older than any write takes.
fn old_staging(mailbox: &Mailbox, now: chrono::DateTime<chrono::Utc>) -> Vec<std::path::PathBuf> {
    let dirs = [
        mailbox.shared_dir(Shared::Staging).ok().flatten(),
        mailbox.private_dir(Private::Tmp).ok().flatten(),
    ];
    dirs.into_iter()
        .flatten()
        .flat_map(|dir| fs::read_dir(dir).into_iter().flatten())
        .filter_map(std::result::Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| !e.file_name().to_string_lossy().ends_with(".lock"))
        .filter(|e| {
            e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| now - chrono::DateTime::<chrono::Utc>::from(t) > Duration::hours(1))
        })
        .map(|e| e.path())
        .collect()
}

/// Prints the findings; exit 6 when any needs a fix.
fn report(fixed: &[String], out: &[Finding], ctx: &Context) -> ExitCode {
    let problems = out.iter().filter(|f| !f.ok).count();
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
    if problems == 0 {
        ExitCode::Success
    } else {
        ExitCode::Attention
    }
}
