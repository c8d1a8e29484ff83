//! The other file protocols aea bridges to (SPEC §12): OACP and Roo, by
//! name. Only the names and what follows from them alone live here, so
//! that the config, the registry and the store can say which protocol a
//! folder speaks; reading and writing their files is `bridge`'s.

use crate::words::word_enum;

word_enum! {
    /// The file protocols aea can import from and export to.
    pub enum Protocol {
        Oacp = "oacp",
        Roo = "roo",
    }
}

impl Protocol {
    /// The protocol's name for people.
    pub fn label(self) -> &'static str {
        match self {
            Protocol::Oacp => "OACP",
            Protocol::Roo => "Roo",
        }
    }

    /// Roo has one file per recipient, `to-<slug>.md`: another name would
    /// never be read, so a message for a recipient with one waiting is
    /// refused (it stays in our mailbox) instead of written elsewhere.
    pub fn one_file_per_recipient(self) -> bool {
        match self {
            Protocol::Oacp => false,
            Protocol::Roo => true,
        }
    }
}
