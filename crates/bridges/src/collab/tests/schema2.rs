//! ACP schema 2: folders laid out as the protocol's scripts lay them out
//! ([`super::upstream`]) read, validate and take aea's appends; aea's own
//! schema 2 folders are those the scripts would write; the deliverable
//! rules; and the attacks on them.

use serde_json::Value;

use super::upstream::{Upstream, py_pretty_sorted};
use super::*;

const GATES: [&str; 2] = ["Accepted decisions are explicit", "Readiness passes"];
const DOC: &str = "deliverables/design-spec.md";

fn at(minutes: i64) -> String {
    crate::collab::log::format_time(t(minutes))
}

fn upstream(dir: &Path) -> Upstream {
    Upstream::init(
        &dir.join("collab"),
        &["server", "reader"],
        "Decide ACP deliverable protocol",
        &GATES,
        "design-spec",
        None,
        &[],
        &at(0),
    )
}

fn valid(f: &Folder) {
    let report = f.validate().unwrap();
    assert_eq!(report.schema, Some(Schema::Two), "{report:#?}");
    assert!(report.errors.is_empty(), "{report:#?}");
    assert!(report.warnings.is_empty(), "{report:#?}");
}

fn rules(f: &Folder) -> Vec<Rule> {
    f.validate()
        .unwrap()
        .errors
        .iter()
        .map(|e| e.rule)
        .collect()
}

fn two(dir: &Path) -> Folder {
    let f = Folder::new(dir.join("collab"));
    f.init(
        &Init::new(
            &ids(&["server", "reader"]),
            "Decide ACP deliverable protocol",
            &ids(&GATES),
        ),
        t(0),
    )
    .unwrap()
    .unwrap();
    f
}

fn deliverable(
    f: &Folder,
    name: &str,
    fields: &Fields,
    who: &str,
    m: i64,
) -> Result<Appended, Error> {
    let name: EventName = name.parse().unwrap();
    f.append_fields(who, name, &format!("{name} by {who}"), fields, t(m))
}

fn replying(to: u64) -> Fields {
    Fields {
        reply_to: Some(to),
        ..Fields::default()
    }
}

#[test]
fn protocol_json_is_byte_for_byte_what_the_protocols_initializer_writes() {
    let dir = tempfile::tempdir().unwrap();
    let ours = two(dir.path());
    let theirs = upstream(&dir.path().join("theirs"));
    let read = |p: &Path| fs::read_to_string(p.join("protocol.json")).unwrap();
    assert_eq!(read(ours.path()), read(&theirs.path));
    // The primary deliverable's template too.
    assert_eq!(
        fs::read_to_string(ours.path().join(DOC)).unwrap(),
        theirs.read(DOC)
    );
    // The initialized event differs only in its summary's words.
    let line: Value = serde_json::from_str(
        fs::read_to_string(ours.path().join("events.jsonl"))
            .unwrap()
            .trim(),
    )
    .unwrap();
    let keys: Vec<&str> = line
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["seq", "from", "event", "at", "summary", "doc"]);
    valid(&ours);
}

#[test]
fn the_harness_writes_json_as_python_does() {
    // What `json.dumps(…, ensure_ascii=False, indent=2, sort_keys=True)`
    // prints for these (read off CPython's encoder: ", " is "," once
    // indented, control characters as \u00XX, the rest raw).
    let v = serde_json::json!({"b": [], "a": {"z": "é\u{1}\n", "y": [1, {}]}});
    assert_eq!(
        py_pretty_sorted(&v),
        "{\n  \"a\": {\n    \"y\": [\n      1,\n      {}\n    ],\n    \"z\": \"é\\u0001\\n\"\n  },\n  \"b\": []\n}"
    );
}

