//! The probes of an availability report in bounded memory: packed `u64`s pushed in any
//! order, sorted in runs, kept in blocks of 128 (time steps bit-packed at the block's
//! widest, status changes as a bitmap: one to two bytes a probe, decoded without a
//! branch per value) in memory up to a budget and in an unnamed temporary file beyond
//! it, and read back in order as often as the report needs ([`Sorted::iter`]). The
//! steps below the report's gap are summed as they are sealed, so the mean interval
//! needs no pass ([`Sorted::steps_below`]).
//!
//! Rows come almost in time order (arrival = completion − request time jitters them
//! locally), so each sorted run is merged into a short open tail ([`TAIL`] values) and
//! what falls out of the tail is sealed, in order, into the encoded sequence. A run
//! that starts before the last sealed value (files given out of time order, two
//! servers' logs interleaved, a log read backwards) closes the sequence and starts
//! another; at the end the sequences are merged into one, once. Memory: the run, the
//! tail and the budget — never a value per row.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use crate::varint;

/// Values sorted at a time before they are merged into the tail.
pub(super) const RUN: usize = 1 << 16;
/// Sorted values kept open for later runs to merge into.
const TAIL: usize = 4 * RUN;
/// Encoded bytes held in memory by default before they go to a temporary file.
pub(super) const MEM_BYTES: usize = 16 << 20;
/// Bytes read from a temporary file at a time.
const READ_BUF: usize = 64 << 10;
/// Closed sequences at most: at this many they are merged into one.
const MAX_SEQS: usize = 32;
/// Low bits of a packed value that hold the status (see `acc.rs`).
/// Offset added to timestamps before packing (covers ±35,000 years in ms).
pub(super) const BIAS: i64 = 1 << 50;
/// Bits of a packed probe that hold the status.
pub(super) const STATUS_BITS: u32 = 12;
pub(super) const STATUS_MASK: u64 = (1 << STATUS_BITS) - 1;

/// Where the encoded values live and how many bytes may stay in memory.
#[derive(Clone, Debug)]
pub(super) struct Budget {
    /// Encoded bytes held in memory per sequence before it moves to a temporary file.
    pub(super) mem_bytes: usize,
    /// Directory of the temporary files (default: [`std::env::temp_dir`]).
    pub(super) dir: Option<PathBuf>,
    /// Time steps (ms) between consecutive values shorter than this are summed as the
    /// values are sealed: [`Sorted::mean_step`] then needs no pass of its own.
    pub(super) mean_below: i64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            mem_bytes: MEM_BYTES,
            dir: None,
            mean_below: DEFAULT_MEAN_BELOW,
        }
    }
}

/// [`Budget::mean_below`] unless told: the availability report's default gap.
pub(super) const DEFAULT_MEAN_BELOW: i64 = 15 * 60_000;

/// The sum and count of a sequence's time steps shorter than [`Budget::mean_below`].
#[derive(Clone, Copy, Debug, Default)]
struct Steps {
    sum: u128,
    n: u64,
}

/// Sorted packed values in blocks of [`BLOCK`]: each block's time steps bit-packed at
/// the width of its largest, and its status changes as a bitmap and a list, so that a
/// block decodes without a branch per value (the report reads the probes three or four
/// times). Values not yet a whole block stay open, unencoded.
#[derive(Debug, Default)]
struct Seq {
    file: Option<File>,
    file_len: u64,
    mem: Vec<u8>,
    /// Values after the last block.
    open: Vec<u64>,
    /// The last value of the last block (what the next block's steps start from).
    base: u64,
    last: u64,
    len: u64,
    steps: Steps,
}

/// Values per encoded block.
const BLOCK: usize = 128;
/// Longest encoded block: its length, width and flag bytes, the status bitmap and
/// statuses, and 64-bit steps.
const MAX_BLOCK_BYTES: usize = 10 + 2 + BLOCK / 8 + 2 * BLOCK + 8 * BLOCK;
/// Steps wider than this are damage (timestamps span less than 2^51 ms).
const MAX_WIDTH: u8 = 56;

