//! `aea bridge` (SPEC §12): the folders named in `bridges:` imported into
//! this inbox as their mail arrives, and their side completed when we
//! process it.
//!
//! A bridge reads an OACP agent's `inbox/` or the `to-<slug>.md` file of a
//! Roo mailbox, with [`transfer::import_one`]'s checks (no symlinks, no
//! FIFOs, capped reads, idempotent by message id). For each message it
//! brought in it records, in the receiver's private `bridged/`, the file and
//! the SHA-256 of the bytes it read. Processing the message here then does
//! what the other protocol's reader does once done: OACP deletes the file
//! from its inbox, Roo deletes its mailbox file and logs the message id
//! (in our audit log, `bridge_completed`). A file is removed only when it
//! still lies in a bridge the user trusted and still holds exactly the
//! bytes that were imported; anything else is left where it is and said.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::transfer::{self, Imported, ProtocolFormat as _, Status};
use crate::audit::{AuditEvent, Event};
use crate::config::BridgeConfig;
use crate::error::{Error, Result};
use crate::foreign::Protocol;
use crate::fsutil::{self, ReadLimited};
use crate::mailbox::{Held, Mailbox, Processed};
use crate::runtime::Runtime;
use crate::words::word_enum;

/// One bridge in force: the folder read and which files in it are ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bridge {
    pub protocol: Protocol,
    /// OACP: the agent's `inbox/`; Roo: the mailbox folder.
    pub dir: PathBuf,
    /// Roo: our file is `to-<slug>.md`.
    pub slug: Option<String>,
    /// The repository, when the config named the folder relative to it:
    /// the folder must then be reached through no symbolic link. Trust is
    /// bound to the config's text; a link committed in the repository (or
    /// changed by a pull after `aea trust`) would otherwise send a trusted
    /// `.roo/mailbox` anywhere.
    pub within: Option<PathBuf>,
}

impl Bridge {
    /// The bridge `config` names, for the agent `own_id` of `repo`.
    pub fn of(config: &BridgeConfig, repo: &Path, own_id: &str) -> Self {
        let base = repo.join(&config.path);
        // A path written out in full that leads into the repository is
        // held to the same rule: the links are the repository's.
        let within =
            (config.path.is_relative() || base.starts_with(repo)).then(|| repo.to_path_buf());
        match config.protocol {
            Protocol::Oacp => Bridge {
                protocol: Protocol::Oacp,
                dir: base.join("inbox"),
                slug: None,
                within,
            },
            Protocol::Roo => Bridge {
                protocol: Protocol::Roo,
                dir: base,
                slug: Some(config.slug.clone().unwrap_or_else(|| own_id.to_string())),
                within,
            },
        }
    }

    /// The folder is a real directory, and one named relative to the
    /// repository is reached through no symbolic link on the way.
    pub(crate) fn require_folder(&self) -> Result<()> {
        if let Some(repo) = &self.within
            && let Ok(rest) = self.dir.strip_prefix(repo)
        {
            let mut at = repo.clone();
            for part in rest.components() {
                at.push(part);
                if fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Err(Error::Symlink { path: at });
                }
            }
        }
        fsutil::require_real_dir(&self.dir)
    }

    /// Whether the file `name` in the folder is mail for us.
    pub(crate) fn wants(&self, name: &str) -> bool {
        match &self.slug {
            Some(slug) => name == format!("to-{slug}.md"),
            None => self.protocol.is_theirs(name),
        }
    }

    /// Our files in the folder, sorted.
    fn files(&self) -> Result<Vec<PathBuf>> {
        self.require_folder()?;
        let mut names: Vec<String> = fs::read_dir(&self.dir)
            .map_err(|e| Error::io("list", &self.dir, e))?
            .filter_map(std::result::Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| self.wants(n))
            .collect();
        names.sort();
        Ok(names.into_iter().map(|n| self.dir.join(n)).collect())
    }
}

/// What a bridge remembers of a message it imported.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    protocol: Protocol,
    source: PathBuf,
    sha256: String,
    /// The id as their file gave it: what Roo's reader logs.
    foreign_id: String,
}

