//! The live view of `logscope watch`, composed of the reports: frames over the dataset (or log files), the alert
//! rules evaluated on them, the `--on-alert` commands, the backtest of the rules over a
//! past period, and the live loop (with a follow of the logs into the dataset on a
//! thread of its own).
//!
//! A frame is built from the reports the batch commands use, over the same rows: the
//! per-minute series ([`super::watch::Series`]) over the last `--span`, then
//! `top --by prefix|agent|asn` and each candidate's `replay` over the window, and the
//! capacity report's estimate. Its clock is the latest row's, never the wall clock.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use logscope_core::duration::Duration;
use std::collections::HashMap;

use logscope_core::classify::ClientKey;
use logscope_core::forensics::alert::{Crossing, Metric, Rule, Shares, State};
use logscope_core::forensics::capacity::Scope;
use logscope_core::forensics::live::{
    AlertLine, Frame, LimitLine, Load, MINUTE_MS, Point, TopLine, minute_of,
};
use logscope_core::forensics::top::{TopBy, TopReport, TopSort};
use logscope_core::rate::Rate;
use logscope_core::replay::Policy;
use logscope_core::replay::report::{DecisionsWriter, InternalMarks, ReportOptions, SpillOptions};

use super::capacity::Capacity;
use super::top::Top;
use super::watch::{PerMinute, Series};
use crate::engine::clock::Clock;
use crate::engine::error::exit;
use crate::engine::follow::{self, FollowJob};
use crate::engine::replay::{ReplayJob, replay};
use crate::engine::report;
use crate::engine::rows::{RowSource, RowStats};
use crate::engine::selection::Selection;
use crate::store::{Dataset, TABLE};

/// Builds the selection of the command's flags, once per pass.
pub type MakeSelection<'a> = &'a dyn Fn() -> anyhow::Result<Selection>;

/// What a frame shows and which alerts it evaluates.
#[derive(Clone, Debug)]
pub struct WatchJob {
    /// The window of the top lists, limits and share alerts, in minutes.
    pub window: u64,
    /// Minutes of the series.
    pub span: u64,
    /// Values per top list.
    pub top: usize,
    /// The capacity given (`--capacity`), else estimated.
    pub capacity: Option<Rate>,
    /// Candidate limits (`--limit` specs), replayed over the window.
    pub limits: Vec<String>,
    /// Alert rules.
    pub alerts: Vec<Rule>,
    /// A shell command run at each crossing, the figures in its environment.
    pub on_alert: Option<String>,
}

/// An alert that crossed.
#[derive(Clone, Debug, PartialEq)]
pub struct Alerted {
    /// The rule as given.
    pub rule: String,
    /// Fired or resolved.
    pub crossing: Crossing,
    /// The value (a count, or a share 0–1).
    pub value: f64,
    /// The threshold (same unit).
    pub threshold: f64,
    /// The end of the minute it was evaluated at: the data's time (RFC 3339).
    pub at: String,
    /// The window's top prefix, for the command's environment.
    pub top_prefix: Option<String>,
}

/// The capacity a frame draws the load against, estimated once per watch.
pub type Estimate = Result<f64, String>;

/// Estimates the capacity from the whole input: the heavy requests a minute the backend
/// held before its first stall (the capacity report, 1-minute windows); an explanation
/// when it never stalled or nothing was read. The source's bad lines are told on stderr
/// unless it is quiet.
pub fn estimate(source: &RowSource, make_sel: MakeSelection<'_>) -> anyhow::Result<Estimate> {
    let mut sel = make_sel()?;
    let by = Duration::from_ms(MINUTE_MS as u64).expect("a minute");
    let (r, _) = report::run(source, &mut sel, Capacity::new(by, Scope::Heavy))?;
    let e = &r.capacity;
    Ok(match (e.reached, e.held_per_window) {
        (true, Some(held)) => Ok(held as f64),
        _ => Err(match e.windows.iter().map(|w| w.offered).max() {
            Some(peak) => format!(
                "capacity not reached: no stall seen; the most heavy requests in a minute were {peak} (--capacity N/1m to draw one)"
            ),
            None => "no rows to estimate the capacity from (--capacity N/1m to draw one)".into(),
        }),
    })
}

