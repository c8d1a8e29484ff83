//! `aea monitor start|stop|status` (SPEC §10): one background process per
//! repository that rings the configured doorbells when mail arrives, and
//! again with capped backoff until it is processed. The process itself,
//! its lock and its pid file are [`crate::monitor`]'s; this starts, stops
//! and reports it, and `monitor run` hands it the trusted settings.

use std::fs;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::context::Context;
use crate::cli::MonitorCommand;
use crate::collab_turns::Turns;
use crate::config::MonitoringConfig;
use crate::doorbell::DAY;
use crate::error::{Error, ExitCode, Result};
use crate::fsutil;
use crate::layout::Private;
use crate::mailbox::Mailbox;
use crate::monitor::{
    DEBOUNCE, Monitor, PidFile, Settings, agent_config, running, stale_pid, state_file,
};
use crate::wake::{self, Waiting};
use crate::words::word_enum;

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
            // It read its config when it started.
            MonitorState::AlreadyRunning => {
                "already running (a change to its config or doorbells counts once it is stopped and started again)"
            }
            MonitorState::Stopped => "stopped",
            MonitorState::StopTimedOut => "did not stop within 10 seconds",
        }
    }
}

pub(crate) fn run(command: &MonitorCommand, ctx: &Context) -> Result<ExitCode> {
    let mailbox = ctx.mailbox()?;
    match command {
        MonitorCommand::Start => start(&mailbox, ctx),
        MonitorCommand::Stop => stop(&mailbox, ctx),
        MonitorCommand::Status => status(&mailbox, ctx),
        MonitorCommand::Run => monitor(&mailbox, ctx),
    }
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
            "no doorbell: the monitor will only log arrivals; add one under `monitoring: transports:` in .aea/agent-config.yaml (tmux, desktop, command, …; see \"Waking a waiting agent\" in aea's book, `docs/src/waking.md`), then run `aea trust`",
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
    let note = format!(
        "it is still running: `kill {}` ends it (its lock goes with it), then `aea monitor status` says so",
        pid.pid
    );
    report(ctx, MonitorState::StopTimedOut, Some(&pid), Some(note));
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

/// The monitor itself ([`crate::monitor`]), until it is asked to stop.
/// An agent with an id also has its turns in collaborations noticed
/// ([`crate::collab_turns`]), its notices signed with its key.
fn monitor(mailbox: &Mailbox, ctx: &Context) -> Result<ExitCode> {
    let look = || waiting(mailbox, ctx);
    let me = mailbox.agent_id().ok();
    let key = me.as_deref().map(|id| ctx.signing_key(id));
    let keyring = ctx.keyring();
    let pinned = |id: &str| keyring.key_for(id);
    let turns = me.as_deref().zip(key.as_ref()).map(|(id, key)| {
        let key = key.as_ref().map_err(|e| crate::error::one_line(e));
        Turns::new(mailbox, id, key, &pinned, &ctx.rt)
    });
    let monitor = Monitor {
        mailbox,
        rt: &ctx.rt,
        ring_env: &ctx.ring_env,
        waiting: &look,
        turns: turns.as_ref(),
    };
    monitor.run(|| settings(mailbox, ctx))?;
    Ok(ExitCode::Success)
}

/// Mail to ring for, by the current policy (which may change while the
/// monitor runs); errors count as none.
fn waiting(mailbox: &Mailbox, ctx: &Context) -> Vec<Waiting> {
    wake::waiting(mailbox, &ctx.judge(mailbox)).unwrap_or_default()
}

/// The trusted transports (SPEC §15.1: they run programs and reach hosts),
/// the retry backoff and the debounce of `monitoring:`.
fn settings(mailbox: &Mailbox, ctx: &Context) -> Result<Settings> {
    let Some(agent_config) = agent_config(mailbox)? else {
        return Ok(Settings {
            transports: Vec::new(),
            backoff: MonitoringConfig::default().backoff(),
            debounce: DEBOUNCE,
        });
    };
    let config = agent_config.monitoring.clone().unwrap_or_default();
    let debounce = config.debounce.map_or(DEBOUNCE, |d| d.capped(DAY).std());
    Ok(Settings {
        transports: ctx.trusted(mailbox, agent_config).transports,
        backoff: config.backoff(),
        debounce,
    })
}
