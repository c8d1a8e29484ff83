//! `cargo bench`: the figures of SPEC §14, measured on the release build as
//! whole processes (start-up included), printed as a table.
//!
//! Peak memory comes from `wait4(2)`'s `ru_maxrss`, the only portable way to
//! read a child's high-water mark after it exited; that is the one reason
//! this file needs `unsafe`.

// A benchmark is a program of its own: it prints its figures and reads its
// environment (AEA_BENCH_KEEP, PATH), so the product's layout rules
// (clippy.toml, [lints]) do not apply to it.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::disallowed_methods)]
#![allow(unsafe_code)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const BIN: &str = env!("CARGO_BIN_EXE_aea");

/// The aea the bench runs: this build, or `AEA_BENCH_BIN` (another build
/// to compare, such as the one before a change, on the same machine).
fn bin() -> PathBuf {
    std::env::var_os("AEA_BENCH_BIN").map_or_else(|| PathBuf::from(BIN), PathBuf::from)
}

/// Where the aea under test keeps processed mail, and so where the bench
/// writes the processed history of the inboxes it measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LayoutKind {
    /// This build's: processed mail and aea's records in the receiver's
    /// private state (in the git directory, or the user's state dir), the
    /// AEA v1.0 marker in `.aea/.processed/`; only what waits in `.aea/`.
    New,
    /// `AEA_BENCH_LAYOUT=old`, for an older build given with
    /// `AEA_BENCH_BIN`: processed mail stays in `.aea/` beside its marker
    /// in `.aea/.processed/`, and the receiver's state is in `.aea/`.
    Old,
}

impl LayoutKind {
    fn from_env() -> LayoutKind {
        match std::env::var("AEA_BENCH_LAYOUT").ok().as_deref() {
            None | Some("" | "new") => LayoutKind::New,
            Some("old") => LayoutKind::Old,
            Some(other) => panic!("AEA_BENCH_LAYOUT={other}: new or old"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            LayoutKind::New => "private state",
            LayoutKind::Old => "old layout, all in .aea/",
        }
    }
}

/// Which aea the figures are of, for the table's heading: `cargo test
/// --benches` runs the debug build.
fn build_name() -> String {
    match std::env::var_os("AEA_BENCH_BIN") {
        Some(path) => format!("aea at {}", Path::new(&path).display()),
        None if cfg!(debug_assertions) => "debug build".into(),
        None => "release build".into(),
    }
}

struct Bench {
    root: tempfile::TempDir,
    layout: LayoutKind,
}

impl Bench {
    /// The user state dir of the aea the bench runs (`HOME` is the bench's
    /// root), where an inbox outside git keeps its private state.
    fn user_state(&self) -> PathBuf {
        self.root.path().join(".local/state/aea")
    }

    /// The private state of `repo`'s inbox, as the aea under test finds it
    /// (new layout).
    fn state(&self, repo: &Path) -> PathBuf {
        let repo = std::fs::canonicalize(repo).unwrap();
        aea::layout::Layout::with_user_state(&repo, Some(&self.user_state()))
            .state()
            .to_path_buf()
    }

    /// The folders whose change makes aea list `repo`'s inbox again rather
    /// than trust what it remembered, and make the pre-commit hook start
    /// it: `.aea/`, its `.processed/` and config, and where the layout keeps
    /// the records, deferrals and approvals. Those missing are left out.
    fn watched(&self, repo: &Path) -> Vec<PathBuf> {
        let aea = repo.join(".aea");
        let mut paths = vec![
            aea.clone(),
            aea.join(".processed"),
            aea.join("agent-config.yaml"),
        ];
        match self.layout {
            LayoutKind::New => {
                let state = self.state(repo);
                paths.extend(
                    [
                        aea::layout::Private::Records,
                        aea::layout::Private::Deferred,
                        aea::layout::Private::Approvals,
                    ]
                    .map(|p| state.join(p.name())),
                );
            }
            LayoutKind::Old => paths.extend([aea.join(".deferred"), aea.join(".approvals")]),
        }
        paths.retain(|p| p.exists());
        paths
    }

    fn cmd(&self, dir: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.env_clear()
            .env("HOME", self.root.path())
            .env("USER", "bench")
            .env("AEA_REGISTRY", self.root.path().join("registry.toml"))
            .current_dir(dir)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }

    fn git(&self, dir: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new("git");
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.path())
            .env("AEA_REGISTRY", self.root.path().join("registry.toml"))
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "bench")
            .env("GIT_AUTHOR_EMAIL", "bench@example.com")
            .env("GIT_COMMITTER_NAME", "bench")
            .env("GIT_COMMITTER_EMAIL", "bench@example.com")
            .current_dir(dir)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }

    /// A git repository with aea initialised, with or without its hooks.
    fn git_repo(&self, name: &str, hooks: bool) -> PathBuf {
        let dir = self.root.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        assert!(self.git(&dir, &["init", "-q"]).status().unwrap().success());
        let mut args = vec!["init", "--no-agent-files", "--id", name];
        if !hooks {
            args.push("--no-git-hooks");
        }
        assert!(self.cmd(&dir, &args).status().unwrap().success());
        dir
    }

    fn repo(&self, name: &str) -> PathBuf {
        let dir = self.root.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let status = self
            .cmd(&dir, &["init", "--no-agent-files"])
            .status()
            .unwrap();
        assert!(status.success());
        dir
    }
}

/// Runs the command once: wall time and peak resident memory in KiB.
// The child is reaped by wait4 below, which Child::wait cannot replace.
#[allow(clippy::zombie_processes)]
fn measure(mut cmd: Command) -> (Duration, u64) {
    let what = format!("{cmd:?}");
    let start = Instant::now();
    let child = cmd.spawn().unwrap();
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    let mut status = 0;
    // SAFETY: `rusage` is plain old data that wait4 fills in; `pid` is our
    // own child, which we reap here instead of through `Child::wait`.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
    let elapsed = start.elapsed();
    assert_eq!(reaped, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{what} failed: {status}"
    );
    (elapsed, u64::try_from(usage.ru_maxrss).unwrap_or(0))
}

struct Figures {
    median: Duration,
    p95: Duration,
    peak_kib: u64,
}

fn run_many(runs: usize, make: impl FnMut() -> Command) -> Figures {
    run_warmed(5, runs, make) // the first five warm the page cache
}

/// Like `run_many`, after `warm` runs that are not counted: fewer where
/// each run takes long.
fn run_warmed(warm: usize, runs: usize, mut make: impl FnMut() -> Command) -> Figures {
    for _ in 0..warm {
        measure(make());
    }
    let mut times = Vec::with_capacity(runs);
    let mut peak = 0;
    for _ in 0..runs {
        let (t, kib) = measure(make());
        times.push(t);
        peak = peak.max(kib);
    }
    let (median, p95) = median_p95(&mut times);
    Figures {
        median,
        p95,
        peak_kib: peak,
    }
}

/// The median and the p95 of `times` (which it sorts).
fn median_p95(times: &mut [Duration]) -> (Duration, Duration) {
    times.sort();
    let n = times.len();
    (times[n / 2], times[(n * 95 / 100).min(n - 1)])
}

/// Registers `sender` in the bench's registry with a fresh key and
/// returns that key, which signs every message the bench writes.
fn register_sender(home: &Path) -> ed25519_dalek::SigningKey {
    let (key, _) =
        aea::identity::load_or_create_key(&home.join(".config/aea/keys"), "sender").unwrap();
    aea::registry::Registry::update(&home.join("registry.toml"), |r| {
        r.agents.insert(
            "sender".into(),
            aea::registry::Entry {
                key: Some(aea::identity::public_text(&key.verifying_key())),
                remote: Some("/nonexistent/mail.git".into()),
                ..aea::registry::Entry::default()
            },
        );
        Ok(())
    })
    .unwrap();
    key
}

/// Delivers the `i`th message into `repo`'s inbox the way `aea send` does
/// (aea's own delivery, which also notes the id in the receiver's id
/// index, so that `process <id>` finds it without a listing); returns its
/// file name. For the old layout, the file is written and the id noted in
/// `.aea/.seen/`, where the older aea keeps its index and this build's
/// delivery would not write.
fn deliver_message(
    bench: &Bench,
    repo: &Path,
    i: usize,
    key: &ed25519_dalek::SigningKey,
) -> String {
    let (name, bytes) = signed_message("scale", i, key);
    let message = aea::message::parse(&bytes, None).unwrap();
    if bench.layout == LayoutKind::Old {
        let aea = repo.join(".aea");
        std::fs::write(aea.join(&name), &bytes).unwrap();
        let seen = aea.join(".seen");
        let lines = [
            (
                "ids",
                &message.message_id,
                format!("{}\t{name}\n", message.message_id),
            ),
            ("refs", &name, format!("{name}\n")),
        ];
        for (index, hashed, line) in lines {
            let dir = seen.join(index);
            make_private_dirs(&dir);
            let bucket = &aea::fsutil::sha256_hex(hashed.as_bytes())[..2];
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join(bucket))
                .unwrap();
            std::io::Write::write_all(&mut file, line.as_bytes()).unwrap();
        }
        return name;
    }
    let runtime = aea::runtime::Runtime::new(&aea::env::Env::default());
    let path = aea::mailbox::Mailbox::at(repo)
        .unwrap()
        .deliver_raw(&bytes, &message, &runtime)
        .unwrap();
    path.file_name().unwrap().to_string_lossy().into_owned()
}

