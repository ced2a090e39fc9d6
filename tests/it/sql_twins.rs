//! Every report's SQL twin (`--sql duckdb`, `--sql spark`) gives logscope's own numbers
//! when run in the real engines over the same dataset. A small dataset (IPv4 and IPv6
//! clients, heavy MediaWiki and static requests, three months with a 5xx incident and
//! rate-limited 429s) is ingested; each case runs the report with `--format json` and its
//! twins, DuckDB runs every DuckDB twin in one process and Spark every Spark twin in one
//! local session (tests/engines/run_*.py), and each figure is compared with the JSON:
//! counts exactly, shares to 1e-9.
//!
//! Without the `duckdb` module, or `pyspark` and Java, that engine's part prints
//! `SKIPPED: …` (and fails when `CI` is set).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use super::common::logscope;

const AGENTS: &[&str] = &[
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.0; +https://openai.com/gptbot)",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "curl/8.0.1",
    "-",
    "python-requests/2.31 \\\"quoted\\\" it's",
];

const CLIENTS: &[&str] = &[
    "203.0.113.1",
    "203.0.113.2",
    "203.0.113.77",
    "203.0.113.200",
    "198.51.100.7",
    "198.51.100.8",
    "10.1.2.3",
    "2001:db8:1:2::5",
    "2001:db8:1:3::9",
    "2001:db8:2::1",
    "2001:db8:0:0:1::1",
    "fd00::1",
];

const TARGETS: &[&str] = &[
    "/index.php?search=foo",
    "/index.php?title=A&diff=12&oldid=11",
    "/w/index.php?title=A&action=history",
    "/w/index.php?title=A&action=INFO",
    "/index.php?title=Special%3ASearch/x",
    "/index.php?title=A&action=edit",
    "/wiki/Main_Page",
    "/wiki/Special:Search",
    "/static/a.css",
    "/images/logo.PNG",
    "/w/load.php?modules=site",
    "/index.php",
];

/// A combined log of three months: Jan–Mar 2026, a 5xx incident on 5 February and
/// 429s on 20 March.
fn write_log(dir: &Path) -> PathBuf {
    const MON: [&str; 3] = ["Jan", "Feb", "Mar"];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((seed >> 33) as usize) % n
    };
    let mut lines = Vec::new();
    for (m, mon) in MON.iter().enumerate() {
        for i in 0..150usize {
            let day = 1 + (i % 27);
            let (h, mi, s) = ((i * 7) % 24, (i * 13) % 60, i % 60);
            let c = CLIENTS[next(CLIENTS.len())];
            let t = TARGETS[next(TARGETS.len())];
            let ua = AGENTS[next(AGENTS.len())];
            let mut status = [200, 200, 200, 304, 404, 200][next(6)];
            if m == 1 && day == 5 {
                status = 503;
            }
            if m == 2 && day == 20 {
                status = 429;
            }
            let bytes = 100 + next(5000);
            lines.push((
                (m, day, h, mi, s),
                format!(
                    "{c} - - [{day:02}/{mon}/2026:{h:02}:{mi:02}:{s:02} +0000] \"GET {t} HTTP/1.1\" {status} {bytes} \"-\" \"{ua}\""
                ),
            ));
        }
    }
    lines.sort();
    let text: String = lines.into_iter().map(|(_, l)| l + "\n").collect();
    let p = dir.join("access.log");
    std::fs::write(&p, text).expect("log written");
    p
}

