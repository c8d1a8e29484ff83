//! `aea init`: creates the layout of SPEC §2, registers the repository and
//! adds the agent instructions. Re-running repairs what is missing and never
//! replaces messages, markers, the log or the config.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::context::Context;
use crate::audit::{self, AuditEvent, Event};
use crate::cli::InitArgs;
use crate::config::AgentConfig;
use crate::error::{Error, ExitCode, Result};
use crate::fsutil;
use crate::harness::{self, Agent};
use crate::hooks;
use crate::identity;
use crate::layout::{self, AEA_DIR, Layout, Private, Shared};
use crate::mailbox::SHARED_STATE_DIRS;
use crate::message::{check_agent_id, format_time, sanitize_agent_id};
use crate::registry::{Entry, Health, Registry};
use crate::repo::{self, HooksPathSource};
use crate::runtime::Runtime;
use crate::templates::{self, PolicyPreset};

pub(crate) struct Options<'a> {
    pub id: Option<&'a str>,
    pub policy: Option<PolicyPreset>,
    /// The agent harnesses to install for; `None` touches no harness file.
    pub agents: Option<Vec<Agent>>,
    /// This aea, which harness hooks call by its absolute path.
    pub exe: Option<&'a Path>,
    /// The binary git hooks call; `None` installs no git hooks.
    pub git_hooks: Option<&'a Path>,
    /// `--shared`: other OS users may deliver into `.aea/` (SPEC §15.1).
    pub shared: bool,
    /// `--group`: with `shared`, only the users of this group.
    pub group: Option<&'a str>,
}

#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Report {
    pub agent_id: String,
    pub repo: PathBuf,
    /// Files and folders this run created or updated, relative to the repo.
    pub changed: Vec<String>,
    pub registry: Option<PathBuf>,
    /// The trust gate of each harness set up here that has one: whether a
    /// person already opened it, and the step that opens it.
    pub trust_gates: Vec<harness::trust::TrustGate>,
    /// The bash AEA's own `.aea/scripts/aea-send.sh` is still here (init
    /// leaves it alone): what it sends is unsigned while this agent has a
    /// key, so aea peers that pin the key run this command (`aea whoami`
    /// prints the whole line), or they take that mail as forged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peers_allow_unsigned: Option<String>,
    #[serde(skip)]
    pub warnings: Vec<String>,
}

