//! `logscope agents`: the user-agent mix (devices, families, declared bots) of the
//! selection side by side with all traffic of the same period, and a seeded sample of
//! raw User-Agent strings.
//!
//! The sample is the `n` selected rows with the smallest seeded hash of (time, line,
//! client, agent string): the same input and seed give the same sample whatever order
//! the rows arrive in.

use std::collections::BTreeMap;
use std::collections::BinaryHeap;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

use std::sync::Arc;

use serde::Serialize;

use super::doc::{Doc, Figure, Section};
use super::mix64;
use crate::chart::{self, Bar, Bars, StackRow, Stacked};
use crate::classify::{AgentId, BotKind, Classifier, Device, RowClass};
use crate::forensics::crawlers::CrawlerRanges;
use crate::number::{pct1, share, thousands};
use crate::table::{Align, Cell, Table, bar};

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Sampled {
    hash: u64,
    ua: String,
    ts_ms: i64,
    client: String,
    agent: AgentId,
}

/// Accumulates `logscope agents`.
pub struct AgentsAcc {
    sel: Vec<u64>,
    all: Vec<u64>,
    sample_n: usize,
    seed: u64,
    heap: BinaryHeap<Sampled>,
    crawlers: Option<CrawlerTally>,
}

/// Requests per declared crawler of `--crawler-ranges`, and how many came from its
/// ranges.
struct CrawlerTally {
    ranges: Arc<CrawlerRanges>,
    /// Per agent id: 0 not worked out, 1 none of the crawlers, 2 + k crawler k.
    claims: Vec<u16>,
    /// Per crawler: (requests, verified).
    counts: Vec<(u64, u64)>,
}

impl AgentsAcc {
    /// With a sample of `sample_n` rows (0 = none) drawn with `seed`.
    pub fn new(sample_n: usize, seed: u64) -> AgentsAcc {
        AgentsAcc {
            sel: Vec::new(),
            all: Vec::new(),
            sample_n,
            seed,
            heap: BinaryHeap::new(),
            crawlers: None,
        }
    }

    /// Also counts, per crawler of `ranges`, the selected requests that claim it and
    /// those of them from its published ranges (rows must then be added one by one).
    pub fn with_crawlers(mut self, ranges: Arc<CrawlerRanges>) -> AgentsAcc {
        let n = ranges.crawlers.len();
        self.crawlers = Some(CrawlerTally {
            ranges,
            claims: Vec::new(),
            counts: vec![(0, 0); n],
        });
        self
    }

    /// Whether rows must be added one by one (a sample, or crawlers to verify).
    pub fn per_row(&self) -> bool {
        self.sample_n > 0 || self.crawlers.is_some()
    }

    /// Counts a row of the period (selected or not).
    #[inline]
    pub fn add_period(&mut self, rc: &RowClass) {
        bump(&mut self.all, rc.agent);
    }

    /// Counts `n` rows of agent class `agent` that are all selected (a report whose
    /// filter selects the whole period, without a sample: counted per distinct agent).
    pub fn add_unsampled(&mut self, agent: AgentId, n: u64) {
        debug_assert_eq!(self.sample_n, 0);
        for v in [&mut self.all, &mut self.sel] {
            let i = agent as usize;
            if v.len() <= i {
                v.resize(i + 1, 0);
            }
            v[i] += n;
        }
    }

    /// Whether the report lists a sample (rows must then be added one by one).
    pub fn samples(&self) -> bool {
        self.sample_n > 0
    }

    /// Counts a selected row; `ua`, `line` and `client` feed the sample.
    #[inline]
    pub fn add_selected(
        &mut self,
        rc: &RowClass,
        ts_ms: i64,
        line: u64,
        ua: Option<&str>,
        cls: &Classifier,
    ) {
        bump(&mut self.sel, rc.agent);
        if let Some(t) = &mut self.crawlers {
            let id = rc.agent as usize;
            if t.claims.len() <= id {
                t.claims.resize(id + 1, 0);
            }
            if t.claims[id] == 0 {
                let claim = t.ranges.claimed(&cls.agents.info(rc.agent).family);
                t.claims[id] = claim.map_or(1, |k| 2 + k as u16);
            }
            if t.claims[id] >= 2 {
                let k = usize::from(t.claims[id] - 2);
                t.counts[k].0 += 1;
                if t.ranges.verified(k, rc.ip.map(crate::net::canonical)) {
                    t.counts[k].1 += 1;
                }
            }
        }
        if self.sample_n == 0 {
            return;
        }
        let mut h = rustc_hash::FxHasher::default();
        ua.hash(&mut h);
        rc.client.hash(&mut h);
        let hash = mix64(self.seed ^ mix64(ts_ms as u64 ^ mix64(line ^ mix64(h.finish()))));
        if self.heap.len() >= self.sample_n && self.heap.peek().is_some_and(|top| top.hash < hash) {
            return;
        }
        self.heap.push(Sampled {
            hash,
            ua: ua.unwrap_or("").to_string(),
            ts_ms,
            client: cls.key_label(rc.client),
            agent: rc.agent,
        });
        if self.heap.len() > self.sample_n {
            self.heap.pop();
        }
    }

