//! `.aea/agent-config.yaml`: the repository's identity and policy (SPEC §6).
//! This module only reads the file into typed values; what the values mean
//! for a message is `policy`'s business.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fsutil;
use crate::message::check_agent_id;

pub const FILE_NAME: &str = "agent-config.yaml";
/// Where aea 0.1 cached the parsed config. Never read any more: its key
/// (size and time) let a sender forge the policy. `doctor` suggests
/// deleting a leftover one.
pub const STALE_CACHE_FILE: &str = ".config-cache.json";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentConfig {
    pub agent: AgentSection,
    pub response_policy: BTreeMap<String, TypePolicy>,
    pub auto_safe_operations: Vec<String>,
    pub approval_required_operations: Vec<String>,
    /// v1.0's monitoring settings; free-form here, read by `watch`/`monitor`.
    pub monitoring: Option<serde_json::Value>,
    pub rules: Vec<RuleConfig>,
    pub trust: TrustConfig,
    /// `None` (key absent) means the built-in list; `[]` means none.
    pub hard_stops: Option<Vec<String>>,
    pub hooks: HooksConfig,
    pub limits: LimitsConfig,
    pub sync: SyncConfig,
}

/// `sync:` — the git remote that carries mail between machines (SPEC §11).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SyncConfig {
    /// Any URL the user's git can reach: a bare repository path, ssh, https.
    pub remote: Option<String>,
}

/// One entry of `rules:`. Every given condition must hold; an absent one
/// matches anything.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RuleConfig {
    pub id: Option<String>,
    pub description: Option<String>,
    #[serde(rename = "type")]
    pub message_type: Option<OneOrMany>,
    pub priority: Option<OneOrMany>,
    pub min_priority: Option<String>,
    pub from: Option<OneOrMany>,
    pub subject: Option<OneOrMany>,
    pub tags: Option<OneOrMany>,
    pub action: Option<String>,
    pub operations: Option<Vec<String>>,
}

/// A YAML scalar or a list of them: `type: issue` or `type: [issue, request]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub fn items(&self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrustConfig {
    /// When present, senders matching none of these globs need approval.
    pub allow_senders: Option<Vec<String>>,
    /// Senders matching these globs are rejected.
    pub deny_senders: Vec<String>,
    /// What a sender that is neither registered nor allowed gets:
    /// `require_approval` (default), `reject` or `allow`.
    pub unknown_senders: Option<String>,
}

/// `hooks:` — what each git hook does (used by `aea hooks`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HooksConfig {
    pub pre_commit: Option<HookConfig>,
    pub post_merge: Option<HookConfig>,
    pub post_checkout: Option<HookConfig>,
    pub post_rewrite: Option<HookConfig>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HookConfig {
    pub enabled: Option<bool>,
    /// `pre-commit` only: `never`, `urgent_pending` or `gated_pending`.
    pub block_on: Option<String>,
    /// post-* hooks: run `aea sync` when mail may have arrived.
    pub sync: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LimitsConfig {
    pub max_message_bytes: Option<u64>,
    pub max_recipients: Option<usize>,
}

impl LimitsConfig {
    pub fn message_bytes(&self) -> u64 {
        self.max_message_bytes
            .unwrap_or(crate::message::MAX_MESSAGE_BYTES)
    }

    pub fn recipients(&self) -> usize {
        self.max_recipients.unwrap_or(DEFAULT_MAX_RECIPIENTS)
    }
}

/// At most this many recipients per broadcast unless `limits` says otherwise (SPEC §4).
pub const DEFAULT_MAX_RECIPIENTS: usize = 10;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentSection {
    pub id: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub capabilities: Vec<String>,
}

/// `response_policy.<type>`: settings for every priority, optionally refined
/// per priority (`response_policy.issue.urgent`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TypePolicy {
    #[serde(flatten)]
    pub base: PolicyEntry,
    pub low: Option<PolicyEntry>,
    pub normal: Option<PolicyEntry>,
    pub high: Option<PolicyEntry>,
    pub urgent: Option<PolicyEntry>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PolicyEntry {
    pub auto_respond: Option<bool>,
    pub approval_required: Option<bool>,
    pub notify_user: Option<bool>,
    pub actions: Option<Vec<String>>,
}

impl AgentConfig {
    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        let config: AgentConfig =
            serde_saphyr::from_str(text).map_err(|e| Error::ConfigInvalid {
                path: path.to_path_buf(),
                detail: first_line(&e.to_string()),
            })?;
        if let Some(id) = &config.agent.id {
            check_agent_id(id).map_err(|reason| Error::ConfigInvalid {
                path: path.to_path_buf(),
                detail: format!("agent.id {id:?} is not a valid agent id: {reason}"),
            })?;
        }
        Ok(config)
    }

    /// Loads `<aea_dir>/agent-config.yaml`: a regular file (never a symlink
    /// or FIFO), at most [`fsutil::STATE_LIMIT`] bytes, parsed every time.
    ///
    /// There is no cache: aea 0.1 kept the parsed form in
    /// `.aea/.config-cache.json` keyed by size and modification time, which
    /// anyone able to write `.aea/` could forge to replace the policy.
    /// Parsing costs about 0.1 ms per command (callgrind, see the commit
    /// that removed the cache), well inside the §14 budgets.
    pub fn load(aea_dir: &Path) -> Result<Self> {
        let path = aea_dir.join(FILE_NAME);
        let text = fsutil::read_optional(&path)?.ok_or_else(|| Error::ConfigInvalid {
            path: path.clone(),
            detail: "file is missing".into(),
        })?;
        Self::parse(&text, &path)
    }

    /// The configured agent id, which every repository must have.
    pub fn require_id(&self, aea_dir: &Path) -> Result<&str> {
        self.agent
            .id
            .as_deref()
            .ok_or_else(|| Error::ConfigInvalid {
                path: aea_dir.join(FILE_NAME),
                detail: "agent.id is missing".into(),
            })
    }
}

