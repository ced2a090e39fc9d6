//! [`Prepared::compute_in`]: the prepared rows measured over a [`Calendar`]'s periods —
//! the period table (long runs without a probe collapsed into one row), sub-bucket
//! sweeps for incidents, spans without data, and the notes.

use std::collections::BTreeMap;
use std::io;

use super::acc::{Cadence, Prepared};
use super::calendar::{self, Calendar, CalendarError, Period};
use super::config::{Config, Outcome};
use super::model::{Incident, IncidentKind, NoData, PeriodStats, Report};
use super::probes::{Budget, Sorted, Sorter};
use super::probes::{STATUS_MASK, unpack};
use super::rhythm::{self, Rhythm, RhythmSummary, Tally};
use super::{MAX_EMPTY_PERIODS, spec};

/// Probes in sub-buckets `idx .. idx + len`: one sub-bucket, or (`ok` = 0) the middle
/// of a run of missing probes, whose every sub-bucket is all missing.
#[derive(Clone, Copy, Debug)]
struct Sub {
    idx: i64,
    len: i64,
    ok: u64,
    bad: u64,
}

impl Sub {
    fn last(&self) -> i64 {
        self.idx + self.len - 1
    }
}

/// Sub-buckets of a run of missing probes beyond the first and the last that are kept
/// one by one (the rest are one [`Sub`]).
const KEEP_SUBS: i64 = 2;

