//! The accumulator of one breakdown ([`TopAcc`]) and its finished [`Breakdown`].

use rustc_hash::FxHashMap;

use super::UNSET;
use super::by::{TopBy, TopSort};
use super::distinct::client_hash;
use super::model::{Breakdown, TopRest, TopRow};
use super::part::{PartKey, TopPart};
use super::tally::Tally;
use crate::batch::{Batch, NULL_CODE, TextColumn};
use crate::chunked::Chunked;
use crate::classify::{Classifier, ClientKey, RowClass};
use crate::number::share;
use crate::time::local_rfc3339_ms;

enum Value {
    Null,
    Text(Box<str>),
    Status(u16),
    Client(ClientKey),
}

/// Accumulates one breakdown. Call [`TopAcc::begin_batch`] before the rows of each
/// batch, then [`TopAcc::add`] per selected row.
pub struct TopAcc {
    by: TopBy,
    entries: Chunked<Tally>,
    text: FxHashMap<Box<str>, u32>,
    status: Vec<u32>,
    clients: FxHashMap<ClientKey, u32>,
    null: u32,
    /// The current batch's value slot → entry.
    slots: Vec<u32>,
    total: Tally,
}

impl TopAcc {
    /// An empty breakdown by `by`.
    pub fn new(by: TopBy) -> TopAcc {
        TopAcc {
            by,
            entries: Chunked::default(),
            text: FxHashMap::default(),
            status: Vec::new(),
            clients: FxHashMap::default(),
            null: UNSET,
            slots: Vec::new(),
            total: Tally::default(),
        }
    }

    /// What it breaks down by.
    pub fn by(&self) -> TopBy {
        self.by
    }

    /// Starts the rows of batch `b` (resets the slot → value memo).
    pub fn begin_batch(&mut self, b: &Batch) {
        self.slots.clear();
        if let Some(col) = self.by.text_column(b) {
            self.slots.resize(col.slots(), UNSET);
        }
    }

    fn new_entry(entries: &mut Chunked<Tally>) -> u32 {
        entries.push(Tally::default()) as u32
    }

    fn text_entry(&mut self, col: &TextColumn, k: Option<u32>) -> u32 {
        let entries = &mut self.entries;
        match k {
            None => {
                if self.null == UNSET {
                    self.null = Self::new_entry(entries);
                }
                self.null
            }
            Some(k) => {
                if self.slots.len() <= k as usize {
                    // Not announced by `begin_batch`: grow rather than panic.
                    self.slots.resize(col.slots().max(k as usize + 1), UNSET);
                }
                let slot = &mut self.slots[k as usize];
                if *slot == UNSET {
                    let v = col.value(k).unwrap_or("");
                    *slot = match self.text.get(v) {
                        Some(&e) => e,
                        None => {
                            let e = Self::new_entry(entries);
                            self.text.insert(v.into(), e);
                            e
                        }
                    };
                }
                *slot
            }
        }
    }

    fn status_entry(&mut self, s: u16) -> u32 {
        let s = usize::from(s);
        if self.status.len() <= s {
            self.status.resize(s + 1, UNSET);
        }
        if self.status[s] == UNSET {
            self.status[s] = Self::new_entry(&mut self.entries);
        }
        self.status[s]
    }

    fn client_entry(&mut self, k: ClientKey) -> u32 {
        let entries = &mut self.entries;
        *self
            .clients
            .entry(k)
            .or_insert_with(|| Self::new_entry(entries))
    }

    /// Adds row `i` of `b` (the batch given to the last [`TopAcc::begin_batch`]),
    /// classified as `rc`.
    #[inline]
    pub fn add(&mut self, b: &Batch, i: usize, rc: &RowClass) {
        self.add_hashed(b, i, rc, client_hash(rc.client));
    }

    /// [`TopAcc::add`] with the row's [`client_hash`] worked out (once for several
    /// breakdowns of the same rows).
    #[inline]
    pub fn add_hashed(&mut self, b: &Batch, i: usize, rc: &RowClass, client: u64) {
        let idx = match self.by {
            TopBy::Status => self.status_entry(b.status[i]),
            TopBy::Ip => self.client_entry(rc.client),
            TopBy::Prefix => self.client_entry(rc.prefix),
            by => {
                let col = by.text_column(b).expect("a text breakdown");
                self.text_entry(col, col.code(i))
            }
        };
        let (ts, status, bytes) = (b.ts_ms[i], b.status[i], b.size(i));
        let counted = self.by.counts_clients().then_some(client);
        self.entries[idx as usize].add(ts, status, bytes, counted);
        self.total.add(ts, status, bytes, None);
    }

    /// Adds the rows tallied in `part` ([`TopPart::of`] of `b`, the batch given to the
    /// last [`TopAcc::begin_batch`]), the same as adding each of them.
    pub fn add_part(&mut self, b: &Batch, part: &TopPart) {
        let col = self.by.text_column(b);
        for (k, (key, sums)) in part.keys.iter().zip(&part.sums).enumerate() {
            let idx = match (*key, col) {
                (PartKey::Slot(s), Some(col)) => {
                    self.text_entry(col, (s != NULL_CODE).then_some(s))
                }
                (PartKey::Status(s), _) => self.status_entry(s),
                (PartKey::Client(c), _) => self.client_entry(c),
                (PartKey::Slot(_), None) => continue,
            };
            let e = &mut self.entries[idx as usize];
            e.add_sums(sums);
            if let Some(&(a, z)) = part.runs.get(k) {
                for &h in &part.hashes[a as usize..z as usize] {
                    e.clients.insert(h);
                }
            }
            self.total.add_sums(sums);
        }
    }

