//! The git that `aea sync` runs on its own store takes no configuration
//! from the repository (SPEC §15.1): clone and pull write ignored files
//! too, so a store config that a repository's author planted in the work
//! tree must run nothing. The tests look only at what happens (no planted
//! command runs, the sync does its work), not at where the store lives.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::*;

/// A store config that runs a program as soon as git fetches from a local
/// path: every path is rewritten to an ssh URL, whose ssh command writes
/// `PWNED` (in git's working folder, the repository).
const HOSTILE: &str = "[core]
\tsshCommand = sh -c 'id > PWNED'
\tfsmonitor = sh -c 'id > PWNED-fsmonitor'
[url \"ssh://x/\"]
\tinsteadOf = /
";

/// Where a planted command left its mark: the files under `root` whose
/// name starts with `PWNED`.
fn marks(root: &Path) -> Vec<PathBuf> {
    snapshot(root)
        .into_iter()
        .map(|(path, _)| path)
        .filter(|path| {
            path.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("PWNED"))
        })
        .collect()
}

/// The hostile config where an older aea kept its store, in the work
/// tree (a clone or a pull writes it there).
fn plant_in_work_tree(repo: &Path) {
    let store = repo.join(".aea/.sync");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(store.join("config"), HOSTILE).unwrap();
}

/// The hostile config in the store itself, in the private state: what a
/// process of the same user, or a tool, could write there. aea replaces
/// it before git reads it.
fn plant_in_store(state: &Path) {
    let store = state.join("sync");
    if store.join("HEAD").is_file() {
        std::fs::write(store.join("config"), HOSTILE).unwrap();
    }
}

/// `aea --json sync --remote <remote>`, run by `cmd`: no planted command
/// ran, and the sync ended as a normal one. Returns its report.
fn sync_runs_nothing(env: &TestEnv, mut cmd: std::process::Command, remote: &Path) -> Value {
    let out = cmd
        .args(["--json", "sync", "--remote"])
        .arg(remote)
        .output()
        .unwrap();
    assert_eq!(
        marks(&env.path()),
        Vec::<PathBuf>::new(),
        "a command planted in the store config ran; stderr: {}",
        stderr(&out)
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    serde_json::from_str(stdout(&out).trim()).unwrap()
}

#[test]
fn a_store_config_planted_in_the_work_tree_runs_nothing() {
    let env = TestEnv::new();
    let remote = bare_remote(&env);
    let a = Machine::new(&env, "aa", &remote, &["bb"]);
    let id = a.send(&env, "bb", "past a planted store config");
    plant_in_work_tree(&a.repo);

    let report = sync_runs_nothing(&env, a.cmd(&env), &remote);
    assert_eq!(report["pushed"]["bb"], json!([id]));
    assert!(refs(&remote).contains("refs/aea/mail/bb"));

    // Planted again once the store exists, in the work tree and in the
    // store itself: the same.
    plant_in_work_tree(&a.repo);
    plant_in_store(&a.state);
    assert!(
        a.state.join("sync/config").is_file(),
        "the store exists by now"
    );
    let id = a.send(&env, "bb", "past a store config planted again");
    let report = sync_runs_nothing(&env, a.cmd(&env), &remote);
    assert_eq!(report["pushed"]["bb"], json!([id]));
}

#[test]
fn a_store_config_committed_upstream_runs_nothing_in_a_clone() {
    let env = TestEnv::new();
    let remote = bare_remote(&env);
    // The author's repository, with the store config forced into a commit.
    let upstream = env.path().join("upstream");
    std::fs::create_dir(&upstream).unwrap();
    git(&upstream, &["init", "-q"]);
    env.ok(&upstream, &["init", "--no-agent-files", "--no-git-hooks"]);
    plant_in_work_tree(&upstream);
    git(&upstream, &["add", "-A"]);
    git(&upstream, &["add", "-f", ".aea/.sync/config"]);
    git(&upstream, &["commit", "-q", "-m", "base"]);

    // Someone else clones it and takes it into use, on their machine.
    git(&env.path(), &["clone", "-q", "upstream", "clone"]);
    let clone = env.path().join("clone");
    assert_eq!(
        std::fs::read_to_string(clone.join(".aea/.sync/config")).unwrap(),
        HOSTILE,
        "git put the planted config in the clone"
    );
    let registry = env.path().join("clone-registry.toml");
    let cmd = || {
        let mut cmd = env.cmd(&clone);
        cmd.env("AEA_REGISTRY", &registry);
        cmd
    };
    let init = cmd()
        .args(["init", "--no-agent-files", "--no-git-hooks"])
        .output()
        .unwrap();
    assert_eq!(code(&init), 0, "{}", stderr(&init));

    // Mail waits on the remote for the clone's agent.
    let sender = Machine::new(&env, "bb", &remote, &["upstream"]);
    let id = sender.send(&env, "upstream", "to a fresh clone");
    sender.ok(&env, &["sync"]);

    let report = sync_runs_nothing(&env, cmd(), &remote);
    assert_eq!(report["received"], json!([id]));
}
