//! `--servers N --balance RULE`: a fleet of N servers, each running the candidate with
//! its own local counters, against one counter shared by all of them.
//!
//! Counters that are not shared across servers undercount: a client whose requests are
//! spread over N servers can pass up to N times the limit. [`Fleet`] replays the sorted
//! rows once more: every request (in decision-time order) goes to one server by the
//! [`Balance`] rule and is judged by that server's own copy of every candidate, and by
//! a shared copy that sees every request (what the main report replays). Per candidate
//! it counts what the fleet and the shared counter admitted, delayed and refused, the
//! requests the fleet let through that the shared counter refused ("admitted beyond the
//! configured limit"), per-server counts, and per zone the most requests one key had
//! let through in one window of the zone's limit (windows aligned on the epoch, UTC),
//! against the limit. Deterministic: `round-robin` counts requests, `ip-hash` is
//! XXH3-64 of the client's canonical address text, `random:SEED` is SplitMix64 seeded
//! by SEED; no clock, no hash-map order reaches the output.

use std::fmt;
use std::io;

use rustc_hash::FxHashMap;

use super::decision::{Decision, Verdict};
use super::engine::Replay;
use super::key::KeySpec;
use super::policy::Policy;
use super::report::{
    FleetCandidate, FleetCounts, FleetPeak, FleetReport, ReplayReport, RowStore, utc_ms_label,
};
use super::request::Request;
use super::shard::{Shard, ShardError, ShardFilter, key_text};
use super::spec::CostKind;
use super::zone::ZoneId;

/// Most servers `--servers` takes.
pub const MAX_SERVERS: usize = 4096;

/// How a request picks its server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Balance {
    /// In turn, in decision-time order: request i goes to server i mod N.
    RoundRobin,
    /// By the client: `xxh3_64(canonical address text) mod N` (the client text when it
    /// is not an address), so one client always reaches one server.
    IpHash,
    /// At random from a SplitMix64 generator seeded by the value: the same seed gives
    /// the same assignment on every run.
    Random(u64),
}

impl fmt::Display for Balance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Balance::RoundRobin => f.write_str("round-robin"),
            Balance::IpHash => f.write_str("ip-hash"),
            Balance::Random(s) => write!(f, "random:{s}"),
        }
    }
}

/// A bad `--servers` or `--balance` value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FleetError {
    /// Not a whole number in 1..=[`MAX_SERVERS`].
    #[error("--servers {0:?}: give a number of servers from 1 to 4096, e.g. --servers 3")]
    Servers(String),
    /// Not a balance rule.
    #[error(
        "--balance {0:?}: give round-robin, ip-hash or random:SEED (SEED a whole number), e.g. --balance round-robin or --balance random:42"
    )]
    Balance(String),
    /// A balance rule without a fleet.
    #[error(
        "--balance needs --servers N (N servers with their own counters), e.g. --servers 3 --balance ip-hash"
    )]
    BalanceAlone,
}

impl Balance {
    /// Parses `round-robin`, `ip-hash`, `random:SEED`.
    pub fn parse(s: &str) -> Result<Balance, FleetError> {
        let t = s.trim().to_ascii_lowercase();
        match t.as_str() {
            "round-robin" | "roundrobin" | "rr" => Ok(Balance::RoundRobin),
            "ip-hash" | "iphash" => Ok(Balance::IpHash),
            _ => t
                .strip_prefix("random:")
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Balance::Random)
                .ok_or_else(|| FleetError::Balance(s.to_string())),
        }
    }
}

/// Parses `--servers N` (1 ≤ N ≤ [`MAX_SERVERS`]).
pub fn parse_servers(s: &str) -> Result<usize, FleetError> {
    s.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_SERVERS).contains(n))
        .ok_or_else(|| FleetError::Servers(s.to_string()))
}

/// Picks each request's server.
struct Router {
    balance: Balance,
    n: u64,
    seq: u64,
    rng: u64,
    buf: Vec<u8>,
}

impl Router {
    fn new(balance: Balance, n: usize) -> Router {
        Router {
            balance,
            n: n.max(1) as u64,
            seq: 0,
            rng: match balance {
                Balance::Random(s) => s,
                _ => 0,
            },
            buf: Vec::with_capacity(48),
        }
    }

