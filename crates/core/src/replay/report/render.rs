//! The replay report for people: a [`Doc`] with the candidates side by side.

use super::labels::{LabelScope, bucket_label};
use super::{CandidateReport, ReplayReport, TimeRow, Who};
use crate::chart::{self, RefLine, Series, TimeSeries};
use crate::forensics::doc::{Doc, Figure, Section};
use crate::forensics::duration_label;
use crate::number::{pct1 as pct, thousands};
use crate::table::{Align, Cell, Style, Table, fraction_data, sparkline};

/// Widest sparkline, in characters.
const SPARK: usize = 60;

/// Gaps listed one by one under the time table (all are rows of it, and in JSON).
const GAPS_LISTED: usize = 20;

fn count_pct(n: u64, of: u64) -> String {
    format!("{} ({})", thousands(n), pct(n, of))
}

fn red_if(text: String, bad: bool) -> Cell {
    if bad {
        Cell::styled(text, Style::Red)
    } else {
        Cell::from(text)
    }
}

impl ReplayReport {
    /// The report as a document. CSV output holds the first table (one column per
    /// candidate).
    pub fn doc(&self) -> Doc {
        let n = self.candidates.len();
        let mut lines = Vec::new();
        let period = match (&self.first, &self.last) {
            (Some(a), Some(b)) => format!(", {a} to {b}"),
            _ => String::new(),
        };
        lines.push(format!(
            "Read {} records from {}; replayed {} requests in decision-time order (selection: {}{period}; times in {}).",
            thousands(self.records),
            self.origin,
            thousands(self.requests),
            self.selection,
            self.tz
        ));
        for c in &self.candidates {
            let mut d = c.description.lines();
            let first = d.next().unwrap_or_default();
            if first.starts_with(c.name.as_str()) {
                lines.push(format!("{} = {first}", c.label));
            } else {
                lines.push(format!("{} = {}: {first}", c.label, c.name));
            }
            // Continuation lines (a config's description, zones, rules).
            for l in d {
                lines.push(format!("{} · {}", c.label, l.trim_start()));
            }
        }
        let lr = &self.logged_refusals;
        let st: Vec<String> = lr.statuses.iter().map(u16::to_string).collect();
        if lr.dropped > 0 {
            lines.push(format!(
                "Already refused in the log (status {}): {} requests left out (--drop-logged-refusals).",
                st.join("/"),
                thousands(lr.dropped)
            ));
        } else if lr.replayed > 0 {
            lines.push(format!(
                "Already refused in the log (status {}): {} requests, a limiter was running; they are replayed like the others and counted apart below (--drop-logged-refusals leaves them out).",
                st.join("/"),
                thousands(lr.replayed)
            ));
        }
        if let Some(cap) = &self.capacity {
            lines.push(format!(
                "Capacity: {} requests per {}. Load = the requests a candidate covers: without the limit all of them, with it those it lets through.",
                thousands(cap.count()),
                duration_label(cap.window_ms() as i64)
            ));
        }
        if let Some(i) = &self.internal {
            lines.push(format!("Internal services: {i}."));
        }
        lines.extend(self.warnings.iter().cloned());
        if let Some(f) = &self.fleet {
            lines.push(f.headline());
        }

        let mut sections = vec![self.summary()];
        sections.push(self.classes_section());
        sections.push(self.time_section());
        for c in &self.candidates {
            if c.refused > 0 {
                sections.push(top_section(c, n));
            }
            if c.rules.len() > 1 {
                sections.push(rules_section(c, n));
            }
            if c.zones.len() > 1 {
                sections.push(zones_section(c, n));
            }
            if let Some(b) = &c.bans {
                sections.push(bans_section(c, b, n));
            }
        }
        if let Some(f) = &self.fleet {
            sections.push(f.section());
        }
        if let Some(w) = &self.waiting {
            let cands: Vec<(String, &super::Wait)> = self
                .candidates
                .iter()
                .filter_map(|c| {
                    c.wait
                        .as_ref()
                        .map(|w| (format!("{}: {}", c.label, c.name), w))
                })
                .collect();
            sections.extend(super::waits::sections(w, &cands));
        }
        if let Some(sw) = &self.sweep {
            sections.push(sw.section());
        }
        Doc {
            title: if n == 1 {
                "Replay: what the candidate limiter would have done".into()
            } else {
                format!("Replay: what {n} candidate limiters would have done")
            },
            lines,
            sections,
            csv_section: 0,
            csv: Some(self.csv_table()),
            figure: None,
            figures: self.figures(),
        }
    }

