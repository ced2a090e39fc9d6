//! `logscope heavy`: requests and heavy requests per time bucket, with the distinct
//! addresses and prefixes the heavy ones came from, the largest prefix and its share,
//! the dominant agent class, and buckets whose peak goes over a capacity.

use std::collections::BTreeMap;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use std::fmt::Write as _;

use super::doc::{Doc, Figure, Section};
use super::{bucket_label, duration_label};
use crate::chart::{self, RefLine, Series, Shade, TimeSeries};
use crate::classify::{AgentId, Classifier, ClientKey, HeavyClass, RowClass};
use crate::number::{pct1, share, thousands};
use crate::rate::Rate;
use crate::table::{Align, Cell, Style, Table, bar, fraction_data, sparkline};
use crate::time::{align, local_rfc3339_ms};

mod part;
pub use part::{HeavyPart, PartSpec};

/// Runs of up to this many empty buckets between the first and the last are shown
/// bucket by bucket; a longer run is one [`HeavyGap`] (a row "gap" in tables), so that
/// a report is as long as its data, never cut, and an outage stays visible.
pub const MAX_EMPTY_BUCKETS: i64 = 24;

/// Gaps listed one by one under the table (all are rows of it, and in JSON).
const GAPS_LISTED: usize = 20;

/// The widths an automatic bucket width is chosen from (`report --by auto`): 1m, 5m,
/// 10m, 30m, 1h, 3h, 6h, 1d, 1w — each a multiple of the one before, so buckets of one
/// merge exactly into buckets of the next.
pub const AUTO_WIDTHS: [i64; 9] = [
    60_000,
    300_000,
    600_000,
    1_800_000,
    3_600_000,
    10_800_000,
    21_600_000,
    86_400_000,
    604_800_000,
];

/// An automatic width gives at most this many buckets from the first row to the last.
pub const AUTO_MAX_BUCKETS: i64 = 400;

/// The automatic bucket width for rows from `first` to `last` (local ms, on the
/// report's clock): the smallest of [`AUTO_WIDTHS`], and not below `floor`, whose
/// aligned buckets ([`align`]) from the first row's to the last row's number at most
/// [`AUTO_MAX_BUCKETS`] (the widest when none does: a span of more than 400 weeks).
pub fn auto_width(first: i64, last: i64, floor: i64) -> i64 {
    AUTO_WIDTHS
        .into_iter()
        .filter(|&w| w >= floor)
        .find(|&w| !too_many(first, last, w))
        .unwrap_or(AUTO_WIDTHS[AUTO_WIDTHS.len() - 1])
}

/// Whether the aligned buckets `w` wide from `first`'s to `last`'s are more than
/// [`AUTO_MAX_BUCKETS`].
fn too_many(first: i64, last: i64, w: i64) -> bool {
    (align(last, w) - align(first, w)) / w >= AUTO_MAX_BUCKETS
}

/// The narrowest automatic width with `capacity`: the smallest of [`AUTO_WIDTHS`] at
/// least its window (the peak per aligned window is then the bucket's own count when
/// the window is one of them), else the smallest.
pub fn auto_floor(capacity: Option<Rate>) -> i64 {
    match capacity {
        None => AUTO_WIDTHS[0],
        Some(c) => AUTO_WIDTHS
            .into_iter()
            .find(|&w| w >= c.window_ms() as i64)
            .unwrap_or(AUTO_WIDTHS[AUTO_WIDTHS.len() - 1]),
    }
}

#[derive(Default)]
struct Bucket {
    requests: u64,
    heavy: u64,
    offset_ms: i64,
    /// The order in which buckets were opened: of two merged buckets, the offset of the
    /// one opened first (by the first row to arrive) is kept.
    seq: u64,
    ips: FxHashSet<ClientKey>,
    prefixes: FxHashMap<ClientKey, u64>,
    agents: FxHashMap<AgentId, u64>,
}

impl Bucket {
    /// Adds `o`'s rows (the same bucket, filled at another time, or a bucket it holds);
    /// the offset stays that of the bucket opened first.
    fn merge(&mut self, o: Bucket) {
        if o.seq < self.seq {
            (self.offset_ms, self.seq) = (o.offset_ms, o.seq);
        }
        self.requests += o.requests;
        self.heavy += o.heavy;
        self.ips.extend(o.ips);
        for (k, n) in o.prefixes {
            *self.prefixes.entry(k).or_default() += n;
        }
        for (k, n) in o.agents {
            *self.agents.entry(k).or_default() += n;
        }
    }
}

/// Accumulates `logscope heavy`.
///
/// Rows come nearly in time order, so the bucket being filled is held apart from the
/// map (`open`) and only goes into it when a row of another bucket arrives: one map
/// look-up per bucket change instead of one per row. The whole selection's distinct
/// addresses and prefixes are the union of the buckets', worked out at the end.
///
/// With an automatic width ([`HeavyAcc::auto`]) the rows are counted in buckets of the
/// smallest width of [`AUTO_WIDTHS`] that the span so far allows, and the buckets are
/// merged into wider ones as the span grows: every count is a sum, every set a union,
/// the peaks come from the capacity windows (which do not depend on the width) and the
/// offset is the first-opened bucket's, so the result is exactly that of counting at
/// the final width from the start, with at most a few hundred buckets held.
pub struct HeavyAcc {
    width_ms: i64,
    /// An automatic width: the first and last local times seen so far (`None` before the
    /// first row).
    auto: Option<Option<(i64, i64)>>,
    /// Buckets opened so far.
    opened: u64,
    capacity: Option<Rate>,
    buckets: BTreeMap<i64, Bucket>,
    open: Option<(i64, Bucket)>,
    windows: FxHashMap<i64, u64>,
    requests: u64,
    heavy: u64,
    /// Heavy requests per class id.
    classes: Vec<u64>,
    networks: Option<std::sync::Arc<super::netdb::NetworkDb>>,
}

impl HeavyAcc {
    /// Also names each bucket's and the selection's largest autonomous system, from
    /// `db` (the AS of each prefix's first address: exact for prefixes no wider than a
    /// /24 or /48, the longest routed; memory: one entry per distinct prefix).
    pub fn with_networks(mut self, db: std::sync::Arc<super::netdb::NetworkDb>) -> HeavyAcc {
        self.networks = Some(db);
        self
    }

