//! One module per subcommand, each `pub fn run(args, &Context)`, and the one
//! exhaustive dispatch. What several commands share at the edge lives in
//! `context` (where things are, output) and `content` (message flags into a
//! draft, delivery results into output); the domain is outside `commands/`.

mod agents;
mod approve;
mod approvers;
mod attachment;
mod bridge;
mod check;
mod collab;
mod completions;
mod content;
mod context;
pub(crate) mod demo;
mod doctor;
mod export;
mod frame;
mod gc;
mod hooks;
mod import;
mod init;
mod listing;
mod log;
mod mcp;
mod monitor;
mod pending;
mod policy;
mod process;
mod quarantine;
mod reject;
mod reply;
mod review;
#[cfg(test)]
mod schemas;
mod send;
mod sent;
mod show;
mod signer;
mod status;
mod sync;
mod thread;
mod transfers;
mod trust;
mod uninstall;
mod validate;
mod verdict;
mod watch;
mod whoami;

use crate::cli::{Cli, Command};
use crate::env::Env;
use crate::error::{ExitCode, Result};
use crate::printer::Printer;

pub(crate) use context::Context;

pub fn dispatch(cli: Cli, env: &Env) -> Result<ExitCode> {
    let ctx = Context::new(env, Printer::new(cli.json, cli.quiet), cli.repo)?;
    match cli.command {
        Command::Init(args) => init::run(&args, &ctx),
        Command::Send(args) => send::run(&args, &ctx),
        Command::Check(args) => check::run(&args, &ctx),
        Command::Show(args) => show::run(&args, &ctx),
        Command::Attachment(args) => attachment::run(&args, &ctx),
        Command::Reply(args) => reply::run(&args, &ctx),
        Command::Process(args) => process::run(&args, &ctx),
        Command::Pending(args) => pending::run(&args, &ctx),
        Command::Approve(args) => approve::run(&args, &ctx),
        Command::Reject(args) => reject::run(&args, &ctx),
        Command::Review(args) => review::run(&args, &ctx),
        Command::Approvers(command) => approvers::run(&command, &ctx),
        Command::Policy(command) => policy::run(&command, &ctx),
        Command::Watch(args) => watch::run(&args, &ctx),
        Command::Monitor(command) => monitor::run(&command, &ctx),
        Command::Quarantine(args) => quarantine::run(&args, &ctx),
        Command::Gc(args) => gc::run(&args, &ctx),
        Command::Sync(args) => sync::run(&args, &ctx),
        Command::Status(args) => status::run(&args, &ctx),
        Command::Sent => sent::run(&ctx),
        Command::Thread(args) => thread::run(&args, &ctx),
        Command::Hooks(command) => hooks::run(&command, &ctx),
        Command::Uninstall(args) => uninstall::run(&args, &ctx),
        Command::Doctor(args) => doctor::run(&args, &ctx),
        Command::Log(args) => log::run(&args, &ctx),
        Command::Agents(args) => agents::run(&args, &ctx),
        Command::Whoami => whoami::run(&ctx),
        Command::Validate(args) => validate::run(&args, &ctx),
        Command::Demo(args) => demo::run(&args, &ctx),
        Command::Trust(args) => trust::run(&args, &ctx),
        Command::Import(args) => import::run(&args, &ctx),
        Command::Bridge(args) => bridge::run(&args, &ctx),
        Command::Export(args) => export::run(&args, &ctx),
        Command::Collab(command) => collab::run(&command, &ctx),
        Command::Completions(args) => completions::run(&args, &ctx),
        Command::Man => completions::man(&ctx),
        // The server runs the other commands: through this dispatch,
        // handed over, like the command line.
        Command::Mcp => mcp::run(&ctx, env, dispatch),
    }
}
