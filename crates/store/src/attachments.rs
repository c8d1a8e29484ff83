//! Attachment content by address: the copy a sender keeps of each file it
//! attaches, in the private `attachments/<sha256>`, that `aea sync` carries next
//! to the mail (as `<sha256>.blob` on the recipient's mail ref) and the
//! receiver keeps in its own store once the content matches its name; and
//! finding an attachment's bytes for `aea attachment`, from that store or,
//! on the same machine, from the repository of a verified sender.
//!
//! Every name, path and byte here comes from someone else: a name is used
//! only when it is 64 lower-case hex digits, content only when its SHA-256
//! is that name, a path in a message only inside the sender's repository —
//! the folder the receiver's registry names for a sender it verified, never
//! the `from.repo_path` a message claims (with `"/"`, that would make every
//! file the receiver can read an attachment). A file that does not match
//! is never described by its own digest: that would tell a sender what any
//! file it names holds.

use std::path::{Component, Path};

use crate::error::{Error, Result};
use crate::fsutil::{self, ReadLimited};
use crate::message::Message;

/// The suffix of an attachment's file on a mail ref: `<sha256>.blob`.
pub const BLOB_SUFFIX: &str = ".blob";

/// The largest attachment aea copies, carries or writes out (8 MiB): big
/// enough for logs, patches and screenshots, small enough that a remote
/// full of them cannot fill a disk in a few syncs. Larger files are
/// shared another way (a commit, a link).
pub const LIMIT: u64 = 8 * 1024 * 1024;

/// Whether `name` is a SHA-256 as aea writes it: 64 lower-case hex digits.
pub fn is_digest(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Reads a file to attach, refusing one over [`LIMIT`] before reading it.
pub fn read_for_sending(path: &Path) -> Result<Vec<u8>> {
    fsutil::read_limited(path, LIMIT).map_err(|e| match e {
        ReadLimited::TooLarge(bytes) => Error::AttachmentRefused {
            message: format!(
                "attachment {} is {bytes} bytes, over the {LIMIT} byte attachment limit",
                path.display()
            ),
            hint: "commit the file and name the commit in the body, or attach a smaller excerpt"
                .into(),
        },
        other => other.into_error(path, LIMIT),
    })
}

/// Keeps `bytes` in the attachment store `store` (the private
/// `attachments/` folder, made by the caller) under their SHA-256, and
/// returns it. The file is staged and linked into place, so a reader never
/// sees it half written, and an existing file of that name is never
/// replaced.
pub fn keep(store: &Path, bytes: &[u8]) -> Result<String> {
    let digest = fsutil::sha256_hex(bytes);
    fsutil::create_exclusive_whole(&store.join(&digest), bytes)?;
    Ok(digest)
}

/// The content stored under `digest`, only if it is there, is a regular
/// file of at most [`LIMIT`] bytes and still hashes to `digest`.
pub fn load(store: &Path, digest: &str) -> Option<Vec<u8>> {
    if !is_digest(digest) {
        return None;
    }
    let bytes = fsutil::read_limited(&store.join(digest), LIMIT).ok()?;
    (fsutil::sha256_hex(&bytes) == digest).then_some(bytes)
}

/// Whether the store `store` has a file for `digest` (not read: [`load`]
/// verifies what it reads).
pub fn has(store: &Path, digest: &str) -> bool {
    is_digest(digest) && std::fs::symlink_metadata(store.join(digest)).is_ok_and(|m| m.is_file())
}

/// The SHA-256 a blob named `name` (a file name on a mail ref) holds, if
/// the name is `<sha256>.blob`, the content at most [`LIMIT`] bytes and
/// its SHA-256 the name; else why not.
pub fn verify_blob<'a>(name: &'a str, bytes: &[u8]) -> std::result::Result<&'a str, String> {
    let Some(digest) = name.strip_suffix(BLOB_SUFFIX).filter(|d| is_digest(d)) else {
        return Err("the name is not a SHA-256 (64 lower-case hex digits) and .blob".into());
    };
    if bytes.len() as u64 > LIMIT {
        return Err(format!(
            "{} bytes, over the {LIMIT} byte attachment limit",
            bytes.len()
        ));
    }
    let actual = fsutil::sha256_hex(bytes);
    if actual != digest {
        return Err(format!("the content's SHA-256 is {actual}, not its name"));
    }
    Ok(digest)
}

/// One attachment a message names: `path` and `sha256` as given, each
/// `None` when missing or not a string.
#[derive(Debug, Clone)]
pub struct Named {
    pub path: Option<String>,
    pub sha256: Option<String>,
}

/// The attachments `message` names, in order.
pub fn named(message: &Message) -> Vec<Named> {
    message
        .message
        .attachments
        .iter()
        .map(|a| {
            let text = |key: &str| a.get(key).and_then(|v| v.as_str()).map(str::to_string);
            Named {
                path: text("path"),
                sha256: text("sha256"),
            }
        })
        .collect()
}

/// The digests of the attachments `message` names that look like one.
pub fn digests(message: &Message) -> Vec<String> {
    named(message)
        .into_iter()
        .filter_map(|n| n.sha256.filter(|d| is_digest(d)))
        .collect()
}

