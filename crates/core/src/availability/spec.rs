//! Parsers and formats for the availability options: grade thresholds (`99.9,99,95`)
//! and durations as reports print them. Status sets are [`crate::classify::StatusSet`]
//! and durations are parsed by [`crate::duration`], like every other flag's.

use serde::Serialize;

/// Status sets (`2xx,3xx,404,500-504`) are the one grammar of `--status`: the same
/// type as the report filter's.
pub use crate::classify::StatusSet;

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

/// Grade thresholds that did not parse (the text as given).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not three descending percentages like 99.9,99,95")]
pub struct GradesError(pub String);

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
    pub fn parse(text: &str) -> Result<Grades, GradesError> {
        let bad = || GradesError(text.to_string());
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
    fn durations() {
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
