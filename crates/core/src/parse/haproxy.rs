//! HAProxy's HTTP log (`option httplog`), with or without a syslog prefix:
//!
//! ```text
//! [Feb  6 12:14:14 localhost haproxy[14389]: ]10.0.1.2:33317 [06/Feb/2009:12:14:14.655] http-in \
//!   static/srv1 10/0/30/69/109 200 2750 - - ---- 1/1/1/1/0 0/0 {1wt.eu} {} "GET /index.html HTTP/1.1"
//! ```
//!
//! Whatever precedes `client:port [accept date]` is a prefix (syslog, RFC 5424,
//! journald) and is skipped. The accept date (`%tr`, the request's start) is local
//! time without a zone: `--assume-offset` applies, a ` ±hhmm` inside the brackets wins.
//! Mapping: client = `client_ip` (port dropped); arrival = accept date (ms); host =
//! the frontend name (`%ft` without the `~` of TLS frontends: the log has no Host
//! header unless captured, and `replay --haproxy-cfg` routes requests by frontend);
//! request time = the fifth timer (`Ta`, or `Tt` before 1.7), `-1` = none, a `+`
//! (`option logasap`) ignored; status `-1` (no response sent) is stored as 0; bytes =
//! `bytes_read`; the request line as logged (`<BADREQ>` included). Backend/server,
//! the other timers, cookies, termination state, connection counts,
//! queues and captured headers have no column and are dropped (the captured headers'
//! names are in the configuration, not in the log). A TCP log line (`option tcplog`,
//! three timers, no request) is skipped, neither a record nor a bad line. A request
//! cut short by HAProxy's log buffer (no closing quote) is kept as logged.
//!
//! `option httplog clf` ([`HAPROXY_CLF_FORMAT`], [`HaproxyClfParser`]) logs the same
//! facts in NCSA order: `client - - [%trg] "request" status bytes "" "" port ms
//! frontend backend server TR Tw Tc Tr Ta …`, the date in GMT to the second and its
//! milliseconds as a separate field.

use memchr::{memchr, memrchr};

use super::fields::{parse_ip, parse_status, split_request, strip_port};
use super::{LineParser, ParseError, ParseOptions};
use crate::record::{Precision, Record};
use crate::time::{self, ClfTime};

/// The HAProxy HTTP log parser.
pub(crate) struct HaproxyParser {
    clf: ClfTime,
    default_offset: i32,
}

impl HaproxyParser {
    pub(crate) fn new(opts: &ParseOptions) -> HaproxyParser {
        HaproxyParser {
            clf: ClfTime::new(),
            default_offset: opts.default_offset_secs,
        }
    }
}

/// The next space-separated token of `rest` (which is advanced past it and one space).
fn token<'a>(rest: &mut &'a [u8]) -> Result<&'a [u8], ParseError> {
    if rest.is_empty() {
        return Err(ParseError::Truncated);
    }
    let r = *rest;
    let n = memchr(b' ', r).unwrap_or(r.len());
    *rest = r.get(n + 1..).unwrap_or(&[]);
    if n == 0 {
        return Err(ParseError::Mismatch);
    }
    Ok(&r[..n])
}

/// `a/b/…` with exactly `n` parts.
fn parts(t: &[u8], n: usize) -> bool {
    t.iter().filter(|&&c| c == b'/').count() + 1 == n
}

/// Position of the accept date's `[`: a `[` after a space, followed by `dd/`.
fn accept_bracket(line: &[u8]) -> Option<usize> {
    let mut from = 0;
    loop {
        let i = from + memchr(b'[', &line[from..])?;
        if i > 0
            && line[i - 1] == b' '
            && line.len() > i + 4
            && line[i + 1].is_ascii_digit()
            && line[i + 2].is_ascii_digit()
            && line[i + 3] == b'/'
        {
            return Some(i);
        }
        from = i + 1;
    }
}

