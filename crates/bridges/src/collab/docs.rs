//! The Markdown of a collaboration as far as the protocol reads it: the
//! classified items and checkboxes of `readiness.md`, the headings, outcome
//! and placeholders of `conclusion.md`, the review headings of `review.md`;
//! the gates built on them; and the skeletons `init` writes. The patterns
//! are the protocol's (its tools match them with regular expressions);
//! they are matched by hand here, line by line.

use std::fmt::Write as _;

use serde::Serialize;

use super::schema::Schema;
use super::{Advice, Refusal, Rule};
use crate::words::word_enum;

word_enum! {
    /// How an open question of `readiness.md` is classified: `- [word] text`.
    pub enum Classification {
        Resolved = "resolved",
        /// Needs `Reason: …` in its text.
        DeferredNonblocking = "deferred_nonblocking",
        Blocking = "blocking",
        Unresolved = "unresolved",
    }
}

/// One classified item of `readiness.md`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReadinessItem {
    /// 1-based line in `readiness.md`.
    pub line: usize,
    pub class: Classification,
    pub text: String,
}

impl ReadinessItem {
    /// Whether the item still holds an open placeholder (the protocol
    /// counts a `TBD` in any classified item as unresolved).
    fn is_unresolved(&self) -> bool {
        self.class == Classification::Unresolved || self.text.contains("TBD")
    }

    fn has_reason(&self) -> bool {
        self.text.to_lowercase().contains("reason:")
    }
}

/// A `- [word] rest` list line: the word and the rest (`\s*-\s*\[(\w+)\]\s*(.*)`
/// with `\w` as `[A-Za-z_]`).
fn bracket_item(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_start().strip_prefix('-')?.trim_start();
    let rest = rest.strip_prefix('[')?;
    let end = rest.find(']')?;
    let word = &rest[..end];
    if word.is_empty() || !word.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_') {
        return None;
    }
    Some((word, &rest[end + 1..]))
}

/// A checked box `- [x] rest` (or `[X]`): the rest, leading spaces removed.
fn checked_item(line: &str) -> Option<&str> {
    bracket_item(line)
        .filter(|(word, _)| word.eq_ignore_ascii_case("x"))
        .map(|(_, rest)| rest.trim_start())
}

/// The classified items of `readiness.md`, in order.
pub fn readiness_items(text: &str) -> Vec<ReadinessItem> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let (word, rest) = bracket_item(line)?;
            Some(ReadinessItem {
                line: i + 1,
                class: word.parse().ok()?,
                text: rest.trim().to_string(),
            })
        })
        .collect()
}

/// What the readiness gate looks at in `readiness.md`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReadinessScan {
    pub items: Vec<ReadinessItem>,
    pub blocking: Vec<String>,
    pub unresolved: Vec<String>,
    pub deferred_missing_reason: Vec<String>,
    pub ready_to_implement: bool,
    /// Lines checked `- [x] …`, text after the box trimmed.
    #[serde(skip)]
    checked: Vec<String>,
}

impl ReadinessScan {
    /// The completion gates not checked `- [x] <gate>` on a line of their own.
    pub(crate) fn unchecked_gates(&self, gates: &[String]) -> Vec<String> {
        gates
            .iter()
            .filter(|g| !self.checked.iter().any(|c| c == g.as_str()))
            .cloned()
            .collect()
    }
}

pub fn scan_readiness(text: &str) -> ReadinessScan {
    let items = readiness_items(text);
    let texts = |keep: &dyn Fn(&ReadinessItem) -> bool| {
        items
            .iter()
            .filter(|i| keep(i))
            .map(|i| i.text.clone())
            .collect()
    };
    let checked: Vec<String> = text
        .lines()
        .filter_map(checked_item)
        .map(|rest| rest.trim_end().to_string())
        .collect();
    ReadinessScan {
        blocking: texts(&|i| i.class == Classification::Blocking),
        unresolved: texts(&ReadinessItem::is_unresolved),
        deferred_missing_reason: texts(&|i| {
            i.class == Classification::DeferredNonblocking && !i.has_reason()
        }),
        ready_to_implement: checked.iter().any(|c| c.starts_with("Ready to implement")),
        checked,
        items,
    }
}

