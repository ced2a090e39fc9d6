//! Field parsers shared by every parser (the generic text matcher, Caddy JSON, W3C):
//! client addresses, request lines and targets, `-` placeholders, quoted fields,
//! status codes and request durations. None allocates.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use memchr::{memchr, memrchr};

use crate::record::Record;
use crate::time;

/// Unit of a request-duration field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RtUnit {
    /// Seconds, with or without a fraction (`%T`, `%{s}T`).
    Secs,
    /// Seconds with a mandatory fraction (nginx `$request_time`, `0.005`).
    SecsFrac,
    /// Whole milliseconds (`%{ms}T`).
    Millis,
    /// Whole microseconds (`%D`, `%{us}T`).
    Micros,
    /// Seconds with a fraction, `-1` meaning not available (AWS processing times).
    SecsOrNeg,
}

/// Position of the first `"` in `s` not escaped by an odd number of backslashes.
#[inline]
pub(crate) fn find_quote(s: &[u8]) -> Option<usize> {
    let mut from = 0;
    loop {
        let i = from + memchr(b'"', &s[from..])?;
        let mut j = i;
        while j > 0 && s[j - 1] == b'\\' {
            j -= 1;
        }
        if (i - j) % 2 == 0 {
            return Some(i);
        }
        from = i + 1;
    }
}

/// Parses a dotted-quad IPv4 address strictly (four 1–3 digit octets ≤ 255).
#[inline]
fn parse_ipv4(b: &[u8]) -> Option<Ipv4Addr> {
    if b.len() < 7 || b.len() > 15 {
        return None;
    }
    let mut oct = [0u8; 4];
    let mut k = 0;
    let mut v: u32 = 0;
    let mut nd = 0;
    for &c in b {
        if c == b'.' {
            if nd == 0 || k == 3 {
                return None;
            }
            oct[k] = v as u8;
            k += 1;
            v = 0;
            nd = 0;
        } else {
            let d = c.wrapping_sub(b'0');
            if d > 9 || nd == 3 {
                return None;
            }
            v = v * 10 + d as u32;
            if v > 255 {
                return None;
            }
            nd += 1;
        }
    }
    if k != 3 || nd == 0 {
        return None;
    }
    oct[3] = v as u8;
    Some(Ipv4Addr::from(oct))
}

/// An IPv6 address, optionally with a zone id (`fe80::1%eth0`, the zone dropped).
#[inline]
fn parse_ipv6(b: &[u8]) -> Option<Ipv6Addr> {
    let b = match memchr(b'%', b) {
        Some(i) if i + 1 < b.len() => &b[..i],
        Some(_) => return None,
        None => b,
    };
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// A client field as an IP address when it is one; host names (and anything else) →
/// `None`. Accepted: IPv4 (`203.0.113.7`), IPv4 with a port (`203.0.113.7:51234`),
/// IPv6 (`2001:db8::1`), with a zone id (`fe80::1%eth0`), in brackets with or without
/// a port (`[2001:db8::1]`, `[2001:db8::1]:443`). Zone and port are dropped, and an
/// IPv4-mapped IPv6 address (`::ffff:1.2.3.4`) is returned as the IPv4 address
/// ([`crate::net::canonical`]), so that the same client has one address, and one
/// /24, whatever way its server logged it. Does not allocate.
#[inline]
pub fn parse_ip(b: &[u8]) -> Option<IpAddr> {
    if let Some(v4) = parse_ipv4(b) {
        return Some(IpAddr::V4(v4));
    }
    let colon = memchr(b':', b)?;
    let port_ok = |p: &[u8]| !p.is_empty() && p.len() <= 5 && p.iter().all(u8::is_ascii_digit);
    let v6 = if let Some(rest) = b.strip_prefix(b"[") {
        let close = memchr(b']', rest)?;
        let after = &rest[close + 1..];
        if !after.is_empty() && !after.strip_prefix(b":").is_some_and(port_ok) {
            return None;
        }
        let inner = &rest[..close];
        match parse_ipv4(inner) {
            Some(v4) => return Some(IpAddr::V4(v4)),
            None => parse_ipv6(inner)?,
        }
    } else if let Some(v6) = parse_ipv6(b) {
        v6
    } else {
        // `a.b.c.d:port`: exactly one colon.
        let (host, port) = (&b[..colon], &b[colon + 1..]);
        return (port_ok(port) && memchr(b':', port).is_none())
            .then(|| parse_ipv4(host))
            .flatten()
            .map(IpAddr::V4);
    };
    Some(crate::net::canonical(IpAddr::V6(v6)))
}

/// Whether a client address is public: not private (RFC 1918, IPv6 unique local),
/// loopback, link-local, shared (100.64/10), unspecified or broadcast. Documentation
/// ranges count as public (examples use them for real clients).
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            let o = a.octets();
            !(a.is_private()
                || a.is_loopback()
                || a.is_link_local()
                || a.is_unspecified()
                || a.is_broadcast()
                || (o[0] == 100 && (o[1] & 0xc0) == 64))
        }
        IpAddr::V6(a) => {
            let s = a.segments()[0];
            !(a.is_loopback()
                || a.is_unspecified()
                || (s & 0xfe00) == 0xfc00
                || (s & 0xffc0) == 0xfe80)
        }
    }
}