impl LineParser for HaproxyParser {
    fn parse<'a>(&'a mut self, line: &'a [u8]) -> Result<Record<'a>, ParseError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.trim_ascii().is_empty() {
            return Err(ParseError::Empty);
        }
        let lb = accept_bracket(line).ok_or(ParseError::Mismatch)?;
        let head = &line[..lb - 1];
        let ctok = &head[memrchr(b' ', head).map_or(0, |p| p + 1)..];
        let client = strip_port(ctok);
        if client.is_empty() || client == b"-" {
            return Err(ParseError::MissingClient);
        }
        let rb = lb + memchr(b']', &line[lb..]).ok_or(ParseError::BadTimestamp)?;
        let (us, prec) = self.accept_date(&line[lb + 1..rb])?;
        let mut rest = line[rb + 1..]
            .strip_prefix(b" ")
            .ok_or(ParseError::Truncated)?;
        let frontend = token(&mut rest)?;
        let frontend = frontend.strip_suffix(b"~").unwrap_or(frontend);
        if !parts(token(&mut rest)?, 2) {
            return Err(ParseError::Mismatch);
        }
        let timers = token(&mut rest)?;
        if parts(timers, 3) && memchr(b'"', rest).is_none() {
            return Err(ParseError::Directive); // option tcplog: not an HTTP request
        }
        if !parts(timers, 5) {
            return Err(ParseError::Mismatch);
        }
        let ta = &timers[memrchr(b'/', timers).map_or(0, |p| p + 1)..];
        let ta = ta.strip_prefix(b"+").unwrap_or(ta);
        let request_time_us = match ta {
            b"-1" => None,
            _ => {
                let ms = time::parse_uint(ta).ok_or(ParseError::BadRequestTime)?;
                let us = ms
                    .checked_mul(1000)
                    .filter(|us| *us <= time::MAX_REQUEST_TIME_US)
                    .ok_or(ParseError::BadRequestTime)?;
                Some(us)
            }
        };
        let st = token(&mut rest)?;
        let status = match st {
            b"-1" => 0,
            _ => parse_status(st).ok_or(ParseError::BadStatus)?,
        };
        let b = token(&mut rest)?;
        let b = b.strip_prefix(b"+").unwrap_or(b);
        let bytes = match b {
            b"-" => None,
            _ => Some(time::parse_uint(b).ok_or(ParseError::BadBytes)?),
        };
        let _cookies = (token(&mut rest)?, token(&mut rest)?);
        let _termination = token(&mut rest)?;
        if !parts(token(&mut rest)?, 5) || !parts(token(&mut rest)?, 2) {
            return Err(ParseError::Mismatch);
        }
        // Captured request and response headers: `{…}` blocks.
        while rest.first() == Some(&b'{') {
            let close = memchr(b'}', rest).ok_or(ParseError::Truncated)?;
            rest = &rest[close + 1..];
            rest = rest.strip_prefix(b" ").unwrap_or(rest);
        }
        let req = rest.strip_prefix(b"\"").ok_or(if rest.is_empty() {
            ParseError::Truncated
        } else {
            ParseError::Mismatch
        })?;
        // HAProxy cuts a log line at its buffer size (1024 bytes by default), so a
        // long request may have lost its closing quote and protocol: keep what is there.
        let req = req.strip_suffix(b"\"").unwrap_or(req);
        let mut rec = Record {
            ts_ms: time::arrival_ms(us).ok_or(ParseError::TimestampOutOfRange)?,
            precision: prec,
            client,
            ip: parse_ip(client),
            status,
            bytes,
            request_time_us,
            host: Some(frontend),
            ..Record::default()
        };
        split_request(req, &mut rec);
        Ok(rec)
    }
}

impl HaproxyParser {
    /// `dd/Mon/yyyy:HH:MM:SS[.fff][ ±hhmm]` → UTC µs.
    fn accept_date(&mut self, d: &[u8]) -> Result<(i128, Precision), ParseError> {
        if d.len() < 20 {
            return Err(ParseError::BadTimestamp);
        }
        let mut buf = *b"00/Jan/1970:00:00:00 +0000";
        buf[..20].copy_from_slice(&d[..20]);
        let mut i = 20;
        let (mut frac_us, mut digits) = (0i128, 0u32);
        if d.get(i) == Some(&b'.') {
            i += 1;
            while i < d.len() && d[i].is_ascii_digit() {
                if digits < 6 {
                    frac_us = frac_us * 10 + (d[i] - b'0') as i128;
                    digits += 1;
                }
                i += 1;
            }
            if digits == 0 {
                return Err(ParseError::BadTimestamp);
            }
            frac_us *= 10i128.pow(6 - digits);
        }
        let zoned = match &d[i..] {
            [] => false,
            [b' ', z @ ..] if z.len() == 5 => {
                buf[21..].copy_from_slice(z);
                true
            }
            _ => return Err(ParseError::BadTimestamp),
        };
        let secs = self.clf.parse(&buf).ok_or(ParseError::BadTimestamp)?;
        let off = if zoned {
            0
        } else {
            self.default_offset as i128
        };
        Ok((
            (secs as i128 - off) * 1_000_000 + frac_us,
            Precision::from_digits(digits as u8),
        ))
    }
}

/// HAProxy's `option httplog clf` log format (HAProxy's `clf_http_log_format`).
pub const HAPROXY_CLF_FORMAT: &str = r#"%{+Q}o %{-Q}ci - - [%trg] %r %ST %B "" "" %cp %ms %ft %b %s %TR %Tw %Tc %Tr %Ta %tsc %ac %fc %bc %sc %rc %sq %bq %CC %CS %hrl %hsl"#;

/// The `option httplog clf` parser. Mapping: client = `%ci`; arrival = `%trg` (GMT) +
/// `%ms`, millisecond precision; request time = `%Ta` (`-1` = none, `+` ignored);
/// status `-1` stored as 0; bytes = `%B`; referer and user agent are HAProxy's literal
/// `""` (absent). A syslog prefix is skipped; the TCP variant (`"TCP " 000`) is skipped.
pub(crate) struct HaproxyClfParser {
    clf: ClfTime,
}

