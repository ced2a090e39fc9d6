//! `logscope availability`: availability per month/week/day/hour of a probe URL (or of
//! dynamic requests), gaps in the log counted as downtime, with the incidents behind
//! the figures. The computation is `logscope_core::availability`; this file parses
//! the options, resolves calendar periods in a time zone (DST-correct, via the tz
//! database) and feeds rows from the dataset or from log files.

use std::path::Path;

use anyhow::{Context, anyhow, bail};
use chrono::{Datelike, Duration, LocalResult, NaiveDate, TimeZone, Timelike};
use clap::{Args, ValueEnum};
use logscope_core::availability::render::{self, Limits, TimeFmt};
use logscope_core::availability::{
    Accumulator, By, Calendar, CalendarError, ComputeError, Config, Grades, Period, PolicyAs,
    Report, StatusSet, is_static_path,
};
use logscope_core::batch::Batch;
use logscope_core::duration::Duration as Span;
use logscope_core::sqlgen as twin;
use regex::Regex;

use super::filters::{FilterArgs, duration_arg, regex_problem};
use super::output::{self, OutputArgs, OutputFormat};
use super::rows::RowArgs;
use super::sqlgen;
use super::usage_error;
use crate::engine::clock::{ChronoZone, resolve_local};
use crate::engine::envelope::Envelope;
use crate::engine::rows::{RowStats, columns_for};
use crate::store::scan::Columns;

const EXAMPLES: &str = "\
Examples:
  # The wiki's monthly table: the share of Special:BlankPage requests that succeeded,
  # calendar months in Seoul, missed probes counted as failures
  logscope availability --probe 'Special:BlankPage' --tz Asia/Seoul

  # Straight from log files (nothing ingested), Markdown for an incident post
  logscope availability --probe '^/healthz$' --format md --out availability.md access.log*

  # No probe: share of non-5xx dynamic requests, per ISO week, for the first half of 2025
  # (--until includes the whole of a month or day given: January to June)
  logscope availability --by week --since 2025-01 --until 2025-06

  # A monitor every 30 s; rate-limit refusals (403, 429) counted as success
  logscope availability --probe BlankPage --expect-every 30s --policy success

  # A self-contained HTML page with a chart of the months, under reports/
  logscope availability --probe BlankPage --tz Europe/Berlin --format html --out avail.html";

/// Period length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ByArg {
    /// Calendar months in --tz.
    Month,
    /// ISO weeks (Monday 00:00 to Monday 00:00) in --tz.
    Week,
    /// Calendar days in --tz.
    Day,
    /// Hours.
    Hour,
}

impl From<ByArg> for By {
    fn from(b: ByArg) -> By {
        match b {
            ByArg::Month => By::Month,
            ByArg::Week => By::Week,
            ByArg::Day => By::Day,
            ByArg::Hour => By::Hour,
        }
    }
}

/// How policy statuses count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PolicyArg {
    /// Left out of the denominator (neither success nor failure).
    Exclude,
    /// Counted as successes: the service answered.
    Success,
    /// Counted as failures: the user was turned away.
    Failure,
}

