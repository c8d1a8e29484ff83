//! `aea`: AI coding agents in different repositories exchange messages
//! through files (the AEA v1.0 protocol). `run` is the whole program; the
//! modules below hold one domain idea each.

pub mod approval;
pub mod attachments;
pub mod audit;
pub mod bridge;
pub mod cli;
pub mod collab;
pub mod collab_wake;
pub mod commands;
pub mod compose;
pub mod config;
pub mod config_trust;
pub mod delivery;
pub mod duration;
pub mod env;
pub mod error;
pub mod fsutil;
pub mod hardstop;
pub mod harness;
pub mod health;
pub mod hints;
pub mod hook_gate;
pub mod hooks;
pub mod housekeeping;
pub mod identity;
pub mod judge;
pub mod keyring;
pub mod layout;
pub mod liveness;
pub mod mailbox;
pub mod message;
pub mod migrate;
pub mod monitor;
pub mod normalize;
pub mod policy;
pub mod printer;
pub mod recovery;
pub mod registry;
pub mod reminder;
pub mod repo;
pub mod route;
pub mod runtime;
pub mod secrets;
pub mod seen;
pub mod shortref;
pub mod sync;
pub mod sync_state;
pub mod templates;
pub mod tracking;
pub mod transport;
pub mod wake;
pub mod watch;
pub mod words;

use std::error::Error as _;

use error::ExitCode;

/// Runs one command and renders its error, if any, as `error:` / `caused
/// by:` / `hint:` lines on stderr (with `--json`, as one JSON object
/// there, [`hints::ErrorOutput`]). Error texts quote values from files (a
/// file name, a claim holder, serde's `unknown variant …`), so they go
/// through the printer, which escapes them, like everything else.
pub fn run(cli: cli::Cli, env: &env::Env) -> ExitCode {
    let json = cli.json;
    layout::set_user_state_dir(env.state_dir.clone());
    let result = commands::dispatch(cli, env).and_then(|code| {
        // Output lost to a full disk or a bad descriptor is a failure, not
        // success (a closed pipe is not an error: see the printer).
        match printer::output_error() {
            Some(e) => Err(error::Error::io("write", "standard output", e)),
            None => Ok(code),
        }
    });
    match result {
        Ok(code) => code,
        Err(err) => {
            if json {
                printer::Printer::default().err_value(&hints::ErrorOutput::of(&err));
            } else {
                render(&err);
            }
            hints::exit_code(&err)
        }
    }
}

fn render(err: &error::Error) {
    let printer = printer::Printer::default();
    printer.err_line(format_args!("error: {err}"));
    let mut source = err.source();
    while let Some(cause) = source {
        printer.err_line(format_args!("  caused by: {cause}"));
        source = cause.source();
    }
    if let Some(hint) = hints::hint(err) {
        printer.err_line(format_args!("hint: {hint}"));
    }
}
