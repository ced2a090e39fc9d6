//! `logscope replay` in bounded memory through the binary: the rows are sorted in runs
//! spilled to temporary files (forced small with `LOGSCOPE_REPLAY_RUN_ROWS`) and merged
//! back, and that changes nothing — a log given as several files in shuffled line order
//! gives the decisions and report of the one time-ordered file, and spilling or not
//! gives byte-identical outputs, from files and from the dataset.

use std::io::Write;
use std::path::Path;

use serde_json::Value;

use crate::common::*;

const UAS: [&str; 3] = [
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
    "curl/8.5.0",
];

/// Runs `logscope ARGS` in `dir` with `LOGSCOPE_REPLAY_RUN_ROWS` set to `run_rows`
/// (unset when `None`) and phase timings on; returns stdout, stderr, exit code.
fn replay(
    dir: &Path,
    data: Option<&Path>,
    run_rows: Option<usize>,
    args: &[&str],
) -> (String, String, i32) {
    let default = dir.join("no-dataset");
    let mut c = logscope(data.unwrap_or(&default));
    c.current_dir(dir).env("LOGSCOPE_TIMING", "1").arg("replay");
    match run_rows {
        Some(n) => c.env("LOGSCOPE_REPLAY_RUN_ROWS", n.to_string()),
        None => c.env_remove("LOGSCOPE_REPLAY_RUN_ROWS"),
    };
    let out = c.args(args).output().expect("runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// The number of sorted runs the replay wrote to disk, from its timing line.
fn runs_on_disk(stderr: &str) -> usize {
    let at = stderr
        .find(" runs on disk)")
        .unwrap_or_else(|| panic!("no timing line: {stderr}"));
    let from = stderr[..at].rfind('(').expect("(") + 1;
    stderr[from..at].parse().expect("a count")
}

/// `n` Caddy JSON requests, each arriving at its own millisecond (at least 3 ms apart)
/// and completing 0–400 ms later, as (completion ms, line).
fn caddy_requests(n: usize, rng: &mut Rng) -> Vec<(u64, String)> {
    let start_ms: u64 = 1_790_312_400_000;
    let mut arrival = start_ms;
    (0..n)
        .map(|_| {
            arrival += 3 + rng.below(40);
            let took = rng.below(400);
            let done = arrival + took;
            let ip = format!("198.51.{}.{}", rng.below(4), 1 + rng.below(30));
            let uri = format!("/index.php?title=Special:Search&search={}", rng.below(50));
            let ua = UAS[rng.below(3) as usize];
            let status = if rng.below(20) == 0 { 429 } else { 200 };
            let line = format!(
                r#"{{"level":"info","ts":{}.{:03},"logger":"http.log.access","msg":"handled request","request":{{"remote_ip":"{ip}","remote_port":"40000","client_ip":"{ip}","proto":"HTTP/2.0","method":"GET","host":"wiki.example","uri":"{uri}","headers":{{"User-Agent":["{ua}"]}}}},"bytes_read":0,"user_id":"","duration":0.{took:03},"size":5120,"status":{status}}}"#,
                done / 1000,
                done % 1000
            );
            (done, line)
        })
        .collect()
}

/// Combined-format lines (1-second stamps, many per second), in time order.
fn combined_requests(n: usize, rng: &mut Rng) -> Vec<(u64, String)> {
    let mut s: u64 = 0;
    (0..n)
        .map(|_| {
            s += u64::from(rng.below(3) == 0);
            let ip = format!("203.0.{}.{}", rng.below(3), 1 + rng.below(20));
            let ua = UAS[rng.below(3) as usize];
            let status = if rng.below(25) == 0 { 429 } else { 200 };
            let line = format!(
                "{ip} - - [25/Sep/2026:05:{:02}:{:02} +0000] \"GET /w/index.php?title=P{}&action=history HTTP/1.1\" {status} {} \"-\" \"{ua}\"",
                s / 60 % 60,
                s % 60,
                rng.below(100),
                100 + rng.below(5000),
            );
            (s, line)
        })
        .collect()
}

fn write_lines<'a>(path: &Path, lines: impl IntoIterator<Item = &'a str>) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    f.flush().unwrap();
}

