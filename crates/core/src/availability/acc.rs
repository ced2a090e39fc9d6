//! The availability accumulator: rows in any order ([`Accumulator::push`]), packed
//! compactly, then sorted and measured ([`Accumulator::prepare`]) into a [`Prepared`]
//! with the cadence at which probes are expected. The probes are held in bounded
//! memory (`probes.rs`); what else is kept grows with the minutes holding a line.

use std::collections::BTreeMap;
use std::io;

use serde::Serialize;

use super::config::Config;
use super::probes::{
    BIAS, Budget, DEFAULT_MEAN_BELOW, RUN, STATUS_BITS, STATUS_MASK, Sorted, Sorter, unpack,
};

/// Minute entries held before they are sorted and merged (then again at twice as
/// many), so that lines of interleaved files do not keep one entry each.
const PRESENCE_RUN: usize = 1 << 16;

/// Log lines seen in one minute.
#[derive(Clone, Copy, Debug)]
pub(super) struct Presence {
    pub(super) min: i64,
    pub(super) max: i64,
}

/// Lines seen and probes taken from some rows, before an [`Accumulator`] takes them
/// ([`Accumulator::add_lines`]): one batch's, worked out on the thread that decoded it
/// ([`Lines::push`] per row, then [`Lines::seal`]), so that the caller only merges.
/// Adding a batch's `Lines` gives the accumulator exactly what pushing its rows would.
#[derive(Clone, Debug, Default)]
pub struct Lines {
    since: Option<i64>,
    until: Option<i64>,
    /// Packed probes (sorted once sealed).
    probes: Vec<u64>,
    /// One entry per run of lines in the same minute.
    presence: Vec<(i64, Presence)>,
    cur_minute: i64,
    cur: Option<Presence>,
    lines: u64,
    outside: u64,
}

