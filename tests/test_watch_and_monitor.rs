//! Waking agents (SPEC §10): `aea watch`, the monitor and its transports,
//! against real processes, a real tmux server and a real HTTP listener.

use crate::common::*;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `aea watch` and waits for it to say on stderr that it is
/// listening: from then on, mail must wake it. The returned lines keep its
/// stderr drained.
fn spawn_watch(env: &TestEnv, repo: &Path, args: &[&str]) -> (Child, Lines) {
    let mut child = env
        .cmd(repo)
        .arg("watch")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = Lines::read(child.stderr.take().unwrap());
    let ready = stderr.wait_for("ready line from aea watch", Duration::from_secs(10), |l| {
        l.starts_with("aea watch: listening for mail in ")
    });
    assert!(
        ready.ends_with(&repo.join(".aea").display().to_string()),
        "{ready}"
    );
    (child, stderr)
}

/// Waits for `child` to exit, at most `limit`.
fn wait_exit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

fn child_stdout(child: &mut Child) -> String {
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    out
}

#[test]
fn watch_wakes_on_delivery_and_ignores_temp_files_and_markers() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let old = env.question(&api, "web", "already here");
    let (mut watch, _stderr) = spawn_watch(&env, &web, &["--timeout", "20s"]);
    // Staging files, markers and log lines are not mail.
    std::fs::write(web.join(".aea/.tmp/.deliver.x.tmp"), "{").unwrap();
    let name = inbox_files(&web).remove(0);
    std::fs::write(web.join(".aea/.processed").join(&name), "").unwrap();
    std::fs::write(web.join(".aea/notes.json"), "{}").unwrap();
    // Not a wait for readiness (the watch said it listens): a window in
    // which a watch that took these for mail would exit. One that woke
    // later still fails below, where the wake-up must name only new mail.
    std::thread::sleep(Duration::from_millis(400));
    assert!(
        watch.try_wait().unwrap().is_none(),
        "woke for something that is not new mail"
    );

    let id = env.question(&api, "web", "new one");
    let status = wait_exit(&mut watch, Duration::from_secs(5)).expect("watch woke up");
    assert!(status.success());
    let line = child_stdout(&mut watch);
    let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(v["event"], "new_mail");
    assert_eq!(v["refs"], serde_json::json!([env.short_ref(&web, &id)]));
    assert!(!line.contains(&id), "aea's reference, not the sender's id");
    assert!(!line.contains("new one"), "no message text");
    assert!(!line.contains(&old));
}

/// A harness waits for a background `aea watch` to exit and reads its
/// output to the end. The watch hands its inotify descriptor
/// to a holder process before its wake-up line, so that the kernel's
/// teardown of it does not delay the exit: that holder must hold none of
/// the harness's pipes and be gone soon after the watch, reaped, not left
/// as a zombie. The watch gets a process group of its own, which the
/// holder inherits, so that anything it left behind is found by group.
#[test]
fn watch_exits_after_its_line_and_leaves_no_process_or_pipe_behind() {
    use std::os::unix::process::CommandExt as _;

    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let mut watch = env
        .cmd(&web)
        .args(["watch", "--timeout", "20s"])
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let group = watch.id();
    let mut stdout = Lines::read(watch.stdout.take().unwrap());
    let mut stderr = Lines::read(watch.stderr.take().unwrap());
    stderr.wait_for("ready line from aea watch", Duration::from_secs(10), |l| {
        l.starts_with("aea watch: listening for mail in ")
    });

    // From another process, as a sending agent would.
    let id = env.question(&api, "web", "wake up");
    let line = stdout.wait_for("the wake-up line", Duration::from_secs(10), |l| {
        l.contains("new_mail")
    });
    assert!(line.contains(&env.short_ref(&web, &id)), "{line}");
    let status = wait_exit(&mut watch, Duration::from_secs(5)).expect("watch exits after its line");
    assert!(status.success(), "{status}");
    stdout.wait_closed("the watch's stdout", Duration::from_secs(5));
    stderr.wait_closed("the watch's stderr", Duration::from_secs(5));

    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = processes_in_group(group);
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still in the watch's process group 10 s after it exited: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The processes (zombies included) whose process group is `group`, as
/// `pid state` pairs read from /proc.
fn processes_in_group(group: u32) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        // Processes come and go while we look: one gone is not in the group.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp …`; comm may hold spaces and parens.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2) == Some(&group.to_string().as_str()) {
            found.push(format!(
                "{} {}",
                entry.file_name().to_string_lossy(),
                fields[0]
            ));
        }
    }
    found
}

#[test]
fn watch_times_out_with_4_and_pending_returns_at_once() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let out = env.run(&web, &["watch", "--timeout", "300ms"]);
    assert_eq!(code(&out), 4);
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["event"], "timeout");
    let id = env.question(&api, "web", "waiting");
    let started = Instant::now();
    let out = env.run(&web, &["watch", "--pending", "--timeout", "10s"]);
    assert!(out.status.success());
    assert!(started.elapsed() < Duration::from_secs(5));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(
        (v["event"].as_str(), v["refs"][0].as_str()),
        (Some("pending"), Some(env.short_ref(&web, &id).as_str()))
    );
    // Without --pending, mail already there does not count.
    assert_eq!(code(&env.run(&web, &["watch", "--timeout", "300ms"])), 4);
    assert_eq!(code(&env.run(&web, &["watch", "--timeout", "soon"])), 2);
}

/// What a watch that exited printed, parsed.
fn watch_line(watch: &mut Child) -> serde_json::Value {
    let line = child_stdout(watch);
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("{e}: {line:?}"))
}

/// The last time `path` was read, to the nanosecond.
fn read_at(path: &Path) -> (i64, i64) {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(path).unwrap();
    (meta.atime(), meta.atime_nsec())
}

/// Sets the time `path` was last read to two days ago, before its last
/// change: the file system then records the next read (under `relatime`,
/// Linux's default, as under `strictatime`).
fn unread(path: &Path) {
    let long_ago = std::time::SystemTime::now() - Duration::from_secs(2 * 24 * 3600);
    std::fs::File::open(path)
        .unwrap()
        .set_times(std::fs::FileTimes::new().set_accessed(long_ago))
        .unwrap();
}

