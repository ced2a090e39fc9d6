//! Calendar arithmetic and timestamp parsing/formatting without chrono: days from a
//! civil date, a cached CLF (`10/Oct/2000:13:55:36 -0700`) parser, RFC 3339 / ISO 8601
//! parsing and RFC 3339 formatting. Everything is pure integer arithmetic on bytes.

/// Seconds in a day.
pub const SECS_PER_DAY: i64 = 86_400;

/// Start of the window of plausible arrival times, 1970-01-01T00:00:00Z, in UTC ms.
pub const TS_MIN_MS: i64 = 0;

/// End (exclusive) of the window of plausible arrival times, 2100-01-01T00:00:00Z, in
/// UTC ms. A line stamped outside `[TS_MIN_MS, TS_END_MS)` is a bad line
/// ([`crate::parse::ParseError::TimestampOutOfRange`]): one absurd date must not make
/// every period-based report span millennia.
pub const TS_END_MS: i64 = 4_102_444_800_000;

/// Longest request time accepted, in microseconds: the length of the window (about 130
/// years). A longer one is a bad line (`bad request time`), so that request times fit
/// any signed 64-bit sum or difference downstream.
pub const MAX_REQUEST_TIME_US: u64 = TS_END_MS as u64 * 1000;

/// An arrival instant in microseconds (wide, so that no sum or difference of parsed
/// values can overflow) as UTC milliseconds, if it lies in the window
/// `[TS_MIN_MS, TS_END_MS)`.
#[inline]
pub fn arrival_ms(us: i128) -> Option<i64> {
    // Every real timestamp fits in 64 bits, where the division is a multiplication
    // (an `i128` one is a library call: 1 % of the parse).
    let ms = match i64::try_from(us) {
        Ok(us) => i128::from(us.div_euclid(1000)),
        Err(_) => us.div_euclid(1000),
    };
    if (TS_MIN_MS as i128..TS_END_MS as i128).contains(&ms) {
        Some(ms as i64)
    } else {
        None
    }
}

/// Monday 1970-01-05 00:00 in ms since the epoch (1970-01-01 was a Thursday): the
/// origin every report bucket and capacity window is counted from, so that weekly
/// buckets start on Mondays (ISO 8601 weeks).
pub const MONDAY_EPOCH_MS: i64 = 4 * 86_400_000;

/// The start of the bucket `width_ms` wide that holds `local_ms` (wall-clock ms on the
/// report's clock): the largest `MONDAY_EPOCH_MS + k × width_ms` (k any integer) at most
/// `local_ms`. For every width that divides a day this is `local_ms` rounded down to a
/// multiple of the width, as epoch alignment gives (four days are a multiple of it);
/// `1w` and `2w` buckets start on Mondays at 00:00. A width below 1 counts as 1. The
/// one alignment of report buckets and capacity windows: `heavy`, `timeline`,
/// `capacity`, `report`, `replay`'s over-time buckets and their SQL twins
/// ([`crate::sqlgen`]). Rate limiters keep their own servers' clocks.
#[inline]
pub fn align(local_ms: i64, width_ms: i64) -> i64 {
    let w = width_ms.max(1);
    if local_ms > i64::MIN / 2 && w < i64::MAX / 2 {
        local_ms - (local_ms - MONDAY_EPOCH_MS).rem_euclid(w)
    } else {
        // Far from any real time: exact in 128 bits, kept within i64.
        let (t, w) = (i128::from(local_ms), i128::from(w));
        let a = t - (t - i128::from(MONDAY_EPOCH_MS)).rem_euclid(w);
        a.max(i128::from(i64::MIN)) as i64
    }
}

/// Days since 1970-01-01 of the proleptic Gregorian date `y-m-d` (`m` 1..=12, `d` 1..=31).
///
/// Howard Hinnant's `days_from_civil`; valid for any year that fits.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400; // [0, 399]
    let m = m as i64;
    let mp = if m > 2 { m - 3 } else { m + 9 }; // [0, 11]
    let doy = (153 * mp + 2) / 5 + d as i64 - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

