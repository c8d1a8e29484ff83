//! The one place that reads environment variables. Everything else receives
//! the values through [`Env`], so tests can seal the environment and inject
//! the clock and randomness.

use std::collections::BTreeMap;
use std::path::PathBuf;

use chrono::{DateTime, Utc};

/// Overrides the registry file (SPEC §8).
pub(crate) const AEA_REGISTRY: &str = "AEA_REGISTRY";
/// Overrides the user's aea config dir: the registry (unless
/// [`AEA_REGISTRY`] is set), private keys and the trust store. A kept
/// `aea demo` folder is used through it, apart from the user's own.
pub const AEA_CONFIG_DIR: &str = "AEA_CONFIG_DIR";
/// Overrides where the private state of inboxes outside any git
/// repository goes (an absolute path; by default the platform's state
/// directory, `~/.local/state/aea` on Linux). Inboxes in a git work tree
/// keep theirs in the git directory (see `layout`).
pub(crate) const AEA_STATE_DIR: &str = "AEA_STATE_DIR";
/// The index a commit is made from, as git gave it to the pre-commit hook
/// (`GIT_INDEX_FILE`), passed on by aea's hook script under this name: the
/// script unsets git's own variables before it runs aea.
pub(crate) const AEA_GIT_INDEX_FILE: &str = "AEA_GIT_INDEX_FILE";
/// Fixes the clock, as RFC 3339, for reproducible output in tests.
pub(crate) const AEA_TEST_NOW: &str = "AEA_TEST_NOW";
/// Seeds the id generator, for reproducible output in tests.
pub(crate) const AEA_TEST_SEED: &str = "AEA_TEST_SEED";
/// Tests only: `send` keeps its record after answering, as a send killed
/// between its answer and letting the record go does (a fault point the
/// SIGKILL suite hits only by chance).
pub(crate) const AEA_TEST_KEEP_SEND_RECORD: &str = "AEA_TEST_KEEP_SEND_RECORD";
/// Tests only: how long (milliseconds) what aea remembers of an inbox must
/// lie unchanged before it is trusted ([`crate::seen::SETTLE`], 2 s).
pub(crate) const AEA_TEST_SEEN_SETTLE_MS: &str = "AEA_TEST_SEEN_SETTLE_MS";
/// The Basic-auth user of `opencode serve` (OpenCode's own variable; it
/// defaults to `opencode`).
pub(crate) const OPENCODE_SERVER_USERNAME: &str = "OPENCODE_SERVER_USERNAME";
/// The Basic-auth password of `opencode serve` (OpenCode's own variable:
/// the server asks for it when it is set in the server's environment).
pub const OPENCODE_SERVER_PASSWORD: &str = "OPENCODE_SERVER_PASSWORD";

#[derive(Debug, Clone, Default)]
pub struct Env {
    pub registry: Option<PathBuf>,
    pub user: Option<String>,
    pub fixed_now: Option<DateTime<Utc>>,
    pub seed: Option<u64>,
    /// [`AEA_TEST_KEEP_SEND_RECORD`].
    pub keep_send_record: bool,
    /// [`AEA_TEST_SEEN_SETTLE_MS`].
    pub seen_settle: Option<std::time::Duration>,
    /// This binary, for the hooks to call back.
    pub exe: Option<PathBuf>,
    /// The directory aea was started in; `None` when it is gone.
    pub cwd: Option<PathBuf>,
    /// Where temporary folders go (`TMPDIR`, else `/tmp`).
    pub temp_dir: PathBuf,
    /// The user's aea config dir (private keys live in `keys/` under it).
    pub config_dir: Option<PathBuf>,
    /// The user's aea cache dir (derived data only; safe to delete).
    pub cache_dir: Option<PathBuf>,
    /// Where the private state of inboxes outside git goes
    /// ([`AEA_STATE_DIR`], else the platform's state directory).
    pub state_dir: Option<PathBuf>,
    /// [`AEA_GIT_INDEX_FILE`].
    pub git_index_file: Option<PathBuf>,
    /// `OPENCODE_SERVER_USERNAME`, for the `opencode` doorbell.
    pub opencode_username: Option<String>,
    /// `OPENCODE_SERVER_PASSWORD`, for the `opencode` doorbell.
    pub opencode_password: Option<Secret>,
    /// Every variable, for a doorbell whose trusted config names the one
    /// that holds its password (`password_env`).
    pub variables: Variables,
    /// Where an agent-harness hook looks for aea, in order: `aea` in each
    /// folder of `PATH`, then `~/.cargo/bin/aea` (what `doctor` checks).
    pub aea_candidates: Vec<PathBuf>,
    /// Where the agent harnesses keep what a person trusted, for `init`
    /// and `doctor` to read (never write).
    pub harness_homes: HarnessHomes,
}

