//! GCRA (virtual scheduling) as the Rust `governor` crate implements it since its
//! burst fix (boinkor-net/governor#251): emission interval T = 1/r, tolerance τ = (b−1)·T,
//! a new key starts at TAT = now; a cell passes iff now ≥ TAT + (c−1)·T − τ, then
//! TAT = max(TAT, now) + c·T; refused cells change nothing; c > b never passes.

use super::store::Algo;

/// GCRA parameters, in time units of 1/n ms so that T = w is a whole number.
#[derive(Clone, Debug)]
pub struct Gcra {
    n: i128,
    w: i128,
    burst: u64,
}

/// Per-key state: the theoretical arrival time, in units of 1/n ms.
#[derive(Clone, Debug)]
pub struct GcraState {
    tat: i128,
}

impl Gcra {
    /// `n` cells every `w` ms, burst `burst`.
    pub fn new(n: u64, w: u64, burst: u64) -> Self {
        Gcra {
            n: n as i128,
            w: w as i128,
            burst,
        }
    }
}

impl Algo for Gcra {
    type State = GcraState;

    fn fresh(&self, now: i64) -> GcraState {
        GcraState {
            tat: now as i128 * self.n,
        }
    }

    #[inline]
    fn check(&self, s: &GcraState, now: i64, cost: u64) -> Option<u32> {
        if cost > self.burst {
            return None; // governor: InsufficientCapacity
        }
        let t0 = now as i128 * self.n;
        // earliest = TAT + (c−1)·T − (b−1)·T = TAT − (b−c)·T
        let earliest = s.tat - (self.burst - cost) as i128 * self.w;
        (t0 >= earliest).then_some(0)
    }

    #[inline]
    fn commit(&self, s: &mut GcraState, now: i64, cost: u64) {
        let t0 = now as i128 * self.n;
        s.tat = s.tat.max(t0) + cost as i128 * self.w;
    }

    fn idle(&self, s: &GcraState, now: i64) -> bool {
        s.tat <= now as i128 * self.n
    }

    fn horizon_ms(&self) -> i64 {
        let h = (self.burst as i128 * self.w) / self.n.max(1) + 1;
        h.min(i64::MAX as i128) as i64
    }
}
