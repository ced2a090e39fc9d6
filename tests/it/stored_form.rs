//! The stored form of log text (dataset format 4): the text as the server wrote it, a
//! raw byte that is not UTF-8 apart from the same characters written by the server, a
//! request that is not HTTP in `request`, no status null; client lists and
//! `--trust-proxy`; older (format 2 and 3) datasets read as format 4, migrated once.

use std::io::Write;

use super::common;

const RAW: &[u8] = b"203.0.113.7 - - [10/Oct/2024:13:55:36 +0000] \"GET /a\xac HTTP/1.1\" 200 5 \"-\" \"Bot\xac\"\n";
const TYPED: &[u8] = b"203.0.113.8 - - [10/Oct/2024:13:55:37 +0000] \"GET /a\\xac HTTP/1.1\" 200 5 \"-\" \"Bot\\xac\"\n";

fn write_log(dir: &std::path::Path, name: &str, lines: &[&[u8]]) -> std::path::PathBuf {
    let p = dir.join(name);
    let mut f = std::fs::File::create(&p).unwrap();
    for l in lines {
        f.write_all(l).unwrap();
    }
    p
}

fn sample_agents(c: assert_cmd::Command) -> Vec<String> {
    let v = common::report_json_without_origin(c, "agents");
    let mut agents: Vec<String> = v["sample"]
        .as_array()
        .expect("sample")
        .iter()
        .map(|r| r["user_agent"].as_str().unwrap().to_string())
        .collect();
    agents.sort();
    agents
}

#[test]
fn a_raw_byte_and_the_same_characters_typed_stay_apart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = write_log(dir.path(), "access.log", &[RAW, TYPED]);
    // Read from the file: the byte as a character of U+EF80–U+EFFF, the text as logged.
    let mut c = common::logscope(&data);
    c.args(["agents", "--sample", "10", "--format", "json"])
        .arg(&log);
    let from_file = sample_agents(c);
    assert_eq!(
        from_file,
        vec![r"Bot\xac".to_string(), "Bot\u{efac}".to_string()]
    );
    // Stored, then read back: the same two values, also for other engines.
    common::logscope(&data)
        .args(["ingest", "--quiet"])
        .arg(&log)
        .assert()
        .success();
    let mut c = common::logscope(&data);
    c.args(["agents", "--sample", "10", "--format", "json"]);
    assert_eq!(sample_agents(c), from_file);
    let df = common::read_dataset(&data);
    let mut paths: Vec<String> = df
        .column("path")
        .unwrap()
        .str()
        .unwrap()
        .iter()
        .map(|s| s.unwrap().to_string())
        .collect();
    paths.sort();
    assert_eq!(paths, vec![r"/a\xac".to_string(), "/a\u{efac}".to_string()]);
    // The terminal shows both as nginx writes a byte: `\xac`.
    let out = common::logscope(&data)
        .args(["agents", "--sample", "10"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(r"Bot\xac"), "{text}");
    assert!(!text.contains('\u{efac}'), "{text}");
}

/// What nginx wrote for a TLS handshake sent to its HTTP port, a request with no
/// status, and an Apache-escaped quote.
const SERVER_ESCAPED: &[u8] = b"198.51.100.1 - - [10/Oct/2024:13:55:36 +0000] \"\\x16\\x03\\x01\\x00\\xF4\" 400 157 \"-\" \"-\"\n\
198.51.100.2 - - [10/Oct/2024:13:55:37 +0000] \"GET /a?q=\\x22 HTTP/1.1\" - 0 \"-\" \"say \\\"hi\\\"\"\n\
198.51.100.3 - - [10/Oct/2024:13:55:38 +0000] \"hello\" 400 0 \"-\" \"-\"\n";

