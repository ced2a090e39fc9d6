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
/// rows and the encoded pages of one row group are most of an ingest's memory (measured:
/// 310 → 284 MB peak RSS on the 20 M-line log; reads no slower, files 7 % larger).
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

/// One part file being written, on the file thread.
struct MonthFile {
    file: String,
    month: String,
    writer: FileWriter<Recording>,
    /// The last I/O error the file reported (polars' own message loses it).
    io_error: IoSlot,
    segments: Vec<Segment>,
    rows: u64,
    min_ts: i64,
    max_ts: i64,
}

/// The rows of a batch in each UTC month they fall in (almost always one), by index,
/// and how many of them are to MediaWiki's paths.
pub struct Prepared(Vec<(MonthKey, Vec<usize>, u64)>);

/// Readies a batch for [`StagedWriter::write_prepared`]: its text columns coded (each
/// distinct value once, so the writer works per distinct value) and its rows split by
/// month. Pure and thread-safe: the ingest runs it on the parse workers.
pub fn prepare(batch: &mut Batch) -> Prepared {
    if batch.is_empty() {
        return Prepared(Vec::new());
    }
    batch.code_text();
    let wiki = mediawiki_rows(batch);
    let mut month_of = MonthOf::default();
    let keys: Vec<MonthKey> = batch.ts_ms.iter().map(|&t| month_of.key(t)).collect();
    if keys.iter().all(|&k| k == keys[0]) {
        let n = wiki.iter().filter(|&&w| w).count() as u64;
        return Prepared(vec![(keys[0], (0..batch.len()).collect(), n)]);
    }
    let mut groups: BTreeMap<MonthKey, (Vec<usize>, u64)> = BTreeMap::new();
    for (i, &k) in keys.iter().enumerate() {
        let g = groups.entry(k).or_default();
        g.0.push(i);
        g.1 += u64::from(wiki[i]);
    }
    Prepared(
        groups
            .into_iter()
            .map(|(k, (rows, n))| (k, rows, n))
            .collect(),
    )
}

/// Whether each row's path is MediaWiki's, decided once per distinct path of a coded
/// column.
fn mediawiki_rows(batch: &Batch) -> Vec<bool> {
    use logscope_core::classify::heavy::is_mediawiki_path;
    let path = &batch.path;
    match path.codes() {
        Some(codes) => {
            let by_code: Vec<bool> = (0..path.slots())
                .map(|k| path.value(k as u32).is_some_and(is_mediawiki_path))
                .collect();
            codes
                .iter()
                .map(|&k| by_code.get(k as usize).copied().unwrap_or(false))
                .collect()
        }
        None => path
            .iter()
            .map(|p| p.is_some_and(is_mediawiki_path))
            .collect(),
    }
}

/// zstd level 1, not polars' default 3: the same files to within 0.1 % (most pages are
/// dictionary codes), 20 % less ingest CPU (measured). zstd's fast (negative) levels were
/// measured and left alone: files 20 % (-1) and 37 % (-3) larger.
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
///
/// The caller gathers rows into a `RowGroup` per month; a full one goes to the
/// writer's file thread, which encodes, compresses and writes it while the caller
/// gathers the next (handing it over waits until the thread is free), so the encoding overlaps
/// the parse instead of stopping the pipeline at every row group.
pub struct StagedWriter {
    staging: PathBuf,
    ingest: u64,
    input: usize,
    pending: BTreeMap<MonthKey, RowGroup>,
    pending_rows: usize,
    row_group_rows: usize,
    threads: usize,
    files: Option<FileThread>,
    /// Rows to MediaWiki's paths per month file.
    mediawiki_rows: BTreeMap<MonthKey, u64>,
}

/// The file thread of a [`StagedWriter`]: full row groups in, emptied ones back.
struct FileThread {
    groups: crossbeam_channel::Sender<(MonthKey, RowGroup)>,
    spare: crossbeam_channel::Receiver<RowGroup>,
    handle: std::thread::JoinHandle<Written>,
}

