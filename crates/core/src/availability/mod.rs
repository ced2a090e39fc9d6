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
//!   the median interval between probes; without a probe, the mean interval between
//!   dynamic requests shorter than the gap threshold). A silence of `Δ` between two
//!   probes holds `round(Δ / cadence) − 1` missing probes, placed at the expected
//!   times and counted as failures. Without a probe, only silences of at least the gap
//!   threshold (default 15 minutes) count, since real traffic is irregular.
//! * Availability of a period = succeeded / (succeeded + failed + missing).
//!
//! Periods come from the caller's [`Calendar`] (time zones with daylight saving are
//! resolved there); the computation is pure: rows in, [`Report`] out, time only from
//! the log. Rows may arrive in any order.
//!
//! # Bounded by the data
//!
//! Memory and time follow the number of lines and of periods holding probe requests,
//! never the span between the first and the last line: a run of more than
//! [`MAX_EMPTY_PERIODS`] periods without a probe request is one row (counted like any
//! period: its expected probes are all missing), and the sub-buckets inside a long
//! silence are one entry.

pub mod calendar;
pub mod render;
pub mod spec;

use std::collections::BTreeMap;

use serde::Serialize;

pub use calendar::{By, Calendar, Period};
pub use spec::{Grade, Grades, StatusSet, format_duration};

/// Runs of more consecutive periods than this without a probe request are one row
/// ([`PeriodStats::periods`] says how many), so that a report is as long as its data,
/// not as the span between its first and last line.
pub const MAX_EMPTY_PERIODS: u64 = 24;

/// Offset added to timestamps before packing (covers ±35,000 years in ms).
const BIAS: i64 = 1 << 50;
/// Bits of a packed probe that hold the status.
const STATUS_BITS: u32 = 12;
const STATUS_MASK: u64 = (1 << STATUS_BITS) - 1;

/// How statuses in the policy set (403, 429 by default) count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyAs {
    /// Left out of the denominator: neither success nor failure.
    Exclude,
    /// Counted as successes (the service answered).
    Success,
    /// Counted as failures (the user was turned away).
    Failure,
}

impl PolicyAs {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            PolicyAs::Exclude => "exclude",
            PolicyAs::Success => "success",
            PolicyAs::Failure => "failure",
        }
    }
}

/// What an availability report measures and how.
#[derive(Clone, Debug, Serialize)]
pub struct Config {
    /// The probe's description (its regex), or `None` for dynamic requests.
    pub probe: Option<String>,
    /// Statuses that count as success.
    pub success: StatusSet,
    /// Statuses that are policy, not downtime.
    pub policy: StatusSet,
    /// How policy statuses count.
    pub policy_as: PolicyAs,
    /// The probe cadence, when given (else estimated).
    pub expect_every_ms: Option<i64>,
    /// The shortest silence that is a gap (listed as "no data"; without a probe, the
    /// shortest that counts as downtime). Default: with a probe, max(bucket, 2 ×
    /// cadence); without, 15 minutes.
    pub min_gap_ms: Option<i64>,
    /// Sub-bucket length for incidents (default 5 minutes).
    pub bucket_ms: i64,
    /// A sub-bucket whose availability is below this (percent) is bad (default 80).
    pub incident_below: f64,
    /// Bad sub-buckets this close (or closer) are one incident (default 15 minutes).
    pub merge_within_ms: i64,
    /// Grade thresholds.
    pub grades: Grades,
    /// Period length (for labels; the periods themselves are passed to `compute`).
    pub by: By,
    /// Time zone name (for labels).
    pub tz: String,
    /// Rows before this instant (UTC ms) are ignored; the span starts here.
    pub since_ms: Option<i64>,
    /// Rows at or after this instant are ignored; the span ends here.
    pub until_ms: Option<i64>,
}

impl Config {
    /// Defaults for a probe (`Some(regex text)`) or for dynamic requests (`None`).
    pub fn new(probe: Option<String>) -> Config {
        let success = if probe.is_some() {
            StatusSet::from_ranges(&[(200, 399)])
        } else {
            StatusSet::from_ranges(&[(100, 499)])
        };
        Config {
            probe,
            success,
            policy: StatusSet::from_ranges(&[(403, 403), (429, 429)]),
            policy_as: PolicyAs::Exclude,
            expect_every_ms: None,
            min_gap_ms: None,
            bucket_ms: 5 * 60_000,
            incident_below: 80.0,
            merge_within_ms: 15 * 60_000,
            grades: Grades::default(),
            by: By::Month,
            tz: "UTC".into(),
            since_ms: None,
            until_ms: None,
        }
    }

