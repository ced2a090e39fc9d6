//! The fast read path of the dataset (coded text columns, classification once per
//! distinct value, only the needed columns, several decoders) against the plain path
//! (the same log parsed from its file, row by row): every report must answer the same
//! under random filters and rules.

use std::path::Path;

use super::common::{Rng, logscope, report_json_without_origin};

/// A vhost-combined log of `n` lines over ten days: hosts, users, methods, heavy and
/// light MediaWiki requests, API searches, host-name clients among addresses, IPv6,
/// agents that repeat and agents that do not.
pub(crate) fn mixed_log(path: &Path, n: usize, seed: u64) {
    let mut rng = Rng(seed);
    let start = 1_717_200_000i64; // 2024-06-01
    let mut out = String::new();
    for i in 0..n as i64 {
        let t = start + i * (864_000 / n as i64) + rng.below(600) as i64 - 300;
        let dt = chrono::DateTime::from_timestamp(t.max(start), 0).unwrap();
        let client = match rng.below(20) {
            0 => format!("crawler{}.example.net", rng.below(5)),
            1 => format!("2001:db8:{}::{}", rng.below(4), rng.below(50)),
            _ => format!("10.{}.{}.{}", rng.below(3), rng.below(30), rng.below(20)),
        };
        let user = if rng.below(10) == 0 { "alice" } else { "-" };
        let method = ["GET", "GET", "GET", "POST", "HEAD"][rng.below(5) as usize];
        let target = match rng.below(8) {
            0 => format!(
                "/w/index.php?title=P{}&diff={}",
                rng.below(40),
                rng.below(999)
            ),
            1 => format!("/w/index.php?title=P{}&action=history", rng.below(40)),
            2 => format!(
                "/w/api.php?action=query&list=search&srsearch=q{}",
                rng.below(99)
            ),
            3 => format!("/wiki/Special:Search/q{}", rng.below(30)),
            4 => format!("/w/index.php?title=P{}", rng.below(40)),
            _ => format!("/wiki/P{}", rng.below(200)),
        };
        let agent = match rng.below(6) {
            0 => format!(
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_{} like Mac OS X)",
                rng.below(999)
            ),
            1 => "curl/8.5.0".to_string(),
            2 => "Mozilla/5.0 (compatible; GPTBot/1.0; +https://openai.com/gptbot)".to_string(),
            3 => "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36"
                .to_string(),
            4 => "-".to_string(),
            _ => "Googlebot/2.1 (+http://www.google.com/bot.html)".to_string(),
        };
        let host = [
            "wiki.example.org",
            "www.example.org",
            "api.example.org:8080",
        ][rng.below(3) as usize];
        out.push_str(&format!(
            "{host} {client} - {user} [{}] \"{method} {target} HTTP/1.1\" {} {} \"-\" \"{agent}\"\n",
            dt.format("%d/%b/%Y:%H:%M:%S +0000"),
            [200, 200, 200, 304, 404, 429, 503][rng.below(7) as usize],
            rng.below(99999)
        ));
    }
    std::fs::write(path, out).unwrap();
}

fn report(data: &Path, args: &[String], file: Option<&Path>) -> serde_json::Value {
    let mut c = logscope(data);
    c.args(args).args(["--format", "json"]);
    if let Some(f) = file {
        c.args(["--input-format", "vhost-combined"]).arg(f);
    }
    report_json_without_origin(c, &format!("{args:?}"))
}

const RULES: &str = r#"
[heavy]
mediawiki = true

[[heavy.class]]
name = "api-search"
path = '^/w/api\.php$'
query = '(^|&)list=search(&|$)'
methods = ["GET", "POST"]

[[heavy.class]]
name = "head"
methods = ["HEAD"]

[[heavy.class]]
name = "p7"
path = '^/wiki/P7'
exclude = true

[identity]
anonymous_without_user = true
"#;