pub(crate) fn run(args: &InitArgs, ctx: &Context) -> Result<ExitCode> {
    let target = match (&args.path, &ctx.repo) {
        (Some(path), _) => ctx.cwd.join(path),
        (None, Some(repo)) => repo.clone(),
        (None, None) => ctx.cwd.clone(),
    };
    if !target.is_dir() {
        return Err(Error::usage(
            format!("{} is not a directory", target.display()),
            "create the repository first, or pass the path of an existing one",
        ));
    }
    let repo = fs::canonicalize(&target).map_err(|e| Error::io("resolve", &target, e))?;
    // An opt-out of an earlier init stands until the user asks again: a
    // repair run must not undo it.
    let remembered = harness::opt_outs(&repo.join(AEA_DIR));
    let choice = harness::OptOuts {
        agent_files: args.no_agent_files
            || (remembered.agent_files && !args.agent_files && args.agents.is_none()),
        git_hooks: args.no_git_hooks || (remembered.git_hooks && !args.git_hooks),
    };
    // What the repository already uses, before init writes any of it.
    let detected = harness::detected(&repo);
    let options = Options {
        id: args.id.as_deref(),
        policy: args.policy,
        agents: if choice.agent_files {
            None
        } else {
            Some(
                args.agents
                    .clone()
                    .unwrap_or_else(|| detected.iter().map(|(agent, _)| *agent).collect()),
            )
        },
        exe: ctx.exe.as_deref(),
        git_hooks: if choice.git_hooks {
            None
        } else {
            ctx.exe.as_deref()
        },
        shared: args.shared,
        group: args.group.as_deref(),
    };
    let (mut report, registered) =
        init_repo(&repo, &options, &ctx.rt, ctx.registry(), ctx.keys_dir())?;
    harness::remember_opt_outs(&report.repo.join(AEA_DIR), choice)?;
    report.peers_allow_unsigned = crate::layout::bash_sender(&report.repo.join(AEA_DIR))
        .then(|| format!("aea agents trust {} --allow-unsigned", report.agent_id));
    report.trust_gates = harness::trust::gates(
        &report.repo,
        &harness::installed(&report.repo.join(AEA_DIR)),
        &ctx.harness_homes,
    );
    // State an older aea kept in `.aea/` is taken over now, all of it.
    let mailbox = crate::mailbox::Mailbox::at(&report.repo)?.owned();
    if crate::migrate::needed(&mailbox) {
        ctx.take_over(&mailbox, None)?;
    }
    for (kept, was, flag) in [
        (
            remembered.agent_files && choice.agent_files && !args.no_agent_files,
            "agent-harness files",
            "--agent-files",
        ),
        (
            remembered.git_hooks && choice.git_hooks && !args.no_git_hooks,
            "git hooks",
            "--git-hooks",
        ),
    ] {
        if kept {
            report.warnings.push(format!(
                "left out {was}, as an earlier init was told; `aea init {flag}` puts them in"
            ));
        }
    }
    if let Some(why) = mailbox.signed_off_by(ctx.signoff()).signatures_unusable() {
        report.warnings.push(why);
    }
    if let Some(outer) = enclosing_inbox(&report.repo) {
        report.warnings.push(outer);
    }
    for warning in &report.warnings {
        ctx.printer.warn(warning);
    }
    if ctx.printer.json() {
        ctx.printer.value(&report);
    } else {
        ctx.printer.line(format_args!(
            "initialised agent {} in {}",
            report.agent_id,
            report.repo.display()
        ));
        // A new .aea/ implies its folders; list only what a reader would look at.
        let top = format!("{AEA_DIR}/");
        let fresh = report.changed.contains(&top);
        for item in &report.changed {
            match item.as_str() {
                dir if dir == top => ctx.printer.line(format_args!("  created {top}")),
                dir if fresh && dir.ends_with('/') => {}
                other => ctx.printer.line(format_args!("  wrote {other}")),
            }
        }
        if report.changed.is_empty() {
            ctx.printer.line("  nothing to repair");
        }
        if let (Ok(()), Some(path)) = (&registered, &report.registry) {
            ctx.printer
                .line(format_args!("  registered in {}", path.display()));
        }
        // Which harnesses, when the person did not say: decided here once.
        if fresh && args.agents.is_none() && !choice.agent_files {
            let chosen: Vec<String> = detected
                .iter()
                .map(|(agent, sign)| match sign {
                    None => format!("{agent} (the default)"),
                    Some(file) => format!("{agent} ({file} is here)"),
                })
                .collect();
            ctx.printer.line(format_args!(
                "  agent harnesses: {}, and AGENTS.md for the others; `aea init --agents LIST` chooses",
                chosen.join(", ")
            ));
        }
        if let Some(command) = &report.peers_allow_unsigned {
            ctx.printer.line(format_args!(
                "  the bash AEA's .aea/scripts/aea-send.sh stays and sends unsigned mail (into repositories on this machine only), which aea peers that pinned this key take as forged: each of them runs `{command}` (or adds this agent with the line `aea whoami` prints)"
            ));
        }
        if fresh {
            print_next_steps(ctx, &report);
        } else if args.agents.is_some() {
            print_trust_gates(ctx, &report);
        }
    }
    registered?;
    Ok(ExitCode::Success)
}

