//! `logscope diff`: a baseline period (`--baseline SINCE..UNTIL`) against the incident
//! (`--since`/`--until`), per network, autonomous system, country, agent family, path
//! class and status — what grew, what is new, ranked by the load it added.

use std::path::Path;

use clap::Args;
use logscope_core::forensics::diff::{self, AXES, DiffReport};

use super::filters::{FilterArgs, span_arg};
use super::output::OutputArgs;
use super::rows::RowArgs;
use super::usage_error;
use crate::engine::report;
use crate::engine::rows::RowStats;
use crate::reports::diff::DiffSide;

/// Arguments of `logscope diff`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  logscope diff --baseline 2026-11-03..2026-11-03 --since 2026-11-04T13:00 --until 2026-11-04T15:00
  logscope diff --baseline 2026-11-03..2026-11-03 --since 2026-11-04T13:00 --until 2026-11-04T15:00 --asn-db ip2asn-combined.tsv --heavy
  logscope diff --baseline 2026-10 --since 2026-11-04 --until 2026-11-04 --format json   # a month against a day

Both periods read the same selection (the shared filters). The baseline is scaled to the
incident's length: `baseline` is the requests expected in the incident window at the
baseline's rate, `added` the incident's requests less that, `new` a value the baseline
never saw. Axes: network (--prefix-v4/--prefix-v6), asn and country (with --asn-db), agent
(family), path_class (heavy class, static, page) and status. --baseline SINCE..UNTIL takes
--since/--until's forms; a single month or day (2026-10) is that whole period.")]
pub struct DiffArgs {
    /// The period to compare with: SINCE..UNTIL (2026-11-03..2026-11-03 is that whole
    /// day), or one year, month or date.
    #[arg(long, value_name = "SINCE..UNTIL", allow_hyphen_values = true)]
    pub baseline: String,

    /// Rows per axis (0: all).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,

    /// Which rows: the shared filters (--since/--until: the incident).
    #[command(flatten)]
    pub filters: FilterArgs,

    /// Where and how the report is written.
    #[command(flatten)]
    pub out: OutputArgs,

    /// Where rows come from: FILEs or the dataset.
    #[command(flatten)]
    pub rows: RowArgs,
}

/// Runs `logscope diff`.
pub fn run(data: &Path, args: DiffArgs) -> anyhow::Result<i32> {
    args.out.run_report(
        "diff",
        &args.filters.tz,
        || compute(data, &args),
        |r: &DiffReport| &r.selection,
    )
}

/// The diff of `args` and what the incident's pass read.
pub fn compute(data: &Path, args: &DiffArgs) -> anyhow::Result<(DiffReport, RowStats)> {
    let mut inc_sel = args.filters.build()?;
    let (Some(since), Some(until)) = inc_sel.period() else {
        return Err(usage_error(
            "diff compares the incident --since/--until with --baseline: e.g. --baseline 2026-11-03..2026-11-03 --since 2026-11-04T13:00 --until 2026-11-04T15:00",
        ));
    };
    let (bs, bu) = span_arg("--baseline", args.baseline.trim(), &inc_sel.clock)?;
    let source = args.rows.source(data)?;
    let mut base_sel = args.filters.build()?;
    base_sel.filter.since_ms = Some(bs);
    base_sel.filter.until_ms = Some(bu);
    let (mut base, _) = report::run(&source.quiet(), &mut base_sel, DiffSide::default())?;
    base.span_ms = bu - bs;
    let (mut inc, stats) = report::run(&source, &mut inc_sel, DiffSide::default())?;
    inc.span_ms = until - since;
    let axes: Vec<&'static str> = AXES
        .into_iter()
        .filter(|a| inc_sel.networks.is_some() || !matches!(*a, "asn" | "country"))
        .collect();
    let clock = &inc_sel.clock;
    let fmt =
        |ms: i64| logscope_core::time::local_rfc3339_ms(clock.local(ms), clock.local(ms) - ms);
    let report = diff::compare(
        &base,
        &inc,
        &axes,
        args.top,
        (fmt(bs), fmt(bu)),
        (fmt(since), fmt(until)),
        inc_sel.filter.describe(),
    );
    Ok((report, stats))
}
