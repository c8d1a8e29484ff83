//! `aea trust [--revoke]` (SPEC §15.1): shows the settings of this
//! repository's config that can run a program, pass an option to git or
//! reach a host, and records the user's trust in exactly those (their
//! digest) outside the repository — or withdraws it.

use std::path::Path;

use serde::Serialize;

use super::context::Context;
use crate::cli::TrustConfigArgs;
use crate::config::AgentConfig;
use crate::config_trust::{self, Entry, Settings, Store};
use crate::error::{ConfigDirUse, Error, ExitCode, Result};
use crate::message::format_time;

/// `aea trust [--show] --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct TrustOutput<'a> {
    /// The repository, as the trust store names it.
    pub repo: &'a str,
    /// The user's trust store file.
    pub store: &'a Path,
    /// `sha256:<hex>` of the settings: what trust is recorded for.
    pub digest: &'a str,
    pub settings: &'a Settings,
    pub trusted: bool,
}

/// `aea trust --revoke --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct TrustRevokeOutput<'a> {
    pub repo: &'a str,
    pub store: &'a Path,
    /// Whether there was trust to withdraw.
    pub revoked: bool,
}

pub(crate) fn run(args: &TrustConfigArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let store = ctx.trust_store().ok_or(Error::NoConfigDir {
        needed_for: ConfigDirUse::TrustStore,
    })?;
    let key = config_trust::repo_key(mailbox.repo())?;
    let config_path = mailbox.layout().shared(crate::layout::Shared::Config);
    let p = &ctx.printer;

    if args.revoke {
        let removed = Store::update(store, |s| s.repos.remove(&key))?.is_some();
        if p.json() {
            p.value(&TrustRevokeOutput {
                repo: &key,
                store,
                revoked: removed,
            });
        } else if removed {
            p.line(format_args!(
                "revoked: {key} no longer runs programs or reaches hosts from its config"
            ));
        } else {
            p.line(format_args!("{key} was not trusted; nothing to revoke"));
        }
        return Ok(ExitCode::Success);
    }

    let config = AgentConfig::load_file(&config_path)?;
    let settings = Settings::of(&config);
    let digest = settings.digest();
    if settings.is_empty() {
        if p.json() {
            p.value(&TrustOutput {
                repo: &key,
                store,
                digest: &digest,
                settings: &settings,
                trusted: false,
            });
        } else {
            p.line(format_args!(
                "nothing to trust: {} names no program, git remote or host",
                config_path.display()
            ));
        }
        return Ok(ExitCode::Success);
    }
    let lines = settings.describe();
    let trusted = if args.show {
        config_trust::trusted_settings(&config, mailbox.repo(), Some(store))?
            .ignored
            .is_empty()
    } else {
        let entry = Entry {
            digest: digest.clone(),
            trusted_at: format_time(ctx.rt.now()),
            settings: lines.clone(),
        };
        Store::update(store, |s| s.repos.insert(key.clone(), entry))?;
        true
    };
    if p.json() {
        p.value(&TrustOutput {
            repo: &key,
            store,
            digest: &digest,
            settings: &settings,
            trusted,
        });
        return Ok(ExitCode::Success);
    }
    p.line(format_args!(
        "{} asks to run programs or reach hosts:",
        config_path.display()
    ));
    for line in &lines {
        p.line(format_args!("  {line}"));
    }
    p.line(format_args!("digest {digest}"));
    match (args.show, trusted) {
        (true, true) => p.line("trusted"),
        (true, false) => p.line("not trusted: `aea trust` trusts exactly these settings"),
        (false, _) => p.line(format_args!(
            "trusted for {key}; any change to these settings needs `aea trust` again (undo: `aea trust --revoke`)"
        )),
    }
    Ok(ExitCode::Success)
}