    /// Buckets of `width_ms` (aligned in local time), optional capacity.
    pub fn new(width_ms: i64, capacity: Option<Rate>) -> HeavyAcc {
        HeavyAcc {
            width_ms: width_ms.max(1),
            auto: None,
            opened: 0,
            capacity,
            buckets: BTreeMap::new(),
            open: None,
            windows: FxHashMap::default(),
            requests: 0,
            heavy: 0,
            classes: Vec::new(),
            networks: None,
        }
    }

    /// Buckets of the width [`auto_width`] gives the span of the rows added (local
    /// time), not below [`auto_floor`]`(capacity)`, at which parts to add are worked out.
    pub fn auto(capacity: Option<Rate>) -> HeavyAcc {
        HeavyAcc {
            auto: Some(None),
            ..HeavyAcc::new(auto_floor(capacity), capacity)
        }
    }

    /// The bucket width now (with an automatic width, it only grows).
    pub fn width_ms(&self) -> i64 {
        self.width_ms
    }

    /// With an automatic width: notes a row at `local` ms, widening the buckets when
    /// the span outgrows the width.
    #[inline]
    fn note(&mut self, local: i64) {
        match self.auto {
            None => {}
            Some(Some((lo, hi))) if lo <= local && local <= hi => {}
            Some(span) => self.span_grew(span, local),
        }
    }

    fn span_grew(&mut self, span: Option<(i64, i64)>, local: i64) {
        let (lo, hi) = span.map_or((local, local), |(lo, hi)| (lo.min(local), hi.max(local)));
        self.auto = Some(Some((lo, hi)));
        let w = self.width_ms;
        if too_many(lo, hi, w) {
            self.widen(auto_width(lo, hi, w));
        }
    }

