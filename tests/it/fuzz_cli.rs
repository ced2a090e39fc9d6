//! Fuzzing the option grammars parsed in the `logscope` crate (src/cli: `--since`,
//! `--until`, `--tz`, `--status`, `--client`, `--agent`, `--by`, `--capacity`,
//! `--expect-every`, `--log-format`, `--limit`, …) through the binary, bounded: about 300
//! process spawns chosen by a seeded generator from every command's flags × edge values,
//! valid values and mutated valid values, each on a tiny log in a tempdir.
//!
//! Every run must exit 0, 1, 2, 3, 4 or 5 (`watch`: an alert fired) — never 101 (a panic), a signal (an abort, e.g.
//! an allocation failure under the 2 GiB address-space limit each run gets) or the 30 s
//! timeout — and print no "panicked at". Failures are collected and listed together, each
//! as a command line to paste. `LOGSCOPE_FUZZ_SCALE=N` runs N× the spawns,
//! `LOGSCOPE_FUZZ_SEED=N` another sequence.

use std::fmt::Write as _;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{Rng, fixture};

/// Values that have broken option parsers somewhere: empty, signs, huge numbers,
/// Unicode, terminal escapes, impossible dates and times.
const EDGE: &[&str] = &[
    "",
    " ",
    "-",
    "--",
    "0",
    "-1",
    "1e999",
    "NaN",
    "9999999999999999999999",
    "18446744073709551616",
    "é",
    "漢字",
    "\u{1b}[31m",
    "\u{7}",
    "10/0s",
    "0/0",
    "1/0",
    "-5m",
    "0s",
    "1h30",
    "1h30m",
    "2024-02-30",
    "2024-13-01",
    "25:61",
    "2024-06-01T25:61",
    "9999-12-31",
    "0000-01-01",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59+14:00",
    "1969-12-31",
    "+99:99",
    "+14:00",
    "-12:00",
    "Mars/Olympus",
    "UTC",
    ",",
    ",,",
    "(",
    "[",
    "a{99999}{99999}",
    "::/0",
    "fe80::1%eth0",
    "*.",
    "0-65535",
    "none",
];

#[derive(Clone, Copy)]
enum Kind {
    /// A flag without a value.
    Bool,
    /// A value from these valid ones (plus edges and mutations).
    Value(&'static [&'static str]),
    /// A file to read.
    InPath,
    /// A file to write.
    OutPath,
}

use Kind::*;

const TIMES: &[&str] = &[
    "2024-05-20",
    "2024-05-20T10:00",
    "2024-05-20 10:00",
    "2024-05-20T10:00:00Z",
    "2024-05-20T10:00:00.5+09:00",
    "2024-05-21",
];
const ZONES: &[&str] = &["UTC", "Asia/Seoul", "Europe/Berlin", "+09:00", "-0330", "z"];
const STATUSES: &[&str] = &["5xx", "429", "200-299", "2xx,3xx,404", "500-504"];
const CLIENTS: &[&str] = &["10.0.0.0/8", "1.2.3.4", "2001:db8::/32", "10.0.0.0/8,::1"];
const AGENTS: &[&str] = &["mobile", "ai,search", "GPTBot", "curl", "browser,crawler"];
const WIDTHS: &[&str] = &["1m", "10m", "1h", "1d", "2w", "500ms", "30s"];
const RATES: &[&str] = &["1610/10m", "100/1h", "300/1m", "1/1s"];
const FORMATS: &[&str] = &[
    "combined",
    "common",
    "caddy",
    "w3c",
    "nginx-msec",
    "elb",
    "clf",
];
const LOG_FORMATS: &[&str] = &[
    r#"%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i""#,
    r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent""#,
    r#"%h %t "%r" %>s %b é"#,
    r#"nginx:'$remote_addr [$time_local] "$request" $status'"#,
];
const OFFSETS: &[&str] = &["+0000", "+02:00", "-0400", "Z", "utc"];
const SPECS: &[&str] = &[
    "5r/s",
    "1600/10m",
    "5r/s,algo=nginx,burst=10,nodelay,key=ip",
    "1/5s,algo=token-bucket,burst=15,key=prefix/24",
    "10/s,algo=leaky-queue,queue=7",
    "100/1m,algo=fixed-window,key=uri,cost=bytes",
];
const NUMBERS: &[&str] = &["0", "1", "5", "30", "1000"];
const OUT_FORMATS: &[&str] = &["text", "md", "csv", "json", "html"];

