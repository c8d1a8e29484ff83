//! Collaboration folders under real concurrent processes: participants
//! appending at the same moment get continuous seqs and lose nothing.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::poll_until;

use aea::collab::{EventName, Folder, Phase, Review};
use chrono::Utc;

/// Set in the children this test binary starts: `<folder>|<participant>`.
const CHILD: &str = "AEA_TEST_COLLAB_CHILD";

/// One participant in a child process: says it is ready, waits for the
/// start signal, appends its review.
#[test]
#[ignore = "run as a child process by eight_processes_review_at_once"]
fn a_child_reviews() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let (folder, who) = spec.split_once('|').unwrap();
    let folder = Path::new(folder);
    std::fs::write(folder.join(format!("ready-{who}")), b"").unwrap();
    assert!(
        poll_until(Duration::from_secs(60), || folder.join("go").exists()),
        "timed out waiting for the start signal"
    );
    let review = Review {
        summary: format!("{who} reviewed"),
        position: vec![format!("{who} agrees")],
        ..Review::default()
    };
    Folder::new(folder.join("c"))
        .review(who, 2, &review, Utc::now())
        .unwrap();
}

#[test]
fn eight_processes_review_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let reviewers: Vec<String> = (0..8).map(|i| format!("rev{i}")).collect();
    let mut participants = vec!["owner".to_string()];
    participants.extend(reviewers.iter().cloned());
    let f = Folder::new(tmp.path().join("c"));
    f.init(
        &participants,
        "Review at once",
        &["Reviewed".into()],
        false,
        Utc::now(),
    )
    .unwrap();
    f.append(
        "owner",
        EventName::ProposalSubmitted,
        "Draft",
        None,
        Some(1),
        Utc::now(),
    )
    .unwrap();

    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = reviewers
        .iter()
        .map(|who| {
            Command::new(&exe)
                .args(["collab::a_child_reviews", "--exact", "--ignored", "--quiet"])
                .env(CHILD, format!("{}|{who}", tmp.path().display()))
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let ready = poll_until(Duration::from_secs(60), || {
        reviewers
            .iter()
            .all(|who| tmp.path().join(format!("ready-{who}")).exists())
    });
    assert!(ready, "timed out waiting for every child to be ready");
    std::fs::write(tmp.path().join("go"), b"").unwrap();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }

    let log = std::fs::read_to_string(f.path().join("events.jsonl")).unwrap();
    let seqs: Vec<u64> = log
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(seqs, (1..=10).collect::<Vec<_>>(), "{log}");
    let report = f.validate().unwrap();
    assert!(report.is_valid(), "{report:#?}");
    assert_eq!(f.next("owner").unwrap().phase, Some(Phase::Revising));
}
