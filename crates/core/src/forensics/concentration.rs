//! `logscope concentration`: how concentrated the selected requests are over networks —
//! top groups (prefixes, addresses or autonomous systems) with shares, how many groups
//! make 50% and 90%, HHI and Gini — and what a per-group limit of N per window would
//! have touched.

use std::cmp::Ordering;
use std::fmt::Write as _;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use super::asn::AsnInfo;
use super::doc::{Doc, Figure, Section};
use super::hosting::{HostingAsns, NetworkClass};
use super::netdb::NetworkDb;
use super::{duration_label, gini, groups_for_share, hhi};
use crate::batch::{Batch, IpCodes, NULL_CODE};
use crate::chart::{self, Bar, Bars, Lorenz};
use crate::classify::{AgentId, Classifier, ClientKey, RowClass};
use crate::number::{pct1, share, thousands};
use crate::rate::Rate;
use crate::table::{Align, Cell, Table, bar};
use std::sync::Arc;

/// What requests are grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    /// Client address.
    Ip,
    /// Network prefix (/24, /48 by default).
    Prefix,
    /// Autonomous system (needs an ASN database).
    Asn,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Group {
    Key(ClientKey),
    As(u32),
    NoAs,
}

/// The counts of one batch's rows, worked out on the thread that decoded the batch:
/// one entry per distinct (address, User-Agent slot) — and (group, window) under a
/// per-group limit — instead of one update of the report's large maps per row. Rows
/// without an address (host names) are left to the caller ([`ConcentrationPart::rest`]),
/// which classifies them as any row. Valid for a selection that keeps every row of its
/// period and takes the client from the logged address (no trusted proxies).
#[derive(Debug, Default)]
pub struct ConcentrationPart {
    pairs: Vec<(ClientKey, u32, u64)>,
    windows: Vec<(ClientKey, i64, u32)>,
    /// Rows in the period without an address, for the caller.
    pub rest: Vec<u32>,
}

impl ConcentrationPart {
    /// Counts the rows of `b` with `since <= ts < until` (ms, either end open), grouped
    /// `by` with `v4_len`/`v6_len` prefixes under an optional per-group `limit`.
    pub fn of(
        b: &Batch,
        by: GroupBy,
        limit: Option<Rate>,
        (v4_len, v6_len): (u8, u8),
        (since, until): (Option<i64>, Option<i64>),
    ) -> ConcentrationPart {
        let mut pairs: FxHashMap<(ClientKey, u32), u64> = FxHashMap::default();
        let mut windows: FxHashMap<(ClientKey, i64), u32> = FxHashMap::default();
        let mut rest = Vec::new();
        let window_ms = limit.map(|l| l.window_ms() as i64);
        if let Some(codes) = &b.ip_codes
            && codes.codes.len() == b.len()
        {
            return Self::of_codes(b, codes, by, window_ms, (v4_len, v6_len), (since, until));
        }
        for i in 0..b.len() {
            let ts = b.ts_ms[i];
            if since.is_some_and(|s| ts < s) || until.is_some_and(|u| ts >= u) {
                continue;
            }
            let Some(ip) = b.ip[i] else {
                rest.push(i as u32);
                continue;
            };
            let client = ClientKey::addr(ip);
            let slot = b.user_agent.code(i).unwrap_or(NULL_CODE);
            *pairs.entry((client, slot)).or_default() += 1;
            if let Some(wm) = window_ms {
                let k = if by == GroupBy::Prefix {
                    ClientKey::prefix(ip, v4_len, v6_len)
                } else {
                    client
                };
                *windows.entry((k, ts.div_euclid(wm))).or_default() += 1;
            }
        }
        ConcentrationPart {
            pairs: pairs.into_iter().map(|((c, s), n)| (c, s, n)).collect(),
            windows: windows.into_iter().map(|((k, w), n)| (k, w, n)).collect(),
            rest,
        }
    }
}

