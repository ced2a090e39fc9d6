//! The live side: `ingest --follow` driven through a file that grows with mid-line cuts,
//! is rotated both ways, truncated, removed and recreated, and killed -9 — after each
//! step the dataset holds every line exactly once — and compaction, which leaves every
//! report as it was.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::common::{Rng, fixture, logscope, ok_stdout};

/// The binary with the tests' clean environment, as a process to start and stop.
fn live(data: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("logscope"));
    c.env_remove("LOGSCOPE_DATA")
        .env_remove("LOGSCOPE_CONFIG")
        .env_remove("COLUMNS")
        .env_remove("LOGSCOPE_ASN_DB")
        .env("XDG_CONFIG_HOME", "/nonexistent/logscope-test-config")
        .env("XDG_DATA_HOME", "/nonexistent/logscope-test-data")
        .env("NO_COLOR", "1")
        .arg("--data")
        .arg(data);
    c
}

/// Line `n` of the generated log: a combined line whose path is unique.
fn line(n: u64) -> String {
    let (h, m, s) = (n / 3600 % 24, n / 60 % 60, n % 60);
    format!(
        "10.0.{}.{} - - [07/Dec/2026:{h:02}:{m:02}:{s:02} +0000] \"GET /p/{n} HTTP/1.1\" 200 {} \"-\" \"Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0\"\n",
        n / 250 % 250,
        n % 250 + 1,
        100 + n % 900
    )
}

fn lines(r: std::ops::Range<u64>) -> String {
    r.map(line).collect()
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// (rows, distinct paths) in the dataset.
fn counted(data: &Path) -> (u64, u64) {
    if !data.join("requests").exists() {
        return (0, 0);
    }
    let out = ok_stdout(logscope(data).args([
        "sql",
        "--format",
        "csv",
        "SELECT count(*) AS n, count(DISTINCT path) AS d FROM requests",
    ]));
    let row = out.lines().nth(1).unwrap().to_string();
    let (n, d) = row.split_once(',').unwrap();
    (n.parse().unwrap(), d.parse().unwrap())
}

/// Waits (a bounded number of tries) until the dataset holds `n` rows, then checks that
/// each is a distinct line and that one more commit interval adds nothing.
fn settles_at(data: &Path, n: u64, step: &str, follower: &mut Child) {
    let mut seen = (0, 0);
    for _ in 0..150 {
        seen = counted(data);
        if seen.0 >= n {
            break;
        }
        assert!(
            follower.try_wait().unwrap().is_none(),
            "{step}: the follow ended early"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(seen, (n, n), "{step}: rows and distinct lines");
    std::thread::sleep(Duration::from_millis(1300));
    assert_eq!(
        counted(data),
        (n, n),
        "{step}: a later commit duplicated rows"
    );
}

fn start(data: &Path, dir: &Path, files: &[&str]) -> Child {
    live(data)
        .current_dir(dir)
        .args(["ingest", "--follow", "--commit-every", "1s"])
        .args(files)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Stops a follow with SIGTERM and returns its exit status and stderr.
fn stop(child: Child) -> (i32, String) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn follow_counts_every_line_once_through_cuts_rotation_and_truncation() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("access.log");
    let all = lines(0..2000);
    // 300 lines and half of the next: the half is held back.
    let cut = lines(0..300).len() + 40;
    append(&log, &all[..cut]);
    let mut f = start(&data, dir.path(), &["access.log*"]);
    settles_at(&data, 300, "a line cut in the middle", &mut f);
    append(&log, &all[cut..lines(0..500).len()]);
    settles_at(&data, 500, "the cut line completed", &mut f);

    // Rename and create: the server writes on into the renamed file for a while.
    std::fs::rename(&log, dir.path().join("access.log.1")).unwrap();
    append(&dir.path().join("access.log.1"), &lines(500..600));
    append(&log, &lines(600..700));
    settles_at(&data, 700, "rename and create", &mut f);

    // Compressed later: recognised, nothing read again.
    let gz = std::process::Command::new("gzip")
        .arg(dir.path().join("access.log.1"))
        .status()
        .unwrap();
    assert!(gz.success());
    append(&log, &lines(700..750));
    settles_at(&data, 750, "the rotated file compressed", &mut f);

    // copytruncate: lines appended, copied and truncated before a commit saw them; the
    // copy (followed by the pattern) gives them.
    append(&log, &lines(750..800));
    std::fs::copy(&log, dir.path().join("access.log.2")).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&log)
        .unwrap()
        .set_len(0)
        .unwrap();
    append(&log, &lines(800..850));
    settles_at(&data, 850, "copytruncate", &mut f);

    // Removed, then back.
    std::fs::remove_file(&log).unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    append(&log, &lines(850..900));
    settles_at(&data, 900, "removed and recreated", &mut f);

    let (code, err) = stop(f);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("dataset 900 rows"), "{err}");
}

#[test]
fn a_followed_name_is_read_to_its_end_after_rename() {
    // Only the live name is followed: the renamed file's last lines come through the
    // descriptor held open, under the name it was followed by.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("access.log");
    append(&log, &lines(0..100));
    let mut f = start(&data, dir.path(), &["access.log"]);
    settles_at(&data, 100, "start", &mut f);
    let old = dir.path().join("elsewhere.log");
    std::fs::rename(&log, &old).unwrap();
    append(&old, &lines(100..150));
    append(&log, &lines(150..200));
    // Removed outright while still growing: read through the descriptor.
    append(&old, &lines(200..220));
    std::fs::remove_file(&old).unwrap();
    settles_at(&data, 220, "renamed away, then removed while open", &mut f);
    let names = ok_stdout(logscope(&data).args([
        "sql",
        "--format",
        "csv",
        "SELECT DISTINCT file FROM requests",
    ]));
    assert_eq!(names.trim(), "file\naccess.log", "{names}");
    let (code, err) = stop(f);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("was replaced (rotated)"), "{err}");
}

