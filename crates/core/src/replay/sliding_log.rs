//! Exact sliding-window log: a request costing c passes iff the admitted cost in the last
//! `span` ms plus c is at most N. With span = W (`sliding-log`) no window [t, t+W) ever
//! holds more than N; Caddy's rate_limit is the same log with span = W + 1 (see caddy.rs).
//! Memory: one entry per admitted distinct millisecond still in the window.

use std::collections::VecDeque;

use super::store::Algo;

/// Sliding log parameters.
#[derive(Clone, Debug)]
pub struct SlidingLog {
    n: u64,
    span: i64,
}

/// Per-key state: admitted (time, cost) entries in the window, oldest first, and their sum.
#[derive(Clone, Debug, Default)]
pub struct LogState {
    entries: VecDeque<(i64, u64)>,
    sum: u64,
}

impl SlidingLog {
    /// At most `n` in any `span` consecutive ms.
    pub fn new(n: u64, span: u64) -> Self {
        SlidingLog {
            n,
            span: span as i64,
        }
    }

    /// Cost still inside the window at `now`, without changing the state.
    #[inline]
    fn live_sum(&self, s: &LogState, now: i64) -> u64 {
        let mut sum = s.sum;
        for &(t, c) in &s.entries {
            if now - t < self.span {
                break;
            }
            sum -= c;
        }
        sum
    }

    #[inline]
    fn expire(&self, s: &mut LogState, now: i64) {
        while let Some(&(t, c)) = s.entries.front() {
            if now - t < self.span {
                break;
            }
            s.sum -= c;
            s.entries.pop_front();
        }
    }
}

impl Algo for SlidingLog {
    type State = LogState;

    fn fresh(&self, _now: i64) -> LogState {
        LogState::default()
    }

    #[inline]
    fn check(&self, s: &LogState, now: i64, cost: u64) -> Option<u32> {
        (self.live_sum(s, now).saturating_add(cost) <= self.n).then_some(0)
    }

    #[inline]
    fn commit(&self, s: &mut LogState, now: i64, cost: u64) {
        self.expire(s, now);
        push(s, now, cost);
    }

    #[inline]
    fn check_commit(&self, s: &mut LogState, now: i64, cost: u64) -> Option<u32> {
        self.expire(s, now);
        if s.sum.saturating_add(cost) <= self.n {
            push(s, now, cost);
            Some(0)
        } else {
            None
        }
    }

    fn idle(&self, s: &LogState, now: i64) -> bool {
        match s.entries.back() {
            None => true,
            Some(&(t, _)) => now - t >= self.span,
        }
    }

    fn horizon_ms(&self) -> i64 {
        self.span
    }
}

#[inline]
fn push(s: &mut LogState, now: i64, cost: u64) {
    if cost == 0 {
        return;
    }
    s.sum += cost;
    match s.entries.back_mut() {
        Some((t, c)) if *t >= now => *c += cost,
        _ => s.entries.push_back((now, cost)),
    }
}
