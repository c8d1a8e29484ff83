//! Housekeeping under real concurrent processes: `aea gc` run twice at
//! once, readers running while it moves files, odd entries in the inbox,
//! and the audit log rotating while several processes append to it.

use crate::common::*;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

/// When gc runs: everything processed in 2020 is old, everything with an
/// expiry has expired.
const GC_NOW: &str = "2099-01-10T00:00:00Z";
const MARKER: &str =
    r#"{"processed_at":"2020-01-01T00:00:00.000Z","by":"tester","outcome":"done"}"#;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Kind {
    Processed,
    Expiring,
    Broken,
    Waiting,
}

/// Files of one round, by where they must end up.
struct Round {
    names: Vec<(String, Kind)>,
}

/// The bytes of a real signed message of each kind, taken out of the inbox
/// so that each round can lay down fresh copies under new names.
fn templates(env: &TestEnv, api: &Path, web: &Path) -> HashMap<Kind, Vec<u8>> {
    let mut out = HashMap::new();
    for (kind, extra) in [
        (
            Kind::Processed,
            vec!["--type", "question", "--subject", "old"],
        ),
        (
            Kind::Expiring,
            vec!["--type", "update", "--subject", "short", "--expires", "1h"],
        ),
        (
            Kind::Waiting,
            vec!["--type", "question", "--subject", "wait"],
        ),
    ] {
        let mut args = extra;
        args.extend(["--body", "b"]);
        env.send(api, "web", &args);
        let name = inbox_files(web).pop().unwrap();
        let path = web.join(".aea").join(&name);
        out.insert(kind, std::fs::read(&path).unwrap());
        std::fs::remove_file(&path).unwrap();
    }
    out.insert(Kind::Broken, b"{broken".to_vec());
    out
}

/// Lays down one round of files, each written aside and renamed into
/// place (a reader never sees one half written); `broken` hears of the
/// invalid ones before they appear. Of the processed ones, half are aea's
/// own (moved to the private store `state`, with its record and the
/// marker it writes for other readers), half were marked processed by
/// another tool and stay in the inbox.
fn lay_down(
    env: &TestEnv,
    web: &Path,
    state: &Path,
    round: usize,
    templates: &HashMap<Kind, Vec<u8>>,
    broken: &std::sync::Mutex<HashSet<String>>,
) -> Round {
    let aea = web.join(".aea");
    let put = |path: PathBuf, bytes: &[u8]| {
        let aside = aea.join(".tmp").join("laying-down");
        std::fs::write(&aside, bytes).unwrap();
        std::fs::rename(&aside, path).unwrap();
    };
    for folder in ["processed", "records"] {
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(state.join(folder))
            .unwrap();
    }
    // Each copy is a message of its own, with an id of its own: a second
    // file holding an id already accepted would be a replay.
    let fresh = |kind: Kind, n: usize| -> Vec<u8> {
        if kind == Kind::Broken {
            return templates[&kind].clone();
        }
        let mut value: serde_json::Value = serde_json::from_slice(&templates[&kind]).unwrap();
        value["message_id"] = format!("5a1e0000-0000-4000-8000-{n:012x}").into();
        env.resign(&mut value);
        serde_json::to_vec(&value).unwrap()
    };
    let mut names = Vec::new();
    for (k, kind) in [Kind::Processed, Kind::Expiring, Kind::Broken, Kind::Waiting]
        .into_iter()
        .enumerate()
    {
        for i in 0..4 {
            let name = format!(
                "message-20260101T00{round:02}{:02}000Z-from-api-{:08x}.json",
                k * 4 + i,
                round * 100 + k * 10 + i
            );
            if kind == Kind::Broken {
                broken.lock().unwrap().insert(name.clone());
            }
            let bytes = fresh(kind, round * 100 + k * 10 + i);
            if kind == Kind::Processed && i < 2 {
                put(state.join("processed").join(&name), &bytes);
                put(state.join("records").join(&name), MARKER.as_bytes());
            } else {
                put(aea.join(&name), &bytes);
            }
            if kind == Kind::Processed {
                put(aea.join(".processed").join(&name), MARKER.as_bytes());
            }
            names.push((name, kind));
        }
    }
    Round { names }
}

fn names_in(dir: &Path) -> BTreeSet<String> {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect(),
        Err(_) => BTreeSet::new(),
    }
}

