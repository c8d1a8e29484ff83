//! The state machine on a whole collaboration: phases and turns as the
//! log moves them, events the rules refuse, the clock, init and resume.

use super::*;

#[test]
fn a_full_collaboration_validates_without_errors_or_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let f = full_collaboration(dir.path());
    let report = f.validate().unwrap();
    assert_eq!(
        report,
        Report {
            schema: Some(Schema::One),
            ..Report::default()
        },
        "{report:#?}"
    );
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
    assert!(
        matches!(&r.advice, Advice::Plain(advice) if advice.contains("web")),
        "{:?}",
        r.advice
    );
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
    assert_eq!(
        f.validate().unwrap(),
        Report {
            schema: Some(Schema::One),
            ..Report::default()
        }
    );
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
        assert_ne!(r.advice, Advice::Plain(String::new()));
    }
    let r = refusal(f.append("web", EventName::Blocked, " \n ", None, Some(1), t(1)));
    assert_eq!(r.rule, Rule::EventField);
    assert_eq!(snapshot(&f), before);
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
    let again = f.init(&seed(&ids(&["api", "web"]), "Other", &gates(), false), t(5));
    assert!(matches!(
        again.as_ref().err().and_then(Refusal::of),
        Some(Refusal {
            rule: Rule::Exists,
            ..
        })
    ));
    assert_eq!(
        f.init(&seed(&ids(&["api"]), "Other", &gates(), true), t(5))
            .unwrap(),
        None
    );
    assert_eq!(snapshot(&f), before);
    fs::remove_file(f.path().join("decisions.md")).unwrap();
    f.init(&seed(&ids(&["api"]), "Other", &gates(), true), t(5))
        .unwrap();
    assert!(f.path().join("decisions.md").is_file());

    let bad = Folder::new(dir.path().join("bad"));
    let e = bad
        .init(&seed(&ids(&["../x"]), "O", &gates(), false), t(0))
        .unwrap_err();
    assert!(matches!(e, Error::InvalidAgentId { .. }), "{e:?}");
    let e = bad
        .init(
            &seed(&ids(&["web"]), "O", &ids(&["no state.log"]), false),
            t(0),
        )
        .unwrap_err();
    assert!(matches!(
        Refusal::of(&e),
        Some(Refusal {
            rule: Rule::ForbiddenReference,
            ..
        })
    ));
    assert!(
        bad.init(&seed(&ids(&["web"]), " ", &gates(), false), t(0))
            .is_err()
    );
}
