//! `replay --haproxy-cfg` and `algo=haproxy` against a real HAProxy 2.6: the oracle's
//! `flash` run (fixtures/oracles/haproxy-stick/) replayed under the haproxy.cfg it ran
//! must agree per request with HAProxy's own decisions; plus the cfg reader's messages.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use crate::common::{fixture, logscope};

/// HAProxy's decisions: line → rule name of the deny that fired (`None` = passed).
fn truth() -> BTreeMap<u64, Option<String>> {
    let gz = std::fs::read(fixture("oracles/haproxy-stick/flash/decisions.csv.gz")).unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut text)
        .unwrap();
    let mut out = BTreeMap::new();
    for l in text.lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        let refused = f[1] == "true";
        out.insert(f[0].parse().unwrap(), refused.then(|| f[3].to_string()));
    }
    out
}

/// One CSV line's cells (quoted cells may hold commas; `""` is a quote).
fn cells(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut it = line.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '"' if quoted && it.peek() == Some(&'"') => {
                it.next();
                out.last_mut().unwrap().push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(String::new()),
            _ => out.last_mut().unwrap().push(c),
        }
    }
    out
}

/// The `X-RateLimit-Rule` name of each deny line of the cfg (the oracle's rule names).
fn deny_names(cfg: &Path) -> BTreeMap<usize, String> {
    let text = std::fs::read_to_string(cfg).unwrap();
    let mut out = BTreeMap::new();
    for (i, l) in text.lines().enumerate() {
        if l.contains("http-request deny")
            && let Some(rest) = l.split("X-RateLimit-Rule ").nth(1)
        {
            out.insert(i + 1, rest.split_whitespace().next().unwrap().to_string());
        }
    }
    out
}

/// `--decisions` CSV → line → refusing rule's cfg line (`None` = admitted).
fn decisions(csv: &Path) -> BTreeMap<u64, Option<usize>> {
    let text = std::fs::read_to_string(csv).unwrap();
    let mut lines = text.lines();
    let header = cells(lines.next().unwrap());
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let (li, di, ri) = (col("line"), col("decision"), col("rule"));
    let mut out = BTreeMap::new();
    for l in lines {
        let f = cells(l);
        let at = (f[di] == "refuse").then(|| {
            // `fe_ip deny (haproxy.cfg:48)`
            let r = &f[ri];
            let n = r.rsplit(':').next().unwrap().trim_end_matches(')');
            n.parse::<usize>()
                .unwrap_or_else(|_| panic!("rule name {r}"))
        });
        assert!(out.insert(f[li].parse().unwrap(), at).is_none(), "{l}");
    }
    out
}

