//! Recognises text that looks like it carries a secret (SPEC §4), so that
//! `aea send` refuses to copy credentials into another repository. The
//! patterns are the common high-confidence ones; this is a seat belt, not a
//! scanner: it catches the credential pasted by mistake, and the usual ways
//! a paste or a sender hides one, not a secret spelled out in words.
//!
//! Detected: private keys (every PEM `BEGIN` line, in any case and spacing,
//! and a PEM body without its `BEGIN` line, known by the DER it decodes
//! to), PGP private key blocks, PuTTY private keys, JSON web tokens,
//! passwords in URLs (`postgres://user:pass@host`), `SECRET_KEY=…` /
//! `*_SECRET=` / `*_PASSWORD=` assignments with a real-looking value,
//! `Authorization: Bearer …` / `Basic …` headers, AWS access key ids and
//! secret access keys, Azure storage account and shared access keys,
//! GitHub, GitLab, Slack (tokens and webhooks), npm, Google, Stripe and
//! `sk-` API keys. Placeholders (`changeme`, `<password>`, `${VAR}`, `***`,
//! empty values) are not secrets.
//!
//! Every check runs on the text without its invisible characters (a
//! zero-width space inside a key does not hide it), and the token formats
//! also on the text with the line breaks inside a token taken out (a key
//! wrapped over two lines is still one key).
//!
//! This user's own aea private signing keys are found by [`OwnKeys`], which
//! the caller fills from the keys dir.

mod encoding;
mod own_key;
mod pem;
mod spelling;

use std::ops::RangeInclusive;
use std::sync::LazyLock;

use aho_corasick::AhoCorasick;
use serde_json::Value;

pub use own_key::{OWN_KEY, OwnKeys, names_and_strings};

/// The kind of the first secret-looking thing in `text`, if any.
pub fn find(text: &str) -> Option<&'static str> {
    let text = spelling::visible(text);
    find_spelled(&text).or_else(|| find_wrapped(&text))
}

/// The first secret in any key or string of `value`.
pub fn find_in_value(value: &Value) -> Option<&'static str> {
    match value {
        Value::String(s) => find(s),
        Value::Array(items) => items.iter().find_map(find_in_value),
        Value::Object(map) => map
            .iter()
            .find_map(|(k, v)| find(k).or_else(|| find_in_value(v))),
        Value::Null | Value::Bool(_) | Value::Number(_) => None,
    }
}

/// The kind of the first private key in the bytes of an attached file: a
/// PEM block, with or without its `BEGIN` line. The other kinds are looked
/// for in what a message says, not in the files it carries, where test
/// fixtures and examples would be taken for secrets.
pub fn find_in_file(bytes: &[u8]) -> Option<&'static str> {
    let text = String::from_utf8_lossy(bytes);
    let text = spelling::visible(&text);
    pem::header(&text).or_else(|| pem::body(&text))
}

/// [`find`] on text as it is spelled.
fn find_spelled(text: &str) -> Option<&'static str> {
    pem::header(text)
        .or_else(|| pem::body(text))
        .or_else(|| putty_key(text))
        .or_else(|| jwt(text))
        .or_else(|| url_password(text))
        .or_else(|| slack_webhook(text))
        .or_else(|| tokens(text))
        .or_else(|| named_value(text))
        .or_else(|| assignment(text))
}

