//! A sealed environment for driving the real `aea` binary: its own HOME,
//! registry and git config, a fixed user, and helpers to run commands.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

mod checks;
mod git;
mod machines;
mod users;

pub use checks::*;
pub use git::assert_commit_blocked;
pub use machines::*;
pub use users::*;

pub const BIN: &str = env!("CARGO_BIN_EXE_aea");

pub struct TestEnv {
    pub root: TempDir,
    /// Variables every command of this environment gets (fault points).
    vars: std::sync::Mutex<Vec<(String, String)>>,
}

/// The PATH of this process with the folder of the aea under test first:
/// aea installed, as the hooks committed files call find it.
pub fn installed_path() -> std::ffi::OsString {
    let mut dirs = vec![Path::new(BIN).parent().unwrap().to_path_buf()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

impl TestEnv {
    pub fn new() -> Self {
        let root = tempfile::Builder::new()
            .prefix("aea-test-")
            .tempdir()
            .unwrap();
        std::fs::create_dir(root.path().join("home")).unwrap();
        TestEnv {
            root,
            vars: std::sync::Mutex::default(),
        }
    }

    pub fn path(&self) -> PathBuf {
        std::fs::canonicalize(self.root.path()).unwrap()
    }

    pub fn registry(&self) -> PathBuf {
        self.path().join("home").join("registry.toml")
    }

    /// The private state of `repo` in this environment (`aea::layout`):
    /// in its git directory, or for a folder outside git (as
    /// [`TestEnv::repo`] makes them) in this HOME's state directory.
    pub fn state(&self, repo: &Path) -> PathBuf {
        let repo = std::fs::canonicalize(repo).unwrap();
        let user_state = self.path().join("home/.local/state/aea");
        aea::layout::Layout::with_user_state(&repo, Some(&user_state))
            .state()
            .to_path_buf()
    }

    /// Runs `aea check` in `repo` until aea made its quiet marker (the
    /// pre-commit script then skips aea): once the inbox has been still
    /// for aea's settle time. The report aea remembered is dropped before
    /// each: one a git hook remembered (git runs them with aea's own 2 s
    /// settle time, not this environment's) would be answered from, and
    /// the marker never looked at again.
    pub fn until_quiet(&self, repo: &Path) {
        let seen = self.state(repo).join("seen");
        assert!(
            poll_until(Duration::from_secs(10), || {
                let _ = std::fs::remove_file(seen.join("report.json"));
                self.ok(repo, &["check"]);
                seen.join("quiet").is_dir()
            }),
            "aea never found {} quiet",
            repo.display()
        );
    }

    /// Where aea keeps the private keys in this environment's HOME.
    pub fn keys_dir(&self) -> PathBuf {
        self.path().join("home/.config/aea/keys")
    }

    /// The public key (`ed25519:<hex>`) of agent `id` on this machine,
    /// creating its key if `aea init` has not yet.
    pub fn public_key(&self, id: &str) -> String {
        let (key, _) = aea::identity::load_or_create_key(&self.keys_dir(), id).unwrap();
        aea::identity::public_text(&key.verifying_key())
    }

    /// Signs `value` (a message) again with its claimed sender's key, as that
    /// sender could after changing it.
    pub fn resign(&self, value: &mut Value) {
        if let Some(object) = value.as_object_mut() {
            object.remove("signature");
        }
        let mut message = aea::message::parse(&serde_json::to_vec(value).unwrap(), None).unwrap();
        let key = aea::identity::load_key(&self.keys_dir(), &message.from.agent_id)
            .unwrap()
            .expect("the sender has a key");
        aea::identity::sign(&mut message, &key);
        *value = serde_json::from_slice(&message.to_json()).unwrap();
    }

    /// A command with a sealed environment, run in `dir`.
    pub fn cmd(&self, dir: &Path) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.env_clear()
            .env("PATH", installed_path())
            .env("HOME", self.path().join("home"))
            .env("USER", "tester")
            .env("AEA_REGISTRY", self.registry())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            // What aea remembers of an inbox counts once it lay unchanged
            // for 20 ms instead of 2 s: every test then also runs against
            // remembered answers, and any change one misses fails it.
            .env("AEA_TEST_SEEN_SETTLE_MS", "20")
            .envs(self.vars.lock().unwrap().iter().map(|(k, v)| (k, v)))
            .current_dir(dir);
        cmd
    }

    /// Gives every later command of this environment `name=value`.
    pub fn set_var(&self, name: &str, value: &str) {
        self.vars.lock().unwrap().push((name.into(), value.into()));
    }

    pub fn run(&self, dir: &Path, args: &[&str]) -> Output {
        self.cmd(dir).args(args).output().unwrap()
    }

    /// Runs and asserts success, returning stdout.
    pub fn ok(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.run(dir, args);
        assert!(
            out.status.success(),
            "aea {args:?} failed with {:?}\nstdout: {}\nstderr: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs with `--json` and parses stdout.
    pub fn json(&self, dir: &Path, args: &[&str]) -> Value {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        let text = self.ok(dir, &full);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    /// Creates and initialises a repository `name` under the root.
    pub fn repo(&self, name: &str) -> PathBuf {
        let dir = self.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        self.ok(&dir, &["init", "--no-agent-files"]);
        dir
    }

    /// Sends from `from` to `to` and returns the new message id.
    pub fn send(&self, from: &Path, to: &str, extra: &[&str]) -> String {
        let mut args = vec!["send", "--to", to];
        args.extend_from_slice(extra);
        let mut full = vec!["--json"];
        full.extend_from_slice(&args);
        let v: Value = serde_json::from_str(&self.ok(from, &full)).unwrap();
        v["message_id"].as_str().unwrap().to_string()
    }

    /// Runs a minimal `send` of an update from `from` to `to`.
    pub fn update(&self, from: &Path, to: &str) -> Output {
        self.run(
            from,
            &["send", "--to", to, "--type", "update", "--subject", "s"],
        )
    }

    /// aea's short reference (what hooks print) of the unprocessed message
    /// `id` in `repo`, as `check --json` gives it.
    pub fn short_ref(&self, repo: &Path, id: &str) -> String {
        let report = self.json(repo, &["check", "--all"]);
        report["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no unprocessed message {id}: {report}"))["ref"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Sends an urgent message of `kind` (gated: it waits for a person and
    /// blocks commits) from `from` to `to`; its id.
    pub fn urgent(&self, from: &Path, to: &str, kind: &str, subject: &str) -> String {
        self.send(
            from,
            to,
            &[
                "--type",
                kind,
                "--priority",
                "urgent",
                "--subject",
                subject,
                "--body",
                "b",
            ],
        )
    }

    pub fn question(&self, from: &Path, to: &str, subject: &str) -> String {
        self.send(
            from,
            to,
            &["--type", "question", "--subject", subject, "--body", "b"],
        )
    }
}

/// Every `.rs` file below `dir`, into `out`.
pub fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `git` in `dir` with no user or system config and a fixed author; the
/// rest of the environment is inherited unless the caller clears it.
pub fn git_command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Tester")
        .env("GIT_AUTHOR_EMAIL", "tester@example.com")
        .env("GIT_COMMITTER_NAME", "Tester")
        .env("GIT_COMMITTER_EMAIL", "tester@example.com")
        .current_dir(dir);
    cmd
}

pub fn code(out: &Output) -> i32 {
    out.status.code().expect("exited normally")
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Names of the message files directly in `repo/.aea/`.
pub fn inbox_files(repo: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo.join(".aea"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| aea::message::is_message_file_name(n))
        .collect();
    names.sort();
    names
}

/// Names of the message files `repo` received, waiting or processed: in
/// its `.aea/` and in `processed/` of its private state `state`, where
/// `aea process` moves them.
pub fn received_files(repo: &Path, state: &Path) -> Vec<String> {
    let mut names = inbox_files(repo);
    names.extend(
        std::fs::read_dir(state.join("processed"))
            .into_iter()
            .flatten()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| aea::message::is_message_file_name(n)),
    );
    names.sort();
    names
}

/// Writes `bytes` as `repo/.aea/name`, as any process that can write the
/// inbox can; the file's path.
pub fn plant(repo: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let path = repo.join(".aea").join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Writes the message `value` as `repo/.aea/name`, as [`plant`] does.
pub fn plant_json(repo: &Path, name: &str, value: &Value) -> PathBuf {
    plant(repo, name, serde_json::to_vec_pretty(value).unwrap())
}

/// The name of the file in `repo/.aea/` whose `message_id` is `id` (not
/// one that only mentions it, as a reply does).
pub fn file_of(repo: &Path, id: &str) -> String {
    inbox_files(repo)
        .into_iter()
        .find(|n| {
            std::fs::read(repo.join(".aea").join(n))
                .ok()
                .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
                .is_some_and(|v| v["message_id"] == id)
        })
        .unwrap_or_else(|| panic!("no inbox file holds {id}"))
}

/// Makes `path` executable (a hook, a script a test writes).
pub fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Asks `done` every 20 ms for at most `limit`: whether it said yes. For
/// what a background process leaves on disk, never for a fixed wait.
pub fn poll_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

/// Every file under `dir`, with its bytes: a snapshot to prove nothing changed.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                out.push((path.clone(), std::fs::read(&path).unwrap()));
            } else {
                out.push((path.clone(), Vec::new()));
            }
        }
    }
    out.sort();
    out
}

/// The lines a child process writes to one of its pipes, read on a thread
/// so that waiting for a line can give up at a deadline: a process that
/// never says it is ready fails the test instead of hanging it.
pub struct Lines {
    rx: Receiver<String>,
    seen: Vec<String>,
}

impl Lines {
    /// Starts reading `pipe` (e.g. `child.stderr.take().unwrap()`).
    pub fn read(pipe: impl Read + Send + 'static) -> Self {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Lines {
            rx,
            seen: Vec::new(),
        }
    }

    /// Waits at most `limit` for a line that satisfies `want` and returns
    /// it; panics naming `what` and every line seen so far otherwise (also
    /// when the pipe closes first, i.e. the process ended).
    pub fn wait_for(&mut self, what: &str, limit: Duration, want: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if want(&line) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no {what} within {limit:?}; lines so far: {:?}", self.seen)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the pipe closed before {what}; lines: {:?}", self.seen)
                }
            }
        }
    }
}

