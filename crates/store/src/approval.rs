//! A person's decision on a gated message (SPEC §6): checked against the
//! policy (only mail waiting for a person can be approved or rejected),
//! bound to the message's bytes, kept in `.approvals/` and the log with who
//! and when. `approve`, `reject` and `review` all record through here.

use std::path::PathBuf;

use crate::audit::{AuditEvent, Event};
use crate::error::{Error, Result};
use crate::judge::Judge;
use crate::mailbox::{Approval, ApprovalDecision, ApprovalRecord, Entry, Mailbox, Processed};
use crate::message::format_time;
use crate::policy::Action;
use crate::runtime::Runtime;

/// What the person decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Approve,
    Reject,
}

/// Who a person is, for approvals: git's `user.name` / `user.email` of the
/// repository (with the user's global config), if set; the caller asks git.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Person {
    pub name: Option<String>,
    pub email: Option<String>,
}

/// Signs the bytes of a decision for a person (SPEC §19): returns an
/// armored SSHSIG made with namespace [`crate::approvers::NAMESPACE`]. The
/// cli's, which runs `ssh-keygen`; called only where signatures are
/// required, once the decision is known to be one a person may make.
pub type Sign<'a> = &'a dyn Fn(&[u8]) -> Result<String>;

/// Checks that `entry` waits for a person and records `verdict` with who
/// (`by`, else the OS user) and when, in the private state and the log.
/// Where signatures are required, `sign` signs it and the signature must
/// verify against the user's approvers, or nothing is recorded.
#[allow(clippy::too_many_arguments)]
pub fn record(
    mailbox: &Mailbox,
    judge: &Judge,
    entry: &Entry,
    verdict: Verdict,
    text: Option<String>,
    by: Person,
    rt: &Runtime,
    sign: Sign<'_>,
) -> Result<(ApprovalRecord, PathBuf)> {
    let message = entry.require_valid()?;
    // In a shared inbox the decision binds the bytes aea read (and `show`
    // printed), never what their sender made of the file since.
    entry.require_custody(match verdict {
        Verdict::Approve => "approve",
        Verdict::Reject => "reject",
    })?;
    if let Processed::Done(_) = mailbox.records().processed(entry)? {
        return Err(Error::AlreadyProcessed {
            name: entry.name.clone(),
        });
    }
    let decision = judge.decide(&message);
    match (decision.action, verdict) {
        (Action::RequireApproval, _) | (Action::Reject, Verdict::Reject) => {}
        (Action::Reject, Verdict::Approve) => {
            return Err(Error::NotActionable {
                name: entry.name.clone(),
                reason: format!(
                    "the policy rejects it (rule {}); change the policy rather than approving it",
                    decision.rule
                ),
            });
        }
        (action, _) => {
            return Err(Error::NotGated {
                name: entry.name.clone(),
                action: action.as_str(),
                rule: decision.rule,
            });
        }
    }
    // Asked before anything is signed: a person should not touch a key
    // for a decision that is then refused as already made.
    let before = mailbox.approvals().approval(entry, true);
    let existing = mailbox.approvals().approval_record(&entry.name);
    let same_bytes = existing
        .as_ref()
        .is_some_and(|r| r.sha256.is_some() && r.sha256 == entry.sha256);
    if same_bytes && before != Approval::Unverified {
        return Err(crate::mailbox::AlreadyDecided::by_record(&entry.name, existing).into());
    }
    let user = rt.user().to_string();
    let (word, decided, note, reason) = match verdict {
        Verdict::Approve => (AuditEvent::Approved, ApprovalDecision::Approved, text, None),
        Verdict::Reject => (AuditEvent::Rejected, ApprovalDecision::Rejected, None, text),
    };
    let mut record = ApprovalRecord {
        message_id: message.message_id.clone(),
        file: entry.name.clone(),
        decision: decided.into(),
        by: by.name.unwrap_or_else(|| user.clone()),
        email: by.email,
        user,
        at: format_time(rt.now()),
        rule: decision.rule,
        note,
        reason,
        sha256: entry.sha256.clone(),
        signature: None,
    };
    let mut signer = None;
    if mailbox.signatures_required() {
        if let Some(why) = mailbox.signatures_unusable() {
            return Err(Error::DecisionRefused {
                message: format!("nothing was recorded: {why}"),
                hint: "a person adds their SSH key first: `aea approvers add NAME --key ~/.ssh/id_ed25519_sk.pub`".into(),
            });
        }
        let data = mailbox.decision_bytes(&record);
        let signature = sign(&data)?;
        let approver = mailbox
            .signoff()
            .verify(&data, Some(&signature))
            .map_err(|why| Error::DecisionRefused {
                message: format!("nothing was recorded: {why}"),
                hint: "sign with an approver's key: pass --ssh-key FILE, or load it into ssh-agent (`aea approvers list` shows whose keys approve)".into(),
            })?;
        signer = Some((approver.name.clone(), approver.fingerprint()));
        record.signature = Some(signature);
    }
    // The record binds these bytes; in a shared inbox the sender can no
    // longer change them once the receiver owns the file.
    mailbox.records().adopt(entry)?;
    let (path, superseded) = mailbox
        .approvals()
        .record_approval(&record, before == Approval::Unverified)?;
    let mut event = Event::new(rt, word)
        .with("message", record.message_id.as_str())
        .with("file", record.file.as_str())
        .with("rule", record.rule.as_str())
        .with("by", record.by.as_str())
        .with("sha256", record.sha256.clone().unwrap_or_default());
    if let Some(old) = &superseded {
        // The file changed after an earlier decision; that record is kept.
        event = event.with("superseded", old.display().to_string());
    }
    // The name is whatever the list that verified it calls the key; the
    // fingerprint says which key it was.
    if let Some((name, fingerprint)) = &signer {
        event = event
            .with("signed_by", name.as_str())
            .with("signer_key", fingerprint.as_str());
    }
    if let Some(email) = &record.email {
        event = event.with("email", email.as_str());
    }
    if let Some(text) = record.note.as_ref().or(record.reason.as_ref()) {
        event = event.with(
            if verdict == Verdict::Approve {
                "note"
            } else {
                "reason"
            },
            text.as_str(),
        );
    }
    mailbox.log(&event)?;
    Ok((record, path))
}