#[cfg(test)]
thread_local! {
    /// Tests turn the middle's compression off to compare with one sub per sub-bucket.
    pub(super) static COMPRESS_SUBS: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

fn compress_subs() -> bool {
    #[cfg(test)]
    return COMPRESS_SUBS.with(|c| c.get());
    #[cfg(not(test))]
    true
}

/// Why a report could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum ComputeError {
    /// The calendar could not place or list the periods.
    #[error(transparent)]
    Calendar(#[from] CalendarError),
    /// A temporary file of sorted probes could not be written or read.
    #[error("temporary file of sorted probes: {0}")]
    Spill(#[from] io::Error),
}

/// One row of the period table being built: a period, or a collapsed run of them.
struct Row {
    period: Period,
    count: u64,
    last_label: String,
}

impl Row {
    fn one(period: Period) -> Row {
        Row {
            last_label: period.label.clone(),
            period,
            count: 1,
        }
    }
}

/// The period of `cal` containing `ts`, checked.
fn period_at(cal: &dyn Calendar, ts: i64) -> Result<Period, CalendarError> {
    let p = cal.period_at(ts)?;
    if p.start_ms <= ts && ts < p.end_ms {
        Ok(p)
    } else {
        Err(CalendarError::Inconsistent(format!(
            "period {} [{}, {}) does not contain {ts}",
            p.label, p.start_ms, p.end_ms
        )))
    }
}

/// Appends the periods in `[from, to)` (period starts; no probe request in them):
/// one by one up to [`MAX_EMPTY_PERIODS`], else as one collapsed row.
fn push_empty(
    cal: &dyn Calendar,
    rows: &mut Vec<Row>,
    from: i64,
    to: i64,
) -> Result<(), CalendarError> {
    if to < from {
        return Err(CalendarError::Inconsistent(format!(
            "periods overlap at {to}"
        )));
    }
    if to == from {
        return Ok(());
    }
    let n = cal.count_between(from, to)?;
    if n == 0 {
        return Err(CalendarError::Inconsistent(format!(
            "no period between {from} and {to}"
        )));
    }
    if n <= MAX_EMPTY_PERIODS {
        let mut c = from;
        for _ in 0..n {
            let p = period_at(cal, c)?;
            if p.start_ms != c {
                return Err(CalendarError::Inconsistent(format!(
                    "period {} does not start at {c}",
                    p.label
                )));
            }
            c = p.end_ms;
            rows.push(Row::one(p));
        }
        if c != to {
            return Err(CalendarError::Inconsistent(format!(
                "{n} periods from {from} end at {c}, not {to}"
            )));
        }
        return Ok(());
    }
    let (a, z) = (period_at(cal, from)?, period_at(cal, to - 1)?);
    if a.start_ms != from || z.end_ms != to {
        return Err(CalendarError::Inconsistent(format!(
            "periods {} and {} are not aligned",
            a.label, z.label
        )));
    }
    rows.push(Row {
        period: Period {
            label: a.label,
            start_ms: from,
            end_ms: to,
        },
        count: n,
        last_label: z.label,
    });
    Ok(())
}

#[derive(Clone, Copy, Debug)]
struct Run {
    first: i64,
    count: i64,
    /// The interval between its missing probes (the cadence; without a probe, the
    /// silence's length over the expected requests in it + 1).
    step: i64,
    /// The next probe seen (or the span's end): the outage ends there at the latest.
    until: i64,
}

fn ceil_div(a: i64, c: i64) -> i64 {
    if a <= 0 { 0 } else { (a + c - 1) / c }
}

struct Sweep<'a> {
    periods: &'a [Period],
    stats: Vec<PeriodStats>,
    c: i64,
    b: i64,
    subs: Vec<Sub>,
    runs: Vec<Run>,
}

impl Sweep<'_> {
    fn period_of(&self, ts: i64) -> Option<usize> {
        let i = self.periods.partition_point(|p| p.end_ms <= ts);
        (i < self.periods.len() && self.periods[i].start_ms <= ts).then_some(i)
    }

    fn add_sub(&mut self, idx: i64, ok: u64, bad: u64) {
        match self.subs.last_mut() {
            Some(s) if s.idx == idx && s.len == 1 => {
                s.ok += ok;
                s.bad += bad;
            }
            _ => self.subs.push(Sub {
                idx,
                len: 1,
                ok,
                bad,
            }),
        }
    }

    /// `m` missing probes expected at `first + k·c`, `k` in `0..m`, before `until`.
    fn add_run(&mut self, first: i64, m: i64, until: i64) {
        self.add_run_every(first, m, self.c, until);
    }

    /// `m` missing probes expected at `first + k·c`, `k` in `0..m`, before `until`.
    fn add_run_every(&mut self, first: i64, m: i64, c: i64, until: i64) {
        if m <= 0 || c <= 0 {
            return;
        }
        let last = first + (m - 1) * c;
        if let Some(mut i) = self.period_of(first) {
            while i < self.periods.len() && self.periods[i].start_ms <= last {
                let p = &self.periods[i];
                let lo = ceil_div(p.start_ms - first, c);
                let hi = m.min(ceil_div(p.end_ms - first, c));
                if hi > lo {
                    self.stats[i].missing += (hi - lo) as u64;
                }
                i += 1;
            }
        }
        // One sub per sub-bucket at the run's ends (they may share a sub-bucket with
        // a probe seen); the middle, with nothing but missing probes, is one sub
        // however long the silence.
        let b = self.b;
        let idx_last = last.div_euclid(b);
        let mut k = 0;
        while k < m {
            let idx = (first + k * c).div_euclid(b);
            if k > 0 && idx_last - idx > KEEP_SUBS && compress_subs() {
                // Probes k..kl lie before the last sub-bucket.
                let kl = ceil_div(idx_last * b - first, c);
                let end = (first + (kl - 1) * c).div_euclid(b);
                self.subs.push(Sub {
                    idx,
                    len: end - idx + 1,
                    ok: 0,
                    bad: (kl - k) as u64,
                });
                k = kl;
                continue;
            }
            let hi = m.min(ceil_div((idx + 1) * b - first, c));
            self.add_sub(idx, 0, (hi - k) as u64);
            k = hi;
        }
        self.runs.push(Run {
            first,
            count: m,
            step: c,
            until,
        });
    }
}

impl Prepared {
    /// The analysed span `[start, end)` in UTC ms: `since` or the first line, to
    /// `until` or the last line plus one cadence. `None` without lines or range.
    pub fn span(&self) -> Option<(i64, i64)> {
        self.span
    }

    /// The cadence that will be used.
    pub fn cadence(&self) -> Option<Cadence> {
        self.cadence
    }

