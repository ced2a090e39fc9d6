//! `logscope report`: the incident post in one command — findings in plain sentences,
//! then heavy requests over time against the capacity (the incident shaded), the
//! concentration and agent mix of the heavy requests in the incident, and the tables of
//! each part — written as one self-contained HTML page and a paste-ready Markdown file
//! with its charts as SVG files beside it. Every part is the same computation as its own
//! command (`heavy`, `concentration`, `agents`), run over the same selection.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use logscope_core::chart::{
    self, Bar, Bars, Lorenz, RefLine, Series, Shade, StackRow, Stacked, TimeSeries,
};
use logscope_core::duration::Duration;
use logscope_core::escape;
use logscope_core::forensics::agents::AgentsReport;
use logscope_core::forensics::concentration::ConcentrationReport;
use logscope_core::forensics::doc::{Doc, Figure, KeyFigure, Section};
use logscope_core::forensics::heavy::{AUTO_MAX_BUCKETS, HeavyReport};
use logscope_core::forensics::incident;
use logscope_core::forensics::top as top_report;
use logscope_core::forensics::top::{TopBy, TopSort};
use logscope_core::number::thousands;
use logscope_core::rate::Rate;
use logscope_core::replay::report::Who;

use logscope_core::forensics::capacity::{CapacityReport, Scope};
use logscope_core::forensics::concentration::GroupBy;
use logscope_core::forensics::doc::Document as _;

use super::filters::{FilterArgs, Width, rate_arg, width_arg};
use super::rows::RowArgs;
use super::{availability, output, replay, usage_error};
use crate::engine::report;
use crate::reports::capacity::Capacity;
use crate::reports::{self, concentration::Concentration, heavy::Heavy, top::Top};

/// Arguments of `logscope report`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  logscope report                                         # reports/report-FIRST_LAST/
  logscope report --since 2026-09-25 --until 2026-09-25 --tz Asia/Seoul --capacity 1610/10m --out storm
  logscope report --out year access.log                   # a log file, nothing ingested
  logscope report --by 1h --out march access.log          # hourly, whatever the span
  logscope report --capacity 1610/10m --limit 1600/10m,scope=anonymous-heavy --probe '^/healthz$' --out fix

Writes reports/NAME/index.html (one self-contained page: inline SVG and CSS, no script,
no network; prints well) and reports/NAME/report.md (GitHub-flavoured Markdown) with its
charts as SVG files beside it, and says where. A bare --out NAME goes under ./reports/, a
path with a `/` is used as given; without --out the name is report-FIRST_LAST, the first
and last day of the selected requests on the --tz clock (reports/report-2026-09-25 for
one day). An existing report is replaced only with --force.

The page opens with key figures (requests, failed — status ≥ 400 —, clients, unique
visitors as GoAccess counts them, data sent, span) and findings computed from the data, then
heavy requests over time against --capacity (the incident shaded), the concentration and
agent mix of the heavy requests in the incident (or of all heavy requests without one) —
with --asn-db also their autonomous systems —, requests and unique visitors per day, top
paths and statuses, availability
per month (--probe as in `availability`), each --limit candidate (what it refused, the
load against --capacity, whom it hurt), and each part's tables. Every part is the same
computation as its own command, one pass each, so FILE arguments are read several times
(standard input cannot be: ingest it first).

Buckets: --by auto (the default) takes the smallest of 1m, 5m, 10m, 30m, 1h, 3h, 6h, 1d,
1w that gives at most 400 buckets from the first selected request to the last (a
6-month log: 1d) and, with --capacity, is not finer than its window; the page says
which it chose.

The incident: with --capacity, the buckets whose aligned peak is above it. Without, it
is found from the data: the run of buckets around the busiest (heavy requests, or all
requests when none is heavy) each above 4 times the median bucket; none when the peak is
not above it. The title says \"Incident report: WINDOW\" when there is an incident, else
\"Traffic report: SPAN\".

Long tables: a table of more than 50 rows shows its 50 busiest rows (per-bucket tables:
the buckets with the most, in time order) and says \"N more rows: full data in
NAME.csv\", written beside the page. Sections without data (no rows, or only zeros) are
left out. Sources are named by file name (--full-paths for full paths).")]
pub struct ReportArgs {
    /// Bucket width of the time series: auto (chosen from the span, at most 400
    /// buckets, not finer than the --capacity window), or a duration: 10m, 1h, 1d.
    #[arg(long, value_name = "WIDTH", default_value = "auto", value_parser = width_arg)]
    pub by: Width,

    /// Heavy requests the server can take per window, e.g. 1610/10m: the incident is
    /// where the aligned peak went above it.
    #[arg(long, value_name = "N/WINDOW", value_parser = rate_arg)]
    pub capacity: Option<Rate>,

    /// The probe of the availability section (a regex on path?query, as `availability
    /// --probe`); without it availability is inferred from the site's own rhythm.
    #[arg(long, value_name = "REGEX")]
    pub probe: Option<String>,

    /// A candidate limit to replay (`logscope replay --limit` syntax, repeatable), e.g.
    /// 1600/10m,scope=anonymous-heavy: what it would have refused, and whom.
    #[arg(long = "limit", value_name = "SPEC")]
    pub limits: Vec<String>,