    /// The result, listing up to `top` families and bots.
    pub fn finish(
        self,
        cls: &Classifier,
        top: usize,
        selection: &str,
        origin: &str,
    ) -> AgentsReport {
        let infos = cls.agents.infos();
        let get = |v: &Vec<u64>, i: usize| v.get(i).copied().unwrap_or(0);
        let n = infos.len();
        let sel_total: u64 = self.sel.iter().sum();
        let all_total: u64 = self.all.iter().sum();
        let mut devices: BTreeMap<Device, (u64, u64)> = BTreeMap::new();
        let mut families: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        let mut bots: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        let mut kinds: BTreeMap<BotKind, (u64, u64)> = BTreeMap::new();
        let mut distinct_sel = 0u64;
        for (i, info) in infos.iter().enumerate().take(n) {
            let (s, a) = (get(&self.sel, i), get(&self.all, i));
            if s == 0 && a == 0 {
                continue;
            }
            distinct_sel += u64::from(s > 0);
            add2(devices.entry(info.device).or_default(), s, a);
            add2(families.entry(info.family.clone()).or_default(), s, a);
            if let Some(k) = info.bot {
                add2(bots.entry(info.label.clone()).or_default(), s, a);
                add2(kinds.entry(k).or_default(), s, a);
            }
        }
        let mk = |name: String, (s, a): (u64, u64)| MixRow {
            name,
            selected: s,
            selected_share: share(s, sel_total),
            all: a,
            all_share: share(a, all_total),
        };
        let devices: Vec<MixRow> = Device::ALL
            .iter()
            .filter_map(|d| devices.get(d).map(|v| mk(d.name().to_string(), *v)))
            .collect();
        let ranked = |m: BTreeMap<String, (u64, u64)>| -> (Vec<MixRow>, u64) {
            let len = m.len() as u64;
            let mut v: Vec<MixRow> = m.into_iter().map(|(k, v)| mk(k, v)).collect();
            v.sort_by(|a, b| {
                b.selected
                    .cmp(&a.selected)
                    .then(b.all.cmp(&a.all))
                    .then_with(|| a.name.cmp(&b.name))
            });
            v.truncate(top);
            (v, len)
        };
        let (families, families_total) = ranked(families);
        let (bots, bots_total) = ranked(bots);
        let bot_kinds: Vec<MixRow> = BotKind::ALL
            .iter()
            .filter_map(|k| kinds.get(k).map(|v| mk(k.name().to_string(), *v)))
            .collect();
        let mobile = |v: &Vec<u64>| -> u64 {
            infos
                .iter()
                .enumerate()
                .filter(|(_, i)| i.device.is_mobile())
                .map(|(i, _)| get(v, i))
                .sum()
        };
        let mut sample: Vec<SampleRow> = self
            .heap
            .into_vec()
            .into_iter()
            .map(|s| SampleRow {
                time: crate::time::local_rfc3339_ms(s.ts_ms, 0),
                ts_ms: s.ts_ms,
                client: s.client,
                class: cls.agents.info(s.agent).label.clone(),
                family: cls.agents.info(s.agent).family.clone(),
                user_agent: s.ua,
            })
            .collect();
        sample.sort_by(|a, b| {
            (a.ts_ms, &a.user_agent, &a.client).cmp(&(b.ts_ms, &b.user_agent, &b.client))
        });
        let crawlers = self.crawlers.map_or_else(Vec::new, |t| {
            t.ranges
                .crawlers
                .iter()
                .zip(&t.counts)
                .map(|(c, &(requests, verified))| CrawlerRow {
                    name: c.name.clone(),
                    requests,
                    verified,
                    impostors: requests - verified,
                    prefixes: c.prefixes as u64,
                })
                .collect()
        });
        AgentsReport {
            crawlers,
            origin: origin.to_string(),
            selection: selection.to_string(),
            selected: sel_total,
            all: all_total,
            mobile_selected: mobile(&self.sel),
            mobile_all: mobile(&self.all),
            distinct_classes_selected: distinct_sel,
            families_total,
            bots_total,
            devices,
            families,
            bots,
            bot_kinds,
            sample_seed: (self.sample_n > 0).then_some(self.seed),
            sample,
        }
    }
}

