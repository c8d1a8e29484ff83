//! Generated spellings of the secrets `aea send` refuses: each kind is
//! written out many ways (wrapped at every position, an invisible character
//! between every pair of characters, other case, punctuation around it,
//! inside JSON, inside a context object, in an attached file) and every
//! spelling must be caught; the near misses next to them (placeholders,
//! truncated docs examples, public keys, digests) must not be.
//!
//! `cargo test -p aea-protocol --test secrets_spellings -- --nocapture`
//! prints the counts per kind, and the time a scan of 1 MiB of prose takes.

// A test prints what it measured.
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use aea_protocol::secrets::{self, OWN_KEY, OwnKeys};
use serde_json::{Value, json};

/// What the scanner answers for a message string, a context object and
/// the bytes of an attached file: what `Draft::check` asks.
struct Scan {
    own: OwnKeys,
}

impl Scan {
    fn new() -> Self {
        Scan {
            own: OwnKeys::new([&own_seed()]),
        }
    }

    fn text(&self, text: &str) -> Option<&'static str> {
        self.own.find(text).or_else(|| secrets::find(text))
    }

    fn value(&self, value: &Value) -> Option<&'static str> {
        self.own
            .find_in_value(value)
            .or_else(|| secrets::find_in_value(value))
    }

    fn file(&self, bytes: &[u8]) -> Option<&'static str> {
        self.own
            .find_in_bytes(bytes)
            .or_else(|| secrets::find_in_file(bytes))
    }
}

// ---------------------------------------------------------------------------
// Fixtures: fake but well-formed secrets, from a fixed pseudo-random stream.

/// xorshift64*: deterministic bytes, so a failure names the same spelling
/// on every run.
struct Stream(u64);

impl Stream {
    fn new(seed: u64) -> Self {
        Stream(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| (self.next() >> 32) as u8).collect()
    }

