//! `aea agents` (SPEC §8, §15.2): the registry is the receiver's list of
//! whom it knows, managed like ssh's `known_hosts`: list, add with a key,
//! remove, disable/enable, and trust (pin the key an agent's repository
//! publishes). A published key is read once, here, shown by fingerprint
//! and pinned; a key that changed later is refused until a person pins the
//! new one with `--key`.

use std::path::Path;

use serde::Serialize;

use super::context::Context;
use crate::cli::{AgentsArgs, AgentsCommand};
use crate::error::{ConfigDirUse, Error, ExitCode, Result};
use crate::identity;
use crate::keyring::{self, Published};
use crate::layout::{self, AEA_DIR};
use crate::message::{check_agent_id, format_time};
use crate::printer::untrusted_short;
use crate::registry::{Entry, Health, Registry};
use crate::words::word_enum;

/// `aea agents [list] --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct AgentsOutput<'a> {
    /// The registry file read.
    pub registry: &'a Path,
    pub agents: &'a [Row],
}

word_enum! {
    /// What `aea agents add|remove|disable|enable|trust` did.
    pub(super) enum AgentAction {
        Added = "added",
        Removed = "removed",
        Disabled = "disabled",
        Enabled = "enabled",
        Trusted = "trusted",
    }
}

/// `aea agents add|remove|disable|enable|trust --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct AgentChangeOutput<'a> {
    pub agent: &'a str,
    pub action: AgentAction,
    /// The agent's pinned public key, `ed25519:<hex>`.
    pub key: Option<&'a str>,
    pub fingerprint: Option<&'a str>,
}

#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct Row {
    id: String,
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    remote: Option<String>,
    /// The OACP agent folder this agent is reached through.
    #[serde(skip_serializing_if = "Option::is_none")]
    oacp: Option<String>,
    /// The Roo mailbox this agent is reached through.
    #[serde(skip_serializing_if = "Option::is_none")]
    roo: Option<String>,
    description: String,
    enabled: bool,
    registered: String,
    health: Health,
    /// The pinned public key, if any.
    key: Option<String>,
    fingerprint: Option<String>,
    allow_unsigned: bool,
}

fn registry_path(ctx: &Context) -> Result<&Path> {
    ctx.registry().ok_or(Error::NoConfigDir {
        needed_for: ConfigDirUse::Registry,
    })
}

pub(crate) fn run(args: &AgentsArgs, ctx: &Context) -> Result<ExitCode> {
    let path = registry_path(ctx)?;
    match &args.command {
        None | Some(AgentsCommand::List) => list(path, ctx),
        Some(AgentsCommand::Ids) => {
            // Plain lines for a completion script; an id is checked when
            // registered, so it holds nothing a shell would read as more.
            let registry = Registry::load(path)?;
            for (id, entry) in &registry.agents {
                if entry.enabled && check_agent_id(id).is_ok() {
                    ctx.printer.line(id);
                }
            }
            Ok(ExitCode::Success)
        }
        Some(AgentsCommand::Add {
            id,
            path: repo,
            remote,
            oacp,
            roo,
            key,
            allow_unsigned,
            force,
        }) => add(
            path,
            id,
            Place {
                repo: repo.as_deref(),
                remote: remote.as_deref(),
                oacp: oacp.as_deref(),
                roo: roo.as_deref(),
            },
            key.as_deref(),
            *allow_unsigned,
            *force,
            ctx,
        ),
        Some(AgentsCommand::Remove { id }) => change(path, id, AgentAction::Removed, ctx, |reg| {
            reg.agents.remove(id);
        }),
        Some(AgentsCommand::Disable { id }) => {
            change(path, id, AgentAction::Disabled, ctx, |reg| {
                if let Some(e) = reg.agents.get_mut(id) {
                    e.enabled = false;
                }
            })
        }
        Some(AgentsCommand::Enable { id }) => change(path, id, AgentAction::Enabled, ctx, |reg| {
            if let Some(e) = reg.agents.get_mut(id) {
                e.enabled = true;
            }
        }),
        Some(AgentsCommand::Trust {
            id,
            key,
            allow_unsigned,
        }) => trust(path, id, key.as_deref(), *allow_unsigned, ctx),
    }
}

fn fingerprint_of(key: Option<&str>) -> Option<String> {
    key.and_then(|k| identity::parse_public(k).ok())
        .map(|k| identity::fingerprint(&k))
}

