//! One-shot transfers between a foreign protocol's files and this
//! repository's mailbox: `aea import` (their files into our inbox) and
//! `aea export` (our messages into a folder as their files).
//!
//! Both only ever add files. An import reads the foreign files and never
//! moves or deletes them, so a file it refuses (a symlink, a FIFO, one too
//! large, bad YAML) stays where it was, and the reason is reported. It is
//! idempotent by message id: a message this inbox already holds (also
//! processed, or archived by `gc`) is not delivered again. An export never
//! replaces a file.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::audit::{AuditEvent, Event};
use crate::error::{Error, Result};
use crate::fsutil::{self, ReadLimited};
use crate::mailbox::{Held, Mailbox};
use crate::message::Message;
use crate::runtime::Runtime;
use crate::words::word_enum;

use crate::foreign::Protocol;

/// How a protocol's files are read and written: the half of [`Protocol`]
/// that needs the converters of `bridge` (the name itself lives below the
/// config, which names protocols too).
pub(crate) trait ProtocolFormat: Copy {
    /// Reads one of their files, named `name`, as a message.
    fn parse(self, text: &str, name: &str) -> Result<Message, String>;
    /// A message as their file's text.
    fn render(self, message: &Message) -> String;
    /// The name they give the file of `message`.
    fn file_name(self, message: &Message) -> String;
    /// The message's id as their file gave it (kept in the message's
    /// context when AEA could not use it as is).
    fn foreign_id(self, message: &Message) -> &str;
    /// Whether a file in a folder given to `import` is one of theirs.
    fn is_theirs(self, name: &str) -> bool;
}

impl ProtocolFormat for Protocol {
    fn parse(self, text: &str, name: &str) -> Result<Message, String> {
        match self {
            Protocol::Oacp => super::oacp::parse(text),
            Protocol::Roo => match super::roo::slug_of(name) {
                Some(slug) => super::roo::parse(text, slug),
                None => Err("is not named `to-<slug>.md`".into()),
            },
        }
    }

    fn render(self, message: &Message) -> String {
        match self {
            Protocol::Oacp => super::oacp::render(message),
            Protocol::Roo => super::roo::render(message),
        }
    }

    fn file_name(self, message: &Message) -> String {
        match self {
            Protocol::Oacp => super::oacp::file_name(message),
            Protocol::Roo => super::roo::file_name(message),
        }
    }

    fn foreign_id(self, message: &Message) -> &str {
        let key = match self {
            Protocol::Oacp => super::oacp::CONTEXT_KEY,
            Protocol::Roo => super::roo::CONTEXT_KEY,
        };
        message
            .message
            .context
            .get(key)
            .and_then(|kept| kept.get("id"))
            .and_then(serde_json::Value::as_str)
            .unwrap_or(&message.message_id)
    }

    #[allow(clippy::case_sensitive_file_extension_comparisons)]
    fn is_theirs(self, name: &str) -> bool {
        match self {
            Protocol::Oacp => {
                !name.starts_with('.') && (name.ends_with(".yaml") || name.ends_with(".yml"))
            }
            Protocol::Roo => super::roo::slug_of(name).is_some(),
        }
    }
}

word_enum! {
    pub enum Status {
        Imported = "imported",
        Held = "already-held",
        Refused = "refused",
    }
}

/// What became of one foreign file (for `aea bridge`, also of a folder
/// it could not read: `refused`, with the reason).
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Imported {
    pub source: PathBuf,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// SHA-256 of the bytes read, for `aea bridge`'s record.
    #[serde(skip)]
    pub sha256: Option<String>,
    /// The message's id as the file gave it.
    #[serde(skip)]
    pub foreign_id: Option<String>,
}

