//! `aea status` (SPEC §11): how far a message this repository sent got.

use serde::Serialize;

use super::Context;
use crate::cli::ShowArgs;
use crate::error::{ExitCode, Result};
use crate::mailbox::Mailbox;
use crate::sync;
use crate::words::word_enum;

word_enum! {
    /// How far a message got to one recipient: the furthest known.
    pub(super) enum LegState {
        /// Waiting in `.aea/outgoing/` for `aea sync`.
        Queued = "queued",
        /// Pushed to the mail remote.
        Pushed = "pushed",
        /// Pushed, then gone from the remote before a receipt came back
        /// (the detail says whether it was pushed again).
        LostOnTheRemote = "lost on the remote",
        /// In the recipient's inbox on this machine, or sent there when
        /// that inbox is not readable from here (the detail says so).
        Delivered = "delivered",
        /// The recipient processed it (a receipt, or its marker here).
        Processed = "processed",
    }
}

/// `aea status --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct StatusOutput<'a> {
    pub message_id: &'a str,
    pub recipients: &'a [Leg],
}

#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct Leg {
    to: String,
    /// queued, pushed, lost on the remote, delivered or processed: the
    /// furthest known.
    state: LegState,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

pub fn run(args: &ShowArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let entry = mailbox.resolve_sent(&args.reference)?;
    let message = entry.require_valid()?;
    let id = message.message_id.clone();
    let state = sync::load_state(&mailbox);
    let recipients = message
        .metadata
        .broadcast
        .clone()
        .unwrap_or_else(|| vec![message.to.agent_id.clone()]);
    let queued = sync::is_queued(&mailbox, &id);
    let mut legs = Vec::new();
    for to in recipients {
        let leg = if let Some(receipt) = state.receipts.get(&id).filter(|r| r.by == to) {
            Leg {
                to,
                state: LegState::Processed,
                detail: Some(format!("{} at {}", receipt.outcome, receipt.at)),
            }
        } else if let Some(lost) = state.lost.get(&id).filter(|l| l.to == to) {
            Leg {
                to,
                state: LegState::LostOnTheRemote,
                detail: Some(if lost.repushed {
                    format!(
                        "gone from the remote (noticed {}); pushed again from this machine's copy",
                        lost.noticed
                    )
                } else {
                    format!(
                        "gone from the remote (noticed {}); no copy left here: send it again",
                        lost.noticed
                    )
                }),
            }
        } else if state.pushed.get(&id).is_some_and(|p| p.to.contains(&to)) {
            Leg {
                to,
                state: LegState::Pushed,
                detail: state.pushed.get(&id).map(|p| format!("at {}", p.at)),
            }
        } else if queued {
            Leg {
                to,
                state: LegState::Queued,
                detail: Some("run `aea sync`".into()),
            }
        } else {
            local_leg(to, message.to.repo_path.as_deref(), &id)
        };
        legs.push(leg);
    }
    if ctx.printer.json() {
        ctx.printer.value(&StatusOutput {
            message_id: &id,
            recipients: &legs,
        });
        return Ok(ExitCode::Success);
    }
    ctx.printer.line(format_args!("{id}"));
    for leg in &legs {
        ctx.printer.line(format_args!(
            "  {:<16} {}{}",
            leg.to,
            leg.state,
            leg.detail
                .as_ref()
                .map_or(String::new(), |d| format!(" ({d})"))
        ));
    }
    Ok(ExitCode::Success)
}

/// For a recipient on this machine, look at its mailbox directly.
fn local_leg(to: String, repo_path: Option<&str>, id: &str) -> Leg {
    let found = repo_path
        .and_then(|p| Mailbox::at(std::path::Path::new(p)).ok())
        .and_then(|mailbox| {
            let name = mailbox
                .message_names()
                .ok()?
                .into_iter()
                .find(|n| mailbox.read(n).valid().is_some_and(|m| m.message_id == id))?;
            Some((mailbox.is_processed(&name), mailbox.marker(&name)))
        });
    match found {
        Some((true, marker)) => Leg {
            to,
            state: LegState::Processed,
            detail: marker.map(|m| format!("{} at {}", m.outcome, m.processed_at)),
        },
        Some((false, _)) => Leg {
            to,
            state: LegState::Delivered,
            detail: None,
        },
        None => Leg {
            to,
            state: LegState::Delivered,
            detail: Some("recipient's inbox not readable from here".into()),
        },
    }
}
