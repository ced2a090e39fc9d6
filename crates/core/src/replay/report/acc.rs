//! The replay report's accumulator: fed one replayed row at a time, it keeps only
//! counts that do not grow with the log — per class, rule, bucket, capacity window and
//! distinct refused key — and the decision times of the last capacity window (for its
//! sliding peak). [`ReportAcc::finish`] (in `finish.rs`) turns it into the report.

use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;

use rustc_hash::FxHashMap;

use super::buckets::TimeBuckets;
use super::model::LoggedFate;
use super::options::ReportOptions;
use super::rows::{RowMeta, Who};
use super::waits::WaitAcc;
use crate::classify::ClientKey;
use crate::net::canonical;
use crate::rate::Rate;
use crate::replay::{Decision, Policy, Verdict};
use crate::time::align;

pub(super) struct CapAcc {
    pub(super) cap: Rate,
    pub(super) windows: BTreeMap<i64, [u64; 2]>,
    pub(super) cov: VecDeque<i64>,
    pub(super) pass: VecDeque<i64>,
    pub(super) peak: [(u64, i64, i64); 2],
}

impl CapAcc {
    fn add(&mut self, utc: i64, local: i64, passed: bool) {
        let w = self.cap.window_ms() as i64;
        let start = align(local, w);
        let e = self.windows.entry(start).or_default();
        e[0] += 1;
        e[1] += u64::from(passed);
        let off = local - utc;
        slide(&mut self.cov, &mut self.peak[0], utc, off, w);
        if passed {
            slide(&mut self.pass, &mut self.peak[1], utc, off, w);
        }
    }
}

fn slide(q: &mut VecDeque<i64>, peak: &mut (u64, i64, i64), t: i64, off: i64, w: i64) {
    q.push_back(t);
    while q.front().is_some_and(|&f| f <= t - w) {
        q.pop_front();
    }
    if q.len() as u64 > peak.0 {
        *peak = (q.len() as u64, t, off);
    }
}

#[derive(Default)]
pub(super) struct CandAcc {
    /// Per class: covered, exempt, refused, delayed.
    pub(super) who: [[u64; 4]; 5],
    /// Refusals per address and network that is not IPv4 (folded together with the
    /// IPv4 ones in [`ReportAcc::finish`]).
    pub(super) refused_ip: FxHashMap<ClientKey, u64>,
    pub(super) refused_prefix: FxHashMap<ClientKey, u64>,
    /// Refusals per IPv4 address and network, by their bits: entries a third the size
    /// of a [`ClientKey`]'s, so a storm's addresses stay in cache.
    pub(super) refused_ip4: FxHashMap<u32, u64>,
    pub(super) refused_net4: FxHashMap<u32, u64>,
    /// Refusals per agent id.
    pub(super) refused_agent: Vec<u64>,
    pub(super) first_refusal: Option<(i64, i64)>,
    pub(super) last_refusal: Option<(i64, i64)>,
    pub(super) logged: LoggedFate,
    /// Per rule: in scope, admitted, delayed, refused, exempt.
    pub(super) rules: Vec<[u64; 5]>,
    pub(super) cap: Option<CapAcc>,
    /// Challenged requests per class.
    pub(super) challenged: [u64; 5],
    /// Ban zones: (zone, bans seen, per ban: trigger class and lost requests per class).
    pub(super) bans: Vec<BanAcc>,
    /// How many refused requests would have been told each `Retry-After` (whole
    /// seconds; memory per distinct value); and the refusals told never.
    pub(super) retry: BTreeMap<u64, u64>,
    pub(super) retry_never: u64,
}

/// What the accumulator learns about one ban zone's bans.
#[derive(Default)]
pub(super) struct BanAcc {
    pub(super) zone: usize,
    pub(super) per_ban: Vec<(Who, [u64; 5], i64)>,
}

/// Accumulates the report while the rows are replayed.
pub struct ReportAcc {
    pub(super) opts: ReportOptions,
    pub(super) requests: u64,
    pub(super) second: u64,
    pub(super) logged: u64,
    pub(super) first: Option<(i64, i64)>,
    pub(super) last: Option<(i64, i64)>,
    pub(super) who_total: [u64; 5],
    pub(super) agent_total: Vec<u64>,
    pub(super) time: TimeBuckets,
    pub(super) cands: Vec<CandAcc>,
    /// The IPv4 network mask of `opts.v4_len`.
    pub(super) v4_mask: u32,
    /// Whether any candidate has a ban zone.
    watch_bans: bool,
    /// `--workers`: the queue replay.
    pub(super) waits: Option<WaitAcc>,
    /// The service time of the row being replayed ([`ReportAcc::separate`]).
    service: Option<u64>,
}

