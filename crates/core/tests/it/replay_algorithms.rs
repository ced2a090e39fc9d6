//! Behaviour of the replay algorithms and policies on small hand-made cases: Caddy's
//! strict window and zone order, nginx's all-or-nothing limits, exemptions (seed 004),
//! cost buckets (seed 000), eviction, the TOML fixtures.

use std::net::IpAddr;

use logscope_core::replay::{
    Algorithm, Decision, Dialect, Exempt, LimitRef, LimitSpec, Matcher, Outcome, Policy, Rate,
    Replay, ReplayOrder, Request, Zone,
};

const T0: i64 = 1_790_000_000_000;
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/limits");

fn ip(s: &str) -> Option<IpAddr> {
    Some(s.parse().unwrap())
}

fn req(t: i64, addr: &str) -> Request<'static> {
    Request {
        arrival_ms: T0 + t,
        ip: ip(addr),
        path: Some(b"/index.php"),
        method: Some(b"GET"),
        ..Default::default()
    }
}

#[test]
fn caddy_window_is_closed_sliding_log_is_half_open() {
    let mut caddy = Zone::new("c", LimitSpec::parse("2/s,algo=caddy").unwrap()).unwrap();
    let mut log = Zone::new("l", LimitSpec::parse("2/s").unwrap()).unwrap();
    for z in [&mut caddy, &mut log] {
        assert_eq!(z.check(T0, b"", 1), Outcome::Admit);
        assert_eq!(z.check(T0, b"", 1), Outcome::Admit);
        assert_eq!(z.check(T0 + 999, b"", 1), Outcome::Refuse);
    }
    // Caddy: now − oldest must be > window; the log: ≥ window.
    assert_eq!(caddy.check(T0 + 1000, b"", 1), Outcome::Refuse);
    assert_eq!(log.check(T0 + 1000, b"", 1), Outcome::Admit);
    assert_eq!(caddy.check(T0 + 1001, b"", 1), Outcome::Admit);
}

fn two_zone_policy(dialect: Dialect) -> Policy {
    // A permissive zone (5 per s) and a strict one (1 per s), one rule using both.
    let mut p = Policy::new("two", dialect);
    let algo = match dialect {
        Dialect::Nginx => "sliding-log",
        Dialect::Caddy => "caddy",
    };
    let strict = p
        .add_zone(
            Zone::new(
                "strict",
                LimitSpec::parse(&format!("1/s,algo={algo}")).unwrap(),
            )
            .unwrap(),
        )
        .unwrap();
    let loose = p
        .add_zone(
            Zone::new(
                "loose",
                LimitSpec::parse(&format!("5/s,algo={algo}")).unwrap(),
            )
            .unwrap(),
        )
        .unwrap();
    let l = |zone| LimitRef {
        zone,
        burst: None,
        delay: None,
    };
    p.add_rule(
        "both",
        Matcher::default(),
        Exempt::default(),
        &[l(strict), l(loose)],
    )
    .unwrap();
    p
}

#[test]
fn caddy_earlier_zones_keep_their_slot_nginx_charges_nothing() {
    let mut r = Replay::new(vec![
        two_zone_policy(Dialect::Caddy),
        two_zone_policy(Dialect::Nginx),
    ]);
    let mut refused = [0, 0];
    for i in 0..10 {
        let v = r.decide(&req(i, "192.0.2.1"));
        for c in 0..2 {
            refused[c] += usize::from(v[c].decision == Decision::Refuse);
        }
    }
    // Both admit 1 of 10 in the first second.
    assert_eq!(refused, [9, 9]);
    let zones = |c: usize| {
        r.policies()[c]
            .zones()
            .iter()
            .map(|z| z.counters().cost_charged)
            .collect::<Vec<_>>()
    };
    // Caddy tries the loose zone first (most permissive), which takes a slot each time
    // until it is full at 5, although the strict zone refused all but the first.
    assert_eq!(zones(0), vec![1, 5]);
    // nginx all-or-nothing: nothing charged for refused requests.
    assert_eq!(zones(1), vec![1, 1]);
    // Just past the window (Caddy's is closed: it needs now − oldest > 1000 ms), the
    // first request passes; the next is refused by the *loose* zone, still holding the
    // slots it gave at t = 1…4 ms to requests the strict zone refused.
    let v = r.decide(&req(1001, "192.0.2.1"))[0];
    assert_eq!(v.decision, Decision::Admit);
    let v = r.decide(&req(1001, "192.0.2.1"))[0];
    assert_eq!(v.decision, Decision::Refuse);
    assert_eq!(
        r.policies()[0].zones()[v.zone.unwrap() as usize].name(),
        "loose"
    );
}

