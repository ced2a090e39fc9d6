//! Unit tests of the replay report: counts, classes, load, top keys, rendering, CSV.

use super::*;
use crate::batch::Batch;
use crate::classify::{Classifier, Identity};
use crate::record::{Precision, Record};

const T0: i64 = 1_790_312_400_000; // 2026-09-25T05:00:00.000Z

struct Req {
    t: i64,
    ip: &'static str,
    ua: &'static str,
    user: Option<&'static str>,
    status: u16,
}

fn batch(reqs: &[Req]) -> Batch {
    let mut b = Batch::default();
    for (i, r) in reqs.iter().enumerate() {
        let rec = Record {
            ts_ms: r.t,
            precision: Precision::Milli,
            client: r.ip.as_bytes(),
            ip: Some(r.ip.parse().unwrap()),
            method: Some(b"GET"),
            path: Some(b"/index.php"),
            query: Some(b"search=x"),
            user: r.user.map(str::as_bytes),
            user_agent: Some(r.ua.as_bytes()),
            status: r.status,
            request_time_us: Some(0),
            ..Record::default()
        };
        b.push(&rec, i as u64 + 1);
    }
    b
}

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1";
const GPTBOT: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";

struct Run {
    report: ReplayReport,
    csv: String,
}

fn run_specs(specs: &[&str], reqs: &[Req], capacity: Option<Rate>, internal: &[&str]) -> Run {
    let b = batch(reqs);
    let mut policies: Vec<Policy> = specs
        .iter()
        .map(|s| Policy::from_spec(s).unwrap())
        .collect();
    let _ = &mut policies;
    let mut marks = InternalMarks::from_policies(&policies);
    for c in internal {
        marks.cidr.push(c.parse().unwrap());
    }
    let mut cls = Classifier::default();
    let mut store = RowStore::new(Needs::of(&policies));
    // Rows arrive in reverse: the store must sort them.
    let f = store.file_id("a.log");
    for i in (0..b.len()).rev() {
        let rc = cls.classify(&b, i);
        let internal = marks.covers(rc.ip, b.user_agent.get(i), b.user.get(i), b.status[i]);
        let who = Who::of(internal, rc.identity, cls.agents.info(rc.agent));
        store.push(
            f,
            &RowInput {
                batch: &b,
                i,
                class: &rc,
                who,
                logged_refusal: b.status[i] == 429,
            },
        );
    }
    store.sort().unwrap();
    let names: Vec<String> = policies.iter().map(|p| p.name().to_string()).collect();
    let opts = ReportOptions {
        capacity,
        bucket_ms: Some(60_000),
        top: 5,
        refusal_statuses: vec![429],
        v4_len: 24,
        v6_len: 48,
        workers: None,
    };
    let mut acc = ReportAcc::new(&policies, opts);
    let mut replay = Replay::new(policies);
    let mut w = DecisionsWriter::new(Vec::new(), names).unwrap();
    run(
        &store,
        &mut replay,
        &mut acc,
        &|t| t + 9 * 3_600_000,
        Some(&mut w as &mut dyn DecisionSink),
    )
    .unwrap();
    let csv = String::from_utf8(w.finish().unwrap()).unwrap();
    let report = acc
        .finish(
            &replay,
            &store,
            &cls,
            ReportContext {
                origin: "a.log".into(),
                selection: "all requests".into(),
                tz: "+09:00".into(),
                records: b.len() as u64,
                dropped_logged: 0,
                internal: marks.describe(),
            },
        )
        .unwrap();
    Run { report, csv }
}

fn req(t: i64, ip: &'static str, ua: &'static str) -> Req {
    Req {
        t: T0 + t,
        ip,
        ua,
        user: None,
        status: 200,
    }
}

