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
            .args(["ingest", "a.log"])
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
