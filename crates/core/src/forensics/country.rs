//! The country of a client address, from a database the user gives (`--asn-db`):
//! MaxMind's format (GeoLite2-Country or -City, DB-IP's country lite, IPinfo lite) or
//! iptoasn's TSV (its country column); nothing is downloaded.

use std::net::IpAddr;

use maxminddb::Reader;
use serde::Deserialize;

use super::asn::AsnDb;

/// A country database, read whole into memory.
pub enum CountryDb {
    /// MaxMind's format.
    Mmdb(Reader<Vec<u8>>),
    /// iptoasn's TSV.
    Asn(AsnDb),
}

/// A database that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CountryDbError {
    /// A damaged MaxMind database.
    #[error("a damaged MaxMind database (.mmdb): {0}")]
    Mmdb(String),
    /// Neither a MaxMind database nor iptoasn's TSV.
    #[error("neither a MaxMind database (.mmdb) nor iptoasn's TSV: {0}")]
    Tsv(String),
}

/// The marker before a MaxMind database's metadata.
const MMDB_MARKER: &[u8] = b"\xab\xcd\xefMaxMind.com";

#[derive(Deserialize)]
struct Record {
    country: Option<Country>,
    registered_country: Option<Country>,
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

impl CountryDb {
    /// The database in `bytes`: an `.mmdb` file's contents (found by MaxMind's
    /// metadata marker), else iptoasn's TSV.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<CountryDb, CountryDbError> {
        if memchr::memmem::rfind(&bytes, MMDB_MARKER).is_some() {
            let reader =
                Reader::from_source(bytes).map_err(|e| CountryDbError::Mmdb(e.to_string()))?;
            return Ok(CountryDb::Mmdb(reader));
        }
        let text = String::from_utf8_lossy(&bytes);
        AsnDb::parse(&text)
            .map(CountryDb::Asn)
            .map_err(|e| CountryDbError::Tsv(e.to_string()))
    }

    /// What the database says it is (`GeoLite2-Country`; `iptoasn` for the TSV).
    pub fn kind(&self) -> &str {
        match self {
            CountryDb::Mmdb(r) => &r.metadata().database_type,
            CountryDb::Asn(_) => "iptoasn",
        }
    }

    /// The country of `ip` as `DE Germany` (ISO 3166 code and English name; the code
    /// alone when the database has no name, as iptoasn's): where the address is, else
    /// where its network is registered. `None` when the database does not know it (or
    /// its record is damaged: a lookup never fails the report).
    pub fn country(&self, ip: IpAddr) -> Option<String> {
        let reader = match self {
            CountryDb::Mmdb(r) => r,
            CountryDb::Asn(db) => {
                let c = db.lookup(ip)?.country.as_str();
                return (!c.is_empty() && c != "None" && c != "-").then(|| c.to_string());
            }
        };
        let found = reader.lookup(ip).ok()?;
        let rec: Record = found.decode().ok()??;
        let c = rec
            .country
            .filter(|c| c.iso_code.is_some())
            .or(rec.registered_country)?;
        let code = c.iso_code?;
        Some(match c.names.and_then(|n| n.en) {
            Some(name) => format!("{code} {name}"),
            None => code,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> CountryDb {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/geo/country-test.mmdb"
        );
        CountryDb::from_bytes(std::fs::read(path).unwrap()).unwrap()
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

    #[test]
    fn iptoasn_s_country_column() {
        let tsv = "192.0.2.0\t192.0.2.255\t64500\tDE\tEXAMPLE-AS\n198.51.100.0\t198.51.100.255\t0\tNone\tNot routed\n";
        let db = CountryDb::from_bytes(tsv.as_bytes().to_vec()).unwrap();
        assert_eq!(
            db.country("192.0.2.9".parse().unwrap()).as_deref(),
            Some("DE")
        );
        assert_eq!(db.country("198.51.100.9".parse().unwrap()), None);
        assert_eq!(db.kind(), "iptoasn");
    }

    #[test]
    fn damaged_databases_are_errors() {
        assert!(CountryDb::from_bytes(b"not a database".to_vec()).is_err());
        let mut bytes = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/geo/country-test.mmdb"
        ))
        .unwrap();
        // Cut anywhere: an error or a database whose lookups may fail, never a panic.
        for cut in (0..bytes.len()).step_by(7) {
            if let Ok(db) = CountryDb::from_bytes(bytes[..cut].to_vec()) {
                let _ = db.country("192.0.2.1".parse().unwrap());
            }
        }
        // Flipped bytes in the tree and data: lookups answer or fail, never panic.
        for k in (0..bytes.len()).step_by(3) {
            bytes[k] ^= 0x5a;
            if let Ok(db) = CountryDb::from_bytes(bytes.clone()) {
                for ip in ["192.0.2.1", "198.51.100.7", "2001:db8:1::5"] {
                    let _ = db.country(ip.parse().unwrap());
                }
            }
            bytes[k] ^= 0x5a;
        }
    }
}
