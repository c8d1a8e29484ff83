//! Mail between machines through an ordinary git remote (SPEC §11).
//!
//! Mail for agent X travels as commits on `refs/aea/mail/X` whose tree
//! holds one `<message_id>.json` per message; processed receipts travel on
//! `refs/aea/receipts/<sender>`. The commits live in a private bare
//! repository in the private state (`sync/`), so the user's branches, index and working tree
//! are never touched. Applying is idempotent by message id; content that
//! changed under a known id is quarantined, never applied.

use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs;
use std::path::PathBuf;

use crate::attachments;
use crate::audit::{self, AuditEvent, Event};
use crate::error::{Error, GitError, Result};
use crate::fsutil;
use crate::identity;
use crate::keyring::KeyRing;
use crate::layout::{Private, Shared};
use crate::mailbox::{Mailbox, Outcome};
use crate::message::{self, format_time};
use crate::repo::{MailStore, Pushed};
use crate::runtime::Runtime;
use crate::sync_state::{
    self, Applied, Head, Journal, Lost, PushRecord, Receipt, Record, SyncState,
};
use crate::words::OrUnknown;
use ed25519_dalek::SigningKey;

mod names;
mod receipt;

use names::InboxNames;
use receipt::{RECEIPT_DOMAIN, signed_bytes, verify};

/// Refused attachment blobs one sync reports by name; the rest are counted.
const REFUSALS_SHOWN: usize = 20;
/// Refused attachment blobs remembered (so reported once): a remote can
/// push thousands, and the state file holds what was applied.
const REFUSALS_REMEMBERED: usize = 256;
/// Pushes that lost a race are retried this often before giving up.
const PUSH_ATTEMPTS: u32 = 10;

/// The keys a sync signs receipts with and verifies them by.
pub struct Keys<'a> {
    /// This agent's signing key; `None` sends no receipts.
    pub signing: Option<&'a SigningKey>,
    pub ring: &'a KeyRing,
}

/// What one `aea sync` did.
#[derive(Debug, Default, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Report {
    pub pushed: BTreeMap<String, Vec<String>>,
    pub received: Vec<String>,
    pub receipts_sent: usize,
    pub receipts_received: Vec<String>,
    /// Remote refs rewritten, rolled back or deleted since the last sync.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rewritten: Vec<String>,
    /// Our messages that were gone from the remote (pushed again if this
    /// machine still had them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<String>,
    /// Receipts that did not verify, with the reason; never recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub receipts_rejected: Vec<String>,
    pub quarantined: Vec<String>,
    /// Attachments (by SHA-256) kept in the private `attachments/`, verified.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments_received: Vec<String>,
    /// Attachment blobs on the remote that were not kept, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments_refused: Vec<String>,
    /// Parts of this machine's sync state (the private `sync/`) that could
    /// not be read (a write cut short, damage): skipped, the rest kept;
    /// mail already delivered is recognised in the inbox or among
    /// processed mail and not delivered again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub state_damage: Vec<String>,
}

impl Report {
    pub fn is_empty(&self) -> bool {
        self.pushed.is_empty()
            && self.received.is_empty()
            && self.receipts_sent == 0
            && self.receipts_received.is_empty()
            && self.receipts_rejected.is_empty()
            && self.quarantined.is_empty()
            && self.rewritten.is_empty()
            && self.lost.is_empty()
            && self.attachments_received.is_empty()
            && self.attachments_refused.is_empty()
            && self.state_damage.is_empty()
    }

    /// Something a person should look at: exit 6.
    pub fn needs_attention(&self) -> bool {
        !self.receipts_rejected.is_empty()
            || !self.rewritten.is_empty()
            || !self.lost.is_empty()
            || !self.attachments_refused.is_empty()
    }
}

fn mail_ref(agent: &str) -> String {
    format!("refs/aea/mail/{agent}")
}

fn receipts_ref(agent: &str) -> String {
    format!("refs/aea/receipts/{agent}")
}

