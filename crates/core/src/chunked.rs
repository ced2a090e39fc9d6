//! A growable array kept in fixed-size chunks: a push never moves what is stored, so a
//! table of millions of per-value entries peaks at its own size plus one chunk, where a
//! `Vec` that doubles holds the old and the new buffer at once (three times the data).

use std::ops::{Index, IndexMut};

/// Entries per chunk (a power of two: the index splits with a shift and a mask).
const CHUNK_BITS: u32 = 14;
const CHUNK: usize = 1 << CHUNK_BITS;

/// A `Vec`-like array that grows a chunk at a time (the first chunk grows like a `Vec`,
/// so a small table stays small).
#[derive(Clone, Debug)]
pub struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunked<T> {
    /// Appends `v` and returns its index.
    #[inline]
    pub fn push(&mut self, v: T) -> usize {
        let full = self.chunks.last().is_none_or(|c| c.len() == CHUNK);
        if full {
            let cap = if self.chunks.is_empty() { 0 } else { CHUNK };
            self.chunks.push(Vec::with_capacity(cap));
        }
        let last = self.chunks.last_mut().expect("a chunk with room");
        if last.len() == last.capacity() {
            // Only the first chunk grows: by doubling, never past a chunk.
            let more = last.len().max(4).min(CHUNK - last.len());
            last.reserve_exact(more);
        }
        last.push(v);
        self.len += 1;
        self.len - 1
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries in index order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.chunks.iter().flatten()
    }
}

impl<T> Index<usize> for Chunked<T> {
    type Output = T;
    #[inline]
    fn index(&self, i: usize) -> &T {
        &self.chunks[i >> CHUNK_BITS][i & (CHUNK - 1)]
    }
}

impl<T> IndexMut<usize> for Chunked<T> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.chunks[i >> CHUNK_BITS][i & (CHUNK - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_like_a_vec_across_chunks() {
        let mut c = Chunked::default();
        let mut v = Vec::new();
        for i in 0..3 * CHUNK + 17 {
            assert_eq!(c.push(i * 7), i);
            v.push(i * 7);
        }
        assert_eq!(c.len(), v.len());
        for i in [0, 1, CHUNK - 1, CHUNK, 2 * CHUNK + 3, v.len() - 1] {
            assert_eq!(c[i], v[i]);
        }
        c[CHUNK] += 1;
        v[CHUNK] += 1;
        assert!(c.iter().copied().eq(v.iter().copied()));
        // No chunk ever holds more than a chunk's room.
        assert!(c.chunks.iter().all(|ch| ch.capacity() <= CHUNK));
        assert_eq!(c.chunks.len(), 4);
    }

    #[test]
    fn a_small_table_stays_small() {
        let mut c = Chunked::default();
        for i in 0..5u64 {
            c.push(i);
        }
        assert!(c.chunks[0].capacity() < 16);
        assert!(!c.is_empty());
    }
}
