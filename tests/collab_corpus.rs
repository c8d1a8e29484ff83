//! The corpus of collaboration folders: `tests/collab-corpus/<case>/` is
//! an ACP folder as another agent might hand it over, plus an
//! `expected.json` naming the rules its errors (and warnings) break and a
//! text one of them must contain. `valid/` is a whole collaboration
//! written through `Folder::append` / `Folder::review` (regenerate it with
//! `cargo test --test main collab_corpus -- --ignored`); every other case
//! breaks one rule of it.

use std::collections::BTreeSet;
use std::path::Path;

use aea::collab::{Classification, EventName, Folder, Review};
use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::Value;

/// How many cases the corpus holds, counted exactly so that a case that
/// goes missing fails the test; raise it with each new case.
const CASES: usize = 16;

fn rules(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn every_corpus_case_is_judged_by_its_rule() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/collab-corpus");
    let mut cases: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert_eq!(
        cases.len(),
        CASES,
        "the corpus has {} cases, expected {CASES}: update CASES in tests/collab_corpus.rs",
        cases.len()
    );
    let mut failures = Vec::new();
    for dir in &cases {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let expected: Value =
            serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();
        let report = aea::collab::Folder::new(dir).validate().unwrap();
        let errors: BTreeSet<String> = report.errors.iter().map(|f| f.rule.to_string()).collect();
        let warnings: BTreeSet<String> =
            report.warnings.iter().map(|f| f.rule.to_string()).collect();
        let contains = expected["contains"].as_str().unwrap_or("");
        let mentioned = contains.is_empty()
            || report
                .errors
                .iter()
                .chain(&report.warnings)
                .any(|f| f.message.contains(contains));
        if errors != rules(&expected["errors"])
            || warnings != rules(&expected["warnings"])
            || !mentioned
        {
            failures.push(format!("{name}: {report:#?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn t(minutes: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 5, 10, 0, 0).unwrap() + Duration::minutes(minutes)
}

fn edit(folder: &Folder, name: &str, f: impl FnOnce(String) -> String) {
    let path = folder.path().join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, f(text)).unwrap();
}

/// Writes `tests/collab-corpus/valid/`: web proposes, api reviews twice
/// (the first time with required changes), decisions with one deferred
/// question, readiness, conclusion, completed.
#[test]
#[ignore = "regenerates the corpus's valid case"]
fn regenerate_the_valid_case() {
    let tmp = tempfile::tempdir().unwrap();
    let f = Folder::new(tmp.path().join("c"));
    let participants = ["web".to_string(), "api".to_string()];
    let gates = ["Decisions accepted by both".to_string()];
    f.init(
        &participants,
        "Agree on the orders API",
        &gates,
        false,
        t(0),
    )
    .unwrap();
    edit(&f, "proposal.md", |t| {
        t.replace(
            "## Current Proposal\n\nTBD.",
            "## Current Proposal\n\nPOST /orders.",
        )
    });
    f.append(
        "web",
        EventName::ProposalSubmitted,
        "Proposal ready",
        Some("proposal.md"),
        Some(1),
        t(1),
    )
    .unwrap();
    let review = |position: &str, changes: &[&str]| Review {
        summary: format!("Review: {position}"),
        position: vec![position.into()],
        concerns: vec![],
        required_changes: changes.iter().map(|c| (*c).to_string()).collect(),
        questions: vec!["Pagination now or later?".into()],
    };
    f.review(
        "api",
        2,
        &review("Needs error codes", &["Name the error codes"]),
        t(2),
    )
    .unwrap();
    f.append(
        "web",
        EventName::ProposalSubmitted,
        "Error codes added",
        Some("proposal.md"),
        Some(3),
        t(3),
    )
    .unwrap();
    f.review("api", 4, &review("Good", &[]), t(4)).unwrap();
    f.append(
        "web",
        EventName::ProposalRevised,
        "Final wording",
        Some("proposal.md"),
        Some(5),
        t(5),
    )
    .unwrap();
    edit(&f, "decisions.md", |t| {
        t.replace("- None yet.", "- POST /orders returns 201.")
    });
    edit(&f, "readiness.md", |t| {
        t.replace(
            "- [unresolved] List each open question of proposal.md here.",
            "- [unresolved] Which code for a duplicate order?\n- [unresolved] Pagination now or later?",
        )
    });
    f.classify(1, Classification::Resolved, None).unwrap();
    f.classify(
        2,
        Classification::DeferredNonblocking,
        Some("one client, few orders"),
    )
    .unwrap();
    f.append(
        "web",
        EventName::QuestionClassified,
        "Questions classified",
        Some("readiness.md"),
        Some(6),
        t(6),
    )
    .unwrap();
    f.append(
        "api",
        EventName::DecisionAccepted,
        "Accepted",
        Some("decisions.md"),
        Some(7),
        t(7),
    )
    .unwrap();
    f.append(
        "web",
        EventName::DecisionAccepted,
        "Accepted",
        Some("decisions.md"),
        Some(8),
        t(8),
    )
    .unwrap();
    edit(&f, "readiness.md", |t| t.replace("- [ ]", "- [x]"));
    f.append(
        "web",
        EventName::ReadinessPassed,
        "Ready",
        Some("readiness.md"),
        Some(9),
        t(9),
    )
    .unwrap();
    std::fs::write(
        f.path().join("conclusion.md"),
        "# Conclusion\n\n## Decision Outcome\n\n- [proceed] Build POST /orders as proposed.\n\n## Rationale\n\nBoth sides agree on the contract.\n\n## Accepted Decisions\n\n- POST /orders returns 201.\n\n## Implementation Approach\n\nOne endpoint, then its client.\n\n## Assumptions\n\n- One client.\n\n## Deferred Follow-ups\n\n- Pagination.\n\n## Implementation Blockers\n\n- None.\n\n## Next Action\n\nweb opens the first pull request.\n",
    )
    .unwrap();
    f.append(
        "web",
        EventName::Completed,
        "Concluded",
        Some("conclusion.md"),
        Some(10),
        t(10),
    )
    .unwrap();
    let report = f.validate().unwrap();
    assert!(
        report.errors.is_empty() && report.warnings.is_empty(),
        "{report:#?}"
    );

    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/collab-corpus/valid");
    std::fs::create_dir_all(&out).unwrap();
    for name in aea::collab::REQUIRED_FILES {
        std::fs::copy(f.path().join(name), out.join(name)).unwrap();
    }
    std::fs::write(
        out.join("expected.json"),
        "{\"errors\": [], \"warnings\": [], \"contains\": \"\"}\n",
    )
    .unwrap();
}
