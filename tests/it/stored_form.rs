//! The stored form of log text (dataset format 3): a raw byte that is not UTF-8 and the
//! same characters typed by a client stay apart everywhere; client lists and
//! `--trust-proxy`; older (format 2) datasets are read but not written to.

use std::io::Write;

use super::common;

const RAW: &[u8] = b"203.0.113.7 - - [10/Oct/2024:13:55:36 +0000] \"GET /a\xac HTTP/1.1\" 200 5 \"-\" \"Bot\xac\"\n";
const TYPED: &[u8] = b"203.0.113.8 - - [10/Oct/2024:13:55:37 +0000] \"GET /a\\xac HTTP/1.1\" 200 5 \"-\" \"Bot\\xac\"\n";

fn write_log(dir: &std::path::Path, name: &str, lines: &[&[u8]]) -> std::path::PathBuf {
    let p = dir.join(name);
    let mut f = std::fs::File::create(&p).unwrap();
    for l in lines {
        f.write_all(l).unwrap();
    }
    p
}

fn sample_agents(c: assert_cmd::Command) -> Vec<String> {
    let v = common::report_json_without_origin(c, "agents");
    let mut agents: Vec<String> = v["sample"]
        .as_array()
        .expect("sample")
        .iter()
        .map(|r| r["user_agent"].as_str().unwrap().to_string())
        .collect();
    agents.sort();
    agents
}

#[test]
fn a_raw_byte_and_the_same_characters_typed_stay_apart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = write_log(dir.path(), "access.log", &[RAW, TYPED]);
    // Read from the file.
    let mut c = common::logscope(&data);
    c.args(["agents", "--sample", "10", "--format", "json"])
        .arg(&log);
    let from_file = sample_agents(c);
    assert_eq!(
        from_file,
        vec![r"Bot\\xac".to_string(), r"Bot\xac".to_string()]
    );
    // Stored, then read back: the same two values, also for other engines.
    common::logscope(&data)
        .args(["ingest", "--quiet"])
        .arg(&log)
        .assert()
        .success();
    let mut c = common::logscope(&data);
    c.args(["agents", "--sample", "10", "--format", "json"]);
    assert_eq!(sample_agents(c), from_file);
    let df = common::read_dataset(&data);
    let mut paths: Vec<String> = df
        .column("path")
        .unwrap()
        .str()
        .unwrap()
        .iter()
        .map(|s| s.unwrap().to_string())
        .collect();
    paths.sort();
    assert_eq!(paths, vec![r"/a\\xac".to_string(), r"/a\xac".to_string()]);
    // The terminal shows the stored form too: two distinct lines.
    let out = common::logscope(&data)
        .args(["agents", "--sample", "10"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(r"Bot\\xac"), "{text}");
    assert!(
        text.contains("Bot\\xac\n") || text.contains("Bot\\xac "),
        "{text}"
    );
}

#[test]
fn trust_proxy_reads_a_client_list_right_to_left() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // A proxy logged X-Forwarded-For where the address goes: the client wrote a fake
    // first hop (1.1.1.1), the real client is 198.51.100.9, 10.0.0.5 is the proxy.
    let line: &[u8] = b"1.1.1.1, 198.51.100.9, 10.0.0.5 - - [10/Oct/2024:13:55:36 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"curl/8\"\n";
    let log = write_log(dir.path(), "access.log", &[line]);
    let top = |trust: bool, files: bool| {
        let mut c = common::logscope(&data);
        c.args(["concentration", "--by", "ip", "--format", "json"]);
        if trust {
            c.args(["--trust-proxy", "10.0.0.0/8"]);
        }
        if files {
            c.arg(&log);
        }
        let v = common::report_json_without_origin(c, "concentration");
        v["top"][0]["group"].as_str().unwrap().to_string()
    };
    // Without --trust-proxy: the first public address of the list.
    assert_eq!(top(false, true), "1.1.1.1");
    // With it: the right-most untrusted entry, not the spoofable first one.
    assert_eq!(top(true, true), "198.51.100.9");
    common::logscope(&data)
        .args(["ingest", "--quiet"])
        .arg(&log)
        .assert()
        .success();
    assert_eq!(top(false, false), "1.1.1.1");
    assert_eq!(top(true, false), "198.51.100.9");
    let df = common::read_dataset(&data);
    assert_eq!(
        df.column("client_list").unwrap().bool().unwrap().get(0),
        Some(true)
    );
}

#[test]
fn a_format_2_dataset_is_read_but_not_written_to() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = write_log(dir.path(), "access.log", &[TYPED]);
    common::logscope(&data)
        .args(["ingest", "--quiet"])
        .arg(&log)
        .assert()
        .success();
    // Make it an older dataset: format 2, without the client_list column.
    let table = data.join("requests");
    let mpath = table.join("_manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
    m["version"] = 2.into();
    let part = table.join(m["parts"][0]["file"].as_str().unwrap());
    let mut df = common::read_dataset(&data);
    let _ = df.drop_in_place("client_list").unwrap();
    let real = std::fs::canonicalize(&part).unwrap();
    std::fs::remove_file(&real).unwrap();
    let mut f = std::fs::File::create(&real).unwrap();
    polars::prelude::ParquetWriter::new(&mut f)
        .finish(&mut df)
        .unwrap();
    m["parts"][0]["bytes"] = std::fs::metadata(&real).unwrap().len().into();
    // Format-2 writers took no checksums.
    m["parts"][0].as_object_mut().unwrap().remove("sums");
    std::fs::write(&mpath, serde_json::to_vec(&m).unwrap()).unwrap();
    // Read: every report works, with --trust-proxy too (it needs xff).
    common::logscope(&data)
        .args(["concentration", "--trust-proxy", "10.0.0.0/8"])
        .assert()
        .success();
    let info = common::logscope(&data).arg("info").output().unwrap();
    assert!(info.status.success());
    // Written to: refused, with how to rebuild it.
    let out = common::logscope(&data)
        .args(["ingest", "--quiet"])
        .arg(write_log(dir.path(), "more.log", &[RAW]))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("format 2"), "{err}");
    assert!(err.contains("ingest into a new directory"), "{err}");
}