/// A client field that is a list of addresses (a proxy logging X-Forwarded-For where
/// the address goes), found at the start of `rest`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ClientList<'a> {
    /// The chosen client: the first public address of the list, else its first address.
    pub(crate) client: &'a [u8],
    /// The list as logged (without quotes), for `xff`.
    pub(crate) list: &'a [u8],
    /// Bytes of `rest` the field takes.
    pub(crate) used: usize,
}

/// Scans `A, B, C` at the start of `s`: every item an address (or `unknown`), items
/// separated by `,` and optional spaces. Returns (end of the last item, item count,
/// first public address, first address).
/// (end of the last item, item count, first public address, first address)
type Scanned<'a> = (usize, usize, Option<&'a [u8]>, Option<&'a [u8]>);

fn scan_list(s: &[u8]) -> Option<Scanned<'_>> {
    let (mut pos, mut n) = (0usize, 0usize);
    let (mut public, mut first) = (None, None);
    loop {
        let e = s[pos..]
            .iter()
            .position(|c| *c == b',' || *c == b' ' || *c == b'"')
            .map_or(s.len(), |i| pos + i);
        let item = &s[pos..e];
        match parse_ip(item) {
            Some(ip) => {
                first = first.or(Some(item));
                if public.is_none() && is_public(ip) {
                    public = Some(item);
                }
            }
            None if item.eq_ignore_ascii_case(b"unknown") => {}
            None => return None,
        }
        n += 1;
        if s.get(e) != Some(&b',') {
            return Some((e, n, public, first));
        }
        pos = e + 1;
        while s.get(pos) == Some(&b' ') {
            pos += 1;
        }
    }
}

/// Whether `v` is a whole list of one or more addresses (`1.2.3.4`, `1.2.3.4,
/// 10.0.0.1`; `unknown` items allowed, at least one address): an X-Forwarded-For value.
pub(crate) fn is_addr_list(v: &[u8]) -> bool {
    !v.is_empty()
        && v[0] != b' '
        && matches!(scan_list(v), Some((end, _, _, Some(_))) if end == v.len())
}

/// A client list at the start of `rest`: `10.0.0.2, 10.0.0.1, 127.0.0.1` (two or more
/// addresses), or a quoted list followed by the connecting address
/// (`"10.5.102.222, 175.16.199.1" 10.2.1.185`, whose addresses all count as candidates
/// for the client). `None` when `rest` does not start with one.
pub(crate) fn client_list(rest: &[u8]) -> Option<ClientList<'_>> {
    if let Some(q) = rest.strip_prefix(b"\"") {
        let close = memchr(b'"', q)?;
        let list = &q[..close];
        let (end, _, public, first) = scan_list(list)?;
        if end != list.len() {
            return None;
        }
        let after = q[close + 1..].strip_prefix(b" ")?;
        let peer_len = memchr(b' ', after).unwrap_or(after.len());
        let peer = &after[..peer_len];
        let peer_ip = parse_ip(peer)?;
        let client = public
            .or_else(|| is_public(peer_ip).then_some(peer))
            .or(first)
            .unwrap_or(peer);
        return Some(ClientList {
            client,
            list,
            used: 1 + close + 2 + peer_len,
        });
    }
    let (end, n, public, first) = scan_list(rest)?;
    if n < 2 {
        return None;
    }
    // `A, B C - - [`: the list, then the connecting address (Filebeat's nginx
    // grammar), a candidate for the client like the quoted form's.
    let mut used = end;
    let mut peer_public = None;
    if let Some(after) = rest[end..].strip_prefix(b" ") {
        let len = memchr(b' ', after).unwrap_or(after.len());
        if let Some(ip) = parse_ip(&after[..len])
            && len < after.len()
        {
            used = end + 1 + len;
            peer_public = is_public(ip).then_some(&after[..len]);
        }
    }
    Some(ClientList {
        client: public.or(peer_public).or(first)?,
        list: &rest[..end],
        used,
    })
}

