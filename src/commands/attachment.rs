//! `aea attachment`: list a message's attachments, or write one to a new
//! file once its content matches the SHA-256 the message gives. The
//! content never goes to the terminal, and the file name is the user's,
//! never the message's path. Content comes from the private attachment
//! store or, for a sender verified by its pinned key, from the folder the
//! registry gives for it: never from the `from.repo_path` a message claims.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::context::Context;
use crate::attachments::{self, Named, Source};
use crate::cli::AttachmentArgs;
use crate::error::{Error, ExitCode, Result};
use crate::fsutil;
use crate::keyring::Verification;
use crate::mailbox::Held;
use crate::printer::untrusted_short;

/// `aea attachment REF --json` without `--out`: what the message attaches.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct ListOutput<'a> {
    /// aea's short reference, unique in this inbox.
    #[serde(rename = "ref")]
    pub short_ref: String,
    pub message_id: &'a str,
    pub attachments: Vec<Listed>,
}

/// One attachment, as the message names it and as found here.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct Listed {
    /// 1-based, as `aea attachment REF N` takes it.
    pub index: usize,
    /// As the message gives it (the sender's word: never used as a name here).
    pub path: Option<String>,
    pub sha256: Option<String>,
    /// Bytes, when the content was found and matches.
    pub size: Option<u64>,
    /// Whether `--out` can write it: found, and it matches its SHA-256.
    pub available: bool,
    /// Where it was found.
    pub source: Option<Source>,
    /// Why it is not available.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `aea attachment REF N --out PATH --json`: what was written.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct WriteOutput<'a> {
    pub index: usize,
    pub sha256: &'a str,
    pub size: u64,
    pub source: Source,
    pub written: &'a Path,
}

pub fn run(args: &AttachmentArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let entry = mailbox.inbox().find(&args.reference, &[Held::Inbox])?.0;
    let message = entry.require_valid()?;
    let short_ref = mailbox.inbox().short_ref(&entry);
    let named = attachments::named(&message);
    let judge = ctx.judge(&mailbox);
    let registered = judge.registered_path(&message.from.agent_id);
    let sender_repo = match (judge.verify(&message), registered.as_deref()) {
        (Verification::Verified, Some(path)) => Ok(path),
        (Verification::Verified, None) => {
            Err("the registry names no folder on this machine for its sender")
        }
        (Verification::Unverified { .. } | Verification::Forged { .. }, _) => Err(
            "its sender is not verified (unsigned, or no key is pinned for it), so no file of the sender's is read",
        ),
    };
    let store = mailbox.private_dir(crate::layout::Private::Attachments)?;
    let Some(out) = &args.out else {
        let listed = list(&named, store.as_deref(), sender_repo, &short_ref);
        print_list(
            &ListOutput {
                short_ref,
                message_id: &message.message_id,
                attachments: listed,
            },
            ctx,
        );
        return Ok(ExitCode::Success);
    };
    let index = match (args.index, named.len()) {
        (_, 0) => {
            return Err(refused(
                format!("message {short_ref} has no attachments"),
                "`aea show REF` shows the message",
            ));
        }
        (Some(n), len) if n == 0 || n > len => {
            return Err(Error::usage(
                format!("message {short_ref} has {len} attachment(s); there is no {n}"),
                format!("`aea attachment {short_ref}` lists them, numbered from 1"),
            ));
        }
        (Some(n), _) => n,
        (None, 1) => 1,
        (None, len) => {
            return Err(Error::usage(
                format!("message {short_ref} has {len} attachments; say which one"),
                format!(
                    "`aea attachment {short_ref}` lists them; then `aea attachment {short_ref} N --out PATH`"
                ),
            ));
        }
    };
    let attachment = &named[index - 1];
    let (bytes, source) =
        attachments::fetch(store.as_deref(), sender_repo, attachment).map_err(|why| {
            refused(
                format!("attachment {index} of {short_ref}: {why}"),
                "nothing was written; `aea sync` brings the content of mail from other machines; on this machine, a sender's files are read once its key is pinned (`aea agents trust ID --key KEY`); or ask the sender to send the file again",
            )
        })?;
    let target = ctx.cwd.join(out);
    write_new(&target, &bytes)?;
    let digest = fsutil::sha256_hex(&bytes);
    if ctx.printer.json() {
        ctx.printer.value(&WriteOutput {
            index,
            sha256: &digest,
            size: bytes.len() as u64,
            source,
            written: &target,
        });
    } else {
        ctx.printer.line(format_args!(
            "wrote attachment {index} ({} bytes, sha256 {digest} verified, from {}) to {}",
            bytes.len(),
            source_words(source),
            target.display()
        ));
    }
    Ok(ExitCode::Success)
}

