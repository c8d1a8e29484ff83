//! A second OS user, for tests of what an agent running as another user
//! can and cannot do to an inbox shared with `aea init --shared`. Needs
//! root (to create the user and switch to it); a test without it says it
//! skipped and why.

use std::path::Path;
use std::process::{Command, Output};

use super::output_within;

/// The name of the throwaway user senders run as.
pub const SENDER: &str = "aea-test-sender";

/// The uid and gid of the sender user, created if needed; `Err` says why
/// there is none (not root, no `useradd`).
pub fn sender_user() -> Result<(u32, u32), String> {
    if !Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n")
    {
        return Err("not running as root, cannot create a second OS user".into());
    }
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, SENDER]).output().ok()?;
        String::from_utf8(out.stdout).ok()?.trim().parse().ok()
    };
    if id("-u").is_none() {
        let out = Command::new("useradd")
            .args(["--system", "--no-create-home", "--shell", "/bin/sh", SENDER])
            .output()
            .map_err(|e| format!("cannot run useradd: {e}"))?;
        // Another test process may have created it meanwhile.
        if !out.status.success() && id("-u").is_none() {
            return Err(format!(
                "useradd {SENDER} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    match (id("-u"), id("-g")) {
        (Some(uid), Some(gid)) => Ok((uid, gid)),
        _ => Err(format!("cannot read the ids of {SENDER}")),
    }
}

/// `program args…` as the sender user, in `dir`, with its own HOME,
/// within `limit`.
pub fn as_user(
    ids: (u32, u32),
    home: &Path,
    dir: &Path,
    program: &str,
    args: &[&str],
    limit: std::time::Duration,
) -> Output {
    let mut cmd = Command::new("setpriv");
    cmd.arg(format!("--reuid={}", ids.0))
        .arg(format!("--regid={}", ids.1))
        .arg("--clear-groups")
        .arg("--")
        .arg(program)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("USER", SENDER)
        .env("AEA_REGISTRY", home.join("registry.toml"))
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    output_within(
        cmd.spawn().unwrap(),
        limit,
        &format!("{program} {} as {SENDER}", args.join(" ")),
    )
}
