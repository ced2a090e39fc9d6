//! The probes of an availability report in bounded memory: packed `u64`s pushed in any
//! order, sorted in runs, kept delta-encoded (about two bytes a probe) in memory up to
//! a budget and in an unnamed temporary file beyond it, and read back in order as
//! often as the report needs ([`Sorted::iter`]).
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
const STATUS_BITS: u32 = super::acc::STATUS_BITS;

/// Where the encoded values live and how many bytes may stay in memory.
#[derive(Clone, Debug)]
pub(super) struct Budget {
    /// Encoded bytes held in memory per sequence before it moves to a temporary file.
    pub(super) mem_bytes: usize,
    /// Directory of the temporary files (default: [`std::env::temp_dir`]).
    pub(super) dir: Option<PathBuf>,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            mem_bytes: MEM_BYTES,
            dir: None,
        }
    }
}

/// Sorted packed values, delta-encoded: the time step shifted left one bit (the low
/// bit set when the status repeats), then the status when it does not.
#[derive(Debug, Default)]
struct Seq {
    file: Option<File>,
    file_len: u64,
    mem: Vec<u8>,
    last: u64,
    len: u64,
}

impl Seq {
    /// Appends `v`, which is not below the last value appended.
    #[inline]
    fn push(&mut self, v: u64, budget: &Budget) -> io::Result<()> {
        debug_assert!(self.len == 0 || v >= self.last);
        let mask = (1u64 << STATUS_BITS) - 1;
        let step = (v >> STATUS_BITS).wrapping_sub(self.last >> STATUS_BITS);
        if self.len > 0 && v & mask == self.last & mask {
            varint::put(&mut self.mem, step << 1 | 1);
        } else {
            varint::put(&mut self.mem, step << 1);
            varint::put(&mut self.mem, v & mask);
        }
        self.last = v;
        self.len += 1;
        if self.mem.len() >= budget.mem_bytes {
            self.spill(budget)?;
        }
        Ok(())
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
            left: self.len,
            prev: 0,
            vals: Vec::with_capacity(BLOCK),
            vi: 0,
            error: None,
        }
    }
}

/// Values decoded at a time.
const BLOCK: usize = 4096;
/// More than the longest encoding of one value (two varints).
const MAX_VALUE_BYTES: usize = 24;

/// Reads a [`Seq`] back in order, a block of values at a time.
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
    /// Values not yet decoded.
    left: u64,
    prev: u64,
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

    /// Decodes the next block of values into `vals`.
    #[inline(never)]
    fn decode_block(&mut self) -> io::Result<()> {
        self.vals.clear();
        self.vi = 0;
        while self.left > 0 && self.vals.len() < BLOCK {
            if !self.in_mem {
                let file_done = self.at == self.seq.file_len;
                if file_done && self.pos == self.buf.len() {
                    // The file part ends on a value: go on with the bytes in memory.
                    self.in_mem = true;
                    self.pos = 0;
                    self.buf = Vec::new();
                } else if !file_done && self.buf.len() - self.pos < MAX_VALUE_BYTES {
                    self.refill()?;
                }
            }
            // Decode below `limit`: the end of the bytes, or (with more of the file to
            // read) where a whole value surely remains.
            let (bytes, limit) = if self.in_mem {
                (&self.seq.mem[..], self.seq.mem.len())
            } else if self.at == self.seq.file_len {
                (&self.buf[..], self.buf.len())
            } else {
                (&self.buf[..], self.buf.len() + 1 - MAX_VALUE_BYTES)
            };
            let mut i = self.pos;
            let mut prev = self.prev;
            let mut left = self.left;
            let room = BLOCK - self.vals.len();
            let mut n = 0;
            while left > 0 && n < room && i < limit {
                let head = var(bytes, &mut i)?;
                let status = if head & 1 == 1 {
                    prev & ((1 << STATUS_BITS) - 1)
                } else {
                    var(bytes, &mut i)?
                };
                let ts = (prev >> STATUS_BITS).wrapping_add(head >> 1);
                prev = ts << STATUS_BITS | status;
                self.vals.push(prev);
                left -= 1;
                n += 1;
            }
            self.pos = i;
            self.prev = prev;
            self.left = left;
            if self.in_mem && n == 0 && left > 0 {
                return Err(damaged());
            }
        }
        Ok(())
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
        if let Some(&v) = self.vals.get(self.vi) {
            self.vi += 1;
            return Some(v);
        }
        if self.left == 0 || self.error.is_some() {
            return None;
        }
        if let Err(e) = self.decode_block() {
            self.error = Some(e);
            return None;
        }
        self.vi = 1;
        self.vals.first().copied()
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
            return Ok(Sorted { seq: self.seq });
        }
        self.done.push(std::mem::take(&mut self.seq));
        let out = merge(&self.done, &self.budget)?;
        Ok(Sorted { seq: out })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    fn packed(ts: i64, status: u64) -> u64 {
        ((ts + super::super::acc::BIAS) as u64) << STATUS_BITS | status
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
                    dir: None,
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
    #[test]
    fn many_sequences_are_merged_on_the_way() {
        let n = (MAX_SEQS as i64 + 3) * RUN as i64;
        let mut s = Sorter::new(Budget {
            mem_bytes: 4096,
            dir: None,
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
