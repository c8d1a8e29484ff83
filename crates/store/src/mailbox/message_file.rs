//! Reading one message file: a regular file within the size limit, its
//! parse, digest, bytes and owner; and listing the message files of a
//! folder.

use std::fs;
use std::io;
use std::path::Path;

use crate::error::{Error, Result};
use crate::fsutil::{self, ReadLimited};
use crate::message::{self, Message};

/// Names of the message files directly in `dir` (the processed store, a
/// copy of an inbox), unsorted.
pub fn message_names_in(dir: &Path) -> Result<Vec<String>> {
    names_of_messages(dir)
}

/// Names of the message files directly in `dir`, unsorted.
pub(super) fn names_of_messages(dir: &Path) -> Result<Vec<String>> {
    let entries = fs::read_dir(dir).map_err(|e| Error::io("list", dir, e))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("list", dir, e))?;
        if let Some(name) = entry.file_name().to_str()
            && message::is_message_file_name(name)
        {
            names.push(name.to_string());
        }
    }
    Ok(names)
}

/// Reads and validates one message file: a regular file (never a symlink)
/// within the size limit that parses as a valid message. The error is the
/// one-line reason `check` and `validate` show.
pub fn read_message_file(path: &Path, name: &str, limit: u64) -> Result<Message, String> {
    read_and_hash(path, name, limit).message
}

/// [`read_message_file`], plus the SHA-256 of the bytes read.
pub(super) fn read_and_hash(path: &Path, name: &str, limit: u64) -> Read {
    try_read(path, name, limit).unwrap_or_else(|e| Read::failed(format!("cannot be read: {e}")))
}

/// [`read_and_hash`], `None` when the file does not exist (any more).
pub(super) fn read_if_present(path: &Path, name: &str, limit: u64) -> Option<Read> {
    match try_read(path, name, limit) {
        Ok(read) => Some(read),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => Some(Read::failed(format!("cannot be read: {e}"))),
    }
}

/// A message file as read: its parse (or the reason it is invalid), and
/// where it could be read as a regular file, its bytes, their digest and
/// the file's owner.
pub(super) struct Read {
    pub(super) message: Result<Message, String>,
    pub(super) sha256: Option<String>,
    pub(super) bytes: Option<Vec<u8>>,
    pub(super) owner: Option<u32>,
}

impl Read {
    pub(super) fn failed(reason: String) -> Read {
        Read {
            message: Err(reason),
            sha256: None,
            bytes: None,
            owner: None,
        }
    }
}

/// The file at `path` read as a message; an I/O error when it could not
/// be opened or read.
fn try_read(path: &Path, name: &str, limit: u64) -> io::Result<Read> {
    Ok(match fsutil::read_limited_owned(path, limit) {
        Ok((bytes, owner)) => Read {
            message: message::parse(&bytes, Some(name)),
            sha256: Some(fsutil::sha256_hex(&bytes)),
            bytes: Some(bytes),
            owner,
        },
        Err(ReadLimited::Symlink) => Read::failed("is a symbolic link; not read".into()),
        Err(ReadLimited::NotAFile) => Read::failed(NOT_A_FILE.into()),
        Err(ReadLimited::TooLarge(n)) => {
            Read::failed(format!("is {n} bytes, over the {limit} byte limit"))
        }
        Err(ReadLimited::Io(e)) => return Err(e),
    })
}

/// Why a folder, FIFO or socket named like a message is not one.
pub const NOT_A_FILE: &str = "is not a regular file";
