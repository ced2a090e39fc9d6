//! Staged Parquet writing: one file per (input, month) of an ingest, written into the
//! ingest's build directory; they become visible only when the ingest commits.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use logscope_core::batch::Batch;
use polars::prelude::{CompatLevel, PolarsError, PolarsResult, SchemaExt};
use polars_arrow::datatypes::ArrowSchema;
use polars_parquet::write::{
    CompressionOptions, DynIter, DynStreamingIterator, FileWriter, SchemaDescriptor,
    StatisticsOptions, Version, WriteOptions, ZstdLevel, fallible_streaming_iterator,
    to_parquet_schema,
};

use super::StoreError;
use super::frame::{MonthKey, MonthOf, month_name, schema};
use super::manifest::{PartEntry, Segment};
use super::rowgroup::RowGroup;

/// Rows gathered before a row group is written. 64 Ki rather than 128 Ki: the pending
/// rows and the encoded pages of one row group are most of an ingest's memory (BENCHMARKS.md, session 8: 310 → 284 MB peak RSS on the 20 M-line
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
    writer: FileWriter<Recording>,
    /// The last I/O error the file reported (polars' own message loses it).
    io_error: IoSlot,
    pending: RowGroup,
    segments: Vec<Segment>,
    rows: u64,
    min_ts: i64,
    max_ts: i64,
}

/// The rows of a batch in each UTC month they fall in (almost always one), by index.
pub struct Prepared(Vec<(MonthKey, Vec<usize>)>);

/// Readies a batch for [`StagedWriter::write_prepared`]: its text columns coded (each
/// distinct value once, so the writer works per distinct value) and its rows split by
/// month. Pure and thread-safe: the ingest runs it on the parse workers.
pub fn prepare(batch: &mut Batch) -> Prepared {
    if batch.is_empty() {
        return Prepared(Vec::new());
    }
    batch.code_text();
    let mut month_of = MonthOf::default();
    let keys: Vec<MonthKey> = batch.ts_ms.iter().map(|&t| month_of.key(t)).collect();
    if keys.iter().all(|&k| k == keys[0]) {
        return Prepared(vec![(keys[0], (0..batch.len()).collect())]);
    }
    let mut groups: BTreeMap<MonthKey, Vec<usize>> = BTreeMap::new();
    for (i, &k) in keys.iter().enumerate() {
        groups.entry(k).or_default().push(i);
    }
    Prepared(groups.into_iter().collect())
}

/// zstd level 1, not polars' default 3: the same files to within 0.1 % (most pages are
/// dictionary codes), 20 % less ingest CPU (BENCHMARKS.md, session 9).
const ZSTD_LEVEL: i32 = 1;

/// The dataset's Arrow schema as stored (polars' own conversion of [`schema`]), the
/// Parquet schema it makes, and the write options: zstd, full statistics and format
/// version 1, as polars' `ParquetWriter` writes them.
struct Layout {
    arrow: ArrowSchema,
    parquet: SchemaDescriptor,
    options: WriteOptions,
}

impl Layout {
    fn new() -> PolarsResult<Layout> {
        let arrow = schema().to_arrow(CompatLevel::newest());
        let parquet = to_parquet_schema(&arrow)?;
        Ok(Layout {
            arrow,
            parquet,
            options: WriteOptions {
                statistics: StatisticsOptions::default(),
                compression: CompressionOptions::Zstd(Some(ZstdLevel::try_new(ZSTD_LEVEL)?)),
                version: Version::V1,
                data_page_size: None,
            },
        })
    }
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
    threads: usize,
    layout: Option<Layout>,
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

fn polars_err(path: &Path) -> impl Fn(PolarsError) -> StoreError + '_ {
    move |e| StoreError::Parquet {
        path: path.to_path_buf(),
        detail: e.to_string(),
    }
}

