//! Unit tests of the availability computation and its rendering.

use super::calendar::fixed_offset_periods;
use super::render::{self, Limits, TimeFmt};
use super::*;
use crate::time::{days_from_civil, format_rfc3339_ms};

const MIN: i64 = 60_000;
const HOUR: i64 = 3_600_000;
const DAY: i64 = 86_400_000;

fn at(y: i64, m: u32, d: u32, h: i64, min: i64) -> i64 {
    days_from_civil(y, m, d) * DAY + h * HOUR + min * MIN
}

/// Runs the computation over UTC months (or `by`) for rows `(ts, status, probe)`.
fn run(rows: &[(i64, u16, bool)], cfg: &Config) -> Report {
    let mut acc = Accumulator::new(cfg.since_ms, cfg.until_ms);
    for &(t, s, p) in rows {
        acc.push(t, s, p);
    }
    let prep = acc.prepare(cfg).expect("prepared");
    let periods = match prep.span() {
        Some((s, e)) => fixed_offset_periods(cfg.by, 0, s, e),
        None => Vec::new(),
    };
    prep.compute(&periods, cfg).expect("computes")
}

/// A probe every minute in `[from, to)`, status by `f`.
fn probes(from: i64, to: i64, f: impl Fn(i64) -> u16) -> Vec<(i64, u16, bool)> {
    (0..)
        .map(|k| from + k * MIN)
        .take_while(|&t| t < to)
        .map(|t| (t, f(t), true))
        .collect()
}

fn probe_cfg() -> Config {
    Config::new(Some("Special:BlankPage".into()))
}

fn period<'a>(r: &'a Report, label: &str) -> &'a PeriodStats {
    r.periods
        .iter()
        .find(|p| p.label == label)
        .unwrap_or_else(|| {
            panic!(
                "no period {label}: {:?}",
                r.periods.iter().map(|p| &p.label).collect::<Vec<_>>()
            )
        })
}

fn fmt() -> (impl Fn(i64) -> String, impl Fn(i64) -> String) {
    (
        |ms: i64| format_rfc3339_ms(ms)[..16].replace('T', " "),
        |ms: i64| format_rfc3339_ms(ms),
    )
}

#[test]
fn exact_month_figures_with_failures() {
    let (s, e) = (at(2025, 6, 1, 0, 0), at(2025, 8, 1, 0, 0));
    // June: 22 failures (503) in one block; July: none.
    let fail_from = at(2025, 6, 10, 3, 0);
    let rows = probes(s, e, |t| {
        if (fail_from..fail_from + 22 * MIN).contains(&t) {
            503
        } else {
            200
        }
    });
    let r = run(&rows, &probe_cfg());
    assert_eq!(
        r.cadence,
        Some(Cadence {
            ms: MIN,
            source: CadenceSource::Median
        })
    );
    let june = period(&r, "2025-06");
    assert_eq!(
        (june.requests, june.failed, june.missing, june.expected),
        (43_200, 22, 0, 43_200)
    );
    assert_eq!(june.percent_text(2), "99.94");
    assert_eq!(june.grade, Grade::Green);
    assert!(!june.partial);
    assert_eq!(june.hours, 720.0);
    let trouble = june.trouble_hours.unwrap();
    assert!((trouble - 22.0 / 60.0).abs() < 1e-9, "{trouble}");
    let july = period(&r, "2025-07");
    assert_eq!(july.percent_text(2), "100.00");
    assert_eq!(july.grade, Grade::Green);
    assert_eq!(r.total.expected, 43_200 + 44_640);
    assert_eq!(r.incidents.len(), 1);
    let inc = &r.incidents[0];
    assert_eq!(inc.kind, IncidentKind::Errors);
    assert_eq!(inc.start_ms, fail_from);
    assert_eq!(inc.end_ms, fail_from + 22 * MIN);
    assert_eq!(inc.failed, 22);
    assert_eq!(inc.failures_by_status.get(&503), Some(&22));
    assert_eq!(inc.worst, 0.0);
    assert!(r.no_data.is_empty());
}