/// [`find`]'s token formats (tokens, JWTs, webhooks, named keys and
/// credentials) on each token of `text` that a line break cut, with the
/// break taken out. A PEM body is read across line breaks anyway; the
/// other kinds (URLs, assignments) are not joined, since prose at the end
/// of one line and the start of the next would read as their values.
fn find_wrapped(text: &str) -> Option<&'static str> {
    // The shortest token worth joining for (an AWS key id is 20).
    const SHORTEST: usize = 16;
    // How far before its token a name may stand (`"Authorization": "Bearer `).
    const NAME_ROOM: usize = 40;
    let unwrapped = spelling::unwrap_lines(text)?;
    let joined = unwrapped.text.as_str();
    let bytes = joined.as_bytes();
    let mut done = 0;
    for &join in &unwrapped.joins {
        if join < done {
            continue;
        }
        let is_token = |b: &&u8| spelling::is_token_char(**b);
        let start = join - bytes[..join].iter().rev().take_while(is_token).count();
        let end = join + bytes[join..].iter().take_while(is_token).count();
        done = end;
        if end - start < SHORTEST {
            continue;
        }
        let span = &joined[start..end];
        let cuts: Vec<usize> = unwrapped
            .joins
            .iter()
            .filter(|&&j| j > start && j < end)
            .map(|&j| j - start)
            .collect();
        let mut from = start.saturating_sub(NAME_ROOM);
        while !joined.is_char_boundary(from) {
            from += 1;
        }
        let line_start = joined[..start].rfind('\n').map_or(0, |at| at + 1);
        let window = &joined[from.max(line_start)..end];
        let named = || {
            let lower = window.to_ascii_lowercase();
            if lower.contains("key") || lower.contains("authorization") {
                named_value(window)
            } else {
                None
            }
        };
        if let Some(kind) = cut_parts(span, &cuts, is_token_byte, classify)
            .or_else(|| {
                let is_jwt_byte = |b: u8| is_token_byte(b) || b == b'.';
                cut_parts(span, &cuts, is_jwt_byte, |part| {
                    is_jwt(part).then_some("JSON web token")
                })
            })
            .or_else(|| slack_webhook(span))
            .or_else(named)
        {
            return Some(kind);
        }
    }
    None
}

/// `check` on each run of `is_part` bytes of `span` that holds a cut, and
/// on each piece of it from a cut to a later cut or its end, and from its
/// start to a cut: joining glues the line before and the line after onto a
/// wrapped key (`here it is` / `AIza…` / `…xyz` / `thanks`), and a format
/// of fixed length must be seen without them.
fn cut_parts(
    span: &str,
    cuts: &[usize],
    is_part: fn(u8) -> bool,
    check: fn(&str) -> Option<&'static str>,
) -> Option<&'static str> {
    // No token is longer; a longer run is a blob, not a token.
    const LONGEST: usize = 2048;
    let bytes = span.as_bytes();
    let mut done = 0;
    for &cut in cuts {
        if cut < done {
            continue;
        }
        let start = cut
            - bytes[..cut]
                .iter()
                .rev()
                .take_while(|b| is_part(**b))
                .count();
        let end = cut + bytes[cut..].iter().take_while(|b| is_part(**b)).count();
        done = end;
        let mut bounds = vec![start];
        bounds.extend(cuts.iter().copied().filter(|&c| c > start && c < end));
        bounds.push(end);
        for (i, &from) in bounds.iter().enumerate() {
            // Only a piece that starts a token is worth its ends: the
            // prefix of a format, or the header of a JWT.
            let piece = &span[from..];
            if !FORMATS.iter().any(|f| piece.starts_with(f.prefix)) && !piece.starts_with("eyJ") {
                continue;
            }
            for &to in &bounds[i + 1..] {
                if to - from > LONGEST {
                    break;
                }
                if let Some(kind) = check(&span[from..to]) {
                    return Some(kind);
                }
            }
        }
    }
    None
}

/// Every token of `text` (a run of letters, digits, `_` and `-`) that
/// starts with a known prefix, by its shape.
fn tokens(text: &str) -> Option<&'static str> {
    let bytes = text.as_bytes();
    PREFIXES.iter().find_map(|prefix| {
        prefix.find_iter(text).find_map(|m| {
            let at = m.start();
            if at > 0 && is_token_byte(bytes[at - 1]) {
                return None;
            }
            let len = bytes[at..]
                .iter()
                .take_while(|b| is_token_byte(**b))
                .count();
            classify(&text[at..at + len])
        })
    })
}