#[test]
fn kill_9_at_any_moment_loses_and_duplicates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("access.log");
    let all = lines(0..30_000);
    let mut rng = Rng(0x5eed_0043);
    let mut written = 0usize;
    let mut f = start(&data, dir.path(), &["access.log"]);
    for round in 0..6 {
        // Appends in pieces that cut lines anywhere, while the follow commits.
        for _ in 0..8 {
            let n = (rng.below(40_000) as usize + 1).min(all.len() - written);
            append(&log, &all[written..written + n]);
            written += n;
            std::thread::sleep(Duration::from_millis(rng.below(250)));
        }
        f.kill().unwrap();
        f.wait().unwrap();
        f = start(&data, dir.path(), &["access.log"]);
        let (n, d) = counted(&data);
        assert_eq!(n, d, "round {round}: a row twice after kill -9");
    }
    append(&log, &all[written..]);
    let whole = all.lines().count() as u64;
    settles_at(&data, whole, "after six kill -9", &mut f);
    let (code, err) = stop(f);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn compaction_merges_small_parts_and_changes_no_report() {
    let dir = tempfile::tempdir().unwrap();
    let (small, whole) = (dir.path().join("small"), dir.path().join("whole"));
    let src = std::fs::read_to_string(fixture("logs/elastic-apache.log")).unwrap();
    let src: Vec<&str> = src.lines().take(1700).collect();
    let log = dir.path().join("a.log");
    let mut merged = false;
    for chunk in src.chunks(100) {
        append(&log, &(chunk.join("\n") + "\n"));
        let out = logscope(&small)
            .args(["ingest", "--compact", "a.log"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success());
        merged |= String::from_utf8_lossy(&out.stderr).contains("merged 16 small parts into 1");
    }
    assert!(merged, "the 16th small ingest merges the parts");
    logscope(&whole)
        .args(["ingest", "-q", "a.log"])
        .current_dir(dir.path())
        .assert()
        .success();
    let info = crate::common::ok_json(logscope(&small).args(["info", "--json"]));
    assert_eq!(info["parts"], 2, "{info}");
    assert_eq!(info["rows"], 1700);
    let limit = "--limit=2r/s,burst=5,algo=nginx,key=ip";
    let decisions = |name: &str| dir.path().join(name).display().to_string();
    for args in [
        vec!["top", "--format", "json"],
        vec!["heavy", "--format", "json", "--by", "1h"],
        vec![
            "replay",
            limit,
            "--format",
            "json",
            "--decisions",
            "DECISIONS",
        ],
    ] {
        let with = |d: &str| -> Vec<String> {
            args.iter()
                .map(|a| {
                    if *a == "DECISIONS" {
                        decisions(d)
                    } else {
                        a.to_string()
                    }
                })
                .collect()
        };
        let a = ok_stdout(logscope(&small).args(with("small.csv")));
        let b = ok_stdout(logscope(&whole).args(with("whole.csv")));
        assert_eq!(a, b, "{args:?}: the compacted dataset reads as one ingest");
    }
    let (a, b) = (
        std::fs::read(decisions("small.csv")).unwrap(),
        std::fs::read(decisions("whole.csv")).unwrap(),
    );
    assert!(a.len() > 1000);
    assert_eq!(a, b, "the replay's decisions");
}

#[test]
fn follow_refuses_stdin_and_dry_run_and_commit_every_alone() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    for args in [
        &["ingest", "--follow", "-"][..],
        &["ingest", "--follow", "--dry-run", "a.log"],
        &["ingest", "--commit-every", "10s", "a.log"],
        &["ingest", "--follow", "--commit-every", "0", "a.log"],
        &["ingest", "--follow", "--commit-every", "soon", "a.log"],
    ] {
        let out = logscope(&data).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("e.g.") || err.contains("For more information"),
            "{args:?}: {err}"
        );
    }
}

