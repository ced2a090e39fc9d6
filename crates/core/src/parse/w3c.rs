//! W3C extended log format (IIS, CloudFront): columns come from `#Fields:` directives,
//! which may repeat in one file; `#` lines are reported as [`ParseError::Directive`].
//!
//! Data fields are separated by spaces (IIS) or tabs (CloudFront, recognised per line).
//! Times are UTC as the W3C convention says. `time-taken` is milliseconds (IIS) or, when
//! written with a decimal point, seconds (CloudFront). Values are kept raw (IIS `+` for
//! spaces and CloudFront's percent-encoding are not decoded).

use memchr::memchr;

use super::fields::{dash_none, parse_ip, split_target};
use super::{LineParser, ParseError};
use crate::record::{Precision, Record};
use crate::time;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Col {
    Date,
    Time,
    ClientIp,
    User,
    Method,
    UriStem,
    UriQuery,
    Status,
    Bytes,
    TimeTaken,
    UserAgent,
    Referer,
    Host,
    HostHeader,
    Cookie,
    Protocol,
    Xff,
    Ignore,
}

fn col_of(name: &[u8]) -> Col {
    match name.to_ascii_lowercase().as_slice() {
        b"date" => Col::Date,
        b"time" => Col::Time,
        b"c-ip" => Col::ClientIp,
        b"cs-username" => Col::User,
        b"cs-method" => Col::Method,
        b"cs-uri-stem" => Col::UriStem,
        b"cs-uri-query" => Col::UriQuery,
        b"sc-status" => Col::Status,
        b"sc-bytes" => Col::Bytes,
        b"time-taken" => Col::TimeTaken,
        b"cs(user-agent)" => Col::UserAgent,
        b"cs(referer)" | b"cs(referrer)" => Col::Referer,
        b"cs(host)" | b"cs-host" => Col::Host,
        b"x-host-header" => Col::HostHeader,
        b"cs(cookie)" => Col::Cookie,
        b"cs-version" | b"cs-protocol-version" => Col::Protocol,
        b"x-forwarded-for" | b"cs(x-forwarded-for)" => Col::Xff,
        _ => Col::Ignore,
    }
}

/// Parser state: the current `#Fields:` columns and `#Date:`.
pub(crate) struct W3cParser {
    cols: Vec<Col>,
    directive_date: Option<i64>,
}

impl W3cParser {
    pub(crate) fn new() -> W3cParser {
        W3cParser {
            cols: Vec::new(),
            directive_date: None,
        }
    }

    fn directive(&mut self, line: &[u8]) {
        if let Some(rest) = strip_prefix_ci(line, b"#Fields:") {
            self.cols = rest
                .split(|c| *c == b' ' || *c == b'\t')
                .filter(|s| !s.is_empty())
                .map(col_of)
                .collect();
        } else if let Some(rest) = strip_prefix_ci(line, b"#Date:") {
            let rest = rest.trim_ascii();
            self.directive_date = rest.get(..10).and_then(parse_date);
        }
    }
}

fn strip_prefix_ci<'a>(line: &'a [u8], p: &[u8]) -> Option<&'a [u8]> {
    if line.len() >= p.len() && line[..p.len()].eq_ignore_ascii_case(p) {
        Some(&line[p.len()..])
    } else {
        None
    }
}

fn parse_date(b: &[u8]) -> Option<i64> {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let y = time::parse_uint(&b[..4])? as i64;
    let m = time::parse_uint(&b[5..7])? as u32;
    let d = time::parse_uint(&b[8..10])? as u32;
    time::checked_days(y, m, d)
}

/// `HH:MM:SS[.frac]` → microseconds of the day and fraction digits.
fn parse_tod(b: &[u8]) -> Option<(i64, u8)> {
    if b.len() < 8 || b[2] != b':' || b[5] != b':' {
        return None;
    }
    let h = time::parse_uint(&b[..2])? as u32;
    let m = time::parse_uint(&b[3..5])? as u32;
    let s = time::checked_hms(h, m, 0)?;
    let (sec_us, digits) = time::parse_decimal_micros(&b[6..])?;
    if sec_us >= 61_000_000 {
        return None;
    }
    Some((s * 1_000_000 + sec_us, digits))
}

