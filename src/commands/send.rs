//! `aea send` (SPEC §4), and the composing and delivery that `reply` shares.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use super::{Context, shift_time};
use crate::audit::{self, Event};
use crate::cli::{ContentArgs, SendArgs};
use crate::error::{Error, ExitCode, Result};
use crate::fsutil;
use crate::identity;
use crate::mailbox::Mailbox;
use crate::mailbox::OUTGOING_DIR;
use crate::message::{
    self, Body, Content, Message, MessageType, Metadata, PROTOCOL_VERSION, Party, Priority,
    check_subject, format_time,
};
use crate::route::{self, Route};
use crate::secrets;

pub fn run(args: &SendArgs, ctx: &Context) -> Result<ExitCode> {
    let sender = ctx.mailbox()?;
    let config = sender.config()?;
    let sender_id = config.require_id(sender.dir())?.to_string();
    let max = config.limits.recipients();
    // Only a trusted remote counts: an untrusted one is as if absent.
    let via_remote = ctx.trusted(&sender, &config).sync_remote.is_some();
    if args.to.len() > max {
        return Err(Error::usage(
            format!(
                "{} recipients given; a broadcast reaches at most {max}",
                args.to.len()
            ),
            "split the recipients over several sends, or raise limits.max_recipients",
        ));
    }
    let draft = Draft::new(
        &args.content,
        ctx,
        sender.repo(),
        args.message_type,
        args.subject.clone(),
    )?
    .threaded(args.reply_to.clone(), args.conversation.clone());
    let recipients = args
        .to
        .iter()
        .map(|target| {
            (
                target.clone(),
                route::resolve(target, &ctx.cwd, sender.repo(), ctx.registry(), via_remote),
            )
        })
        .collect();
    deliver(&draft, &sender, &sender_id, recipients, ctx)
}

/// A message being composed, before it is addressed.
pub(super) struct Draft {
    message_type: MessageType,
    priority: Priority,
    requires_response: bool,
    subject: String,
    body: String,
    context: Value,
    tags: Vec<String>,
    expires_at: Option<String>,
    attachments: Vec<Value>,
    reply_to: Option<String>,
    conversation: Option<String>,
}

impl Draft {
    /// Checks and gathers what `ContentArgs` says; nothing is written yet.
    pub(super) fn new(
        content: &ContentArgs,
        ctx: &Context,
        repo: &Path,
        message_type: MessageType,
        subject: String,
    ) -> Result<Self> {
        check_subject(&subject).map_err(|reason| {
            Error::usage(
                format!("invalid --subject: {reason}"),
                "give a one-line subject of at most 200 characters",
            )
        })?;
        let body = read_body(content, ctx)?;
        let context = match &content.context {
            None => Value::Object(serde_json::Map::new()),
            Some(text) => match serde_json::from_str::<Value>(text) {
                Ok(v @ Value::Object(_)) => v,
                Ok(_) => {
                    return Err(Error::usage(
                        "--context must be a JSON object",
                        r#"for example --context '{"ticket": "API-12"}'"#,
                    ));
                }
                Err(e) => {
                    return Err(Error::usage(
                        format!("--context is not valid JSON: {e}"),
                        r#"quote it for the shell, e.g. --context '{"ticket": "API-12"}'"#,
                    ));
                }
            },
        };
        let expires_at = content
            .expires
            .as_deref()
            .map(|e| parse_expiry(e, ctx.rt.now()).map(format_time))
            .transpose()?;
        let attachments = content
            .attach
            .iter()
            .map(|p| attachment(&ctx.cwd.join(p), repo))
            .collect::<Result<Vec<_>>>()?;
        for tag in &content.tags {
            if tag.trim().is_empty() || tag.chars().any(char::is_control) {
                return Err(Error::usage(
                    format!("invalid --tag {tag:?}"),
                    "tags are short words without control characters",
                ));
            }
        }
        if !content.allow_secrets {
            // Every string the message will carry: subject, body, tags, and
            // each key and string of context and attachments.
            let found = [subject.as_str(), body.as_str()]
                .into_iter()
                .chain(content.tags.iter().map(String::as_str))
                .find_map(secrets::find)
                .or_else(|| secrets::find_in_value(&context))
                .or_else(|| attachments.iter().find_map(secrets::find_in_value));
            if let Some(kind) = found {
                return Err(Error::SecretDetected { kind });
            }
        }
        Ok(Draft {
            message_type,
            priority: content.priority.unwrap_or(Priority::Normal),
            requires_response: content.requires_response,
            subject,
            body,
            context,
            tags: content.tags.clone(),
            expires_at,
            attachments,
            reply_to: None,
            conversation: None,
        })
    }

