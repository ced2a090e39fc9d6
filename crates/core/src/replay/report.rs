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

mod decisions;
mod render;
mod rows;

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};

use rustc_hash::FxHashMap;
use serde::Serialize;

pub use decisions::{DecisionsWriter, HEADER as DECISIONS_HEADER};
pub use rows::{InternalMarks, Needs, RowInput, RowMeta, RowStore, SpillOptions, Who};

use super::canonical;
use super::engine::{Decision, Replay, Verdict};
use super::policy::Policy;
use crate::classify::{Classifier, ClientKey};
use crate::forensics::share;
use crate::time::civil_from_days;

/// A capacity: `count` requests per `window_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Capacity {
    /// Requests the server can take per window.
    pub count: u64,
    /// Window length, ms.
    pub window_ms: i64,
}

/// How the report is computed.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// Server capacity to hold the passed load against.
    pub capacity: Option<Capacity>,
    /// Width of the refusals-over-time buckets, ms (aligned on the report's clock).
    pub bucket_ms: i64,
    /// Rows per top-refused list.
    pub top: usize,
    /// Statuses that mean "refused by a deployed limiter" in the log.
    pub refusal_statuses: Vec<u16>,
    /// IPv4 prefix length for the top-refused networks.
    pub v4_len: u8,
    /// IPv6 prefix length.
    pub v6_len: u8,
}

/// Bucket widths tried by [`auto_bucket`].
const WIDTHS: [i64; 14] = [
    1_000,
    10_000,
    60_000,
    300_000,
    600_000,
    900_000,
    1_800_000,
    3_600_000,
    10_800_000,
    21_600_000,
    43_200_000,
    86_400_000,
    604_800_000,
    2_592_000_000,
];

/// A bucket width for `span_ms` of log: the capacity window when it gives at most 200
/// rows, else the smallest round width giving at most 48.
pub fn auto_bucket(span_ms: i64, capacity: Option<Capacity>) -> i64 {
    if let Some(c) = capacity
        && c.window_ms > 0
        && span_ms / c.window_ms < 200
    {
        return c.window_ms;
    }
    WIDTHS
        .into_iter()
        .find(|w| span_ms / w < 48)
        .unwrap_or(WIDTHS[WIDTHS.len() - 1])
}

/// An instant as RFC 3339 in whole seconds, in a zone `offset_ms` from UTC.
pub fn stamp_secs(utc_ms: i64, offset_ms: i64) -> String {
    let s = stamp(utc_ms - utc_ms.rem_euclid(1000), offset_ms);
    s.replacen(".000", "", 1)
}

/// A UTC instant as RFC 3339 with milliseconds (`2026-09-25T05:00:00.123Z`).
pub fn utc_ms_label(utc_ms: i64) -> String {
    stamp(utc_ms, 0)
}

/// An instant as RFC 3339 with milliseconds in a zone `offset_ms` from UTC.
pub fn stamp(utc_ms: i64, offset_ms: i64) -> String {
    let local = utc_ms + offset_ms;
    let days = local.div_euclid(86_400_000);
    let rem = local.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let s = rem / 1000;
    let base = format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}",
        s / 3600,
        s % 3600 / 60,
        s % 60,
        rem % 1000
    );
    if offset_ms == 0 {
        return base + "Z";
    }
    let sign = if offset_ms < 0 { '-' } else { '+' };
    let o = offset_ms.unsigned_abs() / 60_000;
    format!("{base}{sign}{:02}:{:02}", o / 60, o % 60)
}

/// A bucket start in local time, as short as the table allows: `HH:MM` (`HH:MM:SS`
/// below a minute) when every bucket is on one day, `MM-DD HH:MM` within one year,
/// else `YYYY-MM-DD HH:MM`; whole days as dates.
fn bucket_label(local_ms: i64, width_ms: i64, scope: LabelScope) -> String {
    let days = local_ms.div_euclid(86_400_000);
    let rem = local_ms.rem_euclid(86_400_000) / 1000;
    let (y, m, d) = civil_from_days(days);
    let date = match scope {
        LabelScope::Day => String::new(),
        LabelScope::Year => format!("{m:02}-{d:02}"),
        LabelScope::Any => format!("{y:04}-{m:02}-{d:02}"),
    };
    if width_ms >= 86_400_000 && rem == 0 {
        return if date.is_empty() {
            format!("{y:04}-{m:02}-{d:02}")
        } else {
            date
        };
    }
    let mut t = format!("{:02}:{:02}", rem / 3600, rem % 3600 / 60);
    if width_ms < 60_000 {
        t.push_str(&format!(":{:02}", rem % 60));
    }
    if date.is_empty() {
        t
    } else {
        format!("{date} {t}")
    }
}