impl StagedWriter {
    /// A writer for input number `input` of ingest `ingest`, writing into `staging`,
    /// encoding each row group on up to `threads` threads.
    pub fn new(staging: PathBuf, ingest: u64, input: usize, threads: usize) -> StagedWriter {
        StagedWriter {
            staging,
            ingest,
            input,
            months: BTreeMap::new(),
            pending_rows: 0,
            row_group_rows: row_group_rows(),
            threads: threads.max(1),
            layout: None,
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
    pub fn write(&mut self, batch: &mut Batch, file: &str) -> Result<(), StoreError> {
        let prepared = prepare(batch);
        self.write_prepared(batch, file, prepared)
    }

    /// Adds the records of a batch read from `file`, readied by [`prepare`] (which may
    /// run on another thread).
    pub fn write_prepared(
        &mut self,
        batch: &Batch,
        file: &str,
        prepared: Prepared,
    ) -> Result<(), StoreError> {
        for (key, rows) in prepared.0 {
            // Rows beyond what fits in the current row group start the next one, so
            // that every segment's time range is its own (time filters skip by segment).
            let mut rest: &[usize] = &rows;
            while !rest.is_empty() {
                let limit = self.row_group_rows;
                let mw = self.month(key)?;
                let take = (limit - mw.pending.len().min(limit - 1)).min(rest.len());
                mw.pending.append(batch, file, &rest[..take]);
                let full = mw.pending.len() >= limit;
                self.pending_rows += take;
                rest = &rest[take..];
                if full {
                    self.flush(key)?;
                }
            }
        }
        if self.pending_rows >= MAX_PENDING_ROWS.max(2 * self.row_group_rows) {
            let keys: Vec<MonthKey> = self.months.keys().copied().collect();
            for k in keys {
                self.flush(k)?;
            }
        }
        Ok(())
    }

    /// The writer of month `key`, its part file created on first use.
    fn month(&mut self, key: MonthKey) -> Result<&mut MonthWriter, StoreError> {
        if self.layout.is_none() {
            self.layout = Some(Layout::new().map_err(polars_err(&self.staging))?);
        }
        if !self.months.contains_key(&key) {
            let layout = self.layout.as_ref().expect("set above");
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
            let writer = FileWriter::new_with_parquet_schema(
                f,
                layout.arrow.clone(),
                layout.parquet.clone(),
                layout.options,
            );
            self.months.insert(
                key,
                MonthWriter {
                    io_error,
                    file,
                    month,
                    writer,
                    pending: RowGroup::default(),
                    segments: Vec::new(),
                    rows: 0,
                    min_ts: i64::MAX,
                    max_ts: i64::MIN,
                },
            );
        }
        Ok(self.months.get_mut(&key).expect("inserted"))
    }

    fn flush(&mut self, key: MonthKey) -> Result<(), StoreError> {
        let mw = self.months.get_mut(&key).expect("month open");
        if mw.pending.is_empty() {
            return Ok(());
        }
        let layout = self.layout.as_ref().expect("set when the month opened");
        let path = self.staging.join(&mw.file);
        let rows = mw.pending.len();
        let (min_ts, max_ts) = mw.pending.time_range();
        let pages = mw
            .pending
            .encode(&layout.arrow, &layout.parquet, layout.options, self.threads)
            .map_err(polars_err(&path))?;
        let columns = pages.iter().map(|col| {
            Ok(DynStreamingIterator::new(
                fallible_streaming_iterator::convert(col.iter().map(PolarsResult::Ok)),
            ))
        });
        mw.writer
            .write(rows as u64, DynIter::new(columns))
            .map_err(write_err(&path, &mw.io_error))?;
        mw.segments.push(Segment {
            rows: rows as u64,
            min_ts_ms: min_ts,
            max_ts_ms: max_ts,
        });
        mw.rows += rows as u64;
        mw.min_ts = mw.min_ts.min(min_ts);
        mw.max_ts = mw.max_ts.max(max_ts);
        mw.pending.clear();
        self.pending_rows -= rows;
        Ok(())
    }

    /// Finishes every file; returns the parts written (paths relative to the dataset).
    pub fn finish(mut self) -> Result<Vec<PartEntry>, StoreError> {
        let keys: Vec<MonthKey> = self.months.keys().copied().collect();
        for k in &keys {
            self.flush(*k)?;
        }
        let mut parts = Vec::new();
        for (_, mut mw) in std::mem::take(&mut self.months) {
            let path = self.staging.join(&mw.file);
            mw.writer
                .end(None)
                .map_err(write_err(&path, &mw.io_error))?;
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
