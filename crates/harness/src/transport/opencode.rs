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
//!   holds a secret is refused when the config is read
//!   ([`crate::doorbell::Opencode`]).
//! - Which project: the `directory` query parameter (the server also reads
//!   an `x-opencode-directory` header; its SDK moves that into the query).
//! - Sessions: `GET /session?directory=D&roots=true` lists the sessions
//!   whose `directory` is D (resolved, so symlinks match) and that are not a
//!   sub-agent's (`parentID`), most recently updated first. With no
//!   `session:` configured the doorbell rings the most recently updated of
//!   them that is not archived, checked again here (the answer is another
//!   program's): its directory must be this repository and its id must look
//!   like OpenCode's (`ses_…`) before it goes into a URL path.

use std::net::IpAddr;
use std::path::Path;

use serde::Deserialize;

use super::http::{self, HttpError, Request, Response};
use super::shared::{DOORBELL, RingEnv, TIMEOUT, TransportError};
use crate::doorbell::{Opencode, check_session_id, host};
use crate::env::{OPENCODE_SERVER_PASSWORD, Secret};

/// OpenCode's default Basic-auth user (`OPENCODE_SERVER_USERNAME` unset).
const DEFAULT_USER: &str = "opencode";

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

/// The Basic-auth login for this doorbell, when the environment has one.
struct Login<'a> {
    user: &'a str,
    password: &'a Secret,
    /// Where the password came from, for messages.
    variable: &'a str,
}

/// Rings `bell`: finds the session unless one is configured, then posts the
/// doorbell to it.
pub(crate) fn ring(bell: &Opencode, repo: &Path, env: &RingEnv) -> Result<(), TransportError> {
    let host = host(&bell.url).map_err(TransportError::Opencode)?;
    let login = login_of(bell, env)?;
    if login.is_some() && !is_loopback(host) {
        return Err(TransportError::Opencode(format!(
            "opencode url {:?} is not on this machine: the password goes in plain HTTP, so aea sends it only to 127.0.0.1, ::1 or localhost",
            bell.url
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

    let session = match &bell.session {
        Some(id) => {
            check_session_id(id).map_err(|reason| {
                TransportError::Opencode(format!("opencode session {id:?} {reason}"))
            })?;
            id.clone()
        }
        None => discover(host, &headers, login.as_ref(), repo, &directory)?,
    };

    let body = serde_json::json!({ "parts": [{ "type": "text", "text": DOORBELL }] }).to_string();
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

/// The login `bell` rings with, from the monitor's environment only.
fn login_of<'a>(bell: &'a Opencode, env: &'a RingEnv) -> Result<Option<Login<'a>>, TransportError> {
    let user = env.opencode_username.as_deref().unwrap_or(DEFAULT_USER);
    match &bell.password_env {
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

    #[test]
    fn the_login_comes_from_the_environment_only() {
        let bell = |password_env: Option<&str>| Opencode {
            url: "http://127.0.0.1:1".into(),
            session: None,
            password_env: password_env.map(str::to_string),
        };
        let env = RingEnv::default();
        assert!(login_of(&bell(None), &env).unwrap().is_none());
        let env = RingEnv {
            opencode_username: None,
            opencode_password: Some(Secret::new("pw")),
            variables: [("OTHER_PW", "other")].into_iter().collect(),
        };
        let o = bell(None);
        let login = login_of(&o, &env).unwrap().unwrap();
        assert_eq!((login.user, login.password.expose()), ("opencode", "pw"));
        assert_eq!(login.variable, "OPENCODE_SERVER_PASSWORD");
        let o = bell(Some("OTHER_PW"));
        let login = login_of(&o, &env).unwrap().unwrap();
        assert_eq!(
            (login.password.expose(), login.variable),
            ("other", "OTHER_PW")
        );
        let env = RingEnv {
            opencode_username: Some("me".into()),
            ..env
        };
        assert_eq!(login_of(&bell(None), &env).unwrap().unwrap().user, "me");
        let err = login_of(&bell(Some("UNSET_PW")), &env).err().unwrap();
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
        let err = ring(&bell, Path::new("/r"), &env).unwrap_err().to_string();
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
}
