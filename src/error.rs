//! Typed errors of the library, their exit codes (SPEC §13) and the `hint:`
//! that tells a user how to fix each one. Rendering happens once, in `main`.

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

    #[error("no AEA repository found at {} or any parent directory", start.display())]
    NoRepository { start: PathBuf },

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
    /// protocol refuses (SPEC §17); nothing was written.
    #[error("{0}")]
    CollabRefused(crate::collab::Refusal),

    #[error("invalid agent id {id:?}: {reason}")]
    InvalidAgentId { id: String, reason: &'static str },

    /// `hint`, when given, replaces the general one: it knows better
    /// (a near id, a registered repository that moved).
    #[error("no agent {target:?} found (tried: {})", tried.join("; "))]
    RecipientNotFound {
        target: String,
        tried: Vec<String>,
        hint: Option<String>,
    },

    #[error("agent id {target:?} is ambiguous: {}", candidates.join(", "))]
    RecipientAmbiguous {
        target: String,
        candidates: Vec<String>,
    },

    #[error("refusing to send a message to this repository itself ({id})")]
    SendToSelf { id: String },

    #[error("the message looks like it carries a secret ({kind})")]
    SecretDetected { kind: &'static str },

    #[error("{message}")]
    Usage { message: String, hint: String },

    #[error("invalid {what}")]
    BadDuration {
        what: &'static str,
        #[source]
        source: crate::duration::DurationError,
    },

    #[error("no message matches {reference:?}")]
    MessageNotFound { reference: String },

    /// `aea status` of a reference that names no message this repository
    /// sent.
    #[error("no sent message matches {reference:?}")]
    SentNotFound { reference: String },

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

    #[error("{name} was already {decision} by {by} at {at}")]
    AlreadyDecided {
        name: String,
        decision: String,
        by: String,
        at: String,
    },

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

/// What `aea` wanted the user's config directory for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigDirUse {
    SigningKey,
    Registry,
    TrustStore,
    /// The private state of an inbox outside any git repository.
    PrivateState,
}

impl ConfigDirUse {
    fn what(self) -> &'static str {
        match self {
            ConfigDirUse::SigningKey => "signing key",
            ConfigDirUse::Registry => "registry",
            ConfigDirUse::TrustStore => "trust store",
            ConfigDirUse::PrivateState => "private state of an inbox outside git",
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

    /// The key or line to fix, as the hint names it.
    fn place(&self) -> Option<String> {
        match self {
            ConfigProblem::Missing => None,
            ConfigProblem::Yaml { line, .. } => line.map(|l| format!("line {l}")),
            ConfigProblem::Value { key, .. } | ConfigProblem::Glob { key, .. } => {
                Some(format!("`{key}`"))
            }
        }
    }
}

/// What a command run with `--json` prints on stderr, on one line, when it
/// fails: `{"error": {...}}`, the exit code unchanged.
#[derive(Debug, serde::Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ErrorOutput {
    pub error: ErrorDetail,
}

#[derive(Debug, serde::Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ErrorDetail {
    /// The `error:` line.
    pub message: String,
    /// The `caused by:` lines, outermost first.
    pub causes: Vec<String>,
    /// The `hint:` line: what to do about it.
    pub hint: Option<String>,
    /// The exit status (SPEC §13).
    pub code: u8,
}

impl ErrorOutput {
    pub fn of(err: &Error) -> Self {
        let mut causes = Vec::new();
        let mut source = std::error::Error::source(err);
        while let Some(cause) = source {
            causes.push(cause.to_string());
            source = cause.source();
        }
        ErrorOutput {
            error: ErrorDetail {
                message: err.to_string(),
                causes,
                hint: err.hint(),
                code: err.exit_code() as u8,
            },
        }
    }

