//! What a limit counts per: site-wide, per address, per network prefix, per agent, per
//! any field; and the helpers that turn a request into the key bytes.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use std::sync::Arc;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

use crate::forensics::netdb::NetworkDb;

use super::request::Request;

/// Default prefix length for IPv4 keys (`prefix`).
pub const DEFAULT_V4_PREFIX: u8 = 24;
/// Default prefix length for IPv6 keys (`prefix`).
pub const DEFAULT_V6_PREFIX: u8 = 48;

/// What one bucket is shared by.
///
/// A key that comes out empty (field missing or empty) makes the limit skip that request,
/// like nginx skips a `limit_req` whose key is empty.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KeySpec {
    /// One bucket for everybody.
    Site,
    /// Per client address (IPv4-mapped IPv6 counts as IPv4); the client text when the
    /// client is not an address.
    Ip,
    /// Per network: the address cut to `v4` bits (IPv4) or `v6` bits (IPv6).
    Prefix {
        /// IPv4 prefix length, 0–32.
        v4: u8,
        /// IPv6 prefix length, 0–128.
        v6: u8,
    },
    /// Per User-Agent string.
    Agent,
    /// Per Host.
    Host,
    /// Per authenticated user.
    User,
    /// Per method.
    Method,
    /// Per path (without query).
    Path,
    /// Per path and query.
    Uri,
    /// Per query string.
    Query,
    /// Per status code.
    Status,
    /// Per Referer.
    Referer,
    /// Per value of a field of the user's log format (`--log-format` variable,
    /// `--json-map` `field:` entry): an API key, a tenant.
    Field(FieldKey),
    /// Per autonomous system of the client's address, from the `--asn-db` database
    /// ([`KeySpec::bind_networks`]); a client the database does not place is not
    /// limited.
    Asn(AsnKey),
}

/// The database a `key=asn` looks addresses up in (bound before the first request;
/// every `AsnKey` compares equal: the key is the kind, the database is the run's).
#[derive(Clone, Default)]
pub struct AsnKey {
    db: Option<Arc<NetworkDb>>,
}

impl AsnKey {
    /// The AS number of `ip` (`None`: unbound, or not in the database).
    #[inline]
    pub fn asn(&self, ip: IpAddr) -> Option<u32> {
        self.db.as_ref()?.asn_number(canonical(ip))
    }

    /// Whether a database is bound.
    pub fn is_bound(&self) -> bool {
        self.db.is_some()
    }
}

impl PartialEq for AsnKey {
    fn eq(&self, _: &AsnKey) -> bool {
        true
    }
}

impl Eq for AsnKey {}

impl std::hash::Hash for AsnKey {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl fmt::Debug for AsnKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.db.is_some() {
            "AsnKey(bound)"
        } else {
            "AsnKey"
        })
    }
}

/// A field a key names (`key=field:NAME`) and where a [`Request`] carries it.
///
/// [`KeySpec::parse`] gives slot 0; the replay's caller binds every field key to the
/// slot its log format captures the field into ([`KeySpec::bind_field`]) before the
/// first request.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldKey {
    /// The name as written (`http_x_api_key`, `X-Api-Key`, `api_key`; no `$`).
    pub name: Box<str>,
    /// The slot of [`Request::fields`] that carries it.
    pub slot: u8,
    /// The request header it logs, when known (`http_…` names, or as the format says
    /// when bound): `--emit` writes such a key as the header.
    pub header: Option<Box<str>>,
}

impl FieldKey {
    /// A field key named `name` (a leading `$` dropped), not bound yet.
    pub fn new(name: &str) -> FieldKey {
        let n = name.trim();
        let n = n.strip_prefix('$').unwrap_or(n);
        FieldKey {
            name: n.into(),
            slot: 0,
            header: crate::parse::request_header(n).map(String::into_boxed_str),
        }
    }

