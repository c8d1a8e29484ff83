//! `aea check` lists a page and counts the rest, and the first page says
//! what a fresh whole listing says: it verifies only what it lists, yet
//! never sets verified mail aside for an unverified record, lists a forgery
//! as invalid, and gives the references the whole inbox gives.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

/// Drops what `repo` remembers of its inbox (the report and the page).
fn forget(env: &TestEnv, repo: &Path) {
    let seen = env.state(repo).join("seen");
    let _ = std::fs::remove_file(seen.join("report.json"));
    let _ = std::fs::remove_file(seen.join("page.json"));
}

/// A first page with nothing remembered checks signatures after the
/// replay judgement has run: a genuine verified message whose id an
/// unsigned squatter held and left through `process` is judged as if it
/// were unverified, so the record of the unsigned file makes it a replay.
/// A whole listing (`check --all`) lists it; a plain `check` sets it
/// aside in the quarantine, where no later listing finds it.
#[test]
fn a_first_page_never_sets_aside_verified_mail_for_an_unverified_record() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    env.ok(&web, &["agents", "trust", "api", "--allow-unsigned"]);
    let inbox = web.join(".aea");
    let id = "6f0e2a94-5d1b-4c8e-9a7f-000000000001";
    let squat = "message-20200101T000000000Z-from-api-00000001.json";
    let unsigned = serde_json::json!({
        "protocol_version": "1.0",
        "message_id": id,
        "message_type": "question",
        "timestamp": "2026-11-22T10:00:00.000Z",
        "priority": "normal",
        "requires_response": false,
        "from": {"agent_id": "api"},
        "to": {"agent_id": "web"},
        "message": {"subject": "squat", "body": "b", "context": {}, "attachments": []},
        "metadata": {"tags": []}
    });
    std::fs::write(inbox.join(squat), unsigned.to_string()).unwrap();
    env.ok(&web, &["process", squat, "--outcome", "ignored"]);

    // api's genuine, signed message under that id.
    let real = env.question(&api, "web", "Which port?");
    let real_file = file_of(&web, &real);
    let mut value: Value =
        serde_json::from_slice(&std::fs::read(inbox.join(&real_file)).unwrap()).unwrap();
    value["message_id"] = id.into();
    env.resign(&mut value);
    std::fs::remove_file(inbox.join(&real_file)).unwrap();
    let genuine = "message-20261122T100000001Z-from-api-00000001.json";
    std::fs::write(inbox.join(genuine), value.to_string()).unwrap();
    forget(&env, &web);

    let page = env.json(&web, &["check"]);
    assert!(
        inbox.join(genuine).exists(),
        "a plain check set the verified message aside: {page}"
    );
    let listed: Vec<&Value> = page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["id"] == id)
        .collect();
    assert_eq!(listed.len(), 1, "{page}");
    assert_eq!(listed[0]["sender"], "verified", "{page}");
}

/// A file that claims to come from the receiver itself, to another agent,
/// signed with a key that is not the receiver's: a whole listing finds it
/// forged and lists it as invalid. A first page reads files before it
/// checks signatures, and the check that leaves out the receiver's own
/// copies of mail it sent runs on the unchecked message: the forgery is
/// taken for an own copy and hidden, `--exit-code` says nothing waits.
#[test]
fn a_first_page_lists_a_forgery_of_the_receivers_own_mail_as_invalid() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let inbox = web.join(".aea");
    let id = env.question(&api, "web", "a question");
    let name = file_of(&web, &id);
    let mut value: Value =
        serde_json::from_slice(&std::fs::read(inbox.join(&name)).unwrap()).unwrap();
    std::fs::remove_file(inbox.join(&name)).unwrap();
    // api's signature, web's name on it: forged.
    value["from"]["agent_id"] = "web".into();
    value["to"]["agent_id"] = "api".into();
    let forged = "message-20200101T000000000Z-from-web-00000001.json";
    std::fs::write(inbox.join(forged), value.to_string()).unwrap();

    forget(&env, &web);
    let whole = env.json(&web, &["check", "--all"]);
    assert_eq!(whole["invalid"][0]["file"], forged, "{whole}");
    assert!(
        whole["invalid"][0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("forged"),
        "{whole}"
    );

    forget(&env, &web);
    let page = env.json(&web, &["check"]);
    assert_eq!(page["invalid"], whole["invalid"], "{page}");
    forget(&env, &web);
    let out = env.run(&web, &["check", "--exit-code"]);
    assert_eq!(code(&out), 6, "a forged file waits: {}", stdout(&out));
}

/// Two file names whose digests share their first eight hex digits
/// (found by trying names: 2^16 tries, well within a sender's reach).
const TWINS: [&str; 2] = [
    "message-20261122T100000000Z-from-api-000019c1.json",
    "message-20261122T100000000Z-from-api-0000a322.json",
];

