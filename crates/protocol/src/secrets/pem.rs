//! Private keys as PEM writes them: the `-----BEGIN … PRIVATE KEY-----`
//! line however it is cased and spaced, and the base64 body of a private
//! key without that line, known by what it decodes to.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

use super::encoding;
use super::spelling;

/// The kind of a private key in PEM, with its `BEGIN` line or without.
const PRIVATE_KEY: &str = "private key block";

/// The kind of the first private key line in `text`: every `BEGIN` line is
/// looked at, not only the first (a public key or a certificate in front
/// of a private key must not hide it), in any case, with any blanks and
/// line breaks inside (`-----begin private key-----`, `----- BEGIN RSA
/// PRIVATE KEY -----`, a line wrapped in the middle of a word), and with
/// the four dashes of SSH2 keys.
pub(super) fn header(text: &str) -> Option<&'static str> {
    static DASHES: LazyLock<AhoCorasick> =
        LazyLock::new(|| AhoCorasick::new(["--"]).expect("a fixed string always builds"));
    let bytes = text.as_bytes();
    let mut done = 0;
    DASHES.find_iter(text).find_map(|m| {
        let at = m.start();
        if at < done {
            return None;
        }
        done = at + bytes[at..].iter().take_while(|b| **b == b'-').count();
        // Most `--` are options (`--force`): what follows the dashes and
        // blanks must be able to start `BEGIN`.
        let next = bytes[done..].iter().find(|b| !matches!(b, b' ' | b'\t'))?;
        if !matches!(next, b'B' | b'b' | b'-' | b'\n' | b'\r' | b'\\') {
            return None;
        }
        let line = compact(bytes, at);
        let dashes = line.iter().take_while(|b| **b == b'-').count();
        let label = line[dashes..].strip_prefix(b"BEGIN")?;
        let label = &label[..label.windows(2).position(|w| w == b"--")?];
        if label.starts_with(b"PGPPRIVATEKEY") {
            Some("PGP private key block")
        } else if label.windows(10).any(|w| w == b"PRIVATEKEY") {
            Some(PRIVATE_KEY)
        } else {
            None
        }
    })
}

/// The start of the line at `at` without its blanks and line breaks, in
/// upper case: as long as a `BEGIN` line (`-----BEGINENCRYPTEDPRIVATEKEY
/// -----`) with room for oddly placed dashes, and no longer.
fn compact(bytes: &[u8], mut at: usize) -> Vec<u8> {
    const LONGEST: usize = 80;
    let mut out = Vec::with_capacity(LONGEST);
    while out.len() < LONGEST && at < bytes.len() {
        if bytes[at] == b' ' || bytes[at] == b'\t' {
            at += 1;
        } else if let Some(len) = spelling::line_break(&bytes[at..]) {
            at += len;
        } else {
            out.push(bytes[at].to_ascii_uppercase());
            at += 1;
        }
    }
    out
}

/// How much of a block is read: 48 bytes, the shortest private key
/// (Ed25519 in PKCS#8), and enough to tell what the block holds. A shorter
/// run is a prefix quoted in prose (`keys start with MIIEvQIBADAN…`).
const BLOCK_CHARS: usize = 64;

/// [`PRIVATE_KEY`] if `text` holds the base64 body of a private key
/// without its `BEGIN` line: a block that decodes to the DER of a PKCS#1,
/// PKCS#8 (also encrypted), SEC1 or PKCS#12 key, or to an OpenSSH private
/// key (`openssh-key-v1`). DER always starts with `M` in base64, and
/// OpenSSH with `b3Bl`; public keys, certificates and requests decode to
/// other structures and pass.
pub(super) fn body(text: &str) -> Option<&'static str> {
    let bytes = text.as_bytes();
    let starts = |c: char| text.match_indices(c).map(|(at, _)| at);
    let mut chars = Vec::with_capacity(BLOCK_CHARS);
    // What may follow the first character: the second, or a line break.
    let may_follow = |next: Option<&u8>, second: fn(&u8) -> bool| {
        next.is_some_and(|b| second(b) || matches!(b, b'\n' | b'\r' | b'\\' | b' ' | b'\t'))
    };
    starts('M')
        .filter(|&at| may_follow(bytes.get(at + 1), |b| (b'A'..=b'P').contains(b)))
        .chain(starts('b').filter(|&at| may_follow(bytes.get(at + 1), |b| *b == b'3')))
        .filter(|&at| starts_block(bytes, at))
        .any(|at| {
            block_chars(bytes, at, 4, &mut chars);
            let starts_der_or_openssh = match chars.as_slice() {
                // 0x30 and the length byte after it: `M`, then A to P.
                [b'M', b'A'..=b'P', ..] => true,
                four => four == b"b3Bl",
            };
            starts_der_or_openssh && {
                block_chars(bytes, at, BLOCK_CHARS, &mut chars);
                chars.len() == BLOCK_CHARS
                    && encoding::decode(&chars).is_some_and(|d| is_private(&d))
            }
        })
        .then_some(PRIVATE_KEY)
}

