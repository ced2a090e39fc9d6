//! Parquet's RLE / bit-packing hybrid encoding of dictionary codes and definition
//! levels, written from a slice byte for byte as polars-parquet's
//! `hybrid_rle::encode` writes it from an iterator (measured: 0.34 G instructions a
//! million log lines here, 0.97 G for polars' encoder and what fed it).

use logscope_core::varint::put;
use polars_parquet::parquet::encoding::bitpacked;

/// The longest literal run before it is written out (polars' `MAX_VALUES_PER_LITERAL_RUN`).
const MAX_LITERAL: usize = 8 * 1024;

/// How the last, partial group of 8 values of a literal run is filled.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Pad {
    /// With zeros: polars' encoding of booleans (definition levels).
    Zeros,
    /// With the values at the same places of the run's previous 32 (zeros if none):
    /// polars' encoding of `u32` codes, which packs from a reused buffer.
    Stale,
}

/// Appends a bit-packed run of `values` (a multiple of 8 long unless it is the last).
fn literal(out: &mut Vec<u8>, values: &[u32], bits: usize, pad: Pad) {
    put(out, ((values.len().div_ceil(8) as u64) << 1) | 1);
    let mut chunks = values.chunks_exact(32);
    let mut packed = [0u8; 4 * 32];
    let mut buffer = [0u32; 32];
    for chunk in chunks.by_ref() {
        bitpacked::encode_pack::<u32>(chunk, bits, &mut packed);
        out.extend_from_slice(&packed[..4 * bits]);
        if pad == Pad::Stale {
            buffer.copy_from_slice(chunk);
        }
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        buffer[..rest.len()].copy_from_slice(rest);
        bitpacked::encode_pack::<u32>(&buffer, bits, &mut packed);
        out.extend_from_slice(&packed[..rest.len().div_ceil(8) * bits]);
    }
}

/// Appends a run of `len` copies of `value`.
fn repeated(out: &mut Vec<u8>, len: usize, value: u32, bits: usize) {
    put(out, (len as u64) << 1);
    out.extend_from_slice(&value.to_le_bytes()[..bits.div_ceil(8)]);
}

/// Appends one repeated run of `len` copies of `value` (each below 2^`bits`), as
/// polars writes the definition levels of a column chunk without nulls.
pub fn encode_repeated(out: &mut Vec<u8>, len: usize, value: u32, bits: u32) {
    repeated(out, len, value, bits as usize);
}

/// Appends `values` (each below 2^`bits`) in the hybrid encoding: runs of more than 8
/// equal values repeated, the rest bit-packed in groups of 8. The state machine of
/// polars' encoder, its buffer replaced by positions in `values`, stepped a run of equal
/// values at a time (a short run in one step) instead of a value at a time, the runs
/// found 64 values at a time without a branch per value.
pub fn encode(out: &mut Vec<u8>, values: &[u32], bits: u32, pad: Pad) {
    let mut m = Machine {
        bits: bits as usize,
        pad,
        repeats: 0,
        previous: 0,
        start: 0,
        buffered: 0,
        literals: 0,
    };
    let n = values.len();
    let mut run: Option<usize> = None;
    for base in (0..n).step_by(64) {
        let mut starts = run_starts(values, base);
        if starts == u64::MAX
            && base + 64 <= n
            && let Some(from) = run
        {
            // 64 values each unlike the one before (high-cardinality codes): the run
            // before ends here, the first 63 are runs of one, the last run is open.
            m.step(out, values, from, base - from);
            m.singles(out, values, base, 63);
            run = Some(base + 63);
            continue;
        }
        while starts != 0 {
            let at = base + starts.trailing_zeros() as usize;
            starts &= starts - 1;
            if let Some(from) = run {
                m.step(out, values, from, at - from);
            }
            run = Some(at);
        }
    }
    if let Some(from) = run {
        m.step(out, values, from, n - from);
    }
    m.finish(out, values);
}

/// Bit k set where `values[base + k]` starts a run (differs from the value before it, or
/// is the first), for the up to 64 values from `base`.
#[inline]
fn run_starts(values: &[u32], base: usize) -> u64 {
    let n = values.len();
    if base > 0 && base + 64 <= n {
        let cur = &values[base..base + 64];
        let prev = &values[base - 1..base + 63];
        // 16 at a time: the compiler makes each a vector compare and one bit mask.
        let mut m = 0u64;
        for j in 0..4 {
            let mut w = 0u16;
            for k in 0..16 {
                w |= u16::from(cur[16 * j + k] != prev[16 * j + k]) << k;
            }
            m |= u64::from(w) << (16 * j);
        }
        return m;
    }
    let mut m = 0u64;
    for k in 0..64.min(n - base) {
        let p = base + k;
        if p == 0 || values[p] != values[p - 1] {
            m |= 1 << k;
        }
    }
    m
}