/// Inverse of [`days_from_civil`]: `(year, month, day)` of a day number.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Whether `y` is a Gregorian leap year.
pub fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// Number of days in month `m` (1..=12) of year `y`.
pub fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(y) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Month number (1..=12) of an English three-letter abbreviation, any case.
#[inline]
pub fn month_from_abbr(b: &[u8]) -> Option<u32> {
    if b.len() != 3 {
        return None;
    }
    // Fold to lowercase and pack into one integer.
    let k = ((b[0] | 0x20) as u32) << 16 | ((b[1] | 0x20) as u32) << 8 | (b[2] | 0x20) as u32;
    const fn p(s: &[u8; 3]) -> u32 {
        (s[0] as u32) << 16 | (s[1] as u32) << 8 | s[2] as u32
    }
    Some(match k {
        k if k == p(b"jan") => 1,
        k if k == p(b"feb") => 2,
        k if k == p(b"mar") => 3,
        k if k == p(b"apr") => 4,
        k if k == p(b"may") => 5,
        k if k == p(b"jun") => 6,
        k if k == p(b"jul") => 7,
        k if k == p(b"aug") => 8,
        k if k == p(b"sep") => 9,
        k if k == p(b"oct") => 10,
        k if k == p(b"nov") => 11,
        k if k == p(b"dec") => 12,
        _ => return None,
    })
}

#[inline]
fn d2(b: &[u8], i: usize) -> Option<u32> {
    let a = b[i].wrapping_sub(b'0');
    let c = b[i + 1].wrapping_sub(b'0');
    if a < 10 && c < 10 {
        Some(a as u32 * 10 + c as u32)
    } else {
        None
    }
}

#[inline]
fn d4(b: &[u8], i: usize) -> Option<u32> {
    Some(d2(b, i)? * 100 + d2(b, i + 2)?)
}

/// Validated day number of a civil date.
pub fn checked_days(y: i64, m: u32, d: u32) -> Option<i64> {
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d))
}

/// Seconds of the day for `h:m:s`, validated (`s` may be 60, a leap second).
#[inline]
pub fn checked_hms(h: u32, m: u32, s: u32) -> Option<i64> {
    if h > 23 || m > 59 || s > 60 {
        return None;
    }
    Some(h as i64 * 3600 + m as i64 * 60 + s as i64)
}

/// Parses a `±hhmm` (or `±hh:mm`, `±hh`) zone offset into seconds east of UTC.
pub fn parse_offset(b: &[u8]) -> Option<i32> {
    let sign = match b.first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (h, m) = match b.len() {
        5 => (d2(b, 1)?, d2(b, 3)?),
        6 if b[3] == b':' => (d2(b, 1)?, d2(b, 4)?),
        3 => (d2(b, 1)?, 0),
        _ => return None,
    };
    if h > 23 || m > 59 {
        return None;
    }
    Some(sign * (h as i32 * 3600 + m as i32 * 60))
}

/// Parser for the CLF timestamp `dd/Mon/yyyy:HH:MM:SS ±hhmm` (exactly 26 bytes, no
/// brackets) that remembers the last date it saw, so consecutive lines of the same day
/// cost only the time-of-day arithmetic.
#[derive(Clone, Debug, Default)]
pub struct ClfTime {
    key: [u8; 11],
    days: i64,
    valid: bool,
}

impl ClfTime {
    /// Length of a CLF timestamp.
    pub const LEN: usize = 26;

    /// A parser with an empty cache.
    pub fn new() -> ClfTime {
        ClfTime::default()
    }

    /// UTC seconds since the epoch of `s` (exactly [`ClfTime::LEN`] bytes), or `None`
    /// if it is not a valid CLF timestamp.
    #[inline]
    pub fn parse(&mut self, s: &[u8]) -> Option<i64> {
        if s.len() != Self::LEN
            || s[2] != b'/'
            || s[6] != b'/'
            || s[11] != b':'
            || s[14] != b':'
            || s[17] != b':'
            || s[20] != b' '
        {
            return None;
        }
        let days = if self.valid && s[..11] == self.key {
            self.days
        } else {
            let d = d2(s, 0)?;
            let m = month_from_abbr(&s[3..6])?;
            let y = d4(s, 7)? as i64;
            let days = checked_days(y, m, d)?;
            self.key.copy_from_slice(&s[..11]);
            self.days = days;
            self.valid = true;
            days
        };
        let tod = checked_hms(d2(s, 12)?, d2(s, 15)?, d2(s, 18)?)?;
        let off = parse_offset(&s[21..26])? as i64;
        Some(days * SECS_PER_DAY + tod - off)
    }
}

/// Parses a run of ASCII digits (at most 18) as an integer.
#[inline]
pub fn parse_uint(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 18 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + d as u64;
    }
    Some(v)
}