#[test]
fn counts_classes_keys_and_load() {
    let mut reqs = Vec::new();
    // 10 phones from one /24 in the first second, a bot, then a logged-in user.
    for i in 0..10 {
        reqs.push(req(
            i * 10,
            ["198.51.100.1", "198.51.100.2"][i as usize % 2],
            IPHONE,
        ));
    }
    reqs.push(req(200, "192.0.2.9", GPTBOT));
    reqs.push(Req {
        t: T0 + 300,
        ip: "203.0.113.5",
        ua: IPHONE,
        user: Some("alice"),
        status: 200,
    });
    reqs.push(Req {
        t: T0 + 61_000,
        ip: "203.0.113.5",
        ua: IPHONE,
        user: None,
        status: 429,
    });
    let cap = Rate::new(5, 60_000).unwrap();
    let r = run_specs(&["3/s", "100/s,key=ip"], &reqs, Some(cap), &[]).report;
    assert_eq!(r.requests, 13);
    let a = &r.candidates[0];
    assert_eq!((a.in_scope, a.admitted, a.refused), (13, 4, 9));
    assert_eq!(a.label, "A");
    assert_eq!(r.candidates[1].refused, 0);
    // Classes: 10 phones + 1 anonymous-looking phone later = browser; bot; identified.
    let cls = |w: Who| &a.classes[w.index()];
    assert_eq!(cls(Who::Browser).requests, 11);
    assert_eq!(cls(Who::Browser).refused, 7);
    assert_eq!(cls(Who::DeclaredBot).refused, 1);
    assert_eq!(cls(Who::Identified).refused, 1);
    assert!(
        a.warnings.iter().any(|w| w.contains("identified")),
        "{:?}",
        a.warnings
    );
    assert!(r.warnings.iter().any(|w| w.starts_with("WARNING")));
    // Top refused network: the phones' /24, 7 of its 10 requests.
    let top = &a.top_refused.prefixes[0];
    assert_eq!(
        (top.key.as_str(), top.refused, top.requests),
        ("198.51.100.0/24", 7, 10)
    );
    assert_eq!(a.top_refused.agents[0].key, "Safari (ios)");
    // Load: 12 covered in the first minute (capacity 5), 3 passed.
    let l = a.load.as_ref().unwrap();
    assert_eq!((l.peak_without, l.peak_with), (12, 3));
    assert_eq!((l.windows, l.over_without, l.over_with), (2, 1, 0));
    // The 429 of the log was replayed and counted apart.
    assert_eq!(r.logged_refusals.replayed, 1);
    assert_eq!(a.logged_refusals.covered, 1);
    assert_eq!(a.logged_refusals.refused, 0);
    // Times on the report's clock.
    assert_eq!(
        a.first_refusal.as_deref(),
        Some("2026-09-25T14:00:00.030+09:00")
    );
    assert_eq!(r.over_time.len(), 2);
    assert_eq!(r.over_time[0].start, "2026-09-25T14:00:00.000+09:00");
    assert_eq!(r.over_time[0].candidates[0].refused, 9);
    // JSON holds the required fields.
    let j = serde_json::to_value(&r).unwrap();
    for k in ["name", "in_scope", "admitted", "delayed", "refused"] {
        assert!(j["candidates"][0].get(k).is_some(), "{k}");
    }
}

#[test]
fn internal_services_and_exemptions() {
    let mut reqs = Vec::new();
    for i in 0..20 {
        reqs.push(req(i, "10.9.0.1", "edge-agent/1.0"));
    }
    // Without the exemption: refused, loudly (10.9/16 named internal).
    let r = run_specs(&["5/min,key=ip"], &reqs, None, &["10.9.0.0/16"]).report;
    let a = &r.candidates[0];
    assert_eq!(a.classes[Who::Internal.index()].refused, 15);
    assert!(a.warnings[0].contains("own services"), "{:?}", a.warnings);
    // With a config exempting the network: exempt, no warning.
    let mut p = Policy::from_spec("5/min,key=ip").unwrap();
    p.set_exempt(crate::replay::Exempt {
        cidr: vec!["10.9.0.0/16".parse().unwrap()],
        ..Default::default()
    });
    let b = batch(&reqs);
    let policies = vec![p];
    let marks = InternalMarks::from_policies(&policies);
    let mut cls = Classifier::default();
    let mut store = RowStore::new(Needs::of(&policies));
    for i in 0..b.len() {
        let rc = cls.classify(&b, i);
        let who = Who::of(
            marks.covers(rc.ip, None, None, 200),
            rc.identity,
            cls.agents.info(rc.agent),
        );
        store.push(
            0,
            &RowInput {
                batch: &b,
                i,
                class: &rc,
                who,
                logged_refusal: false,
            },
        );
    }
    store.sort().unwrap();
    let mut acc = ReportAcc::new(
        &policies,
        ReportOptions {
            capacity: None,
            bucket_ms: Some(60_000),
            top: 3,
            refusal_statuses: vec![429],
            v4_len: 24,
            v6_len: 48,
            workers: None,
        },
    );
    let mut replay = Replay::new(policies);
    run(&store, &mut replay, &mut acc, &|t| t, None).unwrap();
    let r = acc
        .finish(&replay, &store, &cls, ReportContext::default())
        .unwrap();
    let a = &r.candidates[0];
    assert_eq!((a.exempt, a.refused), (20, 0));
    assert_eq!(a.classes[Who::Internal.index()].exempt, 20);
    assert!(a.warnings.is_empty());
    let _ = Identity::Unknown;
}