/// What a first `init` leaves to the person: what to commit, how to send,
/// how a peer on another machine learns this agent's key, and what the
/// scripts under `.aea/scripts/` are.
fn print_next_steps(ctx: &Context, report: &Report) {
    let shims = report
        .changed
        .iter()
        .any(|c| c.starts_with(&format!("{AEA_DIR}/scripts/")));
    ctx.printer.line("next:");
    ctx.printer.line(
        "  commit .aea/agent-config.yaml, .aea/prompts/, .aea/.gitignore and the agent files above; mail, the log and aea's state stay out of git",
    );
    ctx.printer.line(
        "  aea send --to AGENT --type question --subject \"...\" --body \"...\"   mail another agent; `aea check` reads yours",
    );
    ctx.printer
        .line("  aea whoami   this agent's key: the line a peer on another machine runs to pin it");
    if shims {
        ctx.printer.line(
            "  .aea/scripts/aea-*.sh run this aea under the names the AEA protocol text gives its scripts",
        );
    }
    print_trust_gates(ctx, report);
}

/// Each harness's own trust gate: until a person opens it, that harness
/// hears of no mail.
fn print_trust_gates(ctx: &Context, report: &Report) {
    for gate in &report.trust_gates {
        ctx.printer.line(format_args!("  trust: {}", gate.line()));
    }
}

/// What to say when `repo` lies inside another agent's repository (a
/// folder above it holds `.aea/`): commands run in `repo`, or pointed at
/// it, now read its own inbox, not that agent's — wanted for a monorepo's
/// packages, a surprise when `init` was run in a subfolder by mistake.
fn enclosing_inbox(repo: &Path) -> Option<String> {
    let outer = repo
        .ancestors()
        .skip(1)
        .find(|dir| fs::symlink_metadata(dir.join(AEA_DIR)).is_ok_and(|m| m.is_dir()))?;
    let who = crate::mailbox::Mailbox::at(outer)
        .ok()
        .and_then(|m| m.agent_id().ok())
        .map_or_else(
            || "another agent".to_string(),
            |id| format!("agent {}", crate::printer::untrusted_short(&id, 64)),
        );
    Some(format!(
        "{} is inside the repository of {who} ({}): aea run in it now reads its own inbox, not that one; if that is not what you wanted, `aea uninstall --purge` here undoes it",
        repo.display(),
        outer.display()
    ))
}

