//! What aea's git hooks decide (SPEC §9): the setting each hook runs
//! with, and whether the pre-commit gate blocks a commit — for files of
//! this machine's `.aea/` staged, or for mail waiting for a person's
//! approval where `hooks.pre_commit.block_on` says. `aea hooks run`
//! words the refusal.
//!
//! Layer: harness, beside [`crate::hooks`] (the hook scripts); it asks git
//! ([`crate::repo`]) what is staged.

use std::path::Path;

use crate::config::{BlockOn, HookConfig, HooksConfig};
use crate::hooks::GitHook;
use crate::message::Priority;

/// `hooks.<hook>` of the config, defaults where unset.
pub fn setting(hooks: &HooksConfig, hook: GitHook) -> HookConfig {
    match hook {
        GitHook::PreCommit => hooks.pre_commit.clone(),
        GitHook::PostMerge => hooks.post_merge.clone(),
        GitHook::PostCheckout => hooks.post_checkout.clone(),
        GitHook::PostRewrite => hooks.post_rewrite.clone(),
    }
    .unwrap_or_default()
}

/// Mail, markers or the log of the inbox `aea` about to be committed
/// (relative to it): `.aea/.gitignore` is committed, and a pull can make
/// it ignore nothing. `index` is the index file git made the commit from,
/// when it said. Nothing outside git, or when git cannot tell.
pub fn staged_state(aea: &Path, index: Option<&Path>) -> Vec<String> {
    crate::repo::staged_under(aea, index)
        .unwrap_or_default()
        .into_iter()
        .filter(|rel| !crate::layout::Shared::committed(rel))
        .collect()
}

/// Of the mail `waiting` for a person's approval (each its short reference
/// and priority), the references that block a commit under `block_on`.
pub fn blocking<'a>(waiting: &[(&'a str, Priority)], block_on: Option<BlockOn>) -> Vec<&'a str> {
    match block_on.unwrap_or_default() {
        BlockOn::GatedPending => waiting.iter().collect(),
        BlockOn::UrgentPending => waiting
            .iter()
            .filter(|(_, p)| *p == Priority::Urgent)
            .collect::<Vec<_>>(),
        BlockOn::Never => Vec::new(),
    }
    .into_iter()
    .map(|(r, _)| *r)
    .collect()
}
