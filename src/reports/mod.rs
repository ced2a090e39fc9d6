//! The reports, each on the engine's [`Report`](crate::engine::report::Report)
//! interface: the columns and classes it reads, its fast path (a tally per batch where the
//! batch is decoded) and how it finishes. The commands in `cli/` parse flags and call
//! [`run`](crate::engine::report::run) with one of these. [`live`] composes them into the
//! frames, alerts and live loop of `logscope watch`.

pub mod agents;
pub mod block;
pub mod capacity;
pub mod concentration;
pub mod diff;
pub mod fingerprint;
pub mod heavy;
pub mod live;
pub mod timeline;
pub mod top;
pub mod watch;
