//! The one duration grammar of every duration flag (`heavy --by`, `availability
//! --expect-every`, the window of every `N/DURATION` rate, …).
//!
//! A duration is one or more `NUMBER UNIT` terms, added up: `90s`, `10m`, `1h30m`, `2h`,
//! `1d`, `1w`, `1.5h`, `1h 30m`. Units (case-insensitive):
//!
//! | unit | spellings |
//! |---|---|
//! | millisecond | `ms`, `msec`, `millisecond`, `milliseconds` (only where sub-second is allowed) |
//! | second | `s`, `sec`, `secs`, `second`, `seconds` |
//! | minute | `m`, `min`, `mins`, `minute`, `minutes` |
//! | hour | `h`, `hr`, `hrs`, `hour`, `hours` |
//! | day | `d`, `day`, `days` |
//! | week | `w`, `week`, `weeks` |
//!
//! A number may have a decimal point (`1.5h`) and `_` separators, as long as the total
//! is a whole number of the flag's [`Resolution`]. Rejected, with a [`DurationError`]
//! whose message gives a valid example: an empty text, a number without a unit (`5`,
//! `1h30`), an unknown unit, a negative or zero total, and more than [`MAX_MS`].
//!
//! Which flags take milliseconds: the windows of rates (`--limit`, `--capacity`,
//! `--per-prefix-limit`: limiters count in milliseconds, `3/500ms`) take
//! [`Resolution::Millis`]; widths and cadences (`--by`, `--expect-every`, `--bucket`,
//! `--min-gap`, `--merge-within`) take [`Resolution::Seconds`]: log timestamps are
//! mostly whole seconds, and a 1 ms bucket would only make millions of empty rows.
//!
//! [`Duration`]'s `Display` is the canonical short form (`1h30m`, `1w2d`, `1m30s`,
//! `500ms`), which parses back to the same value.

use std::fmt;
use std::str::FromStr;

/// The longest duration accepted: 2^40 ms (about 34.8 years), so that products of two
/// stay far from overflow (the same bound as a rate's window).
pub const MAX_MS: u64 = 1 << 40;

/// A positive length of time, in whole milliseconds, at most [`MAX_MS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration {
    ms: u64,
}

/// The finest unit a flag takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// Milliseconds (`500ms`, `1.5s`): rate windows.
    Millis,
    /// Whole seconds: bucket widths and cadences.
    Seconds,
}

/// Units, largest first: (ms, canonical suffix, spellings).
const UNITS: [(u64, &str, &[&str]); 6] = [
    (604_800_000, "w", &["w", "week", "weeks"]),
    (86_400_000, "d", &["d", "day", "days"]),
    (3_600_000, "h", &["h", "hr", "hrs", "hour", "hours"]),
    (60_000, "m", &["m", "min", "mins", "minute", "minutes"]),
    (1000, "s", &["s", "sec", "secs", "second", "seconds"]),
    (1, "ms", &["ms", "msec", "millisecond", "milliseconds"]),
];

/// What is wrong with a duration, with the text given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("'{text}' is not a duration: {problem}; e.g. {}", example(*.resolution))]
pub struct DurationError {
    /// The text as given.
    pub text: String,
    /// What is wrong.
    pub problem: DurationProblem,
    /// The resolution the flag takes (for the example).
    pub resolution: Resolution,
}

/// What is wrong with a duration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationProblem {
    /// Nothing given.
    #[error("it is empty")]
    Empty,
    /// A leading `-`.
    #[error("durations are positive")]
    Negative,
    /// The total is zero.
    #[error("a duration must be more than zero")]
    Zero,
    /// A unit with no number before it.
    #[error("`{0}` needs a number before it")]
    MissingNumber(String),
    /// A number with no unit after it.
    #[error("`{0}` needs a unit after it (s, m, h, d or w)")]
    MissingUnit(String),
    /// A unit not in the grammar.
    #[error("unknown unit `{0}` (known: ms, s, m, h, d, w and their long forms)")]
    UnknownUnit(String),
    /// Not a number.
    #[error("`{0}` is not a number")]
    BadNumber(String),
    /// Beyond [`MAX_MS`].
    #[error("it is too long (at most 2^40 ms, about 34 years)")]
    TooLarge,
    /// Finer than the flag's resolution.
    #[error("this option takes whole seconds")]
    SubSecond,
    /// A fraction of a millisecond.
    #[error("it is not a whole number of milliseconds")]
    SubMillisecond,
}

fn example(r: Resolution) -> &'static str {
    match r {
        Resolution::Millis => "90s, 10m, 1h30m, 2d, 1w or 500ms",
        Resolution::Seconds => "90s, 10m, 1h30m, 2d or 1w",
    }
}

impl Duration {
    /// A duration of `ms` milliseconds; `None` for 0 or more than [`MAX_MS`].
    pub fn from_ms(ms: u64) -> Option<Duration> {
        (ms > 0 && ms <= MAX_MS).then_some(Duration { ms })
    }

