//! [`ReportAcc::finish`]: the accumulator turned into a [`ReplayReport`], in named
//! steps — close the last bucket, fold the IPv4 refusal counts into the keyed ones,
//! find each candidate's most refused keys and count their traffic in one pass over the
//! rows, build each candidate's report, then the refusals over time with their gaps.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use rustc_hash::FxHashMap;

use super::acc::{CandAcc, CapAcc, ReportAcc, client_keys};
use super::buckets::{Bucket, TimeBuckets};
use super::labels::{agent_label, letter, stamp};
use super::model::{
    BanRow, BanSummary, CandidateReport, ClassRow, ClassTotal, KeyRow, Load, LoggedRefusals,
    ReplayReport, RetryAfter, RuleRow, TimeGap, TimeRow, TopRefused, ZoneRow,
};
use super::options::ReportContext;
use super::rows::{RowStore, Who};
use crate::classify::{Classifier, ClientKey};
use crate::net::canonical;
use crate::number::{pct1, share, thousands};
use crate::replay::{Counters, Policy, Replay};

/// Keys with their refusals, most refused first.
type Counted = Vec<(ClientKey, u64)>;

/// Selected requests of the most refused keys: `[as an address, as a network]`.
type Totals = FxHashMap<ClientKey, [u64; 2]>;

/// What every candidate's report is built from, besides its own accumulator.
struct Shared<'a> {
    labels: &'a [String],
    policies: &'a [Policy],
    counters: &'a [Counters],
    totals: &'a Totals,
    cls: &'a Classifier,
    ctx: &'a ReportContext,
}

impl ReportAcc {
    /// The report. `replay` is the replay that produced the verdicts (its counters and
    /// zones are read), `store` the rows it replayed (read again, in any order, for the
    /// traffic of the most refused networks and addresses), `cls` the classifier that
    /// labelled them. Fails if the store's runs on disk cannot be read.
    pub fn finish(
        mut self,
        replay: &Replay,
        store: &RowStore,
        cls: &Classifier,
        ctx: ReportContext,
    ) -> std::io::Result<ReplayReport> {
        let span = self.first.zip(self.last).map_or(0, |(f, l)| l.0 - f.0);
        let time = std::mem::replace(&mut self.time, TimeBuckets::new(Some(1), None, 0));
        let (bucket_ms, buckets) = time.finish(span);
        let mut warnings: Vec<String> = self.approximate_warning().into_iter().collect();
        let server_time = replay.policies().iter().any(|p| {
            p.zones()
                .iter()
                .any(|z| z.spec().cost == crate::replay::CostKind::RequestTime)
        });
        if server_time && self.waits.is_none() {
            warnings.push(
                "cost=request-time charges the logged request time, which on a saturated backend is mostly queueing: give --workers C (the backend's workers) to charge the service time instead"
                    .into(),
            );
        } else if server_time {
            warnings.push(
                "cost=request-time charges the service time: the logged request time without the queueing of the backend's --workers (see \"Waiting\")"
                    .into(),
            );
        }
        let labels: Vec<String> = (0..self.cands.len()).map(letter).collect();
        let tops = self.top_keys(cls);
        let totals = self.traffic_of(&tops, store)?;
        let shared = Shared {
            labels: &labels,
            policies: replay.policies(),
            counters: replay.counters(),
            totals: &totals,
            cls,
            ctx: &ctx,
        };
        let cands = std::mem::take(&mut self.cands);
        let (waiting, waits) = match self.waits.as_ref().map(|w| w.finish()) {
            Some((w, c)) => (Some(w), c),
            None => (None, Vec::new()),
        };
        let mut waits = waits.into_iter();
        let mut candidates = Vec::with_capacity(cands.len());
        for (c, (ca, top)) in cands.into_iter().zip(tops).enumerate() {
            let mut report = self.candidate(c, ca, top, &shared);
            report.wait = waits.next();
            warnings.extend(report.warnings.iter().cloned());
            candidates.push(report);
        }
        let (over_time, gaps) = over_time(bucket_ms, &buckets);
        Ok(ReplayReport {
            origin: ctx.origin,
            selection: ctx.selection,
            tz: ctx.tz,
            records: ctx.records,
            requests: self.requests,
            first: self.first.map(|(t, o)| stamp(t, o)),
            last: self.last.map(|(t, o)| stamp(t, o)),
            second_resolution: self.second,
            logged_refusals: LoggedRefusals {
                statuses: self.opts.refusal_statuses.clone(),
                replayed: self.logged,
                dropped: ctx.dropped_logged,
            },
            capacity: self.opts.capacity,
            bucket_ms,
            internal: (!ctx.internal.is_empty()).then_some(ctx.internal),
            classes: Who::ALL
                .iter()
                .map(|&w| ClassTotal {
                    class: w,
                    name: w.label(),
                    requests: self.who_total[w.index()],
                })
                .collect(),
            candidates,
            over_time,
            gaps,
            warnings,
            fleet: None,
            waiting,
            sweep: None,
        })
    }