fn storm(name: &str) -> String {
    fixture(&format!("storm/{name}")).display().to_string()
}

/// The storm's frame at 14:30 (the window 14:20–14:30) against the batch reports over
/// the same rows: every figure the same.
#[test]
fn a_watch_frame_shows_the_batch_reports_figures() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = storm("access.log.gz");
    let db = storm("asn.tsv");
    let until = "2026-11-04T14:30";
    let nginx = "5r/s,algo=nginx,burst=10,key=ip";
    let out = logscope(&data)
        .args(["watch", "--once", "--format", "json", "--until", until])
        .args(["--asn-db", &db, "--limit", "1600/10m", "--limit", nginx])
        .args(["--alert", "heavy > 200/10m", "--alert", "prefix_share > 5%"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "an alert is firing");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &v;
    assert_eq!(v["schema"]["name"], "logscope.watch");
    assert_eq!(f["latest"], "2026-11-04T14:29:59.000Z", "{f}");
    assert_eq!(f["since"], "2026-11-04T14:20:00.000Z");
    let since = "2026-11-04T14:20";

    let top = |by: &str| {
        crate::common::ok_json(
            logscope(&data)
                .args(["top", "--by", by, "--format", "json", "--limit", "5"])
                .args(["--since", since, "--until", until, "--asn-db", &db])
                .arg(&log),
        )
    };
    for (by, key) in [("prefix", "prefixes"), ("agent", "agents"), ("asn", "asns")] {
        let t = top(by);
        let rows = t["rows"].as_array().unwrap();
        let shown = f[key].as_array().unwrap();
        assert_eq!(rows.len(), shown.len(), "{by}");
        for (r, s) in rows.iter().zip(shown) {
            assert_eq!(r["value"], s["value"], "{by}");
            assert_eq!(r["requests"], s["requests"], "{by}");
            assert_eq!(r["share"], s["share"], "{by}");
        }
        assert_eq!(t["requests"], f["totals"]["requests"], "{by}");
    }
    // The series against heavy --by 1m: each minute's requests and heavy requests.
    let h = crate::common::ok_json(
        logscope(&data)
            .args(["heavy", "--by", "1m", "--format", "json"])
            .args(["--since", "2026-11-04T13:30", "--until", until])
            .arg(&log),
    );
    let series = f["series"].as_array().unwrap();
    assert_eq!(series.len(), 60);
    let buckets = h["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 60);
    for (b, p) in buckets.iter().zip(series) {
        assert_eq!(b["start"], p["minute"]);
        assert_eq!(b["requests"], p["requests"], "{}", p["minute"]);
        assert_eq!(b["heavy"], p["heavy"], "{}", p["minute"]);
    }
    let window_heavy: u64 = buckets[50..]
        .iter()
        .map(|b| b["heavy"].as_u64().unwrap())
        .sum();
    assert_eq!(f["totals"]["heavy"].as_u64(), Some(window_heavy));
    // Each candidate against replay --since over the same rows.
    for (i, spec) in ["1600/10m", nginx].iter().enumerate() {
        let r = crate::common::ok_json(
            logscope(&data)
                .args(["replay", "--limit", spec, "--format", "json"])
                .args(["--since", since, "--until", until])
                .arg(&log),
        );
        let c = &r["candidates"][0];
        assert_eq!(f["limits"][i]["refused"], c["refused"], "{spec}");
        assert_eq!(f["limits"][i]["requests"], c["requests"], "{spec}");
    }
    assert_eq!(f["alerts"][0]["value"].as_f64(), Some(window_heavy as f64));
    assert_eq!(f["alerts"][0]["firing"], true);
    assert_eq!(f["alerts"][1]["firing"], false, "the top /24 has 3.9%");
}

#[test]
fn an_alert_fires_once_at_the_crossing_of_the_storm() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let got = dir.path().join("alerts.txt");
    let cmd = format!(
        "echo \"$LOGSCOPE_ALERT_STATE|$LOGSCOPE_ALERT|$LOGSCOPE_ALERT_VALUE|$LOGSCOPE_ALERT_THRESHOLD|$LOGSCOPE_ALERT_AT\" >> '{}'",
        got.display()
    );
    let out = logscope(&data)
        .args(["watch", "--backtest", "--alert", "heavy > 200/10m"])
        .args(["--alert", "errors > 5%/5m", "--on-alert", &cmd])
        .arg(storm("access.log.gz"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    // The storm starts at 13:00: the 10-minute count passes 200 at 13:07, once; it
    // falls back under 180 after 15:00, once; no 5xx share ever crosses.
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("2026-11-04T13:0") && lines[0].contains(" firing heavy > 200/10m: "),
        "{text}"
    );
    assert!(
        lines[1].starts_with("2026-11-04T15:0") && lines[1].contains(" resolved "),
        "{text}"
    );
    // The value at the crossing is the heavy requests of the 10 minutes before it.
    let at = &lines[0][..24];
    let end = logscope_time_minus(at, 0);
    let start = logscope_time_minus(at, 10);
    let h = crate::common::ok_json(
        logscope(&data)
            .args([
                "heavy", "--by", "10m", "--format", "json", "--since", &start, "--until", &end,
            ])
            .arg(storm("access.log.gz")),
    );
    let heavy = h["heavy"].as_u64().unwrap();
    assert!(heavy > 200, "{heavy}");
    assert!(
        lines[0].ends_with(&format!(": {heavy} (threshold 200)")),
        "{} vs {heavy}",
        lines[0]
    );
    let env = std::fs::read_to_string(&got).unwrap();
    let env: Vec<&str> = env.lines().collect();
    assert_eq!(env.len(), 2, "{env:?}");
    assert_eq!(env[0], format!("firing|heavy > 200/10m|{heavy}|200|{at}"));
    assert!(env[1].starts_with("resolved|heavy > 200/10m|"), "{env:?}");
}

/// `2026-11-04T13:07:00.000Z` minus `m` minutes, as `--since` takes it (UTC).
fn logscope_time_minus(at: &str, m: i64) -> String {
    let t = chrono::DateTime::parse_from_rfc3339(at).unwrap() - chrono::Duration::minutes(m);
    t.format("%Y-%m-%dT%H:%M").to_string()
}

#[test]
fn watch_refuses_bad_rules_and_a_dashboard_without_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = storm("access.log.gz");
    for args in [
        vec!["watch", "--once", "--alert", "heavy > 5%", &log],
        vec!["watch", "--once", "--alert", "latency > 3/1m", &log],
        vec!["watch", "--once", "--window", "90s", &log],
        vec!["watch", "--backtest", &log],
        vec!["watch", "--backtest", "--alert", "asn_share > 20%", &log],
        vec!["watch", "--once", "--limit", "lots", &log],
        vec!["watch", "--follow"],
        vec!["watch", &log],
    ] {
        let out = logscope(&data).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("e.g.") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

/// A tmux server of the test's own (its own socket), killed when dropped.
struct Tmux(String);

impl Tmux {
    fn new() -> Option<Tmux> {
        if !Path::new("/usr/bin/tmux").is_file() {
            println!("SKIPPED: tmux is not installed (apt-get install -y tmux)");
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set but tmux is not installed"
            );
            return None;
        }
        Some(Tmux(format!(
            "logscope-test-{}-{}",
            std::process::id(),
            rand_suffix()
        )))
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        std::process::Command::new("tmux")
            .arg("-L")
            .arg(&self.0)
            .args(args)
            .output()
            .unwrap()
    }

    fn capture(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "w"]).stdout).into_owned()
    }

    fn alive(&self) -> bool {
        self.run(&["has-session", "-t", "w"]).status.success()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// The dashboard in a real pseudo-terminal (tmux) at 80×24 and 200×50: the figures of
/// the batch reports, and q quits leaving the shell's screen as it was.
#[test]
fn the_dashboard_in_a_terminal_at_80x24_and_200x50() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = storm("access.log.gz");
    let bin = assert_cmd::cargo::cargo_bin("logscope");
    let t = crate::common::ok_json(
        logscope(&data)
            .args(["top", "--by", "prefix", "--format", "json", "--limit", "1"])
            .args([
                "--since",
                "2026-11-04T14:20",
                "--until",
                "2026-11-04T14:30",
                &log,
            ]),
    );
    let first = &t["rows"][0];
    let prefix_line = [
        first["value"].as_str().unwrap().to_string(),
        first["requests"].to_string(),
        format!("{:.1}%", 100.0 * first["share"].as_f64().unwrap()),
    ];
    let totals = format!("{} requests", t["requests"]);
    for (w, h) in [(80, 24), (200, 50)] {
        let Some(tmux) = Tmux::new() else { return };
        let cmd = format!(
            "env -u LOGSCOPE_DATA -u COLUMNS -u LINES NO_COLOR=1 XDG_CONFIG_HOME=/nonexistent XDG_DATA_HOME=/nonexistent '{}' --data '{}' watch --capacity 30/1m --limit 1600/10m --alert 'heavy > 200/10m' --until 2026-11-04T14:30 '{}'; echo EXITED $?; sleep 30",
            bin.display(),
            data.display(),
            log
        );
        let (ws, hs) = (w.to_string(), h.to_string());
        let started = tmux.run(&["new-session", "-d", "-s", "w", "-x", &ws, "-y", &hs, &cmd]);
        assert!(
            started.status.success(),
            "{}",
            String::from_utf8_lossy(&started.stderr)
        );
        let mut screen = String::new();
        for _ in 0..100 {
            screen = tmux.capture();
            if screen.contains("top prefixes") && screen.contains("FIRING") {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(screen.contains("top prefixes"), "{w}x{h}:\n{screen}");
        let rows: Vec<&str> = screen.lines().collect();
        assert!(rows.len() <= h, "{w}x{h}: {} rows", rows.len());
        assert!(
            rows.iter().all(|r| r.chars().count() <= w),
            "{w}x{h}:\n{screen}"
        );
        let shown = rows.iter().any(|r| {
            r.split_whitespace()
                .take(3)
                .eq(prefix_line.iter().map(String::as_str))
        });
        assert!(shown, "{w}x{h}: no {prefix_line:?} in\n{screen}");
        assert!(
            screen.contains(&totals),
            "{w}x{h}: no '{totals}' in\n{screen}"
        );
        assert!(screen.contains("load 80.0%"), "{w}x{h}:\n{screen}");
        assert!(
            screen.contains("FIRING heavy > 200/10m: 290 (threshold 200)"),
            "{w}x{h}:\n{screen}"
        );
        assert!(
            screen.contains("1600/10m: 0 of 310 (0.0%)"),
            "{w}x{h}:\n{screen}"
        );
        tmux.run(&["send-keys", "-t", "w", "q"]);
        let mut after = String::new();
        for _ in 0..100 {
            after = tmux.capture();
            if after.contains("EXITED") {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(
            after.contains("EXITED 0"),
            "{w}x{h}: q did not quit cleanly:\n{after}"
        );
        assert!(
            !after.contains("top prefixes"),
            "{w}x{h}: the screen was not restored:\n{after}"
        );
        assert!(tmux.alive());
    }
}

/// A dashboard whose terminal goes away (ssh dropped: the tmux server killed) ends at
/// once instead of spinning on a dead terminal.
#[test]
fn the_dashboard_ends_when_its_terminal_goes_away() {
    let Some(tmux) = Tmux::new() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let cmd = format!(
        "echo $$ > '{}'; exec env NO_COLOR=1 XDG_CONFIG_HOME=/nonexistent XDG_DATA_HOME=/nonexistent '{}' --data '{}' watch --capacity 30/1m '{}'",
        pid_file.display(),
        assert_cmd::cargo::cargo_bin("logscope").display(),
        dir.path().join("data").display(),
        storm("access.log.gz")
    );
    let started = tmux.run(&["new-session", "-d", "-s", "w", "-x", "80", "-y", "24", &cmd]);
    assert!(started.status.success());
    let mut screen = String::new();
    for _ in 0..100 {
        screen = tmux.capture();
        if screen.contains("top prefixes") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(screen.contains("top prefixes"), "{screen}");
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    tmux.run(&["kill-server"]);
    // Ended: no such process, or a zombie no one reaped yet (its parent, the tmux
    // server, is gone).
    let ended = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    };
    let gone = (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        ended()
    });
    if !gone {
        // SAFETY: the test's own process, left behind.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(gone, "watch kept running after its terminal went away");
}

/// The live path end to end: `watch --follow` follows a growing log into the dataset and
/// shows it; the storm's lines arrive, the alert fires at its crossing and
/// `--exit-on-alert` ends the watch with status 5, its alert log on stderr.
#[test]
fn watch_follow_fires_the_alert_live_and_exits_5() {
    let Some(tmux) = Tmux::new() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("live.log");
    let all = std::process::Command::new("gzip")
        .args(["-dc", &storm("access.log.gz")])
        .output()
        .unwrap()
        .stdout;
    let all = String::from_utf8(all).unwrap();
    // (day, hour) of a line: `[04/Nov/2026:13:…`.
    let when = |l: &str| -> (u32, u32) {
        let t = &l[l.find('[').unwrap() + 1..];
        (t[..2].parse().unwrap(), t[12..14].parse().unwrap())
    };
    let before: Vec<&str> = all.lines().filter(|l| when(l) < (4, 13)).collect();
    let first: Vec<&str> = all
        .lines()
        .filter(|l| (4, 13) <= when(l) && when(l) < (4, 14))
        .collect();
    append(&log, &(before.join("\n") + "\n"));
    let err = dir.path().join("err");
    let cmd = format!(
        "env NO_COLOR=1 XDG_CONFIG_HOME=/nonexistent XDG_DATA_HOME=/nonexistent '{}' --data '{}' watch --follow --capacity 30/1m --alert 'heavy > 200/10m' --exit-on-alert '{}' 2> '{}'; echo EXITED $?; sleep 30",
        assert_cmd::cargo::cargo_bin("logscope").display(),
        dir.path().join("data").display(),
        log.display(),
        err.display()
    );
    let started = tmux.run(&["new-session", "-d", "-s", "w", "-x", "80", "-y", "24", &cmd]);
    assert!(started.status.success());
    let mut screen = String::new();
    for _ in 0..150 {
        screen = tmux.capture();
        if screen.contains("ok     heavy > 200/10m") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        screen.contains("ok     heavy > 200/10m"),
        "before the storm:\n{screen}"
    );
    // The storm's first hour arrives.
    append(&log, &(first.join("\n") + "\n"));
    let mut after = String::new();
    for _ in 0..150 {
        after = tmux.capture();
        if after.contains("EXITED") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        after.contains("EXITED 5"),
        "the alert did not end the watch:\n{after}"
    );
    let told = std::fs::read_to_string(&err).unwrap();
    let fired: Vec<&str> = told.lines().filter(|l| l.contains(" firing ")).collect();
    assert_eq!(fired.len(), 1, "{told}");
    assert!(fired[0].contains("heavy > 200/10m"), "{told}");
}

/// A backtest of share rules: at each crossing, the value is `top`'s first share over the
/// window ending there.
#[test]
fn a_backtest_of_share_rules_gives_top_s_shares() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = storm("access.log.gz");
    let out = logscope(&data)
        .args(["watch", "--backtest", "--format", "json"])
        .args([
            "--alert",
            "prefix_share > 10%",
            "--alert",
            "agent_share > 20%",
        ])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let crossings = v["crossings"].as_array().unwrap();
    assert!(crossings.len() >= 4, "{v}");
    for c in crossings {
        let at = c["at"].as_str().unwrap();
        let by = if c["rule"].as_str().unwrap().starts_with("prefix") {
            "prefix"
        } else {
            "agent"
        };
        let (since, until) = (logscope_time_minus(at, 10), logscope_time_minus(at, 0));
        let t = crate::common::ok_json(
            logscope(&data)
                .args(["top", "--by", by, "--format", "json", "--limit", "1"])
                .args(["--since", &since, "--until", &until, &log]),
        );
        assert_eq!(c["value"], t["rows"][0]["share"], "{by} at {at}: {c}");
    }
}

/// `--rejects` of a follow keeps the bad lines of every commit, not only the last one's,
/// and of an earlier follow of the same files.
#[test]
fn a_follow_keeps_every_commits_rejected_lines() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("access.log");
    let rejects = dir.path().join("rejects.txt");
    append(&log, &(lines(0..100) + "not a log line one\n"));
    std::fs::write(&rejects, "from an earlier follow\n").unwrap();
    let mut f = live(&data)
        .current_dir(dir.path())
        .args(["ingest", "--follow", "--commit-every", "1s", "--rejects"])
        .arg(&rejects)
        .arg("access.log")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    settles_at(&data, 100, "the first bad line", &mut f);
    append(&log, &(lines(100..200) + "not a log line two\n"));
    settles_at(&data, 200, "the second bad line", &mut f);
    let (code, err) = stop(f);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(&rejects).unwrap(),
        "from an earlier follow\nnot a log line one\nnot a log line two\n"
    );
}

/// A watched log with bad lines: they are told once, before the dashboard takes the
/// screen, and never written over the dashboard when the file grows.
#[test]
fn bad_lines_never_write_over_the_dashboard() {
    let Some(tmux) = Tmux::new() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    append(&log, &(lines(0..300) + "not a log line one\n"));
    let cmd = format!(
        "env NO_COLOR=1 XDG_CONFIG_HOME=/nonexistent XDG_DATA_HOME=/nonexistent '{}' --data '{}' watch '{}'; echo EXITED $?; sleep 30",
        assert_cmd::cargo::cargo_bin("logscope").display(),
        dir.path().join("data").display(),
        log.display()
    );
    let started = tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "w",
        "-x",
        "100",
        "-y",
        "30",
        &cmd,
    ]);
    assert!(started.status.success());
    let wait_for = |what: &str| {
        let mut screen = String::new();
        for _ in 0..100 {
            screen = tmux.capture();
            if screen.contains(what) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        screen
    };
    let screen = wait_for("300 requests");
    assert!(screen.contains("300 requests"), "{screen}");
    // The file grows, with another bad line: the next frame reads it again.
    append(&log, &(lines(300..310) + "not a log line two\n"));
    let screen = wait_for("310 requests");
    assert!(screen.contains("310 requests"), "{screen}");
    std::thread::sleep(Duration::from_millis(300));
    let screen = tmux.capture();
    assert!(
        !screen.contains("not a log line"),
        "a bad line over the dashboard:\n{screen}"
    );
    tmux.run(&["send-keys", "-t", "w", "q"]);
    let after = wait_for("EXITED");
    assert!(after.contains("EXITED 0"), "{after}");
    assert!(
        after.contains(":301: ") && after.contains("not a log line one"),
        "told before the dashboard:\n{after}"
    );
}
