//! Alert rules of `logscope watch --alert`: one small grammar, `METRIC > THRESHOLD` or
//! `METRIC < THRESHOLD`, over the data's own minutes, each alert told once per crossing
//! with a hysteresis band.
//!
//! ```text
//! heavy > 1600/10m        heavy requests in the last 10 minutes (a rate: N/DURATION)
//! requests > 20000/10m    requests in the last 10 minutes
//! requests < 10/5m        traffic fell (the site may be down)
//! errors > 5%/5m          5xx responses' share of the requests of the last 5 minutes
//! errors > 300/5m         5xx responses in the last 5 minutes
//! prefix_share > 20%      the top /24 (/48) prefix's share of the watch window
//! asn_share > 50%         the top AS's share (with a network database)
//! agent_share > 30%       the top User-Agent's share
//! ```
//!
//! Periods are the one duration grammar's, in whole minutes (the data is counted per
//! minute). An alert fires when its value crosses the threshold and is told again only
//! after it went back past a band of 10% of the threshold (below 90% of it for `>`,
//! above 110% for `<`): a value that hovers at the threshold fires once.

use crate::duration::{Duration, Resolution};
use crate::forensics::live::{MINUTE_MS, Minutes};
use crate::rate::Rate;

/// The hysteresis band, as a share of the threshold.
pub const BAND: f64 = 0.10;

/// What an alert watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Requests.
    Requests,
    /// Heavy requests.
    Heavy,
    /// 5xx responses.
    Errors,
    /// The top prefix's share of the window.
    PrefixShare,
    /// The top AS's share of the window.
    AsnShare,
    /// The top User-Agent's share of the window.
    AgentShare,
}

impl Metric {
    const ALL: [(&'static str, Metric); 6] = [
        ("requests", Metric::Requests),
        ("heavy", Metric::Heavy),
        ("errors", Metric::Errors),
        ("prefix_share", Metric::PrefixShare),
        ("asn_share", Metric::AsnShare),
        ("agent_share", Metric::AgentShare),
    ];

    /// The metric's name in rules.
    pub fn name(self) -> &'static str {
        Metric::ALL
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("", |(n, _)| n)
    }

    /// Whether it is a top value's share (of the watch window).
    pub fn is_share(self) -> bool {
        matches!(
            self,
            Metric::PrefixShare | Metric::AsnShare | Metric::AgentShare
        )
    }
}

/// What the value is compared with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Threshold {
    /// A count in the last `minutes` minutes.
    Count {
        /// The count.
        n: u64,
        /// The period, in minutes.
        minutes: u64,
    },
    /// A share (0–1) over the last `minutes` minutes (`None`: the watch window).
    Share {
        /// The share.
        share: f64,
        /// The period, in minutes.
        minutes: Option<u64>,
    },
}

/// One `--alert` rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// The rule as given.
    pub text: String,
    /// What it watches.
    pub metric: Metric,
    /// `>` (true) or `<`.
    pub above: bool,
    /// What the value is compared with.
    pub threshold: Threshold,
}

/// Shares of the window's top values, for the `*_share` metrics (`None`: not known,
/// e.g. no network database for `asn_share`, or no rows).
#[derive(Clone, Copy, Debug, Default)]
pub struct Shares {
    /// The top prefix's share.
    pub prefix: Option<f64>,
    /// The top AS's share.
    pub asn: Option<f64>,
    /// The top User-Agent's share.
    pub agent: Option<f64>,
}

const EXAMPLE: &str =
    "e.g. 'heavy > 1600/10m', 'errors > 5%/5m', 'requests < 10/5m' or 'prefix_share > 20%'";

