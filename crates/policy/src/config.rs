//! `.aea/agent-config.yaml`: the repository's identity and policy (SPEC §6).
//! This module only reads the file into typed values; what the values mean
//! for a message is `policy`'s business. Where the file is, the caller
//! says: the store's layout owns the names under `.aea/`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer, Serialize};

use crate::doorbell::{Backoff, DAY, Transport};
use crate::duration::Duration;
use crate::error::{ConfigProblem, Error, Result};
use crate::fsutil;
use crate::message::check_agent_id;
use crate::words::word_enum;

/// The `agent.id` the bash AEA's `install-aea.sh` writes: the shell
/// expression sits in a quoted heredoc, so it reaches the file unevaluated.
/// Its own scripts never read the key and name the agent
/// `claude-<directory name>` (openSVM/aea `scripts/aea-send.sh`), so that
/// is what this id means.
pub(crate) const BASH_PLACEHOLDER_ID: &str = "claude-$(basename $(pwd))";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    pub agent: AgentSection,
    pub response_policy: BTreeMap<String, TypePolicy>,
    pub auto_safe_operations: Vec<String>,
    pub approval_required_operations: Vec<String>,
    /// How `aea monitor` rings (SPEC §10).
    pub monitoring: Option<MonitoringConfig>,
    pub rules: Vec<RuleConfig>,
    pub trust: TrustConfig,
    /// `None` (key absent) means the built-in list; `[]` means none.
    pub hard_stops: Option<Vec<String>>,
    pub hooks: HooksConfig,
    pub limits: LimitsConfig,
    /// How a person's approval is made (SPEC §19).
    pub approvals: ApprovalsConfig,
    pub sync: SyncConfig,
    /// Other protocols' folders that `aea bridge` imports from (SPEC §12).
    /// They make aea read and delete files outside `.aea/`, so they take
    /// effect only through [`crate::config_trust`] after `aea trust`.
    pub bridges: Vec<BridgeConfig>,
}

/// One entry of `bridges:`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct BridgeConfig {
    pub protocol: crate::foreign::Protocol,
    /// OACP: this agent's folder (`<OACP_HOME>/projects/<p>/agents/<name>`),
    /// whose `inbox/` is read. Roo: the mailbox folder (`.roo/mailbox`).
    /// Relative to the repository.
    pub path: std::path::PathBuf,
    /// Roo: the slug our mail is named for, `to-<slug>.md` (default: this
    /// agent's id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
}

/// `sync:` — the git remote that carries mail between machines (SPEC §11).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SyncConfig {
    /// Any URL the user's git can reach: a bare repository path, ssh, https.
    pub remote: Option<String>,
}

/// `monitoring:` — the doorbells of `aea monitor` and their timing (SPEC
/// §10). `transports` run programs and reach hosts, so they take effect only
/// through [`crate::config_trust`] after `aea trust`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MonitoringConfig {
    pub transports: Vec<Transport>,
    /// First retry after this long (default 1m), doubling up to `retry_max`
    /// (default 30m).
    #[serde(deserialize_with = "retry_initial")]
    pub retry_initial: Option<Duration>,
    #[serde(deserialize_with = "retry_max")]
    pub retry_max: Option<Duration>,
    /// Quiet time that ends a burst of arrivals (default 200ms, at most 2s
    /// of waiting).
    #[serde(deserialize_with = "debounce")]
    pub debounce: Option<Duration>,
    /// What the bash AEA wrote here (openSVM/aea `scripts/install-aea.sh`:
    /// `enabled`, `log_file`, `check_interval`; its `agent-config.yaml`
    /// adds `watch_directories`, `auto_process`). Read so that its configs
    /// keep working, and never used: aea's monitor starts with `aea
    /// monitor start`, wakes on file events and logs to `.aea/agent.log`.
    #[serde(skip_serializing)]
    pub enabled: Option<IgnoredAny>,
    #[serde(skip_serializing)]
    pub log_file: Option<IgnoredAny>,
    #[serde(skip_serializing)]
    pub check_interval: Option<IgnoredAny>,
    #[serde(skip_serializing)]
    pub watch_directories: Option<IgnoredAny>,
    #[serde(skip_serializing)]
    pub auto_process: Option<IgnoredAny>,
}

impl MonitoringConfig {
    /// The retry schedule: 1m doubling to 30m unless configured.
    pub fn backoff(&self) -> Backoff {
        let or = |d: Option<Duration>, default| d.map_or(default, |d| d.capped(DAY).std());
        Backoff {
            initial: or(self.retry_initial, std::time::Duration::from_secs(60)),
            max: or(self.retry_max, std::time::Duration::from_secs(1800)),
        }
    }
}

