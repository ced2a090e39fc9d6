//! Reading the dataset back as [`Batch`]es, the same shape the parse pipeline produces,
//! so reports and the replay run alike on the dataset and on log files.

use std::fs::File;
use std::ops::ControlFlow;

use logscope_core::batch::{Batch, IpCodes, NO_CODE, NULL_CODE, TextColumn};
use polars::prelude::*;
use rustc_hash::FxHashMap;

use super::checksum::Sums;
use super::frame::Column;
use super::pages::{self, Decoded, Ints, PageError};
use super::slices;
use super::{Dataset, StoreError};

/// Which columns a reader needs; `ts` and `file` are always read. Reading fewer columns
/// is most of what makes a report fast: each one costs its decoding. A batch read
/// without a column carries its default (status 0, no client, null text), or for
/// `line`, `bytes`, `request_time_us`, `ts_precision` and `has_cookie` no values at all
/// (`Batch::line_no`, `Batch::size` … give the default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Columns {
    /// status.
    pub status: bool,
    /// line (the row's line in its input).
    pub line: bool,
    /// The client columns: client, ip_hi, ip_lo.
    pub client: bool,
    /// method, path.
    pub request: bool,
    /// path (without the method, where `request` is off).
    pub path: bool,
    /// query.
    pub query: bool,
    /// protocol.
    pub protocol: bool,
    /// user, ident, has_cookie.
    pub identity: bool,
    /// user_agent.
    pub agent: bool,
    /// referer.
    pub referer: bool,
    /// host.
    pub host: bool,
    /// xff.
    pub xff: bool,
    /// bytes.
    pub sizes: bool,
    /// request_time_us, ts_precision.
    pub timing: bool,
    /// `client` on every row: otherwise only rows without an address carry it (the
    /// address is the client), and a row with one reads it as null.
    pub every_client: bool,
}

impl Columns {
    /// Every column.
    pub const ALL: Columns = Columns {
        status: true,
        line: true,
        client: true,
        request: true,
        path: true,
        query: true,
        protocol: true,
        identity: true,
        agent: true,
        referer: true,
        host: true,
        xff: true,
        sizes: true,
        timing: true,
        every_client: true,
    };

    /// The base every reader of rows started from: status, line and the client.
    pub const NONE: Columns = Columns {
        status: true,
        line: true,
        client: true,
        request: false,
        path: false,
        query: false,
        protocol: false,
        identity: false,
        agent: false,
        referer: false,
        host: false,
        xff: false,
        sizes: false,
        timing: false,
        every_client: false,
    };

    fn names(&self, version: u32) -> Vec<&'static str> {
        use Column as C;
        let mut columns = vec![C::Ts];
        let groups: [(bool, &[Column]); 13] = [
            (self.status, &[C::Status]),
            (self.client, &[C::Client, C::IpHi, C::IpLo]),
            (true, &[C::File]),
            (self.line, &[C::Line]),
            (self.request, &[C::Method, C::Path]),
            (self.path && !self.request, &[C::Path]),
            (self.query, &[C::Query]),
            (self.protocol, &[C::Protocol]),
            (self.identity, &[C::User, C::Ident, C::HasCookie]),
            (self.agent, &[C::UserAgent]),
            (self.referer, &[C::Referer]),
            (self.host, &[C::Host]),
            (self.xff, &[C::Xff]),
        ];
        for (on, cols) in groups {
            if on {
                columns.extend(cols);
            }
        }
        if self.sizes {
            columns.push(C::Bytes);
        }
        if self.timing {
            columns.extend([C::RequestTimeUs, C::TsPrecision]);
        }
        // Format 2 has no `client_list` (no row of it was read from a list).
        if self.xff && version >= 3 {
            columns.push(C::ClientList);
        }
        // Format 4 keeps a request that is not HTTP in `request`, its path null; a
        // batch has it in `path` (`merge_request`).
        if (self.request || self.path) && version >= 4 {
            columns.push(C::Request);
        }
        columns.into_iter().map(Column::name).collect()
    }
}

/// One file's batches: the file name and its records.
pub struct FileBatch {
    /// The `file` column's value.
    pub file: String,
    /// The records.
    pub batch: Batch,
    /// No row delivered after this batch is older than this (UTC ms; `i64::MIN`: not
    /// known), from the time ranges the manifest records: a reader that needs rows in
    /// time order can act on the rows before it without waiting for the end.
    pub floor_ms: i64,
    /// The index in the manifest's parts of the part it was read from.
    pub part: usize,
}

