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
mod shared;

pub use shared::{DOORBELL, RingEnv};
use shared::{TIMEOUT, TransportError};

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::doorbell::Transport;

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