#[test]
fn the_dataset_holds_what_the_server_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = write_log(dir.path(), "access.log", &[SERVER_ESCAPED]);
    common::logscope(&data)
        .args(["ingest", "--quiet"])
        .arg(&log)
        .assert()
        .success();
    let df = common::read_dataset(&data);
    let text = |c: &str| -> Vec<Option<String>> {
        df.column(c)
            .unwrap()
            .str()
            .unwrap()
            .iter()
            .map(|s| s.map(str::to_string))
            .collect()
    };
    let s = |v: &str| Some(v.to_string());
    // A request that is not HTTP: its text in `request`, no method, no path.
    assert_eq!(
        text("request"),
        vec![s(r"\x16\x03\x01\x00\xF4"), None, s("hello")]
    );
    assert_eq!(text("path"), vec![None, s("/a"), None]);
    assert_eq!(text("method"), vec![None, s("GET"), None]);
    // Escapes as the server wrote them, not doubled.
    assert_eq!(text("query")[1], s(r"q=\x22"));
    assert_eq!(text("user_agent")[1], s(r#"say \"hi\""#));
    // `-` for a status is null.
    let status: Vec<Option<i32>> = df.column("status").unwrap().i32().unwrap().iter().collect();
    assert_eq!(status, vec![Some(400), None, Some(400)]);
    // A search written as the log reads finds the row (what DuckDB's LIKE does).
    let out = common::ok_stdout(common::logscope(&data).args([
        "sql",
        "--format",
        "csv",
        r"SELECT count(*) AS n FROM requests WHERE request LIKE '\x16%' AND path IS NULL",
    ]));
    assert_eq!(out.trim(), "n\n1");
    // Reports read the dataset as they read the file: the request's text as its path.
    let top = |files: bool| {
        let mut c = common::logscope(&data);
        c.args(["top", "--by", "path", "--format", "json"]);
        if files {
            c.arg(&log);
        }
        let v = common::report_json_without_origin(c, "top");
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["value"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let from_file = top(true);
    assert!(
        from_file.contains(&r"\x16\x03\x01\x00\xF4".to_string()),
        "{from_file:?}"
    );
    assert_eq!(top(false), from_file);
}

#[test]
fn trust_proxy_reads_a_client_list_right_to_left() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // A proxy logged X-Forwarded-For where the address goes: the client wrote a fake
    // first hop (1.1.1.1), the real client is 198.51.100.9, 10.0.0.5 is the proxy.
    let line: &[u8] = b"1.1.1.1, 198.51.100.9, 10.0.0.5 - - [10/Oct/2024:13:55:36 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"curl/8\"\n";
    let log = write_log(dir.path(), "access.log", &[line]);
    let top = |trust: bool, files: bool| {
        let mut c = common::logscope(&data);
        c.args(["concentration", "--by", "ip", "--format", "json"]);
        if trust {
            c.args(["--trust-proxy", "10.0.0.0/8"]);
        }
        if files {
            c.arg(&log);
        }
        let v = common::report_json_without_origin(c, "concentration");
        v["top"][0]["group"].as_str().unwrap().to_string()
    };
    // Without --trust-proxy: the first public address of the list.
    assert_eq!(top(false, true), "1.1.1.1");
    // With it: the right-most untrusted entry, not the spoofable first one.
    assert_eq!(top(true, true), "198.51.100.9");
    common::logscope(&data)
        .args(["ingest", "--quiet"])
        .arg(&log)
        .assert()
        .success();
    assert_eq!(top(false, false), "1.1.1.1");
    assert_eq!(top(true, false), "198.51.100.9");
    let df = common::read_dataset(&data);
    assert_eq!(
        df.column("client_list").unwrap().bool().unwrap().get(0),
        Some(true)
    );
}

#[test]
fn a_format_2_dataset_is_read_then_migrated_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = write_log(dir.path(), "access.log", &[TYPED]);
    common::logscope(&data)
        .args(["ingest", "--quiet"])
        .arg(&log)
        .assert()
        .success();
    // Make it an older dataset: format 2, without the client_list column.
    let table = data.join("requests");
    let mpath = table.join("_manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
    m["version"] = 2.into();
    let part = table.join(m["parts"][0]["file"].as_str().unwrap());
    let mut df = common::read_dataset(&data);
    let _ = df.drop_in_place("client_list").unwrap();
    let real = std::fs::canonicalize(&part).unwrap();
    std::fs::remove_file(&real).unwrap();
    let mut f = std::fs::File::create(&real).unwrap();
    polars::prelude::ParquetWriter::new(&mut f)
        .finish(&mut df)
        .unwrap();
    m["parts"][0]["bytes"] = std::fs::metadata(&real).unwrap().len().into();
    // Format-2 writers took no checksums.
    m["parts"][0].as_object_mut().unwrap().remove("sums");
    std::fs::write(&mpath, serde_json::to_vec(&m).unwrap()).unwrap();
    // Read: every report works, with --trust-proxy too (it needs xff).
    common::logscope(&data)
        .args(["concentration", "--trust-proxy", "10.0.0.0/8"])
        .assert()
        .success();
    let info = common::logscope(&data).arg("info").output().unwrap();
    assert!(info.status.success());
    // Written to: refused, with how to migrate it.
    let more = write_log(dir.path(), "more.log", &[RAW]);
    let out = common::logscope(&data)
        .args(["ingest", "--quiet"])
        .arg(&more)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("format 2"), "{err}");
    assert!(err.contains("migrate`"), "{err}");
    // Migrated once, then written to.
    migrate(&data, "from dataset format 2 to 4: 1 parts, 1 rows");
    common::logscope(&data)
        .args(["ingest", "--quiet"])
        .arg(&more)
        .assert()
        .success();
    assert_eq!(common::glob_rows(&data), 2);
}

/// Runs `logscope migrate` on `data`, which must succeed saying `said`.
fn migrate(data: &std::path::Path, said: &str) {
    let out = common::ok_stdout(common::logscope(data).arg("migrate"));
    assert!(out.contains(said), "{out}");
}

/// A dataset written by logscope's format 3 (`fixtures/datasets/format3`, from its
/// `v3.log`): a raw byte, a server's escapes, a character of U+EF80–U+EFFF, a request
/// that is not HTTP, a status `-`.
fn format3_dataset(dir: &std::path::Path) -> std::path::PathBuf {
    let data = dir.join("data");
    let snap = data.join("snapshots/0000000001");
    std::fs::create_dir_all(&snap).unwrap();
    for f in ["2026-12-0000000001-000.parquet", "_manifest.json"] {
        std::fs::copy(
            common::fixture(&format!("datasets/format3/{f}")),
            snap.join(f),
        )
        .unwrap();
    }
    std::os::unix::fs::symlink("snapshots/0000000001", data.join("requests")).unwrap();
    data
}

#[test]
fn a_format_3_dataset_reads_as_its_log_before_and_after_its_migration() {
    let dir = tempfile::tempdir().unwrap();
    let data = format3_dataset(dir.path());
    let log = common::fixture("datasets/format3/v3.log");
    let report = |by: &str, files: bool| {
        let mut c = common::logscope(&data);
        c.args(["top", "--by", by, "--format", "json"]);
        if files {
            c.arg(&log);
        }
        common::report_json_without_origin(c, "top")["rows"].clone()
    };
    let from_log: Vec<_> = ["path", "agent", "referer", "status"]
        .iter()
        .map(|by| report(by, true))
        .collect();
    let read = || -> Vec<_> {
        ["path", "agent", "referer", "status"]
            .iter()
            .map(|by| report(by, false))
            .collect()
    };
    assert_eq!(read(), from_log, "format 3 read as format 4");
    // SQL reads it as stored, with a null `request` column.
    let out = common::ok_stdout(common::logscope(&data).args([
        "sql",
        "SELECT count(*) AS n, count(request) AS r FROM requests",
        "--format",
        "csv",
    ]));
    assert_eq!(out.trim(), "n,r\n5,0");
    // Written to: refused until migrated.
    let out = common::logscope(&data)
        .args(["ingest", "--quiet"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("migrate"));
    migrate(&data, "from dataset format 3 to 4: 1 parts, 5 rows");
    assert_eq!(read(), from_log, "migrated");
    // The rewritten parts hold what a format-4 ingest of the log holds.
    let fresh = dir.path().join("fresh");
    common::logscope(&fresh)
        .args(["ingest", "--quiet"])
        .arg(&log)
        .assert()
        .success();
    let (a, b) = (common::read_dataset(&data), common::read_dataset(&fresh));
    for c in [
        "client",
        "path",
        "request",
        "query",
        "method",
        "status",
        "user_agent",
        "referer",
        "user",
        "line",
    ] {
        assert!(
            a.column(c).unwrap().equals_missing(b.column(c).unwrap()),
            "{c}: {:?} vs {:?}",
            a.column(c),
            b.column(c)
        );
    }
    // Once: again is nothing to do; the log is already ingested.
    let out = common::logscope(&data).arg("migrate").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("already dataset format 4"));
    let (v, code) = common::ingest_json(&data, &[log.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(common::glob_rows(&data), 5);
}

/// A migration killed at any step of its commit leaves the format-3 dataset as it was
/// (readers see it whole), and the next `migrate` finishes the job.
#[test]
fn a_killed_migration_leaves_the_old_dataset_and_can_be_run_again() {
    let dir = tempfile::tempdir().unwrap();
    let data = format3_dataset(dir.path());
    let top = || {
        let mut c = common::logscope(&data);
        c.args(["top", "--by", "path", "--format", "json"]);
        common::report_json_without_origin(c, "top")["rows"].clone()
    };
    let before = top();
    for step in [
        "commit-start",
        "after-links",
        "after-manifest",
        "after-rename",
    ] {
        let out = common::logscope(&data)
            .env("LOGSCOPE_FAILPOINT", step)
            .arg("migrate")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{step}: the failpoint stops it");
        let info = common::ok_stdout(common::logscope(&data).arg("info"));
        assert!(info.contains("(format 3;"), "{step}: {info}");
        assert_eq!(top(), before, "{step}");
    }
    migrate(&data, "from dataset format 3 to 4: 1 parts, 5 rows");
    let info = common::ok_stdout(common::logscope(&data).arg("info"));
    assert!(info.contains("(format 4;"), "{info}");
    assert_eq!(top(), before);
}
