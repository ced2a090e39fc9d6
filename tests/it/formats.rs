//! The proxy and JSON-lines formats through the binary: each fixture in fixtures/logs
//! is detected as its format, ingested without bad lines, and its fields stored as
//! the parser read them; `--json-map` works for ingest and for reports over files.

use polars::prelude::*;

use crate::common::{fixture, ingest_json, logscope, read_dataset};

/// (fixture, detected format, records added, lines skipped)
const CASES: &[(&str, &str, u64, u64)] = &[
    ("formats/ingress-nginx.log", "ingress-nginx", 5, 0),
    ("formats/haproxy-httplog.log", "haproxy", 5, 1),
    ("formats/traefik.log", "traefik", 3, 0),
    ("formats/traefik-json.log", "traefik-json", 2, 0),
    ("formats/envoy.log", "envoy", 3, 1),
    ("formats/nginx-json.log", "nginx-json", 3, 0),
    ("formats/istio.log", "istio", 4, 1),
    ("formats/haproxy-clf.log", "haproxy-clf", 3, 1),
    ("formats/envoy-json.log", "envoy-json", 2, 0),
    (
        "formats/nginx-proxy-manager.log",
        "nginx-proxy-manager",
        6,
        0,
    ),
    ("formats/cri-combined.log", "cri:combined", 3, 0),
];

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

#[test]
fn each_new_format_is_detected_and_ingested_whole() {
    for (file, format, added, skipped) in CASES {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        let (s, code) = ingest_json(&data, &[fixture(file).to_str().unwrap()]);
        assert_eq!(code, 0, "{file}: {s}");
        let f = &s["files"][0];
        assert_eq!(f["format"], *format, "{file}: {s}");
        assert_eq!(f["confidence"], 1.0, "{file}: {s}");
        assert_eq!(s["added"], *added, "{file}: {s}");
        assert_eq!(s["bad"], 0, "{file}: {s}");
        assert_eq!(s["skipped"], *skipped, "{file}: {s}");
        let out = logscope(&data)
            .args(["detect", fixture(file).to_str().unwrap()])
            .output()
            .unwrap();
        let say = String::from_utf8_lossy(&out.stdout);
        assert!(say.contains(format), "{file}: detect said {say}");
    }
}

#[test]
fn stored_fields_of_ingress_haproxy_and_envoy() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let files = [
        "formats/ingress-nginx.log",
        "formats/haproxy-httplog.log",
        "formats/envoy.log",
    ]
    .map(|f| fixture(f).to_str().unwrap().to_string());
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    let (s, code) = ingest_json(&data, &args);
    assert_eq!((code, &s["added"]), (0, &serde_json::json!(13)), "{s}");
    let df = read_dataset(&data);
    // Rows sorted by (file, line): envoy (3), haproxy (5), ingress (5).
    let find = |file: &str, line: i64| {
        (0..df.height())
            .find(|&r| {
                text(&df, "file", r).unwrap().ends_with(file) && int(&df, "line", r) == Some(line)
            })
            .unwrap_or_else(|| panic!("{file}:{line} not stored"))
    };
    // ingress-nginx, an upstream list: 0.120 s, arrival = completion − request time.
    let r = find("ingress-nginx.log", 2);
    assert_eq!(text(&df, "client", r).as_deref(), Some("203.0.113.9"));
    assert_eq!(text(&df, "user", r).as_deref(), Some("alice"));
    assert_eq!(text(&df, "path", r).as_deref(), Some("/login"));
    assert_eq!(int(&df, "status", r), Some(302));
    assert_eq!(int(&df, "request_time_us", r), Some(120_000));
    // 2024-03-22T10:01:02.880Z
    assert_eq!(int(&df, "ts", r), Some(1_711_101_662_880));
    // HAProxy: syslog prefix, port dropped, Ta → request time, ms precision.
    let r = find("haproxy-httplog.log", 2);
    assert_eq!(text(&df, "client", r).as_deref(), Some("192.0.2.44"));
    assert_eq!(text(&df, "method", r).as_deref(), Some("POST"));
    assert_eq!(text(&df, "query", r).as_deref(), Some("step=pay"));
    assert_eq!(int(&df, "status", r), Some(504));
    assert_eq!(int(&df, "bytes", r), Some(194));
    assert_eq!(int(&df, "request_time_us", r), Some(5_004_000));
    // Envoy: client = first X-Forwarded-For address, the header kept in xff.
    let r = find("envoy.log", 2);
    assert_eq!(text(&df, "client", r).as_deref(), Some("203.0.113.9"));
    assert_eq!(
        text(&df, "xff", r).as_deref(),
        Some("203.0.113.9, 10.0.0.1")
    );
    assert_eq!(text(&df, "host", r).as_deref(), Some("shop.example"));
    assert_eq!(int(&df, "request_time_us", r), Some(37_000));
    let r = find("envoy.log", 3);
    assert_eq!(text(&df, "client", r).as_deref(), Some("-"));
}

