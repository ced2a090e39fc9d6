//! `logscope top` and `logscope timeline` through the binary: exact figures on a small
//! handcrafted log, the same output over files and over an ingested dataset, shared
//! filters, bad flag values (exit 2), and hostile log text escaped in every format.

use std::path::Path;

use serde_json::Value;

use crate::common::*;

/// Eight requests (all on 2026-09-25, UTC):
///
/// | # | time     | client        | request               | status | bytes | referer | agent |
/// |---|----------|---------------|-----------------------|--------|-------|---------|-------|
/// | 1 | 14:00:05 | 203.0.113.7   | GET /index.php?title  | 200    | 1000  | -       | A     |
/// | 2 | 14:05:00 | 203.0.113.7   | GET /index.php?search | 200    | 3000  | ex      | A     |
/// | 3 | 14:12:30 | 203.0.113.8   | GET /missing          | 404    | 200   | -       | curl  |
/// | 4 | 14:20:00 | 198.51.100.1  | GET /index.php        | 500    | 100   | -       | curl  |
/// | 5 | 14:30:00 | 198.51.100.1  | POST /index.php       | 200    | 500   | ex      | curl  |
/// | 6 | 15:10:00 | 198.51.100.2  | GET /missing          | 404    | 200   | -       | A     |
/// | 7 | 15:40:00 | 203.0.113.7   | GET /static/logo.png  | 200    | 50000 | ex      | A     |
/// | 8 | 15:59:59 | 203.0.113.9   | GET /missing          | 404    | -     | -       | curl  |
const LOG: &str = r#"203.0.113.7 - - [25/Sep/2026:14:00:05 +0000] "GET /index.php?title=A HTTP/1.1" 200 1000 "-" "Mozilla/5.0 A"
203.0.113.7 - - [25/Sep/2026:14:05:00 +0000] "GET /index.php?search=x HTTP/1.1" 200 3000 "https://example.org/" "Mozilla/5.0 A"
203.0.113.8 - - [25/Sep/2026:14:12:30 +0000] "GET /missing HTTP/1.1" 404 200 "-" "curl/8.0"
198.51.100.1 - - [25/Sep/2026:14:20:00 +0000] "GET /index.php HTTP/1.1" 500 100 "-" "curl/8.0"
198.51.100.1 - - [25/Sep/2026:14:30:00 +0000] "POST /index.php HTTP/1.1" 200 500 "https://example.org/" "curl/8.0"
198.51.100.2 - - [25/Sep/2026:15:10:00 +0000] "GET /missing HTTP/1.1" 404 200 "-" "Mozilla/5.0 A"
203.0.113.7 - - [25/Sep/2026:15:40:00 +0000] "GET /static/logo.png HTTP/1.1" 200 50000 "https://example.org/" "Mozilla/5.0 A"
203.0.113.9 - - [25/Sep/2026:15:59:59 +0000] "GET /missing HTTP/1.1" 404 - "-" "curl/8.0"
"#;

/// A tempdir holding `access.log` (LOG) and a dataset dir path (not yet ingested).
fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("access.log"), LOG).unwrap();
    dir
}