/// A wake-up reads the new file, not the mail that waited before it: with
/// much mail waiting, reading it all again cost every wake-up a read, a
/// signature check and a policy decision per waiting message. The
/// file system's record of the last read (atime) shows what was read. The
/// reference and the count are those `aea check` gives.
#[test]
fn a_watch_wake_up_reads_only_the_new_mail() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let probe = env.path().join("probe");
    std::fs::write(&probe, "x").unwrap();
    unread(&probe);
    let before = read_at(&probe);
    std::fs::read(&probe).unwrap();
    assert_ne!(
        read_at(&probe),
        before,
        "this test needs a file system that records reads (relatime, not noatime)"
    );

    let old: Vec<String> = (0..5)
        .map(|i| env.question(&api, "web", &format!("waiting {i}")))
        .collect();
    let (mut watch, _stderr) = spawn_watch(&env, &web, &["--timeout", "30s"]);
    let waiting: Vec<PathBuf> = inbox_files(&web)
        .iter()
        .map(|n| web.join(".aea").join(n))
        .collect();
    assert_eq!(waiting.len(), old.len());
    for path in &waiting {
        unread(path);
    }
    let last_read: Vec<_> = waiting.iter().map(|p| read_at(p)).collect();

    let id = env.question(&api, "web", "new one");
    let status = wait_exit(&mut watch, Duration::from_secs(10)).expect("watch woke up");
    assert!(status.success());
    let v = watch_line(&mut watch);
    for (path, at) in waiting.iter().zip(&last_read) {
        assert_eq!(read_at(path), *at, "the wake-up read {}", path.display());
    }
    assert_eq!(v["event"], "new_mail");
    assert_eq!(v["refs"], serde_json::json!([env.short_ref(&web, &id)]));
    assert_eq!(
        (v["new"].as_u64(), v["unprocessed"].as_u64()),
        (Some(1), Some(6))
    );
}

/// Mail opened and written in the inbox (not renamed into it) wakes the
/// watch once it is complete, however it was read while still being
/// written: its creation and its close are both reported.
#[test]
fn mail_written_in_place_wakes_the_watch() {
    use std::io::Write as _;

    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.question(&api, "web", "written in place");
    let name = file_of(&web, &id);
    let bytes = std::fs::read(web.join(".aea").join(&name)).unwrap();
    std::fs::remove_file(web.join(".aea").join(&name)).unwrap();

    let (mut watch, _stderr) = spawn_watch(&env, &web, &["--timeout", "30s"]);
    let mut file = std::fs::File::create(web.join(".aea").join(&name)).unwrap();
    let (head, tail) = bytes.split_at(bytes.len() / 2);
    file.write_all(head).unwrap();
    file.flush().unwrap();
    // Not a wait for readiness: a window in which the watch reads the
    // half-written file (it must not take it for mail, nor forget it).
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        watch.try_wait().unwrap().is_none(),
        "woke for half a message"
    );
    file.write_all(tail).unwrap();
    drop(file);
    let status = wait_exit(&mut watch, Duration::from_secs(10)).expect("watch woke up");
    assert!(status.success());
    let v = watch_line(&mut watch);
    assert_eq!(v["event"], "new_mail");
    assert_eq!(v["refs"], serde_json::json!([env.short_ref(&web, &id)]));
}

/// Files that arrive but are no mail to wake for leave the watch waiting
/// until its timeout: a file that is not a valid message, a processed
/// message put back (under its name and under another), a copy of mail
/// that waits, the agent's own copy of mail it sent, mail from a sender
/// the policy rejects, and a staging file in `.aea/.tmp/`.
#[test]
fn what_is_not_new_mail_does_not_end_the_watch() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let ops = env.repo("ops");
    let web = env.repo("web");
    let config = web.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("deny_senders: []", "deny_senders: [ops]");
    std::fs::write(&config, text).unwrap();
    let inbox = web.join(".aea");

    let processed = env.question(&api, "web", "answered already");
    let processed_file = file_of(&web, &processed);
    env.ok(&web, &["process", &processed, "--outcome", "done"]);
    let processed_bytes =
        std::fs::read(env.state(&web).join("processed").join(&processed_file)).unwrap();
    let waits = env.question(&api, "web", "waits");
    let waits_file = file_of(&web, &waits);
    let waits_bytes = std::fs::read(inbox.join(&waits_file)).unwrap();
    let sent = env.question(&web, "api", "from web");
    let own_copy = std::fs::read(api.join(".aea").join(file_of(&api, &sent))).unwrap();

    let (mut watch, _stderr) = spawn_watch(&env, &web, &["--timeout", "4s"]);
    std::fs::write(
        inbox.join("message-20260101T000000000Z-from-api-00000001.json"),
        "{ not json",
    )
    .unwrap();
    std::fs::write(inbox.join(&processed_file), &processed_bytes).unwrap();
    std::fs::write(
        inbox.join("message-20200101T000000000Z-from-api-00000002.json"),
        &processed_bytes,
    )
    .unwrap();
    std::fs::write(
        inbox.join("message-20200101T000000000Z-from-api-00000003.json"),
        &waits_bytes,
    )
    .unwrap();
    std::fs::write(
        inbox.join("message-20260101T000000000Z-from-web-00000004.json"),
        &own_copy,
    )
    .unwrap();
    env.question(&ops, "web", "from a rejected sender");
    std::fs::write(
        inbox.join(".tmp/message-20260101T000000000Z-from-api-00000005.json"),
        &waits_bytes,
    )
    .unwrap();

    let status = wait_exit(&mut watch, Duration::from_secs(20)).expect("watch timed out");
    let v = watch_line(&mut watch);
    assert_eq!(status.code(), Some(4), "{v}");
    assert_eq!(v["event"], "timeout");
    assert_eq!(v["unprocessed"], 1, "{v}");
}

