//! What a new user trips on: documented config keys, completions and the
//! man page, log filters that say nothing, `status` and `show` of sent and
//! archived mail, `thread` across inbox and sent, a relative config dir,
//! and hints that name a command that refuses.

use crate::common::*;

#[test]
fn documented_config_keys_are_not_called_unknown() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let config = web.join(".aea/agent-config.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(
        "sync:\n  remote: /nowhere/mail.git\nbridges:\n  - protocol: roo\n    path: .roo/mailbox\n",
    );
    std::fs::write(&config, &text).unwrap();
    for args in [&["validate"][..], &["doctor"]] {
        let out = env.run(&web, args);
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(!all.contains("unknown"), "{args:?}: {all}");
        assert!(!all.contains("not a valid aea config"), "{args:?}: {all}");
    }

    std::fs::write(&config, format!("{text}colour: blue\n")).unwrap();
    for args in [&["validate"][..], &["doctor"]] {
        let out = env.run(&web, args);
        assert_ne!(code(&out), 0, "{args:?}");
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(all.contains("colour"), "{args:?}: {all}");
    }
}

#[test]
fn completions_and_man_page_cover_the_subcommands() {
    let env = TestEnv::new();
    let dir = env.path();
    for shell in ["bash", "zsh", "fish"] {
        let text = env.ok(&dir, &["completions", shell]);
        for sub in ["send", "check", "review", "doctor"] {
            assert!(text.contains(sub), "{shell} completion lacks {sub}");
        }
    }
    let man = env.ok(&dir, &["man"]);
    assert!(man.starts_with(".ie") || man.contains(".TH aea 1"), "{man}");
    for sub in ["aea\\-send", "aea\\-review", "aea\\-completions"] {
        assert!(man.contains(sub), "man page lacks {sub}");
    }
    assert_eq!(code(&env.run(&dir, &["completions", "tcsh"])), 2);
}

/// Mail signed with a registered agent's key but sent from another folder
/// (a copy of the repository, a kept demo's `api` using the user's keys)
/// is flagged by `check` and `show`, not taken silently as that agent's.
#[test]
fn mail_from_a_registered_id_in_another_folder_is_flagged() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let copy = env.path().join("api-copy");
    let cp = std::process::Command::new("cp")
        .arg("-r")
        .arg(&api)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(cp.success());
    let id = env.send(
        &copy,
        "web",
        &["--type", "update", "--subject", "from the copy"],
    );
    let ok = env.send(&api, "web", &["--type", "update", "--subject", "from api"]);

    let report = env.json(&web, &["check"]);
    let item = |id: &str| {
        report["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(
        item(&id)["sender_path_mismatch"],
        api.display().to_string(),
        "{report}"
    );
    assert!(item(&ok).get("sender_path_mismatch").is_none(), "{report}");
    let text = env.ok(&web, &["check"]);
    assert!(text.contains("NOT FROM api's REGISTERED FOLDER"), "{text}");

    let reference = env.short_ref(&web, &id);
    let shown = env.ok(&web, &["show", &reference]);
    assert!(
        shown.contains(&format!("but api is registered at {}", api.display())),
        "{shown}"
    );
    let json = env.json(&web, &["show", &reference]);
    assert_eq!(json["sender_path_mismatch"], api.display().to_string());
}

#[test]
fn log_of_a_message_with_no_entries_says_so() {
    let env = TestEnv::new();
    let api = env.repo("api");
    env.repo("web");
    let id = env.send(&api, "web", &["--type", "update", "--subject", "s"]);
    let out = env.run(&api, &["log", "--message", "zzzz"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no log entries for message \"zzzz\""),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty());
    // With another filter the hint names it.
    let out = env.run(&api, &["log", "--message", &id, "--event", "approved"]);
    assert_eq!(code(&out), 3);
    assert!(
        stderr(&out).contains("drop `--since`/`--event`"),
        "{}",
        stderr(&out)
    );
    // A message with entries still lists them.
    let found = env.ok(&api, &["log", "--message", &id]);
    assert!(found.contains("sent"), "{found}");
    // The event names are in the help.
    let help = env.ok(&api, &["log", "--help"]);
    assert!(help.contains("lost_on_remote"), "{help}");
}

