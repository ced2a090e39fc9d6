//! `replay --fail2ban-jail` against the real fail2ban (Debian's package, driven offline
//! by tests/engines/run_fail2ban.py with its own config reader, filter, failure manager,
//! ban manager, observer and ban database on a simulated clock). A seeded log of two
//! and a half days — flooders that pause and come back, 404 scanners that return after
//! a day, heavy-query bots, an ignoreip network, bursts exactly at the thresholds,
//! ordinary visitors — goes through four jails: a flood filter, a heavy-query filter, a
//! 404 filter with `bantime.increment`, Debian's stock `nginx-botsearch` with
//! `ignoreip`. Every ban (address, start, end, ban number) and every request's
//! refused-or-not must agree.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Rng, logscope, ok_json};

const JAILS: &str = "\
[DEFAULT]
ignoreself = false

[flood]
enabled = true
filter = flood
maxretry = 30
findtime = 60
bantime = 600

[heavy]
enabled = true
filter = heavy
maxretry = 10
findtime = 5m
bantime = 1h

[f404]
enabled = true
filter = f404
maxretry = 5
findtime = 10m
bantime = 10m
bantime.increment = true
bantime.maxtime = 1d

[nginx-botsearch]
enabled = true
filter = nginx-botsearch
maxretry = 2
findtime = 10m
bantime = 1h
ignoreip = 203.0.113.0/24 192.0.2.200
";

/// The date pattern only spares fail2ban trying every date format on each line.
const FILTERS: &[(&str, &str)] = &[
    (
        "flood.conf",
        "[Definition]\nfailregex = ^<HOST> \\S+ \\S+ \\[\\] \"[A-Z]+ \ndatepattern = ^[^\\[]*\\[({DATE})\n",
    ),
    (
        "heavy.conf",
        "[Definition]\nfailregex = ^<HOST> \\S+ \\S+ \\[\\] \"GET /w/index\\.php\\?\\S*(?:action=(?:history|raw)|search=)   \ndatepattern = ^[^\\[]*\\[({DATE})\n",
    ),
    (
        "f404.conf",
        "[Definition]\nfailregex = ^<HOST> \\S+ \\S+ \\[\\] \"[^\"]*\" 404 \ndatepattern = ^[^\\[]*\\[({DATE})\n",
    ),
];

const DEBIAN_FILTERS: &str = "/etc/fail2ban/filter.d";

/// 2026-03-01T00:00:00Z.
const T0: i64 = 1_772_323_200;

struct Gen {
    rng: Rng,
    lines: Vec<(i64, u64, String)>,
}

impl Gen {
    fn push(&mut self, t: i64, ip: &str, req: &str, status: u16, agent: &str) {
        let seq = self.lines.len() as u64;
        let stamp = chrono::DateTime::from_timestamp(t, 0)
            .unwrap()
            .format("%d/%b/%Y:%H:%M:%S +0000");
        self.lines.push((
            t,
            seq,
            format!("{ip} - - [{stamp}] \"{req} HTTP/1.1\" {status} 512 \"-\" \"{agent}\""),
        ));
    }

    fn below(&mut self, n: u64) -> i64 {
        self.rng.below(n) as i64
    }

    /// `n` requests from `t`, `gap_ms` apart on average (±50%), at whole seconds.
    fn burst(
        &mut self,
        ip: &str,
        t: i64,
        n: usize,
        gap_ms: i64,
        what: &dyn Fn(&mut Gen) -> (String, u16),
    ) -> i64 {
        let mut ms = t * 1000;
        for _ in 0..n {
            let (req, status) = what(self);
            self.push(ms / 1000, ip, &req, status, "Mozilla/5.0 (compatible; bot)");
            ms += gap_ms / 2 + self.below(gap_ms as u64 + 1);
        }
        ms / 1000
    }
}

fn page(g: &mut Gen) -> (String, u16) {
    (format!("GET /wiki/Page_{}", g.below(500)), 200)
}

fn missing(g: &mut Gen) -> (String, u16) {
    (format!("GET /old/{}.html", g.below(10_000)), 404)
}

fn heavy(g: &mut Gen) -> (String, u16) {
    let q = match g.below(3) {
        0 => "action=history",
        1 => "action=raw",
        _ => "search=foo",
    };
    (format!("GET /w/index.php?title=P{}&{q}", g.below(900)), 200)
}

fn botpath(g: &mut Gen) -> (String, u16) {
    let p = [
        "wp-login.php",
        "phpmyadmin/index.php",
        "cgi-bin/test.cgi",
        "mysqladmin/",
        "webmail/",
    ];
    (format!("GET /{}", p[g.below(p.len() as u64) as usize]), 404)
}