/// A search for `needle`. Searching a text of up to 8 MiB for a fixed
/// string, `str::match_indices` compares byte by byte; this skips ahead
/// on the needle's rarest bytes (vectorised).
fn literal(needle: &str) -> AhoCorasick {
    AhoCorasick::new([needle]).expect("a fixed string always builds")
}

/// `PuTTY-User-Key-File-2: ssh-rsa`, the first line of a `.ppk` file.
fn putty_key(text: &str) -> Option<&'static str> {
    static MARKER: LazyLock<AhoCorasick> = LazyLock::new(|| literal("PuTTY-User-Key-File-"));
    MARKER
        .find_iter(text)
        .any(|m| {
            let mut rest = text[m.end()..].chars();
            rest.next().is_some_and(|c| c.is_ascii_digit()) && rest.next() == Some(':')
        })
        .then_some("PuTTY private key")
}

/// A name whose value is a secret of a known kind.
#[derive(Clone, Copy)]
enum Name {
    AwsSecret,
    AzureAccountKey,
    AzureSharedAccessKey,
    Authorization,
}

/// The names, in lower case, each with a search of its own (see
/// [`PREFIXES`]).
static NAMES: LazyLock<Vec<(AhoCorasick, Name)>> = LazyLock::new(|| {
    [
        ("secret_access_key", Name::AwsSecret),
        ("secretaccesskey", Name::AwsSecret),
        ("accountkey", Name::AzureAccountKey),
        ("sharedaccesskey", Name::AzureSharedAccessKey),
        ("authorization", Name::Authorization),
    ]
    .into_iter()
    .map(|(name, kind)| (literal(name), kind))
    .collect()
});

/// The first value of a known kind after a name of [`NAMES`], in any
/// case: an AWS secret access key, an Azure account or shared access key,
/// or the credentials of an `Authorization` header.
fn named_value(text: &str) -> Option<&'static str> {
    // Searched in a lower-case copy (same offsets: only ASCII changes),
    // faster than a case-blind search.
    let lower = text.to_ascii_lowercase();
    NAMES.iter().find_map(|(search, name)| {
        search.find_iter(&lower).find_map(|m| {
            let rest = &text[m.end()..];
            match name {
                Name::AwsSecret => {
                    let value = base64_run(value_after(rest));
                    (value.len() >= 40 && !is_placeholder(value)).then_some("AWS secret access key")
                }
                Name::AzureAccountKey => azure_key(rest, 86).then_some("Azure storage account key"),
                Name::AzureSharedAccessKey => {
                    azure_key(rest, 43).then_some("Azure shared access key")
                }
                Name::Authorization => authorization(rest),
            }
        })
    })
}

/// What follows a name and its `=`, `:` or quotes.
fn value_after(rest: &str) -> &str {
    rest.trim_start_matches([' ', '\t', '"', '\'', '\\', ':', '=', '>'])
}

/// The standard base64 characters `text` starts with.
fn base64_run(text: &str) -> &str {
    let len = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '+' || c == '/'))
        .unwrap_or(text.len());
    &text[..len]
}

/// The key Azure's storage emulator (Azurite) uses for everyone, printed
/// in its documentation: a connection string to a local emulator is no
/// secret.
const AZURE_EMULATOR_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw";

/// An Azure key after `AccountKey` / `SharedAccessKey`: `min` base64
/// characters or more (a storage account key is 64 bytes, 86 characters
/// and `==`; a shared access key 32 bytes, 43 and `=`).
fn azure_key(rest: &str, min: usize) -> bool {
    let value = base64_run(value_after(rest));
    value.len() >= min && !is_placeholder(value) && !value.starts_with(AZURE_EMULATOR_KEY)
}