impl ConcentrationPart {
    /// [`ConcentrationPart::of`] for a batch whose addresses are coded
    /// ([`Batch::ip_codes`]): an address's key worked out once per code, and its rows
    /// counted in an array while they keep one User-Agent slot (a client's rows nearly
    /// always do), instead of a hash-map update per row.
    fn of_codes(
        b: &Batch,
        codes: &IpCodes,
        by: GroupBy,
        window_ms: Option<i64>,
        (v4_len, v6_len): (u8, u8),
        (since, until): (Option<i64>, Option<i64>),
    ) -> ConcentrationPart {
        const NONE: u32 = u32::MAX;
        // Per code: its pair now counting (an index of `keys`/`counts`), or NONE. Codes
        // past `slots` (NO_CODE) have none: those rows are looked up one by one.
        let mut current = vec![NONE; codes.slots];
        let mut keys: Vec<(ClientKey, u32)> = Vec::with_capacity(codes.slots);
        let mut counts: Vec<u64> = Vec::with_capacity(codes.slots);
        // The pairs of the rows without a code, by (client, slot).
        let mut index: FxHashMap<(ClientKey, u32), u32> = FxHashMap::default();
        let mut windows: FxHashMap<(ClientKey, i64), u32> = FxHashMap::default();
        // Rows the codes do not cover (none, as the reader sets them): the caller's.
        let mut rest = Vec::new();
        for (i, &code) in codes.codes.iter().enumerate() {
            let ts = b.ts_ms[i];
            if since.is_some_and(|s| ts < s) || until.is_some_and(|u| ts >= u) {
                continue;
            }
            let slot = b.user_agent.code(i).unwrap_or(NULL_CODE);
            // The index of the pair (client, slot), given one if new.
            fn pair(
                index: &mut FxHashMap<(ClientKey, u32), u32>,
                keys: &mut Vec<(ClientKey, u32)>,
                counts: &mut Vec<u64>,
                client: ClientKey,
                slot: u32,
            ) -> u32 {
                *index.entry((client, slot)).or_insert_with(|| {
                    keys.push((client, slot));
                    counts.push(0);
                    (keys.len() - 1) as u32
                })
            }
            let k = match current.get_mut(code as usize) {
                // A coded address still with the slot of its last row: no look-up.
                Some(cur) if *cur != NONE && keys[*cur as usize].1 == slot => *cur,
                Some(cur) => {
                    let client = match *cur {
                        NONE => match b.ip[i] {
                            Some(ip) => ClientKey::addr(ip),
                            None => {
                                rest.push(i as u32);
                                continue;
                            }
                        },
                        k => keys[k as usize].0,
                    };
                    // A new entry even if this client had this slot before (it went
                    // back to an earlier User-Agent): the caller adds entries up, and
                    // a client's rows nearly always keep one.
                    keys.push((client, slot));
                    counts.push(0);
                    *cur = (keys.len() - 1) as u32;
                    *cur
                }
                // Not coded (NO_CODE): the row's own address.
                None => match b.ip[i] {
                    Some(ip) => pair(
                        &mut index,
                        &mut keys,
                        &mut counts,
                        ClientKey::addr(ip),
                        slot,
                    ),
                    None => {
                        rest.push(i as u32);
                        continue;
                    }
                },
            };
            counts[k as usize] += 1;
            if let Some(wm) = window_ms {
                let client = keys[k as usize].0;
                let g = match (by, client.ip()) {
                    (GroupBy::Prefix, Some(ip)) => ClientKey::prefix(ip, v4_len, v6_len),
                    _ => client,
                };
                *windows.entry((g, ts.div_euclid(wm))).or_default() += 1;
            }
        }
        ConcentrationPart {
            pairs: keys
                .into_iter()
                .zip(counts)
                .map(|((c, s), n)| (c, s, n))
                .collect(),
            windows: windows.into_iter().map(|((k, w), n)| (k, w, n)).collect(),
            rest,
        }
    }
}

/// Accumulates `logscope concentration`.
pub struct ConcentrationAcc {
    by: GroupBy,
    limit: Option<Rate>,
    pairs: FxHashMap<(ClientKey, AgentId), u64>,
    windows: FxHashMap<(ClientKey, i64), u32>,
    requests: u64,
    hosting: Option<Arc<HostingAsns>>,
}

fn cut(k: ClientKey, v4: u8, v6: u8) -> ClientKey {
    match k.ip() {
        Some(ip) => ClientKey::prefix(ip, v4, v6),
        None => k,
    }
}

impl ConcentrationAcc {
    /// Grouped `by`, with an optional per-group limit to evaluate.
    pub fn new(by: GroupBy, limit: Option<Rate>) -> ConcentrationAcc {
        ConcentrationAcc {
            by,
            limit,
            pairs: FxHashMap::default(),
            windows: FxHashMap::default(),
            hosting: None,
            requests: 0,
        }
    }

    /// Adds one selected row that arrived at `utc_ms`.
    #[inline]
    pub fn add(&mut self, utc_ms: i64, rc: &RowClass) {
        self.requests += 1;
        *self.pairs.entry((rc.client, rc.agent)).or_default() += 1;
        if let Some(l) = self.limit {
            let k = if self.by == GroupBy::Prefix {
                rc.prefix
            } else {
                rc.client
            };
            *self
                .windows
                .entry((k, utc_ms.div_euclid(l.window_ms() as i64)))
                .or_default() += 1;
        }
    }

