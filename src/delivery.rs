//! Delivering a [`Draft`] (SPEC §4): one signed message per recipient,
//! written atomically into a local inbox or queued in `outgoing/` for `aea
//! sync`, one `sent/` copy, and the `sent` / `delivered` / `queued` log
//! events. Printing the result is the command's business.

use std::path::PathBuf;

use ed25519_dalek::SigningKey;
use serde::Serialize;

use crate::audit::{AuditEvent, Event};
use crate::compose::Draft;
use crate::error::{Error, Result};
use crate::identity;
use crate::mailbox::{Mailbox, OUTGOING_DIR};
use crate::message::{Message, Party};
use crate::route::Route;
use crate::runtime::Runtime;

/// The sending side: its mailbox, id and signing key.
pub struct Sender<'a> {
    pub mailbox: &'a Mailbox,
    pub id: &'a str,
    pub key: &'a SigningKey,
}

/// What happened for one recipient.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Outcome {
    /// The recipient as given (`--to`).
    pub recipient: String,
    /// Written: into the recipient's inbox, or into `outgoing/` when queued.
    pub delivered: bool,
    /// Waiting in `outgoing/` for `aea sync`.
    pub queued: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The result of one send, per recipient.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Delivery {
    pub message_id: String,
    pub results: Vec<Outcome>,
    pub sent_copy: Option<PathBuf>,
    /// Said on stderr by the caller: delivered, but something around it
    /// (the recipient's log) did not work.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

impl Delivery {
    /// `Err(PartialDelivery)` when any recipient failed.
    pub fn complete(&self) -> Result<()> {
        let (delivered, failed): (Vec<&Outcome>, Vec<&Outcome>) =
            self.results.iter().partition(|o| o.delivered);
        if failed.is_empty() {
            return Ok(());
        }
        Err(Error::PartialDelivery {
            delivered: delivered.iter().map(|o| o.recipient.clone()).collect(),
            failed: failed.iter().map(|o| o.recipient.clone()).collect(),
        })
    }
}

/// Delivers `draft` to every resolved recipient (given as `--to` text and
/// its route), keeps one `sent/` copy and logs. One recipient's failure does
/// not stop the others; with a single recipient its error is returned as is.
pub fn deliver(
    draft: &Draft,
    sender: &Sender<'_>,
    recipients: Vec<(String, Result<Route>)>,
    rt: &Runtime,
) -> Result<Delivery> {
    deliver_as(draft, sender, recipients, rt, None)
}

/// What `send --idempotency-key` records before anything is delivered.
#[derive(Debug, Serialize, serde::Deserialize)]
struct KeyRecord {
    message_id: String,
    /// Digest of what the message says and whom it goes to: the same key
    /// with another message is refused, not silently merged.
    draft: String,
    at: String,
}

/// Delivers `draft` at most once per `key` (`send --idempotency-key`): the
/// first call records the key with the message id before delivering; a
/// retry (the caller saw no answer, or the first was killed mid-way) reuses
/// that id, delivers only to recipients that do not hold it yet, and keeps
/// the `sent/` copy once.
pub fn deliver_once(
    draft: &Draft,
    sender: &Sender<'_>,
    recipients: Vec<(String, Result<Route>)>,
    rt: &Runtime,
    key: &str,
) -> Result<Delivery> {
    let digest = crate::fsutil::sha256_hex(key.as_bytes())[..32].to_string();
    let mut targets: Vec<&str> = recipients.iter().map(|(t, _)| t.as_str()).collect();
    targets.sort_unstable();
    let what = serde_json::json!([
        draft.message_type.as_str(),
        draft.priority.as_str(),
        draft.subject,
        draft.body,
        draft.context,
        draft.tags,
        draft.attachments,
        draft.reply_to,
        targets,
    ]);
    let draft_digest = crate::fsutil::sha256_hex(what.to_string().as_bytes());
    let record = KeyRecord {
        message_id: rt.uuid(),
        draft: draft_digest.clone(),
        at: crate::message::format_time(rt.now()),
    };
    let bytes = serde_json::to_vec(&record).expect("a key record always serialises");
    if sender.mailbox.record_send_key(&digest, &bytes)? {
        return deliver_as(draft, sender, recipients, rt, Some(record.message_id));
    }
    let earlier: KeyRecord = sender
        .mailbox
        .send_key(&digest)?
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(|| {
            Error::usage(
                format!("the record of --idempotency-key {key:?} does not read"),
                "use another key, or remove the record from .aea/.sent-keys/",
            )
        })?;
    if earlier.draft != draft_digest {
        return Err(Error::usage(
            format!(
                "--idempotency-key {key:?} was used for another message ({})",
                earlier.message_id
            ),
            "a key names one message: use a new key for a new message",
        ));
    }
    deliver_as(draft, sender, recipients, rt, Some(earlier.message_id))
}

fn deliver_as(
    draft: &Draft,
    sender: &Sender<'_>,
    recipients: Vec<(String, Result<Route>)>,
    rt: &Runtime,
    id: Option<String>,
) -> Result<Delivery> {
    let single = recipients.len() == 1;
    let (broadcast, resolved) = distinct_recipients(sender, recipients);
    let retry = id.is_some();
    let mut delivery = Delivery {
        message_id: id.unwrap_or_else(|| rt.uuid()),
        results: Vec::new(),
        sent_copy: None,
        warnings: Vec::new(),
    };
    let now = rt.now();
    let from = Party {
        agent_id: sender.id.to_string(),
        repo_path: Some(sender.mailbox.repo().display().to_string()),
        user: Some(rt.user().to_string()),
    };
    let mut first_sent: Option<Message> = None;
    for (target, route) in resolved {
        let result = route.and_then(|r| {
            let mut message = draft.message(&delivery.message_id, now, &from, &r);
            if broadcast.len() > 1 {
                message.metadata.broadcast = Some(broadcast.clone());
            }
            identity::sign(&mut message, sender.key);
            // A retry under the same key: a recipient that holds the id
            // already got it.
            if retry
                && let Route::Local(local) = &r
                && let Ok(held) = local.mailbox.resolve(&message.message_id)
                && held
                    .valid()
                    .is_some_and(|m| m.message_id == message.message_id)
            {
                first_sent.get_or_insert(message);
                return Ok((local.id.clone(), held.path, false));
            }
            let written = write_one(&message, &r, sender, rt, &mut delivery.warnings)?;
            first_sent.get_or_insert(message);
            Ok(written)
        });
        delivery.results.push(match result {
            Ok((id, path, queued)) => Outcome {
                recipient: target,
                delivered: true,
                queued,
                agent_id: Some(id),
                path: Some(path),
                error: None,
            },
            Err(e) if single => return Err(e),
            Err(e) => Outcome {
                recipient: target,
                delivered: false,
                queued: false,
                agent_id: None,
                path: None,
                error: Some(crate::error::one_line(&e)),
            },
        });
    }
    // Once anything was delivered, a failure to keep the copy or the log
    // line is a warning, not an error: a caller that retried on an error
    // would send the same message twice.
    let copied = retry
        && sender
            .mailbox
            .resolve_sent(&delivery.message_id)
            .is_ok_and(|e| {
                e.valid()
                    .is_some_and(|m| m.message_id == delivery.message_id)
            });
    if let Some(message) = first_sent.as_ref().filter(|_| !copied) {
        match keep_sent_copy(message, draft, &broadcast, sender, rt) {
            Ok(copy) => delivery.sent_copy = Some(copy),
            Err(e) => delivery.warnings.push(format!(
                "delivered, but the sent/ copy or its log line was not kept: {}",
                crate::error::one_line(&e)
            )),
        }
    }
    Ok(delivery)
}

/// Each recipient once, by agent id, and never the sender itself. Returns
/// the ids (the broadcast list) and each `--to` with its checked route.
fn distinct_recipients(
    sender: &Sender<'_>,
    recipients: Vec<(String, Result<Route>)>,
) -> (Vec<String>, Vec<(String, Result<Route>)>) {
    let mut seen: Vec<String> = Vec::new();
    let mut resolved = Vec::new();
    for (target, route) in recipients {
        let checked = route.and_then(|r| {
            let (id, same_repo) = match &r {
                Route::Local(l) => (l.id.clone(), l.mailbox.repo() == sender.mailbox.repo()),
                Route::Remote(id) => (id.clone(), false),
            };
            if id == sender.id || same_repo {
                Err(Error::SendToSelf { id })
            } else {
                Ok((id, r))
            }
        });
        match checked {
            Ok((id, _)) if seen.contains(&id) => {}
            Ok((id, r)) => {
                seen.push(id);
                resolved.push((target, Ok(r)));
            }
            Err(e) => resolved.push((target, Err(e))),
        }
    }
    (seen, resolved)
}

/// Writes `message` for one recipient: into its inbox (and its log), or
/// into our `outgoing/` queue. Returns (agent id, path, queued).
fn write_one(
    message: &Message,
    route: &Route,
    sender: &Sender<'_>,
    rt: &Runtime,
    warnings: &mut Vec<String>,
) -> Result<(String, PathBuf, bool)> {
    match route {
        Route::Local(local) => {
            let path = local.mailbox.deliver(message, rt)?;
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            let logged = local.mailbox.log(
                &Event::new(rt, AuditEvent::Delivered)
                    .with("message", message.message_id.as_str())
                    .with("file", name.unwrap_or_default())
                    .with("from", sender.id),
            );
            // The message is delivered either way. Where the inbox is shared
            // with other OS users the recipient's log is not ours to write
            // (SPEC §15.1); other failures are said.
            match logged {
                Err(Error::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::PermissionDenied => {}
                Err(e) => warnings.push(format!(
                    "delivered, but not logged in the recipient's agent.log: {}",
                    crate::error::one_line(&e)
                )),
                Ok(()) => {}
            }
            Ok((local.id.clone(), path, false))
        }
        Route::Remote(id) => {
            let path = sender.mailbox.store_in(OUTGOING_DIR, message, rt)?;
            if let Err(e) = sender.mailbox.log(
                &Event::new(rt, AuditEvent::Queued)
                    .with("message", message.message_id.as_str())
                    .with("to", id.as_str()),
            ) {
                warnings.push(format!(
                    "queued, but not logged: {}",
                    crate::error::one_line(&e)
                ));
            }
            Ok((id.clone(), path, true))
        }
    }
}

/// The one `sent/` copy of a send, and its `sent` log line.
fn keep_sent_copy(
    message: &Message,
    draft: &Draft,
    broadcast: &[String],
    sender: &Sender<'_>,
    rt: &Runtime,
) -> Result<PathBuf> {
    let copy = sender.mailbox.store_sent(message, rt)?;
    sender.mailbox.log(
        &Event::new(rt, AuditEvent::Sent)
            .with("message", message.message_id.as_str())
            .with("type", draft.message_type.as_str())
            .with("priority", draft.priority.as_str())
            .with("to", broadcast.to_vec()),
    )?;
    Ok(copy)
}