/// The recipient's gc moved the message, expired unprocessed, into its
/// `.archive/`: `status` on the same machine says so.
#[test]
fn status_sees_mail_the_recipient_archived_as_expired() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.send(
        &api,
        "web",
        &["--type", "update", "--subject", "short", "--expires", "1h"],
    );
    let gc = env
        .cmd(&web)
        .env("AEA_TEST_NOW", "2099-01-01T00:00:00.000Z")
        .args(["--json", "gc"])
        .output()
        .unwrap();
    assert_eq!(code(&gc), 0, "{}", stderr(&gc));
    assert!(inbox_files(&web).is_empty(), "gc archived it");
    let status = env.json(&api, &["status", &id]);
    assert_eq!(status["recipients"][0]["state"], "expired", "{status}");
    let text = env.ok(&api, &["status", &id]);
    assert!(
        text.contains("expired before the recipient processed it"),
        "{text}"
    );
}

#[test]
fn status_of_an_unknown_reference_points_at_what_was_sent() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let out = env.run(&api, &["status", "nope"]);
    assert_eq!(code(&out), 3);
    let err = stderr(&out);
    assert!(err.contains("no sent message matches \"nope\""), "{err}");
    assert!(
        err.contains("`aea sent` lists what this repository sent"),
        "{err}"
    );
    assert!(!err.contains("aea check"), "{err}");
}

/// After a person rejected gated mail, every hint names the command that
/// works: `process --outcome ignored`, never `approve`, which refuses.
#[test]
fn hints_after_a_rejection_name_a_command_that_works() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.send(
        &api,
        "web",
        &["--type", "handoff", "--subject", "take it", "--body", "b"],
    );
    let reference = env.short_ref(&web, &id);
    env.ok(&web, &["reject", &reference, "--reason", "no"]);

    let process = env.run(&web, &["process", &reference]);
    assert_eq!(code(&process), 5, "{}", stderr(&process));
    let hint = format!("aea process {reference} --outcome ignored");
    assert!(stderr(&process).contains(&hint), "{}", stderr(&process));
    assert!(
        !stderr(&process).contains("aea approve"),
        "{}",
        stderr(&process)
    );

    let approve = env.run(&web, &["approve", &reference]);
    assert_ne!(code(&approve), 0);
    assert!(stderr(&approve).contains(&hint), "{}", stderr(&approve));

    env.ok(&web, &["process", &reference, "--outcome", "ignored"]);
}

/// `show` finds mail outside the inbox and says where it is: the sender's
/// own sent copy, and the recipient's archived one; `sent` lists what was
/// sent with how far it got.
#[test]
fn show_finds_sent_and_archived_mail_and_sent_lists_it() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.send(
        &api,
        "web",
        &["--type", "update", "--subject", "short", "--expires", "1h"],
    );
    let shown = env.json(&api, &["show", &id]);
    assert_eq!(shown["place"], "sent", "{shown}");
    assert_eq!(shown["message"]["message_id"], id.as_str());
    let text = env.ok(&api, &["show", &id]);
    assert!(text.starts_with("SENT by this repository"), "{text}");
    assert!(
        text.contains("sender:       this repository (its own copy)"),
        "{text}"
    );

    let listed = env.json(&api, &["sent"]);
    let first = &listed["messages"][0];
    assert_eq!(first["id"], id.as_str(), "{listed}");
    assert_eq!(first["recipients"][0]["state"], "delivered", "{listed}");
    let text = env.ok(&api, &["sent"]);
    assert!(text.contains("to web") && text.contains("short"), "{text}");

    let gc = env
        .cmd(&web)
        .env("AEA_TEST_NOW", "2099-01-01T00:00:00.000Z")
        .arg("gc")
        .output()
        .unwrap();
    assert_eq!(code(&gc), 0, "{}", stderr(&gc));
    let shown = env.json(&web, &["show", &id]);
    assert_eq!(shown["place"], "archive", "{shown}");
    assert_eq!(shown["sender"]["state"], "verified", "{shown}");
    let text = env.ok(&web, &["show", &id]);
    assert!(text.starts_with("ARCHIVED by `aea gc`"), "{text}");
    assert_eq!(
        env.json(&api, &["sent"])["messages"][0]["recipients"][0]["state"],
        "expired"
    );
}

/// `aea agents` names the mail remote an agent is reached through, with a
/// password in its URL hidden.
#[test]
fn agents_lists_a_remote_agents_url() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let key = env.public_key("web");
    env.ok(
        &api,
        &[
            "agents",
            "add",
            "web",
            "--remote",
            "https://me:s3cret@git.example/mail.git",
            "--key",
            &key,
        ],
    );
    let listed = env.ok(&api, &["agents"]);
    let line = listed.lines().find(|l| l.starts_with("web ")).unwrap();
    assert!(
        line.contains("remote https://me:***@git.example/mail.git"),
        "{listed}"
    );
    assert!(!listed.contains("s3cret"), "{listed}");
}

