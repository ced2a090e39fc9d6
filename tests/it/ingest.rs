//! `logscope ingest`, `info` and `detect` through the binary.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use polars::prelude::*;
use predicates::prelude::*;

use crate::common::*;

fn write_gz(src: &Path, dst: &Path) {
    let data = std::fs::read(src).unwrap();
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(dst).unwrap(),
        flate2::Compression::default(),
    );
    enc.write_all(&data).unwrap();
    enc.finish().unwrap();
}

fn write_zst(src: &Path, dst: &Path) {
    let data = std::fs::read(src).unwrap();
    std::fs::write(dst, zstd::encode_all(&data[..], 3).unwrap()).unwrap();
}

#[test]
fn sample_log_ingests_with_its_known_figures() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = fixture("logs/elastic-apache.log");
    let (s, code) = ingest_json(&data, &[log.to_str().unwrap()]);
    assert_eq!(code, 0, "{s}");
    // SOURCES.md: 10,000 lines, 1 unmatched (line 8899, truncated UA), 1,753 IPs, 1,474 /24s.
    assert_eq!(s["lines"], 10_000);
    assert_eq!(s["bad"], 1);
    assert_eq!(s["added"], 9_999);
    assert_eq!(s["already_seen"], 0);
    assert_eq!(s["distinct_v4_24"], 1_474);
    assert!(s["distinct_ips"].as_u64().unwrap() >= 1_752);
    assert_eq!(s["first"], "2015-05-17T10:05:00.000Z");
    assert_eq!(s["last"], "2015-05-20T21:05:59.000Z");

    let df = read_dataset(&data);
    assert_eq!(df.height(), 9_999);
    // Typed columns.
    let schema = df.schema();
    assert_eq!(
        schema.get("ts"),
        Some(&DataType::Datetime(
            TimeUnit::Milliseconds,
            Some(TimeZone::UTC)
        ))
    );
    // Engine-native types (dataset format 2): signed integers every engine reads.
    assert_eq!(schema.get("status"), Some(&DataType::Int32));
    assert_eq!(schema.get("bytes"), Some(&DataType::Int64));
    assert_eq!(schema.get("ip_lo"), Some(&DataType::Int64));
    // First line: 83.149.9.216 - - [17/May/2015:10:05:03 +0000] "GET /presentations/logstash-monitorama-2013/images/kibana-search.png HTTP/1.1" 200 203023 …
    let first = df.head(Some(1));
    assert_eq!(
        first.column("client").unwrap().str().unwrap().get(0),
        Some("83.149.9.216")
    );
    assert_eq!(
        first.column("status").unwrap().i32().unwrap().get(0),
        Some(200)
    );
    assert_eq!(
        first.column("bytes").unwrap().i64().unwrap().get(0),
        Some(203023)
    );
    assert_eq!(first.column("line").unwrap().i64().unwrap().get(0), Some(1));
    // The bad line is not in the dataset.
    let lines = df.column("line").unwrap().i64().unwrap();
    assert!((0..lines.len()).all(|i| lines.get(i) != Some(8899)));

    // One flat table directory of parts named by month, behind the `requests` link.
    let files = tree(&data.join("requests"));
    assert!(
        files
            .iter()
            .any(|f| f.starts_with("2015-05-") && f.ends_with(".parquet")),
        "{files:?}"
    );

    // info describes it.
    let out = logscope(&data).args(["info", "--json"]).output().unwrap();
    assert!(out.status.success());
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["rows"], 9_999);
    assert_eq!(info["months"][0]["month"], "2015-05");
    assert_eq!(info["sources"][0]["lines"], 10_000);
}

