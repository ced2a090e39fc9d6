//! The block report's passes over the rows: each row of the window is *to stop* (the
//! selection), *to keep* (identified users, verified crawlers, `--keep` networks, the
//! baseline's clients) or *other*; [`tally`] counts them per distinct client for the
//! search ([`logscope_core::forensics::block::plan`]), and [`confirm`] counts again with
//! the entries found as a filter.
//!
//! Not a [`Report`](crate::engine::report::Report): like `agents`, it reads every row of
//! the period, not only the selected ones.

use std::net::IpAddr;
use std::sync::Arc;

use ipnet::IpNet;
use logscope_core::batch::Batch;
use logscope_core::classify::{Identity, Needs, RowClass};
use logscope_core::forensics::block::{Network, Tally};
use logscope_core::forensics::crawlers::CrawlerRanges;
use logscope_core::forensics::netdb::NetworkDb;
use logscope_core::net::canonical;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::engine::rows::{RowSource, RowStats, columns_for};
use crate::engine::selection::Selection;

/// What must not be hurt.
#[derive(Default)]
pub struct Keep {
    /// Identified users' requests.
    pub identified: bool,
    /// Requests of crawlers from their published ranges.
    pub crawlers: Option<Arc<CrawlerRanges>>,
    /// Your own networks.
    pub nets: Vec<IpNet>,
    /// Clients seen in the baseline period.
    pub baseline: Option<FxHashSet<IpAddr>>,
    /// Per agent id: 0 not worked out, 1 no crawler, 2 + k crawler k.
    claims: Vec<u16>,
}

impl Keep {
    /// Keeps identified users' requests and those of the crawlers in `crawlers` from
    /// their ranges; add networks and the baseline's clients to the fields.
    pub fn new(crawlers: Option<Arc<CrawlerRanges>>) -> Keep {
        Keep {
            identified: true,
            crawlers,
            ..Keep::default()
        }
    }

    /// What is kept, named for the report.
    pub fn names(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.identified {
            v.push("identified users".to_string());
        }
        if self.crawlers.is_some() {
            v.push("verified crawlers".to_string());
        }
        if !self.nets.is_empty() {
            let n: Vec<String> = self.nets.iter().map(|n| n.to_string()).collect();
            v.push(format!("--keep {}", n.join(",")));
        }
        if let Some(b) = &self.baseline {
            v.push(format!("the baseline's {} clients", b.len()));
        }
        v
    }

    fn keeps(&mut self, rc: &RowClass, sel: &Selection) -> bool {
        if self.identified && rc.identity == Identity::Identified {
            return true;
        }
        let ip = rc.ip.map(canonical);
        if let Some(ranges) = &self.crawlers {
            let id = rc.agent as usize;
            if self.claims.len() <= id {
                self.claims.resize(id + 1, 0);
            }
            if self.claims[id] == 0 {
                let claim = ranges.claimed(&sel.classifier.agents.info(rc.agent).family);
                self.claims[id] = claim.map_or(1, |k| 2 + k as u16);
            }
            let c = self.claims[id];
            if c >= 2 && ranges.verified(usize::from(c - 2), ip) {
                return true;
            }
        }
        let Some(ip) = ip else { return false };
        self.nets.iter().any(|n| n.contains(&ip))
            || self.baseline.as_ref().is_some_and(|b| b.contains(&ip))
    }
}

/// Where a row goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Stop,
    Keep,
    Other,
}

/// Calls `each(batch, row, class, role)` for every row of `sel`'s period.
fn each_row(
    source: &RowSource,
    sel: &mut Selection,
    keep: &mut Keep,
    mut each: impl FnMut(&Batch, usize, &RowClass, Role),
) -> anyhow::Result<RowStats> {
    let needs = Needs {
        heavy: false,
        identity: keep.identified,
        agent: keep.crawlers.is_some(),
    };
    let cols = columns_for(needs, &sel.filter, &mut sel.classifier);
    sel.settle_heavy(source)?;
    let (since, until) = sel.period();
    source.for_each_batch(cols, since, until, |_, b| {
        let mut bc = sel.classifier.batch(b);
        for i in 0..b.len() {
            if !sel.filter.in_period(b.ts_ms[i]) {
                continue;
            }
            let rc = bc.classify(&mut sel.classifier, i);
            let role = if keep.keeps(&rc, sel) {
                Role::Keep
            } else if sel.filter.matches(b, i, &rc, &sel.classifier) {
                Role::Stop
            } else {
                Role::Other
            };
            each(b, i, &rc, role);
        }
        sel.classifier.end_batch(bc);
    })
}

