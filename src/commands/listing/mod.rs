//! The edge that `check` and `pending` share: the inbox as a report (each
//! unprocessed message with its decision, approval state and sender, and
//! the invalid files with their reason) and its human rendering.

use serde::{Deserialize, Serialize};

use super::context::Context;
use crate::judge::Judge;
use crate::keyring::SenderState;
use crate::mailbox::{Approval, Entry, Mailbox, Marker, StaleMarker};
use crate::message::{MessageType, Priority};
use crate::policy::Decision;
use crate::printer::untrusted_short;

mod remember;
pub(crate) use remember::{remembered_clean, renew_quiet, unprocessed_page, unprocessed_report};

#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
// A JSON document of flags, each a yes or no a script reads by name.
#[allow(clippy::struct_excessive_bools)]
pub(crate) struct Item {
    /// aea's short reference (`m3f9a01c2`, see [`crate::shortref`]).
    #[serde(rename = "ref")]
    pub short_ref: String,
    pub file: String,
    pub id: String,
    #[serde(rename = "type")]
    pub message_type: MessageType,
    pub priority: Priority,
    pub from: String,
    pub subject: String,
    pub timestamp: String,
    pub requires_response: bool,
    /// `verified` or `unverified` (decided as an unknown sender unless the
    /// registry accepts it) — forged mail is listed as invalid.
    pub sender: SenderState,
    /// Where the registry says the sender lives, when the message says it
    /// comes from another folder: a known id used from elsewhere (a kept
    /// `aea demo` repository, a copy). Absent when they agree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_path_mismatch: Option<String>,
    /// The sender says, in this signed message, that its repository also
    /// sends unsigned mail (the bash AEA's scripts), which this receiver
    /// takes as forged until a person runs `aea agents trust ID
    /// --allow-unsigned`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sender_also_unsigned: bool,
    pub decision: Decision,
    pub approval: Approval,
    /// Why a person's decision does not count, when `approval` is
    /// `unverified`: no approver signed it (SPEC §19).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_problem: Option<String>,
    pub expired: bool,
    /// Set when a processed marker exists but no longer covers the file
    /// (replaced after processing) or is not a regular file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale_marker: Option<StaleMarker>,
    /// Put off with `process --outcome deferred`: when, by whom and why.
    /// Deferred mail is listed after the rest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deferred: Option<Deferred>,
    /// With `check --processed` / `--all`: how it was processed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processed: Option<Marker>,
    /// It waits for a person, who approved it before aea moved its state
    /// out of the work tree: that approval was not taken over (a commit
    /// could have planted it), so it is asked for again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approve_again: bool,
    /// In an inbox shared with other OS users: its sender rewrote the file
    /// after aea first read it. Listed as aea read it (its copy); nothing
    /// is approved or processed until `aea show` puts that copy back.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub changed_after_read: bool,
}

#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct Deferred {
    pub at: String,
    pub by: String,
    pub note: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct Invalid {
    #[serde(rename = "ref")]
    pub short_ref: String,
    pub file: String,
    pub reason: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Report {
    pub agent_id: Option<String>,
    pub repo: String,
    pub unprocessed: usize,
    pub needs_approval: usize,
    /// How many of the unprocessed were deferred (listed last).
    pub deferred: usize,
    pub messages: Vec<Item>,
    pub invalid: Vec<Invalid>,
    /// Inbox files this listing did not read: a hook reads at most a few
    /// thousand at once, so a flood cannot hold a commit or a prompt up.
    /// What they hold is unknown; the pre-commit gate blocks on them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_read: usize,
    /// Messages waiting after the ones listed: `check` lists a page (the
    /// first in processing order) unless asked for `--all`.
    #[serde(default)]
    pub more: usize,
    /// Invalid files after the ones listed, likewise.
    #[serde(default)]
    pub more_invalid: usize,
    /// Of `more`, how many were read for their place in the order but not
    /// verified or judged: a first page of a flood checks the signatures
    /// of what it lists only. Counted in `unprocessed`, not in
    /// `needs_approval`; `--all` judges every one.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unjudged: usize,
    /// Gated messages another tool marked processed (an empty marker, as
    /// the bash AEA's `touch` makes) with no approval on record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processed_without_approval: Vec<Unapproved>,
}

/// A gated message marked processed without a person's approval.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct Unapproved {
    #[serde(rename = "ref")]
    pub short_ref: String,
    pub file: String,
    pub id: String,
    #[serde(rename = "type")]
    pub message_type: MessageType,
    pub priority: Priority,
    pub from: String,
    pub subject: String,
}

