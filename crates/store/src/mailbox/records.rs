//! What the receiver records about received mail, all in its private
//! state: whether a message is processed (and taking processed mail out
//! of the inbox), claims while it is being processed, deferrals, a
//! person's approvals, and moving mail aside (`gc`, `quarantine`).

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{
    AlreadyDecided, Approval, ApprovalDecision, ApprovalRecord, Approvals, COLLABS_MAX, Claim,
    ClaimBody, Entry, Inbox, Marker, Processed, Records, StaleMarker, claim_is_stale,
    describe_claim, move_present, move_to,
};
use crate::error::{Error, Result};
use crate::fsutil;
use crate::layout::{self, Private, Shared};
use crate::message::format_time;
use crate::runtime::Runtime;
use crate::words::OrUnknown;

/// What `collabs.json` and `collab-turns.json` are read up to: what they
/// hold is bounded by [`COLLABS_MAX`] folders, each an absolute path (at
/// most 4 KiB) with, for the monitor, two SHA-256s; a list of long paths
/// must never outgrow its own reader.
const COLLABS_READ_LIMIT: u64 = 4 * 1024 * 1024;

/// What the monitor last saw of one collaboration folder: the last event
/// (the SHA-256 of its line), whether `protocol.json` then waited for this
/// agent, and the last event it left a "your turn" notice for. A turn is
/// noticed when the agent comes to be waited for, once per event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenTurn {
    pub event: Option<String>,
    pub waiting: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noticed: Option<String>,
}

/// Where a message `gc` or `quarantine` moves out of the inbox goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aside {
    /// The private archive: old processed mail, and mail that expired.
    Archive,
    /// `.aea/.quarantine/`: files that are not mail to act on.
    Quarantine,
}