word_enum! {
    /// What became of the other side of a processed message.
    pub enum Done {
        /// Their file was removed, as their reader would have.
        Removed = "removed",
        /// Their file was gone already.
        Gone = "gone",
        /// Their file holds other bytes now, or not this message (not what
        /// we imported): left.
        Changed = "changed",
        /// Their folder is no longer a bridge in force (removed from the
        /// config, or not trusted): left.
        NotBridged = "not-bridged",
        /// Their file is a symlink or not a regular file now: left.
        Refused = "refused",
    }
}

/// The other side of one processed message.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Completed {
    pub message_id: String,
    pub protocol: Protocol,
    pub source: PathBuf,
    pub done: Done,
}

/// What a running bridge found in earlier passes: the digest of each file
/// it imported or found held. Such a file, unchanged, is skipped: finding
/// a message held reads the whole inbox, so every pass re-reading every
/// file an agent has not processed yet cost time in the square of their
/// number, on every file event (seconds per pass at a few hundred).
///
/// It also holds back a file changed in the last [`SETTLE`]: a running
/// bridge is woken when a file is created, and a Roo agent writes its file
/// in place, so the pass could read half a file that parses (a cut body),
/// import it, and then hold the whole one as already imported.
#[derive(Debug, Default)]
pub struct Seen {
    digests: HashMap<PathBuf, String>,
    /// A file was held back this pass: look again after [`SETTLE`].
    pub unsettled: bool,
}

/// How long a file must be left unchanged before a running bridge reads it.
pub const SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether `path` changed less than [`SETTLE`] ago. A time further in
/// the future (another machine's clock, or a sender's `touch`) counts as
/// settled: waiting for it would hold the file back for as long as the
/// sender likes.
fn unsettled(path: &Path) -> bool {
    fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| match t.elapsed() {
            Ok(age) => age < SETTLE,
            Err(ahead) => ahead.duration() < SETTLE,
        })
}

/// One pass over every bridge: new files imported, each recorded; a file
/// whose message is already processed here (its completion was cut short)
/// completed now. Files refused are reported and left. With `seen`, files
/// unchanged since an earlier pass imported or held them are skipped.
pub fn pass(
    mailbox: &Mailbox,
    bridges: &[Bridge],
    rt: &Runtime,
    mut seen: Option<&mut Seen>,
) -> Result<(Vec<Imported>, Vec<Completed>)> {
    let mut imported = Vec::new();
    let mut completed = Vec::new();
    for bridge in bridges {
        // One folder missing or refused is reported like a refused file,
        // and the other bridges are still read.
        let files = match bridge.files() {
            Ok(files) => files,
            Err(e) => {
                let mut reason = crate::error::one_line(&e);
                // `path:` naming the inbox itself, a likely slip.
                if bridge.protocol == Protocol::Oacp
                    && bridge.dir.parent().and_then(Path::file_name) == Some("inbox".as_ref())
                {
                    reason.push_str(
                        " (an OACP bridge's `path` is the agent's folder, whose inbox/ is read)",
                    );
                }
                imported.push(Imported {
                    source: bridge.dir.clone(),
                    status: Status::Refused,
                    message_id: None,
                    path: None,
                    reason: Some(reason),
                    sha256: None,
                    foreign_id: None,
                });
                continue;
            }
        };
        if let Some(seen) = seen.as_deref_mut() {
            seen.digests
                .retain(|p, _| p.parent() != Some(bridge.dir.as_path()) || files.contains(p));
        }
        for path in files {
            if let Some(seen) = seen.as_deref_mut()
                && unsettled(&path)
            {
                seen.unsettled = true;
                continue;
            }
            let known = seen.as_deref().and_then(|seen| seen.digests.get(&path));
            if let Some(known) = known
                && fsutil::read_limited(&path, mailbox.message_limit())
                    .is_ok_and(|bytes| fsutil::sha256_hex(&bytes) == *known)
            {
                continue;
            }
            let item = transfer::import_one(mailbox, bridge.protocol, &path, rt)?;
            if let (Some(seen), Some(sha256), Status::Imported | Status::Held) =
                (seen.as_deref_mut(), &item.sha256, item.status)
            {
                seen.digests.insert(path.clone(), sha256.clone());
            }
            if let (Some(id), Some(sha256), Some(foreign_id)) =
                (&item.message_id, &item.sha256, &item.foreign_id)
            {
                let record = Record {
                    protocol: bridge.protocol,
                    source: path.clone(),
                    sha256: sha256.clone(),
                    foreign_id: foreign_id.clone(),
                };
                // Only what this pass brought in is recorded: a file whose
                // id we hold from elsewhere (`aea import`, or a file
                // rewritten after its import) is not ours to remove.
                if item.status == Status::Imported {
                    let bytes = serde_json::to_vec(&record).expect("a record always serialises");
                    mailbox.sent().record_bridged(id, &bytes)?;
                } else if mailbox.sent().bridged(id)?.is_some() && processed_here(mailbox, id) {
                    // Processed, but the removal was cut short.
                    completed.extend(complete(mailbox, id, bridges, rt)?);
                }
            }
            imported.push(item);
        }
    }
    Ok((imported, completed))
}

