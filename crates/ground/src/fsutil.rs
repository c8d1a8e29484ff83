//! File-system primitives with the guarantees the protocol relies on:
//! never-overwriting atomic delivery, durable writes, refusal of symlinks,
//! and size-limited reads. Every error names its path.
//!
//! State (markers, claims, approvals, locks, the config, the log) is
//! opened one way only: `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`, then the
//! opened handle is `fstat`ed and anything but a regular file is refused
//! before a byte is read, and every read is capped. Opening first and
//! looking second leaves no gap in which a sender can swap in a FIFO
//! (which would block the open) or a symlink to `/dev/zero`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Refuses `path` if it is a symbolic link. A missing path is fine.
pub fn refuse_symlink(path: &Path) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(Error::Symlink {
            path: path.to_path_buf(),
        }),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("inspect", path, e)),
    }
}

/// Makes sure `path` is a real directory (not a symlink), creating it if
/// missing. Returns whether it was created.
pub fn ensure_dir(path: &Path) -> Result<bool> {
    ensure_dir_mode(path, 0o777)
}

/// Like [`ensure_dir`] for a folder of the receiver's own state
/// (`.processed`, `.claims`, `.approvals`, …): created `0700`, so where the
/// inbox is shared with other OS users only the receiver can look inside,
/// create, rename or delete there.
pub fn ensure_state_dir(path: &Path) -> Result<bool> {
    ensure_dir_mode(path, 0o700)
}

fn ensure_dir_mode(path: &Path, mode: u32) -> Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(Error::Symlink {
            path: path.to_path_buf(),
        }),
        Ok(meta) if meta.is_dir() => Ok(false),
        Ok(_) => Err(Error::NotADirectory {
            path: path.to_path_buf(),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => match create_dir(path, mode) {
            Ok(()) => Ok(true),
            // Another process created it between our look and our create.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => ensure_dir_mode(path, mode),
            Err(e) => Err(Error::io("create directory", path, e)),
        },
        Err(e) => Err(Error::io("inspect", path, e)),
    }
}

fn create_dir(path: &Path, mode: u32) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    builder.mode(mode);
    #[cfg(not(unix))]
    let _ = mode;
    builder.create(path)
}

/// Checks an optional state folder: `Ok(false)` when it does not exist,
/// `Ok(true)` for a real directory, an error for a symlink (never
/// followed) or anything else.
pub fn state_dir_exists(path: &Path) -> Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(Error::Symlink {
            path: path.to_path_buf(),
        }),
        Ok(meta) if meta.is_dir() => Ok(true),
        Ok(_) => Err(Error::NotADirectory {
            path: path.to_path_buf(),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io("inspect", path, e)),
    }
}

/// Checks an optional state folder of a mailbox whose `.aea/` belongs to
/// the user `owner`: `Ok(false)` when it does not exist. A symlink (never
/// followed), a non-directory, a folder owned by another user or one any
/// user may write is an error: it could hold state the receiver never
/// wrote (forged approvals, markers that hide mail).
pub fn check_state_dir(path: &Path, owner: Option<u32>) -> Result<bool> {
    if !state_dir_exists(path)? {
        return Ok(false);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = fs::symlink_metadata(path).map_err(|e| Error::io("inspect", path, e))?;
        if let Some(owner) = owner
            && meta.uid() != owner
        {
            return Err(Error::UnsafeState {
                path: path.to_path_buf(),
                detail: format!(
                    "is owned by uid {} while .aea/ belongs to uid {owner}; state in a folder another user owns is not trusted",
                    meta.uid()
                ),
            });
        }
        if meta.mode() & 0o002 != 0 {
            return Err(Error::UnsafeState {
                path: path.to_path_buf(),
                detail: "is writable by every user; state in it is not trusted".into(),
            });
        }
    }
    #[cfg(not(unix))]
    let _ = owner;
    Ok(true)
}

