//! Integration tests of `logscope availability` through the binary: the wiki's published
//! monthly table reproduced from a generated probe log, a DST fixture with exact
//! per-month figures (checked in as `fixtures/availability/berlin-dst.log.gz`, compared
//! with its generator), the dataset path, the option errors, hostile file names and hosts
//! escaped in HTML, and the real honeynet log (ignored: it is only in ../shared).

use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, TimeZone, Timelike};
use chrono_tz::Tz;

use super::common::{fixture, ingest_json, logscope, shared_real};

/// The wiki's table (BRIEF.md, story 1): month → availability in hundredths of a percent.
const WIKI: [(&str, u32); 15] = [
    ("2025-06", 10000),
    ("2025-07", 9995),
    ("2025-08", 9907),
    ("2025-09", 9365),
    ("2025-10", 9894),
    ("2025-11", 8351),
    ("2025-12", 8291),
    ("2026-01", 9999),
    ("2026-02", 9868),
    ("2026-03", 9915),
    ("2026-04", 9893),
    ("2026-05", 9999),
    ("2026-06", 9921),
    ("2026-07", 9627),
    ("2026-08", 7539),
];

fn clf(t: NaiveDateTime, offset: &str) -> String {
    format!("{} {offset}", t.format("%d/%b/%Y:%H:%M:%S"))
}

fn line(out: &mut String, ip: &str, time: &str, target: &str, status: u16, agent: &str) {
    let _ = writeln!(
        out,
        "{ip} - - [{time}] \"GET {target} HTTP/1.1\" {status} 512 \"-\" \"{agent}\""
    );
}

/// Per month: minutes, failed probes, missing probes (the December gap).
struct WikiMonth {
    label: &'static str,
    minutes: i64,
    failed: i64,
    missing: i64,
}

/// The probe log behind the wiki's table: a `Special:BlankPage` probe every minute
/// (Asia/Seoul, +0900) from 2025-06-01 to 2026-08-31; in each month just enough failed
/// probes (503/502/504/500, in blocks of up to 8 hours a day) that the share of
/// successes, cut to two decimals, is the published figure; a 91-hour gap with no
/// log lines at all from 2025-12-20 00:00; a few rate-limited (429) probes, which do
/// not count; and hourly ordinary traffic, including 5xx, which is not a probe.
fn wiki_log() -> (String, Vec<WikiMonth>) {
    let mut out = String::with_capacity(70_000_000);
    let mut months = Vec::new();
    let gap_start = NaiveDate::from_ymd_opt(2025, 12, 20)
        .unwrap()
        .and_hms_opt(0, 0, 0)
        .unwrap();
    let gap_end = gap_start + Duration::hours(91);
    let statuses = [503, 502, 504, 500];
    let mut block = 0usize;
    for (label, target) in WIKI {
        let y: i32 = label[..4].parse().unwrap();
        let m: u32 = label[5..].parse().unwrap();
        let first = NaiveDate::from_ymd_opt(y, m, 1).unwrap();
        let next = if m == 12 {
            NaiveDate::from_ymd_opt(y + 1, 1, 1).unwrap()
        } else {
            NaiveDate::from_ymd_opt(y, m + 1, 1).unwrap()
        };
        let minutes = (next - first).num_days() * 1440;
        let ok_needed = (i64::from(target) * minutes + 9_999) / 10_000;
        let bad = minutes - ok_needed;
        let missing = if label == "2025-12" { 91 * 60 } else { 0 };
        let failed = bad - missing;
        // Failure blocks: day d (1-based) from 02:00, up to 480 minutes each.
        let is_failed = |t: NaiveDateTime| {
            let day = (t.date() - first).num_days();
            let minute_of_block = (t - t.date().and_hms_opt(2, 0, 0).unwrap()).num_minutes();
            let before = day * 480;
            (0..480).contains(&minute_of_block) && before + minute_of_block < failed
        };
        let mut t = first.and_hms_opt(0, 0, 0).unwrap();
        let end = next.and_hms_opt(0, 0, 0).unwrap();
        while t < end {
            if t >= gap_start && t < gap_end {
                t += Duration::minutes(1);
                continue;
            }
            let time = clf(t, "+0900");
            let status = if is_failed(t) {
                statuses[(block + (t.date() - first).num_days() as usize) % 4]
            } else {
                200
            };
            line(
                &mut out,
                "10.0.0.9",
                &time,
                "/index.php?title=Special:BlankPage",
                status,
                "blackbox-exporter/0.25",
            );
            if t.minute() == 30 {
                let time = clf(t + Duration::seconds(15), "+0900");
                let (target, st) = if t.hour().is_multiple_of(6) {
                    ("/index.php?search=rate+limit&fulltext=1", 500)
                } else {
                    ("/wiki/Main_Page", 200)
                };
                line(&mut out, "198.51.100.7", &time, target, st, "Mozilla/5.0");
            }
            if label == "2025-09" && t.day() == 15 && t.hour() == 10 {
                // A rate-limited probe half a minute after each regular one: policy.
                line(
                    &mut out,
                    "10.0.0.9",
                    &clf(t + Duration::seconds(30), "+0900"),
                    "/index.php?title=Special:BlankPage",
                    429,
                    "blackbox-exporter/0.25",
                );
            }
            t += Duration::minutes(1);
        }
        block += 1;
        months.push(WikiMonth {
            label,
            minutes,
            failed,
            missing,
        });
    }
    (out, months)
}

