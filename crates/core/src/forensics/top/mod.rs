//! `logscope top`: the first-hour breakdowns — per path, status, referer, user agent,
//! address, prefix, host or method: requests, share, bytes, distinct clients, error
//! share (status ≥ 400), first and last seen — in a deterministic order.
//!
//! Work is per distinct value where the column is coded: a value slot of a batch is
//! resolved to its accumulator once (by string), then every row of that slot adds to it
//! by index, so no `String` is built per row. Distinct clients per value are exact up to
//! [`EXACT_CLIENTS`] (kept as 64-bit hashes of the client), then a HyperLogLog estimate
//! with 2^[`HLL_BITS`] one-byte registers (standard error about 2.3%), shown with `≈`:
//! each value's client tally is bounded (at most a few KiB) whatever the traffic.

use rustc_hash::FxHashMap;

use crate::chunked::Chunked;
use serde::Serialize;

use super::doc::{Doc, Section};
use super::mix64;
use crate::batch::{Batch, NO_CODE, NULL_CODE, TextColumn};
use crate::classify::{Classifier, ClientKey, RowClass};
use crate::number::{pct1, share, thousands};
use crate::table::{Align, Cell, Table};
use crate::time::local_rfc3339;

/// Distinct clients of one value are counted exactly up to this many.
pub const EXACT_CLIENTS: usize = 256;

/// Register index bits of the HyperLogLog estimate beyond [`EXACT_CLIENTS`]: 2^11 = 2,048
/// registers of one byte, a standard error of 1.04/√2048 ≈ 2.3%.
pub const HLL_BITS: u32 = 11;

const REGISTERS: usize = 1 << HLL_BITS;

/// The status at or above which a request counts as an error (4xx and 5xx).
pub const ERROR_STATUS: u16 = 400;

const UNSET: u32 = u32::MAX;

/// What `logscope top` breaks the requests down by (`--by`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum TopBy {
    /// The path, without the query string.
    Path,
    /// The status code.
    Status,
    /// The Referer header as logged.
    Referer,
    /// The User-Agent header as logged (`logscope agents` for classes).
    Agent,
    /// The client address (the real client behind --trust-proxy).
    Ip,
    /// The client's network (/24 and /48; --prefix-v4/--prefix-v6).
    Prefix,
    /// The Host header (virtual host).
    Host,
    /// The request method.
    Method,
}

impl TopBy {
    /// The name on the command line and in JSON (`path`).
    pub fn name(self) -> &'static str {
        match self {
            TopBy::Path => "path",
            TopBy::Status => "status",
            TopBy::Referer => "referer",
            TopBy::Agent => "agent",
            TopBy::Ip => "ip",
            TopBy::Prefix => "prefix",
            TopBy::Host => "host",
            TopBy::Method => "method",
        }
    }

    /// The plural for titles (`paths`).
    pub fn plural(self) -> &'static str {
        match self {
            TopBy::Path => "paths",
            TopBy::Status => "statuses",
            TopBy::Referer => "referers",
            TopBy::Agent => "user agents",
            TopBy::Ip => "addresses",
            TopBy::Prefix => "networks",
            TopBy::Host => "hosts",
            TopBy::Method => "methods",
        }
    }

    /// The column header of the value (`user agent`).
    pub fn header(self) -> &'static str {
        match self {
            TopBy::Agent => "user agent",
            TopBy::Ip => "address",
            other => other.name(),
        }
    }

    fn text_column(self, b: &Batch) -> Option<&TextColumn> {
        match self {
            TopBy::Path => Some(&b.path),
            TopBy::Referer => Some(&b.referer),
            TopBy::Agent => Some(&b.user_agent),
            TopBy::Host => Some(&b.host),
            TopBy::Method => Some(&b.method),
            TopBy::Status | TopBy::Ip | TopBy::Prefix => None,
        }
    }

    /// Whether the per-value distinct client count means anything (not per address).
    pub fn counts_clients(self) -> bool {
        self != TopBy::Ip
    }
}

/// The order of the rows (`--sort`): the largest first, ties by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum TopSort {
    /// Most requests first.
    Requests,
    /// Most body bytes first (bandwidth).
    Bytes,
    /// Most distinct clients first.
    Clients,
    /// Most requests with status ≥ 400 first.
    Errors,
}

impl TopSort {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            TopSort::Requests => "requests",
            TopSort::Bytes => "bytes",
            TopSort::Clients => "clients",
            TopSort::Errors => "errors",
        }
    }
}

/// Distinct clients: exact (64-bit hashes) up to [`EXACT_CLIENTS`], then a HyperLogLog
/// sketch.
#[derive(Clone, Debug)]
pub enum Distinct {
    /// Hashes of the clients seen.
    Exact(Hashes),
    /// HyperLogLog registers.
    Sketch(Box<[u8]>),
}

impl Default for Distinct {
    fn default() -> Self {
        Distinct::Exact(Hashes::default())
    }
}

impl Distinct {
    /// Adds a client by its hash ([`client_hash`]).
    #[inline]
    pub fn insert(&mut self, h: u64) {
        match self {
            Distinct::Exact(s) => {
                if s.insert(h) && s.len() > EXACT_CLIENTS {
                    let mut r = vec![0u8; REGISTERS].into_boxed_slice();
                    for x in s.iter() {
                        hll_add(&mut r, x);
                    }
                    *self = Distinct::Sketch(r);
                }
            }
            Distinct::Sketch(r) => hll_add(r, h),
        }
    }

    /// Adds every client of `other`: the same as inserting each of its clients.
    pub fn merge(&mut self, other: &Distinct) {
        match other {
            Distinct::Exact(s) => s.iter().for_each(|h| self.insert(h)),
            Distinct::Sketch(theirs) => {
                if let Distinct::Exact(s) = self {
                    let mut r = vec![0u8; REGISTERS].into_boxed_slice();
                    for x in s.iter() {
                        hll_add(&mut r, x);
                    }
                    *self = Distinct::Sketch(r);
                }
                if let Distinct::Sketch(r) = self {
                    for (a, &b) in r.iter_mut().zip(theirs.iter()) {
                        *a = (*a).max(b);
                    }
                }
            }
        }
    }

