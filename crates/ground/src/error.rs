//! Typed errors of the library and the exit codes of SPEC §13. What the
//! command line makes of an error (its exit code, the `hint:` that tells a
//! user how to fix it, the `--json` form) is `hints`, above every module;
//! rendering happens once, in `run`.

use std::io;
use std::path::{Path, PathBuf};

/// Process exit codes, SPEC §13.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    Success = 0,
    Failure = 1,
    Usage = 2,
    NotFound = 3,
    Timeout = 4,
    Refused = 5,
    Attention = 6,
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(code: ExitCode) -> Self {
        std::process::ExitCode::from(code as u8)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot {op} {}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// `inside`: the initialised repositories in `start` itself (folder
    /// names, sorted), when it is the folder that holds them.
    #[error("no AEA repository found at {} or any parent directory", start.display())]
    NoRepository { start: PathBuf, inside: Vec<String> },

    #[error("{} has no .aea/ folder", path.display())]
    NotInitialized { path: PathBuf },

    #[error("{} is a symbolic link; aea only uses real folders and files", path.display())]
    Symlink { path: PathBuf },

    #[error("{} exists but is not a directory", path.display())]
    NotADirectory { path: PathBuf },

    #[error("{} {detail}", path.display())]
    UnsafeState { path: PathBuf, detail: String },

    #[error(
        "a message is waiting in {} already, and a Roo mailbox holds one per recipient; nothing replaced",
        path.display()
    )]
    MailboxSlotTaken { path: PathBuf },

    /// An event or edit of a collaboration folder that a rule of the
    /// protocol refuses (SPEC §17); nothing was written. It holds the
    /// collaboration protocol's own refusal (its rule, what is wrong, how
    /// to satisfy it), which that protocol's module reads back.
    #[error("{0}")]
    CollabRefused(Box<dyn std::error::Error + Send + Sync>),

    #[error("invalid agent id {id:?}: {reason}")]
    InvalidAgentId { id: String, reason: &'static str },

    /// `lead`, when known, is what aea found instead (a near id, a
    /// registered repository that moved, a folder of repositories): the
    /// hint follows it rather than the general one.
    #[error("no agent {target:?} found (tried: {})", tried.join("; "))]
    RecipientNotFound {
        target: String,
        tried: Vec<String>,
        lead: Option<RecipientLead>,
    },

    #[error("agent id {target:?} is ambiguous: {}", candidates.join(", "))]
    RecipientAmbiguous {
        target: String,
        candidates: Vec<String>,
    },

    #[error("refusing to send a message to this repository itself ({id})")]
    SendToSelf { id: String },

    /// `field` says where: `the body`, `a tag`, `the attached file x`.
    #[error("{field} looks like it carries a secret ({kind})")]
    SecretDetected { kind: &'static str, field: String },

    /// One of this user's aea private signing keys, in any spelling, in
    /// `field`. Never sent, whatever the flags: the key itself is never
    /// shown.
    #[error("{field} carries this user's aea private signing key")]
    OwnKeyDetected { field: String },

    /// A draft that is no message aea sends: nothing was written.
    #[error("{0}")]
    InvalidDraft(DraftProblem),

    /// An idempotency key that names another message than the one being
    /// sent, or whose record does not read; nothing was sent. `earlier`
    /// is the message id the key names, when its record reads.
    #[error("{}", match earlier {
        Some(id) => format!("idempotency key {key:?} was used for another message ({id})"),
        None => format!("the record of idempotency key {key:?} does not read"),
    })]
    SendKeyTaken {
        key: String,
        earlier: Option<String>,
    },

    /// A collaboration started without what the protocol needs to start
    /// one; nothing was written.
    #[error("{}", missing.what())]
    CollabIncomplete { missing: CollabPart },

    #[error("{message}")]
    Usage { message: String, hint: String },

    /// The value of flag `what` is not a duration; `source` is the
    /// duration parser's own refusal, which says what was given.
    #[error("invalid {what}")]
    BadDuration {
        what: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    #[error("no message matches {reference:?}")]
    MessageNotFound { reference: String },

    /// `aea status` of a reference that names no message this repository
    /// sent.
    #[error("no sent message matches {reference:?}")]
    SentNotFound {
        reference: String,
        /// It names mail this repository received instead.
        received: bool,
    },

    #[error("no log entries for message {reference:?}")]
    NoLogEntries { reference: String, filtered: bool },

    #[error("{reference:?} matches {} messages: {}", candidates.len(), candidates.join(", "))]
    AmbiguousReference {
        reference: String,
        candidates: Vec<String>,
    },

    #[error("{}: invalid message: {reason}", path.display())]
    InvalidMessage { path: PathBuf, reason: String },

    #[error("{name} is already processed")]
    AlreadyProcessed { name: String },

    #[error("{name} is being processed by {holder}")]
    Claimed { name: String, holder: String },

    #[error("{name} needs a person's approval first: {reason}")]
    Gated {
        name: String,
        reason: String,
        /// A person already rejected it: approving is no longer possible.
        rejected: bool,
    },

    /// Mail that is never acted on (invalid, or rejected by the policy):
    /// approving it cannot help.
    #[error("{name} cannot be acted on: {reason}")]
    NotActionable { name: String, reason: String },

    /// Another user's file in a shared inbox holds other bytes than the
    /// ones the receiver read (its copy): a decision now would bind bytes
    /// nobody was shown. `command` is what was refused.
    #[error(
        "{name} changed after it was read: its sender rewrote the file in .aea/ after aea took its copy, so `aea {command}` did nothing"
    )]
    ChangedAfterRead { name: String, command: &'static str },

    /// A second file holding an id the receiver accepted already; `held`
    /// is aea's short reference of the file that holds it.
    #[error(
        "{name} is a replay: its message id is already held by {held} (an id is accepted once); aea moved it to .aea/.quarantine/"
    )]
    Replayed { name: String, held: String },

    #[error("{name} does not need approval (decision {action}, rule {rule})")]
    NotGated {
        name: String,
        action: &'static str,
        rule: String,
    },

    /// A person's decision is already recorded for these bytes: the
    /// store's `AlreadyDecided`, which says which decision, read back
    /// with `AlreadyDecided::of`.
    #[error("{0}")]
    AlreadyDecided(Box<dyn std::error::Error + Send + Sync>),

    #[error("{} is not in a git repository: {detail}", path.display())]
    NotAGitRepository { path: PathBuf, detail: String },

    #[error("git runs this repository's hooks from {}, set in your global or system git config; installing there would affect every repository", path.display())]
    HooksPathInherited { path: PathBuf },

    #[error("git runs this repository's hooks at {}, where they cannot see the .aea/ in {}", root.display(), repo.display())]
    HooksCannotSee { root: PathBuf, repo: PathBuf },

    #[error("{} exists and is not aea's; it was kept", path.display())]
    HookConflict { path: PathBuf },

    #[error("{}: {detail}", path.display())]
    SettingsInvalid { path: PathBuf, detail: String },

    #[error("git could not {op} the repository at {}", path.display())]
    Git {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    #[error("the mail store {} could not {op}", path.display())]
    MailStore {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    #[error("sync with {remote} failed")]
    SyncFailed {
        remote: String,
        #[source]
        source: GitError,
    },

    #[error("no mail remote is configured")]
    NoMailRemote,

    #[error(
        "refusing mail remote {remote:?}: it begins with `-`, so git would read it as an option"
    )]
    RemoteLooksLikeOption { remote: String },

    #[error("refusing mail remote {remote:?}: {why}")]
    RemoteRefused { remote: String, why: String },

    #[error("trust store {} is not valid TOML: {detail}", path.display())]
    TrustStoreCorrupt { path: PathBuf, detail: String },

    #[error("`aea review` needs an interactive terminal")]
    NeedsTerminal,

    #[error("cannot reply to {agent}: {reason}")]
    NoReturnAddress { agent: String, reason: String },

    #[error("no signing key for agent {agent} on this machine ({})", path.display())]
    NoSigningKey { agent: String, path: PathBuf },

    #[error("{} is not a private key aea can read", path.display())]
    KeyInvalid { path: PathBuf },

    #[error("registry {} is not valid TOML: {detail}", path.display())]
    RegistryCorrupt { path: PathBuf, detail: String },

    #[error("agent id {id:?} is already registered for {}", other.display())]
    RegistryConflict { id: String, other: PathBuf },

    #[error("{} is not a valid aea config", path.display())]
    ConfigInvalid {
        path: PathBuf,
        #[source]
        problem: ConfigProblem,
    },

    #[error("delivered to {} of {} recipients", delivered.len(), delivered.len() + failed.len())]
    PartialDelivery {
        delivered: Vec<String>,
        failed: Vec<String>,
    },

    /// Something aea itself got wrong: a state it never creates.
    #[error("internal error: {what}")]
    Internal { what: String },

    #[error("demo step `{step}` failed (exit status {})", *code as u8)]
    DemoStepFailed { step: String, code: ExitCode },

    /// Every name tried for a new file in `dir` was taken.
    #[error("no free file name in {}", dir.display())]
    NoFreeName { dir: PathBuf },

    #[error("the monitor did not come up within {} seconds", within.as_secs())]
    MonitorDidNotStart { within: std::time::Duration },

    #[error("cannot tell where the aea binary is")]
    UnknownExecutable,

    #[error("no user config directory, so no {}", needed_for.what())]
    NoConfigDir { needed_for: ConfigDirUse },

    #[error("attachment {} is outside this repository", path.display())]
    AttachmentOutside { path: PathBuf },

    /// A person's decision that cannot be recorded as asked: its signature
    /// is missing, not an approver's or does not verify (SPEC §19), or the
    /// message's bytes are not the ones the person named. Nothing was
    /// recorded.
    #[error("{message}")]
    DecisionRefused { message: String, hint: String },

    /// An attachment aea will not copy, carry or write out; nothing was written.
    #[error("{message}")]
    AttachmentRefused { message: String, hint: String },

    #[error("{} is a symbolic link that leads outside the repository", path.display())]
    LinkLeavesRepository { path: PathBuf },

    #[error("{} is a symbolic link to nothing", path.display())]
    DanglingLink { path: PathBuf },

    #[error("the message is {bytes} bytes, over the {limit} byte limit of {}", repo.display())]
    MessageTooLarge {
        bytes: u64,
        limit: u64,
        repo: PathBuf,
    },

    #[error("{} is not agent {id} (its config says {found:?})", path.display())]
    RegistryMismatch {
        id: String,
        path: PathBuf,
        found: String,
    },

    #[error("{}", match path {
        Some(path) => format!("{} publishes no agent.public_key", path.display()),
        None => format!("agent {agent} has no path on this machine to read its key from"),
    })]
    NoKeyToPin {
        agent: String,
        path: Option<PathBuf>,
    },

    #[error("{} already exists", path.display())]
    BackupExists { path: PathBuf },

    /// The key an agent's repository publishes is not the one pinned for
    /// it: refused until a person pins the new one by hand.
    #[error(
        "{} now publishes key {} for {}, not the pinned {}; nothing changed",
        .0.path.display(),
        .0.published_fingerprint,
        .0.agent,
        .0.pinned_fingerprint
    )]
    KeyChanged(Box<KeyChange>),
}

