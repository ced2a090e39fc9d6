//! Leaky bucket as a queue (seed 001): requests leave at rate r, one every 1/r (cost c
//! takes c/r); a request waits until the ones before it have left; if more than `queue`
//! (in cost units) would be waiting ahead of it, it is refused and takes no place.
//! Decisions come with the delay in ms (rounded up).

use super::store::Algo;

/// Leaky queue parameters, time in units of 1/n ms.
#[derive(Clone, Debug)]
pub struct LeakyQueue {
    n: i128,
    w: i128,
    queue: u64,
}

/// Per-key state: when the queue is next free, in units of 1/n ms.
#[derive(Clone, Debug)]
pub struct QueueState {
    next_free: i128,
}

impl LeakyQueue {
    /// Drains `n` every `w` ms; at most `queue` waiting.
    pub fn new(n: u64, w: u64, queue: u64) -> Self {
        LeakyQueue {
            n: n as i128,
            w: w as i128,
            queue,
        }
    }
}

impl Algo for LeakyQueue {
    const WEIGHS_COST: bool = false;

    type State = QueueState;

    fn fresh(&self, now: i64) -> QueueState {
        QueueState {
            next_free: now as i128 * self.n,
        }
    }

    #[inline]
    fn check(&self, s: &QueueState, now: i64, _cost: u64) -> Option<u32> {
        let t = now as i128 * self.n;
        let wait = (s.next_free - t).max(0);
        if wait > self.queue as i128 * self.w {
            return None;
        }
        let ms = (wait + self.n - 1) / self.n;
        Some(ms.min(u32::MAX as i128) as u32)
    }

    #[inline]
    fn commit(&self, s: &mut QueueState, now: i64, cost: u64) {
        let t = now as i128 * self.n;
        s.next_free = s.next_free.max(t) + cost as i128 * self.w;
    }

    fn idle(&self, s: &QueueState, now: i64) -> bool {
        s.next_free <= now as i128 * self.n
    }

    fn horizon_ms(&self) -> i64 {
        let h = ((self.queue as i128 + 1) * self.w) / self.n.max(1) + 1;
        h.min(i64::MAX as i128) as i64
    }
}