/// The window's requests per distinct client address, the totals (clients without an
/// address included), and the requests to stop from clients without an address.
pub struct Tallies {
    /// Per client address, in address order.
    pub clients: Vec<(IpAddr, Tally)>,
    /// All the window's requests.
    pub totals: Tally,
    /// Requests to stop whose client is not an address.
    pub stop_without_address: u64,
}

/// Counts the window's rows per distinct client (memory: one tally per distinct client).
pub fn tally(
    source: &RowSource,
    sel: &mut Selection,
    keep: &mut Keep,
) -> anyhow::Result<(Tallies, RowStats)> {
    let mut per: FxHashMap<IpAddr, Tally> = FxHashMap::default();
    let mut totals = Tally::default();
    let mut stop_without_address = 0;
    let stats = each_row(source, sel, keep, |_, _, rc, role| {
        let bump = |t: &mut Tally| match role {
            Role::Stop => t.stop += 1,
            Role::Keep => t.keep += 1,
            Role::Other => t.other += 1,
        };
        bump(&mut totals);
        match rc.ip {
            Some(ip) => bump(per.entry(canonical(ip)).or_default()),
            None if role == Role::Stop => stop_without_address += 1,
            None => {}
        }
    })?;
    let mut clients: Vec<(IpAddr, Tally)> = per.into_iter().collect();
    clients.sort_unstable_by_key(|c| c.0);
    Ok((
        Tallies {
            clients,
            totals,
            stop_without_address,
        },
        stats,
    ))
}

/// The clients (addresses) with a request in `sel`'s period.
pub fn clients_of(source: &RowSource, sel: &mut Selection) -> anyhow::Result<FxHashSet<IpAddr>> {
    let mut set = FxHashSet::default();
    let cols = columns_for(Needs::NONE, &sel.filter, &mut sel.classifier);
    let (since, until) = sel.period();
    source.for_each_batch(cols, since, until, |_, b| {
        let mut bc = sel.classifier.batch(b);
        for i in 0..b.len() {
            if sel.filter.in_period(b.ts_ms[i])
                && let Some(ip) = bc.classify(&mut sel.classifier, i).ip
            {
                set.insert(canonical(ip));
            }
        }
        sel.classifier.end_batch(bc);
    })?;
    Ok(set)
}

/// The networks of a block as a filter: prefixes and autonomous systems (looked up in
/// `db`), each distinct address decided once.
pub struct BlockFilter {
    prefixes: Vec<IpNet>,
    asns: Vec<u32>,
    db: Option<Arc<NetworkDb>>,
    memo: FxHashMap<IpAddr, bool>,
}

impl BlockFilter {
    /// The filter of `networks`.
    pub fn new(networks: &[Network], db: Option<Arc<NetworkDb>>) -> BlockFilter {
        let mut f = BlockFilter {
            prefixes: Vec::new(),
            asns: Vec::new(),
            db,
            memo: FxHashMap::default(),
        };
        for n in networks {
            match n {
                Network::Prefix(p) => f.prefixes.push(*p),
                Network::As(a) => f.asns.push(*a),
            }
        }
        f
    }

    /// Whether the client at `ip` is blocked.
    pub fn blocks(&mut self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        if let Some(&b) = self.memo.get(&ip) {
            return b;
        }
        let b = self.prefixes.iter().any(|p| p.contains(&ip))
            || (!self.asns.is_empty()
                && self
                    .db
                    .as_ref()
                    .and_then(|db| db.autonomous_system(ip))
                    .is_some_and(|(n, _)| self.asns.contains(&n)));
        self.memo.insert(ip, b);
        b
    }
}

/// The window's requests the block stops or touches, counted row by row with the
/// block as a filter.
pub fn confirm(
    source: &RowSource,
    sel: &mut Selection,
    keep: &mut Keep,
    block: &mut BlockFilter,
) -> anyhow::Result<Tally> {
    let mut hit = Tally::default();
    each_row(source, sel, keep, |_, _, rc, role| {
        if rc.ip.is_some_and(|ip| block.blocks(ip)) {
            match role {
                Role::Stop => hit.stop += 1,
                Role::Keep => hit.keep += 1,
                Role::Other => hit.other += 1,
            }
        }
    })?;
    Ok(hit)
}