/// Checks a folder of the receiver's private state (see `crate::layout`):
/// like [`check_state_dir`], and writable by its owner alone (not by a
/// group either: nobody but the receiver writes its decisions).
pub fn check_private_dir(path: &Path, owner: Option<u32>) -> Result<bool> {
    if !check_state_dir(path, owner)? {
        return Ok(false);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = fs::symlink_metadata(path).map_err(|e| Error::io("inspect", path, e))?;
        if meta.mode() & 0o020 != 0 {
            return Err(Error::UnsafeState {
                path: path.to_path_buf(),
                detail: "is writable by its group; the receiver's private state must be writable by the receiver alone".into(),
            });
        }
    }
    Ok(true)
}

/// `path` with its `.` and `..` taken out by their names alone (no
/// symlink is followed): how a path the person typed is said back.
pub fn lexically_normal(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// The owner (uid) of a file, where the platform has one.
pub fn owner(meta: &fs::Metadata) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(meta.uid())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// Device and inode: whether two looks saw the same file.
pub fn identity(meta: &fs::Metadata) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        (0, 0)
    }
}

/// Checks that `path` is an existing real directory.
pub fn require_real_dir(path: &Path) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(Error::Symlink {
            path: path.to_path_buf(),
        }),
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(Error::NotADirectory {
            path: path.to_path_buf(),
        }),
        Err(e) => Err(Error::io("open directory", path, e)),
    }
}

/// Flushes a directory entry change (a new name, a rename) to disk.
pub fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        // A directory only, never blocking on a FIFO swapped in. (Symlinks
        // are followed: the user's config folder may be one.)
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io("sync directory", dir, e))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// The mode, and group, of a new message file in an inbox shared with
/// other OS users (see [`MailMode::of_inbox`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MailMode {
    pub mode: u32,
    /// The group it must have: the inbox folder's.
    pub group: Option<u32>,
}

impl MailMode {
    /// What a new message gets in the inbox folder whose metadata is
    /// `meta`, whatever the writer's umask:
    /// - shared with a group (writable by the group, setgid, so that new
    ///   files take the folder's group): `0640` with that group — the
    ///   receiver reads it through the group, users outside it cannot
    ///   read it, nor drop a copy of it anywhere;
    /// - writable by other users without a group of its own (`1777`):
    ///   `0644`, the only mode the receiver can read another user's file
    ///   through; every user can read it, and a copy dropped back under
    ///   another name is caught by the message id, accepted once;
    /// - written by its owner alone: `None`, the umask decides as for any
    ///   file.
    pub fn of_inbox(meta: &fs::Metadata) -> Option<MailMode> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let mode = meta.mode();
            if mode & 0o2000 != 0 && mode & 0o020 != 0 {
                Some(MailMode {
                    mode: 0o640,
                    group: Some(meta.gid()),
                })
            } else if mode & 0o022 != 0 {
                Some(MailMode {
                    mode: 0o644,
                    group: None,
                })
            } else {
                None
            }
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            None
        }
    }

    /// Gives the just-created `file` this mode and group, before a byte
    /// is written to it.
    fn apply(self, file: &File) -> io::Result<()> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            if let Some(gid) = self.group
                && file.metadata()?.gid() != gid
            {
                std::os::unix::fs::fchown(file, None, Some(gid))?;
            }
            file.set_permissions(fs::Permissions::from_mode(self.mode))?;
        }
        #[cfg(not(unix))]
        let _ = file;
        Ok(())
    }
}

/// Writes `bytes` to a fresh file in `staging`, flushed to disk.
fn stage(
    staging: &Path,
    stem: &str,
    bytes: &[u8],
    nonce: &dyn Fn() -> String,
    mode: Option<MailMode>,
) -> Result<PathBuf> {
    stage_flushed(staging, stem, bytes, nonce, true, mode)
}

fn stage_flushed(
    staging: &Path,
    stem: &str,
    bytes: &[u8],
    nonce: &dyn Fn() -> String,
    flush: bool,
    mode: Option<MailMode>,
) -> Result<PathBuf> {
    loop {
        let tmp = staging.join(format!(".{stem}.{}.tmp", nonce()));
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        // Never readable by more users than the final mode lets read.
        #[cfg(unix)]
        if let Some(m) = mode {
            options.mode(m.mode & 0o600);
        }
        let mut file = match options.open(&tmp) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io("create", &tmp, e)),
        };
        let written = mode
            .map_or(Ok(()), |m| m.apply(&file))
            .and_then(|()| file.write_all(bytes))
            .and_then(|()| if flush { file.sync_all() } else { Ok(()) });
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(Error::io("write", &tmp, e));
        }
        return Ok(tmp);
    }
}

