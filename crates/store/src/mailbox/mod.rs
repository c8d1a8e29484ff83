//! One repository's inbox (SPEC §2): finding it, listing and reading its
//! messages in processing order, delivering into it, and the receiver's
//! records about them — claims, processed records, approvals, deferrals,
//! send records (§5.4, §6).
//!
//! Waiting mail is at the top of the work tree's `.aea/`; everything the
//! receiver decides lives in its private state (see [`crate::layout`]),
//! where git never writes. Processed mail moves there too, so the top of
//! `.aea/` holds what waits. A `.processed/` marker in the work tree that
//! aea did not record (another tool's, or one a pull brought) hides a
//! message from listings and reminders, never approves it.
//!
//! State is bound to content: a processed record and an approval record
//! carry the SHA-256 of the message file they were made for, so a file
//! rewritten afterwards is shown again ("changed after approval", or
//! unprocessed) instead of hiding behind the old decision. State folders
//! are checked before anything in them is read (real directories owned by
//! the owner of `.aea/`, never symlinks), and state files are read through
//! [`fsutil`]'s no-follow, non-blocking, capped reads.

mod accepted;
mod announce;
mod custody;
mod index;
mod listed;
mod message_file;
mod read;
pub use read::{keys_and_names, short_refs};
mod records;
mod sending;
mod vanished;
mod views;

use std::cell::{Cell, OnceCell};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::config::AgentConfig;
use crate::error::{Error, Result};
use crate::fsutil::{self, ReadLimited};
use crate::keyring::{KeyRing, Verification};
use crate::layout::{Layout, Private, Shared};
use crate::message::{Message, parse_time};
use crate::words::{OrUnknown, word_enum};

pub use crate::layout::AEA_DIR;
pub use accepted::is_record as is_accepted_record;
pub use listed::StaleMarker;
pub use message_file::{NOT_A_FILE, message_names_in, read_message_file};
pub use records::{Aside, SeenTurn};
pub use vanished::{Vanished, lost_with_inbox};
pub use views::{Announcements, Approvals, Inbox, Records, Sent};

/// A send holds the send records' lock only to read and replace one record.
const SEND_KEYS_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a send with `--idempotency-key` waits for another send with
/// the same key to end: longer than any delivery takes.
const SEND_KEY_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(120);
/// At most this many collaboration folders are remembered (the oldest are
/// forgotten).
const COLLABS_MAX: usize = 200;

/// Files directly in `.aea/` that the receiver writes and others append
/// to. `--shared` creates them up front: in a sticky folder a sender cannot
/// replace a file the receiver owns, but could plant one that does not
/// exist yet.
pub const TOP_STATE_FILES: [(Shared, u32); 2] = [(Shared::Log, 0o644), (Shared::LogLock, 0o600)];

/// The folders of `.aea/` that hold what the receiver wrote (markers for
/// other readers, its staging, what it moved aside): `0700` in a shared
/// inbox, checked (real directory, owned by the owner of `.aea/`) before
/// anything in them is read.
pub const SHARED_STATE_DIRS: [Shared; 3] = [Shared::Markers, Shared::Staging, Shared::Quarantine];

/// How many inbox files a hook reads at most in one listing (`check
/// --hook`, the git hooks): a few hundred milliseconds, whatever a flood
/// of files holds. The pre-commit gate blocks while files are unread.
pub const HOOK_READ_CAP: usize = 1000;

/// A claim older than this may be taken over (SPEC §5.4).
pub(crate) const CLAIM_STALE_AFTER_MINUTES: i64 = 30;

#[derive(Debug, Clone)]
pub struct Mailbox {
    /// Where its `.aea/` and its private state are.
    layout: Layout,
    /// Largest message file read or written: the receiver's
    /// `limits.max_message_bytes`, fixed when the mailbox is opened so that
    /// every reader and writer of this mailbox enforces the same limit.
    message_limit: u64,
    /// The folder's `agent-config.yaml`, read once when the mailbox is
    /// opened (and again later only if it did not read then).
    config: Rc<OnceCell<AgentConfig>>,
    /// This is the repository aea was pointed at (not a recipient): aea may
    /// create its state folders. In a recipient's mailbox it never does.
    own: bool,
    /// The user who owns `.aea/`: state folders must belong to them.
    owner: Option<u32>,
    /// Verifies senders of inbox messages (SPEC §15.2); forged mail reads
    /// as invalid, so it is never acted on.
    keyring: Option<Rc<KeyRing>>,
    /// How many messages of the inbox the last listing found marked
    /// processed by another tool ([`Mailbox::listed_processed`]).
    listed_processed: Cell<Option<usize>>,
    /// Whether the private state exists and was found sound, once looked
    /// at (its root is checked once per mailbox, its folders every time).
    state_root: Rc<Cell<Option<bool>>>,
    /// At most this many inbox files are read by one listing (hooks: a
    /// flood must not hold a commit or a prompt up); `usize::MAX` reads all.
    read_cap: usize,
    /// How many files the last listing left unread because of the cap.
    listed_unread: Cell<usize>,
    /// Listings leave signatures unchecked, for the caller to check only
    /// the messages it shows ([`Mailbox::verify_entry`]).
    verify_later: Cell<bool>,
    /// What the last listing found of each file's processed marker, so
    /// that the report made from it asks the file system only once.
    listed: std::cell::RefCell<Option<Box<listed::Listed>>>,
    /// Whose actions the audit log records, with the clock: what aea
    /// does on its own while reading (setting a replay aside) is logged
    /// only where this is given.
    auditor: Option<Rc<crate::runtime::Runtime>>,
    /// The user's approvers, against which a person's decision is
    /// verified where signatures are required (SPEC §19). Without one, only
    /// the repository's policy can require them, and no signature verifies.
    signoff: Rc<crate::approvers::SignOff>,
}

