//! `aea reply` (SPEC §5.3): a new message in the same conversation, sent
//! only to a verified return address of the original sender.

use super::{Context, content};
use crate::cli::ReplyArgs;
use crate::error::{ExitCode, Result};
use crate::message::MAX_SUBJECT_CHARS;
use crate::route;

pub fn run(args: &ReplyArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let me = mailbox.agent_id()?;
    let entry = mailbox.resolve(&args.reference)?;
    let parent = entry.require_valid()?;
    let subject = match &args.subject {
        Some(s) => s.clone(),
        None => {
            let original = parent.message.subject.trim();
            let original = original.strip_prefix("Re: ").unwrap_or(original);
            format!("Re: {original}")
                .chars()
                .take(MAX_SUBJECT_CHARS)
                .collect()
        }
    };
    let mut draft = content::draft(
        &args.content,
        ctx,
        mailbox.repo(),
        args.message_type,
        subject,
    )?;
    draft.reply_to = Some(parent.message_id.clone());
    draft.conversation = Some(parent.conversation().to_string());
    let via_remote = mailbox
        .config()
        .is_ok_and(|c| ctx.trusted(&mailbox, c).sync_remote.is_some());
    let recipient = route::return_address(&parent, ctx.registry(), via_remote);
    content::send(
        &draft,
        &mailbox,
        &me,
        vec![(parent.from.agent_id.clone(), recipient)],
        None,
        ctx,
    )
}
