//! `logscope timeline`: what one address or network did — requests per time bucket
//! (aligned on the report's clock, like `heavy --by`), with errors, bytes and distinct
//! addresses, and its paths, statuses, user agents and (for a network) addresses, each a
//! [`super::top`] breakdown.

use std::collections::BTreeMap;

use serde::Serialize;

use super::doc::{Doc, Section};
use super::top::{
    Breakdown, Columns, Tally, TopAcc, TopBy, TopSort, bytes_label, client_hash, clients_label,
};
use super::{bucket_label, duration_label};
use crate::batch::Batch;
use crate::classify::{Classifier, RowClass};
use crate::number::{pct1, share, thousands};
use crate::table::{Align, Cell, Table};
use crate::time::{align, local_rfc3339_ms};

/// The widths an automatic width is chosen from (`timeline --by auto`, the default): 1s,
/// 10s, then heavy's ladder ([`super::heavy::AUTO_WIDTHS`]: 1m … 1w) — each a multiple of
/// the one before, so buckets of one merge exactly into buckets of the next.
pub const AUTO_WIDTHS: [i64; 11] = {
    let tail = super::heavy::AUTO_WIDTHS;
    let mut w = [1_000, 10_000, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    let mut i = 0;
    while i < tail.len() {
        w[i + 2] = tail[i];
        i += 1;
    }
    w
};

/// An automatic width gives at most this many buckets from the first row to the last: a
/// 5-minute burst gets 10-second buckets (30), an hour minutes, a day 10 minutes, a week
/// hours, half a year days.
pub const AUTO_MAX_BUCKETS: i64 = 200;

/// The automatic width for rows from `first` to `last` (local ms): the smallest of
/// [`AUTO_WIDTHS`] whose aligned buckets ([`align`]) from the first row's to the last
/// row's number at most [`AUTO_MAX_BUCKETS`] (the widest when none does).
pub fn auto_width(first: i64, last: i64) -> i64 {
    AUTO_WIDTHS
        .into_iter()
        .find(|&w| !too_many(first, last, w))
        .unwrap_or(AUTO_WIDTHS[AUTO_WIDTHS.len() - 1])
}

/// Whether the aligned buckets `w` wide from `first`'s to `last`'s are more than
/// [`AUTO_MAX_BUCKETS`].
fn too_many(first: i64, last: i64, w: i64) -> bool {
    (align(last, w) - align(first, w)) / w >= AUTO_MAX_BUCKETS
}

struct Bucket {
    offset_ms: i64,
    /// The order in which buckets were opened: of two merged buckets, the offset of the
    /// one opened first is kept.
    seq: u64,
    tally: Tally,
}

/// Accumulates `logscope timeline`. Call [`TimelineAcc::begin_batch`] before the rows of
/// each batch, then [`TimelineAcc::add`] per selected row.
///
/// With an automatic width ([`TimelineAcc::auto`]) the rows are counted in buckets of
/// the smallest of [`AUTO_WIDTHS`] the span so far allows, merged into wider ones as the
/// span grows (counts are sums, distinct addresses unions, the offset the first-opened
/// bucket's): the result is that of counting at the final width from the start, with at
/// most a few hundred buckets held.
pub struct TimelineAcc {
    width_ms: i64,
    /// An automatic width: the first and last local times so far (`None` before the
    /// first row).
    auto: Option<Option<(i64, i64)>>,
    /// Buckets opened so far.
    opened: u64,
    buckets: BTreeMap<i64, Bucket>,
    total: Tally,
    paths: TopAcc,
    statuses: TopAcc,
    agents: TopAcc,
    addresses: TopAcc,
}

impl TimelineAcc {
    /// Buckets of `width_ms`, aligned on the report's clock.
    pub fn new(width_ms: i64) -> TimelineAcc {
        TimelineAcc {
            width_ms: width_ms.max(1),
            auto: None,
            opened: 0,
            buckets: BTreeMap::new(),
            total: Tally::exact(),
            paths: TopAcc::new(TopBy::Path),
            statuses: TopAcc::new(TopBy::Status),
            agents: TopAcc::new(TopBy::Agent),
            addresses: TopAcc::new(TopBy::Ip),
        }
    }

    /// Buckets of the width [`auto_width`] gives the span of the rows added.
    pub fn auto() -> TimelineAcc {
        TimelineAcc {
            auto: Some(None),
            ..TimelineAcc::new(AUTO_WIDTHS[0])
        }
    }

    /// With an automatic width: notes a row at `local` ms, widening the buckets when
    /// the span outgrows the width.
    #[inline]
    fn note(&mut self, local: i64) {
        match self.auto {
            None => {}
            Some(Some((lo, hi))) if lo <= local && local <= hi => {}
            Some(span) => {
                let (lo, hi) =
                    span.map_or((local, local), |(lo, hi)| (lo.min(local), hi.max(local)));
                self.auto = Some(Some((lo, hi)));
                if too_many(lo, hi, self.width_ms) {
                    self.widen(auto_width(lo, hi));
                }
            }
        }
    }

    /// The same buckets at `w` (a multiple of the width).
    #[cold]
    fn widen(&mut self, w: i64) {
        let mut wide: BTreeMap<i64, Bucket> = BTreeMap::new();
        for (s, b) in std::mem::take(&mut self.buckets) {
            match wide.entry(align(s, w)) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(b);
                }
                std::collections::btree_map::Entry::Occupied(mut e) => {
                    let into = e.get_mut();
                    if b.seq < into.seq {
                        (into.offset_ms, into.seq) = (b.offset_ms, b.seq);
                    }
                    into.tally.merge(&b.tally);
                }
            }
        }
        self.buckets = wide;
        self.width_ms = w;
    }

    /// Starts the rows of batch `b`.
    pub fn begin_batch(&mut self, b: &Batch) {
        for a in [
            &mut self.paths,
            &mut self.statuses,
            &mut self.agents,
            &mut self.addresses,
        ] {
            a.begin_batch(b);
        }
    }

    /// Adds row `i` of `b`, classified as `rc`, that arrived at `local_ms` on the
    /// report's clock.
    #[inline]
    pub fn add(&mut self, b: &Batch, i: usize, rc: &RowClass, local_ms: i64) {
        let ts = b.ts_ms[i];
        self.note(local_ms);
        let start = align(local_ms, self.width_ms);
        let opened = &mut self.opened;
        let bucket = self.buckets.entry(start).or_insert_with(|| {
            *opened += 1;
            Bucket {
                offset_ms: local_ms - ts,
                seq: *opened,
                tally: Tally::default(),
            }
        });
        let h = client_hash(rc.client);
        bucket.tally.add(ts, b.status[i], b.size(i), Some(h));
        self.total.add(ts, b.status[i], b.size(i), Some(h));
        for a in [
            &mut self.paths,
            &mut self.statuses,
            &mut self.agents,
            &mut self.addresses,
        ] {
            a.add_hashed(b, i, rc, h);
        }
    }

    /// The result: breakdowns of at most `limit` rows (0 = all). `local` gives a UTC
    /// instant on the report's clock; `clients` names the selected networks.
    #[allow(clippy::too_many_arguments)]
    pub fn finish(
        self,
        cls: &Classifier,
        limit: usize,
        local: &dyn Fn(i64) -> i64,
        zone: &str,
        clients: &[String],
        selection: &str,
        origin: &str,
    ) -> TimelineReport {
        let w = self.width_ms;
        let buckets = self
            .buckets
            .iter()
            .map(|(&start, b)| {
                let (addresses, addresses_estimated) = b.tally.clients.count();
                TimelineBucket {
                    start: local_rfc3339_ms(start, b.offset_ms),
                    label: bucket_label(start, w),
                    local_ms: start,
                    start_utc_ms: start - b.offset_ms,
                    requests: b.tally.requests,
                    errors: b.tally.errors,
                    error_share: share(b.tally.errors, b.tally.requests),
                    bytes: b.tally.bytes,
                    addresses,
                    addresses_estimated,
                }
            })
            .collect();
        let t = &self.total;
        let time = |ms: i64| {
            let l = local(ms);
            local_rfc3339_ms(l, l - ms)
        };
        let (addresses, addresses_estimated) = t.clients.count();
        let sort = TopSort::Requests;
        TimelineReport {
            origin: origin.to_string(),
            selection: selection.to_string(),
            zone: zone.to_string(),
            by: duration_label(w),
            width_ms: w,
            auto_width: self.auto.is_some(),
            clients: clients.to_vec(),
            requests: t.requests,
            bytes: t.bytes,
            errors: t.errors,
            error_share: share(t.errors, t.requests),
            addresses,
            addresses_estimated,
            first_seen: (t.requests > 0).then(|| time(t.first_ms)),
            last_seen: (t.requests > 0).then(|| time(t.last_ms)),
            buckets,
            paths: self.paths.finish(cls, sort, limit, local),
            statuses: self.statuses.finish(cls, sort, limit, local),
            agents: self.agents.finish(cls, sort, limit, local),
            top_addresses: self.addresses.finish(cls, sort, limit, local),
        }
    }
}

