//! Charts and data-grade output of `heavy`, `concentration` and `agents` through the
//! binary: CSV loads into DuckDB with numeric and time types, Markdown parsed by a
//! CommonMark/GFM parser keeps every table's column count and lets no hostile text
//! (`|`, backticks, `<script>`, newlines) out, and HTML has its charts with the
//! counted elements of the chart module.

use std::path::Path;
use std::process::Command;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use crate::common::*;

fn run(dir: &Path, args: &[&str]) -> String {
    let out = logscope(&dir.join("no-dataset"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// A small log with a storm of heavy requests from a few networks and hostile text in
/// paths, referers and agents.
fn hostile_log(dir: &Path) -> &'static str {
    let mut s = String::new();
    let agents = [
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
        "evil | `tick` <script>alert(1)</script> **b** [x](http://e)",
        "curl/8.0 \\n| a | b |",
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    ];
    for i in 0..600u32 {
        let min = i / 20;
        let ip = format!("10.{}.{}.{}", i % 3, i % 7, i % 50);
        let path = if i % 3 == 0 {
            "/w/index.php?search=%7C%60x%60%3Cscript%3E".to_string()
        } else {
            format!("/wiki/Page_{}|`<script>`", i % 9)
        };
        let ua = agents[(i % 4) as usize];
        s.push_str(&format!(
            "{ip} - - [25/Sep/2026:14:{:02}:{:02} +0000] \"GET {path} HTTP/1.1\" 200 {} \"-\" \"{ua}\"\n",
            min,
            i % 60,
            100 + i
        ));
    }
    std::fs::write(dir.join("hostile.log"), s).unwrap();
    "hostile.log"
}

const COMMANDS: [&[&str]; 3] = [
    &["heavy", "--by", "5m", "--capacity", "40/5m"],
    &[
        "concentration",
        "--top",
        "10",
        "--per-prefix-limit",
        "50/1h",
    ],
    &["agents", "--top", "5"],
];

#[test]
fn csv_loads_into_duckdb_with_numeric_types() {
    let have = Command::new("python3")
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        println!("SKIPPED: duckdb not installed");
        assert!(
            std::env::var_os("CI").is_none(),
            "duckdb (pip install duckdb) is required in CI"
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let f = hostile_log(dir);
    for (args, name) in COMMANDS.iter().zip(["heavy", "concentration", "agents"]) {
        let mut a = args.to_vec();
        a.extend(["--format", "csv", f]);
        let csv = run(dir, &a);
        assert!(
            !csv.contains("\"1,") && !csv.contains('%'),
            "{name}:\n{csv}"
        );
        std::fs::write(dir.join(format!("{name}.csv")), csv).unwrap();
    }
    // Column name → DuckDB type, as read_csv's detection sees them.
    let script = r#"
import duckdb, sys
con = duckdb.connect()
for name in ["heavy", "concentration", "agents"]:
    rel = con.sql(f"select * from read_csv('{sys.argv[1]}/{name}.csv', header=true)")
    for col, ty in zip(rel.columns, rel.types):
        print(f"{name}.{col}={ty}")
    print(f"{name}#rows={len(rel.fetchall())}")
"#;
    let out = Command::new("python3")
        .args(["-c", script, dir.to_str().unwrap()])
        .output()
        .unwrap();
    let types = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ty = |k: &str| {
        types
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("{k} missing:\n{types}"))
            .to_string()
    };
    let int = |k: &str| {
        let t = ty(k);
        assert!(
            [
                "BIGINT", "INTEGER", "SMALLINT", "TINYINT", "HUGEINT", "UBIGINT"
            ]
            .contains(&t.as_str()),
            "{k} is {t}:\n{types}"
        );
    };
    let num = |k: &str| {
        let t = ty(k);
        assert!(
            t == "DOUBLE" || t.starts_with("DECIMAL"),
            "{k} is {t}:\n{types}"
        );
    };
    for k in [
        "requests",
        "heavy",
        "ips",
        "prefixes",
        "peak_aligned_5m",
        "buckets",
    ] {
        int(&format!("heavy.{k}"));
    }
    num("heavy.top_prefix_share");
    num("heavy.agent_share");
    assert_eq!(ty("heavy.over_capacity"), "BOOLEAN");
    assert!(ty("heavy.start").starts_with("TIMESTAMP"), "{types}");
    for k in ["rank", "requests", "ips"] {
        int(&format!("concentration.{k}"));
    }
    num("concentration.share");
    num("concentration.cumulative_share");
    for k in ["selected", "all"] {
        int(&format!("agents.{k}"));
    }
    num("agents.selected_share");
    num("agents.all_share");
    assert_eq!(ty("heavy#rows"), "6");
}

/// Checks one Markdown document with a GFM parser: every table row has the header's
/// column count, no raw HTML and no link comes out of log text, and `expect_code`
/// fenced blocks are there.
fn check_markdown(name: &str, md: &str, expect_code: usize) {
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    let mut head_cells = 0usize;
    let mut cells = 0usize;
    let mut in_head = false;
    let mut tables = 0;
    let mut code_blocks = 0;
    for ev in Parser::new_ext(md, opts) {
        match ev {
            Event::Start(Tag::Table(_)) => tables += 1,
            Event::Start(Tag::TableHead) => {
                in_head = true;
                head_cells = 0;
            }
            Event::End(TagEnd::TableHead) => in_head = false,
            Event::Start(Tag::TableRow) => cells = 0,
            Event::Start(Tag::TableCell) => {
                if in_head {
                    head_cells += 1;
                } else {
                    cells += 1;
                }
            }
            Event::End(TagEnd::TableRow) => {
                assert_eq!(cells, head_cells, "{name}: a row lost its columns:\n{md}")
            }
            Event::Html(h) | Event::InlineHtml(h) => {
                panic!("{name}: raw HTML reached Markdown: {h:?}\n{md}")
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                panic!("{name}: a link came out of log text: {dest_url}\n{md}")
            }
            Event::Start(Tag::CodeBlock(_)) => code_blocks += 1,
            _ => {}
        }
    }
    assert!(tables > 0, "{name}: no table:\n{md}");
    assert_eq!(code_blocks, expect_code, "{name}: fenced blocks:\n{md}");
}

#[test]
fn markdown_tables_hold_against_hostile_text() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let f = hostile_log(dir);
    // heavy: one sparkline (heavy per 5m, the capacity's window); concentration: the
    // curve in figures; agents: the device mix.
    for (args, code) in COMMANDS.iter().zip([1, 1, 1]) {
        let mut a = args.to_vec();
        a.extend(["--format", "md", f]);
        let md = run(dir, &a);
        check_markdown(args[0], &md, code);
    }
    // concentration by address shows the hostile agent text in a cell.
    let md = run(dir, &["concentration", "--by", "ip", "--format", "md", f]);
    check_markdown("concentration --by ip", &md, 1);
    // agents with a sample: raw User-Agents in a table.
    let md = run(dir, &["agents", "--sample", "8", "--format", "md", f]);
    assert!(md.contains("evil"), "{md}");
    check_markdown("agents --sample", &md, 1);
}

/// Counts the chart module's elements in `html`: per `<svg class="chart">`, its kind
/// and (bars + segments, the points of each series).
pub fn chart_counts(html: &str) -> Vec<(String, usize, Vec<usize>)> {
    html.split("<svg ")
        .skip(1)
        .filter(|s| s.starts_with("xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\""))
        .map(|s| {
            let s = &s[..s.find("</svg>").unwrap_or(s.len())];
            let kind = s
                .split("data-kind=\"")
                .nth(1)
                .and_then(|k| k.split('"').next())
                .unwrap_or("")
                .to_string();
            let bars = s.matches("class=\"bar\"").count() + s.matches("class=\"seg\"").count();
            let points = s
                .split("data-points=\"")
                .skip(1)
                .filter_map(|p| p.split('"').next()?.parse().ok())
                .collect();
            (kind, bars, points)
        })
        .collect()
}

#[test]
fn html_has_the_charts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let f = hostile_log(dir);
    let html = |args: &[&str]| {
        let mut a = args.to_vec();
        a.extend(["--format", "html", f]);
        run(dir, &a)
    };
    // heavy: 30 minutes in 5m buckets, the capacity on the same window.
    let h = html(COMMANDS[0]);
    assert_eq!(
        chart_counts(&h),
        [("time-series".to_string(), 0, vec![6])],
        "{h}"
    );
    assert_eq!(h.matches("class=\"ref\"").count(), 1);
    assert!(h.contains("capacity 40 per 5m"));
    assert!(h.contains("peak per aligned 5m"));
    // heavy by 10m against a 5m capacity: a second chart of the aligned peak.
    let h2 = html(&["heavy", "--by", "10m", "--capacity", "40/5m"]);
    assert_eq!(
        chart_counts(&h2),
        [
            ("time-series".to_string(), 0, vec![3]),
            ("time-series".to_string(), 0, vec![3])
        ]
    );
    // concentration: 3 × 7 × 50 addresses fall in 21 /24s; the curve has 22 points.
    let c = html(COMMANDS[1]);
    assert_eq!(
        chart_counts(&c),
        [
            ("lorenz".to_string(), 0, vec![22]),
            ("bars".to_string(), 10, vec![])
        ],
        "{c}"
    );
    // agents: devices of the selection (= all traffic: one row), families.
    let a = html(COMMANDS[2]);
    let counts = chart_counts(&a);
    assert_eq!(counts.len(), 2, "{a}");
    assert_eq!(counts[0].0, "stacked");
    assert!(counts[0].1 >= 2, "{counts:?}");
    assert_eq!(counts[1].0, "bars");
    for page in [&h, &h2, &c, &a] {
        assert!(!page.contains("<script"), "{page}");
        assert!(page.contains("default-src 'none'"));
    }
}
