//! The doorbells of `monitoring:` (SPEC §10) as the config states them:
//! which transports ring, checked when the config is read, and the retry
//! schedule's settings. Plain data for the config to hold; ringing them is
//! `transport`'s, and when to ring again is `wake`'s.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use crate::env::OPENCODE_SERVER_PASSWORD;

/// Monitoring durations are capped at a day, so adding one to the clock
/// cannot overflow.
pub const DAY: Duration = Duration::from_secs(86_400);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
// A misspelt key (`arg:` for `args:`) is an error, not a doorbell that
// silently rings without it.
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Transport {
    /// Runs `program` with `args`; the short references are in
    /// `AEA_MESSAGE_REFS` (and, for older scripts, `AEA_MESSAGE_IDS`).
    Command {
        program: PathBuf,
        #[serde(default)]
        args: Vec<String>,
    },
    /// Types the doorbell into a tmux pane, then presses Enter.
    Tmux {
        target: String,
        /// A tmux server socket name (`tmux -L`), if not the default.
        #[serde(default)]
        socket: Option<String>,
    },
    /// `POST /session/{session}/prompt_async` to a local OpenCode server,
    /// with Basic auth from the monitor's environment; without `session`,
    /// to the most recently updated session of this repository.
    Opencode(Opencode),
    /// A desktop notification through `notify-send`.
    // Braces, not a unit variant: serde lets a unit variant of a tagged
    // enum take any keys, and a misspelt one must be an error.
    Desktop {},
}

impl Transport {
    pub fn name(&self) -> &'static str {
        match self {
            Transport::Command { .. } => "command",
            Transport::Tmux { .. } => "tmux",
            Transport::Opencode { .. } => "opencode",
            Transport::Desktop {} => "desktop",
        }
    }
}

/// `type: opencode` in `monitoring.transports`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub struct Opencode {
    /// `http://host:port` of `opencode serve`.
    pub url: String,
    /// The session to ring; without it, the most recently updated session
    /// of this repository, asked from the server each time.
    // Left out when absent, so a config that names one keeps the trust
    // digest it had when `session` was required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The environment variable that holds the server's password, if not
    /// `OPENCODE_SERVER_PASSWORD` — its name, never the password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
}

const FIELDS: &[&str] = &["url", "session", "password_env"];

/// Words in a key that mean it would hold a secret — the words OpenCode's
/// own config redaction looks for, and `pass`/`auth` for the short forms.
const SECRET_WORDS: &[&str] = &[
    "pass",
    "secret",
    "token",
    "auth",
    "credential",
    "cookie",
    "key",
];

// By hand around a derived twin: serde's `deny_unknown_fields` would call a
// `password:` key merely unknown, and this one must say why it can never
// be there.
impl<'de> Deserialize<'de> for Opencode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        struct Raw {
            url: String,
            #[serde(default)]
            session: Option<String>,
            #[serde(default)]
            password_env: Option<String>,
            // Only the keys matter; the values (maybe a password) are dropped.
            #[allow(clippy::zero_sized_map_values)]
            #[serde(flatten)]
            other: BTreeMap<String, serde::de::IgnoredAny>,
        }
        let raw = Raw::deserialize(deserializer)?;
        if let Some(key) = raw.other.keys().find(|k| looks_secret(k)) {
            return Err(D::Error::custom(format!(
                "opencode `{key}`: a secret must not go into the committed config; set {OPENCODE_SERVER_PASSWORD} for `aea monitor start`, or name its variable in `password_env`"
            )));
        }
        if let Some(key) = raw.other.keys().next() {
            return Err(D::Error::unknown_field(key, FIELDS));
        }
        host(&raw.url).map_err(D::Error::custom)?;
        if let Some(name) = &raw.password_env {
            check_variable_name(name).map_err(D::Error::custom)?;
        }
        if let Some(id) = &raw.session {
            check_session_id(id)
                .map_err(|reason| D::Error::custom(format!("opencode session {id:?} {reason}")))?;
        }
        Ok(Opencode {
            url: raw.url,
            session: raw.session,
            password_env: raw.password_env,
        })
    }
}

fn looks_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|word| key.contains(word))
}

/// The `host:port` of an `http://host:port` url. A path is refused (the
/// doorbell knows its routes), and so are credentials in it
/// (`http://user:pass@…` would be a password in the committed config).
pub fn host(url: &str) -> Result<&str, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("opencode url {url:?} must start with http://"))?;
    let host = rest.strip_suffix('/').unwrap_or(rest);
    if host.contains('@') {
        // Not quoted back: what comes before the `@` is likely a password.
        return Err(format!(
            "opencode url holds credentials (user:password@), which do not belong in the committed config; set {OPENCODE_SERVER_PASSWORD} in the environment of `aea monitor start`"
        ));
    }
    if host.is_empty()
        || !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
    {
        return Err(format!("opencode url {url:?} must be http://host:port"));
    }
    Ok(host)
}

fn check_variable_name(name: &str) -> Result<(), String> {
    let mut bytes = name.bytes();
    let first_ok = bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
    if first_ok && name.len() <= 128 && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        Ok(())
    } else {
        Err(format!(
            "opencode password_env {name:?} must be the name of an environment variable (letters, digits, _), not its value"
        ))
    }
}

