//! GoAccess's panels against GoAccess itself (Debian's goaccess 1.7, run offline on the
//! same file, its JSON output read back): unique visitors per day, the time
//! distribution by hour, referring sites, and `report`'s unique visitors key figure.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{Rng, fixture, run_in};

/// The elastic Apache fixture without the line logscope refuses (GoAccess reads it), and
/// a generated day that tells GoAccess's visitor apart from a distinct address: several
/// agents per address (one differing only in its blanks, which GoAccess 1.7 counts as
/// another), 4xx answers (which it does not count as a visit).
fn log(dir: &Path) -> std::path::PathBuf {
    let src = fixture("logs/elastic-apache.log");
    let j = top_json(dir, &["--by", "day", src.to_str().unwrap()]);
    assert_eq!(j["inputs"]["bad"], 1, "{}", j["inputs"]);
    let bad = j["inputs"]["first_bad"]["line"].as_u64().unwrap() as usize;
    let text = std::fs::read_to_string(&src).unwrap();
    let mut lines: Vec<String> = text
        .lines()
        .enumerate()
        .filter(|(n, _)| n + 1 != bad)
        .map(|(_, l)| l.to_string())
        .collect();
    let mut rng = Rng(0x6f0a_cce5);
    let agents = [
        "Mozilla/5.0 (X11; Linux x86_64) Firefox/38.0",
        "Mozilla/5.0  (X11; Linux x86_64)  Firefox/38.0",
        "curl/7.38.0",
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    ];
    let statuses = [200, 200, 304, 404, 403, 500];
    let referers = [
        "-",
        "http://example.org/a",
        "https://www.example.net:8443/x?y=1",
    ];
    for k in 0..400u64 {
        let ip = format!("198.51.100.{}", rng.below(30));
        let ts = k * 200;
        lines.push(format!(
            "{ip} - - [21/May/2015:{:02}:{:02}:{:02} +0000] \"GET /p/{} HTTP/1.1\" {} {} \"{}\" \"{}\"",
            ts / 3600 % 24,
            ts / 60 % 60,
            ts % 60,
            rng.below(9),
            statuses[rng.below(6) as usize],
            rng.below(5000),
            referers[rng.below(3) as usize],
            agents[rng.below(4) as usize],
        ));
    }
    let path = dir.join("access.log");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// `logscope top ARGS --format json`, which must succeed.
fn top_json(dir: &Path, args: &[&str]) -> Value {
    let mut a = vec!["top"];
    a.extend_from_slice(args);
    a.extend(["--format", "json"]);
    let (out, err, code) = run_in(dir, &a);
    assert_eq!(code, 0, "{a:?}: {err}");
    serde_json::from_str(&out).unwrap()
}

/// Its rows: value → (requests, clients).
fn top_rows(j: &Value) -> BTreeMap<Option<String>, (u64, u64)> {
    j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["value"].as_str().map(str::to_string),
                (
                    r["requests"].as_u64().unwrap(),
                    r["clients"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

/// Whether goaccess is installed; without it the tests skip, unless CI is set.
fn have_goaccess() -> bool {
    let found = Command::new("goaccess")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        println!("SKIPPED: goaccess is not installed (apt-get install -y goaccess)");
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but goaccess is not installed"
        );
    }
    found
}

/// GoAccess's JSON report of `log`, with `extra` arguments.
fn goaccess(dir: &Path, log: &Path, extra: &[&Path]) -> Value {
    let out = dir.join("goaccess.json");
    let status = Command::new("goaccess")
        .arg(log)
        .args(["--no-global-config", "--log-format=COMBINED"])
        .args(extra)
        .arg("-o")
        .arg(&out)
        .current_dir(dir)
        .output()
        .expect("goaccess runs (Debian package goaccess; .ci/run installs it)");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    // GoAccess copies a log's bytes as they are (real logs have Latin-1 in them).
    serde_json::from_str(&String::from_utf8_lossy(&std::fs::read(&out).unwrap())).unwrap()
}

/// A GoAccess panel's rows: its `data` → (hits, visitors).
fn panel(g: &Value, name: &str) -> BTreeMap<String, (u64, u64)> {
    g[name]["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no panel {name}"))
        .iter()
        .map(|r| {
            (
                r["data"].as_str().unwrap().to_string(),
                (
                    r["hits"]["count"].as_u64().unwrap(),
                    r["visitors"]["count"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

/// `logscope top --by BY --top 0` of `log`: value → (requests, clients).
fn top(dir: &Path, log: &Path, by: &str) -> BTreeMap<Option<String>, (u64, u64)> {
    let j = top_json(dir, &["--by", by, "--top", "0", log.to_str().unwrap()]);
    assert_eq!(j["inputs"]["bad"], 0, "{}", j["inputs"]);
    // A day's visitors are counted exactly, as GoAccess counts them.
    if by == "day" {
        let rows = j["rows"].as_array().unwrap();
        assert!(rows.iter().all(|r| r["clients_estimated"] == false), "{j}");
    }
    top_rows(&j)
}

#[test]
fn visitors_hours_and_referring_sites_are_goaccess_s() {
    if !have_goaccess() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = log(dir.path());
    let g = goaccess(dir.path(), &log, &[]);

    // Unique visitors per day: requests and visitors, day by day.
    let days: BTreeMap<String, (u64, u64)> = top(dir.path(), &log, "day")
        .into_iter()
        .map(|(d, v)| (d.unwrap().replace('-', ""), v))
        .collect();
    assert_eq!(days, panel(&g, "visitors"));
    assert_eq!(days.len(), 5);
    // The sum of the days is the dashboard's figure.
    let total: u64 = days.values().map(|v| v.1).sum();
    assert_eq!(total, g["general"]["unique_visitors"].as_u64().unwrap());

    // The time distribution: requests per hour of the day.
    let hours: BTreeMap<String, u64> = top(dir.path(), &log, "hour")
        .into_iter()
        .map(|(h, v)| (h.unwrap(), v.0))
        .collect();
    let theirs: BTreeMap<String, u64> = panel(&g, "visit_time")
        .into_iter()
        .map(|(h, v)| (h, v.0))
        .collect();
    assert_eq!(hours, theirs);
    assert_eq!(hours.len(), 24);

    // Referring sites: the Referer's host, requests per site (GoAccess leaves out the
    // requests without one; logscope lists them as null).
    let mut sites: BTreeMap<String, u64> = BTreeMap::new();
    for (s, v) in top(dir.path(), &log, "site") {
        if let Some(s) = s {
            sites.insert(s, v.0);
        }
    }
    let theirs: BTreeMap<String, u64> = panel(&g, "referring_sites")
        .into_iter()
        .map(|(s, v)| (s, v.0))
        .collect();
    assert_eq!(sites, theirs);
    assert!(sites.contains_key("www.example.net:8443"), "{sites:?}");

    // report's key figure is the same sum.
    let out = dir.path().join("r");
    let (_, err, code) = run_in(
        dir.path(),
        &[
            "report",
            "--out",
            out.to_str().unwrap(),
            log.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let cells = |l: &str| -> Vec<String> {
        l.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let lines: Vec<&str> = md.lines().collect();
    let head = lines
        .iter()
        .position(|l| l.contains("| unique visitors |"))
        .unwrap_or_else(|| panic!("no key figures:\n{md}"));
    let col = cells(lines[head])
        .iter()
        .position(|c| c == "unique visitors")
        .unwrap();
    let value = &cells(lines[head + 2])[col];
    let digits: String = value
        .split(' ')
        .next()
        .unwrap()
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    assert_eq!(digits, total.to_string(), "{value}");
}

/// `top --by country|asn --asn-db` against GoAccess's geolocation and ASN panels with
/// the same databases (fixtures/geo/*-test.mmdb, documentation ranges only; made by
/// tests/engines/make_test_mmdb.py).
#[test]
fn countries_and_autonomous_systems_are_goaccess_s() {
    if !have_goaccess() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = fixture("geo/country-test.mmdb");
    let ips = [
        "192.0.2.10",
        "192.0.2.11",
        "192.0.2.130",
        "198.51.100.1",
        "203.0.113.9",
        "2001:db8:1::1",
        "2001:db8:2::1",
    ];
    let mut rng = Rng(0x5eed_c0de);
    let lines: Vec<String> = (0..300u64)
        .map(|k| {
            format!(
                "{} - - [17/May/2015:10:{:02}:{:02} +0000] \"GET /a HTTP/1.1\" 200 {} \"-\" \"X/1\"",
                ips[rng.below(ips.len() as u64) as usize],
                k / 60 % 60,
                k % 60,
                rng.below(900),
            )
        })
        .collect();
    let log = dir.path().join("geo.log");
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let g = goaccess(dir.path(), &log, &[Path::new("--geoip-database"), &db]);
    // GoAccess groups countries under continents; the test database has none.
    let mut theirs: BTreeMap<Option<String>, (u64, u64)> = BTreeMap::new();
    for continent in g["geolocation"]["data"].as_array().unwrap() {
        for c in continent["items"].as_array().unwrap() {
            let name = c["data"].as_str().unwrap();
            theirs.insert(
                (name != "Unknown").then(|| name.to_string()),
                (
                    c["hits"]["count"].as_u64().unwrap(),
                    c["visitors"]["count"].as_u64().unwrap(),
                ),
            );
        }
    }
    let db_arg = db.to_str().unwrap();
    let j = top_json(
        dir.path(),
        &[
            "--by",
            "country",
            "--asn-db",
            db_arg,
            "--top",
            "0",
            log.to_str().unwrap(),
        ],
    );
    let ours = top_rows(&j);
    assert_eq!(ours, theirs);
    assert!(ours.contains_key(&Some("JP Japan".to_string())), "{ours:?}");
    assert!(ours.contains_key(&None), "{ours:?}");

    // GoAccess writes an AS as `64496: EXAMPLE-HOSTING` (`00000: Unknown` for none).
    let asn = fixture("geo/asn-test.mmdb");
    let g = goaccess(dir.path(), &log, &[Path::new("--geoip-database"), &asn]);
    let theirs: BTreeMap<Option<String>, (u64, u64)> = panel(&g, "asn")
        .into_iter()
        .map(|(k, v)| {
            let (n, name) = k.split_once(": ").unwrap();
            let n: u32 = n.parse().unwrap();
            ((n != 0).then(|| format!("AS{n} {name}")), v)
        })
        .collect();
    let j = top_json(
        dir.path(),
        &[
            "--by",
            "asn",
            "--asn-db",
            asn.to_str().unwrap(),
            "--top",
            "0",
            log.to_str().unwrap(),
        ],
    );
    let ours = top_rows(&j);
    assert_eq!(ours, theirs);
    assert!(
        ours.contains_key(&Some("AS64498 EXAMPLE-V6".to_string())),
        "{ours:?}"
    );

    // concentration --by asn reads the same database: the same requests per AS.
    let (out, err, code) = run_in(
        dir.path(),
        &[
            "concentration",
            "--by",
            "asn",
            "--asn-db",
            asn.to_str().unwrap(),
            "--format",
            "json",
            log.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let c: Value = serde_json::from_str(&out).unwrap();
    let groups: BTreeMap<String, u64> = c["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["group"].as_str().unwrap().to_string(),
                g["requests"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: BTreeMap<String, u64> = ours
        .iter()
        .map(|(k, v)| {
            let group = k
                .as_deref()
                .map_or("(no AS)", |k| k.split(' ').next().unwrap());
            (group.to_string(), v.0)
        })
        .collect();
    assert_eq!(groups, want);
}

/// The real logs of the research collection (not copied: licences) against GoAccess:
/// unique visitors per day, hours and referring sites on the almhuette and zanbil slices
/// (identical row by row), and visitors per day on the 2004 honeynet log (identical on
/// all 124 days; GoAccess refuses 3,158 of its exploit lines as invalid requests, which
/// logscope counts, so the day's requests differ there).
#[test]
#[ignore = "needs ../shared/data/real: the almhuette, zanbil and honeynet logs may not be copied (licence unclear or non-commercial)"]
fn real_logs_are_goaccess_s() {
    if !have_goaccess() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (rel, tz, all) in [
        (
            "almhuette-slice/almhuette_2019-04-02_03.log",
            "+02:00",
            true,
        ),
        ("zanbil-slice/zanbil_first1000.log", "+03:30", true),
        ("honeynet-2004/access_log.all.gz", "-04:00", false),
    ] {
        let src = crate::common::shared_real(rel);
        // GoAccess reads plain text.
        let log = d.join("real.log");
        let mut text = Vec::new();
        let mut f = std::fs::File::open(&src).unwrap();
        if rel.ends_with(".gz") {
            std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(f), &mut text)
                .unwrap();
        } else {
            std::io::Read::read_to_end(&mut f, &mut text).unwrap();
        }
        std::fs::write(&log, text).unwrap();
        let g = goaccess(d, &log, &[]);
        let tz_arg = format!("--tz={tz}");
        let path = log.to_str().unwrap();
        let days: BTreeMap<String, (u64, u64)> =
            top_rows(&top_json(d, &["--by", "day", "--top", "0", &tz_arg, path]))
                .into_iter()
                .map(|(k, v)| (k.unwrap().replace('-', ""), v))
                .collect();
        let theirs = panel(&g, "visitors");
        let visitors = |m: &BTreeMap<String, (u64, u64)>| -> BTreeMap<String, u64> {
            m.iter().map(|(k, v)| (k.clone(), v.1)).collect()
        };
        assert_eq!(visitors(&days), visitors(&theirs), "{rel}");
        if all {
            assert_eq!(days, theirs, "{rel}");
            let hours: BTreeMap<String, u64> =
                top_rows(&top_json(d, &["--by", "hour", "--top", "0", &tz_arg, path]))
                    .into_iter()
                    .map(|(k, v)| (k.unwrap(), v.0))
                    .collect();
            let theirs: BTreeMap<String, u64> = panel(&g, "visit_time")
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect();
            assert_eq!(hours, theirs, "{rel}");
            let sites: BTreeMap<String, u64> =
                top_rows(&top_json(d, &["--by", "site", "--top", "0", path]))
                    .into_iter()
                    .filter_map(|(k, v)| Some((k?, v.0)))
                    .collect();
            let theirs: BTreeMap<String, u64> = panel(&g, "referring_sites")
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect();
            assert_eq!(sites, theirs, "{rel}");
        }
    }
}
