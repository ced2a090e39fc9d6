//! The heavy default on any site: MediaWiki's rules where the rows show a MediaWiki,
//! else the class `dynamic` (paths that are not static files), said in every output;
//! a rules file that says `[heavy] mediawiki` is followed.

use std::io::Write;
use std::path::Path;

use crate::common::{self, Rng, logscope, ok_json};

/// A shop's log: pages, static files, an API, and a scanner's 5 probes for MediaWiki
/// paths in 2,000 requests (below the 1 % that makes a MediaWiki). Returns the number of
/// dynamic requests (paths that are not static files).
fn write_shop(path: &Path) -> u64 {
    let mut rng = Rng(0x5eed_0041);
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut dynamic = 0;
    for i in 0..2_000u64 {
        let s = 1_767_225_600 + i as i64 * 30;
        let t = chrono::DateTime::from_timestamp(s, 0).unwrap();
        let uri = match (i, rng.below(10)) {
            (0..5, _) => "/w/index.php?search=x".to_string(),
            (_, 0..4) => format!("/img/p{}.JPG", rng.below(50)),
            (_, 4) => "/static/app.js?v=3".to_string(),
            (_, 5) => "/robots.txt".to_string(),
            (_, 6) => format!("/api/cart/{}", rng.below(90)),
            (_, 7) => "/".to_string(),
            _ => format!("/product/{}.html", rng.below(300)),
        };
        let path = uri.split('?').next().unwrap();
        let is_static = [".jpg", ".js", ".txt"]
            .iter()
            .any(|e| path.to_ascii_lowercase().ends_with(e));
        dynamic += u64::from(!is_static);
        writeln!(
            f,
            "203.0.113.{} - - [{}] \"GET {uri} HTTP/1.1\" 200 512 \"-\" \"Mozilla/5.0\"",
            1 + rng.below(200),
            t.format("%d/%b/%Y:%H:%M:%S +0000")
        )
        .unwrap();
    }
    // A request that is not HTTP has no path: it is no request to a page.
    writeln!(
        f,
        "198.51.100.9 - - [01/Jan/2026:00:00:01 +0000] \"\\x16\\x03\\x01\" 400 0 \"-\" \"-\""
    )
    .unwrap();
    dynamic
}

/// A wiki's log: page views under `/wiki/`, history and search through `/w/index.php`.
fn write_wiki(path: &Path) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..1_000i64 {
        let t = chrono::DateTime::from_timestamp(1_767_225_600 + i * 10, 0).unwrap();
        let uri = match i % 10 {
            0 => "/w/index.php?title=A&action=history".to_string(),
            1 => "/w/index.php?search=b".to_string(),
            2 => "/w/load.php?modules=site".to_string(),
            _ => format!("/wiki/Page_{}", i % 97),
        };
        writeln!(
            f,
            "192.0.2.{} - - [{}] \"GET {uri} HTTP/1.1\" 200 900 \"-\" \"Mozilla/5.0\"",
            1 + i % 50,
            t.format("%d/%b/%Y:%H:%M:%S +0000")
        )
        .unwrap();
    }
}

fn heavy_json(data: &Path, extra: &[&str]) -> serde_json::Value {
    ok_json(
        logscope(data)
            .args(["heavy", "--by", "1h", "--format", "json"])
            .args(extra),
    )
}

