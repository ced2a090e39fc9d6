//! Clients and networks: compact keys for addresses and prefixes (/24 and /48 by
//! default), and the real client behind trusted proxies from X-Forwarded-For.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

use crate::net::canonical;

/// A client or a network, small and hashable: an address or prefix as 128 bits (IPv4 in
/// the IPv4-mapped range) with its length, or a host name (an index into the
/// classifier's name table) for logs that record names instead of addresses. The bits
/// are two `u64` halves, not a `u128`: 24 bytes with 8-byte alignment instead of 32
/// with 16, which is a third of every per-client map's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ClientKey {
    /// An address (len 32/128) or network (shorter).
    Net {
        /// Network address bits, high half; IPv4 as `::ffff:a.b.c.d`.
        hi: u64,
        /// Network address bits, low half.
        lo: u64,
        /// Prefix length in the address family's own terms (0–32 for IPv4).
        len: u8,
        /// IPv4.
        v4: bool,
    },
    /// A client that is not an address (a host name), by name-table index.
    Name(u32),
}

const V4_MAPPED: u128 = 0xffff_0000_0000;

impl Hash for ClientKey {
    /// The same hash as a derived one over `Net { bits: u128, len, v4 }` gave: seeded
    /// samples and every map's order stay as they were with the 128-bit field.
    fn hash<H: Hasher>(&self, state: &mut H) {
        match *self {
            ClientKey::Net { hi, lo, len, v4 } => {
                0isize.hash(state);
                (u128::from(hi) << 64 | u128::from(lo)).hash(state);
                len.hash(state);
                v4.hash(state);
            }
            ClientKey::Name(i) => {
                1isize.hash(state);
                i.hash(state);
            }
        }
    }
}

impl ClientKey {
    /// The key of an address cut to `v4_len`/`v6_len` bits (lengths clamped).
    #[inline]
    pub fn prefix(ip: IpAddr, v4_len: u8, v6_len: u8) -> ClientKey {
        match canonical(ip) {
            IpAddr::V4(a) => {
                let len = v4_len.min(32);
                let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
                ClientKey::net_key(V4_MAPPED | u128::from(u32::from(a) & mask), len, true)
            }
            IpAddr::V6(a) => {
                let len = v6_len.min(128);
                let mask = if len == 0 {
                    0
                } else {
                    u128::MAX << (128 - len)
                };
                ClientKey::net_key(u128::from(a) & mask, len, false)
            }
        }
    }

    #[inline]
    fn net_key(bits: u128, len: u8, v4: bool) -> ClientKey {
        ClientKey::Net {
            hi: (bits >> 64) as u64,
            lo: bits as u64,
            len,
            v4,
        }
    }

    /// The address bits of an address or network (IPv4 as `::ffff:a.b.c.d`).
    #[inline]
    pub fn bits(&self) -> Option<u128> {
        match *self {
            ClientKey::Net { hi, lo, .. } => Some(u128::from(hi) << 64 | u128::from(lo)),
            ClientKey::Name(_) => None,
        }
    }

    /// The key of one address.
    #[inline]
    pub fn addr(ip: IpAddr) -> ClientKey {
        ClientKey::prefix(ip, 32, 128)
    }

    /// The network, for addresses and prefixes.
    pub fn net(&self) -> Option<IpNet> {
        match *self {
            ClientKey::Net {
                lo, len, v4: true, ..
            } => {
                let a = Ipv4Addr::from((lo & 0xffff_ffff) as u32);
                IpNet::new(IpAddr::V4(a), len).ok()
            }
            ClientKey::Net {
                hi,
                lo,
                len,
                v4: false,
            } => IpNet::new(
                IpAddr::V6(Ipv6Addr::from(u128::from(hi) << 64 | u128::from(lo))),
                len,
            )
            .ok(),
            ClientKey::Name(_) => None,
        }
    }

    /// The first address, for addresses and prefixes.
    pub fn ip(&self) -> Option<IpAddr> {
        self.net().map(|n| n.network())
    }