/// Stops (`true`) or continues process `pid`, and waits until it is
/// stopped or running.
fn set_stopped(pid: u32, stopped: bool) {
    let signal = if stopped { "-STOP" } else { "-CONT" };
    let sent = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill {signal} {pid}");
    let state = || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        stat[stat.rfind(')').unwrap() + 1..]
            .trim_start()
            .starts_with('T')
    };
    let until = Instant::now() + Duration::from_secs(10);
    while state() != stopped {
        assert!(Instant::now() < until, "the watch did not stop or go on");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Fifty messages that arrive while the watch cannot run (stopped, as a
/// loaded machine may keep it) end it once, and every one of them is
/// counted and referenced as `aea check` references it.
#[test]
fn a_burst_of_50_ends_the_watch_once_with_all_of_it_counted() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.question(&api, "web", "already here");
    let (mut watch, _stderr) = spawn_watch(&env, &web, &["--timeout", "60s"]);
    set_stopped(watch.id(), true);
    let ids: Vec<String> = (0..50)
        .map(|i| env.question(&api, "web", &format!("burst {i}")))
        .collect();
    set_stopped(watch.id(), false);
    let status = wait_exit(&mut watch, Duration::from_secs(20)).expect("watch woke up");
    assert!(status.success());
    let v = watch_line(&mut watch);
    assert_eq!(v["event"], "new_mail");
    assert_eq!(
        (v["new"].as_u64(), v["unprocessed"].as_u64()),
        (Some(50), Some(51))
    );
    let check = env.json(&web, &["check", "--all"]);
    let mut expected: Vec<&str> = check["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| ids.iter().any(|id| m["id"] == id.as_str()))
        .map(|m| m["ref"].as_str().unwrap())
        .collect();
    let mut refs: Vec<&str> = v["refs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    expected.sort_unstable();
    refs.sort_unstable();
    assert_eq!(refs, expected);
}

/// Names a sender can plant in a shared inbox: a symlink to a FIFO, a
/// symlink to /dev/zero, a FIFO, a folder, all named like messages. The
/// watch reads each without following a link or blocking on a pipe, and
/// the mail after them still wakes it, named alone.
#[test]
fn planted_fifos_links_and_folders_neither_hang_nor_crash_the_watch() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let inbox = web.join(".aea");
    let fifo = env.path().join("fifo");
    let mkfifo = |path: &Path| {
        let status = Command::new("mkfifo").arg(path).status().unwrap();
        assert!(status.success(), "mkfifo {}", path.display());
    };
    mkfifo(&fifo);
    let (mut watch, _stderr) = spawn_watch(&env, &web, &["--timeout", "30s"]);
    let planted = |n: u32| inbox.join(format!("message-20260101T000000000Z-from-api-{n:08x}.json"));
    std::os::unix::fs::symlink(&fifo, planted(1)).unwrap();
    std::os::unix::fs::symlink("/dev/zero", planted(2)).unwrap();
    mkfifo(&planted(3));
    std::fs::create_dir(planted(4)).unwrap();

    let id = env.question(&api, "web", "after the traps");
    let status = wait_exit(&mut watch, Duration::from_secs(10)).expect("watch woke up");
    assert!(status.success(), "{status}");
    let v = watch_line(&mut watch);
    assert_eq!(v["event"], "new_mail");
    assert_eq!(v["refs"], serde_json::json!([env.short_ref(&web, &id)]));
}

/// Adds a `monitoring:` section and trusts it: transports run programs, so
/// they ring only once the user ran `aea trust`.
fn add_monitoring(env: &TestEnv, repo: &Path, yaml: &str) {
    let path = repo.join(".aea/agent-config.yaml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("\nmonitoring:\n");
    text.push_str(yaml);
    std::fs::write(&path, text).unwrap();
    env.ok(repo, &["trust"]);
}

/// A script that appends `<count> <ids>` per doorbell to `log`.
fn recorder(env: &TestEnv, log: &Path) -> PathBuf {
    let script = env.path().join("ring.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$AEA_MESSAGE_COUNT $AEA_MESSAGE_REFS\" >> '{}'\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    script
}

fn rings(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Stops the monitor when a test ends, even by panic.
struct Monitor<'a> {
    env: &'a TestEnv,
    repo: PathBuf,
    /// What `monitor start --json` printed.
    started: serde_json::Value,
}

impl<'a> Monitor<'a> {
    /// Starts the monitor. `start` returns once the monitor wrote its pid
    /// file, which it does only after its watch is set up: mail sent from
    /// then on must ring, no sleep needed.
    fn start(env: &'a TestEnv, repo: &Path) -> Self {
        Self::start_with(env, repo, &[])
    }

    /// Starts the monitor with `vars` added to its sealed environment.
    fn start_with(env: &'a TestEnv, repo: &Path, vars: &[(&str, &str)]) -> Self {
        let out = env
            .cmd(repo)
            .args(["--json", "monitor", "start"])
            .envs(vars.iter().copied())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(v["state"], "started", "{v}");
        Monitor {
            env,
            repo: repo.to_path_buf(),
            started: v,
        }
    }
}

impl Drop for Monitor<'_> {
    fn drop(&mut self) {
        let _ = self.env.run(&self.repo, &["monitor", "stop"]);
    }
}

#[test]
fn monitor_start_stop_status_and_double_start() {
    let env = TestEnv::new();
    let web = env.repo("web");
    assert_eq!(
        env.json(&web, &["monitor", "status"])["state"],
        "not_running"
    );
    assert_eq!(
        env.json(&web, &["monitor", "stop"])["state"],
        "not_running",
        "harmless"
    );
    let monitor = Monitor::start(&env, &web);
    let first = env.json(&web, &["monitor", "status"]);
    assert_eq!(first["state"], "running");
    let again = env.json(&web, &["monitor", "start"]);
    assert_eq!(again["state"], "already_running");
    assert_eq!(again["pid"], first["pid"], "one monitor");
    let said = env.ok(&web, &["monitor", "start"]);
    assert!(said.contains("stopped and started again"), "{said}");
    let stopped = env.json(&web, &["monitor", "stop"]);
    assert_eq!(stopped["state"], "stopped");
    assert_eq!(
        env.json(&web, &["monitor", "status"])["state"],
        "not_running"
    );
    drop(monitor);
    let log = env.ok(&web, &["--json", "log"]);
    assert!(log.contains("monitor_started") && log.contains("monitor_stopped"));
}

/// The bash AEA's `aea-monitor.sh status` deletes `.aea/monitor.pid` when
/// it does not see its own process there; aea's monitor keeps its pid in
/// its private state, so that costs it nothing.
#[test]
fn the_bash_monitors_pid_file_is_not_ours() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let _monitor = Monitor::start(&env, &web);
    assert!(env.state(&web).join("monitor.pid").is_file());
    assert!(!web.join(".aea/monitor.pid").exists());
    assert!(!web.join(".aea/aea-monitor.pid").exists());
    std::fs::write(web.join(".aea/monitor.pid"), "12345\n").unwrap();
    std::fs::remove_file(web.join(".aea/monitor.pid")).unwrap();
    let status = env.json(&web, &["monitor", "status"]);
    assert_eq!(status["state"], "running");
    assert!(status["pid"].is_number(), "{status}");
}

#[test]
fn a_stale_pid_file_is_recognised_without_signalling_the_pid() {
    let env = TestEnv::new();
    let web = env.repo("web");
    // A live, unrelated process whose pid the stale file names.
    let mut bystander = Command::new("sleep").arg("30").spawn().unwrap();
    let bystander_pid = bystander.id();
    let pid_file = env.state(&web).join("monitor.pid");
    let stale = format!(r#"{{"pid":{bystander_pid},"started_at":"2026-01-01T00:00:00.000Z"}}"#);
    let plant_stale_pid_file = || std::fs::write(&pid_file, &stale).unwrap();

    // Where an older aea kept it, a pid file is never read: nothing runs,
    // and stop signals nothing.
    std::fs::write(web.join(".aea/aea-monitor.pid"), &stale).unwrap();
    let status = env.json(&web, &["monitor", "status"]);
    assert_eq!(status["state"], "not_running", "{status}");
    assert!(status["pid"].is_null(), "{status}");
    let stop = env.json(&web, &["monitor", "stop"]);
    assert_eq!(stop["state"], "not_running", "{stop}");
    assert!(
        bystander.try_wait().unwrap().is_none(),
        "the bystander is alive"
    );

    plant_stale_pid_file();
    let status = env.json(&web, &["monitor", "status"]);
    assert_eq!(status["state"], "not_running");
    assert!(status["note"].as_str().unwrap().contains("stale"));
    let stop = env.json(&web, &["monitor", "stop"]);
    assert_eq!(stop["state"], "not_running");
    assert!(
        stop["note"]
            .as_str()
            .unwrap()
            .contains("nothing was signalled")
    );
    assert!(
        bystander.try_wait().unwrap().is_none(),
        "the bystander is alive"
    );
    // `start` waits for the pid file: a stale one must not pass for the
    // new monitor's while that monitor is still setting up.
    plant_stale_pid_file();
    let monitor = Monitor::start(&env, &web);
    assert_ne!(
        monitor.started["pid"],
        bystander.id(),
        "start read the stale file"
    );
    assert_ne!(
        env.json(&web, &["monitor", "status"])["pid"],
        bystander.id()
    );
    bystander.kill().unwrap();
    bystander.wait().unwrap();
}

#[test]
fn monitor_start_warns_when_no_doorbell_is_configured() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let start = |repo: &Path| {
        let out = env.run(repo, &["monitor", "start"]);
        assert!(out.status.success(), "{}", stderr(&out));
        env.ok(repo, &["monitor", "stop"]);
        stderr(&out)
    };
    let warned = start(&web);
    assert!(warned.contains("warning: no doorbell"), "{warned}");
    assert!(warned.contains("monitoring: transports:"), "{warned}");

    let script = recorder(&env, &env.path().join("rings.txt"));
    add_monitoring(
        &env,
        &web,
        &format!(
            "  transports:\n    - type: command\n      program: '{}'\n",
            script.display()
        ),
    );
    let quiet = start(&web);
    assert!(!quiet.contains("no doorbell"), "{quiet}");
}

#[test]
fn command_transport_gets_refs_only_and_no_shell_sees_message_text() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let log = env.path().join("rings.txt");
    let script = recorder(&env, &log);
    add_monitoring(
        &env,
        &web,
        &format!(
            "  debounce: 50ms\n  transports:\n    - type: command\n      program: '{}'\n",
            script.display()
        ),
    );
    let _monitor = Monitor::start(&env, &web);
    let pwned = env.path().join("pwned");
    let hostile = format!("$(touch {0}) `touch {0}` ; touch {0}", pwned.display());
    let id = env.send(
        &api,
        "web",
        &[
            "--type",
            "question",
            "--subject",
            &hostile,
            "--body",
            &hostile,
        ],
    );
    assert!(
        poll_until(Duration::from_secs(5), || !rings(&log).is_empty()),
        "rang"
    );
    assert_eq!(rings(&log)[0], format!("1 {}", env.short_ref(&web, &id)));
    assert!(!pwned.exists(), "nothing was interpreted by a shell");
}

#[test]
fn a_burst_of_50_coalesces_and_retries_stop_once_processed() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let log = env.path().join("rings.txt");
    let script = recorder(&env, &log);
    add_monitoring(
        &env,
        &web,
        &format!(
            "  debounce: 300ms\n  retry_initial: 60s\n  transports:\n    - type: command\n      program: '{}'\n",
            script.display()
        ),
    );
    let monitor = Monitor::start(&env, &web);
    let mut ids = Vec::new();
    for i in 0..50 {
        ids.push(env.send(
            &api,
            "web",
            &["--type", "update", "--subject", &format!("burst {i}")],
        ));
    }
    let refs: Vec<String> = ids.iter().map(|id| env.short_ref(&web, id)).collect();
    let all_rung = || {
        let seen: Vec<String> = rings(&log)
            .iter()
            .flat_map(|l| {
                l.split_once(' ')
                    .map(|(_, ids)| ids.split(',').map(str::to_string).collect::<Vec<_>>())
                    .unwrap_or_default()
            })
            .collect();
        refs.iter().all(|r| seen.contains(r))
    };
    assert!(
        poll_until(Duration::from_secs(10), all_rung),
        "every message was announced"
    );
    // Part of the scenario, not a wait for readiness: doorbells rung late
    // for the burst must have a chance to show up before they are counted.
    std::thread::sleep(Duration::from_millis(500));
    let count = rings(&log).len();
    assert!(count <= 5, "50 messages rang {count} doorbells");
    drop(monitor);

    // Retries: a short backoff rings again until the message is processed.
    std::fs::remove_file(&log).unwrap();
    for id in &ids {
        env.ok(&web, &["process", id]);
    }
    let config = web.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "retry_initial: 60s",
        "retry_initial: 300ms\n  retry_max: 300ms",
    );
    std::fs::write(&config, text).unwrap();
    let _monitor = Monitor::start(&env, &web);
    let id = env.question(&api, "web", "answer me");
    let short_ref = env.short_ref(&web, &id);
    assert!(
        poll_until(Duration::from_secs(10), || rings(&log).len() >= 3),
        "retried"
    );
    assert!(
        rings(&log).iter().all(|l| l == &format!("1 {short_ref}")),
        "{:?}",
        rings(&log)
    );
    env.ok(&web, &["process", &id]);
    // Part of the scenario: a doorbell already under way when the message
    // was processed may still land; then, for 1.2 s (four retry periods),
    // nothing further may ring.
    std::thread::sleep(Duration::from_millis(400));
    let settled = rings(&log).len();
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(rings(&log).len(), settled, "no doorbell once processed");
}

