//! What a client address's network is — its autonomous system and its country — from
//! the database the user gives (`--asn-db`): MaxMind's format (GeoLite2-ASN, -Country or
//! -City, DB-IP's lite databases, IPinfo lite) or iptoasn's TSV; nothing is downloaded.

use std::net::IpAddr;
use std::sync::Arc;

use ipnet::{IpNet, Ipv4Subnets, Ipv6Subnets};
use maxminddb::Reader;
use rustc_hash::FxHashMap;
use serde::Deserialize;

use super::asn::{AsnDb, AsnInfo};

/// A network database, read whole into memory.
pub enum NetworkDb {
    /// MaxMind's format.
    Mmdb(Reader<Vec<u8>>),
    /// iptoasn's TSV.
    Asn(AsnDb),
}

/// A database that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum NetworkDbError {
    /// A damaged MaxMind database.
    #[error("a damaged MaxMind database (.mmdb): {0}")]
    Mmdb(String),
    /// Neither a MaxMind database nor iptoasn's TSV.
    #[error("neither a MaxMind database (.mmdb) nor iptoasn's TSV: {0}")]
    Tsv(String),
}

/// The marker before a MaxMind database's metadata.
const MMDB_MARKER: &[u8] = b"\xab\xcd\xefMaxMind.com";

/// The fields logscope reads of a record, in any of the layouts: MaxMind's and DB-IP's
/// (`country` a map, `autonomous_system_number`/`_organization`) and IPinfo lite's
/// (`country_code`, `country` a name, `asn` as `AS15169`, `as_name`).
#[derive(Deserialize)]
struct Record {
    country: Option<CountryField>,
    registered_country: Option<CountryField>,
    country_code: Option<String>,
    autonomous_system_number: Option<u32>,
    autonomous_system_organization: Option<String>,
    asn: Option<String>,
    as_name: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum CountryField {
    Map(Country),
    Name(String),
}

#[derive(Deserialize)]
struct Country {
    iso_code: Option<String>,
    names: Option<Names>,
}

#[derive(Deserialize)]
struct Names {
    en: Option<String>,
}

impl NetworkDb {
    /// The database in `bytes`: an `.mmdb` file's contents (found by MaxMind's
    /// metadata marker), else iptoasn's TSV.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<NetworkDb, NetworkDbError> {
        if memchr::memmem::rfind(&bytes, MMDB_MARKER).is_some() {
            let reader =
                Reader::from_source(bytes).map_err(|e| NetworkDbError::Mmdb(e.to_string()))?;
            return Ok(NetworkDb::Mmdb(reader));
        }
        let text = String::from_utf8_lossy(&bytes);
        AsnDb::parse(&text)
            .map(NetworkDb::Asn)
            .map_err(|e| NetworkDbError::Tsv(e.to_string()))
    }

    /// What the database says it is (`GeoLite2-Country`; `iptoasn` for the TSV).
    pub fn kind(&self) -> &str {
        match self {
            NetworkDb::Mmdb(r) => &r.metadata().database_type,
            NetworkDb::Asn(_) => "iptoasn",
        }
    }

    /// The record of `ip` in an mmdb; `None` where there is none or it is damaged (a
    /// lookup never fails the report).
    fn record(reader: &Reader<Vec<u8>>, ip: IpAddr) -> Option<Record> {
        reader.lookup(ip).ok()?.decode().ok()?
    }

    /// The country of `ip` as `DE Germany` (ISO 3166 code and English name; the code
    /// alone when the database has no name, as iptoasn's): where the address is, else
    /// where its network is registered. `None` when the database does not know it.
    pub fn country(&self, ip: IpAddr) -> Option<String> {
        let reader = match self {
            NetworkDb::Mmdb(r) => r,
            NetworkDb::Asn(db) => {
                let c = db.lookup(ip)?.country.as_str();
                return (!c.is_empty() && c != "None" && c != "-").then(|| c.to_string());
            }
        };
        let rec = Self::record(reader, ip)?;
        let label = |code: String, name: Option<String>| match name {
            Some(name) => format!("{code} {name}"),
            None => code,
        };
        let (mut name, mut map) = (None, None);
        for f in [rec.country, rec.registered_country].into_iter().flatten() {
            match f {
                CountryField::Map(c) if map.is_none() && c.iso_code.is_some() => map = Some(c),
                CountryField::Name(n) if name.is_none() => name = Some(n),
                _ => {}
            }
        }
        if let Some(c) = map {
            return Some(label(c.iso_code?, c.names.and_then(|n| n.en)));
        }
        // IPinfo lite: `country_code`, and `country` as a name.
        let code = rec.country_code.filter(|c| !c.is_empty())?;
        Some(label(code, name))
    }