/// The messages of the inbox that the policy gates but no person approved
/// and that a `.processed/` marker aea did not record hides: another
/// tool's (the bash AEA's scripts mark with `touch`, an empty marker that
/// says nothing of an approval) or one git wrote (a pull). aea itself
/// never marks gated mail processed without an approval, and its own
/// processed mail has left the inbox. They stay hidden from listings;
/// `check`, `pending` and `doctor` say that nobody approved them.
pub fn processed_without_approval(mailbox: &Mailbox, judge: &Judge) -> Result<Vec<Entry>> {
    mailbox.check_state()?;
    // The listing the caller just made knows them; else one `stat` each.
    let mut names = match mailbox.inbox().listed_marked() {
        Some(names) => names,
        None => mailbox.inbox().marked_names()?,
    };
    names.sort();
    Ok(names
        .into_iter()
        .filter_map(|n| mailbox.inbox().read_listed(mailbox.dir(), &n))
        .filter(|entry| {
            matches!(mailbox.records().processed(entry), Ok(Processed::Marked(_)))
                && entry.message.as_ref().is_ok_and(|m| {
                    judge.decide(m).action.awaits_approval()
                        && mailbox.approvals().approval(entry, true) != Approval::Approved
                })
        })
        .collect())
}

/// Gated mail aea holds as processed `done` (or whose record of how it was
/// processed is gone) without an approval that counts now: aea never
/// processes gated mail `done` without one, so something else did — aea
/// run with another approver list, config folder or policy, an older aea,
/// or the state written by hand — or the approval came before signatures
/// were required. Reads every processed message: for `doctor`. Sorted.
pub fn processed_without_valid_approval(mailbox: &Mailbox, judge: &Judge) -> Result<Vec<String>> {
    use crate::layout::Private;
    use crate::mailbox::Outcome;
    mailbox.check_state()?;
    let mut found: Vec<String> = mailbox
        .inbox()
        .read_all_in(Private::Processed)?
        .into_iter()
        .filter(|entry| {
            let done = mailbox.records().record(&entry.name).is_none_or(|marker| {
                !matches!(
                    marker.outcome,
                    crate::words::OrUnknown::Known(Outcome::Ignored | Outcome::Deferred)
                )
            });
            done && entry
                .valid()
                .is_some_and(|m| judge.decide(m).action.awaits_approval())
                && mailbox.approvals().approval(entry, true) != Approval::Approved
        })
        .map(|entry| entry.name)
        .collect();
    found.sort();
    Ok(found)
}
