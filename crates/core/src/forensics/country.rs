//! The country of a client address, from a database in MaxMind's format that the user
//! gives (`--country-db`: GeoLite2-Country or -City, DB-IP's country lite, …); nothing
//! is downloaded.

use std::net::IpAddr;

use maxminddb::Reader;
use serde::Deserialize;

/// The largest database read (GeoLite2-City is about 70 MiB).
pub const COUNTRY_DB_CAP: u64 = 512 << 20;

/// A country database, read whole into memory.
pub struct CountryDb {
    reader: Reader<Vec<u8>>,
}

/// A database that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CountryDbError {
    /// Not a MaxMind database, or a damaged one.
    #[error("not a MaxMind database (.mmdb): {0}")]
    Format(String),
}

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
    /// The database in `bytes` (an `.mmdb` file's contents).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<CountryDb, CountryDbError> {
        let reader =
            Reader::from_source(bytes).map_err(|e| CountryDbError::Format(e.to_string()))?;
        Ok(CountryDb { reader })
    }

    /// What the database says it is (`GeoLite2-Country`).
    pub fn kind(&self) -> &str {
        &self.reader.metadata().database_type
    }

    /// The country of `ip` as `DE Germany` (ISO 3166 code and English name; the code
    /// alone when the database has no name): where the address is, else where its
    /// network is registered. `None` when the database does not know it (or its record
    /// is damaged: a lookup never fails the report).
    pub fn country(&self, ip: IpAddr) -> Option<String> {
        let found = self.reader.lookup(ip).ok()?;
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
