//! `logscope concentration`: how concentrated the selected requests are — top prefixes
//! (or addresses, or autonomous systems) with shares, how many make 50% and 90%, HHI,
//! Gini — and what a per-prefix limit would have touched.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use logscope_core::batch::NULL_CODE;
use logscope_core::classify::{AgentId, Needs};
use logscope_core::forensics::asn::AsnDb;
use logscope_core::forensics::concentration::{
    ConcentrationAcc, ConcentrationPart, ConcentrationReport, GroupBy,
};
use logscope_core::rate::Rate;
use logscope_core::{conf_file, escape};

use super::filters::{FilterArgs, Prepped, rate_arg};
use super::output::{self, OutputArgs};
use super::rows::{RowArgs, RowStats, columns_for, for_each_batch_with};
use crate::store::scan::Columns;

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

    /// ip2asn TSV file (iptoasn.com ip2asn-v4.tsv, -v6, -combined or -v4-u32) for --by asn
    /// and an AS column: a regular file of at most 256 MiB.
    #[arg(long, value_name = "FILE")]
    pub asn_db: Option<PathBuf>,

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
        return super::sqlgen::concentration(data, &args);
    }
    if let Err(m) = args.out.check() {
        return Ok(output::usage(m));
    }
    let (report, stats) = compute(data, &args)?;
    args.out
        .emit_report(&report, |_| report.doc(), stats.input.as_ref())?;
    Ok(stats.exit_code())
}

/// The concentration report of `args` (its output options aside), and what was read.
pub fn compute(
    data: &Path,
    args: &ConcentrationArgs,
) -> anyhow::Result<(ConcentrationReport, RowStats)> {
    let mut sel = args.filters.build()?;
    let asn = match &args.asn_db {
        Some(p) => {
            if p.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("mmdb"))
            {
                bail!(
                    "--asn-db: MaxMind .mmdb files are not supported yet; use an ip2asn TSV file"
                );
            }
            let bytes = match conf_file::read(p, conf_file::ASN_DB_CAP) {
                Ok(b) => b,
                Err(e) if e.is_refusal() => {
                    return Err(super::usage_error(format!("--asn-db: {e}")));
                }
                Err(conf_file::ReadError::Io { source, .. }) => {
                    return Err(anyhow::Error::new(source)
                        .context(format!("--asn-db: cannot read {}", escape::path(p))));
                }
                Err(e) => bail!("--asn-db: {e}"),
            };
            let text = String::from_utf8(bytes)
                .with_context(|| format!("--asn-db: cannot read {}", escape::path(p)))?;
            Some(
                AsnDb::parse(&text)
                    .map_err(|e| anyhow::anyhow!("--asn-db {}: {e}", escape::path(p)))?,
            )
        }
        None => None,
    };
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
    let (since, until) = sel.period();
    let mut acc = ConcentrationAcc::new(by, args.per_prefix_limit);
    // Neither the line nor (but for a --status filter) the status is used.
    let cols = Columns {
        line: false,
        status: sel.filter.status.is_some(),
        ..columns_for(Needs::AGENT, &sel.filter, &mut sel.classifier)
    };
    // Where every row of the period counts and the client is the logged address, each
    // batch is counted on the thread that decoded it (per distinct address and agent);
    // the caller merges the counts and classifies only the rows without an address.
    let parts = sel.counts_where_decoded();
    let (limit, lens) = (
        args.per_prefix_limit,
        (sel.classifier.v4_len, sel.classifier.v6_len),
    );
    let heavy = sel.prep();
    let prep = move |b: &logscope_core::batch::Batch| {
        if parts {
            (
                Prepped::default(),
                Some(ConcentrationPart::of(b, by, limit, lens, (since, until))),
            )
        } else {
            (heavy(b), None)
        }
    };
    let mut agents: Vec<Option<AgentId>> = Vec::new();
    let stats = for_each_batch_with(data, &args.rows, cols, since, until, prep, |_, b, pre| {
        let (pre_heavy, part) = pre;
        let Some(part) = part else {
            sel.each_selected_with(b, Some(&pre_heavy), |i, rc, _, _| acc.add(b.ts_ms[i], rc));
            return;
        };
        agents.clear();
        agents.resize(b.user_agent.slots(), None);
        let cls = &mut sel.classifier;
        acc.add_part(&part, |slot| {
            if slot == NULL_CODE {
                return cls.agents.id(None);
            }
            *agents[slot as usize].get_or_insert_with(|| cls.agents.id(b.user_agent.value(slot)))
        });
        if !part.rest.is_empty() {
            let mut bc = sel.classifier.batch(b);
            for &i in &part.rest {
                let rc = bc.classify(&mut sel.classifier, i as usize);
                acc.add(b.ts_ms[i as usize], &rc);
            }
            sel.classifier.end_batch(bc);
        }
    })?;
    let report = acc.finish(
        &sel.classifier,
        asn.as_ref(),
        args.top,
        &sel.describe(),
        &stats.origin,
    );
    Ok((report, stats))
}
