//! The health of an inbox's state (SPEC §9, §15.1): what `aea doctor`
//! checks of the state folders and files, the mail waiting, the claims and
//! staging left by killed processes, the registry and the peers' keys. Each
//! check computes what is wrong; the command words the finding and prints.
//!
//! Layer: store. It reads the mailbox, the layout, the registry and the key
//! ring, never git or a harness.

use std::fs;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Duration, Utc};

use crate::error::Result;
use crate::layout::{self, Layout, Private, Shared};
use crate::mailbox::{Mailbox, Processed, SHARED_STATE_DIRS};
use crate::registry::{Health, Registry};

/// What is wrong, and the exact command that fixes it.
pub type Problem = (String, String);

/// What is wrong with the receiver's state (SPEC §15.1), each with the
/// exact command that fixes it: state folders (the private state, and the
/// folders of `.aea/` aea writes) that are symlinks, not directories,
/// owned by another user or writable by others; state files that are
/// symlinks, special files or another user's; special files anywhere in
/// `.aea/`; a world-writable `.aea/` that is not sticky.
pub fn state_problems(layout: &Layout) -> Vec<Problem> {
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

/// Claims whose process is gone or that are older than 30 minutes: the
/// same rule `process` takes claims over by.
pub fn stale_claims(mailbox: &Mailbox, now: DateTime<Utc>) -> Vec<String> {
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
pub fn old_staging(mailbox: &Mailbox, now: DateTime<Utc>) -> Vec<PathBuf> {
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
                .is_ok_and(|t| now - DateTime::<Utc>::from(t) > Duration::hours(1))
        })
        .map(|e| e.path())
        .collect()
}

/// Names of the receiver's state that an older aea kept inside `.aea/`,
/// found there now: left over from before the state moved to the private
/// state, or planted by a commit (a clone or a pull writes ignored files
/// too). aea never reads them; what it could verify was taken over once
/// (see `crate::migrate`).
pub fn old_state(layout: &Layout) -> Vec<&'static str> {
    layout::OLD_STATE_NAMES
        .iter()
        .copied()
        .filter(|name| fs::symlink_metadata(layout.old(name)).is_ok())
        .collect()
}

/// The folders of `.aea/` and the private state that are missing.
pub fn missing_folders(layout: &Layout) -> Vec<String> {
    let mut missing: Vec<String> = Shared::FOLDERS
        .iter()
        .filter(|d| !layout.shared(**d).is_dir())
        .map(|d| format!(".aea/{}", d.name()))
        .collect();
    if !layout.state().is_dir() {
        missing.push(format!("the private state {}", layout.state().display()));
    }
    missing
}

/// What is wrong with agent `id`'s entry in the registry at `path` for
/// the repository `repo`; `Err` when the registry does not read.
pub fn registry_problem(path: &Path, repo: &Path, id: &str) -> Result<Option<Problem>> {
    let registry = Registry::load(path)?;
    Ok(match registry.get(id) {
        None => Some((
            format!("{id} is not registered"),
            format!("aea init {}", repo.display()),
        )),
        Some(entry) if entry.path != repo => Some((
            format!("{id} is registered for {}", entry.path.display()),
            "choose another id with `aea init --id`, or fix the registry entry".to_string(),
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
    })
}

/// Peers on this machine whose mail does not verify as their repository
/// would have it (SPEC §15.2): an entry with no pinned key (a registry
/// written before aea had keys) while the repository publishes one, and a
/// pinned key the repository no longer publishes. Each with the exact line
/// that pins the published key, to run once the agent's owner confirmed
/// its fingerprint: this reads the committed key, it never pins it.
pub fn peer_key_problems(registry: &Registry, own: Option<&str>) -> Vec<Problem> {
    use crate::identity;
    use crate::keyring::{self, Published};
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
    found
}

/// The config as every command reads it, and what in it waits for `aea
/// trust`.
pub struct ConfigHealth {
    /// The agent id the config names (`None` when it names none), or why
    /// it does not read and compile, in one line.
    pub id: std::result::Result<Option<String>, String>,
    /// The settings ignored until trusted, or why trust cannot be told;
    /// `None` when the config does not read.
    pub untrusted: Option<std::result::Result<Vec<String>, String>>,
}

/// Reads the config at `config_path` of the repository `repo` the way
/// every command and the pre-commit gate do, with the trust store at
/// `trust_store`.
pub fn config_health(config_path: &Path, repo: &Path, trust_store: Option<&Path>) -> ConfigHealth {
    // Never a FIFO or a symlink: an unreadable config reads as empty here
    // and the state check names the file.
    let text = crate::fsutil::read_optional(config_path)
        .ok()
        .flatten()
        .unwrap_or_default();
    let checked = crate::policy::Checked::parse(&text, config_path);
    let untrusted = checked.as_ref().ok().map(|c| {
        crate::config_trust::trusted_settings(&c.config, repo, trust_store)
            .map(|t| t.ignored.keys())
            .map_err(|e| crate::error::one_line(&e))
    });
    let id = checked
        .map(|c| c.config.agent.id)
        .map_err(|e| crate::error::one_line(&e));
    ConfigHealth { id, untrusted }
}

/// What the unprocessed mail and the processed markers hold that needs a
/// person.
pub struct InboxHealth {
    /// Unprocessed files that are not valid messages.
    pub invalid: Vec<String>,
    /// Of those, the forged (SPEC §15.2): in a known agent's name without
    /// its key.
    pub forged: Vec<String>,
    /// Files replaced after they were processed: their records or markers
    /// are for other bytes.
    pub replaced: Vec<String>,
}

/// Forged and invalid mail, and processed messages replaced since; `Err`
/// when the inbox cannot be listed.
pub fn inbox(mailbox: &Mailbox) -> Result<InboxHealth> {
    let entries = mailbox.inbox().unprocessed()?;
    let invalid = entries
        .iter()
        .filter(|e| e.message.is_err())
        .map(|e| e.name.clone())
        .collect();
    let forged = entries
        .iter()
        .filter(|e| e.message.as_ref().is_err_and(|r| r.starts_with("forged")))
        .map(|e| e.name.clone())
        .collect();
    // Every file of the inbox with a record or marker, against the bytes
    // it was written for.
    let replaced = mailbox
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
    Ok(InboxHealth {
        invalid,
        forged,
        replaced,
    })
}

/// Whether `.aea/agent.log` still starts with what the last look saw of
/// it (it is append-only; git or a tool may rewrite it, and nothing is
/// decided from it, so this is said, not acted on): why not, if not.
/// Remembers what it sees now for the next look.
pub fn log_rewritten(mailbox: &Mailbox) -> Option<String> {
    let path = mailbox.layout().private(Private::LogWitness);
    let before: Option<crate::audit::Witness> =
        crate::fsutil::read_state(&path, crate::fsutil::SMALL_STATE_LIMIT)
            .ok()
            .flatten()
            .and_then(|b| serde_json::from_slice(&b).ok());
    let problem = before.as_ref().and_then(|w| w.holds(mailbox.dir()).err());
    if let (Some(now), Ok(path)) = (
        crate::audit::Witness::take(mailbox.dir()),
        mailbox.private_file(Private::LogWitness),
    ) && before.as_ref() != Some(&now)
    {
        let text = serde_json::to_vec(&now).expect("a witness always serialises");
        let _ = crate::fsutil::replace_atomic(&path, &text);
    }
    problem
}