    /// Every request added.
    pub fn total(&self) -> Tally {
        // The distinct clients of all are the union of each value's (kept once, not
        // counted again per row).
        let mut t = self.total.clone();
        if self.by.counts_clients() {
            for e in self.entries.iter() {
                t.clients.merge(&e.clients);
            }
        } else {
            for &k in self.clients.keys() {
                t.clients.insert(client_hash(k));
            }
        }
        t
    }

    /// The breakdown: the first `limit` values (0 = all) in `sort` order, and what the
    /// others add up to. `local` gives a UTC instant on the report's clock.
    pub fn finish(
        self,
        cls: &Classifier,
        sort: TopSort,
        limit: usize,
        local: &dyn Fn(i64) -> i64,
    ) -> Breakdown {
        let by = self.by;
        let entries = self.entries;
        // Distinct clients per value, worked out once (a sketch's estimate is not free).
        let counts: Vec<(u64, bool)> = if by.counts_clients() {
            entries.iter().map(|t| t.clients.count()).collect()
        } else {
            Vec::new()
        };
        let count = |e: u32| counts.get(e as usize).copied().unwrap_or((0, false));
        let metric = |e: u32| {
            let t = &entries[e as usize];
            match sort {
                TopSort::Requests => (t.requests, 0),
                TopSort::Bytes => (t.bytes, t.requests),
                TopSort::Clients => (count(e).0, t.requests),
                TopSort::Errors => (t.errors, t.requests),
            }
        };
        let value_cmp = |a: &Value, b: &Value| {
            use std::cmp::Ordering;
            match (a, b) {
                (Value::Text(x), Value::Text(y)) => x.cmp(y),
                (Value::Status(x), Value::Status(y)) => x.cmp(y),
                (Value::Client(x), Value::Client(y)) => cls.key_cmp(*x, *y),
                (Value::Null, Value::Null) => Ordering::Equal,
                (Value::Null, _) => Ordering::Greater,
                (_, Value::Null) => Ordering::Less,
                _ => Ordering::Equal,
            }
        };
        let order = |(va, ea): &(Value, u32), (vb, eb): &(Value, u32)| {
            metric(*eb)
                .cmp(&metric(*ea))
                .then_with(|| value_cmp(va, vb))
        };
        // Only the first `limit` values are kept as they stream past (the order is total:
        // ties go by value), so memory is the table's, not a second copy of every value;
        // the rest is the whole minus what is kept.
        let mut kept: Vec<(Value, u32)> = Vec::new();
        let mut distinct_values = 0u64;
        let (mut all_requests, mut all_bytes, mut all_errors) = (0u64, 0u128, 0u64);
        let mut offer = |v: Value, e: u32| {
            let t = &entries[e as usize];
            distinct_values += 1;
            all_requests += t.requests;
            all_bytes += u128::from(t.bytes);
            all_errors += t.errors;
            kept.push((v, e));
            if limit > 0 && kept.len() >= 2 * limit.max(512) {
                kept.select_nth_unstable_by(limit - 1, order);
                kept.truncate(limit);
            }
        };
        for (k, e) in self.text {
            offer(Value::Text(k), e);
        }
        for (k, e) in self.clients {
            offer(Value::Client(k), e);
        }
        for (s, &e) in self.status.iter().enumerate() {
            if e != UNSET {
                offer(Value::Status(s as u16), e);
            }
        }
        if self.null != UNSET {
            offer(Value::Null, self.null);
        }
        kept.sort_by(order);
        let keep = if limit == 0 {
            kept.len()
        } else {
            limit.min(kept.len())
        };
        kept.truncate(keep);
        let total = &self.total;
        let time = |ms: i64| {
            let l = local(ms);
            (local_rfc3339_ms(l, l - ms), l)
        };
        let mut rows = Vec::with_capacity(keep);
        let (mut kept_requests, mut kept_bytes, mut kept_errors) = (0u64, 0u128, 0u64);
        for (rank, (v, e)) in kept.iter().enumerate() {
            let t = &entries[*e as usize];
            kept_requests += t.requests;
            kept_bytes += u128::from(t.bytes);
            kept_errors += t.errors;
            let (clients, estimated) = if by.counts_clients() {
                count(*e)
            } else {
                (1, false)
            };
            let (first_seen, first_local_ms) = time(t.first_ms);
            let (last_seen, last_local_ms) = time(t.last_ms);
            rows.push(TopRow {
                rank: rank as u64 + 1,
                value: match v {
                    Value::Null => None,
                    Value::Text(s) => Some(s.to_string()),
                    // No status logged (`-`, `000`): null, as the dataset has it.
                    Value::Status(0) => None,
                    Value::Status(s) => Some(s.to_string()),
                    Value::Client(k) => Some(cls.key_label(*k)),
                },
                requests: t.requests,
                share: share(t.requests, total.requests),
                bytes: t.bytes,
                bytes_share: share(t.bytes, total.bytes),
                clients,
                clients_estimated: estimated,
                errors: t.errors,
                error_share: share(t.errors, t.requests),
                first_seen,
                last_seen,
                first_local_ms,
                last_local_ms,
            });
        }
        let rest = (keep as u64) < distinct_values;
        let rest = rest.then(|| {
            let requests = all_requests - kept_requests;
            TopRest {
                values: distinct_values - keep as u64,
                requests,
                share: share(requests, total.requests),
                bytes: u64::try_from(all_bytes - kept_bytes).unwrap_or(u64::MAX),
                errors: all_errors - kept_errors,
            }
        });
        Breakdown {
            by,
            sort,
            distinct_values,
            rows,
            rest,
        }
    }
}