/// Flags every report takes: selection, classification, output, rows.
const REPORT_FLAGS: &[(&str, Kind)] = &[
    ("--since", Value(TIMES)),
    ("--until", Value(TIMES)),
    ("--tz", Value(ZONES)),
    ("--heavy", Bool),
    ("--anonymous", Bool),
    ("--status", Value(STATUSES)),
    ("--path", Value(&["^/index\\.php$", "/w/", ".*"])),
    (
        "--host",
        Value(&["wiki.example", "*.example", "wiki.example:443"]),
    ),
    ("--client", Value(CLIENTS)),
    ("--agent", Value(AGENTS)),
    ("--rules", InPath),
    ("--prefix-v4", Value(&["24", "16", "32", "0", "33"])),
    ("--prefix-v6", Value(&["48", "64", "128", "129"])),
    ("--trust-proxy", Value(CLIENTS)),
    ("--session-cookie", Value(&["wiki_session", "é"])),
    ("--format", Value(OUT_FORMATS)),
    ("--out", OutPath),
    ("--input-format", Value(FORMATS)),
    ("--log-format", Value(LOG_FORMATS)),
    ("--assume-offset", Value(OFFSETS)),
];

struct Cmd {
    name: &'static str,
    flags: &'static [(&'static str, Kind)],
    reports: bool,
}

