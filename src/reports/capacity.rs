//! The capacity report: what load the backend took per window — held, stall, peak
//! throughput — with the evidence per window (see `logscope_core::forensics::capacity`).
//! No fast path yet: every selected row is added with its status and request time.

use logscope_core::batch::Batch;
use logscope_core::classify::{Needs, RowClass};
use logscope_core::duration::Duration;
use logscope_core::forensics::capacity::{CapacityAcc, CapacityReport, Scope};

use crate::engine::clock::Clock;
use crate::engine::report::{NoPart, PartRows, Report};
use crate::engine::rows::RowStats;
use crate::engine::selection::Selection;
use crate::store::scan::Columns;

/// `logscope capacity`: windows `by` wide, levels counted over `scope`.
pub struct Capacity {
    acc: CapacityAcc,
    scope: Scope,
}

impl Capacity {
    /// A capacity report in windows `by` wide over `scope`.
    pub fn new(by: Duration, scope: Scope) -> Capacity {
        Capacity {
            acc: CapacityAcc::new(by.ms_i64(), scope),
            scope,
        }
    }
}

impl Report for Capacity {
    type Part = NoPart;
    type Output = CapacityReport;

    fn needs(&self) -> Needs {
        Needs {
            heavy: self.scope == Scope::Heavy,
            ..Needs::NONE
        }
    }

    fn columns(&self, cols: Columns, _sel: &Selection) -> Columns {
        Columns {
            status: true,
            timing: true,
            line: false,
            ..cols
        }
    }

    fn add_row(&mut self, b: &Batch, i: usize, rc: &RowClass, clock: &Clock) {
        let in_scope = match self.scope {
            Scope::All => true,
            Scope::Heavy => rc.heavy.is_heavy(),
        };
        let rt = b.request_time_us.get(i).copied().flatten();
        let status = b.status.get(i).copied().unwrap_or(0);
        let local = clock.local(b.ts_ms[i]);
        self.acc
            .add(local, local - b.ts_ms[i], status, rt, in_scope);
    }

    fn add_part(&mut self, _: &Batch, part: NoPart, _: &mut PartRows<'_, '_>) {
        match part {}
    }

    fn finish(self, sel: &Selection, stats: &RowStats) -> CapacityReport {
        self.acc
            .finish(&stats.origin, &sel.describe(), sel.clock.name())
    }
}
