//! The dataset's schema and the forms of its values (addresses as two halves, months).
//!
//! Format 2 uses only types every engine reads natively (DuckDB, polars, Spark, ClickHouse):
//! signed integers, booleans, UTF-8 strings and `ts` as a UTC timestamp in ms.
//!
//! Text columns hold the *stored form* of the log's bytes (format 4): the text as the
//! server wrote it (its own escapes, nginx's `\x16`, Apache's `\"`, untouched), a byte
//! that is not valid UTF-8 as the private-use character U+EF00 + byte (U+EF80–U+EFFF; a
//! logged character of that range as its three bytes so written) — so the stored text
//! is valid UTF-8 and decodes back to exactly the logged bytes.
//!
//! | column | type | meaning |
//! |---|---|---|
//! | `ts` | timestamp(ms, UTC) | arrival instant |
//! | `ts_precision` | int32 | 0 = s, 3 = ms, 6 = µs as logged |
//! | `client` | string | the client as logged (address or host name) |
//! | `ip_hi`, `ip_lo` | int64 | the client address as 128 bits (IPv4 as `::ffff:a.b.c.d`, so `ip_hi = 0`, `ip_lo >> 32 = 65535`), two's complement halves; null for host names. A /24 is `ip_lo & -256`, a /48 `ip_hi & -65536` |
//! | `ident`, `user`, `method`, `path`, `query`, `protocol` | string | null when the request is not HTTP |
//! | `request` | string | the request text as logged when it is not an HTTP request (a TLS handshake, `hello`); null otherwise; format 4 |
//! | `status` | int32 | null when there is none (`-`, `000`) |
//! | `bytes` | int64 | response bytes |
//! | `referer`, `user_agent`, `host` | string | |
//! | `request_time_us` | int64 | |
//! | `xff` | string | X-Forwarded-For as logged, or the client field when that was a list |
//! | `client_list` | bool | the client field was a list of addresses (now in `xff`; its last entry the hop nearest the server); format 3 |
//! | `has_cookie` | bool | |
//! | `file` | string | the input's name |
//! | `line` | int64 | line number in the input |

use std::net::IpAddr;

use polars::prelude::{DataType, Field, Schema, TimeUnit, TimeZone};

/// A column of the dataset. Its name, its type and its place in the files follow from
/// here: the writer (`rowgroup.rs`), both readers, SQL and the schema are derived
/// from [`Column::ALL`], and every `match` on a column is exhaustive, so a new column is
/// a variant and its row in [`Column::ALL`], then what the compiler asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Column {
    /// Arrival instant.
    Ts,
    /// 0 = s, 3 = ms, 6 = µs as logged.
    TsPrecision,
    /// The client as logged (address or host name).
    Client,
    /// High half of the client address.
    IpHi,
    /// Low half of the client address.
    IpLo,
    /// `%l`.
    Ident,
    /// `%u`.
    User,
    /// Request method.
    Method,
    /// Request path.
    Path,
    /// Query string.
    Query,
    /// Protocol.
    Protocol,
    /// The request text as logged when it is not an HTTP request (no method and
    /// target: a TLS handshake, `hello`); null otherwise. Format 4.
    Request,
    /// Status.
    Status,
    /// Response bytes.
    Bytes,
    /// Referer.
    Referer,
    /// User agent.
    UserAgent,
    /// Host.
    Host,
    /// Request time in µs.
    RequestTimeUs,
    /// X-Forwarded-For.
    Xff,
    /// A cookie was sent.
    HasCookie,
    /// The client field was a list.
    ClientList,
    /// The input's name.
    File,
    /// Line number in the input.
    Line,
}

/// What a column holds, as every engine reads it natively.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Timestamp, ms, UTC.
    Timestamp,
    /// 32-bit signed integer.
    Int32,
    /// 64-bit signed integer.
    Int64,
    /// Boolean.
    Bool,
    /// UTF-8 text in the stored form.
    Text,
}

impl Column {
    /// Every column, in file order.
    pub const ALL: [Column; 23] = [
        Column::Ts,
        Column::TsPrecision,
        Column::Client,
        Column::IpHi,
        Column::IpLo,
        Column::Ident,
        Column::User,
        Column::Method,
        Column::Path,
        Column::Query,
        Column::Protocol,
        Column::Request,
        Column::Status,
        Column::Bytes,
        Column::Referer,
        Column::UserAgent,
        Column::Host,
        Column::RequestTimeUs,
        Column::Xff,
        Column::HasCookie,
        Column::ClientList,
        Column::File,
        Column::Line,
    ];

