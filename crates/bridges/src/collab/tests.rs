//! The state machine, the gates and the writers, on real folders.

use std::fs;
use std::path::Path;

use chrono::{DateTime, Duration, TimeZone, Utc};

use super::*;
use crate::error::Error;

fn t(minutes: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 5, 10, 0, 0).unwrap() + Duration::minutes(minutes)
}

fn ids(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| (*s).to_string()).collect()
}

fn gates() -> Vec<String> {
    ids(&["Decisions accepted by both", "Conclusion written"])
}

fn started(dir: &Path, participants: &[&str]) -> Folder {
    let folder = Folder::new(dir.join("collab"));
    folder
        .init(
            &ids(participants),
            "Agree on the API",
            &gates(),
            false,
            t(0),
        )
        .unwrap()
        .expect("a new collaboration");
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

/// Drives web (owner) and api from init to completed, through two review
/// rounds; returns the folder.
fn full_collaboration(dir: &Path) -> Folder {
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

#[test]
fn a_full_collaboration_validates_without_errors_or_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let f = full_collaboration(dir.path());
    let report = f.validate().unwrap();
    assert_eq!(report, Report::default(), "{report:#?}");
    let protocol: serde_json::Value =
        serde_json::from_slice(&fs::read(f.path().join("protocol.json")).unwrap()).unwrap();
    assert_eq!(protocol["currentPhase"], "completed");
    assert_eq!(protocol["waitingFor"], serde_json::json!([]));
    assert_eq!(protocol["proposalOwner"], "web");
    assert_eq!(protocol["updatedAt"], "2026-01-05T10:10:00Z");
    let review = fs::read_to_string(f.path().join("review.md")).unwrap();
    assert!(
        review.contains("## 2026-01-05T10:02:00Z - api - seq 3\n"),
        "{review}"
    );
    assert!(
        review.contains("## 2026-01-05T10:04:00Z - api - seq 5\n"),
        "{review}"
    );
    let next = f.next("api").unwrap();
    assert_eq!(next.phase, Some(Phase::Completed));
    assert!(!next.your_turn);
}

#[test]
fn the_phases_and_turns_follow_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let f = started(dir.path(), &["web", "api", "ops"]);
    let next = f.next("web").unwrap();
    assert_eq!((next.phase, next.your_turn), (Some(Phase::Drafting), true));
    assert_eq!(next.waiting_for, ids(&["web"]));
    assert_eq!(next.reply_to, Some(1));
    assert!(!f.next("api").unwrap().your_turn);

    let r = refusal(f.append(
        "api",
        EventName::ProposalSubmitted,
        "Mine",
        None,
        Some(1),
        t(1),
    ));
    assert_eq!(r.rule, Rule::Turn, "{r}");
    let appended = f
        .append(
            "web",
            EventName::ProposalSubmitted,
            "Draft",
            None,
            Some(1),
            t(1),
        )
        .unwrap();
    assert_eq!(appended.phase, Phase::Reviewing);
    assert_eq!(appended.woken, ids(&["api", "ops"]));
    let next = f.next("ops").unwrap();
    assert_eq!(next.phase, Some(Phase::Reviewing));
    assert_eq!(next.waiting_for, ids(&["api", "ops"]));
    assert!(
        next.your_turn && next.action.contains("aea collab review"),
        "{}",
        next.action
    );

    let appended = f.review("ops", 2, &review("ok"), t(2)).unwrap();
    assert_eq!(appended.waiting_for, ids(&["api"]));
    assert!(appended.woken.is_empty(), "api was waited for already");
    let r = refusal(f.review("ops", 2, &review("again"), t(3)));
    assert_eq!(r.rule, Rule::Turn);
    f.review("api", 2, &review("ok"), t(3)).unwrap();
    assert_eq!(f.next("web").unwrap().phase, Some(Phase::Revising));

    let r = refusal(f.append(
        "web",
        EventName::DecisionAccepted,
        "Accept",
        None,
        Some(4),
        t(4),
    ));
    assert_eq!(r.rule, Rule::Phase, "{r}");
    f.append(
        "web",
        EventName::DecisionProposed,
        "Decide",
        None,
        Some(4),
        t(4),
    )
    .unwrap();
    let r = refusal(f.append(
        "api",
        EventName::DecisionAccepted,
        "Accept",
        None,
        Some(5),
        t(5),
    ));
    assert_eq!(r.rule, Rule::Classification, "{r}");
    assert!(r.message.contains("(seq 5)"), "{r}");
    assert!(r.hint.contains("web"), "{}", r.hint);
    assert!(
        f.next("web")
            .unwrap()
            .action
            .contains("question_classified")
    );

    // The skeleton's open question is still [unresolved]: no acceptance yet.
    let appended = f
        .append(
            "web",
            EventName::QuestionClassified,
            "Classified",
            None,
            Some(5),
            t(5),
        )
        .unwrap();
    assert_eq!(appended.woken, ids(&["api", "ops"]), "not the author");
    assert_eq!(
        f.next("web").unwrap().waiting_for,
        ids(&["api", "ops", "web"])
    );
    let r = refusal(f.append(
        "api",
        EventName::DecisionAccepted,
        "Accept",
        None,
        Some(6),
        t(6),
    ));
    assert_eq!(r.rule, Rule::UnresolvedItem, "{r}");
    f.classify(1, Classification::Blocking, None).unwrap();
    let r = refusal(f.append(
        "api",
        EventName::DecisionAccepted,
        "Accept",
        None,
        Some(6),
        t(6),
    ));
    assert_eq!(r.rule, Rule::BlockingItem, "{r}");
    f.classify(1, Classification::Resolved, None).unwrap();
    f.append(
        "api",
        EventName::DecisionAccepted,
        "Accept",
        None,
        Some(6),
        t(6),
    )
    .unwrap();
    f.append(
        "ops",
        EventName::DecisionAccepted,
        "Accept",
        None,
        Some(7),
        t(7),
    )
    .unwrap();
    let r = refusal(f.append(
        "web",
        EventName::Completed,
        "Done",
        Some("conclusion.md"),
        Some(8),
        t(8),
    ));
    assert_eq!(r.rule, Rule::CompletionOrder, "{r}");
    f.append(
        "web",
        EventName::DecisionAccepted,
        "Accept",
        None,
        Some(8),
        t(8),
    )
    .unwrap();
    assert_eq!(f.next("web").unwrap().phase, Some(Phase::ReadinessCheck));

    let r = refusal(f.append(
        "web",
        EventName::Completed,
        "Done",
        Some("conclusion.md"),
        Some(9),
        t(9),
    ));
    assert_eq!(r.rule, Rule::CompletionOrder, "{r}");
    let r = refusal(f.append(
        "web",
        EventName::ReadinessPassed,
        "Ready",
        None,
        Some(9),
        t(9),
    ));
    assert_eq!(r.rule, Rule::ReadyToImplement, "{r}");
    edit(&f, "readiness.md", |t| {
        t.replace("- [ ] Ready to implement", "- [x] Ready to implement")
    });
    let r = refusal(f.append(
        "api",
        EventName::ReadinessPassed,
        "Ready",
        None,
        Some(9),
        t(9),
    ));
    assert_eq!(r.rule, Rule::Turn, "{r}");
    f.append(
        "web",
        EventName::ReadinessPassed,
        "Ready",
        None,
        Some(9),
        t(9),
    )
    .unwrap();

    let r = refusal(f.append(
        "web",
        EventName::Completed,
        "Done",
        Some("proposal.md"),
        Some(10),
        t(10),
    ));
    assert_eq!(r.rule, Rule::CompletionDoc, "{r}");
    let r = refusal(f.append(
        "web",
        EventName::Completed,
        "Done",
        Some("conclusion.md"),
        Some(10),
        t(10),
    ));
    assert_eq!(r.rule, Rule::CompletionGates, "{r}");
    edit(&f, "readiness.md", |t| t.replace("- [ ]", "- [x]"));
    // The skeleton conclusion has placeholders and a [blocked] outcome.
    let r = refusal(f.append(
        "web",
        EventName::Completed,
        "Done",
        Some("conclusion.md"),
        Some(10),
        t(10),
    ));
    assert_eq!(r.rule, Rule::Conclusion, "{r}");
    fs::write(
        f.path().join("conclusion.md"),
        CONCLUSION_TEXT.replace("## Rationale", "## Why"),
    )
    .unwrap();
    let r = refusal(f.append(
        "web",
        EventName::Completed,
        "Done",
        Some("conclusion.md"),
        Some(10),
        t(10),
    ));
    assert!(r.message.contains("Rationale"), "{r}");
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
    assert_eq!(f.validate().unwrap(), Report::default());
    let r = refusal(f.append(
        "web",
        EventName::ProposalSubmitted,
        "Again",
        None,
        Some(11),
        t(11),
    ));
    assert_eq!(r.rule, Rule::Phase);
}