    /// The report's name: a bare NAME is written to ./reports/NAME/, a path with a `/`
    /// as given. Default: reports/report-FIRST_LAST, the first and last day of the
    /// selected requests (reports/report-DAY for one day).
    #[arg(long, value_name = "NAME")]
    pub out: Option<PathBuf>,

    /// Replace an existing report directory (only one that holds a logscope report).
    #[arg(long)]
    pub force: bool,

    /// Which rows: the shared filters.
    #[command(flatten)]
    pub filters: FilterArgs,

    /// Where rows come from: FILEs or the dataset.
    #[command(flatten)]
    pub rows: RowArgs,
}

/// Tables longer than this show their most relevant rows, the whole table in a CSV file.
const LONG_TABLE: usize = 50;

/// One chart of the report: its file name (Markdown) and the figure.
struct Chart {
    file: String,
    figure: Figure,
}

/// Runs `logscope report`.
pub fn run(data: &Path, args: ReportArgs) -> anyhow::Result<i32> {
    let named = match &args.out {
        Some(out) => {
            let dir = report_dir(out)?;
            check_target(&dir, &format!("--out {}", escape::path(&dir)), args.force)?;
            Some(dir)
        }
        None => None,
    };
    // Each part reads the rows again: standard input would be empty after the first.
    if args.rows.files.iter().any(|f| f == "-") {
        return Err(usage_error(
            "report reads its inputs once per part, so it cannot read standard input; ingest it first (zcat old.log.gz | logscope ingest -), then run logscope report without FILE",
        ));
    }
    // Every part runs over the same rows, each with its own selection (a run prepares
    // the selection's classifier for the columns it reads).
    let source = args.rows.source(data)?;
    // The first-hour breakdowns over the whole selection: paths and statuses.
    let breakdown = |by: TopBy| -> anyhow::Result<top_report::TopReport> {
        let top = Top::new(by, TopSort::Requests, 10);
        Ok(report::run(&source, &mut args.filters.build()?, top)?.0)
    };
    // The paths first: without --out, their first and last day name the report.
    let paths = breakdown(TopBy::Path)?;
    let dir = match named {
        Some(dir) => dir,
        None => {
            let dir = default_dir(&paths);
            let what = format!(
                "{} (no --out: named after the first and last day of the selection)",
                escape::path(&dir)
            );
            check_target(&dir, &what, args.force)?;
            dir
        }
    };
    // Heavy requests over the whole selection.
    let heavy = match args.by {
        Width::Auto => Heavy::auto(args.capacity).with_networks(args.filters.network_db()?),
        Width::Fixed(by) => Heavy::new(by, args.capacity).with_networks(args.filters.network_db()?),
    };
    let (hv, stats) = report::run(&source, &mut args.filters.build()?, heavy)?;
    // Every time series of the page in the heavy part's buckets.
    let by =
        Duration::from_ms(hv.width_ms.max(1) as u64).context("the bucket width is out of range")?;
    // The incident: from the first to the last bucket over capacity; without a
    // capacity, found from the data.
    let burst = match args.capacity {
        Some(_) => None,
        None => incident::find(&hv),
    };
    // Its first and last bucket, and the UTC span [start, end) they cover.
    let window = match &burst {
        Some(b) => Some((b.first, b.last)),
        None => over_capacity(&hv),
    };
    let incident = window.map(|(first, last)| {
        (
            hv.buckets[first].start_utc_ms,
            hv.buckets[last].start_utc_ms + hv.width_ms,
        )
    });
    // Concentration and agents of the heavy requests, in the incident when there is one.
    let mut focus = args.filters.clone();
    if hv.heavy > 0 {
        focus.heavy = true;
    }
    if let Some((start, end)) = incident {
        focus.since = Some(logscope_core::time::format_rfc3339_ms(start));
        focus.until = Some(logscope_core::time::format_rfc3339_ms(end));
    }
    // With --asn-db: the networks' AS column, and the same rows by autonomous system.
    let networks = args.filters.network_db()?;
    let (conc, _) = report::run(
        &source,
        &mut focus.build()?,
        Concentration::new(GroupBy::Prefix, None, networks.clone(), 20)
            .with_hosting(args.filters.hosting_asns()?),
    )?;
    let by_as = match &networks {
        Some(db) => Some(
            report::run(
                &source,
                &mut focus.build()?,
                Concentration::new(GroupBy::Asn, None, Some(db.clone()), 20),
            )?
            .0,
        ),
        None => None,
    };
    let (ag, _) = reports::agents::run(&source, &mut focus.build()?, 0, 1, 10)?;
    let avail = {
        use clap::{Args as _, FromArgMatches as _};
        let m = availability::AvailabilityArgs::augment_args(clap::Command::new("availability"))
            .try_get_matches_from(["availability"])?;
        let mut a = availability::AvailabilityArgs::from_arg_matches(&m)?;
        a.filters = args.filters.clone();
        a.rows = args.rows.clone();
        a.probe = args.probe.clone();
        availability::compute(data, &a)?
    };
    let replayed = if args.limits.is_empty() {
        None
    } else {
        use clap::{Args as _, FromArgMatches as _};
        let mut argv = vec!["replay".to_string()];
        for l in &args.limits {
            argv.push("--limit".into());
            argv.push(l.clone());
        }
        let m = replay::ReplayArgs::augment_args(clap::Command::new("replay"))
            .try_get_matches_from(argv)?;
        let mut a = replay::ReplayArgs::from_arg_matches(&m)?;
        *a.filters = args.filters.clone();
        a.rows = args.rows.clone();
        a.capacity = args.capacity;
        match replay::compute(data, &a)? {
            Ok(r) => Some(r.report),
            Err(code) => return Ok(code),
        }
    };
    // What the backend took per window, over the heavy requests when there are some.
    let scope = if hv.heavy > 0 {
        Scope::Heavy
    } else {
        Scope::All
    };
    let (cap, _) = report::run(
        &source,
        &mut args.filters.build()?,
        Capacity::new(by, scope),
    )?;
    let statuses = breakdown(TopBy::Status)?;
    // GoAccess's first panel: requests and unique visitors per day.
    let days = breakdown(TopBy::Day)?;

    let clock = args.filters.build()?.clock;
    let mut doc = Doc {
        title: title(&hv, &args, window),
        ..Doc::default()
    };
    doc.lines = findings(&hv, &conc, &ag, incident.is_some());
    if let Some(line) = by_as
        .as_ref()
        .and_then(|a| as_finding(a, &hv, incident.is_some()))
    {
        // After the networks' sentence.
        let at = doc.lines.len().min(3);
        doc.lines.insert(at, line);
    }
    // With --hosting-asns: the heavy requests by network class; with
    // --crawler-ranges: the impostors.
    if let Some(line) =
        logscope_core::forensics::concentration::class_sentence(&conc.network_classes)
    {
        let at = doc.lines.len().min(4);
        doc.lines.insert(at, line);
    }
    for c in ag.crawlers.iter().filter(|c| c.requests > 0) {
        doc.lines.push(format!(
            "In the incident, {} of the {} heavy requests claiming to be {} came from outside its published ranges (impostors), {} from inside.",
            thousands(c.impostors),
            thousands(c.requests),
            c.name,
            thousands(c.verified)
        ));
    }
    if hv.requests > 0 {
        doc.lines.insert(1, width_line(&hv, &paths));
    }
    if let Some(b) = &burst {
        doc.lines.insert(2, burst_line(&hv, b));
    }
    let keys = key_figures(&paths, &days);
    if let Some(r) = &replayed {
        doc.lines.extend(replay_findings(r));
    }
    if let Some(line) = top_finding(&paths, &statuses) {
        doc.lines.push(line);
    }
    if let Some(line) = capacity_finding(&cap) {
        doc.lines.push(line);
    }
    doc.lines.push(format!("Source: {}.", stats.origin));
    let mut charts = Vec::new();
    if hv.requests > 0 {
        charts.push(Chart {
            file: "heavy.svg".into(),
            figure: heavy_chart(&hv, incident, |t| clock.local(t)),
        });
    }
    if conc.requests > 0 {
        charts.push(Chart {
            file: "concentration.svg".into(),
            figure: lorenz_chart(&conc),
        });
        charts.push(Chart {
            file: "networks.svg".into(),
            figure: networks_chart(&conc),
        });
    }
    if ag.selected > 0 {
        charts.push(Chart {
            file: "agents.svg".into(),
            figure: agents_chart(&ag),
        });
    }
    let cap_doc = cap.doc(usize::MAX);
    let has_cap = cap.requests > 0;
    if has_cap {
        for f in &cap_doc.figures {
            charts.push(Chart {
                file: "capacity.svg".into(),
                figure: f.clone(),
            });
        }
    }
    // The breakdowns' own charts.
    for (name, part) in [("paths", &paths), ("statuses", &statuses)] {
        if part.requests == 0 {
            continue;
        }
        for (k, f) in part.doc().figures.into_iter().enumerate() {
            charts.push(Chart {
                file: if k == 0 {
                    format!("{name}.svg")
                } else {
                    format!("{name}-{k}.svg")
                },
                figure: f,
            });
        }
    }
    let avail_doc = availability::doc(&avail, 20);
    let has_avail = avail.report.periods.iter().any(|p| p.requests > 0);
    if has_avail {
        let per: Vec<String> = avail
            .report
            .periods
            .iter()
            .filter_map(|p| {
                p.availability
                    .map(|a| format!("{} {:.2}% ({})", p.label, a, p.grade.word()))
            })
            .take(12)
            .collect();
        if !per.is_empty() {
            let how = if args.probe.is_some() {
                "from the probe"
            } else {
                "inferred from dynamic requests and improbable silences"
            };
            doc.lines
                .push(format!("Availability ({how}): {}.", per.join(", ")));
        }
        for (k, f) in avail_doc.figures.iter().enumerate() {
            charts.push(Chart {
                file: if k == 0 {
                    "availability.svg".into()
                } else {
                    format!("availability-{k}.svg")
                },
                figure: f.clone(),
            });
        }
    }
    // The parts' own tables, each under its own heading; long tables cut, in full in
    // a CSV file beside the page.
    let mut csvs: Vec<(String, String)> = Vec::new();
    for (name, part, keep) in [
        ("availability", avail_doc, has_avail),
        ("heavy", hv.doc(0), hv.requests > 0),
        ("capacity", cap_doc, has_cap),
        ("concentration", conc.doc(), conc.requests > 0),
        (
            "autonomous-systems",
            by_as.as_ref().map(|a| a.doc()).unwrap_or_default(),
            by_as.as_ref().is_some_and(|a| a.requests > 0),
        ),
        ("agents", ag.doc(), ag.selected > 0),
        ("days", days.doc(), days.requests > 0),
        ("paths", paths.doc(), paths.requests > 0),
        ("statuses", statuses.doc(), statuses.requests > 0),
    ] {
        if keep {
            add_part(&mut doc, name, part, &mut csvs);
        }
    }
    if let Some(r) = &replayed {
        let part = r.doc();
        for (k, f) in part.figures.iter().enumerate() {
            charts.push(Chart {
                file: format!("replay-{}.svg", k + 1),
                figure: f.clone(),
            });
        }
        add_part(&mut doc, "replay", part, &mut csvs);
    }
    doc.figures = charts.iter().map(|c| c.figure.clone()).collect();
    write_report(&dir, &doc, &keys, &charts, &csvs)?;
    eprintln!(
        "logscope: wrote {} and {}{}",
        output::shown_path(&dir.join("index.html")),
        output::shown_path(&dir.join("report.md")),
        match &args.out {
            None => " (no --out: named after the first and last day of the selection)",
            Some(out) if dir != *out => " (a bare --out name is written under ./reports/)",
            Some(_) => "",
        }
    );
    Ok(stats.exit_code())
}

