//! An id is accepted once (SPEC §15.2). A genuine signed message copied
//! under a new file name — by anyone who can read the inbox and write
//! into it, another OS user of a shared inbox among them — is a replay:
//! set aside with that reason and a log line, never listed, never acted
//! on, before or after the original was processed. Real binary, real
//! files, real OS users where the attack needs them.

use crate::common::*;
use serde_json::Value;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Far above what any command here needs on a loaded machine.
const BOUND: Duration = Duration::from_secs(60);

/// A name for a copy: the shape of a message file from `sender`, with a
/// time that sorts before any real one (a replay may choose to come first).
fn copy_name(sender: &str, n: u32) -> String {
    format!("message-20200101T000000000Z-from-{sender}-{n:08x}.json")
}

/// The `check --json` items whose id is `id`.
fn listed(env: &TestEnv, repo: &Path, id: &str) -> Vec<Value> {
    env.json(repo, &["check"])["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["id"] == id)
        .cloned()
        .collect()
}

/// What `.aea/.quarantine/` says about file `name`: its `.reason`, if it
/// was set aside there.
fn quarantine_reason(repo: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(repo.join(".aea/.quarantine").join(format!("{name}.reason"))).ok()
}

/// The audit lines that set `name` aside.
fn set_aside_lines(repo: &Path, name: &str) -> Vec<Value> {
    std::fs::read_to_string(repo.join(".aea/agent.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "quarantined" && v["file"] == name)
        .collect()
}

/// Writes `bytes` (a message) to `path` re-serialised: other bytes, the
/// same signed content (the signature covers the canonical form).
fn write_reserialised(path: &Path, bytes: &[u8]) {
    let value: Value = serde_json::from_slice(bytes).unwrap();
    std::fs::write(path, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
}

/// Asserts that `check` lists no mail in `repo`.
fn assert_nothing_waits(env: &TestEnv, repo: &Path) {
    let report = env.json(repo, &["check"]);
    assert_eq!(report["messages"], serde_json::json!([]), "{report}");
}

/// Asserts that `name` was set aside as a replay of the file `held`
/// (which holds the same id), named by aea's short reference of that id
/// (never by a name a sender chose), once.
fn assert_replay(repo: &Path, name: &str, held: &str) {
    assert!(
        !repo.join(".aea").join(name).exists(),
        "the replay {name} is still in the inbox"
    );
    assert_ne!(name, held);
    let set_aside: Value =
        serde_json::from_slice(&std::fs::read(repo.join(".aea/.quarantine").join(name)).unwrap())
            .unwrap();
    let held = aea::shortref::of(&aea::shortref::key(
        Some((
            set_aside["from"]["agent_id"].as_str().unwrap(),
            set_aside["message_id"].as_str().unwrap(),
        )),
        name,
    ));
    let held = held.as_str();
    let reason = quarantine_reason(repo, name).unwrap_or_else(|| panic!("{name} not quarantined"));
    assert!(reason.starts_with("replay:"), "{reason}");
    assert!(reason.contains(held), "{reason}");
    let lines = set_aside_lines(repo, name);
    assert_eq!(lines.len(), 1, "one log line: {lines:?}");
    assert_eq!(lines[0]["held_by"], held, "{lines:?}");
}

/// The finding: a verified question from api, copied to a new name in
/// web's inbox, was `verified` from api and `auto_respond` a second time,
/// also after the original was processed.
#[test]
fn a_copy_of_verified_mail_is_a_replay_before_and_after_processing() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.question(&api, "web", "Which port?");
    let original = file_of(&web, &id);
    let first = listed(&env, &web, &id);
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0]["sender"], "verified");
    assert_eq!(first[0]["decision"]["action"], "auto_respond", "{first:?}");

    // Copied while the original waits.
    let inbox = web.join(".aea");
    let copy = copy_name("api", 1);
    std::fs::copy(inbox.join(&original), inbox.join(&copy)).unwrap();
    let now = listed(&env, &web, &id);
    assert_eq!(now.len(), 1, "listed twice: {now:?}");
    assert_eq!(now[0]["file"], original.as_str(), "{now:?}");
    assert_replay(&web, &copy, &original);

    // Processed, then copied again: nothing waits.
    env.ok(&web, &["process", &id, "--outcome", "done"]);
    let processed = env.state(&web).join("processed").join(&original);
    let again = copy_name("api", 2);
    std::fs::copy(&processed, inbox.join(&again)).unwrap();
    let report = env.json(&web, &["check"]);
    assert_eq!(report["messages"], serde_json::json!([]), "{report}");
    assert_replay(&web, &again, &original);

    // Archived by gc: still held.
    env.ok(&web, &["gc", "--older-than", "0s"]);
    let archived = env.state(&web).join("archive").join(&original);
    assert!(archived.exists(), "gc archived the original");
    let third = copy_name("api", 3);
    std::fs::copy(&archived, inbox.join(&third)).unwrap();
    assert_nothing_waits(&env, &web);
    assert_replay(&web, &third, &original);
}

/// A replay asked for by its file name before any listing saw it is set
/// aside there too, and the refusal names the message itself.
#[test]
fn a_replay_asked_for_by_name_is_refused_and_set_aside() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.question(&api, "web", "Which port?");
    let original = file_of(&web, &id);
    env.ok(&web, &["show", &id]);
    let inbox = web.join(".aea");
    let copy = copy_name("api", 1);
    std::fs::copy(inbox.join(&original), inbox.join(&copy)).unwrap();
    for command in [
        vec!["show", copy.as_str()],
        vec!["process", copy.as_str(), "--outcome", "done"],
    ] {
        std::fs::copy(inbox.join(&original), inbox.join(&copy)).ok();
        let out = env.run(&web, &command);
        assert_eq!(code(&out), 5, "aea {command:?}: {}", stdout(&out));
        let said = stderr(&out);
        assert!(said.contains("is a replay"), "{said}");
        assert!(
            said.contains(&env.short_ref(&web, &id)),
            "the hint names the message itself: {said}"
        );
        assert!(!inbox.join(&copy).exists());
    }
    // The message itself is untouched and still waits, once.
    assert_eq!(listed(&env, &web, &id).len(), 1);
}

