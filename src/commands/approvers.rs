//! `aea approvers` (SPEC §19): the SSH keys whose signature makes a
//! person's approval, kept in the user's config dir as a chain of signed
//! versions ([`crate::approvers`]). Each change is signed by a current
//! approver, the first by the key it adds.

use std::path::Path;

use serde::Serialize;

use super::context::Context;
use crate::approvers::{self, Approver, Approvers, LIST_NAMESPACE};
use crate::cli::{ApproversCommand, OnOff, SigningArgs};
use crate::error::{ConfigDirUse, Error, ExitCode, Result};
use crate::message::format_time;
use crate::printer::untrusted_short;

/// One approver, as `aea approvers list --json` prints it.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct ApproverRow {
    pub name: String,
    /// OpenSSH's name of the key type.
    pub key_type: String,
    /// `SHA256:…`, as `ssh-keygen -l` prints it.
    pub fingerprint: String,
    /// A FIDO key: each signature needs a touch.
    pub hardware: bool,
    /// The public key, one line.
    pub key: String,
}

/// `aea approvers list --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct ApproversOutput {
    /// Where the list is kept.
    pub dir: std::path::PathBuf,
    /// The version of the list in force; 0: none.
    pub version: u64,
    /// You require signed approvals in every repository (also when a line
    /// of the list does not verify: a damaged list requires them).
    pub require_signature: bool,
    /// This repository's policy requires them (`approvals.require_signature`),
    /// when the command runs in one.
    pub repository_requires: Option<bool>,
    pub approvers: Vec<ApproverRow>,
    /// A line of the list that did not verify, and why: it and every
    /// line after it changed nothing.
    pub ignored: Option<Ignored>,
}

#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct Ignored {
    pub line: usize,
    pub why: String,
}

/// `aea approvers add|remove|require --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct ApproversChangeOutput {
    /// What changed, in words: `add alice`, `remove bob`, `require off`.
    pub change: String,
    /// The new version of the list.
    pub version: u64,
    /// The approver whose key signed the change.
    pub signed_by: String,
    pub require_signature: bool,
}

pub(crate) fn run(command: &ApproversCommand, ctx: &Context) -> Result<ExitCode> {
    let dir = ctx.config_dir().ok_or(Error::NoConfigDir {
        needed_for: ConfigDirUse::Approvers,
    })?;
    let list = Approvers::load(dir)?;
    match command {
        ApproversCommand::List => Ok(list_approvers(ctx, dir, &list)),
        ApproversCommand::Add { name, key, signing } => {
            approvers::check_name(name).map_err(|why| Error::usage(why, "pick another name"))?;
            let key = read_key(key)?;
            if let Some(same) = list
                .approvers
                .iter()
                .find(|a| a.key == key || &a.name == name)
            {
                return Err(Error::usage(
                    format!(
                        "{} is an approver already, with key {}",
                        same.name,
                        same.fingerprint()
                    ),
                    "remove it first (`aea approvers remove NAME`), or use another name and key",
                ));
            }
            if list.approvers.len() >= approvers::APPROVERS_MAX {
                return Err(Error::usage(
                    format!(
                        "the list holds {} approvers already, the most it takes",
                        list.approvers.len()
                    ),
                    "remove one first",
                ));
            }
            let mut new = list.approvers.clone();
            new.push(Approver {
                name: name.clone(),
                key,
            });
            // The first approver is added to be used: signatures are
            // required from then on, until an approver signs them off.
            let require = list.version == 0 || list.require_signature;
            change(ctx, &list, format!("add {name}"), new, require, signing)
        }
        ApproversCommand::Remove { name, signing } => {
            if list.named(name).is_none() {
                return Err(Error::usage(
                    format!("no approver is named {}", untrusted_short(name, 80)),
                    "`aea approvers list` shows them",
                ));
            }
            let new: Vec<Approver> = list
                .approvers
                .iter()
                .filter(|a| &a.name != name)
                .cloned()
                .collect();
            if new.is_empty() {
                return Err(Error::usage(
                    format!(
                        "{name} is the last approver; without one no change could ever be signed again"
                    ),
                    "add another approver first; to start over, a person deletes the approvers folder that `aea approvers list` names",
                ));
            }
            change(
                ctx,
                &list,
                format!("remove {name}"),
                new,
                list.require_signature,
                signing,
            )
        }
        ApproversCommand::Require { state, signing } => {
            if list.approvers.is_empty() {
                return Err(Error::usage(
                    "there is no approver yet",
                    "add yours first: `aea approvers add NAME --key ~/.ssh/id_ed25519_sk.pub` (it turns the requirement on)",
                ));
            }
            let on = *state == OnOff::On;
            let words = if on { "require on" } else { "require off" };
            change(
                ctx,
                &list,
                words.to_string(),
                list.approvers.clone(),
                on,
                signing,
            )
        }
    }
}

