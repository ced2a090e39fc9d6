//! Exact fields of the proxy and JSON-lines formats (ingress-nginx, HAProxy, Traefik,
//! Envoy, nginx JSON, user JSON maps), their bad and skipped lines, and detection of
//! their fixtures.

use super::*;
use crate::time::format_rfc3339_ms;

/// Every field of a record, on one line.
fn show(r: &Record) -> String {
    let t = |v: Option<&[u8]>| match v {
        Some(v) => String::from_utf8_lossy(v).into_owned(),
        None => "~".into(),
    };
    format!(
        "{} p{} c={} ip={} u={} {} {} q={} {} {} b={} ref={} ua={} h={} xff={} rt={} ck={:?}",
        format_rfc3339_ms(r.ts_ms),
        r.precision.digits(),
        String::from_utf8_lossy(r.client),
        r.ip.map_or("~".into(), |i| i.to_string()),
        t(r.user),
        t(r.method),
        t(r.path),
        t(r.query),
        t(r.protocol),
        r.status,
        r.bytes.map_or("~".into(), |b| b.to_string()),
        t(r.referer),
        t(r.user_agent),
        t(r.host),
        t(r.xff),
        r.request_time_us.map_or("~".into(), |b| b.to_string()),
        r.has_cookie,
    )
}

