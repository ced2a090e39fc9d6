//! `logscope ingest`: parse logs and add what is new to the dataset, atomically.

use crate::engine::envelope::{Envelope, Inputs};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Args;
use logscope_core::escape;
use logscope_core::source::ReadOptions;

use super::inputs::FormatArgs;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::engine::error::usage_error;
use crate::engine::follow::{self, CommitEvery, FollowEvent, FollowJob};
use crate::engine::ingest::{self, Event, IngestJob, Ingested};
use crate::render::summary;
use crate::store::LockWait;
use crate::store::ingest::IngestSummary;

/// Arguments of `logscope ingest`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  logscope ingest /var/log/nginx/access.log*          rotated set, .gz/.zst recognised by content
  zcat old.log.gz | logscope ingest -                 from standard input
  logscope ingest --follow '/var/log/nginx/access.log*'   live, like tail -F, until Ctrl-C
  logscope ingest --log-format '$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \"$http_referer\" \"$http_user_agent\" $request_time' access.log

Ingesting the same file again adds nothing; a file that grew adds only its new lines; a
rotated or compressed copy is recognised by its content. Exit status: 0 ok, 1 error
(nothing written), 2 bad usage, 3 some input had more bad lines than --max-bad (its good
lines were still added), 4 a compressed input was damaged (the lines before the damage
were added).")]
pub struct IngestArgs {
    /// Log files (plain, gzip or zstd), shell patterns, or - for standard input.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<String>,

    /// Which log format the inputs are in.
    #[command(flatten)]
    pub format: FormatArgs,

    /// Write every bad line, verbatim, to this file (with --follow: added to it).
    #[arg(long, value_name = "FILE")]
    pub rejects: Option<PathBuf>,

    /// How many bad lines to print (file:line: reason: excerpt).
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub show_bad: usize,

    /// Exit with status 3 if an input's share of bad lines is above this (0..1).
    #[arg(long, default_value_t = 0.5, value_name = "SHARE", value_parser = parse_share)]
    pub max_bad: f64,

    /// Lines longer than this many bytes are bad lines.
    #[arg(long, default_value_t = 1 << 20, value_name = "BYTES")]
    pub max_line: usize,

    /// Parse threads (default: one per core).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub threads: usize,

    /// Fail at once if another ingest is writing the dataset (default: wait).
    #[arg(long)]
    pub no_wait: bool,

    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,

    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,

    /// Parse and report, but write nothing (no dataset is created or changed).
    #[arg(long)]
    pub dry_run: bool,

    /// A last line without a newline in a plain file, standard input or a pipe: `hold`
    /// it back until it is complete (the file may still be written, or the producer was
    /// cut off; the next ingest of the file or of the whole stream reads it whole), or
    /// `take` it (the input is finished). Compressed files that end cleanly are always
    /// complete.
    #[arg(long, value_enum, default_value_t = FinalLine::Hold, value_name = "WHEN")]
    pub final_line: FinalLine,

    /// Keep reading the files as they grow, like `tail -F`, until SIGINT or SIGTERM:
    /// rotation by rename or copytruncate followed, a removed file waited for, an
    /// unterminated last line held back; each commit atomic, resumed exactly after a
    /// crash. Follow a pattern ('access.log*') to read a copytruncate copy's last lines.
    #[arg(long)]
    pub follow: bool,

    /// After the commit, merge a month's small parts once 16 of one size accumulate (in
    /// one more atomic commit; --follow always does). For ingests run often, e.g. by cron.
    #[arg(long)]
    pub compact: bool,

    /// With --follow: commit every DURATION (default 10s), or as soon as about N new
    /// lines are waiting (and at least every 10s).
    #[arg(long, value_name = "DURATION|N", value_parser = parse_commit_every)]
    pub commit_every: Option<CommitEvery>,
}

fn parse_commit_every(s: &str) -> Result<CommitEvery, String> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        let n: u64 = s
            .replace('_', "")
            .parse()
            .map_err(|_| format!("'{s}' is too large a number of lines"))?;
        if n == 0 {
            return Err("a number of lines must be at least 1 (e.g. 100000, or 10s)".into());
        }
        return Ok(CommitEvery::Rows(n));
    }
    super::filters::duration_arg(s)
        .map(|d| CommitEvery::Interval(Duration::from_millis(d.ms())))
        .map_err(|e| format!("{e} (e.g. 10s, 1m, or 100000 for a number of lines)"))
}