    /// The autonomous system announcing `ip`: its number and its name (`AS15169
    /// GOOGLE`). `None` when the database does not know it, or has no AS (a country
    /// database).
    pub fn autonomous_system(&self, ip: IpAddr) -> Option<(u32, String)> {
        let reader = match self {
            NetworkDb::Mmdb(r) => r,
            NetworkDb::Asn(db) => {
                let a = db.lookup(ip)?;
                return Some((a.asn, a.name.clone()));
            }
        };
        let rec = Self::record(reader, ip)?;
        if let Some(n) = rec.autonomous_system_number {
            return Some((n, rec.autonomous_system_organization.unwrap_or_default()));
        }
        // IPinfo lite: `asn` as "AS15169".
        let n = rec.asn?.strip_prefix("AS")?.parse().ok()?;
        Some((n, rec.as_name.unwrap_or_default()))
    }

    /// The AS number of `ip` alone, without its name (a replay's `key=asn`, per
    /// request: no allocation).
    pub fn asn_number(&self, ip: IpAddr) -> Option<u32> {
        #[derive(Deserialize)]
        struct Number<'a> {
            autonomous_system_number: Option<u32>,
            #[serde(borrow)]
            asn: Option<&'a str>,
        }
        match self {
            NetworkDb::Asn(db) => db.lookup(ip).map(|a| a.asn),
            NetworkDb::Mmdb(r) => {
                let rec: Number<'_> = r.lookup(ip).ok()?.decode().ok()??;
                rec.autonomous_system_number
                    .or_else(|| rec.asn?.strip_prefix("AS")?.parse().ok())
            }
        }
    }

    /// The autonomous system of `ip` with its country code (`concentration`'s AS
    /// column).
    pub fn as_info(&self, ip: IpAddr) -> Option<AsnInfo> {
        if let NetworkDb::Asn(db) = self {
            return db.lookup(ip).cloned();
        }
        let (asn, name) = self.autonomous_system(ip)?;
        let country = self
            .country(ip)
            .map(|c| c.split(' ').next().unwrap_or_default().to_string())
            .unwrap_or_default();
        Some(AsnInfo { asn, country, name })
    }

    /// The prefixes the database gives autonomous system `asn` (to write a block of a
    /// whole AS as CIDRs), aggregated; at most `cap` of them (`None`: more).
    pub fn networks_of(&self, asn: u32, cap: usize) -> Option<Vec<IpNet>> {
        let mut nets: Vec<IpNet> = Vec::new();
        match self {
            NetworkDb::Asn(db) => {
                for (first, last) in db.ranges_of(asn) {
                    match (first, last) {
                        (IpAddr::V4(a), IpAddr::V4(b)) => {
                            nets.extend(Ipv4Subnets::new(a, b, 0).map(IpNet::V4))
                        }
                        (IpAddr::V6(a), IpAddr::V6(b)) => {
                            nets.extend(Ipv6Subnets::new(a, b, 0).map(IpNet::V6))
                        }
                        _ => {}
                    }
                    if nets.len() > cap {
                        return None;
                    }
                }
            }
            NetworkDb::Mmdb(reader) => {
                let all = reader.networks(Default::default()).ok()?;
                for item in all {
                    let Ok(item) = item else { continue };
                    let Ok(Some(rec)) = item.decode::<Record>() else {
                        continue;
                    };
                    let n = rec.autonomous_system_number.or_else(|| {
                        rec.asn
                            .as_deref()
                            .and_then(|a| a.strip_prefix("AS"))
                            .and_then(|a| a.parse().ok())
                    });
                    if n != Some(asn) {
                        continue;
                    }
                    if let Ok(net) = item.network()
                        && let Ok(net) = IpNet::new(net.ip(), net.prefix())
                    {
                        nets.push(net);
                    }
                    if nets.len() > cap {
                        return None;
                    }
                }
            }
        }
        Some(IpNet::aggregate(&nets))
    }

    /// [`NetworkDb::autonomous_system`] as a label: `AS15169 GOOGLE`.
    pub fn as_label(&self, ip: IpAddr) -> Option<String> {
        self.autonomous_system(ip).map(|(n, name)| {
            if name.is_empty() {
                format!("AS{n}")
            } else {
                format!("AS{n} {name}")
            }
        })
    }
}

impl std::fmt::Debug for NetworkDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NetworkDb({})", self.kind())
    }
}

/// `--asn` and `--country`: keep the clients whose network is one of these (both
/// given: both must hold). Each distinct address is looked up once (memory: ~20 bytes
/// per distinct address seen).
#[derive(Clone, Debug)]
pub struct NetworkFilter {
    db: Arc<NetworkDb>,
    asns: Vec<u32>,
    countries: Vec<String>,
    memo: FxHashMap<IpAddr, bool>,
}

impl NetworkFilter {
    /// Keeps the addresses `db` places in one of `asns` (none: any) and one of
    /// `countries` (ISO codes, upper-case; none: any).
    pub fn new(db: Arc<NetworkDb>, asns: Vec<u32>, countries: Vec<String>) -> NetworkFilter {
        NetworkFilter {
            db,
            asns,
            countries,
            memo: FxHashMap::default(),
        }
    }

