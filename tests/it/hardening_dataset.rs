//! Regression tests: the dataset's manifest is validated before anything is read from or
//! written into it (a part listed twice, ingest numbers that would wrap, absurd row
//! counts), a snapshot being read is not removed under its reader, and a damaged
//! `requests` link or part file says what is wrong and how to recover.

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// `n` combined lines numbered from `from`, 20 a second from 2024-05-01 10:00 UTC plus
/// `from` / 20 seconds, distinct content per line.
fn lines(n: usize, from: usize) -> String {
    let start = 1_714_557_600i64;
    let mut s = String::with_capacity(n * 110);
    for i in from..from + n {
        let t = chrono::DateTime::from_timestamp(start + (i / 20) as i64, 0).unwrap();
        s.push_str(&format!(
            "10.{}.{}.{} - - [{}] \"GET /page/{} HTTP/1.1\" {} {} \"-\" \"agent{}\"\n",
            (i >> 16) & 255,
            (i >> 8) & 255,
            i & 255,
            t.format("%d/%b/%Y:%H:%M:%S +0000"),
            i % 5000,
            [200, 200, 404, 503][i % 4],
            i % 5000,
            i % 7
        ));
    }
    s
}

fn write_log(dir: &Path, name: &str, n: usize, from: usize) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, lines(n, from)).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn manifest_path(data: &Path) -> PathBuf {
    data.join("requests/_manifest.json")
}

fn manifest(data: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(manifest_path(data)).unwrap()).unwrap()
}

fn save_manifest(data: &Path, m: &serde_json::Value) {
    std::fs::write(manifest_path(data), serde_json::to_vec_pretty(m).unwrap()).unwrap();
}

/// Every file under `data/snapshots` with its bytes (symbolic links and FIFOs as what
/// they are, never opened): the dataset's whole state.
fn state(data: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for f in tree(&data.join("snapshots")) {
        let p = data.join("snapshots").join(&f);
        let md = std::fs::symlink_metadata(&p).unwrap();
        let bytes = if md.file_type().is_symlink() {
            format!("-> {}", std::fs::read_link(&p).unwrap().display()).into_bytes()
        } else if md.is_file() {
            std::fs::read(&p).unwrap()
        } else {
            b"(special)".to_vec()
        };
        out.push((f, bytes));
    }
    let link = std::fs::read_link(data.join("requests"))
        .map(|t| t.display().to_string())
        .unwrap_or_else(|e| format!("not a link: {e}"));
    out.push(("requests".into(), link.into_bytes()));
    out
}

/// The `logscope` binary for `data` as a std command (for spawning and deadlines), with
/// the same clean environment as `common::logscope`.
fn logscope_std(data: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("logscope"));
    c.env_remove("LOGSCOPE_DATA")
        .env_remove("LOGSCOPE_CONFIG")
        .env_remove("LOGSCOPE_SNAPSHOT_GRACE")
        .env_remove("COLUMNS")
        .env("XDG_CONFIG_HOME", "/nonexistent/logscope-test-config")
        .env("NO_COLOR", "1")
        .arg("--data")
        .arg(data);
    c
}

