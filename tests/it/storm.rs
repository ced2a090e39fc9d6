//! Issue 42 on the generated storm (fixtures/storm, written by benches/gen_storm.py with
//! its truth in truth.json): verified crawlers and impostors counted exactly, the
//! smallest block meeting its thresholds with no more entries than the planted networks
//! need, the block enforced by a real nginx and a real HAProxy giving the shares logscope
//! printed, and the diff ranking the planted networks first.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{IpAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use ipnet::IpNet;

use crate::common::{fixture, logscope, ok_json};

fn storm(f: &str) -> String {
    fixture(&format!("storm/{f}")).to_str().unwrap().to_string()
}

fn truth() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(fixture("storm/truth.json")).unwrap()).unwrap()
}

const WINDOW: [&str; 4] = ["--since", "2026-11-04T13:00", "--until", "2026-11-04T15:00"];

/// `logscope block` on the storm, JSON.
fn block_json(extra: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    ok_json(
        logscope(&dir.path().join("data"))
            .arg("block")
            .arg(storm("access.log.gz"))
            .args(WINDOW)
            .args(["--asn-db", &storm("asn.tsv")])
            .args([
                "--crawler-ranges",
                &format!("googlebot={}", storm("googlebot.json")),
            ])
            .args(extra)
            .args(["--format", "json"]),
    )
}

#[test]
fn the_generator_wrote_these_fixtures() {
    // The committed storm is what the seeded generator writes.
    let Ok(py) = which("python3") else {
        println!("SKIPPED: python3 is not installed");
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but python3 is missing"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let gen_ = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/gen_storm.py");
    let out = Command::new(py).arg(gen_).arg(dir.path()).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in [
        "access.log.gz",
        "asn.tsv",
        "googlebot.json",
        "hosting-asns.txt",
        "truth.json",
    ] {
        assert_eq!(
            std::fs::read(dir.path().join(f)).unwrap(),
            std::fs::read(fixture(&format!("storm/{f}"))).unwrap(),
            "{f} differs from a fresh `python3 benches/gen_storm.py`"
        );
    }
}

fn which(name: &str) -> Result<PathBuf, ()> {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        })
        .ok_or(())
}

