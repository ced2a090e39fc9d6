//! The dataset's schema as DuckDB, Spark and ClickHouse read it natively — every integer a plain
//! signed integer (no `decimal(20,0)`, no unsigned type), `ts` a timestamp with UTC, text
//! as strings, flags as booleans, and no partition column read as a string. The types
//! each engine sees are printed (the README's schema table comes from this output).
//! Without the engine: `SKIPPED: …` (a failure when `CI` is set).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::common::logscope;

/// Each column and the kind of type every engine must give it.
const SCHEMA: &[(&str, &str)] = &[
    ("ts", "timestamp"),
    ("ts_precision", "int32"),
    ("client", "text"),
    ("ip_hi", "int64"),
    ("ip_lo", "int64"),
    ("ident", "text"),
    ("user", "text"),
    ("method", "text"),
    ("path", "text"),
    ("query", "text"),
    ("protocol", "text"),
    ("request", "text"),
    ("status", "int32"),
    ("bytes", "int64"),
    ("referer", "text"),
    ("user_agent", "text"),
    ("host", "text"),
    ("request_time_us", "int64"),
    ("xff", "text"),
    ("has_cookie", "bool"),
    ("client_list", "bool"),
    ("file", "text"),
    ("line", "int64"),
];

fn accepted(engine: &str, kind: &str) -> &'static [&'static str] {
    match (engine, kind) {
        ("duckdb", "timestamp") => &["TIMESTAMP WITH TIME ZONE"],
        ("duckdb", "int32") => &["INTEGER"],
        ("duckdb", "int64") => &["BIGINT"],
        ("duckdb", "text") => &["VARCHAR"],
        ("duckdb", "bool") => &["BOOLEAN"],
        ("spark", "timestamp") => &["timestamp"],
        ("spark", "int32") => &["int"],
        ("spark", "int64") => &["bigint"],
        ("spark", "text") => &["string"],
        ("spark", "bool") => &["boolean"],
        // Parquet's optional columns are Nullable in ClickHouse.
        ("clickhouse", "timestamp") => &["Nullable(DateTime64(3, 'UTC'))"],
        ("clickhouse", "int32") => &["Nullable(Int32)"],
        ("clickhouse", "int64") => &["Nullable(Int64)"],
        ("clickhouse", "text") => &["Nullable(String)"],
        ("clickhouse", "bool") => &["Nullable(Bool)"],
        _ => &[],
    }
}

fn schema_of(engine: &str, glob: &str) -> Option<Vec<(String, String)>> {
    let py = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/engines/schema.py");
    let out = Command::new("python3")
        .arg(py)
        .arg(engine)
        .arg(glob)
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "schema.py {engine}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("schema json");
    if let Some(m) = v.get("missing") {
        println!("SKIPPED: {m} not installed");
        assert!(
            std::env::var_os("CI").is_none(),
            "{m} is required in CI (python3 -m pip install duckdb pyspark chdb; Java 17)"
        );
        return None;
    }
    Some(
        v["columns"]
            .as_array()
            .expect("columns")
            .iter()
            .map(|c| {
                (
                    c[0].as_str().unwrap_or_default().to_string(),
                    c[1].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect(),
    )
}

#[test]
fn duckdb_spark_and_clickhouse_read_plain_signed_integers_and_timestamps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let log = dir.path().join("access.log");
    std::fs::write(
        &log,
        "203.0.113.9 - alice [01/Jan/2026:00:00:00 +0000] \"GET /a?b=1 HTTP/1.1\" 200 12 \"-\" \"curl/8\"\n\
         2001:db8::1 - - [01/Feb/2026:00:00:00 +0000] \"GET /c HTTP/1.1\" 503 0 \"-\" \"-\"\n",
    )
    .expect("log");
    logscope(&data).arg("ingest").arg(&log).assert().success();
    let glob = format!("{}/requests/*.parquet", data.display());
    let mut table = Vec::new();
    let mut problems = Vec::new();
    for engine in ["duckdb", "spark", "clickhouse"] {
        let Some(cols) = schema_of(engine, &glob) else {
            continue;
        };
        let names: Vec<&str> = cols.iter().map(|(n, _)| n.as_str()).collect();
        let want: Vec<&str> = SCHEMA.iter().map(|(n, _)| *n).collect();
        if names != want {
            problems.push(format!("{engine}: columns {names:?}, expected {want:?}"));
        }
        for (name, ty) in &cols {
            let kind = SCHEMA
                .iter()
                .find(|(n, _)| n == name)
                .map_or("?", |(_, k)| *k);
            if !accepted(engine, kind).contains(&ty.as_str()) {
                problems.push(format!("{engine}: {name} is {ty}, not {kind}"));
            }
            table.push(format!("{engine}\t{name}\t{ty}"));
        }
    }
    println!("{}", table.join("\n"));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