/// Runs logscope in `dir` with the dataset `dir/data`.
fn run(dir: &Path, args: &[&str]) -> (String, String, i32) {
    let out = logscope(&dir.join("data"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let (out, err, code) = run(dir, args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

fn json(dir: &Path, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    let out = ok(dir, &a);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {out}"))
}

/// `(value, requests, bytes, clients, errors)` of each row.
fn rows(v: &Value) -> Vec<(Value, u64, u64, u64, u64)> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["value"].clone(),
                r["requests"].as_u64().unwrap(),
                r["bytes"].as_u64().unwrap(),
                r["clients"].as_u64().unwrap(),
                r["errors"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn s(v: &str) -> Value {
    Value::String(v.into())
}

#[test]
fn top_paths_exact_figures() {
    let dir = setup();
    let d = dir.path();
    let v = json(d, &["top", "--by", "path", "access.log"]);
    assert_eq!(
        rows(&v),
        vec![
            (s("/index.php"), 4, 4600, 2, 1),
            (s("/missing"), 3, 400, 3, 3),
            (s("/static/logo.png"), 1, 50000, 1, 0),
        ]
    );
    let r0 = &v["rows"][0];
    assert_eq!(r0["share"], 0.5);
    assert_eq!(r0["error_share"], 0.25);
    assert_eq!(r0["first_seen"], "2026-09-25T14:00:05.000Z");
    assert_eq!(r0["last_seen"], "2026-09-25T14:30:00.000Z");
    assert_eq!(r0["clients_estimated"], false);
    assert_eq!(v["rows"][1]["share"], 0.375);
    assert_eq!(v["rows"][1]["error_share"], 1.0);
    assert_eq!(v["rows"][1]["last_seen"], "2026-09-25T15:59:59.000Z");
    assert_eq!(
        (&v["requests"], &v["bytes"], &v["errors"], &v["clients"]),
        (&8.into(), &55000.into(), &4.into(), &5.into())
    );
    assert_eq!(v["error_share"], 0.5);
    assert_eq!(v["distinct_values"], 3);
    assert_eq!(v["error_status"], 400);
    assert!(v.get("rest").is_none());
    assert_eq!(
        v["inputs"]["kind"], "files",
        "FILE arguments: the inputs object"
    );

    // The text table: figures as people read them, errors defined.
    let wide = logscope(&d.join("data"))
        .current_dir(d)
        .env("COLUMNS", "120")
        .args(["top", "--by", "path", "access.log"])
        .output()
        .unwrap();
    let text = String::from_utf8(wide.stdout).unwrap();
    assert!(text.starts_with("Top paths by requests\n"), "{text}");
    assert!(
        text.contains(
            "8 requests, 3 distinct paths, 53.7 KiB from 5 clients; 4 errors (50.0%, status ≥ 400)"
        ),
        "{text}"
    );
    assert!(text.contains("times are UTC times on 2026-09-25"), "{text}");
    let line = text.lines().find(|l| l.contains("/index.php")).unwrap();
    for want in [
        "4", "50.0%", "4.5 KiB", "2", "25.0%", "14:00:05", "14:30:00",
    ] {
        assert!(line.contains(want), "{want}: {line}");
    }
    assert!(text.contains("(4xx and 5xx)"), "{text}");
    // At 80 columns the table fits: first and last seen make way, and say so.
    let text = ok(d, &["top", "--by", "path", "access.log"]);
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    assert!(text.contains("/static/logo.png"), "{text}");
    assert!(
        text.contains("first and last seen: in a wider terminal"),
        "{text}"
    );
}

#[test]
fn top_other_dimensions_sort_limit_and_tz() {
    let dir = setup();
    let d = dir.path();
    let v = json(d, &["top", "--by", "status", "access.log"]);
    assert_eq!(
        rows(&v),
        vec![
            (s("200"), 4, 54500, 2, 0),
            (s("404"), 3, 400, 3, 3),
            (s("500"), 1, 100, 1, 1),
        ]
    );
    let v = json(d, &["top", "--by", "prefix", "access.log"]);
    assert_eq!(
        rows(&v),
        vec![
            (s("203.0.113.0/24"), 5, 54200, 3, 2),
            (s("198.51.100.0/24"), 3, 800, 2, 2),
        ]
    );
    let v = json(d, &["top", "--by", "ip", "access.log"]);
    assert_eq!(v["rows"][0]["value"], "203.0.113.7");
    assert_eq!(v["rows"][0]["requests"], 3);
    // Ties by value: 198.51.100.1 (2) then the ones, numerically.
    let order: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["value"].as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        [
            "203.0.113.7",
            "198.51.100.1",
            "198.51.100.2",
            "203.0.113.8",
            "203.0.113.9"
        ]
    );
    let v = json(d, &["top", "--by", "referer", "access.log"]);
    assert_eq!(
        rows(&v),
        vec![
            (Value::Null, 5, 1500, 5, 4),
            (s("https://example.org/"), 3, 53500, 2, 0)
        ]
    );
    let v = json(d, &["top", "--by", "method", "access.log"]);
    assert_eq!(rows(&v)[1], (s("POST"), 1, 500, 1, 0));
    let v = json(d, &["top", "--by", "agent", "access.log"]);
    assert_eq!(rows(&v)[0], (s("Mozilla/5.0 A"), 4, 54200, 2, 1));
    let v = json(d, &["top", "--by", "host", "access.log"]);
    assert_eq!(rows(&v), vec![(Value::Null, 8, 55000, 5, 4)]);

    // Bandwidth: by bytes, and --top with the rest added up (the text below uses the
    // older spelling --limit, kept for scripts).
    let v = json(
        d,
        &[
            "top",
            "--by",
            "path",
            "--sort",
            "bytes",
            "--top",
            "1",
            "access.log",
        ],
    );
    assert_eq!(rows(&v), vec![(s("/static/logo.png"), 1, 50000, 1, 0)]);
    assert!((v["rows"][0]["bytes_share"].as_f64().unwrap() - 50000.0 / 55000.0).abs() < 1e-12);
    assert_eq!(v["rest"]["values"], 2);
    assert_eq!(v["rest"]["requests"], 7);
    assert_eq!(v["rest"]["bytes"], 5000);
    let text = ok(
        d,
        &[
            "top",
            "--by",
            "path",
            "--sort",
            "bytes",
            "--limit",
            "1",
            "access.log",
        ],
    );
    assert!(
        text.contains("… and 2 more paths with 7 requests (87.5%), 4.9 KiB"),
        "{text}"
    );
    // --tz: RFC 3339 with the zone's offset.
    let v = json(
        d,
        &["top", "--by", "path", "--tz", "Asia/Seoul", "access.log"],
    );
    assert_eq!(v["rows"][0]["first_seen"], "2026-09-25T23:00:05.000+09:00");
    assert_eq!(v["tz"], "Asia/Seoul");
}

#[test]
fn top_shared_filters_and_error_lists() {
    let dir = setup();
    let d = dir.path();
    // A 404 list through the shared --status.
    let v = json(d, &["top", "--by", "path", "--status", "404", "access.log"]);
    assert_eq!(rows(&v), vec![(s("/missing"), 3, 400, 3, 3)]);
    assert!(
        v["selection"].as_str().unwrap().contains("status 404"),
        "{v}"
    );
    // --errors: status ≥ 400.
    let v = json(
        d,
        &[
            "top",
            "--by",
            "path",
            "--errors",
            "--sort",
            "errors",
            "access.log",
        ],
    );
    assert_eq!(
        rows(&v),
        vec![
            (s("/missing"), 3, 400, 3, 3),
            (s("/index.php"), 1, 100, 1, 1)
        ]
    );
    let v = json(
        d,
        &["top", "--by", "status", "--status", "5xx", "access.log"],
    );
    assert_eq!(rows(&v), vec![(s("500"), 1, 100, 1, 1)]);
    // Time, network, path, agent filters.
    let v = json(
        d,
        &[
            "top",
            "--by",
            "path",
            "--since",
            "2026-09-25T15:00",
            "--until",
            "2026-09-25T16:00",
            "access.log",
        ],
    );
    assert_eq!(v["requests"], 3);
    let v = json(
        d,
        &[
            "top",
            "--by",
            "path",
            "--client",
            "198.51.100.0/24",
            "access.log",
        ],
    );
    assert_eq!(
        rows(&v),
        vec![
            (s("/index.php"), 2, 600, 1, 1),
            (s("/missing"), 1, 200, 1, 1)
        ]
    );
    let v = json(
        d,
        &["top", "--by", "status", "--path", "^/index", "access.log"],
    );
    assert_eq!(v["requests"], 4);
    let v = json(d, &["top", "--by", "path", "--agent", "curl", "access.log"]);
    assert_eq!(v["requests"], 4);
}

#[test]
fn files_and_dataset_give_the_same_report() {
    let dir = setup();
    let d = dir.path();
    let (_, code) = ingest_json(&d.join("data"), &[d.join("access.log").to_str().unwrap()]);
    assert_eq!(code, 0);
    for args in [
        vec!["top", "--by", "path"],
        vec!["top", "--by", "referer", "--sort", "bytes"],
        vec!["top", "--by", "agent", "--status", "4xx"],
        vec!["top", "--by", "prefix", "--since", "2026-09-25T14:10"],
        vec!["top", "--by", "method"],
        vec!["top", "--by", "host"],
        vec!["timeline", "--client", "203.0.113.0/24", "--by", "10m"],
    ] {
        for format in ["csv", "text", "md"] {
            let mut a = args.clone();
            a.extend(["--format", format]);
            let over_dataset = ok(d, &a);
            a.push("access.log");
            let over_files = ok(d, &a);
            let strip = |t: &str| {
                t.lines()
                    .filter(|l| !l.contains("source:"))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            assert_eq!(strip(&over_dataset), strip(&over_files), "{a:?}");
        }
        let mut a = args.clone();
        a.extend(["--format", "json"]);
        let mut over_dataset: Value = serde_json::from_str(&ok(d, &a)).unwrap();
        a.push("access.log");
        let mut over_files: Value = serde_json::from_str(&ok(d, &a)).unwrap();
        for v in [&mut over_dataset, &mut over_files] {
            let o = v.as_object_mut().unwrap();
            o.remove("inputs");
        }
        assert_eq!(over_dataset, over_files, "{a:?}");
    }
}

#[test]
fn csv_is_typed_data() {
    let dir = setup();
    let d = dir.path();
    let csv = ok(d, &["top", "--by", "path", "--format", "csv", "access.log"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "rank,path,requests,share,bytes,bytes_share,clients,clients_estimated,errors,error_share,first_seen,last_seen"
    );
    assert_eq!(
        lines[1],
        format!(
            "1,/index.php,4,0.5,4600,{},2,false,1,0.25,2026-09-25T14:00:05.000Z,2026-09-25T14:30:00.000Z",
            4600.0 / 55000.0
        )
    );
    assert_eq!(lines.len(), 4, "{csv}");
    let csv = ok(
        d,
        &[
            "timeline",
            "--client",
            "203.0.113.7",
            "--by",
            "10m",
            "--format",
            "csv",
            "access.log",
        ],
    );
    assert_eq!(
        csv,
        "start,requests,errors,error_share,bytes,addresses,addresses_estimated\n\
         2026-09-25T14:00:00.000Z,2,0,0,4000,1,false\n\
         2026-09-25T15:40:00.000Z,1,0,0,50000,1,false\n"
    );
}

#[test]
fn timeline_of_an_address_and_a_network() {
    let dir = setup();
    let d = dir.path();
    let v = json(
        d,
        &[
            "timeline",
            "--client",
            "203.0.113.7",
            "--by",
            "10m",
            "access.log",
        ],
    );
    assert_eq!(v["clients"], serde_json::json!(["203.0.113.7"]));
    assert_eq!(
        (&v["requests"], &v["bytes"], &v["addresses"]),
        (&3.into(), &54000.into(), &1.into())
    );
    assert_eq!(v["first_seen"], "2026-09-25T14:00:05.000Z");
    assert_eq!(v["last_seen"], "2026-09-25T15:40:00.000Z");
    let b: Vec<(&str, u64)> = v["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["start"].as_str().unwrap(),
                b["requests"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        b,
        [
            ("2026-09-25T14:00:00.000Z", 2),
            ("2026-09-25T15:40:00.000Z", 1)
        ]
    );
    assert_eq!(
        rows(&v["paths"]),
        vec![
            (s("/index.php"), 2, 4000, 1, 0),
            (s("/static/logo.png"), 1, 50000, 1, 0)
        ]
    );
    assert_eq!(rows(&v["statuses"]), vec![(s("200"), 3, 54000, 1, 0)]);
    assert_eq!(
        rows(&v["agents"]),
        vec![(s("Mozilla/5.0 A"), 3, 54000, 1, 0)]
    );

    let v = json(
        d,
        &[
            "timeline",
            "--client",
            "203.0.113.0/24",
            "--by",
            "1h",
            "access.log",
        ],
    );
    let b: Vec<(u64, u64, u64)> = v["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["requests"].as_u64().unwrap(),
                b["errors"].as_u64().unwrap(),
                b["addresses"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(b, [(3, 1, 2), (2, 1, 2)]);
    assert_eq!(v["addresses"], 3);
    assert_eq!(v["top_addresses"]["rows"][0]["value"], "203.0.113.7");
    let text = ok(
        d,
        &[
            "timeline",
            "--client",
            "203.0.113.0/24",
            "--by",
            "1h",
            "access.log",
        ],
    );
    assert!(
        text.starts_with("Timeline of 203.0.113.0/24 per 1h\n"),
        "{text}"
    );
    for section in [
        "Requests per 1h",
        "Paths",
        "Statuses",
        "User agents",
        "Addresses",
    ] {
        assert!(text.lines().any(|l| l == section), "{section}: {text}");
    }
    assert!(text.contains("2026-09-25 14:00         3"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    // HTML: a time series of the buckets.
    let html = ok(
        d,
        &[
            "timeline",
            "--client",
            "203.0.113.7",
            "--by",
            "10m",
            "--format",
            "html",
            "access.log",
        ],
    );
    assert!(html.contains("data-kind=\"time-series\""), "{html}");
    let html = ok(
        d,
        &["top", "--by", "path", "--format", "html", "access.log"],
    );
    assert_eq!(html.matches("class=\"bar\"").count(), 3, "{html}");
}

/// A day of background traffic and, inside it, one client's 5-minute burst
/// (2026-09-25 14:02:13–14:07:13 UTC, a request every 1–3 s).
fn write_burst(path: &Path) -> u64 {
    let mut rng = Rng(0x5eed_0b57);
    let day = 1_790_294_400; // 2026-09-25 00:00:00 UTC
    let mut lines: Vec<(i64, String)> = Vec::new();
    let line = |s: i64, ip: &str, path: &str| {
        let t = chrono::DateTime::from_timestamp(s, 0).unwrap();
        format!(
            "{ip} - - [{}] \"GET {path} HTTP/1.1\" 200 512 \"-\" \"python-requests/2.31\"",
            t.format("%d/%b/%Y:%H:%M:%S +0000")
        )
    };
    for _ in 0..2_000 {
        let s = day + rng.below(86_400) as i64;
        let ip = format!("198.51.100.{}", 1 + rng.below(200));
        lines.push((s, line(s, &ip, "/wiki/Main_Page")));
    }
    let (from, to) = (day + 14 * 3600 + 2 * 60 + 13, day + 14 * 3600 + 7 * 60 + 13);
    let mut s = from;
    let mut burst = 0;
    while s < to {
        lines.push((
            s,
            line(s, "192.0.2.44", &format!("/index.php?search=q{burst}")),
        ));
        burst += 1;
        s = (s + 1 + rng.below(3) as i64).min(to);
    }
    lines.push((to, line(to, "192.0.2.44", "/index.php?search=last")));
    burst += 1;
    lines.sort();
    let text: String = lines.iter().map(|(_, l)| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
    burst
}

#[test]
fn a_short_burst_gets_buckets_that_show_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let n = write_burst(&d.join("burst.log"));
    for file in [Some("burst.log"), None] {
        if file.is_none() {
            let (_, code) = ingest_json(&d.join("data"), &[d.join("burst.log").to_str().unwrap()]);
            assert_eq!(code, 0);
        }
        let args = |extra: &[&'static str]| {
            let mut a = vec!["timeline", "--client", "192.0.2.44"];
            a.extend_from_slice(extra);
            a.extend(file);
            a
        };
        let v = json(d, &args(&[]));
        assert_eq!(v["requests"], n, "{v}");
        // 5 minutes in 10-second buckets (1-second ones would be 300, over 200).
        assert_eq!((&v["by"], &v["auto_width"]), (&"10s".into(), &true.into()));
        let buckets = v["buckets"].as_array().unwrap();
        assert!(buckets.len() >= 10, "{} buckets: {v}", buckets.len());
        assert!(buckets.len() <= 32, "{} buckets", buckets.len());
        assert_eq!(buckets[0]["start"], "2026-09-25T14:02:10.000Z");
        assert_eq!(buckets.last().unwrap()["start"], "2026-09-25T14:07:10.000Z");
        assert_eq!(
            buckets
                .iter()
                .map(|b| b["requests"].as_u64().unwrap())
                .sum::<u64>(),
            n
        );
        // The chart: a point per bucket, not one dot.
        let html = ok(d, &args(&["--format", "html"]));
        let points: usize = html
            .split("data-points=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no series in {html}"));
        assert!(points >= 10, "{points} points");
        let text = ok(d, &args(&[]));
        assert!(
            text.starts_with("Timeline of 192.0.2.44 per 10s\n"),
            "{text}"
        );
        assert!(
            text.contains("buckets of 10s: chosen from the span"),
            "{text}"
        );
        // Buckets of seconds are labelled with their seconds.
        assert!(text.contains("2026-09-25 14:02:10 "), "{text}");
        assert!(text.contains("2026-09-25 14:02:20 "), "{text}");
        // --by still fixes the width; the old default is one bucket.
        let v = json(d, &args(&["--by", "1h"]));
        assert_eq!(v["buckets"].as_array().unwrap().len(), 1);
        assert_eq!(v["auto_width"], false);
    }
    // A day of a network's rows: 10-minute buckets.
    let v = json(d, &["timeline", "--client", "198.51.100.0/24", "burst.log"]);
    assert_eq!(v["by"], "10m", "{v}");
}

#[test]
fn bad_values_exit_2_with_an_example() {
    let dir = setup();
    let d = dir.path();
    for (args, want) in [
        (vec!["timeline", "access.log"], "--client"),
        (
            vec!["timeline", "--client", "203.0.113.300", "access.log"],
            "--client",
        ),
        (
            vec!["timeline", "--client", "10.0.0.0/33", "access.log"],
            "--client",
        ),
        (
            vec![
                "timeline",
                "--client",
                "1.2.3.4",
                "--by",
                "10x",
                "access.log",
            ],
            "--by",
        ),
        (vec!["top", "--by", "url", "access.log"], "--by"),
        (
            vec!["top", "--by", "path", "--limit=-1", "access.log"],
            "--top",
        ),
        (
            vec!["top", "--by", "path", "--sort", "size", "access.log"],
            "--sort",
        ),
        (
            vec![
                "top",
                "--by",
                "path",
                "--errors",
                "--status",
                "404",
                "access.log",
            ],
            "--errors",
        ),
        (
            vec!["top", "--by", "path", "--status", "6xx", "access.log"],
            "--status",
        ),
    ] {
        let (_, err, code) = run(d, &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        if want == "--client" {
            assert!(err.contains("e.g."), "{args:?}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        }
    }
}

#[test]
fn hostile_log_text_is_escaped_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let log = "203.0.113.7 - - [25/Sep/2026:14:00:05 +0000] \"GET /<script>alert(1)</script>|x HTTP/1.1\" 404 10 \"=HYPERLINK(1)\" \"evil\x1b[2J\x07<img src=x onerror=alert(1)>\"\n";
    std::fs::write(d.join("evil.log"), log).unwrap();
    for by in ["path", "referer", "agent"] {
        let text = ok(d, &["top", "--by", by, "evil.log"]);
        assert!(
            !text.contains('\x1b') && !text.contains('\x07'),
            "{by}: {text:?}"
        );
        let html = ok(d, &["top", "--by", by, "--format", "html", "evil.log"]);
        assert!(
            !html.contains("<script>") && !html.contains("<img"),
            "{by}: {html}"
        );
        assert!(!html.contains('\x1b'), "{by}");
        let md = ok(d, &["top", "--by", by, "--format", "md", "evil.log"]);
        assert!(
            !md.contains("<script>") && !md.contains('\x1b'),
            "{by}: {md}"
        );
        // Markdown: `<`, `|` backslash-escaped (a literal character, no tag, no cell break).
        let raw = md.replace("\\<", "").replace("\\|", "");
        assert!(!raw.contains('<') && !raw.contains("|x"), "{by}: {md}");
        let csv = ok(d, &["top", "--by", by, "--format", "csv", "evil.log"]);
        assert!(!csv.contains('\x1b'), "{by}: {csv:?}");
        if by == "referer" {
            assert!(csv.contains("'=HYPERLINK"), "{csv}");
        }
        let json = json(d, &["top", "--by", by, "evil.log"]);
        assert_eq!(json["rows"].as_array().unwrap().len(), 1);
    }
    let html = ok(
        d,
        &[
            "timeline",
            "--client",
            "203.0.113.7",
            "--format",
            "html",
            "evil.log",
        ],
    );
    assert!(
        !html.contains("<script>") && !html.contains("<img"),
        "{html}"
    );
    let text = ok(d, &["timeline", "--client", "203.0.113.7", "evil.log"]);
    assert!(!text.contains('\x1b'), "{text:?}");
}

#[test]
fn edge_values_never_panic() {
    let dir = setup();
    let d = dir.path();
    std::fs::write(d.join("empty.log"), "").unwrap();
    let values = [
        "",
        "-",
        "0",
        "1e999",
        "99999999999999999999999",
        "é",
        "\x1b[2J",
        "1h30",
    ];
    let flags: [&[&str]; 7] = [
        &["top", "--by"],
        &["top", "--by", "path", "--top"],
        &["top", "--by", "path", "--sort"],
        &["top", "--by", "ip", "--status"],
        &["timeline", "--client", "203.0.113.7", "--by"],
        &["timeline", "--client"],
        &["timeline", "--client", "203.0.113.7", "--top"],
    ];
    for head in flags {
        for v in values {
            let flag = format!("{}={v}", head[head.len() - 1]);
            let mut args: Vec<&str> = head[..head.len() - 1].to_vec();
            args.push(&flag);
            args.push("access.log");
            let (_, err, code) = run(d, &args);
            assert!((0..=4).contains(&code), "{args:?}: {code} {err}");
            assert!(!err.contains("panicked"), "{args:?}: {err}");
        }
    }
    // An empty input: reports with no rows, in every format.
    for format in ["text", "md", "csv", "json", "html"] {
        for args in [
            vec!["top", "--by", "path", "--format", format, "empty.log"],
            vec![
                "timeline",
                "--client",
                "10.0.0.0/8",
                "--format",
                format,
                "empty.log",
            ],
        ] {
            let (_, err, code) = run(d, &args);
            assert_eq!(code, 0, "{args:?}: {err}");
        }
    }
}

/// A client logged by host name (NASA's 1995 log has 1,241): `top --by ip` lists it and
/// `timeline --client NAME` follows it, from the file and from the dataset.
#[test]
fn a_host_name_client_can_be_followed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let log = "www-relay.pa-x.dec.com - - [01/Jul/1995:00:00:09 -0400] \"GET /shuttle/countdown/ HTTP/1.0\" 200 3985\n\
               199.72.81.55 - - [01/Jul/1995:00:00:10 -0400] \"GET /history/apollo/ HTTP/1.0\" 200 6245\n\
               www-relay.pa-x.dec.com - - [01/Jul/1995:00:01:09 -0400] \"GET /images/NASA-logosmall.gif HTTP/1.0\" 304 0\n\
               relay.pa-x.dec.com - - [01/Jul/1995:00:02:00 -0400] \"GET / HTTP/1.0\" 200 7074\n";
    std::fs::write(d.join("nasa.log"), log).unwrap();
    let top = json(d, &["top", "--by", "ip", "nasa.log"]);
    assert_eq!(top["rows"][0]["value"], "www-relay.pa-x.dec.com", "{top}");
    for files in [true, false] {
        let mut args = vec!["timeline", "--client", "WWW-Relay.pa-x.dec.com"];
        if files {
            args.push("nasa.log");
        } else {
            ok(d, &["ingest", "--quiet", "nasa.log"]);
        }
        let v = json(d, &args);
        assert_eq!(v["requests"], 2, "{v}");
        assert_eq!(v["clients"], serde_json::json!(["www-relay.pa-x.dec.com"]));
        let mut paths: Vec<&str> = v["paths"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["value"].as_str().unwrap())
            .collect();
        paths.sort();
        assert_eq!(paths, ["/images/NASA-logosmall.gif", "/shuttle/countdown/"]);
    }
    // A name and a network together: each row is kept by the one that applies.
    let v = json(
        d,
        &["timeline", "--client", "relay.pa-x.dec.com,199.72.81.0/24"],
    );
    assert_eq!(v["requests"], 2, "{v}");
    // Still a usage error when it is neither.
    let (_, err, code) = run(d, &["timeline", "--client", "10.0.0.1/40", "nasa.log"]);
    assert_eq!(code, 2);
    assert!(err.contains("host name as logged"), "{err}");
}

/// `top` without `--by` is `--by path`.
#[test]
fn top_breaks_down_by_path_by_default() {
    let dir = setup();
    let d = dir.path();
    let plain = json(d, &["top", "access.log"]);
    assert_eq!(plain["by"], "path");
    assert_eq!(plain, json(d, &["top", "--by", "path", "access.log"]));
}

/// By client, the header's client count is the number of distinct values, exact, never
/// an estimate beside it (NASA: "1,656 distinct addresses … from ≈1,621 clients").
#[test]
fn top_by_ip_counts_its_clients_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut log = String::new();
    for i in 0..1_000u32 {
        log.push_str(&format!(
            "10.{}.{}.{} - - [25/Sep/2026:14:00:05 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"curl/8\"\n",
            i / 65_536,
            (i / 256) % 256,
            i % 256
        ));
    }
    std::fs::write(d.join("many.log"), log).unwrap();
    let v = json(d, &["top", "--by", "ip", "many.log"]);
    assert_eq!(v["distinct_values"], 1_000);
    assert_eq!(
        (&v["clients"], &v["clients_estimated"]),
        (&1_000.into(), &false.into())
    );
    let text = ok(d, &["top", "--by", "ip", "many.log"]);
    assert!(text.contains("from 1,000 clients"), "{text}");
}

/// GoAccess's panels on the handcrafted log: kind, referring site, hour (on the --tz
/// clock), day with its unique visitors, operating system; the country database's
/// errors (exit 2). tests/it/goaccess.rs checks them against GoAccess itself.
#[test]
fn goaccess_panels_on_the_handcrafted_log() {
    let dir = setup();
    let d = dir.path();
    let kind = json(d, &["top", "--by", "kind", "access.log"]);
    assert_eq!(
        rows(&kind),
        vec![(s("dynamic"), 7, 5000, 5, 4), (s("static"), 1, 50000, 1, 0),]
    );
    let site = json(d, &["top", "--by", "site", "access.log"]);
    assert_eq!(
        rows(&site),
        vec![
            (Value::Null, 5, 1500, 5, 4),
            (s("example.org"), 3, 53500, 2, 0)
        ]
    );
    // Hours on the Seoul clock (UTC+9): 14:xx and 15:xx UTC are 23 and 00, in clock order.
    let hour = json(
        d,
        &["top", "--by", "hour", "--tz", "Asia/Seoul", "access.log"],
    );
    assert_eq!(
        rows(&hour),
        vec![(s("00"), 3, 50200, 3, 2), (s("23"), 5, 4800, 3, 2)]
    );
    // A negative offset is the zone's value, not a flag: 14:xx UTC is 10:xx at -04:00.
    let west = json(d, &["top", "--by", "hour", "--tz", "-04:00", "access.log"]);
    assert_eq!(rows(&west)[0].0, s("10"), "{west}");
    // The day: a visitor is an address and agent with an answer that is not 4xx, so
    // 203.0.113.7 with A and 198.51.100.1 with curl; the UTC day is the Seoul 25th and 26th.
    let day = json(d, &["top", "--by", "day", "access.log"]);
    assert_eq!(rows(&day), vec![(s("2026-09-25"), 8, 55000, 2, 4)]);
    assert_eq!(day["clients"], 5);
    let seoul = json(
        d,
        &["top", "--by", "day", "--tz", "Asia/Seoul", "access.log"],
    );
    assert_eq!(
        rows(&seoul),
        vec![
            (s("2026-09-25"), 5, 4800, 2, 2),
            (s("2026-09-26"), 3, 50200, 1, 2)
        ]
    );
    let text = ok(d, &["top", "--by", "day", "access.log"]);
    assert!(
        text.contains("Requests and unique visitors by day"),
        "{text}"
    );
    assert!(text.contains("visitors"), "{text}");
    let os = json(d, &["top", "--by", "os", "access.log"]);
    let total: u64 = rows(&os).iter().map(|r| r.1).sum();
    assert_eq!(total, 8);

    // Countries need a database, which must be one; and it is for --by country only.
    let (_, err, code) = run(d, &["top", "--by", "country", "access.log"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--asn-db GeoLite2-Country.mmdb"), "{err}");
    let (_, err, code) = run(
        d,
        &[
            "top",
            "--by",
            "country",
            "--asn-db",
            "access.log",
            "access.log",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("neither a MaxMind database (.mmdb) nor iptoasn"),
        "{err}"
    );
    let db = fixture("geo/country-test.mmdb");
    // --asn-db is a shared flag: --asn and --country select clients by network, in
    // every report. 198.51.100.0/24 is KR in the country database.
    let db_arg = db.to_str().unwrap();
    let kr = json(
        d,
        &[
            "top",
            "--by",
            "path",
            "--asn-db",
            db_arg,
            "--country",
            "kr",
            "access.log",
        ],
    );
    assert_eq!(kr["requests"], 3);
    assert!(
        kr["selection"].as_str().unwrap().contains("network in KR"),
        "{kr}"
    );
    let conc = json(
        d,
        &[
            "concentration",
            "--by",
            "ip",
            "--asn-db",
            db_arg,
            "--country",
            "KR",
            "access.log",
        ],
    );
    assert_eq!(
        (conc["requests"].as_u64(), conc["distinct_ips"].as_u64()),
        (Some(3), Some(2))
    );
    // A network's timeline: --asn/--country say whose, as --client does.
    let tl = json(
        d,
        &[
            "timeline",
            "--asn-db",
            db_arg,
            "--country",
            "KR",
            "access.log",
        ],
    );
    assert_eq!(tl["requests"], 3, "{tl}");
    assert_eq!(tl["clients"][0], "in KR", "{tl}");
    for (args, want) in [
        (
            vec!["top", "--country", "KR", "access.log"],
            "--country needs a network database",
        ),
        (
            vec!["top", "--asn", "AS1", "access.log"],
            "--asn needs a network database",
        ),
        (
            vec![
                "top",
                "--asn-db",
                db_arg,
                "--country",
                "Korea",
                "access.log",
            ],
            "not a two-letter country code",
        ),
        (
            vec!["top", "--asn-db", db_arg, "--asn", "ASX", "access.log"],
            "is not an AS number",
        ),
        (
            vec![
                "top",
                "--asn-db",
                db_arg,
                "--country",
                "KR",
                "--sql",
                "duckdb",
            ],
            "--country",
        ),
    ] {
        let (_, err, code) = run(d, &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // 198.51.100.0/24 is South Korea in the test database; the rest is unknown.
    let country = ok(
        d,
        &[
            "top",
            "--by",
            "country",
            "--asn-db",
            db.to_str().unwrap(),
            "access.log",
        ],
    );
    assert!(country.contains("(unknown)"), "{country}");
    assert!(country.contains("KR South Korea"), "{country}");
    // iptoasn's TSV has the country column (codes only).
    std::fs::write(
        d.join("ip2asn.tsv"),
        "198.51.100.0\t198.51.100.255\t64500\tKR\tEXAMPLE-KR\n203.0.113.0\t203.0.113.255\t64501\tDE\tEXAMPLE-DE\n",
    )
    .unwrap();
    let tsv = json(
        d,
        &[
            "top",
            "--by",
            "country",
            "--asn-db",
            "ip2asn.tsv",
            "access.log",
        ],
    );
    assert_eq!(
        rows(&tsv)
            .iter()
            .map(|r| (r.0.clone(), r.1))
            .collect::<Vec<_>>(),
        vec![(s("DE"), 5), (s("KR"), 3)]
    );
    let asn = json(
        d,
        &["top", "--by", "asn", "--asn-db", "ip2asn.tsv", "access.log"],
    );
    let got: Vec<(Value, u64)> = rows(&asn).iter().map(|r| (r.0.clone(), r.1)).collect();
    assert_eq!(
        got,
        vec![(s("AS64501 EXAMPLE-DE"), 5), (s("AS64500 EXAMPLE-KR"), 3)]
    );
    let (_, err, code) = run(d, &["top", "--by", "asn", "access.log"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--asn-db GeoLite2-ASN.mmdb"), "{err}");
    let (_, err, code) = run(d, &["top", "--by", "country", "--sql", "duckdb"]);
    assert_eq!(code, 2, "{err}");
}

/// One count of clients: `top`'s header total is exact past the per-value sketch's
/// size, and the same as `concentration`'s distinct addresses and `sql`'s
/// `count(DISTINCT client)` (issue: "1,656 distinct addresses … from ≈1,621 clients").
#[test]
fn the_client_total_is_exact_and_agrees_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut rng = Rng(0xc1e7);
    let mut log = String::new();
    for k in 0..6000u64 {
        let c = rng.below(3000);
        log.push_str(&format!(
            "10.{}.{}.{} - - [25/Sep/2026:14:{:02}:{:02} +0000] \"GET /p{} HTTP/1.1\" 200 10 \"-\" \"A\"\n",
            c / 65536,
            c / 256 % 256,
            c % 256,
            k / 60 % 60,
            k % 60,
            rng.below(3),
        ));
    }
    std::fs::write(d.join("access.log"), &log).unwrap();
    let distinct = {
        let mut v: Vec<&str> = log.lines().map(|l| l.split(' ').next().unwrap()).collect();
        v.sort_unstable();
        v.dedup();
        v.len() as u64
    };
    assert!(distinct > 2000, "{distinct}");
    let top = json(d, &["top", "--by", "path", "access.log"]);
    assert_eq!(top["clients"], distinct);
    assert_eq!(top["clients_estimated"], false);
    // Its rows, past 256 clients each, are estimates and say so.
    assert!(
        top["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["clients_estimated"] == true)
    );
    let text = ok(d, &["top", "--by", "ip", "access.log"]);
    let want = format!(
        "from {} clients",
        logscope_core::number::thousands(distinct)
    );
    assert!(text.contains(&want), "{want}\n{text}");
    let conc = json(d, &["concentration", "--by", "ip", "access.log"]);
    assert_eq!(conc["distinct_ips"], distinct);
    ok(d, &["ingest", "access.log"]);
    let sql = json(
        d,
        &["sql", "SELECT count(DISTINCT client) AS n FROM requests"],
    );
    assert_eq!(sql["rows"][0]["n"], distinct, "{sql}");
}
