//! Reading a row group's columns straight from its Parquet pages: text as dictionary
//! codes (a slot per dictionary entry, no per-row hashing or string views), numbers and
//! flags as values. Only the encodings logscope's writer produces are decoded (PLAIN,
//! dictionary with RLE/bit-packed indices, DELTA_BINARY_PACKED integers, RLE levels, data
//! pages v1 and v2); anything else is [`PageError::Unsupported`] and the caller reads
//! that slice through polars.

use std::fs::File;
use std::io::Cursor;

use logscope_core::batch::{NULL_CODE, TextColumn, in_first_use_order};
use polars_buffer::Buffer;
use polars_parquet::parquet::CowBuffer;
use polars_parquet::parquet::compression::DecompressionContext;
use polars_parquet::parquet::encoding::Encoding;
use polars_parquet::parquet::encoding::hybrid_rle::HybridRleDecoder;
use polars_parquet::parquet::metadata::ColumnChunkMetadata;
use polars_parquet::parquet::page::{CompressedPage, DataPage, Page, split_buffer};
use polars_parquet::parquet::read::{PageReader, decompress};
use polars_parquet::parquet::schema::types::PhysicalType;

use super::checksum;

/// Why a column could not be read here.
#[derive(Debug)]
pub enum PageError {
    /// An encoding or type this reader does not decode: read the slice through polars.
    Unsupported(String),
    /// The file is damaged (or unreadable).
    Damaged(String),
    /// These bytes (named) do not match the checksum the ingest recorded.
    Checksum(String),
}

impl From<polars_parquet::parquet::error::ParquetError> for PageError {
    fn from(e: polars_parquet::parquet::error::ParquetError) -> Self {
        PageError::Damaged(e.to_string())
    }
}

/// INT32 or INT64 values of every row of a column chunk: the values and, where some
/// rows are null, which rows hold one.
#[derive(Debug, Default)]
pub struct Ints {
    /// One value per row (0 where the row is null).
    pub values: Vec<i64>,
    /// Whether each row holds a value; `None`: every row does.
    pub valid: Option<Vec<bool>>,
    /// Each row's index in the chunk's dictionary, when asked for ([`read_column`]'s
    /// `codes`) and every page is dictionary-coded without a null: rows with equal
    /// codes hold equal values.
    pub codes: Option<Vec<u32>>,
    /// The dictionary's length (codes are below it).
    pub dict_len: usize,
}

impl Ints {
    /// Row `i`'s value.
    #[inline]
    pub fn get(&self, i: usize) -> Option<i64> {
        match &self.valid {
            Some(v) if !v[i] => None,
            _ => Some(self.values[i]),
        }
    }

    /// Whether a row of `rows` is null.
    pub fn any_null(&self, rows: std::ops::Range<usize>) -> bool {
        self.valid
            .as_ref()
            .is_some_and(|v| v[rows].contains(&false))
    }

    /// Appends present values.
    fn extend(&mut self, values: impl Iterator<Item = i64>) {
        self.values.extend(values);
        if let Some(v) = &mut self.valid {
            v.resize(self.values.len(), true);
        }
    }

    /// Appends a page's rows: the `present` values over the rows `valid` marks, nulls
    /// in the others.
    fn extend_valid(&mut self, valid: &[bool], present: &[i64]) -> Result<(), PageError> {
        let n = self.values.len();
        spread_into(valid, present, 0, &mut self.values)?;
        self.valid
            .get_or_insert_with(|| vec![true; n])
            .extend_from_slice(valid);
        Ok(())
    }
}

/// One column of a row group, every row.
pub enum Decoded {
    /// INT32 or INT64 values.
    Int(Ints),
    /// BOOLEAN values.
    Bool(Vec<Option<bool>>),
    /// BYTE_ARRAY values as slots of `values` (dictionary entries first, then values
    /// of plain pages one slot per row) and a slot per row ([`NULL_CODE`] = null).
    Text {
        /// The distinct values (plain layout: slot = position).
        values: TextColumn,
        /// Slot of each row.
        codes: Vec<u32>,
    },
}