    pub(super) fn threaded(
        mut self,
        reply_to: Option<String>,
        conversation: Option<String>,
    ) -> Self {
        self.reply_to = reply_to;
        self.conversation = conversation;
        self
    }

    fn message(&self, id: &str, now: DateTime<Utc>, from: &Party, to: &Route) -> Message {
        let to = match to {
            Route::Local(r) => Party {
                agent_id: r.id.clone(),
                repo_path: Some(r.mailbox.repo().display().to_string()),
                user: None,
            },
            Route::Remote(id) => Party {
                agent_id: id.clone(),
                repo_path: None,
                user: None,
            },
        };
        Message {
            protocol_version: PROTOCOL_VERSION.into(),
            message_id: id.to_string(),
            message_type: self.message_type,
            timestamp: format_time(now),
            priority: self.priority,
            requires_response: self.requires_response,
            from: from.clone(),
            to,
            message: Content {
                subject: self.subject.clone(),
                body: Body::Text(self.body.clone()),
                context: self.context.clone(),
                attachments: self.attachments.clone(),
            },
            metadata: Metadata {
                conversation_id: Some(self.conversation.clone().unwrap_or_else(|| id.to_string())),
                reply_to: self.reply_to.clone(),
                tags: self.tags.clone(),
                broadcast: None,
                refs: None,
            },
            expires_at: self.expires_at.clone(),
            signature: None,
            digest: None,
        }
    }
}

fn read_body(content: &ContentArgs, ctx: &Context) -> Result<String> {
    if let Some(body) = &content.body {
        return Ok(body.clone());
    }
    let Some(file) = &content.body_file else {
        return Ok(String::new());
    };
    let limit = message::MAX_MESSAGE_BYTES;
    let mut bytes = Vec::new();
    if file.as_os_str() == "-" {
        std::io::stdin()
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("read", "standard input", e))?;
    } else {
        let path = ctx.cwd.join(file);
        fs::File::open(&path)
            .and_then(|f| f.take(limit + 1).read_to_end(&mut bytes))
            .map_err(|e| Error::io("read", &path, e))?;
    }
    if bytes.len() as u64 > limit {
        return Err(Error::usage(
            format!("the body is over the {limit} byte message limit"),
            "attach large files with --attach instead of inlining them",
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        Error::usage(
            "the body is not UTF-8 text",
            "attach binary files with --attach instead",
        )
    })
}

fn parse_expiry(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
    if let Some(at) = shift_time(now, text, "--expires", true)? {
        return Ok(at);
    }
    message::parse_time(text).ok_or_else(|| {
        Error::usage(
            format!("--expires {text:?} is neither a duration nor an RFC 3339 time"),
            "use e.g. `--expires 2h`, `--expires 7d` or `--expires 2026-12-01T09:00:00Z`",
        )
    })
}

/// `{path, sha256}` of a file inside the sender's repository.
fn attachment(path: &Path, repo: &Path) -> Result<Value> {
    let real = fs::canonicalize(path).map_err(|e| Error::io("read attachment", path, e))?;
    let relative = real.strip_prefix(repo).map_err(|_| {
        Error::usage(
            format!("attachment {} is outside this repository", path.display()),
            "attach files of this repository only; the recipient reads them by path",
        )
    })?;
    let bytes = fs::read(&real).map_err(|e| Error::io("read attachment", &real, e))?;
    Ok(serde_json::json!({
        "path": relative.to_string_lossy().replace('\\', "/"),
        "sha256": fsutil::sha256_hex(&bytes),
    }))
}

