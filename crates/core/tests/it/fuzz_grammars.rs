//! Fuzz targets (stable toolchain, proptest-driven) for every option grammar and
//! configuration reader in logscope-core: `--limit` specs, rates, keys,
//! algorithm/cost/dialect names, limit TOML configs, the classification TOML, status sets
//! (report and availability), hosts, agent classes, CIDRs, durations, capacities, grades,
//! the ASN TSV, and the server configurations (`--nginx-conf`, `--caddyfile`,
//! `--haproxy-cfg`, `--fail2ban-jail`, read from files with their includes, imports and
//! filters). Inputs are token soups, random Unicode and mutations of valid examples
//! (fixtures/limits/, fixtures/oracles/, fixtures/logscope.toml), with blocks nested
//! thousands deep and includes repeated. Each parse must return `Ok` or `Err` with a
//! message, never panic, and the configuration readers and TOML parsers must end within a
//! bounded time per case; what parses must print back to text that parses to the same
//! value where the type promises it, and must then work (a replay, a classifier, a
//! filter) on a few rows.
//!
//! Deterministic by default; `LOGSCOPE_FUZZ_SCALE=10` runs 10× the cases,
//! `LOGSCOPE_FUZZ_SEED=N` another seed. A failure prints the minimal input.

use std::net::IpAddr;
use std::sync::OnceLock;

use logscope_core::availability;
use logscope_core::batch::Batch;
use logscope_core::classify::config::{Overrides, parse_cidr};
use logscope_core::classify::{
    AgentClassifier, AgentSelector, BotKind, Config, Device, Filter, HostPattern, StatusSet,
};
use logscope_core::duration::{self, Duration, Resolution};
use logscope_core::forensics::{self, asn::AsnDb};
use logscope_core::parse::{Format, ParseOptions};
use logscope_core::replay::{
    Algorithm, CostKind, Dialect, KeySpec, LimitSpec, Policy, Rate, Replay, Request,
};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;

use crate::fuzz_common::fuzz;

// ---------------------------------------------------------------------------------------
// Harness (as in fuzz_parsers.rs)

// ---------------------------------------------------------------------------------------
// Text generation: token soups and mutated valid examples

/// Fragments every grammar sees: separators, numbers at and past every limit, units,
/// Unicode, control bytes.
const COMMON: &[&str] = &[
    "",
    " ",
    ",",
    ",,",
    "=",
    "/",
    "-",
    "--",
    ".",
    ":",
    "_",
    "%",
    "*",
    "*.",
    "[",
    "]",
    "{",
    "}",
    "\"",
    "'",
    "\\",
    "#",
    "\n",
    "\t",
    "\r",
    "\0",
    "\u{1b}[31m",
    "\u{7}",
    "é",
    "漢字",
    "🦀",
    "\u{202e}",
    "\u{feff}",
    "0",
    "1",
    "-1",
    "-5",
    "00",
    "0.0",
    "0.5",
    ".5",
    "1.",
    "1e999",
    "1e-999",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "255",
    "256",
    "65535",
    "65536",
    "4294967296",
    "1099511627776",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "9999999999999999999999",
    "0.0000000001",
    "0.1234567891",
    "1_000",
    "ms",
    "s",
    "m",
    "min",
    "h",
    "d",
    "w",
    "x",
    "r",
    "req",
    " per ",
    "per",
    "10/0s",
    "-5m",
    "1h30",
    "1h30m",
    "2024-02-30",
    "25:61",
];

/// A text strategy: `tokens` (and the common ones) mixed with random Unicode, or a valid
/// example mutated at the byte level (then read as lossy UTF-8).
fn text(tokens: &'static [&'static str], valid: &'static [&'static str]) -> BoxedStrategy<String> {
    let piece = prop_oneof![
        8 => proptest::sample::select(tokens).prop_map(str::to_string),
        4 => proptest::sample::select(COMMON).prop_map(str::to_string),
        1 => "\\PC{0,3}",
        1 => any::<char>().prop_map(|c| c.to_string()),
    ];
    let soup = proptest::collection::vec(piece, 0..12).prop_map(|v| v.concat());
    let mutated = (
        proptest::sample::select(valid),
        proptest::collection::vec(mutation(), 1..5),
    )
        .prop_map(|(s, muts)| {
            let mut b = s.as_bytes().to_vec();
            for m in &muts {
                apply(&mut b, m);
            }
            String::from_utf8_lossy(&b).into_owned()
        });
    prop_oneof![
        4 => soup,
        4 => mutated,
        1 => proptest::sample::select(valid).prop_map(str::to_string),
    ]
    .boxed()
}

#[derive(Clone, Debug)]
enum Mut {
    Flip(Index, u8),
    Insert(Index, String),
    Delete(Index, u8),
    Truncate(Index),
    Duplicate(Index, Index),
    Run(Index, char, usize),
}

fn mutation() -> impl Strategy<Value = Mut> {
    prop_oneof![
        2 => (any::<Index>(), 0u8..8).prop_map(|(i, b)| Mut::Flip(i, b)),
        5 => (any::<Index>(), proptest::sample::select(COMMON)).prop_map(|(i, t)| Mut::Insert(i, t.to_string())),
        2 => (any::<Index>(), 1u8..8).prop_map(|(i, n)| Mut::Delete(i, n)),
        1 => any::<Index>().prop_map(Mut::Truncate),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mut::Duplicate(a, b)),
        1 => (any::<Index>(), prop_oneof![Just('9'), Just(','), Just('a'), Just('/')], prop_oneof![1usize..40, Just(5000usize)])
            .prop_map(|(i, c, n)| Mut::Run(i, c, n)),
    ]
}

