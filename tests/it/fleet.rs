//! `logscope replay --servers N --balance RULE` (a fleet of servers with their own
//! counters against one shared counter) and `--keys K/N` (one shard of the keys),
//! through the binary, on small Caddy JSON logs (millisecond stamps) built in a tempdir.

use std::path::Path;

use serde_json::Value;

use crate::common::*;

/// One Caddy access-log entry that arrived at `ms` after `start_s` and took 50 ms.
fn caddy(start_s: u64, ms: u64, ip: &str) -> String {
    let done = start_s * 1000 + ms + 50;
    format!(
        r#"{{"level":"info","ts":{}.{:03},"logger":"http.log.access","msg":"handled request","request":{{"remote_ip":"{ip}","remote_port":"40000","client_ip":"{ip}","proto":"HTTP/2.0","method":"GET","host":"wiki.example","uri":"/wiki/Main","headers":{{"User-Agent":["curl/8.0"]}}}},"bytes_read":0,"user_id":"","duration":0.05,"size":512,"status":200}}"#,
        done / 1000,
        done % 1000
    )
}

const START: u64 = 1_790_312_400;

/// A burst: one client, `n` requests 10 ms apart.
fn write_burst(path: &Path, ip: &str, n: u64) {
    let lines: Vec<String> = (0..n).map(|i| caddy(START, i * 10, ip)).collect();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// Many clients in a few /24s, at random times over two minutes.
fn write_mixed(path: &Path) {
    let mut rng = Rng(0xf1ee7);
    let mut ms: Vec<(u64, String)> = (0..1500)
        .map(|_| {
            let net = rng.below(4);
            let host = rng.below(12);
            (
                rng.below(120_000),
                format!("198.51.{}.{}", 100 + net, 1 + host),
            )
        })
        .collect();
    ms.sort();
    let lines: Vec<String> = ms.iter().map(|(t, ip)| caddy(START, *t, ip)).collect();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

fn json(dir: &Path, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    let (out, err, code) = run_in(dir, &a);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

#[test]
fn round_robin_two_servers_admit_the_computed_extra() {
    let tmp = tempfile::tempdir().unwrap();
    write_burst(&tmp.path().join("a.log"), "192.0.2.7", 30);
    let args = [
        "replay",
        "--limit",
        "10/1m,key=ip",
        "--servers",
        "2",
        "--balance",
        "round-robin",
        "a.log",
    ];
    let v = json(tmp.path(), &args);
    let f = &v["fleet"];
    assert_eq!(f["servers"], 2);
    assert_eq!(f["balance"], "round-robin");
    assert_eq!(f["routed"], serde_json::json!([15, 15]));
    let c = &f["candidates"][0];
    // One shared counter: 10 of 30; each server sees 15 and admits 10: 20 in all.
    assert_eq!(c["shared"]["admitted"], 10);
    assert_eq!(c["shared"]["refused"], 20);
    assert_eq!(c["fleet"]["admitted"], 20);
    assert_eq!(c["fleet"]["refused"], 10);
    assert_eq!(c["admitted_beyond_limit"], 10);
    assert_eq!(c["per_server"][0]["admitted"], 10);
    assert_eq!(c["per_server"][1]["refused"], 5);
    let p = &c["peaks"][0];
    assert_eq!(p["limit_count"], 10);
    assert_eq!(p["shared_peak"], 10);
    assert_eq!(p["fleet_peak"], 20);
    assert_eq!(p["fleet_key"], "192.0.2.7");
    // The main report is unchanged: it is the shared counter.
    assert_eq!(v["candidates"][0]["refused"], 20);

    let (text, err, code) = run_in(tmp.path(), &args);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("admitted beyond the limit"), "{text}");
    assert!(text.contains("Fleet: 2 servers"), "{text}");
    assert!(text.contains("10 → 20 (limit 10 per 1m)"), "{text}");
    let mut md = args.to_vec();
    md.extend(["--format", "md"]);
    let (md, _, code) = run_in(tmp.path(), &md);
    assert_eq!(code, 0);
    assert!(md.contains("## Fleet: 2 servers"), "{md}");
    let mut html = args.to_vec();
    html.extend(["--format", "html"]);
    let (html, _, code) = run_in(tmp.path(), &html);
    assert_eq!(code, 0);
    assert!(html.contains("admitted beyond the limit"));
    let mut csv = args.to_vec();
    csv.extend(["--format", "csv"]);
    let (csv, _, code) = run_in(tmp.path(), &csv);
    assert_eq!(code, 0);
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = head
        .iter()
        .position(|h| *h == "fleet_admitted_beyond_limit")
        .expect("fleet column");
    assert_eq!(row[at], "10", "{csv}");
}

#[test]
fn ip_hash_with_one_client_equals_the_shared_counter() {
    let tmp = tempfile::tempdir().unwrap();
    write_burst(&tmp.path().join("a.log"), "192.0.2.7", 30);
    let v = json(
        tmp.path(),
        &[
            "replay",
            "--limit",
            "10/1m,key=ip",
            "--servers",
            "3",
            "--balance",
            "ip-hash",
            "a.log",
        ],
    );
    let c = &v["fleet"]["candidates"][0];
    assert_eq!(c["admitted_beyond_limit"], 0);
    assert_eq!(c["fleet"], c["shared"]);
    let routed: Vec<u64> = v["fleet"]["routed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert_eq!(routed.iter().filter(|&&n| n > 0).count(), 1, "{routed:?}");
}

#[test]
fn random_seed_is_deterministic() {
    let tmp = tempfile::tempdir().unwrap();
    write_mixed(&tmp.path().join("m.log"));
    let args = |seed: &'static str| {
        vec![
            "replay",
            "--limit",
            "20/1m,key=prefix",
            "--limit",
            "100/1m",
            "--servers",
            "3",
            "--balance",
            seed,
            "m.log",
            "--format",
            "json",
        ]
    };
    let (a, err, code) = run_in(tmp.path(), &args("random:42"));
    assert_eq!(code, 0, "{err}");
    let (b, _, _) = run_in(tmp.path(), &args("random:42"));
    assert_eq!(a, b, "same seed, same bytes");
    let (c, _, _) = run_in(tmp.path(), &args("random:43"));
    let va: Value = serde_json::from_str(&a).unwrap();
    let vc: Value = serde_json::from_str(&c).unwrap();
    assert_ne!(va["fleet"]["routed"], vc["fleet"]["routed"]);
    assert_eq!(va["fleet"]["balance"], "random:42");
    let site = &va["fleet"]["candidates"][1];
    assert!(
        site["admitted_beyond_limit"].as_u64().unwrap() > 0,
        "{site}"
    );
}

/// The data rows of a decisions CSV, sorted.
fn decision_rows(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(
            "file,line,arrival,candidate,key,decision,delay_ms,rule,zone,status,limit,remaining,reset_s,retry_after_s"
        )
    );
    let mut rows: Vec<String> = lines.map(str::to_string).collect();
    rows.sort();
    rows
}

#[test]
fn key_shards_add_up_to_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    write_mixed(&tmp.path().join("m.log"));
    let base = [
        "replay",
        "--limit",
        "5/10s,key=ip",
        "--limit",
        "12/10s,key=prefix,algo=token-bucket",
        "m.log",
        "--format",
        "json",
        "--decisions",
    ];
    let mut whole = base.to_vec();
    whole.push("all.csv");
    let (_, err, code) = run_in(tmp.path(), &whole);
    assert_eq!(code, 0, "{err}");
    let all = decision_rows(&tmp.path().join("all.csv"));
    assert!(all.iter().any(|r| r.contains(",refuse,")));
    let mut union = Vec::new();
    for k in 0..3 {
        let out = format!("s{k}.csv");
        let keys = format!("{k}/3");
        let mut a = base.to_vec();
        a.extend([out.as_str(), "--keys", keys.as_str()]);
        let (stdout, err, code) = run_in(tmp.path(), &a);
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&stdout).unwrap();
        assert!(
            v["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().contains(&format!("Shard {k}/3"))),
            "{v}"
        );
        let rows = decision_rows(&tmp.path().join(&out));
        assert!(!rows.is_empty() && rows.len() < all.len());
        union.extend(rows);
    }
    union.sort();
    assert_eq!(union.len(), all.len());
    assert!(union == all, "the shards' decisions differ from one run");
}

#[test]
fn bad_values_exit_2_with_an_example() {
    let tmp = tempfile::tempdir().unwrap();
    write_burst(&tmp.path().join("a.log"), "192.0.2.7", 3);
    for (extra, says) in [
        (&["--servers", "0"][..], "--servers 3"),
        (&["--servers", "many"], "--servers 3"),
        (
            &["--servers", "2", "--balance", "least-conn"],
            "e.g. --balance",
        ),
        (
            &["--servers", "2", "--balance", "random:"],
            "e.g. --balance",
        ),
        (&["--balance", "ip-hash"], "needs --servers"),
        (&["--keys", "3/3"], "e.g. --keys 0/3"),
        (&["--keys", "one"], "e.g. --keys 0/3"),
    ] {
        let mut a = vec!["replay", "--limit", "10/1m,key=ip", "a.log"];
        a.extend_from_slice(extra);
        let (_, err, code) = run_in(tmp.path(), &a);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{extra:?}: {err}");
    }
    let (_, err, code) = run_in(
        tmp.path(),
        &["replay", "--limit", "10/1m", "a.log", "--keys", "0/3"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("site-wide"), "{err}");
    assert!(err.contains("without --keys"), "{err}");
}
