//! Every command's CSV is data — DuckDB (and spreadsheets) read its counts, shares and
//! times as numbers and timestamps, not text. Each CSV is loaded with DuckDB's own type
//! detection (`read_csv`, from Python); numeric columns must come out numeric, times as
//! timestamps with a zone, and no text column may hold a display number (`6,161`,
//! `4,207!`, `12.5%`) or a time without a year (`05-01 19:00`). Without the `duckdb`
//! Python module the test prints `SKIPPED: duckdb not installed` (and fails when `CI` is
//! set).

use std::path::Path;
use std::process::Command;

use super::common::{fixture, logscope};

/// DuckDB's column types and the distinct text values of each VARCHAR column of `csv`,
/// as `name<TAB>type<TAB>value|value|…` lines; `None` without duckdb.
fn duckdb_columns(csv: &Path) -> Option<Vec<(String, String, Vec<String>)>> {
    const SCRIPT: &str = r#"
import sys
try:
    import duckdb
except ImportError:
    print("NO-DUCKDB")
    sys.exit(0)
con = duckdb.connect()
rel = con.read_csv(sys.argv[1], header=True)
for name, ty in zip(rel.columns, rel.types):
    vals = []
    if str(ty) == "VARCHAR":
        q = 'SELECT DISTINCT "%s" FROM rel WHERE "%s" IS NOT NULL LIMIT 200' % (name.replace('"', '""'), name.replace('"', '""'))
        vals = [str(r[0]).replace("\t", " ").replace("\n", " ").replace("|", "/") for r in con.execute(q).fetchall()]
    print(name + "\t" + str(ty) + "\t" + "|".join(vals))
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(csv)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "duckdb failed on {}: {}\n{text}",
        csv.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    if text.trim() == "NO-DUCKDB" {
        return None;
    }
    Some(
        text.lines()
            .map(|l| {
                let mut f = l.splitn(3, '\t');
                let name = f.next().unwrap_or_default().to_string();
                let ty = f.next().unwrap_or_default().to_string();
                let vals = f
                    .next()
                    .unwrap_or_default()
                    .split('|')
                    .filter(|v| !v.is_empty())
                    .map(str::to_string)
                    .collect();
                (name, ty, vals)
            })
            .collect(),
    )
}

fn skipped() {
    println!("SKIPPED: duckdb not installed");
    assert!(
        std::env::var_os("CI").is_none(),
        "duckdb (python3 -m pip install duckdb) is required in CI"
    );
}

/// A display number or a yearless time: what a data column must not hold as text.
fn looks_like_display(v: &str) -> bool {
    let b = v.as_bytes();
    let digits_commas = !v.is_empty()
        && b[0].is_ascii_digit()
        && v.trim_end_matches(['%', '!', ' '])
            .bytes()
            .all(|c| c.is_ascii_digit() || c == b',' || c == b'.')
        && (v.contains(',') || v.ends_with('%') || v.ends_with('!'));
    let yearless = b.len() >= 11
        && b[2] == b'-'
        && b[5] == b' '
        && b[8] == b':'
        && b[..2].iter().all(u8::is_ascii_digit);
    digits_commas || yearless
}

fn is_numeric(ty: &str) -> bool {
    matches!(
        ty,
        "BIGINT" | "INTEGER" | "SMALLINT" | "TINYINT" | "UBIGINT" | "HUGEINT" | "DOUBLE" | "FLOAT"
    ) || ty.starts_with("DECIMAL")
}