/// Author, event, doc, reply_to, and the rule that refuses it.
type Case<'a> = (&'a str, EventName, Option<&'a str>, Option<u64>, Rule);

#[test]
fn a_refused_event_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let f = started(dir.path(), &["web", "api"]);
    let before = snapshot(&f);
    let cases: [Case; 7] = [
        (
            "web",
            EventName::ProposalSubmitted,
            None,
            None,
            Rule::ReplyTo,
        ),
        (
            "web",
            EventName::ProposalSubmitted,
            None,
            Some(2),
            Rule::ReplyTo,
        ),
        (
            "web",
            EventName::ProposalSubmitted,
            Some("../outside.md"),
            Some(1),
            Rule::DocPath,
        ),
        (
            "web",
            EventName::ProposalSubmitted,
            Some("/etc/passwd"),
            Some(1),
            Rule::DocPath,
        ),
        ("eve", EventName::Blocked, None, Some(1), Rule::Participant),
        ("web", EventName::Initialized, None, None, Rule::Seq),
        (
            "api",
            EventName::ReviewSubmitted,
            None,
            Some(1),
            Rule::Phase,
        ),
    ];
    for (who, event, doc, reply_to, rule) in cases {
        let r = refusal(f.append(who, event, "Something", doc, reply_to, t(1)));
        assert_eq!(r.rule, rule, "{who} {event}: {r}");
        assert!(!r.hint.is_empty());
    }
    let r = refusal(f.append("web", EventName::Blocked, " \n ", None, Some(1), t(1)));
    assert_eq!(r.rule, Rule::EventField);
    assert_eq!(snapshot(&f), before);
}

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
fn time_never_goes_back_even_when_the_clock_does() {
    let dir = tempfile::tempdir().unwrap();
    let f = started(dir.path(), &["web", "api"]);
    let e = f
        .append(
            "web",
            EventName::ProposalSubmitted,
            "Draft",
            None,
            Some(1),
            t(-60),
        )
        .unwrap();
    assert_eq!(e.event.at, "2026-01-05T10:00:00Z");
    let sub = t(5) + Duration::milliseconds(700);
    let e = f.review("api", 2, &review("ok"), sub).unwrap();
    assert_eq!(e.event.at, "2026-01-05T10:05:00Z");
    assert!(f.validate().unwrap().is_valid());
}