/// One time bucket with requests.
#[derive(Clone, Debug, Serialize)]
pub struct TimelineBucket {
    /// Start, RFC 3339 in the report's zone.
    pub start: String,
    /// Start as shown in tables.
    #[serde(skip)]
    pub label: String,
    /// Start on the report's clock (ms), for charts.
    #[serde(skip)]
    pub local_ms: i64,
    /// Start, UTC ms (JSON has the instant once: `start`).
    #[serde(skip)]
    pub start_utc_ms: i64,
    /// Requests.
    pub requests: u64,
    /// Requests with status ≥ 400.
    pub errors: u64,
    /// `errors` over `requests`.
    pub error_share: f64,
    /// Body bytes.
    pub bytes: u64,
    /// Distinct client addresses.
    pub addresses: u64,
    /// Whether `addresses` is an estimate.
    pub addresses_estimated: bool,
}

/// The result of `logscope timeline`.
#[derive(Clone, Debug, Serialize)]
pub struct TimelineReport {
    /// Where the rows came from.
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub origin: String,
    /// The filter, described.
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub selection: String,
    /// The clock of the buckets and times.
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub zone: String,
    /// Bucket width (`10m`).
    pub by: String,
    /// Bucket width, ms.
    #[serde(skip)]
    pub width_ms: i64,
    /// Whether the width was chosen from the span (`--by auto`).
    pub auto_width: bool,
    /// The `--client` networks.
    pub clients: Vec<String>,
    /// Requests.
    pub requests: u64,
    /// Body bytes.
    pub bytes: u64,
    /// Requests with status ≥ 400.
    pub errors: u64,
    /// `errors` over `requests`.
    pub error_share: f64,
    /// Distinct client addresses.
    pub addresses: u64,
    /// Whether `addresses` is an estimate.
    pub addresses_estimated: bool,
    /// First request, RFC 3339 in the report's zone.
    pub first_seen: Option<String>,
    /// Last request.
    pub last_seen: Option<String>,
    /// The buckets with requests, in time order (empty buckets are left out).
    pub buckets: Vec<TimelineBucket>,
    /// Its paths.
    pub paths: Breakdown,
    /// Its statuses.
    pub statuses: Breakdown,
    /// Its user agents.
    pub agents: Breakdown,
    /// Its addresses (one for a single address).
    pub top_addresses: Breakdown,
}

