//! `logscope replay --limit …,key=field:NAME` through the binary: a limit keyed on a
//! field of the user's log format (an API key logged as `$http_x_api_key`, Apache's
//! `%{X-Api-Key}i`, a `--json-map` `field:` entry) refuses the flooding key only, where
//! the same limit per address refuses a NAT's well-behaved customers; rows without the
//! field are not limited; over the dataset and for a field the format lacks, a usage
//! error; `--emit` writes the key as the server's variable or header; TOML the same.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use crate::common::*;

/// nginx `log_format` of the generated log.
const NGINX: &str = r#"$remote_addr - $remote_user [$msec] "$request" $status $body_bytes_sent "$http_user_agent" "$http_x_api_key""#;
/// The same log in Apache `LogFormat` syntax.
const APACHE: &str = r#"%h %l %u [%{msec}t] "%r" %>s %b "%{User-Agent}i" "%{X-Api-Key}i""#;

/// One request of the generated log: ms since its start, client, API key (`None`:
/// logged as `-`; `Some("")`: logged empty).
struct Req {
    ms: u64,
    ip: String,
    key: Option<&'static str>,
}

/// Two minutes of API traffic: `flood` at 10 requests a second from 50 addresses
/// (24 a minute each), four well-behaved keys at 30 a minute each from one NAT
/// address (120 a minute together), and keyless requests (`-` and empty) at 2 a
/// second from another address.
fn traffic() -> Vec<Req> {
    let mut out = Vec::new();
    for i in 0..1200u64 {
        out.push(Req {
            ms: i * 100,
            ip: format!("203.0.113.{}", i % 50),
            key: Some("flood"),
        });
    }
    for (k, key) in ["key-a", "key-b", "key-c", "key-d"].into_iter().enumerate() {
        for i in 0..60u64 {
            out.push(Req {
                ms: i * 2000 + 37 + k as u64 * 500,
                ip: "198.51.100.7".into(),
                key: Some(key),
            });
        }
    }
    for i in 0..240u64 {
        out.push(Req {
            ms: i * 500 + 11,
            ip: "198.51.100.8".into(),
            key: if i % 2 == 0 { None } else { Some("") },
        });
    }
    out.sort_by_key(|r| r.ms);
    out
}

const START_S: u64 = 1_788_000_000;

/// The log in `NGINX` (`apache`: in `APACHE`) form; line number → key as logged.
fn write_log(path: &Path, apache: bool) -> BTreeMap<u64, String> {
    write_log_with(path, apache, "")
}

/// [`write_log`] with `tail` after each line.
fn write_log_with(path: &Path, apache: bool, tail: &str) -> BTreeMap<u64, String> {
    let mut text = String::new();
    let mut keys = BTreeMap::new();
    for (n, r) in traffic().iter().enumerate() {
        let key = match r.key {
            None => "-",
            Some(k) => k,
        };
        let t = START_S * 1000 + r.ms;
        let stamp = if apache {
            t.to_string()
        } else {
            format!("{}.{:03}", t / 1000, t % 1000)
        };
        text.push_str(&format!(
            "{} - - [{stamp}] \"GET /api/v1/items HTTP/1.1\" 200 64 \"client/2.1\" \"{key}\"{tail}\n",
            r.ip
        ));
        keys.insert(n as u64 + 1, key.to_string());
    }
    std::fs::write(path, text).unwrap();
    keys
}

/// A `--decisions` CSV of one candidate: line → (key, decision).
fn decisions(path: &Path) -> BTreeMap<u64, (String, String)> {
    let text = std::fs::read_to_string(path).expect("decisions written");
    let mut lines = text.lines();
    let head = csv_fields(lines.next().expect("header"));
    let col = |n: &str| head.iter().position(|h| h == n).expect(n);
    let (line, key, decision) = (col("line"), col("key"), col("decision"));
    lines
        .map(|l| {
            let f = csv_fields(l);
            (
                f[line].parse().expect("line number"),
                (f[key].clone(), f[decision].clone()),
            )
        })
        .collect()
}

/// Runs `replay ARGS --format json --decisions d.csv` in `dir`: the report and the
/// decisions.
fn replay(dir: &Path, args: &[&str]) -> (Value, BTreeMap<u64, (String, String)>) {
    let csv = dir.join("d.csv");
    let v = ok_json(
        logscope(&dir.join("no-dataset"))
            .current_dir(dir)
            .arg("replay")
            .args(args)
            .args(["--format", "json", "--decisions"])
            .arg(&csv),
    );
    (v, decisions(&csv))
}

