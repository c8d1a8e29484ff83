//! Trust in a repository's committed config (SPEC §15.1, `aea trust`).
//!
//! `.aea/agent-config.yaml` comes with the repository, so whoever wrote the
//! repository wrote it. The few settings in it that can make aea run a
//! program, hand an option to git or reach a host — `sync.remote`,
//! `hooks.<hook>.sync` and `monitoring.transports` — take effect only after
//! the local user trusted exactly those values, like `direnv allow`.
//!
//! The trust is a SHA-256 digest of a canonical form of those settings
//! alone (not of the whole file: editing a policy rule cannot run anything,
//! so it needs no re-trust), stored outside the repository in the user's
//! config dir (`trusted.toml`), keyed by the repository's canonical path.
//! [`trusted_settings`] is the one way to read these settings.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::{AgentConfig, GitHook, HookConfig};
use crate::doorbell::Transport;
use crate::error::{Error, Result};
use crate::fsutil;

/// The trust store's file name, in the user's config dir.
pub const FILE_NAME: &str = "trusted.toml";

/// The settings of a config that need the local user's trust. Its JSON
/// serialisation (fields in this order, hooks in git's order, transports
/// in the file's order) is the canonical form the digest is taken over.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Settings {
    /// `sync.remote`: handed to git, which may run programs for it.
    pub sync_remote: Option<String>,
    /// The post-* hooks whose `sync: true` makes a git command run `aea sync`.
    pub hook_sync: Vec<String>,
    /// `monitoring.transports`: programs, tmux sockets, URLs.
    pub transports: Vec<Transport>,
    /// `bridges`: folders outside `.aea/` that `aea bridge` reads and
    /// deletes processed files from. Left out of the canonical form when
    /// empty, so trust given before bridges existed still holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bridges: Vec<crate::config::BridgeConfig>,
}

impl Settings {
    /// The settings `config` asks for.
    pub fn of(config: &AgentConfig) -> Self {
        let hooks = &config.hooks;
        let asks = |h: &Option<HookConfig>| h.as_ref().and_then(|h| h.sync) == Some(true);
        let hook_sync = [
            (GitHook::PostMerge, asks(&hooks.post_merge)),
            (GitHook::PostCheckout, asks(&hooks.post_checkout)),
            (GitHook::PostRewrite, asks(&hooks.post_rewrite)),
        ]
        .into_iter()
        .filter(|(_, on)| *on)
        .map(|(hook, _)| hook.config_key().to_string())
        .collect();
        let transports = config
            .monitoring
            .as_ref()
            .map(|m| m.transports.clone())
            .unwrap_or_default();
        Settings {
            sync_remote: config.sync.remote.clone(),
            hook_sync,
            transports,
            bridges: config.bridges.clone(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.sync_remote.is_none()
            && self.hook_sync.is_empty()
            && self.transports.is_empty()
            && self.bridges.is_empty()
    }

    /// `sha256:<hex>` of the canonical form.
    pub fn digest(&self) -> String {
        let canonical = serde_json::to_vec(self).expect("settings always serialise");
        format!("sha256:{}", fsutil::sha256_hex(&canonical))
    }

    /// Whether `hooks.<hook>.sync` is on.
    pub fn hook_syncs(&self, hook: GitHook) -> bool {
        self.hook_sync.iter().any(|h| h == hook.config_key())
    }

    /// The config keys these settings come from, for messages.
    pub fn keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        if self.sync_remote.is_some() {
            keys.push("sync.remote".to_string());
        }
        keys.extend(self.hook_sync.iter().map(|h| format!("hooks.{h}.sync")));
        if !self.transports.is_empty() {
            keys.push("monitoring.transports".to_string());
        }
        if !self.bridges.is_empty() {
            keys.push("bridges".to_string());
        }
        keys
    }

    /// One line per setting, values quoted and escaped (they came from a
    /// file someone else may have written).
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(remote) = &self.sync_remote {
            lines.push(format!("sync.remote: {remote:?}"));
        }
        for h in &self.hook_sync {
            lines.push(format!("hooks.{h}.sync: true (runs `aea sync` from git)"));
        }
        for (i, t) in self.transports.iter().enumerate() {
            let what = match t {
                Transport::Command { program, args } => {
                    format!(
                        "runs program {:?} with arguments {args:?}",
                        program.display().to_string()
                    )
                }
                Transport::Tmux { target, socket } => {
                    format!("types into tmux pane {target:?} (socket {socket:?})")
                }
                Transport::Opencode(bell) => {
                    let session = bell.session.as_ref().map_or_else(
                        || "the newest session of this repository".to_string(),
                        |s| format!("session {s:?}"),
                    );
                    let password = bell
                        .password_env
                        .as_deref()
                        .unwrap_or(crate::env::OPENCODE_SERVER_PASSWORD);
                    format!(
                        "posts to {:?} ({session}; password from ${password} if set)",
                        bell.url
                    )
                }
                Transport::Desktop {} => "runs notify-send".to_string(),
            };
            lines.push(format!("monitoring.transports[{i}] ({}): {what}", t.name()));
        }
        for (i, b) in self.bridges.iter().enumerate() {
            // Which files exactly: a Roo slug picks another agent's
            // mailbox file as easily as ours.
            let files = match b.protocol {
                crate::foreign::Protocol::Oacp => {
                    b.path.join("inbox").join("*.yaml").display().to_string()
                }
                crate::foreign::Protocol::Roo => match &b.slug {
                    Some(slug) => b.path.join(format!("to-{slug}.md")).display().to_string(),
                    None => b.path.join("to-<this agent's id>.md").display().to_string(),
                },
            };
            let base = if b.path.is_relative() {
                " (relative to the repository)"
            } else {
                ""
            };
            lines.push(format!(
                "bridges[{i}] ({}): imports {files:?}{base} and deletes each such file once its message is processed",
                b.protocol,
            ));
        }
        lines
    }
}

