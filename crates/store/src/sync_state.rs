//! What `aea sync` remembers between runs, in the private `sync/`, kept so that
//! a sync with nothing new costs about one `git fetch` however long the
//! history; and what the readers (`aea status`, `aea sent`, a retried
//! `send`) learn from it and from the `outgoing/` queue. Reading and
//! writing it needs no git: the exchange itself is the sync module's.
//! Older versions kept it all in `state.json`,
//! rewritten whole (and flushed) several times per sync: 2.7 MB at 11,000
//! messages, parsed and written again even when nothing had changed.
//!
//! - `journal`: one JSON record a line (a message applied, pushed, a
//!   receipt sent or received, …), appended with one write and one fsync
//!   per step of a sync that changed something. The last record for an id
//!   wins. It is rewritten whole (atomically) only to fold in `state.json`,
//!   to drop a damaged line, or when most of its lines were superseded.
//! - `tips.json`: small, replaced whole at the end of a sync that changed
//!   it: the remote tips seen last (SPEC §15.1) and what a sync needs to
//!   know that nothing changed without reading the journal.
//! - `state.json`: still read, folded into the journal by the first sync
//!   that writes, then removed.
//!
//! Everything here is the receiver's own: read with the capped, no-follow
//! readers of [`crate::fsutil`], and a line that does not parse (a torn
//! append, a damaged disk) is skipped and reported; the others are kept.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fsutil;
use crate::layout::Private;
use crate::mailbox::{Mailbox, Outcome};
use crate::words::OrUnknown;

// The names are the layout's, which owns every name of the private state.
use crate::layout::sync::{
    JOURNAL as JOURNAL_FILE, LEGACY_STATE as LEGACY_FILE, TIPS as HEAD_FILE,
};
/// A journal with this many more lines than live records is compacted.
const SLACK_LINES: usize = 1024;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Lost {
    pub to: String,
    pub noticed: String,
    /// Pushed again from this machine's copy.
    pub repushed: bool,
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

/// A processed receipt, as it travels and as it is remembered; signed and
/// verified by the sync module.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Receipt {
    pub message_id: String,
    pub state: String,
    pub by: String,
    pub at: String,
    /// Kept as written when unknown: the signature covers the text.
    pub outcome: OrUnknown<Outcome>,
    /// By the key of `by` over every other field (SPEC §15.2): anyone who
    /// can push to the remote could otherwise say mail was processed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<crate::message::Signature>,
}

/// Everything a sync remembers, as the readers (`aea status`, `send`)
/// and a sync that has work to do see it.
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
    /// The last commit this machine saw on each remote ref it reads or
    /// writes: a tip that does not descend from it was rewritten, rolled
    /// back or deleted by someone with push access (SPEC §15.1).
    #[serde(default)]
    pub tips: BTreeMap<String, String>,
    /// Our messages that vanished from the remote before a receipt, by id:
    /// when it was noticed and whether they could be pushed again.
    #[serde(default)]
    pub lost: BTreeMap<String, Lost>,
    /// Attachment blobs refused, as `<name> <sha256 of the content>`:
    /// reported once, not on every sync.
    #[serde(default)]
    pub blobs_refused: BTreeSet<String>,
}

/// One line of the journal: one change to [`SyncState`] (all but the
/// tips, which live in `tips.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Record {
    Applied(String, Applied),
    Pushed(String, PushRecord),
    ReceiptSent(String),
    Receipt(Receipt),
    Quarantined(String),
    Lost(String, Lost),
    /// The whole (bounded) set: it shrinks as well as grows.
    BlobsRefused(BTreeSet<String>),
}

impl SyncState {
    /// Applies one change; the last one for an id wins.
    pub(crate) fn apply(&mut self, record: Record) {
        match record {
            Record::Applied(id, a) => {
                self.applied.insert(id, a);
            }
            Record::Pushed(id, p) => {
                self.pushed.insert(id, p);
            }
            Record::ReceiptSent(id) => {
                self.receipts_sent.insert(id);
            }
            Record::Receipt(r) => {
                self.receipts.insert(r.message_id.clone(), r);
            }
            Record::Quarantined(id) => {
                self.quarantined.insert(id);
            }
            Record::Lost(id, l) => {
                self.lost.insert(id, l);
            }
            Record::BlobsRefused(set) => self.blobs_refused = set,
        }
    }

