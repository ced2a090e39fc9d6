//! Autonomous-system look-up from an ip2asn TSV file (iptoasn.com's `ip2asn-v4.tsv`,
//! `ip2asn-v6.tsv`, `ip2asn-combined.tsv` or `ip2asn-v4-u32.tsv`): one range per line,
//! `start <TAB> end <TAB> AS number <TAB> country <TAB> description`. AS 0 ("not
//! routed") counts as no AS.

use std::net::IpAddr;

use crate::net::canonical;

/// One autonomous system.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AsnInfo {
    /// AS number.
    pub asn: u32,
    /// Country code as given.
    pub country: String,
    /// Description (operator name).
    pub name: String,
}

/// Address ranges sorted by start.
#[derive(Clone, Debug, Default)]
pub struct AsnDb {
    ranges: Vec<(u128, u128, u32)>,
    infos: Vec<AsnInfo>,
}

fn key(ip: IpAddr) -> u128 {
    match canonical(ip) {
        IpAddr::V4(a) => 0xffff_0000_0000 | u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

fn unkey(k: u128) -> IpAddr {
    canonical(IpAddr::V6(std::net::Ipv6Addr::from(k)))
}

fn addr(s: &str) -> Option<u128> {
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(key(ip));
    }
    s.parse::<u32>()
        .ok()
        .map(|n| 0xffff_0000_0000 | u128::from(n))
}

/// A line of an `--asn-db` file that is not `start<TAB>end<TAB>asn[<TAB>country<TAB>name]`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: not `start<TAB>end<TAB>asn<TAB>country<TAB>name`")]
pub struct AsnError {
    /// 1-based line number.
    pub line: usize,
}

impl AsnDb {
    /// Parses the TSV text. Errors name the first bad line.
    pub fn parse(text: &str) -> Result<AsnDb, AsnError> {
        let mut db = AsnDb::default();
        let mut index: rustc_hash::FxHashMap<(u32, String, String), u32> = Default::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut f = line.split('\t');
            let bad = || AsnError { line: n + 1 };
            let (Some(s), Some(e), Some(a)) = (f.next(), f.next(), f.next()) else {
                return Err(bad());
            };
            let (Some(s), Some(e), Ok(asn)) =
                (addr(s.trim()), addr(e.trim()), a.trim().parse::<u32>())
            else {
                return Err(bad());
            };
            if asn == 0 || e < s {
                continue;
            }
            let country = f.next().unwrap_or("").trim().to_string();
            let name = f.next().unwrap_or("").trim().to_string();
            let k = (asn, country, name);
            let id = match index.get(&k) {
                Some(&i) => i,
                None => {
                    let i = db.infos.len() as u32;
                    db.infos.push(AsnInfo {
                        asn: k.0,
                        country: k.1.clone(),
                        name: k.2.clone(),
                    });
                    index.insert(k, i);
                    i
                }
            };
            db.ranges.push((s, e, id));
        }
        db.ranges.sort_unstable();
        Ok(db)
    }

    /// Number of ranges.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether there are no ranges.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The address ranges (first, last) of AS `asn`, in address order.
    pub fn ranges_of(&self, asn: u32) -> impl Iterator<Item = (IpAddr, IpAddr)> + '_ {
        self.ranges
            .iter()
            .filter(move |r| self.infos[r.2 as usize].asn == asn)
            .map(|&(s, e, _)| (unkey(s), unkey(e)))
    }

    /// The AS announcing `ip`, if any.
    pub fn lookup(&self, ip: IpAddr) -> Option<&AsnInfo> {
        let k = key(ip);
        let i = self.ranges.partition_point(|r| r.0 <= k);
        let (_, end, id) = *self.ranges.get(i.checked_sub(1)?)?;
        (k <= end).then(|| &self.infos[id as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups() {
        let db = AsnDb::parse(
            "1.0.0.0\t1.0.0.255\t13335\tUS\tCLOUDFLARENET\n\
             1.0.1.0\t1.0.3.255\t0\tNone\tNot routed\n\
             2001:db8::\t2001:db8:ffff:ffff:ffff:ffff:ffff:ffff\t64500\tZZ\tDOC-V6\n\
             16909056\t16909311\t64501\tZZ\tU32-FORM\n",
        )
        .unwrap();
        assert_eq!(db.len(), 3);
        assert_eq!(db.lookup("1.0.0.7".parse().unwrap()).unwrap().asn, 13335);
        assert!(db.lookup("1.0.2.1".parse().unwrap()).is_none());
        assert_eq!(
            db.lookup("2001:db8::5".parse().unwrap()).unwrap().name,
            "DOC-V6"
        );
        assert_eq!(db.lookup("1.2.3.4".parse().unwrap()).unwrap().asn, 64501);
        assert!(db.lookup("9.9.9.9".parse().unwrap()).is_none());
        assert!(AsnDb::parse("garbage\n").is_err());
    }
}