/// Gives item `number` (1-based, counting classified items of
/// `readiness.md` in order) the classification `class`, with `reason` for
/// a deferred item (`Reason: …` appended unless the text has one).
/// Returns the new text; the rest of the file is kept byte for byte.
pub fn set_classification(
    text: &str,
    number: usize,
    class: Classification,
    reason: Option<&str>,
) -> Result<String, Refusal> {
    let items = readiness_items(text);
    let Some(item) = number.checked_sub(1).and_then(|i| items.get(i)) else {
        return Err(Refusal::new(
            Rule::ReadinessItem,
            format!(
                "readiness.md has no item {number} (it has {} classified items)",
                items.len()
            ),
            Advice::ItemNumber,
        ));
    };
    let reason = reason.map(one_line).filter(|r| !r.is_empty());
    let mut body = one_line(&item.text);
    if let Some(reason) = &reason {
        body = format!("{body} Reason: {reason}");
    }
    if class == Classification::DeferredNonblocking && !body.to_lowercase().contains("reason:") {
        return Err(Refusal::new(
            Rule::DeferredReason,
            format!("item {number} cannot be deferred without a reason"),
            Advice::Reason,
        ));
    }
    let mut out = String::with_capacity(text.len() + body.len());
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if i + 1 == item.line {
            let indent = &line[..line.len() - line.trim_start().len()];
            let ending = &line[line.trim_end_matches(['\r', '\n']).len()..];
            let _ = write!(out, "{indent}- [{class}] {body}{ending}");
        } else {
            out.push_str(line);
        }
    }
    Ok(out)
}

/// Text as one line: line breaks become spaces, other control characters
/// go, so that nothing written into a document can start a heading or an
/// item of its own.
pub(crate) fn one_line(text: &str) -> String {
    let joined: String = text
        .chars()
        .map(|c| {
            if c.is_control() || is_line_break(c) {
                ' '
            } else {
                c
            }
        })
        .collect();
    joined.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn is_line_break(c: char) -> bool {
    matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// The `## ` headings `conclusion.md` must have in schema 1.
pub(crate) const CONCLUSION_HEADINGS: [&str; 8] = [
    "Decision Outcome",
    "Rationale",
    "Accepted Decisions",
    "Implementation Approach",
    "Assumptions",
    "Deferred Follow-ups",
    "Implementation Blockers",
    "Next Action",
];

/// The `## ` headings `conclusion.md` must have in schema 2: a receipt of
/// the frozen deliverable rather than the design itself.
pub(crate) const CONCLUSION_HEADINGS_2: [&str; 9] = [
    "Decision Outcome",
    "Rationale",
    "Deliverable Receipt",
    "Accepted Decisions Summary",
    "Readiness Result",
    "Assumptions",
    "Deferred Follow-ups",
    "Implementation Blockers",
    "Next Action",
];

fn conclusion_headings(schema: Schema) -> &'static [&'static str] {
    match schema {
        Schema::One => &CONCLUSION_HEADINGS,
        Schema::Two => &CONCLUSION_HEADINGS_2,
    }
}

/// The outcomes `conclusion.md` may declare; `blocked` is not completable.
const OUTCOMES: [&str; 4] = ["proceed", "do_not_proceed", "defer", "blocked"];

/// What the conclusion gate looks at in `conclusion.md`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConclusionScan {
    pub missing_headings: Vec<String>,
    /// Every `- [outcome] text` line, outcome word first.
    pub outcomes: Vec<(String, String)>,
    pub placeholders: Vec<String>,
    /// Schema 2: the primary deliverable's reference, when the conclusion
    /// does not name it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_reference: Option<String>,
}

impl ConclusionScan {
    /// What keeps the conclusion from completing the collaboration.
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !self.missing_headings.is_empty() {
            problems.push(format!(
                "conclusion.md is missing required sections: {}",
                self.missing_headings.join(", ")
            ));
        }
        match self.outcomes.as_slice() {
            [(word, _)] if word == "blocked" => {
                problems.push("conclusion.md outcome cannot be completed while blocked".into());
            }
            [_] => {}
            found => problems.push(format!(
                "conclusion.md must declare exactly one final outcome (- [proceed|do_not_proceed|defer] …), found {}",
                found.len()
            )),
        }
        if !self.placeholders.is_empty() {
            problems.push(format!(
                "conclusion.md must not contain unresolved placeholders before completed: {}",
                self.placeholders.join(", ")
            ));
        }
        if let Some(reference) = &self.missing_reference {
            problems.push(format!(
                "conclusion.md must reference the primary deliverable {reference}"
            ));
        }
        problems
    }
}