/// What a [`scan`] read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scanned {
    /// Rows delivered to the sink (inside `since`/`until`).
    pub delivered: u64,
    /// Rows of the whole snapshot read, time filters or not: `rows - delivered` is the
    /// number of rows outside the period (when the sink did not stop early).
    pub rows: u64,
}

/// Calls `sink` with the dataset's rows, part by part in manifest order, a row group at
/// a time, keeping only rows with `since <= ts < until` (ms) when given.
pub fn scan(
    ds: &Dataset,
    cols: Columns,
    since: Option<i64>,
    until: Option<i64>,
    mut sink: impl FnMut(FileBatch) -> ControlFlow<()>,
) -> Result<Scanned, StoreError> {
    let order = slices::PartOrder::Manifest;
    scan_with(ds, cols, since, until, order, |_| (), |fb, ()| sink(fb))
}

/// [`scan`] of the parts whose manifest index is in `only`, in manifest order.
pub fn scan_parts(
    ds: &Dataset,
    cols: Columns,
    only: &[usize],
    mut sink: impl FnMut(FileBatch) -> ControlFlow<()>,
) -> Result<Scanned, StoreError> {
    let plan = slices::plan_parts(ds, None, None, slices::PartOrder::Manifest, Some(only))?;
    scan_plan(ds, cols, (None, None), plan, |_| (), |fb, ()| sink(fb))
}

/// [`scan`], parts in `order`, with `prep` run on each batch on the thread that
/// decoded it (every core) and its result handed to `sink` with the batch, in the same
/// order.
pub fn scan_with<P: Send>(
    ds: &Dataset,
    cols: Columns,
    since: Option<i64>,
    until: Option<i64>,
    order: slices::PartOrder,
    prep: impl Fn(&Batch) -> P + Sync,
    sink: impl FnMut(FileBatch, P) -> ControlFlow<()>,
) -> Result<Scanned, StoreError> {
    let plan = slices::plan(ds, since, until, order)?;
    scan_plan(ds, cols, (since, until), plan, prep, sink)
}

