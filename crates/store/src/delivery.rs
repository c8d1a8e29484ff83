//! Delivering a [`Draft`] (SPEC §4): one signed message per recipient,
//! written atomically into a local inbox or queued in `outgoing/` for `aea
//! sync`, one `sent/` copy, and the `sent` / `delivered` / `queued` log
//! events. Printing the result is the command's business.

use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};

use crate::audit::{AuditEvent, Event};
use crate::compose::Draft;
use crate::error::{Error, Result};
use crate::foreign::Protocol;
use crate::identity;
use crate::layout::Private;
use crate::liveness::{Alive, Holder};
use crate::mailbox::Mailbox;
use crate::message::{Message, Party};
use crate::route::Route;
use crate::runtime::Runtime;
use chrono::{DateTime, Utc};

/// The sending side: its mailbox, id and signing key.
pub struct Sender<'a> {
    pub mailbox: &'a Mailbox,
    pub id: &'a str,
    pub key: &'a SigningKey,
}

impl Sender<'_> {
    /// The `from` of its mail: id, repository, OS user, and whether this
    /// repository also sends unsigned mail.
    fn party(&self, rt: &Runtime, also_unsigned: bool) -> Party {
        Party {
            agent_id: self.id.to_string(),
            repo_path: Some(self.mailbox.repo().display().to_string()),
            user: Some(rt.user().to_string()),
            also_unsigned,
        }
    }
}

/// The files of a foreign protocol (OACP, Roo), which the bridge reads and
/// writes: a send to such an agent writes its file through it, and whether
/// that agent's folder holds a message already (a retried send, `aea
/// doctor`) is asked of it. The caller hands in the bridge's.
pub trait ForeignFiles {
    /// `aea send` to an OACP or Roo agent: writes `message` into its folder
    /// `dir` as `protocol`'s file, never replacing one.
    fn deliver(&self, protocol: Protocol, message: &Message, dir: &Path) -> Result<PathBuf>;

    /// The file in `dir` that holds message `id`, read as `protocol`'s
    /// reader would.
    fn holding(&self, protocol: Protocol, dir: &Path, id: &str) -> Option<(PathBuf, Message)>;
}

/// What happened for one recipient.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Delivery {
    pub message_id: String,
    /// aea's short reference of the message: derived from its sender and
    /// id, so the same in `aea sent`, `aea status` and the recipient's
    /// `aea check`.
    #[serde(rename = "ref")]
    pub short_ref: String,
    pub results: Vec<Outcome>,
    pub sent_copy: Option<PathBuf>,
    /// Said on stderr by the caller: delivered, but something around it
    /// (the recipient's log) did not work.
    #[serde(skip)]
    pub warnings: Vec<String>,
    /// The record of a whole plain send, for [`settle`].
    #[serde(skip)]
    pub record: Option<String>,
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

/// What a send records in the private `sent-keys/` before anything is
/// delivered: the message id, what the message says, who sends it and
/// where it goes. A send that was killed mid-way leaves it behind: the
/// retry of the same message reuses the id and delivers only what is
/// missing, and `aea doctor --fix` completes the `sent/` copy from it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Intent {
    pub message_id: String,
    /// Digest of what the message says and whom it goes to: a record is
    /// only ever reused for the same message.
    pub draft: String,
    pub at: String,
    /// The sending process: a record whose process is gone is an
    /// interrupted send (absent in records of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, flatten)]
    pub holder: Holder,
    /// Each recipient: its repository when delivered into its inbox, none
    /// when queued in `outgoing/` for `aea sync`.
    #[serde(default)]
    pub to: Vec<Destination>,
    /// When every recipient had it and the `sent/` copy was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Destination {
    pub agent_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<PathBuf>,
    /// An OACP or Roo agent's folder, written as that protocol's file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign: Option<ForeignDir>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ForeignDir {
    pub protocol: Protocol,
    pub dir: PathBuf,
}

impl Destination {
    fn of(route: &Route) -> Self {
        Destination {
            agent_id: route.agent_id().to_string(),
            repo: match route {
                Route::Local(l) => Some(l.mailbox.repo().to_path_buf()),
                _ => None,
            },
            foreign: match route {
                Route::Foreign(f) => Some(ForeignDir {
                    protocol: f.protocol,
                    dir: f.dir.clone(),
                }),
                _ => None,
            },
        }
    }
}

/// A recipient's copy of a message we sent, found by [`held`].
#[derive(Debug)]
pub(crate) struct Held {
    /// Where it is: the recipient's inbox, processed mail or archive, or our
    /// `outgoing/`; none once `aea sync` pushed it.
    pub path: Option<PathBuf>,
    /// The copy, where it can be read here.
    pub message: Option<Message>,
}