/// How much of the date bucket labels need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LabelScope {
    /// All buckets on one day.
    Day,
    /// All in one year.
    Year,
    /// Anything.
    Any,
}

impl LabelScope {
    fn of(first_local: i64, last_local: i64) -> LabelScope {
        let (a, b) = (
            first_local.div_euclid(86_400_000),
            last_local.div_euclid(86_400_000),
        );
        if a == b {
            LabelScope::Day
        } else if civil_from_days(a).0 == civil_from_days(b).0 {
            LabelScope::Year
        } else {
            LabelScope::Any
        }
    }

    /// The day or year the labels leave out, for the title.
    fn common(self, local: i64) -> Option<String> {
        let (y, m, d) = civil_from_days(local.div_euclid(86_400_000));
        match self {
            LabelScope::Day => Some(format!("{y:04}-{m:02}-{d:02}")),
            LabelScope::Year => Some(format!("{y:04}")),
            LabelScope::Any => None,
        }
    }
}

// ---------------------------------------------------------------------------------------
// The typed result.

/// The replay report (`--format json` serializes this).
#[derive(Clone, Debug, Serialize)]
pub struct ReplayReport {
    /// Where the rows came from.
    pub origin: String,
    /// The selection (filters, period).
    pub selection: String,
    /// The report's time zone.
    pub tz: String,
    /// Records read.
    pub records: u64,
    /// Requests replayed (selected, in decision-time order).
    pub requests: u64,
    /// First decision time.
    pub first: Option<String>,
    /// Last decision time.
    pub last: Option<String>,
    /// Requests whose log stamps whole seconds (decisions are then approximate).
    pub second_resolution: u64,
    /// Requests a deployed limiter already refused (status in `statuses`).
    pub logged_refusals: LoggedRefusals,
    /// The capacity, if given.
    pub capacity: Option<Capacity>,
    /// Bucket width of `over_time`, ms.
    pub bucket_ms: i64,
    /// What marks a request internal (exemptions and `--internal`), if anything.
    pub internal: Option<String>,
    /// Selected requests per class.
    pub classes: Vec<ClassTotal>,
    /// One entry per candidate, in command-line order.
    pub candidates: Vec<CandidateReport>,
    /// Per bucket with requests: requests and, per candidate, covered / refused /
    /// passed.
    pub over_time: Vec<TimeRow>,
    /// Runs of buckets without a request between the first and the last bucket of
    /// `over_time`, in time order (absent from JSON when there is none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<TimeGap>,
    /// Warnings (approximate timestamps, identified users or internal services refused).
    pub warnings: Vec<String>,
}

/// Requests already refused in the log.
#[derive(Clone, Debug, Serialize)]
pub struct LoggedRefusals {
    /// The statuses that count as refusals.
    pub statuses: Vec<u16>,
    /// How many were replayed.
    pub replayed: u64,
    /// How many were left out (`--drop-logged-refusals`).
    pub dropped: u64,
}

/// Selected requests of one class.
#[derive(Clone, Debug, Serialize)]
pub struct ClassTotal {
    /// The class.
    pub class: Who,
    /// Its name in reports.
    pub name: &'static str,
    /// Selected requests.
    pub requests: u64,
}