/// The scripts' own happy path (their test `complete_happy_path`), with
/// aea validating every state and naming the phase the scripts derive.
#[test]
fn a_folder_the_scripts_drive_is_valid_to_aea_in_every_state() {
    let dir = tempfile::tempdir().unwrap();
    let mut up = upstream(dir.path());
    let f = Folder::new(&up.path);
    valid(&f);
    let phase = |f: &Folder, who: &str| f.next(who).unwrap().phase.unwrap().as_str();
    up.append(
        "server",
        "deliverable_drafted",
        Some(DOC),
        Some("primary"),
        None,
        &at(1),
        "drafting",
        &["server"],
    );
    valid(&f);
    up.append(
        "server",
        "proposal_submitted",
        Some("proposal.md"),
        None,
        None,
        &at(2),
        "reviewing",
        &["reader"],
    );
    valid(&f);
    assert_eq!(phase(&f, "reader"), "reviewing");
    up.write_review("reader", 4);
    up.append(
        "reader",
        "review_submitted",
        Some("review.md"),
        None,
        None,
        &at(3),
        "revising",
        &["server"],
    );
    valid(&f);
    up.append(
        "server",
        "proposal_revised",
        Some("proposal.md"),
        None,
        None,
        &at(4),
        "decision_review",
        &["server"],
    );
    up.write_decisions();
    up.write_readiness(&GATES, &"0".repeat(64));
    valid(&f);
    up.append(
        "server",
        "question_classified",
        Some("readiness.md"),
        None,
        None,
        &at(5),
        "decision_review",
        &["reader", "server"],
    );
    valid(&f);
    assert!(f.next("reader").unwrap().your_turn);
    up.append(
        "server",
        "decision_accepted",
        Some("decisions.md"),
        None,
        None,
        &at(6),
        "decision_review",
        &["reader"],
    );
    up.append(
        "reader",
        "decision_accepted",
        Some("decisions.md"),
        None,
        None,
        &at(7),
        "readiness_check",
        &["server"],
    );
    valid(&f);
    assert_eq!(f.next("server").unwrap().action, turn::FREEZE);
    let sha = up.fill_and_freeze_text();
    up.append(
        "server",
        "deliverable_frozen",
        Some(DOC),
        Some("primary"),
        Some(&sha),
        &at(8),
        "readiness_check",
        &["server"],
    );
    up.write_readiness(&GATES, &sha);
    valid(&f);
    up.append(
        "server",
        "readiness_passed",
        Some("readiness.md"),
        None,
        None,
        &at(9),
        "readiness_check",
        &["server"],
    );
    up.write_conclusion(&sha);
    valid(&f);
    up.append(
        "server",
        "completed",
        Some("conclusion.md"),
        None,
        None,
        &at(10),
        "completed",
        &[],
    );
    valid(&f);
    assert_eq!(phase(&f, "reader"), "completed");

    // Their validator's "hash change after freeze" case.
    let changed = format!("{}\nChanged after freeze.\n", up.read(DOC));
    up.write(DOC, &changed);
    let report = f.validate().unwrap();
    assert!(
        report
            .errors
            .iter()
            .any(|e| e.rule == Rule::DeliverableEvent
                && e.message.contains("no longer matches the sha256")),
        "{report:#?}"
    );
}

/// aea appending to a folder the scripts started writes the line their
/// append_event.py would, and rewrites protocol.json as they would.
#[test]
fn aea_appends_to_a_scripts_folder_as_the_scripts_would() {
    let dir = tempfile::tempdir().unwrap();
    let mut up = upstream(dir.path());
    let f = Folder::new(&up.path);
    let appended = deliverable(&f, "deliverable_drafted", &replying(1), "server", 1).unwrap();
    let log = up.read("events.jsonl");
    let line = log.lines().nth(1).unwrap();
    assert_eq!(
        line,
        Upstream::event_line(
            2,
            "server",
            "deliverable_drafted",
            &at(1),
            "deliverable_drafted by server",
            Some(DOC),
            Some(1),
            Some("primary"),
            None
        )
    );
    assert_eq!(appended.event.role, Some(Role::Primary));
    // protocol.json: what the script would leave, keys sorted.
    up.protocol.insert("updatedAt".into(), at(1).into());
    let expected = format!(
        "{}\n",
        py_pretty_sorted(&Value::Object(up.protocol.clone()))
    );
    assert_eq!(up.read("protocol.json"), expected);
    valid(&f);
    // And the scripts' own next step follows aea's.
    up.append(
        "server",
        "proposal_submitted",
        Some("proposal.md"),
        None,
        None,
        &at(2),
        "reviewing",
        &["reader"],
    );
    valid(&f);
}