/// Computes frames and keeps the alerts' states between them.
pub struct Watcher<'a> {
    source: RowSource,
    make_sel: MakeSelection<'a>,
    job: WatchJob,
    estimate: Estimate,
    states: Vec<State>,
    stats: Option<RowStats>,
}

impl<'a> Watcher<'a> {
    /// A watcher over `source`.
    pub fn new(
        source: RowSource,
        make_sel: MakeSelection<'a>,
        job: WatchJob,
        estimate: Estimate,
    ) -> Watcher<'a> {
        let states = vec![State::default(); job.alerts.len()];
        Watcher {
            source,
            make_sel,
            job,
            estimate,
            states,
            stats: None,
        }
    }

    /// What the last frame's read of the series found (for the JSON envelope).
    pub fn stats(&self) -> Option<&RowStats> {
        self.stats.as_ref()
    }

    /// What tells whether the rows changed since the last frame: the committed
    /// snapshot, or the files' sizes and times.
    pub fn version(&self) -> String {
        if self.source.files.is_empty() {
            let link = self.source.data.join(TABLE);
            return std::fs::read_link(&link)
                .map(|p| p.display().to_string())
                .unwrap_or_default();
        }
        let mut v = String::new();
        for f in &self.source.files {
            if let Ok(m) = std::fs::metadata(f) {
                use std::os::unix::fs::MetadataExt;
                v.push_str(&format!("{}:{}:{};", m.ino(), m.len(), m.mtime_nsec()));
            }
        }
        v
    }

    /// The frame of the rows now (`None`: no rows yet), and the alerts that crossed
    /// since the last frame.
    pub fn frame(&mut self) -> anyhow::Result<Option<(Frame, Vec<Alerted>)>> {
        let job = &self.job;
        let keep = job
            .alerts
            .iter()
            .map(|r| r.minutes(job.window))
            .chain([job.span, job.window])
            .max()
            .unwrap_or(1);
        // The series: over the dataset, only its last minutes are read.
        let mut sel = (self.make_sel)()?;
        if self.source.files.is_empty() {
            let ds = Dataset::open_read(&self.source.data);
            let (_, manifest) = ds.read()?;
            let Some(latest) = manifest.parts.iter().map(|p| p.max_ts_ms).max() else {
                return Ok(None);
            };
            let from = minute_of(latest) - (keep as i64 - 1) * MINUTE_MS;
            raise_since(&mut sel, from);
        }
        let clock = sel.clock.clone();
        let (out, stats) = report::run(&self.source, &mut sel, Series::new(Some(keep)))?;
        let minutes = out.minutes;
        self.stats = Some(stats);
        let Some(latest) = minutes.latest() else {
            return Ok(None);
        };
        let last = minute_of(latest);
        let since = last - (job.window as i64 - 1) * MINUTE_MS;
        let quiet = self.source.quiet();

        let top = |by: TopBy| -> anyhow::Result<Option<TopReport>> {
            let mut sel = (self.make_sel)()?;
            raise_since(&mut sel, since);
            let mut t = Top::new(by, TopSort::Requests, job.top);
            if matches!(by, TopBy::Asn) {
                match &sel.networks {
                    Some(db) => t = t.with_networks(db.clone()),
                    None => return Ok(None),
                }
            }
            Ok(Some(report::run(&quiet, &mut sel, t)?.0))
        };
        let lines = |r: Option<TopReport>| -> Vec<TopLine> {
            r.map(|r| {
                r.breakdown
                    .rows
                    .into_iter()
                    .map(|row| TopLine {
                        value: row.value.unwrap_or_else(|| "-".into()),
                        requests: row.requests,
                        share: row.share,
                    })
                    .collect()
            })
            .unwrap_or_default()
        };
        let prefixes = lines(top(TopBy::Prefix)?);
        let agents = lines(top(TopBy::Agent)?);
        let asns = lines(top(TopBy::Asn)?);

        let mut limits = Vec::new();
        for spec in &job.limits {
            let policy =
                Policy::from_spec(spec).map_err(|e| anyhow::anyhow!("--limit {spec}: {e}"))?;
            let mut sel = (self.make_sel)()?;
            raise_since(&mut sel, since);
            let rjob = ReplayJob {
                options: ReportOptions {
                    capacity: None,
                    bucket_ms: None,
                    top: 1,
                    refusal_statuses: vec![429],
                    v4_len: sel.classifier.v4_len,
                    v6_len: sel.classifier.v6_len,
                    workers: None,
                },
                marks: InternalMarks::from_policies(std::slice::from_ref(&policy)),
                policies: vec![policy],
                shard: None,
                fleet: None,
                spill: SpillOptions::default(),
                drop_logged_refusals: false,
                lines: false,
            };
            let r = replay(
                &quiet,
                &mut sel,
                rjob,
                None::<&mut DecisionsWriter<std::io::Sink>>,
            )
            .map_err(|e| anyhow::anyhow!("replaying --limit {spec}: {e}"))?;
            let c = &r.report.candidates[0];
            limits.push(LimitLine {
                name: c.name.clone(),
                requests: c.requests,
                refused: c.refused,
            });
        }

        let latest_minute = minutes.at(last);
        let load = match (&job.capacity, &self.estimate) {
            (Some(rate), _) => Some((
                "given",
                rate.count() as f64 * MINUTE_MS as f64 / rate.window_ms() as f64,
            )),
            (None, Ok(per_minute)) => Some(("estimated", *per_minute)),
            (None, Err(_)) => None,
        }
        .map(|(source, cap)| Load {
            capacity_per_minute: cap,
            source,
            heavy_last_minute: latest_minute.heavy,
            load: if cap > 0.0 {
                latest_minute.heavy as f64 / cap
            } else {
                0.0
            },
        });
        let load_note = match (&load, &self.estimate) {
            (None, Err(note)) => Some(note.clone()),
            _ => None,
        };

        let shares = Shares {
            prefix: prefixes.first().map(|t| t.share),
            asn: asns.first().map(|t| t.share),
            agent: agents.first().map(|t| t.share),
        };
        let at = time_text(&clock, last + MINUTE_MS);
        let mut alerts = Vec::new();
        let mut crossed = Vec::new();
        for (rule, state) in job.alerts.iter().zip(self.states.iter_mut()) {
            let value = rule.value(&minutes, last, job.window, &shares);
            if let (Some(c), Some(v)) = (state.update(rule, value), value) {
                crossed.push(Alerted {
                    rule: rule.text.clone(),
                    crossing: c,
                    value: v,
                    threshold: rule.limit(),
                    at: at.clone(),
                    top_prefix: prefixes.first().map(|t| t.value.clone()),
                });
            }
            alerts.push(AlertLine {
                rule: rule.text.clone(),
                value,
                threshold: rule.limit(),
                firing: state.firing,
            });
        }

        let series = (0..job.span)
            .rev()
            .map(|k| {
                let m = last - k as i64 * MINUTE_MS;
                let c = minutes.at(m);
                Point {
                    minute: time_text(&clock, m),
                    requests: c.requests,
                    heavy: c.heavy,
                    errors: c.s5xx,
                }
            })
            .collect();
        let frame = Frame {
            latest: time_text(&clock, latest),
            window: Duration::from_ms(job.window * MINUTE_MS as u64)
                .map(|d| d.to_string())
                .unwrap_or_default(),
            since: time_text(&clock, since),
            series,
            totals: minutes.sum(last, job.window),
            load,
            load_note,
            prefixes,
            agents,
            asns,
            limits,
            alerts,
        };
        Ok(Some((frame, crossed)))
    }
}

