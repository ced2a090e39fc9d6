//! The watch report: requests, heavy requests and statuses per minute
//! ([`logscope_core::forensics::live::Minutes`]), the series under every frame of
//! `logscope watch` and the counts its alerts are evaluated on; for a backtest of the
//! share alerts, also each minute's requests per prefix and per User-Agent. No fast
//! path: every selected row is added with its time, heavy class and status.

use std::collections::{BTreeMap, HashMap};

use logscope_core::batch::Batch;
use logscope_core::classify::{ClientKey, Needs, RowClass};
use logscope_core::forensics::live::{Minutes, minute_of};

use crate::engine::clock::Clock;
use crate::engine::report::{NoPart, PartRows, Report};
use crate::engine::rows::RowStats;
use crate::engine::selection::Selection;
use crate::store::scan::Columns;

/// Requests per value, per minute (UTC ms).
pub type PerMinute<K> = BTreeMap<i64, HashMap<K, u64>>;

/// What [`Series`] gives.
pub struct SeriesOut {
    /// The counts per minute.
    pub minutes: Minutes,
    /// Requests per prefix per minute (when asked for).
    pub prefixes: Option<PerMinute<ClientKey>>,
    /// Requests per User-Agent per minute (when asked for).
    pub agents: Option<PerMinute<Box<str>>>,
}

/// Counts per minute of the last `keep` minutes before the latest row (`None`: all).
pub struct Series {
    minutes: Minutes,
    prefixes: Option<PerMinute<ClientKey>>,
    agents: Option<PerMinute<Box<str>>>,
}

impl Series {
    /// The last `keep` minutes up to the latest row's (`None`: every minute).
    pub fn new(keep: Option<u64>) -> Series {
        Series {
            minutes: Minutes::new(keep),
            prefixes: None,
            agents: None,
        }
    }

    /// Also counts each minute's requests per prefix and per User-Agent (for a
    /// backtest; memory: per minute, its distinct prefixes and agents).
    pub fn with_shares(mut self, prefixes: bool, agents: bool) -> Series {
        self.prefixes = prefixes.then(BTreeMap::new);
        self.agents = agents.then(BTreeMap::new);
        self
    }
}

impl Report for Series {
    type Part = NoPart;
    type Output = SeriesOut;

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
            agent: cols.agent || self.agents.is_some(),
            ..cols
        }
    }

    fn add_row(&mut self, b: &Batch, i: usize, rc: &RowClass, _clock: &Clock) {
        let status = b.status.get(i).copied().unwrap_or(0);
        let ts = b.ts_ms[i];
        self.minutes.add(ts, rc.heavy.is_heavy(), status);
        if let Some(p) = &mut self.prefixes {
            *p.entry(minute_of(ts))
                .or_default()
                .entry(rc.prefix)
                .or_default() += 1;
        }
        if let Some(a) = &mut self.agents {
            let agent = b.user_agent.get(i).unwrap_or("-");
            let m = a.entry(minute_of(ts)).or_default();
            match m.get_mut(agent) {
                Some(n) => *n += 1,
                None => {
                    m.insert(agent.into(), 1);
                }
            }
        }
    }

    fn add_part(&mut self, _: &Batch, part: NoPart, _: &mut PartRows<'_, '_>) {
        match part {}
    }

    fn finish(self, _sel: &Selection, _stats: &RowStats) -> SeriesOut {
        SeriesOut {
            minutes: self.minutes,
            prefixes: self.prefixes,
            agents: self.agents,
        }
    }
}