fn run_json(data: &Path, args: &[&str]) -> Value {
    let out = logscope(data)
        .args(args)
        .args(["--format", "json"])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

fn write_twin(data: &Path, args: &[&str], engine: &str, file: &Path) {
    let out = logscope(data)
        .args(args)
        .args(["--sql", engine])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{args:?} --sql {engine}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(file, &out.stdout).expect("twin written");
}

/// Runs `script` over `files`; `None` when the engine is absent.
fn run_engine(script: &str, files: &[PathBuf]) -> Option<Value> {
    let py = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/engines")
        .join(script);
    let out = Command::new("python3").arg(py).args(files).output().ok()?;
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{script} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    if let Some(m) = v.get("missing") {
        println!("SKIPPED: {script}: {m} not installed");
        assert!(
            std::env::var_os("CI").is_none(),
            "{m} is required in CI (python3 -m pip install duckdb pyspark chdb; Java 17)"
        );
        return None;
    }
    Some(v["files"].clone())
}

/// `a` equals `b`: integers exactly, other numbers to 1e-9, the rest as JSON.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(i), Some(j)) = (x.as_i64(), y.as_i64()) {
                return i == j;
            }
            let (f, g) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            (f - g).abs() <= 1e-9 * f.abs().max(1.0)
        }
        _ => a == b,
    }
}

fn check(what: &str, want: &Value, got: &Value, fields: &[&str]) {
    for f in fields {
        let (w, g) = (&want[*f], &got[*f]);
        assert!(
            same(w, g),
            "{what}: {f}: logscope {w}, twin {g}\nlogscope: {want}\ntwin: {got}"
        );
    }
}

fn check_rows(what: &str, want: &[Value], got: &[Value], fields: &[&str]) {
    assert_eq!(
        want.len(),
        got.len(),
        "{what}: {} rows in logscope, {} in the twin\nlogscope: {want:?}\ntwin: {got:?}",
        want.len(),
        got.len()
    );
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        check(&format!("{what} row {i}"), w, g, fields);
    }
}

fn ms(t: &Value) -> Value {
    t.as_str()
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map_or(Value::Null, |d| json!(d.timestamp_millis()))
}

fn arr(v: &Value) -> Vec<Value> {
    v.as_array().cloned().unwrap_or_default()
}

