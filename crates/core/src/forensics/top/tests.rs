//! Tests of `logscope top`: tallies, order, coded columns, distinct clients.

use super::part::below;
use super::*;
use crate::batch::{Batch, NULL_CODE, TextColumn};
use crate::classify::Classifier;
use crate::forensics::mix64;
use crate::record::Record;
use proptest::prelude::*;

fn batch(rows: &[(i64, &str, &str, u16, u64)]) -> Batch {
    let mut b = Batch::default();
    for (n, (t, ip, path, status, bytes)) in rows.iter().enumerate() {
        let r = Record {
            ts_ms: *t,
            client: ip.as_bytes(),
            ip: ip.parse().ok(),
            method: Some(b"GET"),
            path: Some(path.as_bytes()),
            status: *status,
            bytes: Some(*bytes),
            user_agent: Some(b"curl/8"),
            ..Record::default()
        };
        b.push(&r, n as u64 + 1);
    }
    b
}

fn run(b: &Batch, by: TopBy, sort: TopSort, limit: usize) -> TopReport {
    let mut cls = Classifier::default();
    let mut acc = TopAcc::new(by);
    acc.begin_batch(b);
    for i in 0..b.len() {
        let rc = cls.classify(b, i);
        acc.add(b, i, &rc);
    }
    TopReport::new(acc, &cls, sort, limit, &|t| t, "UTC", "all", "test")
}

#[test]
fn per_value_tallies_and_order() {
    let b = batch(&[
        (1000, "1.1.1.1", "/a", 200, 10),
        (2000, "1.1.1.2", "/a", 404, 20),
        (3000, "1.1.1.1", "/b", 200, 1000),
        (4000, "2.2.2.2", "/c", 500, 5),
        (5000, "2.2.2.2", "/c", 200, 5),
    ]);
    let r = run(&b, TopBy::Path, TopSort::Requests, 0);
    let rows = &r.breakdown.rows;
    let v: Vec<_> = rows.iter().map(|r| r.value.as_deref().unwrap()).collect();
    assert_eq!(v, ["/a", "/c", "/b"], "ties by value");
    assert_eq!(
        (rows[0].requests, rows[0].bytes, rows[0].clients),
        (2, 30, 2)
    );
    assert_eq!(rows[0].errors, 1);
    assert_eq!(rows[0].first_seen, "1970-01-01T00:00:01.000Z");
    assert_eq!(rows[0].last_seen, "1970-01-01T00:00:02.000Z");
    assert_eq!(rows[1].clients, 1);
    assert_eq!((r.requests, r.bytes, r.errors, r.clients), (5, 1040, 2, 3));
    let r = run(&b, TopBy::Path, TopSort::Bytes, 1);
    assert_eq!(r.breakdown.rows[0].value.as_deref(), Some("/b"));
    let rest = r.breakdown.rest.as_ref().unwrap();
    assert_eq!((rest.values, rest.requests, rest.bytes), (2, 4, 40));
    let r = run(&b, TopBy::Status, TopSort::Requests, 0);
    let v: Vec<_> = r
        .breakdown
        .rows
        .iter()
        .map(|r| r.value.clone().unwrap())
        .collect();
    assert_eq!(v, ["200", "404", "500"]);
    let r = run(&b, TopBy::Prefix, TopSort::Requests, 0);
    assert_eq!(r.breakdown.rows[0].value.as_deref(), Some("1.1.1.0/24"));
    assert_eq!(r.breakdown.rows[0].clients, 2);
    let csv = r.doc().to_csv();
    assert!(
        csv.starts_with("rank,prefix,requests,share,bytes,bytes_share,clients"),
        "{csv}"
    );
    assert!(csv.contains("1,1.1.1.0/24,3,0.6,1030,"), "{csv}");
}

#[test]
fn coded_and_plain_columns_agree() {
    let b = batch(&[
        (1, "1.1.1.1", "/x", 200, 1),
        (2, "1.1.1.2", "/y", 200, 1),
        (3, "1.1.1.3", "/x", 200, 1),
    ]);
    let mut coded = b.clone();
    let mut path = TextColumn::coded();
    let x = path.push_value("/x");
    let y = path.push_value("/y");
    for k in [x, y, x] {
        path.push_code(k);
    }
    coded.path = path;
    let a = run(&b, TopBy::Path, TopSort::Requests, 0);
    let c = run(&coded, TopBy::Path, TopSort::Requests, 0);
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&c).unwrap()
    );
}

#[test]
fn merging_distinct_clients_is_inserting_them() {
    // Exact into exact, exact into a sketch, a sketch into exact and into a sketch:
    // each the same count as inserting every client into one set.
    for (a, b) in [
        (0..100u64, 50..200u64),
        (5000..5100, 0..1000),
        (0..1000, 500..600),
        (0..900, 400..5000),
    ] {
        let mut one = Distinct::default();
        let (mut x, mut y) = (Distinct::default(), Distinct::default());
        for i in a {
            one.insert(mix64(i));
            x.insert(mix64(i));
        }
        for i in b {
            one.insert(mix64(i));
            y.insert(mix64(i));
        }
        x.merge(&y);
        assert_eq!(x.count(), one.count());
    }
}

#[test]
fn codes_below_a_count() {
    assert!(below(&[], 0));
    assert!(below(&[0, 2, NULL_CODE, 1], 3));
    assert!(!below(&[0, 3, NULL_CODE], 3));
    assert!(below(&[NULL_CODE; 5], 0));
    assert!(!below(&[0], 0));
    assert!(!below(&[u32::MAX - 1], 7));
}