    /// The length in milliseconds.
    pub fn ms(self) -> u64 {
        self.ms
    }

    /// The length in milliseconds, as the `i64` timestamps are kept in.
    pub fn ms_i64(self) -> i64 {
        self.ms as i64
    }

    /// Parses a duration (see the module documentation).
    pub fn parse(text: &str, resolution: Resolution) -> Result<Duration, DurationError> {
        parse_terms(text, resolution, false)
    }

    /// Parses the period of a rate (`N/PERIOD`): a duration, or a bare unit meaning one
    /// of it (`/s`, `/min`, `/hour`).
    pub fn parse_period(text: &str, resolution: Resolution) -> Result<Duration, DurationError> {
        parse_terms(text, resolution, true)
    }
}

fn unit_ms(word: &str) -> Option<u64> {
    UNITS
        .iter()
        .find(|(_, _, names)| names.iter().any(|n| n.eq_ignore_ascii_case(word)))
        .map(|&(ms, _, _)| ms)
}

/// `digits[.digits]` with `_` separators → (value scaled by 10^frac, 10^frac).
fn parse_number(s: &str) -> Option<(u128, u128)> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let int: String = int.chars().filter(|&c| c != '_').collect();
    let frac: String = frac.chars().filter(|&c| c != '_').collect();
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || int.len() > 20
    {
        return None;
    }
    let frac = frac.trim_end_matches('0');
    if frac.len() > 9 {
        return None;
    }
    let scale = 10u128.pow(frac.len() as u32);
    let i: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let f: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    Some((i * scale + f, scale))
}

fn parse_terms(
    text: &str,
    resolution: Resolution,
    bare_unit: bool,
) -> Result<Duration, DurationError> {
    let err = |problem| DurationError {
        text: text.to_string(),
        problem,
        resolution,
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(err(DurationProblem::Empty));
    }
    if t.starts_with('-') {
        return Err(err(DurationProblem::Negative));
    }
    if bare_unit && t.bytes().all(|b| b.is_ascii_alphabetic()) {
        return match unit_ms(t) {
            Some(1) if resolution == Resolution::Seconds => Err(err(DurationProblem::SubSecond)),
            Some(ms) => Ok(Duration { ms }),
            None => Err(err(DurationProblem::UnknownUnit(t.to_string()))),
        };
    }
    let mut total: u128 = 0;
    let mut rest = t;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
            .unwrap_or(rest.len());
        let num = &rest[..num_end];
        let after = rest[num_end..].trim_start();
        let unit_end = after
            .find(|c: char| !c.is_alphabetic())
            .unwrap_or(after.len());
        let unit = &after[..unit_end];
        if num.is_empty() {
            return Err(err(if unit.is_empty() {
                DurationProblem::BadNumber(after.chars().take(20).collect())
            } else {
                DurationProblem::MissingNumber(unit.to_string())
            }));
        }
        if unit.is_empty() {
            return Err(err(DurationProblem::MissingUnit(num.to_string())));
        }
        let (n, scale) =
            parse_number(num).ok_or_else(|| err(DurationProblem::BadNumber(num.to_string())))?;
        let u = unit_ms(unit).ok_or_else(|| err(DurationProblem::UnknownUnit(unit.to_string())))?;
        if u == 1 && resolution == Resolution::Seconds {
            return Err(err(DurationProblem::SubSecond));
        }
        let v = n * u as u128;
        if !v.is_multiple_of(scale) {
            return Err(err(DurationProblem::SubMillisecond));
        }
        total += v / scale;
        if total > MAX_MS as u128 {
            return Err(err(DurationProblem::TooLarge));
        }
        rest = after[unit_end..].trim_start();
    }
    if total == 0 {
        return Err(err(DurationProblem::Zero));
    }
    if resolution == Resolution::Seconds && !total.is_multiple_of(1000) {
        return Err(err(DurationProblem::SubSecond));
    }
    Ok(Duration { ms: total as u64 })
}

impl FromStr for Duration {
    type Err = DurationError;

    /// Parses with [`Resolution::Millis`].
    fn from_str(s: &str) -> Result<Duration, DurationError> {
        Duration::parse(s, Resolution::Millis)
    }
}

