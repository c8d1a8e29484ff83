//! One module per subcommand, each `pub fn run(args, &Context)`. This file
//! holds the shared [`Context`] and the one exhaustive dispatch.

mod agents;
mod approve;
mod check;
pub mod demo;
mod doctor;
mod gc;
mod hooks;
mod init;
mod log;
mod monitor;
mod pending;
mod policy;
mod process;
mod quarantine;
mod reject;
mod reply;
mod review;
mod send;
mod show;
mod status;
mod sync;
mod uninstall;
mod validate;
mod watch;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::cli::{Cli, Command};
use crate::config::LimitsConfig;
use crate::env::Env;
use crate::error::{Error, ExitCode, Result};
use crate::mailbox::Mailbox;
use crate::message::Message;
use crate::policy::{Decision, Explanation, Facts, Policy};
use crate::printer::Printer;
use crate::registry::Registry;
use crate::runtime::Runtime;

/// What every command gets: clock and ids, output, and where things are.
pub struct Context {
    pub rt: Runtime,
    pub printer: Printer,
    pub cwd: PathBuf,
    /// `--repo`, relative to `cwd`.
    pub repo: Option<PathBuf>,
    registry: Option<PathBuf>,
    /// This binary, which installed hooks call.
    pub exe: Option<PathBuf>,
}

impl Context {
    pub fn new(env: &Env, printer: Printer, repo: Option<PathBuf>) -> Result<Self> {
        let cwd = std::env::current_dir().map_err(|e| Error::io("read", ".", e))?;
        let registry = env.registry.clone().or_else(|| {
            directories::ProjectDirs::from("", "", "aea")
                .map(|dirs| dirs.config_dir().join("registry.toml"))
        });
        Ok(Context {
            rt: Runtime::new(env),
            printer,
            repo: repo.map(|r| cwd.join(r)),
            cwd,
            registry,
            exe: env.exe.clone(),
        })
    }

    /// The registry file, if the platform has a config directory.
    pub fn registry(&self) -> Option<&Path> {
        self.registry.as_deref()
    }

    /// The mailbox of `--repo`, or of the repository around the current directory.
    pub fn mailbox(&self) -> Result<Mailbox> {
        match &self.repo {
            Some(repo) => Mailbox::at(repo),
            None => Mailbox::discover(&self.cwd),
        }
        .map(Mailbox::owned)
    }
}

pub fn dispatch(cli: Cli, env: &Env) -> Result<ExitCode> {
    let ctx = Context::new(env, Printer::new(cli.json, cli.quiet), cli.repo)?;
    match cli.command {
        Command::Init(args) => init::run(&args, &ctx),
        Command::Send(args) => send::run(&args, &ctx),
        Command::Check(args) => check::run(&args, &ctx),
        Command::Show(args) => show::run(&args, &ctx),
        Command::Reply(args) => reply::run(&args, &ctx),
        Command::Process(args) => process::run(&args, &ctx),
        Command::Pending => pending::run(&ctx),
        Command::Approve(args) => approve::run(&args, &ctx),
        Command::Reject(args) => reject::run(&args, &ctx),
        Command::Review => review::run(&ctx),
        Command::Policy(command) => policy::run(&command, &ctx),
        Command::Watch(args) => watch::run(&args, &ctx),
        Command::Monitor(command) => monitor::run(&command, &ctx),
        Command::Quarantine(args) => quarantine::run(&args, &ctx),
        Command::Gc(args) => gc::run(&args, &ctx),
        Command::Sync(args) => sync::run(&args, &ctx),
        Command::Status(args) => status::run(&args, &ctx),
        Command::Hooks(command) => hooks::run(&command, &ctx),
        Command::Uninstall(args) => uninstall::run(&args, &ctx),
        Command::Doctor => doctor::run(&ctx),
        Command::Log(args) => log::run(&args, &ctx),
        Command::Agents => agents::run(&ctx),
        Command::Validate(args) => validate::run(&args, &ctx),
        Command::Demo(args) => demo::run(&args, &ctx),
    }
}

