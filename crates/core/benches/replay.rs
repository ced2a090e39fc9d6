//! Replay engine throughput: requests per second through simple candidates (site-wide
//! sliding log and token bucket), keyed ones, the nginx oracle policy, and several
//! candidates in one pass; and the `logscope replay` pass with its report (rows from a
//! sorted `RowStore` through the engine into the report accumulator), with every row in
//! memory and merged back from sorted runs spilled to disk.
//! Run: `cargo bench -p logscope-core --bench replay`.

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use logscope_core::replay::{Policy, Replay, Request};

const N: usize = 1_000_000;

struct Owned {
    t: i64,
    ip: IpAddr,
    path: &'static [u8],
}

/// A day-like stream: ~200 req/s on average with bursts, 20,000 addresses (a few hot).
fn traffic() -> Vec<Owned> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let paths: [&'static [u8]; 4] = [b"/ip/x", b"/global/x", b"/dual/x", b"/static/x"];
    let mut t = 1_790_000_000_000i64;
    (0..N)
        .map(|_| {
            let r = next();
            t += (r % 10) as i64; // 0–9 ms apart
            let addr = if r % 7 == 0 {
                (r >> 20) % 20
            } else {
                (r >> 20) % 20_000
            };
            Owned {
                t,
                ip: IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + addr as u32)),
                path: paths[(r >> 40) as usize % 4],
            }
        })
        .collect()
}

fn run(c: &mut Criterion, name: &str, reqs: &[Owned], make: &dyn Fn() -> Vec<Policy>) {
    let mut g = c.benchmark_group("replay");
    g.throughput(Throughput::Elements(reqs.len() as u64));
    g.sample_size(10);
    g.bench_function(name, |b| {
        b.iter(|| {
            let mut replay = Replay::new(make());
            let mut refused = 0u64;
            for (i, o) in reqs.iter().enumerate() {
                let req = Request {
                    index: i as u64,
                    arrival_ms: o.t,
                    ip: Some(o.ip),
                    path: Some(o.path),
                    ..Default::default()
                };
                for v in replay.decide(&req) {
                    refused += u64::from(v.decision == logscope_core::replay::Decision::Refuse);
                }
            }
            black_box(refused)
        })
    });
    g.finish();
}

fn specs(list: &'static [&'static str]) -> impl Fn() -> Vec<Policy> {
    move || list.iter().map(|s| Policy::from_spec(s).unwrap()).collect()
}

fn bench(c: &mut Criterion) {
    let reqs = traffic();
    run(c, "site sliding-log 1600/10m", &reqs, &specs(&["1600/10m"]));
    run(
        c,
        "site token-bucket",
        &reqs,
        &specs(&["100/s,algo=token-bucket,burst=200"]),
    );
    run(
        c,
        "per-ip token-bucket",
        &reqs,
        &specs(&["1/s,algo=token-bucket,burst=15,key=ip"]),
    );
    run(
        c,
        "per-/24 nginx",
        &reqs,
        &specs(&["5r/s,algo=nginx,burst=10,nodelay,key=prefix"]),
    );
    run(
        c,
        "4 candidates in one pass",
        &reqs,
        &specs(&[
            "1600/10m",
            "100/s,algo=token-bucket,burst=200",
            "1/s,algo=token-bucket,burst=15,key=ip",
            "300/m,algo=fixed-window,key=prefix",
        ]),
    );
    let oracle = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/limits/nginx-oracle.toml"
    );
    run(c, "nginx-oracle policy (8 zones)", &reqs, &|| {
        vec![Policy::from_toml_file(oracle).unwrap()]
    });
}

/// The report pass: the same traffic as classified rows in a `RowStore`, replayed and
/// summarised (what `logscope replay` does after reading the rows).
fn bench_report(c: &mut Criterion) {
    use logscope_core::batch::Batch;
    use logscope_core::classify::{Classifier, Identity};
    use logscope_core::record::{Precision, Record};
    use logscope_core::replay::report::{
        Needs, ReportAcc, ReportContext, ReportOptions, RowInput, RowStore, SpillOptions, Who, run,
    };

    let reqs = traffic();
    let mut cls = Classifier::default();
    let fill = |store: &mut RowStore, cls: &mut Classifier, order: &[usize]| {
        let file = store.file_id("bench.log");
        for chunk in order.chunks(64 * 1024) {
            let mut b = Batch::default();
            let texts: Vec<String> = chunk.iter().map(|&k| reqs[k].ip.to_string()).collect();
            for (i, o) in chunk.iter().map(|&k| &reqs[k]).enumerate() {
                let r = Record {
                    ts_ms: o.t,
                    precision: Precision::Milli,
                    client: texts[i].as_bytes(),
                    ip: Some(o.ip),
                    path: Some(o.path),
                    status: 200,
                    request_time_us: Some(0),
                    ..Record::default()
                };
                b.push(&r, i as u64 + 1);
            }
            for i in 0..b.len() {
                let rc = cls.classify(&b, i);
                let who = Who::of(false, Identity::Unknown, cls.agents.info(rc.agent));
                store.push(
                    file,
                    &RowInput {
                        batch: &b,
                        i,
                        class: &rc,
                        who,
                        logged_refusal: false,
                    },
                );
            }
        }
        store.sort().unwrap();
    };
    let mut store = RowStore::new(Needs::default());
    let in_order: Vec<usize> = (0..N).collect();
    fill(&mut store, &mut cls, &in_order);
    // The same rows as 8 sorted runs, 7 of them on disk, each spanning the whole day
    // (every 8th request: the merge's worst case).
    let mut spilled = RowStore::with_spill(
        Needs::default(),
        SpillOptions {
            run_rows: N / 8 + 1,
            ..SpillOptions::default()
        },
    );
    let interleaved: Vec<usize> = (0..8).flat_map(|r| (r..N).step_by(8)).collect();
    fill(&mut spilled, &mut cls, &interleaved);
    assert_eq!(spilled.spilled_runs(), 7);
    let mut g = c.benchmark_group("replay report");
    g.throughput(Throughput::Elements(reqs.len() as u64));
    g.sample_size(10);
    for (name, list, store) in [
        ("site sliding-log 1600/10m", &["1600/10m"][..], &store),
        (
            "per-ip token-bucket",
            &["1/s,algo=token-bucket,burst=15,key=ip"][..],
            &store,
        ),
        (
            "site sliding-log 1600/10m, 8 runs merged",
            &["1600/10m"][..],
            &spilled,
        ),
    ] {
        g.bench_function(name, |bn| {
            bn.iter(|| {
                let ps: Vec<Policy> = list.iter().map(|s| Policy::from_spec(s).unwrap()).collect();
                let opts = ReportOptions {
                    capacity: None,
                    bucket_ms: Some(600_000),
                    top: 5,
                    refusal_statuses: vec![429],
                    v4_len: 24,
                    v6_len: 48,
                    workers: None,
                };
                let mut acc = ReportAcc::new(&ps, opts);
                let mut replay = Replay::new(ps);
                run(store, &mut replay, &mut acc, &|t| t, None).unwrap();
                black_box(
                    acc.finish(&replay, store, &cls, ReportContext::default())
                        .unwrap(),
                )
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench, bench_report);
criterion_main!(benches);