/// The capacity estimate in one sentence, when the log tells one.
fn capacity_finding(cap: &CapacityReport) -> Option<String> {
    let e = &cap.capacity;
    let what = if e.scope == "heavy" {
        "heavy requests"
    } else {
        "requests"
    };
    let line = match (e.reached, e.held_per_window, e.stall_per_window) {
        (true, Some(h), Some(s)) => format!(
            "The backend held {} {what} per {} and stalled at {}",
            thousands(h),
            e.window,
            thousands(s)
        ),
        (false, Some(h), _) => format!(
            "The backend never stalled: it handled up to {} {what} per {} fine (its capacity is not reached)",
            thousands(h),
            e.window
        ),
        _ => return None,
    };
    let peak = match (e.capacity_per_window, e.requests_per_second) {
        (Some(c), Some(r)) => format!(
            "; its peak throughput while saturated was {} per {} ({r:.1} requests/s)",
            thousands(c),
            e.window
        ),
        _ => String::new(),
    };
    Some(format!("{line}{peak} (confidence {}).", cap.confidence))
}

/// Without `--out`: `reports/report-FIRST_LAST`, the first and last day of the selected
/// requests on the report's clock (`reports/report-DAY` for one day,
/// `reports/report-empty` for none) — from the data, never the wall clock.
fn default_dir(paths: &top_report::TopReport) -> PathBuf {
    let day = |s: &Option<String>| s.as_deref().and_then(|s| s.get(..10)).map(str::to_string);
    let name = match (day(&paths.first_seen), day(&paths.last_seen)) {
        (Some(a), Some(b)) if a == b => format!("report-{a}"),
        (Some(a), Some(b)) => format!("report-{a}_{b}"),
        _ => "report-empty".to_string(),
    };
    Path::new("reports").join(name)
}

