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
mod trust;
mod uninstall;
mod validate;
mod watch;

use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::cli::{Cli, Command};
use crate::config::LimitsConfig;
use crate::env::Env;
use crate::error::{Error, ExitCode, Result};
use crate::identity::{self, KeyRing, Verification};
use crate::mailbox::Mailbox;
use crate::message::Message;
use crate::policy::{Decision, Explanation, Facts, Policy};
use crate::printer::Printer;
use crate::runtime::Runtime;

/// What every command gets: clock and ids, output, and where things are.
pub struct Context {
    pub rt: Runtime,
    pub printer: Printer,
    pub cwd: PathBuf,
    /// `--repo`, relative to `cwd`.
    pub repo: Option<PathBuf>,
    registry: Option<PathBuf>,
    /// The trust store (`aea trust`), in the user's config dir.
    trust_store: Option<PathBuf>,
    /// This binary, which installed hooks call.
    pub exe: Option<PathBuf>,
    /// The user's private signing keys (SPEC §15.2).
    keys_dir: Option<PathBuf>,
    /// The user's cache dir (verified signatures of earlier runs).
    cache_dir: Option<PathBuf>,
    /// The keys this command verifies mail with, shared by the mailbox and
    /// the judge so each message is verified once.
    keyring: std::cell::OnceCell<Rc<KeyRing>>,
}

impl Context {
    pub fn new(env: &Env, printer: Printer, repo: Option<PathBuf>) -> Result<Self> {
        let cwd = std::env::current_dir().map_err(|e| Error::io("read", ".", e))?;
        let registry = env
            .registry
            .clone()
            .or_else(|| env.config_dir.as_ref().map(|d| d.join("registry.toml")));
        Ok(Context {
            rt: Runtime::new(env),
            printer,
            repo: repo.map(|r| cwd.join(r)),
            cwd,
            registry,
            trust_store: env
                .config_dir
                .as_ref()
                .map(|d| d.join(crate::config_trust::FILE_NAME)),
            exe: env.exe.clone(),
            keys_dir: env.config_dir.as_ref().map(|d| d.join(identity::KEYS_DIR)),
            cache_dir: env.cache_dir.clone(),
            keyring: std::cell::OnceCell::new(),
        })
    }

    /// Where the user's private signing keys live.
    pub fn keys_dir(&self) -> Option<&Path> {
        self.keys_dir.as_deref()
    }

    /// The signing key of agent `id` on this machine.
    pub fn signing_key(&self, id: &str) -> Result<ed25519_dalek::SigningKey> {
        let dir = self.keys_dir().ok_or_else(|| {
            Error::usage(
                "no user config directory, so no signing key",
                "set HOME (or XDG_CONFIG_HOME) so aea can keep its keys",
            )
        })?;
        identity::load_key(dir, id)?.ok_or_else(|| Error::NoSigningKey {
            agent: id.to_string(),
            path: identity::key_path(dir, id),
        })
    }

    /// The key ring of the repository aea works in (loaded on first use).
    pub fn keyring(&self) -> Rc<KeyRing> {
        self.keyring_for(|| match &self.repo {
            Some(repo) => repo.join(crate::mailbox::AEA_DIR),
            None => Mailbox::discover(&self.cwd).map_or_else(
                |_| self.cwd.join(crate::mailbox::AEA_DIR),
                |m| m.dir().to_path_buf(),
            ),
        })
    }

    fn keyring_for(&self, aea_dir: impl FnOnce() -> PathBuf) -> Rc<KeyRing> {
        self.keyring
            .get_or_init(|| {
                let aea_dir = aea_dir();
                // One file per inbox, named by its path.
                let cache = self.cache_dir.as_ref().map(|dir| {
                    let tag = crate::fsutil::sha256_hex(aea_dir.as_os_str().as_encoded_bytes());
                    dir.join(format!("verified-{}", &tag[..16]))
                });
                Rc::new(KeyRing::lazy(identity::Sources {
                    registry: self.registry.clone(),
                    aea_dir,
                    keys_dir: self.keys_dir.clone(),
                    cache,
                }))
            })
            .clone()
    }

