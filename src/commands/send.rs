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
    let targets = targets(args)?;
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
    draft.reply_to.clone_from(&args.reply_to);
    draft.conversation.clone_from(&args.conversation);
    let recipients = targets
        .into_iter()
        .map(|(target, named)| {
            let route =
                route::resolve(&target, &ctx.cwd, sender.repo(), ctx.registry(), via_remote)
                    .and_then(|route| check_named(route, &target, named));
            (target, route)
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

/// Where to send, each with the id `--to` gave for it. `--to-path` (the
/// AEA protocol text's `aea-send.sh --to ID --to-path PATH`) names the
/// repositories; a `--to` next to it names the agent expected there, one
/// per path.
fn targets(args: &SendArgs) -> Result<Vec<(String, Option<String>)>> {
    if args.to_path.is_empty() {
        return Ok(args.to.iter().map(|t| (t.clone(), None)).collect());
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