/// Sets up `repo` (an absolute, existing directory). The registry result is
/// returned separately: a registry problem leaves the repository set up.
pub(crate) fn init_repo(
    repo: &Path,
    options: &Options<'_>,
    rt: &Runtime,
    registry: Option<&Path>,
    keys_dir: Option<&Path>,
) -> Result<(Report, Result<()>)> {
    let aea = repo.join(AEA_DIR);
    let mut changed = Vec::new();
    let mut warnings = Vec::new();
    fsutil::refuse_symlink(&aea)?;
    // Said before reading the config in it, which would fail with a bare
    // "Not a directory".
    if fs::symlink_metadata(&aea).is_ok_and(|m| !m.is_dir()) {
        return Err(Error::NotADirectory { path: aea });
    }
    let config_path = layout::config_file(&aea);
    let existing = match fsutil::read_optional(&config_path)? {
        Some(text) => Some(AgentConfig::parse(&text, &config_path)?),
        None => None,
    };
    let agent_id = choose_id(repo, options.id, existing.as_ref(), &config_path)?;

    // Refuse an id that another live repository holds before writing
    // anything; `register` checks again under the lock.
    if let Some(path) = registry
        && let Ok(known) = Registry::load(path)
        && let Some(old) = known.get(&agent_id)
        && old.path != repo
        && Registry::health(
            &agent_id,
            old,
            &old.path.join(AEA_DIR),
            &layout::repo_config_file(&old.path),
        ) == Health::Ok
    {
        return Err(Error::RegistryConflict {
            id: agent_id,
            other: old.path.clone(),
        });
    }

    // Nothing is written until the harness files are known to merge: an
    // init that stops half way leaves no edit `uninstall` cannot see.
    if let Some(agents) = &options.agents {
        harness::preflight(repo, agents)?;
    }

    if fsutil::ensure_dir(&aea)? {
        changed.push(format!("{AEA_DIR}/"));
    }
    for dir in Shared::FOLDERS {
        if fsutil::ensure_dir(&aea.join(dir.name()))? {
            changed.push(format!("{AEA_DIR}/{}/", dir.name()));
        }
    }
    // The receiver's private state, where git never writes (SPEC §2).
    let layout = Layout::of(repo);
    layout.ensure_state(fsutil::dir_owner(&aea))?;

    let policy = options.policy.unwrap_or(PolicyPreset::Default);
    if existing.is_none() {
        let text = templates::policy(policy, &agent_id);
        fsutil::create_exclusive(&config_path, text.as_bytes())?;
        changed.push(format!(
            "{AEA_DIR}/{} ({policy} policy)",
            Shared::Config.name()
        ));
    } else if options.policy.is_some() {
        warnings.push(format!(
            "kept the existing {}; --policy only applies to a new one",
            config_path.display()
        ));
    }

    let public_key = signing_key(
        keys_dir,
        &agent_id,
        &config_path,
        &mut changed,
        &mut warnings,
    )?;

    let owned_files = [
        (
            format!("{}/check-messages.md", Shared::Prompts.name()),
            templates::check_messages_prompt(),
        ),
        (".gitignore".to_string(), templates::GITIGNORE.to_string()),
    ];
    for (rel, text) in owned_files {
        let path = aea.join(&rel);
        fsutil::refuse_symlink(&path)?;
        if fsutil::create_exclusive(&path, text.as_bytes())? {
            changed.push(format!("{AEA_DIR}/{rel}"));
        } else if templates::is_earlier_prompt(&path) {
            // A prompt an earlier aea wrote, word for word, is brought up
            // to date; one anybody edited (or the bash AEA's) is kept.
            fsutil::replace_atomic(&path, text.as_bytes())?;
            changed.push(format!("{AEA_DIR}/{rel} (updated)"));
        }
    }

    // The protocol text's own scripts run this aea (not with
    // --no-agent-files: they are instructions' commands).
    if options.agents.is_some()
        && let Some(exe) = options.exe
    {
        for rel in harness::shims::install(&aea, exe)? {
            changed.push(format!("{AEA_DIR}/{rel}"));
        }
    }
    if let Some(agents) = &options.agents {
        let (files, notes) = harness::install(repo, &aea, agents)?;
        changed.extend(files);
        warnings.extend(notes);
    }
    if let Some(binary) = options.git_hooks {
        install_git_hooks(repo, &aea, binary, rt, &mut changed, &mut warnings)?;
    }

    if options.shared {
        share(&aea, options.group, &mut changed, &mut warnings)?;
    }

    audit::append(
        &aea,
        &Event::new(rt, AuditEvent::Init)
            .with("agent", agent_id.as_str())
            .with("changed", changed.len()),
    )?;

    let registered = match registry {
        Some(path) => register(path, &agent_id, repo, public_key, rt),
        None => {
            warnings.push("no user config directory: not registered (set AEA_REGISTRY)".into());
            Ok(())
        }
    };
    let report = Report {
        agent_id,
        repo: repo.to_path_buf(),
        changed,
        registry: registry.map(Path::to_path_buf),
        trust_gates: Vec::new(),
        peers_allow_unsigned: None,
        warnings,
    };
    Ok((report, registered))
}

