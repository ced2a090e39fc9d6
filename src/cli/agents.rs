//! `logscope agents`: the user-agent mix — devices, families, declared bots — of the
//! selection next to all traffic of the same period, and a seeded sample of raw agents.

use std::path::Path;

use clap::Args;
use logscope_core::classify::Needs;
use logscope_core::forensics::agents::AgentsAcc;

use super::filters::FilterArgs;
use super::output::{self, OutputArgs};
use super::rows::{RowArgs, columns_for, for_each_batch};

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

    #[command(flatten)]
    pub filters: FilterArgs,

    #[command(flatten)]
    pub out: OutputArgs,

    #[command(flatten)]
    pub rows: RowArgs,
}

/// Runs `logscope agents`.
pub fn run(data: &Path, args: AgentsArgs) -> anyhow::Result<i32> {
    if let Err(m) = args.out.check() {
        return Ok(output::usage(m));
    }
    let mut sel = args.filters.build()?;
    let (since, until) = sel.period();
    let mut acc = AgentsAcc::new(args.sample, args.seed);
    let cols = columns_for(
        Needs {
            heavy: false,
            identity: false,
            agent: true,
        },
        &sel.filter,
        &mut sel.classifier,
    );
    let stats = for_each_batch(data, &args.rows, cols, since, until, |_, b| {
        let mut bc = sel.classifier.batch(b);
        for i in 0..b.len() {
            let ts = b.ts_ms[i];
            if !sel.filter.in_period(ts) {
                continue;
            }
            let rc = bc.classify(&mut sel.classifier, i);
            acc.add_period(&rc);
            if sel.filter.matches(b, i, &rc, &sel.classifier) {
                acc.add_selected(&rc, ts, b.line[i], b.user_agent.get(i), &sel.classifier);
            }
        }
        sel.classifier.end_batch(bc);
    })?;
    let report = acc.finish(&sel.classifier, args.top, &sel.describe(), &stats.origin);
    args.out
        .emit_report(&report, |_| report.doc(), stats.input.as_ref())?;
    Ok(stats.exit_code())
}