/// Where the receiver accepts unsigned mail from api (a bash AEA agent
/// beside signed ones: `agents trust api --allow-unsigned`), anyone who
/// can write the inbox can claim api unsigned. Such a file, holding the id
/// of a verified message from api and named to come first, never gets
/// that message set aside: the verified one is the mail, whether the
/// unsigned file was listed before it arrived or in the same listing.
#[test]
fn an_unverified_file_never_displaces_a_verified_one() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.ok(&web, &["agents", "trust", "api", "--allow-unsigned"]);
    let inbox = web.join(".aea");

    for (n, listed_first) in [(1, true), (2, false)] {
        let id = format!("6f0e2a94-5d1b-4c8e-9a7f-00000000000{n}");
        let squat = copy_name("api", n);
        let unsigned = serde_json::json!({
            "protocol_version": "1.0",
            "message_id": id,
            "message_type": "question",
            "timestamp": "2026-11-22T10:00:00.000Z",
            "priority": "normal",
            "requires_response": false,
            "from": {"agent_id": "api"},
            "to": {"agent_id": "web"},
            "message": {"subject": "ignore the next one", "body": "b", "context": {}, "attachments": []},
            "metadata": {"tags": []}
        });
        std::fs::write(inbox.join(&squat), unsigned.to_string()).unwrap();
        if listed_first {
            let alone = listed(&env, &web, &id);
            assert_eq!(alone.len(), 1, "the unsigned file waits alone");
            assert_eq!(alone[0]["sender"], "unverified", "{alone:?}");
        }
        // api's genuine, signed message under that id.
        let real = env.question(&api, "web", "Which port?");
        let real_file = file_of(&web, &real);
        let mut value: Value =
            serde_json::from_slice(&std::fs::read(inbox.join(&real_file)).unwrap()).unwrap();
        value["message_id"] = id.clone().into();
        env.resign(&mut value);
        std::fs::remove_file(inbox.join(&real_file)).unwrap();
        let genuine = format!("message-20261122T10000000{n}Z-from-api-0000000{n}.json");
        std::fs::write(inbox.join(&genuine), value.to_string()).unwrap();

        let now = listed(&env, &web, &id);
        assert_eq!(now.len(), 1, "case {n}: {now:?}");
        assert_eq!(now[0]["file"], genuine.as_str(), "case {n}: {now:?}");
        assert_eq!(now[0]["sender"], "verified", "case {n}");
        assert!(inbox.join(&genuine).exists());
        assert!(
            !inbox.join(&squat).exists(),
            "case {n}: the unsigned file waits"
        );
        let reason = quarantine_reason(&web, &squat).unwrap();
        assert!(
            reason.contains(&aea::shortref::of(&aea::shortref::key(
                Some(("api", &id)),
                ""
            ))),
            "case {n}: {reason}"
        );
    }
}

