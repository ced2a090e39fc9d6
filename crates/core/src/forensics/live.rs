//! The live view of `logscope watch`: requests, heavy requests and statuses per minute
//! ([`Minutes`]) and what one frame shows ([`Frame`]).
//!
//! The frame's clock is the data's, never the wall clock: "now" is the minute of the
//! latest row, and the window is the last whole minutes up to and including it. The
//! same rows give the same frame.

use std::collections::BTreeMap;

use serde::Serialize;

/// One minute in milliseconds.
pub const MINUTE_MS: i64 = 60_000;

/// The minute (UTC ms, a multiple of [`MINUTE_MS`]) that holds `ts_ms`. Every time
/// zone's offset is whole minutes, so the minute is the same on every clock.
pub fn minute_of(ts_ms: i64) -> i64 {
    ts_ms.div_euclid(MINUTE_MS) * MINUTE_MS
}

/// What one minute (or a sum of minutes) held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Requests.
    pub requests: u64,
    /// Heavy requests.
    pub heavy: u64,
    /// 2xx responses.
    #[serde(rename = "2xx")]
    pub s2xx: u64,
    /// 3xx responses.
    #[serde(rename = "3xx")]
    pub s3xx: u64,
    /// 4xx responses.
    #[serde(rename = "4xx")]
    pub s4xx: u64,
    /// 5xx responses: the errors of `errors` alerts (the backend failed).
    #[serde(rename = "5xx")]
    pub s5xx: u64,
    /// Any other status (1xx, 0, none).
    pub other: u64,
}

impl Counts {
    /// Counts one request.
    pub fn add(&mut self, heavy: bool, status: u16) {
        self.requests += 1;
        self.heavy += u64::from(heavy);
        match status {
            200..=299 => self.s2xx += 1,
            300..=399 => self.s3xx += 1,
            400..=499 => self.s4xx += 1,
            500..=599 => self.s5xx += 1,
            _ => self.other += 1,
        }
    }

    /// Adds another count.
    pub fn merge(&mut self, o: &Counts) {
        self.requests += o.requests;
        self.heavy += o.heavy;
        self.s2xx += o.s2xx;
        self.s3xx += o.s3xx;
        self.s4xx += o.s4xx;
        self.s5xx += o.s5xx;
        self.other += o.other;
    }

    /// Takes another count away (a sliding sum; `o` was added before).
    pub fn unmerge(&mut self, o: &Counts) {
        self.requests -= o.requests;
        self.heavy -= o.heavy;
        self.s2xx -= o.s2xx;
        self.s3xx -= o.s3xx;
        self.s4xx -= o.s4xx;
        self.s5xx -= o.s5xx;
        self.other -= o.other;
    }
}

/// Counts per minute: of the last `keep` minutes up to the latest row's, or of every
/// minute (`keep` = `None`, for a backtest). Memory: one entry per minute kept.
#[derive(Clone, Debug)]
pub struct Minutes {
    keep: Option<i64>,
    map: BTreeMap<i64, Counts>,
    latest_ms: Option<i64>,
}

impl Minutes {
    /// The last `keep` minutes (`None`: all).
    pub fn new(keep: Option<u64>) -> Minutes {
        Minutes {
            keep: keep.map(|k| k.max(1) as i64),
            map: BTreeMap::new(),
            latest_ms: None,
        }
    }

    /// Counts a request at `ts_ms` (UTC).
    pub fn add(&mut self, ts_ms: i64, heavy: bool, status: u16) {
        let m = minute_of(ts_ms);
        let latest = self.latest_ms.map_or(ts_ms, |l| l.max(ts_ms));
        self.latest_ms = Some(latest);
        if let Some(keep) = self.keep {
            let oldest = minute_of(latest) - (keep - 1) * MINUTE_MS;
            if m < oldest {
                return;
            }
            if self.map.first_key_value().is_some_and(|(k, _)| *k < oldest) {
                self.map = self.map.split_off(&oldest);
            }
        }
        self.map.entry(m).or_default().add(heavy, status);
    }

    /// The latest row's time (UTC ms).
    pub fn latest(&self) -> Option<i64> {
        self.latest_ms
    }

    /// The counts of minute `m` (zero when nothing came).
    pub fn at(&self, m: i64) -> Counts {
        self.map.get(&m).copied().unwrap_or_default()
    }

    /// The sum of the `n` minutes ending with minute `last` (included).
    pub fn sum(&self, last: i64, n: u64) -> Counts {
        let first = last - (n as i64 - 1) * MINUTE_MS;
        let mut c = Counts::default();
        for (_, v) in self.map.range(first..=last) {
            c.merge(v);
        }
        c
    }