#[test]
fn nginx_two_limits_all_or_nothing() {
    let text = r#"
        dialect = "nginx"
        [[zones]]
        name = "ip"
        rate = "5r/s"
        key = "ip"
        [[zones]]
        name = "site"
        rate = "1r/s"
        key = "site"
        [[rules]]
        name = "/dual/"
        limits = [{ zone = "ip", burst = 8, nodelay = true }, { zone = "site", burst = 2, nodelay = true }]
    "#;
    let mut r = Replay::new(vec![Policy::from_toml(text).unwrap()]);
    // Site admits 3 back to back (burst 2), then refuses; the ip zone must not be charged
    // for the refused ones: after a long pause the ip bucket is the same as a new one.
    let d: Vec<Decision> = (0..6)
        .map(|_| r.decide(&req(0, "192.0.2.7"))[0].decision)
        .collect();
    assert_eq!(d.iter().filter(|d| **d == Decision::Admit).count(), 3);
    let zones = r.policies()[0].zones();
    assert_eq!(zones[0].counters().cost_charged, 3);
    assert_eq!(zones[1].counters().refused, 3);
    assert_eq!(r.counters()[0].refused, 3);
}

#[test]
fn nginx_delay_and_twostage() {
    // burst=12 delay=4 at 5r/s: 1 + 4 at once, then 8 delayed by 200…1600 ms, then refused.
    let spec = LimitSpec::parse("5r/s,algo=nginx,burst=12,delay=4,key=ip").unwrap();
    let mut z = Zone::new("twostage", spec).unwrap();
    let out: Vec<Outcome> = (0..15).map(|_| z.check(T0, b"k", 1)).collect();
    assert_eq!(out[..5], [Outcome::Admit; 5]);
    let delays: Vec<u32> = out[5..13]
        .iter()
        .map(|o| match o {
            Outcome::Delay(d) => *d,
            o => panic!("{o:?}"),
        })
        .collect();
    assert_eq!(delays, vec![200, 400, 600, 800, 1000, 1200, 1400, 1600]);
    assert_eq!(out[13..], [Outcome::Refuse; 2]);
}

#[test]
fn leaky_queue_delays_then_refuses() {
    let mut z = Zone::new(
        "q",
        LimitSpec::parse("5/s,algo=leaky-queue,queue=3").unwrap(),
    )
    .unwrap();
    let out: Vec<Outcome> = (0..6).map(|_| z.check(T0, b"", 1)).collect();
    assert_eq!(
        out,
        vec![
            Outcome::Admit,
            Outcome::Delay(200),
            Outcome::Delay(400),
            Outcome::Delay(600),
            Outcome::Refuse,
            Outcome::Refuse
        ]
    );
    // 200 ms later one slot has drained.
    assert_eq!(z.check(T0 + 200, b"", 1), Outcome::Delay(600));
}