/// The log: ordinary visitors throughout, and the populations the jails judge.
fn generate(seed: u64) -> String {
    let mut g = Gen {
        rng: Rng(seed),
        lines: Vec::new(),
    };
    let span = 60 * 3600;
    // Ordinary visitors: pages, some 404s, a heavy page now and then.
    for i in 0..6_000 {
        let t = T0 + g.below(span as u64);
        let ip = format!("10.{}.{}.{}", i % 7, g.below(200), 1 + g.below(250));
        let (req, status) = match g.below(40) {
            0 => missing(&mut g),
            1 => heavy(&mut g),
            _ => page(&mut g),
        };
        g.push(
            t,
            &ip,
            &req,
            status,
            "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0",
        );
    }
    // Flooders: 20–45 a minute for minutes, pausing, coming back (some after a day).
    for f in 0..14 {
        let ip = format!("198.51.100.{}", 10 + f);
        let mut t = T0 + g.below(6 * 3600);
        for _ in 0..(3 + g.below(4)) {
            let n = 40 + g.below(260) as usize;
            let gap = 1_300 + g.below(1_700);
            t = g.burst(&ip, t, n, gap, &page);
            t += match g.below(4) {
                0 => 86_400 + g.below(3600),
                1 => 30 + g.below(90),
                _ => 300 + g.below(3 * 3600),
            };
        }
    }
    // 404 scanners: a few 404s a few minutes apart; back after about a day (fail2ban
    // still remembers them until bantime·3 past a day), some back again.
    for s in 0..40 {
        let ip = format!("192.0.2.{}", 1 + s);
        let mut t = T0 + g.below(12 * 3600);
        for _ in 0..(2 + g.below(4)) {
            let n = 3 + g.below(9) as usize;
            let gap = 20_000 + g.below(150_000);
            t = g.burst(&ip, t, n, gap, &missing);
            t += match g.below(3) {
                0 => 86_400 + g.below(5400) - 1800,
                1 => 600 + g.below(3600),
                _ => 86_400 + 600 + g.below(1800),
            };
        }
    }
    // Heavy-query bots: one to four a minute for an hour or so.
    for h in 0..10 {
        let ip = format!("100.64.{}.{}", h, 1 + g.below(250));
        let mut t = T0 + g.below(span as u64 - 7200);
        for _ in 0..(1 + g.below(3)) {
            let n = 20 + g.below(120) as usize;
            let gap = 15_000 + g.below(45_000);
            t = g.burst(&ip, t, n, gap, &heavy) + 600 + g.below(7200);
        }
    }
    // Bot-path probers, some inside ignoreip.
    for b in 0..30 {
        let ip = if b % 5 == 0 {
            format!("203.0.113.{}", 1 + b)
        } else if b == 7 {
            "192.0.2.200".to_string()
        } else {
            format!("45.33.{}.{}", b, 1 + g.below(250))
        };
        let t = T0 + g.below(span as u64);
        let n = 1 + g.below(6) as usize;
        let gap = 5_000 + g.below(400_000);
        g.burst(&ip, t, n, gap, &botpath);
    }
    // Exactly at the thresholds: maxretry failures spanning exactly findtime (the
    // first still counts), and one second more (a rate, rescaled).
    for (k, (n, span_s)) in [
        (30usize, 60i64),
        (30, 61),
        (5, 600),
        (5, 601),
        (10, 300),
        (10, 301),
    ]
    .into_iter()
    .enumerate()
    {
        let ip = format!("198.18.0.{}", 1 + k);
        let t = T0 + 40 * 3600 + 4000 * k as i64;
        for i in 0..n {
            let at = t + span_s * i as i64 / (n as i64 - 1);
            let (req, status) = match n {
                30 => page(&mut g),
                5 => missing(&mut g),
                _ => heavy(&mut g),
            };
            g.push(at, &ip, &req, status, "curl/8.5");
        }
    }
    g.lines.sort();
    let mut out = String::new();
    for (_, _, l) in &g.lines {
        out.push_str(l);
        out.push('\n');
    }
    out
}

fn harness() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/engines/run_fail2ban.py")
}

/// fail2ban's decisions for one jail: bans (address, start s, end s or -1, ban
/// number) and the refused lines (1-based).
/// A ban: address, start s, end s (-1: never), ban number.
type Ban = (String, i64, i64, u64);

fn oracle(dir: &Path, jail: &str) -> Option<(Vec<Ban>, BTreeSet<u64>)> {
    let out = Command::new("python3")
        .arg(harness())
        .args(["--config"])
        .arg(dir)
        .args(["--jail", jail])
        .arg(dir.join("access.log"))
        .output()
        .expect("python3 runs");
    if out.status.code() == Some(3) {
        return None;
    }
    assert!(
        out.status.success(),
        "fail2ban harness, jail {jail}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let bans = v["bans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["ip"].as_str().unwrap().to_string(),
                b["start"].as_f64().unwrap() as i64,
                b["end"].as_f64().map_or(-1, |e| e as i64),
                b["nth"].as_u64().unwrap(),
            )
        })
        .collect();
    let refused = v["refused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_u64().unwrap() + 1)
        .collect();
    Some((bans, refused))
}

fn secs(rfc: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(rfc)
        .unwrap()
        .timestamp()
}