    /// The state as records, one per entry: what a compacted journal holds.
    fn records(&self) -> Vec<Record> {
        let mut out = Vec::with_capacity(self.live_records());
        out.extend(
            self.applied
                .iter()
                .map(|(id, a)| Record::Applied(id.clone(), a.clone())),
        );
        out.extend(
            self.pushed
                .iter()
                .map(|(id, p)| Record::Pushed(id.clone(), p.clone())),
        );
        out.extend(self.receipts_sent.iter().cloned().map(Record::ReceiptSent));
        out.extend(self.receipts.values().cloned().map(Record::Receipt));
        out.extend(self.quarantined.iter().cloned().map(Record::Quarantined));
        out.extend(
            self.lost
                .iter()
                .map(|(id, l)| Record::Lost(id.clone(), l.clone())),
        );
        if !self.blobs_refused.is_empty() {
            out.push(Record::BlobsRefused(self.blobs_refused.clone()));
        }
        out
    }

    fn live_records(&self) -> usize {
        self.applied.len()
            + self.pushed.len()
            + self.receipts_sent.len()
            + self.receipts.len()
            + self.quarantined.len()
            + self.lost.len()
            + usize::from(!self.blobs_refused.is_empty())
    }
}

/// The small file a sync reads first (`tips.json`): enough to tell that
/// nothing changed since the last sync without reading the journal.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    /// The tip each remote ref was left at (absent: no such ref).
    #[serde(default)]
    pub tips: BTreeMap<String, String>,
    /// The remote refs the last sync read or wrote.
    #[serde(default)]
    pub watched: BTreeSet<String>,
    /// The commit of our mail ref whose every file the last sync examined:
    /// the next one reads only what changed after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received: Option<String>,
    /// Mail applied here whose processed receipt is not sent yet, id ->
    /// inbox file; `None` when the last sync had no key to sign them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreceipted: Option<BTreeMap<String, String>>,
    /// The last sync reported nothing a person must look at (what it
    /// reported would be reported again).
    #[serde(default)]
    pub settled: bool,
}

/// Where the sync state lives: the private `sync/`.
pub struct Files {
    dir: PathBuf,
}

/// The state as loaded for a sync that writes it, with what the journal
/// looked like.
pub struct Loaded {
    pub state: SyncState,
    /// Damage found while reading, one sentence each (already skipped).
    pub damage: Vec<String>,
    lines: usize,
    legacy: bool,
}

impl Files {
    pub fn new(dir: &Path) -> Self {
        Files {
            dir: dir.to_path_buf(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// `tips.json`: `Ok(None)` when there is none yet, `Err` with what is
    /// wrong when it cannot be read.
    pub fn head(&self) -> std::result::Result<Option<Head>, String> {
        let path = self.path(HEAD_FILE);
        match fsutil::read_state(&path, fsutil::STATE_LIMIT) {
            Ok(None) => Ok(None),
            Ok(Some(bytes)) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| format!("{} is damaged ({e})", path.display())),
            Err(e) => Err(crate::error::one_line(&e)),
        }
    }

    /// Replaces `tips.json` with `head`.
    pub fn write_head(&self, head: &Head) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(head).expect("the tips always serialise");
        fsutil::replace_atomic(&self.path(HEAD_FILE), &bytes)
    }

    /// Reads `state.json` (if still there), the journal over it, and the
    /// tips. What does not parse is skipped and said in `damage`; a file
    /// that cannot be read at all (a symlink, over its cap) is an error,
    /// since the next write would replace what it holds.
    pub fn load(&self) -> Result<Loaded> {
        let mut damage = Vec::new();
        let legacy_path = self.path(LEGACY_FILE);
        let (mut state, legacy) = match fsutil::read_state(&legacy_path, fsutil::STATE_LIMIT) {
            Ok(None) => (SyncState::default(), false),
            Ok(Some(bytes)) => match serde_json::from_slice::<SyncState>(&bytes) {
                Ok(state) => (state, true),
                Err(e) => {
                    damage.push(format!(
                        "{} is damaged ({e}); not read",
                        legacy_path.display()
                    ));
                    (SyncState::default(), true)
                }
            },
            Err(e) => return Err(e),
        };
        let journal = self.path(JOURNAL_FILE);
        let mut lines = 0;
        match fsutil::read_state(&journal, fsutil::STATE_LIMIT) {
            Ok(None) => {}
            Ok(Some(bytes)) => {
                let mut bad = Vec::new();
                for (n, line) in bytes.split(|b| *b == b'\n').enumerate() {
                    if line.is_empty() {
                        continue;
                    }
                    lines += 1;
                    match serde_json::from_slice::<Record>(line) {
                        Ok(record) => state.apply(record),
                        Err(_) => bad.push(n + 1),
                    }
                }
                if !bad.is_empty() {
                    let shown: Vec<String> = bad.iter().take(5).map(ToString::to_string).collect();
                    damage.push(format!(
                        "{} line(s) of {} could not be read (a write cut short, or damage): line {}{}; skipped, the other {} kept",
                        bad.len(),
                        journal.display(),
                        shown.join(", "),
                        if bad.len() > shown.len() { ", …" } else { "" },
                        lines - bad.len()
                    ));
                }
            }
            Err(e) => return Err(e),
        }
        match self.head() {
            Ok(Some(head)) => state.tips = head.tips,
            // Before the first sync of this version: the tips of state.json.
            Ok(None) => {}
            Err(why) => {
                damage.push(format!(
                    "{why}: the remote's history is checked against nothing this once"
                ));
                state.tips.clear();
            }
        }
        Ok(Loaded {
            state,
            damage,
            lines,
            legacy,
        })
    }
}

/// The changes a sync made and has not written yet, and how the journal
/// on disk stands.
pub struct Journal {
    files: Files,
    unsaved: Vec<Record>,
    lines: usize,
    /// `state.json` is still there, or a line was skipped: the next write
    /// rewrites the journal whole.
    compact: bool,
    legacy: bool,
}

impl Journal {
    pub fn new(files: Files, loaded: &Loaded) -> Self {
        Journal {
            files,
            unsaved: Vec::new(),
            lines: loaded.lines,
            compact: loaded.legacy || !loaded.damage.is_empty(),
            legacy: loaded.legacy,
        }
    }