/// The keys of the refused rows.
fn refused_keys(d: &BTreeMap<u64, (String, String)>) -> BTreeSet<String> {
    d.values()
        .filter(|(_, dec)| dec == "refuse")
        .map(|(k, _)| k.clone())
        .collect()
}

#[test]
fn a_limit_per_api_key_refuses_the_flooding_key_only() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = write_log(&tmp.path().join("api.log"), false);
    let keyless: BTreeSet<u64> = keys
        .iter()
        .filter(|(_, k)| *k == "-" || k.is_empty())
        .map(|(l, _)| *l)
        .collect();
    assert_eq!(keyless.len(), 240);

    let (v, d) = replay(
        tmp.path(),
        &[
            "--limit",
            "60/1m,key=field:http_x_api_key",
            "--log-format",
            NGINX,
            "api.log",
        ],
    );
    let c = &v["candidates"][0];
    assert!(
        c["description"]
            .as_str()
            .unwrap()
            .contains("per field http_x_api_key (request header X-Api-Key)"),
        "{c}"
    );
    // Refusals land on the flooding key only: 60 of its 600 a minute pass.
    assert_eq!(refused_keys(&d), BTreeSet::from(["flood".to_string()]));
    let refused = c["refused"].as_u64().unwrap();
    assert!((1000..=1140).contains(&refused), "refused {refused}");
    for k in ["key-a", "key-b", "key-c", "key-d"] {
        let n = d.values().filter(|(key, _)| key == k).count();
        assert_eq!(n, 60, "every request of {k} decided, none refused");
    }
    // The decisions name each row's key as logged.
    for (line, (key, _)) in &d {
        assert_eq!(&keys[line], key, "line {line}");
    }
    // A row without the field (`-`, or empty) is not limited: no decision, out of scope.
    assert!(keyless.iter().all(|l| !d.contains_key(l)));
    assert_eq!(c["out_of_scope"].as_u64(), Some(240), "{c}");
    assert_eq!(c["in_scope"].as_u64(), Some(1440), "{c}");

    // The same limit per address refuses other requests: the NAT's customers and the
    // keyless client, not the flood spread over 50 addresses.
    let (v_ip, d_ip) = replay(
        tmp.path(),
        &["--limit", "60/1m,key=ip", "--log-format", NGINX, "api.log"],
    );
    let ip_refused: BTreeSet<&String> = d_ip
        .iter()
        .filter(|(_, (_, dec))| dec == "refuse")
        .map(|(l, _)| &keys[l])
        .collect();
    assert!(ip_refused.contains(&"key-a".to_string()), "{ip_refused:?}");
    assert!(ip_refused.contains(&"-".to_string()), "{ip_refused:?}");
    assert!(!ip_refused.contains(&"flood".to_string()), "{ip_refused:?}");
    assert_ne!(
        v_ip["candidates"][0]["refused"], c["refused"],
        "key=ip gives another result"
    );
}

#[test]
fn an_apache_header_is_the_same_field_under_either_name() {
    let tmp = tempfile::tempdir().unwrap();
    write_log(&tmp.path().join("nginx.log"), false);
    write_log(&tmp.path().join("apache.log"), true);
    let limit = "60/1m,key=field:http_x_api_key";
    let (_, from_nginx) = replay(
        tmp.path(),
        &["--limit", limit, "--log-format", NGINX, "nginx.log"],
    );
    for name in ["http_x_api_key", "X-Api-Key", "x-api-key"] {
        let (v, from_apache) = replay(
            tmp.path(),
            &[
                "--limit",
                &format!("60/1m,key=field:{name}"),
                "--log-format",
                APACHE,
                "apache.log",
            ],
        );
        assert_eq!(from_apache, from_nginx, "key=field:{name}");
        // The format says the field is the request header X-Api-Key.
        let d = v["candidates"][0]["description"].as_str().unwrap();
        let header = if name == "X-Api-Key" {
            "(a request header)".to_string()
        } else {
            "(request header X-Api-Key)".to_string()
        };
        assert!(d.contains(&format!("per field {name} {header}")), "{d}");
    }
}