    /// The CSV: one row per candidate, one typed value per column (integers, shares
    /// as fractions, RFC 3339 times; empty = not applicable).
    fn csv_table(&self) -> Table {
        let w = self
            .capacity
            .map(|c| duration_label(c.window_ms() as i64))
            .unwrap_or_default();
        let peak_no = format!("peak_sliding_{w}_no_limit");
        let peak_lim = format!("peak_sliding_{w}_limited");
        let over_no = format!("aligned_{w}_windows_over_no_limit");
        let over_lim = format!("aligned_{w}_windows_over_limited");
        let aligned = format!("aligned_{w}_windows");
        let mut cols: Vec<&str> = vec![
            "candidate",
            "name",
            "requests_covered",
            "in_scope",
            "admitted",
            "admitted_share",
            "delayed",
            "delayed_share",
            "refused",
            "refused_share",
            "exempt",
            "out_of_scope",
            "delay_ms_mean",
            "delay_ms_max",
            "boundary",
            "logged_refusals_covered",
            "logged_refusals_refused",
            "first_refusal",
            "last_refusal",
        ];
        if self.capacity.is_some() {
            cols.extend([
                "capacity",
                peak_no.as_str(),
                peak_lim.as_str(),
                over_no.as_str(),
                over_lim.as_str(),
                aligned.as_str(),
            ]);
        }
        if self.fleet.is_some() {
            cols.extend(super::FleetReport::csv_heads());
        }
        let spec: Vec<(&str, Align)> = cols.iter().map(|c| (*c, Align::Left)).collect();
        let mut t = Table::new(&spec);
        for (ci, c) in self.candidates.iter().enumerate() {
            let mut r: Vec<Cell> = vec![
                Cell::from(c.label.clone()),
                Cell::from(c.name.clone()),
                Cell::count(c.covered),
                Cell::count(c.in_scope),
                Cell::count(c.admitted),
                Cell::fraction(c.admitted_share, fraction_data(c.admitted_share)),
                Cell::count(c.delayed),
                Cell::fraction(c.delayed_share, fraction_data(c.delayed_share)),
                Cell::count(c.refused),
                Cell::fraction(c.refused_share, fraction_data(c.refused_share)),
                Cell::count(c.exempt),
                Cell::count(c.out_of_scope),
                Cell::from(String::new()).with_data(format!("{:.3}", c.delay_ms_mean)),
                Cell::count(u64::from(c.delay_ms_max)),
                Cell::count(c.boundary),
                Cell::count(c.logged_refusals.covered),
                Cell::count(c.logged_refusals.refused),
                Cell::from(c.first_refusal.clone().unwrap_or_default()),
                Cell::from(c.last_refusal.clone().unwrap_or_default()),
            ];
            if let Some(cap) = &self.capacity {
                r.push(Cell::count(cap.count()));
                match &c.load {
                    Some(l) => r.extend([
                        Cell::count(l.peak_without),
                        Cell::count(l.peak_with),
                        Cell::count(l.over_without),
                        Cell::count(l.over_with),
                        Cell::count(l.windows),
                    ]),
                    None => r.extend((0..5).map(|_| Cell::from(""))),
                }
            }
            if let Some(f) = &self.fleet {
                r.extend(f.csv_cells(ci));
            }
            t.row(r);
        }
        t
    }

