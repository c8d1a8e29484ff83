//! What a paste or a hostile sender puts into a secret without changing it:
//! characters that render as nothing, and the line breaks of a wrapped
//! line. The secret checks run on the text with these taken out.

use std::borrow::Cow;
use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

use crate::normalize::is_invisible;

/// `text` without the characters that render as nothing: `AIza` with a
/// zero-width space inside is `AIza` to whoever copies it. Borrowed when
/// there are none, which is the common case and costs one pass.
pub(super) fn visible(text: &str) -> Cow<'_, str> {
    // Printable ASCII and its whitespace, in chunks the compiler can
    // vectorise: most text is all of it.
    let plain = |b: &u8| (b' '..0x7f).contains(b) || matches!(b, b'\t' | b'\n' | b'\r');
    let all_plain = text
        .as_bytes()
        .chunks(64)
        .all(|chunk| chunk.iter().fold(true, |all, b| all & plain(b)));
    let found = !all_plain && text.chars().any(is_invisible);
    if found {
        Cow::Owned(text.chars().filter(|c| !is_invisible(*c)).collect())
    } else {
        Cow::Borrowed(text)
    }
}

/// A character a token is made of: base64 (also URL-safe), hex, and the
/// separators of the token formats (`.` of a JWT, `~` of RFC 6750).
pub(super) fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+' | b'/' | b'=' | b'.' | b'~')
}

/// The length of the line breaks at the start of `rest`, if there are
/// any: `\n`, `\r\n`, `\r` and their JSON escapes (`\\n`: a wrapped
/// secret pasted into a JSON string), and the blank lines after them.
pub(super) fn line_break(rest: &[u8]) -> Option<usize> {
    let one = |rest: &[u8]| match rest {
        [b'\r', b'\n', ..] => Some(2),
        [b'\n' | b'\r', ..] => Some(1),
        [b'\\', b'r', b'\\', b'n', ..] => Some(4),
        [b'\\', b'n' | b'r', ..] => Some(2),
        _ => None,
    };
    let mut len = one(rest)?;
    loop {
        let blanks = leading_blanks(&rest[len..]);
        match one(&rest[len + blanks..]) {
            Some(more) => len += blanks + more,
            None => return Some(len),
        }
    }
}

/// The bytes a line break starts with (a search for three bytes is a
/// vectorised scan).
static BREAKS: LazyLock<AhoCorasick> =
    LazyLock::new(|| AhoCorasick::new(["\n", "\r", "\\"]).expect("fixed patterns always build"));

/// A text with the line breaks inside its token runs taken out, and the
/// offsets in it where each one was.
pub(super) struct Unwrapped {
    pub(super) text: String,
    pub(super) joins: Vec<usize>,
}

/// `text` with every line break that cuts a token in two taken out, with
/// the spaces around it (indentation, trailing blanks): a key wrapped at
/// column 64, or at any column, is one token again.
///
/// Only a break between token characters whose run looks like a token
/// (eight characters or more, holding a digit, a base64 sign, or a capital
/// inside either part) is taken out, so that prose (`word` at the end of a
/// line, `Word` at the start of the next) stays as it is. `None` when
/// nothing was taken out.
pub(super) fn unwrap_lines(text: &str) -> Option<Unwrapped> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut joins = Vec::new();
    let mut copied = 0;
    let mut at = 0;
    for found in BREAKS.find_iter(bytes) {
        let brk = found.start();
        if brk < at {
            continue;
        }
        let Some(len) = line_break(&bytes[brk..]) else {
            continue;
        };
        let start = brk - trailing_blanks(&bytes[..brk]);
        let end = brk + len + leading_blanks(&bytes[brk + len..]);
        at = brk + len;
        if start == 0 || end >= bytes.len() || start < copied {
            continue;
        }
        let before = token_run_before(&bytes[..start]);
        let after = token_run_after(&bytes[end..]);
        if before.is_empty() || after.is_empty() || !looks_like_token(before, after) {
            continue;
        }
        out.push_str(&text[copied..start]);
        joins.push(out.len());
        copied = end;
        at = end;
    }
    if joins.is_empty() {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(Unwrapped { text: out, joins })
}

fn trailing_blanks(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .rev()
        .take_while(|b| matches!(b, b' ' | b'\t'))
        .count()
}

fn leading_blanks(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t'))
        .count()
}

/// The token characters that end `bytes` (at most 64: enough to judge).
fn token_run_before(bytes: &[u8]) -> &[u8] {
    let run = bytes
        .iter()
        .rev()
        .take(64)
        .take_while(|b| is_token_char(**b))
        .count();
    &bytes[bytes.len() - run..]
}

/// The token characters that start `bytes` (at most 64).
fn token_run_after(bytes: &[u8]) -> &[u8] {
    let run = bytes
        .iter()
        .take(64)
        .take_while(|b| is_token_char(**b))
        .count();
    &bytes[..run]
}

/// Whether the run `before` + `after` (around a line break) may be a
/// token cut in two rather than two words: long enough, and holding what
/// words rarely do (a capital inside a word: the first letter of either
/// part is a sentence's).
fn looks_like_token(before: &[u8], after: &[u8]) -> bool {
    let tokenish = |b: &u8| b.is_ascii_digit() || matches!(b, b'_' | b'+' | b'/' | b'=');
    before.len() + after.len() >= 8
        && (before.iter().chain(after).any(tokenish)
            || before.iter().skip(1).any(u8::is_ascii_uppercase)
            || after.iter().skip(1).any(u8::is_ascii_uppercase))
}

#[cfg(test)]
mod tests {
    use super::{unwrap_lines, visible};

    #[test]
    fn takes_out_what_renders_as_nothing() {
        assert_eq!(visible("AI\u{200B}za\u{00AD}Sy\u{FEFF}"), "AIzaSy");
        assert_eq!(visible("a\u{202E}b\u{E0041}c\u{0007}d"), "abcd");
        assert_eq!(visible("line\nnext\ttab"), "line\nnext\ttab");
        assert!(matches!(visible("plain"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn joins_a_token_cut_by_a_line_break() {
        let joined = |t: &str| unwrap_lines(t).map(|u| u.text);
        assert_eq!(
            joined("key AIzaSyA12\n    345678 end").as_deref(),
            Some("key AIzaSyA12345678 end")
        );
        assert_eq!(
            joined("\"AIzaSyA12\\n345678\"").as_deref(),
            Some("\"AIzaSyA12345678\"")
        );
        assert_eq!(joined("ab\r\ncdefgh1"), Some("abcdefgh1".into()));
        assert_eq!(joined("abcd\n \n\n  efgh1"), Some("abcdefgh1".into()));
        // Prose keeps its line breaks.
        assert_eq!(joined("configuration\nimplementation"), None);
        assert_eq!(joined("a sentence.\n\nAnother one"), None);
        assert_eq!(joined("a sentence.\nAnother one"), None);
        assert_eq!(joined("x\n"), None);
    }
}
