//! The concentration report: how concentrated the selected requests are — top prefixes
//! (or addresses, or autonomous systems) with shares, how many make 50% and 90%, HHI,
//! Gini — and what a per-prefix limit would have touched. Fast path:
//! [`ConcentrationPart`], a batch counted per distinct address and agent where it is
//! decoded.

use std::sync::Arc;

use logscope_core::batch::{Batch, NULL_CODE};
use logscope_core::classify::{Needs, RowClass};
use logscope_core::forensics::concentration::{
    ConcentrationAcc, ConcentrationPart, ConcentrationReport, GroupBy,
};
use logscope_core::forensics::netdb::NetworkDb;
use logscope_core::rate::Rate;

use crate::engine::clock::Clock;
use crate::engine::report::{PartFn, PartRows, Report};
use crate::engine::rows::RowStats;
use crate::engine::selection::Selection;
use crate::store::scan::Columns;

/// `logscope concentration`: requests grouped `by`, the `top` largest groups listed.
pub struct Concentration {
    acc: ConcentrationAcc,
    by: GroupBy,
    limit: Option<Rate>,
    asn: Option<Arc<NetworkDb>>,
    top: usize,
}

impl Concentration {
    /// Also splits the requests into network classes (hosting or other).
    pub fn with_hosting(
        mut self,
        hosting: Option<Arc<logscope_core::forensics::hosting::HostingAsns>>,
    ) -> Self {
        if let Some(h) = hosting {
            self.acc = self.acc.with_hosting(h);
        }
        self
    }

    /// Requests grouped `by` (autonomous systems from `asn`), the `top` largest listed,
    /// and what a per-group `limit` would have touched.
    pub fn new(by: GroupBy, limit: Option<Rate>, asn: Option<Arc<NetworkDb>>, top: usize) -> Self {
        Concentration {
            acc: ConcentrationAcc::new(by, limit),
            by,
            limit,
            asn,
            top,
        }
    }
}

impl Report for Concentration {
    type Part = ConcentrationPart;
    type Output = ConcentrationReport;

    fn needs(&self) -> Needs {
        Needs::AGENT
    }

    fn columns(&self, cols: Columns, sel: &Selection) -> Columns {
        // Neither the line nor (but for a --status filter) the status is used.
        Columns {
            line: false,
            status: sel.filter.status.is_some(),
            ..cols
        }
    }

    fn parts(&self, sel: &Selection) -> Option<PartFn<ConcentrationPart>> {
        let (by, limit) = (self.by, self.limit);
        let lens = (sel.classifier.v4_len, sel.classifier.v6_len);
        Some(Box::new(move |b, cx| {
            Some(ConcentrationPart::of(b, by, limit, lens, cx.period))
        }))
    }

    fn add_row(&mut self, b: &Batch, i: usize, rc: &RowClass, _: &Clock) {
        self.acc.add(b.ts_ms[i], rc);
    }

    fn add_part(&mut self, b: &Batch, part: ConcentrationPart, rows: &mut PartRows<'_, '_>) {
        self.acc.add_part(&part, |slot| {
            rows.agent_of_code((slot != NULL_CODE).then_some(slot))
        });
        for &i in &part.rest {
            let rc = rows.classify(i as usize);
            self.acc.add(b.ts_ms[i as usize], &rc);
        }
    }

    fn finish(self, sel: &Selection, stats: &RowStats) -> ConcentrationReport {
        self.acc.finish(
            &sel.classifier,
            self.asn.as_deref(),
            self.top,
            &sel.describe(),
            &stats.origin,
        )
    }
}