fn fetched(remote_ref: &str) -> String {
    format!(
        "{}{}",
        crate::repo::FETCHED_PREFIX,
        remote_ref.trim_start_matches("refs/")
    )
}

/// Where this machine builds (and keeps) what it pushes to `remote_ref`.
fn outgoing_ref(remote_ref: &str) -> String {
    format!("refs/outgoing/{}", remote_ref.trim_start_matches("refs/"))
}

fn short(oid: &str) -> &str {
    &oid[..oid.len().min(10)]
}

/// Runs one exchange with the mail remote at `url` for agent `me`.
pub fn sync(
    mailbox: &Mailbox,
    me: &str,
    url: &str,
    rt: &Runtime,
    keys: &Keys<'_>,
) -> Result<Report> {
    let lock_path = mailbox.private_file(Private::SyncLock)?;
    let lock = fsutil::lock(&lock_path)?;
    // The private store is the receiver's state: never through a symlink.
    mailbox.check_state()?;
    let dir = mailbox.make_private_dir(Private::SyncStore)?;
    // `tips.json` and the journal are replaced through a staged file next
    // to them (`fsutil::replace_atomic`): what a sync killed mid-write
    // left there goes now, under the lock. Nothing else swept this folder.
    fsutil::sweep_staging(&dir);
    // The store passes the lock on to the git it runs: held until the last
    // of them ends, even when this process is killed first.
    let held = lock
        .try_clone()
        .map_err(|e| Error::io("lock", &lock_path, e))?;
    let store = MailStore::open(&dir, held)?;
    let failed = |source| Error::SyncFailed {
        remote: url.to_string(),
        source,
    };
    store.fetch(url).map_err(failed)?;
    let files = sync_state::Files::new(&dir);
    let head = files.head().ok().flatten();
    if let Some(head) = &head
        && nothing_to_do(mailbox, me, &store, head, keys)?
    {
        return Ok(Report::default());
    }
    let loaded = files.load()?;
    let mut session = Session {
        mailbox,
        me,
        url,
        rt,
        keys,
        store,
        journal: Journal::new(files, &loaded),
        received: head
            .as_ref()
            .and_then(|h| h.received.clone())
            // A journal that lost lines may have lost what was applied:
            // every file on the ref is looked at again.
            .filter(|_| loaded.damage.is_empty()),
        state: loaded.state,
        report: Report {
            state_damage: loaded.damage,
            ..Report::default()
        },
    };
    // The state is saved after each step: a failure later keeps what the
    // earlier steps did from being done twice.
    session.check_history();
    session.repush_lost()?;
    session.save()?;
    session.receive()?;
    session.save()?;
    session.send_receipts()?;
    session.save()?;
    session.read_receipts()?;
    session.save()?;
    session.push_queue()?;
    session.save()?;
    // Last, once all the above is on disk: a sync that ends before sees
    // the old tips, so it does not take the remote as unchanged.
    let head_now = session.head();
    if head.as_ref() != Some(&head_now) {
        session.journal.files().write_head(&head_now)?;
    }
    Ok(session.report)
}

/// Whether this sync has nothing to do (so that it costs about one
/// fetch, whatever the history): the last one ended settled, every
/// remote ref it watched is where it left it, nothing is queued in
/// `outgoing/`, and no mail applied here has been processed since (its
/// receipt would be sent). Then nothing of the state is read or written.
fn nothing_to_do(
    mailbox: &Mailbox,
    me: &str,
    store: &MailStore,
    head: &Head,
    keys: &Keys<'_>,
) -> Result<bool> {
    if !head.settled {
        return Ok(false);
    }
    let ours = [mail_ref(me), receipts_ref(me)];
    let moved = head
        .watched
        .iter()
        .chain(head.tips.keys())
        .chain(&ours)
        .any(|r| store.tip(&fetched(r)).as_ref() != head.tips.get(r));
    if moved {
        return Ok(false);
    }
    if keys.signing.is_some() {
        // A marker means maybe processed: the full run judges it.
        let Some(unreceipted) = &head.unreceipted else {
            return Ok(false);
        };
        if unreceipted
            .values()
            .any(|file| mailbox.records().is_processed(file))
        {
            return Ok(false);
        }
    }
    Ok(mailbox
        .inbox()
        .read_all_in(Private::Outgoing)?
        .iter()
        .all(|e| e.message.is_err()))
}

