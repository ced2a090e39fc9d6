//! Regression tests: configurations that exhausted the stack, the CPU or memory — blocks
//! nested 10,000 deep, includes and imports that multiply, fail2ban interpolation, tag
//! and `[INCLUDES]` bombs, maps of maps — and `/dev/zero`, a FIFO or a huge sparse file
//! given to every flag that reads a configuration. Each is refused within seconds (the
//! binary is killed after [`GUARD`]) with exit 2 and a message naming file:line (or the
//! file) and the bound. The bombs are small files generated into a temporary directory.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::logscope;

/// The most a refusal may take (a debug build on a shared machine); each took from
/// seconds to forever, and gigabytes, before.
const GUARD: Duration = Duration::from_secs(10);

/// One combined-format line, the log every run reads.
const LOG: &str =
    "192.0.2.1 - - [01/May/2024:10:00:00 +0000] \"GET / HTTP/1.1\" 200 512 \"-\" \"curl/8\"\n";

fn setup() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("access.log"), LOG).unwrap();
    tmp
}

fn write(dir: &Path, name: &str, text: &str) {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(p, text).unwrap();
}

/// Runs logscope in `dir`, killed after [`GUARD`]: (exit code, stderr).
fn run(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let start = Instant::now();
    let out = logscope(&dir.join("no-dataset"))
        .current_dir(dir)
        .args(args)
        .timeout(GUARD)
        .output()
        .expect("runs");
    let took = start.elapsed();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        took < GUARD,
        "{args:?}: still running after {GUARD:?} (killed); stderr: {err}"
    );
    (out.status.code(), err)
}

/// Asserts that `args` is refused with exit 2 and a message holding each of `wants`.
fn refused(dir: &Path, args: &[&str], wants: &[&str]) -> String {
    let (code, err) = run(dir, args);
    assert_eq!(code, Some(2), "{args:?}: {err}");
    for w in wants {
        assert!(err.contains(w), "{args:?}: {w:?} not in: {err}");
    }
    assert_eq!(err.lines().count(), 1, "{args:?}: one message: {err}");
    err
}

#[test]
fn nginx_blocks_nested_10000_deep() {
    let tmp = setup();
    let d = tmp.path();
    let mut t = "a {\n".repeat(10_000);
    t.push_str(&"}\n".repeat(10_000));
    write(d, "nginx.conf", &t);
    refused(
        d,
        &["replay", "--nginx-conf", "nginx.conf", "access.log"],
        &["nginx.conf:101: blocks nest deeper than 100"],
    );
    // Across includes too: each file opens 4 blocks and includes the next (the 101st
    // block is the first of n25.conf).
    for i in 0..40 {
        write(
            d,
            &format!("n{i}.conf"),
            &format!(
                "a {{\nb {{\nc {{\nd {{\ninclude n{}.conf;\n}}\n}}\n}}\n}}\n",
                i + 1
            ),
        );
    }
    write(d, "n40.conf", "x;\n");
    refused(
        d,
        &["replay", "--nginx-conf", "n0.conf", "access.log"],
        &["n25.conf:1: blocks nest deeper than 100 (includes together)"],
    );
}

#[test]
fn nginx_includes_doubling_31_levels() {
    let tmp = setup();
    let d = tmp.path();
    for i in 0..31 {
        write(
            d,
            &format!("f{i}.conf"),
            &format!("include f{n}.conf;\ninclude f{n}.conf;\n", n = i + 1),
        );
    }
    write(d, "f31.conf", "x 1;\n");
    let err = refused(
        d,
        &["replay", "--nginx-conf", "f0.conf", "access.log"],
        &["more than 4096 files loaded"],
    );
    // At the include that passed the bound: fN.conf:1 or :2, naming the file included.
    let at = err.find(".conf:").expect("file:line");
    let line = &err[at + 6..];
    assert!(
        line.starts_with("1: include") || line.starts_with("2: include"),
        "{err}"
    );
}