#[test]
fn aea_drives_its_own_schema_2_folder_to_completion_valid_at_every_step() {
    let dir = tempfile::tempdir().unwrap();
    let f = two(dir.path());
    // Drafting: the deliverable before the proposal.
    let r = refusal(f.append(
        "server",
        EventName::ProposalSubmitted,
        "P",
        Some("proposal.md"),
        Some(1),
        t(1),
    ));
    assert_eq!(r.rule, Rule::DeliverableOrder, "{r}");
    assert_eq!(f.next("server").unwrap().action, turn::DRAFT_DELIVERABLE);
    deliverable(&f, "deliverable_drafted", &replying(1), "server", 1).unwrap();
    valid(&f);
    assert_eq!(f.next("server").unwrap().action, turn::DRAFT);
    f.append(
        "server",
        EventName::ProposalSubmitted,
        "P",
        Some("proposal.md"),
        Some(2),
        t(2),
    )
    .unwrap();
    // The review says what it reviewed.
    f.review("reader", 3, &review("Fine"), t(3)).unwrap();
    let text = fs::read_to_string(f.path().join("review.md")).unwrap();
    assert!(
        text.contains("- Reviewed primary deliverable: `deliverables/design-spec.md`"),
        "{text}"
    );
    assert!(
        text.contains("Review Scope:\n- Proposal coherence\n- Primary deliverable completeness"),
        "{text}"
    );
    valid(&f);
    deliverable(&f, "deliverable_revised", &replying(4), "server", 4).unwrap();
    f.append(
        "server",
        EventName::ProposalRevised,
        "R",
        Some("proposal.md"),
        Some(5),
        t(5),
    )
    .unwrap();
    valid(&f);
    // Decisions as schema 2 writes them: the list form of schema 1 is no
    // decision here.
    edit(&f, "decisions.md", |t| {
        t.replace("- None yet.", "- JSON over HTTP.")
    });
    edit(&f, "readiness.md", |t| {
        t.replace("- [unresolved]", "- [resolved]")
            .replace("- [ ]", "- [x]")
    });
    f.append(
        "server",
        EventName::QuestionClassified,
        "C",
        Some("readiness.md"),
        Some(6),
        t(6),
    )
    .unwrap();
    let r = refusal(f.append(
        "reader",
        EventName::DecisionAccepted,
        "A",
        Some("decisions.md"),
        Some(7),
        t(7),
    ));
    assert_eq!(r.rule, Rule::Decisions, "{r}");
    edit(&f, "decisions.md", |_| {
        format!(
            "# Decisions\n\n## Accepted Decisions\n\n### D1. JSON\n\n- Decision: JSON over HTTP.\n- Reflected in: `{DOC}#proposed-design`\n"
        )
    });
    f.append(
        "reader",
        EventName::DecisionAccepted,
        "A",
        Some("decisions.md"),
        Some(7),
        t(7),
    )
    .unwrap();
    f.append(
        "server",
        EventName::DecisionAccepted,
        "A",
        Some("decisions.md"),
        Some(8),
        t(8),
    )
    .unwrap();
    valid(&f);
    // Readiness: the freeze first, of a deliverable that is frozen in text.
    let r = refusal(f.append(
        "server",
        EventName::ReadinessPassed,
        "R",
        Some("readiness.md"),
        Some(9),
        t(9),
    ));
    assert_eq!(r.rule, Rule::DeliverableOrder, "{r}");
    let r = refusal(deliverable(
        &f,
        "deliverable_frozen",
        &replying(9),
        "server",
        9,
    ));
    assert_eq!(
        r.rule,
        Rule::DeliverableContent,
        "a Draft cannot be frozen: {r}"
    );
    edit(&f, DOC, |t| {
        let mut t = t.replace("Status: Draft", "Status: Frozen");
        for s in super::upstream::sections("design-spec") {
            t = t.replace(&format!("## {s}\n\n"), &format!("## {s}\n\nText.\n\n"));
        }
        t
    });
    let wrong = Fields {
        sha256: Some("0".repeat(64)),
        ..replying(9)
    };
    let r = refusal(deliverable(&f, "deliverable_frozen", &wrong, "server", 9));
    assert_eq!(r.rule, Rule::DeliverableEvent, "{r}");
    let frozen = deliverable(&f, "deliverable_frozen", &replying(9), "server", 9).unwrap();
    let bytes = fs::read(f.path().join(DOC)).unwrap();
    assert_eq!(
        frozen.event.sha256.as_deref(),
        Some(crate::fsutil::sha256_hex(&bytes).as_str())
    );
    valid(&f);
    let r = refusal(deliverable(
        &f,
        "deliverable_frozen",
        &replying(10),
        "server",
        10,
    ));
    assert_eq!(r.rule, Rule::DeliverableOrder, "frozen once: {r}");
    let r = refusal(deliverable(
        &f,
        "deliverable_revised",
        &replying(10),
        "server",
        10,
    ));
    assert_eq!(
        r.rule,
        Rule::DeliverableOrder,
        "no revision after the freeze: {r}"
    );
    // A change after the freeze stops readiness.
    fs::write(f.path().join(DOC), [bytes.as_slice(), b"late\n"].concat()).unwrap();
    let r = refusal(f.append(
        "server",
        EventName::ReadinessPassed,
        "R",
        Some("readiness.md"),
        Some(10),
        t(10),
    ));
    assert_eq!(r.rule, Rule::DeliverableEvent, "{r}");
    fs::write(f.path().join(DOC), &bytes).unwrap();
    f.append(
        "server",
        EventName::ReadinessPassed,
        "R",
        Some("readiness.md"),
        Some(10),
        t(10),
    )
    .unwrap();
    valid(&f);
    // The conclusion is the receipt of the deliverable.
    let receipt = "# Conclusion\n\n## Decision Outcome\n\n- [proceed] Go.\n\n## Rationale\n\nAgreed.\n\n## Deliverable Receipt\n\n- Primary: elsewhere\n\n## Accepted Decisions Summary\n\n- D1.\n\n## Readiness Result\n\n- Passed.\n\n## Assumptions\n\n- None.\n\n## Deferred Follow-ups\n\n- None.\n\n## Implementation Blockers\n\n- None.\n\n## Next Action\n\nBuild.\n";
    fs::write(f.path().join("conclusion.md"), receipt).unwrap();
    let r = refusal(f.append(
        "server",
        EventName::Completed,
        "Done",
        Some("conclusion.md"),
        Some(11),
        t(11),
    ));
    assert_eq!(r.rule, Rule::Conclusion, "{r}");
    assert!(
        r.message.contains("reference the primary deliverable"),
        "{r}"
    );
    fs::write(
        f.path().join("conclusion.md"),
        receipt.replace("elsewhere", DOC),
    )
    .unwrap();
    f.append(
        "server",
        EventName::Completed,
        "Done",
        Some("conclusion.md"),
        Some(11),
        t(11),
    )
    .unwrap();
    valid(&f);
}