/// Pages larger than this are damage, not data (the writer's pages are ~1 MiB).
const MAX_PAGE: usize = 256 << 20;

/// Reads and decodes column chunk `chunk` of `file` (`rows` rows), checking its bytes
/// against `want` (the part's [`checksum`](super::checksum), when it has them) first;
/// moves `file`'s position (one reader a `File`). With `codes`, an integer column keeps
/// each row's dictionary index too ([`Ints::codes`]).
pub fn read_column(
    file: &File,
    chunk: &ColumnChunkMetadata,
    rows: usize,
    want: Option<u64>,
    codes: bool,
) -> Result<Decoded, PageError> {
    let range = checksum::chunk_range(chunk)
        .ok_or_else(|| PageError::Damaged("a column chunk's range overflows".into()))?;
    let bytes = checksum::read_chunk(file, range.clone())
        .map_err(|e| PageError::Damaged(format!("reading a column chunk: {e}")))?;
    if let Some(want) = want
        && checksum::of_bytes(&bytes) != want
    {
        let name = chunk.descriptor().path_in_schema.first();
        return Err(PageError::Checksum(format!(
            "column chunk {} at bytes {}..{}",
            name.map_or("?", |n| n.as_str()),
            range.start,
            range.end
        )));
    }
    let reader = PageReader::new(
        Cursor::new(Buffer::from_vec(bytes)),
        chunk,
        Vec::new(),
        MAX_PAGE,
    );
    SCRATCH.with_borrow_mut(|scratch| {
        decode_chunk(reader, chunk.physical_type(), rows, codes, scratch)
    })
}

/// What decompressing pages needs, kept per thread: a zstd context (creating one costs
/// a large allocation and its zeroing) and the page buffer (grown, never shrunk).
struct Scratch {
    context: DecompressionContext,
    buffer: Vec<u8>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = const {
        std::cell::RefCell::new(Scratch {
            context: DecompressionContext::Unset,
            buffer: Vec::new(),
        })
    };
}

impl Scratch {
    /// `page` decompressed into the scratch buffer; give the buffer back with
    /// [`Scratch::give_back`] once the page is decoded.
    fn decompress(&mut self, page: CompressedPage) -> Result<Page, PageError> {
        Ok(decompress(page, &mut self.buffer, &mut self.context)?)
    }

    /// Takes the scratch buffer back from a decoded page (an uncompressed page borrowed
    /// the chunk's bytes and has none to give).
    fn give_back(&mut self, mut page: Page) {
        let owned = match &mut page {
            Page::Data(d) => d.buffer_mut(),
            Page::Dict(d) => match &mut d.buffer {
                CowBuffer::Owned(v) => v,
                CowBuffer::Borrowed(_) => return,
            },
        };
        if owned.capacity() >= self.buffer.capacity() {
            self.buffer = std::mem::take(owned);
        }
    }
}

