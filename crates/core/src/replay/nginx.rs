//! nginx `limit_req`, exactly as ngx_http_limit_req_module.c (1.22) does it.
//!
//! * Rate in integer milli-requests per second (`30r/m` = 500, `1r/m` = 16); burst and
//!   delay ×1000; `nodelay` = an infinite delay threshold.
//! * Per key: `excess` (milli-requests) and `last` (ms of the last accepted request).
//!   `ms = now − last` (0 if negative, 1 if below −60000);
//!   `excess = max(0, excess − rate·ms/1000 + 1000)`; refused iff `excess > burst`
//!   (strictly) and then nothing changes; else `excess` is stored and `last = now` if
//!   `ms ≠ 0`. A new key starts at excess 0, so its first request is free.
//! * Several limits on one location: all but the last are only looked up (marked pending,
//!   not charged); if any refuses nothing is charged; else all are charged and the
//!   largest delay wins (the policy drives this; see policy.rs).
//! * Delay: `(excess − delay)·1000/rate` ms when `excess > delay`.
//! * Memory: nodes sit in an LRU queue; before a new node is made, up to two nodes at the
//!   LRU tail are freed if not pending, idle ≥ 60 s and drained
//!   (`excess − rate·ms/1000 ≤ 0`) — this can change a later decision, so it is modelled
//!   exactly; with `max_keys` set, a full zone frees its oldest node by force, as a full
//!   shared-memory zone does.
//!
//! Cost generalises the `+1000` to `+1000·cost` (nginx itself has no cost).

use super::store::KeyMap;

const NIL: u32 = u32::MAX;

/// `delay` value meaning `nodelay` (nginx: `NGX_MAX_INT_T_VALUE / 1000 * 1000`).
pub const NODELAY_MILLI: u64 = (i64::MAX as u64) / 1000 * 1000;

/// The per-`limit_req` parameters, ×1000 like nginx stores them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NginxLimit {
    /// `burst` × 1000.
    pub burst_milli: u64,
    /// `delay` × 1000; [`NODELAY_MILLI`] for `nodelay`; 0 by default.
    pub delay_milli: u64,
}

#[derive(Clone, Debug)]
struct Node {
    excess: i64,
    last: i64,
    count: u32,
    prev: u32,
    next: u32,
    key: Box<[u8]>,
}

/// What a lookup says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NgxRc {
    /// Accepted and charged (last limit); the excess it left; whether on a boundary.
    Ok(i64, bool),
    /// Refused; whether on a boundary.
    Busy(bool),
    /// Pending (not the last limit), charged later by `account`; whether on a boundary.
    Again(bool),
}

/// One `limit_req_zone`: its rate and its nodes.
#[derive(Clone, Debug)]
pub struct NginxZone {
    rate: i64,
    map: KeyMap<u32>,
    nodes: Vec<Node>,
    free: Vec<u32>,
    head: u32,
    tail: u32,
    pending: u32,
    max_keys: Option<usize>,
    peak: usize,
}