    #[inline]
    fn route(&mut self, req: &Request<'_>) -> usize {
        let s = match self.balance {
            Balance::RoundRobin => {
                let s = self.seq % self.n;
                self.seq += 1;
                s
            }
            Balance::IpHash => {
                if key_text(&KeySpec::Ip, req, &mut self.buf) {
                    Shard::of(&self.buf, self.n)
                } else {
                    0
                }
            }
            Balance::Random(_) => {
                let x = splitmix64(&mut self.rng);
                ((u128::from(x) * u128::from(self.n)) >> 64) as u64
            }
        };
        s as usize
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): the next value of the sequence at `state`.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One side (shared or fleet) of a zone's peak.
#[derive(Default)]
struct Side {
    /// Per key: the current window's start and what it let through in it.
    keys: FxHashMap<Box<[u8]>, (i64, u64)>,
    peak: u64,
    peak_key: Option<String>,
    peak_at: i64,
    over: u64,
}

impl Side {
    #[inline]
    fn add(&mut self, key: &[u8], start: i64, limit: u64, shown: impl FnOnce() -> Option<String>) {
        let n = match self.keys.get_mut(key) {
            Some(e) => {
                if e.0 != start {
                    *e = (start, 0);
                }
                e.1 += 1;
                e.1
            }
            None => {
                self.keys.insert(key.into(), (start, 1));
                1
            }
        };
        if n == limit + 1 {
            self.over += 1;
        }
        if n > self.peak {
            self.peak = n;
            self.peak_at = start;
            self.peak_key = shown();
        }
    }
}

/// A zone whose peak is counted (cost in requests).
struct ZonePeak {
    zone: ZoneId,
    key: KeySpec,
    window: i64,
    limit: u64,
    sides: [Side; 2],
}

/// What one candidate did on the fleet.
struct CandFleet {
    shared: FleetCounts,
    fleet: FleetCounts,
    beyond: u64,
    refused_not_shared: u64,
    per_server: Vec<FleetCounts>,
    peaks: Vec<ZonePeak>,
    /// Zone id → index in `peaks`.
    peak_of: Vec<Option<usize>>,
}

fn count(c: &mut FleetCounts, d: Decision) {
    match d {
        Decision::Admit => c.admitted += 1,
        Decision::Delay(_) => c.delayed += 1,
        Decision::Refuse => c.refused += 1,
        _ => return,
    }
    c.in_scope += 1;
}

/// A fleet replay: one shared copy of the candidates and one copy per server.
pub struct Fleet {
    shared: Replay,
    servers: Vec<Replay>,
    router: Router,
    balance: Balance,
    routed: Vec<u64>,
    cands: Vec<CandFleet>,
    sv: Vec<Verdict>,
    key: Vec<u8>,
}

impl Fleet {
    /// A fleet: `shared` and every element of `servers` must be fresh copies of the same
    /// candidates, in the same order (one copy per server). With `shard`, every copy
    /// replays only that shard's keys (`--keys K/N`).
    pub fn new(
        shared: Vec<Policy>,
        servers: Vec<Vec<Policy>>,
        balance: Balance,
        shard: Option<Shard>,
    ) -> Result<Fleet, ShardError> {
        let n = servers.len().max(1);
        let cands = shared
            .iter()
            .map(|p| {
                let mut peak_of = vec![None; p.zones().len()];
                let mut peaks = Vec::new();
                if p.program().is_none() {
                    for (z, zone) in p.zones().iter().enumerate() {
                        let spec = zone.spec();
                        if spec.cost != CostKind::Requests {
                            continue;
                        }
                        peak_of[z] = Some(peaks.len());
                        peaks.push(ZonePeak {
                            zone: z as ZoneId,
                            key: spec.key.clone(),
                            window: (spec.rate.window_ms() as i64).max(1),
                            limit: spec.rate.count(),
                            sides: [Side::default(), Side::default()],
                        });
                    }
                }
                CandFleet {
                    shared: FleetCounts::default(),
                    fleet: FleetCounts::default(),
                    beyond: 0,
                    refused_not_shared: 0,
                    per_server: vec![FleetCounts::default(); n],
                    peaks,
                    peak_of,
                }
            })
            .collect();
        let mut shared = Replay::new(shared);
        let mut reps: Vec<Replay> = servers.into_iter().map(Replay::new).collect();
        if let Some(s) = shard {
            shared.set_shard(ShardFilter::new(s, shared.policies())?);
            for r in &mut reps {
                let f = ShardFilter::new(s, r.policies())?;
                r.set_shard(f);
            }
        }
        let k = shared.policies().len();
        Ok(Fleet {
            shared,
            servers: reps,
            router: Router::new(balance, n),
            balance,
            routed: vec![0; n],
            cands,
            sv: Vec::with_capacity(k),
            key: Vec::with_capacity(64),
        })
    }

