//! This user's own aea private signing keys, found however a message
//! spells them: in hex (any case, `0x`, spaces, colons or invisible
//! characters between the digits, wrapped over lines, JSON-escaped), in
//! base64 (either alphabet, padded or not, also the base64 of the key
//! file), or as the raw 32 bytes in an attached file.
//!
//! The keys are handed in by the caller, which reads the keys dir: this
//! module reads no file. What it keeps are the spellings to look for, and
//! it never shows them (its `Debug` counts keys).

use aho_corasick::AhoCorasick;
use serde_json::Value;

use super::encoding;

/// The kind [`OwnKeys::find`] reports.
pub const OWN_KEY: &str = "this user's aea private signing key";

/// The private signing keys of this user, ready to be looked for.
#[derive(Default)]
pub struct OwnKeys {
    count: usize,
    /// Each key in lower-case hex, looked for in the hex digits of a text.
    hex: Vec<Needle>,
    /// Each key, and each key file's text, in base64 at each of the three
    /// alignments a longer base64 text may put it at (30 bytes of it: 240
    /// bits, which nothing else matches), looked for in the base64
    /// characters of a text.
    base64: Vec<Needle>,
    /// The 32 bytes themselves, for a binary file.
    raw: Vec<Needle>,
}

/// One spelling of a key, searched for on its own: a search for one
/// string skips ahead on its rarest bytes, which a search for several
/// strings of random base64 cannot (their bytes are those of any text).
struct Needle(AhoCorasick);

impl Needle {
    fn new(bytes: &[u8]) -> Self {
        Needle(AhoCorasick::new([bytes]).expect("one fixed needle always builds"))
    }

    fn is_in(&self, haystack: &[u8]) -> bool {
        self.0.is_match(haystack)
    }
}

impl std::fmt::Debug for OwnKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnKeys")
            .field("count", &self.count)
            .finish_non_exhaustive()
    }
}

impl OwnKeys {
    /// The keys whose 32-byte seeds are `seeds` (the content of each
    /// `<agent-id>.key`, decoded).
    pub fn new<'a>(seeds: impl IntoIterator<Item = &'a [u8; 32]>) -> Self {
        let mut keys = OwnKeys::default();
        for seed in seeds {
            let hex = hex(seed);
            // The seed, and the key file as `base64 < id.key` shows it.
            for bytes in [&seed[..], hex.as_bytes()] {
                for skip in 0..3 {
                    let aligned = &bytes[skip..];
                    let whole = &aligned[..aligned.len() / 3 * 3];
                    keys.base64
                        .push(Needle::new(encoding::encode(whole).as_bytes()));
                }
            }
            keys.hex.push(Needle::new(hex.as_bytes()));
            keys.raw.push(Needle::new(seed));
            keys.count += 1;
        }
        keys
    }

    /// Whether there is no key to look for.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// [`OWN_KEY`] if `text` holds one of the keys.
    pub fn find(&self, text: &str) -> Option<&'static str> {
        self.find_in_bytes(text.as_bytes())
    }

    /// [`OWN_KEY`] if any key or string of `value` holds one of the keys,
    /// also cut over several strings (`["d43a…", "…9f01"]`).
    pub fn find_in_value(&self, value: &Value) -> Option<&'static str> {
        if self.is_empty() {
            return None;
        }
        // The names apart from the strings: `{"a": "d43a…", "b": "…9f01"}`
        // is one key with `b` between its halves.
        let (mut names, mut strings) = (String::new(), String::new());
        names_and_strings(value, &mut names, &mut strings);
        self.find(&strings).or_else(|| self.find(&names))
    }

    /// [`OWN_KEY`] if `bytes` (an attached file, or text) hold one of the
    /// keys, spelled in any way this module knows.
    pub fn find_in_bytes(&self, bytes: &[u8]) -> Option<&'static str> {
        if self.is_empty() {
            return None;
        }
        let (hex_digits, base64_chars) = skeletons(bytes);
        let found = self.raw.iter().any(|n| n.is_in(bytes))
            || self.hex.iter().any(|n| n.is_in(&hex_digits))
            || self.base64.iter().any(|n| n.is_in(&base64_chars));
        found.then_some(OWN_KEY)
    }
}