    /// Whether a probe is set (else dynamic requests are the probes).
    pub fn probe_mode(&self) -> bool {
        self.probe.is_some()
    }

    fn outcome(&self, status: u16) -> Outcome {
        if self.policy.contains(status) {
            match self.policy_as {
                PolicyAs::Exclude => Outcome::Policy,
                PolicyAs::Success => Outcome::PolicyOk,
                PolicyAs::Failure => Outcome::PolicyFail,
            }
        } else if self.success.contains(status) {
            Outcome::Ok
        } else {
            Outcome::Fail
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ok,
    Fail,
    Policy,
    PolicyOk,
    PolicyFail,
}

/// Extensions of static files (compared case-insensitively).
const STATIC_EXT: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "webp", "avif", "svg", "ico", "bmp", "tif", "tiff", "css", "js",
    "mjs", "map", "woff", "woff2", "ttf", "otf", "eot", "mp4", "webm", "ogg", "ogv", "mp3", "wav",
    "flac", "m4a", "pdf", "zip", "gz", "tgz", "bz2", "xz", "7z", "rar", "txt", "xml", "json",
    "wasm", "apk", "dmg", "exe", "iso",
];

/// Whether a request path is for a static file (image, stylesheet, script, font,
/// media, archive, text): by its extension.
pub fn is_static_path(path: &str) -> bool {
    let last = path.rsplit('/').next().unwrap_or(path);
    match last.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && ext.len() <= 5 => {
            STATIC_EXT.iter().any(|e| e.eq_ignore_ascii_case(ext))
        }
        _ => false,
    }
}

/// Log lines seen in one minute.
#[derive(Clone, Copy, Debug)]
struct Presence {
    min: i64,
    max: i64,
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

fn unpack(p: u64) -> (i64, u16) {
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
    probes: Vec<u64>,
    presence: Vec<(i64, Presence)>,
    cadence: Option<Cadence>,
    gap_ms: i64,
    span: Option<(i64, i64)>,
    lines: u64,
    outside: u64,
}

/// One period's figures.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PeriodStats {
    /// Label (`2025-06`, …, or `total`); of a collapsed run, its first period's.
    pub label: String,
    /// Calendar periods in this row: 1, or the length of a run of more than
    /// [`MAX_EMPTY_PERIODS`] consecutive periods without a probe request, collapsed
    /// into one row (`total`: all periods of the span).
    pub periods: u64,
    /// Label of the row's last period (`label` itself for one period, `total` for the
    /// total).
    pub last_label: String,
    /// Start, UTC ms.
    pub start_ms: i64,
    /// End (exclusive), UTC ms.
    pub end_ms: i64,
    /// Hours of the period inside the analysed span.
    pub hours: f64,
    /// Whether the span covers only part of the period.
    pub partial: bool,
    /// Probe requests seen (including policy statuses).
    pub requests: u64,
    /// Probes that succeeded.
    pub succeeded: u64,
    /// Probes that failed.
    pub failed: u64,
    /// Probes with a policy status (403, 429 by default), however they are counted.
    pub policy: u64,
    /// Expected probes that are missing (gaps).
    pub missing: u64,
    /// The denominator: succeeded + failed + missing.
    pub expected: u64,
    /// succeeded / expected in percent; `None` when nothing was expected.
    pub availability: Option<f64>,
    /// The grade of `availability`.
    pub grade: Grade,
    /// (1 − availability) × hours.
    pub trouble_hours: Option<f64>,
    /// Hours with no log lines at all (spans of at least the gap threshold).
    pub no_data_hours: f64,
    /// Failed probes by status.
    pub failures_by_status: BTreeMap<u16, u64>,
}

impl PeriodStats {
    /// Availability in percent cut (not rounded) to `decimals` places, so that a
    /// figure is never shown better than it is (99.996 → `99.99`); `-` when nothing
    /// was expected.
    pub fn percent_text(&self, decimals: u32) -> String {
        if self.expected == 0 {
            return "-".into();
        }
        let scale = 10u128.pow(decimals);
        let v = self.succeeded as u128 * 100 * scale / self.expected as u128;
        if decimals == 0 {
            v.to_string()
        } else {
            format!("{}.{:0w$}", v / scale, v % scale, w = decimals as usize)
        }
    }

    fn finish(&mut self, grades: &Grades) {
        self.expected = self.succeeded + self.failed + self.missing;
        self.availability =
            (self.expected > 0).then(|| 100.0 * self.succeeded as f64 / self.expected as f64);
        self.grade = grades.grade(self.availability);
        self.trouble_hours = self.availability.map(|a| (1.0 - a / 100.0) * self.hours);
    }
}