/// Arguments of `logscope availability`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct AvailabilityArgs {
    /// Log files to read instead of the dataset.
    #[command(flatten)]
    pub rows: RowArgs,

    /// `--sql ENGINE`: print the report's SQL twin instead of running it.
    #[command(flatten)]
    pub sql: super::sqlgen::SqlArgs,

    /// Regex over `path?query` picking the probe requests (e.g. Special:BlankPage, a
    /// page that is never cached). Without it, every dynamic request (not an image,
    /// stylesheet, script, font, media file) counts, and availability is the share not
    /// answered 5xx.
    #[arg(long, value_name = "REGEX")]
    pub probe: Option<String>,

    /// Period of each row of the table.
    #[arg(long, value_enum, default_value_t = ByArg::Month)]
    pub by: ByArg,

    /// Statuses that count as success: classes, codes and ranges, e.g. 2xx,3xx or
    /// 200-399,404 [default: 2xx,3xx with --probe; 1xx-4xx (not 5xx) without].
    #[arg(long, value_name = "CLASSES")]
    pub success: Option<String>,

    /// Statuses that are policy (a rate limit, an ACL), not downtime; `none` for none.
    #[arg(long, value_name = "CODES", default_value = "403,429")]
    pub policy_status: String,

    /// How policy statuses count.
    #[arg(long, value_enum, default_value_t = PolicyArg::Exclude)]
    pub policy: PolicyArg,

    /// The probe cadence, e.g. 1m or 30s: expected probes that are missing count as
    /// failures [default: with --probe, the median interval between probes; without,
    /// a silence counts only when it is improbable under the site's weekly rhythm,
    /// learned from the log (with fewer than 4 days of requests: one request per mean
    /// interval). Giving it without --probe expects one request per interval].
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub expect_every: Option<Span>,

    /// The shortest silence that is a gap: spans this long with no log lines at all are
    /// listed, and without --probe only silences this long are checked against the
    /// site's rhythm [default: with --probe, the longer of --bucket and 2 × the cadence,
    /// and every missed probe counts; without, 15m].
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub min_gap: Option<Span>,

    /// Sub-bucket for finding incidents.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = duration_arg)]
    pub bucket: Span,

    /// A sub-bucket whose availability is below this percentage is part of an incident.
    #[arg(long, value_name = "PERCENT", default_value_t = 80.0)]
    pub incident_below: f64,

    /// Bad sub-buckets separated by a recovery this short (or shorter) are one incident.
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = duration_arg)]
    pub merge_within: Span,

    /// Grade thresholds in percent: lowest green, yellow, orange; red below.
    #[arg(long, value_name = "G,Y,O", default_value = "99.9,99,95", value_parser = Grades::parse)]
    pub grades: Grades,

    /// Incidents and no-data spans listed in text, Markdown and HTML (the largest, in
    /// time order); 0 = all. JSON always has all.
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub max_incidents: usize,

    /// Which requests count (`--since`/`--until` also bound the span: silence inside it
    /// counts as missing; `--tz` is the zone of the periods, months and days following
    /// its daylight-saving changes; `--host` picks one site of a shared log).
    #[command(flatten)]
    pub filters: FilterArgs,

    /// Output.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// What [`compute`] gives: the report, what was read, the clock's zone and the source
/// line (where the rows came from and which were selected).
pub struct Computed {
    /// The availability report.
    pub report: Report,
    /// What was read.
    pub stats: RowStats,
    /// The report's zone.
    pub zone: ChronoZone,
    /// Where the rows came from and which were selected.
    pub source: String,
}

