//! Guarantees under real concurrent processes: atomic, never-overwriting
//! delivery with a reader running, and claims that exclude each other.

use crate::common::*;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

#[test]
fn stress_four_senders_times_250_with_a_reader_loses_nothing() {
    const SENDERS: usize = 4;
    const EACH: usize = 250;
    let env = TestEnv::new();
    let web = env.repo("web");
    let senders: Vec<_> = (0..SENDERS)
        .map(|i| env.repo(&format!("sender{i}")))
        .collect();
    let done = Arc::new(AtomicBool::new(false));

    let env = Arc::new(env);
    let reader = {
        let (env, web, done) = (Arc::clone(&env), web.clone(), Arc::clone(&done));
        thread::spawn(move || {
            let mut reads = 0;
            let mut max_seen = 0;
            while !done.load(Ordering::SeqCst) || reads == 0 {
                let out = env.run(&web, &["--json", "check"]);
                assert!(out.status.success(), "{}", stderr(&out));
                let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                let invalid = v["invalid"].as_array().unwrap();
                assert!(
                    invalid.is_empty(),
                    "a reader saw a partial or broken file: {invalid:?}"
                );
                let seen = v["unprocessed"].as_u64().unwrap();
                assert!(
                    seen >= max_seen,
                    "messages disappeared: {seen} < {max_seen}"
                );
                max_seen = seen;
                reads += 1;
            }
            reads
        })
    };

    let start = Arc::new(Barrier::new(SENDERS));
    let workers: Vec<_> = senders
        .iter()
        .enumerate()
        .map(|(i, repo)| {
            let (env, repo, start) = (Arc::clone(&env), repo.clone(), Arc::clone(&start));
            thread::spawn(move || {
                start.wait();
                for n in 0..EACH {
                    let subject = format!("sender {i} message {n}");
                    let out = env.run(
                        &repo,
                        &[
                            "send",
                            "--to",
                            "web",
                            "--type",
                            "update",
                            "--subject",
                            &subject,
                            "--body",
                            "x",
                        ],
                    );
                    assert!(out.status.success(), "{subject}: {}", stderr(&out));
                }
            })
        })
        .collect();
    // Bounded joins: a sender stuck on a lock must fail the test, not hang it.
    for w in workers {
        join_within(w, Duration::from_secs(300), "a sender thread");
    }
    done.store(true, Ordering::SeqCst);
    let reads = join_within(reader, Duration::from_secs(60), "the reader thread");
    assert!(reads > 1, "the reader ran while files arrived");

    let files = inbox_files(&web);
    assert_eq!(files.len(), SENDERS * EACH, "exactly one file per send");
    let mut ids = HashSet::new();
    let mut subjects = HashSet::new();
    for name in &files {
        let bytes = std::fs::read(web.join(".aea").join(name)).unwrap();
        let m: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        ids.insert(m["message_id"].as_str().unwrap().to_string());
        subjects.insert(m["message"]["subject"].as_str().unwrap().to_string());
    }
    assert_eq!(ids.len(), SENDERS * EACH, "distinct message ids");
    assert_eq!(
        subjects.len(),
        SENDERS * EACH,
        "every message arrived, none overwritten"
    );
    let report = env.json(&web, &["check"]);
    assert_eq!(report["unprocessed"], SENDERS * EACH);
    assert!(report["invalid"].as_array().unwrap().is_empty());
    assert_eq!(
        std::fs::read_dir(web.join(".aea/.tmp")).unwrap().count(),
        0,
        "no staged file is left behind"
    );
    let delivered = env.ok(&web, &["--json", "log", "--event", "delivered"]);
    assert_eq!(
        delivered.lines().count(),
        SENDERS * EACH,
        "one log line per delivery"
    );
}

