//! `logscope capacity` against a simulated backend of known capacity: C workers, a FIFO
//! queue with a backlog and a timeout, service times per request class, offered a load
//! that ramps past the capacity. Its log (nginx `$msec … $request_time`, written in
//! completion order as nginx writes it) goes through the binary; the estimate must find
//! the capacity the simulation was built with.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt::Write as _;
use std::path::Path;

use super::common::{Rng, logscope, ok_json};

/// A backend: `workers` in parallel, at most `backlog` waiting, a request waiting longer
/// than `timeout_ms` answered 504 by the proxy in front, one refused when the backlog is
/// full answered 503 at once.
struct Backend {
    workers: usize,
    backlog: usize,
    timeout_ms: u64,
}

/// One logged request: arrival, completion (ms), status, heavy or not.
struct Logged {
    arrival: u64,
    service: u64,
    done: u64,
    status: u16,
    heavy: bool,
}

impl Backend {
    /// Serves `arrivals` (ms, sorted; heavy flag; service time ms) in FIFO order.
    fn serve(&self, arrivals: &[(u64, bool, u64)]) -> Vec<Logged> {
        let mut free: BinaryHeap<Reverse<u64>> = (0..self.workers).map(|_| Reverse(0)).collect();
        // Start times of admitted requests not yet started (FIFO: non-decreasing).
        let mut waiting: VecDeque<u64> = VecDeque::new();
        let mut out = Vec::with_capacity(arrivals.len());
        for &(a, heavy, service) in arrivals {
            while waiting.front().is_some_and(|&s| s <= a) {
                waiting.pop_front();
            }
            if waiting.len() >= self.backlog {
                out.push(Logged {
                    arrival: a,
                    service: 0,
                    done: a,
                    status: 503,
                    heavy,
                });
                continue;
            }
            let Reverse(at) = *free.peek().expect("workers");
            let start = at.max(a);
            if start - a > self.timeout_ms {
                out.push(Logged {
                    arrival: a,
                    service: 0,
                    done: a + self.timeout_ms,
                    status: 504,
                    heavy,
                });
                continue;
            }
            free.pop();
            free.push(Reverse(start + service));
            if start > a {
                waiting.push_back(start);
            }
            out.push(Logged {
                arrival: a,
                service,
                done: start + service,
                status: 200,
                heavy,
            });
        }
        out
    }
}

/// Poisson arrivals, `per_minute(m)` heavy requests in minute `m` over `minutes`, plus
/// a steady light load; heavy requests take `heavy_ms` on average, light ones 10 ms.
fn arrivals(
    rng: &mut Rng,
    minutes: u64,
    light_per_minute: u64,
    per_minute: impl Fn(u64) -> u64,
    heavy_ms: u64,
) -> Vec<(u64, bool, u64)> {
    let mut out = Vec::new();
    for m in 0..minutes {
        for (n, heavy) in [(per_minute(m), true), (light_per_minute, false)] {
            for _ in 0..n {
                let t = m * 60_000 + rng.below(60_000);
                // Service time uniform in [mean/2, 3·mean/2].
                let mean = if heavy { heavy_ms } else { 10 };
                let s = mean / 2 + rng.below(mean + 1);
                out.push((t, heavy, s));
            }
        }
    }
    out.sort();
    out
}

