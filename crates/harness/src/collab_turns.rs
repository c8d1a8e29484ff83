//! Noticing this agent's turn in a collaboration whoever advanced it
//! (SPEC §17): the monitor watches the collaboration folders the agent
//! takes part in, and when `protocol.json` comes to wait for it after an
//! event it did not write, leaves one "your turn" notice in its own inbox
//! — the wake-up aea mails when aea appends the event, now also for events
//! other ACP tools (or people) append. The notice then rings the
//! doorbells like any mail.
//!
//! The notice is [`crate::collab_wake`]'s wake-up, word for word, from the
//! agent to itself and signed with its own key: so `retire_ended` marks it
//! processed once the collaboration ends, and nothing else can pass for it
//! (mail claiming to be from the agent verifies only with its own key).
//! Of the folder it carries what a wake-up carries — the folder's path,
//! the phase, the next action in aea's words and the objective shortened —
//! never an event's text.
//!
//! One notice per turn: the last event seen and whether the agent was then
//! waited for are kept in the private `collab-turns.json`, so a turn is
//! noticed when the agent comes to be waited for, once per event, across
//! restarts of the monitor. No notice for an event the agent wrote, nor
//! for one its author signed (aea wrote it, and mailed the wake-up), nor
//! once the collaboration has ended.
//!
//! `protocol.json` is anyone's to rewrite: its `waitingFor` is a turn only
//! when the log, every rule of it checked, waits for the agent too. And
//! while a notice of a folder is unprocessed, a new turn there leaves no
//! other: a participant handing the turn back and forth (or writing the
//! agent's events for it) cannot fill the inbox.
//!
//! Layer: harness, beside [`crate::monitor`], which calls it.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use ed25519_dalek::{SigningKey, VerifyingKey};

use crate::collab::{Authorship, EVENTS, Folder, Handover, PROTOCOL};
use crate::collab_wake::{wake_draft, wake_up_folder};
use crate::delivery::{self, Sender};
use crate::error::Result;
use crate::mailbox::{Mailbox, SeenTurn};
use crate::runtime::Runtime;

/// How the turn files of a folder stood at a look: size, change time and
/// inode of `protocol.json` and `events.jsonl`. A folder whose stamp did
/// not change is not read again.
type Stamp = [Option<(u64, u128, u64)>; 2];

/// A "your turn" notice left in the agent's inbox, or why it could not be.
#[derive(Debug)]
pub struct Noticed {
    pub folder: PathBuf,
    /// Its short reference, or why it was not delivered (one line).
    pub outcome: std::result::Result<String, String>,
}

/// The collaborations of one agent, as its monitor watches them.
pub struct Turns<'a> {
    mailbox: &'a Mailbox,
    me: &'a str,
    key: std::result::Result<&'a SigningKey, String>,
    keys: &'a dyn Fn(&str) -> Option<VerifyingKey>,
    rt: &'a Runtime,
    stamps: RefCell<HashMap<PathBuf, Stamp>>,
    /// What was seen of each folder: read from `collab-turns.json` at the
    /// first look, kept here and written back after each (the monitor is
    /// its one writer).
    seen: RefCell<Option<BTreeMap<PathBuf, SeenTurn>>>,
}

impl<'a> Turns<'a> {
    /// The collaborations of agent `me` (its mailbox `mailbox`): its
    /// notices are signed with `key` (or not left, and why), events'
    /// signatures checked with the keys `keys` says are pinned.
    pub fn new(
        mailbox: &'a Mailbox,
        me: &'a str,
        key: std::result::Result<&'a SigningKey, String>,
        keys: &'a dyn Fn(&str) -> Option<VerifyingKey>,
        rt: &'a Runtime,
    ) -> Self {
        Turns {
            mailbox,
            me,
            key,
            keys,
            rt,
            stamps: RefCell::new(HashMap::new()),
            seen: RefCell::new(None),
        }
    }

    /// The folders to watch: those the agent's `aea collab` commands
    /// remembered (`collabs.json`, which `aea collab list` shows).
    pub fn folders(&self) -> Vec<PathBuf> {
        self.mailbox.records().collabs().unwrap_or_default()
    }

