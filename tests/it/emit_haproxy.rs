//! `logscope replay --emit haproxy` through the binary: the emitted frontend (and its
//! stick-table backends) passes `haproxy -c` inside a minimal wrapper when HAProxy is
//! installed (required when CI is set); `algo=haproxy` candidates and a real haproxy.cfg
//! read back with `--haproxy-cfg` give the same decisions; hostile paths and agents in a
//! scope are quoted so that they cannot add a directive.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::*;

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

/// Candidate → line → the row's cells without `candidate` and `rule` (those name the
/// source: a spec label or `frontend deny (file:line)`).
type Decisions = BTreeMap<String, BTreeMap<u64, Vec<String>>>;

fn decisions(path: &Path) -> Decisions {
    let text = std::fs::read_to_string(path).expect("decisions written");
    let mut lines = text.lines();
    let header = cells(lines.next().unwrap());
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let (c, l, r) = (col("candidate"), col("line"), col("rule"));
    // What clients were told comes from a zone's state; a haproxy.cfg read back is a
    // stick-table program, which says nothing of it: compare the decisions.
    let end = col("status") + 1;
    let mut out = Decisions::new();
    for line in lines {
        let f = cells(line);
        let rest: Vec<String> = f
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != c && *i != r && *i < end)
            .map(|(_, v)| v.clone())
            .collect();
        let prev = out
            .entry(f[c].clone())
            .or_default()
            .insert(f[l].parse().unwrap(), rest);
        assert!(prev.is_none(), "one row per line and candidate: {line}");
    }
    out
}

fn flash() -> PathBuf {
    fixture("oracles/haproxy-stick/flash")
}

fn flash_log() -> PathBuf {
    flash().join("access_httplog.log.gz")
}

