//! `contrib/spark_replay.py`: a per-key replay run as N Spark tasks in local mode (task K
//! runs `logscope replay --keys K/N --decisions-seq`) writes the `--decisions` file of one
//! unsharded `logscope replay`, byte for byte, and its summed counts are that run's; a
//! site-wide candidate is refused with logscope's reason before Spark starts.
//!
//! Without pyspark or Java the Spark part prints `SKIPPED: …` (and fails when `CI` is set).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use super::common::{Rng, csv_fields, logscope};

/// The two candidates: per address, and a token bucket per /24 (/48 for IPv6).
const FLAGS: &[&str] = &[
    "--limit",
    "5/10s,key=ip",
    "--limit",
    "12/10s,key=prefix,algo=token-bucket",
];

const CLIENTS: &[&str] = &[
    "203.0.113.7",
    "203.0.113.8",
    "203.0.113.9",
    "203.0.113.200",
    "198.51.100.1",
    "198.51.100.2",
    "198.51.100.3",
    "192.0.2.10",
    "2001:db8:1::5",
    "2001:db8:1::6",
    "2001:db8:1:2::7",
    "2001:db8:2::1",
    "2001:db8:2::2",
    "fd00::1",
];

/// One Caddy access-log entry: arrived at `arrival_ms`, took `took_ms`, logged at the end.
fn caddy(arrival_ms: u64, took_ms: u64, ip: &str, status: u16) -> String {
    let done = arrival_ms + took_ms;
    format!(
        r#"{{"level":"info","ts":{}.{:03},"logger":"http.log.access","msg":"handled request","request":{{"remote_ip":"{ip}","remote_port":"40000","client_ip":"{ip}","proto":"HTTP/2.0","method":"GET","host":"wiki.example","uri":"/wiki/Main","headers":{{"User-Agent":["curl/8.0"]}}}},"bytes_read":0,"user_id":"","duration":{}.{:03},"size":512,"status":{status}}}"#,
        done / 1000,
        done % 1000,
        took_ms / 1000,
        took_ms % 1000,
    )
}

