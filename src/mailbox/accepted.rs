//! An id is accepted once (SPEC §15.2): the receiver remembers, in its
//! private `accepted/`, which file first held each message id it took as
//! mail from each sender. A second file holding an id already held — a genuine signed
//! message copied under a new name, by anyone who can read the inbox and
//! write into it — is a replay: moved to `.aea/.quarantine/` with that
//! reason and an audit line, never listed as new mail, never acted on.
//!
//! One exception keeps a forger from silencing real mail: a file whose
//! sender is verified is never displaced by an earlier file of the same id
//! whose sender is not. The verified one is accepted, and the unverified
//! holder, if it still waits, is set aside instead.
//!
//! Each record is one symlink, `accepted/<SHA-256 of sender and id>`, whose
//! target text is the record: `<v|u|s> <file> <bytes>`, the first 24 hex
//! digits of the SHA-256 of the holding file's name (its short reference
//! is their start) and the first 16 of the SHA-256 of its bytes. Made
//! whole in one `symlink(2)`, which fails when the name is taken, so two
//! listings at once agree on who was first; read in one `readlink(2)`;
//! never followed. Under 60 bytes, it lives in the inode on ext4 (no data
//! block): a history of 100,000 messages costs 100,000 inodes and no disk
//! blocks. A record is replaced only by a rename over it.
//!
//! The memory starts from the id index when it is first made (`s`: held,
//! sender not yet judged), so mail received before it existed is held too;
//! such a record is judged when another file claims its id.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::{Entry, Mailbox};
use crate::audit::{AuditEvent, Event};
use crate::error::{Error, Result};
use crate::fsutil;
use crate::identity::Verification;
use crate::layout::{Private, seen};
use crate::message;

/// The record that says the memory was started from the id index.
const SEEDED: &str = ".seeded";

/// Why a replayed file was set aside, for the `.reason` file and the log.
pub fn replay_reason(id: &str, held: &str) -> String {
    format!("replay: message id {id} is already held by {held}; an id is accepted once")
}

/// Why an unverified file was set aside for a verified one of its id.
pub fn displaced_reason(id: &str, by: &str) -> String {
    format!(
        "unverified file holding message id {id}, which the verified {by} holds; a verified message is never displaced by an unverified one"
    )
}

/// Hex digits of a file name's SHA-256 a record keeps: 96 bits, far
/// beyond grinding a name that another file's record would take as its.
const NAME_DIGITS: usize = 24;
/// Hex digits of the bytes' SHA-256 a record keeps.
const BYTES_DIGITS: usize = 16;

/// What the receiver knows of the file that holds an id.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Held {
    /// How far its sender was judged.
    sender: Judged,
    /// The start of the SHA-256 of its file name (it keeps the name in
    /// the store and the archive).
    name: String,
    /// The start of the SHA-256 of its bytes when accepted (none for a
    /// seeded record).
    bytes: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Judged {
    Verified,
    Unverified,
    /// Started from the id index: not judged yet.
    Seeded,
}

/// The start of the SHA-256 of file name `name` that a record keeps.
fn name_digest(name: &str) -> String {
    let mut digest = fsutil::sha256_hex(name.as_bytes());
    digest.truncate(NAME_DIGITS);
    digest
}

impl Held {
    fn of(entry: &Entry, sender: Judged) -> Held {
        Held {
            sender,
            name: name_digest(&entry.name),
            bytes: entry
                .sha256
                .as_deref()
                .map(|d| d[..BYTES_DIGITS.min(d.len())].to_string()),
        }
    }

    /// How `entry` is held: verified or not.
    fn judged(entry: &Entry) -> Held {
        let sender = if matches!(entry.verification, Some(Verification::Verified)) {
            Judged::Verified
        } else {
            Judged::Unverified
        };
        Held::of(entry, sender)
    }

    /// aea's short reference of the holding file (see [`crate::shortref`]).
    fn reference(&self) -> String {
        format!(
            "{}{}",
            crate::shortref::PREFIX,
            &self.name[..crate::shortref::MIN_DIGITS]
        )
    }

    fn is(&self, name: &str) -> bool {
        self.name == name_digest(name)
    }