/// What one candidate did.
#[derive(Clone, Debug, Serialize)]
pub struct CandidateReport {
    /// Column label in tables (`A`, `B`, …).
    pub label: String,
    /// The candidate's name (its spec, `name=`, or the config's name).
    pub name: String,
    /// The candidate in words: scope, algorithm, key, cost (zones and rules of a config).
    pub description: String,
    /// How several limits combine (`nginx` or `caddy`).
    pub dialect: &'static str,
    /// Requests fed.
    pub requests: u64,
    /// Requests a rule covered (in scope + exempt).
    pub covered: u64,
    /// Requests limited (admitted + delayed + refused).
    pub in_scope: u64,
    /// Passed at once.
    pub admitted: u64,
    /// Passed after a delay.
    pub delayed: u64,
    /// Refused.
    pub refused: u64,
    /// Covered but exempt.
    pub exempt: u64,
    /// Not covered.
    pub out_of_scope: u64,
    /// `admitted / in_scope`.
    pub admitted_share: f64,
    /// `delayed / in_scope`.
    pub delayed_share: f64,
    /// `refused / in_scope`.
    pub refused_share: f64,
    /// Longest delay, ms.
    pub delay_ms_max: u32,
    /// Mean delay of the delayed requests, ms.
    pub delay_ms_mean: f64,
    /// nginx zones: decisions on a 1 ms boundary (a replay may differ from the server).
    pub boundary: u64,
    /// First refusal.
    pub first_refusal: Option<String>,
    /// Last refusal.
    pub last_refusal: Option<String>,
    /// What the candidate did with requests the log shows as refused already.
    pub logged_refusals: LoggedFate,
    /// The passed load against the capacity.
    pub load: Option<Load>,
    /// Per class: covered, exempt, refused, delayed.
    pub classes: Vec<ClassRow>,
    /// The most refused networks, addresses and agents.
    pub top_refused: TopRefused,
    /// Per rule (location, Caddy zone matcher).
    pub rules: Vec<RuleRow>,
    /// Per zone.
    pub zones: Vec<ZoneRow>,
    /// Warnings about this candidate.
    pub warnings: Vec<String>,
}

/// Requests refused in the log, under a candidate.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct LoggedFate {
    /// Covered by the candidate.
    pub covered: u64,
    /// Refused by it too.
    pub refused: u64,
    /// Delayed by it.
    pub delayed: u64,
    /// Admitted at once by it.
    pub admitted: u64,
}

/// Passed load per capacity window.
#[derive(Clone, Debug, Serialize)]
pub struct Load {
    /// Windows (aligned on the report's clock) with covered requests.
    pub windows: u64,
    /// Of them, above the capacity without the limit.
    pub over_without: u64,
    /// Above the capacity with the limit (counting what it passes).
    pub over_with: u64,
    /// Most covered requests in any window of the capacity's length (sliding).
    pub peak_without: u64,
    /// When that window ended.
    pub peak_without_at: Option<String>,
    /// Most passed requests in any window of the capacity's length (sliding).
    pub peak_with: u64,
    /// When that window ended.
    pub peak_with_at: Option<String>,
}

/// One class under one candidate.
#[derive(Clone, Debug, Serialize)]
pub struct ClassRow {
    /// The class.
    pub class: Who,
    /// Selected requests of the class.
    pub requests: u64,
    /// Covered by a rule.
    pub covered: u64,
    /// Exempt.
    pub exempt: u64,
    /// Delayed.
    pub delayed: u64,
    /// Refused.
    pub refused: u64,
    /// `refused / requests`.
    pub refused_share: f64,
}

/// The most refused keys of three kinds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TopRefused {
    /// Networks (/24, /48 by default).
    pub prefixes: Vec<KeyRow>,
    /// Addresses.
    pub ips: Vec<KeyRow>,
    /// Agent families.
    pub agents: Vec<KeyRow>,
}

/// One refused key.
#[derive(Clone, Debug, Serialize)]
pub struct KeyRow {
    /// The key as text (log-derived: escape before printing).
    pub key: String,
    /// Refused requests.
    pub refused: u64,
    /// All its selected requests.
    pub requests: u64,
    /// `refused / requests`: the share of its own traffic refused.
    pub refused_share: f64,
}