/// One `aea sync` run: what it works on and what it found so far.
struct Session<'a> {
    mailbox: &'a Mailbox,
    me: &'a str,
    url: &'a str,
    rt: &'a Runtime,
    keys: &'a Keys<'a>,
    store: MailStore,
    state: SyncState,
    /// What changed and is not on disk yet.
    journal: Journal,
    /// The commit of our mail ref whose files were all examined before.
    received: Option<String>,
    report: Report,
}

impl Session<'_> {
    fn failed(&self, source: GitError) -> Error {
        Error::SyncFailed {
            remote: self.url.to_string(),
            source,
        }
    }

    fn save(&mut self) -> Result<()> {
        self.journal.save(&self.state)
    }

    fn note(&mut self, record: Record) {
        self.journal.note(&mut self.state, record);
    }

    /// Applies new mail from `refs/aea/mail/<me>` to the inbox.
    /// Remote refs this machine reads or writes.
    fn watched_refs(&self) -> Vec<String> {
        let mut refs = vec![mail_ref(self.me), receipts_ref(self.me)];
        let recipients: BTreeSet<&String> = self
            .state
            .pushed
            .values()
            .flat_map(|p| p.to.iter())
            .collect();
        refs.extend(recipients.into_iter().map(|r| mail_ref(r)));
        refs
    }

    /// Reports every watched ref whose fetched tip does not descend from
    /// the one seen last: deleted, rolled back or rewritten on the remote.
    fn check_history(&mut self) {
        for (remote_ref, old) in &self.state.tips {
            let what = match self.store.tip(&fetched(remote_ref)) {
                None => "deleted on the remote".to_string(),
                Some(new) if self.store.descends(&new, old) => continue,
                Some(new) if self.store.descends(old, &new) => {
                    format!(
                        "rolled back on the remote to an older state ({})",
                        short(&new)
                    )
                }
                Some(new) => format!(
                    "rewritten on the remote: {} no longer has {} in its history; mail pushed to it may be lost",
                    short(&new),
                    short(old)
                ),
            };
            self.report.rewritten.push(format!("{remote_ref}: {what}"));
        }
    }

    /// Our pushed messages without a receipt that are no longer on their
    /// recipient's ref are pushed again from this machine's copy (the
    /// commit it pushed), and reported.
    fn repush_lost(&mut self) -> Result<()> {
        let mut missing: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut on_remote: HashMap<String, BTreeSet<String>> = HashMap::new();
        for (id, record) in &self.state.pushed {
            for to in &record.to {
                if self.state.receipts.get(id).is_some_and(|r| &r.by == to) {
                    continue;
                }
                let names = on_remote.entry(to.clone()).or_insert_with(|| {
                    self.store
                        .names(&fetched(&mail_ref(to)))
                        .into_iter()
                        .collect()
                });
                if !names.contains(&format!("{id}.json")) {
                    missing.entry(to.clone()).or_default().push(id.clone());
                }
            }
        }
        for (to, ids) in missing {
            let remote_ref = mail_ref(&to);
            let ours: HashMap<String, Vec<u8>> = self
                .store
                .files(&outgoing_ref(&remote_ref))?
                .into_iter()
                .collect();
            let mut files: Vec<(String, Vec<u8>)> = ids
                .iter()
                .filter_map(|id| {
                    let name = format!("{id}.json");
                    ours.get(&name).map(|b| (name, b.clone()))
                })
                .collect();
            if !files.is_empty() {
                // Their attachments too: a name still there is kept as is.
                files.extend(
                    ours.iter()
                        .filter(|(name, _)| name.ends_with(attachments::BLOB_SUFFIX))
                        .map(|(name, bytes)| (name.clone(), bytes.clone())),
                );
                self.push_files(&remote_ref, &files, false)?;
            }
            for id in ids {
                let repushed = files.iter().any(|(n, _)| *n == format!("{id}.json"));
                self.mailbox.log(
                    &Event::new(self.rt, AuditEvent::LostOnRemote)
                        .with("message", id.as_str())
                        .with("to", to.as_str())
                        .with("repushed", repushed),
                )?;
                self.report.lost.push(format!(
                    "{id} for {to}: gone from the remote{}",
                    if repushed {
                        ", pushed again"
                    } else {
                        "; no copy left here to push again"
                    }
                ));
                let lost = Lost {
                    to: to.clone(),
                    noticed: format_time(self.rt.now()),
                    repushed,
                };
                self.note(Record::Lost(id, lost));
            }
        }
        Ok(())
    }

    /// What `tips.json` says after this run: the tips it leaves the
    /// watched refs at (what it pushed, else what it fetched), and what
    /// the next sync needs to know that nothing changed.
    fn head(&mut self) -> Head {
        let watched = self.watched_refs();
        for remote_ref in &watched {
            let tip = self
                .store
                .tip(&outgoing_ref(remote_ref))
                .filter(|ours| {
                    self.store
                        .tip(&fetched(remote_ref))
                        .is_none_or(|theirs| self.store.descends(ours, &theirs))
                })
                .or_else(|| self.store.tip(&fetched(remote_ref)));
            match tip {
                Some(tip) => {
                    self.state.tips.insert(remote_ref.clone(), tip);
                }
                None => {
                    self.state.tips.remove(remote_ref);
                }
            }
        }
        let unreceipted = self.keys.signing.map(|_| {
            self.state
                .applied
                .iter()
                .filter(|(id, _)| !self.state.receipts_sent.contains(*id))
                .map(|(id, a)| (id.clone(), a.file.clone()))
                .collect()
        });
        Head {
            tips: self.state.tips.clone(),
            watched: watched.into_iter().collect(),
            received: self.received.clone(),
            unreceipted,
            settled: !self.report.needs_attention() && self.report.state_damage.is_empty(),
        }
    }

    fn receive(&mut self) -> Result<()> {
        let limit = self.mailbox.message_limit();
        let refname = fetched(&mail_ref(self.me));
        let repo = self.mailbox.repo().to_path_buf();
        let mut files = Vec::new();
        // Only what changed since the last sync that looked at every file:
        // a new message costs the same whatever the ref already holds.
        let only = self.store.changed_since(&refname, self.received.as_deref());
        // Messages first; attachment blobs are read after, one at a time.
        self.store.each_file(
            &refname,
            limit,
            only.as_ref(),
            |name, _| !name.ends_with(attachments::BLOB_SUFFIX),
            |name, bytes| {
                match bytes {
                    Ok(bytes) => files.push((name.to_string(), bytes)),
                    // What delivering it would have said, without reading it.
                    Err(size) if name.strip_suffix(".json").is_some() => {
                        return Err(Error::MessageTooLarge {
                            bytes: size,
                            limit,
                            repo: repo.clone(),
                        });
                    }
                    Err(_) => {}
                }
                Ok(())
            },
        )?;
        self.receive_attachments(&refname, &files, only.as_ref())?;
        // The inbox's file names, for mail that arrived by another route
        // (listed once, when a message is new here), and the ids whose
        // delivery is in the log.
        let mut inbox: Option<InboxNames> = None;
        let mut logged: Option<HashSet<String>> = None;
        for (name, bytes) in files {
            let Some(id) = name.strip_suffix(".json") else {
                continue;
            };
            let digest = fsutil::sha256_hex(&bytes);
            match self.state.applied.get(id) {
                Some(a) if a.sha256 == digest => continue,
                Some(_) => {
                    self.quarantine(id, &bytes, "content changed under an id already applied")?;
                    continue;
                }
                None => {}
            }
            let parsed = match message::parse(&bytes, None) {
                Ok(m) if m.message_id == id => m,
                Ok(m) => {
                    let why = format!("file {name} holds message id {}", m.message_id);
                    self.quarantine(id, &bytes, &why)?;
                    continue;
                }
                Err(e) => {
                    self.quarantine(id, &bytes, &format!("invalid: {e}"))?;
                    continue;
                }
            };
            let from = parsed.from.agent_id.clone();
            let inbox = inbox.get_or_insert_with(|| InboxNames::new(self.mailbox));
            // Same message by two routes: delivered once. A sync killed
            // after delivering left it here too, maybe before its log line:
            // that line is written now, once.
            let file = match inbox.holding(self.mailbox, &parsed, &digest) {
                Some(file) => {
                    let logged = match &mut logged {
                        Some(logged) => logged,
                        None => logged.insert(audit::messages_with(
                            self.mailbox.dir(),
                            AuditEvent::Delivered,
                        )?),
                    };
                    if logged.insert(id.to_string()) {
                        self.log_delivered(id, &file, &from)?;
                    }
                    file
                }
                None => {
                    let path = self.mailbox.deliver_raw(&bytes, &parsed, self.rt)?;
                    let file = path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    self.log_delivered(id, &file, &from)?;
                    inbox.add(file.clone());
                    self.report.received.push(id.to_string());
                    file
                }
            };
            let applied = Applied {
                sha256: digest,
                from,
                file,
            };
            self.note(Record::Applied(id.to_string(), applied));
        }
        self.received = self.store.tip(&refname);
        Ok(())
    }

    /// Keeps the attachment blobs on our mail ref that a message there
    /// names, each only once it verifies (`attachments::verify_blob`); a
    /// blob that does not is reported, once, and never written. A blob
    /// that verifies but no message names is left alone.
    fn receive_attachments(
        &mut self,
        refname: &str,
        files: &[(String, Vec<u8>)],
        only: Option<&HashSet<String>>,
    ) -> Result<()> {
        let dir = self.mailbox.make_private_dir(Private::Attachments)?;
        let mut named: HashSet<String> = files
            .iter()
            .filter(|(name, _)| name.strip_suffix(".json").is_some())
            .filter_map(|(_, bytes)| message::parse(bytes, None).ok())
            .flat_map(|m| attachments::digests(&m))
            .collect();
        // A blob can land after the message that names it (its sender
        // pushed it again): then the names come from every message there.
        let unnamed = |named: &HashSet<String>, name: &String| {
            name.strip_suffix(attachments::BLOB_SUFFIX)
                .is_some_and(|d| {
                    attachments::is_digest(d) && !named.contains(d) && !attachments::has(&dir, d)
                })
        };
        if only.is_some_and(|only| only.iter().any(|n| unnamed(&named, n))) {
            self.store.each_file(
                refname,
                self.mailbox.message_limit(),
                None,
                |name, _| name.strip_suffix(".json").is_some(),
                |_, bytes| {
                    if let Ok(m) = bytes
                        .map_err(drop)
                        .and_then(|b| message::parse(&b, None).map_err(drop))
                    {
                        named.extend(attachments::digests(&m));
                    }
                    Ok(())
                },
            )?;
        }
        let mut received = Vec::new();
        let mut refused = Vec::new();
        // Only blobs worth a look are read (one named and not yet kept, or
        // one to refuse), and one at a time: a remote can hold thousands.
        self.store.each_file(
            refname,
            attachments::LIMIT,
            only,
            |name, size| {
                name.strip_suffix(attachments::BLOB_SUFFIX)
                    .is_some_and(|d| {
                        !attachments::has(&dir, d)
                            && (size > attachments::LIMIT
                                || !attachments::is_digest(d)
                                || named.contains(d))
                    })
            },
            |name, bytes| {
                match bytes {
                    Ok(bytes) => match attachments::verify_blob(name, &bytes) {
                        Ok(digest) => {
                            attachments::keep(&dir, &bytes)?;
                            if attachments::has(&dir, digest) {
                                received.push(digest.to_string());
                            } else {
                                // Kept only if nothing else held its place.
                                refused.push((
                                    name.to_string(),
                                    format!("{name} taken"),
                                    format!(
                                        "not kept: {} exists and is not a regular file (remove it, then sync again)",
                                        dir.join(digest).display()
                                    ),
                                ));
                            }
                        }
                        Err(why) => refused.push((
                            name.to_string(),
                            format!("{name} {}", fsutil::sha256_hex(&bytes)),
                            why,
                        )),
                    },
                    Err(size) => refused.push((
                        name.to_string(),
                        format!("{name} {size}"),
                        format!(
                            "{size} bytes, over the {} byte attachment limit",
                            attachments::LIMIT
                        ),
                    )),
                }
                Ok(())
            },
        )?;
        self.report.attachments_received.extend(received);
        // What is remembered is of blobs still there: a remote cannot grow
        // the state file past what it holds now.
        let mut remembered = self.state.blobs_refused.clone();
        if !remembered.is_empty() {
            let on_ref: HashSet<String> = self
                .store
                .names(refname)
                .into_iter()
                .filter(|n| n.ends_with(attachments::BLOB_SUFFIX))
                .collect();
            remembered.retain(|key| key.split(' ').next().is_some_and(|n| on_ref.contains(n)));
        }
        let mut more = 0usize;
        for (name, key, why) in refused {
            if remembered.contains(&key) {
                continue;
            }
            // Past the bound, a refusal is reported again when the blob
            // is looked at again.
            if remembered.len() < REFUSALS_REMEMBERED {
                remembered.insert(key);
            }
            if self.report.attachments_refused.len() < REFUSALS_SHOWN {
                // The name is the remote's: cut short (the printer escapes it).
                let shown = crate::printer::untrusted_short(&name, 80);
                self.report
                    .attachments_refused
                    .push(format!("{shown}: {why}"));
            } else {
                more += 1;
            }
        }
        if more > 0 {
            self.report.attachments_refused.push(format!(
                "and {more} more attachment blobs on the remote that were not kept (someone with push access put them there)"
            ));
        }
        if remembered != self.state.blobs_refused {
            self.note(Record::BlobsRefused(remembered));
        }
        Ok(())
    }

    fn log_delivered(&self, id: &str, file: &str, from: &str) -> Result<()> {
        self.mailbox.log(
            &Event::new(self.rt, AuditEvent::Delivered)
                .with("message", id)
                .with("file", file)
                .with("from", from)
                .with("via", "sync"),
        )
    }

    /// Moves content that must not be applied to `.quarantine/`, with the
    /// reason; each id is reported once.
    fn quarantine(&mut self, id: &str, bytes: &[u8], reason: &str) -> Result<()> {
        if self.state.quarantined.contains(id) {
            return Ok(());
        }
        self.note(Record::Quarantined(id.to_string()));
        let dir = self.mailbox.make_shared_dir(Shared::Quarantine)?;
        let safe: String = id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let stamp = self.rt.now().format("%Y%m%dT%H%M%S%3fZ");
        let file = dir.join(format!("sync-{safe}-{stamp}.json"));
        fsutil::create_exclusive(&file, bytes)?;
        fsutil::create_exclusive(
            &file.with_extension("json.reason"),
            format!("{reason}\n").as_bytes(),
        )?;
        self.mailbox.log(
            &Event::new(self.rt, AuditEvent::Quarantined)
                .with("message", id)
                .with("reason", reason)
                .with("via", "sync"),
        )?;
        self.report.quarantined.push(id.to_string());
        Ok(())
    }

    /// Pushes a processed receipt for each synced message processed here.
    fn send_receipts(&mut self) -> Result<()> {
        let Some(signing) = self.keys.signing else {
            return Ok(());
        };
        let mut by_sender: BTreeMap<String, Vec<(String, Vec<u8>)>> = BTreeMap::new();
        for (id, applied) in &self.state.applied {
            if self.state.receipts_sent.contains(id)
                || !self.mailbox.records().is_processed(&applied.file)
            {
                continue;
            }
            let marker = self.mailbox.records().record(&applied.file);
            let mut receipt = Receipt {
                message_id: id.clone(),
                state: "processed".into(),
                by: self.me.to_string(),
                at: marker
                    .as_ref()
                    .map_or_else(|| format_time(self.rt.now()), |m| m.processed_at.clone()),
                // An empty marker from an older tool says nothing more.
                outcome: marker.map_or(OrUnknown::Known(Outcome::Done), |m| m.outcome),
                signature: None,
            };
            receipt.signature = Some(identity::sign_bytes(
                RECEIPT_DOMAIN,
                &signed_bytes(&receipt),
                signing,
            ));
            let bytes = serde_json::to_vec_pretty(&receipt).expect("a receipt always serialises");
            by_sender
                .entry(applied.from.clone())
                .or_default()
                .push((format!("{id}.json"), bytes));
        }
        for (sender, files) in by_sender {
            self.push_files(&receipts_ref(&sender), &files, true)?;
            for (name, _) in &files {
                let id = name.trim_end_matches(".json");
                if !self.state.receipts_sent.contains(id) {
                    self.note(Record::ReceiptSent(id.to_string()));
                    self.report.receipts_sent += 1;
                }
            }
        }
        Ok(())
    }

    /// Records receipts for our messages from `refs/aea/receipts/<me>`.
    fn read_receipts(&mut self) -> Result<()> {
        // Recipients of messages still queued here, by id: a push can land
        // after the sync that made it was killed (its `git push` runs on),
        // and the receipt can come back before the queue is pushed again
        // and the push recorded.
        let mut queued: Option<HashMap<String, Vec<String>>> = None;
        for (name, bytes) in self.store.files(&fetched(&receipts_ref(self.me)))? {
            let Ok(receipt) = serde_json::from_slice::<Receipt>(&bytes) else {
                continue;
            };
            if name.trim_end_matches(".json") != receipt.message_id {
                continue;
            }
            if self.state.receipts.contains_key(&receipt.message_id) {
                continue;
            }
            let mut recipients = self
                .state
                .pushed
                .get(&receipt.message_id)
                .map(|p| p.to.clone())
                .unwrap_or_default();
            if !recipients.contains(&receipt.by) {
                let queued = queued.get_or_insert_with(|| queued_recipients(self.mailbox));
                recipients.extend(
                    queued
                        .get(&receipt.message_id)
                        .into_iter()
                        .flatten()
                        .cloned(),
                );
            }
            if let Err(reason) = verify(&receipt, &recipients, self.keys.ring) {
                self.report
                    .receipts_rejected
                    .push(format!("{}: {reason}", receipt.message_id));
                continue;
            }
            self.report
                .receipts_received
                .push(receipt.message_id.clone());
            self.note(Record::Receipt(receipt));
        }
        Ok(())
    }

    /// Pushes the queue in `outgoing/`, one ref per recipient; a message
    /// leaves the queue only once its commit is on the remote.
    fn push_queue(&mut self) -> Result<()> {
        let mut by_recipient: BTreeMap<String, Vec<(PathBuf, String, Vec<u8>)>> = BTreeMap::new();
        let mut blobs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for entry in self.mailbox.inbox().read_all_in(Private::Outgoing)? {
            let Ok(message) = &entry.message else {
                continue;
            };
            blobs
                .entry(message.to.agent_id.clone())
                .or_default()
                .extend(attachments::digests(message));
            let limit = self.mailbox.message_limit();
            let bytes = fsutil::read_limited(&entry.path, limit)
                .map_err(|e| e.into_error(&entry.path, limit))?;
            by_recipient
                .entry(message.to.agent_id.clone())
                .or_default()
                .push((entry.path.clone(), message.message_id.clone(), bytes));
        }
        let attachments = self.mailbox.private_dir(Private::Attachments)?;
        for (recipient, queued) in by_recipient {
            let mut files: Vec<(String, Vec<u8>)> = queued
                .iter()
                .map(|(_, id, bytes)| (format!("{id}.json"), bytes.clone()))
                .collect();
            // The content of their attachments travels with them, from the
            // copy kept at send time; one no longer there stays behind (the
            // recipient can still read it on this machine, by path).
            for digest in blobs.remove(&recipient).unwrap_or_default() {
                if let Some(bytes) = attachments
                    .as_deref()
                    .and_then(|store| attachments::load(store, &digest))
                {
                    files.push((format!("{digest}{}", attachments::BLOB_SUFFIX), bytes));
                }
            }
            self.push_files(&mail_ref(&recipient), &files, false)?;
            // The push is saved before the queue lets go of the message: a
            // sync that ends in between (killed, or the log unwritable)
            // would leave mail on the remote this machine does not know it
            // sent, and refuse its receipt as from a stranger. Ending after
            // the save pushes again next time, which adds nothing.
            let at = format_time(self.rt.now());
            for (_, id, _) in &queued {
                let mut record = self.state.pushed.get(id).cloned().unwrap_or(PushRecord {
                    to: Vec::new(),
                    at: at.clone(),
                });
                if !record.to.contains(&recipient) {
                    record.to.push(recipient.clone());
                    self.note(Record::Pushed(id.clone(), record));
                }
            }
            self.save()?;
            for (path, id, _) in &queued {
                self.mailbox.log(
                    &Event::new(self.rt, AuditEvent::Pushed)
                        .with("message", id.as_str())
                        .with("to", recipient.as_str()),
                )?;
                let _ = fs::remove_file(path);
            }
            self.report
                .pushed
                .insert(recipient, queued.into_iter().map(|(_, id, _)| id).collect());
        }
        Ok(())
    }

    /// Adds `files` to `remote_ref` on the remote: commit on the fetched
    /// tip, push without force, and on a lost race fetch and rebuild.
    /// Pushes `files` onto `remote_ref`. A name already there is kept
    /// unless `replace` (receipts: a forged one must not block the real).
    fn push_files(
        &self,
        remote_ref: &str,
        files: &[(String, Vec<u8>)],
        replace: bool,
    ) -> Result<()> {
        let local = outgoing_ref(remote_ref);
        // The lock git named on every refusal so far: a lock that never
        // goes away was left by a push that was killed.
        let mut lock: Option<Option<String>> = None;
        for attempt in 0..PUSH_ATTEMPTS {
            if attempt > 0 {
                self.store.fetch(self.url).map_err(|c| self.failed(c))?;
                std::thread::sleep(std::time::Duration::from_millis(20 * u64::from(attempt)));
            }
            let summary = format!("aea: {} file(s) for {remote_ref}", files.len());
            if !self
                .store
                .append(&fetched(remote_ref), &local, files, &summary, replace)?
            {
                return Ok(());
            }
            match self
                .store
                .push(self.url, &local, remote_ref)
                .map_err(|c| self.failed(c))?
            {
                Pushed::Done => return Ok(()),
                Pushed::Rejected { lock: named } => {
                    // The remote says which file: only the lock of the ref
                    // being pushed is named, so a remote cannot get a user
                    // told to remove some other file.
                    let named = named.filter(|l| l.ends_with(&format!("/{remote_ref}.lock")));
                    lock = Some(match lock {
                        None => named,
                        Some(before) => before.filter(|b| named.as_ref() == Some(b)),
                    });
                }
            }
        }
        if let Some(Some(lock)) = lock {
            return Err(self.failed(GitError::StaleLock {
                refname: remote_ref.to_string(),
                lock,
            }));
        }
        Err(self.failed(GitError::KeptMoving {
            refname: remote_ref.to_string(),
            attempts: PUSH_ATTEMPTS,
        }))
    }
}

/// The recipients of each message waiting in `outgoing/`, by id.
fn queued_recipients(mailbox: &Mailbox) -> HashMap<String, Vec<String>> {
    let mut recipients: HashMap<String, Vec<String>> = HashMap::new();
    for entry in mailbox
        .inbox()
        .read_all_in(Private::Outgoing)
        .unwrap_or_default()
    {
        if let Some(message) = entry.valid() {
            recipients
                .entry(message.message_id.clone())
                .or_default()
                .push(message.to.agent_id.clone());
        }
    }
    recipients
}