#[test]
fn bad_lines_are_reported_with_file_and_line_and_kept_verbatim() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = tmp.path().join("mixed.log");
    std::fs::write(
        &log,
        b"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET /a HTTP/1.0\" 200 2326 \"-\" \"x\"\n\
          this is not a log line\n\
          1.2.3.5 - - [10/Oct/2000:13:55:37 -0700] \"GET /b HTTP/1.0\" 404 - \"-\" \"\x1b[31mevil\"\n\
          \x20\"curl/7.54.0\"\n",
    )
    .unwrap();
    let rejects = tmp.path().join("rejects.txt");
    let out = logscope(&data)
        .args(["ingest", "--format", "combined", "--rejects"])
        .arg(&rejects)
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("mixed.log:2: "), "{stderr}");
    assert!(stderr.contains("mixed.log:4: "), "{stderr}");
    assert!(
        !stderr.contains('\x1b'),
        "terminal escapes must be neutralised: {stderr}"
    );
    assert_eq!(
        std::fs::read(&rejects).unwrap(),
        b"this is not a log line\n \"curl/7.54.0\"\n"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("bad 2"), "{stdout}");
    assert_eq!(read_dataset(&data).height(), 2);
}

#[test]
fn ingesting_twice_adds_nothing_and_growth_adds_only_new_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = tmp.path().join("access.log");
    let all = std::fs::read_to_string(fixture("logs/elastic-apache.log")).unwrap();
    let lines: Vec<&str> = all.lines().collect();
    std::fs::write(&log, lines[..6000].join("\n") + "\n").unwrap();

    let (s1, _) = ingest_json(&data, &[log.to_str().unwrap()]);
    assert_eq!(s1["added"], 6000);
    let (s2, _) = ingest_json(&data, &[log.to_str().unwrap()]);
    assert_eq!(s2["added"], 0);
    assert_eq!(s2["already_seen"], 6000);
    assert_eq!(read_dataset(&data).height(), 6000);

    // The file grows: only the new lines are added, numbered where they are.
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let (s3, _) = ingest_json(&data, &[log.to_str().unwrap()]);
    assert_eq!(s3["already_seen"], 6000);
    assert_eq!(s3["lines"], 4000);
    assert_eq!(
        s3["added"], 3999,
        "one of the new lines is the known bad one"
    );
    let df = read_dataset(&data);
    assert_eq!(df.height(), 9999);
    let max_line = df.column("line").unwrap().i64().unwrap().max();
    assert_eq!(max_line, Some(10_000));

    // Rotation: the same content under another name, compressed, adds nothing.
    let rotated = tmp.path().join("access.log.1.gz");
    write_gz(&log, &rotated);
    let (s4, _) = ingest_json(&data, &[rotated.to_str().unwrap(), log.to_str().unwrap()]);
    assert_eq!(s4["added"], 0, "{s4}");
    assert_eq!(read_dataset(&data).height(), 9999);
}

#[test]
fn plain_gzip_and_zstd_give_identical_records() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixture("logs/basjes-hackers-access.log");
    let gz = tmp.path().join("a.log.gz");
    let zst = tmp.path().join("a.log.zst");
    // Names say nothing: compression is found by magic bytes.
    let disguised = tmp.path().join("a.txt");
    write_gz(&src, &gz);
    write_zst(&src, &zst);
    write_zst(&src, &disguised);
    let mut frames = Vec::new();
    for (i, f) in [&src, &gz, &zst, &disguised].iter().enumerate() {
        let data = tmp.path().join(format!("d{i}"));
        let (s, code) = ingest_json(&data, &[f.to_str().unwrap()]);
        assert_eq!(code, 0);
        assert_eq!(s["added"], 3456, "{s}");
        let mut df = read_dataset(&data);
        let _ = df.drop_in_place("file").unwrap();
        frames.push(df);
    }
    for df in &frames[1..] {
        assert!(frames[0].equals_missing(df));
    }
    // IPv6 clients are kept as written.
    let clients = frames[0].column("client").unwrap().str().unwrap().clone();
    assert!((0..clients.len()).any(|i| clients.get(i) == Some("2001:41d0:8:f69::1")));
}

#[test]
fn stdin_is_an_input() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let bytes = std::fs::read(fixture("logs/basjes-hackers-access.log")).unwrap();
    let out = logscope(&data)
        .args(["ingest", "--json", "-"])
        .write_stdin(bytes)
        .output()
        .unwrap();
    assert!(out.status.success());
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["added"], 3456);
    assert_eq!(s["files"][0]["file"], "<stdin>");
}