/// What to do with an unterminated last line of a plain file or a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FinalLine {
    /// Not consumed: read whole by the next ingest once it has its newline.
    Hold,
    /// Consumed as a complete line.
    Take,
}

fn parse_share(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number between 0 and 1"))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("{v} is not between 0 and 1"));
    }
    Ok(v)
}

/// Runs `logscope ingest`: the job from the flags, the engine's events on stderr.
pub fn run(data: &Path, args: IngestArgs) -> anyhow::Result<i32> {
    let job = IngestJob {
        files: args.files.clone(),
        format: args.format.forced()?,
        read: ReadOptions {
            max_line: args.max_line,
            hold_unterminated: args.final_line == FinalLine::Hold,
            ..ReadOptions::default()
        },
        parse: args.format.parse_options(),
        threads: args.threads,
        wait: if args.no_wait {
            LockWait::Fail
        } else {
            LockWait::Wait
        },
        dry_run: args.dry_run,
        max_bad: args.max_bad,
        rejects: args.rejects.clone(),
        append_rejects: false,
        renamed: Vec::new(),
        skip_unready: false,
        compact: args.follow || args.compact,
    };
    if args.commit_every.is_some() && !args.follow {
        return Err(usage_error(
            "--commit-every is for --follow: e.g. logscope ingest --follow --commit-every 30s access.log",
        ));
    }
    let show_progress = !args.quiet
        && !args.json
        && !args.follow
        && std::io::stderr().is_terminal()
        && std::env::var_os("CI").is_none();
    let mut say = Say {
        args: &args,
        bar: None,
        shown_bad: 0,
        show_progress,
        data,
        held_back: Vec::new(),
    };
    if args.follow {
        return follow(data, job, &args, &mut say);
    }
    let outcome = ingest::run(data, &job, &mut |event| say.event(event));
    if let Some(pb) = say.bar.take() {
        pb.finish_and_clear();
    }
    let Ingested { summary, exit } = outcome?;
    if args.json {
        print_json(&summary)?;
    } else if !args.quiet {
        print!("{}", summary::ingest_text(&summary));
        next_step_hint(&summary);
    }
    Ok(exit)
}

/// The summary as one JSON envelope on one line.
fn print_json(summary: &IngestSummary) -> anyhow::Result<()> {
    let names: Vec<&str> = summary.files.iter().map(|f| f.file.as_str()).collect();
    let mut env = Envelope::plain("ingest", Inputs::files(&names.join(", ")));
    env.tz = Some("UTC".into());
    println!(
        "{}",
        escape::json(&serde_json::to_string(&env.wrap(&summary))?)
    );
    Ok(())
}

/// Prints the engine's events on stderr, around the progress bar.
struct Say<'a> {
    args: &'a IngestArgs,
    bar: Option<indicatif::ProgressBar>,
    shown_bad: usize,
    show_progress: bool,
    data: &'a Path,
    /// Files whose held-back last line was already told (a follow tells it once).
    held_back: Vec<String>,
}

impl Say<'_> {
    fn line(&self, msg: String) {
        match &self.bar {
            Some(pb) => pb.suspend(|| eprintln!("{msg}")),
            None => eprintln!("{msg}"),
        }
    }

    fn event(&mut self, event: Event<'_>) {
        let args = self.args;
        if args.quiet {
            return;
        }
        match event {
            Event::Waiting => eprintln!(
                "logscope: another ingest is writing {}; waiting for it to finish…",
                self.data.display()
            ),
            Event::Progress { done, total } if self.show_progress => {
                self.bar
                    .get_or_insert_with(|| progress_bar(total))
                    .set_position(done);
            }
            Event::Progress { .. } => {}
            Event::BadLine {
                file,
                line,
                reason,
                raw,
            } => {
                if self.shown_bad < args.show_bad {
                    self.shown_bad += 1;
                    self.line(format!(
                        "{}:{line}: {reason}: {}",
                        escape::terminal_str(file, 200),
                        escape::terminal(raw, 160)
                    ));
                }
            }
            Event::Damaged { message, discarded } => {
                let what = if discarded {
                    "nothing from it was stored (it cannot be trusted) and its resume point was not moved: ingest an intact copy, or run again"
                } else {
                    "the complete lines before the damage were added"
                };
                self.line(format!(
                    "logscope: {}; {what}",
                    escape::terminal_str(message, 400)
                ));
            }
            Event::HeldBack { file, bytes } => {
                if args.follow {
                    if self.held_back.iter().any(|f| f == file) {
                        return;
                    }
                    self.held_back.push(file.to_string());
                }
                self.line(format!(
                    "logscope: {}: its last line has no newline yet ({bytes} bytes): held back until it is complete{}",
                    escape::terminal_str(file, 200),
                    if args.follow { "" } else { " (--final-line take if the input is finished)" }
                ));
            }
            Event::Compacted(c) => self.line(format!(
                "logscope: merged {} small parts into {} ({} rows, snapshot {})",
                c.merged,
                c.into,
                summary::thousands(c.rows),
                c.snapshot
            )),
            Event::Skipped { file, reason } => self.line(format!(
                "logscope: {}: not read yet: {}",
                escape::terminal_str(file, 200),
                escape::terminal_str(reason, 400)
            )),
            Event::TooManyBad {
                file,
                bad,
                parsed,
                format,
            } => self.line(format!(
                "logscope: {}: {bad} of {parsed} lines are bad ({:.1}% > --max-bad {:.1}%): is the format right? (used {format})",
                escape::terminal_str(file, 200),
                100.0 * bad as f64 / parsed as f64,
                100.0 * args.max_bad,
            )),
        }
    }
}