#[test]
fn caddy_snippets_imported_8_times_over_16_levels() {
    let tmp = setup();
    let d = tmp.path();
    let mut t = String::from("(s0) {\n\trespond \"x\"\n}\n");
    for i in 1..=16 {
        t.push_str(&format!("(s{i}) {{\n"));
        for _ in 0..8 {
            t.push_str(&format!("\timport s{}\n", i - 1));
        }
        t.push_str("}\n");
    }
    t.push_str("example.com {\n\timport s16\n}\n");
    write(d, "Caddyfile", &t);
    refused(
        d,
        &["replay", "--caddyfile", "Caddyfile", "access.log"],
        &["Caddyfile:", "expands to more than 1000000 directives"],
    );
    // An argument repeated into a long token is spent before it is made.
    let big = "{args[0]}".repeat(100_000);
    let arg = "y".repeat(1000);
    write(
        d,
        "Args.caddy",
        &format!("(s) {{\n\trespond \"{big}\"\n}}\nexample.com {{\n\timport s {arg}\n}}\n"),
    );
    refused(
        d,
        &["replay", "--caddyfile", "Args.caddy", "access.log"],
        &["Args.caddy:5: the configuration expands to more than 64 MiB"],
    );
}

#[test]
fn caddy_blocks_nested_10000_deep() {
    let tmp = setup();
    let d = tmp.path();
    let mut t = "a {\n".repeat(10_000);
    t.push_str(&"}\n".repeat(10_000));
    write(d, "Caddyfile", &t);
    refused(
        d,
        &["replay", "--caddyfile", "Caddyfile", "access.log"],
        &["Caddyfile:33: blocks nest deeper than 32"],
    );
    // Opened at the very end of the file.
    write(d, "End.caddy", &"a {\n".repeat(40));
    refused(
        d,
        &["replay", "--caddyfile", "End.caddy", "access.log"],
        &["End.caddy:", "blocks nest deeper than 32"],
    );
}

#[test]
fn fail2ban_interpolation_bomb() {
    let tmp = setup();
    let d = tmp.path();
    let mut t = String::from("[DEFAULT]\na0 = xxxxxxxxxxxxxxxx\n");
    for i in 1..=12 {
        t.push_str(&format!("a{i} = {}\n", format!("%(a{})s", i - 1).repeat(8)));
    }
    t.push_str("[sshd]\nenabled = true\nfailregex = ^<HOST> %(a12)s\n");
    write(d, "jail.local", &t);
    refused(
        d,
        &["replay", "--fail2ban-jail", "jail.local", "access.log"],
        &["jail.local:17: the configuration expands to more than"],
    );
}

#[test]
fn fail2ban_tag_doubling() {
    let tmp = setup();
    let d = tmp.path();
    write(
        d,
        "filter.d/bomb.conf",
        "[Definition]\nt = <t><t>\nfailregex = ^<HOST> <t>\n",
    );
    write(d, "jail.local", "[bomb]\nenabled = true\nfilter = bomb\n");
    refused(
        d,
        &["replay", "--fail2ban-jail", "jail.local", "access.log"],
        &["bomb.conf:3: the configuration expands to more than"],
    );
}

#[test]
fn fail2ban_includes_fan_out() {
    let tmp = setup();
    let d = tmp.path();
    for i in 1..=12 {
        write(
            d,
            &format!("l{i}.conf"),
            &format!(
                "[INCLUDES]\nbefore = {}\n[DEFAULT]\nk{i} = 1\n",
                format!("l{}.conf ", i + 1).repeat(5)
            ),
        );
    }
    write(d, "l13.conf", "[DEFAULT]\nk = 1\n");
    write(
        d,
        "jail.local",
        "[INCLUDES]\nbefore = l1.conf l1.conf l1.conf l1.conf l1.conf\n[sshd]\nenabled = true\nfailregex = ^<HOST> x\n",
    );
    refused(
        d,
        &["replay", "--fail2ban-jail", "jail.local", "access.log"],
        &[".conf:2: ", "more than 4096 files loaded"],
    );
}

