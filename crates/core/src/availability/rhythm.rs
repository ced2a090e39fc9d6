//! The site's own rhythm, for availability without a probe: how many requests (and
//! how many minutes with a request) each hour of the week is expected to hold, learned
//! from the log itself, and how improbable a silence is under it.
//!
//! # The model
//!
//! * **Samples.** Every UTC day with at least one dynamic request is a sample; each
//!   of its hours fully inside the analysed span gives two counts: requests, and
//!   minutes holding a request. Days without a single request are not samples (the
//!   site was down or not logging: they must not teach it that silence is normal).
//! * **Expectation.** Per hour of the week (Monday 00:00 UTC first), the **median**
//!   over the sampled days of that weekday; a storm is one high sample and does not
//!   move a median, an outage of a few hours is one low one. Then smoothed over the
//!   neighbouring hours (¼, ½, ¼), so that a silence is not judged by one hour's
//!   noise. With 28 sampled days or more the hour of the week is used (an hour with
//!   fewer than 3 samples of its weekday takes the hour of the day's median); with 4 to
//!   27, the hour of the day; with fewer, no rhythm is learned (the caller falls back to
//!   one request per mean interval and says the figure is of low confidence).
//! * **Improbable silence.** Requests come in bursts (a page view is several
//!   requests), so the test counts *minutes with a request*, closer to independent
//!   arrivals: a silence `[a, b)` has `Λ = ∫ λ_minutes` expected busy minutes, and
//!   Poisson gives `P(none) = e^−Λ`. A silence is downtime when `P < 10⁻³`
//!   ([`THRESHOLD`]); its missing requests are the expected requests in it,
//!   `round(∫ λ_requests)`. The report also gives the total figure at `10⁻²` and
//!   `10⁻⁶` ([`LOOSE`], [`STRICT`]) so a reader sees how much the threshold matters.
//!
//! Memory: one `(day, 24 + 24 counters)` entry per day with requests, then 168 medians
//! — never a row, never the span's length.

use serde::Serialize;

use std::io;

use super::probes::Sorted;
use super::probes::unpack;

/// A silence is downtime when its probability under the rhythm is below this.
pub const THRESHOLD: f64 = 1e-3;
/// The looser threshold the report's range is computed at.
pub const LOOSE: f64 = 1e-2;
/// The stricter threshold the report's range is computed at.
pub const STRICT: f64 = 1e-6;

/// Days with requests needed for an hour-of-the-week rhythm.
pub const MIN_DAYS_WEEK: u64 = 28;
/// Days with requests needed for an hour-of-the-day rhythm (fewer: none).
pub const MIN_DAYS_DAY: u64 = 4;
/// Samples of one weekday's hour below which the hour of the day's median is used.
const MIN_SAMPLES: usize = 3;

const HOUR: i64 = 3_600_000;
const DAY: i64 = 86_400_000;
/// 1970-01-01 was a Thursday: hour 0 since the epoch is hour 72 of its week.
const EPOCH_HOUR_OF_WEEK: i64 = 72;

/// Which calendar cycle the rhythm follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RhythmKind {
    /// Hour of the week (168 expectations).
    HourOfWeek,
    /// Hour of the day (24, repeated every day).
    HourOfDay,
}

impl RhythmKind {
    /// `weekly`, `daily`.
    pub fn word(self) -> &'static str {
        match self {
            RhythmKind::HourOfWeek => "weekly",
            RhythmKind::HourOfDay => "daily",
        }
    }
}

/// A learned rhythm: expected requests and busy minutes per hour of the week.
#[derive(Clone, Debug)]
pub struct Rhythm {
    pub(super) kind: RhythmKind,
    /// Days with requests it was learned from.
    pub(super) days: u64,
    /// Expected requests per hour of the week, Monday 00:00 UTC first.
    pub(super) requests: [f64; 168],
    /// Expected minutes holding a request, per hour of the week.
    minutes: [f64; 168],
    /// Prefix sums of `requests` and `minutes` (169 each).
    req_sum: Vec<f64>,
    min_sum: Vec<f64>,
}

/// One sampled day's counters.
struct DayCounts {
    day: i64,
    requests: [u32; 24],
    minutes: [u16; 24],
}

