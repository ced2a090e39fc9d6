//! `logscope heavy`: heavy requests per time bucket — requests, heavy requests, distinct
//! addresses and prefixes of the heavy ones, the largest prefix and its share, the
//! dominant agent class — with buckets over a capacity marked.

use std::path::Path;

use clap::Args;
use logscope_core::classify::Needs;
use logscope_core::duration::Duration;
use logscope_core::forensics::heavy::{Capacity, HeavyAcc};

use super::filters::{FilterArgs, duration_arg, rate_arg};
use super::output::{self, OutputArgs};
use super::rows::{RowArgs, columns_for, for_each_batch};

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
    /// Bucket width, a duration in whole seconds: 90s, 10m, 1h30m, 2hours, 1d, 1w.
    #[arg(long, value_name = "WIDTH", default_value = "1h", value_parser = duration_arg)]
    pub by: Duration,

    /// Heavy requests the server can take per window, e.g. 1610/10m or 100/1h30m: buckets
    /// above it are marked.
    #[arg(long, value_name = "N/WINDOW", value_parser = parse_capacity)]
    pub capacity: Option<Capacity>,

    #[command(flatten)]
    pub filters: FilterArgs,

    #[command(flatten)]
    pub out: OutputArgs,

    #[command(flatten)]
    pub rows: RowArgs,
}

fn parse_capacity(s: &str) -> Result<Capacity, String> {
    let r = rate_arg(s)?;
    Ok(Capacity {
        count: r.count(),
        window_ms: r.window_ms() as i64,
    })
}

/// Runs `logscope heavy`.
pub fn run(data: &Path, args: HeavyArgs) -> anyhow::Result<i32> {
    if let Err(m) = args.out.check() {
        return Ok(output::usage(m));
    }
    let mut sel = args.filters.build()?;
    let (since, until) = sel.period();
    let mut acc = HeavyAcc::new(args.by.ms_i64(), args.capacity);
    let cols = columns_for(
        Needs {
            heavy: true,
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
            if sel.filter.matches(b, i, &rc, &sel.classifier) {
                acc.add(ts, sel.clock.local(ts), &rc);
            }
        }
        sel.classifier.end_batch(bc);
    })?;
    let report = acc.finish(
        &sel.classifier,
        sel.clock.name(),
        &sel.describe(),
        &stats.origin,
    );
    args.out.emit_report(
        &report,
        |w| {
            if w == usize::MAX {
                report.doc(0)
            } else {
                report.doc_for_width(w)
            }
        },
        stats.input.as_ref(),
    )?;
    Ok(stats.exit_code())
}