    /// HTML charts: per candidate, refusals over time, and with a capacity the load
    /// without and with the limit against it.
    fn figures(&self) -> Vec<Figure> {
        let w = self.bucket_ms;
        let per = duration_label(w);
        // Zero points at each gap's ends, so a line does not bridge a silence.
        let series = |f: &dyn Fn(&super::TimeCell) -> u64, c: usize| -> Vec<(i64, f64)> {
            let mut pts = Vec::with_capacity(self.over_time.len());
            let mut gaps = self.gaps.iter().peekable();
            for (i, r) in self.over_time.iter().enumerate() {
                while let Some(g) = gaps.next_if(|g| g.before <= i) {
                    pts.push((g.local_ms, 0.0));
                    pts.push((g.end_local_ms - w, 0.0));
                }
                pts.push((r.local_ms, r.candidates.get(c).map_or(0, f) as f64));
            }
            pts
        };
        let mut out = Vec::new();
        if let Some(sw) = &self.sweep {
            out.push(sw.figure());
        }
        for (i, c) in self.candidates.iter().enumerate() {
            let title = format!("{} refusals per {per}", c.label);
            out.push(Figure::new(
                title.clone(),
                chart::time_series(&TimeSeries {
                    title,
                    y_label: "refused requests".into(),
                    series: vec![Series {
                        name: format!("{} refused", c.label),
                        points: series(&|t| t.refused, i),
                    }],
                    reference: None,
                    shade: None,
                }),
                None,
            ));
            if let Some(cap) = self.capacity {
                // The capacity over one bucket: as given when the windows agree, else
                // scaled (the capacity sustained for the whole bucket).
                let win = (cap.window_ms() as i64).max(1);
                let per_bucket = cap.count() as f64 * w as f64 / win as f64;
                let cap_label = if win == w {
                    format!("capacity {} per {per}", thousands(cap.count()))
                } else {
                    format!(
                        "capacity {} per {} ({} per {per})",
                        thousands(cap.count()),
                        duration_label(win),
                        chart::number(per_bucket.round())
                    )
                };
                let title = format!("{} load per {per}: no limit and passed", c.label);
                out.push(Figure::new(
                    title.clone(),
                    chart::time_series(&TimeSeries {
                        title,
                        y_label: format!("requests per {per}"),
                        series: vec![
                            Series {
                                name: "no limit".into(),
                                points: series(&|t| t.covered, i),
                            },
                            Series {
                                name: format!("passed by {}", c.label),
                                points: series(&|t| t.passed, i),
                            },
                        ],
                        reference: Some(RefLine {
                            value: per_bucket,
                            label: cap_label,
                        }),
                        shade: None,
                    }),
                    None,
                ));
            }
        }
        out
    }