fn median(v: &mut [u32]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_unstable();
    let n = v.len();
    if n % 2 == 1 {
        f64::from(v[n / 2])
    } else {
        (f64::from(v[n / 2 - 1]) + f64::from(v[n / 2])) / 2.0
    }
}

fn smooth(a: &[f64; 168], cycle: usize) -> [f64; 168] {
    let mut out = [0.0; 168];
    for k in 0..168 {
        let base = k - k % cycle;
        let at = |d: usize| a[base + (k % cycle + d) % cycle];
        out[k] = 0.25 * at(cycle - 1) + 0.5 * at(0) + 0.25 * at(1);
    }
    out
}

fn prefix(a: &[f64; 168]) -> Vec<f64> {
    let mut v = Vec::with_capacity(169);
    let mut s = 0.0;
    v.push(0.0);
    for x in a {
        s += x;
        v.push(s);
    }
    v
}

/// `(weekday Monday = 0, hour)` of a UTC day number and hour.
fn weekday(day: i64) -> usize {
    (day + 3).rem_euclid(7) as usize
}

impl Rhythm {
    /// Learns the rhythm of the sorted packed `probes` in `[s, e)`; `Err(days)` with
    /// the number of days with requests when they are too few ([`MIN_DAYS_DAY`]).
    /// Fails if the probes' temporary file cannot be read.
    pub(super) fn learn(probes: &Sorted, s: i64, e: i64) -> io::Result<Result<Rhythm, u64>> {
        let mut days: Vec<DayCounts> = Vec::new();
        let mut last_minute = i64::MIN;
        let mut it = probes.iter();
        for p in it.by_ref() {
            let (ts, _) = unpack(p);
            if ts < s || ts >= e {
                continue;
            }
            let day = ts.div_euclid(DAY);
            if days.last().is_none_or(|d| d.day != day) {
                days.push(DayCounts {
                    day,
                    requests: [0; 24],
                    minutes: [0; 24],
                });
            }
            let d = days.last_mut().expect("pushed");
            let h = (ts.rem_euclid(DAY) / HOUR) as usize;
            d.requests[h] = d.requests[h].saturating_add(1);
            let minute = ts.div_euclid(60_000);
            if minute != last_minute {
                d.minutes[h] += 1;
                last_minute = minute;
            }
        }
        if let Some(err) = it.error() {
            return Err(err);
        }
        let n = days.len() as u64;
        if n < MIN_DAYS_DAY {
            return Ok(Err(n));
        }
        let kind = if n >= MIN_DAYS_WEEK {
            RhythmKind::HourOfWeek
        } else {
            RhythmKind::HourOfDay
        };
        // Samples per (weekday, hour), hours fully inside the span only.
        let mut req: Vec<Vec<u32>> = vec![Vec::new(); 168];
        let mut min: Vec<Vec<u32>> = vec![Vec::new(); 168];
        for d in &days {
            let w = weekday(d.day);
            for h in 0..24 {
                let start = d.day * DAY + h as i64 * HOUR;
                if start < s || start + HOUR > e {
                    continue;
                }
                req[w * 24 + h].push(d.requests[h]);
                min[w * 24 + h].push(u32::from(d.minutes[h]));
            }
        }
        // The hour of the day's median (all weekdays together).
        let daily = |bins: &[Vec<u32>]| -> [f64; 24] {
            let mut out = [0.0; 24];
            for (h, o) in out.iter_mut().enumerate() {
                let mut all: Vec<u32> = (0..7)
                    .flat_map(|w| bins[w * 24 + h].iter().copied())
                    .collect();
                *o = median(&mut all);
            }
            out
        };
        let build = |bins: &mut [Vec<u32>]| -> [f64; 168] {
            let day = daily(bins);
            let mut out = [0.0; 168];
            for (k, o) in out.iter_mut().enumerate() {
                *o = match kind {
                    RhythmKind::HourOfWeek if bins[k].len() >= MIN_SAMPLES => median(&mut bins[k]),
                    _ => day[k % 24],
                };
            }
            match kind {
                RhythmKind::HourOfWeek => smooth(&out, 168),
                RhythmKind::HourOfDay => smooth(&out, 24),
            }
        };
        let requests = build(&mut req);
        let minutes = build(&mut min);
        Ok(Ok(Rhythm {
            kind,
            days: n,
            req_sum: prefix(&requests),
            min_sum: prefix(&minutes),
            requests,
            minutes,
        }))
    }

