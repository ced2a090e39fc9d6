//! The CLI contract: every bad option value exits 2 with one message naming the flag and
//! giving an example; every duration flag takes the one duration grammar; `--until` means
//! the same in every command; a missing file is named once; help points only to things
//! that exist.

use std::path::Path;

use crate::common::logscope;

/// Five requests around 2004-05-01 (UTC): one the evening before, three on the day
/// (curl, GPTBot, curl), one at midnight after.
const LOG: &str = "\
192.0.2.1 - - [30/Apr/2004:23:59:59 +0000] \"GET /a HTTP/1.1\" 200 5 \"-\" \"curl/8.0\"
192.0.2.1 - - [01/May/2004:00:00:10 +0000] \"GET /a HTTP/1.1\" 200 5 \"-\" \"curl/8.0\"
192.0.2.2 - - [01/May/2004:12:00:00 +0000] \"GET /b HTTP/1.1\" 503 5 \"-\" \"Mozilla/5.0 (compatible; GPTBot/1.0)\"
192.0.2.3 - - [01/May/2004:23:59:59 +0000] \"GET /c HTTP/1.1\" 200 5 \"-\" \"curl/8.0\"
192.0.2.3 - - [02/May/2004:00:00:00 +0000] \"GET /c HTTP/1.1\" 200 5 \"-\" \"curl/8.0\"
";

fn tiny_log(dir: &Path) -> String {
    let p = dir.join("tiny.log");
    std::fs::write(&p, LOG).unwrap();
    p.to_str().unwrap().to_string()
}