#[test]
fn rows_in_any_order_give_the_same_report() {
    let (s, e) = (at(2025, 6, 1, 0, 0), at(2025, 6, 3, 0, 0));
    let mut rows = probes(s, e, |t| if t % (7 * MIN) == 0 { 502 } else { 200 });
    rows.retain(|r| !(at(2025, 6, 2, 1, 0)..at(2025, 6, 2, 5, 0)).contains(&r.0));
    let a = run(&rows, &probe_cfg());
    // A deterministic shuffle.
    let mut shuffled = rows.clone();
    let n = shuffled.len();
    for i in 0..n {
        let j = (i * 7919 + 13) % n;
        shuffled.swap(i, j);
    }
    let b = run(&shuffled, &probe_cfg());
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
}

#[test]
fn gap_spanning_a_month_boundary_is_split_exactly() {
    // Probes every minute, none from 2025-06-30 22:00 to 2025-07-01 02:00 (4 h).
    let (s, e) = (at(2025, 6, 1, 0, 0), at(2025, 8, 1, 0, 0));
    let (g0, g1) = (at(2025, 6, 30, 22, 0), at(2025, 7, 1, 2, 0));
    let mut rows = probes(s, e, |_| 200);
    rows.retain(|r| !(g0..g1).contains(&r.0));
    let r = run(&rows, &probe_cfg());
    let june = period(&r, "2025-06");
    let july = period(&r, "2025-07");
    assert_eq!((june.missing, july.missing), (120, 120));
    assert_eq!(june.expected, 43_200);
    assert_eq!(july.expected, 44_640);
    assert_eq!(june.succeeded, 43_200 - 120);
    // No log lines at all from the last line before to the first after.
    assert_eq!(
        r.no_data,
        vec![NoData {
            from_ms: g0 - MIN,
            to_ms: g1
        }]
    );
    assert!((june.no_data_hours - (2.0 + 1.0 / 60.0)).abs() < 1e-9);
    assert!((july.no_data_hours - 2.0).abs() < 1e-9);
    // One incident of kind gap, exactly the missing probes' time.
    assert_eq!(r.incidents.len(), 1);
    let inc = &r.incidents[0];
    assert_eq!(inc.kind, IncidentKind::Gap);
    assert_eq!((inc.start_ms, inc.end_ms), (g0, g1));
    assert_eq!(inc.missing, 240);
    assert_eq!(inc.duration_ms, 4 * HOUR);
    assert_eq!(inc.no_data_ms, 4 * HOUR);
}

#[test]
fn a_month_without_probes_is_all_missing() {
    // Probes in January and March, none in February (non-probe lines still there).
    let mut rows = probes(at(2025, 1, 1, 0, 0), at(2025, 2, 1, 0, 0), |_| 200);
    rows.extend(probes(at(2025, 3, 1, 0, 0), at(2025, 4, 1, 0, 0), |_| 200));
    rows.extend((0..28).map(|d| (at(2025, 2, 1, 12, 0) + d * DAY, 200, false)));
    let r = run(&rows, &probe_cfg());
    let feb = period(&r, "2025-02");
    assert_eq!(feb.requests, 0);
    assert_eq!(feb.missing, 28 * 1440);
    assert_eq!(feb.percent_text(2), "0.00");
    assert_eq!(feb.grade, Grade::Red);
    assert_eq!(period(&r, "2025-01").missing, 0);
    assert_eq!(period(&r, "2025-03").missing, 0);
    // There were log lines in February, so the no-data spans are the nights between.
    assert!(r.no_data.iter().all(|g| g.to_ms - g.from_ms <= DAY + MIN));
    assert_eq!(r.incidents.len(), 1);
    assert_eq!(r.incidents[0].missing, 28 * 1440);
}

