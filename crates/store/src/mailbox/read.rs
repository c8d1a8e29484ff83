//! Listing and finding mail: what waits at the top of `.aea/` in
//! processing order, processed mail in the private store, sent copies and
//! the archive, and one message by reference.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::listed::Listed;
use super::message_file::{names_of_messages, read_and_hash, read_if_present};
use super::{
    Custody, Entry, Held, Inbox, Marker, Processed, StaleMarker, is_own_copy, sort_for_processing,
};
use crate::error::{Error, Result};
use crate::keyring::Verification;
use crate::layout::{Private, Shared};
use crate::message;

impl Inbox<'_> {
    /// Unprocessed messages in processing order (SPEC §5.1), then the
    /// unprocessed files that are not valid messages, by name.
    ///
    /// Only what waits is at the top of `.aea/`: processed mail has moved
    /// to the private store. What stays there besides is mail another tool
    /// marked processed (a `.processed/` marker aea did not record): hidden
    /// here, as its reader would, and counted ([`Self::listed_processed`]).
    /// Each name costs a `stat` of its marker and of its record; a marker
    /// or record that is not empty is read and must cover the file's bytes.
    pub fn unprocessed(&self) -> Result<Vec<Entry>> {
        self.check_state()?;
        let names = self.message_names()?;
        self.unprocessed_among(names, None)
    }

    /// Like [`Self::unprocessed`], for the inbox files `names` (all of
    /// them, as listed), reading only those in `fresh` when it is given:
    /// the rest are known to the caller from an earlier listing whose
    /// files have not changed since. What is remembered of the others
    /// (files found invalid) is kept; how many are marked processed by
    /// another tool is then unknown ([`Self::listed_processed`] is `None`).
    pub fn unprocessed_among(
        &self,
        mut names: Vec<String>,
        fresh: Option<&HashSet<String>>,
    ) -> Result<Vec<Entry>> {
        self.check_state()?;
        let markers = self.shared_dir(Shared::Markers)?;
        let records = self.private_dir(Private::Records)?;
        // Files found invalid before, by stamp: a flood of junk costs one
        // read per file, once, and a `stat` afterwards.
        let known_invalid = self.invalid_memory();
        let mut invalid_now = InvalidMemory::default();
        names.sort();
        let mut marked = 0;
        let mut read = 0;
        let mut unread = 0;
        let mut entries = Vec::new();
        let mut strays = Vec::new();
        let mut listed = Listed::default();
        for name in names {
            if let Some(fresh) = fresh
                && !fresh.contains(&name)
            {
                invalid_now.carry(&known_invalid, &name);
                continue;
            }
            let marker = markers
                .as_ref()
                .and_then(|m| fs::symlink_metadata(m.join(&name)).ok());
            // The bash AEA `touch`es empty markers: hidden without a read.
            if marker.as_ref().is_some_and(|m| m.is_file() && m.len() == 0)
                && records
                    .as_ref()
                    .is_none_or(|r| fs::symlink_metadata(r.join(&name)).is_err())
            {
                marked += 1;
                listed.marked.push(name);
                continue;
            }
            let stamp = crate::seen::Stamp::of(&self.dir().join(&name));
            if let Some(stamp) = stamp
                && let Some(reason) = known_invalid.reason(&name, &stamp)
            {
                invalid_now.keep(&name, stamp, reason.clone());
                entries.push(self.invalid_entry(&name, reason.clone()));
                continue;
            }
            if read >= self.read_cap {
                unread += 1;
                continue;
            }
            read += 1;
            // A file that vanished between the listing and the read was
            // moved (gc archived it, `quarantine` took it): it is not in
            // the inbox any more, and not invalid either.
            let Some(entry) = self.read_listed(self.dir(), &name) else {
                continue;
            };
            if let (Err(reason), Some(stamp)) = (&entry.message, stamp)
                && !reason.starts_with("forged")
            {
                invalid_now.keep(&name, stamp, reason.clone());
            }
            let not_a_file = marker.as_ref().is_some_and(|m| !m.is_file());
            let hidden = match Inbox::judge(&entry, markers.as_deref(), records.as_deref()) {
                // The very bytes of a message processed under this name,
                // which is in the store: a copy put back, no mail.
                Processed::Done(_) if self.own && self.in_store(&entry.name) => {
                    strays.push(entry);
                    continue;
                }
                Processed::Done(_) => true,
                Processed::Marked(_) => {
                    marked += 1;
                    listed.marked.push(entry.name.clone());
                    true
                }
                Processed::Replaced(_) if !not_a_file => {
                    listed
                        .stale
                        .insert(entry.name.clone(), Some(StaleMarker::Replaced));
                    false
                }
                Processed::No | Processed::Replaced(_) => {
                    let stale = not_a_file.then_some(StaleMarker::NotAFile);
                    listed.stale.insert(entry.name.clone(), stale);
                    false
                }
            };
            if !hidden {
                entries.push(entry);
            }
        }
        self.listed_processed.set(fresh.is_none().then_some(marked));
        self.listed_unread.set(unread);
        // Files left unread may be marked too: then nobody knows them all.
        listed.complete = unread == 0;
        *self.listed.borrow_mut() = Some(Box::new(listed));
        if invalid_now != known_invalid {
            self.remember_invalid(&invalid_now);
        }
        if let Ok(us) = self.agent_id() {
            // What claims to be our own copy is one only if it verifies: a
            // forgery of our mail is an invalid file, listed.
            for entry in &mut entries {
                if is_own_copy(entry, &us) {
                    self.verify_entry(entry);
                }
            }
            entries.retain(|e| !is_own_copy(e, &us));
        }
        self.set_aside_strays(&strays);
        let mut entries = self.admitted(entries);
        sort_for_processing(&mut entries);
        Ok(entries)
    }

    /// An inbox file known to be invalid, without reading it again.
    fn invalid_entry(&self, name: &str, reason: String) -> Entry {
        Entry::new(
            name,
            self.dir().join(name),
            Err(reason),
            None,
            Custody::NotNeeded,
        )
    }

    /// The invalid files the receiver found before, by stamp (the private
    /// `seen/invalid.json`); empty when there is none or it does not read.
    fn invalid_memory(&self) -> InvalidMemory {
        if !self.own {
            return InvalidMemory::default();
        }
        let Ok(Some(seen)) = self.private_dir(Private::Seen) else {
            return InvalidMemory::default();
        };
        crate::fsutil::read_state(&seen.join(crate::layout::seen::INVALID), INVALID_LIMIT)
            .ok()
            .flatten()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Keeps what the listing found invalid. Best effort: without it the
    /// next listing reads those files again.
    fn remember_invalid(&self, memory: &InvalidMemory) {
        let Some(seen) = self.seen_dir() else {
            return;
        };
        let Ok(bytes) = serde_json::to_vec(memory) else {
            return;
        };
        if bytes.len() as u64 <= INVALID_LIMIT {
            let _ = crate::fsutil::replace_cache_via(
                &seen,
                &seen.join(crate::layout::seen::INVALID),
                &bytes,
            );
        }
    }

    /// Whether inbox `entry` is processed, judged against its bytes, with
    /// the marker and record folders already checked. Errors (a marker
    /// that does not read) count as unprocessed: shown, never hidden.
    pub(super) fn judge(
        entry: &Entry,
        markers: Option<&Path>,
        records: Option<&Path>,
    ) -> Processed {
        if let Some(records) = records
            && let Some(record) = read_marker_at(&records.join(&entry.name)).map(Found::marker)
        {
            return match covers(record.as_ref(), entry) {
                Covers::Yes => Processed::Done(record),
                Covers::Other(marker) => Processed::Replaced(marker),
            };
        }
        let Some(markers) = markers else {
            return Processed::No;
        };
        let path = markers.join(&entry.name);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => {
                // The bash AEA `touch`es empty markers: no read needed.
                if meta.len() == 0 {
                    return Processed::Marked(None);
                }
                match read_marker_at(&path).map(Found::marker) {
                    Some(marker) => match covers(marker.as_ref(), entry) {
                        Covers::Yes => Processed::Marked(marker),
                        Covers::Other(marker) => Processed::Replaced(marker),
                    },
                    None => Processed::No,
                }
            }
            _ => Processed::No,
        }
    }

    /// The inbox files the last listing found marked processed by another
    /// tool, when it looked at every one (no file left unread).
    pub(crate) fn listed_marked(&self) -> Option<Vec<String>> {
        self.listed
            .borrow()
            .as_ref()
            .filter(|l| l.complete)
            .map(|l| l.marked.clone())
    }

    /// The short reference of `entry` when it is shown alone: `m` and 8
    /// digits. A listing lengthens references that would share those (see
    /// [`short_refs`]); where another file shares them, this one is
    /// ambiguous and resolving it is refused, never wrong.
    pub fn short_ref(&self, entry: &Entry) -> String {
        crate::shortref::of(&entry.ref_key())
    }

    /// Names of the inbox files that have a `.processed/` marker (a
    /// regular file): one `stat` per file of the inbox.
    pub fn marked_names(&self) -> Result<Vec<String>> {
        let Some(markers) = self.shared_dir(Shared::Markers)? else {
            return Ok(Vec::new());
        };
        Ok(self
            .message_names()?
            .into_iter()
            .filter(|n| fs::symlink_metadata(markers.join(n)).is_ok_and(|m| m.is_file()))
            .collect())
    }

    /// Processed mail, oldest first, each with how it was processed
    /// (`aea check --processed`): the private store, and the inbox files
    /// another tool marked processed.
    pub fn processed_entries(&self) -> Result<Vec<(Entry, Option<Marker>)>> {
        self.check_state()?;
        let mut found: Vec<(Entry, Option<Marker>)> = Vec::new();
        for entry in self.read_all_in(Private::Processed)? {
            let record = self.records().record(&entry.name);
            found.push((entry, record));
        }
        let markers = self.shared_dir(Shared::Markers)?;
        let records = self.private_dir(Private::Records)?;
        let mut names = self.message_names()?;
        names.sort();
        for name in names {
            if let Some(entry) = self.read_listed(self.dir(), &name) {
                match Inbox::judge(&entry, markers.as_deref(), records.as_deref()) {
                    Processed::Done(m) | Processed::Marked(m) => found.push((entry, m)),
                    Processed::No | Processed::Replaced(_) => {}
                }
            }
        }
        found.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        Ok(found)
    }

    /// The one message `reference` names — aea's short reference (see
    /// [`crate::shortref`]), a file name, an id, or a unique prefix of any —
    /// looked for in `within`, in that order, and where it was found: the
    /// one lookup of what a person typed. Received mail ([`Held::Inbox`]) is
    /// the inbox first, then processed mail; its state folders are checked
    /// first, so what a command then reads of a message's records and
    /// approvals comes from the receiver. [`Held::ALL`] looks everywhere.
    /// A place that does not hold it passes the search on; any other error
    /// (an ambiguous reference, an unsound folder) ends it.
    pub fn find(&self, reference: &str, within: &[Held]) -> Result<(Entry, Held)> {
        let mut last = None;
        let mut found: Vec<(Entry, Held)> = Vec::new();
        for &place in within {
            // Received mail once found, the archive (which history fills)
            // is looked in only for what nothing else holds.
            if place == Held::Archive && !found.is_empty() {
                break;
            }
            let hit = match place {
                Held::Inbox => self
                    .resolve_received(reference)
                    .and_then(|entry| self.admitted_one(entry)),
                Held::Sent => self.resolve_private(Private::Sent, reference),
                Held::Archive => self.resolve_private(Private::Archive, reference),
            };
            match hit {
                Err(e @ Error::MessageNotFound { .. }) => last = Some(e),
                Err(e) => return Err(e),
                // A file name names the file of the first place holding it.
                Ok(entry) if message::is_message_file_name(reference.trim()) => {
                    found.push((entry, place));
                    break;
                }
                Ok(entry) => found.push((entry, place)),
            }
        }
        // The same reference in the sent copies and in the inbox: another
        // agent's mail took the id (or a ground reference) of mail this
        // repository sent.
        if found.len() > 1 {
            let entries: Vec<Entry> = found.into_iter().map(|(e, _)| e).collect();
            return Err(Error::AmbiguousReference {
                reference: reference.trim().to_string(),
                candidates: short_refs(&entries),
            });
        }
        match found.pop() {
            Some((entry, place)) => {
                crate::shortref::note_found(&entry.name, &entry.ref_key());
                Ok((entry, place))
            }
            None => Err(match last {
                Some(e) if within.len() == 1 => e,
                _ => Error::MessageNotFound {
                    reference: reference.to_string(),
                },
            }),
        }
    }

    fn resolve_received(&self, reference: &str) -> Result<Entry> {
        self.check_state()?;
        let store = self.private_dir(Private::Processed)?;
        // A file name, or an id the index knows, is found without a
        // listing wherever it is: processed mail is not in the inbox.
        let places: Vec<&Path> = std::iter::once(self.dir())
            .chain(store.as_deref())
            .collect();
        if let Some(entry) = self.found_directly(&places, reference.trim()) {
            return Ok(entry);
        }
        let in_inbox = match self.resolve_in(self.dir(), reference) {
            Err(Error::MessageNotFound { .. }) => None,
            other => Some(other?),
        };
        // Not in the inbox: another process may have processed it while
        // this one looked, and made the processed store to keep it in.
        let store = match store {
            Some(store) => Some(store),
            None => self.private_dir(Private::Processed)?,
        };
        let Some(store) = store else {
            return in_inbox.ok_or_else(|| Error::MessageNotFound {
                reference: reference.to_string(),
            });
        };
        // Found in the inbox, the store is still looked at (through its
        // index): another sender's mail can carry the id, or a reference
        // ground to match, of processed mail, and either is ambiguous.
        let look = if in_inbox.is_some() {
            Look::Beside
        } else {
            Look::Thorough
        };
        let in_store = match self.resolve_looking(&store, reference, look) {
            Err(Error::MessageNotFound { .. }) => None,
            other => Some(other?),
        };
        one_of(reference, in_inbox.into_iter().chain(in_store).collect())
    }

    /// The one file of `places` that `reference` names as a file name, or
    /// as an id through the index; `None` sends the caller to the listing
    /// (none, or more than one: the listing says which are ambiguous).
    fn found_directly(&self, places: &[&Path], reference: &str) -> Option<Entry> {
        if reference.is_empty() || reference.contains(['/', '\\']) {
            return None;
        }
        if message::is_message_file_name(reference) {
            return places
                .iter()
                .find_map(|dir| self.read_listed(dir, reference));
        }
        let mut hits = places.iter().filter_map(|dir| self.indexed(dir, reference));
        let one = hits.next()?;
        hits.next().is_none().then_some(one)
    }

    /// Every valid message this repository holds, received (waiting and
    /// processed), sent and archived, each once (by id; received first).
    pub fn everything(&self) -> Result<Vec<(Entry, Held)>> {
        self.check_state()?;
        let mut names = self.message_names()?;
        names.sort();
        let inbox = names
            .iter()
            .filter_map(|n| self.read_listed(self.dir(), n))
            .chain(self.read_all_in(Private::Processed)?)
            .map(|e| (e, Held::Inbox));
        let sent = self
            .read_all_in(Private::Sent)?
            .into_iter()
            .map(|e| (e, Held::Sent));
        let archived = self
            .read_all_in(Private::Archive)?
            .into_iter()
            .map(|e| (e, Held::Archive));
        let mut seen = HashSet::new();
        Ok(inbox
            .chain(sent)
            .chain(archived)
            .filter(|(e, _)| e.valid().is_some_and(|m| seen.insert(m.message_id.clone())))
            .collect())
    }

    /// The message `reference` names in private folder `place` (`sent/`,
    /// `archive/`).
    fn resolve_private(&self, place: Private, reference: &str) -> Result<Entry> {
        let Some(dir) = self.private_dir(place)? else {
            return Err(Error::MessageNotFound {
                reference: reference.to_string(),
            });
        };
        self.resolve_in(&dir, reference)
    }

    /// The message whose id is `id` — as another message or a record
    /// names it, never what a person typed ([`Inbox::find`]) — looked for
    /// in `within`, in that order, and where it was found: the one lookup
    /// by id. Received mail ([`Held::Inbox`]) is the inbox, then processed
    /// mail through the id index, then, when the `sender` is known, its
    /// processed files; the sent copies and the archive are read only where
    /// a file is named as `sender`'s, because history grows there.
    pub fn find_id(
        &self,
        id: &str,
        sender: Option<&str>,
        within: &[Held],
    ) -> Option<(Entry, Held)> {
        within.iter().find_map(|&place| {
            let found = match (place, sender) {
                (Held::Inbox, sender) => self
                    .with_id(id, sender)
                    .or_else(|| self.held_by(Private::Processed, id, sender?)),
                (Held::Sent, Some(sender)) => self.held_by(Private::Sent, id, sender),
                (Held::Archive, Some(sender)) => self.held_by(Private::Archive, id, sender),
                (Held::Sent | Held::Archive, None) => None,
            };
            found.map(|entry| (entry, place))
        })
    }

    /// The message `id`, named as `sender`'s, in private folder `place`.
    fn held_by(&self, place: Private, id: &str, sender: &str) -> Option<Entry> {
        let dir = self.private_dir(place).ok()??;
        names_of_messages(&dir)
            .ok()?
            .into_iter()
            .filter(|n| message::parse_file_name(n).is_some_and(|p| p.sender == sender))
            .filter_map(|n| self.read_listed(&dir, &n))
            .find(|e| e.valid().is_some_and(|m| m.message_id == id))
    }

    /// The message in the inbox whose id is `id`, by id alone. Not
    /// [`Inbox::find`]: it reads a reference shaped like a short
    /// reference or the start of a file name as that, and a sender's id
    /// may be shaped so on purpose (a bridged `m3f9a01c2` was never found
    /// held, and imported again on every pass). Processed mail is found
    /// through the id index only. With `sender`, only that sender's: the
    /// same id from another sender is another message (a file claiming a
    /// held id must not keep a second sender's mail out).
    fn with_id(&self, id: &str, sender: Option<&str>) -> Option<Entry> {
        self.check_state().ok()?;
        let mut names = names_of_messages(self.dir()).ok()?;
        names.sort();
        let is_it = |e: &Entry| {
            e.valid()
                .is_some_and(|m| m.message_id == id && sender.is_none_or(|s| m.from.agent_id == s))
        };
        if let Some(found) = names
            .iter()
            .filter_map(|n| self.read_listed(self.dir(), n))
            .find(is_it)
        {
            return Some(found);
        }
        let store = self.private_dir(Private::Processed).ok()??;
        self.indexed_names(id)
            .into_iter()
            .filter_map(|n| self.read_listed(&store, &n))
            .find(is_it)
    }

    /// Message files in private folder `place` (e.g. `outgoing/`), read
    /// and validated, by name.
    pub fn read_all_in(&self, place: Private) -> Result<Vec<Entry>> {
        let Some(dir) = self.private_dir(place)? else {
            return Ok(Vec::new());
        };
        let mut names = match names_of_messages(&dir) {
            Ok(names) => names,
            Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        names.sort();
        Ok(names
            .iter()
            .filter_map(|n| self.read_listed(&dir, n))
            .collect())
    }

    /// Reads and validates one message file of the inbox.
    pub fn read(&self, name: &str) -> Entry {
        self.read_at(self.dir(), name)
    }

    /// Reads message `name` of `dir` wherever it was listed; a file gone
    /// since reads as unreadable (for one that was asked for by name).
    pub(super) fn read_at(&self, dir: &Path, name: &str) -> Entry {
        self.read_listed(dir, name).unwrap_or_else(|| {
            let path = dir.join(name);
            let read = read_and_hash(&path, name, self.limit_for(dir));
            Entry::new(name, path, read.message, read.sha256, Custody::NotNeeded)
        })
    }

    /// Reads message `name` of `dir` like [`Self::read_listed`], without
    /// verifying its sender: for finding a file by what it holds, before
    /// the one found is read again, verified.
    fn read_unverified(&self, dir: &Path, name: &str) -> Option<Entry> {
        let path = dir.join(name);
        let read = read_if_present(&path, name, self.limit_for(dir))?;
        Some(Entry::new(
            name,
            path,
            read.message,
            read.sha256,
            Custody::NotNeeded,
        ))
    }

    /// Reads message `name` that a listing of `dir` just named: `None` when
    /// it is gone by now. Another process moved it (gc, `quarantine`, a
    /// second gc): a reader leaves it out, it never reports it invalid.
    /// Received mail (the inbox and processed mail) is verified. Another
    /// user's file in the inbox aea was pointed at is read as the copy the
    /// receiver took of it (see [`Custody`]).
    pub fn read_listed(&self, dir: &Path, name: &str) -> Option<Entry> {
        let path = dir.join(name);
        let read = read_if_present(&path, name, self.limit_for(dir))?;
        let (message, sha256, custody) = if self.own && dir == self.dir() {
            self.records().in_custody(name, read)
        } else {
            (read.message, read.sha256, Custody::NotNeeded)
        };
        let mut entry = Entry::new(name, path, message, sha256, custody);
        if !(self.verify_later.get() && dir == self.dir()) {
            self.verify_entry(&mut entry);
        }
        Some(entry)
    }

    /// Lists without checking signatures until [`Self::verify_entry`] is
    /// asked for each message shown: a page of a flood costs a page of
    /// signatures. Messages of one sender and id are checked at once all
    /// the same (which of them is the message depends on it).
    pub fn verify_later(&self, later: bool) {
        self.verify_later.set(later);
    }

    /// Checks the signature of the received message `entry`, once: a
    /// forged one becomes an invalid file.
    pub fn verify_entry(&self, entry: &mut Entry) {
        let dir = entry.path.parent().unwrap_or(Path::new(""));
        if entry.verification.is_some() || !(dir == self.dir() || self.is_store(dir)) {
            return;
        }
        if let (Some(ring), Ok(m)) = (&self.keyring, &entry.message) {
            match ring.verify(m) {
                Verification::Forged { reason } => {
                    entry.message = Err(format!("forged: {reason}"));
                }
                v => entry.verification = Some(v),
            }
        }
    }

    /// The message in `dir` (the inbox or the processed store) whose id is
    /// exactly `reference`, found through the index: each file it names is
    /// read, and only one that holds that id now counts. `None` sends the
    /// caller to the listing, also when two files hold the id (a sender
    /// may copy another's id): the listing says the reference is
    /// ambiguous. A reference that could be the start of a file name is
    /// never looked up here: resolving reads those as names first.
    fn indexed(&self, dir: &Path, reference: &str) -> Option<Entry> {
        let name_like = reference.starts_with("message-") || "message-".starts_with(reference);
        let received = dir == self.dir() || self.is_store(dir);
        if !received
            || name_like
            || crate::shortref::parse(reference).is_some()
            || !is_whole_id(reference)
        {
            return None;
        }
        let mut holding = self
            .indexed_names(reference)
            .into_iter()
            .filter_map(|n| self.read_listed(dir, &n))
            .filter(|e| e.valid().is_some_and(|m| m.message_id == reference));
        let entry = holding.next()?;
        holding.next().is_none().then_some(entry)
    }

    /// Adds the valid messages among `entries` (received) to the index.
    pub fn index_entries<'a>(&self, entries: impl IntoIterator<Item = &'a Entry>) {
        if !self.own {
            return;
        }
        let pairs: Vec<(&str, &str)> = entries
            .into_iter()
            .filter_map(|e| Some((e.valid()?.message_id.as_str(), e.name.as_str())))
            .collect();
        self.index_ids(&pairs);
    }

    fn resolve_in(&self, dir: &Path, reference: &str) -> Result<Entry> {
        self.resolve_looking(dir, reference, Look::Thorough)
    }

    /// [`Self::resolve_in`], looking in `dir` as `look` says.
    fn resolve_looking(&self, dir: &Path, reference: &str, look: Look) -> Result<Entry> {
        let reference = reference.trim();
        let not_found = || Error::MessageNotFound {
            reference: reference.to_string(),
        };
        if reference.is_empty() || reference.contains(['/', '\\']) {
            return Err(not_found());
        }
        // A file name needs no listing; a message id may be in the index.
        if message::is_message_file_name(reference)
            && let Some(entry) = self.read_listed(dir, reference)
        {
            return Ok(entry);
        }
        if let Some(entry) = self.indexed(dir, reference) {
            return Ok(entry);
        }
        // Beside a message found elsewhere, the processed store is looked
        // at only through its index: an id it does not name is not there,
        // and a prefix of an id is not looked for.
        let beside_store = look == Look::Beside && self.is_store(dir);
        if beside_store && crate::shortref::parse(reference).is_none() {
            return Err(not_found());
        }
        let mut names = names_of_messages(dir)?;
        names.sort();
        let listed = |name: &str| self.read_listed(dir, name).ok_or_else(not_found);
        if names.iter().any(|n| n == reference) {
            return listed(reference);
        }
        // aea's own short reference (`m3f9a01c2`): never read as an id,
        // which a sender may have chosen to look like one. It is derived
        // from the message id inside the file: every file is read (as for
        // an id), and any two that match are refused, whichever they are.
        // Only the one found is verified (see [`Self::read_listed`]).
        if let Some(digits) = crate::shortref::parse(reference) {
            // Read unverified to find the files that may match, then read
            // again, verified: a forged file names no sender, and is known
            // by its file name's reference only (as a listing shows it),
            // so copying a message's sender and id into a file the sender
            // did not sign makes no reference ambiguous.
            let matching = |e: &Entry| crate::shortref::matches(&e.ref_key(), &digits);
            let hits_among = |among: Vec<&String>| -> Vec<Entry> {
                among
                    .into_iter()
                    .filter_map(|n| self.read_unverified(dir, n))
                    .filter(|e| matching(e) || crate::shortref::matches(&e.name, &digits))
                    .filter_map(|e| self.read_listed(dir, &e.name))
                    .filter(|e| matching(e))
                    .collect()
            };
            // The processed store can hold thousands: its index narrows
            // what is read. Where that finds nothing (a typo, an index
            // that lost its way), every file is read after all.
            let narrowed = if self.is_store(dir) {
                self.ref_candidates(&names, &digits).map(&hits_among)
            } else {
                None
            };
            let hits = match narrowed {
                Some(hits) if !hits.is_empty() || beside_store => hits,
                _ => hits_among(names.iter().collect()),
            };
            return match hits.as_slice() {
                [] => Err(not_found()),
                [one] => Ok(one.clone()),
                many => Err(Error::AmbiguousReference {
                    reference: reference.to_string(),
                    candidates: short_refs(many),
                }),
            };
        }
        let by_name: Vec<&String> = names.iter().filter(|n| n.starts_with(reference)).collect();
        if by_name.len() == 1 {
            return listed(by_name[0]);
        }
        // Ids live inside the files: read them all, exact matches first.
        // Only the files whose id could match are verified (a signature
        // check costs more than the read): a forged file is then invalid,
        // and matches nothing, as before.
        let unverified: Vec<Entry> = names
            .iter()
            .filter_map(|n| self.read_unverified(dir, n))
            .collect();
        let could_match = |e: &Entry| {
            e.name.starts_with(reference)
                || e.valid()
                    .is_some_and(|m| m.message_id.starts_with(reference))
        };
        let entries: Vec<Entry> = unverified
            .iter()
            .filter(|e| could_match(e))
            .filter_map(|e| self.read_listed(dir, &e.name))
            .collect();
        let id_of = |e: &Entry| e.valid().map(|m| m.message_id.clone());
        // An id is the sender's choice: two files may claim the same one,
        // and picking either would act on mail the person did not name.
        // Nor may a sender claim as its whole id what a person types as
        // the start of another's (`ca820b21` of `ca820b21-00a0-…`): an id
        // that matches exactly wins over longer ones only when it is a
        // whole id as aea writes them; any other reference that starts
        // several ids is ambiguous, whichever of them it equals.
        let exact: Vec<&Entry> = entries
            .iter()
            .filter(|e| is_whole_id(reference) && id_of(e).as_deref() == Some(reference))
            .collect();
        match exact.as_slice() {
            [] => {}
            [one] => {
                // The next lookup of this id finds it without a listing.
                if dir == self.dir() || self.is_store(dir) {
                    self.index_entries([*one]);
                }
                return Ok((*one).clone());
            }
            many => {
                return Err(Error::AmbiguousReference {
                    reference: reference.to_string(),
                    candidates: crate::shortref::for_messages(&keys_and_names(
                        many.iter().copied(),
                    )),
                });
            }
        }
        let mut matches: Vec<&Entry> = entries
            .iter()
            .filter(|e| {
                e.name.starts_with(reference)
                    || id_of(e).is_some_and(|id| id.starts_with(reference))
            })
            .collect();
        matches.dedup_by(|a, b| a.name == b.name);
        match matches.len() {
            0 => Err(not_found()),
            1 => Ok(matches[0].clone()),
            _ => Err(Error::AmbiguousReference {
                reference: reference.to_string(),
                candidates: crate::shortref::for_messages(&keys_and_names(matches.iter().copied())),
            }),
        }
    }

    /// Where processed mail is kept, if any is.
    pub fn processed_store(&self) -> Option<PathBuf> {
        self.private_dir(Private::Processed).ok().flatten()
    }

    /// How many inbox files the last listing did not read (over its cap).
    pub fn listed_unread(&self) -> usize {
        self.listed_unread.get()
    }

    /// Stamps what listing the unprocessed mail reads besides the message
    /// files: the inbox, the folders whose entries hide, defer or approve
    /// mail, the config, and the bash AEA's readers.
    pub fn watch_listing(&self, watched: &mut crate::seen::Watched) {
        watched.add(self.dir().to_path_buf());
        watched.add(self.layout.shared(Shared::Markers));
        for entry in [Private::Records, Private::Deferred, Private::Approvals] {
            watched.add(self.layout.private(entry));
        }
        watched.add(self.layout.shared(Shared::Config));
        watched.add(crate::layout::bash_checker(self.dir()));
    }

    /// How many messages of the inbox [`Mailbox::unprocessed`] found marked
    /// processed by another tool (they stay at the top of `.aea/`), if it
    /// listed: what deciding on housekeeping needs, at no extra cost.
    pub(crate) fn listed_processed(&self) -> Option<usize> {
        self.listed_processed.get()
    }

    /// Names of the message files in the inbox, unsorted.
    pub fn message_names(&self) -> Result<Vec<String>> {
        names_of_messages(self.dir())
    }
}

