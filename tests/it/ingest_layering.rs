//! The ingest's bookkeeping, now in the store (`store::ingest`), through the binary:
//! its distinct-prefix counts agree with the reports, it commits only when something
//! changed, and the format is settled (`parse::settle`) with the same messages.

use std::path::Path;

use crate::common::{self, ingest_json};

const LINES: &str = "\
::ffff:1.2.3.4 - - [10/Oct/2024:13:55:36 +0000] \"GET /a HTTP/1.1\" 200 10 \"-\" \"ua\"
1.2.3.5 - - [10/Oct/2024:13:55:37 +0000] \"GET /b HTTP/1.1\" 200 10 \"-\" \"ua\"
[::ffff:1.2.3.6]:4711 - - [10/Oct/2024:13:55:38 +0000] \"GET /c HTTP/1.1\" 200 10 \"-\" \"ua\"
5.6.7.8 - - [10/Oct/2024:13:55:39 +0000] \"GET /d HTTP/1.1\" 200 10 \"-\" \"ua\"
2001:db8:1::1 - - [10/Oct/2024:13:55:40 +0000] \"GET /e HTTP/1.1\" 200 10 \"-\" \"ua\"
";

fn write_log(dir: &Path, name: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, LINES).unwrap();
    p.to_str().unwrap().to_string()
}

fn concentration_groups(data: &Path, extra: &[&str]) -> u64 {
    let out = common::logscope(data)
        .arg("concentration")
        .args(extra)
        .args(["--format", "json"])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    v["groups"].as_u64().expect("groups")
}

#[test]
fn mapped_ipv6_prefixes_agree_with_concentration() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = write_log(tmp.path(), "access.log");
    let (s, code) = ingest_json(&data, &["--format", "combined", &log]);
    assert_eq!(code, 0, "{s}");
    assert_eq!(s["added"], 5, "{s}");
    // `::ffff:1.2.3.4`, `1.2.3.5` and `[::ffff:1.2.3.6]:4711` are one /24.
    assert_eq!(s["distinct_ips"], 5, "{s}");
    assert_eq!(s["distinct_v4_24"], 2, "{s}");
    assert_eq!(s["distinct_v6_48"], 1, "{s}");
    let groups = s["distinct_v4_24"].as_u64().unwrap() + s["distinct_v6_48"].as_u64().unwrap();
    // Over the dataset and over the file itself: the same prefixes.
    assert_eq!(concentration_groups(&data, &[]), groups);
    assert_eq!(concentration_groups(&data, &[&log]), groups);
}

#[test]
fn commits_only_when_sources_change() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = write_log(tmp.path(), "access.log");
    let (s, _) = ingest_json(&data, &[&log]);
    assert_eq!(s["ingest"], 1, "{s}");
    // The same file again: nothing new, nothing committed.
    let (s, code) = ingest_json(&data, &[&log]);
    assert_eq!((s["ingest"].as_u64(), code), (Some(0), 0), "{s}");
    assert_eq!(s["already_seen"], 5, "{s}");
    // The same content under another name: no row, but the source learns the name.
    let copy = write_log(tmp.path(), "access.log.1");
    let (s, _) = ingest_json(&data, &[&copy]);
    assert_eq!(
        (s["ingest"].as_u64(), s["added"].as_u64()),
        (Some(2), Some(0)),
        "{s}"
    );
    assert_eq!(s["dataset_rows"], 5, "{s}");
    let (s, _) = ingest_json(&data, &[&copy, &log]);
    assert_eq!(s["ingest"], 0, "{s}");
}

#[test]
fn log_format_syntax_and_undetectable_input() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = write_log(tmp.path(), "access.log");
    common::logscope(&data)
        .args(["ingest", "--dry-run", "--log-format", "no fields", &log])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--log-format: 'no fields' has no $variable (nginx log_format) and no %directive (Apache LogFormat); example: --log-format",
        ));
    let junk = tmp.path().join("junk.log");
    std::fs::write(&junk, "hello\nworld\n").unwrap();
    common::logscope(&data)
        .args(["ingest", "--dry-run", junk.to_str().unwrap()])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "junk.log: cannot recognise the log format: none of the known formats matches any of its first 2 lines (first line: \"hello\"). Name the format with --format",
        ));
    // A report names its own flag for the format of FILE.
    common::logscope(&data)
        .args(["heavy", junk.to_str().unwrap()])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "Name the format with --input-format (e.g. --input-format combined)",
        ));
    let (s, code) = ingest_json(
        &data,
        &[
            "--dry-run",
            "--log-format",
            "%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-agent}i\"",
            &log,
        ],
    );
    assert_eq!((code, s["added"].as_u64()), (0, Some(5)), "{s}");
}