    /// The same buckets at `w` (a multiple of the width).
    fn widen(&mut self, w: i64) {
        self.close();
        let mut wide: BTreeMap<i64, Bucket> = BTreeMap::new();
        for (s, b) in std::mem::take(&mut self.buckets) {
            match wide.entry(align(s, w)) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(b);
                }
                std::collections::btree_map::Entry::Occupied(mut e) => e.get_mut().merge(b),
            }
        }
        self.buckets = wide;
        self.width_ms = w;
    }

    /// The bucket starting at `start` (local ms), opened for `local_ms - utc_ms`.
    #[inline]
    fn bucket(&mut self, start: i64, offset_ms: i64) -> &mut Bucket {
        if self.open.as_ref().is_some_and(|(s, _)| *s != start) {
            self.close();
        }
        let buckets = &mut self.buckets;
        let opened = &mut self.opened;
        let (_, b) = self.open.get_or_insert_with(|| {
            let b = buckets.remove(&start).unwrap_or_else(|| {
                *opened += 1;
                Bucket {
                    offset_ms,
                    seq: *opened,
                    ..Bucket::default()
                }
            });
            (start, b)
        });
        b
    }

    /// Puts the open bucket into the map.
    fn close(&mut self) {
        if let Some((start, b)) = self.open.take() {
            match self.buckets.entry(start) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(b);
                }
                std::collections::btree_map::Entry::Occupied(mut e) => e.get_mut().merge(b),
            }
        }
    }

    /// Adds one selected row that arrived at `utc_ms`, `local_ms` on the report's clock.
    #[inline]
    pub fn add(&mut self, utc_ms: i64, local_ms: i64, rc: &RowClass) {
        self.note(local_ms);
        let start = align(local_ms, self.width_ms);
        self.requests += 1;
        let heavy = rc.heavy.is_heavy();
        if heavy {
            self.heavy += 1;
            let c = usize::from(rc.heavy.0);
            if c >= self.classes.len() {
                self.classes.resize(c + 1, 0);
            }
            self.classes[c] += 1;
            if let Some(cap) = self.capacity {
                let cw = cap.window_ms() as i64;
                *self.windows.entry(align(local_ms, cw)).or_default() += 1;
            }
        }
        let b = self.bucket(start, local_ms - utc_ms);
        b.requests += 1;
        if !heavy {
            return;
        }
        b.heavy += 1;
        b.ips.insert(rc.client);
        *b.prefixes.entry(rc.prefix).or_default() += 1;
        *b.agents.entry(rc.agent).or_default() += 1;
    }

    /// The result. `zone` names the clock of the buckets (`UTC`, `Asia/Seoul`).
    pub fn finish(
        mut self,
        cls: &Classifier,
        zone: &str,
        selection: &str,
        origin: &str,
    ) -> HeavyReport {
        self.close();
        // The whole selection's distinct addresses (every bucket's set together: the
        // largest part of this step, which runs after the last row) on another core,
        // while this one works out the rest.
        let acc = &self;
        std::thread::scope(|s| {
            let ips = std::thread::Builder::new()
                .name("heavy-ips".into())
                .spawn_scoped(s, || acc.distinct_ips())
                .ok();
            let distinct_ips = move || match ips {
                Some(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
                None => acc.distinct_ips(),
            };
            acc.report(cls, zone, selection, origin, distinct_ips)
        })
    }

    /// The distinct addresses of every bucket together.
    fn distinct_ips(&self) -> u64 {
        let mut ips: FxHashSet<ClientKey> = FxHashSet::default();
        for b in self.buckets.values() {
            ips.extend(b.ips.iter().copied());
        }
        ips.len() as u64
    }

    /// [`HeavyAcc::finish`] once the buckets are closed, `distinct_ips` giving the
    /// number of distinct addresses.
    fn report(
        &self,
        cls: &Classifier,
        zone: &str,
        selection: &str,
        origin: &str,
        distinct_ips: impl FnOnce() -> u64,
    ) -> HeavyReport {
        let w = self.width_ms;
        // The whole selection's prefixes: the buckets' together.
        let mut prefixes: FxHashMap<ClientKey, u64> = FxHashMap::default();
        for b in self.buckets.values() {
            for (&k, &n) in &b.prefixes {
                *prefixes.entry(k).or_default() += n;
            }
        }
        // With a network database: each prefix's AS, and the largest AS of a tally.
        let prefix_as: FxHashMap<ClientKey, u32> = match &self.networks {
            Some(db) => prefixes
                .keys()
                .filter_map(|&k| Some((k, db.asn_number(k.net()?.network())?)))
                .collect(),
            None => FxHashMap::default(),
        };
        let top_as = |counts: &FxHashMap<ClientKey, u64>, heavy: u64| -> Option<(String, f64)> {
            let db = self.networks.as_ref()?;
            let mut per: std::collections::BTreeMap<u32, (u64, ClientKey)> = Default::default();
            for (k, &n) in counts {
                if let Some(&a) = prefix_as.get(k) {
                    let e = per.entry(a).or_insert((0, *k));
                    e.0 += n;
                }
            }
            let (a, (n, k)) = per
                .into_iter()
                .max_by(|x, y| x.1.0.cmp(&y.1.0).then(y.0.cmp(&x.0)))?;
            let label = k
                .net()
                .and_then(|net| db.as_label(net.network()))
                .unwrap_or_else(|| format!("AS{a}"));
            Some((label, share(n, heavy)))
        };
        // Capacity windows with heavy requests, in time order.
        let mut windows: Vec<(i64, u64)> = self.windows.iter().map(|(&k, &v)| (k, v)).collect();
        windows.sort_unstable();
        let capacity = self.capacity;
        // The most heavy requests in one capacity window starting in the bucket, or
        // containing its start.
        let peak_of = |start: i64| {
            capacity.map(|c| {
                let cw = c.window_ms() as i64;
                let first = align(start, cw);
                let i = windows.partition_point(|&(ws, _)| ws < first);
                windows[i..]
                    .iter()
                    .take_while(|&&(ws, _)| ws < start + w)
                    .map(|&(_, n)| n)
                    .max()
                    .unwrap_or(0)
            })
        };
        let row = |start: i64, b: &Bucket| {
            let top = top_of(&b.prefixes, |a, b| cls.key_cmp(a, b));
            let agent = top_of(&b.agents, |a, b| {
                cls.agents
                    .info(a)
                    .label
                    .cmp(&cls.agents.info(b).label)
                    .then(a.cmp(&b))
            });
            let peak = peak_of(start);
            let (top_as, top_as_share) = top_as(&b.prefixes, b.heavy).unzip();
            HeavyBucket {
                top_as,
                top_as_share,
                start: local_rfc3339_ms(start, b.offset_ms),
                label: bucket_label(start, w),
                start_utc_ms: start - b.offset_ms,
                start_local_ms: start,
                requests: b.requests,
                heavy: b.heavy,
                distinct_ips: b.ips.len() as u64,
                distinct_prefixes: b.prefixes.len() as u64,
                top_prefix: top.map(|(k, _)| cls.key_label(k)),
                top_prefix_requests: top.map_or(0, |(_, c)| c),
                top_prefix_share: top.map_or(0.0, |(_, c)| share(c, b.heavy)),
                agent: agent.map(|(a, _)| cls.agents.info(a).label.clone()),
                agent_share: agent.map_or(0.0, |(_, c)| share(c, b.heavy)),
                peak,
                over_capacity: match (peak, capacity) {
                    (Some(p), Some(c)) => p > c.count(),
                    _ => false,
                },
            }
        };
        let empty = |offset_ms: i64| Bucket {
            offset_ms,
            ..Bucket::default()
        };
        let mut buckets = Vec::with_capacity(self.buckets.len());
        let mut gaps = Vec::new();
        let mut prev: Option<(i64, i64)> = None;
        for (&start, b) in &self.buckets {
            if let Some((ps, off)) = prev {
                // Empty buckets [from, start): the ends whose capacity window still holds
                // heavy requests one by one, the rest one by one too when few, else a gap.
                let from = ps + w;
                let n = (start - from) / w;
                let busy = |k: i64| peak_of(from + k * w).is_some_and(|p| p > 0);
                let mut lead = 0;
                while lead < n && busy(lead) {
                    lead += 1;
                }
                let mut trail = n;
                while trail > lead && busy(trail - 1) {
                    trail -= 1;
                }
                if trail - lead <= MAX_EMPTY_BUCKETS {
                    (lead, trail) = (n, n);
                }
                for k in 0..lead {
                    buckets.push(row(from + k * w, &empty(off)));
                }
                if trail > lead {
                    let (gs, ge) = (from + lead * w, from + trail * w);
                    let end_off = if trail == n { b.offset_ms } else { off };
                    gaps.push(HeavyGap {
                        start: local_rfc3339_ms(gs, off),
                        label: bucket_label(gs, w),
                        start_utc_ms: gs - off,
                        start_local_ms: gs,
                        end_local_ms: ge,
                        end: local_rfc3339_ms(ge, end_off),
                        end_label: bucket_label(ge, w),
                        end_utc_ms: ge - end_off,
                        buckets: (trail - lead) as u64,
                        before: buckets.len(),
                    });
                }
                for k in trail..n {
                    buckets.push(row(from + k * w, &empty(off)));
                }
            }
            buckets.push(row(start, b));
            prev = Some((start, b.offset_ms));
        }
        let top = top_of(&prefixes, |a, b| cls.key_cmp(a, b));
        let mut classes: Vec<ClassCount> = self
            .classes
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n > 0)
            .map(|(c, &n)| ClassCount {
                class: cls.heavy.name(HeavyClass(c as u16)).to_string(),
                requests: n,
            })
            .collect();
        classes.sort_by(|a, b| {
            b.requests
                .cmp(&a.requests)
                .then_with(|| a.class.cmp(&b.class))
        });
        let (top_as, top_as_share) = top_as(&prefixes, self.heavy).unzip();
        HeavyReport {
            top_as,
            top_as_share,
            origin: origin.to_string(),
            by: duration_label(w),
            width_ms: w,
            auto_width: self.auto.is_some(),
            zone: zone.to_string(),
            selection: selection.to_string(),
            heavy_rules: cls.heavy.describe(),
            prefix_v4: cls.v4_len,
            prefix_v6: cls.v6_len,
            capacity: self.capacity.map(|c| CapacityOut {
                count: c.count(),
                window: duration_label(c.window_ms() as i64),
            }),
            requests: self.requests,
            heavy: self.heavy,
            distinct_ips: distinct_ips(),
            distinct_prefixes: prefixes.len() as u64,
            top_prefix: top.map(|(k, _)| cls.key_label(k)),
            top_prefix_requests: top.map_or(0, |(_, c)| c),
            top_prefix_share: top.map_or(0.0, |(_, c)| share(c, self.heavy)),
            buckets_over_capacity: buckets.iter().filter(|b| b.over_capacity).count() as u64,
            classes,
            buckets,
            gaps,
        }
    }
}

/// The largest count; ties go to the smallest key by `cmp`.
fn top_of<K: Copy>(
    m: &FxHashMap<K, u64>,
    cmp: impl Fn(K, K) -> std::cmp::Ordering,
) -> Option<(K, u64)> {
    let mut best: Option<(K, u64)> = None;
    for (&k, &c) in m {
        best = match best {
            Some((bk, bc)) if bc > c || (bc == c && cmp(bk, k).is_le()) => Some((bk, bc)),
            _ => Some((k, c)),
        };
    }
    best
}