    /// The table's rows over `[s, e)`: the first and the last period, every period
    /// holding a probe request, and the periods between them (see [`push_empty`]).
    fn rows(&self, cal: &dyn Calendar, s: i64, e: i64) -> Result<Vec<Row>, ComputeError> {
        let first = period_at(cal, s)?;
        let mut cursor = first.end_ms;
        let mut rows = vec![Row::one(first)];
        let mut it = self.probes.iter();
        while cursor < e {
            // The next probe at or after the cursor.
            let Some(packed) = it
                .by_ref()
                .find(|&p| unpack(p).0 >= cursor)
                .filter(|&p| unpack(p).0 < e)
            else {
                break;
            };
            let p = period_at(cal, unpack(packed).0)?;
            push_empty(cal, &mut rows, cursor, p.start_ms)?;
            cursor = p.end_ms;
            rows.push(Row::one(p));
        }
        if let Some(err) = it.error() {
            return Err(err.into());
        }
        if cursor < e {
            let last = period_at(cal, e - 1)?;
            push_empty(cal, &mut rows, cursor, last.start_ms)?;
            rows.push(Row::one(last));
        }
        Ok(rows)
    }

    /// Computes the report over `periods`, which must be contiguous and cover
    /// [`Prepared::span`].
    pub fn compute(&self, periods: &[Period], cfg: &Config) -> Result<Report, ComputeError> {
        if let Some((s, e)) = self.span {
            calendar::check_cover(periods, s, e)?;
        }
        self.compute_in(&calendar::Listed(periods), cfg)
    }