    /// Whether the client at `ip` is kept (a client without an address never is).
    pub fn keeps(&mut self, ip: Option<IpAddr>) -> bool {
        let Some(ip) = ip else { return false };
        if let Some(&k) = self.memo.get(&ip) {
            return k;
        }
        let asn_ok = self.asns.is_empty()
            || self
                .db
                .autonomous_system(ip)
                .is_some_and(|(n, _)| self.asns.contains(&n));
        let country_ok = asn_ok
            && (self.countries.is_empty()
                || self.db.country(ip).is_some_and(|c| {
                    let code = c.split(' ').next().unwrap_or_default();
                    self.countries.iter().any(|x| x.eq_ignore_ascii_case(code))
                }));
        self.memo.insert(ip, country_ok);
        country_ok
    }

    /// For report headers: `AS64496, AS64497 in DE`.
    pub fn describe(&self) -> String {
        let asns: Vec<String> = self.asns.iter().map(|n| format!("AS{n}")).collect();
        match (asns.is_empty(), self.countries.is_empty()) {
            (false, false) => format!("{} in {}", asns.join(", "), self.countries.join(", ")),
            (false, true) => asns.join(", "),
            _ => format!("in {}", self.countries.join(", ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> NetworkDb {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/geo/country-test.mmdb"
        );
        NetworkDb::from_bytes(std::fs::read(path).unwrap()).unwrap()
    }

    #[test]
    fn countries_of_addresses() {
        let db = db();
        for (ip, want) in [
            ("192.0.2.1", Some("DE Germany")),
            ("192.0.2.200", Some("FR France")),
            ("198.51.100.7", Some("KR South Korea")),
            ("2001:db8:1::5", Some("JP Japan")),
            ("203.0.113.1", None),
            ("2001:db8:2::1", None),
        ] {
            assert_eq!(db.country(ip.parse().unwrap()).as_deref(), want, "{ip}");
        }
        assert_eq!(db.kind(), "logscope-test-country");
    }

    fn fixture(name: &str) -> NetworkDb {
        let path = format!("{}/../../fixtures/geo/{name}", env!("CARGO_MANIFEST_DIR"));
        NetworkDb::from_bytes(std::fs::read(path).unwrap()).unwrap()
    }

    #[test]
    fn autonomous_systems_in_maxmind_s_and_ipinfo_s_layouts() {
        let asn = fixture("asn-test.mmdb");
        let ipinfo = fixture("ipinfo-test.mmdb");
        for (ip, want) in [
            ("192.0.2.1", Some("AS64496 EXAMPLE-HOSTING")),
            ("198.51.100.7", Some("AS64497 EXAMPLE-RESIDENTIAL")),
            ("2001:db8:1::5", Some("AS64498 EXAMPLE-V6")),
            ("203.0.113.1", None),
        ] {
            assert_eq!(asn.as_label(ip.parse().unwrap()).as_deref(), want, "{ip}");
        }
        // A database of AS numbers has no countries, and one of countries no AS.
        assert_eq!(asn.country("192.0.2.1".parse().unwrap()), None);
        assert_eq!(db().as_label("192.0.2.1".parse().unwrap()), None);
        // IPinfo lite: both, its country a code and a name.
        let ip = "192.0.2.1".parse().unwrap();
        assert_eq!(ipinfo.country(ip).as_deref(), Some("DE Germany"));
        assert_eq!(
            ipinfo.autonomous_system(ip),
            Some((64496, "EXAMPLE-HOSTING".into()))
        );
    }

    #[test]
    fn iptoasn_s_country_column() {
        let tsv = "192.0.2.0\t192.0.2.255\t64500\tDE\tEXAMPLE-AS\n198.51.100.0\t198.51.100.255\t0\tNone\tNot routed\n";
        let db = NetworkDb::from_bytes(tsv.as_bytes().to_vec()).unwrap();
        assert_eq!(
            db.country("192.0.2.9".parse().unwrap()).as_deref(),
            Some("DE")
        );
        assert_eq!(db.country("198.51.100.9".parse().unwrap()), None);
        assert_eq!(db.kind(), "iptoasn");
    }

    #[test]
    fn damaged_databases_are_errors() {
        assert!(NetworkDb::from_bytes(b"not a database".to_vec()).is_err());
        let mut bytes = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/geo/country-test.mmdb"
        ))
        .unwrap();
        // Cut anywhere: an error or a database whose lookups may fail, never a panic.
        for cut in (0..bytes.len()).step_by(7) {
            if let Ok(db) = NetworkDb::from_bytes(bytes[..cut].to_vec()) {
                let _ = db.country("192.0.2.1".parse().unwrap());
            }
        }
        // Flipped bytes in the tree and data: lookups answer or fail, never panic.
        for k in (0..bytes.len()).step_by(3) {
            bytes[k] ^= 0x5a;
            if let Ok(db) = NetworkDb::from_bytes(bytes.clone()) {
                for ip in ["192.0.2.1", "198.51.100.7", "2001:db8:1::5"] {
                    let _ = db.country(ip.parse().unwrap());
                }
            }
            bytes[k] ^= 0x5a;
        }
    }
}
