//! Regression tests: hardening_source — reading inputs: `--max-line` of any size,
//! truncated and corrupt compressed streams, files that shrink while read, detection past
//! a long first line and on CR-only files, and clean messages for files that cannot be
//! opened.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::common::*;

/// `n` combined lines, numbered in the path so rows can be told apart.
fn combined(n: usize, from: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for i in from..from + n {
        writeln!(
            v,
            "10.0.{}.{} - - [10/Oct/2024:13:{:02}:{:02} +0000] \"GET /page/{i} HTTP/1.1\" 200 {} \"-\" \"curl/8.0\"",
            i % 200,
            i % 250,
            (i / 60) % 60,
            i % 60,
            i % 9000
        )
        .unwrap();
    }
    v
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn put(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p
}

/// A column of the dataset as numbers, whatever integer type it is stored as.
fn numbers(df: &polars::prelude::DataFrame, name: &str) -> Vec<u64> {
    use polars::prelude::*;
    df.column(name)
        .unwrap()
        .cast(&DataType::UInt64)
        .unwrap()
        .u64()
        .unwrap()
        .into_no_null_iter()
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn max_line_below_200_is_safe_and_rejects_keep_the_first_max_line_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut log = Vec::new();
    for i in 0..20 {
        writeln!(
            log,
            "1.2.3.{i} - - [10/Oct/2024:13:55:36 +0000] \"GET / HTTP/1.1\" 200 5"
        )
        .unwrap();
    }
    let junk150: Vec<u8> = (0..150u32).map(|i| b'a' + (i % 26) as u8).collect();
    // Longer than a chunk (2 MiB): skipped by the reader without being buffered.
    let junk3m: Vec<u8> = (0..3_000_000u32).map(|i| b'A' + (i % 26) as u8).collect();
    log.extend_from_slice(&junk150);
    log.push(b'\n');
    log.extend_from_slice(&junk3m);
    log.push(b'\n');
    let f = put(tmp.path(), "a.log", &log);
    for max_line in [100usize, 1, 0] {
        let rejects = tmp.path().join(format!("rejects-{max_line}.txt"));
        let out = logscope(&data)
            .args(["ingest", "--dry-run", "--json", "--max-line"])
            .arg(max_line.to_string())
            .arg("--rejects")
            .arg(&rejects)
            .arg(&f)
            .output()
            .unwrap();
        let code = out.status.code();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "max_line {max_line}: {e}; exit {code:?}; stderr {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        let written = std::fs::read(&rejects).unwrap();
        let mut want = Vec::new();
        if max_line == 100 {
            assert_eq!(code, Some(0), "{v}");
            assert_eq!(v["added"], 20);
        } else {
            // Every line is over the limit.
            assert_eq!(code, Some(3), "{v}");
            for l in log
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .take(20)
            {
                want.extend_from_slice(&l[..max_line]);
                want.push(b'\n');
            }
        }
        assert_eq!(v["bad"], if max_line == 100 { 2 } else { 22 });
        // Over-long lines are written as their first --max-line bytes.
        want.extend_from_slice(&junk150[..max_line]);
        want.push(b'\n');
        want.extend_from_slice(&junk3m[..max_line]);
        want.push(b'\n');
        assert_eq!(written, want, "max_line {max_line}");
    }
}

#[test]
fn truncated_gzip_then_the_complete_file_adds_every_line_once() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = combined(3000, 1);
    let z = gz(&log);
    let cut = put(tmp.path(), "cut.log.gz", &z[..z.len() * 2 / 3]);
    let (v, code) = ingest_json(&data, &[s(&cut)]);
    assert_eq!(code, 4, "{v}");
    let added = v["added"].as_u64().unwrap();
    assert!(added > 1000 && added < 3000, "{v}");
    assert_eq!(v["bad"], 0, "no fragment of a cut line is a bad line: {v}");
    let damage = v["files"][0]["damage"].as_str().unwrap();
    assert!(damage.contains("truncated gzip stream"), "{damage}");

    let full = put(tmp.path(), "full.log.gz", &z);
    let (v, code) = ingest_json(&data, &[s(&full)]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["already_seen"].as_u64().unwrap(), added);
    assert_eq!(v["added"].as_u64().unwrap(), 3000 - added);
    assert_eq!(v["bad"], 0);
    let df = read_dataset(&data);
    assert_eq!(df.height(), 3000);
    let lines = numbers(&df, "line");
    let mut got = lines.clone();
    got.sort_unstable();
    assert_eq!(got, (1..=3000).collect::<Vec<u64>>());
    // Each row is its own line: line n has path /page/n.
    let path = df.column("path").unwrap().str().unwrap();
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(path.get(i), Some(format!("/page/{l}").as_str()));
    }
}