/// One rule of a candidate.
#[derive(Clone, Debug, Serialize)]
pub struct RuleRow {
    /// The rule's name.
    pub name: String,
    /// Limited requests.
    pub in_scope: u64,
    /// Admitted.
    pub admitted: u64,
    /// Delayed.
    pub delayed: u64,
    /// Refused.
    pub refused: u64,
    /// Exempt.
    pub exempt: u64,
}

/// One zone of a candidate.
#[derive(Clone, Debug, Serialize)]
pub struct ZoneRow {
    /// The zone's name.
    pub name: String,
    /// Its limit as a spec.
    pub limit: String,
    /// Requests it judged.
    pub checked: u64,
    /// Let through (including delayed).
    pub passed: u64,
    /// Delayed.
    pub delayed: u64,
    /// Refused.
    pub refused: u64,
    /// Most keys held at once.
    pub peak_keys: usize,
}

/// One bucket of the refusals-over-time table.
#[derive(Clone, Debug, Serialize)]
pub struct TimeRow {
    /// Bucket start (RFC 3339, the report's zone).
    pub start: String,
    /// Bucket start on the report's wall clock, ms.
    #[serde(skip)]
    pub local_ms: i64,
    /// Selected requests.
    pub requests: u64,
    /// Per candidate.
    pub candidates: Vec<TimeCell>,
}

/// Buckets without a request between two of `over_time`: nothing in `[start, end)`.
#[derive(Clone, Debug, Serialize)]
pub struct TimeGap {
    /// Start of the first empty bucket (RFC 3339, the report's zone).
    pub start: String,
    /// End (exclusive): the start of the next bucket with requests.
    pub end: String,
    /// Empty buckets.
    pub buckets: u64,
    /// Start on the report's wall clock, ms.
    #[serde(skip)]
    pub local_ms: i64,
    /// End on the report's wall clock, ms.
    #[serde(skip)]
    pub end_local_ms: i64,
    /// Index in `over_time` of the bucket right after the gap.
    #[serde(skip)]
    pub before: usize,
}

/// One candidate in one bucket.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct TimeCell {
    /// Covered (the load without the limit).
    pub covered: u64,
    /// Refused.
    pub refused: u64,
    /// Passed (covered minus refused: the load with the limit).
    pub passed: u64,
}

// ---------------------------------------------------------------------------------------
// The accumulator.

#[derive(Default)]
struct Bucket {
    offset_ms: i64,
    requests: u64,
    cells: Vec<TimeCell>,
}

struct CapAcc {
    cap: Capacity,
    windows: BTreeMap<i64, [u64; 2]>,
    cov: VecDeque<i64>,
    pass: VecDeque<i64>,
    peak: [(u64, i64, i64); 2],
}

