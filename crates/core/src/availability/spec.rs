//! Parsers for the availability options: status sets (`2xx,3xx,404,500-504`),
//! durations (`1m`, `90s`, `1h30m`) and grade thresholds (`99.9,99,95`).

use std::fmt;

use serde::Serialize;

/// A set of HTTP status codes, as inclusive ranges.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct StatusSet {
    ranges: Vec<(u16, u16)>,
}

impl StatusSet {
    /// The empty set.
    pub fn none() -> StatusSet {
        StatusSet::default()
    }

    /// A set of inclusive ranges.
    pub fn from_ranges(ranges: &[(u16, u16)]) -> StatusSet {
        let mut s = StatusSet {
            ranges: ranges.to_vec(),
        };
        s.normalize();
        s
    }

    /// Parses a comma-separated list of `Nxx` classes, codes and `a-b` ranges;
    /// `none` (or an empty string) is the empty set.
    pub fn parse(text: &str) -> Result<StatusSet, String> {
        let t = text.trim();
        if t.is_empty() || t.eq_ignore_ascii_case("none") {
            return Ok(StatusSet::none());
        }
        let mut ranges = Vec::new();
        for item in t.split(',') {
            let item = item.trim();
            let bad = || {
                format!(
                    "'{item}' is not a status: write classes like 2xx, codes like 404, or ranges like 500-504"
                )
            };
            let b = item.as_bytes();
            if b.len() == 3 && b[0].is_ascii_digit() && b[1..].eq_ignore_ascii_case(b"xx") {
                let c = (b[0] - b'0') as u16 * 100;
                ranges.push((c, c + 99));
            } else if let Some((a, z)) = item.split_once('-') {
                let a: u16 = a.trim().parse().map_err(|_| bad())?;
                let z: u16 = z.trim().parse().map_err(|_| bad())?;
                if a > z {
                    return Err(bad());
                }
                ranges.push((a, z));
            } else {
                let c: u16 = item.parse().map_err(|_| bad())?;
                ranges.push((c, c));
            }
        }
        let mut s = StatusSet { ranges };
        s.normalize();
        Ok(s)
    }

    fn normalize(&mut self) {
        self.ranges.sort_unstable();
        let mut out: Vec<(u16, u16)> = Vec::with_capacity(self.ranges.len());
        for &(a, z) in &self.ranges {
            match out.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(z),
                _ => out.push((a, z)),
            }
        }
        self.ranges = out;
    }

    /// Whether `status` is in the set.
    #[inline]
    pub fn contains(&self, status: u16) -> bool {
        self.ranges.iter().any(|&(a, z)| a <= status && status <= z)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

impl fmt::Display for StatusSet {
    /// Canonical text: whole classes as `2xx`, other ranges as `a-b`, single codes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ranges.is_empty() {
            return f.write_str("none");
        }
        let mut parts = Vec::new();
        for &(a, z) in &self.ranges {
            let (mut lo, z) = (u32::from(a), u32::from(z));
            // Split into whole classes where possible.
            while lo <= z {
                if lo % 100 == 0 && lo + 99 <= z {
                    parts.push(format!("{}xx", lo / 100));
                    lo += 100;
                } else {
                    let end = z.min(lo - lo % 100 + 99);
                    if lo == end {
                        parts.push(lo.to_string());
                    } else {
                        parts.push(format!("{lo}-{end}"));
                    }
                    lo = end + 1;
                }
            }
        }
        f.write_str(&parts.join(","))
    }
}

impl Serialize for StatusSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

/// Parses a duration: a sequence of `<number><unit>` with units `ms`, `s`, `m`, `h`,
/// `d`, `w` (e.g. `1m`, `90s`, `1h30m`, `1.5h`); returns milliseconds (> 0).
pub fn parse_duration(text: &str) -> Result<i64, String> {
    let t = text.trim();
    let bad = || format!("'{text}' is not a duration: write it like 1m, 30s, 5m, 1h30m or 2d");
    if t.is_empty() {
        return Err(bad());
    }
    let mut total = 0f64;
    let mut rest = t;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if num_end == 0 {
            return Err(bad());
        }
        let n: f64 = rest[..num_end].parse().map_err(|_| bad())?;
        let after = &rest[num_end..];
        let unit_end = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let unit = &after[..unit_end];
        let ms = match unit {
            "ms" => 1.0,
            "s" | "sec" => 1e3,
            "m" | "min" => 60e3,
            "h" => 3_600e3,
            "d" => 86_400e3,
            "w" => 604_800e3,
            _ => return Err(bad()),
        };
        total += n * ms;
        rest = &after[unit_end..];
    }
    let ms = total.round();
    if !(1.0..=1e15).contains(&ms) {
        return Err(bad());
    }
    Ok(ms as i64)
}

/// A duration for people: `91h 00m`, `12m 30s`, `45s`, `250ms`.
pub fn format_duration(ms: i64) -> String {
    let ms = ms.max(0);
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let s = ms / 1000;
    if s < 60 {
        return format!("{s}s");
    }
    if s < 3600 {
        return format!("{}m {:02}s", s / 60, s % 60);
    }
    let m = (s + 30) / 60;
    format!("{}h {:02}m", m / 60, m % 60)
}

