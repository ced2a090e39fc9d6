//! A database file a flag names (`--asn-db`): read whole and bounded,
//! every error naming the flag and the file.

use std::path::Path;

use logscope_core::forensics::netdb::NetworkDb;
use logscope_core::{conf_file, escape};

/// The `--asn-db` network database at `path`: iptoasn's TSV or an .mmdb. A file that
/// is neither is a usage error (exit 2).
pub fn network_db(path: &Path) -> anyhow::Result<NetworkDb> {
    let bytes = read("--asn-db", path, conf_file::ASN_DB_CAP)?;
    NetworkDb::from_bytes(bytes)
        .map_err(|e| super::usage_error(format!("--asn-db {}: {e}", escape::path(path))))
}

/// The bytes of `path`, given as `flag`: at most `cap` of them, a regular file. A file
/// that is not one, or too large, is a usage error (exit 2); one that cannot be read an
/// error with the reason.
pub fn read(flag: &str, path: &Path, cap: u64) -> anyhow::Result<Vec<u8>> {
    match conf_file::read(path, cap) {
        Ok(b) => Ok(b),
        Err(e) if e.is_refusal() => Err(super::usage_error(format!("{flag}: {e}"))),
        Err(conf_file::ReadError::Io { source, .. }) => Err(anyhow::Error::new(source)
            .context(format!("{flag}: cannot read {}", escape::path(path)))),
        Err(e) => Err(anyhow::anyhow!("{flag}: {e}")),
    }
}
