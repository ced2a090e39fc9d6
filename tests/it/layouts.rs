//! One file with several CLF layouts, client fields that are address lists, unquoted
//! tails, odd identities and leading spaces, and requests that are not HTTP — each
//! ingested with detection and read back from the dataset.

use polars::prelude::*;

use crate::common::{ingest_json, read_dataset};

/// Ingests `lines` (detected format) into a fresh dataset; returns the summary's file
/// entry and the dataset.
fn ingest(lines: &[&str]) -> (serde_json::Value, DataFrame) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let data = dir.path().join("data");
    let (s, code) = ingest_json(&data, &[log.to_str().unwrap()]);
    assert_eq!(code, 0, "{s}");
    let df = read_dataset(&data);
    (s["files"][0].clone(), df)
}

fn text(df: &DataFrame, col: &str, row: usize) -> Option<String> {
    df.column(col)
        .unwrap()
        .str()
        .unwrap()
        .get(row)
        .map(str::to_string)
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

fn layouts(f: &serde_json::Value) -> Vec<(String, u64)> {
    serde_json::from_value(f["layouts"].clone()).unwrap()
}

const T: &str = "[10/Oct/2023:13:55:36 +0000]";

#[test]
fn mixed_combined_common_vhost_and_tails_have_no_bad_lines() {
    let lines = [
        format!(r#"1.1.1.1 - - {T} "GET /a HTTP/1.1" 200 10 "-" "ua-a""#),
        format!(r#"1.1.1.2 - - {T} "GET /b HTTP/1.1" 200 11 "https://r/" "ua-b""#),
        format!(r#"1.1.1.3 - - {T} "GET /c HTTP/1.1" 200 12 "-" "ua-c""#),
        format!(r#"2.2.2.2 - - {T} "GET /common HTTP/1.0" 404 -"#),
        format!(
            r#"www.example.org:443 3.3.3.3 - bob {T} "POST /v?x=1 HTTP/2.0" 201 13 "-" "ua-v""#
        ),
        format!(
            r#"4.4.4.4 - - {T} "GET /t HTTP/1.1" 200 14 "-" "ua-t" those are random characters"#
        ),
        format!(
            r#"5.5.5.5 - - {T} "GET /x HTTP/1.1" 200 15 "-" "ua-x" host:443 (107 47us) TLSv1.3"#
        ),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (f, df) = ingest(&lines);
    assert_eq!(f["format"], "combined", "{f}");
    assert_eq!(f["bad"], 0, "{f}");
    assert_eq!(f["added"], 7, "{f}");
    assert_eq!(
        layouts(&f),
        vec![
            ("combined".to_string(), 3),
            ("combined+extras".to_string(), 2),
            ("common".to_string(), 1),
            ("vhost-combined".to_string(), 1),
        ]
    );
    // Exact fields of the fallback lines.
    assert_eq!(text(&df, "client", 3), s("2.2.2.2"));
    assert_eq!(text(&df, "path", 3), s("/common"));
    assert_eq!(text(&df, "protocol", 3), s("HTTP/1.0"));
    assert_eq!(text(&df, "user_agent", 3), None);
    assert_eq!(
        df.column("status").unwrap().i32().unwrap().get(3),
        Some(404)
    );
    assert_eq!(df.column("bytes").unwrap().i64().unwrap().get(3), None);
    assert_eq!(text(&df, "host", 4), s("www.example.org"));
    assert_eq!(text(&df, "client", 4), s("3.3.3.3"));
    assert_eq!(text(&df, "user", 4), s("bob"));
    assert_eq!(text(&df, "method", 4), s("POST"));
    assert_eq!(text(&df, "query", 4), s("x=1"));
    // The unquoted tail is dropped (there is no column for it).
    assert_eq!(text(&df, "user_agent", 5), s("ua-t"));
    assert_eq!(text(&df, "user_agent", 6), s("ua-x"));
    assert_eq!(df.column("bytes").unwrap().i64().unwrap().get(6), Some(15));
}

#[test]
fn common_file_with_combined_lines() {
    let lines = [
        format!(r#"1.1.1.1 - - {T} "GET /a HTTP/1.0" 200 10"#),
        format!(r#"1.1.1.2 - - {T} "GET /b HTTP/1.0" 200 11"#),
        format!(r#"1.1.1.3 - - {T} "GET /c HTTP/1.0" 200 12"#),
        format!(r#"1.1.1.4 - - {T} "GET /d HTTP/1.0" 200 13 "-" "curl/8""#),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (f, df) = ingest(&lines);
    assert_eq!(f["format"], "common", "{f}");
    assert_eq!(f["bad"], 0, "{f}");
    assert_eq!(
        layouts(&f),
        vec![("common".to_string(), 3), ("combined".to_string(), 1)]
    );
    assert_eq!(text(&df, "user_agent", 3), s("curl/8"));
}

#[test]
fn client_lists_unquoted_and_quoted() {
    let lines = [
        format!(r#"10.0.0.2, 10.0.0.1, 127.0.0.1 - - {T} "GET /l1 HTTP/1.1" 200 1 "-" "ua""#),
        format!(r#"10.0.0.2, 8.8.8.8, 10.0.0.1 - - {T} "GET /l2 HTTP/1.1" 200 1 "-" "ua""#),
        format!(
            r#""10.5.102.222, 175.16.199.1" 10.2.1.185 - - {T} "GET /l3 HTTP/1.1" 200 1 "-" "Amazon CloudFront""#
        ),
        format!(r#"9.9.9.9 - - {T} "GET /plain HTTP/1.1" 200 1 "-" "ua""#),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (f, df) = ingest(&lines);
    assert_eq!(f["bad"], 0, "{f}");
    assert_eq!(f["added"], 4, "{f}");
    // No public address: the first one.
    assert_eq!(text(&df, "client", 0), s("10.0.0.2"));
    assert_eq!(text(&df, "xff", 0), s("10.0.0.2, 10.0.0.1, 127.0.0.1"));
    // The first public address.
    assert_eq!(text(&df, "client", 1), s("8.8.8.8"));
    assert_eq!(text(&df, "xff", 1), s("10.0.0.2, 8.8.8.8, 10.0.0.1"));
    assert_eq!(text(&df, "client", 2), s("175.16.199.1"));
    assert_eq!(text(&df, "xff", 2), s("10.5.102.222, 175.16.199.1"));
    assert_eq!(text(&df, "user_agent", 2), s("Amazon CloudFront"));
    assert_eq!(text(&df, "path", 2), s("/l3"));
    assert!(df.column("ip_lo").unwrap().i64().unwrap().get(2).is_some());
    assert_eq!(text(&df, "xff", 3), None);
}

#[test]
fn user_with_a_space_and_leading_space() {
    let lines = [
        format!(r#"1.2.3.4 - john doe {T} "GET /j HTTP/1.1" 200 5 "-" "ua""#),
        format!(r#"1.2.3.5 - - {T} "GET /k HTTP/1.1" 200 5 "-" "ua""#),
        format!(r#" 1.2.3.6 - - {T} "GET /lead HTTP/1.1" 200 5 "-" "ua""#),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (f, df) = ingest(&lines);
    assert_eq!(f["format"], "combined", "{f}");
    assert_eq!(f["bad"], 0, "{f}");
    assert_eq!(text(&df, "client", 0), s("1.2.3.4"));
    assert_eq!(text(&df, "user", 0), s("john doe"));
    assert_eq!(text(&df, "host", 0), None);
    assert_eq!(text(&df, "client", 2), s("1.2.3.6"));
    assert_eq!(text(&df, "path", 2), s("/lead"));
}

#[test]
fn john_doe_alone_is_combined_not_vhost() {
    // Every line reads as vhost-combined with client `-`; a reading with a real
    // address must win (detection said vhost-combined, confidence 1.0).
    let line = format!(r#"1.2.3.4 - john doe {T} "GET /j HTTP/1.1" 200 5 "-" "ua""#);
    let (f, df) = ingest(&[&line, &line]);
    assert_eq!(f["format"], "combined", "{f}");
    assert_eq!(text(&df, "client", 0), s("1.2.3.4"));
    assert_eq!(text(&df, "user", 1), s("john doe"));
}

#[test]
fn requests_that_are_not_http_are_kept_with_method_null() {
    let lines = [
        format!(r#"1.1.1.1 - - {T} "GET / HTTP/1.1" 200 5 "-" "ua""#),
        format!(r#"1.1.1.2 - - {T} "hello" 400 150 "-" "-""#),
        format!(r#"1.1.1.3 - - {T} "\x16\x03\x01\x00\xF4\x01\x00\x00" 400 157 "-" "-""#),
        format!(r#"1.1.1.4 - - {T} "-" 408 0 "-" "-""#),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (f, df) = ingest(&lines);
    assert_eq!(f["bad"], 0, "{f}");
    assert_eq!(f["added"], 4, "{f}");
    assert_eq!(text(&df, "method", 0), s("GET"));
    for row in 1..4 {
        assert_eq!(text(&df, "method", row), None, "row {row}");
        assert_eq!(text(&df, "protocol", row), None, "row {row}");
        assert_eq!(text(&df, "query", row), None, "row {row}");
    }
    // The text in `request`, the path null (format 4).
    assert_eq!(text(&df, "request", 0), None);
    assert_eq!(text(&df, "request", 1), s("hello"));
    assert_eq!(text(&df, "path", 1), None);
    // The raw request as the server wrote it.
    assert_eq!(
        text(&df, "request", 2),
        s(r"\x16\x03\x01\x00\xF4\x01\x00\x00")
    );
    assert_eq!(text(&df, "path", 2), None);
    // `-`: no request logged at all.
    assert_eq!(text(&df, "path", 3), None);
    assert_eq!(text(&df, "request", 3), None);
    let status = df.column("status").unwrap().i32().unwrap();
    assert_eq!(status.get(3), Some(408));
}

/// nginx's `main` format (combined + `"$http_x_forwarded_for"`) among combined lines,
/// a format with one identity field, the request time before the referer, and a client
/// list followed by the connecting address: no bad line, each field where it belongs.
#[test]
fn xff_extra_one_identity_rt_mid_and_list_then_peer() {
    let lines = [
        format!(r#"10.0.0.5 - - {T} "GET /a HTTP/1.1" 200 10 "-" "ua-a""#),
        format!(r#"10.0.0.5 - - {T} "GET /b HTTP/1.1" 200 11 "-" "ua-b" "203.0.113.9, 10.0.0.1""#),
        format!(r#"10.0.0.5 - - {T} "GET /c HTTP/1.1" 200 12 "-" "ua-c" "-""#),
        format!(r#"10.0.0.5 - - {T} "GET /d HTTP/1.1" 200 13 "-" "ua-d" "not an address""#),
        format!(r#"192.0.2.10 - {T} "GET /one-id HTTP/1.1" 200 14 "-" "curl/8.5.0""#),
        format!(r#"192.0.2.11 - - {T} "GET /big.pdf HTTP/1.1" 206 33973115 0.202 "-" "ua-rt""#),
        format!(
            r#"2001:db8::7, 10.225.192.17 10.2.2.121 - - {T} "GET /list HTTP/1.1" 404 8571 "-" "ua-l""#
        ),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (f, df) = ingest(&lines);
    assert_eq!(f["format"], "combined", "{f}");
    assert_eq!(df.height(), 7, "{f}");
    let path_row = |p: &str| {
        (0..df.height())
            .find(|r| text(&df, "path", *r).as_deref() == Some(p))
            .unwrap()
    };
    assert_eq!(text(&df, "xff", path_row("/b")), s("203.0.113.9, 10.0.0.1"));
    assert_eq!(text(&df, "xff", path_row("/c")), None);
    assert_eq!(
        text(&df, "xff", path_row("/d")),
        None,
        "not a list of addresses"
    );
    let r = path_row("/one-id");
    assert_eq!(text(&df, "client", r), s("192.0.2.10"));
    assert_eq!(text(&df, "user_agent", r), s("curl/8.5.0"));
    let r = path_row("/big.pdf");
    assert_eq!(text(&df, "user_agent", r), s("ua-rt"));
    let rt = df.column("request_time_us").unwrap().get(r).unwrap();
    assert_eq!(rt.extract::<i64>(), Some(202_000));
    let r = path_row("/list");
    assert_eq!(text(&df, "client", r), s("2001:db8::7"));
    assert_eq!(text(&df, "xff", r), s("2001:db8::7, 10.225.192.17"));
    let l = layouts(&f);
    for name in ["combined-one-identity", "combined-rt-mid"] {
        assert!(l.iter().any(|(n, c)| n == name && *c == 1), "{name}: {l:?}");
    }
}

/// Files of one odd line, which no format recognises as it is, are recognised through
/// the fallback layouts and read with the right fields.
#[test]
fn a_file_of_one_odd_line_is_recognised_through_the_layouts() {
    let cases = [
        (
            format!(
                r#"example.com:443 1.2.3.4 - - {T} "GET /a?b=1 HTTP/1.1" 200 7 "https://r/" "ua" 116075"#
            ),
            "vhost-combined+extras",
            ("1.2.3.4", s("example.com"), s("https://r/"), s("ua")),
        ),
        (
            format!(r#"1.2.3.5 - - {T} "GET /a?b=1 HTTP/1.1" 200 7 - -"#),
            "common+extras",
            ("1.2.3.5", None, None, None),
        ),
        (
            format!(r#"1.2.3.6 - - {T} "GET /a?b=1 HTTP/1.1" 200 7 "-" "ua" - 115052 5.6.7.8"#),
            "combined+extras",
            ("1.2.3.6", None, None, s("ua")),
        ),
        (
            format!(
                r#"[httpd] 1.2.3.7 - - {T} "GET /a?b=1 HTTP/1.1" 200 7 "-" "ua" 8a3806f1-3220-11e6-8006-000000000000 988"#
            ),
            "tagged-combined+extras",
            ("1.2.3.7", None, None, s("ua")),
        ),
    ];
    for (line, layout, (client, host, referer, ua)) in cases {
        let (f, df) = ingest(&[line.as_str()]);
        assert_eq!(f["format"], "combined", "{line}: {f}");
        assert_eq!(layouts(&f), vec![(layout.to_string(), 1)], "{line}");
        assert_eq!(text(&df, "client", 0), s(client), "{line}");
        assert_eq!(text(&df, "host", 0), host, "{line}");
        assert_eq!(text(&df, "referer", 0), referer, "{line}");
        assert_eq!(text(&df, "user_agent", 0), ua, "{line}");
        assert_eq!(text(&df, "path", 0), s("/a"), "{line}");
        assert_eq!(text(&df, "query", 0), s("b=1"), "{line}");
        assert_eq!(
            df.column("bytes").unwrap().i64().unwrap().get(0),
            Some(7),
            "{line}"
        );
    }
}