    fn text(&self) -> String {
        let sender = match self.sender {
            Judged::Verified => 'v',
            Judged::Unverified => 'u',
            Judged::Seeded => 's',
        };
        format!(
            "{sender} {} {}",
            self.name,
            self.bytes.as_deref().unwrap_or("-")
        )
    }

    fn parse(text: &str) -> Option<Held> {
        let hex = |t: &str, n: usize| {
            t.len() == n && t.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        };
        let mut parts = text.split(' ');
        let sender = match parts.next()? {
            "v" => Judged::Verified,
            "u" => Judged::Unverified,
            "s" => Judged::Seeded,
            _ => return None,
        };
        let name = parts.next().filter(|t| hex(t, NAME_DIGITS))?.to_string();
        let bytes = match parts.next()? {
            "-" => None,
            t if hex(t, BYTES_DIGITS) => Some(t.to_string()),
            _ => return None,
        };
        parts.next().is_none().then_some(Held {
            sender,
            name,
            bytes,
        })
    }
}

/// What the memory says of a file holding an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// It is the file that holds its id (now, or from before).
    Accepted,
    /// Another file holds its id: this one is a replay. `held` is aea's
    /// short reference of that file.
    Replay { held: String },
    /// It is verified, and an unverified file held its id: it holds the
    /// id now. `held` is that file's reference; a listing sets it aside
    /// if it waits.
    Displaces { held: String },
    /// Nothing could be remembered (no private state, a damaged folder):
    /// listed as before.
    Unknown,
}

impl Mailbox {
    /// The entries of an inbox listing that are mail: each valid message
    /// is judged against the ids accepted before ([`Mailbox::admit`]), and
    /// replays are set aside. Verified mail is judged first, so that in one
    /// listing too an unverified file never holds an id before a verified
    /// one.
    pub(super) fn admitted(&self, mut entries: Vec<Entry>) -> Vec<Entry> {
        let Some(dir) = self.accepted_dir() else {
            return entries;
        };
        entries.sort_by_key(|e| !matches!(e.verification, Some(Verification::Verified)));
        let mut kept: Vec<Entry> = Vec::with_capacity(entries.len());
        let mut displaced: Vec<(String, String)> = Vec::new();
        for entry in entries {
            let Some(id) = entry.valid().map(|m| m.message_id.clone()) else {
                kept.push(entry);
                continue;
            };
            match self.admit_in(&dir, &entry) {
                Admission::Replay { held } => {
                    let ours = crate::shortref::of(&entry.name);
                    let reason = match displaced.iter().find(|(old, _)| *old == ours) {
                        Some((_, by)) => displaced_reason(&id, by),
                        None => replay_reason(&id, &held),
                    };
                    self.set_aside(&entry, &held, &reason);
                }
                Admission::Displaces { held } => {
                    let by = crate::shortref::of(&entry.name);
                    if let Some(at) = kept
                        .iter()
                        .position(|e| crate::shortref::of(&e.name) == held)
                    {
                        let old = kept.remove(at);
                        self.set_aside(&old, &by, &displaced_reason(&id, &by));
                    } else {
                        displaced.push((held, by));
                    }
                    kept.push(entry);
                }
                Admission::Accepted | Admission::Unknown => kept.push(entry),
            }
        }
        kept
    }

    /// Inbox `entry`, found by reference, judged like a listing judges
    /// it: a replay is set aside and refused, and a verified message that
    /// displaces an unverified holder of its id sets that one aside.
    pub(super) fn admitted_one(&self, entry: Entry) -> Result<Entry> {
        if entry.path.parent() != Some(self.dir()) {
            return Ok(entry);
        }
        let Some(id) = entry.valid().map(|m| m.message_id.clone()) else {
            return Ok(entry);
        };
        match self.admit(&entry) {
            Admission::Replay { held } => {
                self.set_aside(&entry, &held, &replay_reason(&id, &held));
                Err(Error::Replayed {
                    name: entry.name,
                    held,
                })
            }
            // The unverified holder, if it waits, is set aside by the
            // next listing: the id is this file's now.
            Admission::Displaces { .. } | Admission::Accepted | Admission::Unknown => Ok(entry),
        }
    }