impl Seq {
    /// Appends `v`, which is not below the last value appended.
    #[inline]
    fn push(&mut self, v: u64, budget: &Budget) -> io::Result<()> {
        debug_assert!(self.len == 0 || v >= self.last);
        let step = (v >> STATUS_BITS).wrapping_sub(self.last >> STATUS_BITS);
        if self.len > 0 && (step as i64) < budget.mean_below {
            self.steps.sum += u128::from(step);
            self.steps.n += 1;
        }
        self.last = v;
        self.len += 1;
        self.open.push(v);
        if self.open.len() == BLOCK {
            self.encode_block();
            if self.mem.len() >= budget.mem_bytes {
                self.spill(budget)?;
            }
        }
        Ok(())
    }

    /// Encodes the open values (a whole block) into `mem`: the block's length, the
    /// steps' bit width, whether a status changes (then a bitmap of the values whose
    /// status differs from the one before, and their statuses as 16-bit numbers), and
    /// the steps bit-packed, least significant bits first.
    fn encode_block(&mut self) {
        debug_assert_eq!(self.open.len(), BLOCK);
        let mask = (1u64 << STATUS_BITS) - 1;
        let mut steps = [0u64; BLOCK];
        let mut changed = [0u8; BLOCK / 8];
        let mut any = 0u64;
        let mut prev = self.base;
        for (j, &v) in self.open.iter().enumerate() {
            steps[j] = (v >> STATUS_BITS) - (prev >> STATUS_BITS);
            any |= steps[j];
            changed[j / 8] |= u8::from(v & mask != prev & mask) << (j % 8);
            prev = v;
        }
        let width = 64 - any.leading_zeros();
        let n_changed: u32 = changed.iter().map(|b| b.count_ones()).sum();
        let status_bytes = if n_changed > 0 {
            BLOCK / 8 + 2 * n_changed as usize
        } else {
            0
        };
        let len = 2 + status_bytes + BLOCK / 8 * width as usize;
        varint::put(&mut self.mem, len as u64);
        self.mem.push(width as u8);
        self.mem.push(u8::from(n_changed > 0));
        if n_changed > 0 {
            self.mem.extend_from_slice(&changed);
            for (j, &v) in self.open.iter().enumerate() {
                if changed[j / 8] >> (j % 8) & 1 == 1 {
                    self.mem
                        .extend_from_slice(&((v & mask) as u16).to_le_bytes());
                }
            }
        }
        // BLOCK * width is a multiple of 64: every word fills.
        let (mut word, mut bits) = (0u128, 0u32);
        for &d in &steps {
            word |= u128::from(d) << bits;
            bits += width;
            if bits >= 64 {
                self.mem.extend_from_slice(&(word as u64).to_le_bytes());
                word >>= 64;
                bits -= 64;
            }
        }
        debug_assert_eq!(bits, 0);
        self.base = prev;
        self.open.clear();
    }

    /// Moves the bytes held in memory to the sequence's temporary file.
    #[cold]
    fn spill(&mut self, budget: &Budget) -> io::Result<()> {
        if self.mem.is_empty() {
            return Ok(());
        }
        let file = match &mut self.file {
            Some(f) => f,
            None => {
                let dir = budget.dir.clone().unwrap_or_else(std::env::temp_dir);
                self.file.insert(tempfile::tempfile_in(dir)?)
            }
        };
        file.write_all(&self.mem)?;
        self.file_len += self.mem.len() as u64;
        self.mem.clear();
        Ok(())
    }

    fn iter(&self) -> SeqIter<'_> {
        SeqIter {
            seq: self,
            buf: Vec::new(),
            pos: 0,
            at: 0,
            in_mem: self.file_len == 0,
            open_done: false,
            base: 0,
            decoded: 0,
            vals: Vec::with_capacity(BLOCK),
            vi: 0,
            error: None,
        }
    }
}

