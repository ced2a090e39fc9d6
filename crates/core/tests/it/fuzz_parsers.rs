//! Fuzz targets (stable toolchain, proptest-driven mutation) for every line parser, the
//! format-string compilers, the timestamp parsers and the whole read → detect → parse
//! pipeline. Each target starts from valid sample lines and mutates them (bit flips,
//! hostile byte insertions, truncation, duplication, splicing, very long runs); it asserts
//! no panic and that every line is a record or a bad line with a reason, never both.
//!
//! Deterministic by default (fixed seed, fixed case counts sized for CI). Run longer with
//! `LOGSCOPE_FUZZ_SCALE=10` (cases × 10) and another seed with `LOGSCOPE_FUZZ_SEED=N`. A
//! failure prints the minimal input, escaped (`b"…"`).

use std::fmt;
use std::io::Write;
use std::ops::ControlFlow;
use std::sync::OnceLock;

use logscope_core::batch::Batch;
use logscope_core::parse::{Format, LineParser, NETNEA_FORMAT, ParseOptions, detect};
use logscope_core::pipeline::{self, PipelineOptions};
use logscope_core::source::{Input, ReadOptions, Reader};
use logscope_core::time;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;

use crate::fuzz_common::fuzz;

// ---------------------------------------------------------------------------------------
// Harness

/// The run's configuration: `ci_cases` × `LOGSCOPE_FUZZ_SCALE`, fixed seed.
/// Bytes shown escaped in failure reports.
#[derive(Clone, PartialEq, Eq)]
struct Line(Vec<u8>);

impl fmt::Debug for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("b\"")?;
        let mut rest = &self.0[..];
        while let Some(&b) = rest.first() {
            let run = rest.iter().take_while(|&&c| c == b).count();
            if run >= 16 {
                // Long runs (very long fields) shown as `{'9' x 70000}`.
                write!(f, "{{'{}' x {run}}}", std::ascii::escape_default(b))?;
            } else {
                for _ in 0..run {
                    write!(f, "{}", std::ascii::escape_default(b))?;
                }
            }
            rest = &rest[run..];
        }
        write!(f, "\" ({} bytes)", self.0.len())
    }
}

// ---------------------------------------------------------------------------------------
// Seeds: valid sample lines of every format (from fixtures/logs and parse/tests.rs).

const COMBINED: &str = r#"83.149.9.216 - - [17/May/2015:10:05:03 +0000] "GET /presentations/kibana-search.png?a=1&b HTTP/1.1" 200 203023 "http://semicomplete.com/presentations/" "Mozilla/5.0 (Macintosh)""#;

fn fixture(rel: &str) -> Vec<u8> {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/");
    std::fs::read(format!("{p}{rel}")).unwrap_or_else(|e| panic!("fixture {rel}: {e}"))
}

fn fixture_lines(rel: &str, n: usize) -> Vec<Vec<u8>> {
    fixture(rel)
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .take(n)
        .map(<[u8]>::to_vec)
        .collect()
}

/// One fuzzed format: how to build it, its seed lines and (W3C) the header lines its
/// parser must see first.
struct Target {
    name: &'static str,
    format: Format,
    seeds: Vec<Vec<u8>>,
    header: Vec<Vec<u8>>,
}

fn lines(v: &[&str]) -> Vec<Vec<u8>> {
    v.iter().map(|s| s.as_bytes().to_vec()).collect()
}

fn nginx_rt() -> Format {
    Format::nginx(r#"log_format main '$remote_addr - $remote_user [$time_local] "$request" '
                          '$status $body_bytes_sent "$http_referer" "$http_user_agent" $request_time';"#).unwrap()
}

fn targets() -> &'static [Target] {
    static T: OnceLock<Vec<Target>> = OnceLock::new();
    T.get_or_init(build_targets)
}

