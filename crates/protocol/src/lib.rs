//! The AEA v1.0 message and what is read from it: its format, signatures, secrets and hard stops.
//!
//! A layer of aea (see CONTRIBUTING.md, "Layers"): it may use the
//! crates below it and none above. The lower layers' modules it uses are
//! brought in below, so that `crate::<module>` names one module wherever
//! it lives.

pub mod foreign;
pub mod hardstop;
pub mod identity;
pub mod message;
pub mod secrets;
pub mod shortref;

use aea_ground::duration;
use aea_ground::error;
use aea_ground::fsutil;
use aea_ground::normalize;
use aea_ground::words;