    fn summary(&self) -> Section {
        let mut cols: Vec<(&str, Align)> = vec![("", Align::Left)];
        for c in &self.candidates {
            cols.push((c.label.as_str(), Align::Right));
        }
        let mut t = Table::new(&cols);
        let cs = &self.candidates;
        let row = |t: &mut Table, name: &str, f: &dyn Fn(&CandidateReport) -> Cell| {
            let mut r = vec![Cell::from(name)];
            r.extend(cs.iter().map(f));
            t.row(r);
        };
        row(&mut t, "requests covered", &|c| thousands(c.covered).into());
        row(&mut t, "in scope (limited)", &|c| {
            thousands(c.in_scope).into()
        });
        row(&mut t, "admitted", &|c| {
            count_pct(c.admitted, c.in_scope).into()
        });
        row(&mut t, "delayed", &|c| {
            count_pct(c.delayed, c.in_scope).into()
        });
        row(&mut t, "refused", &|c| {
            red_if(count_pct(c.refused, c.in_scope), c.refused > 0)
        });
        if cs.iter().any(|c| c.challenged > 0) {
            row(&mut t, "challenged", &|c| {
                count_pct(c.challenged, c.in_scope).into()
            });
        }
        if cs.iter().any(|c| c.bans.is_some()) {
            row(&mut t, "bans (keys)", &|c| match &c.bans {
                Some(b) => format!("{} ({})", thousands(b.bans), thousands(b.banned_keys)).into(),
                None => "-".into(),
            });
        }
        if cs.iter().any(|c| c.exempt > 0) {
            row(&mut t, "exempt", &|c| thousands(c.exempt).into());
        }
        row(&mut t, "out of scope", &|c| {
            thousands(c.out_of_scope).into()
        });
        if cs.iter().any(|c| c.delayed > 0) {
            row(&mut t, "delay mean / max", &|c| {
                if c.delayed == 0 {
                    "-".into()
                } else {
                    format!(
                        "{:.0} / {} ms",
                        c.delay_ms_mean,
                        thousands(u64::from(c.delay_ms_max))
                    )
                    .into()
                }
            });
        }
        if self.logged_refusals.replayed > 0 {
            row(&mut t, "refused in the log: covered", &|c| {
                thousands(c.logged_refusals.covered).into()
            });
            row(&mut t, "  … refused here too", &|c| {
                count_pct(c.logged_refusals.refused, c.logged_refusals.covered).into()
            });
        }
        row(&mut t, "first refusal", &|c| {
            short_time(c.first_refusal.as_deref()).into()
        });
        row(&mut t, "last refusal", &|c| {
            short_time(c.last_refusal.as_deref()).into()
        });
        if self.candidates.iter().any(|c| c.retry_after.is_some()) {
            row(
                &mut t,
                "Retry-After p50 / p95 / max",
                &|c| match &c.retry_after {
                    Some(r) if r.refused > 0 => {
                        format!("{} / {} / {} s", r.p50_s, r.p95_s, thousands(r.max_s)).into()
                    }
                    Some(_) => "never".into(),
                    None => "-".into(),
                },
            );
        }
        if let Some(cap) = &self.capacity {
            let w = duration_label(cap.window_ms() as i64);
            row(
                &mut t,
                &format!("peak per sliding {w}, no limit"),
                &|c| match &c.load {
                    Some(l) => red_if(thousands(l.peak_without), l.peak_without > cap.count()),
                    None => "-".into(),
                },
            );
            row(
                &mut t,
                &format!("peak per sliding {w}, limited"),
                &|c| match &c.load {
                    Some(l) => red_if(thousands(l.peak_with), l.peak_with > cap.count()),
                    None => "-".into(),
                },
            );
            row(
                &mut t,
                &format!("aligned {w} windows over {}", thousands(cap.count())),
                &|c| match &c.load {
                    Some(l) => red_if(
                        format!(
                            "{} → {} of {}",
                            thousands(l.over_without),
                            thousands(l.over_with),
                            thousands(l.windows)
                        ),
                        l.over_with > 0,
                    ),
                    None => "-".into(),
                },
            );
        }
        if cs.iter().any(|c| c.boundary > 0) {
            row(&mut t, "on a 1 ms boundary", &|c| {
                thousands(c.boundary).into()
            });
        }
        let mut notes = Vec::new();
        if cs.iter().any(|c| c.boundary > 0) {
            notes.push(
                "On a 1 ms boundary: nginx decisions that would flip if the interval since the key's last request were 1 ms longer or shorter; nginx times them on another clock than the log's, so a replay can differ from the real server on these (and only these).".to_string(),
            );
        }
        if self.capacity.is_some() {
            notes.push(
                "Peak per sliding window: the most requests in any window of that length; aligned windows start on the report's clock (00:00, 00:10, …; no limit → limited, of windows with traffic), as heavy's \"peak per aligned\" counts.".to_string(),
            );
        }
        Section {
            title: Some("Decisions".into()),
            table: Some(t),
            notes,
        }
    }

    fn classes_section(&self) -> Section {
        let any_exempt = self.candidates.iter().any(|c| c.exempt > 0);
        let mut heads: Vec<String> = vec!["class".into(), "requests".into()];
        for c in &self.candidates {
            heads.push(format!("{} refused", c.label));
            if any_exempt {
                heads.push(format!("{} exempt", c.label));
            }
        }
        let cols: Vec<(&str, Align)> = heads
            .iter()
            .enumerate()
            .map(|(i, h)| (h.as_str(), if i == 0 { Align::Left } else { Align::Right }))
            .collect();
        let mut t = Table::new(&cols);
        for (i, total) in self.classes.iter().enumerate() {
            let mut r = vec![Cell::from(total.name), thousands(total.requests).into()];
            for c in &self.candidates {
                let cr = &c.classes[i];
                let loud = matches!(cr.class, Who::Identified | Who::Internal) && cr.refused > 0;
                let text = count_pct(cr.refused, cr.requests);
                r.push(if loud {
                    Cell::styled(format!("{text} !"), Style::Red)
                } else {
                    Cell::from(text)
                });
                if any_exempt {
                    r.push(thousands(cr.exempt).into());
                }
            }
            t.row(r);
        }
        Section {
            title: Some("Refused by class (share of the class's requests)".into()),
            table: Some(t),
            notes: vec![
                "Classes: internal = addresses, agents or users a candidate exempts or --internal names; identified = a user name (or --session-cookie); declared bots = agents that say they are crawlers or bots; anonymous browser-like = browser agents not identified (anonymous, or the log cannot tell); other = tools and missing agents.".into(),
            ],
        }
    }