    /// The nginx variable that holds it: `$http_x_api_key` for a header, else `$NAME`;
    /// `None` when the name is not a variable name.
    pub fn nginx_variable(&self) -> Option<String> {
        let var = match &self.header {
            Some(h) => crate::parse::header_variable(h),
            None => self.name.to_string(),
        };
        (!var.is_empty() && var.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_'))
            .then(|| format!("${var}"))
    }
}

/// Names accepted by [`KeySpec::parse`], for messages.
pub const KEY_NAMES: &str = "site, ip, prefix, prefix/N, prefix/N/M, asn, agent, host, user, method, path, uri, query, status, referer, field:NAME";

impl KeySpec {
    /// Parses `site`, `ip`, `prefix` (/24 and /48), `prefix/N` (IPv4 /N, IPv6 /48),
    /// `prefix/N/M` (IPv4 /N, IPv6 /M), `agent`, `host`, `user`, `method`, `path`, `uri`,
    /// `query`, `status`, `referer`, `field:NAME` (a field of the user's log format,
    /// `$` optional). `None` if it is none of these.
    pub fn parse(s: &str) -> Option<KeySpec> {
        let s = s.trim();
        if let Some(name) = s
            .get(..6)
            .filter(|p| p.eq_ignore_ascii_case("field:"))
            .map(|_| s[6..].trim())
        {
            let bare = name.strip_prefix('$').unwrap_or(name);
            // A name is what a format or a map can name: no separators of the spec
            // grammars, no spaces or controls.
            let ok = !bare.is_empty()
                && !bare.starts_with('$')
                && !bare.contains(|c: char| {
                    c.is_whitespace() || c.is_control() || matches!(c, ',' | '=' | '"' | '\'')
                });
            return ok.then(|| KeySpec::Field(FieldKey::new(name)));
        }
        let k = match s.to_ascii_lowercase().as_str() {
            "site" | "global" | "all" => KeySpec::Site,
            "ip" | "addr" | "address" | "client" | "client_ip" => KeySpec::Ip,
            "prefix" | "net" | "network" => KeySpec::Prefix {
                v4: DEFAULT_V4_PREFIX,
                v6: DEFAULT_V6_PREFIX,
            },
            "asn" | "as" => KeySpec::Asn(AsnKey::default()),
            "agent" | "ua" | "user-agent" | "user_agent" => KeySpec::Agent,
            "host" => KeySpec::Host,
            "user" => KeySpec::User,
            "method" => KeySpec::Method,
            "path" => KeySpec::Path,
            "uri" => KeySpec::Uri,
            "query" => KeySpec::Query,
            "status" => KeySpec::Status,
            "referer" | "referrer" => KeySpec::Referer,
            other => {
                let rest = other
                    .strip_prefix("prefix/")
                    .or_else(|| other.strip_prefix("net/"))?;
                let mut parts = rest.split('/');
                let v4: u8 = parts.next()?.parse().ok()?;
                let v6: u8 = match parts.next() {
                    Some(p) => p.parse().ok()?,
                    None => DEFAULT_V6_PREFIX,
                };
                if parts.next().is_some() || v4 > 32 || v6 > 128 {
                    return None;
                }
                KeySpec::Prefix { v4, v6 }
            }
        };
        Some(k)
    }

    /// Whether every request shares one bucket.
    pub fn is_site(&self) -> bool {
        matches!(self, KeySpec::Site)
    }

    /// The field a `field:NAME` key names.
    pub fn field(&self) -> Option<&FieldKey> {
        match self {
            KeySpec::Field(f) => Some(f),
            _ => None,
        }
    }

    /// Binds a `key=asn` to the database it looks addresses up in. No effect on other
    /// keys.
    pub fn bind_networks(&mut self, db: &Arc<NetworkDb>) {
        if let KeySpec::Asn(k) = self {
            k.db = Some(db.clone());
        }
    }

    /// Binds a `field:NAME` key to the slot of [`Request::fields`] its format captures
    /// it into, and the request header it logs when the format says it is one (kept
    /// as it was otherwise). No effect on other keys.
    pub fn bind_field(&mut self, slot: u8, header: Option<&str>) {
        if let KeySpec::Field(f) = self {
            f.slot = slot;
            if let Some(h) = header {
                f.header = Some(h.into());
            }
        }
    }