/// Compares the twin's result sets `r` with the report's JSON `j`; returns how many
/// figures were compared.
fn compare(report: &str, case: &str, j: &Value, r: &Value) -> usize {
    let one = |n: &str| r[n].get(0).cloned().unwrap_or(Value::Null);
    let mut n = 0;
    let mut count = |fields: &[&str], rows: usize| n += fields.len() * rows.max(1);
    match report {
        "heavy" => {
            let f = ["requests", "heavy", "distinct_ips", "distinct_prefixes"];
            check(case, j, &one("summary"), &f);
            count(&f, 1);
            let f = ["top_prefix", "top_prefix_requests", "top_prefix_share"];
            check(case, j, &one("top_prefix"), &f);
            count(&f, 1);
            check_rows(
                case,
                &arr(&j["classes"]),
                &arr(&r["classes"]),
                &["class", "requests"],
            );
            count(&["class", "requests"], arr(&j["classes"]).len());
            // The report has each start once, as RFC 3339; the twin as UTC ms.
            let want: Vec<Value> = arr(&j["buckets"])
                .into_iter()
                .filter(|b| b["requests"].as_u64() != Some(0))
                .map(|mut b| {
                    b["start_utc_ms"] = ms(&b["start"]);
                    b
                })
                .collect();
            let mut f = vec![
                "start_utc_ms",
                "requests",
                "heavy",
                "distinct_ips",
                "distinct_prefixes",
                "top_prefix",
                "top_prefix_requests",
                "top_prefix_share",
                "agent",
                "agent_share",
            ];
            if !j["capacity"].is_null() {
                f.extend(["peak", "over_capacity"]);
                let over = arr(&r["buckets"])
                    .iter()
                    .filter(|b| b["over_capacity"] == json!(true))
                    .count();
                assert_eq!(j["buckets_over_capacity"], json!(over), "{case}");
            }
            check_rows(case, &want, &arr(&r["buckets"]), &f);
            count(&f, want.len());
        }
        "concentration" => {
            let f = [
                "requests",
                "distinct_ips",
                "groups",
                "top_share",
                "groups_for_50",
                "groups_for_90",
                "hhi",
                "gini",
                "requests_from_host_names",
            ];
            check(case, j, &one("summary"), &f);
            count(&f, 1);
            let f = [
                "rank",
                "group",
                "requests",
                "share",
                "cumulative_share",
                "distinct_ips",
                "agent",
                "agent_share",
            ];
            check_rows(case, &arr(&j["top"]), &arr(&r["top"]), &f);
            count(&f, arr(&j["top"]).len());
            if !j["limit"].is_null() {
                let f = [
                    "groups_over",
                    "requests_from_groups_over",
                    "share_from_groups_over",
                    "requests_over_limit",
                    "share_over_limit",
                ];
                check(case, &j["limit"], &one("limit"), &f);
                count(&f, 1);
            }
        }
        "agents" => {
            let f = [
                "selected",
                "all",
                "mobile_selected",
                "mobile_all",
                "distinct_classes_selected",
                "families_total",
                "bots_total",
            ];
            check(case, j, &one("summary"), &f);
            count(&f, 1);
            let f = ["name", "selected", "selected_share", "all", "all_share"];
            for list in ["devices", "families", "bots", "bot_kinds"] {
                check_rows(
                    &format!("{case} {list}"),
                    &arr(&j[list]),
                    &arr(&r[list]),
                    &f,
                );
                count(&f, arr(&j[list]).len());
            }
        }
        "top" => {
            let mut want = j.clone();
            want["first_seen_ms"] = ms(&j["first_seen"]);
            want["last_seen_ms"] = ms(&j["last_seen"]);
            let f = [
                "requests",
                "bytes",
                "errors",
                "error_share",
                "clients",
                "first_seen_ms",
                "last_seen_ms",
            ];
            check(case, &want, &one("summary"), &f);
            count(&f, 1);
            let rows: Vec<Value> = arr(&j["rows"])
                .into_iter()
                .map(|mut row| {
                    row["first_seen_ms"] = ms(&row["first_seen"]);
                    row["last_seen_ms"] = ms(&row["last_seen"]);
                    row["distinct_values"] = j["distinct_values"].clone();
                    row
                })
                .collect();
            let f = [
                "rank",
                "value",
                "requests",
                "share",
                "bytes",
                "bytes_share",
                "clients",
                "errors",
                "error_share",
                "first_seen_ms",
                "last_seen_ms",
                "distinct_values",
            ];
            check_rows(case, &rows, &arr(&r["rows"]), &f);
            count(&f, rows.len());
        }
        "availability" => {
            // Every period with its missing probes; the report's times are RFC 3339, the
            // twin's UTC ms.
            let periods: Vec<Value> = arr(&j["periods"])
                .into_iter()
                .map(|mut p| {
                    p["start_ms"] = ms(&p["start"]);
                    p["end_ms"] = ms(&p["end"]);
                    p
                })
                .collect();
            let f = [
                "label",
                "last_label",
                "periods",
                "start_ms",
                "end_ms",
                "hours",
            ]
            .into_iter()
            .chain(COUNTED)
            .collect::<Vec<_>>();
            check_rows(case, &periods, &arr(&r["periods"]), &f);
            count(&f, periods.len());
            let mut total = j["total"].clone();
            total["span_start_ms"] = ms(&j["span_start"]);
            total["span_end_ms"] = ms(&j["span_end"]);
            total["cadence_ms"] = j["cadence"]["ms"].clone();
            total["gap_ms"] = j["gap_ms"].clone();
            total["probe_requests"] = j["probe_requests"].clone();
            let f = [
                "span_start_ms",
                "span_end_ms",
                "cadence_ms",
                "gap_ms",
                "probe_requests",
            ]
            .into_iter()
            .chain(COUNTED)
            .collect::<Vec<_>>();
            check(case, &total, &one("summary"), &f);
            count(&f, 1);
            // The site's rhythm (without a probe): its summary and expected requests per
            // hour of the week.
            let rhythm = &j["rhythm"];
            if rhythm.is_null() {
                assert!(arr(&r["rhythm"]).is_empty(), "{case}: a rhythm in the twin");
            } else {
                let f = [
                    "days",
                    "kind",
                    "requests_per_day",
                    "silences_checked",
                    "silences_counted",
                    "counted_ms",
                    "expected_quiet",
                    "availability_loose",
                    "availability_strict",
                ];
                check(case, rhythm, &one("rhythm"), &f);
                count(&f, 1);
                let want: Vec<Value> = arr(&rhythm["expected_per_hour"])
                    .into_iter()
                    .map(|e| json!({"expected": e}))
                    .collect();
                check_rows(case, &want, &arr(&r["expected_per_hour"]), &["expected"]);
                count(&["expected"], want.len());
            }
            let mut want = Vec::new();
            for p in &periods {
                if let Some(m) = p["failures_by_status"].as_object() {
                    let mut v: Vec<(u64, u64)> = m
                        .iter()
                        .map(|(k, n)| (k.parse().unwrap_or(0), n.as_u64().unwrap_or(0)))
                        .collect();
                    v.sort();
                    for (s, k) in v {
                        want.push(json!({"label": p["label"], "status": s, "n": k}));
                    }
                }
            }
            check_rows(case, &want, &arr(&r["failures"]), &["label", "status", "n"]);
            count(&["label", "status", "n"], want.len());
        }
        other => panic!("no comparison for {other}"),
    }
    n
}