    /// The count, and whether it is an estimate.
    pub fn count(&self) -> (u64, bool) {
        match self {
            Distinct::Exact(s) => (s.len() as u64, false),
            Distinct::Sketch(r) => (hll_estimate(r).max(EXACT_CLIENTS as u64 + 1), true),
        }
    }
}

/// A set of client hashes, which are mixed already: open addressing on the hash's own
/// low bits with linear probing, no hash of the hash and no separate control bytes (0
/// marks a free slot; a 0 hash is a flag of its own). At most one past half full. The
/// first hash is kept inline, so a value with one client (every address of `top --by
/// ip`) allocates nothing.
#[derive(Clone, Debug, Default)]
pub struct Hashes {
    slots: Vec<u64>,
    /// The one non-zero hash while `slots` is unallocated (0: none).
    first: u64,
    len: u32,
    zero: bool,
}

impl Hashes {
    /// Adds `h`; whether it was new.
    #[inline]
    pub fn insert(&mut self, h: u64) -> bool {
        if h == 0 {
            let new = !self.zero;
            self.zero = true;
            self.len += u32::from(new);
            return new;
        }
        if self.slots.is_empty() {
            if self.first == 0 {
                self.first = h;
                self.len += 1;
                return true;
            }
            if self.first == h {
                return false;
            }
        }
        // Grown once more than half full, so a free slot always ends a probe; the
        // 257th client (the switch to the sketch) still fits in 512 slots.
        if self.slots.is_empty() || 2 * self.len as usize > self.slots.len() {
            self.grow();
        }
        let new = Self::place(&mut self.slots, h);
        self.len += u32::from(new);
        new
    }

    #[inline]
    fn place(slots: &mut [u64], h: u64) -> bool {
        let mask = slots.len() - 1;
        let mut i = h as usize & mask;
        loop {
            match slots[i] {
                0 => {
                    slots[i] = h;
                    return true;
                }
                x if x == h => return false,
                _ => i = (i + 1) & mask,
            }
        }
    }

    #[cold]
    fn grow(&mut self) {
        let mut slots = vec![0u64; (2 * self.slots.len()).max(8)];
        for &x in self.slots.iter().filter(|&&x| x != 0) {
            Self::place(&mut slots, x);
        }
        if self.first != 0 {
            Self::place(&mut slots, self.first);
            self.first = 0;
        }
        self.slots = slots;
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Each hash once, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.zero
            .then_some(0)
            .into_iter()
            .chain((self.first != 0).then_some(self.first))
            .chain(self.slots.iter().copied().filter(|&x| x != 0))
    }
}

#[inline]
fn hll_add(r: &mut [u8], h: u64) {
    let idx = (h >> (64 - HLL_BITS)) as usize;
    // The remaining bits, with a guard bit so that the rank is at most 64 - HLL_BITS + 1.
    let w = (h << HLL_BITS) | (1 << (HLL_BITS - 1));
    let rank = w.leading_zeros() as u8 + 1;
    if r[idx] < rank {
        r[idx] = rank;
    }
}

fn hll_estimate(r: &[u8]) -> u64 {
    let m = r.len() as f64;
    let alpha = 0.7213 / (1.0 + 1.079 / m);
    let mut sum = 0.0;
    let mut zeros = 0u32;
    for &x in r {
        sum += 1.0 / (1u64 << x) as f64;
        if x == 0 {
            zeros += 1;
        }
    }
    let e = alpha * m * m / sum;
    let e = if e <= 2.5 * m && zeros > 0 {
        m * (m / f64::from(zeros)).ln()
    } else {
        e
    };
    e.round() as u64
}

/// A 64-bit hash of a client key for [`Distinct`].
#[inline]
pub fn client_hash(k: ClientKey) -> u64 {
    match k {
        ClientKey::Net { hi, lo, len, v4 } => {
            mix64(lo ^ mix64(hi ^ (u64::from(len) << 1 | u64::from(v4))))
        }
        ClientKey::Name(i) => mix64(u64::from(i) ^ 0xa5a5_5a5a_0000_0000),
    }
}

/// Whether every code is below `n` or `u32::MAX` ([`NULL_CODE`], [`NO_CODE`]): one
/// pass without a branch per code (`MAX + 1` wraps to 0).
fn below(codes: &[u32], n: usize) -> bool {
    let top = codes.iter().fold(0u32, |m, &c| m.max(c.wrapping_add(1)));
    top as usize <= n
}

/// [`client_hash`] of an address, out of line: taken once per address code, it keeps
/// the address's bytes out of the registers of the loop over rows.
#[inline(never)]
fn addr_hash(ip: &std::net::IpAddr) -> u64 {
    client_hash(ClientKey::addr(*ip))
}

/// The tallies of one value (or of everything).
#[derive(Clone, Debug)]
pub struct Tally {
    /// Requests.
    pub requests: u64,
    /// Body bytes (a `-` counts 0).
    pub bytes: u64,
    /// Requests with status ≥ 400.
    pub errors: u64,
    /// Earliest arrival, UTC ms.
    pub first_ms: i64,
    /// Latest arrival, UTC ms.
    pub last_ms: i64,
    /// Distinct clients.
    pub clients: Distinct,
    last_client: u64,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            requests: 0,
            bytes: 0,
            errors: 0,
            first_ms: i64::MAX,
            last_ms: i64::MIN,
            clients: Distinct::default(),
            last_client: 0,
        }
    }
}

impl Tally {
    /// Adds one request; `client`: its [`client_hash`] when clients are counted.
    #[inline]
    pub fn add(&mut self, ts_ms: i64, status: u16, bytes: Option<u64>, client: Option<u64>) {
        if self.requests == 0 || ts_ms < self.first_ms {
            self.first_ms = ts_ms;
        }
        if self.requests == 0 || ts_ms > self.last_ms {
            self.last_ms = ts_ms;
        }
        self.requests += 1;
        self.bytes = self.bytes.saturating_add(bytes.unwrap_or(0));
        self.errors += u64::from(status >= ERROR_STATUS);
        if let Some(h) = client
            && (self.last_client != h || self.requests == 1)
        {
            self.last_client = h;
            self.clients.insert(h);
        }
    }
}