/// Runs `logscope --data DATA ARGS` with at most `limit_gib` GiB of address space, and
/// kills it after `secs` seconds: its output, and whether it finished in time.
fn run_bounded(data: &Path, args: &[&str], limit_gib: u64, secs: u64) -> (Output, bool) {
    let bin = assert_cmd::cargo::cargo_bin("logscope");
    let mut c = std::process::Command::new("sh");
    c.arg("-c")
        .arg(format!(
            "ulimit -v {}; exec \"$0\" \"$@\"",
            limit_gib * 1024 * 1024
        ))
        .arg(bin)
        .arg("--data")
        .arg(data)
        .args(args)
        .env_remove("LOGSCOPE_DATA")
        .env_remove("LOGSCOPE_CONFIG")
        .env_remove("COLUMNS")
        .env("XDG_CONFIG_HOME", "/nonexistent/logscope-test-config")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let t0 = Instant::now();
    let mut in_time = true;
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(secs) {
            in_time = false;
            child.kill().ok();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (child.wait_with_output().unwrap(), in_time)
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Commands that read the dataset: every kind of reader (batches in manifest order, in
/// time order, counts per value, SQL).
const READERS: [&[&str]; 8] = [
    &["heavy", "--format", "json"],
    &["top", "--by", "path", "--format", "json"],
    &["replay", "--limit", "20/1m", "--format", "json"],
    &["availability", "--format", "json"],
    &["agents", "--format", "json"],
    &["concentration", "--format", "json"],
    &["timeline", "--client", "10.0.0.0/8", "--format", "json"],
    &[
        "sql",
        "SELECT count(*) AS n FROM requests",
        "--format",
        "csv",
    ],
];

/// Every reader (`sql` too where `with_sql`) exits 1 within `secs` seconds saying the
/// dataset is damaged and naming each of `names`.
fn readers_refuse(data: &Path, names: &[&str], secs: u64, with_sql: bool) {
    let readers = READERS
        .iter()
        .copied()
        .filter(|a| with_sql || a[0] != "sql")
        .chain([&["info"][..]]);
    for args in readers {
        let (out, in_time) = run_bounded(data, args, 4, secs);
        let (stdout, stderr) = text(&out);
        assert!(in_time, "{args:?} still ran after {secs} s");
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}\n{stdout}");
        let said = format!("{stdout}{stderr}");
        assert!(!said.contains("panicked"), "{args:?}: {said}");
        assert!(
            said.contains("dataset is damaged") || said.contains("DAMAGED"),
            "{args:?}: {said}"
        );
        for n in names {
            assert!(said.contains(n), "{args:?} does not name {n:?}: {said}");
        }
    }
}

/// An ingest of `log` into `data` is refused (exit 1, "dataset is damaged", naming each
/// of `names`) and leaves every file of the dataset as it was.
fn ingest_refused(data: &Path, log: &Path, names: &[&str]) {
    let before = state(data);
    let (out, in_time) = run_bounded(data, &["ingest", "--quiet", s(log)], 4, 60);
    let (_, stderr) = text(&out);
    assert!(in_time, "ingest still ran after 60 s");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("dataset is damaged"), "{stderr}");
    for n in names {
        assert!(stderr.contains(n), "ingest does not name {n:?}: {stderr}");
    }
    assert!(
        state(data) == before,
        "the refused ingest changed the dataset"
    );
}

/// The part file names of the committed manifest.
fn part_names(data: &Path) -> Vec<String> {
    manifest(data)["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["file"].as_str().unwrap().to_string())
        .collect()
}

fn records(out: &Output) -> u64 {
    // The number after `"records":` (read as text: the figure is all this needs).
    let stdout = text(out).0;
    let at = stdout
        .find("\"records\":")
        .unwrap_or_else(|| panic!("no records in {stdout}"));
    let digits: String = stdout[at + 10..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap()
}

#[test]
fn a_part_listed_twice_is_damage_not_double_counts_and_ingest_leaves_it_intact() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let a = write_log(tmp.path(), "a.log", 2000, 0);
    let b = write_log(tmp.path(), "b.log", 300, 100_000);
    assert_eq!(ingest_json(&data, &[s(&a)]).0["added"], 2000);
    assert_eq!(ingest_json(&data, &[s(&b)]).0["added"], 300);
    // Snapshots 1 and 2 share a.log's part (a hard link).
    let shared = part_names(&data)[0].clone();
    let mut m = manifest(&data);
    let dup = m["parts"][0].clone();
    m["parts"].as_array_mut().unwrap().push(dup);
    save_manifest(&data, &m);

    readers_refuse(&data, &["listed twice", &shared], 60, true);
    let out = logscope(&data).args(["info", "--verify"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("listed twice"));

    // The next ingest is refused: the shared part stays whole in both snapshots.
    let whole = std::fs::read(data.join("snapshots/0000000001").join(&shared)).unwrap();
    let c = write_log(tmp.path(), "c.log", 50, 200_000);
    ingest_refused(&data, &c, &["listed twice", &shared]);
    for snap in ["0000000001", "0000000002"] {
        let now = std::fs::read(data.join("snapshots").join(snap).join(&shared)).unwrap();
        assert!(now == whole, "snapshot {snap}'s {shared} changed");
    }

    // With the manifest repaired, everything works again: 2,300 rows, not 4,300.
    m["parts"].as_array_mut().unwrap().pop();
    save_manifest(&data, &m);
    let out = logscope(&data)
        .args(["replay", "--limit", "20/1m", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(records(&out), 2300);
    let (s2, code) = ingest_json(&data, &[s(&c)]);
    assert_eq!((code, s2["added"].as_u64()), (0, Some(50)), "{s2}");
}

#[test]
fn an_ingest_count_that_would_wrap_or_repeat_is_refused_and_nothing_is_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let a = write_log(tmp.path(), "a.log", 2000, 0);
    assert_eq!(ingest_json(&data, &[s(&a)]).0["added"], 2000);
    let good = manifest(&data);
    let b = write_log(tmp.path(), "b.log", 300, 100_000);
    // u64::MAX: the next ingest's number wrapped to 0, and a later one wrote parts
    // under the names of the first ingest's. 0: the next ingest is number 1 again, the
    // committed snapshot's.
    for ingests in [serde_json::json!(u64::MAX), serde_json::json!(0)] {
        let mut m = good.clone();
        m["ingests"] = ingests.clone();
        save_manifest(&data, &m);
        ingest_refused(&data, &b, &["`ingests`"]);
        let out = logscope(&data).args(["info", "--verify"]).output().unwrap();
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{ingests}: {stderr}");
        assert!(
            stdout.contains("DAMAGED") && stdout.contains("`ingests`"),
            "{ingests}: {stdout}"
        );
        readers_refuse(&data, &["`ingests`"], 60, true);
    }
    save_manifest(&data, &good);
    let (s2, code) = ingest_json(&data, &[s(&b)]);
    assert_eq!((code, s2["added"].as_u64()), (0, Some(300)), "{s2}");
    assert_eq!(s2["ingest"].as_u64(), Some(2), "{s2}");
    assert_eq!(glob_rows(&data), 2300);
}

#[test]
fn a_part_with_absurd_rows_is_an_error_at_once_not_an_allocation() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let a = write_log(tmp.path(), "a.log", 2000, 0);
    assert_eq!(ingest_json(&data, &[s(&a)]).0["added"], 2000);
    let good = manifest(&data);
    // The same readers within the same bounds read the intact dataset.
    for args in READERS {
        let (out, in_time) = run_bounded(&data, args, 4, 60);
        assert!(
            in_time && out.status.success(),
            "{args:?}: {}",
            text(&out).1
        );
    }
    let absurd = i64::MAX as u64;
    let b = write_log(tmp.path(), "b.log", 300, 100_000);
    // The row count alone, then the row count and a segment that agrees with it.
    for with_segment in [false, true] {
        let mut m = good.clone();
        m["parts"][0]["rows"] = absurd.into();
        if with_segment {
            let seg = &mut m["parts"][0]["segments"];
            *seg = serde_json::json!([{
                "rows": absurd,
                "min_ts_ms": seg[0]["min_ts_ms"],
                "max_ts_ms": seg[0]["max_ts_ms"],
            }]);
        }
        save_manifest(&data, &m);
        // `sql` never uses the manifest's row counts: it answers from the files.
        let said = absurd.to_string();
        readers_refuse(&data, &[&said], 30, false);
        ingest_refused(&data, &b, &[&said]);
    }
}

#[test]
fn requests_that_is_not_a_link_says_the_dataset_is_damaged_and_how_to_recover() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let a = write_log(tmp.path(), "a.log", 2000, 0);
    let b = write_log(tmp.path(), "b.log", 300, 100_000);
    assert_eq!(ingest_json(&data, &[s(&a)]).0["added"], 2000);
    let link = data.join("requests");
    for kind in ["a directory", "a plain file"] {
        std::fs::remove_file(&link).unwrap();
        if kind == "a directory" {
            std::fs::create_dir(&link).unwrap();
            std::fs::write(link.join("x.parquet"), b"not a part").unwrap();
        } else {
            std::fs::write(&link, b"snapshots/0000000001\n").unwrap();
        }
        for args in [
            &["heavy", "--format", "json"][..],
            &["info"],
            &["sql", "SELECT count(*) FROM requests"],
        ] {
            let out = logscope(&data).args(args).output().unwrap();
            let (_, stderr) = text(&out);
            assert_eq!(out.status.code(), Some(1), "{kind} {args:?}: {stderr}");
            assert!(!stderr.contains("os error 22"), "{kind} {args:?}: {stderr}");
            for want in ["dataset is damaged", kind, "ln -s snapshots/0000000001"] {
                assert!(stderr.contains(want), "{kind} {args:?}: {want:?}: {stderr}");
            }
        }
        ingest_refused(&data, &b, &[kind, "ln -s snapshots/0000000001"]);
        // The advice works.
        let recover = format!(
            "cd '{}' && mv requests requests.damaged && ln -s snapshots/0000000001 requests",
            data.display()
        );
        let ok = std::process::Command::new("sh")
            .args(["-c", &recover])
            .status()
            .unwrap();
        assert!(ok.success());
        logscope(&data)
            .args(["info", "--verify"])
            .assert()
            .success();
        let moved = data.join("requests.damaged");
        if moved.is_dir() {
            std::fs::remove_dir_all(&moved).unwrap();
        } else {
            std::fs::remove_file(&moved).unwrap();
        }
    }
    let (s2, code) = ingest_json(&data, &[s(&b)]);
    assert_eq!((code, s2["added"].as_u64()), (0, Some(300)), "{s2}");
}

#[test]
fn a_fifo_or_a_symlinked_part_is_refused_by_ingest_and_named_by_info() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let a = write_log(tmp.path(), "a.log", 2000, 0);
    let b = write_log(tmp.path(), "b.log", 300, 100_000);
    let c = write_log(tmp.path(), "c.log", 50, 200_000);
    assert_eq!(ingest_json(&data, &[s(&a)]).0["added"], 2000);
    assert_eq!(ingest_json(&data, &[s(&b)]).0["added"], 300);
    // b.log's part is in snapshot 2 only.
    let name = part_names(&data)[1].clone();
    let part = data.join("snapshots/0000000002").join(&name);
    let saved = tmp.path().join("saved.parquet");
    std::fs::rename(&part, &saved).unwrap();
    for (kind, said) in [("symlink", "symbolic link"), ("fifo", "FIFO")] {
        if kind == "symlink" {
            // The same bytes, reached through a link: not what the manifest records.
            std::os::unix::fs::symlink(&saved, &part).unwrap();
        } else {
            let ok = std::process::Command::new("mkfifo")
                .arg(&part)
                .status()
                .unwrap();
            assert!(ok.success());
        }
        ingest_refused(&data, &c, &[&name, said]);
        let (out, in_time) = run_bounded(&data, &["info", "--verify"], 4, 30);
        let (stdout, stderr) = text(&out);
        assert!(in_time, "{kind}: info still ran after 30 s");
        assert_eq!(out.status.code(), Some(1), "{kind}: {stderr}");
        assert!(
            stdout.contains("DAMAGED") && stdout.contains(&name) && stdout.contains(said),
            "{kind}: {stdout}"
        );
        // Readers refuse it too (and never wait on the FIFO).
        let (out, in_time) = run_bounded(&data, &["heavy", "--format", "json"], 4, 30);
        assert!(in_time, "{kind}: heavy still ran after 30 s");
        assert_eq!(out.status.code(), Some(1), "{kind}: {}", text(&out).1);
        assert!(text(&out).1.contains(said), "{kind}: {}", text(&out).1);
        std::fs::remove_file(&part).unwrap();
    }
    std::fs::rename(&saved, &part).unwrap();
    let (s2, code) = ingest_json(&data, &[s(&c)]);
    assert_eq!((code, s2["added"].as_u64()), (0, Some(50)), "{s2}");
}

/// A dataset of `copies` × 100,000 rows in one snapshot, ingested once: the one part is
/// listed under `copies` names (hard links of the same file, each with its own manifest
/// entry, as a valid dataset of several parts), so that a reader takes seconds while
/// the setup takes one ingest of 100,000 lines.
fn slow_to_read(tmp: &Path, copies: usize) -> PathBuf {
    let data = tmp.join("data");
    let log = write_log(tmp, "big.log", 100_000, 0);
    assert_eq!(ingest_json(&data, &[s(&log)]).0["added"], 100_000);
    let mut m = manifest(&data);
    let first = m["parts"][0].clone();
    let file = first["file"].as_str().unwrap().to_string();
    let table = data.join("snapshots/0000000001");
    for k in 1..copies {
        let name = file.replace("-000.parquet", &format!("-{k:03}.parquet"));
        std::fs::hard_link(table.join(&file), table.join(&name)).unwrap();
        let mut p = first.clone();
        p["file"] = name.into();
        m["parts"].as_array_mut().unwrap().push(p);
    }
    save_manifest(&data, &m);
    data
}

/// Starts a `replay` over `data` (output into files under `dir`, so that no pipe fills).
fn start_reader(data: &Path, dir: &Path, tag: &str) -> (Child, PathBuf, PathBuf) {
    let (o, e) = (
        dir.join(format!("{tag}.out")),
        dir.join(format!("{tag}.err")),
    );
    let child = logscope_std(data)
        .args([
            "replay", "--limit", "20/1m", "--limit", "5/1s", "--format", "json",
        ])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&o).unwrap())
        .stderr(std::fs::File::create(&e).unwrap())
        .spawn()
        .unwrap();
    (child, o, e)
}