/// The availability report of `args` (its output options aside).
pub fn compute(data: &Path, args: &AvailabilityArgs) -> anyhow::Result<Computed> {
    let mut sel = args.filters.build()?;
    let (since, until) = sel.period();
    let zone = sel.clock.zone();
    let probe = args
        .probe
        .as_deref()
        .map(Regex::new)
        .transpose()
        .map_err(|e| {
            usage_error(format!(
                "--probe is not a valid regex: {} (e.g. 'Special:BlankPage' or '^/healthz$')",
                regex_problem(&e)
            ))
        })?;
    if !(0.0..=100.0).contains(&args.incident_below) {
        return Err(usage_error(
            "--incident-below must be a percentage between 0 and 100 (e.g. 80)",
        ));
    }
    let mut cfg = Config::new(args.probe.clone());
    if let Some(s) = &args.success {
        cfg.success = StatusSet::parse(s).map_err(|e| usage_error(format!("--success: {e}")))?;
    }
    cfg.policy = StatusSet::parse_or_none(&args.policy_status)
        .map_err(|e| usage_error(format!("--policy-status: {e} (or none)")))?;
    cfg.policy_as = match args.policy {
        PolicyArg::Exclude => PolicyAs::Exclude,
        PolicyArg::Success => PolicyAs::Success,
        PolicyArg::Failure => PolicyAs::Failure,
    };
    cfg.expect_every_ms = args.expect_every.map(Span::ms_i64);
    cfg.min_gap_ms = args.min_gap.map(Span::ms_i64);
    cfg.bucket_ms = args.bucket.ms_i64();
    cfg.incident_below = args.incident_below;
    cfg.merge_within_ms = args.merge_within.ms_i64();
    cfg.grades = args.grades;
    cfg.by = args.by.into();
    cfg.tz = sel.clock.name().to_string();
    cfg.since_ms = since;
    cfg.until_ms = until;

    let mut acc = Accumulator::new(since, until).with_min_gap(cfg.min_gap_ms);
    // Only the period is chosen: no classification, fewer columns. A probe is told by
    // its path (and query), never its method.
    let whole = sel.filter.selects_whole_period();
    let cols = if whole {
        Columns {
            path: true,
            query: probe.is_some(),
            line: false,
            client: false,
            ..Columns::NONE
        }
    } else {
        let none = logscope_core::classify::Needs::NONE;
        let c = columns_for(none, &sel.filter, &mut sel.classifier);
        sel.settle_heavy(&args.rows.source(data)?)?;
        Columns {
            path: true,
            query: c.query || probe.is_some(),
            ..c
        }
    };
    // Whether a row is a probe: the probe pattern's match of its path and query, or
    // without one, whether its path is dynamic.
    let is_probe = |b: &Batch, i: usize, buf: &mut String| match &probe {
        Some(re) => {
            buf.clear();
            buf.push_str(b.path.get(i).unwrap_or(""));
            if let Some(q) = b.query.get(i) {
                buf.push('?');
                buf.push_str(q);
            }
            re.is_match(buf)
        }
        None => !is_static_path(b.path.get(i).unwrap_or("")),
    };
    // Without a probe pattern, "dynamic" is a property of the path alone: decided once
    // per distinct path of a coded batch (0 = not yet, 1 = static, 2 = dynamic).
    let dynamic_of = |b: &Batch, k: u32, memo: &mut [u8]| {
        let d = &mut memo[k as usize];
        if *d == 0 {
            *d = if is_static_path(b.path.value(k).unwrap_or("")) {
                1
            } else {
                2
            };
        }
        *d == 2
    };
    let memo_for = |b: &Batch, memo: &mut Vec<u8>| {
        memo.clear();
        if probe.is_none() && b.path.is_coded() {
            memo.resize(b.path.slots(), 0);
        }
    };
    // When only the period is chosen, each batch's lines are worked out (and its
    // probes sorted) on the thread that decoded it; the caller merges them.
    let empty = acc.lines_for_batch();
    let prep = |b: &Batch| {
        if !whole {
            return None;
        }
        let (mut lines, mut memo, mut buf) = (empty.clone(), Vec::new(), String::new());
        memo_for(b, &mut memo);
        for i in 0..b.len() {
            let probe = match b.path.code(i) {
                Some(k) if !memo.is_empty() => dynamic_of(b, k, &mut memo),
                _ => is_probe(b, i, &mut buf),
            };
            lines.push(b.ts_ms[i], b.status[i], probe);
        }
        lines.seal();
        Some(lines)
    };
    let (mut memo, mut buf) = (Vec::new(), String::new());
    let stats =
        args.rows
            .source(data)?
            .for_each_batch_with(cols, since, until, prep, |_, b, pre| {
                if let Some(lines) = pre {
                    acc.add_lines(lines);
                    return;
                }
                let mut bc = sel.classifier.batch(b);
                memo_for(b, &mut memo);
                for i in 0..b.len() {
                    let ts = b.ts_ms[i];
                    // Rows outside --since/--until go to the accumulator, which counts them.
                    if sel.filter.in_period(ts) {
                        let rc = bc.classify(&mut sel.classifier, i);
                        if !sel.filter.matches(b, i, &rc, &sel.classifier) {
                            continue;
                        }
                    }
                    let probe = match b.path.code(i) {
                        Some(k) if !memo.is_empty() => dynamic_of(b, k, &mut memo),
                        _ => is_probe(b, i, &mut buf),
                    };
                    acc.push(ts, b.status[i], probe);
                }
                sel.classifier.end_batch(bc);
            })?;
    // Over the dataset the rows outside the period were pruned unread: count them from
    // the snapshot's row total, so the report says what a read of the files would.
    if let Some(rows) = stats.dataset_rows {
        acc.add_outside(rows.saturating_sub(stats.records));
    }
    let tmp = || logscope_core::escape::path(&std::env::temp_dir());
    let prepared = acc.prepare(&cfg).with_context(|| {
        format!(
            "availability: a temporary file of sorted probes in {} (set TMPDIR to a writable directory)",
            tmp()
        )
    })?;
    let computed = match zone {
        ChronoZone::Tz(tz) => prepared.compute_in(&TzCalendar { tz, by: cfg.by }, &cfg),
        ChronoZone::Fixed(tz) => prepared.compute_in(&TzCalendar { tz, by: cfg.by }, &cfg),
    };
    let report = computed.map_err(|e| match e {
        ComputeError::Calendar(e) => anyhow!("internal error: {e}"),
        e => anyhow!("availability: {e} (in {}; set TMPDIR)", tmp()),
    })?;
    let source = if whole {
        stats.origin.clone()
    } else {
        format!("{}; {}", stats.origin, sel.filter.describe())
    };
    Ok(Computed {
        report,
        stats,
        zone,
        source,
    })
}

