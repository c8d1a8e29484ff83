//! The lines aea keeps in a `.gitignore` for a harness (see
//! [`super::kits::Ignore`]): whether they are in effect, adding them at
//! the end, and taking out exactly them again. Every other byte of the file
//! is kept as it was, its line ends (`\n` or `\r\n`) too.

use std::path::Path;

use aea_git::repo;

use super::kits::Ignore;

/// Whether `text`, the `.gitignore` at the top of `repo`, has `edit`'s
/// patterns in order and, in a git work tree, git ignores and keeps the
/// paths they are for: a later line (`*.yml`) can undo them.
pub(crate) fn in_effect(repo: &Path, text: &str, edit: &Ignore) -> bool {
    let mut lines = text.lines().map(str::trim);
    edit.patterns
        .iter()
        .all(|pattern| lines.any(|line| same(line, pattern)))
        && git_agrees(repo, edit)
}

/// Whether `line` is `pattern`, or the same anchored to the top
/// (`/.aider*`, `!/.aider.conf.yml`): the file sits at the top.
fn same(line: &str, pattern: &str) -> bool {
    let (bang, rest) = pattern
        .strip_prefix('!')
        .map_or(("", pattern), |rest| ("!", rest));
    line == pattern || line.strip_prefix(bang).and_then(|l| l.strip_prefix('/')) == Some(rest)
}

/// Whether git ignores exactly `edit.ignored` of the paths it names;
/// `true` outside git.
fn git_agrees(repo: &Path, edit: &Ignore) -> bool {
    let names: Vec<&str> = edit
        .ignored
        .iter()
        .chain(&edit.kept)
        .map(String::as_str)
        .collect();
    repo::ignored_under(repo, &names).is_none_or(|flags| {
        flags
            .iter()
            .zip(&names)
            .all(|(ignored, name)| *ignored == edit.ignored.iter().any(|i| i == name))
    })
}

/// `text` with `edit`'s comment and patterns added at the end, last, so no
/// earlier line undoes them; in the file's own line ends.
pub(crate) fn added(text: &str, edit: &Ignore) -> String {
    let eol = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut out = text.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push_str(eol);
    }
    for line in std::iter::once(&edit.comment).chain(&edit.patterns) {
        out.push_str(line);
        out.push_str(eol);
    }
    out
}

/// `text` without each block of `edit`'s comment and patterns (as
/// [`added`] wrote them, whatever the line ends), `None` when there is none.
pub(crate) fn removed(text: &str, edit: &Ignore) -> Option<String> {
    let block: Vec<&str> = std::iter::once(&edit.comment)
        .chain(&edit.patterns)
        .map(String::as_str)
        .collect();
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut found = false;
    while let Some(start) = lines
        .windows(block.len())
        .position(|w| w.iter().zip(&block).all(|(line, b)| line.trim() == *b))
    {
        lines.drain(start..start + block.len());
        found = true;
    }
    found.then(|| lines.concat())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aider() -> Ignore {
        Ignore {
            comment: "# aea: x".to_string(),
            patterns: vec![".aider*".to_string(), "!.aider.conf.yml".to_string()],
            ignored: vec![".aider".to_string()],
            kept: vec![".aider.conf.yml".to_string()],
        }
    }

    #[test]
    fn added_then_removed_gives_back_every_byte() {
        let edit = aider();
        for text in [
            "",
            "target/\n",
            "target/\r\nnode_modules/\r\n",
            "a\n\n# aea: x\n",
        ] {
            let with = added(text, &edit);
            assert!(
                with.starts_with(text) && with.len() > text.len(),
                "{with:?}"
            );
            assert_eq!(removed(&with, &edit).as_deref(), Some(text));
        }
        // A last line without its line end gets one.
        assert_eq!(
            removed(&added("target/", &edit), &edit).unwrap(),
            "target/\n"
        );
        assert_eq!(
            added("a\r\nb\r\n", &edit),
            "a\r\nb\r\n# aea: x\r\n.aider*\r\n!.aider.conf.yml\r\n"
        );
        assert_eq!(removed("a\n.aider*\n", &edit), None);
    }

    #[test]
    fn in_effect_needs_the_patterns_in_order() {
        let edit = aider();
        let outside_git = Path::new("/nonexistent");
        assert!(in_effect(
            outside_git,
            ".aider*\r\n!.aider.conf.yml  \r\n",
            &edit
        ));
        assert!(in_effect(
            outside_git,
            ".aider*\nx\n!.aider.conf.yml\n",
            &edit
        ));
        assert!(!in_effect(
            outside_git,
            "!.aider.conf.yml\n.aider*\n",
            &edit
        ));
        assert!(!in_effect(outside_git, ".aider*\n", &edit));
        assert!(in_effect(
            outside_git,
            "/.aider*\n!/.aider.conf.yml\n",
            &edit
        ));
        assert!(!in_effect(
            outside_git,
            "/.aider*\n/!.aider.conf.yml\n",
            &edit
        ));
    }
}