/// Writes `bytes` to a fresh `.deliver.<pid>-<host>-<n>.tmp` in `dir`,
/// flushed: a name [`sweep_staging`] removes once its writer is gone.
fn stage_tagged(dir: &Path, bytes: &[u8], flush: bool) -> Result<PathBuf> {
    let counter = std::cell::Cell::new(0u32);
    let tagged = || {
        counter.set(counter.get() + 1);
        format!("{}-{}-{}", std::process::id(), host_tag(), counter.get())
    };
    stage_flushed(dir, "deliver", bytes, &tagged, flush, None)
}

/// Staged files (`.deliver.*.tmp`) of a send that was killed before it
/// linked or removed them are removed once they are older than this: a
/// live send holds one for milliseconds, seconds for the largest message.
pub(crate) const STAGING_STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(600);

/// A short tag of this host, in staging names.
fn host_tag() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    sha256_hex(host.trim().as_bytes())[..8].to_string()
}

/// Whether the staging file `name` (`.deliver.<pid>-<host>-<nonce>.tmp`)
/// was written by a process of this host that is gone.
fn writer_gone(name: &str) -> bool {
    let Some(rest) = name.strip_prefix(".deliver.") else {
        return false;
    };
    let mut parts = rest.splitn(3, '-');
    let (Some(pid), Some(host)) = (parts.next(), parts.next()) else {
        return false;
    };
    pid.parse::<u32>().is_ok()
        && host == host_tag()
        && Path::new("/proc/self").exists()
        && !Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes `dir`'s staging leftovers: regular files named `.deliver.*.tmp`
/// (never through a symlink) whose writer on this host is gone, or that
/// are older than [`STAGING_STALE_AFTER`]. Best effort: returns how many
/// went.
pub fn sweep_staging(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let now = std::time::SystemTime::now();
    let mut swept = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(".deliver.") && name.ends_with(".tmp")) {
            continue;
        }
        let Ok(meta) = fs::symlink_metadata(entry.path()) else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age > STAGING_STALE_AFTER);
        if meta.file_type().is_file()
            && (old || writer_gone(&name))
            && fs::remove_file(entry.path()).is_ok()
        {
            swept += 1;
        }
    }
    swept
}

/// Delivers `bytes` into `dir` under a new name, atomically and without ever
/// replacing an existing file.
///
/// The content is staged in `staging` (same file system), flushed, then
/// hard-linked to its final name: `link(2)` fails with `EEXIST` instead of
/// replacing, so a concurrent writer that picked the same name is detected
/// and `name` is asked for another one. Readers only ever see the complete
/// file. The staged name is removed and the directory flushed afterwards.
pub fn deliver_new(
    staging: &Path,
    dir: &Path,
    bytes: &[u8],
    name: &mut dyn FnMut(u32) -> String,
    nonce: &dyn Fn() -> String,
    mode: Option<MailMode>,
) -> Result<PathBuf> {
    const ATTEMPTS: u32 = 64;
    // The name says who stages it (pid and host), so the sweep can tell a
    // leftover of a killed send from a send still writing.
    let tagged = || format!("{}-{}-{}", std::process::id(), host_tag(), nonce());
    let tmp = stage(staging, "deliver", bytes, &tagged, mode)?;
    let mut result = Err(Error::NoFreeName {
        dir: dir.to_path_buf(),
    });
    for attempt in 0..ATTEMPTS {
        let target = dir.join(name(attempt));
        match fs::hard_link(&tmp, &target) {
            Ok(()) => {
                result = Ok(target);
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                result = Err(Error::io("deliver", &target, e));
                break;
            }
        }
    }
    let _ = fs::remove_file(&tmp);
    let target = result?;
    sync_dir(dir)?;
    Ok(target)
}

