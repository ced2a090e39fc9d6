//! A snapshot's manifest: which sources were ingested (and how far), and which Parquet
//! part files make up the snapshot. Written once into each snapshot directory.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::StoreError;

/// The dataset format this logscope reads and writes (layout, manifest and column
/// types; see `frame::COLUMNS`). Format 1 was `manifest.json` + `month=…/` parts with
/// unsigned columns. Format 2 stored a byte that is not UTF-8 as `\xHH` but a backslash
/// as itself (so the two could look alike) and had no `client_list` column; it is read
/// (as it was written) but not written to. Format 3 wrote a backslash as `\\` and such a
/// byte as `\xHH`, had no `request` column (a request that is not HTTP was its `path`)
/// and stored a missing status as 0; it is read as format 4 (its text converted as it
/// is read) and `logscope migrate` rewrites it. Format 4 (`frame`): text as the server
/// wrote it, such a byte as a character U+EF80–U+EFFF, `request`, a null status.
pub const VERSION: u32 = 4;

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
    /// Its rows whose path is MediaWiki's (`classify::heavy::is_mediawiki_path`): what
    /// tells a MediaWiki site when the rules file does not say (`None`: written before
    /// logscope counted them; the path column is read instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mediawiki_rows: Option<u64>,
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

    /// Total rows in the dataset (saturating: a damaged manifest's absurd counts are
    /// reported by [`Manifest::problems`], never a panic).
    pub fn rows(&self) -> u64 {
        self.parts
            .iter()
            .fold(0u64, |n, p| n.saturating_add(p.rows))
    }

    /// What is wrong with this manifest as the manifest of snapshot `snapshot`, one
    /// sentence each (empty: nothing). Checked before anything is read from or written
    /// into the dataset: a part listed twice would be counted twice (and linked over
    /// itself by the next commit), an ingest count that does not name this snapshot would
    /// give the next ingest a number already used (its parts' names, its snapshot
    /// directory), or one that wraps, and row counts that overflow would size
    /// allocations. Each part's rows are checked against its file's footer where the file
    /// is read (`slices::check_footer`).
    pub fn problems(&self, snapshot: u64) -> Vec<String> {
        let mut out = Vec::new();
        if self.ingests != snapshot {
            out.push(format!(
                "the manifest says `ingests` is {}, but it is the manifest of snapshot {snapshot} \
                 (written by ingest {snapshot}): the next ingest would reuse or skip ingest numbers",
                self.ingests
            ));
        }
        if self.ingests == u64::MAX {
            out.push(format!(
                "`ingests` is {}: the next ingest's number would wrap around to 0",
                self.ingests
            ));
        }
        let mut seen: HashMap<&str, usize> = HashMap::with_capacity(self.parts.len());
        let mut total = 0u64;
        let mut overflow = false;
        for (i, p) in self.parts.iter().enumerate() {
            if let Some(first) = seen.insert(p.file.as_str(), i) {
                out.push(format!(
                    "part {} is listed twice in the manifest (entries {} and {}): its rows \
                     would be counted twice",
                    p.file,
                    first + 1,
                    i + 1
                ));
            }
            if p.ingest > self.ingests || p.ingest == 0 {
                out.push(format!(
                    "part {} says it was written by ingest {}, but the dataset counts {} ingests",
                    p.file, p.ingest, self.ingests
                ));
            }
            if p.rows > MAX_PART_ROWS {
                out.push(format!(
                    "part {} claims {} rows, more than any part can hold",
                    p.file, p.rows
                ));
            }
            match total.checked_add(p.rows) {
                Some(t) => total = t,
                None => overflow = true,
            }
        }
        if overflow {
            out.push("the parts' rows add up to more than 2^64".to_string());
        }
        out
    }
}

/// More rows than one part can hold: Parquet counts a file's rows as a signed 64-bit
/// number. A count above this is damage, refused before it can size anything; counts
/// below it are checked against the file's footer before they are used.
pub const MAX_PART_ROWS: u64 = i64::MAX as u64;

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

#[cfg(test)]
mod tests {
    use super::*;

    fn part(file: &str, ingest: u64, rows: u64) -> PartEntry {
        PartEntry {
            file: file.into(),
            month: "2024-05".into(),
            rows,
            bytes: 100,
            min_ts_ms: 0,
            max_ts_ms: 1,
            ingest,
            segments: Vec::new(),
            sums: None,
            mediawiki_rows: None,
        }
    }

    fn manifest(ingests: u64, parts: Vec<PartEntry>) -> Manifest {
        Manifest {
            version: VERSION,
            ingests,
            sources: Vec::new(),
            parts,
        }
    }

    #[test]
    fn a_valid_manifest_has_no_problems() {
        let m = manifest(2, vec![part("a.parquet", 1, 10), part("b.parquet", 2, 5)]);
        assert!(m.problems(2).is_empty(), "{:?}", m.problems(2));
        assert_eq!(m.rows(), 15);
    }

    #[test]
    fn each_kind_of_damage_is_named() {
        let twice = manifest(1, vec![part("a.parquet", 1, 10), part("a.parquet", 1, 10)]);
        let p = twice.problems(1);
        assert!(p.len() == 1 && p[0].contains("listed twice"), "{p:?}");

        let wraps = manifest(u64::MAX, vec![part("a.parquet", 1, 10)]);
        let p = wraps.problems(1);
        assert!(p.iter().any(|s| s.contains("wrap")), "{p:?}");
        assert!(p.iter().any(|s| s.contains("snapshot 1")), "{p:?}");

        let behind = manifest(1, vec![part("a.parquet", 3, 10)]);
        let p = behind.problems(1);
        assert!(p.len() == 1 && p[0].contains("ingest 3"), "{p:?}");

        let absurd = manifest(
            1,
            vec![
                part("a.parquet", 1, u64::MAX),
                part("b.parquet", 1, u64::MAX),
            ],
        );
        let p = absurd.problems(1);
        assert!(p.iter().any(|s| s.contains("more than any part")), "{p:?}");
        assert!(p.iter().any(|s| s.contains("2^64")), "{p:?}");
        assert_eq!(absurd.rows(), u64::MAX);
    }
}
