//! The capacity report: from the log alone, what load the backend took per window —
//! the most it held healthily before it first stalled, the load at which it stalled,
//! and its peak throughput while saturated — with the evidence per window (offered vs
//! completed, concurrency by Little's law, request-time quantiles, failure shares).
//!
//! Definitions (one place; docs/reports.md and `--help` repeat them):
//! * a request **fails** when its status is 5xx or 499 (the client gave up: cut);
//! * a window is **healthy** when fewer than 1% of the requests that arrived in it
//!   failed, **degraded** from 1%, **stalled** from 5%, and **silent** when nothing
//!   arrived in it between the first and the last request;
//! * a degraded or stalled window is **saturated** when it has at least [`MIN_FAILED`]
//!   failures at a load (of the scope) at least the most held so far — failures of a
//!   quieter window are errors, not load; the first stalled window that is saturated is
//!   **the stall**, and so is silence right after a saturated window (the backend
//!   stopped answering);
//! * **held**: the most requests of the scope that arrived in one healthy window before
//!   the first stall (with no stall: in any healthy window, and `reached` is false);
//! * **stall**: the requests of the scope that arrived in the first stalled window;
//! * **capacity**: the most requests of the scope completed (not failed) in one saturated
//!   window: the peak throughput while saturated. A request
//!   completes at its arrival plus its logged request time; without request times, at
//!   its logged time.
//!
//! Memory: one entry per window with requests (counters and a sparse histogram of
//! request times with two significant digits), never per request.

use std::collections::BTreeMap;

use serde::Serialize;

use super::doc::{Doc, Figure, Section};
use super::{duration_label, local_label};
use crate::number::thousands;
use crate::quantile::Histogram;
use crate::table::{Align, Cell, Table};
use crate::time::align;

/// Share of failed requests from which a window is degraded (not healthy).
pub const DEGRADED_SHARE: f64 = 0.01;
/// Share of failed requests from which a window is stalled.
pub const STALL_SHARE: f64 = 0.05;
/// Fewest failed requests for a failing window to count as the backend saturating: a
/// few 5xx of a quiet window (a scanner's payloads, one broken page) are errors, not load.
pub const MIN_FAILED: u64 = 10;
/// Runs of silent windows longer than this are one row.
const SILENT_RUN_ROWS: u64 = 3;

/// Which requests the held, stall and capacity levels count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Every selected request.
    All,
    /// The heavy requests (the rules' heavy classes; see `logscope heavy`).
    Heavy,
}

impl Scope {
    /// The scope's name, as `--scope` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Scope::All => "all",
            Scope::Heavy => "heavy",
        }
    }
}

