//! Table-driven tests of the parsers, per format, of user format strings and their
//! error messages, and of detection.

use super::*;
use crate::record::Precision;
use crate::time::{self, parse_rfc3339_ms};

fn ms(s: &str) -> i64 {
    parse_rfc3339_ms(s.as_bytes()).unwrap()
}

fn b(s: &str) -> Option<&[u8]> {
    Some(s.as_bytes())
}

/// Expected values of a parsed line; `None` fields are not checked.
#[derive(Default)]
struct Want<'w> {
    ts: Option<&'w str>,
    ts_ms: Option<i64>,
    precision: Option<Precision>,
    client: Option<&'w [u8]>,
    ip: Option<Option<&'w str>>,
    user: Option<Option<&'w [u8]>>,
    method: Option<Option<&'w [u8]>>,
    path: Option<Option<&'w [u8]>>,
    query: Option<Option<&'w [u8]>>,
    protocol: Option<Option<&'w [u8]>>,
    status: Option<u16>,
    bytes: Option<Option<u64>>,
    referer: Option<Option<&'w [u8]>>,
    ua: Option<Option<&'w [u8]>>,
    host: Option<Option<&'w [u8]>>,
    xff: Option<Option<&'w [u8]>>,
    rt: Option<Option<u64>>,
    cookie: Option<Option<bool>>,
}

fn check(format: &Format, opts: &ParseOptions, line: &[u8], w: &Want) {
    let mut p = format.parser(opts);
    let ctx = format!("{} | {}", format.name(), String::from_utf8_lossy(line));
    let r = p
        .parse(line)
        .unwrap_or_else(|e| panic!("{ctx}: unexpected error {e}"));
    if let Some(t) = w.ts {
        assert_eq!(r.ts_ms, ms(t), "ts {ctx}");
    }
    if let Some(t) = w.ts_ms {
        assert_eq!(r.ts_ms, t, "ts_ms {ctx}");
    }
    if let Some(p) = w.precision {
        assert_eq!(r.precision, p, "precision {ctx}");
    }
    if let Some(c) = w.client {
        assert_eq!(r.client, c, "client {ctx}");
    }
    if let Some(ip) = w.ip {
        assert_eq!(r.ip, ip.map(|s| s.parse().unwrap()), "ip {ctx}");
    }
    macro_rules! same {
        ($f:ident, $g:ident) => {
            if let Some(v) = w.$f {
                assert_eq!(r.$g, v, concat!(stringify!($g), " {}"), ctx);
            }
        };
    }
    same!(user, user);
    same!(method, method);
    same!(path, path);
    same!(query, query);
    same!(protocol, protocol);
    same!(bytes, bytes);
    same!(referer, referer);
    same!(ua, user_agent);
    same!(host, host);
    same!(xff, xff);
    same!(rt, request_time_us);
    same!(cookie, has_cookie);
    if let Some(s) = w.status {
        assert_eq!(r.status, s, "status {ctx}");
    }
}

fn err(format: &Format, line: &[u8]) -> ParseError {
    let mut p = format.parser(&ParseOptions::default());
    match p.parse(line) {
        Ok(r) => panic!(
            "{} | {}: expected an error, got {r:?}",
            format.name(),
            String::from_utf8_lossy(line)
        ),
        Err(e) => e,
    }
}

const COMBINED: &str = r#"83.149.9.216 - - [17/May/2015:10:05:03 +0000] "GET /presentations/kibana-search.png?a=1&b HTTP/1.1" 200 203023 "http://semicomplete.com/presentations/" "Mozilla/5.0 (Macintosh)""#;