fn scan_plan<P: Send>(
    ds: &Dataset,
    cols: Columns,
    (since, until): (Option<i64>, Option<i64>),
    plan: Option<slices::Plan>,
    prep: impl Fn(&Batch) -> P + Sync,
    mut sink: impl FnMut(FileBatch, P) -> ControlFlow<()>,
) -> Result<Scanned, StoreError> {
    let Some(plan) = plan else {
        return Ok(Scanned::default());
    };
    let columns: Vec<String> = cols
        .names(plan.version)
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mode = ScanMode::from_env();
    let mut total = 0u64;
    let plan = &plan;
    let prep = &prep;
    slices::in_order(
        ds,
        plan,
        |s| {
            let mut batches =
                read_slice(plan, s, &columns, (since, until), cols.every_client, mode)?;
            // Rows of this slice still to come are no older than its start.
            let n = batches.len();
            for (k, fb) in batches.iter_mut().enumerate() {
                fb.part = s.part;
                fb.floor_ms = if k + 1 == n {
                    s.floor_ms
                } else {
                    s.floor_ms.min(s.min_ts_ms)
                };
            }
            Ok(batches
                .into_iter()
                .map(|fb| {
                    let p = prep(&fb.batch);
                    (fb, p)
                })
                .collect::<Vec<_>>())
        },
        |batches| {
            for (fb, p) in batches {
                total += fb.batch.len() as u64;
                if sink(fb, p).is_break() {
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        },
    )?;
    Ok(Scanned {
        delivered: total,
        rows: plan.rows,
    })
}

/// How slices are read: `LOGSCOPE_SCAN=polars` reads every slice through polars (the
/// plain path the page reader is tested against); `LOGSCOPE_SCAN=pages` refuses the
/// fallback (the tests' proof that the page reader read every slice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ScanMode {
    /// The page reader, polars where it cannot.
    Pages,
    /// The page reader only.
    PagesOnly,
    /// polars only.
    Polars,
}

impl ScanMode {
    pub(super) fn from_env() -> ScanMode {
        match std::env::var_os("LOGSCOPE_SCAN") {
            Some(v) if v == "polars" => ScanMode::Polars,
            Some(v) if v == "pages" => ScanMode::PagesOnly,
            _ => ScanMode::Pages,
        }
    }

    /// What a page-reader result means in this mode: `Some` = the answer (data or
    /// damage), `None` = read the slice through polars.
    pub(super) fn settle<T>(
        self,
        path: &std::path::Path,
        r: Result<T, PageError>,
    ) -> Option<Result<T, StoreError>> {
        match r {
            Ok(v) => Some(Ok(v)),
            Err(PageError::Damaged(detail)) => Some(Err(StoreError::Parquet {
                path: path.to_path_buf(),
                detail,
            })),
            Err(PageError::Checksum(what)) => Some(Err(super::checksum::mismatch(path, &what))),
            Err(PageError::Unsupported(why)) if self == ScanMode::PagesOnly => {
                Some(Err(StoreError::Parquet {
                    path: path.to_path_buf(),
                    detail: format!("page reader: {why}"),
                }))
            }
            // An encoding the page reader does not know: polars does.
            Err(PageError::Unsupported(_)) => None,
        }
    }
}

/// One slice as batches: from its pages, or through polars.
fn read_slice(
    plan: &slices::Plan,
    s: &slices::Slice,
    columns: &[String],
    (since, until): (Option<i64>, Option<i64>),
    every_client: bool,
    mode: ScanMode,
) -> Result<Vec<FileBatch>, StoreError> {
    let mut batches = read_slice_as_stored(plan, s, columns, (since, until), every_client, mode)?;
    if plan.version == 3 {
        batches
            .iter_mut()
            .for_each(|fb| batch_from_format3(&mut fb.batch));
    }
    Ok(batches)
}

/// [`read_slice`], text as the part stored it.
fn read_slice_as_stored(
    plan: &slices::Plan,
    s: &slices::Slice,
    columns: &[String],
    (since, until): (Option<i64>, Option<i64>),
    every_client: bool,
    mode: ScanMode,
) -> Result<Vec<FileBatch>, StoreError> {
    let md = plan.footer(&s.path);
    if mode != ScanMode::Polars
        && let Some(md) = &md
        && let Some(r) = mode.settle(
            &s.path,
            slice_from_pages(
                &s.path,
                md,
                plan.sums(&s.path),
                columns,
                (s.offset, s.len),
                (since, until),
                every_client,
            ),
        )
    {
        return r;
    }
    let df = polars_slice(&s.path, md, columns, s.offset, s.len)?;
    frame_to_batches(&df, since, until, every_client).map_err(|e| StoreError::Parquet {
        path: s.path.clone(),
        detail: e.to_string(),
    })
}

/// Rows `offset..offset + len` of the part at `path`, `columns` only, through polars.
pub(super) fn polars_slice(
    path: &std::path::Path,
    md: Option<FileMetadataRef>,
    columns: &[String],
    offset: usize,
    len: usize,
) -> Result<DataFrame, StoreError> {
    let f = File::open(path).map_err(super::io_err(path))?;
    let mut reader = ParquetReader::new(f);
    if let Some(md) = md {
        reader.set_metadata(md);
    }
    reader
        .with_columns(Some(columns.to_vec()))
        .with_slice(Some((offset, len)))
        .finish()
        .map_err(|e| StoreError::Parquet {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })
}

/// The dataset's text columns that a [`Batch`] carries, besides `client` (read only
/// for the rows whose client is not an address).
const TEXT: [Column; 10] = [
    Column::Method,
    Column::Path,
    Column::Query,
    Column::Protocol,
    Column::User,
    Column::Ident,
    Column::UserAgent,
    Column::Referer,
    Column::Host,
    Column::Xff,
];

fn text_field(b: &mut Batch, c: Column) -> &mut TextColumn {
    match c {
        Column::Method => &mut b.method,
        Column::Path => &mut b.path,
        Column::Query => &mut b.query,
        Column::Protocol => &mut b.protocol,
        Column::User => &mut b.user,
        Column::Ident => &mut b.ident,
        Column::UserAgent => &mut b.user_agent,
        Column::Referer => &mut b.referer,
        Column::Host => &mut b.host,
        Column::Client => &mut b.client,
        Column::Xff => &mut b.xff,
        Column::File
        | Column::Ts
        | Column::TsPrecision
        | Column::IpHi
        | Column::IpLo
        | Column::Status
        | Column::Bytes
        | Column::RequestTimeUs
        | Column::HasCookie
        | Column::ClientList
        | Column::Request
        | Column::Line => unreachable!("{} is not a batch's text column", c.name()),
    }
}

/// `path` with the text of a request that is not HTTP (format 4's `request`, where
/// `path` is null) put back in `path`, as the parser gives it: `method` null, `path`
/// the request's text. Nothing to do (the common case) when `request` is all null.
fn merge_request(path: &mut TextColumn, request: &TextColumn, rows: usize) {
    if (0..rows).all(|i| request.code(i).is_none()) {
        return;
    }
    let mut merged = TextColumn::default();
    for i in 0..rows {
        merged.push_str(path.get(i).or(request.get(i)));
    }
    *path = merged.to_coded();
}

/// Format 3's stored text (a backslash doubled, a byte that is not UTF-8 as `\xHH`, a
/// character of U+EF80–U+EFFF as itself) in the form of format 4
/// (`batch::push_stored`). `None` when it is the same.
fn from_format3(s: &str) -> Option<String> {
    if !format3_differs(s) {
        return None;
    }
    // The logged bytes, then stored as format 4 stores them.
    let b = s.as_bytes();
    let mut raw = Vec::with_capacity(b.len());
    let mut i = 0;
    let hex = |c: Option<&u8>| c.and_then(|&c| (c as char).to_digit(16));
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (b'\\', Some(b'\\')) => {
                raw.push(b'\\');
                i += 2;
            }
            (b'\\', Some(b'x')) if hex(b.get(i + 2)).is_some() && hex(b.get(i + 3)).is_some() => {
                let v = hex(b.get(i + 2)).unwrap_or(0) * 16 + hex(b.get(i + 3)).unwrap_or(0);
                raw.push(v as u8);
                i += 4;
            }
            (c, _) => {
                raw.push(c);
                i += 1;
            }
        }
    }
    let mut out = String::with_capacity(s.len());
    logscope_core::batch::push_stored(&mut out, &raw);
    Some(out)
}