/// [`scan_conclusion_for`] a schema 1 folder.
pub fn scan_conclusion(text: &str) -> ConclusionScan {
    scan_conclusion_for(text, Schema::One, None)
}

/// What the conclusion gate of `schema` finds in `conclusion.md`;
/// `primary_ref` is the reference a schema 2 conclusion must name.
pub fn scan_conclusion_for(
    text: &str,
    schema: Schema,
    primary_ref: Option<&str>,
) -> ConclusionScan {
    let headings: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("##")?;
            rest.starts_with(char::is_whitespace).then(|| rest.trim())
        })
        .collect();
    let missing_headings = conclusion_headings(schema)
        .iter()
        .filter(|h| !headings.contains(h))
        .map(|h| (*h).to_string())
        .collect();
    let outcomes = text
        .lines()
        .filter_map(bracket_item)
        .filter(|(word, rest)| {
            OUTCOMES.contains(word)
                && rest.starts_with(char::is_whitespace)
                && !rest.trim().is_empty()
        })
        .map(|(word, rest)| (word.to_string(), rest.trim().to_string()))
        .collect();
    ConclusionScan {
        missing_headings,
        outcomes,
        placeholders: placeholders(text),
        missing_reference: primary_ref
            .filter(|r| !r.is_empty() && !text.contains(r))
            .map(str::to_string),
    }
}

/// Whole words `TBD`, `TODO`, `unresolved`, `待定` (any case).
fn placeholders(text: &str) -> Vec<String> {
    const WORDS: [&str; 4] = ["tbd", "todo", "unresolved", "待定"];
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut found = Vec::new();
    let mut word = String::new();
    let mut flush = |word: &mut String| {
        if WORDS.contains(&word.to_lowercase().as_str()) {
            found.push(std::mem::take(word));
        }
        word.clear();
    };
    for c in text.chars() {
        if is_word(c) {
            word.push(c);
        } else {
            flush(&mut word);
        }
    }
    flush(&mut word);
    found
}

/// A review heading of `review.md`: `## <time> - <participant> - seq <N>`,
/// read as the protocol's tools read it (the participant is what lies
/// between the first ` - ` and the final ` - seq N`).
pub(crate) fn review_heading(line: &str) -> Option<(u64, String)> {
    let rest = line.strip_prefix("##")?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let rest = rest.trim();
    let digits_at = rest.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let seq: u64 = rest[digits_at..].parse().ok()?;
    let before = rest[..digits_at]
        .strip_suffix(char::is_whitespace)?
        .trim_end();
    let before = before.strip_suffix("seq")?;
    let before = before.strip_suffix(char::is_whitespace)?.trim_end();
    let before = before.strip_suffix('-')?;
    let before = before.strip_suffix(char::is_whitespace)?.trim_end();
    // `<time> - <participant>`: the first ` - ` after a non-empty time.
    let dash = before.char_indices().find_map(|(i, c)| {
        let (head, tail) = (&before[..i], &before[i + 1..]);
        (c == '-'
            && head.ends_with(char::is_whitespace)
            && !head.trim().is_empty()
            && tail.starts_with(char::is_whitespace)
            && !tail.trim().is_empty())
        .then_some(i)
    })?;
    Some((seq, before[dash + 1..].trim().to_string()))
}

/// The review headings of `review.md`: seq and participant, in order.
pub(crate) fn review_headings(text: &str) -> Vec<(u64, String)> {
    text.lines().filter_map(review_heading).collect()
}

/// The review scope a schema 2 review declares.
const REVIEW_SCOPE: [&str; 4] = [
    "Proposal coherence",
    "Primary deliverable completeness",
    "Accepted decision traceability",
    "Implementation readiness",
];