fn decode_chunk(
    mut reader: PageReader,
    physical: PhysicalType,
    rows: usize,
    codes: bool,
    scratch: &mut Scratch,
) -> Result<Decoded, PageError> {
    let dict = match reader.read_dict()? {
        Some(p) => match scratch.decompress(CompressedPage::Dict(p))? {
            Page::Dict(d) => Some(d),
            Page::Data(_) => return Err(PageError::Damaged("a data page as dictionary".into())),
        },
        None => None,
    };
    // Each data page of the chunk, decompressed into the scratch buffer.
    let mut each_page = |scratch: &mut Scratch,
                         f: &mut dyn FnMut(&DataPage) -> Result<(), PageError>|
     -> Result<(), PageError> {
        for item in reader.by_ref() {
            let page = scratch.decompress(item?)?;
            match &page {
                Page::Data(d) => f(d)?,
                Page::Dict(_) => return Err(PageError::Damaged("a second dictionary page".into())),
            }
            scratch.give_back(page);
        }
        Ok(())
    };
    match physical {
        PhysicalType::Int32 | PhysicalType::Int64 => {
            let width = if physical == PhysicalType::Int32 {
                4
            } else {
                8
            };
            let dict: Vec<i64> = match dict {
                Some(d) => {
                    let v = plain_ints(&d.buffer, width, d.num_values)?;
                    scratch.give_back(Page::Dict(d));
                    v
                }
                None => Vec::new(),
            };
            let mut out = Ints {
                values: Vec::with_capacity(rows),
                valid: None,
                codes: (codes && !dict.is_empty()).then(|| Vec::with_capacity(rows)),
                dict_len: dict.len(),
            };
            each_page(scratch, &mut |page| ints_page(page, width, &dict, &mut out))?;
            check_rows(out.values.len(), rows)?;
            Ok(Decoded::Int(out))
        }
        PhysicalType::Boolean => {
            if dict.is_some() {
                return Err(PageError::Unsupported("dictionary-encoded booleans".into()));
            }
            let mut out = Vec::with_capacity(rows);
            each_page(scratch, &mut |page| bools_page(page, &mut out))?;
            check_rows(out.len(), rows)?;
            Ok(Decoded::Bool(out))
        }
        PhysicalType::ByteArray => {
            let mut values = TextColumn::default();
            let dict_len = match dict {
                Some(d) => {
                    plain_texts(&d.buffer, d.num_values, |s| values.push_str(Some(s)))?;
                    let n = d.num_values;
                    scratch.give_back(Page::Dict(d));
                    n
                }
                None => 0,
            };
            let mut codes = Vec::with_capacity(rows);
            each_page(scratch, &mut |page| {
                texts_page(page, dict_len, &mut values, &mut codes)
            })?;
            check_rows(codes.len(), rows)?;
            Ok(Decoded::Text { values, codes })
        }
        other => Err(PageError::Unsupported(format!("{other:?} column"))),
    }
}

fn check_rows(got: usize, want: usize) -> Result<(), PageError> {
    if got == want {
        Ok(())
    } else {
        Err(PageError::Damaged(format!(
            "column holds {got} rows, the row group {want}"
        )))
    }
}

/// The page's definition levels as a validity per row (`None`: every row is valid),
/// and the encoded values.
fn levels(page: &DataPage) -> Result<(Option<Vec<bool>>, &[u8]), PageError> {
    if page.descriptor.max_rep_level > 0 {
        return Err(PageError::Unsupported("nested column".into()));
    }
    let split = split_buffer(page)?;
    let n = page.num_values();
    if page.descriptor.max_def_level == 0 {
        return Ok((None, split.values));
    }
    if page.definition_level_encoding() != Encoding::Rle {
        return Err(PageError::Unsupported(format!(
            "{:?} definition levels",
            page.definition_level_encoding()
        )));
    }
    let bits = 32 - (page.descriptor.max_def_level as u32).leading_zeros();
    if all_at(split.def, bits, n, page.descriptor.max_def_level as u32) {
        return Ok((None, split.values));
    }
    let defs = HybridRleDecoder::new(split.def, bits, n).collect()?;
    if defs.len() != n {
        return Err(PageError::Damaged("short definition levels".into()));
    }
    let max = page.descriptor.max_def_level as u32;
    if defs.iter().all(|&d| d == max) {
        return Ok((None, split.values));
    }
    Ok((Some(defs.iter().map(|&d| d == max).collect()), split.values))
}

/// Whether hybrid RLE/bit-packed `data` of `bits`-wide values starts with one RLE run
/// of `value` at least `n` long: a page without nulls, told from its first header
/// instead of decoding a level per row.
fn all_at(data: &[u8], bits: u32, n: usize, value: u32) -> bool {
    // ULEB128 header: run length << 1, low bit 0 for an RLE run.
    let (mut header, mut shift, mut at) = (0u64, 0u32, 0usize);
    loop {
        let Some(&b) = data.get(at) else {
            return false;
        };
        at += 1;
        if shift > 56 {
            return false;
        }
        header |= u64::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            break;
        }
    }
    if header & 1 != 0 || (header >> 1) < n as u64 {
        return false;
    }
    let width = bits.div_ceil(8) as usize;
    let Some(v) = data.get(at..at + width) else {
        return false;
    };
    let mut got = 0u32;
    for (i, &b) in v.iter().enumerate() {
        got |= u32::from(b) << (8 * i);
    }
    got == value
}

