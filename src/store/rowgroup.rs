//! A row group being gathered for one part file, and its Parquet pages: each text column
//! as one dictionary and a code per row, merged per distinct value from the coded batches
//! of the parse workers; then encoded and compressed, a column per job, on both cores.
//!
//! This replaces polars' frame path for writing: polars built a string view per row,
//! estimated each column's cardinality and hashed every row again to make its dictionary,
//! all on the writer thread. The pages and the stored schema are the ones polars wrote:
//! the same encodings, statistics and `ARROW:schema`.

use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};

use hashbrown::HashTable;
use logscope_core::batch::{Batch, NULL_CODE, TextColumn};
use polars::prelude::{PolarsError, PolarsResult};
use polars_arrow::array::{
    Array, BooleanArray, DictionaryArray, MutableBinaryViewArray, PrimitiveArray,
};
use polars_arrow::bitmap::Bitmap;
use polars_arrow::datatypes::{ArrowDataType, ArrowSchema, IntegerType};
use polars_parquet::parquet::CowBuffer;
use polars_parquet::parquet::compression::Compression;
use polars_parquet::parquet::page::{
    CompressedDataPage, CompressedDictPage, DataPage, DataPageHeader, Page,
};
use polars_parquet::parquet::schema::Repetition;
use polars_parquet::write::{
    CompressedPage, Encoding, ParquetType, SchemaDescriptor, WriteOptions, array_to_columns,
    get_dtype_encoding,
};
use rustc_hash::FxHashMap;

use super::frame::{COLUMNS, Column, Kind, ip_halves};
use super::rle::{self, Pad};

/// A text column of a row group: its distinct values in order of first appearance, a
/// hash table over them, and the value of each row ([`NULL_CODE`] = null).
#[derive(Default)]
struct Dict {
    data: String,
    ends: Vec<usize>,
    table: HashTable<u32>,
    codes: Vec<u32>,
    /// Scratch: a batch's value slot → its code here ([`UNSEEN`] until looked up).
    map: Vec<u32>,
}

/// A slot of the batch not yet looked up in [`Dict::map`].
const UNSEEN: u32 = NULL_CODE - 1;

fn hash(s: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(s)
}

/// Where slot `k` is in the dictionary's text.
fn span(ends: &[usize], k: u32) -> std::ops::Range<usize> {
    let k = k as usize;
    let start = if k == 0 { 0 } else { ends[k - 1] };
    start..ends[k]
}

/// The bytes of slot `k` (bytes: no check that the ends fall between characters).
fn slot<'a>(data: &'a str, ends: &[usize], k: u32) -> &'a [u8] {
    &data.as_bytes()[span(ends, k)]
}

impl Dict {
    /// The code of `s`, stored if new.
    fn intern(&mut self, s: &str) -> u32 {
        let h = hash(s.as_bytes());
        let Dict {
            data, ends, table, ..
        } = self;
        if let Some(&k) = table.find(h, |&k| slot(data, ends, k) == s.as_bytes()) {
            return k;
        }
        data.push_str(s);
        ends.push(data.len());
        let k = (ends.len() - 1) as u32;
        table.insert_unique(h, k, |&k| hash(slot(data, ends, k)));
        k
    }

    /// Appends rows `rows` of `col`: one lookup per distinct value of a coded column.
    fn append(&mut self, col: &TextColumn, rows: &[usize]) {
        if !col.is_coded() {
            for &i in rows {
                let code = col.get(i).map_or(NULL_CODE, |s| self.intern(s));
                self.codes.push(code);
            }
            return;
        }
        let Some(codes) = col.codes() else {
            unreachable!("checked is_coded above")
        };
        // Slot k of the batch at map[k + 1], a null row (NULL_CODE wraps to 0) at map[0]:
        // one load per row once each value of the batch was looked up.
        let mut out = std::mem::take(&mut self.codes);
        out.reserve(rows.len());
        let mut map = std::mem::take(&mut self.map);
        map.clear();
        map.resize(col.slots() + 1, UNSEEN);
        map[0] = NULL_CODE;
        let mut put = |k: u32, map: &mut Vec<u32>| {
            let at = k.wrapping_add(1) as usize;
            match map[at] {
                UNSEEN => {
                    let c = col.value(k).map_or(NULL_CODE, |s| self.intern(s));
                    map[at] = c;
                    c
                }
                c => c,
            }
        };
        let contiguous = rows
            .first()
            .is_some_and(|&a| rows[rows.len() - 1] - a + 1 == rows.len());
        if contiguous && rows.len() == codes.len() && col.in_first_use_order() {
            // The whole batch, each slot first used after the slots before it (as the
            // parse codes them): slot order is the rows' order of first appearance, so
            // the slots are looked up in order, then each row's code is a load.
            for k in 0..col.slots() {
                map[k + 1] = col.value(k as u32).map_or(NULL_CODE, |s| self.intern(s));
            }
            out.extend(codes.iter().map(|&k| map[k.wrapping_add(1) as usize]));
        } else if contiguous {
            for &k in &codes[rows[0]..rows[0] + rows.len()] {
                out.push(put(k, &mut map));
            }
        } else {
            for &i in rows {
                out.push(put(codes[i], &mut map));
            }
        }
        self.codes = out;
        self.map = map;
    }

    /// Appends `n` rows holding `s`.
    fn append_constant(&mut self, s: &str, n: usize) {
        let k = self.intern(s);
        self.codes.extend(std::iter::repeat_n(k, n));
    }