/// Whether `reference` is a whole message id as aea writes them (a UUID,
/// `8-4-4-4-12` hex digits): one that no other id of that form can start
/// with, so an exact match on it names one message even where a sender
/// chose a longer id that starts with it.
fn is_whole_id(reference: &str) -> bool {
    reference.len() == 36
        && reference.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Largest memory of invalid files read back (about 100,000 files).
const INVALID_LIMIT: u64 = 32 * 1024 * 1024;

/// Inbox files found invalid, by name, with the stamp they had then and
/// why. A file whose stamp is unchanged (same inode, size, times) is the
/// same file: it is not read again. Kept in the private state, where only
/// the receiver writes.
#[derive(Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct InvalidMemory(std::collections::BTreeMap<String, (crate::seen::Stamp, String)>);

impl InvalidMemory {
    fn reason(&self, name: &str, stamp: &crate::seen::Stamp) -> Option<&String> {
        self.0
            .get(name)
            .filter(|(s, _)| s == stamp)
            .map(|(_, reason)| reason)
    }

    fn keep(&mut self, name: &str, stamp: crate::seen::Stamp, reason: String) {
        self.0.insert(name.to_string(), (stamp, reason));
    }

    /// Keeps what `earlier` remembered of `name`, which was not read again.
    fn carry(&mut self, earlier: &InvalidMemory, name: &str) {
        if let Some(known) = earlier.0.get(name) {
            self.0.insert(name.to_string(), known.clone());
        }
    }
}

/// A record or marker found at a path.
enum Found {
    /// A JSON record or marker.
    Json(Marker),
    /// A file that does not read as one (an older tool's, empty).
    Other,
}

impl Found {
    fn marker(self) -> Option<Marker> {
        match self {
            Found::Json(m) => Some(m),
            Found::Other => None,
        }
    }
}

/// The record or marker at `path`; `None` for none (or not a file).
fn read_marker_at(path: &Path) -> Option<Found> {
    let bytes = crate::fsutil::read_state(path, crate::fsutil::SMALL_STATE_LIMIT).ok()??;
    Some(serde_json::from_slice(&bytes).map_or(Found::Other, Found::Json))
}

/// Whether a record or marker covers an entry's bytes.
enum Covers {
    Yes,
    /// It was made for other bytes.
    Other(Marker),
}

fn covers(marker: Option<&Marker>, entry: &Entry) -> Covers {
    match (marker, &entry.sha256) {
        (Some(m), Some(current)) if m.sha256.as_ref().is_some_and(|s| s != current) => {
            Covers::Other(m.clone())
        }
        _ => Covers::Yes,
    }
}

/// How a folder is looked in for a reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Look {
    /// Every file that could match is read.
    Thorough,
    /// Beside a message found in another folder, to tell whether the
    /// reference is ambiguous: in the processed store, only what its index
    /// names.
    Beside,
}

