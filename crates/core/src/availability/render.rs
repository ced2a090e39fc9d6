//! Rendering of an availability [`Report`]: terminal text with coloured grades,
//! Markdown ready to paste (grades as 🟢/🟡/🟠/🔴 and words), CSV (the period table),
//! a self-contained HTML page with a bar chart from the shared chart module, and JSON (the typed
//! result with local times added). Times are formatted by the caller's [`TimeFmt`]
//! (it knows the time zone).

use std::fmt::Write;

use super::spec::{format_duration, format_interval};
use super::{Grade, Incident, IncidentKind, PeriodStats, PolicyAs, Report};
use crate::chart::{Bar, Bars};
use crate::escape;
use crate::forensics::doc::{Doc, Figure, Section, wrap_indented};
use crate::number::thousands;
use crate::table::{Align, Cell, Style, Table};

/// Formats instants (UTC ms) in the report's time zone.
pub struct TimeFmt<'a> {
    /// Short local time for tables, e.g. `2025-12-20 00:01`.
    pub short: &'a dyn Fn(i64) -> String,
    /// Local RFC 3339 with offset, e.g. `2025-12-20T00:01:00.000+09:00`.
    pub rfc3339: &'a dyn Fn(i64) -> String,
}

/// How many incidents text, Markdown and HTML show (the largest, in time order);
/// 0 = all. JSON always has all.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Incidents shown.
    pub incidents: usize,
    /// No-data spans shown.
    pub no_data: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            incidents: 30,
            no_data: 30,
        }
    }
}

fn style(g: Grade) -> Style {
    match g {
        Grade::Green => Style::Green,
        Grade::Yellow => Style::Yellow,
        Grade::Orange => Style::Orange,
        Grade::Red => Style::Red,
        Grade::None => Style::Plain,
    }
}

fn hours(h: Option<f64>) -> String {
    h.map_or_else(|| "-".into(), |h| format!("{h:.1}"))
}

fn pct_cell(p: &PeriodStats) -> String {
    if p.expected == 0 {
        "-".into()
    } else {
        format!("{}%", p.percent_text(2))
    }
}

fn period_label(p: &PeriodStats) -> String {
    let label = if is_run(p) {
        format!("{} … {}", p.label, p.last_label)
    } else {
        p.label.clone()
    };
    if p.partial {
        format!("{label}*")
    } else {
        label
    }
}

/// Whether a row is a collapsed run of periods (not one period, not the total).
fn is_run(p: &PeriodStats) -> bool {
    p.last_label != p.label
}

/// Collapsed runs listed under a period table.
const COLLAPSED_SHOWN: usize = 10;

/// One line per collapsed run of periods without a probe request (the first
/// [`COLLAPSED_SHOWN`], then how many more).
fn collapsed_lines(r: &Report) -> Vec<String> {
    let by = r.config.by.name();
    let runs: Vec<&PeriodStats> = r.periods.iter().filter(|p| is_run(p)).collect();
    let mut out: Vec<String> = runs
        .iter()
        .take(COLLAPSED_SHOWN)
        .map(|p| {
            let counted = if p.expected == 0 {
                "nothing expected (cadence unknown), not counted".to_string()
            } else {
                format!(
                    "their {} expected probes are missing: {}, counted as downtime",
                    thousands(p.missing),
                    pct_cell(p)
                )
            };
            format!(
                "{} … {}: no probe requests in {} {by}s, one row; {counted}",
                p.label,
                p.last_label,
                thousands(p.periods)
            )
        })
        .collect();
    if runs.len() > COLLAPSED_SHOWN {
        let m = runs.len() - COLLAPSED_SHOWN;
        out.push(format!(
            "… and {m} more run{} like these (all in --format csv and json)",
            if m == 1 { "" } else { "s" }
        ));
    }
    out
}