/// The wiki log written to `dir`, or to `$LOGSCOPE_WIKI_FIXTURE` when set (to keep it).
fn write_wiki(dir: &Path) -> (PathBuf, Vec<WikiMonth>) {
    let (text, months) = wiki_log();
    let path = std::env::var_os("LOGSCOPE_WIKI_FIXTURE")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.join("wiki-probes.log"));
    std::fs::write(&path, text).unwrap();
    (path, months)
}

fn run_ok(data: &Path, args: &[&str]) -> String {
    let out = logscope(data)
        .arg("availability")
        .args(args)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "availability {args:?} failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn run_json(data: &Path, args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    serde_json::from_str(&run_ok(data, &a)).expect("json")
}

/// A file name an attacker could choose (rotated logs are named after hosts, sites,
/// uploads): markup, a quote and an ampersand. `</script>` holds a `/`, so the file sits
/// in a directory named after the first half.
const HOSTILE_NAME: &str = "x\"&<script>alert(1)</script>.log";
const HOSTILE_NAME_ESCAPED: &str = "x&quot;&amp;&lt;script&gt;alert(1)&lt;/script&gt;.log";

/// The page shows `escaped` and none of the raw markup or quote.
fn assert_hostile_escaped(html: &str, escaped: &str) {
    assert!(html.contains(escaped), "{escaped} not in {html}");
    assert!(!html.contains("<script"), "{html}");
    assert!(!html.contains("</script"), "{html}");
    assert!(!html.contains("alert(1)</"), "{html}");
    assert!(!html.contains("x\"&"), "{html}");
}