    /// Expected `(requests, busy minutes)` in `[a, b)`.
    pub(super) fn expected(&self, a: i64, b: i64) -> (f64, f64) {
        if b <= a {
            return (0.0, 0.0);
        }
        (
            self.integral(&self.requests, &self.req_sum, a, b),
            self.integral(&self.minutes, &self.min_sum, a, b),
        )
    }

    fn integral(&self, rate: &[f64; 168], sum: &[f64], a: i64, b: i64) -> f64 {
        // F(t) = expected count from the start of t's week (weeks counted apart).
        let at = |t: i64| {
            let h = t.div_euclid(HOUR) + EPOCH_HOUR_OF_WEEK;
            let (week, k) = (h.div_euclid(168), h.rem_euclid(168) as usize);
            let frac = t.rem_euclid(HOUR) as f64 / HOUR as f64;
            (week, sum[k] + rate[k] * frac)
        };
        let (wa, fa) = at(a);
        let (wb, fb) = at(b);
        ((wb - wa) as f64 * sum[168] + fb - fa).max(0.0)
    }

    /// Expected requests per day (the week's mean).
    pub(super) fn per_day(&self) -> f64 {
        self.req_sum[168] / 7.0
    }
}

/// What the rhythm said about the silences of a report.
#[derive(Clone, Debug, Serialize)]
pub struct RhythmSummary {
    /// Hour of the week or of the day.
    pub kind: RhythmKind,
    /// Days with requests the rhythm was learned from.
    pub days: u64,
    /// Expected requests per day (the week's mean).
    pub requests_per_day: f64,
    /// Expected requests per hour of the week, Monday 00:00 UTC first (168 values).
    pub expected_per_hour: Vec<f64>,
    /// The probability below which a silence is downtime.
    pub threshold: f64,
    /// Silences of at least the gap threshold that were checked.
    pub silences_checked: u64,
    /// Silences counted as downtime.
    pub silences_counted: u64,
    /// Their total length, ms.
    pub counted_ms: i64,
    /// Σ P(silence) over the counted ones: how many of them a merely quiet site would
    /// produce.
    pub expected_quiet: f64,
    /// Total availability (percent) counting silences with P < [`LOOSE`].
    pub availability_loose: Option<f64>,
    /// Total availability (percent) counting only silences with P < [`STRICT`].
    pub availability_strict: Option<f64>,
    /// `high`, `medium` or `low`.
    pub confidence: &'static str,
}

/// Missing requests at the three thresholds while silences are checked.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) checked: u64,
    pub(super) counted: u64,
    pub(super) counted_ms: i64,
    pub(super) expected_quiet: f64,
    pub(super) missing_loose: u64,
    pub(super) missing_strict: u64,
}

/// The verdict on one silence: missing requests to count (0: not downtime).
pub(super) fn judge(r: &Rhythm, t: &mut Tally, a: i64, b: i64) -> i64 {
    let (req, busy) = r.expected(a, b);
    let p = (-busy).exp();
    t.checked += 1;
    let m = (req.round() as i64).max(1);
    if p < LOOSE {
        t.missing_loose += m as u64;
    }
    if p < STRICT {
        t.missing_strict += m as u64;
    }
    if p < THRESHOLD {
        t.counted += 1;
        t.counted_ms += b - a;
        t.expected_quiet += p;
        m
    } else {
        0
    }
}

impl RhythmSummary {
    pub(super) fn new(r: &Rhythm, t: &Tally, succeeded: u64, failed: u64) -> RhythmSummary {
        let pct = |missing: u64| {
            let d = succeeded + failed + missing;
            (d > 0).then(|| 100.0 * succeeded as f64 / d as f64)
        };
        let confidence = match r.kind {
            RhythmKind::HourOfWeek if r.days >= 2 * MIN_DAYS_WEEK => "high",
            _ => "medium",
        };
        RhythmSummary {
            kind: r.kind,
            days: r.days,
            requests_per_day: r.per_day(),
            expected_per_hour: r.requests.to_vec(),
            threshold: THRESHOLD,
            silences_checked: t.checked,
            silences_counted: t.counted,
            counted_ms: t.counted_ms,
            expected_quiet: t.expected_quiet,
            availability_loose: pct(t.missing_loose),
            availability_strict: pct(t.missing_strict),
            confidence,
        }
    }
}
