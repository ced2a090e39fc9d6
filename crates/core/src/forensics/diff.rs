//! `logscope diff`: a baseline period against the incident, per network, autonomous
//! system, country, agent family, path class and status — what grew and what is new,
//! ranked by the load it added. The baseline is scaled to the incident's length: its
//! `baseline` is the requests expected in the incident window at the baseline's rate,
//! and `added` is the incident's requests less that.

use std::collections::BTreeMap;

use serde::Serialize;

use super::doc::{Doc, Section};
use crate::number::thousands;
use crate::table::{Align, Cell, Table};

/// The axes, in the order of the report.
pub const AXES: [&str; 6] = ["network", "asn", "country", "agent", "path_class", "status"];

/// One period's requests per axis and value.
#[derive(Clone, Debug, Default)]
pub struct Side {
    /// Per axis (one of [`AXES`]), requests per value.
    pub counts: BTreeMap<&'static str, BTreeMap<String, u64>>,
    /// All requests.
    pub total: u64,
    /// The period's length, ms.
    pub span_ms: i64,
}

/// One value of one axis.
#[derive(Clone, Debug, Serialize)]
pub struct DiffRow {
    /// `network`, `asn`, `country`, `agent`, `path_class` or `status`.
    pub axis: String,
    /// The value (`100.1.7.0/24`, `AS64601 RESI-ONE`, `KR`, `Chrome`, `search`, `200`).
    pub value: String,
    /// Requests expected in the incident window at the baseline's rate.
    pub baseline: f64,
    /// Requests in the incident window.
    pub incident: u64,
    /// `incident - baseline`: the load it added (negative: it shrank).
    pub added: f64,
    /// Requests in the baseline period, unscaled.
    pub baseline_requests: u64,
    /// Not seen at all in the baseline.
    pub new: bool,
}

/// The result of `logscope diff`.
#[derive(Clone, Debug, Serialize)]
pub struct DiffReport {
    /// The filter, described (in the JSON envelope).
    #[serde(skip)]
    pub selection: String,
    /// The baseline period's start and end (RFC 3339 in the report's zone; end exclusive).
    pub baseline_since: String,
    /// See `baseline_since`.
    pub baseline_until: String,
    /// The incident period's start and end.
    pub incident_since: String,
    /// See `incident_since`.
    pub incident_until: String,
    /// Baseline requests, unscaled.
    pub baseline_requests: u64,
    /// Incident requests.
    pub incident_requests: u64,
    /// incident length ÷ baseline length.
    pub scale: f64,
    /// The axes compared (`asn` and `country` only with a network database).
    pub axes: Vec<String>,
    /// Per axis, the `top` values that added the most load, most first; then across
    /// the axes by added load (`rows` holds each axis's top rows, ranked by `added`).
    pub rows: Vec<DiffRow>,
}

