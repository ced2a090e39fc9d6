//! Every command's JSON: the one envelope (`schema`, `selection`, `tz`, `inputs`) first,
//! then exactly the keys docs/json.md lists for it, and every instant in the one time
//! representation (RFC 3339 with milliseconds).

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{fixture, logscope};

/// docs/json.md's table: command → (schema name, keys; `?` marks optional ones).
fn documented() -> BTreeMap<String, (String, Vec<String>)> {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/json.md"))
        .expect("docs/json.md");
    let mut out = BTreeMap::new();
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 5 || !cells[2].starts_with("`logscope.") {
            continue;
        }
        // `ingest --json` is `ingest`; `watch --once` and `watch --backtest` are two.
        let command = cells[1]
            .trim_matches('`')
            .trim_end_matches(" --json")
            .to_string();
        let schema = cells[2].trim_matches('`').to_string();
        let keys = cells[3]
            .split(", ")
            .map(|k| {
                k.split('`')
                    .nth(1)
                    .expect("a key in backquotes")
                    .to_string()
            })
            .collect();
        out.insert(command, (schema, keys));
    }
    out
}

/// The keys of a JSON object's text, in the order written (serde_json's `Value` sorts
/// them).
fn top_keys(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let (mut depth, mut i, mut keys) = (0usize, 0usize, Vec::new());
    let mut expect_key = false;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if depth == 1 && expect_key {
                    keys.push(text[start..i].to_string());
                    expect_key = false;
                }
            }
            b'{' | b'[' => {
                depth += 1;
                expect_key = depth == 1;
            }
            b'}' | b']' => depth -= 1,
            b',' if depth == 1 => expect_key = true,
            _ => {}
        }
        i += 1;
    }
    keys
}

/// Checks one JSON object (its text) against the envelope and its command's documented
/// keys; returns it parsed.
fn check(
    command: &str,
    text: &str,
    docs: &BTreeMap<String, (String, Vec<String>)>,
) -> serde_json::Value {
    let v: serde_json::Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{command}: no JSON ({e}): {text}"));
    let v = &v;
    let (schema, keys) = docs
        .get(command)
        .unwrap_or_else(|| panic!("docs/json.md has no row for {command}"));
    assert!(v.is_object(), "{command}: not an object");
    let got = top_keys(text);
    let got: Vec<&str> = got.iter().map(String::as_str).collect();
    assert_eq!(
        &got[..4],
        ["schema", "selection", "tz", "inputs"],
        "{command}: the envelope comes first"
    );
    assert_eq!(v["schema"]["name"], schema.as_str(), "{command}");
    assert_eq!(v["schema"]["version"], 1, "{command}");
    let kind = v["inputs"]["kind"].as_str().unwrap();
    assert!(matches!(kind, "dataset" | "files"), "{command}: {kind}");
    assert!(v["inputs"]["origin"].is_string(), "{command}");
    // The rest: the documented keys in their order, the optional ones only when present.
    let rest: Vec<&str> = got[4..].to_vec();
    let expected: Vec<&str> = keys
        .iter()
        .filter_map(|k| match k.strip_suffix('?') {
            Some(opt) => rest.contains(&opt).then_some(opt),
            None => Some(k.as_str()),
        })
        .collect();
    assert_eq!(rest, expected, "{command}: keys differ from docs/json.md");
    check_times(command, "", v);
    v.clone()
}

/// Every instant is RFC 3339 with milliseconds; no instant is an integer of ms.
fn check_times(command: &str, at: &str, v: &serde_json::Value) {
    use std::sync::LazyLock;
    static STAMP: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)$").unwrap()
    });
    static TIME_LIKE: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d").unwrap());
    static INSTANT_MS: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"^(start|end|first|last|since|until|from|to|ts|time)(_utc|_local)?_ms$")
            .unwrap()
    });
    let (stamp, looks_like_time, instant_ms) = (&*STAMP, &*TIME_LIKE, &*INSTANT_MS);
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                assert!(
                    !instant_ms.is_match(k),
                    "{command}: {at}.{k} is an instant in ms; instants are RFC 3339 strings"
                );
                check_times(command, &format!("{at}.{k}"), x);
            }
        }
        serde_json::Value::Array(a) => {
            for x in a.iter().take(50) {
                check_times(command, &format!("{at}[]"), x);
            }
        }
        // The values `top --by` counts are data, not the report's instants.
        serde_json::Value::String(s)
            if looks_like_time.is_match(s) && at != ".selection" && !at.ends_with(".value") =>
        {
            assert!(
                stamp.is_match(s),
                "{command}: {at} = {s:?} is not RFC 3339 with ms"
            );
        }
        _ => {}
    }
}