/// A request the fake OpenCode server received.
#[derive(Debug)]
struct Seen {
    /// `METHOD target`.
    line: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A fake `opencode serve` on a free port of 127.0.0.1: each connection
/// carries one request, answered with the raw HTTP `answer` returns for it,
/// then passed on through the channel.
fn fake_opencode(
    mut answer: impl FnMut(&Seen) -> String + Send + 'static,
) -> (u16, std::sync::mpsc::Receiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            // A client that connects and then stalls must not hang the thread.
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let Some(seen) = read_request(&stream) else {
                continue;
            };
            let _ = (&stream).write_all(answer(&seen).as_bytes());
            if tx.send(seen).is_err() {
                break;
            }
        }
    });
    (port, rx)
}

fn read_request(stream: &std::net::TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let line = line.trim_end().strip_suffix(" HTTP/1.1")?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        if header == "\r\n" {
            break;
        }
        let (name, value) = header.trim_end().split_once(':')?;
        headers.push((name.to_string(), value.trim().to_string()));
    }
    let mut seen = Seen {
        line,
        headers,
        body: String::new(),
    };
    let length = seen
        .header("content-length")
        .map_or(0, |v| v.parse().unwrap());
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    seen.body = String::from_utf8(body).unwrap();
    Some(seen)
}

