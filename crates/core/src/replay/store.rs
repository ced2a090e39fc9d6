//! Per-key limiter state: one slot for site-wide limits, a hash map otherwise, with
//! deterministic eviction of keys whose state has become indistinguishable from a new one.

use rustc_hash::FxHashMap;

/// One limiter algorithm, pure: time is passed in, state is owned by the caller.
pub(crate) trait Algo {
    /// Per-key state.
    type State;
    /// The state of a key never seen before, at `now`.
    fn fresh(&self, now: i64) -> Self::State;
    /// Would a request costing `cost` pass at `now`? `Some(delay_ms)` or `None` (refused).
    /// Does not change the state.
    fn check(&self, s: &Self::State, now: i64, cost: u64) -> Option<u32>;
    /// Charges an admitted request.
    fn commit(&self, s: &mut Self::State, now: i64, cost: u64);
    /// `check`, then `commit` if admitted.
    #[inline]
    fn check_commit(&self, s: &mut Self::State, now: i64, cost: u64) -> Option<u32> {
        let r = self.check(s, now, cost);
        if r.is_some() {
            self.commit(s, now, cost);
        }
        r
    }
    /// True when the state decides every later request (at times ≥ `now`) exactly like
    /// [`Algo::fresh`] would: the key can be forgotten.
    fn idle(&self, s: &Self::State, now: i64) -> bool;
    /// An upper bound on how long after its last admission any state becomes idle (ms).
    fn horizon_ms(&self) -> i64;
    /// Whether `check` weighs the cost (a request costing c passes as c requests would):
    /// the leaky queue and HAProxy's counter count requests, whatever they cost.
    const WEIGHS_COST: bool = true;
}

/// Longest key kept inline (addresses and prefixes fit; agents usually do not).
const INLINE: usize = 23;

/// A map from key bytes to values: keys up to 23 bytes are stored inline (no pointer to
/// chase, hashed as three words), longer ones boxed.
#[derive(Clone, Debug)]
pub(crate) struct KeyMap<V> {
    small: FxHashMap<[u8; INLINE + 1], V>,
    large: FxHashMap<Box<[u8]>, V>,
}

#[inline]
fn inline_key(key: &[u8]) -> Option<[u8; INLINE + 1]> {
    if key.len() > INLINE {
        return None;
    }
    let mut k = [0u8; INLINE + 1];
    k[0] = key.len() as u8;
    k[1..=key.len()].copy_from_slice(key);
    Some(k)
}

impl<V> KeyMap<V> {
    pub(crate) fn new() -> Self {
        KeyMap {
            small: FxHashMap::default(),
            large: FxHashMap::default(),
        }
    }

    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Option<&V> {
        match inline_key(key) {
            Some(k) => self.small.get(&k),
            None => self.large.get(key),
        }
    }

    #[inline]
    pub(crate) fn insert(&mut self, key: &[u8], v: V) {
        match inline_key(key) {
            Some(k) => {
                self.small.insert(k, v);
            }
            None => {
                self.large.insert(key.into(), v);
            }
        }
    }

    /// Runs `f` on the value of `key`, or on `fresh()` for a new key, which is then kept
    /// if `f` says so. One hash probe for inline keys.
    #[inline]
    pub(crate) fn upsert<R>(
        &mut self,
        key: &[u8],
        fresh: impl FnOnce() -> V,
        f: impl FnOnce(&mut V) -> (R, bool),
    ) -> R {
        use std::collections::hash_map::Entry;
        match inline_key(key) {
            Some(k) => match self.small.entry(k) {
                Entry::Occupied(mut o) => f(o.get_mut()).0,
                Entry::Vacant(slot) => {
                    let mut v = fresh();
                    let (r, keep) = f(&mut v);
                    if keep {
                        slot.insert(v);
                    }
                    r
                }
            },
            None => match self.large.get_mut(key) {
                Some(v) => f(v).0,
                None => {
                    let mut v = fresh();
                    let (r, keep) = f(&mut v);
                    if keep {
                        self.large.insert(key.into(), v);
                    }
                    r
                }
            },
        }
    }

    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<V> {
        match inline_key(key) {
            Some(k) => self.small.remove(&k),
            None => self.large.remove(key),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.small.len() + self.large.len()
    }

    pub(crate) fn retain(&mut self, mut f: impl FnMut(&mut V) -> bool) {
        self.small.retain(|_, v| f(v));
        self.large.retain(|_, v| f(v));
    }
}

/// Result of one zone lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// Admitted (and charged), with a delay in ms (0 = at once).
    Admit(u32),
    /// Refused; nothing charged.
    Busy,
    /// Would pass; remembered as pending until charged or released.
    Pending,
}