#[test]
fn dataset_reads_answer_as_file_reads_under_random_filters_and_rules() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = tmp.path().join("access.log");
    mixed_log(&log, 9_000, 0xc0de);
    let rules = tmp.path().join("rules.toml");
    std::fs::write(&rules, RULES).unwrap();
    // Small row groups and slices: many coded batches, each with its own dictionaries.
    let out = logscope(&data)
        .env("LOGSCOPE_ROW_GROUP_ROWS", "700")
        .args([
            "ingest",
            "--json",
            "--final-line",
            "take",
            "--format",
            "vhost-combined",
        ])
        .arg(&log)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let filters: [&[&str]; 10] = [
        &[],
        &["--heavy"],
        &["--anonymous"],
        &["--agent", "mobile"],
        &["--agent", "GPTBot,curl"],
        &["--host", "*.example.org", "--status", "4xx,503"],
        &["--host", "api.example.org"],
        &["--client", "10.1.0.0/16"],
        &["--path", "^/wiki/"],
        &["--since", "2024-06-03", "--until", "2024-06-06"],
    ];
    let commands: [&[&str]; 7] = [
        &["heavy", "--by", "6h"],
        &["capacity", "--by", "1h", "--scope", "heavy"],
        &["concentration", "--top", "8"],
        &["concentration", "--by", "ip", "--top", "8"],
        &["agents", "--sample", "5", "--seed", "3"],
        &["heavy", "--by", "1d"],
        &["availability", "--by", "day"],
    ];
    let mut rng = Rng(11);
    let mut compared = 0;
    for cmd in commands {
        for _ in 0..4 {
            let mut args: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
            // One or two filters together, with or without the rules file.
            for _ in 0..1 + rng.below(2) {
                let f = filters[rng.below(filters.len() as u64) as usize];
                if f.iter().any(|a| args.contains(&a.to_string())) {
                    continue;
                }
                args.extend(f.iter().map(|s| s.to_string()));
            }
            if rng.below(2) == 0 {
                args.push("--rules".into());
                args.push(rules.to_str().unwrap().into());
            }
            let from_dataset = report(&data, &args, None);
            let from_file = report(&data, &args, Some(&log));
            assert_eq!(from_dataset, from_file, "{args:?}");
            compared += 1;
        }
    }
    assert_eq!(compared, 28);
    // agents without filter or sample counts per distinct User-Agent over the dataset.
    for extra in [
        &[][..],
        &["--since", "2024-06-02", "--until", "2024-06-04"][..],
    ] {
        let mut args: Vec<String> = ["agents", "--top", "30"].map(String::from).to_vec();
        args.extend(extra.iter().map(|s| s.to_string()));
        assert_eq!(
            report(&data, &args, None),
            report(&data, &args, Some(&log)),
            "{args:?}"
        );
    }
}

/// The page reader (`src/store/pages.rs`, the default) against polars' reader on the
/// same dataset: every command answers byte for byte the same, and the page reader read
/// every slice itself (`LOGSCOPE_SCAN=pages` refuses the fallback).
#[test]
fn page_reader_answers_as_polars_reader() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = tmp.path().join("access.log");
    mixed_log(&log, 6_000, 0xfeed);
    // A second input in the same month (two `file` runs in a row group), with a path
    // holding a backslash and a byte that is not UTF-8.
    let other = tmp.path().join("other.log");
    let mut extra = Vec::new();
    for i in 0..300 {
        extra.extend_from_slice(
            format!(
                "wiki.example.org 192.0.2.{} - - [03/Jun/2024:10:{:02}:00 +0000] \"GET /a\\\\b",
                i % 7,
                i % 60
            )
            .as_bytes(),
        );
        extra.extend_from_slice(b"\xac HTTP/1.1\" 200 5 \"-\" \"curl/8\"\n");
    }
    std::fs::write(&other, extra).unwrap();
    let out = logscope(&data)
        .env("LOGSCOPE_ROW_GROUP_ROWS", "512")
        .args([
            "ingest",
            "--final-line",
            "take",
            "--format",
            "vhost-combined",
        ])
        .arg(&log)
        .arg(&other)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let commands: [&[&str]; 12] = [
        &["heavy", "--by", "1h"],
        &["capacity", "--by", "10m"],
        &["concentration", "--top", "8"],
        &["agents"],
        &["agents", "--agent", "mobile", "--sample", "3"],
        &["availability", "--by", "day"],
        &["top", "--by", "path", "--top", "50"],
        &["top", "--by", "ip", "--errors"],
        &["top", "--by", "prefix", "--sort", "clients"],
        &["top", "--by", "status"],
        &["timeline", "--client", "10.1.0.0/16", "--by", "1h"],
        &["replay", "--limit", "20/1m,key=ip"],
    ];
    let periods: [&[&str]; 2] = [
        &[],
        // Cuts row groups in the middle.
        &[
            "--since",
            "2024-06-03T10:17:00.000Z",
            "--until",
            "2024-06-05T03:00:00.000Z",
        ],
    ];
    let run = |mode: &str, args: &[&str]| {
        let out = logscope(&data)
            .env("LOGSCOPE_SCAN", mode)
            .args(args)
            .args(["--format", "json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{mode} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    for cmd in commands {
        for period in periods {
            let args: Vec<&str> = cmd.iter().chain(period.iter()).copied().collect();
            let (mut pages, mut polars) = (run("pages", &args), run("polars", &args));
            if cmd[0] == "replay" {
                // And every decision, in order.
                for (mode, out) in [("pages", &mut pages), ("polars", &mut polars)] {
                    let csv = tmp.path().join(format!("{mode}.csv"));
                    let mut a = args.clone();
                    a.extend(["--force", "--decisions", csv.to_str().unwrap()]);
                    run(mode, &a);
                    out.extend(std::fs::read(&csv).unwrap());
                }
            }
            assert!(!pages.is_empty(), "{args:?}");
            assert!(pages == polars, "{args:?}: the page reader differs");
        }
    }
}
