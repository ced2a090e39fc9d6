//! The timeline report: what one address or network did — requests per time bucket, its
//! paths, statuses, user agents and addresses, first and last seen. Its fast path is the
//! selection's: with `--client`, only the rows inside the networks are classified.

use logscope_core::batch::Batch;
use logscope_core::classify::RowClass;
use logscope_core::duration::Duration;
use logscope_core::forensics::timeline::{TimelineAcc, TimelineReport};

use crate::engine::clock::Clock;
use crate::engine::report::{NoPart, PartRows, Report};
use crate::engine::rows::RowStats;
use crate::engine::selection::Selection;
use crate::store::scan::Columns;

/// `logscope timeline`: buckets `by` wide (or chosen from the span), `top` entries per
/// list.
pub struct Timeline {
    acc: TimelineAcc,
    top: usize,
    clients: Vec<String>,
}

impl Timeline {
    /// A timeline in buckets `by` wide (`None`: the width
    /// `forensics::timeline::auto_width` gives the span of the rows) listing `top`
    /// paths, statuses, agents and addresses (0: all); `clients` names whose timeline
    /// it is, for the header.
    pub fn new(by: Option<Duration>, top: usize, clients: Vec<String>) -> Timeline {
        Timeline {
            acc: by.map_or_else(TimelineAcc::auto, |d| TimelineAcc::new(d.ms_i64())),
            top,
            clients,
        }
    }
}

impl Report for Timeline {
    type Part = NoPart;
    type Output = TimelineReport;

    fn columns(&self, cols: Columns, _sel: &Selection) -> Columns {
        // No row's line is shown.
        Columns {
            path: true,
            agent: true,
            sizes: true,
            line: false,
            ..cols
        }
    }

    fn begin_batch(&mut self, b: &Batch) {
        self.acc.begin_batch(b);
    }

    fn add_row(&mut self, b: &Batch, i: usize, rc: &RowClass, clock: &Clock) {
        self.acc.add(b, i, rc, clock.local(b.ts_ms[i]));
    }

    fn add_part(&mut self, _: &Batch, part: NoPart, _: &mut PartRows<'_, '_>) {
        match part {}
    }

    fn finish(self, sel: &Selection, stats: &RowStats) -> TimelineReport {
        let clock = &sel.clock;
        self.acc.finish(
            &sel.classifier,
            self.top,
            &|ms| clock.local(ms),
            clock.name(),
            &self.clients,
            &sel.describe(),
            &stats.origin,
        )
    }
}