    pub fn files(&self) -> &Files {
        &self.files
    }

    /// Applies `record` to `state` and keeps it for the next [`Self::save`].
    pub fn note(&mut self, state: &mut SyncState, record: Record) {
        state.apply(record.clone());
        self.unsaved.push(record);
    }

    /// Writes what changed since the last save: appended, one write and
    /// one fsync; or the whole journal, atomically, when it must be
    /// compacted. Nothing is written when nothing changed.
    pub fn save(&mut self, state: &SyncState) -> Result<()> {
        if !self.compact && self.lines + self.unsaved.len() > 2 * state.live_records() + SLACK_LINES
        {
            self.compact = true;
        }
        if self.compact {
            return self.rewrite(state);
        }
        if self.unsaved.is_empty() {
            return Ok(());
        }
        let mut text = Vec::new();
        for record in &self.unsaved {
            serde_json::to_writer(&mut text, record).expect("a record always serialises");
            text.push(b'\n');
        }
        let path = self.files.path(JOURNAL_FILE);
        let created = !path.exists();
        let mut file = fsutil::open_append(&path)?;
        file.write_all(&text)
            .and_then(|()| file.sync_data())
            .map_err(|e| Error::io("write", &path, e))?;
        if created {
            fsutil::sync_dir(&self.files.dir)?;
        }
        self.lines += self.unsaved.len();
        self.unsaved.clear();
        Ok(())
    }

    /// Rewrites the journal from `state`; then `state.json`, folded in,
    /// goes (its tips first moved to `tips.json` if there is none yet).
    fn rewrite(&mut self, state: &SyncState) -> Result<()> {
        let records = state.records();
        let mut text = Vec::new();
        for record in &records {
            serde_json::to_writer(&mut text, record).expect("a record always serialises");
            text.push(b'\n');
        }
        fsutil::replace_atomic(&self.files.path(JOURNAL_FILE), &text)?;
        if self.legacy {
            if !matches!(self.files.head(), Ok(Some(_))) {
                self.files.write_head(&Head {
                    tips: state.tips.clone(),
                    ..Head::default()
                })?;
            }
            let legacy = self.files.path(LEGACY_FILE);
            match std::fs::remove_file(&legacy) {
                Ok(()) => fsutil::sync_dir(&self.files.dir)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io("remove", &legacy, e)),
            }
            self.legacy = false;
        }
        self.lines = records.len();
        self.unsaved.clear();
        self.compact = false;
        Ok(())
    }
}

