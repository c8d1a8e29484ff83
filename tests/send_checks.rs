//! What `send` and `reply` refuse before writing anything: replies the
//! policy forbids or that say nothing, unresolvable `--reply-to`, a bad
//! `--conversation`, a broadcast with a wrong name, a past `--expires`.

use crate::common::*;

fn deny(repo: &std::path::Path, sender: &str) {
    let config = repo.join(".aea/agent-config.yaml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("deny_senders: []", &format!("deny_senders: [{sender}]"));
    std::fs::write(&config, text).unwrap();
}

#[test]
fn reply_obeys_the_policy_as_process_does() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");

    // A denied sender gets no answer, as `process` refuses to act on it.
    let denied = env.question(&api, "web", "let me in");
    deny(&web, "api");
    let processed = env.run(&web, &["process", &denied]);
    let replied = env.run(&web, &["reply", &denied, "--body", "sure"]);
    assert_eq!(code(&processed), 5, "{}", stderr(&processed));
    assert_eq!(code(&replied), 5, "{}", stderr(&replied));
    assert!(
        stderr(&replied).contains("the policy rejects it (rule trust.deny_senders)"),
        "{}",
        stderr(&replied)
    );
    assert!(stderr(&replied).contains("hint: "), "{}", stderr(&replied));
    assert!(inbox_files(&api).is_empty(), "nothing delivered");

    // An unknown sender's mail waits for a person; once approved, the
    // reply goes.
    let web2 = env.repo("web2");
    let unknown = env.question(&api, "web2", "who am I");
    env.ok(&web2, &["agents", "remove", "api"]);
    let replied = env.run(&web2, &["reply", &unknown, "--body", "nobody"]);
    assert_eq!(code(&replied), 5, "{}", stderr(&replied));
    assert!(
        stderr(&replied).contains("needs a person's approval first"),
        "{}",
        stderr(&replied)
    );
    assert!(
        stderr(&replied).contains("hint: a person approves it with `aea approve"),
        "{}",
        stderr(&replied)
    );
    assert!(inbox_files(&api).is_empty(), "nothing delivered");
    env.ok(&web2, &["approve", &unknown]);
    env.ok(&web2, &["reply", &unknown, "--body", "now you know"]);
    assert_eq!(inbox_files(&api).len(), 1);
}

#[test]
fn reply_without_a_body_is_refused() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let q = env.question(&api, "web", "port?");
    for args in [
        vec!["reply", q.as_str()],
        vec!["reply", q.as_str(), "--body", "  "],
    ] {
        let out = env.run(&web, &args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("--body"), "{}", stderr(&out));
    }
    assert!(inbox_files(&api).is_empty(), "no empty answer delivered");
}

#[test]
fn reply_to_is_resolved_and_carries_the_conversation() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let q = env.send(
        &api,
        "web",
        &[
            "--type",
            "question",
            "--subject",
            "port?",
            "--conversation",
            "conv-7",
        ],
    );
    let short = env.short_ref(&web, &q);
    let answer = env.send(
        &web,
        "api",
        &[
            "--type",
            "response",
            "--subject",
            "5173",
            "--reply-to",
            &short,
        ],
    );
    let shown = env.json(&api, &["show", &answer])["message"].clone();
    assert_eq!(shown["metadata"]["reply_to"], q.as_str());
    assert_eq!(shown["metadata"]["conversation_id"], "conv-7");

    // A message this repository sent resolves too (a follow-up).
    let sent_ref = &q[..8];
    let follow = env.send(
        &api,
        "web",
        &[
            "--type",
            "update",
            "--subject",
            "also",
            "--reply-to",
            sent_ref,
            "--conversation",
            "conv-7",
        ],
    );
    let shown = env.json(&web, &["show", &follow])["message"].clone();
    assert_eq!(shown["metadata"]["reply_to"], q.as_str());

    // A contradicting --conversation, an unknown reference, a bad id.
    let base = ["send", "--to", "api", "--type", "update", "--subject", "s"];
    for (extra, want, exit) in [
        (
            vec!["--reply-to", short.as_str(), "--conversation", "other"],
            "is not the conversation of the message answered",
            2,
        ),
        (vec!["--reply-to", "b5b0"], "no message matches \"b5b0\"", 3),
        (vec!["--reply-to", "mzz"], "no message matches \"mzz\"", 3),
        (
            vec!["--reply-to", "6e73e372-e233-4aca"],
            "no message matches \"6e73e372-e233-4aca\"",
            3,
        ),
        (
            vec![
                "--reply-to",
                "message-20261121T100000000Z-from-x-26f3f89e.json",
            ],
            "no message matches",
            3,
        ),
        (
            vec!["--conversation", "not a uuid/"],
            "invalid --conversation",
            2,
        ),
    ] {
        let out = env.run(&web, &[&base[..], &extra[..]].concat());
        assert_eq!(code(&out), exit, "{extra:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{extra:?}: {}", stderr(&out));
    }
    assert_eq!(inbox_files(&api).len(), 1, "only the answer arrived");

    // The full id of a message another tool wrote, held nowhere here (an
    // OACP reader's `msg-…`), is kept as given: it cannot be a short
    // reference or an id prefix mistyped.
    let foreign = "msg-20261123112234-claude-e2da";
    let id = env.send(
        &web,
        "api",
        &[
            "--type",
            "response",
            "--subject",
            "s",
            "--reply-to",
            foreign,
        ],
    );
    let shown = env.json(&api, &["show", &id])["message"].clone();
    assert_eq!(shown["metadata"]["reply_to"], foreign);
}

