//! Tests of the row store: order, spill, takes, merge keys, internal marks.

use std::io;
use std::net::IpAddr;
use std::path::PathBuf;

use super::row::{LOGGED_REFUSAL, NO_VALUE, Row, order_key, packed_key};
use super::*;
use crate::batch::Batch;
use crate::classify::{ClientKey, Identity, RowClass};
use crate::record::{Precision, Record};
use crate::replay::Policy;
use crate::replay::request::Request;

fn rc(ip: &str) -> RowClass {
    let ip: IpAddr = ip.parse().unwrap();
    RowClass {
        ip: Some(ip),
        client: ClientKey::addr(ip),
        prefix: ClientKey::prefix(ip, 24, 48),
        heavy: crate::classify::HeavyClass(0),
        identity: Identity::Unknown,
        agent: 0,
    }
}

#[test]
fn needs_follow_the_candidates() {
    let p = Policy::from_spec("10/s,key=agent").unwrap();
    let n = Needs::of(&[p]);
    assert!(n.agent && !n.path && !n.query);
    let q = Policy::from_toml(
        "[[zones]]\nname='z'\nrate='1r/s'\nkey='ip'\n[[rules]]\nmatch={path_prefix='/a/', not={query_regex='x'}}\nzone='z'\n",
    )
    .unwrap();
    let n = Needs::of(&[q]);
    assert!(n.path && n.query && !n.agent);
    assert_eq!(
        Needs::of(&[Policy::from_spec("1/s").unwrap()]),
        Needs::default()
    );
    // The size only for a cost in bytes; no text is kept for it.
    let b = Needs::of(&[Policy::from_spec("10000000/m,cost=bytes").unwrap()]);
    assert!(b.bytes && !b.any());
    assert!(!Needs::of(&[Policy::from_spec("10/s,cost=request-time").unwrap()]).bytes);
    // A field key keeps the slots up to its own.
    let mut f = Policy::from_spec("10/s,key=field:api_key").unwrap();
    let n = Needs::of(std::slice::from_ref(&f));
    assert!(n.fields == 1 && n.any() && !n.agent);
    f.bind_fields(|name| (name == "api_key").then_some((2, None)));
    assert_eq!(Needs::of(&[f]).fields, 3);
}

#[test]
fn sorts_into_decision_order_and_spreads_seconds() {
    let mut b = Batch::default();
    let mk = |ts: i64, rt: Option<u64>, status: u16, prec: Precision| Record {
        ts_ms: ts,
        precision: prec,
        client: b"10.0.0.1",
        ip: Some("10.0.0.1".parse().unwrap()),
        path: Some(b"/x"),
        status,
        request_time_us: rt,
        ..Record::default()
    };
    // Line 1 took 5 ms (arrived at 1000), line 2 refused at 1000, line 3 at 1000.
    b.push(&mk(1000, Some(5000), 200, Precision::Milli), 1);
    b.push(&mk(1000, Some(0), 429, Precision::Milli), 2);
    b.push(&mk(1000, Some(0), 200, Precision::Milli), 3);
    b.push(&mk(999, Some(0), 200, Precision::Milli), 4);
    // Three rows in one second.
    for l in 5..8 {
        b.push(&mk(5000, None, 200, Precision::Second), l);
    }
    let mut s = RowStore::new(Needs::ALL);
    push_all(&mut s, &b);
    s.sort().unwrap();
    let mut got = Vec::new();
    s.for_each_sorted(|r, m| {
        got.push((m.line, r.arrival_ms, r.path.map(<[u8]>::to_vec), *m));
        Ok(())
    })
    .unwrap();
    let lines: Vec<u64> = got.iter().map(|g| g.0).collect();
    assert_eq!(lines, vec![4, 3, 1, 2, 5, 6, 7]);
    let t: Vec<i64> = got[4..7].iter().map(|g| g.1).collect();
    assert_eq!(t, vec![5000, 5333, 5666]);
    assert_eq!(got[0].2.as_deref(), Some(&b"/x"[..]));
    assert!(got[3].3.logged_refusal && got[4].3.second_resolution);
    assert_eq!(s.span(), Some((999, 5666)));
    assert_eq!(s.file_name(0), "a.log");
}

