//! The compact row a store holds, its flags, its decision-time order, and what it
//! becomes: a [`Request`] for the replay and a [`RowMeta`] for the report.

use std::net::IpAddr;

use super::who::Who;
use crate::classify::ClientKey;
use crate::record::MAX_FIELDS;
use crate::replay::request::{ReplayOrder, Request};

pub(super) const NONE: u32 = u32::MAX;
/// A row's interned text ids: method, path, query, host, agent, referer, user (the
/// free text fields' places hold their index in the run's arenas), then one per
/// captured field slot ([`MAX_FIELDS`]).
pub(super) const IDS: usize = 7 + MAX_FIELDS;
/// Where the field slots start in a row's ids.
pub(super) const FIELD_IDS: usize = 7;
pub(super) const NO_VALUE: u64 = u64::MAX;

pub(super) const HEAVY: u8 = 1;
pub(super) const IDENTIFIED: u8 = 2;
pub(super) const COOKIE_KNOWN: u8 = 4;
pub(super) const COOKIE: u8 = 8;
pub(super) const SECOND: u8 = 16;
pub(super) const LOGGED_REFUSAL: u8 = 32;
/// Fed in file order ([`RowStore::set_log_order`](super::RowStore::set_log_order)): ordered by time and input only.
pub(super) const LOG_ORDER: u8 = 64;
/// The classifier's *anonymous* (not merely not identified).
pub(super) const ANONYMOUS: u8 = 128;

#[derive(Clone, Copy)]
pub(super) struct Row {
    pub(super) arrival: i64,
    pub(super) line: u64,
    pub(super) rt_us: u64,
    pub(super) bytes: u64,
    pub(super) ip: Option<IpAddr>,
    pub(super) file: u32,
    /// Client as written, when it is not an address.
    pub(super) client: u32,
    /// The classifier's name key, when the client is not an address.
    pub(super) name_key: u32,
    pub(super) agent: u32,
    /// Index into `texts`, when the candidates read text fields.
    pub(super) text: u32,
    pub(super) status: u16,
    pub(super) flags: u8,
    pub(super) who: u8,
}

impl Row {
    /// The report-side facts of a row.
    #[inline]
    pub(super) fn meta(&self) -> RowMeta {
        RowMeta {
            file: self.file,
            line: self.line,
            arrival_ms: self.arrival,
            status: self.status,
            ip: self.ip,
            name_key: (self.name_key != NONE).then_some(ClientKey::Name(self.name_key)),
            agent: self.agent,
            who: Who::ALL
                .get(self.who as usize)
                .copied()
                .unwrap_or(Who::Other),
            logged_refusal: self.flags & LOGGED_REFUSAL != 0,
            second_resolution: self.flags & SECOND != 0,
            request_time_us: (self.rt_us != NO_VALUE).then_some(self.rt_us),
            heavy: self.flags & HEAVY != 0,
        }
    }

    pub(super) const EMPTY: Row = Row {
        arrival: 0,
        line: 0,
        rt_us: NO_VALUE,
        bytes: NO_VALUE,
        ip: None,
        file: 0,
        client: NONE,
        name_key: NONE,
        agent: 0,
        text: NONE,
        status: 0,
        flags: 0,
        who: 0,
    };
}

/// One row's report-side facts (see [`RowStore::for_each_sorted`](super::RowStore::for_each_sorted)).
#[derive(Clone, Copy, Debug)]
pub struct RowMeta {
    /// Index of the input file ([`RowStore::file_name`](super::RowStore::file_name)).
    pub file: u32,
    /// Line in that file.
    pub line: u64,
    /// Decision time, UTC ms.
    pub arrival_ms: i64,
    /// Status as logged.
    pub status: u16,
    /// The real client's address.
    pub ip: Option<IpAddr>,
    /// The classifier's key of a client that is not an address.
    pub name_key: Option<ClientKey>,
    /// The classifier's agent id.
    pub agent: u32,
    /// The class.
    pub who: Who,
    /// Refused by a limiter already (status in `--refusal-status`).
    pub logged_refusal: bool,
    /// The log stamps this row in whole seconds.
    pub second_resolution: bool,
    /// Request time as logged, µs.
    pub request_time_us: Option<u64>,
    /// A heavy request.
    pub heavy: bool,
}

/// The interned names a [`Request`] is built from.
pub(super) struct Tables<'a> {
    pub(super) clients: &'a [Box<str>],
    pub(super) method: &'a [Box<str>],
    pub(super) host: &'a [Box<str>],
    pub(super) agent: &'a [Box<str>],
    pub(super) user: &'a [Box<str>],
    /// The values of captured fields (every slot in one table).
    pub(super) fields: &'a [Box<str>],
}

impl<'a> Tables<'a> {
    /// The request of a row, for the replay.
    #[inline]
    pub(super) fn request(
        &self,
        index: u64,
        r: &Row,
        t: &[u32; IDS],
        f: [Option<&'a [u8]>; 3],
    ) -> Request<'a> {
        let get = |v: &'a [Box<str>], i: u32| v.get(i as usize).map(|s| s.as_bytes());
        let mut fields = [None; MAX_FIELDS];
        for (k, out) in fields.iter_mut().enumerate() {
            let id = t[FIELD_IDS + k];
            if id != NONE {
                *out = get(self.fields, id);
            }
        }
        Request {
            index,
            arrival_ms: r.arrival,
            ip: r.ip,
            client: get(self.clients, r.client).unwrap_or(b""),
            method: get(self.method, t[0]),
            path: f[0],
            query: f[1],
            host: get(self.host, t[3]),
            user_agent: get(self.agent, t[4]),
            referer: f[2],
            user: get(self.user, t[6]),
            identified: r.flags & IDENTIFIED != 0,
            anonymous: r.flags & ANONYMOUS != 0,
            has_cookie: (r.flags & COOKIE_KNOWN != 0).then_some(r.flags & COOKIE != 0),
            heavy: r.flags & HEAVY != 0,
            status: r.status,
            request_time_us: (r.rt_us != NO_VALUE).then_some(r.rt_us),
            bytes: (r.bytes != NO_VALUE).then_some(r.bytes),
            whole_second: r.flags & SECOND != 0,
            fields,
        }
    }
}

#[inline]
pub(super) fn order_key(r: &Row) -> ReplayOrder {
    if r.flags & LOG_ORDER != 0 {
        return ReplayOrder::new(r.arrival, 0, false, 0);
    }
    let rt_ms = if r.rt_us == NO_VALUE {
        0
    } else {
        r.rt_us.div_ceil(1000)
    };
    ReplayOrder::new(r.arrival, rt_ms, r.flags & LOGGED_REFUSAL != 0, 0)
}

/// The order of [`order_key`], comparing the decision times first (most rows differ
/// there) and building the keys only for rows of one millisecond.
#[inline]
pub(super) fn decision_order(a: &Row, b: &Row) -> std::cmp::Ordering {
    a.arrival
        .cmp(&b.arrival)
        .then_with(|| packed_key(a).cmp(&packed_key(b)))
}

/// [`order_key`] as one integer with the same order: decision time (sign bit flipped),
/// the 2-bit class, the request time in ms (below 2^62: it is at most u64::MAX / 1000).
#[inline]
pub(super) fn packed_key(r: &Row) -> u128 {
    let k = order_key(r);
    (u128::from(k.arrival_ms as u64 ^ (1 << 63)) << 64)
        | (u128::from(k.class) << 62)
        | u128::from(k.request_time_ms)
}
