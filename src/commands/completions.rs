//! `aea completions <shell>` and `aea man`: the shell completion script and
//! the man page, generated from the clap definition so they cannot drift
//! from `--help`. Both print to stdout; where to put them is the user's
//! (README "Install").

use clap::CommandFactory;

use super::Context;
use crate::cli::{Cli, CompletionsArgs};
use crate::error::ExitCode;

pub fn run(args: &CompletionsArgs, ctx: &Context) -> ExitCode {
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "aea", &mut buf);
    ctx.printer.raw(&String::from_utf8_lossy(&buf));
    ExitCode::Success
}

pub fn man(ctx: &Context) -> ExitCode {
    let mut buf = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut buf)
        .expect("writing to a Vec cannot fail");
    ctx.printer.raw(&String::from_utf8_lossy(&buf));
    ExitCode::Success
}