    /// Writes the key of `req` into `buf` (cleared first). Returns `false` when the
    /// request has no such key (the limit then skips it). The site key is empty.
    ///
    /// Bytes are compact and unambiguous within one key kind: an address is a tag byte
    /// plus 4 or 16 bytes, a prefix adds its length, text fields are copied as they are.
    #[inline]
    pub fn extract(&self, req: &Request<'_>, buf: &mut Vec<u8>) -> bool {
        buf.clear();
        match self {
            KeySpec::Site => true,
            KeySpec::Ip => match req.ip {
                Some(ip) => {
                    push_ip(buf, canonical(ip));
                    true
                }
                None => push_text(buf, b'h', Some(req.client)),
            },
            KeySpec::Prefix { v4, v6 } => match req.ip {
                Some(ip) => {
                    let net = prefix_of(ip, *v4, *v6);
                    push_ip(buf, net.network());
                    buf.push(net.prefix_len());
                    true
                }
                None => push_text(buf, b'h', Some(req.client)),
            },
            KeySpec::Agent => copy(buf, req.user_agent),
            KeySpec::Host => copy(buf, req.host),
            KeySpec::User => copy(buf, req.user),
            KeySpec::Method => copy(buf, req.method),
            KeySpec::Path => copy(buf, req.path),
            KeySpec::Query => copy(buf, req.query),
            KeySpec::Referer => copy(buf, req.referer),
            KeySpec::Field(f) => copy(buf, req.field(f.slot)),
            KeySpec::Asn(k) => match req.ip.and_then(|ip| k.asn(ip)) {
                Some(n) => {
                    buf.push(b'a');
                    buf.extend_from_slice(&n.to_be_bytes());
                    true
                }
                None => false,
            },
            KeySpec::Uri => {
                let Some(p) = req.path else { return false };
                buf.extend_from_slice(p);
                if let Some(q) = req.query {
                    buf.push(b'?');
                    buf.extend_from_slice(q);
                }
                !buf.is_empty()
            }
            KeySpec::Status => {
                if req.status == 0 {
                    return false;
                }
                buf.extend_from_slice(&req.status.to_be_bytes());
                true
            }
        }
    }

    /// The key of `req` for people: `site`, `203.0.113.7`, `203.0.113.0/24`, the agent…
    /// `None` when the request has no such key.
    pub fn display(&self, req: &Request<'_>) -> Option<String> {
        let text = |v: Option<&[u8]>| {
            v.filter(|b| !b.is_empty())
                .map(|b| String::from_utf8_lossy(b).into_owned())
        };
        match self {
            KeySpec::Site => Some("site".to_string()),
            KeySpec::Ip => match req.ip {
                Some(ip) => Some(canonical(ip).to_string()),
                None => text(Some(req.client)),
            },
            KeySpec::Prefix { v4, v6 } => match req.ip {
                Some(ip) => Some(prefix_of(ip, *v4, *v6).to_string()),
                None => text(Some(req.client)),
            },
            KeySpec::Agent => text(req.user_agent),
            KeySpec::Host => text(req.host),
            KeySpec::User => text(req.user),
            KeySpec::Method => text(req.method),
            KeySpec::Path => text(req.path),
            KeySpec::Query => text(req.query),
            KeySpec::Referer => text(req.referer),
            KeySpec::Field(f) => text(req.field(f.slot)),
            KeySpec::Asn(k) => req.ip.and_then(|ip| k.asn(ip)).map(|n| format!("AS{n}")),
            KeySpec::Uri => req.path.map(|p| {
                let mut s = String::from_utf8_lossy(p).into_owned();
                if let Some(q) = req.query {
                    s.push('?');
                    s.push_str(&String::from_utf8_lossy(q));
                }
                s
            }),
            KeySpec::Status => (req.status != 0).then(|| req.status.to_string()),
        }
    }

