//! Choosing the limit (`replay --sweep`): one candidate spec with a range in place of its
//! count (`600..2400/10m,step=200,scope=heavy`) becomes one candidate per value, all
//! replayed in the one pass the replay makes; the trade-off is read off their reports —
//! refused per class, the peak per window against the capacity, the waits — and the
//! choice named: the smallest refusal that keeps every window under the capacity, and the
//! knee of the refusal curve.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::report::{CandidateReport, Wait, Who};

/// Most candidates one sweep makes.
pub const MAX_CANDIDATES: usize = 100;

/// A sweep: the values and the spec each one makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sweep {
    /// The counts tried, ascending.
    pub values: Vec<u64>,
    /// The candidate spec of each value.
    pub specs: Vec<String>,
}

/// Why a sweep spec was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SweepError {
    /// No `A..B` before the `/`.
    NoRange(String),
    /// A bound or the step is not a whole number.
    Number(String),
    /// `A` above `B`, or a step of 0.
    Empty,
    /// More values than [`MAX_CANDIDATES`].
    TooMany(u64),
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepError::NoRange(s) => write!(
                f,
                "`{s}` has no range: give LOW..HIGH in place of the count, e.g. 600..2400/10m,step=200,scope=heavy"
            ),
            SweepError::Number(s) => write!(
                f,
                "`{s}` is not a whole number (e.g. 600..2400/10m,step=200)"
            ),
            SweepError::Empty => f.write_str(
                "the range is empty: LOW must not be above HIGH and step must be at least 1 (e.g. 600..2400/10m,step=200)",
            ),
            SweepError::TooMany(n) => write!(
                f,
                "{n} values: at most {MAX_CANDIDATES} candidates; give a larger step=",
            ),
        }
    }
}

impl std::error::Error for SweepError {}

impl Sweep {
    /// Parses `LOW..HIGH[r]/WINDOW[,step=S][,option…]`: the options other than `step=`
    /// go to every candidate; the step defaults to a tenth of the range (at least 1).
    pub fn parse(spec: &str) -> Result<Sweep, SweepError> {
        let spec = spec.trim();
        let (head, rest) = spec.split_once(',').unwrap_or((spec, ""));
        let (count, window) = head
            .split_once('/')
            .ok_or_else(|| SweepError::NoRange(spec.to_string()))?;
        let (lo, hi) = count
            .split_once("..")
            .ok_or_else(|| SweepError::NoRange(spec.to_string()))?;
        let (hi, unit) = match hi.strip_suffix('r') {
            Some(h) => (h, "r"),
            None => (hi, ""),
        };
        let num = |s: &str| {
            s.trim()
                .parse::<u64>()
                .map_err(|_| SweepError::Number(s.trim().to_string()))
        };
        let (lo, hi) = (num(lo)?, num(hi)?);
        let mut step = None;
        let mut options = Vec::new();
        for o in rest.split(',').filter(|o| !o.trim().is_empty()) {
            match o.trim().strip_prefix("step=") {
                Some(s) => step = Some(num(s)?),
                None => options.push(o.trim()),
            }
        }
        let step = step.unwrap_or(((hi.saturating_sub(lo)) / 10).max(1));
        if lo > hi || step == 0 {
            return Err(SweepError::Empty);
        }
        let steps = (hi - lo) / step;
        if steps >= MAX_CANDIDATES as u64 {
            return Err(SweepError::TooMany(steps.saturating_add(1)));
        }
        let n = steps + 1;
        let values: Vec<u64> = (0..n).map(|k| lo + k * step).collect();
        let tail = if options.is_empty() {
            String::new()
        } else {
            format!(",{}", options.join(","))
        };
        let specs = values
            .iter()
            .map(|v| format!("{v}{unit}/{window}{tail}"))
            .collect();
        Ok(Sweep { values, specs })
    }
}

/// One candidate of a sweep.
#[derive(Clone, Debug, Serialize)]
pub struct SweepRow {
    /// The candidate's spec.
    pub candidate: String,
    /// The count tried.
    pub limit: u64,
    /// Requests it refused.
    pub refused: u64,
    /// Refused per class (`internal`, `identified`, `declared-bot`, `browser`, `other`).
    pub refused_by_class: BTreeMap<&'static str, u64>,
    /// Most requests it passed in any window of the capacity's length (with `--capacity`).
    pub peak_per_window: Option<u64>,
    /// Windows it left above the capacity (with `--capacity`).
    pub over_capacity_windows: Option<u64>,
    /// Its waits (with `--workers`).
    pub wait: Option<Wait>,
}