/// Every expected file there once (no `name.1` copy), nothing else.
fn assert_same(what: &str, found: &BTreeSet<String>, expected: &BTreeSet<String>) {
    let extra: Vec<_> = found.difference(expected).collect();
    let missing: Vec<_> = expected.difference(found).collect();
    assert!(
        extra.is_empty() && missing.is_empty(),
        "{what}: extra {extra:?}, missing {missing:?}"
    );
}

fn gc_at_once(env: &TestEnv, web: &Path) -> [std::process::Output; 2] {
    // Spawned back to back, waited for after both started: the two run at
    // the same moment as far as the scheduler lets them.
    let spawn = || {
        env.cmd(web)
            .env("AEA_TEST_NOW", GC_NOW)
            .args(["--json", "gc", "--older-than", "7d"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()]
}

#[test]
fn stress_thirty_pairs_of_gc_at_once_move_every_file_exactly_once() {
    const ROUNDS: usize = 30;
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let aea = web.join(".aea");
    let state = env.state(&web);
    let templates = templates(&env, &api, &web);
    let env = Arc::new(env);

    // A reader running the whole time: a file gc moved away between
    // check's listing and its read is moved, never invalid.
    let done = Arc::new(AtomicBool::new(false));
    let broken_names = Arc::new(std::sync::Mutex::new(HashSet::<String>::new()));
    let reader = {
        let (env, web, done, broken) = (
            Arc::clone(&env),
            web.clone(),
            Arc::clone(&done),
            Arc::clone(&broken_names),
        );
        thread::spawn(move || {
            let mut reads = 0;
            while !done.load(Ordering::SeqCst) || reads == 0 {
                let out = env.run(&web, &["--json", "check"]);
                assert!(out.status.success(), "{}", stderr(&out));
                let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                let broken = broken.lock().unwrap().clone();
                for item in v["invalid"].as_array().unwrap() {
                    let file = item["file"].as_str().unwrap();
                    assert!(
                        broken.contains(file),
                        "check reported a message gc moved as invalid: {item}"
                    );
                }
                reads += 1;
            }
            reads
        })
    };

    let mut expected_archive = BTreeSet::new();
    let mut expected_quarantine = BTreeSet::new();
    for round in 0..ROUNDS {
        let laid = lay_down(&env, &web, &state, round, &templates, &broken_names);
        let outs = gc_at_once(&env, &web);
        for out in &outs {
            assert_eq!(code(out), 0, "round {round}: {}", stderr(out));
        }
        // Between them the two runs report every move once.
        let mut reported = Vec::new();
        for out in &outs {
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            for key in ["archived", "expired", "quarantined"] {
                for n in v[key].as_array().unwrap() {
                    reported.push(n.as_str().unwrap().to_string());
                }
            }
        }
        let unique: HashSet<_> = reported.iter().collect();
        assert_eq!(unique.len(), reported.len(), "reported twice: {reported:?}");
        for (name, kind) in &laid.names {
            match kind {
                Kind::Processed => {
                    expected_archive.insert(name.clone());
                }
                Kind::Expiring => {
                    expected_archive.insert(name.clone());
                    expected_archive.insert(format!("{name}.reason"));
                }
                Kind::Broken => {
                    expected_quarantine.insert(name.clone());
                    expected_quarantine.insert(format!("{name}.reason"));
                }
                Kind::Waiting => {}
            }
        }
        assert_eq!(reported.len(), 12, "round {round}: {reported:?}");
    }
    done.store(true, Ordering::SeqCst);
    let reads = join_within(reader, Duration::from_secs(120), "the reader thread");
    assert!(reads > 1, "the reader ran while gc moved files");

    let archive = state.join("archive");
    let mut archived = names_in(&archive);
    for kept in ["records", "markers"] {
        archived.remove(kept);
    }
    assert_same("archived", &archived, &expected_archive);
    let records = names_in(&archive.join("records"));
    assert_eq!(records.len(), ROUNDS * 2, "every record moved along once");
    let markers = names_in(&archive.join("markers"));
    assert_eq!(markers.len(), ROUNDS * 4, "every marker moved along once");
    assert_same(
        "quarantined",
        &names_in(&aea.join(".quarantine")),
        &expected_quarantine,
    );
    assert_eq!(
        inbox_files(&web).len(),
        ROUNDS * 4,
        "the waiting messages stay"
    );
    assert!(names_in(&aea.join(".processed")).is_empty());
    assert!(names_in(&state.join("processed")).is_empty());
    assert!(names_in(&state.join("records")).is_empty());
    // The log says so once per file.
    let log = env.ok(&web, &["--json", "log"]);
    let mut logged: Vec<String> = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| ["archived", "expired", "quarantined"].contains(&e["event"].as_str().unwrap()))
        .map(|e| e["file"].as_str().unwrap().to_string())
        .collect();
    logged.sort();
    let before = logged.len();
    logged.dedup();
    assert_eq!(before, logged.len(), "a move logged twice");
    assert_eq!(logged.len(), ROUNDS * 12);
}

#[test]
fn gc_skips_what_it_cannot_move_and_says_why() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let aea = web.join(".aea");
    let templates = templates(&env, &api, &web);
    let laid = lay_down(
        &env,
        &web,
        &env.state(&web),
        0,
        &templates,
        &std::sync::Mutex::default(),
    );
    // A folder named like a message, with something in it.
    let folder = "message-20260101T000000000Z-from-x-00000000.json";
    std::fs::create_dir(aea.join(folder)).unwrap();
    std::fs::write(aea.join(folder).join("inside"), "x").unwrap();

    let check = env.json(&web, &["check"]);
    assert!(
        check["invalid"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["file"] == folder),
        "{check}"
    );
    let out = env
        .cmd(&web)
        .env("AEA_TEST_NOW", GC_NOW)
        .args(["--json", "gc"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["archived"].as_array().unwrap().len(), 4, "{v}");
    assert_eq!(v["expired"].as_array().unwrap().len(), 4, "{v}");
    assert_eq!(v["quarantined"].as_array().unwrap().len(), 4, "{v}");
    let skipped = v["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{v}");
    assert_eq!(skipped[0]["file"], folder);
    assert!(
        skipped[0]["reason"]
            .as_str()
            .unwrap()
            .contains("not a regular file"),
        "{v}"
    );
    assert!(aea.join(folder).join("inside").is_file(), "left as it was");
    // The person hears it too, and a second run is just as calm.
    let out = env
        .cmd(&web)
        .env("AEA_TEST_NOW", GC_NOW)
        .args(["gc"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("skipped"), "{text}");
    assert!(text.contains(folder), "{text}");
    assert_eq!(
        inbox_files(&web).len(),
        laid.names
            .iter()
            .filter(|(_, k)| *k == Kind::Waiting)
            .count()
            + 1
    );
}

/// The lines of every file of the log on disk (`agent.log`, `agent.log.N`).
fn log_lines_on_disk(aea: &Path) -> Vec<String> {
    let mut files: Vec<PathBuf> = names_in(aea)
        .into_iter()
        .filter(|n| n == "agent.log" || n.starts_with("agent.log."))
        .map(|n| aea.join(n))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn the_log_rotates_under_concurrent_appenders_without_losing_a_line() {
    const SENDERS: usize = 4;
    const EACH: usize = 30;
    let env = TestEnv::new();
    let web = env.repo("web");
    let aea = web.join(".aea");
    // The smallest rotation size: a file every few lines. Below it the
    // config is refused, naming the key.
    let config_path = aea.join("agent-config.yaml");
    let config = std::fs::read_to_string(&config_path).unwrap();
    assert!(config.contains("\nlimits:\n"), "{config}");
    let with =
        |bytes: &str| config.replace("\nlimits:\n", &format!("\nlimits:\n  log_bytes: {bytes}\n"));
    std::fs::write(&config_path, with("100")).unwrap();
    let out = env.run(&web, &["validate"]);
    assert_eq!(code(&out), 6, "{}", stdout(&out));
    assert!(
        stdout(&out).contains("limits.log_bytes"),
        "{}",
        stdout(&out)
    );
    std::fs::write(&config_path, with("1024")).unwrap();
    env.ok(&web, &["validate"]);
    let senders: Vec<_> = (0..SENDERS)
        .map(|i| env.repo(&format!("sender{i}")))
        .collect();
    let env = Arc::new(env);
    let start = Arc::new(Barrier::new(SENDERS));
    let workers: Vec<_> = senders
        .iter()
        .map(|repo| {
            let (env, repo, start) = (Arc::clone(&env), repo.clone(), Arc::clone(&start));
            thread::spawn(move || {
                start.wait();
                (0..EACH)
                    .map(|n| {
                        env.send(
                            &repo,
                            "web",
                            &["--type", "update", "--subject", &format!("n{n}")],
                        )
                    })
                    .collect::<Vec<String>>()
            })
        })
        .collect();
    let sent: Vec<Vec<String>> = workers
        .into_iter()
        .map(|w| join_within(w, Duration::from_secs(300), "a sender thread"))
        .collect();

    let rotated = names_in(&aea)
        .into_iter()
        .filter(|n| n.starts_with("agent.log."))
        .count();
    assert!(
        rotated >= 5,
        "the log rotated several times ({rotated} files)"
    );
    // On disk: every delivery once, across all the files.
    let on_disk: Vec<serde_json::Value> = log_lines_on_disk(&aea)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let delivered: Vec<&str> = on_disk
        .iter()
        .filter(|e| e["event"] == "delivered")
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(delivered.len(), SENDERS * EACH, "no line lost or doubled");
    assert_eq!(
        delivered.iter().collect::<HashSet<_>>().len(),
        SENDERS * EACH
    );

    // `aea log` reads them all, oldest first: each sender's deliveries in
    // the order it sent them.
    let log = env.ok(&web, &["--json", "log", "--event", "delivered"]);
    let read: Vec<String> = log
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["message"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(read.len(), SENDERS * EACH);
    for ids in &sent {
        let order: Vec<&String> = read.iter().filter(|id| ids.contains(id)).collect();
        assert_eq!(
            order,
            ids.iter().collect::<Vec<_>>(),
            "in the order appended"
        );
    }
    // The first line ever written (init) is still there.
    let all = env.ok(&web, &["--json", "log"]);
    let first: serde_json::Value = serde_json::from_str(all.lines().next().unwrap()).unwrap();
    assert_eq!(first["event"], "init");
}

/// `limits.auto_gc_over` counts the processed mail a listing finds in the
/// inbox: aea's own has left it for the private store, so what counts is
/// mail another tool marked processed (the bash AEA `touch`es an empty
/// marker), which stays. Past the limit the listing starts `gc --auto`,
/// which archives the oldest processed mail wherever it is.
#[test]
fn an_inbox_over_its_limit_archives_its_oldest_processed_mail_on_its_own() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let config = web.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("limits:\n", "limits:\n  auto_gc_over: 4\n"),
    )
    .unwrap();
    // aea's own processed mail has left the inbox: it starts nothing.
    let own: Vec<String> = (0..6)
        .map(|i| env.question(&api, "web", &format!("own{i}")))
        .collect();
    for id in &own {
        env.ok(&web, &["process", id]);
    }
    let out = env.run(&web, &["check"]);
    assert_eq!(code(&out), 0);
    assert_eq!(stderr(&out), "");
    let ids: Vec<String> = (0..6)
        .map(|i| env.question(&api, "web", &format!("q{i}")))
        .collect();
    let mut names = inbox_files(&web);
    names.sort();
    assert_eq!(names.len(), ids.len());
    let mark = |name: &str| std::fs::write(web.join(".aea/.processed").join(name), "").unwrap();
    for name in &names {
        mark(name);
    }
    // Six marked processed in the inbox, over four: the listing starts
    // `gc --auto` and says so.
    let out = env.run(&web, &["check"]);
    assert_eq!(code(&out), 0);
    assert!(
        stderr(&out).contains(
            "6 messages in .aea/ marked processed by another tool, over limits.auto_gc_over (4)"
        ),
        "{}",
        stderr(&out)
    );
    // It archives the oldest until half the limit remain: aea's own six,
    // then four of the inbox's.
    let archive = env.state(&web).join("archive");
    let archived = poll_until(Duration::from_secs(10), || {
        std::fs::read_dir(&archive).map_or(0, |d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .count()
        }) == 10
    });
    assert!(archived, "ten archived: not after 10 s");
    assert_eq!(inbox_files(&web), names[4..].to_vec());
    let store = env.state(&web).join("processed");
    assert_eq!(std::fs::read_dir(&store).unwrap().count(), 0);
    // An archived message is still shown.
    assert!(env.ok(&web, &["show", &own[0]]).contains("ARCHIVED"));
    assert!(env.ok(&web, &["show", &ids[0]]).contains("ARCHIVED"));
    // Within the hour it is not started again, and nothing is said.
    for i in 0..4 {
        env.question(&api, "web", &format!("r{i}"));
    }
    for name in inbox_files(&web) {
        mark(&name);
    }
    let out = env.run(&web, &["check"]);
    assert_eq!(stderr(&out), "");
    // Off: `gc --auto` refuses and says what to do instead.
    std::fs::write(
        &config,
        text.replace("limits:\n", "limits:\n  auto_gc_over: 0\n"),
    )
    .unwrap();
    let out = env.run(&web, &["gc", "--auto"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("--older-than"), "{}", stderr(&out));
}

/// gc frees a message's file name: a sender may deliver the very bytes it
/// sent before under that name again. A person's approval of the first
/// delivery must not decide the second; it moves to the private archive
/// with the message. And the second is no mail at all: its id was taken
/// when the first was processed, so it is set aside as a replay.
#[test]
fn an_approval_is_archived_with_its_message_and_never_approves_a_replay() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.send(
        &api,
        "web",
        &["--type", "handoff", "--subject", "h", "--body", "b"],
    );
    let [name] = <[String; 1]>::try_from(inbox_files(&web)).unwrap();
    env.ok(&web, &["approve", &id]);
    env.ok(&web, &["process", &id]);
    let marker = web.join(".aea/.processed").join(&name);
    assert!(marker.is_file(), "process marks it for other readers");
    env.ok(&web, &["gc", "--older-than", "0s"]);
    let archive = env.state(&web).join("archive");
    let archived = archive.join(&name);
    assert!(archived.exists());
    assert!(
        archive
            .join("approvals")
            .join(format!("{name}.json"))
            .exists(),
        "the record goes with the message"
    );
    // So does the marker: left behind, it would hide the replay as mail
    // another tool processed.
    assert!(!marker.exists(), "the marker goes with the message");
    assert!(archive.join("markers").join(&name).is_file());
    // The sender delivers the same bytes under the same, now free, name.
    std::fs::copy(&archived, web.join(".aea").join(&name)).unwrap();
    let report = env.json(&web, &["check"]);
    assert_eq!(report["messages"], serde_json::json!([]), "{report}");
    let reason =
        std::fs::read_to_string(web.join(".aea/.quarantine").join(format!("{name}.reason")))
            .unwrap();
    assert!(reason.starts_with("replay:"), "{reason}");
    assert!(!web.join(".aea").join(&name).exists());
}

/// A gc killed between moving a message to the archive and moving its
/// record leaves them apart: the message in the archive (or linked in both
/// the store and the archive), its record and marker behind. The next gc
/// brings them together, so no record is ever lost to the archive.
#[test]
fn a_record_left_behind_by_a_killed_gc_follows_its_message() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let state = env.state(&web);
    let ids: Vec<String> = (0..2)
        .map(|i| env.question(&api, "web", &format!("q{i}")))
        .collect();
    let names: Vec<String> = inbox_files(&web);
    for id in &ids {
        env.ok(&web, &["process", id, "--outcome", "done"]);
    }
    let archive = state.join("archive");
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(&archive)
        .unwrap();
    // Killed after the move: the message is in the archive only.
    std::fs::rename(
        state.join("processed").join(&names[0]),
        archive.join(&names[0]),
    )
    .unwrap();
    // Killed after the link: the message is in the store and the archive.
    std::fs::hard_link(
        state.join("processed").join(&names[1]),
        archive.join(&names[1]),
    )
    .unwrap();
    env.ok(&web, &["gc", "--older-than", "0s"]);
    for name in &names {
        assert!(
            archive.join("records").join(name).is_file(),
            "the record of {name} stayed behind"
        );
        assert!(!state.join("records").join(name).exists());
        assert!(!state.join("processed").join(name).exists());
        assert!(
            !web.join(".aea/.processed").join(name).exists(),
            "the marker stayed behind"
        );
    }
    assert_eq!(
        env.json(&web, &["check"])["messages"],
        serde_json::json!([])
    );
}