    /// The warning that decisions are approximate, when some requests carry 1-second
    /// timestamps.
    fn approximate_warning(&self) -> Option<String> {
        (self.second > 0).then(|| {
            format!(
                "APPROXIMATE: {} of {} requests carry 1-second timestamps (e.g. the combined format); \
                 requests within one second were spread evenly in log order. A real nginx disagreed \
                 with such a replay on 12-25% of decisions: read these figures as estimates, and log \
                 $msec and $request_time (or use Caddy's JSON log) for an exact replay.",
                thousands(self.second),
                thousands(self.requests)
            )
        })
    }

    /// Every candidate's most refused networks and addresses (the IPv4 ones, counted by
    /// their bits, turned into keys as they are read: no second table of every refused
    /// address).
    fn top_keys(&self, cls: &Classifier) -> Vec<(Counted, Counted)> {
        let top = self.opts.top;
        let (v4, v6) = (self.opts.v4_len, self.opts.v6_len);
        self.cands
            .iter()
            .map(|ca| {
                let nets = ca
                    .refused_net4
                    .iter()
                    .map(|(&a, &n)| (ClientKey::prefix(IpAddr::V4(Ipv4Addr::from(a)), v4, v6), n));
                let addrs = ca
                    .refused_ip4
                    .iter()
                    .map(|(&a, &n)| (ClientKey::addr(IpAddr::V4(Ipv4Addr::from(a))), n));
                (
                    most(
                        ca.refused_prefix.iter().map(|(k, n)| (*k, *n)).chain(nets),
                        top,
                        cls,
                    ),
                    most(
                        ca.refused_ip.iter().map(|(k, n)| (*k, *n)).chain(addrs),
                        top,
                        cls,
                    ),
                )
            })
            .collect()
    }

