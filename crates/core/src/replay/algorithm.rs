//! The limiter algorithms the replay knows, and their registry: one row each (the name
//! `algo=` takes, its other spellings, whether `burst=` applies). Adding an algorithm is
//! one file with its `Algo` implementation (`gcra.rs` is the model), a variant here with
//! its row, and the arms the compiler then asks for: the zone that runs it (`zone.rs`),
//! its description (`spec.rs`) and HAProxy's nearest limiter (`conf/emit_haproxy.rs`).

use std::fmt;

/// The limiter algorithms the replay knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    /// Exact sliding-window log: at most N admitted in any window of W ms (half-open).
    SlidingLog,
    /// nginx `limit_req`, exactly (integer milli-requests, burst, nodelay, delay=).
    Nginx,
    /// Caddy `rate_limit` (mholt/caddy-ratelimit): ring of N timestamps, admit iff the
    /// oldest is more than W ago (closed window).
    Caddy,
    /// Continuous token bucket: capacity b, refill r, starts full.
    TokenBucket,
    /// GCRA as the Rust `governor` crate does it (same decisions as the token bucket).
    Gcra,
    /// Fixed window aligned to the Unix epoch: N per window, counter reset at the edge.
    FixedWindow,
    /// Sliding-window counter: previous window weighted by its overlap plus current.
    SlidingWindow,
    /// Leaky bucket as a queue: requests leave at rate r, at most `queue` waiting.
    LeakyQueue,
    /// HAProxy stick table `http_req_rate(W)`, denied above N: every request counts,
    /// refused or not; rate = current period + previous weighted by what remains of it;
    /// entries expire `expire=` ms after their last request (default: W).
    Haproxy,
    /// Ban policy (fail2ban, seed 001): more than N counted requests of a key in any W
    /// bans the key for `ban=` (see `ban.rs`); optional `challenge=` class.
    Ban,
}

/// One algorithm's registry row.
pub struct Row {
    /// The canonical name (`sliding-log`, `nginx`, …).
    pub name: &'static str,
    /// Other accepted spellings of `algo=` (after lower-casing and `_` → `-`).
    pub aliases: &'static [&'static str],
    /// Whether `burst=` means something for it.
    pub takes_burst: bool,
}

const fn row(name: &'static str, aliases: &'static [&'static str], takes_burst: bool) -> Row {
    Row {
        name,
        aliases,
        takes_burst,
    }
}

/// Every algorithm, in the order messages list them.
pub const ALGORITHMS: [Algorithm; 10] = [
    Algorithm::SlidingLog,
    Algorithm::Nginx,
    Algorithm::Caddy,
    Algorithm::TokenBucket,
    Algorithm::Gcra,
    Algorithm::FixedWindow,
    Algorithm::SlidingWindow,
    Algorithm::LeakyQueue,
    Algorithm::Haproxy,
    Algorithm::Ban,
];

impl Algorithm {
    /// Its registry row.
    pub const fn row(&self) -> Row {
        match self {
            Algorithm::SlidingLog => {
                row("sliding-log", &["log", "sliding-window-log", "swl"], false)
            }
            Algorithm::Nginx => row("nginx", &["limit-req"], true),
            Algorithm::Caddy => row("caddy", &["rate-limit", "caddy-ratelimit"], false),
            Algorithm::TokenBucket => row("token-bucket", &["tb", "bucket"], true),
            Algorithm::Gcra => row("gcra", &["governor"], true),
            Algorithm::FixedWindow => row("fixed-window", &["fixed", "fw"], false),
            Algorithm::SlidingWindow => {
                row("sliding-window", &["sliding-window-counter", "swc"], false)
            }
            Algorithm::LeakyQueue => row("leaky-queue", &["leaky", "leaky-bucket", "queue"], true),
            Algorithm::Haproxy => row("haproxy", &["stick-table", "http-req-rate"], false),
            Algorithm::Ban => row("ban", &["fail2ban"], false),
        }
    }

    /// Parses an algorithm name or one of its spellings (`log`, `limit_req`, `tb`, …).
    pub fn parse(s: &str) -> Option<Algorithm> {
        let s = s.trim().to_ascii_lowercase().replace('_', "-");
        ALGORITHMS.into_iter().find(|a| {
            let r = a.row();
            r.name == s || r.aliases.contains(&s.as_str())
        })
    }

    /// The canonical name (`sliding-log`, `nginx`, …).
    pub const fn name(&self) -> &'static str {
        self.row().name
    }

    /// Whether `burst=` means something for this algorithm.
    pub const fn takes_burst(&self) -> bool {
        self.row().takes_burst
    }
}

/// The names `algo=` takes, for messages: `sliding-log, nginx, …`.
pub fn algo_names() -> String {
    ALGORITHMS.map(|a| a.name()).join(", ")
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_names_one_algorithm() {
        let mut seen = std::collections::BTreeSet::new();
        for a in ALGORITHMS {
            let r = a.row();
            for n in std::iter::once(r.name).chain(r.aliases.iter().copied()) {
                assert!(seen.insert(n), "{n} names two algorithms");
                assert_eq!(Algorithm::parse(n), Some(a));
                assert_eq!(
                    Algorithm::parse(&n.replace('-', "_").to_uppercase()),
                    Some(a)
                );
            }
        }
        assert_eq!(
            algo_names(),
            "sliding-log, nginx, caddy, token-bucket, gcra, fixed-window, sliding-window, leaky-queue, haproxy, ban"
        );
    }
}
