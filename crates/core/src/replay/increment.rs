//! Ban times that grow for repeat offenders (fail2ban's `bantime.increment` formula),
//! and the decimal factors its options are written in.

use std::fmt;

/// Ban times that grow for repeat offenders (fail2ban's `bantime.increment`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Increment {
    /// `bantime.factor` in thousandths (1000 = 1).
    pub factor_milli: u64,
    /// `bantime.multipliers` (empty: the doubling formula).
    pub multipliers: Vec<u64>,
    /// `bantime.maxtime`, ms.
    pub max_ms: Option<u64>,
}

impl Increment {
    /// The doubling formula with factor 1 and no cap.
    pub fn doubling() -> Increment {
        Increment {
            factor_milli: 1000,
            multipliers: Vec::new(),
            max_ms: None,
        }
    }

    /// The length of a ban after `earlier` remembered bans, given the base length.
    pub fn ban_ms(&self, base: u64, earlier: u32) -> u64 {
        if earlier == 0 {
            return base;
        }
        let f = self.factor_milli as u128;
        let t = if self.multipliers.is_empty() {
            let grown = base as u128 * (1u128 << earlier.min(20)) * f / 1000;
            grown.max(base as u128)
        } else {
            let m = self.multipliers[(earlier as usize).min(self.multipliers.len() - 1)];
            base as u128 * m as u128 * f / 1000
        };
        let t = t.min(u64::MAX as u128 / 2) as u64;
        match self.max_ms {
            Some(m) => t.min(m),
            None => t,
        }
    }
}

impl fmt::Display for Increment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.multipliers.is_empty() {
            f.write_str("doubling with each earlier ban")?;
        } else {
            let m: Vec<String> = self.multipliers.iter().map(u64::to_string).collect();
            write!(f, "multiplied by {} for the 1st, 2nd… ban", m.join(", "))?;
        }
        if self.factor_milli != 1000 {
            write!(f, ", factor {}", milli_text(self.factor_milli))?;
        }
        if let Some(m) = self.max_ms {
            write!(f, ", at most {}", crate::rate::describe_period(m))?;
        }
        Ok(())
    }
}

/// `1500` → `1.5`.
pub fn milli_text(m: u64) -> String {
    if m.is_multiple_of(1000) {
        (m / 1000).to_string()
    } else {
        let s = format!("{}.{:03}", m / 1000, m % 1000);
        s.trim_end_matches('0').to_string()
    }
}

/// Parses a decimal factor (`2`, `1.5`) into thousandths.
pub fn parse_milli(s: &str) -> Option<u64> {
    let s = s.trim();
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let i: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut f = 0u64;
    for (k, b) in frac.bytes().take(3).enumerate() {
        f += u64::from(b - b'0') * 10u64.pow(2 - k as u32);
    }
    i.checked_mul(1000)?.checked_add(f)
}