fn next_request(rx: &std::sync::mpsc::Receiver<Seen>, what: &str) -> Seen {
    rx.recv_timeout(Duration::from_secs(15))
        .unwrap_or_else(|_| panic!("the fake OpenCode server got no {what}"))
}

/// `body` as a chunked HTTP answer, cut into pieces of 7 bytes.
fn chunked(status: &str, body: &str) -> String {
    let mut text = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    assert!(body.is_ascii(), "pieces of 7 bytes stay text");
    for piece in body.as_bytes().chunks(7) {
        let piece = std::str::from_utf8(piece).unwrap();
        let _ = write!(text, "{:x}\r\n{piece}\r\n", piece.len());
    }
    text.push_str("0\r\n\r\n");
    text
}

const NO_CONTENT: &str = "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n";
const UNAUTHORIZED: &str = "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Basic realm=\"Secure Area\"\r\nContent-Length: 0\r\n\r\n";

/// What the monitor logged as `notify_failed` for `transport`.
fn failures(repo: &Path) -> Vec<String> {
    std::fs::read_to_string(repo.join(".aea/agent.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == "notify_failed")
        .map(|e| e["error"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The repository as OpenCode names it: resolved, as the query encodes it.
fn directory_query(repo: &Path) -> String {
    let resolved = std::fs::canonicalize(repo).unwrap();
    resolved
        .display()
        .to_string()
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A configured session, no password in the monitor's environment: no
/// Authorization header goes out, a server that wants one gets a clear
/// `notify_failed`, and the retry after it posts the fixed doorbell.
#[test]
fn opencode_transport_posts_the_fixed_doorbell() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let mut first = true;
    let (port, requests) = fake_opencode(move |_| {
        let answer = if first { UNAUTHORIZED } else { NO_CONTENT };
        first = false;
        answer.to_string()
    });
    add_monitoring(
        &env,
        &web,
        &format!(
            "  retry_initial: 300ms\n  transports:\n    - type: opencode\n      url: http://127.0.0.1:{port}\n      session: ses_abc123\n"
        ),
    );
    let _monitor = Monitor::start(&env, &web);
    env.send(
        &api,
        "web",
        &[
            "--type",
            "question",
            "--subject",
            "secret subject",
            "--body",
            "secret body",
        ],
    );
    let refused = next_request(&requests, "doorbell");
    assert_eq!(refused.header("authorization"), None, "{refused:?}");
    assert!(
        poll_until(Duration::from_secs(5), || !failures(&web).is_empty()),
        "the 401 was logged"
    );
    let error = &failures(&web)[0];
    assert!(
        error.contains("wants a password (401 Unauthorized): set OPENCODE_SERVER_PASSWORD"),
        "{error}"
    );

    let seen = next_request(&requests, "retried doorbell");
    assert_eq!(
        seen.line,
        format!(
            "POST /session/ses_abc123/prompt_async?directory={}",
            directory_query(&web)
        )
    );
    assert_eq!(seen.header("authorization"), None);
    let v: serde_json::Value = serde_json::from_str(&seen.body).unwrap();
    assert_eq!(v["parts"][0]["type"], "text");
    assert_eq!(v["parts"][0]["text"], aea::transport::DOORBELL);
    assert!(!seen.body.contains("secret"), "no message text");
    assert!(poll_until(Duration::from_secs(5), || env
        .ok(&web, &["--json", "log", "--event", "notified"])
        .contains("opencode")));
}

/// No session configured, the password in the monitor's environment: the
/// doorbell logs in (Basic, user `opencode`), asks for this repository's
/// sessions, reads the chunked answer, and rings the most recently updated
/// top-level session whose directory is this repository — not a newer one
/// of another repository, a sub-agent's or one in a subfolder.
#[test]
fn opencode_doorbell_logs_in_and_finds_the_session_of_this_repository() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let dir = std::fs::canonicalize(&web).unwrap().display().to_string();
    let other = std::fs::canonicalize(&api).unwrap().display().to_string();
    let sessions = serde_json::json!([
        {"id": "ses_otherRepo", "directory": other, "time": {"created": 1, "updated": 9000}},
        {"id": "ses_subAgent", "directory": dir, "parentID": "ses_newest", "time": {"updated": 8000}},
        {"id": "ses_subfolder", "directory": format!("{dir}/src"), "time": {"updated": 7000}},
        {"id": "ses_older", "directory": dir, "time": {"updated": 1000}},
        {"id": "ses_newest", "directory": dir, "title": "t", "time": {"created": 1, "updated": 5000}},
    ])
    .to_string();
    let (port, requests) = fake_opencode(move |seen| {
        if seen.header("authorization") != Some("Basic b3BlbmNvZGU6aHVudGVyMg==") {
            UNAUTHORIZED.to_string()
        } else if seen.line.starts_with("GET /session?") {
            chunked("200 OK", &sessions)
        } else {
            NO_CONTENT.to_string()
        }
    });
    add_monitoring(
        &env,
        &web,
        &format!("  transports:\n    - type: opencode\n      url: http://127.0.0.1:{port}\n"),
    );
    let _monitor = Monitor::start_with(&env, &web, &[("OPENCODE_SERVER_PASSWORD", "hunter2")]);
    env.question(&api, "web", "wake up");

    let list = next_request(&requests, "session list");
    assert_eq!(
        list.line,
        format!(
            "GET /session?directory={}&roots=true",
            directory_query(&web)
        )
    );
    assert_eq!(
        list.header("authorization"),
        Some("Basic b3BlbmNvZGU6aHVudGVyMg==")
    );
    let post = next_request(&requests, "doorbell");
    assert!(
        post.line
            .starts_with("POST /session/ses_newest/prompt_async?directory="),
        "{post:?}"
    );
    assert_eq!(
        post.header("authorization"),
        Some("Basic b3BlbmNvZGU6aHVudGVyMg==")
    );
    assert!(poll_until(Duration::from_secs(5), || env
        .ok(&web, &["--json", "log", "--event", "notified"])
        .contains("opencode")));
    assert_eq!(failures(&web), Vec::<String>::new());
    let log = std::fs::read_to_string(web.join(".aea/agent.log")).unwrap();
    assert!(!log.contains("hunter2"), "the password is never logged");
}

/// The server's answer is another program's: a session id that would
/// change the URL path is refused and nothing is posted; the password comes
/// from the variable `password_env` names, the user from
/// OPENCODE_SERVER_USERNAME; a repository without a session says so.
#[test]
fn opencode_doorbell_refuses_a_session_id_the_server_made_up() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let dir = std::fs::canonicalize(&web).unwrap().display().to_string();
    let mut lists = 0;
    let (port, requests) = fake_opencode(move |seen| {
        if !seen.line.starts_with("GET /session?") {
            return NO_CONTENT.to_string();
        }
        lists += 1;
        let body = if lists == 1 {
            serde_json::json!([
                {"id": "ses_fine", "directory": dir, "time": {"updated": 1}},
                {"id": "../../session/ses_fine/abort?x=", "directory": dir, "time": {"updated": 2}},
            ])
        } else {
            serde_json::json!([])
        };
        let body = body.to_string();
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    });
    add_monitoring(
        &env,
        &web,
        &format!(
            "  retry_initial: 300ms\n  transports:\n    - type: opencode\n      url: http://127.0.0.1:{port}\n      password_env: MY_OC_PW\n"
        ),
    );
    let _monitor = Monitor::start_with(
        &env,
        &web,
        &[
            ("MY_OC_PW", "pw from var"),
            ("OPENCODE_SERVER_USERNAME", "me"),
            ("OPENCODE_SERVER_PASSWORD", "not this one"),
        ],
    );
    env.question(&api, "web", "wake up");
    let list = next_request(&requests, "session list");
    assert_eq!(
        list.header("authorization"),
        Some("Basic bWU6cHcgZnJvbSB2YXI=")
    );
    let second = next_request(&requests, "second session list (the retry)");
    assert!(
        second.line.starts_with("GET /session?"),
        "nothing posted: {second:?}"
    );
    assert!(
        poll_until(Duration::from_secs(5), || failures(&web).len() >= 2),
        "{:?}",
        failures(&web)
    );
    let errors = failures(&web);
    assert!(
        errors[0].contains("named session \"../../session/ses_fine/abort?x=\", which is not an OpenCode session id; not used"),
        "{errors:?}"
    );
    assert!(
        errors[1].contains("has no session in")
            && errors[1].contains("start `opencode` in this repository"),
        "{errors:?}"
    );
    while let Ok(seen) = requests.try_recv() {
        assert!(seen.line.starts_with("GET "), "nothing posted: {seen:?}");
    }
}

/// Kills the test's tmux server when the test ends.
struct Kill<'a>(&'a dyn Fn(&[&str]) -> std::process::Output);

impl Drop for Kill<'_> {
    fn drop(&mut self) {
        (self.0)(&["kill-server"]);
    }
}

#[test]
fn tmux_transport_rings_a_real_pane() {
    assert!(
        Command::new("tmux").arg("-V").output().is_ok(),
        "tmux is required for this test (.ci/run installs it)"
    );
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let socket = format!("aea-test-{}", std::process::id());
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(["-L", &socket])
            .args(args)
            .env("HOME", env.path().join("home"))
            .output()
            .unwrap()
    };
    assert!(
        tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "agent",
            "-x",
            "200",
            "-y",
            "20",
            "cat"
        ])
        .status
        .success()
    );
    let _kill = Kill(&tmux);
    add_monitoring(
        &env,
        &web,
        &format!("  transports:\n    - type: tmux\n      target: agent\n      socket: {socket}\n"),
    );
    let _monitor = Monitor::start(&env, &web);
    env.send(
        &api,
        "web",
        &["--type", "question", "--subject", "hidden text"],
    );
    let screen = || stdout(&tmux(&["capture-pane", "-p", "-t", "agent"]));
    assert!(
        poll_until(Duration::from_secs(5), || screen()
            .contains(aea::transport::DOORBELL)),
        "pane shows: {}",
        screen()
    );
    // `cat` echoes the line after Enter, so the doorbell shows twice: typed and echoed.
    assert!(
        poll_until(Duration::from_secs(2), || screen()
            .matches(aea::transport::DOORBELL)
            .count()
            == 2),
        "{}",
        screen()
    );
    assert!(!screen().contains("hidden text"));
}