/// Compares `base` with `inc` on `axes`, keeping `top` rows per axis (0: all).
pub fn compare(
    base: &Side,
    inc: &Side,
    axes: &[&'static str],
    top: usize,
    baseline: (String, String),
    incident: (String, String),
    selection: String,
) -> DiffReport {
    let scale = if base.span_ms > 0 {
        inc.span_ms as f64 / base.span_ms as f64
    } else {
        0.0
    };
    let empty = BTreeMap::new();
    let mut rows = Vec::new();
    for &axis in axes {
        let b = base.counts.get(axis).unwrap_or(&empty);
        let i = inc.counts.get(axis).unwrap_or(&empty);
        let mut axis_rows: Vec<DiffRow> = Vec::new();
        let values: std::collections::BTreeSet<&String> = b.keys().chain(i.keys()).collect();
        for v in values {
            let bn = b.get(v).copied().unwrap_or(0);
            let inn = i.get(v).copied().unwrap_or(0);
            let expected = bn as f64 * scale;
            axis_rows.push(DiffRow {
                axis: axis.to_string(),
                value: v.clone(),
                baseline: round1(expected),
                incident: inn,
                added: round1(inn as f64 - expected),
                baseline_requests: bn,
                new: bn == 0,
            });
        }
        axis_rows.sort_by(|a, b| {
            b.added
                .total_cmp(&a.added)
                .then(b.incident.cmp(&a.incident))
                .then_with(|| a.value.cmp(&b.value))
        });
        if top > 0 {
            axis_rows.truncate(top);
        }
        rows.extend(axis_rows);
    }
    rows.sort_by(|a, b| {
        b.added
            .total_cmp(&a.added)
            .then_with(|| (&a.axis, &a.value).cmp(&(&b.axis, &b.value)))
    });
    DiffReport {
        selection,
        baseline_since: baseline.0,
        baseline_until: baseline.1,
        incident_since: incident.0,
        incident_until: incident.1,
        baseline_requests: base.total,
        incident_requests: inc.total,
        scale,
        axes: axes.iter().map(|a| a.to_string()).collect(),
        rows,
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn signed(x: f64) -> String {
    let n = x.round() as i64;
    if n > 0 {
        format!("+{}", thousands(n as u64))
    } else if n < 0 {
        format!("−{}", thousands(n.unsigned_abs()))
    } else {
        "0".into()
    }
}

impl DiffReport {
    /// The report for people: what grew most across the axes, then each axis.
    pub fn doc(&self) -> Doc {
        let lines = vec![
            format!("selection: {}", self.selection),
            format!(
                "incident {} to {}: {} requests; baseline {} to {}: {} requests, ×{:.4} to the incident's length = {} expected",
                self.incident_since,
                self.incident_until,
                thousands(self.incident_requests),
                self.baseline_since,
                self.baseline_until,
                thousands(self.baseline_requests),
                self.scale,
                thousands((self.baseline_requests as f64 * self.scale).round() as u64)
            ),
            "baseline: the requests expected in the incident window at the baseline's rate; added: the incident's less that.".to_string(),
        ];
        let table = |rows: &[&DiffRow], with_axis: bool| {
            let mut cols = vec![];
            if with_axis {
                cols.push(("axis", Align::Left));
            }
            cols.extend([
                ("value", Align::Left),
                ("baseline", Align::Right),
                ("incident", Align::Right),
                ("added", Align::Right),
                ("", Align::Left),
            ]);
            let mut t = Table::new(&cols);
            for r in rows {
                let mut cells = vec![];
                if with_axis {
                    cells.push(Cell::from(r.axis.clone()));
                }
                cells.extend([
                    Cell::from(r.value.clone()),
                    Cell::from(thousands(r.baseline.round() as u64)),
                    Cell::count(r.incident),
                    Cell::from(signed(r.added)),
                    Cell::from(if r.new { "new" } else { "" }.to_string()),
                ]);
                t.row(cells);
            }
            t
        };
        let mut sections = vec![Section {
            title: Some("What added the most load".into()),
            table: Some(table(&self.rows.iter().take(15).collect::<Vec<_>>(), true)),
            notes: vec![],
        }];
        for axis in &self.axes {
            let rows: Vec<&DiffRow> = self.rows.iter().filter(|r| &r.axis == axis).collect();
            sections.push(Section {
                title: Some(format!("By {}", axis.replace('_', " "))),
                table: Some(table(&rows, false)),
                notes: vec![],
            });
        }
        let mut csv = Table::new(&[
            ("axis", Align::Left),
            ("value", Align::Left),
            ("baseline", Align::Right),
            ("incident", Align::Right),
            ("added", Align::Right),
            ("baseline_requests", Align::Right),
            ("new", Align::Left),
        ]);
        for r in &self.rows {
            csv.row([
                r.axis.clone(),
                r.value.clone(),
                format!("{:.1}", r.baseline),
                r.incident.to_string(),
                format!("{:.1}", r.added),
                r.baseline_requests.to_string(),
                r.new.to_string(),
            ]);
        }
        Doc {
            title: "What changed: the incident against the baseline".into(),
            lines,
            sections,
            csv_section: 0,
            csv: Some(csv),
            figure: None,
            figures: Vec::new(),
        }
    }
}

impl super::doc::Document for DiffReport {
    fn doc(&self, _width: usize) -> Doc {
        DiffReport::doc(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_baseline_is_scaled_and_new_values_marked() {
        let mut base = Side {
            span_ms: 24 * 3_600_000,
            total: 240,
            ..Side::default()
        };
        base.counts
            .entry("network")
            .or_default()
            .insert("10.0.0.0/24".into(), 240);
        let mut inc = Side {
            span_ms: 3_600_000,
            total: 110,
            ..Side::default()
        };
        let n = inc.counts.entry("network").or_default();
        n.insert("10.0.0.0/24".into(), 10);
        n.insert("10.9.9.0/24".into(), 100);
        let r = compare(
            &base,
            &inc,
            &["network"],
            0,
            ("b0".into(), "b1".into()),
            ("i0".into(), "i1".into()),
            "all".into(),
        );
        assert_eq!(r.rows.len(), 2);
        assert_eq!(r.rows[0].value, "10.9.9.0/24");
        assert!(r.rows[0].new);
        assert_eq!(r.rows[0].added, 100.0);
        assert_eq!(r.rows[1].baseline, 10.0);
        assert_eq!(r.rows[1].added, 0.0);
    }
}
