//! Staged Parquet writing: one file per month touched by an ingest, written under a
//! staging directory and moved into the dataset only when the ingest commits.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use logscope_core::batch::Batch;
use polars::prelude::*;

use super::StoreError;
use super::frame::{MonthKey, MonthOf, batch_to_frame, month_name};
use super::manifest::PartEntry;

/// Rows gathered before a row group is written.
const ROW_GROUP_ROWS: usize = 128 * 1024;
/// Rows held across all months before everything is flushed (bounds memory).
const MAX_PENDING_ROWS: usize = 256 * 1024;

struct MonthWriter {
    rel: String,
    month: String,
    writer: polars::io::parquet::write::BatchedWriter<File>,
    pending: Option<DataFrame>,
    pending_rows: usize,
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

/// Writes one ingest's rows into per-month part files under a staging directory.
pub struct StagedWriter {
    staging: PathBuf,
    ingest: u64,
    months: BTreeMap<MonthKey, MonthWriter>,
    pending_rows: usize,
}

fn polars_err(path: &Path) -> impl Fn(PolarsError) -> StoreError + '_ {
    move |e| StoreError::Parquet {
        path: path.to_path_buf(),
        detail: e.to_string(),
    }
}

impl StagedWriter {
    /// A writer for ingest number `ingest`, staging under `staging`.
    pub fn new(staging: PathBuf, ingest: u64) -> StagedWriter {
        StagedWriter {
            staging,
            ingest,
            months: BTreeMap::new(),
            pending_rows: 0,
        }
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
        if self.pending_rows >= MAX_PENDING_ROWS {
            let keys: Vec<MonthKey> = self.months.keys().copied().collect();
            for k in keys {
                self.flush(k)?;
            }
        }
        Ok(())
    }

    fn add(&mut self, mf: MonthFrame) -> Result<(), StoreError> {
        let MonthFrame {
            key,
            df,
            min_ts,
            max_ts,
        } = mf;
        if !self.months.contains_key(&key) {
            let month = month_name(key);
            let rel = format!("month={month}/part-{:06}.parquet", self.ingest);
            let path = self.staging.join(&rel);
            let dir = path.parent().expect("part has a parent");
            fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
            let f = File::create(&path).map_err(|source| StoreError::Io {
                path: path.clone(),
                source,
            })?;
            let writer = ParquetWriter::new(f)
                .with_compression(ParquetCompression::Zstd(None))
                .with_statistics(StatisticsOptions::default())
                .batched(df.schema())
                .map_err(polars_err(&path))?;
            self.months.insert(
                key,
                MonthWriter {
                    rel,
                    month,
                    writer,
                    pending: None,
                    pending_rows: 0,
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
        mw.pending_rows += df.height();
        self.pending_rows += df.height();
        match &mut mw.pending {
            Some(p) => {
                p.vstack_mut_owned(df).map_err(polars_err(&self.staging))?;
            }
            None => mw.pending = Some(df),
        }
        if mw.pending_rows >= ROW_GROUP_ROWS {
            self.flush(key)?;
        }
        Ok(())
    }

    fn flush(&mut self, key: MonthKey) -> Result<(), StoreError> {
        let mw = self.months.get_mut(&key).expect("month open");
        if let Some(mut df) = mw.pending.take() {
            df.rechunk_mut_par();
            let path = self.staging.join(&mw.rel);
            mw.writer.write_batch(&df).map_err(polars_err(&path))?;
            self.pending_rows -= mw.pending_rows;
            mw.pending_rows = 0;
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
            let path = self.staging.join(&mw.rel);
            mw.writer.finish().map_err(polars_err(&path))?;
            drop(mw.writer);
            let f = File::open(&path).map_err(|source| StoreError::Io {
                path: path.clone(),
                source,
            })?;
            f.sync_all().map_err(|source| StoreError::Io {
                path: path.clone(),
                source,
            })?;
            parts.push(PartEntry {
                path: mw.rel,
                month: mw.month,
                rows: mw.rows,
                min_ts_ms: mw.min_ts,
                max_ts_ms: mw.max_ts,
                ingest: self.ingest,
            });
        }
        Ok(parts)
    }
}
