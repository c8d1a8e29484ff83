//! Finding a message already delivered: the sorted file names of the
//! inbox and of processed mail, and the few files that may hold a copy.

use std::path::PathBuf;

use crate::mailbox::Mailbox;
use crate::message;

/// The names of the inbox's files and of processed mail, sorted, listed
/// once per sync that receives mail: what finds a copy of a message
/// delivered by another route, or by a sync whose record of it was lost,
/// without reading every file.
///
/// Processed mail is looked for too: `aea process` moves it out of the
/// inbox into the private store, and a sync that lost its record of
/// applying a message (a journal line cut short or damaged) must find it
/// there, or it delivers processed mail again as new.
pub(super) struct InboxNames {
    inbox: Names,
    /// The processed store and its names, if there is one.
    store: Option<(PathBuf, Names)>,
}

/// The message file names of one folder, sorted.
struct Names {
    names: Vec<String>,
    /// Names that say neither sender nor time (another tool's).
    odd: Vec<String>,
}

impl Names {
    fn new(mut names: Vec<String>) -> Self {
        names.sort_unstable();
        let odd = names
            .iter()
            .filter(|n| message::parse_file_name(n).is_none())
            .cloned()
            .collect();
        Names { names, odd }
    }

    /// The names that start with `prefix`.
    fn starting(&self, prefix: &str) -> &[String] {
        let from = self.names.partition_point(|n| n.as_str() < prefix);
        let len = self.names[from..]
            .iter()
            .take_while(|n| n.starts_with(prefix))
            .count();
        &self.names[from..from + len]
    }

    /// The names that may hold `message`: those named for its sender and
    /// time (aea names a delivered file by the message's own timestamp and
    /// sender, SPEC §2; older tools to the second), and those whose name
    /// says neither.
    fn candidates(&self, message: &message::Message) -> Vec<&String> {
        use chrono::SubsecRound as _;
        let sender = &message.from.agent_id;
        match message.sent_at() {
            Some(at) => {
                let millis = message::file_name(at.trunc_subsecs(3), sender, "");
                let seconds = format!("message-{}-from-{sender}", at.format("%Y%m%dT%H%M%SZ"));
                let millis = millis.trim_end_matches(".json").trim_end_matches('-');
                let named =
                    |n: &&String| message::parse_file_name(n).is_some_and(|p| p.sender == *sender);
                self.starting(millis)
                    .iter()
                    .chain(self.starting(&seconds))
                    .filter(named)
                    // Names aea cannot read say nothing of what they hold.
                    .chain(&self.odd)
                    .collect()
            }
            None => self.names.iter().collect(),
        }
    }
}

impl InboxNames {
    pub(super) fn new(mailbox: &Mailbox) -> Self {
        let inbox = Names::new(mailbox.inbox().message_names().unwrap_or_default());
        let store = mailbox.inbox().processed_store().map(|dir| {
            let names = crate::mailbox::message_names_in(&dir).unwrap_or_default();
            (dir, Names::new(names))
        });
        InboxNames { inbox, store }
    }

    pub(super) fn add(&mut self, name: String) {
        let names = &mut self.inbox.names;
        let at = names.partition_point(|n| *n < name);
        names.insert(at, name);
    }

    /// The file, waiting in the inbox or processed, that already holds
    /// `message`, if one does. Only the files [`Names::candidates`] names
    /// are read: a new message costs a few reads, not one per message
    /// received. A copy another tool named by some other time is not
    /// found, and the message is delivered a second time.
    pub(super) fn holding(
        &self,
        mailbox: &Mailbox,
        message: &message::Message,
        sha256: &str,
    ) -> Option<String> {
        // These very bytes were accepted as mail before (processed and
        // archived since, maybe): the same message, not a replay.
        if let Some(name) = mailbox.inbox().accepted_as(message, sha256) {
            return Some(name);
        }
        let is_it = |entry: &crate::mailbox::Entry| {
            entry
                .valid()
                .is_some_and(|m| m.message_id == message.message_id)
        };
        if let Some(name) = self
            .inbox
            .candidates(message)
            .into_iter()
            .find(|name| is_it(&mailbox.inbox().read(name)))
        {
            return Some(name.clone());
        }
        let (dir, store) = self.store.as_ref()?;
        store
            .candidates(message)
            .into_iter()
            .find(|name| {
                mailbox
                    .inbox()
                    .read_listed(dir, name)
                    .is_some_and(|e| is_it(&e))
            })
            .cloned()
    }
}
