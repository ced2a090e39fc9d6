//! `logscope concentration`: how concentrated the selected requests are — top prefixes
//! (or addresses, or autonomous systems) with shares, how many make 50% and 90%, HHI,
//! Gini — and what a per-prefix limit would have touched.

use std::path::Path;

use clap::{Args, ValueEnum};
use logscope_core::forensics::concentration::{ConcentrationReport, GroupBy};
use logscope_core::rate::Rate;
use logscope_core::sqlgen as twin;

use super::filters::{FilterArgs, rate_arg};
use super::output::OutputArgs;
use super::rows::RowArgs;
use super::sqlgen;
use crate::engine::report;
use crate::engine::rows::RowStats;
use crate::reports::concentration::Concentration;

/// What to group by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum By {
    /// Network prefix (/24 and /48 by default; --prefix-v4/--prefix-v6).
    Prefix,
    /// Client address.
    Ip,
    /// Autonomous system (needs --asn-db).
    Asn,
}

/// Arguments of `logscope concentration`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  logscope concentration                                  # top /24s of the whole dataset
  logscope concentration --heavy --anonymous --since 2026-09-25T14:00 --until 2026-09-25T15:00 --tz Asia/Seoul
  logscope concentration --by ip --top 10 access.log      # a file, without ingest
  logscope concentration --per-prefix-limit 100/1h        # what a per-/24 limit would touch
  logscope concentration --by asn --asn-db ip2asn-v4.tsv

Shares are of the selected requests. `50%`/`90%`: the fewest groups that make that share.
HHI is the sum of squared shares (1/n for n equal groups, 1 for one group); Gini 0 means
equal groups. --per-prefix-limit N/WINDOW counts each group's requests in fixed windows
aligned to UTC: groups over N in some window, the share of requests they sent, and the
share a fixed-window limiter would have refused (use `logscope replay` for the exact
algorithm). Clients logged as host names are each their own group.")]
pub struct ConcentrationArgs {
    /// Group by network prefix, address or autonomous system.
    #[arg(long, value_enum, default_value_t = By::Prefix)]
    pub by: By,

    /// How many groups to list.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,

    /// A per-group limit to evaluate, e.g. 100/1h (per prefix, or per address with --by ip).
    #[arg(long, value_name = "N/WINDOW", value_parser = rate_arg)]
    pub per_prefix_limit: Option<Rate>,

    /// Which rows: the shared filters.
    #[command(flatten)]
    pub filters: FilterArgs,

    /// Where and how the report is written.
    #[command(flatten)]
    pub out: OutputArgs,

    /// Where rows come from: FILEs or the dataset.
    #[command(flatten)]
    pub rows: RowArgs,

    /// `--sql ENGINE`: print the report's SQL twin instead of running it.
    #[command(flatten)]
    pub sql: super::sqlgen::SqlArgs,
}

/// Runs `logscope concentration`.
pub fn run(data: &Path, args: ConcentrationArgs) -> anyhow::Result<i32> {
    if args.sql.sql.is_some() {
        return sql_twin(data, &args);
    }
    args.out.run_report(
        "concentration",
        &args.filters.tz,
        || compute(data, &args),
        |r: &ConcentrationReport| &r.selection,
    )
}

/// The concentration report of `args` (its output options aside), and what was read.
pub fn compute(
    data: &Path,
    args: &ConcentrationArgs,
) -> anyhow::Result<(ConcentrationReport, RowStats)> {
    let mut sel = args.filters.build()?;
    // --asn-db (a shared flag) also adds an AS column.
    let asn = sel.networks.clone();
    let by = match args.by {
        By::Prefix => GroupBy::Prefix,
        By::Ip => GroupBy::Ip,
        By::Asn => {
            if asn.is_none() {
                return Err(super::usage_error(
                    "--by asn needs --asn-db FILE (e.g. --asn-db ip2asn-v4.tsv)",
                ));
            }
            GroupBy::Asn
        }
    };
    let source = args.rows.source(data)?;
    let report = Concentration::new(by, args.per_prefix_limit, asn, args.top)
        .with_hosting(sel.hosting.clone());
    report::run(&source, &mut sel, report)
}

/// `logscope concentration --sql`: the report's SQL twin.
fn sql_twin(data: &Path, a: &ConcentrationArgs) -> anyhow::Result<i32> {
    if a.filters.asn_db.is_some() || a.by == By::Asn {
        return Err(sqlgen::refuse(&["--by asn / --asn-db"]));
    }
    let p = sqlgen::parts(data, &a.sql, &a.filters, &a.rows, true)?;
    let lim = a
        .per_prefix_limit
        .map(|c| (c.count(), c.window_ms() as i64));
    let s = twin::concentration::script(&p.twin(), a.by == By::Ip, a.top, lim);
    sqlgen::print(&p, &s)
}
