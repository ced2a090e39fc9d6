//! Every command's HTML page rendered in a real browser (headless Debian chromium):
//! no console error, no network request (the page's Content-Security-Policy,
//! `default-src 'none'`, blocks and logs any fetch), and each chart has the expected
//! number of bars or points in the DOM the browser built.
//!
//! To add a page: produce its HTML file, then call [`check_page`] with the chart
//! counts it must show. Without chromium the tests print SKIPPED (and fail when `CI`
//! is set). benches/screenshots.sh renders the same pages to docs/*.png.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

const CHROMIUM: &str = "/usr/bin/chromium";

/// One chart a page must show: its kind (`time-series`, `bars`, `lorenz`, `stacked`,
/// or `other` for an SVG not made by the chart module), its bars and stacked segments,
/// and the points of each series.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chart {
    /// `data-kind`.
    pub kind: &'static str,
    /// `<rect class="bar">` + `<rect class="seg">`.
    pub bars: usize,
    /// `data-points` of each series, in order.
    pub points: Vec<usize>,
}

/// A chart of `kind` with `bars` bars and series of `points`.
pub fn chart(kind: &'static str, bars: usize, points: &[usize]) -> Chart {
    Chart {
        kind,
        bars,
        points: points.to_vec(),
    }
}

/// Whether chromium is here; prints SKIPPED (and fails under `CI`) when not.
fn have_chromium() -> bool {
    if Path::new(CHROMIUM).exists() {
        return true;
    }
    println!("SKIPPED: {CHROMIUM} not installed (apt-get install chromium)");
    assert!(
        std::env::var_os("CI").is_none(),
        "chromium is required in CI"
    );
    false
}

/// Runs headless chromium on `html` with `extra` arguments; returns (stdout, stderr).
pub fn chromium(html: &Path, extra: &[&str]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", html.canonicalize().unwrap().display());
    let out = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-extensions",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(url)
        .output()
        .expect("chromium runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Console messages and blocked loads in chromium's log.
fn console_errors(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| {
            l.contains(":CONSOLE")
                || l.contains("Refused to")
                || l.contains("Content Security Policy")
                || l.contains("net::ERR_")
        })
        .map(str::to_string)
        .collect()
}

/// Charts in a DOM, by the chart module's counting scheme (other SVGs are `other`).
fn charts_in(dom: &str) -> Vec<Chart> {
    dom.split("<svg")
        .skip(1)
        .map(|s| {
            let s = &s[..s.find("</svg>").unwrap_or(s.len())];
            let head = &s[..s.find('>').unwrap_or(s.len())];
            let kind = if head.contains("class=\"chart\"") {
                match head
                    .split("data-kind=\"")
                    .nth(1)
                    .and_then(|k| k.split('"').next())
                {
                    Some("time-series") => "time-series",
                    Some("bars") => "bars",
                    Some("lorenz") => "lorenz",
                    Some("stacked") => "stacked",
                    _ => "other",
                }
            } else {
                "other"
            };
            Chart {
                kind,
                bars: s.matches("class=\"bar\"").count() + s.matches("class=\"seg\"").count(),
                points: s
                    .split("data-points=\"")
                    .skip(1)
                    .filter_map(|p| p.split('"').next()?.parse().ok())
                    .collect(),
            }
        })
        .collect()
}

/// Renders `html` in chromium and checks it: the CSP meta tag is declared, nothing is
/// fetched from anywhere, no console error, and the DOM has exactly `expected` charts.
pub fn check_page(html: &Path, expected: &[Chart]) {
    let markup = std::fs::read_to_string(html).unwrap();
    let name = html.display();
    assert!(
        markup.contains(
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
        ),
        "{name}: no CSP meta tag"
    );
    assert!(!markup.contains("<script"), "{name}: a script");
    let (dom, stderr) = chromium(html, &["--dump-dom"]);
    assert!(dom.contains("</html>"), "{name}: no DOM:\n{stderr}");
    let errors = console_errors(&stderr);
    assert!(
        errors.is_empty(),
        "{name}: console errors:\n{}",
        errors.join("\n")
    );
    assert_eq!(charts_in(&dom), expected, "{name}: charts");
}

fn page(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = logscope(&dir.join("no-dataset"))
        .current_dir(dir)
        .args(args)
        .args(["--format", "html"])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = dir.join(format!("{name}.html"));
    std::fs::write(&p, &out.stdout).unwrap();
    p
}

fn sample_dir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("logs").join("elastic-apache.log"),
        tmp.path().join("elastic-apache.log"),
    )
    .unwrap();
    tmp
}

#[test]
fn the_harness_sees_console_errors_and_fetches() {
    if !have_chromium() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("bad.html");
    std::fs::write(
        &p,
        "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\"></head><body><img src=\"http://192.0.2.1/x.png\"></body></html>",
    )
    .unwrap();
    let (_, stderr) = chromium(&p, &["--dump-dom"]);
    assert!(!console_errors(&stderr).is_empty(), "{stderr}");
}

#[test]
fn every_report_page_renders_with_its_charts() {
    if !have_chromium() {
        return;
    }
    let tmp = sample_dir();
    let dir = tmp.path();
    let f = "elastic-apache.log";
    // elastic-apache.log: 9,999 requests over 84 hours, no heavy (MediaWiki) request.
    let heavy = page(
        dir,
        "heavy",
        &["heavy", "--by", "1h", "--capacity", "100/1h", f],
    );
    check_page(&heavy, &[chart("time-series", 0, &[84])]);
    let conc = page(dir, "concentration", &["concentration", "--top", "10", f]);
    let groups = {
        let out = logscope(&dir.join("no-dataset"))
            .current_dir(dir)
            .args(["concentration", "--format", "json", f])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["groups"].as_u64().unwrap() as usize
    };
    check_page(
        &conc,
        &[
            chart("lorenz", 0, &[groups.min(200) + 1]),
            chart("bars", 10, &[]),
        ],
    );
    let agents = page(
        dir,
        "agents",
        &["agents", "--agent", "bot", "--top", "8", f],
    );
    let dom = std::fs::read_to_string(&agents).unwrap();
    let segs = charts_in(&dom)[0].bars;
    check_page(
        &agents,
        &[chart("stacked", segs, &[]), chart("bars", 8, &[])],
    );
    // availability and replay draw their own charts (their helpers own the counts):
    // the pages must render cleanly.
    for (name, args) in [
        ("availability", vec!["availability", f]),
        ("replay", vec!["replay", "--limit", "100/1m", f]),
        ("top", vec!["top", "--by", "path", f]),
        ("timeline", vec!["timeline", "--client", "83.149.9.216", f]),
    ] {
        let p = page(dir, name, &args);
        let markup = std::fs::read_to_string(&p).unwrap();
        let expect = charts_in(&markup);
        assert!(!expect.is_empty(), "{name}: no chart");
        check_page(&p, &expect);
    }
    // The incident post: one page with every part's chart.
    let out = logscope(&dir.join("no-dataset"))
        .current_dir(dir)
        .args([
            "report", "--by", "1h", "--limit", "100/1m", "--out", "post", f,
        ])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = dir.join("reports/post/index.html");
    let markup = std::fs::read_to_string(&p).unwrap();
    let expect = charts_in(&markup);
    // Requests per hour (84 points), concentration curve and bars, agents, top paths
    // and statuses, availability, the candidate's charts.
    assert!(expect.len() >= 8, "{} charts", expect.len());
    check_page(&p, &expect);
}
