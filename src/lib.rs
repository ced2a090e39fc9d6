//! logscope: access-log analysis and forensics — ingest logs into a Parquet dataset,
//! report on them, and replay them through candidate rate limiters.
//!
//! The polars-free parts (sources, parsers, replay) live in `logscope-core`,
//! re-exported here as [`core`]; this crate adds the dataset ([`store`]), the
//! commands ([`cli`]) and their rendering ([`render`]).

#![deny(missing_docs)]

pub mod cli;
pub mod engine;
pub mod render;
pub mod reports;
pub mod store;

pub use logscope_core as core;
