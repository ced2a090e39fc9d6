//! logscope-core: the polars-free heart of logscope — log sources, format parsers,
//! request classification and the rate-limiter replay engine.
//!
//! Everything here streams and is deterministic: time always comes from the log,
//! never from the wall clock.

#![deny(missing_docs)]

pub mod availability;
pub mod batch;
pub mod chart;
pub mod chunked;
pub mod classify;
pub mod conf_file;
pub mod duration;
pub mod escape;
pub mod forensics;
pub mod net;
pub mod number;
pub mod parse;
pub mod pipeline;
pub mod quantile;
pub mod rate;
pub mod record;
pub mod replay;
pub mod source;
pub mod sqlgen;
pub mod table;
pub mod time;
pub mod varint;

pub use record::{Precision, Record};
