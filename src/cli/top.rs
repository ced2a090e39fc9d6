//! `logscope top`: the first-hour breakdowns — per path, status, referer, user agent,
//! address, prefix, host, method, operating system, referring site, kind, hour, day or
//! country: requests, share, bytes, distinct clients, error share, first and last
//! seen — over FILE arguments or the dataset, with every shared filter.

use std::path::Path;

use clap::Args;
use logscope_core::classify::StatusSet;
use logscope_core::forensics::top::{TopBy, TopReport, TopSort};
use logscope_core::sqlgen as twin;

use super::filters::FilterArgs;
use super::output::OutputArgs;
use super::rows::RowArgs;
use super::sqlgen;
use crate::engine::report;
use crate::engine::rows::RowStats;
use crate::reports::top::Top;

/// Arguments of `logscope top`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  logscope top --by path                                  # the 20 most requested paths
  logscope top --by path --status 404                     # what is not found
  logscope top --by path --errors --sort errors           # 4xx and 5xx, most first
  logscope top --by path --sort bytes                     # bandwidth
  logscope top --by referer --since 2026-09-25T14:00 --until 2026-09-25T15:00 --tz Asia/Seoul
  logscope top --by status access.log.gz                  # a file, without ingest
  logscope top --by agent --top 0 --format csv --out agents.csv
  logscope top --by day --tz Europe/Vienna                # requests and unique visitors per day
  logscope top --by os                                    # also: site, kind, hour (GoAccess's panels)
  logscope top --by country --asn-db GeoLite2-Country.mmdb
  logscope top --by asn --asn-db ip2asn-combined.tsv       # networks by autonomous system

Per value: requests and their share of the selection, body bytes (a `-` counts 0),
distinct clients, the share of its requests that are errors (status ≥ 400: 4xx and 5xx),
and the first and last request (RFC 3339 in --format json/csv, --tz times in tables).
Distinct clients are exact up to 256 per value, then a HyperLogLog
estimate (±2.3%) shown as ≈ (JSON/CSV: clients_estimated), so memory stays a few KiB
per value; the header's total is always exact (as concentration and sql count them). Rows: largest first by --sort, ties by value; `0` for --top lists every
value. --errors is --status 400-999. --by day and --by hour list every day (hour of the
day) with requests on the --tz clock, in clock order; a day's clients are its unique visitors as GoAccess
counts them (distinct address and User-Agent, a 4xx answer not counting a visit), exactly.")]
pub struct TopArgs {
    /// What to break the requests down by.
    #[arg(long, value_enum, default_value = "path")]
    pub by: TopBy,

    /// How many values to list (0 = all); the rest are added up under the table.
    /// (`--limit N` is an older spelling, kept for scripts: `--limit` elsewhere is a
    /// rate limit.)
    #[arg(long, alias = "limit", value_name = "N", default_value_t = 20)]
    pub top: usize,

    /// The order of the rows.
    #[arg(long, value_enum, default_value_t = TopSort::Requests)]
    pub sort: TopSort,

    /// Only errors: status ≥ 400 (4xx and 5xx); the same as --status 400-999.
    #[arg(long, conflicts_with = "status")]
    pub errors: bool,

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

/// Runs `logscope top`.
pub fn run(data: &Path, args: TopArgs) -> anyhow::Result<i32> {
    if args.sql.sql.is_some() {
        return sql_twin(data, &args);
    }
    args.out.run_report(
        "top",
        &args.filters.tz,
        || compute(data, &args),
        |r: &TopReport| &r.selection,
    )
}

/// The breakdown of `args` (its output options aside), and what was read.
pub fn compute(data: &Path, args: &TopArgs) -> anyhow::Result<(TopReport, RowStats)> {
    let mut sel = args.filters.build()?;
    if args.errors {
        sel.filter.status = Some(StatusSet::from_ranges(&[(400, 999)]));
    }
    if args.by.is_network() && sel.networks.is_none() {
        return Err(super::usage_error(format!(
            "top --by {0} needs a network database: e.g. logscope top --by {0} --asn-db {1}",
            args.by.name(),
            if args.by == TopBy::Asn {
                "GeoLite2-ASN.mmdb"
            } else {
                "GeoLite2-Country.mmdb"
            }
        )));
    }
    let source = args.rows.source(data)?;
    let mut top = Top::new(args.by, args.sort, args.top);
    if let Some(db) = &sel.networks {
        top = top.with_networks(db.clone());
    }
    report::run(&source, &mut sel, top)
}

/// `logscope top --sql`: the report's SQL twin.
fn sql_twin(data: &Path, a: &TopArgs) -> anyhow::Result<i32> {
    if a.by.is_derived() || a.by.is_clock() || a.by.is_network() {
        return Err(super::usage_error(format!(
            "top --by {} has no SQL twin (its values are worked out in logscope: woothee's \
             operating systems, Referer hosts, the static-file test, the --tz clock, the \
             country database); \
             e.g. logscope top --by referer --sql duckdb",
            a.by.name()
        )));
    }
    let p = sqlgen::parts(data, &a.sql, &a.filters, &a.rows, a.filters.agent.is_some())?;
    let s = twin::top::script(&p.twin(), a.by, a.sort, a.top, a.errors);
    sqlgen::print(&p, &s)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn help_names_the_exact_client_cap() {
        let mut cmd = crate::cli::Cli::command();
        let top = cmd.find_subcommand_mut("top").expect("top");
        let help = top.render_long_help().to_string();
        assert!(
            help.contains(&format!(
                "exact up to {}",
                logscope_core::forensics::top::EXACT_CLIENTS
            )),
            "{help}"
        );
    }
}