    fn chars(&mut self, n: usize, alphabet: &str) -> String {
        let alphabet = alphabet.as_bytes();
        (0..n)
            .map(|_| {
                let at = usize::try_from(self.next() >> 33).unwrap() % alphabet.len();
                char::from(alphabet[at])
            })
            .collect()
    }
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const URL_SAFE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn base64(bytes: &[u8], url_safe: bool, pad: bool) -> String {
    let alphabet = if url_safe {
        URL_SAFE.as_bytes()
    } else {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    };
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(alphabet[(n >> (18 - 6 * i)) as usize & 63]));
        }
        if pad {
            out.push_str(&"=".repeat(3 - chunk.len()));
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn own_seed() -> [u8; 32] {
    Stream::new(1).bytes(32).try_into().unwrap()
}

fn google_key() -> String {
    format!("AIza{}", Stream::new(2).chars(35, URL_SAFE))
}

fn azure_key() -> String {
    base64(&Stream::new(3).bytes(64), false, true)
}

fn bearer_token() -> String {
    format!(
        "{}.{}",
        Stream::new(4).chars(12, ALNUM),
        Stream::new(5).chars(40, URL_SAFE)
    )
}

fn basic_credentials() -> String {
    base64(b"deploy:Zq7vK2mpL9xRw4", false, true)
}

/// DER of a private key of each shape, `MII…` and the others.
fn private_key_ders() -> Vec<(&'static str, Vec<u8>)> {
    let mut random = Stream::new(6);
    let mut with = |head: &[u8], total: usize| {
        let mut der = head.to_vec();
        der.extend(random.bytes(total - head.len()));
        der
    };
    vec![
        (
            "PKCS#8 RSA",
            with(
                &[
                    0x30, 0x82, 0x04, 0xbd, 0x02, 0x01, 0x00, 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86,
                    0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00, 0x04, 0x82, 0x04, 0xa7,
                ],
                1217,
            ),
        ),
        (
            "PKCS#1 RSA",
            with(
                &[
                    0x30, 0x82, 0x04, 0xa4, 0x02, 0x01, 0x00, 0x02, 0x82, 0x01, 0x01, 0x00,
                ],
                1192,
            ),
        ),
        (
            "SEC1 EC",
            with(&[0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20], 121),
        ),
        (
            "PKCS#8 EC",
            with(
                &[
                    0x30, 0x81, 0x87, 0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48,
                    0xce, 0x3d, 0x02, 0x01,
                ],
                138,
            ),
        ),
        (
            "PKCS#8 Ed25519",
            with(
                &[
                    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04,
                    0x22, 0x04, 0x20,
                ],
                48,
            ),
        ),
        (
            "encrypted PKCS#8",
            with(
                &[
                    0x30, 0x82, 0x05, 0x1c, 0x30, 0x4e, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7,
                    0x0d, 0x01, 0x05, 0x0d,
                ],
                1312,
            ),
        ),
        (
            "OpenSSH",
            with(
                b"openssh-key-v1\0\0\0\0\x04none\0\0\0\x04none\0\0\0\0\0\0\0\x01",
                399,
            ),
        ),
    ]
}

/// DER that is not a private key: a public key, a certificate, a request.
fn public_ders() -> Vec<(&'static str, Vec<u8>)> {
    let mut random = Stream::new(7);
    let mut with = |head: &[u8], total: usize| {
        let mut der = head.to_vec();
        der.extend(random.bytes(total - head.len()));
        der
    };
    vec![
        (
            "RSA public key",
            with(
                &[
                    0x30, 0x82, 0x01, 0x22, 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7,
                    0x0d, 0x01, 0x01, 0x01, 0x05, 0x00, 0x03, 0x82, 0x01, 0x0f, 0x00,
                ],
                294,
            ),
        ),
        (
            "certificate",
            with(
                &[
                    0x30, 0x82, 0x03, 0x5d, 0x30, 0x82, 0x02, 0x45, 0xa0, 0x03, 0x02, 0x01, 0x02,
                ],
                865,
            ),
        ),
        (
            "certificate request",
            with(
                &[
                    0x30, 0x82, 0x02, 0x9a, 0x30, 0x82, 0x01, 0x82, 0x02, 0x01, 0x00, 0x30,
                ],
                670,
            ),
        ),
        (
            "EC public key",
            with(
                &[
                    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
                ],
                91,
            ),
        ),
    ]
}

fn wrap(text: &str, width: usize, newline: &str) -> String {
    text.as_bytes()
        .chunks(width)
        .map(|line| std::str::from_utf8(line).unwrap())
        .collect::<Vec<_>>()
        .join(newline)
}

fn pem_body(der: &[u8]) -> String {
    wrap(&base64(der, false, true), 64, "\n")
}

// ---------------------------------------------------------------------------
// Spellings.

/// Characters that render as nothing.
const INVISIBLE: &[char] = &[
    '\u{200B}',  // zero-width space
    '\u{200C}',  // zero-width non-joiner
    '\u{200D}',  // zero-width joiner
    '\u{2060}',  // word joiner
    '\u{FEFF}',  // byte order mark
    '\u{00AD}',  // soft hyphen
    '\u{200E}',  // left-to-right mark
    '\u{200F}',  // right-to-left mark
    '\u{202A}',  // left-to-right embedding
    '\u{202C}',  // pop directional formatting
    '\u{202E}',  // right-to-left override
    '\u{2066}',  // left-to-right isolate
    '\u{2069}',  // pop directional isolate
    '\u{180E}',  // Mongolian vowel separator
    '\u{034F}',  // combining grapheme joiner
    '\u{E0020}', // tag space
];

/// What may stand right before and after a secret.
const AROUND: &[(&str, &str)] = &[
    ("", ""),
    ("\"", "\""),
    ("'", "'"),
    ("`", "`"),
    ("(", ")"),
    ("[", "]"),
    ("<", ">"),
    ("{", "}"),
    ("key=", ";"),
    ("key: ", ","),
    ("here: ", "."),
    ("see ", "!"),
    ("*", "*"),
    ("|", "|"),
    ("> ", "\n"),
    ("    ", "\n"),
];

/// Line breaks a wrapped secret may carry.
const BREAKS: &[&str] = &["\n", "\r\n", "\n    ", " \n", "\n\n"];

/// Every spelling of `secret` as it would stand at `at` in `template`
/// (which holds `{}` once): wrapped at every position with every kind of
/// line break, glued to the next line of prose, an invisible character at
/// every position, punctuation around it, and `template` itself in other
/// case when `fold_template` (a header name is case-blind; a token is not).
fn spellings(template: &str, secret: &str, fold_template: bool) -> Vec<String> {
    let put = |s: &str| template.replacen("{}", s, 1);
    let mut out = vec![put(secret)];
    let cuts: Vec<usize> = secret
        .char_indices()
        .map(|(i, _)| i)
        .filter(|&i| i > 0)
        .collect();
    for &at in &cuts {
        for brk in BREAKS {
            out.push(put(&format!("{}{brk}{}", &secret[..at], &secret[at..])));
        }
        // Wrapped, and the next line of prose starts right under it.
        out.push(format!(
            "{}\nthanks, that is all",
            put(&format!("{}\n{}", &secret[..at], &secret[at..]))
        ));
        for c in INVISIBLE {
            out.push(put(&format!("{}{c}{}", &secret[..at], &secret[at..])));
        }
    }
    // Wrapped twice, at a third and two thirds.
    let third = secret.len() / 3;
    if secret.is_char_boundary(third) && secret.is_char_boundary(2 * third) {
        out.push(put(&format!(
            "{}\n{}\n{}",
            &secret[..third],
            &secret[third..2 * third],
            &secret[2 * third..]
        )));
    }
    // Every other character invisible-separated.
    out.push(put(&secret
        .chars()
        .map(String::from)
        .collect::<Vec<_>>()
        .join("\u{200B}")));
    for (before, after) in AROUND {
        out.push(format!("{before}{}{after}", put(secret)));
        out.push(format!("text {before}{}{after} more text", put(secret)));
    }
    if fold_template {
        let whole = put(secret);
        let (head, tail) = template.split_once("{}").unwrap();
        for head in [head.to_lowercase(), head.to_uppercase()] {
            out.push(format!("{head}{secret}{tail}"));
        }
        out.push(whole);
    }
    out
}

/// `text` as a JSON document with the text in a string (newlines become
/// `\n`, invisible characters stay raw).
fn in_json(text: &str) -> String {
    json!({"config": {"value": text}}).to_string()
}

/// Spellings of the own key: hex in every case and grouping, base64 in
/// every alphabet, and the key file's own base64.
fn own_key_forms() -> Vec<(&'static str, String)> {
    let seed = own_seed();
    let lower = hex(&seed);
    let upper = lower.to_uppercase();
    let mixed: String = lower
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i % 2 == 0 {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect();
    let pairs: Vec<String> = seed.iter().map(|b| format!("{b:02x}")).collect();
    vec![
        ("hex", lower.clone()),
        ("HEX", upper.clone()),
        ("MiXeD hex", mixed),
        ("0x hex", format!("0x{lower}")),
        ("0X HEX", format!("0X{upper}")),
        ("spaced hex pairs", pairs.join(" ")),
        ("colon hex pairs", pairs.join(":")),
        ("dashed hex pairs", pairs.join("-")),
        (
            "byte list",
            format!(
                "[{}]",
                pairs
                    .iter()
                    .map(|p| format!("0x{p}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        ("escaped bytes", format!("\\x{}", pairs.join("\\x"))),
        ("hex with a newline", format!("{lower}\n")),
        (
            "spaced hex digits",
            lower
                .chars()
                .map(String::from)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        ("base64", base64(&seed, false, true)),
        ("base64 without padding", base64(&seed, false, false)),
        ("base64url", base64(&seed, true, false)),
        (
            "base64 of the key file",
            base64(format!("{lower}\n").as_bytes(), false, true),
        ),
    ]
}

/// Each generated spelling, by kind: what a message string carries.
fn text_cases() -> BTreeMap<String, Vec<String>> {
    let mut cases: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut add = |kind: &str, texts: Vec<String>| {
        let json: Vec<String> = texts.iter().take(200).map(|t| in_json(t)).collect();
        let all = cases.entry(kind.to_string()).or_default();
        all.extend(texts);
        all.extend(json);
    };
    add("Google API key", spellings("key={}", &google_key(), false));
    add("Google API key", spellings("{}", &google_key(), false));
    add(
        "Google API key",
        spellings(
            "https://maps.googleapis.com/maps/api/js?key={}&callback=init",
            &google_key(),
            false,
        ),
    );
    add(
        "Azure storage account key",
        spellings("AccountKey={}", &azure_key(), true),
    );
    add(
        "Azure storage account key",
        spellings(
            "DefaultEndpointsProtocol=https;AccountName=prodlogs;AccountKey={};EndpointSuffix=core.windows.net",
            &azure_key(),
            false,
        ),
    );
    add(
        "bearer token",
        spellings("Authorization: Bearer {}", &bearer_token(), true),
    );
    add(
        "bearer token",
        spellings(
            "curl -H 'Authorization: Bearer {}' https://api.example.com/v1/jobs",
            &bearer_token(),
            false,
        ),
    );
    add(
        "bearer token",
        spellings(
            "{{\"Authorization\": \"Bearer {}\"}}",
            &bearer_token(),
            false,
        ),
    );
    add(
        "HTTP basic credentials",
        spellings("Authorization: Basic {}", &basic_credentials(), true),
    );
    for (name, der) in private_key_ders() {
        let body = pem_body(&der);
        let kind = format!("private key body ({name})");
        let first: String = body.chars().take(80).collect();
        let rest: String = body.chars().skip(80).collect();
        // The spellings of the first 80 characters, the rest as it is.
        let texts = spellings("{}", &first, false)
            .into_iter()
            .map(|t| format!("{t}{rest}"))
            .collect();
        add(&kind, texts);
        let one_line = base64(&der, false, true);
        add(
            &kind,
            vec![
                one_line.clone(),
                wrap(&one_line, 76, "\n"),
                wrap(&one_line, 70, "\r\n"),
                wrap(&one_line, 64, "\n  "),
                format!("private_key: |\n  {}\n", wrap(&one_line, 64, "\n  ")),
                format!("the key:\n\n{body}\n\nthanks"),
                format!("```\n{body}\n```"),
                format!("\"{}\"", wrap(&one_line, 64, "\\n")),
            ],
        );
    }
    for header in [
        "-----begin private key-----",
        "----- BEGIN RSA PRIVATE KEY -----",
        "-----Begin Ec Private Key-----",
        "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----",
        "-----BEGIN  OPENSSH  PRIVATE  KEY-----",
        "-----BEGIN\tPRIVATE KEY-----",
        "----- begin encrypted private key -----",
    ] {
        let body = "MIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8wggE7AgEAAkEA";
        add(
            "private key header",
            spellings(&format!("{{}}\n{body}\n"), header, false),
        );
    }
    for (form, text) in own_key_forms() {
        let kind = format!("own key, {form}");
        add(&kind, spellings("{}", &text, false));
        add(
            &kind,
            spellings("signing key: {} (do not share)", &text, false),
        );
    }
    cases
}

/// Each kind's spellings inside a context object.
fn value_cases() -> BTreeMap<String, Vec<Value>> {
    let mut cases: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let texts = text_cases();
    for (kind, spelled) in &texts {
        let values = cases.entry(kind.clone()).or_default();
        for (i, text) in spelled.iter().enumerate().step_by(7) {
            values.push(match i % 3 {
                0 => json!({"deploy": {"env": [text]}}),
                1 => json!({ text.as_str(): true }),
                _ => json!({"note": "see below", "steps": [{"run": text}]}),
            });
        }
    }
    // The own key cut in two strings of the context.
    let lower = hex(&own_seed());
    for at in (4..60).step_by(4) {
        cases
            .entry("own key, split over two strings".into())
            .or_default()
            .push(json!({"a": &lower[..at], "b": &lower[at..]}));
    }
    cases
}

/// Attached files: the own key and private key blocks, in file bytes.
fn file_cases() -> BTreeMap<String, Vec<Vec<u8>>> {
    let mut cases: BTreeMap<String, Vec<Vec<u8>>> = BTreeMap::new();
    let seed = own_seed();
    for (form, text) in own_key_forms() {
        cases
            .entry(format!("own key, {form}"))
            .or_default()
            .extend([
                text.clone().into_bytes(),
                format!("# notes\n\nSIGNING_KEY={text}\n").into_bytes(),
                format!("{{\"key\": \"{text}\"}}").into_bytes(),
                format!("{}\n", wrap(&text, 20, "\n")).into_bytes(),
            ]);
    }
    let mut raw = b"\x7fELF\x02\x01\x01\0".to_vec();
    raw.extend(Stream::new(8).bytes(100));
    raw.extend(seed);
    raw.extend(Stream::new(9).bytes(100));
    cases
        .entry("own key, raw bytes in a binary file".into())
        .or_default()
        .push(raw);
    for (name, der) in private_key_ders() {
        let body = pem_body(&der);
        cases
            .entry(format!("private key body ({name})"))
            .or_default()
            .extend([
                format!("-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n")
                    .into_bytes(),
                format!("{body}\n").into_bytes(),
                format!(
                    "-----begin private key-----\r\n{}\r\n",
                    wrap(&base64(&der, false, true), 64, "\r\n")
                )
                .into_bytes(),
            ]);
    }
    cases
}

/// Runs every case; prints a table; returns the kinds with misses, each
/// with the spellings that passed.
fn run_all(scan: &Scan) -> (usize, usize, Vec<String>) {
    let mut rows: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut missed = Vec::new();
    let mut note = |kind: &str, caught: bool, shown: String| {
        let row = rows.entry(kind.to_string()).or_default();
        row.1 += 1;
        if caught {
            row.0 += 1;
        } else {
            missed.push(format!("{kind}: {shown}"));
        }
    };
    for (kind, texts) in text_cases() {
        let expect_own = kind.starts_with("own key");
        for text in texts {
            let got = scan.text(&text);
            let caught = if expect_own {
                got == Some(OWN_KEY)
            } else {
                got.is_some()
            };
            note(
                &format!("text: {kind}"),
                caught,
                format!("{text:?} -> {got:?}"),
            );
        }
    }
    for (kind, values) in value_cases() {
        for value in values {
            let got = scan.value(&value);
            let caught = if kind.starts_with("own key") {
                got == Some(OWN_KEY)
            } else {
                got.is_some()
            };
            note(
                &format!("context: {kind}"),
                caught,
                format!("{value} -> {got:?}"),
            );
        }
    }
    for (kind, files) in file_cases() {
        for bytes in files {
            let got = scan.file(&bytes);
            let caught = if kind.starts_with("own key") {
                got == Some(OWN_KEY)
            } else {
                got.is_some()
            };
            note(
                &format!("file: {kind}"),
                caught,
                format!("{:?} -> {got:?}", String::from_utf8_lossy(&bytes)),
            );
        }
    }
    let (mut caught, mut total) = (0, 0);
    println!("{:<60} {:>7} {:>7}", "kind", "caught", "total");
    for (kind, (c, t)) in &rows {
        println!("{kind:<60} {c:>7} {t:>7}");
        caught += c;
        total += t;
    }
    println!("{:<60} {caught:>7} {total:>7}", "all");
    (caught, total, missed)
}

#[test]
fn every_generated_spelling_is_caught() {
    let (caught, total, missed) = run_all(&Scan::new());
    assert!(
        missed.is_empty(),
        "{} of {total} spellings passed ({caught} caught):\n{}",
        missed.len(),
        missed.join("\n")
    );
}

/// What stands for a secret without being one, and what looks like one
/// but is public: each must pass, in a message string, in a context
/// object and (for what an attachment is scanned for) in a file.
#[test]
fn near_misses_are_not_secrets() {
    let scan = Scan::new();
    let seed = own_seed();
    let public = ed25519_dalek::SigningKey::from_bytes(&seed).verifying_key();
    let public_hex = hex(public.as_bytes());
    let digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    let mut texts: Vec<String> = [
        "Google keys start with AIza, e.g. AIzaSy...",
        "key=AIzaSyXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
        "key=AIzaSy-your-api-key-here",
        "AIzaSyA1234567890",
        "AccountKey=<your-account-key>",
        "AccountKey=...;EndpointSuffix=core.windows.net",
        "AccountKey=$AZURE_STORAGE_KEY",
        "DefaultEndpointsProtocol=https;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;",
        "Authorization: Bearer <token>",
        "Authorization: Bearer $TOKEN",
        "Authorization: Bearer ${GITHUB_TOKEN}",
        "Authorization: Bearer xxx",
        "Authorization: Bearer xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "Authorization: Bearer YOUR_ACCESS_TOKEN",
        "Authorization: Bearer your-access-token-here",
        "Authorization: Bearer ...",
        "Authorization: Bearer {token}",
        "headers = {\"Authorization\": f\"Bearer {token}\"}",
        "req.headers['Authorization'] = 'Bearer ' + token",
        "The Authorization header carries a Bearer token; ask the gateway team.",
        "Authorization: Basic <base64>",
        "Authorization: Basic $(echo -n user:pass | base64)",
        "Authorization: Basic dXNlcjpwYXNzd29yZA==",
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
        "-----begin certificate-----",
        "PKCS#8 keys start with MIIEvQIBADANBgkqhkiG9w0BAQEFAASC... in base64",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC is how an RSA key in PKCS#8 starts in base64, so look for it in the logs",
        "OpenSSH private keys begin with b3BlbnNzaC1rZXktdjE once decoded",
        "Merging configuration\nimplementation details into one module",
        "The Mongolian word Mxxxxx and the base64 alphabet ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    ]
    .map(str::to_string)
    .to_vec();
    for (name, der) in public_ders() {
        texts.push(format!("{name}:\n{}\n", pem_body(&der)));
        texts.push(base64(&der, false, true));
    }
    texts.extend([
        format!("sha256 {digest}"),
        format!("digest: sha256:{}", digest.to_uppercase()),
        format!("commit {} and {}", &digest[..40], &digest[24..]),
        format!("my public key is ed25519:{public_hex}"),
        format!(
            "public key, base64: {}",
            base64(public.as_bytes(), false, true)
        ),
        format!("{}\n{}", &public_hex[..32], &public_hex[32..]),
        format!("ed25519:{}", public_hex.to_uppercase()),
    ]);
    let mut flagged = Vec::new();
    for text in &texts {
        let as_text = scan.text(text);
        let as_value = scan.value(&json!({"k": text}));
        let as_file = scan.file(text.as_bytes());
        if as_text.is_some() || as_value.is_some() || as_file.is_some() {
            flagged.push(format!("{text:?}: {as_text:?} {as_value:?} {as_file:?}"));
        }
    }
    assert!(flagged.is_empty(), "flagged:\n{}", flagged.join("\n"));
}

/// 1 MiB of prose with markdown, code, links and digests: no secret in it,
/// so every check runs to the end.
fn prose(size: usize) -> String {
    const WORDS: &[&str] = &[
        "the",
        "review",
        "of",
        "branch",
        "configuration",
        "implementation",
        "we",
        "should",
        "merge",
        "after",
        "tests",
        "pass",
        "Monday",
        "My",
        "Mike",
        "says",
        "module",
        "token",
        "bucket",
        "refills",
        "secret",
        "is",
        "patience",
        "AccountName",
        "Authorization",
        "header",
        "Bearer",
        "scheme",
        "key",
        "rotation",
        "schedule",
        "PEM",
        "base64",
        "MIME",
        "Makefile",
        "README",
        "CHANGELOG",
        "and",
        "a",
        "to",
        "in",
        "for",
        "with",
        "deploy",
        "staging",
        "production",
        "latency",
        "p95",
        "v1.2.3",
        "ok",
        "TODO",
        "FIXME",
        "AIza",
    ];
    let mut random = Stream::new(10);
    let mut out = String::with_capacity(size + 200);
    let mut line = 0usize;
    while out.len() < size {
        let pick = usize::try_from(random.next() >> 33).unwrap();
        match pick % 97 {
            0 => out.push_str(
                "\n```rust\nlet key = env::var(\"API_KEY\")?;\nlet n = items.len() * 2;\n```\n",
            ),
            1 => out.push_str("\nsee https://example.com/docs/secrets?tab=2#rotation and "),
            2 => {
                let _ = write!(out, "commit {} ", hex(&random.bytes(20)));
            }
            3 => {
                let _ = write!(out, "sha256:{} ", hex(&random.bytes(32)));
            }
            4 => out.push_str("\n\n## Notes\n\n- first item\n- second item\n"),
            _ => {
                out.push_str(WORDS[pick % WORDS.len()]);
                if pick % 13 == 0 {
                    out.push(if pick % 3 == 0 { ',' } else { '.' });
                }
                line += WORDS[pick % WORDS.len()].len() + 1;
                if line > 72 {
                    out.push('\n');
                    line = 0;
                } else {
                    out.push(' ');
                }
            }
        }
    }
    out
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

/// The scan of a large body must stay cheap next to signing and writing
/// it: printed with `--nocapture` (a debug build is many times slower).
#[test]
fn scanning_a_mebibyte_of_prose() {
    let text = prose(1 << 20);
    let scan = Scan::new();
    assert_eq!(scan.text(&text), None, "the prose holds no secret");
    let time = |f: &dyn Fn() -> Option<&'static str>| {
        median(
            (0..15)
                .map(|_| {
                    let start = Instant::now();
                    std::hint::black_box(f());
                    start.elapsed()
                })
                .collect(),
        )
    };
    let kinds = time(&|| secrets::find(&text));
    let own = time(&|| scan.own.find(&text));
    let file = time(&|| secrets::find_in_file(text.as_bytes()));
    println!(
        "1 MiB of prose: secrets::find {:.2} ms, OwnKeys::find {:.2} ms, find_in_file {:.2} ms ({} build)",
        kinds.as_secs_f64() * 1e3,
        own.as_secs_f64() * 1e3,
        file.as_secs_f64() * 1e3,
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
}