/// The body of one review, as `aea collab review` appends it; in schema 2
/// (`deliverables`) with the deliverables reviewed and the review scope.
pub(crate) fn review_section(
    at: &str,
    participant: &str,
    seq: u64,
    reply_to: u64,
    sections: [(&str, &[String]); 4],
    deliverables: Option<(&str, &[String])>,
) -> String {
    let mut out = format!(
        "\n## {at} - {participant} - seq {seq}\n\nContext:\n- Read `proposal.md` after event seq `{reply_to}`.\n"
    );
    if let Some((primary, supporting)) = deliverables {
        let supporting: Vec<String> = supporting
            .iter()
            .map(|s| format!("`{}`", one_line(s)))
            .collect();
        let supporting = if supporting.is_empty() {
            "none".to_string()
        } else {
            supporting.join(", ")
        };
        let _ = write!(
            out,
            "- Reviewed primary deliverable: `{}`\n- Reviewed supporting deliverables: {supporting}.\n\nReview Scope:\n",
            one_line(primary)
        );
        for item in REVIEW_SCOPE {
            let _ = writeln!(out, "- {item}");
        }
    }
    for (title, items) in sections {
        let _ = write!(out, "\n{title}:\n");
        let items: Vec<String> = items
            .iter()
            .map(|i| one_line(i))
            .filter(|i| !i.is_empty())
            .collect();
        if items.is_empty() {
            out.push_str("- None.\n");
        }
        for item in items {
            let _ = writeln!(out, "- {item}");
        }
    }
    out
}

/// Schema 2: what `review.md` must say once a review is in it (the
/// protocol's tools look for these words anywhere in the file).
pub(crate) fn review_scope_problems(review: &str, primary_ref: Option<&str>) -> Vec<Refusal> {
    let mut missing: Vec<String> = [
        "Reviewed primary deliverable:",
        "Review Scope:",
        "Primary deliverable completeness",
    ]
    .iter()
    .filter(|w| !review.contains(*w))
    .map(|w| format!("`{w}`"))
    .collect();
    if let Some(r) = primary_ref.filter(|r| !r.is_empty() && !review.contains(r)) {
        missing.push(format!("the primary deliverable {r}"));
    }
    if missing.is_empty() {
        return Vec::new();
    }
    vec![Refusal::new(
        Rule::ReviewScope,
        format!("review.md does not name {}", missing.join(", ")),
        "a schema 2 review names the primary deliverable it reviewed (`- Reviewed primary deliverable: …`) and its Review Scope (with Primary deliverable completeness); `aea collab review` writes both",
    )]
}

