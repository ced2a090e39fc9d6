//! The request as the replay sees it, and the order in which requests must be fed.

use std::net::IpAddr;

use crate::record::Record;

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
            has_cookie: r.has_cookie,
            heavy: false,
            status: r.status,
            request_time_us: r.request_time_us,
            bytes: r.bytes,
        }
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