impl LineParser for W3cParser {
    fn parse<'a>(&'a mut self, line: &'a [u8]) -> Result<Record<'a>, ParseError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return Err(ParseError::Empty);
        }
        if line[0] == b'#' {
            self.directive(line);
            return Err(ParseError::Directive);
        }
        if self.cols.is_empty() {
            return Err(ParseError::NoFieldsDirective);
        }
        let sep = if memchr(b'\t', line).is_some() {
            b'\t'
        } else {
            b' '
        };
        let mut rec = Record::default();
        let mut date = self.directive_date;
        let mut tod: Option<(i64, u8)> = None;
        let mut stem: Option<&[u8]> = None;
        let mut n = 0;
        let mut have_status = false;
        for (i, v) in line.split(|c| *c == sep).enumerate() {
            n += 1;
            let Some(&col) = self.cols.get(i) else {
                return Err(ParseError::FieldCount);
            };
            match col {
                Col::Date => date = Some(parse_date(v).ok_or(ParseError::BadTimestamp)?),
                Col::Time => tod = Some(parse_tod(v).ok_or(ParseError::BadTimestamp)?),
                Col::ClientIp => {
                    if v.is_empty() || v == b"-" {
                        return Err(ParseError::MissingClient);
                    }
                    rec.client = v;
                    rec.ip = parse_ip(v);
                }
                Col::User => rec.user = dash_none(v),
                Col::Method => rec.method = dash_none(v),
                Col::UriStem => stem = dash_none(v),
                Col::UriQuery => rec.query = dash_none(v),
                Col::Status => {
                    if v.len() != 3 {
                        return Err(ParseError::BadStatus);
                    }
                    rec.status = time::parse_uint(v).ok_or(ParseError::BadStatus)? as u16;
                    have_status = true;
                }
                Col::Bytes => {
                    rec.bytes = if v == b"-" {
                        None
                    } else {
                        Some(time::parse_uint(v).ok_or(ParseError::BadBytes)?)
                    }
                }
                Col::TimeTaken => {
                    if v != b"-" {
                        let us = if memchr(b'.', v).is_some() {
                            time::parse_decimal_micros(v).map(|(us, _)| us as u64)
                        } else {
                            time::parse_uint(v).and_then(|ms| ms.checked_mul(1000))
                        };
                        let us = us.filter(|&us| us <= time::MAX_REQUEST_TIME_US);
                        rec.request_time_us = Some(us.ok_or(ParseError::BadRequestTime)?);
                    }
                }
                Col::UserAgent => rec.user_agent = dash_none(v),
                Col::Referer => rec.referer = dash_none(v),
                Col::Host => rec.host = dash_none(v),
                Col::HostHeader => {
                    if rec.host.is_none() {
                        rec.host = dash_none(v)
                    }
                }
                Col::Cookie => rec.has_cookie = Some(dash_none(v).is_some()),
                Col::Protocol => rec.protocol = dash_none(v),
                Col::Xff => rec.xff = dash_none(v),
                Col::Ignore => {}
            }
        }
        if n != self.cols.len() {
            return Err(ParseError::FieldCount);
        }
        if !have_status && self.cols.contains(&Col::Status) {
            return Err(ParseError::MissingStatus);
        }
        if let Some(s) = stem {
            let q = rec.query;
            split_target(s, &mut rec);
            if q.is_some() {
                rec.query = q;
            }
        }
        let (Some(days), Some((tod_us, digits))) = (date, tod) else {
            return Err(ParseError::BadTimestamp);
        };
        rec.ts_ms = time::arrival_ms(
            days as i128 * time::SECS_PER_DAY as i128 * 1_000_000 + tod_us as i128,
        )
        .ok_or(ParseError::TimestampOutOfRange)?;
        rec.precision = Precision::from_digits(digits);
        Ok(rec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iis_and_cloudfront() {
        let mut p = W3cParser::new();
        assert_eq!(
            p.parse(b"1 2 3").unwrap_err(),
            ParseError::NoFieldsDirective
        );
        assert_eq!(
            p.parse(b"#Fields: date time s-ip cs-method cs-uri-stem cs-uri-query s-port cs-username c-ip cs(User-Agent) cs(Referer) sc-status sc-substatus sc-win32-status sc-bytes cs-bytes time-taken")
                .unwrap_err(),
            ParseError::Directive
        );
        let l = b"2015-01-13 00:32:17 10.0.0.1 GET /a/b.aspx x=1 80 - 183.60.244.30 Mozilla/5.0+(compatible) - 200 0 0 1234 300 15\r";
        let r = p.parse(l).unwrap();
        assert_eq!(r.ts_ms, 1_421_109_137_000);
        assert_eq!(r.client, b"183.60.244.30");
        assert!(r.ip.is_some());
        assert_eq!(r.path, Some(&b"/a/b.aspx"[..]));
        assert_eq!(r.query, Some(&b"x=1"[..]));
        assert_eq!(r.status, 200);
        assert_eq!(r.bytes, Some(1234));
        assert_eq!(r.request_time_us, Some(15_000));
        assert_eq!(r.user_agent, Some(&b"Mozilla/5.0+(compatible)"[..]));
        assert_eq!(r.referer, None);
        assert_eq!(
            p.parse(b"2015-01-13 00:32:17 10.0.0.1 GET /a x=1 80 - 1.2.3.4 ua - 200 0 0 1234 300")
                .unwrap_err(),
            ParseError::FieldCount
        );
        let mut p = W3cParser::new();
        let _ = p.parse(b"#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) cs-uri-query cs(Cookie) time-taken");
        let r = p
            .parse(b"2014-05-23\t01:13:11\tFRA2\t182\t192.0.2.10\tGET\td1.cloudfront.net\t/view.html\t200\t-\tMozilla%2520x\t-\t-\t0.001")
            .unwrap();
        assert_eq!(r.request_time_us, Some(1000));
        assert_eq!(r.host, Some(&b"d1.cloudfront.net"[..]));
        assert_eq!(r.has_cookie, Some(false));
        assert_eq!(r.query, None);
    }
}
