//! One repository's `.aea/` folder (SPEC §2): finding it, listing and reading
//! its messages in processing order, delivering into it, claims and
//! processed markers (§5.4). All writes stay inside `.aea/`.
//!
//! State is bound to content: a processed marker and an approval record
//! carry the SHA-256 of the message file they were made for, so a file
//! rewritten afterwards is shown again ("changed after approval", or
//! unprocessed) instead of hiding behind the old decision. State folders
//! are checked before anything in them is read (real directories owned by
//! the owner of `.aea/`, never symlinks), and state files are read through
//! [`fsutil`]'s no-follow, non-blocking, capped reads.

use std::cell::OnceCell;
use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::config::AgentConfig;
use crate::error::{Error, Result};
use crate::fsutil::{self, ReadLimited};
use crate::identity::{KeyRing, Verification};
use crate::message::{self, Message, format_time, parse_time};
use crate::runtime::Runtime;
use crate::words::{OrUnknown, word_enum};

pub const AEA_DIR: &str = ".aea";
pub const PROCESSED_DIR: &str = ".processed";
/// Markers of mail put off with `process --outcome deferred`: still
/// unprocessed, listed after new mail, finished later with `process`.
pub const DEFERRED_DIR: &str = ".deferred";
/// Keys of sends made once (`send --idempotency-key`): key digest -> the
/// message id, recorded before delivery.
pub const SEND_KEYS_DIR: &str = ".sent-keys";
/// A send holds `.sent-keys/.lock` only to read and replace one record.
const SEND_KEYS_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a send with `--idempotency-key` waits for another send with
/// the same key to end: longer than any delivery takes.
const SEND_KEY_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(120);
pub const CLAIMS_DIR: &str = ".claims";
/// What each agent-harness session was told (`aea check --hook`).
pub const ANNOUNCED_DIR: &str = ".announced";
pub const APPROVALS_DIR: &str = ".approvals";
/// Where `aea bridge` keeps, per imported message, the file it came from
/// (`<message id>.json`), so that processing it here completes the other
/// side.
pub const BRIDGED_DIR: &str = ".bridged";
pub const SENT_DIR: &str = "sent";
pub const TMP_DIR: &str = ".tmp";
pub const QUARANTINE_DIR: &str = ".quarantine";
pub const ARCHIVE_DIR: &str = ".archive";
/// The collaboration folders this agent started, acted in or was mailed
/// about (`aea collab list`): a JSON list of absolute paths.
pub const COLLABS_FILE: &str = ".collabs.json";
/// At most this many folders are remembered (the oldest are forgotten).
const COLLABS_MAX: usize = 200;
pub const PROMPTS_DIR: &str = "prompts";
/// Mail waiting for `aea sync` to carry it to another machine.
pub const OUTGOING_DIR: &str = "outgoing";
/// Held by `aea monitor` for its whole life: its liveness is this lock.
pub const MONITOR_LOCK_FILE: &str = "monitor.lock";

/// Files directly in `.aea/` that hold the receiver's state. `--shared`
/// creates them up front: in a sticky folder a sender cannot replace a file
/// the receiver owns, but could plant one that does not exist yet.
pub const TOP_STATE_FILES: [(&str, u32); 7] = [
    (crate::audit::LOG_FILE, 0o644),
    (crate::audit::LOCK_FILE, 0o600),
    (crate::housekeeping::LOCK_FILE, 0o600),
    (crate::sync::LOCK_FILE, 0o600),
    (MONITOR_LOCK_FILE, 0o600),
    (".announced-agent.json", 0o600),
    (".announced-git.json", 0o600),
];
/// Which message files a channel (agent-harness hooks, git hooks) has
/// already announced (SPEC §5.1): `.announced-<channel>.json`.
fn announced_file(channel: &str) -> String {
    format!(".announced-{channel}.json")
}

/// Every folder holding the receiver's own state: created `0700`, checked
/// (real directory, owned by the owner of `.aea/`) before it is trusted.
pub const STATE_DIRS: [&str; 15] = [
    PROCESSED_DIR,
    BRIDGED_DIR,
    DEFERRED_DIR,
    SEND_KEYS_DIR,
    ANNOUNCED_DIR,
    CLAIMS_DIR,
    APPROVALS_DIR,
    QUARANTINE_DIR,
    ARCHIVE_DIR,
    TMP_DIR,
    SENT_DIR,
    OUTGOING_DIR,
    ".sync",
    crate::attachments::DIR,
    crate::seen::DIR,
];

/// Every folder of the layout, created by `init` and repaired by it.
pub const LAYOUT_DIRS: [&str; 9] = [
    PROCESSED_DIR,
    DEFERRED_DIR,
    CLAIMS_DIR,
    APPROVALS_DIR,
    SENT_DIR,
    TMP_DIR,
    QUARANTINE_DIR,
    ARCHIVE_DIR,
    PROMPTS_DIR,
];

/// A claim older than this may be taken over (SPEC §5.4).
pub const CLAIM_STALE_AFTER_MINUTES: i64 = 30;

#[derive(Debug, Clone)]
pub struct Mailbox {
    repo: PathBuf,
    dir: PathBuf,
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
    /// How many processed markers the last listing of the unprocessed
    /// mail found ([`Mailbox::listed_processed`]).
    listed_processed: std::cell::Cell<Option<usize>>,
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
}

impl Entry {
    pub fn valid(&self) -> Option<&Message> {
        self.message.as_ref().ok()
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

/// The JSON body of `.processed/<name>` (SPEC §5.4). Older tools wrote empty
/// files; those still count as processed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
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
    /// A marker covers the file (`None`: an empty or older marker).
    Done(Option<Marker>),
    /// A marker exists, but for other bytes: the file was replaced after it
    /// was processed, so it counts as unprocessed again.
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
        // Only inside a real `.claims/`: one swapped for a symlink while the
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

/// A person's decision on a gated message: `.approvals/<name>.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
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
}

word_enum! {
    /// What a person decided on a gated message (`aea approve`, `aea reject`).
    pub enum ApprovalDecision {
        Approved = "approved",
        Rejected = "rejected",
    }
}

word_enum! {
    /// Why an unprocessed message has a processed marker anyway
    /// ([`Mailbox::stale_marker`]). The words are sentences: `check --json`
    /// has always printed them.
    pub enum StaleMarker {
        /// The marker is a symlink, folder or special file; it is ignored.
        NotAFile = "its processed marker is not a regular file; ignored",
        /// The marker was written for other bytes.
        Replaced = "the file was replaced after it was processed; shown again",
    }
}

word_enum! {
    /// Where this repository holds a message.
    pub enum Held {
        /// The inbox: mail to this agent.
        Inbox = "inbox",
        /// A copy of mail this repository sent (`.aea/sent/`).
        Sent = "sent",
        /// Moved out of the inbox by `gc` (`.aea/.archive/`).
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
    }
}

impl Approval {
    /// Words for people: `changed after approval` rather than the snake case.
    pub fn label(self) -> &'static str {
        match self {
            Approval::ChangedAfterApproval => "changed after approval",
            Approval::NotNeeded => "not needed",
            other => other.as_str(),
        }
    }

    /// Whether the message waits for a person's (new) decision.
    pub fn waits(self) -> bool {
        matches!(self, Approval::Pending | Approval::ChangedAfterApproval)
    }
}

