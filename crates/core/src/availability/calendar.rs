//! Report periods: labelled half-open UTC intervals. Time zones with daylight saving
//! are resolved by the caller (the CLI, with the tz database) through a [`Calendar`],
//! asked only for the periods the data needs (so 130 years between two lines cost two
//! periods and one count, not 1,560 months); this module has the calendar of a fixed
//! UTC offset (UTC by default) and of a given list, labels periods, and checks that a
//! list covers a span.

use serde::Serialize;

use crate::time::{civil_from_days, days_from_civil, days_in_month};

/// The length of a report period.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum By {
    /// Calendar months.
    Month,
    /// ISO weeks, Monday to Monday.
    Week,
    /// Calendar days.
    Day,
    /// Hours.
    Hour,
}

impl By {
    /// The name used in headers (`month`, `week`, …).
    pub fn name(self) -> &'static str {
        match self {
            By::Month => "month",
            By::Week => "week",
            By::Day => "day",
            By::Hour => "hour",
        }
    }
}

/// One report period: `[start_ms, end_ms)` in UTC ms, with its local label.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Period {
    /// `2025-06`, `2025-W23`, `2025-06-01`, `2025-06-01 13:00`.
    pub label: String,
    /// First instant, UTC ms.
    pub start_ms: i64,
    /// First instant of the next period, UTC ms.
    pub end_ms: i64,
}

/// Why a calendar could not answer, or answered inconsistently.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CalendarError {
    /// No period contains the instant (UTC ms).
    #[error("no period contains {0} ms")]
    NoPeriodAt(i64),
    /// No listed period contains the instant (UTC ms).
    #[error("no listed period contains {0} ms")]
    NotListed(i64),
    /// No listed period starts at the instant (UTC ms).
    #[error("no listed period starts at {0} ms")]
    NoListedStart(i64),
    /// The second instant comes before the first.
    #[error("no periods from {from_ms} to {to_ms} ms")]
    Backwards {
        /// The first instant, UTC ms.
        from_ms: i64,
        /// The second instant, UTC ms.
        to_ms: i64,
    },
    /// The time zone cannot place the instant (UTC ms).
    #[error("time {0} ms is out of range")]
    OutOfRange(i64),
    /// An empty list of periods.
    #[error("no periods")]
    NoPeriods,
    /// The listed periods do not cover the span.
    #[error("periods [{first_ms}, {last_ms}) do not cover the span [{start_ms}, {end_ms})")]
    NotCovering {
        /// Start of the first period.
        first_ms: i64,
        /// End of the last period.
        last_ms: i64,
        /// Start of the span.
        start_ms: i64,
        /// End of the span.
        end_ms: i64,
    },
    /// A period that ends where it starts, or before.
    #[error("period {0} is empty")]
    EmptyPeriod(String),
    /// Two periods with a hole or an overlap between them.
    #[error("periods {0} and {1} are not contiguous")]
    NotContiguous(String, String),
    /// Periods that contradict each other (a calendar's bug), in words.
    #[error("{0}")]
    Inconsistent(String),
}

/// Report periods produced on demand.
///
/// The computation asks for the period containing an instant, and how many periods lie
/// between two period starts; it never walks the calendar over a span without data.
pub trait Calendar {
    /// The period containing `ts_ms` (UTC ms): `start_ms <= ts_ms < end_ms`.
    fn period_at(&self, ts_ms: i64) -> Result<Period, CalendarError>;

    /// How many periods start in `[from_ms, to_ms)`, both period starts.
    fn count_between(&self, from_ms: i64, to_ms: i64) -> Result<u64, CalendarError>;
}

/// Whole months from local date `(y1, m1)` to `(y2, m2)`.
pub fn months_between(y1: i64, m1: u32, y2: i64, m2: u32) -> i64 {
    (y2 * 12 + i64::from(m2)) - (y1 * 12 + i64::from(m1))
}

/// The calendar of a fixed UTC offset (`offset_s` seconds east).
#[derive(Clone, Copy, Debug)]
pub struct FixedOffset {
    /// Period length.
    pub by: By,
    /// Seconds east of UTC.
    pub offset_s: i32,
}

impl Calendar for FixedOffset {
    fn period_at(&self, ts_ms: i64) -> Result<Period, CalendarError> {
        fixed_offset_periods(self.by, self.offset_s, ts_ms, ts_ms.saturating_add(1))
            .pop()
            .ok_or(CalendarError::NoPeriodAt(ts_ms))
    }

    fn count_between(&self, from_ms: i64, to_ms: i64) -> Result<u64, CalendarError> {
        let off = i64::from(self.offset_s) * 1000;
        let day = |ms: i64| (ms + off).div_euclid(86_400_000);
        let n = match self.by {
            By::Hour => (to_ms - from_ms) / 3_600_000,
            By::Day => day(to_ms) - day(from_ms),
            By::Week => (day(to_ms) - day(from_ms)) / 7,
            By::Month => {
                let (y1, m1, _) = civil_from_days(day(from_ms));
                let (y2, m2, _) = civil_from_days(day(to_ms));
                months_between(y1, m1, y2, m2)
            }
        };
        u64::try_from(n).map_err(|_| CalendarError::Backwards { from_ms, to_ms })
    }
}