/// The credentials of an `Authorization` header (`Authorization: Bearer
/// …`, `"Authorization": "Basic …"`, `authorization: token …`) when they
/// look real: a token that is not a placeholder (`<token>`, `$TOKEN`,
/// `{token}`, `xxx`, `YOUR_TOKEN`), or base64 of `user:password`.
fn authorization(rest: &str) -> Option<&'static str> {
    let rest = rest.trim_start_matches([
        ' ', '\t', '"', '\'', '\\', ':', '=', ',', '(', ')', '[', ']',
    ]);
    let scheme_len = rest
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(rest.len());
    let (scheme, after) = rest.split_at(scheme_len);
    let credentials = after.trim_start();
    if credentials.len() == after.len() {
        return None;
    }
    // RFC 7235's token68, then its padding.
    let len = credentials
        .find(|c: char| !(c.is_ascii_alphanumeric() || "-._~+/".contains(c)))
        .unwrap_or(credentials.len());
    let value = &credentials[..len];
    match scheme.to_ascii_lowercase().as_str() {
        "bearer" | "token" | "bot" => is_real_token(value).then_some("bearer token"),
        "basic" => is_basic_credentials(value).then_some("HTTP basic credentials"),
        _ => None,
    }
}

/// A token that is no placeholder: 16 characters or more, several
/// different ones, with a digit and either both cases or no word in it, as
/// generated tokens are (`my-secret-access-token`, `Session.Token.Value`
/// and `config.base64` are names).
fn is_real_token(value: &str) -> bool {
    let has = |f: fn(&u8) -> bool| value.as_bytes().iter().any(f);
    let longest_word = value
        .split(|c: char| !c.is_ascii_alphabetic())
        .map(str::len)
        .max()
        .unwrap_or(0);
    value.len() >= 16
        && !is_placeholder(value)
        && distinct(value) >= 8
        && has(u8::is_ascii_digit)
        && ((has(u8::is_ascii_uppercase) && has(u8::is_ascii_lowercase)) || longest_word <= 8)
}

/// base64 of `user:password` with a password that is not a placeholder.
fn is_basic_credentials(value: &str) -> bool {
    let Some(decoded) = encoding::decode(base64_run(value).as_bytes()) else {
        return false;
    };
    // A line break may have glued more onto the value: what decodes to
    // text first is what counts.
    let text_len = decoded
        .iter()
        .take_while(|b| b.is_ascii_graphic() || **b == b' ')
        .count();
    let text = String::from_utf8_lossy(&decoded[..text_len]);
    text.split_once(':').is_some_and(|(user, password)| {
        !user.is_empty() && !password.is_empty() && !is_placeholder(password)
    })
}

/// How many different characters `value` has.
fn distinct(value: &str) -> usize {
    let mut seen = [false; 128];
    value
        .bytes()
        .filter(|b| b.is_ascii() && !std::mem::replace(&mut seen[usize::from(*b)], true))
        .count()
}

/// `scheme://user:password@host` with a password that is not a placeholder.
fn url_password(text: &str) -> Option<&'static str> {
    static SEPARATOR: LazyLock<AhoCorasick> = LazyLock::new(|| literal("://"));
    SEPARATOR
        .find_iter(text)
        .any(|m| {
            let at = m.start();
            let scheme = text[..at]
                .rsplit(|c: char| !(c.is_ascii_alphanumeric() || "+.-".contains(c)))
                .next()
                .unwrap_or("");
            if !scheme.starts_with(|c: char| c.is_ascii_alphabetic()) {
                return false;
            }
            let authority = text[at + 3..]
                .split(|c: char| c.is_whitespace() || "/?#\"'`".contains(c))
                .next()
                .unwrap_or("");
            let Some((userinfo, host)) = authority.rsplit_once('@') else {
                return false;
            };
            let Some((_, password)) = userinfo.split_once(':') else {
                return false;
            };
            !host.is_empty() && !is_placeholder(password)
        })
        .then_some("password in URL")
}