const COMMANDS: &[Cmd] = &[
    Cmd {
        name: "heavy",
        flags: &[("--by", Value(WIDTHS)), ("--capacity", Value(RATES))],
        reports: true,
    },
    Cmd {
        name: "concentration",
        flags: &[
            ("--by", Value(&["prefix", "ip", "asn"])),
            ("--top", Value(NUMBERS)),
            ("--per-prefix-limit", Value(RATES)),
            ("--asn-db", InPath),
        ],
        reports: true,
    },
    Cmd {
        name: "agents",
        flags: &[
            ("--top", Value(NUMBERS)),
            ("--sample", Value(NUMBERS)),
            ("--seed", Value(NUMBERS)),
        ],
        reports: true,
    },
    Cmd {
        name: "replay",
        flags: &[
            ("--limit", Value(SPECS)),
            ("--config", InPath),
            ("--exempt", Value(CLIENTS)),
            ("--exempt-agent", Value(&["^curl/", "("])),
            ("--exempt-user", Value(&["alice", "alice,bob"])),
            ("--exempt-identified", Bool),
            ("--internal", Value(CLIENTS)),
            ("--internal-agent", Value(&["^curl/", "bot"])),
            ("--internal-user", Value(&["svc"])),
            ("--capacity", Value(RATES)),
            ("--by", Value(WIDTHS)),
            ("--top", Value(NUMBERS)),
            ("--decisions", OutPath),
            ("--decisions-seq", Bool),
            ("--keys", Value(&["0/3", "2/3", "3/3", "x"])),
            ("--refusal-status", Value(&["429", "429,503", "70000"])),
            ("--drop-logged-refusals", Bool),
        ],
        reports: true,
    },
    Cmd {
        name: "top",
        flags: &[
            (
                "--by",
                Value(&[
                    "path", "status", "referer", "agent", "ip", "prefix", "host", "method", "nope",
                ]),
            ),
            ("--limit", Value(NUMBERS)),
            (
                "--sort",
                Value(&["requests", "bytes", "clients", "errors", "x"]),
            ),
            ("--errors", Bool),
        ],
        reports: true,
    },
    Cmd {
        name: "timeline",
        flags: &[
            ("--client", Value(CLIENTS)),
            ("--by", Value(WIDTHS)),
            ("--limit", Value(NUMBERS)),
        ],
        reports: true,
    },
    Cmd {
        name: "report",
        flags: &[
            ("--out", OutPath),
            ("--force", Bool),
            ("--by", Value(WIDTHS)),
            ("--capacity", Value(RATES)),
            ("--since", Value(TIMES)),
            ("--until", Value(TIMES)),
            ("--tz", Value(ZONES)),
            ("--heavy", Bool),
            ("--full-paths", Bool),
        ],
        reports: false,
    },
    Cmd {
        name: "availability",
        flags: &[
            ("--probe", Value(&["BlankPage", "^/wiki/", "("])),
            ("--by", Value(&["month", "week", "day", "hour"])),
            ("--tz", Value(ZONES)),
            ("--success", Value(STATUSES)),
            ("--policy-status", Value(&["403,429", "none", "4xx"])),
            ("--policy", Value(&["exclude", "success", "failure"])),
            (
                "--expect-every",
                Value(&["1m", "90s", "1h30m", "1.5h", "1ms"]),
            ),
            ("--min-gap", Value(&["5m", "1h", "1ms"])),
            ("--bucket", Value(&["5m", "1m", "1d", "1ms"])),
            ("--incident-below", Value(&["80", "0", "100", "101", "-1"])),
            ("--merge-within", Value(&["15m", "0s", "1w"])),
            ("--grades", Value(&["99.9,99,95", "100,50,0", "1,2,3"])),
            ("--since", Value(TIMES)),
            ("--until", Value(TIMES)),
            ("--host", Value(&["wiki.example"])),
            ("--max-incidents", Value(NUMBERS)),
            ("--format", Value(OUT_FORMATS)),
            ("--out", OutPath),
            ("--input-format", Value(FORMATS)),
            ("--log-format", Value(LOG_FORMATS)),
            ("--assume-offset", Value(OFFSETS)),
        ],
        reports: false,
    },
    Cmd {
        name: "ingest",
        flags: &[
            ("--format", Value(FORMATS)),
            ("--log-format", Value(LOG_FORMATS)),
            ("--assume-offset", Value(OFFSETS)),
            ("--rejects", OutPath),
            ("--show-bad", Value(NUMBERS)),
            ("--max-bad", Value(&["0.5", "0", "1", "1.5"])),
            ("--max-line", Value(&["1048576", "100", "1", "0", "200"])),
            ("--threads", Value(&["0", "1", "2", "64"])),
            ("--no-wait", Bool),
            ("--quiet", Bool),
            ("--json", Bool),
            ("--dry-run", Bool),
            ("--compact", Bool),
            // Without --follow (which runs until a signal): a usage error, or none.
            (
                "--commit-every",
                Value(&["10s", "0", "100000", "1h30", "x"]),
            ),
        ],
        reports: false,
    },
    Cmd {
        name: "watch",
        flags: &[
            ("--once", Bool),
            ("--backtest", Bool),
            ("--follow", Bool),
            ("--window", Value(WIDTHS)),
            ("--span", Value(WIDTHS)),
            ("--top", Value(NUMBERS)),
            ("--capacity", Value(RATES)),
            ("--limit", Value(SPECS)),
            (
                "--alert",
                Value(&[
                    "heavy > 1600/10m",
                    "errors > 5%/5m",
                    "requests < 1/1m",
                    "prefix_share > 20%",
                    "heavy > 5%",
                    "errors > 1e999%",
                    "requests > 9999999999999999999999/1m",
                    "x",
                ]),
            ),
            ("--on-alert", Value(&["true", "exit 3"])),
            ("--exit-on-alert", Bool),
        ],
        reports: true,
    },
    Cmd {
        name: "detect",
        flags: &[("--json", Bool)],
        reports: false,
    },
    Cmd {
        name: "info",
        flags: &[("--json", Bool)],
        reports: false,
    },
];