/// What [`Error::KeyChanged`] says.
#[derive(Debug)]
pub struct KeyChange {
    pub agent: String,
    /// The agent's repository, which publishes the new key.
    pub path: PathBuf,
    pub pinned_fingerprint: String,
    pub published_fingerprint: String,
    /// The new key, `ed25519:<hex>`.
    pub published: String,
}

/// What aea found where the agent named was not: it knows better than the
/// general advice ([`Error::RecipientNotFound`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecipientLead {
    /// A known agent whose id is close to the one given.
    Near { id: String },
    /// The agent is registered at `registered`, which no longer exists or
    /// no longer holds a `.aea/` folder.
    Moved { registered: PathBuf },
    /// The path given is no repository but a folder holding the
    /// initialised repositories `inside` (their folder names, sorted).
    HoldsRepositories { inside: Vec<String> },
    /// A mail remote is configured: the agent may live behind it, which
    /// is sent to only when asked.
    BehindRemote,
}

/// What is wrong with a draft ([`Error::InvalidDraft`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DraftProblem {
    /// The subject is empty, more than one line or too long: `reason`.
    #[error("invalid subject: {reason}")]
    Subject { reason: String },
    /// A tag that is blank or holds a control character.
    #[error("invalid tag {tag:?}")]
    Tag { tag: String },
}