    /// The selected requests of every key in `tops`, in one pass over the rows.
    fn traffic_of(&self, tops: &[(Counted, Counted)], store: &RowStore) -> std::io::Result<Totals> {
        let (v4, v6) = (self.opts.v4_len, self.opts.v6_len);
        let mut totals = Totals::default();
        // The IPv4 ones also by their bits (addresses, networks): counted without
        // building a key per row, then folded into `totals`.
        let mut ip4: FxHashMap<u32, u64> = FxHashMap::default();
        let mut net4: FxHashMap<u32, u64> = FxHashMap::default();
        for (p, i) in tops {
            for (k, _) in p {
                totals.entry(*k).or_default();
                if let Some(b) = v4_bits(k) {
                    net4.insert(b, 0);
                }
            }
            for (k, _) in i {
                totals.entry(*k).or_default();
                if let Some(b) = v4_bits(k) {
                    ip4.insert(b, 0);
                }
            }
        }
        if totals.is_empty() {
            return Ok(totals);
        }
        let mask = self.v4_mask;
        // The IPv4 networks of the keys (and of the addresses), as bits of a small
        // filter: most rows' networks are none of them and are passed over after one
        // test instead of two map look-ups.
        let near_bit = |net: u32| (net.wrapping_mul(0x9E37_79B1) >> 16) as usize;
        let mut near = vec![0u64; (1 << 16) / 64];
        for n in net4.keys().copied().chain(ip4.keys().map(|a| a & mask)) {
            near[near_bit(n) / 64] |= 1 << (near_bit(n) % 64);
        }
        let near = &near;
        // Two threads (each a share of the runs on disk), each counting into its own
        // copy of the maps; the copies are added up after.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
        let parts = store.fold_clients(
            threads,
            || (ip4.clone(), net4.clone(), totals.clone()),
            |(ip4, net4, totals), ip, name_key, rows| {
                if let Some(IpAddr::V4(a)) = ip.map(canonical) {
                    let a = u32::from(a);
                    let b = near_bit(a & mask);
                    if near[b / 64] & (1 << (b % 64)) == 0 {
                        return;
                    }
                    if let Some(n) = ip4.get_mut(&a) {
                        *n += rows;
                    }
                    if let Some(n) = net4.get_mut(&(a & mask)) {
                        *n += rows;
                    }
                    return;
                }
                let (ik, pk) = client_keys(ip, name_key, v4, v6);
                if let Some(t) = ik.and_then(|k| totals.get_mut(&k)) {
                    t[0] += rows;
                }
                if let Some(t) = pk.and_then(|k| totals.get_mut(&k)) {
                    t[1] += rows;
                }
            },
        )?;
        for (i4, n4, t) in parts {
            for (a, n) in i4 {
                *ip4.entry(a).or_default() += n;
            }
            for (a, n) in n4 {
                *net4.entry(a).or_default() += n;
            }
            for (k, [a, b]) in t {
                let e = totals.entry(k).or_default();
                e[0] += a;
                e[1] += b;
            }
        }
        for (&a, &n) in &ip4 {
            let k = ClientKey::addr(IpAddr::V4(Ipv4Addr::from(a)));
            if let Some(t) = totals.get_mut(&k) {
                t[0] += n;
            }
        }
        for (&a, &n) in &net4 {
            let k = ClientKey::prefix(IpAddr::V4(Ipv4Addr::from(a)), v4, v6);
            if let Some(t) = totals.get_mut(&k) {
                t[1] += n;
            }
        }
        Ok(totals)
    }

    /// Candidate `c`'s report from its accumulator and its most refused keys.
    fn candidate(
        &self,
        c: usize,
        ca: CandAcc,
        (top_prefix, top_ip): (Counted, Counted),
        sh: &Shared<'_>,
    ) -> CandidateReport {
        let p = &sh.policies[c];
        let k = sh.counters[c];
        let mut warnings = self.candidate_warnings(&sh.labels[c], p, &ca, sh.ctx);
        let classes = self.class_rows(&ca);
        let bans = ban_summary(p, &ca);
        if let Some(b) = &bans {
            warnings.extend(ban_warnings(&sh.labels[c], p, b));
        }
        let top_refused = TopRefused {
            prefixes: key_rows(top_prefix, sh.totals, 1, sh.cls),
            ips: key_rows(top_ip, sh.totals, 0, sh.cls),
            agents: top_agents(&ca.refused_agent, &self.agent_total, self.opts.top, sh.cls),
        };
        CandidateReport {
            label: sh.labels[c].clone(),
            name: p.name().to_string(),
            description: p.describe(),
            dialect: p.dialect().name(),
            requests: k.requests,
            covered: k.requests - k.out_of_scope,
            in_scope: k.in_scope,
            admitted: k.admitted,
            delayed: k.delayed,
            refused: k.refused,
            challenged: k.challenged,
            exempt: k.exempt,
            credentials_refused: p.credentials_refused(),
            retry_after: retry_after(&ca.retry, ca.retry_never),
            out_of_scope: k.out_of_scope,
            admitted_share: share(k.admitted, k.in_scope),
            delayed_share: share(k.delayed, k.in_scope),
            refused_share: share(k.refused, k.in_scope),
            delay_ms_max: k.delay_ms_max,
            delay_ms_mean: if k.delayed == 0 {
                0.0
            } else {
                k.delay_ms_total as f64 / k.delayed as f64
            },
            boundary: k.boundary,
            first_refusal: ca.first_refusal.map(|(t, o)| stamp(t, o)),
            last_refusal: ca.last_refusal.map(|(t, o)| stamp(t, o)),
            logged_refusals: ca.logged,
            load: ca.cap.map(load),
            classes,
            top_refused,
            rules: rule_rows(p, &ca.rules),
            zones: zone_rows(p),
            bans,
            warnings,
            wait: None,
        }
    }

