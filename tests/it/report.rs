//! `logscope report`: the incident post — findings from the data, charts, the parts'
//! tables, one HTML page and a Markdown file with SVG charts beside it.

use std::io::Write;
use std::path::Path;

use super::common;

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

const PHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1";
const DESKTOP: &str =
    "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0";

/// An hour (2026-09-25 05:00–06:00 UTC): heavy requests per 10 minutes 900, 1,100,
/// 1,955, 1,400, 1,033, 900 from phones spread over many /24s, and 2,000 reads.
fn write_storm(path: &Path) -> u64 {
    let mut rng = Rng(0x5eed_0002);
    let start_s: i64 = 1_790_312_400;
    let mut lines: Vec<(i64, String)> = Vec::new();
    let line = |s: i64, ip: &str, uri: &str, ua: &str| {
        let t = chrono::DateTime::from_timestamp(s, 0).unwrap();
        format!(
            "{ip} - - [{}] \"GET {uri} HTTP/1.1\" 200 512 \"-\" \"{ua}\"",
            t.format("%d/%b/%Y:%H:%M:%S +0000")
        )
    };
    let mut heavy = 0;
    for (w, n) in [900u64, 1_100, 1_955, 1_400, 1_033, 900].iter().enumerate() {
        for _ in 0..*n {
            let s = start_s + (w as u64 * 600 + rng.below(600)) as i64;
            let ip = format!(
                "{}.{}.{}.{}",
                20 + rng.below(7),
                rng.below(10),
                rng.below(10),
                1 + rng.below(254)
            );
            let uri = format!(
                "/index.php?title=Page&action=history&x={}",
                rng.below(100_000)
            );
            lines.push((s, line(s, &ip, &uri, PHONE)));
            heavy += 1;
        }
    }
    for _ in 0..2_000 {
        let s = start_s + rng.below(3_600) as i64;
        let ip = format!("198.51.100.{}", 1 + rng.below(200));
        let uri = format!("/wiki/Page_{}", rng.below(5_000));
        lines.push((s, line(s, &ip, &uri, DESKTOP)));
    }
    lines.sort();
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for (_, l) in &lines {
        writeln!(f, "{l}").unwrap();
    }
    heavy
}

fn report(dir: &Path, extra: &[&str]) -> std::process::Output {
    let mut c = common::logscope(&dir.join("data"));
    c.current_dir(dir)
        .args(["report", "--capacity", "1610/10m", "--tz", "Asia/Seoul"])
        .args(extra)
        .arg(dir.join("storm.log"));
    c.output().unwrap()
}