#[test]
fn a_schema_1_folder_keeps_schema_1() {
    let dir = tempfile::tempdir().unwrap();
    let f = started(dir.path(), &["web", "api"]);
    let before = fs::read_to_string(f.path().join("protocol.json")).unwrap();
    assert!(!before.contains("schemaVersion") && !before.contains("\"protocol\""));
    let r = refusal(deliverable(
        &f,
        "deliverable_drafted",
        &replying(1),
        "web",
        1,
    ));
    assert_eq!(r.rule, Rule::Schema, "{r}");
    assert!(r.message.contains("schema 2"), "{r}");
    f.append(
        "web",
        EventName::ProposalSubmitted,
        "P",
        Some("proposal.md"),
        Some(1),
        t(1),
    )
    .unwrap();
    let log = fs::read_to_string(f.path().join("events.jsonl")).unwrap();
    assert!(!log.contains("role") && !log.contains("sha256"), "{log}");
    let after = fs::read_to_string(f.path().join("protocol.json")).unwrap();
    // Keys as found (objective first), not sorted.
    assert!(
        after.trim_start().starts_with("{\n  \"objective\""),
        "{after}"
    );
    let report = f.validate().unwrap();
    assert_eq!(report.schema, Some(Schema::One));
    assert!(report.is_valid(), "{report:#?}");
}