/// The calendar of a list of contiguous periods (see [`check_cover`]).
#[derive(Clone, Copy, Debug)]
pub struct Listed<'a>(pub &'a [Period]);

impl Listed<'_> {
    fn index_of_start(&self, ms: i64) -> Result<usize, CalendarError> {
        let i = self.0.partition_point(|p| p.start_ms < ms);
        match self.0.get(i) {
            Some(p) if p.start_ms == ms => Ok(i),
            None if self.0.last().is_some_and(|p| p.end_ms == ms) => Ok(i),
            _ => Err(CalendarError::NoListedStart(ms)),
        }
    }
}

impl Calendar for Listed<'_> {
    fn period_at(&self, ts_ms: i64) -> Result<Period, CalendarError> {
        let i = self.0.partition_point(|p| p.end_ms <= ts_ms);
        match self.0.get(i) {
            Some(p) if p.start_ms <= ts_ms => Ok(p.clone()),
            _ => Err(CalendarError::NotListed(ts_ms)),
        }
    }

    fn count_between(&self, from_ms: i64, to_ms: i64) -> Result<u64, CalendarError> {
        let (a, b) = (self.index_of_start(from_ms)?, self.index_of_start(to_ms)?);
        Ok(b.saturating_sub(a) as u64)
    }
}

/// The label of the period of kind `by` that starts on local date `y-m-d` at hour `h`.
pub fn label(by: By, y: i64, m: u32, d: u32, h: u32, min: u32) -> String {
    match by {
        By::Month => format!("{y:04}-{m:02}"),
        By::Week => {
            let (iy, w) = iso_week(days_from_civil(y, m, d));
            format!("{iy:04}-W{w:02}")
        }
        By::Day => format!("{y:04}-{m:02}-{d:02}"),
        By::Hour => format!("{y:04}-{m:02}-{d:02} {h:02}:{min:02}"),
    }
}

/// ISO year and week of a day number.
pub fn iso_week(day: i64) -> (i64, u32) {
    let wd = (day + 3).rem_euclid(7); // 0 = Monday
    let thursday = day - wd + 3;
    let (y, _, _) = civil_from_days(thursday);
    let week = (thursday - days_from_civil(y, 1, 1)) / 7 + 1;
    (y, week as u32)
}

/// Periods of kind `by` in a fixed UTC offset (`offset_s` seconds east) covering
/// `[start_ms, end_ms)`: from the period containing `start_ms` to the one containing
/// `end_ms - 1`.
pub fn fixed_offset_periods(by: By, offset_s: i32, start_ms: i64, end_ms: i64) -> Vec<Period> {
    let off = offset_s as i64 * 1000;
    let mut out = Vec::new();
    if end_ms <= start_ms {
        return out;
    }
    let local = start_ms + off;
    let day = local.div_euclid(86_400_000);
    let (mut y, mut m, mut d) = civil_from_days(day);
    let mut h = 0u32;
    match by {
        By::Month => d = 1,
        By::Week => {
            let wd = (day + 3).rem_euclid(7);
            (y, m, d) = civil_from_days(day - wd);
        }
        By::Day => {}
        By::Hour => h = (local.rem_euclid(86_400_000) / 3_600_000) as u32,
    }
    loop {
        let s = (days_from_civil(y, m, d) * 86_400_000 + h as i64 * 3_600_000) - off;
        if s >= end_ms {
            break;
        }
        let lbl = label(by, y, m, d, h, 0);
        let (ny, nm, nd, nh) = match by {
            By::Month => {
                if m == 12 {
                    (y + 1, 1, 1, 0)
                } else {
                    (y, m + 1, 1, 0)
                }
            }
            By::Week => {
                let (a, b, c) = civil_from_days(days_from_civil(y, m, d) + 7);
                (a, b, c, 0)
            }
            By::Day => {
                let (a, b, c) = civil_from_days(days_from_civil(y, m, d) + 1);
                (a, b, c, 0)
            }
            By::Hour => {
                if h == 23 {
                    let (a, b, c) = civil_from_days(days_from_civil(y, m, d) + 1);
                    (a, b, c, 0)
                } else {
                    (y, m, d, h + 1)
                }
            }
        };
        let e = (days_from_civil(ny, nm, nd) * 86_400_000 + nh as i64 * 3_600_000) - off;
        out.push(Period {
            label: lbl,
            start_ms: s,
            end_ms: e,
        });
        (y, m, d, h) = (ny, nm, nd, nh);
        debug_assert!(d <= days_in_month(y, m));
    }
    out
}

