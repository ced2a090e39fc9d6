//! `logscope sql` through the binary: the README's example questions on a small
//! dataset, each figure cross-checked against the matching report's JSON; partition
//! pruning (`--explain`); every format; bad SQL (exit 2); an empty dataset.

use std::path::Path;

use serde_json::Value;

use crate::common::*;

const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
const GPTBOT: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const CURL: &str = "curl/8.5.0";

/// Fifteen requests: thirteen on 2026-09-25 (ten between 14:00 and 15:00), two in
/// August; IPv4 and IPv6 clients; heavy MediaWiki requests; users alice, bob, carol.
fn log() -> String {
    let rows: [(&str, &str, &str, &str, u16, u32, &str); 15] = [
        (
            "203.0.113.7",
            "alice",
            "25/Sep/2026:14:00:05",
            "/index.php?search=foo",
            200,
            1000,
            CHROME,
        ),
        (
            "203.0.113.8",
            "-",
            "25/Sep/2026:14:05:00",
            "/index.php?title=A&diff=5",
            200,
            2000,
            GPTBOT,
        ),
        (
            "203.0.113.9",
            "-",
            "25/Sep/2026:14:10:00",
            "/wiki/Main",
            200,
            300,
            CHROME,
        ),
        (
            "198.51.100.1",
            "bob",
            "25/Sep/2026:14:15:00",
            "/wiki/Main",
            200,
            300,
            CURL,
        ),
        (
            "198.51.100.1",
            "bob",
            "25/Sep/2026:14:20:00",
            "/wiki/Other",
            404,
            100,
            CURL,
        ),
        (
            "2001:db8:1:2::5",
            "-",
            "25/Sep/2026:14:25:00",
            "/index.php?title=B&action=history",
            200,
            5000,
            GOOGLEBOT,
        ),
        (
            "2001:db8:1:3::6",
            "-",
            "25/Sep/2026:14:30:00",
            "/wiki/Main",
            500,
            0,
            GOOGLEBOT,
        ),
        (
            "2001:db8:2::1",
            "alice",
            "25/Sep/2026:14:35:00",
            "/wiki/Other",
            200,
            300,
            CHROME,
        ),
        (
            "203.0.113.7",
            "alice",
            "25/Sep/2026:14:40:00",
            "/wiki/Main",
            304,
            0,
            CHROME,
        ),
        (
            "203.0.113.7",
            "alice",
            "25/Sep/2026:14:50:00",
            "/wiki/Main",
            200,
            300,
            CHROME,
        ),
        (
            "203.0.113.7",
            "-",
            "25/Sep/2026:15:10:00",
            "/index.php?search=bar",
            200,
            1000,
            CURL,
        ),
        (
            "192.0.2.1",
            "-",
            "25/Sep/2026:15:20:00",
            "/wiki/Main",
            200,
            300,
            CHROME,
        ),
        (
            "192.0.2.3",
            "-",
            "25/Sep/2026:15:30:00",
            "/x\\y",
            200,
            10,
            "evil\x1b[2J\x07<img src=x>",
        ),
        (
            "192.0.2.1",
            "-",
            "31/Aug/2026:23:00:00",
            "/wiki/Main",
            200,
            300,
            CHROME,
        ),
        (
            "192.0.2.2",
            "carol",
            "31/Aug/2026:23:30:00",
            "/index.php?oldid=3",
            200,
            4000,
            GPTBOT,
        ),
    ];
    let mut s = String::new();
    for (ip, user, t, target, status, bytes, ua) in rows {
        let referer = if ua.starts_with("evil") {
            "=HYPERLINK(1)"
        } else {
            "-"
        };
        s.push_str(&format!(
            "{ip} - {user} [{t} +0000] \"GET {target} HTTP/1.1\" {status} {bytes} \"{referer}\" \"{ua}\"\n"
        ));
    }
    s
}

/// A tempdir with `access.log` ingested into `data/`.
pub(crate) fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("access.log"), log()).unwrap();
    let (v, code) = ingest_json(
        &dir.path().join("data"),
        &[dir.path().join("access.log").to_str().unwrap()],
    );
    assert_eq!(code, 0, "{v}");
    dir
}

