//! The mailbox on disk: the inbox, the receiver's private state, delivery and its records.
//!
//! A layer of aea (see CONTRIBUTING.md, "Layers"): it may use the
//! crates below it and none above. The lower layers' modules it uses are
//! brought in below, so that `crate::<module>` names one module wherever
//! it lives.

pub mod approval;
pub mod attachments;
pub mod audit;
pub mod compose;
pub mod delivery;
pub mod health;
pub mod housekeeping;
pub mod judge;
pub mod layout;
pub mod mailbox;
pub mod processing;
pub mod recovery;
pub mod replay;
pub mod route;
pub mod seen;
pub mod served;
pub mod sync_state;
pub mod tracking;

use aea_ground::duration;
use aea_ground::error;
use aea_ground::fsutil;
use aea_ground::liveness;
use aea_ground::printer;
use aea_ground::runtime;
use aea_ground::words;
use aea_policy::approvers;
use aea_policy::config;
use aea_policy::config_trust;
use aea_policy::keyring;
use aea_policy::policy;
use aea_policy::registry;
use aea_protocol::foreign;
use aea_protocol::identity;
use aea_protocol::message;
use aea_protocol::secrets;
use aea_protocol::shortref;