/// What a repository's config may do on this machine.
#[derive(Debug, Clone, Default)]
pub struct Trusted {
    /// The settings in force: the config's when the user trusted them,
    /// otherwise none.
    pub settings: Settings,
    /// What the config asks for but is not in force (empty when trusted).
    pub ignored: Settings,
    /// Digest of what the config asks for.
    pub digest: String,
}

/// One trusted repository.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// [`Settings::digest`] of the settings the user trusted.
    pub digest: String,
    /// When (RFC 3339).
    pub trusted_at: String,
    /// The trusted settings as [`Settings::describe`] put them, for a
    /// person reading the file; never read back.
    #[serde(default)]
    pub settings: Vec<String>,
}

/// `trusted.toml`: `[repos."<canonical path>"]` → [`Entry`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Store {
    #[serde(default)]
    pub repos: BTreeMap<String, Entry>,
}

impl Store {
    /// Reads the store; a missing file is an empty store.
    pub(crate) fn load(path: &Path) -> Result<Self> {
        match fsutil::read_optional(path)? {
            None => Ok(Store::default()),
            Some(text) => toml::from_str(&text).map_err(|e| Error::TrustStoreCorrupt {
                path: path.to_path_buf(),
                detail: e.message().to_string(),
            }),
        }
    }

    /// Applies `change` under a lock and replaces the file atomically; a
    /// corrupt store is reported, never overwritten.
    pub fn update<T>(path: &Path, change: impl FnOnce(&mut Store) -> T) -> Result<T> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, e))?;
        }
        let _lock = fsutil::lock(&path.with_extension("lock"))?;
        let mut store = Store::load(path)?;
        let result = change(&mut store);
        let text = format!(
            "# Settings of committed .aea/agent-config.yaml files that this user\n\
             # allowed to run programs or reach hosts (`aea trust`). Keyed by the\n\
             # repository's path; the digest covers exactly those settings.\n{}",
            toml::to_string_pretty(&store).expect("the trust store always serialises")
        );
        fsutil::replace_atomic(path, text.as_bytes())?;
        Ok(result)
    }
}