    /// In words: `site-wide`, `per client address`, `per /24 (IPv4) and /48 (IPv6)`…
    pub fn describe(&self) -> String {
        match self {
            KeySpec::Site => "site-wide (one bucket for everybody)".into(),
            KeySpec::Ip => "per client address".into(),
            KeySpec::Prefix { v4, v6 } => {
                format!("per network: /{v4} for IPv4, /{v6} for IPv6")
            }
            KeySpec::Agent => "per user agent".into(),
            KeySpec::Host => "per host".into(),
            KeySpec::User => "per authenticated user".into(),
            KeySpec::Method => "per method".into(),
            KeySpec::Path => "per path".into(),
            KeySpec::Uri => "per path and query".into(),
            KeySpec::Query => "per query string".into(),
            KeySpec::Status => "per status code".into(),
            KeySpec::Referer => "per referer".into(),
            KeySpec::Asn(_) => "per autonomous system (--asn-db)".into(),
            KeySpec::Field(f) => match &f.header {
                Some(h) if **h == *f.name => format!("per field {} (a request header)", f.name),
                Some(h) => format!("per field {} (request header {h})", f.name),
                None => format!("per field {}", f.name),
            },
        }
    }
}

impl fmt::Display for KeySpec {
    /// The spec form ([`KeySpec::parse`] reads it back).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeySpec::Site => f.write_str("site"),
            KeySpec::Ip => f.write_str("ip"),
            KeySpec::Prefix { v4, v6 } if *v6 == DEFAULT_V6_PREFIX => {
                if *v4 == DEFAULT_V4_PREFIX {
                    f.write_str("prefix")
                } else {
                    write!(f, "prefix/{v4}")
                }
            }
            KeySpec::Prefix { v4, v6 } => write!(f, "prefix/{v4}/{v6}"),
            KeySpec::Agent => f.write_str("agent"),
            KeySpec::Host => f.write_str("host"),
            KeySpec::User => f.write_str("user"),
            KeySpec::Method => f.write_str("method"),
            KeySpec::Path => f.write_str("path"),
            KeySpec::Uri => f.write_str("uri"),
            KeySpec::Query => f.write_str("query"),
            KeySpec::Status => f.write_str("status"),
            KeySpec::Referer => f.write_str("referer"),
            KeySpec::Field(k) => write!(f, "field:{}", k.name),
            KeySpec::Asn(_) => f.write_str("asn"),
        }
    }
}

pub use crate::net::canonical;

/// The network of `ip`: cut to `v4_len` bits for IPv4 (and IPv4-mapped IPv6), `v6_len`
/// bits for IPv6. Lengths beyond the address size are clamped.
#[inline]
pub fn prefix_of(ip: IpAddr, v4_len: u8, v6_len: u8) -> IpNet {
    match canonical(ip) {
        IpAddr::V4(a) => IpNet::V4(v4_net(a, v4_len)),
        IpAddr::V6(a) => IpNet::V6(v6_net(a, v6_len)),
    }
}

fn v4_net(a: Ipv4Addr, len: u8) -> Ipv4Net {
    let len = len.min(32);
    Ipv4Net::new(a, len).expect("length clamped").trunc()
}

fn v6_net(a: Ipv6Addr, len: u8) -> Ipv6Net {
    let len = len.min(128);
    Ipv6Net::new(a, len).expect("length clamped").trunc()
}

#[inline]
fn push_ip(buf: &mut Vec<u8>, ip: IpAddr) {
    match ip {
        IpAddr::V4(a) => {
            buf.push(4);
            buf.extend_from_slice(&a.octets());
        }
        IpAddr::V6(a) => {
            buf.push(6);
            buf.extend_from_slice(&a.octets());
        }
    }
}

#[inline]
fn push_text(buf: &mut Vec<u8>, tag: u8, v: Option<&[u8]>) -> bool {
    match v {
        Some(b) if !b.is_empty() => {
            buf.push(tag);
            buf.extend_from_slice(b);
            true
        }
        _ => false,
    }
}

