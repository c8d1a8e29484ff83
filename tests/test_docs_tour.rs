//! The book's "A five-minute tour" (`docs/src/tour.md`) and the README's
//! "Quick start" are real terminal sessions: every command in each runs
//! here, in order, in a fresh home folder, with the clock and random seed
//! fixed, and must succeed and print what the page shows (stderr, then
//! stdout; home shown as `/home/me`; a line `…` stands for any lines). A
//! change to the output breaks this test, and its message carries the new
//! output to paste.
//!
//! The README's "Handing your key to another machine" block runs here too,
//! read from the README: on two machines with their own HOMEs and a real
//! mail remote, and on one machine whose two owners keep api and web.

use crate::common::*;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NOW: &str = "2026-11-21T10:00:00.000Z";
const ELIDED: &str = "…";

struct Step {
    command: String,
    expected: Vec<String>,
}

/// The text of the first fenced block of language `lang` after `heading`
/// in the file `page`.
fn block(page: &str, heading: &str, lang: &str) -> String {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(page)).unwrap();
    let section = &text[text
        .find(heading)
        .unwrap_or_else(|| panic!("{page} has {heading:?}"))..];
    let fence = format!("```{lang}\n");
    let block = &section[section
        .find(&fence)
        .unwrap_or_else(|| panic!("{page}: a {lang} block after {heading:?}"))
        + fence.len()..];
    block[..block.find("\n```").expect("the block ends")].to_string()
}

/// The commands (`$ ` lines, `\` continuing one) and the output under each
/// of the first `console` block after `heading` in the file `page`.
fn session(page: &str, heading: &str) -> Vec<Step> {
    let block = block(page, heading, "console");
    let mut steps: Vec<Step> = Vec::new();
    let mut continued = false;
    for line in block.lines() {
        if continued {
            let step = steps.last_mut().unwrap();
            step.command.push('\n');
            step.command.push_str(line);
            continued = line.ends_with('\\');
        } else if let Some(command) = line.strip_prefix("$ ") {
            steps.push(Step {
                command: command.to_string(),
                expected: Vec::new(),
            });
            continued = command.ends_with('\\');
        } else {
            let step = steps.last_mut().expect("output follows a command");
            step.expected.push(line.to_string());
        }
    }
    steps
}

/// Whether `actual` is `expected`, where an [`ELIDED`] line stands for any
/// number of lines.
fn matches(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == ELIDED => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(a, more)| same_line(first, a) && matches(rest, more)),
    }
}

