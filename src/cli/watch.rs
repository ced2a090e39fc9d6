//! `logscope watch`: the live dashboard (ratatui), one frame with `--once`, the alerts'
//! backtest with `--backtest`; flags, drawing and keys only — frames, alerts and the
//! follow are `reports::live`'s.

use std::io::IsTerminal;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration as StdDuration, Instant};

use clap::Args;
use logscope_core::escape;
use logscope_core::forensics::alert::{Crossing, Rule, Threshold};
use logscope_core::forensics::live::{Frame, MINUTE_MS, TopLine};
use logscope_core::number::thousands;
use logscope_core::rate::Rate;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Sparkline};

use super::filters::{FilterArgs, duration_arg};
use super::output::{ColorChoice, color_choice};
use super::rows::RowArgs;
use crate::engine::envelope::Envelope;
use crate::engine::error::{exit, usage_error};
use crate::engine::follow::{CommitEvery, FollowJob};
use crate::engine::ingest::IngestJob;
use crate::reports::live::{self as watch, Alerted, Live, LiveEvent, WatchJob, Watcher};
use crate::store::LockWait;

/// Arguments of `logscope watch`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  logscope ingest --follow '/var/log/nginx/access.log*' &   # then, in another terminal:
  logscope watch --capacity 300/1m --limit 1600/10m --alert 'heavy > 1600/10m'
  logscope watch --follow /var/log/nginx/access.log         # follow and watch in one
  logscope watch --once --format json                       # one frame, for scripts
  logscope watch --backtest --alert 'heavy > 1600/10m' --alert 'errors > 5%/5m' access.log

The frame's clock is the data's: \"now\" is the latest row, the window (--window) the last
whole minutes up to and including its minute, the series one bar a minute. Top lists,
limits and share alerts are over the window, each figure the batch report's over the same
rows (top --since, replay --since: a candidate starts with fresh state at the window's
start). Without --capacity the capacity is estimated from the whole input (the capacity
report's heavy requests held a minute before the first stall). q, Esc or Ctrl-C quits.

Alerts (--alert, repeatable): METRIC > THRESHOLD or METRIC < THRESHOLD, METRIC one of
requests, heavy, errors (5xx), prefix_share, asn_share, agent_share; a count as a rate
over whole minutes (heavy > 1600/10m), a share as P% over the window or P%/DURATION
(errors > 5%/5m). Each fires once when crossed and again only after going back past 10%
of the threshold. At each crossing: a line (the dashboard's alert log; stdout with --once
and --backtest) and --on-alert CMD run by sh with LOGSCOPE_ALERT, LOGSCOPE_ALERT_STATE
(firing|resolved), LOGSCOPE_ALERT_VALUE, LOGSCOPE_ALERT_THRESHOLD (shares as 0-1),
LOGSCOPE_ALERT_AT (the data's time) and LOGSCOPE_ALERT_TOP_PREFIX.

Exit status: 0, or 5 when an alert fired (--once: one is firing in the frame;
--backtest: one fired in the period; live: with --exit-on-alert, at the first), 1 error,
2 bad usage.")]
pub struct WatchArgs {
    /// Follow the FILEs into the dataset (as `ingest --follow --commit-every 1s`) and
    /// watch the dataset.
    #[arg(long)]
    pub follow: bool,

    /// Print one frame and exit (text fitted to COLUMNS×LINES, else 80×24; or JSON).
    #[arg(long, conflicts_with = "backtest")]
    pub once: bool,

    /// Run the alerts over the whole input as a live watch would have, a minute at a
    /// time, and print each crossing (every rule but asn_share).
    #[arg(long)]
    pub backtest: bool,

    /// With --once or --backtest: text or json.
    #[arg(long, value_enum, default_value = "text", value_name = "FORMAT")]
    pub format: WatchFormat,

    /// The window of the top lists, limits and share alerts (whole minutes).
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = minutes_arg)]
    pub window: u64,

    /// How far back the per-minute series goes (whole minutes).
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = minutes_arg)]
    pub span: u64,

    /// Values per top list.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..=100))]
    pub top: u16,

    /// The backend's capacity in heavy requests (e.g. 300/1m); estimated if not given.
    #[arg(long, value_name = "N/WINDOW", value_parser = rate_arg)]
    pub capacity: Option<Rate>,

    /// A candidate limit (replay's grammar, e.g. 1600/10m or 5r/s,burst=10,key=ip):
    /// what it would refuse of the window. Repeatable.
    #[arg(long, value_name = "SPEC")]
    pub limit: Vec<String>,

    /// An alert rule, e.g. 'heavy > 1600/10m'. Repeatable.
    #[arg(long, value_name = "RULE", value_parser = alert_arg)]
    pub alert: Vec<Rule>,

    /// A shell command run at each crossing, the figures in its environment.
    #[arg(long, value_name = "CMD")]
    pub on_alert: Option<String>,

    /// Live: exit with status 5 at the first alert that fires.
    #[arg(long)]
    pub exit_on_alert: bool,

    /// Which rows.
    #[command(flatten)]
    pub filters: FilterArgs,

    /// Where the rows come from.
    #[command(flatten)]
    pub rows: RowArgs,
}

