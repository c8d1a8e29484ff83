//! What every layer stands on: the environment, output, files, time, words and errors.
//!
//! A layer of aea (see CONTRIBUTING.md, "Layers"): it may use the
//! crates below it and none above. The lower layers' modules it uses are
//! brought in below, so that `crate::<module>` names one module wherever
//! it lives.

pub mod duration;
pub mod env;
pub mod error;
pub mod fsutil;
pub mod liveness;
pub mod normalize;
pub mod printer;
pub mod runtime;
pub mod words;