/// `https://hooks.slack.com/services/T…/B…/…`: anyone holding it can post.
fn slack_webhook(text: &str) -> Option<&'static str> {
    static HOST: LazyLock<AhoCorasick> = LazyLock::new(|| literal("hooks.slack.com/"));
    HOST.find_iter(text)
        .any(|m| {
            let rest = &text[m.end()..];
            let Some(path) = rest
                .strip_prefix("services/")
                .or_else(|| rest.strip_prefix("workflows/"))
            else {
                return false;
            };
            path.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '/' || *c == '_')
                .count()
                >= 20
        })
        .then_some("Slack webhook")
}

/// Three base64url parts joined by dots, the first a JSON header (`eyJ`).
/// Only the tokens around an `eyJ` are looked at.
fn jwt(text: &str) -> Option<&'static str> {
    static HEADER: LazyLock<AhoCorasick> = LazyLock::new(|| literal("eyJ"));
    let bytes = text.as_bytes();
    let is_part = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.');
    let mut done = 0;
    HEADER
        .find_iter(text)
        .any(|m| {
            let at = m.start();
            if at < done {
                return false;
            }
            let start = at - bytes[..at].iter().rev().take_while(|b| is_part(b)).count();
            let end = at + bytes[at..].iter().take_while(|b| is_part(b)).count();
            done = end;
            is_jwt(&text[start..end])
        })
        .then_some("JSON web token")
}

fn is_jwt(token: &str) -> bool {
    let b64url = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    header.starts_with("eyJ")
        && header.len() >= 10
        && payload.len() >= 10
        && signature.len() >= 16
        && [header, payload, signature].iter().all(|p| b64url(p))
}

/// Names whose value is a secret: `SECRET_KEY`, `DJANGO_SECRET`,
/// `db_password`, `STRIPE_API_KEY`, …
const SECRET_NAMES: &[&str] = &[
    "secret",
    "secret_key",
    "secretkey",
    "secret_access_key",
    "password",
    "passwd",
    "api_key",
    "apikey",
    "private_key",
    "auth_token",
    "access_token",
];

/// `NAME=value`, `NAME: value`, `"name": "value"` with a secret name and a
/// value that is not empty, a placeholder or code (`os.environ[...]`).
fn assignment(text: &str) -> Option<&'static str> {
    // Two searches for one byte each are vectorised; one for either is not.
    text.match_indices('=')
        .chain(text.match_indices(':'))
        .any(|(at, _)| {
            let name_end = text[..at].trim_end_matches([' ', '\t', '"', '\'']);
            let name = name_end
                .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .next()
                .unwrap_or("");
            if !SECRET_NAMES.iter().any(|s| ends_with_name(name, s)) {
                return false;
            }
            let after = text[at + 1..].trim_start_matches([' ', '\t', '"', '\'']);
            let len = after
                .find(|c: char| c.is_whitespace() || "\"'`,;()[]{}<>".contains(c))
                .unwrap_or(after.len());
            let value = &after[..len];
            let code = after[len..].starts_with(['(', '[']);
            // A URL is a link to docs, or caught by `url_password`.
            value.len() >= 8 && !code && !value.contains("://") && !is_placeholder(value)
        })
        .then_some("secret in an assignment")
}

/// Whether `name` ends with `secret` (lower case, `_` for a word break),
/// in any case and with `-` or `_` between words.
fn ends_with_name(name: &str, secret: &str) -> bool {
    name.len() >= secret.len()
        && name.as_bytes()[name.len() - secret.len()..]
            .iter()
            .zip(secret.as_bytes())
            .all(|(n, s)| n.to_ascii_lowercase() == *s || (*n == b'-' && *s == b'_'))
}

/// Values that stand for a secret without being one.
fn is_placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let filler = |c: char| matches!(c, '*' | 'x' | '.' | '-' | '_' | '#' | '?');
    lower.is_empty()
        || lower.starts_with(['<', '$', '{', '%', '['])
        || lower.chars().all(filler)
        || lower.starts_with("your")
        || lower.starts_with("change")
        || lower.starts_with("example")
        || lower.starts_with("placeholder")
        || lower.starts_with("redacted")
        || lower.starts_with("dummy")
        || lower.starts_with("os.environ")
        || lower.starts_with("process.env")
        || lower.starts_with("env.")
        || matches!(
            lower.as_str(),
            "password" | "passwd" | "secret" | "token" | "none" | "null" | "true" | "false"
        )
        || lower
            .chars()
            .all(|c| c == lower.chars().next().unwrap_or('x'))
}