#[test]
fn a_json_map_field_entry_and_a_toml_key() {
    let tmp = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for r in traffic() {
        let t = START_S * 1000 + r.ms;
        let headers = match r.key {
            None => "{}".to_string(),
            Some(k) => format!(r#"{{"X-Api-Key":"{k}"}}"#),
        };
        text.push_str(&format!(
            r#"{{"ts":{}.{:03},"ip":"{}","status":200,"uri":"/api/v1/items","headers":{headers}}}"#,
            t / 1000,
            t % 1000,
            r.ip
        ));
        text.push('\n');
    }
    std::fs::write(tmp.path().join("api.jsonl"), text).unwrap();
    write_log(&tmp.path().join("api.log"), false);
    let map = "ts=ts,client=ip,status=status,path=uri,field:api_key=headers.X-Api-Key";
    let (v, d) = replay(
        tmp.path(),
        &[
            "--limit",
            "60/1m,key=field:api_key",
            "--json-map",
            map,
            "api.jsonl",
        ],
    );
    assert_eq!(refused_keys(&d), BTreeSet::from(["flood".to_string()]));
    assert_eq!(v["candidates"][0]["out_of_scope"].as_u64(), Some(240));
    let (_, from_nginx) = replay(
        tmp.path(),
        &[
            "--limit",
            "60/1m,key=field:http_x_api_key",
            "--log-format",
            NGINX,
            "api.log",
        ],
    );
    assert_eq!(d, from_nginx, "the JSON log decides as the text log");

    // The TOML key reads the same (the algorithm named: TOML's default is the
    // dialect's own).
    std::fs::write(
        tmp.path().join("limits.toml"),
        "name = \"per API key\"\n[[zones]]\nname = \"api\"\nrate = \"60/1m\"\nalgo = \"sliding-log\"\nkey = \"field:http_x_api_key\"\n\n[[rules]]\nname = \"all\"\nzone = \"api\"\n",
    )
    .unwrap();
    let (_, from_toml) = replay(
        tmp.path(),
        &["--config", "limits.toml", "--log-format", NGINX, "api.log"],
    );
    assert_eq!(from_toml, from_nginx, "--config decides as --limit");
}

#[test]
fn a_field_key_without_the_field_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    write_log(&tmp.path().join("api.log"), false);
    // Over the dataset: no such column; the message says to pass the log files.
    let (_, err, code) = run_in(
        tmp.path(),
        &["replay", "--limit", "60/1m,key=field:http_x_api_key"],
    );
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "one message: {err}");
    assert!(
        err.contains("the dataset keeps only the built-in columns")
            && err.contains("replay the log FILEs")
            && err.contains(
                "e.g. logscope replay --limit 300/1m,key=field:http_x_api_key --log-format"
            ),
        "{err}"
    );
    // A name the format does not log: the fields it does are named.
    let fmt = format!("{NGINX} $upstream_addr");
    let (_, err, code) = run_in(
        tmp.path(),
        &[
            "replay",
            "--limit",
            "60/1m,key=field:api_token",
            "--log-format",
            &fmt,
            "api.log",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "captures no field `api_token`; the fields it captures: http_x_api_key, upstream_addr"
        ),
        "{err}"
    );
    // A detected built-in format logs no such field.
    let (_, err, code) = run_in(
        tmp.path(),
        &["replay", "--limit", "60/1m,key=field:api_key", "api.log"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--log-format") && err.contains("--json-map"),
        "{err}"
    );
    // A bad name is a bad key.
    let (_, err, code) = run_in(
        tmp.path(),
        &["replay", "--limit", "60/1m,key=field:", "api.log"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown key"), "{err}");
}

#[test]
fn emit_writes_the_key_as_the_servers_variable_or_header() {
    let tmp = tempfile::tempdir().unwrap();
    write_log_with(&tmp.path().join("api.log"), false, " tenant-1");
    let emit = |server: &str, limit: &str| {
        let (out, err, code) = run_in(
            tmp.path(),
            &[
                "replay",
                "--limit",
                limit,
                "--log-format",
                &format!("{NGINX} $tenant"),
                "--emit",
                server,
                "api.log",
            ],
        );
        assert_eq!(code, 0, "{err}");
        out
    };
    let nginx = emit(
        "nginx",
        "60/1m,algo=nginx,burst=5,nodelay,key=field:X-Api-Key",
    );
    assert!(
        nginx.contains("limit_req_zone $http_x_api_key zone="),
        "{nginx}"
    );
    let nginx = emit("nginx", "60/1m,algo=nginx,key=field:tenant");
    assert!(nginx.contains("limit_req_zone $tenant zone="), "{nginx}");
    let caddy = emit("caddy", "60/1m,key=field:http_x_api_key");
    assert!(
        caddy.contains("key {http.request.header.X-Api-Key}"),
        "{caddy}"
    );
    let caddy = emit("caddy", "60/1m,key=field:tenant");
    assert!(
        caddy.contains("left out: a key on field tenant cannot be written"),
        "{caddy}"
    );
    let haproxy = emit("haproxy", "60/1m,key=field:http_x_api_key");
    assert!(
        haproxy.contains("track-sc0 req.hdr(x-api-key) table"),
        "{haproxy}"
    );
    let haproxy = emit("haproxy", "60/1m,key=field:tenant");
    assert!(haproxy.contains("a key on field tenant"), "{haproxy}");
}