    /// A command-line syntax error (clap's), as `--json` prints it.
    pub fn usage(message: String, hint: String, code: u8) -> Self {
        ErrorOutput {
            error: ErrorDetail {
                message,
                causes: Vec::new(),
                hint: Some(hint),
                code,
            },
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

    pub fn exit_code(&self) -> ExitCode {
        match self {
            Error::Io { .. }
            | Error::InvalidMessage { .. }
            | Error::AlreadyProcessed { .. }
            | Error::Claimed { .. }
            | Error::RegistryCorrupt { .. }
            | Error::NoSigningKey { .. }
            | Error::KeyInvalid { .. }
            | Error::RegistryConflict { .. }
            | Error::ConfigInvalid { .. }
            | Error::PartialDelivery { .. }
            | Error::NotGated { .. }
            | Error::AlreadyDecided { .. }
            | Error::HookConflict { .. }
            | Error::SettingsInvalid { .. }
            | Error::SyncFailed { .. }
            | Error::MailStore { .. }
            | Error::Git { .. }
            | Error::TrustStoreCorrupt { .. }
            | Error::Internal { .. }
            | Error::DemoStepFailed { .. }
            | Error::NoFreeName { .. }
            | Error::UnknownExecutable
            | Error::NoConfigDir { .. }
            | Error::RegistryMismatch { .. }
            | Error::BackupExists { .. } => ExitCode::Failure,
            Error::InvalidAgentId { .. }
            | Error::RecipientAmbiguous { .. }
            | Error::Usage { .. }
            | Error::BadDuration { .. }
            | Error::AmbiguousReference { .. }
            | Error::NeedsTerminal
            | Error::NoMailRemote => ExitCode::Usage,
            Error::NoRepository { .. }
            | Error::NotInitialized { .. }
            | Error::RecipientNotFound { .. }
            | Error::MessageNotFound { .. }
            | Error::NoLogEntries { .. }
            | Error::SentNotFound { .. }
            | Error::NotAGitRepository { .. }
            | Error::NoKeyToPin { .. } => ExitCode::NotFound,
            Error::MonitorDidNotStart { .. } => ExitCode::Timeout,
            // A file where aea keeps a folder is unsound state, as a symlink
            // is: a pull can put one there, and the commit gate fails closed.
            Error::Symlink { .. }
            | Error::NotADirectory { .. }
            | Error::UnsafeState { .. }
            | Error::MailboxSlotTaken { .. }
            | Error::CollabRefused(_)
            | Error::SendToSelf { .. }
            | Error::SecretDetected { .. }
            | Error::NoReturnAddress { .. }
            | Error::Gated { .. }
            | Error::NotActionable { .. }
            | Error::ChangedAfterRead { .. }
            | Error::Replayed { .. }
            | Error::HooksPathInherited { .. }
            | Error::HooksCannotSee { .. }
            | Error::RemoteLooksLikeOption { .. }
            | Error::RemoteRefused { .. }
            | Error::AttachmentOutside { .. }
            | Error::AttachmentRefused { .. }
            | Error::LinkLeavesRepository { .. }
            | Error::DanglingLink { .. }
            | Error::MessageTooLarge { .. }
            | Error::KeyChanged(_) => ExitCode::Refused,
        }
    }

    /// The line printed after `hint:`: what the user can do about it.
    pub fn hint(&self) -> Option<String> {
        let hint = match self {
            Error::Io { source, .. } => match source.kind() {
                io::ErrorKind::PermissionDenied => {
                    "check the file's permissions and owner".to_string()
                }
                io::ErrorKind::NotFound => "check that the path exists".to_string(),
                _ => return None,
            },
            Error::NoRepository { .. } => {
                "run `aea init` in the repository, or pass `--repo PATH`".to_string()
            }
            Error::NotInitialized { path } => {
                format!("run `aea init {}` first", path.display())
            }
            Error::Symlink { path } => format!(
                "replace {} with a real directory or file inside the repository",
                path.display()
            ),
            Error::NotADirectory { path } => {
                format!("move {} aside and run `aea init` again", path.display())
            }
            // The path may be a file a sender named: quoted for the shell.
            Error::UnsafeState { path, .. } => format!(
                "aea reads its state only from regular files and real folders owned by the receiver; move {0} aside (`mv {0} {0}.suspect`) and run `aea doctor`",
                crate::printer::shell_quote(&path.to_string_lossy())
            ),
            Error::CollabRefused(refusal) => refusal.hint.clone(),
            Error::MailboxSlotTaken { .. } => "the recipient deletes that file once it has processed the message: send again then (the message is not lost: it was not sent)".to_string(),
            Error::InvalidAgentId { .. } => {
                "an agent id is 2-64 characters of letters, digits, `_` and `-`, starting with a letter or digit".to_string()
            }
            Error::RecipientNotFound { hint: None, .. } => {
                "pass the recipient's path (`--to ../web`), or run `aea init` there so it registers; `aea agents` lists known agents".to_string()
            }
            Error::RecipientAmbiguous { .. } => {
                "pass the recipient's path instead of its id".to_string()
            }
            Error::SendToSelf { .. } => "pass another repository with `--to`".to_string(),
            Error::SecretDetected { .. } => {
                "remove the secret, or pass `--allow-secrets` if it is not one".to_string()
            }
            Error::Usage { hint, .. }
            | Error::AttachmentRefused { hint, .. }
            | Error::RecipientNotFound {
                hint: Some(hint), ..
            } => hint.clone(),
            Error::BadDuration { .. } => crate::duration::EXAMPLES.to_string(),
            Error::MessageNotFound { .. } => {
                "`aea check` lists unprocessed messages with their references (`m…`)".to_string()
            }
            Error::SentNotFound { .. } => {
                "`aea log --event sent` lists what this repository sent, with each message's id and file name".to_string()
            }
            Error::NoLogEntries { filtered: true, .. } => {
                "drop `--since`/`--event` to see every entry about it; `aea log` lists all entries".to_string()
            }
            Error::NoLogEntries { .. } => {
                "pass a reference (`m…`), id or file name as `aea check`, `aea check --processed` or `aea log` show them".to_string()
            }
            Error::AmbiguousReference { .. } => {
                "use one of the longer references listed, or more characters of the id or file name"
                    .to_string()
            }
            Error::InvalidMessage { .. } => {
                "`aea validate` lists what is wrong with each file".to_string()
            }
            Error::AlreadyProcessed { .. } => {
                "nothing to do; `aea check` lists what is still waiting".to_string()
            }
            Error::Claimed { .. } => {
                "wait for the other process to finish; a claim older than 30 minutes can be taken over".to_string()
            }
            Error::Gated {
                name,
                rejected: true,
                ..
            } => format!(
                "a person rejected it, and decisions are not changed: mark it handled with `aea process {} --outcome ignored`",
                crate::shortref::of(name)
            ),
            Error::Gated { name, .. } => format!(
                "a person approves it with `aea approve {}` (or `aea review`); or process it with --outcome ignored or deferred",
                crate::shortref::of(name)
            ),
            Error::NotActionable { name, .. } => format!(
                "mark it handled with `aea process {0} --outcome ignored`, or move it aside with `aea quarantine {0} --reason …`",
                crate::shortref::of(name)
            ),
            Error::ChangedAfterRead { name, command } => format!(
                "run `aea show {0}` again: it shows what aea read (its copy) and puts that copy back in place of the rewritten file; then `aea {command} {0}`",
                crate::shortref::of(name)
            ),
            Error::Replayed { held, .. } => format!(
                "the message itself is {held}: `aea show {held}`; `aea log --event quarantined` says what was set aside"
            ),
            Error::NotGated { .. } => {
                "process it as usual with `aea process`; `aea pending` lists what waits for a person".to_string()
            }
            Error::AlreadyDecided { name, decision, .. } if decision == "rejected" => format!(
                "decisions are kept as an audit trail and not changed: mark it handled with `aea process {} --outcome ignored`",
                crate::shortref::of(name)
            ),
            Error::AlreadyDecided { name, decision, .. } if decision == "approved" => format!(
                "nothing to decide: act on it, then mark it done with `aea process {}`",
                crate::shortref::of(name)
            ),
            Error::AlreadyDecided { .. } => {
                "decisions are kept as an audit trail and not changed; `aea log --message <ref>` shows the history".to_string()
            }
            Error::NotAGitRepository { .. } => {
                "run `git init` first, or pass `--repo` with the path of a git repository".to_string()
            }
            Error::HooksPathInherited { path } => format!(
                "either give this repository its own hooks directory (`git config core.hooksPath .git/hooks`, then `aea hooks install`), \
or remove the global setting (`git config --global --unset core.hooksPath`), \
or install into {} for every repository with `aea hooks install --force`",
                path.display()
            ),
            Error::HooksCannotSee { root, .. } => format!(
                "run `aea init` in {} for one inbox for the whole repository, or keep this one and rely on `aea check` and the agent hooks (`aea hooks install --agents`); `aea init --no-git-hooks` skips the git hooks",
                root.display()
            ),
            Error::HookConflict { path } => format!(
                "move {} aside by hand, then run `aea hooks install` again",
                path.display()
            ),
            Error::SettingsInvalid { .. } => {
                "fix the JSON by hand (aea leaves it untouched), then run the command again".to_string()
            }
            Error::SyncFailed {
                source: GitError::KeptMoving { .. },
                ..
            } => {
                "nothing was lost: queued mail stays queued; others are pushing to the same remote, so run `aea sync` again in a moment".to_string()
            }
            Error::SyncFailed {
                source: GitError::StaleLock { lock, .. },
                ..
            } => format!(
                "nothing was lost: queued mail stays queued; if no other `aea sync` or `git push` to that remote is running, remove the lock on the remote's host (`rm '{lock}'`), then run `aea sync` again"
            ),
            Error::SyncFailed { remote, .. } => format!(
                "nothing was lost: queued mail stays queued; check that `git ls-remote -- {remote}` works, then run `aea sync` again"
            ),
            Error::Git { path, .. } => format!(
                "run `git status` in {} to see what git says, fix it, then run the command again",
                path.display()
            ),
            Error::MailStore { path, .. } => format!(
                "nothing was lost: queued mail stays queued; the store holds only copies, so move it aside (`mv {0} {0}.bad`) and run `aea sync` again to rebuild it from the remote",
                path.display()
            ),
            Error::RemoteRefused { .. } => {
                "name the remote as a URL (ssh://host/path, https://…, file:///path), user@host:path, or a path".to_string()
            }
            Error::RemoteLooksLikeOption { .. } => {
                "name the remote by a URL or path that does not begin with `-` (e.g. `./-mail.git`)".to_string()
            }
            Error::TrustStoreCorrupt { path, .. } => format!(
                "fix or delete {}, then run `aea trust` again in each repository you trust",
                path.display()
            ),
            Error::NoMailRemote => {
                "pass `--remote URL`, or set `remote: URL` under `sync:` in .aea/agent-config.yaml".to_string()
            }
            Error::NeedsTerminal => {
                "run it in a terminal, or use `aea pending`, `aea approve` and `aea reject` from scripts".to_string()
            }
            Error::NoReturnAddress { agent, .. } => format!(
                "register the sender with `aea init` in its repository, or send a new message with `aea send --to <path-to-{agent}>`"
            ),
            Error::NoSigningKey { .. } => {
                "run `aea init` in this repository: it creates the key and publishes its public half".into()
            }
            Error::KeyInvalid { path } => format!(
                "the file must hold the 64 hex digits aea wrote; move it aside (`mv {0} {0}.bak`) and run `aea init` for a new key, then tell the agents you write to (`aea agents trust`)",
                path.display()
            ),
            Error::RegistryCorrupt { path, .. } => format!(
                "fix the file by hand, or move it aside (`mv {0} {0}.bak`) and run `aea init` in each repository again",
                path.display()
            ),
            Error::RegistryConflict { .. } => {
                "choose another id with `--id`, or remove the old repository's entry from the registry".to_string()
            }
            Error::ConfigInvalid {
                path,
                problem: ConfigProblem::Missing,
            } => format!("run `aea init` to write a new {}", path.display()),
            Error::ConfigInvalid { path, problem } => match problem.place() {
                Some(place) => format!(
                    "fix {place} of {}, or compare with the presets the README describes under Presets (`policies/*.yaml` in aea's source)",
                    path.display()
                ),
                None => format!(
                    "fix {}, or compare with the presets the README describes under Presets (`policies/*.yaml` in aea's source)",
                    path.display()
                ),
            },
            Error::PartialDelivery { delivered, failed } => format!(
                "delivered: {}; failed: {}. Once they can be reached, run the same `aea send` again (within 24 hours): it reuses the message id and delivers only to them",
                if delivered.is_empty() {
                    "none".to_string()
                } else {
                    delivered.join(", ")
                },
                failed.join(", ")
            ),
            Error::Internal { .. } => {
                "this is a bug in aea; please report it with the command that led here".to_string()
            }
            Error::DemoStepFailed { .. } => {
                "the step's own error is printed above; unless it is about this machine (HOME, git, disk), report it as a bug with the transcript".to_string()
            }
            Error::NoFreeName { dir } => format!(
                "too many files in {} share the names aea tries; move old ones aside (`aea gc` for processed mail), then run the command again",
                dir.display()
            ),
            Error::MonitorDidNotStart { .. } => {
                "run `aea monitor run` in a terminal to see why".to_string()
            }
            Error::UnknownExecutable => "run aea by its full path".to_string(),
            Error::NoConfigDir { needed_for } => match needed_for {
                ConfigDirUse::SigningKey => {
                    "set HOME (or XDG_CONFIG_HOME) so aea can keep its keys".to_string()
                }
                ConfigDirUse::Registry => {
                    "set HOME (or XDG_CONFIG_HOME), or AEA_REGISTRY to a file path".to_string()
                }
                ConfigDirUse::TrustStore => {
                    "set HOME (or XDG_CONFIG_HOME) so aea can keep its trust store there".to_string()
                }
                ConfigDirUse::PrivateState => {
                    "set HOME (or XDG_STATE_HOME, or AEA_STATE_DIR), or make the folder a git repository (`git init`): its private state then lives in .git/aea/".to_string()
                }
            },
            Error::AttachmentOutside { .. } => {
                "attach files of this repository only; the recipient reads them by path".to_string()
            }
            Error::LinkLeavesRepository { path } => format!(
                "replace {} with a regular file, or a link to a file inside the repository",
                path.display()
            ),
            Error::DanglingLink { path } => format!("remove or fix {}", path.display()),
            Error::MessageTooLarge { .. } => {
                "shorten the body, or attach files with `--attach` instead of inlining them; the receiver sets the limit in `limits.max_message_bytes`".to_string()
            }
            Error::RegistryMismatch { id, .. } => format!(
                "fix the registry entry with `aea agents add {id} --path <repository> --force`"
            ),
            Error::NoKeyToPin { path: Some(path), .. } => format!(
                "run `aea init` in {} to create its key, or pass --key, or --allow-unsigned for an agent that cannot sign",
                path.display()
            ),
            Error::NoKeyToPin { path: None, .. } => {
                "pass --key ed25519:… as the agent's owner gives it to you".to_string()
            }
            Error::BackupExists { .. } => {
                "wait a second and run it again, or move the old backup away".to_string()
            }
            Error::KeyChanged(change) => format!(
                "mail signed with the new key is refused as forged. Ask {0}'s owner to run `aea whoami` in its repository; only if it prints {1}, pin it: aea agents trust {0} --key {2}",
                change.agent, change.published_fingerprint, change.published
            ),
        };
        Some(hint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Number of arms of [`expected_code`]; each returns its own index.
    const VARIANTS: usize = 63;

    /// SPEC §13 for each variant, written apart from [`Error::exit_code`]
    /// and without a wildcard: a new variant does not compile until it is
    /// given its code here and an example in [`examples`].
    fn expected_code(e: &Error) -> (usize, ExitCode) {
        use ExitCode::*;
        match e {
            Error::Io { .. } => (0, Failure),
            Error::NoRepository { .. } => (1, NotFound),
            Error::NotInitialized { .. } => (2, NotFound),
            Error::Symlink { .. } => (3, Refused),
            Error::NotADirectory { .. } => (4, Refused),
            Error::UnsafeState { .. } => (5, Refused),
            Error::InvalidAgentId { .. } => (6, Usage),
            Error::RecipientNotFound { .. } => (7, NotFound),
            Error::RecipientAmbiguous { .. } => (8, Usage),
            Error::SendToSelf { .. } => (9, Refused),
            Error::SecretDetected { .. } => (10, Refused),
            Error::Usage { .. } => (11, Usage),
            Error::BadDuration { .. } => (12, Usage),
            Error::MessageNotFound { .. } => (13, NotFound),
            Error::AmbiguousReference { .. } => (14, Usage),
            Error::InvalidMessage { .. } => (15, Failure),
            Error::AlreadyProcessed { .. } => (16, Failure),
            Error::Claimed { .. } => (17, Failure),
            Error::Gated { .. } => (18, Refused),
            Error::NotGated { .. } => (19, Failure),
            Error::AlreadyDecided { .. } => (20, Failure),
            Error::NotAGitRepository { .. } => (21, NotFound),
            Error::HooksPathInherited { .. } => (22, Refused),
            Error::HookConflict { .. } => (23, Failure),
            Error::SettingsInvalid { .. } => (24, Failure),
            Error::MailStore { .. } => (25, Failure),
            Error::SyncFailed { .. } => (26, Failure),
            Error::NoMailRemote => (27, Usage),
            Error::RemoteLooksLikeOption { .. } => (28, Refused),
            Error::RemoteRefused { .. } => (29, Refused),
            Error::TrustStoreCorrupt { .. } => (30, Failure),
            Error::NeedsTerminal => (31, Usage),
            Error::NoReturnAddress { .. } => (32, Refused),
            Error::NoSigningKey { .. } => (33, Failure),
            Error::KeyInvalid { .. } => (34, Failure),
            Error::RegistryCorrupt { .. } => (35, Failure),
            Error::RegistryConflict { .. } => (36, Failure),
            Error::ConfigInvalid { .. } => (37, Failure),
            Error::PartialDelivery { .. } => (38, Failure),
            Error::Internal { .. } => (39, Failure),
            Error::DemoStepFailed { .. } => (40, Failure),
            Error::NoFreeName { .. } => (41, Failure),
            Error::MonitorDidNotStart { .. } => (42, Timeout),
            Error::UnknownExecutable => (43, Failure),
            Error::NoConfigDir { .. } => (44, Failure),
            Error::AttachmentOutside { .. } => (45, Refused),
            Error::LinkLeavesRepository { .. } => (46, Refused),
            Error::DanglingLink { .. } => (47, Refused),
            Error::MessageTooLarge { .. } => (48, Refused),
            Error::RegistryMismatch { .. } => (49, Failure),
            Error::NoKeyToPin { .. } => (50, NotFound),
            Error::BackupExists { .. } => (51, Failure),
            Error::NotActionable { .. } => (52, Refused),
            Error::Git { .. } => (53, Failure),
            Error::HooksCannotSee { .. } => (54, Refused),
            Error::MailboxSlotTaken { .. } => (55, Refused),
            Error::CollabRefused(_) => (56, Refused),
            Error::NoLogEntries { .. } => (57, NotFound),
            Error::SentNotFound { .. } => (58, NotFound),
            Error::AttachmentRefused { .. } => (59, Refused),
            Error::KeyChanged(_) => (60, Refused),
            Error::ChangedAfterRead { .. } => (61, Refused),
            Error::Replayed { .. } => (62, Refused),
        }
    }

    /// One value of every variant (several where the hint depends on a field).
    fn examples() -> Vec<Error> {
        let p = || PathBuf::from("/r/.aea/x");
        let s = |t: &str| t.to_string();
        vec![
            Error::HooksCannotSee {
                root: p(),
                repo: p(),
            },
            Error::Git {
                path: p(),
                op: "open",
                source: Box::new(io::Error::other("config file parse error")),
            },
            Error::MailboxSlotTaken { path: p() },
            Error::AttachmentRefused {
                message: s("attachment 1 does not match its SHA-256"),
                hint: s("ask the sender to send it again"),
            },
            Error::CollabRefused(crate::collab::Refusal::new(
                crate::collab::Rule::Turn,
                "seq 3: proposal_revised is the proposal owner's (web) to append, not api's",
                "wait for web; `aea collab next` says what is yours to do",
            )),
            Error::NotActionable {
                name: s("message-x.json"),
                reason: s("it is not a valid message"),
            },
            Error::ChangedAfterRead {
                name: s("message-20261121T100000000Z-from-api-0badf11e.json"),
                command: "approve",
            },
            Error::Replayed {
                name: s("message-20261121T100000000Z-from-api-5eed5eed.json"),
                held: s("m3f9a01c2"),
            },
            Error::io("read", p(), io::Error::from(io::ErrorKind::NotFound)),
            Error::io(
                "read",
                p(),
                io::Error::from(io::ErrorKind::PermissionDenied),
            ),
            Error::NoRepository { start: p() },
            Error::NotInitialized { path: p() },
            Error::Symlink { path: p() },
            Error::NotADirectory { path: p() },
            Error::UnsafeState {
                path: p(),
                detail: s("is writable by others"),
            },
            Error::InvalidAgentId {
                id: s("a b"),
                reason: "it has a space",
            },
            Error::RecipientNotFound {
                target: s("web"),
                tried: vec![s("registry")],
                hint: None,
            },
            Error::RecipientAmbiguous {
                target: s("web"),
                candidates: vec![s("/a"), s("/b")],
            },
            Error::SendToSelf { id: s("api") },
            Error::SecretDetected {
                kind: "github token",
            },
            Error::usage("bad flag", "use a good one"),
            Error::BadDuration {
                what: "--older-than",
                source: crate::duration::DurationError::Overflow(s("99999999w")),
            },
            Error::MessageNotFound { reference: s("m1") },
            Error::AmbiguousReference {
                reference: s("m"),
                candidates: vec![s("m1"), s("m2")],
            },
            Error::InvalidMessage {
                path: p(),
                reason: s("not valid JSON"),
            },
            Error::AlreadyProcessed { name: s("n") },
            Error::Claimed {
                name: s("n"),
                holder: s("pid 1"),
            },
            Error::Gated {
                name: s("message-20261121T100000000Z-from-api-0badf11e.json"),
                reason: s("handoff"),
                rejected: false,
            },
            Error::Gated {
                name: s("message-20261121T100000000Z-from-api-0badf11e.json"),
                reason: s("handoff"),
                rejected: true,
            },
            Error::NoLogEntries {
                reference: s("zzzz"),
                filtered: false,
            },
            Error::NoLogEntries {
                reference: s("zzzz"),
                filtered: true,
            },
            Error::SentNotFound {
                reference: s("nope"),
            },
            Error::NotGated {
                name: s("n"),
                action: "auto_respond",
                rule: s("r"),
            },
            Error::AlreadyDecided {
                name: s("n"),
                decision: s("approved"),
                by: s("me"),
                at: s("now"),
            },
            Error::NotAGitRepository {
                path: p(),
                detail: s("no .git"),
            },
            Error::HooksPathInherited { path: p() },
            Error::HookConflict { path: p() },
            Error::SettingsInvalid {
                path: p(),
                detail: s("not JSON"),
            },
            Error::MailStore {
                path: p(),
                op: "open",
                source: Box::new(io::Error::other("damaged")),
            },
            Error::SyncFailed {
                remote: s("/srv/mail.git"),
                source: GitError::Spawn(io::Error::from(io::ErrorKind::NotFound)),
            },
            Error::SyncFailed {
                remote: s("/srv/mail.git"),
                source: GitError::Failed {
                    command: "fetch",
                    said: s("fatal: no"),
                },
            },
            Error::SyncFailed {
                remote: s("/srv/mail.git"),
                source: GitError::KeptMoving {
                    refname: s("refs/aea/mail/web"),
                    attempts: 10,
                },
            },
            Error::SyncFailed {
                remote: s("/srv/mail.git"),
                source: GitError::StaleLock {
                    refname: s("refs/aea/mail/web"),
                    lock: s("/srv/mail.git/refs/aea/mail/web.lock"),
                },
            },
            Error::NoMailRemote,
            Error::RemoteLooksLikeOption { remote: s("-x") },
            Error::RemoteRefused {
                remote: s("ext::sh"),
                why: s("a program"),
            },
            Error::TrustStoreCorrupt {
                path: p(),
                detail: s("bad"),
            },
            Error::NeedsTerminal,
            Error::NoReturnAddress {
                agent: s("stranger"),
                reason: s("unknown"),
            },
            Error::NoSigningKey {
                agent: s("api"),
                path: p(),
            },
            Error::KeyInvalid { path: p() },
            Error::RegistryCorrupt {
                path: p(),
                detail: s("bad"),
            },
            Error::RegistryConflict {
                id: s("api"),
                other: p(),
            },
            Error::ConfigInvalid {
                path: p(),
                problem: ConfigProblem::Missing,
            },
            Error::ConfigInvalid {
                path: p(),
                problem: ConfigProblem::Yaml {
                    line: Some(3),
                    column: Some(1),
                    message: s("duplicate mapping key"),
                },
            },
            Error::ConfigInvalid {
                path: p(),
                problem: ConfigProblem::Yaml {
                    line: None,
                    column: None,
                    message: s("unexpected end of file"),
                },
            },
            Error::ConfigInvalid {
                path: p(),
                problem: ConfigProblem::value("limits.max_recipients", "0 is out of range"),
            },
            Error::PartialDelivery {
                delivered: vec![],
                failed: vec![s("web")],
            },
            Error::Internal { what: s("oops") },
            Error::DemoStepFailed {
                step: s("send"),
                code: ExitCode::Refused,
            },
            Error::NoFreeName { dir: p() },
            Error::MonitorDidNotStart {
                within: Duration::from_secs(5),
            },
            Error::UnknownExecutable,
            Error::NoConfigDir {
                needed_for: ConfigDirUse::SigningKey,
            },
            Error::NoConfigDir {
                needed_for: ConfigDirUse::Registry,
            },
            Error::NoConfigDir {
                needed_for: ConfigDirUse::TrustStore,
            },
            Error::NoConfigDir {
                needed_for: ConfigDirUse::PrivateState,
            },
            Error::AttachmentOutside { path: p() },
            Error::LinkLeavesRepository { path: p() },
            Error::DanglingLink { path: p() },
            Error::MessageTooLarge {
                bytes: 2_000_000,
                limit: 1_000_000,
                repo: p(),
            },
            Error::RegistryMismatch {
                id: s("web"),
                path: p(),
                found: s("api"),
            },
            Error::NoKeyToPin {
                agent: s("web"),
                path: Some(p()),
            },
            Error::NoKeyToPin {
                agent: s("web"),
                path: None,
            },
            Error::BackupExists { path: p() },
            Error::KeyChanged(Box::new(KeyChange {
                agent: s("api"),
                path: p(),
                pinned_fingerprint: s("SHA256:0123456789abcdef"),
                published_fingerprint: s("SHA256:fedcba9876543210"),
                published: s("ed25519:00"),
            })),
        ]
    }

    #[test]
    fn every_variant_has_its_exit_code_and_a_one_line_hint() {
        let mut seen = [false; VARIANTS];
        for e in examples() {
            let (index, code) = expected_code(&e);
            seen[index] = true;
            assert_eq!(e.exit_code(), code, "{e:?}");
            let hint = e.hint().unwrap_or_default();
            assert!(!hint.trim().is_empty(), "{e:?} has no hint");
            for text in [hint, one_line(&e)] {
                assert!(!text.contains('\n'), "{e:?}: {text:?} is not one line");
            }
        }
        let missing: Vec<usize> = (0..VARIANTS).filter(|&i| !seen[i]).collect();
        assert!(missing.is_empty(), "no example of arms {missing:?}");
    }

    #[test]
    fn an_io_error_without_advice_has_no_hint() {
        let e = Error::io("read", "/x", io::Error::other("odd"));
        assert_eq!(e.hint(), None);
    }

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