fn classes(v: &serde_json::Value) -> Vec<(String, u64)> {
    v["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["class"].as_str().unwrap().to_string(),
                c["requests"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// On a site that is not a MediaWiki the heavy requests are its dynamic ones, counted
/// exactly, the same from the dataset and from the log file; every output says so.
#[test]
fn a_site_that_is_not_a_wiki_gets_its_dynamic_requests() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("shop.log");
    let dynamic = write_shop(&log);
    let data = dir.path().join("data");
    let (_, code) = common::ingest_json(&data, &[log.to_str().unwrap()]);
    assert_eq!(code, 0);

    let v = heavy_json(&data, &[]);
    assert_eq!(v["requests"], 2_001);
    assert_eq!(v["heavy"], dynamic);
    assert_eq!(classes(&v), vec![("dynamic".to_string(), dynamic)]);
    let rules = v["heavy_rules"].as_str().unwrap();
    assert!(
        rules.starts_with("dynamic: paths that are not static files"),
        "{rules}"
    );
    assert!(
        rules.contains("not a MediaWiki site (under 1% of the requests"),
        "{rules}"
    );

    // The log file itself: its first lines decide, the same way.
    let f = heavy_json(&data, &[log.to_str().unwrap()]);
    assert_eq!(f["heavy"], dynamic);
    assert_eq!(f["heavy_rules"], v["heavy_rules"]);
    // Standard input is read once: the look at its first lines loses none of them.
    let stdin = ok_json(
        logscope(&data)
            .args(["heavy", "--by", "1h", "--format", "json", "-"])
            .pipe_stdin(&log)
            .unwrap(),
    );
    assert_eq!(stdin["requests"], 2_001);
    assert_eq!(stdin["heavy"], dynamic);

    // The terminal says it, and the report's first finding says what heavy meant.
    let text = common::ok_stdout(logscope(&data).args(["heavy", "--by", "1d"]));
    assert!(
        text.contains("heavy: dynamic: paths that are not static files"),
        "{text}"
    );
    let out = dir.path().join("post");
    common::ok_stdout(logscope(&data).args(["report", "--out", out.to_str().unwrap()]));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains(&format!(
            "2,001 requests, {} of them heavy",
            logscope_core::number::thousands(dynamic)
        )) && md.contains("Heavy: dynamic: paths that are not static files"),
        "{md}"
    );

    // `--heavy` selects the same rows in every report: top's total is the heavy count.
    let top = ok_json(logscope(&data).args(["top", "--by", "path", "--heavy", "--format", "json"]));
    assert_eq!(top["requests"], dynamic, "{top}");

    // A rules file that says the site is a MediaWiki is followed: no dynamic class.
    let rules = dir.path().join("wiki.toml");
    std::fs::write(&rules, "[heavy]\nmediawiki = true\n").unwrap();
    let said = heavy_json(&data, &["--rules", rules.to_str().unwrap()]);
    assert_eq!(classes(&said), vec![("search".to_string(), 5)]);
    assert!(!said["heavy_rules"].as_str().unwrap().contains("site ("));
}

/// A MediaWiki keeps MediaWiki's rules, from the dataset and from the file; the
/// dataset's count at ingest and a read of its path column (parts written before the
/// count) agree.
#[test]
fn a_wiki_keeps_the_mediawiki_rules() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("wiki.log");
    write_wiki(&log);
    let data = dir.path().join("data");
    let (_, code) = common::ingest_json(&data, &[log.to_str().unwrap()]);
    assert_eq!(code, 0);
    let want = vec![("history".to_string(), 100), ("search".to_string(), 100)];
    let v = heavy_json(&data, &[]);
    assert_eq!(classes(&v), want);
    let rules = v["heavy_rules"].as_str().unwrap();
    assert!(
        rules.starts_with("MediaWiki (") && rules.contains("; a MediaWiki site (1% or more"),
        "{rules}"
    );
    assert_eq!(classes(&heavy_json(&data, &[log.to_str().unwrap()])), want);

    // A manifest without the ingest's count (an older logscope's): the path column is read.
    let mut manifests: Vec<_> =
        glob::glob(&format!("{}/snapshots/*/_manifest.json", data.display()))
            .unwrap()
            .filter_map(Result::ok)
            .collect();
    assert!(!manifests.is_empty());
    for m in manifests.drain(..) {
        let mut j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&m).unwrap()).unwrap();
        for p in j["parts"].as_array_mut().unwrap() {
            assert!(
                p.as_object_mut()
                    .unwrap()
                    .remove("mediawiki_rows")
                    .is_some()
            );
        }
        std::fs::write(&m, serde_json::to_string(&j).unwrap()).unwrap();
    }
    let old = heavy_json(&data, &[]);
    assert_eq!(old["heavy_rules"], v["heavy_rules"]);
    assert_eq!(classes(&old), want);
}