/// `--format` of `watch --once` and `--backtest`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WatchFormat {
    /// For people.
    Text,
    /// One JSON object.
    Json,
}

fn minutes_arg(s: &str) -> Result<u64, String> {
    let d = duration_arg(s).map_err(|e| format!("{e} (e.g. 10m)"))?;
    if d.ms() % MINUTE_MS as u64 != 0 || d.ms() > 7 * 24 * 3600 * 1000 {
        return Err(format!(
            "'{s}': give whole minutes up to a week (the data is counted per minute), e.g. 10m"
        ));
    }
    Ok(d.ms() / MINUTE_MS as u64)
}

fn rate_arg(s: &str) -> Result<Rate, String> {
    Rate::parse(s).map_err(|e| format!("{e} (e.g. 300/1m)"))
}

fn alert_arg(s: &str) -> Result<Rule, String> {
    Rule::parse(s)
}

/// Runs `logscope watch`.
pub fn run(data: &Path, args: WatchArgs) -> anyhow::Result<i32> {
    if args.follow && args.rows.files.is_empty() {
        return Err(usage_error(
            "--follow needs the log files to follow, e.g. logscope watch --follow /var/log/nginx/access.log",
        ));
    }
    if args.follow && (args.once || args.backtest) {
        return Err(usage_error(
            "--follow is for the live dashboard, not --once or --backtest (e.g. logscope watch --follow access.log)",
        ));
    }
    if args.backtest && args.alert.is_empty() {
        return Err(usage_error(
            "--backtest runs the alerts: give one, e.g. --alert 'heavy > 1600/10m'",
        ));
    }
    if args.backtest
        && args
            .alert
            .iter()
            .any(|r| r.metric == logscope_core::forensics::alert::Metric::AsnShare)
    {
        return Err(usage_error(
            "--backtest evaluates asn_share only live and with --once (an AS per address over the whole input); e.g. --alert 'prefix_share > 20%'",
        ));
    }
    for spec in &args.limit {
        if let Err(e) = logscope_core::replay::Policy::from_spec(spec) {
            return Err(usage_error(format!(
                "--limit {}: {e} (e.g. --limit 1600/10m)",
                escape::terminal_str(spec, 200)
            )));
        }
    }
    let mut source = args.rows.source(data)?;
    let job = WatchJob {
        window: args.window,
        span: args.span,
        top: args.top as usize,
        capacity: args.capacity,
        limits: args.limit.clone(),
        alerts: args.alert.clone(),
        on_alert: args.on_alert.clone(),
    };
    let make_sel = || args.filters.build();
    let sel = make_sel()?;
    let (selection, tz) = (sel.describe(), sel.clock.name().to_string());
    drop(sel);

    if args.backtest {
        let (crossed, stats) = watch::backtest(&source, &make_sel, &job)?;
        if let Some(cmd) = &job.on_alert {
            for a in &crossed {
                watch::start_command(cmd, a)?.wait()?;
            }
        }
        match args.format {
            WatchFormat::Json => {
                let env = Envelope::report("backtest", &selection, &tz, &stats);
                let body = Backtest {
                    rules: job.alerts.iter().map(|r| r.text.as_str()).collect(),
                    crossings: crossed.iter().map(alert_json).collect(),
                };
                println!(
                    "{}",
                    escape::json(&serde_json::to_string_pretty(&env.wrap(&body))?)
                );
            }
            WatchFormat::Text => {
                for a in &crossed {
                    println!("{}", alert_line(a, &job.alerts));
                }
                if crossed.is_empty() {
                    eprintln!("logscope: no alert fired");
                }
            }
        }
        let fired = crossed.iter().any(|a| a.crossing == Crossing::Fired);
        return Ok(if fired { exit::ALERT } else { exit::OK });
    }

    if args.follow {
        // Follow the files into the dataset; the frames read the dataset.
        source.files.clear();
    }
    let estimate = match args.capacity {
        Some(_) => Err(String::new()),
        // Live, the estimate's read (before the dashboard takes the screen) is the one
        // that tells the files' bad lines; --once tells them in its frame's read.
        None if args.once => watch::estimate(&source.quiet(), &make_sel)?,
        None => watch::estimate(&source, &make_sel)?,
    };
    // Live, the frames' reads say nothing on stderr: it is the dashboard's terminal.
    let source = if args.once { source } else { source.quiet() };
    let mut watcher = Watcher::new(source, &make_sel, job.clone(), estimate);

    if args.once {
        let made = watcher.frame()?;
        let Some((frame, crossed)) = made else {
            eprintln!("logscope: no rows to show");
            return Ok(exit::OK);
        };
        for a in &crossed {
            if let Some(cmd) = &job.on_alert {
                watch::start_command(cmd, a)?.wait()?;
            }
        }
        match args.format {
            WatchFormat::Json => {
                let stats = watcher.stats().expect("a frame read its rows");
                let env = Envelope::report("watch", &selection, &tz, stats);
                println!(
                    "{}",
                    escape::json(&serde_json::to_string_pretty(&env.wrap(&frame))?)
                );
            }
            WatchFormat::Text => {
                let (w, h) = once_size();
                let header = Header::new(data, &args);
                print!("{}", render_text(&frame, &header, &[], w, h));
                for a in &crossed {
                    println!("{}", alert_line(a, &job.alerts));
                }
            }
        }
        let firing = frame.alerts.iter().any(|a| a.firing);
        return Ok(if firing { exit::ALERT } else { exit::OK });
    }

    if !std::io::stdout().is_terminal() {
        return Err(usage_error(
            "the live dashboard needs a terminal: use --once (one frame) or --backtest, e.g. logscope watch --once --format json",
        ));
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let resized = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGWINCH, resized.clone())?;
    let keys = std::io::stdin().is_terminal();
    let follow = if args.follow {
        Some((
            data.to_path_buf(),
            FollowJob {
                ingest: follow_ingest(&args)?,
                every: CommitEvery::Interval(StdDuration::from_secs(1)),
            },
        ))
    } else {
        None
    };
    let header = Header::new(data, &args);
    let colour = match color_choice() {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    };
    let mut terminal = ratatui::init();
    let mut log: Vec<String> = Vec::new();
    let result = watch::live(
        &mut watcher,
        Live {
            follow,
            exit_on_alert: args.exit_on_alert,
        },
        &stop,
        &mut |event| match event {
            LiveEvent::Alert(a) => {
                log.push(alert_line(a, &job.alerts));
                ControlFlow::Continue(())
            }
            LiveEvent::Frame(frame) => {
                let drawn = terminal.draw(|f| {
                    let area = f.area();
                    draw(f.buffer_mut(), area, frame, &header, &log, colour);
                });
                if drawn.is_err() {
                    return ControlFlow::Break(());
                }
                wait_for_key(StdDuration::from_secs(1), keys, &stop, &resized)
            }
        },
    );
    ratatui::restore();
    for line in &log {
        eprintln!("{line}");
    }
    result
}

