//! `logscope replay` through the binary: fidelity against a real nginx (the oracle logs
//! copied to fixtures/oracles/nginx-limit-req, zstd-compressed, see fixtures/README.md), from
//! files and from the dataset; seed 002's site-wide cap on a generated storm; story 4's
//! per-address limit that hits the service's own traffic; bad specs; output formats.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::*;

/// Runs `logscope ARGS` in `dir` (no dataset unless `data` is given).
fn run_in(dir: &Path, data: Option<&Path>, args: &[&str]) -> (String, String, i32) {
    run_env(dir, data, &[], args)
}

/// [`run_in`] with environment variables set.
fn run_env(
    dir: &Path,
    data: Option<&Path>,
    env: &[(&str, &str)],
    args: &[&str],
) -> (String, String, i32) {
    let default = dir.join("no-dataset");
    let out = logscope(data.unwrap_or(&default))
        .current_dir(dir)
        .envs(env.iter().copied())
        .args(args)
        .output()
        .expect("runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn json_in(dir: &Path, data: Option<&Path>, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    let (out, err, code) = run_in(dir, data, &a);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {out}"))
}

/// `--decisions` CSV as line → (decision, delay_ms), one candidate.
fn read_decisions(path: &Path) -> BTreeMap<u64, (String, u64)> {
    let text = std::fs::read_to_string(path).expect("decisions written");
    let mut lines = text.lines();
    let header = csv_fields(lines.next().expect("header"));
    for col in [
        "file",
        "line",
        "arrival",
        "candidate",
        "key",
        "decision",
        "delay_ms",
    ] {
        assert!(header.iter().any(|h| h == col), "header lacks {col}");
    }
    let idx = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (li, di, dl) = (idx("line"), idx("decision"), idx("delay_ms"));
    let mut out = BTreeMap::new();
    for l in lines {
        let f = csv_fields(l);
        let d = f[di].clone();
        assert!(matches!(d.as_str(), "admit" | "delay" | "refuse"), "{l}");
        let prev = out.insert(f[li].parse().unwrap(), (d, f[dl].parse().unwrap()));
        assert!(prev.is_none(), "two rows for one request: {l}");
    }
    out
}

// ---------------------------------------------------------------------------------------
// Fidelity against a real nginx.

/// The oracle run `run` (`flash` or `flash_aligned`) in fixtures/: `access_msec.log.zst`,
/// `requests.csv.zst` and, for `flash_aligned`, `access_combined.log.zst`.
fn oracle(run: &str) -> PathBuf {
    let p = fixture("oracles/nginx-limit-req").join(run);
    assert!(
        p.join("access_msec.log.zst").is_file(),
        "{} missing",
        p.display()
    );
    p
}

/// nginx's own decisions from requests.csv: line → (decision word, location).
fn truth(dir: &Path) -> BTreeMap<u64, (&'static str, String)> {
    let raw = std::fs::read(dir.join("requests.csv.zst")).unwrap();
    let text = String::from_utf8(zstd::decode_all(&raw[..]).unwrap()).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (ln, loc, st) = (col("line_no"), col("location"), col("limit_req_status"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let d = match f[st] {
                "PASSED" => "admit",
                "DELAYED" => "delay",
                "REJECTED" => "refuse",
                other => panic!("limit_req_status {other}"),
            };
            (f[ln].parse().unwrap(), (d, f[loc].to_string()))
        })
        .collect()
}

struct Agreement {
    requests: u64,
    agree: u64,
    /// location → (nginx refused, replay refused, nginx delayed, replay delayed)
    per_location: BTreeMap<String, (u64, u64, u64, u64)>,
}

impl Agreement {
    fn pct(&self) -> f64 {
        100.0 * self.agree as f64 / self.requests as f64
    }
}

fn compare(dir: &Path, got: &BTreeMap<u64, (String, u64)>) -> Agreement {
    let mut a = Agreement {
        requests: 0,
        agree: 0,
        per_location: BTreeMap::new(),
    };
    for (line, (want, loc)) in truth(dir) {
        // Requests no rule limits are not in the CSV: nginx passed them.
        let g = got.get(&line).map_or("admit", |(d, _)| d.as_str());
        a.requests += 1;
        a.agree += u64::from(g == want);
        let e = a.per_location.entry(loc).or_default();
        e.0 += u64::from(want == "refuse");
        e.1 += u64::from(g == "refuse");
        e.2 += u64::from(want == "delay");
        e.3 += u64::from(g == "delay");
    }
    a
}

fn print(name: &str, a: &Agreement) {
    println!(
        "{name}: {} requests, agreement with nginx {:.3}%",
        a.requests,
        a.pct()
    );
    println!("  location     nginx-refused replay-refused nginx-delayed replay-delayed");
    for (loc, (nr, rr, nd, rd)) in &a.per_location {
        println!("  {loc:<12} {nr:>13} {rr:>14} {nd:>13} {rd:>14}");
    }
}