    /// Adds the rows counted in `part` (see [`ConcentrationPart`]); `agent_of` gives the
    /// agent class of a User-Agent slot of the part's batch ([`NULL_CODE`]: none).
    pub fn add_part(&mut self, part: &ConcentrationPart, mut agent_of: impl FnMut(u32) -> AgentId) {
        for &(client, slot, n) in &part.pairs {
            self.requests += n;
            *self.pairs.entry((client, agent_of(slot))).or_default() += n;
        }
        for &(k, w, n) in &part.windows {
            *self.windows.entry((k, w)).or_default() += n;
        }
    }

    /// Also splits the requests by network class (hosting or other, from `hosting`;
    /// the AS of each address from the database given to [`ConcentrationAcc::finish`]).
    pub fn with_hosting(mut self, hosting: Arc<HostingAsns>) -> ConcentrationAcc {
        self.hosting = Some(hosting);
        self
    }

    /// The result with the `top` largest groups listed. `asn` is needed for
    /// [`GroupBy::Asn`] and adds an AS column otherwise.
    pub fn finish(
        self,
        cls: &Classifier,
        asn: Option<&NetworkDb>,
        top: usize,
        selection: &str,
        origin: &str,
    ) -> ConcentrationReport {
        let (v4, v6) = (cls.v4_len, cls.v6_len);
        let by = self.by;
        let group_of = |k: ClientKey| -> Group {
            match by {
                GroupBy::Ip => Group::Key(k),
                GroupBy::Prefix => Group::Key(cut(k, v4, v6)),
                GroupBy::Asn => match k.ip().and_then(|ip| asn.and_then(|db| db.as_info(ip))) {
                    Some(a) => Group::As(a.asn),
                    None => Group::NoAs,
                },
            }
        };
        // The (address, agent) pairs in address order: each address's pairs are next to
        // each other, so distinct addresses are counted per group without a set per group
        // (a million groups of one address each would cost a small table each), and the
        // address's group is worked out once.
        let mut pairs: Vec<(ClientKey, AgentId, u64)> = self
            .pairs
            .into_iter()
            .map(|((c, a), n)| (c, a, n))
            .collect();
        pairs.sort_unstable_by_key(|p| (p.0, p.1));
        /// A group's requests and distinct addresses.
        struct Acc {
            requests: u64,
            clients: u64,
        }
        let network_classes = match (&self.hosting, asn) {
            (Some(h), Some(db)) => class_rows(&pairs, h, db, self.requests),
            _ => Vec::new(),
        };
        let mut groups: FxHashMap<Group, Acc> = FxHashMap::default();
        let mut distinct_ips = 0u64;
        let mut name_requests = 0u64;
        let runs = || pairs.chunk_by(|x, y| x.0 == y.0);
        for run in runs() {
            let client = run[0].0;
            let n: u64 = run.iter().map(|p| p.2).sum();
            let a = groups.entry(group_of(client)).or_insert(Acc {
                requests: 0,
                clients: 0,
            });
            a.requests += n;
            a.clients += 1;
            distinct_ips += 1;
            if matches!(client, ClientKey::Name(_)) {
                name_requests += n;
            }
        }
        let gcmp = |a: &Group, b: &Group| -> Ordering {
            match (a, b) {
                (Group::Key(x), Group::Key(y)) => cls.key_cmp(*x, *y),
                (Group::As(x), Group::As(y)) => x.cmp(y),
                (Group::As(_), Group::NoAs) => Ordering::Less,
                (Group::NoAs, Group::As(_)) => Ordering::Greater,
                _ => Ordering::Equal,
            }
        };
        let mut sorted: Vec<(&Group, &Acc)> = groups.iter().collect();
        sorted.sort_by(|a, b| b.1.requests.cmp(&a.1.requests).then_with(|| gcmp(a.0, b.0)));
        let counts: Vec<u64> = sorted.iter().map(|(_, a)| a.requests).collect();
        let total = self.requests;
        let label = |g: &Group| -> String {
            match g {
                Group::Key(k) => cls.key_label(*k),
                Group::As(n) => format!("AS{n}"),
                Group::NoAs => "(no AS)".into(),
            }
        };
        // The listed groups' agents (and, per AS, its first address's AS record): a second
        // pass over the pairs for those groups alone.
        let listed: FxHashMap<Group, usize> = sorted
            .iter()
            .take(top)
            .enumerate()
            .map(|(i, (g, _))| (**g, i))
            .collect();
        let mut agents: Vec<FxHashMap<AgentId, u64>> = vec![FxHashMap::default(); listed.len()];
        let mut as_infos: Vec<Option<crate::forensics::asn::AsnInfo>> = vec![None; listed.len()];
        if !listed.is_empty() {
            for run in runs() {
                let client = run[0].0;
                let g = group_of(client);
                let Some(&i) = listed.get(&g) else { continue };
                for &(_, agent, n) in run {
                    *agents[i].entry(agent).or_default() += n;
                }
                if let (Group::As(n), Some(db), None) = (g, asn, &as_infos[i]) {
                    as_infos[i] = client
                        .ip()
                        .and_then(|ip| db.as_info(ip))
                        .filter(|x| x.asn == n);
                }
            }
        }
        let mut cum = 0u64;
        let mut rows = Vec::new();
        for (i, (g, a)) in sorted.iter().take(top).enumerate() {
            cum += a.requests;
            let mut best: Option<(AgentId, u64)> = None;
            for (&id, &c) in &agents[i] {
                let better = match best {
                    None => true,
                    Some((bid, bc)) => {
                        c > bc
                            || (c == bc
                                && (cls.agents.info(id).label.as_str(), id)
                                    < (cls.agents.info(bid).label.as_str(), bid))
                    }
                };
                if better {
                    best = Some((id, c));
                }
            }
            let as_info = match (g, asn) {
                (Group::As(_), Some(_)) => as_infos[i].take(),
                (Group::Key(k), Some(db)) => k.ip().and_then(|ip| db.as_info(ip)),
                _ => None,
            };
            rows.push(GroupRow {
                rank: i as u64 + 1,
                group: label(g),
                requests: a.requests,
                share: share(a.requests, total),
                cumulative_share: share(cum, total),
                distinct_ips: a.clients,
                agent: best.map(|(id, _)| cls.agents.info(id).label.clone()),
                agent_share: best.map_or(0.0, |(_, c)| share(c, a.requests)),
                asn: as_info,
            });
        }
        let limit = self.limit.map(|l| {
            // Window counts per group (ASN: summed from the per-address windows).
            let mut per_group: FxHashMap<(Group, i64), u64> = FxHashMap::default();
            for (&(k, w), &c) in &self.windows {
                let g = match by {
                    GroupBy::Asn => group_of(k),
                    _ => Group::Key(k),
                };
                *per_group.entry((g, w)).or_default() += u64::from(c);
            }
            let mut over: FxHashSet<Group> = FxHashSet::default();
            let mut refused = 0u64;
            for (&(g, _), &c) in &per_group {
                if c > l.count() {
                    over.insert(g);
                    refused += c - l.count();
                }
            }
            let from_over: u64 = over
                .iter()
                .filter_map(|g| groups.get(g))
                .map(|a| a.requests)
                .sum();
            LimitEffect {
                limit: format!("{}/{}", l.count(), duration_label(l.window_ms() as i64)),
                groups_over: over.len() as u64,
                requests_from_groups_over: from_over,
                share_from_groups_over: share(from_over, total),
                requests_over_limit: refused,
                share_over_limit: share(refused, total),
            }
        });
        ConcentrationReport {
            origin: origin.to_string(),
            selection: selection.to_string(),
            by: self.by,
            prefix_v4: v4,
            prefix_v6: v6,
            requests: total,
            distinct_ips,
            groups: groups.len() as u64,
            top_share: share(counts.first().copied().unwrap_or(0), total),
            groups_for_50: groups_for_share(&counts, 0.5),
            groups_for_90: groups_for_share(&counts, 0.9),
            hhi: hhi(&counts),
            gini: gini(&counts),
            requests_from_host_names: name_requests,
            top: rows,
            limit,
            curve: crate::chart::lorenz_points(&counts),
            network_classes,
        }
    }
}