#[test]
fn client_hashes_are_a_set() {
    // Against std's set: repeats, 0, and hashes that share their low bits (the
    // slot index) so that probes wrap around the table.
    let mut ours = Hashes::default();
    let mut std = std::collections::HashSet::new();
    for i in 0..5_000u64 {
        let h = match i % 5 {
            0 => 0,
            1 => (i % 97) << 40,
            2 => u64::MAX - (i % 13),
            _ => mix64(i % 1_500),
        };
        assert_eq!(ours.insert(h), std.insert(h), "{h:#x}");
        assert_eq!(ours.len(), std.len());
    }
    let mut got: Vec<u64> = ours.iter().collect();
    let mut want: Vec<u64> = std.into_iter().collect();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
    assert!(Hashes::default().is_empty());
}

#[test]
fn distinct_clients_switch_to_an_estimate() {
    let mut d = Distinct::default();
    for i in 0..EXACT_CLIENTS as u64 {
        d.insert(mix64(i));
        d.insert(mix64(i));
    }
    assert_eq!(d.count(), (EXACT_CLIENTS as u64, false));
    for n in [1_000u64, 20_000, 200_000] {
        let mut d = Distinct::default();
        for i in 0..n {
            d.insert(mix64(i));
        }
        let (c, est) = d.count();
        assert!(est);
        let err = (c as f64 - n as f64).abs() / n as f64;
        assert!(err < 0.08, "{n}: {c}");
    }
    assert_eq!(clients_label(1234, true), "≈1,234");
    assert_eq!(bytes_label(1536), "1.5 KiB");
    assert_eq!(bytes_label(12), "12 B");
}

proptest! {
    /// Tallying batches where they are decoded ([`TopPart`], names left to the
    /// caller) gives the report of adding their rows one by one, byte for byte, for
    /// every breakdown, across batches and past the exact client count.
    #[test]
    fn parts_give_the_row_by_row_report(
        rows in prop::collection::vec(
            (0u16..3000, 0u8..4, 0u8..4, 0i64..7_200_000, prop::option::of(0u64..5000)),
            1..1500,
        ),
        by in 0usize..13,
        coded in any::<bool>(),
        ip_codes in any::<bool>(),
        cut in 0usize..1500,
        period in prop::option::of((0i64..3_600_000, 3_600_000i64..7_200_001)),
    ) {
        let by = [
            TopBy::Path, TopBy::Status, TopBy::Referer, TopBy::Agent,
            TopBy::Ip, TopBy::Prefix, TopBy::Host, TopBy::Method,
            TopBy::Os, TopBy::Site, TopBy::Kind, TopBy::Hour, TopBy::Day,
        ][by];
        let texts = [None, Some("/a"), Some("/b?x"), Some("GET")];
        let statuses = [200u16, 304, 404, 503];
        let batch_of = |rows: &[(u16, u8, u8, i64, Option<u64>)]| {
            let mut b = Batch::default();
            let owned: Vec<String> = rows
                .iter()
                .map(|&(c, _, _, _, _)| match c % 50 {
                    0 => format!("host{}.example", c % 3),
                    1 => format!("2001:db8:{c:x}::1"),
                    _ => format!("10.{}.{}.7", c % 7, c),
                })
                .collect();
            for (n, (&(_, v, st, t, bytes), ip)) in rows.iter().zip(&owned).enumerate() {
                let text = texts[v as usize].map(str::as_bytes);
                b.push(&Record {
                    ts_ms: t,
                    client: ip.as_bytes(),
                    ip: ip.parse().ok(),
                    method: text,
                    path: text,
                    referer: text,
                    user_agent: text,
                    host: text,
                    status: statuses[st as usize],
                    bytes,
                    ..Record::default()
                }, n as u64);
            }
            if coded {
                b.code_text();
            }
            if ip_codes {
                b.ip_codes = Some(crate::batch::IpCodes::for_test(&owned));
            }
            b
        };
        let cut = cut.min(rows.len());
        let batches = [batch_of(&rows[..cut]), batch_of(&rows[cut..])];
        let (since, until) = period.map_or((None, None), |(s, u)| (Some(s), Some(u)));
        let mut cls = Classifier::default();
        let mut plain = TopAcc::new(by);
        for b in &batches {
            plain.begin_batch(b);
            for i in 0..b.len() {
                let t = b.ts_ms[i];
                if since.is_some_and(|s| t < s) || until.is_some_and(|u| t >= u) {
                    continue;
                }
                let rc = cls.classify(b, i);
                plain.add(b, i, &rc);
            }
        }
        let mut tallied = TopAcc::new(by);
        for b in &batches {
            let part = TopPart::of(b, by, (cls.v4_len, cls.v6_len), (since, until));
            tallied.begin_batch(b);
            tallied.add_part(b, &part);
            for &i in &part.rest {
                let rc = cls.classify(b, i as usize);
                tallied.add(b, i as usize, &rc);
            }
        }
        let report = |acc| {
            serde_json::to_string(&TopReport::new(
                acc, &cls, TopSort::Clients, 0, &|t| t, "UTC", "all", "test",
            ))
            .unwrap()
        };
        prop_assert_eq!(report(plain), report(tallied));
    }
}