fn replay_oracle(dir: &Path, log: &str, tmp: &Path, name: &str) -> BTreeMap<u64, (String, u64)> {
    let out = tmp.join(format!("{name}.csv"));
    let config = fixture("limits/nginx-oracle.toml");
    let (_, err, code) = run_in(
        tmp,
        None,
        &[
            "replay",
            "--config",
            config.to_str().unwrap(),
            "--decisions",
            out.to_str().unwrap(),
            dir.join(log).to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    read_decisions(&out)
}

#[test]
fn fidelity_flash_aligned() {
    let dir = oracle("flash_aligned");
    let tmp = tempfile::tempdir().unwrap();
    let got = replay_oracle(&dir, "access_msec.log.zst", tmp.path(), "aligned");
    let a = compare(&dir, &got);
    print("flash_aligned", &a);
    assert!(a.pct() >= 99.9, "agreement {:.3}%", a.pct());
    for (loc, (nr, rr, nd, rd)) in &a.per_location {
        assert_eq!(nr, rr, "refusals at {loc}");
        assert!(
            nd.abs_diff(*rd) <= nd / 100,
            "delays at {loc}: {nd} vs {rd}"
        );
    }
}

#[test]
fn fidelity_flash_natural_clocks() {
    let dir = oracle("flash");
    let tmp = tempfile::tempdir().unwrap();
    let got = replay_oracle(&dir, "access_msec.log.zst", tmp.path(), "flash");
    let a = compare(&dir, &got);
    print("flash", &a);
    assert!(a.pct() >= 99.0, "agreement {:.3}%", a.pct());
    let (n, r) = a
        .per_location
        .values()
        .fold((0u64, 0u64), |(n, r), v| (n + v.0, r + v.1));
    assert!(
        n.abs_diff(r) as f64 <= 0.01 * n as f64,
        "refusals: nginx {n}, replay {r}"
    );
    for (loc, (nr, rr, _, _)) in &a.per_location {
        assert!(
            nr.abs_diff(*rr) as f64 <= (0.01 * *nr as f64).max(1.0),
            "refusals at {loc}: nginx {nr}, replay {rr}"
        );
    }
}

#[test]
fn fidelity_through_the_dataset() {
    let dir = oracle("flash_aligned");
    let tmp = tempfile::tempdir().unwrap();
    let log = dir.join("access_msec.log.zst");
    let from_file = replay_oracle(&dir, "access_msec.log.zst", tmp.path(), "file");
    let data = tmp.path().join("data");
    let (_, code) = ingest_json(&data, &[log.to_str().unwrap()]);
    assert_eq!(code, 0);
    let out = tmp.path().join("dataset.csv");
    let config = fixture("limits/nginx-oracle.toml");
    let (_, err, code) = run_in(
        tmp.path(),
        Some(&data),
        &[
            "replay",
            "--config",
            config.to_str().unwrap(),
            "--decisions",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let from_dataset = read_decisions(&out);
    assert_eq!(from_dataset.len(), from_file.len());
    assert!(from_dataset == from_file, "the dataset replays differently");
    let a = compare(&dir, &from_dataset);
    print("flash_aligned from the dataset", &a);
    assert!(a.pct() >= 99.9);
}

#[test]
fn combined_log_is_approximate() {
    let dir = oracle("flash_aligned");
    let tmp = tempfile::tempdir().unwrap();
    let config = fixture("limits/nginx-oracle.toml");
    let combined = dir.join("access_combined.log.zst");
    let args = [
        "replay",
        "--config",
        config.to_str().unwrap(),
        combined.to_str().unwrap(),
    ];
    let (out, err, code) = run_in(tmp.path(), None, &args);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("APPROXIMATE"), "{out}");
    assert!(out.contains("12-25%"), "{out}");
    let j = json_in(tmp.path(), None, &args);
    assert_eq!(j["second_resolution"], 18_743);
    assert!(
        j["warnings"][0]
            .as_str()
            .unwrap()
            .starts_with("APPROXIMATE")
    );
    // The exact log has no such warning.
    let msec = dir.join("access_msec.log.zst");
    let (out, _, _) = run_in(
        tmp.path(),
        None,
        &[
            "replay",
            "--config",
            config.to_str().unwrap(),
            msec.to_str().unwrap(),
        ],
    );
    assert!(!out.contains("APPROXIMATE"));
}

#[test]
fn logged_refusals_counted_apart_or_dropped() {
    let dir = oracle("flash_aligned");
    let tmp = tempfile::tempdir().unwrap();
    let log = dir.join("access_msec.log.zst");
    let log = log.to_str().unwrap();
    let j = json_in(tmp.path(), None, &["replay", "--limit", "20r/s", log]);
    assert_eq!(j["logged_refusals"]["replayed"], 7_360);
    assert_eq!(j["candidates"][0]["logged_refusals"]["covered"], 7_360);
    let d = json_in(
        tmp.path(),
        None,
        &["replay", "--limit", "20r/s", "--drop-logged-refusals", log],
    );
    assert_eq!(d["requests"], 18_743 - 7_360);
    assert_eq!(d["logged_refusals"]["dropped"], 7_360);
    assert_eq!(d["logged_refusals"]["replayed"], 0);
}

// ---------------------------------------------------------------------------------------
// Seed 002: a site-wide cap on anonymous heavy requests, against the server's capacity.

const MOBILE: [&str; 2] = [
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; SM-S918N) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36",
];
const DESKTOP: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36";

/// One Caddy access-log entry that arrived `ms` after `start_s` and took 50 ms.
fn caddy(start_s: u64, ms: u64, ip: &str, uri: &str, ua: &str, cookie: bool) -> String {
    let done = start_s * 1000 + ms + 50;
    let cookie = if cookie {
        r#","Cookie":["REDACTED"]"#
    } else {
        ""
    };
    format!(
        r#"{{"level":"info","ts":{}.{:03},"logger":"http.log.access","msg":"handled request","request":{{"remote_ip":"{ip}","remote_port":"40000","client_ip":"{ip}","proto":"HTTP/2.0","method":"GET","host":"wiki.example","uri":"{uri}","headers":{{"User-Agent":["{ua}"]{cookie}}}}},"bytes_read":0,"user_id":"","duration":0.05,"size":5120,"status":200}}"#,
        done / 1000,
        done % 1000
    )
}

/// From the dataset, replay reads the request columns (method, path, query) only where a
/// candidate's matcher needs the heavy class or the fields, and the host where a filter
/// or key does: every such replay gives the report it gives from the log file.
#[test]
fn replays_from_the_dataset_read_what_their_candidates_and_filters_need() {
    let tmp = tempfile::tempdir().unwrap();
    write_storm(&tmp.path().join("storm.json.log"));
    let data = tmp.path().join("data");
    let (_, err, code) = run_in(tmp.path(), Some(&data), &["ingest", "storm.json.log"]);
    assert_eq!(code, 0, "{err}");
    let cases: &[&[&str]] = &[
        &[
            "--limit",
            "1600/10m,scope=anonymous-heavy",
            "--limit",
            "600/10m",
        ],
        &["--heavy", "--anonymous", "--limit", "1600/10m"],
        &["--host", "wiki.example", "--limit", "1600/10m"],
        &["--host", "other.example", "--limit", "1600/10m"],
        &["--limit", "5/m,key=uri", "--limit", "300/10m,key=host"],
        &["--limit", "5000000/10m,cost=bytes"],
    ];
    for case in cases {
        let mut with_file = vec!["replay"];
        with_file.extend_from_slice(case);
        let from_data = with_file.clone();
        with_file.push("storm.json.log");
        let a = json_in(tmp.path(), None, &with_file);
        let b = json_in(tmp.path(), Some(&data), &from_data);
        assert_eq!(a["requests"], b["requests"], "{case:?}");
        assert_eq!(a["candidates"], b["candidates"], "{case:?}");
        assert_eq!(a["over_time"], b["over_time"], "{case:?}");
        assert_eq!(a["classes"], b["classes"], "{case:?}");
    }
    // The heavy scope limited only the heavy requests, and the host filter selects.
    let h = json_in(
        tmp.path(),
        Some(&data),
        &["replay", "--limit", "1600/10m,scope=anonymous-heavy"],
    );
    // 7,288 anonymous heavy requests; the 50 with a Cookie header are unknown (without
    // --session-cookie nothing makes them identified), and unknown is not anonymous.
    assert_eq!(h["candidates"][0]["in_scope"], 7_288);
    // One definition: `--anonymous --heavy` selects the very requests the scope limits.
    let f = json_in(
        tmp.path(),
        Some(&data),
        &["replay", "--heavy", "--anonymous", "--limit", "1600/10m"],
    );
    assert_eq!(f["candidates"][0]["in_scope"], 7_288);
    assert_eq!(f["candidates"][0]["refused"], h["candidates"][0]["refused"]);
    let o = json_in(
        tmp.path(),
        Some(&data),
        &["replay", "--host", "other.example", "--limit", "1600/10m"],
    );
    assert_eq!(o["requests"], 0);
    // A cost in bytes reads the sizes (5,120 a request here): it refuses.
    let c = json_in(
        tmp.path(),
        Some(&data),
        &["replay", "--limit", "5000000/10m,cost=bytes"],
    );
    let refused = c["candidates"][0]["refused"].as_u64().unwrap();
    assert!(refused > 1_000, "{refused}");
}

/// A storm hour like seed 002's (2026-09-25 05:00-06:00 UTC): anonymous heavy requests
/// from 700 /24s claiming phones, per 10 minutes 900, 1,100, 1,955, 1,400, 1,033, 900;
/// 50 heavy requests with a Cookie header; 2,000 reads. Returns the heavy anonymous count.
fn write_storm(path: &Path) -> u64 {
    let mut rng = Rng(0x5eed_0002);
    let start_s: u64 = 1_790_312_400;
    let mut lines: Vec<(u64, String)> = Vec::new();
    let windows = [900u64, 1_100, 1_955, 1_400, 1_033, 900];
    let queries = [
        "title=Special:Search&search=",
        "title=Page&diff=",
        "title=Page&oldid=",
        "title=Page&action=history&x=",
    ];
    for (w, n) in windows.iter().enumerate() {
        for _ in 0..*n {
            let ms = (w as u64 * 600 + rng.below(600)) * 1000 + rng.below(1000);
            let ip = format!(
                "{}.{}.{}.{}",
                20 + rng.below(7),
                rng.below(10),
                rng.below(10),
                1 + rng.below(254)
            );
            let uri = format!(
                "/index.php?{}{}",
                queries[rng.below(4) as usize],
                rng.below(100_000)
            );
            let ua = MOBILE[rng.below(2) as usize];
            lines.push((ms, caddy(start_s, ms, &ip, &uri, ua, false)));
        }
    }
    for _ in 0..50 {
        let ms = rng.below(3_600_000);
        let ip = format!("203.0.113.{}", 1 + rng.below(20));
        let uri = "/index.php?title=Page&action=history";
        lines.push((ms, caddy(start_s, ms, &ip, uri, DESKTOP, true)));
    }
    for _ in 0..2_000 {
        let ms = rng.below(3_600_000);
        let ip = format!("198.51.100.{}", 1 + rng.below(200));
        let uri = format!("/wiki/Page_{}", rng.below(5_000));
        lines.push((ms, caddy(start_s, ms, &ip, &uri, DESKTOP, false)));
    }
    lines.sort();
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for (_, l) in &lines {
        writeln!(f, "{l}").unwrap();
    }
    f.flush().unwrap();
    windows.iter().sum()
}

/// Seed 002: the operators tried caps "from 600 upward" and settled on 1,600/10m. A
/// sweep over the storm names the smallest refusal that keeps every window under the
/// capacity of 1,610: 1,600, in the region the wiki chose; `--emit` writes that one.
#[test]
fn a_sweep_over_the_storm_chooses_the_wikis_cap() {
    let tmp = tempfile::tempdir().unwrap();
    write_storm(&tmp.path().join("storm.json.log"));
    let args = [
        "replay",
        "--sweep",
        "600..2400/10m,step=200,scope=anonymous-heavy",
        "--capacity",
        "1610/10m",
        "--session-cookie",
        "wiki_session",
        "storm.json.log",
    ];
    let j = json_in(tmp.path(), None, &args);
    let sweep = &j["sweep"];
    let rows = sweep["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 10);
    assert_eq!(j["candidates"].as_array().unwrap().len(), 10);
    // Refusals fall as the cap rises; the peak per window rises with it.
    for w in rows.windows(2) {
        assert!(
            w[0]["refused"].as_u64() >= w[1]["refused"].as_u64(),
            "{w:?}"
        );
        assert!(w[0]["peak_per_window"].as_u64() <= w[1]["peak_per_window"].as_u64());
    }
    let chosen = sweep["chosen"].as_str().unwrap();
    assert!(chosen.starts_with("1600/10m"), "{sweep}");
    let row = rows.iter().find(|r| r["candidate"] == chosen).unwrap();
    assert_eq!(row["over_capacity_windows"], 0);
    assert!(row["peak_per_window"].as_u64().unwrap() <= 1_610);
    assert!(row["refused_by_class"]["browser"].as_u64().unwrap() > 0);
    assert_eq!(row["refused_by_class"]["identified"], 0);
    assert!(sweep["knee"].is_string(), "{sweep}");
    // The text names the choice; --emit writes the chosen limit alone.
    let (text, _, code) = run_in(tmp.path(), None, &args);
    assert_eq!(code, 0);
    assert!(text.contains("Choosing the limit: 10 values"), "{text}");
    assert!(text.contains("← chosen"), "{text}");
    let mut emit = args.to_vec();
    emit.extend(["--emit", "nginx"]);
    let (conf, err, code) = run_in(tmp.path(), None, &emit);
    assert_eq!(code, 0, "{err}");
    assert!(conf.contains("1600/10m"), "{conf}");
    assert_eq!(conf.matches("---- candidate").count(), 1, "{conf}");
    assert!(!conf.contains("1800/10m"), "{conf}");
    // A bad range is a usage error with an example.
    let (_, err, code) = run_in(
        tmp.path(),
        None,
        &["replay", "--sweep", "600/10m", "storm.json.log"],
    );
    assert_eq!(code, 2);
    assert!(err.contains("600..2400/10m"), "{err}");
}

#[test]
fn storm_site_wide_cap_holds_capacity() {
    let tmp = tempfile::tempdir().unwrap();
    let heavy = write_storm(&tmp.path().join("storm.json.log"));
    let j = json_in(
        tmp.path(),
        None,
        &[
            "replay",
            "--limit",
            "1600/10m,scope=anonymous-heavy",
            "--limit",
            "600/10m,scope=anonymous-heavy",
            "--capacity",
            "1610/10m",
            "--tz",
            "Asia/Seoul",
            "--session-cookie",
            "wiki_session",
            "storm.json.log",
        ],
    );
    let a = &j["candidates"][0];
    assert_eq!(a["in_scope"], heavy);
    assert_eq!(j["requests"], heavy + 50 + 2_000);
    // The 50 with a session cookie are identified: out of the anonymous scope.
    assert_eq!(a["classes"][1]["requests"], 50);
    assert_eq!(a["classes"][1]["covered"], 0);
    let refused = a["refused"].as_u64().unwrap();
    assert!(refused >= 355, "refused {refused}");
    assert_eq!(
        a["admitted"].as_u64().unwrap() + refused,
        heavy,
        "sliding log never delays"
    );
    let load = &a["load"];
    assert!(load["peak_without"].as_u64().unwrap() >= 1_955, "{load}");
    assert!(load["peak_with"].as_u64().unwrap() <= 1_600, "{load}");
    assert!(load["over_without"].as_u64().unwrap() >= 1, "{load}");
    assert_eq!(load["over_with"], 0, "{load}");
    // Whom it refused: anonymous browser-like phones, nobody identified.
    let browser = &a["classes"][3];
    assert_eq!(browser["class"], "browser");
    assert_eq!(browser["refused"], refused);
    assert!(a["warnings"].as_array().unwrap().is_empty());
    assert!(
        a["top_refused"]["agents"][0]["key"]
            .as_str()
            .unwrap()
            .contains("ios")
            || a["top_refused"]["agents"][0]["key"]
                .as_str()
                .unwrap()
                .contains("android")
    );
    // The stricter candidate refuses more; the first refusal is in Seoul time.
    let b = &j["candidates"][1];
    assert!(b["refused"].as_u64().unwrap() > refused);
    assert!(
        a["first_refusal"]
            .as_str()
            .unwrap()
            .starts_with("2026-09-25T14:2"),
        "{}",
        a["first_refusal"]
    );
    // The same through the filters: --heavy --anonymous and a plain limit.
    let f = json_in(
        tmp.path(),
        None,
        &[
            "replay",
            "--heavy",
            "--anonymous",
            "--limit",
            "1600/10m",
            "storm.json.log",
        ],
    );
    assert_eq!(f["candidates"][0]["refused"], refused);
    // The terminal report: side by side, sparkline, the capacity marks.
    let (out, _, code) = run_in(
        tmp.path(),
        None,
        &[
            "replay",
            "--limit",
            "1600/10m,scope=anonymous-heavy",
            "--limit",
            "600/10m,scope=anonymous-heavy",
            "--capacity",
            "1610/10m",
            "storm.json.log",
        ],
    );
    assert_eq!(code, 0);
    for want in [
        "A = 1600/10m,scope=anonymous-heavy",
        "B = 600/10m",
        "heavy requests of anonymous clients only",
        "Refusals over time (per 10m, UTC, 2026-09-25)",
        "A refusals per 10m: |",
        "10m windows over 1,610",
        "! = above the capacity",
        "Most refused",
    ] {
        assert!(out.contains(want), "{want} missing:\n{out}");
    }
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
}

// ---------------------------------------------------------------------------------------
// Story 4: a per-address limit of 300 a minute refusing the service's own traffic.

/// Combined log, 3 minutes: two internal services (user `svc-edge`, agent
/// `edge-agent/1.0`) from shared addresses 10.9.0.10-11 at 8 requests a second each; a
/// forger with the same agent and no credential from 198.51.100.66 at 8/s; and 40
/// ordinary clients at one request every 10 s.
fn write_story4(path: &Path) {
    let mut lines = Vec::new();
    let stamp = |s: u64| format!("25/Sep/2026:05:{:02}:{:02} +0000", s / 60, s % 60);
    for s in 0..180u64 {
        for k in 0..8 {
            for (ip, user) in [("10.9.0.10", "svc-edge"), ("10.9.0.11", "svc-edge")] {
                lines.push(format!(
                    r#"{ip} - {user} [{}] "GET /api/v1/items?page={k} HTTP/1.1" 200 512 "-" "edge-agent/1.0""#,
                    stamp(s)
                ));
            }
            lines.push(format!(
                r#"198.51.100.66 - - [{}] "GET /api/v1/items?page={k} HTTP/1.1" 200 512 "-" "edge-agent/1.0""#,
                stamp(s)
            ));
        }
        if s % 10 == 0 {
            for c in 0..40 {
                lines.push(format!(
                    r#"192.0.2.{} - - [{}] "GET /wiki/Page_{c} HTTP/1.1" 200 2048 "-" "{DESKTOP}""#,
                    c + 1,
                    stamp(s)
                ));
            }
        }
    }
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn story4_internal_services_are_shown_and_exempt() {
    let tmp = tempfile::tempdir().unwrap();
    write_story4(&tmp.path().join("api.log"));
    fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        let mut a = vec!["replay", "--limit", "300/min,key=ip"];
        a.extend_from_slice(extra);
        a.push("api.log");
        a
    }
    // Without an exemption: the services' requests are refused, loudly.
    let (out, err, code) = run_in(tmp.path(), None, &with(&[]));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("WARNING: A (300/m,key=ip) would refuse 1,080 requests of identified"),
        "{out}"
    );
    let j = json_in(tmp.path(), None, &with(&[]));
    let a = &j["candidates"][0];
    let ident = &a["classes"][1];
    assert_eq!(ident["class"], "identified");
    assert_eq!(ident["requests"], 2 * 8 * 180);
    assert!(ident["refused"].as_u64().unwrap() > 1_000, "{ident}");
    assert!(!a["warnings"].as_array().unwrap().is_empty());
    let forged_refused = a["top_refused"]["ips"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key"] == "198.51.100.66")
        .expect("the forger is among the most refused")["refused"]
        .as_u64()
        .unwrap();

    // Naming the shared addresses internal: the warning speaks of your own services.
    let (out, _, _) = run_in(tmp.path(), None, &with(&["--internal", "10.9.0.0/24"]));
    assert!(
        out.contains("would refuse 1,080 requests of your own"),
        "{out}"
    );

    // Exempt by credential: the services are exempt, the forger is still refused.
    let j = json_in(tmp.path(), None, &with(&["--exempt-user", "svc-edge"]));
    let a = &j["candidates"][0];
    assert_eq!(a["exempt"], 2 * 8 * 180);
    let internal = &a["classes"][0];
    assert_eq!(internal["class"], "internal");
    assert_eq!(internal["exempt"], 2 * 8 * 180);
    assert_eq!(internal["refused"], 0);
    assert!(a["warnings"].as_array().unwrap().is_empty(), "{a}");
    assert!(a["description"].as_str().unwrap().contains("svc-edge"));
    let forger = a["top_refused"]["ips"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key"] == "198.51.100.66")
        .expect("the forger is still refused");
    assert_eq!(forger["refused"].as_u64().unwrap(), forged_refused);
    // Ordinary clients (4 a minute each) are never refused.
    assert_eq!(a["classes"][3]["refused"], 0);

    // Exempt by address: the shared addresses are exempt (forger still counted).
    let j = json_in(tmp.path(), None, &with(&["--exempt", "10.9.0.0/24"]));
    let a = &j["candidates"][0];
    assert_eq!(a["classes"][0]["exempt"], 2 * 8 * 180);
    assert_eq!(a["refused"].as_u64().unwrap(), forged_refused);

    // The same with a config file's exemption.
    std::fs::write(
        tmp.path().join("limits.toml"),
        "name = \"per-ip\"\n[[zones]]\nname = \"ip\"\nspec = \"300/min,algo=sliding-log,key=ip\"\n[[rules]]\nname = \"all\"\nzone = \"ip\"\nexempt = { users = [\"svc-edge\"] }\n",
    )
    .unwrap();
    let j = json_in(
        tmp.path(),
        None,
        &["replay", "--config", "limits.toml", "api.log"],
    );
    let a = &j["candidates"][0];
    assert_eq!(a["name"], "per-ip");
    assert_eq!(a["classes"][0]["exempt"], 2 * 8 * 180);
    assert_eq!(a["refused"].as_u64().unwrap(), forged_refused);
    // 1-second timestamps: approximate.
    assert!(
        j["warnings"][0]
            .as_str()
            .unwrap()
            .starts_with("APPROXIMATE")
    );
}

// ---------------------------------------------------------------------------------------
// Errors and outputs.

#[test]
fn bad_specs_are_clear_usage_errors() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.log"), "").unwrap();
    for (args, want) in [
        (
            vec!["--limit", "5r/s,algo=magic"],
            "unknown algorithm `magic`",
        ),
        (vec!["--limit", "1600"], "COUNT/PERIOD"),
        (
            vec!["--limit", "5r/s,burst=5"],
            "does not apply to sliding-log",
        ),
        (vec!["--limit", "5r/s,key=colour"], "unknown key `colour`"),
        (vec!["--limit", ""], "empty"),
        (vec!["--config", "missing.toml"], "cannot read missing.toml"),
        (vec![], "no candidate"),
        (
            vec!["--limit", "1/s", "--exempt", "10.0.0.0/99"],
            "--exempt",
        ),
    ] {
        let mut a = vec!["replay"];
        a.extend(args.iter().copied());
        a.push("a.log");
        let (out, err, code) = run_in(tmp.path(), None, &a);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        if args.first() == Some(&"--limit") && !args[1].is_empty() && args.len() == 2 {
            assert!(err.contains("For example: `"), "{args:?}: {err}");
        }
    }
    std::fs::write(
        tmp.path().join("bad.toml"),
        "[[zones]]\nname='z'\nrate='fast'\n",
    )
    .unwrap();
    let (_, err, code) = run_in(
        tmp.path(),
        None,
        &["replay", "--config", "bad.toml", "a.log"],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("zone `z`") && err.contains("bad rate"),
        "{err}"
    );
    let (_, err, code) = run_in(
        tmp.path(),
        None,
        &["replay", "--limit", "1/s", "--capacity", "lots", "a.log"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("1610/10m"), "{err}");
}

#[test]
fn every_format_is_deterministic() {
    let tmp = tempfile::tempdir().unwrap();
    write_story4(&tmp.path().join("api.log"));
    let base = [
        "replay",
        "--limit",
        "300/min,key=ip",
        "--limit",
        "5r/s,algo=nginx,burst=20,key=prefix",
        "--capacity",
        "1000/1m",
        "api.log",
    ];
    for fmt in ["text", "md", "csv", "json", "html"] {
        let mut a = base.to_vec();
        a.extend(["--format", fmt, "--decisions", "d.csv"]);
        let (one, err, code) = run_in(tmp.path(), None, &a);
        assert_eq!(code, 0, "{fmt}: {err}");
        let d1 = std::fs::read(tmp.path().join("d.csv")).unwrap();
        let (two, _, _) = run_in(tmp.path(), None, &a);
        let d2 = std::fs::read(tmp.path().join("d.csv")).unwrap();
        assert_eq!(one, two, "{fmt} differs between runs");
        assert_eq!(d1, d2, "decisions differ between runs");
        match fmt {
            "md" => assert!(one.contains("### Decisions") && one.contains("| refused |")),
            "csv" => assert!(one.starts_with("candidate,name,requests_covered,"), "{one}"),
            "html" => assert!(one.starts_with("<!DOCTYPE html>") && one.contains("<table>")),
            "json" => {
                let j: Value = serde_json::from_str(&one).unwrap();
                for c in j["candidates"].as_array().unwrap() {
                    for k in ["name", "in_scope", "admitted", "delayed", "refused"] {
                        assert!(c.get(k).is_some(), "{k}");
                    }
                }
                assert_eq!(
                    j["candidates"][1]["name"],
                    "5/s,algo=nginx,burst=20,key=prefix"
                );
            }
            _ => assert!(one.contains("Refused by class")),
        }
    }
    // Two candidates, both rows for every limited request.
    let d = std::fs::read_to_string(tmp.path().join("d.csv")).unwrap();
    let rows = d.lines().count() - 1;
    let limited = 180 * 24 + 18 * 40;
    assert_eq!(rows, 2 * limited);
}

/// What a replay from the dataset reports as from the files (its origin and records
/// read differ).
const SAME_AS_FILES: [&str; 6] = [
    "requests",
    "first",
    "last",
    "bucket_ms",
    "candidates",
    "over_time",
];

/// One combined-format line at `s` seconds after 2026-09-01 00:00 UTC.
fn combined_at(s: u64, ip: &str, path: &str, status: u16, ua: &str) -> String {
    let (d, rest) = (1 + s / 86_400, s % 86_400);
    format!(
        "{ip} - - [{d:02}/Sep/2026:{:02}:{:02}:{:02} +0000] \"GET {path} HTTP/1.1\" {status} 512 \"-\" \"{ua}\"\n",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// A dataset's rows are replayed while they are read (without sorting them on disk)
/// where its recorded time ranges allow, and sorted on disk where they do not (parts
/// that overlap in time, a run size reached): the decisions, their order and the report
/// are those of the same logs replayed from the files, which are always sorted first.
#[test]
fn replay_as_read_from_the_dataset_decides_as_the_sorted_files() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5eed_0010);
    // Two servers' logs over six days, the second overlapping both of the first's
    // files; 1-second stamps (rows of one second are spread over it); requests logged
    // up to 40 s after they came (the log is not in time order).
    let files = [("a.log", 0u64, 3u64), ("b.log", 1, 5), ("c.log", 3, 6)];
    for (name, from, to) in files {
        let mut text = String::new();
        let mut t = from * 86_400;
        while t < to * 86_400 {
            t += rng.below(90);
            let burst = 1 + rng.below(6);
            for _ in 0..burst {
                let late = t.saturating_sub(rng.below(40) * u64::from(rng.below(4) == 0));
                let ip = format!("10.0.{}.{}", rng.below(4), rng.below(30));
                let path = format!("/w/{}", rng.below(50));
                let status = if rng.below(20) == 0 { 429 } else { 200 };
                let ua = ["Mozilla/5.0", "curl/8.0", "Googlebot/2.1"][rng.below(3) as usize];
                text.push_str(&combined_at(late, &ip, &path, status, ua));
            }
        }
        std::fs::write(tmp.path().join(name), text).unwrap();
    }
    let data = tmp.path().join("data");
    for (name, _, _) in files {
        // Small row groups: many recorded time ranges, so many rows replayed as read.
        let small = [("LOGSCOPE_ROW_GROUP_ROWS", "64")];
        let (_, err, code) = run_env(
            tmp.path(),
            Some(&data),
            &small,
            &["ingest", "--quiet", name],
        );
        assert_eq!(code, 0, "{err}");
    }
    let cases: &[&[&str]] = &[
        &["--limit", "20/1m", "--capacity", "30/1m"],
        &[
            "--limit",
            "3/1m,key=ip",
            "--limit",
            "1/s,algo=token-bucket,burst=3,key=path",
        ],
        &["--limit", "40/10m,scope=anonymous", "--by", "1h"],
    ];
    for (k, case) in cases.iter().enumerate() {
        for run_rows in [None, Some("200")] {
            let replay = |data: Option<&Path>, csv: &str| {
                let mut args = vec!["replay", "--format", "json", "--decisions", csv];
                args.extend_from_slice(case);
                if data.is_none() {
                    args.extend(["a.log", "b.log", "c.log"]);
                }
                let mut env = vec![("LOGSCOPE_TIMING", "1")];
                env.extend(run_rows.map(|n| ("LOGSCOPE_REPLAY_RUN_ROWS", n)));
                let (out, err, code) = run_env(tmp.path(), data, &env, &args);
                assert_eq!(code, 0, "{case:?}: {err}");
                let j: Value = serde_json::from_str(&out).unwrap();
                // The phases say how many rows were replayed as read, and how many
                // sorted runs were written.
                let count = |after: &str| -> u64 {
                    let at = err.find(after).unwrap_or_else(|| panic!("{err}"));
                    let head = &err[..at];
                    let digits = head.rsplit(['(', ' ']).next().unwrap();
                    digits.parse().unwrap_or_else(|_| panic!("{err}"))
                };
                let seen = (count(" rows replayed as read"), count(" runs on disk"));
                (j, std::fs::read(tmp.path().join(csv)).unwrap(), seen)
            };
            let (a, a_csv, a_seen) = replay(None, &format!("files-{k}.csv"));
            let (b, b_csv, b_seen) = replay(Some(&data), &format!("data-{k}.csv"));
            let what = format!("{case:?}, run rows {run_rows:?}");
            // Log files are always sorted first; the dataset replays rows as read,
            // unless a run size reached before its rows could be (then they are sorted
            // on disk).
            assert_eq!(a_seen.0, 0, "{what}");
            if run_rows.is_none() {
                assert!(b_seen.0 > 1_000, "{what}: {b_seen:?}");
            } else {
                assert!(b_seen.1 > 0, "{what}: {b_seen:?}");
            }
            assert!(a["requests"].as_u64().unwrap() > 10_000, "{what}");
            for field in SAME_AS_FILES {
                assert_eq!(a[field], b[field], "{what}: {field}");
            }
            assert!(a_csv == b_csv, "{what}: the decisions differ");
        }
    }
}

/// Rotated files ingested newest first are read oldest first by the replay (their time
/// ranges are apart, so no tie between rows changes): their rows are replayed as read,
/// with the decisions of the files replayed in time order.
#[test]
fn rotated_files_ingested_newest_first_are_replayed_as_read() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5eed_0011);
    let days = ["r1.log", "r2.log", "r3.log"];
    for (d, name) in days.iter().enumerate() {
        let mut text = String::new();
        let mut t = d as u64 * 86_400 + 60;
        while t < (d as u64 + 1) * 86_400 - 60 {
            t += rng.below(40);
            for _ in 0..1 + rng.below(4) {
                let late = t - rng.below(30) * u64::from(rng.below(4) == 0);
                let ip = format!("10.1.{}.{}", rng.below(3), rng.below(20));
                text.push_str(&combined_at(late, &ip, "/w/x", 200, "Mozilla/5.0"));
            }
        }
        std::fs::write(tmp.path().join(name), text).unwrap();
    }
    let data = tmp.path().join("data");
    for name in days.iter().rev() {
        let (_, err, code) = run_in(tmp.path(), Some(&data), &["ingest", "--quiet", name]);
        assert_eq!(code, 0, "{err}");
    }
    let spec = ["--limit", "30/1m", "--limit", "4/1m,key=ip"];
    let mut from_files = vec!["replay", "--decisions", "f.csv"];
    from_files.extend(spec);
    from_files.extend(days);
    let mut from_data = vec!["replay", "--format", "json", "--decisions", "d.csv"];
    from_data.extend(spec);
    let timing = [("LOGSCOPE_TIMING", "1")];
    let (out, err, code) = run_env(tmp.path(), Some(&data), &timing, &from_data);
    assert_eq!(code, 0, "{err}");
    let b: Value = serde_json::from_str(&out).unwrap();
    let a = json_in(tmp.path(), None, &from_files);
    for field in SAME_AS_FILES {
        assert_eq!(a[field], b[field], "{field}");
    }
    let csv = |f: &str| std::fs::read(tmp.path().join(f)).unwrap();
    assert!(csv("f.csv") == csv("d.csv"), "the decisions differ");
    // All but the rows of the last second were replayed as they were read.
    let rows = b["requests"].as_u64().unwrap();
    let fed: u64 = err
        .split(" rows replayed as read")
        .next()
        .and_then(|h| h.rsplit('(').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        rows > 5_000 && fed + 10 >= rows,
        "{fed} of {rows} replayed as read"
    );
}

/// "Anonymous" means one thing: where the log cannot tell (a plain combined log, no
/// cookie information), no client is anonymous, for `scope=anonymous-heavy` as for
/// `--anonymous`, and the report says so instead of capping nobody in silence.
#[test]
fn anonymous_is_one_definition_and_unknown_is_not_anonymous() {
    let tmp = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();
    for i in 0..600 {
        lines.push(format!(
            r#"203.0.113.{} - - [01/Mar/2026:10:{:02}:{:02} +0000] "GET /w/index.php?title=P{i}&action=history HTTP/1.1" 200 512 "-" "Mozilla/5.0""#,
            i % 200,
            i / 60,
            i % 60
        ));
    }
    std::fs::write(tmp.path().join("c.log"), lines.join("\n") + "\n").unwrap();
    let j = json_in(
        tmp.path(),
        None,
        &[
            "replay",
            "--limit",
            "100/10m,scope=anonymous-heavy",
            "c.log",
        ],
    );
    let a = &j["candidates"][0];
    assert_eq!(a["in_scope"], 0);
    assert_eq!(a["refused"], 0);
    let w = a["warnings"].as_array().unwrap();
    assert!(
        w.iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("no request is known anonymous")),
        "{w:?}"
    );
    let f = json_in(
        tmp.path(),
        None,
        &["replay", "--anonymous", "--limit", "100/10m", "c.log"],
    );
    assert_eq!(f["requests"], 0);
    // With the rules' `anonymous_without_user`, the same log is anonymous for both.
    std::fs::write(
        tmp.path().join("rules.toml"),
        "[identity]\nanonymous_without_user = true\n",
    )
    .unwrap();
    let j = json_in(
        tmp.path(),
        None,
        &[
            "replay",
            "--rules",
            "rules.toml",
            "--limit",
            "100/10m,scope=anonymous-heavy",
            "c.log",
        ],
    );
    assert_eq!(j["candidates"][0]["in_scope"], 600);
    assert_eq!(j["candidates"][0]["refused"], 500);
    let f = json_in(
        tmp.path(),
        None,
        &[
            "replay",
            "--rules",
            "rules.toml",
            "--anonymous",
            "--limit",
            "100/10m",
            "c.log",
        ],
    );
    assert_eq!(f["candidates"][0]["in_scope"], 600);
}

/// Seed 004: nginx and Apache log the user from the Authorization header even when
/// authentication fails, so a forged token shows the service's name with 401. Only
/// credentials the server accepted are exempt; the others are judged and counted.
#[test]
fn story4_forged_credentials_are_not_exempt() {
    let tmp = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();
    // 420 forged requests in a minute (401) and 300 of the real service (200).
    for i in 0..720u32 {
        let (ip, status, agent) = if i % 12 < 7 {
            ("198.51.100.66", 401, "forger/1.0")
        } else {
            ("198.51.100.66", 200, "svc-edge/2.1")
        };
        lines.push(format!(
            r#"{ip} - svc-edge [01/Mar/2026:10:00:{:02} +0000] "GET /api/v1/items HTTP/1.1" {status} 12 "-" "{agent}""#,
            i / 12
        ));
    }
    std::fs::write(tmp.path().join("api.log"), lines.join("\n") + "\n").unwrap();
    let run = |extra: &[&str]| {
        let mut a = vec![
            "replay",
            "--limit",
            "300/1m,key=ip",
            "--exempt-user",
            "svc-edge",
        ];
        a.extend_from_slice(extra);
        a.push("api.log");
        json_in(tmp.path(), None, &a)
    };
    let j = run(&[]);
    let a = &j["candidates"][0];
    assert_eq!(a["exempt"], 300);
    assert_eq!(a["credentials_refused"], 420);
    assert_eq!(a["in_scope"], 420);
    assert_eq!(a["refused"], 120);
    assert!(
        a["description"]
            .as_str()
            .unwrap()
            .contains("credentials only where the server accepted them (not 401/403/407)"),
        "{a}"
    );
    assert!(
        a["warnings"].as_array().unwrap().iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("420 requests named exempt credentials the server refused")),
        "{a}"
    );
    // The forged requests are not "your own services".
    assert_eq!(a["classes"][0]["class"], "internal");
    assert_eq!(a["classes"][0]["requests"], 300);
    // Every status accepted: the old reading, every request exempt.
    let j = run(&["--credential-refusals", "none"]);
    assert_eq!(j["candidates"][0]["exempt"], 720);
    assert_eq!(j["candidates"][0]["credentials_refused"], 0);
    // A rules file's exemption says the same by default, and takes its own list.
    for (extra, refused) in [("", 120), ("credential_refusals = [403]\n", 0)] {
        std::fs::write(
            tmp.path().join("limits.toml"),
            format!(
                "name = \"per-ip\"\n[exempt]\nusers = [\"svc-edge\"]\n{extra}[[zones]]\nname = \"ip\"\nspec = \"300/min,algo=sliding-log,key=ip\"\n[[rules]]\nname = \"all\"\nzone = \"ip\"\n"
            ),
        )
        .unwrap();
        let j = json_in(
            tmp.path(),
            None,
            &["replay", "--config", "limits.toml", "api.log"],
        );
        assert_eq!(j["candidates"][0]["refused"], refused, "{extra}");
    }
    let (_, err, code) = run_in(
        tmp.path(),
        None,
        &[
            "replay",
            "--limit",
            "300/1m",
            "--credential-refusals",
            "4o1",
            "api.log",
        ],
    );
    assert_eq!(code, 2);
    assert!(err.contains("--credential-refusals 401,403,407"), "{err}");
}