fn fixture(name: &str) -> Vec<Vec<u8>> {
    // Format samples live in fixtures/formats, copied real logs in fixtures/logs.
    let dir = if std::path::Path::new(&format!(
        "{}/../../fixtures/formats/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .exists()
    {
        "formats"
    } else {
        "logs"
    };
    let path = format!("{}/../../fixtures/{dir}/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .split(|&c| c == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// Parses every line of a fixture: `show` of each record, or `!reason` / `skip`.
fn parse_all(f: &Format, opts: &ParseOptions, lines: &[Vec<u8>]) -> Vec<String> {
    let mut p = f.parser(opts);
    lines
        .iter()
        .map(|l| match p.parse(l) {
            Ok(r) => show(&r),
            Err(e) if e.is_skip() => "skip".into(),
            Err(e) => format!("!{}", e.reason()),
        })
        .collect()
}

fn assert_lines(f: &Format, file: &str, want: &[&str]) {
    let got = parse_all(f, &ParseOptions::default(), &fixture(file));
    assert_eq!(got.len(), want.len(), "{file}: {got:#?}");
    for (g, w) in got.iter().zip(want) {
        // A trailing `…` compares a prefix only (fields another test owns).
        match w.strip_suffix('…') {
            Some(prefix) => assert!(g.starts_with(prefix), "{file}: {g}"),
            None => assert_eq!(g, w, "{file}"),
        }
    }
}

#[test]
fn ingress_nginx_fields_lists_dashes_and_legacy() {
    assert_lines(
        &Format::IngressNginx,
        "ingress-nginx.log",
        &[
            "2024-03-22T10:01:01.997Z p0 c=192.168.65.1 ip=192.168.65.1 u=~ GET /api/v1/items q=page=2 HTTP/1.1 200 b=612 ref=~ ua=curl/8.4.0 h=~ xff=~ rt=3000 ck=None",
            "2024-03-22T10:01:02.880Z p0 c=203.0.113.9 ip=203.0.113.9 u=alice POST /login q=~ HTTP/2.0 302 b=0 ref=https://shop.example/ ua=Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/124.0 h=~ xff=~ rt=120000 ck=None",
            "2024-03-22T10:01:04.000Z p0 c=198.51.100.23 ip=198.51.100.23 u=~ GET /healthz q=~ HTTP/1.1 503 b=190 ref=~ ua=kube-probe/1.29 h=~ xff=~ rt=0 ck=None",
            "2024-03-22T10:01:04.985Z p0 c=2001:db8::17 ip=2001:db8::17 u=~ GET /static/app.js q=~ HTTP/1.1 200 b=48213 ref=https://shop.example/cart ua=Mozilla/5.0 (iPhone; CPU iPhone OS 17_3 like Mac OS X) h=~ xff=~ rt=15000 ck=None",
            "2024-03-22T10:01:05.999Z p0 c=10.0.0.5 ip=10.0.0.5 u=~ GET /old q=~ HTTP/1.1 404 b=153 ref=~ ua=Go-http-client/1.1 h=~ xff=~ rt=1000 ck=None",
        ],
    );
}

#[test]
fn haproxy_fields_prefixes_timers_and_tcp_lines() {
    assert_lines(
        &Format::Haproxy,
        "haproxy-httplog.log",
        &[
            "2009-02-06T12:14:14.655Z p3 c=10.0.1.2 ip=10.0.1.2 u=~ GET /index.html q=~ HTTP/1.1 200 b=2750 ref=~ ua=~ h=http-in xff=~ rt=109000 ck=None",
            "2009-02-06T12:14:15.002Z p3 c=192.0.2.44 ip=192.0.2.44 u=~ POST /checkout q=step=pay HTTP/1.1 504 b=194 ref=~ ua=~ h=http-in xff=~ rt=5004000 ck=None",
            "2009-02-06T12:14:16.120Z p3 c=198.51.100.7 ip=198.51.100.7 u=~ …",
            "2026-12-01T09:15:12.374Z p3 c=127.0.12.21 ip=127.0.12.21 u=~ GET /www/item/294 q=rid=F000000 HTTP/1.1 200 b=73 ref=~ ua=~ h=fe_web xff=~ rt=0 ck=None",
            "2024-03-22T10:01:07.001Z p3 c=2001:db8::5 ip=2001:db8::5 u=~ GET /v2/status q=~ HTTP/1.1 200 b=1024 ref=~ ua=~ h=fe_tls xff=~ rt=18000 ck=None",
            "skip",
        ],
    );
    let opts = ParseOptions {
        default_offset_secs: 3600,
    };
    let mut p = Format::Haproxy.parser(&opts);
    let l = b"1.2.3.4:1 [06/Feb/2009:12:14:14.655] f b/s 0/0/0/0/-1 -1 0 - - CD-- 0/0/0/0/0 0/0 \"GET / HTTP/1.1\"";
    let r = p.parse(l).unwrap();
    assert_eq!(format_rfc3339_ms(r.ts_ms), "2009-02-06T11:14:14.655Z");
    assert_eq!((r.status, r.request_time_us), (0, None));
    let bad = b"198.51.100.7:40000 [06/Feb/2009:12:14:16.120] http-in http-in/<NOSRV> -1/-1/-1/-1/0 400 187 - - PR-- 3/3/0/0/0 0/0 \"<BADREQ>\"";
    let r = p.parse(bad).unwrap();
    assert_eq!(
        (r.status, r.bytes, r.request_time_us),
        (400, Some(187), Some(0))
    );
    let zoned = b"1.2.3.4:1 [06/Feb/2009:12:14:14.655 +0100] f b/s 0/0/0/0/1 200 0 - - ---- 0/0/0/0/0 0/0 \"GET / HTTP/1.1\"";
    let mut p = Format::Haproxy.parser(&ParseOptions::default());
    assert_eq!(
        format_rfc3339_ms(p.parse(zoned).unwrap().ts_ms),
        "2009-02-06T11:14:14.655Z"
    );
    for (bad, why) in [
        (&b"Feb  6 12:14:14 localhost haproxy[1]: Proxy http-in started."[..], ParseError::Mismatch),
        (b"1.2.3.4:1 [06/Feb/2009:12:14:14.655] f b/s 0/0/0/0/1 200 0 - - ---- 0/0/0/0/0", ParseError::Truncated),
        (b"1.2.3.4:1 [06/Feb/2009:12:14:14.655] f b/s 0/0/0/0/x 200 0 - - ---- 0/0/0/0/0 0/0 \"GET /\"", ParseError::BadRequestTime),
        (b"1.2.3.4:1 [06/Feb/2009:12:14:14.655] f b/s 0/0/0/0/1 2000 0 - - ---- 0/0/0/0/0 0/0 \"GET /\"", ParseError::BadStatus),
        (b"1.2.3.4:1 [36/Feb/2009:12:14:14.655] f b/s 0/0/0/0/1 200 0 - - ---- 0/0/0/0/0 0/0 \"GET /\"", ParseError::BadTimestamp),
    ] {
        assert_eq!(p.parse(bad).err(), Some(why), "{}", String::from_utf8_lossy(bad));
    }
    // HAProxy cuts long lines at its log buffer: the request keeps what was logged.
    let cut = b"1.2.3.4:1 [06/Feb/2009:12:14:14.655] f b/s 0/0/0/0/1 200 0 - - ---- 0/0/0/0/0 0/0 \"GET /very/long/pa";
    let r = p.parse(cut).unwrap();
    assert_eq!(
        (r.method, r.path, r.protocol),
        (Some(&b"GET"[..]), Some(&b"/very/long/pa"[..]), None)
    );
}

#[test]
fn haproxy_clf_fields_prefix_timers_and_tcp() {
    assert_lines(
        &Format::HaproxyClf,
        "haproxy-clf.log",
        &[
            "2009-02-06T11:14:14.655Z p3 c=192.0.2.44 ip=192.0.2.44 u=~ GET /index.html q=~ HTTP/1.1 200 b=2750 ref=~ ua=~ h=~ xff=~ rt=109000 ck=None",
            "2024-03-22T10:01:07.001Z p3 c=2001:db8::5 ip=2001:db8::5 u=~ POST /v2/orders q=x=1 HTTP/1.1 504 b=194 ref=~ ua=~ h=~ xff=~ rt=5004000 ck=None",
            "2024-03-22T10:01:08.120Z p3 c=198.51.100.7 ip=198.51.100.7 u=~ ~ <BADREQ> q=~ ~ 400 b=187 ref=~ ua=~ h=~ xff=~ rt=0 ck=None",
            "skip",
        ],
    );
    let mut p = Format::HaproxyClf.parser(&ParseOptions::default());
    let combined =
        br#"1.2.3.4 - - [06/Feb/2009:11:14:14 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8""#;
    assert_eq!(p.parse(combined).err(), Some(ParseError::Truncated));
    for (bad, why) in [
        (&br#"1.2.3.4 - - [06/Feb/2009:11:14:14 +0000] "GET / HTTP/1.1" 200 5 "" "" 1 1000 "f" "b" "s" 0 0 0 0 0 "----""#[..], ParseError::BadTimestamp),
        (br#"1.2.3.4 - - [06/Feb/2009:11:14:14 +0000] "GET / HTTP/1.1" 200 5 "" "" 1 1 "f" "b" "s" 0 0 0 0 x "----""#, ParseError::BadRequestTime),
        (br#"1.2.3.4 - - [06/Feb/2009:11:14:14 +0000] "GET / HTTP/1.1" 2000 5 "" "" 1 1 "f" "b" "s" 0 0 0 0 0 "----""#, ParseError::BadStatus),
        (br#"- - - [06/Feb/2009:11:14:14 +0000] "GET / HTTP/1.1" 200 5 "" "" 1 1 "f" "b" "s" 0 0 0 0 0 "----""#, ParseError::MissingClient),
    ] {
        assert_eq!(p.parse(bad).err(), Some(why), "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn istio_fields_every_generation_client_and_tcp() {
    assert_lines(
        &Format::Istio,
        "istio.log",
        &[
            "2020-11-25T21:26:18.409Z p3 c=10.44.1.23 ip=10.44.1.23 u=~ GET /status/418 q=~ HTTP/1.1 418 b=135 ref=~ ua=curl/7.73.0-DEV h=httpbin:8000 xff=~ rt=4000 ck=None",
            "2024-03-22T10:01:02.123Z p3 c=203.0.113.9 ip=203.0.113.9 u=~ POST /api/orders q=id=7 HTTP/2 201 b=64 ref=~ ua=Mozilla/5.0 (X11; Linux x86_64) h=shop.example xff=203.0.113.9,10.0.0.1 rt=31000 ck=None",
            "2024-03-22T10:01:03.000Z p3 c=2001:db8::7 ip=2001:db8::7 u=~ GET /slow q=~ HTTP/1.1 0 b=0 ref=~ ua=curl/8.5.0 h=shop.example xff=~ rt=12000 ck=None",
            "2019-03-06T09:31:27.360Z p3 c=172.30.146.82 ip=172.30.146.82 u=~ GET /status/418 q=~ HTTP/1.1 418 b=135 ref=~ ua=curl/7.60.0 h=httpbin:8000 xff=~ rt=5000 ck=None",
            "skip",
        ],
    );
    // Envoy's default lines are not Istio's, and back; but a file that mixes them
    // keeps every line in either format, with the same fields.
    let o = ParseOptions::default();
    let (envoy_lines, istio_lines) = (fixture("envoy.log"), fixture("istio.log"));
    for (l, other) in [
        (&envoy_lines[1], Format::Istio),
        (&istio_lines[1], Format::Envoy),
    ] {
        assert!(
            other.detect_parser(&o).parse(l).is_err(),
            "{}",
            String::from_utf8_lossy(l)
        );
    }
    let mixed = [envoy_lines[1].clone(), istio_lines[1].clone()];
    let want = parse_all(&Format::Envoy, &o, &envoy_lines[1..2])
        .into_iter()
        .chain(parse_all(&Format::Istio, &o, &istio_lines[1..2]))
        .collect::<Vec<_>>();
    assert_eq!(parse_all(&Format::Envoy, &o, &mixed), want);
    assert_eq!(parse_all(&Format::Istio, &o, &mixed), want);
    let mut istio = Format::Istio.parser(&o);
    let l = fixture("istio.log").remove(0);
    for cut in [40, 100, l.len() - 9] {
        assert!(istio.parse(&l[..cut]).is_err(), "cut at {cut}");
    }
    let slow = String::from_utf8(l.clone())
        .unwrap()
        .replace(" 0 135 4 4 ", " 0 135 99999999999999999999 4 ");
    assert_eq!(
        istio.parse(slow.as_bytes()).err(),
        Some(ParseError::BadRequestTime)
    );
}

#[test]
fn envoy_json_and_nested_json_maps() {
    assert_lines(
        &Format::EnvoyJson,
        "envoy-json.log",
        &[
            "2024-03-22T10:01:02.123Z p3 c=198.51.100.20 ip=198.51.100.20 u=~ GET /products q=q=shoes HTTP/2 200 b=5120 ref=~ ua=curl/8.5.0 h=shop.example xff=203.0.113.9 rt=37000 ck=None",
            "2024-03-22T10:01:03.456Z p3 c=10.244.1.5 ip=10.244.1.5 u=~ POST /api/orders q=~ HTTP/1.1 503 b=91 ref=~ ua=python-requests/2.31.0 h=orders.shop.svc.cluster.local xff=~ rt=30004000 ck=None",
        ],
    );
    let map = "ts=ts,client=request.remote_ip,method=request.method,path=request.uri,protocol=request.proto,host=request.host,agent=request.headers.User-Agent,status=status,bytes=size,request_time=duration";
    let f = Format::json_map(map).unwrap();
    assert_lines(
        &f,
        "json-nested.log",
        &[
            "2024-03-22T10:01:02.512Z p3 c=203.0.113.9 ip=203.0.113.9 u=~ GET /products q=q=shoes HTTP/2.0 200 b=512 ref=~ ua=curl/8.5.0 h=shop.example xff=~ rt=12000 ck=None",
            "2024-03-22T10:01:03.000Z p3 c=2001:db8::77 ip=2001:db8::77 u=~ POST /login q=~ HTTP/1.1 302 b=0 ref=~ ua=Mozilla/5.0 (X11; Linux x86_64) h=shop.example xff=~ rt=100000 ck=None",
        ],
    );
    // A flat key with dots is found before a path; keys are case-insensitive.
    let f =
        Format::json_map("ts=ts,status=status,host=request.flat,agent=REQUEST.Headers.user-agent")
            .unwrap();
    let lines = fixture("json-nested.log");
    let mut p = f.parser(&ParseOptions::default());
    let r = p.parse(&lines[1]).unwrap();
    assert_eq!(r.host, Some(&b"kept apart"[..]));
    assert_eq!(r.user_agent, Some(&b"Mozilla/5.0 (X11; Linux x86_64)"[..]));
    // A path through a value that is not an object finds nothing, and breaks nothing.
    let f = Format::json_map("ts=ts,status=status,host=level.x,client=request.uri.deeper").unwrap();
    let mut p = f.parser(&ParseOptions::default());
    assert_eq!(p.parse(&lines[0]).err(), Some(ParseError::MissingClient));
    for bad in [
        "ts=ts,status=status,client=request.",
        "ts=ts,status=status,client=.ip",
        "ts=ts,status=a..b",
    ] {
        let e = Format::json_map(bad).unwrap_err().to_string();
        assert!(e.contains("empty part"), "{bad}: {e}");
    }
}

#[test]
fn traefik_clf_and_json_fields() {
    assert_lines(
        &Format::Traefik,
        "traefik.log",
        &[
            "2024-03-22T10:01:02.000Z p0 c=192.168.1.10 ip=192.168.1.10 u=~ GET /api/users q=id=7 HTTP/1.1 200 b=1024 ref=~ ua=curl/8.4.0 h=~ xff=~ rt=12000 ck=None",
            "2024-03-22T09:01:03.000Z p0 c=203.0.113.9 ip=203.0.113.9 u=bob POST /upload q=~ HTTP/2.0 201 b=0 ref=https://app.example/ ua=Mozilla/5.0 (Windows NT 10.0; Win64; x64) h=~ xff=~ rt=350000 ck=None",
            "2024-03-22T10:01:04.000Z p0 c=198.51.100.23 ip=198.51.100.23 u=~ GET /missing q=~ HTTP/1.1 404 b=19 ref=~ ua=~ h=~ xff=~ rt=0 ck=None",
        ],
    );
    assert_lines(
        &Format::TraefikJson,
        "traefik-json.log",
        &[
            "2024-03-22T10:01:02.123Z p6 c=192.168.1.10 ip=192.168.1.10 u=~ GET /api/users q=id=7 HTTP/1.1 200 b=1024 ref=~ ua=curl/8.4.0 h=api.example xff=~ rt=12346 ck=None",
            "2024-03-22T10:01:03.500Z p3 c=2001:db8::9 ip=2001:db8::9 u=alice POST /upload q=~ HTTP/2.0 502 b=0 ref=https://app.example/ ua=Mozilla/5.0 (Windows NT 10.0; Win64; x64) h=app.example xff=198.51.100.1, 10.0.0.2 rt=30001000 ck=None",
        ],
    );
    let mut p = Format::TraefikJson.parser(&ParseOptions::default());
    let list = br#"{"ClientHost":"192.168.1.100, 10.0.0.50, 203.0.113.7","DownstreamStatus":200,"RequestMethod":"GET","RequestPath":"/","StartUTC":"2024-03-22T10:00:00Z"}"#;
    let r = p.parse(list).unwrap();
    assert_eq!(r.client, b"203.0.113.7");
    assert_eq!(r.xff, Some(&b"192.168.1.100, 10.0.0.50, 203.0.113.7"[..]));
    let own = br#"{"level":"info","msg":"Configuration loaded from flags.","time":"2024-03-22T10:00:00Z"}"#;
    assert_eq!(p.parse(own).err(), Some(ParseError::NotAccessLog));
}

#[test]
fn envoy_fields_client_from_xff_and_tcp_entries() {
    assert_lines(
        &Format::Envoy,
        "envoy.log",
        &[
            "2016-04-15T20:17:00.310Z p3 c=10.0.35.28 ip=10.0.35.28 u=~ POST /api/v1/locations q=~ HTTP/2 204 b=0 ref=~ ua=nsq2http h=locations xff=10.0.35.28 rt=226000 ck=None",
            "2024-03-22T10:01:02.123Z p3 c=203.0.113.9 ip=203.0.113.9 u=~ GET /products q=q=shoes HTTP/1.1 200 b=5120 ref=~ ua=Mozilla/5.0 (X11; Linux x86_64) h=shop.example xff=203.0.113.9, 10.0.0.1 rt=37000 ck=None",
            "2024-03-22T10:01:03.000Z p3 c=- ip=~ u=~ GET /healthz q=~ HTTP/1.1 503 b=19 ref=~ ua=kube-probe/1.29 h=shop.example xff=~ rt=0 ck=None",
            "skip",
        ],
    );
}

#[test]
fn nginx_json_and_user_maps() {
    assert_lines(
        &Format::NginxJson,
        "nginx-json.log",
        &[
            "2024-03-22T10:01:01.988Z p0 c=192.0.2.10 ip=192.0.2.10 u=~ GET /index.html q=lang=en HTTP/1.1 200 b=5120 ref=~ ua=Mozilla/5.0 (X11; Linux x86_64) h=www.example.org xff=~ rt=12000 ck=None",
            "2024-03-22T10:01:01.500Z p0 c=2001:db8::42 ip=2001:db8::42 u=bob POST /api/v1/orders q=~ HTTP/2.0 201 b=0 ref=https://www.example.org/cart ua=Mozilla/5.0 \"quoted\" é h=www.example.org xff=198.51.100.7, 10.0.0.2 rt=1500000 ck=None",
            "2024-03-22T10:01:04.000Z p0 c=198.51.100.99 ip=198.51.100.99 u=~ GET /search q=q=a%20b HTTP/1.1 404 b=153 ref=~ ua=~ h=~ xff=~ rt=0 ck=None",
        ],
    );
    let map = Format::json_map(
        "ts=ts,client=ip,method=verb,path=url,status=code,bytes=size,agent=ua,referer=ref,host=vhost,request_time_ms=took_ms",
    )
    .unwrap();
    assert_lines(
        &map,
        "json-map.log",
        &[
            "2024-03-22T10:01:02.250Z p3 c=192.0.2.77 ip=192.0.2.77 u=~ GET /v1/items q=limit=10 ~ 200 b=2048 ref=~ ua=okhttp/4.12.0 h=api.example xff=~ rt=42000 ck=None",
            "2024-03-22T10:01:03.000Z p3 c=2001:db8::77 ip=2001:db8::77 u=~ DELETE /v1/items/9 q=~ ~ 204 b=~ ref=~ ua=~ h=api.example xff=~ rt=7000 ck=None",
        ],
    );
    assert_eq!(Format::from_name(&map.name()).unwrap(), map);
    let mut p = map.parser(&ParseOptions::default());
    for (bad, why) in [
        (&b"not json"[..], ParseError::BadJson),
        (
            br#"{"ts":"2024-03-22T10:01:02Z","ip":"1.2.3.4"}"#,
            ParseError::MissingStatus,
        ),
        (
            br#"{"ts":"2024-03-22T10:01:02Z","code":200}"#,
            ParseError::MissingClient,
        ),
        (
            br#"{"ts":"x","ip":"1.2.3.4","code":200}"#,
            ParseError::BadTimestamp,
        ),
        (
            br#"{"ts":1711101662,"ip":"1.2.3.4","code":200,"took_ms":-3}"#,
            ParseError::BadRequestTime,
        ),
        (
            br#"{"ts":1711101662,"ip":"1.2.3.4","code":200,"size":"big"}"#,
            ParseError::BadBytes,
        ),
        (
            br#"{"ts":1711101662,"ip":"1.2.3.4","code":2000}"#,
            ParseError::BadStatus,
        ),
        (
            br#"{"ts":1711101662,"ip":"1.2.3.4","code":200} x"#,
            ParseError::BadJson,
        ),
    ] {
        assert_eq!(
            p.parse(bad).err(),
            Some(why),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
    let r = p
        .parse(br#"{"ts":1711101662123,"ip":"1.2.3.4","code":200}"#)
        .unwrap();
    assert_eq!(format_rfc3339_ms(r.ts_ms), "2024-03-22T10:01:02.123Z");
    let no_client = Format::json_map("ts_end=t,status=s,request_time=d").unwrap();
    let mut p = no_client.parser(&ParseOptions::default());
    let r = p
        .parse(br#"{"t":"22/Mar/2024:10:01:02 +0000","s":"200","d":"0.5"}"#)
        .unwrap();
    assert_eq!(
        (r.client, format_rfc3339_ms(r.ts_ms)),
        (&b"-"[..], "2024-03-22T10:01:01.500Z".to_string())
    );
}

/// Every built-in's sample is detected as itself, with full confidence.
#[test]
fn detector_confusion_every_builtin_detects_as_itself() {
    let line = |s: &str| s.as_bytes().to_vec();
    const C: &str = r#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /a?b HTTP/1.1" 200 512 "http://r/" "Mozilla/5.0""#;
    let samples: Vec<(Format, Vec<Vec<u8>>)> = vec![
        (
            Format::Combined,
            fixture("elastic-apache.log").into_iter().take(50).collect(),
        ),
        (
            Format::Common,
            vec![line(
                r#"in24.inetnebr.com - - [01/Aug/1995:00:00:01 -0400] "GET /x HTTP/1.0" 200 1839"#,
            )],
        ),
        (
            Format::VhostCombined,
            vec![line(&format!("www.example.org:443 {C}"))],
        ),
        (
            Format::VhostCommon,
            vec![line(
                r#"www.example.org 10.0.0.1 - - [31/Dec/2023:23:59:59 +0000] "POST /login HTTP/1.1" 302 12"#,
            )],
        ),
        (
            Format::CombinedXff,
            vec![line(&format!(r#"{C} "10.0.0.1, 10.0.0.2""#))],
        ),
        (Format::CombinedRt, vec![line(&format!("{C} 0.250"))]),
        (Format::CombinedUs, vec![line(&format!("{C} 5123"))]),
        (
            Format::NginxMsec,
            vec![line(
                r#"127.0.0.1 1795968216.117 [29/Nov/2026:16:03:36 +0000] "GET / HTTP/1.1" 200 3 "-" "-" 1.205"#,
            )],
        ),
        (
            Format::Netnea,
            vec![line(
                r#"75.249.65.145 US - [2015-09-02 10:42:51.003372] "GET /cms/ HTTP/1.1" 200 7113 "-" "Googlebot" www.example.com 124.165.3.7 443 redirect-handler - + "-" Vea2i8CoAwcAADevXAgAAAAB TLSv1.2 ECDHE-RSA-AES128-GCM-SHA256 701 12118 -% 88871 803 0 0 0 0"#,
            )],
        ),
        (Format::CaddyJson, fixture("caddy-mirror.json.log")),
        (
            Format::W3c,
            fixture("iis-w3c.log").into_iter().take(40).collect(),
        ),
        (
            Format::Elb,
            vec![line(
                r#"2015-05-13T23:39:43.945958Z my-loadbalancer 1.2.3.4:2817 10.0.0.1:80 0.000086 0.001048 0.001337 200 200 0 57 "GET https://www.example.com:443/p HTTP/1.1" "curl/8" DHE-RSA-AES128-SHA TLSv1.2"#,
            )],
        ),
        (
            Format::Alb,
            vec![line(
                r#"https 2020-01-01T00:55:04.127531Z app/my-alb/abcdef 1.2.3.4:2817 10.0.0.1:80 0.001 -1 0.000 502 - 225 24950 "GET https://www.example.com:443/p HTTP/1.1" "curl/8" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/T/a "Root=1-a" "www.example.com" "arn:aws:acm:eu-west-1:1:certificate/1" 0 2020-01-01T00:55:04.023000Z "forward" "-" "-" "10.1.1.1:80" "200" "-" "-" TID_1"#,
            )],
        ),
        (Format::IngressNginx, fixture("ingress-nginx.log")),
        (Format::Haproxy, fixture("haproxy-httplog.log")),
        (Format::Traefik, fixture("traefik.log")),
        (Format::TraefikJson, fixture("traefik-json.log")),
        (Format::Envoy, fixture("envoy.log")),
        (Format::NginxJson, fixture("nginx-json.log")),
        (Format::Istio, fixture("istio.log")),
        (Format::HaproxyClf, fixture("haproxy-clf.log")),
        (Format::EnvoyJson, fixture("envoy-json.log")),
        (
            Format::NginxProxyManager,
            fixture("nginx-proxy-manager.log"),
        ),
    ];
    for f in Format::builtins() {
        assert!(
            samples.iter().any(|s| s.0 == f),
            "no detection sample for built-in {}",
            f.name()
        );
    }
    for (f, lines) in &samples {
        let refs: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
        let d = detect(&refs).unwrap_or_else(|| panic!("{}: nothing detected", f.name()));
        assert_eq!(
            d.format,
            *f,
            "{}: detected {} ({:?})",
            f.name(),
            d.format.name(),
            d.alternatives
        );
        let want = if *f == Format::Combined { 0.98 } else { 1.0 };
        assert!(
            d.confidence >= want,
            "{}: confidence {}",
            f.name(),
            d.confidence
        );
        // The same lines as a Kubernetes node writes them (CRI prefix): the inner
        // format behind `cri:` (W3C directives and JSON alike).
        let cri: Vec<Vec<u8>> = lines
            .iter()
            .map(|l| [&b"2024-03-12T09:15:02.123456789Z stdout F "[..], l].concat())
            .collect();
        let refs: Vec<&[u8]> = cri.iter().map(Vec::as_slice).collect();
        let d = detect(&refs).unwrap_or_else(|| panic!("cri:{}: nothing detected", f.name()));
        assert_eq!(
            d.format,
            Format::Cri(Box::new(f.clone())),
            "cri:{}",
            f.name()
        );
        assert_eq!(
            Format::from_name(&d.format.name()).unwrap(),
            d.format,
            "{}",
            d.format.name()
        );
    }
}

#[test]
fn nginx_proxy_manager_fields() {
    let lines = fixture("nginx-proxy-manager.log");
    let got = parse_all(&Format::NginxProxyManager, &ParseOptions::default(), &lines);
    let want = [
        "2024-03-12T09:15:02.000Z p0 c=203.0.113.7 ip=203.0.113.7 u=~ GET /index.php/apps/files/ q=dir=/Photos ~ 200 b=5120 ref=https://cloud.example.org/ ua=Mozilla/5.0 (X11; Linux x86_64; rv:123.0) Gecko/20100101 Firefox/123.0 h=cloud.example.org xff=~ rt=~ ck=None",
        "2024-03-12T09:15:03.000Z p0 c=203.0.113.7 ip=203.0.113.7 u=~ GET /core/img/logo.svg q=~ ~ 304 b=0 ref=~ ua=Mozilla/5.0 (X11; Linux x86_64; rv:123.0) Gecko/20100101 Firefox/123.0 h=cloud.example.org xff=~ rt=~ ck=None",
        "2024-03-12T09:15:04.000Z p0 c=2001:db8::42 ip=2001:db8::42 u=~ POST /v1/upload q=~ ~ 200 b=17 ref=~ ua=curl/8.5.0 h=api.example.org xff=~ rt=~ ck=None",
        "2024-03-12T09:15:05.000Z p0 c=198.51.100.9 ip=198.51.100.9 u=~ GET / q=~ ~ 301 b=166 ref=~ ua=Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html) h=example.org xff=~ rt=~ ck=None",
        "2024-03-12T09:15:06.000Z p0 c=198.51.100.23 ip=198.51.100.23 u=~ GET /wp-login.php q=~ ~ 404 b=146 ref=~ ua=python-requests/2.31.0 h=example.org xff=~ rt=~ ck=None",
        "2024-03-12T09:15:06.999Z p0 c=198.51.100.30 ip=198.51.100.30 u=~ GET /.env q=~ HTTP/1.1 444 b=0 ref=~ ua=Mozilla/5.0 zgrab/0.x h=default.example.org xff=~ rt=1000 ck=None",
    ];
    assert_eq!(got, want);
    let mut p = Format::NginxProxyManager.parser(&ParseOptions::default());
    for bad in [
        &b"[12/Mar/2024:09:15:02 +0000] 200 - GET https h \"/x\" [Client 1.2.3.4] [Length 5] [Gzip -] \"ua"[..],
        b"[12/Mar/2024:09:15:02 +0000] 200 GET https h \"/x\" [Client 1.2.3.4] [Length 5] [Gzip -] \"ua\" \"-\"",
        b"[12/Mar/2024:09:15:02 +0000] 200 - GET https h \"/x\" [Length 5] [Gzip -] \"ua\" \"-\"",
        b"[99/Mar/2024:09:15:02 +0000] 200 - GET https h \"/x\" [Client 1.2.3.4] [Length 5] \"ua\" \"-\"",
    ] {
        assert!(p.parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn envoy_text_and_json_lines_in_one_log() {
    let text = fixture("envoy.log");
    let json = fixture("envoy-json.log");
    for f in [Format::Envoy, Format::EnvoyJson] {
        let mut p = f.parser(&ParseOptions::default());
        for l in text.iter().chain(json.iter()) {
            match p.parse(l) {
                Ok(_) => {}
                Err(e) => assert!(
                    e.is_skip(),
                    "{}: {e}: {}",
                    f.name(),
                    String::from_utf8_lossy(l)
                ),
            }
        }
    }
}
