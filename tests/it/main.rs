//! Integration tests through the `logscope` binary: one test target, one module per
//! command.

mod availability;
mod common;
mod ingest;
mod replay;
mod reports;