/// Parses a non-negative decimal `123` / `123.456789` into micro-units (digits beyond
/// the sixth are truncated). Returns the value and the number of fraction digits.
#[inline]
pub fn parse_decimal_micros(b: &[u8]) -> Option<(i64, u8)> {
    let (int, frac) = match memchr::memchr(b'.', b) {
        Some(i) => (&b[..i], &b[i + 1..]),
        None => (b, &b[..0]),
    };
    let iv = if int.is_empty() && !frac.is_empty() {
        0
    } else {
        parse_uint(int)?
    };
    if iv > (i64::MAX as u64) / 1_000_000 - 1 {
        return None;
    }
    let mut f: i64 = 0;
    let mut n = 0u32;
    for &c in frac {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        if n < 6 {
            f = f * 10 + d as i64;
            n += 1;
        }
    }
    if b.last() == Some(&b'.') && int.is_empty() {
        return None;
    }
    let digits = frac.len().min(255) as u8;
    f *= 10i64.pow(6 - n);
    Some((iv as i64 * 1_000_000 + f, digits))
}

/// The result of parsing an ISO 8601 timestamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IsoTime {
    /// Local wall-clock microseconds since the epoch (the zone not yet applied).
    pub local_us: i64,
    /// Seconds east of UTC, when the text carried a zone (`Z` = 0).
    pub offset_secs: Option<i32>,
    /// Digits of second fraction written.
    pub frac_digits: u8,
}

impl IsoTime {
    /// UTC microseconds, using `default_offset` when the text had no zone.
    pub fn utc_us(&self, default_offset: i32) -> i64 {
        self.local_us - self.offset_secs.unwrap_or(default_offset) as i64 * 1_000_000
    }
}

/// Parses `YYYY-MM-DD[T| ]HH:MM[:SS[.frac]][Z|±hh:mm|±hhmm|±hh]`.
pub fn parse_iso8601(b: &[u8]) -> Option<IsoTime> {
    if b.len() < 16 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let y = d4(b, 0)? as i64;
    let days = checked_days(y, d2(b, 5)?, d2(b, 8)?)?;
    if b[13] != b':' {
        return None;
    }
    let h = d2(b, 11)?;
    let mi = d2(b, 14)?;
    let mut i = 16;
    let mut s = 0;
    if b.len() >= 19 && b[16] == b':' {
        s = d2(b, 17)?;
        i = 19;
    }
    let tod = checked_hms(h, mi, s)?;
    let mut frac_us = 0i64;
    let mut digits = 0u8;
    if i < b.len() && (b[i] == b'.' || b[i] == b',') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if digits < 6 {
                frac_us = frac_us * 10 + (b[i] - b'0') as i64;
                digits += 1;
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        frac_us *= 10i64.pow(6 - digits as u32);
        digits = (i - start).min(255) as u8;
    }
    let rest = &b[i..];
    let offset = match rest {
        [] => None,
        [b'Z'] | [b'z'] => Some(0),
        _ => Some(parse_offset(rest)?),
    };
    Some(IsoTime {
        local_us: (days * SECS_PER_DAY + tod) * 1_000_000 + frac_us,
        offset_secs: offset,
        frac_digits: digits,
    })
}

/// Parses an RFC 3339 / ISO 8601 timestamp into UTC milliseconds since the epoch
/// (fraction truncated to the millisecond). A timestamp without a zone is taken as UTC.
pub fn parse_rfc3339_ms(b: &[u8]) -> Option<i64> {
    Some(parse_iso8601(b)?.utc_us(0).div_euclid(1000))
}

/// Formats UTC milliseconds as RFC 3339 with milliseconds: `2015-05-17T10:05:03.000Z`.
pub fn format_rfc3339_ms(ms: i64) -> String {
    local_rfc3339_ms(ms, 0)
}

/// Formats UTC seconds as RFC 3339 without fraction: `2015-05-17T10:05:03Z`.
pub fn format_rfc3339_secs(secs: i64) -> String {
    rfc3339(secs, None, 0)
}

/// Local wall-clock milliseconds and their UTC offset as RFC 3339 in whole seconds
/// (`2026-09-25T14:00:00+09:00`; `Z` for offset 0). The fraction is dropped.
pub fn local_rfc3339(local_ms: i64, offset_ms: i64) -> String {
    rfc3339(local_ms.div_euclid(1000), None, offset_ms)
}

/// Local wall-clock milliseconds and their UTC offset as RFC 3339 with milliseconds
/// (`2026-09-25T14:00:00.123+09:00`; `Z` for offset 0).
pub fn local_rfc3339_ms(local_ms: i64, offset_ms: i64) -> String {
    rfc3339(
        local_ms.div_euclid(1000),
        Some(local_ms.rem_euclid(1000)),
        offset_ms,
    )
}