/// Replaces `path` with `bytes` atomically (write a sibling, flush, rename).
/// For files aea owns and rewrites: the registry, state files, init's files.
pub fn replace_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    refuse_symlink(path)?;
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    // Staged under a name that says who writes it: the sweep of a state
    // folder removes what a killed writer left.
    let tmp = stage_tagged(dir, bytes, true)?;
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io("replace", path, e));
    }
    sync_dir(dir)
}

/// Replaces `path` with `bytes` staged in `staging` (same file system),
/// flushed, renamed over `path`. Unlike [`replace_atomic`] the staging
/// folder need not be `path`'s: for replacing a file in a folder where
/// only the final rename is ours to make.
/// Like [`replace_atomic_via`] for a cache (what [`crate::seen`] keeps):
/// whole or not at all, but not flushed to disk — a cache lost in a crash
/// only costs the work of making it again, and two flushes per command
/// cost more than the work a cache saves.
pub fn replace_cache_via(staging: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = staging.join(format!(".cache.{}.tmp", std::process::id()));
    let _ = fs::remove_file(&tmp);
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut file| file.write_all(bytes))
        .and_then(|()| fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io("replace", path, e));
    }
    Ok(())
}

pub fn replace_atomic_via(staging: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    replace_mail_via(staging, path, bytes, None)
}

/// [`replace_atomic_via`] for a message file of an inbox, given the mode
/// new mail gets there ([`MailMode::of_inbox`]).
pub fn replace_mail_via(
    staging: &Path,
    path: &Path,
    bytes: &[u8],
    mode: Option<MailMode>,
) -> Result<()> {
    let counter = std::cell::Cell::new(0u32);
    let nonce = || {
        counter.set(counter.get() + 1);
        format!("{}-{}", std::process::id(), counter.get())
    };
    let tmp = stage(staging, "adopt", bytes, &nonce, mode)?;
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io("replace", path, e));
    }
    sync_dir(path.parent().unwrap_or_else(|| Path::new(".")))
}

/// Renames `from` to `to` in one step, failing with `AlreadyExists` when
/// `to` exists (never replacing it). `Ok(false)` where the file system or
/// the kernel cannot (the caller links and unlinks instead).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // renameat2(2): std has no non-replacing rename.
pub fn rename_no_replace(from: &Path, to: &Path) -> io::Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
    };
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: both are NUL-terminated paths that live across the call.
    let done = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if done == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINVAL | libc::ENOSYS | libc::ENOTSUP) => Ok(false),
        _ => Err(e),
    }
}

/// Elsewhere: always linked and unlinked by the caller.
#[cfg(not(target_os = "linux"))]
pub(crate) fn rename_no_replace(_: &Path, _: &Path) -> io::Result<bool> {
    Ok(false)
}

/// Creates `path` with `bytes` only if it does not exist yet. Returns false
/// when it already existed (nothing is written then).
pub fn create_exclusive(path: &Path, bytes: &[u8]) -> Result<bool> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    options.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    let mut file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(Error::io("create", path, e)),
    };
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| Error::io("write", path, e))?;
    Ok(true)
}

/// Like [`create_exclusive`], but a reader never sees the file empty or
/// half-written, even if this process is killed mid-way: the content is
/// staged next to it (a `.deliver.*.tmp` name, swept like delivery
/// leftovers) and linked into place, which fails if `path` exists.
/// For claims, which another process judges by their content.
pub fn create_exclusive_whole(path: &Path, bytes: &[u8]) -> Result<bool> {
    create_exclusive_whole_via(path.parent().unwrap_or_else(|| Path::new(".")), path, bytes)
}

/// Like [`create_exclusive_whole`], staged in `staging` (on the same file
/// system): for a folder of many files (`.processed/` of a large inbox),
/// whose sweep for leftovers would list every one of them.
pub fn create_exclusive_whole_via(staging: &Path, path: &Path, bytes: &[u8]) -> Result<bool> {
    link_staged(staging, path, bytes, true)
}