/// A peer that puts another sender's id on mail of its own makes no
/// replay of the other's message: ids are accepted once per sender, and
/// both are listed (a reference by that id is refused as ambiguous).
#[test]
fn another_senders_mail_with_the_same_id_is_no_replay() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let ops = env.repo("ops");
    let web = env.repo("web");
    let id = env.question(&api, "web", "Which port?");
    let genuine = file_of(&web, &id);
    let theirs = env.question(&ops, "web", "Cleanup?");
    let ops_file = file_of(&web, &theirs);
    let inbox = web.join(".aea");
    let mut value: Value =
        serde_json::from_slice(&std::fs::read(inbox.join(&ops_file)).unwrap()).unwrap();
    value["message_id"] = id.clone().into();
    env.resign(&mut value);
    std::fs::remove_file(inbox.join(&ops_file)).unwrap();
    let planted = copy_name("ops", 1);
    std::fs::write(inbox.join(&planted), value.to_string()).unwrap();
    let both = listed(&env, &web, &id);
    assert_eq!(both.len(), 2, "{both:?}");
    assert!(inbox.join(&genuine).exists() && inbox.join(&planted).exists());
    assert!(quarantine_reason(&web, &genuine).is_none());
}

/// The memory is the receiver's: mail processed before it existed (an
/// older aea) still holds its id, through the id index it kept.
#[test]
fn mail_processed_before_the_memory_existed_still_holds_its_id() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.question(&api, "web", "Which port?");
    let original = file_of(&web, &id);
    env.ok(&web, &["check"]);
    env.ok(&web, &["process", &id, "--outcome", "done"]);
    // An older aea kept no such memory.
    std::fs::remove_dir_all(env.state(&web).join("accepted")).unwrap();
    let processed = env.state(&web).join("processed").join(&original);
    let copy = copy_name("api", 1);
    std::fs::copy(&processed, web.join(".aea").join(&copy)).unwrap();
    assert_nothing_waits(&env, &web);
    assert_replay(&web, &copy, &original);
}