fn source_is_dataset(args: &WatchArgs) -> bool {
    args.rows.files.is_empty() || args.follow
}

/// The ingest a `watch --follow` runs, with the format flags given.
fn follow_ingest(args: &WatchArgs) -> anyhow::Result<IngestJob> {
    let fargs = super::inputs::FormatArgs {
        format: args.rows.input_format.clone(),
        log_format: args.rows.log_format.clone(),
        json_map: args.rows.json_map.clone(),
        assume_offset: args.rows.assume_offset,
    };
    Ok(IngestJob {
        files: args.rows.files.clone(),
        format: fargs.forced()?,
        read: logscope_core::source::ReadOptions::default(),
        parse: fargs.parse_options(),
        threads: 1,
        wait: LockWait::Wait,
        dry_run: false,
        max_bad: 1.0,
        rejects: None,
        append_rejects: false,
        renamed: Vec::new(),
        skip_unready: true,
        compact: true,
    })
}

/// Waits up to `d` for a key on the terminal (standard input, raw mode): q, Esc or
/// Ctrl-C break, as do a terminal that went away (end of input, a hang-up) and `stop`
/// (a signal); a resize (`resized`, SIGWINCH) returns at once to redraw. crossterm's
/// event reader is not used: on a terminal that hung up it reads end-of-file forever
/// (crossterm 0.29, `source/unix/mio.rs`), which would leave the process spinning.
fn wait_for_key(
    d: StdDuration,
    keys: bool,
    stop: &AtomicBool,
    resized: &AtomicBool,
) -> ControlFlow<()> {
    let until = Instant::now() + d;
    loop {
        if stop.load(Ordering::Relaxed) {
            return ControlFlow::Break(());
        }
        if resized.swap(false, Ordering::Relaxed) {
            return ControlFlow::Continue(());
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return ControlFlow::Continue(());
        }
        let slice = left.min(StdDuration::from_millis(100));
        if !keys {
            std::thread::sleep(slice);
            continue;
        }
        let mut pfd = libc::pollfd {
            fd: 0,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let n = unsafe { libc::poll(&mut pfd, 1, slice.as_millis() as i32) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return ControlFlow::Break(());
        }
        if n == 0 {
            continue;
        }
        if pfd.revents & libc::POLLIN == 0 {
            // POLLHUP, POLLERR, POLLNVAL: the terminal is gone.
            return ControlFlow::Break(());
        }
        let mut buf = [0u8; 64];
        // SAFETY: reads at most `buf.len()` bytes into `buf`.
        let r = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
        if r < 0 {
            let kind = std::io::Error::last_os_error().kind();
            if matches!(
                kind,
                std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
            ) {
                continue;
            }
            return ControlFlow::Break(());
        }
        if r == 0 {
            return ControlFlow::Break(());
        }
        let got = &buf[..r as usize];
        // q, Ctrl-C, or a lone Esc (an escape sequence — an arrow key — is not one).
        if got.contains(&b'q') || got.contains(&3) || got == [0x1b] {
            return ControlFlow::Break(());
        }
    }
}

/// `--once`'s size: COLUMNS × LINES, else the terminal's, else 80 × 24.
fn once_size() -> (u16, u16) {
    let env = |k: &str| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse::<u16>().ok())
            .filter(|&v| v > 0)
    };
    let term = ratatui::crossterm::terminal::size().ok();
    let w = env("COLUMNS")
        .or(term
            .map(|t| t.0)
            .filter(|_| std::io::stdout().is_terminal()))
        .unwrap_or(80);
    let h = env("LINES")
        .or(term
            .map(|t| t.1)
            .filter(|_| std::io::stdout().is_terminal()))
        .unwrap_or(24);
    (w.clamp(40, 500), h.clamp(10, 300))
}

