//! The `opencode` doorbell: `POST /session/{id}/prompt_async` to a local
//! `opencode serve`, which starts a turn of that session with the doorbell
//! as the user's message.
//!
//! What the server expects was read from OpenCode 1.18's own code (the
//! `opencode-ai` npm package) and checked against a running `opencode
//! serve`:
//!
//! - Auth: with `OPENCODE_SERVER_PASSWORD` in the server's environment,
//!   every route wants HTTP Basic auth (RFC 7617) with user
//!   `OPENCODE_SERVER_USERNAME` (default `opencode`) and that password, and
//!   answers 401 with `www-authenticate: Basic realm="Secure Area"` without
//!   it. The doorbell takes the same two variables from the environment of
//!   the process that rings (`aea monitor start`), or the password from
//!   the variable `password_env` names. Never from the config: it is
//!   committed and read by every clone, so a key there that looks like it
//!   holds a secret is refused when the config is read.
//! - Which project: the `directory` query parameter (the server also reads
//!   an `x-opencode-directory` header; its SDK moves that into the query).
//! - Sessions: `GET /session?directory=D&roots=true` lists the sessions
//!   whose `directory` is D (resolved, so symlinks match) and that are not a
//!   sub-agent's (`parentID`), most recently updated first. With no
//!   `session:` configured the doorbell rings the most recently updated of
//!   them that is not archived, checked again here (the answer is another
//!   program's): its directory must be this repository and its id must look
//!   like OpenCode's (`ses_…`) before it goes into a URL path.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize};

use super::http::{self, HttpError, Request, Response};
use super::{DOORBELL, RingEnv, TIMEOUT, TransportError};
use crate::env::{OPENCODE_SERVER_PASSWORD, Secret};

/// OpenCode's default Basic-auth user (`OPENCODE_SERVER_USERNAME` unset).
const DEFAULT_USER: &str = "opencode";