/// The requests per network class of the (address, agent, requests) `pairs` in address
/// order: each address's AS looked up once.
fn class_rows(
    pairs: &[(ClientKey, AgentId, u64)],
    hosting: &HostingAsns,
    db: &NetworkDb,
    total: u64,
) -> Vec<ClassRow> {
    let mut per: std::collections::BTreeMap<
        NetworkClass,
        (u64, u64, std::collections::BTreeSet<u32>),
    > = Default::default();
    for run in pairs.chunk_by(|x, y| x.0 == y.0) {
        let n: u64 = run.iter().map(|p| p.2).sum();
        let asn = run[0]
            .0
            .ip()
            .and_then(|ip| db.autonomous_system(ip))
            .map(|a| a.0);
        let e = per.entry(hosting.class(asn)).or_default();
        e.0 += n;
        e.1 += 1;
        if let Some(a) = asn {
            e.2.insert(a);
        }
    }
    per.into_iter()
        .map(|(class, (requests, clients, asns))| ClassRow {
            class,
            requests,
            share: share(requests, total),
            clients,
            asns: asns.len() as u64,
        })
        .collect()
}

/// The selection's requests from one network class.
#[derive(Clone, Debug, Serialize)]
pub struct ClassRow {
    /// `hosting`, `other` or `unknown`.
    pub class: NetworkClass,
    /// Requests.
    pub requests: u64,
    /// Share of the selection (0–1).
    pub share: f64,
    /// Distinct addresses.
    pub clients: u64,
    /// Distinct autonomous systems.
    pub asns: u64,
}