/// Every object key of `value` onto `names` and every string onto
/// `strings`, a line each: the names apart, so that `{"a": "d43a…", "b":
/// "…9f01"}` is a key cut in two strings, not one with `b` inside. The
/// secret scan of a draft's context reads them the same way.
pub fn names_and_strings(value: &Value, names: &mut String, strings: &mut String) {
    match value {
        Value::String(s) => {
            strings.push_str(s);
            strings.push('\n');
        }
        Value::Array(items) => items
            .iter()
            .for_each(|v| names_and_strings(v, names, strings)),
        Value::Object(map) => {
            for (name, v) in map {
                names.push_str(name);
                names.push('\n');
                names_and_strings(v, names, strings);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// The hex digits of `bytes` (lower case) and its base64 characters (in
/// the standard alphabet), each with everything else left out: spaces,
/// line breaks, punctuation, invisible characters (not ASCII), JSON
/// escapes (`\n`, `\u200b`), and the `0x` or `\x` in front of hex digits
/// (`[0xd4, 0x3a, …]`). A key is 64 random hex digits or 40-odd random
/// base64 characters, so what the text around it adds cannot make one up.
fn skeletons(bytes: &[u8]) -> (Vec<u8>, Vec<u8>) {
    // Each letter or digit is written at the end of both outputs, and each
    // end moves on only if it belongs there: no branch that depends on the
    // byte, which is what makes a loop over text slow (this one runs once
    // per byte of a message, up to 8 MiB).
    let mut hex = vec![0u8; bytes.len() + 1];
    let mut base64 = vec![0u8; bytes.len() + 1];
    let (mut hex_len, mut base64_len) = (0, 0);
    // An `x` after a `0`: the `0` goes if a hex digit follows. An `x`
    // after a backslash (with a line break or invisible character between
    // them) is an escape, whatever digit is before it.
    let mut after_zero_x = false;
    let mut after_backslash = false;
    let mut at = 0;
    while at < bytes.len() {
        let b = bytes[at];
        let class = CLASS[usize::from(b)];
        at += 1;
        if class & OTHER == 0 {
            let is_hex = usize::from(class & HEX);
            if after_zero_x && is_hex == 1 {
                hex_len -= 1;
                after_zero_x = false;
            }
            // `| 0x20` is lower case for letters, and keeps digits.
            hex[hex_len] = b | 0x20;
            hex_len += is_hex;
            base64[base64_len] = b;
            base64_len += usize::from(class >> 1 & 1);
            after_backslash &= is_hex == 0;
            continue;
        }
        match b {
            b'x' | b'X' => {
                base64[base64_len] = b;
                base64_len += 1;
                after_zero_x = !after_backslash && hex_len > 0 && hex[hex_len - 1] == b'0';
                after_backslash = false;
            }
            b'-' | b'_' => {
                base64[base64_len] = if b == b'-' { b'+' } else { b'/' };
                base64_len += 1;
            }
            _ => match bytes.get(at) {
                Some(b'u')
                    if bytes
                        .get(at + 1..at + 5)
                        .is_some_and(|d| d.iter().all(u8::is_ascii_hexdigit)) =>
                {
                    at += 5;
                }
                Some(b'/') => {
                    base64[base64_len] = b'/';
                    base64_len += 1;
                    at += 1;
                }
                // An escaped backslash (`\\x30` in JSON) is a backslash.
                Some(b'\\') => {
                    after_backslash = true;
                    at += 1;
                }
                // Not `\b` or `\f`: those are hex digits more often than
                // escapes.
                Some(b'n' | b'r' | b't' | b'"' | b'\'' | b'x' | b'X') => at += 1,
                _ => after_backslash = true,
            },
        }
    }
    hex.truncate(hex_len);
    base64.truncate(base64_len);
    (hex, base64)
}

/// A hex digit (also a base64 character).
const HEX: u8 = 1;
/// A base64 character of the standard alphabet.
const BASE64: u8 = 2;
/// Any other byte that means something: `x`, `\\`, the URL-safe `-` and
/// `_`.
const OTHER: u8 = 4;

/// What each byte is to [`skeletons`].
static CLASS: [u8; 256] = {
    let mut class = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        class[b] = if c.is_ascii_hexdigit() {
            HEX | BASE64
        } else if c == b'x' || c == b'X' {
            BASE64 | OTHER
        } else if c.is_ascii_alphanumeric() || c == b'+' || c == b'/' {
            BASE64
        } else if c == b'-' || c == b'_' || c == b'\\' {
            OTHER
        } else {
            0
        };
        b += 1;
    }
    class
};

#[cfg(test)]
mod tests {
    use super::{OWN_KEY, OwnKeys};

    const SEED: [u8; 32] = [
        0xd4, 0x3a, 0x9f, 0x01, 0x77, 0x2b, 0xc8, 0x5e, 0x10, 0xaa, 0x42, 0x6d, 0x93, 0x0f, 0xe1,
        0x58, 0x3c, 0xb7, 0x24, 0x86, 0x5a, 0xf2, 0x19, 0x6e, 0xd0, 0x07, 0x8b, 0x31, 0xc4, 0x9d,
        0x62, 0xfe,
    ];
    const HEX: &str = "d43a9f01772bc85e10aa426d930fe1583cb724865af2196ed0078b31c49d62fe";

    #[test]
    fn finds_the_key_however_it_is_spelled() {
        let keys = OwnKeys::new([&SEED]);
        let spaced: Vec<String> = HEX
            .as_bytes()
            .chunks(2)
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        for text in [
            HEX.to_string(),
            HEX.to_uppercase(),
            format!("key: 0x{HEX}."),
            format!("{}\n{}", &HEX[..17], &HEX[17..]),
            format!("{}\u{200B}{}", &HEX[..5], &HEX[5..]),
            spaced.join(" "),
            spaced.join(":"),
            format!("[0x{}]", spaced.join(", 0x")),
            format!("[0x{}]", spaced.join(", 0\n\u{200B}x")),
            format!("{HEX} x"),
            format!("\\x{}", spaced.join("\\\n\u{200B}x")),
            format!("\\x{}", spaced.join("\\x")),
            format!("\"{}\\n{}\"", &HEX[..40], &HEX[40..]),
            // base64 of the seed, both alphabets, and of the key file.
            "1DqfAXcryF4QqkJtkw/hWDy3JIZa8hlu0AeLMcSdYv4=".to_string(),
            "1DqfAXcryF4QqkJtkw_hWDy3JIZa8hlu0AeLMcSdYv4".to_string(),
            "ZDQzYTlmMDE3NzJiYzg1ZTEwYWE0MjZkOTMwZmUxNTgzY2I3MjQ4NjVhZjIxOTZlZDAwNzhiMzFjNDlkNjJmZQo="
                .to_string(),
        ] {
            assert_eq!(keys.find(&text), Some(OWN_KEY), "{text}");
        }
        let mut binary = b"\x7fELF\0\x01".to_vec();
        binary.extend(SEED);
        assert_eq!(keys.find_in_bytes(&binary), Some(OWN_KEY));
        let split = serde_json::json!({"a": &HEX[..30], "b": [&HEX[30..]]});
        assert_eq!(keys.find_in_value(&split), Some(OWN_KEY));
    }

    #[test]
    fn other_hex_is_not_the_key() {
        let keys = OwnKeys::new([&SEED]);
        for text in [
            &HEX[..63],
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "no key here",
        ] {
            assert_eq!(keys.find(text), None, "{text}");
        }
        assert_eq!(OwnKeys::default().find(HEX), None);
        assert_eq!(format!("{keys:?}"), "OwnKeys { count: 1, .. }");
    }
}
