//! `logscope report`: the incident post — findings from the data, charts, the parts'
//! tables, one HTML page and a Markdown file with SVG charts beside it.

use std::io::Write;
use std::path::Path;

use logscope_core::forensics::top::bytes_label;
use logscope_core::number::thousands;

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

/// What [`write_season`] wrote.
struct Season {
    lines: u64,
}

/// The first day of the season (2025-01-06, UTC).
const SEASON_START_S: i64 = 1_736_121_600;
/// Its days.
const SEASON_DAYS: i64 = 160;
/// The burst's day: 2025-03-14 (day 67), 10:00–12:00 UTC.
const BURST_DAY: i64 = 67;

/// 160 days (2025-01-06 to 2025-06-14) of a small wiki, seeded: 600 requests a day —
/// reads, 5% heavy (`action=history`), 404s, a few 500s, static files — from 3,000
/// addresses in 600 /24s, desktops, phones and crawlers; and one burst on 2025-03-14
/// from 10:00 to 12:00 UTC: 15,000 heavy requests from phones in 1,500 addresses.
fn write_season(path: &Path) -> Season {
    let mut rng = common::Rng(0x5eed_0005);
    let agents = [
        DESKTOP,
        PHONE,
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        "curl/8.5.0",
    ];
    let mut lines: Vec<(i64, String)> = Vec::new();
    let fmt = |s: i64, ip: &str, uri: &str, status: u16, bytes: u64, ua: &str| {
        let t = chrono::DateTime::from_timestamp(s, 0).unwrap();
        format!(
            "{ip} - - [{}] \"GET {uri} HTTP/1.1\" {status} {bytes} \"-\" \"{ua}\"",
            t.format("%d/%b/%Y:%H:%M:%S +0000")
        )
    };
    for day in 0..SEASON_DAYS {
        for _ in 0..600 {
            let s = SEASON_START_S + day * 86_400 + rng.below(86_400) as i64;
            let client = rng.below(3_000);
            let ip = format!(
                "{}.{}.{}.{}",
                30 + client % 60,
                client % 10,
                7,
                1 + client % 200
            );
            let n = rng.below(2_000);
            let (uri, status) = match rng.below(100) {
                0..70 => (format!("/wiki/Page_{n}"), 200),
                70..75 => (format!("/index.php?title=Page_{n}&action=history"), 200),
                75..85 => (format!("/missing/{n}"), 404),
                85..87 => ("/api/search".to_string(), 500),
                _ => ("/static/app.js".to_string(), 200),
            };
            let ua = agents[rng.below(agents.len() as u64) as usize];
            let bytes = 200 + rng.below(20_000);
            lines.push((s, fmt(s, &ip, &uri, status, bytes, ua)));
        }
    }
    let burst = SEASON_START_S + BURST_DAY * 86_400 + 10 * 3_600;
    for _ in 0..15_000 {
        let s = burst + rng.below(7_200) as i64;
        let k = rng.below(1_500);
        let ip = format!(
            "{}.{}.{}.{}",
            100 + k % 90,
            k / 90,
            rng.below(256),
            1 + k % 250
        );
        let uri = format!("/index.php?title=Page_{}&action=history", rng.below(50_000));
        lines.push((s, fmt(s, &ip, &uri, 200, 5_000, PHONE)));
    }
    lines.sort();
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for (_, l) in &lines {
        writeln!(f, "{l}").unwrap();
    }
    Season {
        lines: lines.len() as u64,
    }
}

/// The `<h2>` titles of a page, in order.
fn h2_titles(html: &str) -> Vec<String> {
    html.split("<h2>")
        .skip(1)
        .filter_map(|s| s.split("</h2>").next())
        .map(str::to_string)
        .collect()
}

