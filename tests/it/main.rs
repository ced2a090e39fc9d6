//! Integration tests through the `logscope` binary: one test target, one module per
//! command (and per hardening area).

mod availability;
mod cli_contract;
mod cli_extras;
mod common;
mod dataset;
mod formats;
mod fuzz_cli;
mod hardening_bounds;
mod hardening_output;
mod hardening_parse;
mod hardening_source;
mod ingest;
mod ingest_layering;
mod layouts;
mod replay;
mod replay_memory;
mod reports;
mod scale;
