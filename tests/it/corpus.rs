//! The independent corpus (fixtures/corpus/, provenance in fixtures/README.md): sample
//! lines from other projects' parser test suites, each with the fields those projects
//! expect. Every file is ingested with format detection, its rows read back from the
//! dataset and compared field by field with the expectation; the disagreements are
//! printed (`cargo test --test it corpus:: -- --nocapture`). Nothing may crash.
//!
//! The corpus has two parts, measured and reported apart: the first six projects
//! (every expected record stored, at least 99 % of the fields agree), and a second part
//! drawn later from further projects ([`FURTHER`]), held to what it was last measured
//! at (at least 99 % too).

use std::collections::BTreeMap;
use std::path::Path;

use polars::prelude::*;
use serde_json::Value;

use crate::common::{fixture, logscope, read_dataset};

/// The expected fields and the dataset column each is compared with.
const TEXT_FIELDS: &[&str] = &[
    "client",
    "ident",
    "user",
    "method",
    "path",
    "request",
    "query",
    "protocol",
    "referer",
    "user_agent",
    "host",
    "xff",
];
const INT_FIELDS: &[&str] = &["status", "bytes", "request_time_us"];

/// The stored form of a text column (format 4) back to the log's bytes: a character of
/// U+EF80–U+EFFF is the byte U+EF00 less; everything else is the logged text.
fn unstore(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut buf = [0u8; 4];
    for c in s.chars() {
        match (c as u32).checked_sub(0xEF00) {
            Some(b @ 0x80..=0xFF) => out.push(b as u8),
            _ => out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes()),
        }
    }
    out
}