/// A capacity as printed.
#[derive(Clone, Debug, Serialize)]
pub struct CapacityOut {
    /// Heavy requests per window.
    pub count: u64,
    /// The window (`10m`).
    pub window: String,
}

impl CapacityOut {
    /// The one name of the peak in every format: `peak per aligned 10m` (the most heavy
    /// requests in one clock-aligned window, 14:00–14:10, 14:10–14:20, …; replay's
    /// peak is `peak per sliding 10m`).
    pub fn peak_label(&self) -> String {
        format!("peak per aligned {}", self.window)
    }

    /// Its column header in tables (short, so that the table fits 80 columns; the
    /// note under the table names it [`CapacityOut::peak_label`]): `peak*`.
    pub fn peak_header(&self) -> String {
        "peak*".into()
    }

    /// Its CSV column name: `peak_aligned_10m`.
    pub fn peak_column(&self) -> String {
        format!("peak_aligned_{}", self.window)
    }
}

/// Heavy requests of one class.
#[derive(Clone, Debug, Serialize)]
pub struct ClassCount {
    /// Class name (`search`, `diff` …).
    pub class: String,
    /// Requests.
    pub requests: u64,
}

/// One time bucket.
#[derive(Clone, Debug, Serialize)]
pub struct HeavyBucket {
    /// Start, RFC 3339 in the report's zone.
    pub start: String,
    /// Start as shown in tables (`2026-09-25 14:00`).
    #[serde(skip)]
    pub label: String,
    /// Start, UTC ms (JSON has the instant once: `start`).
    #[serde(skip)]
    pub start_utc_ms: i64,
    /// Start on the report's clock (local wall time as if UTC, ms), for charts.
    #[serde(skip)]
    pub start_local_ms: i64,
    /// Selected requests.
    pub requests: u64,
    /// Heavy requests among them.
    pub heavy: u64,
    /// Distinct client addresses of the heavy requests.
    pub distinct_ips: u64,
    /// Distinct prefixes of the heavy requests.
    pub distinct_prefixes: u64,
    /// The prefix with the most heavy requests.
    pub top_prefix: Option<String>,
    /// Its heavy requests.
    pub top_prefix_requests: u64,
    /// Its share of the bucket's heavy requests (0–1).
    pub top_prefix_share: f64,
    /// With a network database: the autonomous system with the most heavy requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_as: Option<String>,
    /// Its share of the bucket's heavy requests (0–1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_as_share: Option<f64>,
    /// The agent class with the most heavy requests.
    pub agent: Option<String>,
    /// Its share of the bucket's heavy requests (0–1).
    pub agent_share: f64,
    /// With a capacity: the most heavy requests in one capacity window overlapping the bucket.
    pub peak: Option<u64>,
    /// Whether that peak is above the capacity.
    pub over_capacity: bool,
}

/// The result of `logscope heavy`.
#[derive(Clone, Debug, Serialize)]
pub struct HeavyReport {
    /// Where the rows came from.
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub origin: String,
    /// Bucket width (`1h`).
    pub by: String,
    /// Bucket width, ms.
    #[serde(skip)]
    pub width_ms: i64,
    /// Whether the width was chosen from the span of the rows ([`auto_width`]).
    #[serde(skip)]
    pub auto_width: bool,
    /// Clock of the buckets.
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub zone: String,
    /// The filter, described.
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub selection: String,
    /// The heavy rules, described.
    pub heavy_rules: String,
    /// IPv4 prefix length.
    pub prefix_v4: u8,
    /// IPv6 prefix length.
    pub prefix_v6: u8,
    /// `--capacity`.
    pub capacity: Option<CapacityOut>,
    /// Selected requests.
    pub requests: u64,
    /// Heavy requests among them.
    pub heavy: u64,
    /// Distinct addresses of the heavy requests.
    pub distinct_ips: u64,
    /// Distinct prefixes of the heavy requests.
    pub distinct_prefixes: u64,
    /// The prefix with the most heavy requests over the period.
    pub top_prefix: Option<String>,
    /// With a network database: the autonomous system with the most heavy requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_as: Option<String>,
    /// Its share of the heavy requests (0–1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_as_share: Option<f64>,
    /// Its heavy requests.
    pub top_prefix_requests: u64,
    /// Its share (0–1).
    pub top_prefix_share: f64,
    /// Buckets above capacity.
    pub buckets_over_capacity: u64,
    /// Heavy requests per class, most first.
    pub classes: Vec<ClassCount>,
    /// The buckets, in time order: every bucket with requests, and the empty ones
    /// between them except those of [`HeavyReport::gaps`].
    pub buckets: Vec<HeavyBucket>,
    /// Runs of more than [`MAX_EMPTY_BUCKETS`] empty buckets, in time order, each
    /// standing for all of its buckets (absent from JSON when there is none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<HeavyGap>,
}

/// A run of empty buckets shown as one row: no selected request in `[start, end)`.
#[derive(Clone, Debug, Serialize)]
pub struct HeavyGap {
    /// Start of the first empty bucket, RFC 3339 in the report's zone.
    pub start: String,
    /// Start as shown in tables.
    #[serde(skip)]
    pub label: String,
    /// Start, UTC ms (JSON has the instant once: `start`).
    #[serde(skip)]
    pub start_utc_ms: i64,
    /// Start on the report's clock (ms), for charts.
    #[serde(skip)]
    pub start_local_ms: i64,
    /// End on the report's clock (ms), for charts.
    #[serde(skip)]
    pub end_local_ms: i64,
    /// End (exclusive): the start of the next bucket shown, RFC 3339.
    pub end: String,
    /// End as shown in tables.
    #[serde(skip)]
    pub end_label: String,
    /// End, UTC ms (JSON has the instant once: `end`).
    #[serde(skip)]
    pub end_utc_ms: i64,
    /// Empty buckets in the gap.
    pub buckets: u64,
    /// Index in [`HeavyReport::buckets`] of the bucket right after the gap.
    #[serde(skip)]
    pub before: usize,
}