/// What the file thread made: its files, and the error that stopped it, if any.
#[derive(Default)]
struct Written {
    files: BTreeMap<MonthKey, MonthFile>,
    error: Option<StoreError>,
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
    /// A writer for input number `input` of ingest `ingest`, writing into `staging`;
    /// `threads` is the parse's: each row group is encoded on `threads / 2` threads (at
    /// least one) of the file thread.
    pub fn new(staging: PathBuf, ingest: u64, input: usize, threads: usize) -> StagedWriter {
        StagedWriter {
            staging,
            ingest,
            input,
            pending: BTreeMap::new(),
            pending_rows: 0,
            row_group_rows: row_group_rows(),
            threads: threads.max(1),
            files: None,
            mediawiki_rows: BTreeMap::new(),
        }
    }

    /// Drops everything written so far (its files are removed).
    pub fn abandon(mut self) -> Result<(), StoreError> {
        let written = self.stop()?;
        for mf in written.files.into_values() {
            drop(mf.writer);
            let path = self.staging.join(&mf.file);
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
        for (key, rows, wiki) in prepared.0 {
            *self.mediawiki_rows.entry(key).or_default() += wiki;
            // Rows beyond what fits in the current row group start the next one, so
            // that every segment's time range is its own (time filters skip by segment).
            let mut rest: &[usize] = &rows;
            while !rest.is_empty() {
                let limit = self.row_group_rows;
                let group = self.pending.entry(key).or_default();
                let take = (limit - group.len().min(limit - 1)).min(rest.len());
                group.append(batch, file, &rest[..take]);
                let full = group.len() >= limit;
                self.pending_rows += take;
                rest = &rest[take..];
                if full {
                    self.flush(key)?;
                }
            }
        }
        if self.pending_rows >= MAX_PENDING_ROWS.max(2 * self.row_group_rows) {
            let keys: Vec<MonthKey> = self.pending.keys().copied().collect();
            for k in keys {
                self.flush(k)?;
            }
        }
        Ok(())
    }

    /// Hands the pending rows of month `key` to the file thread (started on first use).
    fn flush(&mut self, key: MonthKey) -> Result<(), StoreError> {
        if self.pending.get(&key).is_none_or(RowGroup::is_empty) {
            return Ok(());
        }
        if self.files.is_none() {
            self.files = Some(self.start());
        }
        let files = self.files.as_ref().expect("started above");
        let spare = files.spare.try_recv().unwrap_or_default();
        let group = std::mem::replace(self.pending.get_mut(&key).expect("checked"), spare);
        self.pending_rows -= group.len();
        if files.groups.send((key, group)).is_err() {
            // The file thread stopped on an error: it says which.
            let written = self.stop()?;
            return Err(written.error.unwrap_or_else(|| StoreError::Parquet {
                path: self.staging.clone(),
                detail: "the Parquet writer stopped".to_string(),
            }));
        }
        Ok(())
    }

    /// Starts the file thread.
    fn start(&self) -> FileThread {
        let (groups, rx) = crossbeam_channel::bounded::<(MonthKey, RowGroup)>(0);
        let (spare_tx, spare) = crossbeam_channel::bounded::<RowGroup>(1);
        let (staging, ingest, input) = (self.staging.clone(), self.ingest, self.input);
        // The caller keeps a core busy gathering rows: the encoding gets the others.
        let threads = (self.threads / 2).max(1);
        let handle = std::thread::Builder::new()
            .name("parquet-writer".to_string())
            .spawn(move || {
                let mut written = Written::default();
                let layout = match Layout::new() {
                    Ok(l) => l,
                    Err(e) => {
                        written.error = Some(polars_err(&staging)(e));
                        return written;
                    }
                };
                for (key, mut group) in rx {
                    let to = PartName {
                        staging: &staging,
                        ingest,
                        input,
                    };
                    if let Err(e) =
                        write_group(&mut written.files, &layout, to, key, &group, threads)
                    {
                        written.error = Some(e);
                        return written;
                    }
                    group.clear();
                    let _ = spare_tx.try_send(group);
                }
                written
            })
            .expect("spawning the Parquet writer thread");
        FileThread {
            groups,
            spare,
            handle,
        }
    }

    /// Waits for the file thread to write what it was given; its files (none if it
    /// never started).
    fn stop(&mut self) -> Result<Written, StoreError> {
        let Some(files) = self.files.take() else {
            return Ok(Written::default());
        };
        drop(files.groups);
        match files.handle.join() {
            Ok(written) => Ok(written),
            Err(p) => std::panic::resume_unwind(p),
        }
    }

    /// Finishes every file; returns the parts written (paths relative to the dataset).
    pub fn finish(mut self) -> Result<Vec<PartEntry>, StoreError> {
        let keys: Vec<MonthKey> = self.pending.keys().copied().collect();
        for k in &keys {
            self.flush(*k)?;
        }
        let written = self.stop()?;
        if let Some(e) = written.error {
            return Err(e);
        }
        let mut parts = Vec::new();
        for (key, mut mf) in written.files {
            let path = self.staging.join(&mf.file);
            mf.writer
                .end(None)
                .map_err(write_err(&path, &mf.io_error))?;
            drop(mf.writer);
            let f = File::open(&path).map_err(|error| StoreError::Io {
                path: path.clone(),
                error,
            })?;
            f.sync_all().map_err(|error| StoreError::Io {
                path: path.clone(),
                error,
            })?;
            let bytes = f.metadata().map_err(super::io_err(&path))?.len();
            let sums = super::checksum::take(&path)?;
            parts.push(PartEntry {
                file: mf.file,
                month: mf.month,
                rows: mf.rows,
                bytes,
                min_ts_ms: mf.min_ts,
                max_ts_ms: mf.max_ts,
                segments: mf.segments,
                ingest: self.ingest,
                sums: Some(sums.to_manifest()),
                mediawiki_rows: Some(self.mediawiki_rows.get(&key).copied().unwrap_or(0)),
            });
        }
        Ok(parts)
    }
}

/// Where the part files of one input of an ingest go.
#[derive(Clone, Copy)]
struct PartName<'a> {
    staging: &'a Path,
    ingest: u64,
    input: usize,
}

