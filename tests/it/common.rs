//! Shared helpers for the integration tests: running the binary, fixtures, reading
//! the dataset back.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use polars::prelude::*;

/// The `logscope` binary with a clean environment for `data`.
pub fn logscope(data: &Path) -> Command {
    let mut c = Command::cargo_bin("logscope").expect("binary built");
    // Nothing of the developer's own setup may change a result: no dataset, rules file,
    // terminal width or colour from the environment.
    c.env_remove("LOGSCOPE_DATA")
        .env_remove("LOGSCOPE_CONFIG")
        .env_remove("COLUMNS")
        .env("XDG_CONFIG_HOME", "/nonexistent/logscope-test-config")
        .env("XDG_DATA_HOME", "/nonexistent/logscope-test-data")
        .env_remove("LOGSCOPE_ASN_DB")
        .env("NO_COLOR", "1")
        .arg("--data")
        .arg(data);
    c
}

/// A fixture path.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

/// `../shared/data/real/<rel>`: a real log whose licence does not allow a copy in
/// fixtures/ (see fixtures/README.md). Only for tests marked
/// `#[ignore = "needs ../shared/data/real: …"]`; panics, never skips, when the team's
/// research collection is not beside the checkout.
pub fn shared_real(rel: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/real")
        .join(rel);
    assert!(
        p.exists(),
        "{} is absent: this ignored test needs the team's research collection beside the checkout",
        p.display()
    );
    p
}

/// Runs `ingest --json ARGS` and returns the parsed summary and the exit code.
pub fn ingest_json(data: &Path, args: &[&str]) -> (serde_json::Value, i32) {
    let out = logscope(data)
        .arg("ingest")
        .arg("--json")
        .args(args)
        .output()
        .expect("runs");
    let code = out.status.code().unwrap_or(-1);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "ingest --json printed no JSON ({e}); stdout: {stdout}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (v, code)
}

/// Every committed row of the dataset, sorted by (file, line), as a frame.
pub fn read_dataset(data: &Path) -> DataFrame {
    let table = data.join("requests");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(table.join("_manifest.json")).expect("manifest"))
            .expect("manifest json");
    let mut frames = Vec::new();
    for p in manifest["parts"].as_array().expect("parts") {
        let path = table.join(p["file"].as_str().expect("file"));
        let f = std::fs::File::open(&path).expect("part file");
        frames.push(ParquetReader::new(f).finish().expect("readable parquet"));
    }
    let mut df = frames
        .into_iter()
        .reduce(|mut a, b| {
            a.vstack_mut_owned(b).expect("same schema");
            a
        })
        .expect("at least one part");
    df = df
        .sort(["file", "line"], SortMultipleOptions::default())
        .expect("sortable");
    df
}

/// Rows a reader that globs `DATA/requests/*.parquet` (as README tells DuckDB users)
/// sees, without the manifest: the sum of the footers' row counts.
pub fn glob_rows(data: &Path) -> u64 {
    let mut n = 0;
    if let Ok(rd) = std::fs::read_dir(data.join("requests")) {
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "parquet") {
                let f = std::fs::File::open(&p).expect("part opens");
                n += ParquetReader::new(f).num_rows().expect("readable footer") as u64;
            }
        }
    }
    n
}

/// All files under `dir`, relative, sorted.
pub fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(base: &Path, d: &Path, out: &mut Vec<String>) {
        if let Ok(rd) = std::fs::read_dir(d) {
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(base, &p, out);
                } else {
                    out.push(p.strip_prefix(base).unwrap().display().to_string());
                }
            }
        }
    }
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Runs `c`, which must succeed (its stderr is the failure message), and parses its
/// standard output as JSON.
pub fn ok_json(c: &mut Command) -> serde_json::Value {
    serde_json::from_str(&ok_stdout(c)).expect("JSON on stdout")
}

/// A small deterministic xorshift generator for the tests' synthetic logs.
pub struct Rng(pub u64);

impl Rng {
    /// The next pseudo-random number.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Runs a report command that must succeed and returns its JSON without the envelope's
/// `inputs` (where the rows came from), so a report over the dataset and one over the
/// log files can be compared whole.
pub fn report_json_without_origin(mut c: Command, what: &str) -> serde_json::Value {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let o = v.as_object_mut().unwrap();
    o.remove("inputs");
    v
}

/// Runs `cmd` with at most 2 GiB of address space and `secs` seconds: its exit status,
/// or `None` when it was killed at the deadline (a hang or a runaway is a failure the
/// caller names, never a stuck test run).
pub fn run_bounded(mut cmd: std::process::Command, secs: u64) -> Option<std::process::ExitStatus> {
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("spawn logscope");
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Splits one CSV line (RFC 4180 quotes).
pub fn csv_fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                out.last_mut().unwrap().push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(String::new()),
            _ => out.last_mut().unwrap().push(c),
        }
    }
    out
}

/// Runs `logscope ARGS` in `dir` without a dataset: stdout, stderr, exit code.
pub fn run_in(dir: &Path, args: &[&str]) -> (String, String, i32) {
    let out = logscope(&dir.join("no-dataset"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// Runs `c`, asserts it succeeded (its stderr as the message), and returns its stdout.
pub fn ok_stdout(c: &mut Command) -> String {
    let out = c.output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