#[test]
fn init_refuses_an_existing_collaboration_and_resume_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let f = started(dir.path(), &["web", "api"]);
    let report = f.validate().unwrap();
    assert!(report.is_valid(), "{report:#?}");
    assert!(report.warnings.is_empty());
    let events = fs::read_to_string(f.path().join("events.jsonl")).unwrap();
    assert_eq!(
        events,
        "{\"seq\":1,\"from\":\"web\",\"event\":\"initialized\",\"at\":\"2026-01-05T10:00:00Z\",\"summary\":\"Collaboration initialized\",\"doc\":\"protocol.json\"}\n"
    );
    let before = snapshot(&f);
    let again = f.init(&ids(&["api", "web"]), "Other", &gates(), false, t(5));
    assert!(matches!(
        again.as_ref().err().and_then(Refusal::of),
        Some(Refusal {
            rule: Rule::Exists,
            ..
        })
    ));
    assert_eq!(
        f.init(&ids(&["api"]), "Other", &gates(), true, t(5))
            .unwrap(),
        None
    );
    assert_eq!(snapshot(&f), before);
    fs::remove_file(f.path().join("decisions.md")).unwrap();
    f.init(&ids(&["api"]), "Other", &gates(), true, t(5))
        .unwrap();
    assert!(f.path().join("decisions.md").is_file());

    let bad = Folder::new(dir.path().join("bad"));
    let e = bad
        .init(&ids(&["../x"]), "O", &gates(), false, t(0))
        .unwrap_err();
    assert!(matches!(e, Error::InvalidAgentId { .. }), "{e:?}");
    let e = bad
        .init(&ids(&["web"]), "O", &ids(&["no state.log"]), false, t(0))
        .unwrap_err();
    assert!(matches!(
        Refusal::of(&e),
        Some(Refusal {
            rule: Rule::ForbiddenReference,
            ..
        })
    ));
    assert!(
        bad.init(&ids(&["web"]), " ", &gates(), false, t(0))
            .is_err()
    );
}