    /// Computes the report over the periods of `cal`. Only the periods holding probe
    /// requests, the first and the last are asked for one by one; a run of more than
    /// [`MAX_EMPTY_PERIODS`] periods between them is counted and becomes one row.
    pub fn compute_in(&self, cal: &dyn Calendar, cfg: &Config) -> Result<Report, ComputeError> {
        let mut notes = Vec::new();
        let mut report = Report {
            config: cfg.clone(),
            cadence: self.cadence,
            gap_ms: self.gap_ms,
            span: self.span,
            lines: self.lines,
            outside: self.outside,
            probe_requests: 0,
            periods: Vec::new(),
            total: PeriodStats {
                label: "total".into(),
                last_label: "total".into(),
                ..PeriodStats::default()
            },
            incidents: Vec::new(),
            no_data: Vec::new(),
            notes: Vec::new(),
            rhythm: None,
        };
        let Some((s, e)) = self.span else {
            report
                .notes
                .push("no log lines in the selected range".into());
            return Ok(report);
        };
        // The period table and the site's rhythm are two passes over the probes: one
        // on each core. (Without a probe or --expect-every, silences are judged by the
        // site's own rhythm; with too few days to learn it, by the mean interval.)
        let probe_mode = cfg.probe_mode();
        let learn = !probe_mode && cfg.expect_every_ms.is_none();
        let (rows, learned) = std::thread::scope(|scope| {
            let learner = learn.then(|| scope.spawn(|| Rhythm::learn(&self.probes, s, e)));
            let rows = self.rows(cal, s, e);
            let learned =
                learner.map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            (rows, learned)
        });
        let rows = rows?;
        let (rhythm, few_days) = match learned.transpose()? {
            None => (None, None),
            Some(Ok(r)) => (Some(r), None),
            Some(Err(n)) => (None, Some(n)),
        };
        let collapsed = rows.iter().filter(|r| r.count > 1).count();
        let mut counts = Vec::with_capacity(rows.len());
        let periods: Vec<Period> = rows
            .into_iter()
            .map(|r| {
                counts.push((r.count, r.last_label));
                r.period
            })
            .collect();
        let mut sw = Sweep {
            periods: &periods,
            stats: periods
                .iter()
                .zip(&counts)
                .map(|(p, (n, last))| PeriodStats {
                    label: p.label.clone(),
                    periods: *n,
                    last_label: last.clone(),
                    start_ms: p.start_ms,
                    end_ms: p.end_ms,
                    hours: (p.end_ms.min(e) - p.start_ms.max(s)) as f64 / 3_600_000.0,
                    partial: p.start_ms < s || p.end_ms > e,
                    ..PeriodStats::default()
                })
                .collect(),
            c: self.cadence.map_or(0, |c| c.ms),
            b: cfg.bucket_ms.max(1),
            subs: Vec::new(),
            runs: Vec::new(),
        };
        let c = sw.c;
        let counts = |d: i64| match cfg.min_gap_ms {
            None if probe_mode => true,
            _ => d >= self.gap_ms,
        };
        // Failed probes, in time order, for the incidents (packed as the probes).
        let mut failures = Sorter::new(Budget::default());
        let mut prev: Option<i64> = None;
        let mut pi = 0usize;
        let mut seen = 0u64;
        // Outcome of every packable status, looked up instead of matched per probe.
        let outcomes: Vec<Outcome> = (0..=STATUS_MASK as u16).map(|st| cfg.outcome(st)).collect();
        let (mut bucket_start, mut bucket_idx) = (i64::MIN, 0i64);
        let mut tally = Tally::default();
        let judge = |sw: &mut Sweep, tally: &mut Tally, rh: &Rhythm, a: i64, b: i64| {
            let m = rhythm::judge(rh, tally, a, b).min(b - a - 1);
            if m > 0 {
                let step = ((b - a) / (m + 1)).max(1);
                sw.add_run_every(a + step, m, step, b);
            }
        };
        let mut it = self.probes.iter();
        for packed in it.by_ref() {
            let (ts, status) = unpack(packed);
            if ts < s || ts >= e {
                continue;
            }
            seen += 1;
            if let Some(rh) = &rhythm {
                let from = match prev {
                    None => Some(s),
                    Some(pt) if ts > pt => Some(pt),
                    _ => None,
                };
                if let Some(a) = from
                    && counts(ts - a)
                {
                    judge(&mut sw, &mut tally, rh, a, ts);
                }
            } else if c > 0 {
                match prev {
                    None if counts(ts - s) => sw.add_run(ts - (ts - s) / c * c, (ts - s) / c, ts),
                    Some(pt) if ts > pt && counts(ts - pt) => {
                        sw.add_run(pt + c, (ts - pt + c / 2) / c - 1, ts)
                    }
                    _ => {}
                }
            }
            prev = Some(ts);
            while pi < periods.len() && periods[pi].end_ms <= ts {
                pi += 1;
            }
            if ts < bucket_start || ts >= bucket_start + sw.b {
                bucket_idx = ts.div_euclid(sw.b);
                bucket_start = bucket_idx * sw.b;
            }
            let idx = bucket_idx;
            let outcome = outcomes[status as usize];
            let st = &mut sw.stats[pi];
            st.requests += 1;
            let (ok, bad) = match outcome {
                Outcome::Ok => {
                    st.succeeded += 1;
                    (1, 0)
                }
                Outcome::PolicyOk => {
                    st.succeeded += 1;
                    st.policy += 1;
                    (1, 0)
                }
                Outcome::Fail | Outcome::PolicyFail => {
                    st.failed += 1;
                    st.policy += u64::from(outcome == Outcome::PolicyFail);
                    *st.failures_by_status.entry(status).or_insert(0) += 1;
                    failures.push(packed);
                    (0, 1)
                }
                Outcome::Policy => {
                    st.policy += 1;
                    (0, 0)
                }
            };
            if ok + bad > 0 {
                sw.add_sub(idx, ok, bad);
            }
        }
        if let Some(rh) = &rhythm {
            if let Some(pt) = prev
                && counts(e - pt)
            {
                judge(&mut sw, &mut tally, rh, pt, e);
            }
        } else if c > 0 {
            match prev {
                Some(pt) if counts(e - pt) => sw.add_run(pt + c, (e - pt - 1) / c, e),
                None => sw.add_run(s, (e - s + c - 1) / c, e),
                _ => {}
            }
        }
        if let Some(err) = it.error() {
            return Err(err.into());
        }
        report.probe_requests = seen;
        let failures = failures.finish()?;

        // Spans with no log lines at all.
        let mut no_data = Vec::new();
        let mut last_seen = None::<i64>;
        for (_, p) in &self.presence {
            if p.min < s || p.min >= e {
                continue;
            }
            let from = last_seen.unwrap_or(s);
            let edge = last_seen.is_none();
            if p.min - from >= self.gap_ms && (!edge || cfg.since_ms.is_some()) {
                no_data.push(NoData {
                    from_ms: from,
                    to_ms: p.min,
                });
            }
            last_seen = Some(last_seen.map_or(p.max, |l| l.max(p.max)));
        }
        match last_seen {
            Some(l) if cfg.until_ms.is_some() && e - l >= self.gap_ms => no_data.push(NoData {
                from_ms: l,
                to_ms: e,
            }),
            None => no_data.push(NoData {
                from_ms: s,
                to_ms: e,
            }),
            _ => {}
        }
        // Both in time order, the spans disjoint: one sweep.
        let mut j = 0;
        for (p, st) in periods.iter().zip(sw.stats.iter_mut()) {
            while j < no_data.len() && no_data[j].to_ms <= p.start_ms {
                j += 1;
            }
            st.no_data_hours = no_data[j..]
                .iter()
                .take_while(|g| g.from_ms < p.end_ms)
                .map(|g| (g.to_ms.min(p.end_ms) - g.from_ms.max(p.start_ms)).max(0))
                .sum::<i64>() as f64
                / 3_600_000.0;
        }

        let incidents = incidents(&sw.subs, &sw.runs, &failures, &no_data, c, cfg)?;

        let mut stats = sw.stats;
        let total = &mut report.total;
        total.start_ms = s;
        total.end_ms = e;
        for st in &mut stats {
            st.finish(&cfg.grades);
            total.periods += st.periods;
            total.hours += st.hours;
            total.requests += st.requests;
            total.succeeded += st.succeeded;
            total.failed += st.failed;
            total.policy += st.policy;
            total.missing += st.missing;
            total.no_data_hours += st.no_data_hours;
            for (k, v) in &st.failures_by_status {
                *total.failures_by_status.entry(*k).or_insert(0) += v;
            }
        }
        total.finish(&cfg.grades);
        let (succeeded, failed) = (total.succeeded, total.failed);
        report.rhythm = rhythm
            .as_ref()
            .map(|r| RhythmSummary::new(r, &tally, succeeded, failed));
        if let Some(n) = few_days {
            notes.push(format!(
                "only {n} day{} with dynamic requests: too few ({} needed) to learn the site's rhythm, so every silence of {} or more counts as downtime, one request per mean interval — low confidence; give --probe, or --expect-every",
                if n == 1 { "" } else { "s" },
                rhythm::MIN_DAYS_DAY,
                spec::format_interval(self.gap_ms)
            ));
        }

        if seen == 0 {
            notes.push(if probe_mode {
                "no probe requests matched in the span".to_string()
            } else {
                "no dynamic requests in the span".to_string()
            });
        }
        if collapsed > 0 {
            notes.push(format!(
                "{collapsed} run{} of more than {MAX_EMPTY_PERIODS} consecutive {}s without a probe request {} one row each, counted like any period (`periods` in CSV and JSON says how many)",
                if collapsed == 1 { "" } else { "s" },
                cfg.by.name(),
                if collapsed == 1 { "is" } else { "are" },
            ));
        }
        if self.cadence.is_none() {
            notes.push(
                "the cadence could not be estimated (too few requests): missing probes are not counted; give --expect-every"
                    .into(),
            );
        }
        if let Some(cad) = self.cadence
            && probe_mode
            && cad.ms > cfg.bucket_ms
        {
            notes.push(format!(
                "probes come every {} but sub-buckets are {}: incidents are coarse",
                spec::format_interval(cad.ms),
                spec::format_interval(cfg.bucket_ms)
            ));
        }
        report.periods = stats;
        report.incidents = incidents;
        report.no_data = no_data;
        report.notes = notes;
        Ok(report)
    }
}