impl Tally {
    fn add_sums(&mut self, s: &Sums) {
        if s.requests == 0 {
            return;
        }
        if self.requests == 0 || s.first_ms < self.first_ms {
            self.first_ms = s.first_ms;
        }
        if self.requests == 0 || s.last_ms > self.last_ms {
            self.last_ms = s.last_ms;
        }
        self.requests += u64::from(s.requests);
        self.bytes = self.bytes.saturating_add(s.bytes);
        self.errors += u64::from(s.errors);
    }
}

/// The counts of one key's rows in a [`TopPart`].
#[derive(Clone, Copy, Debug)]
struct Sums {
    requests: u32,
    errors: u32,
    bytes: u64,
    first_ms: i64,
    last_ms: i64,
}

impl Sums {
    const ZERO: Sums = Sums {
        requests: 0,
        bytes: 0,
        errors: 0,
        first_ms: i64::MAX,
        last_ms: i64::MIN,
    };

    #[inline]
    fn add(&mut self, ts_ms: i64, status: u16, bytes: Option<u64>) {
        self.first_ms = self.first_ms.min(ts_ms);
        self.last_ms = self.last_ms.max(ts_ms);
        self.requests += 1;
        self.bytes = self.bytes.saturating_add(bytes.unwrap_or(0));
        self.errors += u32::from(status >= ERROR_STATUS);
    }
}

/// A key of a [`TopPart`]: a value slot of the batch's text column ([`NULL_CODE`] for
/// null), a status, or a client key.
#[derive(Clone, Copy, Debug)]
enum PartKey {
    Slot(u32),
    Status(u16),
    Client(ClientKey),
}

/// The tallies of one batch's rows, worked out on the thread that decoded the batch:
/// per distinct key (value slot, status, address or prefix) the sums of its rows and its
/// clients' hashes, so that the report's maps take one
/// update per key instead of one per row. Rows without an address (host names) are left
/// to the caller ([`TopPart::rest`]), which classifies them as any row. Valid for a
/// selection that keeps every row of its period and takes the client from the logged
/// address (no trusted proxies).
#[derive(Debug, Default)]
pub struct TopPart {
    keys: Vec<PartKey>,
    /// The sums of each key's rows (apart from the keys: the loop over rows touches
    /// only these).
    sums: Vec<Sums>,
    /// The client hashes of the rows of each key, key after key (`runs[k]` is the range
    /// of key `k`'s); empty where the breakdown counts no clients per value.
    hashes: Vec<u64>,
    runs: Vec<(u32, u32)>,
    /// Rows in the period without an address, for the caller.
    pub rest: Vec<u32>,
}

impl TopPart {
    /// Tallies the rows of `b` with `since <= ts < until` (ms, either end open) broken
    /// down `by`, with `v4_len`/`v6_len` prefixes.
    pub fn of(
        b: &Batch,
        by: TopBy,
        (v4_len, v6_len): (u8, u8),
        (since, until): (Option<i64>, Option<i64>),
    ) -> TopPart {
        if let Some(col) = by.text_column(b)
            && let Some(slots) = col.codes().filter(|c| c.len() == b.len())
            && let Some(ips) = b.ip_codes.as_ref().filter(|c| c.codes.len() == b.len())
            && let Some(part) = TopPart::of_coded(
                b,
                (slots, col.slots()),
                (&ips.codes, ips.slots),
                (since, until),
            )
        {
            return part;
        }
        let mut part = TopPart::default();
        let mut slot_key: Vec<u32> = Vec::new();
        let mut null_key = UNSET;
        let mut status_key: Vec<u32> = Vec::new();
        let mut client_key: FxHashMap<ClientKey, u32> = FxHashMap::default();
        let text = by.text_column(b);
        if let Some(col) = text {
            slot_key.resize(col.slots(), UNSET);
        }
        let per_value = by.counts_clients();
        let mut rows: Vec<(u32, u64)> = Vec::with_capacity(if per_value { b.len() } else { 0 });
        // With the addresses coded (a dataset's batch), an address's hash and key are
        // worked out once per code: per code, its hash (0: not yet) and its key.
        let codes = b
            .ip_codes
            .as_ref()
            .filter(|c| c.codes.len() == b.len())
            .map(|c| (c.codes.as_slice(), c.slots));
        let mut code_hash: Vec<u64> = Vec::new();
        let mut code_key: Vec<u32> = Vec::new();
        if let Some((_, slots)) = codes {
            if per_value {
                code_hash.resize(slots, 0);
            }
            if text.is_none() && by != TopBy::Status {
                code_key.resize(slots, UNSET);
            }
        }
        let (keys, sums) = (&mut part.keys, &mut part.sums);
        fn new_key(keys: &mut Vec<PartKey>, k: PartKey) -> u32 {
            keys.push(k);
            (keys.len() - 1) as u32
        }
        for i in 0..b.len() {
            let ts = b.ts_ms[i];
            if since.is_some_and(|s| ts < s) || until.is_some_and(|u| ts >= u) {
                continue;
            }
            let Some(ip) = b.ip[i] else {
                part.rest.push(i as u32);
                continue;
            };
            // Built only where no code's memo answers.
            let client = || ClientKey::addr(ip);
            let k = match (by, text) {
                (_, Some(col)) => match col.code(i) {
                    None => {
                        if null_key == UNSET {
                            null_key = new_key(keys, PartKey::Slot(NULL_CODE));
                        }
                        null_key
                    }
                    Some(s) => {
                        let s = s as usize;
                        if slot_key.len() <= s {
                            slot_key.resize(s + 1, UNSET);
                        }
                        if slot_key[s] == UNSET {
                            slot_key[s] = new_key(keys, PartKey::Slot(s as u32));
                        }
                        slot_key[s]
                    }
                },
                (TopBy::Status, None) => {
                    let s = usize::from(b.status[i]);
                    if status_key.len() <= s {
                        status_key.resize(s + 1, UNSET);
                    }
                    if status_key[s] == UNSET {
                        status_key[s] = new_key(keys, PartKey::Status(b.status[i]));
                    }
                    status_key[s]
                }
                (_, None) => {
                    let memo = codes.and_then(|(c, _)| code_key.get_mut(c[i] as usize));
                    match memo {
                        Some(k) if *k != UNSET => *k,
                        memo => {
                            let c = if by == TopBy::Prefix {
                                ClientKey::prefix(ip, v4_len, v6_len)
                            } else {
                                client()
                            };
                            let k = *client_key
                                .entry(c)
                                .or_insert_with(|| new_key(keys, PartKey::Client(c)));
                            if let Some(m) = memo {
                                *m = k;
                            }
                            k
                        }
                    }
                }
            };
            if sums.len() <= k as usize {
                sums.push(Sums::ZERO);
            }
            sums[k as usize].add(ts, b.status[i], b.size(i));
            if per_value {
                let h = match codes.and_then(|(c, _)| code_hash.get_mut(c[i] as usize)) {
                    Some(h) if *h != 0 => *h,
                    Some(h) => {
                        *h = client_hash(client());
                        *h
                    }
                    None => client_hash(client()),
                };
                rows.push((k, h));
            }
        }
        if per_value {
            // Each key's hashes together (a counting sort by key), a client repeated
            // row after row within a key kept once.
            let mut at: Vec<u32> = Vec::with_capacity(keys.len());
            let mut end = 0u32;
            for s in sums.iter() {
                at.push(end);
                end += s.requests;
            }
            let starts = at.clone();
            let mut last: Vec<Option<u64>> = vec![None; keys.len()];
            part.hashes = vec![0; rows.len()];
            for &(k, h) in &rows {
                let k = k as usize;
                if last[k] != Some(h) {
                    last[k] = Some(h);
                    part.hashes[at[k] as usize] = h;
                    at[k] += 1;
                }
            }
            // `at[k]` now ends key k's hashes; the room left after them is skipped.
            part.runs = starts.into_iter().zip(at).collect();
        }
        part
    }

