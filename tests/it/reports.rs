//! `logscope heavy`, `concentration` and `agents` through the binary: snapshots of every
//! output format on fixtures (checked in under fixtures/reports/; `UPDATE_SNAPSHOTS=1`
//! rewrites them), a generated storm hour built like seed 002's (7,288 anonymous heavy
//! requests from 726 /24s, the largest 6.0%), and the figures SOURCES.md documents for
//! the real logs.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::*;

/// Runs a report in `dir` (relative file names keep paths out of the output).
fn report(dir: &Path, args: &[&str]) -> (String, String, i32) {
    let data = dir.join("no-dataset");
    let out = logscope(&data)
        .current_dir(dir)
        .args(args)
        .output()
        .expect("runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn json(dir: &Path, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    let (out, err, code) = report(dir, &a);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {out}"))
}

/// Compares with fixtures/reports/NAME, or writes it with UPDATE_SNAPSHOTS=1.
fn snapshot(name: &str, actual: &str) {
    let path = fixture("reports").join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} missing: run with UPDATE_SNAPSHOTS=1", path.display()));
    if expected != actual {
        let diff: Vec<String> = expected
            .lines()
            .zip(actual.lines())
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .take(5)
            .map(|(i, (a, b))| format!("line {}:\n  expected: {a}\n  actual:   {b}", i + 1))
            .collect();
        panic!(
            "{name} differs from the snapshot ({} vs {} lines):\n{}\n(UPDATE_SNAPSHOTS=1 rewrites it)",
            expected.lines().count(),
            actual.lines().count(),
            diff.join("\n")
        );
    }
}

// ---------------------------------------------------------------------------------------
// The storm hour.

/// Counts of the generated hour.
struct Storm {
    /// Anonymous heavy requests.
    heavy_anon: u64,
    /// Heavy requests with a Cookie header (identity unknown by default).
    heavy_cookie: u64,
    /// Reads.
    reads: u64,
    /// Reads from mobile browsers.
    reads_mobile: u64,
}

const MOBILE: [&str; 4] = [
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/126.0.6478.54 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; SM-S918N) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36",
];
const OTHER: [&str; 4] = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
    "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0",
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
];

/// Writes the storm hour as Caddy JSON (2026-09-25 05:00–06:00 UTC, 14:00 in Seoul):
/// 7,288 anonymous heavy requests from 726 /24s — the largest with 437 (6.0%), 326 with
/// 10, 399 with 9 — per 10 minutes 900, 1,100, 1,955, 1,400, 1,033, 900; all claiming
/// iPhone or Android. Around them: 50 heavy requests with a Cookie header, and 2,453 reads
/// (a third from phones, the rest desktops and crawlers). Deterministic.
fn write_storm(path: &Path) -> Storm {
    let mut rng = Rng(0x5eed_0002);
    let start_s: u64 = 1_790_312_400; // 2026-09-25T05:00:00Z
    // 726 distinct /24s, public-looking.
    let mut prefixes: Vec<[u8; 3]> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    while prefixes.len() < 726 {
        let a = 11 + rng.below(212) as u8;
        if a == 127 || a == 100 || a == 172 || a == 192 || a == 169 || a == 198 || a == 203 {
            continue;
        }
        let p = [a, rng.below(256) as u8, rng.below(256) as u8];
        if seen.insert(p) {
            prefixes.push(p);
        }
    }
    let mut counts = vec![437u64];
    counts.extend(std::iter::repeat_n(10, 326));
    counts.extend(std::iter::repeat_n(9, 399));
    assert_eq!(counts.iter().sum::<u64>(), 7_288);
    let mut owners: Vec<usize> = Vec::new();
    for (i, c) in counts.iter().enumerate() {
        owners.extend(std::iter::repeat_n(i, *c as usize));
    }
    // Shuffle deterministically, then lay out over the 10-minute windows.
    for i in (1..owners.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        owners.swap(i, j);
    }
    let windows = [900u64, 1_100, 1_955, 1_400, 1_033, 900];
    let mut lines: Vec<(u64, String)> = Vec::new();
    let heavy_queries = [
        "title=Special:Search&search=",
        "title=Page&diff=",
        "title=Page&oldid=",
        "title=Page&action=history&x=",
    ];
    let mut k = 0usize;
    for (w, n) in windows.iter().enumerate() {
        for _ in 0..*n {
            let p = prefixes[owners[k]];
            k += 1;
            let ms = (w as u64 * 600 + rng.below(600)) * 1000 + rng.below(1000);
            let ip = format!("{}.{}.{}.{}", p[0], p[1], p[2], 1 + rng.below(254));
            let q = heavy_queries[rng.below(4) as usize];
            let ua = MOBILE[rng.below(4) as usize];
            lines.push((
                ms,
                entry(
                    start_s,
                    ms,
                    &ip,
                    &format!("/index.php?{q}{}", rng.below(100_000)),
                    ua,
                    false,
                ),
            ));
        }
    }
    // Heavy requests of logged-in-looking clients (a Cookie header), from 203.0.113.0/24.
    for _ in 0..50 {
        let ms = rng.below(3_600_000);
        let ip = format!("203.0.113.{}", 1 + rng.below(20));
        lines.push((
            ms,
            entry(
                start_s,
                ms,
                &ip,
                "/index.php?title=Page&action=history",
                OTHER[0],
                true,
            ),
        ));
    }
    // Reads.
    let mut reads_mobile = 0;
    for i in 0..2_453u64 {
        let ms = rng.below(3_600_000);
        let ip = format!("198.51.100.{}", 1 + rng.below(200));
        let ua = if i % 3 == 0 {
            reads_mobile += 1;
            MOBILE[rng.below(4) as usize]
        } else {
            OTHER[rng.below(4) as usize]
        };
        lines.push((
            ms,
            entry(
                start_s,
                ms,
                &ip,
                &format!("/wiki/Page_{}", rng.below(5_000)),
                ua,
                false,
            ),
        ));
    }
    lines.sort();
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for (_, l) in &lines {
        writeln!(f, "{l}").unwrap();
    }
    f.flush().unwrap();
    Storm {
        heavy_anon: 7_288,
        heavy_cookie: 50,
        reads: 2_453,
        reads_mobile,
    }
}