/// Whether an incident was failed probes, missing probes, or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IncidentKind {
    /// Probes answered with failures.
    Errors,
    /// Expected probes missing (a gap in the log).
    Gap,
    /// Both.
    Both,
}

impl IncidentKind {
    /// `errors`, `gap`, `errors+gap`.
    pub fn word(self) -> &'static str {
        match self {
            IncidentKind::Errors => "errors",
            IncidentKind::Gap => "gap",
            IncidentKind::Both => "errors+gap",
        }
    }

    /// `errors`, `gap`, `both` (for narrow tables).
    pub fn short(self) -> &'static str {
        match self {
            IncidentKind::Both => "both",
            k => k.word(),
        }
    }
}

/// A stretch of bad sub-buckets (availability below `incident_below`, missing probes
/// included), merged across brief recoveries and grown over adjacent sub-buckets that
/// still hold failed or missing probes.
#[derive(Clone, Debug, Serialize)]
pub struct Incident {
    /// First failed or missing probe, UTC ms.
    pub start_ms: i64,
    /// End of the last failed or missing probe's interval (its time + cadence).
    pub end_ms: i64,
    /// `end_ms − start_ms`.
    pub duration_ms: i64,
    /// Errors, gap, or both.
    pub kind: IncidentKind,
    /// The lowest sub-bucket availability in the incident, percent.
    pub worst: f64,
    /// Probe requests seen in the incident's sub-buckets (policy statuses aside).
    pub requests: u64,
    /// Failed probes.
    pub failed: u64,
    /// Missing probes.
    pub missing: u64,
    /// Failed probes by status.
    pub failures_by_status: BTreeMap<u16, u64>,
    /// Time inside the incident with no log lines at all.
    pub no_data_ms: i64,
}

/// A span with no log lines at all.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NoData {
    /// Last line before (or the span start), UTC ms.
    pub from_ms: i64,
    /// First line after (or the span end), UTC ms.
    pub to_ms: i64,
}

/// The result of an availability computation.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The definition used.
    pub config: Config,
    /// The cadence used for missing probes; `None` when it could not be estimated
    /// (then nothing is counted missing).
    pub cadence: Option<Cadence>,
    /// The gap threshold used.
    pub gap_ms: i64,
    /// The analysed span `[start, end)`, UTC ms.
    pub span: Option<(i64, i64)>,
    /// Log lines in the span.
    pub lines: u64,
    /// Lines outside `since`/`until`, ignored.
    pub outside: u64,
    /// Probe requests in the span.
    pub probe_requests: u64,
    /// Per period.
    pub periods: Vec<PeriodStats>,
    /// All periods together.
    pub total: PeriodStats,
    /// Incidents in time order.
    pub incidents: Vec<Incident>,
    /// Spans with no log lines at all, in time order.
    pub no_data: Vec<NoData>,
    /// Caveats worth a line in the report.
    pub notes: Vec<String>,
}

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
    static COMPRESS_SUBS: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

