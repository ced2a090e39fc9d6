//! A snapshot's manifest: which sources were ingested (and how far), and which Parquet
//! part files make up the snapshot. Written once into each snapshot directory.

use std::fs;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::StoreError;

/// The dataset format this logscope reads and writes (layout, manifest and column
/// types; see `frame::COLUMNS`). Format 1 was `manifest.json` + `month=…/` parts with
/// unsigned columns. Format 2 stored a byte that is not UTF-8 as `\xHH` but a backslash
/// as itself (so the two could look alike) and had no `client_list` column; it is read
/// (as it was written) but not written to.
pub const VERSION: u32 = 3;

/// The oldest dataset format this logscope reads.
pub const OLDEST_READ: u32 = 2;

/// Bytes of content a source's fingerprint covers (at most).
pub const FINGERPRINT_LEN: usize = 4096;

/// The whole manifest.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Manifest {
    /// Dataset format version ([`VERSION`]).
    pub version: u32,
    /// Ingests so far; the next ingest's id is `ingests + 1`.
    pub ingests: u64,
    /// Every source seen, in first-seen order.
    pub sources: Vec<SourceEntry>,
    /// Every committed part file, in commit order.
    pub parts: Vec<PartEntry>,
}

/// One ingested source, identified by its content, not its path.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SourceEntry {
    /// xxh3-64 of the first `fingerprint_len` bytes of content, hex.
    pub fingerprint: String,
    /// How many bytes the fingerprint covers.
    pub fingerprint_len: usize,
    /// Paths this content has been seen under (e.g. access.log, access.log.1.gz).
    pub names: Vec<String>,
    /// Format used.
    pub format: String,
    /// Content bytes consumed so far (decompressed).
    pub content_bytes: u64,
    /// Lines consumed so far.
    pub lines: u64,
    /// Records stored from it.
    pub records: u64,
    /// Bad lines found in it.
    pub bad: u64,
    /// Compressed files (gzip, zstd) holding this content that were read to their end
    /// without damage: the same file later is skipped without decompressing it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compressed: Vec<CompressedCopy>,
}

/// A compressed file, identified by its size and the fingerprint of its first bytes.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct CompressedCopy {
    /// Size on disk.
    pub size: u64,
    /// xxh3-64 of its first [`FINGERPRINT_LEN`] bytes as stored (compressed), hex.
    pub fingerprint: String,
}

/// One Parquet part file.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PartEntry {
    /// File name inside the snapshot directory (`2025-09-0000000001-000.parquet`): a
    /// plain name, never a path.
    pub file: String,
    /// UTC month of its rows (`2025-09`).
    pub month: String,
    /// Rows in the file.
    pub rows: u64,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// Earliest arrival in the file, UTC ms.
    pub min_ts_ms: i64,
    /// Latest arrival in the file, UTC ms.
    pub max_ts_ms: i64,
    /// Which ingest wrote it.
    pub ingest: u64,
    /// Its consecutive runs of rows in file order with their time range (one per
    /// write, about 64 Ki rows): a time filter reads only the runs it overlaps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<Segment>,
    /// Checksums of its footer and column chunks (`None`: written before logscope
    /// took them; such a part is read unchecked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sums: Option<PartSums>,
}

/// A part's xxh3-64 checksums, in hex (see `store::checksum`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct PartSums {
    /// Of the footer: the Parquet metadata and the 8 bytes after it.
    pub footer: String,
    /// One string per row group: each column chunk's checksum in the file's column
    /// order, 16 hex digits each.
    pub chunks: Vec<String>,
}

/// A run of consecutive rows of a part and the time range they cover.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Segment {
    /// Rows in the run.
    pub rows: u64,
    /// Earliest arrival in the run, UTC ms.
    pub min_ts_ms: i64,
    /// Latest arrival in the run, UTC ms.
    pub max_ts_ms: i64,
}

impl Manifest {
    /// An empty manifest of the current version.
    pub fn empty() -> Manifest {
        Manifest {
            version: VERSION,
            ..Manifest::default()
        }
    }

    /// Reads the manifest of the snapshot directory `dir`.
    pub fn load(dir: &Path) -> Result<Manifest, StoreError> {
        let path = dir.join(super::MANIFEST);
        let bytes = fs::read(&path).map_err(super::io_err(&path))?;
        let corrupt = |detail: String| StoreError::Corrupt {
            path: path.clone(),
            detail,
        };
        let m: Manifest = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
        if !(OLDEST_READ..=VERSION).contains(&m.version) {
            return Err(corrupt(format!(
                "dataset format {} is not supported (this logscope reads {OLDEST_READ} to {VERSION})",
                m.version
            )));
        }
        for p in &m.parts {
            if !is_plain_part_name(&p.file) {
                return Err(corrupt(format!(
                    "part name {:?} is not a plain *.parquet file name",
                    p.file
                )));
            }
        }
        Ok(m)
    }

    /// Writes the manifest into the (not yet visible) snapshot directory `dir`, fsynced.
    pub fn save(&self, dir: &Path) -> Result<(), StoreError> {
        let path = dir.join(super::MANIFEST);
        let mut f = fs::File::create(&path).map_err(super::io_err(&path))?;
        let json = serde_json::to_vec_pretty(self).expect("manifest serializes");
        f.write_all(&json).map_err(super::io_err(&path))?;
        f.write_all(b"\n").map_err(super::io_err(&path))?;
        f.sync_all().map_err(super::io_err(&path))?;
        Ok(())
    }

    /// The source whose content starts like `head` (first bytes of an input's content).
    pub fn find_source(&self, head: &[u8]) -> Option<usize> {
        self.sources
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                // An entry fingerprinting no bytes would match every input.
                s.fingerprint_len > 0
                    && head.len() >= s.fingerprint_len
                    && fingerprint(&head[..s.fingerprint_len]) == s.fingerprint
            })
            .max_by_key(|(i, s)| (s.fingerprint_len, std::cmp::Reverse(*i)))
            .map(|(i, _)| i)
    }

    /// The source a compressed file already read to its end belongs to.
    pub fn find_compressed(&self, copy: &CompressedCopy) -> Option<usize> {
        self.sources
            .iter()
            .position(|s| s.compressed.contains(copy))
    }

    /// Total rows in the dataset.
    pub fn rows(&self) -> u64 {
        self.parts.iter().map(|p| p.rows).sum()
    }
}

/// Fingerprint of content bytes.
pub fn fingerprint(bytes: &[u8]) -> String {
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(bytes))
}

/// Whether `name` is a plain part file name (no directory, not hidden, `.parquet`).
pub fn is_plain_part_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && !name.contains(['/', '\\', '\0'])
        && name.ends_with(".parquet")
}