/// Decodes one block (its bytes after the length) that follows value `base`, appending
/// its values to `out`; returns its last value.
fn decode_block(block: &[u8], base: u64, out: &mut Vec<u64>) -> io::Result<u64> {
    let [width, flag, rest @ ..] = block else {
        return Err(damaged());
    };
    let (width, flag) = (*width, *flag);
    if width > MAX_WIDTH || flag > 1 {
        return Err(damaged());
    }
    let (changed, statuses, packed) = if flag == 1 {
        let changed = rest.get(..BLOCK / 8).ok_or_else(damaged)?;
        let n: usize = changed.iter().map(|b| b.count_ones() as usize).sum();
        let statuses = rest.get(BLOCK / 8..BLOCK / 8 + 2 * n).ok_or_else(damaged)?;
        (changed, statuses, &rest[BLOCK / 8 + 2 * n..])
    } else {
        (&[0u8; BLOCK / 8][..], &[][..], rest)
    };
    if packed.len() != BLOCK / 8 * usize::from(width) {
        return Err(damaged());
    }
    // The packed steps and 8 bytes of room, so that every step is one 64-bit read.
    let mut room = [0u8; BLOCK / 8 * MAX_WIDTH as usize + 8];
    room[..packed.len()].copy_from_slice(packed);
    let w = u32::from(width);
    let step_mask = if w == 0 { 0 } else { u64::MAX >> (64 - w) };
    let mut ts = base >> STATUS_BITS;
    let mut status = base & ((1 << STATUS_BITS) - 1);
    let mut next_status = 0usize;
    for j in 0..BLOCK {
        let bit = j * w as usize;
        let word = u64::from_le_bytes(room[bit / 8..bit / 8 + 8].try_into().expect("8 bytes"));
        ts += (word >> (bit % 8)) & step_mask;
        let change = usize::from(changed[j / 8] >> (j % 8) & 1);
        if change == 1 {
            let k = 2 * next_status;
            let s = statuses.get(k..k + 2).ok_or_else(damaged)?;
            status = u64::from(u16::from_le_bytes([s[0], s[1]]));
            next_status += 1;
        }
        out.push(ts << STATUS_BITS | status);
    }
    Ok(ts << STATUS_BITS | status)
}

/// Reads a [`Seq`] back in order, a block of values at a time: the blocks in its file,
/// then those in memory, then its open values.
struct SeqIter<'a> {
    seq: &'a Seq,
    /// Bytes read from the file, not yet decoded from `pos`.
    buf: Vec<u8>,
    /// Next byte to decode in `buf`, or in the bytes in memory once `in_mem`.
    pos: usize,
    /// File offset of the next read.
    at: u64,
    /// Decoding the bytes in memory (the file part is done).
    in_mem: bool,
    /// The open values were handed out.
    open_done: bool,
    /// The last value decoded.
    base: u64,
    /// Values decoded so far.
    decoded: u64,
    /// Decoded values, handed out from `vi`.
    vals: Vec<u64>,
    vi: usize,
    error: Option<io::Error>,
}

impl SeqIter<'_> {
    /// Keeps the undecoded bytes of `buf` and reads the next block of the file after
    /// them.
    fn refill(&mut self) -> io::Result<()> {
        let file = self.seq.file.as_ref().ok_or_else(damaged)?;
        self.buf.drain(..self.pos);
        self.pos = 0;
        let have = self.buf.len();
        let want = (self.seq.file_len - self.at).min(READ_BUF as u64) as usize;
        self.buf.resize(have + want, 0);
        file.read_exact_at(&mut self.buf[have..], self.at)?;
        self.at += want as u64;
        Ok(())
    }

    /// Decodes the next block of values into `vals`; `false` at the end.
    #[inline(never)]
    fn next_block(&mut self) -> io::Result<bool> {
        self.vals.clear();
        self.vi = 0;
        if !self.in_mem {
            if self.buf.len() - self.pos < MAX_BLOCK_BYTES && self.at < self.seq.file_len {
                self.refill()?;
            }
            if self.pos == self.buf.len() {
                // The file part ends on a block: go on with the bytes in memory.
                self.in_mem = true;
                self.pos = 0;
                self.buf = Vec::new();
            }
        }
        let bytes = if self.in_mem {
            &self.seq.mem[..]
        } else {
            &self.buf[..]
        };
        if self.pos == bytes.len() {
            if self.open_done {
                if self.decoded != self.seq.len {
                    return Err(damaged());
                }
                return Ok(false);
            }
            self.open_done = true;
            self.vals.extend_from_slice(&self.seq.open);
        } else {
            let mut i = self.pos;
            let len = var(bytes, &mut i)? as usize;
            let block = bytes.get(i..i.saturating_add(len)).ok_or_else(damaged)?;
            self.base = decode_block(block, self.base, &mut self.vals)?;
            self.pos = i + len;
        }
        self.decoded += self.vals.len() as u64;
        Ok(true)
    }
}