/// The id of the `i`th message the bench writes.
fn message_id(i: usize) -> String {
    format!("00000000-0000-4000-8000-{i:012x}")
}

/// Writes the `i`th message into the inbox `aea` of agent `to` as a
/// delivered file waiting there, signed by `key`; returns its file name.
fn write_message(aea: &Path, to: &str, i: usize, key: &ed25519_dalek::SigningKey) -> String {
    let (name, bytes) = signed_message(to, i, key);
    std::fs::write(aea.join(&name), bytes).unwrap();
    name
}

/// Makes `dir` and the folders above it that are missing, `0700`, as aea
/// makes its private state (it refuses one its group or others may write).
fn make_private_dirs(dir: &Path) {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .unwrap();
}

/// Processed history of one inbox, kept where the aea under test keeps
/// it, written directly (a large inbox built by `aea process` would take
/// hours): what `aea process` leaves behind, minus the log line.
struct History {
    layout: LayoutKind,
    /// The work tree's `.aea/`.
    aea: PathBuf,
    /// The private state's `processed/` and `records/` (new layout).
    store: PathBuf,
    records: PathBuf,
}

impl History {
    /// The history of `repo`'s inbox; for the new layout its private
    /// folders are made here if `aea init` has not made them.
    fn of(bench: &Bench, repo: &Path) -> History {
        let state = bench.state(repo);
        let history = History {
            layout: bench.layout,
            aea: repo.join(".aea"),
            store: state.join(aea::layout::Private::Processed.name()),
            records: state.join(aea::layout::Private::Records.name()),
        };
        if history.layout == LayoutKind::New {
            make_private_dirs(&history.store);
            make_private_dirs(&history.records);
        }
        history
    }

    /// Keeps `bytes` as processed mail `name`. The new layout: the file in
    /// the private `processed/`, aea's record (with the message id and
    /// the SHA-256 of the bytes) in `records/`, the same JSON as the AEA
    /// v1.0 marker `.aea/.processed/<name>`. The old layout: the file in
    /// `.aea/` with a marker beside it in `.aea/.processed/`, as older aea
    /// kept it.
    fn keep(&self, name: &str, bytes: &[u8]) {
        match self.layout {
            LayoutKind::New => {
                std::fs::write(self.store.join(name), bytes).unwrap();
                self.record(name, bytes);
            }
            LayoutKind::Old => {
                std::fs::write(self.aea.join(name), bytes).unwrap();
                self.old_marker(name);
            }
        }
    }

    /// Processes mail `name` that waits in `.aea/`: in the new layout the
    /// file moves to the private store, as `aea process` moves it.
    fn process(&self, name: &str) {
        match self.layout {
            LayoutKind::New => {
                let bytes = std::fs::read(self.aea.join(name)).unwrap();
                std::fs::rename(self.aea.join(name), self.store.join(name)).unwrap();
                self.record(name, &bytes);
            }
            LayoutKind::Old => self.old_marker(name),
        }
    }

    /// Forgets processed mail `name` and what says it was processed (the
    /// file, the record, the marker), so the inbox keeps its size. Each
    /// must be there: `aea process` left it.
    fn forget(&self, name: &str) {
        let mut paths = vec![self.aea.join(".processed").join(name)];
        match self.layout {
            LayoutKind::New => paths.extend([self.store.join(name), self.records.join(name)]),
            LayoutKind::Old => paths.push(self.aea.join(name)),
        }
        for path in &paths {
            std::fs::remove_file(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        // Flushed here, outside the measured run: else the next `aea
        // process` pays, in its own fsyncs, for the bench's removals.
        for path in &paths {
            if let Some(dir) = path.parent() {
                std::fs::File::open(dir).and_then(|d| d.sync_all()).unwrap();
            }
        }
    }

    /// aea's record of processed mail `name` and the marker it writes for
    /// other readers: one JSON body, as `aea process` writes both.
    fn record(&self, name: &str, bytes: &[u8]) {
        let message = aea::message::parse(bytes, None).unwrap();
        let marker = aea::mailbox::Marker {
            processed_at: "2026-01-01T00:00:00.000Z".into(),
            by: "bench".into(),
            outcome: aea::mailbox::Outcome::Done.into(),
            note: None,
            message_id: Some(message.message_id.clone()),
            sha256: Some(aea::fsutil::sha256_hex(bytes)),
        };
        let body = serde_json::to_vec_pretty(&marker).unwrap();
        std::fs::write(self.records.join(name), &body).unwrap();
        std::fs::write(self.aea.join(".processed").join(name), &body).unwrap();
    }

    /// The marker the bench wrote before processed mail moved to the
    /// private state (no message id, no digest: older aea counts it as
    /// processed all the same), kept so that figures of older builds
    /// compare with those taken then.
    fn old_marker(&self, name: &str) {
        let marker = r#"{"processed_at":"2026-01-01T00:00:00.000Z","by":"bench","outcome":"done"}"#;
        std::fs::write(self.aea.join(".processed").join(name), marker).unwrap();
    }
}

/// The `i`th message the bench writes, for agent `to`, signed by `key`:
/// the file name a delivery gives it, and its bytes.
fn signed_message(to: &str, i: usize, key: &ed25519_dalek::SigningKey) -> (String, Vec<u8>) {
    let base = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let at = base + chrono::Duration::milliseconds(i64::try_from(i).unwrap());
    let name = aea::message::file_name(at, "sender", &format!("{i:08x}"));
    let kind = ["question", "update", "issue", "request"][i % 4];
    let priority = ["low", "normal", "high", "urgent"][i % 4];
    let message = serde_json::json!({
        "protocol_version": "1.0",
        "message_id": message_id(i),
        "message_type": kind,
        "timestamp": aea::message::format_time(at),
        "priority": priority,
        "requires_response": false,
        "from": {"agent_id": "sender", "repo_path": "/nonexistent/sender"},
        "to": {"agent_id": to},
        "message": {"subject": format!("message {i}"), "body": "x".repeat(400), "context": {}, "attachments": []},
        "metadata": {"conversation_id": format!("c{i}"), "tags": []}
    });
    let mut message = aea::message::parse(&serde_json::to_vec(&message).unwrap(), None).unwrap();
    aea::identity::sign(&mut message, key);
    (name, message.to_json())
}

/// Fills `repo`'s inbox with `processed` processed and `waiting` unprocessed
/// messages, written directly (as delivered files, and processed mail
/// where the aea under test keeps it: see [`History`]), every one signed
/// by `sender`, whose key `registry` pins: `check` verifies each
/// unprocessed one (SPEC §14: the budgets hold with every message signed).
fn fill(bench: &Bench, repo: &Path, processed: usize, waiting: usize) {
    let key = register_sender(bench.root.path());
    let history = History::of(bench, repo);
    for i in 0..processed + waiting {
        if i < processed {
            let (name, bytes) = signed_message("inbox", i, &key);
            history.keep(&name, &bytes);
        } else {
            write_message(&history.aea, "inbox", i, &key);
        }
    }
}

/// Mean time to parse and verify one signed message that `check` has not
/// seen before (each message distinct, so no cached result is reused).
fn verify_cost(n: usize) -> Duration {
    let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
    let mut registry = aea::registry::Registry::default();
    registry.agents.insert(
        "sender".into(),
        aea::registry::Entry {
            key: Some(aea::identity::public_text(&key.verifying_key())),
            ..aea::registry::Entry::default()
        },
    );
    let files: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let text = format!(
                r#"{{"protocol_version":"1.0","message_id":"m{i}","message_type":"question","timestamp":"2026-01-01T00:00:00.000Z","priority":"normal","requires_response":false,"from":{{"agent_id":"sender"}},"to":{{"agent_id":"inbox"}},"message":{{"subject":"message {i}","body":"{}"}},"metadata":{{}}}}"#,
                "x".repeat(400)
            );
            let mut m = aea::message::parse(text.as_bytes(), None).unwrap();
            aea::identity::sign(&mut m, &key);
            m.to_json()
        })
        .collect();
    let ring = aea::keyring::KeyRing::new(registry, Some("inbox".into()), None);
    let start = Instant::now();
    for bytes in &files {
        let m = aea::message::parse(bytes, None).unwrap();
        assert_eq!(ring.verify(&m), aea::keyring::Verification::Verified);
    }
    start.elapsed() / u32::try_from(n).unwrap()
}

