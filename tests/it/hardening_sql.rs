//! `logscope sql` hardened, through the binary: generated queries nested too deeply (a
//! 10,000-term `1+1+…`, a 20,000-term `OR` chain) exit 2 with a message instead of
//! overflowing the stack, and the deepest allowed still runs; table functions
//! (`read_parquet('/any/path')`, `read_csv`, …) are refused however they are spelled, so
//! a Parquet file outside the dataset stays unread; a cross join stops at
//! `--memory-limit` with its message within seconds; and a bounded fuzz of queries
//! (token soup, deep nesting, long chains, mutated valid queries) never crashes it.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// The deepest expression `logscope sql` accepts (README; `MAX_DEPTH` in
/// src/store/sql.rs).
const MAX_DEPTH: usize = 200;

/// Runs `logscope sql` in `dir` (dataset `dir/data`) with `args`, the query on
/// standard input (long queries do not fit in one argument); returns stdout, stderr,
/// exit code and how long it took.
fn sql_stdin(dir: &Path, query: &str, args: &[&str]) -> (String, String, i32, Duration) {
    let t = Instant::now();
    let out = logscope(&dir.join("data"))
        .current_dir(dir)
        .arg("sql")
        .args(args)
        .arg("-")
        .write_stdin(query)
        .timeout(Duration::from_secs(120))
        .output()
        .expect("runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
        t.elapsed(),
    )
}

fn sum_of_ones(n: usize) -> String {
    format!("SELECT {} AS x", vec!["1"; n].join("+"))
}

fn or_chain(n: usize) -> String {
    let terms: Vec<String> = (0..n).map(|i| format!("status = {}", 100 + i)).collect();
    format!(
        "SELECT count(*) AS n FROM requests WHERE {}",
        terms.join(" OR ")
    )
}