/// Per-tier limits: a rule matches a list of user names (credentials the server
/// accepted), the others fall through to the next rule.
#[test]
fn tiers_by_user_name() {
    let tmp = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();
    for i in 0..600u32 {
        let (ip, user, status) = match i % 3 {
            0 => ("198.51.100.1", "acme", 200),
            1 => ("198.51.100.2", "-", 200),
            _ => ("198.51.100.3", "acme", 401),
        };
        lines.push(format!(
            r#"{ip} - {user} [01/Mar/2026:10:00:{:02} +0000] "GET /api/items HTTP/1.1" {status} 12 "-" "client/1.0""#,
            i / 10
        ));
    }
    std::fs::write(tmp.path().join("api.log"), lines.join("\n") + "\n").unwrap();
    std::fs::write(
        tmp.path().join("tiers.toml"),
        r#"name = "tiers"
[[zones]]
name = "paid"
spec = "1000/1m,algo=sliding-log,key=user"
[[zones]]
name = "free"
spec = "50/1m,algo=sliding-log,key=ip"
[[rules]]
name = "paid customers"
match = { user = ["acme", "globex"] }
zone = "paid"
[[rules]]
name = "everyone else"
zone = "free"
"#,
    )
    .unwrap();
    let j = json_in(
        tmp.path(),
        None,
        &[
            "replay",
            "--config",
            "tiers.toml",
            "--decisions",
            "d.csv",
            "api.log",
        ],
    );
    let a = &j["candidates"][0];
    assert!(
        a["description"]
            .as_str()
            .unwrap()
            .contains("user acme|globex"),
        "{a}"
    );
    // acme's 200 requests pass in the paid tier; the anonymous client and the forged
    // acme (401: the server refused the credentials) get 50 each in the free tier.
    assert_eq!(a["refused"], 150 + 150);
    let csv = std::fs::read_to_string(tmp.path().join("d.csv")).unwrap();
    let paid = csv
        .lines()
        .filter(|l| l.contains(",paid customers,"))
        .count();
    assert_eq!(paid, 200);
    assert!(
        csv.lines()
            .filter(|l| l.contains("198.51.100.3"))
            .all(|l| l.contains(",everyone else,"))
    );
}