/// Whether format 3's stored text `s` is not format 4's.
fn format3_differs(s: &str) -> bool {
    s.chars()
        .any(|c| c == '\\' || logscope_core::batch::stored_byte(c).is_some())
}

/// Every text column of `b` from format 3's stored form to format 4's, a distinct
/// value at a time.
fn batch_from_format3(b: &mut Batch) {
    for column in TEXT.iter().copied().chain([Column::Client]) {
        let col = text_field(b, column);
        let changed = |col: &TextColumn| {
            (0..col.slots()).any(|k| col.value(k as u32).is_some_and(format3_differs))
        };
        if !changed(col) {
            continue;
        }
        let mut values = TextColumn::default();
        for k in 0..col.slots() {
            let v = col.value(k as u32);
            match v.and_then(from_format3) {
                Some(new) => values.push_str(Some(&new)),
                None => values.push_str(v),
            }
        }
        *col = match col.codes() {
            Some(codes) => TextColumn::with_codes(values, codes.to_vec()),
            // Plain: slot k is row k.
            None => values,
        };
    }
}

/// The rows of a frame to keep, in order.
enum Keep {
    /// `start..end`, every row.
    Range(usize, usize),
    /// These rows (ascending).
    Rows(Vec<usize>),
}

impl Keep {
    fn len(&self) -> usize {
        match self {
            Keep::Range(a, b) => b - a,
            Keep::Rows(r) => r.len(),
        }
    }

    fn for_each(&self, mut f: impl FnMut(usize)) {
        match self {
            Keep::Range(a, b) => (*a..*b).for_each(&mut f),
            Keep::Rows(r) => r.iter().copied().for_each(f),
        }
    }
}

/// A column's chunks with the frame row each starts at.
struct Chunks<'a, A> {
    arrays: Vec<(usize, &'a A)>,
}

impl<'a, A> Chunks<'a, A> {
    fn new(arrays: impl Iterator<Item = &'a A>, len: impl Fn(&A) -> usize) -> Self {
        let mut at = 0;
        let arrays = arrays
            .map(|a| {
                let start = at;
                at += len(a);
                (start, a)
            })
            .collect();
        Chunks { arrays }
    }

