//! The one place that writes to stdout and stderr. It knows `--json` and
//! `--quiet`, and it is where untrusted text is made safe for a terminal.

use std::cell::RefCell;
use std::fmt::{Display, Write as _};
use std::io::{self, IsTerminal, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

#[derive(Debug, Clone, Copy, Default)]
pub struct Printer {
    json: bool,
    quiet: bool,
}

// Every write below passes through `untrusted` (text) or `json_safe`
// (JSON), whatever the caller already did: a file name, a message id, a
// claim holder or an error quoting a config value can come from another
// agent, and one forgotten call site must not hand the terminal an escape
// sequence or the agent a forged line.
impl Printer {
    pub fn new(json: bool, quiet: bool) -> Self {
        Printer { json, quiet }
    }

    pub fn json(&self) -> bool {
        self.json
    }

    /// One line of human output on stdout; suppressed by `--quiet`. A
    /// newline inside `text` is escaped: one call, one line.
    pub fn line(&self, text: impl Display) {
        if !self.quiet {
            write_out(&format!("{}\n", one_line(&text.to_string())));
        }
    }

    /// A line that sums up what the command found (how many messages
    /// wait): printed even with `--quiet`, which leaves out the rest.
    pub fn summary(&self, text: impl Display) {
        write_out(&format!("{}\n", one_line(&text.to_string())));
    }

    /// Output that is the point of the command (a framed message, hook
    /// text): printed even with `--quiet`. Newlines and tabs are kept;
    /// every other control character is escaped.
    pub fn raw(&self, text: &str) {
        write_out(&untrusted(text, true));
    }

    /// A JSON document on stdout.
    pub fn value(&self, value: &impl Serialize) {
        let text = serde_json::to_string_pretty(value).expect("output always serialises");
        write_out(&format!("{}\n", json_safe(&text)));
    }

    /// A JSON document on one line, for JSON Lines output.
    pub fn value_line(&self, value: &impl Serialize) {
        let text = serde_json::to_string(value).expect("output always serialises");
        write_out(&format!("{}\n", json_safe(&text)));
    }

    /// A JSON document on one line on stderr: a failed command's error
    /// under `--json`, kept apart from the data on stdout.
    pub fn err_value(&self, value: &impl Serialize) {
        let text = serde_json::to_string(value).expect("output always serialises");
        write_err(&format!("{}\n", json_safe(&text)));
    }

    /// A line on stderr, where git shows what its hooks print.
    pub fn err_line(&self, text: impl Display) {
        write_err(&format!("{}\n", one_line(&text.to_string())));
    }

    pub fn warn(&self, text: impl Display) {
        write_err(&format!("warning: {}\n", one_line(&text.to_string())));
    }

    /// Whether stdout is a terminal (a person, not a pipe or a script).
    pub fn stdout_is_terminal(&self) -> bool {
        !capturing() && stdout().is_terminal()
    }
}

/// Set once a write to stdout failed: the rest of the output is dropped and
/// the command finishes normally. Ending the process on the spot instead
/// would skip destructors (temporary folders, claims).
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// Why stdout failed, unless it was a closed pipe (`aea log | head -1`,
/// which is quiet and not an error): a full disk loses output, and the
/// command must not exit 0 then.
static STDOUT_ERROR: Mutex<Option<(io::ErrorKind, String)>> = Mutex::new(None);

/// The write error stdout hit during this command, if any (a closed pipe
/// is not one).
pub fn output_error() -> Option<io::Error> {
    let stored = STDOUT_ERROR.lock().ok()?;
    stored
        .as_ref()
        .map(|(kind, text)| io::Error::new(*kind, text.clone()))
}

// The one module allowed to touch stdout and stderr (clippy.toml).
#[allow(clippy::disallowed_methods)]
fn stdout() -> io::Stdout {
    io::stdout()
}

/// What a command printed while [`capture`] ran it: stdout and stderr.
#[derive(Debug, Default)]
pub struct Captured {
    pub out: String,
    pub err: String,
}

thread_local! {
    /// The buffers of the [`capture`] running on this thread, if any.
    static CAPTURE: RefCell<Option<Captured>> = const { RefCell::new(None) };
}

fn capturing() -> bool {
    CAPTURE.with(|c| c.borrow().is_some())
}

/// Runs `f` with everything this thread's printers write kept in memory
/// instead of written to stdout and stderr, already made safe as it
/// would have been printed: how `aea mcp` runs a command in-process and
/// hands its output to the client. Captures do not nest: an inner one
/// takes the text from the point it starts.
pub fn capture<T>(f: impl FnOnce() -> T) -> (T, Captured) {
    let outer = CAPTURE.with(|c| c.borrow_mut().replace(Captured::default()));
    let value = f();
    let captured = CAPTURE.with(|c| std::mem::replace(&mut *c.borrow_mut(), outer));
    (value, captured.unwrap_or_default())
}

/// Appends to the capture's stdout (`err` false) or stderr buffer; `false`
/// when no capture runs.
fn captured(text: &str, err: bool) -> bool {
    CAPTURE.with(|c| match c.borrow_mut().as_mut() {
        Some(buffers) => {
            if err {
                buffers.err.push_str(text);
            } else {
                buffers.out.push_str(text);
            }
            true
        }
        None => false,
    })
}

/// Writes to stdout; after a write error (a closed pipe) nothing more is
/// written.
fn write_out(text: &str) {
    if captured(text, false) {
        return;
    }
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != io::ErrorKind::BrokenPipe
            && let Ok(mut stored) = STDOUT_ERROR.lock()
        {
            stored.get_or_insert((e.kind(), e.to_string()));
        }
    }
}