/// The one message of `found` (files of different folders `reference`
/// matched), or an ambiguous reference when they are more than one: a
/// sender chooses its ids, and can grind one whose reference starts like
/// another's, so which folder it was found in first decides nothing.
fn one_of(reference: &str, mut found: Vec<Entry>) -> Result<Entry> {
    // The same bytes in both folders are one message caught moving (another
    // process just processed it): the later folder is where it is now.
    found.reverse();
    found.dedup_by(|a, b| {
        a.path == b.path
            || (a.sha256.is_some() && a.sha256 == b.sha256 && a.ref_key() == b.ref_key())
    });
    match found.len() {
        0 => Err(Error::MessageNotFound {
            reference: reference.to_string(),
        }),
        1 => Ok(found.remove(0)),
        _ => Err(Error::AmbiguousReference {
            reference: reference.to_string(),
            candidates: short_refs(&found),
        }),
    }
}

/// Short references of inbox entries, unique among them: every channel
/// (check, hooks, watch, the monitor) lists the unprocessed messages, so they
/// all print the same reference for the same file.
pub fn short_refs(entries: &[Entry]) -> Vec<String> {
    crate::shortref::for_messages(&keys_and_names(entries.iter()))
}

/// Each entry's (reference key, file name), for [`crate::shortref::for_messages`].
pub fn keys_and_names<'a>(entries: impl Iterator<Item = &'a Entry>) -> Vec<(String, &'a str)> {
    entries.map(|e| (e.ref_key(), e.name.as_str())).collect()
}
