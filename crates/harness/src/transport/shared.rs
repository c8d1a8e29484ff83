//! What every doorbell shares: the one text it carries, how long it may
//! take, what it takes from the environment and why it did not ring.

use std::path::PathBuf;
use std::time::Duration;

use super::http;
use crate::env::{Env, Secret, Variables};

/// The one text every doorbell carries.
pub const DOORBELL: &str = "New AEA mail is waiting: run `aea check` and handle it.";
/// How long one transport may take before it counts as failed.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);

/// What the doorbells take from the environment of the process that rings
/// them (the monitor's): OpenCode's login. Never from the committed config,
/// which every clone of the repository reads.
#[derive(Debug, Clone, Default)]
pub struct RingEnv {
    /// `OPENCODE_SERVER_USERNAME`; OpenCode's default is `opencode`.
    pub opencode_username: Option<String>,
    /// `OPENCODE_SERVER_PASSWORD`.
    pub opencode_password: Option<Secret>,
    /// For an `opencode` transport's `password_env`.
    pub variables: Variables,
}

impl RingEnv {
    pub fn new(env: &Env) -> Self {
        RingEnv {
            opencode_username: env.opencode_username.clone(),
            opencode_password: env.opencode_password.clone(),
            variables: env.variables.clone(),
        }
    }
}

/// Why a doorbell did not ring.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TransportError {
    #[error("cannot run {what}")]
    Spawn {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot wait for {what}")]
    Wait {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{what} exited with {status}")]
    Exited {
        what: String,
        status: std::process::ExitStatus,
    },
    #[error("{what} took longer than {}s", within.as_secs())]
    TimedOut { what: String, within: Duration },
    /// The configured OpenCode url, session or login cannot be used.
    #[error("{0}")]
    Opencode(String),
    #[error("opencode {host}")]
    OpencodeIo {
        host: String,
        #[source]
        source: http::HttpError,
    },
    #[error("opencode {host} answered {code} to {request}")]
    OpencodeStatus {
        host: String,
        request: String,
        code: u16,
    },
    #[error(
        "opencode {host} wants a password (401 Unauthorized): set OPENCODE_SERVER_PASSWORD (and OPENCODE_SERVER_USERNAME if not `opencode`) in the environment of `aea monitor start`, or name the variable with `password_env`"
    )]
    OpencodeNoPassword { host: String },
    #[error(
        "opencode {host} refused user {user:?} with the password from {variable} (401 Unauthorized)"
    )]
    OpencodeRefused {
        host: String,
        user: String,
        variable: String,
    },
    #[error(
        "opencode {host} has no session in {}: start `opencode` in this repository, or name a session with `session:`",
        repo.display()
    )]
    OpencodeNoSession { host: String, repo: PathBuf },
    #[error("opencode {host} named session {id:?}, which is not an OpenCode session id; not used")]
    OpencodeHostileSession { host: String, id: String },
    #[error("opencode {host} answered GET /session with something else than a JSON list")]
    OpencodeBadList { host: String },
}
