//! Fixed window counter: at most N per window of W ms, windows aligned to the Unix epoch
//! (so `100/m` resets at every whole minute, UTC). Refused requests are not counted.
//! Up to 2N can pass in a short span across a window edge (seed 001's boundary burst).

use super::store::Algo;

/// Fixed window parameters.
#[derive(Clone, Debug)]
pub struct FixedWindow {
    n: u64,
    w: i64,
}

/// Per-key state: the window index and its count.
#[derive(Clone, Debug)]
pub struct WindowState {
    idx: i64,
    count: u64,
}

impl FixedWindow {
    /// `n` per window of `w` ms.
    pub fn new(n: u64, w: u64) -> Self {
        FixedWindow { n, w: w as i64 }
    }

    #[inline]
    fn count_at(&self, s: &WindowState, now: i64) -> (i64, u64) {
        let idx = now.div_euclid(self.w);
        (idx, if s.idx == idx { s.count } else { 0 })
    }
}

impl Algo for FixedWindow {
    type State = WindowState;

    fn fresh(&self, now: i64) -> WindowState {
        WindowState {
            idx: now.div_euclid(self.w),
            count: 0,
        }
    }

    #[inline]
    fn check(&self, s: &WindowState, now: i64, cost: u64) -> Option<u32> {
        let (_, c) = self.count_at(s, now);
        (c.saturating_add(cost) <= self.n).then_some(0)
    }

    #[inline]
    fn commit(&self, s: &mut WindowState, now: i64, cost: u64) {
        let (idx, c) = self.count_at(s, now);
        if idx >= s.idx {
            s.idx = idx;
            s.count = c.saturating_add(cost);
        }
    }

    fn idle(&self, s: &WindowState, now: i64) -> bool {
        self.count_at(s, now).1 == 0
    }

    fn horizon_ms(&self) -> i64 {
        self.w
    }
}