/// OpenCode's session ids are `ses_` and 26 letters and digits; `-` and
/// `_` are allowed too. Nothing else can reach the URL path: no `/`, `.`,
/// `%`, `?` or line break.
pub fn check_session_id(id: &str) -> Result<(), &'static str> {
    let Some(rest) = id.strip_prefix("ses_") else {
        return Err("does not start with ses_");
    };
    if rest.is_empty() || id.len() > 100 {
        return Err("is not 5 to 100 characters long");
    }
    if !rest
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err("has characters other than letters, digits, _ and -");
    }
    Ok(())
}

/// How often a doorbell rings again for mail still waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// After the first ring, the next one comes this much later...
    pub initial: Duration,
    /// ...doubling each time, but never more than this apart.
    pub max: Duration,
}

impl Backoff {
    /// The gap after the `attempts`-th ring (1 = the first).
    pub fn after(self, attempts: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempts.saturating_sub(1).min(16));
        self.initial.saturating_mul(factor).min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::AgentConfig;

    fn parse(entry: &str) -> Result<Opencode, String> {
        let text = format!("monitoring:\n  transports:\n    - type: opencode\n{entry}");
        match AgentConfig::parse(&text, Path::new("c")) {
            Ok(config) => match config.monitoring.unwrap().transports.remove(0) {
                Transport::Opencode(o) => Ok(o),
                other => panic!("{other:?}"),
            },
            Err(e) => Err(crate::error::one_line(&e)),
        }
    }

    #[test]
    fn session_and_password_env_are_optional() {
        let o = parse("      url: http://127.0.0.1:4096\n").unwrap();
        assert_eq!((o.session, o.password_env), (None, None));
        let o = parse("      url: http://127.0.0.1:4096/\n      session: ses_abc123\n      password_env: OC_PW_2\n").unwrap();
        assert_eq!(o.session.as_deref(), Some("ses_abc123"));
        assert_eq!(o.password_env.as_deref(), Some("OC_PW_2"));
    }

    #[test]
    fn a_key_that_would_hold_a_secret_is_refused_with_the_reason() {
        for key in [
            "password",
            "Password",
            "passwd",
            "server_password",
            "opencode_server_password",
            "token",
            "api_key",
            "auth",
            "basic_auth",
            "secret",
            "credentials",
        ] {
            let err = parse(&format!(
                "      url: http://127.0.0.1:4096\n      {key}: hunter2\n"
            ))
            .unwrap_err();
            assert!(
                err.contains(&format!(
                    "opencode `{key}`: a secret must not go into the committed config"
                )) && err.contains("OPENCODE_SERVER_PASSWORD")
                    && err.contains("password_env"),
                "{key}: {err}"
            );
            assert!(!err.contains("hunter2"), "{err}");
        }
        let err = parse("      url: http://opencode:hunter2@127.0.0.1:4096\n").unwrap_err();
        assert!(err.contains("holds credentials"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
        // Other keys are still plain typos.
        let err = parse("      url: http://127.0.0.1:4096\n      sesion: x\n").unwrap_err();
        assert!(
            err.contains("unknown key `sesion`: did you mean `session`?"),
            "{err}"
        );
        assert!(!err.contains("secret"), "{err}");
    }

    #[test]
    fn urls_sessions_and_variable_names_are_checked_when_read() {
        for (entry, needle) in [
            (
                "      url: https://127.0.0.1:4096\n",
                "must start with http://",
            ),
            (
                "      url: http://127.0.0.1:4096/api\n",
                "must be http://host:port",
            ),
            (
                "      url: \"http://h:1\\r\\nX: y\"\n",
                "must be http://host:port",
            ),
            (
                "      url: http://h:1\n      session: ../x\n",
                "does not start with ses_",
            ),
            (
                "      url: http://h:1\n      session: ses_a/../b\n",
                "characters other than",
            ),
            ("      url: http://h:1\n      session: ses_\n", "5 to 100"),
            (
                "      url: http://h:1\n      password_env: hunter 2\n",
                "name of an environment variable",
            ),
            (
                "      url: http://h:1\n      password_env: 2PW\n",
                "name of an environment variable",
            ),
        ] {
            let err = parse(entry).unwrap_err();
            assert!(err.contains(needle), "{entry}: {err}");
        }
    }

    #[test]
    fn only_opencode_shaped_session_ids_reach_the_url() {
        for id in ["ses_df89b0451ffexsj1d3xh9zxvzs", "ses_abc123", "ses_a-b_c"] {
            assert_eq!(check_session_id(id), Ok(()), "{id}");
        }
        for id in [
            "",
            "ses_",
            "../../x",
            "ses_a/../../config",
            "ses_a?x=1",
            "ses_a#",
            "ses_a%2F",
            "ses_a\r\nHost: evil",
            "ses_a b",
            "ses_ü",
            "session",
            &format!("ses_{}", "a".repeat(100)),
        ] {
            assert!(check_session_id(id).is_err(), "{id:?}");
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let b = Backoff {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(5),
        };
        let gaps: Vec<_> = (1..=5).map(|n| b.after(n).as_secs()).collect();
        assert_eq!(gaps, [1, 2, 4, 5, 5]);
        assert_eq!(b.after(u32::MAX), Duration::from_secs(5));
    }
}
