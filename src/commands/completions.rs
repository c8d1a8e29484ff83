//! `aea completions <shell>` and `aea man`: the shell completion script and
//! the man page, generated from the clap definition so they cannot drift
//! from `--help`. Both print to stdout; where to put them is the user's
//! (README "The two commands").

use std::fmt::Write as _;

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
    let script = String::from_utf8_lossy(&buf);
    ctx.printer.raw(&with_agent_ids(args.shell, &script));
    Ok(ExitCode::Success)
}

/// `send --to` takes an agent id or a path: clap's script offers only
/// file names, so for bash and fish it is taught to offer the registered
/// ids (`aea agents ids`) and folders.
fn with_agent_ids(shell: clap_complete::Shell, script: &str) -> String {
    match shell {
        clap_complete::Shell::Bash => script.replacen(
            "--to)\n                    COMPREPLY=($(compgen -f \"${cur}\"))",
            "--to)\n                    COMPREPLY=($(compgen -W \"$(aea agents ids 2>/dev/null)\" -- \"${cur}\") $(compgen -d -- \"${cur}\"))",
            1,
        ),
        clap_complete::Shell::Fish => script
            .lines()
            .map(|line| {
                if line.contains("__fish_aea_using_subcommand send") && line.contains("-l to ") {
                    format!("{} -f -a \"(aea agents ids 2>/dev/null; __fish_complete_directories)\"", line.replace(" -F", ""))
                } else {
                    line.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n",
        _ => script.to_string(),
    }
}

pub(crate) fn man(ctx: &Context) -> Result<ExitCode> {
    not_json(ctx, "the man page")?;
    let mut buf = Vec::new();
    let cli = Cli::command();
    clap_mangen::Man::new(cli.clone())
        .render(&mut buf)
        .expect("writing to a Vec cannot fail");
    let mut page = String::from_utf8_lossy(&buf).into_owned();
    // One section per command, with its own options: the page otherwise
    // names the commands and no more.
    page.push_str(".SH \"COMMANDS IN DETAIL\"\n");
    for sub in cli.get_subcommands() {
        command_section(&mut page, &format!("aea {}", sub.get_name()), sub);
    }
    ctx.printer.raw(&page);
    Ok(ExitCode::Success)
}

/// The roff of `command` (named `name`) and of its own subcommands.
fn command_section(page: &mut String, name: &str, command: &clap::Command) {
    if command.is_hide_set() {
        return;
    }
    let _ = writeln!(page, ".SS \"{}\"", roff(name));
    if let Some(about) = command.get_long_about().or(command.get_about()) {
        page.push_str(&roff_text(&about.to_string()));
    }
    for arg in command.get_arguments() {
        if arg.is_hide_set() || matches!(arg.get_id().as_str(), "help" | "version") {
            continue;
        }
        let mut spelled = Vec::new();
        if let Some(short) = arg.get_short() {
            spelled.push(format!("-{short}"));
        }
        if let Some(long) = arg.get_long() {
            spelled.push(format!("--{long}"));
        }
        let value = arg.get_value_names().map(|names| {
            names
                .iter()
                .map(|n| format!("<{n}>"))
                .collect::<Vec<_>>()
                .join(" ")
        });
        let takes_value = arg.get_num_args().is_none_or(|n| n.takes_values())
            && !matches!(
                arg.get_action(),
                clap::ArgAction::SetTrue
                    | clap::ArgAction::SetFalse
                    | clap::ArgAction::Count
                    | clap::ArgAction::Help
                    | clap::ArgAction::Version
            );
        let head = match (spelled.is_empty(), value) {
            (true, Some(v)) => v,
            (true, None) => format!("<{}>", arg.get_id()),
            (false, Some(v)) if takes_value => format!("{} {v}", spelled.join(", ")),
            (false, None) if takes_value => format!(
                "{} <{}>",
                spelled.join(", "),
                arg.get_id().as_str().to_uppercase()
            ),
            (false, _) => spelled.join(", "),
        };
        let _ = write!(page, ".TP\n\\fB{}\\fR\n", roff(&head));
        if let Some(help) = arg.get_long_help().or(arg.get_help()) {
            page.push_str(&roff_text(&help.to_string()));
        }
    }
    for sub in command.get_subcommands() {
        command_section(page, &format!("{name} {}", sub.get_name()), sub);
    }
}

/// Text safe in roff: backslashes doubled, and no line starting with a
/// control character.
fn roff(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\(dq")
}

/// Paragraphs of help as roff lines.
fn roff_text(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let line = roff(line.trim_end());
        if line.starts_with('.') || line.starts_with('\'') {
            out.push_str("\\&");
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}
