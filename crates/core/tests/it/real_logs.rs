//! Parses real-world logs with format detection and checks the detected format, the
//! bad-line counts and a few exact values. The logs whose licence allows copying are in
//! `fixtures/logs` (see fixtures/README.md) and are always checked; the others (honeynet,
//! NASA, almhuette, zanbil, netnea, scanner-lab, matomo) exist only in the team's
//! research collection `../shared/data/real` (see its SOURCES.md), so their tests are
//! `#[ignore]`d with the reason and fail, rather than pass, when run without it. The
//! arrival times are checked against the nginx oracle copied to
//! `fixtures/oracles/nginx-limit-req`.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use logscope_core::parse::{Format, ParseOptions, detect};
use logscope_core::{Precision, time};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures");
const REAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/real");
const ORACLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/oracles/nginx-limit-req/flash_aligned"
);

/// A file's bytes, gzip or zstd decoded.
fn read(path: &Path) -> Vec<u8> {
    let raw = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .unwrap();
        out
    } else if raw.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        zstd::decode_all(&raw[..]).unwrap()
    } else {
        raw
    }
}

/// `fixtures/<rel>`, decoded.
fn fixture(rel: &str) -> Vec<u8> {
    read(&Path::new(FIXTURES).join(rel))
}

/// The shared research collection; panics (never skips) when it is absent, so an
/// ignored test run with `--ignored` without it fails visibly.
fn real_dir() -> PathBuf {
    let p = PathBuf::from(REAL);
    assert!(
        p.is_dir(),
        "{REAL} is absent: this test needs the team's research collection beside the checkout"
    );
    p
}

/// `../shared/data/real/<rel>`, decoded.
fn shared(rel: &str) -> Vec<u8> {
    read(&real_dir().join(rel))
}

