//! What a client would have been told with each decision: the `Retry-After` of a refusal
//! and the `X-RateLimit-Limit`/`-Remaining`/`-Reset` of any answer, computed from the
//! deciding zone's own state just after it decided (time passed in).
//!
//! For the limiters behind [`Algo`] the values come from the algorithm's own `check` and
//! `idle`, which are pure in time: the wait is the least time after which `check` admits
//! the request (found by doubling, then halving — a waiting key's state only recovers),
//! the reset the least time after which the state is as good as new, the remaining the
//! unit requests that would pass now one after the other (at most [`REMAINING_CAP`]).
//! nginx's zone and the ban zones have closed forms of their own.

use super::store::{Algo, Store};

/// The most requests counted for `remaining` (it is "at least" beyond).
pub const REMAINING_CAP: u64 = 10_000;

/// The most requests simulated one by one for `remaining` where the algorithm does not
/// weigh a cost (leaky queue, HAProxy's counter): their room is small.
const SIMULATED_CAP: u64 = 256;

/// The values a client would have seen with one decision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientView {
    /// Requests the client could still send now without being refused (capped at
    /// [`REMAINING_CAP`]).
    pub remaining: u64,
    /// How long until its quota is whole again, ms (`X-RateLimit-Reset`).
    pub reset_ms: u64,
    /// How long until the same request would pass, ms (`Retry-After`); 0 when it passes
    /// now, `None` when it never would (a cost above what the limiter can hold, a ban
    /// for ever).
    pub retry_after_ms: Option<u64>,
}

impl ClientView {
    /// `Retry-After` in whole seconds, as HTTP says it (rounded up; empty: never).
    pub fn retry_after_s(&self) -> Option<u64> {
        self.retry_after_ms.map(|ms| ms.div_ceil(1000))
    }

    /// `X-RateLimit-Reset` in whole seconds (rounded up).
    pub fn reset_s(&self) -> u64 {
        self.reset_ms.div_ceil(1000)
    }
}

/// The least `d` in `0..=limit` with `ok(d)`, for `ok` monotone (false then true); `None`
/// when even `ok(limit)` is false. Doubling, then halving: O(log d) calls.
fn least(limit: u64, ok: impl Fn(u64) -> bool) -> Option<u64> {
    if ok(0) {
        return Some(0);
    }
    let (mut lo, mut hi) = (0u64, 1u64);
    loop {
        let h = hi.min(limit);
        if ok(h) {
            hi = h;
            break;
        }
        if h >= limit {
            return None;
        }
        lo = h;
        hi = hi.saturating_mul(2);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

impl<A: Algo> Store<A>
where
    A::State: Clone,
{
    /// What a client sending `key` a request costing `cost` would be told at `now`
    /// (without `full`, only `retry_after_ms`: the report's summary of refusals).
    pub(crate) fn client_view(&self, now: i64, key: &[u8], cost: u64, full: bool) -> ClientView {
        let fresh;
        let s = match self.state(key) {
            Some(s) => s,
            None => {
                fresh = self.algo.fresh(now);
                &fresh
            }
        };
        let a = &self.algo;
        let horizon = a.horizon_ms().max(1) as u64 + 1;
        let at = |d: u64| now.saturating_add(d.min(i64::MAX as u64) as i64);
        let retry_after_ms = least(horizon, |d| a.check(s, at(d), cost).is_some());
        if !full {
            return ClientView {
                retry_after_ms,
                ..ClientView::default()
            };
        }
        let reset_ms = least(horizon, |d| a.idle(s, at(d))).unwrap_or(horizon);
        // The most requests that would pass at once: the largest cost `check` admits
        // without delay (O(log n) checks), or, where the cost is not weighed, one by one.
        let remaining = if A::WEIGHS_COST {
            least(REMAINING_CAP + 1, |c| a.check(s, now, c + 1) != Some(0)).unwrap_or(REMAINING_CAP)
        } else {
            let mut sim = s.clone();
            let mut n = 0;
            while n < SIMULATED_CAP && a.check(&sim, now, 1) == Some(0) {
                a.commit(&mut sim, now, 1);
                n += 1;
            }
            n
        };
        ClientView {
            remaining,
            reset_ms,
            retry_after_ms,
        }
    }
}