    /// Calls `f(chunk index, array, row in the array)` for each kept row.
    fn for_each(&self, keep: &Keep, mut f: impl FnMut(usize, &'a A, usize)) {
        let mut c = 0;
        keep.for_each(|row| {
            while c + 1 < self.arrays.len() && self.arrays[c + 1].0 <= row {
                c += 1;
            }
            let (start, arr) = self.arrays[c];
            f(c, arr, row - start);
        });
    }
}

/// A text column read into the coded layout: one slot per distinct Parquet value
/// view. Views of a dictionary-encoded chunk are equal exactly when they come from the
/// same dictionary entry, and a view determines its bytes, so equal views are equal
/// strings: each distinct value is copied once, rows become integer codes.
fn coded_text(
    ca: &StringChunked,
    keep: &Keep,
    map: &mut FxHashMap<(usize, u128), u32>,
    out: &mut TextColumn,
) {
    map.clear();
    let mut values = TextColumn::default();
    let mut codes = Vec::with_capacity(keep.len());
    let chunks = Chunks::new(ca.downcast_iter(), |a| a.len());
    // A column whose values hardly repeat (queries, referers) is not worth the
    // hashing: after a sample, such a column stores each row's value in a slot of its own.
    const SAMPLE: usize = 4096;
    let mut seen = 0usize;
    let mut hashing = true;
    chunks.for_each(keep, |c, arr, i| {
        let Some(v) = arr.get(i) else {
            codes.push(NULL_CODE);
            return;
        };
        if !hashing {
            values.push_str(Some(v));
            codes.push((values.slots() - 1) as u32);
            return;
        }
        let key = (c, arr.views()[i].as_u128());
        let code = *map.entry(key).or_insert_with(|| {
            values.push_str(Some(v));
            (values.slots() - 1) as u32
        });
        codes.push(code);
        seen += 1;
        if seen == SAMPLE && map.len() * 2 > SAMPLE {
            hashing = false;
        }
    });
    *out = TextColumn::with_codes(values, codes);
}

/// Values of a numeric column for the kept rows (`None` where null or absent).
fn numbers<T>(ca: Option<&ChunkedArray<T>>, keep: &Keep) -> Vec<Option<T::Native>>
where
    T: PolarsNumericType,
{
    let mut out = Vec::with_capacity(keep.len());
    match ca {
        Some(ca) => match keep {
            // The common case: every row of a run, copied chunk by chunk.
            Keep::Range(a, b) => {
                let mut at = 0;
                for arr in ca.downcast_iter() {
                    let (lo, hi) = ((*a).max(at), (*b).min(at + arr.len()));
                    if lo < hi {
                        let vals = &arr.values()[lo - at..hi - at];
                        match arr.validity() {
                            None => out.extend(vals.iter().map(|&v| Some(v))),
                            Some(valid) => out.extend(
                                vals.iter()
                                    .enumerate()
                                    .map(|(j, &v)| valid.get_bit(lo - at + j).then_some(v)),
                            ),
                        }
                    }
                    at += arr.len();
                }
            }
            Keep::Rows(_) => {
                let chunks = Chunks::new(ca.downcast_iter(), |a| a.len());
                chunks.for_each(keep, |_, arr, i| out.push(arr.get(i)));
            }
        },
        None => out.resize(keep.len(), None),
    }
    out
}

/// Splits a frame into one batch per `file` value run, keeping rows in range.
fn frame_to_batches(
    df: &DataFrame,
    since: Option<i64>,
    until: Option<i64>,
    every_client: bool,
) -> PolarsResult<Vec<FileBatch>> {
    let ts_col = df.column("ts")?.cast(&DataType::Int64)?;
    let ts = ts_col.i64()?;
    let file = df.column("file")?.str()?;
    let n = df.height();
    // Runs of equal `file`: the column is one value per input, so compare views first.
    let mut runs: Vec<(usize, usize)> = Vec::new();
    {
        let mut prev: Option<Option<&str>> = None;
        for (i, f) in file.iter().enumerate() {
            if prev != Some(f) {
                if let Some(last) = runs.last_mut() {
                    last.1 = i;
                }
                runs.push((i, n));
                prev = Some(f);
            }
        }
    }
    let ts_vals: Vec<Option<i64>> = numbers(Some(ts), &Keep::Range(0, n));
    let in_range = |t: i64| since.is_none_or(|s| t >= s) && until.is_none_or(|u| t < u);
    let mut map = FxHashMap::default();
    let mut out = Vec::new();
    for (start, end) in runs {
        let keep = if (start..end).all(|i| in_range(ts_vals[i].unwrap_or(i64::MIN))) {
            Keep::Range(start, end)
        } else {
            Keep::Rows(
                (start..end)
                    .filter(|&i| in_range(ts_vals[i].unwrap_or(i64::MIN)))
                    .collect(),
            )
        };
        if keep.len() == 0 {
            continue;
        }
        let mut b = Batch {
            lines: keep.len() as u64,
            ..Batch::default()
        };
        b.ts_ms.reserve(keep.len());
        keep.for_each(|i| b.ts_ms.push(ts_vals[i].unwrap_or(0)));
        let int32 = |name: &str| df.column(name).ok().and_then(|c| c.i32().ok());
        let int64 = |name: &str| df.column(name).ok().and_then(|c| c.i64().ok());
        b.status = numbers(int32("status"), &keep)
            .into_iter()
            .map(|v| v.unwrap_or(0).clamp(0, u16::MAX as i32) as u16)
            .collect();
        b.line = numbers(int64("line"), &keep)
            .into_iter()
            .map(|v| v.unwrap_or(0).max(0) as u64)
            .collect();
        b.precision = numbers(int32("ts_precision"), &keep)
            .into_iter()
            .map(|v| v.unwrap_or(0).clamp(0, 9) as u8)
            .collect();
        let unsigned = |v: Vec<Option<i64>>| -> Vec<Option<u64>> {
            v.into_iter().map(|v| v.map(|v| v.max(0) as u64)).collect()
        };
        b.bytes = unsigned(numbers(int64("bytes"), &keep));
        b.request_time_us = unsigned(numbers(int64("request_time_us"), &keep));
        b.has_cookie = match df.column("has_cookie").ok().and_then(|c| c.bool().ok()) {
            Some(ca) => {
                let mut v = Vec::with_capacity(keep.len());
                Chunks::new(ca.downcast_iter(), |a| a.len())
                    .for_each(&keep, |_, arr, i| v.push(arr.get(i)));
                v
            }
            None => vec![None; keep.len()],
        };
        if let Some(ca) = df.column("client_list").ok().and_then(|c| c.bool().ok()) {
            b.client_list.reserve(keep.len());
            Chunks::new(ca.downcast_iter(), |a| a.len()).for_each(&keep, |_, arr, i| {
                b.client_list.push(arr.get(i).unwrap_or(false))
            });
        }
        let hi = numbers(int64("ip_hi"), &keep);
        let lo = numbers(int64("ip_lo"), &keep);
        b.ip = hi
            .iter()
            .zip(&lo)
            .map(|(h, l)| match (h, l) {
                (Some(h), Some(l)) => Some(super::frame::ip_of_halves(*h, *l)),
                _ => None,
            })
            .collect();
        // `client` matters only where it is not an address (the address is the client):
        // rows with an address leave it null.
        let names_only = every_client || b.ip.iter().any(Option::is_none);
        for column in TEXT
            .iter()
            .copied()
            .chain(names_only.then_some(Column::Client))
        {
            let (name, col) = (column.name(), text_field(&mut b, column));
            match df.column(name).ok().and_then(|c| c.str().ok()) {
                Some(ca) => coded_text(ca, &keep, &mut map, col),
                None => *col = TextColumn::absent(),
            }
        }
        if let Some(ca) = df.column("request").ok().and_then(|c| c.str().ok()) {
            let mut request = TextColumn::default();
            coded_text(ca, &keep, &mut map, &mut request);
            merge_request(&mut b.path, &request, keep.len());
        }
        if !names_only {
            b.client = TextColumn::absent();
        }
        let file_name = file.get(start).unwrap_or("").to_string();
        out.push(FileBatch {
            file: file_name,
            batch: b,
            floor_ms: i64::MIN,
            part: 0,
        });
    }
    Ok(out)
}

/// Rows `offset..offset + len` of the part at `path` read from its pages ([`pages`]),
/// as [`frame_to_batches`] would give them.
fn slice_from_pages(
    path: &std::path::Path,
    md: &FileMetadataRef,
    sums: Option<&Sums>,
    columns: &[String],
    (offset, len): (usize, usize),
    (since, until): (Option<i64>, Option<i64>),
    every_client: bool,
) -> Result<Vec<FileBatch>, PageError> {
    let f = File::open(path).map_err(|e| PageError::Damaged(format!("opening: {e}")))?;
    let mut out = Vec::new();
    let mut start = 0usize;
    for (g, rg) in md.row_groups.iter().enumerate() {
        let want = |name: &str| sums.and_then(|s| s.column(g, rg, name));
        let n = rg.num_rows();
        let (lo, hi) = (offset.max(start), (offset + len).min(start + n));
        if lo < hi {
            let mut cols: Vec<(&str, Decoded)> = Vec::with_capacity(columns.len());
            // `client` only matters for rows without an address: read it last, if any.
            for name in columns.iter().filter(|c| *c != "client") {
                let chunk = rg
                    .columns_under_root_iter(name)
                    .and_then(|mut it| it.next());
                if let Some(chunk) = chunk {
                    // The address's dictionary index: reports count per distinct address.
                    let codes = name == "ip_lo";
                    let col = pages::read_column(&f, chunk, n, want(name), codes)?;
                    cols.push((name.as_str(), col));
                }
            }
            let addressless = every_client
                || match cols.iter().find(|(c, _)| *c == "ip_hi") {
                    Some((_, Decoded::Int(v))) => v.any_null(lo - start..hi - start),
                    _ => true,
                };
            if addressless
                && columns.iter().any(|c| c == "client")
                && let Some(chunk) = rg
                    .columns_under_root_iter("client")
                    .and_then(|mut it| it.next())
            {
                cols.push((
                    "client",
                    pages::read_column(&f, chunk, n, want("client"), false)?,
                ));
            }
            out.extend(decoded_to_batches(
                cols,
                lo - start,
                hi - start,
                (since, until),
                every_client,
            )?);
        }
        start += n;
    }
    Ok(out)
}

/// A decoded text column: its values and the slot of each row.
type Coded = (TextColumn, Vec<u32>);

/// The kept rows of one decoded integer column (all null where it was not read).
struct Gather<'a> {
    v: Option<&'a Ints>,
    keep: &'a Keep,
    rows: usize,
}