/// A tiny combined log: two days of 2024, statuses, heavy and probe requests, IPv6,
/// bots, a user, hostile bytes in a field.
fn write_log(dir: &Path) -> PathBuf {
    let mut s = String::new();
    let uas = [
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Safari/604.1",
        "GPTBot/1.0",
        "curl/8.0",
        "Googlebot/2.1",
        "Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0",
    ];
    let paths = [
        "/wiki/Main_Page",
        "/index.php?search=x&title=Special:Search",
        "/wiki/Special:BlankPage",
        "/w/api.php?action=query&list=search",
        "/static/a.png",
    ];
    let clients = [
        "10.0.0.1",
        "1.2.3.4",
        "2001:db8::7",
        "192.0.2.9",
        "host.example",
    ];
    let statuses = [200, 200, 404, 429, 500, 503, 304];
    for i in 0..40usize {
        let (day, h, m) = (20 + i / 30, (i * 7) % 24, (i * 13) % 60);
        let user = if i % 11 == 0 { "alice" } else { "-" };
        writeln!(
            s,
            r#"{} - {user} [{day:02}/May/2024:{h:02}:{m:02}:{:02} +0000] "GET {} HTTP/1.1" {} {} "-" "{}""#,
            clients[i % 5],
            i % 60,
            paths[i % 5],
            statuses[i % 7],
            i * 100,
            uas[i % 5]
        )
        .unwrap();
    }
    s.push_str("1.2.3.4 - - [20/May/2024:12:00:00 +0000] \"GET /\x1b[31m HTTP/1.1\" 200 1 \"-\" \"\x07\"\n");
    s.push_str("not a log line\n");
    let p = dir.join("access.log");
    std::fs::write(&p, s).unwrap();
    p
}

/// What one run was, for the report.
struct Run {
    args: Vec<String>,
}

impl Run {
    fn shell(&self) -> String {
        let mut out = String::from("logscope --data DATA");
        for a in &self.args {
            if !a.is_empty()
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_=./:,+".contains(&b))
            {
                out.push(' ');
                out.push_str(a);
            } else {
                out.push_str(&format!(" {a:?}"));
            }
        }
        out
    }
}

/// Runs the binary with a 30 s timeout and a 2 GiB address-space limit; returns a
/// description of what went wrong, if anything.
fn run(dir: &Path, data: &Path, args: &[String], codes: &mut [u32; 6]) -> Option<String> {
    let bin = assert_cmd::cargo::cargo_bin("logscope");
    let out_path = dir.join("stdout.txt");
    let err_path = dir.join("stderr.txt");
    let mut cmd = Command::new(bin);
    cmd.env_remove("LOGSCOPE_DATA")
        .env("NO_COLOR", "1")
        .env_remove("RUST_BACKTRACE")
        .current_dir(dir)
        .arg("--data")
        .arg(data)
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let status = crate::common::run_bounded(cmd, 30);
    let stderr =
        String::from_utf8_lossy(&std::fs::read(&err_path).unwrap_or_default()).into_owned();
    let tail = || {
        let t: String = stderr
            .chars()
            .rev()
            .take(300)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        t.replace('\n', " | ")
    };
    let Some(status) = status else {
        return Some(format!("timed out after 30 s; stderr: {}", tail()));
    };
    if stderr.contains("panicked at") {
        return Some(format!("panicked (exit {:?}): {}", status.code(), tail()));
    }
    match (status.code(), status.signal()) {
        (Some(c @ 0..=5), _) => {
            codes[c as usize] += 1;
            None
        }
        (Some(c), _) => Some(format!("exit {c}: {}", tail())),
        (None, Some(sig)) => Some(format!("killed by signal {sig}: {}", tail())),
        (None, None) => Some("no exit status".into()),
    }
}