#[test]
fn flash_replays_as_haproxy_decided() {
    let dir = fixture("oracles/haproxy-stick/flash");
    let cfg = dir.join("haproxy.cfg");
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("decisions.csv");
    let out = logscope(&tmp.path().join("data"))
        .args(["replay", "--haproxy-cfg"])
        .arg(&cfg)
        .arg("--decisions")
        .arg(&csv)
        .arg(dir.join("access_httplog.log.gz"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("6 frontends"), "{stdout}");
    assert!(
        !stderr.contains("not replayed"),
        "the oracle's cfg is fully supported: {stderr}"
    );
    let names = deny_names(&cfg);
    let want = truth();
    let got = decisions(&csv);
    assert_eq!(
        got.len(),
        want.len(),
        "every request is limited by a frontend"
    );
    let mut agree = 0usize;
    let mut per_rule: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for (line, w) in &want {
        let g = got.get(line).copied().flatten().map(|l| {
            names
                .get(&l)
                .cloned()
                .unwrap_or_else(|| format!("line {l}"))
        });
        agree += usize::from(w.is_some() == g.is_some());
        if let Some(r) = w {
            per_rule.entry(r.clone()).or_default().0 += 1;
        }
        if let Some(r) = g {
            per_rule.entry(r).or_default().1 += 1;
        }
    }
    let pct = 100.0 * agree as f64 / want.len() as f64;
    println!(
        "haproxy flash: {agree} of {} decisions agree ({pct:.3}%)",
        want.len()
    );
    println!("  rule        haproxy  replay");
    for (r, (h, g)) in &per_rule {
        println!("  {r:<10} {h:>8} {g:>7}");
    }
    assert!(pct >= 99.9, "agreement {pct:.3}%");
    for (r, (h, g)) in &per_rule {
        assert!(
            (h - g).abs() <= 1,
            "refusals by {r}: haproxy {h}, replay {g}"
        );
    }
}

/// A tiny log: one client sending `n` requests `gap_ms` apart from 12:00:00.000.
fn burst_log(dir: &Path, n: usize, gap_ms: u64) -> std::path::PathBuf {
    let mut s = String::new();
    for i in 0..n as u64 {
        let ms = i * gap_ms;
        s.push_str(&format!(
            "192.0.2.7:4000 [01/Dec/2026:12:{:02}:{:02}.{:03}] fe fe/<NOSRV> 0/-1/-1/-1/0 200 73 - - LR-- 1/1/0/0/0 0/0 \"GET /x HTTP/1.1\"\n",
            ms / 60_000,
            ms / 1000 % 60,
            ms % 1000
        ));
    }
    let p = dir.join("access.log");
    std::fs::write(&p, s).unwrap();
    p
}

fn refused(csv: &Path) -> usize {
    decisions_words(csv)
        .iter()
        .filter(|d| d.as_str() == "refuse")
        .count()
}

fn decisions_words(csv: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(csv).unwrap();
    text.lines().skip(1).map(|l| cells(l)[5].clone()).collect()
}

#[test]
fn algo_haproxy_counts_refused_requests_unlike_a_sliding_log() {
    // 60 requests, one every 250 ms (4/s) against 20 per 10 s: HAProxy refuses from
    // the 21st on and keeps refusing, because refused requests count too; a sliding
    // log frees slots as they age and lets 20 through every 10 s.
    let tmp = tempfile::tempdir().unwrap();
    let log = burst_log(tmp.path(), 60, 250);
    for (spec, want) in [
        ("20/10s,algo=haproxy,key=ip,expire=10s", 40),
        ("20/10s,key=ip", 20),
    ] {
        let csv = tmp.path().join("d.csv");
        let out = logscope(&tmp.path().join("data"))
            .args(["replay", "--limit", spec, "--decisions"])
            .arg(&csv)
            .arg(&log)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(refused(&csv), want, "{spec}");
    }
    let out = logscope(&tmp.path().join("data"))
        .args(["replay", "--limit", "20/10s,algo=haproxy,burst=5"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`burst` does not apply to haproxy"));
}

#[test]
fn cfg_problems_are_reported_with_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let log = burst_log(tmp.path(), 5, 100);
    let bad = tmp.path().join("bad.cfg");
    std::fs::write(
        &bad,
        "frontend fe\n    http-request track-sc0 src table st\n    http-request deny if { sc_http_req_rate(0) gt }\nbackend st\n    stick-table type ip size 1k expire 10s store http_req_rate(10s)\n",
    )
    .unwrap();
    let out = logscope(&tmp.path().join("data"))
        .args(["replay", "--haproxy-cfg"])
        .arg(&bad)
        .arg(&log)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.cfg:3:"), "{err}");
    assert!(err.contains("needs `gt N`"), "{err}");

    let partial = tmp.path().join("partial.cfg");
    std::fs::write(
        &partial,
        "frontend fe\n    tcp-request connection track-sc1 src table st\n    http-request track-sc0 src table st\n    http-request deny if { sc0_http_req_rate gt 2 }\n    http-request track-sc2 req.hdr(x-forwarded-for) table st\nbackend st\n    stick-table type ip size 1k expire 10s store http_req_rate(10s)\n",
    )
    .unwrap();
    let csv = tmp.path().join("p.csv");
    let out = logscope(&tmp.path().join("data"))
        .args(["replay", "--haproxy-cfg"])
        .arg(&partial)
        .arg("--decisions")
        .arg(&csv)
        .arg(&log)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("partial.cfg:2: not replayed: `tcp-request"),
        "{err}"
    );
    assert!(err.contains("partial.cfg:5: not replayed"), "{err}");
    assert!(err.contains("x-forwarded-for"), "{err}");
    assert_eq!(
        decisions_words(&csv),
        ["admit", "admit", "refuse", "refuse", "refuse"]
    );
}
