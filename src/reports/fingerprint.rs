//! The fingerprint report, on the engine's report interface: each selected row added to
//! its group (a prefix, an autonomous system looked up once per distinct address, or an
//! agent class, merged into families at the end).

use std::net::IpAddr;
use std::sync::Arc;

use logscope_core::batch::Batch;
use logscope_core::classify::{AgentId, ClientKey, Needs, RowClass, static_files};
use logscope_core::forensics::fingerprint::{
    FingerprintAcc, FingerprintBy, FingerprintReport, Seen,
};
use logscope_core::forensics::netdb::NetworkDb;
use rustc_hash::FxHashMap;

use crate::engine::clock::Clock;
use crate::engine::report::{NoPart, PartRows, Report};
use crate::engine::rows::RowStats;
use crate::engine::selection::Selection;
use crate::store::scan::Columns;

/// A group: a network, an AS (0: none), an agent class.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Net(ClientKey),
    As(u32),
    Agent(AgentId),
}

/// `logscope fingerprint`: the `top` largest groups `by` prefix, AS or agent.
pub struct Fingerprint {
    acc: FingerprintAcc<Key>,
    by: FingerprintBy,
    db: Option<Arc<NetworkDb>>,
    asn: FxHashMap<IpAddr, u32>,
    requests: u64,
    top: usize,
}

impl Fingerprint {
    /// Grouped `by` (`Asn` needs `db`), the `top` largest listed.
    pub fn new(by: FingerprintBy, db: Option<Arc<NetworkDb>>, top: usize) -> Fingerprint {
        Fingerprint {
            acc: FingerprintAcc::default(),
            by,
            db,
            asn: FxHashMap::default(),
            requests: 0,
            top,
        }
    }
}

impl Report for Fingerprint {
    type Part = NoPart;
    type Output = FingerprintReport;

    fn needs(&self) -> Needs {
        Needs {
            heavy: true,
            identity: false,
            agent: self.by == FingerprintBy::Agent,
        }
    }

    fn columns(&self, cols: Columns, _sel: &Selection) -> Columns {
        Columns {
            path: true,
            query: true,
            line: false,
            ..cols
        }
    }

    fn add_row(&mut self, b: &Batch, i: usize, rc: &RowClass, _clock: &Clock) {
        self.requests += 1;
        let key = match self.by {
            FingerprintBy::Prefix => Key::Net(rc.prefix),
            FingerprintBy::Agent => Key::Agent(rc.agent),
            FingerprintBy::Asn => {
                let n = match rc.ip.map(logscope_core::net::canonical) {
                    Some(ip) => *self.asn.entry(ip).or_insert_with(|| {
                        self.db.as_ref().and_then(|d| d.asn_number(ip)).unwrap_or(0)
                    }),
                    None => 0,
                };
                Key::As(n)
            }
        };
        let path = b.path.get(i).unwrap_or("");
        let query = b.query.get(i).unwrap_or("");
        let uri = xxhash_rust::xxh3::xxh3_64(path.as_bytes())
            ^ xxhash_rust::xxh3::xxh3_64(query.as_bytes()).rotate_left(17);
        self.acc.add(
            key,
            rc.client,
            Seen {
                asset: static_files::is_static_path(path),
                heavy: rc.heavy.is_heavy(),
                status: b.status[i],
                uri,
            },
        );
    }

    fn add_part(&mut self, _: &Batch, part: NoPart, _: &mut PartRows<'_, '_>) {
        match part {}
    }

    fn finish(self, sel: &Selection, _stats: &RowStats) -> FingerprintReport {
        let cls = &sel.classifier;
        let db = self.db.clone();
        let mut names: FxHashMap<u32, String> = FxHashMap::default();
        // An AS's name: from any of its addresses seen.
        if let Some(db) = &db {
            for (ip, n) in &self.asn {
                if *n != 0 && !names.contains_key(n) {
                    let name = db.as_label(*ip).unwrap_or_else(|| format!("AS{n}"));
                    names.insert(*n, name);
                }
            }
        }
        let mut label = |k: Key| match k {
            Key::Net(c) => cls.key_label(c),
            Key::As(0) => "(no AS)".to_string(),
            Key::As(n) => names.get(&n).cloned().unwrap_or_else(|| format!("AS{n}")),
            Key::Agent(a) => cls.agents.info(a).family.clone(),
        };
        let groups = self.acc.finish(&mut label, self.top);
        FingerprintReport {
            selection: sel.describe(),
            by: self.by,
            requests: self.requests,
            groups,
        }
    }
}