impl HeavyReport {
    /// The report for a terminal of `width` columns: a bar column of heavy requests is
    /// added when there is room for one (at most 16 cells).
    pub fn doc_for_width(&self, width: usize) -> Doc {
        let plain = self.doc(0);
        let used = plain
            .sections
            .first()
            .and_then(|s| s.table.as_ref())
            .map_or(0, |t| {
                t.to_terminal(usize::MAX, false)
                    .lines()
                    .map(|l| l.chars().count())
                    .max()
                    .unwrap_or(0)
            });
        // A bar when there is room, else a one-character sparkline cell.
        let room = width.saturating_sub(used + 2).min(16);
        if room >= 1 { self.doc(room) } else { plain }
    }

    /// The report for people. `bar_width` > 0 adds a bar column (terminal).
    pub fn doc(&self, bar_width: usize) -> Doc {
        let pfx = format!("/{}", self.prefix_v4);
        let mut lines = vec![
            format!("source: {}", self.origin),
            format!("selection: {}", self.selection),
            format!("heavy: {}", self.heavy_rules),
            format!(
                "{} requests, {} heavy ({}) from {} addresses in {} prefixes (/{} IPv4, /{} IPv6)",
                thousands(self.requests),
                thousands(self.heavy),
                pct1(self.heavy, self.requests),
                thousands(self.distinct_ips),
                thousands(self.distinct_prefixes),
                self.prefix_v4,
                self.prefix_v6
            ),
        ];
        if let Some(t) = &self.top_prefix {
            lines.push(format!(
                "largest prefix: {t} with {} heavy requests ({})",
                thousands(self.top_prefix_requests),
                pct1(self.top_prefix_requests, self.heavy)
            ));
        }
        if let (Some(a), Some(sh)) = (&self.top_as, self.top_as_share) {
            lines.push(format!(
                "largest autonomous system: {a} with {:.1}% of the heavy requests",
                sh * 100.0
            ));
        }
        if !self.classes.is_empty() {
            let c: Vec<String> = self
                .classes
                .iter()
                .map(|c| format!("{} {}", c.class, thousands(c.requests)))
                .collect();
            lines.push(format!("heavy by class: {}", c.join(", ")));
        }
        if let Some(c) = &self.capacity {
            lines.push(format!(
                "capacity {}/{} heavy: {} of {} buckets went over ({} = most heavy requests in one clock-aligned {} window)",
                thousands(c.count),
                c.window,
                self.buckets_over_capacity,
                self.buckets.len() as u64 + self.gaps.iter().map(|g| g.buckets).sum::<u64>(),
                c.peak_label(),
                c.window
            ));
        }
        if let Some(longest) = self
            .gaps
            .iter()
            .max_by_key(|g| (g.buckets, std::cmp::Reverse(g.start_utc_ms)))
        {
            let n = self.gaps.len();
            lines.push(format!(
                "{n} gap{} without any request ({} empty buckets of {} in all), the longest from {} to {}",
                if n == 1 { "" } else { "s" },
                thousands(self.gaps.iter().map(|g| g.buckets).sum()),
                self.by,
                longest.start,
                longest.end
            ));
        }
        // Sub-day buckets within one year drop the year from the rows (it goes in the header).
        let year = |l: &str| l.get(..4).map(str::to_string);
        let one_year = !self.buckets.is_empty()
            && self
                .buckets
                .iter()
                .map(|b| &b.label)
                .chain(self.gaps.iter().flat_map(|g| [&g.label, &g.end_label]))
                .all(|l| l.len() > 10 && year(l) == year(&self.buckets[0].label));
        let head = "start".to_string();
        lines.insert(
            3,
            if one_year {
                format!(
                    "bucket starts are {} times in {}",
                    self.zone,
                    &self.buckets[0].label[..4]
                )
            } else {
                format!("bucket starts are {} times", self.zone)
            },
        );
        let mut cols: Vec<(String, Align)> = vec![
            (head, Align::Right),
            ("all".into(), Align::Right),
            ("heavy".into(), Align::Right),
            ("IPs".into(), Align::Right),
            (pfx.clone() + "s", Align::Right),
            (format!("top {pfx}, share"), Align::Right),
            ("agent".into(), Align::Left),
        ];
        // With a network database: each bucket's largest AS.
        let has_as = self.top_as.is_some();
        if has_as {
            cols.push(("top AS, share".into(), Align::Left));
        }
        if let Some(c) = &self.capacity {
            cols.push((c.peak_header(), Align::Right));
        }
        if bar_width > 0 {
            cols.push((String::new(), Align::Left));
        }
        let colrefs: Vec<(&str, Align)> = cols.iter().map(|(s, a)| (s.as_str(), *a)).collect();
        // Cut short, the table keeps the buckets with the most heavy requests (with
        // none, the most requests).
        let mut t = Table::new(&colrefs).ranked_by(if self.heavy > 0 { 2 } else { 1 });
        let short = |label: &str| {
            if one_year {
                label[5..].to_string()
            } else {
                label.to_string()
            }
        };
        let max = self.buckets.iter().map(|b| b.heavy).max().unwrap_or(0);
        let mut gaps = self.gaps.iter().peekable();
        for (i, b) in self.buckets.iter().enumerate() {
            while let Some(g) = gaps.next_if(|g| g.before <= i) {
                let mut row = vec![
                    Cell::from(short(&g.label)),
                    Cell::from("0"),
                    Cell::from("0"),
                    Cell::from("0"),
                    Cell::from("0"),
                    Cell::from(""),
                    Cell::styled(format!("gap: {} empty", thousands(g.buckets)), Style::Red),
                ];
                if has_as {
                    row.push(Cell::from(""));
                }
                if self.capacity.is_some() {
                    row.push(Cell::from("0"));
                }
                t.row(row);
            }
            let heavy_style = if b.over_capacity {
                Style::Red
            } else {
                Style::Plain
            };
            let mut row = vec![
                Cell::from(short(&b.label)),
                Cell::from(thousands(b.requests)),
                Cell::styled(thousands(b.heavy), heavy_style),
                Cell::from(thousands(b.distinct_ips)),
                Cell::from(thousands(b.distinct_prefixes)),
                Cell::from(match &b.top_prefix {
                    Some(t) if b.heavy > 0 => {
                        format!("{t} {}", pct1(b.top_prefix_requests, b.heavy))
                    }
                    _ => String::new(),
                }),
                Cell::from(b.agent.clone().unwrap_or_default()),
            ];
            if has_as {
                row.push(Cell::from(match (&b.top_as, b.top_as_share) {
                    (Some(a), Some(sh)) => format!("{a} {:.1}%", sh * 100.0),
                    _ => String::new(),
                }));
            }
            if let Some(p) = b.peak {
                let mark = if b.over_capacity { "!" } else { "" };
                row.push(Cell::styled(format!("{}{mark}", thousands(p)), heavy_style));
            }
            if bar_width >= 4 {
                row.push(Cell::styled(
                    bar(b.heavy as f64, max as f64, bar_width),
                    heavy_style,
                ));
            } else if bar_width > 0 {
                row.push(Cell::styled(
                    sparkline(&[b.heavy as f64, max as f64])[..]
                        .chars()
                        .next()
                        .map(String::from)
                        .unwrap_or_default(),
                    heavy_style,
                ));
            }
            t.row(row);
        }
        let mut notes = vec![format!(
            "all: selected requests; heavy: the heavy ones; IPs, {pfx}s, top {pfx} and its share, agent: of the heavy requests"
        )];
        if let Some(c) = &self.capacity {
            notes.push(format!(
                "{}: {}, the most heavy requests in one clock-aligned {} window overlapping the bucket; ! = over the capacity of {}",
                c.peak_header(),
                c.peak_label(),
                c.window,
                thousands(c.count)
            ));
        }
        if !self.gaps.is_empty() {
            notes.push(format!(
                "gap: a run of more than {MAX_EMPTY_BUCKETS} empty buckets, one row (the bucket counts are for the whole run; CSV: `buckets`, JSON: `gaps`):"
            ));
            for g in self.gaps.iter().take(GAPS_LISTED) {
                notes.push(format!(
                    "no requests from {} to {} ({} buckets of {})",
                    g.label,
                    g.end_label,
                    thousands(g.buckets),
                    self.by
                ));
            }
            if self.gaps.len() > GAPS_LISTED {
                notes.push(format!(
                    "… and {} more gaps (all in the table and in --format json)",
                    thousands((self.gaps.len() - GAPS_LISTED) as u64)
                ));
            }
        }
        Doc {
            title: format!("Heavy requests per {}", self.by),
            lines,
            sections: vec![Section {
                title: None,
                table: Some(t),
                notes,
            }],
            csv_section: 0,
            csv: Some(self.csv_table()),
            figure: None,
            figures: self.figures(),
        }
    }