impl HaproxyClfParser {
    pub(crate) fn new(_opts: &ParseOptions) -> HaproxyClfParser {
        HaproxyClfParser {
            clf: ClfTime::new(),
        }
    }
}

/// A token without the quotes `%{+Q}` put around strings.
fn unquote(t: &[u8]) -> &[u8] {
    t.strip_prefix(b"\"")
        .and_then(|t| t.strip_suffix(b"\""))
        .unwrap_or(t)
}

/// A HAProxy timer in ms (`-1` = none, a leading `+` ignored) → µs.
fn timer_us(t: &[u8]) -> Result<Option<u64>, ParseError> {
    let t = t.strip_prefix(b"+").unwrap_or(t);
    if t == b"-1" {
        return Ok(None);
    }
    let ms = time::parse_uint(t).ok_or(ParseError::BadRequestTime)?;
    ms.checked_mul(1000)
        .filter(|us| *us <= time::MAX_REQUEST_TIME_US)
        .map(Some)
        .ok_or(ParseError::BadRequestTime)
}

impl LineParser for HaproxyClfParser {
    fn parse<'a>(&'a mut self, line: &'a [u8]) -> Result<Record<'a>, ParseError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.trim_ascii().is_empty() {
            return Err(ParseError::Empty);
        }
        let lb = accept_bracket(line).ok_or(ParseError::Mismatch)?;
        // `[prefix ]client ident user [`
        let head = &line[..lb - 1];
        let mut it = head.rsplitn(4, |&c| c == b' ');
        let (user, ident, ctok) = match (it.next(), it.next(), it.next()) {
            (Some(u), Some(i), Some(c)) => (u, i, c),
            _ => return Err(ParseError::Mismatch),
        };
        if ctok.is_empty() || ctok == b"-" {
            return Err(ParseError::MissingClient);
        }
        let rb = lb + memchr(b']', &line[lb..]).ok_or(ParseError::BadTimestamp)?;
        let date = &line[lb + 1..rb];
        if date.len() != ClfTime::LEN {
            return Err(ParseError::BadTimestamp);
        }
        let secs = self.clf.parse(date).ok_or(ParseError::BadTimestamp)?;
        let rest = line[rb + 1..]
            .strip_prefix(b" \"")
            .ok_or(ParseError::Mismatch)?;
        let q = super::fields::find_quote(rest).ok_or(ParseError::UnterminatedQuote)?;
        let req = &rest[..q];
        let mut rest = rest[q + 1..]
            .strip_prefix(b" ")
            .ok_or(ParseError::Truncated)?;
        let st = token(&mut rest)?;
        if req == b"TCP " {
            return Err(ParseError::Directive); // the TCP variant: not an HTTP request
        }
        let status = match st {
            b"-1" => 0,
            _ => parse_status(st).ok_or(ParseError::BadStatus)?,
        };
        let b = token(&mut rest)?;
        let b = b.strip_prefix(b"+").unwrap_or(b);
        let bytes = match b {
            b"-" => None,
            _ => Some(time::parse_uint(b).ok_or(ParseError::BadBytes)?),
        };
        // Referer and user agent: two quoted fields (`""` in HAProxy's format).
        let mut quoted = [None; 2];
        for slot in &mut quoted {
            let r = rest.strip_prefix(b"\"").ok_or(ParseError::Mismatch)?;
            let q = super::fields::find_quote(r).ok_or(ParseError::UnterminatedQuote)?;
            *slot = super::fields::dash_none(&r[..q]);
            rest = r[q + 1..].strip_prefix(b" ").ok_or(ParseError::Truncated)?;
        }
        let _port = time::parse_uint(unquote(token(&mut rest)?)).ok_or(ParseError::Mismatch)?;
        let ms = time::parse_uint(unquote(token(&mut rest)?))
            .filter(|ms| *ms < 1000)
            .ok_or(ParseError::BadTimestamp)?;
        let (_frontend, _backend, _server) =
            (token(&mut rest)?, token(&mut rest)?, token(&mut rest)?);
        let mut timers = [None; 5];
        for t in &mut timers {
            *t = timer_us(unquote(token(&mut rest)?))?;
        }
        let us = (secs as i128 * 1000 + ms as i128) * 1000;
        let mut rec = Record {
            ts_ms: time::arrival_ms(us).ok_or(ParseError::TimestampOutOfRange)?,
            precision: Precision::Milli,
            client: ctok,
            ip: parse_ip(ctok),
            ident: super::fields::dash_none(ident),
            user: super::fields::dash_none(user),
            status,
            bytes,
            referer: quoted[0],
            user_agent: quoted[1],
            request_time_us: timers[4],
            ..Record::default()
        };
        split_request(req, &mut rec);
        Ok(rec)
    }
}