/// [`create_exclusive_whole_via`] without flushing the content: for files
/// written for other readers, which a crash may lose (aea's own record of
/// the same thing is flushed).
pub fn create_exclusive_whole_unflushed(staging: &Path, path: &Path, bytes: &[u8]) -> Result<bool> {
    link_staged(staging, path, bytes, false)
}

fn link_staged(staging: &Path, path: &Path, bytes: &[u8], flush: bool) -> Result<bool> {
    sweep_staging(staging);
    let tmp = stage_tagged(staging, bytes, flush)?;
    let linked = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::io("create", path, e)),
    }
}

/// What [`take_over`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum TakeOver {
    /// The file was the one judged stale, and is gone: ours to replace.
    Taken,
    /// Someone moved or removed it first.
    Gone,
    /// Someone replaced it after it was judged: put back, with what it holds.
    Replaced(Vec<u8>),
}

/// Takes over the file at `path`, judged stale by its content `judged`
/// (a claim, a send's record): moves it to `aside` (one rename, so one
/// process wins), and puts it back when what was moved is no longer what
/// was judged. After [`TakeOver::Taken`] the file is gone.
pub fn take_over(path: &Path, judged: &[u8], aside: &Path) -> Result<TakeOver> {
    if fs::rename(path, aside).is_err() {
        return Ok(TakeOver::Gone);
    }
    let moved = read_state(aside, SMALL_STATE_LIMIT)?.unwrap_or_default();
    if moved != judged {
        let _ = fs::hard_link(aside, path);
        let _ = fs::remove_file(aside);
        return Ok(TakeOver::Replaced(moved));
    }
    let _ = fs::remove_file(aside);
    Ok(TakeOver::Taken)
}

/// Opens (creating it if needed) the lock file at `path`, without taking
/// the lock: never through a symlink, never a FIFO or device, mode `0600`
/// so no other OS user can open it and hold the lock.
pub fn open_lock(path: &Path) -> Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    options.mode(0o600);
    open_regular(path, &mut options).map_err(|e| e.into_error(path, 0))
}

/// Opens `path` for appending (creating it `0644`), a regular file only.
pub fn open_append(path: &Path) -> Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    options.mode(0o644);
    open_regular(path, &mut options).map_err(|e| e.into_error(path, 0))
}

/// Opens `path` for reading as state: a regular file only, never blocking.
pub fn open_read(path: &Path) -> Result<File, ReadLimited> {
    open_regular(path, OpenOptions::new().read(true))
}

/// The one way aea opens a state file: the last component is never
/// followed (`O_NOFOLLOW`), a FIFO or device cannot block the open
/// (`O_NONBLOCK`), the descriptor does not leak into children
/// (`O_CLOEXEC`); then the opened handle must be a regular file.
fn open_regular(path: &Path, options: &mut OpenOptions) -> Result<File, ReadLimited> {
    #[cfg(unix)]
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
    let file = options.open(path).map_err(|e| match e.raw_os_error() {
        // O_NOFOLLOW on a symlink.
        #[cfg(unix)]
        Some(libc::ELOOP) => ReadLimited::Symlink,
        // A FIFO without a reader opened for writing, or a socket.
        #[cfg(unix)]
        Some(libc::ENXIO | libc::EOPNOTSUPP) => ReadLimited::NotAFile,
        _ => ReadLimited::Io(e),
    })?;
    let meta = file.metadata().map_err(ReadLimited::Io)?;
    if !meta.is_file() {
        return Err(ReadLimited::NotAFile);
    }
    Ok(file)
}

/// Holds an exclusive lock on `path` until the returned file is dropped,
/// waiting for other holders.
pub fn lock(path: &Path) -> Result<File> {
    let file = open_lock(path)?;
    file.lock().map_err(|e| Error::io("lock", path, e))?;
    Ok(file)
}

/// Like [`lock`], but gives up after `wait`: for locks held only for a
/// moment (the audit log), so a process that holds one forever cannot hang
/// every command and git hook.
pub fn lock_within(path: &Path, wait: std::time::Duration) -> Result<File> {
    try_lock_within(path, wait)?.ok_or_else(|| {
        Error::io(
            "lock",
            path,
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!("another process held the lock for over {wait:?}"),
            ),
        )
    })
}

