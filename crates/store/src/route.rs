//! Where mail for an agent goes: resolving `--to` (SPEC §4) and the return
//! address of a reply (§5.3).

use std::fs;
use std::path::{Path, PathBuf};

use crate::config;
use crate::error::{Error, RecipientLead, Result};
use crate::foreign::Protocol;
use crate::mailbox::{AEA_DIR, Mailbox};
use crate::message::{Message, check_agent_id};
use crate::registry::Registry;
use crate::words::closest;

/// Where mail for an agent goes.
#[derive(Debug, Clone)]
pub enum Route {
    /// A repository on this machine.
    Local(Box<Recipient>),
    /// An agent behind the mail remote: the mail is queued for `aea sync`.
    Remote(String),
    /// An agent of another file protocol (SPEC §12): the mail is written
    /// into its folder as that protocol's file.
    Foreign(Foreign),
}

impl Route {
    /// The agent id this route reaches.
    pub fn agent_id(&self) -> &str {
        match self {
            Route::Local(r) => &r.id,
            Route::Remote(id) => id,
            Route::Foreign(f) => &f.id,
        }
    }
}

/// An OACP or Roo agent named in the registry: its id and the folder its
/// mail goes into (an OACP agent's `inbox/`, a Roo mailbox).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    pub id: String,
    pub protocol: Protocol,
    pub dir: PathBuf,
}

impl Foreign {
    fn of(id: &str, entry: &crate::registry::Entry) -> Option<Self> {
        entry.foreign().map(|(protocol, dir)| Foreign {
            id: id.to_string(),
            protocol,
            dir,
        })
    }
}

/// A resolved recipient: its mailbox and its configured id.
#[derive(Debug, Clone)]
pub struct Recipient {
    pub id: String,
    pub mailbox: Mailbox,
}

impl Recipient {
    fn open(repo: &Path) -> Result<Self> {
        // The mailbox carries the recipient's own limits from here on.
        let mailbox = Mailbox::at(repo)?;
        let id = mailbox.agent_id()?;
        Ok(Recipient { id, mailbox })
    }
}

/// Whether `--to` names a path rather than an id.
pub fn looks_like_path(target: &str) -> bool {
    target.contains(['/', '\\']) || target.starts_with('.') || target == "~"
}

/// How an id found nowhere on this machine may go to the mail remote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViaRemote {
    /// No mail remote is configured (or trusted).
    None,
    /// A remote is configured, but an id not registered as reached through
    /// it goes there only when asked: a typo would otherwise be queued for
    /// an agent that does not exist.
    Configured,
    /// Asked for (`send --via-remote`), or mail that names its agents
    /// already (a collaboration's participants).
    Asked,
}