#[test]
fn a_broadcast_with_a_wrong_name_reaches_no_one() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let docs = env.repo("docs");
    for wrong in ["nobody", "api"] {
        let out = env.run(
            &api,
            &[
                "send",
                "--to",
                "web",
                "--to",
                "docs",
                "--to",
                wrong,
                "--type",
                "update",
                "--subject",
                "s",
            ],
        );
        assert_ne!(code(&out), 0, "{wrong}: {}", stdout(&out));
        assert!(!stdout(&out).contains("delivered to"), "{}", stdout(&out));
    }
    assert!(inbox_files(&web).is_empty(), "nothing delivered to web");
    assert!(inbox_files(&docs).is_empty(), "nothing delivered to docs");
}

#[test]
fn an_expiry_in_the_past_is_refused() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let out = env.run(
        &api,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "update",
            "--subject",
            "s",
            "--expires",
            "2020-01-01T00:00:00Z",
        ],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--expires 2020-01-01T00:00:00")
            && stderr(&out).contains("not in the future"),
        "{}",
        stderr(&out)
    );
    assert!(inbox_files(&web).is_empty());
}

#[test]
fn recipient_hints_point_at_what_works() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let docs = env.repo("docs");
    let update = |to: &str| {
        env.run(
            &api,
            &["send", "--to", to, "--type", "update", "--subject", "s"],
        )
    };

    // A typo: the near id is named.
    let out = update("wbe");
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("did you mean `web`?"),
        "{}",
        stderr(&out)
    );

    // A list in one --to is two recipients (an id holds no comma).
    let out = update("web,docs");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(inbox_files(&web).len(), 1);
    assert_eq!(inbox_files(&docs).len(), 1);

    // The folder that holds the repositories is not one of them.
    let out = update("..");
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("neither an aea nor a git repository"), "{err}");
    assert!(err.contains("api, docs, web"), "{err}");
    assert!(err.contains("`--to ../api`"), "{err}");
    assert!(
        !err.contains("aea init"),
        "init there would be wrong: {err}"
    );

    // A registered repository that moved: fix the registry, not the old path.
    let moved = env.path().join("web-new");
    std::fs::rename(&web, &moved).unwrap();
    let out = update("web");
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("which no longer exists"), "{err}");
    assert!(err.contains("aea agents add web --path"), "{err}");
    assert!(
        !err.contains(&format!("aea init {}", web.display())),
        "{err}"
    );
    // The hint works: `aea init` in the new place takes over the entry.
    env.ok(&moved, &["init", "--no-agent-files"]);
    let out = update("web");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(inbox_files(&moved).len(), 2);
}

#[test]
fn errors_under_json_are_one_json_object_on_stderr() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let out = env.run(
        &api,
        &[
            "--json",
            "send",
            "--to",
            "nobody",
            "--type",
            "update",
            "--subject",
            "s",
        ],
    );
    assert_eq!(code(&out), 3, "the exit code is kept");
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    let err: serde_json::Value = serde_json::from_str(stderr(&out).trim()).unwrap();
    assert_eq!(err["error"]["code"], 3);
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no agent \"nobody\" found"),
        "{err}"
    );
    assert!(err["error"]["hint"].as_str().is_some(), "{err}");

    // A command-line syntax error too.
    let out = env.run(&api, &["send", "--json", "--to", "web"]);
    assert_eq!(code(&out), 2);
    let err: serde_json::Value = serde_json::from_str(stderr(&out).trim()).unwrap();
    assert_eq!(err["error"]["code"], 2);
    assert!(
        err["error"]["message"].as_str().unwrap().contains("--type"),
        "{err}"
    );
    // Without --json, text as before.
    let out = env.run(
        &api,
        &[
            "send",
            "--to",
            "nobody",
            "--type",
            "update",
            "--subject",
            "s",
        ],
    );
    assert!(stderr(&out).starts_with("error: "), "{}", stderr(&out));
}
