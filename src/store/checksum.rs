//! A part's checksums: xxh3-64 of its Parquet footer and of every column chunk, taken by
//! the ingest that wrote the part (from the file as written, before the commit) and
//! checked by every logscope read before the bytes are decoded. polars writes no page
//! CRC and zstd frames carry no checksum, so without them a changed byte inside a page
//! can decode to a wrong value instead of an error.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use polars::prelude::{FileMetadataRef, ParquetReader, SerReader};
use polars_parquet::parquet::metadata::{ColumnChunkMetadata, RowGroupMetadata};
use xxhash_rust::xxh3::xxh3_64;

use super::StoreError;
use super::manifest::PartSums;

/// Chunks larger than this are damage, not data (the writer's are a few MiB).
const MAX_CHUNK: u64 = 4 << 30;

/// A part's checksums, parsed from its [`PartSums`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sums {
    /// Of the footer: the Parquet metadata and the 8 bytes after it.
    pub footer: u64,
    /// Per row group, of each column chunk, in the file's column order.
    pub chunks: Vec<Vec<u64>>,
}

impl Sums {
    /// Parses the manifest's hex form; `None` if it is not well formed.
    pub fn parse(s: &PartSums) -> Option<Sums> {
        let hex = |h: &str| {
            (h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()))
                .then(|| u64::from_str_radix(h, 16).ok())
                .flatten()
        };
        let footer = hex(&s.footer)?;
        let chunks = s
            .chunks
            .iter()
            .map(|g| {
                if g.len() % 16 != 0 || !g.is_ascii() {
                    return None;
                }
                (0..g.len() / 16)
                    .map(|i| hex(&g[i * 16..i * 16 + 16]))
                    .collect()
            })
            .collect::<Option<Vec<Vec<u64>>>>()?;
        Some(Sums { footer, chunks })
    }

    /// The manifest's hex form.
    pub fn to_manifest(&self) -> PartSums {
        PartSums {
            footer: format!("{:016x}", self.footer),
            chunks: self
                .chunks
                .iter()
                .map(|g| g.iter().map(|s| format!("{s:016x}")).collect())
                .collect(),
        }
    }

    /// The checksum of column `column` (file order) of row group `group`.
    pub fn chunk(&self, group: usize, column: usize) -> Option<u64> {
        self.chunks.get(group)?.get(column).copied()
    }

    /// The checksum of the column named `name` of row group number `group` (`rg`).
    pub fn column(&self, group: usize, rg: &RowGroupMetadata, name: &str) -> Option<u64> {
        let c = *rg.columns_idxs_under_root_iter(name)?.first()?;
        self.chunk(group, c)
    }
}

/// The checksum of a column chunk's bytes (or of a footer's).
#[inline]
pub fn of_bytes(bytes: &[u8]) -> u64 {
    xxh3_64(bytes)
}

/// The error for a part whose bytes do not match their checksum.
pub fn mismatch(path: &Path, what: &str) -> StoreError {
    StoreError::Corrupt {
        path: path.to_path_buf(),
        detail: format!(
            "{what} does not match the checksum its ingest recorded (the file was changed \
             or damaged after it was written); rebuild the dataset from the logs"
        ),
    }
}

/// The footer of the Parquet file `f`: its metadata and the 8 bytes after it.
fn footer_bytes(path: &Path, mut f: &File) -> Result<Vec<u8>, StoreError> {
    let io = |e: std::io::Error| super::io_err(path)(e);
    let len = f.seek(SeekFrom::End(0)).map_err(&io)?;
    let short = || StoreError::Corrupt {
        path: path.to_path_buf(),
        detail: "not a Parquet file (no footer)".into(),
    };
    if len < 12 {
        return Err(short());
    }
    let mut tail = [0u8; 8];
    f.seek(SeekFrom::Start(len - 8)).map_err(&io)?;
    f.read_exact(&mut tail).map_err(&io)?;
    let meta = u64::from(u32::from_le_bytes(tail[..4].try_into().expect("4 bytes")));
    if &tail[4..] != b"PAR1" || meta + 12 > len {
        return Err(short());
    }
    let start = len - 8 - meta;
    let mut bytes = Vec::with_capacity(meta as usize + 8);
    f.seek(SeekFrom::Start(start)).map_err(&io)?;
    f.take(meta + 8).read_to_end(&mut bytes).map_err(&io)?;
    Ok(bytes)
}