/// The report as a `Doc` (what `--format html` shows), for `logscope report`.
pub fn doc(c: &Computed, max_incidents: usize) -> logscope_core::forensics::doc::Doc {
    let zone = c.zone;
    let short = |ms: i64| fmt_zone(zone, ms, "%Y-%m-%d %H:%M");
    let rfc = |ms: i64| rfc3339_ms(zone, ms);
    let tf = TimeFmt {
        short: &short,
        rfc3339: &rfc,
    };
    let lim = Limits {
        incidents: max_incidents,
        no_data: max_incidents,
    };
    render::doc(&c.report, &tf, &c.source, lim)
}

/// Runs `logscope availability`.
pub fn run(data: &Path, args: AvailabilityArgs) -> anyhow::Result<i32> {
    if args.sql.sql.is_some() {
        return sql_twin(data, &args);
    }
    if let Err(m) = args.output.check() {
        return Ok(output::usage(m));
    }
    let Computed {
        mut report,
        stats,
        zone,
        source,
    } = compute(data, &args)?;
    // Text, Markdown and HTML show what reading the FILE arguments found with the
    // report's notes; JSON has them in the envelope's `inputs`.
    if let Some(i) = &stats.input
        && args.output.format != OutputFormat::Json
    {
        report.notes.extend(i.notes());
    }

    let short = |ms: i64| fmt_zone(zone, ms, "%Y-%m-%d %H:%M");
    let rfc = |ms: i64| rfc3339_ms(zone, ms);
    let tf = TimeFmt {
        short: &short,
        rfc3339: &rfc,
    };
    let lim = Limits {
        incidents: args.max_incidents,
        no_data: args.max_incidents,
    };
    let source = source.as_str();
    let out = match args.output.format {
        OutputFormat::Text => render::text(&report, &tf, source, args.output.color(), lim),
        OutputFormat::Md => render::markdown(&report, &tf, source, lim),
        OutputFormat::Csv => render::csv(&report, &tf),
        OutputFormat::Json => {
            let sel = &args.filters;
            let selection = sel.build()?.describe();
            let env = Envelope::report("availability", &selection, &sel.tz, &stats);
            output::json(&env.wrap(&render::json(&report, &tf)))?
        }
        OutputFormat::Html => render::html(&report, &tf, source, lim),
    };
    args.output.emit(&out)?;
    Ok(stats.exit_code())
}