/// Reads just the agent id of another repository, `None` when its config is
/// missing or unreadable (callers report that as "no such agent").
pub fn peek_id(aea_dir: &Path) -> Option<String> {
    AgentConfig::load(aea_dir).ok()?.agent.id
}

/// serde-saphyr renders a source snippet after the first line; the first line
/// already names the line and column.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or(text).trim();
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}

// ---------------------------------------------------------------------------
// Unknown keys

/// The shape of the config file, for reporting keys this version does not
/// know (a typo such as `hard_stop:` must not silently drop a safeguard).
enum Shape {
    /// A mapping with exactly these keys.
    Map(&'static [(&'static str, Shape)]),
    /// A mapping whose keys come from `names`, each holding `Shape`.
    Keys(&'static [&'static str], &'static Shape),
    /// A list of items of one shape.
    List(&'static Shape),
    /// Anything: scalars, or sections owned by another feature.
    Any,
}

const ENTRY: Shape = Shape::Map(&[
    ("auto_respond", Shape::Any),
    ("approval_required", Shape::Any),
    ("notify_user", Shape::Any),
    ("actions", Shape::Any),
]);
const TYPE_POLICY: Shape = Shape::Map(&[
    ("auto_respond", Shape::Any),
    ("approval_required", Shape::Any),
    ("notify_user", Shape::Any),
    ("actions", Shape::Any),
    ("low", ENTRY),
    ("normal", ENTRY),
    ("high", ENTRY),
    ("urgent", ENTRY),
]);
const RULE: Shape = Shape::Map(&[
    ("id", Shape::Any),
    ("description", Shape::Any),
    ("type", Shape::Any),
    ("priority", Shape::Any),
    ("min_priority", Shape::Any),
    ("from", Shape::Any),
    ("subject", Shape::Any),
    ("tags", Shape::Any),
    ("action", Shape::Any),
    ("operations", Shape::Any),
]);
const HOOK: Shape = Shape::Map(&[
    ("enabled", Shape::Any),
    ("block_on", Shape::Any),
    ("sync", Shape::Any),
]);
const CONFIG: Shape = Shape::Map(&[
    (
        "agent",
        Shape::Map(&[
            ("id", Shape::Any),
            ("name", Shape::Any),
            ("description", Shape::Any),
            ("capabilities", Shape::Any),
        ]),
    ),
    (
        "response_policy",
        Shape::Keys(crate::message::MessageType::NAMES, &TYPE_POLICY),
    ),
    ("auto_safe_operations", Shape::Any),
    ("approval_required_operations", Shape::Any),
    ("monitoring", Shape::Any),
    ("rules", Shape::List(&RULE)),
    (
        "trust",
        Shape::Map(&[
            ("allow_senders", Shape::Any),
            ("deny_senders", Shape::Any),
            ("unknown_senders", Shape::Any),
        ]),
    ),
    ("hard_stops", Shape::Any),
    (
        "hooks",
        Shape::Map(&[
            ("pre_commit", HOOK),
            ("post_merge", HOOK),
            ("post_checkout", HOOK),
            ("post_rewrite", HOOK),
        ]),
    ),
    (
        "limits",
        Shape::Map(&[
            ("max_message_bytes", Shape::Any),
            ("max_recipients", Shape::Any),
        ]),
    ),
]);

/// Dotted paths of the keys in `text` that this version does not know.
/// Text that does not parse yields nothing here; `AgentConfig::parse`
/// reports it.
pub fn unknown_keys(text: &str) -> Vec<String> {
    let Ok(value) = serde_saphyr::from_str::<serde_json::Value>(text) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    walk(&value, &CONFIG, "", &mut found);
    found
}