/// One sentence on the classes: "82.4% of the requests came from other networks
/// (residential-looking), 14.0% from 3 hosting ASNs".
pub fn class_sentence(rows: &[ClassRow]) -> Option<String> {
    if rows.is_empty() {
        return None;
    }
    let part = |r: &ClassRow| match r.class {
        NetworkClass::Hosting => format!(
            "{:.1}% from {} hosting {}",
            r.share * 100.0,
            r.asns,
            if r.asns == 1 { "AS" } else { "ASNs" }
        ),
        NetworkClass::Other => format!(
            "{:.1}% from other networks (residential-looking: {} {})",
            r.share * 100.0,
            r.asns,
            if r.asns == 1 { "AS" } else { "ASNs" }
        ),
        NetworkClass::Unknown => format!(
            "{:.1}% from addresses the database does not place",
            r.share * 100.0
        ),
    };
    let mut sorted: Vec<&ClassRow> = rows.iter().collect();
    sorted.sort_by(|a, b| b.requests.cmp(&a.requests).then(a.class.cmp(&b.class)));
    let parts: Vec<String> = sorted.iter().map(|r| part(r)).collect();
    Some(format!("By network class: {}.", parts.join(", ")))
}

/// One group in the top list.
#[derive(Clone, Debug, Serialize)]
pub struct GroupRow {
    /// 1-based rank.
    pub rank: u64,
    /// The prefix, address, `AS123` or a host name.
    pub group: String,
    /// Requests.
    pub requests: u64,
    /// Share of the selection (0–1).
    pub share: f64,
    /// Share of this group and all larger ones (0–1).
    pub cumulative_share: f64,
    /// Distinct client addresses inside.
    pub distinct_ips: u64,
    /// The agent class with most requests.
    pub agent: Option<String>,
    /// Its share of the group's requests (0–1).
    pub agent_share: f64,
    /// The AS (with an ASN database).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asn: Option<AsnInfo>,
}

/// What a per-group limit would have touched.
#[derive(Clone, Debug, Serialize)]
pub struct LimitEffect {
    /// The limit (`100/1h`).
    pub limit: String,
    /// Groups that went over it in at least one window.
    pub groups_over: u64,
    /// All requests of those groups.
    pub requests_from_groups_over: u64,
    /// Their share of the selection (0–1).
    pub share_from_groups_over: f64,
    /// Requests beyond the limit in their windows: what a fixed-window limiter refuses.
    pub requests_over_limit: u64,
    /// Their share of the selection (0–1).
    pub share_over_limit: f64,
}

/// The result of `logscope concentration`.
#[derive(Clone, Debug, Serialize)]
pub struct ConcentrationReport {
    /// Where the rows came from.
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub origin: String,
    /// The filter, described.
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub selection: String,
    /// Grouping.
    pub by: GroupBy,
    /// IPv4 prefix length.
    pub prefix_v4: u8,
    /// IPv6 prefix length.
    pub prefix_v6: u8,
    /// Selected requests.
    pub requests: u64,
    /// Distinct clients.
    pub distinct_ips: u64,
    /// Distinct groups.
    pub groups: u64,
    /// Share of the largest group (0–1).
    pub top_share: f64,
    /// Fewest groups that make 50% of requests.
    pub groups_for_50: u64,
    /// Fewest groups that make 90% of requests.
    pub groups_for_90: u64,
    /// Herfindahl–Hirschman index of group shares (0–1).
    pub hhi: f64,
    /// Gini coefficient of group sizes (0–1).
    pub gini: f64,
    /// Requests from clients logged as host names, not addresses (each its own group).
    pub requests_from_host_names: u64,
    /// The largest groups.
    pub top: Vec<GroupRow>,
    /// `--per-prefix-limit`.
    pub limit: Option<LimitEffect>,
    /// Requests per network class (with `--hosting-asns` and `--asn-db`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub network_classes: Vec<ClassRow>,
    /// The cumulative share curve over every group, largest first
    /// ([`crate::chart::lorenz_points`]), for the chart.
    #[serde(skip)]
    pub curve: Vec<(f64, f64)>,
}

impl ConcentrationReport {
    fn unit(&self) -> String {
        match self.by {
            GroupBy::Ip => "addresses".into(),
            GroupBy::Prefix => format!("/{} prefixes", self.prefix_v4),
            GroupBy::Asn => "autonomous systems".into(),
        }
    }

