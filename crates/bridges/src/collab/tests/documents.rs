//! The documents' structure: readiness items and the conclusion skeleton.

use super::*;

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
fn decisions_never_written_down_are_not_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let f = until_classified(dir.path());
    // The skeleton init wrote: nothing to accept.
    fs::write(
        f.path().join("decisions.md"),
        crate::collab::docs::DECISIONS_SKELETON,
    )
    .unwrap();
    let r = refusal(f.append(
        "api",
        EventName::DecisionAccepted,
        "Accept",
        Some("decisions.md"),
        Some(7),
        t(7),
    ));
    assert_eq!(r.rule, Rule::Decisions, "{r}");
    assert!(r.message.contains("no accepted decision"), "{r}");
    // A decision written down: accepted.
    fs::write(
        f.path().join("decisions.md"),
        "# Decisions\n\n## Accepted Decisions\n\n- None yet.\n- Keep the v1 endpoints.\n",
    )
    .unwrap();
    f.append(
        "api",
        EventName::DecisionAccepted,
        "Accept",
        Some("decisions.md"),
        Some(7),
        t(7),
    )
    .unwrap();
}