/// Dictionary indices of `present` values.
fn indices(values: &[u8], present: usize) -> Result<Vec<u32>, PageError> {
    let Some((&bits, rest)) = values.split_first() else {
        return if present == 0 {
            Ok(Vec::new())
        } else {
            Err(PageError::Damaged("empty dictionary indices".into()))
        };
    };
    if bits > 32 {
        return Err(PageError::Damaged(format!("index width {bits}")));
    }
    let idx = HybridRleDecoder::new(rest, bits as u32, present).collect()?;
    if idx.len() != present {
        return Err(PageError::Damaged("short dictionary indices".into()));
    }
    Ok(idx)
}

/// Whether every index is below `n`: one pass without a branch per index.
fn all_below(idx: &[u32], n: usize) -> bool {
    idx.is_empty() || (idx.iter().fold(0u32, |m, &k| m.max(k)) as usize) < n
}

fn is_dict(e: Encoding) -> bool {
    matches!(e, Encoding::RleDictionary | Encoding::PlainDictionary)
}

/// Appends a row per entry of `valid`: the next of the `present` values where it is
/// set, `null` where not. One pass without a branch per row (a page with nulls: the
/// query, the body sizes of a log that writes `-`; integers, texts and booleans alike).
fn spread_into<T: Copy>(
    valid: &[bool],
    present: &[T],
    null: T,
    out: &mut Vec<T>,
) -> Result<(), PageError> {
    if valid.iter().filter(|&&ok| ok).count() > present.len() {
        return Err(PageError::Damaged("fewer values than levels".into()));
    }
    let mut j = 0usize;
    out.extend(valid.iter().map(|&ok| {
        let v = present.get(j).copied().unwrap_or(null);
        j += usize::from(ok);
        if ok { v } else { null }
    }));
    Ok(())
}

fn present_count(valid: &Option<Vec<bool>>, n: usize) -> usize {
    valid
        .as_ref()
        .map_or(n, |v| v.iter().filter(|&&b| b).count())
}

fn plain_ints(buf: &[u8], width: usize, n: usize) -> Result<Vec<i64>, PageError> {
    if buf.len() < n * width {
        return Err(PageError::Damaged("short plain integers".into()));
    }
    Ok(buf[..n * width]
        .chunks_exact(width)
        .map(|c| {
            if width == 4 {
                i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64
            } else {
                i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
            }
        })
        .collect())
}

fn ints_page(page: &DataPage, width: usize, dict: &[i64], out: &mut Ints) -> Result<(), PageError> {
    let (valid, values) = levels(page)?;
    let present = present_count(&valid, page.num_values());
    let vals: Vec<i64> = match page.encoding() {
        e if is_dict(e) => {
            let idx = indices(values, present)?;
            if !all_below(&idx, dict.len()) {
                return Err(PageError::Damaged("index past the dictionary".into()));
            }
            // The common page: no nulls, every value straight into the column.
            if valid.is_none() {
                out.extend(idx.iter().map(|&k| dict[k as usize]));
                if let Some(codes) = &mut out.codes {
                    codes.extend_from_slice(&idx);
                }
                return Ok(());
            }
            out.codes = None;
            idx.iter().map(|&k| dict[k as usize]).collect()
        }
        Encoding::Plain => {
            out.codes = None;
            plain_ints(values, width, present)?
        }
        Encoding::DeltaBinaryPacked => {
            out.codes = None;
            // The common page: no nulls, decoded straight into the column.
            if valid.is_none() && out.valid.is_none() {
                return super::delta::decode_into(values, present, &mut out.values)
                    .map_err(|e| PageError::Damaged(e.to_string()));
            }
            super::delta::decode(values, present).map_err(|e| PageError::Damaged(e.to_string()))?
        }
        e => return Err(PageError::Unsupported(format!("{e:?} integers"))),
    };
    match &valid {
        None => {
            out.extend(vals.into_iter());
            Ok(())
        }
        Some(valid) => out.extend_valid(valid, &vals),
    }
}