/// A message of 1 MiB with no hard stop in it: paragraphs of prose with a
/// code block every fourth one. Mail that passes is the worst case, since
/// the scan reads every byte before it can say so.
fn large_benign_message() -> aea::message::Message {
    const SIZE: usize = 1024 * 1024;
    let mut body = String::with_capacity(SIZE + 1024);
    let mut i = 0;
    while body.len() < SIZE {
        write!(
            body,
            "Paragraph {i}. The listing reads each file of the inbox once and keeps \
             what it learned in the private state, so the next check only looks at \
             what changed. A message that fails to parse is reported with its path \
             and moved aside; the others are sorted by priority, then by time.\n\n"
        )
        .unwrap();
        if i % 4 == 3 {
            write!(
                body,
                "```sh\ncargo test -p relay --test listing_{i}\ngit log --oneline -n 5\n\
                 ls -la .aea/\n```\n\n"
            )
            .unwrap();
        }
        i += 1;
    }
    body.truncate(SIZE);
    serde_json::from_value(serde_json::json!({
        "protocol_version": "1.0",
        "message_id": "msg-large",
        "message_type": "update",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "priority": "normal",
        "requires_response": false,
        "from": {"agent_id": "sender"},
        "to": {"agent_id": "inbox"},
        "message": {"subject": "a long report", "body": body},
        "metadata": {},
    }))
    .unwrap()
}

/// The median and p95 time of the default hard stops over
/// [`large_benign_message`], in process, as a row of the table.
fn print_hard_stop_row(full: bool) {
    let (median, p95) = hard_stop_scan_cost(if full { 200 } else { 5 });
    println!(
        "{:<52} {:>10} {:>10} {:>10}  {}",
        "hard-stop scan of a 1 MiB message, in process (5 ms)",
        ms(median),
        ms(p95),
        "",
        verdict(median <= Duration::from_millis(5))
    );
}

fn hard_stop_scan_cost(runs: usize) -> (Duration, Duration) {
    let stops = aea::hardstop::HardStops::compile(aea::hardstop::DEFAULT_HARD_STOPS).unwrap();
    let message = large_benign_message();
    assert_eq!(
        stops.find(&message),
        None,
        "the large message has no stop in it"
    );
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(stops.find(std::hint::black_box(&message)));
            start.elapsed()
        })
        .collect();
    median_p95(&mut times)
}

/// CPU time (user + system, every thread) process `pid` has used so far,
/// from /proc/<pid>/stat.
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
    // SAFETY: sysconf reads a constant of the system.
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap();
    Duration::from_millis(ticks * 1000 / hz)
}

/// The share of one core (in %) that the waiting process `pid` uses over
/// `period`: CPU time / wall time.
fn idle_cpu(pid: u32, period: Duration) -> f64 {
    let (before, start) = (cpu_time(pid), Instant::now());
    std::thread::sleep(period);
    let used = cpu_time(pid).saturating_sub(before);
    used.as_secs_f64() / start.elapsed().as_secs_f64() * 100.0
}

/// Medians of `git commit` with aea's hooks and without.
struct Commits {
    /// `--allow-empty`, nothing waiting: the quiet marker holds.
    with: Duration,
    without: Duration,
    /// The same, in an inbox with 100 processed messages.
    with_mail: Duration,
    /// A file changed and `git add`ed before each commit (what a commit
    /// usually is), with hooks and without.
    staged: Duration,
    staged_without: Duration,
}

/// Commits with and without aea's hooks, alternated so that drift in the
/// machine's speed hits both sides alike.
fn hook_commits(bench: &Bench, runs: usize) -> Commits {
    let hooked = bench.git_repo("hooked", true);
    let plain = bench.git_repo("plain", false);
    // An inbox with 100 processed messages: in the private store with
    // their markers in `.aea/.processed/`, or (old layout) in `.aea/`.
    let hooked_mail = bench.git_repo("hookedmail", true);
    fill(bench, &hooked_mail, 100, 0);
    let commit = |dir: &Path| bench.git(dir, &["commit", "-q", "--allow-empty", "-m", "bench"]);
    // A repository with a first commit has an index, which the hook
    // compares with its quiet marker too.
    for dir in [&hooked, &plain, &hooked_mail] {
        std::fs::write(dir.join("work.txt"), "start\n").unwrap();
        assert!(
            bench
                .git(dir, &["add", "work.txt"])
                .status()
                .unwrap()
                .success()
        );
        assert!(commit(dir).status().unwrap().success());
    }
    // Between two commits an inbox has usually been still for a while: the
    // hook then knows from aea's quiet marker that nothing waits (made once
    // the inbox is older than aea's 2 s settle time; see Scale in README).
    for dir in [&hooked, &hooked_mail] {
        assert!(bench.cmd(dir, &["check"]).status().unwrap().success());
        settled(&bench.watched(dir));
        assert!(bench.cmd(dir, &["check"]).status().unwrap().success());
    }
    for _ in 0..5 {
        measure(commit(&hooked));
        measure(commit(&plain));
    }
    let (mut with, mut without, mut with_mail) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs.min(100) {
        with.push(measure(commit(&hooked)).0);
        without.push(measure(commit(&plain)).0);
        with_mail.push(measure(commit(&hooked_mail)).0);
    }
    // A commit of a changed file: `git add` (not measured) writes the
    // index the commit is made from.
    let edit = |dir: &Path, i: usize| {
        std::fs::write(dir.join("work.txt"), format!("{i}\n")).unwrap();
        assert!(
            bench
                .git(dir, &["add", "work.txt"])
                .status()
                .unwrap()
                .success()
        );
        bench.git(dir, &["commit", "-q", "-m", "work"])
    };
    let (mut staged, mut staged_without) = (Vec::new(), Vec::new());
    for i in 0..runs.min(100) {
        staged.push(measure(edit(&hooked, i)).0);
        staged_without.push(measure(edit(&plain, i)).0);
    }
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    Commits {
        with: median(with),
        without: median(without),
        with_mail: median(with_mail),
        staged: median(staged),
        staged_without: median(staged_without),
    }
}

fn print_commit_rows(c: &Commits) {
    let row = |name: &str, with: Duration, without: Duration| {
        let added = with.saturating_sub(without);
        println!(
            "{:<52} {:>10} {:>10} {:>10}  {}",
            name,
            ms(with),
            ms(without),
            format!("+{}", ms(added)),
            verdict(added <= Duration::from_millis(5))
        );
    };
    row(
        "git commit, with hooks / without (budget +5 ms)",
        c.with,
        c.without,
    );
    println!(
        "  hooked / plain commit time: {:.2}",
        c.with.as_secs_f64() / c.without.as_secs_f64()
    );
    row(
        "git commit, 100 processed messages / without (+5 ms)",
        c.with_mail,
        c.without,
    );
    row(
        "git add + commit, with hooks / without (+5 ms)",
        c.staged,
        c.staged_without,
    );
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn verdict(ok: bool) -> &'static str {
    if ok { "ok" } else { "OVER BUDGET" }
}