/// The log, in completion order (returned: the requests in the order of its lines): `$remote_addr $msec [$time_local] "$request" $status
/// $body_bytes_sent "$http_referer" "$http_user_agent" $request_time`.
fn write_log<'a>(path: &Path, served: &'a [Logged]) -> Vec<&'a Logged> {
    const T0: u64 = 1_789_999_980_000; // 2026-09-21T14:13:00Z
    let mut order: Vec<&Logged> = served.iter().collect();
    order.sort_by_key(|l| (l.done, l.arrival));
    let mut s = String::new();
    for (i, l) in order.iter().enumerate() {
        let done = T0 + l.done;
        let secs = done / 1000;
        let local = chrono::DateTime::from_timestamp(secs as i64, 0)
            .unwrap()
            .format("%d/%b/%Y:%H:%M:%S +0000");
        let path = if l.heavy {
            "/w/index.php?title=Main_Page&diff=12345&oldid=12344"
        } else {
            "/wiki/Main_Page"
        };
        let rt = l.done - l.arrival;
        // The heavy requests come from one crawler, the light ones from many people.
        let (ip, agent) = if l.heavy {
            (
                "203.0.113.9".to_string(),
                "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
            )
        } else {
            (
                format!("10.0.{}.{}", (i / 250) % 250, i % 250 + 1),
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36",
            )
        };
        writeln!(
            s,
            "{ip} {secs}.{:03} [{local}] \"GET {path} HTTP/1.1\" {} 512 \"-\" \"{agent}\" {}.{:03}",
            done % 1000,
            l.status,
            rt / 1000,
            rt % 1000
        )
        .unwrap();
    }
    std::fs::write(path, s).unwrap();
    order
}

fn capacity_json(log: &Path, extra: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    ok_json(
        logscope(&dir.path().join("data"))
            .args(["capacity", "--by", "1m", "--format", "json"])
            .args(extra)
            .arg(log),
    )
}

fn num(v: &serde_json::Value, k: &str) -> Option<f64> {
    v["capacity"][k].as_f64()
}

#[test]
fn a_storm_ramping_past_a_known_capacity_is_held_then_stalls_at_it() {
    // 2 workers, heavy requests of 200 ms on average: 600 heavy a minute saturate them
    // (light ones take 10 ms each, 60 a minute: 1% of the time).
    let backend = Backend {
        workers: 2,
        backlog: 40,
        timeout_ms: 10_000,
    };
    let capacity = 2.0 * 60_000.0 / 200.0; // 600 heavy requests a minute
    let mut rng = Rng(0x5eed_cafe_f00d_1234);
    // A quiet half hour, then a storm ramping by 20 a minute from 300 to 900.
    let ramp = |m: u64| if m < 30 { 150 } else { 300 + 20 * (m - 30) };
    let load = arrivals(&mut rng, 60, 60, ramp, 200);
    let served = backend.serve(&load);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("storm.log");
    write_log(&log, &served);

    let v = capacity_json(&log, &["--scope", "heavy"]);
    assert_eq!(v["capacity"]["reached"], true, "{v:#}");
    assert_eq!(v["capacity"]["window"], "1m");
    assert_eq!(v["capacity"]["scope"], "heavy");
    assert_eq!(v["request_times"], true);
    let held = num(&v, "held_per_window").unwrap();
    let stall = num(&v, "stall_per_window").unwrap();
    let peak = num(&v, "capacity_per_window").unwrap();
    // Held: just under the capacity; the stall just above it; the peak throughput at it.
    assert!(
        (held - capacity).abs() <= 0.10 * capacity,
        "held {held} vs capacity {capacity}"
    );
    assert!(
        stall >= held && (stall - capacity).abs() <= 0.10 * capacity,
        "stall {stall} vs capacity {capacity}"
    );
    assert!(
        (peak - capacity).abs() <= 0.10 * capacity,
        "peak throughput {peak} vs capacity {capacity}"
    );
    // The evidence: every window of the hour, the saturated ones at the end.
    let windows = v["capacity"]["windows"].as_array().unwrap();
    assert!(windows.len() >= 60, "{}", windows.len());
    let first_bad = windows.iter().position(|w| w["saturated"] == true).unwrap();
    assert!(first_bad >= 30, "saturated before the storm: {first_bad}");
    for w in &windows[..30] {
        assert_eq!(w["state"], "healthy", "{w}");
        let c = w["concurrency"].as_f64().unwrap();
        // 150 heavy × 0.2 s + 60 light × 0.01 s over 60 s: about half a worker.
        assert!((0.3..0.8).contains(&c), "{w}");
    }
    // The same log read twice gives the same bytes.
    let again = capacity_json(&log, &["--scope", "heavy"]);
    assert_eq!(v, again);
}

