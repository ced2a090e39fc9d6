//! Continuous token bucket: capacity b, refill r per ms exactly (integer arithmetic),
//! starts full; a request costing c passes if c tokens are there; refused ones take nothing.

use super::store::{Algo, elapsed};

/// Token bucket parameters. Tokens are kept scaled by the rate's window (`level =
/// tokens × w` with `r = n/w` per ms), so refill and charge are exact integers.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    n: u64,
    w: u64,
    cap: u64,
}

/// Per-key state: scaled tokens at `last`.
#[derive(Clone, Debug)]
pub struct TokenState {
    level: u64,
    last: i64,
}

impl TokenBucket {
    /// A bucket refilling `n` tokens every `w` ms, holding `burst`.
    pub fn new(n: u64, w: u64, burst: u64) -> Self {
        TokenBucket {
            n,
            w,
            cap: burst.saturating_mul(w),
        }
    }

    #[inline]
    fn level_at(&self, s: &TokenState, now: i64) -> u64 {
        let refill = elapsed(now, s.last).saturating_mul(self.n);
        s.level.saturating_add(refill).min(self.cap)
    }
}

impl Algo for TokenBucket {
    type State = TokenState;

    fn fresh(&self, now: i64) -> TokenState {
        TokenState {
            level: self.cap,
            last: now,
        }
    }

    #[inline]
    fn check(&self, s: &TokenState, now: i64, cost: u64) -> Option<u32> {
        (self.level_at(s, now) >= cost.saturating_mul(self.w)).then_some(0)
    }

    #[inline]
    fn commit(&self, s: &mut TokenState, now: i64, cost: u64) {
        s.level = self.level_at(s, now) - cost.saturating_mul(self.w);
        s.last = s.last.max(now);
    }

    #[inline]
    fn check_commit(&self, s: &mut TokenState, now: i64, cost: u64) -> Option<u32> {
        let level = self.level_at(s, now);
        let need = cost.saturating_mul(self.w);
        if level >= need {
            s.level = level - need;
            s.last = s.last.max(now);
            Some(0)
        } else {
            None
        }
    }

    fn idle(&self, s: &TokenState, now: i64) -> bool {
        self.level_at(s, now) == self.cap
    }

    fn horizon_ms(&self) -> i64 {
        (self.cap / self.n.max(1))
            .saturating_add(1)
            .min(i64::MAX as u64) as i64
    }
}