/// The key of `repo` in the store: its canonical path.
pub fn repo_key(repo: &Path) -> Result<String> {
    let real = std::fs::canonicalize(repo).map_err(|e| Error::io("resolve", repo, e))?;
    Ok(real.to_string_lossy().into_owned())
}

/// The one way to read `sync.remote`, `hooks.*.sync` and
/// `monitoring.transports`: the config's values when the user trusted
/// exactly them for `repo` in the store at `store`, otherwise none of them.
/// An unreadable store trusts nothing (and is an error for the caller to
/// report).
pub fn trusted_settings(
    config: &AgentConfig,
    repo: &Path,
    store: Option<&Path>,
) -> Result<Trusted> {
    let asked = Settings::of(config);
    let digest = asked.digest();
    if asked.is_empty() {
        return Ok(Trusted {
            digest,
            ..Trusted::default()
        });
    }
    let trusted = match store {
        Some(store) => {
            let key = repo_key(repo)?;
            Store::load(store)?
                .repos
                .get(&key)
                .is_some_and(|e| e.digest == digest)
        }
        None => false,
    };
    Ok(if trusted {
        Trusted {
            settings: asked,
            ignored: Settings::default(),
            digest,
        }
    } else {
        Trusted {
            settings: Settings::default(),
            ignored: asked,
            digest,
        }
    })
}

