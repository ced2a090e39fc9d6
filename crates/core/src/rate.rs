//! Rates as people write them (`1600/10m`, `300/min`, `5r/s`, `0.2/s`) and their exact
//! integer forms.

use std::cmp::Ordering;
use std::fmt;

use crate::duration::{Duration, DurationError, Resolution};
use crate::number::thousands;

/// A rate: `count` units per `window_ms` milliseconds, kept exactly as integers.
///
/// Window algorithms (sliding log, fixed window, sliding-window counter, Caddy) use the
/// count and the window as written: `1600/10m` is 1,600 in any 10 minutes, not 8 in any
/// 3 s. Bucket algorithms only use the ratio. A decimal count is scaled to a whole one
/// by the smallest factor that makes it whole: `0.2/s` is 1 per 5 s, `2.5/s` is 5 per 2 s.
///
/// Serializes as `{"count": …, "window_ms": …}` (a report's capacity, for instance).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Rate {
    count: u64,
    window_ms: u64,
}

/// Largest count or window accepted, so that products of two stay far from overflow.
const MAX_PART: u64 = 1 << 40;

impl Rate {
    /// `count` per `window_ms` ms; `None` if either is zero or beyond 2^40.
    pub fn new(count: u64, window_ms: u64) -> Option<Rate> {
        if count == 0 || window_ms == 0 || count > MAX_PART || window_ms > MAX_PART {
            return None;
        }
        Some(Rate { count, window_ms })
    }

    /// How many units per window.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The window in milliseconds.
    pub fn window_ms(&self) -> u64 {
        self.window_ms
    }

    /// The rate reduced to lowest terms: `(count, window_ms)` with no common factor.
    pub fn reduced(&self) -> (u64, u64) {
        let g = gcd(self.count, self.window_ms);
        (self.count / g, self.window_ms / g)
    }

    /// Units per second, as a float (for display and reports only).
    pub fn per_second(&self) -> f64 {
        self.count as f64 * 1000.0 / self.window_ms as f64
    }

    /// nginx's integer form: milli-requests per second, `count * 1000 * 1000 / window_ms`
    /// rounded down, so `30r/m` is 500 and `1r/m` is 16 (nginx stores `N*1000/60`).
    pub fn nginx_milli(&self) -> u64 {
        ((self.count as u128 * 1_000_000) / self.window_ms as u128) as u64
    }

    /// Compares how permissive two rates are (`Greater`: `self` admits more per time).
    pub fn cmp_permissive(&self, other: &Rate) -> Ordering {
        let a = self.count as u128 * other.window_ms as u128;
        let b = other.count as u128 * self.window_ms as u128;
        a.cmp(&b)
    }

    /// Parses `COUNT/PERIOD`: `1600/10m`, `300/min`, `5r/s`, `30r/m`, `10/s`, `100/1h`,
    /// `0.2/s`, `100/500ms`, `12/hour`, `100/1h30m`, `100/1w`. Also `COUNT per PERIOD`
    /// (`30 per minute`). The period is a duration in the one grammar of
    /// [`crate::duration`] (milliseconds allowed), or a bare unit meaning one of it.
    pub fn parse(text: &str) -> Result<Rate, RateError> {
        let t = text.trim();
        let (count_s, period_s) = if let Some((a, b)) = t.split_once('/') {
            (a.trim(), b.trim())
        } else if let Some((a, b)) = t.split_once(" per ") {
            (a.trim(), b.trim())
        } else {
            return Err(RateError::NoSlash);
        };
        let count_s = count_s
            .strip_suffix("r")
            .or_else(|| count_s.strip_suffix("req"))
            .unwrap_or(count_s)
            .trim();
        let (num, scale) = parse_decimal(count_s).ok_or(RateError::BadCount)?;
        if num == 0 {
            return Err(RateError::Zero);
        }
        let window_ms = Duration::parse_period(period_s, Resolution::Millis)
            .map_err(|e| RateError::BadPeriod(Box::new(e)))?
            .ms();
        let mut count = num as u128;
        let mut window = (window_ms as u128) * (scale as u128);
        if scale > 1 {
            // Smallest whole count: 2.5/s → 5 per 2 s (not 1 per 400 ms), 0.2/s → 1 per 5 s.
            let g = gcd128(count, scale as u128);
            count /= g;
            window /= g;
        }
        if count > MAX_PART as u128 {
            return Err(RateError::TooLarge);
        }
        let count = count as u64;
        if window > MAX_PART as u128 {
            return Err(RateError::TooLarge);
        }
        Rate::new(count, window as u64).ok_or(RateError::TooLarge)
    }

    /// The rate in words: `1,600 per 10 minutes`, `5 per second`, `1 per 5 seconds`.
    pub fn describe(&self, unit: &str) -> String {
        let units = if self.count == 1 {
            unit.to_string()
        } else {
            plural(unit)
        };
        format!(
            "{} {} per {}",
            thousands(self.count),
            units,
            describe_period(self.window_ms)
        )
    }
}

impl fmt::Display for Rate {
    /// Compact form that [`Rate::parse`] reads back: `1600/10m`, `5/s`, `1/5s`, `3/500ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.count, compact_period(self.window_ms))
    }
}

