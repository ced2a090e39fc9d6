//! The one interface every report is built on ([`Report`]), and the one driver that runs
//! any report over log files or the dataset, its fast path included ([`run`]).
//!
//! A report says which parts of a row's class and which columns it reads, and how it
//! takes one selected row ([`Report::add_row`]). That alone is a correct report. To be
//! fast it may also give a *part*: a tally of a whole batch (per distinct address, path,
//! User-Agent …) worked out on the threads that decode the dataset, which it then adds
//! on the caller's thread ([`Report::add_part`]). The driver asks for parts only where
//! they are exact — every row of the period counts and the client is the logged address
//! (no trusted proxies) — and otherwise feeds the report row by row; a report never sees
//! the decoding threads, the selection's pre-work or the batch classifier's bookkeeping.
//!
//! A new report: a struct holding its accumulator, `impl Report` (often `add_row` and
//! `finish` only, with `type Part = NoPart`), and a call to [`run`] from its command.

use logscope_core::batch::Batch;
use logscope_core::classify::{AgentId, BatchClass, Classifier, Needs, RowClass};

use super::clock::{Clock, ClockZone};
use super::rows::{RowSource, RowStats, columns_for};
use super::selection::Selection;
use crate::store::scan::Columns;

/// A report: what it reads, how it takes rows (and, optionally, batch parts), and what
/// it gives at the end.
pub trait Report {
    /// A batch's tally, worked out where the batch is decoded ([`NoPart`]: the report
    /// has no fast path).
    type Part: Send;
    /// The finished report.
    type Output;

    /// The parts of a row's class the report reads (the filter's own are added).
    fn needs(&self) -> Needs {
        Needs::NONE
    }

    /// The columns the report reads, given `cols`: those of its class parts and of the
    /// filter `sel` applies.
    fn columns(&self, cols: Columns, _sel: &Selection) -> Columns {
        cols
    }

    /// The function that works out a batch's part on the decoding threads, with the
    /// batch's context ([`PartContext`]); `None` (the default) where the report has no
    /// fast path. Asked only where parts are exact (see the module's documentation); a
    /// function that returns `None` for a batch sends that batch row by row.
    fn parts(&self, _sel: &Selection) -> Option<PartFn<Self::Part>> {
        None
    }

    /// Called for every batch, before its rows or its part.
    fn begin_batch(&mut self, _b: &Batch) {}

    /// One selected row `i` of `b`, classified as `rc`; `clock` is the report's clock.
    fn add_row(&mut self, b: &Batch, i: usize, rc: &RowClass, clock: &Clock);

    /// A batch's part. `rows` classifies the rows the part could not tally (those without
    /// an address, say), which the report then adds as it adds rows.
    fn add_part(&mut self, b: &Batch, part: Self::Part, rows: &mut PartRows<'_, '_>);

    /// The report, once every row is in; `stats` says what was read.
    fn finish(self, sel: &Selection, stats: &RowStats) -> Self::Output;
}

/// The part of a report without a fast path: no value of it exists.
pub enum NoPart {}

/// What a part function is given besides the batch.
pub struct PartContext<'a> {
    /// The heavy class of each row, when the report (or the filter) reads it.
    pub heavy: Option<&'a [logscope_core::classify::HeavyClass]>,
    /// The report's clock, for aligning buckets.
    pub clock: &'a Clock,
    /// The selection's period, UTC ms, half-open.
    pub period: (Option<i64>, Option<i64>),
}

/// The function that works out a batch's part, run on the decoding threads.
pub type PartFn<P> = Box<dyn Fn(&Batch, &PartContext<'_>) -> Option<P> + Send + Sync>;

/// The classification of a batch's rows, for [`Report::add_part`].
pub struct PartRows<'c, 'b> {
    classifier: &'c mut Classifier,
    batch: BatchClass<'b>,
    clock: &'c Clock,
}

impl<'c> PartRows<'c, '_> {
    /// The class of row `i`.
    #[inline]
    pub fn classify(&mut self, i: usize) -> RowClass {
        self.batch.classify(self.classifier, i)
    }

    /// The agent of a User-Agent dictionary code of the batch (`None`: no User-Agent),
    /// worked out once per code.
    #[inline]
    pub fn agent_of_code(&mut self, code: Option<u32>) -> AgentId {
        self.batch.agent_of_code(self.classifier, code)
    }

    /// The report's clock.
    pub fn clock(&self) -> &'c Clock {
        self.clock
    }
}

/// Runs `report` over the rows of `source` that `sel` selects, and gives its output and
/// what was read.
///
/// Batches are delivered per input in input order. Where parts are exact and the report
/// has them, each batch's part is worked out on the thread that decoded the batch (both
/// cores share the work over the dataset); otherwise every selected row is classified
/// (per distinct value where the batch is coded) and given to [`Report::add_row`].
pub fn run<R: Report>(
    source: &RowSource,
    sel: &mut Selection,
    mut report: R,
) -> anyhow::Result<(R::Output, RowStats)> {
    let cols = columns_for(report.needs(), &sel.filter, &mut sel.classifier);
    let cols = report.columns(cols, sel);
    sel.settle_heavy(source)?;
    let (since, until) = sel.period();
    let parts = if sel.counts_where_decoded() {
        report.parts(sel)
    } else {
        None
    };
    let zone: ClockZone = sel.clock.shared();
    let selected = sel.prep();
    let prep = move |b: &Batch| {
        let pre = selected(b);
        let part = parts.as_ref().and_then(|f| {
            let clock = zone.clock();
            let cx = PartContext {
                heavy: pre.heavy.as_deref(),
                clock: &clock,
                period: (since, until),
            };
            f(b, &cx)
        });
        (pre, part)
    };
    let stats = source.for_each_batch_with(cols, since, until, prep, |_, b, (pre, part)| {
        report.begin_batch(b);
        match part {
            None => sel.each_selected_with(b, Some(&pre), |i, rc, _, clock| {
                report.add_row(b, i, rc, clock)
            }),
            Some(part) => {
                let batch = sel.classifier.batch_with(b, pre.heavy.as_deref());
                let mut rows = PartRows {
                    classifier: &mut sel.classifier,
                    batch,
                    clock: &sel.clock,
                };
                report.add_part(b, part, &mut rows);
                let PartRows { batch, .. } = rows;
                sel.classifier.end_batch(batch);
            }
        }
    })?;
    let output = report.finish(sel, &stats);
    Ok((output, stats))
}