/// The rejected mail arrives after the watch said it listens, so it is new
/// to the watch; the accepted mail after it is what must wake it. A watch
/// that woke for the rejected mail names it (alone or with the other).
#[test]
fn nobody_is_woken_for_mail_the_policy_rejects() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let ops = env.repo("ops");
    let web = env.repo("web");
    let config = web.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("deny_senders: []", "deny_senders: [api]");
    std::fs::write(&config, text).unwrap();
    let (mut watch, _stderr) = spawn_watch(&env, &web, &["--timeout", "20s"]);
    let denied = env.question(&api, "web", "from a denied sender");
    let accepted = env.question(&ops, "web", "from an allowed sender");
    let status = wait_exit(&mut watch, Duration::from_secs(10)).expect("watch woke up");
    let line = child_stdout(&mut watch);
    assert!(status.success(), "{line}");
    let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(v["event"], "new_mail");
    assert_eq!(
        v["refs"],
        serde_json::json!([env.short_ref(&web, &accepted)]),
        "woken for the rejected {} too",
        env.short_ref(&web, &denied)
    );
}

/// CPU time (user + system, every thread) process `pid` has used so far,
/// from /proc/<pid>/stat, in clock ticks of 1/100 s (USER_HZ, which is 100
/// on every architecture these tests run on).
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name, which is in parentheses and may
    // hold spaces: the state is the first, utime the 12th, stime the 13th.
    let ticks: u64 = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .skip(11)
        .take(2)
        .map(|f| f.parse::<u64>().unwrap())
        .sum();
    Duration::from_millis(ticks * 10)
}