/// Checks the footer of the part at `path` against `sums`, then reads it.
pub fn checked_footer(path: &Path, sums: Option<&Sums>) -> Result<FileMetadataRef, StoreError> {
    let f = File::open(path).map_err(super::io_err(path))?;
    if let Some(sums) = sums
        && of_bytes(&footer_bytes(path, &f)?) != sums.footer
    {
        return Err(mismatch(path, "the Parquet footer"));
    }
    let md = ParquetReader::new(f)
        .get_metadata()
        .cloned()
        .map_err(|e| StoreError::Parquet {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
    if let Some(sums) = sums {
        let shape: Vec<usize> = md.row_groups.iter().map(|g| g.n_columns()).collect();
        let want: Vec<usize> = sums.chunks.iter().map(Vec::len).collect();
        if shape != want {
            return Err(mismatch(path, "the row groups' layout"));
        }
    }
    Ok(md)
}

/// Reads column chunk `range` of `f` whole.
pub fn read_chunk(mut f: &File, range: std::ops::Range<u64>) -> std::io::Result<Vec<u8>> {
    let len = range.end.saturating_sub(range.start);
    if len > MAX_CHUNK {
        return Err(std::io::Error::other(format!(
            "column chunk of {len} bytes"
        )));
    }
    // A damaged footer may name bytes past the end: say so before allocating for them.
    let size = f.metadata()?.len();
    if range.end > size {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!(
                "a column chunk at bytes {}..{} lies past the end of the {size}-byte file (the file is truncated)",
                range.start, range.end
            ),
        ));
    }
    // Read into fresh capacity (no zeroing of a buffer about to be overwritten).
    let mut bytes = Vec::with_capacity(len as usize);
    f.seek(SeekFrom::Start(range.start))?;
    f.take(len).read_to_end(&mut bytes)?;
    if bytes.len() as u64 != len {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!(
                "a column chunk of {len} bytes holds {} (the file is truncated)",
                bytes.len()
            ),
        ));
    }
    Ok(bytes)
}

/// The byte range of a column chunk, or `None` where the footer's numbers overflow.
pub fn chunk_range(c: &ColumnChunkMetadata) -> Option<std::ops::Range<u64>> {
    let start = c.dictionary_page_offset().unwrap_or(c.data_page_offset());
    let start = u64::try_from(start).ok()?;
    let len = u64::try_from(c.compressed_size()).ok()?;
    Some(start..start.checked_add(len)?)
}

/// Checks the column chunks of the part at `path` against `sums`: every column, or only
/// `columns` (by name). The footer is checked first.
pub fn verify(path: &Path, sums: &Sums, columns: Option<&[String]>) -> Result<(), StoreError> {
    let md = checked_footer(path, Some(sums))?;
    let f = File::open(path).map_err(super::io_err(path))?;
    for (g, rg) in md.row_groups.iter().enumerate() {
        for (c, chunk) in rg.parquet_columns().iter().enumerate() {
            let name = chunk.descriptor().path_in_schema.first();
            if let Some(cols) = columns
                && !name.is_some_and(|n| cols.iter().any(|c| c.as_str() == n.as_str()))
            {
                continue;
            }
            let what = || {
                format!(
                    "column chunk {} of row group {g}",
                    name.map_or("?", |n| n.as_str())
                )
            };
            let range = chunk_range(chunk).ok_or_else(|| mismatch(path, &what()))?;
            let bytes = read_chunk(&f, range).map_err(|e| StoreError::Corrupt {
                path: path.to_path_buf(),
                detail: format!("{}: {e}", what()),
            })?;
            if Some(of_bytes(&bytes)) != sums.chunk(g, c) {
                return Err(mismatch(path, &what()));
            }
        }
    }
    Ok(())
}

/// Takes the checksums of the Parquet file at `path` as it is now (the writer, once
/// the file is complete).
pub fn take(path: &Path) -> Result<Sums, StoreError> {
    let f = File::open(path).map_err(super::io_err(path))?;
    let footer = of_bytes(&footer_bytes(path, &f)?);
    let md = checked_footer(path, None)?;
    let mut chunks = Vec::with_capacity(md.row_groups.len());
    for rg in &md.row_groups {
        let mut sums = Vec::with_capacity(rg.n_columns());
        for chunk in rg.parquet_columns() {
            let range = chunk_range(chunk).ok_or_else(|| StoreError::Parquet {
                path: path.to_path_buf(),
                detail: "a column chunk's range overflows".into(),
            })?;
            let bytes = read_chunk(&f, range).map_err(super::io_err(path))?;
            sums.push(of_bytes(&bytes));
        }
        chunks.push(sums);
    }
    Ok(Sums { footer, chunks })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_past_the_end_of_the_file_is_an_error_before_any_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.parquet");
        std::fs::write(&path, b"0123456789").unwrap();
        let f = File::open(&path).unwrap();
        assert_eq!(read_chunk(&f, 2..6).unwrap(), b"2345");
        let e = read_chunk(&f, 5..(3 << 30)).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
        assert!(
            e.to_string().contains("past the end of the 10-byte file"),
            "{e}"
        );
    }

    #[test]
    fn the_manifest_form_round_trips_and_bad_hex_is_refused() {
        let s = Sums {
            footer: 0x0123_4567_89ab_cdef,
            chunks: vec![vec![1, u64::MAX], vec![], vec![42]],
        };
        let m = s.to_manifest();
        assert_eq!(m.chunks[0], "0000000000000001ffffffffffffffff");
        assert_eq!(Sums::parse(&m), Some(s));
        for bad in ["", "0123", "0123456789abcdeg", "+123456789abcdef"] {
            let mut m = m.clone();
            m.footer = bad.to_string();
            assert_eq!(Sums::parse(&m), None, "{bad:?}");
        }
        let mut m2 = m.clone();
        m2.chunks[0].push('0');
        assert_eq!(Sums::parse(&m2), None);
        let mut m3 = m;
        m3.chunks[2] = "é".repeat(8);
        assert_eq!(Sums::parse(&m3), None);
    }
}
