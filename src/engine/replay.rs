//! Replaying the selected rows through candidate limiters ([`replay`]): the rows are
//! read and classified on the caller's thread and replayed on a thread of their own as
//! they arrive, where the input says how old the rows still to come can be (a dataset's
//! recorded time ranges); the rest are sorted into decision-time order (spilling to
//! disk) and replayed after the read. Then the report, and a fleet's second pass.
//!
//! The replay itself is `logscope_core::replay`; its report `logscope_core::replay::report`.

use std::io;

use logscope_core::replay::fleet::{Balance, Fleet};
use logscope_core::replay::report::{
    self, DecisionSink, InternalMarks, Needs, ReportAcc, ReportContext, ReportOptions, RowInput,
    RowStore, SpillOptions, Who,
};
use logscope_core::replay::{Policy, Replay, ShardError, ShardFilter};

use super::rows::{RowSource, RowStats, columns_for};
use super::selection::Selection;
use crate::store::scan::Columns;
use crate::store::slices::PartOrder;

/// What to replay besides the rows.
pub struct ReplayJob {
    /// The candidates, names unique.
    pub policies: Vec<Policy>,
    /// `--keys K/N`: only the keys of one shard.
    pub shard: Option<ShardFilter>,
    /// `--servers N --balance RULE`: a copy of the candidates per server and one for
    /// the zones the servers share (N + 1 copies), replayed a second time as a fleet.
    pub fleet: Option<(Vec<Vec<Policy>>, Balance)>,
    /// Which clients are the site's own (`--internal`, …).
    pub marks: InternalMarks,
    /// Where and when the rows spill.
    pub spill: SpillOptions,
    /// The report's options.
    pub options: ReportOptions,
    /// Leave out the rows the log shows as refused (`--drop-logged-refusals`).
    pub drop_logged_refusals: bool,
    /// Read each row's line number (for `--decisions`).
    pub lines: bool,
}

/// What [`replay`] gives.
pub struct Replayed {
    /// The report.
    pub report: report::ReplayReport,
    /// The candidates after the replay.
    pub replay: Replay,
    /// What was read.
    pub stats: RowStats,
    /// Rows replayed.
    pub rows: usize,
    /// The phase timings, for the caller's last laps.
    pub timing: Timing,
}