#[test]
fn the_incident_post_states_the_findings_with_charts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_storm(&dir.join("storm.log"));
    let out = report(dir, &["--out", "storm"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = dir.join("reports/storm");
    let html = std::fs::read_to_string(r.join("index.html")).unwrap();
    let md = std::fs::read_to_string(r.join("report.md")).unwrap();
    // Findings in plain sentences, computed from the data.
    for text in [&html, &md] {
        assert!(text.contains("peaked at 1,955 per aligned 10m"), "{text}");
        assert!(text.contains("above the capacity of 1,610"), "{text}");
        assert!(text.contains("/24 networks"), "{text}");
        assert!(
            text.contains("100.0% claimed to be mobile browsers"),
            "{text}"
        );
        // The capacity part: a storm without failures never stalled the backend.
        assert!(text.contains("The backend never stalled"), "{text}");
    }
    // One self-contained page: charts inline, no script, no network.
    assert!(!html.contains("<script"));
    assert!(!html.contains("src=") && !html.contains("href=\"http"));
    assert_eq!(html.matches("<svg ").count(), 8, "{html}");
    assert_eq!(html.matches("class=\"chart\" data-kind=").count(), 8);
    assert!(html.contains("data-kind=\"time-series\""));
    assert!(html.contains("data-kind=\"lorenz\""));
    assert!(html.contains("class=\"shade\""), "the incident is shaded");
    assert!(html.contains("class=\"ref\""), "the capacity line is drawn");
    // Six 10-minute buckets in the time series.
    assert!(html.contains("data-points=\"6\""), "{html}");
    // Markdown: the charts as SVG files beside it, no local path in the post.
    for f in [
        "heavy.svg",
        "capacity.svg",
        "concentration.svg",
        "networks.svg",
        "agents.svg",
        "paths.svg",
        "statuses.svg",
    ] {
        assert!(md.contains(&format!("]({f})")), "{md}");
        let svg = std::fs::read_to_string(r.join(f)).unwrap();
        assert!(svg.starts_with("<?xml") && svg.contains("xmlns=\"http://www.w3.org/2000/svg\""));
    }
    let tmp_path = dir.to_string_lossy().to_string();
    assert!(!md.contains(&tmp_path) && !html.contains(&tmp_path), "{md}");
    assert!(md.contains("storm.log"));
    // Same input, same bytes.
    let again = report(dir, &["--out", "storm2"]);
    assert!(again.status.success());
    assert_eq!(
        std::fs::read(dir.join("reports/storm2/index.html")).unwrap(),
        html.as_bytes()
    );
}

#[test]
fn an_existing_report_is_replaced_only_with_force_and_other_directories_never() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_storm(&dir.join("storm.log"));
    assert!(report(dir, &["--out", "x"]).status.success());
    let again = report(dir, &["--out", "x"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    assert!(report(dir, &["--out", "x", "--force"]).status.success());
    std::fs::create_dir_all(dir.join("reports/mine")).unwrap();
    std::fs::write(dir.join("reports/mine/notes.txt"), "keep").unwrap();
    let other = report(dir, &["--out", "mine", "--force"]);
    assert_eq!(other.status.code(), Some(2));
    assert_eq!(
        std::fs::read_to_string(dir.join("reports/mine/notes.txt")).unwrap(),
        "keep"
    );
    // No temporary directory is left behind.
    let left: Vec<_> = std::fs::read_dir(dir.join("reports"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_quiet_selection_leaves_sections_out() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_storm(&dir.join("storm.log"));
    // Nothing in this period: a page that says so, no empty charts.
    let out = report(
        dir,
        &[
            "--out",
            "none",
            "--since",
            "2020-01-01",
            "--until",
            "2020-01-02",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(dir.join("reports/none/index.html")).unwrap();
    assert!(html.contains("No request matched the selection."));
    assert!(!html.contains("<svg"));
}

#[test]
fn a_candidate_limit_is_replayed_in_the_post() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_storm(&dir.join("storm.log"));
    let out = report(
        dir,
        &[
            "--out",
            "cap",
            "--limit",
            "1600/10m,scope=heavy",
            "--limit",
            "5/1m,key=ip",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(dir.join("reports/cap/report.md")).unwrap();
    // The site-wide cap holds every sliding window under the capacity; a per-address
    // limit does not (the storm comes from thousands of addresses).
    assert!(
        md.contains("The limit 1600/10m,scope=heavy would have refused")
            && md.contains("and kept every window under the capacity"),
        "{md}"
    );
    assert!(
        md.contains("The limit 5/m,key=ip would have refused"),
        "{md}"
    );
    assert!(
        md.contains("windows would still have been over the capacity"),
        "{md}"
    );
    // Standard input cannot be read once per part: refused, not silently empty.
    let mut c = common::logscope(&dir.join("data"));
    let stdin = c
        .current_dir(dir)
        .args(["report", "--out", "stdin", "-"])
        .write_stdin(std::fs::read(dir.join("storm.log")).unwrap())
        .output()
        .unwrap();
    assert_eq!(stdin.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&stdin.stderr).contains("ingest it first"));
    assert!(!dir.join("reports/stdin").exists());
    // A bad candidate is a usage error, with nothing written.
    let bad = report(dir, &["--out", "bad", "--limit", "10/0s"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(!dir.join("reports/bad").exists());
}
