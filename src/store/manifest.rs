//! The dataset's manifest: which sources were ingested (and how far), and which
//! Parquet part files make up the dataset. Replaced atomically on every commit.

use std::fs;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::StoreError;

/// Current manifest format version.
pub const VERSION: u32 = 1;

/// Bytes of content a source's fingerprint covers (at most).
pub const FINGERPRINT_LEN: usize = 4096;

/// The whole manifest.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Manifest {
    /// Format version.
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
    /// Path relative to the dataset directory (`month=2025-09/part-000001-0000.parquet`).
    pub path: String,
    /// Month partition (`2025-09`, UTC).
    pub month: String,
    /// Rows in the file.
    pub rows: u64,
    /// Earliest arrival in the file, UTC ms.
    pub min_ts_ms: i64,
    /// Latest arrival in the file, UTC ms.
    pub max_ts_ms: i64,
    /// Which ingest wrote it.
    pub ingest: u64,
}

impl Manifest {
    /// Reads the manifest of `dir`, or an empty one if there is none yet.
    pub fn load(dir: &Path) -> Result<Manifest, StoreError> {
        let path = dir.join("manifest.json");
        match fs::read(&path) {
            Ok(bytes) => {
                let m: Manifest =
                    serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
                        path: path.clone(),
                        detail: e.to_string(),
                    })?;
                if m.version != VERSION {
                    return Err(StoreError::Corrupt {
                        path,
                        detail: format!(
                            "manifest version {} is not supported (this logscope reads {})",
                            m.version, VERSION
                        ),
                    });
                }
                Ok(m)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Manifest {
                version: VERSION,
                ..Manifest::default()
            }),
            Err(e) => Err(StoreError::Io { path, source: e }),
        }
    }

    /// Writes the manifest atomically: a temporary file, fsync, rename, fsync dir.
    pub fn save(&self, dir: &Path) -> Result<(), StoreError> {
        let tmp = dir.join("manifest.json.tmp");
        let path = dir.join("manifest.json");
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| StoreError::Io { path: p, source }
        };
        let mut f = fs::File::create(&tmp).map_err(io(&tmp))?;
        let json = serde_json::to_vec_pretty(self).expect("manifest serializes");
        f.write_all(&json).map_err(io(&tmp))?;
        f.write_all(b"\n").map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
        drop(f);
        fs::rename(&tmp, &path).map_err(io(&path))?;
        super::sync_dir(dir)?;
        Ok(())
    }

    /// The source whose content starts like `head` (first bytes of an input's content).
    pub fn find_source(&self, head: &[u8]) -> Option<usize> {
        self.sources
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                head.len() >= s.fingerprint_len
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