/// Ingests a small distinct log, with `grace` as `LOGSCOPE_SNAPSHOT_GRACE` if given.
fn small_ingest(data: &Path, dir: &Path, k: usize, grace: Option<&str>) {
    let log = write_log(dir, &format!("small{k}.log"), 10, 1_000_000 + k * 100);
    let mut c = logscope_std(data);
    if let Some(g) = grace {
        c.env("LOGSCOPE_SNAPSHOT_GRACE", g);
    }
    let out = c.args(["ingest", "--quiet", s(&log)]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
}

fn snapshot_dirs(data: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(data.join("snapshots"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_reader_keeps_its_snapshot_while_ingests_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let copies = 24;
    let data = slow_to_read(tmp.path(), copies);
    let rows = 100_000 * copies as u64;
    // Round 1 with the default grace period; round 2 without one, so that only the
    // reader's lock on its snapshot keeps it.
    let mut k = 0;
    for (round, grace) in [(1, None), (2, Some("0"))] {
        let expected = rows + 10 * k as u64;
        let t0 = Instant::now();
        let (mut reader, o, e) = start_reader(&data, tmp.path(), &format!("round{round}"));
        std::thread::sleep(Duration::from_millis(300));
        for _ in 0..3 {
            k += 1;
            small_ingest(&data, tmp.path(), k, grace);
        }
        let committed = t0.elapsed();
        assert!(
            reader.try_wait().unwrap().is_none(),
            "round {round}: the reader finished before the ingests committed ({committed:?}): \
             make the dataset larger"
        );
        let status = reader.wait().unwrap();
        let err = std::fs::read_to_string(&e).unwrap();
        assert!(
            status.success(),
            "round {round}: the reader failed while ingests committed: {err}"
        );
        let out = Output {
            status,
            stdout: std::fs::read(&o).unwrap(),
            stderr: Vec::new(),
        };
        // It read the snapshot it started with, whole: none of the new rows.
        assert_eq!(records(&out), expected, "round {round}");
        eprintln!(
            "round {round}: 3 ingests committed within {committed:?}; the reader ran {:?}",
            t0.elapsed()
        );
    }
    // Without a grace period and with no reader left, the next ingest removes every
    // snapshot but the committed one and the one before it.
    assert!(snapshot_dirs(&data).len() > 2, "{:?}", snapshot_dirs(&data));
    small_ingest(&data, tmp.path(), 99, Some("0"));
    assert_eq!(
        snapshot_dirs(&data),
        ["0000000007", "0000000008"],
        "{:?}",
        snapshot_dirs(&data)
    );
    // With the default grace period, superseded snapshots stay.
    small_ingest(&data, tmp.path(), 100, None);
    assert_eq!(snapshot_dirs(&data).len(), 3, "{:?}", snapshot_dirs(&data));
}

#[test]
fn a_reader_whose_snapshot_is_removed_anyway_says_so_plainly() {
    let tmp = tempfile::tempdir().unwrap();
    let data = slow_to_read(tmp.path(), 40);
    let (o, e) = (tmp.path().join("lost.out"), tmp.path().join("lost.err"));
    let mut reader = logscope_std(&data)
        .args(["heavy", "--format", "json"])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&o).unwrap())
        .stderr(std::fs::File::create(&e).unwrap())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    small_ingest(&data, tmp.path(), 1, None);
    // Something other than logscope removes the snapshot being read.
    std::fs::remove_dir_all(data.join("snapshots/0000000001")).unwrap();
    assert!(
        reader.try_wait().unwrap().is_none(),
        "the reader finished before its snapshot was removed: make the dataset larger"
    );
    let status = reader.wait().unwrap();
    let err = std::fs::read_to_string(&e).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("snapshot 1 was removed while this command read it")
            && err.contains("run the command again"),
        "{err}"
    );
    assert!(!err.contains("No such file"), "{err}");
}