/// The agent id: `--id`, else the config's, else the directory's name
/// made into an id. An `--id` that disagrees with the config is refused.
fn choose_id(
    repo: &Path,
    wanted: Option<&str>,
    existing: Option<&AgentConfig>,
    config_path: &Path,
) -> Result<String> {
    let existing_id = existing.and_then(|c| c.agent.id.clone());
    Ok(match (wanted, existing_id) {
        (Some(wanted), Some(current)) if wanted != current => {
            return Err(Error::usage(
                format!("this repository is already agent {current}"),
                format!("to rename it, edit agent.id in {}", config_path.display()),
            ));
        }
        (Some(wanted), _) => {
            check_agent_id(wanted).map_err(|reason| Error::InvalidAgentId {
                id: wanted.to_string(),
                reason,
            })?;
            wanted.to_string()
        }
        (None, Some(current)) => current,
        (None, None) => sanitize_agent_id(
            &repo
                .file_name()
                .map_or_else(|| "agent".into(), |n| n.to_string_lossy()),
        ),
    })
}

/// The agent's signing key (SPEC §15.2): private half in the user's
/// config dir, public half published in the committed config. Returns the
/// public key, `None` without a config dir.
fn signing_key(
    keys_dir: Option<&Path>,
    agent_id: &str,
    config_path: &Path,
    changed: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Result<Option<String>> {
    Ok(match keys_dir {
        Some(dir) => {
            let (key, created) = identity::load_or_create_key(dir, agent_id)?;
            if created {
                changed.push(format!(
                    "signing key {}",
                    identity::key_path(dir, agent_id).display()
                ));
            }
            let public = identity::public_text(&key.verifying_key());
            if publish_key(config_path, &public, warnings)? {
                changed.push(format!(
                    "{AEA_DIR}/{} (agent.public_key)",
                    Shared::Config.name()
                ));
            }
            Some(public)
        }
        None => {
            warnings.push(
                "no user config directory: no signing key, so mail from this agent is unverified (set HOME)".into(),
            );
            None
        }
    })
}

/// `--shared` (SPEC §15.1): other OS users may create new files in `.aea/`
/// but, the folder being sticky, cannot rename or delete what they do not
/// own; every folder aea writes there is the receiver's and 0700, and so
/// is the private state.
///
/// Shared with a group (`--group`, or a `.aea/` already shared so: a
/// re-run keeps it), `.aea/` is 3770 and setgid, so new files take its
/// group and senders deliver them 0640: the receiver reads them through
/// the group, users outside it cannot read them at all. Shared with every
/// user (1777) there is no such group: mail is 0644, any user can read it
/// and drop a copy under another name, and what stops that copy is the
/// message id, accepted once — which `init` says.
fn share(
    aea: &Path,
    group: Option<&str>,
    changed: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let owner = fsutil::dir_owner(aea);
    for dir in SHARED_STATE_DIRS {
        let path = aea.join(dir.name());
        fsutil::ensure_state_dir(&path)?;
        set_mode(&path, 0o700)?;
        fsutil::check_state_dir(&path, owner)?;
    }
    if let Some(repo) = aea.parent() {
        let layout = Layout::of(repo);
        layout.ensure_state(owner)?;
        for dir in Private::FOLDERS {
            let path = layout.private(dir);
            fsutil::ensure_state_dir(&path)?;
            set_mode(&path, 0o700)?;
        }
    }
    for (name, mode) in crate::mailbox::TOP_STATE_FILES {
        let path = aea.join(name.name());
        let file = fsutil::open_lock(&path)?;
        fsutil::require_owner(&file, &path, owner)?;
        set_mode(&path, mode)?;
    }
    let gid = match group {
        Some(group) => Some(group_id(group)?),
        None => shared_group(aea),
    };
    match gid {
        Some(gid) => {
            set_group(aea, gid)?;
            set_mode(aea, 0o3770)?;
            changed.push(format!(
                "{AEA_DIR}/ shared with group {}: sticky, setgid, writable by the group (3770); new mail 0640 in that group; state folders 0700",
                group_name(gid)
            ));
        }
        None => {
            set_mode(aea, 0o1777)?;
            changed.push(format!(
                "{AEA_DIR}/ shared: sticky and writable by all (1777), state folders 0700"
            ));
            warnings.push(format!(
                "{AEA_DIR}/ is shared with every user of this machine: new mail is 0644, so any user can read a message and drop a copy of it under another name; aea accepts each message id once, so such a copy is a replay and never new mail. To share with one group only: `aea init --shared --group GROUP`"
            ));
        }
    }
    Ok(())
}

/// The group `.aea/` is shared with already (setgid and writable by its
/// group), if it is.
fn shared_group(aea: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = fs::symlink_metadata(aea).ok()?;
        (meta.mode() & 0o2000 != 0 && meta.mode() & 0o020 != 0).then(|| meta.gid())
    }
    #[cfg(not(unix))]
    {
        let _ = aea;
        None
    }
}

