//! `aea send` (SPEC §4): resolve the recipients, then compose and deliver
//! (`content`, shared with `reply`).

use super::{content, context::Context};
use crate::bridge::oacp::{self, OacpType};
use crate::cli::SendArgs;
use crate::error::{Error, ExitCode, Result};
use crate::mailbox::Held;
use crate::route;

pub(crate) fn run(args: &SendArgs, ctx: &Context) -> Result<ExitCode> {
    let sender = ctx.mailbox()?;
    // A kept demo's repository used without the demo's config dir would
    // send by the user's own registry and keys, into real repositories.
    if let Some(demo) = super::context::demo_config_of(sender.repo()) {
        let canonical = |p: &std::path::Path| std::fs::canonicalize(p).ok();
        if ctx.config_dir().and_then(canonical) != canonical(&demo) {
            return Err(Error::usage(
                format!(
                    "{} is a repository of `aea demo`, and this aea does not use the demo's config dir: the mail would go by your own registry and keys",
                    sender.repo().display()
                ),
                format!(
                    "export AEA_CONFIG_DIR={}; unset AEA_REGISTRY (as the demo printed), then send again",
                    crate::printer::shell_quote(&demo.display().to_string())
                ),
            ));
        }
    }
    let config = sender.config()?;
    let sender_id = config
        .require_id(&sender.layout().shared(crate::layout::Shared::Config))?
        .to_string();
    let max = config.limits.recipients();
    // Only a trusted remote counts: an untrusted one is as if absent. An
    // id found nowhere here goes to it only when asked.
    let via_remote = match (
        ctx.trusted(&sender, config).sync_remote.is_some(),
        args.via_remote,
    ) {
        (false, true) => {
            return Err(Error::usage(
                "--via-remote needs a mail remote, and this repository has none it trusts",
                "set `sync.remote` in .aea/agent-config.yaml and run `aea trust`",
            ));
        }
        (false, false) => route::ViaRemote::None,
        (true, false) => route::ViaRemote::Configured,
        (true, true) => route::ViaRemote::Asked,
    };
    let targets = targets(args, ctx)?;
    if targets.len() > max {
        return Err(Error::usage(
            format!(
                "{} recipients given; a broadcast reaches at most {max}",
                targets.len()
            ),
            "split the recipients over several sends, or raise limits.max_recipients",
        ));
    }
    // A handoff gives the work to one agent (OACP's rule, SPEC §12): two
    // owners would both take it.
    if args.message_type == crate::message::MessageType::Handoff && targets.len() > 1 {
        return Err(Error::usage(
            format!(
                "a handoff goes to one agent; {} recipients given",
                targets.len()
            ),
            "hand the work to one agent, and tell the others with `--type update`",
        ));
    }
    let mut draft = content::draft(
        &args.content,
        ctx,
        sender.repo(),
        args.message_type,
        args.subject.clone(),
    )?;
    (draft.reply_to, draft.conversation) = thread(args, &sender)?;
    // The ids are copied into the message as given: scanned as its text was.
    draft.check_ids(args.content.allow_secrets)?;
    // Every recipient is found before anything is delivered: a broadcast
    // with one wrong name reaches no one, and is sent again whole once
    // the name is fixed.
    let mut recipients = Vec::with_capacity(targets.len());
    for (target, named) in targets {
        let route = route::resolve(&target, &ctx.cwd, sender.repo(), ctx.registry(), via_remote)
            .and_then(|route| check_named(route, &target, named))
            .inspect_err(|e| {
                // The error below names a file of the recipient's: whose.
                if let Error::ConfigInvalid { path, .. } = e
                    && !path.starts_with(sender.repo())
                {
                    ctx.printer.warn(
                        "nothing was sent: the recipient's config does not read, so it takes no mail until its owner fixes it",
                    );
                }
            })?;
        let to_self = match &route {
            route::Route::Local(r) => r.mailbox.repo() == sender.repo(),
            route::Route::Remote(_) | route::Route::Foreign(_) => false,
        };
        if to_self || route.agent_id() == sender_id {
            return Err(Error::SendToSelf {
                id: route.agent_id().to_string(),
            });
        }
        recipients.push((target, Ok(route)));
    }
    if let Some(kind) = args.oacp_type {
        oacp_type(kind, &recipients, &mut draft.context)?;
    }
    // However it is named (`--oacp-type`, or `--context` with an `oacp`
    // type, which the OACP file is written from), a point-to-point OACP
    // type goes to one agent.
    if let Some(kind) = oacp::context_type(&draft.context)
        && !kind.may_broadcast()
        && recipients.len() > 1
    {
        return Err(Error::usage(
            format!(
                "an OACP {kind} goes to one agent; {} recipients given",
                recipients.len()
            ),
            "send it to one agent, and tell the others in a separate message",
        ));
    }
    let sent = content::send(
        &draft,
        &sender,
        &sender_id,
        recipients,
        args.idempotency_key.as_deref(),
        ctx,
    )?;
    // Said once it is sent. A forgotten --body, or text piped in that send never reads: said,
    // since the protocol lets a message be its subject alone.
    if draft.body.trim().is_empty() {
        ctx.printer.warn(
            "the message has no body: pass --body TEXT or --body-file FILE (`--body-file -` reads standard input, which is not read otherwise)",
        );
    }
    Ok(sent)
}