/// A value for a flag of `kind`.
fn value(rng: &mut Rng, kind: Kind, dir: &Path) -> String {
    let pick = |rng: &mut Rng, v: &[&str]| v[rng.below(v.len() as u64) as usize].to_string();
    match kind {
        Bool => String::new(),
        InPath => {
            let paths = [
                fixture("logscope.toml"),
                fixture("limits/femiwiki-caddy.toml"),
                fixture("limits/nginx-oracle.toml"),
                fixture("logs/iis-w3c.log"),
                dir.join("garbage.bin"),
                dir.join("missing.toml"),
                dir.to_path_buf(),
                PathBuf::from(""),
                PathBuf::from("é"),
            ];
            paths[rng.below(paths.len() as u64) as usize]
                .display()
                .to_string()
        }
        OutPath => {
            let n = rng.next();
            let paths = [
                dir.join(format!("out-{n}.txt")),
                dir.join("no-such-dir/x.csv"),
                dir.to_path_buf(),
                PathBuf::from(format!("bare-{n}.md")),
                PathBuf::from("-"),
                PathBuf::from(""),
                PathBuf::from("é\u{1b}[31m.txt"),
            ];
            paths[rng.below(paths.len() as u64) as usize]
                .display()
                .to_string()
        }
        Value(valid) => match rng.below(20) {
            0..=8 => pick(rng, EDGE),
            9..=15 => pick(rng, valid),
            _ => {
                // A valid value with an edge fragment spliced in, or cut.
                let v = pick(rng, valid);
                let chars: Vec<char> = v.chars().collect();
                let at = rng.below(chars.len() as u64 + 1) as usize;
                let mut out: String = chars[..at].iter().collect();
                if rng.below(3) > 0 {
                    out.push_str(&pick(rng, EDGE));
                    out.extend(&chars[at..]);
                }
                out
            }
        },
    }
}

/// `--flag=value`, or (when the value cannot be taken for a flag) `--flag value`.
fn push_flag(rng: &mut Rng, args: &mut Vec<String>, flag: &str, kind: Kind, dir: &Path) {
    if let Bool = kind {
        args.push(flag.to_string());
        return;
    }
    let v = value(rng, kind, dir);
    if v.starts_with('-') || rng.below(4) > 0 {
        args.push(format!("{flag}={v}"));
    } else {
        args.push(flag.to_string());
        args.push(v);
    }
}

