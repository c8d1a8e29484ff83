//! What `aea sync` remembers between runs: a sync with nothing new reads
//! and writes none of it (it costs the fetch, whatever the history), the
//! state kept by older versions in `state.json` is still honoured, and a
//! damaged journal loses only the damaged lines.

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use crate::common::*;

/// Size, modification time and inode of each file directly in the sync
/// store (`sync/` of the private state `state`) that aea writes (not
/// git's), with its bytes.
fn state_files(state: &Path) -> Vec<(String, u64, i64, i64, u64, Vec<u8>)> {
    let dir = state.join("sync");
    let mut out: Vec<_> = ["journal", "tips.json", "state.json"]
        .iter()
        .filter_map(|name| {
            let meta = std::fs::symlink_metadata(dir.join(name)).ok()?;
            Some((
                (*name).to_string(),
                meta.len(),
                meta.mtime(),
                meta.mtime_nsec(),
                meta.ino(),
                std::fs::read(dir.join(name)).unwrap(),
            ))
        })
        .collect();
    out.sort();
    out
}

/// The id of the message in inbox file `name` of `repo`.
fn id_in(repo: &Path, name: &str) -> String {
    let bytes = std::fs::read(repo.join(".aea").join(name)).unwrap();
    serde_json::from_slice::<serde_json::Value>(&bytes).unwrap()["message_id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn report(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_str(stdout(out).trim()).unwrap_or_else(|e| {
        panic!("{e}: {}\n{}", stdout(out), stderr(out));
    })
}

