//! HAProxy stick tables, exactly as HAProxy 2.6 counts (from its source:
//! `include/haproxy/freq_ctr.h`, `src/freq_ctr.c`, `src/stick_table.c`,
//! `src/http_act.c`): the `http_req_rate(P)` frequency counter ([`FreqCtr`]), entries
//! that expire `expire` ms after their last touch, `gpc0`. The `http-request` program
//! of a frontend that runs over them is in `haproxy_program.rs`.
//!
//! Not a token bucket: every tracked request is counted, refused or not, *before* the
//! deny is evaluated, and the rate is `curr + ⌊prev·remain/period⌋`, periods starting
//! on the even millisecond at or below the first request after a gap of two periods.
//! `algo=haproxy` in a spec is [`HaproxyRate`]: one table, `track` then `deny if rate
//! > N`. A whole haproxy.cfg is read by `replay::conf::haproxy_cfg`.

use super::store::{Algo, KeyMap};

/// HAProxy's `struct freq_ctr` read over a period (`update_freq_ctr_period()`,
/// `read_freq_ctr_period()`): the start tick of the current period, its count and the
/// previous period's count. A fresh counter (all zero in HAProxy) starts its first
/// period at `now & !1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreqCtr {
    /// Start of the current period (ms, even).
    pub tick: i64,
    /// Events in the current period.
    pub curr: u32,
    /// Events in the previous period.
    pub prev: u32,
}

impl Default for FreqCtr {
    fn default() -> Self {
        FreqCtr::NEW
    }
}

impl FreqCtr {
    /// A counter that has seen nothing (its first update restarts the period).
    pub const NEW: FreqCtr = FreqCtr {
        tick: i64::MIN,
        curr: 0,
        prev: 0,
    };

    /// Counts one event at `now` (`update_freq_ctr_period(ctr, period, 1)`): within the
    /// period, `curr += 1`; else rotate (`prev = curr`, `curr = 1`, the period advances
    /// by exactly `period`), and after two periods or more restart at `now`. The tick
    /// is stored with bit 0 cleared (HAProxy's rotation lock bit).
    #[inline]
    pub fn update(&mut self, now: i64, period: u32) {
        let p = i64::from(period);
        if now.saturating_sub(self.tick) < p {
            self.curr = self.curr.saturating_add(1);
            return;
        }
        self.prev = self.curr;
        self.curr = 1;
        let mut t = self.tick.saturating_add(p);
        if now.saturating_sub(t) >= p {
            self.prev = 0;
            t = now;
        }
        self.tick = t & !1;
    }

    /// The rate at `now` (`read_freq_ctr_period()` = `freq_ctr_total(ctr, period, -1) /
    /// period`): `⌊(prev·remain + curr·period) / period⌋` with `remain = tick + period −
    /// now`; past the period the current count becomes the previous one; below two
    /// events with nothing current, the previous count as is (flapping correction).
    #[inline]
    pub fn read(&self, now: i64, period: u32) -> u32 {
        let p = i64::from(period.max(1));
        let mut curr = u64::from(self.curr);
        let mut past = u64::from(self.prev);
        let mut remain = self.tick.saturating_add(p).saturating_sub(now);
        if remain < 0 {
            remain = remain.saturating_add(p);
            past = if remain >= 0 { curr } else { 0 };
            curr = 0;
        }
        if curr == 0 && past <= 1 {
            return past as u32;
        }
        let remain = remain.clamp(0, p) as u64;
        let total = past * remain + curr * p as u64;
        (total / p as u64).min(u64::from(u32::MAX)) as u32
    }
}

/// `algo=haproxy`: one stick table storing `http_req_rate(period)`, entries expiring
/// `expire` ms after their last request, and `deny if { sc_http_req_rate(0) gt limit }`
/// right after the track. Every request counts, refused or not.
#[derive(Clone, Debug)]
pub struct HaproxyRate {
    limit: u64,
    period: u32,
    expire: i64,
}

/// Per-key state of [`HaproxyRate`].
#[derive(Clone, Debug)]
pub struct HaproxyRateState {
    ctr: FreqCtr,
    expire_at: i64,
}

impl HaproxyRate {
    /// Deny above `limit` requests per `period_ms`, entries expiring after `expire_ms`.
    pub fn new(limit: u64, period_ms: u64, expire_ms: u64) -> Self {
        HaproxyRate {
            limit,
            period: period_ms.clamp(1, u64::from(u32::MAX)) as u32,
            expire: expire_ms.min(i64::MAX as u64 / 4) as i64,
        }
    }