#[test]
fn jails_ban_as_the_real_fail2ban_bans() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let have = Command::new("python3")
        .arg(harness())
        .arg("--help")
        .output()
        .is_ok_and(|o| o.status.success())
        && Path::new(DEBIAN_FILTERS)
            .join("nginx-botsearch.conf")
            .exists();
    assert!(
        have || std::env::var_os("CI").is_none(),
        "CI must install fail2ban (.ci/run)"
    );
    if !have {
        eprintln!("note: fail2ban not installed; run .ci/run's install step");
        return;
    }
    // LOGSCOPE_F2B_SEED explores other logs of the same populations.
    let seed = std::env::var("LOGSCOPE_F2B_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x05ee_df2b);
    let log = generate(seed);
    std::fs::write(d.join("access.log"), &log).unwrap();
    std::fs::write(d.join("jail.local"), JAILS).unwrap();
    std::fs::create_dir(d.join("filter.d")).unwrap();
    for (f, text) in FILTERS {
        std::fs::write(d.join("filter.d").join(f), text).unwrap();
    }
    for f in [
        "nginx-botsearch.conf",
        "botsearch-common.conf",
        "common.conf",
    ] {
        std::fs::copy(
            Path::new(DEBIAN_FILTERS).join(f),
            d.join("filter.d").join(f),
        )
        .unwrap();
    }
    let jails = ["flood", "heavy", "f404", "nginx-botsearch"];
    // fail2ban, the jails two at a time (two cores).
    let truth: Vec<_> = jails
        .chunks(2)
        .flat_map(|pair| {
            std::thread::scope(|s| {
                let hs: Vec<_> = pair.iter().map(|j| s.spawn(|| oracle(d, j))).collect();
                hs.into_iter()
                    .map(|h| h.join().unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    if truth.iter().any(Option::is_none) {
        assert!(std::env::var_os("CI").is_none(), "fail2ban not importable");
        eprintln!("note: python3 cannot import fail2ban; the test is skipped");
        return;
    }
    // logscope.
    let v: serde_json::Value = ok_json(logscope(&d.join("no-dataset")).current_dir(d).args([
        "replay",
        "--fail2ban-jail",
        "jail.local",
        "--decisions",
        "decisions.csv",
        "--format",
        "json",
        "access.log",
    ]));
    let cands = v["candidates"].as_array().unwrap();
    assert_eq!(cands.len(), 4, "{v}");
    let csv = std::fs::read_to_string(d.join("decisions.csv")).unwrap();
    let mut refused: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let (cl, cc, cd) = (col("line"), col("candidate"), col("decision"));
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        if f[cd] == "refuse" {
            refused
                .entry(f[cc].to_string())
                .or_default()
                .insert(f[cl].parse().unwrap());
        }
    }
    let total = log.lines().count() as u64;
    let mut report = String::new();
    let (mut bans_same, mut bans_all, mut req_same, mut req_all) = (0usize, 0usize, 0u64, 0u64);
    for ((jail, truth), cand) in jails.iter().zip(&truth).zip(cands) {
        let (f2b_bans, f2b_refused) = truth.as_ref().unwrap();
        assert_eq!(cand["name"], format!("jail {jail}"));
        let ours: Vec<Ban> = cand["bans"]["list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["key"].as_str().unwrap().to_string(),
                    secs(b["start"].as_str().unwrap()),
                    b["end"].as_str().map_or(-1, secs),
                    b["nth"].as_u64().unwrap(),
                )
            })
            .collect();
        let a: BTreeSet<_> = f2b_bans.iter().cloned().collect();
        let b: BTreeSet<_> = ours.iter().cloned().collect();
        let same = a.intersection(&b).count();
        bans_same += same;
        bans_all += a.len().max(b.len());
        let ours_refused = refused
            .get(&format!("jail {jail}"))
            .cloned()
            .unwrap_or_default();
        let differ = f2b_refused.symmetric_difference(&ours_refused).count() as u64;
        req_same += total - differ;
        req_all += total;
        let _ = writeln!(
            report,
            "jail {jail}: bans {same} of {} (fail2ban {}, logscope {}); requests differing {differ} of {total}",
            a.len().max(b.len()),
            a.len(),
            b.len()
        );
        for x in a.difference(&b).take(5) {
            let _ = writeln!(report, "  only fail2ban: {x:?}");
        }
        for x in b.difference(&a).take(5) {
            let _ = writeln!(report, "  only logscope: {x:?}");
        }
        if a.is_empty() {
            let _ = writeln!(
                report,
                "  jail {jail} bans no one: the log does not test it"
            );
            bans_all += 1_000;
        }
    }
    eprintln!("{report}");
    if std::env::var_os("LOGSCOPE_KEEP_F2B").is_some() {
        let keep = t.keep();
        eprintln!("kept {}", keep.display());
    }
    assert!(
        bans_same * 100 >= bans_all * 99,
        "bans exact {bans_same} of {bans_all}\n{report}"
    );
    assert!(
        req_same * 10_000 >= req_all * 9_995,
        "requests {req_same} of {req_all}\n{report}"
    );
}
