//! Staged Parquet writing: one file per (input, month) of an ingest, written into the
//! ingest's build directory; they become visible only when the ingest commits.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use logscope_core::batch::Batch;
use polars::prelude::*;

use super::StoreError;
use super::frame::{MonthKey, MonthOf, batch_to_frame, month_name};
use super::manifest::{PartEntry, Segment};

/// Rows gathered before a row group is written. 64 Ki rather than 128 Ki: the pending
/// frames, their rechunked copy and the encoded pages of one row group are most of an
/// ingest's memory (BENCHMARKS.md, session 8: 310 → 284 MB peak RSS on the 20 M-line
/// log; reads no slower, files 7 % larger).
const ROW_GROUP_ROWS: usize = 64 * 1024;

/// The row group size: [`ROW_GROUP_ROWS`], or `LOGSCOPE_ROW_GROUP_ROWS` (for tests that
/// need many row groups from a small log).
fn row_group_rows() -> usize {
    std::env::var("LOGSCOPE_ROW_GROUP_ROWS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(ROW_GROUP_ROWS)
}
/// Rows held across all months before everything is flushed (bounds memory).
const MAX_PENDING_ROWS: usize = 128 * 1024;

struct MonthWriter {
    file: String,
    month: String,
    writer: polars::io::parquet::write::BatchedWriter<Recording>,
    /// The last I/O error the file reported (polars' own message loses it).
    io_error: IoSlot,
    pending: Option<DataFrame>,
    pending_rows: usize,
    pending_min: i64,
    pending_max: i64,
    segments: Vec<Segment>,
    rows: u64,
    min_ts: i64,
    max_ts: i64,
}

/// One month's rows of a batch, as a frame.
pub struct MonthFrame {
    key: MonthKey,
    df: DataFrame,
    min_ts: i64,
    max_ts: i64,
}

/// A batch converted to frames, one per UTC month it touches.
pub struct Prepared(Vec<MonthFrame>);

/// Converts a batch read from `file` into per-month frames. Pure and thread-safe: the
/// ingest runs it on the parse workers.
pub fn prepare(batch: &Batch, file: &str) -> PolarsResult<Prepared> {
    if batch.is_empty() {
        return Ok(Prepared(Vec::new()));
    }
    let mut month_of = MonthOf::default();
    let keys: Vec<MonthKey> = batch.ts_ms.iter().map(|&t| month_of.key(t)).collect();
    let frame = |key: MonthKey, b: &Batch| -> PolarsResult<MonthFrame> {
        Ok(MonthFrame {
            key,
            df: batch_to_frame(b, file)?,
            min_ts: b.ts_ms.iter().copied().min().unwrap_or(0),
            max_ts: b.ts_ms.iter().copied().max().unwrap_or(0),
        })
    };
    // Almost always a batch lies in one month.
    if keys.iter().all(|&k| k == keys[0]) {
        return Ok(Prepared(vec![frame(keys[0], batch)?]));
    }
    let mut groups: BTreeMap<MonthKey, Vec<usize>> = BTreeMap::new();
    for (i, &k) in keys.iter().enumerate() {
        groups.entry(k).or_default().push(i);
    }
    let mut out = Vec::new();
    for (k, idx) in groups {
        out.push(frame(k, &batch.retain_indices(&idx))?);
    }
    Ok(Prepared(out))
}

/// Writes one input's rows of an ingest into per-month part files in the build
/// directory. Dropping an input (it turned out damaged) removes its files.
pub struct StagedWriter {
    staging: PathBuf,
    ingest: u64,
    input: usize,
    months: BTreeMap<MonthKey, MonthWriter>,
    pending_rows: usize,
    row_group_rows: usize,
}

type IoSlot = std::sync::Arc<std::sync::Mutex<Option<std::io::Error>>>;

/// A part file that remembers the last I/O error, so a full disk is reported as "No
/// space left on device", not as polars' "invalid thrift".
struct Recording {
    /// Buffered: polars issues many small writes (page headers); its `end` flushes.
    file: std::io::BufWriter<File>,
    error: IoSlot,
}

impl std::io::Write for Recording {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf).inspect_err(|e| self.remember(e))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush().inspect_err(|e| self.remember(e))
    }
}