fn build_targets() -> Vec<Target> {
    let mut combined = lines(&[
        COMBINED,
        r#"1.2.3.4 - bob [17/May/2015:10:05:03 +0000] "HEAD / HTTP/1.0" 304 - "-" "curl""#,
        r#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /a\"b HTTP/1.1" 200 1 "-" "Mozilla \"quoted\" x""#,
        r#"2001:41d0:8:f69::1 - - [25/Oct/2015:04:11:25 +0100] "GET / HTTP/1.1" 200 1 "-" "-""#,
        r#""192.168.4.25 - - [22/Dec/2016:16:11:41 +0300] "POST /x HTTP/1.1" 303 382 "ref" "ua"""#,
        r#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1 "-" "-" "curl/7.54.0" "x""#,
        r#"54.36.149.41 - - [22/Jan/2019:03:56:14 +0330] "" 400 0 "-" "-""#,
    ]);
    combined.push(
        b"1.2.3.4 - - [17/May/2015:10:05:03 +0000] \"SEARCH /\x90\x02\xff HTTP/1.1\" 414 1 \"-\" \"\xfe\""
            .to_vec(),
    );
    combined.extend(fixture_lines("logs/basjes-hackers-access.log", 3));
    combined.extend(fixture_lines("logs/elastic-apache.log", 2));
    combined.extend(fixture_lines("logs/erddap/tomcat-access.log.1", 2));
    let common = lines(&[
        r#"uplherc.upl.com - - [01/Aug/1995:00:00:07 -0400] "GET / HTTP/1.0" 304 0"#,
        r#"in24.inetnebr.com - - [01/Aug/1995:00:00:01 -0400] "GET /shuttle/missions/sts-68/news/sts-68-mcc-05.txt HTTP/1.0" 200 1839"#,
        r#"::1 - - [29/Feb/2024:23:59:59 -1200] "-" 408 -"#,
    ]);
    let vhost_common = lines(&[
        r#"h.example:80 1.2.3.4 - - [01/Aug/1995:00:00:07 -0400] "GET / HTTP/1.0" 304 0"#,
        r#"www.example.org 10.0.0.1 - alice [31/Dec/2023:23:59:59 +0000] "POST /login HTTP/1.1" 302 12"#,
    ]);
    let vhost_combined = lines(&[
        r#"h.example:80 1.2.3.4 - - [01/Aug/1995:00:00:07 -0400] "GET / HTTP/1.0" 304 0 "-" "-""#,
        r#"www.example.org:443 10.0.0.1 - - [17/May/2015:10:05:03 +0000] "GET /x?y HTTP/2.0" 200 5 "http://r/" "Mozilla/5.0""#,
    ]);
    let xff = vec![
        format!(r#"{COMBINED} "10.0.0.1, 10.0.0.2""#).into_bytes(),
        format!(r#"{COMBINED} "-""#).into_bytes(),
        format!(r#"{COMBINED} "::1" "extra""#).into_bytes(),
    ];
    let rt = vec![
        format!("{COMBINED} 0.250").into_bytes(),
        format!("{COMBINED} 0.000").into_bytes(),
        format!("{COMBINED} 12345.678").into_bytes(),
    ];
    let us = vec![
        format!("{COMBINED} 5123").into_bytes(),
        format!("{COMBINED} 0").into_bytes(),
    ];
    let msec = lines(&[
        r#"127.0.12.21 1795968216.117 [29/Nov/2026:16:03:36 +0000] "GET /net24/item/294?rid=F000000 HTTP/1.1" 200 3 "-" "DistCrawler/2.1" 0.000"#,
        r#"127.0.0.1 1795968216.117 [29/Nov/2026:16:03:36 +0000] "GET / HTTP/1.1" 200 3 "-" "-" 1.205"#,
    ]);
    let netnea = lines(&[
        r#"75.249.65.145 US - [2015-09-02 10:42:51.003372] "GET /cms/ HTTP/1.1" 200 7113 "-" "Googlebot" www.example.com 124.165.3.7 443 redirect-handler - + "-" Vea2i8CoAwcAADevXAgAAAAB TLSv1.2 ECDHE-RSA-AES128-GCM-SHA256 701 12118 -% 88871 803 0 0 0 0"#,
    ]);
    let mut caddy = fixture_lines("logs/caddy-mirror.json.log", 4);
    caddy.extend(lines(&[
        r#"{"ts":"2024-05-26T11:42:52.601Z","request":{"client_ip":"1.2.3.4","method":"GET","uri":"/"},"duration":"1.5ms","status":404,"size":0}"#,
        r#"{"ts":1716723772.5,"request":{"remote_addr":"[::1]:5555","method":"GET","uri":"/a?b=\u0026c\"d","headers":{"User-Agent":["x","y"],"Cookie":["REDACTED"]}},"duration":0.5,"status":200,"user_id":"alice"}"#,
    ]));
    let iis = fixture_lines("logs/iis-w3c.log", 8);
    let (w3c_header, w3c_data): (Vec<_>, Vec<_>) = iis.into_iter().partition(|l| l[0] == b'#');
    let elb = lines(&[
        r#"2015-05-13T23:39:43.945958Z my-loadbalancer 1.2.3.4:2817 10.0.0.1:80 0.000086 0.001048 0.001337 200 200 0 57 "GET https://www.example.com:443/path/index.html?a=b HTTP/1.1" "Mozilla/5.0 (X11)" DHE-RSA-AES128-SHA TLSv1.2"#,
        r#"2015-05-13T23:39:43.945958Z my-loadbalancer 192.168.131.39:2817 10.0.0.1:80 0.001069 0.000028 0.000041 - - 82 305 "- - - " "-" - -"#,
        r#"2015-05-13T23:39:43.945958Z my-loadbalancer 1.2.3.4:2817 - -1 -1 -1 504 0 0 0 "GET http://www.example.com:80/ HTTP/1.1" "-" - -"#,
    ]);
    let alb = lines(&[
        r#"https 2020-01-01T00:55:04.127531Z app/my-alb/abcdef 1.2.3.4:2817 10.0.0.1:80 0.001 -1 0.000 502 - 225 24950 "GET https://www.example.com:443/path/index.html HTTP/1.1" "curl/8" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:eu-west-1:123456789123:targetgroup/MyTargetGroup/abcdef12345 "Root=1-abcdef123-abcdef123" "www.example.com" "arn:aws:acm:eu-west-1:1234567890123:certificate/123456" 0 2020-01-01T00:55:04.023000Z "forward" "-" "-" "10.1.1.1:80" "200" "-" "-" TID_1"#,
    ]);
    let t = |name, format, seeds| Target {
        name,
        format,
        seeds,
        header: Vec::new(),
    };
    let mut out = vec![
        t("combined", Format::Combined, combined.clone()),
        t("common", Format::Common, common),
        t("vhost-combined", Format::VhostCombined, vhost_combined),
        t("vhost-common", Format::VhostCommon, vhost_common),
        t("combined-xff", Format::CombinedXff, xff),
        t("combined-rt", Format::CombinedRt, rt.clone()),
        t("combined-us", Format::CombinedUs, us.clone()),
        t("nginx-msec", Format::NginxMsec, msec),
        t("netnea", Format::Netnea, netnea.clone()),
        t("caddy-json", Format::CaddyJson, caddy),
        Target {
            name: "w3c",
            format: Format::W3c,
            seeds: w3c_data,
            header: w3c_header,
        },
        t("elb", Format::Elb, elb),
        t("alb", Format::Alb, alb),
        // Proxy and JSON-lines formats: their fixtures are the seeds.
        t("ingress-nginx", Format::IngressNginx, fixture_lines("formats/ingress-nginx.log", 9)),
        t("haproxy", Format::Haproxy, fixture_lines("formats/haproxy-httplog.log", 9)),
        t("traefik", Format::Traefik, fixture_lines("formats/traefik.log", 9)),
        t("traefik-json", Format::TraefikJson, fixture_lines("formats/traefik-json.log", 9)),
        t("envoy", Format::Envoy, fixture_lines("formats/envoy.log", 9)),
        t("nginx-json", Format::NginxJson, fixture_lines("formats/nginx-json.log", 9)),
        t("istio", Format::Istio, fixture_lines("formats/istio.log", 9)),
        t("haproxy-clf", Format::HaproxyClf, fixture_lines("formats/haproxy-clf.log", 9)),
        t("envoy-json", Format::EnvoyJson, fixture_lines("formats/envoy-json.log", 9)),
        t(
            "nginx-proxy-manager",
            Format::NginxProxyManager,
            fixture_lines("formats/nginx-proxy-manager.log", 9),
        ),
        t(
            "cri:combined",
            Format::Cri(Box::new(Format::Combined)),
            fixture_lines("formats/cri-combined.log", 9),
        ),
        t(
            "json-map-nested",
            Format::json_map("ts=ts,client=request.remote_ip,method=request.method,path=request.uri,protocol=request.proto,host=request.host,agent=request.headers.User-Agent,status=status,bytes=size,request_time=duration").unwrap(),
            fixture_lines("formats/json-nested.log", 9),
        ),
        t(
            "json-map",
            Format::json_map("ts=ts,client=ip,method=verb,path=url,status=code,bytes=size,agent=ua,referer=ref,host=vhost,request_time_ms=took_ms").unwrap(),
            fixture_lines("formats/json-map.log", 9),
        ),
        // User formats, compiled: nginx and Apache syntax.
        t("nginx:combined+rt", nginx_rt(), rt),
        t(
            "nginx:iso+host",
            Format::nginx(r#"$host $remote_addr [$time_iso8601] "$request_method $request_uri $server_protocol" $status $bytes_sent "$http_x_forwarded_for""#).unwrap(),
            lines(&[r#"ex.org 10.0.0.9 [2019-01-22T03:56:14+03:30] "POST /p?q=1 HTTP/2.0" 201 77 "1.1.1.1""#]),
        ),
        t(
            "nginx:msec",
            Format::nginx("$msec $remote_addr $status").unwrap(),
            lines(&["1700000000.123 ::1 200", "1.5 h 999"]),
        ),
        t(
            "apache:combined+D",
            Format::apache(r#"LogFormat "%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-Agent}i\" %D" combined_d"#).unwrap(),
            us,
        ),
        t("apache:netnea", Format::apache(NETNEA_FORMAT).unwrap(), netnea),
        t(
            "apache:msec+cookie",
            Format::apache(r#"%a %{msec}t "%m %U%q %H" %s %B %{ms}T "%{Cookie}i""#).unwrap(),
            lines(&[r#"1.2.3.4 1700000000123 "GET /x?y=1 HTTP/1.1" 200 5 12 "a=b""#]),
        ),
        t(
            "apache:sec",
            Format::apache("%h %{sec}t %>s %T").unwrap(),
            lines(&["h 1700000000 500 2"]),
        ),
        t(
            "apache:strftime",
            Format::apache("%{%d/%b/%Y %H:%M:%S %z}t %h %>s").unwrap(),
            lines(&["22/Jan/2019 03:56:14 +0330 1.2.3.4 200"]),
        ),
        t(
            "apache:vhost+O",
            Format::apache(r#"%v:%p %h %l %u %t "%r" %>s %O"#).unwrap(),
            lines(&[r#"v:80 1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 99"#]),
        ),
    ];
    // Every seed must be valid for its own format, or the target fuzzes nothing useful.
    for t in &mut out {
        let mut p = t.format.parser(&ParseOptions::default());
        for h in &t.header {
            let _ = p.parse(h);
        }
        for s in &t.seeds {
            match p.parse(s) {
                Ok(_) => {}
                Err(e) if e.is_skip() => {}
                Err(e) => panic!(
                    "seed of {} does not parse ({e}): {:?}",
                    t.name,
                    Line(s.clone())
                ),
            }
        }
    }
    out
}

/// Every seed line of every target (for splicing and cross-format runs).
fn pool() -> &'static [Vec<u8>] {
    static P: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    P.get_or_init(|| {
        targets()
            .iter()
            .flat_map(|t| t.header.iter().chain(&t.seeds).cloned())
            .collect()
    })
}

// ---------------------------------------------------------------------------------------
// Mutations

/// Hostile fragments: bytes and tokens that parsers special-case or mishandle.
const TOKENS: &[&[u8]] = &[
    b"\0",
    b"\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    "é".as_bytes(),
    "漢".as_bytes(),
    "\u{202e}".as_bytes(),
    b"\"",
    b"\\\"",
    b"\\",
    b"\\x22",
    b"[",
    b"]",
    b"{",
    b"}",
    b"'",
    b" ",
    b"  ",
    b"\t",
    b"\r",
    b"\x1b[31m",
    b"\x07",
    b"-",
    b":",
    b"/",
    b"?",
    b"%",
    b",",
    b".",
    b"+",
    b"#",
    b"#Fields: ",
    b"0",
    b"-1",
    b"999",
    b"1000",
    b"65536",
    b"18446744073709551616",
    b"99999999999999999999999999999999",
    b"-9223372036854775808",
    b"1e999",
    b"NaN",
    b"inf",
    b"0.",
    b".5",
    b"00:00:00",
    b"23:59:60",
    b"25:61:61",
    b"29/Feb/2023",
    b"31/Dec/9999:23:59:59 +9999",
    b"01/Jan/0000:00:00:00 -9999",
    b"9999-12-31T23:59:59.999999999Z",
    b"0000-01-01T00:00:00Z",
    b"2024-02-30T25:61:00+99:99",
    b"+2400",
    b"-0000",
    b"Jan",
    b"Foo",
    b"::ffff:1.2.3.4",
    b"fe80::1%eth0",
    b"[::1]:80",
    b"1.2.3.4:99999",
    b"\\u0000",
    b"\\ud800",
    b"\\uDBFF\\uDFFF",
    b"\\u00",
    b"null",
    b"true",
    b"[]",
    b"{}",
    b"\"ts\":",
    b"\"status\":",
    b"\"request\":{",
    b"1.7976931348623157e308",
    b"-0",
];

#[derive(Clone, Debug)]
enum Mut {
    /// XOR one byte with `1 << bit`.
    Flip(Index, u8),
    /// Overwrite one byte.
    Set(Index, u8),
    /// Insert a fragment.
    Insert(Index, Vec<u8>),
    /// Delete up to `n` bytes.
    Delete(Index, u8),
    /// Cut the line.
    Truncate(Index),
    /// Duplicate a range in place.
    Duplicate(Index, Index),
    /// Keep a prefix of this line and a suffix of another seed.
    Splice(Index, Index, Index),
    /// Insert a byte repeated `n` times (very long fields).
    Run(Index, u8, usize),
    /// Swap two bytes.
    Swap(Index, Index),
}

fn fragment() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => proptest::sample::select(TOKENS).prop_map(<[u8]>::to_vec),
        1 => proptest::collection::vec(any::<u8>(), 1..8),
    ]
}

fn mutation() -> impl Strategy<Value = Mut> {
    let run_len = prop_oneof![8 => 1usize..64, 2 => 200usize..5000, 1 => Just(70_000usize)];
    let run_byte = prop_oneof![
        Just(b'9'),
        Just(b'a'),
        Just(b' '),
        Just(b'"'),
        Just(b'\\'),
        Just(0u8),
        Just(0xffu8),
        any::<u8>()
    ];
    prop_oneof![
        3 => (any::<Index>(), 0u8..8).prop_map(|(i, b)| Mut::Flip(i, b)),
        2 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mut::Set(i, b)),
        5 => (any::<Index>(), fragment()).prop_map(|(i, f)| Mut::Insert(i, f)),
        2 => (any::<Index>(), 1u8..16).prop_map(|(i, n)| Mut::Delete(i, n)),
        2 => any::<Index>().prop_map(Mut::Truncate),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mut::Duplicate(a, b)),
        1 => (any::<Index>(), any::<Index>(), any::<Index>()).prop_map(|(a, b, c)| Mut::Splice(a, b, c)),
        1 => (any::<Index>(), run_byte, run_len).prop_map(|(i, b, n)| Mut::Run(i, b, n)),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mut::Swap(a, b)),
    ]
}

fn apply(line: &mut Vec<u8>, m: &Mut, pool: &[Vec<u8>]) {
    let pos = |i: &Index, line: &Vec<u8>| i.index(line.len() + 1);
    match m {
        Mut::Flip(i, bit) if !line.is_empty() => {
            let p = i.index(line.len());
            line[p] ^= 1 << bit;
        }
        Mut::Set(i, b) if !line.is_empty() => {
            let p = i.index(line.len());
            line[p] = *b;
        }
        Mut::Insert(i, f) => {
            let p = pos(i, line);
            line.splice(p..p, f.iter().copied());
        }
        Mut::Delete(i, n) => {
            let p = pos(i, line);
            let end = (p + *n as usize).min(line.len());
            line.drain(p..end);
        }
        Mut::Truncate(i) => {
            let p = pos(i, line);
            line.truncate(p);
        }
        Mut::Duplicate(a, b) => {
            let (mut x, mut y) = (pos(a, line), pos(b, line));
            if x > y {
                std::mem::swap(&mut x, &mut y);
            }
            let piece = line[x..y].to_vec();
            line.splice(y..y, piece);
        }
        Mut::Splice(a, which, b) if !pool.is_empty() => {
            let other = which.get(pool);
            let x = pos(a, line);
            let y = b.index(other.len() + 1);
            line.truncate(x);
            line.extend_from_slice(&other[y..]);
        }
        Mut::Run(i, b, n) => {
            let p = pos(i, line);
            line.splice(p..p, std::iter::repeat_n(*b, *n));
        }
        Mut::Swap(a, b) if !line.is_empty() => {
            let (x, y) = (a.index(line.len()), b.index(line.len()));
            line.swap(x, y);
        }
        _ => {}
    }
}

/// A seed of `seeds` with up to 8 mutations, or (rarely) random bytes.
fn mutated(seeds: &'static [Vec<u8>]) -> impl Strategy<Value = Line> {
    let from_seed =
        (any::<Index>(), proptest::collection::vec(mutation(), 0..8)).prop_map(move |(i, muts)| {
            let mut l = i.get(seeds).clone();
            for m in &muts {
                apply(&mut l, m, pool());
            }
            Line(l)
        });
    prop_oneof![
        12 => from_seed,
        1 => proptest::collection::vec(any::<u8>(), 0..400).prop_map(Line),
    ]
}

// ---------------------------------------------------------------------------------------
// Invariants

/// What a parse gave, comparable across parser instances.
#[derive(Debug, PartialEq)]
enum Outcome {
    Record {
        ts_ms: i64,
        status: u16,
        bytes: Option<u64>,
        client: Vec<u8>,
        rt: Option<u64>,
    },
    Skip,
    Bad(&'static str),
}

/// Parses `line` and checks the result: a record with sane fields, a skip, or a bad line
/// with a reason. The record is also pushed into a [`Batch`] (text conversion).
fn check_line(
    name: &str,
    p: &mut dyn LineParser,
    line: &[u8],
    batch: &mut Batch,
) -> Result<Outcome, TestCaseError> {
    match p.parse(line) {
        Ok(r) => {
            prop_assert!(r.status <= 999, "{name}: status {} accepted", r.status);
            // The parse-side window of plausible dates (time::TS_MIN_MS..TS_END_MS).
            prop_assert!(
                (time::TS_MIN_MS..time::TS_END_MS).contains(&r.ts_ms),
                "{name}: arrival {} ms is outside the plausible window",
                r.ts_ms
            );
            batch.push(&r, 1);
            Ok(Outcome::Record {
                ts_ms: r.ts_ms,
                status: r.status,
                bytes: r.bytes,
                client: r.client.to_vec(),
                rt: r.request_time_us,
            })
        }
        Err(e) if e.is_skip() => Ok(Outcome::Skip),
        Err(e) => {
            prop_assert!(!e.reason().is_empty(), "{name}: empty reason");
            prop_assert_eq!(e.to_string(), e.reason());
            Ok(Outcome::Bad(e.reason()))
        }
    }
}

/// A parser for `t` that has seen its header lines (W3C `#Fields:`).
fn ready_parser(t: &Target) -> Box<dyn LineParser> {
    let mut p = t.format.parser(&ParseOptions::default());
    for h in &t.header {
        let _ = p.parse(h);
    }
    p
}

/// The target body: a fresh parser and one whose date cache is warm from another line
/// must agree on every line.
fn run_format(t: &'static Target, cases: u32) {
    let strategy = (
        mutated(&t.seeds),
        proptest::collection::vec(mutated(pool()), 0..3),
    );
    fuzz(t.name, cases, strategy, |(line, others)| {
        let mut batch = Batch::default();
        let mut fresh = ready_parser(t);
        let a = check_line(t.name, fresh.as_mut(), &line.0, &mut batch)?;
        let mut warm = ready_parser(t);
        for o in &others {
            if !o.0.starts_with(b"#") {
                check_line(t.name, warm.as_mut(), &o.0, &mut batch)?;
            }
        }
        let b = check_line(t.name, warm.as_mut(), &line.0, &mut batch)?;
        prop_assert_eq!(a, b, "{}: a parser's state changed the result", t.name);
        Ok(())
    });
}

fn target(name: &str) -> &'static Target {
    targets()
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no target {name}"))
}

/// CI case count per format target (each case parses 2–4 lines).
const FORMAT_CASES: u32 = 600;

macro_rules! format_targets {
    ($($fn_name:ident => $name:literal),* $(,)?) => {
        $(
            #[test]
            fn $fn_name() {
                run_format(target($name), FORMAT_CASES);
            }
        )*
    };
}

format_targets! {
    fuzz_combined => "combined",
    fuzz_common => "common",
    fuzz_vhost_combined => "vhost-combined",
    fuzz_vhost_common => "vhost-common",
    fuzz_combined_xff => "combined-xff",
    fuzz_combined_rt => "combined-rt",
    fuzz_combined_us => "combined-us",
    fuzz_nginx_msec => "nginx-msec",
    fuzz_netnea => "netnea",
    fuzz_caddy_json => "caddy-json",
    fuzz_w3c => "w3c",
    fuzz_elb => "elb",
    fuzz_alb => "alb",
    fuzz_ingress_nginx => "ingress-nginx",
    fuzz_haproxy => "haproxy",
    fuzz_traefik => "traefik",
    fuzz_traefik_json => "traefik-json",
    fuzz_envoy => "envoy",
    fuzz_nginx_json => "nginx-json",
    fuzz_json_map => "json-map",
    fuzz_istio => "istio",
    fuzz_haproxy_clf => "haproxy-clf",
    fuzz_envoy_json => "envoy-json",
    fuzz_nginx_proxy_manager => "nginx-proxy-manager",
    fuzz_cri_combined => "cri:combined",
    fuzz_json_map_nested => "json-map-nested",
    fuzz_user_nginx_combined_rt => "nginx:combined+rt",
    fuzz_user_nginx_iso_host => "nginx:iso+host",
    fuzz_user_nginx_msec => "nginx:msec",
    fuzz_user_apache_combined_d => "apache:combined+D",
    fuzz_user_apache_netnea => "apache:netnea",
    fuzz_user_apache_msec_cookie => "apache:msec+cookie",
    fuzz_user_apache_sec => "apache:sec",
    fuzz_user_apache_strftime => "apache:strftime",
    fuzz_user_apache_vhost_o => "apache:vhost+O",
}

/// Every target lists a built-in format: none is left unfuzzed.
#[test]
fn every_builtin_format_has_a_target() {
    for f in Format::builtins() {
        assert!(
            targets().iter().any(|t| t.format == f),
            "no fuzz target for built-in format {}",
            f.name()
        );
    }
}

/// W3C with mutated directive lines too: `#Fields:` changes mid-file, broken headers.
#[test]
fn fuzz_w3c_directives() {
    let t = target("w3c");
    let strategy =
        proptest::collection::vec(prop_oneof![mutated(&t.header), mutated(&t.seeds)], 1..10);
    fuzz("w3c-directives", 500, strategy, |ls| {
        let mut p = Format::W3c.parser(&ParseOptions::default());
        let mut batch = Batch::default();
        for l in &ls {
            check_line("w3c", p.as_mut(), &l.0, &mut batch)?;
        }
        Ok(())
    });
}

/// Exhaustive, not random: every seed cut at every position, and every byte of every seed
/// replaced by (and preceded by) each hostile byte, through every parser.
#[test]
fn truncation_and_byte_substitution_at_every_position() {
    const BYTES: &[u8] = b"\0\xff\xc3\" []\\9-";
    let mut batch = Batch::default();
    for t in targets() {
        let mut p = ready_parser(t);
        for s in &t.seeds {
            for cut in 0..=s.len() {
                check_line(t.name, p.as_mut(), &s[..cut], &mut batch).unwrap();
            }
            let mut m = s.clone();
            for i in 0..s.len() {
                for &b in BYTES {
                    m[i] = b;
                    check_line(t.name, p.as_mut(), &m, &mut batch).unwrap();
                }
                m[i] = s[i];
            }
        }
        // Cross-format: other formats' lines, whole and cut, through this parser.
        for s in pool().iter().step_by(3) {
            for cut in (0..=s.len()).step_by(7) {
                check_line(t.name, p.as_mut(), &s[..cut], &mut batch).unwrap();
            }
        }
        batch = Batch::default();
    }
}

// ---------------------------------------------------------------------------------------
// Format-string compilers

const NGINX_TOKENS: &[&str] = &[
    "$remote_addr",
    "$remote_user",
    "$time_local",
    "$time_iso8601",
    "$msec",
    "$request",
    "$status",
    "$body_bytes_sent",
    "$bytes_sent",
    "$http_referer",
    "$http_user_agent",
    "$http_x_forwarded_for",
    "$http_cookie",
    "$http_host",
    "$host",
    "$server_name",
    "$request_time",
    "$request_method",
    "$request_uri",
    "$uri",
    "$document_uri",
    "$args",
    "$query_string",
    "$server_protocol",
    "${remote_addr}",
    "${status}x",
    "${",
    "$",
    "$$",
    "$unknown_var",
    "$http_",
    "$1",
    "log_format main ",
    "log_format ",
    "escape=json ",
    "'",
    "\"",
    ";",
    "[",
    "]",
    " ",
    " - ",
    "\\",
    "\\x22",
    "é",
    "漢字",
    "🦀",
    "\u{0}",
    "\u{1b}[31m",
    "\n",
    "{",
    "}",
    ":",
];

const APACHE_TOKENS: &[&str] = &[
    "%h",
    "%a",
    "%{c}a",
    "%l",
    "%u",
    "%t",
    "%r",
    "%>s",
    "%<s",
    "%s",
    "%b",
    "%B",
    "%O",
    "%I",
    "%D",
    "%T",
    "%{ms}T",
    "%{us}T",
    "%{s}T",
    "%{Referer}i",
    "%{User-Agent}i",
    "%{X-Forwarded-For}i",
    "%{Cookie}i",
    "%{Host}i",
    "%{%Y-%m-%d %H:%M:%S}t",
    "%{%d/%b/%Y:%H:%M:%S %z}t",
    "%{%s}t",
    "%{%F %T}t",
    "%{usec_frac}t",
    "%{msec_frac}t",
    "%{msec}t",
    "%{sec}t",
    "%{usec}t",
    "%{begin:%Y}t",
    "%{end:msec}t",
    "%{%Q}t",
    "%v",
    "%V",
    "%p",
    "%{canonical}p",
    "%A",
    "%m",
    "%U",
    "%q",
    "%H",
    "%X",
    "%R",
    "%{cookie}n",
    "%{UNIQUE_ID}e",
    "%{SSL_PROTOCOL}x",
    "%%",
    "%",
    "%{",
    "%{}",
    "%{x",
    "}",
    "%Z",
    "%400s",
    "%!200,304s",
    "%é",
    "%{é}i",
    "LogFormat \"",
    "\" combined",
    "\\\"",
    "\"",
    "'",
    " ",
    "[",
    "]",
    "é",
    "漢字",
    "🦀",
    "\u{0}",
    "\u{1b}[31m",
    "\t",
];

/// A format string: tokens of one syntax mixed with the other's, random text, or a
/// mutated valid format.
fn format_string(
    tokens: &'static [&'static str],
    valid: &'static [&'static str],
) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        10 => proptest::sample::select(tokens).prop_map(str::to_string),
        2 => proptest::sample::select(NGINX_TOKENS).prop_map(str::to_string),
        2 => proptest::sample::select(APACHE_TOKENS).prop_map(str::to_string),
        2 => "\\PC{0,4}",
        1 => any::<char>().prop_map(|c| c.to_string()),
    ];
    let soup = proptest::collection::vec(piece, 0..24).prop_map(|v| v.concat());
    let mutated_valid = (
        proptest::sample::select(valid),
        proptest::collection::vec(mutation(), 1..5),
    )
        .prop_map(|(s, muts)| {
            let mut b = s.as_bytes().to_vec();
            for m in &muts {
                apply(&mut b, m, &[]);
            }
            String::from_utf8_lossy(&b).into_owned()
        });
    prop_oneof![3 => soup, 2 => mutated_valid]
}

const VALID_NGINX: &[&str] = &[
    r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_time"#,
    r#"log_format main '$remote_addr - $remote_user [$time_local] "$request" ' '$status $body_bytes_sent';"#,
    r#"$host $remote_addr [$time_iso8601] "$request_method $request_uri $server_protocol" $status $bytes_sent "$http_x_forwarded_for""#,
    "$msec $remote_addr $status",
];

const VALID_APACHE: &[&str] = &[
    r#"%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i" %D"#,
    r#"LogFormat "%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-Agent}i\"" combined"#,
    r#"%a %{msec}t "%m %U%q %H" %s %B %{ms}T "%{Cookie}i""#,
    "%{%d/%b/%Y %H:%M:%S %z}t %h %>s",
    NETNEA_FORMAT,
];

/// Compiles `s` every way a user can give it; each must be `Ok` or `Err`. What compiles
/// must be named back (`Format::from_name(f.name())`) and parse lines without panicking.
fn compile_all(s: &str) -> Result<(), TestCaseError> {
    let results = [
        ("nginx", Format::nginx(s)),
        ("apache", Format::apache(s)),
        ("--format nginx:", Format::from_name(&format!("nginx:{s}"))),
        (
            "--format apache:'…'",
            Format::from_name(&format!("apache:'{s}'")),
        ),
        ("--format", Format::from_name(s)),
    ];
    for (how, r) in results {
        match r {
            Ok(f) => {
                let name = f.name();
                // A source with a `'` inside is not named back (reported; see fuzz.md).
                prop_assert!(
                    s.contains('\'') || Format::from_name(&name).is_ok(),
                    "{how}: {name:?} compiled but its name does not"
                );
                let mut p = f.parser(&ParseOptions::default());
                let mut batch = Batch::default();
                for l in pool().iter().step_by(2) {
                    check_line(how, p.as_mut(), l, &mut batch)?;
                }
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
    Ok(())
}

#[test]
fn fuzz_nginx_log_format_compiler() {
    fuzz(
        "nginx log_format",
        800,
        format_string(NGINX_TOKENS, VALID_NGINX),
        |s| compile_all(&s),
    );
}

#[test]
fn fuzz_apache_log_format_compiler() {
    fuzz(
        "apache LogFormat",
        800,
        format_string(APACHE_TOKENS, VALID_APACHE),
        |s| compile_all(&s),
    );
}

/// Format names as typed to `--format`: known names with hostile bytes around them.
#[test]
fn fuzz_format_names() {
    let names: Vec<String> = Format::builtins().iter().map(Format::name).collect();
    let names: &'static [String] = Box::leak(names.into_boxed_slice());
    let strategy = (
        proptest::sample::select(names),
        proptest::collection::vec(mutation(), 0..4),
    )
        .prop_map(|(n, muts)| {
            let mut b = n.into_bytes();
            for m in &muts {
                apply(&mut b, m, &[]);
            }
            String::from_utf8_lossy(&b).into_owned()
        });
    fuzz("format names", 600, strategy, |s| {
        if let Err(e) = Format::from_name(&s) {
            prop_assert!(!e.to_string().is_empty());
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------
// Timestamp parsers (time.rs)

#[test]
fn fuzz_timestamp_parsers() {
    let seeds: &'static [Vec<u8>] = Box::leak(
        [
            "10/Oct/2000:13:55:36 -0700",
            "29/Feb/2024:23:59:59 +1400",
            "2015-09-02 10:42:51.003372",
            "2019-01-22T03:56:14+03:30",
            "2024-05-26T11:42:52.601Z",
            "2015-05-13T23:39:43.945958Z",
            "1795968216.117",
            "1700000000123",
            "+0000",
            "-04:00",
            "0.000086",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect::<Vec<_>>()
        .into_boxed_slice(),
    );
    fuzz("timestamps", 1500, mutated(seeds), |l| {
        let b = &l.0;
        let mut clf = time::ClfTime::new();
        let first = clf.parse(b);
        prop_assert_eq!(clf.parse(b), first, "the CLF cache changed the result");
        let _ = time::parse_offset(b);
        let _ = time::parse_uint(b);
        let _ = time::parse_decimal_micros(b);
        if let Some(t) = time::parse_iso8601(b) {
            let _ = t.utc_us(0);
            let _ = t.utc_us(-86_399);
        }
        if let Some(ms) = time::parse_rfc3339_ms(b)
            && (time::TS_MIN_MS..time::TS_END_MS).contains(&ms)
        {
            prop_assert_eq!(
                time::parse_rfc3339_ms(time::format_rfc3339_ms(ms).as_bytes()),
                Some(ms)
            );
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------
// Whole files: detection and the pipeline

/// A small mutated log file and how to read it.
#[derive(Debug)]
struct FileCase {
    content: Line,
    compression: u8,
    damage: Option<(Index, u8)>,
    mapped: bool,
    chunk_size: usize,
    max_line: usize,
    threads: usize,
    target: usize,
}

fn file_case() -> impl Strategy<Value = FileCase> {
    let n = targets().len();
    (
        0..n,
        proptest::collection::vec(
            (
                any::<Index>(),
                proptest::collection::vec(mutation(), 0..3),
                0u8..10,
            ),
            0..40,
        ),
        prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
        any::<bool>(),
        (
            0u8..6,
            proptest::option::weighted(0.3, (any::<Index>(), any::<u8>())),
        ),
        any::<bool>(),
        (
            16usize..4096,
            prop_oneof![3 => 100usize..4096, 1 => 1usize..200],
            1usize..4,
        ),
    )
        .prop_map(
            |(
                target,
                lines,
                eol,
                final_eol,
                (comp, damage),
                mapped,
                (chunk_size, max_line, threads),
            )| {
                let t = &targets()[target];
                let mut out = Vec::new();
                for h in &t.header {
                    out.extend_from_slice(h);
                    out.extend_from_slice(eol.as_bytes());
                }
                for (i, muts, kind) in &lines {
                    let mut l = match kind {
                        0 => Vec::new(),
                        1 => b"   \t".to_vec(),
                        _ => i.get(&t.seeds).clone(),
                    };
                    for m in muts {
                        apply(&mut l, m, pool());
                    }
                    out.extend_from_slice(&l);
                    out.extend_from_slice(eol.as_bytes());
                }
                if !final_eol {
                    out.truncate(out.len().saturating_sub(eol.len()));
                }
                FileCase {
                    content: Line(out),
                    // 0–3 plain, 4 gzip, 5 zstd
                    compression: comp.saturating_sub(3),
                    damage,
                    mapped,
                    chunk_size,
                    max_line,
                    threads,
                    target,
                }
            },
        )
}

fn encode(case: &FileCase) -> Vec<u8> {
    let data = &case.content.0;
    let mut raw = match case.compression {
        1 => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        2 => zstd::encode_all(&data[..], 1).unwrap(),
        _ => data.clone(),
    };
    if case.compression > 0
        && let Some((i, x)) = &case.damage
        && !raw.is_empty()
    {
        // Damage a compressed stream: flip a byte, or cut it there.
        let p = i.index(raw.len());
        if *x < 128 {
            raw[p] ^= x | 1;
        } else {
            raw.truncate(p);
        }
    }
    raw
}

/// Lines the content holds: terminated ones, plus an unterminated last fragment (which a
/// reader may deliver or keep back for a later resume). Lines end with `\n`; a file with
/// `\r` but no `\n` may be read as CR-only (the reader decides from its head).
fn line_bounds(data: &[u8]) -> (u64, u64) {
    let count = |t: u8| {
        let terminated = data.iter().filter(|&&b| b == t).count() as u64;
        let fragment = u64::from(!data.is_empty() && !data.ends_with(&[t]));
        (terminated, terminated + fragment)
    };
    let (lo, hi) = count(b'\n');
    if data.contains(&b'\n') {
        return (lo, hi);
    }
    let (lo_cr, hi_cr) = count(b'\r');
    (lo.min(lo_cr), hi.max(hi_cr))
}

#[test]
fn fuzz_files_through_detection_and_pipeline() {
    fuzz("pipeline", 250, file_case(), |case| {
        let raw = encode(&case);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.log");
        let opts = ReadOptions {
            chunk_size: case.chunk_size,
            max_line: case.max_line,
            window: 4096 * (1 + case.chunk_size / 4096),
            ..ReadOptions::default()
        };
        let open = || -> Reader {
            if case.mapped || case.compression > 0 {
                std::fs::write(&path, &raw).unwrap();
                Reader::open(&Input::Path(path.clone()), opts.clone()).unwrap()
            } else {
                Reader::from_stream(
                    "mem".into(),
                    Box::new(std::io::Cursor::new(raw.clone())),
                    opts.clone(),
                )
                .unwrap()
            }
        };
        // Detection on the head's lines, as ingest does.
        let mut reader = open();
        let head: Vec<u8> = reader.peek_head().unwrap_or_default();
        let sample: Vec<&[u8]> = head
            .split(|&b| b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .filter(|l| l.len() <= 8192)
            .take(200)
            .collect();
        let format = match detect(&sample) {
            Some(d) => {
                prop_assert!(
                    d.matched <= sample.len(),
                    "{} matched of {} lines",
                    d.matched,
                    sample.len()
                );
                prop_assert!(
                    (0.0..=1.0).contains(&d.confidence),
                    "confidence {}",
                    d.confidence
                );
                d.format
            }
            None => targets()[case.target].format.clone(),
        };
        let popts = PipelineOptions {
            threads: case.threads,
            read: opts.clone(),
            ..PipelineOptions::default()
        };
        let (mut lines, mut records, mut bad, mut skipped) = (0u64, 0u64, 0u64, 0u64);
        let mut last_line = 0u64;
        let mut order_ok = true;
        let mut reasons_ok = true;
        let stats = pipeline::run(reader, &format, &popts, |b| {
            lines += b.lines;
            records += b.len() as u64;
            bad += b.bad.len() as u64;
            skipped += b.skipped;
            for &n in &b.line {
                order_ok &= n > last_line || last_line == 0;
                last_line = last_line.max(n);
            }
            reasons_ok &= b.bad.iter().all(|x| !x.reason.is_empty() && x.line >= 1);
            ControlFlow::Continue(())
        });
        let stats = match stats {
            Ok(s) => s,
            // An input that cannot be read at all (a stream damaged before any line).
            Err(e) => {
                prop_assert!(!e.to_string().is_empty());
                return Ok(());
            }
        };
        prop_assert!(reasons_ok, "a bad line without a reason or a line number");
        prop_assert_eq!(
            stats.lines,
            stats.records + stats.bad + stats.skipped,
            "stats: {:?}",
            stats
        );
        prop_assert_eq!(
            (stats.lines, stats.records, stats.bad, stats.skipped),
            (lines, records, bad, skipped)
        );
        prop_assert!(order_ok, "records out of line order");
        if case.compression == 0 || case.damage.is_none() {
            let (lo, hi) = line_bounds(&case.content.0);
            prop_assert!(
                (lo..=hi).contains(&stats.lines),
                "{} lines read from a file of {lo}..={hi} lines",
                stats.lines
            );
            prop_assert!(
                stats.damage.is_none(),
                "intact input reported damaged: {:?}",
                stats.damage
            );
        }
        Ok(())
    });
}