/// The folders and files the agent harnesses read their trust from, as
/// each harness finds them: `HOME`, and the variables it honours in its
/// place. Unset or empty variables are `None`.
#[derive(Debug, Clone, Default)]
pub struct HarnessHomes {
    pub home: Option<PathBuf>,
    /// `CODEX_HOME` (Codex: `config.toml` there, else `~/.codex/`).
    pub codex_home: Option<PathBuf>,
    /// `CLAUDE_CONFIG_DIR` (Claude Code: `.claude.json` there, else in HOME).
    pub claude_config_dir: Option<PathBuf>,
    /// `GEMINI_CLI_HOME` (Gemini CLI: `.gemini/` there, else in HOME).
    pub gemini_cli_home: Option<PathBuf>,
    /// `GEMINI_CLI_TRUSTED_FOLDERS_PATH` (else `.gemini/trustedFolders.json`).
    pub gemini_trusted_folders: Option<PathBuf>,
    /// `GEMINI_CLI_SYSTEM_SETTINGS_PATH` (else `/etc/gemini-cli/settings.json`).
    pub gemini_system_settings: Option<PathBuf>,
    /// `COPILOT_HOME` (Copilot CLI: `config.json` there, else `~/.copilot/`).
    pub copilot_home: Option<PathBuf>,
    /// `GEMINI_CLI_TRUST_WORKSPACE` (Gemini CLI: `true` trusts every
    /// folder, `false` none, whatever its files say).
    pub gemini_trust_workspace: Option<String>,
    /// `GEMINI_RESTRICTED_MODE` (Gemini CLI: `true` trusts no folder).
    pub gemini_restricted_mode: Option<String>,
}

/// A value that must not end up in output, logs or a `{:?}`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// The process's environment variables (those whose name and value are
/// UTF-8), each a [`Secret`]: `{:?}` shows the names only.
#[derive(Clone, Default)]
pub struct Variables(BTreeMap<String, Secret>);