/// The text of the review headed `seq` in `review`: from its heading to
/// the next `## ` heading.
pub(crate) fn review_body(review: &str, seq: u64) -> String {
    let mut lines = review.lines();
    let mut out = String::new();
    let mut inside = false;
    for line in lines.by_ref() {
        if let Some((s, _)) = review_heading(line) {
            if inside {
                break;
            }
            inside = s == seq;
            continue;
        }
        if inside {
            if line.starts_with("## ") {
                break;
            }
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// A `### ` heading line's text (`^###\s+(.+)$`).
fn h3(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("###")?;
    rest.starts_with(char::is_whitespace)
        .then(|| rest.trim_start())
        .filter(|r| !r.is_empty())
}

/// Schema 2's rules for `decisions.md`: each `### ` heading is
/// `D<n>. <title>`, numbered 1, 2, 3… without repeats, with a `- Decision:`
/// and a `- Reflected in:` that names a declared deliverable.
/// `refs` are the declared deliverables' references.
pub(crate) fn decisions_problems(text: &str, refs: &[String]) -> Vec<Refusal> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let headings: Vec<(usize, &str)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| h3(l).map(|h| (i, h)))
        .collect();
    let mut seen: Vec<String> = Vec::new();
    let advice = "write each decision as `### D<n>. <title>` with `- Decision: …` and `- Reflected in: <deliverable>#<section>`";
    for (index, (at, heading)) in headings.iter().enumerate() {
        let expected = format!("D{}", index + 1);
        let id = decision_id(heading);
        let shown = id.clone().unwrap_or_else(|| expected.clone());
        match &id {
            None => out.push(Refusal::new(
                Rule::Decisions,
                format!(
                    "decisions.md heading \"### {}\" is not `D<number>. <title>`",
                    one_line(heading)
                ),
                advice,
            )),
            Some(id) => {
                if seen.contains(id) {
                    out.push(Refusal::new(
                        Rule::Decisions,
                        format!("decisions.md has {id} twice"),
                        "decision ids are D1, D2, D3… each once",
                    ));
                }
                if *id != expected {
                    out.push(Refusal::new(
                        Rule::Decisions,
                        format!(
                            "decisions.md numbers its decision {} {id}, expected {expected}",
                            index + 1
                        ),
                        "decision ids are D1, D2, D3… in order",
                    ));
                }
                seen.push(id.clone());
            }
        }
        // The first block under this heading text, to the next `### `.
        let first = headings
            .iter()
            .find(|(_, h)| h == heading)
            .map_or(*at, |(i, _)| *i);
        let body: Vec<&str> = lines[first + 1..]
            .iter()
            .take_while(|l| h3(l).is_none())
            .copied()
            .collect();
        let body = body.join("\n");
        if !body.contains("- Decision:") {
            out.push(Refusal::new(
                Rule::Decisions,
                format!("decision {shown} has no `- Decision:` line"),
                advice,
            ));
        }
        if !body.contains("- Reflected in:") {
            out.push(Refusal::new(
                Rule::Decisions,
                format!("decision {shown} has no `- Reflected in:` line"),
                advice,
            ));
        } else if !refs.iter().any(|r| body.contains(r.as_str())) {
            out.push(Refusal::new(
                Rule::Decisions,
                format!("decision {shown}: Reflected in names no declared deliverable"),
                format!(
                    "name where the decision is reflected: {}",
                    refs.iter()
                        .map(|r| one_line(r))
                        .collect::<Vec<_>>()
                        .join(" or ")
                ),
            ));
        }
    }
    out
}

/// `D<n>` of a `D<n>. <title>` heading.
fn decision_id(heading: &str) -> Option<String> {
    let rest = heading.strip_prefix('D')?;
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    let after = rest[digits..].strip_prefix('.')?;
    let title = after.strip_prefix(char::is_whitespace)?;
    (!title.is_empty()).then(|| format!("D{}", &rest[..digits]))
}

/// Whether a schema 2 `decisions.md` states at least one decision.
fn has_decision_2(text: &str) -> bool {
    text.lines()
        .filter_map(h3)
        .any(|h| decision_id(h).is_some())
}

/// `proposal.md` as `init` writes it.
pub(crate) fn proposal_skeleton(objective: &str) -> String {
    format!(
        "# Proposal\n\n## Purpose\n\n{}\n\n## Current Proposal\n\nTBD.\n\n## Open Questions\n\n- TBD.\n\n## Proposed Decisions\n\n- TBD.\n",
        one_line(objective)
    )
}

pub(crate) const REVIEW_SKELETON: &str = "# Review\n\nOne structured review per `review_submitted` event, headed with that\nevent's own seq (not the seq it replies to):\n\n    ## <ISO-8601 UTC> - <participant> - seq <review_submitted seq>\n\nwith the sections Context, Position, Concerns, Required Changes and\nQuestions. `aea collab review` writes both the review and its event.\n";

/// aea's own gate on `decision_accepted`, `readiness_passed` and
/// `completed` when it appends them (not a rule of the protocol text, so
/// `validate` does not hold a folder other tools wrote to it): accepting
/// decisions that were never written down accepts nothing.
pub(crate) fn decisions_gate(
    event: super::EventName,
    decisions: Option<&str>,
    schema: Schema,
) -> Option<Refusal> {
    use super::EventName::{Completed, DecisionAccepted, ReadinessPassed};
    if schema == Schema::Two {
        return (matches!(event, DecisionAccepted | ReadinessPassed | Completed)
            && !decisions.is_some_and(has_decision_2))
        .then(|| {
            Refusal::new(
                Rule::Decisions,
                "decisions.md holds no accepted decision yet (still what init wrote)",
                format!("write each accepted decision in decisions.md as `### D<n>. <title>` with `- Decision: …` and `- Reflected in: …` before {event}"),
            )
        });
    }
    (matches!(event, DecisionAccepted | ReadinessPassed | Completed)
        && !decisions.is_some_and(has_decision))
    .then(|| {
        Refusal::new(
            Rule::Decisions,
            "decisions.md holds no accepted decision yet (still what init wrote)",
            format!("write the accepted decisions under ## Accepted Decisions in decisions.md, one `- ` line each, before {event}"),
        )
    })
}

/// Whether `decisions.md` states at least one decision: a `- ` item under
/// `## Accepted Decisions` other than the skeleton's "None yet.".
fn has_decision(text: &str) -> bool {
    text.lines()
        .skip_while(|l| l.trim() != "## Accepted Decisions")
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|l| l.trim().strip_prefix("- "))
        .any(|item| {
            let item = item.trim();
            !item.is_empty() && !item.eq_ignore_ascii_case("None yet.")
        })
}