    /// Looks at each of `folders` whose turn files changed since the last
    /// look, and leaves a notice for each turn that came to this agent.
    /// A folder that cannot be read (gone, not a collaboration, its
    /// `protocol.json` half-written by another tool) is looked at again
    /// next time.
    pub fn look(&self, folders: &[PathBuf]) -> Vec<Noticed> {
        let mut kept = self.seen.borrow_mut();
        if kept.is_none() {
            // A damaged record would make every turn new again: better
            // none noticed than all of them twice.
            let Ok(read) = self.mailbox.records().collab_turns() else {
                return Vec::new();
            };
            *kept = Some(read);
        }
        let seen = kept.as_mut().expect("read above");
        let before = seen.clone();
        let mut noticed = Vec::new();
        for path in folders {
            let stamp = stamp(path);
            if self.stamps.borrow().get(path) == Some(&stamp) {
                continue;
            }
            let folder = Folder::new(path);
            let Ok(handover) = folder.handover(self.keys) else {
                continue;
            };
            let previous = seen.get(path).cloned().unwrap_or_default();
            // protocol.json is anyone's to rewrite: a turn is the agent's
            // only when the log, every rule of it checked, says so too.
            let agrees = handover.waiting_for.iter().any(|w| w == self.me)
                && folder
                    .next(self.me)
                    .is_ok_and(|next| next.log_valid && next.your_turn);
            let (mut now, notice) = judge(&handover, agrees, &previous, self.me);
            if notice && self.notice_waiting(path) {
                // One notice of this folder waiting says all a notice can:
                // a participant handing the turn back and forth (or writing
                // the agent's events for it) adds nothing to the inbox.
                now.noticed.clone_from(&now.event);
            } else if notice {
                let outcome = self.notify(&folder);
                if outcome.is_err() {
                    // Not delivered: said in the log, and tried again once
                    // the folder changes (not at every look, which would
                    // fill the log with the same failure).
                    noticed.push(Noticed {
                        folder: path.clone(),
                        outcome,
                    });
                    self.stamps.borrow_mut().insert(path.clone(), stamp);
                    continue;
                }
                now.noticed.clone_from(&now.event);
                noticed.push(Noticed {
                    folder: path.clone(),
                    outcome,
                });
            }
            self.stamps.borrow_mut().insert(path.clone(), stamp);
            seen.insert(path.clone(), now);
        }
        seen.retain(|path, _| folders.contains(path));
        if *seen != before {
            // Best effort: this monitor remembers either way; one started
            // after a failed write may notice a turn a second time.
            let _ = self.mailbox.records().set_collab_turns(seen);
        }
        noticed
    }

    /// Whether a notice this monitor left for the folder at `path` is still
    /// unprocessed in the agent's inbox: a wake-up's form exactly, from the
    /// agent to itself, signed with its own key (mail anyone else wrote in
    /// its name never stands in for one).
    fn notice_waiting(&self, path: &Path) -> bool {
        let Ok(key) = &self.key else {
            return false;
        };
        let mine = key.verifying_key();
        let Ok(entries) = self.mailbox.inbox().unprocessed() else {
            return false;
        };
        entries.iter().filter_map(|e| e.valid()).any(|message| {
            message.from.agent_id == self.me
                && wake_up_folder(message, self.me).is_some_and(|(folder, _)| folder == path)
                && crate::identity::signed_by(message, &mine)
        })
    }

    /// Leaves the wake-up of `folder` in this agent's own inbox; its
    /// short reference, or why not (one line).
    fn notify(&self, folder: &Folder) -> std::result::Result<String, String> {
        let key = self.key.clone()?;
        let sent = || -> Result<String> {
            let next = folder.next(self.me)?;
            let draft = wake_draft(folder, &next)?;
            let sender = Sender {
                mailbox: self.mailbox,
                id: self.me,
                key,
            };
            Ok(delivery::notify_self(&draft, &sender, self.rt)?.1)
        };
        sent().map_err(|e| crate::error::one_line(&e))
    }
}

