//! `logscope fingerprint`: per network, autonomous system or agent family, the signals
//! that tell a storm — pages without assets, URL uniqueness, heavy, 304 and error shares,
//! addresses that came once.

use std::path::Path;

use clap::Args;
use logscope_core::forensics::fingerprint::{FingerprintBy, FingerprintReport};

use super::filters::FilterArgs;
use super::output::OutputArgs;
use super::rows::RowArgs;
use crate::engine::report;
use crate::engine::rows::RowStats;
use crate::reports::fingerprint::Fingerprint;

/// Arguments of `logscope fingerprint`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  logscope fingerprint --since 2026-11-04T13:00 --until 2026-11-04T15:00
  logscope fingerprint --by asn --asn-db ip2asn-combined.tsv --since 2026-11-04T13:00 --until 2026-11-04T15:00
  logscope fingerprint --by agent --heavy access.log

Per group: requests, distinct clients, clients that came once, clients that fetched pages
but never an asset (a static file: people's browsers fetch CSS, scripts and images), URL
uniqueness (distinct path and query ÷ requests: crawlers rarely ask twice), and the shares
of heavy requests, 304 revalidations (browsers with a cache) and errors. Groups: the
client's network (--prefix-v4/--prefix-v6), its autonomous system (--asn-db), or the agent
family. Cache status is not read: the dataset keeps no such column.")]
pub struct FingerprintArgs {
    /// Group by network prefix, autonomous system or agent family.
    #[arg(long, value_enum, default_value_t = FingerprintBy::Prefix)]
    pub by: FingerprintBy,

    /// How many groups to list (0: all).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,

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

/// Runs `logscope fingerprint`.
pub fn run(data: &Path, args: FingerprintArgs) -> anyhow::Result<i32> {
    args.out.run_report(
        "fingerprint",
        &args.filters.tz,
        || compute(data, &args),
        |r: &FingerprintReport| &r.selection,
    )
}

/// The fingerprint of `args` and what was read.
pub fn compute(
    data: &Path,
    args: &FingerprintArgs,
) -> anyhow::Result<(FingerprintReport, RowStats)> {
    let mut sel = args.filters.build()?;
    if args.by == FingerprintBy::Asn && sel.networks.is_none() {
        return Err(super::usage_error(
            "--by asn needs --asn-db FILE (e.g. --asn-db ip2asn-combined.tsv)",
        ));
    }
    let source = args.rows.source(data)?;
    let r = Fingerprint::new(args.by, sel.networks.clone(), args.top);
    report::run(&source, &mut sel, r)
}