/// Emits `candidate` replayed over `log` as HAProxy config into `dir/name.cfg`.
fn emit(dir: &Path, candidate: &[&str], log: &Path, name: &str) -> PathBuf {
    let out = dir.join(format!("{name}.cfg"));
    let mut args = vec!["replay"];
    args.extend_from_slice(candidate);
    args.extend([
        "--emit",
        "haproxy",
        "--out",
        out.to_str().unwrap(),
        log.to_str().unwrap(),
    ]);
    let (_, err, code) = run_in(dir, &args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

/// Replays `candidates` over `log`; the decisions by candidate.
fn replay(dir: &Path, candidates: &[&str], log: &Path) -> Decisions {
    let out = dir.join("d.csv");
    let mut args = vec!["replay"];
    args.extend_from_slice(candidates);
    args.extend(["--decisions", out.to_str().unwrap(), log.to_str().unwrap()]);
    let (_, err, code) = run_in(dir, &args);
    assert_eq!(code, 0, "{args:?}: {err}");
    assert!(!err.contains("not replayed"), "{args:?}: {err}");
    decisions(&out)
}

fn assert_same(a: &BTreeMap<u64, Vec<String>>, b: &BTreeMap<u64, Vec<String>>, what: &str) {
    assert!(!a.is_empty(), "{what}: no decisions");
    assert_eq!(a.len(), b.len(), "{what}: not the same requests limited");
    let differ: Vec<_> = a
        .iter()
        .filter(|(l, v)| b.get(l) != Some(v))
        .take(5)
        .map(|(l, v)| (l, v, b.get(l)))
        .collect();
    assert!(differ.is_empty(), "{what}: differ at {differ:?}");
    assert!(
        a.values().any(|v| v.contains(&"refuse".to_string())),
        "{what}: nothing refused, a weak test"
    );
}

/// A small HAProxy httplog: three clients, 240 requests 40 ms apart, over a hostile
/// path, an API path and a static path.
fn hostile_log(dir: &Path) -> PathBuf {
    let paths = ["/x'y#{z};", "/www/api/v1", "/static/a.css", "-i"];
    let mut s = String::new();
    for i in 0..240u64 {
        let ms = i * 40;
        let path = paths[(i % 4) as usize];
        let agent = if i % 3 == 0 {
            "curl/8.0"
        } else {
            "Mozilla/5.0"
        };
        s.push_str(&format!(
            "192.0.2.{}:4000 [01/Dec/2026:12:{:02}:{:02}.{:03}] fe fe/<NOSRV> 0/-1/-1/-1/0 200 73 - - LR-- 1/1/0/0/0 0/0 {{{agent}|}} \"GET {path} HTTP/1.1\"\n",
            1 + i % 3,
            ms / 60_000,
            ms / 1000 % 60,
            ms % 1000
        ));
    }
    let p = dir.join("access.log");
    std::fs::write(&p, s).unwrap();
    p
}

const HOSTILE_TOML: &str = r#"
name = "hostile"
dialect = "nginx"

[[zones]]
name = "h"
spec = "6/10s,algo=haproxy,key=ip,expire=10s"

[[zones]]
name = "nl"
spec = "1/10s,algo=haproxy,key=ip"

[[rules]]
name = "evil"
match = { path_prefix = ["/x'y#{z};", "-i"], ua_regex = "(?:^curl/|' } || TRUE #)" }
limits = ["h"]

[[rules]]
name = "newline"
match = { path = ["/n\nhttp-request deny\n# x"] }
limits = ["nl"]
"#;

const SCOPED_TOML: &str = r#"
name = "scoped"
dialect = "nginx"

[exempt]
cidr = ["127.0.13.0/24"]

[[zones]]
name = "api"
spec = "10/10s,algo=haproxy,key=ip,expire=30s"

[[zones]]
name = "rest"
spec = "30/10s,algo=haproxy,key=ip,expire=10s"

[[rules]]
name = "static"
match = { path_prefix = "/static/" }
limits = []

[[rules]]
name = "api"
match = { path_prefix = ["/www/api/", "/api/"], method = ["GET", "POST"] }
limits = ["api"]

[[rules]]
name = "rest"
limits = ["rest"]
"#;

#[test]
fn algo_haproxy_round_trip_gives_identical_decisions() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    let log = flash_log();
    let spec = [
        "--limit",
        "20/10s,algo=haproxy,key=prefix/24,expire=30s,name=net24",
        "--exempt",
        "127.0.12.0/24",
    ];
    let cfg = emit(p, &spec, &log, "net24");
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(text.contains("frontend ls_limits\n"), "{text}");
    assert!(
        text.contains("http-request track-sc0 src,ipmask(24,48) table net24 if !exempt_src_1"),
        "{text}"
    );
    assert!(
        text.contains(
            "http-request deny deny_status 429 hdr Retry-After 10 if !exempt_src_1 { sc_http_req_rate(0) gt 20 }"
        ),
        "{text}"
    );
    assert!(
        text.contains("backend net24\n    stick-table type ipv6"),
        "{text}"
    );
    assert!(text.contains("It would have refused"), "{text}");
    assert!(text.contains("ADJUST"), "{text}");
    assert!(!text.contains("APPROXIMATE"), "{text}");
    // --exempt applies to every candidate; the emitted config carries it already.
    let mut args: Vec<&str> = spec.to_vec();
    args.extend(["--haproxy-cfg", cfg.to_str().unwrap()]);
    let d = replay(p, &args, &log);
    assert_same(
        &d["net24"],
        &d["net24.cfg"],
        "spec vs its emitted haproxy.cfg",
    );

    // Scopes, first-match order and an unlimited rule, from TOML.
    let toml = p.join("scoped.toml");
    std::fs::write(&toml, SCOPED_TOML).unwrap();
    let cfg = emit(p, &["--config", toml.to_str().unwrap()], &log, "scoped_out");
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(text.contains("acl path_2 path_beg /static/"), "{text}");
    assert!(
        text.contains("acl path_3 path_beg /www/api/ /api/\n    acl method_4 method -i GET POST"),
        "{text}"
    );
    assert!(
        text.contains("track-sc0 src table rest if !path_2 !path_3 !exempt_src_1 || !path_2 !method_4 !exempt_src_1"),
        "{text}"
    );
    let d = replay(
        p,
        &[
            "--config",
            toml.to_str().unwrap(),
            "--haproxy-cfg",
            cfg.to_str().unwrap(),
        ],
        &log,
    );
    // An admitted request's zone is the cfg frontend's first table (the reader names
    // no table for a pass), so compare the decision and key, and the zone of refusals.
    let strip = |m: &BTreeMap<u64, Vec<String>>| -> BTreeMap<u64, Vec<String>> {
        m.iter()
            .map(|(l, v)| {
                let mut v = v.clone();
                if v[4] != "refuse" {
                    v[6].clear();
                }
                (*l, v)
            })
            .collect()
    };
    assert_same(
        &strip(&d["scoped"]),
        &strip(&d["scoped_out.cfg"]),
        "TOML vs its emitted haproxy.cfg",
    );
}

#[test]
fn haproxy_cfg_round_trip_gives_identical_decisions() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    let log = flash_log();
    let orig = flash().join("haproxy.cfg");
    let cfg = emit(p, &["--haproxy-cfg", orig.to_str().unwrap()], &log, "again");
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(text.contains("frontend fe_ban\n"), "{text}");
    assert!(
        text.contains("http-request sc-inc-gpc0(0) if { sc_http_req_rate(0) gt 30 }"),
        "{text}"
    );
    assert!(text.contains("store http_req_rate(10s),gpc0"), "{text}");
    let d = replay(
        p,
        &[
            "--haproxy-cfg",
            orig.to_str().unwrap(),
            "--haproxy-cfg",
            cfg.to_str().unwrap(),
        ],
        &log,
    );
    assert_same(&d["haproxy.cfg"], &d["again.cfg"], "haproxy.cfg vs emitted");
}

