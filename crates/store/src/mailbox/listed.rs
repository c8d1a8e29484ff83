//! What a listing found of the processed markers of the files it looked
//! at, kept on the mailbox for the report made from it.

use crate::words::word_enum;

word_enum! {
    /// Why an unprocessed message has a processed marker anyway
    /// (`Records::stale_marker`). The words are sentences: `check --json`
    /// has always printed them.
    pub enum StaleMarker {
        /// The marker is a symlink, folder or special file; it is ignored.
        NotAFile = "its processed marker is not a regular file; ignored",
        /// The marker was written for other bytes.
        Replaced = "the file was replaced after it was processed; shown again",
    }
}

/// What a listing found of the processed markers of the files it looked
/// at (`Inbox::unprocessed_among`).
#[derive(Debug, Default, Clone)]
pub(super) struct Listed {
    /// Hidden: marked processed by another tool, its marker covering them.
    pub(super) marked: Vec<String>,
    /// Shown, each with what its marker says against it, if anything.
    pub(super) stale: std::collections::HashMap<String, Option<StaleMarker>>,
    /// Every file was looked at (none over the read cap).
    pub(super) complete: bool,
}
