//! Waiting under each candidate (`replay --workers C`): the requests each candidate
//! admits — and, as the baseline `none`, every request — go through a FIFO queue of C
//! workers, in decision-time order, each taking its *service time*; the wait is the time
//! from its arrival to a free worker.
//!
//! The logged request time is service plus the queueing of the logged backend. Where it
//! is logged, the service time is separated by replaying the log itself through the same
//! C workers: a request starts when it arrives or when the earliest of the C requests in
//! service completes (arrival + logged request time), whichever is later, and its service
//! is its completion minus that start. Exact when the backend was a FIFO of C workers and
//! the log has sub-second times; a completion before its start (the backend had more
//! workers, or not FIFO) keeps the logged time and is counted. Requests that failed (5xx,
//! 499: never served) or carry no time take the mean service so far of their class and
//! kind (heavy or not), counted as estimated.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::Serialize;

use super::rows::Who;
use crate::quantile::Histogram;

/// C workers taking requests in arrival order.
#[derive(Clone, Debug)]
struct Workers {
    free: BinaryHeap<Reverse<i64>>,
}

impl Workers {
    fn new(c: usize) -> Workers {
        Workers {
            free: (0..c.max(1)).map(|_| Reverse(i64::MIN)).collect(),
        }
    }

    /// Serves a request arriving at `at` (µs) for `service` µs: its wait.
    fn serve(&mut self, at: i64, service: u64) -> u64 {
        let Reverse(f) = self.free.pop().expect("at least one worker");
        let start = f.max(at);
        self.free.push(Reverse(start.saturating_add(us(service))));
        start.abs_diff(at)
    }
}

/// Waits and busy time per class (and in all) under one candidate.
#[derive(Clone, Debug)]
struct Queue {
    workers: Workers,
    waits: [Histogram; 6],
    busy_us: [u64; 6],
}

impl Queue {
    fn new(c: usize) -> Queue {
        Queue {
            workers: Workers::new(c),
            waits: Default::default(),
            busy_us: [0; 6],
        }
    }

    fn add(&mut self, at: i64, service: u64, who: Who) {
        let wait = self.workers.serve(at, service);
        for k in [who.index(), 5] {
            self.waits[k].add(wait);
            self.busy_us[k] = self.busy_us[k].saturating_add(service);
        }
    }

    fn wait(&self, c: usize, span_us: u64) -> Wait {
        let denom = (c.max(1) as f64) * span_us.max(1) as f64;
        let entry = |k: usize| ClassWait {
            p50_ms: self.waits[k].quantile_ms(0.5),
            p95_ms: self.waits[k].quantile_ms(0.95),
            utilisation: round4(self.busy_us[k] as f64 / denom),
            requests: self.waits[k].len(),
        };
        Wait {
            all: entry(5),
            classes: Who::ALL
                .iter()
                .map(|w| (w.key(), entry(w.index())))
                .collect(),
        }
    }
}

