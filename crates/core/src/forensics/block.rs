//! The smallest block: the fewest networks (prefixes from /32 up to /16, /128 up to /32
//! for IPv6, or whole autonomous systems) that stop at least a share of what is to be
//! stopped while touching at most a share of what must be kept.
//!
//! The input is one tally per distinct client address of the window: its requests to
//! *stop* (the selection), to *keep* (people: identified users, verified crawlers, the
//! baseline's clients, your own networks) and *other* (neither). The search is a greedy
//! cover: every network holding a client to stop is a candidate (each of its prefixes at
//! every length, and its AS when a database is given); at each step the candidate that
//! stops the most not yet stopped requests less the other requests it touches is taken,
//! among those that keep the touched kept requests within the budget and whose own
//! requests are mostly the selection (the purity: a network where the selection is a
//! minority is somebody's neighbourhood); ties go to the one stopping more, then
//! touching fewer kept requests, then to the narrower network. A candidate found
//! ineligible is not considered again, so the search is one pass over the heap. Once the
//! target is met, entries that are no longer needed are dropped, smallest first.
//! Memory: per distinct client one tally, and per candidate its members (at most 18
//! prefixes and one AS per client).

use std::collections::BinaryHeap;
use std::net::IpAddr;

use ipnet::IpNet;
use rustc_hash::FxHashMap;
use serde::Serialize;

/// One client's requests in the window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Requests of the selection to stop.
    pub stop: u64,
    /// Requests that must not be hurt.
    pub keep: u64,
    /// The rest.
    pub other: u64,
}

impl Tally {
    fn add(&mut self, t: Tally) {
        self.stop += t.stop;
        self.keep += t.keep;
        self.other += t.other;
    }
}

/// What the block must achieve.
#[derive(Clone, Copy, Debug)]
pub struct Goal {
    /// Share of the requests to stop that must be stopped (0–1).
    pub target: f64,
    /// Share of the kept requests that may be touched (0–1).
    pub max_collateral: f64,
    /// Least share of an entry's own requests that are the selection (0–1).
    pub purity: f64,
    /// Widest IPv4 prefix (16: nothing wider than a /16).
    pub widest_v4: u8,
    /// Widest IPv6 prefix.
    pub widest_v6: u8,
}

/// A network of a block.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Network {
    /// A prefix.
    Prefix(IpNet),
    /// An autonomous system.
    As(u32),
}

impl std::fmt::Display for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Network::Prefix(n) => write!(f, "{n}"),
            Network::As(n) => write!(f, "AS{n}"),
        }
    }
}

/// One entry of the block, with what it covers in the window.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The network.
    pub network: Network,
    /// Its requests in the window.
    pub tally: Tally,
    /// Its distinct clients that sent requests to stop.
    pub clients: u64,
}

/// The block found.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The entries, the most requests stopped first.
    pub entries: Vec<Entry>,
    /// What all the entries together cover (each client once).
    pub covered: Tally,
    /// Whether the target was met within the budget.
    pub met: bool,
}

/// The IPv6 prefix lengths tried, narrowest first (a /64 is one subscriber's).
const V6_LENGTHS: [u8; 9] = [128, 64, 60, 56, 52, 48, 44, 40, 32];

struct Candidate {
    network: Network,
    /// Indexes of the clients inside it.
    members: Vec<u32>,
    /// Prefix length (narrower = larger); an AS counts as the widest.
    specificity: u8,
}