#[test]
fn protocol_json_keeps_keys_it_does_not_know() {
    let dir = tempfile::tempdir().unwrap();
    let f = started(dir.path(), &["web", "api"]);
    edit(&f, "protocol.json", |t| {
        t.replacen('{', "{\n  \"x-tool\": {\"n\": 1},", 1)
    });
    f.append(
        "web",
        EventName::ProposalSubmitted,
        "Draft",
        None,
        Some(1),
        t(1),
    )
    .unwrap();
    let protocol: serde_json::Value =
        serde_json::from_slice(&fs::read(f.path().join("protocol.json")).unwrap()).unwrap();
    assert_eq!(protocol["x-tool"]["n"], 1);
    assert_eq!(protocol["waitingFor"], serde_json::json!(["api"]));
}

#[test]
fn participants_written_as_strings_are_read_too() {
    let dir = tempfile::tempdir().unwrap();
    let f = started(dir.path(), &["web", "api"]);
    edit(&f, "protocol.json", |t| {
        t.replace("{\n      \"id\": \"web\"\n    }", "\"web\"")
    });
    assert!(
        fs::read_to_string(f.path().join("protocol.json"))
            .unwrap()
            .contains("\"web\",")
    );
    f.append(
        "web",
        EventName::ProposalSubmitted,
        "Draft",
        None,
        Some(1),
        t(1),
    )
    .unwrap();
}

#[cfg(unix)]
#[test]
fn hostile_files_are_refused_never_followed_or_blocked_on() {
    let dir = tempfile::tempdir().unwrap();
    let f = started(dir.path(), &["web", "api"]);
    let outside = dir.path().join("outside.jsonl");
    fs::write(&outside, "").unwrap();
    fs::remove_file(f.path().join("events.jsonl")).unwrap();
    std::os::unix::fs::symlink(&outside, f.path().join("events.jsonl")).unwrap();
    let r = refusal(f.append("web", EventName::Blocked, "Stop", None, Some(1), t(1)));
    assert_eq!(r.rule, Rule::UnsafeFile, "{r}");
    assert_eq!(fs::read(&outside).unwrap(), b"");
    let report = f.validate().unwrap();
    assert!(
        report.errors.iter().any(|e| e.rule == Rule::UnsafeFile),
        "{report:#?}"
    );

    let g = Folder::new(dir.path().join("g"));
    g.init(&ids(&["web", "api"]), "O", &gates(), false, t(0))
        .unwrap();
    fs::remove_file(g.path().join("readiness.md")).unwrap();
    let fifo = g.path().join("readiness.md");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let report = g.validate().unwrap();
    assert!(
        report.errors.iter().any(|e| e.rule == Rule::UnsafeFile),
        "{report:#?}"
    );
    assert!(g.classify(1, Classification::Resolved, None).is_err());

    fs::write(
        g.path().join("protocol.json"),
        "{\"participants\": [1, {\"id\": 2}], \"waitingFor\": 3",
    )
    .unwrap();
    let r = refusal(g.append("web", EventName::Blocked, "Stop", None, Some(1), t(1)));
    assert_eq!(r.rule, Rule::ProtocolFile);
    fs::write(
        g.path().join("protocol.json"),
        "{\"participants\": [1, {\"id\": 2}], \"waitingFor\": 3}",
    )
    .unwrap();
    let r = refusal(g.append("web", EventName::Blocked, "Stop", None, Some(1), t(1)));
    assert_eq!(r.rule, Rule::Participant);
    assert!(!g.validate().unwrap().is_valid());
    fs::write(
        g.path().join("events.jsonl"),
        "[1]\n{\"seq\": \"x\", \"reply_to\": {}, \"at\": 5}\nnull\n",
    )
    .unwrap();
    assert!(!g.validate().unwrap().is_valid());
}