#[test]
fn validate_names_what_is_wrong_with_a_schema_2_folder() {
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path());
    let f = Folder::new(&up.path);
    let protocol = up.read("protocol.json");

    // Gates as schema 1 writes them.
    up.write(
        "protocol.json",
        &protocol.replace(
            "{\n      \"source\": \"objective\",\n      \"text\": \"Readiness passes\"\n    }",
            "\"Readiness passes\"",
        ),
    );
    assert!(
        rules(&f).contains(&Rule::ProtocolFile),
        "{:#?}",
        f.validate()
    );
    // No deliverables.
    let mut map: serde_json::Map<String, Value> = serde_json::from_str(&protocol).unwrap();
    map.remove("deliverables");
    up.write("protocol.json", &serde_json::to_string(&map).unwrap());
    let report = f.validate().unwrap();
    assert!(
        report
            .errors
            .iter()
            .any(|e| e.rule == Rule::Deliverables && e.message.contains("deliverables.primary")),
        "{report:#?}"
    );
    // The marker without the version.
    let mut map: serde_json::Map<String, Value> = serde_json::from_str(&protocol).unwrap();
    map.remove("schemaVersion");
    up.write("protocol.json", &serde_json::to_string(&map).unwrap());
    let report = f.validate().unwrap();
    assert_eq!(report.schema, Some(Schema::Two));
    assert!(
        report
            .errors
            .iter()
            .any(|e| e.rule == Rule::Schema && e.message.contains("schemaVersion")),
        "{report:#?}"
    );
    // An escaping deliverable file: refused by name, never read.
    let mut map: serde_json::Map<String, Value> = serde_json::from_str(&protocol).unwrap();
    map["deliverables"]["primary"]["file"] = "../../../etc/passwd.md".into();
    up.write("protocol.json", &serde_json::to_string(&map).unwrap());
    let report = f.validate().unwrap();
    assert!(
        report.errors.iter().any(|e| e.rule == Rule::Deliverables
            && e.message
                .contains("must be relative and must not contain ..")),
        "{report:#?}"
    );
    up.write("protocol.json", &protocol);
    valid(&f);

    // Decisions without their ids; a review without its scope.
    up.write(
        "decisions.md",
        "# Decisions\n\n### 1. Bad heading\n\n- Decision: Bad format.\n",
    );
    let report = f.validate().unwrap();
    let decisions: Vec<&str> = report
        .errors
        .iter()
        .filter(|e| e.rule == Rule::Decisions)
        .map(|e| e.message.as_str())
        .collect();
    assert_eq!(decisions.len(), 2, "{report:#?}");
    assert!(
        decisions[0].contains("D<number>") && decisions[1].contains("Reflected in"),
        "{decisions:?}"
    );
}

