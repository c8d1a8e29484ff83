//! What every command gets: the clock and ids, the printer, and where
//! things are (the repository, the registry, keys, the trust store).

use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::approvers::SignOff;
use crate::env::Env;
use crate::error::{ConfigDirUse, Error, Result};
use crate::identity;
use crate::judge::Judge;
use crate::keyring::KeyRing;
use crate::mailbox::Mailbox;
use crate::printer::Printer;
use crate::runtime::Runtime;
use crate::secrets::OwnKeys;
use crate::transport::RingEnv;

/// How long a command moves files when it takes an inbox over from an
/// older aea's layout; the next goes on. `aea init` and `aea doctor --fix`
/// take all that is left.
pub(crate) const TAKE_OVER_STEP: std::time::Duration = std::time::Duration::from_millis(500);
/// The same for a hook, which must not hold a commit or a prompt up.
pub(crate) const TAKE_OVER_HOOK_STEP: std::time::Duration = std::time::Duration::from_millis(100);

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
    /// Where temporary folders go.
    pub temp_dir: PathBuf,
    /// This binary, which installed hooks call.
    pub exe: Option<PathBuf>,
    /// Where agent-harness hooks look for aea ([`Env::aea_candidates`]).
    pub aea_candidates: Vec<PathBuf>,
    /// Where the agent harnesses keep their trust ([`crate::env::HarnessHomes`]).
    pub harness_homes: crate::env::HarnessHomes,
    /// See [`crate::env::AEA_TEST_KEEP_SEND_RECORD`].
    pub keep_send_record: bool,
    /// The user's private signing keys (SPEC §15.2).
    keys_dir: Option<PathBuf>,
    /// The user's cache dir (verified signatures of earlier runs).
    cache_dir: Option<PathBuf>,
    /// What the doorbells take from the environment (the monitor's login
    /// to OpenCode).
    pub ring_env: RingEnv,
    /// [`crate::env::Env::seen_settle`].
    seen_settle: Option<std::time::Duration>,
    /// Fixed clock of tests, if any: part of what memos depend on.
    fixed_now: Option<String>,
    /// The index a commit is made from, in a pre-commit hook.
    pub git_index_file: Option<PathBuf>,
    /// The keys this command verifies mail with, shared by the mailbox and
    /// the judge so each message is verified once.
    keyring: std::cell::OnceCell<Rc<KeyRing>>,
    /// The user's config dir (approvers, trust store, keys).
    config_dir: Option<PathBuf>,
    /// The user's approvers, read once for every repository this command
    /// opens (SPEC §19).
    signoff: Rc<SignOff>,
}