/// A token known by its prefix, and what follows the prefix in it.
struct Format {
    prefix: &'static str,
    kind: &'static str,
    /// How many characters follow the prefix.
    len: RangeInclusive<usize>,
    /// What each of them is.
    chars: fn(u8) -> bool,
    /// What else the rest must be.
    rest: fn(&str) -> bool,
}

const FORMATS: &[Format] = {
    const fn format(
        prefix: &'static str,
        kind: &'static str,
        len: RangeInclusive<usize>,
    ) -> Format {
        Format {
            prefix,
            kind,
            len,
            chars: is_token_byte,
            rest: |_| true,
        }
    }
    const ANY: usize = usize::MAX;
    const fn upper_alnum(b: u8) -> bool {
        b.is_ascii_uppercase() || b.is_ascii_digit()
    }
    const fn alnum(b: u8) -> bool {
        b.is_ascii_alphanumeric()
    }
    &[
        Format {
            chars: upper_alnum,
            ..format("AKIA", "AWS access key id", 16..=16)
        },
        Format {
            chars: upper_alnum,
            ..format("ASIA", "AWS access key id", 16..=16)
        },
        Format {
            chars: alnum,
            ..format("ghp_", "GitHub token", 36..=ANY)
        },
        Format {
            chars: alnum,
            ..format("gho_", "GitHub token", 36..=ANY)
        },
        Format {
            chars: alnum,
            ..format("ghu_", "GitHub token", 36..=ANY)
        },
        Format {
            chars: alnum,
            ..format("ghs_", "GitHub token", 36..=ANY)
        },
        Format {
            chars: alnum,
            ..format("ghr_", "GitHub token", 36..=ANY)
        },
        format("github_pat_", "GitHub token", 40..=ANY),
        format("glpat-", "GitLab token", 20..=ANY),
        format("xoxb-", "Slack token", 10..=ANY),
        format("xoxp-", "Slack token", 10..=ANY),
        format("xoxa-", "Slack token", 10..=ANY),
        format("xoxr-", "Slack token", 10..=ANY),
        format("xoxs-", "Slack token", 10..=ANY),
        format("xapp-", "Slack token", 10..=ANY),
        Format {
            chars: alnum,
            ..format("npm_", "npm token", 36..=ANY)
        },
        // A docs example (`AIzaSyXXXX…`) repeats a few characters.
        Format {
            rest: |rest| distinct(rest) >= 10,
            ..format("AIza", "Google API key", 35..=35)
        },
        Format {
            rest: |rest| rest.bytes().any(|b| b.is_ascii_digit()),
            ..format("sk-", "API secret key", 32..=ANY)
        },
        format("sk_live_", "Stripe key", 20..=ANY),
        format("rk_live_", "Stripe key", 20..=ANY),
    ]
};

/// What a token is made of: letters, digits, `_` and `-`.
const fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// A search for each prefix of [`FORMATS`], to find the tokens worth a
/// look. One search per string: a search for one string skips ahead on
/// its rarest bytes, and twenty of them take a fifth of the time of one
/// search for all twenty strings.
static PREFIXES: LazyLock<Vec<AhoCorasick>> =
    LazyLock::new(|| FORMATS.iter().map(|f| literal(f.prefix)).collect());

/// The kind of `token` (a whole run of [`is_token_byte`]), if its prefix
/// and shape are those of a known format.
fn classify(token: &str) -> Option<&'static str> {
    FORMATS
        .iter()
        .find(|f| {
            token.strip_prefix(f.prefix).is_some_and(|rest| {
                f.len.contains(&rest.len()) && rest.bytes().all(f.chars) && (f.rest)(rest)
            })
        })
        .map(|f| f.kind)
}

