//! `logscope top`: the first-hour breakdowns — per path, status, referer, user agent,
//! address, prefix, host or method: requests, share, bytes, distinct clients, error
//! share, first and last seen — over FILE arguments or the dataset, with every shared
//! filter.

use std::path::Path;

use clap::{Args, ValueEnum};
use logscope_core::classify::{Needs, StatusSet};
use logscope_core::forensics::top::{TopAcc, TopBy, TopPart, TopReport, TopSort};

use super::filters::{FilterArgs, Prepped};
use super::output::{self, OutputArgs};
use super::rows::{RowArgs, RowStats, columns_for, for_each_batch_with};

/// `--by` of `logscope top`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum By {
    /// The path, without the query string.
    Path,
    /// The status code.
    Status,
    /// The Referer header as logged.
    Referer,
    /// The User-Agent header as logged (`logscope agents` for classes).
    Agent,
    /// The client address (the real client behind --trust-proxy).
    Ip,
    /// The client's network (/24 and /48; --prefix-v4/--prefix-v6).
    Prefix,
    /// The Host header (virtual host).
    Host,
    /// The request method.
    Method,
}

impl By {
    fn core(self) -> TopBy {
        match self {
            By::Path => TopBy::Path,
            By::Status => TopBy::Status,
            By::Referer => TopBy::Referer,
            By::Agent => TopBy::Agent,
            By::Ip => TopBy::Ip,
            By::Prefix => TopBy::Prefix,
            By::Host => TopBy::Host,
            By::Method => TopBy::Method,
        }
    }
}

/// `--sort` of `logscope top`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Sort {
    /// Most requests first.
    Requests,
    /// Most body bytes first (bandwidth).
    Bytes,
    /// Most distinct clients first.
    Clients,
    /// Most requests with status ≥ 400 first.
    Errors,
}

impl Sort {
    fn core(self) -> TopSort {
        match self {
            Sort::Requests => TopSort::Requests,
            Sort::Bytes => TopSort::Bytes,
            Sort::Clients => TopSort::Clients,
            Sort::Errors => TopSort::Errors,
        }
    }
}

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

Per value: requests and their share of the selection, body bytes (a `-` counts 0),
distinct clients, the share of its requests that are errors (status ≥ 400: 4xx and 5xx),
and the first and last request (RFC 3339 in --format json/csv, --tz times in tables).
Distinct clients are exact up to 256 per value, then a HyperLogLog
estimate (±2.3%) shown as ≈ (JSON/CSV: clients_estimated), so memory stays a few KiB
per value. Rows: largest first by --sort, ties by value; `0` for --top lists every
value. --errors is --status 400-999.")]
pub struct TopArgs {
    /// What to break the requests down by.
    #[arg(long, value_enum)]
    pub by: By,

    /// How many values to list (0 = all); the rest are added up under the table.
    /// (`--limit N` is an older spelling, kept for scripts: `--limit` elsewhere is a
    /// rate limit.)
    #[arg(long, alias = "limit", value_name = "N", default_value_t = 20)]
    pub top: usize,

    /// The order of the rows.
    #[arg(long, value_enum, default_value_t = Sort::Requests)]
    pub sort: Sort,

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
        return super::sqlgen::top(data, &args);
    }
    if let Err(m) = args.out.check() {
        return Ok(output::usage(m));
    }
    let (report, stats) = compute(data, &args)?;
    args.out.emit_report(
        &report,
        |w| {
            if w == usize::MAX {
                report.doc()
            } else {
                report.doc_for_width(w)
            }
        },
        stats.input.as_ref(),
    )?;
    Ok(stats.exit_code())
}

/// The breakdown of `args` (its output options aside), and what was read.
pub fn compute(data: &Path, args: &TopArgs) -> anyhow::Result<(TopReport, RowStats)> {
    let mut sel = args.filters.build()?;
    if args.errors {
        sel.filter.status = Some(StatusSet::from_ranges(&[(400, 999)]));
    }
    let by = args.by.core();
    let (since, until) = sel.period();
    let mut cols = columns_for(Needs::NONE, &sel.filter, &mut sel.classifier);
    cols.sizes = true;
    // No row's line is shown.
    cols.line = false;
    match by {
        TopBy::Path => cols.path = true,
        TopBy::Method => cols.request = true,
        TopBy::Referer => cols.referer = true,
        TopBy::Agent => cols.agent = true,
        TopBy::Host => cols.host = true,
        TopBy::Status | TopBy::Ip | TopBy::Prefix => {}
    }
    let mut acc = TopAcc::new(by);
    // Where every row of the period counts and the client is the logged address, each
    // batch is tallied on the thread that decoded it (per distinct value); the caller
    // merges the tallies and classifies only the rows without an address.
    let parts = sel.counts_where_decoded();
    let lens = (sel.classifier.v4_len, sel.classifier.v6_len);
    let whole = sel.prep();
    let prep = move |b: &logscope_core::batch::Batch| {
        if parts {
            (
                Prepped::default(),
                Some(TopPart::of(b, by, lens, (since, until))),
            )
        } else {
            (whole(b), None)
        }
    };
    let stats = for_each_batch_with(data, &args.rows, cols, since, until, prep, |_, b, pre| {
        let (pre, part) = pre;
        acc.begin_batch(b);
        let Some(part) = part else {
            sel.each_selected_with(b, Some(&pre), |i, rc, _, _| acc.add(b, i, rc));
            return;
        };
        acc.add_part(b, &part);
        if !part.rest.is_empty() {
            let mut bc = sel.classifier.batch(b);
            for &i in &part.rest {
                let rc = bc.classify(&mut sel.classifier, i as usize);
                acc.add(b, i as usize, &rc);
            }
            sel.classifier.end_batch(bc);
        }
    })?;
    let clock = &sel.clock;
    let report = TopReport::new(
        acc,
        &sel.classifier,
        args.sort.core(),
        args.top,
        &|ms| clock.local(ms),
        clock.name(),
        &sel.describe(),
        &stats.origin,
    );
    Ok((report, stats))
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
