//! The request as the replay sees it, and the order in which requests must be fed.

use std::net::IpAddr;

use crate::record::{MAX_FIELDS, Record};

/// One request, as the replay needs it: when the limiter would have decided, and the
/// fields matchers, keys and costs read.
///
/// Text fields borrow from the caller. `None` means the log does not carry the field.
/// Build one with [`Request::from_record`] or fill the fields directly.
#[derive(Clone, Copy, Debug, Default)]
pub struct Request<'a> {
    /// The caller's number for this request (line number, row index). Echoed nowhere by
    /// the engine; it is there so that callers can carry it next to the verdicts.
    pub index: u64,
    /// When the limiter decided: arrival time in ms since the Unix epoch. For logs stamped
    /// at completion (nginx `$msec`, Caddy `ts`) this is completion − request time.
    pub arrival_ms: i64,
    /// Client address, when the client is one.
    pub ip: Option<IpAddr>,
    /// The client as written in the log (used as the key when it is not an address).
    pub client: &'a [u8],
    /// Request method.
    pub method: Option<&'a [u8]>,
    /// Path without the query string.
    pub path: Option<&'a [u8]>,
    /// Query string without the `?`.
    pub query: Option<&'a [u8]>,
    /// Virtual host / Host header.
    pub host: Option<&'a [u8]>,
    /// User-Agent header.
    pub user_agent: Option<&'a [u8]>,
    /// Referer header.
    pub referer: Option<&'a [u8]>,
    /// Authenticated user name.
    pub user: Option<&'a [u8]>,
    /// Whether the request is from an identified (logged-in, credentialed) client, as the
    /// caller's classification says.
    pub identified: bool,
    /// Whether the client is known anonymous (the classifier's *anonymous*: no Cookie
    /// header where the log records it, or no user name where the rules say so). Neither
    /// identified nor anonymous is *unknown*: never anonymous.
    pub anonymous: bool,
    /// Whether the request carried a Cookie header, where the log can tell.
    pub has_cookie: Option<bool>,
    /// Whether the caller's classifier calls this request heavy (search, diff, history…).
    pub heavy: bool,
    /// Final status code as logged (0 when unknown).
    pub status: u16,
    /// Time the server spent, in microseconds.
    pub request_time_us: Option<u64>,
    /// Response bytes.
    pub bytes: Option<u64>,
    /// The log stamps the request in whole seconds and `arrival_ms` was spread over its
    /// second; a reader of the log line (fail2ban) sees the second itself.
    pub whole_second: bool,
    /// The fields of the user's format that `key=field:NAME` keys read, by slot
    /// ([`Record::fields`]).
    pub fields: [Option<&'a [u8]>; MAX_FIELDS],
}

impl<'a> Request<'a> {
    /// A request taken from a parsed record: arrival time, client, request line, agent,
    /// host, user, status, time and bytes. `identified` is set when the record has a user;
    /// `heavy` is left false (the caller's classifier sets it).
    pub fn from_record(index: u64, r: &Record<'a>) -> Request<'a> {
        Request {
            index,
            arrival_ms: r.ts_ms,
            ip: r.ip,
            client: r.client,
            method: r.method,
            path: r.path,
            query: r.query,
            host: r.host,
            user_agent: r.user_agent,
            referer: r.referer,
            user: r.user,
            identified: r.user.is_some(),
            anonymous: r.user.is_none() && r.has_cookie == Some(false),
            has_cookie: r.has_cookie,
            heavy: false,
            status: r.status,
            request_time_us: r.request_time_us,
            bytes: r.bytes,
            whole_second: false,
            fields: r.fields,
        }
    }

    /// The captured field in `slot` ([`Request::fields`]); `None` when absent, empty or
    /// `-` (the key's limit then skips the request).
    #[inline]
    pub fn field(&self, slot: u8) -> Option<&'a [u8]> {
        self.fields
            .get(usize::from(slot))
            .copied()
            .flatten()
            .filter(|v| !v.is_empty() && *v != b"-")
    }

    /// Request time rounded up to whole milliseconds, if known.
    pub fn request_time_ms(&self) -> Option<u64> {
        self.request_time_us.map(|us| us.div_ceil(1000))
    }
}

