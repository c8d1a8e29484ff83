//! Whether a person's decision carries an approver's signature (SPEC §19).
//! The repository's policy (`approvals.require_signature`) or the user's
//! approver list (`aea approvers require`) says whether it must; either
//! one requiring it is enough. The record's SSHSIG, over the
//! [`Decision`] this module rebuilds from the record and the repository,
//! says whether it does. Verified in-process, only when a record is read.

use std::cell::OnceCell;
use std::path::PathBuf;

use crate::approvers::{Approver, Approvers, Decision, NAMESPACE, Refusal};
use crate::mailbox::{ApprovalRecord, Mailbox};

/// The user's approvers, read once per command and only if a decision
/// is looked at.
#[derive(Debug, Default)]
pub struct SignOff {
    /// The user's config dir; `None`: the user has none, so no approver.
    config_dir: Option<PathBuf>,
    approvers: OnceCell<Result<Approvers, String>>,
}

impl SignOff {
    pub fn new(config_dir: Option<PathBuf>) -> Self {
        SignOff {
            config_dir,
            approvers: OnceCell::new(),
        }
    }

    /// The user's approver list in force, or why it cannot be read.
    pub fn approvers(&self) -> Result<&Approvers, &str> {
        self.approvers
            .get_or_init(|| match &self.config_dir {
                Some(dir) => Approvers::load(dir).map_err(|e| {
                    format!("the approver list cannot be read ({e}), so no signature verifies")
                }),
                None => Ok(Approvers::default()),
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// Whether a decision in `mailbox` counts only when signed: the
    /// repository's policy or the user requires it. A list that cannot be
    /// read counts as requiring it: what an agent broke must not open the
    /// way.
    pub fn required(&self, mailbox: &Mailbox) -> bool {
        let repository = mailbox
            .config()
            .is_ok_and(|c| c.approvals.require_signature);
        match self.approvers() {
            Ok(list) => list.required(repository),
            Err(_) => true,
        }
    }

    /// Checks `signature` over the decision `record` states in `mailbox`.
    pub fn verify(
        &self,
        mailbox: &Mailbox,
        record: &ApprovalRecord,
        signature: Option<&str>,
    ) -> Result<&Approver, String> {
        let list = self.approvers().map_err(str::to_string)?;
        list.verify(
            NAMESPACE,
            &decision_bytes(mailbox, record),
            signature.unwrap_or_default(),
        )
        .map_err(|refusal: Refusal| refusal.to_string())
    }

    /// Why `record` does not count in `mailbox`, if it does not: `None`
    /// when no signature is required or an approver's verifies.
    pub fn problem(&self, mailbox: &Mailbox, record: &ApprovalRecord) -> Option<String> {
        if !self.required(mailbox) {
            return None;
        }
        self.verify(mailbox, record, record.signature.as_deref())
            .err()
    }
}

/// What a person signs for `record` in `mailbox`: the record's message,
/// bytes, decision, words and time, and the repository it is kept for.
pub fn decision_bytes(mailbox: &Mailbox, record: &ApprovalRecord) -> Vec<u8> {
    let repository = mailbox.repo().to_string_lossy();
    let decision = record.decision.to_string();
    Decision::new(
        &repository,
        &record.message_id,
        &record.file,
        record.sha256.as_deref().unwrap_or_default(),
        &decision,
        record.note.as_deref(),
        record.reason.as_deref(),
        &record.at,
    )
    .bytes()
}