    /// Warnings when a candidate would refuse internal services or identified users.
    fn candidate_warnings(
        &self,
        label: &str,
        p: &Policy,
        ca: &CandAcc,
        ctx: &ReportContext,
    ) -> Vec<String> {
        let mut cw = Vec::new();
        let ident = ca.who[Who::Identified.index()][2];
        let internal = ca.who[Who::Internal.index()][2];
        if internal > 0 {
            cw.push(format!(
                "WARNING: {} ({}) would refuse {} requests of your own services ({}). \
                 Your own traffic in the refused list is a bug report: exempt it by \
                 credential or address before deploying.",
                label,
                p.name(),
                thousands(internal),
                if ctx.internal.is_empty() {
                    "exempt-listed".to_string()
                } else {
                    ctx.internal.clone()
                }
            ));
        }
        if ident > 0 {
            cw.push(format!(
                "WARNING: {} ({}) would refuse {} requests of identified (logged-in) users, \
                 {} of theirs.",
                label,
                p.name(),
                thousands(ident),
                pct1(ident, self.who_total[Who::Identified.index()])
            ));
        }
        if p.needs_anonymous() && self.requests > 0 {
            let k = ca.who.iter().map(|w| w[0]).sum::<u64>();
            if k == 0 {
                cw.push(format!(
                    "{} ({}) limits anonymous clients, and no request is known anonymous: \
                     anonymous means no Cookie header where the log records it (Caddy's JSON \
                     log), or no user name where the rules say `anonymous_without_user = \
                     true`; otherwise a client is unknown, never anonymous — the requests \
                     `--anonymous` selects. This limit applies to nothing here.",
                    label,
                    p.name(),
                ));
            }
        }
        if p.credentials_refused() > 0 {
            cw.push(format!(
                "{} ({}): {} requests named exempt credentials the server refused (a \
                 credential refusal status, 401/403/407 unless --credential-refusals says \
                 otherwise): they were judged, not exempt — a forged token logged under a \
                 service's name is not the service.",
                label,
                p.name(),
                thousands(p.credentials_refused())
            ));
        }
        cw
    }

    /// Per class: covered, exempt, refused, delayed under one candidate.
    fn class_rows(&self, ca: &CandAcc) -> Vec<ClassRow> {
        Who::ALL
            .iter()
            .map(|&w| {
                let r = ca.who[w.index()];
                ClassRow {
                    class: w,
                    requests: self.who_total[w.index()],
                    covered: r[0],
                    exempt: r[1],
                    refused: r[2],
                    delayed: r[3],
                    challenged: ca.challenged[w.index()],
                    refused_share: share(r[2], self.who_total[w.index()]),
                }
            })
            .collect()
    }
}

/// The buckets with requests, and the runs of empty buckets between them.
fn over_time(w: i64, buckets: &BTreeMap<i64, Bucket>) -> (Vec<TimeRow>, Vec<TimeGap>) {
    let mut gaps = Vec::new();
    let mut prev: Option<(i64, i64)> = None;
    let over_time = buckets
        .iter()
        .enumerate()
        .map(|(i, (&start, b))| {
            if let Some((ps, off)) = prev {
                // Empty buckets on the wall clock that also passed in real time (a
                // clock turned forward skips buckets without a gap).
                let from = ps + w;
                let n = ((start - from) / w).min((start - b.offset_ms - (from - off)) / w);
                if n > 0 {
                    gaps.push(TimeGap {
                        start: stamp(from - off, off),
                        end: stamp(start - b.offset_ms, b.offset_ms),
                        buckets: n as u64,
                        local_ms: from,
                        end_local_ms: start,
                        before: i,
                    });
                }
            }
            prev = Some((start, b.offset_ms));
            TimeRow {
                start: stamp(start - b.offset_ms, b.offset_ms),
                local_ms: start,
                requests: b.requests,
                candidates: b.cells.clone(),
            }
        })
        .collect();
    (over_time, gaps)
}

