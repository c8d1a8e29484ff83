//! Which ACP schema a folder speaks, and the words of schema 2 that the
//! rest of the protocol's modules share: deliverable types and roles, and
//! the checks on a name or a hash that need nothing of the folder.

use serde::Serialize;
use serde_json::{Map, Value};

use super::{Advice, EventName, Refusal, Rule};
use crate::words::word_enum;

/// The schema a collaboration folder speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(into = "u8")]
pub enum Schema {
    /// The seed text (`reference/acp-skill.md`): no `schemaVersion`, gates
    /// as strings, no deliverables.
    One,
    /// `"protocol": "acp"`, `"schemaVersion": 2`: gates as objects, a
    /// declared primary deliverable, `deliverable_*` events.
    Two,
}

#[cfg(any(test, feature = "schema"))]
impl schemars::JsonSchema for Schema {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Schema".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "The ACP schema of the folder: 1 (the seed's form) or 2 (deliverables).",
            "type": "integer",
            "enum": [1, 2]
        })
    }
}

impl From<Schema> for u8 {
    fn from(schema: Schema) -> u8 {
        schema.number()
    }
}

impl Schema {
    pub fn number(self) -> u8 {
        match self {
            Schema::One => 1,
            Schema::Two => 2,
        }
    }

    /// The schema numbered `n`, if aea speaks it.
    pub fn from_number(n: u64) -> Option<Schema> {
        match n {
            1 => Some(Schema::One),
            2 => Some(Schema::Two),
            _ => None,
        }
    }

    /// The schema `protocol.json` declares: `schemaVersion` decides; a
    /// file without one is schema 1 unless it names `"protocol": "acp"`
    /// (schema 2's marker, whose missing version the validator reports).
    /// A version aea does not speak (3, "2", -1, 2.5…) is a refusal: aea
    /// would misread such a folder, so it reads none of it.
    pub(crate) fn of(protocol: &Map<String, Value>) -> Result<Schema, Refusal> {
        match protocol.get("schemaVersion") {
            None | Some(Value::Null) => Ok(if protocol.contains_key("protocol") {
                Schema::Two
            } else {
                Schema::One
            }),
            Some(v) => v.as_u64().and_then(Schema::from_number).ok_or_else(|| {
                let shown = shown_value(v);
                Refusal::new(
                    Rule::Schema,
                    format!(
                        "protocol.json declares schemaVersion {shown}; this aea reads ACP schema 1 and 2 only"
                    ),
                    "use a tool that speaks that schema, or an aea that does; aea leaves the folder as it is",
                )
            }),
        }
    }

    /// Event names of this schema: schema 1 has no `deliverable_*` events.
    pub(crate) fn has_event(self, name: EventName) -> bool {
        self == Schema::Two || !name.is_deliverable()
    }
}

/// A JSON value shown in a message: short, on one line.
pub(crate) fn shown_value(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 40 {
        let cut: String = text.chars().take(40).collect();
        format!("{cut}…")
    } else {
        text
    }
}

word_enum! {
    /// The kinds of deliverable schema 2 knows; `custom` names its own
    /// sections (the checklist).
    pub enum DeliverableType {
        Adr = "adr",
        DesignSpec = "design-spec",
        ImplementationPlan = "implementation-plan",
        DecisionMemo = "decision-memo",
        ReviewReport = "review-report",
        TestPlan = "test-plan",
        Custom = "custom",
    }
}

impl DeliverableType {
    /// The title of the template, the file a built-in type defaults to,
    /// and the `## ` sections it must have.
    pub(crate) fn spec(self) -> (&'static str, Option<&'static str>, &'static [&'static str]) {
        match self {
            DeliverableType::Adr => (
                "Architecture Decision Record",
                Some("adr.md"),
                &[
                    "Status",
                    "Context",
                    "Decision",
                    "Alternatives Considered",
                    "Consequences",
                    "Follow-ups",
                ],
            ),
            DeliverableType::DesignSpec => (
                "Design Spec",
                Some("design-spec.md"),
                &[
                    "Problem",
                    "Goals",
                    "Non-goals",
                    "Proposed Design",
                    "Interfaces / Contracts",
                    "Failure Modes",
                    "Validation Plan",
                    "Open Questions",
                ],
            ),
            DeliverableType::ImplementationPlan => (
                "Implementation Plan",
                Some("implementation-plan.md"),
                &[
                    "Scope",
                    "Phases",
                    "Tasks",
                    "Dependencies",
                    "Rollout / Migration",
                    "Tests",
                    "Risks",
                    "Exit Criteria",
                ],
            ),
            DeliverableType::DecisionMemo => (
                "Decision Memo",
                Some("decision-memo.md"),
                &[
                    "Question",
                    "Recommendation",
                    "Options",
                    "Tradeoffs",
                    "Decision",
                    "Next Action",
                ],
            ),
            DeliverableType::ReviewReport => (
                "Review Report",
                Some("review-report.md"),
                &[
                    "Scope",
                    "Findings",
                    "Risks",
                    "Required Changes",
                    "Open Questions",
                    "Recommendation",
                ],
            ),
            DeliverableType::TestPlan => (
                "Test Plan",
                Some("test-plan.md"),
                &[
                    "Scope",
                    "Test Matrix",
                    "Fixtures",
                    "Automation",
                    "Manual Tests",
                    "Exit Criteria",
                ],
            ),
            DeliverableType::Custom => ("Custom Deliverable", None, &[]),
        }
    }

    /// The file a built-in type is written to unless another is named.
    pub fn default_file(self) -> Option<&'static str> {
        self.spec().1
    }
}

word_enum! {
    /// What a `deliverable_*` event is about (its `role`).
    pub enum Role {
        Primary = "primary",
        Supporting = "supporting",
    }
}

/// The schema 2 statuses of a deliverable (`Status: …`).
pub(crate) const STATUSES: [&str; 3] = ["Draft", "In Review", "Frozen"];

/// The gates schema 2 adds to the objective's, for the primary deliverable.
pub(crate) fn generated_gates(primary_ref: &str, kind: DeliverableType) -> Vec<String> {
    vec![
        format!("Primary deliverable exists: `{primary_ref}`"),
        format!("Primary deliverable has required `{kind}` sections"),
        "Every accepted decision has `Reflected in`".into(),
        "Every accepted decision is reflected in the primary deliverable".into(),
        "Primary deliverable status is `Frozen`".into(),
        "Primary deliverable SHA-256 snapshot recorded".into(),
    ]
}

/// Whether `name` is a Markdown file name as ACP judges it: ending in
/// `.md`, that exact case.
#[allow(clippy::case_sensitive_file_extension_comparisons)]
pub(crate) fn is_markdown(name: &str) -> bool {
    name.ends_with(".md")
}

/// Whether `value`, as a path, is absolute or has a `..` part.
pub(crate) fn path_escapes(value: &str) -> bool {
    value.starts_with('/') || value.split('/').any(|part| part == "..")
}

/// Whether `value` is 64 lowercase hex digits.
pub(crate) fn is_sha256(value: &str) -> bool {
    value.len() == 64
        && value
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A refusal for a schema 2 word used in a schema 1 folder.
pub(crate) fn not_in_schema_one(what: &str) -> Refusal {
    Refusal::new(
        Rule::Schema,
        format!(
            "{what} belongs to ACP schema 2; this folder is schema 1 (protocol.json has no schemaVersion 2)"
        ),
        Advice::Plain(
            "a schema 1 folder keeps schema 1 events; start a new collaboration for schema 2"
                .into(),
        ),
    )
}
