//! `aea send` (SPEC §4): resolve the recipients, then compose and deliver
//! (`content`, shared with `reply`).

use super::{Context, content};
use crate::cli::SendArgs;
use crate::error::{Error, ExitCode, Result};
use crate::route;

pub fn run(args: &SendArgs, ctx: &Context) -> Result<ExitCode> {
    let sender = ctx.mailbox()?;
    let config = sender.config()?;
    let sender_id = config.require_id(sender.dir())?.to_string();
    let max = config.limits.recipients();
    // Only a trusted remote counts: an untrusted one is as if absent.
    let via_remote = ctx.trusted(&sender, config).sync_remote.is_some();
    if args.to.len() > max {
        return Err(Error::usage(
            format!(
                "{} recipients given; a broadcast reaches at most {max}",
                args.to.len()
            ),
            "split the recipients over several sends, or raise limits.max_recipients",
        ));
    }
    let mut draft = content::draft(
        &args.content,
        ctx,
        sender.repo(),
        args.message_type,
        args.subject.clone(),
    )?;
    draft.reply_to.clone_from(&args.reply_to);
    draft.conversation.clone_from(&args.conversation);
    let recipients = args
        .to
        .iter()
        .map(|target| {
            (
                target.clone(),
                route::resolve(target, &ctx.cwd, sender.repo(), ctx.registry(), via_remote),
            )
        })
        .collect();
    content::send(
        &draft,
        &sender,
        &sender_id,
        recipients,
        args.idempotency_key.as_deref(),
        ctx,
    )
}
