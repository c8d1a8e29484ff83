//! Git: repositories, hooks' folders and carrying mail through a remote.
//!
//! A layer of aea (see CONTRIBUTING.md, "Layers"): it may use the
//! crates below it and none above. The lower layers' modules it uses are
//! brought in below, so that `crate::<module>` names one module wherever
//! it lives.

pub mod repo;
pub mod sync;

use aea_ground::error;
use aea_ground::fsutil;
use aea_ground::printer;
use aea_ground::runtime;
use aea_ground::words;
use aea_policy::keyring;
use aea_protocol::identity;
use aea_protocol::message;
use aea_store::approval;
use aea_store::attachments;
use aea_store::audit;
use aea_store::layout;
use aea_store::mailbox;
use aea_store::sync_state;