    /// Its name in the files and in SQL, and its type.
    pub const fn spec(self) -> (&'static str, Kind) {
        match self {
            Column::Ts => ("ts", Kind::Timestamp),
            Column::TsPrecision => ("ts_precision", Kind::Int32),
            Column::Client => ("client", Kind::Text),
            Column::IpHi => ("ip_hi", Kind::Int64),
            Column::IpLo => ("ip_lo", Kind::Int64),
            Column::Ident => ("ident", Kind::Text),
            Column::User => ("user", Kind::Text),
            Column::Method => ("method", Kind::Text),
            Column::Path => ("path", Kind::Text),
            Column::Query => ("query", Kind::Text),
            Column::Protocol => ("protocol", Kind::Text),
            Column::Request => ("request", Kind::Text),
            Column::Status => ("status", Kind::Int32),
            Column::Bytes => ("bytes", Kind::Int64),
            Column::Referer => ("referer", Kind::Text),
            Column::UserAgent => ("user_agent", Kind::Text),
            Column::Host => ("host", Kind::Text),
            Column::RequestTimeUs => ("request_time_us", Kind::Int64),
            Column::Xff => ("xff", Kind::Text),
            Column::HasCookie => ("has_cookie", Kind::Bool),
            Column::ClientList => ("client_list", Kind::Bool),
            Column::File => ("file", Kind::Text),
            Column::Line => ("line", Kind::Int64),
        }
    }

    /// Its name in the files and in SQL.
    pub const fn name(self) -> &'static str {
        self.spec().0
    }

    /// Its type.
    pub const fn kind(self) -> Kind {
        self.spec().1
    }

    /// Its place in the files (its index in [`Column::ALL`]).
    pub fn index(self) -> usize {
        Column::ALL
            .iter()
            .position(|&c| c == self)
            .expect("every column is in ALL")
    }

    /// The column of that name.
    pub fn named(name: &str) -> Option<Column> {
        Column::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// Names of the columns, in file order.
pub const COLUMNS: [&str; Column::ALL.len()] = {
    let mut out = [""; Column::ALL.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = Column::ALL[i].name();
        i += 1;
    }
    out
};

/// The 128-bit form of an address (IPv4 as IPv4-mapped IPv6) as two signed halves.
pub fn ip_halves(ip: IpAddr) -> (i64, i64) {
    let v = match ip {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => u128::from(v6),
    };
    ((v >> 64) as u64 as i64, v as u64 as i64)
}

/// The address of two halves written by [`ip_halves`] (IPv4-mapped comes back as IPv4).
#[inline]
pub fn ip_of_halves(hi: i64, lo: i64) -> IpAddr {
    // IPv4-mapped (`::ffff:a.b.c.d`), the common case, without 128-bit arithmetic.
    if hi == 0 && (lo as u64) >> 32 == 0xffff {
        return IpAddr::V4(std::net::Ipv4Addr::from(lo as u32));
    }
    let v = ((hi as u64 as u128) << 64) | lo as u64 as u128;
    let v6 = std::net::Ipv6Addr::from(v);
    match v6.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(v6),
    }
}

/// The type of each column of [`Column::ALL`], as polars names it.
pub fn schema() -> Schema {
    Column::ALL
        .iter()
        .map(|&c| {
            let dtype = match c.kind() {
                Kind::Timestamp => DataType::Datetime(TimeUnit::Milliseconds, Some(TimeZone::UTC)),
                Kind::Int32 => DataType::Int32,
                Kind::Int64 => DataType::Int64,
                Kind::Bool => DataType::Boolean,
                Kind::Text => DataType::String,
            };
            Field::new(c.name().into(), dtype)
        })
        .collect()
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_column_table_names_every_column_once_in_file_order() {
        use super::{COLUMNS, Column, Kind};
        for (i, c) in Column::ALL.into_iter().enumerate() {
            assert_eq!(c.index(), i);
            assert_eq!(COLUMNS[i], c.name());
            assert_eq!(Column::named(c.name()), Some(c));
        }
        let text = Column::ALL
            .iter()
            .filter(|c| c.kind() == Kind::Text)
            .count();
        assert_eq!(text, 13);
        assert_eq!(super::schema().len(), Column::ALL.len());
    }

    use super::*;

    #[test]
    fn halves_give_the_address_back() {
        for a in [
            "0.0.0.0",
            "10.1.2.3",
            "255.255.255.255",
            "::",
            "::1",
            "::fffe:1.2.3.4",
            "::1:ffff:1.2.3.4",
            "2001:db8::ffff:1.2.3.4",
            "2001:db8::1",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        ] {
            let ip: IpAddr = a.parse().unwrap();
            let (hi, lo) = ip_halves(ip);
            assert_eq!(ip_of_halves(hi, lo), ip, "{a}");
        }
        // IPv4-mapped comes back as IPv4.
        let mapped: IpAddr = "::ffff:1.2.3.4".parse().unwrap();
        let (hi, lo) = ip_halves(mapped);
        assert_eq!(ip_of_halves(hi, lo), "1.2.3.4".parse::<IpAddr>().unwrap());
    }
}