/// Five months of log with one burst: the page stays small, every section is there,
/// the bucket width is chosen for the span and said, the incident is found around the
/// burst without --capacity, long tables are cut with their CSV beside the page, and
/// the key figures are `top`'s numbers.
#[test]
fn a_long_log_gives_a_short_page_with_the_burst_found() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let season = write_season(&dir.join("season.log"));
    assert!(season.lines > 100_000, "{}", season.lines);
    common::ok_stdout(common::logscope(&dir.join("data")).current_dir(dir).args([
        "report",
        "--out",
        "season",
        "season.log",
    ]));
    let r = dir.join("reports/season");
    let html = std::fs::read_to_string(r.join("index.html")).unwrap();
    let md = std::fs::read_to_string(r.join("report.md")).unwrap();
    assert!(html.len() < 1_000_000, "index.html is {} bytes", html.len());
    assert!(
        md.lines().count() < 2_000,
        "report.md is {} lines",
        md.lines().count()
    );
    // Every section is still there.
    let titles = h2_titles(&html);
    for want in [
        "Availability per month",
        "Heavy requests per 1d",
        "Capacity per 1d (heavy)",
        "Windows",
        "Concentration by /24 prefix",
        "Top 20 /24 prefixes",
        "User agents: selection vs all traffic",
        "Devices",
        "Top paths by requests",
        "Top statuses by requests",
    ] {
        assert!(titles.iter().any(|t| t == want), "{want}: {titles:?}");
    }
    // The width, chosen for the span, and said.
    for text in [&html, &md] {
        assert!(
            text.contains(
                "Buckets of 1d, chosen for a 160-day span (at most 400 buckets); --by to choose."
            ),
            "{text}"
        );
    }
    assert!(html.contains("data-points=\"160\""), "one point a day");
    // The incident, found around the burst without --capacity, in the title.
    assert!(
        html.contains("<h1>Incident report: 2025-03-14</h1>"),
        "{html}"
    );
    assert!(md.starts_with("## Incident report: 2025-03-14\n"), "{md}");
    assert!(
        md.contains("The incident, found from the data: 2025-03-14, the run of 1d buckets around the busiest ("),
        "{md}"
    );
    assert!(
        md.contains("In the incident the heavy requests came from"),
        "{md}"
    );
    assert!(html.contains("class=\"shade\""), "the incident is shaded");
    // Long tables: the 50 busiest days shown (the burst's among them), the whole table
    // in a CSV file beside the page.
    assert!(
        md.contains("110 more rows: full data in heavy.csv (shown: the 50 rows with the most \"heavy\", in table order)."),
        "{md}"
    );
    assert!(
        md.contains("110 more rows: full data in capacity.csv"),
        "{md}"
    );
    let heavy_csv = std::fs::read_to_string(r.join("heavy.csv")).unwrap();
    assert_eq!(heavy_csv.lines().count(), 161, "{heavy_csv}");
    assert!(heavy_csv.starts_with("start,requests,heavy,"));
    assert!(heavy_csv.contains("\n2025-03-14T00:00:00.000Z,"));
    assert!(
        html.contains(
            "<td style=\"text-align:right\">2025-03-14</td><td style=\"text-align:right\">15,"
        ),
        "{html}"
    );
    // The key figures are top's numbers for the same selection.
    let top = common::ok_json(common::logscope(&dir.join("data")).current_dir(dir).args([
        "top",
        "--by",
        "path",
        "--format",
        "json",
        "season.log",
    ]));
    let n = |k: &str| top[k].as_u64().unwrap();
    assert_eq!(n("requests"), season.lines);
    let clients = if top["clients_estimated"].as_bool().unwrap() {
        format!("≈{}", thousands(n("clients")))
    } else {
        thousands(n("clients"))
    };
    // Unique visitors: GoAccess's, the days' visitors of `top --by day` summed.
    let days = common::ok_json(common::logscope(&dir.join("data")).current_dir(dir).args([
        "top",
        "--by",
        "day",
        "--format",
        "json",
        "season.log",
    ]));
    let rows = days["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 160);
    let visitors: u64 = rows.iter().map(|r| r["clients"].as_u64().unwrap()).sum();
    for (label, value) in [
        ("requests", thousands(n("requests"))),
        ("failed", thousands(n("errors"))),
        ("clients", clients),
        ("unique visitors", thousands(visitors)),
        ("data sent", bytes_label(n("bytes"))),
        ("span", "160 days".to_string()),
    ] {
        let want = format!("<dt>{label}</dt><dd>{value}</dd>");
        assert!(html.contains(&want), "{want}");
    }
    assert!(
        md.contains(&format!(
            "| {} | {} (",
            thousands(n("requests")),
            thousands(n("errors"))
        )),
        "{md}"
    );
    // Over the dataset (the buckets tallied where the rows are decoded, widened as the
    // span grows): the same report, the same CSV files.
    let (_, code) = common::ingest_json(
        &dir.join("data"),
        &[dir.join("season.log").to_str().unwrap()],
    );
    assert_eq!(code, 0);
    let out = common::logscope(&dir.join("data"))
        .current_dir(dir)
        .args(["report", "--out", "season-dataset"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = dir.join("reports/season-dataset");
    assert_eq!(
        std::fs::read_to_string(d.join("report.md")).unwrap(),
        md.replace("season.log", "dataset")
    );
    for f in ["heavy.csv", "capacity.csv"] {
        assert_eq!(
            std::fs::read(d.join(f)).unwrap(),
            std::fs::read(r.join(f)).unwrap(),
            "{f}"
        );
    }
}

/// Without an incident the page is a traffic report over the span; with --capacity the
/// incident is where the aligned peak went over it.
#[test]
fn the_title_says_incident_only_when_there_is_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_season(&dir.join("season.log"));
    let run = |name: &str, extra: &[&str]| {
        let out = common::logscope(&dir.join("data"))
            .current_dir(dir)
            .args(["report", "--out", name])
            .args(extra)
            .arg("season.log")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::read_to_string(dir.join("reports").join(name).join("report.md")).unwrap()
    };
    // A quiet month: no burst, no incident.
    let md = run("april", &["--since", "2025-04-01", "--until", "2025-04-30"]);
    assert!(
        md.starts_with("## Traffic report: 2025-04-01 to 2025-04-30\n"),
        "{md}"
    );
    assert!(
        md.contains("Buckets of 3h, chosen for a 30-day span"),
        "{md}"
    );
    assert!(!md.contains("found from the data"), "{md}");
    // A capacity the burst went over: the incident is the hours over it.
    let md = run("cap", &["--capacity", "2000/1h"]);
    assert!(md.starts_with("## Incident report: 2025-03-14\n"), "{md}");
    // An explicit width is kept.
    let md = run(
        "hourly",
        &[
            "--by",
            "6h",
            "--since",
            "2025-03-01",
            "--until",
            "2025-03-31",
        ],
    );
    assert!(md.contains("Buckets of 6h, as --by asked."), "{md}");
    assert!(
        md.starts_with("## Incident report: 2025-03-14 06:00 to 12:00\n"),
        "{md}"
    );
}

/// A 32 KB path cannot push the numbers off the page: its cell shows 120 columns and
/// `…`, the whole path (escaped) in the cell's title.
#[test]
fn a_long_cell_is_cut_on_the_page_with_the_whole_value_in_its_title() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let long = format!("/exploit/{}'<b>&{}", "A".repeat(16_000), "B".repeat(16_000));
    let line = |path: &str| {
        format!(
            "203.0.113.7 - - [14/Mar/2025:10:00:00 +0000] \"GET {path} HTTP/1.1\" 404 100 \"-\" \"curl/8\""
        )
    };
    std::fs::write(
        dir.join("long.log"),
        format!("{}\n{}\n{}\n", line(&long), line("/"), line("/")),
    )
    .unwrap();
    let out = common::logscope(&dir.join("data"))
        .current_dir(dir)
        .args(["top", "--by", "path", "--format", "html", "long.log"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = String::from_utf8(out.stdout).unwrap();
    let escaped = long
        .replace('&', "&amp;")
        .replace('\'', "&#39;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let cell = html
        .split("<td")
        .skip(1)
        .find(|c| c.contains("/exploit/"))
        .expect("the path's cell");
    assert!(
        cell.starts_with(&format!(" title=\"{escaped}\">/exploit/AAA")),
        "{}",
        &cell[..200]
    );
    let shown = cell.split('>').nth(1).unwrap().trim_end_matches("</td");
    assert_eq!(shown.chars().count(), 120, "{shown}");
    assert!(shown.ends_with("AAA…"), "{shown}");
    // The numbers of the row are cells of their own, after it; the page keeps its CSP.
    assert!(html.contains("Content-Security-Policy"));
    assert!(!html.contains("<script"));
    assert!(html.contains("overflow-wrap:anywhere"));
}

/// Without --out the report is named after the first and last day of its rows (never
/// the wall clock), and says where it wrote, in full; a bare --out name goes under
/// ./reports/ and the message says so.
#[test]
fn without_out_the_report_is_named_after_its_days() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_season(&dir.join("season.log"));
    write_storm(&dir.join("storm.log"));
    let here = dir.canonicalize().unwrap();
    let run = |args: &[&str]| {
        let out = common::logscope(&dir.join("data"))
            .current_dir(dir)
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let april = [
        "report",
        "--since",
        "2025-04-01",
        "--until",
        "2025-04-30",
        "season.log",
    ];
    let (code, err) = run(&april);
    assert_eq!(code, Some(0), "{err}");
    let r = here.join("reports/report-2025-04-01_2025-04-30");
    assert!(r.join("index.html").is_file() && r.join("report.md").is_file());
    assert!(
        err.contains(&format!(
            "wrote {} and {}",
            r.join("index.html").display(),
            r.join("report.md").display()
        )),
        "{err}"
    );
    assert!(err.contains("named after the first and last day"), "{err}");
    // The same selection again: the same name, replaced only with --force.
    let (code, err) = run(&april);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--force"), "{err}");
    let mut forced = april.to_vec();
    forced.push("--force");
    assert_eq!(run(&forced).0, Some(0));
    // One day (on the --tz clock): its date alone.
    let (code, err) = run(&["report", "--tz", "Asia/Seoul", "storm.log"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        here.join("reports/report-2026-09-25/index.html").is_file(),
        "{err}"
    );
    // A bare name: under ./reports/, said in full.
    let (code, err) = run(&["report", "--out", "storm", "storm.log"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(&here.join("reports/storm/index.html").display().to_string()),
        "{err}"
    );
    assert!(
        err.contains("a bare --out name is written under ./reports/"),
        "{err}"
    );
    let (code, err) = run(&["heavy", "--format", "md", "--out", "storm.md", "storm.log"]);
    assert_eq!(code, Some(0), "{err}");
    let want = format!(
        "logscope: wrote {} (a bare --out name is written under ./reports/)",
        here.join("reports/storm.md").display()
    );
    assert!(err.lines().any(|l| l == want), "{err}");
    // A path is used as given, and shown in full.
    let (code, err) = run(&[
        "heavy",
        "--format",
        "md",
        "--out",
        "./storm.md",
        "storm.log",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(here.join("storm.md").is_file());
    let want = format!("logscope: wrote {}", here.join("storm.md").display());
    assert!(err.lines().any(|l| l == want), "{err}");
    assert!(!err.contains("bare"), "{err}");
}

/// With --asn-db the post says which autonomous systems the heavy requests came from,
/// and lists them (the storm's phones: 20–22.x in one AS, 23–26.x in another).
#[test]
fn a_network_database_names_the_autonomous_systems() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_storm(&dir.join("storm.log"));
    std::fs::write(
        dir.join("ip2asn.tsv"),
        "20.0.0.0\t22.255.255.255\t64500\tZZ\tEXAMPLE-A\n\
         23.0.0.0\t26.255.255.255\t64501\tZZ\tEXAMPLE-B\n\
         198.51.100.0\t198.51.100.255\t64502\tZZ\tEXAMPLE-READERS\n",
    )
    .unwrap();
    let out = report(dir, &["--asn-db", "ip2asn.tsv", "--out", "r"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(dir.join("reports/r/report.md")).unwrap();
    assert!(
        md.contains("came from 2 autonomous systems; the largest, AS64501 EXAMPLE-B, sent"),
        "{md}"
    );
    assert!(md.contains("AS64500"), "{md}");
    // The readers' AS sent no heavy request: not in the heavy requests' list.
    assert!(!md.contains("AS64502"), "{md}");
    // Without the database, no such sentence.
    let out = report(dir, &["--out", "r2"]);
    assert!(out.status.success());
    let md = std::fs::read_to_string(dir.join("reports/r2/report.md")).unwrap();
    assert!(!md.contains("autonomous systems"), "{md}");
}
