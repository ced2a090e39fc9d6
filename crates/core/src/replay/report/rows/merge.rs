//! The merge of sorted runs back into one order, and the chunks it hands over.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::collections::binary_heap::PeekMut;
use std::io;

use super::needs::Needs;
use super::row::{IDS, Row, packed_key};
use super::run_buf::RunBuf;
use super::spill::{Run, RunReader};

/// Rows in a [`Chunk`] of merged rows.
pub(super) const CHUNK_ROWS: usize = 4096;
/// Bytes of free text after which a [`Chunk`] is handed over with fewer rows.
pub(super) const CHUNK_TEXT: usize = 8 << 20;

/// Merged rows on their way from the thread reading the runs to the replay: each row
/// with its interned ids and its free text (copied into one buffer).
#[derive(Default)]
pub(super) struct Chunk {
    pub(super) rows: Vec<Row>,
    pub(super) ids: Vec<[u32; IDS]>,
    /// Per row: the path, query and referer as (start, length) in `text`; length
    /// `u32::MAX` for none.
    pub(super) spans: Vec<[(u32, u32); 3]>,
    pub(super) text: Vec<u8>,
}

impl Chunk {
    #[inline]
    pub(super) fn push(&mut self, r: &Row, t: [u32; IDS], fs: [Option<&[u8]>; 3]) {
        self.rows.push(*r);
        self.ids.push(t);
        let text = &mut self.text;
        self.spans.push(fs.map(|f| match f {
            None => (0, u32::MAX),
            Some(b) => {
                let start = text.len() as u32;
                text.extend_from_slice(b);
                (start, b.len() as u32)
            }
        }));
    }

    #[inline]
    pub(super) fn row(&self, k: usize) -> (&Row, [u32; IDS], [Option<&[u8]>; 3]) {
        let fs = self.spans[k]
            .map(|(s, l)| (l != u32::MAX).then(|| &self.text[s as usize..s as usize + l as usize]));
        (&self.rows[k], self.ids[k], fs)
    }

    pub(super) fn cleared(mut self) -> Chunk {
        self.rows.clear();
        self.ids.clear();
        self.spans.clear();
        self.text.clear();
        self
    }
}

/// The row a merge source is at, with its text.
#[inline]
pub(super) fn current<'s>(src: &'s Source<'_>) -> (&'s Row, [u32; IDS], [Option<&'s [u8]>; 3]) {
    match src {
        Source::Held { buf, pos } => {
            let r = &buf.rows[*pos];
            let (t, f) = buf.held_text(r);
            (r, t, f)
        }
        Source::Disk(d) => (&d.row, d.t, d.texts()),
    }
}

/// Calls `f` on every row of `runs`, then of `held` (sorted), in decision-time order
/// (ties: earlier run first), with the source the row is at.
pub(super) fn merge<'a>(
    runs: &'a [Run],
    needs: Needs,
    held: &'a RunBuf,
    mut f: impl FnMut(&Source<'a>) -> io::Result<()>,
) -> io::Result<()> {
    let mut sources: Vec<Source<'a>> = Vec::with_capacity(runs.len() + 1);
    let mut heap = BinaryHeap::with_capacity(runs.len() + 1);
    for run in runs {
        let mut d = RunReader::new(run, needs)?;
        if d.next()? {
            heap.push(Reverse((packed_key(&d.row), sources.len() as u32)));
            sources.push(Source::Disk(d));
        }
    }
    if let Some(r) = held.rows.first() {
        heap.push(Reverse((packed_key(r), sources.len() as u32)));
        sources.push(Source::Held { buf: held, pos: 0 });
    }
    while let Some(mut top) = heap.peek_mut() {
        let s = top.0.1 as usize;
        f(&sources[s])?;
        let next = match &mut sources[s] {
            Source::Held { buf, pos } => {
                *pos += 1;
                buf.rows.get(*pos).map(packed_key)
            }
            Source::Disk(d) => d.next()?.then(|| packed_key(&d.row)),
        };
        match next {
            Some(k) => top.0.0 = k,
            None => {
                PeekMut::pop(top);
            }
        }
    }
    Ok(())
}

/// Where a merge takes its next row from (a few per merge: not boxed, to keep the
/// reader one load away).
#[allow(clippy::large_enum_variant)]
pub(super) enum Source<'a> {
    /// The rows still in memory (the last run), sorted.
    Held { buf: &'a RunBuf, pos: usize },
    /// A run on disk.
    Disk(RunReader<'a>),
}
