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
use logscope_core::forensics::doc::{Doc, Figure, Section};
use logscope_core::forensics::heavy::HeavyReport;
use logscope_core::forensics::top as top_report;
use logscope_core::forensics::top::{TopBy, TopSort};
use logscope_core::number::thousands;
use logscope_core::rate::Rate;
use logscope_core::replay::report::Who;

use logscope_core::forensics::capacity::{CapacityReport, Scope};
use logscope_core::forensics::concentration::GroupBy;
use logscope_core::forensics::doc::Document as _;

use super::filters::{FilterArgs, duration_arg, rate_arg};
use super::rows::RowArgs;
use super::{availability, replay, usage_error};
use crate::engine::report;
use crate::reports::capacity::Capacity;
use crate::reports::{self, concentration::Concentration, heavy::Heavy, top::Top};

/// Arguments of `logscope report`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  logscope report --since 2026-09-25 --until 2026-09-25 --tz Asia/Seoul --capacity 1610/10m --out storm
  logscope report --by 1h --out march access.log          # a log file, nothing ingested
  logscope report --capacity 1610/10m --limit 1600/10m,scope=anonymous-heavy --probe '^/healthz$' --out fix

Writes reports/NAME/index.html (one self-contained page: inline SVG and CSS, no script,
no network; prints well) and reports/NAME/report.md (GitHub-flavoured Markdown) with its
charts as SVG files beside it. It opens with findings computed from the data, then heavy
requests over time against --capacity (the incident — the buckets whose aligned peak is
above it — shaded), the concentration and agent mix of the heavy requests in the incident
(or of all heavy requests without one), top paths and statuses, availability per month
(--probe as in `availability`), each --limit candidate (what it refused, the load
against --capacity, whom it hurt), and each part's tables. Every part is the same
computation as its own command, one pass each, so FILE arguments are read several times
(standard input cannot be: ingest it first). Sections without data are left out. Sources
are named by file name (--full-paths for full paths).")]
pub struct ReportArgs {
    /// Bucket width of the time series, a duration: 10m, 1h, 1d.
    #[arg(long, value_name = "WIDTH", default_value = "10m", value_parser = duration_arg)]
    pub by: Duration,

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

    /// The report's name: written to reports/NAME/ (a path with a `/` is used as given).
    #[arg(long, value_name = "NAME")]
    pub out: PathBuf,

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

/// One chart of the report: its file name (Markdown) and the figure.
struct Chart {
    file: String,
    figure: Figure,
}

/// Runs `logscope report`.
pub fn run(data: &Path, args: ReportArgs) -> anyhow::Result<i32> {
    let dir = report_dir(&args.out)?;
    check_target(&dir, args.force)?;
    // Each part reads the rows again: standard input would be empty after the first.
    if args.rows.files.iter().any(|f| f == "-") {
        return Err(usage_error(
            "report reads its inputs once per part, so it cannot read standard input; ingest it first (zcat old.log.gz | logscope ingest -), then run logscope report without FILE",
        ));
    }
    // Every part runs over the same rows, each with its own selection (a run prepares
    // the selection's classifier for the columns it reads).
    let source = args.rows.source(data)?;
    // Heavy requests over the whole selection.
    let (hv, stats) = report::run(
        &source,
        &mut args.filters.build()?,
        Heavy::new(args.by, args.capacity),
    )?;
    // The incident: from the first to the last bucket over capacity.
    let incident = incident_span(&hv, args.by.ms_i64());
    // Concentration and agents of the heavy requests, in the incident when there is one.
    let mut focus = args.filters.clone();
    if hv.heavy > 0 {
        focus.heavy = true;
    }
    if let Some((start, end)) = incident {
        focus.since = Some(logscope_core::time::format_rfc3339_ms(start));
        focus.until = Some(logscope_core::time::format_rfc3339_ms(end));
    }
    let (conc, _) = report::run(
        &source,
        &mut focus.build()?,
        Concentration::new(GroupBy::Prefix, None, None, 20),
    )?;
    let (ag, _) = reports::agents::run(&source, &mut focus.build()?, 0, 1, 10)?;
    // The first-hour breakdowns over the whole selection: paths and statuses.
    let breakdown = |by: TopBy| -> anyhow::Result<top_report::TopReport> {
        let top = Top::new(by, TopSort::Requests, 10);
        Ok(report::run(&source, &mut args.filters.build()?, top)?.0)
    };
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
        Capacity::new(args.by, scope),
    )?;
    let paths = breakdown(TopBy::Path)?;
    let statuses = breakdown(TopBy::Status)?;

