//! One repository's `.aea/` folder (SPEC §2): finding it, listing and reading
//! its messages in processing order, delivering into it, claims and
//! processed markers (§5.4). All writes stay inside `.aea/`.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::config::AgentConfig;
use crate::error::{Error, Result};
use crate::fsutil::{self, ReadLimited};
use crate::message::{self, Message, format_time, parse_time};
use crate::runtime::Runtime;

pub const AEA_DIR: &str = ".aea";
pub const PROCESSED_DIR: &str = ".processed";
pub const CLAIMS_DIR: &str = ".claims";
pub const APPROVALS_DIR: &str = ".approvals";
pub const SENT_DIR: &str = "sent";
pub const TMP_DIR: &str = ".tmp";
pub const QUARANTINE_DIR: &str = ".quarantine";
pub const ARCHIVE_DIR: &str = ".archive";
pub const PROMPTS_DIR: &str = "prompts";
/// Mail waiting for `aea sync` to carry it to another machine.
pub const OUTGOING_DIR: &str = "outgoing";
/// Which message files a channel (agent-harness hooks, git hooks) has
/// already announced (SPEC §5.1): `.announced-<channel>.json`.
fn announced_file(channel: &str) -> String {
    format!(".announced-{channel}.json")
}

/// Every folder of the layout, created by `init` and repaired by it.
pub const LAYOUT_DIRS: [&str; 8] = [
    PROCESSED_DIR,
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
    /// Largest message file read or written (the receiver's `limits`).
    message_limit: u64,
    /// This is the repository aea was pointed at (not a recipient): it may
    /// keep caches in its `.aea/`.
    own: bool,
}

/// A message file read from the inbox, valid or not.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    pub path: PathBuf,
    pub message: Result<Message, String>,
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

/// The JSON body of `.processed/<name>` (SPEC §5.4). Older tools wrote empty
/// files; those still count as processed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Marker {
    pub processed_at: String,
    pub by: String,
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct ClaimBody {
    claimed_at: String,
    by: String,
    pid: u32,
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
        let _ = fs::remove_file(&self.path);
    }
}

/// A person's decision on a gated message: `.approvals/<name>.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApprovalRecord {
    pub message_id: String,
    pub file: String,
    /// `approved` or `rejected`.
    pub decision: String,
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
}

/// Approval state of a message as `check` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    NotNeeded,
    Pending,
    Approved,
    Rejected,
}

