//! The one place that reads environment variables. Everything else receives
//! the values through [`Env`], so tests can seal the environment and inject
//! the clock and randomness.

use std::path::PathBuf;

use chrono::{DateTime, Utc};

/// Overrides the registry file (SPEC §8).
pub const AEA_REGISTRY: &str = "AEA_REGISTRY";
/// Fixes the clock, as RFC 3339, for reproducible output in tests.
pub const AEA_TEST_NOW: &str = "AEA_TEST_NOW";
/// Seeds the id generator, for reproducible output in tests.
pub const AEA_TEST_SEED: &str = "AEA_TEST_SEED";

#[derive(Debug, Clone, Default)]
pub struct Env {
    pub registry: Option<PathBuf>,
    pub user: Option<String>,
    pub fixed_now: Option<DateTime<Utc>>,
    pub seed: Option<u64>,
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
}

impl Env {
    // The one place allowed to read the environment (clippy.toml).
    #[allow(clippy::disallowed_methods)]
    pub fn from_process() -> Self {
        let dirs = directories::ProjectDirs::from("", "", "aea");
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Env {
            registry: std::env::var_os(AEA_REGISTRY)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            user: var("USER")
                .or_else(|| var("LOGNAME"))
                .or_else(|| var("USERNAME")),
            fixed_now: var(AEA_TEST_NOW)
                .and_then(|v| DateTime::parse_from_rfc3339(&v).ok())
                .map(|t| t.with_timezone(&Utc)),
            seed: var(AEA_TEST_SEED).and_then(|v| v.parse().ok()),
            exe: std::env::current_exe().ok(),
            cwd: std::env::current_dir().ok(),
            temp_dir: std::env::temp_dir(),
            config_dir: dirs.as_ref().map(|d| d.config_dir().to_path_buf()),
            cache_dir: dirs.as_ref().map(|d| d.cache_dir().to_path_buf()),
        }
    }
}