/// The share of one core (CPU time / wall time) the running process `pid`
/// uses over `period`, with what it did in that time for the message.
fn cpu_share(pid: u32, period: Duration) -> (f64, String) {
    let (before, start) = (cpu_time(pid), Instant::now());
    // Not a wait for readiness: the period being measured.
    std::thread::sleep(period);
    let (used, wall) = (cpu_time(pid).saturating_sub(before), start.elapsed());
    let share = used.as_secs_f64() / wall.as_secs_f64();
    (share, format!("{used:?} of CPU in {wall:?}"))
}

/// A waiting process is asleep: a busy loop would use a whole core
/// (~100 %) while mail waits; a sleeping one uses ~0. The bound is
/// far from both, so that a loaded machine cannot fail the fix or pass the
/// busy loop.
const IDLE_BOUND: f64 = 0.05;

/// Twenty unprocessed messages for `web`, every fourth an urgent issue,
/// which the default policy gates (it waits for a person's approval).
fn waiting_mail(env: &TestEnv, from: &Path) {
    for i in 0..20 {
        let subject = format!("waiting {i}");
        let mut args = vec!["--subject", subject.as_str(), "--body", "b"];
        if i % 4 == 0 {
            args.extend(["--type", "issue", "--priority", "urgent"]);
        } else {
            args.extend(["--type", "question"]);
        }
        env.send(from, "web", &args);
    }
}

#[test]
fn a_waiting_watch_uses_no_cpu_while_mail_waits() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    waiting_mail(&env, &api);
    assert_eq!(
        env.json(&web, &["pending"])["pending"]
            .as_array()
            .unwrap()
            .len(),
        5,
        "gated mail waits too"
    );
    let (mut watch, _stderr) = spawn_watch(&env, &web, &["--timeout", "3s"]);
    let (share, used) = cpu_share(watch.id(), Duration::from_millis(2500));
    assert!(
        share < IDLE_BOUND,
        "a waiting watch used {:.0} % of a core ({used})",
        share * 100.0
    );
    let status = wait_exit(&mut watch, Duration::from_secs(10)).expect("the watch timed out");
    assert_eq!(status.code(), Some(4), "{}", child_stdout(&mut watch));
}

#[test]
fn a_started_monitor_uses_no_cpu_while_mail_waits() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    waiting_mail(&env, &api);
    let monitor = Monitor::start(&env, &web);
    let pid = u32::try_from(monitor.started["pid"].as_u64().unwrap()).unwrap();
    // It rings at once for the mail it found (no transport configured: the
    // log says so); from then on it only waits.
    assert!(
        poll_until(Duration::from_secs(10), || env
            .ok(&web, &["--json", "log", "--event", "notified"])
            .contains("notified")),
        "the monitor rang"
    );
    let (share, used) = cpu_share(pid, Duration::from_secs(3));
    assert!(
        share < IDLE_BOUND,
        "a waiting monitor used {:.0} % of a core ({used})",
        share * 100.0
    );
    assert_eq!(
        env.json(&web, &["monitor", "status"])["state"],
        "running",
        "still running"
    );
}