/// Seed 001 names 429 with `Retry-After` and `X-RateLimit-*`: each decision carries what
/// the client would have been told, from the deciding limiter's own state, and the
/// report sums up how long refused clients were told to wait.
#[test]
fn decisions_carry_retry_after_and_rate_limit_values() {
    let tmp = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();
    // One client, 10 a second for 20 s from 10:00:00: a fixed window of 100 a minute
    // refuses from 10:00:10 until the minute ends.
    for i in 0..200u32 {
        lines.push(format!(
            r#"192.0.2.9 - - [01/Mar/2026:10:00:{:02} +0000] "GET /x HTTP/1.1" 200 12 "-" "c/1""#,
            i / 10
        ));
    }
    std::fs::write(tmp.path().join("a.log"), lines.join("\n") + "\n").unwrap();
    let j = json_in(
        tmp.path(),
        None,
        &[
            "replay",
            "--limit",
            "100/1m,algo=fixed-window,key=ip",
            "--limit",
            "50/1m,algo=ban,ban=1h,key=ip",
            "--decisions",
            "d.csv",
            "a.log",
        ],
    );
    let csv = std::fs::read_to_string(tmp.path().join("d.csv")).unwrap();
    let mut rows = csv.lines();
    let head = csv_fields(rows.next().unwrap());
    assert_eq!(
        &head[10..],
        ["limit", "remaining", "reset_s", "retry_after_s"],
        "{head:?}"
    );
    let rows: Vec<Vec<String>> = rows.map(csv_fields).collect();
    let fixed: Vec<&Vec<String>> = rows.iter().filter(|r| r[3].starts_with("100/m")).collect();
    // The first admitted request: 99 left, the window resets in 60 s.
    assert_eq!(fixed[0][5], "admit");
    assert_eq!(&fixed[0][10..], ["100;w=60", "99", "60", ""]);
    // The first refusal (10:00:10.0xx): nothing left, come back when the minute ends.
    let first = fixed.iter().find(|r| r[5] == "refuse").unwrap();
    assert_eq!(&first[10..], ["100;w=60", "0", "50", "50"], "{first:?}");
    // The ban: refused for the hour from the 51st request (10:00:05).
    let ban: Vec<&Vec<String>> = rows.iter().filter(|r| r[3].starts_with("50/m")).collect();
    let refused: Vec<&&Vec<String>> = ban.iter().filter(|r| r[5] == "refuse").collect();
    assert_eq!(refused.len(), 150);
    assert_eq!(refused[0][13], "3600");
    assert_eq!(refused.last().unwrap()[13], "3586");
    // The report: how long refused clients were told to wait.
    let c = &j["candidates"];
    assert_eq!(c[0]["retry_after"]["refused"], 100);
    assert_eq!(c[0]["retry_after"]["max_s"], 50);
    assert_eq!(c[0]["retry_after"]["p50_s"], 45);
    assert_eq!(c[1]["retry_after"]["max_s"], 3600);
}
