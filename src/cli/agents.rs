//! `logscope agents`: the user-agent mix — devices, families, declared bots — of the
//! selection next to all traffic of the same period, and a seeded sample of raw agents.

use std::path::Path;

use clap::Args;
use logscope_core::classify::Needs;
use logscope_core::forensics::agents::{AgentsAcc, AgentsReport};

use super::filters::FilterArgs;
use super::output::{self, OutputArgs};
use super::rows::{RowArgs, RowStats, columns_for, for_each_batch, value_counts};

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
        return super::sqlgen::agents(data, &args);
    }
    if let Err(m) = args.out.check() {
        return Ok(output::usage(m));
    }
    let (report, stats) = compute(data, &args)?;
    args.out
        .emit_report(&report, |_| report.doc(), stats.input.as_ref())?;
    Ok(stats.exit_code())
}

/// The agents report of `args` (its output options aside), and what was read.
pub fn compute(data: &Path, args: &AgentsArgs) -> anyhow::Result<(AgentsReport, RowStats)> {
    let mut sel = args.filters.build()?;
    let (since, until) = sel.period();
    let mut acc = AgentsAcc::new(args.sample, args.seed);
    let cols = columns_for(Needs::AGENT, &sel.filter, &mut sel.classifier);
    // Without a filter or a sample every row of the period counts for its agent only:
    // count the rows per distinct User-Agent, then classify each once.
    let per_agent = sel.filter.selects_whole_period() && !acc.samples();
    if per_agent
        && let Some((values, stats)) = value_counts(data, &args.rows, "user_agent", since, until)?
    {
        for (ua, n) in &values {
            let agent = sel.classifier.agents.id(ua.as_deref());
            acc.add_unsampled(agent, *n);
        }
        let report = acc.finish(&sel.classifier, args.top, &sel.describe(), &stats.origin);
        return Ok((report, stats));
    }
    // Counting per agent needs no status, line or client.
    let cols = crate::store::scan::Columns {
        status: cols.status && !per_agent,
        line: cols.line && !per_agent,
        client: cols.client && !per_agent,
        ..cols
    };
    let mut counts: Vec<u64> = Vec::new();
    let stats = for_each_batch(data, &args.rows, cols, since, until, |_, b| {
        if per_agent && b.user_agent.is_coded() {
            counts.clear();
            counts.resize(b.user_agent.slots() + 1, 0);
            let null = b.user_agent.slots();
            for i in 0..b.len() {
                if sel.filter.in_period(b.ts_ms[i]) {
                    counts[b.user_agent.code(i).map_or(null, |k| k as usize)] += 1;
                }
            }
            for (k, &n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
                let ua = if k == null {
                    None
                } else {
                    b.user_agent.value(k as u32)
                };
                let agent = sel.classifier.agents.id(ua);
                acc.add_unsampled(agent, n);
            }
            return;
        }
        let mut bc = sel.classifier.batch(b);
        for i in 0..b.len() {
            let ts = b.ts_ms[i];
            if !sel.filter.in_period(ts) {
                continue;
            }
            let rc = bc.classify(&mut sel.classifier, i);
            acc.add_period(&rc);
            if sel.filter.matches(b, i, &rc, &sel.classifier) {
                acc.add_selected(&rc, ts, b.line_no(i), b.user_agent.get(i), &sel.classifier);
            }
        }
        sel.classifier.end_batch(bc);
    })?;
    let report = acc.finish(&sel.classifier, args.top, &sel.describe(), &stats.origin);
    Ok((report, stats))
}
