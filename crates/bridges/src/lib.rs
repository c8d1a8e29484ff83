//! Other file protocols: OACP, Roo and the Agent Collaboration Protocol.
//!
//! A layer of aea (see CONTRIBUTING.md, "Layers"): it may use the
//! crates below it and none above. The lower layers' modules it uses are
//! brought in below, so that `crate::<module>` names one module wherever
//! it lives.

pub mod bridge;
pub mod collab;
pub mod migrate;

use aea_git::repo;
use aea_ground::error;
use aea_ground::fsutil;
use aea_ground::runtime;
use aea_ground::words;
use aea_policy::config;
use aea_protocol::foreign;
use aea_protocol::identity;
use aea_protocol::message;
use aea_store::attachments;
use aea_store::audit;
use aea_store::delivery;
use aea_store::layout;
use aea_store::mailbox;