fn compress_subs() -> bool {
    #[cfg(test)]
    return COMPRESS_SUBS.with(|c| c.get());
    #[cfg(not(test))]
    true
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
fn period_at(cal: &dyn Calendar, ts: i64) -> Result<Period, String> {
    let p = cal.period_at(ts)?;
    if p.start_ms <= ts && ts < p.end_ms {
        Ok(p)
    } else {
        Err(format!(
            "period {} [{}, {}) does not contain {ts}",
            p.label, p.start_ms, p.end_ms
        ))
    }
}

/// Appends the periods in `[from, to)` (period starts; no probe request in them):
/// one by one up to [`MAX_EMPTY_PERIODS`], else as one collapsed row.
fn push_empty(cal: &dyn Calendar, rows: &mut Vec<Row>, from: i64, to: i64) -> Result<(), String> {
    if to < from {
        return Err(format!("periods overlap at {to}"));
    }
    if to == from {
        return Ok(());
    }
    let n = cal.count_between(from, to)?;
    if n == 0 {
        return Err(format!("no period between {from} and {to}"));
    }
    if n <= MAX_EMPTY_PERIODS {
        let mut c = from;
        for _ in 0..n {
            let p = period_at(cal, c)?;
            if p.start_ms != c {
                return Err(format!("period {} does not start at {c}", p.label));
            }
            c = p.end_ms;
            rows.push(Row::one(p));
        }
        if c != to {
            return Err(format!("{n} periods from {from} end at {c}, not {to}"));
        }
        return Ok(());
    }
    let (a, z) = (period_at(cal, from)?, period_at(cal, to - 1)?);
    if a.start_ms != from || z.end_ms != to {
        return Err(format!(
            "periods {} and {} are not aligned",
            a.label, z.label
        ));
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
        if m <= 0 {
            return;
        }
        let c = self.c;
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
    fn rows(&self, cal: &dyn Calendar, s: i64, e: i64) -> Result<Vec<Row>, String> {
        let first = period_at(cal, s)?;
        let mut cursor = first.end_ms;
        let mut rows = vec![Row::one(first)];
        let mut i = 0;
        while cursor < e {
            // The next probe at or after the cursor.
            i += self.probes[i..].partition_point(|&p| unpack(p).0 < cursor);
            let Some(&packed) = self.probes.get(i).filter(|&&p| unpack(p).0 < e) else {
                break;
            };
            let p = period_at(cal, unpack(packed).0)?;
            push_empty(cal, &mut rows, cursor, p.start_ms)?;
            cursor = p.end_ms;
            rows.push(Row::one(p));
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
    pub fn compute(&self, periods: &[Period], cfg: &Config) -> Result<Report, String> {
        if let Some((s, e)) = self.span {
            calendar::check_cover(periods, s, e)?;
        }
        self.compute_in(&calendar::Listed(periods), cfg)
    }

    /// Computes the report over the periods of `cal`. Only the periods holding probe
    /// requests, the first and the last are asked for one by one; a run of more than
    /// [`MAX_EMPTY_PERIODS`] periods between them is counted and becomes one row.
    pub fn compute_in(&self, cal: &dyn Calendar, cfg: &Config) -> Result<Report, String> {
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
        };
        let Some((s, e)) = self.span else {
            report
                .notes
                .push("no log lines in the selected range".into());
            return Ok(report);
        };
        let rows = self.rows(cal, s, e)?;
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
        let probe_mode = cfg.probe_mode();
        let counts = |d: i64| match cfg.min_gap_ms {
            None if probe_mode => true,
            _ => d >= self.gap_ms,
        };
        let mut failures: Vec<(i64, u16)> = Vec::new();
        let mut prev: Option<i64> = None;
        let mut pi = 0usize;
        let mut seen = 0u64;
        // Outcome of every packable status, looked up instead of matched per probe.
        let outcomes: Vec<Outcome> = (0..=STATUS_MASK as u16).map(|st| cfg.outcome(st)).collect();
        let (mut bucket_start, mut bucket_idx) = (i64::MIN, 0i64);
        for &packed in &self.probes {
            let (ts, status) = unpack(packed);
            if ts < s || ts >= e {
                continue;
            }
            seen += 1;
            if c > 0 {
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
                    failures.push((ts, status));
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
        if c > 0 {
            match prev {
                Some(pt) if counts(e - pt) => sw.add_run(pt + c, (e - pt - 1) / c, e),
                None => sw.add_run(s, (e - s + c - 1) / c, e),
                _ => {}
            }
        }
        report.probe_requests = seen;

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

        let incidents = incidents(&sw.subs, &sw.runs, &failures, &no_data, c, cfg);

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
    failures: &[(i64, u16)],
    no_data: &[NoData],
    c: i64,
    cfg: &Config,
) -> Vec<Incident> {
    let b = cfg.bucket_ms.max(1);
    let merge = cfg.merge_within_ms.max(2 * c);
    let thr = cfg.incident_below / 100.0;
    // (first idx, last idx, worst share)
    let mut groups: Vec<(i64, i64, f64)> = Vec::new();
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
            Some(g) if (sub.idx - g.1 - 1) * b <= merge => {
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
    let (mut fi, mut ri, mut si) = (0usize, 0usize, 0usize);
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
        while fi < failures.len() && failures[fi].0 < rs {
            fi += 1;
        }
        while fi < failures.len() && failures[fi].0 < re {
            let (ts, st) = failures[fi];
            inc.failed += 1;
            *inc.failures_by_status.entry(st).or_insert(0) += 1;
            inc.start_ms = inc.start_ms.min(ts);
            inc.end_ms = inc.end_ms.max(ts + step);
            fi += 1;
        }
        while ri < runs.len() && runs[ri].first + (runs[ri].count - 1) * step < rs {
            ri += 1;
        }
        let mut rj = ri;
        while rj < runs.len() && runs[rj].first < re {
            let r = runs[rj];
            let lo = ceil_div(rs - r.first, step);
            let hi = r.count.min(ceil_div(re - r.first, step));
            if hi > lo {
                inc.missing += (hi - lo) as u64;
                inc.start_ms = inc.start_ms.min(r.first + lo * step);
                inc.end_ms = inc.end_ms.max((r.first + hi * step).min(r.until));
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
    out
}

#[cfg(test)]
mod tests;
