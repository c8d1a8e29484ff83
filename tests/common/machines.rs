//! Machines for tests of `aea sync` (SPEC §11): repositories in separate
//! folders with separate registries, sharing one bare git remote.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::{TestEnv, git_command, stderr, stdout};

/// One machine: a repository alone in its own folder, with its own
/// registry.
pub struct Machine {
    pub repo: PathBuf,
    pub registry: PathBuf,
    /// Its private state (see `aea::layout`).
    pub state: PathBuf,
}

impl Machine {
    /// A repository `id` alone in its own folder, with its own registry,
    /// whose mail remote is `remote`; `peers` are registered as remote-only.
    pub fn new(env: &TestEnv, id: &str, remote: &Path, peers: &[&str]) -> Self {
        let home = env.path().join(format!("machine-{id}"));
        let repo = home.join(id);
        std::fs::create_dir_all(&repo).unwrap();
        let registry = home.join("registry.toml");
        let state = env.state(&repo);
        let machine = Machine {
            repo,
            registry,
            state,
        };
        machine.ok(env, &["init", "--no-agent-files", "--no-git-hooks"]);
        let config = machine.repo.join(".aea/agent-config.yaml");
        let mut text = std::fs::read_to_string(&config).unwrap();
        let _ = write!(text, "\nsync:\n  remote: {}\n", remote.display());
        std::fs::write(&config, text).unwrap();
        // A remote in the config is used only once the user trusts it.
        machine.ok(env, &["trust"]);
        let mut reg = std::fs::read_to_string(&machine.registry).unwrap();
        for peer in peers {
            let _ = write!(
                reg,
                "
[agents.{peer}]
remote = \"{}\"
key = \"{}\"
",
                remote.display(),
                env.public_key(peer)
            );
        }
        std::fs::write(&machine.registry, reg).unwrap();
        machine
    }

    /// `aea` on this machine, sealed, with its own registry.
    pub fn cmd(&self, env: &TestEnv) -> Command {
        let mut cmd = env.cmd(&self.repo);
        cmd.env("AEA_REGISTRY", &self.registry);
        cmd
    }

    pub fn run(&self, env: &TestEnv, args: &[&str]) -> Output {
        self.cmd(env).args(args).output().unwrap()
    }

    pub fn ok(&self, env: &TestEnv, args: &[&str]) -> String {
        let out = self.run(env, args);
        assert!(out.status.success(), "aea {args:?}: {}", stderr(&out));
        stdout(&out)
    }

    pub fn json(&self, env: &TestEnv, args: &[&str]) -> serde_json::Value {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        serde_json::from_str(self.ok(env, &full).trim()).unwrap()
    }

    pub fn send(&self, env: &TestEnv, to: &str, subject: &str) -> String {
        let v = self.json(
            env,
            &[
                "send",
                "--to",
                to,
                "--type",
                "question",
                "--subject",
                subject,
            ],
        );
        v["message_id"].as_str().unwrap().to_string()
    }

    pub fn inbox_ids(&self, env: &TestEnv) -> Vec<String> {
        let report = self.json(env, &["check", "--all"]);
        report["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect()
    }

    pub fn outgoing(&self) -> usize {
        std::fs::read_dir(self.state.join("outgoing")).map_or(0, Iterator::count)
    }
}

/// The records of a machine's sync journal (`sync/journal` in its
/// private state `state`), each as `{"<kind>": …}`, in the order written.
pub fn sync_journal(state: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(state.join("sync/journal"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The receipts a machine's sync recorded, by message id.
pub fn sync_receipts(state: &Path) -> serde_json::Map<String, serde_json::Value> {
    sync_journal(state)
        .into_iter()
        .filter_map(|r| r.get("receipt").cloned())
        .map(|r| (r["message_id"].as_str().unwrap().to_string(), r))
        .collect()
}

pub fn git(dir: &Path, args: &[&str]) -> Output {
    let out = git_command(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    out
}

/// An empty bare repository: the mail remote the machines share.
pub fn bare_remote(env: &TestEnv) -> PathBuf {
    let remote = env.path().join("mail.git");
    git(
        &env.path(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    remote
}

pub fn refs(remote: &Path) -> String {
    stdout(&git(remote, &["for-each-ref"]))
}