/// Whether a status is a failure: 5xx, or 499 (the client closed the connection first).
pub fn failed(status: u16) -> bool {
    status >= 500 || status == 499
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// What one window saw.
#[derive(Clone, Debug, Default)]
struct Win {
    /// Requests that arrived (every selected one).
    requests: u64,
    /// Requests of the scope that arrived.
    offered: u64,
    /// Arrived requests that failed.
    failed: u64,
    /// Arrived requests answered 504.
    timeouts: u64,
    /// Requests of the scope completed (not failed) in the window.
    completed: u64,
    /// Requests completed (not failed) in the window.
    completed_all: u64,
    /// Σ request time (µs) of the requests that arrived.
    busy_us: u64,
    /// Request times of the requests that arrived.
    times: Histogram,
    /// The zone's offset from UTC at the window (ms), from its first request.
    offset_ms: Option<i64>,
}

/// Gathers windows, one request at a time.
#[derive(Clone, Debug)]
pub struct CapacityAcc {
    width_ms: i64,
    scope: Scope,
    windows: BTreeMap<i64, Win>,
    timed: u64,
    requests: u64,
}

impl CapacityAcc {
    /// Windows `width_ms` wide on the report's clock, levels counted over `scope`.
    pub fn new(width_ms: i64, scope: Scope) -> CapacityAcc {
        CapacityAcc {
            width_ms: width_ms.max(1),
            scope,
            windows: BTreeMap::new(),
            timed: 0,
            requests: 0,
        }
    }

    /// One request: arrival on the report's clock (local ms) and that clock's offset
    /// from UTC then, status, request time if logged, and whether it is in the scope.
    pub fn add(
        &mut self,
        local_ms: i64,
        offset_ms: i64,
        status: u16,
        request_time_us: Option<u64>,
        in_scope: bool,
    ) {
        let w = self.width_ms;
        let k = align(local_ms, w);
        let bad = failed(status);
        let win = self.windows.entry(k).or_default();
        win.offset_ms.get_or_insert(offset_ms);
        win.requests += 1;
        self.requests += 1;
        win.offered += u64::from(in_scope);
        win.failed += u64::from(bad);
        win.timeouts += u64::from(status == 504);
        if let Some(us) = request_time_us {
            win.busy_us = win.busy_us.saturating_add(us);
            win.times.add(us);
            self.timed += 1;
        }
        if !bad {
            let done = local_ms.saturating_add((request_time_us.unwrap_or(0) / 1000) as i64);
            let win = self.windows.entry(align(done, w)).or_default();
            win.offset_ms.get_or_insert(offset_ms);
            win.completed += u64::from(in_scope);
            win.completed_all += 1;
        }
    }

    /// The report.
    pub fn finish(self, origin: &str, selection: &str, zone: &str) -> CapacityReport {
        let w = self.width_ms;
        let timed = self.requests > 0 && self.timed * 2 >= self.requests;
        let mut rows: Vec<WindowRow> = Vec::new();
        let mut stall: Option<usize> = None;
        let mut held_before: u64 = 0;
        let mut held_any: u64 = 0;
        let mut prev_saturated = false;
        let mut next_key: Option<i64> = None;
        for (&k, win) in &self.windows {
            if let Some(nk) = next_key
                && k > nk
            {
                // Silence right after a saturated window is a stall.
                if stall.is_none() && prev_saturated {
                    stall = Some(rows.len());
                }
                let n = ((k - nk) / w) as u64;
                if n > SILENT_RUN_ROWS {
                    rows.push(WindowRow::silent(nk, win.offset_ms.unwrap_or(0), n));
                } else {
                    for j in 0..n as i64 {
                        rows.push(WindowRow::silent(nk + j * w, win.offset_ms.unwrap_or(0), 1));
                    }
                }
                prev_saturated = false;
            }
            next_key = Some(k + w);
            let share = if win.requests > 0 {
                win.failed as f64 / win.requests as f64
            } else {
                0.0
            };
            let state = if win.requests == 0 {
                // Nothing arrived; only earlier arrivals completed.
                State::Silent
            } else if share >= STALL_SHARE {
                State::Stalled
            } else if share >= DEGRADED_SHARE {
                State::Degraded
            } else {
                State::Healthy
            };
            // Failing under load: enough failures, at a load at least the most the
            // backend held so far. Failures at a lower load are errors, not capacity.
            let saturated = matches!(state, State::Degraded | State::Stalled)
                && win.failed >= MIN_FAILED
                && win.offered >= held_before;
            let stalls = match state {
                State::Stalled => saturated,
                State::Silent => prev_saturated,
                State::Healthy | State::Degraded => false,
            };
            if stalls && stall.is_none() {
                stall = Some(rows.len());
            }
            rows.push(WindowRow {
                local_ms: k,
                start: crate::time::local_rfc3339_ms(k, win.offset_ms.unwrap_or(0)),
                label: local_label(k, false),
                requests: win.requests,
                offered: win.offered,
                completed: win.completed,
                completed_all: win.completed_all,
                failed: win.failed,
                failed_share: round6(share),
                timeouts: win.timeouts,
                timeout_share: round6(if win.requests > 0 {
                    win.timeouts as f64 / win.requests as f64
                } else {
                    0.0
                }),
                concurrency: (timed && !win.times.is_empty())
                    .then(|| round3(win.busy_us as f64 / 1000.0 / w as f64)),
                p50_ms: if timed {
                    win.times.quantile_ms(0.5)
                } else {
                    None
                },
                p95_ms: if timed {
                    win.times.quantile_ms(0.95)
                } else {
                    None
                },
                state,
                saturated,
                silent_windows: 0,
                stalled_here: false,
            });
            if state == State::Healthy {
                if stall.is_none() {
                    held_before = held_before.max(win.offered);
                }
                held_any = held_any.max(win.offered);
            }
            prev_saturated = saturated;
        }
        if let Some(s) = stall {
            rows[s].stalled_here = true;
        }
        let reached = stall.is_some();
        let stall_per_window = stall.map(|s| {
            let r = &rows[s];
            if r.state == State::Silent {
                // Silence: the load that went before it.
                rows[..s]
                    .iter()
                    .rev()
                    .find(|r| r.requests > 0)
                    .map_or(0, |r| r.offered)
            } else {
                r.offered
            }
        });
        let peak = rows
            .iter()
            .filter(|r| r.saturated)
            .max_by_key(|r| (r.completed, std::cmp::Reverse(r.local_ms)));
        let secs = w as f64 / 1000.0;
        let held = if reached { held_before } else { held_any };
        let any_healthy = rows.iter().any(|r| r.state == State::Healthy);
        let estimate = Estimate {
            reached,
            window: duration_label(w),
            scope: self.scope.name().to_string(),
            held_per_window: any_healthy.then_some(held),
            stall_per_window,
            capacity_per_window: peak.map(|r| r.completed),
            requests_per_second: peak.map(|r| round3(r.completed_all as f64 / secs)),
            windows: rows,
        };
        let (confidence, reasons) = confidence(&estimate, timed);
        CapacityReport {
            origin: origin.to_string(),
            selection: selection.to_string(),
            zone: zone.to_string(),
            requests: self.requests,
            request_times: timed,
            confidence,
            reasons,
            capacity: estimate,
        }
    }
}

fn round6(v: f64) -> f64 {
    (v * 1e6).round() / 1e6
}

/// How sure the estimate is, and why.
fn confidence(e: &Estimate, timed: bool) -> (String, Vec<String>) {
    if e.windows.is_empty() {
        return (
            "low".into(),
            vec!["no request selected: nothing to estimate from".into()],
        );
    }
    let mut reasons = Vec::new();
    let mut score = 0;
    let loaded = e.held_per_window.map_or(0, |h| {
        e.windows
            .iter()
            .filter(|r| r.state == State::Healthy && r.offered * 10 >= h * 9)
            .count()
    });
    if loaded >= 3 {
        score += 1;
        reasons.push(format!(
            "{loaded} healthy windows within 10% of the held level"
        ));
    } else {
        reasons.push(format!(
            "only {loaded} healthy window(s) within 10% of the held level"
        ));
    }
    let saturated = e.windows.iter().filter(|r| r.saturated).count();
    if e.reached && saturated >= 2 {
        score += 1;
        reasons.push(format!(
            "{saturated} saturated windows show the peak throughput"
        ));
    } else if e.reached {
        reasons.push("one saturated window: the peak throughput rests on it alone".into());
    } else {
        reasons.push("the backend never stalled: its capacity is above what it was offered".into());
    }
    if timed {
        score += 1;
        reasons.push("request times are logged: completions and concurrency are exact".into());
    } else {
        reasons.push(
            "no request times: completions are counted at the logged time, concurrency and waits cannot be told"
                .into(),
        );
    }
    let level = match score {
        3 => "high",
        2 => "medium",
        _ => "low",
    };
    (level.to_string(), reasons)
}

/// A window's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Fewer than 1% failed.
    Healthy,
    /// 1% to 5% failed.
    Degraded,
    /// 5% or more failed.
    Stalled,
    /// Nothing arrived.
    Silent,
}