/// Resolves `--to` in the order of SPEC §4: a path holding `.aea/`, an id in
/// the registry, an id among the sibling repositories of `own_repo`; then,
/// when `via_remote` is [`ViaRemote::Asked`], an id not found here is taken
/// to live behind the mail remote. Relative paths are taken from `cwd`.
pub fn resolve(
    target: &str,
    cwd: &Path,
    own_repo: &Path,
    registry: Option<&Path>,
    via_remote: ViaRemote,
) -> Result<Route> {
    if looks_like_path(target) {
        let path = cwd.join(target);
        if !path.is_dir() {
            return Err(Error::RecipientNotFound {
                target: target.to_string(),
                tried: vec![format!("{} is not a directory", path.display())],
                lead: None,
            });
        }
        if !path.join(AEA_DIR).exists()
            && !in_git_repository(&path)
            && let Some(error) = holds_repositories(target, &path)
        {
            return Err(error);
        }
        return Recipient::open(&path).map(|r| Route::Local(Box::new(r)));
    }
    check_agent_id(target).map_err(|reason| Error::InvalidAgentId {
        id: target.to_string(),
        reason,
    })?;
    let mut tried = Vec::new();
    match registry {
        Some(path) => {
            let registry = Registry::load(path)?;
            match registry.get(target) {
                Some(entry) if entry.enabled && entry.foreign().is_some() => {
                    return Ok(Route::Foreign(
                        Foreign::of(target, entry).expect("checked just above"),
                    ));
                }
                Some(entry) if entry.enabled && is_remote(entry) => {
                    return Ok(Route::Remote(target.to_string()));
                }
                Some(entry) if entry.enabled => {
                    return Recipient::open(&entry.path)
                        .map(|r| Route::Local(Box::new(r)))
                        .map_err(|e| moved(target, path, &entry.path, e));
                }
                Some(_) => tried.push(format!("registry {} (entry disabled)", path.display())),
                None => tried.push(format!("registry {}", path.display())),
            }
        }
        None => tried.push("registry (no config directory)".into()),
    }
    if let Some(path) = registry {
        let bash_file = path.with_file_name(crate::registry::bash::FILE_NAME);
        match crate::registry::bash::lookup(path, target) {
            crate::registry::bash::Lookup::Found(repo) => {
                // The bash registry is anyone's text: only a repository
                // configured with that id counts. One gone or broken is
                // named, and the search goes on.
                match Recipient::open(&repo) {
                    Ok(recipient) if recipient.id == target => {
                        return Ok(Route::Local(Box::new(recipient)));
                    }
                    Ok(recipient) => tried.push(format!(
                        "bash registry {}: {} is agent {}",
                        bash_file.display(),
                        repo.display(),
                        recipient.id
                    )),
                    Err(e) => tried.push(format!(
                        "bash registry {}: its entry {target} is at {}, {}; fix it there, or register the agent with `aea agents add {target} --path REPO`",
                        bash_file.display(),
                        repo.display(),
                        gone(&repo).map_or_else(
                            || format!("which aea cannot open ({})", crate::error::one_line(&e)),
                            str::to_string
                        )
                    )),
                }
            }
            crate::registry::bash::Lookup::Unusable(why) => tried.push(format!(
                "bash registry {}: {why}; fix it there, or register the agent with `aea agents add {target} --path REPO`",
                bash_file.display()
            )),
            crate::registry::bash::Lookup::Absent => {}
        }
    }
    let siblings = sibling_repos(own_repo, target);
    match siblings.len() {
        0 if via_remote == ViaRemote::Asked => Ok(Route::Remote(target.to_string())),
        0 => {
            let parent = own_repo.parent().unwrap_or(own_repo);
            tried.push(format!("sibling repositories in {}", parent.display()));
            let lead = closest(target, &known_ids(own_repo, registry))
                .map(|id| RecipientLead::Near { id })
                .or((via_remote == ViaRemote::Configured).then_some(RecipientLead::BehindRemote));
            Err(Error::RecipientNotFound {
                target: target.to_string(),
                tried,
                lead,
            })
        }
        1 => Recipient::open(&siblings[0]).map(|r| Route::Local(Box::new(r))),
        _ => Err(Error::RecipientAmbiguous {
            target: target.to_string(),
            candidates: siblings.iter().map(|p| p.display().to_string()).collect(),
        }),
    }
}

/// Why a registered repository is not there any more: gone, or its
/// `.aea/` removed (moved, deleted, uninstalled). `None` when it is there.
fn gone(repo: &Path) -> Option<&'static str> {
    if !repo.exists() {
        Some("which no longer exists")
    } else if !repo.join(AEA_DIR).exists() {
        Some("which has no .aea/ folder")
    } else {
        None
    }
}

/// A registered repository that cannot be opened: when it is gone or has
/// no `.aea/` (moved, deleted, uninstalled), the registry is what to fix,
/// not the old path to initialise.
fn moved(target: &str, registry: &Path, repo: &Path, error: Error) -> Error {
    let Some(why) = gone(repo) else {
        return error;
    };
    Error::RecipientNotFound {
        target: target.to_string(),
        tried: vec![format!(
            "registry {}: {target} is registered at {}, {why}",
            registry.display(),
            repo.display()
        )],
        lead: Some(RecipientLead::Moved {
            registered: repo.to_path_buf(),
        }),
    }
}

/// Whether `dir` is inside a git repository (a `.git` folder or file in it
/// or above it).
fn in_git_repository(dir: &Path) -> bool {
    dir.ancestors().any(|d| d.join(".git").exists())
}