#[test]
fn all_probes_failing() {
    let rows = probes(at(2025, 4, 1, 0, 0), at(2025, 5, 1, 0, 0), |_| 502);
    let r = run(&rows, &probe_cfg());
    let apr = period(&r, "2025-04");
    assert_eq!((apr.succeeded, apr.failed), (0, 43_200));
    assert_eq!(apr.percent_text(2), "0.00");
    assert_eq!(apr.grade, Grade::Red);
    assert!((apr.trouble_hours.unwrap() - 720.0).abs() < 1e-9);
    assert_eq!(r.incidents.len(), 1);
    assert_eq!(r.incidents[0].failures_by_status.get(&502), Some(&43_200));
}

#[test]
fn no_probes_at_all() {
    let rows: Vec<(i64, u16, bool)> = (0..100)
        .map(|k| (at(2025, 4, 1, 0, 0) + k * MIN, 200, false))
        .collect();
    let r = run(&rows, &probe_cfg());
    assert_eq!(r.cadence, None);
    assert_eq!(r.periods.len(), 1);
    assert_eq!(r.periods[0].availability, None);
    assert_eq!(r.periods[0].grade, Grade::None);
    assert!(
        r.notes.iter().any(|n| n.contains("no probe requests")),
        "{:?}",
        r.notes
    );
    // With a cadence, the whole span is missing.
    let mut cfg = probe_cfg();
    cfg.expect_every_ms = Some(MIN);
    let r = run(&rows, &cfg);
    assert_eq!(r.periods[0].missing, 100);
    assert_eq!(r.periods[0].percent_text(2), "0.00");
}

#[test]
fn nothing_at_all() {
    let r = run(&[], &probe_cfg());
    assert!(r.span.is_none() && r.periods.is_empty());
    assert!(!r.notes.is_empty());
}

#[test]
fn policy_statuses() {
    // 100 probes: 90 ok, 5 failed (500), 5 rate-limited (429).
    let s = at(2025, 4, 1, 0, 0);
    let rows = probes(s, s + 100 * MIN, |t| match (t - s) / MIN {
        0..5 => 500,
        5..10 => 429,
        _ => 200,
    });
    let r = run(&rows, &probe_cfg());
    let p = &r.periods[0];
    assert_eq!(
        (p.requests, p.succeeded, p.failed, p.policy, p.expected),
        (100, 90, 5, 5, 95)
    );
    let mut cfg = probe_cfg();
    cfg.policy_as = PolicyAs::Success;
    let p = run(&rows, &cfg).periods[0].clone();
    assert_eq!((p.succeeded, p.failed, p.expected), (95, 5, 100));
    cfg.policy_as = PolicyAs::Failure;
    let p = run(&rows, &cfg).periods[0].clone();
    assert_eq!((p.succeeded, p.failed, p.expected), (90, 10, 100));
    assert_eq!(p.failures_by_status.get(&429), Some(&5));
    cfg.policy = StatusSet::none();
    let p = run(&rows, &cfg).periods[0].clone();
    assert_eq!((p.policy, p.failed), (0, 10));
}

#[test]
fn jitter_with_a_given_cadence() {
    // Probes every minute ± up to 4 s; one 10-minute hole.
    let s = at(2025, 4, 1, 0, 0);
    let rows: Vec<(i64, u16, bool)> = (0..600)
        .filter(|k| !(300..310).contains(k))
        .map(|k| (s + k * MIN + (k * 7919 % 9 - 4) * 1000, 200, true))
        .collect();
    let mut cfg = probe_cfg();
    cfg.expect_every_ms = Some(MIN);
    let r = run(&rows, &cfg);
    assert_eq!(r.total.missing, 10);
    assert_eq!(r.total.succeeded, 590);
    assert_eq!(r.incidents.len(), 1);
}