impl TimelineReport {
    /// The report for a terminal of `width` columns: first and last seen are left out
    /// of a breakdown table that would not fit with them.
    pub fn doc_for_width(&self, width: usize) -> Doc {
        self.doc_with(Some(width))
    }

    /// The report for people (every column), with a chart for HTML.
    pub fn doc(&self) -> Doc {
        self.doc_with(None)
    }

    fn doc_with(&self, width: Option<usize>) -> Doc {
        let who = if self.clients.is_empty() {
            "every client".to_string()
        } else {
            self.clients.join(", ")
        };
        let mut lines = vec![
            format!("source: {}", self.origin),
            format!("selection: {}", self.selection),
        ];
        let mut summary = format!(
            "{} requests from {} address{}, {}; {} errors ({}, status ≥ 400)",
            thousands(self.requests),
            clients_label(self.addresses, self.addresses_estimated),
            if self.addresses == 1 { "" } else { "es" },
            bytes_label(self.bytes),
            thousands(self.errors),
            pct1(self.errors, self.requests)
        );
        if let (Some(f), Some(l)) = (&self.first_seen, &self.last_seen) {
            summary.push_str(&format!("; first seen {f}, last seen {l}"));
        }
        lines.push(summary);
        if self.auto_width {
            lines.push(format!(
                "buckets of {}: chosen from the span (at most {AUTO_MAX_BUCKETS}; --by WIDTH to choose)",
                self.by
            ));
        }
        lines.push(format!("bucket starts and times are {} times", self.zone));
        let network = self.addresses > 1;
        let mut head = vec![
            ("start", Align::Right),
            ("requests", Align::Right),
            ("errors", Align::Right),
            ("bytes", Align::Right),
        ];
        if network {
            head.push(("addresses", Align::Right));
        }
        let mut t = Table::new(&head);
        let mut csv = Table::new(&[
            ("start", Align::Left),
            ("requests", Align::Right),
            ("errors", Align::Right),
            ("error_share", Align::Right),
            ("bytes", Align::Right),
            ("addresses", Align::Right),
            ("addresses_estimated", Align::Left),
        ]);
        for b in &self.buckets {
            let mut row = vec![
                Cell::from(b.label.clone()),
                Cell::from(thousands(b.requests)),
                Cell::from(format!(
                    "{} ({})",
                    thousands(b.errors),
                    pct1(b.errors, b.requests)
                )),
                Cell::from(bytes_label(b.bytes)),
            ];
            if network {
                row.push(Cell::from(clients_label(
                    b.addresses,
                    b.addresses_estimated,
                )));
            }
            t.row(row);
            csv.row([
                b.start.clone(),
                b.requests.to_string(),
                b.errors.to_string(),
                b.error_share.to_string(),
                b.bytes.to_string(),
                b.addresses.to_string(),
                b.addresses_estimated.to_string(),
            ]);
        }
        let mut sections = vec![Section {
            title: Some(format!("Requests per {}", self.by)),
            table: Some(t),
            notes: vec![
                "buckets without requests are left out; errors: requests with status ≥ 400 (4xx and 5xx) and their share"
                    .to_string(),
            ],
        }];
        let mut parts: Vec<(&str, &Breakdown)> = vec![
            ("Paths", &self.paths),
            ("Statuses", &self.statuses),
            ("User agents", &self.agents),
        ];
        if network {
            parts.push(("Addresses", &self.top_addresses));
        }
        for (title, b) in parts {
            let span = b.span();
            let with_seen = |seen| {
                b.table(
                    Columns {
                        clients: network,
                        seen,
                    },
                    &span,
                )
            };
            let mut table = with_seen(true);
            let mut notes: Vec<String> = b.rest_note().into_iter().collect();
            if let Some(w) = width
                && !b.fits(&table, w)
            {
                table = with_seen(false);
                notes.push(
                    "first and last seen: in a wider terminal (COLUMNS=120), or --format json"
                        .into(),
                );
            } else if span != super::top::Span::All {
                notes.push(span.line(&self.zone));
            }
            sections.push(Section {
                title: Some(title.to_string()),
                table: Some(table),
                notes,
            });
        }
        let title = format!("Timeline of {who} per {}", self.by);
        let figures = if width.is_none() && !self.buckets.is_empty() {
            vec![super::doc::Figure {
                title: format!("Requests per {}", self.by),
                svg: self.chart(&title),
                text: None,
            }]
        } else {
            Vec::new()
        };
        Doc {
            title,
            lines,
            sections,
            csv_section: 0,
            csv: Some(csv),
            figures,
            ..Doc::default()
        }
    }

