//! The availability accumulator: rows in any order ([`Accumulator::push`]), packed
//! compactly, then sorted and measured ([`Accumulator::prepare`]) into a [`Prepared`]
//! with the cadence at which probes are expected.

use serde::Serialize;

use super::config::Config;

/// Offset added to timestamps before packing (covers ±35,000 years in ms).
pub(super) const BIAS: i64 = 1 << 50;
/// Bits of a packed probe that hold the status.
pub(super) const STATUS_BITS: u32 = 12;
pub(super) const STATUS_MASK: u64 = (1 << STATUS_BITS) - 1;

/// Log lines seen in one minute.
#[derive(Clone, Copy, Debug)]
pub(super) struct Presence {
    pub(super) min: i64,
    pub(super) max: i64,
}

/// Collects rows (in any order) for an availability report.
#[derive(Debug, Default)]
pub struct Accumulator {
    since: Option<i64>,
    until: Option<i64>,
    probes: Vec<u64>,
    /// One entry per run of lines in the same minute (merged in `prepare`).
    presence: Vec<(i64, Presence)>,
    cur_minute: i64,
    cur: Option<Presence>,
    lines: u64,
    outside: u64,
}

impl Accumulator {
    /// An accumulator keeping rows with `since <= ts < until` (UTC ms) when given.
    pub fn new(since_ms: Option<i64>, until_ms: Option<i64>) -> Accumulator {
        Accumulator {
            since: since_ms,
            until: until_ms,
            ..Accumulator::default()
        }
    }

    /// Adds one log line: its arrival (UTC ms), status, and whether it is a probe
    /// (matches the probe, or is a dynamic request when there is no probe).
    #[inline]
    pub fn push(&mut self, ts_ms: i64, status: u16, probe: bool) {
        if self.since.is_some_and(|s| ts_ms < s)
            || self.until.is_some_and(|u| ts_ms >= u)
            || !(-BIAS..BIAS).contains(&ts_ms)
        {
            self.outside += 1;
            return;
        }
        self.lines += 1;
        // Same minute as the previous line (the common case): no division.
        let base = self.cur_minute.wrapping_mul(60_000);
        match &mut self.cur {
            Some(p) if ts_ms >= base && ts_ms - base < 60_000 => {
                p.min = p.min.min(ts_ms);
                p.max = p.max.max(ts_ms);
            }
            _ => {
                self.flush();
                self.cur_minute = ts_ms.div_euclid(60_000);
                self.cur = Some(Presence {
                    min: ts_ms,
                    max: ts_ms,
                });
            }
        }
        if probe {
            self.probes
                .push(((ts_ms + BIAS) as u64) << STATUS_BITS | u64::from(status).min(STATUS_MASK));
        }
    }

    fn flush(&mut self) {
        if let Some(p) = self.cur.take() {
            self.presence.push((self.cur_minute, p));
        }
    }

    /// Lines kept so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Counts `n` lines outside `since`/`until` that were never pushed (a dataset
    /// read skips them without decoding).
    pub fn add_outside(&mut self, n: u64) {
        self.outside += n;
    }

    /// Lines outside `since`/`until` (or with absurd timestamps), ignored.
    pub fn outside(&self) -> u64 {
        self.outside
    }

    /// Sorts what was collected, estimates the cadence and fixes the span.
    pub fn prepare(mut self, cfg: &Config) -> Prepared {
        self.flush();
        let mut runs = self.presence;
        runs.sort_by_key(|(m, _)| *m);
        let mut presence: Vec<(i64, Presence)> = Vec::with_capacity(runs.len());
        for (m, p) in runs {
            match presence.last_mut() {
                Some((lm, q)) if *lm == m => {
                    q.min = q.min.min(p.min);
                    q.max = q.max.max(p.max);
                }
                _ => presence.push((m, p)),
            }
        }
        let mut probes = self.probes;
        // Rows come as a few runs in time order (one per file): the stable sort merges
        // runs instead of sorting from scratch (and only checks a single run).
        if !probes.is_sorted() {
            probes.sort();
        }
        let default_gap = 15 * 60_000;
        let cadence = match cfg.expect_every_ms {
            Some(ms) => Some(Cadence {
                ms: ms.max(1),
                source: CadenceSource::Given,
            }),
            None if cfg.probe_mode() => median_interval(&probes).map(|ms| Cadence {
                ms,
                source: CadenceSource::Median,
            }),
            None => {
                mean_interval(&probes, cfg.min_gap_ms.unwrap_or(default_gap)).map(|ms| Cadence {
                    ms,
                    source: CadenceSource::Mean,
                })
            }
        };
        let gap_ms = cfg.min_gap_ms.unwrap_or(if cfg.probe_mode() {
            cadence.map_or(cfg.bucket_ms, |c| cfg.bucket_ms.max(2 * c.ms))
        } else {
            default_gap
        });
        let first = presence.first().map(|(_, p)| p.min);
        let last = presence.iter().map(|(_, p)| p.max).max();
        let start = cfg.since_ms.or(first);
        let end = cfg
            .until_ms
            .or(last.map(|l| l + cadence.map_or(1, |c| c.ms)));
        let span = match (start, end) {
            (Some(s), Some(e)) if e > s => Some((s, e)),
            _ => None,
        };
        Prepared {
            probes,
            presence,
            cadence,
            gap_ms,
            span,
            lines: self.lines,
            outside: self.outside,
        }
    }
}

pub(super) fn unpack(p: u64) -> (i64, u16) {
    ((p >> STATUS_BITS) as i64 - BIAS, (p & STATUS_MASK) as u16)
}

/// Median of the positive intervals between consecutive probes.
fn median_interval(probes: &[u64]) -> Option<i64> {
    let mut iv: Vec<i64> = probes
        .windows(2)
        .map(|w| unpack(w[1]).0 - unpack(w[0]).0)
        .filter(|&d| d > 0)
        .collect();
    if iv.is_empty() {
        return None;
    }
    let mid = iv.len() / 2;
    let (_, m, _) = iv.select_nth_unstable(mid);
    Some(*m)
}

/// Mean of the intervals shorter than `gap` between consecutive probes (the request
/// rate while traffic flows).
fn mean_interval(probes: &[u64], gap: i64) -> Option<i64> {
    let (mut sum, mut n) = (0i128, 0i128);
    for w in probes.windows(2) {
        let d = unpack(w[1]).0 - unpack(w[0]).0;
        if d < gap {
            sum += d as i128;
            n += 1;
        }
    }
    if n == 0 || sum == 0 {
        return None;
    }
    Some(((sum + n / 2) / n).max(1) as i64)
}

/// How the cadence was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CadenceSource {
    /// `--expect-every`.
    Given,
    /// The median interval between probes.
    Median,
    /// The mean interval between dynamic requests (shorter than the gap threshold).
    Mean,
}

/// The interval at which probes are expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Cadence {
    /// Milliseconds.
    pub ms: i64,
    /// Where it came from.
    pub source: CadenceSource,
}

/// Sorted rows, ready to be computed over periods.
#[derive(Debug)]
pub struct Prepared {
    pub(super) probes: Vec<u64>,
    pub(super) presence: Vec<(i64, Presence)>,
    pub(super) cadence: Option<Cadence>,
    pub(super) gap_ms: i64,
    pub(super) span: Option<(i64, i64)>,
    pub(super) lines: u64,
    pub(super) outside: u64,
}