#[test]
fn a_folder_claiming_schema_3_is_refused_outright() {
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path());
    let f = Folder::new(&up.path);
    up.write(
        "protocol.json",
        &up.read("protocol.json")
            .replace("\"schemaVersion\": 2", "\"schemaVersion\": 3"),
    );
    let files = |f: &Folder| -> Vec<(String, Vec<u8>)> {
        snapshot(f)
            .into_iter()
            .filter(|(n, _)| n != ".acp.lock")
            .collect()
    };
    let before = files(&f);
    let report = f.validate().unwrap();
    assert_eq!(report.schema, None);
    assert_eq!(
        report.errors.len(),
        1,
        "one clear reason, not the rules of another schema: {report:#?}"
    );
    assert_eq!(report.errors[0].rule, Rule::Schema);
    assert!(
        report.errors[0].message.contains("schemaVersion 3")
            && report.errors[0].message.contains("schema 1 and 2")
    );
    let r = refusal(deliverable(
        &f,
        "deliverable_drafted",
        &replying(1),
        "server",
        1,
    ));
    assert_eq!(r.rule, Rule::Schema, "{r}");
    let e = f.next("server").unwrap_err();
    assert_eq!(Refusal::of(&e).unwrap().rule, Rule::Schema);
    let resumed = f.init(
        &Init {
            resume: true,
            ..Init::new(&ids(&["server", "reader"]), "o", &ids(&["g"]))
        },
        t(1),
    );
    assert_eq!(
        Refusal::of(&resumed.unwrap_err()).unwrap().rule,
        Rule::Schema
    );
    assert_eq!(files(&f), before, "nothing written");
    // Nor is a version of another type taken for 2.
    for odd in ["\"2\"", "2.0", "-2", "18446744073709551618"] {
        up.write(
            "protocol.json",
            &up.read("protocol.json")
                .replace("\"schemaVersion\": 3", &format!("\"schemaVersion\": {odd}")),
        );
        assert_eq!(f.validate().unwrap().errors[0].rule, Rule::Schema, "{odd}");
        up.write(
            "protocol.json",
            &up.read("protocol.json")
                .replace(&format!("\"schemaVersion\": {odd}"), "\"schemaVersion\": 3"),
        );
    }
}

#[test]
fn an_event_claiming_another_schema_is_read_as_the_folders() {
    let dir = tempfile::tempdir().unwrap();
    let mut up = upstream(dir.path());
    let f = Folder::new(&up.path);
    up.append(
        "server",
        "deliverable_drafted",
        Some(DOC),
        Some("primary"),
        None,
        &at(1),
        "drafting",
        &["server"],
    );
    let log = up.read("events.jsonl");
    let hostile = log.replacen(
        "\"role\":\"primary\"",
        "\"role\":\"primary\",\"schemaVersion\":\"\\u001b[2J3 IGNORE THE FOLDER\"",
        1,
    );
    up.write("events.jsonl", &hostile);
    let report = f.validate().unwrap();
    assert_eq!(report.schema, Some(Schema::Two));
    assert!(report.errors.is_empty(), "{report:#?}");
    assert_eq!(report.warnings.len(), 1, "{report:#?}");
    assert_eq!(report.warnings[0].rule, Rule::Schema);
    // The claim is shown as JSON (escaped), never as raw text.
    assert!(
        !report.warnings[0].message.contains('\u{1b}'),
        "{report:#?}"
    );
    // aea goes on appending as schema 2.
    f.append(
        "server",
        EventName::ProposalSubmitted,
        "P",
        Some("proposal.md"),
        Some(2),
        t(2),
    )
    .unwrap();
    assert_eq!(f.next("reader").unwrap().phase, Some(Phase::Reviewing));
}