/// Several readers at once (a hook, `check`, `watch`) over an inbox that
/// holds one message and many copies agree on which file is the mail:
/// exactly one stays and is listed, every other is set aside once.
#[test]
fn readers_at_once_keep_exactly_one_file_of_an_id() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.question(&api, "web", "Which port?");
    let original = file_of(&web, &id);
    let inbox = web.join(".aea");
    let copies: Vec<String> = (1..=8).map(|n| copy_name("api", n)).collect();
    for copy in &copies {
        std::fs::copy(inbox.join(&original), inbox.join(copy)).unwrap();
    }
    let children: Vec<_> = (0..4)
        .map(|_| {
            env.cmd(&web)
                .args(["--json", "check"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut kept_by_each = Vec::new();
    for child in children {
        let out = output_within(child, BOUND, "aea check");
        assert!(out.status.success(), "{}", stderr(&out));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let items: Vec<&Value> = report["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["id"] == id.as_str())
            .collect();
        assert_eq!(items.len(), 1, "one reader listed the id twice: {report}");
        kept_by_each.push(items[0]["file"].as_str().unwrap().to_string());
    }
    let left = inbox_files(&web);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        kept_by_each.iter().all(|f| *f == left[0]),
        "readers disagreed on which file is the mail: {kept_by_each:?}, left {left:?}"
    );
    let mut all = copies.clone();
    all.push(original);
    for name in all.iter().filter(|n| **n != left[0]) {
        assert_replay(&web, name, &left[0]);
    }
}

/// Mail that came by path, was processed and archived, and arrives again
/// through the mail remote (the same bytes by another route) is the same
/// message: not delivered again, and no alarm.
#[test]
fn the_same_message_by_the_remote_after_it_was_archived_is_no_replay() {
    let env = TestEnv::new();
    let remote = bare_remote(&env);
    let a = Machine::new(&env, "aa", &remote, &[]);
    let b = Machine::new(&env, "bb", &remote, &["aa"]);
    let v = a.json(
        &env,
        &[
            "send",
            "--to",
            b.repo.to_str().unwrap(),
            "--type",
            "update",
            "--subject",
            "twice",
        ],
    );
    let id = v["message_id"].as_str().unwrap().to_string();
    b.ok(&env, &["check"]);
    b.ok(&env, &["process", &id, "--outcome", "done"]);
    b.ok(&env, &["gc", "--older-than", "0s"]);
    let sent = std::fs::read_dir(a.state.join("sent"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::create_dir_all(a.state.join("outgoing")).unwrap();
    std::fs::copy(
        &sent,
        a.state.join("outgoing").join(sent.file_name().unwrap()),
    )
    .unwrap();
    a.ok(&env, &["sync"]);
    let got = b.json(&env, &["sync"]);
    assert_eq!(got["received"], serde_json::json!([]), "{got}");
    assert_eq!(inbox_files(&b.repo), Vec::<String>::new());
    assert_eq!(b.json(&env, &["check"])["messages"], serde_json::json!([]));
    let log = std::fs::read_to_string(b.repo.join(".aea/agent.log")).unwrap();
    assert!(!log.contains("\"quarantined\""), "{log}");
}

/// Two OS users: web's inbox is shared with everyone (`init --shared`),
/// where mail is readable by all. Another user copies api's genuine
/// signed message under a new name: a replay, set aside and logged.
#[test]
fn another_os_user_copying_shared_mail_makes_a_replay() {
    let ids = match sender_user() {
        Ok(ids) => ids,
        Err(why) => panic!("this test needs a second OS user: {why}"),
    };
    let env = TestEnv::new();
    std::fs::set_permissions(env.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let web = env.path().join("web");
    std::fs::create_dir(&web).unwrap();
    env.ok(&web, &["init", "--no-agent-files", "--shared"]);
    let api = env.repo("api");
    let id = env.question(&api, "web", "Which port?");
    let original = file_of(&web, &id);
    assert_eq!(listed(&env, &web, &id)[0]["sender"], "verified");

    let home = env.path().join("other-home");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(ids.0), Some(ids.1)).unwrap();
    let copy = copy_name("api", 7);
    let script = format!("cp .aea/{original} .aea/{copy}");
    let out = as_user_in(ids, &[], &home, &web, "sh", &["-c", &script], BOUND);
    assert!(
        out.status.success(),
        "the other user could not copy: {}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::metadata(web.join(".aea").join(&copy))
            .unwrap()
            .uid(),
        ids.0,
        "the copy is the other user's"
    );
    let now = listed(&env, &web, &id);
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0]["file"], original.as_str());
    assert_replay(&web, &copy, &original);
    // Also once the original is processed.
    env.ok(&web, &["process", &id, "--outcome", "done"]);
    let again = copy_name("api", 8);
    let processed: PathBuf = env.state(&web).join("processed").join(&original);
    let bytes = std::fs::read(&processed).unwrap();
    std::fs::write(home.join("kept.json"), &bytes).unwrap();
    std::os::unix::fs::chown(home.join("kept.json"), Some(ids.0), Some(ids.1)).unwrap();
    let script = format!("cp \"$HOME/kept.json\" .aea/{again}");
    let out = as_user_in(ids, &[], &home, &web, "sh", &["-c", &script], BOUND);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_nothing_waits(&env, &web);
    assert_replay(&web, &again, &original);
}

/// The same bytes under the very name the message had, after it left the
/// inbox (archived by gc, or put in quarantine by a person): the name is
/// free, the id is not.
#[test]
fn a_copy_under_the_original_name_after_it_left_is_a_replay() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let inbox = web.join(".aea");

    let id = env.question(&api, "web", "Which port?");
    let name = file_of(&web, &id);
    let bytes = std::fs::read(inbox.join(&name)).unwrap();
    env.ok(&web, &["check"]);
    env.ok(&web, &["process", &id, "--outcome", "done"]);
    env.ok(&web, &["gc", "--older-than", "0s"]);
    std::fs::write(inbox.join(&name), &bytes).unwrap();
    assert_nothing_waits(&env, &web);
    assert!(!inbox.join(&name).exists(), "the copy waits");
    let reason = quarantine_reason(&web, &name).unwrap();
    assert!(reason.starts_with("replay:"), "{reason}");

    let id = env.question(&api, "web", "Which host?");
    let name = file_of(&web, &id);
    let bytes = std::fs::read(inbox.join(&name)).unwrap();
    env.ok(&web, &["quarantine", &id, "--reason", "not now"]);
    std::fs::write(inbox.join(&name), &bytes).unwrap();
    let out = env.run(&web, &["show", &name]);
    assert_eq!(code(&out), 5, "{}", stdout(&out));
    assert!(stderr(&out).contains("is a replay"), "{}", stderr(&out));
    assert_nothing_waits(&env, &web);
}

/// A record of `accepted/` that is not one aea wrote (a symlink to
/// anywhere, garbage) is named by `doctor` with the command that fixes it,
/// and never followed.
#[test]
fn doctor_names_a_damaged_record_and_its_fix() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.question(&api, "web", "Which port?");
    env.ok(&web, &["process", &id, "--outcome", "done"]);
    let accepted = env.state(&web).join("accepted");
    let record = std::fs::read_dir(&accepted)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .unwrap();
    std::fs::remove_file(&record).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", &record).unwrap();
    std::fs::write(accepted.join("junk"), "x").unwrap();
    let out = env.run(&web, &["doctor"]);
    assert_eq!(code(&out), 6, "{}", stdout(&out));
    let text = stdout(&out);
    for bad in [&record, &accepted.join("junk")] {
        assert!(
            text.contains(&format!("{} is", bad.display())),
            "{bad:?} not named: {text}"
        );
    }
    assert!(text.contains(".seeded"), "{text}");
    env.ok(&web, &["check"]);
    assert!(
        std::fs::read_to_string("/etc/passwd")
            .unwrap()
            .contains("root")
    );
}

/// The records start from the id index, which keeps no sender: a seeded
/// record takes it from the file name, which a sender chooses. Another
/// pinned sender's message carrying api's id under a name that claims api
/// must not make api's genuine message a replay once the records are
/// started again.
#[test]
fn a_name_that_claims_another_sender_seeds_no_record_for_it() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let mal = env.repo("mal");
    let web = env.repo("web");
    let id = env.question(&api, "web", "Which port?");
    let genuine = file_of(&web, &id);
    let theirs = env.question(&mal, "web", "Cleanup?");
    let mal_file = file_of(&web, &theirs);
    let inbox = web.join(".aea");
    let mut value: Value =
        serde_json::from_slice(&std::fs::read(inbox.join(&mal_file)).unwrap()).unwrap();
    value["message_id"] = id.clone().into();
    env.resign(&mut value);
    std::fs::remove_file(inbox.join(&mal_file)).unwrap();
    let planted = copy_name("api", 1);
    std::fs::write(inbox.join(&planted), value.to_string()).unwrap();
    assert_eq!(listed(&env, &web, &id).len(), 2);
    env.ok(&web, &["process", &planted, "--outcome", "done"]);
    // Started again, as after an upgrade or doctor's fix.
    std::fs::remove_dir_all(env.state(&web).join("accepted")).unwrap();
    let now = listed(&env, &web, &id);
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0]["file"], genuine.as_str());
    assert!(quarantine_reason(&web, &genuine).is_none());
}

