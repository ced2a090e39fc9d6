//! A report's clock: the `--tz` zone (UTC, a fixed offset or an IANA zone) that buckets
//! are aligned on and `--since`/`--until` are read in.

use anyhow::bail;
use chrono::{Datelike, NaiveDate, NaiveDateTime, Offset, TimeZone};

use super::error::usage_error;

/// A report's clock: UTC, a fixed offset, or an IANA zone (offsets cached per 15 minutes).
#[derive(Clone)]
pub struct Clock {
    zone: Zone,
    name: String,
    cache: std::cell::Cell<(i64, i64)>,
}

#[derive(Clone)]
enum Zone {
    Fixed(i64),
    Tz(chrono_tz::Tz),
}

const SLOT_MS: i64 = 15 * 60_000;

/// A [`Clock`]'s zone, shared between threads ([`Clock::shared`]).
#[derive(Clone)]
pub struct ClockZone(Zone);

impl ClockZone {
    /// A clock of this zone (unnamed: for [`Clock::local`]).
    pub fn clock(&self) -> Clock {
        Clock {
            zone: self.0.clone(),
            name: String::new(),
            cache: std::cell::Cell::new((i64::MIN, 0)),
        }
    }
}

impl Clock {
    /// Parses `UTC`, `+09:00`/`-0330`, or an IANA name.
    pub fn parse(s: &str) -> anyhow::Result<Clock> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("utc") || t.eq_ignore_ascii_case("z") {
            return Ok(Clock::fixed(0, "UTC"));
        }
        if let Some(secs) = logscope_core::time::parse_offset(t.replace(':', "").as_bytes()) {
            return Ok(Clock::fixed(i64::from(secs) * 1000, t));
        }
        let tz: chrono_tz::Tz = t.parse().map_err(|_| {
            usage_error(format!(
                "--tz: {t:?} is not a time zone (e.g. UTC, Asia/Seoul, Europe/Berlin or +09:00)"
            ))
        })?;
        Ok(Clock {
            zone: Zone::Tz(tz),
            name: tz.name().to_string(),
            cache: std::cell::Cell::new((i64::MIN, 0)),
        })
    }

    fn fixed(offset_ms: i64, name: &str) -> Clock {
        Clock {
            zone: Zone::Fixed(offset_ms),
            name: name.to_string(),
            cache: std::cell::Cell::new((i64::MIN, 0)),
        }
    }

    /// The clock's zone without its cache, to give to the threads that decode the
    /// dataset ([`ClockZone::clock`] makes each its own clock).
    pub fn shared(&self) -> ClockZone {
        ClockZone(self.zone.clone())
    }

    /// The zone's name as given (`UTC`, `Asia/Seoul`, `+09:00`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Local wall-clock ms for a UTC instant.
    #[inline]
    pub fn local(&self, utc_ms: i64) -> i64 {
        match &self.zone {
            Zone::Fixed(o) => utc_ms + o,
            Zone::Tz(tz) => {
                let slot = utc_ms.div_euclid(SLOT_MS);
                let (s, o) = self.cache.get();
                if s == slot {
                    return utc_ms + o;
                }
                let o = chrono::DateTime::from_timestamp_millis(slot * SLOT_MS)
                    .map(|t| {
                        i64::from(
                            tz.offset_from_utc_datetime(&t.naive_utc())
                                .fix()
                                .local_minus_utc(),
                        ) * 1000
                    })
                    .unwrap_or(0);
                self.cache.set((slot, o));
                utc_ms + o
            }
        }
    }

    /// The first instant at or after local time `naive`: the earlier of two when the
    /// clock was turned back, the first valid minute after a skipped hour (a midnight
    /// that does not exist starts the day at the first minute that does).
    fn utc_of_local(&self, naive: NaiveDateTime) -> anyhow::Result<i64> {
        match &self.zone {
            Zone::Fixed(o) => Ok(naive.and_utc().timestamp_millis() - o),
            Zone::Tz(tz) => resolve_local(*tz, naive)
                .ok_or_else(|| anyhow::anyhow!("{naive} does not exist in {}", self.name)),
        }
    }

    /// The zone for chrono, for code that needs calendar arithmetic (availability's
    /// periods).
    pub fn zone(&self) -> ChronoZone {
        match &self.zone {
            Zone::Fixed(o) => ChronoZone::Fixed(
                chrono::FixedOffset::east_opt((o / 1000) as i32)
                    .unwrap_or_else(|| chrono::FixedOffset::east_opt(0).expect("UTC")),
            ),
            Zone::Tz(tz) => ChronoZone::Tz(*tz),
        }
    }

    /// Parses a `--since`/`--until` value: a year (`2026`), a month (`2026-09`), a date
    /// (`2026-09-25`), a local time (`2026-09-25T14:00`, `2026-09-25 14:00:30`), all in
    /// this zone, or RFC 3339 with an offset. `end`: a year, month or date means its end
    /// (for `--until`, which is exclusive: the whole of it is included).
    pub fn parse_time(&self, s: &str, end: bool) -> anyhow::Result<i64> {
        let t = s.trim();
        if let Ok(d) = chrono::DateTime::parse_from_rfc3339(t) {
            return Ok(d.timestamp_millis());
        }
        let calendar = if t.len() == 4 && t.bytes().all(|b| b.is_ascii_digit()) {
            t.parse::<i32>().ok().and_then(|y| {
                let a = NaiveDate::from_ymd_opt(y, 1, 1)?;
                Some((a, NaiveDate::from_ymd_opt(y + 1, 1, 1)?))
            })
        } else if let Ok(a) = NaiveDate::parse_from_str(&format!("{t}-01"), "%Y-%m-%d")
            && t.len() <= 7
        {
            let (y, m) = if a.month() == 12 {
                (a.year() + 1, 1)
            } else {
                (a.year(), a.month() + 1)
            };
            NaiveDate::from_ymd_opt(y, m, 1).map(|z| (a, z))
        } else if let Ok(a) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
            a.succ_opt().map(|z| (a, z))
        } else {
            None
        };
        if let Some((a, z)) = calendar {
            let d = if end { z } else { a };
            return self.utc_of_local(d.and_hms_opt(0, 0, 0).expect("midnight"));
        }
        for f in [
            "%Y-%m-%dT%H:%M:%S%.f",
            "%Y-%m-%d %H:%M:%S%.f",
            "%Y-%m-%dT%H:%M",
            "%Y-%m-%d %H:%M",
        ] {
            if let Ok(n) = NaiveDateTime::parse_from_str(t, f) {
                return self.utc_of_local(n);
            }
        }
        bail!(
            "cannot read {t:?} as a time (e.g. 2026-09, 2026-09-25, 2026-09-25T14:00, or RFC 3339 like 2026-09-25T05:00:00Z)"
        )
    }
}