    /// [`TopPart::of`] for a text breakdown whose values and addresses are both coded (a
    /// dataset's batch): per row, the sums of its value's slot and the row's client as a
    /// code; then each key's clients once (a counting sort by slot, a stamp per client),
    /// each client hashed once per code. `None` where a code is out of range or a column
    /// short.
    fn of_coded(
        b: &Batch,
        (slots, nslots): (&[u32], usize),
        (ips, ncodes): (&[u32], usize),
        (since, until): (Option<i64>, Option<i64>),
    ) -> Option<TopPart> {
        let n = b.len();
        if [b.ts_ms.len(), b.ip.len(), b.status.len(), b.bytes.len()] != [n; 4]
            || !below(slots, nslots)
            || !below(ips, ncodes)
        {
            return None;
        }
        let mut part = TopPart::default();
        // Key `k` is slot `k`; the last, `nslots`, is null.
        let nk = nslots + 1;
        let mut sums = vec![Sums::ZERO; nk];
        // Each tallied row's key and client: an address code, or past the codes one id
        // per other address (by its hash, which is what tells clients apart).
        let mut keyed: Vec<(u32, u32)> = Vec::with_capacity(b.len());
        let mut id_hash: Vec<u64> = vec![0; ncodes];
        let mut other: FxHashMap<u64, u32> = FxHashMap::default();
        let bounded = since.is_some() || until.is_some();
        let rows = slots
            .iter()
            .zip(ips)
            .zip(&b.ts_ms)
            .zip(&b.ip)
            .zip(b.status.iter().zip(&b.bytes));
        for (i, ((((&s, &c), &ts), ip), (&status, &bytes))) in rows.enumerate() {
            if bounded && (since.is_some_and(|s| ts < s) || until.is_some_and(|u| ts >= u)) {
                continue;
            }
            let Some(ip) = ip.as_ref() else {
                part.rest.push(i as u32);
                continue;
            };
            let k = if s == NULL_CODE { nslots } else { s as usize };
            sums[k].add(ts, status, bytes);
            let id = if c != NO_CODE {
                let h = &mut id_hash[c as usize];
                if *h == 0 {
                    *h = addr_hash(ip);
                }
                c
            } else {
                let h = addr_hash(ip);
                *other.entry(h).or_insert_with(|| {
                    id_hash.push(h);
                    (id_hash.len() - 1) as u32
                })
            };
            keyed.push((k as u32, id));
        }
        // The clients key after key; `at[k]` from the start of key k's to its end.
        let mut at: Vec<u32> = Vec::with_capacity(nk);
        let mut end = 0u32;
        for s in &sums {
            at.push(end);
            end += s.requests;
        }
        let mut order = vec![0u32; keyed.len()];
        for &(k, id) in &keyed {
            let a = &mut at[k as usize];
            order[*a as usize] = id;
            *a += 1;
        }
        // The key (+ 1) that last took each client.
        let mut stamp = vec![0u32; id_hash.len()];
        let mut start = 0usize;
        for (k, (s, &z)) in sums.iter().zip(&at).enumerate() {
            let (a, z) = (start, z as usize);
            start = z;
            if s.requests == 0 {
                continue;
            }
            let from = part.hashes.len() as u32;
            for &id in &order[a..z] {
                let seen = &mut stamp[id as usize];
                if *seen != k as u32 + 1 {
                    *seen = k as u32 + 1;
                    part.hashes.push(id_hash[id as usize]);
                }
            }
            let slot = if k == nslots { NULL_CODE } else { k as u32 };
            part.keys.push(PartKey::Slot(slot));
            part.sums.push(*s);
            part.runs.push((from, part.hashes.len() as u32));
        }
        Some(part)
    }
}

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
            (local_rfc3339(l, l - ms), l)
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

/// One value of a breakdown.
#[derive(Clone, Debug, Serialize)]
pub struct TopRow {
    /// 1 for the first row.
    pub rank: u64,
    /// The value (`null`: the request had none, e.g. no Referer).
    pub value: Option<String>,
    /// Requests.
    pub requests: u64,
    /// Share of all selected requests (0–1).
    pub share: f64,
    /// Body bytes sent.
    pub bytes: u64,
    /// Share of all body bytes (0–1).
    pub bytes_share: f64,
    /// Distinct clients (1 per address for `--by ip`).
    pub clients: u64,
    /// Whether `clients` is a HyperLogLog estimate (more than [`EXACT_CLIENTS`]).
    pub clients_estimated: bool,
    /// Requests with status ≥ 400.
    pub errors: u64,
    /// `errors` over `requests` (0–1).
    pub error_share: f64,
    /// First request, RFC 3339 in the report's zone.
    pub first_seen: String,
    /// Last request, RFC 3339 in the report's zone.
    pub last_seen: String,
    /// First request on the report's clock (ms), for tables.
    #[serde(skip)]
    pub first_local_ms: i64,
    /// Last request on the report's clock (ms), for tables.
    #[serde(skip)]
    pub last_local_ms: i64,
}