#[cfg(test)]
mod tests {
    use super::{find, find_in_value};

    #[test]
    fn finds_common_secrets() {
        let cases = [
            (
                "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nabc",
                "private key block",
            ),
            ("aws AKIAIOSFODNN7EXAMPLE here", "AWS access key id"),
            (
                "token=ghp_abcdefghijklmnopqrstuvwxyz0123456789",
                "GitHub token",
            ),
            ("xoxb-123456789012-abcdef", "Slack token"),
            (
                "use sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345",
                "API secret key",
            ),
            ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "Google API key"),
            (
                "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n-----BEGIN EC PRIVATE KEY-----\nMHcC",
                "private key block",
            ),
            (
                "DATABASE_URL=postgres://app:s3cr3t-pw@db:5432/app",
                "password in URL",
            ),
            ("SECRET_KEY=9f8a7c6b5d4e3f2a1b0c", "secret in an assignment"),
        ];
        for (text, kind) in cases {
            assert_eq!(find(text), Some(kind), "{text}");
        }
    }

    #[test]
    fn ignores_ordinary_text() {
        for text in [
            "please review the PR",
            "the sk- prefix is used by some vendors",
            "-----BEGIN CERTIFICATE-----",
            "AKIA is the prefix of AWS keys",
            "task-1234 and ghp_ prefix",
            "log in with user and password@ the usual place",
            "SECRET_KEY=",
            "SECRET_KEY=changeme",
            "SECRET_KEY=<your key>",
            "SECRET_KEY=${SECRET_KEY}",
            "postgres://user:<password>@localhost/db",
            "postgres://${USER}:${PASSWORD}@localhost/db",
            "https://example.com/a:b@c",
            "password: see the vault",
            "SECRET_KEY = os.environ['SECRET_KEY']",
        ] {
            assert_eq!(find(text), None, "{text}");
        }
    }

    #[test]
    fn finds_keys_and_credentials_by_their_names() {
        let azure = "BwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAhIiMkJSYnKCkqKywtLi8wMTIzNDU2Nzg5Ojs8PT4/QEFCQ0RFRg==";
        let cases = [
            (
                format!("AccountName=logs;AccountKey={azure};EndpointSuffix=core.windows.net"),
                "Azure storage account key",
            ),
            (
                "curl -H 'authorization: bearer 07cUa9VKfIZ6VdeXDRKltBMQ' x".into(),
                "bearer token",
            ),
            (
                r#"{"Authorization": "Basic ZGVwbG95OlpxN3ZLMm1wTDl4Unc0"}"#.into(),
                "HTTP basic credentials",
            ),
        ];
        for (text, kind) in cases {
            assert_eq!(find(&text), Some(kind), "{text}");
        }
        for text in [
            "Authorization: Bearer <token>",
            "Authorization: Bearer $TOKEN",
            "the Authorization header carries a Bearer token",
            "Authorization: Basic dXNlcjpwYXNzd29yZA==",
            "AccountKey=<your key>",
        ] {
            assert_eq!(find(text), None, "{text}");
        }
    }

    #[test]
    fn joins_a_wrapped_key_without_the_lines_around_it() {
        let key = "AIzaSyD4bX9k2Lq7mN3pR8sT1vW6yZ0aB5cE-fG";
        for at in 1..key.len() {
            let text = format!("here it is\n{}\n{}\nthanks", &key[..at], &key[at..]);
            assert_eq!(find(&text), Some("Google API key"), "{text}");
        }
    }

    #[test]
    fn walks_every_string_of_a_value() {
        let v = serde_json::json!({"a": [1, {"b": "npm_abcdefghijklmnopqrstuvwxyz0123456789"}]});
        assert_eq!(find_in_value(&v), Some("npm token"));
        assert_eq!(find_in_value(&serde_json::json!({"a": ["fine"]})), None);
    }
}