fn bump(v: &mut Vec<u64>, id: AgentId) {
    let i = id as usize;
    if v.len() <= i {
        v.resize(i + 1, 0);
    }
    v[i] += 1;
}

fn add2(e: &mut (u64, u64), s: u64, a: u64) {
    e.0 += s;
    e.1 += a;
}

/// One line of the mix.
#[derive(Clone, Debug, Serialize)]
pub struct MixRow {
    /// Device, family, bot or bot kind.
    pub name: String,
    /// Selected requests.
    pub selected: u64,
    /// Share of the selection (0–1).
    pub selected_share: f64,
    /// Requests in all traffic of the period.
    pub all: u64,
    /// Share of all traffic (0–1).
    pub all_share: f64,
}

/// One sampled request.
#[derive(Clone, Debug, Serialize)]
pub struct SampleRow {
    /// Arrival, RFC 3339 UTC.
    pub time: String,
    /// Arrival, UTC ms.
    #[serde(skip)]
    pub ts_ms: i64,
    /// Client address (or host name).
    pub client: String,
    /// Agent class.
    pub class: String,
    /// Family.
    pub family: String,
    /// The raw User-Agent (escape before printing).
    pub user_agent: String,
}

/// One declared crawler of `--crawler-ranges`: the selected requests claiming it, and
/// how many came from its published ranges.
#[derive(Clone, Debug, Serialize)]
pub struct CrawlerRow {
    /// The name given (`googlebot`); agents named so or `NAME-variant` claim it.
    pub name: String,
    /// Selected requests whose User-Agent claims it.
    pub requests: u64,
    /// Of those, from an address in its ranges.
    pub verified: u64,
    /// Of those, from elsewhere (or from a client logged without an address).
    pub impostors: u64,
    /// Prefixes in its range file.
    pub prefixes: u64,
}

/// The result of `logscope agents`.
#[derive(Clone, Debug, Serialize)]
pub struct AgentsReport {
    /// Where the rows came from.
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub origin: String,
    /// The filter, described.
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub selection: String,
    /// Selected requests.
    pub selected: u64,
    /// All requests of the period.
    pub all: u64,
    /// Selected requests from mobile browsers (iOS + Android).
    pub mobile_selected: u64,
    /// All requests of the period from mobile browsers.
    pub mobile_all: u64,
    /// Distinct agent classifications among the selected requests.
    pub distinct_classes_selected: u64,
    /// Families seen (the list holds the top ones).
    pub families_total: u64,
    /// Declared bots seen (the list holds the top ones).
    pub bots_total: u64,
    /// Per device, in fixed order.
    pub devices: Vec<MixRow>,
    /// Top families.
    pub families: Vec<MixRow>,
    /// Top declared bots.
    pub bots: Vec<MixRow>,
    /// Bots per purpose.
    pub bot_kinds: Vec<MixRow>,
    /// Declared crawlers checked against their published ranges (`--crawler-ranges`).
    pub crawlers: Vec<CrawlerRow>,
    /// Seed of the sample.
    pub sample_seed: Option<u64>,
    /// The sample, in time order.
    pub sample: Vec<SampleRow>,
}

/// The crawlers' table: requests, verified, impostors and their share.
pub fn crawler_table(rows: &[CrawlerRow]) -> Table {
    let mut t = Table::new(&[
        ("crawler", Align::Left),
        ("requests", Align::Right),
        ("verified", Align::Right),
        ("impostors", Align::Right),
        ("impostor share", Align::Right),
    ]);
    for r in rows {
        t.row([
            Cell::from(r.name.clone()),
            Cell::count(r.requests),
            Cell::count(r.verified),
            Cell::count(r.impostors),
            Cell::fraction(
                share(r.impostors, r.requests),
                pct1(r.impostors, r.requests),
            ),
        ]);
    }
    t
}