/// Raises a selection's `--since` to `ms` (a later `--since` of the user's stays).
fn raise_since(sel: &mut Selection, ms: i64) {
    sel.filter.since_ms = Some(sel.filter.since_ms.map_or(ms, |s| s.max(ms)));
}

/// A time on the report's clock, RFC 3339 with milliseconds.
fn time_text(clock: &Clock, utc_ms: i64) -> String {
    let local = clock.local(utc_ms);
    logscope_core::time::local_rfc3339_ms(local, local - utc_ms)
}

/// Evaluates the rules at the end of every minute of the input, from its first minute
/// to its last (minutes without rows included), as a live watch would have: the
/// crossings in order. `prefix_share` and `agent_share` are the top value's share of
/// the window ending with that minute (`asn_share` is told live only). Memory: one
/// entry per minute that holds rows, and with a share rule each minute's distinct
/// prefixes or agents.
pub fn backtest(
    source: &RowSource,
    make_sel: MakeSelection<'_>,
    job: &WatchJob,
) -> anyhow::Result<(Vec<Alerted>, RowStats)> {
    let mut sel = make_sel()?;
    let clock = sel.clock.clone();
    let wants = |m: Metric| job.alerts.iter().any(|r| r.metric == m);
    let series =
        Series::new(None).with_shares(wants(Metric::PrefixShare), wants(Metric::AgentShare));
    let (got, stats) = report::run(source, &mut sel, series)?;
    let minutes = got.minutes;
    let mut out = Vec::new();
    let (Some((first, _)), Some(latest)) = (minutes.iter().next(), minutes.latest()) else {
        return Ok((out, stats));
    };
    let mut prefixes = got.prefixes.map(Sliding::new);
    let mut agents = got.agents.map(Sliding::new);
    let window = job.window as i64 * MINUTE_MS;
    let mut states = vec![State::default(); job.alerts.len()];
    let mut m = first;
    while m <= minute_of(latest) {
        let requests = minutes.sum(m, job.window).requests;
        let share = |top: Option<u64>| {
            top.filter(|_| requests > 0)
                .map(|n| n as f64 / requests as f64)
        };
        let top_prefix = prefixes.as_mut().and_then(|p| p.advance(m, window));
        let top_agent = agents.as_mut().and_then(|a| a.advance(m, window));
        let shares = Shares {
            prefix: share(top_prefix.map(|(_, n)| n)),
            asn: None,
            agent: share(top_agent.map(|(_, n)| n)),
        };
        for (rule, state) in job.alerts.iter().zip(states.iter_mut()) {
            let value = rule.value(&minutes, m, job.window, &shares);
            if let (Some(c), Some(v)) = (state.update(rule, value), value) {
                out.push(Alerted {
                    rule: rule.text.clone(),
                    crossing: c,
                    value: v,
                    threshold: rule.limit(),
                    at: time_text(&clock, m + MINUTE_MS),
                    top_prefix: top_prefix.and_then(|(k, _)| match k {
                        ClientKey::Net { .. } => Some(k.to_string()),
                        ClientKey::Name(_) => None,
                    }),
                });
            }
        }
        m += MINUTE_MS;
    }
    Ok((out, stats))
}

