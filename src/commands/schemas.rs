//! The JSON Schema of every `--json` document, generated from the types
//! that print it and shipped in `schemas/` so that agents can rely on the
//! shape. The test below fails when a shipped file differs from what the
//! types say; `AEA_UPDATE_SCHEMAS=1 cargo test schemas` rewrites them.
//! `tests/test_json_output.rs` checks real output against the shipped files.

use std::path::Path;

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};

fn schema<T: JsonSchema>() -> Schema {
    SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>()
}

/// Every document, by the name of its file in `schemas/` (the command,
/// with the subcommand after a dash). `aea log --json` prints the log's own
/// lines, read from disk, and has no schema here.
fn all() -> Vec<(&'static str, Schema)> {
    use super::*;
    vec![
        ("init", schema::<init::Report>()),
        ("send", schema::<crate::delivery::Delivery>()),
        ("reply", schema::<crate::delivery::Delivery>()),
        ("check", schema::<listing::Report>()),
        ("show", schema::<show::ShowOutput<'static>>()),
        ("show-copy", schema::<show::CopyOutput<'static>>()),
        ("attachment", schema::<attachment::ListOutput<'static>>()),
        (
            "attachment-write",
            schema::<attachment::WriteOutput<'static>>(),
        ),
        ("process", schema::<process::ProcessOutput<'static>>()),
        ("pending", schema::<pending::PendingOutput<'static>>()),
        ("pending-all", schema::<pending::AllOutput>()),
        ("approve", schema::<verdict::ApprovalOutput<'static>>()),
        ("reject", schema::<verdict::ApprovalOutput<'static>>()),
        ("policy-show", schema::<crate::policy::Summary>()),
        ("policy-explain", schema::<policy::ExplainOutput<'static>>()),
        ("policy-replay", schema::<policy::ReplayOutput<'static>>()),
        ("watch", schema::<watch::WatchOutput<'static>>()),
        ("monitor", schema::<monitor::MonitorOutput<'static>>()),
        (
            "quarantine",
            schema::<quarantine::QuarantineOutput<'static>>(),
        ),
        ("gc", schema::<crate::housekeeping::Report>()),
        ("sync", schema::<crate::sync::Report>()),
        ("status", schema::<status::StatusOutput<'static>>()),
        ("sent", schema::<sent::SentOutput>()),
        ("thread", schema::<thread::ThreadOutput>()),
        (
            "hooks-install",
            schema::<hooks::HooksInstallOutput<'static>>(),
        ),
        (
            "hooks-uninstall",
            schema::<hooks::HooksUninstallOutput<'static>>(),
        ),
        (
            "hooks-status",
            schema::<hooks::HooksStatusOutput<'static>>(),
        ),
        ("uninstall", schema::<uninstall::UninstallOutput<'static>>()),
        ("doctor", schema::<doctor::DoctorOutput<'static>>()),
        ("agents", schema::<agents::AgentsOutput<'static>>()),
        (
            "agents-change",
            schema::<agents::AgentChangeOutput<'static>>(),
        ),
        ("approvers-list", schema::<approvers::ApproversOutput>()),
        (
            "approvers-change",
            schema::<approvers::ApproversChangeOutput>(),
        ),
        ("whoami", schema::<whoami::WhoamiOutput<'static>>()),
        ("validate", schema::<validate::Report>()),
        ("bridge", schema::<bridge::BridgeOutput<'static>>()),
        ("trust", schema::<trust::TrustOutput<'static>>()),
        (
            "trust-revoke",
            schema::<trust::TrustRevokeOutput<'static>>(),
        ),
        ("collab-init", schema::<collab::InitOutput>()),
        ("collab-event", schema::<collab::EventOutput>()),
        ("collab-classify", schema::<collab::ClassifyOutput>()),
        ("collab-next", schema::<collab::NextOutput>()),
        ("collab-wait", schema::<collab::WaitOutput>()),
        ("collab-validate", schema::<collab::ValidateOutput>()),
        ("collab-list", schema::<collab::ListOutput>()),
        ("error", schema::<crate::hints::ErrorOutput>()),
    ]
}

#[test]
// A test-only module: the update switch is the test's own, not the
// product's environment (tests/test_code_layout.rs allows this file by name).
#[allow(clippy::disallowed_methods)]
fn shipped_schemas_match_the_types() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let update = std::env::var_os("AEA_UPDATE_SCHEMAS").is_some_and(|v| v == "1");
    let mut wanted = std::collections::BTreeSet::new();
    let mut stale = Vec::new();
    for (name, schema) in all() {
        let file = format!("{name}.json");
        let text = serde_json::to_string_pretty(&schema).expect("a schema serialises") + "\n";
        let path = dir.join(&file);
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &text).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(file.clone());
        }
        wanted.insert(file);
    }
    let mut extra = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !wanted.contains(&name) {
            if update {
                std::fs::remove_file(dir.join(&name)).unwrap();
            } else {
                extra.push(name);
            }
        }
    }
    assert!(
        stale.is_empty() && extra.is_empty(),
        "schemas/ does not match the --json types: out of date {stale:?}, not generated {extra:?}.\n\
         If the change to the output is intended, run `AEA_UPDATE_SCHEMAS=1 cargo test schemas` \
         and commit schemas/ with it."
    );
}