#[test]
fn sliding_window_counter_follows_seed_001() {
    // 100 per minute; previous window 50, current 30, 25 % into the window: 67.5 < 100.
    let mut z = Zone::new(
        "swc",
        LimitSpec::parse("100/m,algo=sliding-window").unwrap(),
    )
    .unwrap();
    let w0 = (T0 / 60_000 + 1) * 60_000;
    for _ in 0..50 {
        assert_eq!(z.check(w0 + 1000, b"", 1), Outcome::Admit);
    }
    for _ in 0..30 {
        assert_eq!(z.check(w0 + 60_000, b"", 1), Outcome::Admit);
    }
    // At 25 %: estimate 50 × 0.75 + 30 = 67.5 → 32 more pass (estimate < 100 each time).
    let t = w0 + 60_000 + 15_000;
    let passed = (0..100)
        .filter(|_| z.check(t, b"", 1) == Outcome::Admit)
        .count();
    assert_eq!(passed, 33); // 67.5, 68.5, … 99.5 < 100: 33 values
}

#[test]
fn exemptions_cover_own_traffic_not_forgeries() {
    // Seed 004: a per-IP limit of 300/min hits the service's own edge; requests with the
    // real internal credential (identified) are exempt, forged ones are counted.
    let mut p = Policy::from_spec("3/min,key=ip").unwrap();
    p.set_exempt(Exempt {
        identified: true,
        cidr: vec!["10.0.0.0/8".parse().unwrap()],
        ..Default::default()
    });
    // from_spec's rule matches everything; exemptions are policy-wide.
    let mut r = Replay::new(vec![p]);
    let mut own = req(0, "192.0.2.50");
    own.identified = true;
    let forged = req(0, "192.0.2.50"); // claims the credential, not identified
    let internal = req(0, "10.1.2.3");
    for _ in 0..10 {
        assert_eq!(r.decide(&own)[0].decision, Decision::Exempt);
        assert_eq!(r.decide(&internal)[0].decision, Decision::Exempt);
    }
    let d: Vec<Decision> = (0..5).map(|_| r.decide(&forged)[0].decision).collect();
    assert_eq!(d.iter().filter(|d| **d == Decision::Refuse).count(), 2);
    let c = r.counters()[0];
    assert_eq!((c.exempt, c.admitted, c.refused, c.in_scope), (20, 3, 2, 5));
}

#[test]
fn cost_bucket_charges_server_time() {
    // Seed 000 [C]: 2 heavy queries a second, 500 ms each. A 5 req/s bucket passes them
    // all; a cost bucket of 0.3 s server time per second (b = 1 s) passes ~30 %.
    let mut r = Replay::from_specs(&[
        "5/s,algo=token-bucket,burst=10,key=ip",
        "300/s,algo=token-bucket,burst=1000,cost=request-time,key=ip",
    ])
    .unwrap();
    let n = 2 * 3600;
    for i in 0..n {
        let mut q = req(i * 500, "198.51.100.9");
        q.request_time_us = Some(500_000);
        r.decide(&q);
    }
    let c = r.counters();
    assert_eq!(c[0].refused, 0);
    let pass = (c[1].admitted as f64) / n as f64;
    assert!(
        (0.29..=0.31).contains(&pass),
        "cost bucket passed {pass:.3}"
    );
    assert!(r.policies()[1].describe().contains("server time"));
}

#[test]
fn idle_keys_are_forgotten() {
    // 200,000 one-off addresses over ~3 hours under every keyed algorithm: the state
    // stays near the number of keys live in one horizon, not the number ever seen.
    let specs = [
        "5/s,algo=token-bucket,burst=10,key=ip",
        "5/s,algo=gcra,burst=10,key=ip",
        "10/m,key=ip",
        "10/m,algo=caddy,key=ip",
        "10/m,algo=fixed-window,key=ip",
        "10/m,algo=sliding-window,key=ip",
        "5/s,algo=leaky-queue,queue=3,key=ip",
        "5r/s,algo=nginx,burst=10,key=ip",
    ];
    let mut r = Replay::from_specs(&specs).unwrap();
    for i in 0..200_000u32 {
        let q = Request {
            arrival_ms: T0 + i64::from(i) * 50,
            ip: Some(std::net::Ipv4Addr::from(0x0a00_0000 + i).into()),
            ..Default::default()
        };
        r.decide(&q);
    }
    for (p, spec) in r.policies().iter().zip(specs) {
        let z = &p.zones()[0];
        // One key per 50 ms: a 1-minute horizon holds ~1,200 keys (sweeps at 2×).
        assert!(z.peak_keys() < 10_000, "{spec}: peak {}", z.peak_keys());
        assert!(z.live_keys() < 10_000, "{spec}: live {}", z.live_keys());
    }
}