impl Records<'_> {
    /// Whether `entry` (received mail) is processed, judged against its
    /// current bytes. A marker that is a symlink or special file is not
    /// one; state in an unsound folder is an error.
    pub fn processed(&self, entry: &Entry) -> Result<Processed> {
        if entry.path.parent() == self.inbox().processed_store().as_deref() {
            return Ok(Processed::Done(self.record(&entry.name)));
        }
        let markers = self.shared_dir(Shared::Markers)?;
        let records = self.private_dir(Private::Records)?;
        Ok(Inbox::judge(entry, markers.as_deref(), records.as_deref()))
    }

    /// Whether received message `name` was processed here (aea's record,
    /// or the file in the processed store): one or two `stat`s.
    pub fn is_processed(&self, name: &str) -> bool {
        [Private::Records, Private::Processed].into_iter().any(|p| {
            self.private_dir(p)
                .ok()
                .flatten()
                .is_some_and(|d| fs::symlink_metadata(d.join(name)).is_ok_and(|m| m.is_file()))
        })
    }

    /// How received message `name` was processed: aea's record of it.
    pub fn record(&self, name: &str) -> Option<Marker> {
        let dir = self.private_dir(Private::Records).ok()??;
        let bytes = fsutil::read_state(&dir.join(name), fsutil::SMALL_STATE_LIMIT).ok()??;
        serde_json::from_slice(&bytes).ok()
    }

    /// Whether archived message `name` was processed (its record went
    /// with it to the archive).
    pub(crate) fn archived_record(&self, name: &str) -> bool {
        self.private_dir(Private::Archive)
            .ok()
            .flatten()
            .is_some_and(|d| {
                fs::symlink_metadata(d.join(layout::archive::RECORDS).join(name))
                    .is_ok_and(|m| m.is_file())
            })
    }

    /// Why an unprocessed message has a marker or record anyway, if it
    /// has one: the marker is not a regular file (ignored), or it was
    /// written for other bytes (the file was replaced after it was
    /// processed).
    pub fn stale_marker(&self, entry: &Entry) -> Option<StaleMarker> {
        // The listing that found it judged its marker already.
        if entry.path.parent() == Some(self.dir())
            && let Some(listed) = self.listed.borrow().as_ref()
            && let Some(known) = listed.stale.get(&entry.name)
        {
            return *known;
        }
        if let Ok(Some(markers)) = self.shared_dir(Shared::Markers)
            && fs::symlink_metadata(markers.join(&entry.name)).is_ok_and(|m| !m.is_file())
        {
            return Some(StaleMarker::NotAFile);
        }
        matches!(self.processed(entry), Ok(Processed::Replaced(_))).then_some(StaleMarker::Replaced)
    }

    /// Makes the receiver the owner of the bytes it judged, before a
    /// record or an approval is bound to them: where the file belongs to
    /// another user (a sender in a shared inbox), a copy owned by the
    /// receiver replaces it, so that sender can neither rewrite nor
    /// replace it afterwards (`.aea/` is sticky). The bytes must still be
    /// those of `entry`. Nothing happens to a file the receiver owns.
    pub fn adopt(&self, entry: &Entry) -> Result<()> {
        let path = &entry.path;
        let file = fsutil::open_read(path).map_err(|e| e.into_error(path, self.message_limit))?;
        let meta = file.metadata().map_err(|e| Error::io("inspect", path, e))?;
        if fsutil::owner(&meta) == self.owner {
            return Ok(());
        }
        let bytes = fsutil::read_opened(file, self.message_limit)
            .map_err(|e| e.into_error(path, self.message_limit))?;
        if entry.sha256.as_deref() != Some(fsutil::sha256_hex(&bytes).as_str()) {
            return Err(Error::UnsafeState {
                path: path.clone(),
                detail: "changed while it was being decided on; nothing was recorded".into(),
            });
        }
        let staging = self.make_shared_dir(Shared::Staging)?;
        fsutil::replace_mail_via(&staging, path, &bytes, self.mail_mode())
    }

    /// Finishes processing inbox message `entry` (SPEC §5.4), under its
    /// claim: the file moves to the private store (so the top of `.aea/`
    /// holds only what waits), aea's record of how it was processed is
    /// written next to it, and the AEA v1.0 marker `.processed/<name>` for
    /// other readers. Fails if it was processed already. Returns the
    /// record's path.
    ///
    /// A kill between the steps leaves the file in the store without a
    /// record (processed: it left the inbox), or — where the private state
    /// is on another file system and the file was copied — in both places,
    /// where it shows as unprocessed until the next `process` of it
    /// finishes the move.
    ///
    /// Only the record is flushed (its content and its folder): a crash
    /// may put the file back in the inbox or leave it in both places, and
    /// the record, which covers its bytes, still hides it there; the store
    /// keeps the bytes either way (a rename is atomic).
    pub fn finish(&self, entry: &Entry, marker: &Marker) -> Result<PathBuf> {
        let record = self.finish_unflushed(entry, marker)?;
        if let Some(dir) = self.private_dir(Private::Records)? {
            fsutil::sync_dir(&dir)?;
        }
        Ok(record)
    }

    /// [`Mailbox::finish`] without flushing the folders: for moving many
    /// (the caller flushes them once), where a file a crash puts back is
    /// simply moved again.
    pub fn finish_unflushed(&self, entry: &Entry, marker: &Marker) -> Result<PathBuf> {
        let name = &entry.name;
        let store = self.make_private_dir(Private::Processed)?;
        let records = self.make_private_dir(Private::Records)?;
        let staging = self.make_private_dir(Private::Tmp)?;
        let record = records.join(name);
        if fs::symlink_metadata(&record).is_ok() {
            return Err(Error::AlreadyProcessed { name: name.clone() });
        }
        let kept = store.join(name);
        if fs::symlink_metadata(&kept).is_ok() {
            // An earlier `process` copied it and was killed before it
            // removed the inbox's file, or the same name came back: the
            // copy stays only if it holds these very bytes.
            let same = fsutil::read_limited(&kept, self.message_limit)
                .ok()
                .is_some_and(|b| entry.sha256.as_deref() == Some(&fsutil::sha256_hex(&b)));
            if !same {
                move_present(&kept, &self.make_private_dir(Private::Archive)?, name)?;
            }
        }
        if fs::symlink_metadata(&kept).is_ok() {
            remove_present(&entry.path)?;
        } else {
            move_to(
                &entry.path,
                &store,
                name,
                &staging,
                self.message_limit,
                self.owner,
            )?
            .ok_or_else(|| Error::MessageNotFound {
                reference: name.clone(),
            })?;
        }
        let body = serde_json::to_vec_pretty(marker).expect("a marker always serialises");
        if !fsutil::create_exclusive_whole_via(&staging, &record, &body)? {
            return Err(Error::AlreadyProcessed { name: name.clone() });
        }
        self.write_marker(name, &body);
        // Also when `entry` was the receiver's own file: one taken over
        // (approved) earlier still had its copy.
        self.forget_custody(name);
        // Its id is taken: a copy of it in the inbox later is a replay.
        self.inbox().note_left(entry);
        Ok(record)
    }

    /// Writes the AEA v1.0 marker for other readers (the bash AEA counts
    /// what is in `.processed/`); one there already (another tool's) is
    /// kept. Best effort: aea's own record is what counts.
    fn write_marker(&self, name: &str, body: &[u8]) {
        if fs::symlink_metadata(self.layout().shared(Shared::Markers).join(name)).is_ok() {
            return;
        }
        let (Ok(markers), Ok(staging)) = (
            self.make_shared_dir(Shared::Markers),
            self.make_shared_dir(Shared::Staging),
        ) else {
            return;
        };
        let _ = fsutil::create_exclusive_whole_unflushed(&staging, &markers.join(name), body);
    }

    /// Puts aside what says message `name` was processed, for a file that
    /// was replaced after it: its record (`records/<name>.replaced`, `.1`,
    /// …) and the processed copy (to the archive), kept for the record, so
    /// the new content can be processed.
    pub fn retire_record(&self, name: &str) -> Result<Option<PathBuf>> {
        let Some(records) = self.private_dir(Private::Records)? else {
            return Ok(None);
        };
        let from = records.join(name);
        if fs::symlink_metadata(&from).is_err() {
            return Ok(None);
        }
        let kept = move_present(&from, &records, &format!("{name}.replaced"))?;
        if let Some(store) = self.private_dir(Private::Processed)?
            && fs::symlink_metadata(store.join(name)).is_ok()
        {
            move_present(
                &store.join(name),
                &self.make_private_dir(Private::Archive)?,
                name,
            )?;
        }
        fsutil::sync_dir(&records)?;
        Ok(Some(kept))
    }

    /// Takes the exclusive claim on a message (SPEC §5.4). A claim older
    /// than 30 minutes is taken over.
    pub fn claim(&self, name: &str, rt: &Runtime) -> Result<Claim> {
        let dir = self.make_private_dir(Private::Claims)?;
        let read = |path: &Path| -> Result<Vec<u8>> {
            Ok(fsutil::read_state(path, fsutil::SMALL_STATE_LIMIT)?.unwrap_or_default())
        };
        let path = dir.join(name);
        let body = serde_json::to_vec(&ClaimBody {
            claimed_at: format_time(rt.now()),
            by: rt.user().to_string(),
            pid: std::process::id(),
            holder: crate::liveness::Holder::current(),
        })
        .expect("a claim always serialises");
        let mut took_over_from = None;
        // Two rounds at most: the second follows the removal of a stale claim.
        for _ in 0..2 {
            if fsutil::create_exclusive_whole(&path, &body)? {
                return Ok(Claim {
                    path,
                    took_over_from,
                });
            }
            let held = read(&path)?;
            let holder = describe_claim(&held);
            if !claim_is_stale(&path, &held, rt.now()) {
                return Err(Error::Claimed {
                    name: name.to_string(),
                    holder,
                });
            }
            // Moved aside rather than deleted: if another process replaced
            // it meanwhile, the moved file is not the one judged stale.
            let aside = dir.join(format!("{name}.stale-{}", rt.rand_hex8()));
            match fsutil::take_over(&path, &held, &aside)? {
                fsutil::TakeOver::Taken => took_over_from = Some(holder),
                fsutil::TakeOver::Gone => {}
                fsutil::TakeOver::Replaced(moved) => {
                    return Err(Error::Claimed {
                        name: name.to_string(),
                        holder: describe_claim(&moved),
                    });
                }
            }
        }
        Err(Error::Claimed {
            name: name.to_string(),
            holder: "another process".into(),
        })
    }

    /// Names of the claims held now, as files in the claims folder.
    pub(crate) fn claim_names(&self) -> Vec<String> {
        let Ok(Some(dir)) = self.private_dir(Private::Claims) else {
            return Vec::new();
        };
        fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect()
    }

    /// The claim file of `name`, where claims are kept.
    pub(crate) fn claim_path(&self, name: &str) -> Option<PathBuf> {
        Some(self.private_dir(Private::Claims).ok()??.join(name))
    }

    /// Removes the claim on `name` if it is stale (its process gone, or
    /// too old): for mail already processed by a process killed before it
    /// released its claim. Best effort.
    pub fn drop_stale_claim(&self, name: &str, now: DateTime<Utc>) {
        let Ok(Some(dir)) = self.private_dir(Private::Claims) else {
            return;
        };
        let path = dir.join(name);
        let Ok(Some(body)) = fsutil::read_state(&path, fsutil::SMALL_STATE_LIMIT) else {
            return;
        };
        if claim_is_stale(&path, &body, now) {
            let _ = fs::remove_file(&path);
        }
    }

    /// The deferred messages, by file name, with the marker that says when
    /// and why (a marker that does not read still counts, without them).
    pub fn deferrals(&self) -> Result<HashMap<String, Option<Marker>>> {
        let Some(dir) = self.private_dir(Private::Deferred)? else {
            return Ok(HashMap::new());
        };
        let names = names_in(&dir)?;
        Ok(names
            .into_iter()
            .map(|name| {
                let marker = fsutil::read_state(&dir.join(&name), fsutil::SMALL_STATE_LIMIT)
                    .ok()
                    .flatten()
                    .and_then(|b| serde_json::from_slice(&b).ok());
                (name, marker)
            })
            .collect())
    }

    /// Records that `name` was put off (again): it stays unprocessed.
    pub fn defer(&self, name: &str, marker: &Marker) -> Result<PathBuf> {
        let dir = self.make_private_dir(Private::Deferred)?;
        let path = dir.join(name);
        let body = serde_json::to_vec_pretty(marker).expect("a marker always serialises");
        fsutil::replace_atomic(&path, &body)?;
        Ok(path)
    }

    /// Forgets that `name` was deferred, once it is processed.
    pub fn undefer(&self, name: &str) -> Result<()> {
        let Some(dir) = self.private_dir(Private::Deferred)? else {
            return Ok(());
        };
        remove_if_present(&dir.join(name))
    }

    /// Moves inbox file `name` aside ([`Aside`]), never replacing anything
    /// there, with its record, approval and `.processed/` marker (into the
    /// archive) and an optional `<name>.reason` next to it. Nothing is
    /// deleted. `None` when the file is gone: another process moved it
    /// first (see [`super::move_no_replace`]), which is not an error — it
    /// is where it was meant to go.
    pub fn move_out(&self, name: &str, to: Aside, reason: Option<&str>) -> Result<Option<PathBuf>> {
        self.move_aside(self.dir(), name, to, reason, true)
    }

    /// Moves inbox file `name` into `.aea/.quarantine/` with `reason`, and
    /// nothing else: for a replay under the name of a message that left
    /// the inbox, whose record, approval and marker are that message's and
    /// stay with it.
    pub(super) fn move_out_alone(&self, name: &str, reason: &str) -> Result<Option<PathBuf>> {
        self.move_aside(self.dir(), name, Aside::Quarantine, Some(reason), false)
    }

    /// Moves processed mail `name` from the private store to the archive
    /// (`gc`), with its record and approval.
    pub(crate) fn archive_processed(&self, name: &str) -> Result<Option<PathBuf>> {
        let Some(store) = self.private_dir(Private::Processed)? else {
            return Ok(None);
        };
        self.move_aside(&store, name, Aside::Archive, None, true)
    }

    fn move_aside(
        &self,
        from: &Path,
        name: &str,
        to: Aside,
        reason: Option<&str>,
        with_state: bool,
    ) -> Result<Option<PathBuf>> {
        let dir = match to {
            Aside::Archive => self.make_private_dir(Private::Archive)?,
            Aside::Quarantine => self.make_shared_dir(Shared::Quarantine)?,
        };
        // Checked before anything moves: a folder swapped for a symlink
        // must not make us unlink a file elsewhere.
        let records = self.private_dir(Private::Records)?;
        let approvals = self.private_dir(Private::Approvals)?;
        let markers = self.shared_dir(Shared::Markers)?;
        let staging = self.make_private_dir(Private::Tmp)?;
        // Into the private archive as the receiver's own file; the
        // quarantine keeps what it was given, never read again.
        let owner = (to == Aside::Archive).then_some(self.owner).flatten();
        let Some(target) = move_to(
            &from.join(name),
            &dir,
            name,
            &staging,
            self.message_limit,
            owner,
        )?
        else {
            // Gone from where it was. Where it is at its destination, an
            // earlier run moved it and was killed before its record and
            // marker followed: they follow now (left behind, the record
            // would be lost to the archive and the marker would hide the
            // name). Anything else moved it elsewhere, with its state.
            if with_state
                && fs::symlink_metadata(dir.join(name)).is_ok()
                && fs::symlink_metadata(from.join(name)).is_err()
            {
                let moved = dir.join(name);
                self.carry_state(name, &moved, [records, approvals], markers, &staging)?;
            }
            return Ok(None);
        };
        if from == self.dir() {
            self.forget_custody(name);
        }
        if with_state {
            self.carry_state(name, &target, [records, approvals], markers, &staging)?;
        }
        if let Some(reason) = reason {
            let file = target
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            fsutil::create_exclusive(
                &dir.join(format!("{file}.reason")),
                format!("{reason}\n").as_bytes(),
            )?;
        }
        fsutil::sync_dir(from)?;
        Ok(Some(target))
    }

    /// Finishes what a gc or `quarantine` killed mid-way left: a record
    /// in `records/` whose message is no longer in the inbox or the store
    /// but in the archive or the quarantine moves there now, with its
    /// approval and marker. One listing of `records/`.
    pub(crate) fn carry_left_behind_state(&self) -> Result<()> {
        let Some(records) = self.private_dir(Private::Records)? else {
            return Ok(());
        };
        let store = self.private_dir(Private::Processed)?;
        let archive = self.private_dir(Private::Archive)?;
        let quarantine = self.shared_dir(Shared::Quarantine)?;
        let here = |dir: Option<&Path>, name: &str| {
            dir.is_some_and(|d| fs::symlink_metadata(d.join(name)).is_ok())
        };
        let left: Vec<String> = super::message_names_in(&records)?
            .into_iter()
            .filter(|n| !here(Some(self.dir()), n) && !here(store.as_deref(), n))
            .filter(|n| here(archive.as_deref(), n) || here(quarantine.as_deref(), n))
            .collect();
        if left.is_empty() {
            return Ok(());
        }
        let approvals = self.private_dir(Private::Approvals)?;
        let markers = self.shared_dir(Shared::Markers)?;
        let staging = self.make_private_dir(Private::Tmp)?;
        for name in left {
            let moved = [archive.as_deref(), quarantine.as_deref()]
                .into_iter()
                .flatten()
                .map(|d| d.join(&name))
                .find(|p| fs::symlink_metadata(p).is_ok())
                .unwrap_or_default();
            self.carry_state(
                &name,
                &moved,
                [Some(records.clone()), approvals.clone()],
                markers.clone(),
                &staging,
            )?;
        }
        Ok(())
    }

    /// Moves the record, approval and `.processed/` marker of message
    /// `name` (checked folders: records and approvals, then markers) to the
    /// archive, after the message itself moved.
    fn carry_state(
        &self,
        name: &str,
        moved: &Path,
        [records, approvals]: [Option<PathBuf>; 2],
        markers: Option<PathBuf>,
        staging: &Path,
    ) -> Result<()> {
        // Only state made for the bytes that moved goes with them: a file
        // that only took a processed message's name (a sender's replay)
        // leaves that message's record and marker where they are.
        let sha = fsutil::read_limited(moved, self.message_limit)
            .ok()
            .map(|b| fsutil::sha256_hex(&b));
        let covers = |state: &Path| {
            let Some(sha) = &sha else { return true };
            fsutil::read_state(state, fsutil::SMALL_STATE_LIMIT)
                .ok()
                .flatten()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .and_then(|v| v.get("sha256").and_then(|s| s.as_str()).map(str::to_string))
                .is_none_or(|made_for| made_for == *sha)
        };
        // The record and the person's decision go with the bytes they were
        // made for: the name is free now, and a file delivered under it
        // later (a sender replaying the same bytes) is judged afresh.
        let record = format!("{name}.json");
        for (state, sub, file) in [
            (records, layout::archive::RECORDS, name),
            (approvals, layout::archive::APPROVALS, record.as_str()),
        ] {
            let Some(state) = state else { continue };
            let source = state.join(file);
            if fs::symlink_metadata(&source).is_ok() && covers(&source) {
                let kept = self.make_private_dir(Private::Archive)?.join(sub);
                fsutil::ensure_state_dir(&kept)?;
                fsutil::check_private_dir(&kept, self.owner)?;
                super::move_no_replace(&source, &kept, file)?;
            }
        }
        // The `.processed/` marker leaves the inbox with them, as it did
        // before the state moved out of `.aea/`: left behind, with its
        // record gone, it is a marker aea did not record, and would hide
        // the same bytes delivered again under the freed name as mail
        // another tool processed. Kept in the archive, never read. The
        // message has moved: a marker that cannot follow (too large to copy
        // to another file system) stays; anything but a regular file is no
        // marker and stays too.
        if let Some(markers) = markers
            && fs::symlink_metadata(markers.join(name)).is_ok_and(|m| m.is_file())
            && covers(&markers.join(name))
        {
            let kept = self
                .make_private_dir(Private::Archive)?
                .join(layout::archive::MARKERS);
            fsutil::ensure_state_dir(&kept)?;
            fsutil::check_private_dir(&kept, self.owner)?;
            let _ = move_to(
                &markers.join(name),
                &kept,
                name,
                staging,
                fsutil::SMALL_STATE_LIMIT,
                self.owner,
            );
        }
        Ok(())
    }

    /// The collaboration folders remembered for `aea collab list`; an
    /// unreadable or damaged file is an error, a missing one an empty list.
    pub fn collabs(&self) -> Result<Vec<PathBuf>> {
        if !self.state_root()? {
            return Ok(Vec::new());
        }
        let path = self.layout.private(Private::Collabs);
        let Some(bytes) = fsutil::read_state(&path, COLLABS_READ_LIMIT)? else {
            return Ok(Vec::new());
        };
        serde_json::from_slice::<Vec<PathBuf>>(&bytes).map_err(|e| Error::UnsafeState {
            path,
            detail: format!("not a JSON list of folders: {e}"),
        })
    }

    /// What the monitor last saw of each collaboration folder (see
    /// [`SeenTurn`]); an unreadable or damaged file is an error, a missing
    /// one nothing seen.
    pub fn collab_turns(&self) -> Result<BTreeMap<PathBuf, SeenTurn>> {
        if !self.state_root()? {
            return Ok(BTreeMap::new());
        }
        let path = self.layout.private(Private::CollabTurns);
        let Some(bytes) = fsutil::read_state(&path, COLLABS_READ_LIMIT)? else {
            return Ok(BTreeMap::new());
        };
        serde_json::from_slice(&bytes).map_err(|e| Error::UnsafeState {
            path,
            detail: format!("not what the monitor saw of collaborations: {e}"),
        })
    }

    /// Keeps what the monitor saw of each collaboration folder, for the
    /// folders in `turns` alone (the monitor passes the ones it knows).
    pub fn set_collab_turns(&self, turns: &BTreeMap<PathBuf, SeenTurn>) -> Result<()> {
        let tmp = self.make_private_dir(Private::Tmp)?;
        let text = serde_json::to_string_pretty(turns).expect("turns serialise");
        fsutil::replace_atomic_via(
            &tmp,
            &self.layout.private(Private::CollabTurns),
            text.as_bytes(),
        )
    }

    /// Remembers collaboration folder `folder` (absolute) for `aea collab
    /// list`; a folder known already is kept once. Past [`COLLABS_MAX`]
    /// folders, the oldest is let go.
    pub fn remember_collab(&self, folder: &Path) -> Result<()> {
        self.remember_collab_as(folder, false)
    }

    /// Remembers `folder` like [`Records::remember_collab`], for a folder
    /// that mail named: anyone can send mail naming any folder, so such a
    /// folder is remembered only while the list is less than half full, and
    /// never pushes one out. Mail thus never makes aea forget (and its
    /// monitor stop watching) a collaboration of the agent's own commands,
    /// which keep room for half the list at least.
    pub fn remember_mailed_collab(&self, folder: &Path) -> Result<()> {
        self.remember_collab_as(folder, true)
    }

    fn remember_collab_as(&self, folder: &Path, mailed: bool) -> Result<()> {
        let tmp = self.make_private_dir(Private::Tmp)?;
        let _lock = fsutil::lock(&tmp.join("collabs.lock"))?;
        // A list that cannot be read is said, not started again empty: the
        // agent's own collaborations would be forgotten (and no longer
        // watched by its monitor).
        let mut known = self.collabs()?;
        if known.iter().any(|k| k == folder) || (mailed && known.len() >= COLLABS_MAX / 2) {
            return Ok(());
        }
        known.push(folder.to_path_buf());
        if known.len() > COLLABS_MAX {
            known.drain(..known.len() - COLLABS_MAX);
        }
        let text = serde_json::to_string_pretty(&known).expect("paths serialise");
        fsutil::replace_atomic_via(
            &tmp,
            &self.layout.private(Private::Collabs),
            text.as_bytes(),
        )
    }
}

