//! The heavy report: per time bucket, requests, heavy requests, distinct addresses and
//! prefixes of the heavy ones, the largest prefix and its share, the dominant agent class
//! — with buckets over a capacity marked. Fast path: [`HeavyPart`], a batch tallied per
//! bucket and per distinct client, prefix and User-Agent where it is decoded.

use logscope_core::batch::Batch;
use logscope_core::classify::{Needs, RowClass};
use logscope_core::duration::Duration;
use logscope_core::forensics::heavy::{HeavyAcc, HeavyPart, HeavyReport, PartSpec, auto_floor};
use logscope_core::rate::Rate;

use crate::engine::clock::Clock;
use crate::engine::report::{PartFn, PartRows, Report};
use crate::engine::rows::RowStats;
use crate::engine::selection::Selection;
use crate::store::scan::Columns;

/// `logscope heavy`: buckets `by` wide, marked above `capacity`.
pub struct Heavy {
    acc: HeavyAcc,
    /// The width of the parts' buckets (with an automatic width, the smallest it can be).
    width_ms: i64,
    capacity: Option<Rate>,
}

impl Heavy {
    /// A heavy report in buckets `by` wide, buckets whose peak is above `capacity` marked.
    pub fn new(by: Duration, capacity: Option<Rate>) -> Heavy {
        Heavy {
            acc: HeavyAcc::new(by.ms_i64(), capacity),
            width_ms: by.ms_i64(),
            capacity,
        }
    }

    /// Also the largest autonomous system of each bucket, from `db`.
    pub fn with_networks(
        mut self,
        db: Option<std::sync::Arc<logscope_core::forensics::netdb::NetworkDb>>,
    ) -> Heavy {
        if let Some(db) = db {
            self.acc = self.acc.with_networks(db);
        }
        self
    }

    /// A heavy report in buckets of the width `heavy::auto_width` gives the span of the
    /// selected rows (`report --by auto`).
    pub fn auto(capacity: Option<Rate>) -> Heavy {
        Heavy {
            acc: HeavyAcc::auto(capacity),
            width_ms: auto_floor(capacity),
            capacity,
        }
    }
}

impl Report for Heavy {
    type Part = HeavyPart;
    type Output = HeavyReport;

    fn needs(&self) -> Needs {
        Needs::HEAVY_AND_AGENT
    }

    fn columns(&self, cols: Columns, sel: &Selection) -> Columns {
        // Neither the line nor (but for a --status filter) the status is used.
        Columns {
            line: false,
            status: sel.filter.status.is_some(),
            ..cols
        }
    }

    fn parts(&self, sel: &Selection) -> Option<PartFn<HeavyPart>> {
        let (since, until) = sel.period();
        let spec = PartSpec {
            width_ms: self.width_ms,
            window_ms: self.capacity.map(|c| c.window_ms() as i64),
            v4_len: sel.classifier.v4_len,
            v6_len: sel.classifier.v6_len,
            since,
            until,
        };
        Some(Box::new(move |b, cx| {
            HeavyPart::of(b, cx.heavy?, &spec, |t| cx.clock.local(t))
        }))
    }

    fn add_row(&mut self, b: &Batch, i: usize, rc: &RowClass, clock: &Clock) {
        let ts = b.ts_ms[i];
        self.acc.add(ts, clock.local(ts), rc);
    }

    fn add_part(&mut self, b: &Batch, part: HeavyPart, rows: &mut PartRows<'_, '_>) {
        let ids = part.agent_ids(|code| rows.agent_of_code(code));
        let clock = rows.clock();
        self.acc.add_part(&part, &ids, |acc, i| {
            let rc = rows.classify(i as usize);
            let ts = b.ts_ms[i as usize];
            acc.add(ts, clock.local(ts), &rc);
        });
    }

    fn finish(self, sel: &Selection, stats: &RowStats) -> HeavyReport {
        self.acc.finish(
            &sel.classifier,
            sel.clock.name(),
            &sel.describe(),
            &stats.origin,
        )
    }
}