/// A line as shown is the line printed, except a message's digest: the
/// message is signed with a key made for each run, so its bytes differ.
fn same_line(expected: &str, actual: &str) -> bool {
    let digest = |line: &str| {
        line.strip_prefix("sha256:       ")
            .is_some_and(|d| d.len() == 16 && d.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    expected == actual || (digest(expected) && digest(actual))
}

#[test]
fn the_book_tour_runs_as_shown() {
    runs_as_shown("docs/src/tour.md", "# A five-minute tour");
}

#[test]
fn the_readme_quick_start_runs_as_shown() {
    runs_as_shown("README.md", "## A five-minute quick start");
}

/// The handoff `oacp send shop --from codex --to web --type handoff`
/// (oacp-cli 0.5.4) wrote into web's OACP inbox, byte for byte.
const OACP_HANDOFF: (&str, &str) = (
    "20261127093446_codex_handoff_abf4.yaml",
    "id: msg-20261127093446-codex-a575\nfrom: codex\nto: web\ntype: handoff\npriority: P1\n\
     created_at_utc: \"2026-11-27T09:34:46Z\"\nconversation_id: conv-20261127-codex-034315\n\
     subject: Take over the orders v2 client\n\
     body: \"Branch orders-v2; the API side is done, the web client is yours.\"\n",
);

/// The book's mixed-team walkthrough, after what it says was there: a
/// repository the bash AEA's installer set up (its exact config; its
/// scripts, which the session never runs, as stand-ins), and an OACP
/// project as `oacp init shop --agents codex,web` lays it out, with one
/// handoff from codex waiting in web's inbox.
#[test]
fn the_mixed_team_walkthrough_runs_as_shown() {
    runs_as_shown_after("docs/src/mixed-team.md", "# A mixed team", |env, home| {
        let backend = crate::test_bash_aea::bash_install(env, "home/src/backend");
        for script in [
            "aea-send.sh",
            "aea-monitor.sh",
            "aea-registry.sh",
            "aea-auto-processor.sh",
        ] {
            std::fs::write(
                backend.join(".aea/scripts").join(script),
                format!("#!/bin/bash\n# {script} of the bash AEA (stand-in)\nexit 0\n"),
            )
            .unwrap();
        }
        let agents = home.join(".oacp/projects/shop/agents");
        for agent in ["codex", "web"] {
            for dir in ["inbox/archive", "outbox", "dead_letter"] {
                std::fs::create_dir_all(agents.join(agent).join(dir)).unwrap();
            }
        }
        let (name, text) = OACP_HANDOFF;
        std::fs::write(agents.join("web/inbox").join(name), text).unwrap();
    });
}

/// A person's shell on a machine: this build as `aea` first on `PATH`, a
/// HOME of its own (so its own keys and registry), git's user and system
/// config left out.
struct Shell {
    home: PathBuf,
    path: String,
}

impl Shell {
    /// A shell whose HOME is the folder `home` of `env` (created).
    fn new(env: &TestEnv, home: &str) -> Self {
        let bin = env.path().join("bin");
        if !bin.exists() {
            std::fs::create_dir_all(&bin).unwrap();
            std::os::unix::fs::symlink(BIN, bin.join("aea")).unwrap();
        }
        let home = env.path().join(home);
        std::fs::create_dir_all(&home).unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Shell { home, path }
    }

    /// `line` as typed in `dir`, run by `sh`.
    fn command(&self, line: &str, dir: &Path) -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(line)
            .env_clear()
            .env("PATH", &self.path)
            .env("HOME", &self.home)
            .env("USER", "tester")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .current_dir(dir);
        cmd
    }

    fn run(&self, line: &str, dir: &Path) -> Output {
        self.command(line, dir).output().unwrap()
    }

    /// Runs `line` in `dir`, which must succeed, and returns its stdout.
    fn ok(&self, line: &str, dir: &Path) -> String {
        let out = self.run(line, dir);
        assert!(
            out.status.success(),
            "`{line}` in {} failed with {:?}\nstdout: {}\nstderr: {}",
            dir.display(),
            out.status.code(),
            stdout(&out),
            stderr(&out)
        );
        stdout(&out)
    }
}

fn runs_as_shown(page: &str, heading: &str) {
    runs_as_shown_after(page, heading, |_, _| {});
}

/// The session of `page` under `heading`, run in a home that `prepare`
/// first fills with what the page says was there before it starts.
fn runs_as_shown_after(page: &str, heading: &str, prepare: impl FnOnce(&TestEnv, &Path)) {
    let env = TestEnv::new();
    let shell = Shell::new(&env, "home");
    let home = shell.home.clone();
    prepare(&env, &home);
    let cwd_file = env.path().join("cwd");
    let mut cwd: PathBuf = home.clone();
    let steps = session(page, heading);
    assert!(steps.len() >= 8, "{page}: the session has its commands");
    let mut transcript = String::new();
    for (seed, step) in steps.iter().enumerate() {
        // A shell per line, as typed; `cd` carries over to the next one.
        let script = format!(
            "{}\nstatus=$?\npwd > \"$AEA_TOUR_CWD\"\nexit $status\n",
            step.command
        );
        let out = shell
            .command(&script, &cwd)
            .env("AEA_TEST_NOW", NOW)
            .env("AEA_TEST_SEED", seed.to_string())
            .env("AEA_TOUR_CWD", &cwd_file)
            .output()
            .unwrap();
        // As a terminal shows it: aea's warnings come before its answer.
        let shown =
            format!("{}{}", stderr(&out), stdout(&out)).replace(home.to_str().unwrap(), "/home/me");
        let _ = write!(transcript, "$ {}\n{shown}", step.command);
        assert!(
            out.status.success(),
            "`{}` failed: {}\n{transcript}",
            step.command,
            stderr(&out)
        );
        cwd = PathBuf::from(std::fs::read_to_string(&cwd_file).unwrap().trim_end());
        if step.expected.is_empty() {
            continue;
        }
        let actual: Vec<&str> = shown.lines().collect();
        assert!(
            matches(&step.expected, &actual),
            "`{}` printed other than {page} shows; the session so far:\n{transcript}",
            step.command
        );
    }
}

/// Where the README's handover block writes a key a person copies from
/// `aea whoami`.
const KEY_PLACEHOLDER: &str = "ed25519:…";

/// The commands of the README's "Handing your key to another machine"
/// block, comments left out: `aea whoami` on api's machine, then on web's
/// `agents add` by the mail remote, `agents trust`, and `agents trust
/// --key`.
fn handover() -> [String; 4] {
    let block = block(
        "README.md",
        "**Handing your key to another machine.**",
        "sh",
    );
    let commands: Vec<String> = block
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(str::to_string)
        .collect();
    commands.try_into().unwrap_or_else(|c: Vec<String>| {
        panic!("README.md: the handover block has the four commands this test runs: {c:?}")
    })
}

/// `line` from the README with its placeholders filled in: `ed25519:…`
/// by `key`, the path after `--remote` by `remote`.
fn fill(line: &str, key: &str, remote: &Path) -> String {
    let mut words: Vec<String> = Vec::new();
    for word in line.split(' ') {
        let filled = if words.last().is_some_and(|w| w == "--remote") {
            remote.display().to_string()
        } else if word == KEY_PLACEHOLDER {
            key.to_string()
        } else {
            word.to_string()
        };
        words.push(filled);
    }
    words.join(" ")
}

/// The value on the line `name` of `aea whoami`'s output.
fn whoami_field(printed: &str, name: &str) -> String {
    printed
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("`aea whoami` prints its {name}:\n{printed}"))
        .trim()
        .to_string()
}

