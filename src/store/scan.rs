//! Reading the dataset back as [`Batch`]es, the same shape the parse pipeline produces,
//! so reports and the replay run alike on the dataset and on log files.

use std::fs::File;
use std::net::IpAddr;
use std::ops::ControlFlow;

use logscope_core::batch::{Batch, TextColumn};
use polars::prelude::*;

use super::{Dataset, StoreError};

/// Rows read at a time (one row group).
const SLICE_ROWS: usize = 256 * 1024;

/// Which optional columns a reader needs; `ts`, `status`, `client`, `file` and `line`
/// are always read.
#[derive(Clone, Copy, Debug)]
pub struct Columns {
    /// method, path, query, protocol.
    pub request: bool,
    /// user, ident, has_cookie.
    pub identity: bool,
    /// user_agent, referer.
    pub agent: bool,
    /// host, xff.
    pub host: bool,
    /// bytes, request_time_us, ts_precision.
    pub sizes: bool,
}

impl Columns {
    /// Every column.
    pub const ALL: Columns = Columns {
        request: true,
        identity: true,
        agent: true,
        host: true,
        sizes: true,
    };
}

/// One file's batches: the file name and its records.
pub struct FileBatch {
    /// The `file` column's value.
    pub file: String,
    /// The records.
    pub batch: Batch,
}

/// Calls `sink` with the dataset's rows, part by part in manifest order, a row group at
/// a time, keeping only rows with `since <= ts < until` (ms) when given.
pub fn scan(
    ds: &Dataset,
    cols: Columns,
    since: Option<i64>,
    until: Option<i64>,
    mut sink: impl FnMut(FileBatch) -> ControlFlow<()>,
) -> Result<u64, StoreError> {
    let manifest = ds.manifest()?;
    let mut names: Vec<&str> = vec!["ts", "status", "client", "file", "line"];
    if cols.request {
        names.extend(["method", "path", "query", "protocol"]);
    }
    if cols.identity {
        names.extend(["user", "ident", "has_cookie"]);
    }
    if cols.agent {
        names.extend(["user_agent", "referer"]);
    }
    if cols.host {
        names.extend(["host", "xff"]);
    }
    if cols.sizes {
        names.extend(["bytes", "request_time_us", "ts_precision"]);
    }
    let mut total = 0u64;
    for part in &manifest.parts {
        if since.is_some_and(|s| part.max_ts_ms < s) || until.is_some_and(|u| part.min_ts_ms >= u) {
            continue;
        }
        let path = ds.dir().join(&part.path);
        let err = |e: PolarsError| StoreError::Parquet {
            path: path.clone(),
            detail: e.to_string(),
        };
        let mut offset = 0usize;
        while (offset as u64) < part.rows {
            let f = File::open(&path).map_err(|source| StoreError::Io {
                path: path.clone(),
                source,
            })?;
            let df = ParquetReader::new(f)
                .with_columns(Some(names.iter().map(|s| s.to_string()).collect()))
                .with_slice(Some((offset, SLICE_ROWS)))
                .finish()
                .map_err(err)?;
            offset += SLICE_ROWS;
            if df.height() == 0 {
                break;
            }
            for fb in frame_to_batches(&df, since, until).map_err(err)? {
                total += fb.batch.len() as u64;
                if sink(fb).is_break() {
                    return Ok(total);
                }
            }
        }
    }
    Ok(total)
}

fn text(df: &DataFrame, name: &str, keep: &[usize], out: &mut TextColumn) -> PolarsResult<()> {
    match df.column(name) {
        Ok(c) => {
            let ca = c.str()?;
            for &i in keep {
                out.push(ca.get(i).map(str::as_bytes));
            }
        }
        Err(_) => {
            for _ in keep {
                out.push(None);
            }
        }
    }
    Ok(())
}

/// Splits a frame into one batch per `file` value run, keeping rows in range.
fn frame_to_batches(
    df: &DataFrame,
    since: Option<i64>,
    until: Option<i64>,
) -> PolarsResult<Vec<FileBatch>> {
    let ts_col = df.column("ts")?.cast(&DataType::Int64)?;
    let ts = ts_col.i64()?;
    let files = df.column("file")?.str()?;
    let mut out = Vec::new();
    let n = df.height();
    let mut start = 0;
    while start < n {
        let file = files.get(start).unwrap_or("");
        let mut end = start + 1;
        while end < n && files.get(end).unwrap_or("") == file {
            end += 1;
        }
        let keep: Vec<usize> = (start..end)
            .filter(|&i| {
                let t = ts.get(i).unwrap_or(i64::MIN);
                since.is_none_or(|s| t >= s) && until.is_none_or(|u| t < u)
            })
            .collect();
        if !keep.is_empty() {
            out.push(FileBatch {
                file: file.to_string(),
                batch: rows_to_batch(df, &ts_col, &keep)?,
            });
        }
        start = end;
    }
    Ok(out)
}

fn rows_to_batch(df: &DataFrame, ts_col: &Column, keep: &[usize]) -> PolarsResult<Batch> {
    let ts = ts_col.i64()?;
    let mut b = Batch {
        ts_ms: keep.iter().map(|&i| ts.get(i).unwrap_or(0)).collect(),
        ..Batch::default()
    };
    let status = df.column("status")?.u16()?;
    b.status = keep.iter().map(|&i| status.get(i).unwrap_or(0)).collect();
    let line = df.column("line")?.u64()?;
    b.line = keep.iter().map(|&i| line.get(i).unwrap_or(0)).collect();
    let client = df.column("client")?.str()?;
    for &i in keep {
        let c = client.get(i);
        b.ip.push(c.and_then(|c| c.parse::<IpAddr>().ok()));
        b.client.push(c.map(str::as_bytes));
    }
    text(df, "method", keep, &mut b.method)?;
    text(df, "path", keep, &mut b.path)?;
    text(df, "query", keep, &mut b.query)?;
    text(df, "protocol", keep, &mut b.protocol)?;
    text(df, "user", keep, &mut b.user)?;
    text(df, "ident", keep, &mut b.ident)?;
    text(df, "user_agent", keep, &mut b.user_agent)?;
    text(df, "referer", keep, &mut b.referer)?;
    text(df, "host", keep, &mut b.host)?;
    text(df, "xff", keep, &mut b.xff)?;
    b.has_cookie = match df.column("has_cookie") {
        Ok(c) => {
            let ca = c.bool()?;
            keep.iter().map(|&i| ca.get(i)).collect()
        }
        Err(_) => vec![None; keep.len()],
    };
    b.bytes = match df.column("bytes") {
        Ok(c) => {
            let ca = c.u64()?;
            keep.iter().map(|&i| ca.get(i)).collect()
        }
        Err(_) => vec![None; keep.len()],
    };
    b.request_time_us = match df.column("request_time_us") {
        Ok(c) => {
            let ca = c.u64()?;
            keep.iter().map(|&i| ca.get(i)).collect()
        }
        Err(_) => vec![None; keep.len()],
    };
    b.precision = match df.column("ts_precision") {
        Ok(c) => {
            let ca = c.u8()?;
            keep.iter().map(|&i| ca.get(i).unwrap_or(0)).collect()
        }
        Err(_) => vec![0; keep.len()],
    };
    b.lines = keep.len() as u64;
    Ok(b)
}
