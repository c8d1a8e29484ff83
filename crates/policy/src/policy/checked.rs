//! A config read, checked and compiled into its [`Policy`]: the one way
//! every command gets its config. It lives with the policy, not the config,
//! because compiling is the policy's business; the config only reads.

use std::path::Path;

use super::Policy;
use crate::config::AgentConfig;
use crate::error::{Error, Result};

/// A config that was read, checked and compiled into a policy. Every
/// command, `validate`, `doctor` and the pre-commit gate get their config
/// this way, so none of them can accept what another refuses.
#[derive(Debug, Clone)]
pub struct Checked {
    pub config: AgentConfig,
    pub policy: Policy,
}

impl Checked {
    /// Compiles `config` (rule actions, globs, `trust.unknown_senders`);
    /// `path` names the file in the error.
    pub fn compile(config: AgentConfig, path: &Path) -> Result<Self> {
        let policy =
            Policy::from_config(config.clone()).map_err(|problem| Error::ConfigInvalid {
                path: path.to_path_buf(),
                problem,
            })?;
        Ok(Checked { config, policy })
    }

    /// [`AgentConfig::parse`] and [`Checked::compile`].
    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        Self::compile(AgentConfig::parse(text, path)?, path)
    }
}