impl Context {
    pub(crate) fn new(env: &Env, printer: Printer, repo: Option<PathBuf>) -> Result<Self> {
        let cwd = env.cwd.clone().ok_or_else(|| {
            Error::io(
                "read",
                ".",
                std::io::Error::other("the current directory is gone or unreadable"),
            )
        })?;
        // A relative one names a folder under wherever a command runs: the
        // private keys would land in the repository (one `git add .` from
        // being committed), and another set in every folder.
        if let Some(dir) = env.config_dir.as_ref().filter(|d| d.is_relative()) {
            return Err(Error::usage(
                format!(
                    "{} must be an absolute path, not {}",
                    crate::env::AEA_CONFIG_DIR,
                    crate::printer::untrusted_short(&dir.to_string_lossy(), 200)
                ),
                "give the full path, as `aea demo --keep` prints it: export AEA_CONFIG_DIR=\"$PWD/cfg\"; or unset it to use your own config",
            ));
        }
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
            aea_candidates: env.aea_candidates.clone(),
            harness_homes: env.harness_homes.clone(),
            keep_send_record: env.keep_send_record,
            temp_dir: env.temp_dir.clone(),
            keys_dir: env.config_dir.as_ref().map(|d| d.join(identity::KEYS_DIR)),
            cache_dir: env.cache_dir.clone(),
            ring_env: RingEnv::new(env),
            seen_settle: env.seen_settle,
            fixed_now: env.fixed_now.map(|t| t.to_rfc3339()),
            git_index_file: env.git_index_file.clone(),
            keyring: std::cell::OnceCell::new(),
            config_dir: env.config_dir.clone(),
            signoff: Rc::new(SignOff::new(env.config_dir.clone())),
        })
    }

    /// The same context for the repository at `repo` (`pending --all`):
    /// the same user, clock and output; the keys it verifies with are its
    /// own.
    pub(crate) fn for_repo(&self, repo: PathBuf) -> Context {
        let mut other = self.with_repo(Some(repo));
        other.git_index_file = None;
        other
    }

    /// This context again, as a value of its own (a command that walks
    /// several repositories walks this one the same way).
    pub(crate) fn again(&self) -> Context {
        self.with_repo(self.repo.clone())
    }

    fn with_repo(&self, repo: Option<PathBuf>) -> Context {
        Context {
            rt: self.rt.clone(),
            printer: self.printer,
            cwd: self.cwd.clone(),
            repo,
            registry: self.registry.clone(),
            trust_store: self.trust_store.clone(),
            temp_dir: self.temp_dir.clone(),
            exe: self.exe.clone(),
            aea_candidates: self.aea_candidates.clone(),
            harness_homes: self.harness_homes.clone(),
            keep_send_record: self.keep_send_record,
            keys_dir: self.keys_dir.clone(),
            cache_dir: self.cache_dir.clone(),
            ring_env: self.ring_env.clone(),
            seen_settle: self.seen_settle,
            fixed_now: self.fixed_now.clone(),
            git_index_file: self.git_index_file.clone(),
            keyring: std::cell::OnceCell::new(),
            config_dir: self.config_dir.clone(),
            signoff: self.signoff.clone(),
        }
    }

    /// The registered repositories on this machine that are this user's: the
    /// inbox belongs to the owner of the user's key store, and the key store
    /// holds the agent's key. Another user's inbox, a repository on another
    /// machine and an agent whose key is elsewhere are left out.
    pub(crate) fn own_repositories(&self) -> Result<Vec<(String, PathBuf)>> {
        let (Some(registry), Some(keys)) = (self.registry(), self.keys_dir()) else {
            return Ok(Vec::new());
        };
        let Ok(owner) = std::fs::metadata(keys).map(|m| std::os::unix::fs::MetadataExt::uid(&m))
        else {
            return Ok(Vec::new());
        };
        let registry = crate::registry::Registry::load(registry)?;
        let mut own = Vec::new();
        for (id, entry) in &registry.agents {
            if !entry.enabled || entry.path.as_os_str().is_empty() || entry.foreign().is_some() {
                continue;
            }
            let layout = crate::layout::Layout::of(&entry.path);
            let inbox_is_ours = std::fs::symlink_metadata(layout.inbox())
                .is_ok_and(|m| m.is_dir() && std::os::unix::fs::MetadataExt::uid(&m) == owner);
            let key_is_ours = crate::identity::key_path(keys, id).is_file();
            if inbox_is_ours && key_is_ours {
                own.push((id.clone(), entry.path.clone()));
            }
        }
        Ok(own)
    }

    /// The user's config dir, if any.
    pub(crate) fn config_dir(&self) -> Option<&Path> {
        self.config_dir.as_deref()
    }

    /// The user's approvers, as every mailbox of this command verifies
    /// decisions against them.
    pub(crate) fn signoff(&self) -> Rc<SignOff> {
        self.signoff.clone()
    }

    /// Signs a decision as `--ssh-key` or ssh-agent allow, with one of the
    /// user's approvers' keys (SPEC §19).
    pub(crate) fn sign_with<'a>(
        &'a self,
        args: &'a crate::cli::SigningArgs,
    ) -> impl Fn(&[u8]) -> Result<String> + 'a {
        move |data: &[u8]| {
            let candidates = self
                .signoff
                .approvers()
                .map(|list| list.approvers.clone())
                .unwrap_or_default();
            super::signer::Signer {
                key: args.ssh_key.as_deref(),
                temp_dir: &self.temp_dir,
            }
            .sign(crate::approvers::NAMESPACE, data, &candidates)
        }
    }

    /// Where the user's private signing keys live.
    pub(crate) fn keys_dir(&self) -> Option<&Path> {
        self.keys_dir.as_deref()
    }

    /// The signing key of agent `id` on this machine.
    pub(crate) fn signing_key(&self, id: &str) -> Result<ed25519_dalek::SigningKey> {
        let dir = self.keys_dir().ok_or(Error::NoConfigDir {
            needed_for: ConfigDirUse::SigningKey,
        })?;
        identity::load_key(dir, id)?.ok_or_else(|| Error::NoSigningKey {
            agent: id.to_string(),
            path: identity::key_path(dir, id),
        })
    }

    /// Every private signing key of this user (each `<agent-id>.key` in
    /// the keys dir, not only the sending agent's), for `send` and `reply`
    /// to refuse a message that carries one. A file that holds no key is
    /// passed over; none are there without a config dir.
    pub(crate) fn own_keys(&self) -> Result<OwnKeys> {
        let Some(dir) = self.keys_dir() else {
            return Ok(OwnKeys::default());
        };
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(OwnKeys::default()),
            Err(e) => return Err(Error::io("read", dir, e)),
        };
        let mut seeds = Vec::new();
        for entry in entries {
            let name = entry.map_err(|e| Error::io("read", dir, e))?.file_name();
            let Some(agent) = name.to_str().and_then(identity::key_agent) else {
                continue;
            };
            if let Ok(Some(key)) = identity::load_key(dir, agent) {
                seeds.push(key.to_bytes());
            }
        }
        Ok(OwnKeys::new(&seeds))
    }

    /// The key that signs processed receipts for `aea sync`; without one
    /// (said on stderr) mail still syncs, but no receipts are sent.
    pub(crate) fn receipt_key(&self, id: &str) -> Option<ed25519_dalek::SigningKey> {
        self.signing_key(id)
            .map_err(|e| {
                self.printer.warn(format_args!(
                    "{}; no processed receipts are sent",
                    crate::error::one_line(&e)
                ));
            })
            .ok()
    }

    /// The key ring of the repository aea works in (loaded on first use).
    pub(crate) fn keyring(&self) -> Rc<KeyRing> {
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
                Rc::new(KeyRing::lazy(crate::keyring::Sources {
                    registry: self.registry.clone(),
                    config: crate::layout::config_file(&aea_dir),
                    keys_dir: self.keys_dir.clone(),
                    cache,
                }))
            })
            .clone()
    }

    /// What makes mail from sender `id` verify, for a person reading a
    /// line that says it is unverified (`check`, `show`; never a hook's
    /// output): the command that pins its key. `None` when no pin would
    /// change anything, and for an id that is not a valid agent id: the id
    /// is the sender's choice, and only one of letters, digits, `_` and `-`
    /// is ever put into a command line.
    pub(crate) fn pin_hint(&self, id: &str) -> Option<String> {
        use crate::keyring::Unpinned;
        crate::message::check_agent_id(id).ok()?;
        let why = self.keyring().unpinned(id)?;
        let id = crate::printer::untrusted_short(id, 64);
        Some(match why {
            Unpinned::Unknown => format!(
                "{id} is not registered: `aea whoami` in {id}'s repository prints the line that pins it (`aea agents add {id} --path REPO --key ed25519:…` on this machine, `--remote URL` instead of `--path` on another)"
            ),
            Unpinned::Disabled => format!("{id} is disabled here: `aea agents enable {id}`"),
            Unpinned::NoKey { path: Some(_) } => format!(
                "`aea agents trust {id}` pins the key {id}'s repository publishes (compare its fingerprint with `aea whoami` there)"
            ),
            Unpinned::NoKey { path: None } => format!(
                "`aea agents trust {id} --key ed25519:…` pins the key `aea whoami` prints on {id}'s machine"
            ),
        })
    }

    /// The registry file, if the platform has a config directory.
    pub(crate) fn registry(&self) -> Option<&Path> {
        self.registry.as_deref()
    }

    /// The trust store file, if the platform has a config directory.
    pub(crate) fn trust_store(&self) -> Option<&Path> {
        self.trust_store.as_deref()
    }

    /// The settings of `config` that can run a program, pass an option to
    /// git or reach a host — only those the local user trusted with `aea
    /// trust` (SPEC §15.1). Says on stderr what it left out and how to
    /// trust it; call it once per command.
    pub(crate) fn trusted(
        &self,
        mailbox: &Mailbox,
        config: &crate::config::AgentConfig,
    ) -> crate::config_trust::Settings {
        match crate::config_trust::trusted_settings(config, mailbox.repo(), self.trust_store()) {
            Ok(t) => {
                if !t.ignored.is_empty() {
                    self.printer.warn(format_args!(
                        "ignoring {} of {} until you trust them: see `aea trust --show`, then `aea trust`",
                        t.ignored.keys().join(", "),
                        mailbox
                            .layout()
                            .shared(crate::layout::Shared::Config)
                            .display()
                    ));
                }
                t.settings
            }
            Err(e) => {
                self.printer.warn(format_args!(
                    "{}; settings that run programs or reach hosts are ignored",
                    crate::error::one_line(&e)
                ));
                crate::config_trust::Settings::default()
            }
        }
    }

    /// The bridges of `mailbox`'s config in force (SPEC §12): none until
    /// the user trusted them (`aea trust`), since they read and delete
    /// files outside `.aea/`.
    pub fn bridges(&self, mailbox: &Mailbox) -> Result<Vec<crate::bridge::live::Bridge>> {
        let config = mailbox.config()?;
        if config.bridges.is_empty() {
            return Ok(Vec::new());
        }
        let id = config.require_id(&mailbox.layout().shared(crate::layout::Shared::Config))?;
        Ok(self
            .trusted(mailbox, config)
            .bridges
            .iter()
            .map(|b| crate::bridge::live::Bridge::of(b, mailbox.repo(), id))
            .collect())
    }

    /// The mailbox of the repository around `--repo` (`-C`), as around the
    /// current directory: a folder inside a repository names it, as with
    /// `git -C`. A path that is no folder is said as such.
    pub(crate) fn mailbox(&self) -> Result<Mailbox> {
        let mailbox = match &self.repo {
            Some(repo) => match std::fs::canonicalize(repo) {
                Ok(dir) if dir.is_dir() => Mailbox::discover(&dir).map_err(|e| match e {
                    // Nothing around it: that folder is the one to set up.
                    Error::NoRepository { inside, .. } if inside.is_empty() => {
                        Error::NotInitialized {
                            path: crate::fsutil::lexically_normal(repo),
                        }
                    }
                    e => e,
                }),
                _ => Mailbox::at(repo),
            },
            None => Mailbox::discover(&self.cwd),
        }?
        .owned();
        let ring = self.keyring_for(|| mailbox.dir().to_path_buf());
        let mailbox = mailbox
            .verified_by(ring)
            .signed_off_by(self.signoff.clone())
            .audited_by(Rc::new(self.rt.clone()));
        if crate::migrate::needed(&mailbox) {
            self.take_over(&mailbox, Some(TAKE_OVER_STEP))?;
        }
        Ok(mailbox)
    }

    /// Takes `mailbox` over from the layout of an older aea (see
    /// [`crate::migrate`]), moving files for at most `step` in this run;
    /// says on stderr what it did.
    pub(crate) fn take_over(
        &self,
        mailbox: &Mailbox,
        step: Option<std::time::Duration>,
    ) -> Result<crate::migrate::Record> {
        let before = crate::migrate::record(mailbox).unwrap_or_default();
        let judge = self.judge(mailbox);
        let gated = |m: &crate::message::Message| judge.decide(m).action.awaits_approval();
        let own_key = mailbox
            .agent_id()
            .ok()
            .and_then(|id| crate::identity::load_key(self.keys_dir.as_deref()?, &id).ok()?)
            .map(|k| k.verifying_key());
        let record = crate::migrate::run(
            mailbox,
            &crate::migrate::Context {
                gated: &gated,
                own_key,
                until: step.map(|s| std::time::Instant::now() + s),
            },
        )?;
        if record.found() > before.found() {
            self.printer.warn(format_args!(
                "moved this inbox's state out of the work tree into {}{}; `aea doctor` names what an older aea left in .aea/",
                mailbox.layout().state().display(),
                if record.done { "" } else { " (more next time)" }
            ));
        }
        Ok(record)
    }

    /// What aea remembers of `mailbox` ([`crate::seen`]): `None` outside
    /// the receiver's own inbox or without a cache dir for the key.
    pub fn memos(&self, mailbox: &Mailbox) -> Option<crate::seen::Memos> {
        let cache = self.cache_dir.as_deref()?;
        let seen = mailbox.seen_dir()?;
        // Where the registry, trust store and keys are changes what a
        // report says (who is verified, which settings count), and a
        // rebuilt aea may work it out differently.
        let binary = self.exe.as_deref().and_then(crate::seen::Stamp::of);
        let context = format!(
            "{} {binary:?}\n{:?}\n{:?}\n{:?}\n{:?}",
            env!("CARGO_PKG_VERSION"),
            self.registry,
            self.trust_store,
            self.keys_dir,
            self.fixed_now
        );
        crate::seen::Memos::open(
            mailbox.dir(),
            seen,
            cache,
            &context,
            self.seen_settle.unwrap_or(crate::seen::SETTLE),
        )
    }

    /// Stamps the files outside the inbox that a report is worked out
    /// from: the registry (who is known, where they live), the trust store,
    /// the user's keys, and the approver list (which decisions count).
    pub(crate) fn watch_identity(&self, watched: &mut crate::seen::Watched) {
        for path in [&self.registry, &self.trust_store, &self.keys_dir]
            .into_iter()
            .flatten()
        {
            watched.add(path.clone());
        }
        if let Some(dir) = &self.config_dir {
            let approvers = dir.join(crate::approvers::DIR);
            watched.add(approvers.join(crate::approvers::CHANGES));
            watched.add(approvers);
        }
    }

    /// The receiver's judge for `mailbox`: its policy, falling back to the
    /// strictest one (said on stderr) when the config does not read.
    pub fn judge(&self, mailbox: &Mailbox) -> Judge {
        Judge::load(mailbox, self.keyring(), self.warnings())
    }

    /// Where domain code sends what it has to say on stderr.
    pub fn warnings(&self) -> crate::judge::Warn {
        let printer = self.printer;
        Rc::new(move |text: &str| printer.warn(text))
    }

    /// Marks processed the wake-ups in `mailbox`'s inbox of the
    /// collaborations that have ended (of the one in `only`, when given;
    /// [`crate::collab_wake::retire_ended`] says which mail counts) and
    /// says on stderr how many, unless `quiet` (a hook prints nothing but
    /// its reminder). A failure never stops the command that asked: the
    /// mail stays waiting, as it would have without this. Returns how many
    /// were marked.
    pub(crate) fn retire_ended_collabs(
        &self,
        mailbox: &Mailbox,
        only: Option<&Path>,
        quiet: bool,
    ) -> usize {
        let Ok(me) = mailbox.agent_id() else {
            return 0;
        };
        let warn: crate::judge::Warn = if quiet {
            Rc::new(|_: &str| {})
        } else {
            self.warnings()
        };
        let judge = Judge::load(mailbox, self.keyring(), warn);
        let done = crate::collab_wake::retire_ended(mailbox, &judge, &me, only, &self.rt);
        let done = match done {
            Ok(done) => done,
            Err(e) => {
                if !quiet {
                    self.printer.warn(format_args!(
                        "could not look for wake-ups of ended collaborations: {}",
                        crate::error::one_line(&e)
                    ));
                }
                return 0;
            }
        };
        if !quiet {
            for (file, why) in &done.failed {
                self.printer.warn(format_args!(
                    "a wake-up of an ended collaboration was left waiting ({}): {}",
                    crate::shortref::of(file),
                    crate::printer::untrusted_short(why, 300)
                ));
            }
            if !done.retired.is_empty() {
                self.printer.err_line(format_args!(
                    "marked {} wake-up(s) of ended collaborations processed (`aea log` records them)",
                    done.retired.len()
                ));
            }
        }
        done.retired.len()
    }
}

/// The file in a demo's folder that names it a demo.
pub(crate) const DEMO_MARKER: &str = ".aea-demo";

/// The config dir of the demo whose repository is `repo`, if it is one.
pub(crate) fn demo_config_of(repo: &std::path::Path) -> Option<PathBuf> {
    let root = repo.parent()?;
    root.join(DEMO_MARKER)
        .is_file()
        .then(|| root.join("config"))
}
