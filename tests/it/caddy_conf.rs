//! `logscope replay --caddyfile` and `--emit caddy` through the binary: Femiwiki's
//! ten-zone Caddyfile (fixtures/limits/caddy/) replays with exactly the `--decisions` of
//! its hand-written TOML twin; what cannot be replayed is named with file:line; a bad
//! Caddyfile is exit 2 with file:line; emitted Caddy configuration read back gives the
//! same decisions.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::common::*;

fn run_in(dir: &Path, args: &[&str]) -> (String, String, i32) {
    let out = logscope(&dir.join("no-dataset"))
        .current_dir(dir)
        .env_remove("FW_EXPENSIVE_EVENTS")
        .args(args)
        .output()
        .expect("runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

const AGENTS: &[&str] = &[
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 Mobile Safari/604.1",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/126.0.0.0 Safari/537.36",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "SomeCrawler/1.0 (+https://crawler.example)",
    "meta-externalagent/1.1 spider",
    "Mozilla/5.0 (compatible; ClaudeBot/1.0)",
    "python-requests/2.31",
];

const URIS: &[&str] = &[
    "/w/Page_{n}",
    "/W/Page_{n}",
    "/index.php?title=Page_{n}&oldid={n}",
    "/index.php?title=Page_{n}&diff={n}",
    "/w/index.php?title=Page_{n}&action=history",
    "/INDEX.PHP?search=term{n}&title=Special:Search",
    "/index.php?search=term{n}",
    "/index.php?title=Page_{n}&action=info",
    "/index.php?title=Page_{n}&redlink=1",
    "/index.php?title=Special:WhatLinksHere/Page_{n}",
    "/index.php?title=Special:UserLogin&returnto=Page_{n}",
    "/w/api.php?action=query&titles=Page_{n}",
    "/api.php?action=opensearch&search=p{n}",
    "/health-check",
    "/mw-config/index.php",
    "/skins/x{n}.css",
];

/// A Caddy JSON access log of `n` requests over 20 minutes, dense enough that most
/// zones refuse: few /24s, crawlers, cookies, logged-in users, referers, mixed case.
fn write_log(path: &Path, n: usize) {
    let mut rng = Rng(0xcadd_f11e);
    let start_ms: u64 = 1_790_312_400_000;
    let mut lines: Vec<(u64, String)> = Vec::new();
    for _ in 0..n {
        let ms = rng.below(1_200_000);
        let ip = if rng.below(10) == 0 {
            format!("2001:db8:{}::{}", rng.below(3), 1 + rng.below(50))
        } else {
            format!("203.0.{}.{}", 110 + rng.below(4), 1 + rng.below(254))
        };
        let uri =
            URIS[rng.below(URIS.len() as u64) as usize].replace("{n}", &rng.below(400).to_string());
        let ua = AGENTS[rng.below(AGENTS.len() as u64) as usize];
        let method = if rng.below(12) == 0 { "POST" } else { "GET" };
        let mut headers = format!(r#""User-Agent":["{ua}"]"#);
        if rng.below(5) == 0 {
            headers.push_str(r#","Cookie":["REDACTED"]"#);
        }
        if rng.below(3) == 0 {
            headers.push_str(r#","Referer":["https://femiwiki.com/w/Main"]"#);
        }
        let user = if rng.below(15) == 0 { "Alice" } else { "" };
        let took = rng.below(400);
        let done = start_ms + ms + took;
        lines.push((
            done,
            format!(
                r#"{{"level":"info","ts":{}.{:03},"logger":"http.log.access","msg":"handled request","request":{{"remote_ip":"{ip}","remote_port":"40000","client_ip":"{ip}","proto":"HTTP/2.0","method":"{method}","host":"femiwiki.com","uri":"{uri}","headers":{{{headers}}}}},"bytes_read":0,"user_id":"{user}","duration":{}.{:03},"size":5120,"status":200}}"#,
                done / 1000,
                done % 1000,
                took / 1000,
                took % 1000
            ),
        ));
    }
    lines.sort();
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for (_, l) in &lines {
        writeln!(f, "{l}").unwrap();
    }
    f.flush().unwrap();
}

fn caddyfile() -> PathBuf {
    fixture("limits/caddy/femiwiki-caddy.Caddyfile")
}

/// `--decisions` text of one candidate on `log`.
fn decisions(dir: &Path, log: &Path, candidate: &[&str], out: &str) -> String {
    let csv = dir.join(out);
    let mut args = vec!["replay"];
    args.extend_from_slice(candidate);
    args.extend(["--decisions", csv.to_str().unwrap(), log.to_str().unwrap()]);
    let (_, err, code) = run_in(dir, &args);
    assert_eq!(code, 0, "{args:?}: {err}");
    // The decisions, without what clients were told (limit, remaining, reset,
    // retry-after): a Caddyfile's ring buffer and its TOML twin's sliding log decide
    // alike but hold their state apart.
    std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .map(|l| {
            // The line up to its 10th field (`status`), quotes kept.
            let mut quoted = false;
            let mut commas = 0;
            let end = l
                .char_indices()
                .find(|&(_, c)| {
                    if c == '"' {
                        quoted = !quoted;
                    } else if c == ',' && !quoted {
                        commas += 1;
                    }
                    commas == 10
                })
                .map_or(l.len(), |(i, _)| i);
            format!("{}\n", &l[..end])
        })
        .collect()
}

#[test]
fn femiwiki_caddyfile_agrees_with_toml_twin_per_request() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.json.log");
    write_log(&log, 3_000);
    let cf = caddyfile();
    let a = decisions(
        tmp.path(),
        &log,
        &["--caddyfile", cf.to_str().unwrap()],
        "a.csv",
    );
    let twin = fixture("limits/caddy/femiwiki-caddy.toml");
    let b = decisions(
        tmp.path(),
        &log,
        &["--config", twin.to_str().unwrap()],
        "b.csv",
    );
    assert_eq!(a, b, "Caddyfile and TOML twin decide differently");
    // The log exercises the zones: refusals by several of them.
    let zones: std::collections::BTreeSet<&str> = a
        .lines()
        .filter(|l| l.contains(",refuse"))
        .filter_map(|l| {
            [
                "dynamic",
                "expensive_per_ip",
                "search_per_ip",
                "history_per_ip",
                "crawlers_lean",
                "login_walk",
            ]
            .into_iter()
            .find(|z| l.contains(&format!(",{z}")))
        })
        .collect();
    assert!(
        zones.len() >= 3,
        "refusing zones: {zones:?}\n{}",
        &a[..a.len().min(2000)]
    );
}

#[test]
fn notes_name_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.json.log");
    write_log(&log, 200);
    let cf = caddyfile();
    let (_, err, code) = run_in(
        tmp.path(),
        &[
            "replay",
            "--caddyfile",
            cf.to_str().unwrap(),
            log.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let shown = cf.display().to_string();
    for want in [
        format!("{shown}:22: zone botlike_expensive left out: expression"),
        format!("{shown}:192: mwcache runs before rate_limit"),
        format!("{shown}:260: uri @special_title query -oldid"),
        format!("{shown}:274: respond runs before rate_limit but its matcher cannot be evaluated"),
        "Caddy logs cookie values as REDACTED".to_string(),
        "{$BLOCKED_CIDR} is not set".to_string(),
        "no fixed order in Caddy".to_string(),
    ] {
        assert!(err.contains(&want), "missing {want:?} in:\n{err}");
    }
}

#[test]
fn bad_caddyfiles_are_usage_errors_with_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.json.log");
    write_log(&log, 10);
    let cases = [
        (
            ":80 {\n\trate_limit {\n\t\tzone a {\n\t\t\tevents 3\n\t\t}\n\t}\n}\n",
            ":3: zone a: a rate limit zone requires both a window and maximum events",
        ),
        (
            ":80 {\n\trate_limit {\n\t\tzone a {\n\t\t\tevents 3\n\t\t\twindow soon\n\t\t}\n\t}\n}\n",
            ":5: invalid window duration 'soon'",
        ),
        (
            ":80 {\n\trate_limit {\n\t\tzone a {\n\t\t\tkeys x\n\t\t}\n\t}\n}\n",
            ":4: unrecognized zone subdirective `keys`",
        ),
        (
            ":80 {\n\trate_limit @nope {\n\t}\n}\n",
            ":2: no matcher named @nope",
        ),
        (":80 {\n\trate_limit {\n", ":2: unexpected end of file"),
        (":80 {\n\trespond 200\n}\n", ":1: no rate_limit handler"),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let f = tmp.path().join(format!("bad{i}.Caddyfile"));
        std::fs::write(&f, text).unwrap();
        let (_, err, code) = run_in(
            tmp.path(),
            &[
                "replay",
                "--caddyfile",
                f.to_str().unwrap(),
                log.to_str().unwrap(),
            ],
        );
        assert_eq!(code, 2, "{text:?}: {err}");
        assert!(
            err.contains(&format!("bad{i}.Caddyfile{want}")),
            "{text:?}: want {want:?} in {err}"
        );
    }
    let (_, err, code) = run_in(
        tmp.path(),
        &[
            "replay",
            "--caddyfile",
            "missing.Caddyfile",
            log.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("missing.Caddyfile"), "{err}");
}

#[test]
fn emit_caddy_round_trip_gives_identical_decisions() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.json.log");
    write_log(&log, 1_500);
    let cf = caddyfile();
    let emitted = tmp.path().join("femiwiki-caddy.caddy");
    let (_, err, code) = run_in(
        tmp.path(),
        &[
            "replay",
            "--caddyfile",
            cf.to_str().unwrap(),
            "--emit",
            "caddy",
            "--out",
            emitted.to_str().unwrap(),
            log.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&emitted).unwrap();
    assert!(
        text.starts_with("# Written by logscope replay --emit caddy."),
        "{text}"
    );
    assert!(text.contains("# It would have refused "), "{text}");
    assert!(text.contains("\tzone search_per_ip {"), "{text}");
    assert!(text.contains("\t\tipv6_prefix 64\n"), "{text}");
    assert!(text.contains("\t\twindow 10m\n"), "{text}");
    let a = decisions(
        tmp.path(),
        &log,
        &["--caddyfile", cf.to_str().unwrap()],
        "a.csv",
    );
    let b = decisions(
        tmp.path(),
        &log,
        &["--caddyfile", emitted.to_str().unwrap()],
        "b.csv",
    );
    assert_eq!(a, b, "emitted Caddyfile decides differently:\n{text}");

    // A spec and a TOML candidate also come back with their decisions.
    for cand in [
        vec![
            "--limit",
            "20/1m,algo=caddy,key=prefix/24/64,scope=anonymous",
        ],
        vec!["--limit", "5/10s,algo=caddy,key=agent"],
    ] {
        let out = tmp.path().join("c.caddy");
        let mut args = vec!["replay"];
        args.extend_from_slice(&cand);
        args.extend([
            "--emit",
            "caddy",
            "--out",
            out.to_str().unwrap(),
            "--force",
            log.to_str().unwrap(),
        ]);
        let (_, err, code) = run_in(tmp.path(), &args);
        assert_eq!(code, 0, "{err}");
        let emitted_text = std::fs::read_to_string(&out).unwrap();
        let x = decisions(tmp.path(), &log, &cand, "x.csv");
        let y = decisions(
            tmp.path(),
            &log,
            &["--caddyfile", out.to_str().unwrap()],
            "y.csv",
        );
        let strip = |s: &str| -> Vec<String> {
            // Candidate, rule and zone names differ (spec label vs file stem); compare the rest.
            s.lines()
                .skip(1)
                .map(|l| {
                    let f = csv_fields(l);
                    format!("{},{},{}", f[1], f[4], f[5])
                })
                .collect()
        };
        assert_eq!(strip(&x), strip(&y), "{cand:?}:\n{emitted_text}");
    }
}
