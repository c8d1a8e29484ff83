//! Telling agents about mail: harness files, git hooks, watching and doorbells.
//!
//! A layer of aea (see CONTRIBUTING.md, "Layers"): it may use the
//! crates below it and none above. The lower layers' modules it uses are
//! brought in below, so that `crate::<module>` names one module wherever
//! it lives.

pub mod collab_turns;
pub mod collab_wake;
pub mod harness;
pub mod hook_gate;
pub mod hooks;
pub mod monitor;
pub mod reminder;
pub mod templates;
pub mod transport;
pub mod wake;
pub mod watch;

use aea_bridges::bridge;
use aea_bridges::collab;
use aea_git::repo;
use aea_ground::env;
use aea_ground::error;
use aea_ground::fsutil;
use aea_ground::printer;
use aea_ground::runtime;
use aea_ground::words;
use aea_policy::config;
use aea_policy::doorbell;
use aea_policy::policy;
use aea_protocol::identity;
use aea_protocol::message;
use aea_protocol::secrets;
use aea_protocol::shortref;
use aea_store::audit;
use aea_store::compose;
use aea_store::delivery;
use aea_store::judge;
use aea_store::layout;
use aea_store::mailbox;
use aea_store::processing;
use aea_store::route;
use aea_store::served;
