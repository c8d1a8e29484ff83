//! The monitor (SPEC §10): one background process per repository that
//! rings the configured doorbells when mail arrives, and again with capped
//! backoff until it is processed. `aea monitor start|stop|status` starts,
//! stops and reports it; this is the process itself and its state files.
//!
//! Liveness is a lock, not a pid: the monitor holds an exclusive lock on
//! `.aea/monitor.lock` for its whole life, so a stale `aea-monitor.pid` whose
//! number was reused by another process is recognised without ever
//! signalling it. Stopping is a request file, `.aea/monitor.stop`, which the
//! monitor sees through the same file watch it uses for mail.
//!
//! Layer: harness, next to [`crate::wake`] (when to ring) and
//! [`crate::watch`] (the file watch).

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::audit::{AuditEvent, Event};
use crate::collab_turns::Turns;
use crate::config::AgentConfig;
use crate::doorbell::{Backoff, Transport};
use crate::error::{ConfigProblem, Error, Result};
use crate::fsutil;
use crate::layout::Private;
use crate::mailbox::Mailbox;
use crate::message::format_time;
use crate::runtime::Runtime;
use crate::transport::RingEnv;
use crate::wake::{Schedule, Waiting};
use crate::watch::{DirWatch, Names};

/// Not `monitor.pid`: the bash AEA's `aea-monitor.sh` uses that name in the
/// same folder, and its `status` deletes a pid file whose process it does
/// not recognise.
/// Quiet time that ends a burst of arrivals unless `monitoring.debounce` says.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// The running monitor's pid file.
#[derive(Debug, Serialize, Deserialize)]
pub struct PidFile {
    pub pid: u32,
    pub started_at: String,
}

/// The files of the private state the monitor watches for: the stop
/// request `monitor stop` makes, and the list of collaborations whose
/// folders it watches (see [`crate::collab_turns`]).
const CONTROL: &[&str] = &[Private::MonitorStop.name(), Private::Collabs.name()];

/// How often the monitor looks at the collaboration folders it watches
/// when nothing woke it: a folder that could not be watched (missing for
/// now, or replaced) is still looked at.
const LOOK_EVERY: Duration = Duration::from_secs(60);

fn open_lock(mailbox: &Mailbox) -> Result<File> {
    fsutil::open_lock(&mailbox.private_file(Private::MonitorLock)?)
}

/// The pid file (`monitor.pid`) or the stop request (`monitor.stop`), in
/// the private state.
pub fn state_file(mailbox: &Mailbox, entry: Private) -> PathBuf {
    mailbox.layout().private(entry)
}

/// The running monitor's pid file, or `None` when no monitor holds the lock.
pub fn running(mailbox: &Mailbox) -> Result<Option<PidFile>> {
    let lock = open_lock(mailbox)?;
    if lock.try_lock().is_ok() {
        drop(lock);
        return Ok(None);
    }
    let text = read_pid_file(mailbox).unwrap_or_default();
    Ok(Some(serde_json::from_str(&text).unwrap_or(PidFile {
        pid: 0,
        started_at: "just now".into(),
    })))
}

/// The pid file's text: a regular file only, capped (a FIFO put there
/// must not hang `monitor status`).
fn read_pid_file(mailbox: &Mailbox) -> Option<String> {
    let bytes = fsutil::read_state(
        &state_file(mailbox, Private::MonitorPid),
        fsutil::SMALL_STATE_LIMIT,
    )
    .ok()??;
    String::from_utf8(bytes).ok()
}

/// The pid a pid file names while no monitor holds the lock.
pub fn stale_pid(mailbox: &Mailbox) -> Option<u32> {
    let text = read_pid_file(mailbox)?;
    serde_json::from_str::<PidFile>(&text).ok().map(|p| p.pid)
}

