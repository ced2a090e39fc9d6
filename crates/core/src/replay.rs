//! Rate-limiter replay: what would a limiter have done with the requests in a log?
//!
//! Pure and deterministic: time is passed in (ms since the epoch, from the log), never
//! read from a clock; per-key state lives in hash maps that are never iterated into an
//! output. Pieces:
//!
//! * [`LimitSpec`] — a limit as people say it (`1600/10m`,
//!   `5r/s,algo=nginx,burst=10,nodelay,key=ip`), with [`LimitSpec::describe`].
//! * Algorithms, one file each under `replay/` (pure state machines, time passed in):
//!   `nginx.rs` (exact `limit_req`), `caddy.rs` (caddy-ratelimit), `token_bucket.rs`,
//!   `gcra.rs` (governor), `fixed_window.rs`, `sliding_log.rs`, `sliding_window.rs`
//!   (counter), `leaky_queue.rs`, `haproxy.rs` (stick tables, and the `http-request`
//!   program of a haproxy.cfg read by [`conf::haproxy_cfg`]); chosen by [`Algorithm`].
//! * [`Zone`] — one limit plus its per-key state; [`Zone::check`] is the low-level entry
//!   point for callers that compute their own keys.
//! * [`KeySpec`] — what a bucket is shared by, and the key extraction helpers
//!   ([`prefix_of`] for /24 and /48 networks).
//! * [`Policy`] — a candidate: zones, rules ([`Matcher`], [`Exempt`]) and a [`Dialect`]
//!   for how several limits combine; from a spec ([`Policy::from_spec`]) or TOML
//!   ([`Policy::from_toml`], see `fixtures/limits/`).
//! * [`Replay`] — several candidates in one pass: feed [`Request`]s in decision-time
//!   order ([`ReplayOrder`]), get a [`Verdict`] per candidate, read [`Counters`].
//! * [`report`] — the `logscope replay` report: rows collected and sorted into
//!   decision-time order, replayed, summarised per candidate (refusals over time, load
//!   against a capacity, whom it refused), plus the `--decisions` CSV.
//! * [`fleet`] — `--servers N --balance RULE`: each server with its own counters
//!   against one shared counter; [`Shard`] — `--keys K/N`, one shard of the keys.

mod algorithm;
mod ban;
mod ban_log;
mod caddy;
mod client_view;
pub mod conf;
mod config;
mod decision;
mod engine;
mod fixed_window;
pub mod fleet;
mod gcra;
mod haproxy;
mod haproxy_program;
mod increment;
mod jail;
mod key;
mod leaky_queue;
mod matcher;
mod nginx;
mod policy;
pub mod report;
mod request;
mod shard;
mod sliding_log;
mod sliding_window;
mod spec;
mod store;
pub mod sweep;
mod token_bucket;
mod zone;

pub use crate::rate::{Rate, RateError};
pub use ban::{BanOptions, BanZone, CountFilter, key_text, rebuild_line};
pub use ban_log::{BanCounters, BanRecord};
pub use client_view::{ClientView, REMAINING_CAP};
pub use config::LimitConfigError;
pub use decision::{Decision, RuleId, Verdict};
pub use engine::{Counters, Replay};
pub use haproxy::{FreqCtr, HaproxyRate, StickTable};
pub use haproxy_program::{
    Action, Cmp, Cond, Frontend, Program, SLOTS as HAPROXY_SLOTS, Term, Test, TrackKey,
};
pub use increment::{Increment, milli_text, parse_milli};
pub use key::{
    DEFAULT_V4_PREFIX, DEFAULT_V6_PREFIX, FieldKey, KEY_NAMES, KeySpec, canonical, prefix_of,
};
pub use matcher::{CREDENTIAL_REFUSALS, Exempt, Matcher};
pub use policy::{Dialect, LimitRef, Policy, PolicyError, Rule, RuleLimit};
pub use request::{Reorder, ReplayOrder, Request};
pub use shard::{Shard, ShardError, ShardFilter, shard_key};
pub use spec::{
    ALGORITHMS, Algorithm, CostKind, LimitSpec, NginxDelay, SpecError, SpecProblem, SpecScope,
    algo_names,
};
pub use zone::{Outcome, Zone, ZoneCounters, ZoneId};