#[test]
fn a_broken_log_takes_no_more_events() {
    let dir = tempfile::tempdir().unwrap();
    let f = started(dir.path(), &["web", "api"]);
    edit(&f, "events.jsonl", |t| t.replace("\"seq\":1", "\"seq\":2"));
    let r = refusal(f.append("web", EventName::Blocked, "Stop", None, Some(1), t(1)));
    assert_eq!(r.rule, Rule::Seq, "{r}");
    assert!(
        r.message.starts_with("events.jsonl already breaks a rule"),
        "{r}"
    );
    assert!(!f.next("web").unwrap().log_valid);
}

#[test]
fn concurrent_reviews_keep_seq_continuous_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let reviewers: Vec<String> = (0..8).map(|i| format!("rev{i}")).collect();
    let mut all = vec!["owner".to_string()];
    all.extend(reviewers.iter().cloned());
    let f = Folder::new(dir.path().join("collab"));
    f.init(&all, "Review at once", &gates(), false, t(0))
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

#[test]
fn readiness_items_are_parsed_and_classified_in_place() {
    let text = "# R\n\n- [unresolved] Q1?\n  - [deferred_nonblocking] Q2\r\n- [x] Gate\n- [ ] Other\n- [weird] Q3\n";
    let items = readiness_items(text);
    assert_eq!(items.len(), 2);
    assert_eq!(
        (items[1].line, items[1].class),
        (4, Classification::DeferredNonblocking)
    );
    let scan = scan_readiness(text);
    assert_eq!(scan.unresolved, ids(&["Q1?"]));
    assert_eq!(scan.deferred_missing_reason, ids(&["Q2"]));
    assert_eq!(
        scan.unchecked_gates(&ids(&["Gate", "Other"])),
        ids(&["Other"])
    );
    assert!(!scan.ready_to_implement);

    let r = set_classification(text, 2, Classification::DeferredNonblocking, None).unwrap_err();
    assert_eq!(r.rule, Rule::DeferredReason);
    let out = set_classification(
        text,
        2,
        Classification::DeferredNonblocking,
        Some("later\n## x"),
    )
    .unwrap();
    assert_eq!(
        out,
        text.replace(
            "- [deferred_nonblocking] Q2\r",
            "- [deferred_nonblocking] Q2 Reason: later ## x\r"
        )
    );
    let out = set_classification(&out, 1, Classification::Resolved, None).unwrap();
    assert!(out.contains("\n- [resolved] Q1?\n"));
    assert_eq!(
        set_classification(text, 3, Classification::Resolved, None)
            .unwrap_err()
            .rule,
        Rule::ReadinessItem
    );
    assert_eq!(
        set_classification(text, 0, Classification::Resolved, None)
            .unwrap_err()
            .rule,
        Rule::ReadinessItem
    );
    let tbd = scan_readiness("- [resolved] TBD later\n");
    assert_eq!(tbd.unresolved.len(), 1);
}

