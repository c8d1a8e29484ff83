//! `aea reply` (SPEC §5.3): a new message in the same conversation, sent
//! only to a verified return address of the original sender, and only for
//! mail the receiver's policy lets it act on (as `aea process` does).

use super::{content, context::Context};
use crate::cli::ReplyArgs;
use crate::error::{Error, ExitCode, Result};
use crate::mailbox::Held;
use crate::message::MAX_SUBJECT_CHARS;
use crate::route;

pub fn run(args: &ReplyArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let me = mailbox.agent_id()?;
    let entry = mailbox.inbox().find(&args.reference, &[Held::Inbox])?.0;
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
    if args.content.body.is_none() && args.content.body_file.is_none() {
        return Err(Error::usage(
            "a reply needs a body",
            "say what you answer with --body TEXT, or --body-file FILE (`-` for standard input)",
        ));
    }
    let mut draft = content::draft(
        &args.content,
        ctx,
        mailbox.repo(),
        args.message_type,
        subject,
    )?;
    if draft.body.trim().is_empty() {
        return Err(Error::usage(
            "the reply's body is empty",
            "say what you answer with --body TEXT, or --body-file FILE (`-` for standard input)",
        ));
    }
    draft.reply_to = Some(parent.message_id.clone());
    draft.conversation = Some(parent.conversation().to_string());
    let via_remote = mailbox
        .config()
        .is_ok_and(|c| ctx.trusted(&mailbox, c).sync_remote.is_some());
    let recipient = route::return_address(&parent, ctx.registry(), via_remote);
    // Answering is acting on the message: mail the policy rejects, or that
    // waits for a person's approval, gets no answer, as `process` refuses
    // to mark it done. Checked once the return address is known, so a
    // forged sender is named as such first.
    if recipient.is_ok() {
        let judge = ctx.judge(&mailbox);
        let decision = judge.decide(&parent);
        if let Some(refusal) = judge.why_not_done(&entry, Some(&decision), &mailbox) {
            return Err(refusal);
        }
    }
    content::send(
        &draft,
        &mailbox,
        &me,
        vec![(parent.from.agent_id.clone(), recipient)],
        None,
        ctx,
    )
}
