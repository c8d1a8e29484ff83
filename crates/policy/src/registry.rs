//! The user registry (SPEC §8): a TOML file mapping agent ids to repository
//! paths. Updates take a lock and replace the file atomically, so concurrent
//! `aea init` runs never lose each other's entries.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config;
use crate::error::{Error, Result};
use crate::foreign::Protocol;
use crate::fsutil;
use crate::words::word_enum;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The agent's public key (`ed25519:<hex>`), pinned like a known_hosts
    /// line: mail claiming this id must be signed by it (SPEC §15.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Accept unsigned mail from this id as from a known sender (bash AEA
    /// agents, which cannot sign). Off unless `aea agents trust --allow-unsigned`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_unsigned: bool,
    /// Empty for an agent that lives only behind a mail remote.
    #[serde(default)]
    pub path: PathBuf,
    /// The mail remote through which this agent is reached (SPEC §11).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// An OACP agent's folder (`<OACP_HOME>/projects/<p>/agents/<name>`):
    /// mail for this id is written into its `inbox/` as OACP YAML.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oacp: Option<PathBuf>,
    /// A Roo mailbox (`<repo>/.roo/mailbox`): mail for this id is written
    /// there as `to-<id>.md`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roo: Option<PathBuf>,
    #[serde(default)]
    pub description: String,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub registered: String,
}

impl Entry {
    /// The folder another protocol's files for this agent go into: an
    /// OACP agent's `inbox/`, or a Roo mailbox.
    pub fn foreign(&self) -> Option<(Protocol, PathBuf)> {
        match (&self.oacp, &self.roo) {
            (Some(agent), _) => Some((Protocol::Oacp, agent.join("inbox"))),
            (None, Some(mailbox)) => Some((Protocol::Roo, mailbox.clone())),
            (None, None) => None,
        }
    }
}

fn yes() -> bool {
    true
}

impl Default for Entry {
    fn default() -> Self {
        Entry {
            key: None,
            allow_unsigned: false,
            path: PathBuf::new(),
            remote: None,
            oacp: None,
            roo: None,
            description: String::new(),
            enabled: true,
            registered: String::new(),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Registry {
    #[serde(default)]
    pub agents: BTreeMap<String, Entry>,
}

word_enum! {
    /// What is wrong with an entry, if anything.
    pub enum Health {
        Ok = "ok",
        Disabled = "disabled",
        PathMissing = "path_missing",
        NotInitialized = "not_initialized",
        IdMismatch = "id_mismatch",
        /// Its `.aea/agent-config.yaml` does not read (or names no agent):
        /// its id cannot be told, so nothing is sent there.
        ConfigInvalid = "config_invalid",
        /// Reached through a mail remote, not on this machine.
        Remote = "remote",
        /// An OACP agent, reached through its inbox folder.
        Oacp = "oacp",
        /// A Roo agent, reached through its mailbox folder.
        Roo = "roo",
    }
}

impl Health {
    /// Words for people (`agents` list); `as_str` is the `--json` name.
    pub fn label(self) -> &'static str {
        match self {
            Health::Ok => "ok",
            Health::Disabled => "disabled",
            Health::PathMissing => "path missing",
            Health::NotInitialized => "no .aea/",
            Health::IdMismatch => "id mismatch",
            Health::ConfigInvalid => "config does not read",
            Health::Remote => "remote",
            Health::Oacp => "OACP inbox",
            Health::Roo => "Roo mailbox",
        }
    }
}

impl Registry {
    /// Reads the registry; a missing file is an empty registry.
    pub fn load(path: &Path) -> Result<Self> {
        match fsutil::read_optional(path)? {
            None => Ok(Registry::default()),
            Some(text) => toml::from_str(&text).map_err(|e| Error::RegistryCorrupt {
                path: path.to_path_buf(),
                detail: e.message().to_string(),
            }),
        }
    }

    /// Applies `change` under the registry lock and writes the result
    /// atomically. A corrupt registry is reported, never overwritten.
    pub fn update<T>(path: &Path, change: impl FnOnce(&mut Registry) -> Result<T>) -> Result<T> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, e))?;
        }
        let lock_path = path.with_extension("lock");
        let _lock = fsutil::lock(&lock_path)?;
        let mut registry = Registry::load(path)?;
        let result = change(&mut registry)?;
        let text = toml::to_string_pretty(&registry).expect("the registry always serialises");
        fsutil::replace_atomic(path, text.as_bytes())?;
        Ok(result)
    }

    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.agents.get(id)
    }

    /// What is wrong with `entry`, if anything. `inbox` is the `.aea/`
    /// folder of the repository at `entry.path` and `config` its config
    /// file, as the store's layout names them.
    pub fn health(id: &str, entry: &Entry, inbox: &Path, config: &Path) -> Health {
        if !entry.enabled {
            return Health::Disabled;
        }
        if entry.remote.is_some() && entry.path.as_os_str().is_empty() {
            return Health::Remote;
        }
        if let Some((protocol, dir)) = entry.foreign() {
            return match (fsutil::require_real_dir(&dir).is_ok(), protocol) {
                (false, _) => Health::PathMissing,
                (true, Protocol::Oacp) => Health::Oacp,
                (true, Protocol::Roo) => Health::Roo,
            };
        }
        if !entry.path.is_dir() {
            return Health::PathMissing;
        }
        if !inbox.is_dir() {
            return Health::NotInitialized;
        }
        match config::AgentConfig::load_file(config).map(|c| c.agent.id) {
            Ok(Some(actual)) if actual == id => Health::Ok,
            Ok(Some(_)) => Health::IdMismatch,
            Ok(None) | Err(_) => Health::ConfigInvalid,
        }
    }
}