/// Requests per value over a window that slides a minute at a time.
struct Sliding<K> {
    per_minute: PerMinute<K>,
    sums: HashMap<K, u64>,
    /// Minutes added so far (all before this one).
    next: i64,
}

impl<K: std::hash::Hash + Eq + Clone> Sliding<K> {
    fn new(per_minute: PerMinute<K>) -> Sliding<K> {
        Sliding {
            per_minute,
            sums: HashMap::new(),
            next: i64::MIN,
        }
    }

    /// Moves the window to end with minute `m` (`window` ms long) and gives its top
    /// value and count (ties: the first found; only the count is compared).
    fn advance(&mut self, m: i64, window: i64) -> Option<(K, u64)> {
        if let Some(counts) = self.per_minute.get(&m)
            && self.next <= m
        {
            for (k, n) in counts {
                *self.sums.entry(k.clone()).or_default() += n;
            }
        }
        self.next = m + MINUTE_MS;
        if let Some(counts) = self.per_minute.get(&(m - window)) {
            for (k, n) in counts {
                if let Some(s) = self.sums.get_mut(k) {
                    *s -= n;
                    if *s == 0 {
                        self.sums.remove(k);
                    }
                }
            }
        }
        self.sums
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(k, n)| (k.clone(), *n))
    }
}

