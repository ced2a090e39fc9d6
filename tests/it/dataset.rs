//! The dataset's commit protocol, as every reader sees it: crashes at each commit step,
//! a full disk, damaged parts and manifests, older formats.

use std::path::{Path, PathBuf};

use predicates::prelude::*;

use crate::common::*;

const STEPS: [&str; 5] = [
    "commit-start",
    "after-links",
    "after-manifest",
    "after-rename",
    "after-switch",
];

fn basjes() -> PathBuf {
    fixture("logs/basjes-hackers-access.log")
}

fn elastic() -> PathBuf {
    fixture("logs/elastic-apache.log")
}

/// Rows `logscope info` says the dataset holds.
fn info_rows(data: &Path) -> u64 {
    let out = logscope(data).args(["info", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["rows"].as_u64().unwrap()
}

fn leftovers(data: &Path) -> Vec<String> {
    tree(data)
        .into_iter()
        .filter(|f| f.contains(".build-") || f.contains(".tmp"))
        .collect()
}

#[test]
fn a_crash_at_any_commit_step_shows_every_reader_one_whole_snapshot() {
    for step in STEPS {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        let (s, code) = ingest_json(&data, &[basjes().to_str().unwrap()]);
        assert_eq!((code, s["added"].as_u64()), (0, Some(3456)));

        let out = logscope(&data)
            .env("LOGSCOPE_FAILPOINT", step)
            .args(["ingest", "--quiet"])
            .arg(elastic())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{step}: the failpoint aborts");

        // Before any clean-up: a reader globbing requests/*.parquet (as README tells
        // DuckDB and Spark users) and logscope itself see the same, whole snapshot.
        let expected = if step == "after-switch" {
            3456 + 9999
        } else {
            3456
        };
        assert_eq!(glob_rows(&data), expected, "{step}: glob readers");
        assert_eq!(info_rows(&data), expected, "{step}: logscope");
        assert_eq!(read_dataset(&data).height() as u64, expected, "{step}");

        // The next writer cleans up and ends with every row exactly once.
        let (s, code) = ingest_json(&data, &[elastic().to_str().unwrap()]);
        assert_eq!(code, 0, "{step}: {s}");
        assert_eq!(
            s["added"].as_u64().unwrap(),
            3456 + 9999 - expected,
            "{step}"
        );
        assert_eq!(glob_rows(&data), 3456 + 9999, "{step}");
        assert_eq!(info_rows(&data), 3456 + 9999, "{step}");
        assert!(
            leftovers(&data).is_empty(),
            "{step}: {:?}",
            leftovers(&data)
        );
        // Old snapshots are collected: the committed one and the one before it remain.
        let snaps: Vec<_> = std::fs::read_dir(data.join("snapshots"))
            .unwrap()
            .flatten()
            .collect();
        assert!(snaps.len() <= 2, "{step}: {} snapshots", snaps.len());
    }
}

/// Runs `script` as root of a private mount namespace (so it can mount a small tmpfs
/// without touching the machine), with `$BIN` the logscope binary.
fn in_mount_namespace(script: &str) -> std::process::Output {
    let bin = assert_cmd::cargo::cargo_bin("logscope");
    let out = std::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", script])
        .env("BIN", bin)
        .env("NO_COLOR", "1")
        .output()
        .expect("unshare (util-linux) runs");
    assert!(
        out.status.success(),
        "the namespace script failed (needs unshare -rm and tmpfs): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn a_full_disk_at_any_step_leaves_the_dataset_as_it_was() {
    full_disk_sweep(None);
}

/// The same with row groups of 500 rows: the 9,999 rows become 20 row groups, written by
/// the writer's file thread while the parse goes on, so the disk fills between two of
/// them and the error comes back to the caller at a later row group.
#[test]
fn a_full_disk_between_row_groups_leaves_the_dataset_as_it_was() {
    full_disk_sweep(Some(500));
}

fn full_disk_sweep(row_group_rows: Option<u32>) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let mnt = root.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let rg = row_group_rows.map_or(String::new(), |n| n.to_string());
    // How much room the second ingest's parts take.
    let probe = root.join("probe");
    let probe_ingest = |log: &Path| {
        let mut cmd = logscope(&probe);
        if let Some(n) = row_group_rows {
            cmd.env("LOGSCOPE_ROW_GROUP_ROWS", n.to_string());
        }
        cmd.args(["ingest", "--quiet"]).arg(log).assert().success();
    };
    probe_ingest(&basjes());
    let before: u64 = dir_bytes(&probe.join("requests"));
    probe_ingest(&elastic());
    let parts: u64 = dir_bytes(&probe.join("requests")) - before;

    // Free space from nothing to more than enough, finely around the parts' size (the
    // manifest and directory entries come after the parts).
    let mut frees: Vec<u64> = vec![0, 4096, 64 * 1024];
    let around = parts / 4096 * 4096;
    for k in 0..6 {
        frees.push(around.saturating_sub(8192) + k * 4096);
    }
    frees.push(parts + 1024 * 1024);
    let mut failed = 0;
    let mut at_manifest = false;
    for (i, free) in frees.iter().enumerate() {
        let out_dir = root.join(format!("case{i}"));
        std::fs::create_dir(&out_dir).unwrap();
        let script = format!(
            r#"set -e
M="{mnt}"; O="{out}"
[ -n "{rg}" ] && export LOGSCOPE_ROW_GROUP_ROWS="{rg}"
mount -t tmpfs -o size=16m tmpfs "$M"
"$BIN" --data "$M/d" ingest --quiet "{a}"
used=$(du -sb "$M" | cut -f1)
avail=$(df -B1 --output=avail "$M" | tail -1)
fill=$(( avail - {free} ))
if [ "$fill" -gt 0 ]; then head -c "$fill" /dev/zero > "$M/filler" 2>/dev/null || true; fi
set +e
"$BIN" --data "$M/d" ingest --json "{b}" > "$O/json" 2> "$O/stderr"
echo $? > "$O/code"
cp -a "$M/d" "$O/d"
umount "$M"
"#,
            mnt = mnt.display(),
            out = out_dir.display(),
            a = basjes().display(),
            b = elastic().display(),
            rg = rg,
        );
        in_mount_namespace(&script);
        let code: i32 = std::fs::read_to_string(out_dir.join("code"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let stderr = std::fs::read_to_string(out_dir.join("stderr")).unwrap();
        let data = out_dir.join("d");
        let rows = glob_rows(&data);
        assert!(
            leftovers(&data).is_empty(),
            "free {free}: {:?}",
            leftovers(&data)
        );
        if code == 0 {
            assert_eq!(rows, 3456 + 9999, "free {free}");
        } else {
            failed += 1;
            assert_eq!(code, 1, "free {free}: {stderr}");
            assert_eq!(
                stderr.matches("No space left on device").count(),
                1,
                "free {free}: said once: {stderr}"
            );
            at_manifest |= stderr.contains("_manifest.json");
            assert_eq!(
                rows, 3456,
                "free {free}: nothing of the failed ingest is visible"
            );
            assert_eq!(info_rows(&data), 3456, "free {free}");
        }
    }
    assert!(failed >= 3, "the sweep hit the full disk {failed} times");
    assert!(at_manifest, "one case ran out of room at the manifest step");
    assert!(failed < frees.len(), "and ended with room enough");
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

#[test]
fn an_older_dataset_format_is_refused_with_how_to_rebuild_it() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(data.join("month=2015-05")).unwrap();
    std::fs::write(
        data.join("manifest.json"),
        r#"{"version":1,"ingests":1,"sources":[],"parts":[]}"#,
    )
    .unwrap();
    for args in [
        vec!["info"],
        vec!["heavy"],
        vec!["ingest", elastic().to_str().unwrap()],
    ] {
        logscope(&data)
            .args(&args)
            .assert()
            .code(1)
            .stderr(predicate::str::contains("dataset format 1"))
            .stderr(predicate::str::contains("Rebuild it"));
    }
    // Nothing was changed or added.
    assert!(std::fs::symlink_metadata(data.join("requests")).is_err());
}

#[test]
fn damaged_or_missing_parts_are_reported_not_read_as_fewer_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    ingest_json(&data, &[elastic().to_str().unwrap()]);
    let table = data.join("requests");
    let part = std::fs::read_dir(&table)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "parquet"))
        .unwrap();
    let len = std::fs::metadata(&part).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&part)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    logscope(&data)
        .args(["info"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("DAMAGED"));
    logscope(&data)
        .args(["heavy"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("dataset is damaged"));
    std::fs::remove_file(&part).unwrap();
    logscope(&data)
        .args(["concentration"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("missing"));
}

/// The only part file of the dataset at `data`.
fn only_part(data: &Path) -> PathBuf {
    let parts: Vec<PathBuf> = std::fs::read_dir(data.join("requests"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    assert_eq!(parts.len(), 1, "{parts:?}");
    std::fs::canonicalize(&parts[0]).unwrap()
}

#[test]
fn a_changed_byte_inside_a_part_is_an_error_never_a_different_answer() {
    // polars writes no page checksum and zstd frames carry none: without the ingest's
    // own checksums, a byte changed inside a compressed page decodes to other values.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    ingest_json(&data, &[elastic().to_str().unwrap()]);
    let part = only_part(&data);
    let whole = std::fs::read(&part).unwrap();
    let reports: [&[&str]; 5] = [
        &["top", "--by", "path", "--format", "json"],
        &["replay", "--limit", "20/1m", "--format", "json"],
        &["heavy", "--by", "1h", "--format", "json"],
        &["availability", "--format", "json"],
        &[
            "sql",
            "SELECT status, count(*) AS n, sum(bytes) AS b FROM requests GROUP BY status ORDER BY status",
            "--format",
            "csv",
        ],
    ];
    let run = |args: &[&str]| logscope(&data).args(args).output().unwrap();
    let answers: Vec<Vec<u8>> = reports
        .iter()
        .map(|a| {
            let out = run(a);
            assert!(out.status.success());
            out.stdout
        })
        .collect();
    let name = part.file_name().unwrap().to_str().unwrap().to_string();
    let (mut refused, mut caught) = (0, 0);
    let positions = 48;
    for k in 1..=positions {
        let at = 4 + (whole.len() - 12) * k / (positions + 1);
        let mut bytes = whole.clone();
        bytes[at] ^= 0x5a;
        std::fs::write(&part, &bytes).unwrap();
        for (args, answer) in reports.iter().zip(&answers) {
            let out = run(args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!err.contains("panicked"), "byte {at}: {err}");
            if out.status.success() {
                assert!(
                    out.stdout == *answer,
                    "byte {at} changed, and `{}` answered differently without an error",
                    args.join(" ")
                );
            } else {
                refused += 1;
                assert!(err.contains(&name), "byte {at}: {err}");
            }
        }
        let out = run(&["info", "--verify"]);
        if !out.status.success() {
            caught += 1;
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                stdout.contains("DAMAGED") && stdout.contains("checksum"),
                "byte {at}: {stdout}"
            );
        }
    }
    // Most of a part is column chunks; `info --verify` reads all of them.
    assert!(caught > positions * 3 / 4, "{caught} of {positions} caught");
    assert!(refused > 0);
    // The footer is checked too (the row groups' offsets and statistics live there).
    let mut bytes = whole.clone();
    let at = bytes.len() - 30;
    bytes[at] ^= 0x01;
    std::fs::write(&part, &bytes).unwrap();
    logscope(&data)
        .args(["heavy"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "the Parquet footer does not match the checksum",
        ));
    logscope(&data)
        .args(["info"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("DAMAGED").and(predicate::str::contains("footer")));
    std::fs::write(&part, &whole).unwrap();
    logscope(&data)
        .args(["info", "--verify"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "checksums: 1 of 1 parts (every column chunk read and checked)",
        ));
}

#[test]
fn a_part_without_checksums_is_read_as_before() {
    // Parts written before logscope took checksums have none in the manifest.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    ingest_json(&data, &[elastic().to_str().unwrap()]);
    let top = |data: &Path| {
        let out = logscope(data)
            .args(["top", "--by", "path", "--format", "json"])
            .output()
            .unwrap();
        assert!(out.status.success());
        out.stdout
    };
    let before = top(&data);
    let mpath = data.join("requests/_manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
    assert!(m["parts"][0]["sums"]["footer"].is_string(), "{m}");
    m["parts"][0].as_object_mut().unwrap().remove("sums");
    std::fs::write(&mpath, serde_json::to_vec(&m).unwrap()).unwrap();
    assert_eq!(top(&data), before);
    logscope(&data)
        .args(["info", "--verify"])
        .assert()
        .success()
        .stdout(predicate::str::contains("checksums: 0 of 1 parts"));
    // A malformed checksum is damage, not "no checksum".
    m["parts"][0]["sums"] = serde_json::json!({"footer": "xyz", "chunks": []});
    std::fs::write(&mpath, serde_json::to_vec(&m).unwrap()).unwrap();
    logscope(&data)
        .args(["heavy"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "checksums of this part are not well formed",
        ));
}

#[test]
fn a_manifest_naming_paths_outside_the_snapshot_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    ingest_json(&data, &[basjes().to_str().unwrap()]);
    let mpath = data.join("requests/_manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
    m["parts"][0]["file"] = "../../../etc/x.parquet".into();
    std::fs::write(&mpath, serde_json::to_vec(&m).unwrap()).unwrap();
    logscope(&data)
        .args(["heavy"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not a plain"));
}

#[test]
fn an_empty_file_does_not_swallow_the_next_one() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let empty = tmp.path().join("empty.log");
    std::fs::write(&empty, "").unwrap();
    let (s, code) = ingest_json(&data, &[empty.to_str().unwrap()]);
    assert_eq!((code, s["added"].as_u64()), (0, Some(0)), "{s}");
    let (s, code) = ingest_json(&data, &[basjes().to_str().unwrap()]);
    assert_eq!((code, s["added"].as_u64()), (0, Some(3456)), "{s}");
    let out = logscope(&data).args(["info", "--json"]).output().unwrap();
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let sources = info["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 1, "{info}");
    assert!(
        sources[0]["names"][0]
            .as_str()
            .unwrap()
            .ends_with("basjes-hackers-access.log"),
        "{info}"
    );
    assert_eq!(sources[0]["format"], "combined");
}

#[test]
fn duckdb_never_sees_an_uncommitted_ingest() {
    let has_duckdb = std::process::Command::new("python3")
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        has_duckdb || std::env::var_os("CI").is_none(),
        "CI must install duckdb (.ci/run)"
    );
    if !has_duckdb {
        eprintln!("note: python3 duckdb not installed; run .ci/run's install step");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    ingest_json(&data, &[basjes().to_str().unwrap()]);
    logscope(&data)
        .env("LOGSCOPE_FAILPOINT", "after-rename")
        .args(["ingest", "--quiet"])
        .arg(elastic())
        .assert()
        .failure();
    let query = format!(
        "import duckdb; print(duckdb.sql(\"SELECT count(*) FROM read_parquet('{}/requests/*.parquet')\").fetchall())",
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
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[(3456,)]");
}

/// `n` combined lines numbered from `from` (distinct content per line).
fn combined_lines(n: usize, from: usize) -> String {
    let mut s = String::new();
    for i in from..from + n {
        s.push_str(&format!(
            "10.1.{}.{} - - [01/May/2024:10:{:02}:{:02} +0000] \"GET /page/{i} HTTP/1.1\" 200 {} \"-\" \"agent\"\n",
            (i / 250) % 250,
            i % 250,
            (i / 60) % 60,
            i % 60,
            i % 5000
        ));
    }
    s
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn lines_of(data: &Path) -> Vec<i64> {
    let df = read_dataset(data);
    let mut v: Vec<i64> = df
        .column("line")
        .unwrap()
        .i64()
        .unwrap()
        .into_no_null_iter()
        .collect();
    v.sort();
    v
}

#[test]
fn a_corrupt_gzip_stores_nothing_and_the_intact_copy_adds_every_line_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = combined_lines(20_000, 1);
    let mut z = gzip(log.as_bytes());
    let mid = z.len() / 2;
    for b in &mut z[mid..mid + 4] {
        *b ^= 0x5a;
    }
    let bad = tmp.path().join("access.log.1.gz");
    std::fs::write(&bad, &z).unwrap();
    let (s, code) = ingest_json(&data, &[bad.to_str().unwrap()]);
    assert_eq!(code, 4, "{s}");
    assert_eq!(s["added"], 0, "nothing untrustworthy is stored: {s}");
    assert_eq!(s["files"][0]["discarded"], true);
    assert_eq!(glob_rows(&data), 0);

    let good = tmp.path().join("access.log.1");
    std::fs::write(&good, &log).unwrap();
    let (s, code) = ingest_json(&data, &[good.to_str().unwrap()]);
    assert_eq!(code, 0, "{s}");
    assert_eq!(s["added"], 20_000, "{s}");
    assert_eq!(s["bad"], 0, "{s}");
    assert_eq!(lines_of(&data), (1..=20_000).collect::<Vec<i64>>());
}

#[test]
fn a_live_files_unfinished_last_line_is_read_whole_next_time() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = tmp.path().join("access.log");
    let all = combined_lines(102, 1);
    // 100 complete lines and half of the 101st, still being written.
    let cut = all.match_indices('\n').nth(99).unwrap().0 + 1 + 40;
    std::fs::write(&log, &all[..cut]).unwrap();
    let out = logscope(&data)
        .args(["ingest", "--json"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["added"], 100, "{s}");
    assert_eq!(s["bad"], 0, "the fragment is not a bad line: {s}");
    assert_eq!(s["files"][0]["held_back_bytes"], 40);
    assert!(String::from_utf8_lossy(&out.stderr).contains("held back"));

    // The writer finishes the line and writes one more.
    std::fs::write(&log, &all).unwrap();
    let (s, code) = ingest_json(&data, &[log.to_str().unwrap()]);
    assert_eq!(
        (code, s["added"].as_u64(), s["bad"].as_u64()),
        (0, Some(2), Some(0)),
        "{s}"
    );
    assert_eq!(lines_of(&data), (1..=102).collect::<Vec<i64>>());

    // A finished file without a final newline: --final-line take consumes it.
    let last = tmp.path().join("finished.log");
    let other = combined_lines(3, 500);
    std::fs::write(&last, other.trim_end()).unwrap();
    let (s, _) = ingest_json(&data, &["--final-line", "take", last.to_str().unwrap()]);
    assert_eq!(s["added"], 3, "{s}");
}

/// A 30-day log in slightly shuffled order (several servers' clocks), 12,000 lines.
fn month_log(path: &Path) {
    let mut rng = Rng(0x5eed);
    let mut lines = Vec::new();
    let start = 1_717_200_000i64; // 2024-06-01
    for i in 0..12_000i64 {
        let t = start + i * 216 + rng.below(900) as i64 - 450;
        let dt = chrono::DateTime::from_timestamp(t, 0).unwrap();
        let heavy = rng.below(4) == 0;
        let path = if heavy {
            format!(
                "/w/index.php?title=P{}&diff={}",
                rng.below(50),
                rng.below(999)
            )
        } else {
            format!("/wiki/P{}", rng.below(300))
        };
        let agent = [
            "Mozilla/5.0 (iPhone)",
            "curl/8.5.0",
            "Googlebot/2.1",
            "Mozilla/5.0 (X11)",
        ][rng.below(4) as usize];
        lines.push(format!(
            "10.{}.{}.{} - - [{}] \"GET {path} HTTP/1.1\" {} {} \"-\" \"{agent}\"\n",
            rng.below(3),
            rng.below(40),
            rng.below(9),
            dt.format("%d/%b/%Y:%H:%M:%S +0000"),
            [200, 200, 304, 404, 503][rng.below(5) as usize],
            rng.below(9999)
        ));
    }
    std::fs::write(path, lines.concat()).unwrap();
}

fn report_json(data: &Path, args: &[&str], file: Option<&Path>) -> serde_json::Value {
    let mut c = logscope(data);
    c.args(args).args(["--format", "json"]);
    if let Some(f) = file {
        c.arg(f);
    }
    report_json_without_origin(c, &format!("{args:?}"))
}

#[test]
fn time_filters_over_pruned_row_groups_answer_as_over_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = tmp.path().join("access.log");
    month_log(&log);
    // Small row groups: the 12,000 rows make 24 segments that pruning can skip.
    let out = logscope(&data)
        .env("LOGSCOPE_ROW_GROUP_ROWS", "500")
        .args(["ingest", "--json", "--final-line", "take"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(out.status.success());
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data.join("requests/_manifest.json")).unwrap())
            .unwrap();
    let segments = m["parts"][0]["segments"].as_array().unwrap().len();
    assert!(segments >= 20, "{segments} segments");
    let mut rng = Rng(7);
    for _ in 0..6 {
        let a = 1 + rng.below(29);
        let b = a + rng.below(30 - a + 1);
        let since = format!("2024-06-{a:02}");
        let until = format!("2024-06-{b:02}");
        for cmd in [
            vec!["heavy", "--by", "6h"],
            vec!["concentration", "--top", "5"],
            vec!["concentration", "--by", "ip", "--per-prefix-limit", "3/1h"],
            vec!["agents"],
            vec!["heavy", "--by", "1d", "--heavy", "--status", "5xx"],
        ] {
            let mut args = cmd.clone();
            args.extend(["--since", &since, "--until", &until]);
            let from_dataset = report_json(&data, &args, None);
            let from_file = report_json(&data, &args, Some(&log));
            assert_eq!(from_dataset, from_file, "{args:?}");
        }
    }
}

/// Addresses that share their low 64 bits (`2001:db8::1`, `2001:db9::1`, `::1`, and
/// IPv4-mapped ones) stay apart when a report counts per address code over the dataset:
/// the reports over the dataset are those over the file.
#[test]
fn addresses_sharing_their_low_half_stay_apart_over_the_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = tmp.path().join("access.log");
    let clients = [
        "2001:db8::1",
        "2001:db9::1",
        "::1",
        "10.0.0.1",
        "2001:db8::2",
        "10.0.0.2",
        "2001:db8:0:1::1",
    ];
    let agents = ["curl/8.5.0", "Mozilla/5.0 (X11)", "Googlebot/2.1"];
    let mut rng = Rng(0xad0);
    let start = 1_717_200_000i64;
    let mut lines = String::new();
    for i in 0..3_000i64 {
        let dt = chrono::DateTime::from_timestamp(start + i * 7, 0).unwrap();
        // The first addresses far more often, so that they lead the tables.
        let c = clients[(rng.below(64) as usize).min(rng.below(7) as usize)];
        lines.push_str(&format!(
            "{c} - - [{}] \"GET /p{} HTTP/1.1\" {} 10 \"-\" \"{}\"\n",
            dt.format("%d/%b/%Y:%H:%M:%S +0000"),
            rng.below(5),
            [200, 404][rng.below(2) as usize],
            agents[rng.below(3) as usize]
        ));
    }
    std::fs::write(&log, lines).unwrap();
    logscope(&data)
        .env("LOGSCOPE_ROW_GROUP_ROWS", "700")
        .args(["ingest", "--quiet"])
        .arg(&log)
        .assert()
        .success();
    for cmd in [
        vec!["concentration", "--by", "ip", "--top", "10"],
        vec!["concentration", "--by", "ip", "--per-prefix-limit", "5/1m"],
        vec!["concentration", "--top", "10"],
        vec!["top", "--by", "ip"],
        vec!["top", "--by", "prefix"],
        vec!["top", "--by", "path"],
    ] {
        let from_dataset = report_json(&data, &cmd, None);
        let from_file = report_json(&data, &cmd, Some(&log));
        assert_eq!(from_dataset, from_file, "{cmd:?}");
    }
    // Every address is its own row of `top --by ip`.
    let top = report_json(&data, &["top", "--by", "ip"], None).to_string();
    for c in clients {
        assert!(top.contains(&format!("\"{c}\"")), "{c} missing: {top}");
    }
}