/// The trade-off and the choice.
#[derive(Clone, Debug, Serialize)]
pub struct SweepReport {
    /// One row per value, ascending.
    pub rows: Vec<SweepRow>,
    /// The smallest refusal that keeps every window under the capacity (the candidate's
    /// spec); `None` without `--capacity` or when no value does.
    pub chosen: Option<String>,
    /// Where refusing more stops buying much: the point of the refusal curve farthest
    /// from the line between its ends (Kneedle).
    pub knee: Option<String>,
}

/// The sweep's report, from the reports of its candidates (in value order).
pub fn summarise(values: &[u64], cands: &[CandidateReport]) -> SweepReport {
    let rows: Vec<SweepRow> = values
        .iter()
        .zip(cands)
        .map(|(&v, c)| SweepRow {
            candidate: c.name.clone(),
            limit: v,
            refused: c.refused,
            refused_by_class: Who::ALL
                .iter()
                .map(|w| {
                    let n = c
                        .classes
                        .iter()
                        .find(|r| r.class == *w)
                        .map_or(0, |r| r.refused);
                    (w.key(), n)
                })
                .collect(),
            peak_per_window: c.load.as_ref().map(|l| l.peak_with),
            over_capacity_windows: c.load.as_ref().map(|l| l.over_with),
            wait: c.wait.clone(),
        })
        .collect();
    let chosen = rows
        .iter()
        .filter(|r| r.over_capacity_windows == Some(0))
        .min_by_key(|r| (r.refused, std::cmp::Reverse(r.limit)))
        .map(|r| r.candidate.clone());
    SweepReport {
        knee: knee(&rows).map(|i| rows[i].candidate.clone()),
        rows,
        chosen,
    }
}

/// Kneedle: the row whose (limit, refused), both scaled to 0..1, lies farthest below the
/// straight line between the first and the last row; `None` for fewer than 3 rows or a
/// flat curve.
fn knee(rows: &[SweepRow]) -> Option<usize> {
    if rows.len() < 3 {
        return None;
    }
    let (x0, x1) = (rows[0].limit as f64, rows[rows.len() - 1].limit as f64);
    let ymax = rows.iter().map(|r| r.refused).max()? as f64;
    let ymin = rows.iter().map(|r| r.refused).min()? as f64;
    if x1 <= x0 || ymax <= ymin {
        return None;
    }
    let pt = |r: &SweepRow| {
        (
            (r.limit as f64 - x0) / (x1 - x0),
            (r.refused as f64 - ymin) / (ymax - ymin),
        )
    };
    let (a, b) = (pt(&rows[0]), pt(&rows[rows.len() - 1]));
    // Distance below the chord (refusals fall as the limit rises: the curve is convex).
    let below = |p: (f64, f64)| {
        let chord = a.1 + (b.1 - a.1) * (p.0 - a.0) / (b.0 - a.0);
        chord - p.1
    };
    let (i, d) = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (i, below(pt(r))))
        .fold((0, f64::MIN), |m, x| if x.1 > m.1 { x } else { m });
    (d > 1e-9).then_some(i)
}

