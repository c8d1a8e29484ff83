//! How every command aea puts in a committed harness file finds aea: the
//! hooks (see [`super::json`], [`super::kits`]) and the MCP server (see
//! [`super::mcp`]).

/// How every hook command starts: it finds aea on the harness's PATH, or
/// where `cargo install` puts it, and without one says so in one line and
/// lets the harness go on (exit 0). The files that hold it are committed:
/// they name no path of one machine, so a teammate's clone runs them too.
pub(crate) const HOOK_GUARD: &str = "a=$(command -v aea) || a=\"$HOME/.cargo/bin/aea\"; [ -x \"$a\" ] || { echo 'aea: not found on PATH or in ~/.cargo/bin: mail not checked (install aea)' >&2; exit 0; }; exec \"$a\" ";