    /// Moves inbox `entry` to `.aea/.quarantine/` with `reason`, and logs
    /// it. Best effort: what cannot be moved stays out of every listing
    /// all the same, and the log line says why it stayed.
    fn set_aside(&self, entry: &Entry, held: &str, reason: &str) {
        let moved = self.move_out(&entry.name, super::Aside::Quarantine, Some(reason));
        if matches!(moved, Ok(None)) {
            // Gone: another reader set it aside a moment ago, and said so.
            return;
        }
        let Some(rt) = &self.auditor else {
            return;
        };
        let mut event = Event::new(rt, AuditEvent::Quarantined)
            .with("file", entry.name.as_str())
            .with("held_by", held)
            .with("reason", reason);
        if let Some(m) = entry.valid() {
            event = event.with("message", m.message_id.as_str());
        }
        if let Err(e) = &moved {
            event = event.with("not_moved", crate::error::one_line(e));
        }
        let _ = self.log(&event);
    }

    /// Judges inbox `entry` (a valid message) against the ids accepted
    /// before, accepting its id if nobody holds it.
    pub fn admit(&self, entry: &Entry) -> Admission {
        match self.accepted_dir() {
            Some(dir) => self.admit_in(&dir, entry),
            None => Admission::Unknown,
        }
    }

    fn admit_in(&self, dir: &Path, entry: &Entry) -> Admission {
        let Some(message) = entry.valid() else {
            return Admission::Accepted;
        };
        let path = dir.join(record_name(&message.from.agent_id, &message.message_id));
        let ours = Held::judged(entry);
        for _ in 0..3 {
            match read_record(&path) {
                Ok(Some(held)) => return self.judge_held(&path, &message.message_id, held, &ours),
                Ok(None) => {}
                Err(()) => return Admission::Unknown,
            }
            match make_record(&path, &ours) {
                Ok(true) => return Admission::Accepted,
                // Another listing accepted it a moment ago: judged again.
                Ok(false) => {}
                Err(()) => return Admission::Unknown,
            }
        }
        Admission::Unknown
    }

    /// `ours` claims the id that `held` holds.
    fn judge_held(&self, path: &Path, id: &str, held: Held, ours: &Held) -> Admission {
        if held.name == ours.name {
            return Admission::Accepted;
        }
        let held = match held.sender {
            Judged::Seeded => self.judge_seeded(path, id, held),
            _ => held,
        };
        if ours.sender == Judged::Verified && held.sender != Judged::Verified {
            return match replace_record(path, ours) {
                Ok(()) => Admission::Displaces {
                    held: held.reference(),
                },
                Err(()) => Admission::Unknown,
            };
        }
        Admission::Replay {
            held: held.reference(),
        }
    }

    /// A seeded record, judged by reading the file it names wherever the
    /// receiver holds it: verified or not, and its digest. A file gone
    /// from all of them (quarantined, say) still holds its id, unverified.
    fn judge_seeded(&self, path: &Path, id: &str, held: Held) -> Held {
        let places: Vec<PathBuf> = std::iter::once(self.dir().to_path_buf())
            .chain(
                [Private::Processed, Private::Archive]
                    .into_iter()
                    .filter_map(|p| self.private_dir(p).ok().flatten()),
            )
            .collect();
        let found = self
            .indexed_names(id)
            .into_iter()
            .filter(|n| held.is(n))
            .find_map(|n| places.iter().find_map(|dir| self.read_listed(dir, &n)))
            .filter(|e| e.valid().is_some_and(|m| m.message_id == id));
        let judged = match &found {
            Some(entry) => Held::judged(entry),
            None => Held {
                sender: Judged::Unverified,
                ..held
            },
        };
        let _ = replace_record(path, &judged);
        judged
    }

    /// The file that holds message id `id`, if the receiver accepted it
    /// with bytes of SHA-256 `sha256` (found by its name in the id index).
    pub fn accepted_as(&self, sender: &str, id: &str, sha256: &str) -> Option<String> {
        let dir = self.private_dir(Private::Accepted).ok()??;
        let held = read_record(&dir.join(record_name(sender, id))).ok()??;
        if held.bytes.as_deref() != sha256.get(..BYTES_DIGITS) {
            return None;
        }
        self.indexed_names(id).into_iter().find(|n| held.is(n))
    }

