//! What a CLI in this ecosystem is expected to have: shell completions and a man page,
//! `--color auto|always|never`, next-step hints, rules found through `$LOGSCOPE_CONFIG` /
//! `./logscope.toml` / `$XDG_CONFIG_HOME`, and terminal tables measured in display
//! columns and fitted to `COLUMNS`.

use std::path::{Path, PathBuf};

use logscope_core::table::display_width;

use crate::common::logscope;

/// One combined-format line at minute `min` of 2024-10-10 13:00 UTC.
fn line(ip: &str, min: u32, uri: &str, ua: &str) -> String {
    format!(
        "{ip} - - [10/Oct/2024:13:{min:02}:00 +0000] \"GET {uri} HTTP/1.1\" 200 512 \"-\" \"{ua}\"\n"
    )
}

/// A small log in `dir`: plain page views, a few MediaWiki searches (heavy under the
/// built-in rules) when `searches`, and requests for `/api/expensive`.
fn write_log(dir: &Path, searches: bool) -> PathBuf {
    let mut s = String::new();
    for i in 0..20u32 {
        s.push_str(&line(
            &format!("192.0.2.{}", 1 + i % 5),
            i,
            &format!("/wiki/Page_{i}"),
            "Mozilla/5.0 (X11; Linux x86_64) Firefox/130.0",
        ));
        s.push_str(&line("198.51.100.7", i, "/api/expensive?q=1", "curl/8.5.0"));
        if searches && i % 4 == 0 {
            s.push_str(&line(
                "203.0.113.9",
                i,
                "/index.php?search=foo",
                "curl/8.5.0",
            ));
        }
    }
    let p = dir.join("access.log");
    std::fs::write(&p, s).expect("write log");
    p
}

/// A log whose user agents are CJK text and emoji, long enough to need cutting.
fn write_wide_log(dir: &Path) -> PathBuf {
    let agents = [
        "百度蜘蛛 Baiduspider/2.0 日本語のクローラー 検索エンジン用の非常に長いユーザーエージェント文字列です 中文用户代理",
        "🤖🤖🤖 robot 🐍 python-requests/2.31 🚀🚀 emoji everywhere 🎉🎉🎉🎉 and then some more text to cut",
        "한국어 사용자 에이전트 브라우저 모바일 안드로이드 삼성 인터넷 매우 긴 문자열입니다 정말로 깁니다",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
    ];
    let mut s = String::new();
    for i in 0..40u32 {
        s.push_str(&line(
            &format!("192.0.2.{}", 1 + i % 9),
            i,
            &format!("/wiki/Page_{i}"),
            agents[i as usize % agents.len()],
        ));
    }
    let p = dir.join("wide.log");
    std::fs::write(&p, s).expect("write log");
    p
}

