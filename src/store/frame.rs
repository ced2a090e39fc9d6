//! The dataset's schema, and the conversion of parsed [`Batch`]es to polars frames.
//!
//! Format 2 uses only types every engine reads natively (DuckDB, polars, Spark, Trino):
//! signed integers, booleans, UTF-8 strings and `ts` as a UTC timestamp in ms.
//!
//! Text columns hold the *stored form* of the log's bytes (format 3): a backslash is
//! written `\\`, a byte that is not valid UTF-8 `\xHH`, everything else as logged — so
//! the stored text is valid UTF-8 and decodes back to exactly the logged bytes.
//!
//! | column | type | meaning |
//! |---|---|---|
//! | `ts` | timestamp(ms, UTC) | arrival instant |
//! | `ts_precision` | int32 | 0 = s, 3 = ms, 6 = µs as logged |
//! | `client` | string | the client as logged (address or host name) |
//! | `ip_hi`, `ip_lo` | int64 | the client address as 128 bits (IPv4 as `::ffff:a.b.c.d`, so `ip_hi = 0`, `ip_lo >> 32 = 65535`), two's complement halves; null for host names. A /24 is `ip_lo & -256`, a /48 `ip_hi & -65536` |
//! | `ident`, `user`, `method`, `path`, `query`, `protocol` | string | |
//! | `status` | int32 | |
//! | `bytes` | int64 | response bytes |
//! | `referer`, `user_agent`, `host` | string | |
//! | `request_time_us` | int64 | |
//! | `xff` | string | X-Forwarded-For as logged, or the client field when that was a list |
//! | `client_list` | bool | the client field was a list of addresses (now in `xff`; its last entry the hop nearest the server); format 3 |
//! | `has_cookie` | bool | |
//! | `file` | string | the input's name |
//! | `line` | int64 | line number in the input |

use std::net::IpAddr;

use logscope_core::batch::{Batch, TextColumn};
use polars::prelude::*;

/// Names of the columns, in file order.
pub const COLUMNS: &[&str] = &[
    "ts",
    "ts_precision",
    "client",
    "ip_hi",
    "ip_lo",
    "ident",
    "user",
    "method",
    "path",
    "query",
    "protocol",
    "status",
    "bytes",
    "referer",
    "user_agent",
    "host",
    "request_time_us",
    "xff",
    "has_cookie",
    "client_list",
    "file",
    "line",
];

fn text(name: &str, col: &TextColumn) -> Column {
    StringChunked::from_iter_options(name.into(), col.iter()).into_column()
}

/// The 128-bit form of an address (IPv4 as IPv4-mapped IPv6) as two signed halves.
pub fn ip_halves(ip: IpAddr) -> (i64, i64) {
    let v = match ip {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => u128::from(v6),
    };
    ((v >> 64) as u64 as i64, v as u64 as i64)
}

/// The address of two halves written by [`ip_halves`] (IPv4-mapped comes back as IPv4).
pub fn ip_of_halves(hi: i64, lo: i64) -> IpAddr {
    let v = ((hi as u64 as u128) << 64) | lo as u64 as u128;
    let v6 = std::net::Ipv6Addr::from(v);
    match v6.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(v6),
    }
}

fn i64s(name: &str, v: impl Iterator<Item = Option<u64>>) -> Column {
    Int64Chunked::from_iter_options(
        name.into(),
        v.map(|x| x.map(|x| x.min(i64::MAX as u64) as i64)),
    )
    .into_column()
}

/// Converts a batch of records read from `file` into a frame with the dataset schema.
pub fn batch_to_frame(b: &Batch, file: &str) -> PolarsResult<DataFrame> {
    let n = b.len();
    let ts = Int64Chunked::from_vec("ts".into(), b.ts_ms.clone())
        .into_datetime(TimeUnit::Milliseconds, Some(TimeZone::UTC))
        .into_column();
    let halves: Vec<Option<(i64, i64)>> = b.ip.iter().map(|ip| ip.map(ip_halves)).collect();
    let columns = vec![
        ts,
        Int32Chunked::from_iter_values(
            "ts_precision".into(),
            b.precision.iter().map(|&p| p as i32),
        )
        .into_column(),
        text("client", &b.client),
        Int64Chunked::from_iter_options("ip_hi".into(), halves.iter().map(|h| h.map(|h| h.0)))
            .into_column(),
        Int64Chunked::from_iter_options("ip_lo".into(), halves.iter().map(|h| h.map(|h| h.1)))
            .into_column(),
        text("ident", &b.ident),
        text("user", &b.user),
        text("method", &b.method),
        text("path", &b.path),
        text("query", &b.query),
        text("protocol", &b.protocol),
        Int32Chunked::from_iter_values("status".into(), b.status.iter().map(|&s| s as i32))
            .into_column(),
        i64s("bytes", b.bytes.iter().copied()),
        text("referer", &b.referer),
        text("user_agent", &b.user_agent),
        text("host", &b.host),
        i64s("request_time_us", b.request_time_us.iter().copied()),
        text("xff", &b.xff),
        BooleanChunked::from_iter_options("has_cookie".into(), b.has_cookie.iter().copied())
            .into_column(),
        BooleanChunked::from_iter_values(
            "client_list".into(),
            (0..n).map(|i| b.client_list.get(i).copied().unwrap_or(false)),
        )
        .into_column(),
        StringChunked::full("file".into(), file, n).into_column(),
        i64s("line", b.line.iter().map(|&l| Some(l))),
    ];
    DataFrame::new(n, columns)
}

/// A month partition key: `year * 12 + (month - 1)`, UTC.
pub type MonthKey = i32;

/// Maps timestamps to month keys, caching the last day seen.
#[derive(Default)]
pub struct MonthOf {
    last_day: Option<(i64, MonthKey)>,
}

impl MonthOf {
    /// The UTC month of a timestamp in ms.
    pub fn key(&mut self, ts_ms: i64) -> MonthKey {
        let day = ts_ms.div_euclid(86_400_000);
        if let Some((d, k)) = self.last_day
            && d == day
        {
            return k;
        }
        let date = chrono::DateTime::from_timestamp(day * 86_400, 0)
            .map(|t| t.date_naive())
            .unwrap_or_default();
        use chrono::Datelike;
        let k = date.year() * 12 + date.month0() as i32;
        self.last_day = Some((day, k));
        k
    }
}

/// `YYYY-MM` of a month key.
pub fn month_name(k: MonthKey) -> String {
    format!("{:04}-{:02}", k.div_euclid(12), k.rem_euclid(12) + 1)
}
