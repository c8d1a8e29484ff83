//! `aea bridge` (SPEC §12): the OACP and Roo folders named in `bridges:`
//! imported as mail arrives there. The work is [`crate::bridge::live`]'s.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::context::Context;
use super::transfers::{print_completed, print_item};
use crate::bridge::live::{self, Completed};
use crate::bridge::transfer::{Imported, Status};
use crate::cli::BridgeArgs;
use crate::error::{Error, ExitCode, Result};
use crate::watch::{DirWatch, Names};

/// A pass over every bridge even without a file event: a folder deleted
/// and made again is no longer watched, and its mail must not wait for
/// ever.
const LOOK_AGAIN: Duration = Duration::from_secs(60);

/// `aea bridge --once --json`; without `--once`, one line per file.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct BridgeOutput<'a> {
    /// The folders read.
    pub folders: Vec<&'a Path>,
    pub imported: &'a [Imported],
    /// Messages processed here whose file was removed on the other side
    /// (or found gone, changed or outside the bridges).
    pub completed: &'a [Completed],
}

pub(crate) fn run(args: &BridgeArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    if mailbox.config()?.bridges.is_empty() {
        return Err(Error::usage(
            format!(
                "no bridges in {}",
                mailbox
                    .layout()
                    .shared(crate::layout::Shared::Config)
                    .display()
            ),
            "name the folders to import, e.g. `bridges: [{protocol: oacp, path: <OACP_HOME>/projects/<p>/agents/<name>}]` \
             or `[{protocol: roo, path: .roo/mailbox}]`, then run `aea trust`",
        ));
    }
    let bridges = ctx.bridges(&mailbox)?;
    if bridges.is_empty() {
        return Err(Error::usage(
            "the bridges of this repository's config are not trusted yet",
            "see what they read with `aea trust --show`, then `aea trust`",
        ));
    }
    let folders: Vec<&Path> = bridges.iter().map(|b| b.dir.as_path()).collect();
    if args.once {
        let (imported, completed) = live::pass(&mailbox, &bridges, &ctx.rt, None)?;
        if ctx.printer.json() {
            ctx.printer.value(&BridgeOutput {
                folders,
                imported: &imported,
                completed: &completed,
            });
        } else {
            for item in &imported {
                print_item(item, ctx);
            }
            for done in &completed {
                print_completed(done, ctx);
            }
        }
        return Ok(if imported.iter().any(|i| i.status == Status::Refused) {
            ExitCode::Attention
        } else {
            ExitCode::Success
        });
    }
    // Watching before the first pass: a file that arrives during it wakes
    // the next one.
    let watch = DirWatch::watching(&folders, Names::Matching(foreign_name));
    let mut told = Told::default();
    let mut seen = live::Seen::default();
    let (imported, completed) = live::pass(&mailbox, &bridges, &ctx.rt, Some(&mut seen))?;
    told.report(&imported, &completed, ctx);
    if ctx.printer.json() {
        ctx.printer.value_line(&serde_json::json!({
            "event": "waiting",
            "folders": folders,
        }));
    } else {
        ctx.printer.line(format_args!(
            "bridging {} folder{}; waiting for mail (stop with Ctrl-C)",
            folders.len(),
            if folders.len() == 1 { "" } else { "s" }
        ));
    }
    loop {
        // A file held back while it may still be written is looked at
        // again once it has settled.
        let wait = if std::mem::take(&mut seen.unsettled) {
            live::SETTLE
        } else {
            LOOK_AGAIN
        };
        watch.wait(wait);
        match live::pass(&mailbox, &bridges, &ctx.rt, Some(&mut seen)) {
            Ok((imported, completed)) => told.report(&imported, &completed, ctx),
            Err(e) => told.warn(&crate::error::one_line(&e), ctx),
        }
    }
}

/// A name any bridge may want: the watch wakes for these only, and the
/// pass decides.
#[allow(clippy::case_sensitive_file_extension_comparisons)]
fn foreign_name(name: &str) -> bool {
    !name.starts_with('.')
        && (name.ends_with(".yaml") || name.ends_with(".yml") || name.ends_with(".md"))
}

/// What a running bridge said already: files already held are not news,
/// and a refused file or a failing folder is said once.
#[derive(Default)]
struct Told {
    refused: HashSet<(PathBuf, String)>,
    warnings: HashSet<String>,
}

impl Told {
    fn report(&mut self, imported: &[Imported], completed: &[Completed], ctx: &Context) {
        for item in imported {
            let news = match item.status {
                Status::Imported => true,
                Status::Held => false,
                Status::Refused => self
                    .refused
                    .insert((item.source.clone(), item.reason.clone().unwrap_or_default())),
            };
            if !news {
                continue;
            }
            if ctx.printer.json() {
                ctx.printer.value_line(item);
            } else {
                print_item(item, ctx);
            }
        }
        for done in completed {
            if ctx.printer.json() {
                ctx.printer.value_line(done);
            } else {
                print_completed(done, ctx);
            }
        }
    }

    fn warn(&mut self, text: &str, ctx: &Context) {
        if self.warnings.insert(text.to_string()) {
            ctx.printer.warn(format_args!("{text} (retrying)"));
        }
    }
}
