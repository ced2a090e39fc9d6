//! The diff report's side: one period's requests per network, autonomous system,
//! country, agent family, path class and status, on the engine's report interface
//! (each selected row added once; per distinct client, agent, class and status until
//! the end, where the labels are worked out once per distinct value).

use std::collections::BTreeMap;

use logscope_core::batch::Batch;
use logscope_core::classify::{ClientKey, Needs, RowClass, static_files};
use logscope_core::forensics::diff::Side;
use rustc_hash::FxHashMap;

use crate::engine::clock::Clock;
use crate::engine::report::{NoPart, PartRows, Report};
use crate::engine::rows::RowStats;
use crate::engine::selection::Selection;
use crate::store::scan::Columns;

/// One period of `logscope diff` (memory: a count per distinct client, prefix, agent,
/// path class and status).
#[derive(Default)]
pub struct DiffSide {
    clients: FxHashMap<ClientKey, (u64, Option<std::net::IpAddr>)>,
    prefixes: FxHashMap<ClientKey, u64>,
    agents: Vec<u64>,
    classes: Vec<u64>,
    statics: u64,
    pages: u64,
    statuses: BTreeMap<u16, u64>,
    total: u64,
}

impl Report for DiffSide {
    type Part = NoPart;
    type Output = Side;

    fn needs(&self) -> Needs {
        Needs {
            heavy: true,
            identity: false,
            agent: true,
        }
    }

    fn columns(&self, cols: Columns, _sel: &Selection) -> Columns {
        Columns { path: true, ..cols }
    }

    fn add_row(&mut self, b: &Batch, i: usize, rc: &RowClass, _clock: &Clock) {
        self.total += 1;
        let c = self.clients.entry(rc.client).or_insert((0, rc.ip));
        c.0 += 1;
        *self.prefixes.entry(rc.prefix).or_default() += 1;
        let a = rc.agent as usize;
        if self.agents.len() <= a {
            self.agents.resize(a + 1, 0);
        }
        self.agents[a] += 1;
        if rc.heavy.is_heavy() {
            let h = rc.heavy.0 as usize;
            if self.classes.len() <= h {
                self.classes.resize(h + 1, 0);
            }
            self.classes[h] += 1;
        } else if b.path.get(i).is_some_and(static_files::is_static_path) {
            self.statics += 1;
        } else {
            self.pages += 1;
        }
        *self.statuses.entry(b.status[i]).or_default() += 1;
    }

    fn add_part(&mut self, _: &Batch, part: NoPart, _: &mut PartRows<'_, '_>) {
        match part {}
    }

    fn finish(self, sel: &Selection, _stats: &RowStats) -> Side {
        let mut side = Side {
            total: self.total,
            ..Side::default()
        };
        let cls = &sel.classifier;
        let mut add = |axis: &'static str, v: String, n: u64| {
            *side.counts.entry(axis).or_default().entry(v).or_default() += n;
        };
        for (k, n) in &self.prefixes {
            add("network", cls.key_label(*k), *n);
        }
        if let Some(db) = &sel.networks {
            for (n, ip) in self.clients.values() {
                let ip = ip.map(logscope_core::net::canonical);
                let asn = ip.and_then(|ip| db.as_label(ip));
                add("asn", asn.unwrap_or_else(|| "unknown".into()), *n);
                let country = ip.and_then(|ip| db.country(ip));
                add("country", country.unwrap_or_else(|| "unknown".into()), *n);
            }
        }
        for (a, &n) in self.agents.iter().enumerate() {
            if n > 0 {
                add("agent", cls.agents.info(a as u32).family.clone(), n);
            }
        }
        for (h, &n) in self.classes.iter().enumerate() {
            if n > 0 {
                let name = cls
                    .heavy
                    .name(logscope_core::classify::HeavyClass(h as u16));
                add("path_class", format!("heavy: {name}"), n);
            }
        }
        if self.statics > 0 {
            add("path_class", "static".into(), self.statics);
        }
        if self.pages > 0 {
            add(
                "path_class",
                "page (not heavy, not static)".into(),
                self.pages,
            );
        }
        for (s, n) in &self.statuses {
            add("status", s.to_string(), *n);
        }
        side
    }
}