/// Rows taken as they are read ([`RowStore::take_before`] at every batch with the
/// least time of the rows still to come), then the rest sorted (and spilled, with a
/// small run size), come in exactly the order, with exactly the indexes, text and
/// clients, of one sort of every row.
#[test]
fn rows_taken_as_read_come_as_one_sort_of_every_row() {
    let mut seed = 0x5eed_7a4eu64;
    let mut rnd = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for case in 0..24u64 {
        let needs = if case % 2 == 0 {
            Needs::ALL
        } else {
            Needs::default()
        };
        let run_rows = [1 << 19, 40, 7][(case % 3) as usize];
        // Batches of rows in about time order (late by up to 3 s), some stamped in
        // whole seconds, from two files.
        let mut batches = Vec::new();
        let mut t = 1_000_000i64;
        let mut line = 0u64;
        for _ in 0..(2 + rnd(12)) {
            let mut b = Batch::default();
            for _ in 0..rnd(60) {
                t += rnd(700) as i64;
                let second = rnd(3) == 0;
                let late = t - rnd(3000) as i64 * (rnd(4) == 0) as i64;
                let ts = if second { late / 1000 * 1000 } else { late };
                let ip = format!("10.0.{}.{}", rnd(3), rnd(5));
                let path = format!("/p/{line}");
                // Captured fields (an API key, often absent; a tenant) in two slots.
                let key = format!("key-{}", rnd(4));
                let key = (rnd(3) != 0).then_some(key.as_bytes());
                b.push(
                    &Record {
                        ts_ms: ts,
                        precision: if second {
                            Precision::Second
                        } else {
                            Precision::Milli
                        },
                        client: ip.as_bytes(),
                        ip: Some(ip.parse().unwrap()),
                        path: Some(path.as_bytes()),
                        user_agent: Some(if rnd(2) == 0 { b"a" } else { b"b" }),
                        status: if rnd(9) == 0 { 429 } else { 200 },
                        request_time_us: Some(rnd(4000)),
                        fields: [key, Some(b"tenant\\1"), None, None],
                        captured: 2,
                        ..Record::default()
                    },
                    line,
                );
                line += 1;
            }
            batches.push((rnd(2) as usize, b));
        }
        let floors: Vec<i64> = (0..batches.len())
            .map(|k| {
                batches[k + 1..]
                    .iter()
                    .flat_map(|(_, b)| b.ts_ms.iter().copied())
                    .min()
                    .unwrap_or(i64::MAX)
            })
            .collect();
        let spill = SpillOptions {
            run_rows,
            max_runs: 3,
            ..SpillOptions::default()
        };
        type Seen = (
            u64,
            i64,
            u64,
            u32,
            Option<Vec<u8>>,
            Option<Vec<u8>>,
            Option<IpAddr>,
            Vec<Option<Vec<u8>>>,
        );
        let seen = |r: &Request<'_>, m: &RowMeta, file: &str| -> Seen {
            assert_eq!(file, ["a.log", "b.log"][m.file as usize]);
            let path = r.path.map(<[u8]>::to_vec);
            (
                r.index,
                r.arrival_ms,
                m.line,
                m.file,
                path,
                r.user_agent.map(<[u8]>::to_vec),
                m.ip,
                r.fields.iter().map(|f| f.map(<[u8]>::to_vec)).collect(),
            )
        };
        let run = |take: bool| {
            let mut s = RowStore::with_spill(needs, spill.clone());
            let ids = [s.file_id("a.log"), s.file_id("b.log")];
            let mut got: Vec<Seen> = Vec::new();
            let mut names = FedNames::default();
            let mut fed = None;
            for ((f, b), floor) in batches.iter().zip(&floors) {
                for i in 0..b.len() {
                    let c = rc(b.client.get(i).unwrap());
                    s.push(
                        ids[*f],
                        &RowInput {
                            batch: b,
                            i,
                            class: &c,
                            who: Who::Other,
                            logged_refusal: b.status[i] == 429,
                        },
                    );
                }
                if take && let Some(f) = s.take_before(*floor, fed.take()).unwrap() {
                    f.replay(&mut names, |r, m, file| {
                        got.push(seen(r, m, file));
                        Ok(())
                    })
                    .unwrap();
                    fed = Some(f);
                }
            }
            s.sort().unwrap();
            s.for_each_sorted(|r, m| {
                got.push(seen(r, m, s.file_name(m.file)));
                Ok(())
            })
            .unwrap();
            let mut clients = s
                .fold_clients(2, Vec::new, |v, ip, _, n| {
                    v.extend(std::iter::repeat_n(ip, n as usize))
                })
                .unwrap()
                .concat();
            clients.sort();
            (got, clients, s.len(), s.span(), s.fed())
        };
        let (want, want_clients, n, span, _) = run(false);
        let (got, clients, m, got_span, fed) = run(true);
        assert_eq!(got, want, "case {case}");
        assert_eq!(
            (clients, m, got_span),
            (want_clients, n, span),
            "case {case}"
        );
        assert!(
            run_rows < 100 || n == 0 || fed > 0,
            "case {case}: nothing taken"
        );
        let index: Vec<u64> = got.iter().map(|g| g.0).collect();
        assert_eq!(index, (0..n as u64).collect::<Vec<_>>(), "case {case}");
        // The captured fields come back (in their stored form) where kept.
        let tenant = Some(b"tenant\\1".to_vec());
        for g in &got {
            if needs == Needs::ALL {
                assert_eq!((&g.7[1], &g.7[2]), (&tenant, &None), "case {case}");
            } else {
                assert!(g.7.iter().all(Option::is_none), "case {case}");
            }
        }
        if needs == Needs::ALL && n > 20 {
            assert!(got.iter().any(|g| g.7[0].is_some()) && got.iter().any(|g| g.7[0].is_none()));
        }
    }
}

