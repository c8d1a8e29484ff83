//! `aea whoami` (SPEC §15.2): this agent's id, repository and public key
//! with its fingerprint, and the line a peer runs to pin that key. How a
//! key is handed to another machine or user: its owner reads it here, the
//! peer pins it there with `aea agents add … --key …`, and both compare the
//! fingerprint, like a new ssh host key.

use std::path::Path;

use serde::Serialize;

use super::context::Context;
use crate::error::{ExitCode, Result};
use crate::identity;
use crate::keyring::{self, Published};
use crate::layout;
use crate::printer::shell_quote;

/// `aea whoami --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct WhoamiOutput<'a> {
    pub agent: &'a str,
    /// The repository this agent lives in; agents on this machine reach
    /// it there.
    pub repo: &'a Path,
    /// The public half of this agent's private key on this machine,
    /// `ed25519:<hex>`: what its mail is signed with.
    pub key: &'a str,
    pub fingerprint: &'a str,
    /// The mail remote through which agents on other machines reach it
    /// (`sync.remote`, once trusted with `aea trust`), a password in it
    /// shown as `***`.
    pub remote: Option<&'a str>,
    /// The command a peer runs to pin this key: by the mail remote when
    /// there is one, else by the repository's path.
    pub pin: &'a str,
    /// Whether the committed config publishes this key (`agent.public_key`),
    /// which `aea agents add --path` reads there.
    pub published: bool,
    /// This repository also sends unsigned mail: the bash AEA's own
    /// `.aea/scripts/aea-send.sh` is still there (aea leaves it alone). Its
    /// signed mail says so, and `pin` by path then carries
    /// `--allow-unsigned`, so that peers take that mail as unsigned, not
    /// forged. `pin` by a mail remote does not: the bash scripts deliver
    /// only on this machine, never through it.
    pub also_unsigned: bool,
}

pub(crate) fn run(ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let config = mailbox.config()?;
    let id = config.require_id(&mailbox.layout().shared(crate::layout::Shared::Config))?;
    let key = ctx.signing_key(id)?.verifying_key();
    let public = identity::public_text(&key);
    let fingerprint = identity::fingerprint(&key);
    let remote = ctx
        .trusted(&mailbox, config)
        .sync_remote
        .filter(|r| crate::config_trust::check_remote(r).is_ok())
        .map(|r| crate::registry::without_password(&r));
    let repo = mailbox.repo();
    let place = match &remote {
        Some(url) => format!("--remote {}", shell_quote(url)),
        None => format!("--path {}", shell_quote(&repo.display().to_string())),
    };
    let also_unsigned = crate::layout::bash_sender(mailbox.dir());
    // The bash scripts deliver by copying into a repository on this
    // machine, never through a mail remote: a peer reached through one
    // gets aea's signed mail only, and `--allow-unsigned` there would only
    // let anyone who can push to the remote claim this id unsigned.
    let pin = format!(
        "aea agents add {id} {place} --key {public}{}",
        if also_unsigned && remote.is_none() {
            " --allow-unsigned"
        } else {
            ""
        }
    );
    let published = matches!(
        keyring::published_key(&layout::repo_config_file(repo), id),
        Ok(Published::Key(k)) if k == key
    );
    let p = &ctx.printer;
    if p.json() {
        p.value(&WhoamiOutput {
            agent: id,
            repo,
            key: &public,
            fingerprint: &fingerprint,
            remote: remote.as_deref(),
            pin: &pin,
            published,
            also_unsigned,
        });
        return Ok(ExitCode::Success);
    }
    p.line(format_args!("agent        {id}"));
    p.line(format_args!("repository   {}", repo.display()));
    if also_unsigned {
        p.line(format_args!(
            "key          {public} (also sends unsigned: .aea/scripts/aea-send.sh is the bash AEA's)"
        ));
    } else {
        p.line(format_args!("key          {public}"));
    }
    p.line(format_args!("fingerprint  {fingerprint}"));
    p.line(format_args!(
        "reached at   {} (on this machine)",
        repo.display()
    ));
    if let Some(url) = &remote {
        p.line(format_args!(
            "             remote {url} (from other machines, `aea sync`)"
        ));
    }
    p.line("a peer pins this key with:");
    p.line(format_args!("  {pin}"));
    p.line("and compares the fingerprint it prints with the one above.");
    if also_unsigned && remote.is_some() {
        p.line(format_args!(
            "the bash AEA scripts here deliver only into repositories on this machine, never through the remote: peers on other machines get aea's signed mail only and pin without --allow-unsigned. Peers on this machine that they deliver to run `aea agents trust {id} --allow-unsigned`, or take that mail as forged."
        ));
    } else if also_unsigned {
        p.line(format_args!(
            "--allow-unsigned: mail the bash AEA scripts here send is unsigned; without it, peers that pinned this key take that mail as forged. Once aea sends everything (`rm .aea/scripts/aea-send.sh`, then `aea init` puts its shim there), peers drop it with `aea agents trust {id}`."
        ));
    }
    if !published {
        p.warn(format_args!(
            "{} does not publish this key: `aea init` publishes it for peers that add {id} by path (commit the change)",
            mailbox
                .layout()
                .shared(crate::layout::Shared::Config)
                .display()
        ));
    }
    Ok(ExitCode::Success)
}