    fn clear(&mut self) {
        self.data.clear();
        self.ends.clear();
        self.table.clear();
        self.codes.clear();
    }

    /// The column's data: dictionary-coded, or plain when most values are distinct
    /// (where polars' writer falls back to plain too: more than 3 in 4 rows distinct).
    fn data(&self) -> Data<'_> {
        let rows = self.codes.len();
        let distinct = self.ends.len();
        let value = |k: u32| &self.data[span(&self.ends, k)];
        if rows > 128 && distinct as f64 / rows as f64 > 0.75 {
            let mut a = MutableBinaryViewArray::<str>::with_capacity(rows);
            for &k in &self.codes {
                if k == NULL_CODE {
                    a.push_null();
                } else {
                    a.push_value(value(k));
                }
            }
            return Data::Arrow(a.freeze().boxed(), Encoding::Plain);
        }
        let mut values = MutableBinaryViewArray::<str>::with_capacity(distinct);
        for k in 0..distinct {
            values.push_value(value(k as u32));
        }
        Data::Coded(values.freeze().boxed(), Cow::Borrowed(&self.codes))
    }
}

/// A column's rows, ready for its pages.
enum Data<'a> {
    /// An Arrow array for polars' page writer, and the encoding to ask of it.
    Arrow(Box<dyn Array>, Encoding),
    /// A dictionary (an Arrow array of the column's type, each value once) and each
    /// row's code in it ([`NULL_CODE`] = null): written by [`dictionary_pages`].
    Coded(Box<dyn Array>, Cow<'a, [u32]>),
}

/// What is known of an integer column's values, to code them with fewer hashes.
#[derive(Clone, Copy)]
enum Hint<'a> {
    /// Nothing.
    None,
    /// Rows with the same code here (one per row, [`NULL_CODE`] = none; `.1` codes in
    /// all) mostly hold the same value, as the client's text and its address: a row's
    /// value is first compared with that of the last row of its code.
    Follows(&'a [u32], usize),
}

/// A 64-bit integer column of type `dtype` and `n` rows (`at(i)`, `None` = null): a
/// dictionary of its distinct values in order of first appearance, or plain when more
/// than 3 in 4 rows are distinct: polars' rule, with at most one cheap hash per row
/// where polars estimated the cardinality and then hashed every row again.
fn int_data(
    dtype: ArrowDataType,
    n: usize,
    hint: Hint<'_>,
    at: impl Fn(usize) -> Option<i64>,
) -> Data<'static> {
    let plain = |dtype: ArrowDataType| {
        let values: Vec<i64> = (0..n).map(|i| at(i).unwrap_or(0)).collect();
        let validity = (0..n)
            .any(|i| at(i).is_none())
            .then(|| Bitmap::from_iter((0..n).map(|i| at(i).is_some())));
        Data::Arrow(
            PrimitiveArray::<i64>::new(dtype, values.into(), validity).boxed(),
            Encoding::Plain,
        )
    };
    let limit = if n > 128 { n * 3 / 4 } else { usize::MAX };
    // Room for as many values as can be coded, so the table never grows.
    let mut seen: FxHashMap<i64, u32> = FxHashMap::default();
    seen.reserve(limit.min(n));
    // Follows: the code of the last value of each code of the hint.
    let mut memo: Vec<u32> = match hint {
        Hint::Follows(_, distinct) => vec![NULL_CODE; distinct],
        _ => Vec::new(),
    };
    let mut values: Vec<i64> = Vec::new();
    let mut codes: Vec<u32> = Vec::with_capacity(n);
    // Runs are common (a second's requests share `ts`, IPv4 clients share `ip_hi`).
    let mut last: Option<(i64, u32)> = None;
    for i in 0..n {
        let Some(v) = at(i) else {
            codes.push(NULL_CODE);
            continue;
        };
        // The value of the row before, then the value last seen with the row's hint.
        if let Some((lv, lk)) = last
            && lv == v
        {
            codes.push(lk);
            continue;
        }
        let by = match hint {
            Hint::Follows(by, _) => by.get(i).copied().filter(|&h| (h as usize) < memo.len()),
            _ => None,
        };
        if let Some(h) = by {
            let k = memo[h as usize];
            if values.get(k as usize) == Some(&v) {
                last = Some((v, k));
                codes.push(k);
                continue;
            }
        }
        let k = *seen.entry(v).or_insert_with(|| {
            values.push(v);
            (values.len() - 1) as u32
        });
        last = Some((v, k));
        if let Some(h) = by {
            memo[h as usize] = k;
        }
        if values.len() > limit {
            return plain(dtype);
        }
        codes.push(k);
    }
    let values = PrimitiveArray::<i64>::new(dtype, values.into(), None);
    Data::Coded(values.boxed(), Cow::Owned(codes))
}