#[test]
fn reproduces_the_wiki_table() {
    let tmp = tempfile::tempdir().unwrap();
    let (log, months) = write_wiki(tmp.path());
    let log = log.to_str().unwrap();
    let data = tmp.path().join("data");
    let args = ["--probe", "Special:BlankPage", "--tz", "Asia/Seoul", log];
    let text = run_ok(&data, &args);
    eprintln!(
        "$ logscope availability --probe Special:BlankPage --tz Asia/Seoul wiki-probes.log\n{text}"
    );

    // The terminal table shows every published figure with its grade.
    for (label, hundredths) in WIKI {
        let pct = format!("{}.{:02}%", hundredths / 100, hundredths % 100);
        let grade = match hundredths {
            9990.. => "green",
            9900.. => "yellow",
            9500.. => "orange",
            _ => "red",
        };
        let row = text
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no row {label} in\n{text}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[1], pct, "{row}");
        assert_eq!(cells[2], grade, "{row}");
    }
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("expected every 1m, estimated: median interval between probes"),
        "{text}"
    );
    assert!(flat.contains("Months in Asia/Seoul"), "{text}");
    assert!(
        text.contains("no data from 2025-12-19 23:59 to 2025-12-23 19:00 (91h 01m)"),
        "{text}"
    );

    // Exact counts in JSON.
    let v = run_json(&data, &args);
    let periods = v["periods"].as_array().unwrap();
    assert_eq!(periods.len(), 15);
    for (p, m) in periods.iter().zip(&months) {
        assert_eq!(p["label"], m.label);
        assert_eq!(p["expected"].as_i64().unwrap(), m.minutes, "{}", m.label);
        assert_eq!(p["failed"].as_i64().unwrap(), m.failed, "{}", m.label);
        assert_eq!(p["missing"].as_i64().unwrap(), m.missing, "{}", m.label);
        assert_eq!(p["partial"], false, "{}", m.label);
        assert_eq!(p["hours"].as_f64().unwrap(), (m.minutes / 60) as f64);
    }
    let sep = &periods[3];
    assert_eq!(sep["policy"], 60, "the 429s are left out");
    assert_eq!(sep["requests"].as_i64().unwrap(), 43_200 + 60);
    let dec = &periods[6];
    assert_eq!(dec["availability_text"], "82.91");
    // 98% is about 14 hours of trouble in a month (the post's rule of thumb).
    let oct_trouble = periods[4]["trouble_hours"].as_f64().unwrap();
    assert!(
        (oct_trouble - (1.0 - 0.9894) * 744.0).abs() < 0.05,
        "{oct_trouble}"
    );
    // The 91-hour gap is one incident of kind gap; the no-data span is listed.
    let gap = v["incidents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["kind"] == "gap")
        .expect("a gap incident");
    assert_eq!(gap["duration_ms"].as_i64().unwrap(), 91 * 3_600_000);
    assert_eq!(gap["missing"], 5460);
    assert_eq!(gap["start"], "2025-12-20T00:00:00.000+09:00");
    assert_eq!(gap["end"], "2025-12-23T19:00:00.000+09:00");
    let no_data = v["no_data"].as_array().unwrap();
    assert_eq!(no_data.len(), 1, "{no_data:?}");
    // Every failure block is an incident with its statuses.
    let errors: Vec<&serde_json::Value> = v["incidents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "errors")
        .collect();
    let failed: i64 = errors.iter().map(|i| i["failed"].as_i64().unwrap()).sum();
    assert_eq!(failed, months.iter().map(|m| m.failed).sum::<i64>());

    // Markdown: grades visible without colour.
    let md = run_ok(
        &data,
        &[
            "--probe",
            "Special:BlankPage",
            "--tz",
            "Asia/Seoul",
            "--format",
            "md",
            log,
        ],
    );
    assert!(md.contains("| 2025-12 | 82.91% | 🔴 red |"), "{md}");
    assert!(md.contains("| 2025-07 | 99.95% | 🟢 green |"), "{md}");
    assert!(md.contains("| 2026-03 | 99.15% | 🟡 yellow |"), "{md}");
    assert!(md.contains("| 2026-02 | 98.68% | 🟠 orange |"), "{md}");
    eprintln!(
        "$ logscope availability --probe Special:BlankPage --tz Asia/Seoul --format md wiki-probes.log\n{md}"
    );

    // HTML under reports/ (bare --out name), self-contained. The log is read under a
    // hostile name (a hard link), which the page shows as its source, escaped.
    let cwd = tmp.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let hostile = tmp.path().join(HOSTILE_NAME);
    std::fs::create_dir_all(hostile.parent().unwrap()).unwrap();
    std::fs::hard_link(log, &hostile).unwrap();
    let out = logscope(&data)
        .current_dir(&cwd)
        .args([
            "availability",
            "--probe",
            "Special:BlankPage",
            "--tz",
            "Asia/Seoul",
        ])
        // --full-paths: the whole hostile path is shown (a file name alone is the default).
        .args(["--format", "html", "--full-paths", "--out", "wiki.html"])
        .arg(&hostile)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(cwd.join("reports/wiki.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<svg") && html.contains("82.91"));
    assert_eq!(
        html.matches("http://").count(),
        1,
        "only the SVG namespace, no network resources"
    );
    assert!(!html.contains("https:"), "no network resources");
    assert_hostile_escaped(&html, HOSTILE_NAME_ESCAPED);

    // CSV: one row per month and a total.
    let csv = run_ok(
        &data,
        &[
            "--probe",
            "Special:BlankPage",
            "--tz",
            "Asia/Seoul",
            "--format",
            "csv",
            log,
        ],
    );
    assert_eq!(csv.lines().count(), 1 + 15 + 1);
    assert!(
        csv.lines()
            .any(|l| l.starts_with("2025-12,2025-12-01T00:00:00.000+09:00,"))
    );

    // In UTC the months cut elsewhere: the first "month" is the 9 hours of May 31.
    let utc = run_json(&data, &["--probe", "Special:BlankPage", log]);
    assert_eq!(utc["periods"][0]["label"], "2025-05");
    assert_eq!(utc["periods"][0]["partial"], true);
}

/// The DST fixture: a `/healthz` probe every 5 minutes in Europe/Berlin from
/// 2025-02-01 to 2025-05-01 local, with a gap across the Feb/Mar boundary
/// (2025-02-28 22:00 → 03-01 02:00), 40 failures (503) on Feb 10 from 10:00, the
/// clock change on 2025-03-30 with 24 failures (502) around it, 10 extra 429s on
/// Mar 15 (policy), and a 3-day gap 2025-04-10 12:00 → 04-13 12:00.
fn berlin_log() -> String {
    let tz: Tz = "Europe/Berlin".parse().unwrap();
    let mut out = String::new();
    let start = tz
        .with_ymd_and_hms(2025, 2, 1, 0, 0, 0)
        .unwrap()
        .timestamp();
    let end = tz
        .with_ymd_and_hms(2025, 5, 1, 0, 0, 0)
        .unwrap()
        .timestamp();
    let local = |y, mo, d, h, mi| tz.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap().timestamp();
    let gaps = [
        (local(2025, 2, 28, 22, 0), local(2025, 3, 1, 2, 0)),
        (local(2025, 4, 10, 12, 0), local(2025, 4, 13, 12, 0)),
    ];
    let feb_fail = (
        local(2025, 2, 10, 10, 0),
        local(2025, 2, 10, 10, 0) + 40 * 300,
    );
    // 01:00–01:55 CET and 03:00–03:55 CEST: 24 probes, 2 real hours.
    let dst_fail = (local(2025, 3, 30, 1, 0), local(2025, 3, 30, 4, 0));
    let policy = local(2025, 3, 15, 12, 0);
    let mut t = start;
    while t < end {
        if !gaps.iter().any(|(a, b)| (*a..*b).contains(&t)) {
            let dt = tz.timestamp_opt(t, 0).unwrap();
            let time = dt.format("%d/%b/%Y:%H:%M:%S %z").to_string();
            let status = if (feb_fail.0..feb_fail.1).contains(&t) {
                503
            } else if (dst_fail.0..dst_fail.1).contains(&t) {
                502
            } else {
                200
            };
            line(
                &mut out,
                "192.0.2.10",
                &time,
                "/healthz",
                status,
                "kube-probe/1.31",
            );
            if (policy..policy + 10 * 300).contains(&t) {
                let dt = tz.timestamp_opt(t + 150, 0).unwrap();
                let time = dt.format("%d/%b/%Y:%H:%M:%S %z").to_string();
                line(
                    &mut out,
                    "192.0.2.10",
                    &time,
                    "/healthz",
                    429,
                    "kube-probe/1.31",
                );
            }
            if t % 3600 == 1800 {
                let dt = tz.timestamp_opt(t + 7, 0).unwrap();
                let time = dt.format("%d/%b/%Y:%H:%M:%S %z").to_string();
                line(
                    &mut out,
                    "203.0.113.5",
                    &time,
                    "/static/app.css",
                    200,
                    "Mozilla/5.0",
                );
            }
        }
        t += 300;
    }
    out
}

fn berlin_fixture() -> PathBuf {
    fixture("availability/berlin-dst.log.gz")
}

#[test]
fn berlin_fixture_matches_its_generator() {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(berlin_fixture()).expect("fixture"))
        .read_to_string(&mut text)
        .unwrap();
    let generated = berlin_log();
    if std::env::var_os("LOGSCOPE_REGENERATE_FIXTURES").is_some() {
        use std::io::Write;
        let f = std::fs::File::create(berlin_fixture()).unwrap();
        let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::best());
        gz.write_all(generated.as_bytes()).unwrap();
        gz.finish().unwrap();
        return;
    }
    assert!(
        text == generated,
        "fixtures/availability/berlin-dst.log.gz differs from berlin_log(); regenerate with LOGSCOPE_REGENERATE_FIXTURES=1"
    );
}

