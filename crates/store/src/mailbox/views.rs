//! The owners of what a mailbox holds, each a view of the [`Mailbox`].

use super::Mailbox;

/// What the mailbox holds, by owner: each of these borrows the [`Mailbox`]
/// (through `Deref`, for its folders and settings) and answers for one
/// part of it, so that no one type carries every operation.
///
/// - [`Inbox`]: listing the inbox in processing order and looking a
///   message up;
/// - [`Records`]: what the receiver did with a message (records, markers,
///   claims, deferrals, custody, moving mail aside);
/// - [`Approvals`]: a person's decisions on gated mail;
/// - [`Sent`]: the sender's copies and its send and bridge records;
/// - [`Announcements`]: what the hooks already told the agent.
macro_rules! mailbox_view {
    ($(#[$doc:meta])* $name:ident, $accessor:ident) => {
        $(#[$doc])*
        pub struct $name<'a>(&'a Mailbox);

        impl std::ops::Deref for $name<'_> {
            type Target = Mailbox;
            fn deref(&self) -> &Mailbox {
                self.0
            }
        }

        impl Mailbox {
            $(#[$doc])*
            pub fn $accessor(&self) -> $name<'_> {
                $name(self)
            }
        }
    };
}

mailbox_view!(
    /// The inbox: its listing in processing order and every lookup of a message.
    Inbox,
    inbox
);
mailbox_view!(
    /// What the receiver did with its messages: records, markers, claims,
    /// deferrals, custody, mail moved aside.
    Records,
    records
);
mailbox_view!(
    /// A person's decisions on gated mail.
    Approvals,
    approvals
);
mailbox_view!(
    /// The sender's side: its copies of sent mail, send and bridge records.
    Sent,
    sent
);
mailbox_view!(
    /// What the hooks already announced to the agent.
    Announcements,
    announcements
);
