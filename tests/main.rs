//! Integration tests: the real `aea` binary in temporary directories.

// Tests read the outer environment (PATH) to seal the inner one, and may
// print what they saw; the product's layout rules (clippy.toml) are not
// theirs. `layout.rs` checks those rules on `src/`.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::disallowed_methods)]

mod common;

mod approvals;
mod attachments;
mod attack_private_state;
mod bad_input;
mod bash_aea;
mod bridge;
mod collab;
mod collab_corpus;
mod collab_e2e;
mod compat;
mod concurrency;
mod config_trust;
mod cost_follows;
mod custody;
mod docs;
mod errors;
mod escape;
mod faults;
mod first_steps;
mod floods;
mod git_hooks;
mod git_writes;
mod hardstops;
mod harnesses;
mod hooks_output;
mod housekeeping;
mod identity;
mod json_output;
mod layers;
mod layout;
mod lifecycle;
mod migrate;
mod newcomer_paths;
mod pinned_keys;
mod policy_corpus;
mod private_state;
mod readme_tour;
mod replay;
mod retries;
mod roundtrip;
mod schemas;
mod seed_fields;
mod seen;
mod send_checks;
mod senders;
mod signatures;
mod snapshots;
mod state;
mod sync;
mod sync_state;
mod sync_store_config;
mod wake;