    /// The report for people.
    pub fn doc(&self) -> Doc {
        let unit = self.unit();
        let mut lines = vec![
            format!("source: {}", self.origin),
            format!("selection: {}", self.selection),
            format!(
                "{} requests from {} addresses in {} {unit}{}",
                thousands(self.requests),
                thousands(self.distinct_ips),
                thousands(self.groups),
                if self.by == GroupBy::Prefix {
                    format!(" (/{} for IPv6)", self.prefix_v6)
                } else {
                    String::new()
                }
            ),
        ];
        if let Some(t) = self.top.first() {
            lines.push(format!(
                "largest: {} with {} ({}); 50% of requests come from {} {unit}, 90% from {}",
                t.group,
                thousands(t.requests),
                pct1(t.requests, self.requests),
                thousands(self.groups_for_50),
                thousands(self.groups_for_90)
            ));
        }
        lines.push(format!(
            "HHI {:.4} ({:.0} on the 0–10,000 scale; 1/n for n equal groups), Gini {:.3}",
            self.hhi,
            self.hhi * 10_000.0,
            self.gini
        ));
        if let Some(c) = class_sentence(&self.network_classes) {
            lines.push(c);
        }
        if self.requests_from_host_names > 0 {
            lines.push(format!(
                "{} requests come from clients logged as host names; each name is its own group",
                thousands(self.requests_from_host_names)
            ));
        }
        let has_as = self.top.iter().any(|r| r.asn.is_some()) && self.by != GroupBy::Asn;
        let group_head = match self.by {
            GroupBy::Ip => "address".to_string(),
            GroupBy::Prefix => "prefix".to_string(),
            GroupBy::Asn => "AS".to_string(),
        };
        let mut cols = vec![
            ("#", Align::Right),
            (group_head.as_str(), Align::Left),
            ("requests", Align::Right),
            ("share", Align::Right),
            ("cum.", Align::Right),
            ("IPs", Align::Right),
            ("agent", Align::Left),
        ];
        if has_as {
            cols.push(("AS", Align::Right));
        }
        if self.by == GroupBy::Asn {
            cols.push(("name", Align::Left));
        }
        let mut csv_cols = vec![
            "rank",
            match self.by {
                GroupBy::Ip => "address",
                GroupBy::Prefix => "prefix",
                GroupBy::Asn => "as",
            },
            "requests",
            "share",
            "cumulative_share",
            "ips",
            "agent",
        ];
        if has_as {
            csv_cols.push("asn");
        }
        if self.by == GroupBy::Asn {
            csv_cols.push("name");
        }
        let mut t = Table::new(&cols).with_csv_headers(&csv_cols);
        for r in &self.top {
            let mut row = vec![
                Cell::from(r.rank.to_string()),
                Cell::from(r.group.clone()),
                Cell::count(r.requests),
                Cell::fraction(r.share, format!("{:.1}%", r.share * 100.0)),
                Cell::fraction(
                    r.cumulative_share,
                    format!("{:.1}%", r.cumulative_share * 100.0),
                ),
                Cell::count(r.distinct_ips),
                Cell::from(r.agent.clone().unwrap_or_default()),
            ];
            if has_as {
                row.push(Cell::from(
                    r.asn.as_ref().map_or(String::new(), |a| a.asn.to_string()),
                ));
            }
            if self.by == GroupBy::Asn {
                row.push(Cell::from(
                    r.asn.as_ref().map_or(String::new(), |a| a.name.clone()),
                ));
            }
            t.row(row);
        }
        let mut notes = Vec::new();
        if let Some(l) = &self.limit {
            let (n, w) = l.limit.split_once('/').unwrap_or((&l.limit, ""));
            let per = match self.by {
                GroupBy::Ip => "address",
                GroupBy::Prefix => "prefix",
                GroupBy::Asn => "AS",
            };
            notes.push(format!(
                "A limit of {n} per {per} per {w} (fixed windows): {} {unit} went over it in some window; they sent {} of the requests ({}); the limit would have refused {} ({}).",
                thousands(l.groups_over),
                thousands(l.requests_from_groups_over),
                pct1(l.requests_from_groups_over, self.requests),
                thousands(l.requests_over_limit),
                pct1(l.requests_over_limit, self.requests),
            ));
        }
        Doc {
            title: format!(
                "Concentration by {}",
                match self.by {
                    GroupBy::Ip => "address".to_string(),
                    GroupBy::Prefix => format!("/{} prefix", self.prefix_v4),
                    GroupBy::Asn => "autonomous system".to_string(),
                }
            ),
            lines,
            sections: vec![Section {
                title: Some(format!("Top {} {unit}", self.top.len())),
                table: Some(t),
                notes,
            }],
            csv_section: 0,
            csv: None,
            figure: None,
            figures: self.figures(),
        }
    }