fn list(path: &Path, ctx: &Context) -> Result<ExitCode> {
    let registry = Registry::load(path)?;
    let rows: Vec<Row> = registry
        .agents
        .iter()
        .map(|(id, e)| Row {
            id: id.clone(),
            path: e.path.display().to_string(),
            remote: e.remote.clone(),
            oacp: e.oacp.as_ref().map(|p| p.display().to_string()),
            roo: e.roo.as_ref().map(|p| p.display().to_string()),
            description: e.description.clone(),
            enabled: e.enabled,
            registered: e.registered.clone(),
            health: Registry::health(
                id,
                e,
                &e.path.join(AEA_DIR),
                &layout::repo_config_file(&e.path),
            ),
            key: e.key.clone(),
            fingerprint: fingerprint_of(e.key.as_deref()),
            allow_unsigned: e.allow_unsigned,
        })
        .collect();
    if ctx.printer.json() {
        ctx.printer.value(&AgentsOutput {
            registry: path,
            agents: &rows,
        });
        return Ok(ExitCode::Success);
    }
    if rows.is_empty() {
        ctx.printer.line(format_args!(
            "no agents registered in {} (run `aea init` in a repository)",
            path.display()
        ));
    }
    for row in &rows {
        let key = match (&row.fingerprint, row.allow_unsigned) {
            (Some(f), false) => f.clone(),
            (Some(f), true) => format!("{f} +unsigned"),
            (None, true) => "no key, unsigned accepted".into(),
            (None, false) => "no key".into(),
        };
        // Every way the agent is reached: a path on this machine and, for
        // an agent behind a mail remote, its URL (a password in it hidden).
        let mut place: Vec<String> = Vec::new();
        if !row.path.is_empty() {
            place.push(row.path.clone());
        }
        if let Some(remote) = &row.remote {
            place.push(format!(
                "remote {}",
                crate::registry::without_password(remote)
            ));
        }
        if let Some(dir) = &row.oacp {
            place.push(format!("oacp {dir}"));
        }
        if let Some(dir) = &row.roo {
            place.push(format!("roo {dir}"));
        }
        ctx.printer.line(format_args!(
            "{:<20} {:<12} {:<26} {}",
            row.id,
            row.health.label(),
            key,
            place.join(", ")
        ));
    }
    Ok(ExitCode::Success)
}

fn check_key(key: &str) -> Result<()> {
    identity::parse_public(key).map(|_| ()).map_err(|reason| {
        Error::usage(
            format!("{key:?} is not a public key: {reason}"),
            "copy `agent.public_key` from the agent's .aea/agent-config.yaml",
        )
    })
}

/// Where `aea agents add` finds the agent: one of these is given.
#[derive(Clone, Copy)]
struct Place<'a> {
    repo: Option<&'a Path>,
    remote: Option<&'a str>,
    oacp: Option<&'a Path>,
    roo: Option<&'a Path>,
}

/// `--path`, `--oacp` or `--roo` as an absolute path that exists.
fn absolute(ctx: &Context, path: Option<&Path>) -> Result<Option<std::path::PathBuf>> {
    path.map(|p| {
        let p = ctx.cwd.join(p);
        std::fs::canonicalize(&p).map_err(|e| Error::io("resolve", &p, e))
    })
    .transpose()
}