impl Lines {
    /// Waits at most `limit` for the pipe to close (every process holding
    /// its write end is gone); panics naming `what` if a line comes or the
    /// time runs out first.
    pub fn wait_closed(&mut self, what: &str, limit: Duration) {
        match self.rx.recv_timeout(limit) {
            Err(RecvTimeoutError::Disconnected) => {}
            Ok(line) => panic!("{what}: another line {line:?} after {:?}", self.seen),
            Err(RecvTimeoutError::Timeout) => {
                panic!("{what}: still open after {limit:?}; lines: {:?}", self.seen)
            }
        }
    }
}

/// Joins `handle`, failing the test with `what` if the thread is still
/// running after `limit` (a hung child or a peer that never connected must
/// not hang the test run). A panic in the thread is passed on.
pub fn join_within<T>(handle: JoinHandle<T>, limit: Duration, what: &str) -> T {
    let deadline = Instant::now() + limit;
    while !handle.is_finished() {
        assert!(
            Instant::now() < deadline,
            "{what} did not finish within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    match handle.join() {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Waits for `child` to exit and collects its output, like
/// `wait_with_output`, failing the test with `what` — after killing the
/// child — if it is still running after `limit` (a prompt waiting for
/// input it never gets must not hang the test run). Its stdin, if piped,
/// is closed first.
pub fn output_within(mut child: Child, limit: Duration, what: &str) -> Output {
    fn drain(pipe: Option<impl Read + Send + 'static>) -> Option<JoinHandle<Vec<u8>>> {
        pipe.map(|mut pipe| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                let _ = pipe.read_to_end(&mut bytes);
                bytes
            })
        })
    }
    drop(child.stdin.take());
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not exit within {limit:?}; killed it");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // A grandchild may still hold a pipe open: bounded as well.
    let collect = |pipe: Option<JoinHandle<Vec<u8>>>| {
        pipe.map(|h| join_within(h, limit, &format!("reading the output of {what}")))
            .unwrap_or_default()
    };
    Output {
        status,
        stdout: collect(out),
        stderr: collect(err),
    }
}

