//! JSON-lines access logs read through a field map: one JSON object a line, each
//! record field taken from a named top-level key. Three maps exist: `nginx-json`
//! (nginx `log_format … escape=json` with keys named after nginx variables),
//! `traefik-json` (Traefik's JSON access log) and a user's own (`--json-map
//! ts=time,client=remote_ip,…`, [`JsonMap::parse`]).
//!
//! Parsed with serde_json visitors that look only at the mapped keys and copy a string
//! into the parser's scratch arena only when it had JSON escapes: no allocation per
//! line in steady state. Values may be strings or numbers (`"status":"200"` and
//! `"status":200` are the same); `-`, `""` and `null` mean absent. Timestamps are
//! ISO 8601, CLF (`10/Oct/2000:13:55:36 -0700`) or epoch numbers (s/ms/µs/ns told
//! apart by magnitude); request times are numbers in the map's unit or Go durations
//! (`17.5ms`).

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::caddy::parse_go_duration;
use super::fields::{dash_none, dash_only, parse_ip, parse_status, split_request, split_target};
use super::json::S;
use super::{FormatError, LineParser, ParseError, ParseOptions};
use crate::record::{Precision, Record};
use crate::time::{self, ClfTime};

/// Unit of a request-time key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Unit {
    Secs,
    Millis,
    Micros,
    Nanos,
}

/// Where a mapped key's value goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Slot {
    /// Arrival time.
    Ts,
    /// Completion time (arrival = it − request time).
    TsEnd,
    Client,
    User,
    Method,
    /// Request target, split at `?` into path and query.
    Target,
    Query,
    /// A whole request line (`GET /a HTTP/1.1`).
    Request,
    Protocol,
    Status,
    Bytes,
    Agent,
    Referer,
    Host,
    Xff,
    ReqTime(Unit),
}

impl Slot {
    fn idx(self) -> usize {
        match self {
            Slot::Ts => 0,
            Slot::TsEnd => 1,
            Slot::Client => 2,
            Slot::User => 3,
            Slot::Method => 4,
            Slot::Target => 5,
            Slot::Query => 6,
            Slot::Request => 7,
            Slot::Protocol => 8,
            Slot::Status => 9,
            Slot::Bytes => 10,
            Slot::Agent => 11,
            Slot::Referer => 12,
            Slot::Host => 13,
            Slot::Xff => 14,
            Slot::ReqTime(_) => 15,
        }
    }
}

const SLOTS: usize = 16;

/// The names a user map may use, and their slots.
const MAP_NAMES: &[(&str, Slot)] = &[
    ("ts", Slot::Ts),
    ("ts_end", Slot::TsEnd),
    ("client", Slot::Client),
    ("user", Slot::User),
    ("method", Slot::Method),
    ("path", Slot::Target),
    ("uri", Slot::Target),
    ("query", Slot::Query),
    ("request", Slot::Request),
    ("protocol", Slot::Protocol),
    ("status", Slot::Status),
    ("bytes", Slot::Bytes),
    ("agent", Slot::Agent),
    ("user_agent", Slot::Agent),
    ("referer", Slot::Referer),
    ("host", Slot::Host),
    ("xff", Slot::Xff),
    ("request_time", Slot::ReqTime(Unit::Secs)),
    ("request_time_ms", Slot::ReqTime(Unit::Millis)),
    ("request_time_us", Slot::ReqTime(Unit::Micros)),
    ("request_time_ns", Slot::ReqTime(Unit::Nanos)),
];

/// A field map for JSON-lines logs: which top-level key feeds which record field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonMap {
    /// The map as the user wrote it (empty for the built-in maps).
    source: String,
    /// Key (matched ASCII case-insensitively), slot, rank (lower wins when several
    /// keys of a line feed one slot).
    keys: Vec<(Box<str>, Slot, u8)>,
    /// Slots a line must have to be an access-log entry (built-in maps), by index.
    required: Vec<Vec<usize>>,
}