/// What the title line names.
struct Header {
    origin: String,
}

impl Header {
    fn new(data: &Path, args: &WatchArgs) -> Header {
        let origin = if source_is_dataset(args) {
            format!("dataset {}", data.display())
        } else {
            args.rows.files.join(", ")
        };
        Header {
            origin: escape::terminal_str(&origin, 120),
        }
    }
}

/// One frame as plain text, `w` × `h`, trailing blanks trimmed.
fn render_text(frame: &Frame, header: &Header, log: &[String], w: u16, h: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("an in-memory terminal");
    terminal
        .draw(|f| {
            let area = f.area();
            draw(f.buffer_mut(), area, Some(frame), header, log, false);
        })
        .expect("drawing in memory");
    let buf = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        for x in 0..buf.area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// `2026-11-04T13:07:00.000+09:00` → `2026-11-04 13:07:00 +09:00` (seconds, the offset).
fn short_time(t: &str) -> String {
    match (t.get(..10), t.get(11..19), t.get(23..)) {
        (Some(d), Some(hms), Some(zone)) => {
            format!("{d} {hms} {}", if zone == "Z" { "UTC" } else { zone })
        }
        _ => t.to_string(),
    }
}

fn pct(share: f64) -> String {
    format!("{:.1}%", 100.0 * share)
}

/// Draws a frame (or "no rows yet") into `buf`.
fn draw(
    buf: &mut Buffer,
    area: Rect,
    frame: Option<&Frame>,
    header: &Header,
    log: &[String],
    colour: bool,
) {
    use ratatui::widgets::Widget;
    let st = |s: Style| if colour { s } else { Style::default() };
    let bold = st(Style::default().add_modifier(Modifier::BOLD));
    let Some(fr) = frame else {
        Paragraph::new(vec![
            Line::styled(format!("logscope watch · {}", header.origin), bold),
            Line::raw("no rows yet; waiting for the data (q quits)"),
        ])
        .render(area, buf);
        return;
    };
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1), // title
            Constraint::Length(1), // requests sparkline
            Constraint::Length(1), // heavy sparkline
            Constraint::Length(1), // load
            Constraint::Length(2), // window totals, status mix
            Constraint::Length(1), // blank
            Constraint::Length(fr.prefixes.len().max(fr.agents.len()).max(1) as u16 + 1),
            Constraint::Min(0),    // limits, alerts, log
            Constraint::Length(1), // footer
        ])
        .split(area);
    Paragraph::new(Line::from(vec![
        Span::styled("logscope watch", bold),
        Span::raw(format!(
            " · latest {} · window {} · {}",
            short_time(&fr.latest),
            fr.window,
            header.origin
        )),
    ]))
    .render(rows[0], buf);

    let last = fr.series.last();
    let spark = |buf: &mut Buffer, r: Rect, label: &str, data: Vec<u64>, now: u64, style: Style| {
        let cols = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([
                Constraint::Length(13),
                Constraint::Min(10),
                Constraint::Length(10),
            ])
            .split(r);
        Paragraph::new(label.to_string()).render(cols[0], buf);
        let n = cols[1].width as usize;
        let data: Vec<u64> = data[data.len().saturating_sub(n)..].to_vec();
        Sparkline::default()
            .data(&data)
            .style(style)
            .render(cols[1], buf);
        Paragraph::new(format!("{:>10}", thousands(now))).render(cols[2], buf);
    };
    spark(
        buf,
        rows[1],
        "requests/min",
        fr.series.iter().map(|p| p.requests).collect(),
        last.map_or(0, |p| p.requests),
        st(Style::default().fg(Color::Cyan)),
    );
    let over = fr.load.as_ref().is_some_and(|l| l.load > 1.0);
    spark(
        buf,
        rows[2],
        "heavy/min",
        fr.series.iter().map(|p| p.heavy).collect(),
        last.map_or(0, |p| p.heavy),
        st(Style::default().fg(if over { Color::Red } else { Color::Yellow })),
    );
    let load = match (&fr.load, &fr.load_note) {
        (Some(l), _) => Line::from(vec![
            Span::raw(format!(
                "capacity {} heavy/min ({}) · latest minute {} heavy · ",
                thousands(l.capacity_per_minute.round() as u64),
                l.source,
                thousands(l.heavy_last_minute)
            )),
            Span::styled(
                format!("load {}", pct(l.load)),
                if over {
                    st(Style::default().fg(Color::Red).add_modifier(Modifier::BOLD))
                } else {
                    Style::default()
                },
            ),
        ]),
        (None, Some(note)) => Line::raw(note.clone()),
        (None, None) => Line::raw(""),
    };
    Paragraph::new(load).render(rows[3], buf);
    let t = &fr.totals;
    let share = |n: u64| {
        if t.requests == 0 {
            "-".to_string()
        } else {
            pct(n as f64 / t.requests as f64)
        }
    };
    Paragraph::new(vec![
        Line::raw(format!(
            "window since {}: {} requests, {} heavy ({})",
            short_time(&fr.since),
            thousands(t.requests),
            thousands(t.heavy),
            share(t.heavy),
        )),
        Line::raw(format!(
            "status: 2xx {} · 3xx {} · 4xx {} · 5xx {}",
            share(t.s2xx),
            share(t.s3xx),
            share(t.s4xx),
            share(t.s5xx)
        )),
    ])
    .render(rows[4], buf);

    // Top lists side by side: prefixes and agents, ASNs between them when wide enough.
    let mut lists: Vec<(&str, &[TopLine])> = vec![("top prefixes", &fr.prefixes)];
    if !fr.asns.is_empty() && area.width >= 100 {
        lists.push(("top AS", &fr.asns));
    }
    lists.push(("top agents", &fr.agents));
    let constraints: Vec<Constraint> = match lists.len() {
        2 => vec![Constraint::Length(40), Constraint::Min(20)],
        _ => vec![
            Constraint::Length(36),
            Constraint::Length(32 + area.width.saturating_sub(100) / 4),
            Constraint::Min(20),
        ],
    };
    let cols = Layout::default()
        .direction(Direction::Horizontal)
        .constraints(constraints)
        .split(rows[6]);
    for ((title, list), r) in lists.iter().zip(cols.iter()) {
        let mut lines = vec![Line::styled(title.to_string(), bold)];
        let value_w = (r.width as usize).saturating_sub(17).max(4);
        for t in list.iter() {
            let v = escape::terminal_str(&t.value, 400);
            let v: String = if v.chars().count() > value_w {
                v.chars().take(value_w - 1).chain(['…']).collect()
            } else {
                v
            };
            lines.push(Line::raw(format!(
                "{v:<value_w$} {:>8} {:>6}",
                thousands(t.requests),
                pct(t.share)
            )));
        }
        Paragraph::new(lines).render(*r, buf);
    }

    let mut lines: Vec<Line> = vec![Line::raw("")];
    if !fr.limits.is_empty() {
        lines.push(Line::styled("limits: would refuse in the window", bold));
        for l in &fr.limits {
            let share = if l.requests == 0 {
                "-".into()
            } else {
                pct(l.refused as f64 / l.requests as f64)
            };
            lines.push(Line::raw(format!(
                "  {}: {} of {} ({share})",
                escape::terminal_str(&l.name, 60),
                thousands(l.refused),
                thousands(l.requests)
            )));
        }
    }
    if !fr.alerts.is_empty() {
        lines.push(Line::styled("alerts", bold));
        for a in &fr.alerts {
            let unit_share = a.threshold <= 1.0 && a.rule.contains('%');
            let fmt = |v: f64| {
                if unit_share {
                    pct(v)
                } else {
                    thousands(v.round() as u64)
                }
            };
            let state = if a.firing { "FIRING" } else { "ok" };
            lines.push(Line::from(vec![
                Span::styled(
                    format!("  {state:<6}"),
                    if a.firing {
                        st(Style::default().fg(Color::Red).add_modifier(Modifier::BOLD))
                    } else {
                        st(Style::default().fg(Color::Green))
                    },
                ),
                Span::raw(format!(
                    " {}: {} (threshold {})",
                    a.rule,
                    a.value.map_or("-".to_string(), fmt),
                    fmt(a.threshold)
                )),
            ]));
        }
    }
    if !log.is_empty() {
        lines.push(Line::styled("alert log (the data's time)", bold));
        for l in log.iter().rev().take(5) {
            lines.push(Line::raw(format!("  {l}")));
        }
    }
    Paragraph::new(lines).render(rows[7], buf);
    Paragraph::new(Line::styled(
        "q quits · a frame a second · the clock is the data's",
        st(Style::default().add_modifier(Modifier::DIM)),
    ))
    .render(rows[8], buf);
}

/// An alert's crossing as one line.
fn alert_line(a: &Alerted, rules: &[Rule]) -> String {
    let share = rules
        .iter()
        .find(|r| r.text == a.rule)
        .is_some_and(|r| matches!(r.threshold, Threshold::Share { .. }));
    let fmt = |v: f64| {
        if share {
            pct(v)
        } else {
            thousands(v.round() as u64)
        }
    };
    format!(
        "{} {} {}: {} (threshold {})",
        a.at,
        a.crossing.name(),
        a.rule,
        fmt(a.value),
        fmt(a.threshold)
    )
}

/// `watch --backtest --format json`'s body.
#[derive(serde::Serialize)]
struct Backtest<'a> {
    rules: Vec<&'a str>,
    crossings: Vec<serde_json::Value>,
}

fn alert_json(a: &Alerted) -> serde_json::Value {
    serde_json::json!({
        "rule": a.rule,
        "state": a.crossing.name(),
        "value": a.value,
        "threshold": a.threshold,
        "at": a.at,
    })
}