impl CapAcc {
    fn add(&mut self, utc: i64, local: i64, passed: bool) {
        let w = self.cap.window_ms;
        let start = local.div_euclid(w) * w;
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
struct CandAcc {
    /// Per class: covered, exempt, refused, delayed.
    who: [[u64; 4]; 5],
    /// Refusals per address and network that is not IPv4 (folded together with the
    /// IPv4 ones in [`ReportAcc::finish`]).
    refused_ip: FxHashMap<ClientKey, u64>,
    refused_prefix: FxHashMap<ClientKey, u64>,
    /// Refusals per IPv4 address and network, by their bits: entries a third the size
    /// of a [`ClientKey`]'s, so a storm's addresses stay in cache.
    refused_ip4: FxHashMap<u32, u64>,
    refused_net4: FxHashMap<u32, u64>,
    /// Refusals per agent id.
    refused_agent: Vec<u64>,
    first_refusal: Option<(i64, i64)>,
    last_refusal: Option<(i64, i64)>,
    logged: LoggedFate,
    /// Per rule: in scope, admitted, delayed, refused, exempt.
    rules: Vec<[u64; 5]>,
    cap: Option<CapAcc>,
}

/// Accumulates the report while the rows are replayed.
pub struct ReportAcc {
    opts: ReportOptions,
    requests: u64,
    second: u64,
    logged: u64,
    first: Option<(i64, i64)>,
    last: Option<(i64, i64)>,
    who_total: [u64; 5],
    agent_total: Vec<u64>,
    buckets: BTreeMap<i64, Bucket>,
    cur: Option<(i64, Bucket)>,
    cands: Vec<CandAcc>,
    /// The IPv4 network mask of `opts.v4_len`.
    v4_mask: u32,
}

/// What the report header says about the run.
#[derive(Clone, Debug, Default)]
pub struct ReportContext {
    /// Where the rows came from.
    pub origin: String,
    /// The selection in words.
    pub selection: String,
    /// The time zone's name.
    pub tz: String,
    /// Records read.
    pub records: u64,
    /// Logged refusals left out.
    pub dropped_logged: u64,
    /// What marks internal requests, in words (empty: nothing).
    pub internal: String,
}

impl ReportAcc {
    /// An accumulator for these candidates.
    pub fn new(policies: &[Policy], opts: ReportOptions) -> ReportAcc {
        let cands = policies
            .iter()
            .map(|p| CandAcc {
                rules: vec![[0; 5]; p.rules().len()],
                cap: opts.capacity.filter(|c| c.window_ms > 0).map(|cap| CapAcc {
                    cap,
                    windows: BTreeMap::new(),
                    cov: VecDeque::new(),
                    pass: VecDeque::new(),
                    peak: [(0, 0, 0); 2],
                }),
                ..CandAcc::default()
            })
            .collect();
        ReportAcc {
            opts: ReportOptions {
                bucket_ms: opts.bucket_ms.max(1),
                ..opts
            },
            requests: 0,
            second: 0,
            logged: 0,
            first: None,
            last: None,
            who_total: [0; 5],
            agent_total: Vec::new(),
            buckets: BTreeMap::new(),
            cur: None,
            cands,
            v4_mask: match opts.v4_len.min(32) {
                0 => 0,
                len => u32::MAX << (32 - len),
            },
        }
    }

    fn bucket(&mut self, local: i64, utc: i64) -> &mut Bucket {
        let w = self.opts.bucket_ms;
        let start = local.div_euclid(w) * w;
        if self.cur.as_ref().is_none_or(|(s, _)| *s != start) {
            if let Some((s, b)) = self.cur.take() {
                merge_bucket(&mut self.buckets, s, b);
            }
            let b = self.buckets.remove(&start).unwrap_or_else(|| Bucket {
                offset_ms: local - utc,
                requests: 0,
                cells: vec![TimeCell::default(); self.cands.len()],
            });
            self.cur = Some((start, b));
        }
        &mut self.cur.as_mut().expect("set above").1
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
        self.bucket(local_ms, t).requests += 1;
        for (c, v) in verdicts.iter().enumerate() {
            let d = v.decision;
            if d == Decision::OutOfScope {
                continue;
            }
            let refused = d == Decision::Refuse;
            let cell = &mut self.bucket(local_ms, t).cells[c];
            cell.covered += 1;
            cell.refused += u64::from(refused);
            cell.passed += u64::from(!refused);
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
        if let Some((s, b)) = self.cur.take() {
            merge_bucket(&mut self.buckets, s, b);
        }
        let mut warnings = Vec::new();
        if self.second > 0 {
            warnings.push(format!(
                "APPROXIMATE: {} of {} requests carry 1-second timestamps (e.g. the combined format); \
                 requests within one second were spread evenly in log order. A real nginx disagreed \
                 with such a replay on 12-25% of decisions: read these figures as estimates, and log \
                 $msec and $request_time (or use Caddy's JSON log) for an exact replay.",
                thousands(self.second),
                thousands(self.requests)
            ));
        }
        let labels: Vec<String> = (0..self.cands.len()).map(letter).collect();
        let (v4, v6) = (self.opts.v4_len, self.opts.v6_len);
        for ca in &mut self.cands {
            for (&a, &n) in &ca.refused_ip4 {
                let k = ClientKey::addr(IpAddr::V4(Ipv4Addr::from(a)));
                *ca.refused_ip.entry(k).or_default() += n;
            }
            for (&a, &n) in &ca.refused_net4 {
                let k = ClientKey::prefix(IpAddr::V4(Ipv4Addr::from(a)), v4, v6);
                *ca.refused_prefix.entry(k).or_default() += n;
            }
        }
        // The most refused keys of every candidate, then one pass for their traffic.
        let top = self.opts.top;
        let tops: Vec<(Counted, Counted)> = self
            .cands
            .iter()
            .map(|ca| {
                (
                    most(&ca.refused_prefix, top, cls),
                    most(&ca.refused_ip, top, cls),
                )
            })
            .collect();
        let mut totals: FxHashMap<ClientKey, [u64; 2]> = FxHashMap::default();
        // The IPv4 ones also by their bits (addresses, networks): counted without
        // building a key per row, then folded into `totals`.
        let mut ip4: FxHashMap<u32, u64> = FxHashMap::default();
        let mut net4: FxHashMap<u32, u64> = FxHashMap::default();
        for (p, i) in &tops {
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
        if !totals.is_empty() {
            let mask = self.v4_mask;
            store.for_each_client(|ip, name_key| {
                if let Some(IpAddr::V4(a)) = ip.map(canonical) {
                    let a = u32::from(a);
                    if let Some(n) = ip4.get_mut(&a) {
                        *n += 1;
                    }
                    if let Some(n) = net4.get_mut(&(a & mask)) {
                        *n += 1;
                    }
                    return;
                }
                let (ik, pk) = client_keys(ip, name_key, v4, v6);
                if let Some(t) = ik.and_then(|k| totals.get_mut(&k)) {
                    t[0] += 1;
                }
                if let Some(t) = pk.and_then(|k| totals.get_mut(&k)) {
                    t[1] += 1;
                }
            })?;
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
        }
        let counters = replay.counters();
        let policies = replay.policies();
        let mut candidates = Vec::new();
        let cands = std::mem::take(&mut self.cands);
        for (c, (ca, (top_prefix, top_ip))) in cands.into_iter().zip(tops).enumerate() {
            let p = &policies[c];
            let k = counters[c];
            let mut cw = Vec::new();
            let ident = ca.who[Who::Identified.index()][2];
            let internal = ca.who[Who::Internal.index()][2];
            if internal > 0 {
                cw.push(format!(
                    "WARNING: {} ({}) would refuse {} requests of your own services ({}). \
                     Your own traffic in the refused list is a bug report: exempt it by \
                     credential or address before deploying.",
                    labels[c],
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
                    labels[c],
                    p.name(),
                    thousands(ident),
                    pct(ident, self.who_total[Who::Identified.index()])
                ));
            }
            warnings.extend(cw.iter().cloned());
            let classes = Who::ALL
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
                        refused_share: share(r[2], self.who_total[w.index()]),
                    }
                })
                .collect();
            let top_refused = TopRefused {
                prefixes: key_rows(top_prefix, &totals, 1, cls),
                ips: key_rows(top_ip, &totals, 0, cls),
                agents: top_agents(&ca.refused_agent, &self.agent_total, top, cls),
            };
            let rules = p
                .rules()
                .iter()
                .zip(&ca.rules)
                .map(|(r, n)| RuleRow {
                    name: r.name.clone(),
                    in_scope: n[0],
                    admitted: n[1],
                    delayed: n[2],
                    refused: n[3],
                    exempt: n[4],
                })
                .collect();
            let zones = p
                .zones()
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
                .collect();
            let load = ca.cap.map(|cap| {
                let n = cap.cap.count;
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
            });
            candidates.push(CandidateReport {
                label: labels[c].clone(),
                name: p.name().to_string(),
                description: p.describe(),
                dialect: p.dialect().name(),
                requests: k.requests,
                covered: k.requests - k.out_of_scope,
                in_scope: k.in_scope,
                admitted: k.admitted,
                delayed: k.delayed,
                refused: k.refused,
                exempt: k.exempt,
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
                load,
                classes,
                top_refused,
                rules,
                zones,
                warnings: cw,
            });
        }
        let w = self.opts.bucket_ms;
        let mut gaps = Vec::new();
        let mut prev: Option<(i64, i64)> = None;
        let over_time = self
            .buckets
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
                            start: stamp_secs(from - off, off),
                            end: stamp_secs(start - b.offset_ms, b.offset_ms),
                            buckets: n as u64,
                            local_ms: from,
                            end_local_ms: start,
                            before: i,
                        });
                    }
                }
                prev = Some((start, b.offset_ms));
                TimeRow {
                    start: stamp_secs(start - b.offset_ms, b.offset_ms),
                    local_ms: start,
                    requests: b.requests,
                    candidates: b.cells.clone(),
                }
            })
            .collect();
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
            bucket_ms: self.opts.bucket_ms,
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
        })
    }
}