    /// `accepted/`, made (and started from the id index) when missing;
    /// `None` outside the receiver's own inbox or where it is not sound.
    fn accepted_dir(&self) -> Option<PathBuf> {
        if !self.own || self.keyring.is_none() {
            return None;
        }
        let dir = self.make_private_dir(Private::Accepted).ok()?;
        if fs::symlink_metadata(dir.join(SEEDED)).is_err() {
            self.seed(&dir);
        }
        Some(dir)
    }

    /// Starts the memory from the id index: every (id, file) it lists
    /// holds its id, the first file indexed for an id first. Two listings
    /// may seed at once: records are only ever created, so both agree.
    fn seed(&self, dir: &Path) {
        if let Ok(Some(seen)) = self.private_dir(Private::Seen) {
            let ids = seen.join(seen::IDS);
            if let Ok(buckets) = fs::read_dir(&ids) {
                for bucket in buckets.flatten() {
                    for (id, name) in Mailbox::index_pairs(&bucket.path()) {
                        // The index keeps no sender: the name says whose
                        // it is, as aea and the bash AEA name mail.
                        let Some(sender) =
                            message::parse_file_name(&name).map(|p| p.sender.to_string())
                        else {
                            continue;
                        };
                        let held = Held {
                            sender: Judged::Seeded,
                            name: name_digest(&name),
                            bytes: None,
                        };
                        let _ = make_record(&dir.join(record_name(&sender, &id)), &held);
                    }
                }
            }
        }
        let _ = symlink(Path::new("seeded"), &dir.join(SEEDED));
    }
}

/// A record's name: the SHA-256 of the sender's id and the message id,
/// so any id makes a file name. Per sender: a replay keeps its sender (a
/// signature covers it), and a peer that puts another's id on its own
/// mail must not make that other's message a replay (references by that
/// id are refused as ambiguous instead).
fn record_name(sender: &str, id: &str) -> String {
    fsutil::sha256_hex(format!("{sender}\n{id}").as_bytes())
}

/// The record at `path`: `Ok(None)` when there is none, `Err` when it is
/// not one (a file where a record should be: a damaged folder).
fn read_record(path: &Path) -> std::result::Result<Option<Held>, ()> {
    match fs::read_link(path) {
        Ok(target) => target.to_str().and_then(Held::parse).map(Some).ok_or(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(_) => Err(()),
    }
}

/// Creates the record at `path`: false when one is there already.
fn make_record(path: &Path, held: &Held) -> std::result::Result<bool, ()> {
    match symlink(Path::new(&held.text()), path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(_) => Err(()),
    }
}

/// Replaces the record at `path` (made beside it, renamed over it).
fn replace_record(path: &Path, held: &Held) -> std::result::Result<(), ()> {
    let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
    let _ = fs::remove_file(&tmp);
    symlink(Path::new(&held.text()), &tmp).map_err(|_| ())?;
    fs::rename(&tmp, path).map_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    // No symlinks to lean on: a file created whole or not at all.
    let text = target.to_string_lossy();
    if fsutil::create_exclusive(link, text.as_bytes())
        .map_err(|e| io::Error::other(e.to_string()))?
    {
        Ok(())
    } else {
        Err(io::Error::from(io::ErrorKind::AlreadyExists))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_as_written_and_stays_in_the_inode() {
        let name = "message-20261121T100000000Z-from-a-very-long-agent-name-0badf11e.json";
        for (sender, bytes) in [
            (Judged::Verified, Some("ab".repeat(8))),
            (Judged::Unverified, Some("0f".repeat(8))),
            (Judged::Seeded, None),
        ] {
            let held = Held {
                sender,
                name: name_digest(name),
                bytes,
            };
            let text = held.text();
            // ext4 keeps a symlink target under 60 bytes in the inode.
            assert!(text.len() < 60, "{text}");
            assert_eq!(Held::parse(&text), Some(held.clone()));
            assert!(held.is(name));
            assert_eq!(held.reference(), crate::shortref::of(name));
        }
    }

    #[test]
    fn anything_else_is_no_record() {
        let name = "0123456789abcdef01234567";
        for text in [
            String::new(),
            "v".into(),
            format!("x {name} -"),
            format!("v {name} zz"),
            format!("v {name}"),
            format!("v {name} - extra"),
            "v ../../etc/passwd -".into(),
            format!("v {} -", name.to_uppercase()),
        ] {
            assert_eq!(Held::parse(&text), None, "{text:?}");
        }
    }
}
