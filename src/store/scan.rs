//! Reading the dataset back as [`Batch`]es, the same shape the parse pipeline produces,
//! so reports and the replay run alike on the dataset and on log files.

use std::fs::File;
use std::ops::ControlFlow;

use logscope_core::batch::Batch;
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
    let (snapshot, manifest) = ds.read()?;
    let Some(snapshot) = snapshot else {
        return Ok(0);
    };
    let mut names: Vec<&str> = vec!["ts", "status", "client", "ip_hi", "ip_lo", "file", "line"];
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
    // What to read: per part, the row ranges whose time range meets [since, until).
    let mut work: Vec<(std::path::PathBuf, usize, usize)> = Vec::new();
    let overlaps = |lo: i64, hi: i64| since.is_none_or(|s| hi >= s) && until.is_none_or(|u| lo < u);
    for part in &manifest.parts {
        if !overlaps(part.min_ts_ms, part.max_ts_ms) {
            continue;
        }
        let path = snapshot.part_path(part);
        check_part(&path, part)?;
        for (offset, len) in ranges(part, &overlaps) {
            let mut o = offset;
            while o < offset + len {
                let n = SLICE_ROWS.min(offset + len - o);
                work.push((path.clone(), o, n));
                o += n;
            }
        }
    }
    let columns: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    // Decode (polars, and the conversion to batches) on one thread while the caller
    // consumes the previous slice on another: two slices in flight at most.
    let (tx, rx) = crossbeam_channel::bounded::<Result<Vec<FileBatch>, StoreError>>(2);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            for (path, offset, len) in work {
                let read = (|| {
                    let err = |e: PolarsError| StoreError::Parquet {
                        path: path.clone(),
                        detail: e.to_string(),
                    };
                    let f = File::open(&path).map_err(super::io_err(&path))?;
                    let df = ParquetReader::new(f)
                        .with_columns(Some(columns.clone()))
                        .with_slice(Some((offset, len)))
                        .finish()
                        .map_err(err)?;
                    frame_to_batches(&df, since, until).map_err(err)
                })();
                let failed = read.is_err();
                if tx.send(read).is_err() || failed {
                    return;
                }
            }
        });
        let mut total = 0u64;
        for msg in rx.iter() {
            for fb in msg? {
                total += fb.batch.len() as u64;
                if sink(fb).is_break() {
                    // Dropping the receiver stops the decoder at its next send.
                    drop(rx);
                    return Ok(total);
                }
            }
        }
        Ok(total)
    })
}

/// The row ranges `(offset, len)` of `part` worth reading: the runs of its segments whose
/// time range `overlaps`, merged; the whole part when it records no segments.
fn ranges(part: &super::PartEntry, overlaps: &dyn Fn(i64, i64) -> bool) -> Vec<(usize, usize)> {
    let whole = vec![(0, part.rows as usize)];
    if part.segments.is_empty() || part.segments.iter().map(|s| s.rows).sum::<u64>() != part.rows {
        return whole;
    }
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut offset = 0usize;
    for seg in &part.segments {
        let n = seg.rows as usize;
        if overlaps(seg.min_ts_ms, seg.max_ts_ms) {
            match out.last_mut() {
                Some((o, l)) if *o + *l == offset => *l += n,
                _ => out.push((offset, n)),
            }
        }
        offset += n;
    }
    out
}

/// A part file that is missing or not the size the manifest recorded is damage, not
/// an empty part: say so instead of answering from fewer rows.
pub fn check_part(path: &std::path::Path, part: &super::PartEntry) -> Result<(), StoreError> {
    match std::fs::metadata(path) {
        Ok(md) if md.len() == part.bytes => Ok(()),
        Ok(md) => Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: format!(
                "part is {} bytes, the manifest recorded {} (truncated or replaced); run `logscope info`",
                md.len(),
                part.bytes
            ),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: "part file is missing; run `logscope info`".into(),
        }),
        Err(e) => Err(StoreError::Io {
            path: path.to_path_buf(),
            error: e,
        }),
    }
}

/// Rows a part file's Parquet footer declares.
pub fn footer_rows(path: &std::path::Path) -> Result<u64, StoreError> {
    let f = File::open(path).map_err(super::io_err(path))?;
    ParquetReader::new(f)
        .num_rows()
        .map(|n| n as u64)
        .map_err(|e| StoreError::Parquet {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })
}

/// A frame's columns, each read once into plain vectors (absent columns are empty).
struct Cols<'a> {
    ts: Vec<Option<i64>>,
    status: Vec<Option<i32>>,
    line: Vec<Option<i64>>,
    file: Vec<Option<&'a str>>,
    client: Vec<Option<&'a str>>,
    ip_hi: Vec<Option<i64>>,
    ip_lo: Vec<Option<i64>>,
    text: Vec<(&'static str, Vec<Option<&'a str>>)>,
    has_cookie: Vec<Option<bool>>,
    bytes: Vec<Option<i64>>,
    request_time_us: Vec<Option<i64>>,
    precision: Vec<Option<i32>>,
}