/// Exact expectations for the DST fixture in Europe/Berlin.
fn check_berlin(v: &serde_json::Value) {
    let p = v["periods"].as_array().unwrap();
    let got: Vec<(&str, i64, i64, i64, i64, f64, &str)> = p
        .iter()
        .map(|p| {
            (
                p["label"].as_str().unwrap(),
                p["expected"].as_i64().unwrap(),
                p["succeeded"].as_i64().unwrap(),
                p["failed"].as_i64().unwrap(),
                p["missing"].as_i64().unwrap(),
                p["hours"].as_f64().unwrap(),
                p["availability_text"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            // 28 × 24 × 12 probes; 24 missing before midnight, 40 failed.
            ("2025-02", 8064, 8000, 40, 24, 672.0, "99.20"),
            // 743 hours (the clock went forward): 8,916 probes; 24 missing, 24 failed.
            ("2025-03", 8916, 8868, 24, 24, 743.0, "99.46"),
            // 720 hours; 72 hours missing = 864 probes.
            ("2025-04", 8640, 7776, 0, 864, 720.0, "90.00"),
        ]
    );
    assert_eq!(p[1]["policy"], 10);
    assert_eq!(p[1]["failures_by_status"]["502"], 24);
    let grades: Vec<&str> = p.iter().map(|p| p["grade"].as_str().unwrap()).collect();
    assert_eq!(grades, ["yellow", "yellow", "red"]);
    // The gap across the month boundary is one incident, split exactly in the months.
    let inc = v["incidents"].as_array().unwrap();
    let kinds: Vec<(&str, &str, i64)> = inc
        .iter()
        .map(|i| {
            (
                i["start"].as_str().unwrap(),
                i["kind"].as_str().unwrap(),
                i["duration_ms"].as_i64().unwrap() / 60_000,
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("2025-02-10T10:00:00.000+01:00", "errors", 200),
            ("2025-02-28T22:00:00.000+01:00", "gap", 240),
            ("2025-03-30T01:00:00.000+01:00", "errors", 120),
            ("2025-04-10T12:00:00.000+02:00", "gap", 72 * 60),
        ]
    );
    let nd: Vec<(&str, &str)> = v["no_data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["from"].as_str().unwrap(), g["to"].as_str().unwrap()))
        .collect();
    assert_eq!(
        nd,
        [
            (
                "2025-02-28T21:55:00.000+01:00",
                "2025-03-01T02:00:00.000+01:00"
            ),
            (
                "2025-04-10T11:55:00.000+02:00",
                "2025-04-13T12:00:00.000+02:00"
            ),
        ]
    );
}

#[test]
fn dst_fixture_exact_months_from_files_and_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let f = berlin_fixture();
    let f = f.to_str().unwrap();
    let args = ["--probe", "^/healthz$", "--tz", "Europe/Berlin"];
    let mut with_file = args.to_vec();
    with_file.push(f);
    let from_files = run_json(&data, &with_file);
    check_berlin(&from_files);
    assert_eq!(from_files["cadence"]["ms"], 300_000);
    assert_eq!(from_files["cadence"]["source"], "median");

    // The same from the dataset.
    let (_, code) = ingest_json(&data, &[f]);
    assert_eq!(code, 0);
    let from_dataset = run_json(&data, &args);
    check_berlin(&from_dataset);
    let strip = |mut v: serde_json::Value| {
        v.as_object_mut().unwrap().remove("source");
        // What reading FILE arguments found (absent over the dataset).
        v.as_object_mut().unwrap().remove("inputs");
        v
    };
    assert_eq!(strip(from_files), strip(from_dataset.clone()));
    let text = run_ok(&data, &args);
    eprintln!(
        "$ logscope availability --probe '^/healthz$' --tz Europe/Berlin   # dataset\n{text}"
    );
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("2025-03 99.46% yellow 8,902 24 24 4.0 2.0"),
        "{text}"
    );

    // In UTC the months cut an hour or two earlier: different counts.
    let utc = run_json(&data, &["--probe", "^/healthz$"]);
    assert_eq!(utc["periods"][0]["label"], "2025-01");
    assert_ne!(utc["periods"][2]["expected"], 8916);

    // --by day: the spring-forward day has 23 hours (276 probes).
    let days = run_json(
        &data,
        &[
            "--probe",
            "^/healthz$",
            "--tz",
            "Europe/Berlin",
            "--by",
            "day",
            "--since",
            "2025-03-29",
            "--until",
            "2025-03-31",
        ],
    );
    let d: Vec<(&str, f64, i64)> = days["periods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["label"].as_str().unwrap(),
                p["hours"].as_f64().unwrap(),
                p["expected"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        d,
        [
            ("2025-03-29", 24.0, 288),
            ("2025-03-30", 23.0, 276),
            ("2025-03-31", 24.0, 288)
        ]
    );

    // A wider --since/--until: January and May have no probe requests at all, so all
    // their expected probes are missing (0 %, red), and the silence is listed.
    let wide = run_json(
        &data,
        &[
            "--probe",
            "^/healthz$",
            "--tz",
            "Europe/Berlin",
            "--since",
            "2025-01",
            "--until",
            "2025-05",
        ],
    );
    let p = wide["periods"].as_array().unwrap();
    assert_eq!(p.len(), 5);
    assert_eq!(p[0]["requests"], 0);
    assert_eq!(p[0]["missing"], 31 * 24 * 12);
    assert_eq!(p[0]["availability_text"], "0.00");
    assert_eq!(p[0]["grade"], "red");
    assert_eq!(p[4]["missing"], 31 * 24 * 12);
    assert_eq!(wide["no_data"][0]["from"], "2025-01-01T00:00:00.000+01:00");
    assert_eq!(
        wide["no_data"].as_array().unwrap().last().unwrap()["to"],
        "2025-06-01T00:00:00.000+02:00"
    );
    // Policy counted as failure: March's 10 429s join the denominator.
    let strict = run_json(
        &data,
        &[
            "--probe",
            "^/healthz$",
            "--tz",
            "Europe/Berlin",
            "--policy",
            "failure",
        ],
    );
    assert_eq!(strict["periods"][1]["failed"], 34);
    // No probe: dynamic requests (the CSS lines are static and do not count).
    let dynamic = run_json(&data, &["--tz", "Europe/Berlin"]);
    assert_eq!(dynamic["config"]["probe"], serde_json::Value::Null);
    assert_eq!(dynamic["probe_requests"], from_dataset["probe_requests"]);
    assert!(
        dynamic["definition"]
            .as_str()
            .unwrap()
            .contains("No --probe given")
    );
}

#[test]
fn option_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let f = berlin_fixture();
    let f = f.to_str().unwrap();
    for (args, msg) in [
        (vec!["--tz", "Mars/Olympus", f], "not a time zone"),
        (vec!["--probe", "(", f], "--probe is not a valid regex"),
        (vec!["--since", "June", f], "--since"),
        (
            vec!["--since", "2025-03", "--until", "2025-02", f],
            "--until must be after --since",
        ),
        (vec!["--success", "5x", f], "--success"),
        (vec!["--expect-every", "soon", f], "not a duration"),
        (vec!["--grades", "95,99,99.9", f], "descending"),
    ] {
        let out = logscope(&data)
            .arg("availability")
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} should fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(msg), "{args:?}: {err}");
    }
    // No dataset and no files.
    let out = logscope(&data).arg("availability").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no dataset"));
}