/// The varint at `b[*i..]`.
#[inline(always)]
fn var(b: &[u8], i: &mut usize) -> io::Result<u64> {
    varint::get(b, i).ok_or_else(damaged)
}

impl Iterator for SeqIter<'_> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        loop {
            if let Some(&v) = self.vals.get(self.vi) {
                self.vi += 1;
                return Some(v);
            }
            if self.error.is_some() {
                return None;
            }
            match self.next_block() {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => {
                    self.error = Some(e);
                    return None;
                }
            }
        }
    }
}

#[cold]
fn damaged() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "a temporary file of sorted probes was damaged while the report ran",
    )
}

/// Takes packed values in any order; [`Sorter::finish`] gives them sorted.
#[derive(Debug, Default)]
pub(super) struct Sorter {
    budget: Budget,
    /// Values pushed since the last run was merged.
    run: Vec<u64>,
    /// The sorted open end of the current sequence.
    tail: Vec<u64>,
    /// The sealed values of the current sequence, all at most `tail[0]`.
    seq: Seq,
    /// Closed sequences (the input went back in time).
    done: Vec<Seq>,
    merge_buf: Vec<u64>,
    /// The first failure to write a temporary file.
    error: Option<io::Error>,
}

impl Sorter {
    pub(super) fn new(budget: Budget) -> Sorter {
        Sorter {
            budget,
            ..Sorter::default()
        }
    }

    /// Adds one value.
    #[inline]
    pub(super) fn push(&mut self, v: u64) {
        self.run.push(v);
        if self.run.len() >= RUN {
            self.merge_run();
        }
    }

    /// Values pushed so far.
    #[cfg(test)]
    pub(super) fn len(&self) -> u64 {
        self.done.iter().map(|s| s.len).sum::<u64>()
            + self.seq.len
            + (self.tail.len() + self.run.len()) as u64
    }

    /// Sets [`Budget::mean_below`]; before any value is pushed.
    pub(super) fn set_mean_below(&mut self, below: i64) {
        debug_assert!(self.run.is_empty() && self.tail.is_empty() && self.seq.len == 0);
        self.budget.mean_below = below;
    }

    /// Adds values already sorted (as [`Sorter::push`] of each would).
    pub(super) fn push_sorted(&mut self, run: &[u64]) {
        debug_assert!(run.is_sorted());
        self.merge_run();
        self.merge_sorted(run);
    }

    /// Sorts the run and merges it into the tail.
    fn merge_run(&mut self) {
        if self.run.is_empty() {
            return;
        }
        let mut run = std::mem::take(&mut self.run);
        run.sort_unstable();
        self.merge_sorted(&run);
        run.clear();
        self.run = run;
    }

    /// Merges sorted `run` into the tail, sealing what falls out of it.
    fn merge_sorted(&mut self, run: &[u64]) {
        let Some(&first) = run.first() else {
            return;
        };
        if self.seq.len > 0 && first < self.seq.last {
            // Before a sealed value: this sequence is closed, a new one begins.
            self.seal(self.tail.len());
            self.close();
        }
        let from = self.tail.partition_point(|&p| p <= first);
        if from == self.tail.len() {
            self.tail.extend_from_slice(run);
        } else {
            let buf = &mut self.merge_buf;
            buf.clear();
            buf.extend_from_slice(&self.tail[from..]);
            self.tail.truncate(from);
            let (a, b) = (&buf[..], run);
            let (mut i, mut j) = (0, 0);
            while i < a.len() && j < b.len() {
                if a[i] <= b[j] {
                    self.tail.push(a[i]);
                    i += 1;
                } else {
                    self.tail.push(b[j]);
                    j += 1;
                }
            }
            self.tail.extend_from_slice(&a[i..]);
            self.tail.extend_from_slice(&b[j..]);
        }
        // Sealing moves the tail's rest to its front: at twice its size, so that each
        // value is moved about once.
        if self.tail.len() > 2 * TAIL {
            self.seal(self.tail.len() - TAIL);
        }
    }