impl Lines {
    /// Empty, keeping rows with `since <= ts < until` (UTC ms) when given.
    pub fn new(since_ms: Option<i64>, until_ms: Option<i64>) -> Lines {
        Lines {
            since: since_ms,
            until: until_ms,
            ..Lines::default()
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

    /// Closes the open minute and sorts the probes: ready for
    /// [`Accumulator::add_lines`].
    pub fn seal(&mut self) {
        self.flush();
        sort_nearly_sorted(&mut self.probes);
    }

    /// Empties it, keeping its room.
    fn clear(&mut self) {
        self.probes.clear();
        self.presence.clear();
        self.cur = None;
        self.lines = 0;
        self.outside = 0;
    }
}

/// Sorts `v`, which is usually in order but for values a few places out (a log's rows
/// in time order, those of one second in any status order; request times jittering
/// arrivals): by insertion while that moves few values, else by a full sort.
fn sort_nearly_sorted(v: &mut [u64]) {
    let mut moves = 0usize;
    let limit = v.len() / 4 + 64;
    for i in 1..v.len() {
        let x = v[i];
        if x >= v[i - 1] {
            continue;
        }
        let mut j = i;
        while j > 0 && v[j - 1] > x {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
        moves += i - j;
        if moves > limit {
            v.sort_unstable();
            return;
        }
    }
}

/// Collects rows (in any order) for an availability report: one at a time
/// ([`Accumulator::push`]) or a batch's [`Lines`] at a time.
#[derive(Debug, Default)]
pub struct Accumulator {
    since: Option<i64>,
    until: Option<i64>,
    probes: Sorter,
    /// The rows pushed one at a time, until a run of probes or minutes is full.
    open: Lines,
    /// One entry per run of lines in the same minute (merged as it grows, and in
    /// `prepare`).
    presence: Vec<(i64, Presence)>,
    /// `presence` is compacted again at this length.
    presence_limit: usize,
    lines: u64,
    outside: u64,
}

impl Accumulator {
    /// An accumulator keeping rows with `since <= ts < until` (UTC ms) when given.
    pub fn new(since_ms: Option<i64>, until_ms: Option<i64>) -> Accumulator {
        Accumulator::with_budget(since_ms, until_ms, Budget::default())
    }

    /// As [`Accumulator::new`], with the probes' memory budget given.
    pub(super) fn with_budget(
        since_ms: Option<i64>,
        until_ms: Option<i64>,
        budget: Budget,
    ) -> Accumulator {
        Accumulator {
            since: since_ms,
            until: until_ms,
            probes: Sorter::new(budget),
            open: Lines::new(since_ms, until_ms),
            presence_limit: PRESENCE_RUN,
            ..Accumulator::default()
        }
    }

    /// Tells the accumulator the `--min-gap` the report will use (`None`: the default
    /// gap), before any row: the mean interval between probes is then counted as the
    /// probes are sorted, not in a pass of its own.
    pub fn with_min_gap(mut self, min_gap_ms: Option<i64>) -> Accumulator {
        self.probes
            .set_mean_below(min_gap_ms.unwrap_or(DEFAULT_MEAN_BELOW));
        self
    }

    /// An empty [`Lines`] for this accumulator's period.
    pub fn lines_for_batch(&self) -> Lines {
        Lines::new(self.since, self.until)
    }

    /// Adds one log line: its arrival (UTC ms), status, and whether it is a probe
    /// (matches the probe, or is a dynamic request when there is no probe).
    #[inline]
    pub fn push(&mut self, ts_ms: i64, status: u16, probe: bool) {
        self.open.push(ts_ms, status, probe);
        if self.open.probes.len() >= RUN || self.open.presence.len() >= PRESENCE_RUN {
            self.take_open();
        }
    }

    /// Adds the lines of a batch, sealed ([`Lines::seal`]).
    pub fn add_lines(&mut self, mut l: Lines) {
        l.flush();
        debug_assert!(l.probes.is_sorted());
        self.take(&mut l);
    }

    fn take_open(&mut self) {
        let mut open = std::mem::take(&mut self.open);
        open.seal();
        self.take(&mut open);
        self.open = open;
    }

    /// Takes sealed `l`'s lines, leaving it empty.
    fn take(&mut self, l: &mut Lines) {
        self.probes.push_sorted(&l.probes);
        self.presence.append(&mut l.presence);
        if self.presence.len() >= self.presence_limit {
            compact(&mut self.presence);
            self.presence_limit = (2 * self.presence.len()).max(PRESENCE_RUN);
        }
        self.lines += l.lines;
        self.outside += l.outside;
        l.clear();
    }

    /// Lines kept so far.
    pub fn lines(&self) -> u64 {
        self.lines + self.open.lines
    }

    /// Counts `n` lines outside `since`/`until` that were never pushed (a dataset
    /// read skips them without decoding).
    pub fn add_outside(&mut self, n: u64) {
        self.outside += n;
    }

    /// Lines outside `since`/`until` (or with absurd timestamps), ignored.
    pub fn outside(&self) -> u64 {
        self.outside + self.open.outside
    }

    /// Sorts what was collected, estimates the cadence and fixes the span. Fails if
    /// the probes' temporary file could not be written or read.
    pub fn prepare(mut self, cfg: &Config) -> io::Result<Prepared> {
        self.take_open();
        let mut presence = self.presence;
        compact(&mut presence);
        let probes = self.probes.finish()?;
        let default_gap = DEFAULT_MEAN_BELOW;
        let cadence = match cfg.expect_every_ms {
            Some(ms) => Some(Cadence {
                ms: ms.max(1),
                source: CadenceSource::Given,
            }),
            None if cfg.probe_mode() => median_interval(&probes)?.map(|ms| Cadence {
                ms,
                source: CadenceSource::Median,
            }),
            None => {
                mean_interval(&probes, cfg.min_gap_ms.unwrap_or(default_gap))?.map(|ms| Cadence {
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
        Ok(Prepared {
            probes,
            presence,
            cadence,
            gap_ms,
            span,
            lines: self.lines,
            outside: self.outside,
        })
    }
}

/// Sorts the minute entries and merges those of one minute.
fn compact(presence: &mut Vec<(i64, Presence)>) {
    presence.sort_by_key(|(m, _)| *m);
    presence.dedup_by(|(m, p), (lm, q)| {
        if m == lm {
            q.min = q.min.min(p.min);
            q.max = q.max.max(p.max);
            true
        } else {
            false
        }
    });
}

/// The intervals between consecutive probes, in one pass.
fn intervals(probes: &Sorted, mut each: impl FnMut(i64)) -> io::Result<()> {
    let mut it = probes.iter();
    if let Some(first) = it.next() {
        let mut prev = unpack(first).0;
        for p in it.by_ref() {
            let ts = unpack(p).0;
            each(ts - prev);
            prev = ts;
        }
    }
    it.error().map_or(Ok(()), Err)
}

/// Median of the positive intervals between consecutive probes (counted per distinct
/// interval: as many entries as there are distinct intervals, not probes).
fn median_interval(probes: &Sorted) -> io::Result<Option<i64>> {
    let mut counts: BTreeMap<i64, u64> = BTreeMap::new();
    let mut n = 0u64;
    intervals(probes, |d| {
        if d > 0 {
            *counts.entry(d).or_insert(0) += 1;
            n += 1;
        }
    })?;
    // The element at index n / 2 of the sorted intervals.
    let mut rank = n / 2;
    for (d, c) in counts {
        if rank < c {
            return Ok(Some(d));
        }
        rank -= c;
    }
    Ok(None)
}

/// Mean of the intervals shorter than `gap` between consecutive probes (the request
/// rate while traffic flows): from the sums the sorting counted when it counted them
/// below `gap`, else in a pass.
fn mean_interval(probes: &Sorted, gap: i64) -> io::Result<Option<i64>> {
    let (sum, n) = match probes.steps_below(gap) {
        Some(counted) => counted,
        None => {
            let (mut sum, mut n) = (0u128, 0u64);
            intervals(probes, |d| {
                if d < gap {
                    sum += d as u128;
                    n += 1;
                }
            })?;
            (sum, n)
        }
    };
    if n == 0 || sum == 0 {
        return Ok(None);
    }
    let (sum, n) = (sum as i128, i128::from(n));
    Ok(Some(((sum + n / 2) / n).max(1) as i64))
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
    pub(super) probes: Sorted,
    pub(super) presence: Vec<(i64, Presence)>,
    pub(super) cadence: Option<Cadence>,
    pub(super) gap_ms: i64,
    pub(super) span: Option<(i64, i64)>,
    pub(super) lines: u64,
    pub(super) outside: u64,
}

#[cfg(test)]
mod budget_tests {
    use super::super::calendar::By;
    use super::super::calendar::fixed_offset_periods;
    use super::super::probes::xorshift;
    use super::*;

    /// A report is the same whether the probes stay in memory or go to a temporary
    /// file, and whatever the order the rows come in: in time order, in two
    /// interleaved files, or backwards.
    #[test]
    fn report_is_the_same_in_any_order_and_budget() {
        let n = 300_000i64;
        let mut next = xorshift(11);
        let t0 = 1_700_000_000_000i64;
        // A request every 20 s or so with local jitter, a 6-hour outage, 5xx bursts.
        let rows: Vec<(i64, u16, bool)> = (0..n)
            .filter(|i| !(200_000..201_080).contains(i))
            .map(|i| {
                let ts = t0 + i * 20_000 - (next() % 3_000) as i64;
                let status = if i % 997 < 9 { 503 } else { 200 };
                (ts, status, i % 5 != 0)
            })
            .collect();
        let mut two_files = rows.clone();
        let half = two_files.len() / 2;
        let (a, b) = two_files.split_at(half);
        two_files = a.iter().zip(b).flat_map(|(x, y)| [*x, *y]).collect();
        let mut backwards = rows.clone();
        backwards.reverse();
        let mut cfg = Config::new(None);
        cfg.by = By::Day;
        let report = |rows: &[(i64, u16, bool)], mem_bytes: usize| {
            let mut acc = Accumulator::with_budget(
                None,
                None,
                Budget {
                    mem_bytes,
                    ..Budget::default()
                },
            );
            for &(t, s, p) in rows {
                acc.push(t, s, p);
            }
            let prep = acc.prepare(&cfg).expect("prepared");
            let (s, e) = prep.span().expect("span");
            let periods = fixed_offset_periods(cfg.by, 0, s, e);
            serde_json::to_string(&prep.compute(&periods, &cfg).expect("computes")).expect("json")
        };
        let want = report(&rows, super::super::probes::MEM_BYTES);
        assert!(want.contains("\"incidents\":[{"), "{want}");
        for input in [&rows, &two_files, &backwards] {
            for mem_bytes in [super::super::probes::MEM_BYTES, 1 << 10] {
                assert!(report(input, mem_bytes) == want, "mem_bytes {mem_bytes}");
            }
        }
    }

    /// Nearly sorted values, and values in no order at all, come out sorted.
    #[test]
    fn nearly_sorted_values_are_sorted() {
        let mut next = xorshift(9);
        for n in [0usize, 1, 2, 100, 5_000] {
            let in_order: Vec<u64> = (0..n as u64).map(|i| i * 8 + next() % 24).collect();
            let random: Vec<u64> = (0..n).map(|_| next() % 1000).collect();
            let mut backwards: Vec<u64> = (0..n as u64).collect();
            backwards.reverse();
            for mut v in [in_order, random, backwards] {
                let mut want = v.clone();
                want.sort_unstable();
                sort_nearly_sorted(&mut v);
                assert_eq!(v, want);
            }
        }
    }

    /// The mean interval counted as the probes are sorted is the one a pass over the
    /// sorted probes finds: for rows in order, interleaved (sequences merged at the
    /// end), in memory or in a file, with the default gap and a given one.
    #[test]
    fn the_mean_interval_counted_while_sorting_is_the_one_a_pass_finds() {
        let mut next = xorshift(3);
        let t0 = 1_700_000_000_000i64;
        let mut t = t0;
        let rows: Vec<(i64, u16, bool)> = (0..200_000)
            .map(|i| {
                // Mostly seconds apart, now and then a silence of up to an hour.
                t += if i % 997 == 0 {
                    (next() % 3_600_000) as i64
                } else {
                    (next() % 4_000) as i64
                };
                (t, 200, !next().is_multiple_of(3))
            })
            .collect();
        let mut interleaved = rows.clone();
        let (a, b) = interleaved.split_at(rows.len() / 2);
        interleaved = b.iter().zip(a).flat_map(|(x, y)| [*x, *y]).collect();
        for input in [&rows, &interleaved] {
            for min_gap in [None, Some(10_000), Some(20 * 60_000)] {
                for mem_bytes in [super::super::probes::MEM_BYTES, 1 << 12] {
                    let mut cfg = Config::new(None);
                    cfg.min_gap_ms = min_gap;
                    let cadence = |told: bool| {
                        let budget = Budget {
                            mem_bytes,
                            ..Budget::default()
                        };
                        let mut acc = Accumulator::with_budget(None, None, budget);
                        // Told the gap: counted while sorting; not told (and the gap not
                        // the default): a pass.
                        if told {
                            acc = acc.with_min_gap(min_gap);
                        } else {
                            acc = acc.with_min_gap(Some(1));
                        }
                        for &(t, s, p) in input.iter() {
                            acc.push(t, s, p);
                        }
                        let prep = acc.prepare(&cfg).expect("prepared");
                        let gap = min_gap.unwrap_or(DEFAULT_MEAN_BELOW);
                        assert_eq!(prep.probes.steps_below(gap).is_some(), told);
                        prep.cadence.expect("a cadence").ms
                    };
                    let (counted, passed) = (cadence(true), cadence(false));
                    assert_eq!(counted, passed, "{min_gap:?} {mem_bytes}");
                    assert!(counted > 1, "{counted}");
                }
            }
        }
    }

    /// A batch's [`Lines`] (pushed, sealed, added, as the decoding threads hand them
    /// over) give exactly the report of the same rows pushed one by one: whatever the
    /// batches' sizes, the order of the rows, and with rows outside the period.
    #[test]
    fn batches_of_lines_give_the_report_of_rows_pushed_one_by_one() {
        let mut next = xorshift(5);
        let t0 = 1_700_000_000_000i64;
        let rows: Vec<(i64, u16, bool)> = (0..120_000i64)
            .filter(|i| !(70_000..71_500).contains(i))
            .map(|i| {
                let ts = t0 + i * 15_000 - (next() % 40_000) as i64;
                let status = if i % 541 < 7 { 502 } else { 200 };
                (ts, status, !next().is_multiple_of(4))
            })
            .collect();
        let mut interleaved = rows.clone();
        let (a, b) = interleaved.split_at(rows.len() / 2);
        interleaved = b.iter().zip(a).flat_map(|(x, y)| [*x, *y]).collect();
        let cfg = Config::new(None);
        let finish = |acc: Accumulator| {
            let prep = acc.prepare(&cfg).expect("prepared");
            let (s, e) = prep.span().expect("span");
            let periods = fixed_offset_periods(By::Day, 0, s, e);
            serde_json::to_string(&prep.compute(&periods, &cfg).expect("computes")).expect("json")
        };
        let periods = [
            (None, None),
            (Some(t0 + 200_000_000), Some(t0 + 1_500_000_000)),
        ];
        for input in [&rows, &interleaved] {
            for (since, until) in periods {
                let budget = || Budget {
                    mem_bytes: 1 << 12,
                    ..Budget::default()
                };
                let mut one = Accumulator::with_budget(since, until, budget());
                for &(t, s, p) in input.iter() {
                    one.push(t, s, p);
                }
                let want = finish(one);
                for sizes in [[1usize, 1, 1], [7, 65_536, 3], [30_000, 1, 70_000]] {
                    let mut acc = Accumulator::with_budget(since, until, budget());
                    let mut at = 0;
                    for (k, &n) in sizes.iter().cycle().enumerate() {
                        if at == input.len() {
                            break;
                        }
                        let end = (at + n).min(input.len());
                        // Now and then a row pushed one by one between batches.
                        if k % 5 == 4 {
                            let (t, s, p) = input[at];
                            acc.push(t, s, p);
                            at += 1;
                            continue;
                        }
                        let mut lines = acc.lines_for_batch();
                        for &(t, s, p) in &input[at..end] {
                            lines.push(t, s, p);
                        }
                        lines.seal();
                        acc.add_lines(lines);
                        at = end;
                    }
                    let got = finish(acc);
                    assert!(
                        got == want,
                        "sizes {sizes:?} since {since:?}\n{got}\n{want}"
                    );
                }
                if since.is_some() {
                    assert!(!want.contains("\"outside\":0"), "{want}");
                }
            }
        }
    }
}
