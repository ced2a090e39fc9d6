//! How counts, bytes and times are shown: labels and the span a table's times share.

use crate::number::thousands;
use crate::time::local_rfc3339;

/// A count of distinct clients as shown: `≈1,234` for an estimate.
pub fn clients_label(n: u64, estimated: bool) -> String {
    if estimated {
        format!("≈{}", thousands(n))
    } else {
        thousands(n)
    }
}

/// Bytes as shown in tables: `812 B`, `12.3 KiB`, `4.0 MiB` … (CSV and JSON: plain
/// integers).
pub fn bytes_label(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// What the times of a table have in common, so that rows show only the rest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Span {
    /// Nothing: rows show `YYYY-MM-DD HH:MM:SS`.
    All,
    /// One year (`2026`): rows show `MM-DD HH:MM:SS`.
    Year(String),
    /// One day (`2026-09-25`): rows show `HH:MM:SS`.
    Day(String),
}

impl Span {
    /// The span of local instants `ms`.
    pub fn of(ms: impl Iterator<Item = i64>) -> Span {
        let mut day: Option<String> = None;
        let mut one_day = true;
        let mut one_year = true;
        for m in ms {
            let d = seen_label(m, &Span::All)
                .get(..10)
                .unwrap_or("")
                .to_string();
            match &day {
                None => day = Some(d),
                Some(x) => {
                    one_day &= *x == d;
                    one_year &= x.get(..4) == d.get(..4);
                }
            }
        }
        match day {
            Some(d) if one_day => Span::Day(d),
            Some(d) if one_year => Span::Year(d[..4].to_string()),
            _ => Span::All,
        }
    }

    /// The line under a title saying what the table's times leave out.
    pub fn line(&self, zone: &str) -> String {
        match self {
            Span::All => format!("times are {zone} times"),
            Span::Year(y) => format!("times are {zone} times in {y}"),
            Span::Day(d) => format!("times are {zone} times on {d}"),
        }
    }
}

/// Local ms as `YYYY-MM-DD HH:MM:SS`, less what `span` says every row shares.
pub fn seen_label(local_ms: i64, span: &Span) -> String {
    let s = local_rfc3339(local_ms, 0);
    // `YYYY-MM-DDTHH:MM:SSZ`
    let t = s.trim_end_matches('Z').replacen('T', " ", 1);
    let cut = match span {
        Span::All => 0,
        Span::Year(_) => 5,
        Span::Day(_) => 11,
    };
    t.get(cut..).unwrap_or(&t).to_string()
}