impl State {
    fn word(self) -> &'static str {
        match self {
            State::Healthy => "healthy",
            State::Degraded => "degraded",
            State::Stalled => "stalled",
            State::Silent => "silent",
        }
    }
}

/// One window's evidence.
#[derive(Clone, Debug, Serialize)]
pub struct WindowRow {
    /// Start on the report's clock, ms (for charts).
    #[serde(skip)]
    pub local_ms: i64,
    /// Start, RFC 3339 in the report's zone.
    pub start: String,
    /// Start as shown in tables (`2026-09-25 14:00`).
    #[serde(skip)]
    pub label: String,
    /// Requests that arrived.
    pub requests: u64,
    /// Requests of the scope that arrived (offered load).
    pub offered: u64,
    /// Requests of the scope completed (not failed) in the window.
    pub completed: u64,
    /// Requests completed (not failed) in the window.
    pub completed_all: u64,
    /// Arrived requests that failed (5xx, 499).
    pub failed: u64,
    /// `failed` over `requests`.
    pub failed_share: f64,
    /// Arrived requests answered 504.
    pub timeouts: u64,
    /// `timeouts` over `requests`.
    pub timeout_share: f64,
    /// Mean requests in progress (Σ request time ÷ window), where request times are logged.
    pub concurrency: Option<f64>,
    /// Median request time, ms.
    pub p50_ms: Option<f64>,
    /// 95th percentile request time, ms.
    pub p95_ms: Option<f64>,
    /// healthy, degraded, stalled or silent.
    pub state: State,
    /// Degraded or stalled.
    pub saturated: bool,
    /// For a collapsed run of silent windows: how many (else 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub silent_windows: u64,
    /// The first stall.
    #[serde(skip)]
    pub stalled_here: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl WindowRow {
    /// `run` windows without a request from `local_ms` on (offset from UTC `offset_ms`).
    fn silent(local_ms: i64, offset_ms: i64, run: u64) -> WindowRow {
        WindowRow {
            local_ms,
            start: crate::time::local_rfc3339_ms(local_ms, offset_ms),
            label: local_label(local_ms, false),
            requests: 0,
            offered: 0,
            completed: 0,
            completed_all: 0,
            failed: 0,
            failed_share: 0.0,
            timeouts: 0,
            timeout_share: 0.0,
            concurrency: None,
            p50_ms: None,
            p95_ms: None,
            state: State::Silent,
            saturated: false,
            silent_windows: if run > 1 { run } else { 0 },
            stalled_here: false,
        }
    }
}

/// The estimate (the JSON object `capacity`).
#[derive(Clone, Debug, Serialize)]
pub struct Estimate {
    /// Whether the backend stalled.
    pub reached: bool,
    /// The window, e.g. `10m`.
    pub window: String,
    /// `all` or `heavy`.
    pub scope: String,
    /// The most requests of the scope in a healthy window before the first stall.
    pub held_per_window: Option<u64>,
    /// The requests of the scope in the first stalled window.
    pub stall_per_window: Option<u64>,
    /// The scope's peak completions per window while saturated.
    pub capacity_per_window: Option<u64>,
    /// All requests completed per second in that window.
    pub requests_per_second: Option<f64>,
    /// The evidence, window by window.
    pub windows: Vec<WindowRow>,
}

/// The result of `logscope capacity`.
#[derive(Clone, Debug, Serialize)]
pub struct CapacityReport {
    /// Where the rows came from.
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub origin: String,
    /// The filter, described.
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub selection: String,
    /// The clock of the windows.
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub zone: String,
    /// Selected requests.
    pub requests: u64,
    /// Whether request times are logged (for at least half the requests).
    pub request_times: bool,
    /// `high`, `medium` or `low`.
    pub confidence: String,
    /// Why.
    pub reasons: Vec<String>,
    /// The estimate.
    pub capacity: Estimate,
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), thousands)
}