/// Why a replay failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// Reading the rows failed.
    #[error(transparent)]
    Rows(anyhow::Error),
    /// Writing a decision failed.
    #[error("{0}")]
    Decisions(#[source] io::Error),
    /// The replay thread could not be started.
    #[error("cannot start the replay thread: {0}")]
    Thread(#[source] io::Error),
    /// Rows could not be written to a temporary file while they were read.
    #[error("cannot write to a temporary file: {0}")]
    Spill(#[source] io::Error),
    /// The sorted rows could not be written to a temporary file.
    #[error("cannot write sorted rows to a temporary file: {0}")]
    Sort(#[source] io::Error),
    /// The sorted rows could not be read back.
    #[error("cannot read back sorted rows: {0}")]
    ReadBack(#[source] io::Error),
    /// The fleet could not be set up for the shard.
    #[error("{0}")]
    Fleet(ShardError),
}

/// Replays the rows of `source` that `sel` selects through `job`'s candidates, each
/// decision written to `decisions` when given (in decision order).
pub fn replay<W: DecisionSink + Send>(
    source: &RowSource,
    sel: &mut Selection,
    job: ReplayJob,
    mut decisions: Option<&mut W>,
) -> Result<Replayed, ReplayError> {
    let ReplayJob {
        policies,
        shard,
        fleet,
        marks,
        spill,
        options,
        drop_logged_refusals,
        lines,
    } = job;
    let (since, until) = sel.period();
    let timing = Timing::from_env();
    let fields = Needs::of(&policies);
    let mut store = RowStore::with_spill(fields, spill);
    if policies.iter().any(Policy::log_order) {
        store.set_log_order();
    }
    let mut dropped = 0u64;
    let statuses = options.refusal_statuses.clone();
    // Rows are replayed while they are read when the input says how old the rows still
    // to come can be (a dataset's recorded time ranges), so they need not be sorted on
    // disk: on a thread of its own, while the next rows are read and classified. Not
    // for a fleet, which replays the rows a second time.
    let stream = fleet.is_none();
    // The heavy class (method, path, query) only where a candidate's matcher reads it;
    // every report needs the identity and the agent (its classes).
    let base = columns_for(
        logscope_core::classify::Needs {
            heavy: fields.heavy,
            ..logscope_core::classify::Needs::ALL
        },
        &sel.filter,
        &mut sel.classifier,
    );
    sel.settle_heavy(source).map_err(ReplayError::Rows)?;
    let cols = Columns {
        request: base.request || fields.method || fields.path,
        query: base.query || fields.query,
        identity: base.identity || fields.user,
        agent: base.agent || fields.agent,
        referer: base.referer || fields.referer,
        host: base.host || fields.host,
        // The line is only written to --decisions (decision order ties by input order,
        // not by line): without it every row spills a byte instead of its line number.
        line: lines,
        sizes: fields.bytes,
        timing: true,
        ..base
    };
    // Heavy classes and the --client mask are worked out on the decoding threads.
    let prep = sel.prep();
    let writes = decisions.is_some();
    let read = std::thread::scope(|scope| {
        let (to_pass, taken) = crossbeam_channel::bounded::<report::Fed>(2);
        let (done_tx, done) = crossbeam_channel::unbounded::<report::Fed>();
        let clock = sel.clock.clone();
        let decisions = &mut decisions;
        // The replay and the report's accumulator are made on the replay thread, which
        // changes them for every row: their memory is its own, not beside what the
        // reading thread changes for every row (a cache line shared by two cores).
        let pass = std::thread::Builder::new()
            .name("replay".into())
            .spawn_scoped(scope, move || -> io::Result<(Replay, ReportAcc)> {
                let mut acc = ReportAcc::new(&policies, options);
                let mut replay = Replay::new(policies);
                if let Some(f) = shard {
                    replay.set_shard(f);
                }
                let local = |t| clock.local(t);
                let sink = decisions.as_mut().map(|w| *w as &mut dyn DecisionSink);
                let mut feed = report::Feed::new(&mut replay, &mut acc, &local, sink);
                let mut names = report::FedNames::default();
                for fed in taken {
                    fed.replay(&mut names, |req, meta, file| feed.row(file, req, meta))?;
                    let _ = done_tx.send(fed);
                }
                Ok((replay, acc))
            });
        let pass = match pass {
            Ok(p) => p,
            Err(e) => return (Ok(RowStats::default()), Err(ReplayError::Thread(e)), None),
        };
        // The clients of the rows taken could not be written.
        let mut take_error: Option<io::Error> = None;
        let mut passing = true;
        let stats = source.for_each_batch_ordered(
            cols,
            // Rotated files ingested newest first are read oldest first, where that
            // changes no tie, so that their rows too are replayed as read.
            (since, until, PartOrder::Time),
            prep,
            |file, b, pre, floor| {
                if !passing || take_error.is_some() {
                    // The replay stopped (or its rows cannot be kept): its error is
                    // reported after the read; classifying more rows is wasted.
                    return;
                }
                let fid = store.file_id(file);
                sel.each_selected_with(b, Some(&pre), |i, rc, classifier, _| {
                    let logged = statuses.contains(&b.status[i]);
                    if logged && drop_logged_refusals {
                        dropped += 1;
                        return;
                    }
                    let internal = !marks.is_empty()
                        && marks.covers(rc.ip, b.user_agent.get(i), b.user.get(i), b.status[i]);
                    let who = Who::of(internal, rc.identity, classifier.agents.info(rc.agent));
                    store.push(
                        fid,
                        &RowInput {
                            batch: b,
                            i,
                            class: rc,
                            who,
                            logged_refusal: logged,
                        },
                    );
                });
                if stream && floor > i64::MIN {
                    match store.take_before(floor, done.try_recv().ok()) {
                        // The replay stopped (its error comes from the join).
                        Ok(Some(fed)) => passing = to_pass.send(fed).is_ok(),
                        Ok(None) => {}
                        Err(e) => take_error = Some(e),
                    }
                }
            },
        );
        drop(to_pass);
        // The replay thread fails only writing decisions.
        let passed = pass
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the replay thread failed")))
            .map_err(ReplayError::Decisions);
        (stats, passed, take_error)
    });
    let (stats, passed, take_error) = read;
    let (mut replay, mut acc) = passed?;
    let stats = stats.map_err(ReplayError::Rows)?;
    if let Some(e) = take_error {
        return Err(ReplayError::Spill(e));
    }
    timing.lap(
        &format!(
            "read, classify and replay as read ({} rows replayed as read)",
            store.fed()
        ),
        store.len(),
    );
    store.sort().map_err(ReplayError::Sort)?;
    timing.lap(
        &format!(
            "sort into decision-time order ({} runs on disk)",
            store.spilled_runs()
        ),
        store.len(),
    );
    let clock = &sel.clock;
    let local = |t| clock.local(t);
    let sink = decisions.map(|w| w as &mut dyn DecisionSink);
    let mut feed = report::Feed::new(&mut replay, &mut acc, &local, sink);
    feed.rest(&store).map_err(|e| {
        if writes {
            ReplayError::Decisions(e)
        } else {
            ReplayError::ReadBack(e)
        }
    })?;
    timing.lap(
        &format!("replay through {} candidates", replay.policies().len()),
        store.len(),
    );
    let mut report = acc
        .finish(
            &replay,
            &store,
            &sel.classifier,
            ReportContext {
                origin: stats.origin.clone(),
                selection: sel.describe(),
                tz: sel.clock.name().to_string(),
                records: stats.records,
                dropped_logged: dropped,
                internal: marks.describe(),
            },
        )
        .map_err(ReplayError::ReadBack)?;
    if let Some(f) = replay.shard() {
        report.warnings.push(shard_note(f, &report));
    }
    if let Some((mut copies, balance)) = fleet {
        let n = copies.len().saturating_sub(1);
        let shared = copies.pop().unwrap_or_default();
        let shard = replay.shard().map(ShardFilter::shard);
        let mut f = Fleet::new(shared, copies, balance, shard).map_err(ReplayError::Fleet)?;
        f.run(&store).map_err(ReplayError::ReadBack)?;
        report.fleet = Some(f.finish(&report));
        timing.lap(&format!("replay on {n} servers"), store.len());
    }
    Ok(Replayed {
        report,
        replay,
        stats,
        rows: store.len(),
        timing,
    })
}

/// The report's line on `--keys K/N`: what each candidate left to the other shards.
fn shard_note(f: &ShardFilter, report: &report::ReplayReport) -> String {
    let s = f.shard();
    let left: Vec<String> = report
        .candidates
        .iter()
        .zip(f.skipped())
        .map(|(c, n)| format!("{} {}", c.label, logscope_core::number::thousands(*n)))
        .collect();
    format!(
        "Shard {s} (--keys): each candidate replayed only the keys with XXH3-64(key) mod {} = {}; requests left to the other shards: {}. Add the {} shards' figures (or concatenate their --decisions) for the whole.",
        s.n,
        s.k,
        left.join(", "),
        s.n
    )
}

/// Phase timings on stderr when `LOGSCOPE_TIMING` is set (for benchmarks; the report
/// itself never reads the clock).
pub struct Timing(Option<std::cell::Cell<std::time::Instant>>);

impl Timing {
    /// Timing on when `LOGSCOPE_TIMING` is set and not empty.
    pub fn from_env() -> Timing {
        Timing(
            std::env::var_os("LOGSCOPE_TIMING")
                .filter(|v| !v.is_empty())
                .map(|_| std::cell::Cell::new(std::time::Instant::now())),
        )
    }

    /// Prints the time since the last lap, and `rows` per second over it.
    pub fn lap(&self, what: &str, rows: usize) {
        if let Some(t) = &self.0 {
            let now = std::time::Instant::now();
            let s = now.duration_since(t.get()).as_secs_f64();
            t.set(now);
            eprintln!(
                "logscope: timing: {what}: {s:.3} s ({:.2} M rows/s)",
                rows as f64 / s.max(1e-9) / 1e6
            );
        }
    }
}