/// Whether message `id` is in this inbox and processed.
fn processed_here(mailbox: &Mailbox, id: &str) -> bool {
    mailbox
        .inbox()
        .find_id(id, None, &[Held::Inbox])
        .and_then(|(entry, _)| mailbox.records().processed(&entry).ok())
        .is_some_and(|p| matches!(p, Processed::Done(_)))
}

/// Completes the other side of message `id`, processed here, if a bridge
/// brought it in: its file is removed from their folder when it still
/// lies in a bridge in force and holds the bytes imported. `None` when no
/// bridge brought it.
pub fn complete(
    mailbox: &Mailbox,
    id: &str,
    bridges: &[Bridge],
    rt: &Runtime,
) -> Result<Option<Completed>> {
    let Some(bytes) = mailbox.sent().bridged(id)? else {
        return Ok(None);
    };
    let Ok(record) = serde_json::from_slice::<Record>(&bytes) else {
        // Not a record of ours: nothing to act on.
        mailbox.sent().forget_bridged(id)?;
        return Ok(None);
    };
    let completed = |done: Done| Completed {
        message_id: id.to_string(),
        protocol: record.protocol,
        source: record.source.clone(),
        done,
    };
    let name = record.source.file_name().and_then(|n| n.to_str());
    let in_force = bridges.iter().find(|b| {
        b.protocol == record.protocol
            && record.source.parent() == Some(b.dir.as_path())
            && name.is_some_and(|n| b.wants(n))
    });
    let Some(bridge) = in_force else {
        return Ok(Some(completed(Done::NotBridged)));
    };
    let name = name.expect("checked by in_force");
    let done = if bridge.require_folder().is_err() {
        Done::Refused
    } else {
        remove_if_unchanged(&record, name, id, mailbox)?
    };
    if matches!(done, Done::Removed | Done::Gone | Done::Changed) {
        mailbox.sent().forget_bridged(id)?;
    }
    if done == Done::Removed {
        mailbox.log(
            &Event::new(rt, AuditEvent::BridgeCompleted)
                .with("message", id)
                .with("protocol", record.protocol.as_str())
                .with("source", record.source.display().to_string())
                .with("foreign_id", record.foreign_id.as_str()),
        )?;
    }
    Ok(Some(completed(done)))
}

/// Removes the record's file if it holds the bytes of its digest, and
/// those bytes are message `id`. The file is first renamed aside in its
/// folder, in one step, and checked there: a file put in its place
/// meanwhile is never the one removed, and a changed one is put back.
fn remove_if_unchanged(record: &Record, name: &str, id: &str, mailbox: &Mailbox) -> Result<Done> {
    let (path, sha256) = (record.source.as_path(), record.sha256.as_str());
    let limit = mailbox.message_limit();
    match fsutil::read_limited(path, limit) {
        // A record planted in the private `bridged/` can name any file of a
        // bridge with its digest: only one that holds the message
        // processed here is ours to remove.
        Ok(bytes)
            if fsutil::sha256_hex(&bytes) == sha256 && holds(record.protocol, &bytes, name, id) => {
        }
        Ok(_) | Err(ReadLimited::TooLarge(_)) => return Ok(Done::Changed),
        Err(ReadLimited::Symlink | ReadLimited::NotAFile) => return Ok(Done::Refused),
        Err(ReadLimited::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Done::Gone);
        }
        Err(ReadLimited::Io(e)) => return Err(Error::io("read", path, e)),
    }
    // rename(2) replaces what holds the name it moves to: the aside name
    // must be one nobody holds (a file of theirs, or one an earlier
    // completion had to leave aside), so it is made unique and checked.
    let aside = (0..100u32)
        .map(|n| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            path.with_file_name(format!(
                ".aea-completing-{}-{nanos:09}-{n}-{name}",
                std::process::id()
            ))
        })
        .find(|aside| fs::symlink_metadata(aside).is_err())
        .ok_or_else(|| Error::UnsafeState {
            path: path.to_path_buf(),
            detail: "has no free name to be moved aside under; left".into(),
        })?;
    match fs::rename(path, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Done::Gone),
        Err(e) => return Err(Error::io("move aside", path, e)),
    }
    let same =
        fsutil::read_limited(&aside, limit).is_ok_and(|bytes| fsutil::sha256_hex(&bytes) == sha256);
    if same {
        fs::remove_file(&aside).map_err(|e| Error::io("remove", &aside, e))?;
        return Ok(Done::Removed);
    }
    // Someone else's file came in between: back under its name, unless
    // that is taken again (then it stays aside, under a name that says so).
    if fs::hard_link(&aside, path).is_ok() {
        let _ = fs::remove_file(&aside);
    }
    Ok(Done::Changed)
}