/// A 32-bit integer column (`status`, `ts_precision`), the rows holding `null` (when
/// given) null, dictionary-coded as polars codes it: when its values span at most
/// 65,535 and they are at most 512 distinct or fewer than 3 in 4 rows, the dictionary
/// holds them in ascending order. Otherwise polars is handed the column as it is.
fn small_int_data(values: &[i32], null: Option<i32>) -> Data<'static> {
    let is_null = |v: i32| Some(v) == null;
    let as_polars = || {
        let a = match null {
            Some(_) if values.iter().any(|&v| is_null(v)) => {
                PrimitiveArray::<i32>::from_iter(values.iter().map(|&v| (!is_null(v)).then_some(v)))
            }
            _ => PrimitiveArray::<i32>::from_vec(values.to_vec()),
        };
        Data::Arrow(a.boxed(), Encoding::RleDictionary)
    };
    let present = || values.iter().copied().filter(|&v| !is_null(v));
    let (Some(min), Some(max)) = (present().min(), present().max()) else {
        return as_polars();
    };
    let span = (i64::from(max) - i64::from(min)) as usize;
    if span > usize::from(u16::MAX) {
        return as_polars();
    }
    let mut code = vec![NULL_CODE; span + 1];
    for v in present() {
        code[(v - min) as usize] = 0;
    }
    let mut dictionary: Vec<i32> = Vec::new();
    for (offset, c) in code.iter_mut().enumerate() {
        if *c == 0 {
            *c = dictionary.len() as u32;
            dictionary.push(min + offset as i32);
        }
    }
    let distinct = dictionary.len();
    if distinct > 512 && distinct as f64 / values.len() as f64 >= 0.75 {
        return as_polars();
    }
    let codes: Vec<u32> = values
        .iter()
        .map(|&v| {
            if is_null(v) {
                NULL_CODE
            } else {
                code[(v - min) as usize]
            }
        })
        .collect();
    Data::Coded(
        PrimitiveArray::<i32>::from_vec(dictionary).boxed(),
        Cow::Owned(codes),
    )
}

/// The pages of a dictionary-coded column chunk: the dictionary page and the
/// statistics as polars writes them (from the values alone: they are asked of polars
/// with a single row), the data pages written here, byte for byte as polars writes
/// them (its page split, definition levels, bit width and hybrid encoding of the codes,
/// the column's null count in every page's statistics).
fn dictionary_pages(
    values: Box<dyn Array>,
    codes: &[u32],
    ty: ParquetType,
    options: WriteOptions,
) -> PolarsResult<Vec<Page>> {
    let n = codes.len();
    let nulls = codes.iter().filter(|&&c| c == NULL_CODE).count();
    let one = if values.is_empty() {
        PrimitiveArray::<u32>::new(
            ArrowDataType::UInt32,
            vec![0].into(),
            Some(Bitmap::from_iter([false])),
        )
    } else {
        PrimitiveArray::<u32>::from_vec(vec![0])
    };
    let dtype =
        ArrowDataType::Dictionary(IntegerType::UInt32, Box::new(values.dtype().clone()), false);
    let probe = DictionaryArray::try_new(dtype, one, values)?;
    let mut probed = Vec::new();
    for leaf in array_to_columns(probe.boxed(), ty, options, &[Encoding::RleDictionary])? {
        for page in leaf {
            probed.push(page?);
        }
    }
    let unexpected = || PolarsError::ComputeError("polars wrote an unexpected page".into());
    let (Some(Page::Data(data)), Some(dict)) = (probed.pop(), probed.pop()) else {
        return Err(unexpected());
    };
    let DataPageHeader::V1(mut header) = data.header().clone() else {
        return Err(unexpected());
    };
    if let Some(s) = &mut header.statistics {
        s.null_count = Some(nulls as i64);
    }
    let optional = data.descriptor.primitive_type.field_info.repetition == Repetition::Optional;
    // polars' page split: ~1 MB of codes (4 bytes a row, and the validity's bits).
    let bytes = 4 * n + if nulls > 0 { n.div_ceil(8) } else { 0 };
    let per_row = if n == 0 {
        0
    } else {
        (bytes as f64 / n as f64) as usize
    };
    let max_page = options
        .data_page_size
        .unwrap_or(1024 * 1024)
        .min((1 << 31) - (1 << 25));
    let rows_per_page = (max_page / (per_row + 1)).max(1);
    let mut pages = vec![dict];
    let mut scratch: Vec<u32> = Vec::new();
    for rows in codes.chunks(rows_per_page) {
        let mut buffer = Vec::with_capacity(rows.len() / 2 + 16);
        if optional {
            buffer.extend_from_slice(&[0; 4]);
            if nulls > 0 {
                scratch.clear();
                scratch.extend(rows.iter().map(|&c| u32::from(c != NULL_CODE)));
                rle::encode(&mut buffer, &scratch, 1, Pad::Zeros);
            } else {
                rle::encode_repeated(&mut buffer, rows.len(), 1, 1);
            }
            let len = (buffer.len() - 4) as i32;
            buffer[..4].copy_from_slice(&len.to_le_bytes());
        }
        let keys: &[u32] = if nulls > 0 {
            // The codes of the rows with a value, gathered without a branch per row.
            scratch.clear();
            scratch.resize(rows.len(), 0);
            let mut kept = 0;
            for &c in rows {
                if let Some(slot) = scratch.get_mut(kept) {
                    *slot = c;
                }
                kept += usize::from(c != NULL_CODE);
            }
            scratch.truncate(kept);
            &scratch
        } else {
            rows
        };
        let bits = rle::bit_width(keys.iter().copied().max().unwrap_or(0));
        buffer.push(bits as u8);
        rle::encode(&mut buffer, keys, bits, Pad::Stale);
        header.num_values = rows.len() as i32;
        pages.push(Page::Data(DataPage::new(
            DataPageHeader::V1(header.clone()),
            CowBuffer::Owned(buffer),
            data.descriptor.clone(),
            rows.len(),
        )));
    }
    Ok(pages)
}