/// A duration under `monitoring:` whose error names its key: serde-saphyr
/// gives the line, the key says which setting it is.
fn keyed_duration<'de, D: Deserializer<'de>>(
    deserializer: D,
    key: &str,
) -> std::result::Result<Option<Duration>, D::Error> {
    let Some(text) = Option::<String>::deserialize(deserializer)? else {
        return Ok(None);
    };
    text.parse()
        .map(Some)
        .map_err(|e| serde::de::Error::custom(format!("{key}: {e}")))
}

/// A duration that repeats something: zero would repeat without pause
/// (a monitor ringing in a busy loop), so it is refused like a bad value.
fn keyed_period<'de, D: Deserializer<'de>>(
    deserializer: D,
    key: &str,
) -> std::result::Result<Option<Duration>, D::Error> {
    let Some(text) = Option::<String>::deserialize(deserializer)? else {
        return Ok(None);
    };
    text.parse::<crate::duration::Period>()
        .map(|p| Some(Duration::from_std(p.std())))
        .map_err(|e| serde::de::Error::custom(format!("{key}: {e}")))
}

fn retry_initial<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Duration>, D::Error> {
    keyed_period(d, "monitoring.retry_initial")
}

fn retry_max<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Duration>, D::Error> {
    keyed_period(d, "monitoring.retry_max")
}

fn debounce<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Duration>, D::Error> {
    keyed_duration(d, "monitoring.debounce")
}