/// A message file read from the inbox, valid or not.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    pub path: PathBuf,
    pub message: Result<Message, String>,
    /// SHA-256 (hex) of the bytes `message` was parsed from; `None` when the
    /// file could not be read. Approvals and markers are bound to it.
    pub sha256: Option<String>,
    /// Who sent it, as far as the receiver can tell; `None` outside the
    /// inbox or where no key ring was given. Forged mail is not `Ok`.
    pub verification: Option<Verification>,
    /// Whether `message` and `sha256` are the receiver's copy of another
    /// user's file rather than the file itself (see [`Custody`]).
    pub custody: Custody,
}

/// Custody before decision: in an inbox shared with other OS users a
/// message file belongs to its sender, who can rewrite it in place at any
/// time. So the receiver takes a copy of the bytes the first time it reads
/// one (`check`, a hook, `show`: [`Mailbox::read_listed`]), in its private
/// `custody/`, and from then on the message is that copy: what `show`
/// prints, what `approve` binds and `process` records. A file that holds
/// other bytes later is said to have changed after it was read; its new
/// bytes are never read as the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Custody {
    /// None needed: the receiver's own file, or mail outside the inbox.
    NotNeeded,
    /// Another user's file: the entry is the receiver's copy of it.
    /// `changed`: the file holds other bytes now (or is no longer a
    /// regular file) — its sender rewrote it after the receiver read it.
    Kept { changed: bool },
    /// Another user's file of which no copy could be kept (why): read as
    /// it is, and nothing is decided on it.
    NotKept(String),
}

impl Entry {
    pub fn valid(&self) -> Option<&Message> {
        self.message.as_ref().ok()
    }

    /// What aea's short reference of this file is derived from: the sender
    /// and message id of a valid message (the same for the sender's copy
    /// and every recipient's), else the file name (see [`crate::shortref`]).
    pub fn ref_key(&self) -> String {
        crate::shortref::key(
            self.valid()
                .map(|m| (m.from.agent_id.as_str(), m.message_id.as_str())),
            &self.name,
        )
    }

    /// An entry of file `name` at `path`, as read.
    pub(crate) fn new(
        name: &str,
        path: PathBuf,
        message: Result<Message, String>,
        sha256: Option<String>,
        custody: Custody,
    ) -> Entry {
        Entry {
            name: name.to_string(),
            path,
            message,
            sha256,
            verification: None,
            custody,
        }
    }

    /// The message, or an error naming the file and why it is invalid.
    pub fn require_valid(&self) -> Result<Message> {
        self.message
            .clone()
            .map_err(|reason| Error::InvalidMessage {
                path: self.path.clone(),
                reason,
            })
    }

    /// Whether its file changed after the receiver read it (see [`Custody`]).
    pub fn changed_after_read(&self) -> bool {
        self.custody == Custody::Kept { changed: true }
    }

    /// Refuses to decide on (`command`: approve, reject, process) a message
    /// whose file changed after it was read, or another user's file of
    /// which the receiver holds no copy: the bytes a decision would bind
    /// are not the ones that were read.
    pub fn require_custody(&self, command: &'static str) -> Result<()> {
        match &self.custody {
            Custody::NotNeeded | Custody::Kept { changed: false } => Ok(()),
            Custody::Kept { changed: true } => Err(Error::ChangedAfterRead {
                name: self.name.clone(),
                command,
            }),
            Custody::NotKept(why) => Err(Error::UnsafeState {
                path: self.path.clone(),
                detail: format!(
                    "belongs to another user and aea could not keep its copy of it ({why}); nothing is decided on it"
                ),
            }),
        }
    }
}

word_enum! {
    /// How a message was handled: `aea process --outcome`, kept in its
    /// marker and in the receipt sent back to the sender (SPEC §5.4).
    pub enum Outcome {
        Done = "done",
        Ignored = "ignored",
        Deferred = "deferred",
    }
}

/// How a message was processed (SPEC §5.4): the receiver's record in its
/// private state, and the JSON body of the `.processed/<name>` marker it
/// writes for other readers. Older tools wrote empty markers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Marker {
    pub processed_at: String,
    pub by: String,
    /// An outcome this version does not know (another tool's, a newer
    /// version's) is kept as written: the marker still counts, and its
    /// digest still binds the bytes that were processed.
    pub outcome: OrUnknown<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The message this marker was written for; absent in older markers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// SHA-256 of the file bytes that were processed; absent in older markers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// Whether an inbox message is processed, judged against its current bytes.
