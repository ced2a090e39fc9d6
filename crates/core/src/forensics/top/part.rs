//! The tallies of one batch's rows per key, worked out where the batch was decoded
//! ([`TopPart`]).

use rustc_hash::FxHashMap;

use super::UNSET;
use super::by::TopBy;
use super::distinct::client_hash;
use super::tally::Sums;
use crate::batch::{Batch, NO_CODE, NULL_CODE};
use crate::classify::ClientKey;

/// Whether every code is below `n` or `u32::MAX` ([`NULL_CODE`], [`NO_CODE`]): one
/// pass without a branch per code (`MAX + 1` wraps to 0).
pub(super) fn below(codes: &[u32], n: usize) -> bool {
    let top = codes.iter().fold(0u32, |m, &c| m.max(c.wrapping_add(1)));
    top as usize <= n
}

/// [`client_hash`] of an address, out of line: taken once per address code, it keeps
/// the address's bytes out of the registers of the loop over rows.
#[inline(never)]
fn addr_hash(ip: &std::net::IpAddr) -> u64 {
    client_hash(ClientKey::addr(*ip))
}

/// A key of a [`TopPart`]: a value slot of the batch's text column ([`NULL_CODE`] for
/// null), a status, or a client key.
#[derive(Clone, Copy, Debug)]
pub(super) enum PartKey {
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
    pub(super) keys: Vec<PartKey>,
    /// The sums of each key's rows (apart from the keys: the loop over rows touches
    /// only these).
    pub(super) sums: Vec<Sums>,
    /// The client hashes of the rows of each key, key after key (`runs[k]` is the range
    /// of key `k`'s); empty where the breakdown counts no clients per value.
    pub(super) hashes: Vec<u64>,
    pub(super) runs: Vec<(u32, u32)>,
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
        if by.is_clock() {
            // Keyed by arrival, not by a column: every row goes the row-by-row way.
            let rest = (0..b.len())
                .filter(|&i| {
                    let ts = b.ts_ms[i];
                    !(since.is_some_and(|s| ts < s) || until.is_some_and(|u| ts >= u))
                })
                .map(|i| i as u32)
                .collect();
            return TopPart {
                rest,
                ..TopPart::default()
            };
        }
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