/// Encodes `group` (rows of month `key`) on up to `threads` threads and appends it as a
/// row group to the month's part file, creating the file first if it is new.
fn write_group(
    files: &mut BTreeMap<MonthKey, MonthFile>,
    layout: &Layout,
    to: PartName<'_>,
    key: MonthKey,
    group: &RowGroup,
    threads: usize,
) -> Result<(), StoreError> {
    let mf = match files.entry(key) {
        std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
        std::collections::btree_map::Entry::Vacant(v) => {
            let month = month_name(key);
            let file = format!("{month}-{:010}-{:03}.parquet", to.ingest, to.input);
            let path = to.staging.join(&file);
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
            v.insert(MonthFile {
                io_error,
                file,
                month,
                writer,
                segments: Vec::new(),
                rows: 0,
                min_ts: i64::MAX,
                max_ts: i64::MIN,
            })
        }
    };
    let path = to.staging.join(&mf.file);
    let rows = group.len();
    let (min_ts, max_ts) = group.time_range();
    let pages = group
        .encode(
            &layout.arrow,
            &layout.parquet,
            layout.options,
            ZSTD_LEVEL,
            threads,
        )
        .map_err(polars_err(&path))?;
    let columns = pages.iter().map(|col| {
        Ok(DynStreamingIterator::new(
            fallible_streaming_iterator::convert(col.iter().map(PolarsResult::Ok)),
        ))
    });
    mf.writer
        .write(rows as u64, DynIter::new(columns))
        .map_err(write_err(&path, &mf.io_error))?;
    mf.segments.push(Segment {
        rows: rows as u64,
        min_ts_ms: min_ts,
        max_ts_ms: max_ts,
    });
    mf.rows += rows as u64;
    mf.min_ts = mf.min_ts.min(min_ts);
    mf.max_ts = mf.max_ts.max(max_ts);
    Ok(())
}