fn walk(value: &serde_json::Value, shape: &Shape, path: &str, found: &mut Vec<String>) {
    let join = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    match (shape, value) {
        (Shape::Map(fields), serde_json::Value::Object(map)) => {
            for (key, child) in map {
                match fields.iter().find(|(name, _)| name == key) {
                    Some((_, inner)) => walk(child, inner, &join(key), found),
                    None => found.push(join(key)),
                }
            }
        }
        (Shape::Keys(names, inner), serde_json::Value::Object(map)) => {
            for (key, child) in map {
                if names.contains(&key.as_str()) {
                    walk(child, inner, &join(key), found);
                } else {
                    found.push(join(key));
                }
            }
        }
        (Shape::List(inner), serde_json::Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, inner, &format!("{path}[{i}]"), found);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ids_and_response_policy() {
        let text = "agent:\n  id: web\nresponse_policy:\n  question:\n    auto_respond: true\n    actions: [answer]\n  issue:\n    urgent:\n      approval_required: true\n";
        let config = AgentConfig::parse(text, Path::new("c.yaml")).unwrap();
        assert_eq!(config.agent.id.as_deref(), Some("web"));
        let question = &config.response_policy["question"];
        assert_eq!(question.base.auto_respond, Some(true));
        assert_eq!(
            question.base.actions.as_deref(),
            Some(&["answer".to_string()][..])
        );
        let issue = &config.response_policy["issue"];
        assert_eq!(issue.urgent.as_ref().unwrap().approval_required, Some(true));
    }

    #[test]
    fn reports_the_line_of_a_syntax_error() {
        let err = AgentConfig::parse("agent:\n  id: [web\n", Path::new("c.yaml")).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("c.yaml: "), "{text}");
        assert!(text.contains("line"), "{text}");
    }

    #[test]
    fn refuses_an_invalid_id() {
        let err = AgentConfig::parse("agent:\n  id: ../x\n", Path::new("c.yaml")).unwrap_err();
        assert!(err.to_string().contains("not a valid agent id"));
    }

    #[test]
    fn reads_rules_trust_and_limits() {
        let text = "rules:\n  - id: ops\n    type: [issue, request]\n    from: ops-*\n    action: require_approval\ntrust:\n  deny_senders: [evil]\nlimits:\n  max_recipients: 3\n";
        let config = AgentConfig::parse(text, Path::new("c")).unwrap();
        assert_eq!(config.rules[0].id.as_deref(), Some("ops"));
        assert_eq!(
            config.rules[0].message_type.as_ref().unwrap().items(),
            ["issue", "request"]
        );
        assert_eq!(config.rules[0].from, Some(OneOrMany::One("ops-*".into())));
        assert_eq!(config.trust.deny_senders, ["evil"]);
        assert_eq!(config.limits.recipients(), 3);
        assert_eq!(
            config.limits.message_bytes(),
            crate::message::MAX_MESSAGE_BYTES
        );
        assert!(config.hard_stops.is_none());
    }

    #[test]
    fn finds_unknown_keys_at_any_depth() {
        let text = "agent:\n  id: web\n  colour: blue\nhard_stop: [x]\nresponse_policy:\n  questoin: {}\n  issue:\n    urgent:\n      aproval_required: true\nrules:\n  - action: reject\n    sender: x\nmonitoring:\n  anything: goes\n";
        assert_eq!(
            unknown_keys(text),
            [
                "agent.colour",
                "hard_stop",
                "response_policy.questoin",
                "response_policy.issue.urgent.aproval_required",
                "rules[0].sender",
            ]
        );
        assert!(unknown_keys(&crate::templates::policy("default", "x").unwrap()).is_empty());
    }

    #[test]
    fn a_forged_cache_is_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let text = crate::templates::policy("strict", "web").unwrap();
        std::fs::write(dir.path().join(FILE_NAME), &text).unwrap();
        let forged = AgentConfig {
            agent: AgentSection {
                id: Some("forged".into()),
                ..AgentSection::default()
            },
            ..AgentConfig::default()
        };
        std::fs::write(
            dir.path().join(STALE_CACHE_FILE),
            serde_json::to_vec(&serde_json::json!({"key": "x", "config": forged})).unwrap(),
        )
        .unwrap();
        let loaded = AgentConfig::load(dir.path()).unwrap();
        assert_eq!(loaded, AgentConfig::parse(&text, Path::new("c")).unwrap());
    }

    #[test]
    fn numeric_looking_ids_are_read_as_text() {
        let config = AgentConfig::parse("agent:\n  id: 1234\n", Path::new("c")).unwrap();
        assert_eq!(config.agent.id.as_deref(), Some("1234"));
    }
}