/// µs as a signed offset, saturated (a request time read from a log can be absurd).
fn us(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn round4(v: f64) -> f64 {
    (v * 10_000.0).round() / 10_000.0
}

/// One class's waiting under a candidate.
#[derive(Clone, Debug, Serialize)]
pub struct ClassWait {
    /// Median wait for a worker, ms.
    pub p50_ms: Option<f64>,
    /// 95th percentile wait, ms.
    pub p95_ms: Option<f64>,
    /// The class's service time over the workers' time: its share of ρ.
    pub utilisation: f64,
    /// Requests admitted.
    pub requests: u64,
}

/// Waiting under one candidate: `all` and one entry per class (JSON: an object with
/// the keys `all`, `internal`, `identified`, `declared-bot`, `browser`, `other`).
#[derive(Clone, Debug)]
pub struct Wait {
    /// Every admitted request.
    pub all: ClassWait,
    /// Per class, by its key, in report order.
    pub classes: Vec<(&'static str, ClassWait)>,
}

impl Serialize for Wait {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(1 + self.classes.len()))?;
        m.serialize_entry("all", &self.all)?;
        for (k, v) in &self.classes {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// The queue replay's settings and what it assumed.
#[derive(Clone, Debug, Serialize)]
pub struct Waiting {
    /// Workers.
    pub workers: usize,
    /// Requests whose service time was separated from the logged request time.
    pub service_exact: u64,
    /// Requests whose service time was estimated (no time, failed, or inconsistent).
    pub service_estimated: u64,
    /// The baseline: every request admitted.
    pub baseline: NamedWait,
    /// ρ/(1−ρ), the M/M/1 waiting factor, at 50%, 80%, 90%, 95% and 98% utilisation.
    pub factors: Vec<Factor>,
}

/// The baseline's waits, named `none`.
#[derive(Clone, Debug, Serialize)]
pub struct NamedWait {
    /// `none`.
    pub name: String,
    /// Its waits.
    pub wait: Wait,
}

/// One row of the waiting-factor table.
#[derive(Clone, Debug, Serialize)]
pub struct Factor {
    /// ρ.
    pub utilisation: f64,
    /// ρ/(1−ρ).
    pub factor: f64,
    /// The factor over the factor at 50% (1.0).
    pub times_50: f64,
}

/// The factor table of seed 000's arithmetic.
pub fn factors() -> Vec<Factor> {
    [0.5, 0.8, 0.9, 0.95, 0.98]
        .into_iter()
        .map(|r: f64| {
            let f = r / (1.0 - r);
            Factor {
                utilisation: r,
                factor: round4(f),
                times_50: round4(f / 1.0),
            }
        })
        .collect()
}

/// Gathers the waits of every candidate and of the baseline.
#[derive(Clone, Debug)]
pub(super) struct WaitAcc {
    c: usize,
    logged: Workers,
    /// Mean service so far per class and heavy or not: the estimate for a request
    /// without a usable time.
    mean: [(u64, u64); 10],
    exact: u64,
    estimated: u64,
    baseline: Queue,
    cands: Vec<Queue>,
    first_us: Option<i64>,
    last_us: i64,
}

impl WaitAcc {
    pub(super) fn new(c: usize, candidates: usize) -> WaitAcc {
        WaitAcc {
            c,
            logged: Workers::new(c),
            mean: [(0, 0); 10],
            exact: 0,
            estimated: 0,
            baseline: Queue::new(c),
            cands: vec![Queue::new(c); candidates],
            first_us: None,
            last_us: 0,
        }
    }

    /// The service time of a request arriving at `at` (µs), from its logged request time;
    /// called once per request, in decision-time order.
    pub(super) fn service(
        &mut self,
        at: i64,
        rt_us: Option<u64>,
        failed: bool,
        who: Who,
        heavy: bool,
    ) -> u64 {
        let kind = who.index() * 2 + usize::from(heavy);
        if let (Some(rt), false) = (rt_us, failed) {
            let done = at.saturating_add(us(rt));
            let Reverse(f) = self.logged.free.pop().expect("at least one worker");
            let start = f.max(at);
            self.logged.free.push(Reverse(done.max(start)));
            let s = if done >= start {
                self.exact += 1;
                done.abs_diff(start)
            } else {
                self.estimated += 1;
                rt
            };
            let m = &mut self.mean[kind];
            m.0 = m.0.saturating_add(s);
            m.1 += 1;
            return s;
        }
        self.estimated += 1;
        let (sum, n) = self.mean[kind];
        sum.checked_div(n).unwrap_or(0)
    }

    /// One request in decision-time order, of service time `s` (from
    /// [`WaitAcc::service`]): its class, and per candidate whether it was admitted.
    pub(super) fn add(
        &mut self,
        arrival_ms: i64,
        s: u64,
        who: Who,
        admitted: impl Iterator<Item = bool>,
    ) {
        let at = arrival_ms.saturating_mul(1000);
        self.first_us.get_or_insert(at);
        self.last_us = at;
        self.baseline.add(at, s, who);
        for (q, ok) in self.cands.iter_mut().zip(admitted) {
            if ok {
                q.add(at, s, who);
            }
        }
    }

    /// The baseline's and each candidate's waits.
    pub(super) fn finish(&self) -> (Waiting, Vec<Wait>) {
        let span = self
            .last_us
            .abs_diff(self.first_us.unwrap_or(self.last_us))
            .max(1_000);
        let waiting = Waiting {
            workers: self.c,
            service_exact: self.exact,
            service_estimated: self.estimated,
            baseline: NamedWait {
                name: "none".into(),
                wait: self.baseline.wait(self.c, span),
            },
            factors: factors(),
        };
        let cands = self.cands.iter().map(|q| q.wait(self.c, span)).collect();
        (waiting, cands)
    }
}

/// `1.2 ms`, `340 ms`, `3.4 s`, `-`.
fn ms_text(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(ms) if ms >= 1000.0 => format!("{:.1} s", ms / 1000.0),
        Some(ms) if ms >= 10.0 => format!("{ms:.0} ms"),
        Some(ms) => format!("{ms:.1} ms"),
    }
}

/// The tables of the queue replay: per candidate (and `none`), ρ and the waits in all
/// and per class; then ρ/(1−ρ) at the utilisations of seed 000's arithmetic.
pub(super) fn sections(
    waiting: &Waiting,
    cands: &[(String, &Wait)],
) -> Vec<crate::forensics::doc::Section> {
    use crate::forensics::doc::Section;
    use crate::table::{Align, Cell, Table};
    let base = &waiting.baseline.wait;
    // Classes with requests, in report order.
    let shown: Vec<&'static str> = base
        .classes
        .iter()
        .filter(|(_, c)| c.requests > 0)
        .map(|(k, _)| *k)
        .collect();
    let mut head: Vec<(String, Align)> = vec![
        ("candidate".into(), Align::Left),
        ("ρ".into(), Align::Right),
        ("wait p50".into(), Align::Right),
        ("p95".into(), Align::Right),
    ];
    head.extend(shown.iter().map(|k| (format!("{k} p95"), Align::Right)));
    let head_refs: Vec<(&str, Align)> = head.iter().map(|(s, a)| (s.as_str(), *a)).collect();
    let mut t = Table::new(&head_refs);
    let all = std::iter::once((waiting.baseline.name.clone(), base))
        .chain(cands.iter().map(|(n, w)| (n.clone(), *w)));
    for (name, w) in all {
        let mut row = vec![
            Cell::from(name),
            Cell::from(format!("{:.0}%", 100.0 * w.all.utilisation)),
            Cell::from(ms_text(w.all.p50_ms)),
            Cell::from(ms_text(w.all.p95_ms)),
        ];
        for k in &shown {
            let c = w.classes.iter().find(|(n, _)| n == k).map(|(_, c)| c);
            row.push(Cell::from(ms_text(c.and_then(|c| c.p95_ms))));
        }
        t.row(row);
    }
    let total = waiting.service_exact + waiting.service_estimated;
    let mut notes = vec![format!(
        "{} workers, FIFO; ρ: service time over the workers' time; wait: arrival to a free worker; none: every request admitted",
        waiting.workers
    )];
    notes.push(format!(
        "service times: {} of {} separated from the logged request time (the same {} workers replayed on the log), {} estimated (no time, failed, or a completion before its start)",
        crate::number::thousands(waiting.service_exact),
        crate::number::thousands(total),
        waiting.workers,
        crate::number::thousands(waiting.service_estimated)
    ));
    let mut f = Table::new(&[
        ("utilisation ρ", Align::Right),
        ("ρ/(1−ρ)", Align::Right),
        ("× the wait at 50%", Align::Right),
    ]);
    for r in &waiting.factors {
        f.row([
            Cell::from(format!("{:.0}%", 100.0 * r.utilisation)),
            Cell::from(format!("{:.1}", r.factor)),
            Cell::from(format!("{:.0}×", r.times_50)),
        ]);
    }
    vec![
        Section {
            title: Some(format!("Waiting for {} workers", waiting.workers)),
            table: Some(t),
            notes,
        },
        Section {
            title: Some("How waiting grows with utilisation".into()),
            table: Some(f),
            notes: vec![
                "ρ/(1−ρ): a single queue's mean wait in units of the mean service time (M/M/1); the measured waits above are the replay's".into(),
            ],
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_worker_queues_back_to_back_arrivals() {
        let mut w = Workers::new(1);
        assert_eq!(w.serve(0, 500), 0);
        assert_eq!(w.serve(100, 500), 400);
        assert_eq!(w.serve(2000, 500), 0);
        let mut two = Workers::new(2);
        assert_eq!(two.serve(0, 500), 0);
        assert_eq!(two.serve(0, 500), 0);
        assert_eq!(two.serve(0, 500), 500);
    }

    /// A log of one worker: the logged times hold the queueing; the service times come
    /// back exactly.
    #[test]
    fn service_is_separated_from_the_logged_queueing() {
        let mut acc = WaitAcc::new(1, 0);
        // Three requests at 0, 10 and 20 ms, each 100 ms of service: logged 100, 190, 280.
        for (a, rt) in [(0i64, 100_000u64), (10, 190_000), (20, 280_000)] {
            let s = acc.service(a * 1000, Some(rt), false, Who::Browser, true);
            assert_eq!(s, 100_000);
        }
        assert_eq!((acc.exact, acc.estimated), (3, 0));
        // A failed request takes the mean so far.
        assert_eq!(
            acc.service(30_000, Some(5_000_000), true, Who::Browser, true),
            100_000
        );
    }

    #[test]
    fn the_factor_table_is_seed_000s() {
        let f = factors();
        assert_eq!(f[0].factor, 1.0);
        assert_eq!(f[4].factor, 49.0);
    }
}
