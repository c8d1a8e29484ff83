//! `aea reply` (SPEC §5.3): a new message in the same conversation, sent
//! only to a verified return address of the original sender, and only for
//! mail the receiver's policy lets it act on (as `aea process` does).

use super::{content, context::Context};
use crate::bridge::oacp;
use crate::cli::ReplyArgs;
use crate::error::{Error, ExitCode, Result};
use crate::foreign::Protocol;
use crate::mailbox::Held;
use crate::message::MAX_SUBJECT_CHARS;
use crate::route::{self, Route};

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
    oacp_type(args, &parent, &recipient, &mut draft.context)?;
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

/// The OACP type of a reply to an OACP agent, in the reply's context:
/// `--oacp-type`, else OACP's answer to the type of the message answered
/// (`handoff` → `handoff_complete`, …), else none (an AEA `response` is
/// written as `follow_up`). `--oacp-type` for a reply that goes to no OACP
/// agent is refused: nothing would carry it.
fn oacp_type(
    args: &ReplyArgs,
    parent: &crate::message::Message,
    recipient: &Result<Route>,
    context: &mut serde_json::Map<String, serde_json::Value>,
) -> Result<()> {
    let to_oacp = matches!(recipient, Ok(Route::Foreign(f)) if f.protocol == Protocol::Oacp);
    let kind = match args.oacp_type {
        Some(_) if recipient.is_ok() && !to_oacp => {
            return Err(Error::usage(
                format!(
                    "--oacp-type is for a reply to an OACP agent, and {} is not one",
                    parent.from.agent_id
                ),
                "leave out --oacp-type; register an OACP agent with `aea agents add ID --oacp DIR`",
            ));
        }
        Some(kind) => kind,
        None if to_oacp && !oacp::names_type(context) => match oacp::answer_type(parent) {
            Some(kind) => kind,
            None => return Ok(()),
        },
        None => return Ok(()),
    };
    oacp::set_type(context, kind).map_err(|e| {
        Error::usage(
            e,
            r#"leave `oacp` out of --context, or make it an object: {"oacp": {...}}"#,
        )
    })
}