/// `url` with the password of `scheme://user:password@host` replaced by
/// `***`, for a listing on a screen others may see.
pub fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rsplit_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}{}", &rest[authority_end..])
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_remote_hides_only_its_password() {
        assert_eq!(
            without_password("https://me:s3cret@git.example/mail.git"),
            "https://me:***@git.example/mail.git"
        );
        for kept in [
            "https://git.example/mail.git",
            "ssh://git@host/mail.git",
            "git@host:mail.git",
            "/srv/mail.git",
        ] {
            assert_eq!(without_password(kept), kept);
        }
    }

    #[test]
    fn update_round_trips_and_refuses_to_overwrite_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("reg").join("registry.toml");
        Registry::update(&path, |r| {
            r.agents.insert(
                "api".into(),
                Entry {
                    path: "/x/api".into(),
                    registered: "t".into(),
                    ..Entry::default()
                },
            );
            Ok(())
        })
        .unwrap();
        assert_eq!(
            Registry::load(&path).unwrap().get("api").unwrap().path,
            Path::new("/x/api")
        );

        std::fs::write(&path, "agents = [oops").unwrap();
        let err = Registry::update(&path, |_| Ok(())).unwrap_err();
        assert!(matches!(err, Error::RegistryCorrupt { .. }));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "agents = [oops");
    }
}

/// The bash AEA's registry (openSVM/aea `scripts/aea-registry.sh`):
/// `agents.yaml` next to aea's own registry, in the same config directory,
/// with `agents: {<id>: {path, enabled, description}}`. Read only, as a
/// second source: aea never writes it, and an entry of aea's own registry
/// wins. Entries reached over ssh (`host:`) are not used.
pub mod bash {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    use serde::Deserialize;

    pub const FILE_NAME: &str = "agents.yaml";

    #[derive(Deserialize)]
    struct File {
        #[serde(default)]
        agents: BTreeMap<String, Agent>,
    }

    #[derive(Deserialize)]
    struct Agent {
        path: Option<PathBuf>,
        #[serde(default = "yes")]
        enabled: bool,
        host: Option<serde::de::IgnoredAny>,
    }

    fn yes() -> bool {
        true
    }

