//! Tests of the haproxy.cfg reader: words, times, sizes, tables, errors.

use super::fetch::{size, time_ms};
use super::*;
use crate::replay::KeySpec;

#[test]
fn words_quotes_and_comments() {
    assert_eq!(
        words(r#"http-request deny string "rate limited" hdr X 'a b' # note"#).unwrap(),
        [
            "http-request",
            "deny",
            "string",
            "rate limited",
            "hdr",
            "X",
            "a b"
        ]
    );
    assert!(words("x \"open").is_err());
}

#[test]
fn times_and_sizes() {
    assert_eq!(time_ms("10000"), Some(10_000));
    assert_eq!(time_ms("10s"), Some(10_000));
    assert_eq!(time_ms("1m"), Some(60_000));
    assert_eq!(time_ms("30000ms"), Some(30_000));
    assert_eq!(time_ms("x"), None);
    assert_eq!(size("100k"), Some(102_400));
}

const CFG: &str = "\
frontend fe
bind :80
acl api path_beg /api/
http-request track-sc0 src table st
http-request track-sc1 src,ipmask(24) table st24 if api
http-request deny deny_status 429 if { sc_http_req_rate(0) gt 2 }
http-request deny if api { sc1_http_req_rate gt 5 }
http-request track-sc2 hdr(x-forwarded-for) table st
tcp-request connection track-sc0 src
backend st
stick-table type ip size 1m expire 10s store http_req_rate(10s)
backend st24
stick-table type ip size 1m expire 10s store http_req_rate(10s),gpc0
";

#[test]
fn reads_tables_tracks_denies_and_lists_what_it_skips() {
    let c = parse(CFG, "t/haproxy.cfg", "haproxy.cfg").unwrap();
    assert_eq!(c.frontends, ["fe"]);
    let p = &c.policy;
    assert_eq!(p.zones().len(), 2);
    assert_eq!(p.zones()[1].spec().key, KeySpec::Prefix { v4: 24, v6: 128 });
    let names: Vec<&str> = p.rules().iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        ["fe", "fe deny (haproxy.cfg:6)", "fe deny (haproxy.cfg:7)"]
    );
    let lines: Vec<usize> = c.unsupported.iter().map(|u| u.line).collect();
    assert_eq!(lines, [8, 9], "{:?}", c.unsupported);
    assert!(
        c.unsupported[0]
            .to_string()
            .starts_with("t/haproxy.cfg:8: not replayed")
    );
    assert!(p.describe().contains("HAProxy"), "{}", p.describe());
}

#[test]
fn syntax_errors_name_file_and_line() {
    for (text, line, want) in [
        (
            "frontend fe\n  http-request track-sc0 src table nope\n",
            2,
            "no stick-table `nope`",
        ),
        (
            "frontend fe\n  http-request deny if { sc_http_req_rate(0) gt }\n",
            2,
            "needs `gt N`",
        ),
        (
            "frontend fe\n  http-request deny if { path_beg /a\n",
            2,
            "without its `}`",
        ),
        (
            "frontend fe\n  http-request deny if nope\n",
            2,
            "no ACL named `nope`",
        ),
        (
            "backend b\n  stick-table size 1k\n",
            2,
            "`type` is required",
        ),
        (
            "backend b\n  stick-table type ip store http_req_rate\n",
            2,
            "needs a period",
        ),
        ("  bind :80\n", 1, "outside any section"),
        ("frontend fe\n  bind :80\n", 0, "nothing to replay"),
    ] {
        let e = parse(text, "h.cfg", "h")
            .err()
            .unwrap_or_else(|| panic!("{text}"));
        assert_eq!(e.line, line, "{text}: {e}");
        assert!(e.to_string().contains(want), "{text}: {e}");
    }
}