fn bools_page(page: &DataPage, out: &mut Vec<Option<bool>>) -> Result<(), PageError> {
    let (valid, values) = levels(page)?;
    let present = present_count(&valid, page.num_values());
    let vals: Vec<bool> = match page.encoding() {
        Encoding::Plain => {
            if values.len() * 8 < present {
                return Err(PageError::Damaged("short plain booleans".into()));
            }
            (0..present)
                .map(|i| (values[i / 8] >> (i % 8)) & 1 == 1)
                .collect()
        }
        Encoding::Rle => {
            // v1 and v2 alike: a 4-byte length, then the hybrid runs of width 1.
            let data = values
                .get(4..)
                .ok_or_else(|| PageError::Damaged("short boolean runs".into()))?;
            let v = HybridRleDecoder::new(data, 1, present).collect()?;
            if v.len() != present {
                return Err(PageError::Damaged("short boolean runs".into()));
            }
            v.into_iter().map(|b| b == 1).collect()
        }
        e => return Err(PageError::Unsupported(format!("{e:?} booleans"))),
    };
    let vals: Vec<Option<bool>> = vals.into_iter().map(Some).collect();
    match &valid {
        None => {
            out.extend_from_slice(&vals);
            Ok(())
        }
        Some(valid) => spread_into(valid, &vals, None, out),
    }
}

/// Calls `f` with each of the `n` PLAIN byte-array values of `buf` (stored text is UTF-8).
fn plain_texts(buf: &[u8], n: usize, mut f: impl FnMut(&str)) -> Result<(), PageError> {
    // One validation of the whole page rather than one per value: where every length
    // prefix is under 128 it is valid UTF-8 as a whole, and a value is then the part of
    // it between two character boundaries (`str::get` checks both). Otherwise (a longer
    // value) this stops at the first long prefix and each value is validated alone.
    let whole = std::str::from_utf8(buf).ok();
    let mut at = 0usize;
    for _ in 0..n {
        let len = buf
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or_else(|| PageError::Damaged("short byte array".into()))?;
        let bytes = buf
            .get(at + 4..at + 4 + len)
            .ok_or_else(|| PageError::Damaged("short byte array".into()))?;
        let s = match whole.and_then(|w| w.get(at + 4..at + 4 + len)) {
            Some(s) => s,
            None => std::str::from_utf8(bytes)
                .map_err(|_| PageError::Damaged("a text value is not UTF-8".into()))?,
        };
        f(s);
        at += 4 + len;
    }
    Ok(())
}

fn texts_page(
    page: &DataPage,
    dict_len: usize,
    values: &mut TextColumn,
    codes: &mut Vec<u32>,
) -> Result<(), PageError> {
    let (valid, data) = levels(page)?;
    let present = present_count(&valid, page.num_values());
    let slots: Vec<u32> = match page.encoding() {
        e if is_dict(e) => {
            let idx = indices(data, present)?;
            if !all_below(&idx, dict_len) {
                return Err(PageError::Damaged("index past the dictionary".into()));
            }
            // The chunk's first page without nulls: its indices are the codes.
            if valid.is_none() && codes.is_empty() {
                *codes = idx;
                return Ok(());
            }
            idx
        }
        Encoding::Plain => {
            let mut v = Vec::with_capacity(present);
            plain_texts(data, present, |s| {
                values.push_str(Some(s));
                v.push((values.slots() - 1) as u32);
            })?;
            v
        }
        e => return Err(PageError::Unsupported(format!("{e:?} text"))),
    };
    match &valid {
        None => {
            codes.extend_from_slice(&slots);
            Ok(())
        }
        Some(valid) => spread_into(valid, &slots, NULL_CODE, codes),
    }
}

/// Every row of a decoded text column as [`text_rows`] gives them, without copying a
/// value when the column already has that layout: every slot used, numbered in order of
/// first use (what the writer's row-group dictionaries and plain pages hold).
pub fn text_whole(values: TextColumn, codes: Vec<u32>, remap: &mut Vec<u32>) -> TextColumn {
    if in_first_use_order(&codes, values.slots()) {
        TextColumn::with_codes(values, codes)
    } else {
        text_rows(&values, &codes, 0..codes.len(), remap)
    }
}

