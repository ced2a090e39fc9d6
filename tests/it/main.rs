//! Integration tests through the `logscope` binary: one test target, one module per
//! command.

mod common;
mod ingest;