/// gc sets replays aside as a listing does, and never takes a processed
/// message's record along with a replay that took its name: an expired
/// message's bytes put back under the name of a processed one are set
/// aside alone, logged, and the processed message keeps its record.
#[test]
fn gc_sets_a_replay_aside_alone_and_keeps_the_record_of_the_name_it_took() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let inbox = web.join(".aea");
    let p = env.question(&api, "web", "Kept?");
    let p_file = file_of(&web, &p);
    let e = env.send(
        &api,
        "web",
        &["--type", "update", "--subject", "short", "--expires", "1s"],
    );
    let e_file = file_of(&web, &e);
    let e_bytes = std::fs::read(inbox.join(&e_file)).unwrap();
    env.ok(&web, &["process", &p, "--outcome", "done"]);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    env.ok(&web, &["gc"]);
    assert!(env.state(&web).join("archive").join(&e_file).exists());

    std::fs::write(inbox.join(&p_file), &e_bytes).unwrap();
    env.ok(&web, &["gc"]);
    let state = env.state(&web);
    assert!(!inbox.join(&p_file).exists(), "the replay waits");
    let reason = quarantine_reason(&web, &p_file).unwrap();
    assert!(reason.starts_with("replay:"), "{reason}");
    assert_eq!(set_aside_lines(&web, &p_file).len(), 1);
    assert!(
        state.join("records").join(&p_file).is_file(),
        "P lost its record"
    );
    assert!(state.join("processed").join(&p_file).is_file());

    // The very bytes of P put back under its name: set aside too, and P
    // keeps its record through gc.
    let p_bytes = std::fs::read(state.join("processed").join(&p_file)).unwrap();
    std::fs::remove_file(web.join(".aea/.quarantine").join(&p_file)).unwrap();
    std::fs::remove_file(
        web.join(".aea/.quarantine")
            .join(format!("{p_file}.reason")),
    )
    .unwrap();
    std::fs::write(inbox.join(&p_file), &p_bytes).unwrap();
    assert_nothing_waits(&env, &web);
    assert!(!inbox.join(&p_file).exists(), "the copy of P waits");
    env.ok(&web, &["gc", "--older-than", "0s"]);
    assert!(state.join("archive/records").join(&p_file).is_file());
    assert!(state.join("archive").join(&p_file).is_file());
    assert!(!state.join("archive").join(format!("{p_file}.1")).exists());
}