#[test]
fn truncated_gzip_keeps_the_lines_before_the_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let gz = tmp.path().join("cut.log.gz");
    write_gz(&fixture("logs/elastic-apache.log"), &gz);
    let full = std::fs::read(&gz).unwrap();
    std::fs::write(&gz, &full[..full.len() / 2]).unwrap();
    let out = logscope(&data)
        .args(["ingest", "--json"])
        .arg(&gz)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cut.log.gz"), "{stderr}");
    assert!(stderr.contains("truncated gzip stream"), "{stderr}");
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let added = s["added"].as_u64().unwrap();
    assert!(
        added > 1000 && added < 9999,
        "kept the lines before the damage: {added}"
    );
    assert_eq!(read_dataset(&data).height() as u64, added);
}

#[test]
fn bad_paths_formats_and_flags_fail_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    logscope(&data)
        .args(["ingest", "/nonexistent/access.log"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "/nonexistent/access.log: cannot open",
        ))
        .stderr(predicate::str::contains("panicked").not());
    let junk = tmp.path().join("junk.log");
    std::fs::write(&junk, "hello world\nthis is no access log\n").unwrap();
    logscope(&data)
        .args(["ingest"])
        .arg(&junk)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cannot recognise the log format"));
    logscope(&data)
        .args(["ingest", "--bogus-flag", "x"])
        .assert()
        .code(2);
    logscope(&data)
        .args(["ingest", "--format", "no-such-format"])
        .arg(&junk)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--input-format no-such-format"));
    logscope(&data)
        .args(["ingest", "--log-format", "%h %Q %>s"])
        .arg(&junk)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--log-format"));
    logscope(&data)
        .arg("ingest")
        .arg(tmp.path())
        .assert()
        .code(1)
        .stderr(predicate::str::contains("is a directory"));
    // Nothing was written by the failures.
    assert!(std::fs::symlink_metadata(data.join("requests")).is_err());
    logscope(&data)
        .arg("info")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no dataset here yet"));
}

#[test]
fn a_second_writer_waits_or_fails_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let lock = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(data.join(".lock"))
        .unwrap();
    lock.lock().unwrap();
    logscope(&data)
        .args(["ingest", "--no-wait"])
        .arg(fixture("logs/basjes-hackers-access.log"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "another logscope process is writing",
        ));
    drop(lock);
    logscope(&data)
        .args(["ingest", "--no-wait", "--quiet"])
        .arg(fixture("logs/basjes-hackers-access.log"))
        .assert()
        .success();
}

