//! The default hard stops against ordinary mail: `tests/benign-corpus/` at
//! the repository root holds message bodies, one a file, of the kind agents
//! send each other (review chatter, commit messages, changelogs, docs,
//! stack traces, SQL that is not destructive) that mention `rm`, `sudo`,
//! `chmod`, `push`, `truncate`, `drop`, `curl`, `bash`, force or hooks
//! without asking for anything dangerous.
//!
//! A stop on one of them is a false positive: a person is asked to approve
//! mail that needed no approval, and people who are asked too often stop
//! reading. `cargo test -p aea-protocol --test hardstop_benign -- --nocapture`
//! prints the rate and every flagged file with the stop that matched.

// The rate and the flagged files are this test's report (read with --nocapture).
#![allow(clippy::print_stdout)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{Field, defaults, message_with};

/// How many files of the corpus the default stops may flag, as measured
/// (printed by this test): a stop added or widened later must not quietly
/// flag more ordinary mail. Of the 11: eight mention what the default list
/// names on purpose (`sudo`, `credentials`, `api key`, `private key`,
/// `access token`, `--force`), two run a command's output through `eval`
/// (`eval "$(ssh-agent -s)"`, which a hard stop treats as a pipe into an
/// interpreter by design), and one is prose ("Su - she joins the team").
const MAX_FALSE_POSITIVES: Option<usize> = Some(11);

/// The corpus, sorted by file name.
fn corpus() -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/benign-corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "txt"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            (path, text)
        })
        .collect()
}

#[test]
fn ordinary_mail_is_rarely_stopped() {
    let corpus = corpus();
    assert!(
        corpus.len() >= 150,
        "the benign corpus has only {} files",
        corpus.len()
    );
    let stops = defaults();
    let mut flagged = Vec::new();
    let mut by_pattern: BTreeMap<String, usize> = BTreeMap::new();
    for (path, text) in &corpus {
        assert!(!text.trim().is_empty(), "{} is empty", path.display());
        if let Some(hit) = stops.find(&message_with(Field::Body, text)) {
            let name = path
                .file_name()
                .expect("a file in the corpus")
                .to_string_lossy();
            flagged.push(format!("  {name}: {:?} in the {}", hit.pattern, hit.field));
            *by_pattern.entry(hit.pattern.to_string()).or_default() += 1;
        }
    }
    // Both counts are far below 2^52: the conversion is exact.
    #[allow(clippy::cast_precision_loss)]
    let rate = flagged.len() as f64 / corpus.len() as f64 * 100.0;
    println!(
        "benign corpus: {} of {} files flagged by the default hard stops ({rate:.1} %)",
        flagged.len(),
        corpus.len()
    );
    for (pattern, count) in &by_pattern {
        println!("  {count:>3} by {pattern:?}");
    }
    println!("{}", flagged.join("\n"));
    if let Some(max) = MAX_FALSE_POSITIVES {
        assert!(
            flagged.len() <= max,
            "{} ordinary messages flagged (at most {max} expected):\n{}",
            flagged.len(),
            flagged.join("\n")
        );
    }
}