/// What an availability period and its total count, as the report's JSON names them.
const COUNTED: [&str; 7] = [
    "requests",
    "succeeded",
    "failed",
    "policy",
    "missing",
    "expected",
    "availability",
];

/// The cases: a report and its flags.
const CASES: &[&[&str]] = &[
    &["heavy", "--by", "1d", "--capacity", "2/1h"],
    &[
        "heavy",
        "--by",
        "6h",
        "--tz",
        "Asia/Seoul",
        "--since",
        "2026-02",
        "--until",
        "2026-02",
    ],
    &[
        "heavy",
        "--by",
        "1h30m",
        "--tz",
        "+05:30",
        "--prefix-v4",
        "16",
        "--prefix-v6",
        "64",
        "--status",
        "2xx,304",
    ],
    // Weeks from Monday (the log starts on Thursday 2026-01-01), and widths that do
    // not divide four days, counted from Monday 1970-01-05 too.
    &["heavy", "--by", "1w"],
    &[
        "heavy",
        "--by",
        "2w",
        "--tz",
        "Asia/Seoul",
        "--capacity",
        "3/1w",
    ],
    &["heavy", "--by", "7h", "--capacity", "2/5h", "--tz=-03:00"],
    &["concentration", "--per-prefix-limit", "5/1d"],
    &[
        "concentration",
        "--by",
        "ip",
        "--agent",
        "bot,curl",
        "--top",
        "5",
    ],
    &[
        "concentration",
        "--client",
        "203.0.113.0/25,2001:db8:1::/48",
        "--heavy",
    ],
    &["agents", "--heavy"],
    &[
        "agents",
        "--path",
        "^/(index|w/index)\\.php$",
        "--since",
        "2026-01-15",
        "--until",
        "2026-03-10",
    ],
    &["top", "--by", "prefix"],
    &["top", "--by", "ip", "--top", "0"],
    &["top", "--by", "path", "--sort", "bytes"],
    &["top", "--by", "status", "--sort", "clients"],
    &["top", "--by", "agent", "--errors"],
    &["top", "--by", "method", "--agent", "mobile"],
    &["availability"],
    &[
        "availability",
        "--by",
        "day",
        "--since",
        "2026-02-01",
        "--until",
        "2026-02-10",
        "--policy",
        "failure",
    ],
    &[
        "availability",
        "--probe",
        "^/wiki/",
        "--tz",
        "Europe/Berlin",
    ],
    // Two months of empty days before the log and one after: runs of more than 24
    // periods without a probe are one row; a given cadence.
    &[
        "availability",
        "--by",
        "day",
        "--since",
        "2025-11-01",
        "--until",
        "2026-05-01",
        "--probe",
        "^/wiki/",
        "--expect-every",
        "6h",
        "--tz",
        "Asia/Seoul",
    ],
    // Three days: too few to learn the rhythm, one request per mean interval.
    &[
        "availability",
        "--by",
        "day",
        "--since",
        "2026-03-18",
        "--until",
        "2026-03-21",
    ],
    &[
        "availability",
        "--probe",
        "index",
        "--min-gap",
        "2h",
        "--by",
        "day",
        "--tz",
        "+05:30",
    ],
];