/// One Caddy access-log entry that arrived `ms` after `start_s` and took 50 ms.
fn entry(start_s: u64, ms: u64, ip: &str, uri: &str, ua: &str, cookie: bool) -> String {
    let done_ms = start_s * 1000 + ms + 50;
    let cookie = if cookie {
        r#","Cookie":["REDACTED"]"#
    } else {
        ""
    };
    format!(
        r#"{{"level":"info","ts":{}.{:03},"logger":"http.log.access","msg":"handled request","request":{{"remote_ip":"{ip}","remote_port":"40000","client_ip":"{ip}","proto":"HTTP/2.0","method":"GET","host":"wiki.example","uri":"{uri}","headers":{{"User-Agent":["{ua}"]{cookie}}}}},"bytes_read":0,"user_id":"","duration":0.05,"size":5120,"status":200}}"#,
        done_ms / 1000,
        done_ms % 1000
    )
}

fn storm_dir() -> (tempfile::TempDir, Storm) {
    let tmp = tempfile::tempdir().unwrap();
    let s = write_storm(&tmp.path().join("storm.json.log"));
    (tmp, s)
}

#[test]
fn storm_hour_shows_the_seed_figures() {
    let (tmp, s) = storm_dir();
    let dir = tmp.path();
    let f = "storm.json.log";

    // heavy: one hour, 7,288 anonymous heavy requests from 726 /24s, the largest 6.0%.
    let h = json(
        dir,
        &[
            "heavy",
            "--by",
            "1h",
            "--anonymous",
            "--capacity",
            "1610/10m",
            f,
        ],
    );
    assert_eq!(h["heavy"], 7_288);
    assert_eq!(h["distinct_prefixes"], 726);
    assert_eq!(h["top_prefix_requests"], 437);
    assert_eq!(
        format!("{:.1}", h["top_prefix_share"].as_f64().unwrap() * 100.0),
        "6.0"
    );
    let b = h["buckets"].as_array().unwrap();
    assert_eq!(b.len(), 1);
    assert_eq!(b[0]["start"], "2026-09-25T05:00:00.000Z");
    assert_eq!(b[0]["heavy"], 7_288);
    assert_eq!(b[0]["distinct_prefixes"], 726);
    assert_eq!(b[0]["peak"], 1_955);
    assert_eq!(b[0]["over_capacity"], true);
    assert_eq!(b[0]["agent"], "android");
    // All heavy requests, identity aside: the 50 with a Cookie header join.
    let all = json(dir, &["heavy", "--by", "1h", f]);
    assert_eq!(all["heavy"], s.heavy_anon + s.heavy_cookie);
    assert_eq!(all["requests"], s.heavy_anon + s.heavy_cookie + s.reads);
    // …and count as identified only when told which cookie is a session.
    let ident = json(
        dir,
        &[
            "heavy",
            "--by",
            "1h",
            "--anonymous",
            "--session-cookie",
            "wiki_session",
            f,
        ],
    );
    assert_eq!(ident["heavy"], 7_288);

    // 10-minute buckets in Seoul time: the third is over the capacity.
    let t = json(
        dir,
        &[
            "heavy",
            "--by",
            "10m",
            "--anonymous",
            "--capacity",
            "1610/10m",
            "--tz",
            "Asia/Seoul",
            f,
        ],
    );
    let heavy: Vec<u64> = t["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["heavy"].as_u64().unwrap())
        .collect();
    assert_eq!(heavy, [900, 1_100, 1_955, 1_400, 1_033, 900]);
    assert_eq!(t["buckets"][2]["start"], "2026-09-25T14:20:00.000+09:00");
    assert_eq!(t["buckets_over_capacity"], 1);
    let (text, _, _) = report(
        dir,
        &[
            "heavy",
            "--by",
            "10m",
            "--anonymous",
            "--capacity",
            "1610/10m",
            f,
        ],
    );
    assert!(text.contains("1,955!"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");

    // concentration: 726 prefixes, largest 6.0%, a per-/24 limit barely touches it.
    let c = json(
        dir,
        &[
            "concentration",
            "--heavy",
            "--anonymous",
            "--per-prefix-limit",
            "100/1h",
            f,
        ],
    );
    assert_eq!(c["requests"], 7_288);
    assert_eq!(c["groups"], 726);
    assert_eq!(c["top"][0]["requests"], 437);
    assert_eq!(
        format!("{:.1}", c["top_share"].as_f64().unwrap() * 100.0),
        "6.0"
    );
    assert_eq!(c["limit"]["groups_over"], 1);
    assert_eq!(c["limit"]["requests_over_limit"], 337);
    assert!(
        c["groups_for_50"].as_u64().unwrap() > 300,
        "{}",
        c["groups_for_50"]
    );
    // Selected by time in Seoul: the same hour.
    let seoul = json(
        dir,
        &[
            "concentration",
            "--heavy",
            "--anonymous",
            "--tz",
            "Asia/Seoul",
            "--since",
            "2026-09-25T14:00",
            "--until",
            "2026-09-25T15:00",
            f,
        ],
    );
    assert_eq!(seoul["requests"], 7_288);
    let before = json(
        dir,
        &[
            "concentration",
            "--heavy",
            "--anonymous",
            "--until",
            "2026-09-25T05:00:00.000Z",
            f,
        ],
    );
    assert_eq!(before["requests"], 0);

    // agents: the heavy anonymous load is 100% phones; all traffic much less.
    let a = json(
        dir,
        &["agents", "--heavy", "--anonymous", "--sample", "500", f],
    );
    assert_eq!(a["selected"], 7_288);
    assert_eq!(a["mobile_selected"], 7_288);
    let all_mobile = s.heavy_anon + s.reads_mobile;
    assert_eq!(a["mobile_all"], all_mobile);
    assert_eq!(a["all"], s.heavy_anon + s.heavy_cookie + s.reads);
    let sample = a["sample"].as_array().unwrap();
    assert_eq!(sample.len(), 500);
    assert!(
        sample
            .iter()
            .all(|r| r["class"] == "ios" || r["class"] == "android")
    );
    // The sample is seeded: same seed, same rows; another seed, other rows.
    let again = json(
        dir,
        &["agents", "--heavy", "--anonymous", "--sample", "500", f],
    );
    assert_eq!(a, again);
    let other = json(
        dir,
        &[
            "agents",
            "--heavy",
            "--anonymous",
            "--sample",
            "500",
            "--seed",
            "2",
            f,
        ],
    );
    assert_ne!(a["sample"], other["sample"]);
    let bots = json(dir, &["agents", "--agent", "ai", f]);
    assert_eq!(bots["bots"][0]["name"], "GPTBot");
}

#[test]
fn storm_snapshots() {
    let (tmp, _) = storm_dir();
    let dir = tmp.path();
    let f = "storm.json.log";
    for (name, args) in [
        (
            "storm-heavy-10m.txt",
            vec![
                "heavy",
                "--by",
                "10m",
                "--anonymous",
                "--capacity",
                "1610/10m",
                "--tz",
                "Asia/Seoul",
            ],
        ),
        (
            "storm-concentration.txt",
            vec![
                "concentration",
                "--heavy",
                "--anonymous",
                "--top",
                "10",
                "--per-prefix-limit",
                "100/1h",
            ],
        ),
        (
            "storm-agents.txt",
            vec!["agents", "--heavy", "--anonymous", "--sample", "5"],
        ),
    ] {
        let mut a = args.clone();
        a.push(f);
        let (out, err, code) = report(dir, &a);
        assert_eq!(code, 0, "{err}");
        assert!(
            out.lines().all(|l| l.chars().count() <= 80),
            "{name}:\n{out}"
        );
        snapshot(name, &out);
    }
}

// ---------------------------------------------------------------------------------------
// Fixtures and real logs.

fn logs_dir() -> PathBuf {
    fixture("logs")
}

#[test]
fn every_format_on_the_sample_log() {
    let dir = logs_dir();
    let f = "elastic-apache.log";
    for (cmd, extra) in [
        ("heavy", vec!["--by", "1d"]),
        (
            "concentration",
            vec!["--top", "10", "--per-prefix-limit", "100/1h"],
        ),
        ("agents", vec!["--agent", "bot", "--top", "8"]),
    ] {
        let mut outputs = Vec::new();
        for (format, ext) in [
            ("text", "txt"),
            ("md", "md"),
            ("csv", "csv"),
            ("json", "json"),
            ("html", "html"),
        ] {
            let mut a = vec![cmd];
            a.extend(extra.iter().copied());
            a.extend(["--format", format, f]);
            let (out, err, code) = report(&dir, &a);
            assert_eq!(code, 0, "{cmd} {format}: {err}");
            // The one truncated line of the file is reported, and the rest read.
            assert!(err.contains("elastic-apache.log:8899:"), "{err}");
            // Byte-identical on a second run.
            let (again, _, _) = report(&dir, &a);
            assert_eq!(out, again, "{cmd} {format} is not deterministic");
            if format == "json" {
                serde_json::from_str::<Value>(&out).expect("JSON");
            }
            if format == "text" {
                assert!(
                    out.lines().all(|l| l.chars().count() <= 80),
                    "{cmd}:\n{out}"
                );
                assert!(!out.contains('\x1b'));
            }
            snapshot(&format!("elastic-{cmd}.{ext}"), &out);
            outputs.push((format, out));
        }
        // Every format shows the same figures: the first row of the report's main table,
        // as JSON has it, is one row (line, or HTML table row) of every other format.
        let j: Value = serde_json::from_str(&outputs[3].1).expect("JSON");
        let (label, count) = match cmd {
            "heavy" => (
                j["buckets"][0]["start"].as_str().unwrap()[..10].to_string(),
                &j["buckets"][0]["requests"],
            ),
            "concentration" => (
                j["top"][0]["group"].as_str().unwrap().to_string(),
                &j["top"][0]["requests"],
            ),
            _ => (
                j["families"][0]["name"].as_str().unwrap().to_string(),
                &j["families"][0]["selected"],
            ),
        };
        let count = count.as_u64().expect("a count");
        assert!(count > 0, "{cmd}: {j}");
        let count = count.to_string();
        for (format, out) in &outputs {
            assert!(!out.trim().is_empty(), "{cmd} {format}: empty");
            if *format == "json" {
                continue;
            }
            let rows: Vec<&str> = if *format == "html" {
                out.split("<tr").skip(1).collect()
            } else {
                out.lines().collect()
            };
            assert!(
                // Counts may carry thousands separators.
                rows.iter()
                    .any(|r| r.contains(&label) && r.replace(',', "").contains(&count)),
                "{cmd} {format}: no row with {label} and {count}:\n{out}"
            );
        }
    }
}

#[test]
fn elastic_apache_documented_figures() {
    // SOURCES.md: 1,474 distinct /24s; the top /24 is 66.249.73.0/24 with 5.4%.
    let c = json(&logs_dir(), &["concentration", "elastic-apache.log"]);
    assert_eq!(c["groups"], 1_474);
    assert_eq!(c["top"][0]["group"], "66.249.73.0/24");
    assert_eq!(
        format!("{:.1}", c["top_share"].as_f64().unwrap() * 100.0),
        "5.4"
    );
    assert_eq!(c["top"][0]["agent"], "Googlebot");
    let sum: f64 = json(
        &logs_dir(),
        &["concentration", "--top", "100000", "elastic-apache.log"],
    )["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["share"].as_f64().unwrap())
        .sum();
    assert!((sum - 1.0).abs() < 1e-9, "{sum}");
    // The same figures from the dataset.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (_, code) = ingest_json(
        &data,
        &[logs_dir().join("elastic-apache.log").to_str().unwrap()],
    );
    assert_eq!(code, 0);
    let out = logscope(&data)
        .args(["concentration", "--format", "json"])
        .output()
        .unwrap();
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(d["groups"], 1_474);
    assert_eq!(d["top"][0]["group"], "66.249.73.0/24");
    assert_eq!(d["hhi"], c["hhi"]);
    // Filters: a status class, a path, an agent and a client network.
    let s = json(
        &logs_dir(),
        &["concentration", "--status", "404", "elastic-apache.log"],
    );
    assert!(s["requests"].as_u64().unwrap() > 0 && s["requests"].as_u64().unwrap() < 9_999);
    let g = json(
        &logs_dir(),
        &[
            "concentration",
            "--client",
            "66.249.73.0/24",
            "--agent",
            "googlebot",
            "elastic-apache.log",
        ],
    );
    assert_eq!(g["groups"], 1);
    // Combined logs carry no cookie information: nobody is "anonymous" by assumption.
    let anon = json(
        &logs_dir(),
        &["concentration", "--anonymous", "elastic-apache.log"],
    );
    assert_eq!(anon["requests"], 0);
}

#[test]
#[ignore = "needs ../shared/data/real: the honeynet log (13 MB, licence unclear) may not be copied"]
fn honeynet_documented_figures() {
    let log = shared_real("honeynet-2004/access_log.all.gz");
    let dir = log.parent().unwrap();
    let name = log.file_name().unwrap().to_str().unwrap();
    // SOURCES.md: 63.126.133.0/24 has 26.1% of requests, 82.82.97.119 alone 16.0%.
    let c = json(dir, &["concentration", name]);
    assert_eq!(c["top"][0]["group"], "63.126.133.0/24");
    assert_eq!(
        format!("{:.1}", c["top_share"].as_f64().unwrap() * 100.0),
        "26.1"
    );
    let ip = json(dir, &["concentration", "--by", "ip", name]);
    assert_eq!(ip["top"][0]["group"], "82.82.97.119");
    assert_eq!(
        format!("{:.1}", ip["top_share"].as_f64().unwrap() * 100.0),
        "16.0"
    );
    // The one host-name client is its own group.
    assert!(ip["requests_from_host_names"].as_u64().unwrap() >= 10);
}

#[test]
fn bad_options_are_usage_errors() {
    let dir = logs_dir();
    for args in [
        vec!["heavy", "--by", "soon", "elastic-apache.log"],
        vec!["heavy", "--capacity", "lots", "elastic-apache.log"],
        vec!["concentration", "--prefix-v4", "33", "elastic-apache.log"],
    ] {
        let (_, _, code) = report(&dir, &args);
        assert_eq!(code, 2, "{args:?}");
    }
    for args in [
        vec!["concentration", "--status", "5x", "elastic-apache.log"],
        vec!["concentration", "--path", "(", "elastic-apache.log"],
        vec!["concentration", "--tz", "Mars/Base", "elastic-apache.log"],
        vec!["concentration", "--by", "asn", "elastic-apache.log"],
        vec!["agents", "--since", "tomorrow", "elastic-apache.log"],
    ] {
        let (_, err, code) = report(&dir, &args);
        assert_eq!(code, 2, "{args:?}: {err}");
    }
}

#[test]
fn rules_file_and_asn_db() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::copy(logs_dir().join("elastic-apache.log"), dir.join("a.log")).unwrap();
    // A logscope.toml in the current directory is found; it makes image requests heavy.
    std::fs::write(
        dir.join("logscope.toml"),
        "[[heavy.class]]\nname = \"images\"\npath = '\\.png$'\n\n[[agent]]\nname = \"Kibana fan\"\nregex = 'Kibana'\ndevice = \"tool\"\n",
    )
    .unwrap();
    let h = json(dir, &["heavy", "--by", "1d", "a.log"]);
    assert!(h["heavy"].as_u64().unwrap() > 1_000, "{}", h["heavy"]);
    assert_eq!(h["classes"][0]["class"], "images");
    // The example config parses.
    let h2 = json(
        dir,
        &[
            "heavy",
            "--rules",
            fixture("logscope.toml").to_str().unwrap(),
            "a.log",
        ],
    );
    assert_eq!(h2["prefix_v4"], 24);
    // An ip2asn TSV adds AS grouping.
    std::fs::write(
        dir.join("asn.tsv"),
        "66.249.64.0\t66.249.95.255\t15169\tUS\tGOOGLE\n1.0.0.0\t1.0.0.255\t13335\tUS\tCLOUDFLARENET\n",
    )
    .unwrap();
    let a = json(
        dir,
        &[
            "concentration",
            "--by",
            "asn",
            "--asn-db",
            "asn.tsv",
            "a.log",
        ],
    );
    assert_eq!(a["top"][0]["group"], "(no AS)");
    assert_eq!(a["top"][1]["group"], "AS15169");
    assert_eq!(a["top"][1]["asn"]["name"], "GOOGLE");
}