    /// Sort key that orders IPv4 before IPv6 numerically, then names by index.
    pub fn order(&self) -> (u8, u128, u8) {
        match *self {
            ClientKey::Net { hi, lo, len, v4 } => (
                if v4 { 0 } else { 1 },
                u128::from(hi) << 64 | u128::from(lo),
                len,
            ),
            ClientKey::Name(i) => (2, u128::from(i), 0),
        }
    }
}

impl fmt::Display for ClientKey {
    /// Addresses as `1.2.3.4`, networks as `1.2.3.0/24`; names print as `name#N` (the
    /// classifier resolves them, see [`crate::classify::Classifier::key_label`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.net() {
            Some(n) if n.prefix_len() == n.max_prefix_len() => write!(f, "{}", n.addr()),
            Some(n) => write!(f, "{n}"),
            None => match self {
                ClientKey::Name(i) => write!(f, "name#{i}"),
                _ => f.write_str("?"),
            },
        }
    }
}

/// Proxies whose X-Forwarded-For entries are believed (`--trust-proxy CIDR…`).
#[derive(Clone, Debug, Default)]
pub struct TrustedProxies {
    nets: Vec<IpNet>,
}

impl TrustedProxies {
    /// Trust these networks.
    pub fn new(nets: Vec<IpNet>) -> TrustedProxies {
        TrustedProxies { nets }
    }

    /// Whether no proxy is trusted (the logged client is the client).
    pub fn is_empty(&self) -> bool {
        self.nets.is_empty()
    }

    /// The trusted networks.
    pub fn nets(&self) -> &[IpNet] {
        &self.nets
    }

    /// Whether `ip` is a trusted proxy.
    #[inline]
    pub fn trusts(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.nets.iter().any(|n| n.contains(&ip))
    }

    /// The real client: when the connecting `peer` is a trusted proxy, the right-most
    /// X-Forwarded-For address that is not trusted (all trusted: the left-most one).
    /// An entry that is not an address stops the walk and gives `None` (the client
    /// cannot be told). Untrusted peers are the client, whatever their header says.
    pub fn real_client(&self, peer: Option<IpAddr>, xff: Option<&str>) -> Option<IpAddr> {
        let peer = peer?;
        if self.nets.is_empty() || !self.trusts(peer) {
            return Some(peer);
        }
        let Some(xff) = xff else {
            return Some(peer);
        };
        Self::walk(self, Some(peer), xff)
    }

    /// The real client of a line whose client field was a list of addresses (a proxy
    /// logged its X-Forwarded-For chain where the address goes; the last entry is the
    /// hop nearest the server): the right-most untrusted entry, all trusted: the
    /// left-most, an entry that is not an address: `None`.
    pub fn real_client_of_list(&self, list: &str) -> Option<IpAddr> {
        Self::walk(self, None, list)
    }

    fn walk(&self, peer: Option<IpAddr>, xff: &str) -> Option<IpAddr> {
        let mut last = peer;
        for part in xff.rsplit(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let ip = parse_hop(part.trim_matches('"'))?;
            if !self.trusts(ip) {
                return Some(ip);
            }
            last = Some(ip);
        }
        last
    }
}