    /// CSV: one row per bucket and per gap, one typed value per column — `start` in
    /// RFC 3339, plain integers, shares as fractions, `over_capacity` true/false,
    /// `buckets` how many buckets the row stands for (a gap: more than one).
    pub fn csv_table(&self) -> Table {
        let mut cols: Vec<String> = [
            "start",
            "requests",
            "heavy",
            "ips",
            "prefixes",
            "top_prefix",
            "top_prefix_share",
            "agent",
            "agent_share",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let has_as = self.top_as.is_some();
        if has_as {
            cols.extend(["top_as".to_string(), "top_as_share".to_string()]);
        }
        if let Some(c) = &self.capacity {
            cols.push(c.peak_column());
            cols.push("over_capacity".into());
        }
        cols.push("buckets".into());
        let align: Vec<(&str, Align)> = cols.iter().map(|c| (c.as_str(), Align::Right)).collect();
        let mut t = Table::new(&align);
        let cap = self.capacity.is_some();
        let mut gaps = self.gaps.iter().peekable();
        for (i, b) in self.buckets.iter().enumerate() {
            while let Some(g) = gaps.next_if(|g| g.before <= i) {
                let mut row: Vec<String> = vec![g.start.clone()];
                row.extend(["0", "0", "0", "0", "", "", "", ""].map(String::from));
                if has_as {
                    row.extend([String::new(), String::new()]);
                }
                if cap {
                    row.extend(["0".to_string(), "false".to_string()]);
                }
                row.push(g.buckets.to_string());
                t.row(row);
            }
            let has = b.heavy > 0;
            let mut row = vec![
                b.start.clone(),
                b.requests.to_string(),
                b.heavy.to_string(),
                b.distinct_ips.to_string(),
                b.distinct_prefixes.to_string(),
                b.top_prefix.clone().filter(|_| has).unwrap_or_default(),
                if has {
                    fraction_data(b.top_prefix_share)
                } else {
                    String::new()
                },
                b.agent.clone().filter(|_| has).unwrap_or_default(),
                if has {
                    fraction_data(b.agent_share)
                } else {
                    String::new()
                },
            ];
            if has_as {
                row.push(b.top_as.clone().unwrap_or_default());
                row.push(b.top_as_share.map(fraction_data).unwrap_or_default());
            }
            if cap {
                row.push(b.peak.unwrap_or(0).to_string());
                row.push(b.over_capacity.to_string());
            }
            row.push("1".into());
            t.row(row);
        }
        t
    }

    /// The charts: heavy requests per bucket (with the capacity line when the buckets
    /// are the capacity's window), and with a capacity of another window the peak per
    /// aligned window against it; buckets over capacity shaded.
    pub fn figures(&self) -> Vec<Figure> {
        if self.buckets.is_empty() {
            return Vec::new();
        }
        let w = self.width_ms.max(1);
        let mut heavy = Vec::with_capacity(self.buckets.len() + 2 * self.gaps.len());
        let mut peak = Vec::new();
        let mut gaps = self.gaps.iter().peekable();
        for (i, b) in self.buckets.iter().enumerate() {
            while let Some(g) = gaps.next_if(|g| g.before <= i) {
                heavy.push((g.start_local_ms, 0.0));
                heavy.push((g.end_local_ms - w, 0.0));
                if self.capacity.is_some() {
                    peak.push((g.start_local_ms, 0.0));
                    peak.push((g.end_local_ms - w, 0.0));
                }
            }
            heavy.push((b.start_local_ms, b.heavy as f64));
            if let Some(p) = b.peak {
                peak.push((b.start_local_ms, p as f64));
            }
        }
        let over: Vec<i64> = self
            .buckets
            .iter()
            .filter(|b| b.over_capacity)
            .map(|b| b.start_local_ms)
            .collect();
        let shade = match (over.first(), over.last()) {
            (Some(&a), Some(&b)) => Some(Shade {
                start_ms: a,
                end_ms: b + w,
                label: "buckets over capacity".into(),
            }),
            _ => None,
        };
        let reference = self.capacity.as_ref().map(|c| RefLine {
            value: c.count as f64,
            label: format!("capacity {} per {}", thousands(c.count), c.window),
        });
        let same_window = self.capacity.as_ref().is_some_and(|c| c.window == self.by);
        let title = format!("Heavy requests per {}", self.by);
        let mut out = vec![Figure::new(
            title.clone(),
            chart::time_series(&TimeSeries {
                title: title.clone(),
                y_label: format!("heavy requests per {} ({} time)", self.by, self.zone),
                series: vec![Series {
                    name: "heavy requests".into(),
                    points: heavy,
                }],
                reference: reference.clone().filter(|_| same_window),
                shade: shade.clone(),
            }),
            Some(self.spark_text(|b| b.heavy, &format!("heavy requests per {}", self.by))),
        )];
        if let (Some(c), false) = (&self.capacity, same_window) {
            let title = format!(
                "{} in each {} bucket",
                capitalized(&c.peak_label()),
                self.by
            );
            out.push(Figure::new(
                title.clone(),
                chart::time_series(&TimeSeries {
                    title: title.clone(),
                    y_label: format!(
                        "heavy requests per aligned {} ({} time)",
                        c.window, self.zone
                    ),
                    series: vec![Series {
                        name: c.peak_label(),
                        points: peak,
                    }],
                    reference,
                    shade,
                }),
                Some(self.spark_text(|b| b.peak.unwrap_or(0), &c.peak_label())),
            ));
        }
        out
    }

    /// A sparkline of `value` per bucket for Markdown: lines of 48 buckets, each with
    /// the start of its first bucket; a gap on its own line; then the scale.
    fn spark_text(&self, value: impl Fn(&HeavyBucket) -> u64, what: &str) -> String {
        const PER_LINE: usize = 48;
        let vals: Vec<f64> = self.buckets.iter().map(|b| value(b) as f64).collect();
        let max = self.buckets.iter().map(&value).max().unwrap_or(0);
        let spark: Vec<char> = sparkline(&vals)
            .chars()
            .map(|c| if c == ' ' { '·' } else { c })
            .collect();
        let mut out = String::new();
        let mut gaps = self.gaps.iter().peekable();
        let mut i = 0;
        while i < self.buckets.len() {
            while let Some(g) = gaps.next_if(|g| g.before <= i) {
                let _ = writeln!(
                    out,
                    "{}  (no requests for {} buckets, until {})",
                    g.label,
                    thousands(g.buckets),
                    g.end_label
                );
            }
            let next_gap = gaps.peek().map_or(usize::MAX, |g| g.before);
            let end = (i + PER_LINE)
                .min(self.buckets.len())
                .min(next_gap.max(i + 1));
            let line: String = spark[i..end].iter().collect();
            let _ = writeln!(out, "{}  {line}", self.buckets[i].label);
            i = end;
        }
        if max == 0 {
            let _ = write!(
                out,
                "one character per {} bucket: · none (no {what})",
                self.by
            );
        } else {
            let _ = write!(
                out,
                "one character per {} bucket: · none, ▁ … █ up to {} {what}",
                self.by,
                thousands(max)
            );
        }
        out
    }
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

impl crate::forensics::doc::Document for HeavyReport {
    fn doc(&self, width: usize) -> Doc {
        if width == usize::MAX {
            HeavyReport::doc(self, 0)
        } else {
            self.doc_for_width(width)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::Batch;
    use crate::record::Record;

    fn batch(rows: &[(i64, &str, &str)]) -> Batch {
        let mut b = Batch::default();
        for (n, (t, ip, q)) in rows.iter().enumerate() {
            let r = Record {
                ts_ms: *t,
                client: ip.as_bytes(),
                ip: ip.parse().ok(),
                method: Some(b"GET"),
                path: Some(b"/index.php"),
                query: Some(q.as_bytes()),
                user_agent: Some(b"curl/8"),
                ..Record::default()
            };
            b.push(&r, n as u64 + 1);
        }
        b
    }

    /// Rows out of time order (interleaved servers, rotated files in any order) close
    /// and reopen buckets: the report is the one of the rows in order.
    #[test]
    fn rows_out_of_order_give_the_report_of_rows_in_order() {
        let h = 3_600_000;
        let rows: Vec<(i64, String, &str)> = (0..60i64)
            .map(|i| {
                let q = ["search=a", "diff=1", "title=A", "action=history"][(i % 4) as usize];
                ((i * 7 % 5) * h + i, format!("10.{}.0.{}", i % 3, i % 7), q)
            })
            .collect();
        let report = |order: &[usize]| {
            let picked: Vec<(i64, &str, &str)> = order
                .iter()
                .map(|&k| (rows[k].0, rows[k].1.as_str(), rows[k].2))
                .collect();
            let b = batch(&picked);
            let mut cls = Classifier::default();
            let mut acc = HeavyAcc::new(h, Some(Rate::new(2, 600_000).unwrap()));
            for i in 0..b.len() {
                let rc = cls.classify(&b, i);
                acc.add(b.ts_ms[i], b.ts_ms[i], &rc);
            }
            serde_json::to_string(&acc.finish(&cls, "UTC", "all", "test")).unwrap()
        };
        let mut sorted: Vec<usize> = (0..rows.len()).collect();
        sorted.sort_by_key(|&k| rows[k].0);
        let generated: Vec<usize> = (0..rows.len()).collect();
        let reversed: Vec<usize> = sorted.iter().rev().copied().collect();
        let in_order = report(&sorted);
        assert!(in_order.contains("\"heavy\":45"), "{in_order}");
        assert_eq!(report(&generated), in_order);
        assert_eq!(report(&reversed), in_order);
    }

    #[test]
    fn buckets_prefixes_capacity() {
        let h = 3_600_000;
        let b = batch(&[
            (10, "1.1.1.1", "search=a"),
            (20, "1.1.1.2", "search=a"),
            (30, "2.2.2.2", "diff=1"),
            (40, "3.3.3.3", "title=A"),
            (2 * h + 5, "4.4.4.4", "action=history"),
        ]);
        let mut cls = Classifier::default();
        let mut acc = HeavyAcc::new(h, Some(Rate::new(2, 600_000).unwrap()));
        for i in 0..b.len() {
            let rc = cls.classify(&b, i);
            acc.add(b.ts_ms[i], b.ts_ms[i], &rc);
        }
        let r = acc.finish(&cls, "UTC", "all requests", "test");
        assert_eq!(
            (r.requests, r.heavy, r.distinct_ips, r.distinct_prefixes),
            (5, 4, 4, 3)
        );
        assert_eq!(r.buckets.len(), 3, "empty hour filled in");
        let b0 = &r.buckets[0];
        assert_eq!((b0.requests, b0.heavy, b0.distinct_prefixes), (4, 3, 2));
        assert_eq!(b0.top_prefix.as_deref(), Some("1.1.1.0/24"));
        assert!((b0.top_prefix_share - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(b0.peak, Some(3));
        assert!(b0.over_capacity);
        assert_eq!(r.buckets[1].heavy, 0);
        assert!(!r.buckets[2].over_capacity);
        assert_eq!(r.buckets_over_capacity, 1);
        assert_eq!(r.classes[0].class, "search");
        let text = r.doc_for_width(100).to_text(100, false);
        assert!(text.contains('█') || text.contains('▄'), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
        assert!(text.contains("01-01 00:00"), "{text}");
        assert!(
            text.contains("peak*: peak per aligned 10m, the most"),
            "{text}"
        );
        let text = r.doc_for_width(80).to_text(80, false);
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        // Typed CSV and the charts: heavy per 1h, and the aligned 10m peak against
        // the capacity (another window), the over-capacity bucket shaded.
        let d = r.doc(0);
        let csv = d.to_csv();
        assert!(csv.starts_with("start,requests,heavy,ips,prefixes,top_prefix,top_prefix_share,agent,agent_share,peak_aligned_10m,over_capacity,buckets\n1970-01-01T00:00:00.000Z,4,3,3,2,1.1.1.0/24,0.6666666666666666,curl,1,3,true,1\n"), "{csv}");
        let html = d.to_html();
        assert_eq!(html.matches("<svg").count(), 2);
        assert_eq!(html.matches("data-points=\"3\"").count(), 2);
        assert_eq!(html.matches("class=\"ref\"").count(), 1);
        assert_eq!(html.matches("class=\"shade\"").count(), 2);
    }

    fn report(rows: &[(i64, &str, &str)], width: i64, cap: Option<Rate>) -> HeavyReport {
        let b = batch(rows);
        let mut cls = Classifier::default();
        let mut acc = HeavyAcc::new(width, cap);
        for i in 0..b.len() {
            let rc = cls.classify(&b, i);
            acc.add(b.ts_ms[i], b.ts_ms[i], &rc);
        }
        acc.finish(&cls, "UTC", "all requests", "test")
    }

    #[test]
    fn long_empty_runs_are_one_gap_row_short_ones_rows() {
        let m = 60_000;
        let day = 86_400_000;
        let t0 = crate::time::days_from_civil(2024, 1, 1) * day;
        let t1 = crate::time::days_from_civil(2024, 6, 1) * day;
        // 3 empty buckets, then 150 days of nothing.
        let r = report(
            &[
                (t0, "1.1.1.1", "search=a"),
                (t0 + 40 * m, "1.1.1.1", "search=a"),
                (t1, "2.2.2.2", "title=A"),
            ],
            10 * m,
            None,
        );
        assert_eq!(r.buckets.len(), 6, "2 + 3 empty + 1");
        assert_eq!(r.gaps.len(), 1);
        let g = &r.gaps[0];
        assert_eq!((g.start_utc_ms, g.end_utc_ms), (t0 + 50 * m, t1));
        assert_eq!(g.buckets as i64, (t1 - t0) / (10 * m) - 5);
        assert_eq!(g.before, 5);
        assert_eq!(g.end, "2024-06-01T00:00:00.000Z");
        let total: u64 = r.buckets.len() as u64 + g.buckets;
        assert_eq!(total as i64, (t1 - t0) / (10 * m) + 1);
        let doc = r.doc(0);
        let text = doc.to_text(80, false);
        assert!(text.contains("gap: 21,883 empty"), "{text}");
        assert!(
            text.contains(
                "no requests from 2024-01-01 00:50 to 2024-06-01 00:00 (21,883 buckets of 10m)"
            ),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        let md = doc.to_markdown();
        assert!(md.contains("gap: 21,883 empty"), "{md}");
        let csv = doc.to_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "start,requests,heavy,ips,prefixes,top_prefix,top_prefix_share,agent,agent_share,buckets",
            "{csv}"
        );
        assert_eq!(
            lines[6], "2024-01-01T00:50:00.000Z,0,0,0,0,,,,,21883",
            "{csv}"
        );
        assert!(
            lines[1].starts_with("2024-01-01T00:00:00.000Z,") && lines[1].ends_with(",1"),
            "{csv}"
        );
        // The chart: one point per bucket, two for the gap.
        let html = doc.to_html();
        let want = format!("data-points=\"{}\"", r.buckets.len() + 2);
        assert!(html.contains(&want), "{want}");
        assert!(md.contains("```text\n2024-01-01 00:00  "), "{md}");
        assert!(
            md.contains(
                "2024-01-01 00:50  (no requests for 21,883 buckets, until 2024-06-01 00:00)"
            ),
            "{md}"
        );
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["gaps"][0]["buckets"], 21_883);
        assert_eq!(json["gaps"][0]["start"], "2024-01-01T00:50:00.000Z");
        // No gap: no `gaps` key, the same CSV columns.
        let r = report(&[(t0, "1.1.1.1", "search=a")], 10 * m, None);
        assert!(serde_json::to_value(&r).unwrap().get("gaps").is_none());
        assert!(
            r.doc(0)
                .to_csv()
                .lines()
                .next()
                .unwrap()
                .ends_with(",agent_share,buckets")
        );
    }

    #[test]
    fn a_century_of_silence_and_capacity_windows_across_gaps() {
        let h = 3_600_000;
        let day = 86_400_000;
        let d = |y, m, dd| crate::time::days_from_civil(y, m, dd) * day;
        let r = report(
            &[
                (d(1971, 1, 1), "1.1.1.1", "search=a"),
                (d(2024, 5, 1), "1.1.1.1", "search=a"),
                (d(2099, 12, 31), "1.1.1.1", "search=a"),
            ],
            60_000,
            None,
        );
        assert_eq!((r.buckets.len(), r.gaps.len()), (3, 2));
        // A capacity window longer than the bucket still marks the empty buckets it
        // covers, one by one; the rest is a gap.
        let r = report(
            &[
                (0, "1.1.1.1", "search=a"),
                (1, "1.1.1.2", "search=a"),
                (30 * h, "1.1.1.3", "search=a"),
            ],
            600_000,
            Some(Rate::new(1, h as u64).unwrap()),
        );
        assert_eq!(r.buckets.len(), 7, "1 + 5 within the window + 1");
        assert!(r.buckets[..6].iter().all(|b| b.over_capacity));
        assert_eq!(r.buckets_over_capacity, 6);
        assert_eq!(r.gaps.len(), 1);
        assert_eq!(r.gaps[0].start_utc_ms, h);
    }
}
