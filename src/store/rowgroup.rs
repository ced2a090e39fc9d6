//! A row group being gathered for one part file, and its Parquet pages: each text column
//! as one dictionary and a code per row, merged per distinct value from the coded batches
//! of the parse workers; then encoded and compressed, a column per job, on both cores.
//!
//! This replaces polars' frame path for writing (BENCHMARKS.md, session 9): polars built a
//! string view per row, estimated each column's cardinality and hashed every row again to
//! make its dictionary, all on the writer thread. The pages and the stored schema are the
//! ones polars wrote: the same encodings, statistics and `ARROW:schema`.

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
use polars_parquet::parquet::page::{CompressedDataPage, CompressedDictPage, Page};
use polars_parquet::write::{
    CompressedPage, Encoding, SchemaDescriptor, WriteOptions, array_to_columns, get_dtype_encoding,
};
use rustc_hash::FxHashMap;

use super::frame::{COLUMNS, ip_halves};

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

fn hash(s: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(s.as_bytes())
}

fn slot<'a>(data: &'a str, ends: &[usize], k: u32) -> &'a str {
    let k = k as usize;
    let start = if k == 0 { 0 } else { ends[k - 1] };
    &data[start..ends[k]]
}

impl Dict {
    /// The code of `s`, stored if new.
    fn intern(&mut self, s: &str) -> u32 {
        let h = hash(s);
        let Dict {
            data, ends, table, ..
        } = self;
        if let Some(&k) = table.find(h, |&k| slot(data, ends, k) == s) {
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
        if contiguous {
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

    /// The column as an Arrow array and its encoding: dictionary-coded, or plain when
    /// most values are distinct (where polars' writer falls back to plain too: more than
    /// 3 in 4 rows distinct).
    fn array(&self) -> PolarsResult<(Box<dyn Array>, Encoding)> {
        let rows = self.codes.len();
        let distinct = self.ends.len();
        let value = |k: u32| slot(&self.data, &self.ends, k);
        if rows > 128 && distinct as f64 / rows as f64 > 0.75 {
            let mut a = MutableBinaryViewArray::<str>::with_capacity(rows);
            for &k in &self.codes {
                if k == NULL_CODE {
                    a.push_null();
                } else {
                    a.push_value(value(k));
                }
            }
            return Ok((a.freeze().boxed(), Encoding::Plain));
        }
        let mut values = MutableBinaryViewArray::<str>::with_capacity(distinct);
        for k in 0..distinct {
            values.push_value(value(k as u32));
        }
        let has_null = self.codes.contains(&NULL_CODE);
        let keys: Vec<u32> = if has_null {
            self.codes
                .iter()
                .map(|&k| if k == NULL_CODE { 0 } else { k })
                .collect()
        } else {
            self.codes.clone()
        };
        let validity =
            has_null.then(|| Bitmap::from_iter(self.codes.iter().map(|&k| k != NULL_CODE)));
        let keys = PrimitiveArray::<u32>::new(ArrowDataType::UInt32, keys.into(), validity);
        let dtype = ArrowDataType::Dictionary(
            IntegerType::UInt32,
            Box::new(ArrowDataType::Utf8View),
            false,
        );
        let a = DictionaryArray::try_new(dtype, keys, values.freeze().boxed())?;
        Ok((a.boxed(), Encoding::RleDictionary))
    }
}

/// A 64-bit integer column of type `dtype` and `n` rows (`at(i)`, `None` = null) as an
/// Arrow array and its encoding: a dictionary of its distinct values, or plain when more
/// than 3 in 4 rows are distinct: polars' rule, with one cheap hash per row where polars
/// estimated the cardinality and then hashed every row again.
fn int_array(
    dtype: ArrowDataType,
    n: usize,
    at: impl Fn(usize) -> Option<i64>,
) -> PolarsResult<(Box<dyn Array>, Encoding)> {
    let plain = |dtype: ArrowDataType| {
        let values: Vec<i64> = (0..n).map(|i| at(i).unwrap_or(0)).collect();
        let validity = (0..n)
            .any(|i| at(i).is_none())
            .then(|| Bitmap::from_iter((0..n).map(|i| at(i).is_some())));
        Ok((
            PrimitiveArray::<i64>::new(dtype, values.into(), validity).boxed(),
            Encoding::Plain,
        ))
    };
    let limit = if n > 128 { n * 3 / 4 } else { usize::MAX };
    let mut seen: FxHashMap<i64, u32> =
        FxHashMap::with_capacity_and_hasher(n / 4, Default::default());
    let mut values: Vec<i64> = Vec::new();
    let mut keys: Vec<u32> = Vec::with_capacity(n);
    let mut nulls = false;
    // Runs are common (a second's requests share `ts`, IPv4 clients share `ip_hi`):
    // the value of the row before is checked before the hash.
    let mut last: Option<(i64, u32)> = None;
    for i in 0..n {
        let k = match at(i) {
            None => {
                nulls = true;
                0
            }
            Some(v) => match last {
                Some((lv, lk)) if lv == v => lk,
                _ => {
                    let k = *seen.entry(v).or_insert_with(|| {
                        values.push(v);
                        (values.len() - 1) as u32
                    });
                    last = Some((v, k));
                    k
                }
            },
        };
        if values.len() > limit {
            return plain(dtype);
        }
        keys.push(k);
    }
    let validity = nulls.then(|| Bitmap::from_iter((0..n).map(|i| at(i).is_some())));
    let keys = PrimitiveArray::<u32>::new(ArrowDataType::UInt32, keys.into(), validity);
    let values = PrimitiveArray::<i64>::new(dtype.clone(), values.into(), None);
    let dict = ArrowDataType::Dictionary(IntegerType::UInt32, Box::new(dtype), false);
    let a = DictionaryArray::try_new(dict, keys, values.boxed())?;
    Ok((a.boxed(), Encoding::RleDictionary))
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

/// Where each text column of the dataset is in [`COLUMNS`], and in [`RowGroup::text`].
const TEXT: [&str; 12] = [
    "client",
    "ident",
    "user",
    "method",
    "path",
    "query",
    "protocol",
    "referer",
    "user_agent",
    "host",
    "xff",
    "file",
];

fn text_of(b: &Batch, t: usize) -> &TextColumn {
    match t {
        0 => &b.client,
        1 => &b.ident,
        2 => &b.user,
        3 => &b.method,
        4 => &b.path,
        5 => &b.query,
        6 => &b.protocol,
        7 => &b.referer,
        8 => &b.user_agent,
        9 => &b.host,
        _ => &b.xff,
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
            for ip in &b.ip[r.clone()] {
                let h = ip.map(ip_halves);
                self.ip_hi.push(h.map(|h| h.0));
                self.ip_lo.push(h.map(|h| h.1));
            }
            self.status
                .extend(b.status[r.clone()].iter().map(|&s| i32::from(s)));
            self.bytes
                .extend(b.bytes[r.clone()].iter().map(|&v| clamp(v)));
            self.request_time_us
                .extend(b.request_time_us[r.clone()].iter().map(|&v| clamp(v)));
            self.has_cookie.extend_from_slice(&b.has_cookie[r.clone()]);
            self.client_list.extend(
                r.clone()
                    .map(|i| b.client_list.get(i).copied().unwrap_or(false)),
            );
            self.line.extend(
                b.line[r]
                    .iter()
                    .map(|&l| clamp(Some(l)).unwrap_or(i64::MAX)),
            );
        } else {
            self.append_rows(b, rows);
        }
        let (file_dict, others) = self.text.split_last_mut().expect("TEXT is not empty");
        for (t, d) in others.iter_mut().enumerate() {
            d.append(text_of(b, t), rows);
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

    /// Column `c` of [`COLUMNS`] as an Arrow array of the schema's type, and its encoding.
    fn column(&self, c: usize, schema: &ArrowSchema) -> PolarsResult<(Box<dyn Array>, Encoding)> {
        let name = COLUMNS[c];
        if let Some(t) = TEXT.iter().position(|&n| n == name) {
            return self.text[t].array();
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
        let a: Box<dyn Array> = match name {
            "ts" => return int_array(dtype, self.len(), |i| Some(self.ts[i])),
            "ip_hi" => return int_array(dtype, self.len(), |i| at(&self.ip_hi, i)),
            "ip_lo" => return int_array(dtype, self.len(), |i| at(&self.ip_lo, i)),
            "bytes" => return int_array(dtype, self.len(), |i| at(&self.bytes, i)),
            "request_time_us" => {
                return int_array(dtype, self.len(), |i| at(&self.request_time_us, i));
            }
            // One input's line numbers are all distinct: plain, as polars writes them.
            "line" => {
                return Ok((
                    PrimitiveArray::<i64>::from_vec(self.line.clone()).boxed(),
                    Encoding::Plain,
                ));
            }
            "ts_precision" => PrimitiveArray::<i32>::from_vec(self.precision.clone()).boxed(),
            "status" => PrimitiveArray::<i32>::from_vec(self.status.clone()).boxed(),
            "has_cookie" => BooleanArray::from(&self.has_cookie).boxed(),
            "client_list" => BooleanArray::from_slice(&self.client_list).boxed(),
            _ => return Err(PolarsError::ColumnNotFound(name.into())),
        };
        Ok((a, encoding))
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
        order.sort_by_key(|&c| !TEXT.contains(&COLUMNS[c]));
        let next = AtomicUsize::new(0);
        let job = |c: usize, zstd: &mut Zstd| -> PolarsResult<Vec<CompressedPage>> {
            let (array, encoding) = self.column(c, schema)?;
            let ty = parquet
                .fields()
                .get(c)
                .cloned()
                .ok_or_else(|| PolarsError::ColumnNotFound(COLUMNS[c].into()))?;
            let mut pages = Vec::new();
            for leaf in array_to_columns(array, ty, options, &[encoding])? {
                for page in leaf {
                    pages.push(zstd.page(page?)?);
                }
            }
            Ok(pages)
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
        let got: Vec<&str> = (0..d.ends.len() as u32)
            .map(|k| slot(&d.data, &d.ends, k))
            .collect();
        assert_eq!(got, vec!["x", "y", "z"]);
    }
}
