//! `logscope agents`: the user-agent mix — devices, families, declared bots — of the
//! selection next to all traffic of the same period, and a seeded sample of raw agents.

use std::path::Path;

use clap::Args;
use logscope_core::forensics::agents::AgentsReport;
use logscope_core::sqlgen as twin;

use super::filters::FilterArgs;
use super::output::OutputArgs;
use super::rows::RowArgs;
use super::sqlgen;
use crate::engine::rows::RowStats;
use crate::reports;

/// Arguments of `logscope agents`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  logscope agents --heavy --anonymous                     # who sends the heavy load?
  logscope agents --heavy --sample 20 --agent mobile      # 20 raw agents claiming a phone
  logscope agents --agent ai --top 20 access.log          # AI crawlers in a file
  logscope agents --format csv --out agents.csv

\"All traffic\" is every request of the same period (--since/--until) whatever the other
filters say, so the two columns compare the selection with its background: heavy anonymous
traffic that is 100% mobile browsers against 40% overall is the mark of residential
proxies. Devices: ios, android, desktop, other, tool (curl, python-requests …), bot,
unknown; a User-Agent is only a claim. Classes come from logscope's list of declared
crawlers (AI crawlers included) and tools, then the woothee parser for browsers; add your
own with [[agent]] entries in --rules. The sample (--sample N, --seed S) is deterministic:
the same input and seed give the same rows.")]
pub struct AgentsArgs {
    /// How many families and bots to list.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,

    /// Also list N randomly chosen selected requests with their raw User-Agent.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub sample: usize,

    /// Seed of the sample.
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,

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

/// Runs `logscope agents`.
pub fn run(data: &Path, args: AgentsArgs) -> anyhow::Result<i32> {
    if args.sql.sql.is_some() {
        return sql_twin(data, &args);
    }
    args.out.run_report(
        "agents",
        &args.filters.tz,
        || compute(data, &args),
        |r: &AgentsReport| &r.selection,
    )
}

/// The agents report of `args` (its output options aside), and what was read.
pub fn compute(data: &Path, args: &AgentsArgs) -> anyhow::Result<(AgentsReport, RowStats)> {
    let mut sel = args.filters.build()?;
    let source = args.rows.source(data)?;
    reports::agents::run(&source, &mut sel, args.sample, args.seed, args.top)
}

/// `logscope agents --sql`: the report's SQL twin.
fn sql_twin(data: &Path, a: &AgentsArgs) -> anyhow::Result<i32> {
    if a.sample > 0 {
        return Err(sqlgen::refuse(&["--sample"]));
    }
    let p = sqlgen::parts(data, &a.sql, &a.filters, &a.rows, true)?;
    let s = twin::agents::script(&p.twin(), a.top);
    sqlgen::print(&p, &s)
}
