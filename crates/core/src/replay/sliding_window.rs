//! Sliding-window counter (seed 001): windows of W ms aligned to the epoch; the estimate
//! is `previous × (1 − elapsed/W) + current`, and a request passes iff the estimate is
//! below N (for cost c: iff estimate + c − 1 < N). Exact integer arithmetic. Refused
//! requests are not counted.

use super::store::Algo;

/// Sliding-window counter parameters.
#[derive(Clone, Debug)]
pub struct SlidingWindow {
    n: u64,
    w: i64,
}

/// Per-key state: current window index and the counts of it and the one before.
#[derive(Clone, Debug)]
pub struct SlidingWindowState {
    idx: i64,
    prev: u64,
    curr: u64,
}

impl SlidingWindow {
    /// `n` per `w` ms.
    pub fn new(n: u64, w: u64) -> Self {
        SlidingWindow { n, w: w as i64 }
    }

    /// (window index, previous count, current count) as seen at `now`.
    #[inline]
    fn at(&self, s: &SlidingWindowState, now: i64) -> (i64, u64, u64) {
        let idx = now.div_euclid(self.w);
        if idx == s.idx {
            (idx, s.prev, s.curr)
        } else if idx == s.idx + 1 {
            (idx, s.curr, 0)
        } else if idx > s.idx {
            (idx, 0, 0)
        } else {
            // Time went back into an older window: judge with what we have.
            (s.idx, s.prev, s.curr)
        }
    }
}

impl Algo for SlidingWindow {
    type State = SlidingWindowState;

    fn fresh(&self, now: i64) -> SlidingWindowState {
        SlidingWindowState {
            idx: now.div_euclid(self.w),
            prev: 0,
            curr: 0,
        }
    }

    #[inline]
    fn check(&self, s: &SlidingWindowState, now: i64, cost: u64) -> Option<u32> {
        if cost == 0 {
            return Some(0);
        }
        let (idx, prev, curr) = self.at(s, now);
        let elapsed = (now - idx * self.w).clamp(0, self.w) as u128;
        let w = self.w as u128;
        let lhs = prev as u128 * (w - elapsed) + (curr as u128 + cost as u128 - 1) * w;
        (lhs < self.n as u128 * w).then_some(0)
    }

    #[inline]
    fn commit(&self, s: &mut SlidingWindowState, now: i64, cost: u64) {
        let (idx, prev, curr) = self.at(s, now);
        *s = SlidingWindowState {
            idx,
            prev,
            curr: curr + cost,
        };
    }

    fn idle(&self, s: &SlidingWindowState, now: i64) -> bool {
        let (_, prev, curr) = self.at(s, now);
        prev == 0 && curr == 0
    }

    fn horizon_ms(&self) -> i64 {
        self.w.saturating_mul(2)
    }
}