/// Signs and writes one change of the list.
fn change(
    ctx: &Context,
    list: &Approvers,
    words: String,
    new: Vec<Approver>,
    require: bool,
    signing: &SigningArgs,
) -> Result<ExitCode> {
    let proposal = list.propose(words.clone(), new, require, format_time(ctx.rt.now()));
    let signature = super::signer::Signer {
        key: signing.ssh_key.as_deref(),
        temp_dir: &ctx.temp_dir,
    }
    .sign(
        LIST_NAMESPACE,
        &proposal.bytes(),
        list.signers_for(&proposal),
    )?;
    let signed_by = list.commit(proposal, signature)?;
    let version = list.version + 1;
    if ctx.printer.json() {
        ctx.printer.value(&ApproversChangeOutput {
            change: words,
            version,
            signed_by,
            require_signature: require,
        });
    } else {
        ctx.printer.line(format_args!(
            "{words}: version {version} of the approver list, signed by {signed_by}"
        ));
        if list.version == 0 {
            ctx.printer.line(
                "signed approvals are now required in all your repositories (`aea approvers require off` stops that)",
            );
        }
    }
    Ok(ExitCode::Success)
}

/// Reads a public key file: one line, a key type aea verifies.
fn read_key(path: &Path) -> Result<crate::approvers::KeyData> {
    // The person names their own key file: a symlink to it is fine, a
    // FIFO or a large file is not a key.
    let meta = std::fs::metadata(path).map_err(|e| Error::io("read", path, e))?;
    if !meta.is_file() || meta.len() > 16 * 1024 {
        return Err(Error::usage(
            format!("{} is not a public key file", path.display()),
            "pass the .pub file ssh-keygen wrote",
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| Error::io("read", path, e))?;
    let text = String::from_utf8_lossy(&bytes);
    if text.contains("PRIVATE KEY") {
        return Err(Error::usage(
            format!("{} is a private key", path.display()),
            "pass the public half, FILE.pub; the private key stays with the person",
        ));
    }
    approvers::parse_public_key(&text).map_err(|why| {
        Error::usage(
            format!("{}: {why}", path.display()),
            "pass the .pub file ssh-keygen wrote (`ssh-keygen -t ed25519-sk` for a hardware key)",
        )
    })
}

fn list_approvers(ctx: &Context, dir: &Path, list: &Approvers) -> ExitCode {
    let repository_requires = ctx
        .mailbox()
        .ok()
        .and_then(|m| m.config().ok().map(|c| c.approvals.require_signature));
    let output = ApproversOutput {
        dir: dir.join(approvers::DIR),
        version: list.version,
        // A list with a line that does not verify requires signatures,
        // whatever its valid lines say.
        require_signature: list.required(false),
        repository_requires,
        approvers: list
            .approvers
            .iter()
            .map(|a| ApproverRow {
                name: a.name.clone(),
                key_type: a.key_type(),
                fingerprint: a.fingerprint(),
                hardware: a.hardware(),
                key: a.public_line(),
            })
            .collect(),
        ignored: list
            .ignored
            .clone()
            .map(|(line, why)| Ignored { line, why }),
    };
    if ctx.printer.json() {
        ctx.printer.value(&output);
        return ExitCode::Success;
    }
    if output.approvers.is_empty() {
        ctx.printer.line("no approvers: approvals are not signed");
    }
    for row in &output.approvers {
        ctx.printer.line(format_args!(
            "{:<20} {} {}{}",
            row.name,
            row.fingerprint,
            row.key_type,
            if row.hardware {
                " (hardware key: a touch per signature)"
            } else {
                ""
            }
        ));
    }
    let by = |yes: bool| if yes { "yes" } else { "no" };
    ctx.printer.line(format_args!(
        "signatures required by you: {}{}",
        by(output.require_signature),
        match output.repository_requires {
            Some(r) => format!("; by this repository's policy: {}", by(r)),
            None => String::new(),
        }
    ));
    if let Some(ignored) = &output.ignored {
        ctx.printer.warn(format_args!(
            "line {} of {} and those after it change nothing: {}",
            ignored.line,
            output.dir.join(approvers::CHANGES).display(),
            ignored.why
        ));
    }
    ExitCode::Success
}