impl Variables {
    pub fn get(&self, name: &str) -> Option<&Secret> {
        self.0.get(name)
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Variables {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Variables(
            iter.into_iter()
                .map(|(k, v)| (k.into(), Secret::new(v)))
                .collect(),
        )
    }
}

impl std::fmt::Debug for Variables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl Env {
    // The one place allowed to read the environment (clippy.toml).
    #[allow(clippy::disallowed_methods)]
    pub fn from_process() -> Self {
        let dirs = directories::ProjectDirs::from("", "", "aea");
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let path = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Env {
            registry: std::env::var_os(AEA_REGISTRY)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            // Containers, CI and sudo often leave USER unset: the account's
            // own name is the same fallback for messages, the log and
            // approvals alike.
            user: var("USER")
                .or_else(|| var("LOGNAME"))
                .or_else(|| var("USERNAME"))
                .or_else(account_name),
            fixed_now: var(AEA_TEST_NOW)
                .and_then(|v| DateTime::parse_from_rfc3339(&v).ok())
                .map(|t| t.with_timezone(&Utc)),
            seed: var(AEA_TEST_SEED).and_then(|v| v.parse().ok()),
            keep_send_record: var(AEA_TEST_KEEP_SEND_RECORD).is_some(),
            seen_settle: var(AEA_TEST_SEEN_SETTLE_MS)
                .and_then(|v| v.parse().ok())
                .map(std::time::Duration::from_millis),
            exe: std::env::current_exe().ok(),
            cwd: std::env::current_dir().ok(),
            temp_dir: std::env::temp_dir(),
            config_dir: std::env::var_os(AEA_CONFIG_DIR)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| dirs.as_ref().map(|d| d.config_dir().to_path_buf())),
            cache_dir: dirs.as_ref().map(|d| d.cache_dir().to_path_buf()),
            git_index_file: std::env::var_os(AEA_GIT_INDEX_FILE)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            // Only an absolute path: a relative one would put the state
            // under whatever folder a command runs in.
            state_dir: std::env::var_os(AEA_STATE_DIR)
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .or_else(|| {
                    dirs.as_ref().map(|d| {
                        d.state_dir()
                            .unwrap_or_else(|| d.data_local_dir())
                            .to_path_buf()
                    })
                }),
            aea_candidates: std::env::var_os("PATH")
                .map(|path| {
                    std::env::split_paths(&path)
                        .map(|d| d.join("aea"))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
                .into_iter()
                .chain(std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo/bin/aea")))
                .collect(),
            harness_homes: HarnessHomes {
                home: path("HOME"),
                codex_home: path("CODEX_HOME"),
                claude_config_dir: path("CLAUDE_CONFIG_DIR"),
                gemini_cli_home: path("GEMINI_CLI_HOME"),
                gemini_trusted_folders: path("GEMINI_CLI_TRUSTED_FOLDERS_PATH"),
                gemini_system_settings: path("GEMINI_CLI_SYSTEM_SETTINGS_PATH"),
                copilot_home: path("COPILOT_HOME"),
                gemini_trust_workspace: var("GEMINI_CLI_TRUST_WORKSPACE"),
                gemini_restricted_mode: var("GEMINI_RESTRICTED_MODE"),
            },
            opencode_username: var(OPENCODE_SERVER_USERNAME),
            opencode_password: var(OPENCODE_SERVER_PASSWORD).map(Secret::new),
            variables: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .filter(|(_, v)| !v.is_empty())
                .collect(),
        }
    }
}

/// Whether the command line asks for `--json` (before a `--`): for a
/// command line clap could not read, whose error is then printed as JSON.
// The one place allowed to read the environment (clippy.toml).
#[allow(clippy::disallowed_methods)]
pub fn json_asked() -> bool {
    std::env::args_os()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json")
}

/// The name of the account this process runs as, from the user database
/// (`getpwuid_r`), or `uid N` when it has none (a container's bare uid).
#[cfg(unix)]
#[allow(unsafe_code)] // getpwuid_r(3): std has no way to name the current user.
fn account_name() -> Option<String> {
    // SAFETY: getuid cannot fail. getpwuid_r writes the entry into `pwd`
    // and its strings into `buf`, both ours and alive for the call;
    // `result` is null or points at `pwd`.
    let uid = unsafe { libc::getuid() };
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0u8; 4096];
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    let found = unsafe {
        libc::getpwuid_r(
            uid,
            &raw mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &raw mut result,
        )
    };
    if found != 0 || result.is_null() || pwd.pw_name.is_null() {
        return Some(format!("uid {uid}"));
    }
    // SAFETY: pw_name points at a NUL-terminated string inside `buf`.
    let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
    Some(name.to_string_lossy().into_owned()).filter(|n| !n.is_empty())
}

#[cfg(not(unix))]
fn account_name() -> Option<String> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_show_in_debug_output() {
        let env = Env {
            opencode_password: Some(Secret::new("hunter2")),
            variables: [("MY_PASSWORD", "hunter3")].into_iter().collect(),
            ..Env::default()
        };
        let shown = format!("{env:?}");
        assert!(!shown.contains("hunter"), "{shown}");
        assert!(shown.contains("MY_PASSWORD"), "{shown}");
        assert_eq!(
            env.variables.get("MY_PASSWORD").map(Secret::expose),
            Some("hunter3")
        );
    }
}