/// Whether a line starting with `"` begins with a quoted client list
/// (`"10.5.102.222, 175.16.199.1" 10.2.1.185 …`) rather than being a whole line
/// wrapped in quotes: the first quoted text holds only address characters.
pub(crate) fn starts_with_quoted_list(line: &[u8]) -> bool {
    let Some(q) = line.strip_prefix(b"\"") else {
        return false;
    };
    match memchr(b'"', q) {
        Some(close) if close > 0 => {
            q[..close].iter().all(|c| {
                c.is_ascii_hexdigit() || matches!(c, b'.' | b':' | b',' | b' ' | b'[' | b']' | b'%')
            }) && q.get(close + 1) == Some(&b' ')
        }
        _ => false,
    }
}

/// `None` for `-` and empty.
#[inline]
pub(crate) fn dash_none(v: &[u8]) -> Option<&[u8]> {
    if v.is_empty() || v == b"-" {
        None
    } else {
        Some(v)
    }
}

/// `None` for `-` only (an empty header is kept as `Some("")`).
#[inline]
pub(crate) fn dash_only(v: &[u8]) -> Option<&[u8]> {
    if v == b"-" { None } else { Some(v) }
}

/// Splits a request target into path and query at the first `?`.
#[inline]
pub(crate) fn split_target<'a>(t: &'a [u8], rec: &mut Record<'a>) {
    match memchr(b'?', t) {
        Some(i) => {
            rec.path = Some(&t[..i]);
            rec.query = Some(&t[i + 1..]);
        }
        None => rec.path = if t.is_empty() { None } else { Some(t) },
    }
}

/// Removes `:port` from `host:port`, `[v6]:port` and (AWS) `v6:port`.
pub(crate) fn strip_port(b: &[u8]) -> &[u8] {
    if let Some(rest) = b.strip_prefix(b"[") {
        return match memchr(b']', rest) {
            Some(i) => &rest[..i],
            None => b,
        };
    }
    match memrchr(b':', b) {
        Some(i) if b[i + 1..].iter().all(u8::is_ascii_digit) => &b[..i],
        _ => b,
    }
}

/// Splits an absolute-form target `scheme://authority/path` into authority and path.
pub(crate) fn split_absolute(t: &[u8]) -> Option<(&[u8], &[u8])> {
    let i = memchr::memmem::find(t, b"://")?;
    if i == 0 || !t[..i].iter().all(u8::is_ascii_alphabetic) {
        return None;
    }
    let rest = &t[i + 3..];
    let end = rest
        .iter()
        .position(|c| *c == b'/' || *c == b'?')
        .unwrap_or(rest.len());
    Some((&rest[..end], &rest[end..]))
}

/// Whether `b` looks like a protocol token (`HTTP/1.1`, `http/1.0`, `HTTP/V1.0`).
#[inline]
fn looks_proto(b: &[u8]) -> bool {
    b.len() >= 5 && b[..5].eq_ignore_ascii_case(b"HTTP/")
}

/// Whether `m` can be an HTTP method: 1–32 letters, digits, `-`, `_` or `.`, starting
/// with a letter (`GET`, `PROPFIND`, `M-SEARCH`, lowercase `get`).
#[inline]
fn looks_method(m: &[u8]) -> bool {
    !m.is_empty()
        && m.len() <= 32
        && m[0].is_ascii_alphabetic()
        && m.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Splits a request line (`GET /a?b HTTP/1.1`) into method, path, query and protocol.
/// `-` and empty give all `None`; a missing protocol gives `protocol: None`.
///
/// A request that is not HTTP — no method token followed by a target (`hello`, a TLS
/// handshake logged as `\x16\x03\x01…`, `GET` alone, binary junk) — keeps the row:
/// `method` is `None` and `path` is the whole request text as logged (query and
/// protocol `None`), so a report can count such rows (`method` null, `path` not).
#[inline]
pub(crate) fn split_request<'a>(v: &'a [u8], rec: &mut Record<'a>) {
    if v.is_empty() || v == b"-" {
        return;
    }
    let (method, rest) = match memchr(b' ', v) {
        Some(i) => (&v[..i], &v[i + 1..]),
        None => (v, &v[v.len()..]),
    };
    if rest.is_empty() || !looks_method(method) {
        rec.path = Some(v);
        return;
    }
    rec.method = Some(method);
    let target = match memrchr(b' ', rest) {
        Some(i) if looks_proto(&rest[i + 1..]) => {
            rec.protocol = Some(&rest[i + 1..]);
            &rest[..i]
        }
        _ if looks_proto(rest) && memchr(b' ', rest).is_none() => {
            // `GET HTTP/1.0`: no target at all.
            rec.protocol = Some(rest);
            &rest[..0]
        }
        _ => rest,
    };
    split_target(target, rec);
}

