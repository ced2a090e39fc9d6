//! Integration tests through the `logscope` binary: one test target, one module per
//! command (and per hardening area).

mod availability;
mod ban;
mod browser;
mod caddy_conf;
mod charts;
mod cli_contract;
mod cli_extras;
mod common;
mod corpus;
mod dataset;
mod emit_haproxy;
mod engine_schema;
mod fleet;
mod formats;
mod fuzz_cli;
mod haproxy_oracle;
mod hardening_bounds;
mod hardening_output;
mod hardening_parse;
mod hardening_source;
mod ingest;
mod ingest_layering;
mod layouts;
mod nginx_conf;
mod replay;
mod replay_memory;
mod report;
mod reports;
mod scale;
mod sql;
mod sql_twins;
mod stored_form;
mod top;
mod typed_csv;