#[test]
#[ignore = "needs ../shared/data/real: the honeynet log (13 MB, licence unclear) may not be copied"]
fn honeynet_real_log() {
    let p = shared_real("honeynet-2004/access_log.all.gz");
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let p = p.to_str().unwrap();
    let args = ["--tz", "America/New_York", p];
    let text = run_ok(&data, &args);
    eprintln!("$ logscope availability --tz America/New_York access_log.all.gz\n{text}");
    let v = run_json(&data, &args);
    let labels: Vec<&str> = v["periods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "2004-04", "2004-05", "2004-06", "2004-07", "2004-08", "2004-09", "2004-10"
        ]
    );
    // The 28-day hole (2004-08-12 → 09-09) is listed as one span with no log lines.
    let long: Vec<&serde_json::Value> = v["no_data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["to_ms"].as_i64().unwrap() - g["from_ms"].as_i64().unwrap() > 20 * 86_400_000)
        .collect();
    assert_eq!(long.len(), 1, "{long:?}");
    assert!(
        long[0]["from"].as_str().unwrap().starts_with("2004-08-1"),
        "{long:?}"
    );
    assert!(
        long[0]["to"].as_str().unwrap().starts_with("2004-09-0"),
        "{long:?}"
    );
    assert!(text.contains("no data from 2004-08-1"), "{text}");
    // August and September carry the hole as downtime.
    let aug = &v["periods"][4];
    assert!(aug["missing"].as_i64().unwrap() > 0);
    assert!(aug["availability"].as_f64().unwrap() < 95.0, "{aug}");
    // The quiet nights of this small site (a few hundred requests a day) are its
    // rhythm, not outages. Before, one request was expected per mean interval (71 s,
    // pulled down by the storms): 15.49% and 389 "gap" incidents.
    // Now 1,851 silences are checked against the weekly rhythm and only the multi-day
    // holes (35) count: 94.45%.
    let rh = &v["rhythm"];
    assert_eq!(rh["kind"], "hour_of_week", "{rh}");
    assert!(rh["silences_checked"].as_u64().unwrap() > 1000, "{rh}");
    assert!(rh["silences_counted"].as_u64().unwrap() < 50, "{rh}");
    assert!(
        v["total"]["availability"].as_f64().unwrap() > 90.0,
        "{}",
        v["total"]
    );
    assert!(v["incidents"].as_array().unwrap().len() < 60);
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("Confidence: high"), "{text}");
}

