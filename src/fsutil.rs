//! File-system primitives with the guarantees the protocol relies on:
//! never-overwriting atomic delivery, durable writes, refusal of symlinks,
//! and size-limited reads. Every error names its path.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
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
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(Error::Symlink {
            path: path.to_path_buf(),
        }),
        Ok(meta) if meta.is_dir() => Ok(false),
        Ok(_) => Err(Error::NotADirectory {
            path: path.to_path_buf(),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => match fs::create_dir(path) {
            Ok(()) => Ok(true),
            // Another process created it between our look and our create.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => ensure_dir(path),
            Err(e) => Err(Error::io("create directory", path, e)),
        },
        Err(e) => Err(Error::io("inspect", path, e)),
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
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io("sync directory", dir, e))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Writes `bytes` to a fresh file in `staging`, flushed to disk.
fn stage(staging: &Path, stem: &str, bytes: &[u8], nonce: &dyn Fn() -> String) -> Result<PathBuf> {
    loop {
        let tmp = staging.join(format!(".{stem}.{}.tmp", nonce()));
        let mut file = match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io("create", &tmp, e)),
        };
        let written = file.write_all(bytes).and_then(|()| file.sync_all());
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(Error::io("write", &tmp, e));
        }
        return Ok(tmp);
    }
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
) -> Result<PathBuf> {
    const ATTEMPTS: u32 = 64;
    let tmp = stage(staging, "deliver", bytes, nonce)?;
    let mut result = Err(Error::usage(
        format!("could not find a free file name in {}", dir.display()),
        "retry the command",
    ));
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
    let stem = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let counter = std::cell::Cell::new(0u32);
    let nonce = || {
        counter.set(counter.get() + 1);
        format!("{}-{}", std::process::id(), counter.get())
    };
    let tmp = stage(dir, &stem, bytes, &nonce)?;
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io("replace", path, e));
    }
    sync_dir(dir)
}

/// Creates `path` with `bytes` only if it does not exist yet. Returns false
/// when it already existed (nothing is written then).
pub fn create_exclusive(path: &Path, bytes: &[u8]) -> Result<bool> {
    let mut file = match OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(Error::io("create", path, e)),
    };
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| Error::io("write", path, e))?;
    Ok(true)
}

/// Opens (creating it if needed) the lock file at `path`, without taking
/// the lock.
pub fn open_lock(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| Error::io("open", path, e))
}

/// Holds an exclusive lock on `path` until the returned file is dropped,
/// waiting for other holders.
pub fn lock(path: &Path) -> Result<File> {
    let file = open_lock(path)?;
    file.lock().map_err(|e| Error::io("lock", path, e))?;
    Ok(file)
}

/// The SHA-256 of `bytes` as lower-case hex (attachments, sync digests).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

/// Why a file could not be read as a bounded regular file.
#[derive(Debug)]
pub enum ReadLimited {
    Symlink,
    NotAFile,
    TooLarge(u64),
    Io(io::Error),
}

/// Reads a regular file of at most `limit` bytes, refusing symlinks.
pub fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, ReadLimited> {
    let meta = fs::symlink_metadata(path).map_err(ReadLimited::Io)?;
    if meta.file_type().is_symlink() {
        return Err(ReadLimited::Symlink);
    }
    if !meta.is_file() {
        return Err(ReadLimited::NotAFile);
    }
    if meta.len() > limit {
        return Err(ReadLimited::TooLarge(meta.len()));
    }
    let file = File::open(path).map_err(ReadLimited::Io)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // The file may grow between the stat and the read: never take more than the limit.
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadLimited::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadLimited::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Reads a small text file aea owns, `None` when it does not exist.
pub fn read_optional(path: &Path) -> Result<Option<String>> {
    refuse_symlink(path)?;
    match fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("read", path, e)),
    }
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
        let path = deliver_new(&staging, dir.path(), b"new", &mut names, &nonce).unwrap();
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