/// The one RFC 3339 formatter: wall-clock seconds, an optional millisecond fraction and
/// the offset from UTC (`Z` when 0, else `±HH:MM`).
fn rfc3339(local_secs: i64, milli: Option<i64>, offset_ms: i64) -> String {
    let days = local_secs.div_euclid(SECS_PER_DAY);
    let tod = local_secs.rem_euclid(SECS_PER_DAY);
    let (y, m, d) = civil_from_days(days);
    let mut s = format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        tod / 3600,
        tod / 60 % 60,
        tod % 60
    );
    if let Some(ms) = milli {
        s.push_str(&format!(".{ms:03}"));
    }
    if offset_ms == 0 {
        s.push('Z');
    } else {
        let sign = if offset_ms < 0 { '-' } else { '+' };
        let o = offset_ms.unsigned_abs() / 60_000;
        s.push_str(&format!("{sign}{:02}:{:02}", o / 60, o % 60));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// `align` gives the start of the bucket holding `t`: at most `t`, less than a
        /// width before it, a whole number of widths from Monday 1970-01-05.
        #[test]
        fn align_is_the_start_of_the_bucket_counted_from_monday(
            t in proptest::prop_oneof![
                TS_MIN_MS - 86_400_000..TS_END_MS + 86_400_000,
                proptest::num::i64::ANY,
            ],
            w in proptest::prop_oneof![
                proptest::sample::select(vec![
                    1i64, 1_000, 60_000, 3_600_000, 5_400_000, 25_200_000, 86_400_000,
                    172_800_000, 604_800_000, 1_209_600_000, 2_592_000_000,
                ]),
                1i64..4_000_000_000_000,
                proptest::num::i64::ANY,
            ],
        ) {
            let a = align(t, w);
            let w = w.max(1);
            let (t, a, wi, m) = (i128::from(t), i128::from(a), i128::from(w), i128::from(MONDAY_EPOCH_MS));
            if t - (t - m).rem_euclid(wi) >= i128::from(i64::MIN) {
                proptest::prop_assert!(a <= t);
                proptest::prop_assert!(t - a < wi);
                proptest::prop_assert_eq!((a - m).rem_euclid(wi), 0);
            } else {
                proptest::prop_assert_eq!(a, i128::from(i64::MIN));
            }
        }
    }

    #[test]
    fn align_is_epoch_alignment_for_widths_dividing_a_day_and_weeks_start_on_monday() {
        let day = 86_400_000i64;
        // Every divisor of a day's milliseconds.
        let widths = (1..=9_296i64)
            .filter(|i| day % i == 0)
            .flat_map(|i| [i, day / i]);
        for w in widths {
            for t in [
                0,
                1,
                345_599_999,
                345_600_000,
                1_727_222_400_123,
                TS_END_MS - 1,
                -1,
                -day - 5,
            ] {
                assert_eq!(align(t, w), t.div_euclid(w) * w, "t {t} w {w}");
            }
        }
        // 2026-09-25 was a Friday, 2026-09-21 a Monday, 2026-09-14 the Monday before.
        let fri = days_from_civil(2026, 9, 25) * day + 13 * 3_600_000;
        let mon = days_from_civil(2026, 9, 21) * day;
        assert_eq!(align(fri, 7 * day), mon);
        assert_eq!(align(mon, 7 * day), mon);
        assert_eq!(align(mon - 1, 7 * day), mon - 7 * day);
        let two = align(fri, 14 * day);
        assert!(two == mon || two == mon - 7 * day);
        assert_eq!((two / day + 3).rem_euclid(7), 0, "a Monday");
        // Before the epoch too (1970-01-01, a Thursday, is in the week of 1969-12-29).
        assert_eq!(align(0, 7 * day), -3 * day);
        assert_eq!(align(MONDAY_EPOCH_MS, 7 * day), MONDAY_EPOCH_MS);
    }

    #[test]
    fn civil_roundtrip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        for z in (-800_000..800_000).step_by(997) {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
    }

    #[test]
    fn clf_offsets() {
        let mut c = ClfTime::new();
        // 2000-10-10 13:55:36 -0700 = 20:55:36 UTC
        assert_eq!(c.parse(b"10/Oct/2000:13:55:36 -0700"), Some(971_211_336));
        // −0400: 01/Aug/1995:00:00:01 -0400 = 1995-08-01T04:00:01Z
        assert_eq!(c.parse(b"01/Aug/1995:00:00:01 -0400"), Some(807_249_601));
        // +0330: 22/Jan/2019:03:56:14 +0330 = 2019-01-22T00:26:14Z
        assert_eq!(c.parse(b"22/Jan/2019:03:56:14 +0330"), Some(1_548_116_774));
        // cached date, other time
        assert_eq!(c.parse(b"22/Jan/2019:03:56:15 +0330"), Some(1_548_116_775));
        assert_eq!(c.parse(b"22/jan/2019:03:56:15 +0000"), Some(1_548_129_375));
        for bad in [
            &b"32/Jan/2019:03:56:14 +0330"[..],
            b"29/Feb/2019:03:56:14 +0330",
            b"22/Foo/2019:03:56:14 +0330",
            b"22/Jan/2019:24:56:14 +0330",
            b"22/Jan/2019:03:56:14 0330",
            b"22/Jan/2019:03:56:14 +033",
            b"22/Jan/2019 03:56:14 +0330",
        ] {
            assert_eq!(c.parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(c.parse(b"29/Feb/2020:00:00:00 +0000"), Some(1_582_934_400));
    }

    #[test]
    fn rfc3339() {
        assert_eq!(parse_rfc3339_ms(b"1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339_ms(b"2019-01-22T03:56:14+03:30"),
            Some(1_548_116_774_000)
        );
        assert_eq!(
            parse_rfc3339_ms(b"2024-05-26T11:42:52.6014807Z"),
            Some(1_716_723_772_601)
        );
        assert_eq!(
            parse_rfc3339_ms(b"2000-10-10 13:55:36.5-0700"),
            Some(971_211_336_500)
        );
        assert_eq!(parse_rfc3339_ms(b"1969-12-31T23:59:59.999Z"), Some(-1));
        assert_eq!(parse_rfc3339_ms(b"2019-02-29T00:00:00Z"), None);
        assert_eq!(parse_rfc3339_ms(b"2019-01-22T03:56:14+3:30"), None);
        assert_eq!(parse_rfc3339_ms(b"2019-01-22T03:56:14."), None);
        let t = parse_iso8601(b"2015-09-02 10:42:51.003372").unwrap();
        assert_eq!(t.offset_secs, None);
        assert_eq!(t.frac_digits, 6);
        assert_eq!(t.utc_us(7200), 1_441_183_371_003_372);
    }

    #[test]
    fn format() {
        assert_eq!(format_rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_rfc3339_ms(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(
            format_rfc3339_ms(1_548_116_774_123),
            "2019-01-22T00:26:14.123Z"
        );
        assert_eq!(format_rfc3339_secs(971_211_336), "2000-10-10T20:55:36Z");
        for ms in [
            0i64,
            1,
            999,
            86_399_999,
            1_716_723_772_601,
            -62_135_596_800_000,
        ] {
            assert_eq!(parse_rfc3339_ms(format_rfc3339_ms(ms).as_bytes()), Some(ms));
        }
    }

    #[test]
    fn arrival_window() {
        assert_eq!(
            TS_END_MS,
            days_from_civil(2100, 1, 1) * SECS_PER_DAY * 1000,
            "2100-01-01"
        );
        assert_eq!(arrival_ms(0), Some(0));
        assert_eq!(arrival_ms(-1), None);
        assert_eq!(arrival_ms(999), Some(0));
        assert_eq!(
            arrival_ms(TS_END_MS as i128 * 1000 - 1),
            Some(TS_END_MS - 1)
        );
        assert_eq!(arrival_ms(TS_END_MS as i128 * 1000), None);
        // The 64-bit division agrees with the 128-bit one on both sides of 64 bits.
        let wide = |us: i128| {
            let ms = us.div_euclid(1000);
            (0..TS_END_MS as i128).contains(&ms).then_some(ms as i64)
        };
        for us in [
            -1001,
            -1000,
            -999,
            1_716_723_772_601_999,
            i128::from(i64::MAX),
            i128::from(i64::MAX) + 1,
            i128::from(i64::MIN),
            i128::from(i64::MIN) - 1,
        ] {
            assert_eq!(arrival_ms(us), wide(us), "{us}");
        }
        assert_eq!(arrival_ms(i128::MAX), None);
        assert_eq!(arrival_ms(i128::MIN), None);
    }

    #[test]
    fn decimals() {
        assert_eq!(parse_decimal_micros(b"0.000"), Some((0, 3)));
        assert_eq!(parse_decimal_micros(b"1.5"), Some((1_500_000, 1)));
        assert_eq!(
            parse_decimal_micros(b"1795968216.117"),
            Some((1_795_968_216_117_000, 3))
        );
        assert_eq!(parse_decimal_micros(b"12"), Some((12_000_000, 0)));
        assert_eq!(parse_decimal_micros(b"0.1234567"), Some((123_456, 7)));
        assert_eq!(parse_decimal_micros(b""), None);
        assert_eq!(parse_decimal_micros(b"-"), None);
        assert_eq!(parse_decimal_micros(b"1.2.3"), None);
        assert_eq!(parse_decimal_micros(b"."), None);
    }
}