/// Whether recipient `to` holds message `id` of sender `from`: in its
/// inbox, among its processed mail, or in its archive once `gc` moved it
/// there; for a recipient on another machine, in our `outgoing/` queue,
/// or on the remote once `aea sync` pushed it. With `key`, only a copy
/// signed with it counts: a copy someone else wrote (a recipient that
/// changed its own, another sender where the inbox is shared) does not
/// hold back the real one, nor become our record of what we said. An OACP
/// or Roo agent's folder is read through `foreign`.
pub(crate) fn held(
    mailbox: &Mailbox,
    to: &Destination,
    from: &str,
    id: &str,
    key: Option<&ed25519_dalek::VerifyingKey>,
    foreign: &dyn ForeignFiles,
) -> Option<Held> {
    let ours = |m: &Message| {
        m.message_id == id
            && m.from.agent_id == from
            && key.is_none_or(|k| identity::signed_by(m, k))
    };
    if let Some(dir) = &to.foreign {
        let (path, message) = foreign.holding(dir.protocol, &dir.dir, id)?;
        return ours(&message).then_some(Held {
            path: Some(path),
            message: Some(message),
        });
    }
    let found = match &to.repo {
        Some(repo) => Mailbox::at(repo)
            .ok()?
            .inbox()
            .find_id(
                id,
                Some(from),
                &[crate::mailbox::Held::Inbox, crate::mailbox::Held::Archive],
            )
            .map(|(entry, _)| entry),
        None => mailbox
            .inbox()
            .read_all_in(Private::Outgoing)
            .ok()?
            .into_iter()
            .find(|e| {
                e.valid()
                    .is_some_and(|m| m.to.agent_id == to.agent_id && ours(m))
            }),
    };
    if let Some(entry) = found {
        let message = entry.valid().filter(|m| ours(m))?.clone();
        return Some(Held {
            path: Some(entry.path),
            message: Some(message),
        });
    }
    let pushed = to.repo.is_none()
        && crate::sync_state::load_state(mailbox)
            .pushed
            .get(id)
            .is_some_and(|p| p.to.contains(&to.agent_id));
    pushed.then_some(Held {
        path: None,
        message: None,
    })
}

/// A plain send's record is named `retry-<digest>`: it lives only while
/// the send runs, or until the retry of an interrupted one.
pub(crate) const RETRY_PREFIX: &str = "retry-";

/// After this, an interrupted send's record is no longer taken for the
/// one a plain send retries: the same message is then a new one.
pub(crate) const RETRY_WITHIN_HOURS: i64 = 24;

impl Intent {
    /// Whether the send that wrote this record is gone without finishing:
    /// its process is known to be gone, or (another host, no `/proc`) the
    /// record is older than a minute.
    pub(crate) fn interrupted(&self, now: DateTime<Utc>) -> bool {
        let age = crate::message::parse_time(&self.at).map(|t| now - t);
        match self.pid.map(|pid| self.holder.alive(pid)) {
            Some(Alive::Gone) => true,
            Some(Alive::Yes) => false,
            _ => age.is_some_and(|a| a > chrono::Duration::minutes(1)),
        }
    }

    /// Whether a plain send of the same message is still taken for its
    /// retry ([`RETRY_WITHIN_HOURS`]). A time more than a minute ahead of
    /// the clock (set back since, or a record that lies) says nothing about
    /// how long ago it was: not recent.
    pub(crate) fn recent(&self, now: DateTime<Utc>) -> bool {
        crate::message::parse_time(&self.at).is_some_and(|t| {
            now - t < chrono::Duration::hours(RETRY_WITHIN_HOURS)
                && t - now <= chrono::Duration::minutes(1)
        })
    }

    /// Parses a record; `None` when it does not read or its message id is
    /// not one (a hand edit, a record a cloned repository brought): such a
    /// record is never reused.
    pub(crate) fn parse(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice::<Intent>(bytes)
            .ok()
            .filter(|i| crate::message::check_message_id(&i.message_id).is_ok())
    }

    pub(crate) fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("an intent always serialises")
    }
}

