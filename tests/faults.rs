//! The fault suite (issue 11): real `aea` processes killed with SIGKILL at
//! random moments, then the invariants that must hold whatever the moment
//! was. The moments come from a seeded generator: a failure prints its
//! seed, and `AEA_FAULT_SEED=<seed> cargo test faults` replays it.
//!
//! The waits before a kill are the random moment itself, not a stand-in
//! for "ready".

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use crate::common::*;

/// xorshift64*: small, seeded, good enough to spread kill moments.
struct Rng(u64);

impl Rng {
    fn from_env(test: &str) -> Self {
        let seed = std::env::var("AEA_FAULT_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x5eed_2026);
        eprintln!("{test}: AEA_FAULT_SEED={seed}");
        Rng(seed | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Runs `args` in `dir` and kills it after `micros` microseconds (it may
/// have finished by then). Returns whether it finished on its own, with
/// success.
fn kill_after(env: &TestEnv, dir: &Path, args: &[&str], micros: u64) -> bool {
    let mut child = env
        .cmd(dir)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_micros(micros));
    let _ = child.kill();
    child.wait().is_ok_and(|status| status.success())
}

/// How long one run of `args` takes here, in microseconds: the kill
/// moments are spread over twice that, so they land before, during and
/// after the work whatever the machine's speed.
fn window(env: &TestEnv, dir: &Path, args: &[&str]) -> u64 {
    let start = std::time::Instant::now();
    let out = env.run(dir, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    (start.elapsed().as_micros() as u64).max(1_000) * 2
}

/// The `key` of every `event` line in `repo`'s log.
fn logged(repo: &Path, event: &str, key: &str) -> HashSet<String> {
    std::fs::read_to_string(repo.join(".aea/agent.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|l| l["event"] == event)
        .filter_map(|l| l[key].as_str().map(str::to_string))
        .collect()
}

/// `aea doctor --fix` in `repo`; what it fixed.
fn doctor_fix(env: &TestEnv, repo: &Path) -> Vec<String> {
    let out = env.run(repo, &["doctor", "--fix", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor --fix --json: {e}: {}", stderr(&out)));
    report["fixed"]
        .as_array()
        .map(|a| a.iter().map(|f| f.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

fn staging_files(aea: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for dir in [aea.to_path_buf(), aea.join(".tmp")] {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(".deliver.") {
                found.push(name);
            }
        }
    }
    found
}

/// Sends killed at random moments: the inbox never holds a partial or
/// duplicated message, every `sent/` copy is of a delivered message, and
/// no staging file survives the next command in the folder.
#[test]
fn killed_sends_leave_no_partial_mail_no_duplicates_and_no_staging() {
    let mut rng = Rng::from_env("killed_sends");
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let body = env.path().join("body.txt");
    std::fs::write(&body, "b".repeat(200_000)).unwrap();
    let span = window(
        &env,
        &api,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "update",
            "--subject",
            "calibration",
            "--body-file",
            body.to_str().unwrap(),
        ],
    );
    for round in 0..120 {
        // Sizes up to 400 KB, so a kill can land while the file is written.
        std::fs::write(&body, "b".repeat(rng.below(400_000) as usize)).unwrap();
        let subject = format!("round {round}");
        kill_after(
            &env,
            &api,
            &[
                "send",
                "--to",
                "web",
                "--type",
                "update",
                "--subject",
                &subject,
                "--body-file",
                body.to_str().unwrap(),
            ],
            rng.below(span),
        );
    }
    let report = env.json(&web, &["check"]);
    assert_eq!(
        report["invalid"].as_array().unwrap().len(),
        0,
        "a partial message reached the inbox: {report}"
    );
    let ids: Vec<String> = report["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    let distinct: HashSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), ids.len(), "a message delivered twice");
    let staged = staging_files(&web.join(".aea")).len() + staging_files(&api.join(".aea")).len();
    eprintln!(
        "killed_sends: {} of 121 delivered, {staged} staging files left by kills",
        ids.len()
    );
    // The kills must land at different moments, or this tests nothing.
    assert!(
        ids.len() > 5 && ids.len() < 115,
        "{} of 121 delivered: the kill moments do not spread",
        ids.len()
    );
    // Every sent/ copy is of a message that was delivered.
    for entry in std::fs::read_dir(api.join(".aea/sent")).unwrap().flatten() {
        let copy: serde_json::Value =
            serde_json::from_slice(&std::fs::read(entry.path()).unwrap()).unwrap();
        let id = copy["message_id"].as_str().unwrap().to_string();
        assert!(distinct.contains(&id), "sent/ holds {id}, never delivered");
    }
    // The next command in each folder sweeps what killed sends staged.
    env.ok(&web, &["check"]);
    env.ok(&api, &["check"]);
    assert_eq!(staging_files(&web.join(".aea")), Vec::<String>::new());
    assert_eq!(staging_files(&api.join(".aea")), Vec::<String>::new());
    // What a kill cut short is finished from the records and the inbox:
    // every delivered message then has its sent/ copy and both log lines.
    let fixed = doctor_fix(&env, &api).len() + doctor_fix(&env, &web).len();
    eprintln!("killed_sends: doctor --fix finished {fixed} thing(s)");
    let copies: HashSet<String> = std::fs::read_dir(api.join(".aea/sent"))
        .unwrap()
        .flatten()
        .map(|e| {
            let copy: serde_json::Value =
                serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap();
            copy["message_id"].as_str().unwrap().to_string()
        })
        .collect();
    let sent = logged(&api, "sent", "message");
    let delivered = logged(&web, "delivered", "message");
    for id in &distinct {
        assert!(copies.contains(*id), "{id} delivered, no sent/ copy");
        assert!(sent.contains(*id), "{id} delivered, no sent line");
        assert!(delivered.contains(*id), "{id} delivered, no delivered line");
    }
    assert_eq!(copies.len(), distinct.len(), "a sent/ copy twice");
    for repo in [&api, &web] {
        let out = env.run(repo, &["doctor", "--json"]);
        let after: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for check in after["checks"].as_array().unwrap() {
            if ["sends", "log", "claims", "staging"].contains(&check["check"].as_str().unwrap()) {
                assert_eq!(check["ok"], true, "{check}");
            }
        }
    }
}

/// `process` killed at random moments: no claim of a dead process blocks
/// a message afterwards, and every message ends processed exactly once.
#[test]
fn killed_process_runs_leave_no_blocking_claims() {
    let mut rng = Rng::from_env("killed_process");
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let ids: Vec<String> = (0..40)
        .map(|i| env.question(&api, "web", &format!("q{i}")))
        .collect();
    // A `process` costs about what a `check` does; the first run of either
    // pays for verifying the senders and would stretch the window.
    env.ok(&web, &["process", &ids[0]]);
    let span = window(&env, &web, &["check"]);
    for id in &ids[1..] {
        kill_after(&env, &web, &["process", id], rng.below(span));
    }
    let processed = env.json(&web, &["check"])["unprocessed"].as_u64().unwrap();
    eprintln!("killed_process: {processed} of 39 left unprocessed by kills");
    // A marker whose log line a kill cut off gets it back from the marker.
    let fixed = doctor_fix(&env, &web);
    eprintln!("killed_process: doctor --fix: {fixed:?}");
    let lines = logged(&web, "processed", "file");
    for marker in std::fs::read_dir(web.join(".aea/.processed"))
        .unwrap()
        .flatten()
    {
        let name = marker.file_name().to_string_lossy().into_owned();
        assert!(lines.contains(&name), "{name} processed, no log line");
    }
    assert!(
        processed > 0 && processed < 39,
        "{processed} of 39 unprocessed: the kill moments do not spread"
    );
    for id in &ids {
        let out = env.run(&web, &["process", id]);
        let said = stderr(&out);
        assert!(
            out.status.success() || said.contains("already processed"),
            "{id}: {said}"
        );
        assert!(!said.contains("being processed by"), "{id}: {said}");
    }
    let report = env.json(&web, &["check"]);
    assert_eq!(report["unprocessed"], 0, "{report}");
    let claims = std::fs::read_dir(web.join(".aea/.claims")).unwrap().count();
    assert_eq!(claims, 0, "claims left behind");
}

/// `gc` killed at random moments, then run to the end: every message is in
/// exactly one place, none archived twice, none lost.
#[test]
fn killed_gc_runs_lose_and_duplicate_nothing() {
    let mut rng = Rng::from_env("killed_gc");
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let ids: Vec<String> = (0..60)
        .map(|i| env.question(&api, "web", &format!("old {i}")))
        .collect();
    for id in &ids {
        env.ok(&web, &["process", id, "--outcome", "ignored"]);
    }
    let later = |args: &[&str]| {
        env.cmd(&web)
            .env("AEA_TEST_NOW", "2099-01-01T00:00:00.000Z")
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let span = window(&env, &web, &["check"]) * 3;
    for _ in 0..25 {
        let mut child = later(&["gc"]);
        std::thread::sleep(Duration::from_micros(rng.below(span)));
        let _ = child.kill();
        let _ = child.wait();
    }
    let status = later(&["gc"]).wait().unwrap();
    assert!(status.success(), "the last gc finishes the job");
    let names = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| {
                n.starts_with("message-") && Path::new(n).extension().is_some_and(|e| e == "json")
            })
            .collect()
    };
    let inbox = names(&web.join(".aea"));
    let archived = names(&web.join(".aea/.archive"));
    assert!(inbox.is_empty(), "left in the inbox: {inbox:?}");
    let distinct: HashSet<&String> = archived.iter().collect();
    assert_eq!(distinct.len(), ids.len(), "archived: {archived:?}");
    assert_eq!(archived.len(), ids.len(), "something archived twice");
}

/// A send with `--idempotency-key`, killed at a random moment and then
/// retried: every message ends delivered exactly once, with exactly one
/// `sent/` copy, under the id recorded before the first delivery.
#[test]
fn a_killed_send_retried_with_its_key_is_delivered_exactly_once() {
    killed_sends_retried("keyed_sends", true);
}

/// The same without a key: the plain retry of an interrupted send is
/// recognised by the record the send left (issue 11).
#[test]
fn a_killed_send_retried_as_is_is_delivered_exactly_once() {
    killed_sends_retried("plain_sends", false);
}

fn killed_sends_retried(test: &str, keyed: bool) {
    let mut rng = Rng::from_env(test);
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let db = env.repo("db");
    let args = |round: usize| -> Vec<String> {
        let mut argv: Vec<String> = [
            "send",
            "--to",
            "web",
            "--to",
            "db",
            "--type",
            "update",
            "--subject",
        ]
        .iter()
        .map(ToString::to_string)
        .chain([format!("{test} {round}")])
        .collect();
        if keyed {
            argv.extend(["--idempotency-key".to_string(), format!("job-{round}")]);
        }
        argv
    };
    let first: Vec<String> = args(999);
    let first: Vec<&str> = first.iter().map(String::as_str).collect();
    let span = window(&env, &api, &first);
    let mut killed = 0;
    for round in 0..40 {
        let owned = args(round);
        let argv: Vec<&str> = owned.iter().map(String::as_str).collect();
        let finished = kill_after(&env, &api, &argv, rng.below(span));
        // The retry a caller makes after seeing no answer. With a key it
        // may retry whatever it saw; without, a send that succeeded and is
        // sent again is a new message.
        killed += usize::from(!finished);
        if keyed || !finished {
            env.ok(&api, &argv);
        }
    }
    for repo in [&web, &db] {
        let report = env.json(repo, &["check"]);
        let subjects: Vec<String> = report["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["subject"].as_str().unwrap().to_string())
            .collect();
        let distinct: HashSet<&String> = subjects.iter().collect();
        assert_eq!(distinct.len(), 41, "{}: {subjects:?}", repo.display());
        assert_eq!(subjects.len(), 41, "a message arrived twice");
    }
    eprintln!("{test}: {killed} of 40 sends killed before they finished");
    assert!(killed > 5, "the kill moments do not spread");
    let copies = std::fs::read_dir(api.join(".aea/sent")).unwrap().count();
    assert_eq!(copies, 41, "one sent/ copy per message");
    // Every send finished (the retries did), keyed or not: no record says
    // otherwise, so doctor never looks for their copies again.
    for entry in std::fs::read_dir(api.join(".aea/.sent-keys"))
        .unwrap()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
    {
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(entry.path()).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", entry.path().display()));
        assert!(record["finished"].is_string(), "unfinished: {record}");
    }
}

/// The retry itself killed at a random moment, then retried again: an
/// interrupted send (here one that reached web, not db, with its process
/// gone) is taken over by the retry, and a kill while the retry took it
/// over must not lose the id. It did: the record was moved away and
/// written anew, and a kill between the two left no record, so the next
/// retry sent a new message and web got it twice.
#[test]
fn a_killed_retry_retried_again_is_delivered_exactly_once() {
    let mut rng = Rng::from_env("killed_retries");
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let db = env.repo("db");
    let argv = |round: usize| -> Vec<String> {
        [
            "send",
            "--to",
            "web",
            "--to",
            "db",
            "--type",
            "update",
            "--subject",
        ]
        .iter()
        .map(ToString::to_string)
        .chain([format!("retry {round}")])
        .collect()
    };
    let gone = {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    };
    let mut span = 0;
    for round in 0..30 {
        let owned = argv(round);
        let argv: Vec<&str> = owned.iter().map(String::as_str).collect();
        if round == 0 {
            span = window(&env, &api, &argv);
        } else {
            env.ok(&api, &argv);
        }
        // What a send killed after web and before db leaves: db without
        // the message, no sent/ copy, the record of a process that is gone.
        let id = {
            let report = env.json(&db, &["check"]);
            let found = report["messages"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["subject"] == format!("retry {round}"))
                .unwrap()
                .clone();
            let path = db.join(".aea").join(found["file"].as_str().unwrap());
            std::fs::remove_file(path).unwrap();
            found["id"].as_str().unwrap().to_string()
        };
        for entry in std::fs::read_dir(api.join(".aea/sent")).unwrap().flatten() {
            let text = std::fs::read_to_string(entry.path()).unwrap();
            if text.contains(&id) {
                std::fs::remove_file(entry.path()).unwrap();
            }
        }
        for entry in std::fs::read_dir(api.join(".aea/.sent-keys"))
            .unwrap()
            .flatten()
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        {
            let mut record: serde_json::Value =
                serde_json::from_slice(&std::fs::read(entry.path()).unwrap()).unwrap();
            if record["message_id"] == id.as_str() {
                let object = record.as_object_mut().unwrap();
                object.remove("finished");
                object.insert("pid".into(), gone.into());
                std::fs::write(entry.path(), serde_json::to_vec(&record).unwrap()).unwrap();
            }
        }
        kill_after(&env, &api, &argv, rng.below(span));
        env.ok(&api, &argv);
        for repo in [&web, &db] {
            let report = env.json(repo, &["check"]);
            let ids: Vec<&str> = report["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["subject"] == format!("retry {round}"))
                .map(|m| m["id"].as_str().unwrap())
                .collect();
            assert_eq!(ids, [id.as_str()], "round {round}, {}", repo.display());
        }
    }
}