/// polars' encoder's state: the buffer is `values[start..start + buffered]`, its first
/// `literals` the literal run so far; `repeats` counts the current value's repeats.
struct Machine {
    bits: usize,
    pad: Pad,
    repeats: usize,
    previous: u32,
    start: usize,
    buffered: usize,
    literals: usize,
}

impl Machine {
    /// Steps over the run `values[at..at + len]` of equal values, which differs from
    /// the value before it. Most runs are short: a run of up to 8 values after a run
    /// that was not repeated, which does not fill the buffer, is buffered whole (no
    /// repeat goes past 8; at 8, the literal run's padding is undone when the next run
    /// starts).
    #[inline(always)]
    fn step(&mut self, out: &mut Vec<u8>, values: &[u32], at: usize, len: usize) {
        if self.repeats <= 8 && len <= 8 && self.buffered + len <= MAX_LITERAL {
            self.literals = self.buffered;
            if self.buffered == 0 {
                self.start = at;
            }
            self.buffered += len;
            self.repeats = len;
            self.previous = values[at];
        } else {
            self.run(out, values, at, len);
        }
    }

    /// [`Machine::step`] for each of the `count` runs of one value from `at`: while the
    /// literal buffer has room, all at once.
    #[inline]
    fn singles(&mut self, out: &mut Vec<u8>, values: &[u32], at: usize, count: usize) {
        if count == 0 {
            return;
        }
        // The first leaves `repeats` at 1, whatever came before.
        self.step(out, values, at, 1);
        let rest = count - 1;
        if rest > 0 && self.buffered + rest <= MAX_LITERAL {
            // Each would set `literals` to the buffer before it, add itself, and leave
            // one repeat of its value.
            self.literals = self.buffered + rest - 1;
            self.buffered += rest;
            self.repeats = 1;
            self.previous = values[at + count - 1];
            return;
        }
        for j in 1..count {
            self.step(out, values, at + j, 1);
        }
    }

    /// [`Machine::step`] for any run.
    #[inline(never)]
    fn run(&mut self, out: &mut Vec<u8>, values: &[u32], at: usize, len: usize) {
        // Its first value: the run before ends.
        if self.repeats > 8 {
            if self.literals > 0 {
                self.literal(out, values, self.literals);
                self.literals = 0;
            }
            repeated(out, self.repeats, self.previous, self.bits);
            self.buffered = 0;
        } else {
            self.literals = self.buffered;
        }
        self.repeats = 1;
        self.store(out, values, at);
        self.previous = values[at];
        let rest = len - 1;
        // A run of up to 8, and the buffer does not fill: no repeat goes past 8 (at 8,
        // the literal run's padding is undone when the next run starts).
        if rest <= 7 && self.buffered + rest <= MAX_LITERAL {
            self.buffered += rest;
            self.repeats += rest;
            return;
        }
        for i in at + 1..at + len {
            self.repeats += 1;
            if self.repeats > 8 {
                // Repeats past 8 are not buffered: the rest of the run only counts.
                self.repeats += at + len - i - 1;
                return;
            }
            if self.repeats == 8 {
                let padding = (8 - self.literals % 8) % 8;
                self.repeats -= padding;
                self.literals += padding;
            }
            self.store(out, values, i);
        }
    }

    /// Buffers `values[i]`, writing the buffer out first when it is full.
    #[inline]
    fn store(&mut self, out: &mut Vec<u8>, values: &[u32], i: usize) {
        if self.buffered == MAX_LITERAL {
            self.literal(out, values, MAX_LITERAL);
            self.repeats = 1;
            self.buffered = 0;
            self.literals = 0;
        }
        if self.buffered == 0 {
            self.start = i;
        }
        self.buffered += 1;
    }

    fn literal(&self, out: &mut Vec<u8>, values: &[u32], len: usize) {
        literal(
            out,
            &values[self.start..self.start + len],
            self.bits,
            self.pad,
        );
    }