/// `reports/NAME` for a bare name, else the path as given.
fn report_dir(out: &Path) -> anyhow::Result<PathBuf> {
    let s = out.as_os_str();
    if s.is_empty() || out == Path::new(".") || out == Path::new("..") {
        return Err(usage_error(
            "--out needs a report name (e.g. --out storm, written to reports/storm/)",
        ));
    }
    Ok(if out.components().count() == 1 && !out.is_absolute() {
        Path::new("reports").join(out)
    } else {
        out.to_path_buf()
    })
}

/// An existing directory is replaced only with --force and only when it holds a report;
/// `what` names it in messages (`--out reports/storm`).
fn check_target(dir: &Path, what: &str, force: bool) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Err(_) => Ok(()),
        Ok(m) if !m.is_dir() => Err(usage_error(format!(
            "{what}: exists and is not a directory (e.g. --out storm-2)"
        ))),
        Ok(_) if !dir.join("index.html").exists() || !dir.join("report.md").exists() => {
            Err(usage_error(format!(
                "{what}: the directory exists and does not hold a logscope report; choose another name (e.g. --out storm-2)"
            )))
        }
        Ok(_) if !force => Err(usage_error(format!(
            "{what}: a report of that name exists; give --force to replace it, or --out NAME for another (e.g. --out storm --force)"
        ))),
        Ok(_) => Ok(()),
    }
}