fn run(data: &Path, dir: &Path, args: &[&str]) -> (String, String, i32) {
    let out = logscope(data)
        .current_dir(dir)
        .env_remove("LOGSCOPE_CONFIG")
        .env("XDG_CONFIG_HOME", dir.join("no-config"))
        .env_remove("COLUMNS")
        .args(args)
        .output()
        .expect("runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn completions_name_the_commands_for_every_shell() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (bash, err, code) = run(&data, dir.path(), &["completions", "bash"]);
    assert_eq!(code, 0, "{err}");
    for cmd in [
        "ingest",
        "heavy",
        "concentration",
        "agents",
        "availability",
        "replay",
    ] {
        assert!(bash.contains(cmd), "bash completions lack {cmd}");
    }
    assert!(bash.contains("--color"), "global flags completed too");
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let (out, err, code) = run(&data, dir.path(), &["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(out.contains("heavy"), "{shell}: {out}");
    }
    let (_, err, code) = run(&data, dir.path(), &["completions", "tcsh"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn man_prints_a_roff_page() {
    // clap_mangen's page opens with the two-line `Aq` (apostrophe) preamble of roff,
    // then the title line.
    let title = |page: &str| -> String {
        page.lines()
            .find(|l| !l.starts_with(".ie ") && !l.starts_with(".el "))
            .unwrap_or("")
            .to_string()
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (out, err, code) = run(&data, dir.path(), &["man"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        title(&out).starts_with(".TH logscope 1"),
        "{}",
        &out[..out.len().min(200)]
    );
    assert!(out.contains("heavy"), "the page lists the commands");
    let (heavy, err, code) = run(&data, dir.path(), &["man", "heavy"]);
    assert_eq!(code, 0, "{err}");
    assert!(title(&heavy).starts_with(".TH logscope-heavy 1"), "{heavy}");
    assert!(heavy.contains("capacity"), "heavy's own options");
    let (_, err, code) = run(&data, dir.path(), &["man", "nosuch"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("logscope man heavy"), "{err}");
}

#[test]
fn color_always_forces_colour_when_piped_never_disables_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = write_log(dir.path(), true);
    let log = log.to_str().unwrap();
    // common::logscope sets NO_COLOR=1: --color always wins over it.
    let (always, err, code) = run(&data, dir.path(), &["--color", "always", "heavy", log]);
    assert_eq!(code, 0, "{err}");
    assert!(always.contains("\x1b["), "{always}");
    let (after, _, _) = run(&data, dir.path(), &["heavy", "--color", "always", log]);
    assert!(
        after.contains("\x1b["),
        "a global flag, after the command too"
    );
    let (never, _, _) = run(&data, dir.path(), &["--color", "never", "heavy", log]);
    assert!(!never.contains('\x1b'), "{never}");
    let (auto, _, _) = run(&data, dir.path(), &["heavy", log]);
    assert!(!auto.contains('\x1b'), "auto: no colour into a pipe");
    // Colour is for text only.
    let (json, _, _) = run(
        &data,
        dir.path(),
        &["--color", "always", "heavy", "--format", "json", log],
    );
    assert!(!json.contains('\x1b'));
    let (_, err, code) = run(&data, dir.path(), &["--color", "sometimes", "heavy", log]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn first_ingest_suggests_the_next_step_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = write_log(dir.path(), true);
    let (out, err, code) = run(&data, dir.path(), &["ingest", log.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("next: logscope top "), "{err}");
    assert!(!out.contains("next:"), "the hint is on stderr: {out}");
    // Not after a later ingest into a dataset that has rows.
    let more = dir.path().join("more.log");
    std::fs::write(&more, line("192.0.2.99", 59, "/x", "curl/8")).unwrap();
    let (_, err, code) = run(&data, dir.path(), &["ingest", more.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("next:"), "{err}");
}

#[test]
fn no_next_step_hint_with_json_or_quiet() {
    for flag in ["--json", "--quiet"] {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let log = write_log(dir.path(), true);
        let (out, err, code) = run(&data, dir.path(), &["ingest", flag, log.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        assert!(!out.contains("next:"), "{flag}: {out}");
        assert!(!err.contains("next:"), "{flag}: {err}");
        if flag == "--json" {
            let v: serde_json::Value = serde_json::from_str(out.trim()).expect("only JSON");
            assert!(v["added"].as_u64().unwrap() > 0);
        }
    }
}

#[test]
fn heavy_rules_that_match_nothing_get_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let plain = write_log(dir.path(), false);
    let plain = plain.to_str().unwrap();
    let (out, err, code) = run(&data, dir.path(), &["heavy", plain]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("[[heavy.class]]"), "{err}");
    assert!(err.contains("--rules FILE"), "{err}");
    assert!(!out.contains("[[heavy.class]]"), "the hint is on stderr");
    // JSON is for scripts: no hint, and stdout is only JSON.
    let (json, err, _) = run(&data, dir.path(), &["heavy", "--format", "json", plain]);
    assert!(!err.contains("hint"), "{err}");
    serde_json::from_str::<serde_json::Value>(&json).expect("only JSON");
    // Heavy requests matched: no hint.
    let dir2 = tempfile::tempdir().unwrap();
    let searches = write_log(dir2.path(), true);
    let (_, err, code) = run(&data, dir2.path(), &["heavy", searches.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("[[heavy.class]]"), "{err}");
}

const EXPENSIVE: &str = "[[heavy.class]]\nname = \"expensive\"\npath = '^/api/expensive$'\n";

/// `heavy --format json` over `log`; returns (heavy count, selection description).
fn heavy_with_env(dir: &Path, log: &Path, env: &[(&str, &Path)]) -> (u64, String) {
    let mut c = logscope(&dir.join("data"));
    c.current_dir(dir)
        .env_remove("LOGSCOPE_CONFIG")
        .env_remove("XDG_CONFIG_HOME")
        .env("HOME", dir.join("home"));
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c
        .args(["heavy", "--format", "json"])
        .arg(log)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    (
        v["heavy"].as_u64().unwrap(),
        v["selection"].as_str().unwrap().to_string(),
    )
}

#[test]
fn rules_come_from_logscope_config_then_cwd_then_xdg() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let log = write_log(d, false);
    // Nothing anywhere: built-in rules, no heavy request in this log.
    assert_eq!(heavy_with_env(d, &log, &[]).0, 0);

    // ~/.config/logscope/logscope.toml (XDG_CONFIG_HOME unset).
    let home_cfg = d.join("home/.config/logscope");
    std::fs::create_dir_all(&home_cfg).unwrap();
    std::fs::write(home_cfg.join("logscope.toml"), EXPENSIVE).unwrap();
    let (heavy, sel) = heavy_with_env(d, &log, &[]);
    assert_eq!(heavy, 20, "{sel}");
    assert!(sel.contains("home/.config/logscope/logscope.toml"), "{sel}");

    // $XDG_CONFIG_HOME/logscope/logscope.toml replaces ~/.config.
    let xdg = d.join("xdg");
    std::fs::create_dir_all(xdg.join("logscope")).unwrap();
    std::fs::write(xdg.join("logscope/logscope.toml"), EXPENSIVE).unwrap();
    let (heavy, sel) = heavy_with_env(d, &log, &[("XDG_CONFIG_HOME", &xdg)]);
    assert_eq!(heavy, 20);
    assert!(sel.contains("xdg/logscope/logscope.toml"), "{sel}");

    // ./logscope.toml before the XDG file (this one excludes the class: nothing heavy).
    let none = "[heavy]\nmediawiki = false\n";
    std::fs::write(d.join("logscope.toml"), none).unwrap();
    let (heavy, sel) = heavy_with_env(d, &log, &[("XDG_CONFIG_HOME", &xdg)]);
    assert_eq!(heavy, 0);
    assert!(sel.contains("(rules: logscope.toml)"), "{sel}");

    // $LOGSCOPE_CONFIG before ./logscope.toml.
    let named = d.join("named.toml");
    std::fs::write(&named, EXPENSIVE).unwrap();
    let (heavy, sel) = heavy_with_env(
        d,
        &log,
        &[("XDG_CONFIG_HOME", &xdg), ("LOGSCOPE_CONFIG", &named)],
    );
    assert_eq!(heavy, 20);
    assert!(sel.contains("named.toml"), "{sel}");

    // --rules before everything.
    let out = logscope(&d.join("data"))
        .current_dir(d)
        .env("LOGSCOPE_CONFIG", &named)
        .args(["heavy", "--format", "json", "--rules", "logscope.toml"])
        .arg(&log)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["heavy"].as_u64(), Some(0));

    // A LOGSCOPE_CONFIG naming no file is an error, not a silent fallback.
    let out = logscope(&d.join("data"))
        .current_dir(d)
        .env("LOGSCOPE_CONFIG", d.join("missing.toml"))
        .args(["heavy"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("LOGSCOPE_CONFIG"), "{err}");
}

#[test]
fn rules_help_documents_the_lookup_order() {
    let dir = tempfile::tempdir().unwrap();
    let (help, _, code) = run(&dir.path().join("data"), dir.path(), &["heavy", "--help"]);
    assert_eq!(code, 0);
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for part in [
        "$LOGSCOPE_CONFIG",
        "./logscope.toml",
        "$XDG_CONFIG_HOME/logscope/logscope.toml",
        "~/.config/logscope/logscope.toml",
    ] {
        assert!(flat.contains(part), "{part}: {flat}");
    }
}

/// Lines of the `agents --sample` table (from its header to the next blank line).
fn sample_table(out: &str) -> Vec<&str> {
    let mut lines = out.lines().skip_while(|l| !l.contains("user agent"));
    let mut t = Vec::new();
    for l in lines.by_ref() {
        if l.trim().is_empty() {
            break;
        }
        t.push(l);
    }
    t
}

#[test]
fn tables_fit_columns_measured_in_display_width() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = write_wide_log(dir.path());
    let args = ["agents", "--sample", "8", log.to_str().unwrap()];
    let widest = |out: &str| out.lines().map(display_width).max().unwrap_or(0);

    // Piped, COLUMNS unset: 80 columns, as before.
    let (out80, err, code) = run(&data, dir.path(), &args);
    assert_eq!(code, 0, "{err}");
    assert!(widest(&out80) <= 80, "{out80}");
    let t = sample_table(&out80);
    assert!(t.len() > 2, "a sample table: {out80}");
    // Every row of the sample table ends at the same display column? Rows are cut to
    // the same width when the agent is the last, left-aligned column: each line is at
    // most the header's width, and the cut ones exactly the table's width.
    let w: Vec<usize> = t.iter().map(|l| display_width(l)).collect();
    let max = *w.iter().max().unwrap();
    assert!(
        w.iter().filter(|x| **x == max).count() >= 3,
        "cut rows fill the width: {w:?}\n{out80}"
    );
    assert!(out80.contains('…'), "over-wide agents are cut: {out80}");

    // COLUMNS=120 widens the report (even when piped).
    let out = logscope(&data)
        .current_dir(dir.path())
        .env("COLUMNS", "120")
        .args(args)
        .output()
        .unwrap();
    let out120 = String::from_utf8_lossy(&out.stdout);
    assert!(widest(&out120) <= 120, "{out120}");
    assert!(widest(&out120) > 80, "{out120}");

    // With --out the file keeps 80 columns whatever COLUMNS says.
    let file = dir.path().join("agents.txt");
    let out = logscope(&data)
        .current_dir(dir.path())
        .env("COLUMNS", "120")
        .args(args)
        .arg("--out")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(widest(&text) <= 80, "{text}");
}

/// Runs `logscope ARGS` with standard output on a pseudo-terminal `cols` wide (and
/// `COLUMNS` unset); returns what it printed there, with `\r\n` made `\n`.
#[cfg(target_os = "linux")]
fn on_terminal(data: &Path, dir: &Path, cols: u16, args: &[&str]) -> String {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut master = -1;
    let mut slave = -1;
    let ws = libc::winsize {
        ws_row: 50,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two descriptors into the given ints and reads the winsize.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &ws,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened by openpty and are owned here alone.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("logscope"))
        .current_dir(dir)
        .env_remove("COLUMNS")
        .env_remove("LOGSCOPE_CONFIG")
        .env("NO_COLOR", "1")
        .arg("--data")
        .arg(data)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::from(slave))
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("runs");
    // The child holds the only other copy of the slave: reading ends (EIO) when it exits.
    let mut out = Vec::new();
    let mut f = std::fs::File::from(master);
    let mut buf = [0u8; 8192];
    loop {
        match f.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    assert!(child.wait().expect("exits").success());
    String::from_utf8_lossy(&out).replace("\r\n", "\n")
}

#[cfg(target_os = "linux")]
#[test]
fn tables_fit_the_terminal_width() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = write_wide_log(dir.path());
    let args = ["agents", "--sample", "8", log.to_str().unwrap()];
    let widest = |out: &str| out.lines().map(display_width).max().unwrap_or(0);
    let wide = on_terminal(&data, dir.path(), 110, &args);
    assert!(wide.contains("user agent"), "{wide}");
    assert!(widest(&wide) <= 110 && widest(&wide) > 80, "{wide}");
    let narrow = on_terminal(&data, dir.path(), 60, &args);
    assert!(widest(&narrow) <= 60, "{narrow}");
}

/// `logscope rules` says which rules file is in effect; `--example` prints a commented
/// starter file that the reports read as it is.
#[test]
fn rules_names_the_file_in_effect_and_prints_a_starter() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = d.join("data");
    let log = write_log(d, true);
    let (out, err, code) = run(&data, d, &["rules"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("built-in"), "{out}");
    let (example, _, code) = run(&data, d, &["rules", "--example"]);
    assert_eq!(code, 0);
    assert!(example.contains("[[heavy.class]]") && example.contains("trust_proxy"));
    std::fs::write(d.join("logscope.toml"), &example).unwrap();
    let (out, _, _) = run(&data, d, &["rules"]);
    assert!(out.contains("rules: logscope.toml"), "{out}");
    // The starter is a valid rules file: a report reads it (found in ./, and as --rules).
    let log = log.to_str().unwrap();
    for args in [
        vec!["heavy", "--format", "json", log],
        vec!["heavy", "--rules", "logscope.toml", "--format", "json", log],
    ] {
        let (out, err, code) = run(&data, d, &args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.contains("\"heavy\""), "{out}");
    }
}