    #[inline]
    fn count(&self, s: &mut HaproxyRateState, now: i64) -> u32 {
        if now >= s.expire_at {
            s.ctr = FreqCtr::NEW;
        }
        s.ctr.update(now, self.period);
        s.expire_at = now.saturating_add(self.expire);
        s.ctr.read(now, self.period)
    }
}

impl Algo for HaproxyRate {
    const WEIGHS_COST: bool = false;

    type State = HaproxyRateState;

    fn fresh(&self, _now: i64) -> HaproxyRateState {
        HaproxyRateState {
            ctr: FreqCtr::NEW,
            expire_at: i64::MIN,
        }
    }

    fn check(&self, s: &HaproxyRateState, now: i64, _cost: u64) -> Option<u32> {
        let mut t = s.clone();
        (u64::from(self.count(&mut t, now)) <= self.limit).then_some(0)
    }

    fn commit(&self, s: &mut HaproxyRateState, now: i64, _cost: u64) {
        self.count(s, now);
    }

    /// Counts the request whatever the outcome (HAProxy counts refused requests too).
    #[inline]
    fn check_commit(&self, s: &mut HaproxyRateState, now: i64, _cost: u64) -> Option<u32> {
        (u64::from(self.count(s, now)) <= self.limit).then_some(0)
    }

    fn idle(&self, s: &HaproxyRateState, now: i64) -> bool {
        now >= s.expire_at
    }

    fn horizon_ms(&self) -> i64 {
        self.expire
    }
}

/// One entry of a stick table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    rate: FreqCtr,
    gpc0: u32,
    expire_at: i64,
}

/// A stick table: what it stores, its expiry, its entries.
pub struct StickTable {
    /// `http_req_rate(P)`: the period in ms.
    pub(crate) period: Option<u32>,
    /// `http_req_cnt` stored (a track touches the entry).
    pub(crate) counts: bool,
    /// `expire` in ms (0 = never).
    pub(crate) expire: i64,
    entries: KeyMap<Entry>,
    next_sweep: i64,
    peak: usize,
}

impl StickTable {
    /// A table storing `http_req_rate(period_ms)` (if given), expiring entries after
    /// `expire_ms` (0 = never).
    pub fn new(period_ms: Option<u32>, counts: bool, expire_ms: u64) -> StickTable {
        StickTable {
            period: period_ms.map(|p| p.max(1)),
            counts,
            expire: expire_ms.min(i64::MAX as u64 / 4) as i64,
            entries: KeyMap::new(),
            next_sweep: i64::MIN,
            peak: 0,
        }
    }

    fn live(&self, e: &Entry, now: i64) -> bool {
        self.expire == 0 || now < e.expire_at
    }

    /// `track-scN` at `now`: finds or creates the entry (an expired one is gone: a new
    /// one is made), counts the request in `http_req_rate`, touches it.
    pub(crate) fn track(&mut self, now: i64, key: &[u8]) {
        self.sweep(now);
        let (period, touch, expire) = (
            self.period,
            self.counts || self.period.is_some(),
            self.expire,
        );
        let fresh = Entry {
            rate: FreqCtr::NEW,
            gpc0: 0,
            expire_at: now.saturating_add(expire),
        };
        let live = |e: &Entry| expire == 0 || now < e.expire_at;
        self.entries.upsert(
            key,
            || fresh,
            |e| {
                if !live(e) {
                    *e = fresh;
                }
                if let Some(p) = period {
                    e.rate.update(now, p);
                }
                if touch {
                    e.expire_at = now.saturating_add(expire);
                }
                ((), true)
            },
        );
        self.peak = self.peak.max(self.entries.len());
    }

    /// `sc-inc-gpc0`: increments gpc0 of a tracked entry and touches it.
    pub(crate) fn inc_gpc0(&mut self, now: i64, key: &[u8]) {
        let expire = self.expire;
        self.entries.upsert(
            key,
            || Entry {
                rate: FreqCtr::NEW,
                gpc0: 0,
                expire_at: now.saturating_add(expire),
            },
            |e| {
                e.gpc0 = e.gpc0.saturating_add(1);
                e.expire_at = now.saturating_add(expire);
                ((), true)
            },
        );
    }

    /// `sc_http_req_rate` of a tracked entry at `now`.
    pub(crate) fn rate(&self, now: i64, key: &[u8]) -> u64 {
        match (self.entries.get(key), self.period) {
            (Some(e), Some(p)) if self.live(e, now) => u64::from(e.rate.read(now, p)),
            _ => 0,
        }
    }