/// Sort key that puts requests in the order a limiter saw them, rebuilt from the log.
///
/// Requests must reach [`crate::replay::Replay::decide`] in decision-time order. A log
/// written at completion is not in that order: a request held by a limiter (nginx
/// `limit_req` without `nodelay`) or slow to serve is logged late. The rules, from the
/// nginx oracle (`shared/data/oracles/nginx-limit-req/README.md`):
///
/// 1. decision time first: `arrival_ms` = completion − request time;
/// 2. within one millisecond: requests served at once (request time 0) that the log
///    does not show as refused, in log order; then requests that took time (delayed
///    ones), shortest first, because inside one ms a bucket's excess only rises so a
///    longer delay was decided later; then requests the log shows as refused, in log
///    order;
/// 3. log order (`seq`) breaks the remaining ties.
///
/// `refused_in_log` is a hint (status 429, or 503 when that is the limiter's status);
/// pass `false` when the log had no limiter. Sorting by this key gives the nginx
/// oracle's exact order on the clock-aligned run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReplayOrder {
    /// Decision time, ms since the epoch.
    pub arrival_ms: i64,
    /// 0 served at once, 1 took time, 2 refused in the log.
    pub class: u8,
    /// Request time in ms (orders the delayed ones).
    pub request_time_ms: u64,
    /// Position in the log.
    pub seq: u64,
}

impl ReplayOrder {
    /// The sort key of one request (see the type's documentation).
    pub fn new(arrival_ms: i64, request_time_ms: u64, refused_in_log: bool, seq: u64) -> Self {
        let class = if refused_in_log && request_time_ms == 0 {
            2
        } else if request_time_ms > 0 {
            1
        } else {
            0
        };
        ReplayOrder {
            arrival_ms,
            class,
            request_time_ms,
            seq,
        }
    }

    /// The sort key of a [`Request`], with `seq` = its index and refusals guessed from
    /// `refused_status` (e.g. 429; 0 for none).
    pub fn of(req: &Request<'_>, refused_status: u16) -> Self {
        let refused = refused_status != 0 && req.status == refused_status;
        ReplayOrder::new(
            req.arrival_ms,
            req.request_time_ms().unwrap_or(0),
            refused,
            req.index,
        )
    }
}

/// Puts a log written in completion order into decision-time order ([`ReplayOrder`])
/// while holding only the last `horizon_ms` of it: an item is released once the log has
/// reached `horizon_ms` past its arrival, so requests that took longer than the horizon
/// to complete come out late (counted by [`Reorder::late`]; [`super::Replay`] judges
/// them at the latest time it has seen).
///
/// ```
/// use logscope_core::replay::{Reorder, ReplayOrder};
///
/// let mut r = Reorder::new(1000);
/// // (completion ms, request time ms): the second line arrived first.
/// let mut out = Vec::new();
/// for (seq, (done, took)) in [(100, 0), (150, 120), (5000, 0)].into_iter().enumerate() {
///     r.push(ReplayOrder::new(done - took, took as u64, false, seq as u64), done, seq);
///     while let Some(x) = r.pop_ready() { out.push(x); }
/// }
/// while let Some(x) = r.finish() { out.push(x); }
/// assert_eq!(out, vec![1, 0, 2]);
/// ```
pub struct Reorder<T> {
    heap: std::collections::BinaryHeap<std::cmp::Reverse<Held<T>>>,
    horizon_ms: i64,
    latest_ms: i64,
    emitted: Option<ReplayOrder>,
    late: u64,
}

struct Held<T> {
    key: ReplayOrder,
    item: T,
}

impl<T> PartialEq for Held<T> {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl<T> Eq for Held<T> {}
impl<T> PartialOrd for Held<T> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Held<T> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key.cmp(&o.key)
    }
}

impl<T> Reorder<T> {
    /// A buffer holding `horizon_ms` of log (60,000 covers all but very slow requests).
    pub fn new(horizon_ms: i64) -> Self {
        Reorder {
            heap: std::collections::BinaryHeap::new(),
            horizon_ms: horizon_ms.max(0),
            latest_ms: i64::MIN,
            emitted: None,
            late: 0,
        }
    }

    /// Adds an item with its order key and the time the log stamped it (completion).
    pub fn push(&mut self, key: ReplayOrder, completion_ms: i64, item: T) {
        self.latest_ms = self.latest_ms.max(completion_ms);
        if self.emitted.is_some_and(|e| key < e) {
            self.late += 1;
        }
        self.heap.push(std::cmp::Reverse(Held { key, item }));
    }

    /// The next item whose place in the order is settled, if any.
    pub fn pop_ready(&mut self) -> Option<T> {
        let top = &self.heap.peek()?.0;
        if top.key.arrival_ms >= self.latest_ms.saturating_sub(self.horizon_ms) {
            return None;
        }
        self.finish()
    }

    /// The next item regardless of the horizon (at end of input).
    pub fn finish(&mut self) -> Option<T> {
        let h = self.heap.pop()?.0;
        self.emitted = Some(self.emitted.map_or(h.key, |e| e.max(h.key)));
        Some(h.item)
    }

    /// Items held now.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Items that came after one that belongs later had already been released.
    pub fn late(&self) -> u64 {
        self.late
    }
}