    /// Requests per bucket as a time series; the buckets next to a run of empty ones
    /// get a 0 point, so the line drops to 0 where nothing came.
    fn chart(&self, title: &str) -> String {
        let w = self.width_ms;
        let mut points: Vec<(i64, f64)> = Vec::with_capacity(self.buckets.len() + 2);
        let mut prev: Option<i64> = None;
        for b in &self.buckets {
            if prev.is_some_and(|p| b.local_ms - p > w) {
                let p = prev.unwrap_or(0);
                points.push((p + w, 0.0));
                if b.local_ms - w > p + w {
                    points.push((b.local_ms - w, 0.0));
                }
            }
            points.push((b.local_ms, b.requests as f64));
            prev = Some(b.local_ms);
        }
        crate::chart::time_series(&crate::chart::TimeSeries {
            title: title.to_string(),
            y_label: format!("requests per {}", self.by),
            series: vec![crate::chart::Series {
                name: "requests".into(),
                points,
            }],
            reference: None,
            shade: None,
        })
    }
}

impl crate::forensics::doc::Document for TimelineReport {
    fn doc(&self, width: usize) -> Doc {
        if width == usize::MAX {
            TimelineReport::doc(self)
        } else {
            self.doc_for_width(width)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;

    /// The report does not depend on the order of the rows, buckets revisited or not.
    /// An automatic width counts as the final width from the start would, in any row
    /// order, and gives a useful number of buckets: a 5-minute burst 10-second ones.
    #[test]
    fn an_automatic_width_counts_as_the_final_width_from_the_start() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for case in 0..60u64 {
            let span = [
                300_000i64,
                40_000,
                7_200_000,
                86_400_000 * 3,
                86_400_000 * 200,
            ][case as usize % 5];
            let t0 = 1_790_294_400_000 + rnd(86_400_000) as i64;
            let mut b = Batch::default();
            for n in 0..(1 + rnd(400)) {
                let t = if n == 0 {
                    t0
                } else {
                    t0 + rnd(span as u64 + 1) as i64
                };
                let ip = format!("10.0.{}.{}", rnd(2), rnd(300).min(255));
                b.push(
                    &Record {
                        ts_ms: t,
                        client: ip.as_bytes(),
                        ip: ip.parse().ok(),
                        method: Some(b"GET"),
                        path: Some(b"/a"),
                        status: if n % 7 == 0 { 500 } else { 200 },
                        bytes: Some(n),
                        ..Record::default()
                    },
                    n,
                );
            }
            let mut order: Vec<usize> = (0..b.len()).collect();
            if case % 2 == 0 {
                order.sort_by_key(|&i| b.ts_ms[i]);
            }
            let report = |mut acc: TimelineAcc| {
                let mut cls = Classifier::default();
                acc.begin_batch(&b);
                for &i in &order {
                    let rc = cls.classify(&b, i);
                    // A clock 9 hours ahead of UTC.
                    acc.add(&b, i, &rc, b.ts_ms[i] + 32_400_000);
                }
                let r = acc.finish(&cls, 0, &|t| t + 32_400_000, "+09:00", &[], "s", "test");
                let mut v = serde_json::to_value(&r).unwrap();
                v["auto_width"] = serde_json::Value::Null;
                v
            };
            let lo = b.ts_ms.iter().min().unwrap() + 32_400_000;
            let hi = b.ts_ms.iter().max().unwrap() + 32_400_000;
            let w = auto_width(lo, hi);
            let got = report(TimelineAcc::auto());
            assert_eq!(got, report(TimelineAcc::new(w)), "case {case}");
            let n = got["buckets"].as_array().unwrap().len() as i64;
            assert!(n <= AUTO_MAX_BUCKETS, "case {case}: {n}");
            if span == 300_000 {
                assert!(w <= 10_000, "case {case}: {w}");
            }
        }
        // Exactly 5 minutes from a bucket's start: 10 seconds, 31 buckets.
        assert_eq!(auto_width(0, 300_000), 10_000);
        assert_eq!(auto_width(0, 199_999), 1_000);
        assert_eq!(auto_width(0, 200_000), 10_000);
        assert_eq!(auto_width(0, 183 * 86_400_000), 86_400_000);
    }

    #[test]
    fn rows_out_of_time_order_give_the_same_timeline() {
        let mut b = Batch::default();
        let rows: Vec<(i64, String)> = (0..300i64)
            .map(|n| {
                (
                    (n * 7_919_011) % 36_000_000,
                    format!("10.0.{}.{}", n % 3, n % 11),
                )
            })
            .collect();
        for (n, (t, ip)) in rows.iter().enumerate() {
            b.push(
                &Record {
                    ts_ms: *t,
                    client: ip.as_bytes(),
                    ip: ip.parse().ok(),
                    method: Some(b"GET"),
                    path: Some(if n % 2 == 0 { b"/a" } else { b"/b" }),
                    status: if n % 5 == 0 { 404 } else { 200 },
                    bytes: Some(n as u64),
                    ..Record::default()
                },
                n as u64,
            );
        }
        let mut sorted: Vec<usize> = (0..b.len()).collect();
        sorted.sort_by_key(|&i| b.ts_ms[i]);
        let shuffled: Vec<usize> = (0..b.len()).collect();
        let report = |order: &[usize]| {
            let mut cls = Classifier::default();
            let mut acc = TimelineAcc::new(3_600_000);
            acc.begin_batch(&b);
            for &i in order {
                let rc = cls.classify(&b, i);
                acc.add(&b, i, &rc, b.ts_ms[i]);
            }
            let r = acc.finish(&cls, 0, &|t| t, "UTC", &["10.0.0.0/16".into()], "s", "test");
            serde_json::to_string(&r).unwrap()
        };
        let a = report(&sorted);
        assert_eq!(a, report(&shuffled));
        let v: serde_json::Value = serde_json::from_str(&a).unwrap();
        assert_eq!(v["buckets"].as_array().unwrap().len(), 10);
        assert_eq!(v["requests"], 300);
    }
}