/// The gid of `group`: a number, or a name in `/etc/group`.
fn group_id(group: &str) -> Result<u32> {
    if let Ok(gid) = group.parse::<u32>() {
        return Ok(gid);
    }
    groups()
        .into_iter()
        .find(|(name, _)| name == group)
        .map(|(_, gid)| gid)
        .ok_or_else(|| {
            Error::usage(
                format!("no group {group:?} in /etc/group"),
                "give the name of a group in /etc/group (`getent group`) or its numeric gid",
            )
        })
}

/// The name of group `gid`, or the number where `/etc/group` has none.
fn group_name(gid: u32) -> String {
    groups()
        .into_iter()
        .find(|(_, id)| *id == gid)
        .map_or_else(|| gid.to_string(), |(name, _)| name)
}

/// The groups of `/etc/group` (name, gid); empty where it does not read.
fn groups() -> Vec<(String, u32)> {
    let text = fsutil::read_state(Path::new("/etc/group"), fsutil::STATE_LIMIT)
        .ok()
        .flatten()
        .unwrap_or_default();
    String::from_utf8_lossy(&text)
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let gid = fields.nth(1)?.parse().ok()?;
            Some((name.to_string(), gid))
        })
        .collect()
}

fn set_group(path: &Path, gid: u32) -> Result<()> {
    #[cfg(unix)]
    std::os::unix::fs::chown(path, None, Some(gid))
        .map_err(|e| Error::io("change the group of", path, e))?;
    #[cfg(not(unix))]
    let _ = (path, gid);
    Ok(())
}

fn set_mode(path: &Path, mode: u32) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(mode))
            .map_err(|e| Error::io("change the mode of", path, e))?;
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
    Ok(())
}