/// The values after the listed ones, added up.
#[derive(Clone, Debug, Serialize)]
pub struct TopRest {
    /// How many values.
    pub values: u64,
    /// Their requests.
    pub requests: u64,
    /// Share of all selected requests (0–1).
    pub share: f64,
    /// Their body bytes.
    pub bytes: u64,
    /// Their requests with status ≥ 400.
    pub errors: u64,
}

/// A finished breakdown.
#[derive(Clone, Debug, Serialize)]
pub struct Breakdown {
    /// What it is by.
    pub by: TopBy,
    /// The order of the rows.
    pub sort: TopSort,
    /// Distinct values seen.
    pub distinct_values: u64,
    /// The listed values, in order.
    pub rows: Vec<TopRow>,
    /// The others (absent when every value is listed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rest: Option<TopRest>,
}

/// A count of distinct clients as shown: `≈1,234` for an estimate.
pub fn clients_label(n: u64, estimated: bool) -> String {
    if estimated {
        format!("≈{}", thousands(n))
    } else {
        thousands(n)
    }
}

/// Bytes as shown in tables: `812 B`, `12.3 KiB`, `4.0 MiB` … (CSV and JSON: plain
/// integers).
pub fn bytes_label(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// What the times of a table have in common, so that rows show only the rest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Span {
    /// Nothing: rows show `YYYY-MM-DD HH:MM:SS`.
    All,
    /// One year (`2026`): rows show `MM-DD HH:MM:SS`.
    Year(String),
    /// One day (`2026-09-25`): rows show `HH:MM:SS`.
    Day(String),
}

impl Span {
    /// The span of local instants `ms`.
    pub fn of(ms: impl Iterator<Item = i64>) -> Span {
        let mut day: Option<String> = None;
        let mut one_day = true;
        let mut one_year = true;
        for m in ms {
            let d = seen_label(m, &Span::All)
                .get(..10)
                .unwrap_or("")
                .to_string();
            match &day {
                None => day = Some(d),
                Some(x) => {
                    one_day &= *x == d;
                    one_year &= x.get(..4) == d.get(..4);
                }
            }
        }
        match day {
            Some(d) if one_day => Span::Day(d),
            Some(d) if one_year => Span::Year(d[..4].to_string()),
            _ => Span::All,
        }
    }

    /// The line under a title saying what the table's times leave out.
    pub fn line(&self, zone: &str) -> String {
        match self {
            Span::All => format!("times are {zone} times"),
            Span::Year(y) => format!("times are {zone} times in {y}"),
            Span::Day(d) => format!("times are {zone} times on {d}"),
        }
    }
}

/// Local ms as `YYYY-MM-DD HH:MM:SS`, less what `span` says every row shares.
pub fn seen_label(local_ms: i64, span: &Span) -> String {
    let s = local_rfc3339(local_ms, 0);
    // `YYYY-MM-DDTHH:MM:SSZ`
    let t = s.trim_end_matches('Z').replacen('T', " ", 1);
    let cut = match span {
        Span::All => 0,
        Span::Year(_) => 5,
        Span::Day(_) => 11,
    };
    t.get(cut..).unwrap_or(&t).to_string()
}

/// Which columns a breakdown's tables show.
#[derive(Clone, Copy, Debug)]
pub struct Columns {
    /// Distinct clients.
    pub clients: bool,
    /// First and last seen.
    pub seen: bool,
}

impl Breakdown {
    /// What the rows' times have in common (tables leave it out).
    pub fn span(&self) -> Span {
        Span::of(
            self.rows
                .iter()
                .flat_map(|r| [r.first_local_ms, r.last_local_ms]),
        )
    }

    /// Whether `t` (a [`Breakdown::table`]) fits a terminal of `width` columns with
    /// text values (paths, referers, agents, hosts) cut to no less than 20 columns and
    /// addresses, networks, statuses and methods never cut.
    pub fn fits(&self, t: &Table, width: usize) -> bool {
        let natural = t
            .to_terminal(usize::MAX, false)
            .lines()
            .map(crate::table::display_width)
            .max()
            .unwrap_or(0);
        let value = self
            .rows
            .iter()
            .map(|r| {
                crate::table::display_width(&crate::escape::terminal_str(
                    r.value.as_deref().unwrap_or("(none)"),
                    500,
                ))
            })
            .max()
            .unwrap_or(0)
            .max(crate::table::display_width(self.by.header()));
        let text = matches!(
            self.by,
            TopBy::Path | TopBy::Referer | TopBy::Agent | TopBy::Host
        );
        let shrink = if text { value.saturating_sub(20) } else { 0 };
        natural.saturating_sub(shrink) <= width
    }

    /// The table for people: `#`, value, requests, share, bytes, clients, errors, first
    /// and last seen (as `cols` says), times less what `span` says they share.
    pub fn table(&self, cols: Columns, span: &Span) -> Table {
        let mut head: Vec<(&str, Align)> = vec![
            ("#", Align::Right),
            (self.by.header(), Align::Left),
            ("requests", Align::Right),
            ("share", Align::Right),
            ("bytes", Align::Right),
        ];
        let clients = cols.clients && self.by.counts_clients();
        if clients {
            head.push(("clients", Align::Right));
        }
        head.push(("errors", Align::Right));
        if cols.seen {
            head.push(("first seen", Align::Right));
            head.push(("last seen", Align::Right));
        }
        let mut t = Table::new(&head);
        for r in &self.rows {
            let mut row = vec![
                Cell::from(r.rank.to_string()),
                Cell::from(r.value.clone().unwrap_or_else(|| "(none)".into())),
                Cell::from(thousands(r.requests)),
                Cell::from(format!("{:.1}%", 100.0 * r.share)),
                Cell::from(bytes_label(r.bytes)),
            ];
            if clients {
                row.push(Cell::from(clients_label(r.clients, r.clients_estimated)));
            }
            row.push(Cell::from(pct1(r.errors, r.requests)));
            if cols.seen {
                row.push(Cell::from(seen_label(r.first_local_ms, span)));
                row.push(Cell::from(seen_label(r.last_local_ms, span)));
            }
            t.row(row);
        }
        t
    }

