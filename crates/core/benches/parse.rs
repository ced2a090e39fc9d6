//! Parser throughput per format on generated lines (criterion, bytes/s).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use logscope_core::parse::{Format, ParseOptions};

const N: usize = 20_000;

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const UAS: &[&str] = &[
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "curl/8.4.0",
];
const PATHS: &[&str] = &[
    "/index.php?title=Special:Search&search=rate+limit&fulltext=1",
    "/wiki/Main_Page",
    "/index.php?title=Foo&oldid=123456&diff=prev",
    "/static/images/logo.png",
    "/api.php?action=query&format=json&list=recentchanges",
];

struct Line {
    ip: String,
    day: u64,
    h: u64,
    m: u64,
    s: u64,
    ms: u64,
    path: &'static str,
    status: u16,
    bytes: u64,
    rt_ms: u64,
    ua: &'static str,
    referer: &'static str,
}

fn gen_lines() -> Vec<Line> {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    (0..N)
        .map(|i| Line {
            ip: format!(
                "{}.{}.{}.{}",
                r.below(223) + 1,
                r.below(256),
                r.below(256),
                r.below(256)
            ),
            day: 10 + (i / 8000) as u64,
            h: (i / 400 % 24) as u64,
            m: r.below(60),
            s: r.below(60),
            ms: r.below(1000),
            path: PATHS[r.below(PATHS.len() as u64) as usize],
            status: [200, 200, 200, 304, 404, 429, 503][r.below(7) as usize],
            bytes: r.below(100_000),
            rt_ms: r.below(3000),
            ua: UAS[r.below(UAS.len() as u64) as usize],
            referer: if r.below(2) == 0 {
                "-"
            } else {
                "https://wiki.example.org/wiki/Main_Page"
            },
        })
        .collect()
}

fn clf_time(l: &Line) -> String {
    format!(
        "{:02}/Sep/2026:{:02}:{:02}:{:02} +0200",
        l.day, l.h, l.m, l.s
    )
}

fn render(format: &str, lines: &[Line]) -> Vec<u8> {
    let mut out = String::new();
    for l in lines {
        let t = clf_time(l);
        let req = format!("GET {} HTTP/1.1", l.path);
        let line = match format {
            "combined" => format!(
                r#"{} - - [{t}] "{req}" {} {} "{}" "{}""#,
                l.ip, l.status, l.bytes, l.referer, l.ua
            ),
            "common" => format!(r#"{} - - [{t}] "{req}" {} {}"#, l.ip, l.status, l.bytes),
            "nginx-msec" => format!(
                r#"{} {}.{:03} [{t}] "{req}" {} {} "{}" "{}" {}.{:03}"#,
                l.ip,
                1_790_000_000 + l.day * 86_400 + l.h * 3600 + l.m * 60 + l.s,
                l.ms,
                l.status,
                l.bytes,
                l.referer,
                l.ua,
                l.rt_ms / 1000,
                l.rt_ms % 1000
            ),
            "user-nginx" => format!(
                r#"{} - - [{t}] "{req}" {} {} "{}" "{}" "-" wiki.example.org {}.{:03}"#,
                l.ip,
                l.status,
                l.bytes,
                l.referer,
                l.ua,
                l.rt_ms / 1000,
                l.rt_ms % 1000
            ),
            "caddy-json" => format!(
                r#"{{"level":"info","ts":{}.{:03}1234,"logger":"http.log.access.log0","msg":"handled request","request":{{"remote_ip":"10.0.0.1","remote_port":"41234","client_ip":"{}","proto":"HTTP/2.0","method":"GET","host":"wiki.example.org","uri":"{}","headers":{{"Accept":["*/*"],"User-Agent":["{}"],"Referer":["{}"],"Accept-Encoding":["gzip, br"]}},"tls":{{"resumed":false,"version":772,"cipher_suite":4865,"proto":"h2","server_name":"wiki.example.org"}}}},"bytes_read":0,"user_id":"","duration":{}.{:06},"size":{},"status":{},"resp_headers":{{"Server":["Caddy"],"Content-Type":["text/html; charset=utf-8"]}}}}"#,
                1_790_000_000 + l.day * 86_400 + l.h * 3600 + l.m * 60 + l.s,
                l.ms,
                l.ip,
                l.path.replace('&', "\\u0026"),
                l.ua,
                l.referer,
                l.rt_ms / 1000,
                (l.rt_ms % 1000) * 1000 + 17,
                l.bytes,
                l.status
            ),
            _ => unreachable!(),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out.into_bytes()
}

fn bench(c: &mut Criterion) {
    let lines = gen_lines();
    let user = Format::nginx(
        r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" "$http_x_forwarded_for" $host $request_time"#,
    )
    .unwrap();
    let cases = [
        ("combined", Format::Combined),
        ("common", Format::Common),
        ("nginx-msec", Format::NginxMsec),
        ("caddy-json", Format::CaddyJson),
        ("user-nginx", user),
    ];
    let mut g = c.benchmark_group("parse");
    for (name, format) in cases {
        let data = render(name, &lines);
        let ls: Vec<&[u8]> = data
            .split(|c| *c == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        // Every generated line must parse, or the numbers mean nothing.
        let mut p = format.parser(&ParseOptions::default());
        for l in &ls {
            if let Err(e) = p.parse(l) {
                panic!("{name}: {e}: {}", String::from_utf8_lossy(l));
            }
        }
        g.throughput(Throughput::Bytes(data.len() as u64));
        g.bench_function(name, |b| {
            let mut p = format.parser(&ParseOptions::default());
            b.iter(|| {
                let mut acc = 0i64;
                for l in &ls {
                    if let Ok(r) = p.parse(black_box(l)) {
                        acc = acc.wrapping_add(r.ts_ms ^ r.status as i64);
                    }
                }
                black_box(acc)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