fn apply(b: &mut Vec<u8>, m: &Mut) {
    let pos = |i: &Index, b: &Vec<u8>| i.index(b.len() + 1);
    match m {
        Mut::Flip(i, bit) if !b.is_empty() => {
            let p = i.index(b.len());
            b[p] ^= 1 << bit;
        }
        Mut::Insert(i, t) => {
            let p = pos(i, b);
            b.splice(p..p, t.bytes());
        }
        Mut::Delete(i, n) => {
            let p = pos(i, b);
            let e = (p + *n as usize).min(b.len());
            b.drain(p..e);
        }
        Mut::Truncate(i) => {
            let p = pos(i, b);
            b.truncate(p);
        }
        Mut::Duplicate(x, y) => {
            let (mut a, mut z) = (pos(x, b), pos(y, b));
            if a > z {
                std::mem::swap(&mut a, &mut z);
            }
            let piece = b[a..z].to_vec();
            b.splice(z..z, piece);
        }
        Mut::Run(i, c, n) => {
            let p = pos(i, b);
            let s: String = std::iter::repeat_n(*c, *n).collect();
            b.splice(p..p, s.into_bytes());
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------
// Rows to exercise what parsed: requests for replays, a batch for classifiers and filters

const T0: i64 = 1_700_000_000_000;

/// Requests with hostile costs and keys, in time order with some going back.
fn requests() -> &'static [Request<'static>] {
    static R: OnceLock<Vec<Request<'static>>> = OnceLock::new();
    R.get_or_init(|| {
        let ips: [Option<IpAddr>; 4] = [
            Some("1.2.3.4".parse().unwrap()),
            Some("2001:db8::1".parse().unwrap()),
            Some("::ffff:10.0.0.1".parse().unwrap()),
            None,
        ];
        let gaps = [
            0i64, 0, 1, 999, 1000, 0, 59_999, 3_600_000, 0, 1, 86_400_000, -5000,
        ];
        let mut t = T0;
        let mut out = Vec::new();
        for i in 0..48u64 {
            t += gaps[i as usize % gaps.len()];
            let k = i as usize;
            out.push(Request {
                index: i,
                arrival_ms: t,
                ip: ips[k % 4],
                client: b"host.example",
                method: Some(if k.is_multiple_of(3) {
                    &b"POST"[..]
                } else {
                    b"GET"
                }),
                path: Some(if k.is_multiple_of(2) {
                    &b"/index.php"[..]
                } else {
                    b"/w/api.php"
                }),
                query: k.is_multiple_of(5).then_some(&b"search=x&\xff"[..]),
                host: Some(b"wiki.example"),
                user_agent: Some(if k.is_multiple_of(4) {
                    &b"curl/8"[..]
                } else {
                    b"Mozilla/5.0 \x1b[31m"
                }),
                referer: None,
                user: k.is_multiple_of(7).then_some(&b"alice"[..]),
                identified: k.is_multiple_of(7),
                has_cookie: Some(k.is_multiple_of(2)),
                heavy: k % 3 == 1,
                status: [200u16, 429, 503, 0, 999][k % 5],
                request_time_us: [None, Some(0), Some(1), Some(u64::MAX), Some(999_999_999)][k % 5],
                bytes: [None, Some(0), Some(u64::MAX), Some(1 << 40)][k % 4],
                whole_second: k.is_multiple_of(6),
                anonymous: k.is_multiple_of(9),
                fields: [
                    [None, Some(&b"key-a"[..]), Some(b"-"), Some(b"k\xff")][k % 4],
                    None,
                    None,
                    None,
                ],
            });
        }
        out
    })
}

/// Runs every request through the policies: no panic, one verdict per candidate.
fn replay(policies: Vec<Policy>) -> Result<(), TestCaseError> {
    let n = policies.len();
    for p in &policies {
        prop_assert!(!p.describe().is_empty());
    }
    let mut r = Replay::new(policies);
    for req in requests() {
        prop_assert_eq!(r.decide(req).len(), n);
    }
    for c in r.counters() {
        prop_assert!(c.refused <= requests().len() as u64);
    }
    Ok(())
}

/// A batch of parsed rows with varied agents, paths, hosts, users and clients.
fn batch() -> &'static Batch {
    static B: OnceLock<Batch> = OnceLock::new();
    B.get_or_init(|| {
        let lines: &[&[u8]] = &[
            br#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /index.php?search=x HTTP/1.1" 200 5 "-" "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Safari/604.1""#,
            br#"2001:db8::1 - bob [17/May/2015:10:05:04 +0000] "POST /w/api.php?action=query&list=search HTTP/1.1" 429 - "http://r/" "GPTBot/1.0""#,
            br#"10.0.0.1 - - [17/May/2015:10:05:05 +0000] "GET /wiki/Special:Search HTTP/1.1" 503 0 "-" "curl/8.0""#,
            br#"host.example - - [17/May/2015:10:05:06 +0000] "GET /x\xff\x1b[31m HTTP/1.1" 999 1 "-" "\xfe\x00""#,
            br#"::ffff:192.0.2.1 - - [17/May/2015:10:05:07 +0000] "-" 400 - "-" "-""#,
        ];
        let mut p = Format::Combined.parser(&ParseOptions::default());
        let mut b = Batch::default();
        for (i, l) in lines.iter().enumerate() {
            let r = p.parse(l).expect("batch seed parses");
            b.push(&r, i as u64 + 1);
        }
        let caddy = br#"{"ts":1716723772.5,"request":{"remote_addr":"10.9.9.9:5555","method":"GET","host":"Wiki.Example:443","uri":"/w/index.php?diff=1","headers":{"User-Agent":["Googlebot/2.1"],"Cookie":["REDACTED"]}},"duration":0.5,"status":200}"#;
        let mut c = Format::CaddyJson.parser(&ParseOptions::default());
        b.push(&c.parse(caddy).expect("caddy seed parses"), 99);
        b
    })
}

// ---------------------------------------------------------------------------------------
// replay: --limit SPEC, rates, keys, names

const SPEC_TOKENS: &[&str] = &[
    "1600/10m",
    "5r/s",
    "30r/m",
    "0.2/s",
    "2.5/s",
    "1/h",
    "300/min",
    "12/hour",
    "100/500ms",
    "30 per minute",
    "1/5s",
    "1r/m",
    ",burst=",
    ",burst=10",
    ",burst=0",
    ",queue=",
    ",queue=7",
    ",algo=",
    ",algorithm=",
    ",algo=nginx",
    ",algo=caddy",
    ",algo=token-bucket",
    ",algo=gcra",
    ",algo=fixed-window",
    ",algo=sliding-window",
    ",algo=leaky-queue",
    ",algo=sliding_log",
    ",key=",
    ",key=ip",
    ",key=prefix",
    ",key=prefix/16",
    ",key=prefix/24/64",
    ",key=prefix/33",
    ",key=prefix/24/129",
    ",key=prefix//",
    ",key=agent",
    ",key=uri",
    ",key=field:http_x_api_key",
    ",key=field:",
    ",cost=",
    ",cost=bytes",
    ",cost=request-time",
    ",nodelay",
    ",nodelay=1",
    ",delay=",
    ",delay=4",
    ",name=",
    ",name=x",
    ",name=é",
    ",scope=",
    ",scope=anonymous-heavy",
    ",scope=heavy",
    ",colour=red",
    "burst=5",
];

const VALID_SPECS: &[&str] = &[
    "1600/10m",
    "5/s,algo=nginx,burst=10,nodelay,key=ip",
    "30/m,algo=nginx,burst=12,delay=4,key=prefix/16",
    "1/5s,algo=token-bucket,burst=15,key=ip,name=per-ip",
    "300/s,algo=token-bucket,burst=1000,cost=request-time",
    "100/h,algo=gcra,key=agent,cost=bytes",
    "1600/10m,scope=anonymous-heavy",
    "10/s,algo=leaky-queue,burst=20",
    "5/s,algo=leaky-queue,queue=7",
    "300/10m,algo=caddy,key=prefix/24/64",
    "100/1m,algo=fixed-window,key=uri",
    "100/1m,algo=sliding-window,key=host",
];

#[test]
fn fuzz_limit_spec() {
    fuzz("--limit SPEC", 1500, text(SPEC_TOKENS, VALID_SPECS), |s| {
        match LimitSpec::parse(&s) {
            Ok(spec) => {
                let canon = spec.to_string();
                let again = LimitSpec::parse(&canon);
                prop_assert_eq!(
                    again.as_ref(),
                    Ok(&spec),
                    "{:?} prints as {:?}, which does not parse back to it",
                    s,
                    canon
                );
                prop_assert!(!spec.describe().is_empty());
                prop_assert!(!spec.describe_zone().is_empty());
                prop_assert!(!spec.label().is_empty());
                let _ = spec.burst();
                match Policy::from_spec(&s) {
                    Ok(p) => replay(vec![p])?,
                    Err(e) => prop_assert!(!e.to_string().is_empty()),
                }
            }
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.contains("For example: `"), "{}", msg);
            }
        }
        Ok(())
    });
}