/// One entry of `rules:`. Every given condition must hold; an absent one
/// matches anything.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
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
    pub(crate) fn items(&self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
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
#[serde(default, deny_unknown_fields)]
pub struct HooksConfig {
    pub pre_commit: Option<HookConfig>,
    pub post_merge: Option<HookConfig>,
    pub post_checkout: Option<HookConfig>,
    pub post_rewrite: Option<HookConfig>,
}

word_enum! {
    /// The git hooks aea installs, by git's names, in the order they are
    /// installed and listed (`aea hooks run <hook>` takes one of these).
    pub enum GitHook {
        /// Summarises waiting mail and blocks where the policy says.
        PreCommit = "pre-commit",
        PostMerge = "post-merge",
        PostCheckout = "post-checkout",
        PostRewrite = "post-rewrite",
    }
}

impl GitHook {
    /// Its key under `hooks:` in agent-config.yaml (`post_merge`).
    pub(crate) fn config_key(self) -> &'static str {
        match self {
            GitHook::PreCommit => "pre_commit",
            GitHook::PostMerge => "post_merge",
            GitHook::PostCheckout => "post_checkout",
            GitHook::PostRewrite => "post_rewrite",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HookConfig {
    pub enabled: Option<bool>,
    /// `pre-commit` only: when the commit is blocked.
    pub block_on: Option<BlockOn>,
    /// post-* hooks: run `aea sync` when mail may have arrived.
    pub sync: Option<bool>,
}

/// `hooks.pre_commit.block_on`: a closed set, so a typo is an error, not
/// "never".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum BlockOn {
    #[default]
    Never,
    /// Urgent mail waiting for a person's approval.
    UrgentPending,
    /// Any mail waiting for a person's approval.
    GatedPending,
}

/// Read from a string so that a list or a map gets "expected a string"
/// rather than serde's wording for enums.
impl TryFrom<String> for BlockOn {
    type Error = String;

    fn try_from(text: String) -> std::result::Result<Self, String> {
        match text.as_str() {
            "never" => Ok(BlockOn::Never),
            "urgent_pending" => Ok(BlockOn::UrgentPending),
            "gated_pending" => Ok(BlockOn::GatedPending),
            other => Err(format!(
                "hooks.pre_commit.block_on: unknown value {other:?} (one of never, urgent_pending, gated_pending)"
            )),
        }
    }
}

/// `approvals:` — how a person's approval is made (SPEC §19).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalsConfig {
    /// Approvals and rejections count only when signed with an approver's
    /// SSH key (`aea approvers`). The user can require it too; either one
    /// requiring it is enough, so a committed `false` loosens nothing.
    pub require_signature: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    pub max_message_bytes: Option<u64>,
    pub max_recipients: Option<usize>,
    /// `agent.log` is rotated once it reaches this size (SPEC §7).
    pub log_bytes: Option<u64>,
    /// How many rotated files (`agent.log.1` … `agent.log.N`) are kept;
    /// absent: all of them, since the log is append-only (SPEC §7).
    pub log_files: Option<u32>,
    /// Past this many processed messages in the inbox, a command that
    /// lists it starts `aea gc --auto` in the background, which archives
    /// the oldest until half remain; `0` never does.
    pub auto_gc_over: Option<u64>,
    /// How many times in a row an agent-harness hook may keep a turn going
    /// at its Stop because new mail came, before it waits for the next
    /// prompt or session start; `0` never does.
    pub stop_continuations: Option<u32>,
}

impl LimitsConfig {
    pub fn message_bytes(&self) -> u64 {
        self.max_message_bytes
            .unwrap_or(crate::message::MAX_MESSAGE_BYTES)
    }

    pub fn recipients(&self) -> usize {
        self.max_recipients.unwrap_or(DEFAULT_MAX_RECIPIENTS)
    }

    /// [`LimitsConfig::stop_continuations`], or its default.
    pub fn stop_continuations(&self) -> u32 {
        self.stop_continuations
            .unwrap_or(DEFAULT_STOP_CONTINUATIONS)
    }

    /// [`LimitsConfig::auto_gc_over`]; `None` when it is off.
    pub fn auto_gc(&self) -> Option<u64> {
        Some(self.auto_gc_over.unwrap_or(DEFAULT_AUTO_GC_OVER)).filter(|n| *n > 0)
    }
}

/// Processed messages the inbox may hold before aea archives the oldest
/// on its own, unless `limits.auto_gc_over` says otherwise.
pub(crate) const DEFAULT_AUTO_GC_OVER: u64 = 10_000;

/// Stops in a row a harness hook continues for new mail: two agents that
/// answer each other, or a peer that mails before every model call, would
/// otherwise keep one session running without end.
pub const DEFAULT_STOP_CONTINUATIONS: u32 = 3;

/// At most this many recipients per broadcast unless `limits` says otherwise (SPEC §4).
pub(crate) const DEFAULT_MAX_RECIPIENTS: usize = 10;
/// The range `limits.max_message_bytes` may take: a message must hold its
/// own envelope, and a larger cap would let one file exhaust memory.
pub const MESSAGE_BYTES_RANGE: std::ops::RangeInclusive<u64> = 1024..=64 * 1024 * 1024;
/// The range `limits.max_recipients` may take.
pub(crate) const RECIPIENTS_RANGE: std::ops::RangeInclusive<usize> = 1..=1000;
/// The range `limits.log_bytes` may take: a few lines at least, and under
/// the cap `aea log` reads of one file.
pub(crate) const LOG_BYTES_RANGE: std::ops::RangeInclusive<u64> = 1024..=64 * 1024 * 1024;
/// The range `limits.log_files` may take.
pub(crate) const LOG_FILES_RANGE: std::ops::RangeInclusive<u32> = 1..=1_000_000;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentSection {
    pub id: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub capabilities: Vec<String>,
    /// The agent's Ed25519 public key (signing, SPEC §15.2).
    pub public_key: Option<String>,
}

/// `response_policy.<type>`: settings for every priority, optionally refined
/// per priority (`response_policy.issue.urgent`).
///
/// Read through [`TypePolicyFields`]: serde cannot refuse unknown keys next
/// to a `flatten`ed field, and an unknown key here (`aproval_required`)
/// would silently drop a safeguard.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "TypePolicyFields")]
pub struct TypePolicy {
    #[serde(flatten)]
    pub base: PolicyEntry,
    pub low: Option<PolicyEntry>,
    pub normal: Option<PolicyEntry>,
    pub high: Option<PolicyEntry>,
    pub urgent: Option<PolicyEntry>,
}

/// `response_policy.<type>` as written: the type's own keys and one entry
/// per priority, nothing else.
#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct TypePolicyFields {
    auto_respond: Option<bool>,
    approval_required: Option<bool>,
    notify_user: Option<bool>,
    actions: Option<Vec<String>>,
    low: Option<PolicyEntry>,
    /// `medium` is the bash AEA installer's name for it (its
    /// `response_policy.issue.medium`, "low/medium" issues in its protocol
    /// text): the level between low and high, which v1.0 calls normal.
    #[serde(alias = "medium")]
    normal: Option<PolicyEntry>,
    high: Option<PolicyEntry>,
    urgent: Option<PolicyEntry>,
}

