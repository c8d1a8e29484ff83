//! `aea monitor start|stop|status` (SPEC §10): one background process per
//! repository that rings the configured doorbells when mail arrives, and
//! again with capped backoff until it is processed.
//!
//! Liveness is a lock, not a pid: the monitor holds an exclusive lock on
//! `.aea/monitor.lock` for its whole life, so a stale `aea-monitor.pid` whose
//! number was reused by another process is recognised without ever
//! signalling it. Stopping is a request file, `.aea/monitor.stop`, which the
//! monitor sees through the same file watch it uses for mail.

use std::fs::{self, File};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::Context;
use crate::audit::{AuditEvent, Event};
use crate::cli::MonitorCommand;
use crate::config::{AgentConfig, MonitoringConfig};
use crate::doorbell::{Backoff, DAY, Transport};
use crate::error::{ConfigProblem, Error, ExitCode, Result};
use crate::fsutil;
use crate::layout::Private;
use crate::mailbox::Mailbox;
use crate::message::format_time;
use crate::transport::{self, RingEnv};
use crate::wake::{self, Schedule, Waiting};
use crate::watch::DirWatch;
use crate::words::word_enum;

/// Not `monitor.pid`: the bash AEA's `aea-monitor.sh` uses that name in the
/// same folder, and its `status` deletes a pid file whose process it does
/// not recognise.
/// Quiet time that ends a burst of arrivals unless `monitoring.debounce` says.
const DEBOUNCE: Duration = Duration::from_millis(200);

word_enum! {
    /// What `monitor start|stop|status` found or did.
    pub(super) enum MonitorState {
        Running = "running",
        NotRunning = "not_running",
        Started = "started",
        AlreadyRunning = "already_running",
        Stopped = "stopped",
        /// Asked to stop, still holding its lock after 10 seconds.
        StopTimedOut = "stop_timed_out",
    }
}

