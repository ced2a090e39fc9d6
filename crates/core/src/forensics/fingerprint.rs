//! `logscope fingerprint`: per network, autonomous system or agent family, the signals
//! operators tell a storm by — clients that fetch pages but never an asset, URL
//! uniqueness (distinct path and query ÷ requests), the share of heavy requests, of 304s
//! and of errors, and how many addresses came once.
//!
//! Memory: per group a tally and a distinct-URL counter (exact to 256 URLs, then a
//! 2 KiB HyperLogLog sketch), per (group, client) three counters.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::doc::{Doc, Section};
use super::top::Distinct;
use crate::classify::ClientKey;
use crate::number::{pct1, share, thousands};
use crate::table::{Align, Cell, Table};

/// What rows are grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum FingerprintBy {
    /// The client's network (--prefix-v4/--prefix-v6).
    Prefix,
    /// The client's autonomous system (--asn-db).
    Asn,
    /// The agent family (Chrome, Googlebot, python-requests).
    Agent,
}

#[derive(Default)]
struct Group {
    requests: u64,
    heavy: u64,
    not_modified: u64,
    errors: u64,
    uris: Distinct,
}

#[derive(Default, Clone, Copy)]
struct Client {
    requests: u32,
    pages: u32,
    assets: u32,
}

/// Accumulates the fingerprint; groups are keyed by `K` (a prefix, an AS, an agent id)
/// and labelled at the end.
pub struct FingerprintAcc<K> {
    groups: FxHashMap<K, Group>,
    clients: FxHashMap<(K, ClientKey), Client>,
}

impl<K: std::hash::Hash + Eq + Copy> Default for FingerprintAcc<K> {
    fn default() -> Self {
        FingerprintAcc {
            groups: FxHashMap::default(),
            clients: FxHashMap::default(),
        }
    }
}

/// One request, as the fingerprint sees it.
#[derive(Clone, Copy, Debug)]
pub struct Seen {
    /// A static file (an asset), not a page.
    pub asset: bool,
    /// A heavy request.
    pub heavy: bool,
    /// The status.
    pub status: u16,
    /// A hash of path and query.
    pub uri: u64,
}

impl<K: std::hash::Hash + Eq + Copy> FingerprintAcc<K> {
    /// Adds a request of `client` in `group`.
    #[inline]
    pub fn add(&mut self, group: K, client: ClientKey, s: Seen) {
        let g = self.groups.entry(group).or_default();
        g.requests += 1;
        g.heavy += u64::from(s.heavy);
        g.not_modified += u64::from(s.status == 304);
        g.errors += u64::from(s.status >= 400);
        g.uris.insert(s.uri);
        let c = self.clients.entry((group, client)).or_default();
        c.requests = c.requests.saturating_add(1);
        if s.asset {
            c.assets = c.assets.saturating_add(1);
        } else {
            c.pages = c.pages.saturating_add(1);
        }
    }

    /// The rows, groups with the same label merged (agent ids of one family), the
    /// `top` largest by requests (0: all).
    pub fn finish(self, label: &mut dyn FnMut(K) -> String, top: usize) -> Vec<FingerprintRow> {
        struct Merged {
            g: Group,
            clients: u64,
            once: u64,
            page_only: u64,
        }
        let mut labels: FxHashMap<K, String> = FxHashMap::default();
        let mut merged: BTreeMap<String, Merged> = BTreeMap::new();
        for (k, g) in self.groups {
            let name = label(k);
            labels.insert(k, name.clone());
            match merged.get_mut(&name) {
                Some(m) => {
                    m.g.requests += g.requests;
                    m.g.heavy += g.heavy;
                    m.g.not_modified += g.not_modified;
                    m.g.errors += g.errors;
                    m.g.uris.merge(&g.uris);
                }
                None => {
                    merged.insert(
                        name,
                        Merged {
                            g,
                            clients: 0,
                            once: 0,
                            page_only: 0,
                        },
                    );
                }
            }
        }
        for ((k, _), c) in self.clients {
            let m = merged
                .get_mut(&labels[&k])
                .expect("every client's group is a group");
            m.clients += 1;
            m.once += u64::from(c.requests == 1);
            m.page_only += u64::from(c.pages > 0 && c.assets == 0);
        }
        let mut rows: Vec<FingerprintRow> = merged
            .into_iter()
            .map(|(group, m)| {
                let (uris, estimated) = m.g.uris.count();
                FingerprintRow {
                    group,
                    requests: m.g.requests,
                    clients: m.clients,
                    once_clients: m.once,
                    page_only_clients: m.page_only,
                    page_only_share: share(m.page_only, m.clients),
                    distinct_urls: uris,
                    urls_estimated: estimated,
                    url_uniqueness: share(uris.min(m.g.requests), m.g.requests),
                    heavy_share: share(m.g.heavy, m.g.requests),
                    not_modified_share: share(m.g.not_modified, m.g.requests),
                    error_share: share(m.g.errors, m.g.requests),
                }
            })
            .collect();
        rows.sort_by(|a, b| {
            b.requests
                .cmp(&a.requests)
                .then_with(|| a.group.cmp(&b.group))
        });
        if top > 0 {
            rows.truncate(top);
        }
        rows
    }
}

