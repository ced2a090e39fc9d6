//! `logscope heavy`: heavy requests per time bucket — requests, heavy requests, distinct
//! addresses and prefixes of the heavy ones, the largest prefix and its share, the
//! dominant agent class — with buckets over a capacity marked.

use crate::engine::envelope::Envelope;
use std::path::Path;

use clap::Args;
use logscope_core::duration::Duration;
use logscope_core::forensics::heavy::HeavyReport;
use logscope_core::rate::Rate;
use logscope_core::sqlgen as twin;

use super::filters::{FilterArgs, duration_arg, rate_arg};
use super::output::{self, OutputArgs, OutputFormat};
use super::rows::RowArgs;
use super::sqlgen;
use crate::engine::report;
use crate::engine::rows::RowStats;
use crate::reports::heavy::Heavy;

/// Arguments of `logscope heavy`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  logscope heavy --by 1h                                  # the whole dataset, hourly
  logscope heavy --by 10m --capacity 1610/10m --anonymous --since 2026-09-25 --until 2026-09-25 --tz Asia/Seoul
  logscope heavy --by 1d --rules wiki.toml access.log     # a file, without ingest
  logscope heavy --format md --out storm.md               # reports/storm.md

Per bucket: all selected requests, the heavy ones among them, and — over the heavy
requests — distinct addresses, distinct prefixes (/24 and /48; --prefix-v4/-v6), the
largest prefix and its share, and the agent class sending most. With --capacity N/WINDOW,
`peak` is the most heavy requests in one WINDOW (aligned to the zone's clock) overlapping
the bucket; buckets whose peak is above N are marked `!` (red on a terminal). Buckets with
no request between the first and the last are shown: a gap in a log is often an outage;
a run of more than 24 is one \"gap\" row (JSON: gaps).")]
pub struct HeavyArgs {
    /// Bucket width, a duration in whole seconds: 90s, 10m, 1h30m, 2hours, 1d, 1w
    /// (aligned on the --tz clock; weeks start on Mondays).
    #[arg(long, value_name = "WIDTH", default_value = "1h", value_parser = duration_arg)]
    pub by: Duration,

    /// Heavy requests the server can take per window, e.g. 1610/10m or 100/1h30m: buckets
    /// above it are marked.
    #[arg(long, value_name = "N/WINDOW", value_parser = rate_arg)]
    pub capacity: Option<Rate>,

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

/// Runs `logscope heavy`.
pub fn run(data: &Path, args: HeavyArgs) -> anyhow::Result<i32> {
    if args.sql.sql.is_some() {
        return sql_twin(data, &args);
    }
    if let Err(m) = args.out.check() {
        return Ok(output::usage(m));
    }
    let (report, stats) = compute(data, &args)?;
    let env = Envelope::report("heavy", &report.selection, &args.filters.tz, &stats);
    args.out.emit_report(&report, &env)?;
    heavy_rules_hint(&report, args.out.format);
    Ok(stats.exit_code())
}

/// The heavy report of `args` (its output options aside), and what was read.
pub fn compute(data: &Path, args: &HeavyArgs) -> anyhow::Result<(HeavyReport, RowStats)> {
    let mut sel = args.filters.build()?;
    let source = args.rows.source(data)?;
    let networks = sel.networks.clone();
    report::run(
        &source,
        &mut sel,
        Heavy::new(args.by, args.capacity).with_networks(networks),
    )
}

/// When requests were selected but the heavy rules matched none of them, say on stderr
/// how to define heavy requests (not for JSON or CSV, which scripts read).
fn heavy_rules_hint(report: &HeavyReport, format: OutputFormat) {
    if report.requests == 0
        || report.heavy > 0
        || matches!(format, OutputFormat::Json | OutputFormat::Csv)
    {
        return;
    }
    eprintln!(
        "logscope: hint: no request matched the heavy rules: {}. Describe your site's \
         heavy requests with [[heavy.class]] entries in a rules file: --rules FILE, \
         $LOGSCOPE_CONFIG, ./logscope.toml or ~/.config/logscope/logscope.toml \
         (`logscope rules --example` prints a commented starter file).",
        logscope_core::escape::terminal_str(&report.heavy_rules, 200)
    );
}

/// `logscope heavy --sql`: the report's SQL twin.
fn sql_twin(data: &Path, a: &HeavyArgs) -> anyhow::Result<i32> {
    let p = sqlgen::parts(data, &a.sql, &a.filters, &a.rows, true)?;
    let cap = a.capacity.map(|c| (c.count(), c.window_ms() as i64));
    let s = twin::heavy::script(&p.twin(), a.by.ms_i64(), cap);
    sqlgen::print(&p, &s)
}
