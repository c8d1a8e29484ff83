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

    #[error("{} is a symbolic link; aea only writes into real folders and files", path.display())]
    Symlink { path: PathBuf },

    #[error("{} exists but is not a directory", path.display())]
    NotADirectory { path: PathBuf },

    #[error("{} {detail}", path.display())]
    UnsafeState { path: PathBuf, detail: String },

    #[error("invalid agent id {id:?}: {reason}")]
    InvalidAgentId { id: String, reason: &'static str },

    #[error("no agent {target:?} found (tried: {})", tried.join("; "))]
    RecipientNotFound { target: String, tried: Vec<String> },

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
    Gated { name: String, reason: String },

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

    #[error("{} exists and is not aea's; it was kept", path.display())]
    HookConflict { path: PathBuf },

    #[error("{}: {detail}", path.display())]
    SettingsInvalid { path: PathBuf, detail: String },

    #[error("the mail store {} could not {op}", path.display())]
    MailStore {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    #[error("sync with {remote} failed: {cause}")]
    SyncFailed { remote: String, cause: String },

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

    #[error("{}: {detail}", path.display())]
    ConfigInvalid { path: PathBuf, detail: String },

    #[error("delivered to {} of {} recipients", delivered.len(), delivered.len() + failed.len())]
    PartialDelivery {
        delivered: Vec<String>,
        failed: Vec<String>,
    },
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
            | Error::NotADirectory { .. }
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
            | Error::TrustStoreCorrupt { .. } => ExitCode::Failure,
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
            | Error::NotAGitRepository { .. } => ExitCode::NotFound,
            Error::Symlink { .. }
            | Error::UnsafeState { .. }
            | Error::SendToSelf { .. }
            | Error::SecretDetected { .. }
            | Error::NoReturnAddress { .. }
            | Error::Gated { .. }
            | Error::HooksPathInherited { .. }
            | Error::RemoteLooksLikeOption { .. }
            | Error::RemoteRefused { .. } => ExitCode::Refused,
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
            Error::UnsafeState { path, .. } => format!(
                "aea reads its state only from regular files and real folders owned by the receiver; move {0} aside (`mv {0} {0}.suspect`) and run `aea doctor`",
                path.display()
            ),
            Error::InvalidAgentId { .. } => {
                "an agent id is 2-64 characters of letters, digits, `_` and `-`, starting with a letter or digit".to_string()
            }
            Error::RecipientNotFound { .. } => {
                "pass the recipient's path (`--to ../web`), or run `aea init` there so it registers; `aea agents` lists known agents".to_string()
            }
            Error::RecipientAmbiguous { .. } => {
                "pass the recipient's path instead of its id".to_string()
            }
            Error::SendToSelf { .. } => "pass another repository with `--to`".to_string(),
            Error::SecretDetected { .. } => {
                "remove the secret, or pass `--allow-secrets` if it is not one".to_string()
            }
            Error::Usage { hint, .. } => hint.clone(),
            Error::BadDuration { .. } => crate::duration::EXAMPLES.to_string(),
            Error::MessageNotFound { .. } => {
                "`aea check` lists unprocessed messages with their references (`m…`)".to_string()
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
            Error::Gated { name, .. } => format!(
                "a person approves it with `aea approve {}` (or `aea review`); or process it with --outcome ignored or deferred",
                crate::shortref::of(name)
            ),
            Error::NotGated { .. } => {
                "process it as usual with `aea process`; `aea pending` lists what waits for a person".to_string()
            }
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
            Error::HookConflict { path } => format!(
                "move {} (or its `.aea-orig` copy) aside by hand, then run `aea hooks install` again",
                path.display()
            ),
            Error::SettingsInvalid { .. } => {
                "fix the JSON by hand (aea leaves it untouched), then run the command again".to_string()
            }
            Error::SyncFailed { .. } => {
                "nothing was lost: queued mail stays in .aea/outgoing/; check that `git ls-remote <remote>` works, then run `aea sync` again".to_string()
            }
            Error::MailStore { path, .. } => format!(
                "nothing was lost: queued mail stays in .aea/outgoing/; the store holds only copies, so move it aside (`mv {0} {0}.bad`) and run `aea sync` again to rebuild it from the remote",
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
                "pass `--remote URL`, or add `sync:\n  remote: URL` to .aea/agent-config.yaml".to_string()
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
            Error::ConfigInvalid { .. } => {
                "fix the YAML at the line named, or compare with the presets in `aea init --help`".to_string()
            }
            Error::PartialDelivery { delivered, failed } => format!(
                "delivered: {}; failed: {}; resend to the failed recipients only",
                if delivered.is_empty() {
                    "none".to_string()
                } else {
                    delivered.join(", ")
                },
                failed.join(", ")
            ),
        };
        Some(hint)
    }
}