fn lines(data: &[u8]) -> Vec<&[u8]> {
    let mut v: Vec<&[u8]> = data
        .split(|c| *c == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .collect();
    if v.last().is_some_and(|l| l.is_empty()) {
        v.pop();
    }
    v
}

#[derive(Debug)]
struct Outcome {
    format: Option<Format>,
    confidence: f64,
    ok: usize,
    skipped: usize,
    bad: usize,
    reasons: Vec<(usize, &'static str)>,
}

fn run(data: &[u8]) -> Outcome {
    let ls = lines(data);
    let sample: Vec<&[u8]> = ls
        .iter()
        .copied()
        .filter(|l| !l.is_empty())
        .take(200)
        .collect();
    let Some(d) = detect(&sample) else {
        return Outcome {
            format: None,
            confidence: 0.0,
            ok: 0,
            skipped: 0,
            bad: ls.len(),
            reasons: vec![],
        };
    };
    let mut p = d.format.parser(&ParseOptions::default());
    let (mut ok, mut skipped, mut bad) = (0, 0, 0);
    let mut reasons = Vec::new();
    for (i, l) in ls.iter().enumerate() {
        match p.parse(l) {
            Ok(_) => ok += 1,
            Err(e) if e.is_skip() => skipped += 1,
            Err(e) => {
                bad += 1;
                if reasons.len() < 5 {
                    reasons.push((i + 1, e.reason()));
                }
            }
        }
    }
    Outcome {
        format: Some(d.format),
        confidence: d.confidence,
        ok,
        skipped,
        bad,
        reasons,
    }
}

/// (file under ../shared/data/real, its byte-identical copy under fixtures/ if its
/// licence allows one, expected format name or None, maximum bad lines, exact bad
/// lines if known)
type Expected = (
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
    usize,
    Option<usize>,
);

const EXPECTED: &[Expected] = &[
    (
        "elastic-apache/apache_logs",
        Some("logs/elastic-apache.log"),
        Some("combined"),
        1,
        Some(1),
    ),
    (
        "honeynet-2004/access_log.all.gz",
        None,
        Some("combined"),
        4,
        None,
    ),
    (
        "basjes-home/hackers-access.log",
        Some("logs/basjes-hackers-access.log"),
        Some("combined"),
        0,
        Some(0),
    ),
    (
        "nasa-aug95/nasa_aug95_first20k.log",
        None,
        Some("common"),
        0,
        Some(0),
    ),
    (
        "almhuette-slice/almhuette_2019-04-02_03.log",
        None,
        Some("combined-xff"),
        0,
        Some(0),
    ),
    (
        "zanbil-slice/zanbil_first1000.log",
        None,
        Some("combined-xff"),
        0,
        Some(0),
    ),
    (
        "netnea-extended/labor-04-example-access.log",
        None,
        Some("netnea"),
        0,
        Some(0),
    ),
    // erddap: exactly the bare ` "ua"` fragments are bad; the 85 lines with one
    // extra quoted field parse as combined.
    (
        "erddap-2024/tomcat-access.log.1",
        Some("logs/erddap/tomcat-access.log.1"),
        Some("combined"),
        146,
        Some(146),
    ),
    (
        "erddap-2024/tomcat-access.log.2",
        Some("logs/erddap/tomcat-access.log.2"),
        Some("combined"),
        130,
        Some(130),
    ),
    (
        "erddap-2024/tomcat-access.log.3",
        Some("logs/erddap/tomcat-access.log.3"),
        Some("combined"),
        145,
        Some(145),
    ),
    (
        "erddap-2024/tomcat-access.log.4",
        Some("logs/erddap/tomcat-access.log.4"),
        Some("combined"),
        138,
        Some(138),
    ),
    (
        "erddap-2024/tomcat-access.log.5",
        Some("logs/erddap/tomcat-access.log.5"),
        Some("combined"),
        608,
        Some(608),
    ),
    (
        "erddap-2024/tomcat-access.log.6",
        Some("logs/erddap/tomcat-access.log.6"),
        Some("combined"),
        363,
        Some(363),
    ),
    (
        "erddap-2024/tomcat-access.log.7",
        Some("logs/erddap/tomcat-access.log.7"),
        Some("combined"),
        425,
        Some(425),
    ),
    (
        "erddap-2024/tomcat-access.log.8",
        Some("logs/erddap/tomcat-access.log.8"),
        Some("combined"),
        3693,
        Some(3693),
    ),
    (
        "erddap-2024/tomcat-access.log.9",
        Some("logs/erddap/tomcat-access.log.9"),
        Some("combined"),
        148,
        Some(148),
    ),
    (
        "scanner-lab/acunetix.txt",
        None,
        Some("combined"),
        0,
        Some(0),
    ),
    (
        "scanner-lab/netsparker.txt",
        None,
        Some("combined"),
        0,
        Some(0),
    ),
    // The 62 unwrapped lines at the end parse too.
    ("scanner-lab/w3af.txt", None, Some("combined"), 62, None),
    (
        "format-samples/caddy_json_mirror.log",
        Some("logs/caddy-mirror.json.log"),
        Some("caddy-json"),
        0,
        Some(0),
    ),
    (
        "format-samples/iis_w3c_real.log",
        Some("logs/iis-w3c.log"),
        Some("w3c"),
        0,
        Some(0),
    ),
    (
        "format-samples/matomo_amazon_cloudfront_web.log",
        None,
        Some("w3c"),
        0,
        Some(0),
    ),
    (
        "format-samples/matomo_alb.log",
        None,
        Some("alb"),
        0,
        Some(0),
    ),
    // a `#` comment line and a TCP-listener line (no HTTP request) are skipped, not bad
    (
        "format-samples/matomo_elb.log",
        None,
        Some("elb"),
        0,
        Some(0),
    ),
];

/// Checks one file's detection and bad-line counts against its expectation.
fn check(name: &str, data: &[u8], e: &Expected, failures: &mut Vec<String>) {
    let (_, _, want, max_bad, exact_bad) = e;
    let o = run(data);
    let got = o.format.as_ref().map(|f| f.name());
    eprintln!(
        "{name:50} {:14} conf {:.3} ok {:6} skipped {:3} bad {:5} {:?}",
        got.as_deref().unwrap_or("-"),
        o.confidence,
        o.ok,
        o.skipped,
        o.bad,
        o.reasons
    );
    if got.as_deref() != *want {
        failures.push(format!("{name}: detected {got:?}, want {want:?}"));
    }
    if o.bad > *max_bad {
        failures.push(format!("{name}: {} bad lines > {max_bad}", o.bad));
    }
    if let Some(x) = exact_bad
        && o.bad != *x
    {
        failures.push(format!("{name}: {} bad lines != {x}", o.bad));
    }
}

/// Files under `dir` (recursively), relative, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn every_copied_real_file() {
    // Every log under fixtures/logs is covered by the table.
    let logs = Path::new(FIXTURES).join("logs");
    let known: HashSet<&str> = EXPECTED.iter().filter_map(|e| e.1).collect();
    let mut failures = Vec::new();
    for f in files_under(&logs) {
        let rel = format!("logs/{f}");
        if !known.contains(rel.as_str()) {
            failures.push(format!("fixtures/{rel}: not in the expectation table"));
        }
    }
    for e in EXPECTED {
        if let Some(rel) = e.1 {
            check(&format!("fixtures/{rel}"), &fixture(rel), e, &mut failures);
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
#[ignore = "needs ../shared/data/real: honeynet, NASA, almhuette, zanbil, netnea, scanner-lab and matomo logs may not be copied (licence unclear, non-commercial or GPL)"]
fn every_shared_only_real_file() {
    let dir = real_dir();
    // Every data file of the collection is covered by the table.
    let known: HashSet<&str> = EXPECTED.iter().map(|e| e.0).collect();
    let mut failures = Vec::new();
    for f in files_under(&dir) {
        if f.contains('/') && !known.contains(f.as_str()) {
            failures.push(format!("{f}: not in the expectation table"));
        }
    }
    for e in EXPECTED {
        let data = shared(e.0);
        match e.1 {
            // The copies in fixtures/ are byte-identical to the collection's files.
            Some(rel) => {
                if std::fs::read(Path::new(FIXTURES).join(rel)).unwrap() != data {
                    failures.push(format!("fixtures/{rel} differs from {}", e.0));
                }
            }
            None => check(e.0, &data, e, &mut failures),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn exact_values_of_copied_logs() {
    let data = fixture("logs/elastic-apache.log");
    let first = lines(&data)[0];
    let mut p = Format::Combined.parser(&ParseOptions::default());
    let r = p.parse(first).unwrap();
    assert_eq!(r.client, b"83.149.9.216");
    assert_eq!(r.ip, Some("83.149.9.216".parse().unwrap()));
    assert_eq!(
        r.ts_ms,
        time::parse_rfc3339_ms(b"2015-05-17T10:05:03Z").unwrap()
    );
    assert_eq!(r.precision, Precision::Second);
    assert_eq!(r.status, 200);
    assert_eq!(r.bytes, Some(203023));
    assert_eq!(r.method, Some(&b"GET"[..]));
    assert_eq!(
        r.path,
        Some(&b"/presentations/logstash-monitorama-2013/images/kibana-search.png"[..])
    );
    assert_eq!(r.protocol, Some(&b"HTTP/1.1"[..]));

    // basjes: IPv6 clients.
    let data = fixture("logs/basjes-hackers-access.log");
    let mut p = Format::Combined.parser(&ParseOptions::default());
    let v6: HashSet<Vec<u8>> = lines(&data)
        .into_iter()
        .filter_map(|l| {
            let r = p.parse(l).ok()?;
            r.ip.filter(|ip| ip.is_ipv6()).map(|_| r.client.to_vec())
        })
        .collect();
    assert_eq!(v6.len(), 2);

    // Caddy: client_ip, not remote_ip; arrival = ts − duration.
    let data = fixture("logs/caddy-mirror.json.log");
    let mut p = Format::CaddyJson.parser(&ParseOptions::default());
    let r = p.parse(lines(&data)[0]).unwrap();
    assert_eq!(r.client, b"10.10.10.117");
    assert_eq!(r.ts_ms, 1_716_723_772_583); // 1716723772.6014807 − 0.017557019
    assert_eq!(r.request_time_us, Some(17_557));
    assert_eq!(r.status, 200);
    assert_eq!(r.bytes, Some(3768));
    assert_eq!(r.host, Some(&b"mirrors.tnonline.net:400"[..]));
    assert_eq!(r.protocol, Some(&b"HTTP/2.0"[..]));
    assert_eq!(r.user, None);
    let v6 = lines(&data)
        .into_iter()
        .filter_map(|l| p.parse(l).ok().and_then(|r| r.ip))
        .filter(|ip| ip.is_ipv6())
        .count();
    assert_eq!(v6, 1);
}

#[test]
#[ignore = "needs ../shared/data/real: the honeynet, netnea and zanbil logs may not be copied (licence unclear or non-commercial)"]
fn exact_values_of_shared_only_logs() {
    // Honeynet: distinct clients (9,268 IPv4 + 1 host name).
    let data = shared("honeynet-2004/access_log.all.gz");
    let mut p = Format::Combined.parser(&ParseOptions::default());
    let mut clients = HashSet::new();
    let mut hosts = 0;
    let mut last = i64::MIN;
    for l in lines(&data) {
        if let Ok(r) = p.parse(l) {
            if r.ip.is_none() && clients.insert(r.client.to_vec()) {
                hosts += 1;
            } else {
                clients.insert(r.client.to_vec());
            }
            assert!(r.ts_ms >= last, "honeynet is sorted");
            last = r.ts_ms;
        }
    }
    assert_eq!(clients.len(), 9_269);
    assert_eq!(hosts, 1);
    // last line: 11/Oct/2004:07:11:31 -0400
    assert_eq!(
        last,
        time::parse_rfc3339_ms(b"2004-10-11T11:11:31Z").unwrap()
    );

    // netnea: ISO time with µs, no zone; %D.
    let data = shared("netnea-extended/labor-04-example-access.log");
    let mut p = Format::Netnea.parser(&ParseOptions {
        default_offset_secs: 7200,
    });
    let r = p.parse(lines(&data)[0]).unwrap();
    assert_eq!(
        r.ts_ms,
        time::parse_rfc3339_ms(b"2015-09-02T10:42:51.003372+02:00").unwrap()
    );
    assert_eq!(r.precision, Precision::Micro);
    assert_eq!(r.request_time_us, Some(88871));
    assert_eq!(r.bytes, Some(7113));
    assert_eq!(r.ident, None); // the ident slot holds %{GEOIP_COUNTRY_CODE}e, ignored
    assert_eq!(r.host, Some(&b"www.example.com"[..]));
    assert_eq!(r.has_cookie, None);

    // zanbil: +0330.
    let data = shared("zanbil-slice/zanbil_first1000.log");
    let mut p = Format::CombinedXff.parser(&ParseOptions::default());
    let r = p.parse(lines(&data)[0]).unwrap();
    assert_eq!(
        r.ts_ms,
        time::parse_rfc3339_ms(b"2019-01-22T00:26:14Z").unwrap()
    );
    assert_eq!(r.xff, None);
}

#[test]
fn oracle_msec_arrival() {
    let dir = PathBuf::from(ORACLE);
    let log = read(&dir.join("access_msec.log.zst"));
    let csv = String::from_utf8(read(&dir.join("requests.csv.zst"))).unwrap();
    let ls = lines(&log);
    assert_eq!(ls.len(), 18_743);
    let d = detect(&ls[..200.min(ls.len())]).unwrap();
    assert_eq!(d.format, Format::NginxMsec);
    assert_eq!(d.confidence, 1.0);
    let mut p = d.format.parser(&ParseOptions::default());
    let mut rows = csv.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let start_col = header.iter().position(|h| *h == "start_ms").unwrap();
    let rt_col = header.iter().position(|h| *h == "request_time_ms").unwrap();
    let mut n = 0;
    for (l, row) in ls.iter().zip(rows) {
        let cols: Vec<&str> = row.split(',').collect();
        let r = p.parse(l).unwrap();
        assert_eq!(r.ts_ms, cols[start_col].parse::<i64>().unwrap(), "{row}");
        assert_eq!(
            r.request_time_us,
            Some(cols[rt_col].parse::<u64>().unwrap() * 1000)
        );
        assert_eq!(r.precision, Precision::Milli);
        n += 1;
    }
    assert_eq!(n, ls.len());
}