impl From<TypePolicyFields> for TypePolicy {
    fn from(f: TypePolicyFields) -> Self {
        TypePolicy {
            base: PolicyEntry {
                auto_respond: f.auto_respond,
                approval_required: f.approval_required,
                notify_user: f.notify_user,
                actions: f.actions,
            },
            low: f.low,
            normal: f.normal,
            high: f.high,
            urgent: f.urgent,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyEntry {
    pub auto_respond: Option<bool>,
    pub approval_required: Option<bool>,
    pub notify_user: Option<bool>,
    pub actions: Option<Vec<String>>,
}

/// The id a bash AEA install at `<repo>/.aea/agent-config.yaml` goes by:
/// `claude-<repo directory name>`, made into a valid id.
fn bash_agent_id(config_path: &Path) -> Option<String> {
    let absolute = std::path::absolute(config_path).ok()?;
    let repo = absolute.parent()?.parent()?;
    let name = repo.file_name()?.to_string_lossy();
    Some(crate::message::sanitize_agent_id(&format!("claude-{name}")))
}

impl AgentConfig {
    /// Reads and checks a config: the types refuse unknown keys, values of
    /// the wrong kind and unknown names of closed sets (serde itself, so
    /// what is checked is exactly what is read); then ids, the
    /// `response_policy` types and `limits` are checked for range.
    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        let invalid = |problem: ConfigProblem| Error::ConfigInvalid {
            path: path.to_path_buf(),
            problem,
        };
        let mut config: AgentConfig =
            serde_saphyr::from_str(text).map_err(|e| invalid(yaml_problem(&e, text)))?;
        if config.agent.id.as_deref() == Some(BASH_PLACEHOLDER_ID)
            && let Some(id) = bash_agent_id(path)
        {
            config.agent.id = Some(id);
        }
        if let Some(id) = &config.agent.id {
            check_agent_id(id).map_err(|reason| {
                invalid(ConfigProblem::value(
                    "agent.id",
                    format!("{id:?} is not a valid agent id: {reason}"),
                ))
            })?;
        }
        let names = crate::message::MessageType::NAMES;
        if let Some(kind) = config
            .response_policy
            .keys()
            .find(|k| !names.contains(&k.as_str()))
        {
            return Err(invalid(ConfigProblem::value(
                format!("response_policy.{kind}"),
                format!("unknown message type (one of {})", names.join(", ")),
            )));
        }
        if let Some(n) = config.limits.max_message_bytes
            && !MESSAGE_BYTES_RANGE.contains(&n)
        {
            return Err(invalid(ConfigProblem::value(
                "limits.max_message_bytes",
                format!(
                    "{n} is out of range ({} to {})",
                    MESSAGE_BYTES_RANGE.start(),
                    MESSAGE_BYTES_RANGE.end()
                ),
            )));
        }
        if let Some(n) = config.limits.max_recipients
            && !RECIPIENTS_RANGE.contains(&n)
        {
            return Err(invalid(ConfigProblem::value(
                "limits.max_recipients",
                format!(
                    "{n} is out of range ({} to {})",
                    RECIPIENTS_RANGE.start(),
                    RECIPIENTS_RANGE.end()
                ),
            )));
        }
        check_range(
            "limits.log_bytes",
            config.limits.log_bytes,
            &LOG_BYTES_RANGE,
        )
        .map_err(invalid)?;
        check_range(
            "limits.log_files",
            config.limits.log_files,
            &LOG_FILES_RANGE,
        )
        .map_err(invalid)?;
        Ok(config)
    }

    /// Loads the config file at `path` (`.aea/agent-config.yaml`): a
    /// regular file (never a symlink or FIFO), at most
    /// [`fsutil::STATE_LIMIT`] bytes, parsed every time.
    ///
    /// There is no cache: aea 0.1 kept the parsed form in
    /// `.aea/.config-cache.json` keyed by size and modification time, which
    /// anyone able to write `.aea/` could forge to replace the policy.
    /// Parsing costs about 0.1 ms per command (callgrind, see the commit
    /// that removed the cache), well inside the §14 budgets.
    pub fn load_file(path: &Path) -> Result<Self> {
        let text = fsutil::read_optional(path)?.ok_or_else(|| Error::ConfigInvalid {
            path: path.to_path_buf(),
            problem: ConfigProblem::Missing,
        })?;
        Self::parse(&text, path)
    }

    /// The configured agent id, which every repository must have; `path`
    /// (the config file) names the file in the error.
    pub fn require_id(&self, path: &Path) -> Result<&str> {
        self.agent
            .id
            .as_deref()
            .ok_or_else(|| Error::ConfigInvalid {
                path: path.to_path_buf(),
                problem: ConfigProblem::value("agent.id", "missing"),
            })
    }
}

/// A config error naming `key` when its value lies outside `range`.
fn check_range<T: PartialOrd + std::fmt::Display>(
    key: &'static str,
    value: Option<T>,
    range: &std::ops::RangeInclusive<T>,
) -> std::result::Result<(), ConfigProblem> {
    match value {
        Some(n) if !range.contains(&n) => Err(ConfigProblem::value(
            key,
            format!("{n} is out of range ({} to {})", range.start(), range.end()),
        )),
        _ => Ok(()),
    }
}

/// The `limits.max_message_bytes` of a config that does not read as a
/// whole (a typo elsewhere, an unknown key): the receiver's size limit
/// holds even then, like its policy falls back to the strictest. Without a
/// readable value in range, the built-in limit. `path` is the config file.
pub fn salvage_message_limit(path: &Path) -> u64 {
    #[derive(Deserialize)]
    struct Only {
        limits: Option<OnlyLimits>,
    }
    #[derive(Deserialize)]
    struct OnlyLimits {
        max_message_bytes: Option<u64>,
    }
    fsutil::read_optional(path)
        .ok()
        .flatten()
        .and_then(|text| serde_saphyr::from_str::<Only>(&text).ok())
        .and_then(|c| c.limits?.max_message_bytes)
        .filter(|n| MESSAGE_BYTES_RANGE.contains(n))
        .unwrap_or(crate::message::MAX_MESSAGE_BYTES)
}

/// Reads just the agent id of another repository from its config file at
/// `path`, `None` when it is missing or unreadable (callers report that as
/// "no such agent").
pub fn peek_id(path: &Path) -> Option<String> {
    AgentConfig::load_file(path).ok()?.agent.id
}

/// A YAML error as the file's author should read it: serde-saphyr's
/// wording for users (its default one advises programmers, e.g. "set
/// DuplicateKeyPolicy in Options"), without its source snippet, and the
/// line and column apart so that the hint can name them.
fn yaml_problem(err: &serde_saphyr::Error, text: &str) -> ConfigProblem {
    use serde_saphyr::MessageFormatter as _;
    let err = err.without_snippet();
    let message = serde_saphyr::UserMessageFormatter.format_message(err);
    let location = err.location().filter(|l| l.line() > 0);
    let line = location.map(|l| l.line());
    let message = message.lines().next().unwrap_or_default().trim();
    // Only the parser's own words for a shape or a type it did not expect
    // can come of indentation; a value a setting refuses says why itself.
    let structural = [
        "invalid boolean",
        "invalid integer",
        "invalid float",
        "unexpected event",
    ]
    .iter()
    .any(|start| message.starts_with(start));
    let message = unknown_key(message)
        .or_else(|| {
            line.filter(|_| structural)
                .and_then(|l| indentation(text, l))
        })
        .unwrap_or_else(|| message.to_string());
    ConfigProblem::Yaml {
        line,
        column: location.map(|l| l.column()).filter(|&c| c > 0),
        message: escape(&message),
    }
}

/// "unknown field `limit`, expected one of agent, …" (cut short where
/// printed) as a person reads it: the key, and the one it was likely
/// meant to be, else every key that goes there.
fn unknown_key(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (key, rest) = rest.split_once('`')?;
    let known: Vec<String> = rest
        .split_once("expected one of ")
        .map(|(_, list)| {
            list.split(", ")
                .map(|k| k.trim_matches('`').to_string())
                .collect()
        })
        .or_else(|| {
            rest.split_once("expected ")
                .map(|(_, one)| vec![one.trim_matches('`').to_string()])
        })
        .unwrap_or_default();
    Some(match crate::words::closest(key, &known) {
        Some(near) => format!("unknown key `{key}`: did you mean `{near}`?"),
        None if known.is_empty() => format!("unknown key `{key}`"),
        None => format!(
            "unknown key `{key}`; the keys here are {}",
            known.join(", ")
        ),
    })
}

/// A YAML error that comes of indentation, said as such: serde-saphyr
/// reports what the misplaced line turned into ("invalid boolean" for a
/// value that swallowed the next line, "expected mapping start" for a key
/// left empty), not where the indent went wrong.
fn indentation(text: &str, line: u64) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let at = usize::try_from(line).ok()?.checked_sub(1)?;
    let indent = |l: &str| l.len() - l.trim_start().len();
    let this = lines.get(at)?;
    let next = lines[at + 1..]
        .iter()
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let has_value = |l: &str| l.split_once(':').is_some_and(|(_, v)| !v.trim().is_empty());
    if let Some(next) = next
        && indent(next) > indent(this)
        && has_value(this)
    {
        return Some(format!(
            "line {} is indented further than line {line}, which already has a value: check the indentation",
            line + 1
        ));
    }
    let previous = lines[..at]
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    if let Some(previous) = previous
        && previous.trim_end().ends_with(':')
        && indent(this) <= indent(previous)
    {
        return Some(format!(
            "`{}` has nothing under it: indent the lines that belong to it further than it",
            previous.trim()
        ));
    }
    None
}

/// The error quotes keys and values of a file someone else may have
/// written (a cloned repository): no control or bidi character of it
/// reaches a terminal or a hook's output raw.
fn escape(line: &str) -> String {
    line.chars()
        .map(|c| {
            if c.is_control() || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') {
                format!("\\u{{{:x}}}", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect()
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
        let text = crate::error::one_line(&err);
        assert!(
            text.starts_with("c.yaml is not a valid aea config: line 2"),
            "{text}"
        );
        assert!(text.contains("line"), "{text}");
    }

    #[test]
    fn refuses_an_invalid_id() {
        let err = AgentConfig::parse("agent:\n  id: ../x\n", Path::new("c.yaml")).unwrap_err();
        assert!(crate::error::one_line(&err).contains("not a valid agent id"));
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
    fn unknown_keys_at_any_depth_are_errors() {
        for (yaml, key) in [
            ("agent:\n  id: web\n  colour: blue\n", "colour"),
            ("hard_stop: [x]\n", "hard_stop"),
            ("response_policy:\n  questoin: {}\n", "questoin"),
            (
                "response_policy:\n  issue:\n    urgent:\n      aproval_required: true\n",
                "aproval_required",
            ),
            (
                "response_policy:\n  issue:\n    aproval_required: true\n",
                "aproval_required",
            ),
            ("rules:\n  - action: reject\n    sender: x\n", "sender"),
            ("sync:\n  remot: x\n", "remot"),
            ("monitoring:\n  retyr_initial: 1s\n", "retyr_initial"),
            (
                "monitoring:\n  transports:\n    - type: desktop\n      target: x\n",
                "target",
            ),
            (
                "monitoring:\n  transports:\n    - type: command\n      program: /bin/true\n      arg: [x]\n",
                "arg",
            ),
        ] {
            let err = AgentConfig::parse(yaml, Path::new("c")).unwrap_err();
            assert!(crate::error::one_line(&err).contains(key), "{yaml}: {err}");
        }
        let ok = "agent:\n  id: web\n  public_key: ed25519:abc\nsync:\n  remote: /srv/m.git\nmonitoring:\n  debounce: 1s\n";
        AgentConfig::parse(ok, Path::new("c")).unwrap();
    }

    #[test]
    fn monitoring_is_typed_and_names_the_key_of_a_bad_duration() {
        let text = "monitoring:\n  retry_initial: 5s\n  retry_max: 1h\n  debounce:\n  transports:\n    - type: tmux\n      target: a:0\n";
        let config = AgentConfig::parse(text, Path::new("c")).unwrap();
        let monitoring = config.monitoring.unwrap();
        assert_eq!(monitoring.backoff().initial.as_secs(), 5);
        assert_eq!(monitoring.backoff().max.as_secs(), 3600);
        assert_eq!(monitoring.debounce, None);
        assert_eq!(monitoring.transports[0].name(), "tmux");
        for key in ["retry_initial", "retry_max", "debounce"] {
            let yaml = format!("monitoring:\n  {key}: abc\n");
            let err =
                crate::error::one_line(&AgentConfig::parse(&yaml, Path::new("c")).unwrap_err());
            assert!(
                err.contains(&format!("monitoring.{key}: \"abc\" is not a duration")),
                "{err}"
            );
            assert!(err.contains("line 2"), "{err}");
        }
    }

    /// What the bash AEA wrote under `monitoring:` (openSVM/aea
    /// `scripts/install-aea.sh`, and the `agent-config.yaml` its
    /// `install.sh` downloads) still reads, and means nothing.
    #[test]
    fn a_bash_monitoring_section_still_reads() {
        let text = "monitoring:\n  enabled: true\n  log_file: \".aea/agent.log\"\n  check_interval: 60  # seconds\n  watch_directories:\n    - \"./.aea\"\n  auto_process:\n    - message_type: \"question\"\n      requires_response: true\n      action: \"auto_respond\"\n    - message_type: \"issue\"\n      severity: [\"high\", \"urgent\"]\n      action: \"notify_and_wait_approval\"\n";
        let config = AgentConfig::parse(text, Path::new("c")).unwrap();
        let monitoring = config.monitoring.unwrap();
        assert!(monitoring.transports.is_empty());
        assert_eq!(monitoring.backoff().initial.as_secs(), 60);
    }

    /// install-aea.sh writes `id: "claude-$(basename $(pwd))"` unevaluated;
    /// it means `claude-<repo directory>`, as its scripts name the agent.
    #[test]
    fn the_bash_placeholder_id_is_the_directory_name() {
        let text = "agent:\n  id: \"claude-$(basename $(pwd))\"\n  description: \"Agent for $(basename $(pwd))\"\n";
        let path = Path::new("/work/my repo/.aea/agent-config.yaml");
        let config = AgentConfig::parse(text, path).unwrap();
        assert_eq!(config.agent.id.as_deref(), Some("claude-my-repo"));
        let other = AgentConfig::parse("agent:\n  id: \"$(whoami)\"\n", path);
        assert!(
            other.is_err(),
            "only the installer's own expression is read"
        );
    }

    #[test]
    fn closed_sets_wrong_kinds_and_limits_are_errors() {
        for (yaml, needle) in [
            (
                "hooks:\n  pre_commit:\n    block_on: urgent_pendng\n",
                "urgent_pendng",
            ),
            (
                "hooks:\n  pre_commit:\n    block_on: [urgent_pending]\n",
                "line 3",
            ),
            ("agent:\n  id: web\nagent:\n  id: [web\n", "line"),
            (
                "limits:\n  max_message_bytes: 18446744073709551615\n",
                "out of range",
            ),
            ("limits:\n  max_message_bytes: 0\n", "out of range"),
            ("limits:\n  max_recipients: 0\n", "out of range"),
            ("limits:\n  log_bytes: 10\n", "limits.log_bytes"),
            ("limits:\n  log_files: 0\n", "limits.log_files"),
            ("limits:\n  log_files: all\n", "line 2"),
        ] {
            let err = AgentConfig::parse(yaml, Path::new("c")).unwrap_err();
            assert!(
                crate::error::one_line(&err).contains(needle),
                "{yaml}: {err}"
            );
        }
        let c = AgentConfig::parse(
            "hooks:\n  pre_commit:\n    block_on: gated_pending\n",
            Path::new("c"),
        )
        .unwrap();
        assert_eq!(
            c.hooks.pre_commit.unwrap().block_on,
            Some(BlockOn::GatedPending)
        );
        let err = crate::policy::Checked::parse("rules:\n  - action: rejekt\n", Path::new("c"))
            .unwrap_err();
        assert!(crate::error::one_line(&err).contains("rejekt"), "{err}");
    }

    #[test]
    fn a_forged_cache_is_never_read() {
        // Where aea 0.1 cached the parsed config. Never read any more: its
        // key (size and time) let a sender forge the policy. `doctor`
        // suggests deleting a leftover one (`layout::OLD_STATE_NAMES`).
        const STALE_CACHE_FILE: &str = ".config-cache.json";
        let dir = tempfile::tempdir().unwrap();
        let text = "agent:\n  id: web\nlimits:\n  max_message_bytes: 4096\n".to_string();
        let file = dir.path().join("config.yaml");
        std::fs::write(&file, &text).unwrap();
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
        let loaded = AgentConfig::load_file(&file).unwrap();
        assert_eq!(loaded, AgentConfig::parse(&text, Path::new("c")).unwrap());
    }

    #[test]
    fn errors_do_not_carry_control_characters_of_the_file() {
        let yaml = "agent:\n  id: web\n  \"x\u{1b}]0;PWNED\u{7}\u{9b}\u{202e}\": 1\n";
        let err = crate::error::one_line(&AgentConfig::parse(yaml, Path::new("c")).unwrap_err());
        assert!(
            !err.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{err:?}"
        );
        assert!(err.contains("PWNED"), "{err}");
    }

    #[test]
    fn numeric_looking_ids_are_read_as_text() {
        let config = AgentConfig::parse("agent:\n  id: 1234\n", Path::new("c")).unwrap();
        assert_eq!(config.agent.id.as_deref(), Some("1234"));
    }

    /// The top-level keys, from the type itself: what serde writes is what
    /// it reads, so no second list can drift (a hand-kept list once made
    /// `doctor` call the documented `sync:` unknown).
    fn top_level_keys() -> Vec<String> {
        let value = serde_json::to_value(AgentConfig::default()).unwrap();
        value.as_object().unwrap().keys().cloned().collect()
    }

    #[test]
    fn every_key_of_the_type_is_read_and_a_stranger_is_refused() {
        let keys = top_level_keys();
        for key in ["sync", "bridges", "monitoring", "hooks", "limits", "trust"] {
            assert!(keys.iter().any(|k| k == key), "{key} missing from {keys:?}");
        }
        let value = serde_json::to_value(AgentConfig::default()).unwrap();
        for key in &keys {
            // JSON is YAML: each key alone, with its default value.
            let text = format!("{key}: {}\n", value[key]);
            AgentConfig::parse(&text, Path::new("c"))
                .unwrap_or_else(|e| panic!("{key} refused: {e} ({text})"));
        }
        let err = AgentConfig::parse("colour: blue\n", Path::new("c")).unwrap_err();
        assert!(format!("{err:?}").contains("colour"), "{err:?}");
    }

    #[test]
    fn every_top_level_key_the_docs_document_is_a_key_of_the_type() {
        // The README and every chapter of the book (docs/src/), as one text.
        let readme = [
            include_str!("../../../README.md"),
            include_str!("../../../docs/src/SUMMARY.md"),
            include_str!("../../../docs/src/approvals.md"),
            include_str!("../../../docs/src/bash-aea.md"),
            include_str!("../../../docs/src/mixed-team.md"),
            include_str!("../../../docs/src/benchmarks.md"),
            include_str!("../../../docs/src/collab.md"),
            include_str!("../../../docs/src/commands.md"),
            include_str!("../../../docs/src/config.md"),
            include_str!("../../../docs/src/crashes.md"),
            include_str!("../../../docs/src/exit-codes.md"),
            include_str!("../../../docs/src/extending.md"),
            include_str!("../../../docs/src/files.md"),
            include_str!("../../../docs/src/hooks.md"),
            include_str!("../../../docs/src/introduction.md"),
            include_str!("../../../docs/src/json.md"),
            include_str!("../../../docs/src/keys.md"),
            include_str!("../../../docs/src/layout.md"),
            include_str!("../../../docs/src/machines.md"),
            include_str!("../../../docs/src/message-format.md"),
            include_str!("../../../docs/src/other-tools.md"),
            include_str!("../../../docs/src/policy.md"),
            include_str!("../../../docs/src/security.md"),
            include_str!("../../../docs/src/testing.md"),
            include_str!("../../../docs/src/tour.md"),
            include_str!("../../../docs/src/waking.md"),
        ]
        .join("\n");
        let keys = top_level_keys();
        let mut documented = Vec::new();
        // The config examples start with this comment line.
        for block in readme.split("```yaml\n# .aea/agent-config.yaml\n").skip(1) {
            let block = block.split("```").next().unwrap();
            AgentConfig::parse(block, Path::new("c"))
                .unwrap_or_else(|e| panic!("documented example refused: {e}\n{block}"));
            documented.extend(
                block
                    .lines()
                    .filter(|l| !l.starts_with([' ', '#', '-']) && l.contains(':'))
                    .map(|l| l.split(':').next().unwrap().to_owned()),
            );
        }
        // Inline mentions: `sync: {remote: URL}`, `printf 'sync:\n …`.
        for line in readme.lines() {
            for (i, _) in line.match_indices(':') {
                let head = &line[..i];
                let word: String = head
                    .chars()
                    .rev()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                let before = head[..head.len() - word.len()].chars().last();
                if !word.is_empty()
                    && matches!(before, Some('`' | '\''))
                    && line.contains("agent-config.yaml")
                {
                    documented.push(word);
                }
            }
        }
        // And the other way: every top-level key has its row in the table
        // of config.md.
        let table = include_str!("../../../docs/src/config.md");
        for key in &keys {
            assert!(
                table.contains(&format!("| `{key}` |")),
                "`{key}:` is read by the config type but has no row in docs/src/config.md"
            );
        }
        assert!(documented.iter().any(|k| k == "sync"), "{documented:?}");
        assert!(documented.iter().any(|k| k == "bridges"), "{documented:?}");
        for key in &documented {
            assert!(
                keys.contains(key),
                "the docs document `{key}:`, the config type does not read it"
            );
        }
    }
}
