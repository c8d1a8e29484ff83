//! Files that `init` writes, compiled in so the binary alone is enough.

pub const AGENT_SECTION: &str = include_str!("../templates/agent-section.md");
pub const SECTION_BEGIN: &str = "<!-- aea:begin";
pub const SECTION_END: &str = "<!-- aea:end -->";
pub const CHECK_MESSAGES_PROMPT: &str = include_str!("../templates/check-messages.md");
pub const GITIGNORE: &str = include_str!("../templates/gitignore");

use crate::words::word_enum;

word_enum! {
    /// The ready-made policies in `policies/` that `aea init --policy`
    /// starts from.
    pub enum PolicyPreset {
        Default = "default",
        Strict = "strict",
        Autonomous = "autonomous",
    }
}

/// The ready-made policy `preset`, with the agent id filled in.
pub fn policy(preset: PolicyPreset, agent_id: &str) -> String {
    let text = match preset {
        PolicyPreset::Default => include_str!("../policies/default.yaml"),
        PolicyPreset::Strict => include_str!("../policies/strict.yaml"),
        PolicyPreset::Autonomous => include_str!("../policies/autonomous.yaml"),
    };
    text.replace("{{AGENT_ID}}", agent_id)
}

/// `text` with the AEA section added or brought up to date; `None` when it
/// already holds the current section.
pub fn with_agent_section(text: &str) -> Option<String> {
    let section = AGENT_SECTION.trim_end();
    if let Some(begin) = text.find(SECTION_BEGIN)
        && let Some(end_rel) = text[begin..].find(SECTION_END)
    {
        let end = begin + end_rel + SECTION_END.len();
        if &text[begin..end] == section {
            return None;
        }
        return Some(format!("{}{section}{}", &text[..begin], &text[end..]));
    }
    let mut out = text.to_string();
    if !out.is_empty() {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push('\n');
    }
    out.push_str(section);
    out.push('\n');
    Some(out)
}

/// `text` without the AEA section and the blank line `with_agent_section`
/// put before it; `None` when it has no section.
pub fn without_agent_section(text: &str) -> Option<String> {
    let begin = text.find(SECTION_BEGIN)?;
    let end = begin + text[begin..].find(SECTION_END)? + SECTION_END.len();
    let before = &text[..begin];
    let after = text[end..].strip_prefix('\n').unwrap_or(&text[end..]);
    // Undo the blank line that separated the section from the text above.
    let before = match before.strip_suffix('\n') {
        Some(trimmed) if after.is_empty() && trimmed.ends_with('\n') => trimmed,
        _ => before,
    };
    Some(format!("{before}{after}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_is_added_once_and_kept_around_user_text() {
        let first = with_agent_section("# Project\n\nOwn notes.").unwrap();
        assert!(first.starts_with("# Project\n\nOwn notes.\n\n<!-- aea:begin"));
        assert_eq!(with_agent_section(&first), None);
        let edited = first.replace("run `aea check`", "run aea check please");
        let repaired = with_agent_section(&format!("{edited}\nMore notes.\n")).unwrap();
        assert_eq!(repaired.matches(SECTION_BEGIN).count(), 1);
        assert!(repaired.ends_with("<!-- aea:end -->\n\nMore notes.\n"));
    }

    #[test]
    fn section_removal_restores_the_text_around_it() {
        for original in ["", "# Project\n\nOwn notes.", "# Project\n\nOwn notes.\n"] {
            let with = with_agent_section(original).unwrap();
            let without = without_agent_section(&with).unwrap();
            let expected = if original.is_empty() || original.ends_with('\n') {
                original.to_string()
            } else {
                format!("{original}\n")
            };
            assert_eq!(without, expected, "{original:?}");
        }
        assert_eq!(without_agent_section("no section"), None);
    }

    #[test]
    fn policies_parse_with_their_id() {
        for &name in PolicyPreset::ALL {
            let text = policy(name, "web");
            let config =
                crate::config::AgentConfig::parse(&text, std::path::Path::new(name.as_str()))
                    .unwrap();
            assert_eq!(config.agent.id.as_deref(), Some("web"), "{name}");
            crate::policy::Policy::from_config(config).unwrap();
        }
    }
}