#[test]
fn nginx_maps_of_maps() {
    let tmp = setup();
    let d = tmp.path();
    let mut t = String::from("http {\n");
    for i in 0..16 {
        t.push_str(&format!(
            "map $uri $m{i} {{ /a $m{n}; /b $m{n}; /c $m{n}; /d $m{n}; default $m{n}; }}\n",
            n = i + 1
        ));
    }
    t.push_str("map $uri $m16 { default $binary_remote_addr; }\n");
    t.push_str("limit_req_zone $m0 zone=z:10m rate=1r/s;\n");
    t.push_str("server { location / { limit_req zone=z; } }\n}\n");
    write(d, "nginx.conf", &t);
    refused(
        d,
        &["replay", "--nginx-conf", "nginx.conf", "access.log"],
        &["nginx.conf:19: ", "more than 100000 cases and tests"],
    );
}

/// Every flag that reads a configuration, as a command line around `path`.
fn flags(path: &str) -> Vec<(Vec<String>, &'static str)> {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        (v(&["replay", "--nginx-conf", path, "access.log"]), "16 MiB"),
        (v(&["replay", "--caddyfile", path, "access.log"]), "16 MiB"),
        (
            v(&["replay", "--haproxy-cfg", path, "access.log"]),
            "16 MiB",
        ),
        (
            v(&["replay", "--fail2ban-jail", path, "access.log"]),
            "16 MiB",
        ),
        (v(&["replay", "--config", path, "access.log"]), "16 MiB"),
        (v(&["heavy", "--rules", path, "access.log"]), "16 MiB"),
        (
            v(&[
                "concentration",
                "--by",
                "asn",
                "--asn-db",
                path,
                "access.log",
            ]),
            "256 MiB",
        ),
    ]
}

fn each_flag(dir: &Path, path: &str, want: impl Fn(&str) -> String) {
    for (args, cap) in flags(path) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(dir, &args, &[path, &want(cap)]);
    }
}

#[test]
fn dev_zero_is_refused_by_every_flag() {
    let tmp = setup();
    each_flag(tmp.path(), "/dev/zero", |_| {
        "not a regular file but a character device".into()
    });
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    let tmp = setup();
    let d = tmp.path();
    let fifo = d.join("conf.fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // Nobody opens the write end: reading it would block forever.
    each_flag(d, "conf.fifo", |_| "not a regular file but a FIFO".into());
    // Included or imported, too.
    write(d, "inc.conf", "http {\ninclude conf.fifo;\n}\n");
    refused(
        d,
        &["replay", "--nginx-conf", "inc.conf", "access.log"],
        &["inc.conf:2: include conf.fifo: not a regular file but a FIFO"],
    );
    write(d, "Imp.caddy", "example.com {\n\timport conf.fifo\n}\n");
    refused(
        d,
        &["replay", "--caddyfile", "Imp.caddy", "access.log"],
        &["Imp.caddy:2: ", "conf.fifo: not a regular file but a FIFO"],
    );
    write(
        d,
        "jail.local",
        "[INCLUDES]\nbefore = conf.fifo\n[sshd]\nenabled = true\nfailregex = ^<HOST> x\n",
    );
    refused(
        d,
        &["replay", "--fail2ban-jail", "jail.local", "access.log"],
        &["jail.local:2: ", "conf.fifo: not a regular file but a FIFO"],
    );
}

#[test]
fn a_huge_sparse_file_is_refused_unread() {
    let tmp = setup();
    let d = tmp.path();
    let f = std::fs::File::create(d.join("huge.conf")).unwrap();
    f.set_len(4 << 30).unwrap();
    drop(f);
    each_flag(d, "huge.conf", |cap| format!("larger than {cap}"));
}

#[test]
fn a_directory_is_refused() {
    let tmp = setup();
    let d = tmp.path();
    std::fs::create_dir(d.join("conf.d")).unwrap();
    each_flag(d, "conf.d", |_| "not a regular file but a directory".into());
}