/// The repository's config; `None` when it has none (the monitor then
/// rings nothing, with the default timing). One that does not read is an
/// error, so `start` says why instead of waiting for a monitor that exits.
pub fn agent_config(mailbox: &Mailbox) -> Result<Option<&AgentConfig>> {
    match mailbox.config() {
        Ok(config) => Ok(Some(config)),
        Err(Error::ConfigInvalid {
            problem: ConfigProblem::Missing,
            ..
        }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// How the monitor rings: the trusted transports (SPEC §15.1: they run
/// programs and reach hosts), the retry backoff and the debounce.
pub struct Settings {
    pub transports: Vec<Transport>,
    pub backoff: Backoff,
    pub debounce: Duration,
}

/// What the monitor needs of its caller.
pub struct Monitor<'a> {
    pub mailbox: &'a Mailbox,
    pub rt: &'a Runtime,
    pub ring_env: &'a RingEnv,
    /// Mail to ring for, by the current policy (which may change while the
    /// monitor runs); errors count as none.
    pub waiting: &'a dyn Fn() -> Vec<Waiting>,
    /// The collaborations to notice the agent's turn in, when it has an id.
    pub turns: Option<&'a Turns<'a>>,
}

impl Monitor<'_> {
    /// The monitor itself: runs until asked to stop, or returns at once
    /// when another monitor holds the lock. `settings` are read once the
    /// lock is held.
    pub fn run(&self, settings: impl FnOnce() -> Result<Settings>) -> Result<()> {
        let mailbox = self.mailbox;
        let lock = open_lock(mailbox)?;
        // A status check holds the lock for an instant: try a few times before
        // concluding another monitor runs.
        let mut locked = false;
        for _ in 0..20 {
            if lock.try_lock().is_ok() {
                locked = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if !locked {
            return Ok(());
        }
        // We hold the lock, so any pid file is stale: remove it now, or `monitor
        // start` would take it for ours before ours is written.
        let _ = fs::remove_file(state_file(mailbox, Private::MonitorPid));
        let pid = PidFile {
            pid: std::process::id(),
            started_at: format_time(self.rt.now()),
        };
        let Settings {
            transports,
            backoff,
            debounce,
        } = settings()?;
        let log = |event: Event| {
            let _ = mailbox.log(&event);
        };

        // The pid file is the readiness signal `monitor start` waits for: write
        // it only once the watch is set up, so that mail sent after `start`
        // returns is seen (the loop's first look catches what came before).
        let state = mailbox.layout().state().to_path_buf();
        let mut folders = self.turns.map(Turns::folders).unwrap_or_default();
        let mut watch = self.watch(&state, &folders);
        fsutil::replace_atomic(
            &state_file(mailbox, Private::MonitorPid),
            &serde_json::to_vec(&pid).expect("a pid file always serialises"),
        )?;
        log(Event::new(self.rt, AuditEvent::MonitorStarted)
            .with("pid", pid.pid)
            .with(
                "transports",
                transports.iter().map(Transport::name).collect::<Vec<_>>(),
            ));

        let mut schedule = Schedule::new(backoff);
        let stop_asked = || {
            let asked = state_file(mailbox, Private::MonitorStop).exists();
            if asked {
                let _ = fs::remove_file(state_file(mailbox, Private::MonitorStop));
            }
            asked
        };
        loop {
            if stop_asked() {
                break;
            }
            if let Some(turns) = self.turns {
                // Watch a folder first, then look: an event between the two
                // is seen either way.
                let now = turns.folders();
                if now != folders {
                    folders = now;
                    watch = self.watch(&state, &folders);
                }
                for noticed in turns.look(&folders) {
                    if let Err(error) = noticed.outcome {
                        log(Event::new(self.rt, AuditEvent::NotifyFailed)
                            .with("transport", "collab")
                            .with("folder", noticed.folder.display().to_string())
                            .with("error", error));
                    }
                }
            }
            let mut waiting = (self.waiting)();
            let arrived = schedule.observe(&waiting);
            if arrived || schedule.due(Instant::now()) {
                if arrived {
                    waiting = self.settle(&watch, debounce);
                }
                let refs = schedule.ring(&waiting, Instant::now());
                if !refs.is_empty() {
                    self.ring(&transports, &refs, &log);
                }
            }
            // A stop asked while the arrivals settled or the doorbells rang:
            // its file event was taken by that wait, so the long wait below
            // would not wake for it.
            if stop_asked() {
                break;
            }
            // A collaboration folder that changed while the arrivals settled:
            // its file event was taken by that wait too. Look again at once
            // (a folder that did not change costs a `stat`).
            if arrived && !folders.is_empty() {
                continue;
            }
            let mut wait = schedule
                .next_in(Instant::now())
                .unwrap_or(Duration::from_secs(3600));
            if !folders.is_empty() {
                wait = wait.min(LOOK_EVERY);
            }
            watch.wait(wait.max(Duration::from_millis(10)));
        }
        log(Event::new(self.rt, AuditEvent::MonitorStopped).with("pid", pid.pid));
        let _ = fs::remove_file(state_file(mailbox, Private::MonitorPid));
        drop(lock);
        Ok(())
    }

    /// The watch of the inbox, the private state's control files and the
    /// turn files of each collaboration folder.
    fn watch(&self, state: &Path, folders: &[PathBuf]) -> DirWatch {
        let mail = Names::Mail(CONTROL);
        let mut dirs: Vec<(&Path, Names)> = vec![(self.mailbox.dir(), mail), (state, mail)];
        dirs.extend(
            folders
                .iter()
                .map(|f| (f.as_path(), Names::Matching(crate::collab::turn_file))),
        );
        DirWatch::watching_each(&dirs)
    }

    /// Lets a burst of arrivals finish — until nothing arrived for `quiet`, or
    /// at most two seconds — so it gets one doorbell.
    fn settle(&self, watch: &DirWatch, quiet: Duration) -> Vec<Waiting> {
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until && watch.wait(quiet) {}
        (self.waiting)()
    }

    fn ring(&self, transports: &[Transport], refs: &[String], log: &dyn Fn(Event)) {
        if transports.is_empty() {
            log(Event::new(self.rt, AuditEvent::Notified)
                .with("transport", "none")
                .with("messages", refs.len()));
            return;
        }
        for transport in transports {
            let event =
                match crate::transport::ring(transport, refs, self.mailbox.repo(), self.ring_env) {
                    Ok(()) => Event::new(self.rt, AuditEvent::Notified)
                        .with("transport", transport.name()),
                    Err(e) => Event::new(self.rt, AuditEvent::NotifyFailed)
                        .with("transport", transport.name())
                        .with("error", crate::error::one_line(&e)),
                };
            log(event.with("messages", refs.len()));
        }
    }
}