/// `aea thread` gathers a conversation from the inbox and the sent copies,
/// oldest first, and leaves other conversations out.
#[test]
fn thread_lists_a_conversation_across_inbox_and_sent() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let question = env.question(&api, "web", "Which port?");
    env.question(&api, "web", "Something else");
    let reference = env.short_ref(&web, &question);
    env.ok(&web, &["reply", &reference, "--body", "5173"]);

    let thread = env.json(&api, &["thread", &question]);
    assert_eq!(thread["conversation"], question.as_str(), "{thread}");
    let messages = thread["messages"].as_array().unwrap();
    let places: Vec<_> = messages.iter().map(|m| m["place"].clone()).collect();
    assert_eq!(places, ["sent", "inbox"], "{thread}");
    assert_eq!(messages[0]["id"], question.as_str());
    assert_eq!(messages[1]["reply_to"], question.as_str());
    assert_eq!(messages[1]["sender"], "verified");
    // From the other side, by the reply's reference.
    let reply_id = messages[1]["id"].as_str().unwrap();
    let text = env.ok(&web, &["thread", reply_id]);
    assert!(
        text.starts_with(&format!("conversation {question}: 2 messages")),
        "{text}"
    );
    assert!(!text.contains("Something else"), "{text}");
}

/// `AEA_CONFIG_DIR=cfg` (relative) put the private key in `./cfg/keys/`:
/// inside the repository, one `git add .` from being committed, and
/// another key in every folder a command ran from. It is refused.
#[test]
fn a_relative_config_dir_is_refused_before_a_key_is_written() {
    let env = TestEnv::new();
    let repo = env.path().join("rel");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    let out = env
        .cmd(&repo)
        .env_remove("AEA_REGISTRY")
        .env("AEA_CONFIG_DIR", "cfg")
        .args(["init", "--no-agent-files"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("AEA_CONFIG_DIR"), "{}", stderr(&out));
    assert!(
        !repo.join("cfg").exists(),
        "a key was written in the repository"
    );
    assert!(!repo.join(".aea").exists());
}

/// The flag on mail from a registered id in another folder is not lost
/// where the same message is listed again: in `aea thread`.
#[test]
fn thread_flags_mail_from_a_registered_id_in_another_folder() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let copy = env.path().join("api-copy");
    let cp = std::process::Command::new("cp")
        .arg("-r")
        .arg(&api)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(cp.success());
    let id = env.send(&copy, "web", &["--type", "update", "--subject", "copy"]);
    let text = env.ok(&web, &["thread", &id]);
    assert!(text.contains("NOT FROM api's REGISTERED FOLDER"), "{text}");
}