/// Several candidates at once, as `--limit A --limit B`.
#[test]
fn fuzz_limit_specs_replayed_together() {
    let specs = proptest::collection::vec(text(SPEC_TOKENS, VALID_SPECS), 1..4);
    fuzz("--limit × N", 300, specs, |v| {
        let ps: Vec<Policy> = v.iter().filter_map(|s| Policy::from_spec(s).ok()).collect();
        replay(ps)
    });
}

#[test]
fn fuzz_rate() {
    let valid: &[&str] = &[
        "1600/10m",
        "300/min",
        "5r/s",
        "30r/m",
        "10/s",
        "100/1h",
        "0.2/s",
        "100/500ms",
        "12/hour",
        "30 per minute",
        "2.5/s",
        "1/1.5s",
        "7/0.5m",
        "1req/d",
    ];
    fuzz("rate", 1500, text(SPEC_TOKENS, valid), |s| {
        match Rate::parse(&s) {
            Ok(r) => {
                prop_assert!(r.count() > 0 && r.window_ms() > 0);
                let back = Rate::parse(&r.to_string());
                prop_assert_eq!(back.as_ref(), Ok(&r), "{:?} prints as {}", s, r);
                let _ = (
                    r.per_second(),
                    r.nginx_milli(),
                    r.reduced(),
                    r.describe("request"),
                );
                let _ = r.cmp_permissive(&Rate::new(1, 1).unwrap());
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
        Ok(())
    });
}

#[test]
fn fuzz_key_and_names() {
    let tokens: &[&str] = &[
        "site",
        "ip",
        "prefix",
        "prefix/",
        "prefix/24",
        "prefix/24/64",
        "net/8",
        "/",
        "agent",
        "host",
        "user",
        "method",
        "path",
        "uri",
        "query",
        "status",
        "referer",
        "field:",
        "field:api_key",
        "$",
        "IP",
        "nginx",
        "caddy",
        "token-bucket",
        "tb",
        "gcra",
        "fixed",
        "leaky",
        "log",
        "bytes",
        "ms",
        "request-time",
        "requests",
        "limit_req",
        "rate_limit",
    ];
    let valid: &[&str] = &["prefix/24/64", "ip", "token-bucket", "request-time"];
    fuzz("key/algo/cost/dialect", 1500, text(tokens, valid), |s| {
        if let Some(k) = KeySpec::parse(&s) {
            prop_assert_eq!(
                KeySpec::parse(&k.to_string()),
                Some(k.clone()),
                "key {:?}",
                s
            );
            let _ = k.describe();
        }
        if let Some(a) = Algorithm::parse(&s) {
            prop_assert_eq!(Algorithm::parse(a.name()), Some(a));
        }
        if let Some(c) = CostKind::parse(&s) {
            prop_assert_eq!(CostKind::parse(c.name()), Some(c));
        }
        if let Some(d) = Dialect::parse(&s) {
            prop_assert_eq!(Dialect::parse(d.name()), Some(d));
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------
// TOML configs: replay limits (--config) and classification (--rules / logscope.toml)

fn fixture(rel: &str) -> &'static str {
    let p = format!("{}/../../fixtures/{rel}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
    Box::leak(text.into_boxed_str())
}

/// Hostile TOML values put where a config has a value.
const TOML_VALUES: &[&str] = &[
    "\"\"",
    "\"é\"",
    "\"\\u0000\"",
    "\"\\u001b[31m\"",
    "-1",
    "0",
    "18446744073709551616",
    "9223372036854775807",
    "1e999",
    "nan",
    "inf",
    "[]",
    "{}",
    "[[1]]",
    "true",
    "false",
    "\"5r/s\"",
    "\"0/s\"",
    "\"1/0s\"",
    "\"1/1ms\"",
    "\"1099511627776/1ms\"",
    "\"prefix/33\"",
    "\"prefix/24/64\"",
    "\"(\"",
    "\"[\"",
    "\"a{99999}{99999}\"",
    "\"(?i)^x$\"",
    "\"10.0.0.0/33\"",
    "\"::/0\"",
    "[\"10.0.0.0/8\", \"x\"]",
    "\"5/s,algo=nginx,burst=10,nodelay,key=ip\"",
    "\"nginx\"",
    "\"caddy\"",
    "\"nope\"",
    "{ zone = \"nope\" }",
    "[\"perip\"]",
    "{ path_prefix = [\"/\"], not = { method = \"GET\" } }",
    "{ status = [429, 70000] }",
];

#[derive(Clone, Debug)]
enum LineOp {
    Drop(Index),
    Dup(Index),
    Swap(Index, Index),
    Value(Index, &'static str),
    Insert(Index, &'static str),
    Bytes(Vec<Mut>),
}

const TOML_LINES: &[&str] = &[
    "[[zones]]",
    "[[rules]]",
    "[exempt]",
    "[prefix]",
    "[heavy]",
    "[[heavy.class]]",
    "[identity]",
    "[[agent]]",
    "name = \"x\"",
    "name = \"x\"\nregex = \"(\"",
    "rate = \"5r/s\"",
    "events = 0",
    "window = \"0s\"",
    "max_keys = 0",
    "burst = 18446744073709551615",
    "limits = [{ zone = \"x\", burst = 1 }]",
    "zone = \"x\"",
    "match = { cidr = \"::/0\" }",
    "dialect = \"caddy\"",
    "v4 = 99",
    "v6 = 200",
    "trust_proxy = [\"10.0.0.0/8\"]",
    "kind = \"ai\"",
    "device = \"phone\"",
    "= 1",
    "x =",
    "[",
    "\"",
    "'''",
    "# comment",
];

fn toml_case(valid: &'static [&'static str]) -> BoxedStrategy<String> {
    let op = prop_oneof![
        2 => any::<Index>().prop_map(LineOp::Drop),
        1 => any::<Index>().prop_map(LineOp::Dup),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| LineOp::Swap(a, b)),
        4 => (any::<Index>(), proptest::sample::select(TOML_VALUES)).prop_map(|(i, v)| LineOp::Value(i, v)),
        2 => (any::<Index>(), proptest::sample::select(TOML_LINES)).prop_map(|(i, v)| LineOp::Insert(i, v)),
        1 => proptest::collection::vec(mutation(), 1..3).prop_map(LineOp::Bytes),
    ];
    (
        proptest::sample::select(valid),
        proptest::collection::vec(op, 0..8),
    )
        .prop_map(|(text, ops)| {
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            for op in &ops {
                let n = lines.len().max(1);
                match op {
                    LineOp::Drop(i) if !lines.is_empty() => {
                        lines.remove(i.index(n));
                    }
                    LineOp::Dup(i) if !lines.is_empty() => {
                        let l = lines[i.index(n)].clone();
                        lines.insert(i.index(n), l);
                    }
                    LineOp::Swap(a, b) if !lines.is_empty() => lines.swap(a.index(n), b.index(n)),
                    LineOp::Value(i, v) if !lines.is_empty() => {
                        let l = &mut lines[i.index(n)];
                        if let Some(eq) = l.find('=') {
                            l.truncate(eq + 1);
                            l.push(' ');
                            l.push_str(v);
                        }
                    }
                    LineOp::Insert(i, v) => lines.insert(i.index(lines.len() + 1), v.to_string()),
                    LineOp::Bytes(muts) => {
                        let mut b = lines.join("\n").into_bytes();
                        for m in muts {
                            apply(&mut b, m);
                        }
                        lines = String::from_utf8_lossy(&b)
                            .lines()
                            .map(str::to_string)
                            .collect();
                    }
                    _ => {}
                }
            }
            lines.join("\n")
        })
        .boxed()
}

fn limit_configs() -> &'static [&'static str] {
    static C: OnceLock<Vec<&'static str>> = OnceLock::new();
    C.get_or_init(|| {
        vec![
            fixture("limits/femiwiki-caddy.toml"),
            fixture("limits/nginx-oracle.toml"),
            fixture("limits/wiki-heavy-cap.toml"),
            r#"name = "example"
dialect = "nginx"
[exempt]
cidr = ["10.0.0.0/8"]
ua_regex = "^internal-agent/"
identified = true
users = ["svc"]
[[zones]]
name = "perip"
rate = "5r/s"
algo = "nginx"
key = "ip"
burst = 10
nodelay = true
cost = "requests"
max_keys = 3
[[zones]]
name = "site"
spec = "1600/10m,algo=token-bucket,burst=100"
[[zones]]
name = "ev"
events = 300
window = "10m"
key = "prefix/24/64"
algo = "caddy"
[[rules]]
name = "/ip/"
match = { path_prefix = ["/ip/"], method = ["GET"], status = [200], has_cookie = false, not = { ua_regex = "bot" } }
limits = [{ zone = "perip", burst = 10, nodelay = true }, "site"]
[[rules]]
zone = "ev"
match = { path_regex = "^/w/", query_regex = "search=", heavy = true, anonymous = true, cidr = "::/0" }
"#,
        ]
    })
}

/// TOML nested thousands deep (arrays, inline tables, dotted keys, table headers): the
/// parser's own recursion bound must refuse it, quickly and without a stack overflow.
fn deep_toml() -> BoxedStrategy<String> {
    prop_oneof![Just(100usize), Just(5000usize)]
        .prop_flat_map(|n| {
            prop_oneof![
                Just(format!("a = {}", "[".repeat(n))),
                Just(format!("a = {}1{}", "[".repeat(n), "]".repeat(n))),
                Just(format!("a = {}", "{ b = ".repeat(n))),
                Just(format!("{}b = 1", "a.".repeat(n))),
                Just(format!("[{}b]", "a.".repeat(n))),
                Just(format!(
                    "[[heavy.class]]\nname = \"x\"\npaths = {}",
                    "[".repeat(n)
                )),
            ]
        })
        .boxed()
}

/// `f()`, failing the case when it took [`CONF_TIME`] or more.
fn timed<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, TestCaseError> {
    let start = std::time::Instant::now();
    let out = f();
    let took = start.elapsed();
    prop_assert!(took < CONF_TIME, "{} took {:?}", what, took);
    Ok(out)
}

#[test]
fn fuzz_limit_config_toml() {
    let strategy = prop_oneof![
        6 => toml_case(limit_configs()),
        1 => text(TOML_LINES, TOML_VALUES),
        1 => deep_toml(),
    ];
    fuzz("--config TOML", 600, strategy, |t| {
        match timed("--config TOML", || Policy::from_toml(&t))? {
            Ok(p) => replay(vec![p])?,
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
        Ok(())
    });
}

#[test]
fn fuzz_classification_toml() {
    let valid: &'static [&'static str] = Box::leak(Box::new([
        fixture("logscope.toml"),
        "trust_proxy = [\"10.0.0.0/8\", \"2001:db8::/32\"]\n[prefix]\nv4 = 16\nv6 = 64\n[identity]\nsession_cookie = \"wiki_session\"\nanonymous_without_user = true\n[[agent]]\nname = \"Mon\"\nregex = \"curl\"\ndevice = \"tool\"\nkind = \"monitor\"\n",
    ]));
    let strategy = prop_oneof![
        6 => toml_case(valid),
        1 => text(TOML_LINES, TOML_VALUES),
        1 => deep_toml(),
    ];
    fuzz("classification TOML", 500, strategy, |t| {
        let cfg = match timed("classification TOML", || Config::from_toml(&t))? {
            Ok(c) => c,
            Err(e) => {
                prop_assert!(!e.to_string().is_empty());
                return Ok(());
            }
        };
        let mut cls = match cfg.classifier(&Overrides::default()) {
            Ok(c) => c,
            Err(e) => {
                prop_assert!(!e.to_string().is_empty());
                return Ok(());
            }
        };
        let b = batch();
        let mut filter = Filter::default();
        for i in 0..b.len() {
            let rc = cls.classify(b, i);
            let _ = filter.matches(b, i, &rc, &cls);
        }
        let _ = cls.prefix_name();
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------
// Report filters: --status, --host, --agent, --client, and the filter built from them

const STATUS_TOKENS: &[&str] = &[
    "5xx", "4XX", "0xx", "9xx", "10xx", "xx", "429", "200-299", "299-200", "0-65535", "65535",
    "65536", "1-", "-1", "- ", "none", "NONE", "2xx,3xx", "500-504", "x",
];

#[test]
fn fuzz_status_sets() {
    let valid: &[&str] = &[
        "5xx",
        "429",
        "200-299",
        "2xx,3xx,404,500-504",
        "none",
        "0-65535",
    ];
    fuzz(
        "--status / --success",
        1500,
        text(STATUS_TOKENS, valid),
        |s| {
            if let Ok(set) = StatusSet::parse(&s) {
                prop_assert!(!set.to_string().is_empty() || s.trim().is_empty());
                for code in [0u16, 100, 200, 429, 599, 999, 65535] {
                    let _ = set.contains(code);
                }
            }
            match StatusSet::parse_or_none(&s) {
                Ok(set) => {
                    // The report filter and availability share one StatusSet: its
                    // canonical text reads back.
                    let canon = set.to_string();
                    let back = StatusSet::parse_or_none(&canon);
                    prop_assert_eq!(back.as_ref(), Ok(&set), "{:?} prints as {:?}", s, canon);
                    for code in [0u16, 200, 65535] {
                        let _ = set.contains(code);
                    }
                }
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
            Ok(())
        },
    );
}

const HOST_TOKENS: &[&str] = &[
    "example.org",
    "*.example.org",
    "*.",
    "*",
    ":8080",
    ":",
    "[::1]",
    "[::1]:80",
    "[",
    "]",
    "WIKI.Example",
    "xn--bcher-kva.example",
    "bücher.example",
    ".",
    "..",
];

const AGENT_TOKENS: &[&str] = &[
    "ios",
    "android",
    "mobile",
    "desktop",
    "browser",
    "browsers",
    "tool",
    "bot",
    "bots",
    "crawler",
    "crawlers",
    "declared",
    "ai",
    "search",
    "seo",
    "social",
    "monitor",
    "scanner",
    "unknown",
    "other",
    "GPTBot",
    "curl",
    "Chrome",
    "Safari",
    "Googlebot",
];

const CIDR_TOKENS: &[&str] = &[
    "10.0.0.0/8",
    "10.1.2.3",
    "10.1.2.3/32",
    "10.1.2.3/33",
    "/0",
    "/",
    "::/0",
    "::1",
    "2001:db8::/32",
    "2001:db8::/129",
    "fe80::1%eth0",
    "::ffff:1.2.3.4/96",
    "1.2.3",
    "256.0.0.1",
    "0.0.0.0/0",
    "[::1]",
    "1.2.3.4:80",
];

#[test]
fn fuzz_report_filters() {
    let strategy = (
        text(STATUS_TOKENS, &["5xx", "200-299,429"]),
        text(HOST_TOKENS, &["*.example.org", "wiki.example:443"]),
        text(AGENT_TOKENS, &["mobile,ai", "GPTBot,curl"]),
        text(CIDR_TOKENS, &["10.0.0.0/8", "2001:db8::/32"]),
    );
    fuzz(
        "--status --host --agent --client",
        1000,
        strategy,
        |(st, host, agent, cidr)| {
            let mut filter = Filter::default();
            match StatusSet::parse(&st) {
                Ok(s) => filter.status = Some(s),
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
            let h = HostPattern::parse(&host);
            for probe in [
                None,
                Some(""),
                Some("example.org"),
                Some("a.example.org:80"),
                Some("[::1]:80"),
                Some("é."),
            ] {
                let _ = h.matches(probe);
            }
            let _ = h.to_string();
            filter.host = Some(h);
            match AgentSelector::parse(&agent) {
                Ok(a) => {
                    let mut ac = AgentClassifier::new(Vec::new());
                    for ua in [
                        "curl/8",
                        "GPTBot/1.0",
                        "Mozilla/5.0 (iPhone)",
                        "",
                        "\u{1b}[31m",
                    ] {
                        let _ = a.matches(&ac.classify(ua));
                    }
                    filter.agent = Some(a);
                }
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
            match parse_cidr(&cidr) {
                Ok(n) => filter.clients.push(n),
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
            let _ = Device::parse(&agent);
            let _ = BotKind::parse(&agent);
            let mut cls = Config::default().classifier(&Overrides::default()).unwrap();
            let b = batch();
            for i in 0..b.len() {
                let rc = cls.classify(b, i);
                let _ = filter.matches(b, i, &rc, &cls);
            }
            prop_assert!(!filter.describe().is_empty() || filter.selects_whole_period());
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------------------
// Durations, capacities, grades

#[test]
fn fuzz_durations_and_capacities() {
    let tokens: &[&str] = &[
        "10m", "1h", "1d", "30s", "2w", "500ms", "sec", "min", "hour", "day", "week", "1h30m",
        "1.5h", "90s", "1610/10m", "100/1h", "/", "0s", "0.0001ms",
    ];
    let valid: &[&str] = &["10m", "1h30m", "1610/10m", "1.5h", "500ms"];
    fuzz(
        "--by --capacity --expect-every …",
        2000,
        text(tokens, valid),
        |s| {
            for res in [Resolution::Millis, Resolution::Seconds] {
                match Duration::parse(&s, res) {
                    Ok(d) => {
                        prop_assert!(d.ms() > 0 && d.ms() <= duration::MAX_MS);
                        prop_assert!(res == Resolution::Millis || d.ms() % 1000 == 0);
                        let canon = d.to_string();
                        prop_assert_eq!(
                            Duration::parse(&canon, res),
                            Ok(d),
                            "{:?} prints as {}",
                            s,
                            canon
                        );
                        let label = forensics::duration_label(d.ms_i64());
                        prop_assert_eq!(Duration::parse(&label, Resolution::Millis), Ok(d));
                        let exact = availability::spec::format_duration_exact(d.ms_i64());
                        prop_assert_eq!(Duration::parse(&exact, Resolution::Millis), Ok(d));
                        let _ = availability::format_duration(d.ms_i64());
                        let _ = availability::spec::format_interval(d.ms_i64());
                    }
                    Err(e) => prop_assert!(e.to_string().contains("e.g.")),
                }
            }
            if let Some((_, period)) = s.split_once('/') {
                let _ = Duration::parse_period(period, Resolution::Millis);
            }
            Ok(())
        },
    );
}

#[test]
fn fuzz_grades() {
    let tokens: &[&str] = &[
        "99.9", "99", "95", "100", "0", "%", ",", "101", "-0", "1e2", "nan",
    ];
    fuzz(
        "--grades",
        1000,
        text(tokens, &["99.9,99,95", "100%,50%,0%"]),
        |s| {
            if let Ok(g) = availability::Grades::parse(&s) {
                prop_assert!(g.green >= g.yellow && g.yellow >= g.orange && g.orange >= 0.0);
                for p in [None, Some(0.0), Some(100.0), Some(f64::NAN)] {
                    let _ = g.grade(p);
                }
            }
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------------------
// --asn-db (ip2asn TSV)

#[test]
fn fuzz_asn_db() {
    let tokens: &[&str] = &[
        "1.0.0.0",
        "1.0.0.255",
        "\t",
        "13335",
        "0",
        "US",
        "CLOUDFLARENET",
        "\n",
        "::",
        "2001:db8::",
        "2001:db8::ffff",
        "4294967295",
        "16777216",
        "# c",
        "\r\n",
        "-1",
        "4294967296",
    ];
    let valid: &[&str] = &[
        "1.0.0.0\t1.0.0.255\t13335\tUS\tCLOUDFLARENET\n1.0.1.0\t1.0.3.255\t0\tNone\tNot routed\n2001:db8::\t2001:db8::ffff\t64496\tZZ\tDOC\n",
        "16777216\t16777471\t13335\tUS\tCLOUDFLARENET\n",
    ];
    fuzz("--asn-db TSV", 1000, text(tokens, valid), |s| {
        match AsnDb::parse(&s) {
            Ok(db) => {
                for ip in [
                    "1.0.0.1",
                    "1.0.2.0",
                    "2001:db8::1",
                    "::ffff:1.0.0.1",
                    "255.255.255.255",
                    "::",
                ] {
                    let _ = db.lookup(ip.parse().unwrap());
                }
                let _ = db.len();
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------
// Server configurations: nginx.conf, Caddyfile, haproxy.cfg and fail2ban jails, read
// from files in a temporary directory (each with a second mutated file it may include,
// import or take as its filter). Each case must end within CONF_TIME: nesting,
// includes, imports, interpolations and substitutions are bounded (conf_file), so even
// the bombs the mutations make (a block opened 5000 times, an include of itself twice,
// `t = <t><t>`) are refused at once.

/// The most one configuration case may take (a debug build on a shared machine; a bomb
/// ran for minutes before the bounds).
const CONF_TIME: std::time::Duration = std::time::Duration::from_secs(5);

#[derive(Clone, Debug)]
enum ConfOp {
    Drop(Index),
    Dup(Index),
    Swap(Index, Index),
    Insert(Index, &'static str),
    /// Opens this many blocks (`x {` lines) here.
    Nest(Index, usize),
    /// This line this many times more (an include or import fanning out).
    Repeat(Index, usize),
    Bytes(Vec<Mut>),
}

/// A configuration: a valid example edited line by line (`lines` inserted, blocks
/// opened, lines repeated) and at the byte level, or a soup of `lines`.
fn conf_case(
    valid: &'static [&'static str],
    lines: &'static [&'static str],
) -> BoxedStrategy<String> {
    let op = prop_oneof![
        2 => any::<Index>().prop_map(ConfOp::Drop),
        1 => any::<Index>().prop_map(ConfOp::Dup),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| ConfOp::Swap(a, b)),
        4 => (any::<Index>(), proptest::sample::select(lines)).prop_map(|(i, v)| ConfOp::Insert(i, v)),
        1 => (any::<Index>(), prop_oneof![1usize..40, Just(200usize), Just(5000usize)]).prop_map(|(i, n)| ConfOp::Nest(i, n)),
        1 => (any::<Index>(), prop_oneof![1usize..10, Just(64usize)]).prop_map(|(i, n)| ConfOp::Repeat(i, n)),
        1 => proptest::collection::vec(mutation(), 1..3).prop_map(ConfOp::Bytes),
    ];
    let edited = (
        proptest::sample::select(valid),
        proptest::collection::vec(op, 0..8),
    )
        .prop_map(|(text, ops)| {
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            for op in &ops {
                let n = lines.len().max(1);
                match op {
                    ConfOp::Drop(i) if !lines.is_empty() => {
                        lines.remove(i.index(n));
                    }
                    ConfOp::Dup(i) if !lines.is_empty() => {
                        let l = lines[i.index(n)].clone();
                        lines.insert(i.index(n), l);
                    }
                    ConfOp::Swap(a, b) if !lines.is_empty() => lines.swap(a.index(n), b.index(n)),
                    ConfOp::Insert(i, v) => lines.insert(i.index(lines.len() + 1), v.to_string()),
                    ConfOp::Nest(i, k) => {
                        let at = i.index(lines.len() + 1);
                        lines.splice(at..at, std::iter::repeat_n("x {".to_string(), *k));
                    }
                    ConfOp::Repeat(i, k) if !lines.is_empty() => {
                        let at = i.index(n);
                        let l = lines[at].clone();
                        lines.splice(at..at, std::iter::repeat_n(l, *k));
                    }
                    ConfOp::Bytes(muts) => {
                        let mut b = lines.join("\n").into_bytes();
                        for m in muts {
                            apply(&mut b, m);
                        }
                        lines = String::from_utf8_lossy(&b)
                            .lines()
                            .map(str::to_string)
                            .collect();
                    }
                    _ => {}
                }
            }
            lines.join("\n") + "\n"
        });
    let soup = proptest::collection::vec(proptest::sample::select(lines), 0..24)
        .prop_map(|v| v.join("\n") + "\n");
    prop_oneof![6 => edited, 1 => soup, 1 => text(lines, valid)].boxed()
}

/// Writes `files` (name, text) into a fresh directory and times `read` on it: the
/// answer, or a failure when it took CONF_TIME or more.
fn read_conf<T>(
    what: &str,
    files: &[(&str, &str)],
    read: impl FnOnce(&std::path::Path) -> T,
) -> Result<T, TestCaseError> {
    let dir = tempfile::tempdir().expect("temporary directory");
    for (name, text) in files {
        let p = dir.path().join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("directory");
        }
        std::fs::write(p, text).expect("written");
    }
    let start = std::time::Instant::now();
    let out = read(dir.path());
    let took = start.elapsed();
    prop_assert!(took < CONF_TIME, "{} took {:?}", what, took);
    Ok(out)
}

const NGINX_LINES: &[&str] = &[
    "http {",
    "}",
    "server {",
    "location / {",
    "location ~ ^/a {",
    "location ~* \\.php$ {",
    "location = /x {",
    "location ^~ /s {",
    "location @named {",
    "limit_req_zone $binary_remote_addr zone=a:10m rate=5r/s;",
    "limit_req_zone $m zone=b:1m rate=1r/m;",
    "limit_req_zone $g zone=c:1m rate=30r/m;",
    "limit_req zone=a burst=5 nodelay;",
    "limit_req zone=b;",
    "limit_req zone=c delay=2;",
    "limit_req_status 429;",
    "limit_req_dry_run on;",
    "map $http_user_agent $m { default $binary_remote_addr; ~*bot \"\"; Mozilla 1; }",
    "map $uri $m { /a $m; /b $m; default $m; }",
    "map $uri $m2 { /a $m; /b $m; /c $m; default $m; }",
    "map $remote_addr $m { \"~^(?<n>\\d+\\.\\d+\\.\\d+)\\.\\d+$\" $n; default \"\"; }",
    "geo $g { default 1; 10.0.0.0/8 0; 10.1.0.0/16 $m; }",
    "geo $remote_addr $g { ranges; 10.0.0.1-10.0.0.9 1; }",
    "include inc.conf;",
    "include inc.conf; include inc.conf;",
    "include *.conf;",
    "include /dev/zero;",
    "include missing/*.conf;",
    "server_name a.example b.example;",
    "listen 80 default_server;",
    "return 403;",
    "if ($x) {",
    "rewrite ^ /x;",
    "\"",
    "'",
    "# comment {",
    "${",
    "\\",
    ";",
    "{",
    "}",
];

fn nginx_confs() -> &'static [&'static str] {
    static C: OnceLock<Vec<&'static str>> = OnceLock::new();
    C.get_or_init(|| {
        vec![
            fixture("limits/nginx-conf/flash_aligned.conf"),
            fixture("oracles/nginx-limit-req/flash/nginx.conf"),
            "http {\n  map $http_user_agent $k { default $binary_remote_addr; ~*bot \"\"; }\n  geo $g { default 1; 10.0.0.0/8 0; }\n  limit_req_zone $k zone=perip:10m rate=5r/s;\n  limit_req_zone $server_name zone=site:1m rate=100r/s;\n  include inc.conf;\n  server {\n    listen 80 default_server;\n    location / { limit_req zone=perip burst=10 nodelay; }\n    location ^~ /api/ {\n      limit_req zone=site;\n      location ~ \\.json$ { limit_req zone=perip; }\n    }\n    location = /health { return 200; }\n  }\n}\n",
            "include inc.conf;\ninclude inc.conf;\n",
        ]
    })
}

#[test]
fn fuzz_nginx_conf() {
    let strategy = (
        conf_case(nginx_confs(), NGINX_LINES),
        conf_case(nginx_confs(), NGINX_LINES),
    );
    fuzz("--nginx-conf", 300, strategy, |(main, inc)| {
        let got = read_conf(
            "nginx.conf",
            &[("nginx.conf", &main), ("inc.conf", &inc)],
            |d| logscope_core::replay::conf::NginxConf::read(&d.join("nginx.conf")),
        )?;
        match got {
            Ok(c) => replay(vec![c.policy])?,
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
        Ok(())
    });
}

const CADDY_LINES: &[&str] = &[
    "example.com {",
    "}",
    "{",
    "(snip) {",
    "import snip",
    "import snip a b",
    "import snip {args[0]}{args[0]}",
    "import inc.caddy",
    "import *.caddy",
    "rate_limit {",
    "zone z {",
    "zone {args[0]} {",
    "key {remote_host}",
    "key {client_ip}",
    "key {http.request.header.User-Agent}",
    "key static",
    "events 10",
    "events 0",
    "window 1m",
    "window 0s",
    "ipv4_prefix 24",
    "match {",
    "path /api/* /w/*",
    "method POST",
    "not path /x",
    "header User-Agent *bot*",
    "@bot header User-Agent *bot*",
    "@m {",
    "expression {path} == '/x'",
    "remote_ip 10.0.0.0/8 private_ranges",
    "handle /x {",
    "handle_path /y/* {",
    "route {",
    "respond 403",
    "rewrite * /new",
    "uri strip_prefix /a",
    "order rate_limit before basic_auth",
    "{$HOME:x}",
    "`",
    "\"",
    "<<EOF",
    "# comment",
];

fn caddy_confs() -> &'static [&'static str] {
    static C: OnceLock<Vec<&'static str>> = OnceLock::new();
    C.get_or_init(|| {
        vec![
            fixture("limits/caddy/femiwiki-caddy.Caddyfile"),
            "{\n\torder rate_limit before basic_auth\n}\n(limits) {\n\trate_limit {\n\t\tzone {args[0]} {\n\t\t\tmatch {\n\t\t\t\tpath /api/*\n\t\t\t}\n\t\t\tkey {remote_host}\n\t\t\tevents 10\n\t\t\twindow 1m\n\t\t}\n\t}\n}\nexample.com {\n\timport limits api\n\timport inc.caddy\n\t@bot header User-Agent *bot*\n\trespond @bot 403\n\trewrite /old /api/x\n}\n",
            "(s) {\n\timport inc.caddy\n\timport inc.caddy\n}\nexample.com {\n\timport s\n\timport s\n}\n",
        ]
    })
}

#[test]
fn fuzz_caddyfile() {
    let strategy = (
        conf_case(caddy_confs(), CADDY_LINES),
        conf_case(caddy_confs(), CADDY_LINES),
    );
    fuzz("--caddyfile", 300, strategy, |(main, inc)| {
        let env = |_: &str| None;
        let got = read_conf(
            "Caddyfile",
            &[("Caddyfile", &main), ("inc.caddy", &inc)],
            |d| logscope_core::replay::conf::CaddyConf::read(&d.join("Caddyfile"), &env),
        )?;
        match got {
            Ok(c) => replay(vec![c.policy])?,
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
        Ok(())
    });
}

const HAPROXY_LINES: &[&str] = &[
    "global",
    "defaults",
    "frontend fe",
    "frontend fe2",
    "backend be",
    "listen li",
    "stick-table type ip size 100k expire 30s store http_req_rate(10s),gpc0",
    "stick-table type string len 16 size 1k store http_req_cnt",
    "stick-table type ipv6 size 0 expire 0 store http_req_rate(0)",
    "http-request track-sc0 src",
    "http-request track-sc1 src table be",
    "http-request track-sc2 src,ipmask(24,64) table be",
    "http-request track-sc0 req.hdr(user-agent) if { path_beg /api }",
    "http-request deny deny_status 429 if { sc_http_req_rate(0) gt 10 }",
    "http-request deny if { sc0_get_gpc0 ge 1 } || bot",
    "http-request sc-inc-gpc0(0) if { sc_http_req_rate(0) gt 5 }",
    "acl bot hdr_sub(user-agent) -i bot",
    "acl api path_reg ^/api/",
    "http-request deny if bot !{ src 10.0.0.0/8 }",
    "http-request return status 200 if { path /health }",
    "http-request allow if { method GET }",
    "http-request tarpit",
    "http-request set-var(txn.x) str(y)",
    "bind :80",
    "\"",
    "'",
    "# comment",
    "\\",
    "{ }",
];

fn haproxy_confs() -> &'static [&'static str] {
    static C: OnceLock<Vec<&'static str>> = OnceLock::new();
    C.get_or_init(|| {
        vec![
            fixture("oracles/haproxy-stick/flash/haproxy.cfg"),
            "frontend fe\n    bind :80\n    acl bot hdr_sub(user-agent) -i bot\n    http-request track-sc0 src table st\n    http-request deny deny_status 429 if { sc_http_req_rate(0) gt 10 } || bot\nbackend st\n    stick-table type ip size 100k expire 30s store http_req_rate(10s)\n",
        ]
    })
}

#[test]
fn fuzz_haproxy_cfg() {
    fuzz(
        "--haproxy-cfg",
        300,
        conf_case(haproxy_confs(), HAPROXY_LINES),
        |cfg| {
            let got = read_conf("haproxy.cfg", &[("haproxy.cfg", &cfg)], |d| {
                logscope_core::replay::conf::haproxy_cfg::read_file(&d.join("haproxy.cfg"))
            })?;
            match got {
                Ok(c) => {
                    for u in &c.unsupported {
                        prop_assert!(!u.to_string().is_empty());
                    }
                    replay(vec![c.policy])?
                }
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
            Ok(())
        },
    );
}

const JAIL_LINES: &[&str] = &[
    "[DEFAULT]",
    "[sshd]",
    "[web]",
    "[INCLUDES]",
    "[Definition]",
    "[Init]",
    "before = inc.conf",
    "after = inc.conf inc.conf inc.conf",
    "before = filter.d/f.conf",
    "enabled = true",
    "enabled = false",
    "filter = f",
    "filter = f[mode=aggressive, port=\"80,443\"]",
    "filter = nginx-botsearch",
    "filter = %(__name__)s",
    "failregex = ^<HOST> .*\"GET /x",
    "failregex = ^<ADDR> - <F-USER>\\S+</F-USER>",
    "failregex = <t>",
    "failregex = %(b)s",
    "failregex = (?P<x>a)(?P=x)",
    "ignoreregex = bot",
    "maxretry = 0",
    "maxretry = 3",
    "findtime = 10m",
    "findtime = 1year-6mo",
    "bantime = -1",
    "bantime.increment = true",
    "bantime.factor = 2",
    "bantime.multipliers = 1 2 4",
    "bantime.maxtime = 1d",
    "ignoreip = 10.0.0.0/8 host.example",
    "a = %(a)s%(a)s",
    "b = %(a)s%(a)s%(a)s",
    "t = <t><t>",
    "u = <HOST><t>",
    "  continuation",
    "x: y",
    "; comment",
    "<SKIPLINES>",
];

fn jail_confs() -> &'static [&'static str] {
    static C: OnceLock<Vec<&'static str>> = OnceLock::new();
    C.get_or_init(|| {
        vec![
            fixture("limits/fail2ban/jail.local"),
            fixture("limits/fail2ban/filter.d/nginx-botsearch.conf"),
            fixture("limits/fail2ban/filter.d/apache-badbots.conf"),
            "[INCLUDES]\nbefore = inc.conf\n[DEFAULT]\nbantime = 1h\n[web]\nenabled = true\nfilter = f[mode=aggressive]\nmaxretry = 2\nfindtime = 1m\nignoreip = 10.0.0.0/8\n",
            "[INCLUDES]\nafter = inc.conf inc.conf\n[Definition]\nblock = \\S*(?:php|admin)\\S*\nfailregex = ^<HOST> \\S+ \\S+ \\[\\] \"GET /<block>\n%(known/failregex)s\n[Init]\nmaxlines = 1\n",
        ]
    })
}

#[test]
fn fuzz_fail2ban_jail() {
    let filters = [
        "apache-badbots.conf",
        "botsearch-common.conf",
        "nginx-botsearch.conf",
        "nginx-error-common.conf",
        "nginx-limit-req.conf",
    ]
    .map(|f| {
        (
            format!("filter.d/{f}"),
            fixture(&format!("limits/fail2ban/filter.d/{f}")),
        )
    });
    let strategy = (
        conf_case(jail_confs(), JAIL_LINES),
        conf_case(jail_confs(), JAIL_LINES),
    );
    fuzz("--fail2ban-jail", 200, strategy, |(jail, other)| {
        let mut files: Vec<(&str, &str)> = vec![
            ("jail.local", &jail),
            ("inc.conf", &other),
            ("filter.d/f.conf", &other),
        ];
        files.extend(filters.iter().map(|(n, t)| (n.as_str(), *t)));
        let got = read_conf("jail.local", &files, |d| {
            logscope_core::replay::conf::fail2ban::read_file(&d.join("jail.local"))
        })?;
        match got {
            Ok(j) => {
                for n in &j.notes {
                    prop_assert!(!n.message.is_empty());
                }
                if !j.policies.is_empty() {
                    replay(j.policies)?;
                }
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
        Ok(())
    });
}
