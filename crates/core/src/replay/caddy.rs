//! Caddy `rate_limit` (mholt/caddy-ratelimit ringbuffer.go): per key a ring of `events`
//! timestamps; a request passes iff `now − ring[oldest] > window` (strict), then takes
//! the oldest slot; refused requests do not take one. That is: fewer than `events`
//! admitted in the closed interval [now − window, now] — a sliding log whose span is
//! window + 1 ms. Zone ordering across a handler lives in the policy (most permissive
//! first, earlier zones keep their slot when a later one refuses).

use super::sliding_log::SlidingLog;

/// Caddy's limiter for `events` per `window_ms`.
pub fn caddy(events: u64, window_ms: u64) -> SlidingLog {
    SlidingLog::new(events, window_ms + 1)
}