/// A message whose (sender, id) a message that arrived during the watch
/// already holds is a copy: a whole look sets it aside, the first file is
/// the message. When the first was no mail to wake for (the policy
/// rejects it) and the copy comes in a later wake-up, the watch reads the
/// copy alone, finds it worth waking for, and names it: the agent is
/// woken for a replay, whose reference no longer resolves once `aea
/// check` has set it aside.
#[test]
fn a_copy_of_rejected_mail_that_came_during_the_watch_wakes_nobody() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let inbox = web.join(".aea");
    let config = inbox.join("agent-config.yaml");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "rules: []",
        "rules:\n  - id: no-spam\n    subject: \"spam*\"\n    action: reject",
    );
    std::fs::write(&config, text).unwrap();
    // Both files made before the watch starts, kept outside the inbox:
    // the rejected message, and api's own other message under its id.
    let outside = env.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let take = |id: &str| -> (String, serde_json::Value) {
        let name = file_of(&web, id);
        let value = serde_json::from_slice(&std::fs::read(inbox.join(&name)).unwrap()).unwrap();
        std::fs::remove_file(inbox.join(&name)).unwrap();
        (name, value)
    };
    let (first, first_value) = take(&env.question(&api, "web", "spam for you"));
    let id = first_value["message_id"].as_str().unwrap().to_string();
    let (_, mut copy_value) = take(&env.question(&api, "web", "a real question"));
    copy_value["message_id"] = id.clone().into();
    env.resign(&mut copy_value);
    let copy = "message-20200101T000000000Z-from-api-0c0c0c0c.json";
    std::fs::write(outside.join(&first), first_value.to_string()).unwrap();
    std::fs::write(outside.join(copy), copy_value.to_string()).unwrap();
    unread(&outside.join(&first));
    let untouched = read_at(&outside.join(&first));

    let (mut watch, _stderr) = spawn_watch(&env, &web, &["--timeout", "4s"]);
    std::fs::rename(outside.join(&first), inbox.join(&first)).unwrap();
    // The watch has read the rejected message (its wake-up is over) before
    // the copy comes: the copy wakes it on its own.
    assert!(
        poll_until(Duration::from_secs(10), || read_at(&inbox.join(&first))
            != untouched),
        "the watch never read the rejected message"
    );
    std::fs::rename(outside.join(copy), inbox.join(copy)).unwrap();

    let status = wait_exit(&mut watch, Duration::from_secs(20)).expect("watch ended");
    let v = watch_line(&mut watch);
    let check = env.json(&web, &["check", "--all"]);
    assert!(
        !inbox.join(copy).exists(),
        "a whole listing sets the copy aside: {check}"
    );
    assert_eq!(status.code(), Some(4), "woken for a replay: {v}");
    assert_eq!(v["event"], "timeout", "{v}");
}

/// The count a wake-up gives is of the mail worth waking for, as at the
/// start (`--pending`) and as a whole look gives it: mail the agent
/// deferred meanwhile is not in it. A wake-up that reads only the new file
/// counts what waited by name, so a message deferred during the watch is
/// still counted.
#[test]
fn a_wake_up_does_not_count_mail_deferred_during_the_watch() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let waiting = env.question(&api, "web", "waits, then put off");
    let (mut watch, _stderr) = spawn_watch(&env, &web, &["--timeout", "30s"]);
    env.ok(&web, &["process", &waiting, "--outcome", "deferred"]);
    let new = env.question(&api, "web", "new");
    let status = wait_exit(&mut watch, Duration::from_secs(10)).expect("watch woke up");
    assert!(status.success());
    let v = watch_line(&mut watch);
    assert_eq!(v["event"], "new_mail");
    assert_eq!(v["refs"], serde_json::json!([env.short_ref(&web, &new)]));
    let pending = env.run(&web, &["watch", "--pending", "--timeout", "1s"]);
    let at_start: serde_json::Value = serde_json::from_slice(&pending.stdout).unwrap();
    assert_eq!(at_start["unprocessed"], 1, "{at_start}");
    assert_eq!(v["unprocessed"], 1, "the deferred message counted: {v}");
}

/// A marker beside a waiting file that does not cover its bytes (made
/// for other bytes: the file was rewritten after it was marked) hides
/// nothing: every listing, `--pending` and a whole look count the file as
/// waiting. A wake-up that reads only the new file leaves out of its count
/// every file that has a marker beside it, so a message that waited at
/// the start, unchanged, with the same marker, is no longer counted.
#[test]
fn a_wake_up_counts_mail_a_stale_marker_does_not_hide() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.question(&api, "web", "marked for other bytes");
    let name = inbox_files(&web).pop().unwrap();
    let marker = web.join(".aea/.processed").join(&name);
    std::fs::create_dir_all(marker.parent().unwrap()).unwrap();
    let stale = serde_json::json!({
        "processed_at": "2026-01-01T00:00:00Z",
        "by": "bash",
        "outcome": "done",
        "sha256": "0".repeat(64),
    });
    std::fs::write(&marker, stale.to_string()).unwrap();
    let pending = env.run(&web, &["watch", "--pending", "--timeout", "1s"]);
    let at_start: serde_json::Value = serde_json::from_slice(&pending.stdout).unwrap();
    assert_eq!(at_start["unprocessed"], 1, "{at_start}");

    let (mut watch, _stderr) = spawn_watch(&env, &web, &["--timeout", "30s"]);
    let new = env.question(&api, "web", "new");
    let status = wait_exit(&mut watch, Duration::from_secs(10)).expect("watch woke up");
    assert!(status.success());
    let v = watch_line(&mut watch);
    assert_eq!(v["event"], "new_mail");
    assert_eq!(v["refs"], serde_json::json!([env.short_ref(&web, &new)]));
    let pending = env.run(&web, &["watch", "--pending", "--timeout", "1s"]);
    let whole: serde_json::Value = serde_json::from_slice(&pending.stdout).unwrap();
    assert_eq!(whole["unprocessed"], 2, "{whole}");
    assert_eq!(v["unprocessed"], 2, "the marked message left out: {v}");
}

/// Stopped right after it started, with mail waiting and another aea
/// command between: the first pass lets the burst of arrivals settle, and
/// the stop asked meanwhile must not wait for the next ring.
#[test]
fn the_monitor_stops_at_once_while_mail_settles() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.urgent(&api, "web", "handoff", "waiting");
    for attempt in 0..3 {
        let monitor = Monitor::start(&env, &web);
        env.ok(&web, &["check"]);
        let out = env.run(&web, &["--json", "monitor", "stop"]);
        assert!(out.status.success(), "attempt {attempt}: {}", stderr(&out));
        let stopped: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(stopped["state"], "stopped", "attempt {attempt}: {stopped}");
        drop(monitor);
    }
}