fn add(
    registry: &Path,
    id: &str,
    place: Place<'_>,
    key: Option<&str>,
    allow_unsigned: bool,
    force: bool,
    ctx: &Context,
) -> Result<ExitCode> {
    let Place {
        repo,
        remote,
        oacp,
        roo,
    } = place;
    check_agent_id(id).map_err(|reason| Error::InvalidAgentId {
        id: id.to_string(),
        reason,
    })?;
    if let Some(key) = key {
        check_key(key)?;
    }
    if let Some(remote) = remote {
        crate::config_trust::check_remote(remote)?;
    }
    let path = absolute(ctx, repo)?.unwrap_or_default();
    // Without --key, the key the repository publishes now is read once
    // and pinned (ssh's first connection to a host): a later change there
    // is refused, not followed.
    let published = (key.is_none() && !path.as_os_str().is_empty())
        .then(|| keyring::published_key(&layout::repo_config_file(&path), id));
    let read = match &published {
        Some(Ok(Published::Key(k))) => Some(identity::public_text(k)),
        _ => None,
    };
    let entry = Entry {
        key: key.map(str::to_string).or(read),
        path,
        remote: remote.map(str::to_string),
        oacp: absolute(ctx, oacp)?,
        roo: absolute(ctx, roo)?,
        registered: format_time(ctx.rt.now()),
        allow_unsigned,
        ..Entry::default()
    };
    let replaced = Registry::update(registry, |reg| {
        if let Some(old) = reg.agents.get(id)
            && !force
        {
            return Err(Error::usage(
                format!(
                    "agent {id} is already registered ({})",
                    old.remote
                        .clone()
                        .unwrap_or_else(|| old.path.display().to_string())
                ),
                "pass --force to replace the entry, or `aea agents trust` to pin its key",
            ));
        }
        Ok(reg
            .agents
            .insert(id.to_string(), entry.clone())
            .and_then(|old| old.key))
    })?;
    report(ctx, id, AgentAction::Added, entry.key.as_deref());
    if allow_unsigned {
        unsigned_accepted(ctx, id);
    }
    // `--force` may replace a pinned key: said, so that it is not done
    // in passing.
    if let (Some(old), Some(new)) = (
        fingerprint_of(replaced.as_deref()),
        fingerprint_of(entry.key.as_deref()),
    ) && old != new
    {
        ctx.printer.warn(format_args!(
            "replaced the key pinned for {id} ({old}) with {new}: mail signed with the old key is now forged"
        ));
    }
    if let Some((protocol, dir)) = entry.foreign() {
        // Mail goes there as their files, which carry no key of theirs.
        if let Err(e) = crate::fsutil::require_real_dir(&dir) {
            ctx.printer.warn(format_args!(
                "{}: mail for {id} cannot be written until it is a folder",
                crate::error::one_line(&e)
            ));
        }
        if entry.allow_unsigned {
            ctx.printer.line(format_args!(
                "mail for {id} is written into {} as {} files; its own mail is unsigned and taken as from a known sender (--allow-unsigned)",
                dir.display(),
                protocol.label()
            ));
        } else {
            ctx.printer.line(format_args!(
                "mail for {id} is written into {} as {} files; its own mail is unsigned: \
                 `aea agents trust {id} --allow-unsigned` takes it as from a known sender",
                dir.display(),
                protocol.label()
            ));
        }
        return Ok(ExitCode::Success);
    }
    let shown = entry.path.display().to_string();
    let shown = untrusted_short(&shown, 200);
    // Pinning a key later keeps accepting unsigned mail only if asked again.
    let keep = if allow_unsigned {
        " --allow-unsigned"
    } else {
        ""
    };
    let unpinned = |why: String| {
        ctx.printer.warn(format_args!(
            "{why}: no key pinned, so mail claiming to be {id} stays unverified; ask {id}'s owner for the key `aea whoami` prints there, then `aea agents trust {id} --key ed25519:…{keep}`"
        ));
    };
    match published {
        None if entry.key.is_none() => unpinned("no --key".to_string()),
        Some(Ok(Published::Key(k))) if !ctx.printer.json() => {
            ctx.printer.line(format_args!(
                "pinned the key {shown} publishes now, {}: compare it with what `aea whoami` prints for {id}'s owner (in {id}'s repository); if they differ, `aea agents remove {id}`",
                identity::fingerprint(&k)
            ));
        }
        None | Some(Ok(Published::Key(_))) => {}
        Some(Ok(Published::NoKey)) => unpinned(format!("{shown} publishes no key")),
        Some(Ok(Published::OtherAgent(found))) => unpinned(format!(
            "{shown} is agent {}, not {id}",
            untrusted_short(&found, 64)
        )),
        Some(Ok(Published::NotAKey(reason))) => {
            unpinned(format!("{shown} publishes no valid key ({reason})"));
        }
        Some(Err(e)) => unpinned(crate::error::one_line(&e)),
    }
    Ok(ExitCode::Success)
}

fn change(
    registry: &Path,
    id: &str,
    what: AgentAction,
    ctx: &Context,
    apply: impl FnOnce(&mut Registry),
) -> Result<ExitCode> {
    Registry::update(registry, |reg| {
        if !reg.agents.contains_key(id) {
            return Err(Error::RecipientNotFound {
                target: id.to_string(),
                tried: vec![format!("the registry {}", registry.display())],
                lead: None,
            });
        }
        apply(reg);
        Ok(())
    })?;
    report(ctx, id, what, None);
    Ok(ExitCode::Success)
}

