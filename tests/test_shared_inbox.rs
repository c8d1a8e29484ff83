//! Custody before decision, with two real OS users: in an inbox shared
//! with `aea init --shared` the sender still owns the file it delivered
//! and can rewrite it in place whenever it likes. The receiver takes a
//! copy of a message the first time it reads it, and `show`, `approve`
//! and `process` act on that copy: a rewrite after the person read the
//! message never gets the person's decision. And a shared inbox keeps
//! mail from users it is not shared with: 0640 in the inbox's group where
//! it is shared with a group.

use crate::common::*;
use serde_json::Value;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

/// Far above what any command here needs on a loaded machine.
const BOUND: Duration = Duration::from_secs(60);

/// What the sender first says, and what it makes of the file afterwards.
const ORIGINAL: &str = "deploy build 41 to staging";
const REWRITTEN: &str = "deploy build 66 to production";

/// A receiver `web` (this user, root) with an inbox shared with
/// `--shared`, and a sender `api` running as another OS user.
struct Shared {
    env: TestEnv,
    ids: (u32, u32),
    groups: Vec<u32>,
    web: PathBuf,
    api: PathBuf,
    home: PathBuf,
}

impl Shared {
    /// `None` (and the test says it skipped) without a second OS user.
    fn new(test: &str, init: &[&str], groups: Vec<u32>) -> Option<Shared> {
        let ids = match sender_user() {
            Ok(ids) => ids,
            Err(why) => {
                eprintln!("SKIPPED {test}: {why}");
                return None;
            }
        };
        let env = TestEnv::new();
        // The sender must reach the binary, the test root and the inbox.
        std::fs::set_permissions(env.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let web = env.path().join("web");
        std::fs::create_dir(&web).unwrap();
        let mut args = vec!["init", "--no-agent-files", "--shared"];
        args.extend_from_slice(init);
        env.ok(&web, &args);
        let home = env.path().join("sender-home");
        let api = env.path().join("api");
        for dir in [&home, &api] {
            std::fs::create_dir(dir).unwrap();
            std::os::unix::fs::chown(dir, Some(ids.0), Some(ids.1)).unwrap();
        }
        let shared = Shared {
            env,
            ids,
            groups,
            web,
            api,
            home,
        };
        let out = shared.as_sender(BIN, &["init", "--no-agent-files", "--no-git-hooks"]);
        assert!(out.status.success(), "{}", stderr(&out));
        Some(shared)
    }

    fn as_sender(&self, program: &str, args: &[&str]) -> Output {
        as_user_in(
            self.ids,
            &self.groups,
            &self.home,
            &self.api,
            program,
            args,
            BOUND,
        )
    }

    /// The sender delivers a handoff (gated: a person approves it) and the
    /// test learns its id and file name.
    fn deliver_handoff(&self) -> (String, String) {
        let out = self.as_sender(
            BIN,
            &[
                "--json",
                "send",
                "--to",
                "../web",
                "--type",
                "handoff",
                "--subject",
                "release",
                "--body",
                ORIGINAL,
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let sent: Value = serde_json::from_slice(&out.stdout).unwrap();
        let id = sent["message_id"].as_str().unwrap().to_string();
        let files = inbox_files(&self.web);
        assert_eq!(files.len(), 1, "{files:?}");
        let file = self.web.join(".aea").join(&files[0]);
        assert_eq!(
            std::fs::metadata(&file).unwrap().uid(),
            self.ids.0,
            "the sender owns what it delivered"
        );
        (id, files[0].clone())
    }

    /// The sender rewrites its file in place (same inode, still its own):
    /// the body says something else, every other field as it was.
    fn rewrite(&self, name: &str) {
        let script = format!(
            "sed 's/{ORIGINAL}/{REWRITTEN}/' ../web/.aea/{name} > \"$HOME/new\" && cat \"$HOME/new\" > ../web/.aea/{name}"
        );
        let out = self.as_sender("sh", &["-c", &script]);
        assert!(out.status.success(), "{}", stderr(&out));
        let now = std::fs::read_to_string(self.web.join(".aea").join(name)).unwrap();
        assert!(now.contains(REWRITTEN), "the rewrite did not take: {now}");
    }

    fn state(&self) -> PathBuf {
        self.env.state(&self.web)
    }

    /// `aea args…` as the receiver in `web`, failing the test if it does
    /// not exit within [`BOUND`] (blocked on a FIFO, say).
    fn bounded(&self, args: &[&str]) -> Output {
        let child = self
            .env
            .cmd(&self.web)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        output_within(child, BOUND, &format!("aea {args:?}"))
    }
}

/// The attack: the person reads the gated message with `show`, its sender
/// rewrites the file in place, the person approves what it read. The
/// approval must not bind the new bytes, and `process --outcome done` must
/// not record them: both refuse and say what happened and what to do.
/// Once `show` has shown it again (what aea read, put back in place), the
/// approval binds those bytes, and processing keeps them.
#[test]
fn a_rewrite_after_show_gets_no_approval_and_is_not_processed() {
    let Some(s) = Shared::new("a_rewrite_after_show_gets_no_approval…", &[], Vec::new()) else {
        return;
    };
    let (id, name) = s.deliver_handoff();
    let original = std::fs::read(s.web.join(".aea").join(&name)).unwrap();
    let shown = s.env.ok(&s.web, &["show", &id]);
    assert!(shown.contains(ORIGINAL), "{shown}");

    s.rewrite(&name);

    let out = s.env.run(&s.web, &["approve", &id]);
    assert!(
        !out.status.success(),
        "approve bound bytes the person never saw:\n{}",
        stdout(&out)
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("changed after it was read"), "{said}");
    assert!(
        said.contains("aea show"),
        "the hint says what to do: {said}"
    );
    assert!(
        !s.state()
            .join("approvals")
            .join(format!("{name}.json"))
            .exists(),
        "an approval was recorded"
    );

    let out = s.env.run(&s.web, &["process", &id, "--outcome", "done"]);
    assert!(
        !out.status.success(),
        "process --outcome done recorded bytes nobody approved"
    );
    assert!(
        s.env.json(&s.web, &["check"])["messages"][0]["id"] == id.as_str(),
        "the message is still waiting"
    );

    // Shown again: what aea read, back in place; then the approval binds it.
    s.env.ok(&s.web, &["show", &id]);
    let approval = s.env.json(&s.web, &["approve", &id]);
    assert_eq!(
        approval["approval"]["sha256"].as_str(),
        Some(aea::fsutil::sha256_hex(&original).as_str()),
        "the approval binds the bytes show printed"
    );
    s.env.ok(&s.web, &["process", &id, "--outcome", "done"]);
    let kept = std::fs::read(s.state().join("processed").join(&name)).unwrap();
    assert_eq!(kept, original, "processed mail is what the person approved");
    assert!(
        !s.state().join("custody").join(&name).exists(),
        "the copy is dropped once the message left the inbox"
    );
}

/// `show` after a rewrite says the file changed, and prints what aea read
/// first (its copy), not the new bytes; the copy goes back in place as
/// the receiver's own file, and the rewritten one is kept in quarantine.
#[test]
fn show_after_a_rewrite_says_so_and_prints_what_was_read() {
    let Some(s) = Shared::new("show_after_a_rewrite_says_so…", &[], Vec::new()) else {
        return;
    };
    let (id, name) = s.deliver_handoff();
    let original = std::fs::read(s.web.join(".aea").join(&name)).unwrap();
    s.env.ok(&s.web, &["show", &id]);

    s.rewrite(&name);

    let out = s.env.run(&s.web, &["show", &id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (printed, said) = (stdout(&out), stderr(&out));
    assert!(
        printed.contains(ORIGINAL) && !printed.contains(REWRITTEN),
        "show printed the sender's new bytes:\n{printed}"
    );
    assert!(printed.contains("rewrote the file"), "{printed}");
    assert!(said.contains("rewrote the file"), "{said}");
    assert_eq!(
        std::fs::read(s.state().join("custody").join(&name)).unwrap(),
        original,
        "the copy is what show printed"
    );

    // What aea read is back in place, the receiver's own: the sender can
    // no longer rewrite it. Its rewrite is kept, never read.
    let file = s.web.join(".aea").join(&name);
    assert_eq!(std::fs::read(&file).unwrap(), original);
    assert_eq!(std::fs::metadata(&file).unwrap().uid(), 0);
    let quarantined = std::fs::read_to_string(s.web.join(".aea/.quarantine").join(&name)).unwrap();
    assert!(quarantined.contains(REWRITTEN), "{quarantined}");
    assert!(
        s.web
            .join(".aea/.quarantine")
            .join(format!("{name}.reason"))
            .is_file()
    );
    let out = s.as_sender("sh", &["-c", &format!("echo '{{}}' > ../web/.aea/{name}")]);
    assert!(!out.status.success(), "the sender rewrote the file again");
    assert_eq!(
        s.env.json(&s.web, &["check"])["messages"][0].get("changed_after_read"),
        None
    );
}

/// The sender may delete its own file in the sticky `.aea/` and put
/// anything under its name: a FIFO (which would block a reader that opens
/// it), a symlink to a file the receiver can read. Once the receiver read
/// the message, neither is read, nothing hangs, and `show` prints what
/// was read and puts it back in place.
#[test]
fn a_file_swapped_for_a_fifo_or_a_symlink_after_it_was_read_is_shown_as_read() {
    for swap in ["mkfifo", "ln -s /etc/passwd"] {
        let Some(s) = Shared::new("a_file_swapped_for_a_fifo…", &[], Vec::new()) else {
            return;
        };
        let (id, name) = s.deliver_handoff();
        s.env.ok(&s.web, &["check"]);
        let script = format!("rm ../web/.aea/{name} && {swap} ../web/.aea/{name}");
        let out = s.as_sender("sh", &["-c", &script]);
        assert!(out.status.success(), "{swap}: {}", stderr(&out));

        let out = s.bounded(&["approve", &id]);
        assert_eq!(code(&out), 5, "{swap}: {}", stderr(&out));
        assert!(stderr(&out).contains("changed after it was read"), "{swap}");
        let out = s.bounded(&["show", &id]);
        assert!(out.status.success(), "{swap}: {}", stderr(&out));
        assert!(stdout(&out).contains(ORIGINAL), "{swap}: {}", stdout(&out));
        assert!(!stdout(&out).contains("root:"), "{swap}: followed the link");
        let file = std::fs::symlink_metadata(s.web.join(".aea").join(&name)).unwrap();
        assert!(file.is_file() && file.uid() == 0, "{swap}: not put back");
        let out = s.bounded(&["approve", &id]);
        assert!(out.status.success(), "{swap}: {}", stderr(&out));
    }
}

/// `check` lists a message whose file changed after it was read as it was
/// read, and says it changed.
#[test]
fn check_lists_a_rewritten_message_as_read_and_says_it_changed() {
    let Some(s) = Shared::new("check_lists_a_rewritten_message…", &[], Vec::new()) else {
        return;
    };
    let (_, name) = s.deliver_handoff();
    s.env.ok(&s.web, &["check"]);
    s.rewrite(&name);
    let listed = s.env.json(&s.web, &["check"]);
    assert_eq!(
        listed["messages"][0]["changed_after_read"], true,
        "{listed}"
    );
    let human = s.env.ok(&s.web, &["check"]);
    assert!(human.contains("CHANGED AFTER READ"), "{human}");
}

/// The first read that takes the copy need not be `show`: a harness hook
/// (counts only) or `check` takes it, and a rewrite after that is not
/// what `show` prints.
#[test]
fn a_hook_takes_the_copy_before_anyone_shows_the_message() {
    let Some(s) = Shared::new("a_hook_takes_the_copy…", &[], Vec::new()) else {
        return;
    };
    let (id, name) = s.deliver_handoff();
    let original = std::fs::read(s.web.join(".aea").join(&name)).unwrap();
    s.env.ok(
        &s.web,
        &["check", "--hook", "claude", "--event", "SessionStart"],
    );
    s.rewrite(&name);
    let shown = s.env.ok(&s.web, &["show", &id]);
    assert!(
        shown.contains(ORIGINAL) && !shown.contains(REWRITTEN),
        "{shown}"
    );
    assert_eq!(
        std::fs::read(s.state().join("custody").join(&name)).unwrap(),
        original,
        "the copy is the private state's"
    );
}

/// An inbox shared with a group (`--group`, setgid): the sender, in the
/// group, delivers mail 0640 with the inbox's group, so users outside
/// the group cannot read it or copy it elsewhere. Shared with everyone,
/// mail is 0644 whatever the sender's umask (the receiver reads another
/// user's file only so), and `init` says what that relies on.
#[test]
fn a_group_shared_inbox_gets_mail_no_one_else_reads() {
    let group = "aea-test-mail";
    let gid = match sender_user().and_then(|_| test_group(group)) {
        Ok(gid) => gid,
        Err(why) => {
            eprintln!("SKIPPED a_group_shared_inbox_gets_mail…: {why}");
            return;
        }
    };
    let Some(s) = Shared::new(
        "a_group_shared_inbox_gets_mail…",
        &["--group", group],
        vec![gid],
    ) else {
        return;
    };
    let aea_dir = std::fs::metadata(s.web.join(".aea")).unwrap();
    assert_eq!(aea_dir.mode() & 0o7777, 0o3770);
    assert_eq!(aea_dir.gid(), gid);

    let (id, name) = s.deliver_handoff();
    let file = std::fs::metadata(s.web.join(".aea").join(&name)).unwrap();
    assert_eq!(file.mode() & 0o7777, 0o640, "mail in a group-shared inbox");
    assert_eq!(file.gid(), gid, "mail takes the inbox's group");
    assert_eq!(
        s.env.json(&s.web, &["check"])["messages"][0]["id"],
        id.as_str()
    );
    // Taken over by the receiver (approved), it stays out of reach too.
    s.env.ok(&s.web, &["approve", &id]);
    let file = std::fs::metadata(s.web.join(".aea").join(&name)).unwrap();
    assert_eq!((file.uid(), file.mode() & 0o777), (0, 0o640));

    // A re-run of `init --shared` keeps the group.
    s.env.ok(&s.web, &["init", "--no-agent-files", "--shared"]);
    let aea_dir = std::fs::metadata(s.web.join(".aea")).unwrap();
    assert_eq!((aea_dir.mode() & 0o7777, aea_dir.gid()), (0o3770, gid));
}

#[test]
fn an_inbox_shared_with_everyone_says_what_it_relies_on() {
    let Some(s) = Shared::new("an_inbox_shared_with_everyone…", &[], Vec::new()) else {
        return;
    };
    // A sender whose umask keeps its files to itself still delivers mail
    // the receiver can read.
    let send = format!("umask 077 && {BIN} send --to ../web --type update --subject s --body b");
    let out = s.as_sender("sh", &["-c", &send]);
    assert!(out.status.success(), "{}", stderr(&out));
    let files = inbox_files(&s.web);
    let mode = std::fs::metadata(s.web.join(".aea").join(&files[0]))
        .unwrap()
        .mode();
    assert_eq!(mode & 0o7777, 0o644);

    let out = s.env.run(&s.web, &["init", "--no-agent-files", "--shared"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("every user") && said.contains("message id once") && said.contains("--group"),
        "{said}"
    );
}

/// An inbox nobody else writes to keeps no copies: custody costs nothing
/// where it protects nothing.
#[test]
fn an_inbox_that_is_not_shared_keeps_no_copies() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.send(
        &api,
        "web",
        &["--type", "handoff", "--subject", "s", "--body", "b"],
    );
    env.ok(&web, &["check"]);
    env.ok(&web, &["show", &id]);
    assert!(!env.state(&web).join("custody").exists());
}

/// A receiver that is not root cannot hard-link a file another user owns
/// (the kernel's `protected_hardlinks`, on by default): moving a sender's
/// file out of a shared inbox must not depend on it. The receiver runs as
/// one throwaway user, the sender as another; the sender's junk goes to
/// the quarantine, whole, and leaves the inbox.
#[test]
fn a_receiver_that_is_not_root_moves_a_senders_file_aside() {
    let test = "a_receiver_that_is_not_root_moves_a_senders_file_aside";
    let (sender, receiver) = match (sender_user(), receiver_user()) {
        (Ok(s), Ok(r)) => (s, r),
        (Err(why), _) | (_, Err(why)) => {
            eprintln!("SKIPPED {test}: {why}");
            return;
        }
    };
    let env = TestEnv::new();
    std::fs::set_permissions(env.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let make = |name: &str, ids: (u32, u32)| {
        let dir = env.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        std::os::unix::fs::chown(&dir, Some(ids.0), Some(ids.1)).unwrap();
        dir
    };
    let (home, web, sender_home) = (
        make("receiver-home", receiver),
        make("web", receiver),
        make("sender-home", sender),
    );
    let as_receiver = |program: &str, args: &[&str]| {
        as_named_user(RECEIVER, receiver, &home, &web, program, args, BOUND)
    };
    for (program, args) in [
        ("git", &["init", "-q", "."][..]),
        (
            BIN,
            &["init", "--no-agent-files", "--shared", "--id", "web"][..],
        ),
    ] {
        let out = as_receiver(program, args);
        assert!(out.status.success(), "{program} {args:?}: {}", stderr(&out));
    }
    let name = "message-20260101T000000000Z-from-api-0badf00d.json";
    let junk = "not a message, and not the receivers";
    let out = as_user(
        sender,
        &sender_home,
        &web,
        "sh",
        &["-c", &format!("printf '{junk}' > .aea/{name}")],
        BOUND,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::metadata(web.join(".aea").join(name))
            .unwrap()
            .uid(),
        sender.0
    );

    let out = as_receiver(BIN, &["quarantine", "--reason", "junk", name]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!web.join(".aea").join(name).exists(), "it left the inbox");
    assert_eq!(
        std::fs::read_to_string(web.join(".aea/.quarantine").join(name)).unwrap(),
        junk
    );
}

/// A third OS user who can read the shared inbox copies the sender's
/// message under a name that sorts first, before the receiver ever listed
/// it, hoping its copy becomes the message (and then deleting it, which
/// the sticky `.aea/` lets it do with its own file). The file that came
/// first is the message, whatever the names; the copy is set aside as a
/// replay; and the message becomes the receiver's own file, which no
/// sender can delete or rewrite.
#[test]
fn a_copy_named_to_come_first_never_takes_the_senders_message() {
    let Some(s) = Shared::new("a_copy_named_to_come_first…", &[], Vec::new()) else {
        return;
    };
    let other = match receiver_user() {
        Ok(ids) => ids,
        Err(why) => panic!("this test needs a third OS user: {why}"),
    };
    let (id, name) = s.deliver_handoff();
    let home = s.env.path().join("third-home");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(other.0), Some(other.1)).unwrap();
    let copy = "message-20000101T000000000Z-from-api-00000000.json";
    let script = format!("cp .aea/{name} .aea/{copy}");
    let out = as_named_user(
        RECEIVER,
        other,
        &home,
        &s.web,
        "sh",
        &["-c", &script],
        BOUND,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::metadata(s.web.join(".aea").join(copy))
            .unwrap()
            .uid(),
        other.0
    );

    let report = s.env.json(&s.web, &["check"]);
    let listed: Vec<&Value> = report["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["id"] == id.as_str())
        .collect();
    assert_eq!(listed.len(), 1, "{report}");
    assert_eq!(listed[0]["file"], name.as_str(), "{report}");
    assert!(!s.web.join(".aea").join(copy).exists());
    let reason = std::fs::read_to_string(
        s.web
            .join(".aea/.quarantine")
            .join(format!("{copy}.reason")),
    )
    .unwrap();
    assert!(reason.starts_with("replay:"), "{reason}");

    // The message is the receiver's now: its sender cannot take it away.
    let file = s.web.join(".aea").join(&name);
    assert_eq!(std::fs::metadata(&file).unwrap().uid(), 0);
    let out = s.as_sender("rm", &["-f", file.to_str().unwrap()]);
    assert!(
        !out.status.success() || file.exists(),
        "the sender removed it"
    );
    assert!(file.exists());
}

/// Adopting a message (approve, process) writes it anew as the receiver's
/// own file, which resets its change time. A copy a third user made before
/// that must not become the message afterwards and drop the person's
/// approval: the receiver's own file comes first.
#[test]
fn a_copy_made_before_approval_never_takes_the_approved_message() {
    let Some(s) = Shared::new("a_copy_made_before_approval…", &[], Vec::new()) else {
        return;
    };
    let other = match receiver_user() {
        Ok(ids) => ids,
        Err(why) => panic!("this test needs a third OS user: {why}"),
    };
    let (id, name) = s.deliver_handoff();
    let home = s.env.path().join("third-home");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(other.0), Some(other.1)).unwrap();
    let copy = "message-20991231T235959999Z-from-api-aaaaaaaa.json";
    // Shown and approved with the copy already there but never listed.
    s.env.ok(&s.web, &["show", &name]);
    let script = format!("cp .aea/{name} .aea/{copy}");
    let out = as_named_user(
        RECEIVER,
        other,
        &home,
        &s.web,
        "sh",
        &["-c", &script],
        BOUND,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    s.env.ok(&s.web, &["approve", &name]);
    assert_eq!(
        std::fs::metadata(s.web.join(".aea").join(&name))
            .unwrap()
            .uid(),
        0,
        "approving adopts the message"
    );
    let report = s.env.json(&s.web, &["check"]);
    let listed: Vec<&Value> = report["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["id"] == id.as_str())
        .collect();
    assert_eq!(listed.len(), 1, "{report}");
    assert_eq!(listed[0]["file"], name.as_str(), "{report}");
    assert_eq!(listed[0]["approval"], "approved", "{report}");
    assert!(!s.web.join(".aea").join(copy).exists());
}

/// A change time is not proof of order: a write through a shared mapping
/// can leave it behind, and an owner can move it on (`chmod`). The file
/// owned by the OS user who owns the sender's registered repository
/// (whoever delivers that sender's mail) comes before a third user's copy
/// whatever their change times say.
#[test]
fn the_senders_own_file_comes_before_a_copy_whatever_the_change_times() {
    let Some(s) = Shared::new("the_senders_own_file_comes_first…", &[], Vec::new()) else {
        return;
    };
    let other = match receiver_user() {
        Ok(ids) => ids,
        Err(why) => panic!("this test needs a third OS user: {why}"),
    };
    s.env.ok(
        &s.web,
        &[
            "agents",
            "add",
            "api",
            "--path",
            s.api.to_str().unwrap(),
            "--force",
        ],
    );
    let (id, name) = s.deliver_handoff();
    let home = s.env.path().join("third-home");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(other.0), Some(other.1)).unwrap();
    let copy = "message-20991231T235959999Z-from-api-aaaaaaaa.json";
    let script = format!("cp .aea/{name} .aea/{copy}");
    let out = as_named_user(
        RECEIVER,
        other,
        &home,
        &s.web,
        "sh",
        &["-c", &script],
        BOUND,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // The genuine file's change time moves past the copy's.
    std::thread::sleep(Duration::from_millis(20));
    let genuine = s.web.join(".aea").join(&name);
    let out = s.as_sender("chmod", &["0644", genuine.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ctime = |p: &std::path::Path| {
        let meta = std::fs::metadata(p).unwrap();
        i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec())
    };
    assert!(ctime(&genuine) > ctime(&s.web.join(".aea").join(copy)));

    let report = s.env.json(&s.web, &["check"]);
    let listed: Vec<&Value> = report["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["id"] == id.as_str())
        .collect();
    assert_eq!(listed.len(), 1, "{report}");
    assert_eq!(listed[0]["file"], name.as_str(), "{report}");
    assert!(!s.web.join(".aea").join(copy).exists());
}

/// A rewrite `show` put in quarantine keeps the name of the message that
/// still waits; starting the replay records again from the id index (an
/// upgrade) must not take that waiting message for one that left.
#[test]
fn a_quarantined_rewrite_never_makes_its_waiting_message_a_replay() {
    let Some(s) = Shared::new("a_quarantined_rewrite_never…", &[], Vec::new()) else {
        return;
    };
    let (id, name) = s.deliver_handoff();
    s.env.ok(&s.web, &["show", &id]);
    s.rewrite(&name);
    s.env.ok(&s.web, &["show", &id]);
    assert!(s.web.join(".aea/.quarantine").join(&name).is_file());
    std::fs::remove_dir_all(s.state().join("accepted")).unwrap();
    let report = s.env.json(&s.web, &["check"]);
    assert_eq!(report["messages"][0]["id"], id.as_str(), "{report}");
    assert!(s.web.join(".aea").join(&name).is_file());
}