    /// Judges one request: by the shared copy and by its server's copy.
    pub fn decide(&mut self, req: &Request<'_>) {
        let s = self
            .router
            .route(req)
            .min(self.servers.len().saturating_sub(1));
        self.routed[s] += 1;
        self.sv.clear();
        self.sv.extend_from_slice(self.shared.decide(req));
        let Some(server) = self.servers.get_mut(s) else {
            return;
        };
        let fv = server.decide(req);
        let policies = self.shared.policies();
        for (c, ((ca, sv), fv)) in self.cands.iter_mut().zip(&self.sv).zip(fv).enumerate() {
            count(&mut ca.shared, sv.decision);
            count(&mut ca.fleet, fv.decision);
            count(&mut ca.per_server[s], fv.decision);
            let s_pass = matches!(sv.decision, Decision::Admit | Decision::Delay(_));
            let f_pass = matches!(fv.decision, Decision::Admit | Decision::Delay(_));
            if f_pass && sv.decision == Decision::Refuse {
                ca.beyond += 1;
            }
            if s_pass && fv.decision == Decision::Refuse {
                ca.refused_not_shared += 1;
            }
            if ca.peaks.is_empty() {
                continue;
            }
            let p = &policies[c];
            for (side, pass, v) in [(0, s_pass, sv), (1, f_pass, fv)] {
                if !pass {
                    continue;
                }
                let Some(rule) = v.rule.and_then(|r| p.rules().get(r as usize)) else {
                    continue;
                };
                for l in &rule.limits {
                    let Some(zp) = ca
                        .peak_of
                        .get(l.zone as usize)
                        .copied()
                        .flatten()
                        .and_then(|i| ca.peaks.get_mut(i))
                    else {
                        continue;
                    };
                    if !zp.key.extract(req, &mut self.key) {
                        continue;
                    }
                    let start = req.arrival_ms.div_euclid(zp.window) * zp.window;
                    let key = &zp.key;
                    zp.sides[side].add(&self.key, start, zp.limit, || key.display(req));
                }
            }
        }
    }

    /// Replays `store` (sorted) through the fleet. Fails if the store's runs on disk
    /// cannot be read, or if rows of it were replayed as read
    /// ([`RowStore::take_before`]: they are not kept).
    pub fn run(&mut self, store: &RowStore) -> io::Result<()> {
        if store.fed() > 0 {
            // Those rows are gone: a fleet replays every row a second time.
            return Err(io::Error::other(
                "a fleet needs every row, and some were replayed as they were read",
            ));
        }
        store.for_each_sorted(|req, _| {
            self.decide(req);
            Ok(())
        })
    }