/// References are lengthened among the messages listed together, so that
/// every channel prints the same one for a file and each resolves. A
/// first page works them out over the page alone: the message on it gets
/// the short form its twin past the page shares, which `aea show`
/// refuses as ambiguous, and which is not the reference `check --all`,
/// the hooks or a later page print for it.
#[test]
fn a_first_page_gives_the_references_the_whole_inbox_gives() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let inbox = web.join(".aea");
    let first = env.question(&api, "web", "first");
    let second = env.question(&api, "web", "second");
    std::fs::rename(inbox.join(file_of(&web, &first)), inbox.join(TWINS[0])).unwrap();
    std::fs::rename(inbox.join(file_of(&web, &second)), inbox.join(TWINS[1])).unwrap();

    forget(&env, &web);
    let whole = env.json(&web, &["check", "--all"]);
    let whole_ref = whole["messages"][0]["ref"].as_str().unwrap().to_string();
    assert_eq!(whole["messages"][0]["file"], TWINS[0], "{whole}");
    forget(&env, &web);
    let page = env.json(&web, &["check", "--limit", "1"]);
    assert_eq!(page["messages"][0]["file"], TWINS[0], "{page}");
    let page_ref = page["messages"][0]["ref"].as_str().unwrap();
    let shown = env.run(&web, &["show", page_ref]);
    assert!(
        shown.status.success(),
        "the page's reference does not resolve: {}",
        stderr(&shown)
    );
    assert_eq!(page_ref, whole_ref, "{page}");
}

/// Two byte-identical forged files of one (sender, id): a whole listing
/// lists both as invalid and moves neither. A first page with nothing
/// remembered groups them by the (sender, id) they claim before their
/// signatures are checked, finds both forged, and still sets the second
/// aside in the quarantine as a "replay" of the first: a paged `check`
/// moves a file a whole listing leaves alone, and the invalid files then
/// listed depend on which `check` ran first.
#[test]
fn a_first_page_does_not_set_aside_a_forgery_as_a_replay_of_another() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let inbox = web.join(".aea");
    let real = env.question(&api, "web", "Which port?");
    env.question(&api, "web", "Which host?");
    let mut value: Value =
        serde_json::from_slice(&std::fs::read(inbox.join(file_of(&web, &real))).unwrap()).unwrap();
    // A new id and a priority the signature does not cover.
    value["message_id"] = "6f0e2a94-5d1b-4c8e-9a7f-0000000000ff".into();
    value["priority"] = "urgent".into();
    let forged = [
        "message-20261201T000000000Z-from-api-0000000a.json",
        "message-20261202T000000000Z-from-api-0000000b.json",
    ];
    for name in forged {
        std::fs::write(inbox.join(name), value.to_string()).unwrap();
    }
    let invalid_files = |report: &Value| -> Vec<String> {
        let mut names: Vec<String> = report["invalid"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["file"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    };

    // What a whole listing with nothing remembered says.
    forget(&env, &web);
    let whole = env.json(&web, &["check", "--all"]);
    assert_eq!(invalid_files(&whole), forged, "{whole}");

    // A first page with nothing remembered.
    forget(&env, &web);
    let page = env.json(&web, &["check"]);
    for name in forged {
        assert!(
            inbox.join(name).exists(),
            "a plain check set {name} aside as a replay of a forgery: {page}"
        );
    }
    assert_eq!(invalid_files(&page), forged, "{page}");
    forget(&env, &web);
    let after = env.json(&web, &["check", "--all"]);
    assert_eq!(invalid_files(&after), forged, "{after}");
}

/// `check` lists a page: the first messages in processing order, the rest
/// counted; `--limit` and `--all` choose otherwise, and `--json` pages the
/// same way. A hook names a few new messages and counts the rest.
#[test]
fn check_lists_a_page_and_counts_the_rest() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    for n in 0..24 {
        env.question(&api, "web", &format!("question {n}"));
    }
    let urgent = env.send(
        &api,
        "web",
        &[
            "--type",
            "issue",
            "--priority",
            "urgent",
            "--subject",
            "fire",
        ],
    );
    for n in 0..3 {
        std::fs::write(
            web.join(".aea").join(format!(
                "message-20260101T00000{n}Z-from-api-0000000{n}.json"
            )),
            "{not json",
        )
        .unwrap();
    }
    let hook = env.ok(&web, &["check", "--hook", "plain"]);
    assert!(hook.contains("25 unprocessed messages"), "{hook}");
    assert!(
        hook.contains("and 20 more"),
        "a hook names every new message: {hook}"
    );
    assert_eq!(refs_named(&hook), 5, "{hook}");

    let all = env.json(&web, &["check", "--all"]);
    let ids = report_ids;
    assert_eq!(ids(&all).len(), 25);
    assert_eq!(ids(&all)[0], urgent, "processing order: urgent first");
    assert_eq!(
        (all["more"].as_u64(), all["more_invalid"].as_u64()),
        (Some(0), Some(0))
    );

    let page = env.json(&web, &["check"]);
    assert_eq!(
        ids(&page),
        ids(&all)[..20],
        "the page is the first twenty in order"
    );
    assert_eq!(page["more"], 5);
    assert_eq!(
        page["unprocessed"], 25,
        "totals are the inbox's, not the page's"
    );
    assert_eq!(page["invalid"].as_array().unwrap().len(), 3);

    let small = env.json(&web, &["check", "--limit", "2"]);
    assert_eq!(ids(&small), ids(&all)[..2]);
    assert_eq!(
        (small["more"].as_u64(), small["more_invalid"].as_u64()),
        (Some(23), Some(1))
    );
    assert_eq!(small["invalid"].as_array().unwrap().len(), 2);
    let text = env.ok(&web, &["check", "--limit", "2"]);
    assert!(text.contains("... and 23 more"), "{text}");
    assert!(text.contains("3 invalid files"), "{text}");
    assert_eq!(text.matches("     ref ").count(), 2, "{text}");

    let zero = env.run(&web, &["check", "--limit", "0"]);
    assert_eq!(code(&zero), 2, "a page of nothing: {}", stderr(&zero));
    let both = env.run(&web, &["check", "--limit", "3", "--all"]);
    assert_eq!(code(&both), 2, "{}", stderr(&both));
}