    /// The charts: the cumulative share curve (share of requests vs share of groups,
    /// largest first) and bars of the largest groups (at most 20).
    pub fn figures(&self) -> Vec<Figure> {
        if self.curve.is_empty() {
            return Vec::new();
        }
        let unit = self.unit();
        let at = |f: f64| {
            // The curve's share of requests at share `f` of the groups (linear between samples).
            let i = self.curve.partition_point(|p| p.0 < f);
            match (self.curve.get(i.wrapping_sub(1)), self.curve.get(i)) {
                (_, Some(b)) if b.0 == f => b.1,
                (Some(a), Some(b)) => a.1 + (b.1 - a.1) * (f - a.0) / (b.0 - a.0),
                (_, Some(b)) => b.1,
                (Some(a), None) => a.1,
                (None, None) => 0.0,
            }
        };
        let mut notes = vec![
            format!(
                "50% of requests: {} of {}",
                thousands(self.groups_for_50),
                thousands(self.groups)
            ),
            format!(
                "90% of requests: {} of {}",
                thousands(self.groups_for_90),
                thousands(self.groups)
            ),
        ];
        let mut text = format!("share of {unit} (largest first) → share of requests\n");
        for f in [0.01, 0.1, 0.25, 0.5, 1.0] {
            let v = at(f);
            let _ = writeln!(
                text,
                "{:>5}  {:>6.1}%  {}",
                format!("{}%", (f * 100.0) as u32),
                v * 100.0,
                bar(v, 1.0, 40)
            );
        }
        let _ = write!(text, "{}; {} ({unit}, largest first)", notes[0], notes[1]);
        notes.push(format!("Gini {:.3}, HHI {:.4}", self.gini, self.hhi));
        let title = format!("Cumulative share of requests over {unit}");
        let mut out = vec![Figure::new(
            title.clone(),
            chart::lorenz(&Lorenz {
                title,
                x_label: format!("share of {unit}, largest first"),
                y_label: "share of requests".into(),
                counts: Vec::new(),
                points: self.curve.clone(),
                notes,
            }),
            Some(text),
        )];
        if !self.top.is_empty() {
            let n = self.top.len().min(20);
            let title = format!("Top {n} {unit} by requests");
            out.push(Figure::new(
                title.clone(),
                chart::bars(&Bars {
                    title,
                    bars: self
                        .top
                        .iter()
                        .take(n)
                        .map(|r| Bar {
                            label: r.group.clone(),
                            value: r.requests as f64,
                            text: format!("{} ({:.1}%)", thousands(r.requests), r.share * 100.0),
                        })
                        .collect(),
                }),
                None,
            ));
        }
        out
    }
}