/// Runs `logscope --data DIR/data ARGS…`: (exit code, stdout, stderr).
fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = logscope(&dir.join("data"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The arguments a command needs besides the flag under test.
fn base(cmd: &str) -> Vec<&str> {
    match cmd {
        "replay" => vec!["replay", "--limit", "100/1h"],
        other => vec![other],
    }
}

#[test]
fn every_bad_value_exits_2_naming_the_flag_with_an_example() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tiny_log(tmp.path());
    let cases: &[(&str, &str, &str)] = &[
        ("heavy", "--by", "0"),
        ("heavy", "--by", "-5m"),
        ("heavy", "--by", "1h30"),
        ("heavy", "--by", "10parsecs"),
        ("heavy", "--by", "500ms"),
        ("heavy", "--capacity", "1600"),
        ("heavy", "--capacity", "10/0s"),
        ("heavy", "--status", "6xx"),
        ("heavy", "--status", "1000"),
        ("heavy", "--status", "300-200"),
        ("heavy", "--agent", "robots"),
        ("heavy", "--tz", "Mars/Olympus"),
        ("heavy", "--since", "yesterday"),
        ("heavy", "--until", "2004-13-01"),
        ("heavy", "--client", "300.1.1.1"),
        ("heavy", "--trust-proxy", "10.0.0.0/99"),
        ("heavy", "--path", "("),
        ("agents", "--agent", "robots"),
        ("agents", "--status", "6xx"),
        ("concentration", "--per-prefix-limit", "100"),
        ("concentration", "--tz", "Mars/Olympus"),
        ("availability", "--expect-every", "soon"),
        ("availability", "--bucket", "0s"),
        ("availability", "--merge-within", "500ms"),
        ("availability", "--min-gap", "-5m"),
        ("availability", "--status", "6xx"),
        ("availability", "--agent", "robots"),
        ("availability", "--tz", "Mars/Olympus"),
        ("availability", "--since", "June"),
        ("availability", "--until", "2004-05-32"),
        ("availability", "--client", "300.1.1.1"),
        ("availability", "--success", "6xx"),
        ("availability", "--policy-status", "9xx"),
        ("availability", "--probe", "("),
        ("availability", "--incident-below", "120"),
        ("replay", "--limit", "100/1h30"),
        ("replay", "--capacity", "lots"),
        ("replay", "--by", "0"),
        ("replay", "--status", "6xx"),
        ("replay", "--agent", "robots"),
        ("replay", "--tz", "Mars/Olympus"),
        ("ingest", "--input-format", "nope"),
        ("ingest", "--log-format", "no variables here"),
    ];
    for &(cmd, flag, value) in cases {
        // FLAG=VALUE, so that a value starting with `-` is a value.
        let arg = format!("{flag}={value}");
        let mut args = base(cmd);
        args.extend([arg.as_str(), log.as_str()]);
        let (code, out, err) = run(tmp.path(), &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?} must name {flag}: {err}");
        assert!(
            err.contains("e.g.") || err.contains("example"),
            "{args:?} must give an example: {err}"
        );
        assert_eq!(
            err.lines().filter(|l| l.contains("error")).count(),
            1,
            "{args:?}: one message: {err}"
        );
        assert!(out.is_empty(), "{args:?}: {out}");
    }
    // Before the fix: 6xx and robots were accepted and selected nothing (exit 0);
    // bad --tz, --since and --client exited 1.
    let (code, _, err) = run(
        tmp.path(),
        &[
            "heavy",
            "--since",
            "2004-05-02",
            "--until",
            "2004-05-01",
            &log,
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--until must be after --since"), "{err}");
}

/// Every duration flag, as (command, flag, value template: `{}` is the duration).
const DURATION_FLAGS: &[(&str, &str, &str)] = &[
    ("heavy", "--by", "{}"),
    ("heavy", "--capacity", "100/{}"),
    ("concentration", "--per-prefix-limit", "100/{}"),
    ("availability", "--expect-every", "{}"),
    ("availability", "--min-gap", "{}"),
    ("availability", "--bucket", "{}"),
    ("availability", "--merge-within", "{}"),
    ("replay", "--limit", "100/{}"),
    ("replay", "--capacity", "100/{}"),
    ("replay", "--by", "{}"),
];

#[test]
fn every_duration_flag_takes_the_one_grammar() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tiny_log(tmp.path());
    let good = ["90s", "10m", "1h30m", "2hours", "1w"];
    let bad = ["0", "0s", "-5m", "1h30", "10parsecs", "5", ""];
    std::thread::scope(|s| {
        for &(cmd, flag, template) in DURATION_FLAGS {
            let (dir, log) = (tmp.path(), log.as_str());
            s.spawn(move || {
                let with = |d: &str| {
                    let value = template.replace("{}", d);
                    let mut args: Vec<String> = base(cmd).iter().map(|a| a.to_string()).collect();
                    if cmd == "replay" && flag == "--limit" {
                        args.truncate(1);
                    }
                    args.extend([format!("{flag}={value}"), log.to_string()]);
                    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
                    let (code, _, err) = run(dir, &refs);
                    (value, code, err)
                };
                for d in good {
                    let (value, code, err) = with(d);
                    assert_eq!(code, 0, "{cmd} {flag} {value}: {err}");
                }
                for d in bad {
                    let (value, code, err) = with(d);
                    assert_eq!(code, 2, "{cmd} {flag} {value:?} must be refused: {err}");
                    assert!(err.contains(flag), "{cmd} {flag} {value:?}: {err}");
                }
                // Milliseconds: in rate windows only (limiters count in ms); widths and
                // cadences take whole seconds.
                let (value, code, err) = with("500ms");
                if template.starts_with("100/") {
                    assert_eq!(code, 0, "{cmd} {flag} {value}: {err}");
                } else {
                    assert_eq!(code, 2, "{cmd} {flag} {value}: {err}");
                    assert!(err.contains("whole seconds"), "{err}");
                }
            });
        }
    });
}

#[test]
fn until_a_date_includes_that_whole_day_in_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tiny_log(tmp.path());
    let day = ["--since", "2004-05-01", "--until", "2004-05-01"];
    for (cmd, field) in [
        ("heavy", "requests"),
        ("agents", "selected"),
        ("concentration", "requests"),
        ("replay", "requests"),
        ("availability", "lines"),
    ] {
        let mut args = base(cmd);
        args.extend(day);
        args.extend(["--format", "json", log.as_str()]);
        let (code, out, err) = run(tmp.path(), &args);
        // availability used to refuse this (its --until was exclusive).
        assert_eq!(code, 0, "{args:?}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v[field], 3,
            "{cmd}: the three requests of 2004-05-01: {out}"
        );
    }
    // A month includes all of it; a time is exclusive.
    let (_, out, _) = run(
        tmp.path(),
        &[
            "availability",
            "--since",
            "2004-05",
            "--until",
            "2004-05",
            "--format",
            "json",
            &log,
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["lines"], 4, "{out}");
    let (_, out, _) = run(
        tmp.path(),
        &[
            "heavy",
            "--until",
            "2004-05-01T12:00",
            "--format",
            "json",
            &log,
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["requests"], 2, "{out}");
    // The help says so, the same words in every command.
    let mut helps = Vec::new();
    for cmd in ["heavy", "agents", "concentration", "replay", "availability"] {
        let (code, out, _) = run(tmp.path(), &[cmd, "--help"]);
        assert_eq!(code, 0);
        let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
        let at = flat.find("--until <TIME>").expect("--until in help");
        let text: String = flat[at..].chars().take(200).collect();
        assert!(text.contains("includes all of it"), "{cmd}: {text}");
        helps.push(text);
    }
    assert!(helps.windows(2).all(|w| w[0] == w[1]), "{helps:#?}");
}

#[test]
fn availability_takes_the_shared_filters() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tiny_log(tmp.path());
    let json = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["availability", "--format", "json"];
        args.extend(extra);
        args.push(&log);
        let (code, out, err) = run(tmp.path(), &args);
        assert_eq!(code, 0, "{args:?}: {err}");
        serde_json::from_str(&out).unwrap()
    };
    assert_eq!(json(&[])["lines"], 5);
    assert_eq!(json(&["--agent", "curl"])["lines"], 4);
    assert_eq!(json(&["--agent", "ai"])["lines"], 1);
    assert_eq!(json(&["--path", "^/c$"])["lines"], 2);
    assert_eq!(json(&["--client", "192.0.2.1"])["lines"], 2);
    assert_eq!(json(&["--status", "5xx"])["lines"], 1);
    let v = json(&["--agent", "ai"]);
    assert!(v["selection"].as_str().unwrap().contains("agent ai"), "{v}");
    // A fixed offset is a zone like any other.
    let v = json(&["--tz", "+09:00", "--by", "day"]);
    assert_eq!(v["periods"][0]["label"], "2004-05-01", "{v}");
}

#[test]
fn agent_names_known_to_the_classifier_or_the_rules_are_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tiny_log(tmp.path());
    for name in [
        "GPTBot",
        "gptbot",
        "curl",
        "Chrome",
        "Googlebot",
        "python-requests",
    ] {
        let (code, _, err) = run(tmp.path(), &["heavy", "--agent", name, &log]);
        assert_eq!(code, 0, "{name}: {err}");
    }
    let (code, _, err) = run(tmp.path(), &["heavy", "--agent", "WikiBot", &log]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("classes: ios, android"), "{err}");
    std::fs::write(
        tmp.path().join("rules.toml"),
        "[[agent]]\nname = \"WikiBot\"\nregex = \"WikiBot\"\n",
    )
    .unwrap();
    let (code, _, err) = run(
        tmp.path(),
        &["heavy", "--rules", "rules.toml", "--agent", "wikibot", &log],
    );
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_missing_file_is_named_once_with_the_os_error_once() {
    let tmp = tempfile::tempdir().unwrap();
    for cmd in [
        vec!["ingest"],
        vec!["detect"],
        vec!["heavy"],
        vec!["agents"],
        vec!["availability"],
        vec!["replay", "--limit", "1/s"],
    ] {
        let mut args = cmd.clone();
        args.push("missing.log");
        let (code, _, err) = run(tmp.path(), &args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert_eq!(
            err.matches("No such file or directory").count(),
            1,
            "{args:?}: {err}"
        );
        assert_eq!(err.matches("missing.log").count(), 1, "{args:?}: {err}");
    }
    let log = tiny_log(tmp.path());
    let (code, _, err) = run(tmp.path(), &["heavy", "--rules", "missing.toml", &log]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

#[test]
fn help_points_only_to_what_exists() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, help, _) = run(tmp.path(), &["ingest", "--help"]);
    assert!(!help.contains("detect --list"), "{help}");
    assert!(help.contains("logscope detect FILE"), "{help}");
    // Every format name the help lists is one --format takes (the missing file is
    // the error, exit 1, not the name, exit 2).
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    let at = flat.find("detecting it per file:").unwrap() + "detecting it per file:".len();
    let list = &flat[at..flat[at..].find(", or ").unwrap() + at];
    let names: Vec<&str> = list.split(',').map(str::trim).collect();
    assert!(names.len() >= 13, "{names:?}");
    for name in names {
        let (code, _, err) = run(tmp.path(), &["ingest", "--format", name, "missing.log"]);
        assert_eq!(code, 1, "--format {name}: {err}");
        assert!(err.contains("missing.log"), "--format {name}: {err}");
    }
}

/// `--format` is a report's output format in every command; the log's format is
/// `--input-format` (`ingest --format` is still read as it). A log format given to
/// `--format` exits 2 with a pointer to the right flag.
#[test]
fn format_is_the_output_and_input_format_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tiny_log(tmp.path());
    let (code, out, err) = run(
        tmp.path(),
        &["top", "--by", "path", "--format", "combined", &log],
    );
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("--input-format combined"), "{err}");
    let (code, out, err) = run(
        tmp.path(),
        &[
            "top",
            "--by",
            "path",
            "--input-format",
            "combined",
            "--format",
            "csv",
            &log,
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("rank,path,"), "{out}");
    for flag in ["--input-format", "--format"] {
        let (code, _, err) = run(tmp.path(), &["ingest", "--quiet", flag, "combined", &log]);
        assert_eq!(code, 0, "ingest {flag}: {err}");
    }
    let (_, help, _) = run(tmp.path(), &["ingest", "--help"]);
    assert!(help.contains("--input-format <NAME>"), "{help}");
}