impl Mailbox {
    /// The mailbox of the repository at `repo`, which must hold a real `.aea/`.
    /// The path is made canonical, so two spellings of one repository
    /// compare equal (sending to oneself is refused by path).
    pub fn at(repo: &Path) -> Result<Self> {
        let dir = repo.join(AEA_DIR);
        match fs::symlink_metadata(&dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Error::NotInitialized {
                path: repo.to_path_buf(),
            }),
            found => {
                fsutil::require_real_dir(&dir)?;
                let owner = found.ok().and_then(|m| fsutil::owner(&m));
                let repo = fs::canonicalize(repo).map_err(|e| Error::io("resolve", repo, e))?;
                let dir = repo.join(AEA_DIR);
                // The commands that need the config say why it does not
                // read; its size limit still holds where it can be found.
                let config = OnceCell::new();
                if let Ok(loaded) = AgentConfig::load(&dir) {
                    let _ = config.set(loaded);
                }
                let message_limit = config.get().map_or_else(
                    || crate::config::salvage_message_limit(&dir),
                    |c| c.limits.message_bytes(),
                );
                Ok(Mailbox {
                    dir,
                    repo,
                    message_limit,
                    config: Rc::new(config),
                    own: false,
                    owner,
                    keyring: None,
                    listed_processed: std::cell::Cell::new(None),
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
        Err(Error::NoRepository {
            start: start.to_path_buf(),
        })
    }

    /// Marks this as the repository aea was pointed at.
    #[must_use]
    pub fn owned(mut self) -> Self {
        self.own = true;
        // Any command in this repository sweeps staging leftovers of sends
        // killed mid-way (only a sound `.tmp/` is looked into).
        if let Ok(Some(tmp)) = self.state_dir(TMP_DIR) {
            fsutil::sweep_staging(&tmp);
        }
        self
    }

    /// Verifies the senders of inbox messages with `keyring` when reading.
    #[must_use]
    pub fn verified_by(mut self, keyring: Rc<KeyRing>) -> Self {
        self.keyring = Some(keyring);
        self
    }

    pub fn repo(&self) -> &Path {
        &self.repo
    }

    /// Largest message file this mailbox reads or writes into its inbox.
    pub fn message_limit(&self) -> u64 {
        self.message_limit
    }

    /// The limit of files in `dir`: the receiver's limit for the inbox; for
    /// the copies this agent keeps of what it sent (`sent/`, `outgoing/`)
    /// only the ceiling every receiver's limit lies under — the limit that
    /// counts for those is the recipient's, checked when it is delivered.
    fn limit_for(&self, dir: &Path) -> u64 {
        if dir == self.dir {
            self.message_limit
        } else {
            *crate::config::MESSAGE_BYTES_RANGE.end()
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The folder's config, as read when the mailbox was opened; if it did
    /// not read then, it is read again (and the error says why not).
    pub fn config(&self) -> Result<&AgentConfig> {
        if let Some(config) = self.config.get() {
            return Ok(config);
        }
        let loaded = AgentConfig::load(&self.dir)?;
        Ok(self.config.get_or_init(|| loaded))
    }

    /// How this folder's log rotates: from the config read when the
    /// mailbox was opened (one that did not read keeps every file).
    pub fn log_rotation(&self) -> crate::audit::Rotation {
        self.config
            .get()
            .map_or_else(crate::audit::Rotation::default, |c| {
                crate::audit::Rotation::of(&c.limits)
            })
    }

    /// Appends `event` to this folder's log, without reading its config
    /// again.
    pub fn log(&self, event: &crate::audit::Event) -> Result<()> {
        crate::audit::append_rotating(&self.dir, event, self.log_rotation())
    }

    /// The id of the agent this mailbox belongs to.
    pub fn agent_id(&self) -> Result<String> {
        Ok(self.config()?.require_id(&self.dir)?.to_string())
    }

    fn sub(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// State folder `name`, checked before anything in it is read or
    /// trusted; `None` when it does not exist yet.
    fn state_dir(&self, name: &str) -> Result<Option<PathBuf>> {
        let path = self.sub(name);
        Ok(fsutil::check_state_dir(&path, self.owner)?.then_some(path))
    }

    /// State folder `name`, created `0700` when missing, then checked.
    fn make_state_dir(&self, name: &str) -> Result<PathBuf> {
        let path = self.sub(name);
        fsutil::ensure_state_dir(&path)?;
        fsutil::check_state_dir(&path, self.owner)?;
        Ok(path)
    }

    /// The collaboration folders remembered in [`COLLABS_FILE`]; an
    /// unreadable or damaged file is an error, a missing one an empty list.
    pub fn collabs(&self) -> Result<Vec<PathBuf>> {
        let path = self.dir.join(COLLABS_FILE);
        let Some(bytes) = fsutil::read_state(&path, fsutil::SMALL_STATE_LIMIT)? else {
            return Ok(Vec::new());
        };
        serde_json::from_slice::<Vec<PathBuf>>(&bytes).map_err(|e| Error::UnsafeState {
            path,
            detail: format!("not a JSON list of folders: {e}"),
        })
    }

    /// Remembers collaboration folder `folder` (absolute) for `aea collab
    /// list`, under `.tmp/`'s staging; a folder known already is kept once.
    pub fn remember_collab(&self, folder: &Path) -> Result<()> {
        let tmp = self.make_state_dir(TMP_DIR)?;
        let _lock = fsutil::lock(&tmp.join("collabs.lock"))?;
        let mut known = self.collabs().unwrap_or_default();
        if known.iter().any(|k| k == folder) {
            return Ok(());
        }
        known.push(folder.to_path_buf());
        if known.len() > COLLABS_MAX {
            known.drain(..known.len() - COLLABS_MAX);
        }
        let text = serde_json::to_string_pretty(&known).expect("paths serialise");
        fsutil::replace_atomic_via(&tmp, &self.dir.join(COLLABS_FILE), text.as_bytes())
    }

    /// Checks every state folder that exists (symlinks, special files,
    /// owners, modes): the error a command should stop on.
    pub fn check_state(&self) -> Result<()> {
        for name in STATE_DIRS {
            self.state_dir(name)?;
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
        self.make_state_dir(crate::seen::DIR).ok()
    }

    /// Stamps what listing the unprocessed mail reads besides the message
    /// files: the inbox and the state folders that hide, defer or approve
    /// mail, the config, and the bash AEA's readers.
    pub fn watch_listing(&self, watched: &mut crate::seen::Watched) {
        watched.add(self.dir.clone());
        for sub in [PROCESSED_DIR, DEFERRED_DIR, APPROVALS_DIR] {
            watched.add(self.sub(sub));
        }
        watched.add(self.sub(crate::config::FILE_NAME));
        watched.add(crate::harness::shims::readers_path(&self.dir));
    }

    /// How many processed markers [`Mailbox::unprocessed`] found, if it
    /// listed: what deciding on housekeeping needs, at no extra cost.
    pub fn listed_processed(&self) -> Option<usize> {
        self.listed_processed.get()
    }

    /// Names of the message files in the inbox, unsorted.
    pub fn message_names(&self) -> Result<Vec<String>> {
        names_of_messages(&self.dir)
    }

    /// Names of the processed markers, whatever wrote them.
    pub fn processed_names(&self) -> Result<HashSet<String>> {
        self.names_in(PROCESSED_DIR)
    }

    /// Names in state folder `sub`. The folder is checked before and after
    /// listing: a folder swapped for a symlink meanwhile is an error, not
    /// a list of someone else's names.
    fn names_in(&self, sub: &str) -> Result<HashSet<String>> {
        let Some(dir) = self.state_dir(sub)? else {
            return Ok(HashSet::new());
        };
        let look = |dir: &Path| {
            fs::symlink_metadata(dir)
                .map(|m| fsutil::identity(&m))
                .map_err(|e| Error::io("inspect", dir, e))
        };
        let before = look(&dir)?;
        let entries = fs::read_dir(&dir).map_err(|e| Error::io("list", &dir, e))?;
        let mut names = HashSet::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io("list", &dir, e))?;
            // Only regular files count (the type comes with the listing, no
            // stat): a FIFO or symlink put there is not a marker.
            if !entry.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            if let Ok(name) = entry.file_name().into_string() {
                names.insert(name);
            }
        }
        if self.state_dir(sub)?.is_none() || look(&dir)? != before {
            return Err(Error::UnsafeState {
                path: dir,
                detail: "was replaced while it was being read".into(),
            });
        }
        Ok(names)
    }

    /// Whether inbox message `name` is processed (a marker covers its
    /// current bytes). Errors count as not processed.
    pub fn is_processed(&self, name: &str) -> bool {
        matches!(self.processed(&self.read(name)), Ok(Processed::Done(_)))
    }

    /// Whether something is in the place of `name`'s processed marker: one
    /// `stat`, no judgement (see [`Self::is_processed`]).
    pub fn has_marker(&self, name: &str) -> bool {
        fs::symlink_metadata(self.sub(PROCESSED_DIR).join(name)).is_ok()
    }

    /// The marker of `name`, if it is a JSON marker in a sound folder.
    pub fn marker(&self, name: &str) -> Option<Marker> {
        let dir = self.state_dir(PROCESSED_DIR).ok()??;
        let bytes = fsutil::read_state(&dir.join(name), fsutil::SMALL_STATE_LIMIT).ok()??;
        serde_json::from_slice(&bytes).ok()
    }

    /// Whether `entry` is processed, judged against its current bytes.
    /// A marker that is a symlink or special file, or lives in an unsound
    /// folder, is an error.
    pub fn processed(&self, entry: &Entry) -> Result<Processed> {
        let Some(dir) = self.state_dir(PROCESSED_DIR)? else {
            return Ok(Processed::No);
        };
        let Some(bytes) = fsutil::read_state(&dir.join(&entry.name), fsutil::SMALL_STATE_LIMIT)?
        else {
            return Ok(Processed::No);
        };
        // Older tools wrote empty (or non-JSON) markers: they still count,
        // with nothing to compare.
        let Ok(marker) = serde_json::from_slice::<Marker>(&bytes) else {
            return Ok(Processed::Done(None));
        };
        Ok(match (&marker.sha256, &entry.sha256) {
            (Some(recorded), Some(current)) if recorded != current => Processed::Replaced(marker),
            _ => Processed::Done(Some(marker)),
        })
    }

    /// Why an unprocessed message has a marker anyway, if it has one: the
    /// marker is not a regular file (ignored), or it was written for other
    /// bytes (the file was replaced after it was processed).
    pub fn stale_marker(&self, entry: &Entry) -> Option<StaleMarker> {
        self.state_dir(PROCESSED_DIR).ok()??;
        let meta = fs::symlink_metadata(self.sub(PROCESSED_DIR).join(&entry.name)).ok()?;
        if !meta.is_file() {
            return Some(StaleMarker::NotAFile);
        }
        matches!(self.processed(entry), Ok(Processed::Replaced(_))).then_some(StaleMarker::Replaced)
    }

    /// Makes the receiver the owner of the bytes it judged, before a
    /// marker or an approval is bound to them: where the file belongs to
    /// another user (a sender in a shared inbox), a copy owned by the
    /// receiver replaces it, so that sender can neither rewrite nor
    /// replace it afterwards (`.aea/` is sticky). The bytes must still be
    /// those of `entry`. Nothing happens to a file the receiver owns.
    pub fn adopt(&self, entry: &Entry) -> Result<()> {
        let path = self.dir.join(&entry.name);
        let file = fsutil::open_read(&path).map_err(|e| e.into_error(&path, self.message_limit))?;
        let meta = file
            .metadata()
            .map_err(|e| Error::io("inspect", &path, e))?;
        if fsutil::owner(&meta) == self.owner {
            return Ok(());
        }
        let bytes = fsutil::read_opened(file, self.message_limit)
            .map_err(|e| e.into_error(&path, self.message_limit))?;
        if entry.sha256.as_deref() != Some(fsutil::sha256_hex(&bytes).as_str()) {
            return Err(Error::UnsafeState {
                path,
                detail: "changed while it was being decided on; nothing was recorded".into(),
            });
        }
        let staging = self.make_state_dir(TMP_DIR)?;
        fsutil::replace_atomic_via(&staging, &path, &bytes)
    }

    /// Reads and validates one message file of the inbox.
    pub fn read(&self, name: &str) -> Entry {
        self.read_at(&self.dir, name)
    }

    /// Unprocessed messages in processing order (SPEC §5.1), then the
    /// unprocessed files that are not valid messages, by name.
    /// Only a regular file in a sound `.processed/` hides a message. Whether
    /// a marker still matches the file's bytes is not checked here: that
    /// would cost two `stat`s per processed message (SPEC §14); `process`,
    /// `approve` and `show` check it, `doctor` checks every marker, and
    /// where the inbox is shared the receiver owns what it processed.
    pub fn unprocessed(&self) -> Result<Vec<Entry>> {
        self.check_state()?;
        let processed = self.names_in(PROCESSED_DIR)?;
        self.listed_processed.set(Some(processed.len()));
        // A file that vanished between the listing and the read was moved
        // (gc archived it, `quarantine` took it): it is not in the inbox
        // any more, and not invalid either.
        let mut entries: Vec<Entry> = self
            .message_names()?
            .into_iter()
            .filter(|n| !processed.contains(n))
            .filter_map(|n| self.read_listed(&self.dir, &n))
            .collect();
        if let Ok(us) = self.agent_id() {
            entries.retain(|e| !is_own_copy(e, &us));
        }
        sort_for_processing(&mut entries);
        Ok(entries)
    }

    /// The processed messages of the inbox, oldest first, each with its
    /// marker (`aea check --processed`).
    pub fn processed_entries(&self) -> Result<Vec<(Entry, Option<Marker>)>> {
        self.check_state()?;
        let processed = self.names_in(PROCESSED_DIR)?;
        let mut names: Vec<String> = self
            .message_names()?
            .into_iter()
            .filter(|n| processed.contains(n))
            .collect();
        names.sort();
        Ok(names
            .into_iter()
            .map(|n| (self.read(&n), self.marker(&n)))
            .collect())
    }

    /// Finds one message of the inbox by aea's short reference (see
    /// [`crate::shortref`]), file name, id, or a unique prefix of any.
    /// State folders are checked first: what a command then reads of a
    /// message's markers and approvals comes from the receiver.
    pub fn resolve(&self, reference: &str) -> Result<Entry> {
        self.check_state()?;
        self.resolve_in(&self.dir, reference)
    }

    /// Finds one message wherever this repository holds it: the inbox
    /// first, then the copies of what it sent, then `.archive/`.
    pub fn resolve_anywhere(&self, reference: &str) -> Result<(Entry, Held)> {
        let not_found = |e: &Error| matches!(e, Error::MessageNotFound { .. });
        match self.resolve(reference) {
            Err(e) if not_found(&e) => {}
            other => return other.map(|e| (e, Held::Inbox)),
        }
        match self.resolve_sent(reference) {
            Err(e) if not_found(&e) => {}
            other => return other.map(|e| (e, Held::Sent)),
        }
        self.resolve_archived(reference)
            .map(|e| (e, Held::Archive))
            .map_err(|e| match e {
                Error::MessageNotFound { .. } => Error::MessageNotFound {
                    reference: reference.to_string(),
                },
                other => other,
            })
    }

    /// Every valid message this repository holds, in the inbox, sent and
    /// archived, each once (by id; the inbox copy first).
    pub fn everything(&self) -> Result<Vec<(Entry, Held)>> {
        self.check_state()?;
        let mut names = self.message_names()?;
        names.sort();
        let inbox = names
            .iter()
            .filter_map(|n| self.read_listed(&self.dir, n))
            .map(|e| (e, Held::Inbox));
        let sent = self
            .read_all_in(SENT_DIR)?
            .into_iter()
            .map(|e| (e, Held::Sent));
        let archived = self
            .read_all_in(ARCHIVE_DIR)?
            .into_iter()
            .map(|e| (e, Held::Archive));
        let mut seen = HashSet::new();
        Ok(inbox
            .chain(sent)
            .chain(archived)
            .filter(|(e, _)| e.valid().is_some_and(|m| seen.insert(m.message_id.clone())))
            .collect())
    }

    /// Finds one message `gc` moved to `.archive/` (processed, or expired
    /// unprocessed).
    pub fn resolve_archived(&self, reference: &str) -> Result<Entry> {
        let Some(archive) = self.state_dir(ARCHIVE_DIR)? else {
            return Err(Error::MessageNotFound {
                reference: reference.to_string(),
            });
        };
        self.resolve_in(&archive, reference)
    }

    /// Finds one message this repository sent (in `sent/`).
    pub fn resolve_sent(&self, reference: &str) -> Result<Entry> {
        let Some(sent) = self.state_dir(SENT_DIR)? else {
            return Err(Error::MessageNotFound {
                reference: reference.to_string(),
            });
        };
        self.resolve_in(&sent, reference)
    }

    /// The message `id` from `sender` as this mailbox holds it: in the
    /// inbox, or in `.archive/` once processed and moved there by `gc`.
    /// Only files named as `sender`'s are read in `.archive/`, which grows.
    pub fn holding(&self, id: &str, sender: &str) -> Option<Entry> {
        let is_it = |e: &Entry| e.valid().is_some_and(|m| m.message_id == id);
        if let Some(entry) = self.with_id(id) {
            return Some(entry);
        }
        let archive = self.state_dir(ARCHIVE_DIR).ok()??;
        names_of_messages(&archive)
            .ok()?
            .into_iter()
            .filter(|n| message::parse_file_name(n).is_some_and(|p| p.sender == sender))
            .filter_map(|n| self.read_listed(&archive, &n))
            .find(is_it)
    }

    /// The message `id` from `sender` in `.archive/`, where `gc` moves
    /// processed mail and mail that expired unprocessed, and whether its
    /// processed marker went with it (it did, if it was processed).
    pub fn archived(&self, id: &str, sender: &str) -> Option<(Entry, bool)> {
        let archive = self.state_dir(ARCHIVE_DIR).ok()??;
        let entry = names_of_messages(&archive)
            .ok()?
            .into_iter()
            .filter(|n| message::parse_file_name(n).is_some_and(|p| p.sender == sender))
            .filter_map(|n| self.read_listed(&archive, &n))
            .find(|e| e.valid().is_some_and(|m| m.message_id == id))?;
        let processed = fs::symlink_metadata(archive.join(PROCESSED_DIR).join(&entry.name))
            .is_ok_and(|m| m.is_file());
        Some((entry, processed))
    }

    /// The message in the inbox whose id is `id`, by id alone. Not
    /// [`Mailbox::resolve`]: it reads a reference shaped like a short
    /// reference or the start of a file name as that, and a sender's id
    /// may be shaped so on purpose (a bridged `m3f9a01c2` was never found
    /// held, and imported again on every pass).
    pub fn with_id(&self, id: &str) -> Option<Entry> {
        self.check_state().ok()?;
        let mut names = names_of_messages(&self.dir).ok()?;
        names.sort();
        names
            .iter()
            .filter_map(|n| self.read_listed(&self.dir, n))
            .find(|e| e.valid().is_some_and(|m| m.message_id == id))
    }

    /// Message files in `sub` (e.g. `outgoing`), read and validated.
    pub fn read_all_in(&self, sub: &str) -> Result<Vec<Entry>> {
        let Some(dir) = self.state_dir(sub)? else {
            return Ok(Vec::new());
        };
        let mut names = match names_of_messages(&dir) {
            Ok(names) => names,
            Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        names.sort();
        Ok(names
            .iter()
            .filter_map(|n| self.read_listed(&dir, n))
            .collect())
    }

    /// Reads message `name` of `dir` wherever it was listed; a file gone
    /// since reads as unreadable (for one that was asked for by name).
    fn read_at(&self, dir: &Path, name: &str) -> Entry {
        self.read_listed(dir, name).unwrap_or_else(|| {
            let path = dir.join(name);
            let (message, sha256) = read_and_hash(&path, name, self.limit_for(dir));
            Entry {
                name: name.to_string(),
                message,
                path,
                sha256,
                verification: None,
            }
        })
    }

    /// Reads message `name` that a listing of `dir` just named: `None` when
    /// it is gone by now. Another process moved it (gc, `quarantine`, a
    /// second gc): a reader leaves it out, it never reports it invalid.
    pub fn read_listed(&self, dir: &Path, name: &str) -> Option<Entry> {
        let path = dir.join(name);
        let (mut message, sha256) = read_if_present(&path, name, self.limit_for(dir))?;
        let mut verification = None;
        if let (Some(ring), Ok(m)) = (&self.keyring, &message)
            && dir == self.dir
        {
            match ring.verify(m) {
                Verification::Forged { reason } => message = Err(format!("forged: {reason}")),
                v => verification = Some(v),
            }
        }
        Some(Entry {
            name: name.to_string(),
            message,
            path,
            sha256,
            verification,
        })
    }

    /// The inbox message whose id is exactly `reference`, found through
    /// the index: each file it names is read, and only one that holds that
    /// id now counts. `None` sends the caller to the listing, also when
    /// two files hold the id (a sender may copy another's id): the listing
    /// says the reference is ambiguous. A reference that could be the
    /// start of a file name is never looked up here: resolving reads those
    /// as names first.
    fn indexed(&self, dir: &Path, reference: &str) -> Option<Entry> {
        let name_like = reference.starts_with("message-") || "message-".starts_with(reference);
        if dir != self.dir || name_like || crate::shortref::parse(reference).is_some() {
            return None;
        }
        let mut holding = self
            .indexed_names(reference)
            .into_iter()
            .filter_map(|n| self.read_listed(dir, &n))
            .filter(|e| e.valid().is_some_and(|m| m.message_id == reference));
        let entry = holding.next()?;
        holding.next().is_none().then_some(entry)
    }

    /// Adds the valid messages among `entries` (of the inbox) to the index.
    pub fn index_entries<'a>(&self, entries: impl IntoIterator<Item = &'a Entry>) {
        if !self.own {
            return;
        }
        let pairs: Vec<(&str, &str)> = entries
            .into_iter()
            .filter_map(|e| Some((e.valid()?.message_id.as_str(), e.name.as_str())))
            .collect();
        self.index_ids(&pairs);
    }

    fn resolve_in(&self, dir: &Path, reference: &str) -> Result<Entry> {
        let reference = reference.trim();
        let not_found = || Error::MessageNotFound {
            reference: reference.to_string(),
        };
        if reference.is_empty() || reference.contains(['/', '\\']) {
            return Err(not_found());
        }
        // A file name needs no listing; a message id may be in the index.
        if message::is_message_file_name(reference)
            && let Some(entry) = self.read_listed(dir, reference)
        {
            return Ok(entry);
        }
        if let Some(entry) = self.indexed(dir, reference) {
            return Ok(entry);
        }
        let mut names = names_of_messages(dir)?;
        names.sort();
        let listed = |name: &str| self.read_listed(dir, name).ok_or_else(not_found);
        if names.iter().any(|n| n == reference) {
            return listed(reference);
        }
        // aea's own short reference (`m3f9a01c2`): never read as an id,
        // which a sender may have chosen to look like one.
        if let Some(digits) = crate::shortref::parse(reference) {
            let hits: Vec<&String> = names
                .iter()
                .filter(|n| crate::shortref::matches(n, &digits))
                .collect();
            return match hits.as_slice() {
                [] => Err(not_found()),
                [one] => listed(one),
                many => Err(Error::AmbiguousReference {
                    reference: reference.to_string(),
                    candidates: crate::shortref::for_names(many),
                }),
            };
        }
        let by_name: Vec<&String> = names.iter().filter(|n| n.starts_with(reference)).collect();
        if by_name.len() == 1 {
            return listed(by_name[0]);
        }
        // Ids live inside the files: read them all, exact matches first.
        let entries: Vec<Entry> = names
            .iter()
            .filter_map(|n| self.read_listed(dir, n))
            .collect();
        if dir == self.dir {
            self.index_entries(&entries);
        }
        let id_of = |e: &Entry| e.valid().map(|m| m.message_id.clone());
        // An id is the sender's choice: two files may claim the same one,
        // and picking either would act on mail the person did not name.
        let exact: Vec<&Entry> = entries
            .iter()
            .filter(|e| id_of(e).as_deref() == Some(reference))
            .collect();
        match exact.as_slice() {
            [] => {}
            [one] => return Ok((*one).clone()),
            many => {
                return Err(Error::AmbiguousReference {
                    reference: reference.to_string(),
                    candidates: crate::shortref::for_names(
                        &many.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
                    ),
                });
            }
        }
        let mut matches: Vec<&Entry> = entries
            .iter()
            .filter(|e| {
                e.name.starts_with(reference)
                    || id_of(e).is_some_and(|id| id.starts_with(reference))
            })
            .collect();
        matches.dedup_by(|a, b| a.name == b.name);
        match matches.len() {
            0 => Err(not_found()),
            1 => Ok(matches[0].clone()),
            _ => Err(Error::AmbiguousReference {
                reference: reference.to_string(),
                candidates: crate::shortref::for_names(
                    &matches.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
                ),
            }),
        }
    }

    /// Delivers `message` into this inbox (SPEC §4): staged in `.tmp/`,
    /// flushed, linked to a fresh name, never replacing a file.
    pub fn deliver(&self, message: &Message, rt: &Runtime) -> Result<PathBuf> {
        self.write_new(&self.dir, message, rt)
    }

    /// Keeps the sender's copy in `sent/`.
    pub fn store_sent(&self, message: &Message, rt: &Runtime) -> Result<PathBuf> {
        let sent = self.make_state_dir(SENT_DIR)?;
        self.write_new(&sent, message, rt)
    }

    fn write_new(&self, target: &Path, message: &Message, rt: &Runtime) -> Result<PathBuf> {
        self.write_bytes(target, &message.to_json(), message, rt)
    }

    /// Delivers a message received from elsewhere byte for byte (its
    /// sender's copy), with the same guarantees as `deliver`.
    pub fn deliver_raw(&self, bytes: &[u8], message: &Message, rt: &Runtime) -> Result<PathBuf> {
        self.write_bytes(&self.dir, bytes, message, rt)
    }

    /// Stages a message in `sub` (for example `outgoing/`) of this mailbox.
    pub fn store_in(&self, sub: &str, message: &Message, rt: &Runtime) -> Result<PathBuf> {
        let dir = self.make_state_dir(sub)?;
        self.write_new(&dir, message, rt)
    }

    fn write_bytes(
        &self,
        target: &Path,
        bytes: &[u8],
        message: &Message,
        rt: &Runtime,
    ) -> Result<PathBuf> {
        let limit = self.limit_for(target);
        if bytes.len() as u64 > limit {
            return Err(Error::MessageTooLarge {
                bytes: bytes.len() as u64,
                limit,
                repo: self.repo.clone(),
            });
        }
        let time = message.sent_at().unwrap_or_else(|| rt.now());
        let sender = message.from.agent_id.clone();
        let mut name = |_attempt: u32| message::file_name(time, &sender, &rt.rand_hex8());
        let nonce = || rt.rand_hex8();
        // Our own mailbox stages in `.tmp/`. A recipient's `.tmp/` is its
        // own (0700 where the inbox is shared with other OS users): a
        // sender never creates it, and stages next to the target (a dot
        // name, which readers ignore) when it may not write there.
        let staging = if self.own {
            self.make_state_dir(TMP_DIR)?
        } else if let Some(tmp) = self.state_dir(TMP_DIR)? {
            tmp
        } else {
            target.to_path_buf()
        };
        // Leftovers of a send killed mid-way go with the next one.
        fsutil::sweep_staging(&staging);
        let delivered = match fsutil::deliver_new(&staging, target, bytes, &mut name, &nonce) {
            Err(Error::Io { source, .. })
                if source.kind() == io::ErrorKind::PermissionDenied && staging != target =>
            {
                fsutil::deliver_new(target, target, bytes, &mut name, &nonce)
            }
            other => other,
        }?;
        if target == self.dir
            && let Some(name) = delivered.file_name().and_then(|n| n.to_str())
        {
            self.index_ids(&[(message.message_id.as_str(), name)]);
        }
        Ok(delivered)
    }

    /// The id index's folder (see [`IDS_DIR`]): made by the receiver; a
    /// sender only adds to one that exists (and may not be allowed to).
    fn ids_dir(&self) -> Option<PathBuf> {
        let seen = if self.own {
            self.make_state_dir(crate::seen::DIR).ok()?
        } else {
            self.state_dir(crate::seen::DIR).ok()??
        };
        let dir = seen.join(IDS_DIR);
        if self.own {
            fsutil::ensure_state_dir(&dir).ok()?;
        }
        fsutil::check_state_dir(&dir, self.owner)
            .ok()?
            .then_some(dir)
    }

    /// Adds file names to the short-reference index ([`REFS_DIR`]).
    fn index_refs<'a>(&self, names: impl Iterator<Item = &'a str>) {
        let Some(dir) = self.refs_dir() else {
            return;
        };
        let mut buckets: std::collections::BTreeMap<String, Vec<&str>> =
            std::collections::BTreeMap::new();
        for name in names.filter(|n| message::is_message_file_name(n)) {
            buckets.entry(ref_bucket(name)).or_default().push(name);
        }
        for (bucket, names) in buckets {
            let path = dir.join(bucket);
            // A bucket that does not read (past its limit) is not added to.
            let Some(known) = read_names(&path) else {
                continue;
            };
            let mut text = String::new();
            for name in names.into_iter().filter(|n| !known.contains(*n)) {
                text.push_str(name);
                text.push('\n');
            }
            if !text.is_empty()
                && let Ok(mut file) = fsutil::open_append(&path)
            {
                use std::io::Write as _;
                let _ = file.write_all(text.as_bytes());
            }
        }
    }

    fn refs_dir(&self) -> Option<PathBuf> {
        let dir = self.ids_dir()?.parent()?.join(REFS_DIR);
        if self.own {
            fsutil::ensure_state_dir(&dir).ok()?;
        }
        fsutil::check_state_dir(&dir, self.owner)
            .ok()?
            .then_some(dir)
    }

    /// The inbox file names known to share the first two hex digits of
    /// their short reference with `name` (see [`crate::shortref`]), or
    /// `None` where this inbox keeps no such index yet. Names gone since
    /// may be among them; names never indexed are not.
    pub fn ref_neighbours(&self, name: &str) -> Option<Vec<String>> {
        if !self.own {
            return None;
        }
        let dir = self.state_dir(crate::seen::DIR).ok()??.join(REFS_DIR);
        if !fsutil::check_state_dir(&dir, self.owner).ok()? {
            return None;
        }
        Some(
            read_names(&dir.join(ref_bucket(name)))?
                .into_iter()
                .collect(),
        )
    }

    /// The file names the index gives for message id `id`, sorted: hints
    /// only, each read and checked before it is used.
    fn indexed_names(&self, id: &str) -> Vec<String> {
        let Some(dir) = self.ids_dir() else {
            return Vec::new();
        };
        let Ok(Some(bytes)) = fsutil::read_state(&dir.join(id_bucket(id)), IDS_LIMIT) else {
            return Vec::new();
        };
        let mut names: Vec<String> = index_lines(&bytes)
            .filter(|(i, _)| *i == id)
            .map(|(_, n)| n.to_string())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Adds the (message id, file name) pairs the index lacks. Best
    /// effort: an index that cannot be written only makes lookups by id
    /// list the inbox. Lines are appended, each bucket in one write, so
    /// writers at the same time lose nothing.
    fn index_ids(&self, pairs: &[(&str, &str)]) {
        // The receiver makes the folders even with nothing to add, so that
        // senders can add to them from the first delivery on.
        let Some(dir) = self.ids_dir() else {
            return;
        };
        if self.own {
            let _ = self.refs_dir();
        }
        if pairs.is_empty() {
            return;
        }
        let mut buckets: std::collections::BTreeMap<String, Vec<(&str, &str)>> =
            std::collections::BTreeMap::new();
        for &(id, name) in pairs {
            if index_line_ok(id, name) {
                buckets.entry(id_bucket(id)).or_default().push((id, name));
            }
        }
        self.index_refs(pairs.iter().map(|(_, name)| *name));
        for (bucket, pairs) in buckets {
            let path = dir.join(bucket);
            // A bucket that does not read (past its limit, not a file) is
            // never used: adding to it would only grow it.
            let Ok(bytes) = fsutil::read_state(&path, IDS_LIMIT) else {
                continue;
            };
            let known: HashSet<(String, String)> = bytes
                .map(|b| {
                    index_lines(&b)
                        .map(|(i, n)| (i.to_string(), n.to_string()))
                        .collect()
                })
                .unwrap_or_default();
            let mut text = String::new();
            for (id, name) in pairs {
                if !known.contains(&(id.to_string(), name.to_string())) {
                    text.push_str(id);
                    text.push('\t');
                    text.push_str(name);
                    text.push('\n');
                }
            }
            if text.is_empty() {
                continue;
            }
            if let Ok(mut file) = fsutil::open_append(&path) {
                use std::io::Write as _;
                let _ = file.write_all(text.as_bytes());
            }
        }
    }

    /// Takes the exclusive claim on a message (SPEC §5.4). A claim older
    /// than 30 minutes is taken over.
    pub fn claim(&self, name: &str, rt: &Runtime) -> Result<Claim> {
        let dir = self.make_state_dir(CLAIMS_DIR)?;
        let read = |path: &Path| -> Result<Vec<u8>> {
            Ok(fsutil::read_state(path, fsutil::SMALL_STATE_LIMIT)?.unwrap_or_default())
        };
        let path = dir.join(name);
        let body = serde_json::to_vec(&ClaimBody {
            claimed_at: format_time(rt.now()),
            by: rt.user().to_string(),
            pid: std::process::id(),
            holder: crate::liveness::Holder::current(),
        })
        .expect("a claim always serialises");
        let mut took_over_from = None;
        // Two rounds at most: the second follows the removal of a stale claim.
        for _ in 0..2 {
            if fsutil::create_exclusive_whole(&path, &body)? {
                return Ok(Claim {
                    path,
                    took_over_from,
                });
            }
            let held = read(&path)?;
            let holder = describe_claim(&held);
            if !claim_is_stale(&path, &held, rt.now()) {
                return Err(Error::Claimed {
                    name: name.to_string(),
                    holder,
                });
            }
            // Moved aside rather than deleted: if another process replaced
            // it meanwhile, the moved file is not the one judged stale.
            let aside = dir.join(format!("{name}.stale-{}", rt.rand_hex8()));
            match fsutil::take_over(&path, &held, &aside)? {
                fsutil::TakeOver::Taken => took_over_from = Some(holder),
                fsutil::TakeOver::Gone => {}
                fsutil::TakeOver::Replaced(moved) => {
                    return Err(Error::Claimed {
                        name: name.to_string(),
                        holder: describe_claim(&moved),
                    });
                }
            }
        }
        Err(Error::Claimed {
            name: name.to_string(),
            holder: "another process".into(),
        })
    }

    /// The deferred messages, by file name, with the marker that says when
    /// and why (a marker that does not read still counts, without them).
    pub fn deferrals(&self) -> Result<std::collections::HashMap<String, Option<Marker>>> {
        let names = self.names_in(DEFERRED_DIR)?;
        let Some(dir) = self.state_dir(DEFERRED_DIR)? else {
            return Ok(std::collections::HashMap::new());
        };
        Ok(names
            .into_iter()
            .map(|name| {
                let marker = fsutil::read_state(&dir.join(&name), fsutil::SMALL_STATE_LIMIT)
                    .ok()
                    .flatten()
                    .and_then(|b| serde_json::from_slice(&b).ok());
                (name, marker)
            })
            .collect())
    }

    /// Records that `name` was put off (again): it stays unprocessed.
    pub fn defer(&self, name: &str, marker: &Marker) -> Result<PathBuf> {
        let dir = self.make_state_dir(DEFERRED_DIR)?;
        let path = dir.join(name);
        let body = serde_json::to_vec_pretty(marker).expect("a marker always serialises");
        fsutil::replace_atomic(&path, &body)?;
        Ok(path)
    }

    /// Forgets that `name` was deferred, once it is processed.
    pub fn undefer(&self, name: &str) -> Result<()> {
        let Some(dir) = self.state_dir(DEFERRED_DIR)? else {
            return Ok(());
        };
        let path = dir.join(name);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(Error::io("remove", &path, e)),
            _ => Ok(()),
        }
    }

    /// Removes the claim on `name` if it is stale (its process gone, or
    /// too old): for mail already processed by a process killed before it
    /// released its claim. Best effort.
    pub fn drop_stale_claim(&self, name: &str, now: DateTime<Utc>) {
        let Ok(Some(dir)) = self.state_dir(CLAIMS_DIR) else {
            return;
        };
        let path = dir.join(name);
        let Ok(Some(body)) = fsutil::read_state(&path, fsutil::SMALL_STATE_LIMIT) else {
            return;
        };
        if claim_is_stale(&path, &body, now) {
            let _ = fs::remove_file(&path);
        }
    }

    /// The record of send key `digest` (`send --idempotency-key`), if any.
    pub fn send_key(&self, digest: &str) -> Result<Option<Vec<u8>>> {
        let Some(dir) = self.state_dir(SEND_KEYS_DIR)? else {
            return Ok(None);
        };
        fsutil::read_state(&dir.join(digest), fsutil::SMALL_STATE_LIMIT)
    }

    /// The bridge record of message `id`, if any (see [`BRIDGED_DIR`]).
    pub fn bridged(&self, id: &str) -> Result<Option<Vec<u8>>> {
        crate::message::check_message_id(id).map_err(|reason| Error::UnsafeState {
            path: self.sub(BRIDGED_DIR),
            detail: format!("message id {id:?} is not one: {reason}"),
        })?;
        let Some(dir) = self.state_dir(BRIDGED_DIR)? else {
            return Ok(None);
        };
        fsutil::read_state(&dir.join(format!("{id}.json")), fsutil::SMALL_STATE_LIMIT)
    }

    pub fn record_bridged(&self, id: &str, record: &[u8]) -> Result<()> {
        let dir = self.make_state_dir(BRIDGED_DIR)?;
        fsutil::replace_atomic(&dir.join(format!("{id}.json")), record)
    }

    pub fn forget_bridged(&self, id: &str) -> Result<()> {
        let Some(dir) = self.state_dir(BRIDGED_DIR)? else {
            return Ok(());
        };
        let path = dir.join(format!("{id}.json"));
        match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(Error::io("remove", &path, e))
            }
            _ => Ok(()),
        }
    }

    /// Records send key `digest` before anything is delivered; false when
    /// it is recorded already (a retry).
    pub fn record_send_key(&self, digest: &str, record: &[u8]) -> Result<bool> {
        let dir = self.make_state_dir(SEND_KEYS_DIR)?;
        fsutil::create_exclusive_whole(&dir.join(digest), record)
    }

    /// Holds the lock under which a send judges an earlier record of the
    /// same message and replaces it (`.sent-keys/.lock`, released when the
    /// process ends, however it ends). The record is replaced in one
    /// rename, never moved away first: a send killed while taking a record
    /// over leaves the record, so its retry still finds the id.
    pub fn lock_send_keys(&self) -> Result<fs::File> {
        let dir = self.make_state_dir(SEND_KEYS_DIR)?;
        let path = dir.join(".lock");
        let file = fsutil::lock_within(&path, SEND_KEYS_LOCK_WAIT)?;
        fsutil::require_owner(&file, &path, self.owner)?;
        Ok(file)
    }

    /// Holds `.sent-keys/.<digest>.lock` for a whole send with that key:
    /// a second send with the same key waits for the first to end (or
    /// die: the lock goes with its process), then finds what it delivered.
    pub fn lock_send_key(&self, digest: &str) -> Result<fs::File> {
        let dir = self.make_state_dir(SEND_KEYS_DIR)?;
        let path = dir.join(format!(".{digest}.lock"));
        let file = fsutil::lock_within(&path, SEND_KEY_LOCK_WAIT)?;
        fsutil::require_owner(&file, &path, self.owner)?;
        Ok(file)
    }

    /// Writes the record of send key `digest`, replacing any.
    pub fn replace_send_key(&self, digest: &str, record: &[u8]) -> Result<()> {
        let dir = self.make_state_dir(SEND_KEYS_DIR)?;
        fsutil::replace_atomic(&dir.join(digest), record)
    }

    /// Removes the record of send key `digest`, if there is one.
    pub fn forget_send_key(&self, digest: &str) -> Result<()> {
        let Some(dir) = self.state_dir(SEND_KEYS_DIR)? else {
            return Ok(());
        };
        let path = dir.join(digest);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(Error::io("remove", &path, e)),
            _ => Ok(()),
        }
    }

    /// Names of the send records last written before `cutoff`: a cheap
    /// listing (no record is read) for dropping the ones no retry uses.
    pub fn send_keys_written_before(&self, cutoff: std::time::SystemTime) -> Result<Vec<String>> {
        let Some(dir) = self.state_dir(SEND_KEYS_DIR)? else {
            return Ok(Vec::new());
        };
        Ok(fs::read_dir(&dir)
            .map_err(|e| Error::io("list", &dir, e))?
            .filter_map(std::result::Result::ok)
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .filter(|e| {
                e.metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t < cutoff)
            })
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect())
    }