fn opt_f(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |x| format!("{x:.1}"))
}

impl CapacityReport {
    /// The headline sentences.
    fn headline(&self) -> Vec<String> {
        let e = &self.capacity;
        let what = match e.scope.as_str() {
            "heavy" => "heavy requests",
            _ => "requests",
        };
        let mut lines = Vec::new();
        match (e.reached, e.held_per_window) {
            (true, Some(held)) => {
                lines.push(format!(
                    "held {} {what} per {} healthily, stalled at {}",
                    thousands(held),
                    e.window,
                    opt(e.stall_per_window)
                ));
            }
            (true, None) => lines.push(format!(
                "no healthy window before it stalled at {} {what} per {}: what it can hold cannot be told",
                opt(e.stall_per_window),
                e.window
            )),
            (false, Some(h)) => lines.push(format!(
                "capacity not reached: the backend never stalled; the highest load it handled fine was {} {what} per {}",
                thousands(h),
                e.window
            )),
            (false, None) if e.windows.is_empty() => {
                lines.push("no request selected: nothing can be told".into())
            }
            (false, None) => lines.push("no healthy window: nothing can be told".into()),
        }
        if let (Some(c), Some(rps)) = (e.capacity_per_window, e.requests_per_second) {
            lines.push(format!(
                "peak throughput while saturated: {} {what} per {} ({} requests/s in all)",
                thousands(c),
                e.window,
                if rps < 1.0 {
                    format!("{rps:.3}")
                } else {
                    format!("{rps:.1}")
                }
            ));
        }
        lines.push(format!(
            "confidence: {} ({})",
            self.confidence,
            self.reasons.join("; ")
        ));
        lines
    }

