//! JSON-lines access logs read through a field map: one JSON object a line, each
//! record field taken from a named key. Four maps exist: `nginx-json` (nginx
//! `log_format … escape=json` with keys named after nginx variables), `traefik-json`
//! (Traefik's JSON access log), `envoy-json` (Envoy Gateway's and Istio's JSON access
//! logs) and a user's own (`--json-map ts=time,client=request.remote_ip,…`,
//! [`JsonMap::parse`]), whose keys may be dotted paths into nested objects.
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
use super::captured::{Extra, normalise_field};
use super::fields::{dash_none, dash_only, parse_ip, parse_status, split_request, split_target};
use super::json::S;
use super::{FormatError, LineParser, ParseError, ParseOptions};
use crate::record::{MAX_FIELDS, Precision, Record};
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
    /// A captured `field:NAME` entry: its slot in [`Record::fields`].
    Field(u8),
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
            Slot::Field(k) => 16 + usize::from(k).min(MAX_FIELDS - 1),
        }
    }
}

const SLOTS: usize = 16 + MAX_FIELDS;

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
    /// Whether some key is a dotted path (`request.remote_ip`): only then are objects
    /// looked into.
    nested: bool,
    /// The `field:NAME=KEY` entries: each field and its key. Only those a caller asked
    /// to capture ([`JsonMap::with_slots`]) are in `keys`.
    fields: Vec<(Extra, Box<str>)>,
    /// How many slots of [`Record::fields`] the captured fields fill.
    captured: u8,
}

