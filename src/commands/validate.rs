//! `aea validate` (SPEC §3.2): checks message files (schema, limits, naming)
//! and the config of a `.aea/` folder; exit 6 when it finds problems.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::context::Context;
use crate::cli::ValidateArgs;
use crate::error::{Error, ExitCode, Result};
use crate::fsutil;
use crate::mailbox::read_message_file;
use crate::message::{self, parse_file_name};
use crate::printer::untrusted_short;

#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct Finding {
    file: String,
    problem: String,
}

#[derive(Debug, Default, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct Report {
    checked: usize,
    problems: Vec<Finding>,
    warnings: Vec<Finding>,
}

pub(crate) fn run(args: &ValidateArgs, ctx: &Context) -> Result<ExitCode> {
    let target = match &args.path {
        Some(p) => ctx.cwd.join(p),
        None => ctx.mailbox()?.dir().to_path_buf(),
    };
    let meta = fs::symlink_metadata(&target).map_err(|e| Error::io("open", &target, e))?;
    let mut report = Report::default();
    if meta.is_dir() {
        let config_path = crate::layout::config_file(&target);
        if let Some(text) = fsutil::read_optional(&config_path)? {
            report.checked += 1;
            let file = || crate::layout::Shared::Config.name().to_string();
            // The same check every command and the pre-commit gate make.
            if let Err(e) = crate::policy::Checked::parse(&text, &config_path) {
                report.problems.push(Finding {
                    file: file(),
                    problem: crate::error::one_line(&e),
                });
            }
        }
        let mut names: Vec<PathBuf> = fs::read_dir(&target)
            .map_err(|e| Error::io("list", &target, e))?
            .filter_map(std::result::Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(message::is_message_file_name)
            })
            .collect();
        names.sort();
        for path in names {
            check_file(&path, &mut report);
        }
    } else {
        check_file(&target, &mut report);
    }

    if ctx.printer.json() {
        ctx.printer.value(&report);
    } else {
        for f in &report.problems {
            ctx.printer.line(format_args!(
                "problem  {}: {}",
                f.file,
                untrusted_short(&f.problem, 600)
            ));
        }
        for f in &report.warnings {
            ctx.printer.line(format_args!(
                "warning  {}: {}",
                f.file,
                untrusted_short(&f.problem, 600)
            ));
        }
        ctx.printer.line(format_args!(
            "checked {} file{}: {} problem{}, {} warning{}",
            report.checked,
            if report.checked == 1 { "" } else { "s" },
            report.problems.len(),
            if report.problems.len() == 1 { "" } else { "s" },
            report.warnings.len(),
            if report.warnings.len() == 1 { "" } else { "s" },
        ));
    }
    Ok(if report.problems.is_empty() {
        ExitCode::Success
    } else {
        ExitCode::Attention
    })
}

fn check_file(path: &Path, report: &mut Report) {
    report.checked += 1;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut problem = |text: String| {
        report.problems.push(Finding {
            file: name.clone(),
            problem: text,
        });
    };
    let parts = parse_file_name(&name);
    if parts.is_none() {
        problem(
            "file name does not follow message-<YYYYMMDDTHHMMSSmmmZ>-from-<sender>-<rand>.json"
                .into(),
        );
    }
    let parsed = read_message_file(path, &name, message::MAX_MESSAGE_BYTES);
    match parsed {
        Err(reason) => problem(reason),
        Ok(m) => {
            if let Some(parts) = parts
                && parts.sender != m.from.agent_id
            {
                report.warnings.push(Finding {
                    file: name.clone(),
                    problem: format!(
                        "file name says sender {} but from.agent_id is {} (the JSON is the truth)",
                        parts.sender, m.from.agent_id
                    ),
                });
            }
            if m.is_legacy() {
                report.warnings.push(Finding {
                    file: name.clone(),
                    problem: format!("older protocol {}; read-compatible", m.protocol_version),
                });
            }
        }
    }
}
