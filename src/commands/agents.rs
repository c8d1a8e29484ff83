//! `aea agents` (SPEC §8): the registry's entries and their health.

use serde::Serialize;

use super::Context;
use crate::error::{Error, ExitCode, Result};
use crate::registry::{Health, Registry};

#[derive(Serialize)]
struct Row {
    id: String,
    path: String,
    description: String,
    enabled: bool,
    registered: String,
    health: Health,
}

pub fn run(ctx: &Context) -> Result<ExitCode> {
    let path = ctx.registry().ok_or_else(|| {
        Error::usage(
            "no user config directory, so no registry",
            "set AEA_REGISTRY to a file path",
        )
    })?;
    let registry = Registry::load(path)?;
    let rows: Vec<Row> = registry
        .agents
        .iter()
        .map(|(id, e)| Row {
            id: id.clone(),
            path: e.path.display().to_string(),
            description: e.description.clone(),
            enabled: e.enabled,
            registered: e.registered.clone(),
            health: Registry::health(id, e),
        })
        .collect();
    if ctx.printer.json() {
        ctx.printer.value(&serde_json::json!({
            "registry": path,
            "agents": rows,
        }));
        return Ok(ExitCode::Success);
    }
    if rows.is_empty() {
        ctx.printer.line(format_args!(
            "no agents registered in {} (run `aea init` in a repository)",
            path.display()
        ));
    }
    for row in &rows {
        ctx.printer.line(format_args!(
            "{:<20} {:<12} {}",
            row.id,
            row.health.as_str(),
            row.path
        ));
    }
    Ok(ExitCode::Success)
}
