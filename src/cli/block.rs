//! `logscope block`: the smallest set of networks (prefixes or autonomous systems) that
//! stops a share of the selection — by default the heavy requests of `--since`/`--until`
//! — while touching at most a share of what must be kept, confirmed over the rows and
//! written for nginx, HAProxy, Caddy, nftables or fail2ban.

use std::path::Path;

use clap::Args;
use ipnet::IpNet;
use logscope_core::classify::config::parse_cidr;
use logscope_core::escape;
use logscope_core::forensics::block::{self, EntryRow, Goal, Network};
use logscope_core::forensics::block_emit::{self, EmitFormat};
use logscope_core::forensics::block_report::{Block, BlockReport};
use logscope_core::number::share;

use super::filters::{FilterArgs, share_arg, span_arg};
use super::output::{self, OutputArgs};
use super::rows::RowArgs;
use super::usage_error;
use crate::engine::rows::RowStats;
use crate::reports::block::{BlockFilter, Keep, clients_of, confirm, tally};

/// Arguments of `logscope block`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  logscope block --since 2026-11-04T13:00 --until 2026-11-04T15:00 --baseline 2026-11-03..2026-11-03 --asn-db asn.tsv
  logscope block --since 2026-11-04T13:00 --until 2026-11-04T15:00 --target 95% --max-collateral 0.5%
  logscope block --since 2026-11-04T13:00 --until 2026-11-04T15:00 --impostors --crawler-ranges googlebot=googlebot.json --emit nginx > block.conf

What to stop is the shared filters' selection; without any filter, the heavy requests of
--since/--until. What must not be hurt: identified users' requests, verified crawlers'
(--crawler-ranges), --keep networks and, with --baseline, every client seen in that
period. Every network holding a client to stop is a candidate — each prefix from /32 up to
--widest-v4 (/128 up to --widest-v6), and its autonomous system with --asn-db — and the
fewest that stop --target of the selection are chosen, touching at most --max-collateral of
the kept requests, each at least --purity the selection. The shares printed are counted
again over the rows with the block as a filter. --emit writes the block for a server
instead of the report (an AS as its prefixes in --asn-db).")]
pub struct BlockArgs {
    /// Share of the selection to stop: 90%, 0.9.
    #[arg(long, value_name = "SHARE", default_value = "90%", value_parser = share_arg)]
    pub target: f64,

    /// The most of the kept requests the block may touch: 1%, 0.01.
    #[arg(long, value_name = "SHARE", default_value = "1%", value_parser = share_arg)]
    pub max_collateral: f64,

    /// The least share of an entry's own requests in the window that must be the
    /// selection (a network where it is a minority is somebody's neighbourhood).
    #[arg(long, value_name = "SHARE", default_value = "50%", value_parser = share_arg)]
    pub purity: f64,

    /// Keep every client seen in this period: SINCE..UNTIL in --since/--until's forms
    /// (2026-11-03..2026-11-03 is that whole day), or one year, month or date
    /// (2026-11-03).
    #[arg(long, value_name = "SINCE..UNTIL", allow_hyphen_values = true)]
    pub baseline: Option<String>,

    /// Your own networks (monitoring, offices, partners), never blocked; repeat or
    /// comma-separate.
    #[arg(long, value_name = "CIDR", value_delimiter = ',')]
    pub keep: Vec<String>,

    /// The widest IPv4 prefix an entry may be.
    #[arg(long, value_name = "BITS", default_value_t = 16, value_parser = clap::value_parser!(u8).range(8..=32))]
    pub widest_v4: u8,

    /// The widest IPv6 prefix an entry may be.
    #[arg(long, value_name = "BITS", default_value_t = 32, value_parser = clap::value_parser!(u8).range(16..=128))]
    pub widest_v6: u8,

    /// Write the block for a server instead of the report.
    #[arg(long, value_enum, value_name = "SERVER")]
    pub emit: Option<EmitFormat>,

    /// Which rows: the shared filters (what to stop).
    #[command(flatten)]
    pub filters: FilterArgs,

    /// Where and how the report is written.
    #[command(flatten)]
    pub out: OutputArgs,

    /// Where rows come from: FILEs or the dataset.
    #[command(flatten)]
    pub rows: RowArgs,
}

/// Runs `logscope block`.
pub fn run(data: &Path, args: BlockArgs) -> anyhow::Result<i32> {
    let Some(format) = args.emit else {
        return args.out.run_report(
            "block",
            &args.filters.tz,
            || compute(data, &args),
            |r: &BlockReport| &r.selection,
        );
    };
    if args.out.out.is_some() {
        return Ok(output::usage(
            "--emit writes the block to standard output: redirect it (e.g. logscope block --since 2026-11-04T13:00 --until 2026-11-04T15:00 --emit nginx > block.conf)",
        ));
    }
    let (report, stats) = compute(data, &args)?;
    let nets = expand(&report, &args)?;
    let header = vec![
        format!(
            "logscope block: {} entries stop {:.1}% of {} from {} to {}, touching {:.1}% of the requests to keep",
            report.block.entries.len(),
            report.block.stopped_share * 100.0,
            escape::terminal_str(&report.selection, 200),
            report.since.as_deref().unwrap_or("the start"),
            report.until.as_deref().unwrap_or("the end"),
            report.block.collateral_share * 100.0
        ),
        format!("source: {}", escape::terminal_str(&stats.origin, 200)),
    ];
    print!("{}", block_emit::emit(format, &nets, &header));
    Ok(stats.exit_code())
}