/// What a collaboration needs to start ([`Error::CollabIncomplete`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollabPart {
    /// What it must decide or produce: given blank.
    Objective,
    Participants,
    CompletionGates,
}

impl CollabPart {
    fn what(self) -> &'static str {
        match self {
            CollabPart::Objective => "the objective must not be blank",
            CollabPart::Participants => "a collaboration needs participants",
            CollabPart::CompletionGates => "a collaboration needs completion gates",
        }
    }
}

/// What `aea` wanted the user's config directory for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigDirUse {
    SigningKey,
    Registry,
    TrustStore,
    /// The private state of an inbox outside any git repository.
    PrivateState,
    /// The SSH keys whose signature approves (SPEC §19).
    Approvers,
}

impl ConfigDirUse {
    fn what(self) -> &'static str {
        match self {
            ConfigDirUse::SigningKey => "signing key",
            ConfigDirUse::Registry => "registry",
            ConfigDirUse::TrustStore => "trust store",
            ConfigDirUse::PrivateState => "private state of an inbox outside git",
            ConfigDirUse::Approvers => "approver list",
        }
    }
}

/// Why the user's `git` could not fetch from or push to a mail remote.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot run git")]
    Spawn(#[source] io::Error),
    /// git ran and failed; `said` is the line of its stderr that says why.
    #[error("git {command}: {said}")]
    Failed { command: &'static str, said: String },
    #[error("{refname} kept moving: pushes were rejected {attempts} times")]
    KeptMoving { refname: String, attempts: u32 },
    /// Every push was refused because the remote's lock file for the ref
    /// exists: a push that was killed left it there.
    #[error("the remote's lock {lock} never went away: a push that was killed left it")]
    StaleLock { refname: String, lock: String },
}

/// What is wrong with an `agent-config.yaml`.
#[derive(Debug, thiserror::Error)]
pub enum ConfigProblem {
    #[error("the file is missing")]
    Missing,
    /// The YAML does not parse, or does not fit aea's schema. `message` is
    /// serde-saphyr's wording for users, without location and snippet.
    #[error("{}{message}", match (line, column) {
        (Some(l), Some(c)) => format!("line {l} column {c}: "),
        (Some(l), None) => format!("line {l}: "),
        _ => String::new(),
    })]
    Yaml {
        line: Option<u64>,
        column: Option<u64>,
        message: String,
    },
    /// A value that reads but means nothing to aea; `key` is its dotted path.
    #[error("{key}: {message}")]
    Value { key: String, message: String },
    #[error("{key}: invalid glob {pattern:?}")]
    Glob {
        key: String,
        pattern: String,
        #[source]
        source: globset::Error,
    },
}

impl ConfigProblem {
    pub fn value(key: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigProblem::Value {
            key: key.into(),
            message: message.into(),
        }
    }
}

/// `err` and its causes on one line, `: `-separated: for reports that
/// give each error one line (`validate`, `doctor`, hook output).
pub fn one_line(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl Error {
    pub fn io(op: &'static str, path: impl AsRef<Path>, source: io::Error) -> Self {
        Error::Io {
            op,
            path: path.as_ref().to_path_buf(),
            source,
        }
    }

    pub fn usage(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Error::Usage {
            message: message.into(),
            hint: hint.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_joins_the_causes() {
        let e = Error::SyncFailed {
            remote: "/srv/m.git".into(),
            source: GitError::Failed {
                command: "push",
                said: "fatal: denied".into(),
            },
        };
        assert_eq!(
            one_line(&e),
            "sync with /srv/m.git failed: git push: fatal: denied"
        );
    }
}