    /// The registry file, if the platform has a config directory.
    pub fn registry(&self) -> Option<&Path> {
        self.registry.as_deref()
    }

    /// The trust store file, if the platform has a config directory.
    pub fn trust_store(&self) -> Option<&Path> {
        self.trust_store.as_deref()
    }

    /// The settings of `config` that can run a program, pass an option to
    /// git or reach a host — only those the local user trusted with `aea
    /// trust` (SPEC §15.1). Says on stderr what it left out and how to
    /// trust it; call it once per command.
    pub fn trusted(
        &self,
        mailbox: &Mailbox,
        config: &crate::config::AgentConfig,
    ) -> crate::config_trust::Settings {
        match crate::config_trust::trusted_settings(
            config,
            mailbox.dir(),
            mailbox.repo(),
            self.trust_store(),
        ) {
            Ok(t) => {
                if !t.ignored.is_empty() {
                    self.printer.warn(format_args!(
                        "ignoring {} of {} until you trust them: see `aea trust --show`, then `aea trust`",
                        t.ignored.keys().join(", "),
                        mailbox.dir().join(crate::config::FILE_NAME).display()
                    ));
                }
                t.settings
            }
            Err(e) => {
                self.printer.warn(format_args!(
                    "{e}; settings that run programs or reach hosts are ignored"
                ));
                crate::config_trust::Settings::default()
            }
        }
    }

    /// The mailbox of `--repo`, or of the repository around the current directory.
    pub fn mailbox(&self) -> Result<Mailbox> {
        let mailbox = match &self.repo {
            Some(repo) => Mailbox::at(repo),
            None => Mailbox::discover(&self.cwd),
        }?
        .owned();
        let ring = self.keyring_for(|| mailbox.dir().to_path_buf());
        Ok(mailbox.verified_by(ring))
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
        Command::Agents(args) => agents::run(&args, &ctx),
        Command::Validate(args) => validate::run(&args, &ctx),
        Command::Demo(args) => demo::run(&args, &ctx),
        Command::Trust(args) => trust::run(&args, &ctx),
    }
}

/// `--timeout`-style durations as `std::time::Duration`, in humantime's
/// syntax (`250ms`, `30s`, `10m`, `2h`, `7d`, `1w`, `1h 30m`). A value
/// that does not parse or overflows is a usage error (exit 2).
pub fn parse_std_duration(text: &str, what: &str) -> Result<std::time::Duration> {
    humantime::parse_duration(text.trim()).map_err(|e| bad_duration(text, what, &e))
}

fn bad_duration(text: &str, what: &str, why: &dyn std::fmt::Display) -> Error {
    Error::usage(
        format!(
            "{what} {:?} is not a usable duration: {why}",
            crate::printer::untrusted_short(text, 40)
        ),
        "use e.g. 250ms, 30s, 10m, 2h, 7d or 1w (units may be combined: 1h 30m)",
    )
}

/// `now` moved by the duration `text` (forward when `later`), or `None`
/// when `text` is not a duration at all (the caller may read it as a time).
/// A duration that overflows or leaves the calendar is a usage error.
pub fn shift_time(
    now: chrono::DateTime<chrono::Utc>,
    text: &str,
    what: &str,
    later: bool,
) -> Result<Option<chrono::DateTime<chrono::Utc>>> {
    let std = match humantime::parse_duration(text.trim()) {
        Ok(d) => d,
        Err(humantime::DurationError::NumberOverflow) => {
            return Err(bad_duration(text, what, &"the number is too large"));
        }
        Err(_) => return Ok(None),
    };
    let shifted = chrono::Duration::from_std(std).ok().and_then(|d| {
        if later {
            now.checked_add_signed(d)
        } else {
            now.checked_sub_signed(d)
        }
    });
    shifted
        .map(Some)
        .ok_or_else(|| bad_duration(text, what, &"it reaches past the calendar's range"))
}