/// A ban candidate's bans: every ban of its ban zones, in start order, with the class
/// of its trigger and of its lost requests. `None` for a candidate without ban zones.
fn ban_summary(p: &Policy, ca: &CandAcc) -> Option<BanSummary> {
    if ca.bans.is_empty() {
        return None;
    }
    let mut s = BanSummary::default();
    let mut counted_by = Vec::new();
    let mut keys: std::collections::BTreeSet<(usize, &[u8])> = Default::default();
    let mut rows: Vec<(i64, usize, BanRow)> = Vec::new();
    for b in &ca.bans {
        let z = &p.zones()[b.zone];
        let Some(bz) = z.ban() else { continue };
        let k = bz.counters();
        s.counted += k.counted;
        s.bans += k.bans;
        s.lost += k.lost;
        s.challenged += k.challenged;
        counted_by.push(match z.count_filter() {
            Some(f) => f.describe(),
            None => "every request".to_string(),
        });
        for (i, r) in bz.bans().iter().enumerate() {
            keys.insert((b.zone, &r.key));
            let (trigger, by, off) = b.per_ban.get(i).copied().unwrap_or((Who::Other, [0; 5], 0));
            match trigger {
                Who::Identified => s.identified_bans += 1,
                Who::Internal => s.internal_bans += 1,
                _ => {}
            }
            s.lost_identified += by[Who::Identified.index()];
            s.lost_internal += by[Who::Internal.index()];
            rows.push((
                r.start_ms,
                rows.len(),
                BanRow {
                    zone: z.name().to_string(),
                    key: crate::replay::key_text(&z.spec().key, &r.key),
                    start: stamp(r.start_ms, off),
                    end: (r.end_ms != i64::MAX).then(|| stamp(r.end_ms, off)),
                    length_ms: r.length_ms(),
                    nth: r.nth,
                    lost: r.lost,
                    extended: r.extended,
                    trigger_class: trigger,
                    lost_by_class: by,
                },
            ));
        }
    }
    rows.sort_by_key(|r| (r.0, r.1));
    s.banned_keys = keys.len() as u64;
    s.list = rows.into_iter().map(|r| r.2).collect();
    counted_by.dedup();
    s.counted_by = counted_by.join("; ");
    Some(s)
}

/// Warnings when bans hit identified users or internal services.
fn ban_warnings(label: &str, p: &Policy, b: &BanSummary) -> Vec<String> {
    let mut w = Vec::new();
    if b.internal_bans > 0 || b.lost_internal > 0 {
        w.push(format!(
            "WARNING: {label} ({}) would ban your own services: {} bans started by them, {} of their requests lost. Put their addresses in ignoreip / --exempt before deploying.",
            p.name(),
            thousands(b.internal_bans),
            thousands(b.lost_internal)
        ));
    }
    if b.identified_bans > 0 || b.lost_identified > 0 {
        w.push(format!(
            "WARNING: {label} ({}) would ban identified (logged-in) users: {} bans started by them, {} of their requests lost.",
            p.name(),
            thousands(b.identified_bans),
            thousands(b.lost_identified)
        ));
    }
    w
}

/// The passed load against the capacity, from one candidate's windows and peaks.
fn load(cap: CapAcc) -> Load {
    let n = cap.cap.count();
    let at = |(cnt, t, off): (u64, i64, i64)| (cnt > 0).then(|| stamp(t, off));
    Load {
        windows: cap.windows.len() as u64,
        over_without: cap.windows.values().filter(|w| w[0] > n).count() as u64,
        over_with: cap.windows.values().filter(|w| w[1] > n).count() as u64,
        peak_without: cap.peak[0].0,
        peak_without_at: at(cap.peak[0]),
        peak_with: cap.peak[1].0,
        peak_with_at: at(cap.peak[1]),
    }
}

