//! Mail between machines through an ordinary git remote (SPEC §11).
//!
//! Mail for agent X travels as commits on `refs/aea/mail/X` whose tree
//! holds one `<message_id>.json` per message; processed receipts travel on
//! `refs/aea/receipts/<sender>`. The commits live in a private bare
//! repository, `.aea/.sync/`, so the user's branches, index and working tree
//! are never touched. Applying is idempotent by message id; content that
//! changed under a known id is quarantined, never applied.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::audit::{self, Event};
use crate::error::{Error, Result};
use crate::fsutil;
use crate::mailbox::{Mailbox, OUTGOING_DIR, QUARANTINE_DIR};
use crate::message::{self, format_time};
use crate::repo::{MailStore, Pushed};
use crate::runtime::Runtime;

const STORE_DIR: &str = ".sync";
const STATE_FILE: &str = "state.json";
const LOCK_FILE: &str = ".sync.lock";
/// Pushes that lost a race are retried this often before giving up.
const PUSH_ATTEMPTS: u32 = 10;

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct SyncState {
    /// Messages received through the remote, by id.
    #[serde(default)]
    pub applied: BTreeMap<String, Applied>,
    /// Our messages pushed to the remote, by id.
    #[serde(default)]
    pub pushed: BTreeMap<String, PushRecord>,
    /// Ids whose processed receipt we pushed.
    #[serde(default)]
    pub receipts_sent: BTreeSet<String>,
    /// Receipts for our messages, by id.
    #[serde(default)]
    pub receipts: BTreeMap<String, Receipt>,
    /// Ids quarantined for changed content, reported once.
    #[serde(default)]
    pub quarantined: BTreeSet<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Applied {
    pub sha256: String,
    pub from: String,
    pub file: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PushRecord {
    pub to: Vec<String>,
    pub at: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Receipt {
    pub message_id: String,
    pub state: String,
    pub by: String,
    pub at: String,
    pub outcome: String,
}

/// What one `aea sync` did.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub pushed: BTreeMap<String, Vec<String>>,
    pub received: Vec<String>,
    pub receipts_sent: usize,
    pub receipts_received: Vec<String>,
    pub quarantined: Vec<String>,
}

impl Report {
    pub fn is_empty(&self) -> bool {
        self.pushed.is_empty()
            && self.received.is_empty()
            && self.receipts_sent == 0
            && self.receipts_received.is_empty()
            && self.quarantined.is_empty()
    }
}

fn sha256(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
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

pub fn load_state(mailbox: &Mailbox) -> SyncState {
    fs::read_to_string(mailbox.dir().join(STORE_DIR).join(STATE_FILE))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn save_state(mailbox: &Mailbox, state: &SyncState) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(state).expect("the state always serialises");
    fsutil::replace_atomic(&mailbox.dir().join(STORE_DIR).join(STATE_FILE), &bytes)
}

/// Runs one exchange with the mail remote at `url` for agent `me`.
pub fn sync(mailbox: &Mailbox, me: &str, url: &str, rt: &Runtime) -> Result<Report> {
    let lock_path = mailbox.dir().join(LOCK_FILE);
    let _lock = fsutil::lock(&lock_path)?;
    let store = MailStore::open(&mailbox.dir().join(STORE_DIR))?;
    let mut state = load_state(mailbox);
    let mut report = Report::default();
    let failed = |cause: String| Error::SyncFailed {
        remote: url.to_string(),
        cause,
    };

    store.fetch(url).map_err(failed)?;
    receive(mailbox, me, &store, &mut state, &mut report, rt)?;
    save_state(mailbox, &state)?;
    send_receipts(mailbox, me, url, &store, &mut state, &mut report, rt)?;
    save_state(mailbox, &state)?;
    for (id, receipt) in read_receipts(&store, me)? {
        if let std::collections::btree_map::Entry::Vacant(slot) = state.receipts.entry(id) {
            report.receipts_received.push(slot.key().clone());
            slot.insert(receipt);
        }
    }
    save_state(mailbox, &state)?;
    push_queue(mailbox, url, &store, &mut state, &mut report, rt)?;
    save_state(mailbox, &state)?;
    Ok(report)
}

/// Applies new mail from `refs/aea/mail/<me>` to the inbox.
fn receive(
    mailbox: &Mailbox,
    me: &str,
    store: &MailStore,
    state: &mut SyncState,
    report: &mut Report,
    rt: &Runtime,
) -> Result<()> {
    let files = store.files(&fetched(&mail_ref(me)))?;
    // Ids already in the inbox, for mail that arrived by another route.
    let mut local: Option<HashMap<String, String>> = None;
    for (name, bytes) in files {
        let Some(id) = name.strip_suffix(".json") else {
            continue;
        };
        let digest = sha256(&bytes);
        match state.applied.get(id) {
            Some(a) if a.sha256 == digest => continue,
            Some(_) => {
                quarantine(
                    mailbox,
                    id,
                    &bytes,
                    "content changed under an id already applied",
                    state,
                    report,
                    rt,
                )?;
                continue;
            }
            None => {}
        }
        let parsed = match message::parse(&bytes, None) {
            Ok(m) if m.message_id == id => m,
            Ok(m) => {
                let why = format!("file {name} holds message id {}", m.message_id);
                quarantine(mailbox, id, &bytes, &why, state, report, rt)?;
                continue;
            }
            Err(e) => {
                quarantine(
                    mailbox,
                    id,
                    &bytes,
                    &format!("invalid: {e}"),
                    state,
                    report,
                    rt,
                )?;
                continue;
            }
        };
        let local = local.get_or_insert_with(|| inbox_ids(mailbox));
        if let Some(file) = local.get(id) {
            // Same message by two routes: delivered once.
            state.applied.insert(
                id.to_string(),
                Applied {
                    sha256: digest,
                    from: parsed.from.agent_id.clone(),
                    file: file.clone(),
                },
            );
            continue;
        }
        let path = mailbox.deliver_raw(&bytes, &parsed, rt)?;
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        audit::append(
            mailbox.dir(),
            &Event::new(rt, "delivered")
                .with("message", id)
                .with("file", file.as_str())
                .with("from", parsed.from.agent_id.as_str())
                .with("via", "sync"),
        )?;
        local.insert(id.to_string(), file.clone());
        state.applied.insert(
            id.to_string(),
            Applied {
                sha256: digest,
                from: parsed.from.agent_id.clone(),
                file,
            },
        );
        report.received.push(id.to_string());
    }
    Ok(())
}

/// Message ids in the inbox (processed or not), by id -> file name.
fn inbox_ids(mailbox: &Mailbox) -> HashMap<String, String> {
    mailbox
        .message_names()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|name| {
            let entry = mailbox.read(&name);
            entry.valid().map(|m| (m.message_id.clone(), name.clone()))
        })
        .collect()
}

fn quarantine(
    mailbox: &Mailbox,
    id: &str,
    bytes: &[u8],
    reason: &str,
    state: &mut SyncState,
    report: &mut Report,
    rt: &Runtime,
) -> Result<()> {
    if !state.quarantined.insert(id.to_string()) {
        return Ok(());
    }
    let dir = mailbox.dir().join(QUARANTINE_DIR);
    fsutil::ensure_dir(&dir)?;
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
    let stamp = rt.now().format("%Y%m%dT%H%M%S%3fZ");
    let file = dir.join(format!("sync-{safe}-{stamp}.json"));
    fsutil::create_exclusive(&file, bytes)?;
    fsutil::create_exclusive(
        &file.with_extension("json.reason"),
        format!("{reason}\n").as_bytes(),
    )?;
    audit::append(
        mailbox.dir(),
        &Event::new(rt, "quarantined")
            .with("message", id)
            .with("reason", reason)
            .with("via", "sync"),
    )?;
    report.quarantined.push(id.to_string());
    Ok(())
}

/// Pushes a processed receipt for each synced message processed here.
fn send_receipts(
    mailbox: &Mailbox,
    me: &str,
    url: &str,
    store: &MailStore,
    state: &mut SyncState,
    report: &mut Report,
    rt: &Runtime,
) -> Result<()> {
    let mut by_sender: BTreeMap<String, Vec<(String, Vec<u8>)>> = BTreeMap::new();
    for (id, applied) in &state.applied {
        if state.receipts_sent.contains(id) || !mailbox.is_processed(&applied.file) {
            continue;
        }
        let marker = mailbox.marker(&applied.file);
        let receipt = Receipt {
            message_id: id.clone(),
            state: "processed".into(),
            by: me.to_string(),
            at: marker
                .as_ref()
                .map_or_else(|| format_time(rt.now()), |m| m.processed_at.clone()),
            outcome: marker.map_or_else(|| "done".to_string(), |m| m.outcome),
        };
        let bytes = serde_json::to_vec_pretty(&receipt).expect("a receipt always serialises");
        by_sender
            .entry(applied.from.clone())
            .or_default()
            .push((format!("{id}.json"), bytes));
    }
    for (sender, files) in by_sender {
        let ids: Vec<String> = files
            .iter()
            .map(|(n, _)| n.trim_end_matches(".json").to_string())
            .collect();
        push_files(store, url, &receipts_ref(&sender), &files)?;
        report.receipts_sent += ids.len();
        state.receipts_sent.extend(ids);
    }
    Ok(())
}

fn read_receipts(store: &MailStore, me: &str) -> Result<Vec<(String, Receipt)>> {
    Ok(store
        .files(&fetched(&receipts_ref(me)))?
        .into_iter()
        .filter_map(|(name, bytes)| {
            let receipt: Receipt = serde_json::from_slice(&bytes).ok()?;
            (name.trim_end_matches(".json") == receipt.message_id)
                .then(|| (receipt.message_id.clone(), receipt))
        })
        .collect())
}

/// Pushes the queue in `outgoing/`, one ref per recipient; a message leaves
/// the queue only once its commit is on the remote.
fn push_queue(
    mailbox: &Mailbox,
    url: &str,
    store: &MailStore,
    state: &mut SyncState,
    report: &mut Report,
    rt: &Runtime,
) -> Result<()> {
    let mut by_recipient: BTreeMap<String, Vec<(PathBuf, String, Vec<u8>)>> = BTreeMap::new();
    for entry in mailbox.read_all_in(OUTGOING_DIR)? {
        let Ok(message) = &entry.message else {
            continue;
        };
        let bytes = fs::read(&entry.path).map_err(|e| Error::io("read", &entry.path, e))?;
        by_recipient
            .entry(message.to.agent_id.clone())
            .or_default()
            .push((entry.path.clone(), message.message_id.clone(), bytes));
    }
    for (recipient, queued) in by_recipient {
        let files: Vec<(String, Vec<u8>)> = queued
            .iter()
            .map(|(_, id, bytes)| (format!("{id}.json"), bytes.clone()))
            .collect();
        push_files(store, url, &mail_ref(&recipient), &files)?;
        let at = format_time(rt.now());
        for (path, id, _) in &queued {
            state
                .pushed
                .entry(id.clone())
                .or_insert_with(|| PushRecord {
                    to: Vec::new(),
                    at: at.clone(),
                })
                .to
                .push(recipient.clone());
            let _ = fs::remove_file(path);
            audit::append(
                mailbox.dir(),
                &Event::new(rt, "pushed")
                    .with("message", id.as_str())
                    .with("to", recipient.as_str()),
            )?;
        }
        report
            .pushed
            .insert(recipient, queued.into_iter().map(|(_, id, _)| id).collect());
    }
    Ok(())
}

/// Adds `files` to `remote_ref` on the remote: commit on the fetched tip,
/// push without force, and on a lost race fetch and rebuild.
fn push_files(
    store: &MailStore,
    url: &str,
    remote_ref: &str,
    files: &[(String, Vec<u8>)],
) -> Result<()> {
    let failed = |cause: String| Error::SyncFailed {
        remote: url.to_string(),
        cause,
    };
    let local = format!("refs/outgoing/{}", remote_ref.trim_start_matches("refs/"));
    for attempt in 0..PUSH_ATTEMPTS {
        if attempt > 0 {
            store.fetch(url).map_err(failed)?;
            std::thread::sleep(std::time::Duration::from_millis(20 * u64::from(attempt)));
        }
        let summary = format!("aea: {} file(s) for {remote_ref}", files.len());
        if !store.append(&fetched(remote_ref), &local, files, &summary)? {
            return Ok(());
        }
        match store.push(url, &local, remote_ref).map_err(failed)? {
            Pushed::Done => return Ok(()),
            Pushed::Rejected => {}
        }
    }
    Err(failed(format!(
        "{remote_ref} kept moving: pushes were rejected {PUSH_ATTEMPTS} times"
    )))
}

/// Whether the message `id` still waits in `outgoing/`.
pub fn is_queued(mailbox: &Mailbox, id: &str) -> bool {
    mailbox
        .read_all_in(OUTGOING_DIR)
        .unwrap_or_default()
        .iter()
        .any(|e| e.valid().is_some_and(|m| m.message_id == id))
}