fn refused(message: String, hint: &str) -> Error {
    Error::AttachmentRefused {
        message,
        hint: hint.to_string(),
    }
}

/// How many different attachments a listing looks for (each is read and
/// hashed, up to 8 MiB): a message can name thousands, so the rest are
/// listed unchecked, each still written by `aea attachment REF N --out`.
const LOOKED_FOR: usize = 32;

fn list(
    named: &[Named],
    store: Option<&Path>,
    sender_repo: attachments::SenderRepository<'_>,
    short_ref: &str,
) -> Vec<Listed> {
    // The same path and SHA-256 named twice is looked for once.
    type Found = std::result::Result<(u64, Source), String>;
    let mut seen: HashMap<(Option<&str>, Option<&str>), Found> = HashMap::new();
    named
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let key = (a.path.as_deref(), a.sha256.as_deref());
            let found = if let Some(found) = seen.get(&key) {
                found.clone()
            } else if seen.len() < LOOKED_FOR {
                let found = attachments::fetch(store, sender_repo, a)
                    .map(|(bytes, source)| (bytes.len() as u64, source));
                seen.insert(key, found.clone());
                found
            } else {
                Err(format!(
                    "not looked for: a listing looks for the first {LOOKED_FOR} different attachments; `aea attachment {short_ref} {} --out PATH` looks for this one",
                    i + 1
                ))
            };
            Listed {
                index: i + 1,
                path: a.path.clone(),
                sha256: a.sha256.clone(),
                size: found.as_ref().ok().map(|(size, _)| *size),
                available: found.is_ok(),
                source: found.as_ref().ok().map(|(_, s)| *s),
                reason: found.err(),
            }
        })
        .collect()
}

fn source_words(source: Source) -> &'static str {
    match source {
        Source::Store => "the attachment store",
        Source::SenderRepository => "the sender's repository",
    }
}

fn print_list(list: &ListOutput<'_>, ctx: &Context) {
    if ctx.printer.json() {
        ctx.printer.value(list);
        return;
    }
    let p = &ctx.printer;
    if list.attachments.is_empty() {
        p.line(format_args!(
            "message {} has no attachments",
            list.short_ref
        ));
        return;
    }
    for a in &list.attachments {
        let path = a
            .path
            .as_deref()
            .map_or_else(|| "(no path)".to_string(), |t| untrusted_short(t, 200));
        let digest = a
            .sha256
            .as_deref()
            .map_or_else(|| "(none)".to_string(), |t| untrusted_short(t, 80));
        let state = match (a.size, a.source) {
            (Some(size), Some(source)) => {
                format!("{size} bytes, available (from {})", source_words(source))
            }
            _ => match a.reason.as_deref() {
                Some(unchecked) if unchecked.starts_with("not looked for") => unchecked.to_string(),
                reason => format!("not available: {}", reason.unwrap_or("not found")),
            },
        };
        p.line(format_args!(
            "{}  {path}  sha256 {digest}  {state}",
            a.index
        ));
    }
    p.line(format_args!(
        "write one with `aea attachment {} N --out PATH`",
        list.short_ref
    ));
}

/// Writes `bytes` to `path`, a new file in a folder that exists: an
/// existing file (or symlink) there is never replaced.
fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if path.file_name().is_none() || !parent.is_dir() {
        return Err(Error::usage(
            format!("--out {}: not a file in an existing folder", path.display()),
            "name a new file in a folder that exists; aea creates no folders",
        ));
    }
    if !fsutil::create_exclusive(path, bytes)? {
        return Err(refused(
            format!("{} exists; not overwritten", path.display()),
            "name a new file with --out, or move the existing one away first",
        ));
    }
    Ok(())
}