/// Whether `bytes`, the file `name` of a `protocol` folder, is message `id`.
fn holds(protocol: Protocol, bytes: &[u8], name: &str, id: &str) -> bool {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|text| protocol.parse(text, name).ok())
        .is_some_and(|message| message.message_id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROO: &str =
        "---\nfrom: tester\ntimestamp: \"2025-07-07T11:15:00Z\"\nid: \"msg-1\"\n---\n\nRun it.\n";

    /// A running bridge reads a file it found held once, unchanged, no
    /// more (each look costs a read of the whole inbox); a new file, or
    /// the same name with new bytes, is read.
    #[test]
    fn a_running_pass_skips_files_unchanged_since_it_held_them() {
        let repo = tempfile::tempdir().unwrap();
        fs::create_dir(repo.path().join(crate::mailbox::AEA_DIR)).unwrap();
        // A git repository: its private state stays inside the test's folder.
        fs::create_dir(repo.path().join(".git")).unwrap();
        let mailbox = Mailbox::at(repo.path()).unwrap().owned();
        let rt = Runtime::new(&aea_ground::env::Env::default());
        let folder = tempfile::tempdir().unwrap();
        let bridges = [Bridge {
            protocol: Protocol::Roo,
            dir: folder.path().to_path_buf(),
            slug: Some("web".into()),
            within: None,
        }];
        let write = |text: &str| {
            let path = folder.path().join("to-web.md");
            fs::write(&path, text).unwrap();
            let settled = std::time::SystemTime::now() - SETTLE * 2;
            fs::File::options()
                .append(true)
                .open(&path)
                .unwrap()
                .set_modified(settled)
                .unwrap();
        };
        // Just written: a running pass holds it back, and says so.
        fs::write(folder.path().join("to-web.md"), ROO).unwrap();
        let mut seen = Seen::default();
        assert!(
            pass(&mailbox, &bridges, &rt, Some(&mut seen))
                .unwrap()
                .0
                .is_empty()
        );
        assert!(seen.unsettled);
        write(ROO);
        let statuses = |seen: Option<&mut Seen>| -> Vec<Status> {
            pass(&mailbox, &bridges, &rt, seen)
                .unwrap()
                .0
                .iter()
                .map(|i| i.status)
                .collect()
        };
        assert_eq!(statuses(Some(&mut seen)), [Status::Imported]);
        assert_eq!(statuses(Some(&mut seen)), []);
        // Without memory (`--once`), it is looked at and found held.
        assert_eq!(statuses(None), [Status::Held]);
        write(&ROO.replace("msg-1", "msg-2"));
        assert_eq!(statuses(Some(&mut seen)), [Status::Imported]);

        // A time far ahead is not a file being written.
        let path = folder.path().join("to-web.md");
        fs::write(&path, ROO.replace("msg-1", "msg-3")).unwrap();
        fs::File::options()
            .append(true)
            .open(&path)
            .unwrap()
            .set_modified(std::time::SystemTime::now() + SETTLE * 1000)
            .unwrap();
        assert_eq!(statuses(Some(&mut seen)), [Status::Imported]);
    }
}
