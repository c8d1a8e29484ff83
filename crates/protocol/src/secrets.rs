//! Recognises text that looks like it carries a secret (SPEC §4), so that
//! `aea send` refuses to copy credentials into another repository. The
//! patterns are the common high-confidence ones; this is a seat belt, not a
//! scanner: it catches the credential pasted by mistake, not one hidden on
//! purpose.
//!
//! Detected: every PEM private key block (not only the first block of the
//! text), PGP private key blocks, PuTTY private keys, JSON web tokens,
//! passwords in URLs (`postgres://user:pass@host`), `SECRET_KEY=…` /
//! `*_SECRET=` / `*_PASSWORD=` assignments with a real-looking value, AWS
//! access key ids and secret access keys, GitHub, GitLab, Slack (tokens and
//! webhooks), npm, Google, Stripe and `sk-` API keys. Placeholders
//! (`changeme`, `<password>`, `${VAR}`, `***`, empty values) are not secrets.

use serde_json::Value;

/// The kind of the first secret-looking thing in `text`, if any.
pub fn find(text: &str) -> Option<&'static str> {
    pem_block(text)
        .or_else(|| putty_key(text))
        .or_else(|| aws_secret_key(text))
        .or_else(|| url_password(text))
        .or_else(|| slack_webhook(text))
        .or_else(|| jwt(text))
        .or_else(|| {
            text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .find_map(classify)
        })
        .or_else(|| assignment(text))
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

/// Every `-----BEGIN …-----` line, not only the first: a public key or a
/// certificate in front of a private key must not hide it.
fn pem_block(text: &str) -> Option<&'static str> {
    text.match_indices("-----BEGIN ").find_map(|(at, marker)| {
        let rest = &text[at + marker.len()..];
        let label = &rest[..rest.find("-----")?];
        if label.len() > 64 || label.contains('\n') {
            return None;
        }
        if label.starts_with("PGP PRIVATE KEY") {
            Some("PGP private key block")
        } else if label.contains("PRIVATE KEY") {
            Some("private key block")
        } else {
            None
        }
    })
}

/// `PuTTY-User-Key-File-2: ssh-rsa`, the first line of a `.ppk` file.
fn putty_key(text: &str) -> Option<&'static str> {
    text.match_indices("PuTTY-User-Key-File-")
        .any(|(at, marker)| {
            let mut rest = text[at + marker.len()..].chars();
            rest.next().is_some_and(|c| c.is_ascii_digit()) && rest.next() == Some(':')
        })
        .then_some("PuTTY private key")
}

/// Forty base64 characters right after an `aws_secret_access_key` name.
fn aws_secret_key(text: &str) -> Option<&'static str> {
    let lower = text.to_ascii_lowercase();
    [
        "aws_secret_access_key",
        "secret_access_key",
        "secretaccesskey",
    ]
    .iter()
    .flat_map(|name| lower.match_indices(name))
    .any(|(at, name)| {
        let value = text[at + name.len()..]
            .trim_start_matches(|c: char| " \t\"':=>".contains(c))
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '/' || c == '+'))
            .next()
            .unwrap_or("");
        value.len() == 40 && !is_placeholder(value)
    })
    .then_some("AWS secret access key")
}

/// `scheme://user:password@host` with a password that is not a placeholder.
fn url_password(text: &str) -> Option<&'static str> {
    text.match_indices("://")
        .any(|(at, _)| {
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
    ["hooks.slack.com/services/", "hooks.slack.com/workflows/"]
        .iter()
        .flat_map(|prefix| text.match_indices(prefix))
        .any(|(at, prefix)| {
            text[at + prefix.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '/' || *c == '_')
                .count()
                >= 20
        })
        .then_some("Slack webhook")
}

/// Three base64url parts joined by dots, the first a JSON header (`eyJ`).
fn jwt(text: &str) -> Option<&'static str> {
    let b64url = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    text.split(|c: char| !(c.is_ascii_alphanumeric() || "_-.".contains(c)))
        .any(|token| {
            let parts: Vec<&str> = token.split('.').collect();
            parts.len() == 3
                && parts[0].starts_with("eyJ")
                && parts[0].len() >= 10
                && parts[1].len() >= 10
                && parts[2].len() >= 16
                && parts.iter().all(|p| b64url(p))
        })
        .then_some("JSON web token")
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
    text.match_indices(['=', ':'])
        .any(|(at, _)| {
            let name_end = text[..at].trim_end_matches([' ', '\t', '"', '\'']);
            let name = name_end
                .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .next()
                .unwrap_or("")
                .to_ascii_lowercase()
                .replace('-', "_");
            if !SECRET_NAMES.iter().any(|s| name.ends_with(s)) {
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

fn classify(token: &str) -> Option<&'static str> {
    let alnum = |s: &str| s.bytes().all(|b| b.is_ascii_alphanumeric());
    let upper_alnum = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    };
    let token_chars = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    for prefix in ["AKIA", "ASIA"] {
        if let Some(rest) = token.strip_prefix(prefix)
            && rest.len() == 16
            && upper_alnum(rest)
        {
            return Some("AWS access key id");
        }
    }
    for prefix in ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"] {
        if let Some(rest) = token.strip_prefix(prefix)
            && rest.len() >= 36
            && alnum(rest)
        {
            return Some("GitHub token");
        }
    }
    if let Some(rest) = token.strip_prefix("github_pat_")
        && rest.len() >= 40
    {
        return Some("GitHub token");
    }
    if let Some(rest) = token.strip_prefix("glpat-")
        && rest.len() >= 20
    {
        return Some("GitLab token");
    }
    for prefix in ["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xapp-"] {
        if let Some(rest) = token.strip_prefix(prefix)
            && rest.len() >= 10
        {
            return Some("Slack token");
        }
    }
    if let Some(rest) = token.strip_prefix("npm_")
        && rest.len() >= 36
        && alnum(rest)
    {
        return Some("npm token");
    }
    if let Some(rest) = token.strip_prefix("AIza")
        && rest.len() == 35
        && token_chars(rest)
    {
        return Some("Google API key");
    }
    if let Some(rest) = token.strip_prefix("sk-")
        && rest.len() >= 32
        && token_chars(rest)
        && rest.bytes().any(|b| b.is_ascii_digit())
    {
        return Some("API secret key");
    }
    for prefix in ["sk_live_", "rk_live_"] {
        if let Some(rest) = token.strip_prefix(prefix)
            && rest.len() >= 20
        {
            return Some("Stripe key");
        }
    }
    None
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
    fn walks_every_string_of_a_value() {
        let v = serde_json::json!({"a": [1, {"b": "npm_abcdefghijklmnopqrstuvwxyz0123456789"}]});
        assert_eq!(find_in_value(&v), Some("npm token"));
        assert_eq!(find_in_value(&serde_json::json!({"a": ["fine"]})), None);
    }
}