impl Recording {
    fn remember(&self, e: &std::io::Error) {
        if let Ok(mut slot) = self.error.lock() {
            *slot = Some(std::io::Error::new(e.kind(), e.to_string()));
        }
    }
}

/// The error to report for a failed write of `path`: the I/O error behind it if any.
fn write_err(path: &Path, slot: &IoSlot) -> impl Fn(PolarsError) -> StoreError {
    let path = path.to_path_buf();
    let slot = slot.clone();
    move |e| match slot.lock().ok().and_then(|mut s| s.take()) {
        Some(error) => StoreError::Io {
            path: path.clone(),
            error,
        },
        None => StoreError::Parquet {
            path: path.clone(),
            detail: e.to_string(),
        },
    }
}

/// The earliest and latest `ts` of a frame, UTC ms.
fn ts_range(df: &DataFrame) -> PolarsResult<(i64, i64)> {
    let ts = df.column("ts")?.cast(&DataType::Int64)?;
    let ts = ts.i64()?;
    Ok((ts.min().unwrap_or(0), ts.max().unwrap_or(0)))
}

fn polars_err(path: &Path) -> impl Fn(PolarsError) -> StoreError + '_ {
    move |e| StoreError::Parquet {
        path: path.to_path_buf(),
        detail: e.to_string(),
    }
}

impl StagedWriter {
    /// A writer for input number `input` of ingest `ingest`, writing into `staging`.
    pub fn new(staging: PathBuf, ingest: u64, input: usize) -> StagedWriter {
        StagedWriter {
            staging,
            ingest,
            input,
            months: BTreeMap::new(),
            pending_rows: 0,
            row_group_rows: row_group_rows(),
        }
    }

    /// Drops everything written so far (its files are removed).
    pub fn abandon(mut self) -> Result<(), StoreError> {
        for (_, mw) in std::mem::take(&mut self.months) {
            drop(mw.writer);
            let path = self.staging.join(&mw.file);
            fs::remove_file(&path).map_err(super::io_err(&path))?;
        }
        Ok(())
    }

    /// Adds the records of a batch read from `file`.
    pub fn write(&mut self, batch: &Batch, file: &str) -> Result<(), StoreError> {
        let prepared = prepare(batch, file).map_err(polars_err(&self.staging))?;
        self.write_prepared(prepared)
    }

    /// Adds frames made by [`prepare`] (which may run on another thread).
    pub fn write_prepared(&mut self, prepared: Prepared) -> Result<(), StoreError> {
        for mf in prepared.0 {
            self.add(mf)?;
        }
        if self.pending_rows >= MAX_PENDING_ROWS.max(2 * self.row_group_rows) {
            let keys: Vec<MonthKey> = self.months.keys().copied().collect();
            for k in keys {
                self.flush(k)?;
            }
        }
        Ok(())
    }