/// Whether a base64 block may start at `at`: nothing base64 right before
/// it (`key=MII…` is a start: `=` only ends a block), or a JSON line break
/// (`\n`) in a string.
fn starts_block(bytes: &[u8], at: usize) -> bool {
    match bytes[..at] {
        [] | [.., b'\\', b'n' | b'r'] => true,
        [.., b] => encoding::sextet(b).is_none(),
    }
}

/// The first `want` base64 characters from `at` into `out`, read across
/// line breaks and the blanks around them as PEM (or a paste of it, or a
/// JSON string of it) wraps a block; fewer if the block ends sooner.
fn block_chars(bytes: &[u8], mut at: usize, want: usize, out: &mut Vec<u8>) {
    let blanks = |from: usize| {
        bytes[from..]
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count()
    };
    out.clear();
    while out.len() < want && at < bytes.len() {
        if encoding::sextet(bytes[at]).is_some() {
            out.push(bytes[at]);
            at += 1;
            continue;
        }
        let after_blanks = at + blanks(at);
        match spelling::line_break(&bytes[after_blanks..]) {
            Some(len) => at = after_blanks + len + blanks(after_blanks + len),
            None => break,
        }
    }
}

/// Whether `der` (the first bytes of a block) is a private key.
fn is_private(der: &[u8]) -> bool {
    if der.starts_with(b"openssh-key-v1\0") {
        return true;
    }
    // The outer SEQUENCE, with its length in any DER form.
    let inner = match der {
        [0x30, n, rest @ ..] if *n < 0x80 => rest,
        [0x30, 0x81, _, rest @ ..]
        | [0x30, 0x82, _, _, rest @ ..]
        | [0x30, 0x83, _, _, _, rest @ ..] => rest,
        _ => return false,
    };
    match inner {
        // Version 0, then the modulus (PKCS#1 RSA, DSA) or the algorithm
        // (PKCS#8); version 1, then the key (SEC1 EC) or the algorithm
        // (PKCS#8 v2, RFC 5958); version 3, then the content (PKCS#12).
        [0x02, 0x01, 0x00, 0x02 | 0x30, ..]
        | [0x02, 0x01, 0x01, 0x04 | 0x30, ..]
        | [0x02, 0x01, 0x03, 0x30, ..] => true,
        // An encrypted PKCS#8 key: its algorithm is a password-based
        // scheme of PKCS#5 or PKCS#12. A public key names a key algorithm
        // here instead.
        [0x30, n, 0x06, _, oid @ ..] if *n < 0x80 => is_password_based(oid),
        [0x30, 0x81, _, 0x06, _, oid @ ..] => is_password_based(oid),
        _ => false,
    }
}

/// OIDs under pkcs-5 (1.2.840.113549.1.5) and pkcs-12 PBE
/// (1.2.840.113549.1.12.1).
fn is_password_based(oid: &[u8]) -> bool {
    const PKCS5: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x05];
    const PKCS12_PBE: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x0c, 0x01];
    oid.starts_with(PKCS5) || oid.starts_with(PKCS12_PBE)
}

#[cfg(test)]
mod tests {
    use super::{body, header};

    #[test]
    fn reads_headers_in_any_case_and_spacing() {
        for text in [
            "-----BEGIN PRIVATE KEY-----",
            "-----begin private key-----",
            "----- BEGIN RSA PRIVATE KEY -----",
            "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----",
            "-----BEGIN  EC\tPRIVATE KEY-----",
            "-----BEGIN RSA PRI\nVATE KEY-----",
            "--\n---begin private key-----",
        ] {
            assert_eq!(header(text), Some("private key block"), "{text}");
        }
        assert_eq!(
            header("-----begin pgp private key block-----"),
            Some("PGP private key block")
        );
        for text in [
            "-----BEGIN PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----",
            "---- a horizontal rule ----",
        ] {
            assert_eq!(header(text), None, "{text}");
        }
    }

    #[test]
    fn knows_a_private_key_body_by_its_first_bytes() {
        // An Ed25519 key in PKCS#8 (48 bytes), as `openssl genpkey` writes it.
        let ed25519 = "MC4CAQAwBQYDK2VwBCIEIJ3l0b2mXh7dQz6c8vYkR1sT9aPfWgLqN4oUeHxCjZyB";
        for text in [
            ed25519.to_string(),
            format!("key:\n  {}\n  {}\n", &ed25519[..30], &ed25519[30..]),
            format!("\"{}\\n{}\"", &ed25519[..30], &ed25519[30..]),
            format!("M\n{}", &ed25519[1..]),
        ] {
            assert_eq!(body(&text), Some("private key block"), "{text}");
        }
        // Its public key, a prefix quoted in prose, and prose.
        for text in [
            "MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=",
            "keys start with MC4CAQAwBQYDK2VwBCIEI, then the seed",
            "My Monday Meeting Minutes",
        ] {
            assert_eq!(body(text), None, "{text}");
        }
    }
}