/// A cadence or option duration in its shortest exact form: `1m`, `90s`, `1h`, `1500ms`.
pub fn format_duration_exact(ms: i64) -> String {
    if ms > 0 && ms % 86_400_000 == 0 {
        format!("{}d", ms / 86_400_000)
    } else if ms > 0 && ms % 3_600_000 == 0 {
        format!("{}h", ms / 3_600_000)
    } else if ms > 0 && ms % 60_000 == 0 {
        format!("{}m", ms / 60_000)
    } else if ms > 0 && ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// An interval as people read it: exact units when it has them (`1m`, `90s`), else
/// `5m 11s`, `70.9s` or `250ms` (estimated cadences are rarely round).
pub fn format_interval(ms: i64) -> String {
    if ms >= 1000 && ms % 1000 == 0 {
        return format_duration_exact(ms);
    }
    if ms >= 60_000 {
        let s = (ms + 500) / 1000;
        if s % 60 == 0 {
            format!("{}m", s / 60)
        } else {
            format!("{}m {:02}s", s / 60, s % 60)
        }
    } else if ms >= 1000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{ms}ms")
    }
}

/// Grade thresholds in percent: at least `green` is green, at least `yellow` yellow,
/// at least `orange` orange, anything lower red.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Grades {
    /// Lowest green availability (default 99.9).
    pub green: f64,
    /// Lowest yellow availability (default 99).
    pub yellow: f64,
    /// Lowest orange availability (default 95).
    pub orange: f64,
}

impl Default for Grades {
    fn default() -> Grades {
        Grades {
            green: 99.9,
            yellow: 99.0,
            orange: 95.0,
        }
    }
}

impl Grades {
    /// Parses `green,yellow,orange` percentages, e.g. `99.9,99,95`.
    pub fn parse(text: &str) -> Result<Grades, String> {
        let bad = || format!("'{text}' is not three descending percentages like 99.9,99,95");
        let v: Vec<f64> = text
            .split(',')
            .map(|p| p.trim().trim_end_matches('%').parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| bad())?;
        if v.len() != 3 || !(v[0] >= v[1] && v[1] >= v[2] && v[2] >= 0.0 && v[0] <= 100.0) {
            return Err(bad());
        }
        Ok(Grades {
            green: v[0],
            yellow: v[1],
            orange: v[2],
        })
    }

    /// The grade of an availability in percent.
    pub fn grade(&self, pct: Option<f64>) -> Grade {
        match pct {
            None => Grade::None,
            Some(p) if p >= self.green => Grade::Green,
            Some(p) if p >= self.yellow => Grade::Yellow,
            Some(p) if p >= self.orange => Grade::Orange,
            Some(_) => Grade::Red,
        }
    }
}

/// A period's colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Grade {
    /// At least the green threshold.
    Green,
    /// At least the yellow threshold.
    Yellow,
    /// At least the orange threshold.
    Orange,
    /// Below the orange threshold.
    Red,
    /// Nothing expected in the period: no figure.
    #[default]
    None,
}

impl Grade {
    /// The grade as a word.
    pub fn word(self) -> &'static str {
        match self {
            Grade::Green => "green",
            Grade::Yellow => "yellow",
            Grade::Orange => "orange",
            Grade::Red => "red",
            Grade::None => "-",
        }
    }

    /// The grade as a coloured circle (for Markdown, visible without colour).
    pub fn emoji(self) -> &'static str {
        match self {
            Grade::Green => "🟢",
            Grade::Yellow => "🟡",
            Grade::Orange => "🟠",
            Grade::Red => "🔴",
            Grade::None => "⚪",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_sets() {
        let s = StatusSet::parse("2xx, 3xx").unwrap();
        assert!(s.contains(200) && s.contains(399) && !s.contains(400) && !s.contains(199));
        assert_eq!(s.to_string(), "2xx,3xx");
        let s = StatusSet::parse("403,429").unwrap();
        assert_eq!(s.to_string(), "403,429");
        let s = StatusSet::parse("500-504,404,1xx").unwrap();
        assert_eq!(s.to_string(), "1xx,404,500-504");
        assert!(StatusSet::parse("none").unwrap().is_empty());
        assert_eq!(
            StatusSet::from_ranges(&[(100, 499)]).to_string(),
            "1xx,2xx,3xx,4xx"
        );
        assert_eq!(
            StatusSet::from_ranges(&[(150, 420)]).to_string(),
            "150-199,2xx,3xx,400-420"
        );
        assert!(StatusSet::parse("5x").is_err());
        assert!(StatusSet::parse("504-500").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1m"), Ok(60_000));
        assert_eq!(parse_duration("90s"), Ok(90_000));
        assert_eq!(parse_duration("1h30m"), Ok(5_400_000));
        assert_eq!(parse_duration("1.5h"), Ok(5_400_000));
        assert_eq!(parse_duration("250ms"), Ok(250));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("m").is_err());
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("3 parsecs").is_err());
        assert_eq!(format_duration(91 * 3_600_000), "91h 00m");
        assert_eq!(format_duration(750_000), "12m 30s");
        assert_eq!(format_duration_exact(60_000), "1m");
        assert_eq!(format_duration_exact(61_500), "61500ms");
        assert_eq!(format_interval(310_516), "5m 11s");
        assert_eq!(format_interval(70_852), "1m 11s");
        assert_eq!(format_interval(9_876), "9.9s");
        assert_eq!(format_interval(60_000), "1m");
        assert_eq!(format_interval(250), "250ms");
    }

    #[test]
    fn grades() {
        let g = Grades::default();
        assert_eq!(g.grade(Some(100.0)), Grade::Green);
        assert_eq!(g.grade(Some(99.9)), Grade::Green);
        assert_eq!(g.grade(Some(99.89)), Grade::Yellow);
        assert_eq!(g.grade(Some(95.0)), Grade::Orange);
        assert_eq!(g.grade(Some(94.99)), Grade::Red);
        assert_eq!(g.grade(None), Grade::None);
        assert_eq!(Grades::parse("99.5, 98, 90").unwrap().yellow, 98.0);
        assert!(Grades::parse("95,99,99.9").is_err());
    }
}