/// `%XX` decoded (for sources that state URLs decoded).
fn percent_decode(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 3 <= b.len()
            && let Ok(v) =
                u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16)
        {
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// `YYYY-MM-DDTHH:MM:SS[.fff][Z|±hh:mm]` → ms since the epoch.
fn rfc3339_ms(s: &str) -> i64 {
    let n = |a: usize, b: usize| s[a..b].parse::<i64>().expect("rfc3339 digits");
    let (y, mo, d, h, mi, se) = (n(0, 4), n(5, 7), n(8, 10), n(11, 13), n(14, 16), n(17, 19));
    let mut rest = &s[19..];
    let mut ms = 0;
    if let Some(f) = rest.strip_prefix('.') {
        let digits: String = f.chars().take_while(|c| c.is_ascii_digit()).collect();
        ms = format!("{digits:0<3}")[..3].parse::<i64>().unwrap();
        rest = &f[digits.len()..];
    }
    let off = match rest {
        "Z" | "" => 0,
        z => {
            let sign = if z.starts_with('-') { -1 } else { 1 };
            sign * (z[1..3].parse::<i64>().unwrap() * 3600 + z[4..6].parse::<i64>().unwrap() * 60)
        }
    };
    // days from civil (Howard Hinnant)
    let (y2, m2) = if mo <= 2 {
        (y - 1, mo + 9)
    } else {
        (y, mo - 3)
    };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * m2 + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    ((days * 86_400 + h * 3600 + mi * 60 + se - off) * 1000) + ms
}

fn text(df: &DataFrame, col: &str, row: usize) -> Option<String> {
    match df.column(col).unwrap().get(row).unwrap() {
        AnyValue::Null => None,
        v => Some(v.str_value().into_owned()),
    }
}

fn int(df: &DataFrame, col: &str, row: usize) -> Option<i64> {
    match df.column(col).unwrap().get(row).unwrap() {
        AnyValue::Null => None,
        v => Some(v.extract::<i64>().unwrap()),
    }
}

/// The projects of the second part of the corpus (the prefix of a file's name).
const FURTHER: &[&str] = &[
    "apachelogs",
    "lnav",
    "logparser",
    "luasandbox",
    "plaso",
    "telegraf",
];

/// What one corpus file, or a part of the corpus, gave.
#[derive(Default)]
struct Tally {
    files: usize,
    detected: usize,
    records: usize,
    stored: usize,
    fields: usize,
    agree: usize,
    notes: Vec<String>,
}

/// Ingests one corpus file with detection and compares its rows with the expectation.
fn check(log: &Path, t: &mut Tally) {
    let name = log.file_name().unwrap().to_string_lossy().to_string();
    let expected_path = log.with_extension("expected.jsonl");
    let expected: Vec<Value> = std::fs::read_to_string(&expected_path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let out = logscope(&data)
        .args(["ingest", "--json", "--max-bad", "1", "--final-line", "take"])
        .arg(log)
        .output()
        .unwrap();
    let code = out.status.code();
    assert!(
        matches!(code, Some(0 | 1 | 3)),
        "{name}: ingest crashed or failed oddly ({code:?}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Option<Value> = serde_json::from_slice(&out.stdout).ok();
    let format = summary
        .as_ref()
        .and_then(|s| s["files"][0]["format"].as_str().map(str::to_string))
        .unwrap_or_else(|| "(not detected)".into());
    t.files += 1;
    if format != "(not detected)" {
        t.detected += 1;
    }
    let df = data
        .join("requests/_manifest.json")
        .exists()
        .then(|| read_dataset(&data));
    let mut rows: BTreeMap<i64, usize> = BTreeMap::new();
    if let Some(df) = &df {
        for r in 0..df.height() {
            rows.insert(int(df, "line", r).unwrap(), r);
        }
    }
    for e in &expected {
        let line = e["line"].as_i64().unwrap();
        let stated: Vec<&String> = e
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| {
                !matches!(
                    k.as_str(),
                    "line" | "case" | "percent_decoded" | "ts_seconds"
                )
            })
            .collect();
        t.records += 1;
        t.fields += stated.len();
        let (Some(df), Some(&r)) = (&df, rows.get(&line)) else {
            t.notes.push(format!(
                "{name}:{line}: not stored (format {format}; {} fields lost)",
                stated.len()
            ));
            continue;
        };
        t.stored += 1;
        let decoded: Vec<&str> = e["percent_decoded"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for k in stated {
            let want = &e[k.as_str()];
            let (ok, got) = if TEXT_FIELDS.contains(&k.as_str()) {
                let got = text(df, k, r).map(|s| unstore(&s));
                let got_cmp = got.as_ref().map(|g| {
                    if decoded.contains(&k.as_str()) {
                        percent_decode(g)
                    } else {
                        g.clone()
                    }
                });
                let ok = match want {
                    Value::Null => got.is_none(),
                    Value::String(w) => got_cmp.as_deref() == Some(w.as_bytes()),
                    _ => false,
                };
                (
                    ok,
                    got.map(|g| format!("{:?}", String::from_utf8_lossy(&g)))
                        .unwrap_or("null".into()),
                )
            } else if INT_FIELDS.contains(&k.as_str()) {
                let got = int(df, k, r);
                let ok = match (k.as_str(), want) {
                    (_, Value::Null) => got.is_none(),
                    (_, w) => w.as_i64().is_some() && got == w.as_i64(),
                };
                (ok, format!("{got:?}"))
            } else if k == "ts" || k == "ts_ms" {
                let want_ms = match want {
                    Value::String(s) => rfc3339_ms(s),
                    v => v.as_i64().unwrap(),
                };
                let got = int(df, "ts", r);
                // A source that states the time to the second only (`ts_seconds`).
                let got_cmp = match e["ts_seconds"].as_bool() {
                    Some(true) => got.map(|g| g.div_euclid(1000) * 1000),
                    _ => got,
                };
                (
                    got_cmp == Some(want_ms),
                    format!("{got:?} (want {want_ms})"),
                )
            } else {
                panic!("{name}:{line}: unknown expected field {k}");
            };
            if ok {
                t.agree += 1;
            } else {
                t.notes
                    .push(format!("{name}:{line}: {k}: expected {want}, stored {got}"));
            }
        }
    }
}

/// One part of the corpus (`further`: the second part, [`FURTHER`]): totals, every
/// disagreement printed.
fn run_corpus(further: bool) -> Tally {
    let dir = fixture("corpus");
    let mut logs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            FURTHER.contains(&name.split('-').next().unwrap()) == further
        })
        .collect();
    logs.sort();
    let mut total = Tally::default();
    let mut projects = std::collections::BTreeSet::new();
    for log in &logs {
        let name = log.file_name().unwrap().to_string_lossy().to_string();
        projects.insert(name.split('-').next().unwrap().to_string());
        let mut t = Tally::default();
        check(log, &mut t);
        println!(
            "{name}: {}/{} records stored, {}/{} fields agree",
            t.stored, t.records, t.agree, t.fields
        );
        total.files += t.files;
        total.detected += t.detected;
        total.records += t.records;
        total.stored += t.stored;
        total.fields += t.fields;
        total.agree += t.agree;
        total.notes.extend(t.notes);
    }
    for n in &total.notes {
        println!("  {n}");
    }
    println!(
        "corpus ({} part): {} projects, {}/{} files detected, {}/{} records stored, {}/{} fields agree ({:.2} %)",
        if further { "further" } else { "first" },
        projects.len(),
        total.detected,
        total.files,
        total.stored,
        total.records,
        total.agree,
        total.fields,
        100.0 * total.agree as f64 / total.fields as f64
    );
    if further {
        assert!(
            projects.len() >= 6 && total.records >= 32,
            "further part too small"
        );
    } else {
        assert!(logs.len() >= 20, "corpus files: {}", logs.len());
        assert!(
            projects.len() >= 4 && total.records >= 150,
            "corpus too small"
        );
    }
    total
}

/// Nothing crashes (checked per file in `check`), and the measured agreement does not
/// fall below what was last measured (see the target test below).
#[test]
fn other_projects_parser_tests_never_crash_and_do_not_regress() {
    let t = run_corpus(false);
    let share = t.agree as f64 / t.fields as f64;
    assert!(
        t.stored >= MEASURED_STORED,
        "stored {} < {MEASURED_STORED}",
        t.stored
    );
    assert!(
        share >= MEASURED_SHARE,
        "agreement {share:.4} < {MEASURED_SHARE}"
    );
}

/// What the corpus gave when it was last measured (dataset format 4): 150 of 150
/// records stored, 1498 of 1506 fields agree (99.47 %). One miss is
/// crowdsec-traefik_json.log:7: CrowdSec takes the last address of `ClientHost`
/// `192.168.1.100,10.0.0.50`, logscope the first public one, else the first —
/// `--trust-proxy` reads the list right to left. Seven are Caddy's `"status":0` (no
/// status written) in crowdsec-caddy-logs.log: CrowdSec keeps 0, format 4 stores no
/// status as null, as it stores `-`. (Format 3: 1479 of 1480, non-HTTP requests then
/// compared as `path`, which is now `request` as the peers have it.)
const MEASURED_STORED: usize = 150;
const MEASURED_SHARE: f64 = 0.9946;

/// The bar: every expected record stored, ≥ 99 % of the fields agree.
#[test]
fn other_projects_parser_tests_agree_field_by_field() {
    let t = run_corpus(false);
    let share = t.agree as f64 / t.fields as f64;
    assert_eq!(
        t.stored, t.records,
        "expected records not stored (see above)"
    );
    assert!(
        share >= 0.99,
        "field agreement {:.2} % < 99 %",
        100.0 * share
    );
}

/// The further part: nothing crashes (checked per file in `check`), and neither the
/// records stored nor the agreement fall below what was last measured.
#[test]
fn further_projects_parser_tests_do_not_regress() {
    let t = run_corpus(true);
    let share = t.agree as f64 / t.fields as f64;
    assert!(
        t.stored >= FURTHER_STORED,
        "stored {} < {FURTHER_STORED}",
        t.stored
    );
    assert!(
        share >= FURTHER_SHARE,
        "agreement {share:.4} < {FURTHER_SHARE}"
    );
    assert!(
        share >= 0.99,
        "field agreement {:.2} % < 99 %",
        100.0 * share
    );
}

/// What the further part gave when last measured: 10 of 10 files detected, 32 of 32
/// records stored, 330 of 332 fields agree (99.40 %; logparser's TLS handshake line
/// has its `request` compared too). The two misses are InfluxDB's
/// request time (µs, after a request ID, telegraf-influxdb-httpd.log): the unquoted tail
/// after the user agent goes into no column. Before the fallback layouts read lines
/// behind a bracketed tag, that file was not recognised at all (30 of 32 records,
/// 307 of 331 fields, 92.75 %).
const FURTHER_STORED: usize = 32;
const FURTHER_SHARE: f64 = 0.9939;
