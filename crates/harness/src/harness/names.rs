//! The harnesses by name: those `aea check --hook` writes for, and those
//! `aea init --agents` installs for. What each gets is in `kits`.

use crate::words::word_enum;

word_enum! {
    /// The agent harnesses `aea check --hook` writes for, each in the
    /// output shape it documents (see [`crate::reminder`]); `plain` is text
    /// for anything else.
    pub enum Harness {
        Claude = "claude",
        Codex = "codex",
        Gemini = "gemini",
        Opencode = "opencode",
        Copilot = "copilot",
        Cursor = "cursor",
        Cline = "cline",
        Plain = "plain",
    }
}

word_enum! {
    /// The harnesses `aea init --agents` installs for (SPEC §16).
    pub enum Agent {
        Claude = "claude",
        Codex = "codex",
        Gemini = "gemini",
        Opencode = "opencode",
        Copilot = "copilot",
        Cursor = "cursor",
        Cline = "cline",
        Aider = "aider",
    }
}
