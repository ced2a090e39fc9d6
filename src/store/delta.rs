//! Parquet's DELTA_BINARY_PACKED integers (how the writer stores `line`, which rises by
//! one a row, and `ts`, which rises but for completion-time jitter), decoded with every
//! length and width checked: a damaged page is an error, never a panic.

use polars_parquet::parquet::encoding::bitpacked::Unpackable;

/// What is wrong with a damaged DELTA_BINARY_PACKED page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeltaError {
    /// The page ends inside, or a number runs past 64 bits, in its header or a block's
    /// least delta.
    Number,
    /// Blocks and miniblocks of sizes the format does not allow.
    Blocks {
        /// Values per block.
        block: usize,
        /// Miniblocks per block.
        miniblocks: usize,
    },
    /// Fewer values than the page's rows.
    Short {
        /// Values the page holds.
        total: usize,
        /// Values asked for.
        wanted: usize,
    },
    /// The page ends in a block's bit widths.
    Widths,
    /// A miniblock of values wider than 64 bits.
    Width(usize),
    /// The page ends inside a miniblock's values.
    Values,
}

impl std::fmt::Display for DeltaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeltaError::Number => {
                f.write_str("a delta page ends inside a number, or one runs past 64 bits")
            }
            DeltaError::Blocks { block, miniblocks } => write!(
                f,
                "a delta page's blocks of {block} values in {miniblocks} parts"
            ),
            DeltaError::Short { total, wanted } => {
                write!(f, "a delta page holds {total} values, not {wanted}")
            }
            DeltaError::Widths => f.write_str("a delta page ends in its bit widths"),
            DeltaError::Width(w) => write!(f, "a delta page's values of {w} bits"),
            DeltaError::Values => f.write_str("a delta page ends inside its values"),
        }
    }
}

impl std::error::Error for DeltaError {}

/// An unsigned LEB128 number at `*at`, which moves past it.
fn uleb(buf: &[u8], at: &mut usize) -> Result<u64, DeltaError> {
    logscope_core::varint::get(buf, at).ok_or(DeltaError::Number)
}

/// A zigzag-coded signed number at `*at`.
fn zigzag(buf: &[u8], at: &mut usize) -> Result<i64, DeltaError> {
    let u = uleb(buf, at)?;
    Ok((u >> 1) as i64 ^ -((u & 1) as i64))
}

/// The `k`-th value of `width` bits (at most 64), least significant bit first.
fn unpack(data: &[u8], k: usize, width: usize) -> u64 {
    if width == 0 {
        return 0;
    }
    let bit = k * width;
    let (byte, shift) = (bit / 8, bit % 8);
    let mut v = 0u128;
    for (i, &b) in data[byte..(bit + width).div_ceil(8)].iter().enumerate() {
        v |= u128::from(b) << (8 * i);
    }
    let v = (v >> shift) as u64;
    if width == 64 {
        v
    } else {
        v & ((1u64 << width) - 1)
    }
}

/// The first `n` values of the page body `buf` (more may follow: they are not read).
pub fn decode(buf: &[u8], n: usize) -> Result<Vec<i64>, DeltaError> {
    let mut out = Vec::with_capacity(n);
    decode_into(buf, n, &mut out)?;
    Ok(out)
}