    /// Every send record, by name, with its bytes.
    pub fn send_keys(&self) -> Result<Vec<(String, Vec<u8>)>> {
        let Some(dir) = self.state_dir(SEND_KEYS_DIR)? else {
            return Ok(Vec::new());
        };
        let mut names: Vec<String> = fs::read_dir(&dir)
            .map_err(|e| Error::io("list", &dir, e))?
            .filter_map(std::result::Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect();
        names.sort();
        Ok(names
            .into_iter()
            .filter_map(|name| {
                let bytes =
                    fsutil::read_state(&dir.join(&name), fsutil::SMALL_STATE_LIMIT).ok()??;
                Some((name, bytes))
            })
            .collect())
    }

    /// Writes the processed marker; fails if one exists already.
    pub fn mark_processed(&self, name: &str, marker: &Marker) -> Result<PathBuf> {
        let dir = self.make_state_dir(PROCESSED_DIR)?;
        let path = dir.join(name);
        let body = serde_json::to_vec_pretty(marker).expect("a marker always serialises");
        // Whole or not at all: a process killed between creating the file
        // and writing it would leave an empty marker, which counts as
        // processed (older tools `touch` them) but says nothing `doctor`
        // could rebuild the cut-off log line from. Staged in `.tmp/`: a
        // sweep of `.processed/` for leftovers would list every marker.
        let staging = self.make_state_dir(TMP_DIR)?;
        if !fsutil::create_exclusive_whole_via(&staging, &path, &body)? {
            return Err(Error::AlreadyProcessed {
                name: name.to_string(),
            });
        }
        fsutil::sync_dir(&dir)?;
        Ok(path)
    }

    /// Moves the marker of a message that was replaced after processing
    /// aside (`<name>.replaced`, `.replaced.1`, …), kept for the record, so
    /// the new content can be processed.
    pub fn retire_marker(&self, name: &str) -> Result<PathBuf> {
        let dir = self.make_state_dir(PROCESSED_DIR)?;
        let path = move_present(&dir.join(name), &dir, &format!("{name}.replaced"))?;
        fsutil::sync_dir(&dir)?;
        Ok(path)
    }

    /// Moves inbox file `name` into `sub` (`.quarantine` or `.archive`),
    /// never replacing anything there, with its processed marker, its
    /// approval record and an optional `<name>.reason`. Nothing is deleted. `None` when the file
    /// is gone: another process moved it first (see [`move_no_replace`]),
    /// which is not an error — it is where it was meant to go.
    pub fn move_out(&self, name: &str, sub: &str, reason: Option<&str>) -> Result<Option<PathBuf>> {
        let dir = self.make_state_dir(sub)?;
        // Checked before anything moves: a `.processed` swapped for a
        // symlink must not make us unlink a file outside `.aea/`.
        let processed = self.state_dir(PROCESSED_DIR)?;
        let approvals = self.state_dir(APPROVALS_DIR)?;
        let Some(target) = move_no_replace(&self.dir.join(name), &dir, name)? else {
            return Ok(None);
        };
        // The marker and the person's decision go with the bytes they were
        // made for: the name is free now, and a file delivered under it
        // later (a sender replaying the same bytes) is judged afresh.
        let record = format!("{name}.json");
        for (state, sub, file) in [
            (processed, PROCESSED_DIR, name),
            (approvals, APPROVALS_DIR, record.as_str()),
        ] {
            let Some(state) = state else { continue };
            let from = state.join(file);
            if fs::symlink_metadata(&from).is_ok() {
                let kept = dir.join(sub);
                fsutil::ensure_state_dir(&kept)?;
                fsutil::check_state_dir(&kept, self.owner)?;
                move_no_replace(&from, &kept, file)?;
            }
        }
        if let Some(reason) = reason {
            let file = target
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            fsutil::create_exclusive(
                &dir.join(format!("{file}.reason")),
                format!("{reason}\n").as_bytes(),
            )?;
        }
        fsutil::sync_dir(&self.dir)?;
        Ok(Some(target))
    }

    /// The approval state of `entry` whose decision is `gated` or not. Only
    /// a record for the entry's current bytes approves; one that cannot be
    /// read, sits in an unsound folder or was made for other bytes does
    /// not. A decision word this version does not know (another version
    /// wrote it) never approves: it holds like a rejection, because it is a
    /// person's decision on these bytes, which is never replaced — counting
    /// it as pending would ask for a decision that cannot be recorded.
    pub fn approval(&self, entry: &Entry, gated: bool) -> Approval {
        if !gated {
            return Approval::NotNeeded;
        }
        let Some(record) = self.approval_record(&entry.name) else {
            return Approval::Pending;
        };
        match (record.sha256.as_deref(), entry.sha256.as_deref()) {
            (Some(decided), Some(current)) if decided != current => Approval::ChangedAfterApproval,
            (decided, current) => match record.decision {
                // An approval without a digest (older aea) cannot say what it approved.
                OrUnknown::Known(ApprovalDecision::Approved) => {
                    if decided.is_some() && current.is_some() {
                        Approval::Approved
                    } else {
                        Approval::Pending
                    }
                }
                OrUnknown::Known(ApprovalDecision::Rejected) | OrUnknown::Unknown(_) => {
                    Approval::Rejected
                }
            },
        }
    }

    /// The person's current decision on inbox file `name`, if any.
    pub fn approval_record(&self, name: &str) -> Option<ApprovalRecord> {
        let dir = self.state_dir(APPROVALS_DIR).ok()??;
        let path = dir.join(format!("{name}.json"));
        let bytes = fsutil::read_state(&path, fsutil::SMALL_STATE_LIMIT).ok()??;
        serde_json::from_slice(&bytes).ok()
    }

    /// Records a person's decision. A decision on the same bytes is never
    /// replaced: a second one fails and names the first. A record made for
    /// other bytes (the file changed after it) is moved aside to
    /// `<name>.json.superseded[.N]`, kept for the record, and returned.
    pub fn record_approval(&self, record: &ApprovalRecord) -> Result<(PathBuf, Option<PathBuf>)> {
        let dir = self.make_state_dir(APPROVALS_DIR)?;
        let file = format!("{}.json", record.file);
        let path = dir.join(&file);
        let body = serde_json::to_vec_pretty(record).expect("a record always serialises");
        let mut aside = None;
        if !fsutil::create_exclusive(&path, &body)? {
            let existing = self.approval_record(&record.file);
            let same_bytes = existing
                .as_ref()
                .is_some_and(|r| r.sha256.is_some() && r.sha256 == record.sha256);
            if existing.is_none() || same_bytes {
                return Err(Error::AlreadyDecided {
                    name: record.file.clone(),
                    decision: existing
                        .as_ref()
                        .map_or("decided".into(), |r| r.decision.to_string()),
                    by: existing.as_ref().map_or("someone".into(), |r| r.by.clone()),
                    at: existing.map_or("an earlier time".into(), |r| r.at),
                });
            }
            aside = Some(move_present(&path, &dir, &format!("{file}.superseded"))?);
            if !fsutil::create_exclusive(&path, &body)? {
                return Err(Error::AlreadyDecided {
                    name: record.file.clone(),
                    decision: "decided".into(),
                    by: "someone else".into(),
                    at: "the same time".into(),
                });
            }
        }
        fsutil::sync_dir(&dir)?;
        Ok((path, aside))
    }

    /// The message files `channel` has already told about. A state file
    /// that is not a regular file counts as empty (everything is new).
    /// One written by another user (planted in a shared inbox to silence
    /// the reminders) counts as empty too.
    pub fn announced(&self, channel: &str) -> HashSet<String> {
        let path = self.sub(&announced_file(channel));
        let Ok(file) = fsutil::open_read(&path) else {
            return HashSet::new();
        };
        if fsutil::require_owner(&file, &path, self.owner).is_err() {
            return HashSet::new();
        }
        fsutil::read_opened(file, fsutil::STATE_LIMIT)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// The message files one harness session has been told about
    /// (`.announced/<key>.json`, see [`crate::reminder`]); empty for a new
    /// session, or when the folder is not the receiver's own.
    pub fn session_announced(&self, key: &str) -> HashSet<String> {
        let Ok(Some(dir)) = self.state_dir(ANNOUNCED_DIR) else {
            return HashSet::new();
        };
        let path = dir.join(format!("{key}.json"));
        fsutil::read_state(&path, fsutil::STATE_LIMIT)
            .ok()
            .flatten()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Records what one harness session has been told. A session seen for
    /// the first time also clears the memories of sessions idle for a
    /// week, so the folder stays small.
    pub fn set_session_announced(&self, key: &str, names: &HashSet<String>) -> Result<()> {
        let dir = self.make_state_dir(ANNOUNCED_DIR)?;
        let path = dir.join(format!("{key}.json"));
        if fs::symlink_metadata(&path).is_err() {
            forget_idle_sessions(&dir);
        }
        let mut sorted: Vec<&String> = names.iter().collect();
        sorted.sort();
        let bytes = serde_json::to_vec(&sorted).expect("names always serialise");
        fsutil::replace_atomic(&path, &bytes)
    }

    pub fn set_announced(&self, channel: &str, names: &HashSet<String>) -> Result<()> {
        let mut sorted: Vec<&String> = names.iter().collect();
        sorted.sort();
        let bytes = serde_json::to_vec(&sorted).expect("names always serialise");
        fsutil::replace_atomic(&self.sub(&announced_file(channel)), &bytes)
    }
}

/// Removes the session memories in `dir` untouched for a week.
fn forget_idle_sessions(dir: &Path) {
    let week = std::time::Duration::from_secs(7 * 24 * 3600);
    let now = std::time::SystemTime::now();
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let idle = entry
            .metadata()
            .ok()
            .filter(fs::Metadata::is_file)
            .and_then(|m| m.modified().ok())
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age > week);
        if idle {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Moves `from` into `dir` as `name`, or `name.N` if that is taken; links
/// then unlinks, so an existing file is never replaced. `None` when `from`
/// is gone: another process moved it first.
///
/// Two processes moving one file at once (two gc runs, gc and
/// `quarantine`) must not leave two copies: a taken name that already is
/// `from` (same device and inode: the other process linked it a moment
/// ago) means the file is moved, so this one only drops its own name for
/// it and reports `None`; a new `name.N` is taken only for another file.
fn move_no_replace(from: &Path, dir: &Path, name: &str) -> Result<Option<PathBuf>> {
    let identity = |path: &Path| fs::symlink_metadata(path).map(|m| fsutil::identity(&m));
    for n in 0..1000 {
        let target = if n == 0 {
            dir.join(name)
        } else {
            dir.join(format!("{name}.{n}"))
        };
        match fs::hard_link(from, &target) {
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

/// Names of the message files directly in `dir`, unsorted.
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

/// The id index of the inbox (issue 16), in `.seen/`: 256 bucket files
/// named by the first two hex digits of the SHA-256 of a message id,
/// lines of `<message id>\t<file name>`. Written on delivery and whenever
/// the receiver reads its inbox; never trusted over the files.
const IDS_DIR: &str = "ids";
/// A bucket larger than this is not read (lookups list the inbox).
const IDS_LIMIT: u64 = 4 * 1024 * 1024;

/// Beside [`IDS_DIR`]: the inbox's file names by the first two hex digits
/// of their short reference, so one file's reference can be made unique
/// without listing the inbox.
const REFS_DIR: &str = "refs";

fn ref_bucket(name: &str) -> String {
    fsutil::sha256_hex(name.as_bytes())[..2].to_string()
}

/// The message file names in a [`REFS_DIR`] bucket (none where there is
/// no bucket yet); `None` when it does not read.
fn read_names(path: &Path) -> Option<HashSet<String>> {
    let names = fsutil::read_state(path, IDS_LIMIT)
        .ok()?
        .map(|b| {
            b.split(|c| *c == b'\n')
                .filter_map(|l| std::str::from_utf8(l).ok())
                .filter(|n| message::is_message_file_name(n))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Some(names)
}

fn id_bucket(id: &str) -> String {
    fsutil::sha256_hex(id.as_bytes())[..2].to_string()
}

/// What an index line may hold: an id without tabs or line breaks and a
/// message file name.
fn index_line_ok(id: &str, name: &str) -> bool {
    !id.is_empty()
        && id.len() <= 256
        && !id.contains(['\t', '\n', '\r'])
        && message::is_message_file_name(name)
}

/// The well-formed lines of a bucket; anything else is skipped.
fn index_lines(bytes: &[u8]) -> impl Iterator<Item = (&str, &str)> {
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|line| std::str::from_utf8(line).ok())
        .filter_map(|line| line.split_once('\t'))
        .filter(|(id, name)| index_line_ok(id, name))
}

fn names_of_messages(dir: &Path) -> Result<Vec<String>> {
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
    read_and_hash(path, name, limit).0
}

/// [`read_message_file`], plus the SHA-256 of the bytes read.
fn read_and_hash(path: &Path, name: &str, limit: u64) -> Parsed {
    try_read(path, name, limit).unwrap_or_else(|e| (Err(format!("cannot be read: {e}")), None))
}

/// [`read_and_hash`], `None` when the file does not exist (any more).
fn read_if_present(path: &Path, name: &str, limit: u64) -> Option<Parsed> {
    match try_read(path, name, limit) {
        Ok(parsed) => Some(parsed),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => Some((Err(format!("cannot be read: {e}")), None)),
    }
}

/// A message file's parse (or the reason it is invalid) and the digest of
/// its bytes; an I/O error when it could not be opened or read.
type Parsed = (Result<Message, String>, Option<String>);

fn try_read(path: &Path, name: &str, limit: u64) -> io::Result<Parsed> {
    Ok(match fsutil::read_limited(path, limit) {
        Ok(bytes) => (
            message::parse(&bytes, Some(name)),
            Some(fsutil::sha256_hex(&bytes)),
        ),
        Err(ReadLimited::Symlink) => (Err("is a symbolic link; not read".into()), None),
        Err(ReadLimited::NotAFile) => (Err(NOT_A_FILE.into()), None),
        Err(ReadLimited::TooLarge(n)) => (
            Err(format!("is {n} bytes, over the {limit} byte limit")),
            None,
        ),
        Err(ReadLimited::Io(e)) => return Err(e),
    })
}

/// Why a folder, FIFO or socket named like a message is not one.
pub const NOT_A_FILE: &str = "is not a regular file";

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
pub fn claim_is_stale(path: &Path, body: &[u8], now: DateTime<Utc>) -> bool {
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

    /// A record whose decision is a word this version does not know, made
    /// for the file's current bytes: it still reads, and never approves.
    #[test]
    fn an_unknown_decision_reads_and_never_approves() {
        let repo = tempfile::tempdir().unwrap();
        fs::create_dir(repo.path().join(AEA_DIR)).unwrap();
        let mailbox = Mailbox::at(repo.path()).unwrap();
        let name = "message-20250101T000000Z-from-a.json";
        fs::write(mailbox.dir.join(name), b"{}").unwrap();
        let entry = mailbox.read(name);
        let sha256 = entry.sha256.clone().expect("a readable file has a digest");
        let record = |decision: &str| {
            serde_json::json!({
                "message_id": "m", "file": name, "decision": decision, "by": "p",
                "user": "p", "at": "2025-01-01T00:00:00Z", "rule": "r", "sha256": sha256,
            })
        };
        let approvals = mailbox.make_state_dir(APPROVALS_DIR).unwrap();
        let path = approvals.join(format!("{name}.json"));

        fs::write(&path, record("approved").to_string()).unwrap();
        assert_eq!(mailbox.approval(&entry, true), Approval::Approved);

        fs::write(&path, record("approved_later").to_string()).unwrap();
        let read = mailbox
            .approval_record(name)
            .expect("an unknown word still reads");
        assert_eq!(read.decision, OrUnknown::Unknown("approved_later".into()));
        assert_eq!(read.decision.to_string(), "approved_later");
        assert_eq!(mailbox.approval(&entry, true), Approval::Rejected);
        assert!(!mailbox.approval(&entry, true).waits());
    }
}