/// Parses a request duration into microseconds.
#[inline]
pub(crate) fn parse_rt(v: &[u8], unit: RtUnit) -> Option<u64> {
    let us = match unit {
        RtUnit::Micros => time::parse_uint(v),
        RtUnit::Millis => time::parse_uint(v)?.checked_mul(1000),
        RtUnit::Secs => time::parse_decimal_micros(v).map(|(us, _)| us as u64),
        RtUnit::SecsOrNeg if v == b"-1" => None,
        RtUnit::SecsOrNeg | RtUnit::SecsFrac => {
            memchr(b'.', v)?;
            time::parse_decimal_micros(v).map(|(us, _)| us as u64)
        }
    }?;
    (us <= time::MAX_REQUEST_TIME_US).then_some(us)
}

#[inline]
pub(crate) fn parse_status(v: &[u8]) -> Option<u16> {
    if v.len() != 3 {
        return None;
    }
    let a = v[0].wrapping_sub(b'0');
    let b = v[1].wrapping_sub(b'0');
    let c = v[2].wrapping_sub(b'0');
    if a > 9 || b > 9 || c > 9 {
        return None;
    }
    Some(a as u16 * 100 + b as u16 * 10 + c as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_strict() {
        assert_eq!(parse_ipv4(b"1.2.3.4"), Some(Ipv4Addr::new(1, 2, 3, 4)));
        assert_eq!(
            parse_ipv4(b"255.255.255.255"),
            Some(Ipv4Addr::new(255, 255, 255, 255))
        );
        for bad in [
            &b"4.83.226.437"[..],
            b"1.2.3",
            b"1.2.3.4.5",
            b"1..3.4",
            b"1.2.3.4 ",
            b"1234.1.1.1",
            b"a.b.c.d",
        ] {
            assert_eq!(parse_ipv4(bad), None);
        }
        assert_eq!(
            parse_ip(b"2001:41d0:8:f69::1"),
            Some("2001:41d0:8:f69::1".parse().unwrap())
        );
        assert_eq!(parse_ip(b"[::1]"), Some(IpAddr::V6(Ipv6Addr::LOCALHOST)));
        assert_eq!(parse_ip(b"in24.inetnebr.com"), None);
    }

    #[test]
    fn client_addresses_with_zone_port_brackets_mapped() {
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        for (given, want) in [
            ("fe80::1%eth0", ip("fe80::1")),
            ("fe80::1%25", ip("fe80::1")),
            ("[2001:db8::1]", ip("2001:db8::1")),
            ("[2001:db8::1]:443", ip("2001:db8::1")),
            ("[fe80::1%eth0]:8080", ip("fe80::1")),
            ("203.0.113.7:51234", ip("203.0.113.7")),
            ("[203.0.113.7]:80", ip("203.0.113.7")),
            ("::ffff:203.0.113.9", ip("203.0.113.9")),
            ("[::ffff:203.0.113.9]:1", ip("203.0.113.9")),
            ("::ffff:cb00:7109", ip("203.0.113.9")),
            ("2001:db8::1:443", ip("2001:db8::1:443")),
            ("::1", ip("::1")),
            ("fe80::1%", None),
            ("[2001:db8::1", None),
            ("[2001:db8::1]x", None),
            ("[2001:db8::1]:", None),
            ("[2001:db8::1]:123456", None),
            ("203.0.113.7:", None),
            ("203.0.113.7:http", None),
            ("203.0.113.7:1:2", None),
            ("host.example:80", None),
            ("[]", None),
            ("[]:1", None),
            ("é:1", None),
            (":", None),
        ] {
            assert_eq!(parse_ip(given.as_bytes()), want, "{given}");
        }
        assert_eq!(parse_ip(b"\xff:1"), None);
        assert_eq!(parse_ip(&[0xff, b':', b'1']), None);
    }

    #[test]
    fn client_lists() {
        let l = client_list(b"10.0.0.2, 10.0.0.1, 127.0.0.1 - - [x]").unwrap();
        assert_eq!(l.client, b"10.0.0.2");
        assert_eq!(l.list, b"10.0.0.2, 10.0.0.1, 127.0.0.1");
        assert_eq!(l.used, 29);
        let l = client_list(b"10.0.0.2, 8.8.8.8,9.9.9.9 - -").unwrap();
        assert_eq!(l.client, b"8.8.8.8");
        assert_eq!(l.list, b"10.0.0.2, 8.8.8.8,9.9.9.9");
        let r = br#""10.5.102.222, 175.16.199.1" 10.2.1.185 - - [x]"#;
        let l = client_list(r).unwrap();
        assert_eq!(l.client, b"175.16.199.1");
        assert_eq!(l.list, b"10.5.102.222, 175.16.199.1");
        assert_eq!(&r[l.used..l.used + 2], b" -");
        let l = client_list(br#""10.0.0.1" 8.8.4.4 - -"#).unwrap();
        assert_eq!(l.client, b"8.8.4.4");
        assert_eq!(client_list(b"10.0.0.2 - - [x]"), None);
        assert_eq!(client_list(b"10.0.0.2, host - -"), None);
        assert_eq!(client_list(br#""a b" 1.2.3.4 -"#), None);
        assert!(starts_with_quoted_list(
            br#""10.5.102.222, 175.16.199.1" 10.2.1.185 -"#
        ));
        assert!(!starts_with_quoted_list(
            br#""1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 1""#
        ));
        assert!(is_public("175.16.199.1".parse().unwrap()));
        for p in [
            "10.1.1.1",
            "172.16.0.1",
            "192.168.1.1",
            "127.0.0.1",
            "100.64.0.1",
            "fd00::1",
            "fe80::1",
            "::1",
        ] {
            assert!(!is_public(p.parse().unwrap()), "{p}");
        }
    }

    #[test]
    fn quotes() {
        assert_eq!(find_quote(br#"abc" x"#), Some(3));
        assert_eq!(find_quote(br#"a\"b" x"#), Some(4));
        assert_eq!(find_quote(br#"a\\" x"#), Some(3));
        assert_eq!(find_quote(br#"a\\\"" x"#), Some(5));
        assert_eq!(find_quote(br#"abc"#), None);
    }

    #[test]
    fn request_lines() {
        type Case<'c> = (&'c [u8], Opt<'c>, Opt<'c>, Opt<'c>, Opt<'c>);
        type Opt<'c> = Option<&'c [u8]>;
        let cases: &[Case] = &[
            (
                b"GET /a?b=1&c HTTP/1.1",
                Some(b"GET"),
                Some(b"/a"),
                Some(b"b=1&c"),
                Some(b"HTTP/1.1"),
            ),
            (b"GET /", Some(b"GET"), Some(b"/"), None, None),
            (
                b"get /x HTTP/V1.0",
                Some(b"get"),
                Some(b"/x"),
                None,
                Some(b"HTTP/V1.0"),
            ),
            (b"-", None, None, None, None),
            (b"", None, None, None, None),
            (b"quit", None, Some(b"quit"), None, None),
            (b"hello", None, Some(b"hello"), None, None),
            (b"GET", None, Some(b"GET"), None, None),
            (
                br"\x16\x03\x01\x00\xF4\x01",
                None,
                Some(br"\x16\x03\x01\x00\xF4\x01"),
                None,
                None,
            ),
            (
                b"\x16\x03 junk HTTP/1.1",
                None,
                Some(b"\x16\x03 junk HTTP/1.1"),
                None,
                None,
            ),
            (
                b"M-SEARCH * HTTP/1.1",
                Some(b"M-SEARCH"),
                Some(b"*"),
                None,
                Some(b"HTTP/1.1"),
            ),
            (
                b"GET /a b c HTTP/1.0",
                Some(b"GET"),
                Some(b"/a b c"),
                None,
                Some(b"HTTP/1.0"),
            ),
            (
                b"GET /? HTTP/1.0",
                Some(b"GET"),
                Some(b"/"),
                Some(b""),
                Some(b"HTTP/1.0"),
            ),
            (b"GET HTTP/1.0", Some(b"GET"), None, None, Some(b"HTTP/1.0")),
        ];
        for (line, m, p, q, pr) in cases {
            let mut r = Record::default();
            split_request(line, &mut r);
            let l = String::from_utf8_lossy(line);
            assert_eq!(r.method, *m, "{l}");
            assert_eq!(r.path, *p, "{l}");
            assert_eq!(r.query, *q, "{l}");
            assert_eq!(r.protocol, *pr, "{l}");
        }
    }
}
