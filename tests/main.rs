//! Integration tests: the real `aea` binary in temporary directories.

mod common;

mod approvals;
mod bad_input;
mod compat;
mod concurrency;
mod escape;
mod git_hooks;
mod hooks_output;
mod lifecycle;
mod policy_corpus;
mod roundtrip;
mod snapshots;
mod sync;
mod wake;
