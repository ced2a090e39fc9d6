//! Regression tests: hardening_parse — user format strings with non-ASCII text or
//! malformed syntax, timestamps outside the 1970–2099 window, and clients logged with a
//! zone id, brackets or a port.

use std::path::Path;

use crate::common::{self, ingest_json};

/// The reason of a bad line whose arrival lies outside [1970-01-01, 2100-01-01).
const OUT_OF_RANGE: &str = "timestamp out of range (1970–2099)";

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A combined line.
fn combined(client: &str, time: &str, path: &str) -> String {
    format!(
        r#"{client} - - [{time}] "GET {path} HTTP/1.1" 200 512 "-" "Mozilla/5.0 (X11; Linux x86_64)""#
    )
}

/// `n` combined lines of May 2024, one a minute, from a few clients.
fn lines_2024(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let t = format!("17/May/2024:{:02}:{:02}:07 +0000", i / 60 % 24, i % 60);
            combined(&format!("192.0.2.{}", i % 7 + 1), &t, &format!("/p{i}"))
        })
        .collect()
}

fn write(dir: &Path, name: &str, lines: &[String]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p
}

#[test]
fn non_ascii_text_in_a_log_format_is_matched_literally() {
    // Before: `--log-format '… é'` panicked (exit 101, "byte index is not a char
    // boundary") in the Apache and the nginx compiler alike.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let lines: Vec<String> = (0..5)
        .map(|i| {
            format!(
                r#"203.0.113.{i} [17/May/2024:10:05:0{i} +0000] "GET /café HTTP/1.1" 200 {i}5 é"#
            )
        })
        .collect();
    let log = write(tmp.path(), "accents.log", &lines);
    for fmt in [
        r#"%h %t "%r" %>s %b é"#,
        r#"$remote_addr [$time_local] "$request" $status $body_bytes_sent é"#,
    ] {
        let (v, code) = ingest_json(&data, &["--dry-run", "--log-format", fmt, s(&log)]);
        assert_eq!(code, 0, "{fmt}: {v}");
        assert_eq!(v["added"], 5, "{fmt}: {v}");
        assert_eq!(v["bad"], 0, "{fmt}: {v}");
    }
    // The literal is matched byte for byte: a line ending in "e" does not fit.
    let other = write(
        tmp.path(),
        "plain.log",
        &[lines[0].replace(" é", " e"), lines[1].clone()],
    );
    let (v, _) = ingest_json(
        &data,
        &[
            "--dry-run",
            "--log-format",
            r#"%h %t "%r" %>s %b é"#,
            s(&other),
        ],
    );
    assert_eq!(
        (v["added"].as_u64(), v["bad"].as_u64()),
        (Some(1), Some(1)),
        "{v}"
    );
}

#[test]
fn malformed_log_formats_are_messages_not_panics() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = write(tmp.path(), "a.log", &lines_2024(3));
    for fmt in [
        "%{",
        "$",
        "%",
        "${",
        "%{é",
        "é %",
        "é $",
        "%é",
        "$é",
        "'é",
        "é'",
        "${é}",
        "%{%é}t",
        "log_format é",
        "LogFormat \"é",
        "\u{1F600}%",
    ] {
        let out = common::logscope(&data)
            .args([
                "ingest",
                "--dry-run",
                "--json",
                "--log-format",
                fmt,
                s(&log),
            ])
            .output()
            .unwrap();
        let code = out.status.code().unwrap_or(-1);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(code, 101, "{fmt:?} panicked: {stderr}");
        assert_eq!(code, 2, "{fmt:?}: exit {code}: {stderr}");
        assert!(stderr.contains("--log-format"), "{fmt:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{fmt:?}: {stderr}");
    }
    // The same through --format nginx:… / apache:… and a name that splits a character.
    for fmt in ["nginx:'é $'", "apache:%{é", "nginxé", "apachéxyz"] {
        let out = common::logscope(&data)
            .args(["ingest", "--dry-run", "--json", "--format", fmt, s(&log)])
            .output()
            .unwrap();
        let code = out.status.code().unwrap_or(-1);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(code != 101 && code != 0, "{fmt:?}: exit {code}: {stderr}");
        assert!(!stderr.contains("panicked"), "{fmt:?}: {stderr}");
    }
}

