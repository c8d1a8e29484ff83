//! Base64 as secrets are written in it (RFC 4648, the standard and the
//! URL-safe alphabet alike): enough to encode a key and to read the first
//! bytes of a block, not a general codec.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The six bits a base64 character stands for, in either alphabet.
pub(super) fn sextet(b: u8) -> Option<u8> {
    match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    }
}

/// Standard base64 of `bytes`, without padding.
pub(super) fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
        }
    }
    out
}

/// The bytes that `chars` (base64 characters, no padding, no spaces)
/// stand for; a trailing partial byte is dropped. `None` if a character is
/// not base64.
pub(super) fn decode(chars: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(chars.len() * 3 / 4);
    let (mut bits, mut held) = (0u32, 0u32);
    for &c in chars {
        bits = bits << 6 | u32::from(sextet(c)?);
        held += 6;
        if held >= 8 {
            held -= 8;
            out.push((bits >> held) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::{decode, encode};

    #[test]
    fn round_trips() {
        assert_eq!(encode(b"openssh-key-v1"), "b3BlbnNzaC1rZXktdjE");
        assert_eq!(encode(b"user:pass"), "dXNlcjpwYXNz");
        assert_eq!(decode(b"dXNlcjpwYXNz").as_deref(), Some(&b"user:pass"[..]));
        assert_eq!(decode(b"-_-_").as_deref(), decode(b"+/+/").as_deref());
        assert_eq!(decode(b"a b"), None);
    }
}
