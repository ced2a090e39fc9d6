//! Which rows a report looks at and how they are classified: a [`Selection`] (the core
//! [`Filter`], a [`Classifier`] and the report's [`Clock`]), and the work of selecting
//! that runs where a batch is decoded ([`Selection::prep`]).
//!
//! Per row: `let rc = sel.classifier.classify(batch, i); if sel.filter.matches(batch, i,
//! &rc, &sel.classifier) { … }`. Classification happens at report time, so changing the
//! rules needs no re-ingest.

use std::path::PathBuf;
use std::sync::Arc;

use logscope_core::classify::{Classifier, Filter, HeavyClass};
use logscope_core::forensics::crawlers::CrawlerRanges;
use logscope_core::forensics::hosting::HostingAsns;
use logscope_core::forensics::netdb::NetworkDb;

use super::clock::Clock;

/// Which rows a report looks at, how they are classified, and its clock (the commands
/// build one from their flags).
pub struct Selection {
    /// The row filter.
    pub filter: Filter,
    /// The classifier (rules and caches).
    pub classifier: Classifier,
    /// The report's clock (time zone).
    pub clock: Clock,
    /// The rules file used, if any.
    pub rules_file: Option<PathBuf>,
    /// The --asn-db network database, if given.
    pub networks: Option<Arc<NetworkDb>>,
    /// The --crawler-ranges, if given.
    pub crawlers: Option<Arc<CrawlerRanges>>,
    /// The --hosting-asns list, if given (then `networks` is too).
    pub hosting: Option<Arc<HostingAsns>>,
}

/// What [`Selection::prep`] works out for a batch where it is decoded.
#[derive(Debug, Default)]
pub struct Prepped {
    /// The heavy class of each row, when the report uses it.
    pub heavy: Option<Vec<HeavyClass>>,
    /// The rows in the period whose client is inside the `--client` networks, in
    /// order (rows outside need no classifying), when that can be told from the logged
    /// address alone.
    pub client_rows: Option<Vec<u32>>,
}

/// Networks as ranges of integers, to test an address with two comparisons a network
/// (what `IpNet::contains` answers: an IPv4 network holds IPv4 addresses, an IPv6 one
/// IPv6 addresses, an IPv4-mapped address counting as IPv4).
struct NetRanges {
    v4: Vec<(u32, u32)>,
    v6: Vec<(u128, u128)>,
}

impl NetRanges {
    fn of(nets: &[ipnet::IpNet]) -> NetRanges {
        let mut r = NetRanges {
            v4: Vec::new(),
            v6: Vec::new(),
        };
        for n in nets {
            match n {
                ipnet::IpNet::V4(n) => r.v4.push((n.network().into(), n.broadcast().into())),
                ipnet::IpNet::V6(n) => r.v6.push((n.network().into(), n.broadcast().into())),
            }
        }
        r
    }

    #[inline]
    fn contains(&self, ip: Option<std::net::IpAddr>) -> bool {
        match ip.map(logscope_core::net::canonical) {
            Some(std::net::IpAddr::V4(a)) => {
                let x = u32::from(a);
                self.v4.iter().any(|&(lo, hi)| lo <= x && x <= hi)
            }
            Some(std::net::IpAddr::V6(a)) => {
                let x = u128::from(a);
                self.v6.iter().any(|&(lo, hi)| lo <= x && x <= hi)
            }
            None => false,
        }
    }
}

impl Selection {
    /// Calls `f(i, class, classifier, clock)` for each row of `b` in the period that
    /// the filter selects, classifying per distinct value where the batch is coded
    /// (the select-and-classify loop every report shares).
    pub fn each_selected(
        &mut self,
        b: &logscope_core::batch::Batch,
        f: impl FnMut(usize, &logscope_core::classify::RowClass, &Classifier, &Clock),
    ) {
        self.each_selected_with(b, None, f)
    }

    /// The work of [`Selection::each_selected`] that needs no state of the selection, to
    /// run on the threads that decode the dataset ([`super::rows::RowSource::for_each_batch_with`]):
    /// the heavy class of each row when the report uses it, and which rows' clients are
    /// inside the `--client` networks when the filter names some and the client is the
    /// logged address (no trusted proxies), so that the caller classifies only those.
    pub fn prep(&self) -> impl Fn(&logscope_core::batch::Batch) -> Prepped + Sync + use<> {
        let rules = self
            .classifier
            .needs
            .heavy
            .then(|| self.classifier.heavy_rules().clone());
        // Host-name clients are matched by their text, row by row (`Filter::matches`).
        let nets = (!self.filter.clients.is_empty()
            && self.filter.client_names.is_empty()
            && self.classifier.trust.is_empty())
        .then(|| NetRanges::of(&self.filter.clients));
        let (since, until) = self.period();
        move |b| Prepped {
            heavy: rules
                .as_ref()
                .map(|r| logscope_core::classify::heavy_classes(r, b)),
            client_rows: nets.as_ref().map(|nets| {
                let in_period =
                    |t: i64| since.is_none_or(|s| t >= s) && until.is_none_or(|u| t < u);
                let rows = b.ip.iter().zip(&b.ts_ms).enumerate();
                rows.filter(|&(_, (ip, &t))| nets.contains(*ip) && in_period(t))
                    .map(|(i, _)| i as u32)
                    .collect()
            }),
        }
    }