#[test]
fn eviction_never_changes_a_decision() {
    // The same traffic through a keyed zone and through per-key zones that never evict
    // (one zone per key, site-wide slot): identical decisions.
    let mut rng = 0x1234_5678_u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for spec in [
        "3/s,algo=token-bucket,burst=4",
        "3/s,algo=gcra,burst=4",
        "4/2s",
        "4/2s,algo=caddy",
        "4/2s,algo=fixed-window",
        "4/2s,algo=sliding-window",
        "3/s,algo=leaky-queue,queue=2",
        "3r/s,algo=nginx,burst=4",
    ] {
        let s = LimitSpec::parse(spec).unwrap();
        let mut keyed = Zone::new("k", s.clone()).unwrap();
        let mut per_key: Vec<Zone> = (0..20)
            .map(|_| Zone::new("s", s.clone()).unwrap())
            .collect();
        let mut t = T0;
        for _ in 0..60_000 {
            t += (next() % 400) as i64;
            let k = (next() % 20) as usize;
            let key = [7u8, k as u8];
            assert_eq!(
                keyed.check(t, &key, 1),
                per_key[k].check(t, b"", 1),
                "{spec}"
            );
        }
    }
}

#[test]
fn fixtures_load_and_describe() {
    let oracle = Policy::from_toml_file(format!("{FIXTURES}/nginx-oracle.toml")).unwrap();
    assert_eq!(oracle.zones().len(), 8);
    assert_eq!(oracle.rules().len(), 8);
    let d = oracle.describe();
    assert!(
        d.contains(
            "rule /dual/ [path ^/dual/]: dualip burst=8 nodelay + dualsite burst=20 nodelay"
        ),
        "{d}"
    );
    assert!(
        d.contains("rule /static/ [path ^/static/]: not limited"),
        "{d}"
    );
    assert!(
        d.contains("rule /twostage/ [path ^/twostage/]: twostage burst=12 delay=4"),
        "{d}"
    );

    assert!(
        d.contains("zone perip: nginx limit_req_zone: rate 5 requests per second"),
        "{d}"
    );
    let caddy = Policy::from_toml_file(format!("{FIXTURES}/femiwiki-caddy.toml")).unwrap();
    assert_eq!(caddy.zones().len(), 10);
    assert_eq!(caddy.dialect(), Dialect::Caddy);
    let heavy = Policy::from_toml_file(format!("{FIXTURES}/wiki-heavy-cap.toml")).unwrap();
    assert!(heavy.describe().contains("1,600"), "{}", heavy.describe());
}

