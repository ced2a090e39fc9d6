//! The accumulator of one breakdown ([`TopAcc`]) and its finished [`Breakdown`].

use std::hash::BuildHasher;

use rustc_hash::{FxBuildHasher, FxHashMap};

use super::UNSET;
use super::by::{TopBy, TopSort};
use super::distinct::client_hash;
use super::model::{Breakdown, TopRest, TopRow};
use super::part::{PartKey, TopPart};
use super::tally::Tally;
use crate::batch::{Batch, NULL_CODE, TextColumn};
use crate::chunked::Chunked;
use crate::classify::agent::operating_system;
use crate::classify::static_files::is_static_path;
use crate::classify::{Classifier, ClientKey, RowClass, referring_site};
use crate::number::share;
use crate::time::{civil_from_days, local_rfc3339_ms};

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
    /// By the clock ([`TopBy::is_clock`]): the hour of the day (0–23) or the day
    /// (days since 1970-01-01) on the report's clock → entry.
    clock: FxHashMap<i64, u32>,
    /// The current batch's value slot → entry.
    slots: Vec<u32>,
    total: Tally,
}

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 86_400_000;

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
            clock: FxHashMap::default(),
            slots: Vec::new(),
            total: Tally::exact(),
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

    /// The entry of an arrival at `local_ms` on the report's clock. A day's distinct
    /// visitors are counted exactly (as GoAccess does; memory: 8 bytes per visitor
    /// and day).
    fn clock_entry(&mut self, local_ms: i64) -> u32 {
        let (entries, day) = (&mut self.entries, self.by == TopBy::Day);
        let key = if day {
            local_ms.div_euclid(DAY_MS)
        } else {
            local_ms.div_euclid(HOUR_MS).rem_euclid(24)
        };
        *self.clock.entry(key).or_insert_with(|| {
            if day {
                entries.push(Tally::exact()) as u32
            } else {
                Self::new_entry(entries)
            }
        })
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
        self.add_at(b, i, rc, client, b.ts_ms[i]);
    }

    /// [`TopAcc::add`] of a row that arrived at `local_ms` on the report's clock (what
    /// the hour and the day breakdowns are keyed by; [`TopAcc::add`] takes UTC).
    pub fn add_local(&mut self, b: &Batch, i: usize, rc: &RowClass, local_ms: i64) {
        self.add_at(b, i, rc, client_hash(rc.client), local_ms);
    }

    #[inline]
    fn add_at(&mut self, b: &Batch, i: usize, rc: &RowClass, client: u64, local_ms: i64) {
        let idx = match self.by {
            TopBy::Status => self.status_entry(b.status[i]),
            TopBy::Ip | TopBy::Country | TopBy::Asn => self.client_entry(rc.client),
            TopBy::Prefix => self.client_entry(rc.prefix),
            TopBy::Hour | TopBy::Day => self.clock_entry(local_ms),
            by => {
                let col = by.text_column(b).expect("a text breakdown");
                self.text_entry(col, col.code(i))
            }
        };
        let (ts, status, bytes) = (b.ts_ms[i], b.status[i], b.size(i));
        if self.by == TopBy::Day {
            // A day counts visitors, the total clients. A visitor is GoAccess's: the
            // address and the User-Agent as logged, of a request whose status is not
            // 4xx (GoAccess 1.7's default, without --4xx-to-unique-count).
            let visitor = (!(400..500).contains(&status)).then(|| {
                let agent = b.user_agent.get(i).unwrap_or_default();
                client ^ FxBuildHasher.hash_one(agent).rotate_left(17)
            });
            self.entries[idx as usize].add(ts, status, bytes, visitor);
            self.total.add(ts, status, bytes, Some(client));
            return;
        }
        let counted = self.by.counts_clients().then_some(client);
        // A client the value had already is in the total already.
        let maybe_new = self.entries[idx as usize].add(ts, status, bytes, counted);
        self.total
            .add(ts, status, bytes, counted.filter(|_| maybe_new));
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
                    if e.clients.insert(h) {
                        self.total.clients.insert(h);
                    }
                }
            }
            self.total.add_sums(sums);
        }
    }

    /// Every request added, and its distinct clients counted exactly.
    pub fn total(&self) -> Tally {
        let mut t = self.total.clone();
        if !self.by.counts_clients() {
            // By client, the values are the clients.
            for &k in self.clients.keys() {
                t.clients.insert(client_hash(k));
            }
        }
        t
    }

    /// Adds tally `t` to the value `l` of this breakdown (a derived one).
    fn put(&mut self, l: Option<String>, t: &Tally) {
        let e = match l {
            Some(l) => match self.text.get(l.as_str()) {
                Some(&e) => e,
                None => {
                    let e = if self.by == TopBy::Day {
                        self.entries.push(Tally::exact()) as u32
                    } else {
                        Self::new_entry(&mut self.entries)
                    };
                    self.text.insert(l.into(), e);
                    e
                }
            },
            None => {
                if self.null == UNSET {
                    self.null = Self::new_entry(&mut self.entries);
                }
                self.null
            }
        };
        self.entries[e as usize].merge(t);
    }

    /// By network ([`TopBy::is_network`]): each client's tallies moved under its label,
    /// `label(client)` (`None`: the value is null, shown as `(unknown)`), and the tallies
    /// of one label merged.
    pub fn label_clients(self, label: &dyn Fn(ClientKey) -> Option<String>) -> TopAcc {
        let mut out = TopAcc::new(self.by);
        out.total = self.total;
        for (&k, &e) in &self.clients {
            out.put(label(k), &self.entries[e as usize]);
        }
        out
    }

    /// The values a derived breakdown shows ([`TopBy::is_derived`], [`TopBy::is_clock`]):
    /// each distinct value of the column it is derived from (each hour, each day) given
    /// its label once, and the tallies of one label merged.
    fn derive(self) -> TopAcc {
        let by = self.by;
        let label = |v: Option<&str>| -> Option<String> {
            match by {
                TopBy::Os => Some(operating_system(v)),
                TopBy::Site => v.and_then(referring_site),
                TopBy::Kind => v.map(|p| {
                    if is_static_path(p) {
                        "static"
                    } else {
                        "dynamic"
                    }
                    .to_string()
                }),
                _ => v.map(str::to_string),
            }
        };
        let mut out = TopAcc::new(by);
        out.total = self.total;
        let put = Self::put;
        for (k, &e) in &self.text {
            put(&mut out, label(Some(k)), &self.entries[e as usize]);
        }
        if self.null != UNSET {
            put(&mut out, label(None), &self.entries[self.null as usize]);
        }
        for (&k, &e) in &self.clock {
            let label = if by == TopBy::Day {
                let (y, m, d) = civil_from_days(k);
                format!("{y:04}-{m:02}-{d:02}")
            } else {
                format!("{k:02}")
            };
            put(&mut out, Some(label), &self.entries[e as usize]);
        }
        out
    }

    /// The breakdown: the first `limit` values (0 = all) in `sort` order, and what the
    /// others add up to. `local` gives a UTC instant on the report's clock.
    pub fn finish(
        mut self,
        cls: &Classifier,
        sort: TopSort,
        limit: usize,
        local: &dyn Fn(i64) -> i64,
    ) -> Breakdown {
        if self.by.is_derived() || self.by.is_clock() {
            self = self.derive();
        }
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
        // The hours and days are a distribution: all of them, in clock order.
        let clock = by.is_clock();
        let limit = if clock { 0 } else { limit };
        let order = |(va, ea): &(Value, u32), (vb, eb): &(Value, u32)| {
            if clock {
                return value_cmp(va, vb);
            }
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