    /// The fleet's report; candidate labels are taken from `report` (the main report of
    /// the same candidates).
    pub fn finish(self, report: &ReplayReport) -> FleetReport {
        let policies = self.shared.policies();
        let candidates = self
            .cands
            .into_iter()
            .enumerate()
            .map(|(c, ca)| {
                let p = &policies[c];
                let peaks = ca
                    .peaks
                    .into_iter()
                    .map(|zp| {
                        let z = &p.zones()[zp.zone as usize];
                        let mut spec = z.spec().clone();
                        spec.name = None;
                        let [sh, fl] = zp.sides;
                        FleetPeak {
                            zone: z.name().to_string(),
                            limit: spec.to_string(),
                            limit_count: zp.limit,
                            window_ms: zp.window as u64,
                            fleet_peak: fl.peak,
                            fleet_key: fl.peak_key,
                            fleet_at: (fl.peak > 0).then(|| utc_ms_label(fl.peak_at)),
                            fleet_windows_over: fl.over,
                            shared_peak: sh.peak,
                            shared_windows_over: sh.over,
                        }
                    })
                    .collect();
                FleetCandidate {
                    label: report
                        .candidates
                        .get(c)
                        .map_or_else(|| c.to_string(), |r| r.label.clone()),
                    name: p.name().to_string(),
                    shared: ca.shared,
                    fleet: ca.fleet,
                    admitted_beyond_limit: ca.beyond,
                    refused_not_shared: ca.refused_not_shared,
                    per_server: ca.per_server,
                    peaks,
                }
            })
            .collect();
        FleetReport {
            servers: self.servers.len(),
            balance: self.balance.to_string(),
            routed: self.routed,
            candidates,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fleet(spec: &str, n: usize, b: Balance) -> Fleet {
        let p = || vec![Policy::from_spec(spec).unwrap()];
        Fleet::new(p(), (0..n).map(|_| p()).collect(), b, None).unwrap()
    }

    fn burst(f: &mut Fleet, ips: &[&str], per_ip: usize) {
        let mut i = 0;
        for k in 0..per_ip {
            for ip in ips {
                let req = Request {
                    index: i,
                    arrival_ms: 1_700_000_000_000 + (k as i64) * 10,
                    ip: ip.parse().ok(),
                    ..Default::default()
                };
                f.decide(&req);
                i += 1;
            }
        }
    }

    fn report(f: Fleet) -> FleetCandidate {
        let r = ReplayReport {
            origin: String::new(),
            selection: String::new(),
            tz: String::new(),
            records: 0,
            requests: 0,
            first: None,
            last: None,
            second_resolution: 0,
            logged_refusals: super::super::report::LoggedRefusals {
                statuses: vec![],
                replayed: 0,
                dropped: 0,
            },
            capacity: None,
            bucket_ms: 1,
            internal: None,
            classes: vec![],
            candidates: vec![],
            over_time: vec![],
            gaps: vec![],
            warnings: vec![],
            fleet: None,
            waiting: None,
            sweep: None,
        };
        f.finish(&r).candidates.remove(0)
    }

    #[test]
    fn round_robin_admits_n_times_the_limit() {
        let mut f = fleet("10/1m,key=ip", 2, Balance::RoundRobin);
        burst(&mut f, &["192.0.2.1"], 30);
        let c = report(f);
        assert_eq!(c.shared.admitted, 10);
        assert_eq!(c.fleet.admitted, 20);
        assert_eq!(c.admitted_beyond_limit, 10);
        assert_eq!(c.per_server[0].admitted, 10);
        assert_eq!(c.per_server[1].refused, 5);
        assert_eq!((c.peaks[0].shared_peak, c.peaks[0].fleet_peak), (10, 20));
        assert_eq!(c.peaks[0].fleet_key.as_deref(), Some("192.0.2.1"));
        assert_eq!(c.peaks[0].fleet_windows_over, 1);
    }

    #[test]
    fn ip_hash_one_client_equals_shared() {
        let mut f = fleet("10/1m,key=ip", 3, Balance::IpHash);
        burst(&mut f, &["192.0.2.1"], 30);
        let c = report(f);
        assert_eq!(c.admitted_beyond_limit, 0);
        assert_eq!(c.fleet.admitted, c.shared.admitted);
        assert_eq!(c.per_server.iter().filter(|s| s.in_scope > 0).count(), 1);
    }

    #[test]
    fn random_is_seeded() {
        let run = |seed| {
            let mut f = fleet("5/1m", 4, Balance::Random(seed));
            burst(&mut f, &["192.0.2.1", "192.0.2.2", "198.51.100.3"], 20);
            f.routed.clone()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        assert_eq!(run(7).iter().sum::<u64>(), 60);
    }

    #[test]
    fn parses_values() {
        assert_eq!(Balance::parse("random:42"), Ok(Balance::Random(42)));
        assert_eq!(Balance::parse("IP-HASH"), Ok(Balance::IpHash));
        for bad in ["", "random", "random:", "random:-1", "hash", "random:1x"] {
            assert!(Balance::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_servers("3"), Ok(3));
        for bad in ["0", "-1", "x", "", "4097", "1.5"] {
            assert!(parse_servers(bad).is_err(), "{bad}");
        }
    }
}