/// `ingest --follow`: runs until SIGINT or SIGTERM, one line (or one JSON object) per
/// commit.
fn follow(
    data: &Path,
    ingest: IngestJob,
    args: &IngestArgs,
    say: &mut Say<'_>,
) -> anyhow::Result<i32> {
    if args.files.iter().any(|f| f == "-") {
        return Err(usage_error(
            "--follow reads files, not standard input (a stream cannot be resumed after a crash); e.g. logscope ingest --follow '/var/log/nginx/access.log*'",
        ));
    }
    if args.dry_run {
        return Err(usage_error(
            "--follow commits what it reads; it cannot be a --dry-run (e.g. logscope ingest --follow access.log)",
        ));
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal ends the process at once (every commit is atomic: nothing is
        // lost); the first lets the run under way commit.
        signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone())?;
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let mut job = FollowJob {
        ingest,
        every: args
            .commit_every
            .unwrap_or(CommitEvery::Interval(Duration::from_secs(10))),
    };
    let mut failed: Option<anyhow::Error> = None;
    let exit = follow::run(data, &mut job, &stop, &mut |e| match e {
        FollowEvent::Ingest(e) => say.event(e),
        FollowEvent::Committed(s) => {
            if args.json {
                if let Err(e) = print_json(s) {
                    failed.get_or_insert(e);
                }
            } else if !args.quiet {
                eprintln!("{}", summary::follow_line(s));
            }
        }
        FollowEvent::Rotated { file, gone } if !args.quiet => eprintln!(
            "logscope: {} {}: the old file is read to its end",
            escape::terminal_str(file, 200),
            if gone {
                "is gone"
            } else {
                "was replaced (rotated)"
            }
        ),
        FollowEvent::Missing { file } if !args.quiet => eprintln!(
            "logscope: {} does not exist (yet): read once it appears",
            escape::terminal_str(file, 200)
        ),
        FollowEvent::Appeared { file } if !args.quiet => {
            eprintln!("logscope: {} appeared", escape::terminal_str(file, 200))
        }
        FollowEvent::Truncated { file } if !args.quiet => eprintln!(
            "logscope: {} was truncated in place (copytruncate?): read again from its start; lines written before the truncation and not yet read are read from its copy if the copy is followed too (e.g. '{}*')",
            escape::terminal_str(file, 200),
            escape::terminal_str(file, 200)
        ),
        _ => {}
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(exit)
}

fn progress_bar(total: u64) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new(total);
    pb.set_style(
        indicatif::ProgressStyle::with_template(
            // MB (10^6), as the summary says them.
            "{spinner} [{elapsed_precise}] {wide_bar} {decimal_bytes}/{decimal_total_bytes} {decimal_bytes_per_sec} ETA {eta}",
        )
        .expect("valid template"),
    );
    pb
}

/// After the first ingest that put rows into an empty dataset (text mode only: the
/// caller skips it with --json and --quiet), what to run next, on stderr.
fn next_step_hint(s: &IngestSummary) {
    if s.dry_run || s.ingest == 0 || s.added == 0 || s.dataset_rows != s.added {
        return;
    }
    eprintln!(
        "next: logscope top   (or: logscope report, logscope timeline --client ADDR; logscope --help for all)"
    );
}
