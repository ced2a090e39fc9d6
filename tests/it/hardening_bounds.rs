//! Regression tests: hardening_bounds — every report is as large as its data, not as the
//! span between its first and last timestamp, and nothing is cut silently. Logs with a
//! century between two lines (dates inside the accepted window) must finish at once and
//! say where the silences are, in every format.

use std::path::{Path, PathBuf};

use crate::common::logscope;

/// A combined-format line at `y-m-d h:mi` UTC.
fn line(out: &mut String, n: usize, (y, m, d, h, mi): (i32, u32, u32, u32, u32), query: &str) {
    const MON: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    out.push_str(&format!(
        "192.0.2.{} - - [{d:02}/{}/{y}:{h:02}:{mi:02}:00 +0000] \"GET /w/index.php?{query} HTTP/1.1\" 200 512 \"-\" \"Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0\"\n",
        n % 50 + 1,
        MON[m as usize - 1]
    ));
}

/// 100 lines a minute apart on 2024-05-01 from 10:00, one on 1971-01-01 12:00 and one
/// on 2099-12-31 12:00.
fn far_apart(dir: &Path) -> PathBuf {
    let mut s = String::new();
    line(&mut s, 0, (1971, 1, 1, 12, 0), "title=Main");
    for i in 0..100u32 {
        line(
            &mut s,
            i as usize,
            (2024, 5, 1, 10 + i / 60, i % 60),
            "title=Main",
        );
    }
    line(&mut s, 1, (2099, 12, 31, 12, 0), "title=Main");
    let p = dir.join("far.log");
    std::fs::write(&p, s).unwrap();
    p
}

fn run(data: &Path, args: &[&str]) -> String {
    let out = logscope(data).args(args).output().expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn json(data: &Path, args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    let out = run(data, &a);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}\n{out}"))
}