/// Two servers' logs of ten minutes (4,000 requests in all), each in completion order:
/// the clients above at random on a 10 ms grid (so requests of different keys share a
/// millisecond), some served at once and some slowly, a few 429s already in the log,
/// and a burst of 300 requests from one address, 20 ms apart, in the middle.
fn write_logs(dir: &Path) -> Vec<PathBuf> {
    const START_MS: u64 = 1_790_312_400_000;
    let mut rng = Rng(0x5eed_c1a5_7e2d);
    let mut logs: [Vec<(u64, String)>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..3_700 {
        let arrival = START_MS + rng.below(60_000) * 10;
        let ip = CLIENTS[rng.below(CLIENTS.len() as u64) as usize];
        let (took, status) = match rng.below(10) {
            0 => (0, 429),
            1..=3 => (1 + rng.below(900), 200),
            _ => (0, 200),
        };
        let server = rng.below(2) as usize;
        logs[server].push((arrival + took, caddy(arrival, took, ip, status)));
    }
    for i in 0..300 {
        let arrival = START_MS + 300_000 + i * 20;
        logs[(i % 2) as usize].push((arrival, caddy(arrival, 0, "203.0.113.66", 200)));
    }
    let mut paths = Vec::new();
    for (n, mut lines) in logs.into_iter().enumerate() {
        lines.sort();
        let text: String = lines.into_iter().map(|(_, l)| l + "\n").collect();
        let p = dir.join(format!("web{}.log", n + 1));
        std::fs::write(&p, text).unwrap();
        paths.push(p);
    }
    paths
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/spark_replay.py")
}

/// `python3 contrib/spark_replay.py --logscope BIN --data DATA --shards 3 --out OUT
/// --summary-json SUMMARY -- FLAGS`, in `dir`, with the environment of [`logscope`].
fn run_script(dir: &Path, flags: &[&str]) -> Output {
    Command::new("python3")
        .current_dir(dir)
        .env_remove("LOGSCOPE_DATA")
        .env_remove("LOGSCOPE_CONFIG")
        .env_remove("LOGSCOPE_ASN_DB")
        .env_remove("COLUMNS")
        .env("XDG_CONFIG_HOME", "/nonexistent/logscope-test-config")
        .env("NO_COLOR", "1")
        .env(
            "PYSPARK_SUBMIT_ARGS",
            "--conf spark.ui.enabled=false --driver-memory 1g pyspark-shell",
        )
        .arg(script())
        .arg("--logscope")
        .arg(env!("CARGO_BIN_EXE_logscope"))
        .args(["--data", "data", "--shards", "3", "--out", "spark.csv"])
        .args([
            "--summary-json",
            "summary.json",
            "--master",
            "local[2]",
            "--",
        ])
        .args(flags)
        .output()
        .expect("python3 runs")
}

/// Whether `cmd ARGS` runs and succeeds.
fn runs(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// What the script needs and is not here: python3 (for the check of the flags), then
/// pyspark and Java (for the Spark run).
fn missing(spark: bool) -> Option<&'static str> {
    if !runs("python3", &["--version"]) {
        return Some("python3");
    }
    if !spark {
        return None;
    }
    if !runs("python3", &["-c", "import pyspark"]) {
        return Some("pyspark");
    }
    if std::env::var_os("JAVA_HOME").is_none() && !runs("java", &["-version"]) {
        return Some("java");
    }
    None
}

/// Prints SKIPPED (and fails under `CI`) when something the script needs is missing.
fn here(spark: bool) -> bool {
    let Some(m) = missing(spark) else {
        return true;
    };
    println!("SKIPPED: {m} not installed: contrib/spark_replay.py was not run");
    assert!(
        std::env::var_os("CI").is_none(),
        "{m} is required in CI (python3 -m pip install pyspark; Java 17)"
    );
    false
}

/// The rows of a decisions CSV without its header, ordered by the CSV's own columns:
/// arrival, then file and line, then candidate as given.
fn sorted_by_columns(text: &str, candidates: &[String]) -> Vec<String> {
    let mut rows: Vec<(String, String, u64, usize, String)> = text
        .lines()
        .skip(1)
        .map(|l| {
            let f = csv_fields(l);
            let c = candidates.iter().position(|n| *n == f[3]).unwrap();
            (
                f[2].clone(),
                f[0].clone(),
                f[1].parse().unwrap(),
                c,
                l.into(),
            )
        })
        .collect();
    rows.sort();
    rows.into_iter().map(|r| r.4).collect()
}

#[test]
fn cluster_replay_on_spark_writes_one_runs_decisions() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let data = dir.join("data");
    let logs = write_logs(dir);
    let out = logscope(&data).arg("ingest").args(&logs).output().unwrap();
    assert!(
        out.status.success(),
        "ingest: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    if !here(false) {
        return;
    }
    // A site-wide candidate beside a per-key one: refused by logscope's own check of the
    // flags, before Spark starts (so even where Spark is absent).
    let refused = run_script(dir, &["--limit", "5/10s,key=ip", "--limit", "100/1m"]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    for says in [
        "logscope refused the replay flags (nothing was started on Spark)",
        "candidate 100/m is site-wide",
        "replay it in one ordered pass on one machine",
    ] {
        assert!(err.contains(says), "missing {says:?} in: {err}");
    }
    assert!(!dir.join("spark.csv").exists() && !dir.join("summary.json").exists());

    // One unsharded run.
    let whole = logscope(&data)
        .current_dir(dir)
        .arg("replay")
        .args(FLAGS)
        .args(["--decisions", "all.csv", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        whole.status.success(),
        "replay: {}",
        String::from_utf8_lossy(&whole.stderr)
    );
    let report: Value = serde_json::from_slice(&whole.stdout).unwrap();
    let all = std::fs::read_to_string(dir.join("all.csv")).unwrap();
    assert!(all.contains(",refuse,"), "nothing refused:\n{all}");
    assert!(all.lines().count() > 4_000, "{}", all.lines().count());
    // The log is one whose order the CSV's columns do not give (requests of one
    // millisecond go served-at-once first, then by request time, then in input order):
    // sorting the shards' rows by arrival, file and line would not make this file.
    let names: Vec<String> = report["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    let rows: Vec<&str> = all.lines().skip(1).collect();
    assert_ne!(
        rows,
        sorted_by_columns(&all, &names),
        "the log has no ties the CSV's columns cannot order: the merge is not put to the test"
    );

    if !here(true) {
        return;
    }
    let spark = run_script(dir, FLAGS);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&spark.stdout),
        String::from_utf8_lossy(&spark.stderr),
    );
    assert!(
        spark.status.success(),
        "spark_replay.py failed:\n{stdout}\n{stderr}"
    );
    let got = std::fs::read_to_string(dir.join("spark.csv")).unwrap();
    if got != all {
        let diff = all
            .lines()
            .zip(got.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(all.lines().count().min(got.lines().count()));
        panic!(
            "the Spark run's decisions differ from one run's from line {} (one run {} lines, Spark {}):\none run: {:?}\nSpark:   {:?}",
            diff + 1,
            all.lines().count(),
            got.lines().count(),
            all.lines().nth(diff),
            got.lines().nth(diff),
        );
    }
    assert!(
        stdout.contains("in 3 shards of the keys"),
        "{stdout}\n{stderr}"
    );

    // The summed counts are the unsharded run's.
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["requests"], report["requests"], "{summary}");
    assert_eq!(
        summary["decisions"].as_u64(),
        Some(rows.len() as u64),
        "{summary}"
    );
    let (want, got) = (
        report["candidates"].as_array().unwrap(),
        summary["candidates"].as_array().unwrap(),
    );
    assert_eq!(want.len(), got.len());
    for (w, g) in want.iter().zip(got) {
        for f in [
            "name",
            "requests",
            "covered",
            "in_scope",
            "admitted",
            "delayed",
            "refused",
            "challenged",
            "exempt",
            "credentials_refused",
            "out_of_scope",
            "boundary",
            "delay_ms_max",
        ] {
            assert_eq!(w[f], g[f], "{f}: one run {w}\nSpark {g}");
        }
    }
    assert!(
        want.iter().all(|c| c["refused"].as_u64() > Some(0)),
        "{report}"
    );
}