    /// Moves the first `n` values of the tail into the sealed sequence.
    fn seal(&mut self, n: usize) {
        if self.error.is_none() {
            for &v in &self.tail[..n] {
                if let Err(e) = self.seq.push(v, &self.budget) {
                    self.error = Some(e);
                    break;
                }
            }
        }
        self.tail.drain(..n);
    }

    /// Every value pushed, sorted; fails if a temporary file could not be written.
    pub(super) fn finish(mut self) -> io::Result<Sorted> {
        self.merge_run();
        self.seal(self.tail.len());
        if let Some(e) = self.error {
            return Err(e);
        }
        if self.done.is_empty() {
            return Ok(Sorted {
                seq: self.seq,
                mean_below: self.budget.mean_below,
            });
        }
        self.done.push(std::mem::take(&mut self.seq));
        let out = merge(&self.done, &self.budget)?;
        Ok(Sorted {
            seq: out,
            mean_below: self.budget.mean_below,
        })
    }

    /// Closes the current sequence: its bytes go to its file, so that memory holds one
    /// sequence's budget however many there are; at [`MAX_SEQS`] they become one.
    fn close(&mut self) {
        let mut closed = std::mem::take(&mut self.seq);
        if self.error.is_none()
            && let Err(e) = closed.spill(&self.budget)
        {
            self.error = Some(e);
        }
        self.done.push(closed);
        if self.done.len() >= MAX_SEQS && self.error.is_none() {
            match merge(&self.done, &self.budget)
                .and_then(|mut m| m.spill(&self.budget).map(|()| m))
            {
                Ok(m) => self.done = vec![m],
                Err(e) => self.error = Some(e),
            }
        }
    }
}

/// One k-way merge of sorted sequences into one.
fn merge(seqs: &[Seq], budget: &Budget) -> io::Result<Seq> {
    let mut iters: Vec<SeqIter> = seqs.iter().map(Seq::iter).collect();
    let mut heap = BinaryHeap::with_capacity(iters.len());
    for (k, it) in iters.iter_mut().enumerate() {
        if let Some(v) = it.next() {
            heap.push(Reverse((v, k)));
        }
    }
    let mut out = Seq::default();
    while let Some(Reverse((v, k))) = heap.pop() {
        out.push(v, budget)?;
        if let Some(n) = iters[k].next() {
            heap.push(Reverse((n, k)));
        }
    }
    for it in iters {
        if let Some(e) = it.error {
            return Err(e);
        }
    }
    Ok(out)
}

/// Sorted packed values, read back with [`Sorted::iter`].
#[derive(Debug, Default)]
pub(super) struct Sorted {
    seq: Seq,
    /// The [`Budget::mean_below`] the sealing counted steps below.
    mean_below: i64,
}

impl Sorted {
    /// How many.
    #[cfg(test)]
    pub(super) fn len(&self) -> u64 {
        self.seq.len
    }

    /// The values in order. A read error of the temporary file ends the iteration
    /// early; [`Iter::error`] tells.
    pub(super) fn iter(&self) -> Iter<'_> {
        Iter(self.seq.iter())
    }

    /// The sum and count of the time steps between consecutive values shorter than
    /// `below` ms, when the sealing counted them ([`Budget::mean_below`] is `below`).
    pub(super) fn steps_below(&self, below: i64) -> Option<(u128, u64)> {
        (self.mean_below == below).then_some((self.seq.steps.sum, self.seq.steps.n))
    }
}

/// The values of a [`Sorted`], in order.
pub(super) struct Iter<'a>(SeqIter<'a>);

impl Iter<'_> {
    /// Takes the read error that ended the iteration, if one did.
    pub(super) fn error(&mut self) -> Option<io::Error> {
        self.0.error.take()
    }
}

impl Iterator for Iter<'_> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        self.0.next()
    }
}

/// A packed probe's time (UTC ms) and status.
pub(super) fn unpack(p: u64) -> (i64, u16) {
    ((p >> STATUS_BITS) as i64 - BIAS, (p & STATUS_MASK) as u16)
}