#[test]
fn corrupt_gzip_names_the_member_and_says_what_can_be_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = combined(20_000, 1);
    let mut z = gz(&log);
    let mid = z.len() / 2;
    for b in &mut z[mid..mid + 4] {
        *b ^= 0x5a;
    }
    let f = put(tmp.path(), "bad.log.gz", &z);
    let out = logscope(&data)
        .args(["ingest", "--dry-run", "--json"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let damage = v["files"][0]["damage"].as_str().unwrap();
    assert!(damage.contains("corrupt gzip stream"), "{damage}");
    assert!(
        damage.contains("in the gzip member starting at compressed byte 0"),
        "{damage}"
    );
    assert!(damage.contains("only the first 0 lines"), "{damage}");
}

#[test]
fn file_truncated_while_ingest_reads_it_is_reported_not_a_crash() {
    // Deterministic: ingest opens every input before reading any. Standard input comes
    // first and is held open until the log file has been opened (seen in
    // /proc/PID/fd); the file is then truncated before ingest reads it. A memory
    // mapping of it would die of SIGBUS.
    if !Path::new("/proc/self/fd").exists() {
        eprintln!("SKIPPED: no /proc");
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs on Linux with /proc"
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let f = put(tmp.path(), "access.log", &combined(4000, 1));
    let bin = assert_cmd::cargo::cargo_bin("logscope");
    let mut child = std::process::Command::new(bin)
        .env_remove("LOGSCOPE_DATA")
        .env("NO_COLOR", "1")
        .arg("--data")
        .arg(&data)
        .args(["ingest", "--dry-run", "--json", "-"])
        .arg(&f)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // More than the 64 KiB ingest peeks at, so opening standard input returns.
    stdin.write_all(&combined(1000, 90_001)).unwrap();
    let fd_dir = PathBuf::from(format!("/proc/{}/fd", child.id()));
    let target = std::fs::canonicalize(&f).unwrap();
    let opened = (0..2000).any(|_| {
        let found = std::fs::read_dir(&fd_dir).ok().is_some_and(|rd| {
            rd.flatten()
                .any(|e| std::fs::read_link(e.path()).ok().as_deref() == Some(&target))
        });
        if !found {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        found
    });
    assert!(opened, "ingest never opened the file");
    // copytruncate: cut to a few bytes and written again.
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&f)
        .unwrap()
        .write_all(b"x\n")
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "stderr: {stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let damage = v["files"][1]["damage"].as_str().unwrap();
    assert!(
        damage.contains("shrank to 2 bytes while being read at byte"),
        "{damage}"
    );
    assert!(damage.contains("copytruncate"), "{damage}");
    assert_eq!(v["files"][0]["added"], 1000);
    // The head read at open (64 KiB) was original content; nothing after it.
    let added = v["files"][1]["added"].as_u64().unwrap();
    assert!(added < 4000, "{v}");
    assert_eq!(v["files"][1]["bad"], 0, "{v}");
}

#[test]
fn long_junk_first_line_does_not_stop_detection() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut log = vec![b'#'; 70_000];
    log[3] = b'%';
    log.push(b'\n');
    log.extend_from_slice(&combined(50, 1));
    let f = put(tmp.path(), "junk.log", &log);
    logscope(&data)
        .arg("detect")
        .arg(&f)
        .assert()
        .success()
        .stdout(predicates::str::contains(": combined ("));
    let (v, code) = ingest_json(&data, &["--dry-run", s(&f)]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["files"][0]["format"], "combined");
    assert_eq!(v["added"], 50);
    assert_eq!(v["bad"], 1);
    assert_eq!(v["lines"], 51);
}

#[test]
fn cr_only_line_endings_parse_line_by_line() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log: Vec<u8> = combined(30, 1)
        .into_iter()
        .map(|b| if b == b'\n' { b'\r' } else { b })
        .collect();
    let f = put(tmp.path(), "mac.log", &log);
    logscope(&data)
        .arg("detect")
        .arg(&f)
        .assert()
        .success()
        .stdout(predicates::str::contains(": combined ("));
    let (v, code) = ingest_json(&data, &["--dry-run", s(&f)]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["added"], 30);
    assert_eq!(v["lines"], 30);
    assert_eq!(v["bad"], 0);
    // Stored with the right line numbers.
    let (v, code) = ingest_json(&data, &[s(&f)]);
    assert_eq!(code, 0, "{v}");
    let df = read_dataset(&data);
    let mut lines = numbers(&df, "line");
    lines.sort_unstable();
    assert_eq!(lines, (1..=30).collect::<Vec<u64>>());
}

#[test]
fn missing_file_is_named_once_with_one_os_error() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let out = logscope(&data)
        .args(["ingest", "/nonexistent/x.log"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("/nonexistent/x.log").count(), 1, "{stderr}");
    assert_eq!(
        stderr.matches("No such file or directory").count(),
        1,
        "{stderr}"
    );
    // A name with control characters is escaped, as a file and as a pattern.
    for (name, shown) in [
        (
            "/nonexistent/\x1b]0;x\x07.log",
            "/nonexistent/\\x1b]0;x\\x07.log",
        ),
        ("/nonexistent/\x1b[2Jx.log", "/nonexistent/\\x1b[2Jx.log"),
    ] {
        let out = logscope(&data).args(["detect", name]).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains('\x1b'), "{stderr}");
        assert!(stderr.contains(shown), "{stderr}");
    }
}