    /// What the bash registry next to a registry says of an id.
    #[derive(Debug, PartialEq, Eq)]
    pub enum Lookup {
        /// An enabled, local entry with an absolute path.
        Found(PathBuf),
        /// No file, or no entry of that id.
        Absent,
        /// The file or the entry is there but names no repository aea can
        /// use: why, in a few words (no text of the file).
        Unusable(String),
    }

    /// The repository the bash registry next to `registry` names for `id`:
    /// enabled, local and absolute; otherwise why not, so that a broken
    /// file is named rather than taken for a missing entry.
    pub fn lookup(registry: &Path, id: &str) -> Lookup {
        let file = registry.with_file_name(FILE_NAME);
        let text = match crate::fsutil::read_optional(&file) {
            Ok(Some(text)) => text,
            Ok(None) => return Lookup::Absent,
            Err(e) => {
                return Lookup::Unusable(format!("unreadable ({})", crate::error::one_line(&e)));
            }
        };
        let parsed: File = match serde_saphyr::from_str(&text) {
            Ok(parsed) => parsed,
            Err(e) => match as_registered(&text).and_then(|t| serde_saphyr::from_str(&t).ok()) {
                Some(parsed) => parsed,
                None => return Lookup::Unusable(not_yaml(&e.to_string())),
            },
        };
        let Some(agent) = parsed.agents.get(id) else {
            return Lookup::Absent;
        };
        match &agent.path {
            _ if !agent.enabled => {
                Lookup::Unusable(format!("its entry {id} is disabled (`enabled: false`)"))
            }
            _ if agent.host.is_some() => Lookup::Unusable(format!(
                "its entry {id} is on another host (`host:`), which aea reaches only through a mail remote"
            )),
            None => Lookup::Unusable(format!("its entry {id} has no `path:`")),
            Some(path) if !path.is_absolute() => Lookup::Unusable(format!(
                "its entry {id} has a relative `path:`; it must be absolute"
            )),
            Some(path) => Lookup::Found(path.clone()),
        }
    }

    /// The parser's reason, cut to its first line and a bounded length:
    /// where the file stops being YAML (line and column) is what a person
    /// needs, not an echo of the file.
    fn not_yaml(reason: &str) -> String {
        let first = reason.lines().next().unwrap_or("").trim();
        let cut: String = first
            .chars()
            .filter(|c| !c.is_control())
            .take(160)
            .collect();
        format!("not YAML aea can read ({cut})")
    }

