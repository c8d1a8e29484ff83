//! The book's "A five-minute tour" (`docs/src/tour.md`) and the README's
//! "Quick start" are real terminal sessions: every command in each runs
//! here, in order, in a fresh home folder, with the clock and random seed
//! fixed, and must succeed and print what the page shows (stderr, then
//! stdout; home shown as `/home/me`; a line `…` stands for any lines). A
//! change to the output breaks this test, and its message carries the new
//! output to paste.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;

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
            .is_some_and(|(a, more)| a == first && matches(rest, more)),
    }
}

#[test]
fn the_book_tour_runs_as_shown() {
    runs_as_shown("docs/src/tour.md", "# A five-minute tour");
}

#[test]
fn the_readme_quick_start_runs_as_shown() {
    runs_as_shown("README.md", "## A five-minute quick start");
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
    let env = TestEnv::new();
    let shell = Shell::new(&env, "home");
    let home = shell.home.clone();
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
