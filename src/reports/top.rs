//! The top report: requests per path, status, referer, user agent, address, prefix,
//! host, method, operating system, referring site, kind (static or dynamic), hour of
//! day, day, country or autonomous system — with share, bytes, distinct clients, error share, first and last
//! seen. Fast path: [`TopPart`], a batch tallied per distinct value where it is decoded.

use logscope_core::batch::Batch;
use logscope_core::classify::RowClass;
use std::sync::Arc;

use logscope_core::forensics::netdb::NetworkDb;
use logscope_core::forensics::top::{TopAcc, TopBy, TopPart, TopReport, TopSort};

use crate::engine::clock::Clock;
use crate::engine::report::{PartFn, PartRows, Report};
use crate::engine::rows::RowStats;
use crate::engine::selection::Selection;
use crate::store::scan::Columns;

/// `logscope top`: requests by `by`, the first `limit` values in `sort` order.
pub struct Top {
    acc: TopAcc,
    by: TopBy,
    sort: TopSort,
    limit: usize,
    networks: Option<Arc<NetworkDb>>,
}

impl Top {
    /// The `limit` first values of `by` (0: all) in `sort` order.
    pub fn new(by: TopBy, sort: TopSort, limit: usize) -> Top {
        Top {
            acc: TopAcc::new(by),
            by,
            sort,
            limit,
            networks: None,
        }
    }

    /// The network database `--by country` and `--by asn` label the clients with.
    pub fn with_networks(mut self, db: Arc<NetworkDb>) -> Top {
        self.networks = Some(db);
        self
    }
}

impl Report for Top {
    type Part = TopPart;
    type Output = TopReport;

    fn columns(&self, cols: Columns, _sel: &Selection) -> Columns {
        // No row's line is shown.
        let mut cols = Columns {
            sizes: true,
            line: false,
            ..cols
        };
        match self.by {
            TopBy::Path | TopBy::Kind => cols.path = true,
            TopBy::Method => cols.request = true,
            TopBy::Referer | TopBy::Site => cols.referer = true,
            TopBy::Agent | TopBy::Os | TopBy::Day => cols.agent = true,
            TopBy::Host => cols.host = true,
            TopBy::Status
            | TopBy::Ip
            | TopBy::Prefix
            | TopBy::Hour
            | TopBy::Country
            | TopBy::Asn => {}
        }
        cols
    }

    fn parts(&self, sel: &Selection) -> Option<PartFn<TopPart>> {
        let by = self.by;
        // The hour and the day are the arrival's on the report's clock: row by row.
        if by.is_clock() {
            return None;
        }
        let lens = (sel.classifier.v4_len, sel.classifier.v6_len);
        Some(Box::new(move |b, cx| {
            Some(TopPart::of(b, by, lens, cx.period))
        }))
    }

    fn begin_batch(&mut self, b: &Batch) {
        self.acc.begin_batch(b);
    }

    fn add_row(&mut self, b: &Batch, i: usize, rc: &RowClass, clock: &Clock) {
        if self.acc.by().is_clock() {
            self.acc.add_local(b, i, rc, clock.local(b.ts_ms[i]));
        } else {
            self.acc.add(b, i, rc);
        }
    }

    fn add_part(&mut self, b: &Batch, part: TopPart, rows: &mut PartRows<'_, '_>) {
        self.acc.add_part(b, &part);
        for &i in &part.rest {
            let rc = rows.classify(i as usize);
            self.acc.add(b, i as usize, &rc);
        }
    }

    fn finish(self, sel: &Selection, stats: &RowStats) -> TopReport {
        let clock = &sel.clock;
        // One lookup per distinct client.
        let acc = match (&self.networks, self.by) {
            (Some(db), TopBy::Country) => self.acc.label_clients(&|k| db.country(k.ip()?)),
            (Some(db), TopBy::Asn) => self.acc.label_clients(&|k| db.as_label(k.ip()?)),
            _ => self.acc,
        };
        TopReport::new(
            acc,
            &sel.classifier,
            self.sort,
            self.limit,
            &|ms| clock.local(ms),
            clock.name(),
            &sel.describe(),
            &stats.origin,
        )
    }
}