/// `--timeout`-style durations as `std::time::Duration`.
pub fn parse_std_duration(text: &str, what: &str) -> Result<std::time::Duration> {
    parse_duration(text)
        .and_then(|d| d.to_std().ok())
        .ok_or_else(|| {
            Error::usage(
                format!("{what} {text:?} is not a duration"),
                "use e.g. 250ms, 30s, 10m or 2h",
            )
        })
}

/// Parses `250ms`, `30s`, `15m`, `2h`, `7d` or `1w`.
pub fn parse_duration(text: &str) -> Option<chrono::Duration> {
    let text = text.trim();
    let unit_at = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(unit_at);
    let n: i64 = number.parse().ok()?;
    match unit {
        "ms" => chrono::Duration::try_milliseconds(n),
        "s" => chrono::Duration::try_seconds(n),
        "m" | "min" => chrono::Duration::try_minutes(n),
        "h" => chrono::Duration::try_hours(n),
        "d" => chrono::Duration::try_days(n),
        "w" => chrono::Duration::try_weeks(n),
        _ => None,
    }
}

/// The receiver's policy plus what it needs to know beyond a message: which
/// senders are registered. Loaded once per command.
pub struct Judge {
    pub policy: Policy,
    pub agent_id: Option<String>,
    pub limits: LimitsConfig,
    registered: HashSet<String>,
}

impl Judge {
    /// Loads the policy of `mailbox`. A config that cannot be read or
    /// compiled falls back to the strictest policy, never the loosest; an
    /// unreadable registry makes every sender unknown. Both say so on stderr.
    pub fn load(mailbox: &Mailbox, ctx: &Context) -> Self {
        let path = mailbox.dir().join(crate::config::FILE_NAME);
        let compiled = mailbox.config().and_then(|config| {
            let id = config.agent.id.clone();
            let limits = config.limits.clone();
            Policy::from_config(config)
                .map(|policy| (policy, id, limits))
                .map_err(|detail| Error::ConfigInvalid {
                    path: path.clone(),
                    detail,
                })
        });
        let (policy, agent_id, limits) = compiled.unwrap_or_else(|e| {
            ctx.printer.warn(format_args!(
                "{e}; every message needs approval until it is fixed"
            ));
            (Policy::strictest(), None, LimitsConfig::default())
        });
        let registered = match ctx.registry().map(Registry::load).transpose() {
            Ok(registry) => registry
                .map(|r| {
                    r.agents
                        .into_iter()
                        .filter(|(_, e)| e.enabled)
                        .map(|(id, _)| id)
                        .collect()
                })
                .unwrap_or_default(),
            Err(e) => {
                ctx.printer
                    .warn(format_args!("{e}; every sender counts as unknown"));
                HashSet::new()
            }
        };
        Judge {
            policy,
            agent_id,
            limits,
            registered,
        }
    }

    fn facts(&self, message: &Message) -> Facts {
        Facts {
            sender_registered: self.registered.contains(&message.from.agent_id),
        }
    }

    pub fn decide(&self, message: &Message) -> Decision {
        self.policy.decide(message, self.facts(message))
    }

    pub fn explain(&self, message: &Message) -> Explanation {
        self.policy.explain(message, self.facts(message))
    }
}

#[cfg(test)]
mod tests {
    use super::parse_duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), chrono::Duration::try_seconds(90));
        assert_eq!(
            parse_duration("250ms"),
            chrono::Duration::try_milliseconds(250)
        );
        assert_eq!(parse_duration("2h"), chrono::Duration::try_hours(2));
        assert_eq!(parse_duration("7d"), chrono::Duration::try_days(7));
        assert_eq!(parse_duration("h"), None);
        assert_eq!(parse_duration("5y"), None);
        assert_eq!(parse_duration("2026-01-01"), None);
    }
}