pub(crate) fn run(dir: &Path, args: &[&str]) -> (String, String, i32) {
    let out = logscope(&dir.join("data"))
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

fn ok(dir: &Path, args: &[&str]) -> String {
    let (out, err, code) = run(dir, args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

fn json(dir: &Path, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    let out = ok(dir, &a);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {out}"))
}

/// `sql QUERY --format json`: the rows as (first column as text, second as u64).
fn pairs(dir: &Path, query: &str, extra: &[&str]) -> Vec<(String, u64)> {
    let mut a = vec!["sql", query];
    a.extend(extra);
    let v = json(dir, &a);
    let k0 = v["columns"][0]["name"].as_str().unwrap().to_string();
    let k1 = v["columns"][1]["name"].as_str().unwrap().to_string();
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let k = &r[&k0];
            let k = k.as_str().map_or_else(|| k.to_string(), str::to_string);
            (k, r[&k1].as_u64().unwrap())
        })
        .collect()
}

/// A report's JSON `rows` (top) as (value, requests), sorted by value.
fn top_pairs(dir: &Path, args: &[&str]) -> Vec<(String, u64)> {
    let mut a = vec!["top", "--top", "0"];
    a.extend(args);
    let v = json(dir, &a);
    let mut out: Vec<(String, u64)> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let k = &r["value"];
            (
                k.as_str().map_or_else(|| k.to_string(), str::to_string),
                r["requests"].as_u64().unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

fn sorted(mut v: Vec<(String, u64)>) -> Vec<(String, u64)> {
    v.sort();
    v
}

const HOUR: &str = "ts >= '2026-09-25 14:00:00' AND ts < '2026-09-25 15:00:00'";

#[test]
fn requests_per_status_in_an_hour() {
    let dir = setup();
    let d = dir.path();
    let q = format!(
        "SELECT status, count(*) AS requests FROM requests WHERE {HOUR} GROUP BY status ORDER BY status"
    );
    let got = pairs(d, &q, &[]);
    let want: Vec<(String, u64)> = [("200", 7), ("304", 1), ("404", 1), ("500", 1)]
        .iter()
        .map(|(k, n)| (k.to_string(), *n))
        .collect();
    assert_eq!(got, want);
    let hour = ["--since", "2026-09-25T14:00", "--until", "2026-09-25T15:00"];
    let mut report = vec!["--by", "status"];
    report.extend(hour);
    assert_eq!(sorted(got), top_pairs(d, &report));
}

#[test]
fn top_networks_in_an_hour_ipv4_and_ipv6() {
    let dir = setup();
    let d = dir.path();
    let q = format!(
        "SELECT prefix, count(*) AS requests FROM requests_x WHERE {HOUR} \
         GROUP BY prefix ORDER BY requests DESC, prefix"
    );
    let got = pairs(d, &q, &[]);
    let want: Vec<(String, u64)> = [
        ("203.0.113.0/24", 5),
        ("198.51.100.0/24", 2),
        ("2001:db8:1::/48", 2),
        ("2001:db8:2::/48", 1),
    ]
    .iter()
    .map(|(k, n)| (k.to_string(), *n))
    .collect();
    assert_eq!(got, want);
    let report = top_pairs(
        d,
        &[
            "--by",
            "prefix",
            "--since",
            "2026-09-25T14:00",
            "--until",
            "2026-09-25T15:00",
        ],
    );
    assert_eq!(sorted(got), report);
    // Other prefix lengths: the same flags as the reports.
    let q =
        format!("SELECT prefix, count(*) AS n FROM requests_x WHERE {HOUR} GROUP BY 1 ORDER BY 1");
    let got = pairs(d, &q, &["--prefix-v4", "16", "--prefix-v6", "32"]);
    let report = top_pairs(
        d,
        &[
            "--by",
            "prefix",
            "--prefix-v4",
            "16",
            "--prefix-v6",
            "32",
            "--since",
            "2026-09-25T14:00",
            "--until",
            "2026-09-25T15:00",
        ],
    );
    assert_eq!(sorted(got.clone()), report);
    assert!(got.contains(&("2001:db8::/32".to_string(), 3)), "{got:?}");
}

#[test]
fn heavy_requests_by_agent_family() {
    let dir = setup();
    let d = dir.path();
    let q = "SELECT agent_family, count(*) AS heavy FROM requests_x WHERE heavy \
             GROUP BY agent_family ORDER BY heavy DESC, agent_family";
    let got = pairs(d, q, &[]);
    let agents = json(d, &["agents", "--heavy"]);
    let mut report: Vec<(String, u64)> = agents["families"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["selected"].as_u64().unwrap() > 0)
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["selected"].as_u64().unwrap(),
            )
        })
        .collect();
    report.sort();
    assert_eq!(sorted(got.clone()), report, "{agents}");
    assert_eq!(got.iter().map(|(_, n)| n).sum::<u64>(), 5);
    assert_eq!(got[0].1, 2, "{got:?}");
    // The classes, and --rules as the reports take it.
    let classes = pairs(
        d,
        "SELECT heavy_class, count(*) FROM requests_x WHERE heavy GROUP BY 1 ORDER BY 1",
        &[],
    );
    let want: Vec<(String, u64)> = [("diff", 1), ("history", 1), ("oldid", 1), ("search", 2)]
        .iter()
        .map(|(k, n)| (k.to_string(), *n))
        .collect();
    assert_eq!(classes, want);
    std::fs::write(
        d.join("rules.toml"),
        "[heavy]\nmediawiki = false\n[[heavy.class]]\nname = \"other\"\npath = '^/wiki/Other$'\n",
    )
    .unwrap();
    let with_rules = pairs(
        d,
        "SELECT heavy_class, count(*) FROM requests_x WHERE heavy GROUP BY 1",
        &["--rules", "rules.toml"],
    );
    assert_eq!(with_rules, vec![("other".to_string(), 2)]);
    let heavy = json(d, &["agents", "--heavy", "--rules", "rules.toml"]);
    assert_eq!(heavy["selected"].as_u64(), Some(2), "{heavy}");
}

