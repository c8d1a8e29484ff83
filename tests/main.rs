//! Integration tests: the real `aea` binary in temporary directories.

// Tests read the outer environment (PATH) to seal the inner one, and may
// print what they saw; the product's layout rules (clippy.toml) are not
// theirs. `test_code_layout.rs` checks those rules on the sources.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::disallowed_methods)]

mod common;

mod test_approve_command;
mod test_approvers_command;
mod test_attachments;
mod test_bash_aea;
mod test_bridge_commands;
mod test_check_command;
mod test_code_layers;
mod test_code_layout;
mod test_collab_command;
mod test_collab_turns;
mod test_concurrency;
mod test_demo_command;
mod test_docs_links;
mod test_docs_tour;
mod test_error_messages;
mod test_first_use;
mod test_gc_command;
mod test_git_hooks;
mod test_git_written_files;
mod test_hard_stops_and_secrets;
mod test_harness_attacks;
mod test_harness_hooks;
mod test_hostile_input;
mod test_inbox_floods;
mod test_init_command;
mod test_json_output;
mod test_killed_processes;
mod test_log_command;
mod test_mcp;
mod test_mcp_attacks;
mod test_mcp_files;
mod test_old_layout_migration;
mod test_older_tools;
mod test_output_snapshots;
mod test_output_streams;
mod test_policy_command;
mod test_private_state;
mod test_private_state_attacks;
mod test_process_command;
mod test_protocol_fields;
mod test_remembered_reports;
mod test_replays;
mod test_reply_command;
mod test_send_command;
mod test_send_retries;
mod test_sender_verification;
mod test_shared_inbox;
mod test_sync_command;
mod test_terminal_escapes;
mod test_trust_command;
mod test_trust_gates;
mod test_watch_and_monitor;