/// Installs the git hooks where git runs them; a repository that is not a
/// git repository, or whose hooks path is global, gets a warning instead.
fn install_git_hooks(
    repo: &Path,
    aea: &Path,
    binary: &Path,
    rt: &Runtime,
    changed: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let dirs = match repo::hook_dirs(repo) {
        Ok(dirs) => dirs,
        Err(Error::NotAGitRepository { .. }) => {
            warnings.push(
                "not a git repository: no git hooks installed (run `aea hooks install` after `git init`)".into(),
            );
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    if dirs.source == HooksPathSource::Inherited {
        warnings.push(format!(
            "git hooks not installed: core.hooksPath is set globally to {} (see `aea hooks install`)",
            dirs.active.display()
        ));
        return Ok(());
    }
    // A package of a monorepo: git runs hooks at the top of the work
    // tree; they serve this inbox once it is recorded there.
    let installed =
        match hooks::install_for(&Layout::of(repo), fsutil::dir_owner(aea), &dirs, binary) {
            Ok(installed) => installed,
            Err(why @ Error::HooksCannotSee { .. }) => {
                warnings.push(format!(
                    "git hooks not installed: {why}; {}",
                    crate::hints::hint(&why).unwrap_or_default()
                ));
                return Ok(());
            }
            Err(e) => return Err(e),
        };
    for change in installed.changes {
        if change.change == hooks::Change::Installed && change.foreign {
            changed.push(format!(
                "git hook {} (the hook that was there is kept as {}.aea-orig and still runs first)",
                change.path.display(),
                change.path.display()
            ));
        } else if change.change != hooks::Change::Unchanged {
            changed.push(format!("git hook {}", change.path.display()));
            audit::append(
                aea,
                &Event::new(rt, AuditEvent::HookInstalled).with("hook", change.hook.as_str()),
            )?;
        }
    }
    if let (Some(record), Some(top)) = (&installed.recorded, &dirs.workdir) {
        changed.push(format!(
            "{} (the git hooks at {} serve this inbox too)",
            record.display(),
            top.display()
        ));
    }
    Ok(())
}

fn register(path: &Path, id: &str, repo: &Path, key: Option<String>, rt: &Runtime) -> Result<()> {
    Registry::update(path, |registry| {
        if let Some(old) = registry.agents.get_mut(id) {
            if old.path == repo {
                // This machine holds the private key: its public half is the
                // one to pin, whatever an older entry said.
                if key.is_some() {
                    old.key = key;
                }
                return Ok(());
            }
            // Another live repository with this id keeps it; a stale entry
            // (moved or deleted repository) is replaced.
            if Registry::health(
                id,
                old,
                &old.path.join(AEA_DIR),
                &layout::repo_config_file(&old.path),
            ) == Health::Ok
            {
                return Err(Error::RegistryConflict {
                    id: id.to_string(),
                    other: old.path.clone(),
                });
            }
        }
        registry.agents.insert(
            id.to_string(),
            Entry {
                key,
                path: repo.to_path_buf(),
                registered: format_time(rt.now()),
                ..Entry::default()
            },
        );
        Ok(())
    })
}

/// Makes `agent.public_key` in the config say `public`. The file is edited
/// as text (one line added or replaced under `agent:`) so the user's
/// comments and layout stay; returns whether it changed. A config whose
/// `agent:` block cannot be found is left alone with a warning.
fn publish_key(config_path: &Path, public: &str, warnings: &mut Vec<String>) -> Result<bool> {
    let Some(text) = fsutil::read_optional(config_path)? else {
        return Ok(false);
    };
    let current = AgentConfig::parse(&text, config_path)?;
    if current.agent.public_key.as_deref() == Some(public) {
        return Ok(false);
    }
    let line = format!("public_key: \"{public}\"");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let agent_at = lines.iter().position(|l| l.trim_end() == "agent:");
    let mut edited = false;
    if let Some(start) = agent_at {
        let block_end = lines[start + 1..]
            .iter()
            .position(|l| !l.is_empty() && !l.starts_with([' ', '\t']) && !l.starts_with('#'))
            .map_or(lines.len(), |i| start + 1 + i);
        let in_block = start + 1..block_end;
        if let Some(i) = in_block
            .clone()
            .find(|&i| lines[i].trim_start().starts_with("public_key:"))
        {
            let indent: String = lines[i].chars().take_while(|c| c.is_whitespace()).collect();
            lines[i] = format!("{indent}{line}");
            edited = true;
        } else if let Some(i) = in_block
            .clone()
            .find(|&i| lines[i].trim_start().starts_with("id:"))
        {
            let indent: String = lines[i].chars().take_while(|c| c.is_whitespace()).collect();
            lines.insert(i + 1, format!("{indent}{line}"));
            edited = true;
        }
    }
    let mut new_text = lines.join("\n");
    new_text.push('\n');
    let reparsed = AgentConfig::parse(&new_text, config_path).ok();
    if !edited || reparsed.and_then(|c| c.agent.public_key).as_deref() != Some(public) {
        warnings.push(format!(
            "could not add agent.public_key to {}; add `{line}` under `agent:` by hand",
            config_path.display()
        ));
        return Ok(false);
    }
    if current.agent.public_key.is_some() {
        warnings.push(format!(
            "agent.public_key in {} named another key; it now names this machine's key (agents that pinned the old one must run `aea agents trust`)",
            config_path.display()
        ));
    }
    fsutil::replace_atomic(config_path, new_text.as_bytes())?;
    Ok(true)
}