#[test]
fn gc_archives_old_processed_and_expired_mail_and_quarantines_invalid_files() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let at = |now: &str, args: &[&str]| {
        let out = env
            .cmd(&web)
            .env("AEA_TEST_NOW", now)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    let old = env.question(&api, "web", "old");
    let fresh = env.question(&api, "web", "fresh");
    let waiting = env.question(&api, "web", "still waiting");
    env.send(
        &api,
        "web",
        &[
            "--type",
            "update",
            "--subject",
            "short-lived",
            "--expires",
            "1h",
        ],
    );
    std::fs::write(
        web.join(".aea/message-20261121T100000000Z-from-api-0000000f.json"),
        "{broken",
    )
    .unwrap();
    at("2026-01-01T00:00:00Z", &["process", &old]);
    at("2099-01-09T00:00:00Z", &["process", &fresh]);
    // Processed mail has left the inbox for the private store.
    let state = env.state(&web);
    let stored = || std::fs::read_dir(state.join("processed")).unwrap().count();
    let files = || snapshot(&web.join(".aea")).len() + snapshot(&state).len();
    assert_eq!((inbox_files(&web).len(), stored()), (3, 2));
    let files_before = files();

    let dry = at("2099-01-10T00:00:00Z", &["--json", "gc", "--dry-run"]);
    let v: serde_json::Value = serde_json::from_str(&dry).unwrap();
    assert_eq!(v["archived"].as_array().unwrap().len(), 1);
    assert_eq!(
        (inbox_files(&web).len(), stored()),
        (3, 2),
        "a dry run moves nothing"
    );
    // Without --json it names each file it would move.
    let human = at("2099-01-10T00:00:00Z", &["gc", "--dry-run"]);
    let archived = v["archived"][0].as_str().unwrap();
    assert!(
        human.contains(&format!("would archive (processed) {archived}")),
        "{human}"
    );
    assert!(
        human.contains(
            "would quarantine (invalid) message-20261121T100000000Z-from-api-0000000f.json"
        ),
        "{human}"
    );
    assert!(human.contains("would archive (expired) "), "{human}");
    assert_eq!(
        (inbox_files(&web).len(), stored()),
        (3, 2),
        "a dry run moves nothing"
    );

    let out = at(
        "2099-01-10T00:00:00Z",
        &["--json", "gc", "--older-than", "7d"],
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["archived"].as_array().unwrap().len(),
        1,
        "only the message processed long ago"
    );
    assert_eq!(v["expired"].as_array().unwrap().len(), 1);
    assert_eq!(v["quarantined"].as_array().unwrap().len(), 1);
    assert_eq!(
        (inbox_files(&web).len(), stored()),
        (1, 1),
        "waiting and fresh (processed) stay"
    );
    let report = env.json(&web, &["check"]);
    assert_eq!(report["messages"][0]["id"], waiting.as_str());
    assert!(report["invalid"].as_array().unwrap().is_empty());
    assert!(
        web.join(".aea/.quarantine/message-20261121T100000000Z-from-api-0000000f.json.reason")
            .exists()
    );
    let archive = state.join("archive");
    for kept in ["records", "markers"] {
        assert_eq!(
            std::fs::read_dir(archive.join(kept)).unwrap().count(),
            1,
            "the {kept} moved along"
        );
    }
    // Nothing deleted: every file is still somewhere under .aea/ or the
    // private state (plus the .reason files and the log's new lines).
    assert!(files() >= files_before);

    let out = env.run(
        &web,
        &["quarantine", &waiting, "--reason", "looks like spam"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        env.json(&web, &["check"])["messages"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let log = env.ok(&web, &["--json", "log", "--event", "quarantined"]);
    assert_eq!(log.lines().count(), 2);
}

/// A gc that moves nothing says why the processed mail stayed.
#[test]
fn a_gc_that_moves_nothing_says_why() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.question(&api, "web", "recent");
    env.ok(&web, &["process", &id]);
    let out = env.ok(&web, &["gc"]);
    assert!(out.contains("moved: 0 processed"), "{out}");
    assert!(
        out.contains("kept 1 processed message: processed more recently than --older-than 7days"),
        "{out}"
    );
    let report = env.json(&web, &["gc", "--older-than", "1d"]);
    assert_fits("gc", &report);
    assert_eq!(report["kept_recent"], 1, "{report}");
}