/// The JSON text a command prints.
fn json_of(data: &Path, args: &[&str]) -> String {
    let out = logscope(data).args(args).output().expect("runs");
    assert!(
        out.status.code().is_some_and(|c| c == 0 || c == 3),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// [`json_of`] of a command that may also end with status `also` (an alert fired).
fn json_of_status(data: &Path, args: &[&str], also: i32) -> String {
    let out = logscope(data).args(args).output().expect("runs");
    assert!(
        out.status.code().is_some_and(|c| c == 0 || c == also),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Every command, over the dataset and over a log file, in UTC and in a named zone.
#[test]
fn every_command_starts_with_the_envelope_and_has_the_documented_keys() {
    let docs = documented();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = fixture("logs/elastic-apache.log");
    let log = log.to_str().unwrap();

    let ingest = check("ingest", &json_of(&data, &["ingest", "--json", log]), &docs);
    assert_eq!(ingest["inputs"]["kind"], "files");
    assert!(ingest["selection"].is_null());
    check("info", &json_of(&data, &["info", "--json"]), &docs);
    let detect = check("detect", &json_of(&data, &["detect", "--json", log]), &docs);
    assert!(detect["tz"].is_null());
    let sql = [
        "sql",
        "--format",
        "json",
        "SELECT status, count(*) AS n FROM requests GROUP BY status",
    ];
    check("sql", &json_of(&data, &sql), &docs);

    let reports: [(&str, &[&str]); 11] = [
        ("top", &["top", "--by", "path"]),
        ("heavy", &["heavy", "--by", "1h", "--capacity", "50/10m"]),
        ("concentration", &["concentration"]),
        ("agents", &["agents", "--sample", "3"]),
        ("timeline", &["timeline", "--client", "66.249.73.135"]),
        ("capacity", &["capacity"]),
        ("availability", &["availability"]),
        ("replay", &["replay", "--limit", "10/1m", "--by", "1h"]),
        (
            "block",
            &["block", "--since", "2015-05-19", "--until", "2015-05-19"],
        ),
        ("fingerprint", &["fingerprint", "--by", "agent"]),
        (
            "diff",
            &[
                "diff",
                "--baseline",
                "2015-05-18",
                "--since",
                "2015-05-19",
                "--until",
                "2015-05-19",
            ],
        ),
    ];
    let mut covered: Vec<&str> = vec!["ingest", "info", "detect", "sql"];
    for (command, args) in [
        (
            "watch --once",
            &[
                "watch",
                "--once",
                "--limit",
                "10/1m",
                "--alert",
                "errors > 1%",
            ][..],
        ),
        (
            "watch --backtest",
            &["watch", "--backtest", "--alert", "requests > 100/10m"],
        ),
    ] {
        covered.push(command);
        for tz in ["UTC", "Asia/Seoul"] {
            let mut a: Vec<&str> = args.to_vec();
            a.extend(["--format", "json", "--tz", tz]);
            let v = check(command, &json_of_status(&data, &a, 5), &docs);
            assert_eq!(v["tz"], tz, "{command}");
            assert_eq!(v["inputs"]["dataset_rows"], 9_999, "{command}");
            if tz == "Asia/Seoul" {
                assert!(v.to_string().contains(".000+09:00\""), "{command}: {v}");
            }
        }
    }
    for (command, args) in reports {
        covered.push(command);
        for tz in ["UTC", "Asia/Seoul"] {
            let mut a: Vec<&str> = args.to_vec();
            a.extend(["--format", "json", "--tz", tz]);
            let v = check(command, &json_of(&data, &a), &docs);
            assert_eq!(v["tz"], tz, "{command}");
            assert_eq!(v["inputs"]["kind"], "dataset", "{command}");
            assert_eq!(v["inputs"]["dataset_rows"], 9_999, "{command}");
            if tz == "Asia/Seoul" && !matches!(command, "agents" | "concentration" | "fingerprint")
            {
                let text = v.to_string();
                assert!(
                    text.contains(".000+09:00\""),
                    "{command}: local times in Seoul: {text}"
                );
            }
            // Over the log file: the same keys, the file's figures in `inputs`.
            if tz != "UTC" {
                continue;
            }
            a.push(log);
            let f = check(command, &json_of(&data, &a), &docs);
            assert_eq!(f["inputs"]["kind"], "files", "{command}");
            assert_eq!(f["inputs"]["bad"], 1, "{command}");
            assert_eq!(f["inputs"]["first_bad"]["line"], 8_899, "{command}");
        }
    }
    // docs/json.md has no row this test does not run.
    let mut listed: Vec<&str> = docs.keys().map(String::as_str).collect();
    listed.sort_unstable();
    covered.sort_unstable();
    assert_eq!(listed, covered);
}
