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
//! Mapping: client = `client_ip` (port dropped); arrival = accept date (ms);
//! request time = the fifth timer (`Ta`, or `Tt` before 1.7), `-1` = none, a `+`
//! (`option logasap`) ignored; status `-1` (no response sent) is stored as 0; bytes =
//! `bytes_read`; the request line as logged (`<BADREQ>` included). Frontend,
//! backend/server, the other timers, cookies, termination state, connection counts,
//! queues and captured headers have no column and are dropped (the captured headers'
//! names are in the configuration, not in the log). A TCP log line (`option tcplog`,
//! three timers, no request) is skipped, neither a record nor a bad line.

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
        let _frontend = token(&mut rest)?;
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
        let req = req
            .strip_suffix(b"\"")
            .ok_or(ParseError::UnterminatedQuote)?;
        let mut rec = Record {
            ts_ms: time::arrival_ms(us).ok_or(ParseError::TimestampOutOfRange)?,
            precision: prec,
            client,
            ip: parse_ip(client),
            status,
            bytes,
            request_time_us,
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