/// One sentence saying what the figures mean.
pub fn definition(r: &Report) -> String {
    let c = &r.config;
    let mut s = match &c.probe {
        Some(p) => format!(
            "Availability = share of probe requests (path?query matching /{p}/) answered {}",
            c.success
        ),
        None => format!(
            "No --probe given: availability = share of dynamic requests (not images, CSS, JS, fonts, media) answered {} (i.e. not 5xx)",
            c.success
        ),
    };
    if !c.policy.is_empty() {
        let how = match c.policy_as {
            PolicyAs::Exclude => "policy, not downtime: left out",
            PolicyAs::Success => "policy: counted as success",
            PolicyAs::Failure => "policy: counted as failure",
        };
        let _ = write!(s, "; {} are {how}", c.policy);
    }
    match r.cadence {
        Some(_) if r.rhythm.is_some() => {
            let rh = r.rhythm.as_ref().expect("checked");
            let _ = write!(
                s,
                "; silences of {} or more count as failures only when improbable under the site's {} rhythm",
                format_interval(r.gap_ms),
                rh.kind.word()
            );
        }
        Some(cad) => {
            let src = match cad.source {
                super::CadenceSource::Given => "given".to_string(),
                super::CadenceSource::Median => "estimated: median interval between probes".into(),
                super::CadenceSource::Mean => {
                    "estimated: mean interval between dynamic requests".into()
                }
            };
            if c.probe_mode() && c.min_gap_ms.is_none() {
                let _ = write!(
                    s,
                    "; missing probes count as failures (expected every {}, {src})",
                    format_interval(cad.ms)
                );
            } else {
                let _ = write!(
                    s,
                    "; silences of {} or more count as failures, one per {} ({src})",
                    format_interval(r.gap_ms),
                    format_interval(cad.ms)
                );
            }
        }
        None => s.push_str("; missing probes not counted (cadence unknown)"),
    }
    let _ = write!(s, ". {}s in {}.", capitalize(c.by.name()), c.tz);
    s
}

/// Percent with two decimals, cut (not rounded) like every figure of the report.
fn cut2(p: f64) -> String {
    format!("{:.2}", (p * 100.0).floor() / 100.0)
}