    fn add(&mut self, mf: MonthFrame) -> Result<(), StoreError> {
        // A frame larger than what fits in the current row group is split, so that
        // every segment's time range is its own (time filters skip by segment).
        let room = self.row_group_rows
            - self
                .months
                .get(&mf.key)
                .map_or(0, |m| m.pending_rows.min(self.row_group_rows - 1));
        if mf.df.height() > room {
            let staging = self.staging.clone();
            let err = polars_err(&staging);
            let head = mf.df.slice(0, room);
            let tail = mf.df.slice(room as i64, mf.df.height() - room);
            for df in [head, tail] {
                let (min_ts, max_ts) = ts_range(&df).map_err(&err)?;
                self.add(MonthFrame {
                    key: mf.key,
                    df,
                    min_ts,
                    max_ts,
                })?;
            }
            return Ok(());
        }
        let MonthFrame {
            key,
            df,
            min_ts,
            max_ts,
        } = mf;
        if !self.months.contains_key(&key) {
            let month = month_name(key);
            let file = format!("{month}-{:010}-{:03}.parquet", self.ingest, self.input);
            let path = self.staging.join(&file);
            let f = File::create_new(&path).map_err(|error| StoreError::Io {
                path: path.clone(),
                error,
            })?;
            let io_error = IoSlot::default();
            let f = Recording {
                file: std::io::BufWriter::with_capacity(1 << 20, f),
                error: io_error.clone(),
            };
            let writer = ParquetWriter::new(f)
                .with_compression(ParquetCompression::Zstd(None))
                .with_statistics(StatisticsOptions::default())
                .batched(df.schema())
                .map_err(write_err(&path, &io_error))?;
            self.months.insert(
                key,
                MonthWriter {
                    io_error,
                    file,
                    month,
                    writer,
                    pending: None,
                    pending_rows: 0,
                    pending_min: i64::MAX,
                    pending_max: i64::MIN,
                    segments: Vec::new(),
                    rows: 0,
                    min_ts: i64::MAX,
                    max_ts: i64::MIN,
                },
            );
        }
        let mw = self.months.get_mut(&key).expect("inserted");
        mw.rows += df.height() as u64;
        mw.min_ts = mw.min_ts.min(min_ts);
        mw.max_ts = mw.max_ts.max(max_ts);
        mw.pending_min = mw.pending_min.min(min_ts);
        mw.pending_max = mw.pending_max.max(max_ts);
        mw.pending_rows += df.height();
        self.pending_rows += df.height();
        match &mut mw.pending {
            Some(p) => {
                p.vstack_mut_owned(df).map_err(polars_err(&self.staging))?;
            }
            None => mw.pending = Some(df),
        }
        if mw.pending_rows >= self.row_group_rows {
            self.flush(key)?;
        }
        Ok(())
    }

    fn flush(&mut self, key: MonthKey) -> Result<(), StoreError> {
        let mw = self.months.get_mut(&key).expect("month open");
        if let Some(mut df) = mw.pending.take() {
            df.rechunk_mut_par();
            let path = self.staging.join(&mw.file);
            mw.writer
                .write_batch(&df)
                .map_err(write_err(&path, &mw.io_error))?;
            mw.segments.push(Segment {
                rows: mw.pending_rows as u64,
                min_ts_ms: mw.pending_min,
                max_ts_ms: mw.pending_max,
            });
            self.pending_rows -= mw.pending_rows;
            mw.pending_rows = 0;
            mw.pending_min = i64::MAX;
            mw.pending_max = i64::MIN;
        }
        Ok(())
    }

    /// Finishes every file; returns the parts written (paths relative to the dataset).
    pub fn finish(mut self) -> Result<Vec<PartEntry>, StoreError> {
        let keys: Vec<MonthKey> = self.months.keys().copied().collect();
        for k in &keys {
            self.flush(*k)?;
        }
        let mut parts = Vec::new();
        for (_, mw) in std::mem::take(&mut self.months) {
            let path = self.staging.join(&mw.file);
            mw.writer.finish().map_err(write_err(&path, &mw.io_error))?;
            drop(mw.writer);
            let f = File::open(&path).map_err(|error| StoreError::Io {
                path: path.clone(),
                error,
            })?;
            f.sync_all().map_err(|error| StoreError::Io {
                path: path.clone(),
                error,
            })?;
            let bytes = f.metadata().map_err(super::io_err(&path))?.len();
            parts.push(PartEntry {
                file: mw.file,
                month: mw.month,
                rows: mw.rows,
                bytes,
                min_ts_ms: mw.min_ts,
                max_ts_ms: mw.max_ts,
                segments: mw.segments,
                ingest: self.ingest,
            });
        }
        Ok(parts)
    }
}
