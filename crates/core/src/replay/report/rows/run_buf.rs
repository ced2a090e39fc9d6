//! One run's rows and their free text while they are gathered ([`RunBuf`]).

use std::io;
use std::path::Path;

use super::needs::Needs;
use super::row::{IDS, NONE, Row, decision_order};
use super::spill::{Run, RunWriter};
use super::text::Arena;

/// One run's rows and their free text, while they are gathered (then sorted and
/// written out, or kept as the last run).
#[derive(Default)]
pub(super) struct RunBuf {
    pub(super) rows: Vec<Row>,
    pub(super) texts: Vec<[u32; IDS]>,
    pub(super) path: Arena,
    pub(super) query: Arena,
    pub(super) referer: Arena,
}

impl RunBuf {
    /// Bytes of free text held.
    pub(super) fn text_bytes(&self) -> usize {
        self.path.held() + self.query.held() + self.referer.held()
    }

    /// Appends row `r` of `from`, with its free text.
    pub(super) fn copy_row(&mut self, r: &Row, from: &RunBuf) {
        let mut row = *r;
        if r.text != NONE {
            let mut t = from.texts[r.text as usize];
            t[1] = self.path.push_bytes(from.path.get(t[1]));
            t[2] = self.query.push_bytes(from.query.get(t[2]));
            t[5] = self.referer.push_bytes(from.referer.get(t[5]));
            row.text = self.texts.len() as u32;
            self.texts.push(t);
        }
        self.rows.push(row);
    }

    /// Sorts the rows (stable: equal keys keep input order).
    pub(super) fn sort(&mut self) {
        self.rows.sort_by(decision_order);
    }

    pub(super) fn clear(&mut self) {
        self.rows.clear();
        self.texts.clear();
        self.path.clear();
        self.query.clear();
        self.referer.clear();
    }

    /// The free text fields of a row: its interned ids and its path, query and referer.
    #[inline]
    pub(super) fn held_text(&self, r: &Row) -> ([u32; IDS], [Option<&[u8]>; 3]) {
        if r.text == NONE {
            return ([NONE; IDS], [None; 3]);
        }
        let t = self.texts[r.text as usize];
        (
            t,
            [
                self.path.get(t[1]),
                self.query.get(t[2]),
                self.referer.get(t[5]),
            ],
        )
    }

    /// Sorts the rows and writes them to a new run under `dir`; their first and last
    /// decision time with the run.
    pub(super) fn write(&mut self, dir: &Path, needs: Needs) -> io::Result<(Run, (i64, i64))> {
        self.sort();
        let mut w = RunWriter::create(dir, needs)?;
        for r in &self.rows {
            let (t, [p, q, f]) = self.held_text(r);
            w.put(r, &t, p, q, f)?;
        }
        let span = (
            self.rows.first().map_or(0, |r| r.arrival),
            self.rows.last().map_or(0, |r| r.arrival),
        );
        Ok((w.finish()?, span))
    }
}