#[test]
fn estimated_cadence_and_edges_with_since_until() {
    // Probes every 5 minutes from 01:00 to 23:00; span forced to the whole day.
    let day = at(2025, 4, 1, 0, 0);
    let rows: Vec<(i64, u16, bool)> = (12..276).map(|k| (day + k * 5 * MIN, 200, true)).collect();
    let mut cfg = probe_cfg();
    cfg.since_ms = Some(day);
    cfg.until_ms = Some(day + DAY);
    cfg.by = By::Day;
    let r = run(&rows, &cfg);
    assert_eq!(r.cadence.unwrap().ms, 5 * MIN);
    let p = &r.periods[0];
    // 288 expected in the day; 264 seen; 12 missing before, 12 after.
    assert_eq!((p.succeeded, p.missing, p.expected), (264, 24, 288));
    assert_eq!(r.no_data.len(), 2);
    assert_eq!(
        r.no_data[0],
        NoData {
            from_ms: day,
            to_ms: day + HOUR
        }
    );
    assert_eq!(r.incidents.len(), 2);
    assert_eq!(r.incidents[0].start_ms, day);
    assert_eq!(r.incidents[1].end_ms, day + DAY);
    // Without since/until the span is the log's, and nothing is missing.
    let r = run(&rows, &probe_cfg());
    assert_eq!(r.total.missing, 0);
    assert!(r.periods[0].partial);
}

#[test]
fn incidents_merge_across_brief_recoveries() {
    let s = at(2025, 4, 1, 0, 0);
    // Failures 10:00–10:20, ok 10:20–10:30, failures 10:30–10:40 (merged: 10 min < 15);
    // then ok until 11:00, failures 11:00–11:05 (separate: 20 min of recovery).
    let bad = |t: i64| {
        let m = (t - s) / MIN;
        (600..620).contains(&m) || (630..640).contains(&m) || (660..665).contains(&m)
    };
    let rows = probes(s, s + DAY, |t| if bad(t) { 504 } else { 200 });
    let r = run(&rows, &probe_cfg());
    assert_eq!(r.incidents.len(), 2, "{:#?}", r.incidents);
    let a = &r.incidents[0];
    assert_eq!((a.start_ms, a.end_ms), (s + 600 * MIN, s + 640 * MIN));
    assert_eq!(a.failed, 30);
    assert_eq!(a.requests, 40);
    let b = &r.incidents[1];
    assert_eq!(
        (b.start_ms, b.end_ms, b.failed),
        (s + 660 * MIN, s + 665 * MIN, 5)
    );
    // An incident takes in the ragged edge: 10:05 has 1 failure in 5 (80%, not below
    // the threshold) but belongs to the incident that ends there.
    let rows = probes(s, s + DAY, |t| {
        if ((t - s) / MIN) / 6 == 100 { 500 } else { 200 }
    });
    let r = run(&rows, &probe_cfg());
    assert_eq!(r.incidents.len(), 1);
    let i = &r.incidents[0];
    assert_eq!(
        (i.start_ms, i.end_ms, i.failed),
        (s + 600 * MIN, s + 606 * MIN, 6)
    );
    // One failure in five minutes (80%) is not an incident at the default threshold.
    let rows = probes(s, s + DAY, |t| if (t - s) / MIN == 100 { 500 } else { 200 });
    assert!(run(&rows, &probe_cfg()).incidents.is_empty());
    let mut cfg = probe_cfg();
    cfg.incident_below = 90.0;
    assert_eq!(run(&rows, &cfg).incidents.len(), 1);
}

#[test]
fn mixed_incident_kinds() {
    let s = at(2025, 4, 1, 0, 0);
    // Failures 10:00–10:10 then nothing until 12:00.
    let mut rows = probes(
        s,
        s + DAY,
        |t| if ((t - s) / MIN) >= 600 { 503 } else { 200 },
    );
    rows.retain(|r| !((s + 610 * MIN)..(s + 720 * MIN)).contains(&r.0));
    for r in rows.iter_mut().filter(|r| r.0 >= s + 720 * MIN) {
        r.1 = 200;
    }
    let r = run(&rows, &probe_cfg());
    assert_eq!(r.incidents.len(), 1);
    let i = &r.incidents[0];
    assert_eq!(i.kind, IncidentKind::Both);
    assert_eq!((i.failed, i.missing), (10, 110));
    assert_eq!((i.start_ms, i.end_ms), (s + 600 * MIN, s + 720 * MIN));
}