/// [`decode`], appending the values to `out` (on an error, `out` may hold some of
/// them). Miniblocks of 32-value groups at most 32 bits wide (the writer's `ts`, `bytes`
/// and `line`) are unpacked 32 values at a time.
pub fn decode_into(buf: &[u8], n: usize, out: &mut Vec<i64>) -> Result<(), DeltaError> {
    let mut at = 0;
    let block = uleb(buf, &mut at)? as usize;
    let miniblocks = uleb(buf, &mut at)? as usize;
    let total = uleb(buf, &mut at)? as usize;
    let first = zigzag(buf, &mut at)?;
    let per_mini = block.checked_div(miniblocks).unwrap_or(0);
    if block == 0
        || !block.is_multiple_of(128)
        || block > 1 << 20
        || miniblocks == 0
        || !block.is_multiple_of(miniblocks)
        || !per_mini.is_multiple_of(32)
    {
        return Err(DeltaError::Blocks { block, miniblocks });
    }
    if total < n {
        return Err(DeltaError::Short { total, wanted: n });
    }
    if n == 0 {
        return Ok(());
    }
    out.reserve(n);
    let end = out.len() + n;
    out.push(first);
    let mut last = first;
    let mut group = [0u32; 32];
    while out.len() < end {
        let min_delta = zigzag(buf, &mut at)?;
        let widths = buf.get(at..at + miniblocks).ok_or(DeltaError::Widths)?;
        at += miniblocks;
        for &w in widths {
            if out.len() >= end {
                break;
            }
            let w = usize::from(w);
            if w > 64 {
                return Err(DeltaError::Width(w));
            }
            let bytes = per_mini * w / 8;
            let data = buf.get(at..at + bytes).ok_or(DeltaError::Values)?;
            at += bytes;
            let want = per_mini.min(end - out.len());
            if w <= 32 {
                // 32 values of `w` bits are 4·w bytes: whole groups of the miniblock.
                for (g, packed) in data.chunks_exact(4 * w.max(1)).enumerate() {
                    let from = 32 * g;
                    if from >= want {
                        break;
                    }
                    if w == 0 {
                        group = [0; 32];
                    } else {
                        <u32 as Unpackable>::unpack(packed, w, &mut group);
                    }
                    for &d in &group[..32.min(want - from)] {
                        last = last.wrapping_add(min_delta.wrapping_add(i64::from(d)));
                        out.push(last);
                    }
                }
                if w == 0 {
                    // No bytes: every delta of the miniblock is the least one.
                    for _ in 0..want {
                        last = last.wrapping_add(min_delta);
                        out.push(last);
                    }
                }
                continue;
            }
            for k in 0..want {
                let delta = min_delta.wrapping_add(unpack(data, k, w) as i64);
                last = last.wrapping_add(delta);
                out.push(last);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::{CompatLevel, SchemaExt};
    use polars_arrow::array::PrimitiveArray;
    use polars_parquet::parquet::page::{Page, split_buffer};
    use polars_parquet::write::{
        CompressionOptions, Encoding, StatisticsOptions, Version, WriteOptions, array_to_columns,
        to_parquet_schema,
    };

    /// The bodies of the pages polars writes for `values` as the dataset's `line`.
    fn encoded_pages(values: &[i64]) -> Vec<(Vec<u8>, usize)> {
        let arrow = super::super::frame::schema().to_arrow(CompatLevel::newest());
        let parquet = to_parquet_schema(&arrow).expect("the dataset's schema");
        let c = super::super::frame::COLUMNS
            .iter()
            .position(|&n| n == "line")
            .expect("line");
        let options = WriteOptions {
            statistics: StatisticsOptions::default(),
            compression: CompressionOptions::Uncompressed,
            version: Version::V1,
            data_page_size: None,
        };
        let optional = parquet.fields()[c].get_field_info().repetition
            == polars_parquet::parquet::schema::Repetition::Optional;
        let a = PrimitiveArray::<i64>::from_vec(values.to_vec()).boxed();
        let mut out = Vec::new();
        for leaf in array_to_columns(
            a,
            parquet.fields()[c].clone(),
            options,
            &[Encoding::DeltaBinaryPacked],
        )
        .expect("polars writes the column")
        {
            for page in leaf {
                let Page::Data(p) = page.expect("a page") else {
                    continue;
                };
                // polars' descriptor says no levels; an optional column has them
                // (length-prefixed) before the values.
                let mut body = split_buffer(&p).expect("a v1 page").values;
                if optional {
                    let n = u32::from_le_bytes(body[..4].try_into().expect("4 bytes"));
                    body = &body[4 + n as usize..];
                }
                out.push((body.to_vec(), p.num_values()));
            }
        }
        out
    }

    /// One page's body of `values` (a test's values fit one page).
    fn encoded(values: &[i64]) -> Vec<u8> {
        let mut pages = encoded_pages(values);
        assert!(pages.len() <= 1, "{} pages", pages.len());
        pages.pop().map_or_else(Vec::new, |(body, _)| body)
    }

    #[test]
    fn what_polars_encodes_is_read_back() {
        let mut next = super::super::rle::xorshift(0x2f1e_7a55_0c3d_9b41);
        let mut cases: Vec<Vec<i64>> = vec![
            vec![7],
            (1..=65_536).collect(),
            (1..=300_000).collect(),
            vec![i64::MIN, i64::MAX, 0, -1, i64::MAX, i64::MIN],
        ];
        for len in [2usize, 31, 32, 33, 255, 256, 257, 1000, 5000] {
            let mut v = Vec::with_capacity(len);
            let mut x = (next() % 1000) as i64;
            for _ in 0..len {
                x = match next() % 4 {
                    0 => x + 1,
                    1 => x + (next() % 100) as i64,
                    2 => x - (next() % 50) as i64,
                    _ => next() as i64,
                };
                v.push(x);
            }
            cases.push(v);
        }
        for v in &cases {
            let mut got = Vec::new();
            for (body, n) in encoded_pages(v) {
                got.extend(decode(&body, n).unwrap());
            }
            assert_eq!(&got, v, "{} values", v.len());
        }
        let v = &cases[1];
        let buf = encoded(v);
        let half = v.len() / 2;
        assert_eq!(decode(&buf, half).unwrap(), v[..half], "the first {half}");
    }

    /// `values` encoded in blocks of `block` values of `minis` miniblocks (the layouts
    /// other writers choose), straight from the format's description.
    fn encode_as(values: &[i64], block: usize, minis: usize) -> Vec<u8> {
        use logscope_core::varint::put as uleb_out;
        let zz = |v: i64| ((v << 1) ^ (v >> 63)) as u64;
        let mut out = Vec::new();
        uleb_out(&mut out, block as u64);
        uleb_out(&mut out, minis as u64);
        uleb_out(&mut out, values.len() as u64);
        uleb_out(&mut out, zz(values.first().copied().unwrap_or(0)));
        let deltas: Vec<i64> = values.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect();
        let per = block / minis;
        for chunk in deltas.chunks(block) {
            let min = chunk.iter().copied().min().unwrap_or(0);
            uleb_out(&mut out, zz(min));
            let parts: Vec<&[i64]> = chunk.chunks(per).collect();
            let widths: Vec<usize> = (0..minis)
                .map(|m| {
                    parts.get(m).map_or(0, |p| {
                        let top = p.iter().map(|&d| d.wrapping_sub(min) as u64).max();
                        64 - top.unwrap_or(0).leading_zeros() as usize
                    })
                })
                .collect();
            out.extend(widths.iter().map(|&w| w as u8));
            for (p, &w) in parts.iter().zip(&widths) {
                let mut bits = vec![0u8; per * w / 8];
                for (k, &d) in p.iter().enumerate() {
                    let v = d.wrapping_sub(min) as u64;
                    for b in 0..w {
                        if v >> b & 1 == 1 {
                            bits[(k * w + b) / 8] |= 1 << ((k * w + b) % 8);
                        }
                    }
                }
                out.extend(bits);
            }
        }
        out
    }

    #[test]
    fn every_block_layout_is_read_back() {
        let mut next = super::super::rle::xorshift(0x3c6e_f372_fe94_f82b);
        for case in 0..200 {
            let (block, minis) = [(128, 4), (128, 1), (256, 8), (512, 4), (1024, 8)][case % 5];
            let n = 1 + (next() % 3000) as usize;
            // Steps of a few bits, of up to 40 bits, or any: every width class.
            let spread = [1u64 << 3, 1 << 20, 1 << 40, u64::MAX][case / 5 % 4];
            let mut x = next() as i64;
            let v: Vec<i64> = (0..n)
                .map(|_| {
                    x = x
                        .wrapping_add(((next() % spread) as i64).wrapping_sub((spread / 3) as i64));
                    x
                })
                .collect();
            let buf = encode_as(&v, block, minis);
            assert_eq!(
                decode(&buf, n).unwrap(),
                v,
                "case {case}: {block}/{minis}, {n} values"
            );
            let cut = n / 2;
            assert_eq!(
                decode(&buf, cut).unwrap(),
                v[..cut],
                "case {case}: the first {cut}"
            );
        }
    }

    #[test]
    fn a_damaged_page_is_an_error_not_a_panic() {
        let v: Vec<i64> = (0..3000).map(|i| i * 7 - (i % 13) * 1000).collect();
        let buf = encoded(&v);
        assert!(decode(&buf, v.len() + 1).is_err());
        for cut in [0, 1, 3, 5, 40, buf.len() / 2, buf.len() - 1] {
            assert!(decode(&buf[..cut], v.len()).is_err(), "cut at {cut}");
        }
        let mut next = super::super::rle::xorshift(0x51f1_5a5e_ed11_0b0e);
        for _ in 0..2000 {
            let mut bad = buf.clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() as usize) % bad.len();
                bad[at] = next() as u8;
            }
            let _ = decode(&bad, v.len());
        }
        // Header values a reader must refuse.
        for header in [
            &[0u8, 1, 5, 0][..],
            &[128, 1, 0, 5, 0],
            &[128, 1, 3, 5, 0],
            &[
                0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
            ],
        ] {
            assert!(decode(header, 5).is_err(), "{header:?}");
        }
    }
}