    fn time_section(&self) -> Section {
        let cap = self.capacity;
        let w = self.bucket_ms;
        let marks = cap.filter(|c| c.window_ms() as i64 == w);
        // One "offered" column when every candidate covers the same requests.
        let same_cover = self.over_time.iter().all(|r| {
            r.candidates
                .windows(2)
                .all(|p| p[0].covered == p[1].covered)
        });
        let scope = match (self.over_time.first(), self.over_time.last()) {
            (Some(a), Some(b)) => LabelScope::of(a.local_ms, b.local_ms),
            _ => LabelScope::Any,
        };
        let mut heads: Vec<String> = vec!["start".into()];
        if cap.is_none() {
            heads.push("requests".into());
        }
        if cap.is_some() && same_cover {
            heads.push("no limit".into());
        }
        for c in &self.candidates {
            heads.push(format!("{} refused", c.label));
            if cap.is_some() {
                if !same_cover {
                    heads.push(format!("{} no limit", c.label));
                }
                heads.push(format!("{} passed", c.label));
            }
        }
        let cols: Vec<(&str, Align)> = heads
            .iter()
            .enumerate()
            .map(|(i, h)| (h.as_str(), if i == 0 { Align::Left } else { Align::Right }))
            .collect();
        let mut t = Table::new(&cols);
        let load_cell = |v: u64| match marks {
            Some(c) if v > c.count() => Cell::styled(format!("{} !", thousands(v)), Style::Red),
            _ => Cell::from(thousands(v)),
        };
        let mut gaps = self.gaps.iter().peekable();
        for (i, r) in self.over_time.iter().enumerate() {
            while let Some(g) = gaps.next_if(|g| g.before <= i) {
                // One row for the whole run: a label range, zeros.
                let mut row = vec![Cell::styled(
                    format!(
                        "{} … {}",
                        bucket_label(g.local_ms, w, scope),
                        bucket_label(g.end_local_ms, w, scope)
                    ),
                    Style::Red,
                )];
                row.resize(heads.len(), Cell::from("0"));
                t.row(row);
            }
            let mut row = vec![Cell::from(bucket_label(r.local_ms, w, scope))];
            if cap.is_none() {
                row.push(thousands(r.requests).into());
            }
            if cap.is_some() && same_cover {
                let cov = r.candidates.first().map_or(0, |c| c.covered);
                row.push(load_cell(cov));
            }
            for cell in &r.candidates {
                row.push(thousands(cell.refused).into());
                if cap.is_some() {
                    if !same_cover {
                        row.push(load_cell(cell.covered));
                    }
                    row.push(load_cell(cell.passed));
                }
            }
            t.row(row);
        }
        let mut notes = Vec::new();
        for (i, c) in self.candidates.iter().enumerate() {
            let (vals, per) = squeeze(&self.over_time, i, w);
            let max = vals.iter().copied().max().unwrap_or(0);
            let f: Vec<f64> = vals.iter().map(|&v| v as f64).collect();
            notes.push(format!(
                "{} refusals per {per}: {} (max {})",
                c.label,
                if max == 0 {
                    "none".to_string()
                } else {
                    // Zero slots as `·`: Markdown and HTML collapse runs of
                    // spaces (even no-break ones in some viewers); a dot keeps
                    // every slot in every format (HTML also has a chart).
                    format!("|{}|", sparkline(&f).replace(' ', "·"))
                },
                thousands(max)
            ));
        }
        if !self.gaps.is_empty() {
            let n = self.gaps.len();
            notes.push(format!(
                "{n} gap{} without any request ({} empty buckets of {} in all), one row each:",
                if n == 1 { "" } else { "s" },
                thousands(self.gaps.iter().map(|g| g.buckets).sum()),
                duration_label(w)
            ));
            for g in self.gaps.iter().take(GAPS_LISTED) {
                notes.push(format!(
                    "no requests from {} to {} ({} buckets)",
                    g.start.get(..19).unwrap_or(&g.start).replacen('T', " ", 1),
                    g.end.get(..19).unwrap_or(&g.end).replacen('T', " ", 1),
                    thousands(g.buckets)
                ));
            }
            if n > GAPS_LISTED {
                notes.push(format!(
                    "… and {} more gaps (all in the table and in --format json)",
                    thousands((n - GAPS_LISTED) as u64)
                ));
            }
        }
        if let Some(c) = marks {
            notes.push(format!(
                "! = above the capacity of {} per {}.",
                thousands(c.count()),
                duration_label(c.window_ms() as i64)
            ));
        }
        Section {
            title: Some(format!(
                "Refusals over time (per {}, {}{})",
                duration_label(self.bucket_ms),
                self.tz,
                self.over_time
                    .first()
                    .and_then(|r| scope.common(r.local_ms))
                    .map_or_else(String::new, |d| format!(", {d}"))
            )),
            table: Some(t),
            notes,
        }
    }
}