/// A page compressor with one zstd context for all the pages it compresses (polars'
/// `compress` makes a context and zeroes a worst-case buffer for every page).
struct Zstd {
    ctx: zstd::bulk::Compressor<'static>,
}

impl Zstd {
    fn new(level: i32) -> PolarsResult<Zstd> {
        let ctx = zstd::bulk::Compressor::new(level)
            .map_err(|e| PolarsError::ComputeError(format!("zstd: {e}").into()))?;
        Ok(Zstd { ctx })
    }

    fn bytes(&mut self, data: &[u8]) -> PolarsResult<Vec<u8>> {
        let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(data.len()));
        self.ctx
            .compress_to_buffer(data, &mut out)
            .map_err(|e| PolarsError::ComputeError(format!("zstd: {e}").into()))?;
        Ok(out)
    }

    /// `page` compressed as polars' `compress` would with zstd (format v1 pages).
    fn page(&mut self, page: Page) -> PolarsResult<CompressedPage> {
        Ok(match page {
            Page::Data(p) => {
                let data = self.bytes(p.buffer())?;
                let rows = p.num_rows.ok_or_else(|| {
                    PolarsError::ComputeError("a data page without its row count".into())
                })?;
                CompressedPage::Data(CompressedDataPage::new(
                    p.header().clone(),
                    CowBuffer::Owned(data),
                    Compression::Zstd,
                    p.buffer().len(),
                    p.descriptor.clone(),
                    rows,
                ))
            }
            Page::Dict(p) => {
                let data = self.bytes(&p.buffer)?;
                CompressedPage::Dict(CompressedDictPage::new(
                    CowBuffer::Owned(data),
                    Compression::Zstd,
                    p.buffer.len(),
                    p.num_values,
                    p.is_sorted,
                ))
            }
        })
    }
}

/// The dataset's text columns in [`Column::ALL`] order: [`RowGroup::text`] holds their
/// dictionaries in this order (`file` last).
const TEXT: [Column; 13] = {
    let mut out = [Column::File; 13];
    let (mut i, mut t) = (0, 0);
    while i < Column::ALL.len() {
        if matches!(Column::ALL[i].kind(), Kind::Text) {
            out[t] = Column::ALL[i];
            t += 1;
        }
        i += 1;
    }
    assert!(t == out.len(), "TEXT holds every text column");
    out
};

/// A batch's column of a text column of the dataset (`file` is not in a batch: every
/// row of a batch has its input's name).
fn text_of(b: &Batch, c: Column) -> &TextColumn {
    match c {
        Column::Client => &b.client,
        Column::Ident => &b.ident,
        Column::User => &b.user,
        Column::Method => &b.method,
        Column::Path => &b.path,
        Column::Query => &b.query,
        Column::Protocol => &b.protocol,
        Column::Referer => &b.referer,
        Column::UserAgent => &b.user_agent,
        Column::Host => &b.host,
        Column::Xff => &b.xff,
        Column::Request
        | Column::File
        | Column::Ts
        | Column::TsPrecision
        | Column::IpHi
        | Column::IpLo
        | Column::Status
        | Column::Bytes
        | Column::RequestTimeUs
        | Column::HasCookie
        | Column::ClientList
        | Column::Line => unreachable!("{} is not a batch's text column", c.name()),
    }
}

/// The rows of one row group of one part file, as they are gathered.
#[derive(Default)]
pub struct RowGroup {
    ts: Vec<i64>,
    precision: Vec<i32>,
    ip_hi: Vec<Option<i64>>,
    ip_lo: Vec<Option<i64>>,
    status: Vec<i32>,
    bytes: Vec<Option<i64>>,
    request_time_us: Vec<Option<i64>>,
    has_cookie: Vec<Option<bool>>,
    client_list: Vec<bool>,
    line: Vec<i64>,
    text: [Dict; TEXT.len()],
}

fn clamp(v: Option<u64>) -> Option<i64> {
    v.map(|x| x.min(i64::MAX as u64) as i64)
}

impl RowGroup {
    /// Rows gathered.
    pub fn len(&self) -> usize {
        self.ts.len()
    }

    /// Whether no row is gathered.
    pub fn is_empty(&self) -> bool {
        self.ts.is_empty()
    }

    /// The earliest and latest `ts` gathered (UTC ms).
    pub fn time_range(&self) -> (i64, i64) {
        let min = self.ts.iter().copied().min().unwrap_or(0);
        let max = self.ts.iter().copied().max().unwrap_or(0);
        (min, max)
    }

