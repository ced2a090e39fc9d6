//! The agents report: the user-agent mix — devices, families, declared bots — of the
//! selection next to all traffic of the same period, and a seeded sample of raw agents.

use logscope_core::classify::Needs;
use logscope_core::forensics::agents::{AgentsAcc, AgentsReport};

use crate::engine::rows::{RowSource, RowStats, columns_for};
use crate::engine::selection::Selection;
use crate::store::scan::Columns;

/// The agents report over the rows of `source`: the mix of the rows `sel` selects next
/// to all rows of its period, `sample` raw agents drawn with `seed`, `top` listed.
///
/// Not a [`Report`](crate::engine::report::Report): it reads every row of the period,
/// not only the selected ones. Without a filter or a sample it counts rows per distinct
/// User-Agent (over the dataset, where the pages are decoded) and classifies each once.
pub fn run(
    source: &RowSource,
    sel: &mut Selection,
    sample: usize,
    seed: u64,
    top: usize,
) -> anyhow::Result<(AgentsReport, RowStats)> {
    let (since, until) = sel.period();
    let mut acc = AgentsAcc::new(sample, seed);
    if let Some(c) = &sel.crawlers {
        acc = acc.with_crawlers(c.clone());
    }
    let cols = columns_for(Needs::AGENT, &sel.filter, &mut sel.classifier);
    // Verifying crawlers reads their addresses.
    let cols = Columns {
        client: cols.client || sel.crawlers.is_some(),
        ..cols
    };
    sel.settle_heavy(source)?;
    // Without a filter or a sample every row of the period counts for its agent only:
    // count the rows per distinct User-Agent, then classify each once.
    let per_agent = sel.filter.selects_whole_period() && !acc.per_row();
    if per_agent && let Some((values, stats)) = source.value_counts("user_agent", since, until)? {
        for (ua, n) in &values {
            let agent = sel.classifier.agents.id(ua.as_deref());
            acc.add_unsampled(agent, *n);
        }
        let report = acc.finish(&sel.classifier, top, &sel.describe(), &stats.origin);
        return Ok((report, stats));
    }
    // Counting per agent needs no status, line or client.
    let cols = Columns {
        status: cols.status && !per_agent,
        line: cols.line && !per_agent,
        client: cols.client && !per_agent,
        ..cols
    };
    let mut counts: Vec<u64> = Vec::new();
    let stats = source.for_each_batch(cols, since, until, |_, b| {
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
    let report = acc.finish(&sel.classifier, top, &sel.describe(), &stats.origin);
    Ok((report, stats))
}