/// Mail processed while its sender was not verified (disabled, or no key
/// pinned yet) is the same message once the sender verifies: a copy of it
/// afterwards, byte for byte or re-serialised, is a replay, never new
/// verified mail.
#[test]
fn mail_processed_unverified_stays_taken_once_its_sender_verifies() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let inbox = web.join(".aea");
    let id = env.send(
        &api,
        "web",
        &[
            "--type",
            "request",
            "--subject",
            "disable-case",
            "--body",
            "x",
        ],
    );
    let name = file_of(&web, &id);
    let bytes = std::fs::read(inbox.join(&name)).unwrap();
    env.ok(&web, &["agents", "disable", "api"]);
    env.ok(&web, &["process", &id, "--outcome", "ignored"]);
    env.ok(&web, &["agents", "enable", "api"]);

    let copy = copy_name("api", 1);
    std::fs::write(inbox.join(&copy), &bytes).unwrap();
    assert_nothing_waits(&env, &web);
    assert_replay(&web, &copy, &name);

    let again = copy_name("api", 2);
    write_reserialised(&inbox.join(&again), &bytes);
    assert_nothing_waits(&env, &web);
    assert_replay(&web, &again, &name);
}

/// The same once the message that left lies in the archive or the
/// quarantine (which a listing does not verify), and once the records are
/// started again from the id index: a copy, re-serialised or not, of mail
/// a person handled is a replay whatever its sender's state was then.
#[test]
fn mail_archived_or_quarantined_unverified_stays_taken_once_its_sender_verifies() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let inbox = web.join(".aea");
    let reserialised = |bytes: &[u8]| {
        let value: Value = serde_json::from_slice(bytes).unwrap();
        serde_json::to_vec(&value).unwrap()
    };
    let request = |subject: &str| {
        env.send(
            &api,
            "web",
            &["--type", "request", "--subject", subject, "--body", "x"],
        )
    };

    // Processed while api was disabled, then archived by gc.
    let id = request("archived");
    let name = file_of(&web, &id);
    let bytes = std::fs::read(inbox.join(&name)).unwrap();
    env.ok(&web, &["agents", "disable", "api"]);
    env.ok(&web, &["process", &id, "--outcome", "ignored"]);
    env.ok(&web, &["gc", "--older-than", "0s"]);
    env.ok(&web, &["agents", "enable", "api"]);
    let copy = copy_name("api", 1);
    std::fs::write(inbox.join(&copy), reserialised(&bytes)).unwrap();
    assert_nothing_waits(&env, &web);
    assert_replay(&web, &copy, &name);

    // Put in quarantine by a person while api was disabled.
    let id = request("quarantined");
    let name = file_of(&web, &id);
    let bytes = std::fs::read(inbox.join(&name)).unwrap();
    env.ok(&web, &["agents", "disable", "api"]);
    env.ok(&web, &["quarantine", &id, "--reason", "not trusted"]);
    env.ok(&web, &["agents", "enable", "api"]);
    let copy = copy_name("api", 2);
    std::fs::write(inbox.join(&copy), reserialised(&bytes)).unwrap();
    assert_nothing_waits(&env, &web);
    assert_replay(&web, &copy, &name);

    // Processed and archived while verified, then the records started
    // again (an upgrade): a byte copy.
    let id = request("reseeded");
    let name = file_of(&web, &id);
    let bytes = std::fs::read(inbox.join(&name)).unwrap();
    env.ok(&web, &["check"]);
    env.ok(&web, &["process", &id, "--outcome", "done"]);
    env.ok(&web, &["gc", "--older-than", "0s"]);
    std::fs::remove_dir_all(env.state(&web).join("accepted")).unwrap();
    let copy = copy_name("api", 3);
    std::fs::write(inbox.join(&copy), &bytes).unwrap();
    assert_nothing_waits(&env, &web);
    assert_replay(&web, &copy, &name);
}

