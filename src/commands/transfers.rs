//! What `import` and `bridge` share at the edge: one line per foreign
//! file and per completed bridge message. Names and reasons came from
//! someone else's folder: shortened and escaped.

use super::context::Context;
use crate::bridge::live::Completed;
use crate::bridge::transfer::Imported;
use crate::printer::untrusted_short;

/// One line per foreign file: what became of it. Its name and the reason
/// came from someone else's folder: shortened and escaped.
pub(super) fn print_item(item: &Imported, ctx: &Context) {
    let source = untrusted_short(&item.source.display().to_string(), 200);
    match (&item.message_id, &item.reason) {
        (Some(id), Some(reason)) => ctx.printer.line(format_args!(
            "{}: {source} (message {}): {}",
            item.status,
            untrusted_short(id, 130),
            untrusted_short(reason, 300)
        )),
        (None, Some(reason)) => ctx.printer.line(format_args!(
            "{}: {source}: {}",
            item.status,
            untrusted_short(reason, 300)
        )),
        (Some(id), None) => ctx.printer.line(format_args!(
            "{}: {source} (message {})",
            item.status,
            untrusted_short(id, 130)
        )),
        (None, None) => ctx.printer.line(format_args!("{}: {source}", item.status)),
    }
}

/// What became of a bridged message's file on the other side.
pub(super) fn print_completed(done: &Completed, ctx: &Context) {
    ctx.printer.line(format_args!(
        "completed on the {} side ({}): {} (message {})",
        done.protocol.label(),
        done.done,
        untrusted_short(&done.source.display().to_string(), 200),
        untrusted_short(&done.message_id, 130)
    ));
}