#[test]
fn decisions_csv_and_rendering_are_deterministic() {
    let reqs: Vec<Req> = (0..30)
        .map(|i| {
            req(
                i * 37,
                ["198.51.100.1", "192.0.2.1", "192.0.2.2"][i as usize % 3],
                IPHONE,
            )
        })
        .collect();
    let a = run_specs(&["5/s,algo=nginx,burst=2,key=ip", "4/s"], &reqs, None, &[]);
    let b = run_specs(&["5/s,algo=nginx,burst=2,key=ip", "4/s"], &reqs, None, &[]);
    assert_eq!(a.csv, b.csv);
    let lines: Vec<&str> = a.csv.lines().collect();
    assert_eq!(lines[0], DECISIONS_HEADER);
    assert_eq!(lines.len(), 1 + 2 * 30);
    assert!(
        lines[1].starts_with("a.log,1,2026-09-25T05:00:00.000Z,"),
        "{}",
        lines[1]
    );
    assert!(lines.iter().skip(1).all(|l| {
        let f = csv_fields(l);
        f.len() == 14 && matches!(f[5].as_str(), "admit" | "delay" | "refuse")
    }));
    assert_eq!(csv_fields(lines[1])[3], "5/s,algo=nginx,burst=2,key=ip");
    for r in [&a.report, &b.report] {
        assert_eq!(r.candidates.len(), 2);
    }
    let da = a.report.doc();
    let db = b.report.doc();
    assert_eq!(da.to_text(80, false), db.to_text(80, false));
    let text = da.to_text(80, false);
    eprintln!("{text}");
    assert!(text.contains("A = 5/s,algo=nginx,burst=2,key=ip"), "{text}");
    assert!(text.contains("Refused by class"));
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    assert!(da.to_markdown().contains("### Decisions"));
    assert!(da.to_html().contains("<table>"));
    assert!(da.to_csv().starts_with("candidate,name,requests_covered,"));
}

#[test]
fn bucket_widths() {
    assert_eq!(auto_bucket(3_600_000, None), 300_000);
    let cap = Rate::new(1610, 600_000).unwrap();
    assert_eq!(auto_bucket(86_400_000, Some(cap)), 600_000);
    assert_eq!(auto_bucket(400 * 86_400_000, Some(cap)), 2_592_000_000);
    assert_eq!(stamp(0, -3_600_000), "1969-12-31T23:00:00.000-01:00");
    assert_eq!(letter(0), "A");
    assert_eq!(letter(26), "AA");
}

/// Splits one CSV line (RFC 4180 quotes).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                out.last_mut().unwrap().push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(String::new()),
            _ => out.last_mut().unwrap().push(c),
        }
    }
    out
}

