//! Forensic report computations: heavy requests by time bucket ([`heavy`]), traffic
//! concentration over networks ([`concentration`]) and the user-agent mix ([`agents`]);
//! the incident of a report found from the data ([`incident`]); the live view of
//! `watch` ([`live`]) and its alert rules ([`alert`]).
//!
//! Each report is an accumulator fed one classified row at a time (see
//! [`crate::classify`]) and finished into a typed, serializable result, plus a
//! [`doc::Doc`] for people (terminal, Markdown, CSV, HTML). Results are deterministic:
//! every sort has a tie-breaker and no hash-map order reaches an output.

pub mod agents;
pub mod alert;
pub mod asn;
pub mod block;
pub mod block_emit;
pub mod block_report;
pub mod capacity;
pub mod concentration;
pub mod crawlers;
pub mod diff;
pub mod doc;
pub mod fingerprint;
pub mod heavy;
pub mod hosting;
pub mod incident;
pub mod live;
pub mod netdb;
pub mod timeline;
pub mod top;

use crate::time::civil_from_days;

/// Herfindahl–Hirschman index of counts: the sum of squared shares, 0–1 (1 = one group
/// has everything; 1/n = n equal groups). 0 for no requests.
pub fn hhi(counts: &[u64]) -> f64 {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return 0.0;
    }
    let t = total as f64;
    counts.iter().map(|&c| (c as f64 / t).powi(2)).sum()
}

/// Gini coefficient of counts, 0 (all equal) to (n−1)/n (one group has everything).
pub fn gini(counts: &[u64]) -> f64 {
    let n = counts.len();
    let total: u64 = counts.iter().sum();
    if n == 0 || total == 0 {
        return 0.0;
    }
    let mut v = counts.to_vec();
    v.sort_unstable();
    let mut acc = 0f64;
    for (i, &x) in v.iter().enumerate() {
        acc += (2.0 * (i as f64 + 1.0) - n as f64 - 1.0) * x as f64;
    }
    acc / (n as f64 * total as f64)
}

/// How many of the largest counts (sorted descending) it takes to reach `share` (0–1)
/// of the total. 0 for no requests.
pub fn groups_for_share(sorted_desc: &[u64], share: f64) -> u64 {
    let total: u64 = sorted_desc.iter().sum();
    if total == 0 {
        return 0;
    }
    let mut acc = 0u64;
    for (i, &c) in sorted_desc.iter().enumerate() {
        acc += c;
        // Integer comparison avoids float rounding at exact boundaries.
        if (acc as f64) >= share * total as f64 - 1e-9 {
            return i as u64 + 1;
        }
    }
    sorted_desc.len() as u64
}

/// Local wall-clock milliseconds as `YYYY-MM-DD HH:MM` (or `YYYY-MM-DD` when
/// `date_only`).
pub fn local_label(local_ms: i64, date_only: bool) -> String {
    let days = local_ms.div_euclid(86_400_000);
    let rem = local_ms.rem_euclid(86_400_000) / 1000;
    let (y, m, d) = civil_from_days(days);
    if date_only {
        format!("{y:04}-{m:02}-{d:02}")
    } else {
        format!(
            "{y:04}-{m:02}-{d:02} {:02}:{:02}",
            rem / 3600,
            rem % 3600 / 60
        )
    }
}

/// The start of a bucket `width_ms` wide as shown in tables: [`local_label`], the date
/// alone for whole days, with seconds (`YYYY-MM-DD HH:MM:SS`) for widths that are not
/// whole minutes (so that 10-second buckets do not all read `14:02`).
pub fn bucket_label(local_ms: i64, width_ms: i64) -> String {
    if width_ms % 60_000 == 0 {
        return local_label(local_ms, width_ms % 86_400_000 == 0);
    }
    let s = local_ms.rem_euclid(60_000) / 1000;
    format!("{}:{s:02}", local_label(local_ms, false))
}

/// A duration in ms as the shortest of `10m`, `1h`, `1d`, `90s`, `250ms`.
pub fn duration_label(ms: i64) -> String {
    for (unit, n) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1000),
    ] {
        if ms >= n && ms % n == 0 {
            return format!("{}{unit}", ms / n);
        }
    }
    format!("{ms}ms")
}

/// Deterministic 64-bit mix (splitmix64 finaliser).
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::number::share;
    use crate::time::local_rfc3339;
    use proptest::prelude::*;

    #[test]
    fn indices() {
        assert_eq!(hhi(&[1, 1, 1, 1]), 0.25);
        assert_eq!(hhi(&[10]), 1.0);
        assert_eq!(gini(&[5, 5, 5]), 0.0);
        assert!((gini(&[0, 0, 0, 12]) - 0.75).abs() < 1e-12);
        assert_eq!(groups_for_share(&[50, 30, 20], 0.5), 1);
        assert_eq!(groups_for_share(&[50, 30, 20], 0.9), 3);
        assert_eq!(groups_for_share(&[], 0.5), 0);
    }

    #[test]
    fn times_and_rates() {
        assert_eq!(local_label(0, false), "1970-01-01 00:00");
        assert_eq!(
            bucket_label(86_400_000 + 70_000, 10_000),
            "1970-01-02 00:01:10"
        );
        assert_eq!(
            bucket_label(86_400_000 + 60_000, 60_000),
            "1970-01-02 00:01"
        );
        assert_eq!(bucket_label(86_400_000, 86_400_000), "1970-01-02");
        assert_eq!(bucket_label(90_000, 90_000), "1970-01-01 00:01:30");
        assert_eq!(
            local_rfc3339(9 * 3_600_000, 9 * 3_600_000),
            "1970-01-01T09:00:00+09:00"
        );
        assert_eq!(
            local_rfc3339(0, -(3 * 3_600_000 + 1_800_000)),
            "1970-01-01T00:00:00-03:30"
        );
        assert_eq!(duration_label(600_000), "10m");
        assert_eq!(duration_label(86_400_000), "1d");
    }

    proptest! {
        #[test]
        fn concentration_indices_are_consistent(counts in prop::collection::vec(1u64..10_000, 1..200)) {
            let mut sorted = counts.clone();
            sorted.sort_unstable_by(|a, b| b.cmp(a));
            let total: u64 = counts.iter().sum();
            let shares: f64 = counts.iter().map(|&c| share(c, total)).sum();
            prop_assert!((shares - 1.0).abs() < 1e-9);
            let n50 = groups_for_share(&sorted, 0.5);
            let n90 = groups_for_share(&sorted, 0.9);
            prop_assert!(1 <= n50 && n50 <= n90 && n90 <= counts.len() as u64);
            let h = hhi(&counts);
            prop_assert!(h >= 1.0 / counts.len() as f64 - 1e-12 && h <= 1.0 + 1e-12);
            let g = gini(&counts);
            prop_assert!((-1e-12..1.0).contains(&g));
        }
    }
}
