//! Caddy v2 JSON access log (`"logger":"http.log.access…"`), parsed with serde_json
//! visitors that pick only the needed keys and copy a string into the parser's scratch
//! arena only when it had JSON escapes — no allocation per line in steady state.
//!
//! Mapping: client = `request.client_ip` (the real client behind trusted proxies), else
//! `request.remote_ip`, else `request.remote_addr` without its port; arrival = `ts` −
//! `duration`; `ts` may be epoch seconds/ms/µs/ns (told apart by magnitude) or an
//! ISO 8601 string; `duration` is float seconds, an integer of nanoseconds (Caddy's
//! `duration_format nano`, recognised as an integer ≥ 100,000) or a Go duration
//! string (`17.5ms`). Headers come from `request.headers` (first value of each array).

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::fields::{parse_ip, split_target};
use super::json::S;
use super::{LineParser, ParseError};
use crate::record::{Precision, Record};
use crate::time;

#[derive(Clone, Copy, Debug)]
enum Num<'de> {
    Int(u64),
    F(f64),
    S(S<'de>),
    Null,
}

#[derive(Default)]
struct Req<'de> {
    remote_ip: S<'de>,
    client_ip: S<'de>,
    remote_addr: S<'de>,
    proto: S<'de>,
    method: S<'de>,
    host: S<'de>,
    uri: S<'de>,
    ua: S<'de>,
    referer: S<'de>,
    xff: S<'de>,
    cookie: bool,
}

#[derive(Default)]
struct Top<'de> {
    ts: Option<Num<'de>>,
    duration: Option<Num<'de>>,
    size: Option<Num<'de>>,
    status: Option<Num<'de>>,
    user_id: S<'de>,
    req: Option<Req<'de>>,
}

/// Matches a key against a fixed list (ASCII case-insensitive), without allocating.
struct KeySeed(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = usize;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<usize, E> {
        Ok(self
            .0
            .iter()
            .position(|k| k.eq_ignore_ascii_case(v))
            .unwrap_or(usize::MAX))
    }
}