/// Like [`lock_within`], with `None` when another process still holds the
/// lock after `wait`: for callers that have something better to do than
/// fail (a second `aea gc` steps aside).
pub fn try_lock_within(path: &Path, wait: std::time::Duration) -> Result<Option<File>> {
    let file = open_lock(path)?;
    let deadline = std::time::Instant::now() + wait;
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Some(file)),
            Err(fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(50));
            }
            Err(fs::TryLockError::WouldBlock) => return Ok(None),
            Err(fs::TryLockError::Error(e)) => return Err(Error::io("lock", path, e)),
        }
    }
}

/// Refuses `file` (opened from `path`) unless it belongs to the user
/// `owner` (the owner of `.aea/`). Where the inbox is shared, a log, lock
/// or state file another user created there first is not aea's state.
pub fn require_owner(file: &File, path: &Path, owner: Option<u32>) -> Result<()> {
    let meta = file.metadata().map_err(|e| Error::io("inspect", path, e))?;
    match (owner, self::owner(&meta)) {
        (Some(expected), Some(actual)) if expected != actual => Err(Error::UnsafeState {
            path: path.to_path_buf(),
            detail: format!(
                "belongs to uid {actual}, not to uid {expected} who owns .aea/; it was not written by the receiver"
            ),
        }),
        _ => Ok(()),
    }
}

/// The owner of the folder `dir` (for [`require_owner`]).
pub fn dir_owner(dir: &Path) -> Option<u32> {
    fs::symlink_metadata(dir).ok().and_then(|m| owner(&m))
}

/// The SHA-256 of `bytes` as lower-case hex (attachments, sync digests).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

/// Cap for small state files: markers, claims, approvals, pid files.
pub const SMALL_STATE_LIMIT: u64 = 64 * 1024;
/// Cap for state that grows with the inbox (announced lists, sync and
/// install state), the config and the registry.
pub const STATE_LIMIT: u64 = 32 * 1024 * 1024;

/// Why a file could not be read as a bounded regular file.
#[derive(Debug)]
pub enum ReadLimited {
    Symlink,
    NotAFile,
    TooLarge(u64),
    Io(io::Error),
}

impl ReadLimited {
    /// The library error for `path` (read with cap `limit`).
    pub fn into_error(self, path: &Path, limit: u64) -> Error {
        match self {
            ReadLimited::Symlink => Error::Symlink {
                path: path.to_path_buf(),
            },
            ReadLimited::NotAFile => Error::UnsafeState {
                path: path.to_path_buf(),
                detail: "is not a regular file (a FIFO, socket or device); not opened".into(),
            },
            ReadLimited::TooLarge(n) => Error::UnsafeState {
                path: path.to_path_buf(),
                detail: format!("is {n} bytes, over the {limit} byte cap for this file"),
            },
            ReadLimited::Io(e) => Error::io("read", path, e),
        }
    }
}

/// Reads a regular file of at most `limit` bytes, refusing symlinks and
/// special files before reading a byte.
pub fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, ReadLimited> {
    read_opened(open_read(path)?, limit)
}

/// [`read_limited`], with the owner of the file read (from the handle
/// it was read through, so it is the owner of those bytes).
pub fn read_limited_owned(path: &Path, limit: u64) -> Result<(Vec<u8>, Option<u32>), ReadLimited> {
    let file = open_read(path)?;
    let meta = file.metadata().map_err(ReadLimited::Io)?;
    Ok((read_len(file, meta.len(), limit)?, owner(&meta)))
}

/// Reads at most `limit` bytes of a file opened with [`open_read`].
pub fn read_opened(file: File, limit: u64) -> Result<Vec<u8>, ReadLimited> {
    let len = file.metadata().map_err(ReadLimited::Io)?.len();
    read_len(file, len, limit)
}