impl Gather<'_> {
    /// The kept rows, each mapped by `f`, in one pass.
    fn map<T: Clone>(self, f: impl Fn(Option<i64>) -> T) -> Vec<T> {
        let Some(v) = self.v else {
            // A column not read: one value, filled (zeros come zeroed from the allocator).
            return vec![f(None); self.rows];
        };
        let x = &v.values;
        match (&v.valid, self.keep) {
            (None, &Keep::Range(a, z)) => x[a..z].iter().map(|&x| f(Some(x))).collect(),
            (None, Keep::Rows(r)) => r.iter().map(|&i| f(Some(x[i]))).collect(),
            (Some(ok), &Keep::Range(a, z)) => x[a..z]
                .iter()
                .zip(&ok[a..z])
                .map(|(&x, &ok)| f(ok.then_some(x)))
                .collect(),
            (Some(ok), Keep::Rows(r)) => r.iter().map(|&i| f(ok[i].then_some(x[i]))).collect(),
        }
    }
}

/// The kept rows' address codes ([`Batch::ip_codes`]): `ip_lo`'s dictionary index for
/// each row whose `ip_hi` is 0 (IPv4 addresses and the IPv6 ones below 2^64), so that
/// equal codes are equal addresses; [`NO_CODE`] for the others (IPv6).
fn ip_codes(hi: Option<&Ints>, lo: Option<&Ints>, keep: &Keep) -> Option<IpCodes> {
    let (hi, lo) = (hi?, lo?);
    if hi.valid.is_some() || lo.valid.is_some() {
        return None;
    }
    let codes = lo.codes.as_ref()?;
    let code = |i: usize| if hi.values[i] == 0 { codes[i] } else { NO_CODE };
    let codes = match keep {
        Keep::Range(a, z) => (*a..*z).map(code).collect(),
        Keep::Rows(r) => r.iter().map(|&i| code(i)).collect(),
    };
    Some(IpCodes {
        codes,
        slots: lo.dict_len,
    })
}