/// Deals the lines into three files in a shuffled order (no file in time order).
fn write_shuffled(dir: &Path, names: [&str; 3], lines: &[(u64, String)], rng: &mut Rng) {
    let mut v: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for (k, name) in names.iter().enumerate() {
        write_lines(&dir.join(name), v.iter().skip(k).step_by(3).copied());
    }
}

/// The decisions CSV without its file and line columns.
fn decisions_without_origin(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("decisions written")
        .lines()
        .map(|l| {
            // file and line are the first two cells; file names here need no quotes.
            let mut cells = l.splitn(3, ',');
            let (_, _) = (cells.next(), cells.next());
            cells.next().unwrap_or("").to_string()
        })
        .collect()
}

const CANDIDATES: [&str; 8] = [
    "--limit",
    "20/s",
    "--limit",
    "5r/s,algo=nginx,burst=5,key=prefix",
    "--limit",
    "30/10s,key=ip,algo=token-bucket,burst=10",
    "--limit",
    "2/s,key=agent,scope=heavy",
];

#[test]
fn three_shuffled_files_spilled_give_the_decisions_of_one_ordered_file() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut rng = Rng(0x6d65_6d6f_7279);
    let mut lines = caddy_requests(4_000, &mut rng);
    // A log is written at completion.
    lines.sort();
    write_lines(&d.join("one.log"), lines.iter().map(|(_, l)| l.as_str()));
    let parts = ["c.log", "a.log", "b.log"];
    write_shuffled(d, parts, &lines, &mut rng);

    let mut one_args = CANDIDATES.to_vec();
    one_args.extend(["--capacity", "25/1s", "--format", "json"]);
    let mut parts_args = one_args.clone();
    one_args.extend(["--decisions", "one.csv", "one.log"]);
    parts_args.extend(["--decisions", "parts.csv"]);
    parts_args.extend(parts);

    let (one, err, code) = replay(d, None, None, &one_args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(runs_on_disk(&err), 0, "{err}");
    let (split, err, code) = replay(d, None, Some(1_000), &parts_args);
    assert_eq!(code, 0, "{err}");
    assert!(runs_on_disk(&err) >= 3, "{err}");

    // The same decisions in the same order (only the file and line differ).
    let a = decisions_without_origin(&d.join("one.csv"));
    let b = decisions_without_origin(&d.join("parts.csv"));
    assert_eq!(a.len(), b.len());
    assert!(a.len() > 4_000, "{}", a.len());
    assert!(a == b, "the decisions differ");
    // Every request is there once, from its own file.
    let parts_csv = std::fs::read_to_string(d.join("parts.csv")).unwrap();
    for p in parts {
        assert!(parts_csv.contains(&format!("\n{p},")), "{p}");
    }
    // The same report, but for where the rows came from (names and per-file counts).
    let mut j1: Value = serde_json::from_str(&one).unwrap();
    let mut j2: Value = serde_json::from_str(&split).unwrap();
    assert_ne!(j1["inputs"], j2["inputs"]);
    j1["inputs"] = Value::Null;
    j2["inputs"] = Value::Null;
    assert!(
        j1["candidates"][0]["refused"].as_u64().unwrap() > 0,
        "{j1:#}"
    );
    let (p1, p2) = (
        serde_json::to_string_pretty(&j1).unwrap(),
        serde_json::to_string_pretty(&j2).unwrap(),
    );
    let diff: Vec<(&str, &str)> = p1
        .lines()
        .zip(p2.lines())
        .filter(|(a, b)| a != b)
        .take(5)
        .collect();
    assert!(diff.is_empty(), "the reports differ: {diff:?}");
}

