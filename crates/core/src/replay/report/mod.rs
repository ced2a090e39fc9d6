//! The `logscope replay` report: what each candidate limiter would have done with the
//! selected requests — admitted, delayed, refused; the passed load against a capacity;
//! refusals over time; whom it refused (top networks, addresses, agents, and classes:
//! declared bots, anonymous browser-like, identified users, internal services); the
//! requests a deployed limiter already refused in the log — as a typed, serializable
//! [`ReplayReport`] and a [`crate::forensics::doc::Doc`] for people.
//!
//! Flow: collect the selected rows in a [`RowStore`] (with a [`Who`] class each; it
//! writes sorted runs to temporary files beyond a run size, so memory does not grow
//! with the log), [`RowStore::sort`] them into decision-time order, then [`run`] feeds
//! them (merging the runs back) through a [`Replay`] into a [`ReportAcc`] (and
//! optionally a [`DecisionsWriter`]), and [`ReportAcc::finish`] gives the report.
//! Nothing the accumulator keeps grows with the log: counts per class, rule, zone,
//! bucket, capacity window and distinct refused key, and the decision times of the
//! last capacity window (for its sliding peak). Deterministic: no hash-map order reaches an
//! output, every sort has a tie-breaker.
//!
//! Files: `options.rs` (what the report is asked for), `model.rs` (the typed result),
//! `labels.rs` (stamps, bucket labels, letters), `acc.rs` (the accumulator),
//! `finish.rs` (accumulator → report), `render.rs` (the report for people),
//! `decisions.rs` (the `--decisions` CSV), `rows/` (the rows and their order).

mod acc;
mod buckets;
mod decisions;
mod finish;
mod fleet_render;
mod labels;
mod model;
mod options;
mod render;
mod rows;
mod waits;

use std::io::Write;

pub use acc::ReportAcc;
pub use decisions::{DecisionsWriter, HEADER as DECISIONS_HEADER};
pub use labels::{agent_label, stamp, utc_ms_label};
pub use model::{
    BanRow, BanSummary, CandidateReport, ClassRow, ClassTotal, KeyRow, Load, LoggedFate,
    LoggedRefusals, ReplayReport, RetryAfter, RuleRow, TimeCell, TimeGap, TimeRow, TopRefused,
    ZoneRow,
};
pub use model::{FleetCandidate, FleetCounts, FleetPeak, FleetReport};
pub use options::{ReportContext, ReportOptions, auto_bucket};
pub use rows::{
    Fed, FedNames, InternalMarks, Needs, RowInput, RowMeta, RowStore, SpillOptions, Who,
};
pub use waits::{ClassWait, Factor, NamedWait, Wait, Waiting, factors};

use super::{Policy, Replay, Verdict};
#[cfg(test)]
use {crate::rate::Rate, labels::letter};

/// Where [`run`] sends each request's verdicts (the `--decisions` CSV).
pub trait DecisionSink {
    /// One request's verdicts, in candidate order.
    fn decided(
        &mut self,
        file: &str,
        meta: &RowMeta,
        req: &super::Request<'_>,
        policies: &[Policy],
        verdicts: &[Verdict],
    ) -> std::io::Result<()>;
}

impl<W: Write> DecisionSink for DecisionsWriter<W> {
    fn decided(
        &mut self,
        file: &str,
        meta: &RowMeta,
        req: &super::Request<'_>,
        policies: &[Policy],
        verdicts: &[Verdict],
    ) -> std::io::Result<()> {
        for (c, v) in verdicts.iter().enumerate() {
            self.write(file, meta, req, c, &policies[c], v)?;
        }
        self.next_request();
        Ok(())
    }
}

/// Replays `store` (sorted) through `replay` into `acc`, handing every request's
/// verdicts to `decisions` when given. `local` maps UTC ms to the report's wall clock;
/// it is asked once per 15 minutes of log (no time zone changes offset more often).
/// Fails if the decisions cannot be written or the store's runs on disk cannot be read.
pub fn run<'a>(
    store: &RowStore,
    replay: &'a mut Replay,
    acc: &'a mut ReportAcc,
    local: &'a dyn Fn(i64) -> i64,
    decisions: Option<&'a mut dyn DecisionSink>,
) -> std::io::Result<()> {
    Feed::new(replay, acc, local, decisions).rest(store)
}

/// Feeds rows in decision-time order through a [`Replay`] into a [`ReportAcc`] (and
/// the `--decisions` sink): as they are read ([`RowStore::take_before`], [`Fed::replay`] with
/// [`Feed::row`]), then the rest of the store ([`Feed::rest`]).
pub struct Feed<'a> {
    replay: &'a mut Replay,
    acc: &'a mut ReportAcc,
    local: &'a dyn Fn(i64) -> i64,
    decisions: Option<&'a mut dyn DecisionSink>,
    /// The current 15 minutes of log and the clock's offset in them.
    slot: (i64, i64),
}

impl<'a> Feed<'a> {
    /// A feed into `replay` and `acc`; see [`run`].
    pub fn new(
        replay: &'a mut Replay,
        acc: &'a mut ReportAcc,
        local: &'a dyn Fn(i64) -> i64,
        decisions: Option<&'a mut dyn DecisionSink>,
    ) -> Feed<'a> {
        Feed {
            replay,
            acc,
            local,
            decisions,
            slot: (i64::MIN, 0),
        }
    }

    /// Replays one row (rows come in decision-time order) of input `file`.
    #[inline]
    pub fn row(
        &mut self,
        file: &str,
        req: &super::Request<'_>,
        meta: &RowMeta,
    ) -> std::io::Result<()> {
        const SLOT: i64 = 15 * 60_000;
        let t = meta.arrival_ms;
        let s = t.div_euclid(SLOT);
        if s != self.slot.0 {
            self.slot = (s, (self.local)(s * SLOT) - s * SLOT);
        }
        // With --workers, a cost in server time charges the service time, not the
        // queueing the logged request time also holds.
        match self.acc.separate(meta) {
            Some(s) => self.replay.decide(&super::Request {
                request_time_us: Some(s),
                ..*req
            }),
            None => self.replay.decide(req),
        };
        // Read where the replay keeps them: no copy per row.
        let (verdicts, policies) = (self.replay.verdicts(), self.replay.policies());
        self.acc.add(meta, t + self.slot.1, verdicts);
        if verdicts
            .iter()
            .any(|v| v.decision == super::Decision::Refuse)
        {
            self.acc.note_retry(req, verdicts, policies);
        }
        if self.acc.watches_bans() {
            self.acc.note_bans(meta, verdicts, policies);
        }
        if let Some(w) = self.decisions.as_deref_mut() {
            w.decided(file, meta, req, policies, verdicts)?;
        }
        Ok(())
    }

    /// Replays the rows of `store` (sorted) not fed yet. Fails if the decisions cannot
    /// be written or the store's runs on disk cannot be read.
    pub fn rest(&mut self, store: &RowStore) -> std::io::Result<()> {
        store.for_each_sorted(|req, meta| self.row(store.file_name(meta.file), req, meta))
    }
}

#[cfg(test)]
mod tests;
