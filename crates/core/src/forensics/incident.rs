//! The incident of a report when no capacity names it, found from the data: the run of
//! buckets around the busiest one that stays well above the typical bucket.
//!
//! The rule, over the buckets of a [`HeavyReport`] (heavy requests per bucket, or all
//! requests when none is heavy):
//!
//! 1. every bucket of the span counts, empty ones (and those of gaps) as 0; with fewer
//!    than [`MIN_BUCKETS`] there is no baseline, and no incident;
//! 2. the baseline is the median bucket (the lower median of an even count);
//! 3. the threshold is [`FACTOR`] times the baseline (a baseline of 0 counts as 1);
//! 4. the peak is the bucket with the most (the earliest of equals); when it is not
//!    above the threshold there is no incident;
//! 5. the incident is the peak and the buckets next to it, on either side, one after
//!    another, as long as each is above the threshold (an empty bucket ends it).
//!
//! Deterministic, and the same for any order of the rows. Since more than half of the
//! buckets are at most the median, an incident never covers most of the span.

use super::heavy::HeavyReport;

/// The threshold is this many times the median bucket.
pub const FACTOR: u64 = 4;

/// Fewest buckets in the span for a median to mean anything.
pub const MIN_BUCKETS: u64 = 10;

/// An incident found from the data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Burst {
    /// Index in [`HeavyReport::buckets`] of its first bucket.
    pub first: usize,
    /// Index of its last bucket.
    pub last: usize,
    /// Index of the peak bucket.
    pub peak: usize,
    /// The peak bucket's value.
    pub peak_value: u64,
    /// The median bucket.
    pub median: u64,
    /// Buckets above this are in the incident.
    pub threshold: u64,
    /// Whether the values are heavy requests (else all requests).
    pub heavy: bool,
}