#[derive(Debug, Clone)]
pub enum Processed {
    No,
    /// aea processed it: its record covers these bytes (`None`: processed
    /// mail whose record was lost, e.g. to a kill between the two steps).
    Done(Option<Marker>),
    /// A `.processed/` marker aea did not record covers it (another tool's,
    /// an empty one as the bash AEA's `touch` makes, or one git wrote): it
    /// counts as processed for listings and reminders, never as approved.
    Marked(Option<Marker>),
    /// A record or marker exists, but for other bytes: the file was
    /// replaced after it was processed, so it counts as unprocessed again.
    Replaced(Marker),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct ClaimBody {
    claimed_at: String,
    by: String,
    pid: u32,
    /// Host, boot and process start time, so a claim whose process died is
    /// taken over at once rather than after 30 minutes (older claims have
    /// none and go by age).
    #[serde(flatten)]
    holder: crate::liveness::Holder,
}

/// A held claim on a message; released (its file removed) on drop.
#[derive(Debug)]
pub struct Claim {
    path: PathBuf,
    /// Set when this claim replaced a stale one: who had held it.
    pub took_over_from: Option<String>,
}

impl Drop for Claim {
    fn drop(&mut self) {
        // Only inside a real `claims/`: one swapped for a symlink while the
        // claim was held must not make us unlink a file elsewhere.
        let real_dir = self
            .path
            .parent()
            .is_some_and(|d| fsutil::state_dir_exists(d).unwrap_or(false));
        if real_dir {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// A person's decision on a gated message, in the private state's
/// `approvals/<name>.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ApprovalRecord {
    pub message_id: String,
    pub file: String,
    /// `approved` or `rejected`; another word (written by another version)
    /// is kept as found and approves nothing (see [`Mailbox::approval`]).
    pub decision: OrUnknown<ApprovalDecision>,
    /// Git `user.name`, else the OS user.
    pub by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// The OS user who ran the command.
    pub user: String,
    pub at: String,
    /// The rule that gated the message.
    pub rule: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// SHA-256 of the message file the person decided on. A record without
    /// one (written before 0.2) approves nothing; a rejection still holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// An approver's SSHSIG (namespace `aea-approval`) over the decision
    /// (SPEC §19), where signatures are required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

word_enum! {
    /// What a person decided on a gated message (`aea approve`, `aea reject`).
    pub enum ApprovalDecision {
        Approved = "approved",
        Rejected = "rejected",
    }
}

/// A decision already recorded for a message's bytes: decisions are kept
/// as an audit trail and never changed. Carried by
/// [`Error::AlreadyDecided`].
#[derive(Debug)]
pub struct AlreadyDecided {
    /// The message file.
    pub name: String,
    /// What was decided; `None` when the record could not be read (or two
    /// decisions raced).
    pub decision: Option<OrUnknown<ApprovalDecision>>,
    pub by: String,
    pub at: String,
}

impl AlreadyDecided {
    /// File `name` is decided already, as `existing` says (when it reads).
    pub fn by_record(name: &str, existing: Option<ApprovalRecord>) -> Self {
        AlreadyDecided {
            name: name.to_string(),
            decision: existing.as_ref().map(|r| r.decision.clone()),
            by: existing.as_ref().map_or("someone".into(), |r| r.by.clone()),
            at: existing.map_or("an earlier time".into(), |r| r.at),
        }
    }

    /// The decision `err` reports, if it is one.
    pub fn of(err: &Error) -> Option<&AlreadyDecided> {
        match err {
            Error::AlreadyDecided(decided) => decided.downcast_ref(),
            _ => None,
        }
    }
}

impl std::fmt::Display for AlreadyDecided {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let decision = self
            .decision
            .as_ref()
            .map_or_else(|| "decided".to_string(), ToString::to_string);
        write!(
            f,
            "{} was already {decision} by {} at {}",
            self.name, self.by, self.at
        )
    }
}

impl std::error::Error for AlreadyDecided {}

impl From<AlreadyDecided> for Error {
    fn from(decided: AlreadyDecided) -> Error {
        Error::AlreadyDecided(Box::new(decided))
    }
}

word_enum! {
    /// Where this repository holds a message.
    pub enum Held {
        /// Mail to this agent: waiting in the inbox, or processed.
        Inbox = "inbox",
        /// A copy of mail this repository sent (`sent/`, private).
        Sent = "sent",
        /// Moved out of the way by `gc` (`archive/`, private).
        Archive = "archive",
    }
}

word_enum! {
    /// Approval state of a message as `check` shows it.
    pub enum Approval {
        NotNeeded = "not_needed",
        Pending = "pending",
        Approved = "approved",
        Rejected = "rejected",
        /// A person decided on other bytes: the file was rewritten after the
        /// decision. Not approved; the old record is kept.
        ChangedAfterApproval = "changed_after_approval",
        /// Signatures are required and the decision carries no approver's
        /// signature that verifies (SPEC §19): it counts for nothing, and a
        /// person decides again.
        Unverified = "unverified",
    }
}

impl Approval {
    /// Words for people: `changed after approval` rather than the snake case.
    pub fn label(self) -> &'static str {
        match self {
            Approval::ChangedAfterApproval => "changed after approval",
            Approval::Unverified => "not signed by an approver",
            Approval::NotNeeded => "not needed",
            other => other.as_str(),
        }
    }

    /// Whether the message waits for a person's (new) decision.
    pub fn waits(self) -> bool {
        matches!(
            self,
            Approval::Pending | Approval::ChangedAfterApproval | Approval::Unverified
        )
    }
}

/// The inboxes below `start` that the git hooks of its work tree serve
/// (see [`crate::served`]), as paths from `start`.
fn served_below(start: &Path) -> Vec<String> {
    let Ok(start) = fs::canonicalize(start) else {
        return Vec::new();
    };
    let Ok(Some(served)) = crate::served::of(&start) else {
        return Vec::new();
    };
    served
        .inboxes()
        .filter_map(|(_, dir)| Some(dir.strip_prefix(&start).ok()?.display().to_string()))
        .filter(|rel| !rel.is_empty())
        .collect()
}

impl Mailbox {
    /// The mailbox of the repository at `repo`, which must hold a real `.aea/`.
    /// The path is made canonical, so two spellings of one repository
    /// compare equal (sending to oneself is refused by path).
    pub fn at(repo: &Path) -> Result<Self> {
        let dir = repo.join(AEA_DIR);
        match fs::symlink_metadata(&dir) {
            // A path that does not exist at all is said as such, spelled
            // without its `..`: "has no .aea/" would send the person to
            // `aea init` a folder that is not there.
            Err(e)
                if e.kind() == io::ErrorKind::NotFound && fs::symlink_metadata(repo).is_err() =>
            {
                Err(Error::io(
                    "find",
                    fsutil::lexically_normal(repo),
                    io::Error::from(io::ErrorKind::NotFound),
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Error::NotInitialized {
                path: fsutil::lexically_normal(repo),
            }),
            found => {
                fsutil::require_real_dir(&dir)?;
                let owner = found.ok().and_then(|m| fsutil::owner(&m));
                let repo = fs::canonicalize(repo).map_err(|e| Error::io("resolve", repo, e))?;
                let layout = Layout::of(&repo);
                // The commands that need the config say why it does not
                // read; its size limit still holds where it can be found.
                let config = OnceCell::new();
                if let Ok(loaded) = AgentConfig::load_file(&layout.shared(Shared::Config)) {
                    let _ = config.set(loaded);
                }
                let message_limit = config.get().map_or_else(
                    || crate::config::salvage_message_limit(&layout.shared(Shared::Config)),
                    |c| c.limits.message_bytes(),
                );
                Ok(Mailbox {
                    layout,
                    message_limit,
                    config: Rc::new(config),
                    own: false,
                    owner,
                    keyring: None,
                    listed_processed: Cell::new(None),
                    state_root: Rc::new(Cell::new(None)),
                    read_cap: usize::MAX,
                    listed_unread: Cell::new(0),
                    listed: std::cell::RefCell::new(None),
                    verify_later: Cell::new(false),
                    auditor: None,
                    signoff: Rc::default(),
                })
            }
        }
    }

    /// The mailbox of the nearest directory at or above `start` holding `.aea/`.
    pub fn discover(start: &Path) -> Result<Self> {
        let mut current = Some(start);
        while let Some(dir) = current {
            if fs::symlink_metadata(dir.join(AEA_DIR)).is_ok() {
                return Mailbox::at(dir);
            }
            current = dir.parent();
        }
        // Run in the folder that holds the repositories: name them.
        let mut inside: Vec<String> = fs::read_dir(start)
            .into_iter()
            .flatten()
            .filter_map(std::result::Result::ok)
            .filter(|e| fs::symlink_metadata(e.path().join(AEA_DIR)).is_ok_and(|m| m.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        inside.sort();
        // The top of a monorepo: the package inboxes its git hooks serve.
        if inside.is_empty() {
            inside = served_below(start);
        }
        Err(Error::NoRepository {
            start: start.to_path_buf(),
            inside,
        })
    }

    /// Marks this as the repository aea was pointed at.
    #[must_use]
    pub fn owned(mut self) -> Self {
        self.own = true;
        // Any command in this repository sweeps staging leftovers of sends
        // killed mid-way (only a sound staging folder is looked into).
        if let Ok(Some(tmp)) = self.shared_dir(Shared::Staging) {
            fsutil::sweep_staging(&tmp);
        }
        if let Ok(Some(tmp)) = self.private_dir(Private::Tmp) {
            fsutil::sweep_staging(&tmp);
        }
        self
    }

    /// Reads at most `cap` inbox files in a listing; the rest are counted
    /// ([`Mailbox::listed_unread`]) and decide nothing.
    #[must_use]
    pub fn capped(mut self, cap: usize) -> Self {
        self.read_cap = cap;
        self
    }

    /// Logs what aea does on its own while reading this inbox as `rt`'s
    /// user, at `rt`'s time.
    #[must_use]
    pub fn audited_by(mut self, rt: Rc<crate::runtime::Runtime>) -> Self {
        self.auditor = Some(rt);
        self
    }

    /// Verifies a person's decisions against the user's approvers in
    /// `signoff` (SPEC §19).
    #[must_use]
    pub fn signed_off_by(mut self, signoff: Rc<crate::approvers::SignOff>) -> Self {
        self.signoff = signoff;
        self
    }

    /// The user's approvers, as this mailbox verifies decisions.
    pub fn signoff(&self) -> &crate::approvers::SignOff {
        &self.signoff
    }

    /// Whether a person's decision here counts only when an approver
    /// signed it (SPEC §19): the repository's policy or the user requires it.
    pub fn signatures_required(&self) -> bool {
        let repository = self.config().is_ok_and(|c| c.approvals.require_signature);
        self.signoff.required(repository)
    }

    /// Where signatures are required and nothing can be signed (no
    /// approver, or a list that does not verify), why.
    pub fn signatures_unusable(&self) -> Option<String> {
        let repository = self.config().is_ok_and(|c| c.approvals.require_signature);
        self.signoff.unusable(repository)
    }

    /// What a person signs for `record` here: the record's message, bytes,
    /// decision, words and time, and this repository's path — a record
    /// copied into another repository's state does not verify there.
    pub fn decision_bytes(&self, record: &ApprovalRecord) -> Vec<u8> {
        let repository = self.repo().to_string_lossy();
        let decision = record.decision.to_string();
        crate::approvers::Decision::new(
            &repository,
            &record.message_id,
            &record.file,
            record.sha256.as_deref().unwrap_or_default(),
            &decision,
            record.note.as_deref(),
            record.reason.as_deref(),
            &record.at,
        )
        .bytes()
    }

    /// Why the decision `record` does not count here, if it does not:
    /// `None` when no signature is required or an approver's verifies.
    pub fn decision_problem(&self, record: &ApprovalRecord) -> Option<String> {
        if !self.signatures_required() {
            return None;
        }
        self.signoff
            .verify(&self.decision_bytes(record), record.signature.as_deref())
            .err()
    }

    /// Verifies the senders of inbox messages with `keyring` when reading.
    #[must_use]
    pub fn verified_by(mut self, keyring: Rc<KeyRing>) -> Self {
        self.keyring = Some(keyring);
        self
    }

    pub fn repo(&self) -> &Path {
        self.layout.repo()
    }

    /// The work tree's `.aea/`.
    pub fn dir(&self) -> &Path {
        self.layout.inbox()
    }

    /// Where this inbox's files are, in the work tree and in private.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The user who owns `.aea/`.
    pub fn owner(&self) -> Option<u32> {
        self.owner
    }

    /// The mode (and group) new mail gets in this inbox, where it is
    /// shared with other OS users ([`fsutil::MailMode::of_inbox`]): looked
    /// up when mail is written, never on a listing.
    pub fn mail_mode(&self) -> Option<fsutil::MailMode> {
        fs::symlink_metadata(self.dir())
            .ok()
            .as_ref()
            .and_then(fsutil::MailMode::of_inbox)
    }

    /// Largest message file this mailbox reads or writes into its inbox.
    pub fn message_limit(&self) -> u64 {
        self.message_limit
    }

    /// The limit of files in `dir`: the receiver's limit for the inbox and
    /// the processed mail taken from it; for the copies this agent keeps of
    /// what it sent (`sent/`, `outgoing/`) only the ceiling every
    /// receiver's limit lies under — the limit that counts for those is the
    /// recipient's, checked when it is delivered.
    fn limit_for(&self, dir: &Path) -> u64 {
        if dir == self.dir() || self.is_store(dir) {
            self.message_limit
        } else {
            *crate::config::MESSAGE_BYTES_RANGE.end()
        }
    }

    /// Whether `dir` is where processed mail is kept.
    fn is_store(&self, dir: &Path) -> bool {
        dir == self.layout.private(Private::Processed)
    }

    /// The folder's config, as read when the mailbox was opened; if it did
    /// not read then, it is read again (and the error says why not).
    pub fn config(&self) -> Result<&AgentConfig> {
        if let Some(config) = self.config.get() {
            return Ok(config);
        }
        let loaded = AgentConfig::load_file(&self.layout.shared(Shared::Config))?;
        Ok(self.config.get_or_init(|| loaded))
    }

    /// How this folder's log rotates: from the config read when the
    /// mailbox was opened (one that did not read keeps every file).
    pub(crate) fn log_rotation(&self) -> crate::audit::Rotation {
        self.config
            .get()
            .map_or_else(crate::audit::Rotation::default, |c| {
                crate::audit::Rotation::of(&c.limits)
            })
    }

    /// Appends `event` to this folder's log, without reading its config
    /// again.
    pub fn log(&self, event: &crate::audit::Event) -> Result<()> {
        crate::audit::append_rotating(self.dir(), event, self.log_rotation())
    }

    /// The id of the agent this mailbox belongs to.
    pub fn agent_id(&self) -> Result<String> {
        Ok(self
            .config()?
            .require_id(&self.layout.shared(Shared::Config))?
            .to_string())
    }

    /// Whether the private state exists and is the receiver's own: checked
    /// once per mailbox. For a recipient's mailbox (another user's, maybe)
    /// a state that cannot be looked at counts as absent.
    fn state_root(&self) -> Result<bool> {
        if let Some(known) = self.state_root.get() {
            return Ok(known);
        }
        let exists = match self.layout.state_exists(self.owner) {
            Ok(exists) => exists,
            Err(e) if self.own => return Err(e),
            Err(_) => false,
        };
        self.state_root.set(Some(exists));
        Ok(exists)
    }

    /// Creates the private state if it is missing (the receiver only).
    pub fn ensure_state(&self) -> Result<()> {
        if self.state_root()? {
            return Ok(());
        }
        if !self.own {
            return Err(Error::UnsafeState {
                path: self.layout.state().to_path_buf(),
                detail: "is another repository's private state; aea never creates it".into(),
            });
        }
        self.layout.ensure_state(self.owner)?;
        self.state_root.set(Some(true));
        Ok(())
    }

    /// Private folder `entry`, checked before anything in it is read or
    /// trusted; `None` when it (or the private state) does not exist yet.
    pub fn private_dir(&self, entry: Private) -> Result<Option<PathBuf>> {
        if !self.state_root()? {
            return Ok(None);
        }
        let path = self.layout.private(entry);
        match fsutil::check_private_dir(&path, self.owner) {
            Ok(found) => Ok(found.then_some(path)),
            Err(e) if self.own => Err(e),
            Err(_) => Ok(None),
        }
    }

    /// Private folder `entry`, created `0700` (with the private state)
    /// when missing, then checked. Only in the receiver's own mailbox.
    pub fn make_private_dir(&self, entry: Private) -> Result<PathBuf> {
        self.ensure_state()?;
        let path = self.layout.private(entry);
        fsutil::ensure_state_dir(&path)?;
        fsutil::check_private_dir(&path, self.owner)?;
        Ok(path)
    }

    /// A file of the private state (`entry` names a file, not a folder),
    /// with the private state made first.
    pub fn private_file(&self, entry: Private) -> Result<PathBuf> {
        self.ensure_state()?;
        Ok(self.layout.private(entry))
    }

    /// Folder `entry` of `.aea/` that holds what the receiver wrote,
    /// checked like a state folder; `None` when it does not exist.
    pub fn shared_dir(&self, entry: Shared) -> Result<Option<PathBuf>> {
        let path = self.layout.shared(entry);
        Ok(fsutil::check_state_dir(&path, self.owner)?.then_some(path))
    }

    /// Folder `entry` of `.aea/`, created `0700` when missing, then checked.
    pub fn make_shared_dir(&self, entry: Shared) -> Result<PathBuf> {
        let path = self.layout.shared(entry);
        fsutil::ensure_state_dir(&path)?;
        fsutil::check_state_dir(&path, self.owner)?;
        Ok(path)
    }

    /// Checks every state folder that exists, in `.aea/` and in private
    /// (symlinks, special files, owners, modes): the error a command should
    /// stop on.
    pub fn check_state(&self) -> Result<()> {
        for entry in SHARED_STATE_DIRS {
            self.shared_dir(entry)?;
        }
        // `custody/` is checked each time it is read, only where the inbox
        // holds another user's file: a listing of an inbox that is not
        // shared does not look for it.
        for entry in Private::FOLDERS {
            if entry != Private::Custody {
                self.private_dir(entry)?;
            }
        }
        Ok(())
    }

    /// The folder of what the receiver remembers of this inbox
    /// ([`crate::seen`]), created when missing: only in the inbox aea was
    /// pointed at, and only a sound one.
    pub fn seen_dir(&self) -> Option<PathBuf> {
        if !self.own {
            return None;
        }
        self.make_private_dir(Private::Seen).ok()
    }
}

/// Moves `from` into `dir` as `name`, or `name.N` if that is taken, never
/// replacing an existing file: in one atomic rename where the file system
/// offers one that does not replace (Linux `RENAME_NOREPLACE`), so a kill
/// never leaves the file in both places; else by a link, then an unlink.
/// `None` when `from` is gone: another process moved it first.
///
/// Two processes moving one file at once (two gc runs, gc and
/// `quarantine`) must not leave two copies: a taken name that already is
/// `from` (same device and inode: the other process linked it a moment
/// ago) means the file is moved, so this one only drops its own name for
/// it and reports `None`; a new `name.N` is taken only for another file.
fn move_no_replace(from: &Path, dir: &Path, name: &str) -> Result<Option<PathBuf>> {
    let identity = |path: &Path| fs::symlink_metadata(path).map(|m| fsutil::identity(&m));
    let mut atomic = true;
    for n in 0..1000 {
        let target = if n == 0 {
            dir.join(name)
        } else {
            dir.join(format!("{name}.{n}"))
        };
        // One atomic step where the file system has it: a kill never
        // leaves the file in both places.
        if atomic {
            match fsutil::rename_no_replace(from, &target) {
                Ok(true) => return Ok(Some(target)),
                Ok(false) => atomic = false,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                // Taken: by another file, or by this one linked there by an
                // aea that moves in two steps (judged below, as ever).
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(Error::io("move", from, e)),
            }
        }
        let linked = if atomic {
            Err(io::Error::from(io::ErrorKind::AlreadyExists))
        } else {
            fs::hard_link(from, &target)
        };
        match linked {
            Ok(()) => {
                return match fs::remove_file(from) {
                    Ok(()) => Ok(Some(target)),
                    // The other mover linked it too and unlinked it first;
                    // it found our link (same inode) and left it: ours.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Some(target)),
                    Err(e) => Err(Error::io("remove", from, e)),
                };
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                match (identity(from), identity(&target)) {
                    (Err(e), _) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                    (Ok(a), Ok(b)) if a == b => {
                        return match fs::remove_file(from) {
                            Ok(()) => Ok(None),
                            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                            Err(e) => Err(Error::io("remove", from, e)),
                        };
                    }
                    _ => {}
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("move", from, e)),
        }
    }
    Err(Error::NoFreeName {
        dir: dir.to_path_buf(),
    })
}

/// [`move_no_replace`] of a file that must still be there.
fn move_present(from: &Path, dir: &Path, name: &str) -> Result<PathBuf> {
    move_no_replace(from, dir, name)?
        .ok_or_else(|| Error::io("move", from, io::Error::from(io::ErrorKind::NotFound)))
}

/// Moves message file `from` into `dir` as `name` (or `name.N`), like
/// [`move_no_replace`]; where `dir` is on another file system (the
/// private state of an inbox outside git lives in the user's state dir),
/// or the file is another user's that the kernel will not let us link,
/// the file is copied through `staging` there, flushed, linked into place
/// without replacing anything, and only then removed from where it was.
/// A file over `limit`, or not a regular file, is not copied: an error
/// says so and it stays where it is.
///
/// With `owner` set, a file another user owns is copied too, never linked:
/// in an inbox shared with other OS users a sender may keep a hard link to
/// the file it delivered, and rewrite it in the receiver's store.
fn move_to(
    from: &Path,
    dir: &Path,
    name: &str,
    staging: &Path,
    limit: u64,
    owner: Option<u32>,
) -> Result<Option<PathBuf>> {
    let theirs = owner.is_some_and(|o| {
        fs::symlink_metadata(from)
            .ok()
            .and_then(|m| fsutil::owner(&m))
            .is_some_and(|u| u != o)
    });
    if !theirs {
        match move_no_replace(from, dir, name) {
            // Another file system, or another user's file that the kernel
            // will not let us link (`protected_hardlinks`): copied below.
            Err(Error::Io { source, .. })
                if matches!(source.raw_os_error(), Some(libc::EXDEV | libc::EPERM)) => {}
            other => return other,
        }
    }
    let bytes = match fsutil::read_limited(from, limit) {
        Ok(bytes) => bytes,
        Err(ReadLimited::Io(e)) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into_error(from, limit)),
    };
    for n in 0..1000 {
        let target = if n == 0 {
            dir.join(name)
        } else {
            dir.join(format!("{name}.{n}"))
        };
        if fsutil::create_exclusive_whole_via(staging, &target, &bytes)? {
            fsutil::sync_dir(dir)?;
            return match fs::remove_file(from) {
                Ok(()) => Ok(Some(target)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Some(target)),
                Err(e) => Err(Error::io("remove", from, e)),
            };
        }
    }
    Err(Error::NoFreeName {
        dir: dir.to_path_buf(),
    })
}

/// Whether `entry` is a copy the bash AEA kept of mail it sent: its
/// `aea-send.sh` writes each message into its own `.aea/` before copying it
/// to the recipient (openSVM/aea), under the inbox's naming. Such a file
/// is from us to someone else, or (unreadable) named
/// `message-<YYYYMMDDTHHMMSSZ>-from-<us>.json`; it is not incoming mail.
/// Mail an agent sends itself (to us) stays incoming.
fn is_own_copy(entry: &Entry, us: &str) -> bool {
    match &entry.message {
        Ok(m) => m.from.agent_id == us && m.to.agent_id != us,
        Err(_) => entry
            .name
            .strip_prefix("message-")
            .and_then(|rest| rest.split_once("-from-"))
            .is_some_and(|(stamp, tail)| {
                stamp.len() == 16
                    && stamp.as_bytes()[8] == b'T'
                    && stamp.ends_with('Z')
                    && tail.strip_suffix(".json") == Some(us)
            }),
    }
}

/// Processing order of SPEC §5.1: priority, then type, then age; invalid
/// files after the valid ones.
pub fn sort_for_processing(entries: &mut [Entry]) {
    entries.sort_by(|a, b| match (&a.message, &b.message) {
        (Ok(x), Ok(y)) => (x.priority, x.message_type, x.sent_at(), &a.name).cmp(&(
            y.priority,
            y.message_type,
            y.sent_at(),
            &b.name,
        )),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(_), Err(_)) => a.name.cmp(&b.name),
    });
}

fn describe_claim(bytes: &[u8]) -> String {
    match serde_json::from_slice::<ClaimBody>(bytes) {
        Ok(c) => format!("{} (pid {}, since {})", c.by, c.pid, c.claimed_at),
        Err(_) => "another process".into(),
    }
}

/// A claim is stale when its process is known to be gone (same host, see
/// [`crate::liveness`]) or when it is older than
/// [`CLAIM_STALE_AFTER_MINUTES`] (a hung process, or one on another host).
pub(crate) fn claim_is_stale(path: &Path, body: &[u8], now: DateTime<Utc>) -> bool {
    let parsed = serde_json::from_slice::<ClaimBody>(body).ok();
    if parsed
        .as_ref()
        .is_some_and(|c| c.holder.alive(c.pid) == crate::liveness::Alive::Gone)
    {
        return true;
    }
    // A claim that does not read was cut short by an older aea killed
    // while writing it (aea now links claims into place whole): a writer
    // finishes in microseconds, so after a minute it is a leftover.
    if parsed.is_none() {
        return fs::symlink_metadata(path)
            .ok()
            .and_then(|m| m.modified().ok())
            .is_some_and(|t| now - DateTime::<Utc>::from(t) > Duration::minutes(1));
    }
    let claimed_at = parsed.and_then(|c| parse_time(&c.claimed_at)).or_else(|| {
        let modified = fs::symlink_metadata(path).ok()?.modified().ok()?;
        Some(DateTime::<Utc>::from(modified))
    });
    claimed_at.is_some_and(|t| now - t > Duration::minutes(CLAIM_STALE_AFTER_MINUTES))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As many collaborations as are kept, each at a long path: the lists
    /// still read back whole (their reader's cap once stood below what
    /// their writer wrote, and the monitor then went quiet for good), and
    /// mail naming folders never pushes the agent's own out.
    #[test]
    fn a_full_list_of_long_collaboration_paths_reads_back() {
        let repo = tempfile::tempdir().unwrap();
        fs::create_dir(repo.path().join(AEA_DIR)).unwrap();
        fs::create_dir(repo.path().join(".git")).unwrap();
        let mailbox = Mailbox::at(repo.path()).unwrap().owned();
        let long = "x".repeat(1000);
        let folder = |i: usize| PathBuf::from(format!("/srv/{long}/collab-{i}"));
        for i in 0..COLLABS_MAX {
            mailbox.records().remember_collab(&folder(i)).unwrap();
        }
        let known = mailbox.records().collabs().unwrap();
        assert_eq!(known.len(), COLLABS_MAX);
        mailbox
            .records()
            .remember_mailed_collab(&folder(COLLABS_MAX))
            .unwrap();
        assert_eq!(mailbox.records().collabs().unwrap(), known);
        let turns: std::collections::BTreeMap<PathBuf, SeenTurn> = known
            .iter()
            .map(|path| {
                let seen = SeenTurn {
                    event: Some("e".repeat(64)),
                    waiting: true,
                    noticed: Some("n".repeat(64)),
                };
                (path.clone(), seen)
            })
            .collect();
        mailbox.records().set_collab_turns(&turns).unwrap();
        assert_eq!(mailbox.records().collab_turns().unwrap(), turns);
    }

    /// A record whose decision is a word this version does not know, made
    /// for the file's current bytes: it still reads, and never approves.
    #[test]
    fn an_unknown_decision_reads_and_never_approves() {
        let repo = tempfile::tempdir().unwrap();
        fs::create_dir(repo.path().join(AEA_DIR)).unwrap();
        fs::create_dir(repo.path().join(".git")).unwrap();
        let mailbox = Mailbox::at(repo.path()).unwrap().owned();
        let name = "message-20250101T000000Z-from-a.json";
        fs::write(mailbox.dir().join(name), b"{}").unwrap();
        let entry = mailbox.inbox().read(name);
        let sha256 = entry.sha256.clone().expect("a readable file has a digest");
        let record = |decision: &str| {
            serde_json::json!({
                "message_id": "m", "file": name, "decision": decision, "by": "p",
                "user": "p", "at": "2025-01-01T00:00:00Z", "rule": "r", "sha256": sha256,
            })
        };
        let approvals = mailbox.make_private_dir(Private::Approvals).unwrap();
        let path = approvals.join(format!("{name}.json"));

        fs::write(&path, record("approved").to_string()).unwrap();
        assert_eq!(
            mailbox.approvals().approval(&entry, true),
            Approval::Approved
        );

        fs::write(&path, record("approved_later").to_string()).unwrap();
        let read = mailbox
            .approvals()
            .approval_record(name)
            .expect("an unknown word still reads");
        assert_eq!(read.decision, OrUnknown::Unknown("approved_later".into()));
        assert_eq!(read.decision.to_string(), "approved_later");
        assert_eq!(
            mailbox.approvals().approval(&entry, true),
            Approval::Rejected
        );
        assert!(!mailbox.approvals().approval(&entry, true).waits());
    }
}
