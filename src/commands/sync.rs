//! `aea sync` (SPEC §11): pushes queued mail and receipts to the mail
//! remote and applies what arrived there for this agent.

use super::context::Context;
use crate::cli::SyncArgs;
use crate::config_trust;
use crate::error::{Error, ExitCode, Result};
use crate::mailbox::Mailbox;
use crate::sync::{self, Report};

/// The mail remote: `--remote` (the user's own choice), else `sync.remote`
/// of the config once the user trusted it (`aea trust`). A remote that
/// begins with `-` is refused wherever it came from.
pub(super) fn remote(mailbox: &Mailbox, flag: Option<&str>, ctx: &Context) -> Result<String> {
    let url = match flag {
        Some(url) => url.to_string(),
        None => {
            let config = mailbox.config()?;
            ctx.trusted(mailbox, config)
                .sync_remote
                .ok_or(Error::NoMailRemote)?
        }
    };
    config_trust::check_remote(&url)?;
    Ok(url)
}

pub fn run(args: &SyncArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let me = mailbox.agent_id()?;
    let url = remote(&mailbox, args.remote.as_deref(), ctx)?;
    let signing = ctx.receipt_key(&me);
    let ring = ctx.keyring();
    let keys = sync::Keys {
        signing: signing.as_ref(),
        ring: &ring,
    };
    let Some(interval) = &args.watch else {
        let report = sync::sync(&mailbox, &me, &url, &ctx.rt, &keys)?;
        print(&report, &url, ctx);
        if report.needs_attention() {
            return Ok(ExitCode::Attention);
        }
        return Ok(ExitCode::Success);
    };
    let every = interval.std();
    loop {
        match sync::sync(&mailbox, &me, &url, &ctx.rt, &keys) {
            Ok(report) if !report.is_empty() => print(&report, &url, ctx),
            Ok(_) => {}
            // Keep going: the remote may come back.
            Err(e) => ctx.printer.warn(crate::error::one_line(&e)),
        }
        std::thread::sleep(every);
    }
}

fn print(report: &Report, url: &str, ctx: &Context) {
    if ctx.printer.json() {
        ctx.printer.value_line(report);
        return;
    }
    let p = &ctx.printer;
    if report.is_empty() {
        p.line(format_args!(
            "in sync with {url}: nothing to send or receive"
        ));
        return;
    }
    for (to, ids) in &report.pushed {
        p.line(format_args!("pushed {} message(s) for {to}", ids.len()));
    }
    if !report.received.is_empty() {
        p.line(format_args!(
            "received {} message(s): {}",
            report.received.len(),
            report.received.join(", ")
        ));
    }
    if report.receipts_sent > 0 {
        p.line(format_args!(
            "sent {} processed receipt(s)",
            report.receipts_sent
        ));
    }
    for damage in &report.state_damage {
        p.warn(format_args!("sync state: {damage}"));
    }
    for rewritten in &report.rewritten {
        p.warn(format_args!("{rewritten}"));
    }
    for lost in &report.lost {
        p.warn(format_args!("lost on the remote: {lost}"));
    }
    for rejected in &report.receipts_rejected {
        p.warn(format_args!(
            "ignored a receipt that does not verify: {rejected}"
        ));
    }
    if !report.receipts_received.is_empty() {
        p.line(format_args!(
            "processed elsewhere: {}",
            report.receipts_received.join(", ")
        ));
    }
    if !report.attachments_received.is_empty() {
        p.line(format_args!(
            "received {} attachment(s), verified, in the private attachment store",
            report.attachments_received.len()
        ));
    }
    for refused in &report.attachments_refused {
        p.warn(format_args!(
            "refused an attachment on the remote: {refused}"
        ));
    }
    for id in &report.quarantined {
        p.line(format_args!(
            "CONFLICT {id}: quarantined in .aea/.quarantine/, not applied"
        ));
    }
}