/// Finds the block for `clients` (one tally per distinct address) whose totals, clients
/// without an address included, are `totals`; `asn_of` places an address in its AS
/// (`None`: no database, or not in it).
pub fn plan(
    clients: &[(IpAddr, Tally)],
    totals: Tally,
    goal: &Goal,
    asn_of: &mut dyn FnMut(IpAddr) -> Option<u32>,
) -> Plan {
    let mut index: FxHashMap<Network, u32> = FxHashMap::default();
    let mut cands: Vec<Candidate> = Vec::new();
    let mut asns: Vec<Option<u32>> = Vec::with_capacity(clients.len());
    for &(ip, _) in clients {
        asns.push(asn_of(ip));
    }
    // Candidates: every network holding a client to stop; then every client's place
    // in them.
    for (k, &(ip, t)) in clients.iter().enumerate() {
        if t.stop == 0 {
            continue;
        }
        for (net, spec) in networks_of(ip, asns[k], goal) {
            if !index.contains_key(&net) {
                index.insert(net.clone(), cands.len() as u32);
                cands.push(Candidate {
                    network: net,
                    members: Vec::new(),
                    specificity: spec,
                });
            }
        }
    }
    for (k, &(ip, _)) in clients.iter().enumerate() {
        for (net, _) in networks_of(ip, asns[k], goal) {
            if let Some(&id) = index.get(&net) {
                cands[id as usize].members.push(k as u32);
            }
        }
    }
    drop(index);

    let target = (goal.target * totals.stop as f64).ceil() as u64;
    let budget = (goal.max_collateral * totals.keep as f64).floor() as u64;
    let mut blocked = vec![0u32; clients.len()];
    let marginal = |c: &Candidate, blocked: &[u32]| -> Tally {
        let mut t = Tally::default();
        for &m in &c.members {
            if blocked[m as usize] == 0 {
                t.add(clients[m as usize].1);
            }
        }
        t
    };
    let eligible = |t: Tally, kept: u64| -> bool {
        let own = t.stop + t.keep + t.other;
        t.stop > 0 && kept + t.keep <= budget && t.stop as f64 >= goal.purity * own as f64
    };
    // The heap's order: the most stopped less other requests touched (the selection
    // gained, bystanders lost), more stopped, fewer kept, narrower, first made.
    type Key = (u64, u64, std::cmp::Reverse<u64>, u8, std::cmp::Reverse<u32>);
    let key = |t: Tally, c: &Candidate, id: u32| -> Key {
        use std::cmp::Reverse as R;
        (
            t.stop.saturating_sub(t.other),
            t.stop,
            R(t.keep),
            c.specificity,
            R(id),
        )
    };
    let mut heap: BinaryHeap<Key> = cands
        .iter()
        .enumerate()
        .map(|(id, c)| key(marginal(c, &blocked), c, id as u32))
        .collect();
    let mut chosen: Vec<u32> = Vec::new();
    let mut covered = Tally::default();
    while covered.stop < target {
        let mut pick = None;
        while let Some(top) = heap.pop() {
            let id = (top.4).0;
            let c = &cands[id as usize];
            let t = marginal(c, &blocked);
            if t.stop == 0 {
                continue; // never useful again
            }
            let now = key(t, c, id);
            if now != top {
                heap.push(now);
                continue;
            }
            if eligible(t, covered.keep) {
                pick = Some((id, t));
                break;
            }
            // Not within the budget or not pure enough now: not considered again (the
            // budget only shrinks; purity could only grow by others' entries taking its
            // other clients, and then those entries cover them already).
        }
        let Some((id, t)) = pick else { break };
        for &m in &cands[id as usize].members {
            blocked[m as usize] += 1;
        }
        covered.add(t);
        chosen.push(id);
    }
    let met = covered.stop >= target;
    // Drop what is no longer needed, the entries stopping least first.
    let own = |id: u32| -> Tally {
        let mut t = Tally::default();
        for &m in &cands[id as usize].members {
            t.add(clients[m as usize].1);
        }
        t
    };
    let mut order: Vec<u32> = chosen.clone();
    order.sort_by_key(|&id| (own(id).stop, std::cmp::Reverse(id)));
    let mut kept_ids: Vec<u32> = chosen;
    for id in order {
        let mut alone = Tally::default();
        for &m in &cands[id as usize].members {
            if blocked[m as usize] == 1 {
                alone.add(clients[m as usize].1);
            }
        }
        if alone.stop == 0 || (met && covered.stop - alone.stop >= target) {
            for &m in &cands[id as usize].members {
                blocked[m as usize] -= 1;
            }
            covered.stop -= alone.stop;
            covered.keep -= alone.keep;
            covered.other -= alone.other;
            kept_ids.retain(|&x| x != id);
        }
    }
    let mut entries: Vec<Entry> = kept_ids
        .iter()
        .map(|&id| {
            let c = &cands[id as usize];
            Entry {
                network: c.network.clone(),
                tally: own(id),
                clients: c
                    .members
                    .iter()
                    .filter(|&&m| clients[m as usize].1.stop > 0)
                    .count() as u64,
            }
        })
        .collect();
    entries.sort_by(|a, b| {
        b.tally
            .stop
            .cmp(&a.tally.stop)
            .then_with(|| a.network.cmp(&b.network))
    });
    Plan {
        entries,
        covered,
        met,
    }
}

/// The networks `ip` is in, with their specificity: its prefixes at every length from
/// the address up to the widest allowed, and its AS.
fn networks_of(ip: IpAddr, asn: Option<u32>, goal: &Goal) -> Vec<(Network, u8)> {
    let ip = crate::net::canonical(ip);
    let mut v = Vec::with_capacity(20);
    match ip {
        IpAddr::V4(_) => {
            for len in (goal.widest_v4.min(32)..=32).rev() {
                if let Ok(n) = IpNet::new(ip, len) {
                    v.push((Network::Prefix(n.trunc()), len));
                }
            }
        }
        IpAddr::V6(_) => {
            for len in V6_LENGTHS.into_iter().filter(|&l| l >= goal.widest_v6) {
                if let Ok(n) = IpNet::new(ip, len) {
                    v.push((Network::Prefix(n.trunc()), len));
                }
            }
        }
    }
    if let Some(a) = asn {
        v.push((Network::As(a), 0));
    }
    v
}