fn merge_bucket(map: &mut BTreeMap<i64, Bucket>, start: i64, b: Bucket) {
    match map.get_mut(&start) {
        None => {
            map.insert(start, b);
        }
        Some(old) => {
            old.requests += b.requests;
            for (o, n) in old.cells.iter_mut().zip(&b.cells) {
                o.covered += n.covered;
                o.refused += n.refused;
                o.passed += n.passed;
            }
        }
    }
}

/// Keys with their refusals, most refused first.
type Counted = Vec<(ClientKey, u64)>;

/// The bits of an IPv4 address or network key.
fn v4_bits(k: &ClientKey) -> Option<u32> {
    match *k {
        ClientKey::Net { bits, v4: true, .. } => Some((bits & 0xffff_ffff) as u32),
        _ => None,
    }
}

/// The address and network keys of a row's client (a host name is both).
#[inline]
fn client_keys(
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

/// The `n` most refused keys, ties in key order.
fn most(refused: &FxHashMap<ClientKey, u64>, n: usize, cls: &Classifier) -> Counted {
    let mut v: Vec<(ClientKey, u64)> = refused.iter().map(|(k, c)| (*k, *c)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| cls.key_cmp(a.0, b.0)));
    v.truncate(n);
    v
}

fn key_rows(
    top: Counted,
    totals: &FxHashMap<ClientKey, [u64; 2]>,
    which: usize,
    cls: &Classifier,
) -> Vec<KeyRow> {
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

/// An agent's label for the top list: the crawler's or tool's name, else
/// `family (device)`.
pub fn agent_label(cls: &Classifier, id: u32) -> String {
    let a = cls.agents.info(id);
    if a.bot.is_some() || a.family == a.label {
        a.family.clone()
    } else {
        format!("{} ({})", a.family, a.device)
    }
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

/// `A`, `B`, … `Z`, `AA`, `AB`, …
fn letter(i: usize) -> String {
    let mut s = String::new();
    let mut n = i + 1;
    while n > 0 {
        n -= 1;
        s.insert(0, (b'A' + (n % 26) as u8) as char);
        n /= 26;
    }
    s
}

fn thousands(n: u64) -> String {
    crate::forensics::thousands(n)
}

fn pct(n: u64, d: u64) -> String {
    crate::forensics::pct1(n, d)
}

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
        Ok(())
    }
}