/// The rows `keep` of a decoded text column as a coded column whose slots are the
/// values those rows use, numbered in order of first use (as the polars path does).
pub fn text_rows(
    values: &TextColumn,
    codes: &[u32],
    keep: impl Iterator<Item = usize>,
    remap: &mut Vec<u32>,
) -> TextColumn {
    remap.clear();
    remap.resize(values.slots(), NULL_CODE);
    let mut out_values = TextColumn::default();
    let mut out_codes = Vec::with_capacity(codes.len());
    for i in keep {
        let k = codes[i];
        if k == NULL_CODE {
            out_codes.push(NULL_CODE);
            continue;
        }
        let slot = &mut remap[k as usize];
        if *slot == NULL_CODE {
            out_values.push_str(values.value(k));
            *slot = (out_values.slots() - 1) as u32;
        }
        out_codes.push(*slot);
    }
    TextColumn::with_codes(out_values, out_codes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn byte_arrays(values: &[&[u8]]) -> Vec<u8> {
        let mut buf = Vec::new();
        for v in values {
            buf.extend_from_slice(&(v.len() as u32).to_le_bytes());
            buf.extend_from_slice(v);
        }
        buf
    }

    #[test]
    fn dictionary_indices_past_the_dictionary_are_told() {
        assert!(all_below(&[], 0));
        assert!(all_below(&[0, 4, 2], 5));
        assert!(!all_below(&[0, 5, 2], 5));
        assert!(!all_below(&[0], 0));
        assert!(!all_below(&[u32::MAX], usize::MAX >> 40));
    }

    #[test]
    fn plain_text_values_are_read_alike_whether_the_page_validates_whole_or_not() {
        let long = "é".repeat(100);
        let short: [&[u8]; 4] = [b"/a", "/é".as_bytes(), b"", b"/wiki/x"];
        let mixed: [&[u8]; 3] = [b"/a", long.as_bytes(), "ü".as_bytes()];
        for values in [&short[..], &mixed[..]] {
            let mut got = Vec::new();
            plain_texts(&byte_arrays(values), values.len(), |s| {
                got.push(s.to_string())
            })
            .unwrap();
            let want: Vec<String> = values
                .iter()
                .map(|v| String::from_utf8(v.to_vec()).unwrap())
                .collect();
            assert_eq!(got, want);
        }
        // A value ending in a lead byte, followed by a 128-byte value (its length prefix
        // starts with a continuation byte): the page is UTF-8 as a whole, the first
        // value is not.
        let tail = [b'a'; 128];
        let buf = byte_arrays(&[&[b'x', 0xc3], &tail]);
        assert!(std::str::from_utf8(&buf).is_ok());
        let err = plain_texts(&buf, 2, |_| {}).unwrap_err();
        assert!(
            matches!(err, PageError::Damaged(ref m) if m.contains("not UTF-8")),
            "{err:?}"
        );
    }

    /// The data pages polars writes for `values` as the dataset's column `column` in
    /// `encoding`, and the dictionary's values where it writes one.
    fn int_pages(
        column: &str,
        values: &[Option<i64>],
        encoding: Encoding,
    ) -> (Vec<i64>, Vec<DataPage>) {
        use polars::prelude::{CompatLevel, SchemaExt};
        use polars_arrow::array::PrimitiveArray;
        use polars_parquet::write::{
            CompressionOptions, StatisticsOptions, Version, WriteOptions, array_to_columns,
            to_parquet_schema,
        };
        let arrow = super::super::frame::schema().to_arrow(CompatLevel::newest());
        let parquet = to_parquet_schema(&arrow).expect("the dataset's schema");
        let c = super::super::frame::COLUMNS
            .iter()
            .position(|&n| n == column)
            .expect("a column of the dataset");
        let dtype = arrow.get_at_index(c).expect("its field").1.dtype.clone();
        let options = WriteOptions {
            statistics: StatisticsOptions::default(),
            compression: CompressionOptions::Uncompressed,
            version: Version::V1,
            // Several pages a column.
            data_page_size: Some(4096),
        };
        let a = PrimitiveArray::<i64>::from(values.to_vec())
            .to(dtype)
            .boxed();
        let (mut dict, mut pages) = (Vec::new(), Vec::new());
        for leaf in array_to_columns(a, parquet.fields()[c].clone(), options, &[encoding])
            .expect("polars writes the column")
        {
            for page in leaf {
                match page.expect("a page") {
                    Page::Dict(d) => dict = plain_ints(&d.buffer, 8, d.num_values).expect("ints"),
                    Page::Data(mut p) => {
                        // The page's descriptor as the file's schema gives it to a reader
                        // (polars' write path leaves the level out).
                        let optional = p.descriptor.primitive_type.field_info.repetition
                            == polars_parquet::parquet::schema::Repetition::Optional;
                        p.descriptor.max_def_level = i16::from(optional);
                        pages.push(p)
                    }
                }
            }
        }
        (dict, pages)
    }

    #[test]
    fn integer_columns_read_alike_in_every_encoding_the_writer_uses() {
        let mut next = super::super::rle::xorshift(0x9e37_79b9_7f4a_7c15);
        for case in 0..40u64 {
            let n = 1 + (next() % 5000) as usize;
            let mut t = 1_700_000_000_000i64;
            let nulls = case % 3 == 0;
            // Arrival times with completion-time jitter, then sizes (some unknown).
            let ts: Vec<Option<i64>> = (0..n)
                .map(|_| {
                    t += (next() % 2000) as i64;
                    Some(t - (next() % 4) as i64 * (next() % 3000) as i64)
                })
                .collect();
            let sizes: Vec<Option<i64>> = (0..n)
                .map(|_| match next() % 8 {
                    0 if nulls => None,
                    1 => Some(i64::MAX),
                    2 => Some((next() % 20) as i64 * 512),
                    _ => Some((next() % 200_000) as i64),
                })
                .collect();
            for (column, values) in [("ts", &ts), ("bytes", &sizes)] {
                for encoding in [
                    Encoding::DeltaBinaryPacked,
                    Encoding::RleDictionary,
                    Encoding::Plain,
                ] {
                    let (dict, pages) = int_pages(column, values, encoding);
                    let mut out = Ints::default();
                    for p in &pages {
                        ints_page(p, 8, &dict, &mut out).expect("a page polars wrote");
                    }
                    let got: Vec<Option<i64>> = (0..out.values.len()).map(|i| out.get(i)).collect();
                    assert_eq!(
                        &got, values,
                        "{column} as {encoding:?}, case {case}, {n} rows"
                    );
                }
            }
        }
    }

    #[test]
    fn a_page_with_nulls_lays_its_values_over_the_marked_rows() {
        let mut codes = vec![7];
        spread_into(&[true, false, true, false], &[3, 4], NULL_CODE, &mut codes).unwrap();
        assert_eq!(codes, [7, 3, NULL_CODE, 4, NULL_CODE]);
        // Fewer values than marked rows: damage, and nothing appended.
        assert!(spread_into(&[true, true], &[5], NULL_CODE, &mut codes).is_err());
        assert_eq!(codes.len(), 5);
    }

    #[test]
    fn integers_keep_their_nulls() {
        let mut v = Ints::default();
        v.extend([5, 6].into_iter());
        assert!(v.valid.is_none() && !v.any_null(0..2));
        v.extend_valid(&[false, true], &[-7]).unwrap();
        v.extend([8].into_iter());
        // Fewer values than rows marked: damage, and nothing appended.
        assert!(v.extend_valid(&[true, true], &[1]).is_err());
        assert_eq!(v.values.len(), 5);
        assert_eq!(
            (0..5).map(|i| v.get(i)).collect::<Vec<_>>(),
            [Some(5), Some(6), None, Some(-7), Some(8)]
        );
        assert!(v.any_null(1..3) && !v.any_null(3..5) && !v.any_null(0..2));
    }
}