impl Rule {
    /// Parses `METRIC > THRESHOLD` (or `<`).
    pub fn parse(text: &str) -> Result<Rule, String> {
        let t = text.trim();
        let (at, above) = match (t.find('>'), t.find('<')) {
            (Some(i), None) => (i, true),
            (None, Some(i)) => (i, false),
            _ => {
                return Err(format!(
                    "an alert is METRIC > THRESHOLD or METRIC < THRESHOLD ({EXAMPLE})"
                ));
            }
        };
        let name = t[..at].trim();
        let value = t[at + 1..].trim();
        let metric = Metric::ALL
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, m)| *m)
            .ok_or_else(|| {
                let names: Vec<&str> = Metric::ALL.iter().map(|(n, _)| *n).collect();
                format!(
                    "unknown metric '{name}': one of {} ({EXAMPLE})",
                    names.join(", ")
                )
            })?;
        let threshold = if let Some((pct, period)) = value.split_once('%') {
            let share: f64 = pct
                .trim()
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && (0.0..=100.0).contains(v))
                .ok_or_else(|| format!("'{pct}%' is not a share from 0% to 100% ({EXAMPLE})"))?;
            let period = period.trim();
            let minutes = match period.strip_prefix('/') {
                None if period.is_empty() => None,
                Some(p) => Some(whole_minutes(p.trim())?),
                None => {
                    return Err(format!(
                        "'{value}': a share is P% or P%/DURATION ({EXAMPLE})"
                    ));
                }
            };
            if metric.is_share() && minutes.is_some() {
                return Err(format!(
                    "{} is a share of the watch window (--window): give it as P%, e.g. '{} > 20%'",
                    metric.name(),
                    metric.name()
                ));
            }
            if matches!(metric, Metric::Requests | Metric::Heavy) {
                return Err(format!(
                    "{} is a count: give a rate, e.g. '{} > 1600/10m'",
                    metric.name(),
                    metric.name()
                ));
            }
            Threshold::Share {
                share: share / 100.0,
                minutes,
            }
        } else {
            if metric.is_share() {
                return Err(format!(
                    "{} is a share: give it as P%, e.g. '{} > 20%'",
                    metric.name(),
                    metric.name()
                ));
            }
            let rate = Rate::parse(value).map_err(|e| format!("'{value}': {e} ({EXAMPLE})"))?;
            let w = rate.window_ms();
            if w % MINUTE_MS as u64 != 0 {
                return Err(format!(
                    "'{value}': alerts count over whole minutes (the data is counted per minute): e.g. {}/1m",
                    rate.count() * (MINUTE_MS as u64).div_ceil(w).max(1)
                ));
            }
            Threshold::Count {
                n: rate.count(),
                minutes: w / MINUTE_MS as u64,
            }
        };
        Ok(Rule {
            text: t.to_string(),
            metric,
            above,
            threshold,
        })
    }

    /// The threshold as a number (a count, or a share 0–1).
    pub fn limit(&self) -> f64 {
        match self.threshold {
            Threshold::Count { n, .. } => n as f64,
            Threshold::Share { share, .. } => share,
        }
    }

    /// The longest period the rule looks back, in minutes (`window` for the window's).
    pub fn minutes(&self, window: u64) -> u64 {
        match self.threshold {
            Threshold::Count { minutes, .. } => minutes,
            Threshold::Share { minutes, .. } => minutes.unwrap_or(window),
        }
    }

    /// The value at the end of minute `last` (UTC ms): a count, or a share (`None` when
    /// it has no base: no requests, or the top share unknown).
    pub fn value(&self, m: &Minutes, last: i64, window: u64, shares: &Shares) -> Option<f64> {
        let n = self.minutes(window);
        match (self.metric, self.threshold) {
            (Metric::PrefixShare, _) => shares.prefix,
            (Metric::AsnShare, _) => shares.asn,
            (Metric::AgentShare, _) => shares.agent,
            (metric, Threshold::Count { .. }) => {
                let c = m.sum(last, n);
                Some(match metric {
                    Metric::Requests => c.requests,
                    Metric::Heavy => c.heavy,
                    _ => c.s5xx,
                } as f64)
            }
            (_, Threshold::Share { .. }) => {
                let c = m.sum(last, n);
                (c.requests > 0).then(|| c.s5xx as f64 / c.requests as f64)
            }
        }
    }
}

/// Parses a period of whole minutes.
fn whole_minutes(p: &str) -> Result<u64, String> {
    let d =
        Duration::parse(p, Resolution::Seconds).map_err(|e| format!("'{p}': {e} ({EXAMPLE})"))?;
    if d.ms() % MINUTE_MS as u64 != 0 {
        return Err(format!(
            "'{p}': alerts look back whole minutes (the data is counted per minute), e.g. 5m"
        ));
    }
    Ok(d.ms() / MINUTE_MS as u64)
}