/// An instant as RFC 3339 with milliseconds in `zone` (`Z` in UTC): the one time
/// representation of JSON and CSV.
fn rfc3339_ms(zone: ChronoZone, ms: i64) -> String {
    let offset_ms = match zone {
        ChronoZone::Tz(tz) => offset_ms(tz, ms),
        ChronoZone::Fixed(tz) => offset_ms(tz, ms),
    };
    logscope_core::time::local_rfc3339_ms(ms + offset_ms, offset_ms)
}

fn offset_ms<Z: TimeZone>(tz: Z, ms: i64) -> i64 {
    use chrono::Offset;
    match tz.timestamp_millis_opt(ms) {
        LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => {
            i64::from(t.offset().fix().local_minus_utc()) * 1000
        }
        LocalResult::None => 0,
    }
}

fn fmt_zone(zone: ChronoZone, ms: i64, f: &str) -> String {
    match zone {
        ChronoZone::Tz(tz) => fmt_time(tz, ms, f),
        ChronoZone::Fixed(tz) => fmt_time(tz, ms, f),
    }
}

fn fmt_time<Z: TimeZone>(tz: Z, ms: i64, f: &str) -> String
where
    Z::Offset: std::fmt::Display,
{
    match tz.timestamp_millis_opt(ms) {
        LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => t.format(f).to_string(),
        LocalResult::None => format!("{ms}ms"),
    }
}

/// The periods of `by` in `tz`, asked for one at a time (the computation asks only for
/// those holding data and counts the rest), never listed over the whole span.
struct TzCalendar<Z> {
    tz: Z,
    by: By,
}

impl<Z: TimeZone + Copy> Calendar for TzCalendar<Z>
where
    Z::Offset: std::fmt::Display,
{
    fn period_at(&self, ts_ms: i64) -> Result<Period, CalendarError> {
        periods(self.tz, self.by, ts_ms, ts_ms.saturating_add(1))
            .map_err(|e| CalendarError::Inconsistent(e.to_string()))?
            .pop()
            .ok_or(CalendarError::NoPeriodAt(ts_ms))
    }

    fn count_between(&self, from_ms: i64, to_ms: i64) -> Result<u64, CalendarError> {
        let date = |ms: i64| match self.tz.timestamp_millis_opt(ms) {
            LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => Ok(t.date_naive()),
            LocalResult::None => Err(CalendarError::OutOfRange(ms)),
        };
        let n = match self.by {
            By::Hour => (to_ms - from_ms) / 3_600_000,
            by => {
                let (a, b) = (date(from_ms)?, date(to_ms)?);
                let days = (b - a).num_days();
                match by {
                    By::Month => {
                        (b.year() as i64 * 12 + b.month() as i64)
                            - (a.year() as i64 * 12 + a.month() as i64)
                    }
                    By::Week => days / 7,
                    _ => days,
                }
            }
        };
        u64::try_from(n).map_err(|_| CalendarError::Backwards { from_ms, to_ms })
    }
}

/// At most this many periods (e.g. 100 years of hours would be 876,600).
const MAX_PERIODS: usize = 1_000_000;