impl crate::forensics::doc::Document for ConcentrationReport {
    fn doc(&self, width: usize) -> Doc {
        let _ = width;
        ConcentrationReport::doc(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::Batch;
    use crate::record::Record;
    use proptest::prelude::*;

    fn run(ips: &[(&str, i64)], by: GroupBy, limit: Option<Rate>) -> ConcentrationReport {
        let mut b = Batch::default();
        for (n, (ip, t)) in ips.iter().enumerate() {
            b.push(
                &Record {
                    ts_ms: *t,
                    client: ip.as_bytes(),
                    ip: ip.parse().ok(),
                    ..Record::default()
                },
                n as u64,
            );
        }
        let mut cls = Classifier::default();
        let mut acc = ConcentrationAcc::new(by, limit);
        for i in 0..b.len() {
            let rc = cls.classify(&b, i);
            acc.add(b.ts_ms[i], &rc);
        }
        acc.finish(&cls, None, 10, "all", "test")
    }

    #[test]
    fn prefixes_shares_limit() {
        let rows = [
            ("1.1.1.1", 0),
            ("1.1.1.2", 0),
            ("1.1.1.2", 10),
            ("2.2.2.2", 0),
            ("2.2.2.2", 3_600_000),
            ("3.3.3.3", 0),
            ("nasa.example", 0),
        ];
        let r = run(
            &rows,
            GroupBy::Prefix,
            Some(Rate::new(2, 3_600_000).unwrap()),
        );
        assert_eq!((r.requests, r.groups, r.distinct_ips), (7, 4, 5));
        assert_eq!(r.top[0].group, "1.1.1.0/24");
        assert_eq!(r.top[0].distinct_ips, 2);
        assert_eq!(r.top[1].group, "2.2.2.0/24");
        assert_eq!(
            r.top[2].group, "3.3.3.0/24",
            "ties: IPv4 numerically, names last"
        );
        assert_eq!(r.top[3].group, "nasa.example");
        assert_eq!(r.groups_for_50, 2);
        assert_eq!(r.requests_from_host_names, 1);
        let l = r.limit.unwrap();
        assert_eq!(
            (
                l.groups_over,
                l.requests_from_groups_over,
                l.requests_over_limit
            ),
            (1, 3, 1)
        );
        let by_ip = run(&rows, GroupBy::Ip, None);
        assert_eq!(by_ip.top[0].group, "1.1.1.2");
        assert_eq!(by_ip.groups, 5);
        let d = r_doc_text(&rows);
        assert!(d.lines().all(|l| l.chars().count() <= 80), "{d}");
    }

    fn r_doc_text(rows: &[(&str, i64)]) -> String {
        run(rows, GroupBy::Prefix, Some(Rate::new(1, 600_000).unwrap()))
            .doc()
            .to_text(80, false)
    }

    proptest! {
        /// Counting a batch where it is decoded ([`ConcentrationPart`], names left to the
        /// caller) gives the report of counting it row by row, byte for byte; so does
        /// counting per address code ([`Batch::ip_codes`], as the dataset reader sets
        /// them where every row has an address).
        #[test]
        fn parts_give_the_row_by_row_report(
            rows in prop::collection::vec((0u8..6, 0u8..5, 0u8..3, 0i64..7_200_000), 1..200),
            by_ip in any::<bool>(),
            coded in any::<bool>(),
            ip_codes in any::<bool>(),
            period in prop::option::of((0i64..3_600_000, 3_600_000i64..7_200_001)),
        ) {
            let agents = [None, Some("curl/8.0"), Some("Mozilla/5.0 (compatible; Googlebot/2.1)")];
            let mut b = Batch::default();
            let owned: Vec<String> = rows
                .iter()
                .map(|&(a, c, _, _)| match a {
                    5 if !ip_codes => format!("host{c}.example"),
                    4 => format!("2001:db8:{c}::1"),
                    _ => format!("10.{a}.{c}.{}", a * c),
                })
                .collect();
            for (n, (&(_, _, ua, t), ip)) in rows.iter().zip(&owned).enumerate() {
                b.push(&Record {
                    ts_ms: t,
                    client: ip.as_bytes(),
                    ip: ip.parse().ok(),
                    user_agent: agents[ua as usize].map(str::as_bytes),
                    ..Record::default()
                }, n as u64);
            }
            if coded {
                b.code_text();
            }
            if ip_codes {
                b.ip_codes = Some(IpCodes::for_test(&owned));
            }
            let by = if by_ip { GroupBy::Ip } else { GroupBy::Prefix };
            let limit = Some(Rate::new(2, 600_000).unwrap());
            let (since, until) = period.map_or((None, None), |(s, u)| (Some(s), Some(u)));
            let mut cls = Classifier::default();
            let mut plain = ConcentrationAcc::new(by, limit);
            for i in 0..b.len() {
                let t = b.ts_ms[i];
                if since.is_some_and(|s| t < s) || until.is_some_and(|u| t >= u) {
                    continue;
                }
                let rc = cls.classify(&b, i);
                plain.add(t, &rc);
            }
            let part = ConcentrationPart::of(&b, by, limit, (cls.v4_len, cls.v6_len), (since, until));
            let mut counted = ConcentrationAcc::new(by, limit);
            let ua = b.user_agent.clone();
            counted.add_part(&part, |k| cls.agents.id(if k == NULL_CODE { None } else { ua.value(k) }));
            for &i in &part.rest {
                let rc = cls.classify(&b, i as usize);
                counted.add(b.ts_ms[i as usize], &rc);
            }
            let a = serde_json::to_string(&plain.finish(&cls, None, 50, "", "")).unwrap();
            let z = serde_json::to_string(&counted.finish(&cls, None, 50, "", "")).unwrap();
            prop_assert_eq!(a, z);
        }

        #[test]
        fn shares_sum_to_one(ips in prop::collection::vec((0u8..4, 0u8..6), 1..300)) {
            let owned: Vec<(String, i64)> = ips.iter().map(|(a, b)| (format!("10.{a}.0.{b}"), 0)).collect();
            let rows: Vec<(&str, i64)> = owned.iter().map(|(s, t)| (s.as_str(), *t)).collect();
            let mut cls = Classifier::default();
            let mut b = Batch::default();
            for (n, (ip, t)) in rows.iter().enumerate() {
                b.push(&Record { ts_ms: *t, client: ip.as_bytes(), ip: ip.parse().ok(), ..Record::default() }, n as u64);
            }
            let mut acc = ConcentrationAcc::new(GroupBy::Prefix, None);
            for i in 0..b.len() {
                let rc = cls.classify(&b, i);
                acc.add(0, &rc);
            }
            let r = acc.finish(&cls, None, usize::MAX, "", "");
            let sum: f64 = r.top.iter().map(|g| g.share).sum();
            prop_assert!((sum - 1.0).abs() < 1e-9);
            prop_assert!((r.top.last().unwrap().cumulative_share - 1.0).abs() < 1e-9);
            prop_assert!(r.groups_for_50 <= r.groups_for_90);
            prop_assert_eq!(r.top.iter().map(|g| g.distinct_ips).sum::<u64>(), r.distinct_ips);
            for w in r.top.windows(2) {
                prop_assert!(w[0].requests >= w[1].requests);
            }
        }
    }
}
