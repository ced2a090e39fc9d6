//! Availability per period (month, week, day, hour) the way an incident post reports
//! it: the share of probe requests that succeeded, with gaps in the log counted as
//! downtime, graded green/yellow/orange/red, and the incidents behind the figures.
//!
//! # Definition
//!
//! * **Probe mode** (`Config::probe` is set): every request matching the probe is a
//!   probe. A probe *succeeded* when its status is in `success` (default 2xx, 3xx),
//!   else it *failed*.
//! * **Dynamic mode** (no probe): every dynamic request (not an image, stylesheet,
//!   script, font, …: [`is_static_path`]) is a probe; it succeeded unless its status
//!   is 5xx (`success` defaults to 1xx–4xx).
//! * Statuses in `policy` (default 403, 429) are decisions of a rate limit or an ACL,
//!   not downtime: by default they are left out of the denominator
//!   ([`PolicyAs::Exclude`]); they can be counted as successes or failures instead.
//! * **Gaps are downtime.** Probes are expected every `cadence` (given, or estimated:
//!   the median interval between probes). A silence of `Δ` between two probes holds
//!   `round(Δ / cadence) − 1` missing probes, placed at the expected times and counted
//!   as failures.
//! * **Without a probe, only improbable silences are downtime** (`rhythm.rs`): the
//!   site's expected requests per hour of the week are learned from the log (medians
//!   over the days with requests, so a storm does not raise them), and a silence of at
//!   least the gap threshold (default 15 minutes) counts only when Poisson gives it
//!   less than a 10⁻³ chance; its missing requests are the expected requests in it,
//!   spread evenly over it. With `--expect-every`, or fewer than 4 days with requests,
//!   a silence holds one missing request per cadence (given, or the mean interval
//!   between dynamic requests shorter than the gap threshold).
//! * Availability of a period = succeeded / (succeeded + failed + missing).
//!
//! Periods come from the caller's [`Calendar`] (time zones with daylight saving are
//! resolved there); the computation is pure: rows in, [`Report`] out, time only from
//! the log. Rows may arrive in any order.
//!
//! # Bounded by the data
//!
//! Time follows the number of lines and of periods holding probe requests, never the
//! span between the first and the last line. Memory holds the probes up to a budget
//! (16 MiB, one to two bytes a probe; beyond it they go to an unnamed temporary file),
//! one entry per minute holding a line, per sub-bucket and per period: a run of more than
//! [`MAX_EMPTY_PERIODS`] periods without a probe request is one row (counted like any
//! period: its expected probes are all missing), and the sub-buckets inside a long
//! silence are one entry.
//!
//! Files: `config.rs` (what is counted), `acc.rs` (rows in, prepared), `probes.rs`
//! (the probes sorted in bounded memory, spilled to a temporary file), `compute.rs`
//! (prepared rows over periods), `rhythm.rs` (the site's rhythm, without a probe),
//! `model.rs` (the typed result), `calendar.rs`, `spec.rs`, `render.rs`.

mod acc;
pub mod calendar;
mod compute;
mod config;
mod model;
mod probes;
pub mod render;
pub mod rhythm;
pub mod spec;

pub use crate::classify::static_files::is_static_path;
pub use acc::{Accumulator, Cadence, CadenceSource, Lines, Prepared};
pub use calendar::{By, Calendar, CalendarError, Period};
pub use compute::ComputeError;
pub use config::{Config, PolicyAs};
pub use model::{Incident, IncidentKind, NoData, PeriodStats, Report};
pub use rhythm::{RhythmKind, RhythmSummary};
pub use spec::{Grade, Grades, GradesError, StatusSet, format_duration};

/// Runs of more consecutive periods than this without a probe request are one row
/// ([`PeriodStats::periods`] says how many), so that a report is as long as its data,
/// not as the span between its first and last line.
pub const MAX_EMPTY_PERIODS: u64 = 24;

#[cfg(test)]
use compute::COMPRESS_SUBS;

#[cfg(test)]
mod tests;