#[test]
fn a_killed_ingest_leaves_the_dataset_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    // A committed first ingest.
    let (s, _) = ingest_json(
        &data,
        &[fixture("logs/basjes-hackers-access.log").to_str().unwrap()],
    );
    assert_eq!(s["added"], 3456);
    let before_manifest = std::fs::read(data.join("requests/_manifest.json")).unwrap();
    let before_tree = tree(&data);

    // A big log, so the second ingest is still running when it is killed.
    let big = tmp.path().join("big.log");
    let sample = std::fs::read_to_string(fixture("logs/elastic-apache.log")).unwrap();
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&big).unwrap());
        for i in 0..60 {
            // Vary the content so no two copies look alike.
            writeln!(f, "10.0.0.{i} - - [17/May/2015:10:05:03 +0000] \"GET /copy/{i} HTTP/1.1\" 200 1 \"-\" \"t\"").unwrap();
            f.write_all(sample.as_bytes()).unwrap();
        }
    }
    let mut killed_mid_ingest = false;
    for _attempt in 0..3 {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("logscope"))
            .arg("--data")
            .arg(&data)
            .args(["ingest", "--quiet"])
            .arg(&big)
            .spawn()
            .unwrap();
        // Wait until it has written Parquet into its staging area, then kill -9.
        let t0 = Instant::now();
        let mut staged = false;
        while t0.elapsed() < Duration::from_secs(60) {
            if tree(&data)
                .iter()
                .any(|f| f.starts_with("snapshots/.build-") && f.ends_with(".parquet"))
            {
                staged = true;
                break;
            }
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        child.kill().ok();
        let status = child.wait().unwrap();
        if staged && !status.success() {
            killed_mid_ingest = true;
            break;
        }
        // It finished before we could kill it: undo by starting from the first state.
        std::fs::remove_dir_all(&data).unwrap();
        let _ = ingest_json(
            &data,
            &[fixture("logs/basjes-hackers-access.log").to_str().unwrap()],
        );
    }
    assert!(killed_mid_ingest, "could not catch the ingest mid-way");
    // The committed state is untouched: same manifest, and readers see the same rows.
    assert_eq!(
        std::fs::read(data.join("requests/_manifest.json")).unwrap(),
        before_manifest
    );
    assert_eq!(read_dataset(&data).height(), 3456);
    assert_eq!(glob_rows(&data), 3456);
    // The next writer cleans up the leftovers and ingests normally.
    let (s, code) = ingest_json(&data, &[big.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(s["added"], 60 * 9_999 + 60);
    let after = tree(&data);
    assert!(after.iter().all(|f| !f.contains(".build-")), "{after:?}");
    // The parts of the first ingest live on (hard links) in the new snapshot.
    let names = |t: &[String]| -> Vec<String> {
        t.iter()
            .filter(|f| f.ends_with(".parquet"))
            .map(|f| f.rsplit('/').next().unwrap().to_string())
            .collect()
    };
    let after_names = names(&after);
    assert!(names(&before_tree).iter().all(|f| after_names.contains(f)));
    assert_eq!(read_dataset(&data).height(), 3456 + 60 * 9_999 + 60);
}

#[test]
fn rotated_set_with_damaged_lines_is_counted_not_guessed() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let pattern = fixture("logs/erddap").join("tomcat-access.log.*");
    let (s, code) = ingest_json(&data, &["--max-bad", "0.9", pattern.to_str().unwrap()]);
    assert_eq!(code, 0, "{s}");
    assert_eq!(s["files"].as_array().unwrap().len(), 9);
    assert_eq!(s["lines"], 16_275);
    // SOURCES.md: 5,881 of 16,275 lines do not fit plain combined: 5,796 bare fragments
    // (` "curl/7.54.0"`), which are damage and must be bad lines, and 85 lines with one
    // extra trailing quoted field, which are well-formed combined-plus-extra lines.
    assert_eq!(s["bad"], 5_796);
    assert_eq!(s["added"], 16_275 - 5_796);
    // With the default --max-bad 0.5, .8 (73 % bad) makes the exit status 3.
    let data2 = tmp.path().join("data2");
    let (_, code) = ingest_json(&data2, &[pattern.to_str().unwrap()]);
    assert_eq!(code, 3);
}