/// The block's networks as CIDRs: an AS as its prefixes in the database.
fn expand(report: &BlockReport, args: &BlockArgs) -> anyhow::Result<Vec<IpNet>> {
    let db = args.filters.network_db()?;
    let mut nets = Vec::new();
    for e in &report.block.entries {
        match block::parse_network(&e.network) {
            Some(Network::Prefix(p)) => nets.push(p),
            Some(Network::As(a)) => {
                let Some(db) = &db else { continue };
                match db.networks_of(a, 1_000_000) {
                    Some(v) => nets.extend(v),
                    None => anyhow::bail!("AS{a} has more than a million prefixes in --asn-db"),
                }
            }
            None => {}
        }
    }
    Ok(IpNet::aggregate(&nets))
}

/// The block of `args` and what was read (the window's pass; the baseline's and the
/// confirming pass read the same source).
pub fn compute(data: &Path, args: &BlockArgs) -> anyhow::Result<(BlockReport, RowStats)> {
    let mut sel = args.filters.build()?;
    if sel.filter.selects_whole_period() {
        sel.filter.heavy = Some(true);
    }
    let source = args.rows.source(data)?;
    let mut keep = Keep::new(sel.crawlers.clone());
    for k in &args.keep {
        keep.nets.push(
            parse_cidr(k)
                .map_err(|e| usage_error(format!("--keep: {e} (e.g. --keep 10.0.0.0/8)")))?,
        );
    }
    if let Some(b) = &args.baseline {
        let (since, until) = span_arg("--baseline", b, &sel.clock)?;
        let mut base = args.filters.build()?;
        base.filter = logscope_core::classify::Filter::with_period(Some(since), Some(until));
        keep.baseline = Some(clients_of(&source.quiet(), &mut base)?);
    }
    let (t, stats) = tally(&source, &mut sel, &mut keep)?;
    let goal = Goal {
        target: args.target,
        max_collateral: args.max_collateral,
        purity: args.purity,
        widest_v4: args.widest_v4,
        widest_v6: args.widest_v6,
    };
    let db = sel.networks.clone();
    let mut asn_of = |ip| {
        db.as_ref()
            .and_then(|d| d.autonomous_system(ip))
            .map(|a| a.0)
    };
    let plan = block::plan(&t.clients, t.totals, &goal, &mut asn_of);
    let networks: Vec<Network> = plan.entries.iter().map(|e| e.network.clone()).collect();
    let mut filter = BlockFilter::new(&networks, sel.networks.clone());
    let hit = confirm(&source.quiet(), &mut sel, &mut keep, &mut filter)?;
    let as_name = |n: &Network| -> Option<String> {
        let db = sel.networks.as_ref()?;
        match n {
            Network::As(a) => t
                .clients
                .iter()
                .find_map(|(ip, _)| db.autonomous_system(*ip).filter(|x| x.0 == *a).map(|x| x.1)),
            Network::Prefix(p) => db.as_label(p.network()),
        }
    };
    let entries: Vec<EntryRow> = plan
        .entries
        .iter()
        .map(|e| EntryRow {
            network: e.network.to_string(),
            as_name: as_name(&e.network),
            stopped: e.tally.stop,
            collateral: e.tally.keep,
            other: e.tally.other,
            clients: e.clients,
        })
        .collect();
    let (since, until) = sel.period();
    let fmt = |ms: i64| {
        logscope_core::time::local_rfc3339_ms(sel.clock.local(ms), sel.clock.local(ms) - ms)
    };
    let report = BlockReport {
        selection: sel.filter.describe(),
        since: since.map(fmt),
        until: until.map(fmt),
        stop_requests: t.totals.stop,
        keep_requests: t.totals.keep,
        other_requests: t.totals.other,
        stop_without_address: t.stop_without_address,
        keeping: keep.names(),
        target: args.target,
        max_collateral: args.max_collateral,
        purity: args.purity,
        block: Block {
            entries,
            stopped_share: share(hit.stop, t.totals.stop),
            collateral_share: share(hit.keep, t.totals.keep),
            other_share: share(hit.other, t.totals.other),
            stopped: hit.stop,
            collateral: hit.keep,
            other: hit.other,
            met: plan.met,
        },
    };
    Ok((report, stats))
}