#[test]
fn twins_give_logscope_numbers_in_duckdb_spark_and_clickhouse() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let log = write_log(dir.path());
    let out = logscope(&data)
        .arg("ingest")
        .arg(&log)
        .output()
        .expect("ingest runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut expected = Vec::new();
    let (mut duck, mut spark, mut ch) = (Vec::new(), Vec::new(), Vec::new());
    for (i, args) in CASES.iter().enumerate() {
        expected.push(run_json(&data, args));
        let d = dir.path().join(format!("case{i:02}.duckdb.sql"));
        let s = dir.path().join(format!("case{i:02}.spark.sql"));
        write_twin(&data, args, "duckdb", &d);
        let c = dir.path().join(format!("case{i:02}.clickhouse.sql"));
        write_twin(&data, args, "spark", &s);
        write_twin(&data, args, "clickhouse", &c);
        duck.push(d);
        spark.push(s);
        ch.push(c);
    }
    for (engine, script, files) in [
        ("duckdb", "run_duckdb.py", &duck),
        ("spark", "run_spark.py", &spark),
        ("clickhouse", "run_clickhouse.py", &ch),
    ] {
        let Some(results) = run_engine(script, files) else {
            continue;
        };
        let mut figures = 0;
        for (i, args) in CASES.iter().enumerate() {
            let name = files[i].file_name().unwrap().to_string_lossy().to_string();
            let case = format!("{engine}: {}", args.join(" "));
            figures += compare(args[0], &case, &expected[i], &results[&name]);
        }
        println!("{engine}: {figures} figures equal to logscope's");
    }
}

#[test]
fn untranslatable_flags_are_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let log = write_log(dir.path());
    logscope(&data).arg("ingest").arg(&log).assert().success();
    for (args, name) in [
        (
            &["heavy", "--trust-proxy", "10.0.0.0/8"][..],
            "--trust-proxy",
        ),
        (&["agents", "--sample", "5"][..], "--sample"),
        (&["concentration", "--by", "asn"][..], "--by asn"),
        (&["availability", "--by", "week"][..], "--by week"),
    ] {
        let out = logscope(&data)
            .args(args)
            .args(["--sql", "duckdb"])
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(name), "{args:?}: {err}");
    }
    let out = logscope(&data)
        .args(["heavy", "--sql", "mysql"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    // Log text reaches the query only as literals: quotes doubled, no raw control bytes.
    let out = logscope(&data)
        .args(["agents", "--sql", "spark"])
        .output()
        .expect("runs");
    let sql = String::from_utf8_lossy(&out.stdout);
    assert!(sql.contains("it''s"), "{sql}");
    assert!(
        !sql.bytes().any(|b| b < 0x20 && b != b'\n'),
        "raw control bytes"
    );
    // A remote dataset: the query names it.
    let out = logscope(&data)
        .args([
            "top",
            "--by",
            "path",
            "--sql",
            "duckdb",
            "--sql-source",
            "s3://bucket/logs/requests/*.parquet",
        ])
        .output()
        .expect("runs");
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("read_parquet('s3://bucket/logs/requests/*.parquet')")
    );
}
