//! A person's signature (SPEC §19), made by OpenSSH's `ssh-keygen -Y
//! sign`: from a key file (`--ssh-key`), or from an approver's key held by
//! ssh-agent. `ssh-keygen` asks for the passphrase, the FIDO touch or the
//! agent's confirmation (`ssh-add -c`) on the person's terminal; aea only
//! hands it the bytes and reads back the armored signature. Every
//! signature is then verified in-process against the approver list before
//! anything is written.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::approvers::{Approver, parse_public_key};
use crate::error::{Error, Result};

/// Largest signature read back: an SSHSIG is well under a kilobyte.
const SIGNATURE_LIMIT: usize = 16 * 1024;

/// Signs for one command: with `key` if given, else with an approver's
/// key found in ssh-agent.
pub(crate) struct Signer<'a> {
    pub key: Option<&'a Path>,
    /// Where the public half of an agent-held key is written for ssh-keygen.
    pub temp_dir: &'a Path,
}

impl Signer<'_> {
    /// An armored SSHSIG over `data` for `namespace`, made with `--ssh-key`
    /// or with the first of `candidates` that ssh-agent holds.
    pub(crate) fn sign(
        &self,
        namespace: &str,
        data: &[u8],
        candidates: &[Approver],
    ) -> Result<String> {
        if let Some(key) = self.key {
            return ssh_keygen_sign(key, namespace, data);
        }
        let Some(approver) = agent_keys()?
            .into_iter()
            .find_map(|key| candidates.iter().find(|a| a.key == key))
        else {
            return Err(Error::DecisionRefused {
                message: "no approver's key to sign with: none was given and ssh-agent holds none".into(),
                hint: "pass --ssh-key FILE (your private key, or the .pub of a key in ssh-agent), or `ssh-add` your approver key; `aea approvers list` shows whose keys approve".into(),
            });
        };
        let dir = tempfile::Builder::new()
            .prefix("aea-sign-")
            .tempdir_in(self.temp_dir)
            .map_err(|e| Error::io("create a folder in", self.temp_dir, e))?;
        let public = dir.path().join("approver.pub");
        std::fs::write(&public, format!("{}\n", approver.public_line()))
            .map_err(|e| Error::io("write", &public, e))?;
        ssh_keygen_sign(&public, namespace, data)
    }
}

/// The keys ssh-agent holds, if one runs (`ssh-add` finds it through
/// `SSH_AUTH_SOCK`).
fn agent_keys() -> Result<Vec<crate::approvers::KeyData>> {
    let out = Command::new("ssh-add")
        .arg("-L")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| Error::io("run", PathBuf::from("ssh-add"), e))?;
    // Exit 1: the agent holds no key; 2: no agent answers.
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| parse_public_key(line).ok())
        .collect())
}

/// Runs `ssh-keygen -Y sign -n NAMESPACE -f KEY` with `data` on its
/// standard input; its prompts go to the person's terminal.
fn ssh_keygen_sign(key: &Path, namespace: &str, data: &[u8]) -> Result<String> {
    let mut child = Command::new("ssh-keygen")
        .args(["-q", "-Y", "sign", "-n", namespace, "-f"])
        .arg(key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| {
            Error::io(
                "run",
                PathBuf::from("ssh-keygen"),
                std::io::Error::new(
                    e.kind(),
                    format!("{e}; signing an approval needs OpenSSH's ssh-keygen (8.2 or newer)"),
                ),
            )
        })?;
    let written = child
        .stdin
        .take()
        .map(|mut stdin| stdin.write_all(data))
        .transpose();
    let out = child
        .wait_with_output()
        .map_err(|e| Error::io("run", PathBuf::from("ssh-keygen"), e))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if written.is_err() || !out.status.success() || text.len() > SIGNATURE_LIMIT {
        return Err(Error::DecisionRefused {
            message: format!(
                "ssh-keygen could not sign with {} (exit {})",
                crate::printer::untrusted_short(&key.display().to_string(), 200),
                out.status.code().map_or("by a signal".into(), |c| c.to_string())
            ),
            hint: "check the key file and its passphrase, or that ssh-agent holds the key; a FIDO key needs a touch".into(),
        });
    }
    Ok(text)
}