#[test]
fn femiwiki_zones_route_requests() {
    let mut r = Replay::new(vec![
        Policy::from_toml_file(format!("{FIXTURES}/femiwiki-caddy.toml")).unwrap(),
    ]);
    let p = &r.policies()[0];
    let zone_name = |v: Option<u16>| v.map(|z| p.zones()[z as usize].name().to_string());
    let _ = zone_name;
    // 31 anonymous searches from one /24 in a minute: the 31st is refused by search_per_ip.
    let mut last = None;
    for i in 0..31 {
        let q = Request {
            query: Some(b"search=foo&title=Special:Search"),
            user_agent: Some(b"Mozilla/5.0 (iPhone)"),
            ..req(i * 1000, &format!("203.0.113.{}", i % 250))
        };
        last = Some(r.decide(&q)[0]);
    }
    let v = last.unwrap();
    assert_eq!(v.decision, Decision::Refuse);
    let p = &r.policies()[0];
    assert_eq!(p.zones()[v.zone.unwrap() as usize].name(), "search_per_ip");
    // A crawler not on the allow-list gets 10 per 10 minutes (crawlers_lean, keyed by agent).
    let mut refused = 0;
    for i in 0..20 {
        let q = Request {
            user_agent: Some(b"SomeCrawler/1.0"),
            ..req(100_000 + i, &format!("198.51.100.{i}"))
        };
        refused += usize::from(r.decide(&q)[0].decision == Decision::Refuse);
    }
    assert_eq!(refused, 10);
    // Identified users are not in the anonymous zones.
    let q = Request {
        identified: true,
        query: Some(b"oldid=5"),
        user_agent: Some(b"Mozilla/5.0"),
        ..req(200_000, "192.0.2.1")
    };
    assert_eq!(r.decide(&q)[0].decision, Decision::OutOfScope);
}

#[test]
fn config_errors_are_clear() {
    let bad = [
        ("[[zones]]\nname='a'\n", "give `rate"),
        (
            "[[zones]]\nname='a'\nrate='5r/s'\nalgo='magic'\n",
            "unknown algorithm `magic`",
        ),
        (
            "[[zones]]\nname='a'\nrate='5r/s'\n[[rules]]\nzone='b'\n",
            "no zone named `b`",
        ),
        (
            "[[zones]]\nname='a'\nrate='5r/s'\nalgo='sliding-log'\n[[rules]]\nlimits=[{zone='a',burst=3}]\n",
            "not an nginx zone",
        ),
        ("dialect='haproxy'\n", "unknown dialect"),
        (
            "[[zones]]\nname='a'\nrate='5r/s'\nkey='colour'\n",
            "unknown key `colour`",
        ),
        ("[[rules]]\nmatch={ path_regex='(' }\n", "path_regex"),
        ("[exempt]\ncidr=['10.0.0.0/33']\n", "not an address or CIDR"),
        (
            "[[zones]]\nname='a'\nrate='5r/s'\nburstt=3\n",
            "unknown field",
        ),
        ("[[zones]]\nname='a'\nspec='5r/s,burst=x'\n", "For example"),
    ];
    for (text, want) in bad {
        let e = Policy::from_toml(text).err().expect(text).to_string();
        assert!(e.contains(want), "{text:?} → {e}");
    }
}

#[test]
fn replay_order_rebuilds_nginx_order() {
    // Same decision ms: served-at-once lines, then delayed (shortest first), then refused.
    let mut keys = [
        ReplayOrder::new(100, 0, true, 1),
        ReplayOrder::new(100, 400, false, 2),
        ReplayOrder::new(100, 0, false, 3),
        ReplayOrder::new(100, 200, false, 4),
        ReplayOrder::new(99, 0, true, 5),
    ];
    keys.sort();
    let seq: Vec<u64> = keys.iter().map(|k| k.seq).collect();
    assert_eq!(seq, vec![5, 3, 4, 2, 1]);
}

#[test]
fn every_algorithm_describes_itself() {
    for a in [
        Algorithm::SlidingLog,
        Algorithm::Nginx,
        Algorithm::Caddy,
        Algorithm::TokenBucket,
        Algorithm::Gcra,
        Algorithm::FixedWindow,
        Algorithm::SlidingWindow,
        Algorithm::LeakyQueue,
    ] {
        let s = LimitSpec::new(a, Rate::parse("30/m").unwrap());
        let d = s.describe();
        assert!(
            d.contains("30 requests per minute")
                || d.contains("30 per minute")
                || d.contains("30 requests in any minute")
                || d.contains("events 30"),
            "{a}: {d}"
        );
        assert_eq!(LimitSpec::parse(&s.to_string()).unwrap(), s);
    }
}
