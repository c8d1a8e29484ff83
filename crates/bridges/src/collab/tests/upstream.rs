//! Folders laid out exactly as the protocol's own schema 2 scripts lay
//! them out (benjinus/agent-collaboration-protocol at 6753f98:
//! `init_collaboration.py`, `append_event.py` and `_acp.py`), written here
//! from reading them: `protocol.json` as Python's `json.dumps(…,
//! ensure_ascii=False, indent=2, sort_keys=True)` plus a newline, each
//! event as `json.dumps(…, ensure_ascii=False, separators=(",", ":"))` with
//! its keys in the order the script builds them (seq, from, event, at,
//! summary, then doc, reply_to, role, sha256 when given), times as
//! `YYYY-MM-DDTHH:MM:SSZ`, and the documents `init_collaboration.py`
//! writes, byte for byte. Nothing here calls aea's own writers, so aea is
//! checked against the layout, not against itself. `scripts/acp-e2e` runs
//! the real scripts.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// Python's `json.dumps` string escaping with `ensure_ascii=False`.
fn py_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)`.
pub(super) fn py_pretty_sorted(value: &Value) -> String {
    fn go(v: &Value, depth: usize, out: &mut String) {
        let pad = |d: usize| "  ".repeat(d);
        match v {
            Value::Object(map) if !map.is_empty() => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push_str("{\n");
                for (i, k) in keys.iter().enumerate() {
                    out.push_str(&pad(depth + 1));
                    py_string(k, out);
                    out.push_str(": ");
                    go(&map[*k], depth + 1, out);
                    out.push_str(if i + 1 < keys.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(depth));
                out.push('}');
            }
            Value::Array(items) if !items.is_empty() => {
                out.push_str("[\n");
                for (i, item) in items.iter().enumerate() {
                    out.push_str(&pad(depth + 1));
                    go(item, depth + 1, out);
                    out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(depth));
                out.push(']');
            }
            Value::Object(_) => out.push_str("{}"),
            Value::Array(_) => out.push_str("[]"),
            Value::String(s) => py_string(s, out),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Null => out.push_str("null"),
            Value::Number(n) => out.push_str(&n.to_string()),
        }
    }
    let mut out = String::new();
    go(value, 0, &mut out);
    out
}

/// `json.dumps(payload, ensure_ascii=False, separators=(",", ":"))` of a
/// flat event, keys in their order.
pub(super) fn py_compact(event: &[(&str, Value)]) -> String {
    let mut out = String::from("{");
    for (i, (k, v)) in event.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        py_string(k, &mut out);
        out.push(':');
        match v {
            Value::String(s) => py_string(s, &mut out),
            other => out.push_str(&other.to_string()),
        }
    }
    out.push('}');
    out
}

/// The sections `_acp.py` requires of each built-in deliverable type.
pub(super) fn sections(kind: &str) -> Vec<&'static str> {
    match kind {
        "design-spec" => vec![
            "Problem",
            "Goals",
            "Non-goals",
            "Proposed Design",
            "Interfaces / Contracts",
            "Failure Modes",
            "Validation Plan",
            "Open Questions",
        ],
        "adr" => vec![
            "Status",
            "Context",
            "Decision",
            "Alternatives Considered",
            "Consequences",
            "Follow-ups",
        ],
        "decision-memo" => vec![
            "Question",
            "Recommendation",
            "Options",
            "Tradeoffs",
            "Decision",
            "Next Action",
        ],
        _ => Vec::new(),
    }
}

fn title(kind: &str) -> &'static str {
    match kind {
        "design-spec" => "Design Spec",
        "adr" => "Architecture Decision Record",
        "decision-memo" => "Decision Memo",
        "custom" => "Custom Deliverable",
        _ => "Deliverable",
    }
}

/// A collaboration folder as the scripts write it, internal mode.
pub(super) struct Upstream {
    pub path: PathBuf,
    pub protocol: Map<String, Value>,
    /// The primary deliverable's reference (`deliverables/<file>`).
    pub primary_ref: String,
    pub kind: String,
}

impl Upstream {
    /// `init_collaboration.py --folder path --participant … --objective …
    /// --completion … --primary-deliverable-type kind
    /// [--primary-deliverable-file file] [--primary-deliverable-check …]`
    /// run at `now`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn init(
        path: &Path,
        participants: &[&str],
        objective: &str,
        gates: &[&str],
        kind: &str,
        file: Option<&str>,
        checks: &[&str],
        now: &str,
    ) -> Upstream {
        let file = file.map_or_else(|| format!("{kind}.md"), str::to_string);
        let primary_ref = format!("deliverables/{file}");
        let generated = [
            format!("Primary deliverable exists: `{primary_ref}`"),
            format!("Primary deliverable has required `{kind}` sections"),
            "Every accepted decision has `Reflected in`".to_string(),
            "Every accepted decision is reflected in the primary deliverable".to_string(),
            "Primary deliverable status is `Frozen`".to_string(),
            "Primary deliverable SHA-256 snapshot recorded".to_string(),
        ];
        let mut completion: Vec<Value> = gates
            .iter()
            .map(|g| json!({"source": "objective", "text": g}))
            .collect();
        completion.extend(
            generated
                .iter()
                .map(|g| json!({"source": "generated", "text": g})),
        );
        let protocol = json!({
            "protocol": "acp",
            "schemaVersion": 2,
            "objective": objective,
            "objectiveGates": gates,
            "participants": participants.iter().map(|p| json!({"id": p})).collect::<Vec<_>>(),
            "completionGates": completion,
            "deliverables": {
                "mode": "internal",
                "dir": "deliverables",
                "owner": participants[0],
                "coAuthors": [],
                "primary": {"type": kind, "file": file, "checklist": checks},
                "supporting": [],
                "attachments": [],
            },
            "currentPhase": "drafting",
            "proposalOwner": participants[0],
            "waitingFor": [participants[0]],
            "createdAt": now,
            "updatedAt": now,
        });
        let Value::Object(protocol) = protocol else {
            unreachable!()
        };
        fs::create_dir_all(path.join("deliverables")).unwrap();
        let up = Upstream {
            path: path.to_path_buf(),
            protocol,
            primary_ref: primary_ref.clone(),
            kind: kind.to_string(),
        };
        up.write_protocol();

        let section_names: Vec<String> = if kind == "custom" {
            checks.iter().map(|c| (*c).to_string()).collect()
        } else {
            sections(kind).iter().map(|s| (*s).to_string()).collect()
        };
        let section_text = section_names
            .iter()
            .map(|s| format!("## {s}\n\n"))
            .collect::<Vec<_>>()
            .join("\n\n");
        up.write(
            &primary_ref,
            &format!(
                "# {}\n\nDeliverable type: `{kind}`\nStatus: Draft\n\n{section_text}\n",
                title(kind)
            ),
        );

        let lines = |prefix: &str, items: &[String]| {
            items
                .iter()
                .map(|i| format!("{prefix}{i}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let objective_gates: Vec<String> = gates.iter().map(|g| (*g).to_string()).collect();
        let ids: Vec<String> = participants.iter().map(|p| format!("`{p}`")).collect();
        up.write(
            "README.md",
            &format!(
                "# ACP Collaboration Workspace\n\nObjective:\n{objective}\n\nParticipants:\n{}\n\nObjective Gates:\n{}\n\nPrimary Deliverable:\n- Type: `{kind}`\n- Path: `{primary_ref}`\n\nProtocol Files:\n- `protocol.json`: ACP schema v2 state and deliverable declaration.\n- `events.jsonl`: append-only structured events with continuous `seq` values.\n- `proposal.md`: current proposal/change summary only.\n- `review.md`: structured participant reviews.\n- `decisions.md`: accepted decision index with stable IDs.\n- `readiness.md`: question classification, objective gates, generated deliverable gates, and freeze snapshot.\n- `conclusion.md`: final receipt that references the frozen deliverable.\n- `deliverables/`: actual deliverable artifacts.\n",
                lines("- ", &ids),
                lines("- ", &objective_gates)
            ),
        );
        up.write(
            "proposal.md",
            &format!(
                "# Proposal\n\n## Purpose\n\n{objective}\n\n## Current Proposal\n\nInitial proposal pending.\n\n## Deliverable Draft\n\n- Primary: `{primary_ref}`\n\n## Review Focus\n\n- Proposal coherence.\n- Primary deliverable completeness.\n- Accepted decision traceability.\n- Implementation readiness.\n"
            ),
        );
        up.write(
            "review.md",
            &format!(
                "# Review\n\nAppend one structured review per `review_submitted` event.\n\nHeading rule:\n`## <ISO-8601 UTC> - <participant_id> - seq <review_submitted event seq>`\n\nTemplate:\n\n## <timestamp> - <participant_id> - seq <event seq>\n\nContext:\n- Read `proposal.md` after event seq `<seq>`.\n- Reviewed primary deliverable: `{primary_ref}`\n- Reviewed supporting deliverables: none.\n\nReview Scope:\n- Proposal coherence\n- Primary deliverable completeness\n- Accepted decision traceability\n- Implementation readiness\n\nPosition:\n- ...\n\nConcerns:\n- ...\n\nRequired Changes:\n- ...\n\nQuestions:\n- ...\n"
            ),
        );
        up.write(
            "decisions.md",
            &format!(
                "# Decisions\n\nOnly record accepted decisions here. Use stable IDs and trace each decision to a declared deliverable.\n\n## Accepted Decisions\n\n### D1. Initial deliverable declaration\n\n- Decision: The primary deliverable for this collaboration is `{primary_ref}`.\n- Rationale: ACP schema v2 requires a declared primary deliverable.\n- Reflected in: `{primary_ref}#proposed-design`\n"
            ),
        );
        up.write(
            "readiness.md",
            &format!(
                "# Readiness\n\nClassify every open question before readiness can pass.\n\n## Open Question Classification\n\n- [unresolved] Initial deliverable review has not completed.\n\nAllowed statuses:\n- `[resolved]`\n- `[deferred_nonblocking]` with `Reason: ...`\n- `[blocking]`\n\n## Blocking Issues\n\n- None.\n\n## Objective Gates\n\n{}\n\n## Generated Deliverable Gates\n\n{}\n\n## Deliverable Snapshot\n\n- Primary: `{primary_ref}`\n- SHA-256:\n\n## Supporting Deliverables\n\n- None.\n\n## Attachments\n\n- None.\n\n## Deferred Follow-ups\n\n- None.\n\n## Implementation Blockers\n\n- None.\n\n## Ready to Implement\n\n- [ ] Ready to implement\n",
                lines("- [ ] ", &objective_gates),
                lines("- [ ] ", &generated)
            ),
        );
        up.write(
            "conclusion.md",
            &format!(
                "# Conclusion\n\nThis file is the final receipt of the collaboration, not the primary deliverable.\n\n## Decision Outcome\n\n- [blocked] Collaboration is not complete.\n\nAllowed final outcomes:\n- `[proceed]` implement now.\n- `[do_not_proceed]` do not implement.\n- `[defer]` defer until named follow-ups are resolved.\n\n## Rationale\n\nThe collaboration is still in progress.\n\n## Deliverable Receipt\n\n- Primary: `{primary_ref}`\n- Type: `{kind}`\n- SHA-256:\n- Supporting: none\n- Attachments: none\n\n## Accepted Decisions Summary\n\n- No accepted decisions yet.\n\n## Readiness Result\n\n- Objective gates: not passed\n- Generated deliverable gates: not passed\n- Readiness file: `readiness.md`\n\n## Assumptions\n\n- No assumptions accepted yet.\n\n## Deferred Follow-ups\n\n- None.\n\n## Implementation Blockers\n\n- None.\n\n## Next Action\n\nContinue the ACP state machine.\n"
            ),
        );
        let first = py_compact(&[
            ("seq", json!(1)),
            ("from", json!(participants[0])),
            ("event", json!("initialized")),
            ("at", json!(now)),
            (
                "summary",
                json!("Initialized ACP schema v2 collaboration workspace."),
            ),
            ("doc", json!("protocol.json")),
        ]);
        up.write("events.jsonl", &format!("{first}\n"));
        up
    }

    pub(super) fn write(&self, name: &str, text: &str) {
        fs::write(self.path.join(name), text).unwrap();
    }

    pub(super) fn read(&self, name: &str) -> String {
        fs::read_to_string(self.path.join(name)).unwrap()
    }

    fn write_protocol(&self) {
        let text = py_pretty_sorted(&Value::Object(self.protocol.clone()));
        self.write("protocol.json", &format!("{text}\n"));
    }

    /// The line `append_event.py` writes for these arguments.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn event_line(
        seq: u64,
        participant: &str,
        event: &str,
        at: &str,
        summary: &str,
        doc: Option<&str>,
        reply_to: Option<u64>,
        role: Option<&str>,
        sha256: Option<&str>,
    ) -> String {
        let mut fields = vec![
            ("seq", json!(seq)),
            ("from", json!(participant)),
            ("event", json!(event)),
            ("at", json!(at)),
            ("summary", json!(summary)),
        ];
        if let Some(doc) = doc {
            fields.push(("doc", json!(doc)));
        }
        if let Some(r) = reply_to {
            fields.push(("reply_to", json!(r)));
        }
        if let Some(role) = role {
            fields.push(("role", json!(role)));
        }
        if let Some(sha) = sha256 {
            fields.push(("sha256", json!(sha)));
        }
        py_compact(&fields)
    }

    /// `append_event.py`: the event line, then `protocol.json` rewritten
    /// with the state it derives (given here: `phase`, the owner and
    /// `waiting`) and `updatedAt`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn append(
        &mut self,
        participant: &str,
        event: &str,
        doc: Option<&str>,
        role: Option<&str>,
        sha256: Option<&str>,
        at: &str,
        phase: &str,
        waiting: &[&str],
    ) -> u64 {
        let log = self.read("events.jsonl");
        let seq = log.lines().filter(|l| !l.trim().is_empty()).count() as u64 + 1;
        let line = Upstream::event_line(
            seq,
            participant,
            event,
            at,
            &format!("{event} by {participant}"),
            doc,
            Some(seq - 1),
            role,
            sha256,
        );
        self.write("events.jsonl", &format!("{log}{line}\n"));
        self.protocol.insert("currentPhase".into(), json!(phase));
        self.protocol.insert("waitingFor".into(), json!(waiting));
        self.protocol.insert("updatedAt".into(), json!(at));
        self.write_protocol();
        seq
    }

    /// A review as the scripts' tests write one, headed `seq`.
    pub(super) fn write_review(&self, who: &str, seq: u64) {
        self.write(
            "review.md",
            &format!(
                "# Review\n\n## 2026-01-01T00:00:00Z - {who} - seq {seq}\n\nContext:\n- Read `proposal.md` after event seq `{}`.\n- Reviewed primary deliverable: `{}`\n- Reviewed supporting deliverables: none.\n\nReview Scope:\n- Proposal coherence\n- Primary deliverable completeness\n- Accepted decision traceability\n- Implementation readiness\n\nPosition:\n- Accept with required revisions.\n\nConcerns:\n- None.\n\nRequired Changes:\n- None.\n\nQuestions:\n- None.\n",
                seq - 1,
                self.primary_ref
            ),
        );
    }

    pub(super) fn write_decisions(&self) {
        self.write(
            "decisions.md",
            &format!(
                "# Decisions\n\n## Accepted Decisions\n\n### D1. Use deliverable-aware ACP\n\n- Decision: ACP requires a declared primary deliverable.\n- Rationale: The final output must be separable from protocol receipt files.\n- Reflected in: `{}#proposed-design`\n",
                self.primary_ref
            ),
        );
    }

    /// Every section filled and `Status: Frozen`; returns the file's SHA-256.
    pub(super) fn fill_and_freeze_text(&self) -> String {
        let mut text = self
            .read(&self.primary_ref)
            .replace("Status: Draft", "Status: Frozen");
        for s in sections(&self.kind) {
            text = text.replace(
                &format!("## {s}\n\n"),
                &format!("## {s}\n\nContent for {s}.\n\n"),
            );
        }
        self.write(&self.primary_ref, &text);
        crate::fsutil::sha256_hex(text.as_bytes())
    }

    pub(super) fn write_readiness(&self, gates: &[&str], sha: &str) {
        let mut objective = String::new();
        for g in gates {
            let _ = writeln!(objective, "- [x] {g}");
        }
        self.write(
            "readiness.md",
            &format!(
                "# Readiness\n\n## Open Question Classification\n\n- [resolved] All questions are handled.\n- [deferred_nonblocking] Tune thresholds later. Reason: implementation can start with defaults.\n\n## Blocking Issues\n\n- None.\n\n## Objective Gates\n\n{objective}\n## Generated Deliverable Gates\n\n- [x] Primary deliverable exists: `{r}`\n- [x] Primary deliverable has required `{k}` sections\n- [x] Every accepted decision has `Reflected in`\n- [x] Every accepted decision is reflected in the primary deliverable\n- [x] Primary deliverable status is `Frozen`\n- [x] Primary deliverable SHA-256 snapshot recorded\n\n## Deliverable Snapshot\n\n- Primary: `{r}`\n- SHA-256: {sha}\n\n## Deferred Follow-ups\n\n- Tune thresholds later.\n\n## Implementation Blockers\n\n- None.\n\n## Ready to Implement\n\n- [x] Ready to implement\n",
                r = self.primary_ref,
                k = self.kind
            ),
        );
    }

    pub(super) fn write_conclusion(&self, sha: &str) {
        self.write(
            "conclusion.md",
            &format!(
                "# Conclusion\n\n## Decision Outcome\n\n- [proceed] Implement the accepted design now.\n\n## Rationale\n\nThe accepted decisions answer the collaboration objective and readiness has no blockers.\n\n## Deliverable Receipt\n\n- Primary: `{}`\n- Type: `{}`\n- SHA-256: {sha}\n- Supporting: none\n- Attachments: none\n\n## Accepted Decisions Summary\n\n- D1. Use deliverable-aware ACP.\n\n## Readiness Result\n\n- Objective gates: passed\n- Generated deliverable gates: passed\n- Readiness file: `readiness.md`\n\n## Assumptions\n\n- No additional assumptions.\n\n## Deferred Follow-ups\n\n- None.\n\n## Implementation Blockers\n\n- None.\n\n## Next Action\n\nStart implementation.\n",
                self.primary_ref, self.kind
            ),
        );
    }
}