impl JsonMap {
    /// The map as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    fn preset(keys: &[(&str, Slot)], required: &[&[Slot]]) -> JsonMap {
        let mut out: Vec<(Box<str>, Slot, u8)> = Vec::new();
        for (k, s) in keys {
            let rank = out.iter().filter(|e| e.1.idx() == s.idx()).count() as u8;
            out.push(((*k).into(), *s, rank));
        }
        JsonMap {
            source: String::new(),
            keys: out,
            required: required
                .iter()
                .map(|any| any.iter().map(|s| s.idx()).collect())
                .collect(),
        }
    }

    /// nginx `log_format … escape=json` with keys named after the variables they log
    /// (`"remote_addr":"$remote_addr"`, `"time_iso8601"` or `"time"`, `"request"` or
    /// `"request_method"` + `"request_uri"`, `"status"`, …). nginx stamps completion.
    pub(crate) fn nginx() -> JsonMap {
        use Slot::*;
        JsonMap::preset(
            &[
                ("msec", TsEnd),
                ("time_iso8601", TsEnd),
                ("time_local", TsEnd),
                ("time", TsEnd),
                ("timestamp", TsEnd),
                ("@timestamp", TsEnd),
                ("remote_addr", Client),
                ("remote_user", User),
                ("request", Request),
                ("request_method", Method),
                ("method", Method),
                ("request_uri", Target),
                ("uri", Target),
                ("args", Query),
                ("query_string", Query),
                ("server_protocol", Protocol),
                ("status", Status),
                ("body_bytes_sent", Bytes),
                ("bytes_sent", Bytes),
                ("http_referer", Referer),
                ("http_user_agent", Agent),
                ("host", Host),
                ("http_host", Host),
                ("server_name", Host),
                ("http_x_forwarded_for", Xff),
                ("request_time", ReqTime(Unit::Secs)),
            ],
            &[&[Status], &[Client], &[TsEnd], &[Request, Target]],
        )
    }

    /// Traefik's JSON access log (v1–v3 field names); `Duration` is in nanoseconds,
    /// arrival is `StartUTC` (else `StartLocal`, else `time` − `Duration`).
    pub(crate) fn traefik() -> JsonMap {
        use Slot::*;
        JsonMap::preset(
            &[
                ("StartUTC", Ts),
                ("StartLocal", Ts),
                ("time", TsEnd),
                ("ClientHost", Client),
                ("ClientAddr", Client),
                ("ClientUsername", User),
                ("RequestMethod", Method),
                ("RequestPath", Target),
                ("RequestProtocol", Protocol),
                ("RequestHost", Host),
                ("DownstreamStatus", Status),
                ("OriginStatus", Status),
                ("DownstreamContentSize", Bytes),
                ("OriginContentSize", Bytes),
                ("request_User-Agent", Agent),
                ("request_Referer", Referer),
                ("request_X-Forwarded-For", Xff),
                ("Duration", ReqTime(Unit::Nanos)),
            ],
            &[&[Status], &[Client], &[Ts, TsEnd], &[Method]],
        )
    }

    /// Parses a user map: `name=key` pairs separated by commas, e.g.
    /// `ts=time,client=remote_ip,method=verb,path=url,status=code,bytes=size`.
    /// Names: `ts` (arrival) or `ts_end` (completion), `client`, `user`, `method`,
    /// `path` (alias `uri`: the target, split at `?`), `query`, `request` (a whole
    /// request line), `protocol`, `status`, `bytes`, `agent`, `referer`, `host`, `xff`,
    /// `request_time` (seconds) or `request_time_ms`/`_us`/`_ns`. `ts`/`ts_end` and
    /// `status` are required; an unmapped client is stored as `-`.
    pub fn parse(src: &str) -> Result<JsonMap, FormatError> {
        let text = src.trim();
        if text.is_empty() {
            return Err(FormatError::Empty);
        }
        let lead = src.len() - src.trim_start().len();
        let cols = super::nginx::columns(src);
        let mut keys: Vec<(Box<str>, Slot, u8)> = Vec::new();
        let mut at = lead;
        for part in text.split(',') {
            let col = cols[at.min(src.len())];
            at += part.len() + 1;
            let p = part.trim();
            if p.is_empty() {
                continue;
            }
            let bad = |reason: String| FormatError::Invalid {
                col,
                token: p.to_string(),
                reason,
            };
            let (name, key) = p
                .split_once('=')
                .ok_or_else(|| bad("expected name=key, e.g. ts=time".into()))?;
            let (name, key) = (name.trim(), key.trim());
            let slot = MAP_NAMES
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, s)| *s)
                .ok_or_else(|| {
                    bad(format!(
                        "unknown field; known: {}",
                        MAP_NAMES
                            .iter()
                            .map(|(n, _)| *n)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?;
            if key.is_empty() {
                return Err(bad("the JSON key is empty".into()));
            }
            if keys.iter().any(|k| k.1.idx() == slot.idx()) {
                return Err(bad("this field is mapped twice".into()));
            }
            if keys.iter().any(|k| k.0.eq_ignore_ascii_case(key)) {
                return Err(bad("this JSON key is mapped twice".into()));
            }
            keys.push((key.into(), slot, 0));
        }
        let has = |s: Slot| keys.iter().any(|k| k.1 == s);
        if !(has(Slot::Ts) || has(Slot::TsEnd)) || !has(Slot::Status) {
            return Err(FormatError::Invalid {
                col: 1,
                token: text.chars().take(10).collect(),
                reason: "a JSON map needs ts=KEY (or ts_end=KEY) and status=KEY".into(),
            });
        }
        Ok(JsonMap {
            source: text.to_string(),
            keys,
            required: Vec::new(),
        })
    }

    fn lookup(&self, key: &str) -> Option<(Slot, u8)> {
        self.keys
            .iter()
            .find(|k| k.0.eq_ignore_ascii_case(key))
            .map(|k| (k.1, k.2))
    }

    fn mapped(&self, s: Slot) -> bool {
        self.keys.iter().any(|k| k.1.idx() == s.idx())
    }
}

#[derive(Clone, Copy, Debug)]
enum V<'de> {
    S(S<'de>),
    U(u64),
    I,
    F(f64),
    Null,
    Other,
}

type Vals<'de> = [Option<(V<'de>, u8, Slot)>; SLOTS];