/// Why a rate did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RateError {
    /// No `/` (or ` per `) between count and period.
    #[error("a rate is COUNT/PERIOD; e.g. 1600/10m, 5r/s or 100/1h30m")]
    NoSlash,
    /// The count is not a number.
    #[error("the count before `/` must be a number (an `r` suffix is fine); e.g. 300/min or 0.5/s")]
    BadCount,
    /// The count is zero.
    #[error(
        "the count must be more than zero (to refuse everything, that is not a rate); e.g. 1/10m"
    )]
    Zero,
    /// The period is not a duration (the one grammar of [`crate::duration`]; a bare unit
    /// is one of it: `/s`, `/min`).
    #[error("the period after `/` {0}")]
    BadPeriod(Box<DurationError>),
    /// Numbers out of range.
    #[error("the numbers are too large (count and window must stay below 2^40); e.g. 1600/10m")]
    TooLarge,
}

fn parse_decimal(s: &str) -> Option<(u64, u64)> {
    let s: String = s.chars().filter(|&c| c != '_').collect();
    if s.is_empty() {
        return None;
    }
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, f),
        None => (s.as_str(), ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac = frac.trim_end_matches('0');
    if frac.len() > 9 {
        return None;
    }
    let scale = 10u64.pow(frac.len() as u32);
    let i: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let f: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    let n = i.checked_mul(scale)?.checked_add(f)?;
    Some((n, scale))
}

/// Greatest common divisor (0 with 0 gives 0).
pub(crate) fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

fn gcd128(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

fn plural(unit: &str) -> String {
    match unit {
        "ms of server time" => unit.to_string(),
        u if u.ends_with('s') => u.to_string(),
        u => format!("{u}s"),
    }
}

const PERIODS: [(u64, &str, &str); 5] = [
    (86_400_000, "day", "d"),
    (3_600_000, "hour", "h"),
    (60_000, "minute", "m"),
    (1000, "second", "s"),
    (1, "millisecond", "ms"),
];

/// `600000` → `10 minutes`, `60000` → `minute`, `5000` → `5 seconds`.
pub(crate) fn describe_period(ms: u64) -> String {
    for (unit, name, _) in PERIODS {
        if ms.is_multiple_of(unit) {
            let n = ms / unit;
            return if n == 1 {
                name.to_string()
            } else {
                format!("{} {name}s", thousands(n))
            };
        }
    }
    unreachable!("every whole number of ms is a multiple of 1 ms")
}

/// `600000` → `10m`, `1000` → `s`, `1500` → `1500ms`.
pub(crate) fn compact_period(ms: u64) -> String {
    for (unit, _, short) in PERIODS {
        if ms.is_multiple_of(unit) {
            let n = ms / unit;
            return if n == 1 {
                short.to_string()
            } else {
                format!("{n}{short}")
            };
        }
    }
    unreachable!("every whole number of ms is a multiple of 1 ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_usual_forms() {
        let r = |s: &str| Rate::parse(s).unwrap();
        assert_eq!(
            (r("1600/10m").count(), r("1600/10m").window_ms()),
            (1600, 600_000)
        );
        assert_eq!(r("300/min").window_ms(), 60_000);
        assert_eq!(r("5r/s").count(), 5);
        assert_eq!(r("30r/m").nginx_milli(), 500);
        assert_eq!(r("1r/m").nginx_milli(), 16);
        assert_eq!(r("100/1h").window_ms(), 3_600_000);
        assert_eq!(r("0.2/s").reduced(), (1, 5000));
        assert_eq!(r("0.2/s").count(), 1);
        assert_eq!(r("2.5/s"), Rate::new(5, 2000).unwrap());
        assert_eq!(r("30 per minute"), Rate::new(30, 60_000).unwrap());
        assert_eq!(r("3/500ms").window_ms(), 500);
        assert_eq!(r("1_600/10m").count(), 1600);
        // After the slash, the one duration grammar every duration flag takes.
        assert_eq!(r("100/2hours").window_ms(), 7_200_000);
        assert_eq!(r("100/1w").window_ms(), 604_800_000);
        assert_eq!(r("100/1week").window_ms(), 604_800_000);
        assert_eq!(r("100/1h30m").window_ms(), 5_400_000);
        assert_eq!(r("1600/10minutes").window_ms(), 600_000);
    }

    #[test]
    fn rejects_nonsense() {
        assert_eq!(Rate::parse("1600"), Err(RateError::NoSlash));
        assert_eq!(Rate::parse("x/s"), Err(RateError::BadCount));
        assert_eq!(Rate::parse("0/s"), Err(RateError::Zero));
        assert!(matches!(
            Rate::parse("5/fortnight"),
            Err(RateError::BadPeriod(_))
        ));
        assert!(matches!(
            Rate::parse("5/0.5ms"),
            Err(RateError::BadPeriod(_))
        ));
        for bad in ["5/0s", "5/-1m", "5/1h30", "5/"] {
            assert!(
                matches!(Rate::parse(bad), Err(RateError::BadPeriod(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn displays_compactly_and_in_words() {
        let r = Rate::parse("1600/10m").unwrap();
        assert_eq!(r.to_string(), "1600/10m");
        assert_eq!(r.describe("request"), "1,600 requests per 10 minutes");
        assert_eq!(Rate::parse("0.2/s").unwrap().to_string(), "1/5s");
        assert_eq!(
            Rate::parse("5r/s").unwrap().describe("request"),
            "5 requests per second"
        );
        for s in ["1600/10m", "5/s", "1/5s", "3/500ms", "7/1500ms", "2/h"] {
            assert_eq!(Rate::parse(s).unwrap().to_string(), s);
        }
    }
}
