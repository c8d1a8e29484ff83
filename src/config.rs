//! `.aea/agent-config.yaml`: the repository's identity and policy (SPEC §6).
//! This module only reads the file into typed values; what the values mean
//! for a message is `policy`'s business.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::fsutil;
use crate::message::check_agent_id;

pub const FILE_NAME: &str = "agent-config.yaml";

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct AgentConfig {
    pub agent: AgentSection,
    pub response_policy: BTreeMap<String, TypePolicy>,
    pub auto_safe_operations: Vec<String>,
    pub approval_required_operations: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct AgentSection {
    pub id: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub capabilities: Vec<String>,
}

/// `response_policy.<type>`: settings for every priority, optionally refined
/// per priority (`response_policy.issue.urgent`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TypePolicy {
    #[serde(flatten)]
    pub base: PolicyEntry,
    pub low: Option<PolicyEntry>,
    pub normal: Option<PolicyEntry>,
    pub high: Option<PolicyEntry>,
    pub urgent: Option<PolicyEntry>,
}

#[derive(Debug, Clone, Default, Deserialize)]
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

    /// Loads `<aea_dir>/agent-config.yaml`.
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
    text.lines().next().unwrap_or(text).trim().to_string()
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
    fn numeric_looking_ids_are_read_as_text() {
        let config = AgentConfig::parse("agent:\n  id: 1234\n", Path::new("c")).unwrap();
        assert_eq!(config.agent.id.as_deref(), Some("1234"));
    }
}