/// `type: opencode` in `monitoring.transports`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[cfg_attr(test, schemars(deny_unknown_fields))]
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
fn host(url: &str) -> Result<&str, String> {
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

/// Whether `host` (`host:port`) is this machine: a password goes in plain
/// HTTP, so only over the loopback interface.
fn is_loopback(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
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
fn check_session_id(id: &str) -> Result<(), &'static str> {
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

/// The Basic-auth login for this doorbell, when the environment has one.
struct Login<'a> {
    user: &'a str,
    password: &'a Secret,
    /// Where the password came from, for messages.
    variable: &'a str,
}

impl Opencode {
    /// Rings: finds the session unless one is configured, then posts the
    /// doorbell to it.
    pub fn ring(&self, repo: &Path, env: &RingEnv) -> Result<(), TransportError> {
        let host = host(&self.url).map_err(TransportError::Opencode)?;
        let login = self.login(env)?;
        if login.is_some() && !is_loopback(host) {
            return Err(TransportError::Opencode(format!(
                "opencode url {:?} is not on this machine: the password goes in plain HTTP, so aea sends it only to 127.0.0.1, ::1 or localhost",
                self.url
            )));
        }
        let auth = login
            .as_ref()
            .map(|l| http::basic_auth(l.user, l.password.expose()));
        let headers: Vec<(&str, &str)> = auth
            .as_deref()
            .map(|value| ("Authorization", value))
            .into_iter()
            .collect();
        let directory = http::percent_encode(repo.as_os_str().as_encoded_bytes());

        let session = match &self.session {
            Some(id) => {
                check_session_id(id).map_err(|reason| {
                    TransportError::Opencode(format!("opencode session {id:?} {reason}"))
                })?;
                id.clone()
            }
            None => discover(host, &headers, login.as_ref(), repo, &directory)?,
        };

        let body =
            serde_json::json!({ "parts": [{ "type": "text", "text": DOORBELL }] }).to_string();
        let target = format!("/session/{session}/prompt_async?directory={directory}");
        let request = Request {
            method: "POST",
            target: &target,
            host,
            headers: &headers,
            json: Some(&body),
        };
        exchange(&request, login.as_ref()).map(drop)
    }

    fn login<'a>(&'a self, env: &'a RingEnv) -> Result<Option<Login<'a>>, TransportError> {
        let user = env.opencode_username.as_deref().unwrap_or(DEFAULT_USER);
        match &self.password_env {
            Some(variable) => match env.variables.get(variable) {
                Some(password) => Ok(Some(Login {
                    user,
                    password,
                    variable,
                })),
                None => Err(TransportError::Opencode(format!(
                    "opencode password_env names {variable}, which is not set in the environment of the monitor (`aea monitor start`)"
                ))),
            },
            None => Ok(env.opencode_password.as_ref().map(|password| Login {
                user,
                password,
                variable: OPENCODE_SERVER_PASSWORD,
            })),
        }
    }
}

/// The session to ring when none is configured: the one [`pick_session`]
/// chooses from the server's list, if its id is safe to put in a path.
fn discover(
    host: &str,
    headers: &[(&str, &str)],
    login: Option<&Login<'_>>,
    repo: &Path,
    directory: &str,
) -> Result<String, TransportError> {
    let target = format!("/session?directory={directory}&roots=true");
    let request = Request {
        method: "GET",
        target: &target,
        host,
        headers,
        json: None,
    };
    let response = exchange(&request, login)?;
    match pick_session(&response.body, repo) {
        Err(()) => Err(TransportError::OpencodeBadList { host: host.into() }),
        Ok(None) => Err(TransportError::OpencodeNoSession {
            host: host.into(),
            repo: repo.to_path_buf(),
        }),
        Ok(Some(id)) if check_session_id(&id).is_err() => {
            // Quoted in the log: escaped by `{:?}`, and cut short.
            Err(TransportError::OpencodeHostileSession {
                host: host.into(),
                id: id.chars().take(120).collect(),
            })
        }
        Ok(Some(id)) => Ok(id),
    }
}

/// One request; any answer but 2xx is an error that says what to do.
fn exchange(request: &Request<'_>, login: Option<&Login<'_>>) -> Result<Response, TransportError> {
    let host = request.host.to_string();
    let response =
        http::send(request, TIMEOUT).map_err(|source: HttpError| TransportError::OpencodeIo {
            host: host.clone(),
            source,
        })?;
    match response.status {
        200..=299 => Ok(response),
        401 => Err(match login {
            None => TransportError::OpencodeNoPassword { host },
            Some(login) => TransportError::OpencodeRefused {
                host,
                user: login.user.to_string(),
                variable: login.variable.to_string(),
            },
        }),
        code => Err(TransportError::OpencodeStatus {
            host,
            request: format!(
                "{} {}",
                request.method,
                request.target.split('?').next().unwrap_or_default()
            ),
            code,
        }),
    }
}

/// One entry of `GET /session`, as far as the doorbell reads it.
#[derive(Deserialize)]
struct Listed {
    id: String,
    directory: String,
    #[serde(default, rename = "parentID")]
    parent_id: Option<serde_json::Value>,
    #[serde(default)]
    time: Times,
}

#[derive(Deserialize, Default)]
struct Times {
    #[serde(default)]
    updated: f64,
    #[serde(default)]
    archived: Option<serde_json::Value>,
}

/// The id of the most recently updated top-level, unarchived session whose
/// directory is `repo`, from the body of `GET /session`: `Err` when the
/// body is not a JSON list, `None` when no session fits. Entries that do
/// not read are skipped. The id is not checked here.
fn pick_session(body: &[u8], repo: &Path) -> Result<Option<String>, ()> {
    let list: Vec<serde_json::Value> = serde_json::from_slice(body).map_err(drop)?;
    Ok(list
        .into_iter()
        .filter_map(|v| serde_json::from_value::<Listed>(v).ok())
        .filter(|s| {
            Path::new(&s.directory) == repo
                && s.parent_id.as_ref().is_none_or(serde_json::Value::is_null)
                && s.time
                    .archived
                    .as_ref()
                    .is_none_or(serde_json::Value::is_null)
        })
        .max_by(|a, b| a.time.updated.total_cmp(&b.time.updated))
        .map(|s| s.id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AgentConfig;

    fn parse(entry: &str) -> Result<Opencode, String> {
        let text = format!("monitoring:\n  transports:\n    - type: opencode\n{entry}");
        match AgentConfig::parse(&text, Path::new("c")) {
            Ok(config) => match config.monitoring.unwrap().transports.remove(0) {
                super::super::Transport::Opencode(o) => Ok(o),
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
            err.contains("sesion") && err.contains("password_env"),
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
    fn the_login_comes_from_the_environment_only() {
        let bell = |password_env: Option<&str>| Opencode {
            url: "http://127.0.0.1:1".into(),
            session: None,
            password_env: password_env.map(str::to_string),
        };
        let env = RingEnv::default();
        assert!(bell(None).login(&env).unwrap().is_none());
        let env = RingEnv {
            opencode_username: None,
            opencode_password: Some(Secret::new("pw")),
            variables: [("OTHER_PW", "other")].into_iter().collect(),
        };
        let o = bell(None);
        let login = o.login(&env).unwrap().unwrap();
        assert_eq!((login.user, login.password.expose()), ("opencode", "pw"));
        assert_eq!(login.variable, "OPENCODE_SERVER_PASSWORD");
        let o = bell(Some("OTHER_PW"));
        let login = o.login(&env).unwrap().unwrap();
        assert_eq!(
            (login.password.expose(), login.variable),
            ("other", "OTHER_PW")
        );
        let env = RingEnv {
            opencode_username: Some("me".into()),
            ..env
        };
        assert_eq!(bell(None).login(&env).unwrap().unwrap().user, "me");
        let err = bell(Some("UNSET_PW")).login(&env).err().unwrap();
        assert!(
            err.to_string().contains("UNSET_PW, which is not set"),
            "{err}"
        );
    }

    #[test]
    fn a_password_is_sent_only_over_loopback() {
        for host in [
            "127.0.0.1:4096",
            "127.1.2.3:1",
            "localhost:4096",
            "[::1]:4096",
            "LOCALHOST:1",
        ] {
            assert!(is_loopback(host), "{host}");
        }
        for host in [
            "10.0.0.1:4096",
            "example.com:4096",
            "[::2]:1",
            "localhost.evil.com:1",
        ] {
            assert!(!is_loopback(host), "{host}");
        }
        let bell = Opencode {
            url: "http://192.0.2.1:4096".into(),
            session: Some("ses_x".into()),
            password_env: None,
        };
        let env = RingEnv {
            opencode_password: Some(Secret::new("pw")),
            ..RingEnv::default()
        };
        let err = bell.ring(Path::new("/r"), &env).unwrap_err().to_string();
        assert!(err.contains("only to 127.0.0.1"), "{err}");
    }

    #[test]
    fn discovery_picks_the_newest_top_level_session_of_this_repository() {
        let body = br#"[
            {"id":"ses_other","directory":"/work/other","time":{"updated":900}},
            {"id":"ses_sub","directory":"/work/repo/sub","time":{"updated":800}},
            {"id":"ses_child","directory":"/work/repo","parentID":"ses_old","time":{"updated":700}},
            {"id":"ses_archived","directory":"/work/repo","time":{"updated":600,"archived":5}},
            {"id":"ses_new","directory":"/work/repo/","time":{"created":1,"updated":500}},
            {"id":"ses_old","directory":"/work/repo","parentID":null,"time":{"updated":400}},
            {"id":17,"directory":"/work/repo","time":{"updated":1000}},
            "not a session"
        ]"#;
        assert_eq!(
            pick_session(body, Path::new("/work/repo")),
            Ok(Some("ses_new".into()))
        );
        assert_eq!(pick_session(body, Path::new("/work/none")), Ok(None));
        assert_eq!(pick_session(b"[]", Path::new("/work/repo")), Ok(None));
        assert_eq!(pick_session(b"{\"sessions\":[]}", Path::new("/r")), Err(()));
        assert_eq!(pick_session(b"<html>", Path::new("/r")), Err(()));
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
}