pub(crate) const DECISIONS_SKELETON: &str = "# Decisions\n\nAccepted decisions only; open questions belong in readiness.md.\n\n## Accepted Decisions\n\n- None yet.\n";

/// `readiness.md` as `init` writes it: one open question to replace, the
/// completion gates and the final checklist unchecked.
pub(crate) fn readiness_skeleton(gates: &[String]) -> String {
    let mut out = String::from(
        "# Readiness\n\nClassify every open question as `[resolved]`, `[deferred_nonblocking]`\n(with `Reason: ...`) or `[blocking]` before decisions are accepted; no\n`[blocking]` or `[unresolved]` item may remain when readiness passes.\n\n## Open Question Classification\n\n- [unresolved] List each open question of proposal.md here.\n\n## Blocking Issues\n\n- None.\n\n## Deferred Follow-ups\n\n- None.\n\n## Completion Gates\n\n",
    );
    for gate in gates {
        let _ = writeln!(out, "- [ ] {}", one_line(gate));
    }
    out.push_str(
        "\n## Final Design Document Checklist\n\n- [ ] Accepted Decisions\n- [ ] Assumptions\n- [ ] Deferred Follow-ups\n- [ ] Implementation Blockers\n- [ ] Ready to implement\n",
    );
    out
}

/// Schema 2's `proposal.md` as `init` writes it.
pub(crate) fn proposal_skeleton_2(objective: &str, primary_ref: &str) -> String {
    format!(
        "# Proposal\n\n## Purpose\n\n{}\n\n## Current Proposal\n\nTBD.\n\n## Deliverable Draft\n\n- Primary: `{}`\n\n## Open Questions\n\n- TBD.\n",
        one_line(objective),
        one_line(primary_ref)
    )
}

pub(crate) const REVIEW_SKELETON_2: &str = "# Review\n\nOne structured review per `review_submitted` event, headed with that\nevent's own seq (not the seq it replies to):\n\n    ## <ISO-8601 UTC> - <participant> - seq <review_submitted seq>\n\nwith Context (naming the primary deliverable reviewed), the review scope,\nPosition, Concerns, Required Changes and Questions. `aea collab review`\nwrites both the review and its event.\n";

pub(crate) const DECISIONS_SKELETON_2: &str = "# Decisions\n\nAccepted decisions only; open questions belong in readiness.md. Each\ndecision is a `### D<n>. <title>` heading (D1, D2, … in order) with a\n`- Decision:` line, a `- Rationale:` line and a `- Reflected in:` line\nnaming the deliverable section that carries it.\n\n## Accepted Decisions\n\n- None yet.\n";

/// Schema 2's `readiness.md`: one open question to replace, the
/// objective's gates and the generated ones unchecked, the snapshot of the
/// primary deliverable to fill in, the final checkbox.
pub(crate) fn readiness_skeleton_2(
    objective_gates: &[String],
    generated: &[String],
    primary_ref: &str,
) -> String {
    let mut out = String::from(
        "# Readiness\n\nClassify every open question as `[resolved]`, `[deferred_nonblocking]`\n(with `Reason: ...`) or `[blocking]` before decisions are accepted; no\n`[blocking]` or `[unresolved]` item may remain when readiness passes.\n\n## Open Question Classification\n\n- [unresolved] List each open question of proposal.md here.\n\n## Blocking Issues\n\n- None.\n\n## Objective Gates\n\n",
    );
    for gate in objective_gates {
        let _ = writeln!(out, "- [ ] {}", one_line(gate));
    }
    out.push_str("\n## Generated Deliverable Gates\n\n");
    for gate in generated {
        let _ = writeln!(out, "- [ ] {}", one_line(gate));
    }
    let _ = write!(
        out,
        "\n## Deliverable Snapshot\n\n- Primary: `{}`\n- SHA-256:\n\n## Deferred Follow-ups\n\n- None.\n\n## Implementation Blockers\n\n- None.\n\n## Ready to Implement\n\n- [ ] Ready to implement\n",
        one_line(primary_ref)
    );
    out
}