/// Where the bytes of an attachment were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// This repository's private `attachments/`.
    Store,
    /// The verified sender's repository on this machine, where the
    /// registry says it is: the copy it kept when it sent, else the file.
    SenderRepository,
}

/// Whose repository an attachment may be read from besides the store:
/// the folder the receiver's registry gives for a sender it verified, or
/// why there is none (said to the user).
pub type SenderRepository<'a> = std::result::Result<&'a Path, &'a str>;

/// The verified bytes of `attachment`: from this repository's store
/// `store`, else from `sender_repo` (the sender's kept copy, then the
/// file). `Err` says why there are none.
pub fn fetch(
    store: Option<&Path>,
    sender_repo: SenderRepository<'_>,
    attachment: &Named,
) -> std::result::Result<(Vec<u8>, Source), String> {
    let Some(digest) = attachment.sha256.as_deref().filter(|d| is_digest(d)) else {
        return Err("the message gives no SHA-256 for it, so it cannot be verified".into());
    };
    if let Some(bytes) = store.and_then(|s| load(s, digest)) {
        return Ok((bytes, Source::Store));
    }
    let repo = sender_repo
        .map_err(|why| format!("not among the attachments `aea sync` brought here, and {why}"))?;
    // The copy the sender kept when it sent: named by the digest alone, so
    // the message's path plays no part.
    if let Some(bytes) = std::fs::canonicalize(repo).ok().and_then(|r| {
        let theirs = crate::layout::Layout::of(&r).private(crate::layout::Private::Attachments);
        load(&theirs, digest)
    }) {
        return Ok((bytes, Source::SenderRepository));
    }
    let Some(path) = attachment.path.as_deref() else {
        return Err("not among the attachments `aea sync` brought here or the copies its sender kept, and the message names no file".into());
    };
    let bytes = from_repository(repo, path)?;
    if fsutil::sha256_hex(&bytes) != digest {
        return Err("the file in the sender's repository does not match the SHA-256 the message gives: it changed since it was sent, or it is not the file that was sent".into());
    }
    Ok((bytes, Source::SenderRepository))
}

/// The bytes of `path` (relative, as a message gives it) inside `repo`:
/// absolute paths and `..` are refused, and so is anything that resolves,
/// through symlinks, outside `repo`.
fn from_repository(repo: &Path, path: &str) -> std::result::Result<Vec<u8>, String> {
    let relative = Path::new(path);
    if path.is_empty()
        || relative
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err("its path is not a plain path inside the sender's repository".into());
    }
    if !repo.is_absolute() {
        return Err("the sender's repository is not an absolute path".into());
    }
    let root = std::fs::canonicalize(repo)
        .map_err(|_| "the sender's repository is not on this machine".to_string())?;
    // One reason for a missing file and for a link out of the repository:
    // two would tell a sender which files exist outside it.
    let outside = || {
        "no such file in the sender's repository (missing, or a symbolic link out of it)"
            .to_string()
    };
    let real = std::fs::canonicalize(root.join(relative)).map_err(|_| outside())?;
    if !real.starts_with(&root) {
        return Err(outside());
    }
    fsutil::read_limited(&real, LIMIT).map_err(|e| match e {
        ReadLimited::TooLarge(n) => format!("{n} bytes, over the {LIMIT} byte attachment limit"),
        ReadLimited::NotAFile => "not a regular file".into(),
        ReadLimited::Symlink => "a symbolic link".into(),
        ReadLimited::Io(e) => format!("cannot be read: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lower_case_sha256_names_are_digests() {
        assert!(is_digest(&"a".repeat(64)));
        assert!(!is_digest(&"A".repeat(64)));
        assert!(!is_digest(&"a".repeat(63)));
        assert!(!is_digest("../../etc/passwd"));
    }

    #[test]
    fn a_blob_verifies_only_under_its_own_digest() {
        let digest = fsutil::sha256_hex(b"log");
        let name = format!("{digest}{BLOB_SUFFIX}");
        assert!(verify_blob(&name, b"not the log").is_err());
        assert!(verify_blob("../x.blob", b"log").is_err());
        assert!(verify_blob(&digest, b"log").is_err(), "no suffix");
        assert_eq!(verify_blob(&name, b"log"), Ok(digest.as_str()));
        let dir = tempfile::tempdir().unwrap();
        assert!(!has(dir.path(), &digest));
        assert_eq!(keep(dir.path(), b"log").unwrap(), digest);
        assert_eq!(keep(dir.path(), b"log").unwrap(), digest, "kept once");
        assert!(has(dir.path(), &digest));
        assert_eq!(load(dir.path(), &digest).as_deref(), Some(&b"log"[..]));
    }

    #[test]
    fn paths_outside_the_repository_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        std::fs::write(dir.path().join("secret"), b"s").unwrap();
        std::fs::write(repo.join("a"), b"a").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), repo.join("out")).unwrap();
        assert_eq!(from_repository(&repo, "a").unwrap(), b"a");
        for hostile in ["../secret", "/etc/passwd", "out", ""] {
            assert!(from_repository(&repo, hostile).is_err(), "{hostile}");
        }
    }
}
