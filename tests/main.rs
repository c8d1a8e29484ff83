//! Integration tests: the real `aea` binary in temporary directories.

mod common;

mod approvals;
mod bad_input;
mod compat;
mod concurrency;
mod config_trust;
mod errors;
mod escape;
mod git_hooks;
mod hardstops;
mod hooks_output;
mod identity;
mod json_output;
mod lifecycle;
mod policy_corpus;
mod roundtrip;
mod schemas;
mod snapshots;
mod state;
mod sync;
mod wake;