#[test]
fn hostile_files_in_a_schema_2_folder_are_refused_without_reading_them() {
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path());
    let f = Folder::new(&up.path);

    // A huge log: refused by its size, never read.
    let events = up.path.join("events.jsonl");
    let original = fs::read(&events).unwrap();
    fs::File::options()
        .write(true)
        .open(&events)
        .unwrap()
        .set_len(crate::collab::log::EVENTS_LIMIT + 1)
        .unwrap();
    let r = refusal(deliverable(
        &f,
        "deliverable_drafted",
        &replying(1),
        "server",
        1,
    ));
    assert_eq!(r.rule, Rule::UnsafeFile, "{r}");
    assert!(rules(&f).contains(&Rule::UnsafeFile));
    assert_eq!(
        fs::metadata(&events).unwrap().len(),
        crate::collab::log::EVENTS_LIMIT + 1
    );
    fs::write(&events, &original).unwrap();

    // A FIFO for protocol.json: no command blocks on it.
    let protocol = up.read("protocol.json");
    fs::remove_file(up.path.join("protocol.json")).unwrap();
    assert!(
        std::process::Command::new("mkfifo")
            .arg(up.path.join("protocol.json"))
            .status()
            .unwrap()
            .success()
    );
    let report = f.validate().unwrap();
    assert_eq!(report.errors[0].rule, Rule::UnsafeFile, "{report:#?}");
    assert_eq!(
        refusal(deliverable(
            &f,
            "deliverable_drafted",
            &replying(1),
            "server",
            1
        ))
        .rule,
        Rule::UnsafeFile
    );
    assert_eq!(
        Refusal::of(&f.next("server").unwrap_err()).unwrap().rule,
        Rule::UnsafeFile
    );
    fs::remove_file(up.path.join("protocol.json")).unwrap();
    up.write("protocol.json", &protocol);

    // The deliverable a symlink to a file outside: not followed.
    let outside = dir.path().join("secret.md");
    fs::write(&outside, "Status: Draft\n").unwrap();
    fs::remove_file(up.path.join(DOC)).unwrap();
    std::os::unix::fs::symlink(&outside, up.path.join(DOC)).unwrap();
    let r = refusal(deliverable(
        &f,
        "deliverable_drafted",
        &replying(1),
        "server",
        1,
    ));
    assert_eq!(r.rule, Rule::UnsafeFile, "{r}");
    assert!(rules(&f).contains(&Rule::UnsafeFile));
}

/// The deliverables directory swapped for a symlink to a directory
/// outside the folder: the file there is neither read, nor hashed into a
/// freeze, nor judged as the deliverable.
#[test]
fn a_deliverables_directory_that_is_a_symlink_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path());
    let f = Folder::new(&up.path);
    let outside = dir.path().join("elsewhere");
    fs::create_dir(&outside).unwrap();
    fs::copy(up.path.join(DOC), outside.join("design-spec.md")).unwrap();
    fs::remove_dir_all(up.path.join("deliverables")).unwrap();
    std::os::unix::fs::symlink(&outside, up.path.join("deliverables")).unwrap();
    let r = refusal(deliverable(
        &f,
        "deliverable_drafted",
        &replying(1),
        "server",
        1,
    ));
    assert_eq!(r.rule, Rule::UnsafeFile, "{r}");
    assert!(r.message.contains("symbolic link"), "{r}");
    assert!(rules(&f).contains(&Rule::UnsafeFile));
    // A directory inside it swapped the same way (a nested file name).
    fs::remove_file(up.path.join("deliverables")).unwrap();
    fs::create_dir(up.path.join("deliverables")).unwrap();
    std::os::unix::fs::symlink(&outside, up.path.join("deliverables/sub")).unwrap();
    let declared = crate::collab::log::Protocol::parse(&up.read("protocol.json")).unwrap();
    let d = crate::collab::deliverables::Deliverables::of(&declared);
    let r = d.read(&up.path, "sub/design-spec.md").unwrap_err();
    assert_eq!(r.rule, Rule::UnsafeFile, "{r}");
}

/// An external folder's `repoRoot` rewritten to a directory that does not
/// hold the folder (or made absolute): no command reads a deliverable
/// there — every read refuses, not only `validate`.
#[test]
fn a_repo_root_that_does_not_hold_the_folder_is_never_read_from() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let folder = repo.join("collab");
    fs::create_dir_all(folder.join("x")).unwrap();
    let outside = dir.path().join("secrets/deliverables");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("design-spec.md"), "Status: Draft\n").unwrap();
    fs::create_dir_all(repo.join("deliverables")).unwrap();
    fs::write(repo.join("deliverables/design-spec.md"), "Status: Draft\n").unwrap();
    let read = |root: &str| {
        let protocol = crate::collab::log::Protocol::parse(
            &serde_json::json!({
                "protocol": "acp", "schemaVersion": 2, "repoRoot": root,
                "deliverables": {"mode": "external", "dir": "deliverables",
                    "primary": {"type": "design-spec", "file": "design-spec.md"}},
            })
            .to_string(),
        )
        .unwrap();
        crate::collab::deliverables::Deliverables::of(&protocol).read(&folder, "design-spec.md")
    };
    // The repository around the folder: read.
    assert!(matches!(read(".."), Ok(Some(_))), "{:?}", read(".."));
    for root in [
        "../../secrets",
        "/",
        "../../secrets/../secrets",
        "../x/../../secrets",
    ] {
        let r = read(root).unwrap_err();
        assert_eq!(r.rule, Rule::Deliverables, "{root}: {r}");
    }
    let absolute = dir.path().join("secrets").display().to_string();
    assert_eq!(read(&absolute).unwrap_err().rule, Rule::Deliverables);
}