/// A first page of a flood checks the signatures of what it lists only:
/// the rest are read for their place in the order and counted. A forged
/// message on the page is an invalid file and the page fills up past it;
/// one past the page is counted until it is judged, and `--all` judges
/// every one.
#[test]
fn a_first_page_judges_what_it_lists_and_counts_the_rest() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    for n in 0..30 {
        env.question(&api, "web", &format!("question {n:02}"));
    }
    // Two signed messages rewritten after signing: one that sorts first
    // (urgent), one that sorts last (low).
    let forge = |priority: &str, subject: &str| {
        env.send(
            &api,
            "web",
            &[
                "--type",
                "question",
                "--priority",
                priority,
                "--subject",
                subject,
            ],
        );
        let file = inbox_files(&web)
            .into_iter()
            .map(|n| web.join(".aea").join(n))
            .find(|p| std::fs::read_to_string(p).unwrap().contains(subject))
            .unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, text.replace(subject, &subject.to_uppercase())).unwrap();
    };
    forge("urgent", "first forged");
    forge("low", "last forged");
    // A deferred message goes after the rest, judged or not.
    let all = env.json(&web, &["check", "--all"]);
    let deferred = all["messages"][0]["id"].as_str().unwrap().to_string();
    env.ok(&web, &["process", &deferred, "--outcome", "deferred"]);

    let state = env.state(&web).join("seen");
    let forget = || {
        for memo in ["report.json", "page.json"] {
            let _ = std::fs::remove_file(state.join(memo));
        }
    };
    forget();
    let page = env.json(&web, &["check", "--limit", "5"]);
    assert_eq!(page["messages"].as_array().unwrap().len(), 5, "{page}");
    assert_eq!(
        page["invalid"].as_array().unwrap().len(),
        1,
        "the forged one on the page: {page}"
    );
    assert!(
        page["invalid"][0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("forged"),
        "{page}"
    );
    assert_eq!(page["unjudged"], 26, "{page}");
    assert_eq!(page["more"], 26, "{page}");
    assert_eq!(
        page["unprocessed"], 31,
        "the forged one past the page is still counted: {page}"
    );
    assert_eq!(page["deferred"], 1, "{page}");

    forget();
    let all = env.json(&web, &["check", "--all"]);
    assert_eq!(all["invalid"].as_array().unwrap().len(), 2, "{all}");
    assert_eq!(all["unprocessed"], 30, "{all}");
    assert!(all.get("unjudged").is_none(), "{all}");
    let ids = report_ids;
    assert_eq!(
        ids(&page),
        ids(&all)[..5],
        "the page is the start of the whole order"
    );
    assert_eq!(
        ids(&all).last(),
        Some(&deferred),
        "deferred mail is listed last"
    );
    assert!(
        page["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["sender"] == "verified")
    );
    let text = env.ok(&web, &["check", "--all"]);
    assert!(!text.contains("of the first"), "{text}");
    forget();
    let text = env.ok(&web, &["check", "--limit", "5"]);
    assert!(
        text.contains("of the first 5 waiting for approval"),
        "{text}"
    );
}

/// `--quiet` leaves out the list, not the answer: `check` and `pending`
/// still say how many wait.
#[test]
fn quiet_check_and_pending_say_how_many_wait() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    assert_eq!(
        env.ok(&web, &["check", "-q"]).trim(),
        "web: no unprocessed messages"
    );
    env.question(&api, "web", "port?");
    env.urgent(&api, "web", "issue", "down");
    let out = env.ok(&web, &["check", "--quiet"]);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(
        out.starts_with("web: 2 unprocessed messages (1 waiting for approval)"),
        "{out}"
    );
    let out = env.ok(&web, &["pending", "-q"]);
    assert_eq!(out.trim(), "1 message waiting for a person's approval:");
}