/// Splits rows `lo..hi` of decoded columns into one batch per `file` value run,
/// keeping rows in range: [`frame_to_batches`] for the page reader.
fn decoded_to_batches(
    cols: Vec<(&str, Decoded)>,
    lo: usize,
    hi: usize,
    (since, until): (Option<i64>, Option<i64>),
    every_client: bool,
) -> Result<Vec<FileBatch>, PageError> {
    // The text columns of the batches apart (`file` aside): a batch of every row of the
    // row group takes its column whole instead of copying it.
    let (texts, cols): (Vec<_>, Vec<_>) = cols
        .into_iter()
        .partition(|(n, d)| *n != "file" && matches!(d, Decoded::Text { .. }));
    let mut texts: Vec<(&str, Option<Coded>)> = texts
        .into_iter()
        .map(|(n, d)| match d {
            Decoded::Text { values, codes } => (n, Some((values, codes))),
            _ => (n, None),
        })
        .collect();
    let get = |name: &str| cols.iter().find(|(n, _)| *n == name).map(|(_, d)| d);
    let int = |name: &str| match get(name) {
        Some(Decoded::Int(v)) => Some(v),
        _ => None,
    };
    let boolean = |name: &str| match get(name) {
        Some(Decoded::Bool(v)) => Some(v.as_slice()),
        _ => None,
    };
    let Some(ts) = int("ts") else {
        return Err(PageError::Unsupported("no ts column".into()));
    };
    let Some(Decoded::Text {
        values: file_values,
        codes: file_codes,
    }) = get("file")
    else {
        return Err(PageError::Unsupported("no file column".into()));
    };
    let file_of = |i: usize| match file_codes[i] {
        NULL_CODE => None,
        k => file_values.value(k),
    };
    // Runs of equal `file` (equal codes are equal values; plain pages repeat values).
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for i in lo..hi {
        let same = i > lo && (file_codes[i] == file_codes[i - 1] || file_of(i) == file_of(i - 1));
        if !same {
            if let Some(last) = runs.last_mut() {
                last.1 = i;
            }
            runs.push((i, hi));
        }
    }
    let in_range = |t: i64| since.is_none_or(|s| t >= s) && until.is_none_or(|u| t < u);
    let mut remap = Vec::new();
    let mut out = Vec::new();
    let single = runs.len() == 1;
    for (start, end) in runs {
        let unbounded = since.is_none() && until.is_none();
        let keep = if unbounded || (start..end).all(|i| in_range(ts.get(i).unwrap_or(i64::MIN))) {
            Keep::Range(start, end)
        } else {
            Keep::Rows(
                (start..end)
                    .filter(|&i| in_range(ts.get(i).unwrap_or(i64::MIN)))
                    .collect(),
            )
        };
        if keep.len() == 0 {
            continue;
        }
        let rows = keep.len();
        let mut b = Batch {
            lines: rows as u64,
            ..Batch::default()
        };
        // Each integer column mapped to its batch type straight from the decoded rows.
        let gather = |v| Gather {
            v,
            keep: &keep,
            rows,
        };
        b.ts_ms = gather(Some(ts)).map(|v| v.unwrap_or(0));
        b.status = gather(int("status")).map(|v| v.unwrap_or(0).clamp(0, u16::MAX as i64) as u16);
        // Columns not read stay empty (a batch's accessors give their default): filling
        // them was as many bytes written a row as the columns read.
        let read = |name: &str| int(name).map(|v| gather(Some(v)));
        if let Some(g) = read("line") {
            b.line = g.map(|v| v.unwrap_or(0).max(0) as u64);
        }
        if let Some(g) = read("ts_precision") {
            b.precision = g.map(|v| v.unwrap_or(0).clamp(0, 9) as u8);
        }
        let unsigned = |v: Option<i64>| v.map(|v| v.max(0) as u64);
        if let Some(g) = read("bytes") {
            b.bytes = g.map(unsigned);
        }
        if let Some(g) = read("request_time_us") {
            b.request_time_us = g.map(unsigned);
        }
        if let Some(v) = boolean("has_cookie") {
            b.has_cookie.reserve(rows);
            keep.for_each(|i| b.has_cookie.push(v[i]));
        }
        if let Some(v) = boolean("client_list") {
            b.client_list.reserve(rows);
            keep.for_each(|i| b.client_list.push(v[i].unwrap_or(false)));
        }
        let ip = |h: Option<i64>, l: Option<i64>| match (h, l) {
            (Some(h), Some(l)) => Some(super::frame::ip_of_halves(h, l)),
            _ => None,
        };
        b.ip = match (int("ip_hi"), int("ip_lo")) {
            (Some(h), Some(l)) => match (&keep, &h.valid, &l.valid) {
                (Keep::Range(a, z), None, None) => h.values[*a..*z]
                    .iter()
                    .zip(&l.values[*a..*z])
                    .map(|(&h, &l)| Some(super::frame::ip_of_halves(h, l)))
                    .collect(),
                (Keep::Range(a, z), _, _) => (*a..*z).map(|i| ip(h.get(i), l.get(i))).collect(),
                (Keep::Rows(r), _, _) => r.iter().map(|&i| ip(h.get(i), l.get(i))).collect(),
            },
            _ => vec![None; rows],
        };
        b.ip_codes = ip_codes(int("ip_hi"), int("ip_lo"), &keep);
        let names_only = every_client || b.ip.iter().any(Option::is_none);
        let whole = single && matches!(keep, Keep::Range(0, z) if z == ts.values.len());
        for column in TEXT
            .iter()
            .copied()
            .chain(names_only.then_some(Column::Client))
        {
            let (name, col) = (column.name(), text_field(&mut b, column));
            let text = texts.iter_mut().find(|(n, _)| *n == name);
            *col = match text {
                Some((_, t)) if whole && t.is_some() => match t.take() {
                    Some((values, codes)) => pages::text_whole(values, codes, &mut remap),
                    None => TextColumn::absent(),
                },
                Some((_, Some((values, codes)))) => match &keep {
                    Keep::Range(a, z) => pages::text_rows(values, codes, *a..*z, &mut remap),
                    Keep::Rows(r) => pages::text_rows(values, codes, r.iter().copied(), &mut remap),
                },
                _ => TextColumn::absent(),
            };
        }
        if let Some((_, Some((values, codes)))) = texts.iter().find(|(n, _)| *n == "request") {
            let request = match &keep {
                Keep::Range(a, z) => pages::text_rows(values, codes, *a..*z, &mut remap),
                Keep::Rows(r) => pages::text_rows(values, codes, r.iter().copied(), &mut remap),
            };
            merge_request(&mut b.path, &request, rows);
        }
        if !names_only {
            b.client = TextColumn::absent();
        }
        out.push(FileBatch {
            file: file_of(start).unwrap_or("").to_string(),
            batch: b,
            floor_ms: i64::MIN,
            part: 0,
        });
    }
    Ok(out)
}
