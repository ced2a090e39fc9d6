//! What the replay report is asked for: the options that shape it (capacity, bucket
//! width, list lengths, refusal statuses, prefix lengths) and the run's context for
//! its header.

use crate::rate::Rate;

/// How the report is computed.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// Server capacity to hold the passed load against.
    pub capacity: Option<Rate>,
    /// Width of the refusals-over-time buckets, ms (aligned on the report's clock);
    /// `None`: the width [`auto_bucket`] gives the span of the rows replayed.
    pub bucket_ms: Option<i64>,
    /// Rows per top-refused list.
    pub top: usize,
    /// Statuses that mean "refused by a deployed limiter" in the log.
    pub refusal_statuses: Vec<u16>,
    /// IPv4 prefix length for the top-refused networks.
    pub v4_len: u8,
    /// IPv6 prefix length.
    pub v6_len: u8,
    /// `--workers C`: replay the admitted requests of each candidate (and all of them)
    /// through a FIFO queue of C workers and report the waits.
    pub workers: Option<usize>,
}

/// Bucket widths tried by [`auto_bucket`].
pub(super) const WIDTHS: [i64; 14] = [
    1_000,
    10_000,
    60_000,
    300_000,
    600_000,
    900_000,
    1_800_000,
    3_600_000,
    10_800_000,
    21_600_000,
    43_200_000,
    86_400_000,
    604_800_000,
    2_592_000_000,
];

/// A bucket width for `span_ms` of log: the capacity window when it gives at most 200
/// rows, else the smallest round width giving at most 48.
pub fn auto_bucket(span_ms: i64, capacity: Option<Rate>) -> i64 {
    if let Some(c) = capacity
        && span_ms / (c.window_ms() as i64) < 200
    {
        return c.window_ms() as i64;
    }
    WIDTHS
        .into_iter()
        .find(|w| span_ms / w < 48)
        .unwrap_or(WIDTHS[WIDTHS.len() - 1])
}

/// What the report header says about the run.
#[derive(Clone, Debug, Default)]
pub struct ReportContext {
    /// Where the rows came from.
    pub origin: String,
    /// The selection in words.
    pub selection: String,
    /// The time zone's name.
    pub tz: String,
    /// Records read.
    pub records: u64,
    /// Logged refusals left out.
    pub dropped_logged: u64,
    /// What marks internal requests, in words (empty: nothing).
    pub internal: String,
}