#[test]
fn silences_are_gap_rows_and_the_sparkline_keeps_time() {
    // 20 requests a minute apart, nothing for 3 days, 20 more: 1-minute buckets.
    let mut reqs = Vec::new();
    for i in 0..20 {
        reqs.push(req(i * 60_000, "198.51.100.1", IPHONE));
        reqs.push(req(i * 60_000 + 1, "198.51.100.1", IPHONE));
    }
    let later = 3 * 86_400_000;
    for i in 0..20 {
        reqs.push(req(later + i * 60_000, "198.51.100.1", IPHONE));
        reqs.push(req(later + i * 60_000 + 1, "198.51.100.1", IPHONE));
    }
    let r = run_specs(&["1/min,key=ip"], &reqs, None, &[]).report;
    assert_eq!(r.over_time.len(), 40);
    assert_eq!(r.gaps.len(), 1);
    let g = &r.gaps[0];
    assert_eq!(g.buckets, 3 * 1440 - 20);
    assert_eq!(g.before, 20);
    assert_eq!(g.start, "2026-09-25T14:20:00.000+09:00");
    assert_eq!(g.end, "2026-09-28T14:00:00.000+09:00");
    let j = serde_json::to_value(&r).unwrap();
    assert_eq!(j["gaps"][0]["buckets"], 3 * 1440 - 20);
    let text = r.doc().to_text(80, false);
    assert!(
        text.contains(
            "no requests from 2026-09-25 14:20:00 to 2026-09-28 14:00:00 (4,300 buckets)"
        ),
        "{text}"
    );
    assert!(text.contains("09-25 14:20 … 09-28 14:00"), "{text}");
    // The sparkline spans the 3 days in at most 60 slots of equal time: the refusals
    // sit at both ends, nothing in between.
    let at = text.find("A refusals per 73m:").expect("sparkline");
    let spark = text[at..].split('|').nth(1).unwrap();
    let bars: Vec<char> = spark.chars().collect();
    assert!(bars.len() <= 60, "{spark}");
    assert_ne!(bars[0], '·');
    assert_ne!(*bars.last().unwrap(), '·');
    assert!(bars[1..bars.len() - 1].iter().all(|&c| c == '·'), "{spark}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    // Without a silence: no `gaps` key.
    let r = run_specs(&["1/min,key=ip"], &reqs[..40], None, &[]).report;
    assert!(r.gaps.is_empty());
    assert!(serde_json::to_value(&r).unwrap().get("gaps").is_none());
}

// ---------------------------------------------------------------------------------------
// Bounded memory: sorted runs spilled to disk and merged back give exactly the order,
// decisions and report of one in-memory sort.

mod spilling {
    use super::*;
    use crate::replay::ReplayOrder;
    use proptest::prelude::*;

    /// One generated log line.
    #[derive(Clone, Debug)]
    struct Line {
        t: i64,
        second: bool,
        rt_us: Option<u64>,
        status: u16,
        ip: u8,
        host_name: bool,
        path: u8,
        ua: u8,
    }

    fn line() -> impl Strategy<Value = Line> {
        (
            0i64..6_000,
            any::<bool>(),
            prop_oneof![
                Just(None),
                Just(Some(0u64)),
                (1u64..3_000_000).prop_map(Some)
            ],
            prop_oneof![Just(200u16), Just(200), Just(429), Just(503)],
            0u8..12,
            prop::bool::weighted(0.1),
            0u8..6,
            0u8..4,
        )
            .prop_map(|(t, second, rt_us, status, ip, host_name, path, ua)| Line {
                // Whole seconds repeat a lot (spreading groups), milliseconds often tie.
                t: if second {
                    T0 + t / 1000 * 1000
                } else {
                    T0 + t / 3
                },
                second,
                rt_us,
                status,
                ip,
                host_name,
                path,
                ua,
            })
    }

    const PATHS: [&str; 6] = [
        "/a",
        "/index.php",
        "/w/x",
        "/a/b",
        "/",
        "/long/path/with/more",
    ];
    const UAS: [&str; 4] = [IPHONE, GPTBOT, "curl/8.0", ""];

    /// Files of lines, as batches in each file's line order.
    fn batches(files: &[Vec<Line>], chunk: usize) -> Vec<(usize, Batch)> {
        // IPv4, IPv6 and IPv4-mapped IPv6 (one network with the plain IPv4 ones).
        let ips: Vec<String> = (0..12)
            .map(|i| match i {
                10 => "2001:db8::10".to_string(),
                11 => "::ffff:198.51.2.11".to_string(),
                _ => format!("198.51.{}.{}", i % 3, i),
            })
            .collect();
        let names: Vec<String> = (0..12).map(|i| format!("host{i}.example")).collect();
        let mut out = Vec::new();
        for (f, lines) in files.iter().enumerate() {
            for (c, part) in lines.chunks(chunk.max(1)).enumerate() {
                let mut b = Batch::default();
                for (k, l) in part.iter().enumerate() {
                    let ip = &ips[l.ip as usize];
                    let ua = UAS[l.ua as usize];
                    let rec = Record {
                        ts_ms: l.t,
                        precision: if l.second {
                            Precision::Second
                        } else {
                            Precision::Milli
                        },
                        client: if l.host_name {
                            names[l.ip as usize].as_bytes()
                        } else {
                            ip.as_bytes()
                        },
                        ip: (!l.host_name).then(|| ip.parse().unwrap()),
                        method: Some(if l.path % 2 == 0 { b"GET" } else { b"POST" }),
                        path: Some(PATHS[l.path as usize].as_bytes()),
                        query: (l.path % 3 == 0).then_some(&b"q=1"[..]),
                        referer: (l.ua == 0).then_some(&b"https://ref.example/"[..]),
                        host: Some(b"wiki.example"),
                        user: (l.ip == 3).then_some(&b"alice"[..]),
                        user_agent: (!ua.is_empty()).then_some(ua.as_bytes()),
                        status: l.status,
                        request_time_us: l.rt_us,
                        bytes: (l.ip % 2 == 0).then_some(u64::from(l.path) * 1000),
                        has_cookie: [None, Some(true), Some(false)]
                            .get(l.ua as usize)
                            .copied()
                            .flatten(),
                        ..Record::default()
                    };
                    b.push(&rec, (c * chunk.max(1) + k) as u64 + 1);
                }
                out.push((f, b));
            }
        }
        out
    }

    /// The files' batches pushed into a store in `order`.
    fn fill(
        store: &mut RowStore,
        cls: &mut Classifier,
        bs: &[(usize, Batch)],
        order: &[usize],
        marks: &InternalMarks,
    ) {
        for &k in order {
            let (f, b) = &bs[k];
            let fid = store.file_id(&format!("part-{f}.log"));
            for i in 0..b.len() {
                let rc = cls.classify(b, i);
                let internal = marks.covers(rc.ip, b.user_agent.get(i), b.user.get(i), b.status[i]);
                let who = Who::of(internal, rc.identity, cls.agents.info(rc.agent));
                store.push(
                    fid,
                    &RowInput {
                        batch: b,
                        i,
                        class: &rc,
                        who,
                        logged_refusal: b.status[i] == 429,
                    },
                );
            }
        }
    }

    /// The order one full sort gives, computed the plain way: spread each run of
    /// consecutive 1-second rows of one file, then a stable sort of everything.
    fn reference(bs: &[(usize, Batch)], order: &[usize]) -> Vec<(usize, u64, i64)> {
        let mut rows: Vec<(usize, u64, i64, bool, u64, bool)> = Vec::new();
        for &k in order {
            let (f, b) = &bs[k];
            for i in 0..b.len() {
                rows.push((
                    *f,
                    b.line[i],
                    b.ts_ms[i],
                    b.precision[i] == 0,
                    b.request_time_us[i].map_or(0, |u| u.div_ceil(1000)),
                    b.status[i] == 429,
                ));
            }
        }
        let mut s = 0;
        while s < rows.len() {
            let mut e = s + 1;
            if rows[s].3 {
                while e < rows.len()
                    && rows[e].3
                    && rows[e].0 == rows[s].0
                    && rows[e].2 == rows[s].2
                {
                    e += 1;
                }
                let n = (e - s) as i64;
                for (k, r) in rows[s..e].iter_mut().enumerate() {
                    r.2 += k as i64 * 1000 / n;
                }
            }
            s = e;
        }
        rows.sort_by_key(|r| ReplayOrder::new(r.2, r.4, r.5, 0));
        rows.into_iter().map(|r| (r.0, r.1, r.2)).collect()
    }

    /// Every row the store feeds, in order, as text (request and facts).
    fn fed(store: &RowStore) -> Vec<String> {
        let mut out = Vec::new();
        store
            .for_each_sorted(|r, m| {
                out.push(format!("{} {:?} {:?}", store.file_name(m.file), r, m));
                Ok(())
            })
            .unwrap();
        out
    }

    const SPECS: [&str; 5] = [
        "3/s",
        "2/s,algo=nginx,burst=3,key=ip",
        "5/10s,key=path",
        "1/s,algo=token-bucket,burst=2,key=agent",
        "4/s,key=uri,cost=request-time,algo=gcra",
    ];

    /// The report (JSON and text) and the decisions CSV of a replay of `store`.
    fn replay(store: &RowStore, cls: &Classifier) -> (String, String, String) {
        let policies: Vec<Policy> = SPECS
            .iter()
            .map(|s| Policy::from_spec(s).unwrap())
            .collect();
        let names: Vec<String> = policies.iter().map(|p| p.name().to_string()).collect();
        let cap = Some(Rate::new(4, 1_000).unwrap());
        let opts = ReportOptions {
            capacity: cap,
            // The width the span of the rows gives, as `logscope replay` without --by.
            bucket_ms: None,
            top: 3,
            refusal_statuses: vec![429],
            v4_len: 24,
            v6_len: 48,
            workers: None,
        };
        let mut acc = ReportAcc::new(&policies, opts);
        let mut replay = Replay::new(policies);
        let mut w = DecisionsWriter::new(Vec::new(), names).unwrap();
        run(
            store,
            &mut replay,
            &mut acc,
            &|t| t + 3_600_000,
            Some(&mut w as &mut dyn DecisionSink),
        )
        .unwrap();
        let csv = String::from_utf8(w.finish().unwrap()).unwrap();
        let r = acc
            .finish(&replay, store, cls, ReportContext::default())
            .unwrap();
        (
            serde_json::to_string_pretty(&r).unwrap(),
            r.doc().to_text(100, false),
            csv,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn spilled_runs_merge_into_the_in_memory_order(
            files in prop::collection::vec(prop::collection::vec(line(), 0..160), 1..4),
            chunk in 1usize..60,
            run_rows in 1usize..40,
            max_runs in 2usize..6,
            text_budget in prop_oneof![Just(usize::MAX), 1usize..400],
            seed in any::<u64>(),
        ) {
            let bs = batches(&files, chunk);
            // Batches in a random order (files given in any order, interleaved).
            let mut order: Vec<usize> = (0..bs.len()).collect();
            let mut s = seed | 1;
            for i in (1..order.len()).rev() {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                order.swap(i, (s % (i as u64 + 1)) as usize);
            }
            let marks = InternalMarks::default();
            let mut cls = Classifier::default();
            let mut whole = RowStore::new(Needs::ALL);
            fill(&mut whole, &mut cls, &bs, &order, &marks);
            whole.sort().unwrap();
            prop_assert_eq!(whole.spilled_runs(), 0);
            let tmp = tempfile::tempdir().unwrap();
            let mut runs = RowStore::with_spill(
                Needs::ALL,
                SpillOptions {
                    run_rows,
                    run_text_bytes: text_budget,
                    max_runs,
                    dir: Some(tmp.path().to_path_buf()),
                },
            );
            fill(&mut runs, &mut cls, &bs, &order, &marks);
            runs.sort().unwrap();
            let n: usize = files.iter().map(Vec::len).sum();
            prop_assert_eq!(runs.len(), n);
            if n > run_rows * 2 && files.iter().all(|f| f.iter().all(|l| !l.second)) {
                prop_assert!(runs.spilled_runs() > 0);
            }
            prop_assert!(runs.spilled_runs() < max_runs);
            // The order of one plain sort of every row.
            let want = reference(&bs, &order);
            let mut got = Vec::new();
            runs.for_each_sorted(|r, m| {
                got.push((
                    runs.file_name(m.file)["part-".len()..].trim_end_matches(".log").parse::<usize>().unwrap(),
                    m.line,
                    r.arrival_ms,
                ));
                Ok(())
            }).unwrap();
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(fed(&whole), fed(&runs));
            prop_assert_eq!(whole.span(), runs.span());
            let (a, b) = (replay(&whole, &cls), replay(&runs, &cls));
            prop_assert_eq!(a.0, b.0);
            prop_assert_eq!(a.1, b.1);
            prop_assert_eq!(a.2, b.2);
            // Nothing left behind: the runs are unnamed files.
            drop(runs);
            prop_assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
        }
    }

    #[test]
    fn a_spill_into_a_missing_directory_is_an_error_not_a_panic() {
        let tmp = tempfile::tempdir().unwrap();
        let files = vec![
            (0..50)
                .map(|i| Line {
                    t: T0 + i * 7,
                    second: false,
                    rt_us: None,
                    status: 200,
                    ip: 1,
                    host_name: false,
                    path: 0,
                    ua: 0,
                })
                .collect::<Vec<_>>(),
        ];
        let bs = batches(&files, 10);
        let mut cls = Classifier::default();
        let mut s = RowStore::with_spill(
            Needs::default(),
            SpillOptions {
                run_rows: 8,
                dir: Some(tmp.path().join("missing")),
                ..SpillOptions::default()
            },
        );
        fill(
            &mut s,
            &mut cls,
            &bs,
            &[0, 1, 2, 3, 4],
            &InternalMarks::default(),
        );
        assert!(s.sort().is_err());
        assert!(s.sort().is_err());
    }
}