/// An RFC 3339 stamp as `YYYY-MM-DD HH:MM:SS.mmm` (the zone is in the header).
fn short_time(s: Option<&str>) -> String {
    match s {
        Some(s) if s.len() >= 23 => s[..23].replacen('T', " ", 1),
        Some(s) => s.to_string(),
        None => "-".into(),
    }
}

/// Candidate `c`'s refusals in at most [`SPARK`] slots of equal time (`k` buckets
/// each, empty buckets included), whatever the span; returns them and the slot width.
fn squeeze(rows: &[TimeRow], c: usize, w: i64) -> (Vec<u64>, String) {
    let (Some(a), Some(b)) = (rows.first(), rows.last()) else {
        return (Vec::new(), duration_label(w));
    };
    let n = ((b.local_ms - a.local_ms) / w).max(0) as u64 + 1;
    let k = n.div_ceil(SPARK as u64).max(1);
    let mut vals = vec![0u64; n.div_ceil(k) as usize];
    for r in rows {
        let slot = ((r.local_ms - a.local_ms) / w).max(0) as u64 / k;
        let slot = slot as usize;
        if let Some(v) = vals.get_mut(slot) {
            *v += r.candidates[c].refused;
        }
    }
    (vals, duration_label(w.saturating_mul(k as i64)))
}

fn top_section(c: &CandidateReport, n: usize) -> Section {
    let mut t = Table::new(&[
        ("kind", Align::Left),
        ("key", Align::Left),
        ("refused", Align::Right),
        ("its requests", Align::Right),
        ("share refused", Align::Right),
    ]);
    for (kind, rows) in [
        ("network", &c.top_refused.prefixes),
        ("address", &c.top_refused.ips),
        ("agent", &c.top_refused.agents),
    ] {
        for r in rows {
            t.row([
                Cell::from(kind),
                Cell::from(r.key.clone()),
                thousands(r.refused).into(),
                thousands(r.requests).into(),
                pct(r.refused, r.requests).into(),
            ]);
        }
    }
    Section {
        title: Some(format!("Most refused — {}", who(c, n))),
        table: Some(t),
        notes: vec![],
    }
}

fn rules_section(c: &CandidateReport, n: usize) -> Section {
    let mut t = Table::new(&[
        ("rule", Align::Left),
        ("in scope", Align::Right),
        ("admitted", Align::Right),
        ("delayed", Align::Right),
        ("refused", Align::Right),
        ("exempt", Align::Right),
    ]);
    for r in &c.rules {
        t.row([
            Cell::from(r.name.clone()),
            thousands(r.in_scope).into(),
            thousands(r.admitted).into(),
            thousands(r.delayed).into(),
            red_if(thousands(r.refused), r.refused > 0),
            thousands(r.exempt).into(),
        ]);
    }
    Section {
        title: Some(format!("By rule — {}", who(c, n))),
        table: Some(t),
        notes: vec![],
    }
}