#[test]
fn host_selects_one_site_of_a_shared_log() {
    // Two virtual hosts in one vhost-combined log, a probe a minute each for a day:
    // a.example answers every probe, b.example fails one in ten.
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("vhosts.log");
    let mut text = String::new();
    for m in 0..1440u32 {
        let (h, mi) = (m / 60, m % 60);
        for (host, status) in [
            ("a.example", 200),
            ("b.example", if m % 10 == 0 { 503 } else { 200 }),
        ] {
            text.push_str(&format!(
                "{host}:443 192.0.2.1 - - [01/Mar/2025:{h:02}:{mi:02}:00 +0000] \"GET /healthz HTTP/1.1\" {status} 2 \"-\" \"probe\"\n"
            ));
        }
    }
    std::fs::write(&log, text).unwrap();
    let run = |host: &str| -> serde_json::Value {
        let out = logscope(&tmp.path().join("data"))
            .args([
                "availability",
                "--probe",
                "^/healthz$",
                "--by",
                "day",
                "--format",
                "json",
                "--host",
                host,
            ])
            .arg(&log)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let a = run("a.example");
    let b = run("b.example");
    assert_eq!(a["probe_requests"], 1440, "{a}");
    assert_eq!(a["total"]["failed"], 0, "{a}");
    assert_eq!(a["total"]["availability_text"], "100.00");
    assert_eq!(b["probe_requests"], 1440, "{b}");
    assert_eq!(b["total"]["failed"], 144, "{b}");
    assert_eq!(b["total"]["availability_text"], "90.00");
}

#[test]
fn html_escapes_hostile_file_names_and_hosts() {
    // A vhost log whose second site is named with markup (a Host header is the client's
    // choice), in a file with a hostile name; the HTML page shows both, escaped.
    let host = "<script>alert(1)</script>&b.example";
    let host_escaped = "&lt;script&gt;alert(1)&lt;/script&gt;&amp;b.example";
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join(HOSTILE_NAME);
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let mut text = String::new();
    for m in 0..120u32 {
        let (h, mi) = (m / 60, m % 60);
        for (site, status) in [
            ("a.example", 200),
            (host, if m % 10 == 0 { 503 } else { 200 }),
        ] {
            text.push_str(&format!(
                "{site}:443 192.0.2.1 - - [01/Mar/2025:{h:02}:{mi:02}:00 +0000] \"GET /healthz HTTP/1.1\" {status} 2 \"-\" \"probe\"\n"
            ));
        }
    }
    std::fs::write(&log, text).unwrap();
    let out_file = tmp.path().join("page.html");
    let out = logscope(&tmp.path().join("data"))
        .args([
            "availability",
            "--probe",
            "^/healthz$",
            "--by",
            "day",
            "--format",
            "html",
            "--host",
            host,
            "--full-paths",
            "--out",
        ])
        .arg(&out_file)
        .arg(&log)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&out_file).unwrap();
    // The host's probes were selected: 120, one in ten failed.
    assert!(html.contains("90.00%"), "{html}");
    assert!(html.contains(&format!("host {host_escaped}")), "{html}");
    assert!(!html.contains(host), "{html}");
    assert_hostile_escaped(&html, HOSTILE_NAME_ESCAPED);
}