/// Starts `--on-alert CMD` (`sh -c CMD`) with the crossing in its environment:
/// `LOGSCOPE_ALERT` (the rule), `LOGSCOPE_ALERT_STATE` (`firing` or `resolved`),
/// `LOGSCOPE_ALERT_VALUE`, `LOGSCOPE_ALERT_THRESHOLD` (counts, or shares 0–1),
/// `LOGSCOPE_ALERT_AT` (the data's time), `LOGSCOPE_ALERT_TOP_PREFIX` (when known).
pub fn start_command(cmd: &str, a: &Alerted) -> anyhow::Result<Child> {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .env("LOGSCOPE_ALERT", &a.rule)
        .env("LOGSCOPE_ALERT_STATE", a.crossing.name())
        .env("LOGSCOPE_ALERT_VALUE", number(a.value))
        .env("LOGSCOPE_ALERT_THRESHOLD", number(a.threshold))
        .env("LOGSCOPE_ALERT_AT", &a.at);
    if let Some(p) = &a.top_prefix {
        c.env("LOGSCOPE_ALERT_TOP_PREFIX", p);
    }
    c.spawn().context("--on-alert: cannot start sh")
}

/// A figure as the environment and the alert line give it: whole numbers without a
/// fraction, shares to four decimals.
pub fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.4}")
    }
}

/// What the live loop tells the caller.
pub enum LiveEvent<'a> {
    /// The frame to draw (the same as before when nothing changed); the caller waits
    /// for a second (or a key) before returning.
    Frame(Option<&'a Frame>),
    /// An alert crossed.
    Alert(&'a Alerted),
}

/// What ends the live loop.
pub struct Live {
    /// Follow these logs into the dataset meanwhile (`watch --follow`).
    pub follow: Option<(PathBuf, FollowJob)>,
    /// End with [`exit::ALERT`] at the first alert that fires.
    pub exit_on_alert: bool,
}

/// Runs the live loop until `stop` is set or `on` breaks: a frame whenever the rows
/// changed, the alerts' crossings, the `--on-alert` commands (not waited for: they are
/// reaped as they end). Returns the exit status.
pub fn live(
    watcher: &mut Watcher<'_>,
    mut opts: Live,
    stop: &Arc<AtomicBool>,
    on: &mut dyn FnMut(LiveEvent<'_>) -> ControlFlow<()>,
) -> anyhow::Result<i32> {
    let follow_stop = Arc::new(AtomicBool::new(false));
    std::thread::scope(|scope| {
        let follower = match opts.follow.take() {
            Some((data, mut job)) => {
                let flag = follow_stop.clone();
                Some(
                    std::thread::Builder::new()
                        .name("follow".into())
                        .spawn_scoped(scope, move || {
                            follow::run(&data, &mut job, &flag, &mut |_| {})
                        })
                        .context("cannot start the follow thread")?,
                )
            }
            None => None,
        };
        let result = (|| {
            let mut children: Vec<Child> = Vec::new();
            let mut shown: Option<(String, Option<Frame>)> = None;
            loop {
                if stop.load(Ordering::Relaxed) {
                    return Ok(exit::OK);
                }
                if follower.as_ref().is_some_and(|f| f.is_finished()) {
                    anyhow::bail!("the follow of the logs ended");
                }
                children.retain_mut(|c| !matches!(c.try_wait(), Ok(Some(_)) | Err(_)));
                let version = watcher.version();
                if shown.as_ref().is_none_or(|(v, _)| *v != version) {
                    let made = watcher.frame()?;
                    let (frame, crossed) = match made {
                        Some((f, c)) => (Some(f), c),
                        None => (None, Vec::new()),
                    };
                    for a in &crossed {
                        if let Some(cmd) = &watcher.job.on_alert {
                            children.push(start_command(cmd, a)?);
                        }
                        if on(LiveEvent::Alert(a)).is_break() {
                            return Ok(exit::OK);
                        }
                    }
                    if opts.exit_on_alert && crossed.iter().any(|a| a.crossing == Crossing::Fired) {
                        let _ = on(LiveEvent::Frame(frame.as_ref()));
                        return Ok(exit::ALERT);
                    }
                    shown = Some((version, frame));
                }
                let frame = shown.as_ref().and_then(|(_, f)| f.as_ref());
                if on(LiveEvent::Frame(frame)).is_break() {
                    return Ok(exit::OK);
                }
            }
        })();
        follow_stop.store(true, Ordering::Relaxed);
        if let Some(f) = follower {
            match f.join() {
                Ok(Err(e)) => return Err(e.context("following the logs")),
                Err(_) => anyhow::bail!("the follow thread failed"),
                Ok(Ok(_)) => {}
            }
        }
        result
    })
}