/// The gated messages marked processed without approval, as listed
/// items: by another tool, or by a commit (a pull can bring a marker).
/// aea's own processed mail has left the inbox, so only these few are
/// looked at.
pub fn unapproved(mailbox: &Mailbox, judge: &Judge) -> Vec<Unapproved> {
    // Unsound state has stopped the listing before this.
    let entries = crate::approval::processed_without_approval(mailbox, judge).unwrap_or_default();
    let refs = crate::mailbox::short_refs(&entries);
    entries
        .iter()
        .zip(refs)
        .filter_map(|(entry, short_ref)| {
            let m = entry.message.as_ref().ok()?;
            Some(Unapproved {
                short_ref,
                file: entry.name.clone(),
                id: m.message_id.clone(),
                message_type: m.message_type,
                priority: m.priority,
                from: m.from.agent_id.clone(),
                subject: m.message.subject.clone(),
            })
        })
        .collect()
}

/// The warning that names them, for people.
pub(crate) fn print_unapproved(list: &[Unapproved], ctx: &Context) {
    if list.is_empty() {
        return;
    }
    ctx.printer.line(format_args!(
        "{} gated message{} marked processed by another tool without approval:",
        list.len(),
        plural(list.len())
    ));
    for u in list {
        ctx.printer.line(format_args!(
            "     ref {}  {} {} from {}: {}  [PROCESSED WITHOUT APPROVAL]",
            u.short_ref,
            u.priority,
            u.message_type,
            untrusted_short(&u.from, 40),
            untrusted_short(&u.subject, 72)
        ));
    }
}

pub(crate) fn build_report(
    mailbox: &Mailbox,
    entries: &[Entry],
    judge: &Judge,
    ctx: &Context,
) -> Report {
    let now = ctx.rt.now();
    // Unsound state stops the listing before this; here a deferral that
    // cannot be read only loses its when and why.
    let deferrals = mailbox.records().deferrals().unwrap_or_default();
    let approve_again = crate::migrate::record(mailbox)
        .map(|r| r.approve_again)
        .unwrap_or_default();
    let mut messages = Vec::new();
    let mut invalid = Vec::new();
    let refs = crate::mailbox::short_refs(entries);
    for (entry, short_ref) in entries.iter().zip(refs) {
        match &entry.message {
            Ok(m) => {
                let decision = judge.decide(m);
                let approval = mailbox
                    .approvals()
                    .approval(entry, decision.action.awaits_approval());
                messages.push(Item {
                    short_ref,
                    file: entry.name.clone(),
                    id: m.message_id.clone(),
                    message_type: m.message_type,
                    priority: m.priority,
                    from: m.from.agent_id.clone(),
                    subject: m.message.subject.clone(),
                    timestamp: m.timestamp.clone(),
                    requires_response: m.requires_response,
                    sender: judge.verify(m).state(),
                    sender_path_mismatch: judge
                        .sender_path_mismatch(m)
                        .map(|p| p.display().to_string()),
                    sender_also_unsigned: judge.unsigned_too_refused(m),
                    decision,
                    approval_problem: (approval == Approval::Unverified)
                        .then(|| mailbox.approvals().signature_problem(entry))
                        .flatten(),
                    approval,
                    expired: m.is_expired(now),
                    stale_marker: mailbox.records().stale_marker(entry),
                    deferred: deferrals.get(&entry.name).map(|marker| Deferred {
                        at: marker
                            .as_ref()
                            .map(|m| m.processed_at.clone())
                            .unwrap_or_default(),
                        by: marker.as_ref().map(|m| m.by.clone()).unwrap_or_default(),
                        note: marker.as_ref().and_then(|m| m.note.clone()),
                    }),
                    processed: None,
                    approve_again: approval.waits() && approve_again.contains(&entry.name),
                    changed_after_read: entry.changed_after_read(),
                });
            }
            Err(reason) => invalid.push(Invalid {
                short_ref,
                file: entry.name.clone(),
                reason: reason.clone(),
            }),
        }
    }
    // New mail first, in processing order; deferred mail after it.
    messages.sort_by_key(|m| m.deferred.is_some());
    Report {
        agent_id: judge.agent_id.clone(),
        repo: mailbox.repo().display().to_string(),
        deferred: messages.iter().filter(|m| m.deferred.is_some()).count(),
        unprocessed: messages.len(),
        needs_approval: messages.iter().filter(|m| m.approval.waits()).count(),
        messages,
        invalid,
        not_read: mailbox.inbox().listed_unread(),
        more: 0,
        more_invalid: 0,
        unjudged: 0,
        processed_without_approval: unapproved(mailbox, judge),
    }
}