/// One group's signals.
#[derive(Clone, Debug, Serialize)]
pub struct FingerprintRow {
    /// The network, `AS64601 NAME` or the agent family.
    pub group: String,
    /// Requests.
    pub requests: u64,
    /// Distinct clients.
    pub clients: u64,
    /// Clients that sent one request.
    pub once_clients: u64,
    /// Clients that fetched pages and never an asset (a static file).
    pub page_only_clients: u64,
    /// Their share of the clients (0–1).
    pub page_only_share: f64,
    /// Distinct URLs (path and query).
    pub distinct_urls: u64,
    /// Whether `distinct_urls` is an estimate (more than 256: HyperLogLog, ±2.3%).
    pub urls_estimated: bool,
    /// Distinct URLs ÷ requests (1: no URL asked twice).
    pub url_uniqueness: f64,
    /// Share of heavy requests (0–1).
    pub heavy_share: f64,
    /// Share of 304 Not Modified (0–1): browsers revalidating their cache.
    pub not_modified_share: f64,
    /// Share of statuses ≥ 400 (0–1).
    pub error_share: f64,
}

/// The result of `logscope fingerprint`.
#[derive(Clone, Debug, Serialize)]
pub struct FingerprintReport {
    /// The filter, described (in the JSON envelope).
    #[serde(skip)]
    pub selection: String,
    /// What the rows are grouped by.
    pub by: FingerprintBy,
    /// Selected requests.
    pub requests: u64,
    /// The largest groups.
    pub groups: Vec<FingerprintRow>,
}

impl FingerprintReport {
    /// The report for people.
    pub fn doc(&self) -> Doc {
        let head = match self.by {
            FingerprintBy::Prefix => "network",
            FingerprintBy::Asn => "AS",
            FingerprintBy::Agent => "agent",
        };
        let mut t = Table::new(&[
            (head, Align::Left),
            ("requests", Align::Right),
            ("clients", Align::Right),
            ("once", Align::Right),
            ("no assets", Align::Right),
            ("unique", Align::Right),
            ("heavy", Align::Right),
            ("304", Align::Right),
            ("errors", Align::Right),
        ])
        .with_csv_headers(&[
            "group",
            "requests",
            "clients",
            "once_clients",
            "page_only_share",
            "url_uniqueness",
            "heavy_share",
            "not_modified_share",
            "error_share",
        ]);
        let frac = |f: f64| Cell::fraction(f, format!("{:.0}%", f * 100.0));
        for r in &self.groups {
            t.row([
                Cell::from(r.group.clone()),
                Cell::count(r.requests),
                Cell::count(r.clients),
                Cell::count(r.once_clients),
                frac(r.page_only_share),
                frac(r.url_uniqueness),
                frac(r.heavy_share),
                frac(r.not_modified_share),
                frac(r.error_share),
            ]);
        }
        let listed: u64 = self.groups.iter().map(|g| g.requests).sum();
        Doc {
            title: format!("Storm fingerprint by {head}"),
            lines: vec![
                format!("selection: {}", self.selection),
                format!(
                    "{} requests; the {} largest groups hold {} ({})",
                    thousands(self.requests),
                    self.groups.len(),
                    thousands(listed),
                    pct1(listed, self.requests)
                ),
                "no assets: clients that fetched pages and never an asset (people's browsers fetch CSS, scripts and images); unique: distinct URLs ÷ requests (crawlers rarely ask twice); 304: revalidations, which browsers with a cache send and bots rarely; once: addresses that sent one request (residential proxies rotate)."
                    .into(),
            ],
            sections: vec![Section {
                title: None,
                table: Some(t),
                notes: vec![],
            }],
            csv_section: 0,
            csv: None,
            figure: None,
            figures: Vec::new(),
        }
    }
}

impl super::doc::Document for FingerprintReport {
    fn doc(&self, _width: usize) -> Doc {
        FingerprintReport::doc(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_per_group() {
        let mut acc: FingerprintAcc<u8> = FingerprintAcc::default();
        let c = |n: u8| ClientKey::addr(std::net::IpAddr::from([10, 0, 0, n]));
        let page = |uri: u64| Seen {
            asset: false,
            heavy: true,
            status: 200,
            uri,
        };
        // A bot group: two clients, pages only, every URL new.
        for k in 0..4 {
            acc.add(1, c(1), page(k));
        }
        acc.add(1, c(2), page(99));
        // People: a page and its assets, revalidated.
        for n in 10..12 {
            acc.add(
                2,
                c(n),
                Seen {
                    heavy: false,
                    ..page(1)
                },
            );
            acc.add(
                2,
                c(n),
                Seen {
                    asset: true,
                    heavy: false,
                    status: 304,
                    uri: 2,
                },
            );
        }
        let rows = acc.finish(&mut |k| format!("g{k}"), 0);
        assert_eq!(rows[0].group, "g1");
        assert_eq!(rows[0].clients, 2);
        assert_eq!(rows[0].once_clients, 1);
        assert_eq!(rows[0].page_only_share, 1.0);
        assert_eq!(rows[0].url_uniqueness, 1.0);
        assert_eq!(rows[1].page_only_clients, 0);
        assert_eq!(rows[1].url_uniqueness, 0.5);
        assert_eq!(rows[1].not_modified_share, 0.5);
        assert_eq!(rows[1].heavy_share, 0.0);
    }
}