#[test]
fn detect_names_the_format_and_its_confidence() {
    let tmp = tempfile::tempdir().unwrap();
    let out = logscope(tmp.path())
        .args(["detect", "--json"])
        .arg(fixture("logs/elastic-apache.log"))
        .arg(fixture("logs/caddy-mirror.json.log"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["format"], "combined");
    assert!(lines[0]["confidence"].as_f64().unwrap() > 0.99);
    assert!(lines[1]["format"].as_str().unwrap().contains("caddy"));
}

/// Ingests each log and checks its line count and that every line is a record or a bad
/// line, with no more bad lines than documented.
fn ingests_within_bad_share(cases: &[(PathBuf, &str, u64, u64)]) {
    let tmp = tempfile::tempdir().unwrap();
    for (i, (path, rel, lines, max_bad)) in cases.iter().enumerate() {
        let data = tmp.path().join(format!("d{i}"));
        // Archived files: a last line without a newline is complete.
        let (s, _) = ingest_json(&data, &["--final-line", "take", path.to_str().unwrap()]);
        assert_eq!(
            s["lines"].as_u64().unwrap() - s["skipped"].as_u64().unwrap(),
            *lines,
            "{rel}: {s}"
        );
        assert!(s["bad"].as_u64().unwrap() <= *max_bad, "{rel}: {s}");
        assert_eq!(
            s["added"].as_u64().unwrap() + s["bad"].as_u64().unwrap(),
            *lines,
            "{rel}: every line is a record or a bad line"
        );
    }
}

#[test]
fn every_copied_real_log_ingests_within_its_documented_bad_share() {
    // (file, lines, max bad lines) from ../shared/data/real/SOURCES.md; the copies in
    // fixtures/logs are byte-identical.
    let cases: Vec<(PathBuf, &str, u64, u64)> = [
        ("logs/elastic-apache.log", 10_000, 1),
        ("logs/basjes-hackers-access.log", 3_456, 0),
        ("logs/caddy-mirror.json.log", 4, 0),
    ]
    .into_iter()
    .map(|(rel, lines, bad)| (fixture(rel), rel, lines, bad))
    .collect();
    ingests_within_bad_share(&cases);
}

#[test]
#[ignore = "needs ../shared/data/real: the honeynet, NASA, almhuette, zanbil, netnea and scanner-lab logs may not be copied (licence unclear or non-commercial)"]
fn every_shared_only_real_log_ingests_within_its_documented_bad_share() {
    // (file, lines, max bad lines) from ../shared/data/real/SOURCES.md.
    let cases: Vec<(PathBuf, &str, u64, u64)> = [
        ("honeynet-2004/access_log.all.gz", 38_487, 4),
        ("nasa-aug95/nasa_aug95_first20k.log", 20_000, 0),
        ("almhuette-slice/almhuette_2019-04-02_03.log", 7_213, 0),
        ("zanbil-slice/zanbil_first1000.log", 1_000, 0),
        ("netnea-extended/labor-04-example-access.log", 10_000, 0),
        ("scanner-lab/acunetix.txt", 6_539, 0),
        ("scanner-lab/netsparker.txt", 7_314, 0),
        ("scanner-lab/w3af.txt", 3_996, 62),
    ]
    .into_iter()
    .map(|(rel, lines, bad)| (shared_real(rel), rel, lines, bad))
    .collect();
    ingests_within_bad_share(&cases);
}

#[test]
fn duckdb_reads_the_dataset_as_it_is() {
    let has_duckdb = std::process::Command::new("python3")
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        has_duckdb || std::env::var_os("CI").is_none(),
        "CI must install duckdb (.ci/run)"
    );
    if !has_duckdb {
        eprintln!("SKIPPED: python3 duckdb not installed (.ci/run installs it)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    ingest_json(
        &data,
        &[fixture("logs/elastic-apache.log").to_str().unwrap()],
    );
    ingest_json(
        &data,
        &[fixture("logs/basjes-hackers-access.log").to_str().unwrap()],
    );
    let query = format!(
        "import duckdb; print(duckdb.sql(\"SELECT strftime(ts, '%Y-%m') AS month, count(*), count(DISTINCT client), min(ts) FROM read_parquet('{}/requests/*.parquet') GROUP BY month ORDER BY month\").fetchall())",
        data.display()
    );
    let out = std::process::Command::new("python3")
        .args(["-c", &query])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("('2015-05', 9999, 1753"), "{text}");
    assert!(text.contains("('2015-10', 3456, 520"), "{text}");
}

#[test]
fn user_format_strings_in_both_syntaxes() {
    let tmp = tempfile::tempdir().unwrap();
    let log = fixture("logs/basjes-hackers-access.log");
    let apache = r#"%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i""#;
    let nginx = r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent""#;
    for (i, f) in [apache, nginx].iter().enumerate() {
        let data = tmp.path().join(format!("d{i}"));
        let (s, code) = ingest_json(&data, &["--log-format", f, log.to_str().unwrap()]);
        assert_eq!(code, 0);
        assert_eq!(s["added"], 3456, "{f}: {s}");
        assert_eq!(s["bad"], 0);
    }
}