struct ValSeed<'s>(&'s mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for ValSeed<'_> {
    type Value = V<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<V<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValSeed<'_> {
    type Value = V<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<V<'de>, E> {
        Ok(V::S(S::B(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<V<'de>, E> {
        Ok(V::S(S::stash(self.0, v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<V<'de>, E> {
        Ok(V::U(v))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<V<'de>, E> {
        Ok(V::I)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<V<'de>, E> {
        Ok(V::F(v))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<V<'de>, E> {
        Ok(V::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<V<'de>, E> {
        Ok(V::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<V<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(V::Other)
    }
    fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<V<'de>, M::Error> {
        while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(V::Other)
    }
}

struct KeySeed<'m>(&'m JsonMap);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Option<(Slot, u8)>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Option<(Slot, u8)>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.0.lookup(v))
    }
}

struct TopSeed<'s, 'm>(&'s mut Vec<u8>, &'m JsonMap);

impl<'de> DeserializeSeed<'de> for TopSeed<'_, '_> {
    type Value = Vals<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Vals<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'_, '_> {
    type Value = Vals<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Vals<'de>, M::Error> {
        let TopSeed(arena, map) = self;
        let mut vals: Vals<'de> = [None; SLOTS];
        while let Some(k) = m.next_key_seed(KeySeed(map))? {
            let Some((slot, rank)) = k else {
                m.next_value::<IgnoredAny>()?;
                continue;
            };
            let v = m.next_value_seed(ValSeed(arena))?;
            if matches!(v, V::Null) || matches!(v, V::S(S::B("" | "-"))) {
                continue;
            }
            let cur = &mut vals[slot.idx()];
            if cur.is_none_or(|c| rank < c.1) {
                *cur = Some((v, rank, slot));
            }
        }
        Ok(vals)
    }
}

/// Epoch number by magnitude (s, ms, µs, ns) → µs and its precision.
fn epoch_us(x: f64, int: bool) -> Option<(i128, Precision)> {
    if !x.is_finite() || x < 0.0 {
        return None;
    }
    let (us, p) = if x < 1e11 {
        let p = if int {
            Precision::Second
        } else {
            Precision::Milli
        };
        (x * 1e6, p)
    } else if x < 1e14 {
        (x * 1e3, Precision::Milli)
    } else if x < 1e17 {
        (x, Precision::Micro)
    } else {
        (x / 1e3, Precision::Micro)
    };
    Some((us.round() as i128, p))
}

fn ts_of(v: V, arena: &[u8], clf: &mut ClfTime, off: i32) -> Option<(i128, Precision)> {
    match v {
        V::U(n) => epoch_us(n as f64, true),
        V::F(x) => epoch_us(x, false),
        V::S(s) => {
            let b = s.bytes(arena);
            let b = b
                .strip_prefix(b"[")
                .and_then(|x| x.strip_suffix(b"]"))
                .unwrap_or(b);
            if let Some(t) = time::parse_iso8601(b) {
                return Some((t.utc_us(off) as i128, Precision::from_digits(t.frac_digits)));
            }
            if b.len() == ClfTime::LEN {
                return clf
                    .parse(b)
                    .map(|s| (s as i128 * 1_000_000, Precision::Second));
            }
            let (us, digits) = time::parse_decimal_micros(b)?;
            if digits == 0 {
                epoch_us((us / 1_000_000) as f64, true)
            } else {
                Some((us as i128, Precision::from_digits(digits)))
            }
        }
        _ => None,
    }
}

/// A request time in µs; `Ok(None)` when absent.
fn rt_of(v: V, unit: Unit, arena: &[u8]) -> Result<Option<u64>, ParseError> {
    let div = |x: f64| match unit {
        Unit::Secs => x * 1e6,
        Unit::Millis => x * 1e3,
        Unit::Micros => x,
        Unit::Nanos => x / 1e3,
    };
    let us = match v {
        V::U(n) => div(n as f64),
        V::F(x) if x.is_finite() && x >= 0.0 => div(x),
        V::S(s) => {
            let b = s.bytes(arena);
            if b == b"-" || b.is_empty() {
                return Ok(None);
            }
            if b.iter().any(u8::is_ascii_alphabetic) {
                parse_go_duration(b).ok_or(ParseError::BadRequestTime)? as f64
            } else {
                let (v, _) = time::parse_decimal_micros(b).ok_or(ParseError::BadRequestTime)?;
                div(v as f64 / 1e6)
            }
        }
        V::Null => return Ok(None),
        _ => return Err(ParseError::BadRequestTime),
    };
    let us = us.round();
    if !(0.0..=time::MAX_REQUEST_TIME_US as f64).contains(&us) {
        return Err(ParseError::BadRequestTime);
    }
    Ok(Some(us as u64))
}

/// Removes `:port` from `v4:port` and `[v6]:port`; a bare IPv6 address is kept.
fn strip_port(b: &[u8]) -> &[u8] {
    if let Some(rest) = b.strip_prefix(b"[") {
        return match memchr::memchr(b']', rest) {
            Some(i) => &rest[..i],
            None => b,
        };
    }
    match memchr::memrchr(b':', b) {
        Some(i)
            if memchr::memchr(b':', &b[..i]).is_none()
                && i + 1 < b.len()
                && b[i + 1..].iter().all(u8::is_ascii_digit) =>
        {
            &b[..i]
        }
        _ => b,
    }
}

/// The JSON-lines parser of a map, with its scratch arena for unescaped strings.
pub(crate) struct JsonParser {
    map: JsonMap,
    arena: Vec<u8>,
    clf: ClfTime,
    default_offset: i32,
}

impl JsonParser {
    pub(crate) fn new(map: JsonMap, opts: &ParseOptions) -> JsonParser {
        JsonParser {
            map,
            arena: Vec::with_capacity(1024),
            clf: ClfTime::new(),
            default_offset: opts.default_offset_secs,
        }
    }
}

impl LineParser for JsonParser {
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
        let vals = TopSeed(&mut self.arena, &self.map)
            .deserialize(&mut de)
            .map_err(|_| ParseError::BadJson)?;
        de.end().map_err(|_| ParseError::BadJson)?;
        let map = &self.map;
        if map
            .required
            .iter()
            .any(|any| any.iter().all(|&i| vals[i].is_none()))
        {
            return Err(ParseError::NotAccessLog);
        }
        let arena: &'a [u8] = &self.arena;
        let get = |s: Slot| vals[s.idx()].map(|v| v.0);
        let text = |s: Slot| match get(s) {
            Some(V::S(x)) => Some(x.bytes(arena)),
            _ => None,
        };
        let mut rec = Record {
            status: match get(Slot::Status) {
                Some(V::U(v)) if v <= 999 => v as u16,
                Some(V::S(s)) => parse_status(s.bytes(arena)).ok_or(ParseError::BadStatus)?,
                None => return Err(ParseError::MissingStatus),
                _ => return Err(ParseError::BadStatus),
            },
            ..Record::default()
        };
        rec.client = if map.mapped(Slot::Client) {
            let c = text(Slot::Client)
                .map(strip_port)
                .filter(|c| !c.is_empty())
                .ok_or(ParseError::MissingClient)?;
            rec.ip = parse_ip(c);
            c
        } else {
            b"-"
        };
        let rt = match vals[Slot::ReqTime(Unit::Secs).idx()] {
            Some((v, _, Slot::ReqTime(u))) => rt_of(v, u, arena)?,
            _ => None,
        };
        rec.request_time_us = rt;
        let (start, end) = (get(Slot::Ts), get(Slot::TsEnd));
        let (us, prec) = match (start, end) {
            (Some(v), _) => ts_of(v, arena, &mut self.clf, self.default_offset)
                .ok_or(ParseError::BadTimestamp)?,
            (None, Some(v)) => {
                let (us, p) = ts_of(v, arena, &mut self.clf, self.default_offset)
                    .ok_or(ParseError::BadTimestamp)?;
                (us - rt.unwrap_or(0) as i128, p)
            }
            (None, None) => return Err(ParseError::BadTimestamp),
        };
        rec.ts_ms = time::arrival_ms(us).ok_or(ParseError::TimestampOutOfRange)?;
        rec.precision = prec;
        rec.bytes = match get(Slot::Bytes) {
            None => None,
            Some(V::U(v)) => Some(v),
            Some(V::F(x)) if x.is_finite() && x >= 0.0 => Some(x as u64),
            Some(V::S(s)) => Some(time::parse_uint(s.bytes(arena)).ok_or(ParseError::BadBytes)?),
            Some(_) => return Err(ParseError::BadBytes),
        };
        if let Some(r) = text(Slot::Request) {
            split_request(r, &mut rec);
        }
        if rec.method.is_none() {
            rec.method = text(Slot::Method).and_then(dash_none);
        }
        if rec.path.is_none()
            && let Some(t) = text(Slot::Target).and_then(dash_none)
        {
            split_target(t, &mut rec);
        }
        if rec.query.is_none()
            && let Some(q) = text(Slot::Query)
        {
            let q = q.strip_prefix(b"?").unwrap_or(q);
            rec.query = dash_none(q);
        }
        if rec.protocol.is_none() {
            rec.protocol = text(Slot::Protocol).and_then(dash_none);
        }
        rec.user = text(Slot::User).and_then(dash_none);
        rec.host = text(Slot::Host).and_then(dash_none);
        rec.user_agent = text(Slot::Agent).and_then(dash_only);
        rec.referer = text(Slot::Referer).and_then(dash_only);
        rec.xff = text(Slot::Xff).and_then(dash_none);
        Ok(rec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_maps() {
        let m = JsonMap::parse("ts=time, client=ip,status=code").unwrap();
        assert_eq!(m.source(), "ts=time, client=ip,status=code");
        for (bad, col) in [
            ("ts=time,status=s,nope=x", 18),
            ("ts=time,status", 9),
            ("ts=time,status=", 9),
            ("ts=a,status=b,ts_end=c,ts=d", 24),
            ("client=a", 1),
        ] {
            let e = JsonMap::parse(bad).unwrap_err();
            assert!(
                e.to_string().starts_with(&format!("column {col}:")),
                "{bad}: {e}"
            );
        }
        assert_eq!(JsonMap::parse(" "), Err(FormatError::Empty));
    }

    #[test]
    fn ports_and_times() {
        assert_eq!(strip_port(b"1.2.3.4:80"), b"1.2.3.4");
        assert_eq!(strip_port(b"2001:db8::1"), b"2001:db8::1");
        assert_eq!(strip_port(b"[::1]:80"), b"::1");
        let a = [];
        assert_eq!(rt_of(V::U(1_500_000), Unit::Nanos, &a), Ok(Some(1500)));
        assert_eq!(rt_of(V::F(0.25), Unit::Secs, &a), Ok(Some(250_000)));
        assert_eq!(rt_of(V::S(S::B("17ms")), Unit::Secs, &a), Ok(Some(17_000)));
        assert_eq!(rt_of(V::S(S::B("2")), Unit::Millis, &a), Ok(Some(2000)));
        assert!(rt_of(V::I, Unit::Secs, &a).is_err());
    }
}