/// The receiver's policy plus what it needs to know beyond a message: which
/// senders are registered. Loaded once per command.
pub struct Judge {
    pub policy: Policy,
    pub agent_id: Option<String>,
    pub limits: LimitsConfig,
    keyring: Rc<KeyRing>,
    printer: Printer,
    warned: std::cell::Cell<bool>,
}

impl Judge {
    /// Loads the policy of `mailbox`. A config that cannot be read or
    /// compiled falls back to the strictest policy, never the loosest; an
    /// unreadable registry makes every sender unknown. Both say so on stderr.
    pub fn load(mailbox: &Mailbox, ctx: &Context) -> Self {
        Self::load_checked(mailbox, ctx).unwrap_or_else(|e| {
            ctx.printer.warn(format_args!(
                "{e}; every message needs approval until it is fixed"
            ));
            Self::with(Policy::strictest(), None, LimitsConfig::default(), ctx)
        })
    }

    /// Like [`Judge::load`], but a config that does not read or compile is
    /// an error: for the pre-commit gate, which must block on it.
    pub fn load_checked(mailbox: &Mailbox, ctx: &Context) -> Result<Self> {
        let path = mailbox.dir().join(crate::config::FILE_NAME);
        let checked = crate::config::Checked::compile(mailbox.config()?, &path)?;
        Ok(Self::from_checked(checked, ctx))
    }

    /// The judge of a config already checked.
    pub fn from_checked(checked: crate::config::Checked, ctx: &Context) -> Self {
        Self::with(
            checked.policy,
            checked.config.agent.id,
            checked.config.limits,
            ctx,
        )
    }

    fn with(policy: Policy, agent_id: Option<String>, limits: LimitsConfig, ctx: &Context) -> Self {
        let keyring = ctx.keyring();
        keyring.know_self(agent_id.as_deref());
        Judge {
            policy,
            agent_id,
            limits,
            keyring,
            printer: ctx.printer,
            warned: std::cell::Cell::new(false),
        }
    }

    /// Who sent `message`, as far as the receiver can tell (SPEC §15.2).
    /// The registry is read on the first call; if it cannot be, that is
    /// said once.
    pub fn verify(&self, message: &Message) -> Verification {
        let result = self.keyring.verify(message);
        if !self.warned.replace(true)
            && let Some(problem) = self.keyring.problem()
        {
            self.printer
                .warn(format_args!("{problem}; every sender counts as unknown"));
        }
        result
    }

    /// Only a sender verified against a known key (or one the registry
    /// accepts unsigned mail from) counts as known: a claimed id is a hint.
    fn facts(&self, message: &Message) -> Facts {
        Facts {
            sender_registered: self.verify(message).known_sender(),
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
    use super::{parse_std_duration, shift_time};
    use std::time::Duration;

    #[test]
    fn durations() {
        let d = |t| parse_std_duration(t, "x").ok();
        assert_eq!(d("90s"), Some(Duration::from_secs(90)));
        assert_eq!(d("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(d("2h"), Some(Duration::from_secs(7200)));
        assert_eq!(d("7d"), Some(Duration::from_secs(7 * 86400)));
        assert_eq!(d("1h 30m"), Some(Duration::from_secs(5400)));
        assert_eq!(d("h"), None);
        assert_eq!(d("5q"), None);
        assert_eq!(d("2026-01-01"), None);
        assert_eq!(d("99999999999999999999w"), None);
    }

    #[test]
    fn shifting_past_the_calendar_is_an_error_not_a_panic() {
        let now = chrono::Utc::now();
        assert!(shift_time(now, "99999999w", "x", true).is_err());
        assert!(shift_time(now, "99999999w", "x", false).is_err());
        assert!(shift_time(now, "99999999999999999999w", "x", false).is_err());
        assert_eq!(
            shift_time(now, "2026-01-01T00:00:00Z", "x", true).unwrap(),
            None
        );
        assert_eq!(
            shift_time(now, "1h", "x", true).unwrap(),
            Some(now + chrono::Duration::hours(1))
        );
    }
}