#[test]
fn dynamic_mode() {
    assert!(is_static_path("/skins/a.CSS"));
    assert!(is_static_path("/images/logo.png"));
    assert!(!is_static_path("/index.php"));
    assert!(!is_static_path("/wiki/Main_Page"));
    assert!(!is_static_path("/.png"));
    assert!(!is_static_path("/wiki/v1.2"));
    let s = at(2025, 4, 1, 0, 0);
    // A request every 10 s for a day, 404s count as success, 5xx as failure; a 10-min
    // quiet spell (below the 15-min threshold) and a 2-hour hole.
    let mut rows: Vec<(i64, u16, bool)> = (0..8640)
        .map(|k| {
            let st = match k % 100 {
                0 => 500,
                1 => 404,
                2 => 429,
                _ => 200,
            };
            (s + k * 10_000, st, true)
        })
        .collect();
    let quiet = (s + 3 * HOUR)..(s + 3 * HOUR + 10 * MIN);
    let hole = (s + 12 * HOUR)..(s + 14 * HOUR);
    rows.retain(|r| !quiet.contains(&r.0) && !hole.contains(&r.0));
    let cfg = Config::new(None);
    let r = run(&rows, &cfg);
    let cad = r.cadence.unwrap();
    // The mean interval below the 15-minute threshold: 7,857 × 10 s and the 610 s
    // quiet spell over 7,858 intervals.
    assert_eq!((cad.ms, cad.source), (10_076, CadenceSource::Mean));
    assert_eq!(r.gap_ms, 15 * MIN);
    let p = &r.periods[0];
    // The hole (7,210 s between requests): round(7210 s / 10.076 s) − 1 missing; the
    // quiet spell: none.
    assert_eq!(p.missing, 715);
    assert_eq!(p.failed, rows.iter().filter(|r| r.1 == 500).count() as u64);
    assert_eq!(p.policy, rows.iter().filter(|r| r.1 == 429).count() as u64);
    assert_eq!(r.no_data.len(), 1);
    // The incident ends at the first request after the hole, not a rounding later.
    assert_eq!(r.incidents.len(), 1);
    assert_eq!(r.incidents[0].end_ms, hole.end);
    assert!(render::definition(&r).contains("No --probe given"));
    assert!(
        render::definition(&r).contains("one per 10.1s"),
        "{}",
        render::definition(&r)
    );
}

#[test]
fn percent_text_is_cut_not_rounded() {
    let p = PeriodStats {
        succeeded: 99_996,
        expected: 100_000,
        ..PeriodStats::default()
    };
    assert_eq!(p.percent_text(2), "99.99");
    assert_eq!(p.percent_text(4), "99.9960");
    let z = PeriodStats::default();
    assert_eq!(z.percent_text(2), "-");
}

#[test]
fn hours_and_weeks() {
    let s = at(2025, 4, 7, 0, 0); // a Monday
    let rows = probes(s, s + 14 * DAY, |_| 200);
    let mut cfg = probe_cfg();
    cfg.by = By::Week;
    let r = run(&rows, &cfg);
    assert_eq!(
        r.periods
            .iter()
            .map(|p| p.label.as_str())
            .collect::<Vec<_>>(),
        ["2025-W15", "2025-W16"]
    );
    cfg.by = By::Hour;
    let r = run(&rows, &cfg);
    assert_eq!(r.periods.len(), 14 * 24);
    assert!(r.periods.iter().all(|p| p.expected == 60));
}

