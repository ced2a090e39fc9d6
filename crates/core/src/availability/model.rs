//! The availability report as a typed result: per-period figures, incidents, spans
//! without data (what `--format json` serializes).

use std::collections::BTreeMap;

use serde::Serialize;

use super::acc::Cadence;
use super::config::Config;
use super::rhythm::RhythmSummary;
use super::spec::{Grade, Grades};

/// One period's figures.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PeriodStats {
    /// Label (`2025-06`, …, or `total`); of a collapsed run, its first period's.
    pub label: String,
    /// Calendar periods in this row: 1, or the length of a run of more than
    /// [`super::MAX_EMPTY_PERIODS`] consecutive periods without a probe request, collapsed
    /// into one row (`total`: all periods of the span).
    pub periods: u64,
    /// Label of the row's last period (`label` itself for one period, `total` for the
    /// total).
    pub last_label: String,
    /// Start, UTC ms.
    pub start_ms: i64,
    /// End (exclusive), UTC ms.
    pub end_ms: i64,
    /// Hours of the period inside the analysed span.
    pub hours: f64,
    /// Whether the span covers only part of the period.
    pub partial: bool,
    /// Probe requests seen (including policy statuses).
    pub requests: u64,
    /// Probes that succeeded.
    pub succeeded: u64,
    /// Probes that failed.
    pub failed: u64,
    /// Probes with a policy status (403, 429 by default), however they are counted.
    pub policy: u64,
    /// Expected probes that are missing (gaps).
    pub missing: u64,
    /// The denominator: succeeded + failed + missing.
    pub expected: u64,
    /// succeeded / expected in percent; `None` when nothing was expected.
    pub availability: Option<f64>,
    /// The grade of `availability`.
    pub grade: Grade,
    /// (1 − availability) × hours.
    pub trouble_hours: Option<f64>,
    /// Hours with no log lines at all (spans of at least the gap threshold).
    pub no_data_hours: f64,
    /// Failed probes by status.
    pub failures_by_status: BTreeMap<u16, u64>,
}

impl PeriodStats {
    /// Availability in percent cut (not rounded) to `decimals` places, so that a
    /// figure is never shown better than it is (99.996 → `99.99`); `-` when nothing
    /// was expected.
    pub fn percent_text(&self, decimals: u32) -> String {
        if self.expected == 0 {
            return "-".into();
        }
        let scale = 10u128.pow(decimals);
        let v = self.succeeded as u128 * 100 * scale / self.expected as u128;
        if decimals == 0 {
            v.to_string()
        } else {
            format!("{}.{:0w$}", v / scale, v % scale, w = decimals as usize)
        }
    }

    pub(super) fn finish(&mut self, grades: &Grades) {
        self.expected = self.succeeded + self.failed + self.missing;
        self.availability =
            (self.expected > 0).then(|| 100.0 * self.succeeded as f64 / self.expected as f64);
        self.grade = grades.grade(self.availability);
        self.trouble_hours = self.availability.map(|a| (1.0 - a / 100.0) * self.hours);
    }
}

/// Whether an incident was failed probes, missing probes, or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IncidentKind {
    /// Probes answered with failures.
    Errors,
    /// Expected probes missing (a gap in the log).
    Gap,
    /// Both.
    Both,
}

impl IncidentKind {
    /// `errors`, `gap`, `errors+gap`.
    pub fn word(self) -> &'static str {
        match self {
            IncidentKind::Errors => "errors",
            IncidentKind::Gap => "gap",
            IncidentKind::Both => "errors+gap",
        }
    }

    /// `errors`, `gap`, `both` (for narrow tables).
    pub fn short(self) -> &'static str {
        match self {
            IncidentKind::Both => "both",
            k => k.word(),
        }
    }
}

/// A stretch of bad sub-buckets (availability below `incident_below`, missing probes
/// included), merged across brief recoveries and grown over adjacent sub-buckets that
/// still hold failed or missing probes.
#[derive(Clone, Debug, Serialize)]
pub struct Incident {
    /// First failed or missing probe, UTC ms.
    pub start_ms: i64,
    /// End of the last failed or missing probe's interval (its time + cadence).
    pub end_ms: i64,
    /// `end_ms − start_ms`.
    pub duration_ms: i64,
    /// Errors, gap, or both.
    pub kind: IncidentKind,
    /// The lowest sub-bucket availability in the incident, percent.
    pub worst: f64,
    /// Probe requests seen in the incident's sub-buckets (policy statuses aside).
    pub requests: u64,
    /// Failed probes.
    pub failed: u64,
    /// Missing probes.
    pub missing: u64,
    /// Failed probes by status.
    pub failures_by_status: BTreeMap<u16, u64>,
    /// Time inside the incident with no log lines at all.
    pub no_data_ms: i64,
}

/// A span with no log lines at all.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NoData {
    /// Last line before (or the span start), UTC ms.
    pub from_ms: i64,
    /// First line after (or the span end), UTC ms.
    pub to_ms: i64,
}

/// The result of an availability computation.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The definition used.
    pub config: Config,
    /// The cadence used for missing probes; `None` when it could not be estimated
    /// (then nothing is counted missing).
    pub cadence: Option<Cadence>,
    /// The gap threshold used.
    pub gap_ms: i64,
    /// The analysed span `[start, end)`, UTC ms.
    pub span: Option<(i64, i64)>,
    /// Log lines in the span.
    pub lines: u64,
    /// Lines outside `since`/`until`, ignored.
    pub outside: u64,
    /// Probe requests in the span.
    pub probe_requests: u64,
    /// Per period.
    pub periods: Vec<PeriodStats>,
    /// All periods together.
    pub total: PeriodStats,
    /// Incidents in time order.
    pub incidents: Vec<Incident>,
    /// Spans with no log lines at all, in time order.
    pub no_data: Vec<NoData>,
    /// Caveats worth a line in the report.
    pub notes: Vec<String>,
    /// Without a probe: the site's rhythm and what it said about the silences
    /// (`None` with a probe, with `--expect-every`, or when too few days had requests).
    pub rhythm: Option<RhythmSummary>,
}