#[derive(Debug, Serialize)]
struct Outcome {
    recipient: String,
    /// Written: into the recipient's inbox, or into `outgoing/` when queued.
    delivered: bool,
    /// Waiting in `outgoing/` for `aea sync`.
    queued: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// Delivers `draft` to every resolved recipient, keeps one `sent/` copy and
/// logs `sent` / `delivered`. One recipient's failure does not stop the
/// others; with a single recipient its error is returned as is.
pub(super) fn deliver(
    draft: &Draft,
    sender: &Mailbox,
    sender_id: &str,
    recipients: Vec<(String, Result<Route>)>,
    ctx: &Context,
) -> Result<ExitCode> {
    let single = recipients.len() == 1;
    // Every message is signed by the sender's key (SPEC §15.2); without one
    // nothing is sent, so no unsigned mail leaves under a signing agent's id.
    let key = ctx.signing_key(sender_id)?;
    let message_id = ctx.rt.uuid();
    let now = ctx.rt.now();
    let from = Party {
        agent_id: sender_id.to_string(),
        repo_path: Some(sender.repo().display().to_string()),
        user: Some(ctx.rt.user().to_string()),
    };
    let mut seen: Vec<String> = Vec::new();
    let mut resolved = Vec::new();
    for (target, route) in recipients {
        let checked = route.and_then(|r| {
            let (id, same_repo) = match &r {
                Route::Local(l) => (l.id.clone(), l.mailbox.repo() == sender.repo()),
                Route::Remote(id) => (id.clone(), false),
            };
            if id == sender_id || same_repo {
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
    let broadcast = seen;

    let mut outcomes = Vec::new();
    let mut first_sent: Option<Message> = None;
    for (target, route) in resolved {
        let result = route.and_then(|r| {
            let mut message = draft.message(&message_id, now, &from, &r);
            if broadcast.len() > 1 {
                message.metadata.broadcast = Some(broadcast.clone());
            }
            identity::sign(&mut message, &key);
            let outcome = match &r {
                Route::Local(local) => {
                    let path = local.mailbox.deliver(&message, &ctx.rt)?;
                    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
                    let logged = audit::append(
                        local.mailbox.dir(),
                        &Event::new(&ctx.rt, "delivered")
                            .with("message", message_id.as_str())
                            .with("file", name.unwrap_or_default())
                            .with("from", sender_id),
                    );
                    // The message is delivered either way. Where the inbox is
                    // shared with other OS users the recipient's log is not
                    // ours to write (SPEC §15.1); other failures are said.
                    match logged {
                        Err(Error::Io { source, .. })
                            if source.kind() == std::io::ErrorKind::PermissionDenied => {}
                        Err(e) => ctx.printer.warn(format_args!(
                            "delivered, but not logged in the recipient's agent.log: {e}"
                        )),
                        Ok(()) => {}
                    }
                    (local.id.clone(), path, false)
                }
                Route::Remote(id) => {
                    let path = sender.store_in(OUTGOING_DIR, &message, &ctx.rt)?;
                    audit::append(
                        sender.dir(),
                        &Event::new(&ctx.rt, "queued")
                            .with("message", message_id.as_str())
                            .with("to", id.as_str()),
                    )?;
                    (id.clone(), path, true)
                }
            };
            first_sent.get_or_insert(message);
            Ok(outcome)
        });
        match result {
            Ok((id, path, queued)) => outcomes.push(Outcome {
                recipient: target,
                delivered: true,
                queued,
                agent_id: Some(id),
                path: Some(path),
                error: None,
            }),
            Err(e) if single => return Err(e),
            Err(e) => outcomes.push(Outcome {
                recipient: target,
                delivered: false,
                queued: false,
                agent_id: None,
                path: None,
                error: Some(e.to_string()),
            }),
        }
    }

    let sent_copy = match &first_sent {
        Some(message) => {
            let copy = sender.store_sent(message, &ctx.rt)?;
            audit::append(
                sender.dir(),
                &Event::new(&ctx.rt, "sent")
                    .with("message", message_id.as_str())
                    .with("type", draft.message_type.as_str())
                    .with("priority", draft.priority.as_str())
                    .with("to", broadcast.clone()),
            )?;
            Some(copy)
        }
        None => None,
    };

    if ctx.printer.json() {
        ctx.printer.value(&serde_json::json!({
            "message_id": message_id,
            "results": outcomes,
            "sent_copy": sent_copy,
        }));
    } else {
        for outcome in &outcomes {
            match (&outcome.path, &outcome.error) {
                (Some(path), _) if outcome.queued => ctx.printer.line(format_args!(
                    "queued for {} (not on this machine; `aea sync` carries it): {}",
                    outcome.agent_id.as_deref().unwrap_or(&outcome.recipient),
                    path.display()
                )),
                (Some(path), _) => ctx.printer.line(format_args!(
                    "delivered to {}: {}",
                    outcome.agent_id.as_deref().unwrap_or(&outcome.recipient),
                    path.display()
                )),
                (None, Some(error)) => ctx
                    .printer
                    .line(format_args!("FAILED for {}: {error}", outcome.recipient)),
                (None, None) => {}
            }
        }
        ctx.printer.line(format_args!("message id {message_id}"));
    }
    let (delivered, failed): (Vec<&Outcome>, Vec<&Outcome>) =
        outcomes.iter().partition(|o| o.delivered);
    if failed.is_empty() {
        Ok(ExitCode::Success)
    } else {
        Err(Error::PartialDelivery {
            delivered: delivered.iter().map(|o| o.recipient.clone()).collect(),
            failed: failed.iter().map(|o| o.recipient.clone()).collect(),
        })
    }
}