/// Imports foreign files (files, or folders of them, not descending) into
/// `mailbox`'s inbox. The message keeps the recipient the file named (a
/// signed AEA message readdressed would no longer verify); `check` shows
/// mail for another id as unverified, which it is.
pub fn import(
    mailbox: &Mailbox,
    protocol: Protocol,
    paths: &[PathBuf],
    rt: &Runtime,
) -> Result<Vec<Imported>> {
    let mut out = Vec::new();
    for path in paths {
        let meta = fs::symlink_metadata(path).map_err(|e| Error::io("read", path, e))?;
        if meta.is_dir() {
            let mut names: Vec<_> = fs::read_dir(path)
                .map_err(|e| Error::io("list", path, e))?
                .filter_map(std::result::Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| protocol.is_theirs(n))
                .collect();
            names.sort();
            for name in names {
                out.push(import_one(mailbox, protocol, &path.join(name), rt)?);
            }
        } else {
            out.push(import_one(mailbox, protocol, path, rt)?);
        }
    }
    Ok(out)
}

pub(crate) fn import_one(
    mailbox: &Mailbox,
    protocol: Protocol,
    path: &Path,
    rt: &Runtime,
) -> Result<Imported> {
    let refused = |reason: String| Imported {
        source: path.to_path_buf(),
        status: Status::Refused,
        message_id: None,
        path: None,
        reason: Some(reason),
        sha256: None,
        foreign_id: None,
    };
    let limit = mailbox.message_limit();
    let bytes = match fsutil::read_limited(path, limit) {
        Ok(bytes) => bytes,
        Err(ReadLimited::Symlink) => return Ok(refused("is a symbolic link; not read".into())),
        Err(ReadLimited::NotAFile) => {
            return Ok(refused(
                "is not a regular file (a FIFO, socket or device); not opened".into(),
            ));
        }
        Err(ReadLimited::TooLarge(n)) => {
            return Ok(refused(format!(
                "is {n} bytes, over the {limit} byte limit"
            )));
        }
        // Their file, not our state: one that cannot be read (no
        // permission, gone since it was listed) is reported and left, and
        // the files after it are still read.
        Err(ReadLimited::Io(e)) => return Ok(refused(format!("could not be read: {e}"))),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Ok(refused("is not UTF-8 text".into()));
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut message = match protocol.parse(&text, &name) {
        Ok(message) => message,
        Err(reason) => return Ok(refused(reason)),
    };
    let sha256 = Some(fsutil::sha256_hex(text.as_bytes()));
    let foreign_id = Some(protocol.foreign_id(&message).to_string());
    if let Some((held, _)) = mailbox.inbox().find_id(
        &message.message_id,
        Some(&message.from.agent_id),
        &[Held::Inbox, Held::Archive],
    ) {
        // Not imported again; but a file that now reads as another
        // message (one byte changed) is said to differ, not taken for the
        // mail held. Another sender's file under the same id is another
        // message (the inbox lists both): only this sender's is held.
        let differs = held.message.as_ref().map_or(true, |held| {
            let (mut held, mut read) = (held.clone(), message.clone());
            super::oacp::drop_source(&mut held);
            super::oacp::drop_source(&mut read);
            held != read
        });
        return Ok(Imported {
            source: path.to_path_buf(),
            status: Status::Held,
            message_id: Some(message.message_id),
            path: None,
            reason: differs.then(|| {
                "this inbox holds a message of this id already, and this file differs \
                 from it: not imported (`aea show` the one held)"
                    .to_string()
            }),
            sha256,
            foreign_id,
        });
    }
    // A file under the limit can make a message over it (JSON escapes
    // what YAML and Markdown hold raw): that file is refused like one too
    // large, not an error that ends the import and every bridge pass.
    let mut note = None;
    let delivered = loop {
        match mailbox.deliver(&message, rt) {
            // The copy of an OACP file kept for a byte-for-byte export
            // doubles what the message holds: a message that fits without
            // it is imported without it, and that is said.
            Err(Error::MessageTooLarge { .. })
                if protocol == Protocol::Oacp && super::oacp::drop_source(&mut message) =>
            {
                note = Some(
                    "imported without the copy of its file (the message would be over the \
                     size limit with it): exported again, it is written from its fields, and \
                     an OACP signature on it no longer verifies"
                        .to_string(),
                );
            }
            Err(Error::MessageTooLarge { bytes, limit, .. }) => {
                return Ok(refused(format!(
                    "makes a message of {bytes} bytes, over the {limit} byte limit"
                )));
            }
            delivered => break delivered?,
        }
    };
    // Delivered either way; a log that cannot be written is not a reason
    // to import again.
    let _ = mailbox.log(
        &Event::new(rt, AuditEvent::Imported)
            .with("message", message.message_id.as_str())
            .with("protocol", protocol.as_str())
            .with("source", path.display().to_string())
            .with("from", message.from.agent_id.as_str()),
    );
    Ok(Imported {
        source: path.to_path_buf(),
        status: Status::Imported,
        message_id: Some(message.message_id),
        path: Some(delivered),
        reason: note,
        sha256,
        foreign_id,
    })
}

/// What one export wrote.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Exported {
    pub message_id: String,
    pub path: PathBuf,
}