impl Approval {
    pub fn as_str(self) -> &'static str {
        match self {
            Approval::NotNeeded => "not_needed",
            Approval::Pending => "pending",
            Approval::Approved => "approved",
            Approval::Rejected => "rejected",
        }
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
            _ => {
                fsutil::require_real_dir(&dir)?;
                let repo = fs::canonicalize(repo).map_err(|e| Error::io("resolve", repo, e))?;
                Ok(Mailbox {
                    dir: repo.join(AEA_DIR),
                    repo,
                    message_limit: message::MAX_MESSAGE_BYTES,
                    own: false,
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
        self
    }

    /// Uses the receiver's configured size limit instead of the default.
    #[must_use]
    pub fn with_message_limit(mut self, bytes: u64) -> Self {
        self.message_limit = bytes;
        self
    }

    pub fn repo(&self) -> &Path {
        &self.repo
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn config(&self) -> Result<AgentConfig> {
        AgentConfig::load_with(&self.dir, self.own)
    }

    /// The id of the agent this mailbox belongs to.
    pub fn agent_id(&self) -> Result<String> {
        Ok(self.config()?.require_id(&self.dir)?.to_string())
    }

    fn sub(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Names of the message files in the inbox, unsorted.
    pub fn message_names(&self) -> Result<Vec<String>> {
        names_of_messages(&self.dir)
    }

    fn names_in(&self, sub: &str) -> Result<HashSet<String>> {
        let dir = self.sub(sub);
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(HashSet::new()),
            Err(e) => return Err(Error::io("list", &dir, e)),
        };
        let mut names = HashSet::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io("list", &dir, e))?;
            if let Ok(name) = entry.file_name().into_string() {
                names.insert(name);
            }
        }
        Ok(names)
    }

    pub fn is_processed(&self, name: &str) -> bool {
        fs::symlink_metadata(self.sub(PROCESSED_DIR).join(name)).is_ok()
    }

    pub fn marker(&self, name: &str) -> Option<Marker> {
        let text = fs::read_to_string(self.sub(PROCESSED_DIR).join(name)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Reads and validates one message file of the inbox.
    pub fn read(&self, name: &str) -> Entry {
        self.read_at(&self.dir, name)
    }

    /// Unprocessed messages in processing order (SPEC §5.1), then the
    /// unprocessed files that are not valid messages, by name.
    pub fn unprocessed(&self) -> Result<Vec<Entry>> {
        let processed = self.names_in(PROCESSED_DIR)?;
        let mut entries: Vec<Entry> = self
            .message_names()?
            .into_iter()
            .filter(|n| !processed.contains(n))
            .map(|n| self.read(&n))
            .collect();
        sort_for_processing(&mut entries);
        Ok(entries)
    }

    /// Finds one message of the inbox by aea's short reference (see
    /// [`crate::shortref`]), file name, id, or a unique prefix of any.
    pub fn resolve(&self, reference: &str) -> Result<Entry> {
        self.resolve_in(&self.dir, reference)
    }

    /// Finds one message this repository sent (in `sent/`).
    pub fn resolve_sent(&self, reference: &str) -> Result<Entry> {
        self.resolve_in(&self.sub(SENT_DIR), reference)
    }

    /// Message files in `sub` (e.g. `outgoing`), read and validated.
    pub fn read_all_in(&self, sub: &str) -> Result<Vec<Entry>> {
        let dir = self.sub(sub);
        let mut names = match names_of_messages(&dir) {
            Ok(names) => names,
            Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        names.sort();
        Ok(names.iter().map(|n| self.read_at(&dir, n)).collect())
    }

    fn read_at(&self, dir: &Path, name: &str) -> Entry {
        let path = dir.join(name);
        Entry {
            name: name.to_string(),
            message: read_message_file(&path, name, self.message_limit),
            path,
        }
    }

    fn resolve_in(&self, dir: &Path, reference: &str) -> Result<Entry> {
        let reference = reference.trim();
        let not_found = || Error::MessageNotFound {
            reference: reference.to_string(),
        };
        if reference.is_empty() || reference.contains(['/', '\\']) {
            return Err(not_found());
        }
        let mut names = names_of_messages(dir)?;
        names.sort();
        if names.iter().any(|n| n == reference) {
            return Ok(self.read_at(dir, reference));
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
                [one] => Ok(self.read_at(dir, one)),
                many => Err(Error::AmbiguousReference {
                    reference: reference.to_string(),
                    candidates: crate::shortref::for_names(many),
                }),
            };
        }
        let by_name: Vec<&String> = names.iter().filter(|n| n.starts_with(reference)).collect();
        if by_name.len() == 1 {
            return Ok(self.read_at(dir, by_name[0]));
        }
        // Ids live inside the files: read them all, exact matches first.
        let entries: Vec<Entry> = names.iter().map(|n| self.read_at(dir, n)).collect();
        let id_of = |e: &Entry| e.valid().map(|m| m.message_id.clone());
        if let Some(exact) = entries
            .iter()
            .find(|e| id_of(e).as_deref() == Some(reference))
        {
            return Ok(exact.clone());
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
        let sent = self.sub(SENT_DIR);
        fsutil::ensure_dir(&sent)?;
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
        let dir = self.sub(sub);
        fsutil::ensure_dir(&dir)?;
        self.write_new(&dir, message, rt)
    }

    fn write_bytes(
        &self,
        target: &Path,
        bytes: &[u8],
        message: &Message,
        rt: &Runtime,
    ) -> Result<PathBuf> {
        if bytes.len() as u64 > self.message_limit {
            return Err(Error::usage(
                format!(
                    "the message is {} bytes, over the {} byte limit of {}",
                    bytes.len(),
                    self.message_limit,
                    self.repo.display()
                ),
                "shorten the body, or attach files with `--attach` instead of inlining them",
            ));
        }
        let staging = self.sub(TMP_DIR);
        fsutil::ensure_dir(&staging)?;
        let time = message.sent_at().unwrap_or_else(|| rt.now());
        let sender = message.from.agent_id.clone();
        let mut name = |_attempt: u32| message::file_name(time, &sender, &rt.rand_hex8());
        let nonce = || rt.rand_hex8();
        fsutil::deliver_new(&staging, target, bytes, &mut name, &nonce)
    }

    /// Takes the exclusive claim on a message (SPEC §5.4). A claim older
    /// than 30 minutes is taken over.
    pub fn claim(&self, name: &str, rt: &Runtime) -> Result<Claim> {
        let dir = self.sub(CLAIMS_DIR);
        fsutil::ensure_dir(&dir)?;
        let path = dir.join(name);
        let body = serde_json::to_vec(&ClaimBody {
            claimed_at: format_time(rt.now()),
            by: rt.user().to_string(),
            pid: std::process::id(),
        })
        .expect("a claim always serialises");
        let mut took_over_from = None;
        // Two rounds at most: the second follows the removal of a stale claim.
        for _ in 0..2 {
            if fsutil::create_exclusive(&path, &body)? {
                return Ok(Claim {
                    path,
                    took_over_from,
                });
            }
            let held = fs::read(&path).unwrap_or_default();
            let holder = describe_claim(&held);
            if !claim_is_stale(&path, &held, rt.now()) {
                return Err(Error::Claimed {
                    name: name.to_string(),
                    holder,
                });
            }
            // Move the stale claim aside rather than deleting it: if another
            // process replaced it meanwhile, the moved file is not the one we
            // judged stale and is put back.
            let aside = dir.join(format!("{name}.stale-{}", rt.rand_hex8()));
            if fs::rename(&path, &aside).is_err() {
                continue;
            }
            let moved = fs::read(&aside).unwrap_or_default();
            if moved == held {
                let _ = fs::remove_file(&aside);
                took_over_from = Some(holder);
            } else {
                let _ = fs::hard_link(&aside, &path);
                let _ = fs::remove_file(&aside);
                return Err(Error::Claimed {
                    name: name.to_string(),
                    holder: describe_claim(&moved),
                });
            }
        }
        Err(Error::Claimed {
            name: name.to_string(),
            holder: "another process".into(),
        })
    }

    /// Writes the processed marker; fails if one exists already.
    pub fn mark_processed(&self, name: &str, marker: &Marker) -> Result<PathBuf> {
        let dir = self.sub(PROCESSED_DIR);
        fsutil::ensure_dir(&dir)?;
        let path = dir.join(name);
        let body = serde_json::to_vec_pretty(marker).expect("a marker always serialises");
        if !fsutil::create_exclusive(&path, &body)? {
            return Err(Error::AlreadyProcessed {
                name: name.to_string(),
            });
        }
        fsutil::sync_dir(&dir)?;
        Ok(path)
    }

    /// Moves inbox file `name` into `sub` (`.quarantine` or `.archive`),
    /// never replacing anything there, with its processed marker and an
    /// optional `<name>.reason`. Nothing is deleted.
    pub fn move_out(&self, name: &str, sub: &str, reason: Option<&str>) -> Result<PathBuf> {
        let dir = self.sub(sub);
        fsutil::ensure_dir(&dir)?;
        let target = move_no_replace(&self.dir.join(name), &dir, name)?;
        let marker = self.sub(PROCESSED_DIR).join(name);
        if fs::symlink_metadata(&marker).is_ok() {
            let markers = dir.join(PROCESSED_DIR);
            fsutil::ensure_dir(&markers)?;
            move_no_replace(&marker, &markers, name)?;
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
        Ok(target)
    }

    /// The approval state of a message whose decision is `gated` or not.
    pub fn approval(&self, name: &str, gated: bool) -> Approval {
        if !gated {
            return Approval::NotNeeded;
        }
        let path = self.sub(APPROVALS_DIR).join(format!("{name}.json"));
        let Ok(text) = fs::read_to_string(path) else {
            return Approval::Pending;
        };
        let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        match value.get("decision").and_then(|d| d.as_str()) {
            Some("approved") => Approval::Approved,
            Some("rejected") => Approval::Rejected,
            _ => Approval::Pending,
        }
    }

    pub fn approval_record(&self, name: &str) -> Option<ApprovalRecord> {
        let path = self.sub(APPROVALS_DIR).join(format!("{name}.json"));
        serde_json::from_str(&fs::read_to_string(path).ok()?).ok()
    }

    /// Records a person's decision. Decisions are never replaced: a second
    /// one fails and names the first.
    pub fn record_approval(&self, record: &ApprovalRecord) -> Result<PathBuf> {
        let dir = self.sub(APPROVALS_DIR);
        fsutil::ensure_dir(&dir)?;
        let path = dir.join(format!("{}.json", record.file));
        let body = serde_json::to_vec_pretty(record).expect("a record always serialises");
        if !fsutil::create_exclusive(&path, &body)? {
            let existing = self.approval_record(&record.file);
            return Err(Error::AlreadyDecided {
                name: record.file.clone(),
                decision: existing
                    .as_ref()
                    .map_or("decided".into(), |r| r.decision.clone()),
                by: existing.as_ref().map_or("someone".into(), |r| r.by.clone()),
                at: existing.map_or("an earlier time".into(), |r| r.at),
            });
        }
        fsutil::sync_dir(&dir)?;
        Ok(path)
    }

    /// The message files `channel` has already told about.
    pub fn announced(&self, channel: &str) -> HashSet<String> {
        fs::read_to_string(self.sub(&announced_file(channel)))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    pub fn set_announced(&self, channel: &str, names: &HashSet<String>) -> Result<()> {
        let mut sorted: Vec<&String> = names.iter().collect();
        sorted.sort();
        let bytes = serde_json::to_vec(&sorted).expect("names always serialise");
        fsutil::replace_atomic(&self.sub(&announced_file(channel)), &bytes)
    }
}

/// Moves `from` into `dir` as `name`, or `name.N` if that is taken; links
/// then unlinks, so an existing file is never replaced.
fn move_no_replace(from: &Path, dir: &Path, name: &str) -> Result<PathBuf> {
    for n in 0..1000 {
        let target = if n == 0 {
            dir.join(name)
        } else {
            dir.join(format!("{name}.{n}"))
        };
        match fs::hard_link(from, &target) {
            Ok(()) => {
                fs::remove_file(from).map_err(|e| Error::io("remove", from, e))?;
                return Ok(target);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Error::io("move", from, e)),
        }
    }
    Err(Error::usage(
        format!("no free name for {name} in {}", dir.display()),
        "clean up that folder",
    ))
}

/// Names of the message files directly in `dir`, unsorted.
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
    match fsutil::read_limited(path, limit) {
        Ok(bytes) => message::parse(&bytes, Some(name)),
        Err(ReadLimited::Symlink) => Err("is a symbolic link; not read".into()),
        Err(ReadLimited::NotAFile) => Err("is not a regular file".into()),
        Err(ReadLimited::TooLarge(n)) => Err(format!("is {n} bytes, over the {limit} byte limit")),
        Err(ReadLimited::Io(e)) => Err(format!("cannot be read: {e}")),
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

fn claim_is_stale(path: &Path, body: &[u8], now: DateTime<Utc>) -> bool {
    let claimed_at = serde_json::from_slice::<ClaimBody>(body)
        .ok()
        .and_then(|c| parse_time(&c.claimed_at))
        .or_else(|| {
            let modified = fs::metadata(path).ok()?.modified().ok()?;
            Some(DateTime::<Utc>::from(modified))
        });
    claimed_at.is_some_and(|t| now - t > Duration::minutes(CLAIM_STALE_AFTER_MINUTES))
}
