//! Text rendering of the ingest summary, `info` and `detect`.

use std::fmt::Write;

use logscope_core::escape;

use crate::store::ingest::IngestSummary;

/// RFC 3339 UTC with milliseconds, e.g. `2015-05-17T10:05:03.000Z`.
pub use logscope_core::time::format_rfc3339_ms as rfc3339_ms;

/// `1234567` → `1,234,567`.
pub use logscope_core::number::thousands;

/// Percentage with two decimals, `-` when the denominator is 0.
pub fn pct(num: u64, den: u64) -> String {
    if den == 0 {
        "-".to_string()
    } else {
        format!("{:.2}%", 100.0 * num as f64 / den as f64)
    }
}

/// Bytes as `12.3 MB` (10^6).
pub fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// Widest file name column of the ingest summary (the table fits 80 columns).
const NAME_W: usize = 23;

/// The last `w` characters of `s`, with `…` in front when cut (file names are told
/// apart by their end).
fn tail(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n <= w {
        return s.to_string();
    }
    let mut out = String::from("…");
    out.extend(s.chars().skip(n - (w - 1)));
    out
}

/// The human summary printed after `logscope ingest`.
pub fn ingest_text(s: &IngestSummary) -> String {
    let mut o = String::new();
    let commit = if s.dry_run {
        "dry run, nothing written".to_string()
    } else if s.ingest == 0 {
        "nothing new, dataset unchanged".to_string()
    } else {
        format!("ingest #{}", s.ingest)
    };
    let inputs = format!(
        "{} input{}",
        s.files.len(),
        if s.files.len() == 1 { "" } else { "s" }
    );
    if s.dry_run {
        let _ = writeln!(o, "parsed {inputs} ({commit})");
    } else {
        let _ = writeln!(
            o,
            "ingested {inputs} into {} ({commit})",
            escape::terminal_str(&s.dataset, 200)
        );
    }
    let name_w = s
        .files
        .iter()
        .map(|f| f.file.chars().count().min(NAME_W))
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        o,
        "  {:<name_w$}  {:<12} {:>10} {:>10} {:>10} {:>7}",
        "file", "format", "lines", "added", "seen", "bad"
    );
    for f in &s.files {
        let fmt: String = f.format.chars().take(12).collect();
        let _ = writeln!(
            o,
            "  {:<name_w$}  {:<12} {:>10} {:>10} {:>10} {:>7}",
            tail(&escape::terminal_str(&f.file, 400), NAME_W),
            escape::terminal_str(&fmt, 12),
            thousands(f.lines),
            thousands(f.added),
            thousands(f.already_seen),
            thousands(f.bad)
        );
    }
    let parsed = s.lines - s.skipped;
    let _ = writeln!(
        o,
        "lines {}, records added {}, already seen {}, bad {} ({}), blank/directive {}",
        thousands(s.lines),
        thousands(s.added),
        thousands(s.already_seen),
        thousands(s.bad),
        pct(s.bad, parsed),
        thousands(s.skipped)
    );
    if !s.bad_reasons.is_empty() {
        let top: Vec<String> = s
            .bad_reasons
            .iter()
            .take(5)
            .map(|(r, n)| format!("{r} {}", thousands(*n)))
            .collect();
        let _ = writeln!(o, "bad lines by reason: {}", top.join(", "));
    }
    match (&s.first, &s.last) {
        (Some(a), Some(b)) => {
            let _ = writeln!(o, "time range: {a} .. {b}");
        }
        _ => {
            let _ = writeln!(o, "time range: (no records added)");
        }
    }
    let _ = writeln!(
        o,
        "distinct: {} IPs, {} IPv4 /24, {} IPv6 /48, {} host names",
        thousands(s.distinct_ips),
        thousands(s.distinct_v4_24),
        thousands(s.distinct_v6_48),
        thousands(s.distinct_hostnames)
    );
    let secs = s.seconds.max(1e-6);
    let rows = if s.dry_run {
        String::new()
    } else {
        format!("; dataset now {} rows", thousands(s.dataset_rows))
    };
    let _ = writeln!(
        o,
        "read {} in {:.2} s ({:.0} MB/s, {:.0}k lines/s){rows}",
        mb(s.bytes),
        s.seconds,
        s.bytes as f64 / 1e6 / secs,
        s.lines as f64 / 1e3 / secs,
    );
    o
}

/// One line per commit of `ingest --follow`: what it added and the dataset's size.
pub fn follow_line(s: &IngestSummary) -> String {
    let mut from: Vec<String> = Vec::new();
    for f in s.files.iter().filter(|f| f.added > 0) {
        let name = escape::terminal_str(&f.file, 200);
        if !from.contains(&name) {
            from.push(name);
        }
    }
    let mut line = format!(
        "ingest #{}: +{} rows{}, dataset {} rows",
        s.ingest,
        thousands(s.added),
        if from.is_empty() {
            String::new()
        } else {
            format!(" from {}", from.join(", "))
        },
        thousands(s.dataset_rows)
    );
    if s.bad > 0 {
        let _ = write!(line, ", {} bad lines", thousands(s.bad));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_numbers() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(pct(1, 3), "33.33%");
        assert_eq!(pct(1, 0), "-");
        assert_eq!(rfc3339_ms(1431857103000), "2015-05-17T10:05:03.000Z");
        assert_eq!(tail("fixtures/logs/access.log", 11), "…access.log");
        assert_eq!(tail("a.log", 10), "a.log");
    }
}