fn mix_table(first: &str, rows: &[MixRow], sel: u64, all: u64) -> Table {
    let mut t = Table::new(&[
        (first, Align::Left),
        ("selected", Align::Right),
        ("share", Align::Right),
        ("all", Align::Right),
        ("share", Align::Right),
    ]);
    for r in rows {
        t.row([
            Cell::from(r.name.clone()),
            Cell::from(thousands(r.selected)),
            Cell::from(pct1(r.selected, sel)),
            Cell::from(thousands(r.all)),
            Cell::from(pct1(r.all, all)),
        ]);
    }
    t
}

impl AgentsReport {
    /// The report for people.
    pub fn doc(&self) -> Doc {
        let lines = vec![
            format!("source: {}", self.origin),
            format!("selection: {}", self.selection),
            format!(
                "{} selected requests of {} in the period ({})",
                thousands(self.selected),
                thousands(self.all),
                pct1(self.selected, self.all)
            ),
            format!(
                "mobile browsers (iOS + Android): {} of the selection, {} of all traffic",
                pct1(self.mobile_selected, self.selected),
                pct1(self.mobile_all, self.all)
            ),
            "A User-Agent is a claim: \"ios\" means \"says it is an iPhone\".".to_string(),
        ];
        let mut sections = vec![
            Section {
                title: Some("Devices".into()),
                table: Some(mix_table("device", &self.devices, self.selected, self.all)),
                notes: vec![],
            },
            Section {
                title: Some(format!(
                    "Families (top {} of {})",
                    self.families.len(),
                    self.families_total
                )),
                table: Some(mix_table("family", &self.families, self.selected, self.all)),
                notes: vec![],
            },
            Section {
                title: Some(format!(
                    "Bots by name (top {} of {})",
                    self.bots.len(),
                    self.bots_total
                )),
                table: Some(mix_table("bot", &self.bots, self.selected, self.all)),
                notes: vec![],
            },
            Section {
                title: Some("Bots by purpose".into()),
                table: Some(mix_table(
                    "purpose",
                    &self.bot_kinds,
                    self.selected,
                    self.all,
                )),
                notes: vec![],
            },
        ];
        if !self.crawlers.is_empty() {
            sections.push(Section {
                title: Some("Declared crawlers against their published ranges".into()),
                table: Some(crawler_table(&self.crawlers)),
                notes: vec![
                    "An impostor claims the crawler's name from an address outside the ranges its operator publishes.".into(),
                ],
            });
        }
        // CSV is data: counts as integers, shares as fractions (6 decimals).
        let mut csv = Table::new(&[
            ("group", Align::Left),
            ("name", Align::Left),
            ("selected", Align::Right),
            ("selected_share", Align::Right),
            ("all", Align::Right),
            ("all_share", Align::Right),
        ]);
        for (g, rows) in [
            ("device", &self.devices),
            ("family", &self.families),
            ("bot", &self.bots),
            ("purpose", &self.bot_kinds),
        ] {
            for r in rows {
                csv.row([
                    g.to_string(),
                    r.name.clone(),
                    r.selected.to_string(),
                    format!("{:.6}", r.selected_share),
                    r.all.to_string(),
                    format!("{:.6}", r.all_share),
                ]);
            }
        }
        let mut csv = Some(csv);
        if let Some(seed) = self.sample_seed {
            let mut t = Table::new(&[
                ("time (UTC)", Align::Left),
                ("client", Align::Left),
                ("class", Align::Left),
                ("user agent", Align::Left),
            ])
            .with_csv_headers(&["time", "client", "class", "user_agent"]);
            for s in &self.sample {
                t.row([
                    s.time.clone(),
                    s.client.clone(),
                    s.class.clone(),
                    s.user_agent.clone(),
                ]);
            }
            sections.push(Section {
                title: Some(format!(
                    "Sample of {} selected requests (seed {seed})",
                    self.sample.len()
                )),
                table: Some(t),
                notes: vec![],
            });
            csv = None;
        }
        let csv_section = sections.len() - 1;
        Doc {
            title: "User agents: selection vs all traffic".into(),
            lines,
            sections,
            csv_section,
            csv,
            figure: None,
            figures: self.figures(),
        }
    }