/// The FILE arguments: mostly the tiny log, sometimes other inputs or none (the dataset).
fn files(rng: &mut Rng, log: &Path, dir: &Path) -> Vec<String> {
    match rng.below(12) {
        0 => vec![],
        1 => vec![dir.join("empty.log").display().to_string()],
        2 => vec![dir.join("garbage.bin").display().to_string()],
        3 => vec![fixture("logs/caddy-mirror.json.log").display().to_string()],
        4 => vec!["-".into()],
        5 => vec![log.display().to_string(), log.display().to_string()],
        6 => vec![dir.join("*.log").display().to_string()],
        7 => vec![dir.join("cut.log.gz").display().to_string()],
        _ => vec![log.display().to_string()],
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

#[test]
fn option_grammars_never_crash_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let log = write_log(dir);
    std::fs::write(dir.join("empty.log"), b"").unwrap();
    let mut garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    garbage.extend_from_slice(b"\n\x1f\x8b\x08\0\0\0\0\0\n");
    std::fs::write(dir.join("garbage.bin"), &garbage).unwrap();
    // A gzip copy of the log cut short: damaged input (exit 4 where it applies).
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &std::fs::read(&log).unwrap()).unwrap();
    let gz = gz.finish().unwrap();
    std::fs::write(dir.join("cut.log.gz"), &gz[..gz.len() * 2 / 3]).unwrap();
    let data = dir.join("data");

    let scale = env_u64("LOGSCOPE_FUZZ_SCALE", 1).max(1);
    let mut rng = Rng(env_u64("LOGSCOPE_FUZZ_SEED", 0x1065_c09e) | 1);
    let mut runs: Vec<Vec<String>> = Vec::new();

    // 1. Every flag of every command once, with one value each (≈ 140 runs).
    for cmd in COMMANDS {
        let flags: Vec<(&str, Kind)> = cmd
            .flags
            .iter()
            .chain(if cmd.reports { REPORT_FLAGS } else { &[] })
            .copied()
            .collect();
        for &(flag, kind) in &flags {
            for _ in 0..scale {
                let mut args = vec![cmd.name.to_string()];
                push_flag(&mut rng, &mut args, flag, kind, dir);
                args.extend(command_files(&mut rng, cmd, &log, dir));
                runs.push(args);
            }
        }
    }
    // 2. Random combinations of 2–5 flags, up to ≈ 300 runs in all.
    let combos = 160 * scale;
    for _ in 0..combos {
        let cmd = &COMMANDS[rng.below(COMMANDS.len() as u64 - 1) as usize];
        let flags: Vec<(&str, Kind)> = cmd
            .flags
            .iter()
            .chain(if cmd.reports { REPORT_FLAGS } else { &[] })
            .copied()
            .collect();
        let mut args = vec![cmd.name.to_string()];
        for k in 0..2 + rng.below(4) {
            let (flag, kind) = flags[rng.below(flags.len() as u64) as usize];
            // One fuzzed value per run, the others valid, so that most runs get past
            // the first check and the values meet each other deeper in.
            let kind = match kind {
                Value(valid) if k > 0 => Value(Box::leak(Box::new([
                    valid[rng.below(valid.len() as u64) as usize]
                ]))),
                other => other,
            };
            push_flag(&mut rng, &mut args, flag, kind, dir);
        }
        args.extend(command_files(&mut rng, cmd, &log, dir));
        runs.push(args);
    }
    // 3. Damaged dataset directories given as --data (a file; a garbage manifest).
    let bad_data = dir.join("bad-data");
    std::fs::create_dir_all(&bad_data).unwrap();
    std::fs::write(
        bad_data.join("manifest.json"),
        b"{\"parts\": [{\"path\": \"../../x\"}], \x1b",
    )
    .unwrap();
    let mut special: Vec<(PathBuf, Vec<String>)> = Vec::new();
    for d in [dir.join("garbage.bin"), bad_data] {
        for args in [
            &["info"][..],
            &["info", "--json"],
            &["heavy"],
            &["agents", "--format=json"],
            &["replay", "--limit=5r/s"],
        ] {
            special.push((d.clone(), args.iter().map(|a| a.to_string()).collect()));
        }
        special.push((d.clone(), vec!["ingest".into(), log.display().to_string()]));
    }

    let mut failures = Vec::new();
    let mut codes = [0u32; 6];
    for args in &runs {
        if let Some(why) = run(dir, &data, args, &mut codes) {
            failures.push(format!(
                "{}\n    → {why}",
                Run { args: args.clone() }.shell()
            ));
        }
    }
    for (d, args) in &special {
        if let Some(why) = run(dir, d, args, &mut codes) {
            let shell = Run { args: args.clone() }
                .shell()
                .replace("DATA", &d.display().to_string());
            failures.push(format!("{shell}\n    → {why}"));
        }
    }
    let total = runs.len() + special.len();
    // Shown with --nocapture: how the runs ended (a run that only ever exits 2 fuzzes
    // nothing past clap).
    eprintln!("fuzz_cli: {total} runs; exit codes 0..=5: {codes:?}");
    assert!(
        failures.is_empty(),
        "{} of {} runs crashed (DATA = an empty or small dataset dir; FILE = a 42-line combined log):\n{}",
        failures.len(),
        total,
        failures.join("\n")
    );
}

fn command_files(rng: &mut Rng, cmd: &Cmd, log: &Path, dir: &Path) -> Vec<String> {
    match cmd.name {
        "info" => vec![],
        "ingest" | "detect" => {
            let f = files(rng, log, dir);
            if f.is_empty() {
                vec![log.display().to_string()]
            } else {
                f
            }
        }
        _ => files(rng, log, dir),
    }
}
