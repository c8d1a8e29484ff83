//! Doorbells (SPEC §10): how the monitor tells an agent that mail arrived.
//! Every transport sends the same fixed text; message text never leaves
//! `aea show`. aea's own short references (`m3f9a01c2`, derived from the
//! file name, see [`crate::shortref`]) are the only message data passed on —
//! never an id or file name, which the sender chose — and only to the
//! `command` transport, in environment variables, never through a shell.
//!
//! `opencode.rs` is the OpenCode doorbell (its auth and how it finds the
//! session), `http.rs` the minimal HTTP client it talks through. What the
//! config says of a transport, and the checks made when it is read, are
//! [`crate::doorbell`]'s.

mod http;
mod opencode;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::doorbell::Transport;
use crate::env::{Env, Secret, Variables};

/// The one text every doorbell carries.
pub const DOORBELL: &str = "New AEA mail is waiting: run `aea check` and handle it.";
/// How long one transport may take before it counts as failed.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);

/// Rings `transport` once. `refs` are short references, `repo` the repository path.
pub(crate) fn ring(
    transport: &Transport,
    refs: &[String],
    repo: &Path,
    env: &RingEnv,
) -> Result<(), TransportError> {
    match transport {
        Transport::Command { program, args } => {
            let mut cmd = Command::new(program);
            // `AEA_MESSAGE_IDS` keeps scripts written for earlier
            // versions working: they pass it to `aea show`, which takes
            // references as well as ids.
            cmd.args(args)
                .env("AEA_MESSAGE_REFS", refs.join(","))
                .env("AEA_MESSAGE_IDS", refs.join(","))
                .env("AEA_MESSAGE_COUNT", refs.len().to_string())
                .env("AEA_REPO", repo)
                .env("AEA_DOORBELL", DOORBELL)
                .current_dir(repo);
            run(cmd, &program.display().to_string())
        }
        Transport::Tmux { target, socket } => {
            let tmux = |keys: &[&str]| {
                let mut cmd = Command::new("tmux");
                if let Some(socket) = socket {
                    cmd.args(["-L", socket]);
                }
                cmd.args(["send-keys", "-t", target]).args(keys);
                run(cmd, "tmux")
            };
            // Text and Enter separately: `-l` sends the text literally,
            // and some TUIs drop an Enter that arrives in the same burst.
            tmux(&["-l", DOORBELL])?;
            std::thread::sleep(Duration::from_millis(50));
            tmux(&["Enter"])
        }
        Transport::Opencode(bell) => opencode::ring(bell, repo, env),
        Transport::Desktop {} => {
            let mut cmd = Command::new("notify-send");
            cmd.args(["aea", DOORBELL]);
            run(cmd, "notify-send")
        }
    }
}

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

/// Runs a program without a shell, with nothing on stdin, within TIMEOUT.
fn run(mut cmd: Command, what: &str) -> Result<(), TransportError> {
    let what = what.to_string();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| TransportError::Spawn {
            what: what.clone(),
            source,
        })?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(TransportError::Exited { what, status }),
            Ok(None) if started.elapsed() > TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(TransportError::TimedOut {
                    what,
                    within: TIMEOUT,
                });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(source) => return Err(TransportError::Wait { what, source }),
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
