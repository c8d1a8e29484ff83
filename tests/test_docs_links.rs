//! The README and the book (`docs/src/`) link to each other and into the
//! source tree: every relative link must reach a file that exists and, with
//! a `#anchor`, a heading of that file (the slug GitHub and mdBook make:
//! lowercase, spaces as `-`, punctuation dropped).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The README and every page of the book.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    let mut book: Vec<PathBuf> = std::fs::read_dir(root().join("docs/src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    book.sort();
    pages.extend(book);
    pages
}

/// The lines of `text` outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            lines.push(line);
        }
    }
    lines
}

/// A heading's anchor as GitHub and mdBook make it.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(file: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(file).unwrap();
    prose(&text)
        .into_iter()
        .filter_map(|l| {
            let hashes = l.len() - l.trim_start_matches('#').len();
            (1..=6)
                .contains(&hashes)
                .then(|| l[hashes..].strip_prefix(' '))
                .flatten()
        })
        .map(slug)
        .collect()
}

/// The targets of the inline links `[text](target)` in `text`.
fn links(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose(text) {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            targets.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    targets
}

#[test]
fn the_docs_relative_links_reach_files_and_headings() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            checked += 1;
            if !file.exists() {
                broken.push(format!("{}: {target} (no such file)", page.display()));
            } else if !anchor.is_empty() && !anchors(&file).contains(anchor) {
                broken.push(format!("{}: {target} (no such heading)", page.display()));
            }
        }
    }
    assert!(
        checked > 20,
        "the docs link to each other ({checked} links)"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_page_of_the_book_is_in_its_summary_and_read_by_the_config_key_test() {
    let src = root().join("docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = links(&summary).into_iter().collect();
    let config_test = std::fs::read_to_string(root().join("crates/policy/src/config.rs")).unwrap();
    let mut missing = Vec::new();
    for page in pages().into_iter().skip(1) {
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        if name == "SUMMARY.md" {
            continue;
        }
        if !listed.contains(&name) {
            missing.push(format!("{name}: not in SUMMARY.md"));
        }
        if !config_test.contains(&format!("\"../../../docs/src/{name}\"")) {
            missing.push(format!(
                "{name}: not read by the documented-config-keys test in crates/policy/src/config.rs"
            ));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn the_readme_stays_an_introduction() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 400,
        "README.md has {lines} lines: move detail into a chapter of docs/src/"
    );
}

/// Every command `aea --help` lists has its row in the book's Commands
/// page (a row starts with it, or names it after a ` / `).
#[test]
fn every_command_has_its_row_in_the_commands_page() {
    let env = crate::common::TestEnv::new();
    let help = env.ok(&env.path(), &["--help"]);
    let commands: Vec<&str> = help
        .split("Commands:\n")
        .nth(1)
        .expect("--help lists the commands")
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() > 20, "{commands:?}");
    let page = std::fs::read_to_string(root().join("docs/src/commands.md")).unwrap();
    let rows: Vec<&str> = page.lines().filter(|l| l.starts_with("| `aea ")).collect();
    for command in commands {
        let named = |l: &&str| {
            [format!("| `aea {command} "), format!("| `aea {command}`")]
                .iter()
                .chain(&[format!("/ `aea {command} "), format!("/ `aea {command}`")])
                .any(|p| l.contains(p.as_str()))
        };
        assert!(
            rows.iter().any(named),
            "`aea {command}` has no row in docs/src/commands.md"
        );
    }
}