/// The fixed clock of snapshot tests.
pub const NOW: &str = "2026-11-21T10:00:00.000Z";

/// Runs commands with the clock fixed and the id generator seeded, a new
/// seed for each command (one seed for all would give two messages the
/// same id), so that a test's outputs are the same on every run.
pub struct Fixed<'a> {
    pub env: &'a TestEnv,
    seed: std::cell::Cell<u64>,
}

impl<'a> Fixed<'a> {
    pub fn new(env: &'a TestEnv) -> Self {
        Fixed {
            env,
            seed: std::cell::Cell::new(1),
        }
    }

    /// The command, sealed, with the fixed clock and the next seed.
    pub fn cmd(&self, dir: &Path) -> Command {
        let seed = self.seed.get();
        self.seed.set(seed + 1);
        let mut cmd = self.env.cmd(dir);
        cmd.env("AEA_TEST_NOW", NOW)
            .env("AEA_TEST_SEED", seed.to_string());
        cmd
    }

    pub fn run(&self, dir: &Path, args: &[&str]) -> Output {
        self.cmd(dir).args(args).output().unwrap()
    }

    /// Runs and returns stdout, asserting success.
    pub fn ok(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.run(dir, args);
        assert!(
            out.status.success(),
            "aea {args:?} failed with {:?}\nstdout: {}\nstderr: {}",
            out.status.code(),
            stdout(&out),
            stderr(&out)
        );
        stdout(&out)
    }