#[test]
fn renders() {
    let (s, e) = (at(2025, 6, 1, 0, 0), at(2025, 8, 1, 0, 0));
    let fail_from = at(2025, 6, 10, 3, 0);
    let mut rows = probes(s, e, |t| {
        if (fail_from..fail_from + 300 * MIN).contains(&t) {
            503
        } else {
            200
        }
    });
    rows.retain(|r| !(at(2025, 7, 4, 0, 0)..at(2025, 7, 5, 0, 0)).contains(&r.0));
    let mut cfg = Config::new(Some("Special:BlankPage|<script>".into()));
    cfg.tz = "UTC".into();
    let r = run(&rows, &cfg);
    let (short, rfc) = fmt();
    let tf = TimeFmt {
        short: &short,
        rfc3339: &rfc,
    };
    let t = render::text(&r, &tf, "test.log", false, Limits::default());
    assert!(
        t.contains("2025-06") && t.contains("99.30%") && t.contains("yellow"),
        "{t}"
    );
    assert!(
        t.contains("no data from 2025-07-03 23:59 to 2025-07-05 00:00 (24h 01m)"),
        "{t}"
    );
    assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
    assert!(!t.contains('\x1b'));
    let colored = render::text(&r, &tf, "test.log", true, Limits::default());
    assert!(colored.contains("\x1b[33m"));
    let md = render::markdown(&r, &tf, "test.log", Limits::default());
    assert!(
        md.contains("🟡 yellow") && md.contains("| 2025-06 | 99.30% |"),
        "{md}"
    );
    assert!(md.contains("\\<script\\>"));
    let html = render::html(&r, &tf, "test.log", Limits::default());
    assert!(html.contains("<svg") && html.contains("class=\"yellow\""));
    // The probe pattern (`…|<script>`) is shown escaped, never as markup.
    assert!(!html.contains("<script"), "{html}");
    assert!(html.contains("Special:BlankPage|&lt;script&gt;"), "{html}");
    assert_eq!(html.matches("http://").count(), 1, "only the SVG namespace");
    assert!(!html.contains("https:"), "no network address");
    let csv = render::csv(&r, &tf);
    assert!(csv.starts_with("period,start,end,hours"));
    assert!(csv.contains("2025-06,2025-06-01T00:00:00.000Z,2025-07-01T00:00:00.000Z,720.000,false,99.3055,yellow,43200,42900,300,0,0,43200"), "{csv}");
    let json = render::json(&r, &tf);
    assert!(json.get("start_ms").is_none() && json["periods"][0].get("start_ms").is_none());
    assert_eq!(json["periods"][0]["failed"], 300);
    assert_eq!(json["periods"][0]["start"], "2025-06-01T00:00:00.000Z");
    assert_eq!(json["periods"][1]["missing"], 1440);
    assert_eq!(json["incidents"][0]["kind"], "errors");
    assert_eq!(json["no_data"][0]["from"], "2025-07-03T23:59:00.000Z");
    assert_eq!(json["total"]["availability_text"], r.total.percent_text(2));
}