impl SweepReport {
    /// The trade-off table, with the choice in its notes.
    pub fn section(&self) -> crate::forensics::doc::Section {
        use crate::number::thousands;
        use crate::table::{Align, Cell, Table};
        // Classes refused by some value, in report order.
        let classes: Vec<&'static str> = Who::ALL
            .iter()
            .map(|w| w.key())
            .filter(|k| {
                self.rows
                    .iter()
                    .any(|r| r.refused_by_class.get(k) > Some(&0))
            })
            .collect();
        let capacity = self.rows.iter().any(|r| r.peak_per_window.is_some());
        let waits = self.rows.iter().any(|r| r.wait.is_some());
        let mut head: Vec<(String, Align)> = vec![
            ("limit".into(), Align::Right),
            ("refused".into(), Align::Right),
        ];
        head.extend(classes.iter().map(|k| (k.to_string(), Align::Right)));
        if capacity {
            head.push(("peak/window".into(), Align::Right));
            head.push(("over".into(), Align::Right));
        }
        if waits {
            head.push(("wait p95".into(), Align::Right));
        }
        head.push(("".into(), Align::Left));
        let refs: Vec<(&str, Align)> = head.iter().map(|(s, a)| (s.as_str(), *a)).collect();
        let mut t = Table::new(&refs);
        for r in &self.rows {
            let mut row = vec![
                Cell::from(thousands(r.limit)),
                Cell::from(thousands(r.refused)),
            ];
            for k in &classes {
                row.push(Cell::from(thousands(
                    r.refused_by_class.get(k).copied().unwrap_or(0),
                )));
            }
            if capacity {
                row.push(Cell::from(r.peak_per_window.map_or("-".into(), thousands)));
                row.push(Cell::from(
                    r.over_capacity_windows.map_or("-".into(), thousands),
                ));
            }
            if waits {
                let p95 = r.wait.as_ref().and_then(|w| w.all.p95_ms);
                row.push(Cell::from(p95.map_or("-".into(), |ms| {
                    if ms >= 1000.0 {
                        format!("{:.1} s", ms / 1000.0)
                    } else {
                        format!("{ms:.0} ms")
                    }
                })));
            }
            let mut mark = Vec::new();
            if self.chosen.as_deref() == Some(r.candidate.as_str()) {
                mark.push("← chosen");
            }
            if self.knee.as_deref() == Some(r.candidate.as_str()) {
                mark.push("← knee");
            }
            row.push(Cell::from(mark.join(" ")));
            t.row(row);
        }
        let mut notes = Vec::new();
        match (&self.chosen, capacity) {
            (Some(c), _) => notes.push(format!(
                "chosen: {c}, the smallest refusal that keeps every window under the capacity (--emit writes it)"
            )),
            (None, true) => notes.push(
                "no value keeps every window under the capacity: sweep lower limits".into(),
            ),
            (None, false) => notes.push(
                "give --capacity N/WINDOW to name the smallest refusal that keeps every window under it"
                    .into(),
            ),
        }
        if let Some(k) = &self.knee {
            notes.push(format!(
                "knee: {k}, where refusing more stops buying much (the refusal curve's point farthest from the line between its ends)"
            ));
        }
        crate::forensics::doc::Section {
            title: Some(format!("Choosing the limit: {} values", self.rows.len())),
            table: Some(t),
            notes,
        }
    }

    /// Refused per value as bars.
    pub fn figure(&self) -> crate::forensics::doc::Figure {
        use crate::chart::{Bar, Bars, bars};
        let title = "Refused per limit".to_string();
        let svg = bars(&Bars {
            title: title.clone(),
            bars: self
                .rows
                .iter()
                .map(|r| Bar {
                    label: r.candidate.clone(),
                    value: r.refused as f64,
                    text: match r.peak_per_window {
                        Some(p) => format!(
                            "{} refused, peak {}",
                            crate::number::thousands(r.refused),
                            crate::number::thousands(p)
                        ),
                        None => crate::number::thousands(r.refused),
                    },
                })
                .collect(),
        });
        crate::forensics::doc::Figure::new(title, svg, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_becomes_one_spec_per_value() {
        let s = Sweep::parse("600..2400/10m,step=200,scope=heavy").unwrap();
        assert_eq!(s.values.len(), 10);
        assert_eq!(s.specs[0], "600/10m,scope=heavy");
        assert_eq!(s.specs[9], "2400/10m,scope=heavy");
        let r = Sweep::parse("1..10r/s,key=ip,algo=nginx").unwrap();
        assert_eq!(r.specs[1], "2r/s,key=ip,algo=nginx");
        assert_eq!(Sweep::parse("100..200/1m").unwrap().values.len(), 11);
        assert!(matches!(
            Sweep::parse("600/10m"),
            Err(SweepError::NoRange(_))
        ));
        assert_eq!(Sweep::parse("9..1/1m"), Err(SweepError::Empty));
        assert!(matches!(
            Sweep::parse("1..100000/1m,step=1"),
            Err(SweepError::TooMany(100000))
        ));
        assert!(
            Sweep::parse("a..9/1m")
                .unwrap_err()
                .to_string()
                .contains("whole number")
        );
        assert!(matches!(
            Sweep::parse("0..18446744073709551615/1m,step=1"),
            Err(SweepError::TooMany(u64::MAX))
        ));
    }

    fn row(limit: u64, refused: u64, over: u64) -> SweepRow {
        SweepRow {
            candidate: format!("{limit}/10m"),
            limit,
            refused,
            refused_by_class: BTreeMap::new(),
            peak_per_window: Some(limit),
            over_capacity_windows: Some(over),
            wait: None,
        }
    }

    #[test]
    fn the_knee_is_where_refusals_stop_falling_fast() {
        let rows = vec![
            row(100, 1000, 0),
            row(200, 400, 0),
            row(300, 150, 0),
            row(400, 100, 1),
            row(500, 80, 2),
            row(600, 70, 3),
        ];
        assert_eq!(knee(&rows), Some(2));
        assert_eq!(knee(&rows[..2]), None);
    }
}
