//! Unsigned LEB128 varints: the temporary files of sorted rows and probes, and the
//! dataset's Parquet pages (RLE headers, DELTA_BINARY_PACKED headers).

/// Appends `v` as a LEB128 varint.
#[inline]
pub fn put(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// The varint at `b[*i..]`, with `*i` past it; `None` when the bytes end first or it
/// is longer than a `u64`.
#[inline(always)]
pub fn get(b: &[u8], i: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let c = *b.get(*i)?;
        *i += 1;
        if shift >= 64 {
            return None;
        }
        v |= u64::from(c & 0x7f) << shift;
        if c < 0x80 {
            return Some(v);
        }
        shift += 7;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trip_and_damage() {
        let vals = [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX];
        let mut buf = Vec::new();
        for &v in &vals {
            super::put(&mut buf, v);
        }
        let mut i = 0;
        for &v in &vals {
            assert_eq!(super::get(&buf, &mut i), Some(v));
        }
        assert_eq!(i, buf.len());
        assert_eq!(super::get(&buf, &mut i), None);
        assert_eq!(super::get(&[0x80, 0x80], &mut 0), None);
        assert_eq!(super::get(&[0xff; 11], &mut 0), None);
    }
}