#[test]
fn html_escapes_labels_source_and_probe() {
    // Attacker-controlled text in every place the HTML page shows text from outside:
    // period labels (chart label, chart title, table cell), the source line (file
    // names), the probe pattern and a note.
    const HOSTILE: &str = "<script>alert(1)</script> \"q\" & co";
    const ESCAPED: &str = "&lt;script&gt;alert(1)&lt;/script&gt; &quot;q&quot; &amp; co";
    let (s, e) = (at(2025, 6, 1, 0, 0), at(2025, 8, 1, 0, 0));
    let fail_from = at(2025, 6, 10, 3, 0);
    let rows = probes(s, e, |t| {
        if (fail_from..fail_from + 30 * MIN).contains(&t) {
            503
        } else {
            200
        }
    });
    let mut cfg = Config::new(Some(format!("BlankPage|{HOSTILE}")));
    cfg.tz = "UTC".into();
    let mut r = run(&rows, &cfg);
    assert_eq!(r.periods.len(), 2);
    r.periods[0].label = format!("2025-06 {HOSTILE}");
    r.periods[0].last_label = r.periods[0].label.clone();
    r.notes.push(format!("note {HOSTILE}"));
    let (short, rfc) = fmt();
    let tf = TimeFmt {
        short: &short,
        rfc3339: &rfc,
    };
    let html = render::html(&r, &tf, &format!("{HOSTILE}.log"), Limits::default());
    // Raw forms nowhere.
    assert!(!html.contains("<script"), "{html}");
    assert!(!html.contains("</script"), "{html}");
    assert!(!html.contains(HOSTILE), "{html}");
    assert!(!html.contains("\"q\""), "{html}");
    assert!(!html.contains("& co"), "{html}");
    // Escaped forms in each place: the chart's label and bar title, the table cell,
    // the probe pattern in the definition, the source, the note.
    // The shared chart cuts a bar's label to 40 characters (then escapes it).
    assert!(
        html.contains(">2025-06 &lt;script&gt;alert(1)&lt;/script&gt; &quot;q&quot;"),
        "chart label: {html}"
    );
    assert!(html.contains("class=\"bar\""), "chart: {html}");
    assert!(
        html.contains(&format!(">2025-06 {ESCAPED}</td>")),
        "table cell: {html}"
    );
    assert!(
        html.contains(&format!("/BlankPage|{ESCAPED}/")),
        "probe: {html}"
    );
    assert!(
        html.contains(&format!("from {ESCAPED}.log")),
        "source: {html}"
    );
    assert!(html.contains(&format!("note {ESCAPED}")), "note: {html}");
}

/// 100 probes on 2024-05-01 and one each on 1971-01-01 and 2099-12-31.
fn far_apart() -> Vec<(i64, u16, bool)> {
    let mut rows = probes(at(2024, 5, 1, 10, 0), at(2024, 5, 1, 11, 40), |_| 200);
    rows.push((at(1971, 1, 1, 12, 0), 200, true));
    rows.push((at(2099, 12, 31, 12, 0), 200, true));
    rows
}

#[test]
fn a_century_between_lines_costs_rows_of_data_not_of_calendar() {
    // Months: 1971-01, one row for 1971-02 … 2024-04, 2024-05, one for 2024-06 …
    // 2099-11, 2099-12; every calendar month still counted.
    let r = run(&far_apart(), &probe_cfg());
    let rows: Vec<(&str, &str, u64)> = r
        .periods
        .iter()
        .map(|p| (p.label.as_str(), p.last_label.as_str(), p.periods))
        .collect();
    assert_eq!(
        rows,
        [
            ("1971-01", "1971-01", 1),
            ("1971-02", "2024-04", 639),
            ("2024-05", "2024-05", 1),
            ("2024-06", "2099-11", 906),
            ("2099-12", "2099-12", 1),
        ]
    );
    assert_eq!(r.total.periods, 1548);
    let gap = &r.periods[1];
    assert_eq!((gap.requests, gap.succeeded, gap.failed), (0, 0, 0));
    assert_eq!(gap.missing, gap.expected);
    assert_eq!(
        gap.missing as i64,
        (gap.end_ms - gap.start_ms) / MIN,
        "one missing probe a minute"
    );
    assert_eq!(gap.percent_text(2), "0.00");
    assert_eq!(gap.grade, Grade::Red);
    let sum: u64 = r.periods.iter().map(|p| p.missing).sum();
    assert_eq!(sum, r.total.missing);
    assert!(r.notes.iter().any(|n| n.contains("2 runs of more than 24")));
    // Two silences, two incidents (all missing).
    assert_eq!(r.incidents.len(), 2);
    assert!(r.incidents.iter().all(|i| i.kind == IncidentKind::Gap));
    assert_eq!(
        r.incidents.iter().map(|i| i.missing).sum::<u64>(),
        r.total.missing
    );
    // Hours and days: as many rows as the data needs.
    for by in [By::Hour, By::Day, By::Week] {
        let mut cfg = probe_cfg();
        cfg.by = by;
        let r = run(&far_apart(), &cfg);
        assert!(r.periods.len() <= 10, "{by:?}: {}", r.periods.len());
        assert_eq!(
            r.periods.iter().map(|p| p.periods).sum::<u64>(),
            r.total.periods
        );
    }
    // Every format says what a collapsed row is.
    let (short, rfc) = fmt();
    let tf = TimeFmt {
        short: &short,
        rfc3339: &rfc,
    };
    let t = render::text(&r, &tf, "x.log", false, Limits::default());
    assert!(
        t.contains("1971-02 … 2024-04: no probe requests in 639 months, one row;"),
        "{t}"
    );
    assert!(t.contains("counted as downtime"), "{t}");
    assert!(t.contains("\ntotal "), "{t}");
    let md = render::markdown(&r, &tf, "x.log", Limits::default());
    assert!(md.contains("| 1971-02 … 2024-04 | 0.00% |"), "{md}");
    let html = render::html(&r, &tf, "x.log", Limits::default());
    assert!(html.contains("no probe requests in 639 months"));
    let csv = render::csv(&r, &tf);
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .ends_with(",periods,last_period")
    );
    assert!(
        csv.lines()
            .any(|l| l.starts_with("1971-02,") && l.ends_with(",639,2024-04")),
        "{csv}"
    );
    let json = render::json(&r, &tf);
    assert_eq!(json["periods"][1]["periods"], 639);
    assert_eq!(json["periods"][1]["last_label"], "2024-04");
    assert_eq!(json["periods"][0]["periods"], 1);
}