impl Approvals<'_> {
    /// The approval state of `entry` whose decision is `gated` or not. Only
    /// a record for the entry's current bytes approves; one that cannot be
    /// read, sits in an unsound folder or was made for other bytes does
    /// not. A decision word this version does not know (another version
    /// wrote it) never approves: it holds like a rejection, because it is a
    /// person's decision on these bytes, which is never replaced — counting
    /// it as pending would ask for a decision that cannot be recorded.
    /// Where signatures are required (SPEC §19), a decision no approver
    /// signed is [`Approval::Unverified`], whatever it says.
    pub fn approval(&self, entry: &Entry, gated: bool) -> Approval {
        if !gated {
            return Approval::NotNeeded;
        }
        let Some(record) = self.approval_record(&entry.name) else {
            return Approval::Pending;
        };
        let state = match (record.sha256.as_deref(), entry.sha256.as_deref()) {
            (Some(decided), Some(current)) if decided != current => Approval::ChangedAfterApproval,
            (decided, current) => match record.decision {
                // An approval without a digest (older aea) cannot say what it approved.
                OrUnknown::Known(ApprovalDecision::Approved) => {
                    if decided.is_some() && current.is_some() {
                        Approval::Approved
                    } else {
                        Approval::Pending
                    }
                }
                OrUnknown::Known(ApprovalDecision::Rejected) | OrUnknown::Unknown(_) => {
                    Approval::Rejected
                }
            },
        };
        match state {
            Approval::Approved | Approval::Rejected if self.decision_problem(&record).is_some() => {
                Approval::Unverified
            }
            state => state,
        }
    }

    /// Why the decision recorded for `entry` does not count where
    /// signatures are required; `None` if there is none or it counts.
    pub fn signature_problem(&self, entry: &Entry) -> Option<String> {
        let record = self.approval_record(&entry.name)?;
        self.decision_problem(&record)
    }

    /// The person's current decision on received file `name`, if any.
    pub fn approval_record(&self, name: &str) -> Option<ApprovalRecord> {
        let dir = self.private_dir(Private::Approvals).ok()??;
        let path = dir.join(format!("{name}.json"));
        let bytes = fsutil::read_state(&path, fsutil::SMALL_STATE_LIMIT).ok()??;
        serde_json::from_slice(&bytes).ok()
    }

    /// Records a person's decision. A decision on the same bytes is never
    /// replaced: a second one fails and names the first. A record made for
    /// other bytes (the file changed after it) is moved aside to
    /// `<name>.json.superseded[.N]`, kept for the record, and returned.
    /// A record that does not count because no approver signed it
    /// (`unverified`) is moved aside the same way, to
    /// `<name>.json.unverified[.N]`.
    pub(crate) fn record_approval(
        &self,
        record: &ApprovalRecord,
        unverified: bool,
    ) -> Result<(PathBuf, Option<PathBuf>)> {
        let dir = self.make_private_dir(Private::Approvals)?;
        let file = format!("{}.json", record.file);
        let path = dir.join(&file);
        let body = serde_json::to_vec_pretty(record).expect("a record always serialises");
        let mut aside = None;
        if !fsutil::create_exclusive(&path, &body)? {
            let existing = self.approval_record(&record.file);
            let same_bytes = existing
                .as_ref()
                .is_some_and(|r| r.sha256.is_some() && r.sha256 == record.sha256);
            if unverified && existing.is_some() {
                let aside_name = format!("{file}.unverified");
                aside = Some(move_present(&path, &dir, &aside_name)?);
            } else if existing.is_none() || same_bytes {
                return Err(AlreadyDecided::by_record(&record.file, existing).into());
            } else {
                aside = Some(move_present(&path, &dir, &format!("{file}.superseded"))?);
            }
            if !fsutil::create_exclusive(&path, &body)? {
                return Err(AlreadyDecided {
                    name: record.file.clone(),
                    decision: None,
                    by: "someone else".into(),
                    at: "the same time".into(),
                }
                .into());
            }
        }
        fsutil::sync_dir(&dir)?;
        Ok((path, aside))
    }
}

/// Names of the regular files in `dir` (a checked state folder). The
/// folder is looked at before and after listing: one swapped meanwhile is
/// an error, not a list of someone else's names.
fn names_in(dir: &Path) -> Result<std::collections::HashSet<String>> {
    let look = |dir: &Path| {
        fs::symlink_metadata(dir)
            .map(|m| fsutil::identity(&m))
            .map_err(|e| Error::io("inspect", dir, e))
    };
    let before = look(dir)?;
    let entries = fs::read_dir(dir).map_err(|e| Error::io("list", dir, e))?;
    let mut names = std::collections::HashSet::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("list", dir, e))?;
        // Only regular files count (the type comes with the listing, no
        // stat): a FIFO or symlink put there is not a marker.
        if !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        if let Ok(name) = entry.file_name().into_string() {
            names.insert(name);
        }
    }
    if look(dir)? != before {
        return Err(Error::UnsafeState {
            path: dir.to_path_buf(),
            detail: "was replaced while it was being read".into(),
        });
    }
    Ok(names)
}

fn remove_if_present(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(Error::io("remove", path, e)),
        _ => Ok(()),
    }
}

fn remove_present(path: &Path) -> Result<()> {
    fs::remove_file(path).map_err(|e| Error::io("remove", path, e))
}