    /// [`Selection::each_selected`] with what [`Selection::prep`] worked out for `b`.
    pub fn each_selected_with(
        &mut self,
        b: &logscope_core::batch::Batch,
        pre: Option<&Prepped>,
        mut f: impl FnMut(usize, &logscope_core::classify::RowClass, &Classifier, &Clock),
    ) {
        let pre_heavy = pre.and_then(|p| p.heavy.as_deref());
        let client_rows = pre
            .and_then(|p| p.client_rows.as_deref())
            .filter(|r| r.last().is_none_or(|&i| (i as usize) < b.len()));
        let mut bc = self.classifier.batch_with(b, pre_heavy);
        // With --client most rows are outside: only the prepared rows (in the period)
        // are looked at.
        let all = client_rows.is_none();
        // A filter of the period alone selects the rows of the period: checked once.
        let whole = all && self.filter.selects_whole_period();
        let mut each = |i: usize| {
            if all && !self.filter.in_period(b.ts_ms[i]) {
                return;
            }
            let rc = bc.classify(&mut self.classifier, i);
            if whole || self.filter.matches(b, i, &rc, &self.classifier) {
                f(i, &rc, &self.classifier, &self.clock);
            }
        };
        match client_rows {
            Some(rows) => rows.iter().for_each(|&i| each(i as usize)),
            None => (0..b.len()).for_each(each),
        }
        self.classifier.end_batch(bc);
    }

    /// Whether a batch can be counted on the thread that decoded it (`TopPart`,
    /// `HeavyPart`, `ConcentrationPart`): the selection keeps every row of its period and
    /// the client is the logged address (no trusted proxies).
    pub fn counts_where_decoded(&self) -> bool {
        self.filter.selects_whole_period() && self.classifier.trust.is_empty()
    }

    /// `--since`/`--until` as UTC ms, for [`super::rows::RowSource::for_each_batch`]'s pruning.
    pub fn period(&self) -> (Option<i64>, Option<i64>) {
        (self.filter.since_ms, self.filter.until_ms)
    }

    /// Lets the rows decide what the rules file leaves open of the heavy rules (whether
    /// the site is a MediaWiki: [`logscope_core::classify::HeavyRules::settle`]), when
    /// the heavy class is used. Call before reading `source`.
    pub fn settle_heavy(&mut self, source: &super::rows::RowSource) -> anyhow::Result<()> {
        let heavy_used = self.classifier.needs.heavy || self.filter.heavy.is_some();
        if heavy_used && self.classifier.heavy.is_open() {
            let seen = source.site()?;
            self.classifier.heavy.settle(seen);
        }
        Ok(())
    }

    /// The selection, described for report headers (filters, period and zone).
    pub fn describe(&self) -> String {
        let mut s = self.filter.describe();
        let fmt = |ms: i64| {
            logscope_core::time::local_rfc3339(self.clock.local(ms), self.clock.local(ms) - ms)
        };
        match (self.filter.since_ms, self.filter.until_ms) {
            (Some(a), Some(b)) => s.push_str(&format!(", from {} to {}", fmt(a), fmt(b))),
            (Some(a), None) => s.push_str(&format!(", from {}", fmt(a))),
            (None, Some(b)) => s.push_str(&format!(", before {}", fmt(b))),
            (None, None) => {}
        }
        if let Some(f) = &self.rules_file {
            s.push_str(&format!(" (rules: {})", f.display()));
        }
        s
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    /// The rows [`Selection::prep`]'s client mask lets through to classification are
    /// selected exactly as without it: IPv4, IPv6, IPv4-mapped IPv6 and host names.
    #[test]
    fn the_client_mask_selects_what_the_filter_selects() {
        use logscope_core::batch::Batch;
        use logscope_core::record::Record;
        let clients = [
            "20.171.3.4",
            "20.172.0.1",
            "::ffff:20.171.9.9",
            "2001:db8::7",
            "2001:db9::7",
            "crawler.example.net",
            "66.249.66.1",
        ];
        let mut b = Batch::default();
        for (n, c) in clients.iter().cycle().take(50).enumerate() {
            let r = Record {
                ts_ms: n as i64 * 1000,
                client: c.as_bytes(),
                ip: c.parse().ok(),
                ..Record::default()
            };
            b.push(&r, n as u64 + 1);
        }
        for nets in [
            vec!["20.171.0.0/16"],
            vec!["2001:db8::/32", "66.249.66.1/32"],
            vec!["20.171.3.4/32", "2001:db9::/32"],
            vec!["0.0.0.0/0"],
            vec!["::/0"],
            vec!["::ffff:0:0/96", "20.172.0.0/24"],
            vec!["20.171.255.255/32", "20.171.3.0/24"],
        ] {
            let mut filter = Filter::with_period(Some(3_000), Some(45_000));
            filter.clients = nets.iter().map(|n| n.parse().unwrap()).collect();
            let mut sel = Selection {
                filter,
                classifier: Classifier::default(),
                clock: Clock::parse("UTC").unwrap(),
                rules_file: None,
                networks: None,
                crawlers: None,
                hosting: None,
            };
            let pre = sel.prep()(&b);
            assert!(pre.client_rows.is_some(), "{nets:?}");
            let mut plain = Vec::new();
            sel.each_selected_with(&b, None, |i, _, _, _| plain.push(i));
            let mut masked = Vec::new();
            sel.each_selected_with(&b, Some(&pre), |i, _, _, _| masked.push(i));
            assert!(!plain.is_empty(), "{nets:?}");
            assert_eq!(plain, masked, "{nets:?}");
        }
    }
}
