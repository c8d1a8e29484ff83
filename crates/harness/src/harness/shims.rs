//! The protocol's own commands: the AEA v1.0 text, and
//! `CLAUDE.md` files in the wild, tell agents to run
//! `bash .aea/scripts/aea-check.sh`, `.aea/scripts/aea-send.sh --to ID
//! --to-path PATH --type T --priority P --subject S --message M` and
//! `.aea/scripts/aea-monitor.sh start|stop`. `init` puts thin shims there
//! that run this aea with the same arguments, so agents and instructions
//! that follow the protocol text work unchanged. A script already there
//! that aea did not write (the bash AEA's own) is left alone: it still
//! works. The shims live in `.aea/`, so `uninstall` takes them with it.

use std::fs;
use std::path::Path;

use crate::error::{Error, Result};
use crate::fsutil;
use crate::hooks::{make_executable, sh_quote};

use super::kits::OWNED_MARKER;

/// Where the protocol text puts its scripts, inside `.aea/`.
pub(crate) const SCRIPTS_DIR: &str = "scripts";

/// Each script of the protocol text and the aea command it stands for.
const SHIMS: [(&str, &str); 3] = [
    ("aea-check.sh", "check"),
    ("aea-send.sh", "send"),
    ("aea-monitor.sh", "monitor"),
];

fn shim(name: &str, command: &str, exe: &Path) -> String {
    format!(
        "#!/bin/sh\n# {OWNED_MARKER}: shim (written by `aea init`): the protocol's {name} runs aea.\nexec {} {command} \"$@\"\n",
        sh_quote(&exe.to_string_lossy())
    )
}

/// Writes the shims that are missing or out of date into `aea_dir`;
/// returns the ones written, relative to `.aea/`.
pub fn install(aea_dir: &Path, exe: &Path) -> Result<Vec<String>> {
    let dir = aea_dir.join(SCRIPTS_DIR);
    fsutil::refuse_symlink(&dir)?;
    fsutil::ensure_dir(&dir)?;
    let mut written = Vec::new();
    for (name, command) in SHIMS {
        let path = dir.join(name);
        // aea writes its shims as files: a link there is someone else's
        // script (the bash AEA's, linked in from one checkout; its scripts
        // resolve their own links), left alone like any script aea did not
        // write, and neither followed nor read.
        if fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            continue;
        }
        let text = shim(name, command, exe);
        let current = fsutil::read_optional(&path)?;
        let write = match &current {
            None => true,
            Some(now) => now != &text && now.contains(OWNED_MARKER),
        };
        if write {
            fsutil::replace_atomic(&path, text.as_bytes())?;
            make_executable(&path)?;
            written.push(format!("{SCRIPTS_DIR}/{name}"));
        }
    }
    Ok(written)
}

/// Removes the shims aea wrote into `aea_dir` (files with its marker),
/// leaving any other script or link there; returns the ones removed,
/// relative to `.aea/`. For `uninstall` where `.aea/` stays (the bash
/// AEA's install).
pub fn remove(aea_dir: &Path) -> Result<Vec<String>> {
    let dir = aea_dir.join(SCRIPTS_DIR);
    let mut removed = Vec::new();
    for (name, _) in SHIMS {
        let path = dir.join(name);
        // Never followed: a link or a FIFO there is not aea's.
        let ours = fsutil::read_limited(&path, 1 << 20)
            .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(OWNED_MARKER));
        if ours {
            fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
            removed.push(format!("{SCRIPTS_DIR}/{name}"));
        }
    }
    Ok(removed)
}
