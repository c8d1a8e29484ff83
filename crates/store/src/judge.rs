//! The receiver's judge: its compiled [`Policy`] plus what the policy needs
//! to know beyond a message — who sent it, as far as the receiver's keys
//! can tell (SPEC §15.2), and what the mailbox holds of earlier approvals.
//! Loaded once per command; it reads the mailbox, so it sits above it,
//! while the policy itself knows only the config and the message.

use std::rc::Rc;

use crate::error::{Error, Result};
use crate::keyring::{KeyRing, Verification};
use crate::mailbox::{Approval, Entry, Mailbox};
use crate::message::Message;
use crate::policy::{Action, Decision, Explanation, Facts, Policy};

/// Where the judge says what went wrong with its inputs (an unreadable
/// config or registry): domain code never prints, the command layer does.
pub type Warn = Rc<dyn Fn(&str)>;

/// The receiver's policy plus what it needs to know beyond a message: which
/// senders are registered. Loaded once per command.
pub struct Judge {
    pub policy: Policy,
    pub agent_id: Option<String>,
    keyring: Rc<KeyRing>,
    warn: Warn,
    warned: std::cell::Cell<bool>,
}

impl Judge {
    /// Loads the policy of `mailbox`. A config that cannot be read or
    /// compiled falls back to the strictest policy, never the loosest; an
    /// unreadable registry makes every sender unknown. Both say so on stderr.
    pub fn load(mailbox: &Mailbox, keyring: Rc<KeyRing>, warn: Warn) -> Self {
        Self::load_checked(mailbox, keyring.clone(), warn.clone()).unwrap_or_else(|e| {
            warn(&format!(
                "{}; every message needs approval until it is fixed",
                crate::error::one_line(&e)
            ));
            Self::with(Policy::strictest(), None, keyring, warn)
        })
    }

    /// Like [`Judge::load`], but a config that does not read or compile is
    /// an error: for the pre-commit gate, which must block on it.
    pub fn load_checked(mailbox: &Mailbox, keyring: Rc<KeyRing>, warn: Warn) -> Result<Self> {
        let path = mailbox.layout().shared(crate::layout::Shared::Config);
        let checked = crate::policy::Checked::compile(mailbox.config()?.clone(), &path)?;
        Ok(Self::from_checked(checked, keyring, warn))
    }

    /// The judge of a config already checked.
    pub fn from_checked(checked: crate::policy::Checked, keyring: Rc<KeyRing>, warn: Warn) -> Self {
        Self::with(checked.policy, checked.config.agent.id, keyring, warn)
    }

    fn with(policy: Policy, agent_id: Option<String>, keyring: Rc<KeyRing>, warn: Warn) -> Self {
        keyring.know_self(agent_id.as_deref());
        Judge {
            policy,
            agent_id,
            keyring,
            warn,
            warned: std::cell::Cell::new(false),
        }
    }

    /// Who sent `message`, as far as the receiver can tell (SPEC §15.2).
    /// The registry is read on the first call; if it cannot be, that is
    /// said once.
    pub fn verify(&self, message: &Message) -> Verification {
        let result = self.keyring.verify(message);
        if !self.warned.replace(true)
            && let Some(problem) = self.keyring.problem()
        {
            (self.warn)(&format!("{problem}; every sender counts as unknown"));
        }
        result
    }

    /// The registered path of `message`'s sender when the message says it
    /// comes from another repository: a known sender's id and key, used
    /// from a folder the registry does not know for it (a kept `aea demo`
    /// repository, a copy of the repository). Said, never silently
    /// accepted as the registered agent.
    /// Where the registry says agent `id` lives on this machine.
    pub fn registered_path(&self, id: &str) -> Option<std::path::PathBuf> {
        self.keyring.registered_path(id)
    }

    /// A verified message whose sender says it also sends unsigned mail
    /// (bash AEA scripts beside aea) while the registry takes that mail as
    /// forged: the person is told, the decision stays theirs. Only of a
    /// sender registered on this machine (by path): the bash scripts
    /// deliver by copying into local repositories, never through a mail
    /// remote, so a peer behind one gets no unsigned mail of theirs, and
    /// accepting it would only let anyone who can push there claim the id.
    pub fn unsigned_too_refused(&self, message: &Message) -> bool {
        let from = &message.from.agent_id;
        message.from.also_unsigned
            && self.keyring.registered_path(from).is_some()
            && self.verify(message) == Verification::Verified
            && !self.keyring.accepts_unsigned(from)
    }

    pub fn sender_path_mismatch(&self, message: &Message) -> Option<std::path::PathBuf> {
        let claimed = std::path::Path::new(message.from.repo_path.as_deref()?);
        if !self.verify(message).known_sender() {
            return None;
        }
        let registered = self.keyring.registered_path(&message.from.agent_id)?;
        let same = claimed == registered
            || matches!(
                (std::fs::canonicalize(claimed), std::fs::canonicalize(&registered)),
                (Ok(a), Ok(b)) if a == b
            );
        (!same).then_some(registered)
    }

    /// Only a sender verified against a known key (or one the registry
    /// accepts unsigned mail from) counts as known: a claimed id is a hint.
    fn facts(&self, message: &Message) -> Facts {
        Facts {
            sender_registered: self.verify(message).known_sender(),
        }
    }

    pub fn decide(&self, message: &Message) -> Decision {
        self.policy.decide(message, self.facts(message))
    }

    pub fn explain(&self, message: &Message) -> Explanation {
        self.policy.explain(message, self.facts(message))
    }

    /// Why `entry` may not be marked processed as done, if it may not
    /// (SPEC §5.4): an invalid file can only be ignored, mail the policy
    /// rejects is never acted on, and gated mail needs a person's approval
    /// first. `decision` is this judge's decision on it.
    pub fn why_not_done(
        &self,
        entry: &Entry,
        decision: Option<&Decision>,
        mailbox: &Mailbox,
    ) -> Option<Error> {
        let name = entry.name.clone();
        let Some(decision) = decision else {
            return Some(Error::NotActionable {
                name,
                reason: "it is not a valid message, so it can only be ignored".into(),
            });
        };
        match decision.action {
            Action::Reject => Some(Error::NotActionable {
                name,
                reason: format!("the policy rejects it (rule {})", decision.rule),
            }),
            Action::RequireApproval => {
                let state = mailbox.approvals().approval(entry, true);
                (state != Approval::Approved).then(|| Error::Gated {
                    name,
                    reason: format!(
                        "rule {} requires approval, which is {}",
                        decision.rule,
                        state.label()
                    ),
                    rejected: state == Approval::Rejected,
                })
            }
            Action::AutoRespond | Action::Acknowledge => None,
        }
    }
}
