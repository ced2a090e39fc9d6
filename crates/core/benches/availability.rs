//! Availability computation speed: 10 M rows over 15 months (a probe every minute in a
//! stream of ordinary traffic, as three log files one after another; and the same rows
//! without a probe, where every dynamic request counts) through `Accumulator::push`,
//! `prepare` and `compute` over monthly periods. Run:
//! `cargo bench -p logscope-core --bench availability`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use logscope_core::availability::calendar::fixed_offset_periods;
use logscope_core::availability::{Accumulator, By, Config};
use logscope_core::time::days_from_civil;

const N: usize = 10_000_000;

/// `(ts, status, is_probe, is_dynamic)`: 15 months from 2025-06-01, ~3 requests a
/// second on average with bursts, a probe at every whole minute, 0.3 % 5xx, a
/// 91-hour hole in December; delivered as three "files" (each in time order).
fn rows() -> Vec<(i64, u16, bool, bool)> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let start = days_from_civil(2025, 6, 1) * 86_400_000;
    let end = days_from_civil(2026, 9, 1) * 86_400_000;
    let hole = days_from_civil(2025, 12, 20) * 86_400_000;
    let hole = hole..hole + 91 * 3_600_000;
    let step = (end - start) / N as i64; // mean gap
    let mut out = Vec::with_capacity(N + 700_000);
    let mut t = start;
    let mut next_probe = start;
    while t < end && out.len() < N {
        let r = next();
        t += (r % (2 * step as u64)) as i64;
        while next_probe <= t {
            if !hole.contains(&next_probe) {
                let st = if r % 997 == 0 { 503 } else { 200 };
                out.push((next_probe, st, true, true));
            }
            next_probe += 60_000;
        }
        if hole.contains(&t) {
            continue;
        }
        let status = match r >> 40 & 1023 {
            0..3 => 502,
            3..40 => 404,
            _ => 200,
        };
        out.push((t, status, false, r >> 20 & 3 != 0));
    }
    // Three files, one after another, each in time order: cut in thirds by time and
    // deliver the last third first.
    let third = out.len() / 3;
    out.rotate_left(2 * third);
    out
}

fn run(rows: &[(i64, u16, bool, bool)], probe: bool) -> usize {
    let cfg = Config::new(probe.then(|| "Special:BlankPage".to_string()));
    let mut acc = Accumulator::new(None, None);
    for &(t, st, p, d) in rows {
        acc.push(t, st, if probe { p } else { d });
    }
    let prep = acc.prepare(&cfg).expect("prepared");
    let (s, e) = prep.span().expect("rows");
    let periods = fixed_offset_periods(By::Month, 9 * 3600, s, e);
    let r = prep.compute(&periods, &cfg).expect("computes");
    r.periods.len() + r.incidents.len()
}

fn bench(c: &mut Criterion) {
    let rows = rows();
    let mut g = c.benchmark_group("availability");
    g.sample_size(10);
    g.throughput(Throughput::Elements(rows.len() as u64));
    g.bench_function("probe_15_months_10M_rows", |b| {
        b.iter(|| black_box(run(&rows, true)))
    });
    g.bench_function("dynamic_15_months_10M_rows", |b| {
        b.iter(|| black_box(run(&rows, false)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