#[test]
fn hostile_scope_values_are_quoted_and_add_no_directive() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    let log = hostile_log(p);
    let toml = p.join("hostile.toml");
    std::fs::write(&toml, HOSTILE_TOML).unwrap();
    let cfg = emit(
        p,
        &["--config", toml.to_str().unwrap()],
        &log,
        "hostile_out",
    );
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(
        text.contains(r"acl path_1 path_beg -- '/x'\''y#{z};' -i"),
        "{text}"
    );
    assert!(
        text.contains(r"acl agent_2 req.fhdr(user-agent) -m reg '(?:^curl/|'\'' } || TRUE #)'"),
        "{text}"
    );
    assert!(
        text.contains(r"path_reg '^(?:/n\x{0A}http\-request deny\x{0A}\# x)$'"),
        "{text}"
    );
    // Every line is a comment, a section, or one of the directives written.
    for l in text.lines() {
        let t = l.trim_start();
        let ok = t.is_empty()
            || t.starts_with('#')
            || ["frontend ", "backend "].iter().any(|s| l.starts_with(s))
            || [
                "bind ",
                "mode http",
                "acl ",
                "http-request track-sc",
                "http-request deny deny_status 429 hdr Retry-After ",
                "default_backend ",
                "stick-table ",
            ]
            .iter()
            .any(|s| l.starts_with(&format!("    {s}")));
        assert!(ok, "unexpected line {l:?} in\n{text}");
    }
    let d = replay(
        p,
        &[
            "--config",
            toml.to_str().unwrap(),
            "--haproxy-cfg",
            cfg.to_str().unwrap(),
        ],
        &log,
    );
    assert_same(
        &d["hostile"],
        &d["hostile_out.cfg"],
        "hostile TOML vs emitted",
    );
}

fn haproxy() -> Option<PathBuf> {
    let found = [
        "/usr/sbin/haproxy",
        "/usr/bin/haproxy",
        "/usr/local/sbin/haproxy",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|p| p.is_file());
    if found.is_none() {
        println!("SKIPPED: haproxy is not installed (apt-get install -y haproxy)");
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but haproxy is not installed"
        );
    }
    found
}

#[test]
fn emitted_config_passes_haproxy_c() {
    let Some(haproxy) = haproxy() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    let log = flash_log();
    let toml = fixture("limits/nginx-oracle.toml");
    let scoped = p.join("scoped.toml");
    std::fs::write(&scoped, SCOPED_TOML).unwrap();
    let hostile = p.join("hostile.toml");
    std::fs::write(&hostile, HOSTILE_TOML).unwrap();
    let orig = flash().join("haproxy.cfg");
    let emitted = [
        emit(
            p,
            &[
                "--limit",
                "20/10s,algo=haproxy,key=ip,expire=10s",
                "--limit",
                "5r/s,algo=nginx,burst=10,nodelay,key=prefix/24",
                "--limit",
                "1600/10m,key=agent",
                "--limit",
                "100/1m,scope=heavy",
                "--exempt",
                "10.0.0.0/8",
                "--exempt-agent",
                "(?i)monitor",
            ],
            &log,
            "specs",
        ),
        emit(p, &["--config", toml.to_str().unwrap()], &log, "oracle"),
        emit(p, &["--config", scoped.to_str().unwrap()], &log, "scoped"),
        emit(p, &["--config", hostile.to_str().unwrap()], &log, "hostile"),
        emit(p, &["--haproxy-cfg", orig.to_str().unwrap()], &log, "again"),
    ];
    for cfg in emitted {
        let body = std::fs::read_to_string(&cfg).unwrap();
        let wrapper = p.join("wrapper.cfg");
        std::fs::write(
            &wrapper,
            format!(
                "global\n    log stdout format raw local0\n\ndefaults\n    mode http\n    log global\n    timeout client 10s\n    timeout server 10s\n    timeout connect 5s\n\n{body}\nbackend app\n    server s1 127.0.0.1:8000\n"
            ),
        )
        .unwrap();
        let out = std::process::Command::new(&haproxy)
            .args(["-c", "-dW", "-f"])
            .arg(&wrapper)
            .output()
            .expect("haproxy runs");
        assert!(
            out.status.success(),
            "haproxy -c failed on {}:\n{}{}\n{body}",
            cfg.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
    }
}

#[test]
fn unknown_emit_server_lists_all_three() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, err, code) = run_in(
        tmp.path(),
        &["replay", "--limit", "5r/s", "--emit", "apache", "x.log"],
    );
    assert_eq!(code, 2, "{err}");
    for s in ["nginx", "caddy", "haproxy"] {
        assert!(err.contains(s), "{err}");
    }
}