/// An X-Forwarded-For hop: `1.2.3.4`, `1.2.3.4:567`, `2001:db8::1`, `[2001:db8::1]:443`,
/// `fe80::1%eth0` — the same rules as a logged client ([`crate::parse::client_ip`]).
#[inline]
fn parse_hop(s: &str) -> Option<IpAddr> {
    crate::parse::client_ip(s.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn keys_are_small_and_keep_their_order() {
        // Every per-client map pays for the key's size and alignment.
        assert_eq!(std::mem::size_of::<ClientKey>(), 24);
        assert_eq!(std::mem::align_of::<ClientKey>(), 8);
        let mut keys: Vec<ClientKey> = ["::1", "10.0.0.2", "2001:db8::1", "10.0.0.1", "ff00::"]
            .iter()
            .map(|s| ClientKey::addr(ip(s)))
            .collect();
        keys.sort();
        let mut by_order = keys.clone();
        by_order.sort_by_key(|k| k.order());
        let shown: Vec<String> = by_order.iter().map(|k| k.to_string()).collect();
        assert_eq!(
            shown,
            ["10.0.0.1", "10.0.0.2", "::1", "2001:db8::1", "ff00::"]
        );
        assert_eq!(
            ClientKey::prefix(ip("2001:db8:aa:bb::1"), 24, 48).bits(),
            Some(0x2001_0db8_00aa_u128 << 80)
        );
    }

    #[test]
    fn prefixes_and_display() {
        let k = ClientKey::prefix(ip("63.126.133.77"), 24, 48);
        assert_eq!(k.to_string(), "63.126.133.0/24");
        assert_eq!(k, ClientKey::prefix(ip("::ffff:63.126.133.1"), 24, 48));
        assert_eq!(
            ClientKey::addr(ip("82.82.97.119")).to_string(),
            "82.82.97.119"
        );
        let v6 = ClientKey::prefix(ip("2001:41d0:8:f69::1"), 24, 48);
        assert_eq!(v6.to_string(), "2001:41d0:8::/48");
        assert_eq!(
            ClientKey::prefix(ip("10.1.2.3"), 16, 64).to_string(),
            "10.1.0.0/16"
        );
        assert_eq!(
            ClientKey::prefix(ip("10.1.2.3"), 0, 0).to_string(),
            "0.0.0.0/0"
        );
        assert!(k.order() < v6.order());
        assert!(ClientKey::prefix(ip("9.0.0.1"), 24, 48).order() < k.order());
    }

    #[test]
    fn real_client_behind_proxies() {
        let t = TrustedProxies::new(vec![
            "10.0.0.0/8".parse().unwrap(),
            "2001:db8::/32".parse().unwrap(),
        ]);
        // Untrusted peer: its header is ignored.
        assert_eq!(
            t.real_client(Some(ip("1.2.3.4")), Some("5.6.7.8")),
            Some(ip("1.2.3.4"))
        );
        // Trusted peer: right-most untrusted hop.
        assert_eq!(
            t.real_client(Some(ip("10.0.0.1")), Some("6.6.6.6, 5.6.7.8, 10.0.0.9")),
            Some(ip("5.6.7.8"))
        );
        assert_eq!(
            t.real_client(Some(ip("10.0.0.1")), Some("[2001:db9::1]:443")),
            Some(ip("2001:db9::1"))
        );
        assert_eq!(
            t.real_client(Some(ip("10.0.0.1")), Some("5.6.7.8:1234")),
            Some(ip("5.6.7.8"))
        );
        // All trusted: the left-most; no header: the peer; garbage: unknown.
        assert_eq!(
            t.real_client(Some(ip("10.0.0.1")), Some("10.0.0.7, 10.0.0.8")),
            Some(ip("10.0.0.7"))
        );
        assert_eq!(
            t.real_client(Some(ip("10.0.0.1")), None),
            Some(ip("10.0.0.1"))
        );
        assert_eq!(t.real_client(Some(ip("10.0.0.1")), Some("unknown")), None);
        // A client list: read right to left, the last entry first.
        assert_eq!(
            t.real_client_of_list("1.2.3.4, 5.6.7.8, 10.0.0.1"),
            Some(ip("5.6.7.8"))
        );
        assert_eq!(
            t.real_client_of_list("1.2.3.4, 5.6.7.8"),
            Some(ip("5.6.7.8"))
        );
        assert_eq!(
            t.real_client_of_list("10.0.0.3, 10.0.0.1"),
            Some(ip("10.0.0.3"))
        );
        assert_eq!(t.real_client_of_list("x, 10.0.0.1"), None);
        assert_eq!(
            t.real_client(Some(ip("10.0.0.1")), Some("fe80::1%eth0, 10.0.0.2")),
            Some(ip("fe80::1"))
        );
        assert_eq!(
            t.real_client(Some(ip("10.0.0.1")), Some("::ffff:203.0.113.9")),
            Some(ip("203.0.113.9"))
        );
        assert_eq!(
            TrustedProxies::default().real_client(Some(ip("10.0.0.1")), Some("1.1.1.1")),
            Some(ip("10.0.0.1"))
        );
    }
}
