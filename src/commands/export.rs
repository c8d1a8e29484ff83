//! `aea export PROTOCOL REF… --out DIR` (SPEC §12): messages of this
//! mailbox (inbox or `sent/`) as another protocol's files. The work is
//! [`crate::bridge::transfer`]'s.

use super::context::Context;
use crate::bridge::transfer;
use crate::cli::ExportArgs;
use crate::error::{ExitCode, Result};
use crate::mailbox::Held;

pub(crate) fn run(args: &ExportArgs, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    let mut messages = Vec::new();
    for reference in &args.refs {
        let entry = match mailbox
            .inbox()
            .find(reference, &[Held::Inbox])
            .map(|(e, _)| e)
        {
            Ok(entry) => entry,
            Err(_) => mailbox.inbox().find(reference, &[Held::Sent])?.0,
        };
        messages.push(entry.require_valid()?);
    }
    let written = transfer::export(args.protocol, &messages, &args.out)?;
    if ctx.printer.json() {
        ctx.printer.value(&written);
    } else {
        for item in &written {
            ctx.printer.line(format_args!(
                "exported {} to {}",
                item.message_id,
                item.path.display()
            ));
        }
    }
    Ok(ExitCode::Success)
}