impl fmt::Display for Duration {
    /// The canonical short form: the largest units first, each at most once, no zero
    /// terms (`1h30m`, `1w2d`, `1m30s`, `1s500ms`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.ms;
        for (unit, suffix, _) in UNITS {
            if rest >= unit {
                write!(f, "{}{suffix}", rest / unit)?;
                rest %= unit;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(s: &str) -> Result<u64, DurationProblem> {
        Duration::parse(s, Resolution::Millis)
            .map(Duration::ms)
            .map_err(|e| e.problem)
    }

    fn secs(s: &str) -> Result<u64, DurationProblem> {
        Duration::parse(s, Resolution::Seconds)
            .map(Duration::ms)
            .map_err(|e| e.problem)
    }

    #[test]
    fn accepts_the_grammar() {
        for (s, want) in [
            ("90s", 90_000),
            ("10m", 600_000),
            ("1h30m", 5_400_000),
            ("2h", 7_200_000),
            ("1d", 86_400_000),
            ("1w", 604_800_000),
            ("2hours", 7_200_000),
            ("1week", 604_800_000),
            ("3 weeks", 3 * 604_800_000),
            ("1h 30m", 5_400_000),
            ("1.5h", 5_400_000),
            ("30 seconds", 30_000),
            ("5mins", 300_000),
            ("1H", 3_600_000),
            ("1_000s", 1_000_000),
            ("2days", 172_800_000),
            ("1hr", 3_600_000),
        ] {
            assert_eq!(secs(s), Ok(want), "{s}");
            assert_eq!(ms(s), Ok(want), "{s}");
        }
        assert_eq!(ms("500ms"), Ok(500));
        assert_eq!(ms("1.5s"), Ok(1500));
        assert_eq!(ms("1s500ms"), Ok(1500));
    }

    #[test]
    fn rejects_with_a_reason_and_an_example() {
        use DurationProblem::*;
        assert_eq!(secs(""), Err(Empty));
        assert_eq!(secs("  "), Err(Empty));
        assert_eq!(secs("0"), Err(MissingUnit("0".into())));
        assert_eq!(secs("0s"), Err(Zero));
        assert_eq!(secs("0h0m"), Err(Zero));
        assert_eq!(secs("-5m"), Err(Negative));
        assert_eq!(secs("5"), Err(MissingUnit("5".into())));
        assert_eq!(secs("1h30"), Err(MissingUnit("30".into())));
        assert_eq!(secs("m"), Err(MissingNumber("m".into())));
        assert_eq!(secs("3parsecs"), Err(UnknownUnit("parsecs".into())));
        assert_eq!(secs("5y"), Err(UnknownUnit("y".into())));
        assert_eq!(secs("500ms"), Err(SubSecond));
        assert_eq!(secs("1.5s"), Err(SubSecond));
        assert_eq!(ms("0.0001ms"), Err(SubMillisecond));
        assert_eq!(secs("99999999999999999999w"), Err(TooLarge));
        assert_eq!(
            secs("999999999999999999999999w"),
            Err(BadNumber("999999999999999999999999".into()))
        );
        assert_eq!(secs("1e3s"), Err(UnknownUnit("e".into())));
        assert_eq!(secs("+5m"), Err(BadNumber("+5m".into())));
        assert_eq!(secs("1..5h"), Err(BadNumber("1..5".into())));
        let e = Duration::parse("soon", Resolution::Seconds).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("not a duration") && msg.contains("e.g. 90s"),
            "{msg}"
        );
    }

    #[test]
    fn bare_units_only_in_periods() {
        let p = |s| Duration::parse_period(s, Resolution::Millis).map(Duration::ms);
        assert_eq!(p("s"), Ok(1000));
        assert_eq!(p("min"), Ok(60_000));
        assert_eq!(p("hour"), Ok(3_600_000));
        assert_eq!(p("10m"), Ok(600_000));
        assert!(p("fortnight").is_err());
        assert!(Duration::parse("h", Resolution::Millis).is_err());
        assert!(Duration::parse_period("ms", Resolution::Seconds).is_err());
    }

    #[test]
    fn displays_canonically() {
        for (ms, s) in [
            (90_000, "1m30s"),
            (5_400_000, "1h30m"),
            (604_800_000, "1w"),
            (8 * 86_400_000, "1w1d"),
            (1500, "1s500ms"),
            (1, "1ms"),
            (3_600_000, "1h"),
        ] {
            assert_eq!(Duration::from_ms(ms).unwrap().to_string(), s);
        }
        assert_eq!(Duration::from_ms(0), None);
        assert_eq!(Duration::from_ms(MAX_MS + 1), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, rng_seed: proptest::test_runner::RngSeed::Fixed(10), ..ProptestConfig::default() })]

        #[test]
        fn display_parses_back(ms in 1u64..=MAX_MS) {
            let d = Duration::from_ms(ms).unwrap();
            let text = d.to_string();
            prop_assert_eq!(Duration::parse(&text, Resolution::Millis), Ok(d));
            if ms % 1000 == 0 {
                prop_assert_eq!(Duration::parse(&text, Resolution::Seconds), Ok(d));
                prop_assert!(!text.contains("ms"));
            }
        }

        #[test]
        fn never_panics(s in "[0-9a-zA-Z._ +-]{0,24}") {
            if let Ok(d) = Duration::parse(&s, Resolution::Millis) {
                prop_assert!(d.ms() > 0 && d.ms() <= MAX_MS);
            }
        }
    }
}
