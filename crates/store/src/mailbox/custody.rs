//! Custody before decision (see [`Custody`]): the receiver's copies of
//! other users' message files, in its private `custody/`, taken the first
//! time it reads each one; and what happens when such a file changed after
//! it was read.
//!
//! A copy is written from the bytes aea read (never a hard link: the
//! sender could rewrite the inode through a link of its own), through the
//! same no-follow, non-blocking, capped reads as every state file, and
//! only of a valid message: a flood of junk is not copied. Nothing of this
//! runs for the receiver's own files, so an inbox that is not shared pays
//! nothing for it.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::message_file::Read;
use super::{Custody, Entry, Records};
use crate::error::{Error, Result, one_line};
use crate::fsutil;
use crate::layout::{Private, Shared};
use crate::message::{self, Message};

/// What a message of the inbox reads as: its parse, its digest, and
/// whether it is the receiver's copy.
type Custodied = (Result<Message, String>, Option<String>, Custody);

/// Why a rewritten file was put in `.aea/.quarantine/`.
const REWRITTEN: &str = "rewritten by its sender after aea read it; aea put back the copy it took then, and never reads this file";

impl Records<'_> {
    /// Inbox file `name` as `read`, or as the receiver's copy of it: a
    /// file another user owns, or one that no longer reads as a regular
    /// file, is the copy the receiver took when it first read it, taken
    /// now if this is that first read. The receiver's own readable files
    /// cost nothing more.
    pub(super) fn in_custody(&self, name: &str, read: Read) -> Custodied {
        let theirs = matches!((read.owner, self.owner), (Some(file), Some(ours)) if file != ours);
        if read.bytes.is_some() && !theirs {
            return (read.message, read.sha256, Custody::NotNeeded);
        }
        let kept = match self.custody_copy(name) {
            Ok(kept) => kept,
            Err(e) => return (read.message, read.sha256, Custody::NotKept(one_line(&e))),
        };
        let copy = match (kept, &read.bytes) {
            (Some(copy), _) => copy,
            // Only a valid message is worth keeping: nothing is decided
            // on the rest, and a flood of junk is not copied.
            (None, Some(bytes)) if theirs && read.message.is_ok() => {
                match self.take_custody(name, bytes) {
                    Ok(None) => {
                        return (read.message, read.sha256, Custody::Kept { changed: false });
                    }
                    // Another reader took it a moment before.
                    Ok(Some(first)) => first,
                    Err(e) => return (read.message, read.sha256, Custody::NotKept(one_line(&e))),
                }
            }
            (None, _) => return (read.message, read.sha256, Custody::NotNeeded),
        };
        if read.bytes.as_deref() == Some(copy.as_slice()) {
            return (read.message, read.sha256, Custody::Kept { changed: false });
        }
        (
            message::parse(&copy, Some(name)),
            Some(fsutil::sha256_hex(&copy)),
            Custody::Kept { changed: true },
        )
    }

    /// The receiver's copy of inbox file `name`, if it took one.
    fn custody_copy(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let Some(dir) = self.private_dir(Private::Custody)? else {
            return Ok(None);
        };
        fsutil::read_state(&dir.join(name), self.message_limit)
    }

    /// Keeps `bytes` as the receiver's copy of inbox file `name`: `None`
    /// when this call kept them, the copy another process kept first
    /// otherwise. Not flushed: a listing takes many, and `show` flushes
    /// the one it prints ([`Mailbox::hold`]).
    fn take_custody(&self, name: &str, bytes: &[u8]) -> Result<Option<Vec<u8>>> {
        let dir = self.make_private_dir(Private::Custody)?;
        let staging = self.make_private_dir(Private::Tmp)?;
        let path = dir.join(name);
        if fsutil::create_exclusive_whole_unflushed(&staging, &path, bytes)? {
            return Ok(None);
        }
        fsutil::read_state(&path, self.message_limit)?
            .map(Some)
            .ok_or_else(|| Error::io("read", &path, io::Error::from(io::ErrorKind::NotFound)))
    }

    /// For `show`, about to print `entry`: makes the copy it was read
    /// from (another user's file) last through a crash, and where its file
    /// changed after it was read, puts that copy back in the file's place
    /// as the receiver's own file (its sender can no longer rewrite it),
    /// moving the rewritten file to `.aea/.quarantine/` with the reason,
    /// never read again. Returns where the rewritten file was kept (`None`
    /// when nothing was put back, or the file was gone).
    pub fn hold(&self, entry: &Entry) -> Result<Option<PathBuf>> {
        let Custody::Kept { changed } = entry.custody else {
            return Ok(None);
        };
        let dir = self.make_private_dir(Private::Custody)?;
        let path = dir.join(&entry.name);
        let limit = self.message_limit;
        let file = fsutil::open_read(&path).map_err(|e| e.into_error(&path, limit))?;
        file.sync_all().map_err(|e| Error::io("flush", &path, e))?;
        fsutil::sync_dir(&dir)?;
        if !changed {
            return Ok(None);
        }
        let bytes = fsutil::read_opened(file, limit).map_err(|e| e.into_error(&path, limit))?;
        if entry.sha256.as_deref() != Some(fsutil::sha256_hex(&bytes).as_str()) {
            return Err(Error::UnsafeState {
                path,
                detail: "changed while it was being shown; nothing was put back".into(),
            });
        }
        // The rewritten file leaves first (its sender may put another file
        // under the freed name meanwhile: the copy replaces that too).
        let quarantine = self.make_shared_dir(Shared::Quarantine)?;
        let staging = self.make_shared_dir(Shared::Staging)?;
        let kept = move_aside(&entry.path, &quarantine, &entry.name)?;
        fsutil::replace_mail_via(&staging, &entry.path, &bytes, self.mail_mode())?;
        if let Some(kept) = &kept {
            let file = kept
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            fsutil::create_exclusive(
                &quarantine.join(format!("{file}.reason")),
                format!("{REWRITTEN}\n").as_bytes(),
            )?;
        }
        Ok(kept)
    }

    /// Whether `dir/name` is a rewritten file [`Mailbox::hold`] put in
    /// `.aea/.quarantine/` (its reason file says so).
    pub(super) fn is_custody_rewrite(&self, dir: &Path, name: &str) -> bool {
        self.shared_dir(Shared::Quarantine)
            .ok()
            .flatten()
            .is_some_and(|q| q == dir)
            && fsutil::read_state(
                &dir.join(format!("{name}.reason")),
                fsutil::SMALL_STATE_LIMIT,
            )
            .ok()
            .flatten()
            .is_some_and(|b| b.starts_with(REWRITTEN.as_bytes()))
    }

    /// Drops the receiver's copy of inbox file `name`, which has left the
    /// inbox (processed, archived, quarantined). Best effort: a copy left
    /// behind is only read for a file of that name. One `lstat` where no
    /// copy was ever taken.
    pub(super) fn forget_custody(&self, name: &str) {
        if let Ok(Some(dir)) = self.private_dir(Private::Custody) {
            let _ = fs::remove_file(dir.join(name));
        }
    }
}

/// Moves `from` into `dir` as `name` (or `name.N`, the first name free
/// there): a rename, which another user's file allows where the receiver
/// owns the folder it leaves (a hard link would not: the kernel refuses a
/// link to another user's file one cannot write). `dir` is the receiver's
/// own, so nobody else takes a name there meanwhile. `None` when `from`
/// is gone.
fn move_aside(from: &Path, dir: &Path, name: &str) -> Result<Option<PathBuf>> {
    for n in 0..1000 {
        let target = if n == 0 {
            dir.join(name)
        } else {
            dir.join(format!("{name}.{n}"))
        };
        if fs::symlink_metadata(&target).is_ok() {
            continue;
        }
        return match fs::rename(from, &target) {
            Ok(()) => {
                fsutil::sync_dir(dir)?;
                Ok(Some(target))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("move", from, e)),
        };
    }
    Err(Error::NoFreeName {
        dir: dir.to_path_buf(),
    })
}