    fn chart(&self) -> String {
        let e = &self.capacity;
        let pts = |f: &dyn Fn(&WindowRow) -> u64| -> Vec<(i64, f64)> {
            e.windows
                .iter()
                .map(|r| (r.local_ms, f(r) as f64))
                .collect()
        };
        let mut series = vec![
            crate::chart::Series {
                name: "offered".into(),
                points: pts(&|r| r.offered),
            },
            crate::chart::Series {
                name: "completed".into(),
                points: pts(&|r| r.completed),
            },
        ];
        let (lo, hi) = (
            e.windows.first().map_or(0, |r| r.local_ms),
            e.windows.last().map_or(0, |r| r.local_ms),
        );
        for (name, level) in [("held", e.held_per_window), ("stall", e.stall_per_window)] {
            if let Some(v) = level {
                series.push(crate::chart::Series {
                    name: format!("{name} {}", thousands(v)),
                    points: vec![(lo, v as f64), (hi, v as f64)],
                });
            }
        }
        crate::chart::time_series(&crate::chart::TimeSeries {
            title: format!("Offered and completed per {}", e.window),
            y_label: format!("{} requests per {}", e.scope, e.window),
            series,
            reference: None,
            shade: None,
        })
    }

    fn layout(&self, page: bool) -> Doc {
        let e = &self.capacity;
        let mut lines = vec![
            format!("source: {}", self.origin),
            format!("selection: {}; scope: {}", self.selection, e.scope),
            format!("windows of {} on {} time", e.window, self.zone),
        ];
        lines.extend(self.headline());
        // Without request times the timing columns would be empty: left out of text.
        let timed = self.request_times;
        let mut head = vec![
            ("start", Align::Left),
            ("offered", Align::Right),
            ("completed", Align::Right),
            ("failed", Align::Right),
            ("504", Align::Right),
        ];
        if timed {
            head.extend([
                ("conc.", Align::Right),
                ("p50 ms", Align::Right),
                ("p95 ms", Align::Right),
            ]);
        }
        head.push(("state", Align::Left));
        // Cut short, the table keeps the windows with the most offered.
        let mut t = Table::new(&head).ranked_by(1);
        let mut csv = Table::new(&[
            ("start", Align::Left),
            ("requests", Align::Right),
            ("offered", Align::Right),
            ("completed", Align::Right),
            ("completed_all", Align::Right),
            ("failed", Align::Right),
            ("failed_share", Align::Right),
            ("timeouts", Align::Right),
            ("timeout_share", Align::Right),
            ("concurrency", Align::Right),
            ("p50_ms", Align::Right),
            ("p95_ms", Align::Right),
            ("state", Align::Left),
            ("silent_windows", Align::Right),
        ]);
        for r in &e.windows {
            let mut state = r.state.word().to_string();
            if r.silent_windows > 1 {
                state = format!("silent ×{}", thousands(r.silent_windows));
            }
            if matches!(r.state, State::Degraded | State::Stalled) && !r.saturated {
                state.push_str(" (errors, not load)");
            }
            if r.stalled_here {
                state.push_str(" ← first stall");
            }
            let mut row = vec![
                Cell::from(r.label.clone()),
                Cell::from(thousands(r.offered)),
                Cell::from(thousands(r.completed)),
                Cell::from(format!("{:.1}%", 100.0 * r.failed_share)),
                Cell::from(format!("{:.1}%", 100.0 * r.timeout_share)),
            ];
            if timed {
                row.extend([
                    Cell::from(opt_f(r.concurrency)),
                    Cell::from(opt_f(r.p50_ms)),
                    Cell::from(opt_f(r.p95_ms)),
                ]);
            }
            row.push(Cell::from(state));
            t.row(row);
            let o = |v: Option<f64>| v.map_or_else(String::new, |x| x.to_string());
            csv.row([
                r.start.clone(),
                r.requests.to_string(),
                r.offered.to_string(),
                r.completed.to_string(),
                r.completed_all.to_string(),
                r.failed.to_string(),
                r.failed_share.to_string(),
                r.timeouts.to_string(),
                r.timeout_share.to_string(),
                o(r.concurrency),
                o(r.p50_ms),
                o(r.p95_ms),
                r.state.word().to_string(),
                r.silent_windows.to_string(),
            ]);
        }
        let notes = vec![
            format!(
                "offered: {} requests that arrived in the window; completed: those that finished in it without failing; failed: 5xx or 499 among all arrivals",
                e.scope
            ),
            format!(
                "healthy: < 1% failed; degraded: 1–5%; stalled: ≥ 5%; saturated (counted for the stall and the peak): degraded or stalled with at least {MIN_FAILED} failures at a load at least the most held so far, else errors, not load; silence right after a saturated window is a stall too; conc.: Σ request time ÷ window (Little's law)"
            ),
        ];
        let figures = if page && !e.windows.is_empty() {
            vec![Figure::new(
                format!("Offered and completed per {}", e.window),
                self.chart(),
                None,
            )]
        } else {
            Vec::new()
        };
        Doc {
            title: format!("Capacity per {} ({})", e.window, e.scope),
            lines,
            sections: vec![Section {
                title: Some("Windows".into()),
                table: Some(t),
                notes,
            }],
            csv_section: 0,
            csv: Some(csv),
            figures,
            ..Doc::default()
        }
    }
}

