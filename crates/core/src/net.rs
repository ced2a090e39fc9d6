//! Address helpers shared by every layer (parsing, classification, forensics, replay):
//! one canonical form per client address.

use std::net::IpAddr;

/// IPv4-mapped IPv6 (`::ffff:a.b.c.d`) as IPv4; everything else unchanged.
#[inline]
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_v6_becomes_v4() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(canonical(ip("::ffff:1.2.3.4")), ip("1.2.3.4"));
        assert_eq!(canonical(ip("1.2.3.4")), ip("1.2.3.4"));
        assert_eq!(canonical(ip("2001:db8::1")), ip("2001:db8::1"));
        // IPv4-compatible (deprecated `::a.b.c.d`) is not mapped: left as IPv6.
        assert_eq!(canonical(ip("::1.2.3.4")), ip("::1.2.3.4"));
    }
}
