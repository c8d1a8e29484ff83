//! Doorbells (SPEC §10): how the monitor tells an agent that mail arrived.
//! Every transport sends the same fixed text; message text never leaves
//! `aea show`. aea's own short references (`m3f9a01c2`, derived from the
//! file name, see [`crate::shortref`]) are the only message data passed on —
//! never an id or file name, which the sender chose — and only to the
//! `command` transport, in environment variables, never through a shell.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The one text every doorbell carries.
pub const DOORBELL: &str = "New AEA mail is waiting: run `aea check` and handle it.";
/// How long one transport may take before it counts as failed.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Monitoring durations are capped at a day, so adding one to the clock
/// cannot overflow.
pub const DAY: Duration = Duration::from_secs(86_400);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
// A misspelt key (`arg:` for `args:`) is an error, not a doorbell that
// silently rings without it.
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Transport {
    /// Runs `program` with `args`; the short references are in
    /// `AEA_MESSAGE_REFS` (and, for older scripts, `AEA_MESSAGE_IDS`).
    Command {
        program: PathBuf,
        #[serde(default)]
        args: Vec<String>,
    },
    /// Types the doorbell into a tmux pane, then presses Enter.
    Tmux {
        target: String,
        /// A tmux server socket name (`tmux -L`), if not the default.
        #[serde(default)]
        socket: Option<String>,
    },
    /// `POST /session/{session}/prompt_async` to a local OpenCode server.
    Opencode { url: String, session: String },
    /// A desktop notification through `notify-send`.
    // Braces, not a unit variant: serde lets a unit variant of a tagged
    // enum take any keys, and a misspelt one must be an error.
    Desktop {},
}

impl Transport {
    pub fn name(&self) -> &'static str {
        match self {
            Transport::Command { .. } => "command",
            Transport::Tmux { .. } => "tmux",
            Transport::Opencode { .. } => "opencode",
            Transport::Desktop {} => "desktop",
        }
    }

    /// Rings once. `refs` are short references, `repo` the repository path.
    pub fn ring(&self, refs: &[String], repo: &Path) -> Result<(), TransportError> {
        match self {
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
            Transport::Opencode { url, session } => post_prompt(url, session, repo),
            Transport::Desktop {} => {
                let mut cmd = Command::new("notify-send");
                cmd.args(["aea", DOORBELL]);
                run(cmd, "notify-send")
            }
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
pub enum TransportError {
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
    /// The configured OpenCode url or session cannot be used.
    #[error("{0}")]
    Opencode(String),
    #[error("opencode {host}")]
    OpencodeIo {
        host: String,
        #[source]
        source: std::io::Error,
    },
    #[error("opencode {host} answered {code:?}")]
    OpencodeStatus { host: String, code: String },
}

/// A minimal HTTP/1.1 POST to a local OpenCode server (plain `http://`
/// only: the server listens on the loopback interface).
fn post_prompt(url: &str, session: &str, repo: &Path) -> Result<(), TransportError> {
    let rest = url.strip_prefix("http://").ok_or_else(|| {
        TransportError::Opencode(format!("opencode url {url:?} must start with http://"))
    })?;
    let host = rest.trim_end_matches('/');
    if host.contains('/') {
        return Err(TransportError::Opencode(format!(
            "opencode url {url:?} must be http://host:port"
        )));
    }
    if !session
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(TransportError::Opencode(format!(
            "opencode session id {session:?} has unexpected characters"
        )));
    }
    let body = serde_json::json!({ "parts": [{ "type": "text", "text": DOORBELL }] }).to_string();
    let request = format!(
        "POST /session/{session}/prompt_async HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nx-opencode-directory: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        repo.display().to_string().replace(['\r', '\n'], ""),
        body.len()
    );
    let io = |source: std::io::Error| TransportError::OpencodeIo {
        host: host.to_string(),
        source,
    };
    let addr = match host.parse::<std::net::SocketAddr>() {
        Ok(addr) => addr,
        Err(_) => {
            use std::net::ToSocketAddrs;
            host.to_socket_addrs().map_err(io)?.next().ok_or_else(|| {
                io(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no address",
                ))
            })?
        }
    };
    let mut stream = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(io)?;
    stream
        .set_read_timeout(Some(TIMEOUT))
        .and_then(|()| stream.write_all(request.as_bytes()))
        .map_err(io)?;
    let mut head = [0u8; 64];
    let n = stream.read(&mut head).map_err(io)?;
    let status_line = String::from_utf8_lossy(&head[..n]);
    let code = status_line.split_whitespace().nth(1).unwrap_or_default();
    if code.starts_with('2') {
        Ok(())
    } else {
        Err(TransportError::OpencodeStatus {
            host: host.to_string(),
            code: code.to_string(),
        })
    }
}
