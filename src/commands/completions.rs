//! `aea completions <shell>` and `aea man`: the shell completion script and
//! the man page, generated from the clap definition so they cannot drift
//! from `--help`. Both print to stdout; where to put them is the user's
//! (README "The two commands").

use clap::CommandFactory;

use super::context::Context;
use crate::cli::{Cli, CompletionsArgs};
use crate::error::{Error, ExitCode, Result};

/// Neither is JSON: under `--json` stdout is one JSON object or nothing.
fn not_json(ctx: &Context, what: &str) -> Result<()> {
    if ctx.printer.json() {
        return Err(Error::usage(
            format!("{what} is not JSON; --json has nothing to print"),
            "leave out --json",
        ));
    }
    Ok(())
}

pub(crate) fn run(args: &CompletionsArgs, ctx: &Context) -> Result<ExitCode> {
    not_json(ctx, "a shell completion script")?;
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "aea", &mut buf);
    ctx.printer.raw(&String::from_utf8_lossy(&buf));
    Ok(ExitCode::Success)
}

pub(crate) fn man(ctx: &Context) -> Result<ExitCode> {
    not_json(ctx, "the man page")?;
    let mut buf = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut buf)
        .expect("writing to a Vec cannot fail");
    ctx.printer.raw(&String::from_utf8_lossy(&buf));
    Ok(ExitCode::Success)
}