/// Pins a key: the one given, else the one the agent's repository
/// publishes in its committed config, shown by fingerprint so the person
/// can compare it with what the agent's owner sees (`aea whoami`). A
/// published key other than the one pinned is refused: only `--key`
/// replaces a pinned key, after the owner confirmed it.
fn trust(
    registry: &Path,
    id: &str,
    key: Option<&str>,
    allow_unsigned: bool,
    ctx: &Context,
) -> Result<ExitCode> {
    let current = Registry::load(registry)?;
    let entry = current.get(id).ok_or_else(|| Error::RecipientNotFound {
        target: id.to_string(),
        tried: vec![format!("the registry {}", registry.display())],
        lead: None,
    })?;
    let key = match key {
        Some(k) => {
            check_key(k)?;
            Some(k.to_string())
        }
        None if !entry.path.as_os_str().is_empty() => {
            match keyring::published_key(&layout::repo_config_file(&entry.path), id) {
                Ok(Published::Key(k)) => {
                    refuse_changed(id, entry, &k)?;
                    Some(identity::public_text(&k))
                }
                // A bash AEA agent has no aea config and no key: only its
                // unsigned mail is being accepted.
                Ok(Published::NoKey) | Err(_) if allow_unsigned => entry.key.clone(),
                Err(e) => return Err(e),
                Ok(Published::OtherAgent(found)) => {
                    return Err(Error::RegistryMismatch {
                        id: id.to_string(),
                        path: entry.path.clone(),
                        found,
                    });
                }
                Ok(Published::NoKey) => {
                    return Err(Error::NoKeyToPin {
                        agent: id.to_string(),
                        path: Some(entry.path.clone()),
                    });
                }
                Ok(Published::NotAKey(reason)) => {
                    return Err(Error::usage(
                        format!(
                            "the key {} publishes for {id} is not a public key: {reason}",
                            entry.path.display()
                        ),
                        format!(
                            "ask {id}'s owner for the key `aea whoami` prints there, then `aea agents trust {id} --key ed25519:…`"
                        ),
                    ));
                }
            }
        }
        None if allow_unsigned => entry.key.clone(),
        None => {
            return Err(Error::NoKeyToPin {
                agent: id.to_string(),
                path: None,
            });
        }
    };
    let mut taken_back = false;
    Registry::update(registry, |reg| {
        if let Some(e) = reg.agents.get_mut(id) {
            if key.is_some() {
                e.key.clone_from(&key);
            }
            taken_back = e.allow_unsigned && !allow_unsigned;
            e.allow_unsigned = allow_unsigned;
        }
        Ok(())
    })?;
    report(ctx, id, AgentAction::Trusted, key.as_deref());
    if allow_unsigned {
        unsigned_accepted(ctx, id);
    } else if taken_back {
        // Said, not done in passing: that id's unsigned mail, approved
        // mail too, is decided without it from now on.
        ctx.printer.warn(format_args!(
            "unsigned mail claiming to be {id} is no longer accepted{}; to keep accepting it (its repository still runs the bash AEA's aea-send.sh), `aea agents trust {id} --allow-unsigned`",
            if key.is_some() {
                " (forged: a key is pinned)"
            } else {
                ""
            }
        ));
    }
    Ok(ExitCode::Success)
}

fn unsigned_accepted(ctx: &Context, id: &str) {
    ctx.printer.warn(format_args!(
        "unsigned mail claiming to be {id} now counts as from a known sender: anyone who can write to your inbox can use that id"
    ));
}

/// Refuses `published` when another key is pinned for `id`: mail signed
/// with it is forged until a person pins it by hand. A pinned value that
/// is not a key verifies nothing and may be replaced.
fn refuse_changed(id: &str, entry: &Entry, published: &ed25519_dalek::VerifyingKey) -> Result<()> {
    match entry.key.as_deref().map(identity::parse_public) {
        Some(Ok(pinned)) if pinned != *published => {
            Err(Error::KeyChanged(Box::new(crate::error::KeyChange {
                agent: id.to_string(),
                path: entry.path.clone(),
                pinned_fingerprint: identity::fingerprint(&pinned),
                published_fingerprint: identity::fingerprint(published),
                published: identity::public_text(published),
            })))
        }
        _ => Ok(()),
    }
}

fn report(ctx: &Context, id: &str, what: AgentAction, key: Option<&str>) {
    let fingerprint = fingerprint_of(key);
    if ctx.printer.json() {
        ctx.printer.value(&AgentChangeOutput {
            agent: id,
            action: what,
            key,
            fingerprint: fingerprint.as_deref(),
        });
    } else {
        match fingerprint {
            Some(f) => ctx.printer.line(format_args!("{what} {id}, key {f}")),
            None => ctx.printer.line(format_args!("{what} {id}")),
        }
    }
}