    /// Appends the records `rows` of `b`, read from the input named `file`.
    pub fn append(&mut self, b: &Batch, file: &str, rows: &[usize]) {
        let contiguous = rows
            .first()
            .is_some_and(|&a| rows[rows.len() - 1] - a + 1 == rows.len());
        if contiguous {
            let r = rows[0]..rows[0] + rows.len();
            self.ts.extend_from_slice(&b.ts_ms[r.clone()]);
            self.precision
                .extend(b.precision[r.clone()].iter().map(|&p| i32::from(p)));
            let ips = &b.ip[r.clone()];
            self.ip_hi
                .extend(ips.iter().map(|ip| ip.map(|ip| ip_halves(ip).0)));
            self.ip_lo
                .extend(ips.iter().map(|ip| ip.map(|ip| ip_halves(ip).1)));
            self.status
                .extend(b.status[r.clone()].iter().map(|&s| i32::from(s)));
            self.bytes
                .extend(b.bytes[r.clone()].iter().map(|&v| clamp(v)));
            self.request_time_us
                .extend(b.request_time_us[r.clone()].iter().map(|&v| clamp(v)));
            self.has_cookie.extend_from_slice(&b.has_cookie[r.clone()]);
            match b.client_list.get(r.clone()) {
                Some(flags) => self.client_list.extend_from_slice(flags),
                None => self.client_list.extend(
                    r.clone()
                        .map(|i| b.client_list.get(i).copied().unwrap_or(false)),
                ),
            }
            self.line.extend(
                b.line[r]
                    .iter()
                    .map(|&l| clamp(Some(l)).unwrap_or(i64::MAX)),
            );
        } else {
            self.append_rows(b, rows);
        }
        let (file_dict, others) = self.text.split_last_mut().expect("TEXT is not empty");
        // A request that is not HTTP (no method; its text in the batch's `path`) is
        // stored in `request`, its `path` null.
        let not_http: Vec<usize> = rows
            .iter()
            .enumerate()
            .filter(|&(_, &i)| b.method.code(i).is_none() && b.path.code(i).is_some())
            .map(|(at, _)| at)
            .collect();
        for (&c, d) in TEXT.iter().zip(others.iter_mut()) {
            let start = d.codes.len();
            if c == Column::Request {
                d.codes.resize(start + rows.len(), NULL_CODE);
                for &at in &not_http {
                    let text = b.path.get(rows[at]).unwrap_or_default();
                    d.codes[start + at] = d.intern(text);
                }
                continue;
            }
            d.append(text_of(b, c), rows);
            if c == Column::Path {
                not_http
                    .iter()
                    .for_each(|&at| d.codes[start + at] = NULL_CODE);
            }
        }
        file_dict.append_constant(file, rows.len());
    }

    /// The numbers of rows `rows` of `b`, one row at a time.
    fn append_rows(&mut self, b: &Batch, rows: &[usize]) {
        for &i in rows {
            self.ts.push(b.ts_ms[i]);
            self.precision.push(i32::from(b.precision[i]));
            let h = b.ip[i].map(ip_halves);
            self.ip_hi.push(h.map(|h| h.0));
            self.ip_lo.push(h.map(|h| h.1));
            self.status.push(i32::from(b.status[i]));
            self.bytes.push(clamp(b.bytes[i]));
            self.request_time_us.push(clamp(b.request_time_us[i]));
            self.has_cookie.push(b.has_cookie[i]);
            self.client_list
                .push(b.client_list.get(i).copied().unwrap_or(false));
            self.line.push(clamp(Some(b.line[i])).unwrap_or(i64::MAX));
        }
    }

    /// Drops the rows, keeping the allocations for the next row group.
    pub fn clear(&mut self) {
        self.ts.clear();
        self.precision.clear();
        self.ip_hi.clear();
        self.ip_lo.clear();
        self.status.clear();
        self.bytes.clear();
        self.request_time_us.clear();
        self.has_cookie.clear();
        self.client_list.clear();
        self.line.clear();
        self.text.iter_mut().for_each(Dict::clear);
    }