#[test]
fn combined_table() {
    let o = ParseOptions::default();
    let f = Format::Combined;
    let cases: Vec<(Vec<u8>, Want)> = vec![
        (
            COMBINED.into(),
            Want {
                ts: Some("2015-05-17T10:05:03Z"),
                precision: Some(Precision::Second),
                client: Some(b"83.149.9.216"),
                ip: Some(Some("83.149.9.216")),
                user: Some(None),
                method: Some(b("GET")),
                path: Some(b("/presentations/kibana-search.png")),
                query: Some(b("a=1&b")),
                protocol: Some(b("HTTP/1.1")),
                status: Some(200),
                bytes: Some(Some(203023)),
                referer: Some(b("http://semicomplete.com/presentations/")),
                ua: Some(b("Mozilla/5.0 (Macintosh)")),
                host: Some(None),
                xff: Some(None),
                rt: Some(None),
                cookie: Some(None),
                ..Want::default()
            },
        ),
        // `-` bytes, `-` referer, user set
        (
            br#"1.2.3.4 - bob [17/May/2015:10:05:03 +0000] "HEAD / HTTP/1.0" 304 - "-" "curl""#.to_vec(),
            Want {
                bytes: Some(None),
                referer: Some(None),
                user: Some(b("bob")),
                status: Some(304),
                ..Want::default()
            },
        ),
        // no protocol; lowercase method
        (
            br#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "get /" 200 5 "-" "-""#.to_vec(),
            Want {
                method: Some(b("get")),
                path: Some(b("/")),
                protocol: Some(None),
                ua: Some(None),
                ..Want::default()
            },
        ),
        // `-` and empty request lines
        (
            br#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "-" 408 - "-" "-""#.to_vec(),
            Want {
                method: Some(None),
                path: Some(None),
                status: Some(408),
                ..Want::default()
            },
        ),
        (
            br#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "" 400 0 "-" "-""#.to_vec(),
            Want {
                method: Some(None),
                bytes: Some(Some(0)),
                ..Want::default()
            },
        ),
        // HTTP/V1.0 protocol
        (
            br#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /x HTTP/V1.0" 200 1 "-" "-""#.to_vec(),
            Want {
                protocol: Some(b("HTTP/V1.0")),
                ..Want::default()
            },
        ),
        // `\"` inside quotes (kept raw)
        (
            br#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /a\"b HTTP/1.1" 200 1 "-" "Mozilla \"quoted\" x""#.to_vec(),
            Want {
                path: Some(b(r#"/a\"b"#)),
                ua: Some(b(r#"Mozilla \"quoted\" x"#)),
                ..Want::default()
            },
        ),
        // IPv6 client
        (
            br#"2001:41d0:8:f69::1 - - [25/Oct/2015:04:11:25 +0100] "GET / HTTP/1.1" 200 1 "-" "-""#.to_vec(),
            Want {
                client: Some(b"2001:41d0:8:f69::1"),
                ip: Some(Some("2001:41d0:8:f69::1")),
                ts: Some("2015-10-25T03:11:25Z"),
                ..Want::default()
            },
        ),
        // host-name client: valid line, no IP
        (
            br#"in24.inetnebr.com - - [01/Aug/1995:00:00:01 -0400] "GET / HTTP/1.0" 200 1839 "-" "-""#.to_vec(),
            Want {
                client: Some(b"in24.inetnebr.com"),
                ip: Some(None),
                ts: Some("1995-08-01T04:00:01Z"),
                ..Want::default()
            },
        ),
        // +0330
        (
            br#"54.36.149.41 - - [22/Jan/2019:03:56:14 +0330] "GET / HTTP/1.1" 200 1 "-" "-""#.to_vec(),
            Want {
                ts_ms: Some(1_548_116_774_000),
                ..Want::default()
            },
        ),
        // −0400
        (
            br#"66.110.168.111 - - [21/Apr/2004:10:56:07 -0400] "GET / HTTP/1.1" 200 2890 "-" "-""#.to_vec(),
            Want {
                ts_ms: Some(1_082_559_367_000),
                ..Want::default()
            },
        ),
        // a stray trailing \r
        (
            format!("{COMBINED}\r").into_bytes(),
            Want {
                ua: Some(b("Mozilla/5.0 (Macintosh)")),
                ..Want::default()
            },
        ),
        // whole line wrapped in quotes (scanner-lab)
        (
            br#""192.168.4.25 - - [22/Dec/2016:16:11:41 +0300] "POST /x HTTP/1.1" 303 382 "ref" "ua"""#.to_vec(),
            Want {
                client: Some(b"192.168.4.25"),
                method: Some(b("POST")),
                referer: Some(b("ref")),
                ua: Some(b("ua")),
                ts: Some("2016-12-22T13:11:41Z"),
                ..Want::default()
            },
        ),
        // trailing extra quoted fields are accepted and ignored
        (
            br#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1 "-" "-" "curl/7.54.0" "x""#.to_vec(),
            Want {
                ua: Some(None),
                xff: Some(None),
                ..Want::default()
            },
        ),
        // non-UTF-8 bytes
        (
            b"1.2.3.4 - - [17/May/2015:10:05:03 +0000] \"SEARCH /\x90\x02\xff HTTP/1.1\" 414 1 \"-\" \"\xfe\"".to_vec(),
            Want {
                method: Some(b("SEARCH")),
                path: Some(Some(b"/\x90\x02\xff")),
                ua: Some(Some(b"\xfe")),
                status: Some(414),
                ..Want::default()
            },
        ),
    ];
    for (line, w) in &cases {
        check(&f, &o, line, w);
    }
}

#[test]
fn combined_errors() {
    let f = Format::Combined;
    let cases: &[(&[u8], ParseError)] = &[
        // Leading spaces are ignored; what is left is a quoted user agent.
        (br#" "curl/7.54.0""#, ParseError::Truncated),
        (br#""-""#, ParseError::Truncated),
        (
            br#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1 "-" "trunc"#,
            ParseError::UnterminatedQuote,
        ),
        (
            br#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET" /hostadmin/?page=' HTTP/1.0" 404 1 "-" "-""#,
            ParseError::BadStatus,
        ),
        (
            br#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 2000 1 "-" "-""#,
            ParseError::BadStatus,
        ),
        (
            br#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 x "-" "-""#,
            ParseError::BadBytes,
        ),
        (
            br#"1.2.3.4 - - [17/Foo/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1 "-" "-""#,
            ParseError::BadTimestamp,
        ),
        (
            br#"1.2.3.4 - - [17/May/2015:10:05:03] "GET / HTTP/1.1" 200 1 "-" "-""#,
            ParseError::BadTimestamp,
        ),
        (
            br#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1 "-" "-" 0.005"#,
            ParseError::TrailingData,
        ),
        (
            br#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1"#,
            ParseError::Truncated,
        ),
        (b"", ParseError::Empty),
    ];
    for (line, e) in cases {
        assert_eq!(err(&f, line), *e, "{}", String::from_utf8_lossy(line));
    }
    assert!(ParseError::Empty.is_skip());
    assert!(ParseError::Directive.is_skip());
    assert!(!ParseError::BadStatus.is_skip());
    assert_eq!(ParseError::BadTimestamp.to_string(), "bad timestamp");
    assert_eq!(ParseError::UnterminatedQuote.reason(), "unterminated quote");
}

#[test]
fn other_builtin_text_formats() {
    let o = ParseOptions::default();
    // common
    check(
        &Format::Common,
        &o,
        br#"uplherc.upl.com - - [01/Aug/1995:00:00:07 -0400] "GET / HTTP/1.0" 304 0"#,
        &Want {
            ts: Some("1995-08-01T04:00:07Z"),
            status: Some(304),
            bytes: Some(Some(0)),
            ua: Some(None),
            ..Want::default()
        },
    );
    assert_eq!(
        err(&Format::Common, COMBINED.as_bytes()),
        ParseError::TrailingData
    );
    // vhost-combined, with and without port
    for (line, host) in [
        (format!("www.example.com:443 {COMBINED}"), "www.example.com"),
        (format!("example.org {COMBINED}"), "example.org"),
    ] {
        check(
            &Format::VhostCombined,
            &o,
            line.as_bytes(),
            &Want {
                host: Some(b(host)),
                client: Some(b"83.149.9.216"),
                status: Some(200),
                ..Want::default()
            },
        );
        assert_eq!(
            err(&Format::Combined, line.as_bytes()),
            ParseError::Mismatch
        );
    }
    check(
        &Format::VhostCommon,
        &o,
        br#"h.example:80 1.2.3.4 - - [01/Aug/1995:00:00:07 -0400] "GET / HTTP/1.0" 304 0"#,
        &Want {
            host: Some(b("h.example")),
            ..Want::default()
        },
    );
    // combined-xff
    check(
        &Format::CombinedXff,
        &o,
        format!(r#"{COMBINED} "10.0.0.1, 10.0.0.2""#).as_bytes(),
        &Want {
            xff: Some(b("10.0.0.1, 10.0.0.2")),
            ..Want::default()
        },
    );
    // combined-rt: nginx completion stamp − $request_time
    check(
        &Format::CombinedRt,
        &o,
        format!("{COMBINED} 1.250").as_bytes(),
        &Want {
            ts_ms: Some(ms("2015-05-17T10:05:03Z") - 1250),
            rt: Some(Some(1_250_000)),
            precision: Some(Precision::Second),
            ..Want::default()
        },
    );
    assert_eq!(
        err(&Format::CombinedRt, format!("{COMBINED} 1250").as_bytes()),
        ParseError::BadRequestTime
    );
    // combined-us: Apache %D, %t is the arrival already
    check(
        &Format::CombinedUs,
        &o,
        format!("{COMBINED} 1250").as_bytes(),
        &Want {
            ts: Some("2015-05-17T10:05:03Z"),
            rt: Some(Some(1250)),
            ..Want::default()
        },
    );
}

#[test]
fn nginx_msec_arrival() {
    let o = ParseOptions::default();
    let f = Format::NginxMsec;
    check(
        &f,
        &o,
        br#"127.0.12.21 1795968216.117 [29/Nov/2026:16:03:36 +0000] "GET /net24/item/294?rid=F000000 HTTP/1.1" 200 3 "-" "DistCrawler/2.1" 0.000"#,
        &Want {
            ts_ms: Some(1_795_968_216_117),
            precision: Some(Precision::Milli),
            rt: Some(Some(0)),
            path: Some(b("/net24/item/294")),
            query: Some(b("rid=F000000")),
            ..Want::default()
        },
    );
    check(
        &f,
        &o,
        br#"127.0.0.1 1795968216.117 [29/Nov/2026:16:03:36 +0000] "GET / HTTP/1.1" 200 3 "-" "-" 1.205"#,
        &Want {
            ts_ms: Some(1_795_968_214_912),
            rt: Some(Some(1_205_000)),
            ..Want::default()
        },
    );
    assert_eq!(
        err(
            &f,
            br#"127.0.0.1 1795968216.117 [29/Nov/2026:16:03:36 +0000] "GET / HTTP/1.1" 200 3 "-" "-""#
        ),
        ParseError::Truncated
    );
}

#[test]
fn aws_load_balancers() {
    let o = ParseOptions::default();
    check(
        &Format::Elb,
        &o,
        br#"2015-05-13T23:39:43.945958Z my-loadbalancer 1.2.3.4:2817 10.0.0.1:80 0.000086 0.001048 0.001337 200 200 0 57 "GET https://www.example.com:443/path/index.html?a=b HTTP/1.1" "Mozilla/5.0 (X11)" DHE-RSA-AES128-SHA TLSv1.2"#,
        &Want {
            ts_ms: Some(ms("2015-05-13T23:39:43.945Z")),
            precision: Some(Precision::Micro),
            client: Some(b"1.2.3.4"),
            ip: Some(Some("1.2.3.4")),
            host: Some(b("www.example.com:443")),
            path: Some(b("/path/index.html")),
            query: Some(b("a=b")),
            status: Some(200),
            bytes: Some(Some(57)),
            rt: Some(Some(1048)),
            ua: Some(b("Mozilla/5.0 (X11)")),
            ..Want::default()
        },
    );
    assert_eq!(
        err(
            &Format::Elb,
            br#"2015-05-13T23:39:43.945958Z my-loadbalancer 192.168.131.39:2817 10.0.0.1:80 0.001069 0.000028 0.000041 - - 82 305 "- - - " "-" - -"#
        ),
        // A TCP-listener entry: no HTTP request, skipped rather than bad.
        ParseError::Directive
    );
    let alb = br#"https 2020-01-01T00:55:04.127531Z app/my-alb/abcdef 1.2.3.4:2817 10.0.0.1:80 0.001 -1 0.000 502 - 225 24950 "GET https://www.example.com:443/path/index.html HTTP/1.1" "curl/8" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:eu-west-1:123456789123:targetgroup/MyTargetGroup/abcdef12345 "Root=1-abcdef123-abcdef123" "www.example.com" "arn:aws:acm:eu-west-1:1234567890123:certificate/123456" 0 2020-01-01T00:55:04.023000Z "forward" "-" "-" "10.1.1.1:80" "200" "-" "-" TID_1"#;
    check(
        &Format::Alb,
        &o,
        alb,
        &Want {
            ts_ms: Some(ms("2020-01-01T00:55:04.023Z")),
            status: Some(502),
            rt: Some(None),
            path: Some(b("/path/index.html")),
            ..Want::default()
        },
    );
    assert_eq!(detect(&[&alb[..]]).unwrap().format, Format::Alb);
}

fn caddy_line(req: &str, top: &str) -> Vec<u8> {
    format!(
        r#"{{"level":"info","ts":1716723772.6014807,"logger":"http.log.access.log17","msg":"handled request","request":{{{req}}},"bytes_read":0,"duration":0.017557019,"size":3768,"status":200,"resp_headers":{{"Etag":["\"x\""]}}{top}}}"#
    )
    .into_bytes()
}

#[test]
fn caddy_table() {
    let o = ParseOptions::default();
    let f = Format::CaddyJson;
    let full = r#""remote_ip":"10.5.1.1","remote_port":"38574","client_ip":"10.10.10.117","proto":"HTTP/2.0","method":"GET","host":"mirrors.example:400","uri":"/a/b?x=1\u0026y=\"2\"","headers":{"Accept":["*/*"],"User-Agent":["facebookexternalhit/1.1", "second"],"Referer":["https://r.example/"],"Cookie":["REDACTED"]}"#;
    check(
        &f,
        &o,
        &caddy_line(full, r#","user_id":"alice""#),
        &Want {
            ts_ms: Some(1_716_723_772_583),
            precision: Some(Precision::Milli),
            client: Some(b"10.10.10.117"),
            ip: Some(Some("10.10.10.117")),
            method: Some(b("GET")),
            path: Some(b("/a/b")),
            query: Some(b(r#"x=1&y="2""#)),
            protocol: Some(b("HTTP/2.0")),
            host: Some(b("mirrors.example:400")),
            status: Some(200),
            bytes: Some(Some(3768)),
            ua: Some(b("facebookexternalhit/1.1")),
            referer: Some(b("https://r.example/")),
            user: Some(b("alice")),
            rt: Some(Some(17_557)),
            cookie: Some(Some(true)),
            ..Want::default()
        },
    );
    // no client_ip: fall back to remote_ip; empty user_id → None; no Cookie header
    check(
        &f,
        &o,
        &caddy_line(
            r#""remote_ip":"240e:1:1::1234","proto":"HTTP/3.0","method":"GET","host":"h","uri":"/","headers":{}"#,
            r#","user_id":"""#,
        ),
        &Want {
            client: Some(b"240e:1:1::1234"),
            ip: Some(Some("240e:1:1::1234")),
            user: Some(None),
            cookie: Some(Some(false)),
            query: Some(None),
            ua: Some(None),
            ..Want::default()
        },
    );
    // ISO ts and a Go duration string
    let iso = br#"{"ts":"2024-05-26T11:42:52.601Z","request":{"client_ip":"1.2.3.4","method":"GET","uri":"/"},"duration":"1.5ms","status":404,"size":0}"#;
    check(
        &f,
        &o,
        iso,
        &Want {
            ts_ms: Some(ms("2024-05-26T11:42:52.5995Z")),
            rt: Some(Some(1500)),
            status: Some(404),
            ..Want::default()
        },
    );
    // old Caddy: remote_addr with port
    check(
        &f,
        &o,
        br#"{"ts":1716723772.5,"request":{"remote_addr":"[::1]:5555","method":"GET","uri":"/"},"duration":0.5,"status":200}"#,
        &Want {
            client: Some(b"::1"),
            ts_ms: Some(1_716_723_772_000),
            ..Want::default()
        },
    );
    let errors: &[(&[u8], ParseError)] = &[
        (
            br#"{"level":"info","ts":1.0,"msg":"server running"}"#,
            ParseError::NotAccessLog,
        ),
        (
            br#"{"ts":1.0,"request":{"client_ip":"1.2.3.4"},"status":200"#,
            ParseError::BadJson,
        ),
        (br#"not json"#, ParseError::BadJson),
        (
            br#"{"ts":"yesterday","request":{"client_ip":"1.2.3.4"},"status":200}"#,
            ParseError::BadTimestamp,
        ),
        (
            br#"{"ts":1.0,"request":{},"status":200}"#,
            ParseError::MissingClient,
        ),
    ];
    for (l, e) in errors {
        assert_eq!(err(&f, l), *e, "{}", String::from_utf8_lossy(l));
    }
    // The parser is reused across lines (scratch arena).
    let mut p = f.parser(&o);
    for _ in 0..3 {
        let l = caddy_line(full, "");
        let r = p.parse(&l).unwrap();
        assert_eq!(r.query, b(r#"x=1&y="2""#));
    }
}

#[test]
fn user_formats() {
    let o = ParseOptions::default();
    // nginx: combined + $request_time, written as in nginx.conf
    let f = Format::nginx(
        r#"log_format main '$remote_addr - $remote_user [$time_local] "$request" '
                          '$status $body_bytes_sent "$http_referer" "$http_user_agent" $request_time';"#,
    )
    .unwrap();
    check(
        &f,
        &o,
        format!("{COMBINED} 0.250").as_bytes(),
        &Want {
            ts_ms: Some(ms("2015-05-17T10:05:03Z") - 250),
            rt: Some(Some(250_000)),
            ua: Some(b("Mozilla/5.0 (Macintosh)")),
            ..Want::default()
        },
    );
    // nginx with $time_iso8601, $host, $request_uri and $msec alone
    let f = Format::nginx(
        r#"$host $remote_addr [$time_iso8601] "$request_method $request_uri $server_protocol" $status $bytes_sent "$http_x_forwarded_for""#,
    )
    .unwrap();
    check(
        &f,
        &o,
        br#"ex.org 10.0.0.9 [2019-01-22T03:56:14+03:30] "POST /p?q=1 HTTP/2.0" 201 77 "1.1.1.1""#,
        &Want {
            ts: Some("2019-01-22T00:26:14Z"),
            host: Some(b("ex.org")),
            method: Some(b("POST")),
            path: Some(b("/p")),
            query: Some(b("q=1")),
            protocol: Some(b("HTTP/2.0")),
            bytes: Some(Some(77)),
            xff: Some(b("1.1.1.1")),
            ..Want::default()
        },
    );
    let f = Format::nginx("$msec $remote_addr $status").unwrap();
    check(
        &f,
        &o,
        b"1700000000.123 ::1 200",
        &Want {
            ts_ms: Some(1_700_000_000_123),
            precision: Some(Precision::Milli),
            ip: Some(Some("::1")),
            ..Want::default()
        },
    );
    // Apache combined + %D, pasted with config escaping
    let f = Format::apache(
        r#"LogFormat "%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-Agent}i\" %D" combined_d"#,
    )
    .unwrap();
    check(
        &f,
        &o,
        format!("{COMBINED} 5123").as_bytes(),
        &Want {
            ts: Some("2015-05-17T10:05:03Z"),
            rt: Some(Some(5123)),
            ..Want::default()
        },
    );
    // single quotes as on a command line are not part of the format
    assert_eq!(
        Format::apache(r#"'%h %t "%r" %>s'"#)
            .unwrap()
            .parser(&o)
            .parse(br#"1.2.3.4 [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200"#)
            .map(|r| r.status),
        Ok(200)
    );
    // Apache: netnea's format; no zone → default offset
    let f = Format::apache(NETNEA_FORMAT).unwrap();
    let line = br#"75.249.65.145 US - [2015-09-02 10:42:51.003372] "GET /cms/ HTTP/1.1" 200 7113 "-" "Googlebot" www.example.com 124.165.3.7 443 redirect-handler - + "-" Vea2i8CoAwcAADevXAgAAAAB TLSv1.2 ECDHE-RSA-AES128-GCM-SHA256 701 12118 -% 88871 803 0 0 0 0"#;
    check(
        &f,
        &ParseOptions {
            default_offset_secs: -4 * 3600,
        },
        line,
        &Want {
            ts_ms: Some(ms("2015-09-02T14:42:51.003Z")),
            precision: Some(Precision::Micro),
            rt: Some(Some(88871)),
            bytes: Some(Some(7113)),
            host: Some(b("www.example.com")),
            ..Want::default()
        },
    );
    check(&Format::Netnea, &o, line, &Want::default());
    // Apache: %{msec}t, %{sec}t, %T, %{ms}T, %U%q, %{Cookie}i
    let f = Format::apache(r#"%a %{msec}t "%m %U%q %H" %s %B %{ms}T "%{Cookie}i""#).unwrap();
    check(
        &f,
        &o,
        br#"1.2.3.4 1700000000123 "GET /x?y=1 HTTP/1.1" 200 5 12 "a=b""#,
        &Want {
            ts_ms: Some(1_700_000_000_123),
            precision: Some(Precision::Milli),
            method: Some(b("GET")),
            path: Some(b("/x")),
            query: Some(b("y=1")),
            rt: Some(Some(12_000)),
            cookie: Some(Some(true)),
            ..Want::default()
        },
    );
    let f = Format::apache("%h %{sec}t %>s %T").unwrap();
    check(
        &f,
        &o,
        b"h 1700000000 500 2",
        &Want {
            ts_ms: Some(1_700_000_000_000),
            status: Some(500),
            rt: Some(Some(2_000_000)),
            ..Want::default()
        },
    );
    // strftime with a zone and a space inside, followed by a space
    let f = Format::apache("%{%d/%b/%Y %H:%M:%S %z}t %h %>s").unwrap();
    check(
        &f,
        &o,
        b"22/Jan/2019 03:56:14 +0330 1.2.3.4 200",
        &Want {
            ts: Some("2019-01-22T00:26:14Z"),
            client: Some(b"1.2.3.4"),
            ..Want::default()
        },
    );
    // %O is the size only when there is no %b
    let f = Format::apache(r#"%v:%p %h %l %u %t "%r" %>s %O"#).unwrap();
    check(
        &f,
        &o,
        br#"v:80 1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 99"#,
        &Want {
            bytes: Some(Some(99)),
            host: Some(b("v")),
            ..Want::default()
        },
    );
    // user formats are exact: no trailing fields
    let f = Format::apache(r#"%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i""#).unwrap();
    assert_eq!(
        err(&f, format!(r#"{COMBINED} "-""#).as_bytes()),
        ParseError::TrailingData
    );
}

#[test]
fn format_string_errors() {
    let cases: &[(Result<Format, FormatError>, &str)] = &[
        (
            Format::apache("%h %l %Z %t"),
            r#"column 7: unknown Apache directive "%Z""#,
        ),
        (
            Format::apache("%h %{Referer %t"),
            r#"column 4: "%{Referer %t": missing `}`"#,
        ),
        (
            Format::apache("%h%l %t"),
            r#"column 3: "%l" directly follows "%h" (column 1) with no text between them, so the end of "%h" cannot be found"#,
        ),
        (Format::apache("%h %>s %b"), "the format has no timestamp"),
        (Format::apache("   "), "the format string is empty"),
        (
            Format::apache("%h %t %"),
            "column 7: \"%\": `%` at the end of the format is not followed by a directive letter",
        ),
        (
            Format::apache("%h %{%j}t"),
            "column 4: \"%{%j}t\": strftime conversion %j is not supported",
        ),
        (
            Format::nginx("$remote_addr $ [$time_local]"),
            r#"column 14: "$": `$` must be followed by a variable name"#,
        ),
        (
            Format::nginx("'$remote_addr [$time_local]"),
            r#"column 1: "'": this quote is never closed"#,
        ),
        (
            Format::nginx("$remote_addr$remote_user [$time_local]"),
            r#"column 13: "$remote_user" directly follows "$remote_addr" (column 1)"#,
        ),
        (
            Format::nginx("$remote_addr $status"),
            "the format has no timestamp",
        ),
        (
            Format::from_name("bogus"),
            r#"unknown format "bogus"; known formats: combined, common"#,
        ),
    ];
    for (r, want) in cases {
        let e = r.as_ref().expect_err(want).to_string();
        assert!(e.starts_with(want), "got  {e}\nwant {want}");
    }
}

#[test]
fn names_round_trip() {
    for f in Format::builtins() {
        assert_eq!(Format::from_name(&f.name()).unwrap(), f);
    }
    for f in [
        Format::nginx("$remote_addr [$time_local] $status").unwrap(),
        Format::apache(r#"%h %t "%r" %>s"#).unwrap(),
    ] {
        let n = f.name();
        assert_eq!(Format::from_name(&n).unwrap(), f, "{n}");
    }
    assert_eq!(
        Format::nginx("$remote_addr [$time_local] $status")
            .unwrap()
            .name(),
        "nginx:'$remote_addr [$time_local] $status'"
    );
    assert_eq!(Format::from_name("CLF").unwrap(), Format::Common);
    assert_eq!(Format::from_name("caddy").unwrap(), Format::CaddyJson);
    assert_eq!(Format::from_name("iis").unwrap(), Format::W3c);
    assert!(Format::W3c.is_stateful());
    assert!(!Format::Combined.is_stateful());
}

#[test]
fn detection() {
    let combined = COMBINED.as_bytes();
    let common: &[u8] =
        br#"uplherc.upl.com - - [01/Aug/1995:00:00:07 -0400] "GET / HTTP/1.0" 304 0"#;
    let msec: &[u8] = br#"127.0.0.1 1795968216.117 [29/Nov/2026:16:03:36 +0000] "GET / HTTP/1.1" 200 3 "-" "-" 0.000"#;
    let xff = format!(r#"{COMBINED} "-""#);
    type Case<'c> = (Vec<&'c [u8]>, Option<Format>, usize);
    let cases: Vec<Case> = vec![
        (
            vec![combined, combined, b"garbage"],
            Some(Format::Combined),
            2,
        ),
        (vec![common, common], Some(Format::Common), 2),
        // common lines mixed with combined: combined wins on count
        (vec![common, combined, combined], Some(Format::Combined), 2),
        (vec![msec, msec], Some(Format::NginxMsec), 2),
        (
            vec![xff.as_bytes(), xff.as_bytes()],
            Some(Format::CombinedXff),
            2,
        ),
        (
            vec![
                b"#Version: 1.0",
                b"#Fields: date time c-ip cs-method cs-uri-stem sc-status",
                b"2015-01-13 00:32:17 1.2.3.4 GET / 200",
            ],
            Some(Format::W3c),
            1,
        ),
        (vec![b"nothing", b"here"], None, 0),
        (vec![], None, 0),
    ];
    for (sample, want, matched) in cases {
        let d = detect(&sample);
        assert_eq!(d.as_ref().map(|d| d.format.clone()), want);
        if let Some(d) = d {
            assert_eq!(d.matched, matched);
            assert!(d.confidence > 0.0 && d.confidence <= 1.0);
        }
    }
    let d = detect(&[xff.as_bytes()]).unwrap();
    assert_eq!(d.confidence, 1.0);
    assert_eq!(d.alternatives[0], (Format::Combined, 1));
    let w = detect(&[
        &b"#Fields: date time c-ip cs-method cs-uri-stem sc-status"[..],
        b"2015-01-13 00:32:17 1.2.3.4 GET / 200",
    ])
    .unwrap();
    assert_eq!((w.matched, w.sampled), (1, 1));
}

/// A combined line with this client and CLF time.
fn clf_line(client: &str, time: &str) -> Vec<u8> {
    format!(r#"{client} - - [{time}] "GET / HTTP/1.1" 200 5 "-" "ua""#).into_bytes()
}

#[test]
fn non_ascii_in_format_strings_is_literal_text() {
    let o = ParseOptions::default();
    let line = r#"1.2.3.4 [17/May/2015:10:05:03 +0000] "GET /é HTTP/1.1" 200 5 é"#;
    for f in [
        Format::apache(r#"%h %t "%r" %>s %b é"#).unwrap(),
        Format::apache(r#"LogFormat "%h %t \"%r\" %>s %b é" näme"#).unwrap(),
        Format::nginx(r#"$remote_addr [$time_local] "$request" $status $body_bytes_sent é"#)
            .unwrap(),
        Format::nginx(
            r#"log_format ü '$remote_addr [$time_local] "$request" $status $body_bytes_sent é';"#,
        )
        .unwrap(),
    ] {
        check(
            &f,
            &o,
            line.as_bytes(),
            &Want {
                ts: Some("2015-05-17T10:05:03Z"),
                client: Some(b"1.2.3.4"),
                path: Some(b("/é")),
                bytes: Some(Some(5)),
                ..Want::default()
            },
        );
        // The literal is matched byte for byte.
        let other = line.replace(" é", " e");
        assert_eq!(
            err(&f, other.as_bytes()),
            ParseError::Mismatch,
            "{}",
            f.name()
        );
    }
    // Non-ASCII right after a field, and a format made of multi-byte separators.
    let f = Format::nginx("$remote_addr→[$time_local]→$status€").unwrap();
    check(
        &f,
        &o,
        "::1→[17/May/2015:10:05:03 +0000]→404€".as_bytes(),
        &Want {
            status: Some(404),
            ip: Some(Some("::1")),
            ..Want::default()
        },
    );
    let f = Format::apache("%h ½ %{%Y-%m-%d %H:%M:%S}t ½ %>s").unwrap();
    check(
        &f,
        &o,
        "h ½ 2015-05-17 10:05:03 ½ 200".as_bytes(),
        &Want {
            ts: Some("2015-05-17T10:05:03Z"),
            ..Want::default()
        },
    );
}

#[test]
fn malformed_format_strings_are_typed_errors() {
    let cases: &[(Result<Format, FormatError>, &str)] = &[
        (
            Format::apache("%h %t é %é"),
            r#"column 9: unknown Apache directive "%é""#,
        ),
        (Format::apache("é %{"), r#"column 3: "%{": missing `}`"#),
        (Format::apache("%{"), r#"column 1: "%{": missing `}`"#),
        (Format::apache("%"), "column 1: \"%\": `%` at the end"),
        (Format::apache("ééé %"), "column 5: \"%\": `%` at the end"),
        (
            Format::apache("%h %{é}t"),
            "column 4: \"%{é}t\": the time format has no date or time conversion",
        ),
        (
            Format::apache("%h %{%é}t"),
            "column 4: \"%{%é}t\": strftime conversion",
        ),
        (Format::nginx("$"), r#"column 1: "$": `$` must be followed"#),
        (
            Format::nginx("é $é"),
            r#"column 3: "$": `$` must be followed"#,
        ),
        (Format::nginx("é ${"), r#"column 3: "${": missing `}`"#),
        (
            Format::nginx("é ${é}"),
            r#"column 3: "${é}": `$` must be followed"#,
        ),
        (
            Format::nginx("'é' é"),
            r#"column 5: "é": expected a quoted string"#,
        ),
        (
            Format::nginx("'é'; é"),
            r#"column 6: "é": text after the closing `;`"#,
        ),
        (
            Format::nginx("'$status é"),
            r#"column 1: "'": this quote is never closed"#,
        ),
        (Format::nginx("é"), "the format has no timestamp"),
        (
            Format::from_name("nginxé"),
            r#"unknown format "nginxé"; known formats"#,
        ),
        (
            Format::from_name("apachéxyz"),
            r#"unknown format "apachéxyz"; known formats"#,
        ),
    ];
    for (r, want) in cases {
        let e = r.as_ref().expect_err(want).to_string();
        assert!(e.starts_with(want), "got  {e}\nwant {want}");
    }
}

#[test]
fn format_compilers_never_panic_on_short_strings() {
    // Every string of up to 4 characters over an alphabet of the syntax's special
    // characters, ASCII and multi-byte letters.
    let alphabet = [
        "%", "$", "{", "}", "'", "\"", "\\", " ", ";", "t", "é", "€", "h",
    ];
    let mut s = String::new();
    fn walk(alphabet: &[&str], s: &mut String, depth: usize) {
        let _ = Format::apache(s);
        let _ = Format::nginx(s);
        let _ = Format::from_name(s);
        let _ = Format::from_name(&format!("nginx:{s}"));
        let _ = Format::from_name(&format!("apache:{s}"));
        if depth == 4 {
            return;
        }
        for a in alphabet {
            s.push_str(a);
            walk(alphabet, s, depth + 1);
            s.truncate(s.len() - a.len());
        }
    }
    walk(&alphabet, &mut s, 0);
}

#[test]
fn timestamps_outside_1970_2099_are_bad_lines() {
    let o = ParseOptions::default();
    let oor = ParseError::TimestampOutOfRange;
    assert_eq!(oor.reason(), "timestamp out of range (1970–2099)");
    assert!(!oor.is_skip());
    for f in [Format::Combined, Format::Common] {
        for t in [
            "31/Dec/9999:23:59:59 +0000",
            "01/Jan/0000:00:00:00 +0000",
            "31/Dec/1969:23:59:59 +0000",
            "01/Jan/1970:00:59:59 +0100",
            "01/Jan/2100:00:00:00 +0000",
            "31/Dec/2099:23:00:00 -0100",
        ] {
            let line = clf_line("1.2.3.4", t);
            let line = if f == Format::Common {
                line[..line.len() - 9].to_vec()
            } else {
                line
            };
            assert_eq!(err(&f, &line), oor, "{} {t}", f.name());
        }
        for (t, want) in [
            ("01/Jan/1970:00:00:00 +0000", 0),
            ("01/Jan/1970:01:00:00 +0100", 0),
            ("31/Dec/2099:23:59:59 +0000", time::TS_END_MS - 1000),
        ] {
            let w = Want {
                ts_ms: Some(want),
                ..Want::default()
            };
            check(&Format::Combined, &o, &clf_line("1.2.3.4", t), &w);
        }
    }
    // Completion stamps: arrival = completion − request time, checked after subtracting.
    let rt = |t: &str, rt: &str| format!("{} {rt}", String::from_utf8_lossy(&clf_line("h", t)));
    assert_eq!(
        err(
            &Format::CombinedRt,
            rt("01/Jan/1970:00:00:00 +0000", "0.001").as_bytes()
        ),
        oor
    );
    assert_eq!(
        err(
            &Format::CombinedRt,
            rt("17/May/2015:10:05:03 +0000", "1431857103.001").as_bytes()
        ),
        oor
    );
    check(
        &Format::CombinedRt,
        &o,
        rt("17/May/2015:10:05:03 +0000", "1431857103.000").as_bytes(),
        &Want {
            ts_ms: Some(0),
            ..Want::default()
        },
    );
    // A request time longer than the whole window is not a request time.
    assert_eq!(
        err(
            &Format::CombinedRt,
            rt("17/May/2015:10:05:03 +0000", "99999999999.999").as_bytes()
        ),
        ParseError::BadRequestTime
    );
    // A long %D on a format that stamps arrival does not move the arrival.
    check(
        &Format::CombinedUs,
        &o,
        rt("17/May/2015:10:05:03 +0000", "4102444800000000").as_bytes(),
        &Want {
            ts: Some("2015-05-17T10:05:03Z"),
            rt: Some(Some(time::MAX_REQUEST_TIME_US)),
            ..Want::default()
        },
    );
    assert_eq!(
        err(
            &Format::CombinedUs,
            rt("17/May/2015:10:05:03 +0000", "4102444800000001").as_bytes()
        ),
        ParseError::BadRequestTime
    );
    let msec = |m: &str, rt: &str| {
        format!(r#"127.0.0.1 {m} [29/Nov/2026:16:03:36 +0000] "GET / HTTP/1.1" 200 3 "-" "-" {rt}"#)
    };
    for (m, r) in [
        ("99999999999.000", "0.000"),
        ("0.500", "1.000"),
        ("9223372036853.000", "0.000"),
        ("1795968216.117", "1795968216.118"),
    ] {
        assert_eq!(
            err(&Format::NginxMsec, msec(m, r).as_bytes()),
            oor,
            "{m} {r}"
        );
    }
    // Epoch fields of every width, near the integer limits: out of range, no overflow.
    for (fmt, v) in [
        ("%{msec}t %h", "999999999999999999"),
        ("%{usec}t %h", "999999999999999999"),
        ("%{%s}t %h", "999999999999999999"),
        ("%{sec}t %h", "9223372036853"),
        ("%{msec}t %h", "4102444800000"),
        ("%{usec}t %h", "4102444800000000"),
    ] {
        let f = Format::apache(fmt).unwrap();
        assert_eq!(err(&f, format!("{v} h").as_bytes()), oor, "{fmt} {v}");
    }
    let f = Format::apache("%{msec}t %h").unwrap();
    check(
        &f,
        &o,
        b"4102444799999 h",
        &Want {
            ts_ms: Some(time::TS_END_MS - 1),
            ..Want::default()
        },
    );
    for (fmt, v) in [
        ("%{sec}t %h", "9999999999999999999999"),
        ("%{msec}t %h", "9999999999999999999"),
    ] {
        let f = Format::apache(fmt).unwrap();
        assert_eq!(
            err(&f, format!("{v} h").as_bytes()),
            ParseError::BadTimestamp
        );
    }
    let f = Format::apache("%{%Y-%m-%d %H:%M:%S %z}t %h").unwrap();
    assert_eq!(err(&f, b"9999-12-31 23:59:59 +0000 h"), oor);
    assert_eq!(err(&f, b"0000-01-01 00:00:00 +0000 h"), oor);
    assert_eq!(
        err(&f, b"2015-01-01 00:00:00 +9999 h"),
        ParseError::BadTimestamp
    );
    // ISO 8601 ($time_iso8601, netnea without a zone, AWS).
    let f = Format::nginx("$time_iso8601 $remote_addr").unwrap();
    for t in [
        "9999-12-31T23:59:59Z",
        "0000-01-01T00:00:00Z",
        "1969-12-31T23:59:59.999Z",
    ] {
        assert_eq!(err(&f, format!("{t} h").as_bytes()), oor, "{t}");
    }
    assert_eq!(
        err(&f, b"2015-01-01T00:00:00+99:00 h"),
        ParseError::BadTimestamp
    );
    let opts_east = ParseOptions {
        default_offset_secs: 3600,
    };
    let mut p = Format::nginx("$time_iso8601 $remote_addr")
        .unwrap()
        .parser(&opts_east);
    assert_eq!(p.parse(b"1970-01-01T00:30:00 h").err(), Some(oor));
    let elb = br#"9999-05-13T23:39:43.945958Z my-loadbalancer 1.2.3.4:2817 10.0.0.1:80 0.000086 0.001048 0.001337 200 200 0 57 "GET https://www.example.com:443/p HTTP/1.1" "ua" - -"#;
    assert_eq!(err(&Format::Elb, elb), oor);
    // Caddy: any ts form, absurd durations, NaN-free floats at the extremes.
    for (ts, dur) in [
        (r#""9999-12-31T23:59:59Z""#, "0.1"),
        (r#""0000-01-01T00:00:00Z""#, "0.1"),
        ("1e300", "0.1"),
        ("-1e300", "0.1"),
        ("-1.5", "0.1"),
        ("1.7976931348623157e308", "0"),
        ("18446744073709551615", "0"),
        ("1716723772.6014807", "1e300"),
        ("1716723772.6014807", "18446744073709551615"),
        ("1716723772.6014807", r#""2562047h47m16.854775807s""#),
        ("1716723772.6014807", r#""99999999999999999999999h""#),
        (r#""-9223372036854775808""#, "0"),
    ] {
        let line = format!(
            r#"{{"ts":{ts},"request":{{"client_ip":"1.2.3.4","uri":"/"}},"duration":{dur},"status":200}}"#
        );
        let e = err(&Format::CaddyJson, line.as_bytes());
        assert!(
            e == oor || e == ParseError::BadTimestamp || e == ParseError::BadRequestTime,
            "{line}: {e}"
        );
    }
    for (ts, dur) in [
        (r#""9999-12-31T23:59:59Z""#, "0.1"),
        ("1e300", "0.1"),
        ("1716723772.6014807", "1716723773.0"),
        ("1716723772.6014807", r#""476868h""#),
    ] {
        let line = format!(
            r#"{{"ts":{ts},"request":{{"client_ip":"1.2.3.4"}},"duration":{dur},"status":200}}"#
        );
        assert_eq!(err(&Format::CaddyJson, line.as_bytes()), oor, "{line}");
    }
    // W3C: the date column or #Date.
    let mut p = Format::W3c.parser(&o);
    let _ = p.parse(b"#Fields: date time c-ip sc-status");
    for l in [
        &b"9999-12-31 23:59:59 1.2.3.4 200"[..],
        b"0000-01-01 00:00:00 1.2.3.4 200",
        b"1969-12-31 23:59:59.999 1.2.3.4 200",
    ] {
        assert_eq!(
            p.parse(l).err(),
            Some(oor),
            "{}",
            String::from_utf8_lossy(l)
        );
    }
    assert!(p.parse(b"2099-12-31 23:59:59.999 1.2.3.4 200").is_ok());
    let mut p = Format::W3c.parser(&o);
    let _ = p.parse(b"#Date: 9999-01-01 00:00:00");
    let _ = p.parse(b"#Fields: time c-ip sc-status");
    assert_eq!(p.parse(b"00:00:00 1.2.3.4 200").err(), Some(oor));
}

#[test]
fn clients_with_zone_port_or_brackets_are_addresses() {
    let o = ParseOptions::default();
    let t = "17/May/2015:10:05:03 +0000";
    for (client, ip) in [
        ("[2001:db8::1]:443", "2001:db8::1"),
        ("[2001:db8::1]", "2001:db8::1"),
        ("fe80::1%eth0", "fe80::1"),
        ("203.0.113.7:51234", "203.0.113.7"),
        ("::ffff:203.0.113.9", "203.0.113.9"),
    ] {
        check(
            &Format::Combined,
            &o,
            &clf_line(client, t),
            &Want {
                client: Some(client.as_bytes()),
                ip: Some(Some(ip)),
                ..Want::default()
            },
        );
    }
    check(
        &Format::Combined,
        &o,
        &clf_line("host.example.net:80", t),
        &Want {
            ip: Some(None),
            ..Want::default()
        },
    );
    let caddy =
        br#"{"ts":1716723772.5,"request":{"remote_ip":"fe80::1%eth0","uri":"/"},"status":200}"#;
    check(
        &Format::CaddyJson,
        &o,
        caddy,
        &Want {
            client: Some(b"fe80::1%eth0"),
            ip: Some(Some("fe80::1")),
            ..Want::default()
        },
    );
    let caddy = br#"{"ts":1716723772.5,"request":{"remote_addr":"[::ffff:10.0.0.1]:5678","uri":"/"},"status":200}"#;
    check(
        &Format::CaddyJson,
        &o,
        caddy,
        &Want {
            ip: Some(Some("10.0.0.1")),
            ..Want::default()
        },
    );
    let mut p = Format::W3c.parser(&o);
    let _ = p.parse(b"#Fields: date time c-ip sc-status");
    let r = p
        .parse(b"2015-01-13 00:32:17 [2001:db8::1]:443 200")
        .unwrap();
    assert_eq!(r.ip, Some("2001:db8::1".parse().unwrap()));
}

/// A client field that is a list cut to one item which is not an address (an
/// X-Forwarded-For-like `localhost,`) is that item, without the comma; a real list
/// still gives its address.
#[test]
fn a_one_item_client_list_loses_its_comma() {
    let o = ParseOptions::default();
    let t = "17/May/2015:10:05:03 +0000";
    for (field, client, ip) in [
        ("localhost,", "localhost", None),
        ("gw.example.net,,", "gw.example.net", None),
        ("10.0.0.2, 8.8.8.8", "8.8.8.8", Some("8.8.8.8")),
    ] {
        check(
            &Format::Combined,
            &o,
            &clf_line(field, t),
            &Want {
                client: Some(client.as_bytes()),
                ip: Some(ip),
                ..Want::default()
            },
        );
    }
}

#[test]
fn absurd_numbers_are_bad_lines() {
    let t = "17/May/2015:10:05:03 +0000";
    let line = |status: &str, bytes: &str| {
        format!(r#"1.2.3.4 - - [{t}] "GET / HTTP/1.1" {status} {bytes} "-" "ua""#)
    };
    assert_eq!(
        err(
            &Format::Combined,
            line("200", "99999999999999999999999").as_bytes()
        ),
        ParseError::BadBytes
    );
    assert_eq!(
        err(&Format::Combined, line("20000", "1").as_bytes()),
        ParseError::BadStatus
    );
    assert_eq!(
        err(&Format::Combined, line("-1", "1").as_bytes()),
        ParseError::BadStatus
    );
    let rt = |v: &str| format!("{} {v}", line("200", "1"));
    for v in ["1e309", "inf", "NaN", "-0.5", "99999999999999999999.0"] {
        assert_eq!(
            err(&Format::CombinedRt, rt(v).as_bytes()),
            ParseError::BadRequestTime,
            "{v}"
        );
    }
    let f = Format::apache(r#"%h %t %{ms}T"#).unwrap();
    assert_eq!(
        err(&f, format!("h [{t}] 9300000000000000").as_bytes()),
        ParseError::BadRequestTime
    );
    let caddy = |extra: &str| {
        format!(r#"{{"ts":1716723772.5,"request":{{"client_ip":"1.2.3.4"}},"status":200{extra}}}"#)
    };
    assert_eq!(
        err(&Format::CaddyJson, caddy(r#","size":1e309"#).as_bytes()),
        ParseError::BadJson
    );
    assert_eq!(
        err(&Format::CaddyJson, caddy(r#","size":-1"#).as_bytes()),
        ParseError::BadBytes
    );
    assert_eq!(
        err(&Format::CaddyJson, caddy(r#","duration":-1"#).as_bytes()),
        ParseError::BadRequestTime
    );
}
