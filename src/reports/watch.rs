//! The watch report: requests, heavy requests and statuses per minute
//! ([`logscope_core::forensics::live::Minutes`]), the series under every frame of
//! `logscope watch` and the counts its alerts are evaluated on. No fast path: every
//! selected row is added with its time, heavy class and status.

use logscope_core::batch::Batch;
use logscope_core::classify::{Needs, RowClass};
use logscope_core::forensics::live::Minutes;

use crate::engine::clock::Clock;
use crate::engine::report::{NoPart, PartRows, Report};
use crate::engine::rows::RowStats;
use crate::engine::selection::Selection;
use crate::store::scan::Columns;

/// Counts per minute of the last `keep` minutes before the latest row (`None`: all).
pub struct Series {
    minutes: Minutes,
}

impl Series {
    /// The last `keep` minutes up to the latest row's (`None`: every minute).
    pub fn new(keep: Option<u64>) -> Series {
        Series {
            minutes: Minutes::new(keep),
        }
    }
}

impl Report for Series {
    type Part = NoPart;
    type Output = Minutes;

    fn needs(&self) -> Needs {
        Needs {
            heavy: true,
            ..Needs::NONE
        }
    }

    fn columns(&self, cols: Columns, _sel: &Selection) -> Columns {
        Columns {
            status: true,
            line: false,
            ..cols
        }
    }

    fn add_row(&mut self, b: &Batch, i: usize, rc: &RowClass, _clock: &Clock) {
        let status = b.status.get(i).copied().unwrap_or(0);
        self.minutes.add(b.ts_ms[i], rc.heavy.is_heavy(), status);
    }

    fn add_part(&mut self, _: &Batch, part: NoPart, _: &mut PartRows<'_, '_>) {
        match part {}
    }

    fn finish(self, _sel: &Selection, _stats: &RowStats) -> Minutes {
        self.minutes
    }
}