    /// The table as data (CSV): one typed value per column — plain integers, shares as
    /// fractions, RFC 3339 times, `true`/`false`.
    pub fn csv_table(&self) -> Table {
        let mut t = Table::new(&[
            ("rank", Align::Right),
            (self.by.name(), Align::Left),
            ("requests", Align::Right),
            ("share", Align::Right),
            ("bytes", Align::Right),
            ("bytes_share", Align::Right),
            ("clients", Align::Right),
            ("clients_estimated", Align::Left),
            ("errors", Align::Right),
            ("error_share", Align::Right),
            ("first_seen", Align::Left),
            ("last_seen", Align::Left),
        ]);
        for r in &self.rows {
            t.row([
                r.rank.to_string(),
                r.value.clone().unwrap_or_default(),
                r.requests.to_string(),
                r.share.to_string(),
                r.bytes.to_string(),
                r.bytes_share.to_string(),
                r.clients.to_string(),
                r.clients_estimated.to_string(),
                r.errors.to_string(),
                r.error_share.to_string(),
                r.first_seen.clone(),
                r.last_seen.clone(),
            ]);
        }
        t
    }

    /// The note under the table on the values not listed, if any.
    pub fn rest_note(&self) -> Option<String> {
        self.rest.as_ref().map(|r| {
            format!(
                "… and {} more {} with {} requests ({:.1}%), {}",
                thousands(r.values),
                self.by.plural(),
                thousands(r.requests),
                100.0 * r.share,
                bytes_label(r.bytes)
            )
        })
    }

    /// A bar chart of the listed rows (requests, or bytes when sorted by bytes).
    pub fn bars_svg(&self, title: &str) -> String {
        let by_bytes = self.sort == TopSort::Bytes;
        let bars = self
            .rows
            .iter()
            .map(|r| crate::chart::Bar {
                label: r.value.clone().unwrap_or_else(|| "(none)".into()),
                value: if by_bytes {
                    r.bytes as f64
                } else {
                    r.requests as f64
                },
                text: if by_bytes {
                    format!("{} ({:.1}%)", bytes_label(r.bytes), 100.0 * r.bytes_share)
                } else {
                    format!("{} ({:.1}%)", thousands(r.requests), 100.0 * r.share)
                },
            })
            .collect();
        crate::chart::bars(&crate::chart::Bars {
            title: title.to_string(),
            bars,
        })
    }
}

/// The result of `logscope top`.
#[derive(Clone, Debug, Serialize)]
pub struct TopReport {
    /// Where the rows came from.
    pub origin: String,
    /// The filter, described.
    pub selection: String,
    /// The clock of the times.
    pub zone: String,
    /// Selected requests.
    pub requests: u64,
    /// Their body bytes.
    pub bytes: u64,
    /// Their requests with status ≥ 400.
    pub errors: u64,
    /// `errors` over `requests`.
    pub error_share: f64,
    /// Distinct clients of all selected requests.
    pub clients: u64,
    /// Whether `clients` is an estimate.
    pub clients_estimated: bool,
    /// First selected request, RFC 3339 in the report's zone.
    pub first_seen: Option<String>,
    /// Last selected request.
    pub last_seen: Option<String>,
    /// A request counts as an error at or above this status.
    pub error_status: u16,
    /// Clients are counted exactly up to this many per value, then estimated.
    pub exact_clients_up_to: usize,
    /// The breakdown.
    #[serde(flatten)]
    pub breakdown: Breakdown,
}

impl TopReport {
    /// The report from a finished accumulator.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        acc: TopAcc,
        cls: &Classifier,
        sort: TopSort,
        limit: usize,
        local: &dyn Fn(i64) -> i64,
        zone: &str,
        selection: &str,
        origin: &str,
    ) -> TopReport {
        let t = acc.total();
        let time = |ms: i64| {
            let l = local(ms);
            local_rfc3339(l, l - ms)
        };
        let (clients, clients_estimated) = t.clients.count();
        TopReport {
            origin: origin.to_string(),
            selection: selection.to_string(),
            zone: zone.to_string(),
            requests: t.requests,
            bytes: t.bytes,
            errors: t.errors,
            error_share: share(t.errors, t.requests),
            clients,
            clients_estimated,
            first_seen: (t.requests > 0).then(|| time(t.first_ms)),
            last_seen: (t.requests > 0).then(|| time(t.last_ms)),
            error_status: ERROR_STATUS,
            exact_clients_up_to: EXACT_CLIENTS,
            breakdown: acc.finish(cls, sort, limit, local),
        }
    }

    /// The report for a terminal of `width` columns: the first and last seen columns
    /// are left out when the table would not fit with them (the value column shrinks to
    /// 8 columns at the least).
    pub fn doc_for_width(&self, width: usize) -> Doc {
        let full = self.doc_with(true, false);
        let fits = full
            .sections
            .first()
            .and_then(|s| s.table.as_ref())
            .is_none_or(|t| self.breakdown.fits(t, width));
        if fits {
            return full;
        }
        let mut d = self.doc_with(false, false);
        if let Some(s) = d.sections.first_mut() {
            s.notes.push(
                "first and last seen: in a wider terminal (COLUMNS=120), or --format csv/json"
                    .into(),
            );
        }
        d
    }

    /// The report for people (every column).
    pub fn doc(&self) -> Doc {
        self.doc_with(true, true)
    }

    fn doc_with(&self, seen: bool, chart: bool) -> Doc {
        let b = &self.breakdown;
        let mut lines = vec![
            format!("source: {}", self.origin),
            format!("selection: {}", self.selection),
        ];
        let mut summary = format!(
            "{} requests, {} distinct {}, {} from {} clients; {} errors ({}, status ≥ {})",
            thousands(self.requests),
            thousands(b.distinct_values),
            b.by.plural(),
            bytes_label(self.bytes),
            clients_label(self.clients, self.clients_estimated),
            thousands(self.errors),
            pct1(self.errors, self.requests),
            self.error_status
        );
        if let (Some(f), Some(l)) = (&self.first_seen, &self.last_seen) {
            summary.push_str(&format!("; from {f} to {l}"));
        }
        lines.push(summary);
        let span = b.span();
        lines.push(span.line(&self.zone));
        let mut notes = vec![format!(
            "share: of all selected requests; bytes: body bytes sent (- counts 0); errors: share of the {}'s requests with status ≥ {} (4xx and 5xx)",
            b.by.header(),
            self.error_status
        )];
        if b.by.counts_clients() {
            notes.push(format!(
                "clients: distinct client addresses (host names where the log has no address), exact up to {EXACT_CLIENTS} per {}, above that a HyperLogLog estimate (±2.3%) marked ≈",
                b.by.header()
            ));
        }
        notes.extend(b.rest_note());
        let title = format!("Top {} by {}", b.by.plural(), b.sort.name());
        let mut doc = Doc {
            title: title.clone(),
            lines,
            sections: vec![Section {
                title: None,
                table: Some(b.table(
                    Columns {
                        clients: true,
                        seen,
                    },
                    &span,
                )),
                notes,
            }],
            csv_section: 0,
            csv: Some(b.csv_table()),
            ..Doc::default()
        };
        if chart && !b.rows.is_empty() {
            doc.figures.push(super::doc::Figure {
                title: title.clone(),
                svg: b.bars_svg(&title),
                text: None,
            });
        }
        doc
    }
}

