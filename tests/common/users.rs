//! A second OS user, for tests of what an agent running as another user
//! can and cannot do to an inbox shared with `aea init --shared`. Needs
//! root (to create the user and switch to it); a test without it says it
//! skipped and why.

use std::path::Path;
use std::process::{Command, Output};

use super::output_within;

/// The name of the throwaway user senders run as.
pub const SENDER: &str = "aea-test-sender";

/// The name of the throwaway user a receiver runs as where it must not be
/// root (root may link and rename what other users own).
pub const RECEIVER: &str = "aea-test-receiver";

/// The uid and gid of the sender user, created if needed; `Err` says why
/// there is none (not root, no `useradd`).
pub fn sender_user() -> Result<(u32, u32), String> {
    test_user(SENDER)
}

/// The uid and gid of the receiver user, like [`sender_user`].
pub fn receiver_user() -> Result<(u32, u32), String> {
    test_user(RECEIVER)
}

fn test_user(name: &str) -> Result<(u32, u32), String> {
    if !Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n")
    {
        return Err("not running as root, cannot create a second OS user".into());
    }
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, name]).output().ok()?;
        String::from_utf8(out.stdout).ok()?.trim().parse().ok()
    };
    if id("-u").is_none() {
        let out = Command::new("useradd")
            .args(["--system", "--no-create-home", "--shell", "/bin/sh", name])
            .output()
            .map_err(|e| format!("cannot run useradd: {e}"))?;
        // Another test process may have created it meanwhile.
        if !out.status.success() && id("-u").is_none() {
            return Err(format!(
                "useradd {name} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    match (id("-u"), id("-g")) {
        (Some(uid), Some(gid)) => Ok((uid, gid)),
        _ => Err(format!("cannot read the ids of {name}")),
    }
}

/// The gid of the throwaway group `name`, created if needed (we are
/// root: [`sender_user`] said so); `Err` says why there is none.
pub fn test_group(name: &str) -> Result<u32, String> {
    let gid = || -> Option<u32> {
        let out = Command::new("getent").args(["group", name]).output().ok()?;
        String::from_utf8(out.stdout)
            .ok()?
            .split(':')
            .nth(2)?
            .trim()
            .parse()
            .ok()
    };
    if gid().is_none() {
        let out = Command::new("groupadd")
            .args(["--system", name])
            .output()
            .map_err(|e| format!("cannot run groupadd: {e}"))?;
        // Another test process may have created it meanwhile.
        if !out.status.success() && gid().is_none() {
            return Err(format!(
                "groupadd {name} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    gid().ok_or_else(|| format!("cannot read the gid of {name}"))
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
    as_user_in(ids, &[], home, dir, program, args, limit)
}

/// [`as_user`] as the user named `name` (its `USER`).
pub fn as_named_user(
    name: &str,
    ids: (u32, u32),
    home: &Path,
    dir: &Path,
    program: &str,
    args: &[&str],
    limit: std::time::Duration,
) -> Output {
    run_as(name, ids, &[], home, dir, program, args, limit)
}

/// [`as_user`], with `groups` as the user's supplementary groups.
pub fn as_user_in(
    ids: (u32, u32),
    groups: &[u32],
    home: &Path,
    dir: &Path,
    program: &str,
    args: &[&str],
    limit: std::time::Duration,
) -> Output {
    run_as(SENDER, ids, groups, home, dir, program, args, limit)
}

#[allow(clippy::too_many_arguments)]
fn run_as(
    name: &str,
    ids: (u32, u32),
    groups: &[u32],
    home: &Path,
    dir: &Path,
    program: &str,
    args: &[&str],
    limit: std::time::Duration,
) -> Output {
    let mut cmd = Command::new("setpriv");
    cmd.arg(format!("--reuid={}", ids.0))
        .arg(format!("--regid={}", ids.1));
    if groups.is_empty() {
        cmd.arg("--clear-groups");
    } else {
        let list: Vec<String> = groups.iter().map(u32::to_string).collect();
        cmd.arg(format!("--groups={}", list.join(",")));
    }
    cmd.arg("--")
        .arg(program)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("USER", name)
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
        &format!("{program} {} as {name}", args.join(" ")),
    )
}
