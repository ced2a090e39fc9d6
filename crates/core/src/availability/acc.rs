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
/// Probes sorted at a time before they are merged into the sorted prefix.
const RUN: usize = 1 << 16;

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
    /// `probes[..sorted]` is sorted (runs are sorted and merged as they fill).
    sorted: usize,
    /// The input is far from time order: sort once in `prepare` instead.
    unordered: bool,
    merge_buf: Vec<u64>,
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
            if self.probes.len() - self.sorted >= RUN {
                self.merge_run();
            }
        }
    }

    /// Sorts the probes pushed since the last run (in cache) and merges them into the
    /// sorted prefix. Rows come almost in time order (arrival = completion − request
    /// time jitters them locally), so a run overlaps only the prefix's tail; when it
    /// overlaps more, the input is in no time order and `prepare` sorts once instead.
    fn merge_run(&mut self) {
        if self.unordered {
            return;
        }
        let start = self.sorted;
        self.probes[start..].sort_unstable();
        let first = self.probes[start];
        let from = self.probes[..start].partition_point(|&p| p <= first);
        let overlap = start - from;
        if overlap > 0 {
            if overlap > 4 * RUN {
                self.unordered = true;
                return;
            }
            let buf = &mut self.merge_buf;
            buf.clear();
            buf.extend_from_slice(&self.probes[from..]);
            let (a, b) = buf.split_at(overlap);
            let (mut i, mut j, mut k) = (0, 0, from);
            while i < a.len() && j < b.len() {
                if a[i] <= b[j] {
                    self.probes[k] = a[i];
                    i += 1;
                } else {
                    self.probes[k] = b[j];
                    j += 1;
                }
                k += 1;
            }
            let rest = if i < a.len() { &a[i..] } else { &b[j..] };
            self.probes[k..].copy_from_slice(rest);
        }
        self.sorted = self.probes.len();
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
        if self.sorted < self.probes.len() {
            self.merge_run();
        }
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
        if self.unordered {
            probes.sort_unstable();
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

#[cfg(test)]
mod run_tests {
    use super::*;

    /// The probes `prepare` hands on are exactly the pushed ones, sorted, whatever the
    /// order they came in: locally jittered, in two interleaved files, or backwards.
    #[test]
    fn probes_come_out_sorted_in_any_input_order() {
        let n = 5 * RUN + 123;
        let mut seed = 7u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let jittered: Vec<i64> = (0..n as i64)
            .map(|i| 1_700_000_000_000 + i * 10 - (next() % 5_000) as i64)
            .collect();
        let two_files: Vec<i64> = (0..n as i64)
            .map(|i| 1_700_000_000_000 + (i % 2) * 1_000_000 + i)
            .collect();
        let backwards: Vec<i64> = (0..n as i64).rev().map(|i| 1_700_000_000_000 + i).collect();
        for ts in [jittered, two_files, backwards] {
            let mut acc = Accumulator::new(None, None);
            for (i, &t) in ts.iter().enumerate() {
                acc.push(t, 200 + (i % 7) as u16, i % 3 != 0);
            }
            let p = acc.prepare(&Config::new(None));
            let mut want: Vec<u64> = ts
                .iter()
                .enumerate()
                .filter(|(i, _)| i % 3 != 0)
                .map(|(i, &t)| ((t + BIAS) as u64) << STATUS_BITS | (200 + (i % 7) as u64))
                .collect();
            want.sort_unstable();
            assert_eq!(p.probes, want);
        }
    }
}