/// What sync remembers, for readers (`aea status`, `send`): whatever
/// cannot be read counts as not remembered.
pub(crate) fn load_state(mailbox: &Mailbox) -> SyncState {
    let Ok(Some(dir)) = mailbox.private_dir(Private::SyncStore) else {
        return SyncState::default();
    };
    Files::new(&dir).load().map(|l| l.state).unwrap_or_default()
}

/// Whether the message `id` still waits in `outgoing/`.
pub(crate) fn is_queued(mailbox: &Mailbox, id: &str) -> bool {
    mailbox
        .inbox()
        .read_all_in(Private::Outgoing)
        .unwrap_or_default()
        .iter()
        .any(|e| e.valid().is_some_and(|m| m.message_id == id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(from: &str) -> Applied {
        Applied {
            sha256: "00".repeat(32),
            from: from.into(),
            file: format!("message-20260101T000000000Z-from-{from}-00000000.json"),
        }
    }

    fn line(record: &Record) -> String {
        serde_json::to_string(record).unwrap()
    }

    /// A receipt from a newer peer may carry an outcome this version does
    /// not know: it still reads, and what its signature covers is the text
    /// as sent.
    #[test]
    fn receipts_keep_an_unknown_outcome_as_written() {
        let text = r#"{"message_id":"m","state":"processed","by":"bb","at":"2026-11-22T10:00:00.000Z","outcome":"escalated"}"#;
        let receipt: Receipt = serde_json::from_str(text).unwrap();
        assert_eq!(receipt.outcome, OrUnknown::Unknown("escalated".into()));
        assert_eq!(serde_json::to_string(&receipt).unwrap(), text);
        let done: Receipt = serde_json::from_str(&text.replace("escalated", "done")).unwrap();
        assert_eq!(done.outcome, OrUnknown::Known(Outcome::Done));
    }

    #[test]
    fn a_torn_or_garbage_line_loses_only_itself() {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "{}\nnot json at all\n{}\n{}",
            line(&Record::Applied("one".into(), applied("aa"))),
            line(&Record::ReceiptSent("one".into())),
            // The last append, cut short.
            &line(&Record::Applied("two".into(), applied("aa")))[..20],
        );
        std::fs::write(dir.path().join(JOURNAL_FILE), text).unwrap();
        let files = Files::new(dir.path());
        let loaded = files.load().unwrap();
        assert_eq!(
            loaded.state.applied.keys().collect::<Vec<_>>(),
            ["one"],
            "the good lines are kept"
        );
        assert!(loaded.state.receipts_sent.contains("one"));
        assert_eq!(loaded.damage.len(), 1, "{:?}", loaded.damage);
        assert!(
            loaded.damage[0].contains("line 2, 4; skipped, the other 2 kept"),
            "{}",
            loaded.damage[0]
        );

        // The next write drops the damage and keeps the rest.
        let mut journal = Journal::new(Files::new(dir.path()), &loaded);
        let mut state = loaded.state;
        journal.note(&mut state, Record::Quarantined("three".into()));
        journal.save(&state).unwrap();
        let again = files.load().unwrap();
        assert!(again.damage.is_empty(), "{:?}", again.damage);
        assert!(again.state.applied.contains_key("one"));
        assert!(again.state.quarantined.contains("three"));
    }

    #[test]
    fn appends_add_lines_and_the_last_record_wins() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path());
        let loaded = files.load().unwrap();
        let mut journal = Journal::new(Files::new(dir.path()), &loaded);
        let mut state = loaded.state;
        let push = |to: &[&str]| PushRecord {
            to: to.iter().map(ToString::to_string).collect(),
            at: "2026-01-01T00:00:00.000Z".into(),
        };
        journal.note(&mut state, Record::Pushed("m".into(), push(&["bb"])));
        journal.save(&state).unwrap();
        journal.note(&mut state, Record::Pushed("m".into(), push(&["bb", "cc"])));
        journal.save(&state).unwrap();
        journal.save(&state).unwrap();
        let text = std::fs::read_to_string(dir.path().join(JOURNAL_FILE)).unwrap();
        assert_eq!(
            text.lines().count(),
            2,
            "nothing written when nothing changed"
        );
        assert_eq!(files.load().unwrap().state.pushed["m"].to, ["bb", "cc"]);
    }
}