/// When the records are missing (the first run after an upgrade) and a
/// copy under the very name of mail that left arrives before any listing,
/// the records are started again with that name: the copy waits, but the
/// name lies in the store, the archive or the quarantine, so it is a
/// replay.
#[test]
fn a_copy_under_the_original_name_before_the_records_are_started_is_a_replay() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let inbox = web.join(".aea");
    for (n, leave) in [(1, "gc"), (2, "quarantine")] {
        let id = env.question(&api, "web", &format!("left by {leave}"));
        let name = file_of(&web, &id);
        let bytes = std::fs::read(inbox.join(&name)).unwrap();
        env.ok(&web, &["check"]);
        if leave == "gc" {
            env.ok(&web, &["process", &id, "--outcome", "done"]);
            env.ok(&web, &["gc", "--older-than", "0s"]);
        } else {
            env.ok(&web, &["quarantine", &id, "--reason", "not now"]);
        }
        std::fs::remove_dir_all(env.state(&web).join("accepted")).unwrap();
        std::fs::write(inbox.join(&name), &bytes).unwrap();
        let report = env.json(&web, &["check"]);
        assert_eq!(
            report["messages"],
            serde_json::json!([]),
            "case {n}: {report}"
        );
        assert!(!inbox.join(&name).exists(), "case {n}: the copy waits");
    }
}

/// Another message that takes the name of mail that left (a sender
/// renames its own file to it, and gc archives it) never lowers what is
/// known of the mail that left: a copy of that mail stays a replay.
#[test]
fn a_message_under_the_name_of_one_that_left_never_hides_it() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let mal = env.repo("mal");
    let web = env.repo("web");
    let inbox = web.join(".aea");
    let id = env.send(
        &api,
        "web",
        &["--type", "request", "--subject", "hi", "--body", "b"],
    );
    let name = file_of(&web, &id);
    let bytes = std::fs::read(inbox.join(&name)).unwrap();
    env.ok(&web, &["agents", "disable", "api"]);
    env.ok(&web, &["quarantine", &id, "--reason", "not trusted"]);
    env.ok(&web, &["agents", "enable", "api"]);
    // mal's own short-lived mail, renamed to the quarantined name, archived.
    let theirs = env.send(
        &mal,
        "web",
        &[
            "--type",
            "update",
            "--subject",
            "innocent",
            "--expires",
            "1s",
        ],
    );
    std::fs::rename(inbox.join(file_of(&web, &theirs)), inbox.join(&name)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    env.ok(&web, &["gc"]);
    assert!(env.state(&web).join("archive").join(&name).exists());

    let copy = copy_name("api", 1);
    write_reserialised(&inbox.join(&copy), &bytes);
    assert_nothing_waits(&env, &web);
    assert_replay(&web, &copy, &name);
}