fn incidents(
    subs: &[Sub],
    runs: &[Run],
    failures: &Sorted,
    no_data: &[NoData],
    c: i64,
    cfg: &Config,
) -> io::Result<Vec<Incident>> {
    let b = cfg.bucket_ms.max(1);
    let merge = cfg.merge_within_ms.max(2 * c);
    let thr = cfg.incident_below / 100.0;
    // (first idx, last idx, worst share)
    let mut groups: Vec<(i64, i64, f64)> = Vec::new();
    // Sub-buckets spanned by each run of missing probes: bad sub-buckets inside one run
    // are one incident however far apart its missing probes are (without a probe, one
    // improbable silence is one outage; with one, they are never further apart than
    // the merge window anyway).
    let spans: Vec<(i64, i64)> = runs
        .iter()
        .map(|r| {
            (
                r.first.div_euclid(b),
                (r.first + (r.count - 1) * r.step).div_euclid(b),
            )
        })
        .collect();
    let mut rk = 0usize;
    let mut within_run = |a: i64, z: i64| {
        while rk < spans.len() && spans[rk].1 < a {
            rk += 1;
        }
        rk < spans.len() && spans[rk].0 <= a && z <= spans[rk].1
    };
    for sub in subs {
        let total = sub.ok + sub.bad;
        if total == 0 {
            continue;
        }
        let share = sub.ok as f64 / total as f64;
        if share >= thr {
            continue;
        }
        match groups.last_mut() {
            Some(g) if (sub.idx - g.1 - 1) * b <= merge || within_run(g.1, sub.idx) => {
                g.1 = sub.last();
                g.2 = g.2.min(share);
            }
            _ => groups.push((sub.idx, sub.last(), share)),
        }
    }
    // Grow each incident over adjacent sub-buckets that still hold failed or missing
    // probes (its ragged edges), without reaching into the neighbouring incident.
    let pos = |idx: i64| {
        let i = subs.partition_point(|s| s.last() < idx);
        (i < subs.len() && subs[i].idx <= idx).then_some(i)
    };
    for g in 0..groups.len() {
        let floor = if g > 0 { groups[g - 1].1 } else { i64::MIN };
        while groups[g].0 - 1 > floor
            && let Some(i) = pos(groups[g].0 - 1)
            && subs[i].bad > 0
        {
            groups[g].0 = subs[i].idx.max(floor + 1);
        }
        let ceil = groups.get(g + 1).map_or(i64::MAX, |n| n.0);
        while groups[g].1 + 1 < ceil
            && let Some(i) = pos(groups[g].1 + 1)
            && subs[i].bad > 0
        {
            groups[g].1 = subs[i].last().min(ceil - 1);
        }
    }
    let mut out = Vec::with_capacity(groups.len());
    let (mut ri, mut si) = (0usize, 0usize);
    let mut fit = failures.iter();
    let mut fail = fit.next().map(unpack);
    let step = c.max(1);
    for (first, last, worst) in groups {
        let (rs, re) = (first * b, (last + 1) * b);
        let mut inc = Incident {
            start_ms: i64::MAX,
            end_ms: i64::MIN,
            duration_ms: 0,
            kind: IncidentKind::Errors,
            worst: 100.0 * worst,
            requests: 0,
            failed: 0,
            missing: 0,
            failures_by_status: BTreeMap::new(),
            no_data_ms: 0,
        };
        while si < subs.len() && subs[si].idx < first {
            si += 1;
        }
        let mut ok = 0;
        while si < subs.len() && subs[si].idx <= last {
            ok += subs[si].ok;
            si += 1;
        }
        while let Some((ts, _)) = fail
            && ts < rs
        {
            fail = fit.next().map(unpack);
        }
        while let Some((ts, st)) = fail
            && ts < re
        {
            fail = fit.next().map(unpack);
            inc.failed += 1;
            *inc.failures_by_status.entry(st).or_insert(0) += 1;
            inc.start_ms = inc.start_ms.min(ts);
            inc.end_ms = inc.end_ms.max(ts + step);
        }
        while ri < runs.len() && runs[ri].first + (runs[ri].count - 1) * runs[ri].step < rs {
            ri += 1;
        }
        let mut rj = ri;
        while rj < runs.len() && runs[rj].first < re {
            let r = runs[rj];
            let lo = ceil_div(rs - r.first, r.step);
            let hi = r.count.min(ceil_div(re - r.first, r.step));
            if hi > lo {
                inc.missing += (hi - lo) as u64;
                inc.start_ms = inc.start_ms.min(r.first + lo * r.step);
                inc.end_ms = inc.end_ms.max((r.first + hi * r.step).min(r.until));
            }
            rj += 1;
        }
        if inc.start_ms > inc.end_ms {
            continue;
        }
        inc.duration_ms = inc.end_ms - inc.start_ms;
        inc.requests = ok + inc.failed;
        inc.kind = match (inc.failed > 0, inc.missing > 0) {
            (true, true) => IncidentKind::Both,
            (false, true) => IncidentKind::Gap,
            _ => IncidentKind::Errors,
        };
        let j = no_data.partition_point(|g| g.to_ms <= inc.start_ms);
        inc.no_data_ms = no_data[j..]
            .iter()
            .take_while(|g| g.from_ms < inc.end_ms)
            .map(|g| (g.to_ms.min(inc.end_ms) - g.from_ms.max(inc.start_ms)).max(0))
            .sum();
        out.push(inc);
    }
    // The iteration may have ended early on a read error of the temporary file.
    fit.error().map_or(Ok(out), Err)
}