/// Refuses a mail remote git would read as an option (`--upload-pack=…`),
/// wherever it came from.
pub fn check_remote(remote: &str) -> Result<()> {
    let refused = |why: &str| Error::RemoteRefused {
        remote: remote.to_string(),
        why: why.to_string(),
    };
    if remote.starts_with('-') {
        return Err(Error::RemoteLooksLikeOption {
            remote: remote.to_string(),
        });
    }
    if remote.trim().is_empty() {
        return Err(refused("it is empty"));
    }
    if remote.chars().any(char::is_control) {
        return Err(refused("it holds control characters"));
    }
    // `<transport>::<address>` asks git to run a remote helper program
    // (`ext::sh -c …` runs a shell). Plain URLs and paths never need it.
    if let Some((transport, _)) = remote.split_once("::")
        && !transport.is_empty()
        && transport
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return Err(refused(
            "`<transport>::` makes git run a helper program; give a URL (ssh://, https://, file://), user@host:path or a path",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(yaml: &str) -> AgentConfig {
        AgentConfig::parse(yaml, Path::new("c")).unwrap()
    }

    #[test]
    fn the_digest_covers_only_the_settings_that_run_things() {
        let base = "agent:\n  id: web\nsync:\n  remote: /srv/mail.git\nhooks:\n  post_checkout:\n    sync: true\n";
        let a = Settings::of(&config(base));
        assert_eq!(a.keys(), ["sync.remote", "hooks.post_checkout.sync"]);
        let with_rule = format!("{base}rules:\n  - action: reject\n    from: evil\n");
        let b = Settings::of(&config(&with_rule));
        assert_eq!(a.digest(), b.digest(), "a policy edit needs no re-trust");
        let moved = base.replace("/srv/mail.git", "/srv/other.git");
        let c = Settings::of(&config(&moved));
        assert_ne!(a.digest(), c.digest());
        let off = base.replace("sync: true", "sync: false");
        let d = Settings::of(&config(&off));
        assert_eq!(d.keys(), ["sync.remote"]);
    }

    /// Users trusted configs by this digest: reading `monitoring` into
    /// types must not change it (the same digest as aea before the
    /// section was typed).
    #[test]
    fn the_digest_of_transports_is_stable() {
        let cfg = config(
            "monitoring:\n  debounce: 1s\n  transports:\n    - type: command\n      program: /bin/true\n      args: [-q]\n    - type: tmux\n      target: \"a:0\"\n    - type: desktop\n",
        );
        let settings = Settings::of(&cfg);
        assert_eq!(
            serde_json::to_string(&settings).unwrap(),
            r#"{"sync_remote":null,"hook_sync":[],"transports":[{"type":"command","program":"/bin/true","args":["-q"]},{"type":"tmux","target":"a:0","socket":null},{"type":"desktop"}]}"#
        );
        assert_eq!(
            settings.digest(),
            "sha256:b66b67fc8e51492dbc96d886c2f66c820f1b589772e9c19e1a2212cc9801c144"
        );
    }

    /// `session` became optional and `password_env` was added: a config
    /// written when `session` was required keeps the canonical form (so
    /// the digest) it was trusted by; the new key shows in it when set.
    #[test]
    fn an_opencode_doorbell_keeps_its_digest_and_shows_its_password_variable() {
        let canonical = |yaml: &str| {
            let settings = Settings::of(&config(&format!(
                "monitoring:\n  transports:\n    - type: opencode\n{yaml}"
            )));
            serde_json::to_string(&settings.transports).unwrap()
        };
        assert_eq!(
            canonical("      url: http://127.0.0.1:4096\n      session: ses_abc123\n"),
            r#"[{"type":"opencode","url":"http://127.0.0.1:4096","session":"ses_abc123"}]"#
        );
        assert_eq!(
            canonical("      url: http://127.0.0.1:4096\n      password_env: OC_PW\n"),
            r#"[{"type":"opencode","url":"http://127.0.0.1:4096","password_env":"OC_PW"}]"#
        );
        let settings = Settings::of(&config(
            "monitoring:\n  transports:\n    - type: opencode\n      url: http://127.0.0.1:4096\n      password_env: OC_PW\n",
        ));
        assert_eq!(
            settings.describe(),
            [
                "monitoring.transports[0] (opencode): posts to \"http://127.0.0.1:4096\" (the newest session of this repository; password from $OC_PW if set)"
            ]
        );
    }

    #[test]
    fn untrusted_settings_are_absent_and_trusted_ones_present() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join(FILE_NAME);
        let cfg =
            config("monitoring:\n  transports:\n    - type: command\n      program: /bin/true\n");
        let t = trusted_settings(&cfg, dir.path(), Some(&store)).unwrap();
        assert!(t.settings.is_empty());
        assert_eq!(t.ignored.keys(), ["monitoring.transports"]);
        let key = repo_key(dir.path()).unwrap();
        Store::update(&store, |s| {
            s.repos.insert(
                key,
                Entry {
                    digest: t.digest.clone(),
                    trusted_at: "now".into(),
                    settings: Vec::new(),
                },
            )
        })
        .unwrap();
        let t = trusted_settings(&cfg, dir.path(), Some(&store)).unwrap();
        assert_eq!(t.settings.transports.len(), 1);
        assert!(t.ignored.is_empty());
    }

    /// `aea trust --show` names the files a bridge takes: a Roo slug can
    /// name another agent's mailbox file, which "imports from
    /// .roo/mailbox" did not say.
    #[test]
    fn a_bridge_shows_the_files_it_takes() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(
            "bridges:\n  - protocol: roo\n    path: .roo/mailbox\n    slug: tester\n  \
             - protocol: oacp\n    path: /o/agents/web\n",
        );
        let t = trusted_settings(&cfg, dir.path(), None).unwrap();
        let lines = t.ignored.describe().join("\n");
        assert!(
            lines.contains("\".roo/mailbox/to-tester.md\" (relative to the repository)"),
            "{lines}"
        );
        assert!(lines.contains("\"/o/agents/web/inbox/*.yaml\""), "{lines}");
    }

    #[test]
    fn a_remote_that_looks_like_an_option_is_refused() {
        assert!(check_remote("--upload-pack=sh -c x").is_err());
        assert!(check_remote("-").is_err());
        assert!(check_remote("/srv/mail.git").is_ok());
        assert!(check_remote("ssh://host/mail.git").is_ok());
    }
}