/// Writes to stderr; a closed stderr is ignored (there is nowhere to say it).
#[allow(clippy::disallowed_methods)]
fn write_err(text: &str) {
    if captured(text, true) {
        return;
    }
    let _ = io::stderr().lock().write_all(text.as_bytes());
}

/// Characters that are shown escaped wherever aea prints: C0 and C1
/// controls and DEL (they drive terminals: `ESC ]0;…BEL` retitles a window,
/// `U+009B` is a one-byte CSI), bidirectional overrides, isolates and marks
/// (they make text read differently than it is, "Trojan Source"), and the
/// Unicode line and paragraph separators (a new line to many readers).
fn dangerous(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{061C}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// Makes untrusted text safe to show on a terminal: the characters of
/// [`dangerous`] are shown as `\u{..}` escapes so a message can never drive
/// the terminal or reorder what is read. Newlines and tabs are kept only
/// when `multiline`.
pub fn untrusted(text: &str, multiline: bool) -> String {
    escape(text, |c| multiline && (c == '\n' || c == '\t'))
}

/// What `line` and the error renderer print: one line, tabs kept.
fn one_line(text: &str) -> String {
    escape(text, |c| c == '\t')
}

fn escape(text: &str, keep: impl Fn(char) -> bool) -> String {
    if !text.chars().any(|c| dangerous(c) && !keep(c)) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if dangerous(c) && !keep(c) {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    out
}

/// Serialised JSON with the characters serde_json leaves raw (DEL, C1,
/// bidi controls, line separators) written as `\uXXXX` escapes. These
/// characters can only occur inside JSON strings, where the escape means
/// the same character, so the document stays valid and parses back to the
/// same values.
pub(crate) fn json_safe(json: &str) -> String {
    if !json.chars().any(dangerous) {
        return json.to_string();
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if dangerous(c) && !matches!(c, '\n' | '\t' | '\r' | ' ') {
            // All of these are in the Basic Multilingual Plane: one \u each.
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
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

/// `text` quoted for a POSIX shell, when it needs it: for a path or URL
/// in a command line that a person copies.
pub fn shell_quote(text: &str) -> String {
    if text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-".contains(&b))
    {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
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
        assert_eq!(
            untrusted("a\u{9b}31m\u{200f}\u{2028}", true),
            "a\\u{9b}31m\\u{200f}\\u{2028}"
        );
        assert_eq!(one_line("a\tb\nc\rd"), "a\tb\\u{a}c\\u{d}d");
    }

    #[test]
    fn capture_keeps_both_streams_and_what_was_escaped() {
        let printer = Printer::new(true, false);
        let ((), got) = capture(|| {
            printer.line("a\u{1b}b");
            printer.value_line(&"x\u{202e}");
            printer.warn("w");
            assert!(!printer.stdout_is_terminal());
        });
        assert_eq!(got.out, "a\\u{1b}b\n\"x\\u202e\"\n");
        assert_eq!(got.err, "warning: w\n");
        assert!(!capturing());
    }

    #[test]
    fn json_stays_valid_and_round_trips() {
        let hostile = "x\u{1b}]0;T\u{7}\u{9b}2J\u{7f}\u{202e}\u{2066}\u{61c}\u{2029}y\n\"z";
        let value = serde_json::json!({ "s": hostile, "list": [hostile] });
        for text in [
            serde_json::to_string(&value).unwrap(),
            serde_json::to_string_pretty(&value).unwrap(),
        ] {
            let safe = json_safe(&text);
            assert!(
                safe.chars()
                    .all(|c| !dangerous(c) || matches!(c, '\n' | ' ')),
                "{safe}"
            );
            let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
            assert_eq!(back, value);
        }
    }
}
