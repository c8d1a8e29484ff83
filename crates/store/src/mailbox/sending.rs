//! Writing mail: delivering into an inbox, the sender's own copies
//! (`sent/`, the `outgoing/` queue of `aea sync`) and its send records,
//! and the records of mail `aea bridge` brought in.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::{Mailbox, SEND_KEY_LOCK_WAIT, SEND_KEYS_LOCK_WAIT, Sent};
use crate::error::{Error, Result};
use crate::fsutil;
use crate::layout::{Private, Shared};
use crate::message::{self, Message};
use crate::runtime::Runtime;

impl Mailbox {
    /// Delivers `message` into this inbox (SPEC §4): staged in `.tmp/`,
    /// flushed, linked to a fresh name, never replacing a file.
    pub fn deliver(&self, message: &Message, rt: &Runtime) -> Result<PathBuf> {
        self.sent()
            .write_bytes(self.dir(), &message.to_json(), message, rt)
    }

    /// Delivers a message received from elsewhere byte for byte (its
    /// sender's copy), with the same guarantees as `deliver`.
    pub fn deliver_raw(&self, bytes: &[u8], message: &Message, rt: &Runtime) -> Result<PathBuf> {
        self.sent().write_bytes(self.dir(), bytes, message, rt)
    }
}

impl Sent<'_> {
    /// Keeps the sender's copy in `sent/`.
    pub(crate) fn store_sent(&self, message: &Message, rt: &Runtime) -> Result<PathBuf> {
        self.store_in(Private::Sent, message, rt)
    }

    /// Keeps a message in private folder `place` (`sent/`, `outgoing/`).
    pub(crate) fn store_in(
        &self,
        place: Private,
        message: &Message,
        rt: &Runtime,
    ) -> Result<PathBuf> {
        let dir = self.make_private_dir(place)?;
        self.write_bytes(&dir, &message.to_json(), message, rt)
    }

    /// Keeps `bytes` (a message another copy of aea signed) in private
    /// folder `place` under `name`, unless a file has that name already:
    /// `false` then.
    pub fn keep_as(&self, place: Private, name: &str, bytes: &[u8]) -> Result<bool> {
        let dir = self.make_private_dir(place)?;
        let staging = self.make_private_dir(Private::Tmp)?;
        fsutil::create_exclusive_whole_via(&staging, &dir.join(name), bytes)
    }

    pub(super) fn write_bytes(
        &self,
        target: &Path,
        bytes: &[u8],
        message: &Message,
        rt: &Runtime,
    ) -> Result<PathBuf> {
        let limit = self.limit_for(target);
        if bytes.len() as u64 > limit {
            return Err(Error::MessageTooLarge {
                bytes: bytes.len() as u64,
                limit,
                repo: self.repo().to_path_buf(),
            });
        }
        let time = message.sent_at().unwrap_or_else(|| rt.now());
        let sender = message.from.agent_id.clone();
        let mut name = |_attempt: u32| message::file_name(time, &sender, &rt.rand_hex8());
        let nonce = || rt.rand_hex8();
        let into_inbox = target == self.dir();
        // Mail into an inbox is staged in its `.tmp/`; a recipient's is its
        // own (0700 where the inbox is shared with other OS users): a
        // sender never creates it, and stages next to the target (a dot
        // name, which readers ignore) when it may not write there. The
        // private state stages in its own `tmp/`, on its file system.
        let staging = if !into_inbox {
            self.make_private_dir(Private::Tmp)?
        } else if self.own {
            self.make_shared_dir(Shared::Staging)?
        } else if let Some(tmp) = self.shared_dir(Shared::Staging)? {
            tmp
        } else {
            target.to_path_buf()
        };
        // Leftovers of a send killed mid-way go with the next one.
        fsutil::sweep_staging(&staging);
        // Into an inbox shared with other OS users, with the mode and group
        // mail gets there, whatever this writer's umask.
        let mode = if into_inbox { self.mail_mode() } else { None };
        let delivered = match fsutil::deliver_new(&staging, target, bytes, &mut name, &nonce, mode)
        {
            Err(Error::Io { source, .. })
                if source.kind() == io::ErrorKind::PermissionDenied && staging != target =>
            {
                fsutil::deliver_new(target, target, bytes, &mut name, &nonce, mode)
            }
            other => other,
        }?;
        if into_inbox && let Some(name) = delivered.file_name().and_then(|n| n.to_str()) {
            self.inbox()
                .index_ids(&[(message.message_id.as_str(), name)]);
        }
        Ok(delivered)
    }

    /// The record of send key `digest` (`send --idempotency-key`), if any.
    pub(crate) fn send_key(&self, digest: &str) -> Result<Option<Vec<u8>>> {
        let Some(dir) = self.private_dir(Private::SendKeys)? else {
            return Ok(None);
        };
        fsutil::read_state(&dir.join(digest), fsutil::SMALL_STATE_LIMIT)
    }

    /// The bridge record of message `id`, if any (see [`Private::Bridged`]).
    pub fn bridged(&self, id: &str) -> Result<Option<Vec<u8>>> {
        crate::message::check_message_id(id).map_err(|reason| Error::UnsafeState {
            path: self.layout().private(Private::Bridged),
            detail: format!("message id {id:?} is not one: {reason}"),
        })?;
        let Some(dir) = self.private_dir(Private::Bridged)? else {
            return Ok(None);
        };
        fsutil::read_state(&dir.join(format!("{id}.json")), fsutil::SMALL_STATE_LIMIT)
    }

    pub fn record_bridged(&self, id: &str, record: &[u8]) -> Result<()> {
        let dir = self.make_private_dir(Private::Bridged)?;
        fsutil::replace_atomic(&dir.join(format!("{id}.json")), record)
    }

    pub fn forget_bridged(&self, id: &str) -> Result<()> {
        let Some(dir) = self.private_dir(Private::Bridged)? else {
            return Ok(());
        };
        let path = dir.join(format!("{id}.json"));
        match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(Error::io("remove", &path, e))
            }
            _ => Ok(()),
        }
    }

    /// Records send key `digest` before anything is delivered; false when
    /// it is recorded already (a retry).
    pub fn record_send_key(&self, digest: &str, record: &[u8]) -> Result<bool> {
        let dir = self.make_private_dir(Private::SendKeys)?;
        fsutil::create_exclusive_whole(&dir.join(digest), record)
    }

    /// Holds the lock under which a send judges an earlier record of the
    /// same message and replaces it (`sent-keys/.lock`, released when the
    /// process ends, however it ends). The record is replaced in one
    /// rename, never moved away first: a send killed while taking a record
    /// over leaves the record, so its retry still finds the id.
    pub(crate) fn lock_send_keys(&self) -> Result<fs::File> {
        let dir = self.make_private_dir(Private::SendKeys)?;
        let path = dir.join(".lock");
        let file = fsutil::lock_within(&path, SEND_KEYS_LOCK_WAIT)?;
        fsutil::require_owner(&file, &path, self.owner)?;
        Ok(file)
    }

    /// Holds `sent-keys/.<digest>.lock` for a whole send with that key:
    /// a second send with the same key waits for the first to end (or
    /// die: the lock goes with its process), then finds what it delivered.
    pub(crate) fn lock_send_key(&self, digest: &str) -> Result<fs::File> {
        let dir = self.make_private_dir(Private::SendKeys)?;
        let path = dir.join(format!(".{digest}.lock"));
        let file = fsutil::lock_within(&path, SEND_KEY_LOCK_WAIT)?;
        fsutil::require_owner(&file, &path, self.owner)?;
        Ok(file)
    }

    /// Writes the record of send key `digest`, replacing any.
    pub(crate) fn replace_send_key(&self, digest: &str, record: &[u8]) -> Result<()> {
        let dir = self.make_private_dir(Private::SendKeys)?;
        fsutil::replace_atomic(&dir.join(digest), record)
    }

    /// Removes the record of send key `digest`, if there is one.
    pub(crate) fn forget_send_key(&self, digest: &str) -> Result<()> {
        let Some(dir) = self.private_dir(Private::SendKeys)? else {
            return Ok(());
        };
        let path = dir.join(digest);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(Error::io("remove", &path, e)),
            _ => Ok(()),
        }
    }

    /// Names of the send records last written before `cutoff`: a cheap
    /// listing (no record is read) for dropping the ones no retry uses.
    pub(crate) fn send_keys_written_before(
        &self,
        cutoff: std::time::SystemTime,
    ) -> Result<Vec<String>> {
        let Some(dir) = self.private_dir(Private::SendKeys)? else {
            return Ok(Vec::new());
        };
        Ok(fs::read_dir(&dir)
            .map_err(|e| Error::io("list", &dir, e))?
            .filter_map(std::result::Result::ok)
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .filter(|e| {
                e.metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t < cutoff)
            })
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect())
    }

    /// Every send record, by name, with its bytes.
    pub(crate) fn send_keys(&self) -> Result<Vec<(String, Vec<u8>)>> {
        let Some(dir) = self.private_dir(Private::SendKeys)? else {
            return Ok(Vec::new());
        };
        let mut names: Vec<String> = fs::read_dir(&dir)
            .map_err(|e| Error::io("list", &dir, e))?
            .filter_map(std::result::Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect();
        names.sort();
        Ok(names
            .into_iter()
            .filter_map(|name| {
                let bytes =
                    fsutil::read_state(&dir.join(&name), fsutil::SMALL_STATE_LIMIT).ok()??;
                Some((name, bytes))
            })
            .collect())
    }
}