    /// Runs and renders stdout, stderr and the exit status as one
    /// normalised text (see [`TestEnv::render`]).
    pub fn render(&self, dir: &Path, args: &[&str]) -> String {
        self.env.render(&self.run(dir, args))
    }
}

impl TestEnv {
    /// `text` with what differs from run to run replaced by placeholders:
    /// this binary's path by `[AEA]`, HOME by `[HOME]`, the temporary root
    /// by `[TEMP]`, and what the fixed clock and seed do not fix -- signing
    /// keys (made from the OS's randomness), their fingerprints, and the
    /// signatures and digests over signed bytes -- by `[KEY]`,
    /// `[FINGERPRINT]` and `[HEX<n>]`.
    pub fn normalise(&self, text: &str) -> String {
        let home = self.path().join("home");
        let mut text = text
            .replace(BIN, "[AEA]")
            .replace(home.to_str().unwrap(), "[HOME]")
            .replace(self.path().to_str().unwrap(), "[TEMP]")
            .replace(self.root.path().to_str().unwrap(), "[TEMP]");
        text = replace_hex_after(&text, "ed25519:", 64, "[KEY]");
        text = replace_hex_after(&text, "SHA256:", 16, "[FINGERPRINT]");
        replace_long_hex(&text, 40)
    }

    /// A command's stdout, stderr and exit status as one normalised text,
    /// the way jj's tests render a command (`cli/tests/common/command_output.rs`):
    /// stdout as is, then stderr under a marker line, then the exit status
    /// when it is not 0. A changed message then shows as a diff in review.
    pub fn render(&self, out: &Output) -> String {
        let mut text = self.normalise(&stdout(out));
        let err = stderr(out);
        if !err.is_empty() {
            text.push_str("------- stderr -------\n");
            text.push_str(&self.normalise(&err));
        }
        match out.status.code() {
            Some(0) => {}
            Some(code) => writeln!(text, "[exit status: {code}]").unwrap(),
            None => writeln!(text, "[killed: {:?}]", out.status).unwrap(),
        }
        text
    }
}

/// Replaces the `len` hex digits after each `prefix` with `placeholder`.
fn replace_hex_after(text: &str, prefix: &str, len: usize, placeholder: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        let (before, after) = rest.split_at(at + prefix.len());
        out.push_str(before);
        let digits = after.chars().take_while(char::is_ascii_hexdigit).count();
        if digits == len {
            out.push_str(placeholder);
            rest = &after[len..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Replaces every run of at least `min` lower-case hex digits (signatures,
/// digests, commit ids) with `[HEX<n>]`, `n` its length.
fn replace_long_hex(text: &str, min: usize) -> String {
    let is_hex = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    for c in text.chars().chain(std::iter::once('\0')) {
        if is_hex(c) {
            run.push(c);
            continue;
        }
        if run.len() >= min {
            write!(out, "[HEX{}]", run.len()).unwrap();
        } else {
            out.push_str(&run);
        }
        run.clear();
        if c != '\0' {
            out.push(c);
        }
    }
    out
}

impl TestEnv {
    /// The `check --json` item of message `id` in `repo`, if it is listed.
    pub fn listed(&self, repo: &Path, id: &str) -> Option<Value> {
        self.json(repo, &["check"])["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] == id)
            .cloned()
    }
}

/// The ids of the messages a `check --json` report lists, in its order.
pub fn report_ids(report: &serde_json::Value) -> Vec<String> {
    report["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

/// How many of aea's short references (`m` and eight hex digits) `text`
/// names.
pub fn refs_named(text: &str) -> usize {
    text.split([' ', ',', '(', ')', ';'])
        .filter(|w| {
            w.len() == 9 && w.starts_with('m') && w[1..].bytes().all(|b| b.is_ascii_hexdigit())
        })
        .count()
}