/// Writes `messages` into `dir` as `protocol` files, each under a new
/// name: an existing file is never replaced (a name taken gets `-2`, `-3`…).
pub fn export(protocol: Protocol, messages: &[Message], dir: &Path) -> Result<Vec<Exported>> {
    fsutil::require_real_dir(dir)?;
    messages
        .iter()
        .map(|message| {
            Ok(Exported {
                message_id: message.message_id.clone(),
                path: write(protocol, message, dir)?,
            })
        })
        .collect()
}

/// The files of OACP and Roo agents, as the store's delivery writes and
/// looks for them: [`deliver`] and [`holding`].
pub struct ProtocolFiles;

impl crate::delivery::ForeignFiles for ProtocolFiles {
    fn deliver(&self, protocol: Protocol, message: &Message, dir: &Path) -> Result<PathBuf> {
        deliver(protocol, message, dir)
    }

    fn holding(&self, protocol: Protocol, dir: &Path, id: &str) -> Option<(PathBuf, Message)> {
        holding(protocol, dir, id)
    }
}

/// `aea send` to an OACP or Roo agent: writes `message` into its folder
/// (`dir`, a real directory) as that protocol's file, atomically and never
/// replacing one. Roo's one file per recipient may be taken by a message
/// the agent has not processed yet: the send is then refused.
pub(crate) fn deliver(protocol: Protocol, message: &Message, dir: &Path) -> Result<PathBuf> {
    fsutil::require_real_dir(dir)?;
    write(protocol, message, dir)
}

/// Writes one message into `dir`; the same file written before (a retry)
/// counts as written.
fn write(protocol: Protocol, message: &Message, dir: &Path) -> Result<PathBuf> {
    let text = protocol.render(message);
    let name = protocol.file_name(message);
    let (stem, ext) = name.rsplit_once('.').unwrap_or((&name, ""));
    let tries = if protocol.one_file_per_recipient() {
        1
    } else {
        100
    };
    for n in 1..=tries {
        let candidate = if n == 1 {
            name.clone()
        } else {
            format!("{stem}-{n}.{ext}")
        };
        let path = dir.join(&candidate);
        // Written before, unchanged: nothing to write, nothing doubled.
        if fsutil::read_limited(&path, text.len() as u64).is_ok_and(|b| b == text.as_bytes()) {
            return Ok(path);
        }
        if fsutil::create_exclusive_whole(&path, text.as_bytes())? {
            return Ok(path);
        }
    }
    if protocol.one_file_per_recipient() {
        return Err(Error::MailboxSlotTaken {
            path: dir.join(&name),
        });
    }
    Err(Error::UnsafeState {
        path: dir.join(&name),
        detail: "100 files of that name exist already; nothing replaced".into(),
    })
}

/// The file in `dir` (an OACP inbox or a Roo mailbox) that holds message
/// `id`, read as the protocol's reader would; for a retried send.
pub(crate) fn holding(protocol: Protocol, dir: &Path, id: &str) -> Option<(PathBuf, Message)> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .ok()?
        .filter_map(std::result::Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| protocol.is_theirs(n))
        .collect();
    names.sort();
    names.into_iter().find_map(|name| {
        let path = dir.join(&name);
        let bytes = fsutil::read_limited(&path, *crate::config::MESSAGE_BYTES_RANGE.end()).ok()?;
        let message = protocol
            .parse(std::str::from_utf8(&bytes).ok()?, &name)
            .ok()?;
        // Read back as a message file is, so that its signature is checked.
        let json = serde_json::to_vec(&message).expect("a message always serialises");
        let message = crate::message::parse(&json, None).ok()?;
        (message.message_id == id).then_some((path, message))
    })
}
