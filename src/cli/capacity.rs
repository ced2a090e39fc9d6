//! `logscope capacity`: from the log alone, what load the backend took per window — the
//! most it held healthily, where it stalled, its peak throughput — and the evidence.

use std::path::Path;

use clap::Args;
use logscope_core::duration::Duration;
use logscope_core::forensics::capacity::{CapacityReport, Scope};

use super::filters::{FilterArgs, duration_arg};
use super::output::OutputArgs;
use super::rows::RowArgs;
use crate::engine::report;
use crate::reports::capacity::Capacity;

/// Arguments of `logscope capacity`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  logscope capacity                                        # the dataset, 10-minute windows
  logscope capacity --scope heavy --since 2026-09-25 --until 2026-09-25 --tz Asia/Seoul
  logscope capacity --by 1m --format json access.log       # a file, without ingest
  logscope capacity --format html --out capacity.html

Per window (aligned on the --tz clock): the requests of the scope that arrived (offered),
those completed in it without failing (arrival + logged request time), the share of all
arrivals that failed (5xx, or 499: the client gave up) and of 504s, the concurrency by
Little's law (sum of request times / window) and the p50/p95 request time.

A window is healthy below 1% failed, degraded from 1%, stalled from 5%. A degraded or
stalled window is saturated when it has at least 10 failures at a load at least the most
held so far (else: errors, not load). held: the most offered in a healthy window before
the first stall; stall: the offered load of the first saturated stalled window (or of the
window before a silence right after a saturated one); capacity: the most completed in one
saturated window (the peak throughput), and all requests per second then. A backend that never stalled says \"not reached\" with the highest load it
handled fine. Without request times ($request_time, %D) completions are counted at the
logged time and concurrency and waits cannot be told: the report says so.

JSON (--format json): an object `capacity` with reached, window, scope, held_per_window,
stall_per_window, capacity_per_window, requests_per_second (numbers or null) and windows.")]
pub struct CapacityArgs {
    /// Window width, a duration in whole seconds: 1m, 10m, 1h.
    #[arg(long, value_name = "WIDTH", default_value = "10m", value_parser = duration_arg)]
    pub by: Duration,

    /// Which requests the levels count: all selected ones, or the heavy ones (the rules'
    /// heavy classes, as `logscope heavy` counts them). Health is always every request's.
    #[arg(long, value_enum, value_name = "SCOPE", default_value = "all")]
    pub scope: Scope,

    /// Which rows: the shared filters.
    #[command(flatten)]
    pub filters: FilterArgs,

    /// Where and how the report is written.
    #[command(flatten)]
    pub out: OutputArgs,

    /// Where rows come from: FILEs or the dataset.
    #[command(flatten)]
    pub rows: RowArgs,
}

/// Runs `logscope capacity`.
pub fn run(data: &Path, args: CapacityArgs) -> anyhow::Result<i32> {
    let compute = || {
        let mut sel = args.filters.build()?;
        let source = args.rows.source(data)?;
        report::run(&source, &mut sel, Capacity::new(args.by, args.scope))
    };
    args.out.run_report(
        "capacity",
        &args.filters.tz,
        compute,
        |r: &CapacityReport| &r.selection,
    )
}