    /// The file as `aea-registry.sh` meant it, when its own commands left
    /// YAML no parser reads (its scripts read it with grep and awk):
    /// - it creates `agents: {}` and registers each repository by
    ///   inserting its entry, indented, right after that line: read as if
    ///   that line said `agents:`;
    /// - `disable ID` and `enable ID` rewrite an entry's `enabled:` line
    ///   with awk (`$2 = "false"`), which rebuilds the line from its fields
    ///   without its indent: such a line right after the entry's own lines
    ///   is read as the entry's.
    ///
    /// `None` when neither is what is wrong.
    fn as_registered(text: &str) -> Option<String> {
        let mut lines: Vec<&str> = text.lines().collect();
        let mut changed = false;
        if let Some(at) = lines.iter().position(|l| l.trim_end() == "agents: {}")
            && lines.get(at + 1).is_some_and(|next| next.starts_with("  "))
        {
            lines[at] = "agents:";
            changed = true;
        }
        let mut fixed: Vec<String> = Vec::with_capacity(lines.len());
        for line in lines {
            let in_entry = fixed.last().is_some_and(|l| l.starts_with("    "));
            if in_entry && matches!(line.trim_end(), "enabled: true" | "enabled: false") {
                fixed.push(format!("    {}", line.trim_end()));
                changed = true;
            } else {
                fixed.push(line.to_string());
            }
        }
        changed.then(|| fixed.join("\n") + "\n")
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// What the installer's auto-registration leaves: `agents: {}`,
        /// then the entry it inserted after that line.
        #[test]
        fn reads_the_registry_as_auto_registration_leaves_it() {
            let dir = tempfile::tempdir().unwrap();
            let registry = dir.path().join("registry.toml");
            let text = "# AEA Agent Registry\nversion: \"1.0\"\nagents: {}\n  claude-backend:\n    path: /src/backend\n    enabled: true\n    description: \"AEA-enabled repository\"\n\n# Example agent configuration:\n# agents:\n#   my-backend-agent:\n";
            assert!(
                serde_saphyr::from_str::<File>(text).is_err(),
                "not YAML as written"
            );
            std::fs::write(dir.path().join(FILE_NAME), text).unwrap();
            assert_eq!(
                lookup(&registry, "claude-backend"),
                Lookup::Found(PathBuf::from("/src/backend"))
            );
            // An empty registry and other broken files stay as they are.
            assert_eq!(as_registered("version: 1\nagents: {}\n"), None);
            assert_eq!(as_registered("agents:\n  - x\n"), None);
        }

        /// `aea-registry.sh disable` leaves `enabled: false` unindented in
        /// the entry; its `enable` leaves `enabled: true` so in the entry
        /// after (its awk never stops looking).
        #[test]
        fn reads_the_registry_as_disable_and_enable_leave_it() {
            let dir = tempfile::tempdir().unwrap();
            let registry = dir.path().join("registry.toml");
            let text = "version: \"1.0\"\nagents: {}\n  a:\n    path: /src/a\nenabled: false\n    description: \"A\"\n  b:\n    path: /src/b\nenabled: true\n    description: \"B\"\n\n# agents:\n";
            std::fs::write(dir.path().join(FILE_NAME), text).unwrap();
            match lookup(&registry, "a") {
                Lookup::Unusable(reason) => assert!(reason.contains("disabled"), "{reason}"),
                other => panic!("{other:?}"),
            }
            assert_eq!(
                lookup(&registry, "b"),
                Lookup::Found(PathBuf::from("/src/b"))
            );
            // Only right inside an entry, and only that line.
            assert_eq!(as_registered("enabled: false\nagents:\n"), None);
        }

        #[test]
        fn reads_what_aea_registry_sh_writes() {
            let dir = tempfile::tempdir().unwrap();
            let registry = dir.path().join("registry.toml");
            std::fs::write(
                dir.path().join(FILE_NAME),
                "# AEA Agent Registry\nversion: \"1.0\"\nagents:\n  claude-backend:\n    path: /src/backend\n    enabled: true\n    description: \"Backend\"\n  off:\n    path: /src/off\n    enabled: false\n  remote:\n    host: server.example.com\n    path: /opt/api\n    method: ssh\n    enabled: true\n  rel:\n    path: src/rel\n",
            )
            .unwrap();
            assert_eq!(
                lookup(&registry, "claude-backend"),
                Lookup::Found(PathBuf::from("/src/backend"))
            );
            assert_eq!(lookup(&registry, "nobody"), Lookup::Absent);
            for (id, why) in [
                ("off", "disabled"),
                ("remote", "another host"),
                ("rel", "relative"),
            ] {
                match lookup(&registry, id) {
                    Lookup::Unusable(reason) => assert!(reason.contains(why), "{id}: {reason}"),
                    other => panic!("{id}: {other:?}"),
                }
            }
        }

        /// A file no parser reads, even as auto-registration leaves it, is
        /// named with where it stops being YAML, not taken for "no entry";
        /// none of its text is echoed.
        #[test]
        fn a_broken_registry_says_where_it_breaks() {
            let dir = tempfile::tempdir().unwrap();
            let registry = dir.path().join("registry.toml");
            assert_eq!(lookup(&registry, "x"), Lookup::Absent, "no file");
            std::fs::write(
                dir.path().join(FILE_NAME),
                "agents:\n  api:\n    path: /src/api\n   \u{1b}[31mbroken: [\n",
            )
            .unwrap();
            match lookup(&registry, "api") {
                Lookup::Unusable(reason) => {
                    assert!(reason.starts_with("not YAML"), "{reason}");
                    assert!(reason.contains("line"), "says where: {reason}");
                    assert!(!reason.contains('\u{1b}'), "{reason}");
                    assert!(reason.len() < 200, "{reason}");
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
