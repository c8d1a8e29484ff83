//! An id is accepted once (SPEC §15.2). A genuine signed message copied
//! under another file name — by anyone who can read the inbox and write
//! into it — is a replay: moved to `.aea/.quarantine/` with that reason
//! and an audit line, never listed as new mail, never acted on. Per
//! sender: a signature covers the sender, so a copy keeps it, and a peer
//! that puts another's id on mail of its own makes no replay of it.
//!
//! Two cases, decided without trusting anything a sender wrote:
//!
//! - **The id is in the inbox more than once.** Every reader decides the
//!   same way which file is the message: a verified one before one that is
//!   not (a forger never silences real mail), then the file that came
//!   first by its change time (which no user can set back: a copy is made
//!   after the file it copies, whatever name it takes), then by name. The
//!   others are set aside, and the message becomes the receiver's own file
//!   (where another user owned it, that user could delete it). No record
//!   is needed, so readers at once agree.
//! - **The id left the inbox through aea** (processed, archived, put in
//!   quarantine by a person). The receiver keeps a record of it in its
//!   private `accepted/`, and any file in the inbox holding that id later,
//!   under any name, is a replay — unless it is verified and the one that
//!   left was not.
//!
//! Each record is one symlink, `accepted/<SHA-256 of sender and id>`, whose
//! target text is the record: `<v|u|s> <file> <bytes>`, the first 24 hex
//! digits of the SHA-256 of the file's name (its short reference is their
//! start) and the first 16 of its content digest (what its signature
//! covers, or for unsigned mail the SHA-256 of its bytes). Made whole in one
//! `symlink(2)`, read in one `readlink(2)`, never followed. Under 60
//! bytes, it lives in the inode on ext4 (no data block). A listing costs
//! one `readlink` per waiting message, a miss for new mail.
//!
//! The records start from the id index when the folder is first made
//! (`s`: left, sender not judged yet), so mail processed before it
//! existed holds its id too.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::{Entry, Inbox};
use crate::audit::{AuditEvent, Event};
use crate::error::{Error, Result};
use crate::fsutil;
use crate::keyring::Verification;
use crate::layout::{Private, Shared, seen};
use crate::message;

/// The record that says the memory was started from the id index.
const SEEDED: &str = ".seeded";

/// Why a replayed file was set aside, for the `.reason` file and the log.
fn replay_reason(id: &str, held: &str) -> String {
    format!("replay: message id {id} is already held by {held}; an id is accepted once")
}

