//! `aea`: AI coding agents in different repositories exchange messages
//! through files (the AEA v1.0 protocol). `run` is the whole program.
//!
//! This crate is the command line, the top layer of the workspace
//! (CONTRIBUTING.md, "Layers"): arguments, commands, output, hints and exit
//! codes. The domain is in the crates below; their modules are re-exported
//! here under the names they had, for the tests and benchmarks.

pub use aea_bridges::bridge;
pub(crate) use aea_policy::approvers;
pub(crate) use aea_store::approval;
pub(crate) use aea_store::attachments;
pub(crate) use aea_store::audit;
pub mod cli;
pub use aea_bridges::collab;
pub(crate) mod commands;
pub(crate) use aea_ground::duration;
pub use aea_ground::env;
pub(crate) use aea_ground::error;
pub use aea_ground::fsutil;
pub use aea_harness::harness;
pub use aea_policy::config;
pub(crate) use aea_policy::config_trust;
pub(crate) use aea_policy::doorbell;
pub(crate) use aea_protocol::foreign;
pub use aea_protocol::hardstop;
pub(crate) use aea_store::compose;
pub(crate) use aea_store::delivery;
pub mod hints;
pub(crate) use aea_bridges::migrate;
pub(crate) use aea_git::repo;
pub use aea_git::sync;
pub use aea_ground::printer;
pub use aea_ground::runtime;
pub(crate) use aea_ground::words;
pub use aea_harness::collab_turns;
pub use aea_harness::collab_wake;
pub use aea_harness::hook_gate;
pub use aea_harness::hooks;
pub use aea_harness::monitor;
pub use aea_harness::reminder;
pub use aea_harness::templates;
pub use aea_harness::transport;
pub use aea_harness::wake;
pub(crate) use aea_harness::watch;
pub use aea_policy::keyring;
pub use aea_policy::policy;
pub use aea_policy::registry;
pub use aea_protocol::identity;
pub use aea_protocol::message;
pub use aea_protocol::secrets;
pub use aea_protocol::shortref;
pub use aea_store::health;
pub use aea_store::housekeeping;
pub(crate) use aea_store::judge;
pub use aea_store::layout;
pub use aea_store::mailbox;
pub(crate) use aea_store::processing;
pub use aea_store::recovery;
pub(crate) use aea_store::replay;
pub(crate) use aea_store::route;
pub use aea_store::seen;
pub(crate) use aea_store::served;
pub use aea_store::tracking;

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
    printer.err_line(format_args!("error: {}", hints::headline(err)));
    let mut source = err.source();
    while let Some(cause) = source {
        printer.err_line(format_args!("  caused by: {cause}"));
        source = cause.source();
    }
    if let Some(hint) = hints::hint(err) {
        printer.err_line(format_args!("hint: {hint}"));
    }
}
