//! What the receiver decided in its files: config, trust, registry, policy and the keys it pinned.
//!
//! A layer of aea (see CONTRIBUTING.md, "Layers"): it may use the
//! crates below it and none above. The lower layers' modules it uses are
//! brought in below, so that `crate::<module>` names one module wherever
//! it lives.

pub mod approvers;
pub mod config;
pub mod config_trust;
pub mod doorbell;
pub mod keyring;
pub mod policy;
pub mod registry;

use aea_ground::duration;
use aea_ground::env;
use aea_ground::error;
use aea_ground::fsutil;
use aea_ground::words;
use aea_protocol::foreign;
use aea_protocol::hardstop;
use aea_protocol::identity;
use aea_protocol::message;