    let clock = args.filters.build()?.clock;
    let mut doc = Doc {
        title: title(&hv, &args),
        ..Doc::default()
    };
    doc.lines = findings(&hv, &conc, &ag, incident.is_some());
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
    // The parts' own tables, each under its own heading.
    for (part, keep) in [
        (avail_doc, has_avail),
        (hv.doc(0), hv.requests > 0),
        (cap_doc, has_cap),
        (conc.doc(), conc.requests > 0),
        (ag.doc(), ag.selected > 0),
        (paths.doc(), paths.requests > 0),
        (statuses.doc(), statuses.requests > 0),
    ] {
        if !keep {
            continue;
        }
        doc.sections.push(Section {
            title: Some(part.title.clone()),
            table: None,
            notes: part.lines.clone(),
        });
        doc.sections.extend(
            part.sections
                .into_iter()
                .filter(|s| s.table.as_ref().is_none_or(|t| !t.is_empty())),
        );
    }
    if let Some(r) = &replayed {
        let part = r.doc();
        for (k, f) in part.figures.iter().enumerate() {
            charts.push(Chart {
                file: format!("replay-{}.svg", k + 1),
                figure: f.clone(),
            });
        }
        doc.sections.push(Section {
            title: Some(part.title.clone()),
            table: None,
            notes: part.lines.clone(),
        });
        doc.sections.extend(
            part.sections
                .into_iter()
                .filter(|s| s.table.as_ref().is_none_or(|t| !t.is_empty())),
        );
    }
    doc.figures = charts.iter().map(|c| c.figure.clone()).collect();
    write_report(&dir, &doc, &charts)?;
    eprintln!(
        "logscope: wrote {} and {}",
        escape::path(&dir.join("index.html")),
        escape::path(&dir.join("report.md"))
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

/// An existing directory is replaced only with --force and only when it holds a report.
fn check_target(dir: &Path, force: bool) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Err(_) => Ok(()),
        Ok(m) if !m.is_dir() => Err(usage_error(format!(
            "--out {}: exists and is not a directory (e.g. --out storm-2)",
            escape::path(dir)
        ))),
        Ok(_) if !dir.join("index.html").exists() || !dir.join("report.md").exists() => {
            Err(usage_error(format!(
                "--out {}: the directory exists and does not hold a logscope report; choose another name (e.g. --out storm-2)",
                escape::path(dir)
            )))
        }
        Ok(_) if !force => Err(usage_error(format!(
            "--out {}: a report of that name exists; give --force to replace it (e.g. --out storm --force)",
            escape::path(dir)
        ))),
        Ok(_) => Ok(()),
    }
}

/// Writes the page, the Markdown and the charts into a new directory beside `dir`,
/// then puts it in place of `dir` (the old one, if any, removed after).
fn write_report(dir: &Path, doc: &Doc, charts: &[Chart]) -> anyhow::Result<()> {
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
        write("index.html", &doc.to_html())?;
        write("report.md", &markdown(doc, charts))?;
        for c in charts {
            write(&c.file, &svg_file(&c.figure.svg))?;
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

/// The Markdown: the Doc's own, with the charts as images after the findings.
fn markdown(doc: &Doc, charts: &[Chart]) -> String {
    let mut no_figures = doc.clone();
    no_figures.figures.clear();
    no_figures.figure = None;
    let md = no_figures.to_markdown();
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

fn title(hv: &HeavyReport, args: &ReportArgs) -> String {
    let mut t = String::from("Incident report");
    if let (Some(first), Some(last)) = (hv.buckets.first(), hv.buckets.last()) {
        let _ = write!(t, ": {} to {}", first.label, last.label);
    }
    if args.filters.tz != "UTC" {
        let _ = write!(t, " ({})", args.filters.tz);
    }
    t
}

/// The UTC span `[start, end)` from the first to the last bucket over capacity.
fn incident_span(hv: &HeavyReport, by_ms: i64) -> Option<(i64, i64)> {
    let over: Vec<_> = hv.buckets.iter().filter(|b| b.over_capacity).collect();
    let first = over.first()?;
    let last = over.last()?;
    Some((first.start_utc_ms, last.start_utc_ms + by_ms))
}

fn pct(share: f64) -> String {
    if share > 0.0 && share < 0.001 {
        "<0.1%".into()
    } else {
        format!("{:.1}%", share * 100.0)
    }
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
        "{} requests, {} of them heavy ({}).",
        thousands(hv.requests),
        thousands(hv.heavy),
        pct(hv.heavy as f64 / hv.requests as f64)
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
        let whom = if incident {
            "In the incident the heavy requests"
        } else if hv.heavy > 0 {
            "The heavy requests"
        } else {
            "The requests"
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
