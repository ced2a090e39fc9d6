//! Nginx Proxy Manager's access logs (`nginx-proxy-manager`). NPM defines two
//! `log_format`s (`docker/rootfs/etc/nginx/conf.d/include/log-proxy.conf`) and gives no
//! per-host way to change them:
//!
//! - `proxy` (proxy hosts): `[$time_local] $upstream_cache_status $upstream_status
//!   $status - $request_method $scheme $host "$request_uri" [Client $remote_addr]
//!   [Length $body_bytes_sent] [Gzip $gzip_ratio] [Sent-to $server] "$http_user_agent"
//!   "$http_referer"`;
//! - `standard` (redirection and 404 hosts): the same without the two upstream fields
//!   and `[Sent-to …]`.
//!
//! Both are read by one hand-written parser: the fields before the status may be
//! absent or a list (`$upstream_status` is `502, 200` or `502 : 200` when nginx tried
//! several upstreams), and the bracketed `[Name value]` groups after the target are
//! read by name (`Client`, `Length`; others such as `Gzip`, `Sent-to` or the
//! `[Country …] [Rx …] [Tx …]` of NPM forks are skipped), so either layout and their
//! variants parse. A third layout, which NPM installations log from their default
//! server and CrowdSec's nginx parser reads (`[$time_local] $host $remote_addr
//! $request_time "$request" $status $body_bytes_sent $bytes_sent $http_referer
//! $http_user_agent`, the last two unquoted), is tried when a line is neither.
//! `$time_local` stamps the completion: with a request time, arrival = completion −
//! request time.

use std::sync::Arc;

use memchr::memchr;

use super::fields::{dash_none, dash_only, find_quote, parse_ip, parse_status, split_target};
use super::program::TextParser;
use super::{LineParser, ParseError, ParseOptions};
use crate::record::{Precision, Record};
use crate::time::{self, ClfTime};

/// NPM's default-server layout (see the module docs), as an nginx `log_format`.
pub const NPM_DEFAULT_HOST_FORMAT: &str = r#"[$time_local] $host $remote_addr $request_time "$request" $status $body_bytes_sent $bytes_sent $http_referer $http_user_agent"#;

/// The `nginx-proxy-manager` parser.
pub(crate) struct NpmParser {
    clf: ClfTime,
    default_host: TextParser,
}

impl NpmParser {
    pub(crate) fn new(opts: &ParseOptions) -> NpmParser {
        let prog = super::nginx::compile(NPM_DEFAULT_HOST_FORMAT).expect("builtin npm format");
        NpmParser {
            clf: ClfTime::new(),
            default_host: TextParser::new(Arc::new(prog), opts),
        }
    }

    /// The `proxy` / `standard` layouts.
    fn proxy<'a>(&mut self, line: &'a [u8]) -> Result<Record<'a>, ParseError> {
        let rest = line.strip_prefix(b"[").ok_or(ParseError::Mismatch)?;
        if rest.len() < ClfTime::LEN + 2 {
            return Err(ParseError::Truncated);
        }
        let secs = self
            .clf
            .parse(&rest[..ClfTime::LEN])
            .ok_or(ParseError::BadTimestamp)?;
        let rest = rest[ClfTime::LEN..]
            .strip_prefix(b"] ")
            .ok_or(ParseError::Mismatch)?;
        let mut rec = Record::default();
        // `[CACHE UPSTREAM…] STATUS - METHOD SCHEME HOST "`: read backwards from the
        // quote that opens the target (no field before it holds a quote).
        let q = memchr(b'"', rest).ok_or(ParseError::Mismatch)?;
        let head = rest[..q].strip_suffix(b" ").ok_or(ParseError::Mismatch)?;
        let mut toks = head.rsplit(|c| *c == b' ');
        let host = toks.next().ok_or(ParseError::Mismatch)?;
        let _scheme = toks.next().ok_or(ParseError::Mismatch)?;
        let method = toks.next().ok_or(ParseError::Mismatch)?;
        if toks.next() != Some(b"-") {
            return Err(ParseError::Mismatch);
        }
        let status = toks.next().ok_or(ParseError::Mismatch)?;
        rec.status = match status {
            b"-" => 0,
            s => parse_status(s).ok_or(ParseError::BadStatus)?,
        };
        rec.method = dash_none(method);
        rec.host = dash_none(host);
        let after = &rest[q + 1..];
        let n = find_quote(after).ok_or(ParseError::UnterminatedQuote)?;
        if let Some(u) = dash_none(&after[..n]) {
            split_target(u, &mut rec);
        }
        let mut r = &after[n + 1..];
        // ` [Name value]` groups.
        let mut client = None;
        while let Some(g) = r.strip_prefix(b" [") {
            let close = memchr(b']', g).ok_or(ParseError::Truncated)?;
            let body = &g[..close];
            let sp = memchr(b' ', body).unwrap_or(body.len());
            let (name, value) = (&body[..sp], body.get(sp + 1..).unwrap_or(b""));
            match name {
                b"Client" => client = Some(value),
                b"Length" => {
                    rec.bytes = match value {
                        b"-" => None,
                        v => Some(time::parse_uint(v).ok_or(ParseError::BadBytes)?),
                    }
                }
                _ => {}
            }
            r = &g[close + 1..];
        }
        let client = client
            .filter(|c| !c.is_empty())
            .ok_or(ParseError::MissingClient)?;
        rec.client = client;
        rec.ip = parse_ip(client);
        // ` "UA" "REFERER"`
        let ua = r.strip_prefix(b" \"").ok_or(ParseError::Truncated)?;
        let n = find_quote(ua).ok_or(ParseError::UnterminatedQuote)?;
        rec.user_agent = dash_only(&ua[..n]);
        let rf = ua[n + 1..]
            .strip_prefix(b" \"")
            .ok_or(ParseError::Truncated)?;
        let n = find_quote(rf).ok_or(ParseError::UnterminatedQuote)?;
        rec.referer = dash_only(&rf[..n]);
        if n + 1 != rf.len() {
            return Err(ParseError::TrailingData);
        }
        rec.ts_ms =
            time::arrival_ms(secs as i128 * 1_000_000).ok_or(ParseError::TimestampOutOfRange)?;
        rec.precision = Precision::Second;
        Ok(rec)
    }
}

impl LineParser for NpmParser {
    fn parse<'a>(&'a mut self, line: &'a [u8]) -> Result<Record<'a>, ParseError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return Err(ParseError::Empty);
        }
        match self.proxy(line) {
            Ok(r) => Ok(r),
            Err(e) => self.default_host.parse_line(line).map_err(|_| e),
        }
    }
}