/// A checklist item is a heading to look for, nothing else: shell text in
/// it is written as text and never run, by init, append or validate.
#[test]
fn shell_text_in_a_deliverable_check_is_never_run() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let check = format!(
        "Risks $(touch {m}) `touch {m}`; touch {m} | sh\n## Injected",
        m = marker.display()
    );
    let f = Folder::new(dir.path().join("collab"));
    f.init(
        &Init {
            primary_type: DeliverableType::Custom,
            primary_file: Some("plan.md".into()),
            primary_checks: vec![check.clone()],
            ..Init::new(&ids(&["server", "reader"]), "o", &ids(&["g"]))
        },
        t(0),
    )
    .unwrap();
    let template = fs::read_to_string(f.path().join("deliverables/plan.md")).unwrap();
    // One heading, the line break flattened: no second heading injected.
    assert_eq!(template.matches("\n## ").count(), 1, "{template}");
    assert!(
        template.contains(&format!("## Risks $(touch {})", marker.display())),
        "{template}"
    );
    valid(&f);
    deliverable(&f, "deliverable_drafted", &replying(1), "server", 1).unwrap();
    valid(&f);
    // And as another tool may have written it, line break and all.
    let text = fs::read_to_string(f.path().join("protocol.json")).unwrap();
    let mut map: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
    map["deliverables"]["primary"]["checklist"] = serde_json::json!([check]);
    fs::write(
        f.path().join("protocol.json"),
        serde_json::to_string(&map).unwrap(),
    )
    .unwrap();
    let report = f.validate().unwrap();
    assert!(
        report
            .errors
            .iter()
            .any(|e| e.rule == Rule::DeliverableContent && !e.message.contains('\n')),
        "{report:#?}"
    );
    assert!(!marker.exists(), "nothing ran");
}

#[test]
fn init_refuses_deliverable_options_it_cannot_write_safely() {
    let dir = tempfile::tempdir().unwrap();
    let f = Folder::new(dir.path().join("collab"));
    let base = Init::new(&ids(&["web", "api"]), "o", &ids(&["g"]));
    for bad in [
        Init {
            primary_file: Some("../x.md".into()),
            ..base.clone()
        },
        Init {
            primary_file: Some("x.txt".into()),
            ..base.clone()
        },
        Init {
            deliverables_dir: "../out".into(),
            ..base.clone()
        },
        Init {
            deliverables_dir: "/abs".into(),
            ..base.clone()
        },
        Init {
            primary_type: DeliverableType::Custom,
            primary_file: Some("c.md".into()),
            ..base.clone()
        },
        Init {
            primary_type: DeliverableType::Custom,
            primary_checks: vec!["S".into()],
            ..base.clone()
        },
    ] {
        let e = f.init(&bad, t(0)).unwrap_err();
        assert_eq!(
            Refusal::of(&e).map(|r| r.rule),
            Some(Rule::Deliverables),
            "{bad:?}: {e:?}"
        );
        assert!(!f.path().exists(), "nothing written for {bad:?}");
    }
    // A nested directory inside the folder is fine.
    f.init(
        &Init {
            deliverables_dir: "docs/out".into(),
            ..base
        },
        t(0),
    )
    .unwrap();
    assert!(f.path().join("docs/out/design-spec.md").is_file());
    valid(&f);
}