impl crate::forensics::doc::Document for TopReport {
    fn doc(&self, width: usize) -> Doc {
        if width == usize::MAX {
            TopReport::doc(self)
        } else {
            self.doc_for_width(width)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;
    use proptest::prelude::*;

    fn batch(rows: &[(i64, &str, &str, u16, u64)]) -> Batch {
        let mut b = Batch::default();
        for (n, (t, ip, path, status, bytes)) in rows.iter().enumerate() {
            let r = Record {
                ts_ms: *t,
                client: ip.as_bytes(),
                ip: ip.parse().ok(),
                method: Some(b"GET"),
                path: Some(path.as_bytes()),
                status: *status,
                bytes: Some(*bytes),
                user_agent: Some(b"curl/8"),
                ..Record::default()
            };
            b.push(&r, n as u64 + 1);
        }
        b
    }

    fn run(b: &Batch, by: TopBy, sort: TopSort, limit: usize) -> TopReport {
        let mut cls = Classifier::default();
        let mut acc = TopAcc::new(by);
        acc.begin_batch(b);
        for i in 0..b.len() {
            let rc = cls.classify(b, i);
            acc.add(b, i, &rc);
        }
        TopReport::new(acc, &cls, sort, limit, &|t| t, "UTC", "all", "test")
    }

    #[test]
    fn per_value_tallies_and_order() {
        let b = batch(&[
            (1000, "1.1.1.1", "/a", 200, 10),
            (2000, "1.1.1.2", "/a", 404, 20),
            (3000, "1.1.1.1", "/b", 200, 1000),
            (4000, "2.2.2.2", "/c", 500, 5),
            (5000, "2.2.2.2", "/c", 200, 5),
        ]);
        let r = run(&b, TopBy::Path, TopSort::Requests, 0);
        let rows = &r.breakdown.rows;
        let v: Vec<_> = rows.iter().map(|r| r.value.as_deref().unwrap()).collect();
        assert_eq!(v, ["/a", "/c", "/b"], "ties by value");
        assert_eq!(
            (rows[0].requests, rows[0].bytes, rows[0].clients),
            (2, 30, 2)
        );
        assert_eq!(rows[0].errors, 1);
        assert_eq!(rows[0].first_seen, "1970-01-01T00:00:01Z");
        assert_eq!(rows[0].last_seen, "1970-01-01T00:00:02Z");
        assert_eq!(rows[1].clients, 1);
        assert_eq!((r.requests, r.bytes, r.errors, r.clients), (5, 1040, 2, 3));
        let r = run(&b, TopBy::Path, TopSort::Bytes, 1);
        assert_eq!(r.breakdown.rows[0].value.as_deref(), Some("/b"));
        let rest = r.breakdown.rest.as_ref().unwrap();
        assert_eq!((rest.values, rest.requests, rest.bytes), (2, 4, 40));
        let r = run(&b, TopBy::Status, TopSort::Requests, 0);
        let v: Vec<_> = r
            .breakdown
            .rows
            .iter()
            .map(|r| r.value.clone().unwrap())
            .collect();
        assert_eq!(v, ["200", "404", "500"]);
        let r = run(&b, TopBy::Prefix, TopSort::Requests, 0);
        assert_eq!(r.breakdown.rows[0].value.as_deref(), Some("1.1.1.0/24"));
        assert_eq!(r.breakdown.rows[0].clients, 2);
        let csv = r.doc().to_csv();
        assert!(
            csv.starts_with("rank,prefix,requests,share,bytes,bytes_share,clients"),
            "{csv}"
        );
        assert!(csv.contains("1,1.1.1.0/24,3,0.6,1030,"), "{csv}");
    }

    #[test]
    fn coded_and_plain_columns_agree() {
        let b = batch(&[
            (1, "1.1.1.1", "/x", 200, 1),
            (2, "1.1.1.2", "/y", 200, 1),
            (3, "1.1.1.3", "/x", 200, 1),
        ]);
        let mut coded = b.clone();
        let mut path = TextColumn::coded();
        let x = path.push_value("/x");
        let y = path.push_value("/y");
        for k in [x, y, x] {
            path.push_code(k);
        }
        coded.path = path;
        let a = run(&b, TopBy::Path, TopSort::Requests, 0);
        let c = run(&coded, TopBy::Path, TopSort::Requests, 0);
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&c).unwrap()
        );
    }