const MAP: &str = "ts=ts,client=ip,method=verb,path=url,status=code,bytes=size,agent=ua,referer=ref,host=vhost,request_time_ms=took_ms";

#[test]
fn json_map_flag_for_ingest_and_reports() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = fixture("formats/json-map.log");
    let log = log.to_str().unwrap();
    // Not a built-in: detection refuses it; the map reads it.
    let out = logscope(&data).args(["ingest", log]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--json-map"));
    let (s, code) = ingest_json(&data, &["--json-map", MAP, log]);
    assert_eq!(code, 0, "{s}");
    assert_eq!(s["files"][0]["format"], format!("json:'{MAP}'"));
    assert_eq!((&s["added"], &s["bad"]), (&2.into(), &0.into()), "{s}");
    let df = read_dataset(&data);
    assert_eq!(text(&df, "client", 1).as_deref(), Some("2001:db8::77"));
    assert_eq!(text(&df, "method", 1).as_deref(), Some("DELETE"));
    assert_eq!(int(&df, "status", 1), Some(204));
    assert_eq!(int(&df, "bytes", 1), None);
    assert_eq!(int(&df, "request_time_us", 0), Some(42_000));
    assert_eq!(text(&df, "user_agent", 0).as_deref(), Some("okhttp/4.12.0"));
    // A report over the file with the same flag.
    let out = logscope(&data)
        .args(["agents", "--format", "json", "--json-map", MAP, log])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["all"], 2, "{v}");
    // A bad map is a usage error (exit 2) naming the column.
    let out = logscope(&data)
        .args(["ingest", "--json-map", "ts=time,stat=code", log])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--json-map") && err.contains("column 9"),
        "{err}"
    );
    // --format json:'…' is the same format.
    let out = logscope(&data)
        .args([
            "agents",
            "--format",
            "json",
            "--input-format",
            &format!("json:'{MAP}'"),
            log,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const NESTED: &str = "ts=ts,client=request.remote_ip,method=request.method,path=request.uri,protocol=request.proto,host=request.host,agent=request.headers.User-Agent,status=status,bytes=size,request_time=duration";

#[test]
fn json_map_with_nested_keys_through_the_binary() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = fixture("formats/json-nested.log");
    let log = log.to_str().unwrap();
    let (s, code) = ingest_json(&data, &["--json-map", NESTED, log]);
    assert_eq!(code, 0, "{s}");
    assert_eq!((&s["added"], &s["bad"]), (&2.into(), &0.into()), "{s}");
    let df = read_dataset(&data);
    assert_eq!(text(&df, "client", 0).as_deref(), Some("203.0.113.9"));
    assert_eq!(text(&df, "path", 0).as_deref(), Some("/products"));
    assert_eq!(text(&df, "query", 0).as_deref(), Some("q=shoes"));
    assert_eq!(text(&df, "host", 0).as_deref(), Some("shop.example"));
    // Caddy-style header lists: the first element.
    assert_eq!(text(&df, "user_agent", 0).as_deref(), Some("curl/8.5.0"));
    assert_eq!(int(&df, "request_time_us", 0), Some(12_000));
    assert_eq!(text(&df, "client", 1).as_deref(), Some("2001:db8::77"));
    assert_eq!(text(&df, "method", 1).as_deref(), Some("POST"));
    // An empty part in a key path is a usage error naming its column.
    let out = logscope(&data)
        .args([
            "ingest",
            "--json-map",
            "ts=ts,status=status,client=request..ip",
            log,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("empty part") && err.contains("column 21"),
        "{err}"
    );
}

#[test]
fn istio_and_haproxy_clf_stored_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let files = ["formats/istio.log", "formats/haproxy-clf.log"]
        .map(|f| fixture(f).to_str().unwrap().to_string());
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    let (s, code) = ingest_json(&data, &args);
    assert_eq!((code, &s["added"]), (0, &serde_json::json!(7)), "{s}");
    let df = read_dataset(&data);
    let find = |file: &str, line: i64| {
        (0..df.height())
            .find(|&r| {
                text(&df, "file", r).unwrap().ends_with(file) && int(&df, "line", r) == Some(line)
            })
            .unwrap_or_else(|| panic!("{file}:{line} not stored"))
    };
    // Istio: client from X-Forwarded-For, else the downstream remote address.
    let r = find("istio.log", 2);
    assert_eq!(text(&df, "client", r).as_deref(), Some("203.0.113.9"));
    assert_eq!(text(&df, "host", r).as_deref(), Some("shop.example"));
    assert_eq!(int(&df, "request_time_us", r), Some(31_000));
    let r = find("istio.log", 3);
    assert_eq!(text(&df, "client", r).as_deref(), Some("2001:db8::7"));
    // Response code 0 (no response was sent) is no status: null, as `-`.
    assert_eq!(int(&df, "status", r), None);
    // HAProxy clf: %trg + %ms, Ta.
    let r = find("haproxy-clf.log", 2);
    assert_eq!(text(&df, "client", r).as_deref(), Some("2001:db8::5"));
    assert_eq!(int(&df, "ts", r), Some(1_711_101_667_001));
    assert_eq!(int(&df, "request_time_us", r), Some(5_004_000));
}

/// Nginx Proxy Manager's `proxy` and `standard` lines and a CRI-prefixed (Kubernetes
/// container) combined log: the fields as stored.
#[test]
fn stored_fields_of_nginx_proxy_manager_and_cri() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let npm = fixture("formats/nginx-proxy-manager.log");
    let (s, code) = ingest_json(&data, &[npm.to_str().unwrap()]);
    assert_eq!(code, 0, "{s}");
    let df = read_dataset(&data);
    let row = |c: &str| {
        (0..df.height())
            .find(|r| text(&df, "client", *r).as_deref() == Some(c))
            .unwrap()
    };
    let r = row("2001:db8::42");
    assert_eq!(text(&df, "method", r).as_deref(), Some("POST"));
    assert_eq!(text(&df, "host", r).as_deref(), Some("api.example.org"));
    assert_eq!(
        int(&df, "status", r),
        Some(200),
        "the status after `502, 200`"
    );
    assert_eq!(int(&df, "bytes", r), Some(17));
    let r = row("203.0.113.7");
    assert_eq!(text(&df, "query", r).as_deref(), Some("dir=/Photos"));
    assert_eq!(
        text(&df, "referer", r).as_deref(),
        Some("https://cloud.example.org/")
    );
    let r = row("198.51.100.30");
    assert_eq!(text(&df, "host", r).as_deref(), Some("default.example.org"));
    assert_eq!(int(&df, "request_time_us", r), Some(1000));

    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let cri = fixture("formats/cri-combined.log");
    let (s, code) = ingest_json(&data, &[cri.to_str().unwrap()]);
    assert_eq!(code, 0, "{s}");
    let df = read_dataset(&data);
    assert_eq!(df.height(), 3);
    let users: Vec<Option<String>> = (0..3).map(|r| text(&df, "user", r)).collect();
    assert!(users.contains(&Some("alice".into())), "{users:?}");
    let agents: Vec<Option<String>> = (0..3).map(|r| text(&df, "user_agent", r)).collect();
    assert!(
        agents.contains(&Some("kube-probe/1.29".into())),
        "{agents:?}"
    );
}