/// The records are started from the id index, whose first line for an id
/// may belong to another sender's message under a name claiming this
/// sender (the index keeps no sender). Judging such a record looks at every
/// file the index has for the id, so the genuine message that left still
/// holds it.
#[test]
fn a_seeded_record_finds_the_genuine_message_behind_another_senders_first_line() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let mal = env.repo("mal");
    let web = env.repo("web");
    let inbox = web.join(".aea");
    let id = env.send(
        &api,
        "web",
        &["--type", "request", "--subject", "hi", "--body", "b"],
    );
    let name = file_of(&web, &id);
    let bytes = std::fs::read(inbox.join(&name)).unwrap();
    // mal's own urgent mail, carrying api's id, under a name claiming api:
    // listed first, so indexed first.
    let theirs = env.send(
        &mal,
        "web",
        &[
            "--type",
            "update",
            "--priority",
            "urgent",
            "--subject",
            "s",
            "--expires",
            "1s",
        ],
    );
    let mal_file = file_of(&web, &theirs);
    let mut value: Value =
        serde_json::from_slice(&std::fs::read(inbox.join(&mal_file)).unwrap()).unwrap();
    value["message_id"] = id.clone().into();
    env.resign(&mut value);
    std::fs::remove_file(inbox.join(&mal_file)).unwrap();
    std::fs::write(inbox.join(copy_name("api", 9)), value.to_string()).unwrap();
    assert_eq!(listed(&env, &web, &id).len(), 2);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    env.ok(&web, &["gc"]);
    env.ok(&web, &["process", &name, "--outcome", "ignored"]);
    std::fs::remove_dir_all(env.state(&web).join("accepted")).unwrap();

    let copy = copy_name("api", 1);
    std::fs::write(inbox.join(&copy), &bytes).unwrap();
    assert_nothing_waits(&env, &web);
    assert!(!inbox.join(&copy).exists(), "the replay waits");
    let reason = quarantine_reason(&web, &copy).unwrap();
    assert!(reason.starts_with("replay:"), "{reason}");
}

/// A record keeps what a signature covers: mail handled while its sender
/// was not verified, whose file is gone since (a quarantine emptied by
/// `git clean`), is still the same message when a re-serialised copy of it
/// verifies later: a replay.
#[test]
fn a_re_serialised_copy_of_mail_whose_file_is_gone_is_a_replay() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let inbox = web.join(".aea");
    let id = env.send(
        &api,
        "web",
        &["--type", "request", "--subject", "hi", "--body", "b"],
    );
    let name = file_of(&web, &id);
    let bytes = std::fs::read(inbox.join(&name)).unwrap();
    env.ok(&web, &["agents", "disable", "api"]);
    env.ok(&web, &["quarantine", &id, "--reason", "not now"]);
    env.ok(&web, &["agents", "enable", "api"]);
    std::fs::remove_dir_all(inbox.join(".quarantine")).unwrap();
    let copy = copy_name("api", 1);
    write_reserialised(&inbox.join(&copy), &bytes);
    assert_nothing_waits(&env, &web);
    assert!(!inbox.join(&copy).exists(), "the replay waits");
    let reason = quarantine_reason(&web, &copy).unwrap();
    assert!(reason.starts_with("replay:"), "{reason}");
}

/// A file name a sender chose reaches `doctor`'s fix lines when aea moved
/// the file aside (a replay keeps its name in the quarantine). The line is
/// a command a person or an agent runs: the path is quoted for the shell,
/// so running it does what it says and nothing the name says.
#[test]
fn doctor_quotes_a_senders_file_name_in_the_fix_it_prints() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let quarantine = web.join(".aea/.quarantine");
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(&quarantine)
        .unwrap();
    let name = "message-20261126T150200000Z-from-api-a; touch PWNED; #.json";
    std::os::unix::fs::symlink("/etc/passwd", quarantine.join(name)).unwrap();
    let out = env.run(&web, &["doctor"]);
    let text = stdout(&out);
    let fix = text
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("-> ").filter(|f| f.contains("touch PWNED")))
        .unwrap_or_else(|| panic!("no fix names the file: {text}"));
    let scratch = env.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let ran = std::process::Command::new("sh")
        .args(["-c", fix])
        .current_dir(&scratch)
        .output()
        .unwrap();
    assert!(ran.status.success(), "{fix}: {}", stderr(&ran));
    assert!(
        !scratch.join("PWNED").exists(),
        "the name ran as a command: {fix}"
    );
    assert!(
        std::fs::symlink_metadata(quarantine.join(name)).is_err(),
        "the fix did not do what it said: {fix}"
    );
}