/// Delivers `draft` to every resolved recipient (given as `--to` text and
/// its route), keeps one `sent/` copy and logs. One recipient's failure does
/// not stop the others; with a single recipient its error is returned as is.
/// An OACP or Roo agent's file is written (and looked for) through
/// `foreign`.
///
/// The message id is recorded before anything is delivered, so a send
/// killed mid-way is recognised when retried: with `key`
/// (`send --idempotency-key`) every retry with the same key and message
/// reuses the id; without, a send of the same message to the same
/// recipients after one that was interrupted (within
/// [`RETRY_WITHIN_HOURS`]) does. Either way only recipients that do not
/// hold the id yet get it, and the `sent/` copy is kept once.
pub fn deliver(
    draft: &Draft,
    sender: &Sender<'_>,
    recipients: Vec<(String, Result<Route>)>,
    rt: &Runtime,
    key: Option<&str>,
    foreign: &dyn ForeignFiles,
) -> Result<Delivery> {
    let single = recipients.len() == 1;
    let digest = draft_digest(draft, &recipients);
    let (broadcast, resolved) = distinct_recipients(sender, recipients);
    let mut intent = Intent {
        message_id: rt.uuid(),
        draft: digest,
        at: crate::message::format_time(rt.now()),
        pid: Some(std::process::id()),
        holder: Holder::current(),
        to: resolved
            .iter()
            .filter_map(|(_, route)| route.as_ref().ok())
            .map(Destination::of)
            .collect(),
        finished: None,
    };
    // One send per key at a time: two at once would each find a recipient
    // without the message and both deliver it.
    let _one_at_a_time = key
        .map(|k| sender.mailbox.sent().lock_send_key(&key_name(k)))
        .transpose()?;
    let recorded = match key {
        Some(key) => Recorded {
            name: Some(keyed(&mut intent, sender, key)?),
            retry: true,
        },
        None => derived(&mut intent, sender, rt)?,
    };
    let result = deliver_to(
        draft,
        sender,
        &broadcast,
        resolved,
        single,
        rt,
        &intent.message_id,
        recorded.retry,
        foreign,
    );
    // A keyed send's record says when it finished (doctor then no longer
    // looks for its copies, which recipients may have archived or `aea
    // sync` carried away). A plain send's record goes when nothing was
    // delivered; once the send is whole, the caller lets it go after
    // printing the answer ([`settle`]), so that a send killed before its
    // caller saw the answer is recognised when retried. A partial send's
    // stays, for the retry.
    let mut result = result;
    if let Some(record) = &recorded.name {
        let (nothing, whole) = match &result {
            Ok(d) => (
                d.results.iter().all(|o| !o.delivered),
                d.sent_copy.is_some() && d.results.iter().all(|o| o.delivered),
            ),
            Err(_) => (single, false),
        };
        match (key, &mut result) {
            (None, _) if nothing => let_go(sender.mailbox, record),
            (None, Ok(d)) if whole => d.record = Some(record.clone()),
            (Some(_), _) if whole => {
                intent.finished = Some(crate::message::format_time(rt.now()));
                let _ = sender
                    .mailbox
                    .sent()
                    .replace_send_key(record, &intent.bytes());
            }
            _ => {}
        }
    }
    if key.is_none()
        && recorded.retry
        && let Ok(d) = &mut result
    {
        d.warnings.push(format!(
            "the same message to the same recipients was interrupted earlier (message {}): this send finishes it, nothing is delivered twice",
            d.message_id
        ));
    }
    result
}

/// Delivers `draft` into the sender's own inbox, signed with its own key:
/// a notice one of the agent's own processes leaves for it (the monitor's
/// "your turn" in a collaboration another tool advanced). It goes nowhere
/// else, so there is no `sent/` copy and no send record; the inbox's log
/// has its `delivered` line. Returns the message id, its short reference
/// and the file written.
pub fn notify_self(
    draft: &Draft,
    sender: &Sender<'_>,
    rt: &Runtime,
) -> Result<(String, String, PathBuf)> {
    let id = rt.uuid();
    let me = Route::Local(Box::new(crate::route::Recipient {
        id: sender.id.to_string(),
        mailbox: sender.mailbox.clone(),
    }));
    // To itself: nothing to announce.
    let from = sender.party(rt, false);
    let mut message = draft.message(&id, rt.now(), &from, &me);
    if crate::layout::bash_readers(sender.mailbox.dir()) {
        message.add_legacy_copy();
    }
    identity::sign(&mut message, sender.key);
    let path = sender.mailbox.deliver(&message, rt)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    // Delivered either way; the process that leaves a notice has no one
    // to tell that its log line is missing.
    let _ = sender.mailbox.log(
        &Event::new(rt, AuditEvent::Delivered)
            .with("message", id.as_str())
            .with("file", name.unwrap_or_default())
            .with("from", sender.id),
    );
    let short_ref = crate::shortref::of(&crate::shortref::key(Some((sender.id, &id)), ""));
    Ok((id, short_ref, path))
}