// ---------------------------------------------------------------------------------------
// Without a probe, silences are judged by the site's own rhythm.

/// A quiet site over six weeks from Monday 2025-03-03 (UTC): 12 page views an hour
/// from 08:00 to 21:59, 2 an hour at 07:00 and 22:00–23:59, nothing from 00:00 to
/// 06:59 (every night is 7 hours of silence); a storm of 5,000 requests in ten minutes
/// on the second Wednesday; and, when `silence` is given, nothing on that day (days
/// after the start) from 14:00 to 16:00.
fn quiet_site(silence: Option<i64>) -> String {
    let start = NaiveDate::from_ymd_opt(2025, 3, 3)
        .unwrap()
        .and_hms_opt(0, 0, 0)
        .unwrap();
    let mut out = String::new();
    let mut seed = 12_345u64;
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    };
    for day in 0..42i64 {
        for hour in 0..24i64 {
            let n = match hour {
                0..=6 => 0,
                7 | 22 | 23 => 2,
                _ => 12,
            };
            if silence == Some(day) && (14..16).contains(&hour) {
                continue;
            }
            // One request per 5-minute slot, at a random second inside it.
            for k in 0..n {
                let sec = k * (3600 / n) + next(3600 / n as u64) as i64;
                let t = start + Duration::seconds(day * 86_400 + hour * 3600 + sec);
                let ip = format!("198.51.100.{}", next(200) + 1);
                line(
                    &mut out,
                    &ip,
                    &clf(t, "+0000"),
                    "/index.php?title=Main_Page",
                    200,
                    "Mozilla/5.0 Firefox/120.0",
                );
            }
        }
        if day == 9 {
            for k in 0..5000i64 {
                let t = start
                    + Duration::seconds(day * 86_400 + 15 * 3600)
                    + Duration::milliseconds(k * 120);
                line(
                    &mut out,
                    "203.0.113.7",
                    &clf(t, "+0000"),
                    "/index.php?search=x",
                    200,
                    "python-requests/2.31",
                );
            }
        }
    }
    out
}

