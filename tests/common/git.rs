//! git as a person runs it next to aea: with the sealed environment's HOME
//! and registry, so the hooks aea installed find them, and a fixed author.

use std::path::Path;
use std::process::{Command, Output};

use super::{TestEnv, git_command, stderr, stdout};

impl TestEnv {
    /// A `git` command in `dir` with this environment's HOME, user and
    /// registry, `main` as the first branch and local submodules allowed;
    /// the caller adds the arguments.
    pub fn git_cmd(&self, dir: &Path) -> Command {
        let mut cmd = git_command(dir);
        cmd.env("HOME", self.path().join("home"))
            .env("USER", "tester")
            .env("AEA_REGISTRY", self.registry())
            .args([
                "-c",
                "init.defaultBranch=main",
                "-c",
                "protocol.file.allow=always",
            ]);
        cmd
    }

    /// `git args…` in `dir` with `vars` set as well.
    pub fn git_with(&self, dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
        let mut cmd = self.git_cmd(dir);
        cmd.args(args);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    /// `git args…` in `dir`, whatever its outcome.
    pub fn git(&self, dir: &Path, args: &[&str]) -> Output {
        self.git_with(dir, args, &[])
    }

    /// `git args…` in `dir`, failing the test unless it succeeds.
    pub fn git_ok(&self, dir: &Path, args: &[&str]) -> Output {
        let out = self.git(dir, args);
        assert!(
            out.status.success(),
            "git {args:?} failed\nstdout: {}\nstderr: {}",
            stdout(&out),
            stderr(&out)
        );
        out
    }

    /// Writes a new file `file` in `dir`, adds it and commits it with git's
    /// hooks on (`vars` set): the output of `git commit`.
    pub fn commit_new_file(&self, dir: &Path, file: &str, vars: &[(&str, &str)]) -> Output {
        std::fs::write(dir.join(file), file).unwrap();
        self.git_ok(dir, &["add", "--", file]);
        self.git_with(dir, &["commit", "-q", "-m", file], vars)
    }
}

/// Fails the test unless the pre-commit gate refused the commit `out` and
/// said so; `what` names the moment.
pub fn assert_commit_blocked(out: &Output, what: &str) {
    assert!(
        !out.status.success() && stderr(out).contains("commit blocked"),
        "{what}: the pre-commit gate let a commit through while gated mail waits for a person\nstdout: {}\nstderr: {}",
        stdout(out),
        stderr(out)
    );
}
