//! Replay engine throughput: requests per second through simple candidates (site-wide
//! sliding log and token bucket), keyed ones, the nginx oracle policy, and several
//! candidates in one pass. Run: `cargo bench -p logscope-core --bench replay`.

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

criterion_group!(benches, bench);
criterion_main!(benches);