fn gap_incidents(v: &serde_json::Value) -> Vec<&serde_json::Value> {
    v["incidents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] != "errors")
        .collect()
}

#[test]
fn quiet_nights_are_not_outages_without_a_probe() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("quiet.log");
    std::fs::write(&log, quiet_site(None)).unwrap();
    let data = tmp.path().join("data");
    let log = log.to_str().unwrap();
    let v = run_json(&data, &[log]);
    // 41 nights of 7 silent hours, each checked and none counted: the storm does not
    // pull the expectation up, the nights are the site's rhythm.
    let rh = &v["rhythm"];
    assert_eq!(rh["kind"], "hour_of_week", "{rh}");
    assert_eq!(rh["days"], 42);
    assert!(rh["silences_checked"].as_u64().unwrap() >= 41, "{rh}");
    assert_eq!(rh["silences_counted"], 0, "{rh}");
    assert_eq!(v["total"]["missing"], 0, "{}", v["total"]);
    assert!(gap_incidents(&v).is_empty(), "{:?}", gap_incidents(&v));
    assert_eq!(v["total"]["availability_text"], "100.00");
    // The report says how the figure was reached and how confident it is.
    let text = run_ok(&data, &[log]);
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(
            "No probe: downtime inferred from silences improbable under the site's weekly rhythm"
        ),
        "{text}"
    );
    assert!(flat.contains("counted as downtime"), "{text}");
    assert!(flat.contains("Confidence: medium"), "{text}");
    let md = run_ok(&data, &["--format", "md", log]);
    assert!(md.contains("Confidence: medium"), "{md}");
    let html = run_ok(&data, &["--format", "html", log]);
    assert!(html.contains("Confidence: medium"), "{html}");
    // With --expect-every the old arithmetic (one request per interval) is asked for.
    let old = run_json(&data, &["--expect-every", "5m", log]);
    assert_eq!(old["rhythm"], serde_json::Value::Null);
    assert!(
        old["total"]["missing"].as_u64().unwrap() > 41 * 7 * 10,
        "{}",
        old["total"]
    );
}

#[test]
fn a_silence_in_busy_hours_is_still_an_outage_without_a_probe() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("silent.log");
    // Day 24 = Thursday 2025-03-27: nothing from 14:00 to 16:00.
    std::fs::write(&log, quiet_site(Some(24))).unwrap();
    let data = tmp.path().join("data");
    let v = run_json(&data, &[log.to_str().unwrap()]);
    let rh = &v["rhythm"];
    assert_eq!(rh["silences_counted"], 1, "{rh}");
    let gaps = gap_incidents(&v);
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    let g = gaps[0];
    // About 2 hours × 12 expected requests are missing, inside the silence.
    let missing = g["missing"].as_u64().unwrap();
    assert!((20..=30).contains(&missing), "{g}");
    assert!(
        g["start"].as_str().unwrap().starts_with("2025-03-27T1"),
        "{g}"
    );
    assert!(
        g["end"].as_str().unwrap().starts_with("2025-03-27T16:"),
        "{g}"
    );
    let march = &v["periods"][0];
    assert_eq!(march["label"], "2025-03");
    assert_eq!(march["missing"].as_u64().unwrap(), missing);
    assert!(march["availability"].as_f64().unwrap() < 100.0);
    assert!(v["total"]["availability"].as_f64().unwrap() > 99.0);
}