    #[test]
    fn merging_distinct_clients_is_inserting_them() {
        // Exact into exact, exact into a sketch, a sketch into exact and into a sketch:
        // each the same count as inserting every client into one set.
        for (a, b) in [
            (0..100u64, 50..200u64),
            (5000..5100, 0..1000),
            (0..1000, 500..600),
            (0..900, 400..5000),
        ] {
            let mut one = Distinct::default();
            let (mut x, mut y) = (Distinct::default(), Distinct::default());
            for i in a {
                one.insert(mix64(i));
                x.insert(mix64(i));
            }
            for i in b {
                one.insert(mix64(i));
                y.insert(mix64(i));
            }
            x.merge(&y);
            assert_eq!(x.count(), one.count());
        }
    }

    #[test]
    fn codes_below_a_count() {
        assert!(below(&[], 0));
        assert!(below(&[0, 2, NULL_CODE, 1], 3));
        assert!(!below(&[0, 3, NULL_CODE], 3));
        assert!(below(&[NULL_CODE; 5], 0));
        assert!(!below(&[0], 0));
        assert!(!below(&[u32::MAX - 1], 7));
    }

    #[test]
    fn client_hashes_are_a_set() {
        // Against std's set: repeats, 0, and hashes that share their low bits (the
        // slot index) so that probes wrap around the table.
        let mut ours = Hashes::default();
        let mut std = std::collections::HashSet::new();
        for i in 0..5_000u64 {
            let h = match i % 5 {
                0 => 0,
                1 => (i % 97) << 40,
                2 => u64::MAX - (i % 13),
                _ => mix64(i % 1_500),
            };
            assert_eq!(ours.insert(h), std.insert(h), "{h:#x}");
            assert_eq!(ours.len(), std.len());
        }
        let mut got: Vec<u64> = ours.iter().collect();
        let mut want: Vec<u64> = std.into_iter().collect();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want);
        assert!(Hashes::default().is_empty());
    }

    #[test]
    fn distinct_clients_switch_to_an_estimate() {
        let mut d = Distinct::default();
        for i in 0..EXACT_CLIENTS as u64 {
            d.insert(mix64(i));
            d.insert(mix64(i));
        }
        assert_eq!(d.count(), (EXACT_CLIENTS as u64, false));
        for n in [1_000u64, 20_000, 200_000] {
            let mut d = Distinct::default();
            for i in 0..n {
                d.insert(mix64(i));
            }
            let (c, est) = d.count();
            assert!(est);
            let err = (c as f64 - n as f64).abs() / n as f64;
            assert!(err < 0.08, "{n}: {c}");
        }
        assert_eq!(clients_label(1234, true), "≈1,234");
        assert_eq!(bytes_label(1536), "1.5 KiB");
        assert_eq!(bytes_label(12), "12 B");
    }

    proptest! {
        /// Tallying batches where they are decoded ([`TopPart`], names left to the
        /// caller) gives the report of adding their rows one by one, byte for byte, for
        /// every breakdown, across batches and past the exact client count.
        #[test]
        fn parts_give_the_row_by_row_report(
            rows in prop::collection::vec(
                (0u16..3000, 0u8..4, 0u8..4, 0i64..7_200_000, prop::option::of(0u64..5000)),
                1..1500,
            ),
            by in 0usize..8,
            coded in any::<bool>(),
            ip_codes in any::<bool>(),
            cut in 0usize..1500,
            period in prop::option::of((0i64..3_600_000, 3_600_000i64..7_200_001)),
        ) {
            let by = [
                TopBy::Path, TopBy::Status, TopBy::Referer, TopBy::Agent,
                TopBy::Ip, TopBy::Prefix, TopBy::Host, TopBy::Method,
            ][by];
            let texts = [None, Some("/a"), Some("/b?x"), Some("GET")];
            let statuses = [200u16, 304, 404, 503];
            let batch_of = |rows: &[(u16, u8, u8, i64, Option<u64>)]| {
                let mut b = Batch::default();
                let owned: Vec<String> = rows
                    .iter()
                    .map(|&(c, _, _, _, _)| match c % 50 {
                        0 => format!("host{}.example", c % 3),
                        1 => format!("2001:db8:{c:x}::1"),
                        _ => format!("10.{}.{}.7", c % 7, c),
                    })
                    .collect();
                for (n, (&(_, v, st, t, bytes), ip)) in rows.iter().zip(&owned).enumerate() {
                    let text = texts[v as usize].map(str::as_bytes);
                    b.push(&Record {
                        ts_ms: t,
                        client: ip.as_bytes(),
                        ip: ip.parse().ok(),
                        method: text,
                        path: text,
                        referer: text,
                        user_agent: text,
                        host: text,
                        status: statuses[st as usize],
                        bytes,
                        ..Record::default()
                    }, n as u64);
                }
                if coded {
                    b.code_text();
                }
                if ip_codes {
                    b.ip_codes = Some(crate::batch::IpCodes::for_test(&owned));
                }
                b
            };
            let cut = cut.min(rows.len());
            let batches = [batch_of(&rows[..cut]), batch_of(&rows[cut..])];
            let (since, until) = period.map_or((None, None), |(s, u)| (Some(s), Some(u)));
            let mut cls = Classifier::default();
            let mut plain = TopAcc::new(by);
            for b in &batches {
                plain.begin_batch(b);
                for i in 0..b.len() {
                    let t = b.ts_ms[i];
                    if since.is_some_and(|s| t < s) || until.is_some_and(|u| t >= u) {
                        continue;
                    }
                    let rc = cls.classify(b, i);
                    plain.add(b, i, &rc);
                }
            }
            let mut tallied = TopAcc::new(by);
            for b in &batches {
                let part = TopPart::of(b, by, (cls.v4_len, cls.v6_len), (since, until));
                tallied.begin_batch(b);
                tallied.add_part(b, &part);
                for &i in &part.rest {
                    let rc = cls.classify(b, i as usize);
                    tallied.add(b, i as usize, &rc);
                }
            }
            let report = |acc| {
                serde_json::to_string(&TopReport::new(
                    acc, &cls, TopSort::Clients, 0, &|t| t, "UTC", "all", "test",
                ))
                .unwrap()
            };
            prop_assert_eq!(report(plain), report(tallied));
        }
    }
}