/// Why an unverified file was set aside for a verified one of its id.
fn displaced_reason(id: &str, by: &str) -> String {
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
    /// The start of its content digest ([`content_digest`]; none for a
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

/// What a record keeps of a message's content: the start of the digest its
/// signature covers (a signed message re-serialised, whitespace or key
/// order changed, has the same), or for unsigned mail the start of the
/// SHA-256 of its bytes.
fn content_digest(entry: &Entry) -> Option<String> {
    match entry.valid().and_then(|m| m.digest) {
        Some(digest) => Some(hex_prefix(&digest)),
        None => entry
            .sha256
            .as_deref()
            .and_then(|d| d.get(..BYTES_DIGITS))
            .map(str::to_string),
    }
}

/// The first [`BYTES_DIGITS`] hex digits of `digest`.
fn hex_prefix(digest: &[u8; 32]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(BYTES_DIGITS);
    for byte in &digest[..BYTES_DIGITS / 2] {
        let _ = write!(out, "{byte:02x}");
    }
    out
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
            bytes: content_digest(entry),
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

impl Inbox<'_> {
    /// The entries of an inbox listing that are mail: replays are set
    /// aside (see the module comment).
    pub(super) fn admitted(&self, entries: Vec<Entry>) -> Vec<Entry> {
        let Some(dir) = self.accepted_dir() else {
            return entries;
        };
        let mut kept = Vec::with_capacity(entries.len());
        for mut entry in entries {
            let mut held = self.left_before(&dir, &entry);
            // Whether a record holds this file a replay depends on who
            // signed it: a listing that left signatures for later checks
            // this one now (rare: its sender and id left before).
            if held.is_some() && entry.verification.is_none() {
                self.verify_entry(&mut entry);
                held = self.left_before(&dir, &entry);
            }
            match held {
                Some(_) => self.set_aside_replay(&entry),
                None => kept.push(entry),
            }
        }
        // The same (sender, id) more than once: one file is the message.
        let mut groups: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
        for (at, entry) in kept.iter().enumerate() {
            if let Some(m) = entry.valid() {
                groups
                    .entry((m.from.agent_id.as_str(), m.message_id.as_str()))
                    .or_default()
                    .push(at);
            }
        }
        let mut replays: Vec<(usize, usize)> = Vec::new();
        let groups: Vec<Vec<usize>> = groups.into_values().filter(|g| g.len() > 1).collect();
        // Which file of an id is the message depends on its signature; a
        // forged one is an invalid file, listed, not a copy of the others
        // (a listing that checks every signature first never groups it).
        for &at in groups.iter().flatten() {
            self.verify_entry(&mut kept[at]);
        }
        let groups = groups.into_iter().filter_map(|group| {
            let valid: Vec<usize> = group
                .into_iter()
                .filter(|&at| kept[at].valid().is_some())
                .collect();
            (valid.len() > 1).then_some(valid)
        });
        for mut group in groups {
            let sender = self.senders_user(&kept[group[0]]);
            group.sort_by_cached_key(|&at| first_key(&kept[at], self.owner, sender));
            replays.extend(group[1..].iter().map(|&at| (at, group[0])));
        }
        if replays.is_empty() {
            return kept;
        }
        let mut gone = vec![false; kept.len()];
        let mut adopted = Vec::new();
        for &(at, holder) in &replays {
            self.set_aside_copy(&kept[at], &kept[holder]);
            gone[at] = true;
            // Another user's file that copies were made of becomes the
            // receiver's own, so that its owner cannot delete it now that
            // the copies are gone (`.aea/` is sticky). Best effort.
            if !adopted.contains(&holder) {
                adopted.push(holder);
                let _ = self.records().adopt(&kept[holder]);
            }
        }
        kept.into_iter()
            .zip(gone)
            .filter_map(|(entry, gone)| (!gone).then_some(entry))
            .collect()
    }

    /// Inbox `entry`, found by reference, judged as a listing judges it
    /// against what left the inbox and against the other files of its id
    /// the index knows: a replay is set aside and refused.
    pub(super) fn admitted_one(&self, entry: Entry) -> Result<Entry> {
        if entry.path.parent() != Some(self.dir()) {
            return Ok(entry);
        }
        let Some(message) = entry.valid() else {
            return Ok(entry);
        };
        let Some(dir) = self.accepted_dir() else {
            return Ok(entry);
        };
        let (sender, id) = (message.from.agent_id.clone(), message.message_id.clone());
        if let Some(held) = self.left_before(&dir, &entry) {
            if held.is(&entry.name) && fs::symlink_metadata(&entry.path).is_err() {
                // The file itself left a moment ago (another `process`):
                // the caller says what became of it.
                return Ok(entry);
            }
            self.set_aside_replay(&entry);
            // The file that holds the id has the id's reference.
            return Err(Error::Replayed {
                held: crate::shortref::of(&entry.ref_key()),
                name: entry.name,
            });
        }
        let first = self
            .indexed_names(&id)
            .into_iter()
            .filter(|n| *n != entry.name)
            .filter_map(|n| self.read_listed(self.dir(), &n))
            .filter(|e| {
                e.valid()
                    .is_some_and(|m| m.message_id == id && m.from.agent_id == sender)
            })
            .min_by_key(|e| first_key(e, self.owner, self.senders_user(e)));
        let sender = self.senders_user(&entry);
        match first {
            Some(holder)
                if first_key(&holder, self.owner, sender)
                    < first_key(&entry, self.owner, sender) =>
            {
                self.set_aside_copy(&entry, &holder);
                Err(Error::Replayed {
                    name: entry.name,
                    held: crate::shortref::of(&holder.ref_key()),
                })
            }
            _ => Ok(entry),
        }
    }

    /// Remembers that inbox message `entry` left the inbox through aea
    /// (processed, archived, put in quarantine by a person): a file holding
    /// its id later is a replay. A verified record is never replaced by an
    /// unverified one. Best effort: without it, a copy is judged only
    /// against what waits.
    pub fn note_left(&self, entry: &Entry) {
        let Some(message) = entry.valid() else {
            return;
        };
        let Some(dir) = self.accepted_dir() else {
            return;
        };
        let path = dir.join(record_name(&message.from.agent_id, &message.message_id));
        let ours = Held::judged(entry);
        match read_record(&path) {
            Ok(Some(held))
                if held.sender == Judged::Verified && ours.sender != Judged::Verified => {}
            Ok(Some(held)) if held == ours => {}
            Ok(Some(_)) | Err(()) => {
                let _ = replace_record(&path, &ours);
            }
            Ok(None) => {
                if let Ok(false) = make_record(&path, &ours) {
                    let _ = replace_record(&path, &ours);
                }
            }
        }
    }

    /// The record of the file of `entry`'s (sender, id) that left the
    /// inbox, if `entry` is a replay of it: not when `entry` is verified
    /// and that one was not.
    fn left_before(&self, dir: &Path, entry: &Entry) -> Option<Held> {
        let message = entry.valid()?;
        let path = dir.join(record_name(&message.from.agent_id, &message.message_id));
        let held = read_record(&path).ok()??;
        let verified = matches!(entry.verification, Some(Verification::Verified));
        let held = match held.sender {
            // Judged again where it could decide: a seeded record always,
            // an unverified one when a verified file claims its id (its
            // sender may have been pinned or enabled since it left: then
            // it is the same message, and this a replay of it).
            Judged::Seeded => {
                self.rejudge(&path, &message.from.agent_id, &message.message_id, &held)?
            }
            Judged::Unverified if verified => {
                // The same signed content (or, unsigned, the same bytes):
                // the same message, whatever became of the file that left.
                if held.bytes.is_some() && held.bytes == content_digest(entry) {
                    return Some(held);
                }
                self.rejudge(&path, &message.from.agent_id, &message.message_id, &held)?
            }
            _ => held,
        };
        (held.sender == Judged::Verified || !verified).then_some(held)
    }

    /// A record judged (again) by reading the file it names in the store
    /// or the archive: verified or not now, and its digest. One found nowhere
    /// any more stays held, unverified. The index keeps no sender, and a
    /// seeded record took it from the file name, which its sender chose:
    /// one whose file holds another sender's message is no record at all
    /// (`None`, and it is dropped).
    fn rejudge(&self, path: &Path, sender: &str, id: &str, held: &Held) -> Option<Held> {
        // Every file under the recorded name wherever mail goes when it
        // leaves: another message may have taken that name in one of them
        // (a sender renaming its own file, archived later), so only a file
        // holding this sender's id counts.
        let places = self.places_left_to();
        // Every indexed name of the id, the recorded one first: a seeded
        // record took its name from the first line the index has for the
        // id, which another sender's message may own.
        let mut names = self.indexed_names(id);
        names.sort_by_key(|n| !held.is(n));
        let under_name = |e: &Entry| held.is(&e.name);
        let files: Vec<Entry> = names
            .into_iter()
            .flat_map(|n| {
                places
                    .iter()
                    .filter_map(|dir| self.read_listed(dir, &n))
                    .collect::<Vec<_>>()
            })
            .filter(|e| e.valid().is_some_and(|m| m.message_id == id))
            .collect();
        let ours = |e: &&Entry| e.valid().is_some_and(|m| m.from.agent_id == sender);
        // Verified now, wherever it lies (a listing verifies only the inbox
        // and the store): its sender may have been pinned since.
        let verifies = |e: &&Entry| {
            e.valid()
                .zip(self.keyring.as_ref())
                .is_some_and(|(m, ring)| matches!(ring.verify(m), Verification::Verified))
        };
        let judged = if let Some(entry) = files.iter().filter(ours).find(verifies) {
            Held::of(entry, Judged::Verified)
        } else if let Some(entry) = files.iter().find(ours) {
            Held::of(entry, Judged::Unverified)
        } else if held.sender == Judged::Seeded && files.iter().any(under_name) {
            // Seeded from a name claiming this sender over another
            // sender's message: no record at all.
            let _ = fs::remove_file(path);
            return None;
        } else {
            // Nothing left to judge by: what was known stands, never lower.
            Held {
                sender: match held.sender {
                    Judged::Seeded => Judged::Unverified,
                    known => known,
                },
                ..held.clone()
            }
        };
        if judged != *held {
            let _ = replace_record(path, &judged);
        }
        Some(judged)
    }

    /// Where mail that left the inbox through aea lies: the store, the
    /// archive, and `.aea/.quarantine/` (what a person set aside). Read
    /// only to find a record stricter, never looser.
    fn places_left_to(&self) -> Vec<PathBuf> {
        [Private::Processed, Private::Archive]
            .into_iter()
            .filter_map(|p| self.private_dir(p).ok().flatten())
            .chain(self.shared_dir(Shared::Quarantine).ok().flatten())
            .collect()
    }

    /// Sets aside inbox files that hold the very bytes of a message
    /// processed under their name, which is in the store: copies put back.
    pub(super) fn set_aside_strays(&self, strays: &[Entry]) {
        for entry in strays {
            let id = entry.valid().map_or("", |m| m.message_id.as_str());
            let reference = crate::shortref::of(&entry.ref_key());
            self.set_aside(entry, &reference, &replay_reason(id, &reference));
        }
    }

    /// The OS user who owns the repository the registry gives for the
    /// sender of `entry`, where it gives one on this machine.
    fn senders_user(&self, entry: &Entry) -> Option<u32> {
        let sender = &entry.valid()?.from.agent_id;
        let path = self.keyring.as_ref()?.registered_path(sender)?;
        fs::metadata(path).ok().as_ref().and_then(fsutil::owner)
    }

    /// Whether processed mail `name` is in the private store.
    pub(super) fn in_store(&self, name: &str) -> bool {
        self.private_dir(Private::Processed)
            .ok()
            .flatten()
            .is_some_and(|d| fs::symlink_metadata(d.join(name)).is_ok())
    }

    /// Sets aside `entry`, whose id left the inbox as another file, which
    /// has the id's reference.
    fn set_aside_replay(&self, entry: &Entry) {
        let id = entry.valid().map_or("", |m| m.message_id.as_str());
        let reference = crate::shortref::of(&entry.ref_key());
        self.set_aside(entry, &reference, &replay_reason(id, &reference));
    }

    /// Sets aside `entry`, a second file of the id `holder` holds.
    fn set_aside_copy(&self, entry: &Entry, holder: &Entry) {
        let id = entry.valid().map_or("", |m| m.message_id.as_str());
        let reference = crate::shortref::of(&holder.ref_key());
        let verified = |e: &Entry| matches!(e.verification, Some(Verification::Verified));
        let reason = if verified(holder) && !verified(entry) {
            displaced_reason(id, &reference)
        } else {
            replay_reason(id, &reference)
        };
        self.set_aside(entry, &reference, &reason);
    }

    /// Moves inbox `entry` to `.aea/.quarantine/` with `reason`, and logs
    /// it. Best effort: what cannot be moved stays out of every listing
    /// all the same, and the log line says why it stayed.
    fn set_aside(&self, entry: &Entry, held: &str, reason: &str) {
        let moved = self.records().move_out_alone(&entry.name, reason);
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

    /// The file that held `message` before it left the inbox, if it held
    /// the same content ([`content_digest`]; its file found by its name in
    /// the id index): the same message arriving again by another route.
    /// `sha256` is the SHA-256 of the bytes `message` was read from.
    pub fn accepted_as(&self, message: &crate::message::Message, sha256: &str) -> Option<String> {
        let dir = self.private_dir(Private::Accepted).ok()??;
        let (sender, id) = (&message.from.agent_id, &message.message_id);
        let held = read_record(&dir.join(record_name(sender, id))).ok()??;
        let content = message
            .digest
            .map(|d| hex_prefix(&d))
            .or_else(|| sha256.get(..BYTES_DIGITS).map(str::to_string));
        if held.bytes.is_none() || held.bytes != content {
            return None;
        }
        self.indexed_names(id).into_iter().find(|n| held.is(n))
    }

    /// `accepted/`, made (and started from the id index) when missing;
    /// `None` outside the receiver's own inbox, without a key ring, or
    /// where it is not sound.
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

    /// Starts the records from the id index: every (id, file) it lists
    /// whose file is in the store or the archive left the inbox. Two
    /// readers may seed at once: records are only created here, so both
    /// agree.
    fn seed(&self, dir: &Path) {
        let places = self.places_left_to();
        if let Ok(Some(seen)) = self.private_dir(Private::Seen)
            && let Ok(buckets) = fs::read_dir(seen.join(seen::IDS))
        {
            for bucket in buckets.flatten() {
                for (id, name) in Inbox::index_pairs(&bucket.path()) {
                    // The index keeps no sender: the name says whose it is,
                    // as aea and the bash AEA name mail.
                    let Some(sender) = message::parse_file_name(&name).map(|p| p.sender) else {
                        continue;
                    };
                    // Left: it lies somewhere mail goes when it leaves —
                    // unless all there is of it is a rewrite custody kept in
                    // the quarantine under the name of a message that still
                    // waits (a copy under a processed message's name waits
                    // too: that one is a replay).
                    let lies = |p: &PathBuf| fs::symlink_metadata(p.join(&name)).is_ok();
                    let left_to: Vec<&PathBuf> = places.iter().filter(|p| lies(p)).collect();
                    if left_to.is_empty()
                        || (fs::symlink_metadata(self.dir().join(&name)).is_ok()
                            && left_to
                                .iter()
                                .all(|p| self.records().is_custody_rewrite(p, &name)))
                    {
                        continue;
                    }
                    let held = Held {
                        sender: Judged::Seeded,
                        name: name_digest(&name),
                        bytes: None,
                    };
                    let _ = make_record(&dir.join(record_name(sender, &id)), &held);
                }
            }
        }
        let _ = symlink(Path::new("seeded"), &dir.join(SEEDED));
    }
}

/// Which of several files of one id is the message: the smallest key. A
/// verified file first; then one the receiver owns (one it adopted, or its
/// own user's delivery: in a shared inbox no other user can make one, and
/// adopting writes a new inode, which resets its change time); then one
/// owned by the OS user who owns the sender's registered repository (in a
/// shared inbox, who delivers that sender's mail); then the one whose
/// inode changed first (a copy is made after what it copies; a write
/// through a shared mapping may leave a change time behind, which is why
/// owners come first); then by name.
fn first_key(entry: &Entry, owner: Option<u32>, sender: Option<u32>) -> Key {
    let verified = matches!(entry.verification, Some(Verification::Verified));
    let meta = fs::symlink_metadata(&entry.path).ok();
    let file = meta.as_ref().and_then(fsutil::owner);
    let ours = meta.is_some() && (owner.is_none() || file == owner);
    let senders = sender.is_some() && file == sender;
    let changed = meta.as_ref().map_or(i128::MAX, ctime);
    (!verified, !ours, !senders, changed, entry.name.clone())
}

/// What [`first_key`] orders files of one id by.
type Key = (bool, bool, bool, i128, String);

#[cfg(unix)]
fn ctime(meta: &fs::Metadata) -> i128 {
    use std::os::unix::fs::MetadataExt;
    i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec())
}

#[cfg(not(unix))]
fn ctime(_: &fs::Metadata) -> i128 {
    0
}

/// Whether `text` (a symlink's target in `accepted/`) is a record aea
/// writes there: for `doctor`.
pub fn is_record(text: &str) -> bool {
    text == "seeded" || Held::parse(text).is_some()
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