impl NginxZone {
    /// A zone with `rate_milli` milli-requests per second; `max_keys` bounds the nodes
    /// (a stand-in for the zone's shared-memory size; `None` = unbounded).
    pub fn new(rate_milli: u64, max_keys: Option<usize>) -> Self {
        NginxZone {
            rate: rate_milli.min(i64::MAX as u64) as i64,
            map: KeyMap::new(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            pending: NIL,
            max_keys,
            peak: 0,
        }
    }

    /// Nodes held now.
    pub fn live_keys(&self) -> usize {
        self.map.len()
    }

    /// Most nodes held at once.
    pub fn peak_keys(&self) -> usize {
        self.peak
    }

    #[inline]
    fn leak(&self, ms: i64) -> i128 {
        self.rate as i128 * ms as i128 / 1000
    }

    #[inline]
    fn new_excess(&self, node: &Node, now: i64, cost: u64) -> (i64, i64) {
        let mut ms = now.wrapping_sub(node.last);
        if ms < -60000 {
            ms = 1;
        } else if ms < 0 {
            ms = 0;
        }
        let e = node.excess as i128 - self.leak(ms) + 1000 * cost as i128;
        (e.clamp(0, i64::MAX as i128) as i64, ms)
    }

    /// What a client sending `key` a request costing `cost` would be told at `now`:
    /// nginx's excess leaks at the zone's rate, a request passes while the excess it
    /// leaves is at most the burst.
    pub(crate) fn client_view(
        &self,
        now: i64,
        key: &[u8],
        cost: u64,
        limit: &NginxLimit,
    ) -> super::ClientView {
        let burst = limit.burst_milli as i128;
        let cap = super::REMAINING_CAP;
        let Some(&i) = self.map.get(key) else {
            return super::ClientView {
                remaining: ((burst / 1000) as u64).saturating_add(1).min(cap),
                reset_ms: 0,
                retry_after_ms: Some(0),
            };
        };
        let node = &self.nodes[i as usize];
        let ms = now.saturating_sub(node.last).max(0);
        let left = (node.excess as i128 - self.leak(ms)).max(0);
        let rate = (self.rate as i128).max(1);
        // leak(t) = rate·t/1000 ≥ x  ⇔  t ≥ ⌈1000·x / rate⌉.
        let until =
            |x: i128| -> u64 { ((1000 * x.max(0) + rate - 1) / rate).min(u64::MAX as i128) as u64 };
        let need = node.excess as i128 + 1000 * cost as i128 - burst;
        let retry = until(need).saturating_sub(ms as u64);
        super::ClientView {
            remaining: (((burst - left) / 1000).max(0) as u64).min(cap),
            reset_ms: until(left),
            retry_after_ms: Some(retry),
        }
    }

    /// `ngx_http_limit_req_lookup`: `account` is true for the location's last limit.
    pub(crate) fn lookup(
        &mut self,
        now: i64,
        key: &[u8],
        cost: u64,
        limit: &NginxLimit,
        account: bool,
    ) -> NgxRc {
        if let Some(&i) = self.map.get(key) {
            self.bump(i);
            let node = &self.nodes[i as usize];
            let (excess, ms) = self.new_excess(node, now, cost);
            let boundary = self.on_boundary(node, ms, cost, limit.burst_milli);
            if excess as u64 > limit.burst_milli {
                return NgxRc::Busy(boundary);
            }
            let node = &mut self.nodes[i as usize];
            if account {
                node.excess = excess;
                if ms != 0 {
                    node.last = now;
                }
                return NgxRc::Ok(excess, boundary);
            }
            node.count += 1;
            self.pending = i;
            return NgxRc::Again(boundary);
        }

        self.expire(now, 1);
        if let Some(max) = self.max_keys
            && self.map.len() >= max
        {
            self.expire(now, 0);
        }
        // A new key: excess 0 (its first request is free); with a cost above 1 the
        // rest of the cost is charged as excess.
        let excess = 1000 * cost.saturating_sub(1).min(1 << 40) as i64;
        let i = self.alloc(key);
        if excess as u64 > limit.burst_milli {
            // Allocated like nginx does before deciding, but left fresh.
            self.nodes[i as usize].last = 0;
            return NgxRc::Busy(false);
        }
        let node = &mut self.nodes[i as usize];
        node.excess = excess;
        if account {
            node.last = now;
            node.count = 0;
            return NgxRc::Ok(excess, false);
        }
        node.excess = 0;
        node.last = 0;
        node.count = 1;
        self.pending = i;
        NgxRc::Again(false)
    }

    /// Whether the refuse/admit decision would differ had `ms` been 1 ms shorter or
    /// longer: nginx measures it on its monotonic clock, the log on the wall clock, and
    /// the two can differ by ±1 ms (oracle README, "The residual: two clocks").
    #[inline]
    fn on_boundary(&self, node: &Node, ms: i64, cost: u64, burst_milli: u64) -> bool {
        let over = |m: i64| {
            let e = node.excess as i128 - self.leak(m) + 1000 * cost as i128;
            e > burst_milli as i128
        };
        over((ms - 1).max(0)) != over(ms + 1)
    }

    /// `ngx_http_limit_req_account` for this zone's pending node: charges it and returns
    /// the excess left.
    pub(crate) fn account(&mut self, now: i64, cost: u64) -> i64 {
        let i = self.pending;
        if i == NIL {
            return 0;
        }
        self.pending = NIL;
        let (excess, ms) = self.new_excess(&self.nodes[i as usize], now, cost);
        let node = &mut self.nodes[i as usize];
        if ms != 0 {
            node.last = now;
        }
        node.excess = excess;
        node.count -= 1;
        excess
    }

    /// Releases the pending node uncharged (a later limit refused).
    pub(crate) fn release(&mut self) {
        let i = self.pending;
        if i != NIL {
            self.nodes[i as usize].count -= 1;
            self.pending = NIL;
        }
    }

    /// The delay nginx asks for when `excess` is left under `limit`.
    #[inline]
    pub(crate) fn delay_ms(&self, excess: i64, limit: &NginxLimit) -> u64 {
        let e = excess as u64;
        if e <= limit.delay_milli {
            0
        } else {
            ((e - limit.delay_milli) as u128 * 1000 / self.rate.max(1) as u128) as u64
        }
    }

    /// `ngx_http_limit_req_expire(ctx, n)`: n = 1 frees up to two idle drained tail
    /// nodes; n = 0 frees the tail by force first.
    fn expire(&mut self, now: i64, mut n: u32) {
        while n < 3 {
            let t = self.tail;
            if t == NIL {
                return;
            }
            let node = &self.nodes[t as usize];
            if node.count != 0 {
                return;
            }
            let check = n != 0;
            n += 1;
            if check {
                let ms = now.wrapping_sub(node.last).wrapping_abs();
                if ms < 60000 {
                    return;
                }
                let excess = node.excess as i128 - self.leak(ms);
                if excess > 0 {
                    return;
                }
            }
            self.remove(t);
        }
    }

    fn alloc(&mut self, key: &[u8]) -> u32 {
        let node = Node {
            excess: 0,
            last: 0,
            count: 0,
            prev: NIL,
            next: NIL,
            key: key.into(),
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        self.map.insert(key, i);
        self.push_head(i);
        self.peak = self.peak.max(self.map.len());
        i
    }

    fn remove(&mut self, i: u32) {
        self.unlink(i);
        let key = std::mem::take(&mut self.nodes[i as usize].key);
        self.map.remove(&key);
        self.free.push(i);
    }

    fn unlink(&mut self, i: u32) {
        let (p, n) = {
            let node = &self.nodes[i as usize];
            (node.prev, node.next)
        };
        if p != NIL {
            self.nodes[p as usize].next = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.nodes[n as usize].prev = p;
        } else {
            self.tail = p;
        }
    }

    fn push_head(&mut self, i: u32) {
        let old = self.head;
        {
            let node = &mut self.nodes[i as usize];
            node.prev = NIL;
            node.next = old;
        }
        if old != NIL {
            self.nodes[old as usize].prev = i;
        } else {
            self.tail = i;
        }
        self.head = i;
    }

    #[inline]
    fn bump(&mut self, i: u32) {
        if self.head != i {
            self.unlink(i);
            self.push_head(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lim(burst: u64, delay: Option<u64>) -> NginxLimit {
        NginxLimit {
            burst_milli: burst * 1000,
            delay_milli: delay.map_or(NODELAY_MILLI, |d| d * 1000),
        }
    }

    #[test]
    fn idle_client_gets_burst_plus_one_then_the_rate() {
        let mut z = NginxZone::new(5000, None);
        let l = lim(10, None);
        let mut ok = 0;
        for _ in 0..20 {
            if let NgxRc::Ok(..) = z.lookup(1_000_000, b"a", 1, &l, true) {
                ok += 1;
            }
        }
        assert_eq!(ok, 11);
        // 200 ms later one more fits, 199 ms later none does.
        // Both sit on a 1 ms boundary; 300 ms later nothing is close.
        assert_eq!(z.lookup(1_000_199, b"a", 1, &l, true), NgxRc::Busy(true));
        assert_eq!(
            z.lookup(1_000_200, b"a", 1, &l, true),
            NgxRc::Ok(10_000, true)
        );
        assert_eq!(
            z.lookup(1_000_500, b"a", 1, &l, true),
            NgxRc::Ok(9_500, false)
        );
    }

    #[test]
    fn one_per_minute_is_sixteen_milli() {
        let mut z = NginxZone::new(16, None);
        let l = lim(0, None);
        assert_eq!(z.lookup(0, b"k", 1, &l, true), NgxRc::Ok(0, false));
        // 60 s later only 960 milli-requests leaked: still refused at burst 0.
        assert_eq!(z.lookup(60_000, b"k", 1, &l, true), NgxRc::Busy(false));
        assert!(matches!(
            z.lookup(62_500, b"k", 1, &l, true),
            NgxRc::Ok(0, _)
        ));
    }

    #[test]
    fn lru_expiry_frees_drained_nodes_and_resets_them() {
        // 1r/s, burst 100: a node with excess 60000 is drained (but not by 1000) after 60 s.
        let mut z = NginxZone::new(1000, None);
        let l = lim(100, Some(1000));
        for _ in 0..61 {
            z.lookup(0, b"a", 1, &l, true);
        }
        // a: excess 60000, last 0. At 60 s a new key expires it (drained, idle ≥ 60 s).
        z.lookup(60_000, b"b", 1, &l, true);
        assert_eq!(z.live_keys(), 1);
        // a is new again: excess 0.
        assert_eq!(z.lookup(60_000, b"a", 1, &l, true), NgxRc::Ok(0, false));
        // Without the expiry it would have been excess 1000.
    }

    #[test]
    fn delays() {
        let z = NginxZone::new(5000, None);
        assert_eq!(z.delay_ms(10_000, &lim(10, Some(0))), 2000);
        assert_eq!(z.delay_ms(10_000, &lim(12, Some(4))), 1200);
        assert_eq!(z.delay_ms(10_000, &lim(10, None)), 0);
    }
}