/// A crossing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Crossing {
    /// The value crossed the threshold.
    Fired,
    /// It went back past the hysteresis band.
    Resolved,
}

impl Crossing {
    /// `firing` or `resolved`.
    pub fn name(self) -> &'static str {
        match self {
            Crossing::Fired => "firing",
            Crossing::Resolved => "resolved",
        }
    }
}

/// One rule's state between evaluations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct State {
    /// Crossed, and not yet back past the band.
    pub firing: bool,
}

impl State {
    /// Takes a new value; a crossing when the state changed. A value that cannot be
    /// told (`None`) changes nothing.
    pub fn update(&mut self, rule: &Rule, value: Option<f64>) -> Option<Crossing> {
        let v = value?;
        let t = rule.limit();
        let (past, back) = if rule.above {
            (v > t, v <= t * (1.0 - BAND))
        } else {
            (v < t, v >= t * (1.0 + BAND))
        };
        if !self.firing && past {
            self.firing = true;
            Some(Crossing::Fired)
        } else if self.firing && back {
            self.firing = false;
            Some(Crossing::Resolved)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grammar() {
        let r = Rule::parse("heavy > 1600/10m").unwrap();
        assert_eq!(r.metric, Metric::Heavy);
        assert!(r.above);
        assert_eq!(
            r.threshold,
            Threshold::Count {
                n: 1600,
                minutes: 10
            }
        );
        let r = Rule::parse("errors>5%/5m").unwrap();
        assert_eq!(
            r.threshold,
            Threshold::Share {
                share: 0.05,
                minutes: Some(5)
            }
        );
        let r = Rule::parse("requests < 10/5m").unwrap();
        assert!(!r.above);
        assert_eq!(
            Rule::parse("prefix_share > 20%").unwrap().threshold,
            Threshold::Share {
                share: 0.2,
                minutes: None
            }
        );
        assert_eq!(Rule::parse("requests > 300/min").unwrap().minutes(10), 1);
        for bad in [
            "heavy 1600/10m",
            "heavy > 1600/10s",
            "heavy > 5%",
            "latency > 3/1m",
            "prefix_share > 2000/1m",
            "prefix_share > 20%/5m",
            "errors > 120%",
            "errors > 5%/90s",
            "heavy > x",
            "a > b < c",
        ] {
            let e = Rule::parse(bad).unwrap_err();
            assert!(e.contains("e.g."), "{bad}: {e}");
        }
    }

    #[test]
    fn fires_once_per_crossing_with_hysteresis() {
        let r = Rule::parse("heavy > 100/1m").unwrap();
        let mut s = State::default();
        let seq = [50.0, 101.0, 99.0, 120.0, 95.0, 89.0, 91.0, 150.0];
        let got: Vec<Option<Crossing>> = seq.iter().map(|v| s.update(&r, Some(*v))).collect();
        use Crossing::*;
        assert_eq!(
            got,
            [
                None,
                Some(Fired),
                None,
                None,
                None,
                Some(Resolved),
                None,
                Some(Fired)
            ]
        );
        // Below: fires under the threshold, resolves above 110% of it.
        let r = Rule::parse("requests < 10/5m").unwrap();
        let mut s = State::default();
        assert_eq!(s.update(&r, Some(9.0)), Some(Fired));
        assert_eq!(s.update(&r, Some(10.5)), None);
        assert_eq!(s.update(&r, None), None);
        assert_eq!(s.update(&r, Some(11.0)), Some(Resolved));
    }

    #[test]
    fn values_from_the_minutes() {
        let mut m = Minutes::new(None);
        let t0 = 1_800_000_000_000 - 1_800_000_000_000 % MINUTE_MS;
        for i in 0..10 {
            m.add(t0 + i * MINUTE_MS, true, if i < 5 { 200 } else { 503 });
        }
        let last = t0 + 9 * MINUTE_MS;
        let sh = Shares::default();
        let v = |s: &str| Rule::parse(s).unwrap().value(&m, last, 10, &sh);
        assert_eq!(v("heavy > 1/5m"), Some(5.0));
        assert_eq!(v("errors > 10%/5m"), Some(1.0));
        assert_eq!(v("errors > 10%"), Some(0.5));
        assert_eq!(v("prefix_share > 10%"), None);
    }
}