#[test]
fn impostors_are_counted_exactly() {
    let t = truth();
    let dir = tempfile::tempdir().unwrap();
    let v = ok_json(
        logscope(&dir.path().join("data"))
            .args(["agents", &storm("access.log.gz")])
            .args([
                "--crawler-ranges",
                &format!("googlebot={}", storm("googlebot.json")),
            ])
            .args(["--format", "json"]),
    );
    let rows = v["crawlers"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{v}");
    let g = &rows[0];
    assert_eq!(g["name"], "googlebot");
    assert_eq!(g["verified"], t["googlebot"]["genuine"]);
    assert_eq!(g["impostors"], t["googlebot"]["impostors"]);
    assert_eq!(
        g["requests"].as_u64().unwrap(),
        t["googlebot"]["genuine"].as_u64().unwrap() + t["googlebot"]["impostors"].as_u64().unwrap()
    );
    // --impostors is a filter: exactly those requests, and none of Google's addresses.
    let v = ok_json(
        logscope(&dir.path().join("data"))
            .args(["top", "--by", "ip", "--top", "0", &storm("access.log.gz")])
            .args([
                "--crawler-ranges",
                &format!("googlebot={}", storm("googlebot.json")),
            ])
            .args(["--impostors", "--format", "json"]),
    );
    assert_eq!(v["requests"], t["googlebot"]["impostors"], "{v}");
    for r in v["rows"].as_array().unwrap() {
        let ip = r["value"].as_str().unwrap();
        assert!(!ip.starts_with("66.249.66."), "{ip} is Google's");
    }
    // Without the ranges, --impostors says what it needs (exit 2).
    let out = logscope(&dir.path().join("data"))
        .args(["agents", "--impostors", &storm("access.log.gz")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--crawler-ranges googlebot="));
}

#[test]
fn the_block_meets_its_thresholds_with_the_fewest_entries() {
    let t = truth();
    let v = block_json(&["--baseline", "2026-11-03..2026-11-03"]);
    let b = &v["block"];
    assert!(b["stopped_share"].as_f64().unwrap() >= 0.9, "{v}");
    assert!(b["collateral_share"].as_f64().unwrap() <= 0.01, "{v}");
    let entries = b["entries"].as_array().unwrap();
    // The storm lives in three residential ASNs' bot /24s and one hosting AS: four
    // groups of contiguous networks, each coverable by one clean prefix.
    assert!(
        entries.len() as u64 <= t["planted_groups"].as_u64().unwrap(),
        "{} entries: {b}",
        entries.len()
    );
    // Every entry is a CIDR or an AS, and holds only planted clients.
    let mut planted: Vec<IpNet> = Vec::new();
    for k in t["bot_nets"].as_object().unwrap().keys() {
        planted.push(k.parse().unwrap());
    }
    for n in t["scraper_nets"].as_array().unwrap() {
        planted.push(n.as_str().unwrap().parse().unwrap());
    }
    let mut stopped = 0;
    for e in entries {
        let net = e["network"].as_str().unwrap();
        assert!(
            net.parse::<IpNet>().is_ok()
                || net
                    .strip_prefix("AS")
                    .is_some_and(|n| n.parse::<u32>().is_ok()),
            "{net}"
        );
        assert_eq!(e["collateral"], 0, "{e}");
        assert_eq!(e["other"], 0, "{e}");
        stopped += e["stopped"].as_u64().unwrap();
        if let Ok(n) = net.parse::<IpNet>() {
            assert!(
                planted.iter().any(|p| n.contains(p) || p.contains(&n)),
                "{net} holds no planted network"
            );
        }
    }
    let planted_requests =
        t["bot_requests"].as_u64().unwrap() + t["scraper_requests"].as_u64().unwrap();
    assert_eq!(
        stopped, planted_requests,
        "the entries stop the storm, all of it"
    );
    assert_eq!(b["stopped"], planted_requests);
    // A tighter budget and a higher target still hold or say they are not met.
    let v = block_json(&[
        "--baseline",
        "2026-11-03..2026-11-03",
        "--target",
        "100%",
        "--max-collateral",
        "0%",
    ]);
    let b = &v["block"];
    assert_eq!(b["collateral"], 0);
    assert_eq!(b["met"], b["stopped"] == v["stop_requests"], "{v}");
}

#[test]
fn bad_block_flags_exit_2_with_an_example() {
    let dir = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (vec!["--target", "120%"], "e.g. 90%"),
        (
            vec!["--baseline", "yesterday"],
            "--baseline 2026-11-03..2026-11-03",
        ),
        (vec!["--baseline", "2026-11-04..2026-11-03"], "after SINCE"),
        (vec!["--keep", "10.0.0.0/33"], "--keep"),
    ] {
        let out = logscope(&dir.path().join("data"))
            .arg("block")
            .arg(storm("access.log.gz"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// The window's rows as the test reads them: (client, role) with the generator's
/// meaning — to keep: identified (a user), Google's own addresses, or a client of the
/// baseline day; to stop: heavy (search, history, diff); other: the rest.
fn window_rows() -> Vec<(IpAddr, &'static str)> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(fixture("storm/access.log.gz")).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let google: IpNet = "66.249.66.0/27".parse().unwrap();
    let mut baseline = BTreeSet::new();
    let mut rows = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.splitn(4, ' ').collect();
        let ip: IpAddr = f[0].parse().unwrap();
        let when = &line[line.find('[').unwrap() + 1..];
        if when.starts_with("03/Nov/2026") {
            baseline.insert(ip);
            continue;
        }
        let hour: u32 = when[12..14].parse().unwrap();
        if !(13..15).contains(&hour) {
            continue;
        }
        let user = f[2];
        let googlebot = line.contains("Googlebot/2.1");
        let role = if user != "-" || (googlebot && google.contains(&ip)) || baseline.contains(&ip) {
            "keep"
        } else if line.contains("search=")
            || line.contains("action=history")
            || line.contains("diff=")
        {
            "stop"
        } else {
            "other"
        };
        rows.push((ip, role));
    }
    rows
}

/// The shares a server's decisions give: per role, the share of the window's rows it
/// refused (`refused(ip)`, asked once per distinct client).
fn shares(mut refused: impl FnMut(IpAddr) -> bool) -> BTreeMap<&'static str, (u64, u64)> {
    let mut memo = BTreeMap::new();
    let mut out: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for (ip, role) in window_rows() {
        let r = *memo.entry(ip).or_insert_with(|| refused(ip));
        let e = out.entry(role).or_default();
        e.1 += 1;
        e.0 += u64::from(r);
    }
    out
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Status of `GET /` on `port` with `X-Forwarded-For: ip`.
fn status(port: u16, ip: IpAddr) -> u16 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET / HTTP/1.0\r\nHost: storm\r\nX-Forwarded-For: {ip}\r\n\r\n"
    )
    .unwrap();
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    buf.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

fn wait_for(port: u16, child: &mut Child) {
    // A liveness bound, not a speed target: 200 tries, 50 ms apart.
    for _ in 0..200 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        assert!(child.try_wait().unwrap().is_none(), "the server exited");
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the server did not listen on 127.0.0.1:{port}");
}

struct Server(Child);
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn program(paths: &[&str], pkg: &str) -> Option<PathBuf> {
    let found = paths.iter().map(PathBuf::from).find(|p| p.is_file());
    if found.is_none() {
        println!("SKIPPED: {pkg} is not installed (apt-get install -y {pkg})");
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but {pkg} is not installed"
        );
    }
    found
}

fn emitted(server: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = logscope(&dir.path().join("data"))
        .arg("block")
        .arg(storm("access.log.gz"))
        .args(WINDOW)
        .args(["--asn-db", &storm("asn.tsv")])
        .args([
            "--crawler-ranges",
            &format!("googlebot={}", storm("googlebot.json")),
        ])
        .args(["--baseline", "2026-11-03..2026-11-03", "--emit", server])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The server's refusals give the shares logscope printed.
fn assert_enforced(refusals: BTreeMap<&str, (u64, u64)>) {
    let v = block_json(&["--baseline", "2026-11-03..2026-11-03"]);
    let b = &v["block"];
    let (stopped, stop) = refusals["stop"];
    let (collateral, keep) = refusals["keep"];
    let (other_hit, other) = refusals.get("other").copied().unwrap_or((0, 0));
    assert_eq!(stop, v["stop_requests"].as_u64().unwrap(), "{refusals:?}");
    assert_eq!(keep, v["keep_requests"].as_u64().unwrap(), "{refusals:?}");
    assert_eq!(other, v["other_requests"].as_u64().unwrap(), "{refusals:?}");
    assert_eq!(stopped, b["stopped"].as_u64().unwrap(), "{refusals:?}");
    assert_eq!(
        collateral,
        b["collateral"].as_u64().unwrap(),
        "{refusals:?}"
    );
    assert_eq!(other_hit, b["other"].as_u64().unwrap(), "{refusals:?}");
}

/// Runs `server` (`program`, its arguments before the config, the config written as
/// `conf_name` from `conf(dir, port)`) with the block emitted for it as `block_name`,
/// asks it about every client of the window, and checks its refusals against `block`'s.
fn enforce(
    server: &str,
    program: &Path,
    args: &[&str],
    block_name: &str,
    conf_name: &str,
    conf: impl Fn(&Path, u16) -> String,
) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join(block_name), emitted(server)).unwrap();
    let port = free_port();
    std::fs::write(p.join(conf_name), conf(p, port)).unwrap();
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("{dir}", p.to_str().unwrap()))
        .collect();
    let child = Command::new(program)
        .args(&args)
        .arg(p.join(conf_name))
        .spawn()
        .unwrap();
    let mut running = Server(child);
    wait_for(port, &mut running.0);
    assert_enforced(shares(|ip| match status(port, ip) {
        403 => true,
        200 => false,
        s => panic!("{server} answered {s} for {ip}"),
    }));
}

#[test]
fn a_real_nginx_enforces_the_block_as_printed() {
    let Some(nginx) = program(&["/usr/sbin/nginx", "/usr/bin/nginx"], "nginx") else {
        return;
    };
    let args = ["-e", "{dir}/error.log", "-p", "{dir}", "-c"];
    enforce(
        "nginx",
        &nginx,
        &args,
        "block.conf",
        "nginx.conf",
        |p, port| {
            format!(
                "pid {0}/nginx.pid;\nerror_log {0}/error.log;\ndaemon off;\nmaster_process off;\nevents {{}}\nhttp {{\n    client_body_temp_path {0}/body;\n    proxy_temp_path {0}/proxy;\n    fastcgi_temp_path {0}/fastcgi;\n    uwsgi_temp_path {0}/uwsgi;\n    scgi_temp_path {0}/scgi;\n    access_log off;\n    set_real_ip_from 127.0.0.1;\n    real_ip_header X-Forwarded-For;\n    include {0}/block.conf;\n    server {{\n        listen 127.0.0.1:{1};\n        location / {{\n            if ($logscope_block) {{ return 403; }}\n            return 200 ok;\n        }}\n    }}\n}}\n",
                p.display(),
                port
            )
        },
    );
}

#[test]
fn a_real_haproxy_enforces_the_block_as_printed() {
    let Some(haproxy) = program(&["/usr/sbin/haproxy", "/usr/bin/haproxy"], "haproxy") else {
        return;
    };
    enforce(
        "haproxy",
        &haproxy,
        &["-db", "-f"],
        "block.acl",
        "haproxy.cfg",
        |p, port| {
            format!(
                "global\n    log stdout format raw local0 emerg\n\ndefaults\n    mode http\n    timeout client 10s\n    timeout server 10s\n    timeout connect 5s\n\nfrontend storm\n    bind 127.0.0.1:{1}\n    http-request set-src hdr(x-forwarded-for)\n    acl logscope_block src -f {0}/block.acl\n    http-request deny if logscope_block\n    http-request return status 200\n",
                p.display(),
                port
            )
        },
    );
}

#[test]
fn the_diff_ranks_the_planted_networks_first() {
    let t = truth();
    let dir = tempfile::tempdir().unwrap();
    let v = ok_json(
        logscope(&dir.path().join("data"))
            .args(["diff", &storm("access.log.gz")])
            .args(["--baseline", "2026-11-03..2026-11-03"])
            .args(WINDOW)
            .args([
                "--asn-db",
                &storm("asn.tsv"),
                "--top",
                "0",
                "--format",
                "json",
            ]),
    );
    let rows = v["rows"].as_array().unwrap();
    for r in rows {
        for k in ["axis", "value", "baseline", "incident", "added"] {
            assert!(!r[k].is_null(), "{k} missing in {r}");
        }
    }
    let axis =
        |a: &str| -> Vec<&serde_json::Value> { rows.iter().filter(|r| r["axis"] == a).collect() };
    // The four planted autonomous systems added the most, the hosting one new.
    let asns: Vec<String> = axis("asn")
        .iter()
        .take(4)
        .map(|r| {
            r["value"]
                .as_str()
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    let mut want: Vec<String> = t["bot_asns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| format!("AS{a}"))
        .collect();
    want.push(format!("AS{}", t["scraper_asn"]));
    let mut got = asns.clone();
    got.sort();
    want.sort();
    assert_eq!(got, want, "{asns:?}");
    assert_eq!(axis("asn")[0]["new"], true, "the hosting AS is new");
    // The networks that grew most are planted ones: the first three quarters of the
    // planted count (the editors' office /24 works the window's hours, and follows),
    // and every new /24 with more than 20 requests.
    let planted: BTreeSet<String> = t["bot_nets"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .chain(
            t["scraper_nets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string()),
        )
        .collect();
    let nets = axis("network");
    for r in nets.iter().take(planted.len() * 3 / 4) {
        assert!(planted.contains(r["value"].as_str().unwrap()), "{r}");
    }
    let new: Vec<&&serde_json::Value> = nets
        .iter()
        .filter(|r| r["new"] == true && r["added"].as_f64().unwrap() > 20.0)
        .collect();
    assert_eq!(new.len(), planted.len(), "every planted /24 is new");
    for r in new {
        assert!(planted.contains(r["value"].as_str().unwrap()), "{r}");
    }
    // The incident's total is the window's rows; the added load sums per axis.
    let sum: u64 = axis("status")
        .iter()
        .map(|r| r["incident"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, v["incident_requests"].as_u64().unwrap());
    // Without an incident window: exit 2 with an example.
    let out = logscope(&dir.path().join("data"))
        .args(["diff", "--baseline", "2026-11-03", &storm("access.log.gz")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--since 2026-11-04T13:00"));
}

/// Refusals per key in a `--decisions` CSV.
fn refusals_per_key(path: &Path) -> BTreeMap<String, u64> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let head = crate::common::csv_fields(lines.next().unwrap());
    let col = |n: &str| {
        head.iter()
            .position(|h| h == n)
            .unwrap_or_else(|| panic!("no {n} in {head:?}"))
    };
    let (key, decision) = (col("key"), col("decision"));
    let mut out = BTreeMap::new();
    for l in lines {
        let f = crate::common::csv_fields(l);
        if f[decision].starts_with("refuse") {
            *out.entry(f[key].clone()).or_default() += 1;
        }
    }
    out
}

#[test]
fn key_asn_gives_each_autonomous_system_one_bucket() {
    let t = truth();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let replay = |extra: &[&str], out: &str| {
        let o = logscope(&d.join("data"))
            .args([
                "replay",
                &storm("access.log.gz"),
                "--asn-db",
                &storm("asn.tsv"),
            ])
            .args(extra)
            .arg("--decisions")
            .arg(d.join(out))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        refusals_per_key(&d.join(out))
    };
    let by_as = replay(&["--limit", "40/10m,key=asn,algo=fixed-window"], "asn.csv");
    let mut asns: Vec<u64> = t["bot_asns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_u64().unwrap())
        .collect();
    asns.push(t["scraper_asn"].as_u64().unwrap());
    for a in asns {
        // The AS's requests alone through one site-wide bucket: the same refusals (a
        // fixed window: the log's 1-second times are spread over their second by how
        // many requests share it, which a sliding log would see differently alone).
        let alone = replay(
            &[
                "--limit",
                "40/10m,algo=fixed-window",
                "--asn",
                &format!("AS{a}"),
            ],
            &format!("{a}.csv"),
        );
        let n = by_as.get(&format!("AS{a}")).copied().unwrap_or(0);
        assert!(n > 0, "AS{a} was refused nothing: {by_as:?}");
        assert_eq!(Some(&n), alone.get("site"), "AS{a}: {by_as:?} vs {alone:?}");
    }
    // Without a database, key=asn says what it needs.
    let o = logscope(&d.join("data"))
        .args([
            "replay",
            &storm("access.log.gz"),
            "--limit",
            "100/10m,key=asn",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--asn-db"));
}

#[test]
fn the_fingerprint_tells_bots_from_people() {
    let t = truth();
    let dir = tempfile::tempdir().unwrap();
    let v = ok_json(
        logscope(&dir.path().join("data"))
            .args([
                "fingerprint",
                &storm("access.log.gz"),
                "--top",
                "0",
                "--format",
                "json",
            ])
            .args(WINDOW),
    );
    let planted: BTreeSet<String> = t["bot_nets"].as_object().unwrap().keys().cloned().collect();
    let groups = v["groups"].as_array().unwrap();
    let mut bots = 0;
    for g in groups {
        let name = g["group"].as_str().unwrap();
        if planted.contains(name) {
            bots += 1;
            // The botnet: pages only, heavy only, never a 304, every URL new.
            assert_eq!(g["page_only_share"], 1.0, "{g}");
            assert_eq!(g["heavy_share"], 1.0, "{g}");
            assert_eq!(g["not_modified_share"], 0.0, "{g}");
            assert!(g["url_uniqueness"].as_f64().unwrap() > 0.9, "{g}");
        } else if name.starts_with("100.20.") && g["requests"].as_u64().unwrap() >= 8 {
            // People: a page and its assets, revalidated.
            assert_eq!(g["page_only_share"], 0.0, "{g}");
            assert!(g["not_modified_share"].as_f64().unwrap() > 0.1, "{g}");
        }
    }
    assert_eq!(bots, planted.len());
    let sum: u64 = groups.iter().map(|g| g["requests"].as_u64().unwrap()).sum();
    assert_eq!(sum, v["requests"].as_u64().unwrap());
}

#[test]
fn the_network_database_is_found_without_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let xdg = dir.path().join("xdg");
    std::fs::create_dir_all(xdg.join("logscope")).unwrap();
    std::fs::copy(fixture("storm/asn.tsv"), xdg.join("logscope/asn-db")).unwrap();
    let asns = |c: &mut assert_cmd::Command| -> serde_json::Value {
        let v = ok_json(c.args([
            "top",
            "--by",
            "asn",
            &storm("access.log.gz"),
            "--format",
            "json",
        ]));
        v["distinct_values"].clone()
    };
    // $XDG_DATA_HOME/logscope/asn-db, then $LOGSCOPE_ASN_DB, then --asn-db.
    let mut c = logscope(&dir.path().join("data"));
    c.env("XDG_DATA_HOME", &xdg);
    assert_eq!(asns(&mut c), 7);
    let mut c = logscope(&dir.path().join("data"));
    c.env("LOGSCOPE_ASN_DB", storm("asn.tsv"));
    assert_eq!(asns(&mut c), 7);
    // None of them: --by asn says what it needs; a missing $LOGSCOPE_ASN_DB is an error.
    let out = logscope(&dir.path().join("data"))
        .args(["top", "--by", "asn", &storm("access.log.gz")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = logscope(&dir.path().join("data"))
        .env("LOGSCOPE_ASN_DB", dir.path().join("none.tsv"))
        .args(["top", "--by", "asn", &storm("access.log.gz")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("LOGSCOPE_ASN_DB="));
}

#[test]
fn heavy_names_each_bucket_s_largest_autonomous_system() {
    let t = truth();
    let dir = tempfile::tempdir().unwrap();
    let v = ok_json(
        logscope(&dir.path().join("data"))
            .args(["heavy", &storm("access.log.gz"), "--by", "30m"])
            .args(WINDOW)
            .args(["--asn-db", &storm("asn.tsv"), "--format", "json"]),
    );
    // The hosting scraper sent the most heavy requests of the storm.
    assert_eq!(
        v["top_as"],
        format!("AS{} CLOUD-HOST", t["scraper_asn"]),
        "{v}"
    );
    let share = v["top_as_share"].as_f64().unwrap();
    let want = t["scraper_requests"].as_f64().unwrap() / v["heavy"].as_f64().unwrap();
    assert!((share - want).abs() < 1e-9, "{share} vs {want}");
    let planted: Vec<String> = t["bot_asns"]
        .as_array()
        .unwrap()
        .iter()
        .chain(std::iter::once(&t["scraper_asn"]))
        .map(|a| format!("AS{a}"))
        .collect();
    let buckets = v["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 4);
    for b in buckets {
        let a = b["top_as"].as_str().unwrap();
        assert!(
            planted.iter().any(|p| a.starts_with(&format!("{p} "))),
            "{b}"
        );
    }
    // The table and the CSV say it too.
    let csv = crate::common::ok_stdout(
        logscope(&dir.path().join("data"))
            .args(["heavy", &storm("access.log.gz"), "--by", "30m"])
            .args(WINDOW)
            .args(["--asn-db", &storm("asn.tsv"), "--format", "csv"]),
    );
    let head = crate::common::csv_fields(csv.lines().next().unwrap());
    let k = head
        .iter()
        .position(|h| h == "top_as")
        .expect("a top_as column");
    for line in csv.lines().skip(1) {
        assert_eq!(
            crate::common::csv_fields(line)[k],
            "AS64610 CLOUD-HOST",
            "{line}"
        );
    }
    // Without a database there is no such key.
    let v = ok_json(
        logscope(&dir.path().join("data"))
            .args(["heavy", &storm("access.log.gz"), "--format", "json"])
            .args(WINDOW),
    );
    assert!(v.get("top_as").is_none() && v["buckets"][0].get("top_as").is_none());
}