/// The first instant (UTC ms) at or after local time `naive` in `tz`: the earlier of
/// two when the clock was turned back, the first valid minute after a skipped hour when
/// it was turned forward.
pub fn resolve_local<Z: TimeZone>(tz: Z, naive: NaiveDateTime) -> Option<i64> {
    for step in 0..=24 * 60 {
        let n = naive + chrono::Duration::minutes(step);
        match tz.from_local_datetime(&n) {
            chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => {
                return Some(t.timestamp_millis());
            }
            chrono::LocalResult::None => {}
        }
    }
    None
}

/// A [`Clock`]'s zone as chrono sees it.
#[derive(Clone, Copy, Debug)]
pub enum ChronoZone {
    /// A fixed offset (`+09:00`, UTC).
    Fixed(chrono::FixedOffset),
    /// An IANA zone.
    Tz(chrono_tz::Tz),
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_and_times() {
        let seoul = Clock::parse("Asia/Seoul").unwrap();
        let utc = Clock::parse("UTC").unwrap();
        let t = utc.parse_time("2026-09-25T05:00:00Z", false).unwrap();
        assert_eq!(seoul.parse_time("2026-09-25 14:00", false).unwrap(), t);
        assert_eq!(seoul.local(t) - t, 9 * 3_600_000);
        let day = seoul.parse_time("2026-09-25", false).unwrap();
        let end = seoul.parse_time("2026-09-25", true).unwrap();
        assert_eq!(end - day, 86_400_000);
        let fixed = Clock::parse("+03:30").unwrap();
        assert_eq!(fixed.local(0), 3 * 3_600_000 + 1_800_000);
        assert!(Clock::parse("Mars/Olympus").is_err());
        assert!(utc.parse_time("yesterday", false).is_err());
        // Berlin switches offsets: the cache follows.
        let berlin = Clock::parse("Europe/Berlin").unwrap();
        let winter = utc.parse_time("2026-01-15T12:00:00Z", false).unwrap();
        let summer = utc.parse_time("2026-07-15T12:00:00Z", false).unwrap();
        assert_eq!(berlin.local(winter) - winter, 3_600_000);
        assert_eq!(berlin.local(summer) - summer, 7_200_000);
    }

    #[test]
    fn instants() {
        let ms = |s: &str| {
            chrono::DateTime::parse_from_rfc3339(s)
                .unwrap()
                .timestamp_millis()
        };
        let seoul = Clock::parse("Asia/Seoul").unwrap();
        let t = |s: &str, end: bool| seoul.parse_time(s, end).unwrap();
        assert_eq!(t("2025-06", false), ms("2025-05-31T15:00:00Z"));
        assert_eq!(t("2025-06", true), ms("2025-06-30T15:00:00Z"));
        assert_eq!(t("2025-12", true), ms("2025-12-31T15:00:00Z"));
        assert_eq!(t("2025", false), ms("2024-12-31T15:00:00Z"));
        assert_eq!(t("2025", true), ms("2025-12-31T15:00:00Z"));
        assert_eq!(t("2025-06-02", false), ms("2025-06-01T15:00:00Z"));
        assert_eq!(t("2025-06-02", true), ms("2025-06-02T15:00:00Z"));
        assert_eq!(t("2025-06-02T01:30", true), ms("2025-06-01T16:30:00Z"));
        assert_eq!(t("2025-06-02 01:30:15", false), ms("2025-06-01T16:30:15Z"));
        assert_eq!(t("2025-06-02T01:30:00Z", true), ms("2025-06-02T01:30:00Z"));
        assert!(seoul.parse_time("June", false).is_err());
        assert!(seoul.parse_time("2025-13", false).is_err());
        assert!(seoul.parse_time("2025-06-02-01", false).is_err());
        // A skipped local time resolves to the first valid minute after it.
        let berlin = Clock::parse("Europe/Berlin").unwrap();
        assert_eq!(
            berlin.parse_time("2025-03-30T02:30", false).unwrap(),
            ms("2025-03-30T01:00:00Z")
        );
        let e = Clock::parse("Mars/Olympus").err().unwrap();
        assert_eq!(crate::cli::exit_code_of(&e), 2);
        assert!(format!("{e}").contains("--tz") && format!("{e}").contains("e.g."));
    }
}