/// Per rule: in scope, admitted, delayed, refused, exempt.
fn rule_rows(p: &Policy, counts: &[[u64; 5]]) -> Vec<RuleRow> {
    p.rules()
        .iter()
        .zip(counts)
        .map(|(r, n)| RuleRow {
            name: r.name.clone(),
            in_scope: n[0],
            admitted: n[1],
            delayed: n[2],
            refused: n[3],
            exempt: n[4],
        })
        .collect()
}

/// Per zone: its limit and what it judged.
fn zone_rows(p: &Policy) -> Vec<ZoneRow> {
    p.zones()
        .iter()
        .map(|z| {
            let zc = z.counters();
            ZoneRow {
                name: z.name().to_string(),
                limit: {
                    let mut spec = z.spec().clone();
                    spec.name = None;
                    spec.to_string()
                },
                checked: zc.checked,
                passed: zc.passed,
                delayed: zc.delayed,
                refused: zc.refused,
                peak_keys: z.peak_keys(),
            }
        })
        .collect()
}

/// The bits of an IPv4 address or network key.
fn v4_bits(k: &ClientKey) -> Option<u32> {
    match *k {
        ClientKey::Net { lo, v4: true, .. } => Some((lo & 0xffff_ffff) as u32),
        _ => None,
    }
}

/// The `n` most refused keys, ties in key order.
/// The `n` keys with the most refusals (ties by key), keeping no more than `2n` at a
/// time: the keys are disjoint (IPv4 ones come only from the by-bits tables).
fn most(refused: impl Iterator<Item = (ClientKey, u64)>, n: usize, cls: &Classifier) -> Counted {
    if n == 0 {
        return Vec::new();
    }
    let order = |a: &(ClientKey, u64), b: &(ClientKey, u64)| {
        b.1.cmp(&a.1).then_with(|| cls.key_cmp(a.0, b.0))
    };
    let mut v: Vec<(ClientKey, u64)> = Vec::new();
    for x in refused {
        v.push(x);
        if v.len() >= 2 * n.max(512) {
            v.select_nth_unstable_by(n - 1, order);
            v.truncate(n);
        }
    }
    v.sort_by(order);
    v.truncate(n);
    v
}

fn key_rows(top: Counted, totals: &Totals, which: usize, cls: &Classifier) -> Vec<KeyRow> {
    top.into_iter()
        .map(|(k, r)| {
            let all = totals.get(&k).map_or(r, |t| t[which].max(r));
            KeyRow {
                key: cls.key_label(k),
                refused: r,
                requests: all,
                refused_share: share(r, all),
            }
        })
        .collect()
}

fn top_agents(refused: &[u64], total: &[u64], n: usize, cls: &Classifier) -> Vec<KeyRow> {
    // Several ids can share a label only if the classifier's infos differ in a field
    // the label leaves out; merge them.
    let mut by_label: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (id, &r) in refused.iter().enumerate().filter(|(_, r)| **r > 0) {
        let e = by_label.entry(agent_label(cls, id as u32)).or_default();
        e.0 += r;
        e.1 += total.get(id).copied().unwrap_or(r);
    }
    let mut v: Vec<(String, (u64, u64))> = by_label.into_iter().collect();
    v.sort_by(|a, b| b.1.0.cmp(&a.1.0).then_with(|| a.0.cmp(&b.0)));
    v.truncate(n);
    v.into_iter()
        .map(|(key, (r, all))| KeyRow {
            key,
            refused: r,
            requests: all,
            refused_share: share(r, all),
        })
        .collect()
}

/// The `Retry-After` summary of one candidate's refusals (nearest rank).
fn retry_after(told: &BTreeMap<u64, u64>, never: u64) -> Option<RetryAfter> {
    let n: u64 = told.values().sum();
    if n == 0 && never == 0 {
        return None;
    }
    let at = |q: f64| {
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n.max(1));
        let mut seen = 0;
        for (&s, &c) in told {
            seen += c;
            if seen >= rank {
                return s;
            }
        }
        0
    };
    Some(RetryAfter {
        refused: n,
        p50_s: at(0.5),
        p95_s: at(0.95),
        max_s: told.keys().next_back().copied().unwrap_or(0),
        never,
    })
}