    /// Column `c` of [`COLUMNS`]: dictionary-coded, or an Arrow array of the schema's
    /// type and its encoding.
    fn column(&self, c: usize, schema: &ArrowSchema) -> PolarsResult<Data<'_>> {
        let column = Column::ALL[c];
        let name = column.name();
        if let Some(t) = TEXT.iter().position(|&n| n == column) {
            return Ok(self.text[t].data());
        }
        let dtype = schema
            .get_at_index(c)
            .map(|(_, f)| f.dtype.clone())
            .ok_or_else(|| PolarsError::ColumnNotFound(name.into()))?;
        let encoding = get_dtype_encoding(&dtype)
            .first()
            .copied()
            .unwrap_or(Encoding::Plain);
        let at = |v: &[Option<i64>], i: usize| v[i];
        let n = self.len();
        // A client's text is parsed for its address: rows of one client share it.
        let client = &self.text[0];
        let by_client = Hint::Follows(&client.codes, client.ends.len());
        let a: Box<dyn Array> = match column {
            // The arrival times rise but for completion-time jitter: their deltas take
            // a few bits a row, where a dictionary held nearly every value once.
            Column::Ts => {
                return Ok(Data::Arrow(
                    PrimitiveArray::<i64>::new(dtype, self.ts.clone().into(), None).boxed(),
                    Encoding::DeltaBinaryPacked,
                ));
            }
            // IPv4 clients' `ip_hi` is one run of 0.
            Column::IpHi => return Ok(int_data(dtype, n, Hint::None, |i| at(&self.ip_hi, i))),
            Column::IpLo => return Ok(int_data(dtype, n, by_client, |i| at(&self.ip_lo, i))),
            Column::Bytes => return Ok(int_data(dtype, n, Hint::None, |i| at(&self.bytes, i))),
            Column::RequestTimeUs => {
                return Ok(int_data(dtype, n, Hint::None, |i| {
                    at(&self.request_time_us, i)
                }));
            }
            // One input's line numbers rise by one a row: as deltas, which take next to
            // nothing (plain, 40 MB of a 5 M-line log went through zstd).
            Column::Line => {
                return Ok(Data::Arrow(
                    PrimitiveArray::<i64>::from_vec(self.line.clone()).boxed(),
                    Encoding::DeltaBinaryPacked,
                ));
            }
            Column::TsPrecision => return Ok(small_int_data(&self.precision, None)),
            // No status (`-`, or `000`: no response was sent) is null.
            Column::Status => return Ok(small_int_data(&self.status, Some(0))),
            Column::HasCookie => BooleanArray::from(&self.has_cookie).boxed(),
            Column::ClientList => BooleanArray::from_slice(&self.client_list).boxed(),
            Column::Client
            | Column::Ident
            | Column::User
            | Column::Method
            | Column::Path
            | Column::Query
            | Column::Protocol
            | Column::Referer
            | Column::UserAgent
            | Column::Host
            | Column::Xff
            | Column::Request
            | Column::File => unreachable!("text columns are dictionaries"),
        };
        Ok(Data::Arrow(a, encoding))
    }

    /// The pages of column `c` of [`COLUMNS`], not yet compressed.
    fn pages(
        &self,
        c: usize,
        schema: &ArrowSchema,
        parquet: &SchemaDescriptor,
        options: WriteOptions,
    ) -> PolarsResult<Vec<Page>> {
        let ty = parquet
            .fields()
            .get(c)
            .cloned()
            .ok_or_else(|| PolarsError::ColumnNotFound(COLUMNS[c].into()))?;
        let (array, encoding) = match self.column(c, schema)? {
            Data::Coded(values, codes) => return dictionary_pages(values, &codes, ty, options),
            Data::Arrow(array, encoding) => (array, encoding),
        };
        let mut pages = Vec::new();
        for leaf in array_to_columns(array, ty, options, &[encoding])? {
            for page in leaf {
                pages.push(page?);
            }
        }
        Ok(pages)
    }

    /// The compressed pages of every column, in [`COLUMNS`] order, worked out on up to
    /// `threads` threads (a column per job, the text columns first: they cost most).
    pub fn encode(
        &self,
        schema: &ArrowSchema,
        parquet: &SchemaDescriptor,
        options: WriteOptions,
        zstd_level: i32,
        threads: usize,
    ) -> PolarsResult<Vec<Vec<CompressedPage>>> {
        let mut order: Vec<usize> = (0..COLUMNS.len()).collect();
        order.sort_by_key(|&c| !TEXT.contains(&Column::ALL[c]));
        let next = AtomicUsize::new(0);
        let job = |c: usize, zstd: &mut Zstd| -> PolarsResult<Vec<CompressedPage>> {
            self.pages(c, schema, parquet, options)?
                .into_iter()
                .map(|page| zstd.page(page))
                .collect()
        };
        let work = || {
            let mut done = Vec::new();
            let mut zstd = match Zstd::new(zstd_level) {
                Ok(z) => z,
                Err(e) => {
                    done.push((0, Err(e)));
                    return done;
                }
            };
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&c) = order.get(i) else { break };
                done.push((c, job(c, &mut zstd)));
            }
            done
        };
        let mut results: Vec<(usize, PolarsResult<Vec<CompressedPage>>)> =
            std::thread::scope(|s| {
                let helpers: Vec<_> = (1..threads.max(1)).map(|_| s.spawn(work)).collect();
                let mut all = work();
                for h in helpers {
                    match h.join() {
                        Ok(done) => all.extend(done),
                        Err(p) => std::panic::resume_unwind(p),
                    }
                }
                all
            });
        results.sort_by_key(|(c, _)| *c);
        results.into_iter().map(|(_, pages)| pages).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::{CompatLevel, SchemaExt};
    use polars_parquet::write::{
        CompressionOptions, StatisticsOptions, Version, ZstdLevel, to_parquet_schema,
    };

    /// What polars writes for a dictionary-coded column given every row's key: the
    /// writer's path before [`dictionary_pages`].
    fn polars_pages(
        values: Box<dyn Array>,
        codes: &[u32],
        ty: ParquetType,
        options: WriteOptions,
    ) -> Vec<Page> {
        let has_null = codes.contains(&NULL_CODE);
        let keys: Vec<u32> = codes
            .iter()
            .map(|&k| if k == NULL_CODE { 0 } else { k })
            .collect();
        let validity = has_null.then(|| Bitmap::from_iter(codes.iter().map(|&k| k != NULL_CODE)));
        let keys = PrimitiveArray::<u32>::new(ArrowDataType::UInt32, keys.into(), validity);
        let dtype =
            ArrowDataType::Dictionary(IntegerType::UInt32, Box::new(values.dtype().clone()), false);
        let a = DictionaryArray::try_new(dtype, keys, values).expect("valid keys");
        let mut pages = Vec::new();
        for leaf in array_to_columns(a.boxed(), ty, options, &[Encoding::RleDictionary])
            .expect("polars writes the column")
        {
            for page in leaf {
                pages.push(page.expect("a page"));
            }
        }
        pages
    }

    /// The dataset's Arrow and Parquet schemas and the writer's options.
    fn layout() -> (ArrowSchema, SchemaDescriptor, WriteOptions) {
        let arrow = super::super::frame::schema().to_arrow(CompatLevel::newest());
        let parquet = to_parquet_schema(&arrow).expect("the dataset's schema");
        let options = WriteOptions {
            statistics: StatisticsOptions::default(),
            compression: CompressionOptions::Zstd(Some(ZstdLevel::try_new(1).expect("level"))),
            version: Version::V1,
            data_page_size: None,
        };
        (arrow, parquet, options)
    }

    /// A page's bytes and header, to compare.
    fn shown(p: &Page) -> (String, Vec<u8>) {
        match p {
            Page::Data(d) => (
                format!("data {:?} rows {:?}", d.header(), d.num_rows()),
                d.buffer().to_vec(),
            ),
            Page::Dict(d) => (
                format!("dict {} sorted {}", d.num_values, d.is_sorted),
                d.buffer.to_vec(),
            ),
        }
    }

    #[test]
    fn dictionary_pages_are_the_pages_polars_writes() {
        let (arrow, parquet, options) = layout();
        let field = |name: &str| {
            let c = COLUMNS.iter().position(|&n| n == name).expect("a column");
            let dtype = arrow
                .get_at_index(c)
                .expect("in the schema")
                .1
                .dtype
                .clone();
            (parquet.fields()[c].clone(), dtype)
        };
        let mut next = super::super::rle::xorshift(0x2545_f491_4f6c_dd1du64);
        // Rows 0 to past polars' page split (209,715 codes), 1 to 70,000 distinct values,
        // no nulls, some, all; text and integer columns, optional and required.
        let shapes = [
            (0, 1, 0),
            (1, 1, 0),
            (1, 1, 100),
            (7, 3, 30),
            (300, 1, 0),
            (300, 300, 100),
            (5_000, 40, 5),
            (65_536, 9_000, 0),
            (65_536, 70_000, 1),
            (250_000, 600, 2),
            (250_000, 5, 0),
        ];
        for (column, text) in [("path", true), ("ts", false), ("bytes", false)] {
            let (ty, dtype) = field(column);
            for &(rows, distinct, null_pct) in &shapes {
                let mut used = 0u32;
                let mut codes = Vec::with_capacity(rows);
                while codes.len() < rows {
                    let k = if (next() % 100) < null_pct {
                        NULL_CODE
                    } else {
                        // New values in order of first appearance, as the writer's.
                        let k = (next() % distinct as u64) as u32;
                        if k >= used {
                            used += 1;
                            used - 1
                        } else {
                            k
                        }
                    };
                    let run = 1 + (next() % 12) as usize;
                    codes.extend(std::iter::repeat_n(k, run.min(rows - codes.len())));
                }
                if !text && null_pct > 0 && ty_is_required(&ty) {
                    continue;
                }
                let values = || -> Box<dyn Array> {
                    if text {
                        let mut v = MutableBinaryViewArray::<str>::with_capacity(used as usize);
                        for k in 0..used {
                            v.push_value(format!("/wiki/{}", k.wrapping_mul(2_654_435_761)));
                        }
                        v.freeze().boxed()
                    } else {
                        let v: Vec<i64> = (0..used)
                            .map(|k| i64::from(k).wrapping_mul(-7_919) + 1_700_000_000_000)
                            .collect();
                        PrimitiveArray::<i64>::new(dtype.clone(), v.into(), None).boxed()
                    }
                };
                let ours =
                    dictionary_pages(values(), &codes, ty.clone(), options).expect("our pages");
                let theirs = polars_pages(values(), &codes, ty.clone(), options);
                let ours: Vec<_> = ours.iter().map(shown).collect();
                let theirs: Vec<_> = theirs.iter().map(shown).collect();
                assert_eq!(
                    ours.len(),
                    theirs.len(),
                    "{column}: {rows} rows, {distinct} values"
                );
                for (a, b) in ours.iter().zip(&theirs) {
                    assert_eq!(a.0, b.0, "{column}: {rows} rows, {distinct} values");
                    assert!(
                        a.1 == b.1,
                        "{column}: {rows} rows, {distinct} values: bytes differ"
                    );
                }
            }
        }
    }

    #[test]
    fn small_integers_are_paged_as_polars_pages_them() {
        let (_, parquet, options) = layout();
        let c = COLUMNS
            .iter()
            .position(|&n| n == "status")
            .expect("a column");
        let ty = parquet.fields()[c].clone();
        let mut next = super::super::rle::xorshift(0x1234_5678_9abc_def1u64);
        // Statuses; few values far apart; more than 512 values, most distinct or not;
        // a span past 65,535; one row.
        let shapes: [(usize, i64, i64); 7] = [
            (1, 200, 1),
            (65_536, 100, 500),
            (5_000, -3, 7),
            (2_000, 0, 70_000),
            (700, 0, 60_000),
            (65_536, 0, 600),
            (3_000, i64::from(i32::MIN), 1 << 32),
        ];
        // Each shape without nulls, and with its lowest value (and so most often
        // its first) null, as `status` 0.
        for ((rows, low, width), null) in shapes
            .iter()
            .flat_map(|&s| [(s, None), (s, Some(s.1 as i32))])
        {
            let values: Vec<i32> = (0..rows)
                .map(|_| (low + (next() % width as u64) as i64) as i32)
                .collect();
            let ours = match small_int_data(&values, null) {
                Data::Coded(dict, codes) => {
                    dictionary_pages(dict, &codes, ty.clone(), options).expect("our pages")
                }
                Data::Arrow(a, e) => {
                    let mut pages = Vec::new();
                    for leaf in array_to_columns(a, ty.clone(), options, &[e]).expect("pages") {
                        pages.extend(leaf.map(|p| p.expect("a page")));
                    }
                    pages
                }
            };
            let mut theirs = Vec::new();
            let a = PrimitiveArray::<i32>::from_iter(
                values.iter().map(|&v| (Some(v) != null).then_some(v)),
            )
            .boxed();
            for leaf in array_to_columns(a, ty.clone(), options, &[Encoding::RleDictionary])
                .expect("polars writes the column")
            {
                theirs.extend(leaf.map(|p| p.expect("a page")));
            }
            let ours: Vec<_> = ours.iter().map(shown).collect();
            let theirs: Vec<_> = theirs.iter().map(shown).collect();
            assert!(
                ours == theirs,
                "{rows} rows from {low}, {width} wide, null {null:?}"
            );
        }
    }

    #[test]
    fn hinted_values_are_coded_as_any_values_are() {
        let mut next = super::super::rle::xorshift(0x853c_49e6_748f_ea9bu64);
        let shown = |d: Data<'_>| match d {
            Data::Coded(values, codes) => {
                let values = values
                    .as_any()
                    .downcast_ref::<PrimitiveArray<i64>>()
                    .expect("i64 values")
                    .values()
                    .iter()
                    .copied()
                    .collect::<Vec<i64>>();
                format!("coded {values:?} {:?}", codes.as_ref())
            }
            Data::Arrow(a, e) => format!("arrow {e:?} {a:?}"),
        };
        for case in 0..300u64 {
            let n = (next() % 3000) as usize;
            let mut t = 1_700_000_000_000i64;
            let rows: Vec<Option<i64>> = (0..n)
                .map(|_| {
                    t += (next() % 3) as i64 * 1000;
                    match next() % 10 {
                        0 if case % 2 == 0 => None,
                        // Completion-time jitter: a few seconds back.
                        1 | 2 => Some(t - (next() % 5) as i64 * 1000),
                        3 if case % 3 == 0 => Some((next() % 1_000_000) as i64),
                        _ => Some(t),
                    }
                })
                .collect();
            // A code per row that mostly names its value: a row's value, or a lie.
            let clients = 1 + (next() % 50) as u32;
            let by: Vec<u32> = rows
                .iter()
                .map(|v| match (next() % 20, v) {
                    (0, _) => NULL_CODE,
                    (1, _) => (next() % u64::from(clients)) as u32,
                    (_, Some(v)) => (v.unsigned_abs() % u64::from(clients)) as u32,
                    (_, None) => 0,
                })
                .collect();
            let dtype = ArrowDataType::Int64;
            let plain = shown(int_data(dtype.clone(), n, Hint::None, |i| rows[i]));
            let follows = Hint::Follows(&by, clients as usize);
            let follows = int_data(dtype, n, follows, |i| rows[i]);
            assert_eq!(shown(follows), plain, "follows: case {case}, {n} rows");
        }
    }

    fn ty_is_required(ty: &ParquetType) -> bool {
        ty.get_field_info().repetition == Repetition::Required
    }

    #[test]
    fn whole_batches_merge_as_rows_one_by_one() {
        let mut next = super::super::rle::xorshift(0x6a09_e667_f3bc_c908u64);
        let mut merged = Dict::default();
        let mut reference = Dict::default();
        for batch in 0..200 {
            let rows = (next() % 300) as usize;
            let distinct = 1 + next() % 40;
            let values: Vec<Option<String>> = (0..rows)
                .map(|_| {
                    (!next().is_multiple_of(7)).then(|| format!("v{}", next() % (distinct + batch)))
                })
                .collect();
            // As the parse codes a batch (slots in order of first use), or with the
            // slots stored in another order, or a slot no row uses.
            let mut col = TextColumn::coded();
            match batch % 3 {
                0 => {
                    for v in &values {
                        col.push_interned(v.as_deref().map(str::as_bytes));
                    }
                }
                _ => {
                    let mut names: Vec<&str> =
                        values.iter().flatten().map(|s| s.as_str()).collect();
                    names.sort_unstable();
                    names.dedup();
                    if batch % 3 == 1 {
                        names.reverse();
                    } else {
                        col.push_value("unused");
                    }
                    let slots: Vec<u32> = names.iter().map(|n| col.push_value(n)).collect();
                    for v in &values {
                        let code = v.as_deref().map_or(NULL_CODE, |v| {
                            slots[names.iter().position(|&n| n == v).expect("a name")]
                        });
                        col.push_code(code);
                    }
                }
            }
            let all: Vec<usize> = (0..rows).collect();
            merged.append(&col, &all);
            for v in &values {
                let code = v.as_deref().map_or(NULL_CODE, |s| reference.intern(s));
                reference.codes.push(code);
            }
            assert_eq!(merged.codes, reference.codes, "batch {batch}");
            assert_eq!(merged.data, reference.data, "batch {batch}");
        }
    }

    #[test]
    fn dict_merges_coded_batches_per_distinct_value() {
        let mut d = Dict::default();
        let mut a = TextColumn::default();
        for v in [Some("x"), None, Some("y"), Some("x")] {
            a.push_str(v);
        }
        let a = a.to_coded();
        d.append(&a, &[0, 1, 2, 3]);
        let mut b = TextColumn::default();
        for v in [Some("y"), Some("z"), Some("y")] {
            b.push_str(v);
        }
        d.append(&b, &[2, 0, 1]);
        assert_eq!(d.codes, vec![0, NULL_CODE, 1, 0, 1, 1, 2]);
        let got: Vec<&[u8]> = (0..d.ends.len() as u32)
            .map(|k| slot(&d.data, &d.ends, k))
            .collect();
        assert_eq!(got, vec![&b"x"[..], b"y", b"z"]);
    }
}