/// Periods of kind `by` in `tz` covering `[start_ms, end_ms)`: from the one containing
/// `start_ms` to the one containing `end_ms − 1`. Months, weeks and days start at local
/// midnight (so a month with a DST change has one hour more or less); hours are UTC
/// hours labelled in local time (the repeated hour of an autumn change carries its
/// offset).
pub fn periods<Z: TimeZone + Copy>(
    tz: Z,
    by: By,
    start_ms: i64,
    end_ms: i64,
) -> anyhow::Result<Vec<Period>>
where
    Z::Offset: std::fmt::Display,
{
    let mut out = Vec::new();
    let first = match tz.timestamp_millis_opt(start_ms) {
        LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => t,
        LocalResult::None => bail!("time {start_ms} ms is out of range"),
    };
    if by == By::Hour {
        let trunc = (first.minute() as i64 * 60 + first.second() as i64) * 1000
            + first.timestamp_subsec_millis() as i64;
        let mut s = start_ms - trunc;
        while s < end_ms {
            let local = tz.timestamp_millis_opt(s).single();
            let label = match local {
                Some(t) => {
                    let naive = t.naive_local();
                    let mut l = naive.format("%Y-%m-%d %H:%M").to_string();
                    if matches!(tz.from_local_datetime(&naive), LocalResult::Ambiguous(..)) {
                        l.push_str(&t.format(" %:z").to_string());
                    }
                    l
                }
                None => fmt_time(tz, s, "%Y-%m-%d %H:%M"),
            };
            out.push(Period {
                label,
                start_ms: s,
                end_ms: s + 3_600_000,
            });
            s += 3_600_000;
            if out.len() > MAX_PERIODS {
                bail!("too many periods for --by hour; use --by day or a shorter --since/--until");
            }
        }
        return Ok(out);
    }
    let d = first.date_naive();
    let mut date = match by {
        By::Month => d.with_day(1).expect("day 1 exists"),
        By::Week => d - Duration::days(d.weekday().num_days_from_monday() as i64),
        _ => d,
    };
    let midnight = |date: NaiveDate| {
        resolve_local(tz, date.and_hms_opt(0, 0, 0).expect("midnight"))
            .ok_or_else(|| anyhow!("no local midnight on {date}"))
    };
    let mut s = midnight(date)?;
    while s < end_ms {
        let next = match by {
            By::Month => {
                let (y, m) = if date.month() == 12 {
                    (date.year() + 1, 1)
                } else {
                    (date.year(), date.month() + 1)
                };
                NaiveDate::from_ymd_opt(y, m, 1).ok_or_else(|| anyhow!("date out of range"))?
            }
            By::Week => date + Duration::days(7),
            _ => date + Duration::days(1),
        };
        let e = midnight(next)?;
        let label = match by {
            By::Month => date.format("%Y-%m").to_string(),
            By::Week => {
                let w = date.iso_week();
                format!("{:04}-W{:02}", w.year(), w.week())
            }
            _ => date.format("%Y-%m-%d").to_string(),
        };
        out.push(Period {
            label,
            start_ms: s,
            end_ms: e,
        });
        if out.len() > MAX_PERIODS {
            bail!("too many periods; use a longer --by or a shorter --since/--until");
        }
        date = next;
        s = e;
    }
    Ok(out)
}

