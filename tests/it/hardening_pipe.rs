//! Regression tests: a stream cut in the middle of a line (an interrupted `ssh`, `zcat`
//! or producer) holds that line back exactly as a plain file does, and the whole stream
//! sent again adds exactly the missing lines.

use std::path::Path;

use crate::common::{logscope, read_dataset};

/// `n` combined lines, each with its own path and user agent (so a line cut short and
/// stored would show: a NULL or shortened agent, a lost request).
fn log(n: usize) -> Vec<u8> {
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&format!(
            "198.51.100.{} - - [01/May/2024:10:{:02}:{:02} +0000] \"GET /page/{i} HTTP/1.1\" 200 {} \"-\" \"agent-{i} (X11; Linux x86_64)\"\n",
            i % 200 + 1,
            (i / 60) % 60,
            i % 60,
            100 + i
        ));
    }
    s.into_bytes()
}

/// The byte offset of the start of line `n` (1-based).
fn line_start(bytes: &[u8], n: usize) -> usize {
    if n == 1 {
        return 0;
    }
    bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(n - 2)
        .map(|(i, _)| i + 1)
        .unwrap()
}

fn ingest_stdin(data: &Path, bytes: &[u8], extra: &[&str]) -> serde_json::Value {
    let out = logscope(data)
        .args(["ingest", "--json"])
        .args(extra)
        .arg("-")
        .write_stdin(bytes.to_vec())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every stored (path, agent) pair must be one of the log's, each once.
fn assert_rows_exact(data: &Path, n: usize) {
    let df = read_dataset(data);
    assert_eq!(df.height(), n, "rows stored");
    let paths = df.column("path").unwrap().str().unwrap().clone();
    let agents = df.column("user_agent").unwrap().str().unwrap().clone();
    let lines = df
        .column("line")
        .unwrap()
        .cast(&polars::prelude::DataType::UInt64)
        .unwrap();
    let lines = lines.u64().unwrap().clone();
    for r in 0..df.height() {
        let line = lines.get(r).unwrap() as usize;
        assert_eq!(
            paths.get(r),
            Some(format!("/page/{}", line - 1).as_str()),
            "row {r}"
        );
        assert_eq!(
            agents.get(r),
            Some(format!("agent-{} (X11; Linux x86_64)", line - 1).as_str()),
            "row {r}"
        );
    }
}

#[test]
fn stdin_cut_mid_line_holds_the_line_back_and_the_full_stream_adds_the_rest() {
    let bytes = log(20_000);
    // Cut inside line 501 at several places: after its address, inside the request,
    // inside the agent (where the fragment parses as `common`), one byte before its end.
    let start = line_start(&bytes, 501);
    let end = line_start(&bytes, 502) - 1;
    for cut in [start + 5, start + 60, end - 12, end] {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        let first = ingest_stdin(&data, &bytes[..cut], &[]);
        assert_eq!(first["added"], 500, "cut at {cut}: {first}");
        assert_eq!(first["bad"], 0, "cut at {cut}: {first}");
        assert_eq!(
            first["files"][0]["held_back_bytes"],
            (cut - start) as u64,
            "cut at {cut}: {first}"
        );
        let second = ingest_stdin(&data, &bytes, &[]);
        assert_eq!(second["added"], 19_500, "cut at {cut}: {second}");
        assert_rows_exact(&data, 20_000);
        // And once more: nothing twice.
        let third = ingest_stdin(&data, &bytes, &[]);
        assert_eq!(third["added"], 0, "{third}");
    }
}

#[test]
fn stdin_final_line_take_stores_an_unterminated_last_line() {
    let mut bytes = log(10);
    bytes.pop(); // the last newline
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let s = ingest_stdin(&data, &bytes, &["--final-line", "take"]);
    assert_eq!(s["added"], 10, "{s}");
    assert_rows_exact(&data, 10);
}

#[test]
fn stdin_cut_mid_line_says_so_on_stderr() {
    let bytes = log(3);
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let out = logscope(&data)
        .args(["ingest", "-"])
        .write_stdin(bytes[..bytes.len() - 20].to_vec())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("<stdin>: its last line has no newline yet"),
        "{stderr}"
    );
    // Reports reading a stream take it as it is (nothing is stored, nothing resumes).
    let out = logscope(&data)
        .args(["top", "--by", "path", "--format", "json", "-"])
        .write_stdin(bytes[..bytes.len() - 20].to_vec())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