/// What to keep of `handover` for agent `me`, and whether it is a turn to
/// notice: `me` is waited for now (by `protocol.json`, and by the log,
/// which `log_agrees` says) and was not at the last look, the
/// collaboration has not ended, the last event is neither `me`'s nor
/// signed by its author (whose aea mailed the wake-up), and no notice was
/// left for that event already.
fn judge(handover: &Handover, log_agrees: bool, previous: &SeenTurn, me: &str) -> (SeenTurn, bool) {
    let event = handover.last.as_ref().map(|l| l.digest.clone());
    let waiting = !handover.ended()
        && log_agrees
        && handover.participants.iter().any(|p| p == me)
        && handover.waiting_for.iter().any(|w| w == me);
    let now = SeenTurn {
        event: event.clone(),
        waiting,
        noticed: previous.noticed.clone(),
    };
    let Some(last) = &handover.last else {
        return (now, false);
    };
    let by_me = last.from.as_deref() == Some(me);
    let mailed = matches!(last.authorship, Authorship::Signed { .. });
    let notice = waiting && !previous.waiting && !by_me && !mailed && previous.noticed != event;
    (now, notice)
}

/// The stamp of `folder`'s turn files now.
fn stamp(folder: &Path) -> Stamp {
    [PROTOCOL, EVENTS].map(|name| {
        let meta = std::fs::symlink_metadata(folder.join(name)).ok()?;
        let changed = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        Some((meta.len(), changed, inode(&meta)))
    })
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
fn inode(_: &std::fs::Metadata) -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collab::{EventAuthor, EventName, Phase};

    fn handover(waiting: &[&str], from: &str, authorship: Authorship, digest: &str) -> Handover {
        Handover {
            waiting_for: waiting.iter().map(ToString::to_string).collect(),
            phase: Some(Phase::Reviewing),
            participants: vec!["web".into(), "api".into(), "ops".into()],
            ended_in_log: false,
            last: Some(EventAuthor {
                line: 2,
                seq: Some(2),
                from: Some(from.into()),
                event: Some(EventName::ProposalSubmitted),
                digest: digest.into(),
                authorship,
            }),
        }
    }

    #[test]
    fn a_turn_is_noticed_once_when_it_comes_and_not_for_ones_own_or_signed_events() {
        let none = SeenTurn::default();
        let h = handover(&["api", "ops"], "web", Authorship::Unsigned, "e2");
        let (now, notice) = judge(&h, true, &none, "api");
        assert!(notice);
        assert!(now.waiting);
        // Seen waiting already (another reviewer's event since): not again.
        let h3 = handover(&["api"], "ops", Authorship::Unsigned, "e3");
        assert!(!judge(&h3, true, &now, "api").1);
        // Signed by its author: aea mailed it. Written by api: api knows.
        let signed = Authorship::Signed {
            signer: "web".into(),
        };
        assert!(!judge(&handover(&["api"], "web", signed, "e2"), true, &none, "api").1);
        assert!(
            !judge(
                &handover(&["api"], "api", Authorship::Unsigned, "e2"),
                true,
                &none,
                "api"
            )
            .1
        );
        // A forged signature is no author's: noticed.
        let forged = Authorship::Forged { reason: "x".into() };
        assert!(judge(&handover(&["api"], "web", forged, "e2"), true, &none, "api").1);
        // Waited for, then not, then again for the same event (a hand-edited
        // protocol.json flapping): one notice per event.
        let noticed = SeenTurn {
            event: Some("e2".into()),
            waiting: false,
            noticed: Some("e2".into()),
        };
        assert!(!judge(&h, true, &noticed, "api").1);
        // Ended, by protocol.json or by the log: never.
        let mut ended = h.clone();
        ended.phase = Some(Phase::Blocked);
        assert!(!judge(&ended, true, &none, "api").1);
        let mut ended = h.clone();
        ended.ended_in_log = true;
        assert!(!judge(&ended, true, &none, "api").1);
        // Not a participant, however protocol.json's waitingFor reads.
        assert!(!judge(&h, true, &none, "mallory").1);
        // protocol.json waits for api, the log does not: no turn, and none
        // remembered as seen (the log's own hand-over is noticed later).
        let (now, notice) = judge(&h, false, &none, "api");
        assert!(!notice);
        assert!(!now.waiting);
    }
}