/// Checks that `periods` are non-empty, contiguous, increasing and cover
/// `[start_ms, end_ms)`.
pub fn check_cover(periods: &[Period], start_ms: i64, end_ms: i64) -> Result<(), CalendarError> {
    let (Some(first), Some(last)) = (periods.first(), periods.last()) else {
        return Err(CalendarError::NoPeriods);
    };
    if first.start_ms > start_ms || last.end_ms < end_ms {
        return Err(CalendarError::NotCovering {
            first_ms: first.start_ms,
            last_ms: last.end_ms,
            start_ms,
            end_ms,
        });
    }
    for p in periods {
        if p.end_ms <= p.start_ms {
            return Err(CalendarError::EmptyPeriod(p.label.clone()));
        }
    }
    for w in periods.windows(2) {
        if w[0].end_ms != w[1].start_ms {
            return Err(CalendarError::NotContiguous(
                w[0].label.clone(),
                w[1].label.clone(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(y: i64, m: u32, d: u32) -> i64 {
        days_from_civil(y, m, d) * 86_400_000
    }

    #[test]
    fn months_in_a_fixed_offset() {
        // Asia/Seoul is +09:00 all year.
        let p = fixed_offset_periods(By::Month, 9 * 3600, ms(2025, 6, 1), ms(2025, 8, 1));
        let labels: Vec<&str> = p.iter().map(|p| p.label.as_str()).collect();
        // 2025-06-01T00:00Z is 09:00 in Seoul; 2025-08-01T00:00Z is in August there.
        assert_eq!(labels, ["2025-06", "2025-07", "2025-08"]);
        assert_eq!(p[0].start_ms, ms(2025, 6, 1) - 9 * 3_600_000);
        assert_eq!(p[0].end_ms - p[0].start_ms, 30 * 86_400_000);
        check_cover(&p, ms(2025, 6, 1), ms(2025, 8, 1)).unwrap();
    }

    #[test]
    fn weeks_days_hours() {
        // 2025-06-04 is a Wednesday in ISO week 23.
        let p = fixed_offset_periods(By::Week, 0, ms(2025, 6, 4), ms(2025, 6, 10));
        assert_eq!(p[0].label, "2025-W23");
        assert_eq!(p[0].start_ms, ms(2025, 6, 2));
        assert_eq!(p.len(), 2);
        assert_eq!(iso_week(days_from_civil(2021, 1, 3)), (2020, 53));
        assert_eq!(iso_week(days_from_civil(2024, 12, 30)), (2025, 1));
        let p = fixed_offset_periods(By::Day, -4 * 3600, ms(2004, 8, 12), ms(2004, 8, 13));
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].label, "2004-08-11");
        let p = fixed_offset_periods(By::Hour, 0, ms(2025, 1, 1) - 1, ms(2025, 1, 1) + 3_600_000);
        assert_eq!(p[0].label, "2024-12-31 23:00");
        assert_eq!(p[1].label, "2025-01-01 00:00");
        assert_eq!(p.len(), 2);
    }

    #[test]
    fn calendars_count_without_walking() {
        let cal = FixedOffset {
            by: By::Month,
            offset_s: 9 * 3600,
        };
        let a = cal.period_at(ms(1971, 1, 15)).unwrap();
        assert_eq!(a.label, "1971-01");
        let b = cal.period_at(ms(2099, 12, 31)).unwrap();
        assert_eq!(b.label, "2099-12");
        assert_eq!(cal.count_between(a.start_ms, b.start_ms), Ok(1547));
        assert_eq!(cal.count_between(a.start_ms, a.end_ms), Ok(1));
        for by in [By::Hour, By::Day, By::Week, By::Month] {
            let cal = FixedOffset {
                by,
                offset_s: -(3 * 3600 + 1800),
            };
            let (s, e) = (ms(2024, 2, 20), ms(2024, 4, 3));
            let list = fixed_offset_periods(by, cal.offset_s, s, e);
            let (first, last) = (&list[0], list.last().unwrap());
            let n = list.len() as u64;
            assert_eq!(
                cal.count_between(first.start_ms, last.end_ms),
                Ok(n),
                "{by:?}"
            );
            let listed = Listed(&list);
            assert_eq!(listed.count_between(first.start_ms, last.end_ms), Ok(n));
            assert_eq!(
                listed.period_at(s + 1).unwrap(),
                cal.period_at(s + 1).unwrap()
            );
            assert!(listed.period_at(last.end_ms).is_err());
        }
    }

    #[test]
    fn cover_errors() {
        let p = fixed_offset_periods(By::Day, 0, ms(2025, 1, 1), ms(2025, 1, 3));
        assert!(check_cover(&p, ms(2024, 12, 31), ms(2025, 1, 3)).is_err());
        assert!(check_cover(&[], 0, 1).is_err());
        let mut q = p.clone();
        q.remove(0);
        q.insert(
            0,
            Period {
                label: "x".into(),
                start_ms: ms(2025, 1, 1),
                end_ms: ms(2025, 1, 1) + 5,
            },
        );
        assert!(check_cover(&q, ms(2025, 1, 1), ms(2025, 1, 3)).is_err());
    }
}
