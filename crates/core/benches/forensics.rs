//! Forensic report throughput: classification plus each report's accumulator over
//! synthetic batches (1 M rows: 50,000 addresses in 5,000 /24s, 400 distinct agents —
//! each address mostly keeps one, one request in eight rotates — a third heavy).
//! Run: `cargo bench -p logscope-core --bench forensics`.

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use logscope_core::batch::Batch;
use logscope_core::classify::{Classifier, Filter, Identity};
use logscope_core::forensics::agents::AgentsAcc;
use logscope_core::forensics::concentration::{ConcentrationAcc, GroupBy};
use logscope_core::forensics::heavy::HeavyAcc;
use logscope_core::rate::Rate;
use logscope_core::record::Record;

const N: usize = 1_000_000;
const BATCH: usize = 16_384;

fn batches() -> Vec<Batch> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let agents: Vec<String> = (0..400)
        .map(|i| match i % 4 {
            0 => format!("Mozilla/5.0 (iPhone; CPU iPhone OS 17_{i} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.{i} Mobile/15E148 Safari/604.1"),
            1 => format!("Mozilla/5.0 (Linux; Android 14; SM-S91{i}N) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.{i}.0 Mobile Safari/537.36"),
            2 => format!("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/12{i}.0.0.0 Safari/537.36"),
            _ => format!("Mozilla/5.0 (compatible; Bot{i}/1.0; +https://example.org/bot)"),
        })
        .collect();
    let mut out = Vec::new();
    let mut b = Batch::default();
    let mut t = 1_790_000_000_000i64;
    for n in 0..N {
        let r = next();
        t += (r % 7) as i64;
        let addr = (r >> 8) % 50_000;
        // 50,000 addresses: 5,000 /24s (a.b.c) with 10 hosts each.
        let net = addr / 10;
        let ip = Ipv4Addr::new(
            20 + (net / 250 % 200) as u8,
            (net % 250) as u8,
            (net / 50_000) as u8,
            1 + (addr % 10) as u8,
        );
        let ip_s = ip.to_string();
        let q = match (r >> 24) % 6 {
            0 => "title=Special:Search&search=foo",
            1 => "title=Page&diff=123&oldid=122",
            _ => "title=Page",
        };
        // Each address mostly keeps its agent; one request in eight rotates at random.
        let ua = if (r >> 48) % 8 == 0 {
            &agents[((r >> 32) % 400) as usize]
        } else {
            &agents[(addr % 400) as usize]
        };
        let rec = Record {
            ts_ms: t,
            client: ip_s.as_bytes(),
            ip: Some(IpAddr::V4(ip)),
            method: Some(b"GET"),
            path: Some(b"/index.php"),
            query: Some(q.as_bytes()),
            user_agent: Some(ua.as_bytes()),
            has_cookie: Some(r % 10 == 0),
            status: 200,
            ..Record::default()
        };
        b.push(&rec, n as u64 + 1);
        if b.len() == BATCH {
            out.push(std::mem::take(&mut b));
        }
    }
    out.push(b);
    out
}

fn bench(c: &mut Criterion) {
    let data = batches();
    let mut g = c.benchmark_group("forensics");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10);
    g.bench_function("classify", |bch| {
        bch.iter(|| {
            let mut cls = Classifier::default();
            let mut heavy = 0u64;
            for b in &data {
                for i in 0..b.len() {
                    heavy += u64::from(cls.classify(b, i).heavy.is_heavy());
                }
            }
            black_box(heavy)
        })
    });
    g.bench_function("heavy_1h_anonymous_capacity", |bch| {
        bch.iter(|| {
            let mut cls = Classifier::default();
            let mut f = Filter::with_period(None, None);
            f.identity = Some(Identity::Anonymous);
            let mut acc = HeavyAcc::new(3_600_000, Some(Rate::new(1610, 600_000).unwrap()));
            for b in &data {
                for i in 0..b.len() {
                    let rc = cls.classify(b, i);
                    if f.matches(b, i, &rc, &cls) {
                        acc.add(b.ts_ms[i], b.ts_ms[i], &rc);
                    }
                }
            }
            black_box(acc.finish(&cls, "UTC", "", "").heavy)
        })
    });
    g.bench_function("concentration_prefix_limit", |bch| {
        bch.iter(|| {
            let mut cls = Classifier::default();
            let mut acc =
                ConcentrationAcc::new(GroupBy::Prefix, Some(Rate::new(100, 3_600_000).unwrap()));
            for b in &data {
                for i in 0..b.len() {
                    let rc = cls.classify(b, i);
                    acc.add(b.ts_ms[i], &rc);
                }
            }
            black_box(acc.finish(&cls, None, 20, "", "").groups)
        })
    });
    g.bench_function("agents_heavy_sample", |bch| {
        bch.iter(|| {
            let mut cls = Classifier::default();
            let mut acc = AgentsAcc::new(500, 1);
            for b in &data {
                for i in 0..b.len() {
                    let rc = cls.classify(b, i);
                    acc.add_period(&rc);
                    if rc.heavy.is_heavy() {
                        acc.add_selected(&rc, b.ts_ms[i], b.line_no(i), b.user_agent.get(i), &cls);
                    }
                }
            }
            black_box(acc.finish(&cls, 10, "", "").selected)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