#[test]
fn an_over_long_line_is_a_bad_line_and_the_rest_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let sample = std::fs::read_to_string(fixture("logs/basjes-hackers-access.log")).unwrap();
    let lines: Vec<&str> = sample.lines().collect();
    let mut content = String::new();
    content.push_str(&lines[..100].join("\n"));
    content.push('\n');
    // 3 MiB of garbage on one line (line 101), CRLF endings after it, no final newline.
    content.push_str(&"A".repeat(3 << 20));
    content.push('\n');
    content.push_str(&lines[100..200].join("\r\n"));
    let plain = tmp.path().join("long.log");
    std::fs::write(&plain, &content).unwrap();
    let gz = tmp.path().join("long.log.gz");
    write_gz(&plain, &gz);
    for (i, f) in [&plain, &gz].iter().enumerate() {
        let data = tmp.path().join(format!("d{i}"));
        let out = logscope(&data)
            .args(["ingest", "--json", "--format", "combined"])
            .args(["--final-line", "take"])
            .arg(f)
            .output()
            .unwrap();
        let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(s["added"], 200, "{}: {s}", f.display());
        assert_eq!(s["bad"], 1);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(":101: line longer than the limit"),
            "{stderr}"
        );
        let df = read_dataset(&data);
        let last = df.column("line").unwrap().i64().unwrap().max();
        assert_eq!(last, Some(201));
    }
}

#[test]
fn dry_run_parses_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (s, code) = ingest_json(
        &data,
        &[
            "--dry-run",
            fixture("logs/elastic-apache.log").to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0);
    assert_eq!(s["lines"], 10_000);
    assert_eq!(s["bad"], 1);
    assert_eq!(s["dry_run"], true);
    assert!(!data.exists(), "a dry run must not create the dataset");
}

#[test]
fn a_closed_pipe_ends_quietly_not_with_a_panic() {
    // `logscope … | head -1`: the reader goes away while logscope still prints.
    let tmp = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("logscope"))
        .arg("--data")
        .arg(tmp.path())
        .args([
            "concentration",
            "--by",
            "ip",
            "--top",
            "100000",
            "--format",
            "csv",
        ])
        .arg(fixture("logs/elastic-apache.log"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_ne!(out.status.code(), Some(101));
}

#[test]
fn a_gzip_damaged_in_its_first_bytes_is_named_as_damaged() {
    let tmp = tempfile::tempdir().unwrap();
    let gz = tmp.path().join("early.log.gz");
    write_gz(&fixture("logs/elastic-apache.log"), &gz);
    let full = std::fs::read(&gz).unwrap();
    for cut in [12, 40, 90] {
        std::fs::write(&gz, &full[..cut]).unwrap();
        let out = logscope(&tmp.path().join(format!("data{cut}")))
            .arg("ingest")
            .arg(&gz)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Nothing (or only whole lines) could be read: exit 1 (format unknowable) or 4
        // (damaged input), never a panic, and the message names the damage.
        assert!(matches!(out.status.code(), Some(1 | 4)), "{cut}: {stderr}");
        assert!(
            stderr.contains("early.log.gz: truncated gzip stream"),
            "{cut}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn compressed_copies_are_skipped_unread_and_a_repaired_copy_adds_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let full = tmp.path().join("access.log.2.gz");
    write_gz(&fixture("logs/elastic-apache.log"), &full);
    let bytes = std::fs::read(&full).unwrap();
    // First a damaged copy (cut in the middle): the lines before the damage are added.
    let cut = tmp.path().join("access.log.2.gz.partial");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let (s1, code) = ingest_json(&data, &[cut.to_str().unwrap()]);
    assert_eq!(code, 4);
    let first = s1["added"].as_u64().unwrap();
    assert!(first > 0 && first < 9_999);
    // The repaired copy adds exactly the rest.
    let (s2, code) = ingest_json(&data, &[full.to_str().unwrap()]);
    assert_eq!(code, 0, "{s2}");
    assert_eq!(first + s2["added"].as_u64().unwrap(), 9_999, "{s2}");
    assert_eq!(s2["files"][0]["unchanged"], false);
    // Read to its end once, the same compressed file is now skipped without reading.
    let (s3, _) = ingest_json(&data, &[full.to_str().unwrap()]);
    assert_eq!(s3["added"], 0);
    assert_eq!(s3["already_seen"], 10_000);
    assert_eq!(s3["files"][0]["unchanged"], true);
    assert_eq!(read_dataset(&data).height(), 9_999);
}