/// Schema 2's `conclusion.md`: the nine headings of the receipt, the
/// primary deliverable named, and like schema 1's a `[blocked]` outcome
/// and placeholders that keep it from completing until it is written.
pub(crate) fn conclusion_skeleton_2(primary_ref: &str, kind: &str) -> String {
    let mut out = String::from(
        "# Conclusion\n\nThe final receipt of the collaboration, not the deliverable. Declare\nexactly one outcome: `[proceed]`, `[do_not_proceed]` or `[defer]`.\n",
    );
    for heading in CONCLUSION_HEADINGS_2 {
        let body = match heading {
            "Decision Outcome" => "- [blocked] TBD".to_string(),
            "Deliverable Receipt" => format!(
                "- Primary: `{}`\n- Type: `{}`\n- SHA-256: TBD",
                one_line(primary_ref),
                one_line(kind)
            ),
            _ => "TBD.".to_string(),
        };
        let _ = write!(out, "\n## {heading}\n\n{body}\n");
    }
    out
}

/// `conclusion.md` with the eight required headings. Its placeholders and
/// its `[blocked]` outcome keep it from passing the completion gate until
/// someone writes the conclusion.
pub fn conclusion_skeleton() -> String {
    let mut out = String::from(
        "# Conclusion\n\nThe final answer to the objective, not a log. Declare exactly one\noutcome: `[proceed]`, `[do_not_proceed]` or `[defer]`.\n",
    );
    for heading in CONCLUSION_HEADINGS {
        let body = if heading == "Decision Outcome" {
            "- [blocked] TBD"
        } else {
            "TBD."
        };
        let _ = write!(out, "\n## {heading}\n\n{body}\n");
    }
    out
}

/// The document gates for an event that needs them: readiness before
/// `decision_accepted`, `readiness_passed` and `completed`; the completion
/// gates and the conclusion before `completed`.
pub(crate) fn gate(
    event: super::EventName,
    readiness: &ReadinessScan,
    gates: &[String],
    conclusion: Option<&ConclusionScan>,
) -> Vec<Refusal> {
    use super::EventName::{Completed, DecisionAccepted, ReadinessPassed};
    let mut problems = Vec::new();
    if !matches!(event, DecisionAccepted | ReadinessPassed | Completed) {
        return problems;
    }

    if !readiness.blocking.is_empty() {
        problems.push(Refusal::new(
            Rule::BlockingItem,
            format!(
                "readiness.md has blocking items: {}",
                readiness.blocking.join("; ")
            ),
            format!("clear every [blocking] item of readiness.md before {event}"),
        ));
    }
    if !readiness.unresolved.is_empty() {
        problems.push(Refusal::new(
            Rule::UnresolvedItem,
            format!(
                "readiness.md has unresolved questions: {}",
                readiness.unresolved.join("; ")
            ),
            format!(
                "classify every open question of readiness.md as [resolved], [deferred_nonblocking] with Reason: …, or [blocking] (no TBD left) before {event}"
            ),
        ));
    }
    if !readiness.deferred_missing_reason.is_empty() {
        problems.push(Refusal::new(
            Rule::DeferredReason,
            format!(
                "readiness.md has deferred_nonblocking items without a reason: {}",
                readiness.deferred_missing_reason.join("; ")
            ),
            format!("add `Reason: …` to every [deferred_nonblocking] item before {event}"),
        ));
    }
    if matches!(event, ReadinessPassed | Completed) && !readiness.ready_to_implement {
        problems.push(Refusal::new(
            Rule::ReadyToImplement,
            "readiness.md does not check \"- [x] Ready to implement\"",
            format!("check Ready to implement in readiness.md's final checklist before {event}"),
        ));
    }
    if event == Completed {
        let unchecked = readiness.unchecked_gates(gates);
        if !unchecked.is_empty() {
            problems.push(Refusal::new(
                Rule::CompletionGates,
                format!(
                    "completion gates not checked in readiness.md: {}",
                    unchecked.join(", ")
                ),
                "check each completion gate as \"- [x] <gate>\" on a line of its own in readiness.md",
            ));
        }
        match conclusion {
            None => problems.push(Refusal::new(
                Rule::MissingFile,
                "conclusion.md is missing",
                "write conclusion.md before completed",
            )),
            Some(scan) => {
                for problem in scan.problems() {
                    problems.push(Refusal::new(
                        Rule::Conclusion,
                        problem,
                        "conclusion.md needs every ## heading of its schema, exactly one outcome line - [proceed|do_not_proceed|defer] …, no TBD/TODO/unresolved, and (schema 2) the primary deliverable's reference",
                    ));
                }
            }
        }
    }
    problems
}