impl ReportAcc {
    /// An accumulator for these candidates.
    pub fn new(policies: &[Policy], opts: ReportOptions) -> ReportAcc {
        let waits = opts.workers.map(|c| WaitAcc::new(c, policies.len()));
        let cands: Vec<CandAcc> = policies
            .iter()
            .map(|p| CandAcc {
                rules: vec![[0; 5]; p.rules().len()],
                cap: opts.capacity.map(|cap| CapAcc {
                    cap,
                    windows: BTreeMap::new(),
                    cov: VecDeque::new(),
                    pass: VecDeque::new(),
                    peak: [(0, 0, 0); 2],
                }),
                bans: p
                    .zones()
                    .iter()
                    .enumerate()
                    .filter(|(_, z)| z.ban().is_some())
                    .map(|(zone, _)| BanAcc {
                        zone,
                        per_ban: Vec::new(),
                    })
                    .collect(),
                ..CandAcc::default()
            })
            .collect();
        let v4_mask = match opts.v4_len.min(32) {
            0 => 0,
            len => u32::MAX << (32 - len),
        };
        ReportAcc {
            time: TimeBuckets::new(opts.bucket_ms, opts.capacity, cands.len()),
            opts,
            requests: 0,
            second: 0,
            logged: 0,
            first: None,
            last: None,
            who_total: [0; 5],
            agent_total: Vec::new(),
            watch_bans: policies
                .iter()
                .any(|p| p.zones().iter().any(|z| z.ban().is_some())),
            waits,
            service: None,
            cands,
            v4_mask,
        }
    }

    /// With `--workers`: the service time of the row about to be replayed (µs), its
    /// logged request time without the logged backend's queueing (see `waits.rs`), which
    /// `cost=request-time` then charges. Call once per row, before [`ReportAcc::add`].
    pub fn separate(&mut self, m: &RowMeta) -> Option<u64> {
        let w = self.waits.as_mut()?;
        let s = w.service(
            m.arrival_ms.saturating_mul(1000),
            m.request_time_us,
            crate::forensics::capacity::failed(m.status),
            m.who,
            m.heavy,
        );
        self.service = Some(s);
        Some(s)
    }

    /// Whether [`ReportAcc::note_bans`] has anything to do.
    #[inline]
    pub fn watches_bans(&self) -> bool {
        self.watch_bans
    }

    /// After [`ReportAcc::add`]: the class of the request that started each new ban,
    /// and the class of each request a ban refused.
    pub fn note_bans(&mut self, m: &RowMeta, verdicts: &[Verdict], policies: &[Policy]) {
        let w = m.who.index();
        let off = self.last.map_or(0, |l| l.1);
        for (c, ca) in self.cands.iter_mut().enumerate() {
            for b in &mut ca.bans {
                let Some(z) = policies.get(c).and_then(|p| p.zones().get(b.zone)) else {
                    continue;
                };
                let Some(bz) = z.ban() else { continue };
                while b.per_ban.len() < bz.bans().len() {
                    b.per_ban.push((m.who, [0; 5], off));
                }
                let v = verdicts.get(c);
                if v.is_some_and(|v| {
                    v.decision == Decision::Refuse && v.zone == Some(b.zone as u16)
                }) && let Some(i) = bz.last_hit()
                    && let Some(e) = b.per_ban.get_mut(i as usize)
                {
                    e.1[w] += 1;
                }
            }
        }
    }

    /// Notes what each refused request's client would have been told to wait
    /// (`Retry-After`), from the deciding zone's state.
    pub fn note_retry(
        &mut self,
        req: &crate::replay::Request<'_>,
        verdicts: &[Verdict],
        policies: &[Policy],
    ) {
        for (c, v) in verdicts.iter().enumerate() {
            if v.decision != Decision::Refuse {
                continue;
            }
            let (Some(ca), Some(p)) = (self.cands.get_mut(c), policies.get(c)) else {
                continue;
            };
            match p
                .client_view(v, req, false)
                .map(|(_, cv)| cv.retry_after_s())
            {
                Some(Some(s)) => *ca.retry.entry(s).or_default() += 1,
                Some(None) => ca.retry_never += 1,
                None => {}
            }
        }
    }