/// A probability as a percentage without trailing zeros (`1e-3` → `0.1`).
fn small_pct(p: f64) -> String {
    let s = format!("{:.6}", p * 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Without a probe: how the silences were judged and how confident the figure is.
pub fn rhythm_line(r: &Report) -> Option<String> {
    let rh = r.rhythm.as_ref()?;
    let cycle = match rh.kind {
        super::RhythmKind::HourOfWeek => "UTC hour of the week",
        super::RhythmKind::HourOfDay => "UTC hour of the day",
    };
    let mut s = format!(
        "No probe: downtime inferred from silences improbable under the site's {} rhythm (expected requests per {cycle}: the median over {} days with requests, about {} a day). {} silence{} of {} or more checked, {} counted as downtime (each less than {}% likely under the rhythm",
        rh.kind.word(),
        thousands(rh.days),
        thousands(rh.requests_per_day.round() as u64),
        thousands(rh.silences_checked),
        if rh.silences_checked == 1 { "" } else { "s" },
        format_interval(r.gap_ms),
        thousands(rh.silences_counted),
        small_pct(rh.threshold),
    );
    if rh.silences_counted > 0 {
        let _ = write!(
            s,
            "; {} in all; a merely quiet site would produce {:.2} such silences",
            format_duration(rh.counted_ms),
            rh.expected_quiet
        );
    }
    let _ = write!(s, "). Confidence: {}", rh.confidence);
    if let (Some(lo), Some(hi)) = (rh.availability_loose, rh.availability_strict) {
        let _ = write!(
            s,
            " — counting silences less than {}% likely gives {}% in total, only those less than {}% likely {}%",
            small_pct(super::rhythm::LOOSE),
            cut2(lo),
            small_pct(super::rhythm::STRICT),
            cut2(hi)
        );
    }
    s.push('.');
    Some(s)
}

fn capitalize(w: &str) -> String {
    let mut c = w.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

fn grades_legend(r: &Report, emoji: bool) -> String {
    let g = &r.config.grades;
    let e = |gr: Grade| {
        if emoji {
            format!("{} ", gr.emoji())
        } else {
            String::new()
        }
    };
    format!(
        "{}green ≥ {}%, {}yellow ≥ {}%, {}orange ≥ {}%, {}red below; figures are cut, not rounded",
        e(Grade::Green),
        g.green,
        e(Grade::Yellow),
        g.yellow,
        e(Grade::Orange),
        g.orange,
        e(Grade::Red)
    )
}

fn period_table(r: &Report, grade_text: impl Fn(Grade) -> String) -> Table {
    let mut t = Table::new(&[
        (r.config.by.name(), Align::Left),
        ("availability", Align::Right),
        ("grade", Align::Left),
        ("probes", Align::Right),
        ("failed", Align::Right),
        ("missing", Align::Right),
        ("trouble h", Align::Right),
        ("no data h", Align::Right),
    ]);
    for p in r.periods.iter().chain(std::iter::once(&r.total)) {
        let st = style(p.grade);
        t.row(vec![
            Cell::from(period_label(p)),
            Cell::styled(pct_cell(p), st),
            Cell::styled(grade_text(p.grade), st),
            Cell::from(thousands(p.requests)),
            Cell::from(thousands(p.failed)),
            Cell::from(thousands(p.missing)),
            Cell::from(hours(p.trouble_hours)),
            Cell::from(format!("{:.1}", p.no_data_hours)),
        ]);
    }
    t
}

/// The incidents to show: the `n` with the most failed + missing probes, in time order.
fn shown_incidents(r: &Report, n: usize) -> Vec<&Incident> {
    let mut v: Vec<&Incident> = r.incidents.iter().collect();
    if n > 0 && v.len() > n {
        v.sort_by(|a, b| {
            (b.failed + b.missing)
                .cmp(&(a.failed + a.missing))
                .then(b.duration_ms.cmp(&a.duration_ms))
                .then(a.start_ms.cmp(&b.start_ms))
        });
        v.truncate(n);
        v.sort_by_key(|i| i.start_ms);
    }
    v
}

fn statuses(i: &Incident) -> String {
    let mut v: Vec<(u16, u64)> = i.failures_by_status.iter().map(|(k, v)| (*k, *v)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.iter()
        .map(|(k, n)| format!("{k}×{}", thousands(*n)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The end of an incident, shortened when it shares the start's date.
fn short_end(start: &str, end: &str) -> String {
    match (start.split_once(' '), end.split_once(' ')) {
        (Some((sd, _)), Some((ed, et))) if sd == ed => et.to_string(),
        (Some((sd, _)), Some((ed, _))) if sd.get(..5) == ed.get(..5) && ed.len() > 5 => {
            end[5..].to_string()
        }
        _ => end.to_string(),
    }
}

fn incident_table(r: &Report, tf: &TimeFmt, n: usize, short_kind: bool) -> Table {
    // Times are right-aligned (fixed width) so that only `statuses` is cut to fit.
    let mut t = Table::new(&[
        ("start", Align::Right),
        ("end", Align::Right),
        ("duration", Align::Right),
        ("kind", Align::Left),
        ("worst", Align::Right),
        ("failed", Align::Right),
        ("missed", Align::Right),
        ("statuses", Align::Left),
    ]);
    for i in shown_incidents(r, n) {
        let start = (tf.short)(i.start_ms);
        let end = (tf.short)(i.end_ms);
        let kind_style = match i.kind {
            IncidentKind::Errors => Style::Orange,
            _ => Style::Red,
        };
        t.row(vec![
            Cell::from(start.clone()),
            Cell::from(short_end(&start, &end)),
            Cell::from(format_duration(i.duration_ms)),
            Cell::styled(
                if short_kind {
                    i.kind.short()
                } else {
                    i.kind.word()
                },
                kind_style,
            ),
            Cell::from(format!("{:.0}%", i.worst.floor())),
            Cell::from(thousands(i.failed)),
            Cell::from(thousands(i.missing)),
            Cell::from(statuses(i)),
        ]);
    }
    t
}

fn incidents_heading(r: &Report, n: usize) -> String {
    let c = &r.config;
    let total = r.incidents.len();
    let shown = if n > 0 && total > n {
        format!(", the {n} largest shown (all in --format json)")
    } else {
        String::new()
    };
    format!(
        "Incidents: {total} (a {} sub-bucket below {}%, or with missing probes; merged across recoveries of up to {}){shown}",
        format_interval(c.bucket_ms),
        c.incident_below,
        format_interval(
            r.config
                .merge_within_ms
                .max(2 * r.cadence.map_or(0, |c| c.ms))
        )
    )
}

fn no_data_lines(r: &Report, tf: &TimeFmt, n: usize) -> (String, Vec<String>) {
    let total_ms: i64 = r.no_data.iter().map(|g| g.to_ms - g.from_ms).sum();
    let head = format!(
        "No log lines at all for {} or more: {} span{}, {} in total",
        format_interval(r.gap_ms),
        r.no_data.len(),
        if r.no_data.len() == 1 { "" } else { "s" },
        format_duration(total_ms)
    );
    let mut v: Vec<&super::NoData> = r.no_data.iter().collect();
    let more = if n > 0 && v.len() > n {
        v.sort_by(|a, b| {
            (b.to_ms - b.from_ms)
                .cmp(&(a.to_ms - a.from_ms))
                .then(a.from_ms.cmp(&b.from_ms))
        });
        v.truncate(n);
        v.sort_by_key(|g| g.from_ms);
        Some(r.no_data.len() - n)
    } else {
        None
    };
    let mut lines: Vec<String> = v
        .iter()
        .map(|g| {
            format!(
                "no data from {} to {} ({})",
                (tf.short)(g.from_ms),
                (tf.short)(g.to_ms),
                format_duration(g.to_ms - g.from_ms)
            )
        })
        .collect();
    if let Some(m) = more {
        lines.push(format!(
            "… and {m} shorter span{} (all in --format json)",
            if m == 1 { "" } else { "s" }
        ));
    }
    (head, lines)
}

fn span_line(r: &Report, tf: &TimeFmt, source: &str) -> String {
    let mut s = String::new();
    if let Some((a, b)) = r.span {
        let _ = write!(s, "{} → {}", (tf.short)(a), (tf.short)(b));
    }
    let _ = write!(
        s,
        "; {} lines, {} probe requests",
        thousands(r.lines),
        thousands(r.probe_requests)
    );
    if r.outside > 0 {
        let _ = write!(
            s,
            " ({} lines outside --since/--until ignored)",
            thousands(r.outside)
        );
    }
    if !source.is_empty() {
        let _ = write!(s, "; from {source}");
    }
    s
}

/// `text` wrapped to `indent` plus `width` characters a line (see
/// [`crate::forensics::doc::wrap_indented`]), one line each.
fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    for l in wrap_indented(text, width, indent) {
        let _ = writeln!(out, "{l}");
    }
    out
}

/// A terminal report (80 columns; colour when `color`).
pub fn text(r: &Report, tf: &TimeFmt, source: &str, color: bool, lim: Limits) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "Availability per {}", r.config.by.name());
    o.push_str(&wrap(&escape::terminal_str(&definition(r), 2000), 78, "  "));
    o.push_str(&wrap(
        &escape::terminal_str(&span_line(r, tf, source), 2000),
        78,
        "  ",
    ));
    if let Some(l) = rhythm_line(r) {
        o.push_str(&wrap(&l, 78, "  "));
    }
    o.push_str(&wrap(
        &format!("Grades: {}.", grades_legend(r, false)),
        78,
        "  ",
    ));
    for n in &r.notes {
        o.push_str(&wrap(
            &format!("note: {}", escape::terminal_str(n, 500)),
            78,
            "  ",
        ));
    }
    o.push('\n');
    if !r.periods.is_empty() {
        o.push_str(&period_table(r, |g| g.word().to_string()).to_terminal(80, color));
        if r.periods.iter().any(|p| p.partial) {
            o.push_str("* partial: the span covers only part of the period\n");
        }
        for l in collapsed_lines(r) {
            o.push_str(&wrap(&escape::terminal_str(&l, 500), 78, ""));
        }
    }
    o.push('\n');
    o.push_str(&wrap(&incidents_heading(r, lim.incidents), 80, ""));
    if !r.incidents.is_empty() {
        o.push_str(&incident_table(r, tf, lim.incidents, true).to_terminal(80, color));
    }
    o.push('\n');
    let (head, lines) = no_data_lines(r, tf, lim.no_data);
    o.push_str(&wrap(&head, 80, ""));
    for l in lines {
        let _ = writeln!(o, "  {}", escape::terminal_str(&l, 300));
    }
    o
}

/// A Markdown report: a heading, the definition, the period table (grades as
/// 🟢/🟡/🟠/🔴 and words), the incidents and the spans without data.
pub fn markdown(r: &Report, tf: &TimeFmt, source: &str, lim: Limits) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "## Availability per {}\n", r.config.by.name());
    let _ = writeln!(o, "{}\n", escape::markdown(&definition(r)));
    let _ = writeln!(
        o,
        "Span: {}.\n",
        escape::markdown(&span_line(r, tf, source))
    );
    if let Some(l) = rhythm_line(r) {
        let _ = writeln!(o, "{}\n", escape::markdown(&l));
    }
    let _ = writeln!(
        o,
        "Grades: {}.\n",
        escape::markdown(&grades_legend(r, true))
    );
    for n in &r.notes {
        let _ = writeln!(o, "> Note: {}\n", escape::markdown(n));
    }
    if !r.periods.is_empty() {
        o.push_str(&period_table(r, |g| format!("{} {}", g.emoji(), g.word())).to_markdown());
        if r.periods.iter().any(|p| p.partial) {
            o.push_str("\n\\* partial: the span covers only part of the period\n");
        }
        let runs = collapsed_lines(r);
        if !runs.is_empty() {
            o.push('\n');
        }
        for l in runs {
            let _ = writeln!(o, "- {}", escape::markdown(&l));
        }
    }
    let _ = writeln!(
        o,
        "\n### {}\n",
        escape::markdown(&incidents_heading(r, lim.incidents))
    );
    if !r.incidents.is_empty() {
        o.push_str(&incident_table(r, tf, lim.incidents, false).to_markdown());
    }
    let (head, lines) = no_data_lines(r, tf, lim.no_data);
    let _ = writeln!(o, "\n### {}\n", escape::markdown(&head));
    for l in lines {
        let _ = writeln!(o, "- {}", escape::markdown(&l));
    }
    o
}

/// CSV: one row per period (and `total`), full figures; a collapsed run of periods
/// without a probe request is one row, `periods` long, from `period` to `last_period`.
pub fn csv(r: &Report, tf: &TimeFmt) -> String {
    let mut t = Table::new(&[
        ("period", Align::Left),
        ("start", Align::Left),
        ("end", Align::Left),
        ("hours", Align::Right),
        ("partial", Align::Left),
        ("availability_pct", Align::Right),
        ("grade", Align::Left),
        ("probe_requests", Align::Right),
        ("succeeded", Align::Right),
        ("failed", Align::Right),
        ("policy", Align::Right),
        ("missing", Align::Right),
        ("expected", Align::Right),
        ("trouble_hours", Align::Right),
        ("no_data_hours", Align::Right),
        ("periods", Align::Right),
        ("last_period", Align::Left),
    ]);
    for p in r.periods.iter().chain(std::iter::once(&r.total)) {
        t.row([
            p.label.clone(),
            (tf.rfc3339)(p.start_ms),
            (tf.rfc3339)(p.end_ms),
            format!("{:.3}", p.hours),
            p.partial.to_string(),
            if p.expected == 0 {
                String::new()
            } else {
                p.percent_text(4)
            },
            match p.grade {
                Grade::None => String::new(),
                g => g.word().to_string(),
            },
            p.requests.to_string(),
            p.succeeded.to_string(),
            p.failed.to_string(),
            p.policy.to_string(),
            p.missing.to_string(),
            p.expected.to_string(),
            p.trouble_hours
                .map_or_else(String::new, |h| format!("{h:.3}")),
            format!("{:.3}", p.no_data_hours),
            p.periods.to_string(),
            p.last_label.clone(),
        ]);
    }
    t.to_csv()
}

/// The typed result as JSON (an object, for the envelope to wrap): every instant an
/// RFC 3339 string with milliseconds in the report's zone (`start`, `end`, `since`, …:
/// the `*_ms` instants replaced), durations in ms, and the availability as text beside
/// its fraction.
pub fn json(r: &Report, tf: &TimeFmt) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap_or(serde_json::Value::Null);
    to_times(&mut v, tf);
    if let serde_json::Value::Object(m) = &mut v {
        m.insert("definition".into(), definition(r).into());
        // The span as the two instants it is.
        m.remove("span");
        let (a, b) = match r.span {
            Some((a, b)) => ((tf.rfc3339)(a).into(), (tf.rfc3339)(b).into()),
            None => (serde_json::Value::Null, serde_json::Value::Null),
        };
        m.insert("span_start".into(), a);
        m.insert("span_end".into(), b);
        if let Some(serde_json::Value::Array(a)) = m.get_mut("periods") {
            for (item, st) in a.iter_mut().zip(&r.periods) {
                if let serde_json::Value::Object(o) = item {
                    o.insert("availability_text".into(), st.percent_text(2).into());
                }
            }
        }
        if let Some(serde_json::Value::Object(o)) = m.get_mut("total") {
            o.insert("availability_text".into(), r.total.percent_text(2).into());
        }
    }
    v
}

/// Replaces every instant in ms (`start_ms`, `end_ms`, `from_ms`, `to_ms`, `since_ms`,
/// `until_ms`) with its RFC 3339 string under the name without `_ms`.
fn to_times(v: &mut serde_json::Value, tf: &TimeFmt) {
    match v {
        serde_json::Value::Object(m) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                let is_instant = matches!(
                    k.as_str(),
                    "start_ms" | "end_ms" | "from_ms" | "to_ms" | "since_ms" | "until_ms"
                );
                if is_instant {
                    let ms = m.remove(&k).and_then(|x| x.as_i64());
                    let name = k.trim_end_matches("_ms").to_string();
                    m.insert(
                        name,
                        ms.map_or(serde_json::Value::Null, |ms| (tf.rfc3339)(ms).into()),
                    );
                } else if let Some(x) = m.get_mut(&k) {
                    to_times(x, tf);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| to_times(x, tf)),
        _ => {}
    }
}

/// The HTML chart of the periods through the shared chart module: one bar per period,
/// its length the unavailability (100% − availability, so that a bad month stands out
/// even when every figure is above 99%), its text the availability and the grade.
pub fn chart(r: &Report) -> Figure {
    let by = r.config.by.name();
    let bars = r
        .periods
        .iter()
        .map(|p| {
            let name = if is_run(p) {
                format!("{} … {}", p.label, p.last_label)
            } else {
                p.label.clone()
            };
            Bar {
                label: name,
                value: p.availability.map_or(0.0, |a| 100.0 - a),
                text: match p.availability {
                    Some(_) => format!("{} available ({})", pct_cell(p), p.grade.word()),
                    None => "nothing expected".into(),
                },
            }
        })
        .collect();
    let title = format!("Unavailability per {by} (100% − availability, in %)");
    Figure::new(
        title.clone(),
        crate::chart::bars(&Bars { title, bars }),
        None,
    )
}

/// A self-contained HTML page through the one report page ([`Doc::to_html`]): the
/// definition, span, grades and notes as its lines, the chart, the period table, the
/// incidents and the spans without data as its sections.
pub fn html(r: &Report, tf: &TimeFmt, source: &str, lim: Limits) -> String {
    doc(r, tf, source, lim).to_html()
}

/// The report as a [`Doc`] (what [`html`] renders; `logscope report` takes its parts).
pub fn doc(r: &Report, tf: &TimeFmt, source: &str, lim: Limits) -> Doc {
    let mut lines = vec![
        definition(r),
        format!("Span: {}.", span_line(r, tf, source)),
    ];
    lines.extend(rhythm_line(r));
    lines.push(format!("Grades: {}.", grades_legend(r, false)));
    lines.extend(r.notes.iter().map(|n| format!("Note: {n}")));
    let mut sections = Vec::new();
    if !r.periods.is_empty() {
        let mut notes = Vec::new();
        if r.periods.iter().any(|p| p.partial) {
            notes.push("* partial: the span covers only part of the period".to_string());
        }
        notes.extend(collapsed_lines(r));
        sections.push(Section {
            title: None,
            // The grade as a coloured word: an emoji shows as an empty box on a
            // terminal or page without an emoji font (Markdown keeps them).
            table: Some(period_table(r, |g| g.word().to_string())),
            notes,
        });
    }
    sections.push(Section {
        title: Some(incidents_heading(r, lim.incidents)),
        table: (!r.incidents.is_empty()).then(|| incident_table(r, tf, lim.incidents, false)),
        notes: Vec::new(),
    });
    let (head, no_data) = no_data_lines(r, tf, lim.no_data);
    sections.push(Section {
        title: Some(head),
        table: None,
        notes: no_data,
    });
    Doc {
        title: format!("Availability per {}", r.config.by.name()),
        lines,
        sections,
        csv_section: 0,
        csv: None,
        figure: None,
        figures: if r.periods.is_empty() {
            Vec::new()
        } else {
            vec![chart(r)]
        },
    }
}