#[test]
fn short_runs_of_empty_periods_stay_rows() {
    // Probes on 2025-01-01 and 2026-06-01: 16 months without a probe, one by one.
    let mut rows = probes(at(2025, 1, 1, 0, 0), at(2025, 1, 1, 1, 0), |_| 200);
    rows.extend(probes(at(2026, 6, 1, 0, 0), at(2026, 6, 1, 1, 0), |_| 200));
    let r = run(&rows, &probe_cfg());
    assert_eq!(r.periods.len(), 18);
    assert!(r.periods.iter().all(|p| p.periods == 1));
    assert!(r.periods[5].expected > 0 && r.periods[5].percent_text(2) == "0.00");
}

proptest::proptest! {
    /// Long silences are kept as one sub-bucket entry: the figures are those of one
    /// entry per sub-bucket.
    #[test]
    fn compressed_silences_give_the_same_report(
        cadence_s in proptest::sample::select(vec![20i64, 60, 300, 420, 900]),
        bucket_m in proptest::sample::select(vec![1i64, 5, 10]),
        gaps in proptest::collection::vec((0i64..400, 1i64..2000, 0u8..4), 1..6),
        below in proptest::sample::select(vec![0.0f64, 50.0, 80.0, 100.0]),
        dynamic in proptest::bool::ANY,
    ) {
        let c = cadence_s * 1000;
        let mut rows = Vec::new();
        let mut t = at(2025, 3, 1, 0, 0);
        for (n, gap, fail) in gaps {
            for k in 0..n {
                let st = if fail > 0 && k % (fail as i64 + 1) == 0 { 503 } else { 200 };
                rows.push((t, st, true));
                t += c + (k % 3) * 1000;
            }
            t += gap * c;
        }
        rows.push((t, 200, true));
        let mut cfg = if dynamic { Config::new(None) } else { probe_cfg() };
        cfg.bucket_ms = bucket_m * MIN;
        cfg.incident_below = below;
        cfg.by = By::Day;
        let a = serde_json::to_value(run(&rows, &cfg)).unwrap();
        COMPRESS_SUBS.with(|f| f.set(false));
        let b = serde_json::to_value(run(&rows, &cfg)).unwrap();
        COMPRESS_SUBS.with(|f| f.set(true));
        proptest::prop_assert_eq!(a, b);
    }
}