/// Whether a network string is a prefix (`100.1.7.0/24`) or an AS (`AS64600`), for
/// readers of a block.
pub fn parse_network(s: &str) -> Option<Network> {
    let t = s.trim();
    if let Some(n) = t.strip_prefix("AS") {
        return n.parse().ok().map(Network::As);
    }
    t.parse::<IpNet>().ok().map(|n| Network::Prefix(n.trunc()))
}

/// One entry of a block report.
#[derive(Clone, Debug, Serialize)]
pub struct EntryRow {
    /// `100.1.7.0/24` or `AS64600`.
    pub network: String,
    /// The AS's name, for an AS (and the AS of a prefix, when a database is given).
    pub as_name: Option<String>,
    /// Requests of the selection it stops.
    pub stopped: u64,
    /// Kept requests it touches.
    pub collateral: u64,
    /// Other requests it touches.
    pub other: u64,
    /// Distinct clients of the selection inside it.
    pub clients: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(stop: u64, keep: u64, other: u64) -> Tally {
        Tally { stop, keep, other }
    }

    fn goal() -> Goal {
        Goal {
            target: 0.9,
            max_collateral: 0.01,
            purity: 0.5,
            widest_v4: 16,
            widest_v6: 32,
        }
    }

    #[test]
    fn a_clean_wide_prefix_beats_many_narrow_ones() {
        // Bots in 10.1.0–7 (eight /24s), people in 10.1.200.
        let mut clients = Vec::new();
        for n in 0..8u8 {
            for h in 1..=5u8 {
                clients.push((IpAddr::from([10, 1, n, h]), t(10, 0, 0)));
            }
        }
        for h in 1..=20u8 {
            clients.push((IpAddr::from([10, 1, 200, h]), t(0, 30, 5)));
        }
        let totals = clients.iter().fold(Tally::default(), |mut a, c| {
            a.add(c.1);
            a
        });
        let p = plan(&clients, totals, &goal(), &mut |_| None);
        assert!(p.met);
        assert_eq!(p.entries.len(), 1, "{:?}", p.entries);
        // The widest clean one would be a /17 (10.1.0–127); ties go to the narrowest:
        // the /21 that holds exactly the bots.
        assert_eq!(p.entries[0].network.to_string(), "10.1.0.0/21");
        assert_eq!(p.covered, t(400, 0, 0));
    }

    #[test]
    fn the_collateral_budget_and_purity_hold() {
        // A bot and a person share each /24; the /32s are the only clean entries.
        let mut clients = Vec::new();
        for n in 0..10u8 {
            clients.push((IpAddr::from([10, 2, n, 1]), t(50, 0, 0)));
            clients.push((IpAddr::from([10, 2, n, 2]), t(0, 10, 0)));
        }
        let totals = t(500, 100, 0);
        let p = plan(&clients, totals, &goal(), &mut |_| Some(64500));
        assert!(p.met);
        assert_eq!(p.covered.keep, 0);
        assert_eq!(p.entries.len(), 9, "90% of 10 bots");
        assert!(
            p.entries
                .iter()
                .all(|e| e.network.to_string().ends_with("/32"))
        );
        // A 20% budget lets the AS in? It touches all 100 kept requests: no.
        let loose = Goal {
            max_collateral: 0.2,
            ..goal()
        };
        let p = plan(&clients, totals, &loose, &mut |_| Some(64500));
        assert_eq!(p.covered.keep, 20, "two /31s… or /30s within the budget");
        assert!(p.met);
        // Purity: a network whose requests are mostly other people's is not taken.
        let crowd = vec![
            (IpAddr::from([10, 3, 0, 1]), t(10, 0, 0)),
            (IpAddr::from([10, 3, 0, 2]), t(0, 0, 100)),
        ];
        let p = plan(&crowd, t(10, 0, 100), &goal(), &mut |_| None);
        assert_eq!(p.entries.len(), 1);
        assert_eq!(p.entries[0].network.to_string(), "10.3.0.1/32");
        assert_eq!(p.covered.other, 0);
    }

    #[test]
    fn an_as_when_it_is_the_one_clean_network() {
        // Scrapers spread over a hosting AS's /16s; nothing else there.
        let mut clients = Vec::new();
        for n in 0..40u8 {
            clients.push((IpAddr::from([20, n * 3, 1, 1]), t(7, 0, 0)));
        }
        let totals = t(280, 10, 0);
        let p = plan(&clients, totals, &goal(), &mut |_| Some(64610));
        assert_eq!(p.entries.len(), 1);
        assert_eq!(p.entries[0].network, Network::As(64610));
        assert_eq!(parse_network("AS64610"), Some(Network::As(64610)));
        assert_eq!(
            parse_network("100.1.7.9/24"),
            Some(Network::Prefix("100.1.7.0/24".parse().unwrap()))
        );
    }

    #[test]
    fn unreachable_targets_say_so() {
        let clients = vec![(IpAddr::from([10, 4, 0, 1]), t(10, 10, 0))];
        let p = plan(&clients, t(10, 10, 0), &goal(), &mut |_| None);
        assert!(!p.met);
        assert!(p.entries.is_empty());
    }
}