/// `--oacp-type`: the OACP type the files of the OACP recipients get, put
/// in the message's context. Refused when no recipient is an OACP agent
/// (nothing would carry it); a `handoff` or `handoff_complete` to more
/// than one agent (OACP's point-to-point types) is refused by the caller,
/// however the type is named.
fn oacp_type(
    kind: OacpType,
    recipients: &[(String, Result<route::Route>)],
    context: &mut serde_json::Map<String, serde_json::Value>,
) -> Result<()> {
    let to_oacp = recipients.iter().any(|(_, r)| {
        matches!(r, Ok(route::Route::Foreign(f)) if f.protocol == crate::foreign::Protocol::Oacp)
    });
    if !to_oacp {
        return Err(Error::usage(
            "--oacp-type is for mail to an OACP agent, and no recipient is one",
            "leave out --oacp-type; register an OACP agent with `aea agents add ID --oacp DIR`",
        ));
    }
    oacp::set_type(context, kind).map_err(|e| {
        Error::usage(
            e,
            r#"leave `oacp` out of --context, or make it an object: {"oacp": {...}}"#,
        )
    })
}

/// `--reply-to` and `--conversation` as the message carries them: the
/// message answered, resolved like any reference (`m…`, id, file name, in
/// the inbox, then in `sent/`), and its conversation, which `--conversation`
/// may repeat but not contradict.
fn thread(
    args: &SendArgs,
    sender: &crate::mailbox::Mailbox,
) -> Result<(Option<String>, Option<String>)> {
    if let Some(conversation) = &args.conversation {
        crate::message::check_message_id(conversation).map_err(|_| {
            Error::usage(
                format!("invalid --conversation {conversation:?}"),
                "a conversation id is 1-128 letters, digits and `-_.:`, usually the id of its first message; `--reply-to REF` carries the conversation over by itself",
            )
        })?;
    }
    let Some(reference) = &args.reply_to else {
        return Ok((None, args.conversation.clone()));
    };
    let found = sender
        .inbox()
        .find(reference, &[Held::Inbox, Held::Sent])
        .map(|(entry, _)| entry);
    let parent = match found {
        Ok(entry) => entry.require_valid()?,
        // A message no longer held here (archived elsewhere, sent from
        // another machine, or written by another tool: OACP's
        // `msg-20261123112234-claude-e2da`) can still be named by its
        // full id. What could be a short reference or the prefix of one
        // (`b5b0`, `m3f9a01c2`) must be found.
        Err(Error::MessageNotFound { .. }) if is_foreign_id(reference) => {
            return Ok((Some(reference.clone()), args.conversation.clone()));
        }
        Err(e) => return Err(e),
    };
    let conversation = parent.conversation().to_string();
    if let Some(given) = &args.conversation
        && *given != conversation
    {
        return Err(Error::usage(
            format!(
                "--conversation {given} is not the conversation of the message answered ({conversation})"
            ),
            "leave out --conversation: --reply-to carries the conversation over",
        ));
    }
    Ok((Some(parent.message_id.clone()), Some(conversation)))
}

/// Whether `reference`, found nowhere here, is taken as the full id of a
/// message held elsewhere: a UUID, or an id of at least 12 characters
/// (the message id rules) holding more than hex digits and dashes, so
/// that it cannot be a mistyped short reference or id prefix, and no
/// file name.
fn is_foreign_id(reference: &str) -> bool {
    if uuid::Uuid::try_parse(reference).is_ok() {
        return true;
    }
    let shaped_like_a_ref = reference
        .strip_prefix('m')
        .unwrap_or(reference)
        .bytes()
        .all(|b| b.is_ascii_hexdigit() || b == b'-');
    crate::message::check_message_id(reference).is_ok()
        && reference.len() >= 12
        && !shaped_like_a_ref
        && !reference.to_ascii_lowercase().ends_with(".json")
}

/// Where to send, each with the id `--to` gave for it. `--to-path` (the
/// AEA protocol text's `aea-send.sh --to ID --to-path PATH`) names the
/// repositories; a `--to` next to it names the agent expected there, one
/// per path.
fn targets(args: &SendArgs, ctx: &Context) -> Result<Vec<(String, Option<String>)>> {
    if args.to_path.is_empty() {
        return Ok(args
            .to
            .iter()
            .flat_map(|t| split_list(t, &ctx.cwd))
            .map(|t| (t, None))
            .collect());
    }
    if !args.to.is_empty() && args.to.len() != args.to_path.len() {
        return Err(Error::usage(
            format!(
                "{} --to and {} --to-path given",
                args.to.len(),
                args.to_path.len()
            ),
            "give one --to per --to-path (the id of the agent at that path), or only --to-path",
        ));
    }
    Ok(args
        .to_path
        .iter()
        .enumerate()
        .map(|(i, path)| {
            // A bare directory name is still a path here.
            let path = if route::looks_like_path(path) {
                path.clone()
            } else {
                format!("./{path}")
            };
            (path, args.to.get(i).cloned())
        })
        .collect())
}

/// `--to web,docs` is two recipients: an agent id holds no comma. A
/// folder whose name holds one is still one recipient.
fn split_list(to: &str, cwd: &std::path::Path) -> Vec<String> {
    if !to.contains(',') || (route::looks_like_path(to) && cwd.join(to).is_dir()) {
        return vec![to.to_string()];
    }
    let list: Vec<String> = to
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    if list.is_empty() {
        // Refused as the id it is not.
        return vec![to.to_string()];
    }
    list
}

/// Refuses a `--to-path` repository whose agent is not the `--to` id given
/// with it: the mail would reach someone the sender did not name.
fn check_named(route: route::Route, target: &str, named: Option<String>) -> Result<route::Route> {
    match (&route, named) {
        (route::Route::Local(r), Some(id)) if r.id != id => Err(Error::usage(
            format!("the agent at {target} is {}, not {id}", r.id),
            "check --to and --to-path name the same agent",
        )),
        _ => Ok(route),
    }
}