/// Writes the page, the Markdown, the charts and the CSV files of long tables into a
/// new directory beside `dir`, then puts it in place of `dir` (the old one, if any,
/// removed after).
fn write_report(
    dir: &Path,
    doc: &Doc,
    keys: &[KeyFigure],
    charts: &[Chart],
    csvs: &[(String, String)],
) -> anyhow::Result<()> {
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create {}", escape::path(parent)))?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir(&tmp).with_context(|| format!("cannot create {}", escape::path(&tmp)))?;
    let result = (|| -> anyhow::Result<()> {
        let write = |file: &str, text: &str| {
            let p = tmp.join(file);
            std::fs::write(&p, text).with_context(|| format!("cannot write {}", escape::path(&p)))
        };
        write("index.html", &doc.html_with(keys))?;
        write("report.md", &markdown(doc, keys, charts))?;
        for c in charts {
            write(&c.file, &svg_file(&c.figure.svg))?;
        }
        for (file, csv) in csvs {
            write(file, csv)?;
        }
        Ok(())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    let old = parent.join(format!(".{name}.old-{}", std::process::id()));
    let had_old = dir.exists();
    if had_old {
        std::fs::rename(dir, &old)
            .with_context(|| format!("cannot move {} aside", escape::path(dir)))?;
    }
    std::fs::rename(&tmp, dir).with_context(|| format!("cannot write {}", escape::path(dir)))?;
    if had_old {
        let _ = std::fs::remove_dir_all(&old);
    }
    Ok(())
}

/// An inline SVG as a file of its own.
fn svg_file(svg: &str) -> String {
    let svg = if svg.contains("xmlns=") {
        svg.to_string()
    } else {
        svg.replacen("<svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"", 1)
    };
    format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{svg}\n")
}

/// The Markdown: the Doc's own, with the key figures under the title and the charts as
/// images after the findings.
fn markdown(doc: &Doc, keys: &[KeyFigure], charts: &[Chart]) -> String {
    let mut no_figures = doc.clone();
    no_figures.figures.clear();
    no_figures.figure = None;
    let md = no_figures.markdown_with(keys);
    let mut images = String::new();
    for c in charts {
        let _ = writeln!(
            images,
            "\n![{}]({})",
            escape::markdown(&c.figure.title),
            c.file
        );
    }
    match md.find("\n### ") {
        Some(i) => format!("{}{}{}", &md[..i], images, &md[i..]),
        None => md + &images,
    }
}

/// "Incident report: WINDOW" when there is an incident (`window`: its first and last
/// bucket), else "Traffic report: SPAN" (the span of the buckets), with the time zone
/// when it is not UTC.
fn title(hv: &HeavyReport, args: &ReportArgs, window: Option<(usize, usize)>) -> String {
    let mut t = String::from(if window.is_some() {
        "Incident report"
    } else {
        "Traffic report"
    });
    let (first, last) = match window {
        Some((a, b)) => (hv.buckets.get(a), hv.buckets.get(b)),
        None => (hv.buckets.first(), hv.buckets.last()),
    };
    if let (Some(first), Some(last)) = (first, last) {
        let _ = write!(
            t,
            ": {}",
            window_label(first.start_local_ms, last.start_local_ms + hv.width_ms)
        );
    }
    if args.filters.tz != "UTC" {
        let _ = write!(t, " ({})", args.filters.tz);
    }
    t
}

/// Local times `[start, end)` in words: whole days as dates (the last day included:
/// `2026-03-14`, `2026-03-14 to 2026-03-16`), else minutes (`2026-03-14 10:00 to
/// 12:00`, `2026-03-14 22:00 to 2026-03-15 02:00`).
fn window_label(start: i64, end: i64) -> String {
    use logscope_core::forensics::local_label;
    const DAY: i64 = 86_400_000;
    if start.rem_euclid(DAY) == 0 && end.rem_euclid(DAY) == 0 {
        let (a, b) = (local_label(start, true), local_label(end - DAY, true));
        return if a == b { a } else { format!("{a} to {b}") };
    }
    let (a, b) = (local_label(start, false), local_label(end, false));
    if a.get(..10) == b.get(..10) {
        format!("{a} to {}", &b[11..])
    } else {
        format!("{a} to {b}")
    }
}

/// A span of time in words: `183 days`, `36 hours`, `45 minutes`, `20 seconds`.
fn span_words(ms: i64) -> String {
    let plural = |n: i64, unit: &str| {
        if n == 1 {
            format!("1 {unit}")
        } else {
            format!("{} {unit}s", thousands(n as u64))
        }
    };
    let round = |unit: i64| (ms + unit / 2) / unit;
    if ms >= 2 * 86_400_000 {
        plural(round(86_400_000), "day")
    } else if ms >= 2 * 3_600_000 {
        plural(round(3_600_000), "hour")
    } else if ms >= 2 * 60_000 {
        plural(round(60_000), "minute")
    } else {
        plural(round(1000).max(0), "second")
    }
}

/// The selection's first and last request (UTC ms), from `top`'s figures.
fn first_last(paths: &top_report::TopReport) -> Option<(i64, i64)> {
    let t = |s: &Option<String>| {
        s.as_deref()
            .and_then(|s| logscope_core::time::parse_rfc3339_ms(s.as_bytes()))
    };
    Some((t(&paths.first_seen)?, t(&paths.last_seen)?))
}

/// The bucket width in a sentence: chosen, or as --by asked.
fn width_line(hv: &HeavyReport, paths: &top_report::TopReport) -> String {
    if !hv.auto_width {
        return format!("Buckets of {}, as --by asked.", hv.by);
    }
    let span = first_last(paths).map_or(0, |(a, b)| b - a);
    let words = span_words(span);
    let (n, unit) = words.split_once(' ').unwrap_or((&words, ""));
    let unit = unit.strip_suffix('s').unwrap_or(unit);
    format!(
        "Buckets of {}, chosen for a {n}-{unit} span (at most {AUTO_MAX_BUCKETS} buckets); --by to choose.",
        hv.by
    )
}

/// The incident found from the data, in a sentence that states the rule.
fn burst_line(hv: &HeavyReport, b: &incident::Burst) -> String {
    let what = if b.heavy {
        "heavy requests"
    } else {
        "requests"
    };
    let (first, last) = (&hv.buckets[b.first], &hv.buckets[b.last]);
    format!(
        "The incident, found from the data: {}, the run of {} buckets around the busiest ({} {what} in the bucket of {}) with more than {} times the median bucket ({}), i.e. more than {}.",
        window_label(first.start_local_ms, last.start_local_ms + hv.width_ms),
        hv.by,
        thousands(b.peak_value),
        hv.buckets[b.peak].label,
        incident::FACTOR,
        thousands(b.median),
        thousands(b.threshold)
    )
}

/// The key figures of the selection, from `top`'s totals (the same numbers as `top
/// --format json`): requests, failed (status ≥ 400), clients (distinct, exact or
/// estimated as `top` counts them), unique visitors (GoAccess's: the days' distinct
/// address and User-Agent, summed, as `top --by day` lists them), data sent (body
/// bytes), span.
fn key_figures(paths: &top_report::TopReport, days: &top_report::TopReport) -> Vec<KeyFigure> {
    if paths.requests == 0 {
        return Vec::new();
    }
    let rows = &days.breakdown.rows;
    let visitors = rows.iter().map(|r| r.clients).sum::<u64>();
    let visitors_estimated = rows.iter().any(|r| r.clients_estimated);
    let key = |label: &str, value: String, note: Option<String>| KeyFigure {
        label: label.into(),
        value,
        note,
    };
    let mut keys = vec![
        key("requests", thousands(paths.requests), None),
        key(
            "failed",
            thousands(paths.errors),
            Some(format!(
                "{}, status ≥ {}",
                pct(paths.error_share),
                paths.error_status
            )),
        ),
        key(
            "clients",
            top_report::clients_label(paths.clients, paths.clients_estimated),
            Some(
                if paths.clients_estimated {
                    "distinct clients, estimated"
                } else {
                    "distinct clients, exact"
                }
                .into(),
            ),
        ),
        key(
            "unique visitors",
            top_report::clients_label(visitors, visitors_estimated),
            Some("address and User-Agent per day, as GoAccess counts them".into()),
        ),
        key(
            "data sent",
            top_report::bytes_label(paths.bytes),
            Some("response bodies".into()),
        ),
    ];
    if let (Some((a, b)), Some(f), Some(l)) =
        (first_last(paths), &paths.first_seen, &paths.last_seen)
    {
        let short = |s: &str| s.get(..16).unwrap_or(s).replacen('T', " ", 1);
        keys.push(key(
            "span",
            span_words(b - a),
            Some(format!("{} to {}", short(f), short(l))),
        ));
    }
    keys
}

/// Adds a part's heading and tables to `doc`: tables without data (no rows, only
/// zeros) left out, a table longer than [`LONG_TABLE`] rows cut to its most relevant
/// rows with the whole of it as `NAME.csv` in `csvs` (typed, as the part's own CSV
/// output, when the part has one for it).
fn add_part(doc: &mut Doc, name: &str, part: Doc, csvs: &mut Vec<(String, String)>) {
    doc.sections.push(Section {
        title: Some(part.title.clone()),
        table: None,
        notes: part.lines.clone(),
    });
    let mut written = 0;
    for (i, mut s) in part.sections.into_iter().enumerate() {
        let Some(t) = &s.table else {
            doc.sections.push(s);
            continue;
        };
        if t.is_empty() || t.all_zero() {
            continue;
        }
        if let Some((short, more)) = t.summary(LONG_TABLE) {
            written += 1;
            let file = if written == 1 {
                format!("{name}.csv")
            } else {
                format!("{name}-{written}.csv")
            };
            let csv = match &part.csv {
                Some(c) if part.csv_section == i && c.len() == t.len() => c.to_csv(),
                _ => t.to_csv(),
            };
            csvs.push((file.clone(), csv));
            let which = match t.ranked() {
                Some(col) => {
                    format!("the {LONG_TABLE} rows with the most \"{col}\", in table order")
                }
                None => format!("the first {LONG_TABLE} rows"),
            };
            s.notes.insert(
                0,
                format!(
                    "{} more rows: full data in {file} (shown: {which}).",
                    thousands(more as u64)
                ),
            );
            s.table = Some(short);
        }
        doc.sections.push(s);
    }
}

/// The first and last bucket over capacity (indices in `hv.buckets`).
fn over_capacity(hv: &HeavyReport) -> Option<(usize, usize)> {
    let first = hv.buckets.iter().position(|b| b.over_capacity)?;
    let last = hv.buckets.iter().rposition(|b| b.over_capacity)?;
    Some((first, last))
}

fn pct(share: f64) -> String {
    if share > 0.0 && share < 0.001 {
        "<0.1%".into()
    } else {
        format!("{:.1}%", share * 100.0)
    }
}

/// With --asn-db: where the (heavy) requests came from by autonomous system.
fn as_finding(by_as: &ConcentrationReport, hv: &HeavyReport, incident: bool) -> Option<String> {
    let first = by_as.top.first()?;
    let whom = match (incident, hv.heavy > 0) {
        (true, true) => "In the incident the heavy requests",
        (true, false) => "In the incident the requests",
        (false, true) => "The heavy requests",
        (false, false) => "The requests",
    };
    let name = first
        .asn
        .as_ref()
        .map(|a| format!("{} {}", first.group, a.name))
        .unwrap_or_else(|| first.group.clone());
    Some(format!(
        "{whom} came from {} autonomous systems; the largest, {name}, sent {}, and {} of them sent half.",
        thousands(by_as.groups),
        pct(by_as.top_share),
        thousands(by_as.groups_for_50),
    ))
}

/// The findings: plain sentences computed from the parts.
fn findings(
    hv: &HeavyReport,
    conc: &ConcentrationReport,
    ag: &AgentsReport,
    incident: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    if hv.requests == 0 {
        out.push("No request matched the selection.".into());
        return out;
    }
    out.push(format!(
        "{} requests, {} of them heavy ({}). Heavy: {}.",
        thousands(hv.requests),
        thousands(hv.heavy),
        pct(hv.heavy as f64 / hv.requests as f64),
        hv.heavy_rules
    ));
    if let Some(cap) = &hv.capacity {
        let peak = hv
            .buckets
            .iter()
            .filter_map(|b| b.peak.map(|p| (p, b)))
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.start_utc_ms.cmp(&a.1.start_utc_ms)));
        if let Some((p, b)) = peak {
            let rel = if p > cap.count { "above" } else { "within" };
            out.push(format!(
                "Heavy requests peaked at {} per aligned {} in the bucket of {}, {rel} the capacity of {}; {} of {} buckets went over it.",
                thousands(p),
                cap.window,
                b.label,
                thousands(cap.count),
                thousands(hv.buckets_over_capacity),
                thousands(hv.buckets.len() as u64)
            ));
        }
    } else if hv.heavy > 0 {
        if let Some(b) = hv.buckets.iter().max_by(|a, b| {
            a.heavy
                .cmp(&b.heavy)
                .then(b.start_utc_ms.cmp(&a.start_utc_ms))
        }) {
            out.push(format!(
                "The most heavy requests in one bucket ({}): {} at {}.",
                hv.by,
                thousands(b.heavy),
                b.label
            ));
        }
    } else if let Some(b) = hv.buckets.iter().max_by(|a, b| {
        a.requests
            .cmp(&b.requests)
            .then(b.start_utc_ms.cmp(&a.start_utc_ms))
    }) {
        out.push(format!(
            "The busiest {}: {} requests at {}; no request matched the heavy rules.",
            hv.by,
            thousands(b.requests),
            b.label
        ));
    }
    if conc.requests > 0 {
        let whom = match (incident, hv.heavy > 0) {
            (true, true) => "In the incident the heavy requests",
            (true, false) => "In the incident the requests",
            (false, true) => "The heavy requests",
            (false, false) => "The requests",
        };
        let unit = if conc.prefix_v4 == 24 {
            "/24 networks".to_string()
        } else {
            format!("/{} networks", conc.prefix_v4)
        };
        let verdict = if conc.top_share < 0.1 {
            ": a per-network limit would not have stopped them"
        } else if conc.top_share >= 0.5 {
            ": one network sent most of them, so a per-network limit would have"
        } else {
            ""
        };
        out.push(format!(
            "{whom} came from {} {unit} ({} addresses), the largest {}{verdict}.",
            thousands(conc.groups),
            thousands(conc.distinct_ips),
            pct(conc.top_share),
        ));
    }
    if ag.selected > 0 {
        let bots: u64 = ag.bots.iter().map(|b| b.selected).sum();
        out.push(format!(
            "{} claimed to be mobile browsers; {} came from declared bots and tools.",
            pct(ag.mobile_selected as f64 / ag.selected as f64),
            pct(bots as f64 / ag.selected as f64)
        ));
    }
    out
}

/// One sentence per replayed candidate: what it would have refused, and the load.
fn replay_findings(r: &logscope_core::replay::report::ReplayReport) -> Vec<String> {
    r.candidates
        .iter()
        .map(|c| {
            let mut line = format!(
                "The limit {} would have refused {} of the {} requests it limits ({})",
                c.name,
                thousands(c.refused),
                thousands(c.in_scope),
                pct(c.refused_share)
            );
            if let Some(l) = &c.load {
                if l.over_with == 0 {
                    let _ = write!(
                        line,
                        " and kept every window under the capacity (peak per sliding window {} without it, {} with it)",
                        thousands(l.peak_without),
                        thousands(l.peak_with)
                    );
                } else {
                    let _ = write!(
                        line,
                        "; {} of {} windows would still have been over the capacity",
                        thousands(l.over_with),
                        thousands(l.windows)
                    );
                }
            }
            let hurt: Vec<String> = c
                .classes
                .iter()
                .filter(|k| k.refused > 0 && matches!(k.class, Who::Internal | Who::Identified))
                .map(|k| format!("{} {}", thousands(k.refused), k.class.label()))
                .collect();
            if hurt.is_empty() {
                line.push('.');
            } else {
                let _ = write!(line, "; it would have refused {}.", hurt.join(", "));
            }
            line
        })
        .collect()
}

/// The most requested path and the error share.
fn top_finding(paths: &top_report::TopReport, statuses: &top_report::TopReport) -> Option<String> {
    let first = paths.breakdown.rows.first()?;
    let mut line = format!(
        "The most requested path was {} ({} requests, {}).",
        first.value.as_deref().unwrap_or("(none)"),
        thousands(first.requests),
        pct(first.share)
    );
    if statuses.requests > 0 {
        let _ = write!(
            line,
            " {} requests ({}) had an error status (≥ 400).",
            thousands(statuses.errors),
            pct(statuses.error_share)
        );
    }
    Some(line)
}

fn heavy_chart(
    hv: &HeavyReport,
    incident: Option<(i64, i64)>,
    local: impl Fn(i64) -> i64,
) -> Figure {
    let with_peak = hv.capacity.is_some();
    let points: Vec<(i64, f64)> = hv
        .buckets
        .iter()
        .map(|b| {
            let v = if with_peak {
                b.peak.unwrap_or(0)
            } else {
                b.heavy
            };
            (local(b.start_utc_ms), v as f64)
        })
        .collect();
    let all: Vec<(i64, f64)> = hv
        .buckets
        .iter()
        .map(|b| (local(b.start_utc_ms), b.requests as f64))
        .collect();
    let (title, name) = match &hv.capacity {
        Some(c) => (
            format!(
                "Heavy requests, peak per aligned {} in each {} bucket",
                c.window, hv.by
            ),
            format!("heavy, peak per aligned {}", c.window),
        ),
        None => (format!("Requests per {}", hv.by), "heavy".to_string()),
    };
    let mut series = vec![Series { name, points }];
    if !with_peak {
        series.push(Series {
            name: "all requests".into(),
            points: all,
        });
    }
    let svg = chart::time_series(&TimeSeries {
        title: title.clone(),
        y_label: "requests".into(),
        series,
        reference: hv.capacity.as_ref().map(|c| RefLine {
            value: c.count as f64,
            label: format!("capacity {} per {}", thousands(c.count), c.window),
        }),
        shade: incident.map(|(s, e)| Shade {
            start_ms: local(s),
            end_ms: local(e),
            label: "incident".into(),
        }),
    });
    Figure {
        title,
        svg,
        text: None,
    }
}

fn lorenz_chart(conc: &ConcentrationReport) -> Figure {
    let title = "Concentration: share of requests by the largest networks".to_string();
    let svg = chart::lorenz(&Lorenz {
        title: title.clone(),
        x_label: format!("share of /{} networks (largest first)", conc.prefix_v4),
        y_label: "share of requests".into(),
        counts: Vec::new(),
        points: conc.curve.clone(),
        notes: Vec::new(),
    });
    Figure {
        title,
        svg,
        text: None,
    }
}

fn networks_chart(conc: &ConcentrationReport) -> Figure {
    let title = "Largest networks".to_string();
    let bars = conc
        .top
        .iter()
        .take(15)
        .map(|g| Bar {
            label: g.group.clone(),
            value: g.requests as f64,
            text: format!("{} ({})", thousands(g.requests), pct(g.share)),
        })
        .collect();
    Figure {
        svg: chart::bars(&Bars {
            title: title.clone(),
            bars,
        }),
        title,
        text: None,
    }
}

fn agents_chart(ag: &AgentsReport) -> Figure {
    let title = "Agent mix: the selection against all traffic".to_string();
    let keys: Vec<String> = ag.devices.iter().map(|d| d.name.clone()).collect();
    let rows = vec![
        StackRow {
            label: "selected".into(),
            values: ag.devices.iter().map(|d| d.selected as f64).collect(),
        },
        StackRow {
            label: "all traffic".into(),
            values: ag.devices.iter().map(|d| d.all as f64).collect(),
        },
    ];
    Figure {
        svg: chart::stacked(&Stacked {
            title: title.clone(),
            keys,
            rows,
        }),
        title,
        text: None,
    }
}
