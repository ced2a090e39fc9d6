//! `logscope timeline --client ADDR|CIDR`: what one address or network did — requests
//! per time bucket, its paths, statuses, user agents and addresses, first and last
//! seen — over FILE arguments or the dataset, with every shared filter.

use crate::engine::envelope::Envelope;
use std::path::Path;

use clap::Args;

use super::filters::{FilterArgs, Width, width_arg};
use super::output::{self, OutputArgs};
use super::rows::RowArgs;
use super::usage_error;
use crate::engine::report;
use crate::reports::timeline::Timeline;

/// Arguments of `logscope timeline`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  logscope timeline --client 203.0.113.7                  # one address, buckets from its span
  logscope timeline --client 203.0.113.7 --by 1h          # hourly
  logscope timeline --client 203.0.113.0/24 --by 10m --since 2026-09-25 --until 2026-09-25 --tz Asia/Seoul
  logscope timeline --client 2001:db8::/48 --by 1d access.log   # a file, without ingest
  logscope timeline --client 203.0.113.7 --status 4xx --format html --out who.html
  logscope timeline --client www-relay.pa-x.dec.com     # a client logged by host name

--client (the shared filter: an address, a CIDR network, or a host name as logged; repeat
or comma-separate for several) is required here. Per bucket (aligned on the --tz clock,
weeks from Monday; --by auto, the default, takes the smallest of 1s, 10s, 1m, 5m, 10m,
30m, 1h, 3h, 6h, 1d, 1w that gives at most 200 buckets from the first of the client's
requests to the last: a 5-minute burst gets 10s, a day 10m, half a year 1d): requests, errors (status ≥ 400) and their share, body bytes, and for a network
the distinct addresses; buckets without requests are left out. Then its top paths,
statuses and user agents (and addresses, for a network), each with requests, share,
bytes, error share, first and last seen.")]
pub struct TimelineArgs {
    /// Bucket width: auto (chosen from the span of the rows, at most 200 buckets), or a
    /// duration in whole seconds: 90s, 10m, 1h30m, 2hours, 1d, 1w.
    #[arg(long, value_name = "WIDTH", default_value = "auto", value_parser = width_arg)]
    pub by: Width,

    /// How many paths, statuses, user agents and addresses to list (0 = all).
    /// (`--limit N` is an older spelling, kept for scripts.)
    #[arg(long, alias = "limit", value_name = "N", default_value_t = 10)]
    pub top: usize,

    /// Which rows: the shared filters (--client is required).
    #[command(flatten)]
    pub filters: FilterArgs,

    /// Where and how the report is written.
    #[command(flatten)]
    pub out: OutputArgs,

    /// Where rows come from: FILEs or the dataset.
    #[command(flatten)]
    pub rows: RowArgs,
}

/// Runs `logscope timeline`.
pub fn run(data: &Path, args: TimelineArgs) -> anyhow::Result<i32> {
    if let Err(m) = args.out.check() {
        return Ok(output::usage(m));
    }
    let networks = !args.filters.asn.is_empty() || !args.filters.country.is_empty();
    if args.filters.clients.iter().all(|c| c.trim().is_empty()) && !networks {
        return Err(usage_error(
            "timeline needs --client ADDR, CIDR or HOST, or --asn/--country with --asn-db: whose timeline (e.g. --client 203.0.113.7, --client 203.0.113.0/24, --client www-relay.pa-x.dec.com or --asn-db ip2asn.tsv --asn AS64496)",
        ));
    }
    let mut sel = args.filters.build()?;
    let clients: Vec<String> = sel
        .filter
        .clients
        .iter()
        .map(|n| {
            if n.prefix_len() == n.max_prefix_len() {
                n.addr().to_string()
            } else {
                n.to_string()
            }
        })
        .chain(sel.filter.client_names.iter().cloned())
        .chain(sel.filter.networks.as_ref().map(|n| n.describe()))
        .collect();
    let source = args.rows.source(data)?;
    let timeline = Timeline::new(args.by.fixed(), args.top, clients);
    let (report, stats) = report::run(&source, &mut sel, timeline)?;
    let env = Envelope::report("timeline", &report.selection, &args.filters.tz, &stats);
    args.out.emit_report(&report, &env)?;
    Ok(stats.exit_code())
}