const TEXT: [&str; 10] = [
    "method",
    "path",
    "query",
    "protocol",
    "user",
    "ident",
    "user_agent",
    "referer",
    "host",
    "xff",
];

impl<'a> Cols<'a> {
    fn read(df: &'a DataFrame, ts: &'a Column) -> PolarsResult<Cols<'a>> {
        let strs = |name: &str| -> PolarsResult<Vec<Option<&'a str>>> {
            match df.column(name) {
                Ok(c) => Ok(c.str()?.iter().collect()),
                Err(_) => Ok(Vec::new()),
            }
        };
        let i64s = |name: &str| -> PolarsResult<Vec<Option<i64>>> {
            match df.column(name) {
                Ok(c) => Ok(c.i64()?.iter().collect()),
                Err(_) => Ok(Vec::new()),
            }
        };
        let mut text = Vec::new();
        for name in TEXT {
            text.push((name, strs(name)?));
        }
        Ok(Cols {
            ts: ts.i64()?.iter().collect(),
            status: df.column("status")?.i32()?.iter().collect(),
            line: i64s("line")?,
            file: strs("file")?,
            client: strs("client")?,
            ip_hi: i64s("ip_hi")?,
            ip_lo: i64s("ip_lo")?,
            text,
            has_cookie: match df.column("has_cookie") {
                Ok(c) => c.bool()?.iter().collect(),
                Err(_) => Vec::new(),
            },
            bytes: i64s("bytes")?,
            request_time_us: i64s("request_time_us")?,
            precision: match df.column("ts_precision") {
                Ok(c) => c.i32()?.iter().collect(),
                Err(_) => Vec::new(),
            },
        })
    }
}

fn opt<T: Copy>(v: &[Option<T>], i: usize) -> Option<T> {
    v.get(i).copied().flatten()
}

/// Splits a frame into one batch per `file` value run, keeping rows in range.
fn frame_to_batches(
    df: &DataFrame,
    since: Option<i64>,
    until: Option<i64>,
) -> PolarsResult<Vec<FileBatch>> {
    let ts_col = df.column("ts")?.cast(&DataType::Int64)?;
    let cols = Cols::read(df, &ts_col)?;
    let mut out = Vec::new();
    let n = df.height();
    let mut start = 0;
    while start < n {
        let file = opt(&cols.file, start).unwrap_or("");
        let mut end = start + 1;
        while end < n && opt(&cols.file, end).unwrap_or("") == file {
            end += 1;
        }
        let keep: Vec<usize> = (start..end)
            .filter(|&i| {
                let t = opt(&cols.ts, i).unwrap_or(i64::MIN);
                since.is_none_or(|s| t >= s) && until.is_none_or(|u| t < u)
            })
            .collect();
        if !keep.is_empty() {
            out.push(FileBatch {
                file: file.to_string(),
                batch: rows_to_batch(&cols, &keep),
            });
        }
        start = end;
    }
    Ok(out)
}

fn rows_to_batch(cols: &Cols<'_>, keep: &[usize]) -> Batch {
    let mut b = Batch {
        ts_ms: keep
            .iter()
            .map(|&i| opt(&cols.ts, i).unwrap_or(0))
            .collect(),
        status: keep
            .iter()
            .map(|&i| opt(&cols.status, i).unwrap_or(0).clamp(0, u16::MAX as i32) as u16)
            .collect(),
        line: keep
            .iter()
            .map(|&i| opt(&cols.line, i).unwrap_or(0).max(0) as u64)
            .collect(),
        has_cookie: keep.iter().map(|&i| opt(&cols.has_cookie, i)).collect(),
        bytes: keep
            .iter()
            .map(|&i| opt(&cols.bytes, i).map(|v| v.max(0) as u64))
            .collect(),
        request_time_us: keep
            .iter()
            .map(|&i| opt(&cols.request_time_us, i).map(|v| v.max(0) as u64))
            .collect(),
        precision: keep
            .iter()
            .map(|&i| opt(&cols.precision, i).unwrap_or(0).clamp(0, 9) as u8)
            .collect(),
        lines: keep.len() as u64,
        ..Batch::default()
    };
    for &i in keep {
        let ip = match (opt(&cols.ip_hi, i), opt(&cols.ip_lo, i)) {
            (Some(hi), Some(lo)) => Some(super::frame::ip_of_halves(hi, lo)),
            _ => None,
        };
        b.ip.push(ip);
        b.client.push_str(opt(&cols.client, i));
    }
    for (name, vals) in &cols.text {
        let col = match *name {
            "method" => &mut b.method,
            "path" => &mut b.path,
            "query" => &mut b.query,
            "protocol" => &mut b.protocol,
            "user" => &mut b.user,
            "ident" => &mut b.ident,
            "user_agent" => &mut b.user_agent,
            "referer" => &mut b.referer,
            "host" => &mut b.host,
            _ => &mut b.xff,
        };
        for &i in keep {
            col.push_str(opt(vals, i));
        }
    }
    b
}