fn zones_section(c: &CandidateReport, n: usize) -> Section {
    let mut t = Table::new(&[
        ("zone", Align::Left),
        ("limit", Align::Left),
        ("checked", Align::Right),
        ("passed", Align::Right),
        ("delayed", Align::Right),
        ("refused", Align::Right),
        ("peak keys", Align::Right),
    ]);
    for z in &c.zones {
        t.row([
            Cell::from(z.name.clone()),
            Cell::from(z.limit.clone()),
            thousands(z.checked).into(),
            thousands(z.passed).into(),
            thousands(z.delayed).into(),
            thousands(z.refused).into(),
            thousands(z.peak_keys as u64).into(),
        ]);
    }
    Section {
        title: Some(format!("By zone — {}", who(c, n))),
        table: Some(t),
        notes: vec![],
    }
}

/// Bans listed one by one (all of them are in JSON).
const BANS_LISTED: usize = 30;

fn bans_section(c: &CandidateReport, b: &super::BanSummary, n: usize) -> Section {
    let mut t = Table::new(&[
        ("key", Align::Left),
        ("banned at", Align::Left),
        ("until", Align::Left),
        ("for", Align::Right),
        ("ban #", Align::Right),
        ("requests lost", Align::Right),
        ("started by", Align::Left),
    ]);
    // The most costly bans when there are too many, shown in time order.
    let mut idx: Vec<usize> = (0..b.list.len()).collect();
    if idx.len() > BANS_LISTED {
        idx.sort_by(|&x, &y| b.list[y].lost.cmp(&b.list[x].lost).then(x.cmp(&y)));
        idx.truncate(BANS_LISTED);
        idx.sort_unstable();
    }
    for i in idx {
        let r = &b.list[i];
        let loud = matches!(r.trigger_class, Who::Identified | Who::Internal)
            || r.lost_by_class[Who::Identified.index()] > 0
            || r.lost_by_class[Who::Internal.index()] > 0;
        t.row([
            Cell::from(r.key.clone()),
            Cell::from(r.start.clone()),
            Cell::from(r.end.clone().unwrap_or_else(|| "never".into())),
            Cell::from(match r.length_ms {
                Some(ms) => duration_label(ms as i64),
                None => "for ever".into(),
            }),
            thousands(u64::from(r.nth)).into(),
            thousands(r.lost).into(),
            red_if(r.trigger_class.label().to_string(), loud),
        ]);
    }
    let mut notes = vec![format!(
        "{} bans of {} keys; {} requests lost to them, {} challenged; counted: {} ({} requests counted).",
        thousands(b.bans),
        thousands(b.banned_keys),
        thousands(b.lost),
        thousands(b.challenged),
        b.counted_by,
        thousands(b.counted)
    )];
    if b.list.len() > BANS_LISTED {
        notes.push(format!(
            "The {BANS_LISTED} bans that lost the most requests are listed; all {} are in --format json.",
            thousands(b.list.len() as u64)
        ));
    }
    notes.push(format!(
        "Identified users: {} bans started, {} requests lost; internal services: {} bans started, {} requests lost.",
        thousands(b.identified_bans),
        thousands(b.lost_identified),
        thousands(b.internal_bans),
        thousands(b.lost_internal)
    ));
    Section {
        title: Some(format!("Bans — {}", who(c, n))),
        table: Some(t),
        notes,
    }
}

fn who(c: &CandidateReport, n: usize) -> String {
    if n == 1 {
        c.name.clone()
    } else {
        format!("{} ({})", c.label, c.name)
    }
}

impl crate::forensics::doc::Document for crate::replay::report::ReplayReport {
    fn doc(&self, width: usize) -> Doc {
        let _ = width;
        crate::replay::report::ReplayReport::doc(self)
    }
}