    /// `sc_get_gpc0` of a tracked entry.
    pub(crate) fn gpc0(&self, now: i64, key: &[u8]) -> u64 {
        match self.entries.get(key) {
            Some(e) if self.live(e, now) => u64::from(e.gpc0),
            _ => 0,
        }
    }

    /// Entries held now (expired ones are dropped lazily).
    pub fn live_keys(&self) -> usize {
        self.entries.len()
    }

    /// Most entries held at once.
    pub fn peak_keys(&self) -> usize {
        self.peak
    }

    fn sweep(&mut self, now: i64) {
        if self.expire == 0 || now < self.next_sweep {
            return;
        }
        let expire = self.expire;
        self.entries.retain(|e| expire == 0 || now < e.expire_at);
        self.next_sweep = now.saturating_add(self.expire.max(1000));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: i64 = 1_796_116_512_375; // odd on purpose

    #[test]
    fn first_period_starts_on_the_even_millisecond() {
        let mut c = FreqCtr::NEW;
        c.update(T, 1000);
        assert_eq!(c.tick, T - 1);
        assert_eq!((c.curr, c.prev), (1, 0));
        assert_eq!(c.read(T, 1000), 1);
    }

    #[test]
    fn rollover_weights_the_previous_period_by_what_remains() {
        let mut c = FreqCtr::NEW;
        let t0 = T - 1; // even
        for i in 0..40 {
            c.update(t0 + i * 10, 1000);
        }
        assert_eq!(c.read(t0 + 390, 1000), 40);
        // 250 ms into the next period: 40 · 750/1000 = 30, plus the new one.
        c.update(t0 + 1250, 1000);
        assert_eq!(c.tick, t0 + 1000, "periods follow each other exactly");
        assert_eq!((c.curr, c.prev), (1, 40));
        assert_eq!(c.read(t0 + 1250, 1000), 31);
        // The estimate steps by one every period/prev = 25 ms.
        assert_eq!(c.read(t0 + 1274, 1000), 1 + (40 * 726) / 1000);
        assert_eq!(c.read(t0 + 1276, 1000), 29);
        // Read in the period after: curr becomes the past; one past event reads as 1
        // (flapping correction), and two periods on, nothing.
        assert_eq!(c.read(t0 + 2500, 1000), 1);
        assert_eq!(c.read(t0 + 3000, 1000), 1);
        assert_eq!(c.read(t0 + 3001, 1000), 0);
    }

    #[test]
    fn two_idle_periods_restart_from_zero_at_now() {
        let mut c = FreqCtr::NEW;
        for i in 0..10 {
            c.update(T + i, 1000);
        }
        c.update(T + 2003, 1000);
        assert_eq!((c.curr, c.prev), (1, 0));
        assert_eq!(c.tick, (T + 2003) & !1);
        assert_eq!(c.read(T + 2003, 1000), 1);
    }

    #[test]
    fn refused_requests_count_and_expiry_forgets() {
        let mut z = super::super::store::Store::new(HaproxyRate::new(3, 10_000, 10_000));
        use super::super::store::Lookup;
        let got: Vec<bool> = (0..6)
            .map(|i| z.lookup(T + i * 100, b"k", 1, true) != Lookup::Busy)
            .collect();
        assert_eq!(got, [true, true, true, false, false, false]);
        // 9.9 s after the last: still there (rate weighted from the last period).
        assert_eq!(z.lookup(T + 500 + 9_900, b"k", 1, true), Lookup::Busy);
        // 10 s after the last request the entry is gone: a fresh start.
        assert_eq!(
            z.lookup(T + 10_400 + 10_000, b"k", 1, true),
            Lookup::Admit(0)
        );
        // Without expiry (expire = 2 periods) the weighted past would still refuse.
        let mut long = super::super::store::Store::new(HaproxyRate::new(3, 10_000, 30_000));
        for i in 0..8 {
            long.lookup(T + i * 100, b"k", 1, true);
        }
        assert_eq!(long.lookup(T + 12_000, b"k", 1, true), Lookup::Busy);
    }

    #[test]
    fn table_gpc0_lasts_while_the_client_keeps_trying() {
        let mut t = StickTable::new(Some(10_000), false, 20_000);
        t.track(T, b"k");
        t.inc_gpc0(T, b"k");
        for i in 1..10 {
            t.track(T + i * 15_000, b"k");
            assert_eq!(t.gpc0(T + i * 15_000, b"k"), 1);
        }
        let back = T + 9 * 15_000 + 20_000;
        t.track(back, b"k");
        assert_eq!(t.gpc0(back, b"k"), 0);
        assert_eq!(t.rate(back, b"k"), 1);
    }
}