#[test]
fn top_paths_of_identified_users() {
    let dir = setup();
    let d = dir.path();
    let q = "SELECT path, count(*) AS requests FROM requests_x WHERE identity = 'identified' \
             GROUP BY path ORDER BY requests DESC, path";
    let got = pairs(d, q, &[]);
    let want: Vec<(String, u64)> = [("/wiki/Main", 3), ("/index.php", 2), ("/wiki/Other", 2)]
        .iter()
        .map(|(k, n)| (k.to_string(), *n))
        .collect();
    assert_eq!(got, want);
    // Cross-check: with `anonymous_without_user`, everybody else is anonymous, so the
    // identified are all requests minus `top --anonymous`.
    std::fs::write(
        d.join("auth.toml"),
        "[identity]\nanonymous_without_user = true\n",
    )
    .unwrap();
    let all = top_pairs(d, &["--by", "path", "--rules", "auth.toml"]);
    let anon = top_pairs(d, &["--by", "path", "--anonymous", "--rules", "auth.toml"]);
    let mut identified: Vec<(String, u64)> = all
        .iter()
        .map(|(p, n)| {
            let a = anon.iter().find(|(q, _)| q == p).map_or(0, |(_, n)| *n);
            (p.clone(), n - a)
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    identified.sort();
    assert_eq!(sorted(got), identified);
    let anon_sql = pairs(
        d,
        "SELECT identity, count(*) FROM requests_x GROUP BY 1 ORDER BY 1",
        &["--rules", "auth.toml"],
    );
    assert_eq!(
        anon_sql,
        vec![("anonymous".to_string(), 8), ("identified".to_string(), 7)]
    );
}

#[test]
fn month_and_time_filters_open_only_matching_parts() {
    let dir = setup();
    let d = dir.path();
    let (out, err, code) = run(
        d,
        &[
            "sql",
            "SELECT count(*) AS n FROM requests WHERE month = '2026-08'",
            "--explain",
            "--format",
            "csv",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "n\n2\n");
    assert!(err.contains("opened 1 of 2 parts (2026-08)"), "{err}");
    let (out, err, code) = run(
        d,
        &[
            "sql",
            &format!("SELECT count(*) AS n FROM requests_x WHERE {HOUR} AND heavy"),
            "--explain",
            "--format",
            "csv",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "n\n3\n");
    assert!(err.contains("opened 1 of 2 parts (2026-09)"), "{err}");
    let (_, err, _) = run(d, &["sql", "SELECT count(*) FROM requests", "--explain"]);
    assert!(err.contains("opened 2 of 2 parts"), "{err}");
    let months = pairs(
        d,
        "SELECT month, count(*) FROM requests GROUP BY 1 ORDER BY 1",
        &[],
    );
    assert_eq!(
        months,
        vec![("2026-08".to_string(), 2), ("2026-09".to_string(), 13)]
    );
}

#[test]
fn every_format_escapes_and_types() {
    let dir = setup();
    let d = dir.path();
    let q = "SELECT path, user_agent, referer, status, bytes, ts, heavy FROM requests_x \
             WHERE client = '192.0.2.3'";
    let text = ok(d, &["sql", q]);
    assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
    assert!(text.starts_with("1 row\n"), "{text}");
    // Text as logged: a backslash is itself.
    assert!(
        text.contains("/x\\y") && !text.contains("/x\\\\y"),
        "{text}"
    );
    let md = ok(d, &["sql", q, "--format", "md"]);
    assert!(
        !md.contains('\x1b') && !md.replace("\\<", "").contains("<img"),
        "{md}"
    );
    let html = ok(d, &["sql", q, "--format", "html"]);
    assert!(!html.contains("<img") && !html.contains('\x1b'), "{html}");
    let csv = ok(d, &["sql", q, "--format", "csv"]);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("path,user_agent,referer,status,bytes,ts,heavy")
    );
    let row = lines.next().unwrap();
    assert!(!row.contains('\x1b'), "{row:?}");
    assert!(row.contains("'=HYPERLINK(1)"), "{row}");
    assert!(
        row.ends_with(",200,10,2026-09-25T15:30:00.000Z,false"),
        "{row}"
    );
    let v = json(d, &["sql", q]);
    let r = &v["rows"][0];
    assert_eq!(r["status"], 200);
    assert_eq!(r["bytes"], 10);
    assert_eq!(r["heavy"], false);
    assert_eq!(r["ts"], "2026-09-25T15:30:00.000Z");
    assert_eq!(r["user_agent"], "evil\x1b[2J\x07<img src=x>");
    assert_eq!(v["row_count"], 1);
    assert_eq!(v["columns"][3]["type"], "int32");
    // Column order is the query's.
    let raw = ok(d, &["sql", q, "--format", "json"]);
    let row = &raw[raw.find("\"rows\"").unwrap()..];
    assert!(
        row.find("\"path\"").unwrap() < row.find("\"user_agent\"").unwrap(),
        "{raw}"
    );
    // NULL: CSV empty, JSON null, text NULL.
    let q = "SELECT bot_kind, count(*) AS n FROM requests_x WHERE device = 'desktop' GROUP BY 1";
    assert_eq!(ok(d, &["sql", q, "--format", "csv"]), "bot_kind,n\n,7\n");
    assert!(ok(d, &["sql", q]).contains("NULL"));
    assert_eq!(json(d, &["sql", q])["rows"][0]["bot_kind"], Value::Null);
}

#[test]
fn bad_sql_exits_2_with_an_example() {
    let dir = setup();
    let d = dir.path();
    for q in [
        "SELEC status FROM requests",
        "SELECT nope FROM requests",
        "SELECT * FROM nowhere",
        "",
    ] {
        let (out, err, code) = run(d, &["sql", q]);
        assert_eq!(code, 2, "{q}: {err}");
        assert!(out.is_empty(), "{q}: {out}");
        assert!(err.contains("e.g. logscope sql 'SELECT"), "{q}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // The query from standard input.
    let out = logscope(&d.join("data"))
        .args(["sql", "-", "--format", "csv"])
        .write_stdin("SELECT count(*) AS n FROM requests")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "n\n15\n");
}

#[test]
fn a_query_on_an_empty_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // No dataset at all: the reports' message.
    let (_, err, code) = run(d, &["sql", "SELECT count(*) FROM requests"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no dataset here yet"), "{err}");
    // A dataset whose one ingest stored no rows.
    std::fs::write(d.join("empty.log"), "").unwrap();
    let _ = ingest_json(&d.join("data"), &[d.join("empty.log").to_str().unwrap()]);
    if !d.join("data/requests").exists() {
        // An empty ingest commits nothing; make the dataset exist with one row in
        // August, then ask for September.
        std::fs::write(
            d.join("one.log"),
            format!("192.0.2.1 - - [31/Aug/2026:23:00:00 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"{CURL}\"\n"),
        )
        .unwrap();
        let (_, code) = ingest_json(&d.join("data"), &[d.join("one.log").to_str().unwrap()]);
        assert_eq!(code, 0);
    }
    let csv = ok(
        d,
        &[
            "sql",
            "SELECT count(*) AS n FROM requests_x WHERE month = '2026-09'",
            "--format",
            "csv",
        ],
    );
    assert_eq!(csv, "n\n0\n");
    let v = json(
        d,
        &[
            "sql",
            "SELECT prefix, device FROM requests_x WHERE month = '2026-09'",
        ],
    );
    assert_eq!(v["row_count"], 0);
    assert_eq!(v["columns"][0]["name"], "prefix");
    let text = ok(
        d,
        &["sql", "SELECT path FROM requests WHERE month = '2026-09'"],
    );
    assert!(text.starts_with("0 rows"), "{text}");
}

/// An unnamed computed column is named by its own text, as DuckDB names it, not
/// polars' `len` for `count(*)` or the column's name for `count(DISTINCT client)`.
#[test]
fn computed_columns_are_named_by_their_text() {
    let dir = setup();
    let d = dir.path();
    let out = ok(
        d,
        &[
            "sql",
            "SELECT count(*), count(DISTINCT client), max(status) AS s FROM requests",
            "--format",
            "csv",
        ],
    );
    let header = out.lines().next().unwrap();
    assert_eq!(header, "count(*),count(DISTINCT client),s", "{out}");
    // A named column keeps its name; a plain column its own.
    let out = ok(
        d,
        &[
            "sql",
            "SELECT status, count(*) AS n FROM requests GROUP BY status LIMIT 1",
            "--format",
            "csv",
        ],
    );
    assert_eq!(out.lines().next().unwrap(), "status,n");
}

/// DuckDB's time functions: `date_trunc` to each unit (weeks from Monday, as the
/// reports' buckets), `epoch_ms`; the counts per hour agree with `timeline`'s.
#[test]
fn date_trunc_and_epoch_as_duckdb_spells_them() {
    let dir = setup();
    let d = dir.path();
    let per_hour = pairs(
        d,
        "SELECT strftime(date_trunc('hour', ts), '%Y-%m-%dT%H') AS hour, count(*) AS n \
         FROM requests GROUP BY 1 ORDER BY 1",
        &[],
    );
    let total: u64 = per_hour.iter().map(|(_, n)| n).sum();
    assert_eq!(total, 15, "{per_hour:?}");
    assert!(
        per_hour.contains(&("2026-09-25T14".to_string(), 10)),
        "{per_hour:?}"
    );
    // 2026-09-25 is a Friday: its ISO week starts on Monday 2026-09-21.
    let v = json(
        d,
        &[
            "sql",
            "SELECT date_trunc('week', ts) AS w, date_trunc('Month', ts) AS m, \
             date_trunc('day', ts), epoch_ms(date_trunc('minute', ts)) AS e \
             FROM requests WHERE ts >= '2026-09-25 14:00:00' ORDER BY ts LIMIT 1",
        ],
    );
    let row = &v["rows"][0];
    assert_eq!(row["w"], "2026-09-21T00:00:00.000Z", "{v}");
    assert_eq!(row["m"], "2026-09-01T00:00:00.000Z", "{v}");
    assert_eq!(
        row["date_trunc('day', ts)"], "2026-09-25T00:00:00.000Z",
        "{v}"
    );
    assert_eq!(row["e"], 1_790_344_800_000i64, "{v}");
    assert_eq!(v["columns"][3]["type"], "int64");
    // A unit that is not one, the wall clock: exit 2, saying what works.
    let (_, err, code) = run(
        d,
        &["sql", "SELECT date_trunc('fortnight', ts) FROM requests"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("second, minute, hour, day, week"), "{err}");
    for q in [
        "SELECT count(*) FROM requests WHERE ts > now() - INTERVAL '1 hour'",
        "SELECT current_timestamp",
    ] {
        let (_, err, code) = run(d, &["sql", q]);
        assert_eq!(code, 2, "{q}: {err}");
        assert!(err.contains("not the clock"), "{q}: {err}");
    }
    // A function polars does not have: the dialect, and the time functions that work.
    let (_, err, code) = run(d, &["sql", "SELECT time_bucket(ts) FROM requests"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("polars' SQL") && err.contains("date_trunc('second'"),
        "{err}"
    );
}

/// `SELECT *` on an 80-column terminal is shown as records, one `column  value` line
/// each, not a table of 7-character cells; a narrow result stays a table; the flags
/// force either.
#[test]
fn wide_results_turn_to_records() {
    let dir = setup();
    let d = dir.path();
    let star = "SELECT * FROM requests ORDER BY ts LIMIT 2";
    let text = ok(d, &["sql", star]);
    assert!(text.starts_with("2 rows\n"), "{text}");
    assert!(text.contains("-[ row 1 ]"), "{text}");
    assert!(text.contains("-[ row 2 ]"), "{text}");
    let path_line = text
        .lines()
        .find(|l| l.starts_with("path "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(path_line.ends_with("/wiki/Main"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    // Narrow: a table.
    let text = ok(
        d,
        &[
            "sql",
            "SELECT status, count(*) AS n FROM requests GROUP BY 1 ORDER BY 1",
        ],
    );
    assert!(!text.contains("-[ row"), "{text}");
    assert!(
        text.lines()
            .nth(2)
            .unwrap()
            .trim_start()
            .starts_with("status"),
        "{text}"
    );
    let text = ok(
        d,
        &["sql", "SELECT status FROM requests LIMIT 1", "--vertical"],
    );
    assert!(
        text.contains("-[ row 1 ]") && text.contains("\nstatus  "),
        "{text}"
    );
    let text = ok(d, &["sql", star, "--no-vertical"]);
    assert!(!text.contains("-[ row"), "{text}");
    // Other formats keep one table.
    let csv = ok(d, &["sql", star, "--vertical", "--format", "csv"]);
    assert_eq!(csv.lines().count(), 3, "{csv}");
}

/// requests_x's asn, as_name and country are `top --by asn|country`'s, from the same
/// --asn-db; NULL without one.
#[test]
fn network_columns_agree_with_top() {
    let dir = setup();
    let d = dir.path();
    std::fs::write(
        d.join("ip2asn.tsv"),
        "0.0.0.0\t127.255.255.255\t64500\tDE\tLOW\n128.0.0.0\t255.255.255.255\t64501\tKR\tHIGH\n",
    )
    .unwrap();
    let db = ["--asn-db", "ip2asn.tsv"];
    let q = "SELECT asn, count(*) AS n FROM requests_x GROUP BY 1";
    let top: Vec<(String, u64)> = top_pairs(d, &["--by", "asn", db[0], db[1]])
        .into_iter()
        .map(|(k, n)| (k.split(' ').next().unwrap().to_string(), n))
        .collect();
    assert_eq!(sorted(pairs(d, q, &db)), top);
    assert!(top.iter().any(|(k, _)| k == "AS64501"), "{top:?}");
    let q = "SELECT country, count(*) AS n FROM requests_x GROUP BY 1";
    assert_eq!(
        sorted(pairs(d, q, &db)),
        top_pairs(d, &["--by", "country", db[0], db[1]])
    );
    let q = "SELECT as_name FROM requests_x WHERE asn = 'AS64501' LIMIT 1";
    assert_eq!(
        json(d, &["sql", q, db[0], db[1]])["rows"][0]["as_name"],
        "HIGH"
    );
    // Without a database the columns are there, and NULL.
    let q = "SELECT count(*) AS n FROM requests_x WHERE asn IS NULL AND country IS NULL";
    let all = json(d, &["sql", "SELECT count(*) AS n FROM requests"])["rows"][0]["n"].clone();
    assert_eq!(json(d, &["sql", q])["rows"][0]["n"], all);
}

/// A plain `GROUP BY` over `requests` is counted per dictionary code in the pages
/// (`src/store/groups.rs`): against polars grouping the rows it read
/// (`LOGSCOPE_SCAN=polars`), every such query answers the same (the same columns,
/// types and groups; rows in the same order where the query orders them totally), and
/// `--explain` shows which path answered. Small row groups, two months, nulls, text,
/// integer, flag, timestamp and month keys.
#[test]
fn group_by_from_the_pages_answers_as_polars() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = tmp.path().join("access.log");
    crate::scale::mixed_log(&log, 6_000, 0x5eed);
    // July: a second part, and a host and agent June has not.
    let july = tmp.path().join("july.log");
    let mut s = String::new();
    for i in 0..700 {
        s.push_str(&format!(
            "www.example.org 192.0.2.{} - bob [03/Jul/2024:10:{:02}:00 +0000] \"GET /j{} HTTP/1.1\" {} 7 \"-\" \"{}\"\n",
            i % 9,
            i % 60,
            i % 13,
            [200, 404][i % 2],
            ["curl/8.5.0", "july-agent/1", "-"][i % 3],
        ));
    }
    std::fs::write(&july, s).unwrap();
    let out = logscope(&data)
        .env("LOGSCOPE_ROW_GROUP_ROWS", "512")
        .args(["ingest", "--format", "vhost-combined"])
        .arg(&log)
        .arg(&july)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = |mode: &str, q: &str| -> (Value, String) {
        let out = logscope(&data)
            .env("LOGSCOPE_SCAN", mode)
            .args(["sql", q, "--explain", "--format", "json"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{mode} {q}: {err}");
        (serde_json::from_slice(&out.stdout).unwrap(), err)
    };
    const GROUPED: &str = "grouped per dictionary code in the pages";
    // (query, rows in a total order, answered from the pages)
    let queries: &[(&str, bool, bool)] = &[
        (
            "SELECT user_agent, count(*) AS n FROM requests GROUP BY user_agent",
            false,
            true,
        ),
        (
            "SELECT user_agent, count(*) FROM requests GROUP BY 1",
            false,
            true,
        ),
        (
            "SELECT status, count(*) AS n FROM requests GROUP BY status ORDER BY status",
            true,
            true,
        ),
        (
            "SELECT host, status, count(*) AS n FROM requests GROUP BY host, status",
            false,
            true,
        ),
        (
            "SELECT status, host, count(*) AS n FROM requests GROUP BY host, status ORDER BY n DESC, host, status LIMIT 4",
            true,
            true,
        ),
        (
            "SELECT month, \"user\", count(\"user\") AS named, count(*) AS n FROM requests GROUP BY month, \"user\"",
            false,
            true,
        ),
        (
            "SELECT path, method, count(*) AS n FROM requests GROUP BY path, method ORDER BY n DESC, path, method LIMIT 10",
            true,
            true,
        ),
        (
            "SELECT has_cookie, client_list, ts_precision, count(*) FROM requests GROUP BY 1, 2, 3",
            false,
            true,
        ),
        (
            "SELECT ts, count(*) AS n FROM requests GROUP BY ts ORDER BY ts",
            true,
            true,
        ),
        (
            "SELECT bytes, client, count(*) AS n FROM requests GROUP BY bytes, client ORDER BY bytes, client",
            true,
            true,
        ),
        (
            "SELECT u AS agent, n FROM (SELECT user_agent AS u, count(*) AS n FROM requests GROUP BY user_agent) WHERE n > 100 ORDER BY n, agent",
            true,
            true,
        ),
        (
            "SELECT count(*) AS groups FROM (SELECT path, query FROM requests GROUP BY path, query)",
            true,
            true,
        ),
        // The general path: a WHERE below the grouping, HAVING, another aggregate, the view.
        (
            "SELECT status, count(*) AS n FROM requests WHERE month = '2024-07' GROUP BY status ORDER BY status",
            true,
            false,
        ),
        (
            "SELECT host, count(*) AS n FROM requests GROUP BY host HAVING count(*) > 10 ORDER BY host",
            true,
            false,
        ),
        (
            "SELECT host, count(*) AS n, sum(bytes) AS b FROM requests GROUP BY host ORDER BY host",
            true,
            false,
        ),
        (
            "SELECT agent, count(*) AS n FROM requests_x GROUP BY agent ORDER BY agent",
            true,
            false,
        ),
    ];
    let canon = |v: &Value, ordered: bool| -> (Value, Vec<String>) {
        let mut rows: Vec<String> = v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.to_string())
            .collect();
        if !ordered {
            rows.sort();
        }
        (v["columns"].clone(), rows)
    };
    for &(q, ordered, fast) in queries {
        let (general, err) = run("polars", q);
        assert!(!err.contains(GROUPED), "{q}: {err}");
        let (pages, err) = run("pages", q);
        assert_eq!(err.contains(GROUPED), fast, "{q}: {err}");
        assert!(
            err.contains("opened 2 of 2 parts (2024-06, 2024-07)") || !fast,
            "{q}: {err}"
        );
        assert!(general["row_count"].as_u64().unwrap() > 0, "{q}");
        assert_eq!(canon(&pages, ordered), canon(&general, ordered), "{q}");
        // Without LOGSCOPE_SCAN too (the default reader falls back where it must).
        let (default, _) = run("", q);
        assert_eq!(canon(&default, ordered), canon(&general, ordered), "{q}");
    }
}