/// A store spilling as `spill` says, holding `n` rows of one client at the times
/// `ts(line)`, each with the path `/p`.
fn store_of(n: u64, ts: impl Fn(u64) -> i64, needs: Needs, spill: SpillOptions) -> RowStore {
    let mut b = Batch::default();
    for l in 0..n {
        b.push(
            &Record {
                ts_ms: ts(l),
                client: b"10.0.0.1",
                ip: Some("10.0.0.1".parse().unwrap()),
                path: Some(b"/p"),
                status: 200,
                ..Record::default()
            },
            l,
        );
    }
    let mut s = RowStore::with_spill(needs, spill);
    push_all(&mut s, &b);
    s
}

/// Pushes every row of `b` as from file `a.log` and client 10.0.0.1; a 429 is a
/// logged refusal.
fn push_all(s: &mut RowStore, b: &Batch) {
    let f = s.file_id("a.log");
    let c = rc("10.0.0.1");
    for i in 0..b.len() {
        s.push(
            f,
            &RowInput {
                batch: b,
                i,
                class: &c,
                who: Who::Other,
                logged_refusal: b.status[i] == 429,
            },
        );
    }
}

#[test]
fn a_run_that_cannot_be_written_is_an_error_from_sort() {
    let mut s = store_of(
        20,
        |l| 1000 - l as i64,
        Needs::default(),
        SpillOptions {
            run_rows: 3,
            dir: Some(PathBuf::from("/nonexistent/logscope-spill")),
            ..SpillOptions::default()
        },
    );
    let e = s.sort().expect_err("the runs could not be written");
    assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
    // Asked again, the same error; never rows fed in a wrong order.
    assert!(s.sort().is_err());
    assert!(s.for_each_sorted(|_, _| Ok(())).is_err());
}

#[test]
fn a_replay_that_stops_early_gets_its_error_back_from_the_merge() {
    let mut s = store_of(
        20_000,
        |l| (l as i64 * 7919) % 20_000,
        Needs::ALL,
        SpillOptions {
            run_rows: 3_000,
            ..SpillOptions::default()
        },
    );
    s.sort().unwrap();
    assert_eq!(s.spilled_runs(), 6);
    // In order, every row once, its text with it.
    let mut seen = Vec::new();
    s.for_each_sorted(|r, m| {
        assert_eq!(r.path, Some(&b"/p"[..]));
        seen.push((r.arrival_ms, m.line));
        Ok(())
    })
    .unwrap();
    assert_eq!(seen.len(), 20_000);
    assert!(seen.windows(2).all(|w| w[0] <= w[1]));
    // Stopping after 5 000 rows (more than a chunk) returns at once with the error.
    let mut n = 0;
    let e = s
        .for_each_sorted(|_, _| {
            n += 1;
            if n == 5_000 {
                return Err(io::Error::other("sink full"));
            }
            Ok(())
        })
        .unwrap_err();
    assert_eq!(e.to_string(), "sink full");
    assert_eq!(n, 5_000);
}

#[test]
fn the_packed_merge_key_orders_like_replay_order() {
    let arrivals = [i64::MIN, -1_000, -1, 0, 1, 999, 1_790_312_400_000, i64::MAX];
    let rts = [NO_VALUE, 0, 1, 999, 1_000, 1_001, 5_000_000, NO_VALUE - 1];
    let mut rows = Vec::new();
    for &arrival in &arrivals {
        for &rt_us in &rts {
            for flags in [0, LOGGED_REFUSAL] {
                rows.push(Row {
                    arrival,
                    rt_us,
                    flags,
                    ..Row::EMPTY
                });
            }
        }
    }
    for a in &rows {
        for b in &rows {
            assert_eq!(
                packed_key(a).cmp(&packed_key(b)),
                order_key(a).cmp(&order_key(b)),
                "{} {} / {} {}",
                a.arrival,
                a.rt_us,
                b.arrival,
                b.rt_us
            );
        }
    }
}

#[test]
fn internal_marks_come_from_exemptions() {
    let p = Policy::from_toml(
        "[exempt]\ncidr=['10.9.0.0/16']\nidentified=true\n[[zones]]\nname='z'\nrate='1r/s'\n[[rules]]\nzone='z'\nexempt={users=['svc']}\n",
    )
    .unwrap();
    let m = InternalMarks::from_policies(&[p]);
    assert!(m.covers(Some("10.9.1.2".parse().unwrap()), None, None, 200));
    assert!(m.covers(None, None, Some("svc"), 200));
    assert!(
        !m.covers(None, None, Some("svc"), 401),
        "a refused credential"
    );
    assert!(!m.covers(Some("10.8.1.2".parse().unwrap()), None, Some("alice"), 200));
    assert!(m.describe().contains("10.9.0.0/16"));
}
