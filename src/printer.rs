//! The one place that writes to stdout and stderr. It knows `--json` and
//! `--quiet`, and it is where untrusted text is made safe for a terminal.

use std::fmt::Display;
use std::io::{self, Write};

use serde::Serialize;

#[derive(Debug, Clone, Copy, Default)]
pub struct Printer {
    json: bool,
    quiet: bool,
}

impl Printer {
    pub fn new(json: bool, quiet: bool) -> Self {
        Printer { json, quiet }
    }

    pub fn json(&self) -> bool {
        self.json
    }

    /// A line of human output on stdout; suppressed by `--quiet`.
    pub fn line(&self, text: impl Display) {
        if !self.quiet {
            write_out(&format!("{text}\n"));
        }
    }

    /// Output that is the point of the command (a message body, hook JSON):
    /// printed even with `--quiet`.
    pub fn raw(&self, text: &str) {
        write_out(text);
    }

    /// A JSON document on stdout.
    pub fn value(&self, value: &impl Serialize) {
        let mut text = serde_json::to_string_pretty(value).expect("output always serialises");
        text.push('\n');
        write_out(&text);
    }

    /// A JSON document on one line, for JSON Lines output.
    pub fn value_line(&self, value: &impl Serialize) {
        let mut text = serde_json::to_string(value).expect("output always serialises");
        text.push('\n');
        write_out(&text);
    }

    /// A line on stderr, where git shows what its hooks print.
    pub fn err_line(&self, text: impl Display) {
        let _ = writeln!(io::stderr(), "{text}");
    }

    pub fn warn(&self, text: impl Display) {
        let _ = writeln!(io::stderr(), "warning: {text}");
    }
}

/// Writes to stdout; a closed pipe (`aea check | head`) ends output quietly.
fn write_out(text: &str) {
    let mut out = io::stdout().lock();
    if out
        .write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        std::process::exit(0);
    }
}

/// Makes untrusted text safe to show on a terminal: control characters
/// (escape sequences, carriage returns, bells) are shown as `\u{..}` escapes
/// so a message can never drive the terminal. Newlines and tabs are kept
/// only when `multiline`.
pub fn untrusted(text: &str, multiline: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let keep = !c.is_control() || (multiline && (c == '\n' || c == '\t'));
        // Bidirectional overrides can make text read differently than it is.
        let bidi = matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
        if keep && !bidi {
            out.push(c);
        } else {
            out.push_str(&c.escape_unicode().to_string());
        }
    }
    out
}

/// `untrusted` on one line, cut to `max` characters.
pub fn untrusted_short(text: &str, max: usize) -> String {
    let clean = untrusted(text, false);
    if clean.chars().count() <= max {
        clean
    } else {
        let cut: String = clean.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_terminal_control() {
        assert_eq!(untrusted("a\u{1b}[31mred", false), "a\\u{1b}[31mred");
        assert_eq!(untrusted("x\ny", false), "x\\u{a}y");
        assert_eq!(untrusted("x\ny\tz", true), "x\ny\tz");
        assert_eq!(untrusted("\u{202E}abc", true), "\\u{202e}abc");
        assert_eq!(untrusted_short("abcdef", 4), "abc…");
    }
}