    /// The charts: the device mix of the selection and of all traffic as stacked
    /// shares, and bars of the top families (at most 15) in the selection.
    pub fn figures(&self) -> Vec<Figure> {
        if self.selected == 0 && self.all == 0 {
            return Vec::new();
        }
        let keys: Vec<String> = self.devices.iter().map(|d| d.name.clone()).collect();
        let mut rows = vec![StackRow {
            label: "selection".into(),
            values: self.devices.iter().map(|d| d.selected as f64).collect(),
        }];
        if self.all != self.selected {
            rows.push(StackRow {
                label: "all traffic".into(),
                values: self.devices.iter().map(|d| d.all as f64).collect(),
            });
        }
        let mut text = String::new();
        let width = keys.iter().map(|k| k.chars().count()).max().unwrap_or(0);
        let _ = writeln!(text, "{:width$}  selection   all traffic", "device");
        for d in &self.devices {
            let line = format!(
                "{:width$}  {:>9}  {:>12}  {}",
                d.name,
                pct1(d.selected, self.selected),
                pct1(d.all, self.all),
                bar(d.selected as f64, self.selected as f64, 30)
            );
            let _ = writeln!(text, "{}", line.trim_end());
        }
        let _ = write!(text, "bar: share of the selection (30 characters = 100%)");
        let title = "Device mix: selection vs all traffic".to_string();
        let mut out = vec![Figure::new(
            title.clone(),
            chart::stacked(&Stacked { title, keys, rows }),
            Some(text),
        )];
        if !self.families.is_empty() {
            let n = self.families.len().min(15);
            let title = format!("Top {n} families in the selection");
            out.push(Figure::new(
                title.clone(),
                chart::bars(&Bars {
                    title,
                    bars: self
                        .families
                        .iter()
                        .take(n)
                        .map(|f| Bar {
                            label: f.name.clone(),
                            value: f.selected as f64,
                            text: format!(
                                "{} ({})",
                                thousands(f.selected),
                                pct1(f.selected, self.selected)
                            ),
                        })
                        .collect(),
                }),
                None,
            ));
        }
        out
    }
}

impl crate::forensics::doc::Document for AgentsReport {
    fn doc(&self, width: usize) -> Doc {
        let _ = width;
        AgentsReport::doc(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::Batch;
    use crate::record::Record;

    const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1";
    const ANDROID: &str = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36";
    const GPT: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";

    fn report(sample: usize, seed: u64, reverse: bool) -> AgentsReport {
        let mut b = Batch::default();
        let uas = [
            IPHONE, ANDROID, GPT, "curl/8", IPHONE, ANDROID, GPT, GPT, GPT, GPT,
        ];
        for (n, ua) in uas.iter().enumerate() {
            let q: &[u8] = if n < 2 || n == 4 || n == 5 {
                b"search=x"
            } else {
                b"title=A"
            };
            b.push(
                &Record {
                    ts_ms: n as i64,
                    client: b"192.0.2.1",
                    ip: "192.0.2.1".parse().ok(),
                    path: Some(b"/index.php"),
                    query: Some(q),
                    user_agent: Some(ua.as_bytes()),
                    ..Record::default()
                },
                n as u64 + 1,
            );
        }
        let mut cls = Classifier::default();
        let mut acc = AgentsAcc::new(sample, seed);
        let mut idx: Vec<usize> = (0..b.len()).collect();
        if reverse {
            idx.reverse();
        }
        for i in idx {
            let rc = cls.classify(&b, i);
            acc.add_period(&rc);
            if rc.heavy.is_heavy() {
                acc.add_selected(&rc, b.ts_ms[i], b.line_no(i), b.user_agent.get(i), &cls);
            }
        }
        acc.finish(&cls, 10, "heavy", "test")
    }

    #[test]
    fn mix_and_sample() {
        let r = report(2, 7, false);
        assert_eq!(
            (r.selected, r.all, r.mobile_selected, r.mobile_all),
            (4, 10, 4, 4)
        );
        let ios = r.devices.iter().find(|d| d.name == "ios").unwrap();
        assert_eq!((ios.selected, ios.all), (2, 2));
        assert_eq!(r.bots[0].name, "GPTBot");
        assert_eq!((r.bots[0].selected, r.bots[0].all), (0, 5));
        assert_eq!(r.sample.len(), 2);
        // Same seed, any order: the same sample; JSON identical.
        let again = report(2, 7, true);
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            serde_json::to_string(&again).unwrap()
        );
        let text = r.doc().to_text(80, false);
        assert!(
            text.contains("100.0% of the selection, 40.0% of all traffic"),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    }
}
