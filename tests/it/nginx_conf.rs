//! `logscope replay --nginx-conf` and `--emit nginx` through the binary: the oracle's
//! real nginx.conf (fixtures/limits/nginx-conf/flash_aligned.conf) replays with the same
//! per-request decisions as its TOML twin; includes with globs; errors with file:line;
//! emitted configuration read back gives the same decisions, and passes `nginx -t` when
//! nginx is installed (required when CI is set).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::*;

/// Decision rows → candidate → line → (key, decision, delay_ms, zone).
type Decisions = BTreeMap<String, BTreeMap<u64, (String, String, String, String)>>;

fn decisions(path: &Path) -> Decisions {
    let text = std::fs::read_to_string(path).expect("decisions written");
    let mut lines = text.lines();
    let header = csv_fields(lines.next().unwrap());
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let (c, l, k, d, ms, z) = (
        col("candidate"),
        col("line"),
        col("key"),
        col("decision"),
        col("delay_ms"),
        col("zone"),
    );
    let mut out = Decisions::new();
    for line in lines {
        let f = csv_fields(line);
        let zone = f[z].split('[').next().unwrap_or("").to_string();
        out.entry(f[c].clone()).or_default().insert(
            f[l].parse().unwrap(),
            (f[k].clone(), f[d].clone(), f[ms].clone(), zone),
        );
    }
    out
}

fn oracle_log() -> PathBuf {
    fixture("oracles/nginx-limit-req/flash_aligned/access_msec.log.zst")
}

/// Replays `candidates` on the oracle log; decisions by candidate.
fn replay(dir: &Path, candidates: &[&str]) -> Decisions {
    let out = dir.join("d.csv");
    let mut args = vec!["replay"];
    args.extend_from_slice(candidates);
    let log = oracle_log();
    args.extend(["--decisions", out.to_str().unwrap(), log.to_str().unwrap()]);
    let (_, err, code) = run_in(dir, &args);
    assert_eq!(code, 0, "{args:?}: {err}");
    decisions(&out)
}

fn assert_same(
    a: &BTreeMap<u64, (String, String, String, String)>,
    b: &BTreeMap<u64, (String, String, String, String)>,
    what: &str,
) {
    assert!(!a.is_empty(), "{what}: no decisions");
    let keys_a: Vec<&u64> = a.keys().collect();
    let keys_b: Vec<&u64> = b.keys().collect();
    assert_eq!(
        keys_a.len(),
        keys_b.len(),
        "{what}: not the same requests limited"
    );
    let differ: Vec<_> = a
        .iter()
        .filter(|(l, v)| b.get(l) != Some(v))
        .take(5)
        .collect();
    assert!(
        differ.is_empty(),
        "{what}: differ at {differ:?} (other side {:?})",
        differ.iter().map(|(l, _)| b.get(l)).collect::<Vec<_>>()
    );
}

#[test]
fn oracle_nginx_conf_agrees_with_toml_twin_per_request() {
    let tmp = tempfile::tempdir().unwrap();
    let toml = fixture("limits/nginx-oracle.toml");
    let conf = fixture("limits/nginx-conf/flash_aligned.conf");
    let d = replay(
        tmp.path(),
        &[
            "--config",
            toml.to_str().unwrap(),
            "--nginx-conf",
            conf.to_str().unwrap(),
        ],
    );
    let twin = &d["nginx-oracle"];
    let ours = &d["flash_aligned"];
    // 100% per request: same requests limited, same key, decision, delay and zone.
    assert_same(twin, ours, "nginx.conf vs TOML twin");
    let refused = ours.values().filter(|v| v.1 == "refuse").count();
    assert_eq!(refused, 7360, "nginx refused 7360 requests in this run");
}