/// Lets a whole plain send's record go, once its answer was printed: a
/// send of the same message from now on is a new message.
pub fn settle(sender: &Sender<'_>, delivery: &Delivery) {
    if let Some(record) = &delivery.record {
        let_go(sender.mailbox, record);
    }
}

/// Removes this process's own record, under the lock an identical send
/// judges it under: that send then sees this one alive (a message of its
/// own) or finds no record, never a record whose process has just gone —
/// which it would take for an interrupted send and "finish" by reusing
/// this message's id, delivering nothing. A record another send took over
/// meanwhile is that send's, and stays.
fn let_go(mailbox: &Mailbox, record: &str) {
    let Ok(_lock) = mailbox.sent().lock_send_keys() else {
        return;
    };
    let ours = match mailbox.sent().send_key(record) {
        Ok(Some(bytes)) => Intent::parse(&bytes).is_none_or(|i| i.pid == Some(std::process::id())),
        _ => false,
    };
    if ours {
        let _ = mailbox.sent().forget_send_key(record);
    }
}

/// Digest of what the message says and whom it goes to (as given):
/// everything a recipient acts on, so that another message is never taken
/// for a repeat. Not `expires_at`: `--expires 2h` is another time on
/// every run, and a retry must still be recognised.
fn draft_digest(draft: &Draft, recipients: &[(String, Result<Route>)]) -> String {
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
        draft.requires_response,
        draft.conversation,
    ]);
    crate::fsutil::sha256_hex(what.to_string().as_bytes())
}

/// The name of `--idempotency-key`'s record in `.sent-keys/`.
fn key_name(key: &str) -> String {
    crate::fsutil::sha256_hex(key.as_bytes())[..32].to_string()
}

/// `send --idempotency-key`: records the key with the message id before
/// delivering; a retry reuses the id. Returns the record's name.
fn keyed(intent: &mut Intent, sender: &Sender<'_>, key: &str) -> Result<String> {
    let name = key_name(key);
    if sender
        .mailbox
        .sent()
        .record_send_key(&name, &intent.bytes())?
    {
        return Ok(name);
    }
    let earlier: Intent = sender
        .mailbox
        .sent()
        .send_key(&name)?
        .and_then(|b| Intent::parse(&b))
        .ok_or_else(|| Error::SendKeyTaken {
            key: key.to_string(),
            earlier: None,
        })?;
    if earlier.draft != intent.draft {
        return Err(Error::SendKeyTaken {
            key: key.to_string(),
            earlier: Some(earlier.message_id),
        });
    }
    intent.message_id = earlier.message_id;
    Ok(name)
}

/// How a send's intent was recorded.
struct Recorded {
    /// The record's name in `.sent-keys/`; none when an identical send is
    /// running right now (this one is then a message of its own).
    name: Option<String>,
    /// This send reuses an earlier one's id.
    retry: bool,
}

impl Recorded {
    fn fresh(name: Option<String>) -> Self {
        Recorded { name, retry: false }
    }
}

/// A plain send: records its intent under a name derived from the
/// message, or, when a send of the same message was interrupted (within
/// [`RETRY_WITHIN_HOURS`]), takes its record over and reuses its id.
fn derived(intent: &mut Intent, sender: &Sender<'_>, rt: &Runtime) -> Result<Recorded> {
    let name = format!("{RETRY_PREFIX}{}", &intent.draft[..32]);
    let now = rt.now();
    // Two rounds at most: the second follows a record that went meanwhile.
    for _ in 0..2 {
        if sender
            .mailbox
            .sent()
            .record_send_key(&name, &intent.bytes())?
        {
            return Ok(Recorded::fresh(Some(name)));
        }
        // Judged and replaced under the lock, in one rename: a second
        // retry waits and then finds this one's record (its process alive:
        // a message of its own), and a kill leaves the old record or the
        // new, never none.
        let _lock = sender.mailbox.sent().lock_send_keys()?;
        let Some(held) = sender.mailbox.sent().send_key(&name)? else {
            continue;
        };
        let earlier = Intent::parse(&held);
        // An identical send running right now is a message of its own.
        if earlier
            .as_ref()
            .is_some_and(|e| e.finished.is_none() && !e.interrupted(now))
        {
            return Ok(Recorded::fresh(None));
        }
        let retry = earlier.filter(|e| e.draft == intent.draft && e.recent(now));
        if let Some(e) = &retry {
            intent.message_id.clone_from(&e.message_id);
        }
        sender
            .mailbox
            .sent()
            .replace_send_key(&name, &intent.bytes())?;
        return Ok(Recorded {
            name: Some(name),
            retry: retry.is_some(),
        });
    }
    Ok(Recorded::fresh(None))
}