fn assert_too_deep(what: &str, (out, err, code, _): (String, String, i32, Duration)) {
    assert_eq!(code, 2, "{what}: {err}");
    assert!(out.is_empty(), "{what}: {out}");
    assert!(
        err.contains("the query nests too deeply")
            && err.contains(&format!("more than {MAX_DEPTH} levels")),
        "{what}: {err}"
    );
    assert!(
        !err.contains("overflow") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn generated_chains_too_deep_exit_2_and_the_deepest_allowed_runs() {
    let dir = crate::sql::setup();
    let d = dir.path();
    assert_too_deep("1+1+… ×10000", sql_stdin(d, &sum_of_ones(10_000), &[]));
    assert_too_deep("OR ×20000", sql_stdin(d, &or_chain(20_000), &[]));
    // Far longer than any stack: refused as quickly, and freed without recursing.
    let (_, _, code, took) = sql_stdin(d, &or_chain(300_000), &[]);
    assert_eq!(code, 2);
    assert!(took < Duration::from_secs(60), "{took:?}");
    // A CASE nests one level per WHEN (polars builds it so).
    let whens: Vec<String> = (0..=MAX_DEPTH)
        .map(|i| format!("WHEN status = {i} THEN {i}"))
        .collect();
    let case = format!(
        "SELECT max(CASE {} ELSE 0 END) AS m FROM requests",
        whens.join(" ")
    );
    assert_too_deep("CASE", sql_stdin(d, &case, &[]));
    // One past the limit is refused; at the limit the query runs.
    assert_too_deep("limit + 1", sql_stdin(d, &sum_of_ones(MAX_DEPTH + 1), &[]));
    let (out, err, code, _) = sql_stdin(d, &sum_of_ones(MAX_DEPTH), &["--format", "csv"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("x\n{MAX_DEPTH}\n"));
    // An OR chain at the limit, pushed down into the dataset's scan.
    let (out, err, code, _) = sql_stdin(d, &or_chain(MAX_DEPTH - 2), &["--format", "csv"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "n\n12\n", "{err}");
    // The same question as an IN list, as the message suggests: no depth at all.
    let list: Vec<String> = (0..20_000).map(|i| i.to_string()).collect();
    let q = format!(
        "SELECT count(*) AS n FROM requests WHERE status IN ({})",
        list.join(", ")
    );
    let (out, err, code, _) = sql_stdin(d, &q, &["--format", "csv"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "n\n15\n");
}

#[test]
fn table_functions_cannot_read_files_outside_the_dataset() {
    let dir = crate::sql::setup();
    let d = dir.path();
    // A copy of the dataset's own part outside it: valid Parquet polars would read.
    let part = std::fs::read_dir(d.join("data/requests"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "parquet"))
        .expect("a part");
    let outside = tempfile::tempdir().unwrap();
    let copy = outside.path().join("secret.parquet");
    std::fs::copy(&part, &copy).unwrap();
    let f = std::fs::File::open(&copy).unwrap();
    let rows = {
        use polars::prelude::SerReader;
        polars::prelude::ParquetReader::new(f).num_rows().unwrap()
    };
    assert!(rows > 0);
    std::fs::write(outside.path().join("secret.csv"), "a,b\n1,2\n").unwrap();
    let p = copy.display().to_string();
    let csv = outside.path().join("secret.csv").display().to_string();
    for q in [
        format!("SELECT * FROM read_parquet('{p}')"),
        format!("SELECT count(*) FROM READ_PARQUET('{p}')"),
        format!("SELECT * FROM \"read_parquet\"('{p}')"),
        format!("SELECT * FROM /* requests */ read_parquet ( '{p}' ) AS r"),
        format!("SELECT * FROM -- a comment\n read_parquet('{p}')"),
        format!("SELECT * FROM requests r JOIN read_parquet('{p}') s ON r.line = s.line"),
        format!("SELECT * FROM requests WHERE path IN (SELECT path FROM read_parquet('{p}'))"),
        format!("WITH s AS (SELECT * FROM read_parquet('{p}')) SELECT * FROM s"),
        format!("SELECT * FROM requests, read_parquet('{p}')"),
        format!("SELECT * FROM read_csv('{csv}')"),
        format!("SELECT * FROM read_json('{csv}')"),
        format!("SELECT * FROM read_ipc('{p}')"),
        format!("SELECT * FROM read_ndjson('{csv}')"),
        "SELECT * FROM generate_series(1, 3)".to_string(),
        "SELECT * FROM TABLE(requests())".to_string(),
    ] {
        let (out, err, code) = crate::sql::run(d, &["sql", &q]);
        assert_eq!(code, 2, "{q}: {err}");
        assert!(out.is_empty(), "{q}: {out}");
        assert!(
            err.contains(
                "sql reads only the dataset's tables (requests, requests_x); table functions such as read_parquet are not allowed"
            ),
            "{q}: {err}"
        );
    }
    // The dataset's own tables still read as before.
    let (out, err, code) = crate::sql::run(
        d,
        &[
            "sql",
            "SELECT count(*) AS n FROM requests r JOIN requests_x x ON r.line = x.line AND r.file = x.file",
            "--format",
            "csv",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "n\n15\n");
}

#[test]
fn a_cross_join_stops_at_the_memory_limit() {
    let dir = crate::sql::setup();
    let d = dir.path();
    // 15^5 = 759,375 rows of every column: far more than 64 MiB.
    let q = "SELECT a.*, b.path AS b_path, c.user_agent AS c_agent, e.referer AS e_ref \
             FROM requests a CROSS JOIN requests b CROSS JOIN requests c \
             CROSS JOIN requests_x x CROSS JOIN requests e";
    let t = Instant::now();
    let out = logscope(&d.join("data"))
        .args(["sql", q, "--memory-limit", "64MiB", "--format", "csv"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let took = t.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty());
    assert_eq!(
        err.trim_end(),
        "logscope: error: sql: the query needs more than 64 MiB of memory (--memory-limit); \
         narrow it (a WHERE on month or ts, LIMIT, fewer joins) or raise --memory-limit",
    );
    assert!(took < Duration::from_secs(60), "{took:?}");
    // Written with --out: nothing replaced, nothing left beside it.
    let target = d.join("cross.txt");
    std::fs::write(&target, "before\n").unwrap();
    let out = logscope(&d.join("data"))
        .args(["sql", q, "--memory-limit", "64MiB", "--out"])
        .arg(&target)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "before\n");
    // A small query is well within the same limit, with the default and with `none`.
    for limit in [
        &["--memory-limit", "64MiB"][..],
        &[],
        &["--memory-limit", "none"],
    ] {
        let out = logscope(&d.join("data"))
            .args([
                "sql",
                "SELECT count(*) AS n FROM requests_x",
                "--format",
                "csv",
            ])
            .args(limit)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "n\n15\n",
            "{limit:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The size grammar: bad sizes are usage errors.
    for bad in ["0", "lots", "-1G", "5 parsecs", "1e9", ""] {
        let out = logscope(&d.join("data"))
            .args(["sql", "SELECT 1 AS x", &format!("--memory-limit={bad}")])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains("--memory-limit"), "{bad:?}: {err}");
    }
}

/// Runs the binary with the query on standard input, a 30 s timeout and a 2 GiB
/// address-space limit; returns what went wrong, if anything.
fn fuzz_run(dir: &Path, query: &str, args: &[&str], codes: &mut [u32; 3]) -> Option<String> {
    let bin = assert_cmd::cargo::cargo_bin("logscope");
    let qpath = dir.join("query.sql");
    let err_path = dir.join("stderr.txt");
    std::fs::write(&qpath, query).unwrap();
    let mut cmd = Command::new(bin);
    cmd.env_remove("LOGSCOPE_DATA")
        .env_remove("LOGSCOPE_CONFIG")
        .env("NO_COLOR", "1")
        .env_remove("RUST_BACKTRACE")
        .current_dir(dir)
        .arg("--data")
        .arg(dir.join("data"))
        .arg("sql")
        .args(args)
        .arg("-")
        .stdin(std::fs::File::open(&qpath).unwrap())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let status = crate::common::run_bounded(cmd, 30);
    let stderr =
        String::from_utf8_lossy(&std::fs::read(&err_path).unwrap_or_default()).into_owned();
    let tail: String = stderr
        .chars()
        .take(300)
        .collect::<String>()
        .replace('\n', " | ");
    let Some(status) = status else {
        return Some(format!("timed out after 30 s; stderr: {tail}"));
    };
    if stderr.contains("panicked at") || stderr.contains("overflow") {
        return Some(format!("exit {:?}: {tail}", status.code()));
    }
    match (status.code(), status.signal()) {
        (Some(c @ 0..=2), _) => {
            codes[c as usize] += 1;
            None
        }
        (Some(c), _) => Some(format!("exit {c}: {tail}")),
        (None, Some(sig)) => Some(format!("killed by signal {sig}: {tail}")),
        (None, None) => Some("no exit status".into()),
    }
}

/// SQL tokens the soup is made of: keywords, the tables and columns, operators,
/// literals of every kind, quotes left open, comments, table functions.
const TOKENS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP BY",
    "ORDER BY",
    "HAVING",
    "LIMIT",
    "OFFSET",
    "JOIN",
    "CROSS JOIN",
    "LEFT JOIN",
    "ON",
    "USING",
    "UNION",
    "UNION ALL",
    "EXCEPT",
    "INTERSECT",
    "WITH",
    "AS",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "AND",
    "OR",
    "NOT",
    "IN",
    "IS",
    "NULL",
    "BETWEEN",
    "LIKE",
    "ILIKE",
    "DISTINCT",
    "OVER",
    "PARTITION BY",
    "EXISTS",
    "requests",
    "requests_x",
    "status",
    "path",
    "ts",
    "month",
    "prefix",
    "agent",
    "heavy",
    "bytes",
    "user_agent",
    "count(*)",
    "sum(",
    "max(",
    "min(",
    "avg(",
    "date_trunc(",
    "regexp_like(",
    "strftime(",
    "coalesce(",
    "cast(",
    "::",
    "::int",
    "::text",
    "(",
    ")",
    "(",
    ")",
    ",",
    ",",
    "*",
    "+",
    "-",
    "/",
    "%",
    "||",
    "=",
    "<>",
    "<",
    ">=",
    ".",
    ";",
    "[",
    "]",
    "0",
    "1",
    "-1",
    "9223372036854775807",
    "1e308",
    "0.5",
    "'x'",
    "''",
    "'",
    "\"",
    "\"requests\"",
    "'2026-09-25 14:00:00'",
    "interval '1 day'",
    "/*",
    "*/",
    "--",
    "\n",
    "read_parquet('/etc/passwd')",
    "read_csv(",
    "TABLE(",
    "UNNEST([1,2])",
    "é",
    "\u{1b}[2J",
    "$1",
    "?",
    "@x",
    "`",
];

/// A valid query to mutate.
const VALID: &[&str] = &[
    "SELECT status, count(*) AS n FROM requests GROUP BY status ORDER BY status",
    "SELECT prefix, count(*) AS n FROM requests_x WHERE ts >= '2026-09-25 14:00:00' GROUP BY 1 ORDER BY 2 DESC LIMIT 5",
    "SELECT path, sum(bytes) OVER (PARTITION BY status ORDER BY ts) AS s FROM requests",
    "WITH h AS (SELECT * FROM requests_x WHERE heavy) SELECT agent, count(*) FROM h GROUP BY agent",
    "SELECT CASE WHEN status >= 500 THEN 'err' ELSE 'ok' END AS k, count(*) FROM requests GROUP BY 1",
    "SELECT a.path FROM requests a JOIN requests b ON a.line = b.line WHERE a.month = '2026-09'",
];

/// One fuzzed query.
fn fuzz_query(rng: &mut Rng) -> String {
    let pick = |rng: &mut Rng, v: &[&str]| v[rng.below(v.len() as u64) as usize].to_string();
    match rng.below(6) {
        // Token soup.
        0 | 1 => {
            let n = 1 + rng.below(40) as usize;
            let mut q = String::new();
            if rng.below(2) == 0 {
                q.push_str("SELECT ");
            }
            for _ in 0..n {
                q.push_str(&pick(rng, TOKENS));
                q.push(' ');
            }
            q
        }
        // Deep nesting: parentheses, subqueries, function calls.
        2 => {
            let depth = rng.below(120) as usize;
            let (open, close) = match rng.below(3) {
                0 => ("(", ")"),
                1 => ("(SELECT ", " AS c)"),
                _ => ("abs(", ")"),
            };
            let mut q = String::from("SELECT ");
            q.push_str(&open.repeat(depth));
            q.push('1');
            q.push_str(&close.repeat(depth - rng.below(depth as u64 + 1) as usize));
            q.push_str(" AS x FROM requests");
            q
        }
        // Long chains of one operator, around the limit or far beyond it.
        3 => {
            let n = match rng.below(3) {
                0 => MAX_DEPTH - 5 + rng.below(10) as usize,
                1 => 1 + rng.below(2_000) as usize,
                _ => 10_000 + rng.below(30_000) as usize,
            };
            let op = pick(
                rng,
                &[" + ", " OR ", " AND ", " || ", " * ", " = ", "::int"],
            );
            let term = pick(rng, &["1", "status", "status = 1", "path", "(1)", "NULL"]);
            let chain = std::iter::repeat_n(term.as_str(), n)
                .collect::<Vec<_>>()
                .join(&op);
            if rng.below(2) == 0 {
                format!("SELECT {chain} AS x FROM requests")
            } else {
                format!("SELECT count(*) FROM requests WHERE {chain}")
            }
        }
        // A valid query with a token inserted, or cut short.
        _ => {
            let v = pick(rng, VALID);
            let words: Vec<&str> = v.split(' ').collect();
            let at = rng.below(words.len() as u64 + 1) as usize;
            let mut q = words[..at].join(" ");
            if rng.below(3) > 0 {
                q.push(' ');
                q.push_str(&pick(rng, TOKENS));
                q.push(' ');
                q.push_str(&words[at..].join(" "));
            }
            q
        }
    }
}

/// About 80 runs (`LOGSCOPE_FUZZ_SCALE=N`: N×; `LOGSCOPE_FUZZ_SEED`: another
/// sequence), each bounded by 30 s and 2 GiB of address space: every run exits 0, 1 or
/// 2, never a signal (134: a stack overflow or an allocation failure), a panic or the
/// timeout. Failures are listed together.
#[test]
fn fuzzed_queries_never_crash_the_binary() {
    let dir = crate::sql::setup();
    let d = dir.path();
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    let scale = env("LOGSCOPE_FUZZ_SCALE", 1).max(1);
    let mut rng = Rng(env("LOGSCOPE_FUZZ_SEED", 0x5e1_ec7) | 1);
    let mut failures = Vec::new();
    let mut codes = [0u32; 3];
    let limits = ["256MiB", "1GiB", "64MiB", "none", "1.5G", "999999TiB"];
    let runs = 80 * scale;
    for _ in 0..runs {
        let q = fuzz_query(&mut rng);
        let limit = limits[rng.below(limits.len() as u64) as usize];
        let mut args = vec!["--memory-limit", limit];
        if rng.below(4) == 0 {
            args.extend(["--format", "json"]);
        }
        if let Some(why) = fuzz_run(d, &q, &args, &mut codes) {
            let shown: String = q.chars().take(200).collect();
            failures.push(format!(
                "logscope sql {} - <<< {shown:?} ({} bytes)\n    → {why}",
                args.join(" "),
                q.len()
            ));
        }
    }
    eprintln!("hardening_sql fuzz: {runs} runs; exit codes 0..=2: {codes:?}");
    assert!(
        failures.is_empty(),
        "{} of {runs} runs crashed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
