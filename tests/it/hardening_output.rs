//! Regression tests: hardening_output — CSV cells and messages carry no raw control
//! bytes, `--out` and `--decisions` replace only their target, through a fresh temporary
//! file, and reports over damaged or mostly bad FILE arguments say so in every format and
//! exit like ingest.

use std::io::Write;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::*;

/// Runs logscope in `dir` (no dataset there).
fn run(dir: &Path, args: &[&str]) -> Output {
    logscope(&dir.join("no-dataset"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("runs")
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `n` combined-format lines, one a second from 2024-10-10 13:00:00 UTC.
fn combined_lines(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&format!(
            "10.0.{}.{} - - [10/Oct/2024:{:02}:{:02}:{:02} +0000] \"GET /w/index.php?search=x{i} HTTP/1.1\" {} 512 \"-\" \"Mozilla/5.0 (X11; Linux x86_64) Firefox/127.0\"\n",
            i % 7,
            i % 250,
            13 + i / 3600,
            (i / 60) % 60,
            i % 60,
            if i.is_multiple_of(50) { 503 } else { 200 },
        ));
    }
    s
}

/// The names in `dir`, sorted, to check that nothing else appeared or went.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Bytes below 0x20 other than the CSV's own line ends.
fn control_bytes(csv: &[u8]) -> Vec<u8> {
    csv.iter()
        .copied()
        .filter(|&b| (b < 0x20 && b != b'\n') || b == 0x7f)
        .collect()
}

// ---------------------------------------------------------------------------------------
// CSV and messages escape control bytes.

#[test]
fn csv_cells_carry_no_control_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // The file's own name carries ESC too: it is the decisions CSV's first column.
    let log = "evil\x1b[2J.log";
    let mut text = String::from(
        "1.2.3.4 - - [10/Oct/2024:13:55:30 +0000] \"GET /a\x1b]0;owned\x07b HTTP/1.1\" 200 12 \"-\" \"Mozilla \x1b[31mred\x07bell\rcr\u{202e}\"\n",
    );
    for i in 1..6 {
        text.push_str(&format!(
            "1.2.3.4 - - [10/Oct/2024:13:55:3{i} +0000] \"GET /a\x1b]0;owned\x07b HTTP/1.1\" 200 12 \"-\" \"Mozilla \x1b[31mred\x07bell\rcr\u{202e}\"\n"
        ));
    }
    std::fs::write(dir.join(log), text).unwrap();

    let o = run(dir, &["agents", "--sample", "20", "--format", "csv", log]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(control_bytes(&o.stdout), b"", "{}", stdout(&o));
    let csv = stdout(&o);
    assert!(
        csv.contains("Mozilla \\x1b[31mred\\x07bell\\x0dcr\\xe2\\x80\\xae"),
        "{csv}"
    );

    let o = run(
        dir,
        &[
            "replay",
            "--limit",
            "1/min,key=agent",
            "--limit",
            "1/min,key=path",
            "--format",
            "csv",
            "--decisions",
            "d.csv",
            log,
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(control_bytes(&o.stdout), b"", "{}", stdout(&o));
    let d = std::fs::read(dir.join("d.csv")).unwrap();
    assert_eq!(control_bytes(&d), b"", "{}", String::from_utf8_lossy(&d));
    let d = String::from_utf8(d).unwrap();
    assert!(d.contains("evil\\x1b[2J.log,"), "{d}");
    assert!(d.contains("Mozilla \\x1b[31mred\\x07bell\\x0dcr"), "{d}");
    assert!(d.contains("/a\\x1b]0;owned\\x07b"), "{d}");
    // The message naming the decisions file is escaped too.
    let o = run(
        dir,
        &[
            "replay",
            "--limit",
            "1/min",
            "--decisions",
            "x\x1b[5m.csv",
            log,
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!o.stderr.contains(&0x1b), "{}", stderr(&o));
    assert!(stderr(&o).contains("x\\x1b[5m.csv"), "{}", stderr(&o));
}

#[test]
fn paths_in_messages_are_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("a.log"), combined_lines(5)).unwrap();
    // A directory as --out: a usage error naming it.
    std::fs::create_dir(dir.join("dir\x1b[31m")).unwrap();
    let out = dir.join("dir\x1b[31m");
    let o = run(dir, &["heavy", "--out", out.to_str().unwrap(), "a.log"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(!o.stderr.contains(&0x1b), "{}", stderr(&o));
    assert!(stderr(&o).contains("dir\\x1b[31m"), "{}", stderr(&o));
    // A directory that cannot be created (a file is in the way): an error naming it.
    std::fs::write(dir.join("file\x1b[31m"), "x").unwrap();
    let out = dir.join("file\x1b[31m/sub/r.txt");
    let o = run(dir, &["heavy", "--out", out.to_str().unwrap(), "a.log"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(!o.stderr.contains(&0x1b), "{}", stderr(&o));
    assert!(stderr(&o).contains("file\\x1b[31m"), "{}", stderr(&o));
    // A replay configuration that does not exist: named twice (option, reason), escaped.
    let o = run(dir, &["replay", "--config", "no\x1b[31m.toml", "a.log"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(!o.stderr.contains(&0x1b), "{}", stderr(&o));
    assert!(stderr(&o).contains("no\\x1b[31m.toml"), "{}", stderr(&o));
    // Written: the message names the file, escaped.
    let out = dir.join("ok\x07.txt");
    let o = run(dir, &["heavy", "--out", out.to_str().unwrap(), "a.log"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!o.stderr.contains(&0x07), "{}", stderr(&o));
    assert!(stderr(&o).contains("ok\\x07.txt"), "{}", stderr(&o));
}

// ---------------------------------------------------------------------------------------
// --out and --decisions touch nothing but their target.

#[test]
fn out_leaves_neighbours_and_symlinks_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("a.log"), combined_lines(20)).unwrap();
    // What the old `<name>.tmp` / `<name>.csv.tmp` temporary files would have hit.
    std::fs::write(dir.join("data.tmp"), "precious").unwrap();
    std::fs::write(dir.join("victim.txt"), "victim").unwrap();
    std::os::unix::fs::symlink(dir.join("victim.txt"), dir.join("link.tmp")).unwrap();
    std::os::unix::fs::symlink(dir.join("victim.txt"), dir.join("dec.csv.tmp")).unwrap();
    let before = names(dir);
    for out in ["data.csv", "link.csv"] {
        let target = dir.join(out);
        let o = run(
            dir,
            &[
                "heavy",
                "--format",
                "csv",
                "--out",
                target.to_str().unwrap(),
                "a.log",
            ],
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert!(
            std::fs::read_to_string(&target)
                .unwrap()
                .starts_with("start")
        );
    }
    let o = run(
        dir,
        &[
            "replay",
            "--limit",
            "1/min",
            "--decisions",
            "dec.csv",
            "a.log",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        std::fs::read_to_string(dir.join("dec.csv"))
            .unwrap()
            .starts_with("file,line,")
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("data.tmp")).unwrap(),
        "precious"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("victim.txt")).unwrap(),
        "victim"
    );
    assert!(
        dir.join("link.tmp")
            .symlink_metadata()
            .unwrap()
            .is_symlink()
    );
    // Exactly the three targets are new: no temporary file is left behind.
    let mut expected = before.clone();
    expected.extend(["data.csv".into(), "dec.csv".into(), "link.csv".into()]);
    expected.sort();
    assert_eq!(names(dir), expected);
    // Running again replaces the earlier reports (same extension) and leaves nothing.
    let o = run(
        dir,
        &["heavy", "--format", "csv", "--out", "data.csv", "a.log"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = run(
        dir,
        &[
            "replay",
            "--limit",
            "1/min",
            "--decisions",
            "dec.csv",
            "a.log",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(names(&dir.join("reports")), ["data.csv"]);
    // A symlink as the target itself is replaced, never written through.
    std::os::unix::fs::symlink(dir.join("victim.txt"), dir.join("via.csv")).unwrap();
    let o = run(
        dir,
        &["heavy", "--format", "csv", "--out", "./via.csv", "a.log"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(dir.join("victim.txt")).unwrap(),
        "victim"
    );
    assert!(dir.join("via.csv").symlink_metadata().unwrap().is_file());
}

#[test]
fn out_to_a_directory_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("a.log"), combined_lines(20)).unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    let before = names(dir);
    for args in [
        vec!["heavy", "--out", "./sub", "a.log"],
        vec!["agents", "--format", "csv", "--out", "sub/", "a.log"],
        vec!["availability", "--out", "./sub", "a.log"],
        vec!["replay", "--limit", "1/min", "--out", "./sub", "a.log"],
        vec!["replay", "--limit", "1/min", "--decisions", "sub", "a.log"],
    ] {
        let o = run(dir, &args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
        assert_eq!(names(dir), before, "{args:?}");
        assert!(names(&dir.join("sub")).is_empty(), "{args:?}");
    }
}

#[test]
fn out_replaces_only_files_it_would_write_unless_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("a.log"), combined_lines(20)).unwrap();
    // The log itself as --out: refused, untouched.
    let o = run(dir, &["heavy", "--out", "./a.log", "a.log"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(dir.join("a.log")).unwrap(),
        combined_lines(20)
    );
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let o = run(
        dir,
        &["heavy", "--format", "md", "--out", "./notes.txt", "a.log"],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "mine"
    );
    let o = run(
        dir,
        &[
            "replay",
            "--limit",
            "1/min",
            "--decisions",
            "notes.txt",
            "a.log",
        ],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "mine"
    );
    // With --force it is replaced.
    let o = run(
        dir,
        &[
            "heavy",
            "--format",
            "md",
            "--force",
            "--out",
            "./notes.txt",
            "a.log",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        std::fs::read_to_string(dir.join("notes.txt"))
            .unwrap()
            .starts_with("## ")
    );
    // A file with the format's extension is replaced without --force.
    std::fs::write(dir.join("old.md"), "old").unwrap();
    let o = run(
        dir,
        &["heavy", "--format", "md", "--out", "./old.md", "a.log"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        std::fs::read_to_string(dir.join("old.md"))
            .unwrap()
            .starts_with("## ")
    );
}

// ---------------------------------------------------------------------------------------
// Reports over damaged or mostly bad FILE arguments.

/// 2,000 combined lines gzipped, cut in the middle of the compressed stream.
fn truncated_gzip(path: &Path) {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(combined_lines(2_000).as_bytes()).unwrap();
    let bytes = gz.finish().unwrap();
    std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap();
}

#[test]
fn damaged_input_is_reported_in_every_format_with_status_4() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    truncated_gzip(&dir.join("access.log.gz"));
    let o = run(dir, &["heavy", "--format", "json", "access.log.gz"]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let j: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let damage = j["inputs"]["damage"].as_array().expect("inputs.damage");
    assert_eq!(damage.len(), 1, "{j}");
    assert_eq!(damage[0]["file"], "access.log.gz");
    assert!(damage[0]["message"].as_str().unwrap().contains("gzip"));
    let lines = j["inputs"]["lines"].as_u64().unwrap();
    assert!(lines > 0 && lines < 2_000, "{lines}");
    assert_eq!(j["inputs"]["files"][0]["damaged"], true);
    // The report's own keys are still there.
    assert!(j["buckets"].is_array() && j["requests"].is_u64(), "{j}");

    for cmd in [
        vec!["heavy"],
        vec!["concentration"],
        vec!["agents"],
        vec!["availability"],
        vec!["replay", "--limit", "10/min"],
    ] {
        for format in ["text", "md", "html", "json", "csv"] {
            let mut a = cmd.clone();
            a.extend(["--format", format, "access.log.gz"]);
            let o = run(dir, &a);
            assert_eq!(code(&o), 4, "{a:?}: {}", stderr(&o));
            assert!(
                stderr(&o).contains("access.log.gz"),
                "{a:?}: {}",
                stderr(&o)
            );
            let out = stdout(&o);
            match format {
                "json" => {
                    let j: Value = serde_json::from_str(&out).expect("JSON");
                    assert_eq!(j["inputs"]["damage"].as_array().unwrap().len(), 1, "{a:?}");
                }
                // CSV is data: the damage is on stderr only.
                "csv" => assert!(!out.contains("input:"), "{a:?}: {out}"),
                _ => assert!(
                    out.contains("input:") && out.contains("truncated gzip"),
                    "{a:?}: {out}"
                ),
            }
        }
    }
}

#[test]
fn mostly_bad_input_exits_3_with_a_note() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let good = combined_lines(40);
    let mut text = String::new();
    for (i, l) in good.lines().enumerate() {
        text.push_str(l);
        text.push('\n');
        // 60 bad lines among 100.
        text.push_str(&format!("garbage {i} that is no log line\n"));
        if i.is_multiple_of(2) {
            text.push_str("more garbage\n");
        }
    }
    std::fs::write(dir.join("mixed.log"), &text).unwrap();
    assert_eq!(text.lines().count(), 100);
    let o = run(dir, &["heavy", "--format", "text", "mixed.log"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("input: 100 lines, 60 bad (first: mixed.log:2:"),
        "{out}"
    );
    assert!(
        out.contains("60.0%") && out.contains("--max-bad 50.0%"),
        "{out}"
    );
    assert!(stderr(&o).contains("--max-bad"), "{}", stderr(&o));
    let o = run(dir, &["concentration", "--format", "json", "mixed.log"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["inputs"]["bad"], 60);
    assert_eq!(j["inputs"]["records"], 40);
    assert_eq!(j["inputs"]["files"][0]["too_many_bad"], true);
    assert!(j["inputs"]["first_bad"]["line"] == 2, "{j}");
    // A higher --max-bad: status 0, the bad lines still noted.
    let o = run(dir, &["heavy", "--max-bad", "0.7", "mixed.log"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("input: 100 lines, 60 bad"));
    assert!(!stdout(&o).contains("--max-bad"));
}

#[test]
fn clean_input_has_no_note_and_the_dataset_no_input() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("a.log"), combined_lines(50)).unwrap();
    for cmd in ["heavy", "concentration", "agents", "availability"] {
        let o = run(dir, &[cmd, "a.log"]);
        assert_eq!(code(&o), 0, "{cmd}: {}", stderr(&o));
        assert!(!stdout(&o).contains("input:"), "{cmd}: {}", stdout(&o));
        let o = run(dir, &[cmd, "--format", "json", "a.log"]);
        assert_eq!(code(&o), 0, "{cmd}: {}", stderr(&o));
        let j: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(j["inputs"]["lines"], 50, "{cmd}");
        assert_eq!(j["inputs"]["bad"], 0, "{cmd}");
        assert_eq!(j["inputs"]["damage"].as_array().unwrap().len(), 0, "{cmd}");
    }
    // Over the dataset nothing changes: no `input` object.
    let data = dir.join("data");
    let (_, c) = ingest_json(&data, &[dir.join("a.log").to_str().unwrap()]);
    assert_eq!(c, 0);
    let o = logscope(&data)
        .args(["heavy", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        j["inputs"]["kind"] == "dataset" && j["inputs"].get("lines").is_none(),
        "{j}"
    );
}

/// A log whose agent and path carry bidi overrides, line and paragraph separators and
/// HTML entities.
fn hostile_unicode_log(dir: &Path) -> std::path::PathBuf {
    let mut s = String::new();
    for i in 0..20 {
        s.push_str(&format!(
            "10.1.0.{} - - [10/Oct/2024:13:00:{:02} +0000] \"GET /a&lt;b&gt;\u{202e}gpj.exe HTTP/1.1\" 200 512 \"-\" \"Evil\u{202e}txt.exe\u{2028}line\u{2029}para\u{200b}\"\n",
            i % 3 + 1,
            i
        ));
    }
    let p = dir.join("unicode.log");
    std::fs::write(&p, s).unwrap();
    p
}

const RAW_FORMATTING: [char; 4] = ['\u{202e}', '\u{2028}', '\u{2029}', '\u{200b}'];

#[test]
fn json_escapes_bidi_and_line_separators() {
    let tmp = tempfile::tempdir().unwrap();
    let log = hostile_unicode_log(tmp.path());
    let log = log.to_str().unwrap();
    for args in [
        vec!["top", "--by", "agent", "--format", "json", log],
        vec!["top", "--by", "path", "--format", "json", log],
        vec!["agents", "--format", "json", log],
        vec![
            "replay",
            "--limit",
            "5/1m,key=agent",
            "--format",
            "json",
            log,
        ],
    ] {
        let o = run(tmp.path(), &args);
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
        let out = stdout(&o);
        for c in RAW_FORMATTING {
            assert!(!out.contains(c), "{args:?}: raw {c:?} in JSON: {out}");
        }
        assert!(out.contains("\\u202e"), "{args:?}: {out}");
        // Still JSON, and the text decodes back to what the log holds.
        let v: Value = serde_json::from_str(&out).unwrap();
        assert!(v.to_string().contains('\u{202e}'), "{args:?}");
    }
    // The ingest summary and `info --json` go through the same escaping.
    let data = tmp.path().join("data");
    let o = logscope(&data)
        .args(["ingest", "--json"])
        .arg(tmp.path().join("unicode.log"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn markdown_keeps_entities_as_logged() {
    let tmp = tempfile::tempdir().unwrap();
    let log = hostile_unicode_log(tmp.path());
    let o = run(
        tmp.path(),
        &[
            "top",
            "--by",
            "path",
            "--format",
            "md",
            log.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let md = stdout(&o);
    assert!(md.contains("/a&amp;lt;b&amp;gt;"), "{md}");
    // Rendered, the cell reads as the log wrote it.
    let text: String = pulldown_cmark::Parser::new_ext(&md, pulldown_cmark::Options::ENABLE_TABLES)
        .filter_map(|e| match e {
            pulldown_cmark::Event::Text(t) => Some(t.into_string()),
            _ => None,
        })
        .collect();
    assert!(text.contains("/a&lt;b&gt;"), "{text}");
}

#[test]
fn emitted_config_comments_carry_no_bidi_from_file_names() {
    let tmp = tempfile::tempdir().unwrap();
    let src = hostile_unicode_log(tmp.path());
    let named = tmp.path().join("access\u{202e}gol.log");
    std::fs::copy(&src, &named).unwrap();
    for emit in ["nginx", "haproxy", "caddy"] {
        let o = run(
            tmp.path(),
            &[
                "replay",
                "--limit",
                "5/1m,key=ip",
                "--emit",
                emit,
                named.to_str().unwrap(),
            ],
        );
        assert_eq!(code(&o), 0, "{emit}: {}", stderr(&o));
        let conf = stdout(&o);
        for c in RAW_FORMATTING {
            assert!(!conf.contains(c), "{emit}: raw {c:?}: {conf}");
        }
        assert!(conf.contains("access?gol.log"), "{emit}: {conf}");
    }
}