#[allow(clippy::too_many_arguments)]
fn deliver_to(
    draft: &Draft,
    sender: &Sender<'_>,
    broadcast: &[String],
    resolved: Vec<(String, Result<Route>)>,
    single: bool,
    rt: &Runtime,
    id: &str,
    retry: bool,
    foreign: &dyn ForeignFiles,
) -> Result<Delivery> {
    let mut delivery = Delivery {
        message_id: id.to_string(),
        short_ref: crate::shortref::of(&crate::shortref::key(Some((sender.id, id)), "")),
        results: Vec::new(),
        sent_copy: None,
        warnings: Vec::new(),
        record: None,
    };
    let now = rt.now();
    let from = sender.party(rt, crate::layout::bash_sender(sender.mailbox.dir()));
    let mut first_sent: Option<Message> = None;
    for (target, route) in resolved {
        let result = route.and_then(|r| {
            let mut message = draft.message(&delivery.message_id, now, &from, &r);
            if broadcast.len() > 1 {
                message.metadata.broadcast = Some(broadcast.to_vec());
            }
            // The bash AEA's scripts read 0.1.0 fields only; without them
            // they show v1.0 mail as "Priority: normal | From: unknown".
            if let Route::Local(local) = &r
                && crate::layout::bash_readers(local.mailbox.dir())
            {
                message.add_legacy_copy();
            }
            identity::sign(&mut message, sender.key);
            // A retry: a recipient that holds the id already got it.
            if retry
                && let Some(held) = held(
                    sender.mailbox,
                    &Destination::of(&r),
                    sender.id,
                    &message.message_id,
                    Some(&sender.key.verifying_key()),
                    foreign,
                )
            {
                first_sent.get_or_insert(message);
                let queued = matches!(r, Route::Remote(_)) && held.path.is_some();
                return Ok((r.agent_id().to_string(), held.path, queued));
            }
            let (id, path, queued) =
                write_one(&message, &r, sender, rt, &mut delivery.warnings, foreign)?;
            first_sent.get_or_insert(message);
            Ok((id, Some(path), queued))
        });
        delivery.results.push(match result {
            Ok((id, path, queued)) => Outcome {
                recipient: target,
                delivered: true,
                queued,
                agent_id: Some(id),
                path,
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
    let copied = if retry {
        sender
            .mailbox
            .inbox()
            .find(&delivery.message_id, &[crate::mailbox::Held::Sent])
            .ok()
            .map(|(entry, _)| entry)
            .filter(|e| {
                e.valid()
                    .is_some_and(|m| m.message_id == delivery.message_id)
            })
            .map(|e| e.path)
    } else {
        None
    };
    let copied = copied.is_some_and(|path| {
        delivery.sent_copy = Some(path);
        true
    });
    if let Some(message) = first_sent.as_ref().filter(|_| !copied) {
        match keep_sent_copy(message, draft, broadcast, sender, rt) {
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
            let same_repo = match &r {
                Route::Local(l) => l.mailbox.repo() == sender.mailbox.repo(),
                Route::Remote(_) | Route::Foreign(_) => false,
            };
            let id = r.agent_id().to_string();
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
/// into our `outgoing/` queue, or an OACP or Roo agent's folder (through
/// `foreign`). Returns (agent id, path, queued).
fn write_one(
    message: &Message,
    route: &Route,
    sender: &Sender<'_>,
    rt: &Runtime,
    warnings: &mut Vec<String>,
    foreign: &dyn ForeignFiles,
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
            let path = sender
                .mailbox
                .sent()
                .store_in(Private::Outgoing, message, rt)?;
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
        // Their protocol has no log of ours to write; our `sent` line and
        // `sent/` copy record it.
        Route::Foreign(f) => {
            let path = foreign.deliver(f.protocol, message, &f.dir)?;
            Ok((f.id.clone(), path, false))
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
    let copy = sender.mailbox.sent().store_sent(message, rt)?;
    sender.mailbox.log(
        &Event::new(rt, AuditEvent::Sent)
            .with("message", message.message_id.as_str())
            .with("type", draft.message_type.as_str())
            .with("priority", draft.priority.as_str())
            .with("to", broadcast.to_vec()),
    )?;
    Ok(copy)
}