#[test]
fn the_conclusion_skeleton_has_every_heading_but_cannot_complete() {
    let skeleton = conclusion_skeleton();
    let scan = scan_conclusion(&skeleton);
    assert!(scan.missing_headings.is_empty());
    let problems = scan.problems();
    assert!(
        problems.iter().any(|p| p.contains("blocked")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("placeholders")),
        "{problems:?}"
    );
    assert!(scan_conclusion(CONCLUSION_TEXT).problems().is_empty());
    let two = CONCLUSION_TEXT.replace("- Pagination.", "- [defer] Pagination.");
    assert_eq!(scan_conclusion(&two).problems().len(), 1);
    let todo = CONCLUSION_TEXT.replace("Both sides agree.", "todo: say why");
    assert_eq!(scan_conclusion(&todo).placeholders, ids(&["todo"]));
    let fine = CONCLUSION_TEXT.replace("Both sides agree.", "TODOs_done and TBDx are words");
    assert!(scan_conclusion(&fine).problems().is_empty());
}

#[test]
fn events_are_one_line_each_whatever_the_summary_holds() {
    let e = Event {
        seq: 2,
        from: "web".into(),
        event: EventName::Blocked,
        at: "2026-01-05T10:00:00Z".into(),
        summary: "a\u{2028}b\u{85}c\nd".into(),
        doc: None,
        reply_to: Some(1),
    };
    let line = e.to_line();
    assert_eq!(line.matches('\n').count(), 1);
    assert!(!line.contains('\u{2028}') && !line.contains('\u{85}'));
    let back: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(back["summary"], "a\u{2028}b\u{85}c\nd");
}

/// Events are written in whole seconds, `initialized` too: a fraction on
/// it read as "the clock went back" to the events of the same second,
/// which then all carried it (`10:00:00.7Z` instead of their own time).
#[test]
fn every_event_is_written_in_whole_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let f = Folder::new(dir.path().join("collab"));
    let start = t(0) + Duration::milliseconds(700);
    let init = f
        .init(&ids(&["web", "api"]), "o", &gates(), false, start)
        .unwrap()
        .unwrap();
    assert_eq!(init.at, "2026-01-05T10:00:00Z");
    let e = f
        .append(
            "web",
            EventName::ProposalSubmitted,
            "Draft",
            None,
            Some(1),
            start + Duration::milliseconds(100),
        )
        .unwrap();
    assert_eq!(e.event.at, "2026-01-05T10:00:00Z");
    let protocol: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.path().join("collab/protocol.json")).unwrap())
            .unwrap();
    assert_eq!(protocol["createdAt"], "2026-01-05T10:00:00Z", "{protocol}");
    assert!(f.validate().unwrap().is_valid());
}

/// A writer stopped mid-event (another tool killed, a disk full) leaves a
/// last line with no line end. aea appends nothing after it; what it says
/// must get the user out: that line is an event never written whole, to
/// remove — not "never edit it by hand", which left no way on.
#[test]
fn a_torn_last_line_says_how_to_get_out() {
    let dir = tempfile::tempdir().unwrap();
    let f = started(dir.path(), &["web", "api"]);
    let whole = fs::read_to_string(f.path().join("events.jsonl")).unwrap();
    edit(&f, "events.jsonl", |t| {
        format!("{t}{{\"seq\":2,\"from\":\"web\",\"ev")
    });
    let report = f.validate().unwrap();
    let torn = report
        .errors
        .iter()
        .find(|e| e.rule == Rule::EventLine)
        .expect("the torn line is found");
    assert!(torn.message.contains("line 2"), "{torn:?}");
    assert!(torn.message.contains("incomplete"), "{torn:?}");
    assert!(torn.hint.contains("remove"), "{torn:?}");
    assert!(!torn.hint.contains("never edit"), "{torn:?}");
    // Doing what it says gets the collaboration going again.
    fs::write(f.path().join("events.jsonl"), whole).unwrap();
    f.append("web", EventName::Blocked, "Stop", None, Some(1), t(1))
        .unwrap();
}