    /// Adds one replayed row: its facts, its time on the report's clock, and the
    /// candidates' verdicts (in candidate order).
    pub fn add(&mut self, m: &RowMeta, local_ms: i64, verdicts: &[Verdict]) {
        let t = m.arrival_ms;
        let off = local_ms - t;
        self.requests += 1;
        self.second += u64::from(m.second_resolution);
        self.logged += u64::from(m.logged_refusal);
        if self.first.is_none() {
            self.first = Some((t, off));
        }
        self.last = Some((t, off));
        let w = m.who.index();
        self.who_total[w] += 1;
        let a = m.agent as usize;
        if a >= self.agent_total.len() {
            self.agent_total.resize(a + 1, 0);
        }
        self.agent_total[a] += 1;
        if let Some(w) = self.waits.as_mut() {
            let s = self.service.take().unwrap_or(0);
            w.add(
                t,
                s,
                m.who,
                verdicts.iter().map(|v| v.decision != Decision::Refuse),
            );
        }
        self.time.add(local_ms, t, |b| {
            b.requests += 1;
            for (cell, v) in b.cells.iter_mut().zip(verdicts) {
                if v.decision != Decision::OutOfScope {
                    let refused = v.decision == Decision::Refuse;
                    cell.covered += 1;
                    cell.refused += u64::from(refused);
                    cell.passed += u64::from(!refused);
                }
            }
        });
        for (c, v) in verdicts.iter().enumerate() {
            let d = v.decision;
            if d == Decision::OutOfScope {
                continue;
            }
            let refused = d == Decision::Refuse;
            let ca = &mut self.cands[c];
            let wr = &mut ca.who[w];
            wr[0] += 1;
            if let Some(r) = v.rule.and_then(|r| ca.rules.get_mut(r as usize)) {
                match d {
                    Decision::Admit => {
                        r[0] += 1;
                        r[1] += 1;
                    }
                    Decision::Delay(_) => {
                        r[0] += 1;
                        r[2] += 1;
                    }
                    Decision::Refuse => {
                        r[0] += 1;
                        r[3] += 1;
                    }
                    Decision::Challenge => {
                        r[0] += 1;
                        r[1] += 1;
                    }
                    _ => r[4] += 1,
                }
            }
            if m.logged_refusal {
                ca.logged.covered += 1;
                match d {
                    Decision::Admit => ca.logged.admitted += 1,
                    Decision::Delay(_) => ca.logged.delayed += 1,
                    Decision::Refuse => ca.logged.refused += 1,
                    _ => {}
                }
            }
            match d {
                Decision::Exempt => wr[1] += 1,
                Decision::Delay(_) => wr[3] += 1,
                Decision::Challenge => ca.challenged[w] += 1,
                Decision::Refuse => {
                    wr[2] += 1;
                    if ca.first_refusal.is_none() {
                        ca.first_refusal = Some((t, off));
                    }
                    ca.last_refusal = Some((t, off));
                    if let Some(IpAddr::V4(a)) = m.ip.map(canonical) {
                        let a = u32::from(a);
                        *ca.refused_ip4.entry(a).or_default() += 1;
                        *ca.refused_net4.entry(a & self.v4_mask).or_default() += 1;
                    } else {
                        let (v4, v6) = (self.opts.v4_len, self.opts.v6_len);
                        let (ip_key, prefix_key) = client_keys(m.ip, m.name_key, v4, v6);
                        if let Some(k) = ip_key {
                            *ca.refused_ip.entry(k).or_default() += 1;
                        }
                        if let Some(k) = prefix_key {
                            *ca.refused_prefix.entry(k).or_default() += 1;
                        }
                    }
                    let a = m.agent as usize;
                    if a >= ca.refused_agent.len() {
                        ca.refused_agent.resize(a + 1, 0);
                    }
                    ca.refused_agent[a] += 1;
                }
                _ => {}
            }
            if let Some(cap) = &mut ca.cap {
                cap.add(t, local_ms, !refused);
            }
        }
    }
}

/// The address and network keys of a row's client (a host name is both).
#[inline]
pub(super) fn client_keys(
    ip: Option<IpAddr>,
    name_key: Option<ClientKey>,
    v4: u8,
    v6: u8,
) -> (Option<ClientKey>, Option<ClientKey>) {
    match (ip, name_key) {
        (Some(ip), _) => (
            Some(ClientKey::addr(ip)),
            Some(ClientKey::prefix(ip, v4, v6)),
        ),
        (None, k) => (k, k),
    }
}