#[test]
fn notes_and_errors_name_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    std::fs::create_dir(p.join("conf.d")).unwrap();
    std::fs::write(
        p.join("nginx.conf"),
        "events {}\nhttp {\n    include conf.d/*.conf;\n}\n",
    )
    .unwrap();
    std::fs::write(
        p.join("conf.d/10-zones.conf"),
        "limit_req_zone $binary_remote_addr zone=perip:10m rate=5r/s;\nlimit_req_zone $http_x_api_key zone=api:10m rate=1r/s;\n",
    )
    .unwrap();
    std::fs::write(
        p.join("conf.d/20-site.conf"),
        "server {\n    listen 80;\n    location /ip/ { limit_req zone=perip burst=10 nodelay; }\n    location /api/ {\n        limit_req zone=api;\n        if ($http_x) { return 403; }\n    }\n}\n",
    )
    .unwrap();
    let log = oracle_log();
    let (_, err, code) = run_in(
        p,
        &[
            "replay",
            "--nginx-conf",
            "nginx.conf",
            "--decisions",
            "d.csv",
            log.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("10-zones.conf:2") && err.contains("$http_x_api_key"),
        "{err}"
    );
    assert!(
        err.contains("20-site.conf:6") && err.contains("if"),
        "{err}"
    );
    let d = decisions(&p.join("d.csv"));
    let ours = &d["nginx"];
    assert!(ours.values().all(|v| v.3 == "perip"), "only perip limits");
    assert!(!ours.is_empty());

    // A syntax error: exit 2, file:line, one message.
    std::fs::write(
        p.join("conf.d/30-bad.conf"),
        "server {\n    location / {\n        limit_req zone=perip burst=;\n    }\n}\n",
    )
    .unwrap();
    let (_, err, code) = run_in(
        p,
        &[
            "replay",
            "--nginx-conf",
            "nginx.conf",
            log.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("30-bad.conf:3: invalid burst value"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    std::fs::write(p.join("conf.d/30-bad.conf"), "server {\n    location / {\n").unwrap();
    let (_, err, code) = run_in(
        p,
        &[
            "replay",
            "--nginx-conf",
            "nginx.conf",
            log.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("30-bad.conf:3: unexpected end of file"),
        "{err}"
    );
}

/// Emits `candidate` as nginx config into `dir/name.conf`.
fn emit(dir: &Path, candidate: &[&str], name: &str) -> PathBuf {
    let out = dir.join(format!("{name}.conf"));
    let mut args = vec!["replay"];
    args.extend_from_slice(candidate);
    let log = oracle_log();
    args.extend([
        "--emit",
        "nginx",
        "--out",
        out.to_str().unwrap(),
        log.to_str().unwrap(),
    ]);
    let (_, err, code) = run_in(dir, &args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

#[test]
fn emit_round_trip_gives_identical_decisions() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    let toml = fixture("limits/nginx-oracle.toml");
    let spec = [
        "--limit",
        "5r/s,algo=nginx,burst=10,nodelay,key=ip,name=edge",
        "--exempt",
        "127.0.1.0/24",
    ];
    let from_toml = emit(p, &["--config", toml.to_str().unwrap()], "oracle");
    let from_spec = emit(p, &spec, "edge");
    let text = std::fs::read_to_string(&from_toml).unwrap();
    assert!(
        text.contains("limit_req_zone $binary_remote_addr zone=perip:10m rate=5r/s;"),
        "{text}"
    );
    assert!(
        text.contains("location /twostage/ {\n        limit_req zone=twostage burst=12 delay=4;"),
        "{text}"
    );
    assert!(text.contains("It would have refused"), "{text}");
    let spec_text = std::fs::read_to_string(&from_spec).unwrap();
    assert!(spec_text.contains("geo $"), "{spec_text}");

    let d = replay(
        p,
        &[
            "--config",
            toml.to_str().unwrap(),
            "--nginx-conf",
            from_toml.to_str().unwrap(),
        ],
    );
    assert_same(
        &d["nginx-oracle"],
        &d["oracle"],
        "TOML vs its emitted nginx",
    );
    let mut args: Vec<&str> = spec.to_vec();
    args.extend(["--nginx-conf", from_spec.to_str().unwrap()]);
    // --exempt applies to every candidate; the emitted config carries it already.
    let d = replay(p, &args);
    assert_same(&d["edge"], &d["edge (2)"], "spec vs its emitted nginx");
}

#[test]
fn emitted_config_passes_nginx_t() {
    let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
    let Some(nginx) = nginx else {
        println!("SKIPPED: nginx is not installed (apt-get install -y nginx)");
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but nginx is not installed"
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    let toml = fixture("limits/nginx-oracle.toml");
    let wiki = fixture("limits/wiki-heavy-cap.toml");
    let mut emitted = vec![
        emit(p, &["--config", toml.to_str().unwrap()], "oracle"),
        emit(
            p,
            &[
                "--limit",
                "5r/s,algo=nginx,burst=10,nodelay,key=prefix/24",
                "--exempt",
                "10.0.0.0/8",
                "--exempt-agent",
                "(?i)monitor",
            ],
            "spec",
        ),
        emit(p, &["--limit", "1600/10m,key=agent"], "window"),
    ];
    if wiki.is_file() {
        emitted.push(emit(p, &["--config", wiki.to_str().unwrap()], "wiki"));
    }
    for conf in emitted {
        let wrapper = p.join("wrapper.conf");
        std::fs::write(
            &wrapper,
            format!(
                "pid {0}/nginx.pid;\nerror_log {0}/error.log;\nevents {{}}\nhttp {{\n    client_body_temp_path {0}/body;\n    proxy_temp_path {0}/proxy;\n    fastcgi_temp_path {0}/fastcgi;\n    uwsgi_temp_path {0}/uwsgi;\n    scgi_temp_path {0}/scgi;\n    access_log off;\n    include {1};\n}}\n",
                p.display(),
                conf.display()
            ),
        )
        .unwrap();
        let out = std::process::Command::new(&nginx)
            .args([
                "-t",
                "-q",
                "-e",
                p.join("error.log").to_str().unwrap(),
                "-p",
                p.to_str().unwrap(),
                "-c",
            ])
            .arg(&wrapper)
            .output()
            .expect("nginx runs");
        assert!(
            out.status.success(),
            "nginx -t failed on {}:\n{}\n{}",
            conf.display(),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&conf).unwrap()
        );
    }
}