impl Report {
    /// Keeps the first `limit` messages and invalid files, counting the
    /// rest in `more` and `more_invalid`. The totals stay the inbox's.
    pub(crate) fn page(&mut self, limit: usize) {
        self.more += self.messages.len().saturating_sub(limit);
        self.messages.truncate(limit);
        self.more_invalid += self.invalid.len().saturating_sub(limit);
        self.invalid.truncate(limit);
    }
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Each unprocessed file of `report` by name, whether it is a valid
/// message, and its reference: what hooks count and announce.
pub(crate) fn unread(report: &Report) -> Vec<crate::reminder::Unread> {
    let unread = |name: &str, valid: bool, short_ref: &str| crate::reminder::Unread {
        name: name.to_string(),
        valid,
        short_ref: short_ref.to_string(),
    };
    report
        .messages
        .iter()
        .map(|m| unread(&m.file, true, &m.short_ref))
        .chain(
            report
                .invalid
                .iter()
                .map(|i| unread(&i.file, false, &i.short_ref)),
        )
        .collect()
}

/// Two lines about one message: what it is, and what the policy decided.
pub(crate) fn print_item(n: usize, m: &Item, ctx: &Context) {
    let mut flags = Vec::new();
    if m.expired {
        flags.push("EXPIRED".to_string());
    }
    match m.approval {
        Approval::NotNeeded => {}
        Approval::ChangedAfterApproval => {
            flags.push("CHANGED AFTER APPROVAL: not approved, decide again".into());
        }
        Approval::Unverified => flags.push(format!(
            "NOT SIGNED BY AN APPROVER: {}; decide again",
            m.approval_problem
                .as_deref()
                .unwrap_or("no approver's signature verifies")
        )),
        other => flags.push(format!("approval {}", other.label())),
    }
    if m.approve_again {
        flags.push("APPROVED BEFORE aea MOVED ITS STATE: approve again".into());
    }
    if let Some(why) = m.stale_marker {
        flags.push(format!("processed marker: {why}"));
    }
    if m.changed_after_read {
        flags.push("CHANGED AFTER READ: its sender rewrote the file; `aea show` it again".into());
    }
    if let Some(d) = &m.deferred {
        flags.push(format!(
            "DEFERRED {} by {}{}",
            untrusted_short(&d.at, 40),
            untrusted_short(&d.by, 40),
            d.note
                .as_ref()
                .map_or(String::new(), |n| format!(": {}", untrusted_short(n, 80)))
        ));
    }
    if let Some(p) = &m.processed {
        flags.push(format!(
            "processed ({}) {} by {}",
            p.outcome,
            untrusted_short(&p.processed_at, 40),
            untrusted_short(&p.by, 40)
        ));
    }
    if m.requires_response {
        flags.push("answer wanted".into());
    }
    if m.sender != SenderState::Verified {
        flags.push(format!("sender {}", m.sender));
    }
    if m.sender_also_unsigned {
        flags.push(format!(
            "{0} also sends unsigned mail (bash AEA scripts), forged here until `aea agents trust {0} --allow-unsigned`",
            untrusted_short(&m.from, 40)
        ));
    }
    if let Some(registered) = &m.sender_path_mismatch {
        flags.push(format!(
            "NOT FROM {}'s REGISTERED FOLDER {}",
            untrusted_short(&m.from, 40),
            untrusted_short(registered, 80)
        ));
    }
    ctx.printer.line(format_args!(
        "{n:>3}. {:<7} {:<8} from {:<16} {}",
        m.priority,
        m.message_type,
        m.from,
        untrusted_short(&m.subject, 72)
    ));
    ctx.printer.line(format_args!(
        "     ref {}  id {}  -> {} ({}){}",
        m.short_ref,
        untrusted_short(&m.id, 72),
        m.decision.action.as_str(),
        m.decision.rule,
        if flags.is_empty() {
            String::new()
        } else {
            format!("  [{}]", flags.join(", "))
        }
    ));
    // What makes its mail verify. Asked only here, for a person at a
    // terminal: a hook's output never names a sender.
    if m.sender == SenderState::Unverified
        && let Some(hint) = ctx.pin_hint(&m.from)
    {
        ctx.printer
            .line(format_args!("     unverified sender: {hint}"));
    }
}

pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// One line on mail that waited and is gone without aea processing it
/// (`why`: what took it): a count and aea's short references, never what
/// a sender chose, and how to get it back.
pub(crate) fn lost_line(lost: &[crate::mailbox::Vanished], why: &str) -> String {
    let refs: Vec<String> = lost
        .iter()
        .map(crate::mailbox::Vanished::short_ref)
        .collect();
    format!(
        "{} message{} that waited ({}) {} gone without aea processing {}: {why}. Ask {} sender{} to send {} again (`aea status` on their side shows what they sent).",
        lost.len(),
        plural(lost.len()),
        crate::reminder::some_refs(&refs),
        if lost.len() == 1 { "is" } else { "are" },
        if lost.len() == 1 { "it" } else { "them" },
        if lost.len() == 1 { "its" } else { "their" },
        plural(lost.len()),
        if lost.len() == 1 { "it" } else { "them" },
    )
}

/// An inbox whose `.aea/` is no longer a folder: a pull or a checkout put
/// a file or a symlink there, and git deleted what it ignored in it.
pub(crate) struct Replaced {
    /// The folder holding it.
    pub repo: std::path::PathBuf,
    /// What is there now, in words (`a symlink`, `a file`).
    pub what: &'static str,
    /// What waited in it at aea's last listing, neither processed nor
    /// archived: gone with it.
    pub lost: Vec<crate::mailbox::Vanished>,
}

impl Replaced {
    /// The inbox at `repo` (its `.aea/` there), when it is replaced; its
    /// private state is `state`.
    pub(crate) fn at(repo: &std::path::Path, state: &std::path::Path) -> Option<Replaced> {
        let meta = std::fs::symlink_metadata(repo.join(crate::mailbox::AEA_DIR)).ok()?;
        let what = if meta.file_type().is_symlink() {
            "a symlink"
        } else if meta.is_dir() {
            return None;
        } else {
            "a file"
        };
        Some(Replaced {
            repo: repo.to_path_buf(),
            what,
            lost: crate::mailbox::lost_with_inbox(state),
        })
    }

    /// The inbox a command run from `ctx` is in (`--repo`, or the nearest
    /// folder at or above the current one with a `.aea`), when replaced.
    pub(crate) fn of(ctx: &Context) -> Option<Replaced> {
        let start = ctx.repo.clone().unwrap_or_else(|| ctx.cwd.clone());
        let repo = start
            .ancestors()
            .take(if ctx.repo.is_some() { 1 } else { usize::MAX })
            .find(|d| std::fs::symlink_metadata(d.join(crate::mailbox::AEA_DIR)).is_ok())?;
        let repo = std::fs::canonicalize(repo).ok()?;
        let state = crate::layout::Layout::of(&repo).state().to_path_buf();
        Replaced::at(&repo, &state)
    }

    /// Why its mail is gone, for [`lost_line`].
    pub(crate) fn why(&self) -> String {
        format!(".aea/ is now {}, and git deleted what it held", self.what)
    }
}
