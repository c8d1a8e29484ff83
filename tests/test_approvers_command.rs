//! Signed approvals (SPEC §19): `aea approvers`, and `approve`, `reject`,
//! `process` and `pending` where a person's decision must carry an
//! approver's SSH signature. Keys are made by the real `ssh-keygen`, and
//! signed with it from key files and from a real `ssh-agent`.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A new ed25519 key without passphrase in `dir`: the private key file
/// (`NAME`) and its public half (`NAME.pub`).
fn keygen(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let key = dir.join(name);
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&key)
        .stdin(Stdio::null())
        .status()
        .expect("these tests need OpenSSH's ssh-keygen (apt-get install openssh-client)");
    assert!(status.success());
    (key.clone(), key.with_extension("pub"))
}

/// A real ssh-agent on a socket of its own, killed when dropped.
struct SshAgent {
    child: Child,
    socket: PathBuf,
}

impl SshAgent {
    fn start(dir: &Path) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let socket = dir.join("agent.sock");
        let child = Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&socket)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("these tests need OpenSSH's ssh-agent");
        let agent = SshAgent { child, socket };
        assert!(
            poll_until(Duration::from_secs(10), || agent.socket.exists()),
            "ssh-agent did not open its socket"
        );
        agent
    }

    fn add(&self, key: &Path) {
        let out = Command::new("ssh-add")
            .arg(key)
            .env("SSH_AUTH_SOCK", &self.socket)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for SshAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Adds `name` with public key `public` as an approver, signed by
/// `private` (the first approver's own key, or a current approver's).
fn add_approver(env: &TestEnv, repo: &Path, name: &str, public: &Path, private: &Path) -> String {
    env.ok(
        repo,
        &[
            "approvers",
            "add",
            name,
            "--key",
            public.to_str().unwrap(),
            "--ssh-key",
            private.to_str().unwrap(),
        ],
    )
}

/// Two repositories and a gated handoff from api to web; its id.
fn setup(env: &TestEnv) -> (PathBuf, PathBuf, String) {
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.urgent(&api, "web", "handoff", "take over the release");
    (api, web, id)
}

/// Replaces `path` as an editor does, through a new file renamed over it:
/// the folder changes, so a listing does not serve what it remembered.
fn replace_file(path: &Path, bytes: impl AsRef<[u8]>) {
    let tmp = path.with_extension("edited");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn approvals_dir(env: &TestEnv, repo: &Path) -> PathBuf {
    env.state(repo).join("approvals")
}

fn listed_approval(env: &TestEnv, repo: &Path, id: &str) -> serde_json::Value {
    let check = env.json(repo, &["check"]);
    check["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("{id} not listed: {check}"))
        .clone()
}

#[test]
fn only_an_approvers_signature_approves() {
    let env = TestEnv::new();
    let (api, web, id) = setup(&env);
    let keys = env.path().join("keys");
    let (alice, alice_pub) = keygen(&keys, "alice");
    let (mallory, mallory_pub) = keygen(&keys, "mallory");

    // The first approver signs with its own key; from then on signatures
    // are required.
    let out = add_approver(&env, &web, "alice", &alice_pub, &alice);
    assert!(out.contains("signed by alice"), "{out}");
    let list = env.json(&web, &["approvers", "list"]);
    assert_fits("approvers-list", &list);
    assert_eq!(list["require_signature"], true);
    assert_eq!(list["approvers"][0]["name"], "alice");
    assert_eq!(list["approvers"][0]["key_type"], "ssh-ed25519");
    // doctor names who approves, by fingerprint: a list replaced whole
    // shows there as a key that is not yours.
    let doctor = stdout(&env.run(&web, &["doctor"]));
    let fingerprint = list["approvers"][0]["fingerprint"].as_str().unwrap();
    assert!(doctor.contains(&format!("alice {fingerprint}")), "{doctor}");

    // No key, and no ssh-agent: refused, nothing recorded.
    let out = env.run(&web, &["approve", &id]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no approver's key"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("hint: pass --ssh-key"),
        "{}",
        stderr(&out)
    );
    // Another key: refused, nothing recorded.
    let out = env.run(
        &web,
        &["approve", &id, "--ssh-key", mallory.to_str().unwrap()],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not an approver's"),
        "{}",
        stderr(&out)
    );
    assert!(
        std::fs::read_dir(approvals_dir(&env, &web)).map_or(true, |d| d.count() == 0),
        "a refused approval wrote a record"
    );
    assert_eq!(listed_approval(&env, &web, &id)["approval"], "pending");
    let out = env.run(&web, &["process", &id]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));

    // `show` prints the digest the person's signature will bind, and
    // `approve` names it before signing.
    let shown = env.ok(&web, &["show", &id]);
    let digest =
        aea::fsutil::sha256_hex(&std::fs::read(web.join(".aea").join(file_of(&web, &id))).unwrap());
    assert!(
        shown.contains(&format!("sha256:       {}", &digest[..16])),
        "{shown}"
    );
    // The approver's key: approved, and `process` verifies it.
    // Naming other bytes than the inbox holds: refused before any signing.
    let alice_key = alice.to_str().unwrap();
    let out = env.run(
        &web,
        &[
            "approve",
            &id,
            "--sha256",
            "00000000",
            "--ssh-key",
            alice_key,
        ],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the file changed since"),
        "{}",
        stderr(&out)
    );
    let out = env.run(
        &web,
        &["approve", &id, "--sha256", "xyz", "--ssh-key", alice_key],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let out = env.run(
        &web,
        &[
            "approve",
            &id,
            "--note",
            "go",
            "--sha256",
            &digest[..16],
            "--ssh-key",
            alice_key,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("approved"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains(&format!("whose sha256 begins {}", &digest[..16])),
        "{}",
        stderr(&out)
    );
    assert_eq!(listed_approval(&env, &web, &id)["approval"], "approved");
    env.ok(&web, &["process", &id]);
    let log = std::fs::read_to_string(web.join(".aea/agent.log")).unwrap();
    assert!(log.contains("\"signed_by\":\"alice\""), "{log}");
    assert!(
        log.contains(&format!("\"signer_key\":\"{fingerprint}\"")),
        "{log}"
    );

    // A public key added by hand to the written-out allowed_signers makes
    // nobody an approver: aea reads the signed chain only.
    let written = env
        .path()
        .join("home/.config/aea/approvers/allowed_signers");
    let mut text = std::fs::read_to_string(&written).unwrap();
    text.push_str("mallory namespaces=\"aea-approval,aea-approvers\" ");
    text.push_str(&std::fs::read_to_string(&mallory_pub).unwrap());
    std::fs::write(&written, text).unwrap();
    let second = env.urgent(&api, "web", "handoff", "another one");
    let out = env.run(
        &web,
        &["approve", &second, "--ssh-key", mallory.to_str().unwrap()],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    // A rejection needs the signature too.
    let out = env.run(
        &web,
        &[
            "reject",
            &second,
            "--reason",
            "no",
            "--ssh-key",
            mallory.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    env.ok(
        &web,
        &[
            "reject",
            &second,
            "--reason",
            "no",
            "--ssh-key",
            alice.to_str().unwrap(),
        ],
    );
    assert_eq!(listed_approval(&env, &web, &second)["approval"], "rejected");
}

#[test]
fn a_record_edited_or_copied_approves_nothing() {
    let env = TestEnv::new();
    let (api, web, first) = setup(&env);
    let second = env.urgent(&api, "web", "handoff", "second");
    let keys = env.path().join("keys");
    let (alice, alice_pub) = keygen(&keys, "alice");
    let sign = ["--ssh-key", alice.to_str().unwrap()];

    // Approved before signatures were required: it counts then...
    env.ok(&web, &["approve", &second]);
    assert_eq!(listed_approval(&env, &web, &second)["approval"], "approved");
    env.ok(
        &web,
        &[
            &[
                "approvers",
                "add",
                "alice",
                "--key",
                alice_pub.to_str().unwrap(),
            ][..],
            &sign,
        ]
        .concat(),
    );
    // ...and not once they are: it shows in pending, with why.
    let item = listed_approval(&env, &web, &second);
    assert_eq!(item["approval"], "unverified", "{item}");
    assert!(
        item["approval_problem"]
            .as_str()
            .unwrap()
            .contains("not signed"),
        "{item}"
    );
    let pending = env.json(&web, &["pending"]);
    assert_fits("pending", &pending);
    assert!(
        pending["pending"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["id"] == second)
    );
    let text = env.ok(&web, &["pending"]);
    assert!(text.contains("NOT SIGNED BY AN APPROVER"), "{text}");
    assert_eq!(code(&env.run(&web, &["process", &second])), 5);

    // A person decides again: the unsigned record is kept aside.
    env.ok(&web, &[&["approve", &second][..], &sign].concat());
    assert_eq!(listed_approval(&env, &web, &second)["approval"], "approved");
    let aside =
        approvals_dir(&env, &web).join(format!("{}.json.unverified", file_of(&web, &second)));
    assert!(aside.exists(), "the unsigned record was not kept");

    // Edited by hand (the note): the signature no longer matches.
    env.ok(
        &web,
        &[&["approve", &first, "--note", "only staging"][..], &sign].concat(),
    );
    let record = approvals_dir(&env, &web).join(format!("{}.json", file_of(&web, &first)));
    let original = std::fs::read_to_string(&record).unwrap();
    replace_file(&record, original.replace("only staging", "production too"));
    let item = listed_approval(&env, &web, &first);
    assert_eq!(item["approval"], "unverified", "{item}");
    assert!(
        item["approval_problem"]
            .as_str()
            .unwrap()
            .contains("does not match"),
        "{item}"
    );
    assert_eq!(code(&env.run(&web, &["process", &first])), 5);
    replace_file(&record, &original);
    assert_eq!(listed_approval(&env, &web, &first)["approval"], "approved");

    // Copied onto another message, with that message's id, file and
    // digest: the signature was made for the first one.
    let third = env.urgent(&api, "web", "handoff", "third");
    let third_file = file_of(&web, &third);
    let third_sha =
        aea::fsutil::sha256_hex(&std::fs::read(web.join(".aea").join(&third_file)).unwrap());
    let mut copied: serde_json::Value = serde_json::from_str(&original).unwrap();
    copied["message_id"] = third.clone().into();
    copied["file"] = third_file.clone().into();
    copied["sha256"] = third_sha.into();
    std::fs::write(
        approvals_dir(&env, &web).join(format!("{third_file}.json")),
        serde_json::to_vec_pretty(&copied).unwrap(),
    )
    .unwrap();
    let item = listed_approval(&env, &web, &third);
    assert_eq!(item["approval"], "unverified", "{item}");
    assert_eq!(code(&env.run(&web, &["process", &third])), 5);

    // Copied into another repository's state for the same message: the
    // repository is part of what was signed.
    let docs = env.repo("docs");
    let bytes = std::fs::read(web.join(".aea").join(file_of(&web, &first))).unwrap();
    let name = file_of(&web, &first);
    plant(&docs, &name, &bytes);
    std::fs::create_dir_all(approvals_dir(&env, &docs)).unwrap();
    std::fs::write(
        approvals_dir(&env, &docs).join(format!("{name}.json")),
        &original,
    )
    .unwrap();
    let item = listed_approval(&env, &docs, &first);
    assert_eq!(item["approval"], "unverified", "{item}");
}

#[test]
fn the_approver_list_changes_only_by_an_approvers_signature() {
    let env = TestEnv::new();
    let (api, web, _id) = setup(&env);
    let keys = env.path().join("keys");
    let (alice, alice_pub) = keygen(&keys, "alice");
    let (bob, bob_pub) = keygen(&keys, "bob");
    let (mallory, mallory_pub) = keygen(&keys, "mallory");
    let path = |p: &PathBuf| p.to_str().unwrap().to_string();

    // The first approver must sign with the key it adds.
    let out = env.run(
        &web,
        &[
            "approvers",
            "add",
            "alice",
            "--key",
            &path(&alice_pub),
            "--ssh-key",
            &path(&mallory),
        ],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    env.ok(
        &web,
        &[
            "approvers",
            "add",
            "alice",
            "--key",
            &path(&alice_pub),
            "--ssh-key",
            &path(&alice),
        ],
    );
    let chain = env.path().join("home/.config/aea/approvers/changes.jsonl");
    let before = std::fs::read(&chain).unwrap();

    // Mallory cannot add herself, remove alice or turn signatures off.
    for args in [
        vec!["approvers", "add", "mallory", "--key", &path(&mallory_pub)],
        vec!["approvers", "require", "off"],
    ] {
        let mut args = args.iter().map(ToString::to_string).collect::<Vec<_>>();
        args.extend(["--ssh-key".to_string(), path(&mallory)]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = env.run(&web, &args);
        assert_eq!(code(&out), 5, "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("not an approver's"),
            "{}",
            stderr(&out)
        );
        assert_eq!(
            std::fs::read(&chain).unwrap(),
            before,
            "{args:?} changed the list"
        );
    }
    // Without a key at all, nothing is signed and nothing changes.
    let out = env.run(&web, &["approvers", "require", "off"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert_eq!(std::fs::read(&chain).unwrap(), before);

    // Alice adds bob; bob removes alice; bob, the last, cannot be removed.
    env.ok(
        &web,
        &[
            "approvers",
            "add",
            "bob",
            "--key",
            &path(&bob_pub),
            "--ssh-key",
            &path(&alice),
        ],
    );
    env.ok(
        &web,
        &["approvers", "remove", "alice", "--ssh-key", &path(&bob)],
    );
    let list = env.json(&web, &["approvers", "list"]);
    let names: Vec<&str> = list["approvers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["bob"]);
    assert_eq!(list["version"], 3);
    let out = env.run(
        &web,
        &["approvers", "remove", "bob", "--ssh-key", &path(&bob)],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    // Alice, removed, no longer approves.
    let id = env.urgent(&api, "web", "handoff", "after the removal");
    let out = env.run(&web, &["approve", &id, "--ssh-key", &path(&alice)]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));

    // A line appended by hand, signed by mallory's own key, is ignored and
    // said; doctor says it too.
    let mut forged: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&chain)
            .unwrap()
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    forged["version"] = 4.into();
    forged["require_signature"] = false.into();
    let mut text = std::fs::read_to_string(&chain).unwrap();
    text.push_str(&serde_json::to_string(&forged).unwrap());
    text.push('\n');
    std::fs::write(&chain, text).unwrap();
    let list = env.json(&web, &["approvers", "list"]);
    assert_eq!(list["version"], 3);
    assert_eq!(list["require_signature"], true);
    assert_eq!(list["ignored"]["line"], 4, "{list}");
    let doctor = env.run(&web, &["doctor"]);
    assert!(
        stdout(&doctor).contains("change nothing"),
        "{}",
        stdout(&doctor)
    );

    // Breaking the first line makes nobody an approver, and requires
    // signatures all the same: nothing approves, and doctor says why.
    let good = std::fs::read_to_string(&chain).unwrap();
    std::fs::write(&chain, format!("x{good}")).unwrap();
    let list = env.json(&web, &["approvers", "list"]);
    assert_eq!(list["version"], 0, "{list}");
    assert_eq!(list["ignored"]["line"], 1, "{list}");
    let out = env.run(&web, &["approve", &id]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("does not verify from line 1"),
        "{}",
        stderr(&out)
    );
    let doctor = env.run(&web, &["doctor"]);
    assert!(stdout(&doctor).contains("line 1"), "{}", stdout(&doctor));
    std::fs::write(&chain, good).unwrap();

    // Bob turns signatures off: approvals count unsigned again.
    env.ok(
        &web,
        &["approvers", "require", "off", "--ssh-key", &path(&bob)],
    );
    assert_eq!(
        env.json(&web, &["approvers", "list"])["require_signature"],
        false
    );
    env.ok(&web, &["approve", &id]);
}

#[test]
fn ssh_agent_signs_with_an_approvers_key() {
    let env = TestEnv::new();
    let (api, web, id) = setup(&env);
    let keys = env.path().join("keys");
    let (alice, alice_pub) = keygen(&keys, "alice");
    let (mallory, _) = keygen(&keys, "mallory");
    add_approver(&env, &web, "alice", &alice_pub, &alice);
    // An agent holding only another key: nothing to sign with.
    let agent = SshAgent::start(&env.path().join("agent"));
    agent.add(&mallory);
    let with_agent = |args: &[&str]| {
        env.cmd(&web)
            .env("SSH_AUTH_SOCK", &agent.socket)
            .args(args)
            .output()
            .unwrap()
    };
    let out = with_agent(&["approve", &id]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no approver's key"),
        "{}",
        stderr(&out)
    );
    // Alice's key in the agent, its private file gone: the agent signs.
    agent.add(&alice);
    std::fs::remove_file(&alice).unwrap();
    let out = with_agent(&["approve", &id]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(listed_approval(&env, &web, &id)["approval"], "approved");
    // `--ssh-key` naming the public half also signs through the agent.
    let second = env.urgent(&api, "web", "handoff", "second");
    let out = with_agent(&[
        "reject",
        &second,
        "--reason",
        "later",
        "--ssh-key",
        alice_pub.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(listed_approval(&env, &web, &second)["approval"], "rejected");
}

#[test]
fn a_policy_that_requires_signatures_without_an_approver_approves_nothing() {
    let env = TestEnv::new();
    let (_, web, id) = setup(&env);
    let config = web.join(".aea/agent-config.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\napprovals:\n  require_signature: true\n");
    std::fs::write(&config, text).unwrap();

    let out = env.run(&web, &["approve", &id]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no approver is set"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("aea approvers add"),
        "{}",
        stderr(&out)
    );
    let doctor = env.run(&web, &["doctor"]);
    assert!(
        stdout(&doctor).contains("no approver is set"),
        "{}",
        stdout(&doctor)
    );
    let init = env.run(&web, &["init"]);
    assert!(
        stderr(&init).contains("no approver is set"),
        "{}",
        stderr(&init)
    );
    // The user turning their own requirement off does not loosen the
    // repository's.
    let keys = env.path().join("keys");
    let (alice, alice_pub) = keygen(&keys, "alice");
    let key = ["--ssh-key", alice.to_str().unwrap()];
    env.ok(
        &web,
        &[
            &[
                "approvers",
                "add",
                "alice",
                "--key",
                alice_pub.to_str().unwrap(),
            ][..],
            &key,
        ]
        .concat(),
    );
    env.ok(&web, &[&["approvers", "require", "off"][..], &key].concat());
    assert_eq!(code(&env.run(&web, &["approve", &id])), 5);
    env.ok(&web, &[&["approve", &id][..], &key].concat());
}

#[test]
fn approvers_refuses_keys_it_cannot_verify() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let keys = env.path().join("keys");
    let rsa = keys.join("rsa");
    std::fs::create_dir_all(&keys).unwrap();
    assert!(
        Command::new("ssh-keygen")
            .args(["-q", "-t", "rsa", "-b", "2048", "-N", "", "-f"])
            .arg(&rsa)
            .status()
            .unwrap()
            .success()
    );
    let out = env.run(
        &web,
        &[
            "approvers",
            "add",
            "old",
            "--key",
            rsa.with_extension("pub").to_str().unwrap(),
        ],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("not accepted"), "{}", stderr(&out));
    // A private key given as the public one is refused without echoing it.
    let (alice, _) = keygen(&keys, "alice");
    let out = env.run(
        &web,
        &[
            "approvers",
            "add",
            "alice",
            "--key",
            alice.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is a private key"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("BEGIN OPENSSH"), "{}", stderr(&out));
    // A name that is not a plain word.
    let (_, alice_pub) = keygen(&keys, "alice2");
    let out = env.run(
        &web,
        &[
            "approvers",
            "add",
            "a b",
            "--key",
            alice_pub.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        !env.path()
            .join("home/.config/aea/approvers/changes.jsonl")
            .exists()
    );
}

#[test]
fn an_approval_made_under_another_config_folder_is_found_by_doctor() {
    let env = TestEnv::new();
    let (_, web, id) = setup(&env);
    let keys = env.path().join("keys");
    let (alice, alice_pub) = keygen(&keys, "alice");
    let (agent, agent_pub) = keygen(&keys, "agent");
    add_approver(&env, &web, "alice", &alice_pub, &alice);
    // An agent runs aea with a config folder of its own, where its own key
    // is the approver: aea there approves and processes.
    let elsewhere = env.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::copy(
        env.path().join("home/.config/aea/registry.toml"),
        elsewhere.join("registry.toml"),
    )
    .ok();
    let as_agent = |args: &[&str]| {
        env.cmd(&web)
            .env("AEA_CONFIG_DIR", &elsewhere)
            .args(args)
            .output()
            .unwrap()
    };
    let agent_path = agent.to_str().unwrap();
    let out = as_agent(&[
        "approvers",
        "add",
        "alice",
        "--key",
        agent_pub.to_str().unwrap(),
        "--ssh-key",
        agent_path,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = as_agent(&["approve", &id, "--ssh-key", agent_path]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = as_agent(&["process", &id]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The person's doctor finds it, and names the file.
    let doctor = env.run(&web, &["doctor"]);
    let text = stdout(&doctor);
    assert!(
        text.contains("processed without an approval that counts now"),
        "{text}"
    );
    assert!(text.contains(&file_of_processed(&env, &web, &id)), "{text}");
}

/// The file name a processed message had, from the log.
fn file_of_processed(env: &TestEnv, repo: &Path, id: &str) -> String {
    let log = env.ok(repo, &["--json", "log", "--message", id]);
    log.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find_map(|e| e["file"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no file for {id} in {log}"))
}

#[test]
fn review_signs_with_the_approvers_key() {
    use crate::test_approve_command::{review_under_script_with, shown_code};
    use std::io::Write;
    let env = TestEnv::new();
    let (_, web, id) = setup(&env);
    let keys = env.path().join("keys");
    let (alice, alice_pub) = keygen(&keys, "alice");
    let alice_key = alice.to_str().unwrap();
    add_approver(&env, &web, "alice", &alice_pub, &alice);
    // Approves the one message, typing back the number shown, and waits
    // for the summary `said`.
    let approve_in_review = |args: &str, said: &str| {
        let mut child = review_under_script_with(&env, &web, args);
        let mut input = child.stdin.take().unwrap();
        let mut screen = Lines::read(child.stdout.take().unwrap());
        input.write_all(b"a\n").unwrap();
        let code = shown_code(&mut screen);
        input.write_all(format!("{code}\n\n").as_bytes()).unwrap();
        drop(input);
        screen.wait_for("the summary", Duration::from_secs(60), |l| l.contains(said));
        let out = output_within(child, Duration::from_secs(60), "`aea review` under script");
        assert!(out.status.success(), "{}", stderr(&out));
    };
    // Without a key: the number typed back is right, but nothing can be
    // signed: said, skipped, and the walk ends normally.
    approve_in_review("review", "reviewed: 0 approved, 0 rejected, 1 skipped");
    assert_eq!(listed_approval(&env, &web, &id)["approval"], "pending");
    // With the approver's key: signed, and verified by every reader.
    approve_in_review(
        &format!("review --ssh-key {alice_key}"),
        "reviewed: 1 approved, 0 rejected, 0 skipped",
    );
    assert_eq!(listed_approval(&env, &web, &id)["approval"], "approved");
    env.ok(&web, &["process", &id]);
}

#[test]
fn gated_mail_processed_around_the_approval_is_found_by_doctor() {
    let env = TestEnv::new();
    let (api, web, id) = setup(&env);
    let keys = env.path().join("keys");
    let (alice, alice_pub) = keygen(&keys, "alice");
    let alice_key = alice.to_str().unwrap();
    add_approver(&env, &web, "alice", &alice_pub, &alice);
    let clean = |what: &str| {
        let text = stdout(&env.run(&web, &["doctor"]));
        assert!(
            !text.contains("processed without an approval"),
            "{what}: {text}"
        );
    };
    // A person's signed approval, processed: nothing to say.
    env.ok(&web, &["approve", &id, "--ssh-key", alice_key]);
    env.ok(&web, &["process", &id]);
    clean("signed and processed");
    // Processed `ignored` (allowed without approval): nothing to say; the
    // record then edited to `done` by hand: found.
    let ignored = env.urgent(&api, "web", "handoff", "ignored, then edited");
    let ignored_file = file_of(&web, &ignored);
    env.ok(&web, &["process", &ignored, "--outcome", "ignored"]);
    clean("ignored");
    let record = env.state(&web).join("records").join(&ignored_file);
    let text = std::fs::read_to_string(&record).unwrap();
    assert!(text.contains("ignored"), "{text}");
    replace_file(&record, text.replace("\"ignored\"", "\"done\""));
    let found = stdout(&env.run(&web, &["doctor"]));
    assert!(found.contains(&ignored_file), "{found}");
    // The signed approval of a processed message deleted: found.
    let approved_file = file_of_processed(&env, &web, &id);
    std::fs::remove_file(approvals_dir(&env, &web).join(format!("{approved_file}.json"))).unwrap();
    let found = stdout(&env.run(&web, &["doctor"]));
    assert!(found.contains(&approved_file), "{found}");
}

#[test]
fn a_list_damaged_from_its_first_line_is_not_started_again() {
    let env = TestEnv::new();
    let (_, web, id) = setup(&env);
    let keys = env.path().join("keys");
    let (alice, alice_pub) = keygen(&keys, "alice");
    let (agent, agent_pub) = keygen(&keys, "agent");
    add_approver(&env, &web, "alice", &alice_pub, &alice);
    let chain = env.path().join("home/.config/aea/approvers/changes.jsonl");
    let good = std::fs::read_to_string(&chain).unwrap();
    std::fs::write(&chain, format!("x{good}")).unwrap();
    // The damaged list requires signatures, and says so.
    let list = env.json(&web, &["approvers", "list"]);
    assert_eq!(list["require_signature"], true, "{list}");
    // A new first version over it, signed by the key it adds: refused, and
    // the damaged file kept as it is.
    let out = env.run(
        &web,
        &[
            "approvers",
            "add",
            "person",
            "--key",
            agent_pub.to_str().unwrap(),
            "--ssh-key",
            agent.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(stderr(&out).contains("move it aside"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&chain).unwrap(), format!("x{good}"));
    assert_eq!(
        code(&env.run(
            &web,
            &["approve", &id, "--ssh-key", agent.to_str().unwrap()]
        )),
        5
    );
}

#[test]
fn a_list_of_many_keys_is_refused_quickly() {
    let env = TestEnv::new();
    let (_, web, _) = setup(&env);
    let keys = env.path().join("keys");
    let (alice, alice_pub) = keygen(&keys, "alice");
    add_approver(&env, &web, "alice", &alice_pub, &alice);
    // A forged second version listing thousands of keys: refused at the
    // count, before any key is read or compared.
    let chain = env.path().join("home/.config/aea/approvers/changes.jsonl");
    let text = std::fs::read_to_string(&chain).unwrap();
    let mut forged: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let line = forged["allowed_signers"]
        .as_str()
        .unwrap()
        .trim()
        .to_string();
    let rest = line.split_once(' ').unwrap().1;
    let mut many = String::new();
    for i in 0..30_000 {
        many.push('k');
        many.push_str(&i.to_string());
        many.push(' ');
        many.push_str(rest);
        many.push('\n');
    }
    forged["version"] = 2.into();
    forged["previous"] = aea::fsutil::sha256_hex(text.lines().next().unwrap().as_bytes()).into();
    forged["allowed_signers"] = many.into();
    std::fs::write(
        &chain,
        format!("{text}{}\n", serde_json::to_string(&forged).unwrap()),
    )
    .unwrap();
    let list = env.json(&web, &["approvers", "list"]);
    assert_eq!(list["version"], 1, "{list}");
    assert!(
        list["ignored"]["why"]
            .as_str()
            .unwrap()
            .contains("more than 100"),
        "{list}"
    );
}