/// The incident of `hv` by the rule of this module, if there is one.
pub fn find(hv: &HeavyReport) -> Option<Burst> {
    let heavy = hv.heavy > 0;
    let value = |i: usize| {
        let b = &hv.buckets[i];
        if heavy { b.heavy } else { b.requests }
    };
    let empty: u64 = hv.gaps.iter().map(|g| g.buckets).sum();
    let n = hv.buckets.len() as u64 + empty;
    if n < MIN_BUCKETS {
        return None;
    }
    let mut sorted: Vec<u64> = (0..hv.buckets.len()).map(value).collect();
    sorted.sort_unstable();
    // The gaps' empty buckets come first in the sorted order.
    let k = (n - 1) / 2;
    let median = if k < empty {
        0
    } else {
        sorted[(k - empty) as usize]
    };
    let threshold = FACTOR * median.max(1);
    let peak = (0..hv.buckets.len()).max_by(|&a, &b| value(a).cmp(&value(b)).then(b.cmp(&a)))?;
    let peak_value = value(peak);
    if peak_value <= threshold {
        return None;
    }
    // Neighbours in time: the next bucket starts where this one ends (a gap between
    // two listed buckets ends the run).
    let w = hv.width_ms;
    let next_to =
        |a: usize, b: usize| hv.buckets[b].start_local_ms - hv.buckets[a].start_local_ms == w;
    let (mut first, mut last) = (peak, peak);
    while first > 0 && next_to(first - 1, first) && value(first - 1) > threshold {
        first -= 1;
    }
    while last + 1 < hv.buckets.len() && next_to(last, last + 1) && value(last + 1) > threshold {
        last += 1;
    }
    Some(Burst {
        first,
        last,
        peak,
        peak_value,
        median,
        threshold,
        heavy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forensics::heavy::{HeavyBucket, HeavyGap};

    fn report(values: &[u64], heavy: bool, gap_after: Option<(usize, u64)>) -> HeavyReport {
        let w = 3_600_000;
        let mut buckets = Vec::new();
        let mut gaps = Vec::new();
        let mut t = 0;
        for (i, &v) in values.iter().enumerate() {
            buckets.push(HeavyBucket {
                top_as: None,
                top_as_share: None,
                start: String::new(),
                label: String::new(),
                start_utc_ms: t,
                start_local_ms: t,
                requests: v + 1,
                heavy: if heavy { v } else { 0 },
                distinct_ips: 0,
                distinct_prefixes: 0,
                top_prefix: None,
                top_prefix_requests: 0,
                top_prefix_share: 0.0,
                agent: None,
                agent_share: 0.0,
                peak: None,
                over_capacity: false,
            });
            t += w;
            if let Some((after, n)) = gap_after
                && after == i
            {
                gaps.push(HeavyGap {
                    start: String::new(),
                    label: String::new(),
                    start_utc_ms: t,
                    start_local_ms: t,
                    end_local_ms: t + n as i64 * w,
                    end: String::new(),
                    end_label: String::new(),
                    end_utc_ms: t + n as i64 * w,
                    buckets: n,
                    before: i + 1,
                });
                t += n as i64 * w;
            }
        }
        HeavyReport {
            top_as: None,
            top_as_share: None,
            origin: String::new(),
            by: "1h".into(),
            width_ms: w,
            auto_width: false,
            zone: "UTC".into(),
            selection: String::new(),
            heavy_rules: String::new(),
            prefix_v4: 24,
            prefix_v6: 48,
            capacity: None,
            requests: buckets.iter().map(|b| b.requests).sum(),
            heavy: buckets.iter().map(|b| b.heavy).sum(),
            distinct_ips: 0,
            distinct_prefixes: 0,
            top_prefix: None,
            top_prefix_requests: 0,
            top_prefix_share: 0.0,
            buckets_over_capacity: 0,
            classes: Vec::new(),
            buckets,
            gaps,
        }
    }

    #[test]
    fn the_run_around_the_peak_above_four_times_the_median() {
        // Median 10, threshold 40: buckets 5–7 (50, 400, 41), not 9 (45, after a 30).
        let v = [10, 9, 10, 10, 12, 50, 400, 41, 30, 45, 10, 8];
        let b = find(&report(&v, true, None)).expect("an incident");
        assert_eq!((b.first, b.last, b.peak), (5, 7, 6));
        assert_eq!((b.median, b.threshold, b.peak_value), (10, 40, 400));
        assert!(b.heavy);
        // Without heavy requests, all requests (each bucket here one more): median 11,
        // threshold 44, and 42 is not above it.
        let b = find(&report(&v, false, None)).expect("an incident");
        assert!(!b.heavy);
        assert_eq!((b.first, b.last, b.median), (5, 6, 11));
    }

    #[test]
    fn no_incident_in_a_flat_short_or_empty_series() {
        assert_eq!(
            find(&report(&[10, 12, 11, 9, 30, 10, 11, 12, 10, 9], true, None)),
            None
        );
        assert_eq!(find(&report(&[1, 1000, 1], true, None)), None, "3 buckets");
        assert_eq!(find(&report(&[], true, None)), None);
        // A median of 0 counts as 1: a lone 4 is not an incident, a 5 is.
        let mut v = [0u64; 12];
        v[3] = 4;
        assert_eq!(find(&report(&v, true, None)), None);
        v[3] = 5;
        assert_eq!(
            find(&report(&v, true, None)).map(|b| (b.first, b.last)),
            Some((3, 3))
        );
    }

    #[test]
    fn gaps_count_as_empty_buckets_and_end_the_run() {
        // Without the gap the median is 100 and nothing stands out; 40 empty buckets
        // bring it to 0, and the run stops at the gap though the bucket after it is high.
        let v = [100, 100, 100, 100, 100, 900, 800, 100, 100, 100, 100];
        assert_eq!(
            find(&report(&v, true, None)).map(|b| (b.first, b.last)),
            Some((5, 6))
        );
        let b = find(&report(&v, true, Some((5, 40)))).expect("an incident");
        assert_eq!(b.median, 0);
        assert_eq!((b.first, b.last, b.peak), (0, 5, 5));
    }
}
