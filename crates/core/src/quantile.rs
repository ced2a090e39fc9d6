//! Quantiles of durations without keeping them: a sparse histogram of µs values in
//! buckets of two significant digits (at most 5% off), memory per distinct bucket (at
//! most ~1,700 for any `u64`).

use std::collections::BTreeMap;

/// Durations in µs, bucketed to two significant digits.
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    buckets: BTreeMap<u16, u64>,
    n: u64,
}

impl Histogram {
    fn bucket(us: u64) -> u16 {
        if us < 100 {
            return us as u16;
        }
        let digits = us.ilog10(); // ≥ 2
        let lead = us / 10u64.pow(digits - 1); // 10..=99
        (100 + (digits - 2) * 90 + (lead as u32 - 10)) as u16
    }

    /// The middle of a bucket, µs.
    fn value(b: u16) -> f64 {
        if b < 100 {
            return f64::from(b);
        }
        let k = u32::from(b - 100);
        let (digits, lead) = (k / 90 + 2, k % 90 + 10);
        let unit = 10f64.powi(digits as i32 - 1);
        (f64::from(lead) + 0.5) * unit
    }

    /// Adds one duration.
    pub fn add(&mut self, us: u64) {
        *self.buckets.entry(Self::bucket(us)).or_default() += 1;
        self.n += 1;
    }

    /// How many durations were added.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Whether none was added.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The `q` quantile (nearest rank) in ms, rounded to µs; `None` when empty.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (&b, &c) in &self.buckets {
            seen += c;
            if seen >= rank {
                return Some((Self::value(b)).round() / 1000.0);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_keep_two_significant_digits() {
        for us in [
            0u64,
            7,
            99,
            100,
            123,
            999,
            1000,
            1049,
            55_555,
            1_234_567,
            999_999_999,
        ] {
            let v = Histogram::value(Histogram::bucket(us));
            let err = (v - us as f64).abs() / (us as f64).max(1.0);
            assert!(err <= 0.05 || us < 100, "{us} → {v}");
        }
        assert!(Histogram::bucket(u64::MAX) > Histogram::bucket(1_000_000));
        let mut h = Histogram::default();
        for us in 1..=100u64 {
            h.add(us * 1000);
        }
        assert_eq!(h.quantile_ms(0.5), Some(50.5));
        assert_eq!(h.quantile_ms(0.95), Some(95.5));
        assert_eq!(Histogram::default().quantile_ms(0.5), None);
    }
}