impl MonitorState {
    /// The state in words, for people (`--json` has the snake_case name).
    fn label(self) -> &'static str {
        match self {
            MonitorState::Running => "running",
            MonitorState::NotRunning => "not running",
            MonitorState::Started => "started",
            MonitorState::AlreadyRunning => "already running",
            MonitorState::Stopped => "stopped",
            MonitorState::StopTimedOut => "did not stop within 10 seconds",
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct PidFile {
    pid: u32,
    started_at: String,
}

pub fn run(command: &MonitorCommand, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    match command {
        MonitorCommand::Start => start(&mailbox, ctx),
        MonitorCommand::Stop => stop(&mailbox, ctx),
        MonitorCommand::Status => status(&mailbox, ctx),
        MonitorCommand::Run => monitor(&mailbox, ctx),
    }
}

/// The file `monitor stop` makes, watched for by the monitor.
const STOP: &[&str] = &[Private::MonitorStop.name()];

fn open_lock(mailbox: &Mailbox) -> Result<File> {
    fsutil::open_lock(&mailbox.private_file(Private::MonitorLock)?)
}

/// The pid file (`monitor.pid`) or the stop request (`monitor.stop`), in
/// the private state.
fn state_file(mailbox: &Mailbox, entry: Private) -> PathBuf {
    mailbox.layout().private(entry)
}

/// The running monitor's pid file, or `None` when no monitor holds the lock.
fn running(mailbox: &Mailbox) -> Result<Option<PidFile>> {
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

fn stale_pid(mailbox: &Mailbox) -> Option<u32> {
    let text = read_pid_file(mailbox)?;
    serde_json::from_str::<PidFile>(&text).ok().map(|p| p.pid)
}

/// `aea monitor start|stop|status --json`.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct MonitorOutput<'a> {
    pub state: MonitorState,
    /// `null` when no monitor runs.
    pub pid: Option<u32>,
    pub started_at: Option<&'a str>,
    pub note: Option<&'a str>,
}

fn report(ctx: &Context, state: MonitorState, pid: Option<&PidFile>, note: Option<String>) {
    if ctx.printer.json() {
        ctx.printer.value(&MonitorOutput {
            state,
            pid: pid.map(|p| p.pid),
            started_at: pid.map(|p| p.started_at.as_str()),
            note: note.as_deref(),
        });
    } else {
        match pid {
            Some(p) => ctx.printer.line(format_args!(
                "monitor {} (pid {}, since {})",
                state.label(),
                p.pid,
                p.started_at
            )),
            None => ctx.printer.line(format_args!("monitor {}", state.label())),
        }
        if let Some(note) = note {
            ctx.printer.line(note);
        }
    }
}

fn start(mailbox: &Mailbox, ctx: &Context) -> Result<ExitCode> {
    if let Some(pid) = running(mailbox)? {
        report(ctx, MonitorState::AlreadyRunning, Some(&pid), None);
        return Ok(ExitCode::Success);
    }
    let exe = ctx.exe.as_deref().ok_or(Error::UnknownExecutable)?;
    // The monitor runs without a terminal: say here why its config does
    // not read, and which doorbells it will leave out until trusted.
    let doorbells = match agent_config(mailbox)? {
        Some(config) => ctx.trusted(mailbox, config).transports,
        None => Vec::new(),
    };
    if doorbells.is_empty() {
        ctx.printer.warn(
            "no doorbell: the monitor will only log arrivals; add one under `monitoring: transports:` in .aea/agent-config.yaml (tmux, desktop, command, …; see \"Waking a waiting agent\" in the README), then run `aea trust`",
        );
    }
    let _ = fs::remove_file(state_file(mailbox, Private::MonitorStop));
    let mut cmd = Command::new(exe);
    cmd.arg("--repo")
        .arg(mailbox.repo())
        .args(["monitor", "run"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // Its own process group: a Ctrl-C in the starting terminal must not
    // reach it.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.spawn()
        .map_err(|e| Error::io("start the monitor from", exe, e))?;
    let within = Duration::from_secs(5);
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Some(pid) = running(mailbox)?.filter(|p| p.pid != 0) {
            report(ctx, MonitorState::Started, Some(&pid), None);
            return Ok(ExitCode::Success);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(Error::MonitorDidNotStart { within })
}

fn stop(mailbox: &Mailbox, ctx: &Context) -> Result<ExitCode> {
    let Some(pid) = running(mailbox)? else {
        let note = stale_pid(mailbox).map(|p| {
            let _ = fs::remove_file(state_file(mailbox, Private::MonitorPid));
            format!("removed a stale pid file (pid {p}); nothing was signalled")
        });
        report(ctx, MonitorState::NotRunning, None, note);
        return Ok(ExitCode::Success);
    };
    fsutil::create_exclusive(&state_file(mailbox, Private::MonitorStop), b"stop\n")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if running(mailbox)?.is_none() {
            report(ctx, MonitorState::Stopped, Some(&pid), None);
            return Ok(ExitCode::Success);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = fs::remove_file(state_file(mailbox, Private::MonitorStop));
    report(ctx, MonitorState::StopTimedOut, Some(&pid), None);
    Ok(ExitCode::Timeout)
}

fn status(mailbox: &Mailbox, ctx: &Context) -> Result<ExitCode> {
    match running(mailbox)? {
        Some(pid) => report(ctx, MonitorState::Running, Some(&pid), None),
        None => {
            let note = stale_pid(mailbox).map(|p| {
                format!(
                    "the monitor's pid file names pid {p}, but no monitor holds the lock: the file is stale"
                )
            });
            report(ctx, MonitorState::NotRunning, None, note);
        }
    }
    Ok(ExitCode::Success)
}

/// The monitor itself.
fn monitor(mailbox: &Mailbox, ctx: &Context) -> Result<ExitCode> {
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
        return Ok(ExitCode::Success);
    }
    // We hold the lock, so any pid file is stale: remove it now, or `monitor
    // start` would take it for ours before ours is written.
    let _ = fs::remove_file(state_file(mailbox, Private::MonitorPid));
    let pid = PidFile {
        pid: std::process::id(),
        started_at: format_time(ctx.rt.now()),
    };
    let (transports, backoff, debounce) = settings(mailbox, ctx)?;
    let log = |event: Event| {
        let _ = mailbox.log(&event);
    };

    // The pid file is the readiness signal `monitor start` waits for: write
    // it only once the watch is set up, so that mail sent after `start`
    // returns is seen (the loop's first look catches what came before).
    let state = mailbox.layout().state().to_path_buf();
    let watch = DirWatch::watching(&[mailbox.dir(), &state], crate::watch::Names::Mail(STOP));
    fsutil::replace_atomic(
        &state_file(mailbox, Private::MonitorPid),
        &serde_json::to_vec(&pid).expect("a pid file always serialises"),
    )?;
    log(Event::new(&ctx.rt, AuditEvent::MonitorStarted)
        .with("pid", pid.pid)
        .with(
            "transports",
            transports.iter().map(Transport::name).collect::<Vec<_>>(),
        ));

    let mut schedule = Schedule::new(backoff);
    loop {
        if state_file(mailbox, Private::MonitorStop).exists() {
            let _ = fs::remove_file(state_file(mailbox, Private::MonitorStop));
            break;
        }
        let mut waiting = waiting(mailbox, ctx);
        let arrived = schedule.observe(&waiting);
        if arrived || schedule.due(Instant::now()) {
            if arrived {
                waiting = settle(&watch, mailbox, ctx, debounce);
            }
            let refs = schedule.ring(&waiting, Instant::now());
            if !refs.is_empty() {
                ring(&transports, &refs, mailbox, ctx, &ctx.ring_env, &log);
            }
        }
        let wait = schedule
            .next_in(Instant::now())
            .unwrap_or(Duration::from_secs(3600));
        watch.wait(wait.max(Duration::from_millis(10)));
    }
    log(Event::new(&ctx.rt, AuditEvent::MonitorStopped).with("pid", pid.pid));
    let _ = fs::remove_file(state_file(mailbox, Private::MonitorPid));
    drop(lock);
    Ok(ExitCode::Success)
}

/// Mail to ring for, by the current policy (which may change while the
/// monitor runs); errors count as none.
fn waiting(mailbox: &Mailbox, ctx: &Context) -> Vec<Waiting> {
    wake::waiting(mailbox, &ctx.judge(mailbox)).unwrap_or_default()
}

/// The trusted transports (SPEC §15.1: they run programs and reach hosts),
/// the retry backoff and the debounce of `monitoring:`.
fn settings(mailbox: &Mailbox, ctx: &Context) -> Result<(Vec<Transport>, Backoff, Duration)> {
    let Some(agent_config) = agent_config(mailbox)? else {
        return Ok((Vec::new(), MonitoringConfig::default().backoff(), DEBOUNCE));
    };
    let config = agent_config.monitoring.clone().unwrap_or_default();
    let debounce = config.debounce.map_or(DEBOUNCE, |d| d.capped(DAY).std());
    Ok((
        ctx.trusted(mailbox, agent_config).transports,
        config.backoff(),
        debounce,
    ))
}

/// The repository's config; `None` when it has none (the monitor then
/// rings nothing, with the default timing). One that does not read is an
/// error, so `start` says why instead of waiting for a monitor that exits.
fn agent_config(mailbox: &Mailbox) -> Result<Option<&AgentConfig>> {
    match mailbox.config() {
        Ok(config) => Ok(Some(config)),
        Err(Error::ConfigInvalid {
            problem: ConfigProblem::Missing,
            ..
        }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Lets a burst of arrivals finish — until nothing arrived for `quiet`, or
/// at most two seconds — so it gets one doorbell.
fn settle(watch: &DirWatch, mailbox: &Mailbox, ctx: &Context, quiet: Duration) -> Vec<Waiting> {
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until && watch.wait(quiet) {}
    waiting(mailbox, ctx)
}

fn ring(
    transports: &[Transport],
    refs: &[String],
    mailbox: &Mailbox,
    ctx: &Context,
    env: &RingEnv,
    log: &dyn Fn(Event),
) {
    if transports.is_empty() {
        log(Event::new(&ctx.rt, AuditEvent::Notified)
            .with("transport", "none")
            .with("messages", refs.len()));
        return;
    }
    for transport in transports {
        let event = match transport::ring(transport, refs, mailbox.repo(), env) {
            Ok(()) => Event::new(&ctx.rt, AuditEvent::Notified).with("transport", transport.name()),
            Err(e) => Event::new(&ctx.rt, AuditEvent::NotifyFailed)
                .with("transport", transport.name())
                .with("error", crate::error::one_line(&e)),
        };
        log(event.with("messages", refs.len()));
    }
}
