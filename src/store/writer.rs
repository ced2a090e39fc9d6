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
const ROW_GROUP_ROWS: usize = 256 * 1024;
/// Rows held across all months before everything is flushed (bounds memory).
const MAX_PENDING_ROWS: usize = 512 * 1024;

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

/// Writes one ingest's rows into per-month part files under a staging directory.
pub struct StagedWriter {
    staging: PathBuf,
    ingest: u64,
    months: BTreeMap<MonthKey, MonthWriter>,
    month_of: MonthOf,
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
            month_of: MonthOf::default(),
            pending_rows: 0,
        }
    }

    /// Adds the records of a batch read from `file`.
    pub fn write(&mut self, batch: &Batch, file: &str) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        // Split by month; almost always a batch lies in one month.
        let keys: Vec<MonthKey> = batch.ts_ms.iter().map(|&t| self.month_of.key(t)).collect();
        if keys.iter().all(|&k| k == keys[0]) {
            self.add(keys[0], batch, file)?;
        } else {
            let mut groups: BTreeMap<MonthKey, Vec<usize>> = BTreeMap::new();
            for (i, &k) in keys.iter().enumerate() {
                groups.entry(k).or_default().push(i);
            }
            for (k, idx) in groups {
                let sub = batch.retain_indices(&idx);
                self.add(k, &sub, file)?;
            }
        }
        if self.pending_rows >= MAX_PENDING_ROWS {
            let keys: Vec<MonthKey> = self.months.keys().copied().collect();
            for k in keys {
                self.flush(k)?;
            }
        }
        Ok(())
    }

    fn add(&mut self, key: MonthKey, batch: &Batch, file: &str) -> Result<(), StoreError> {
        let df = batch_to_frame(batch, file).map_err(polars_err(&self.staging))?;
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
                .with_statistics(StatisticsOptions::full())
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
        mw.rows += batch.len() as u64;
        for &t in &batch.ts_ms {
            mw.min_ts = mw.min_ts.min(t);
            mw.max_ts = mw.max_ts.max(t);
        }
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