/// A YAML error in the config is said once, as the config's problem: no
/// false "no registry" with advice that makes things worse, and `agents`
/// says the config does not read rather than "id mismatch".
#[test]
fn a_broken_config_is_not_blamed_on_the_registry() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let config = web.join(".aea/agent-config.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("rules:\n  - id: x\n   type: question\n");
    std::fs::write(&config, text).unwrap();
    let doctor = stdout(&env.run(&web, &["doctor"]));
    assert!(doctor.contains("FIX   config"), "{doctor}");
    assert!(!doctor.contains("no registry available"), "{doctor}");
    assert!(!doctor.contains("AEA_REGISTRY"), "{doctor}");
    let agents = env.json(&web, &["agents"]);
    let web_entry = agents["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == "web")
        .unwrap()
        .clone();
    assert_eq!(web_entry["health"], "config_invalid", "{agents}");
    assert!(env.ok(&web, &["agents"]).contains("config does not read"));
}

/// Without USER (containers, CI, sudo), the account's own name is used
/// for the message's sender, the log and a person's approval alike.
#[test]
fn without_user_the_account_name_is_used_everywhere() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let bare = |dir: &std::path::Path, args: &[&str]| {
        let out = env.cmd(dir).env_remove("USER").args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    let account = {
        let out = std::process::Command::new("id")
            .arg("-un")
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let sent: serde_json::Value = serde_json::from_str(&bare(
        &api,
        &[
            "--json",
            "send",
            "--to",
            "web",
            "--type",
            "handoff",
            "--priority",
            "urgent",
            "--subject",
            "s",
            "--body",
            "b",
        ],
    ))
    .unwrap();
    let id = sent["message_id"].as_str().unwrap();
    let shown = env.json(&web, &["show", id]);
    assert_eq!(
        shown["message"]["from"]["user"],
        account.as_str(),
        "{shown}"
    );
    bare(&web, &["approve", id]);
    let record = env.json(&web, &["show", id])["approval_record"].clone();
    assert_eq!(record["by"], account.as_str(), "{record}");
    assert_eq!(record["user"], account.as_str(), "{record}");
    let log = std::fs::read_to_string(web.join(".aea/agent.log")).unwrap();
    assert!(log.contains(&format!("\"actor\":\"{account}\"")), "{log}");
    assert!(!log.contains("unknown"), "{log}");
}

/// A wrong folder is said for what it is: a path that does not exist,
/// spelled without its `..`; the folder that holds the repositories names
/// them.
#[test]
fn a_wrong_folder_is_named_for_what_it_is() {
    let env = TestEnv::new();
    let web = env.repo("web");
    env.repo("api");
    let out = env.run(&web, &["-C", "../nowhere", "check"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let nowhere = env.path().join("nowhere");
    assert!(
        stderr(&out).contains(&format!("cannot find {}", nowhere.display())),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains(".."), "{}", stderr(&out));
    assert!(!stderr(&out).contains("aea init"), "{}", stderr(&out));
    let out = env.run(&env.path(), &["check"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("holds the repositories api, web"),
        "{}",
        stderr(&out)
    );
}

/// The README's lines for completions and the man page run as written on
/// a fresh home, and leave a script and a page behind.
#[test]
fn the_readme_completion_and_man_lines_work_on_a_fresh_home() {
    let env = TestEnv::new();
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let block = readme
        .split("```sh\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .find(|b| b.contains("aea completions bash"))
        .expect("the README shows how to install completions");
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("aea")).unwrap();
    let home = env.path().join("fresh-home");
    std::fs::create_dir_all(&home).unwrap();
    let out = std::process::Command::new("sh")
        .args(["-ec", block])
        .env_clear()
        .env("HOME", &home)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .current_dir(&home)
        .output()
        .unwrap();
    assert!(out.status.success(), "{block}\n{}", stderr(&out));
    let completion =
        std::fs::read_to_string(home.join(".local/share/bash-completion/completions/aea")).unwrap();
    assert!(completion.contains("_aea"), "{completion}");
    let page = std::fs::read_to_string(home.join(".local/share/man/man1/aea.1")).unwrap();
    assert!(page.contains(".TH"), "{page}");
}

/// The man page has a section per command with its options, and bash
/// completes `send --to` with the registered agents' ids.
#[test]
fn the_man_page_details_each_command_and_to_completes_agent_ids() {
    let env = TestEnv::new();
    let web = env.repo("web");
    env.repo("docs");
    let page = env.ok(&web, &["man"]);
    for section in [
        ".SS \"aea send\"",
        ".SS \"aea agents add\"",
        ".SS \"aea approvers require\"",
    ] {
        assert!(page.contains(section), "no {section}");
    }
    assert!(
        page.contains("\\fB--via-remote\\fR"),
        "send's options are listed"
    );
    assert_eq!(env.ok(&web, &["agents", "ids"]), "docs\nweb\n");
    let script = env.path().join("aea.bash");
    std::fs::write(&script, env.ok(&web, &["completions", "bash"])).unwrap();
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("aea")).unwrap();
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {}; COMP_WORDS=(aea send --to we); COMP_CWORD=3; COMP_LINE='aea send --to we'; _aea aea we --to; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        ))
        .env_clear()
        .env("HOME", env.path().join("home"))
        .env("AEA_REGISTRY", env.registry())
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .current_dir(&web)
        .output()
        .unwrap();
    let offered = stdout(&out);
    assert!(
        offered.lines().any(|l| l == "web"),
        "offered: {offered:?} {}",
        stderr(&out)
    );
    assert!(
        !offered.lines().any(|l| l == "docs"),
        "only what matches `we`: {offered:?}"
    );
}

/// `-C` into a folder inside a repository names that repository, as a
/// `cd` there does; `init` run there by mistake says it makes a second
/// inbox inside the first.
#[test]
fn a_subfolder_names_its_repository_and_init_there_says_so() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.question(&api, "web", "port?");
    let sub = web.join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let listed = env.json(&api, &["-C", sub.to_str().unwrap(), "check"]);
    assert_eq!(listed["messages"][0]["id"], id.as_str(), "{listed}");
    let out = env.run(
        &api,
        &["-C", web.join("nowhere").to_str().unwrap(), "check"],
    );
    assert_ne!(code(&out), 0);
    assert!(!stderr(&out).contains("aea init"), "{}", stderr(&out));

    let out = env.run(&sub, &["init", "--no-agent-files"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("inside the repository of agent web") && err.contains("uninstall --purge"),
        "{err}"
    );
}