    fn finish(&mut self, out: &mut Vec<u8>, values: &[u32]) {
        if self.repeats <= 8 {
            self.literals = self.buffered;
        }
        if self.literals > 0 {
            self.literal(out, values, self.literals);
        }
        if self.repeats > 8 {
            repeated(out, self.repeats, self.previous, self.bits);
        }
    }
}

/// The number of bits that hold `max` (0 for 0).
pub fn bit_width(max: u32) -> u32 {
    32 - max.leading_zeros()
}

/// A xorshift generator of test data from `seed` (not 0).
#[cfg(test)]
pub(super) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars_parquet::parquet::encoding::hybrid_rle;

    fn polars_u32(values: &[u32], bits: u32) -> Vec<u8> {
        let mut out = Vec::new();
        hybrid_rle::encode::<u32, _, _>(&mut out, values.iter().copied(), bits)
            .expect("writing to a Vec");
        out
    }

    fn polars_bool(values: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        hybrid_rle::encode::<bool, _, _>(&mut out, values.iter().map(|&v| v != 0), 1)
            .expect("writing to a Vec");
        out
    }

    /// Sequences of runs and literals, of every shape the encoder's states meet: runs
    /// of 1 to 20 around the 8 that makes a repeated run, literal stretches crossing
    /// the 8 Ki buffer (runs of at most 8 only, in every fourth case), leading zeros,
    /// one value, widths 0 to 32.
    fn sequences() -> Vec<(Vec<u32>, u32)> {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15u64);
        let mut out = vec![(vec![], 0), (vec![0], 0), (vec![5], 3), (vec![0; 9], 0)];
        for case in 0..1200 {
            let short = case % 4 == 3;
            let bits = (case % 33) as u32;
            let mask = if bits == 32 {
                u32::MAX
            } else {
                (1u32 << bits) - 1
            };
            let len = match case % 7 {
                0 => (next() % 40) as usize,
                1 => 8192 + (next() % 100) as usize,
                2 => 16_384 + (next() % 300) as usize,
                _ => (next() % 3000) as usize,
            };
            let mut v = Vec::with_capacity(len);
            // Every fifth case, long stretches where each value differs from the one
            // before (as a high-cardinality column's codes), between a few runs; every
            // tenth, nothing else (so a literal run fills the 8 Ki buffer).
            let distinct = case % 5 == 4 && bits > 0;
            let only = case % 10 == 9;
            let len = if only {
                8192 + 200 + (next() % 300) as usize
            } else {
                len
            };
            if only {
                // A run first, of a length that moves where the buffer fills.
                v.extend(std::iter::repeat_n(0, case / 10 % 70));
            }
            while v.len() < len {
                if distinct && (only || !next().is_multiple_of(3)) {
                    let stretch = (next() % 300) as usize;
                    for _ in 0..stretch.min(len - v.len()) {
                        let mut x = (next() as u32) & mask;
                        if v.last() == Some(&x) {
                            x ^= 1;
                        }
                        v.push(x);
                    }
                    continue;
                }
                let value = (next() as u32) & mask;
                let run = match if short { 1 } else { next() % 4 } {
                    0 => 1,
                    1 if short => 1 + (next() % 8) as usize,
                    1 => 1 + (next() % 20) as usize,
                    2 => 6 + (next() % 5) as usize,
                    _ => 1 + (next() % 200) as usize,
                };
                v.extend(std::iter::repeat_n(value, run.min(len - v.len())));
            }
            out.push((v, bits));
        }
        out
    }

    #[test]
    fn codes_are_encoded_as_polars_encodes_them() {
        for (values, bits) in sequences() {
            let mut ours = Vec::new();
            encode(&mut ours, &values, bits, Pad::Stale);
            assert_eq!(
                ours,
                polars_u32(&values, bits),
                "{} values of {bits} bits",
                values.len()
            );
        }
    }

    #[test]
    fn levels_are_encoded_as_polars_encodes_booleans() {
        for (values, _) in sequences() {
            let levels: Vec<u32> = values.iter().map(|&v| v & 1).collect();
            let mut ours = Vec::new();
            encode(&mut ours, &levels, 1, Pad::Zeros);
            assert_eq!(ours, polars_bool(&levels), "{} levels", levels.len());
        }
    }

    #[test]
    fn bit_widths() {
        assert_eq!(bit_width(0), 0);
        assert_eq!(bit_width(1), 1);
        assert_eq!(bit_width(255), 8);
        assert_eq!(bit_width(256), 9);
        assert_eq!(bit_width(u32::MAX), 32);
    }
}