#[test]
fn two_senders_in_the_same_millisecond_both_land() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    // A fixed clock and the same seed make both sends pick the same file
    // name first: the second must notice and take another.
    for subject in ["first", "second"] {
        let out = env
            .cmd(&api)
            .env("AEA_TEST_NOW", "2026-11-21T10:00:00.123Z")
            .env("AEA_TEST_SEED", "7")
            .args([
                "send",
                "--to",
                "web",
                "--type",
                "update",
                "--subject",
                subject,
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let files = inbox_files(&web);
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(
        files
            .iter()
            .all(|f| f.starts_with("message-20261121T100000123Z-from-api-"))
    );
    let subjects: HashSet<String> = files
        .iter()
        .map(|f| {
            let m: serde_json::Value =
                serde_json::from_slice(&std::fs::read(web.join(".aea").join(f)).unwrap()).unwrap();
            m["message"]["subject"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(
        subjects,
        HashSet::from(["first".to_string(), "second".to_string()])
    );
}

#[test]
fn two_concurrent_process_calls_one_wins() {
    const ROUNDS: usize = 15;
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let ids: Vec<String> = (0..ROUNDS)
        .map(|i| env.question(&api, "web", &format!("q{i}")))
        .collect();
    let env = Arc::new(env);
    for id in &ids {
        let barrier = Arc::new(Barrier::new(2));
        let racers: Vec<_> = (0..2)
            .map(|_| {
                let (env, web, id, barrier) = (
                    Arc::clone(&env),
                    web.clone(),
                    id.clone(),
                    Arc::clone(&barrier),
                );
                thread::spawn(move || {
                    let mut cmd = env.cmd(&web);
                    cmd.args(["process", &id]);
                    barrier.wait();
                    cmd.output().unwrap()
                })
            })
            .collect();
        let outs: Vec<_> = racers
            .into_iter()
            .map(|r| join_within(r, Duration::from_secs(60), "an `aea process` racer"))
            .collect();
        let wins = outs.iter().filter(|o| o.status.success()).count();
        assert_eq!(wins, 1, "exactly one process wins for {id}");
        let loser = outs.iter().find(|o| !o.status.success()).unwrap();
        assert_eq!(code(loser), 1, "{}", stderr(loser));
        let err = stderr(loser);
        assert!(
            err.contains("already processed") || err.contains("being processed"),
            "{err}"
        );
    }
    let processed = env.ok(&web, &["--json", "log", "--event", "processed"]);
    assert_eq!(
        processed.lines().count(),
        ROUNDS,
        "one processed event per message"
    );
    assert_eq!(
        std::fs::read_dir(env.state(&web).join("claims"))
            .unwrap()
            .count(),
        0,
        "claims released"
    );
}

/// Sends with the same `--idempotency-key` at the same time (a caller
/// whose timeout fired while the first was still running): the key
/// promises one delivery, and eight at once delivered the message seven
/// times (same id, each judged the recipient not to hold it yet). The
/// second waits for the first, then finds everything delivered.
#[test]
fn concurrent_sends_with_one_key_deliver_once() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    for round in 0..4 {
        let key = format!("deploy-{round}");
        let children: Vec<std::process::Child> = (0..8)
            .map(|_| {
                env.cmd(&api)
                    .args([
                        "--json",
                        "send",
                        "--to",
                        "web",
                        "--type",
                        "update",
                        "--subject",
                        "deployed",
                        "--idempotency-key",
                        &key,
                    ])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut ids = HashSet::new();
        for child in children {
            let out = output_within(child, Duration::from_secs(60), "send");
            assert_eq!(code(&out), 0, "{}", stderr(&out));
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            ids.insert(v["message_id"].as_str().unwrap().to_string());
        }
        assert_eq!(ids.len(), 1, "{ids:?}");
        assert_eq!(
            inbox_files(&web).len(),
            round + 1,
            "{key} delivered more than once"
        );
        let copies = std::fs::read_dir(env.state(&api).join("sent"))
            .unwrap()
            .count();
        assert_eq!(copies, round + 1, "{key}: more than one sent/ copy");
    }
}