#[test]
fn timestamps_outside_1970_2099_are_bad_lines() {
    // Before: years 0000 and 9999 parsed, and one line of 9999 among lines of 2024
    // made availability allocate gigabytes.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut lines = lines_2024(100);
    lines.insert(
        40,
        combined("192.0.2.9", "31/Dec/9999:23:59:59 +0000", "/future"),
    );
    lines.push(combined("192.0.2.9", "01/Jan/0000:00:00:00 +0000", "/past"));
    let log = write(tmp.path(), "mixed.log", &lines);
    let (v, _) = ingest_json(&data, &["--dry-run", "--format", "combined", s(&log)]);
    assert_eq!(v["lines"], 102, "{v}");
    assert_eq!(v["added"], 100, "{v}");
    assert_eq!(v["bad"], 2, "{v}");
    assert_eq!(
        v["bad_reasons"],
        serde_json::json!([[OUT_OF_RANGE, 2]]),
        "{v}"
    );
    assert_eq!(v["first"], "2024-05-17T00:00:07.000Z", "{v}");
    assert_eq!(v["last"], "2024-05-17T01:39:07.000Z", "{v}");
    // Detection is not fooled either, and the bounds are what the reason says.
    let edges = write(
        tmp.path(),
        "edges.log",
        &[
            combined("192.0.2.1", "01/Jan/1970:00:00:00 +0000", "/first"),
            combined("192.0.2.1", "31/Dec/2099:23:59:59 +0000", "/last"),
            combined("192.0.2.1", "31/Dec/1969:23:59:59 +0000", "/before"),
            combined("192.0.2.1", "01/Jan/2100:00:00:00 +0000", "/after"),
        ],
    );
    let (v, _) = ingest_json(&data, &["--dry-run", s(&edges)]);
    assert_eq!(
        (v["added"].as_u64(), v["bad"].as_u64()),
        (Some(2), Some(2)),
        "{v}"
    );
    assert_eq!(v["first"], "1970-01-01T00:00:00.000Z", "{v}");
    assert_eq!(v["last"], "2099-12-31T23:59:59.000Z", "{v}");
}

#[test]
fn out_of_range_times_in_other_formats_are_bad_lines_too() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    // Caddy JSON: an ISO ts of 9999, a float ts of 1e300, a duration longer than the
    // time since 1970 (arrival before 1970).
    let caddy = |ts: &str, dur: &str| {
        format!(
            r#"{{"level":"info","ts":{ts},"logger":"http.log.access","msg":"handled request","request":{{"remote_ip":"192.0.2.1","proto":"HTTP/1.1","method":"GET","host":"x","uri":"/"}},"duration":{dur},"size":1,"status":200}}"#
        )
    };
    let log = write(
        tmp.path(),
        "caddy.log",
        &[
            caddy("1716723772.6", "0.01"),
            caddy("1716723772.7", "0.01"),
            caddy(r#""9999-12-31T23:59:59Z""#, "0.01"),
            caddy("1e300", "0.01"),
            caddy("1716723772.8", "1716723773.0"),
        ],
    );
    let (v, _) = ingest_json(&data, &["--dry-run", "--format", "caddy-json", s(&log)]);
    assert_eq!(v["added"], 2, "{v}");
    assert_eq!(
        v["bad_reasons"],
        serde_json::json!([[OUT_OF_RANGE, 3]]),
        "{v}"
    );
    // nginx $msec and $time_iso8601, W3C.
    let log = write(
        tmp.path(),
        "msec.log",
        &[
            "1716723772.600 192.0.2.1 200".into(),
            "253402300799.000 192.0.2.1 200".into(),
            "999999999999.999 192.0.2.1 200".into(),
        ],
    );
    let (v, _) = ingest_json(
        &data,
        &[
            "--dry-run",
            "--log-format",
            "$msec $remote_addr $status",
            s(&log),
        ],
    );
    assert_eq!(v["added"], 1, "{v}");
    assert_eq!(
        v["bad_reasons"],
        serde_json::json!([[OUT_OF_RANGE, 2]]),
        "{v}"
    );
    let log = write(
        tmp.path(),
        "iis.log",
        &[
            "#Fields: date time c-ip cs-method cs-uri-stem sc-status".into(),
            "2024-05-17 10:00:00 192.0.2.1 GET / 200".into(),
            "9999-12-31 23:59:59 192.0.2.1 GET / 200".into(),
            "0000-01-01 00:00:00 192.0.2.1 GET / 200".into(),
        ],
    );
    let (v, _) = ingest_json(&data, &["--dry-run", "--format", "w3c", s(&log)]);
    assert_eq!(v["added"], 1, "{v}");
    assert_eq!(
        v["bad_reasons"],
        serde_json::json!([[OUT_OF_RANGE, 2]]),
        "{v}"
    );
}

#[test]
fn clients_with_zone_brackets_or_port_group_by_their_prefix() {
    // Before: these four clients were host names (one group each, no /48 or /24).
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let t = "17/May/2024:10:05:03 +0000";
    let lines: Vec<String> = [
        "[2001:db8::1]:443",
        "fe80::1%eth0",
        "203.0.113.7:51234",
        "::ffff:203.0.113.9",
    ]
    .iter()
    .map(|c| combined(c, t, "/"))
    .collect();
    let log = write(tmp.path(), "clients.log", &lines);
    let out = common::logscope(&data)
        .args([
            "concentration",
            "--by",
            "prefix",
            "--format",
            "json",
            s(&log),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(v["requests_from_host_names"], 0, "{v}");
    assert_eq!(v["distinct_ips"], 4, "{v}");
    let mut groups: Vec<(String, u64)> = v["top"]
        .as_array()
        .unwrap_or_else(|| panic!("no top groups: {v}"))
        .iter()
        .map(|r| {
            (
                r["group"].as_str().unwrap_or_default().to_string(),
                r["requests"].as_u64().unwrap_or_default(),
            )
        })
        .collect();
    groups.sort();
    assert_eq!(
        groups,
        [
            ("2001:db8::/48".to_string(), 1),
            ("203.0.113.0/24".to_string(), 2),
            ("fe80::/48".to_string(), 1),
        ],
        "{v}"
    );
}
