//! How far a message this repository sent got, per recipient (SPEC §11):
//! queued, pushed, lost on the remote, delivered or processed — from the
//! sync state, the receipts that came back, and for a recipient on this
//! machine its own mailbox.

use serde::Serialize;

use crate::mailbox::{Held, Mailbox, Processed};
use crate::message::Message;
use crate::sync_state;
use crate::words::word_enum;

word_enum! {
    /// How far a message got to one recipient: the furthest known.
    pub enum LegState {
        /// Waiting in the private `outgoing/` for `aea sync`.
        Queued = "queued",
        /// Pushed to the mail remote.
        Pushed = "pushed",
        /// Pushed, then gone from the remote before a receipt came back
        /// (the detail says whether it was pushed again).
        LostOnTheRemote = "lost_on_the_remote",
        /// In the recipient's inbox on this machine, or sent there when
        /// that inbox is not readable from here (the detail says so).
        Delivered = "delivered",
        /// The recipient processed it (a receipt, or its marker here).
        Processed = "processed",
        /// It expired before the recipient processed it, and the
        /// recipient's `gc` archived it unprocessed (seen on this machine).
        Expired = "expired",
    }
}

impl LegState {
    /// The state in words, for people (`--json` has the snake_case name).
    pub fn label(self) -> &'static str {
        match self {
            LegState::LostOnTheRemote => "lost on the remote",
            other => other.as_str(),
        }
    }
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Leg {
    pub to: String,
    /// queued, pushed, lost_on_the_remote, delivered or processed: the
    /// furthest known.
    pub state: LegState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Where `message`, sent from `mailbox`, is for each of its recipients.
pub fn legs(mailbox: &Mailbox, message: &Message) -> Vec<Leg> {
    let id = message.message_id.clone();
    let state = sync_state::load_state(mailbox);
    let recipients = message
        .metadata
        .broadcast
        .clone()
        .unwrap_or_else(|| vec![message.to.agent_id.clone()]);
    let queued = sync_state::is_queued(mailbox, &id);
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
            local_leg(
                to,
                message.to.repo_path.as_deref(),
                &id,
                &message.from.agent_id,
            )
        };
        legs.push(leg);
    }
    legs
}

/// For a recipient on this machine, look at its mailbox directly.
fn local_leg(to: String, repo_path: Option<&str>, id: &str, sender: &str) -> Leg {
    let recipient = repo_path.and_then(|p| Mailbox::at(std::path::Path::new(p)).ok());
    let found = recipient.as_ref().and_then(|mailbox| {
        let (entry, _) = mailbox.inbox().find_id(id, Some(sender), &[Held::Inbox])?;
        // Judged against the bytes found, not by name: a file delivered
        // again under a processed message's name (other bytes, same id)
        // waits in the inbox while the record of the old bytes is kept,
        // and is not processed. Only aea's own record counts, as before.
        Some(match mailbox.records().processed(&entry) {
            Ok(Processed::Done(marker)) => (true, marker),
            _ => (false, None),
        })
    });
    // Not among its mail: the recipient's gc may have archived it.
    if found.is_none()
        && let Some((_, processed)) = recipient.as_ref().and_then(|m| {
            let (entry, _) = m.inbox().find_id(id, Some(sender), &[Held::Archive])?;
            Some((entry.name.clone(), m.records().archived_record(&entry.name)))
        })
    {
        return if processed {
            Leg {
                to,
                state: LegState::Processed,
                detail: Some("processed, then archived by the recipient".into()),
            }
        } else {
            Leg {
                to,
                state: LegState::Expired,
                detail: Some(
                    "expired before the recipient processed it; archived unread by its gc".into(),
                ),
            }
        };
    }
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