/// Replays `store` (sorted) through `replay` into `acc`, handing every request's
/// verdicts to `decisions` when given. `local` maps UTC ms to the report's wall clock;
/// it is asked once per 15 minutes of log (no time zone changes offset more often).
/// Fails if the decisions cannot be written or the store's runs on disk cannot be read.
pub fn run(
    store: &RowStore,
    replay: &mut Replay,
    acc: &mut ReportAcc,
    local: &dyn Fn(i64) -> i64,
    mut decisions: Option<&mut dyn DecisionSink>,
) -> std::io::Result<()> {
    const SLOT: i64 = 15 * 60_000;
    let mut verdicts: Vec<Verdict> = Vec::with_capacity(replay.policies().len());
    let mut slot = (i64::MIN, 0i64);
    store.for_each_sorted(|req, meta| {
        let t = meta.arrival_ms;
        let s = t.div_euclid(SLOT);
        if s != slot.0 {
            slot = (s, local(s * SLOT) - s * SLOT);
        }
        verdicts.clear();
        verdicts.extend_from_slice(replay.decide(req));
        acc.add(meta, t + slot.1, &verdicts);
        if let Some(w) = decisions.as_deref_mut() {
            w.decided(
                store.file_name(meta.file),
                meta,
                req,
                replay.policies(),
                &verdicts,
            )?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests;