/// What a JSON key of a line is to the map.
#[derive(Clone, Copy, Debug)]
enum Hit<'m> {
    /// A mapped key: its slot and rank.
    Leaf(Slot, u8),
    /// The start of a mapped dotted path: the path so far (a prefix of a mapped key).
    Prefix(&'m str),
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
            nested: false,
            fields: Vec::new(),
            captured: 0,
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

    /// Envoy's JSON access logs with the field names of Envoy Gateway's default
    /// (`start_time`, `method`, `x-envoy-origin-path`, `response_code`, `bytes_sent`,
    /// `duration` in ms, `user-agent`, `x-forwarded-for`, `:authority`,
    /// `downstream_remote_address`) and of Istio's JSON encoding (`path`, `user_agent`,
    /// `x_forwarded_for`, `authority`). The client is `downstream_remote_address`
    /// without its port; X-Forwarded-For goes to `xff`.
    pub(crate) fn envoy() -> JsonMap {
        use Slot::*;
        JsonMap::preset(
            &[
                ("start_time", Ts),
                ("downstream_remote_address", Client),
                ("method", Method),
                ("x-envoy-origin-path", Target),
                ("path", Target),
                ("protocol", Protocol),
                ("response_code", Status),
                ("bytes_sent", Bytes),
                ("user-agent", Agent),
                ("user_agent", Agent),
                (":authority", Host),
                ("authority", Host),
                ("x-forwarded-for", Xff),
                ("x_forwarded_for", Xff),
                ("duration", ReqTime(Unit::Millis)),
            ],
            &[&[Status], &[Client], &[Ts], &[Method]],
        )
    }

    /// Parses a user map: `name=key` pairs separated by commas, e.g.
    /// `ts=time,client=remote_ip,method=verb,path=url,status=code,bytes=size`.
    /// Names: `ts` (arrival) or `ts_end` (completion), `client`, `user`, `method`,
    /// `path` (alias `uri`: the target, split at `?`), `query`, `request` (a whole
    /// request line), `protocol`, `status`, `bytes`, `agent`, `referer`, `host`, `xff`,
    /// `request_time` (seconds) or `request_time_ms`/`_us`/`_ns`. `ts`/`ts_end` and
    /// `status` are required; an unmapped client is stored as `-`. A key may be a
    /// dotted path into nested objects (`client=request.remote_ip`,
    /// `agent=request.headers.User-Agent`); a top-level key that contains the dots
    /// itself is found first. An array value gives its first element.
    ///
    /// `field:NAME=KEY` names a field beyond these (`field:api_key=headers.X-Api-Key`),
    /// read only when a replay keys on it (`key=field:api_key`); a name `http_…` is a
    /// request header by nginx's convention (`field:http_x_api_key` is `X-Api-Key`).
    pub fn parse(src: &str) -> Result<JsonMap, FormatError> {
        let text = src.trim();
        if text.is_empty() {
            return Err(FormatError::Empty);
        }
        let lead = src.len() - src.trim_start().len();
        let cols = super::nginx::columns(src);
        let mut keys: Vec<(Box<str>, Slot, u8)> = Vec::new();
        let mut fields: Vec<(Extra, Box<str>)> = Vec::new();
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
            let field = name
                .get(..6)
                .filter(|p| p.eq_ignore_ascii_case("field:"))
                .map(|_| name[6..].trim());
            if let Some(f) = field {
                if f.is_empty() || f.contains(|c: char| c.is_whitespace() || c.is_control()) {
                    return Err(bad(
                        "a field needs a name without spaces: field:NAME=KEY, e.g. field:api_key=headers.X-Api-Key".into(),
                    ));
                }
                if fields
                    .iter()
                    .any(|e| normalise_field(&e.0.name) == normalise_field(f))
                {
                    return Err(bad("this field is mapped twice".into()));
                }
            }
            let slot = match field {
                Some(_) => None,
                None => Some(
                    MAP_NAMES
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case(name))
                        .map(|(_, s)| *s)
                        .ok_or_else(|| {
                            bad(format!(
                                "unknown field; known: {}, or field:NAME for a field of your own",
                                MAP_NAMES
                                    .iter()
                                    .map(|(n, _)| *n)
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ))
                        })?,
                ),
            };
            if key.is_empty() {
                return Err(bad("the JSON key is empty".into()));
            }
            if key.split('.').any(str::is_empty) {
                return Err(bad(
                    "a key path has an empty part (write request.remote_ip)".into(),
                ));
            }
            if slot.is_some_and(|slot| keys.iter().any(|k| k.1.idx() == slot.idx())) {
                return Err(bad("this field is mapped twice".into()));
            }
            if keys
                .iter()
                .map(|k| &k.0)
                .chain(fields.iter().map(|f| &f.1))
                .any(|k| k.eq_ignore_ascii_case(key))
            {
                return Err(bad("this JSON key is mapped twice".into()));
            }
            match (slot, field) {
                (Some(slot), _) => keys.push((key.into(), slot, 0)),
                (None, Some(f)) => fields.push((Extra::named(f), key.into())),
                (None, None) => unreachable!("a field or a name"),
            }
        }
        let has = |s: Slot| keys.iter().any(|k| k.1 == s);
        if !(has(Slot::Ts) || has(Slot::TsEnd)) || !has(Slot::Status) {
            return Err(FormatError::Invalid {
                col: 1,
                token: text.chars().take(10).collect(),
                reason: "a JSON map needs ts=KEY (or ts_end=KEY) and status=KEY".into(),
            });
        }
        let nested = keys.iter().any(|k| k.0.contains('.'));
        Ok(JsonMap {
            source: text.to_string(),
            keys,
            required: Vec::new(),
            nested,
            fields,
            captured: 0,
        })
    }

    /// The `field:NAME` entries, in map order.
    pub(crate) fn extras(&self) -> impl Iterator<Item = &Extra> {
        self.fields.iter().map(|f| &f.0)
    }

    /// The same map capturing its `field:` entries ([`JsonMap::extras`], in that order)
    /// into `slots` (`None`: not read), `captured` slots in all.
    pub(crate) fn with_slots(&self, slots: &[Option<u8>], captured: u8) -> JsonMap {
        let mut m = self.clone();
        m.keys.retain(|k| !matches!(k.1, Slot::Field(_)));
        for ((e, key), slot) in m.fields.iter_mut().zip(slots) {
            e.slot = *slot;
            if let Some(k) = slot {
                m.keys.push((key.clone(), Slot::Field(*k), 0));
            }
        }
        m.nested = m.keys.iter().any(|k| k.0.contains('.'));
        m.captured = captured;
        m
    }

    /// What `key`, found inside the object at `prefix` (`""` = top level), is to the
    /// map. Compares bytes in place: no path is built.
    fn lookup<'m>(&'m self, prefix: &str, key: &str) -> Option<Hit<'m>> {
        let (p, k) = (prefix.as_bytes(), key.as_bytes());
        let full = if p.is_empty() {
            k.len()
        } else {
            p.len() + 1 + k.len()
        };
        // Whether `m[..full]` is `prefix.key` (or `key` at the top level).
        let starts = |m: &[u8]| {
            m.len() >= full
                && if p.is_empty() {
                    m[..full].eq_ignore_ascii_case(k)
                } else {
                    m[..p.len()].eq_ignore_ascii_case(p)
                        && m[p.len()] == b'.'
                        && m[p.len() + 1..full].eq_ignore_ascii_case(k)
                }
        };
        if let Some(e) = self
            .keys
            .iter()
            .find(|e| e.0.len() == full && starts(e.0.as_bytes()))
        {
            return Some(Hit::Leaf(e.1, e.2));
        }
        if !self.nested {
            return None;
        }
        self.keys
            .iter()
            .find(|e| {
                let m = e.0.as_bytes();
                m.len() > full && m[full] == b'.' && starts(m)
            })
            .map(|e| Hit::Prefix(&e.0[..full]))
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
        // An array gives its first element (Caddy logs headers as lists).
        let first = seq.next_element_seed(ValSeed(self.0))?;
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(first.unwrap_or(V::Other))
    }
    fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<V<'de>, M::Error> {
        while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(V::Other)
    }
}

/// A key of the object at a path (`""` = top level).
struct KeySeed<'m>(&'m JsonMap, &'m str);

impl<'de, 'm> DeserializeSeed<'de> for KeySeed<'m> {
    type Value = Option<Hit<'m>>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, 'm> Visitor<'de> for KeySeed<'m> {
    type Value = Option<Hit<'m>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.0.lookup(self.1, v))
    }
}