#[test]
fn a_sync_with_nothing_new_writes_no_state() {
    let env = TestEnv::new();
    let remote = bare_remote(&env);
    let a = Machine::new(&env, "aa", &remote, &["bb"]);
    let b = Machine::new(&env, "bb", &remote, &["aa"]);
    let first = a.send(&env, "bb", "first");
    a.ok(&env, &["sync"]);
    assert_eq!(
        b.json(&env, &["sync"])["received"],
        serde_json::json!([first])
    );
    let before = state_files(&b.state);
    let names: Vec<&str> = before.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(names, ["journal", "tips.json"], "no state.json is written");

    for _ in 0..3 {
        let out = b.run(&env, &["--json", "sync"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(report(&out)["received"], serde_json::json!([]));
        assert_eq!(
            state_files(&b.state),
            before,
            "the state is neither rewritten nor touched"
        );
    }

    // What a sync with nothing new must not miss: new mail…
    let second = a.send(&env, "bb", "second");
    a.ok(&env, &["sync"]);
    assert_eq!(
        b.json(&env, &["sync"])["received"],
        serde_json::json!([second])
    );
    // …mail processed here since (its receipt goes out)…
    b.ok(&env, &["sync"]);
    b.ok(&env, &["process", &first]);
    assert_eq!(b.json(&env, &["sync"])["receipts_sent"], 1);
    assert_eq!(
        a.json(&env, &["sync"])["receipts_received"],
        serde_json::json!([first])
    );
    // …and mail queued here.
    let reply = b.json(&env, &["reply", &second, "--body", "on it"]);
    assert_eq!(reply["results"][0]["queued"], true);
    let pushed = b.json(&env, &["sync"]);
    assert_eq!(
        pushed["pushed"]["aa"].as_array().map(Vec::len),
        Some(1),
        "{pushed}"
    );
    assert_eq!(b.outgoing(), 0);
    // What this machine pushed is what the next fetch finds: nothing to do.
    let after_push = state_files(&b.state);
    b.ok(&env, &["sync"]);
    assert_eq!(state_files(&b.state), after_push);
    // Appended, never rewritten: what the journal held before is still
    // its beginning.
    let journal = std::fs::read(b.state.join("sync/journal")).unwrap();
    assert!(journal.starts_with(&before[0].5));
}

/// Someone with push access moves our mail ref between two syncs that had
/// nothing to do: the next sync sees it, whatever it skipped before.
#[test]
fn a_rewritten_or_rolled_back_ref_is_caught_after_syncs_with_nothing_new() {
    let env = TestEnv::new();
    let remote = bare_remote(&env);
    let a = Machine::new(&env, "aa", &remote, &["bb"]);
    let b = Machine::new(&env, "bb", &remote, &["aa"]);
    a.send(&env, "bb", "one");
    a.ok(&env, &["sync"]);
    let older = stdout(&git(&remote, &["rev-parse", "refs/aea/mail/bb"]));
    a.send(&env, "bb", "two");
    a.ok(&env, &["sync"]);
    b.ok(&env, &["sync"]);
    let settled = state_files(&b.state);
    b.ok(&env, &["sync"]);
    assert_eq!(state_files(&b.state), settled);

    git(&remote, &["update-ref", "refs/aea/mail/bb", older.trim()]);
    let out = b.run(&env, &["sync"]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(stderr(&out).contains("rolled back"), "{}", stderr(&out));
    let out = b.run(&env, &["sync"]);
    assert_eq!(code(&out), 0, "reported once: {}", stderr(&out));
    b.ok(&env, &["sync"]);

    // A history of its own, with the same file names: a forged tip.
    let tree = stdout(&git(&remote, &["rev-parse", "refs/aea/mail/bb^{tree}"]));
    let forged = stdout(&git(&remote, &["commit-tree", tree.trim(), "-m", "forged"]));
    git(&remote, &["update-ref", "refs/aea/mail/bb", forged.trim()]);
    let out = b.run(&env, &["--json", "sync"]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    let got = report(&out);
    assert!(
        got["rewritten"][0]
            .as_str()
            .unwrap()
            .starts_with("refs/aea/mail/bb: rewritten"),
        "{got}"
    );
    assert_eq!(
        got["received"],
        serde_json::json!([]),
        "nothing applied twice"
    );
}

/// The state an older version kept in `state.json` (one file, rewritten
/// on every sync) is read by the first sync of this one, folded into the
/// journal, and removed: what it says still holds.
#[test]
fn an_old_state_json_is_still_honoured() {
    let env = TestEnv::new();
    let remote = bare_remote(&env);
    let a = Machine::new(&env, "aa", &remote, &["bb"]);
    let b = Machine::new(&env, "bb", &remote, &["aa"]);
    let m1 = a.send(&env, "bb", "one");
    let m2 = a.send(&env, "bb", "two");
    a.ok(&env, &["sync"]);
    let older = stdout(&git(&remote, &["rev-parse", "refs/aea/mail/bb"]));
    let m3 = a.send(&env, "bb", "three");
    a.ok(&env, &["sync"]);
    b.ok(&env, &["sync"]);
    assert_eq!(inbox_files(&b.repo).len(), 3);

    // The state as an older version wrote it: what was applied (m2 under
    // content other than the remote's, and quarantined for it) and the
    // tips seen last. Then no journal and no tips.json.
    let store = b.state.join("sync");
    let mut applied = serde_json::Map::new();
    for record in sync_journal(&b.state) {
        if let Some(pair) = record.get("applied") {
            applied.insert(pair[0].as_str().unwrap().to_string(), pair[1].clone());
        }
    }
    applied[&m2]["sha256"] = "0".repeat(64).into();
    let tips: serde_json::Value =
        serde_json::from_slice(&std::fs::read(store.join("tips.json")).unwrap()).unwrap();
    let legacy = serde_json::json!({
        "applied": applied,
        "pushed": {},
        "receipts_sent": [],
        "receipts": {},
        "quarantined": [m2],
        "tips": tips["tips"],
    });
    std::fs::write(
        store.join("state.json"),
        serde_json::to_vec_pretty(&legacy).unwrap(),
    )
    .unwrap();
    std::fs::remove_file(store.join("journal")).unwrap();
    std::fs::remove_file(store.join("tips.json")).unwrap();
    // m1 leaves the inbox (as `gc` archives mail): only the state says it
    // was applied.
    let m1_file = inbox_files(&b.repo)
        .into_iter()
        .find(|n| id_in(&b.repo, n) == m1)
        .unwrap();
    std::fs::remove_file(b.repo.join(".aea").join(&m1_file)).unwrap();
    // The remote goes back to before m3: the old tips see it.
    git(&remote, &["update-ref", "refs/aea/mail/bb", older.trim()]);

    let out = b.run(&env, &["--json", "sync"]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    let got = report(&out);
    assert!(
        got["rewritten"][0]
            .as_str()
            .unwrap()
            .contains("rolled back"),
        "the tips of state.json: {got}"
    );
    assert_eq!(
        got["received"],
        serde_json::json!([]),
        "m1 is not applied again"
    );
    assert_eq!(
        got["quarantined"],
        serde_json::json!([]),
        "m2 was reported before"
    );
    let ids: Vec<String> = inbox_files(&b.repo)
        .iter()
        .map(|n| id_in(&b.repo, n))
        .collect();
    assert!(!ids.contains(&m1) && ids.contains(&m2) && ids.contains(&m3));
    assert!(
        !store.join("state.json").exists(),
        "folded into the journal"
    );
    let journal = sync_journal(&b.state);
    assert!(
        journal
            .iter()
            .any(|r| r.get("quarantined") == Some(&serde_json::json!(m2))),
        "{journal:?}"
    );
    let out = b.run(&env, &["--json", "sync"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(report(&out)["quarantined"].as_array().unwrap().is_empty());
}

/// A journal line cut short (a sync killed mid-write) or damaged is
/// skipped and said; the other records hold, and the next write drops it.
#[test]
fn a_damaged_journal_keeps_its_other_records() {
    let env = TestEnv::new();
    let remote = bare_remote(&env);
    let a = Machine::new(&env, "aa", &remote, &["bb"]);
    let b = Machine::new(&env, "bb", &remote, &["aa"]);
    let id = a.send(&env, "bb", "kept");
    a.ok(&env, &["sync"]);
    b.ok(&env, &["sync"]);
    b.ok(&env, &["process", &id]);
    assert_eq!(b.json(&env, &["sync"])["receipts_sent"], 1);
    let journal = b.state.join("sync/journal");
    let mut text = std::fs::read(&journal).unwrap();
    text.extend_from_slice(b"\x00\xffnot a record\n{\"applied\":[\"torn");
    std::fs::write(&journal, text).unwrap();
    // Gone from the store, its record kept: only the journal says it was
    // applied and its receipt sent (the record alone would send one).
    assert!(
        inbox_files(&b.repo).is_empty(),
        "processed mail leaves the inbox"
    );
    let store = b.state.join("processed");
    let kept: Vec<_> = std::fs::read_dir(&store).unwrap().flatten().collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    for entry in kept {
        assert!(b.state.join("records").join(entry.file_name()).is_file());
        std::fs::remove_file(entry.path()).unwrap();
    }
    // New mail: the sync reads its state (one with nothing new would not).
    let new = a.send(&env, "bb", "new");
    a.ok(&env, &["sync"]);

    let out = b.run(&env, &["--json", "sync"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let got = report(&out);
    let damage = got["state_damage"][0].as_str().unwrap();
    assert!(
        damage.contains("2 line(s)") && damage.contains("skipped"),
        "{got}"
    );
    assert_eq!(got["received"], serde_json::json!([new]), "{got}");
    assert_eq!(got["receipts_sent"], 0, "{got}");
    assert_eq!(
        received_files(&b.repo, &b.state).len(),
        1,
        "the one gone from the store stays out"
    );
    let out = b.run(&env, &["sync"]);
    assert!(stderr(&out).is_empty(), "said once: {}", stderr(&out));
    assert_eq!(
        sync_journal(&b.state).len(),
        std::fs::read_to_string(&journal).unwrap().lines().count()
    );
}

/// A journal that cannot be read at all (here a symlink, which state is
/// never read through) is refused: the next write would replace it with
/// what this sync knows, and what it held would be lost.
#[test]
fn a_journal_that_cannot_be_read_is_refused_not_replaced() {
    let env = TestEnv::new();
    let remote = bare_remote(&env);
    let a = Machine::new(&env, "aa", &remote, &["bb"]);
    let b = Machine::new(&env, "bb", &remote, &["aa"]);
    a.send(&env, "bb", "one");
    a.ok(&env, &["sync"]);
    b.ok(&env, &["sync"]);
    let journal = b.state.join("sync/journal");
    let elsewhere = env.path().join("elsewhere");
    std::fs::rename(&journal, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &journal).unwrap();
    let held = std::fs::read(&elsewhere).unwrap();
    a.send(&env, "bb", "two");
    a.ok(&env, &["sync"]);

    let out = b.run(&env, &["sync"]);
    assert_ne!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("journal"), "{}", stderr(&out));
    assert!(std::fs::symlink_metadata(&journal).unwrap().is_symlink());
    assert_eq!(std::fs::read(&elsewhere).unwrap(), held);
    assert_eq!(inbox_files(&b.repo).len(), 1, "nothing applied meanwhile");
}

/// A journal that lost the line saying a message was applied (a sync
/// killed mid-write, damage) never brings processed mail back: the sync
/// finds it where `aea process` moved it, in the private store, as it
/// finds waiting mail in the inbox.
#[test]
fn a_journal_that_lost_an_applied_line_never_delivers_processed_mail_again() {
    let env = TestEnv::new();
    let remote = bare_remote(&env);
    let a = Machine::new(&env, "aa", &remote, &["bb"]);
    let b = Machine::new(&env, "bb", &remote, &["aa"]);
    let id = a.send(&env, "bb", "processed, then forgotten by the journal");
    a.ok(&env, &["sync"]);
    b.ok(&env, &["sync"]);
    b.ok(&env, &["process", &id]);
    assert!(inbox_files(&b.repo).is_empty());
    let journal = b.state.join("sync/journal");
    let text = std::fs::read_to_string(&journal).unwrap();
    let torn: String = text
        .lines()
        .map(|l| {
            if l.contains("\"applied\"") && l.contains(&id) {
                "{\"applied\":[\"torn\n".to_string()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    assert_ne!(torn, text, "the applied line is in the journal");
    std::fs::write(&journal, torn).unwrap();
    let new = a.send(&env, "bb", "new");
    a.ok(&env, &["sync"]);

    let out = b.run(&env, &["--json", "sync"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let got = report(&out);
    assert!(got["state_damage"][0].is_string(), "{got}");
    assert_eq!(got["received"], serde_json::json!([new]), "{got}");
    assert_eq!(
        b.inbox_ids(&env),
        [new],
        "the processed one stays processed"
    );
    assert_eq!(received_files(&b.repo, &b.state).len(), 2);
}