/// `--to` a folder that is no repository but holds initialised ones (the
/// folder of all one's repositories): `aea init` there would be wrong, so
/// the error names them instead. `None` for any other folder, which may be
/// a project still to initialise.
fn holds_repositories(target: &str, path: &Path) -> Option<Error> {
    let mut inside: Vec<String> = fs::read_dir(path)
        .ok()?
        .filter_map(std::result::Result::ok)
        .filter(|e| e.path().join(AEA_DIR).is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    inside.sort();
    if inside.is_empty() {
        return None;
    }
    Some(Error::RecipientNotFound {
        target: target.to_string(),
        tried: vec![format!(
            "{} is neither an aea nor a git repository",
            path.display()
        )],
        lead: Some(RecipientLead::HoldsRepositories { inside }),
    })
}

/// The ids `--to` could have meant: the enabled registry entries and the
/// agents of the sibling repositories of `own_repo`.
fn known_ids(own_repo: &Path, registry: Option<&Path>) -> Vec<String> {
    let mut ids: Vec<String> = registry
        .and_then(|path| Registry::load(path).ok())
        .map(|r| {
            r.agents
                .iter()
                .filter(|(_, e)| e.enabled)
                .map(|(id, _)| id.clone())
                .collect()
        })
        .unwrap_or_default();
    if let Some(parent) = own_repo.parent()
        && let Ok(entries) = fs::read_dir(parent)
    {
        ids.extend(
            entries
                .filter_map(std::result::Result::ok)
                .map(|e| e.path())
                .filter(|p| p != own_repo)
                .filter_map(|p| config::peek_id(&crate::layout::repo_config_file(&p))),
        );
    }
    ids
}

/// A registry entry for an agent that is reached through the mail remote:
/// it names a remote and has no repository on this machine.
fn is_remote(entry: &crate::registry::Entry) -> bool {
    entry.remote.is_some()
        && (entry.path.as_os_str().is_empty() || !entry.path.join(AEA_DIR).is_dir())
}

/// Directories next to `own_repo` whose `.aea/agent-config.yaml` names `id`.
fn sibling_repos(own_repo: &Path, id: &str) -> Vec<PathBuf> {
    let Some(parent) = own_repo.parent() else {
        return Vec::new();
    };
    let Ok(entries) = fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(std::result::Result::ok)
        .map(|e| e.path())
        .filter(|p| p != own_repo && p.join(AEA_DIR).is_dir())
        .filter(|p| config::peek_id(&crate::layout::repo_config_file(p)).as_deref() == Some(id))
        .collect();
    found.sort();
    found
}

/// The return address of `message` (SPEC §5.3): the registry entry of
/// `from.agent_id`, else `from.repo_path` if it holds an AEA repository
/// configured with that id; else, when `via_remote`, that agent's mailbox
/// on the mail remote — which only its owner reads, so a forged `from`
/// cannot redirect the answer. Anything else is refused.
pub fn return_address(
    message: &Message,
    registry: Option<&Path>,
    via_remote: bool,
) -> Result<Route> {
    let agent = &message.from.agent_id;
    if let Some(path) = registry
        && let Some(entry) = Registry::load(path)?.get(agent)
        && entry.enabled
    {
        if let Some(foreign) = Foreign::of(agent, entry) {
            return Ok(Route::Foreign(foreign));
        }
        if is_remote(entry) {
            return Ok(Route::Remote(agent.clone()));
        }
    }
    match local_return_address(message, registry) {
        Ok(recipient) => Ok(Route::Local(Box::new(recipient))),
        Err(Error::NoReturnAddress { .. }) if via_remote => Ok(Route::Remote(agent.clone())),
        Err(e) => Err(e),
    }
}

fn local_return_address(message: &Message, registry: Option<&Path>) -> Result<Recipient> {
    let agent = &message.from.agent_id;
    let refuse = |reason: String| Error::NoReturnAddress {
        agent: agent.clone(),
        reason,
    };
    if let Some(path) = registry
        && let Some(entry) = Registry::load(path)?.get(agent)
        && entry.enabled
    {
        let recipient = Recipient::open(&entry.path)?;
        if &recipient.id != agent {
            return Err(refuse(format!(
                "the registry points at {}, whose id is {}",
                entry.path.display(),
                recipient.id
            )));
        }
        return Ok(recipient);
    }
    // A 0.1.0 message (the bash AEA's) has no repo_path: its registry may
    // know the agent.
    let bash = registry.map(|path| {
        (
            path.with_file_name(crate::registry::bash::FILE_NAME),
            crate::registry::bash::lookup(path, agent),
        )
    });
    let repo_path = match (&message.from.repo_path, bash) {
        (Some(path), _) => path.clone(),
        (None, Some((file, crate::registry::bash::Lookup::Found(path)))) => {
            if let Some(why) = gone(&path) {
                return Err(refuse(format!(
                    "the message has no from.repo_path and the bash registry {} has {agent} at {}, {why}; fix it there, or `aea agents add {agent} --path REPO`",
                    file.display(),
                    path.display(),
                )));
            }
            path.display().to_string()
        }
        (None, Some((file, crate::registry::bash::Lookup::Unusable(why)))) => {
            return Err(refuse(format!(
                "the message has no from.repo_path and the bash registry {} cannot say where {agent} is: {why}; fix it there, or `aea agents add {agent} --path REPO`",
                file.display()
            )));
        }
        (None, _) => {
            return Err(refuse(
                "it is not in the registry and the message has no from.repo_path".into(),
            ));
        }
    };
    let repo = Path::new(&repo_path);
    if !repo.is_absolute() || !repo.join(AEA_DIR).is_dir() {
        return Err(refuse(format!(
            "it is not in the registry and {repo_path} holds no AEA repository"
        )));
    }
    let recipient = Recipient::open(repo)?;
    if &recipient.id != agent {
        return Err(refuse(format!(
            "{repo_path} belongs to agent {}, not {agent}",
            recipient.id
        )));
    }
    Ok(recipient)
}