#[test]
fn a_site_that_never_saturated_says_not_reached() {
    let backend = Backend {
        workers: 4,
        backlog: 40,
        timeout_ms: 10_000,
    };
    let mut rng = Rng(42);
    let load = arrivals(&mut rng, 30, 120, |m| 100 + 5 * m, 100);
    let served = backend.serve(&load);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calm.log");
    write_log(&log, &served);
    let v = capacity_json(&log, &[]);
    assert_eq!(v["capacity"]["reached"], false, "{v:#}");
    assert!(v["capacity"]["capacity_per_window"].is_null());
    assert!(v["capacity"]["stall_per_window"].is_null());
    // The highest load it handled fine: the last minute's 245 heavy + 120 light.
    let held = num(&v, "held_per_window").unwrap();
    assert!((330.0..=400.0).contains(&held), "{held}");

    // In text: "not reached", never a capacity.
    let out = logscope(&dir.path().join("data"))
        .args(["capacity", "--by", "1m"])
        .arg(&log)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("capacity not reached"), "{text}");
    assert!(!text.contains("peak throughput"), "{text}");
}

#[test]
fn without_request_times_it_says_what_cannot_be_told() {
    let dir = tempfile::tempdir().unwrap();
    let out = logscope(&dir.path().join("data"))
        .args(["capacity", "--by", "1h", "--format", "json"])
        .arg(super::common::fixture("logs/elastic-apache.log"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["request_times"], false);
    assert_eq!(v["confidence"], "low");
    let reasons = v["reasons"].to_string();
    assert!(reasons.contains("cannot be told"), "{reasons}");
    for w in v["capacity"]["windows"].as_array().unwrap() {
        assert!(w["concurrency"].is_null() && w["p95_ms"].is_null(), "{w}");
    }
}

#[test]
fn bad_flags_exit_2_with_an_example() {
    let dir = tempfile::tempdir().unwrap();
    let out = logscope(&dir.path().join("data"))
        .args(["capacity", "--scope", "people"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--scope"), "{err}");
}

/// Nearest-rank quantile of sorted values.
fn quantile(sorted: &[u64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64
}

/// Waits (ms) of requests taken in arrival order by `c` FIFO workers.
fn fifo_waits(c: usize, mut reqs: Vec<(u64, u64)>) -> Vec<u64> {
    reqs.sort();
    let mut free: BinaryHeap<Reverse<u64>> = (0..c).map(|_| Reverse(0)).collect();
    let mut waits: Vec<u64> = reqs
        .iter()
        .map(|&(a, s)| {
            let Reverse(f) = free.pop().unwrap();
            let start = f.max(a);
            free.push(Reverse(start + s));
            start - a
        })
        .collect();
    waits.sort();
    waits
}

fn close(logscope: f64, truth: f64, what: &str) {
    // Two significant digits in the histogram: within 5%, or a millisecond.
    assert!(
        (logscope - truth).abs() <= 0.05 * truth + 1.0,
        "{what}: logscope {logscope} ms vs independent {truth} ms"
    );
}

#[test]
fn waits_under_each_candidate_match_an_independent_queue() {
    // Two workers, a crawler's heavy requests (400 a minute of ~250 ms) and people's
    // light ones: ρ ≈ 0.9 without a limit. No request fails (a deep backlog, a long
    // timeout), so every service time can be separated from the logged queueing.
    let backend = Backend {
        workers: 2,
        backlog: 100_000,
        timeout_ms: 3_600_000,
    };
    let mut rng = Rng(7);
    let load = arrivals(&mut rng, 20, 600, |_| 400, 250);
    let served = backend.serve(&load);
    assert!(served.iter().all(|l| l.status == 200));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("busy.log");
    let lines = write_log(&log, &served);
    let decisions = dir.path().join("decisions.csv");
    let v: serde_json::Value = ok_json(
        logscope(&dir.path().join("data"))
            .args([
                "replay",
                "--workers",
                "2",
                "--limit",
                "100/1m,key=ip",
                "--format",
                "json",
            ])
            .arg("--decisions")
            .arg(&decisions)
            .arg(&log),
    );
    let w = &v["waiting"];
    assert_eq!(w["workers"], 2);
    assert_eq!(w["service_estimated"], 0, "{w}");
    assert_eq!(w["baseline"]["name"], "none");

    // The baseline: every request, with its true service time.
    let all: Vec<(u64, u64)> = served.iter().map(|l| (l.arrival, l.service)).collect();
    let truth = fifo_waits(2, all.clone());
    let base = &w["baseline"]["wait"]["all"];
    close(
        base["p50_ms"].as_f64().unwrap(),
        quantile(&truth, 0.5),
        "none p50",
    );
    close(
        base["p95_ms"].as_f64().unwrap(),
        quantile(&truth, 0.95),
        "none p95",
    );
    let busy: u64 = all.iter().map(|r| r.1).sum();
    let span = all.iter().map(|r| r.0).max().unwrap() - all.iter().map(|r| r.0).min().unwrap();
    let rho = busy as f64 / (2.0 * span as f64);
    assert!(
        (base["utilisation"].as_f64().unwrap() - rho).abs() < 0.01,
        "{base} vs {rho}"
    );
    assert!(rho > 0.8, "{rho}");

    // The candidate: the requests it did not refuse, by line.
    let csv = std::fs::read_to_string(&decisions).unwrap();
    let refused: std::collections::HashSet<usize> = csv
        .lines()
        .skip(1)
        .filter(|l| l.contains(",refuse,"))
        .map(|l| l.split(',').nth(1).unwrap().parse::<usize>().unwrap())
        .collect();
    assert!(!refused.is_empty());
    let admitted: Vec<(u64, u64)> = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| !refused.contains(&(i + 1)))
        .map(|(_, l)| (l.arrival, l.service))
        .collect();
    let truth = fifo_waits(2, admitted);
    let cand = &v["candidates"][0]["wait"];
    close(
        cand["all"]["p50_ms"].as_f64().unwrap(),
        quantile(&truth, 0.5),
        "candidate p50",
    );
    close(
        cand["all"]["p95_ms"].as_f64().unwrap(),
        quantile(&truth, 0.95),
        "candidate p95",
    );
    // The limit takes the crawler down to 100 a minute: people wait far less.
    let people = |w: &serde_json::Value| w["browser"]["p95_ms"].as_f64().unwrap();
    let (before, after) = (people(&w["baseline"]["wait"]), people(cand));
    assert!(
        after * 3.0 < before,
        "people's p95 {after} ms vs {before} ms"
    );
    assert!(cand["declared-bot"]["requests"].as_u64().unwrap() < 100 * 21);
    for k in ["internal", "identified", "declared-bot", "browser", "other"] {
        assert!(cand[k]["utilisation"].is_number(), "{k}: {cand}");
    }
    // ρ/(1−ρ) at 98% is 49.
    assert_eq!(w["factors"][4]["factor"], 49.0);
}

/// Seed 000: one worker; people at 40 light requests a second (5 ms each), a crawler
/// sending 2 heavy queries a second of ~500 ms. A count limit of 5 a second passes the
/// crawler and people wait seconds; a cost bucket charged in server time passes about 30%
/// of the crawler and every person, and brings their median wait to tens of ms — once
/// the service time is separated from the logged queueing (`--workers 1`). Charging the
/// logged request time instead refuses the people too.
#[test]
fn a_cost_bucket_in_server_time_brings_peoples_waits_back() {
    let backend = Backend {
        workers: 1,
        backlog: 100,
        timeout_ms: 30_000,
    };
    let mut rng = Rng(0x5eed_0000);
    let load = arrivals(&mut rng, 10, 40 * 60, |_| 2 * 60, 500)
        .into_iter()
        .map(|(a, heavy, s)| (a, heavy, if heavy { 450 + s % 101 } else { 3 + s % 5 }))
        .collect::<Vec<_>>();
    let served = backend.serve(&load);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("seed000.log");
    write_log(&log, &served);
    let cost = "300/1s,cost=request-time,burst=1000,key=ip,algo=token-bucket";
    let run = |extra: &[&str]| -> serde_json::Value {
        ok_json(
            logscope(&dir.path().join("data"))
                .args([
                    "replay",
                    "--format",
                    "json",
                    "--limit",
                    "5/s,key=ip",
                    "--limit",
                    cost,
                ])
                .args(extra)
                .arg(&log),
        )
    };
    let class = |c: &serde_json::Value, k: &str| -> (u64, u64) {
        let row = c["classes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["class"] == k)
            .unwrap_or_else(|| panic!("{k}: {c}"))
            .clone();
        (
            row["refused"].as_u64().unwrap(),
            row["covered"].as_u64().unwrap(),
        )
    };

    let v = run(&["--workers", "1"]);
    let (count, bucket) = (&v["candidates"][0], &v["candidates"][1]);
    let people_p50 = |c: &serde_json::Value| c["wait"]["browser"]["p50_ms"].as_f64().unwrap();
    // The count limit passes the crawler: the worker is saturated, people wait seconds.
    let (refused, covered) = class(count, "declared-bot");
    assert!(refused * 10 < covered, "{count}");
    assert!(people_p50(count) > 1_000.0, "{}", count["wait"]);
    // The cost bucket passes about 30% of the crawler and every person.
    let (refused, covered) = class(bucket, "declared-bot");
    let passed = 1.0 - refused as f64 / covered as f64;
    eprintln!(
        "crawler passed {passed}, people's p50 {} ms",
        people_p50(bucket)
    );
    assert!((0.2..0.4).contains(&passed), "crawler passed {passed}");
    assert_eq!(class(bucket, "browser").0, 0, "{bucket}");
    assert!(people_p50(bucket) < 100.0, "{}", bucket["wait"]);
    assert!(
        v["warnings"]
            .to_string()
            .contains("charges the service time"),
        "{}",
        v["warnings"]
    );

    // Charged the logged request time (queueing included), the bucket refuses people.
    let v = run(&[]);
    let (refused, covered) = class(&v["candidates"][1], "browser");
    assert!(
        refused * 2 > covered,
        "people refused {refused} of {covered}"
    );
    assert!(v["warnings"].to_string().contains("give --workers C"));
}

/// Absurd values a log can carry — a request time of 300 years, a stamp in 1970 next to
/// one in 2099 — go through `capacity`, `--workers` and `--sweep` without a panic, and
/// the windows between them are one silent row, not one row per window.
#[test]
fn absurd_times_and_request_times_neither_panic_nor_grow() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("absurd.log");
    std::fs::write(
        &log,
        "10.0.0.1 - - [01/Jan/1970:00:00:01 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"curl/8\" 9999999999.999\n\
         10.0.0.2 - - [31/Dec/2099:23:59:59 +0000] \"GET / HTTP/1.1\" 503 5 \"-\" \"curl/8\" 0.001\n\
         10.0.0.2 - - [31/Dec/2099:23:59:59 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"curl/8\" 9999999999.999\n",
    )
    .unwrap();
    let v = super::common::report_json_without_origin(
        {
            let mut c = logscope(&dir.path().join("data"));
            c.args(["capacity", "--by", "1m", "--format", "json"])
                .args(["--input-format", "combined-rt"])
                .arg(&log);
            c
        },
        "capacity",
    );
    let windows = v["capacity"]["windows"].as_array().unwrap();
    assert!(windows.len() < 10, "{}", windows.len());
    assert!(
        windows
            .iter()
            .any(|w| w["silent_windows"].as_u64() > Some(1_000_000))
    );
    let v: serde_json::Value = ok_json(
        logscope(&dir.path().join("data"))
            .args([
                "replay",
                "--workers",
                "2",
                "--sweep",
                "1..3/1m",
                "--format",
                "json",
            ])
            .args(["--input-format", "combined-rt"])
            .arg(&log),
    );
    assert_eq!(v["sweep"]["rows"].as_array().unwrap().len(), 3);
    assert!(v["waiting"]["baseline"]["wait"]["all"]["p95_ms"].is_number());
}