/// Reads at most `limit` bytes of `file`, whose size was `len`.
fn read_len(file: File, len: u64, limit: u64) -> Result<Vec<u8>, ReadLimited> {
    if len > limit {
        return Err(ReadLimited::TooLarge(len));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    // The file may grow between the stat and the read: never take more than the limit.
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadLimited::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadLimited::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Reads a state file of at most `limit` bytes, `None` when it does not
/// exist. Symlinks, FIFOs, devices and oversized files are errors.
pub fn read_state(path: &Path, limit: u64) -> Result<Option<Vec<u8>>> {
    match read_limited(path, limit) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(ReadLimited::Io(e)) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into_error(path, limit)),
    }
}

/// Reads a text file aea owns (at most [`STATE_LIMIT`] bytes), `None` when
/// it does not exist.
pub fn read_optional(path: &Path) -> Result<Option<String>> {
    read_state(path, STATE_LIMIT)?
        .map(|bytes| {
            String::from_utf8(bytes).map_err(|_| Error::UnsafeState {
                path: path.to_path_buf(),
                detail: "is not UTF-8 text".into(),
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deliver_new_never_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let staging = dir.path().join(".tmp");
        fs::create_dir(&staging).unwrap();
        let nonce = || "n".to_string();
        fs::write(dir.path().join("a"), b"old").unwrap();
        let mut names = |attempt: u32| if attempt == 0 { "a".into() } else { "b".into() };
        let path = deliver_new(&staging, dir.path(), b"new", &mut names, &nonce, None).unwrap();
        assert_eq!(path, dir.path().join("b"));
        assert_eq!(fs::read(dir.path().join("a")).unwrap(), b"old");
        assert_eq!(fs::read(dir.path().join("b")).unwrap(), b"new");
        assert_eq!(
            fs::read_dir(&staging).unwrap().count(),
            0,
            "staging is cleaned"
        );
    }

    #[test]
    fn read_limited_refuses_large_and_symlinked_files() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        fs::write(&big, vec![b'x'; 11]).unwrap();
        assert!(matches!(
            read_limited(&big, 10),
            Err(ReadLimited::TooLarge(11))
        ));
        assert_eq!(read_limited(&big, 11).unwrap().len(), 11);
        #[cfg(unix)]
        {
            let link = dir.path().join("link");
            std::os::unix::fs::symlink(&big, &link).unwrap();
            assert!(matches!(
                read_limited(&link, 100),
                Err(ReadLimited::Symlink)
            ));
        }
    }

    #[cfg(unix)]
    #[test]
    fn state_is_never_read_from_a_fifo_or_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        // Each of these would block forever on a FIFO opened without O_NONBLOCK.
        assert!(matches!(
            read_limited(&fifo, 10),
            Err(ReadLimited::NotAFile)
        ));
        assert!(matches!(
            read_state(&fifo, 10),
            Err(Error::UnsafeState { .. })
        ));
        assert!(open_lock(&fifo).is_err());
        assert!(open_append(&fifo).is_err());
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert!(matches!(read_limited(&zero, 10), Err(ReadLimited::Symlink)));
        assert!(matches!(open_lock(&zero), Err(Error::Symlink { .. })));
        assert_eq!(read_state(&dir.path().join("missing"), 10).unwrap(), None);
    }

    #[cfg(unix)]
    #[test]
    fn state_dirs_are_private_and_checked() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        assert!(ensure_state_dir(&state).unwrap());
        let mode = fs::metadata(&state).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let me = dir_owner(dir.path());
        assert!(check_state_dir(&state, me).unwrap());
        assert!(!check_state_dir(&dir.path().join("none"), me).unwrap());
        assert!(check_state_dir(&state, me.map(|u| u + 1)).is_err());
        fs::set_permissions(&state, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(check_state_dir(&state, me).is_err());
    }

    #[test]
    fn ensure_dir_refuses_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        assert!(ensure_dir(&real).unwrap());
        assert!(!ensure_dir(&real).unwrap());
        #[cfg(unix)]
        {
            let link = dir.path().join("link");
            std::os::unix::fs::symlink(&real, &link).unwrap();
            assert!(matches!(ensure_dir(&link), Err(Error::Symlink { .. })));
        }
    }
}
