//! What aea does when its output cannot be written: a closed stdout drops
//! the output but still finishes the command's work; an output that fails
//! otherwise is a failure with its exit code.

use crate::common::*;

/// A closed stdout (`aea demo | head -1`) ends output quietly, and the
/// command still finishes normally: its temporary folder is removed, as it
/// would not be if the process ended on the first failed write.
#[test]
fn a_closed_stdout_drops_output_but_runs_destructors() {
    let env = TestEnv::new();
    let tmp = env.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = env
        .cmd(&env.path())
        .env("TMPDIR", &tmp)
        .arg("demo")
        .stdout(writer)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "the demo left {left:?} behind");
}

/// Output lost to a full disk is a failure, unlike a closed pipe.
#[test]
fn output_that_cannot_be_written_is_a_failure() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full exists on Linux");
    let out = env
        .cmd(&web)
        .args(["log", "--json"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot write standard output"),
        "{}",
        stderr(&out)
    );
}