impl Shell {
    /// A git repository at `dir` (under HOME) with aea initialised in it;
    /// with `remote`, that is its mail remote, trusted.
    fn repo(&self, dir: &str, remote: Option<&Path>) -> PathBuf {
        let repo = self.home.join(dir);
        std::fs::create_dir_all(&repo).unwrap();
        self.ok("git init -q && aea init", &repo);
        if let Some(remote) = remote {
            self.ok(
                &format!(
                    "printf 'sync:\\n  remote: %s\\n' '{}' >> .aea/agent-config.yaml && aea trust",
                    remote.display()
                ),
                &repo,
            );
        }
        repo
    }

    /// Sends a question from `repo` to web; its message id.
    /// Sends web a question; `via` is `--via-remote` where web is behind
    /// the mail remote and not registered here, else empty.
    fn ask_web(&self, repo: &Path, subject: &str, via: &str) -> String {
        let sent = self.ok(
            &format!(
                "aea --json send --to web {via} --type question --subject '{subject}' --body 'see subject'"
            ),
            repo,
        );
        let sent: serde_json::Value = serde_json::from_str(&sent).unwrap();
        sent["message_id"].as_str().unwrap().to_string()
    }

    /// What `aea check --json` in `repo` says of the sender of message
    /// `id`: `verified` or `unverified`, or `forged` when its file is
    /// listed as invalid for that reason.
    fn sender(&self, repo: &Path, id: &str) -> String {
        let report: serde_json::Value =
            serde_json::from_str(&self.ok("aea --json check", repo)).unwrap();
        let listed = report["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] == id);
        if let Some(message) = listed {
            return message["sender"].as_str().unwrap().to_string();
        }
        let holds_id = |file: &serde_json::Value| {
            std::fs::read_to_string(repo.join(".aea").join(file.as_str().unwrap()))
                .is_ok_and(|text| text.contains(id))
        };
        let invalid = report["invalid"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| holds_id(&f["file"]))
            .unwrap_or_else(|| panic!("message {id} is not in the report: {report}"));
        let reason = invalid["reason"].as_str().unwrap();
        assert!(reason.starts_with("forged:"), "message {id}: {reason}");
        "forged".to_string()
    }
}

/// The README's handover block, read from the README and run as written,
/// the key placeholder filled with what `aea whoami` really printed and
/// the remote with a real bare repository. A flag or a step that stops
/// working there fails this test.
#[test]
fn the_readme_key_handover_runs_as_written() {
    let [whoami, add, trust, repin] = handover();
    let env = TestEnv::new();

    // Two machines, each with its own HOME (keys, registry), sharing a
    // mail remote.
    let remote = bare_remote(&env);
    let one = Shell::new(&env, "machine-1");
    let two = Shell::new(&env, "machine-2");
    let api = one.repo("src/api", Some(&remote));
    let web = two.repo("src/web", Some(&remote));

    let printed = one.ok(&whoami, &api);
    let key = whoami_field(&printed, "key");
    let fingerprint = whoami_field(&printed, "fingerprint");
    assert!(
        printed
            .lines()
            .any(|l| l.trim() == fill(&add, &key, &remote)),
        "`{whoami}` hands over the README's line `{add}`:\n{printed}"
    );
    let id = one.ask_web(&api, "Which port?", "--via-remote");
    one.ok("aea sync", &api);
    two.ok("aea sync", &web);
    assert_eq!(two.sender(&web, &id), "unverified", "nothing pinned yet");

    // The line with a key other than api's (web's own): api's mail is
    // forged, never verified.
    let other = whoami_field(&two.ok("aea whoami", &web), "key");
    two.ok(&fill(&add, &other, &remote), &web);
    assert_eq!(two.sender(&web, &id), "forged", "the wrong key pinned");
    two.ok("aea agents remove api", &web);

    let added = two.ok(&fill(&add, &key, &remote), &web);
    assert!(
        added.contains(&fingerprint),
        "`{add}` prints the fingerprint to compare with api's: {added}"
    );
    assert_eq!(two.sender(&web, &id), "verified", "api's key pinned");

    // One machine, where api's owner and web's owner each have a HOME of
    // their own and web's owner reaches api's repository by its path.
    // web's owner registered api before api published a key, so none is
    // pinned.
    let api_owner = Shell::new(&env, "machine-3/api-owner");
    let web_owner = Shell::new(&env, "machine-3/web-owner");
    let web = web_owner.repo("src/web", None);
    let api = api_owner.home.join("src/api");
    std::fs::create_dir_all(&api).unwrap();
    let register = format!("aea agents add api --path '{}'", api.display());
    web_owner.ok(&register, &web);
    api_owner.ok("git init -q && aea init", &api);
    api_owner.ok(
        &format!("aea agents add web --path '{}'", web.display()),
        &api,
    );
    let first = api_owner.ask_web(&api, "Which port?", "");
    assert_eq!(web_owner.sender(&web, &first), "unverified");
    let printed = api_owner.ok(&whoami, &api);
    let trusted = web_owner.ok(&trust, &web);
    assert!(
        trusted.contains(&whoami_field(&printed, "fingerprint")),
        "`{trust}` prints the fingerprint to compare with api's: {trusted}"
    );
    assert_eq!(web_owner.sender(&web, &first), "verified", "`{trust}`");

    // api's owner makes a new key: its mail is forged on web's side, and
    // `agents trust` without a key refuses it, naming the line to run.
    api_owner.ok("rm ~/.config/aea/keys/api.key && aea init", &api);
    let second = api_owner.ask_web(&api, "And the proxy?", "");
    assert_eq!(web_owner.sender(&web, &second), "forged");
    let new_key = whoami_field(&api_owner.ok(&whoami, &api), "key");
    assert_ne!(new_key, key);
    let refused = web_owner.run(&trust, &web);
    assert_eq!(code(&refused), 5, "{}", stderr(&refused));
    let repin = fill(&repin, &new_key, &remote);
    assert!(
        stderr(&refused).contains(&repin),
        "the refusal names the README's line `{repin}`: {}",
        stderr(&refused)
    );
    web_owner.ok(&repin, &web);
    assert_eq!(web_owner.sender(&web, &second), "verified", "`{repin}`");
}