impl super::doc::Document for CapacityReport {
    fn doc(&self, width: usize) -> Doc {
        self.layout(width == usize::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backend that takes 100 per window, offered a ramp: held below 100, stalled
    /// above, the peak throughput at 100.
    #[test]
    fn a_ramp_past_the_capacity_is_held_then_stalls() {
        let mut acc = CapacityAcc::new(60_000, Scope::All);
        for (k, offered) in [40u64, 60, 80, 95, 130, 160].into_iter().enumerate() {
            let start = k as i64 * 60_000;
            for i in 0..offered {
                let t = start + (i as i64 * 60_000) / offered as i64;
                // Above 100 a window serves 100 and fails the rest.
                let status = if i < 100 { 200 } else { 503 };
                acc.add(t, 0, status, Some(50_000), true);
            }
        }
        let r = acc.finish("test", "all", "UTC");
        let e = &r.capacity;
        assert!(e.reached);
        assert_eq!(e.held_per_window, Some(95));
        assert_eq!(e.stall_per_window, Some(130));
        assert_eq!(e.capacity_per_window, Some(100));
        assert_eq!(e.windows.len(), 6);
    }

    #[test]
    fn no_rows_tell_nothing() {
        let r = CapacityAcc::new(60_000, Scope::Heavy).finish("test", "all", "UTC");
        assert!(!r.capacity.reached && r.capacity.held_per_window.is_none());
        assert_eq!(r.headline()[0], "no request selected: nothing can be told");
        assert_eq!(r.confidence, "low");
    }

    /// A quiet window with a few 5xx (a scanner's payloads) is errors, not the stall;
    /// nor is a failing window quieter than what the backend already held.
    #[test]
    fn errors_without_load_are_not_a_stall() {
        let mut acc = CapacityAcc::new(60_000, Scope::All);
        for (k, (n, bad)) in [(100u64, 0u64), (20, 3), (60, 30), (100, 0)]
            .into_iter()
            .enumerate()
        {
            for i in 0..n {
                let status = if i < bad { 500 } else { 200 };
                acc.add(k as i64 * 60_000 + i as i64, 0, status, None, true);
            }
        }
        let r = acc.finish("test", "all", "UTC");
        let e = &r.capacity;
        assert!(!e.reached, "{:?}", e.windows);
        assert_eq!(e.held_per_window, Some(100));
        assert_eq!(e.capacity_per_window, None);
        assert!(e.windows.iter().all(|w| !w.saturated));
        assert_eq!(e.windows[1].state, State::Stalled);
        let text = r.layout(false).to_text(120, false);
        assert!(text.contains("(errors, not load)"), "{text}");
    }

    #[test]
    fn a_site_that_never_stalls_says_not_reached() {
        let mut acc = CapacityAcc::new(60_000, Scope::All);
        for t in 0..500 {
            acc.add(t * 1000, 0, 200, None, true);
        }
        let r = acc.finish("test", "all", "UTC");
        assert!(!r.capacity.reached);
        assert_eq!(r.capacity.capacity_per_window, None);
        assert_eq!(r.capacity.held_per_window, Some(60));
        assert!(r.headline()[0].starts_with("capacity not reached"));
        assert!(!r.request_times);
    }
}