/// Reads the entries of an object at `prefix` into `vals`.
fn collect<'de, M: MapAccess<'de>>(
    m: &mut M,
    arena: &mut Vec<u8>,
    map: &JsonMap,
    prefix: &str,
    vals: &mut Vals<'de>,
) -> Result<(), M::Error> {
    while let Some(k) = m.next_key_seed(KeySeed(map, prefix))? {
        let (slot, rank) = match k {
            None => {
                m.next_value::<IgnoredAny>()?;
                continue;
            }
            Some(Hit::Prefix(p)) => {
                m.next_value_seed(NestedSeed {
                    arena: &mut *arena,
                    map,
                    prefix: p,
                    vals: &mut *vals,
                })?;
                continue;
            }
            Some(Hit::Leaf(slot, rank)) => (slot, rank),
        };
        let v = m.next_value_seed(ValSeed(&mut *arena))?;
        if matches!(v, V::Null) || matches!(v, V::S(S::B("" | "-"))) {
            continue;
        }
        let cur = &mut vals[slot.idx()];
        if cur.is_none_or(|c| rank < c.1) {
            *cur = Some((v, rank, slot));
        }
    }
    Ok(())
}

/// The value of a key that starts a mapped path: an object is looked into, anything
/// else is skipped.
struct NestedSeed<'s, 'm, 'v, 'de> {
    arena: &'s mut Vec<u8>,
    map: &'m JsonMap,
    prefix: &'m str,
    vals: &'v mut Vals<'de>,
}

impl<'de> DeserializeSeed<'de> for NestedSeed<'_, '_, '_, 'de> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NestedSeed<'_, '_, '_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<(), M::Error> {
        collect(&mut m, self.arena, self.map, self.prefix, self.vals)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
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
        collect(&mut m, arena, map, "", &mut vals)?;
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
        let captured = map.captured.min(MAX_FIELDS as u8);
        let mut vals = vals;
        for k in 0..captured {
            // A number as a field is its digits (a tenant id logged as one).
            if let Some((V::U(n), rank, slot)) = vals[Slot::Field(k).idx()] {
                use std::io::Write as _;
                let a = self.arena.len();
                let _ = write!(self.arena, "{n}");
                vals[Slot::Field(k).idx()] = Some((V::S(S::A(a, self.arena.len())), rank, slot));
            }
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
        let mut list = None;
        rec.client = if map.mapped(Slot::Client) {
            let mut c = text(Slot::Client)
                .map(strip_port)
                .filter(|c| !c.is_empty())
                .ok_or(ParseError::MissingClient)?;
            if memchr::memchr(b',', c).is_some() {
                // A list (Traefik's ClientHost behind trusted proxies): the first
                // public address, else the first; the list goes to `xff`.
                list = Some(c);
                let mut parts = c.split(|&b| b == b',').map(<[u8]>::trim_ascii);
                let first = parts.clone().next().unwrap_or_default();
                c = parts
                    .find(|p| parse_ip(p).is_some_and(super::fields::is_public))
                    .unwrap_or(first);
            }
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
        rec.xff = text(Slot::Xff).and_then(dash_none).or(list);
        rec.captured = captured;
        for k in 0..captured {
            rec.fields[usize::from(k)] = text(Slot::Field(k)).and_then(dash_none);
        }
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
    fn field_entries() {
        let m = JsonMap::parse(
            "ts=time,status=code,field:api_key=headers.X-Api-Key,FIELD:tenant=tenant",
        )
        .unwrap();
        let names: Vec<&str> = m.extras().map(|e| &*e.name).collect();
        assert_eq!(names, ["api_key", "tenant"]);
        // Not asked for: not read (no key of the map), not nested.
        assert!(!m.nested && m.keys.len() == 2);
        for (bad, col) in [
            ("ts=t,status=s,field:=x", 15),
            ("ts=t,status=s,field:a b=x", 15),
            ("ts=t,status=s,field:a=x,field:A=y", 25),
            ("ts=t,status=s,field:a=t", 15),
        ] {
            let e = JsonMap::parse(bad).unwrap_err();
            assert!(
                e.to_string().starts_with(&format!("column {col}:")),
                "{bad}: {e}"
            );
        }
        let (f, at) = super::super::Format::Json(m)
            .capture(&["tenant", "API_KEY"])
            .unwrap();
        assert_eq!((at[0].slot, at[1].slot), (0, 1));
        let mut p = f.parser(&ParseOptions::default());
        let r = p
            .parse(br#"{"time":1700000000,"code":200,"tenant":42,"headers":{"X-Api-Key":"k1"}}"#)
            .unwrap();
        assert_eq!(r.captured, 2);
        assert_eq!(r.fields[0], Some(&b"42"[..]));
        assert_eq!(r.fields[1], Some(&b"k1"[..]));
        let r = p
            .parse(br#"{"time":1700000000,"code":200,"tenant":"-","headers":{}}"#)
            .unwrap();
        assert_eq!((r.fields[0], r.fields[1]), (None, None));
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
