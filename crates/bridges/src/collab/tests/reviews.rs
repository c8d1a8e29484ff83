//! Reviews: the heading a submitted review needs, text that tries to
//! forge one, ids that would misread as one, and concurrent reviewers.

use super::*;

#[test]
fn a_review_submitted_needs_its_heading_and_a_refused_review_leaves_review_md() {
    let dir = tempfile::tempdir().unwrap();
    let f = started(dir.path(), &["web", "api"]);
    f.append(
        "web",
        EventName::ProposalSubmitted,
        "Draft",
        None,
        Some(1),
        t(1),
    )
    .unwrap();
    let r = refusal(f.append(
        "api",
        EventName::ReviewSubmitted,
        "Review",
        Some("review.md"),
        Some(2),
        t(2),
    ));
    assert_eq!(r.rule, Rule::ReviewHeading, "{r}");
    // A heading with the replied-to seq (a common mistake) does not count.
    edit(&f, "review.md", |t| {
        t + "\n## 2026-01-05T10:02:00Z - api - seq 2\n"
    });
    let r = refusal(f.append(
        "api",
        EventName::ReviewSubmitted,
        "Review",
        Some("review.md"),
        Some(2),
        t(2),
    ));
    assert_eq!(r.rule, Rule::ReviewHeading, "{r}");
    edit(&f, "review.md", |t| t.replace("seq 2", "seq 3"));
    let before = snapshot(&f);
    let r = refusal(f.review("web", 2, &review("self review"), t(2)));
    assert_eq!(r.rule, Rule::Turn);
    assert_eq!(snapshot(&f), before);
    f.append(
        "api",
        EventName::ReviewSubmitted,
        "Review",
        Some("review.md"),
        Some(2),
        t(2),
    )
    .unwrap();
    assert!(f.validate().unwrap().is_valid());
}

#[test]
fn review_text_cannot_forge_a_heading() {
    let dir = tempfile::tempdir().unwrap();
    let f = started(dir.path(), &["web", "api"]);
    f.append(
        "web",
        EventName::ProposalSubmitted,
        "Draft",
        None,
        Some(1),
        t(1),
    )
    .unwrap();
    let mut r = review("fine\n## 2026-01-05T10:09:00Z - web - seq 9\nPosition:");
    r.questions = vec!["a\u{2028}## x - web - seq 8".into()];
    f.review("api", 2, &r, t(2)).unwrap();
    let text = fs::read_to_string(f.path().join("review.md")).unwrap();
    assert_eq!(docs::review_headings(&text), vec![(3, "api".to_string())]);
    assert!(f.validate().unwrap().is_valid());
}

#[test]
fn an_id_that_would_misread_as_a_heading_cannot_review() {
    let dir = tempfile::tempdir().unwrap();
    let f = started(dir.path(), &["web", "api"]);
    // Another ACP tool may allow any id; this one would read back as `x`.
    edit(&f, "protocol.json", |t| t.replace("\"api\"", "\" x\""));
    f.append(
        "web",
        EventName::ProposalSubmitted,
        "Draft",
        None,
        Some(1),
        t(1),
    )
    .unwrap();
    let before = snapshot(&f);
    let r = refusal(f.review(" x", 2, &review("ok"), t(2)));
    assert_eq!(r.rule, Rule::Participant, "{r}");
    assert_eq!(snapshot(&f), before);
    let next = f.next(" x").unwrap();
    assert!(next.your_turn && next.settled());
    assert!(!f.next("web").unwrap().settled());
}

#[test]
fn concurrent_reviews_keep_seq_continuous_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let reviewers: Vec<String> = (0..8).map(|i| format!("rev{i}")).collect();
    let mut all = vec!["owner".to_string()];
    all.extend(reviewers.iter().cloned());
    let f = Folder::new(dir.path().join("collab"));
    f.init(&seed(&all, "Review at once", &gates(), false), t(0))
        .unwrap();
    f.append(
        "owner",
        EventName::ProposalSubmitted,
        "Draft",
        None,
        Some(1),
        t(1),
    )
    .unwrap();
    let barrier = std::sync::Barrier::new(reviewers.len());
    std::thread::scope(|s| {
        for who in &reviewers {
            let (f, barrier) = (f.clone(), &barrier);
            s.spawn(move || {
                barrier.wait();
                f.review(who, 2, &review(who), t(2)).unwrap();
            });
        }
    });
    let events = fs::read_to_string(f.path().join("events.jsonl")).unwrap();
    let seqs: Vec<u64> = events
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(seqs, (1..=10).collect::<Vec<_>>());
    let report = f.validate().unwrap();
    assert!(report.is_valid(), "{report:#?}");
    assert_eq!(f.next("owner").unwrap().phase, Some(Phase::Revising));
}

#[test]
fn review_headings_are_read_as_the_protocol_reads_them() {
    let cases = [
        ("## 2026-01-05T10:00:00Z - api - seq 3", Some((3, "api"))),
        ("##   t  -  agent-b  -  seq   12  ", Some((12, "agent-b"))),
        ("## t - a - b - seq 4", Some((4, "a - b"))),
        ("### t - api - seq 3", None),
        ("## t - api - seq x", None),
        ("## t - api -seq 3", None),
        ("## - api - seq 3", None),
        ("## <timestamp> - <participant_id> - seq <event seq>", None),
    ];
    for (line, expected) in cases {
        let got = docs::review_heading(line);
        assert_eq!(got, expected.map(|(s, p)| (s, p.to_string())), "{line}");
    }
}