/// Keyed state for one zone of algorithm `A`. The empty key is the site-wide slot.
pub(crate) struct Store<A: Algo> {
    pub(crate) algo: A,
    site: Option<A::State>,
    map: KeyMap<A::State>,
    next_sweep_ms: i64,
    sweep_len: usize,
    pending: Vec<u8>,
    peak: usize,
}

impl<A: Algo> Store<A> {
    pub(crate) fn new(algo: A) -> Self {
        Store {
            algo,
            site: None,
            map: KeyMap::new(),
            next_sweep_ms: i64::MIN,
            sweep_len: 1024,
            pending: Vec::new(),
            peak: 0,
        }
    }

    /// Looks `key` up at `now`; with `account` charges an admitted request, without it
    /// only remembers it as pending.
    #[inline]
    pub(crate) fn lookup(&mut self, now: i64, key: &[u8], cost: u64, account: bool) -> Lookup {
        if key.is_empty() {
            let algo = &self.algo;
            let s = self.site.get_or_insert_with(|| algo.fresh(now));
            if self.peak == 0 {
                self.peak = 1;
            }
            return if account {
                match algo.check_commit(s, now, cost) {
                    Some(d) => Lookup::Admit(d),
                    None => Lookup::Busy,
                }
            } else {
                match algo.check(s, now, cost) {
                    Some(_) => {
                        self.pending.clear();
                        Lookup::Pending
                    }
                    None => Lookup::Busy,
                }
            };
        }
        self.maybe_sweep(now);
        let algo = &self.algo;
        if account {
            let r = self.map.upsert(
                key,
                || algo.fresh(now),
                |s| {
                    let r = algo.check_commit(s, now, cost);
                    (r, r.is_some())
                },
            );
            return match r {
                Some(d) => {
                    self.peak = self.peak.max(self.map.len());
                    Lookup::Admit(d)
                }
                None => Lookup::Busy,
            };
        }
        let admitted = match self.map.get(key) {
            Some(s) => algo.check(s, now, cost),
            None => algo.check(&algo.fresh(now), now, cost),
        };
        match admitted {
            Some(_) => {
                self.pending.clear();
                self.pending.extend_from_slice(key);
                Lookup::Pending
            }
            None => Lookup::Busy,
        }
    }

    /// Charges the pending request; returns its delay.
    pub(crate) fn account(&mut self, now: i64, cost: u64) -> u32 {
        let key = std::mem::take(&mut self.pending);
        let r = match self.lookup(now, &key, cost, true) {
            Lookup::Admit(d) => d,
            // Same time, same state: the check that made it pending still holds.
            _ => 0,
        };
        self.pending = key;
        r
    }

    /// Keys held now (the site slot counts as one).
    pub(crate) fn live_keys(&self) -> usize {
        self.map.len() + usize::from(self.site.is_some())
    }

    /// The state of `key` (empty: the site slot), if held.
    pub(crate) fn state(&self, key: &[u8]) -> Option<&A::State> {
        if key.is_empty() {
            self.site.as_ref()
        } else {
            self.map.get(key)
        }
    }

    /// Most keys held at once.
    pub(crate) fn peak_keys(&self) -> usize {
        self.peak
    }

    #[inline]
    fn maybe_sweep(&mut self, now: i64) {
        if now < self.next_sweep_ms && self.map.len() < self.sweep_len {
            return;
        }
        let algo = &self.algo;
        self.map.retain(|s| !algo.idle(s, now));
        self.next_sweep_ms = now.saturating_add(self.algo.horizon_ms().max(1000));
        self.sweep_len = (self.map.len() * 2).max(1024);
    }
}

/// `a * b` for a non-negative time difference, saturating.
#[inline]
pub(crate) fn elapsed(now: i64, last: i64) -> u64 {
    if now > last { (now - last) as u64 } else { 0 }
}