#[test]
fn availability_over_a_century_has_rows_for_the_data_and_one_per_silence() {
    let tmp = tempfile::tempdir().unwrap();
    let log = far_apart(tmp.path());
    let log = log.to_str().unwrap();
    let data = tmp.path().join("data");
    // Months: 1971-01, 1971-02 … 2024-04 (one row), 2024-05, 2024-06 … 2099-11 (one
    // row), 2099-12 — and every one of the 1,548 months counted.
    let v = json(&data, &["availability", log]);
    let rows: Vec<(String, String, u64)> = v["periods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["label"].as_str().unwrap().to_string(),
                p["last_label"].as_str().unwrap().to_string(),
                p["periods"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, String, u64)> = [
        ("1971-01", "1971-01", 1),
        ("1971-02", "2024-04", 639),
        ("2024-05", "2024-05", 1),
        ("2024-06", "2099-11", 906),
        ("2099-12", "2099-12", 1),
    ]
    .iter()
    .map(|(a, b, n)| (a.to_string(), b.to_string(), *n))
    .collect();
    assert_eq!(rows, want);
    assert_eq!(v["total"]["periods"], 1548);
    // A silent run means what an empty month means: every expected request missing.
    let gap = &v["periods"][1];
    assert_eq!(gap["requests"], 0);
    assert!(gap["missing"].as_u64().unwrap() > 0);
    assert_eq!(gap["missing"], gap["expected"]);
    assert_eq!(gap["availability_text"], "0.00");
    assert_eq!(gap["grade"], "red");
    let missing: u64 = v["periods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["missing"].as_u64().unwrap())
        .sum();
    assert_eq!(v["total"]["missing"], missing);
    assert_eq!(v["total"]["requests"], 102);

    // Hours, days, weeks: as many rows as the data needs (there were 1.1 M hours; the
    // command refused `--by hour` for them before).
    for by in ["hour", "day", "week"] {
        let v = json(&data, &["availability", "--by", by, log]);
        let p = v["periods"].as_array().unwrap();
        assert!(p.len() <= 10, "--by {by}: {} rows", p.len());
        let sum: u64 = p.iter().map(|p| p["periods"].as_u64().unwrap()).sum();
        assert_eq!(v["total"]["periods"], sum, "--by {by}");
    }
    let v = json(&data, &["availability", "--by", "hour", log]);
    assert_eq!(v["periods"][1]["periods"], 467_493);

    // Every format says what a collapsed row is.
    let text = run(&data, &["availability", log]);
    assert!(
        text.contains("1971-02 … 2024-04: no probe requests in 639 months, one row;"),
        "{text}"
    );
    assert!(text.contains("counted as downtime"), "{text}");
    let md = run(&data, &["availability", "--format", "md", log]);
    assert!(md.contains("| 1971-02 … 2024-04 | 0.00% |"), "{md}");
    let html = run(&data, &["availability", "--format", "html", log]);
    assert!(html.contains("no probe requests in 639 months"), "{html}");
    let csv = run(&data, &["availability", "--format", "csv", log]);
    let mut lines = csv.lines();
    assert!(
        lines.next().unwrap().ends_with(",periods,last_period"),
        "{csv}"
    );
    assert!(
        csv.lines()
            .any(|l| l.starts_with("1971-02,") && l.ends_with(",639,2024-04")),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 1 + 5 + 1);
}

#[test]
fn availability_in_a_zone_counts_dst_months_between_data() {
    // The same log in Europe/Berlin: the calendar is asked for a handful of months
    // and counts the rest (DST changes in between do not matter).
    let tmp = tempfile::tempdir().unwrap();
    let log = far_apart(tmp.path());
    let v = json(
        &tmp.path().join("data"),
        &[
            "availability",
            "--tz",
            "Europe/Berlin",
            log.to_str().unwrap(),
        ],
    );
    let p = v["periods"].as_array().unwrap();
    assert_eq!(p.len(), 5);
    assert_eq!(p[1]["label"], "1971-02");
    assert_eq!(p[1]["last_label"], "2024-04");
    assert_eq!(p[1]["start"], "1971-02-01T00:00:00.000+01:00");
    assert_eq!(p[3]["end"], "2099-12-01T00:00:00.000+01:00");
    assert_eq!(v["total"]["periods"], 1548);
}

#[test]
fn heavy_shows_a_long_silence_as_a_gap_row_in_every_format() {
    // Heavy requests on 2024-01-01 and 2024-06-01: 152 days of 10-minute buckets
    // (21,888) between them, once cut off past 20,000 without a word.
    let tmp = tempfile::tempdir().unwrap();
    let mut s = String::new();
    line(&mut s, 0, (2024, 1, 1, 0, 0), "search=a");
    line(&mut s, 1, (2024, 1, 1, 0, 40), "search=b");
    line(&mut s, 2, (2024, 6, 1, 0, 0), "search=c");
    let log = tmp.path().join("two.log");
    std::fs::write(&log, s).unwrap();
    let log = log.to_str().unwrap();
    let data = tmp.path().join("data");
    let v = json(&data, &["heavy", "--by", "10m", log]);
    let buckets = v["buckets"].as_array().unwrap();
    // 00:00, three empty buckets shown one by one, 00:40, then the gap, 06-01.
    assert_eq!(buckets.len(), 6);
    assert_eq!(buckets[2]["requests"], 0);
    let gaps = v["gaps"].as_array().expect("gaps listed");
    assert_eq!(gaps.len(), 1);
    assert_eq!(gaps[0]["start"], "2024-01-01T00:50:00.000Z");
    assert_eq!(gaps[0]["end"], "2024-06-01T00:00:00.000Z");
    assert_eq!(gaps[0]["buckets"], 21_883);
    assert_eq!(
        buckets.len() as u64 + gaps[0]["buckets"].as_u64().unwrap(),
        21_888 + 1,
        "every bucket from the first to the last is accounted for"
    );
    let text = run(&data, &["heavy", "--by", "10m", log]);
    assert!(text.contains("gap: 21,883 empty"), "{text}");
    assert!(
        text.contains(
            "no requests from 2024-01-01 00:50 to 2024-06-01 00:00 (21,883 buckets of 10m)"
        ),
        "{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    for fmt in ["md", "html"] {
        let out = run(&data, &["heavy", "--by", "10m", "--format", fmt, log]);
        assert!(out.contains("gap: 21,883 empty"), "{fmt}: {out}");
        assert!(out.contains("(21,883 buckets of 10m)"), "{fmt}: {out}");
    }
    // CSV stays typed: a `buckets` column, the gap one row of zeros.
    let csv = run(&data, &["heavy", "--by", "10m", "--format", "csv", log]);
    let rows: Vec<&str> = csv.lines().collect();
    assert!(rows[0].ends_with(",agent,agent_share,buckets"), "{csv}");
    assert!(
        rows.contains(&"2024-01-01T00:50:00.000Z,0,0,0,0,,,,,21883"),
        "{csv}"
    );
    assert!(rows[1].ends_with(",1"), "{csv}");
}

#[test]
fn heavy_over_a_century_finishes_with_its_gaps() {
    let tmp = tempfile::tempdir().unwrap();
    let log = far_apart(tmp.path());
    let log = log.to_str().unwrap();
    let data = tmp.path().join("data");
    let v = json(&data, &["heavy", "--by", "10m", "--capacity", "5/1h", log]);
    let gaps = v["gaps"].as_array().expect("gaps");
    assert_eq!(gaps.len(), 2);
    assert_eq!(gaps[0]["end"], "2024-05-01T10:00:00.000Z");
    assert_eq!(gaps[1]["start"], "2024-05-01T11:40:00.000Z");
    assert_eq!(v["requests"], 102);
    let shown: u64 = v["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(shown, 102);
    let v = json(&data, &["heavy", "--by", "1m", log]);
    assert_eq!(v["gaps"].as_array().unwrap().len(), 2);
}

#[test]
fn replay_over_a_century_reports_the_totals_and_its_silences() {
    let tmp = tempfile::tempdir().unwrap();
    let log = far_apart(tmp.path());
    let log = log.to_str().unwrap();
    let data = tmp.path().join("data");
    for extra in [&[][..], &["--by", "1m", "--capacity", "5/1m"][..]] {
        let mut args = vec!["replay", "--limit", "10/1m"];
        args.extend_from_slice(extra);
        args.push(log);
        let v = json(&data, &args);
        assert_eq!(v["requests"], 102, "{extra:?}");
        let c = &v["candidates"][0];
        assert_eq!(c["requests"], 102);
        assert_eq!(c["refused"], 0);
        let over = v["over_time"].as_array().unwrap();
        let total: u64 = over.iter().map(|r| r["requests"].as_u64().unwrap()).sum();
        assert_eq!(total, 102);
        let gaps = v["gaps"].as_array().expect("gaps listed");
        assert_eq!(gaps.len(), 2, "{extra:?}");
        if !extra.is_empty() {
            assert_eq!(over.len(), 102);
            assert_eq!(gaps[0]["start"], "1971-01-01T12:01:00.000Z");
            assert_eq!(gaps[0]["end"], "2024-05-01T10:00:00.000Z");
            assert_eq!(gaps[1]["buckets"], 39_797_300);
            assert_eq!(c["load"]["windows"], 102);
        }
        let mut targs = args.clone();
        targs.pop();
        targs.extend(["--format", "text", log]);
        let text = run(&data, &targs);
        assert!(text.contains("2 gaps without any request"), "{text}");
        let spark = text
            .lines()
            .find(|l| l.starts_with("A refusals per "))
            .expect("a sparkline line");
        assert!(spark.chars().count() <= 80, "{spark}");
    }
}

#[test]
fn concentration_limit_windows_over_a_century() {
    // 60 requests from one /24 in the 10:00 hour, 40 in the 11:00 hour, one each in
    // 1971 and 2099: a limit of 1 an hour refuses 59 + 39.
    let tmp = tempfile::tempdir().unwrap();
    let log = far_apart(tmp.path());
    let v = json(
        &tmp.path().join("data"),
        &[
            "concentration",
            "--per-prefix-limit",
            "1/1h",
            log.to_str().unwrap(),
        ],
    );
    assert_eq!(v["requests"], 102);
    assert_eq!(v["limit"]["groups_over"], 1);
    assert_eq!(v["limit"]["requests_over_limit"], 98);
}