/// Checks one CSV: the `numeric` columns are numbers, the `times` columns timestamps
/// with a zone, and no text column holds a display number or a yearless time.
fn check(name: &str, csv: &Path, numeric: &[&str], times: &[&str]) -> bool {
    let Some(cols) = duckdb_columns(csv) else {
        return false;
    };
    assert!(!cols.is_empty(), "{name}: no columns");
    for want in numeric {
        let (_, ty, vals) = cols
            .iter()
            .find(|c| c.0 == *want)
            .unwrap_or_else(|| panic!("{name}: no column {want} in {cols:?}"));
        assert!(is_numeric(ty), "{name}.{want} is {ty}: {vals:?}");
    }
    for want in times {
        let (_, ty, vals) = cols
            .iter()
            .find(|c| c.0 == *want)
            .unwrap_or_else(|| panic!("{name}: no column {want} in {cols:?}"));
        assert_eq!(ty, "TIMESTAMP WITH TIME ZONE", "{name}.{want}: {vals:?}");
    }
    for (col, ty, vals) in &cols {
        assert!(
            col.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{name}: column name {col:?} is not snake case"
        );
        if ty == "VARCHAR" {
            let bad: Vec<&String> = vals.iter().filter(|v| looks_like_display(v)).collect();
            assert!(bad.is_empty(), "{name}.{col} holds display text: {bad:?}");
        }
    }
    true
}

fn run_csv(dir: &Path, name: &str, args: &[&str]) -> std::path::PathBuf {
    let out = dir.join(format!("{name}.csv"));
    let res = logscope(&dir.join("data"))
        .current_dir(dir)
        .args(args)
        .args(["--format", "csv", "--out"])
        .arg(&out)
        .output()
        .expect("runs");
    assert!(
        res.status.success(),
        "{name} {args:?}: {}",
        String::from_utf8_lossy(&res.stderr)
    );
    out
}

#[test]
fn availability_and_replay_csv_load_as_typed_data() {
    let tmp = tempfile::tempdir().unwrap();
    let log = fixture("logs/elastic-apache.log");
    let log = log.to_str().unwrap();
    let avail = run_csv(
        tmp.path(),
        "availability",
        &["availability", "--by", "day", log],
    );
    if !check(
        "availability",
        &avail,
        &[
            "hours",
            "availability_pct",
            "probe_requests",
            "succeeded",
            "failed",
            "policy",
            "missing",
            "expected",
            "trouble_hours",
            "no_data_hours",
            "periods",
        ],
        &["start", "end"],
    ) {
        return skipped();
    }
    let decisions = tmp.path().join("decisions.csv");
    let replay = run_csv(
        tmp.path(),
        "replay",
        &[
            "replay",
            "--limit",
            "20/1m,key=ip",
            "--limit",
            "5r/s,algo=nginx,burst=10,key=prefix",
            "--capacity",
            "100/10m",
            "--decisions",
            decisions.to_str().unwrap(),
            log,
        ],
    );
    check(
        "replay",
        &replay,
        &[
            "requests_covered",
            "in_scope",
            "admitted",
            "admitted_share",
            "delayed",
            "refused",
            "refused_share",
            "exempt",
            "out_of_scope",
            "delay_ms_mean",
            "delay_ms_max",
            "capacity",
            "peak_sliding_10m_no_limit",
            "peak_sliding_10m_limited",
            "aligned_10m_windows_over_no_limit",
            "aligned_10m_windows",
        ],
        &["first_refusal", "last_refusal"],
    );
    check(
        "decisions",
        &decisions,
        &["line", "delay_ms", "status"],
        &["arrival"],
    );
}

#[test]
fn every_other_command_csv_loads_as_typed_data() {
    let tmp = tempfile::tempdir().unwrap();
    let log = fixture("logs/elastic-apache.log");
    let log = log.to_str().unwrap();
    let mut commands: Vec<(&str, Vec<&str>)> = vec![
        ("heavy", vec!["heavy", "--by", "1h", log]),
        ("concentration", vec!["concentration", log]),
        ("agents", vec!["agents", log]),
    ];
    // `top` is checked when the binary has it.
    let has_top = logscope(&tmp.path().join("data"))
        .args(["top", "--help"])
        .output()
        .is_ok_and(|o| o.status.success());
    if has_top {
        commands.push(("top", vec!["top", "--by", "path", log]));
    }
    for (name, args) in commands {
        let csv = run_csv(tmp.path(), name, &args);
        if !check(name, &csv, &[], &[]) {
            return skipped();
        }
    }
}
