//! Files that `init` writes, compiled in so the binary alone is enough.

pub(crate) const SECTION_BEGIN: &str = "<!-- aea:begin";
pub(crate) const SECTION_END: &str = "<!-- aea:end -->";

/// What an agent does with each decision, approval and rejection: the one
/// text every instruction file carries, so that they cannot disagree.
pub const DECISIONS: &str = include_str!("../../../templates/decisions.md");
pub(crate) const PLACEHOLDER: &str = "@DECISIONS@\n";

fn with_decisions(template: &str) -> String {
    debug_assert!(template.contains(PLACEHOLDER));
    template.replace(PLACEHOLDER, DECISIONS)
}

/// The section `init` writes into `CLAUDE.md`, `AGENTS.md` and the like.
pub(crate) fn agent_section() -> String {
    with_decisions(include_str!("../../../templates/agent-section.md"))
}

/// `.aea/prompts/check-messages.md`.
pub fn check_messages_prompt() -> String {
    with_decisions(include_str!("../../../templates/check-messages.md"))
}

/// SHA-256 of each `check-messages.md` an earlier aea wrote.
const EARLIER_PROMPTS: [&str; 4] = [
    "cacec9d55e3e8b0571ee0d484ab49ac561ae386ffa766ccdbb2a041c391d7465",
    "967c1e911bc7ac74c8f0689e1fa6afcc8b2faf39b39dc57dfdd0b04662ac2740",
    "635a8477f64c4ad930f48e925740d566c08d04e44132c01477c54ad396ac5cd5",
    "6772b28b71339a9e8c1473b99322e636c266c86b17a2bed9341e451365a895f8",
];

/// Whether the file at `path` is, byte for byte, a `check-messages.md` an
/// earlier aea wrote (and nobody changed since): `init` may replace it.
pub fn is_earlier_prompt(path: &std::path::Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() < 64 * 1024)
        && std::fs::read(path).is_ok_and(|bytes| {
            EARLIER_PROMPTS.contains(&crate::fsutil::sha256_hex(&bytes).as_str())
        })
}

/// The steps of the `/aea` command of each harness that has commands.
pub(crate) fn command_steps() -> String {
    with_decisions(include_str!("../../../templates/commands/aea-steps.md"))
}
pub const GITIGNORE: &str = include_str!("../../../templates/gitignore");

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
        PolicyPreset::Default => include_str!("../../../policies/default.yaml"),
        PolicyPreset::Strict => include_str!("../../../policies/strict.yaml"),
        PolicyPreset::Autonomous => include_str!("../../../policies/autonomous.yaml"),
    };
    text.replace("{{AGENT_ID}}", agent_id)
}

/// `text` with the AEA section added or brought up to date; `None` when it
/// already holds the current section.
pub(crate) fn with_agent_section(text: &str) -> Option<String> {
    let section = agent_section();
    let section = section.trim_end();
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
pub(crate) fn without_agent_section(text: &str) -> Option<String> {
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