/// `logscope availability --sql`: the report's SQL twin.
fn sql_twin(data: &Path, a: &AvailabilityArgs) -> anyhow::Result<i32> {
    use logscope_core::classify::StatusSet;
    use logscope_core::sqlgen::availability::{Options, Policy};
    let mut refused = Vec::new();
    if matches!(a.by, ByArg::Week | ByArg::Hour) {
        refused.push("--by week/hour (month and day only)");
    }
    if !refused.is_empty() {
        return Err(sqlgen::refuse(&refused));
    }
    if let Some(p) = &a.probe {
        regex::Regex::new(p).map_err(|e| {
            usage_error(format!(
                "--probe is not a valid regex: {} (e.g. 'Special:BlankPage' or '^/healthz$')",
                super::filters::regex_problem(&e)
            ))
        })?;
    }
    let success = match &a.success {
        Some(s) => StatusSet::parse(s).map_err(|e| usage_error(format!("--success: {e}")))?,
        None if a.probe.is_some() => StatusSet::from_ranges(&[(200, 399)]),
        None => StatusSet::from_ranges(&[(100, 499)]),
    };
    let policy = StatusSet::parse_or_none(&a.policy_status)
        .map_err(|e| usage_error(format!("--policy-status: {e} (or none)")))?;
    let p = sqlgen::parts(data, &a.sql, &a.filters, &a.rows, a.filters.agent.is_some())?;
    let o = Options {
        probe: a.probe.as_deref(),
        day: a.by == ByArg::Day,
        success: &success,
        policy: &policy,
        policy_as: match a.policy {
            PolicyArg::Exclude => Policy::Exclude,
            PolicyArg::Success => Policy::Success,
            PolicyArg::Failure => Policy::Failure,
        },
        expect_every_ms: a.expect_every.map(Span::ms_i64),
        min_gap_ms: a.min_gap.map(Span::ms_i64),
        bucket_ms: a.bucket.ms_i64(),
    };
    let s = twin::availability::script(&p.twin(), &o);
    sqlgen::print(&p, &s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tz(name: &str) -> chrono_tz::Tz {
        name.parse().unwrap()
    }

    fn utc(s: &str) -> i64 {
        chrono::DateTime::parse_from_rfc3339(s)
            .unwrap()
            .timestamp_millis()
    }

    #[test]
    fn months_follow_dst() {
        let berlin = tz("Europe/Berlin");
        let p = periods(
            berlin,
            By::Month,
            utc("2025-01-15T00:00:00Z"),
            utc("2025-12-01T00:00:00Z"),
        )
        .unwrap();
        let hours: Vec<(String, i64)> = p
            .iter()
            .map(|p| (p.label.clone(), (p.end_ms - p.start_ms) / 3_600_000))
            .collect();
        assert_eq!(hours[2], ("2025-03".to_string(), 743));
        assert_eq!(hours[9], ("2025-10".to_string(), 745));
        assert_eq!(hours[3], ("2025-04".to_string(), 720));
        assert_eq!(p[0].start_ms, utc("2024-12-31T23:00:00Z"));
        assert_eq!(p[3].start_ms, utc("2025-03-31T22:00:00Z"));
        let seoul = tz("Asia/Seoul");
        let p = periods(
            seoul,
            By::Month,
            utc("2025-05-31T15:00:00Z"),
            utc("2025-06-30T15:00:00Z"),
        )
        .unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].label, "2025-06");
    }

    #[test]
    fn days_weeks_hours_in_a_zone() {
        let berlin = tz("Europe/Berlin");
        let p = periods(
            berlin,
            By::Day,
            utc("2025-10-25T22:00:00Z"),
            utc("2025-10-26T23:00:00Z"),
        )
        .unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].end_ms - p[0].start_ms, 25 * 3_600_000);
        let p = periods(
            berlin,
            By::Week,
            utc("2025-03-30T12:00:00Z"),
            utc("2025-03-30T13:00:00Z"),
        )
        .unwrap();
        assert_eq!(p[0].label, "2025-W13");
        assert_eq!(p[0].end_ms - p[0].start_ms, (7 * 24 - 1) * 3_600_000);
        let p = periods(
            berlin,
            By::Hour,
            utc("2025-10-25T23:30:00Z"),
            utc("2025-10-26T02:00:00Z"),
        )
        .unwrap();
        let labels: Vec<&str> = p.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "2025-10-26 01:00",
                "2025-10-26 02:00 +02:00",
                "2025-10-26 02:00 +01:00"
            ]
        );
        let kolkata = tz("Asia/Kolkata");
        let p = periods(
            kolkata,
            By::Hour,
            utc("2025-01-01T00:00:00Z"),
            utc("2025-01-01T00:01:00Z"),
        )
        .unwrap();
        assert_eq!(p[0].start_ms, utc("2024-12-31T23:30:00Z"));
        assert_eq!(p[0].label, "2025-01-01 05:00");
    }
}
