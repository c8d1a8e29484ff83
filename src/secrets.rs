//! Recognises text that looks like it carries a secret (SPEC §4), so that
//! `aea send` refuses to copy credentials into another repository. The
//! patterns are the common high-confidence ones; this is a seat belt, not a
//! scanner.

/// The kind of the first secret-looking token in `text`, if any.
pub fn find(text: &str) -> Option<&'static str> {
    if let Some(start) = text.find("-----BEGIN ")
        && text[start..]
            .lines()
            .next()
            .is_some_and(|l| l.contains("PRIVATE KEY-----"))
    {
        return Some("private key block");
    }
    for token in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')) {
        if let Some(kind) = classify(token) {
            return Some(kind);
        }
    }
    None
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
    for prefix in ["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-"] {
        if let Some(rest) = token.strip_prefix(prefix)
            && rest.len() >= 10
        {
            return Some("Slack token");
        }
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
    use super::find;

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
        ] {
            assert_eq!(find(text), None, "{text}");
        }
    }
}
