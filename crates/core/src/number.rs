//! Numbers as reports print them: thousands separators, shares and percentages. One
//! place for every command (core renderings and the CLI's summaries alike).

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `num/den` as a fraction, 0 when `den` is 0.
pub fn share(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

/// A share as a percentage with one decimal (`6.0%`), `-` for an empty denominator.
pub fn pct1(num: u64, den: u64) -> String {
    if den == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * num as f64 / den as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(pct1(437, 7288), "6.0%");
        assert_eq!(pct1(1, 0), "-");
        assert_eq!(share(1, 4), 0.25);
        assert_eq!(share(1, 0), 0.0);
    }
}
