//! What a ban zone tells the report: each ban (key, start, end, number, requests
//! lost), its tallies, and the ban that refused the last refused request.

/// One ban, as the report lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BanRecord {
    /// The key's bytes ([`super::key_text`] shows them).
    pub key: Box<[u8]>,
    /// When it started, ms since the epoch (the triggering request's decision time).
    pub start_ms: i64,
    /// When it ends: exclusive for `algo=ban`; for a fail2ban jail the ban includes it
    /// (fail2ban unbans once the time is past it). `i64::MAX` = never.
    pub end_ms: i64,
    /// Its number for this key: 1 for the first, 2 for the second… (increments).
    pub nth: u32,
    /// Requests of the key refused during it (the triggering one included when refused).
    pub lost: u64,
    /// Requests that restarted it (`extend`).
    pub extended: u64,
}

impl BanRecord {
    /// Its length, ms (`None`: for ever).
    pub fn length_ms(&self) -> Option<u64> {
        (self.end_ms != i64::MAX).then(|| (self.end_ms - self.start_ms) as u64)
    }
}

/// Tallies of a ban zone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BanCounters {
    /// Bans started.
    pub bans: u64,
    /// Requests refused because their key was banned (triggers included when refused).
    pub lost: u64,
    /// Requests challenged.
    pub challenged: u64,
    /// Counted requests (matched the count filter, not banned).
    pub counted: u64,
}

/// What a ban zone tells the report: its bans, its tallies, the ban that refused last.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    pub(crate) bans: Vec<BanRecord>,
    pub(crate) counters: BanCounters,
    /// Index in the ban log of the ban that refused the last refused request.
    pub(crate) last_hit: Option<u32>,
}
