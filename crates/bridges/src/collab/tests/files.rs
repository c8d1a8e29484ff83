//! What is on disk: protocol.json and participants as other tools write
//! them, hostile and broken files, and the event log's lines.

use super::*;

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
    g.init(&seed(&ids(&["web", "api"]), "O", &gates(), false), t(0))
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
fn events_are_one_line_each_whatever_the_summary_holds() {
    let e = Event {
        seq: 2,
        from: "web".into(),
        event: EventName::Blocked,
        at: "2026-01-05T10:00:00Z".into(),
        summary: "a\u{2028}b\u{85}c\nd".into(),
        doc: None,
        reply_to: Some(1),
        role: None,
        sha256: None,
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
        .init(&seed(&ids(&["web", "api"]), "o", &gates(), false), start)
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
    // Not the advice for a line edited by hand: this one is removed.
    assert_eq!(torn.advice, Advice::TornLine, "{torn:?}");
    // Doing what it says gets the collaboration going again.
    fs::write(f.path().join("events.jsonl"), whole).unwrap();
    f.append("web", EventName::Blocked, "Stop", None, Some(1), t(1))
        .unwrap();
}
