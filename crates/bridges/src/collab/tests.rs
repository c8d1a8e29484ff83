//! The state machine, the gates and the writers, on real folders: the
//! helpers every topic shares, and the topics as child modules.

use std::fs;
use std::path::Path;

use chrono::{DateTime, Duration, TimeZone, Utc};

use super::*;
use crate::error::Error;

mod documents;
mod files;
mod flow;
mod reviews;
mod schema2;
mod upstream;

fn t(minutes: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 5, 10, 0, 0).unwrap() + Duration::minutes(minutes)
}

fn ids(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| (*s).to_string()).collect()
}

fn gates() -> Vec<String> {
    ids(&["Decisions accepted by both", "Conclusion written"])
}

/// A schema 1 start (the seed's form): what these tests drive.
fn seed(participants: &[String], objective: &str, gates: &[String], resume: bool) -> Init {
    Init {
        schema: Schema::One,
        resume,
        ..Init::new(participants, objective, gates)
    }
}

fn started(dir: &Path, participants: &[&str]) -> Folder {
    let folder = Folder::new(dir.join("collab"));
    folder
        .init(
            &seed(&ids(participants), "Agree on the API", &gates(), false),
            t(0),
        )
        .unwrap()
        .expect("a new collaboration");
    // What the proposal owner writes before anyone accepts: aea refuses
    // decision_accepted over the skeleton init wrote.
    std::fs::write(
        folder.path().join("decisions.md"),
        "# Decisions\n\n## Accepted Decisions\n\n- JSON over HTTP.\n",
    )
    .unwrap();
    folder
}

fn refusal(result: crate::error::Result<Appended>) -> Refusal {
    let e = match result {
        Err(e) => e,
        Ok(appended) => panic!("expected a refusal, got Ok({appended:?})"),
    };
    Refusal::of(&e)
        .cloned()
        .unwrap_or_else(|| panic!("expected a refusal, got Err({e:?})"))
}

/// Every file of the folder, for "nothing was written".
fn snapshot(folder: &Folder) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = fs::read_dir(folder.path())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

fn edit(folder: &Folder, name: &str, f: impl FnOnce(String) -> String) {
    let path = folder.path().join(name);
    let text = fs::read_to_string(&path).unwrap();
    fs::write(&path, f(text)).unwrap();
}

fn review(text: &str) -> Review {
    Review {
        summary: format!("Reviewed: {text}"),
        position: vec![text.into()],
        concerns: vec![],
        required_changes: vec!["Name the error codes".into()],
        questions: vec![],
    }
}

const CONCLUSION_TEXT: &str = "# Conclusion\n\n## Decision Outcome\n\n- [proceed] Build the API as proposed.\n\n## Rationale\n\nBoth sides agree.\n\n## Accepted Decisions\n\n- JSON over HTTP.\n\n## Implementation Approach\n\nOne endpoint first.\n\n## Assumptions\n\n- One client.\n\n## Deferred Follow-ups\n\n- Pagination.\n\n## Implementation Blockers\n\n- None.\n\n## Next Action\n\nweb opens the first pull request.\n";

/// A collaboration of web (owner) and api up to web's question_classified
/// (seq 6), through two review rounds: the decisions are next.
fn until_classified(dir: &Path) -> Folder {
    let f = started(dir, &["web", "api"]);
    f.append(
        "web",
        EventName::ProposalSubmitted,
        "First proposal",
        Some("proposal.md"),
        Some(1),
        t(1),
    )
    .unwrap();
    f.review("api", 2, &review("Mostly fine"), t(2)).unwrap();
    f.append(
        "web",
        EventName::ProposalSubmitted,
        "Error codes named",
        Some("proposal.md"),
        Some(3),
        t(3),
    )
    .unwrap();
    f.review("api", 4, &review("Good now"), t(4)).unwrap();
    f.append(
        "web",
        EventName::ProposalRevised,
        "Final wording",
        Some("proposal.md"),
        Some(5),
        t(5),
    )
    .unwrap();
    edit(&f, "readiness.md", |t| {
        t.replace(
            "- [unresolved] List each open question of proposal.md here.",
            "- [unresolved] Which status code for a conflict?\n- [unresolved] Pagination now or later?",
        )
    });
    f.classify(1, Classification::Resolved, None).unwrap();
    assert_eq!(f.readiness().unwrap().items.len(), 2);
    f.classify(
        2,
        Classification::DeferredNonblocking,
        Some("one client needs no pages"),
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
    f
}

/// Drives web (owner) and api from init to completed; returns the folder.
fn full_collaboration(dir: &Path) -> Folder {
    let f = until_classified(dir);
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
    fs::write(f.path().join("conclusion.md"), CONCLUSION_TEXT).unwrap();
    f.append(
        "web",
        EventName::Completed,
        "Done",
        Some("conclusion.md"),
        Some(10),
        t(10),
    )
    .unwrap();
    f
}