#[test]
fn spilling_changes_no_byte_of_any_output() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut rng = Rng(0x0bad_5eed);
    // 1-second stamps: long runs of rows share a second and are spread over it in log
    // order, across run boundaries; the shuffled files make ties everywhere.
    let lines = combined_requests(3_000, &mut rng);
    let parts = ["x.log", "z.log", "y.log"];
    write_shuffled(d, parts, &lines, &mut rng);
    for fmt in ["json", "text"] {
        let mut args = CANDIDATES.to_vec();
        args.extend(["--format", fmt, "--decisions"]);
        let mut whole = args.clone();
        whole.push("whole.csv");
        whole.extend(parts);
        let mut spilled = args.clone();
        spilled.push("spilled.csv");
        spilled.extend(parts);
        let (a, err, code) = replay(d, None, None, &whole);
        assert_eq!(code, 0, "{err}");
        assert_eq!(runs_on_disk(&err), 0);
        let sizes: &[usize] = if fmt == "json" { &[5, 700] } else { &[700] };
        for &run_rows in sizes {
            let (b, err, code) = replay(d, None, Some(run_rows), &spilled);
            assert_eq!(code, 0, "{err}");
            assert!(runs_on_disk(&err) > 0, "{err}");
            assert!(a == b, "{fmt} report differs with runs of {run_rows}");
            let (x, y) = (
                std::fs::read(d.join("whole.csv")).unwrap(),
                std::fs::read(d.join("spilled.csv")).unwrap(),
            );
            assert!(x == y, "decisions differ with runs of {run_rows}");
        }
        if fmt == "text" {
            assert!(a.contains("APPROXIMATE"), "{a}");
        }
    }
}

#[test]
fn spilling_from_the_dataset_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let data = d.join("data");
    let mut rng = Rng(0x0da7_a5e7);
    let mut lines = caddy_requests(2_500, &mut rng);
    lines.sort();
    let parts = ["b.log", "a.log", "c.log"];
    write_shuffled(d, parts, &lines, &mut rng);
    for p in parts {
        let (_, code) = ingest_json(&data, &[d.join(p).to_str().unwrap()]);
        assert_eq!(code, 0);
    }
    let mut args = CANDIDATES.to_vec();
    args.extend(["--format", "json", "--decisions"]);
    let mut whole = args.clone();
    whole.push("whole.csv");
    let mut spilled = args.clone();
    spilled.push("spilled.csv");
    let (a, err, code) = replay(d, Some(&data), None, &whole);
    assert_eq!(code, 0, "{err}");
    let (b, err, code) = replay(d, Some(&data), Some(300), &spilled);
    assert_eq!(code, 0, "{err}");
    assert!(runs_on_disk(&err) > 0, "{err}");
    assert!(a == b, "the report differs");
    let (x, y) = (
        std::fs::read(d.join("whole.csv")).unwrap(),
        std::fs::read(d.join("spilled.csv")).unwrap(),
    );
    assert!(x == y, "the decisions differ");
    let j: Value = serde_json::from_str(&a).unwrap();
    assert_eq!(j["requests"], 2_500);
}

#[test]
fn temporary_files_go_to_tmp_dir_and_are_gone_after() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut rng = Rng(7);
    let lines = caddy_requests(1_500, &mut rng);
    write_lines(&d.join("a.log"), lines.iter().map(|(_, l)| l.as_str()));
    let spill = d.join("spill");
    std::fs::create_dir(&spill).unwrap();
    let (_, err, code) = replay(
        d,
        None,
        Some(100),
        &["--limit", "20/s", "--tmp-dir", "spill", "a.log"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(runs_on_disk(&err) > 0, "{err}");
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0);
    // A --tmp-dir that is not a directory, or a bad run size, is a usage error.
    let (_, err, code) = replay(
        d,
        None,
        None,
        &["--limit", "20/s", "--tmp-dir", "missing", "a.log"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--tmp-dir missing"), "{err}");
    let (_, err, code) = replay(d, None, Some(0), &["--limit", "20/s", "a.log"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("LOGSCOPE_REPLAY_RUN_ROWS"), "{err}");
}
