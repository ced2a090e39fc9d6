//! The parsed form of one log line: a reusable, allocation-free view of its fields.

use std::net::IpAddr;

/// How many fields of a user's format (`--log-format` variables, `--json-map`
/// `field:NAME` entries) one parse can capture ([`Record::fields`]): a replay keyed on
/// more distinct fields is refused.
pub const MAX_FIELDS: usize = 4;

/// How precise a record's timestamp is, as the log wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Precision {
    /// Whole seconds (`[10/Oct/2000:13:55:36 -0700]`).
    #[default]
    Second,
    /// Milliseconds (`$msec`, Caddy `ts`).
    Milli,
    /// Microseconds (Apache `%{usec_frac}t`, ISO with 6 decimals).
    Micro,
}

impl Precision {
    /// Number of decimal digits after the second.
    pub fn digits(self) -> u8 {
        match self {
            Precision::Second => 0,
            Precision::Milli => 3,
            Precision::Micro => 6,
        }
    }

    /// Inverse of [`Precision::digits`].
    pub fn from_digits(d: u8) -> Precision {
        match d {
            0 => Precision::Second,
            1..=3 => Precision::Milli,
            _ => Precision::Micro,
        }
    }
}

/// One request, as parsed from one line.
///
/// Text fields borrow from the line where they can; parsers that must unescape
/// (JSON) write into the record's own scratch buffers, which are reused from line
/// to line, so steady-state parsing does not allocate.
///
/// `None` means the log does not carry the field, or carries `-` for it.
#[derive(Clone, Debug, Default)]
pub struct Record<'a> {
    /// Arrival time (when the server started handling the request), UTC, in
    /// milliseconds since the Unix epoch. For logs that stamp completion (Caddy `ts`,
    /// nginx `$msec`) this is completion − request time. Always inside the window
    /// `[TS_MIN_MS, TS_END_MS)` of [`crate::time`] (1970-01-01 to 2100-01-01, UTC): parsers
    /// reject a line whose arrival falls outside it
    /// ([`crate::parse::ParseError::TimestampOutOfRange`]).
    pub ts_ms: i64,
    /// Precision of the timestamp in the log.
    pub precision: Precision,
    /// The client as written (`%h`, `$remote_addr`, Caddy `client_ip`): an address
    /// or, in old logs, a host name. When the field is a list of addresses (a proxy
    /// logging X-Forwarded-For in its place: `10.0.0.2, 8.8.8.8 - - […]`, or
    /// `"10.5.102.222, 175.16.199.1" 10.2.1.185 - - […]`), its first public address
    /// (else its first address); the list goes to [`Record::xff`].
    pub client: &'a [u8],
    /// `client` parsed as an address, when it is one ([`crate::parse::client_ip`]:
    /// zone id and port dropped, IPv4-mapped IPv6 as IPv4).
    pub ip: Option<IpAddr>,
    /// `%l` (identd), rarely meaningful; `None` for `-`.
    pub ident: Option<&'a [u8]>,
    /// Authenticated user (`%u`, `$remote_user`, Caddy `user_id`); `None` for `-`/empty.
    pub user: Option<&'a [u8]>,
    /// Request method (`GET`), `None` when the request line is `-` or empty, or is not
    /// an HTTP request (no method token followed by a target: `hello`, a TLS handshake
    /// logged as `\x16\x03\x01…`, binary junk) — then [`Record::path`] holds the whole
    /// request text as logged.
    pub method: Option<&'a [u8]>,
    /// Request target without the query string; for a request that is not HTTP (see
    /// [`Record::method`]) the whole request as logged. `None` for a request logged as
    /// `-` or empty.
    pub path: Option<&'a [u8]>,
    /// Query string without the `?`, `None` when there is no `?`.
    pub query: Option<&'a [u8]>,
    /// Protocol (`HTTP/1.1`); `None` when the request line has none.
    pub protocol: Option<&'a [u8]>,
    /// Final status code.
    pub status: u16,
    /// Response body bytes; `None` for `-`.
    pub bytes: Option<u64>,
    /// Referer header; `None` for `-`.
    pub referer: Option<&'a [u8]>,
    /// User-Agent header; `None` for `-`.
    pub user_agent: Option<&'a [u8]>,
    /// Virtual host / Host header.
    pub host: Option<&'a [u8]>,
    /// Time to serve the request, in microseconds.
    pub request_time_us: Option<u64>,
    /// X-Forwarded-For header as logged, or the client field when it was a list of
    /// addresses (see [`Record::client`]).
    pub xff: Option<&'a [u8]>,
    /// Whether the request carried a Cookie header, where the log can tell.
    pub has_cookie: Option<bool>,
    /// Whether [`Record::client`] was taken from a list of addresses (the list is in
    /// [`Record::xff`], its last entry the hop nearest the server): `--trust-proxy`
    /// then reads the list right to left instead of trusting the first public address.
    pub client_list: bool,
    /// The fields of a user's format that the caller asked the format to capture
    /// (`Format::capture`), by slot; `None` when absent, empty or `-`. Only the first
    /// [`Record::captured`] slots are filled.
    pub fields: [Option<&'a [u8]>; MAX_FIELDS],
    /// How many slots of [`Record::fields`] the parser fills (0 unless the format was
    /// told to capture fields): a batch keeps a column per slot only then.
    pub captured: u8,
}

impl<'a> Record<'a> {
    /// Arrival time in whole seconds since the epoch (floor).
    pub fn ts_secs(&self) -> i64 {
        self.ts_ms.div_euclid(1000)
    }
}