fn main() {
    // `cargo test --benches` runs this with --bench absent: stay quick then.
    let full = std::env::args().any(|a| a == "--bench");
    let runs = if full { 200 } else { 5 };
    let bench = Bench {
        root: tempfile::tempdir().unwrap(),
        layout: LayoutKind::from_env(),
    };
    // aea's library, used here to deliver mail as `aea send` would, finds
    // private state where the aea it runs does.
    aea::layout::set_user_state_dir(Some(bench.user_state()));
    // For profiling by hand: AEA_BENCH_KEEP=1 keeps the repositories.
    if std::env::var_os("AEA_BENCH_KEEP").is_some() {
        eprintln!("keeping {}", bench.root.path().display());
    }
    // AEA_BENCH_ONLY=check|hook|watch|sync|scale|flood|hardstops|approvals: one group of rows
    // alone, for repeated runs of the figure being worked on without the
    // minutes the rest takes.
    let only = std::env::var("AEA_BENCH_ONLY").ok();
    match only.as_deref() {
        Some("hook") => print_commit_rows(&hook_commits(&bench, runs)),
        Some("watch") => print_watch_rows(&watch_exit(&bench, full)),
        Some("sync") => print_sync(&sync_scale(&bench, full), bench.layout),
        Some("scale") => print_scale(&scale(&bench, full), bench.layout),
        Some("flood") => print_flood(&flood(&bench, full), bench.layout),
        Some("hardstops") => print_hard_stop_row(full),
        Some("approvals") => print_approvals(&approvals(&bench, full)),
        Some("check") | None => {}
        Some(other) => {
            panic!(
                "AEA_BENCH_ONLY={other}: check, hook, watch, sync, scale, flood, hardstops or approvals"
            )
        }
    }
    let only_check = only.as_deref() == Some("check");
    if only.is_some() && !only_check {
        if std::env::var_os("AEA_BENCH_KEEP").is_some() {
            std::mem::forget(bench);
        }
        return;
    }

    let empty = bench.repo("empty");
    let check_empty = run_many(runs, || bench.cmd(&empty, &["check"]));

    let inbox = bench.repo("inbox");
    fill(&bench, &inbox, 10_000, 100);
    // The figure means something only if check really verifies them.
    let listed = bench
        .cmd(&inbox, &["--json", "check"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed["messages"][0]["sender"], "verified", "{listed}");
    let check_full = run_many(runs.min(100), || bench.cmd(&inbox, &["check"]));
    let check_full_json = run_many(runs.min(100), || bench.cmd(&inbox, &["--json", "check"]));
    // The first check after the mail arrived verifies all 100 signatures;
    // later ones find them in the user's cache of verified results.
    let cache = bench.root.path().join(".cache/aea");
    let check_cold = run_many(runs.min(100), || {
        let _ = std::fs::remove_dir_all(&cache);
        bench.cmd(&inbox, &["check"])
    });
    let mcp = mcp_check(&bench, &inbox, runs);
    if only_check {
        println!("aea check rows, {}, {runs} runs each", build_name());
        for (name, f) in [
            ("check, empty inbox", &check_empty),
            ("check, 10,000 processed + 100 new", &check_full),
            ("check --json, same inbox", &check_full_json),
            ("check, same inbox, first run: 100 verified", &check_cold),
        ] {
            println!(
                "{name:<52} {:>10} {:>10} {:>7} KiB",
                ms(f.median),
                ms(f.p95),
                f.peak_kib
            );
        }
        println!(
            "{:<52} {:>10} {:>10}",
            "mcp tools/call check, same inbox",
            ms(mcp.0),
            ms(mcp.1)
        );
        return;
    }

    let sender = bench.repo("sender");
    bench.repo("receiver");
    let send = run_many(runs, || {
        bench.cmd(
            &sender,
            &[
                "send",
                "--to",
                "../receiver",
                "--type",
                "question",
                "--subject",
                "bench",
                "--body",
                "hello",
            ],
        )
    });

    let commits = hook_commits(&bench, runs);

    let watch_rows = watch_exit(&bench, full);

    // CPU use of a waiting `watch` and of a started monitor while mail
    // waits (SPEC §14: at most 1 % of one core): the inbox of 10,000
    // processed and 100 unprocessed messages, measured after each said it
    // is ready and (the monitor) rang for the mail it found.
    let period = Duration::from_secs(if full { 5 } else { 1 });
    let watch = Watching::start(&bench, &inbox, &["watch", "--timeout", "1h"]);
    let watch_cpu = idle_cpu(watch.child.id(), period);
    watch.stop();

    let started = bench
        .cmd(&inbox, &["--json", "monitor", "start"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    let started: serde_json::Value = serde_json::from_slice(&started.stdout).unwrap();
    assert_eq!(started["state"], "started", "{started}");
    let monitor_pid = u32::try_from(started["pid"].as_u64().unwrap()).unwrap();
    let rang = Instant::now() + Duration::from_secs(10);
    while Instant::now() < rang {
        let log = bench
            .cmd(&inbox, &["--json", "log", "--event", "notified"])
            .stdout(Stdio::piped())
            .output()
            .unwrap();
        if String::from_utf8_lossy(&log.stdout).contains("notified") {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let monitor_cpu = idle_cpu(monitor_pid, period);
    assert!(
        bench
            .cmd(&inbox, &["monitor", "stop"])
            .status()
            .unwrap()
            .success()
    );

    let verify_each = verify_cost(if full { 2000 } else { 50 });
    let scale_rows = scale(&bench, full);
    let sync_rows = sync_scale(&bench, full);
    let flood_rows = flood(&bench, full);

    println!(
        "aea benchmarks (SPEC §14), {}, {runs} runs each, whole process; processed mail: {}",
        build_name(),
        bench.layout.name()
    );
    println!(
        "{:<52} {:>10} {:>10} {:>10}  verdict",
        "operation", "median", "p95", "peak RSS"
    );
    let row = |name: &str, f: &Figures, ok: bool| {
        println!(
            "{name:<52} {:>10} {:>10} {:>7} KiB  {}",
            ms(f.median),
            ms(f.p95),
            f.peak_kib,
            verdict(ok)
        );
    };
    row(
        "check, empty inbox (budget 3 ms)",
        &check_empty,
        check_empty.median <= Duration::from_millis(3),
    );
    let full_ok = |f: &Figures| f.median <= Duration::from_millis(30) && f.peak_kib <= 16 * 1024;
    row(
        "check, 10,000 processed + 100 new (30 ms, 16 MiB)",
        &check_full,
        full_ok(&check_full),
    );
    row(
        "check --json, same inbox (30 ms, 16 MiB)",
        &check_full_json,
        full_ok(&check_full_json),
    );
    row(
        "check, same inbox, first run: 100 verified (30 ms)",
        &check_cold,
        full_ok(&check_cold),
    );
    println!(
        "{:<52} {:>10} {:>10} {:>10}  {}",
        "verify one signed message, in process (0.1 ms)",
        format!("{:.1} µs", verify_each.as_secs_f64() * 1e6),
        "",
        "",
        verdict(verify_each <= Duration::from_micros(100))
    );
    println!(
        "{:<52} {:>10} {:>10} {:>10}  {}",
        "mcp tools/call check, same inbox, 1 server (10 ms)",
        ms(mcp.0),
        ms(mcp.1),
        "",
        verdict(mcp.0 <= Duration::from_millis(10))
    );
    print_hard_stop_row(full);
    row(
        "send to a sibling, with signing and fsync (budget 10 ms)",
        &send,
        send.median <= Duration::from_millis(10),
    );
    print_commit_rows(&commits);
    print_watch_rows(&watch_rows);
    let cpu_row = |name: &str, percent: f64| {
        println!(
            "{:<52} {:>10} {:>10} {:>10}  {}",
            format!("{name}, {}s (budget 1 % CPU)", period.as_secs()),
            format!("{percent:.2} %"),
            "",
            "",
            verdict(percent <= 1.0)
        );
    };
    cpu_row("watch waiting, 100 unprocessed mail", watch_cpu);
    cpu_row("monitor waiting, same inbox", monitor_cpu);
    print_scale(&scale_rows, bench.layout);
    print_sync(&sync_rows, bench.layout);
    print_flood(&flood_rows, bench.layout);
    if std::env::var_os("AEA_BENCH_KEEP").is_some() {
        std::mem::forget(bench);
    }
}

/// `tools/call check` answered by one long-running `aea mcp` in `repo`,
/// `runs` calls after a warm-up: median and 95th percentile of the round
/// trip, from writing the request line to reading the answer line.
fn mcp_check(bench: &Bench, repo: &Path, runs: usize) -> (Duration, Duration) {
    use std::io::{BufRead, BufReader, Write};
    let mut child = bench
        .cmd(repo, &["mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut call = |id: usize, method: &str, params: &str| {
        let started = Instant::now();
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
        )
        .unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        (started.elapsed(), line)
    };
    let (_, init) = call(
        0,
        "initialize",
        r#"{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}"#,
    );
    assert!(init.contains("2025-06-18"), "{init}");
    let check = r#"{"name":"check","arguments":{}}"#;
    // The figure means something only if the server lists and verifies
    // what the command line does.
    let (_, first) = call(1, "tools/call", check);
    let first: serde_json::Value = serde_json::from_str(&first).unwrap();
    let listed = &first["result"]["structuredContent"];
    assert_eq!(listed["unprocessed"], 100, "{first}");
    assert_eq!(listed["messages"][0]["sender"], "verified", "{first}");
    for id in 0..runs.min(20) {
        call(2 + id, "tools/call", check);
    }
    let mut times: Vec<Duration> = (0..runs)
        .map(|id| call(100 + id, "tools/call", check).0)
        .collect();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    median_p95(&mut times)
}

/// The wake-up latency (from the moment `send` returns to the moment the
/// waiting `watch` process has exited) and what the watch spends between
/// its wake-up line and its exit, over `trials` watches.
struct WatchRows {
    trials: usize,
    wake_median: Duration,
    wake_p95: Duration,
    linger_median: Duration,
    linger_p95: Duration,
}

/// What `aea watch` says on stderr once it watches the inbox and has taken
/// its first look: mail from then on wakes it. The bench waits for this
/// line, never for a time.
const LISTENING: &str = "aea watch: listening for mail in";

/// An `aea watch` the bench started, listening.
struct Watching {
    child: std::process::Child,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl Watching {
    /// Starts `aea` with `args` (a `watch`) in `dir`, stdout and stderr
    /// piped, and returns once its stderr says it listens ([`LISTENING`]);
    /// panics if it has not said so within 10 s. A thread reads its stderr
    /// to the end, so that the watch never blocks writing there.
    fn start(bench: &Bench, dir: &Path, args: &[&str]) -> Watching {
        let mut child = bench
            .cmd(dir, args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let (lines, said) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufRead::lines(stderr) {
                let Ok(line) = line else { break };
                // Read on after the bench stopped listening.
                let _ = lines.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut before = Vec::new();
        loop {
            match said.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) if line.contains(LISTENING) => break,
                Ok(line) => before.push(line),
                Err(e) => {
                    let _ = child.kill();
                    let status = child.wait().unwrap();
                    panic!(
                        "aea {args:?} in {} did not say it listens within 10 s ({e}; {status}); its stderr: {before:?}",
                        dir.display()
                    );
                }
            }
        }
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        Watching { child, stdout }
    }

    /// Waits for the watch to exit, which must be a success (it woke on
    /// mail); returns the moment the wait returned.
    fn exited(&mut self) -> Instant {
        let status = self.child.wait().unwrap();
        let exited = Instant::now();
        assert!(status.success(), "watch woke on mail: {status}");
        exited
    }

    /// What the watch printed on stdout that was not read yet, once it
    /// exited.
    fn rest(&mut self) -> String {
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut rest).unwrap();
        rest
    }

    /// Ends a watch that still waits.
    fn stop(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

fn watch_exit(bench: &Bench, full: bool) -> WatchRows {
    let watched = bench.repo("watched");
    let waker = bench.repo("waker");
    let trials = if full { 60 } else { 5 };
    let mut wakes = Vec::with_capacity(trials);
    let mut lingers = Vec::with_capacity(trials);
    for _ in 0..trials {
        // Send only once it says it listens.
        let mut watch = Watching::start(bench, &watched, &["watch", "--timeout", "10s"]);
        // `send` runs on while the watch wakes (its fsync, its record): a
        // thread waits for it, so that the line is read as soon as the watch
        // prints it and the line → exit time is the watch's alone, not cut
        // short by the bench still waiting for `send`.
        let mut send = bench
            .cmd(
                &waker,
                &[
                    "send",
                    "--to",
                    "../watched",
                    "--type",
                    "update",
                    "--subject",
                    "wake",
                ],
            )
            .spawn()
            .unwrap();
        let sender = std::thread::spawn(move || {
            assert!(send.wait().unwrap().success());
            Instant::now()
        });
        // The wake-up line, then the exit a harness waits for: the time
        // between the two is what the watch spends after it has spoken.
        let mut line = String::new();
        std::io::BufRead::read_line(&mut watch.stdout, &mut line).unwrap();
        let printed = Instant::now();
        assert!(line.contains("new_mail"), "watch printed {line:?}");
        let exited = watch.exited();
        // Nothing the watch left behind holds its stdout open.
        let rest = watch.rest();
        assert!(rest.is_empty(), "watch printed more: {rest:?}");
        let sent = sender.join().unwrap();
        wakes.push(exited.saturating_duration_since(sent));
        lingers.push(exited - printed);
    }
    let (linger_median, linger_p95) = median_p95(&mut lingers);
    let (wake_median, wake_p95) = median_p95(&mut wakes);

    WatchRows {
        trials,
        wake_median,
        wake_p95,
        linger_median,
        linger_p95,
    }
}

fn print_watch_rows(rows: &WatchRows) {
    println!(
        "{:<52} {:>10} {:>10} {:>10}  {}",
        format!(
            "watch wake-up after send, {} trials (p95 50 ms)",
            rows.trials
        ),
        ms(rows.wake_median),
        ms(rows.wake_p95),
        "",
        verdict(rows.wake_p95 <= Duration::from_millis(50))
    );
    println!(
        "{:<52} {:>10} {:>10} {:>10}  {}",
        "watch exit after its wake-up line (p95 5 ms)",
        ms(rows.linger_median),
        ms(rows.linger_p95),
        "",
        verdict(rows.linger_p95 <= Duration::from_millis(5))
    );
}

/// The message sizes of the scale table: 1,000, 10,000 and 100,000 in a
/// full run (the scale targets are set at 100,000; those rows take about
/// two minutes), 1,000 in a quick one (`cargo test --benches`);
/// `AEA_BENCH_SCALE=1000,10000` picks others.
fn scale_sizes(full: bool) -> Vec<usize> {
    if let Some(list) = std::env::var_os("AEA_BENCH_SCALE") {
        let list = list.to_string_lossy().into_owned();
        return list
            .split(',')
            .map(|n| n.trim().replace('_', "").parse().unwrap())
            .collect();
    }
    if full {
        vec![1_000, 10_000, 100_000]
    } else {
        vec![1_000]
    }
}

/// One size of the scale table: each operation's figures, and the floors
/// measured beside them.
struct Scale {
    processed: usize,
    rev_parse: Figures,
    /// `ls -f .aea`: listing what waits, in the new layout.
    listing: Figures,
    /// `ls -f .aea .aea/.processed`: listing what waits, in the old layout
    /// (processed mail and its markers too).
    listing_old: Figures,
    check_unchanged: Figures,
    check_new: Figures,
    /// The first check after the 100 waiting arrived: all 100 verified.
    check_cold: Figures,
    /// `aea watch` in this inbox woken by one message.
    wake: Wakes,
    hook_claude: Figures,
    commit_hooked: Figures,
    commit_plain: Figures,
    show: Figures,
    process: Figures,
}

/// Wake-ups of `aea watch`: from the moment the delivery that woke it
/// returned to the moment it had exited, over `trials` watches.
struct Wakes {
    trials: usize,
    median: Duration,
    p95: Duration,
}

/// The scale table: for each size, an inbox of that many processed
/// messages (kept where the aea under test keeps them, see [`History`])
/// and 100 new ones in a git repository with aea's hooks. The inbox grows
/// from one size to the next, so 100,000 messages are written once. Every
/// message is signed, as in the table above.
fn scale(bench: &Bench, full: bool) -> Vec<Scale> {
    let home = bench.root.path();
    let repo = bench.git_repo("scale", true);
    let aea = repo.join(".aea");
    let history = History::of(bench, &repo);
    // The inbox is measured at each size: aea's own housekeeping (which
    // would archive processed mail past 10,000) is off here.
    let config = aea.join("agent-config.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("limits:\n", "limits:\n  auto_gc_over: 0\n"),
    )
    .unwrap();
    let key = register_sender(home);
    // The 100 new messages, and the ones each run adds, numbered apart
    // from the processed ones. None urgent: urgent mail waiting makes the
    // pre-commit hook block the commit (`block_on: urgent_pending`).
    for i in (200_000_000..).filter(|i| i % 4 != 3).take(100) {
        write_message(&aea, "scale", i, &key);
    }
    // Fresh messages are updates of normal priority (i % 4 == 1), which
    // the default policy lets `process` mark done without approval.
    let mut fresh = 300_000_001;
    let mut filled = 0;
    let mut out = Vec::new();
    for size in scale_sizes(full) {
        let start = Instant::now();
        for i in filled..size {
            let (name, bytes) = signed_message("scale", i, &key);
            history.keep(&name, &bytes);
        }
        filled = filled.max(size);
        eprintln!(
            "scale: {size} processed + 100 new written in {:.1} s",
            start.elapsed().as_secs_f64()
        );
        // Fewer runs where each takes long, to keep `cargo bench` short.
        let runs = match (full, size) {
            (false, _) => 3,
            (true, ..=10_000) => 100,
            (true, _) => 20,
        };
        let rev_parse = run_many(runs, || bench.git(&repo, &["rev-parse", "--git-dir"]));
        // Both listings in either layout, so that figures of the two compare.
        let listing = run_many(runs, || ls(&repo, &[".aea"]));
        let listing_old = run_many(runs, || ls(&repo, &[".aea", ".aea/.processed"]));
        // The figures mean something only if check really verifies them.
        assert_verified(bench, &repo, 100);
        // Each run sees the same inbox: what changed at the warm-up stays.
        // (The first check and the first hook in an inbox make what they
        // remember: the private `seen/` and `announced/`, or in the old
        // layout `.aea/.seen/` and `.aea/.announced/`, which moves `.aea/`.
        // They run before the wait.)
        assert!(bench.cmd(&repo, &["check"]).status().unwrap().success());
        assert!(
            bench
                .cmd(&repo, &["check", "--hook", "claude"])
                .stdin(Stdio::null())
                .status()
                .unwrap()
                .success()
        );
        settled(&bench.watched(&repo));
        let check_unchanged = run_many(runs, || bench.cmd(&repo, &["check"]));
        // What Claude Code runs on every prompt, with its hook input.
        let input = bench.root.path().join("claude-input.json");
        std::fs::write(
            &input,
            r#"{"session_id":"bench","hook_event_name":"UserPromptSubmit","prompt":"go on"}"#,
        )
        .unwrap();
        let hook_claude = run_many(runs, || {
            let mut cmd = bench.cmd(&repo, &["check", "--hook", "claude"]);
            cmd.stdin(std::fs::File::open(&input).unwrap());
            cmd
        });
        // One message arrives before each run (and the previous one goes,
        // so the inbox keeps its size).
        let mut arrived: Option<String> = None;
        let check_new = run_many(runs, || {
            if let Some(name) = arrived.take() {
                std::fs::remove_file(aea.join(name)).unwrap();
            }
            arrived = Some(write_message(&aea, "scale", fresh, &key));
            fresh += 4;
            bench.cmd(&repo, &["check"])
        });
        if let Some(name) = arrived.take() {
            std::fs::remove_file(aea.join(name)).unwrap();
        }
        // The first check after the 100 arrived verifies each: nothing
        // in the user's cache of verified results (the folder also holds
        // the key that seals what aea remembers, so nothing remembered
        // verifies either), and the inbox touched.
        let cache = home.join(".cache/aea");
        let check_cold = run_many(runs, || {
            let _ = std::fs::remove_dir_all(&cache);
            touch(&aea);
            bench.cmd(&repo, &["check"])
        });
        let wake = watch_wakes(bench, &repo, if full { runs.min(60) } else { 3 }, || {
            let name = deliver_message(bench, &repo, fresh, &key);
            fresh += 4;
            name
        });
        // Commits in the same repository with aea's hooks and with none,
        // alternated so that drift in the machine's speed hits both alike.
        let commit = |hooks: bool| {
            let path = if hooks {
                "core.hooksPath=.git/hooks"
            } else {
                "core.hooksPath=/dev/null"
            };
            bench.git(
                &repo,
                &["-c", path, "commit", "-q", "--allow-empty", "-m", "bench"],
            )
        };
        settled(&bench.watched(&repo));
        let mut hooked = true;
        let mut pairs = run_pairs(runs, || {
            hooked = !hooked;
            commit(!hooked)
        });
        let commit_hooked = pairs.remove(0);
        let commit_plain = pairs.remove(0);
        let middle = message_id(size / 2);
        let show = run_many(runs, || bench.cmd(&repo, &["show", &middle]));
        // A fresh unprocessed message for each run, gone again (with what
        // `process` wrote of it) before the next.
        let mut processed: Option<String> = None;
        let process = run_many(runs, || {
            if let Some(name) = processed.take() {
                history.forget(&name);
            }
            processed = Some(deliver_message(bench, &repo, fresh, &key));
            let id = message_id(fresh);
            fresh += 4;
            bench.cmd(&repo, &["process", &id])
        });
        if let Some(name) = processed.take() {
            history.forget(&name);
        }
        out.push(Scale {
            processed: size,
            rev_parse,
            listing,
            listing_old,
            check_unchanged,
            check_new,
            check_cold,
            wake,
            hook_claude,
            commit_hooked,
            commit_plain,
            show,
            process,
        });
    }
    out
}

/// `ls -f dirs` in `repo`: the floor of listing what waits.
fn ls(repo: &Path, dirs: &[&str]) -> Command {
    let mut ls = Command::new("ls");
    ls.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(repo)
        .arg("-f")
        .args(dirs)
        .stdout(Stdio::null());
    ls
}

/// `aea watch --json` in `repo`, started `trials` times, each woken by
/// one message that `deliver` puts into the inbox (whole, as `aea send`
/// delivers) once the watch says it listens; the time from the return of
/// `deliver` to the watch's exit, which is what a harness waits for. The
/// message (the file name `deliver` returns) is taken away again after
/// each, so the inbox keeps its size.
fn watch_wakes(
    bench: &Bench,
    repo: &Path,
    trials: usize,
    mut deliver: impl FnMut() -> String,
) -> Wakes {
    let aea = repo.join(".aea");
    let mut wakes = Vec::with_capacity(trials);
    for _ in 0..trials {
        let mut watch = Watching::start(bench, repo, &["watch", "--json", "--timeout", "30s"]);
        let name = deliver();
        let delivered = Instant::now();
        let exited = watch.exited();
        let line = watch.rest();
        assert!(line.contains("new_mail"), "watch printed {line:?}");
        wakes.push(exited.saturating_duration_since(delivered));
        std::fs::remove_file(aea.join(name)).unwrap();
    }
    let (median, p95) = median_p95(&mut wakes);
    Wakes {
        trials,
        median,
        p95,
    }
}

/// Sets the modification (and so the change) time of `path` to now, as
/// `touch` does.
fn touch(path: &Path) {
    std::fs::File::open(path)
        .unwrap()
        .set_modified(SystemTime::now())
        .unwrap();
}

/// Panics unless `check --all --json` in `repo` reports `waiting` unprocessed
/// messages, no invalid file, and every message it lists from a verified
/// sender: the figures of a check mean something only if it verifies
/// each message (SPEC §14: the budgets hold with every message signed).
fn assert_verified(bench: &Bench, repo: &Path, waiting: usize) {
    // Every message, not a page: each must be verified.
    let out = bench
        .cmd(repo, &["--json", "check", "--all"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success(), "check --json: {}", out.status);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["unprocessed"],
        waiting,
        "unprocessed in {}",
        repo.display()
    );
    assert_eq!(
        report["invalid"].as_array().map(Vec::len),
        Some(0),
        "invalid files"
    );
    let messages = report["messages"].as_array().unwrap();
    let unverified = messages.iter().find(|m| m["sender"] != "verified");
    assert!(
        !messages.is_empty() && unverified.is_none(),
        "check --json lists {} messages, not all verified: {unverified:?}",
        messages.len()
    );
}

/// Waits until `paths` (an inbox's [`Bench::watched`]) have not changed
/// for a little over aea's settle time: aea answers from what it remembered
/// of an inbox only once what its answer was worked out from is older than
/// 2 s (see crates/store/src/seen.rs), so an "unchanged" row measured sooner would list.
fn settled(paths: &[PathBuf]) {
    use std::os::unix::fs::MetadataExt;
    loop {
        let newest = paths
            .iter()
            .map(|p| {
                let m = std::fs::symlink_metadata(p).unwrap();
                let changed = Duration::new(
                    u64::try_from(m.ctime()).unwrap(),
                    u32::try_from(m.ctime_nsec()).unwrap(),
                );
                let modified = m.modified().unwrap().duration_since(UNIX_EPOCH).unwrap();
                changed.max(modified)
            })
            .max()
            .unwrap();
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let ready = newest + Duration::from_millis(2500);
        match ready.checked_sub(now) {
            Some(wait) if !wait.is_zero() => std::thread::sleep(wait),
            _ => return,
        }
    }
}

/// Like `run_many`, for commands `make` hands out alternately from two
/// kinds (first, second, first, …): the figures of each kind.
fn run_pairs(runs: usize, mut make: impl FnMut() -> Command) -> Vec<Figures> {
    for _ in 0..4 {
        measure(make());
    }
    let mut times = [Vec::with_capacity(runs), Vec::with_capacity(runs)];
    let mut peaks = [0, 0];
    for _ in 0..runs {
        for side in 0..2 {
            let (t, kib) = measure(make());
            times[side].push(t);
            peaks[side] = peaks[side].max(kib);
        }
    }
    times
        .into_iter()
        .zip(peaks)
        .map(|(mut times, peak_kib)| {
            let (median, p95) = median_p95(&mut times);
            Figures {
                median,
                p95,
                peak_kib,
            }
        })
        .collect()
}

/// Prints the scale table: each operation against its target, as a ratio
/// of medians to the floor the target names or as a time, and the 32 MiB
/// memory ceiling. Both listings of what waits (`.aea/` alone in the new
/// layout, with `.aea/.processed/` in the old one) are measured in either,
/// so that figures of the two layouts compare.
fn print_scale(rows: &[Scale], layout: LayoutKind) {
    const CEILING_KIB: u64 = 32 * 1024;
    const NAME: usize = 62;
    println!();
    println!(
        "scale: N processed + 100 new, whole process, processed mail: {}; targets as ratios of medians in this run, or times (of the median unless p95 is named)",
        layout.name()
    );
    println!(
        "{:<NAME$} {:>10} {:>10} {:>10} {:>9}  verdict",
        "operation", "median", "p95", "peak RSS", "ratio"
    );
    for s in rows {
        let n = s.processed;
        println!("-- {n} processed + 100 new");
        let line = |name: &str, f: &Figures, ratio: &str, ok: bool| {
            println!(
                "{name:<NAME$} {:>10} {:>10} {:>7} KiB {ratio:>9}  {}",
                ms(f.median),
                ms(f.p95),
                f.peak_kib,
                verdict(ok && f.peak_kib <= CEILING_KIB)
            );
        };
        let over = |name: &str, f: &Figures, floor: &Figures, limit: f64| {
            let r = f.median.as_secs_f64() / floor.median.as_secs_f64();
            line(name, f, &format!("{r:.2}×"), r <= limit);
        };
        line("floor: git rev-parse --git-dir", &s.rev_parse, "", true);
        line("floor: ls -f .aea", &s.listing, "", true);
        line(
            "floor: ls -f .aea .aea/.processed",
            &s.listing_old,
            "",
            true,
        );
        over(
            "check, unchanged (≤ 3× rev-parse)",
            &s.check_unchanged,
            &s.rev_parse,
            3.0,
        );
        over(
            "check, one new message (≤ 6× rev-parse)",
            &s.check_new,
            &s.rev_parse,
            6.0,
        );
        line(
            "check, first run after 100 new arrived: 100 verified (≤ 30 ms)",
            &s.check_cold,
            "",
            s.check_cold.median <= Duration::from_millis(30),
        );
        println!(
            "{:<NAME$} {:>10} {:>10} {:>10} {:>9}  {}",
            format!(
                "watch wake-up after send returns, {} runs (p95 ≤ 25 ms)",
                s.wake.trials
            ),
            ms(s.wake.median),
            ms(s.wake.p95),
            "",
            "",
            verdict(s.wake.p95 <= Duration::from_millis(25))
        );
        over(
            "check --hook claude, prompt (≤ 3× rev-parse)",
            &s.hook_claude,
            &s.rev_parse,
            3.0,
        );
        over("show <id> (≤ 3× rev-parse)", &s.show, &s.rev_parse, 3.0);
        over(
            "process <id>, fresh message (≤ 3× rev-parse)",
            &s.process,
            &s.rev_parse,
            3.0,
        );
        let added = s.commit_hooked.median.saturating_sub(s.commit_plain.median);
        let added_p95 = s.commit_hooked.p95.saturating_sub(s.commit_plain.p95);
        line("floor: git commit, no hooks", &s.commit_plain, "", true);
        println!(
            "{:<NAME$} {:>10} {:>10} {:>7} KiB {:>9}  {}",
            "git commit, hooks added (≤ +5 ms)",
            format!("+{}", ms(added)),
            format!("+{}", ms(added_p95)),
            s.commit_hooked.peak_kib,
            "",
            verdict(added <= Duration::from_millis(5) && s.commit_hooked.peak_kib <= CEILING_KIB)
        );
    }
}

/// The flood rows: an inbox in which many verified messages wait and none
/// was processed, and the floors measured beside them.
struct Flood {
    waiting: usize,
    /// Runs of each check that reads the whole flood.
    slow_runs: usize,
    /// Runs of each floor and of the check with nothing new.
    runs: usize,
    rev_parse: Figures,
    listing: Figures,
    first: Figures,
    all_json: Figures,
    unchanged: Figures,
}

/// The flood rows: a fresh git repository in which 10,000 signed messages
/// arrived (300 in a quick run) and wait, none processed; the first
/// `check` after they arrived (nothing verified yet, nothing remembered),
/// `check --all --json` and, once the inbox has settled, a `check` with
/// nothing new, beside `git rev-parse --git-dir` and `ls -f .aea`.
fn flood(bench: &Bench, full: bool) -> Flood {
    let waiting = if full { 10_000 } else { 300 };
    // Each check that reads the whole flood takes long: few runs of those.
    let (slow_runs, runs) = if full { (10, 100) } else { (1, 3) };
    let repo = bench.git_repo("flood", true);
    let aea = repo.join(".aea");
    let key = register_sender(bench.root.path());
    let start = Instant::now();
    for i in 0..waiting {
        write_message(&aea, "flood", i, &key);
    }
    eprintln!(
        "flood: {waiting} waiting written in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    assert_verified(bench, &repo, waiting);
    let rev_parse = run_many(runs, || bench.git(&repo, &["rev-parse", "--git-dir"]));
    let listing = run_many(runs, || ls(&repo, &[".aea"]));
    // Before each run, nothing of what an earlier check learnt: no
    // verified result in the user's cache (which also holds the key that
    // seals what aea remembers) and no remembered report.
    let cache = bench.root.path().join(".cache/aea");
    let memo = match bench.layout {
        LayoutKind::New => bench.state(&repo).join(aea::layout::Private::Seen.name()),
        LayoutKind::Old => aea.join(".seen"),
    }
    .join(aea::layout::seen::REPORT);
    assert!(
        memo.is_file(),
        "check remembered its report in {}",
        memo.display()
    );
    let first = run_warmed(1, slow_runs, || {
        let _ = std::fs::remove_dir_all(&cache);
        let _ = std::fs::remove_file(&memo);
        bench.cmd(&repo, &["check"])
    });
    let all = bench
        .cmd(&repo, &["--json", "check", "--all"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    let all: serde_json::Value = serde_json::from_slice(&all.stdout).unwrap();
    assert_eq!(
        all["messages"].as_array().map(Vec::len),
        Some(waiting),
        "check --all --json lists every message"
    );
    let all_json = run_warmed(1, slow_runs, || {
        bench.cmd(&repo, &["--json", "check", "--all"])
    });
    // Nothing new, as between two prompts: aea trusts what it remembered
    // only once the inbox has been still for its settle time.
    settled(&bench.watched(&repo));
    assert!(bench.cmd(&repo, &["check"]).status().unwrap().success());
    let unchanged = run_many(runs, || bench.cmd(&repo, &["check"]));
    Flood {
        waiting,
        slow_runs,
        runs,
        rev_parse,
        listing,
        first,
        all_json,
        unchanged,
    }
}

/// Prints the flood rows in the style of the scale table: the checks
/// against a time (of the median) or a ratio of medians to `git rev-parse`.
fn print_flood(f: &Flood, layout: LayoutKind) {
    const NAME: usize = 62;
    println!();
    println!(
        "flood: {} verified messages waiting, 0 processed, whole process, processed mail: {}; runs: {} of each check that reads them all, {} of the others",
        thousands(f.waiting),
        layout.name(),
        f.slow_runs,
        f.runs
    );
    println!(
        "{:<NAME$} {:>10} {:>10} {:>10} {:>9}  verdict",
        "operation", "median", "p95", "peak RSS", "ratio"
    );
    let line = |name: &str, f: &Figures, ratio: &str, ok: bool| {
        println!(
            "{name:<NAME$} {:>10} {:>10} {:>7} KiB {ratio:>9}  {}",
            ms(f.median),
            ms(f.p95),
            f.peak_kib,
            verdict(ok)
        );
    };
    line("floor: git rev-parse --git-dir", &f.rev_parse, "", true);
    line("floor: ls -f .aea", &f.listing, "", true);
    line(
        "first check after they arrived (a page) (≤ 300 ms)",
        &f.first,
        "",
        f.first.median <= Duration::from_millis(300),
    );
    line(
        "check --all --json (≤ 1 s)",
        &f.all_json,
        "",
        f.all_json.median <= Duration::from_secs(1),
    );
    let r = f.unchanged.median.as_secs_f64() / f.rev_parse.median.as_secs_f64();
    line(
        "next check, nothing new (≤ 3× rev-parse)",
        &f.unchanged,
        &format!("{r:.2}×"),
        r <= 3.0,
    );
}

/// `n` with a comma between each group of three digits: 10,000.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One size of the sync rows: a no-op `aea sync` on a receiver with that
/// many messages of history, and the `git fetch` it runs, alone.
struct SyncScale {
    history: usize,
    fetch: Figures,
    sync: Figures,
}

/// The sync rows: for each size of the scale table, a remote whose
/// mail ref for the receiver holds that many messages (written in one
/// commit with `git fast-import`, not by that many syncs), applied,
/// processed and receipted by the receiver, then a sync with nothing new
/// beside a plain `git fetch` of the same remote into a store that has
/// it all, alternated.
fn sync_scale(bench: &Bench, full: bool) -> Vec<SyncScale> {
    let home = bench.root.path();
    let key = register_sender(home);
    let mut out = Vec::new();
    for size in scale_sizes(full) {
        let start = Instant::now();
        // One agent per size: the registry knows each by its id.
        let id = format!("receiver{size}");
        let remote = home.join(format!("mail-{size}.git"));
        let floor = home.join(format!("fetched-{size}.git"));
        for bare in [&remote, &floor] {
            let path = bare.to_str().unwrap();
            assert!(
                bench
                    .git(home, &["init", "-q", "--bare", path])
                    .status()
                    .unwrap()
                    .success()
            );
        }
        let mut stream = Vec::new();
        let mut listing = String::new();
        for i in 0..size {
            let (_, bytes) = signed_message(&id, i, &key);
            stream.extend_from_slice(
                format!("blob\nmark :{}\ndata {}\n", i + 1, bytes.len()).as_bytes(),
            );
            stream.extend_from_slice(&bytes);
            stream.push(b'\n');
            let _ = writeln!(listing, "M 100644 :{} {}.json", i + 1, message_id(i));
        }
        stream.extend_from_slice(
            format!(
                "commit refs/aea/mail/{id}\ncommitter bench <bench@example.com> 1767225600 +0000\ndata 7\nhistory\n{listing}\n"
            )
            .as_bytes(),
        );
        let mut import = bench.git(&remote, &["fast-import", "--quiet"]);
        import.stdin(Stdio::piped());
        let mut child = import.spawn().unwrap();
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), &stream).unwrap();
        drop(child.stdin.take());
        assert!(child.wait().unwrap().success());

        let receiver = home.join(format!("receiver-{size}"));
        std::fs::create_dir_all(&receiver).unwrap();
        assert!(
            bench
                .cmd(&receiver, &["init", "--no-agent-files", "--id", &id])
                .status()
                .unwrap()
                .success()
        );
        let url = remote.to_str().unwrap().to_string();
        let sync = || {
            let mut cmd = bench.cmd(&receiver, &["sync", "--remote", &url]);
            cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1");
            cmd
        };
        // Applied, then processed here, then receipted: history.
        assert!(sync().status().unwrap().success());
        let aea = receiver.join(".aea");
        let names: Vec<String> = std::fs::read_dir(&aea)
            .unwrap()
            .filter_map(|e| e.unwrap().file_name().into_string().ok())
            .filter(|n| aea::message::is_message_file_name(n))
            .collect();
        assert_eq!(names.len(), size, "the sync applied the history");
        let history = History::of(bench, &receiver);
        for name in &names {
            history.process(name);
        }
        assert!(sync().status().unwrap().success());
        let fetch = || {
            bench.git(
                &floor,
                &[
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    "--prune",
                    "--",
                    &url,
                    "+refs/aea/*:refs/fetched/aea/*",
                ],
            )
        };
        assert!(fetch().status().unwrap().success());
        eprintln!(
            "sync: {size} messages of history built in {:.1} s",
            start.elapsed().as_secs_f64()
        );
        let runs = if full { 100 } else { 3 };
        let mut fetching = false;
        let mut pairs = run_pairs(runs, || {
            fetching = !fetching;
            if fetching { fetch() } else { sync() }
        });
        let fetch = pairs.remove(0);
        let sync = pairs.remove(0);
        out.push(SyncScale {
            history: size,
            fetch,
            sync,
        });
    }
    out
}

/// Prints the sync rows: a no-op sync against `git fetch` of the same
/// remote, as a ratio of medians (target: at most 2×, so that syncing
/// costs about what fetching does whatever the history), and the 32 MiB
/// memory ceiling of the scale table.
fn print_sync(rows: &[SyncScale], layout: LayoutKind) {
    const CEILING_KIB: u64 = 32 * 1024;
    println!();
    println!(
        "sync: no-op `aea sync`, N messages of history, whole process, beside `git fetch` of the same remote; processed mail: {}",
        layout.name()
    );
    println!(
        "{:<44} {:>10} {:>10} {:>10} {:>9}  verdict",
        "operation", "median", "p95", "peak RSS", "ratio"
    );
    for s in rows {
        let n = s.history;
        println!("-- {n} messages of history");
        println!(
            "{:<44} {:>10} {:>10} {:>7} KiB {:>9}",
            "floor: git fetch, nothing new",
            ms(s.fetch.median),
            ms(s.fetch.p95),
            s.fetch.peak_kib,
            ""
        );
        let ratio = s.sync.median.as_secs_f64() / s.fetch.median.as_secs_f64();
        println!(
            "{:<44} {:>10} {:>10} {:>7} KiB {:>9}  {}",
            "no-op sync (≤ 2× git fetch)",
            ms(s.sync.median),
            ms(s.sync.p95),
            s.sync.peak_kib,
            format!("{ratio:.2}×"),
            verdict(ratio <= 2.0 && s.sync.peak_kib <= CEILING_KIB)
        );
    }
}

/// What signed approvals (SPEC §19) cost: `check` and `process` on gated
/// mail a person approved, unsigned with signatures off and signed with
/// them on, and one verification in-process.
struct ApprovalRows {
    approved: usize,
    check_off: Figures,
    check_on: Figures,
    process_off: Figures,
    process_on: Figures,
    verify_one: Duration,
}

fn approvals(bench: &Bench, full: bool) -> ApprovalRows {
    let n = if full { 50 } else { 5 };
    let api = bench.repo("approvals-api");
    // Two receivers with the same history: one decided unsigned before
    // any approver exists, one decided signed after.
    let off = bench.repo("approvals-off");
    let on = bench.repo("approvals-on");
    let with_path = |mut cmd: Command| {
        cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default());
        cmd
    };
    let run = |dir: &Path, args: &[&str]| {
        let out = with_path(bench.cmd(dir, args))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let handoffs = |to: &str| -> Vec<String> {
        (0..n)
            .map(|i| {
                let subject = format!("handoff {i}");
                let out = run(
                    &api,
                    &[
                        "--json",
                        "send",
                        "--to",
                        to,
                        "--type",
                        "handoff",
                        "--priority",
                        "urgent",
                        "--subject",
                        &subject,
                        "--body",
                        "take it over",
                    ],
                );
                let sent: serde_json::Value = serde_json::from_slice(&out).unwrap();
                sent["message_id"].as_str().unwrap().to_string()
            })
            .collect()
    };
    let approve_all = |repo: &Path, ids: &[String], key: Option<&Path>| {
        for id in ids {
            let mut args = vec!["approve", id.as_str()];
            if let Some(key) = key {
                args.extend(["--ssh-key", key.to_str().unwrap()]);
            }
            run(repo, &args);
        }
        let out = run(repo, &["--json", "check", "--all"]);
        let report: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let approved = report["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["approval"] == "approved")
            .count();
        assert_eq!(approved, n, "{report}");
    };
    let unsigned = handoffs("approvals-off");
    let signed = handoffs("approvals-on");
    // Signatures off: no approver exists yet.
    approve_all(&off, &unsigned, None);
    // The first check after a change works everything out (later ones
    // serve what aea remembered): the cache is removed before each run.
    let cache = bench.root.path().join(".cache/aea");
    let cold = |repo: &Path| {
        run_many(n, || {
            let _ = std::fs::remove_dir_all(&cache);
            bench.cmd(repo, &["check"])
        })
    };
    let check_off = cold(&off);
    let mut left = unsigned.clone();
    let process_off = run_warmed(0, n, || bench.cmd(&off, &["process", &left.pop().unwrap()]));
    // Signatures on: the person's key, a signed list and signed approvals.
    let key = bench.root.path().join("approver");
    assert!(
        Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(&key)
            .status()
            .unwrap()
            .success()
    );
    let public = key.with_extension("pub");
    run(
        &on,
        &[
            "approvers",
            "add",
            "bench",
            "--key",
            public.to_str().unwrap(),
            "--ssh-key",
            key.to_str().unwrap(),
        ],
    );
    approve_all(&on, &signed, Some(&key));
    let check_on = cold(&on);
    let mut left = signed.clone();
    let process_on = run_warmed(0, n, || bench.cmd(&on, &["process", &left.pop().unwrap()]));
    // One verification, in-process, of a signature ssh-keygen made.
    let list =
        aea_policy::approvers::Approvers::load(&bench.root.path().join(".config/aea")).unwrap();
    let data = b"{\"format\":\"aea-approval/1\"}";
    let mut sign = Command::new("ssh-keygen")
        .args(["-q", "-Y", "sign", "-n", "aea-approval", "-f"])
        .arg(&key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut sign.stdin.take().unwrap(), data).unwrap();
    let signature = String::from_utf8(sign.wait_with_output().unwrap().stdout).unwrap();
    let rounds = if full { 2000 } else { 20 };
    let start = Instant::now();
    for _ in 0..rounds {
        assert!(list.verify("aea-approval", data, &signature).is_ok());
    }
    ApprovalRows {
        approved: n,
        check_off,
        check_on,
        process_off,
        process_on,
        verify_one: start.elapsed() / rounds,
    }
}

fn print_approvals(rows: &ApprovalRows) {
    let n = rows.approved;
    println!("signed approvals, {}", build_name());
    for (name, f) in [
        (
            format!("check, {n} approved gated, first run, unsigned"),
            &rows.check_off,
        ),
        (
            format!("check, {n} approved gated, first run, verified"),
            &rows.check_on,
        ),
        (
            "process approved gated, signatures off".to_string(),
            &rows.process_off,
        ),
        (
            "process approved gated, signed, verified".to_string(),
            &rows.process_on,
        ),
    ] {
        println!(
            "{name:<52} {:>10} {:>10} {:>7} KiB",
            ms(f.median),
            ms(f.p95),
            f.peak_kib
        );
    }
    let per =
        rows.check_on.median.saturating_sub(rows.check_off.median) / u32::try_from(n).unwrap();
    let one = format!("{:.3} ms", rows.verify_one.as_secs_f64() * 1000.0);
    println!(
        "{:<52} {one:>10}   (check: {:.3} ms per approved message)",
        "verify one approval in-process",
        per.as_secs_f64() * 1000.0
    );
}