#[inline]
fn copy(buf: &mut Vec<u8>, v: Option<&[u8]>) -> bool {
    match v {
        Some(b) if !b.is_empty() => {
            buf.extend_from_slice(b);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_keys() {
        assert_eq!(KeySpec::parse("site"), Some(KeySpec::Site));
        assert_eq!(
            KeySpec::parse("prefix"),
            Some(KeySpec::Prefix { v4: 24, v6: 48 })
        );
        assert_eq!(
            KeySpec::parse("prefix/16"),
            Some(KeySpec::Prefix { v4: 16, v6: 48 })
        );
        assert_eq!(
            KeySpec::parse("prefix/24/64"),
            Some(KeySpec::Prefix { v4: 24, v6: 64 })
        );
        assert_eq!(KeySpec::parse("prefix/33"), None);
        assert_eq!(KeySpec::parse("colour"), None);
        for s in ["site", "ip", "prefix", "prefix/16", "prefix/24/64", "agent"] {
            assert_eq!(KeySpec::parse(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn prefixes_group_neighbours() {
        let a: IpAddr = "203.0.113.7".parse().unwrap();
        let b: IpAddr = "::ffff:203.0.113.200".parse().unwrap();
        let c: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        assert_eq!(prefix_of(a, 24, 48).to_string(), "203.0.113.0/24");
        assert_eq!(prefix_of(b, 24, 48), prefix_of(a, 24, 48));
        assert_eq!(prefix_of(c, 24, 48).to_string(), "2001:db8:1::/48");
        let k = KeySpec::parse("prefix").unwrap();
        let (mut ka, mut kb) = (Vec::new(), Vec::new());
        let ra = Request {
            ip: Some(a),
            ..Default::default()
        };
        let rb = Request {
            ip: Some(b),
            ..Default::default()
        };
        assert!(k.extract(&ra, &mut ka) && k.extract(&rb, &mut kb));
        assert_eq!(ka, kb);
        assert_eq!(k.display(&rb).unwrap(), "203.0.113.0/24");
    }

    #[test]
    fn parses_field_keys() {
        let k = KeySpec::parse("field:http_x_api_key").unwrap();
        let f = k.field().unwrap();
        assert_eq!(&*f.name, "http_x_api_key");
        assert_eq!((f.slot, f.header.as_deref()), (0, Some("X-Api-Key")));
        // `$` optional, the prefix in any case, the name kept as written.
        let k = KeySpec::parse(" FIELD:$X-Api-Key ").unwrap();
        assert_eq!(&*k.field().unwrap().name, "X-Api-Key");
        assert_eq!(k.field().unwrap().header, None);
        assert_eq!(k.to_string(), "field:X-Api-Key");
        for s in ["field:api_key", "field:http_x_api_key", "field:a.b:c"] {
            let k = KeySpec::parse(s).unwrap();
            assert_eq!(k.to_string(), s);
            assert_eq!(KeySpec::parse(&k.to_string()), Some(k));
        }
        for bad in [
            "field:",
            "field:$",
            "field:$$x",
            "field:a b",
            "field:a,b",
            "field:a=b",
        ] {
            assert_eq!(KeySpec::parse(bad), None, "{bad}");
        }
        assert_eq!(KeySpec::parse("header:X-Api-Key"), None);
        assert_eq!(
            KeySpec::parse("field:api_key").unwrap().describe(),
            "per field api_key"
        );
        // In a spec, and in TOML.
        let s = crate::replay::LimitSpec::parse("300/1m,key=field:$api_key").unwrap();
        assert_eq!(s.key, KeySpec::Field(FieldKey::new("api_key")));
        assert_eq!(s.to_string(), "300/m,key=field:api_key");
        let p = crate::replay::Policy::from_toml(
            "[[zones]]\nname = \"api\"\nrate = \"300/1m\"\nkey = \"field:api_key\"\n[[rules]]\nname = \"all\"\nzone = \"api\"\n",
        )
        .unwrap();
        assert_eq!(
            p.field_keys().map(|f| &*f.name).collect::<Vec<_>>(),
            ["api_key"]
        );
        let e = crate::replay::LimitSpec::parse("300/1m,key=header:X-Api-Key").unwrap_err();
        assert!(e.to_string().contains("field:NAME"), "{e}");
    }

    #[test]
    fn field_keys_read_their_bound_slot() {
        let mut k = KeySpec::parse("field:X-Api-Key").unwrap();
        k.bind_field(2, Some("X-Api-Key"));
        let f = k.field().unwrap();
        assert_eq!((f.slot, f.header.as_deref()), (2, Some("X-Api-Key")));
        assert_eq!(f.nginx_variable().as_deref(), Some("$http_x_api_key"));
        assert_eq!(
            FieldKey::new("api_key").nginx_variable().as_deref(),
            Some("$api_key")
        );
        assert_eq!(FieldKey::new("a.b").nginx_variable(), None);
        let mut buf = Vec::new();
        let mut r = Request::default();
        r.fields[2] = Some(b"key-1");
        assert!(k.extract(&r, &mut buf));
        assert_eq!(buf, b"key-1");
        assert_eq!(k.display(&r).as_deref(), Some("key-1"));
        // Absent, empty or `-`: no key, the limit skips the request.
        for v in [None, Some(&b""[..]), Some(b"-")] {
            r.fields[2] = v;
            assert!(!k.extract(&r, &mut buf));
            assert_eq!(k.display(&r), None);
        }
        // Another slot's value is not this key's.
        r.fields[0] = Some(b"key-0");
        assert!(!k.extract(&r, &mut buf));
    }

    #[test]
    fn missing_fields_skip() {
        let mut buf = Vec::new();
        let r = Request::default();
        assert!(!KeySpec::Agent.extract(&r, &mut buf));
        assert!(!KeySpec::Ip.extract(&r, &mut buf));
        assert!(KeySpec::Site.extract(&r, &mut buf));
        assert!(buf.is_empty());
    }
}