struct StrSeed<'s>(&'s mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for StrSeed<'_> {
    type Value = S<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<S<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrSeed<'_> {
    type Value = S<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<S<'de>, E> {
        Ok(S::B(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<S<'de>, E> {
        Ok(S::stash(self.0, v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<S<'de>, E> {
        Ok(S::None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<S<'de>, A::Error> {
        // A header array: keep the first value.
        let first = seq.next_element_seed(StrSeed(self.0))?.unwrap_or_default();
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(first)
    }
}

struct NumSeed<'s>(&'s mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for NumSeed<'_> {
    type Value = Num<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Num<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NumSeed<'_> {
    type Value = Num<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number or a string")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num<'de>, E> {
        Ok(Num::Int(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num<'de>, E> {
        Ok(Num::F(v as f64))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num<'de>, E> {
        Ok(Num::F(v))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Num<'de>, E> {
        Ok(Num::S(S::B(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Num<'de>, E> {
        StrSeed(self.0).visit_str(v).map(Num::S)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Num<'de>, E> {
        Ok(Num::Null)
    }
}

const HEADER_KEYS: &[&str] = &["User-Agent", "Referer", "X-Forwarded-For", "Cookie"];

struct HeadersSeed<'s, 'r, 'de>(&'s mut Vec<u8>, &'r mut Req<'de>);

impl<'de> DeserializeSeed<'de> for HeadersSeed<'_, '_, 'de> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for HeadersSeed<'_, '_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a header map")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<(), M::Error> {
        let HeadersSeed(arena, req) = self;
        while let Some(k) = m.next_key_seed(KeySeed(HEADER_KEYS))? {
            match k {
                0 => req.ua = m.next_value_seed(StrSeed(arena))?,
                1 => req.referer = m.next_value_seed(StrSeed(arena))?,
                2 => req.xff = m.next_value_seed(StrSeed(arena))?,
                3 => {
                    req.cookie = true;
                    m.next_value::<IgnoredAny>()?;
                }
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

const REQ_KEYS: &[&str] = &[
    "remote_ip",
    "client_ip",
    "remote_addr",
    "proto",
    "method",
    "host",
    "uri",
    "headers",
];

struct ReqSeed<'s>(&'s mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for ReqSeed<'_> {
    type Value = Req<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Req<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ReqSeed<'_> {
    type Value = Req<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a request object")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Req<'de>, M::Error> {
        let arena = self.0;
        let mut r = Req::default();
        while let Some(k) = m.next_key_seed(KeySeed(REQ_KEYS))? {
            let slot = match k {
                0 => &mut r.remote_ip,
                1 => &mut r.client_ip,
                2 => &mut r.remote_addr,
                3 => &mut r.proto,
                4 => &mut r.method,
                5 => &mut r.host,
                6 => &mut r.uri,
                7 => {
                    m.next_value_seed(HeadersSeed(arena, &mut r))?;
                    continue;
                }
                _ => {
                    m.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = m.next_value_seed(StrSeed(arena))?;
        }
        Ok(r)
    }
}

const TOP_KEYS: &[&str] = &["ts", "duration", "size", "status", "user_id", "request"];

struct TopSeed<'s>(&'s mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for TopSeed<'_> {
    type Value = Top<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Top<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'_> {
    type Value = Top<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Top<'de>, M::Error> {
        let arena = self.0;
        let mut t = Top::default();
        while let Some(k) = m.next_key_seed(KeySeed(TOP_KEYS))? {
            match k {
                0 => t.ts = Some(m.next_value_seed(NumSeed(arena))?),
                1 => t.duration = Some(m.next_value_seed(NumSeed(arena))?),
                2 => t.size = Some(m.next_value_seed(NumSeed(arena))?),
                3 => t.status = Some(m.next_value_seed(NumSeed(arena))?),
                4 => t.user_id = m.next_value_seed(StrSeed(arena))?,
                5 => t.req = Some(m.next_value_seed(ReqSeed(arena))?),
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(t)
    }
}

/// Parses a Go duration string (`1h2m3.5s`, `17.557ms`, `250µs`) into microseconds.
pub(crate) fn parse_go_duration(s: &[u8]) -> Option<i64> {
    if s == b"0" {
        return Some(0);
    }
    let mut i = 0;
    let mut total: f64 = 0.0;
    let mut any = false;
    while i < s.len() {
        let start = i;
        while i < s.len() && (s[i].is_ascii_digit() || s[i] == b'.') {
            i += 1;
        }
        let n: f64 = std::str::from_utf8(&s[start..i]).ok()?.parse().ok()?;
        let ustart = i;
        while i < s.len() && !(s[i].is_ascii_digit() || s[i] == b'.') {
            i += 1;
        }
        let mult = match &s[ustart..i] {
            b"ns" => 1e-3,
            b"us" | b"\xc2\xb5s" | b"\xce\xbcs" => 1.0,
            b"ms" => 1e3,
            b"s" => 1e6,
            b"m" => 60e6,
            b"h" => 3600e6,
            _ => return None,
        };
        total += n * mult;
        any = true;
    }
    any.then_some(total.round() as i64)
}

fn num_secs_to_us(n: Num, arena: &[u8]) -> Option<i64> {
    match n {
        Num::F(x) if x.is_finite() => Some((x * 1e6).round() as i64),
        Num::Int(v) => i64::try_from(v).ok()?.checked_mul(1_000_000),
        Num::S(s) => {
            let b = s.get(arena)?;
            time::parse_decimal_micros(b).map(|(us, _)| us)
        }
        _ => None,
    }
}

/// `ts`: epoch in s/ms/µs/ns (by magnitude) or an ISO 8601 string, → UTC µs.
fn ts_us(n: Num, arena: &[u8]) -> Option<i64> {
    let scale = |x: f64| -> f64 {
        let a = x.abs();
        if a < 1e11 {
            x * 1e6
        } else if a < 1e14 {
            x * 1e3
        } else if a < 1e17 {
            x
        } else {
            x / 1e3
        }
    };
    match n {
        Num::F(x) if x.is_finite() => Some(scale(x).round() as i64),
        Num::Int(v) => Some(scale(v as f64).round() as i64),
        Num::S(s) => {
            let b = s.get(arena)?;
            if let Some(t) = time::parse_iso8601(b) {
                return Some(t.utc_us(0));
            }
            let (us, _) = time::parse_decimal_micros(b)?;
            Some(us)
        }
        Num::Null => None,
        Num::F(_) => None,
    }
}

/// `duration` → µs (see the module docs for the accepted forms).
fn duration_us(n: Num, arena: &[u8]) -> Option<i64> {
    let us = match n {
        Num::Int(v) if v >= 100_000 => (v / 1000) as i64,
        Num::S(s) => {
            let b = s.get(arena)?;
            parse_go_duration(b).or_else(|| time::parse_decimal_micros(b).map(|(us, _)| us))?
        }
        other => num_secs_to_us(other, arena)?,
    };
    (0..=time::MAX_REQUEST_TIME_US as i64)
        .contains(&us)
        .then_some(us)
}

/// Caddy JSON parser with its scratch arena for unescaped strings.
pub(crate) struct CaddyParser {
    arena: Vec<u8>,
}

impl CaddyParser {
    pub(crate) fn new() -> CaddyParser {
        CaddyParser {
            arena: Vec::with_capacity(1024),
        }
    }
}

/// Removes `:port` from `host:port` / `[v6]:port`.
fn strip_port(b: &[u8]) -> &[u8] {
    if let Some(rest) = b.strip_prefix(b"[") {
        return match memchr::memchr(b']', rest) {
            Some(i) => &rest[..i],
            None => b,
        };
    }
    match memchr::memrchr(b':', b) {
        Some(i) if memchr::memchr(b':', &b[..i]).is_none() => &b[..i],
        _ => b,
    }
}

impl LineParser for CaddyParser {
    fn parse<'a>(&'a mut self, line: &'a [u8]) -> Result<Record<'a>, ParseError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line).trim_ascii();
        if line.is_empty() {
            return Err(ParseError::Empty);
        }
        if line[0] != b'{' {
            return Err(ParseError::BadJson);
        }
        self.arena.clear();
        let mut de = serde_json::Deserializer::from_slice(line);
        let top = TopSeed(&mut self.arena)
            .deserialize(&mut de)
            .map_err(|_| ParseError::BadJson)?;
        de.end().map_err(|_| ParseError::BadJson)?;
        let arena: &'a [u8] = &self.arena;
        let Some(req) = top.req else {
            return Err(ParseError::NotAccessLog);
        };
        let status = match top.status {
            Some(Num::Int(v)) if v <= 999 => v as u16,
            Some(Num::Null) | None => return Err(ParseError::NotAccessLog),
            _ => return Err(ParseError::BadStatus),
        };
        let mut rec = Record {
            status,
            precision: Precision::Milli,
            ..Record::default()
        };
        let client = match req.client_ip.get(arena) {
            Some(c) if !c.is_empty() => c,
            _ => match req.remote_ip.get(arena) {
                Some(c) if !c.is_empty() => c,
                _ => req
                    .remote_addr
                    .get(arena)
                    .map(strip_port)
                    .filter(|c| !c.is_empty())
                    .ok_or(ParseError::MissingClient)?,
            },
        };
        rec.client = client;
        rec.ip = parse_ip(client);
        let ts = ts_us(top.ts.ok_or(ParseError::BadTimestamp)?, arena)
            .ok_or(ParseError::BadTimestamp)?;
        let dur = match top.duration {
            None | Some(Num::Null) => None,
            Some(d) => Some(duration_us(d, arena).ok_or(ParseError::BadRequestTime)?),
        };
        rec.ts_ms = time::arrival_ms(ts as i128 - dur.unwrap_or(0) as i128)
            .ok_or(ParseError::TimestampOutOfRange)?;
        rec.request_time_us = dur.map(|d| d as u64);
        rec.bytes = match top.size {
            None | Some(Num::Null) => None,
            Some(Num::Int(v)) => Some(v),
            Some(Num::F(x)) if x >= 0.0 => Some(x as u64),
            Some(_) => return Err(ParseError::BadBytes),
        };
        rec.user = top.user_id.get(arena).filter(|u| !u.is_empty());
        rec.method = req.method.get(arena).filter(|u| !u.is_empty());
        rec.protocol = req.proto.get(arena).filter(|u| !u.is_empty());
        rec.host = req.host.get(arena).filter(|u| !u.is_empty());
        if let Some(u) = req.uri.get(arena) {
            split_target(u, &mut rec);
        }
        rec.user_agent = req.ua.get(arena);
        rec.referer = req.referer.get(arena);
        rec.xff = req.xff.get(arena);
        rec.has_cookie = Some(req.cookie);
        Ok(rec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration(b"17.557019ms"), Some(17_557));
        assert_eq!(parse_go_duration(b"1m2.5s"), Some(62_500_000));
        assert_eq!(parse_go_duration("250µs".as_bytes()), Some(250));
        assert_eq!(parse_go_duration(b"1.5"), None);
        assert_eq!(parse_go_duration(b"0"), Some(0));
    }

    #[test]
    fn ports() {
        assert_eq!(strip_port(b"1.2.3.4:5678"), b"1.2.3.4");
        assert_eq!(strip_port(b"[::1]:80"), b"::1");
        assert_eq!(strip_port(b"::1"), b"::1");
        assert_eq!(strip_port(b"1.2.3.4"), b"1.2.3.4");
    }
}