    /// The minutes that hold rows, in order.
    pub fn iter(&self) -> impl Iterator<Item = (i64, &Counts)> {
        self.map.iter().map(|(k, v)| (*k, v))
    }
}

/// One minute of the frame's series.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Point {
    /// The minute's start (RFC 3339 on the report's clock).
    pub minute: String,
    /// Requests.
    pub requests: u64,
    /// Heavy requests.
    pub heavy: u64,
    /// 5xx responses.
    pub errors: u64,
}

/// A top value of the window.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TopLine {
    /// The prefix, AS or User-Agent.
    pub value: String,
    /// Its requests in the window.
    pub requests: u64,
    /// Its share of the window's requests (0–1).
    pub share: f64,
}

/// The load against the backend's capacity.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Load {
    /// The capacity, heavy requests a minute.
    pub capacity_per_minute: f64,
    /// `given` (`--capacity`) or `estimated` (held before the first stall, by the
    /// capacity report over the whole input, 1-minute windows).
    pub source: &'static str,
    /// Heavy requests in the latest minute.
    pub heavy_last_minute: u64,
    /// The latest minute's heavy requests over the capacity (1 = at capacity).
    pub load: f64,
}

/// What one candidate limit would refuse of the window.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LimitLine {
    /// The candidate's name (its spec when unnamed).
    pub name: String,
    /// Requests replayed (the window's, from a fresh state at its start).
    pub requests: u64,
    /// Requests it would have refused.
    pub refused: u64,
}

/// One alert rule's state in the frame.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct AlertLine {
    /// The rule as given.
    pub rule: String,
    /// The value now (a count, or a share 0–1 for `%` rules); `null` when it cannot be
    /// told (no rows in its period).
    pub value: Option<f64>,
    /// The threshold (same unit).
    pub threshold: f64,
    /// Whether it is firing (crossed, and not yet back past the hysteresis band).
    pub firing: bool,
}

/// One frame of `logscope watch`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Frame {
    /// The latest row's time (RFC 3339 on the report's clock): the frame's "now".
    pub latest: String,
    /// The window, e.g. `10m`.
    pub window: String,
    /// The window's first minute (its rows are those from here on).
    pub since: String,
    /// Requests, heavy requests and errors per minute, oldest first, ending with the
    /// latest row's minute (minutes without rows as zeros).
    pub series: Vec<Point>,
    /// The window's sums.
    pub totals: Counts,
    /// The load against the capacity (none given and none could be estimated: `null`).
    pub load: Option<Load>,
    /// Why there is no load line, when there is none.
    pub load_note: Option<String>,
    /// The window's top /24 (/48) prefixes.
    pub prefixes: Vec<TopLine>,
    /// The window's top User-Agents.
    pub agents: Vec<TopLine>,
    /// The window's top autonomous systems (with a network database).
    pub asns: Vec<TopLine>,
    /// Each `--limit` candidate over the window.
    pub limits: Vec<LimitLine>,
    /// Each `--alert` rule.
    pub alerts: Vec<AlertLine>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minutes_keep_the_last_ones_and_sum_windows() {
        let mut m = Minutes::new(Some(3));
        let t0 = 1_800_000_000_000 - 1_800_000_000_000 % MINUTE_MS;
        m.add(t0, true, 200);
        m.add(t0 + 30_000, false, 503);
        m.add(t0 + MINUTE_MS, false, 404);
        assert_eq!(m.sum(t0 + MINUTE_MS, 2).requests, 3);
        assert_eq!(m.sum(t0 + MINUTE_MS, 2).s5xx, 1);
        assert_eq!(m.sum(t0 + MINUTE_MS, 1).heavy, 0);
        // Three minutes later the first is gone; a row as old is dropped.
        m.add(t0 + 3 * MINUTE_MS, false, 200);
        assert_eq!(m.at(t0).requests, 0);
        m.add(t0 + 1, true, 200);
        assert_eq!(m.sum(t0 + 3 * MINUTE_MS, 10).requests, 2);
        assert_eq!(m.latest(), Some(t0 + 3 * MINUTE_MS));
        assert_eq!(minute_of(-1), -MINUTE_MS);
    }

    #[test]
    fn sliding_sums_undo_exactly() {
        let mut a = Counts::default();
        a.add(true, 500);
        let mut s = Counts::default();
        s.merge(&a);
        s.merge(&a);
        s.unmerge(&a);
        assert_eq!(s, a);
    }
}