/// A xorshift generator from `seed`, for the tests here and in `acc.rs`.
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

    fn packed(ts: i64, status: u64) -> u64 {
        ((ts + super::BIAS) as u64) << STATUS_BITS | status
    }

    /// Whatever the input order and however small the memory budget, the values come
    /// back exactly, sorted, as often as asked.
    #[test]
    fn values_come_back_sorted_in_any_order_and_budget() {
        let n = 5 * RUN + 123;
        let mut next = xorshift(7);
        let jittered: Vec<u64> = (0..n as i64)
            .map(|i| {
                packed(
                    1_700_000_000_000 + i * 10 - (next() % 5_000) as i64,
                    next() % 600,
                )
            })
            .collect();
        let two_files: Vec<u64> = (0..n as i64)
            .map(|i| packed(1_700_000_000_000 + (i % 2) * 1_000_000 + i, 200))
            .collect();
        let backwards: Vec<u64> = (0..n as i64)
            .rev()
            .map(|i| packed(1_700_000_000_000 + i * 1_000, 200 + (i % 3) as u64))
            .collect();
        let mut r = xorshift(99);
        let random: Vec<u64> = (0..n)
            .map(|_| packed((r() % (1 << 40)) as i64, r() % 4096))
            .collect();
        for vals in [jittered, two_files, backwards, random] {
            let mut want = vals.clone();
            want.sort_unstable();
            for mem_bytes in [MEM_BYTES, 4096, 1] {
                let mut s = Sorter::new(Budget {
                    mem_bytes,
                    ..Budget::default()
                });
                for &v in &vals {
                    s.push(v);
                }
                assert_eq!(s.len(), n as u64);
                let sorted = s.finish().expect("sorted");
                assert_eq!(sorted.len(), n as u64);
                for _ in 0..2 {
                    let mut it = sorted.iter();
                    let got: Vec<u64> = it.by_ref().collect();
                    assert!(it.error().is_none());
                    assert!(got == want, "mem_bytes {mem_bytes}: values differ");
                }
            }
        }
    }

    /// Input in reverse time order closes a sequence per run; past [`MAX_SEQS`] of
    /// them they are merged on the way, and the values still come back sorted.
    /// Sequences of every length around a block's come back whole: open values only,
    /// whole blocks, blocks and open values; steps of every width, in memory and in a
    /// file.
    #[test]
    fn every_length_around_a_block_comes_back() {
        let mut r = xorshift(5);
        for n in (0..=2 * BLOCK + 3).chain([5 * BLOCK]) {
            let mut t = 1_600_000_000_000i64;
            let vals: Vec<u64> = (0..n)
                .map(|i| {
                    t += (r() % (1 << (i % 40))) as i64;
                    packed(
                        t,
                        if r().is_multiple_of(4) {
                            r() % 4096
                        } else {
                            200
                        },
                    )
                })
                .collect();
            for mem_bytes in [MEM_BYTES, 1] {
                let mut s = Sorter::new(Budget {
                    mem_bytes,
                    ..Budget::default()
                });
                for &v in &vals {
                    s.push(v);
                }
                let sorted = s.finish().expect("sorted");
                let mut it = sorted.iter();
                let got: Vec<u64> = it.by_ref().collect();
                assert!(it.error().is_none());
                let mut want = vals.clone();
                want.sort_unstable();
                assert!(got == want, "{n} values, mem_bytes {mem_bytes}");
            }
        }
    }

    #[test]
    fn many_sequences_are_merged_on_the_way() {
        let n = (MAX_SEQS as i64 + 3) * RUN as i64;
        let mut s = Sorter::new(Budget {
            mem_bytes: 4096,
            ..Budget::default()
        });
        for i in (0..n).rev() {
            s.push(packed(1_700_000_000_000 + i * 7, 200 + (i % 2) as u64));
        }
        assert!(s.done.len() < MAX_SEQS);
        let sorted = s.finish().expect("sorted");
        let mut it = sorted.iter();
        let mut k = 0i64;
        for v in it.by_ref() {
            assert_eq!(v, packed(1_700_000_000_000 + k * 7, 200 + (k % 2) as u64));
            k += 1;
        }
        assert!(it.error().is_none());
        assert_eq!(k, n);
    }

    #[test]
    fn nothing_pushed_gives_nothing() {
        let s = Sorter::new(Budget::default()).finish().expect("sorted");
        assert_eq!(s.len(), 0);
        assert_eq!(s.iter().count(), 0);
    }
}
