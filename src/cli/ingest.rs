//! `logscope ingest`: parse logs and add what is new to the dataset, atomically.

use crate::engine::envelope::{Envelope, Inputs};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Args;
use logscope_core::escape;
use logscope_core::source::ReadOptions;

use super::inputs::FormatArgs;
use crate::engine::ingest::{self, Event, IngestJob, Ingested};
use crate::render::summary;
use crate::store::LockWait;
use crate::store::ingest::IngestSummary;

/// Arguments of `logscope ingest`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  logscope ingest /var/log/nginx/access.log*          rotated set, .gz/.zst recognised by content
  zcat old.log.gz | logscope ingest -                 from standard input
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

    /// Write every bad line, verbatim, to this file.
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
    };
    let show_progress = !args.quiet
        && !args.json
        && std::io::stderr().is_terminal()
        && std::env::var_os("CI").is_none();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let mut shown_bad = 0usize;
    // Messages go around the progress bar, keeping it intact.
    let say = |bar: &Option<indicatif::ProgressBar>, msg: String| match bar {
        Some(pb) => pb.suspend(|| eprintln!("{msg}")),
        None => eprintln!("{msg}"),
    };
    let outcome = ingest::run(data, &job, &mut |event| match event {
        Event::Waiting if !args.quiet => eprintln!(
            "logscope: another ingest is writing {}; waiting for it to finish…",
            data.display()
        ),
        Event::Progress { done, total } if show_progress => {
            bar.get_or_insert_with(|| progress_bar(total))
                .set_position(done);
        }
        Event::BadLine {
            file,
            line,
            reason,
            raw,
        } if shown_bad < args.show_bad && !args.quiet => {
            shown_bad += 1;
            say(
                &bar,
                format!(
                    "{}:{line}: {reason}: {}",
                    escape::terminal_str(file, 200),
                    escape::terminal(raw, 160)
                ),
            );
        }
        Event::Damaged { message, discarded } if !args.quiet => {
            let what = if discarded {
                "nothing from it was stored (it cannot be trusted) and its resume point was not moved: ingest an intact copy, or run again"
            } else {
                "the complete lines before the damage were added"
            };
            say(
                &bar,
                format!("logscope: {}; {what}", escape::terminal_str(message, 400)),
            );
        }
        Event::HeldBack { file, bytes } if !args.quiet => say(
            &bar,
            format!(
                "logscope: {}: its last line has no newline yet ({bytes} bytes): held back until it is complete (--final-line take if the input is finished)",
                escape::terminal_str(file, 200)
            ),
        ),
        Event::TooManyBad {
            file,
            bad,
            parsed,
            format,
        } if !args.quiet => say(
            &bar,
            format!(
                "logscope: {}: {bad} of {parsed} lines are bad ({:.1}% > --max-bad {:.1}%): is the format right? (used {format})",
                escape::terminal_str(file, 200),
                100.0 * bad as f64 / parsed as f64,
                100.0 * args.max_bad,
            ),
        ),
        _ => {}
    });
    if let Some(pb) = bar {
        pb.finish_and_clear();
    }
    let Ingested { summary, exit } = outcome?;
    if args.json {
        let names: Vec<&str> = summary.files.iter().map(|f| f.file.as_str()).collect();
        let mut env = Envelope::plain("ingest", Inputs::files(&names.join(", ")));
        env.tz = Some("UTC".into());
        println!(
            "{}",
            escape::json(&serde_json::to_string(&env.wrap(&summary))?)
        );
    } else if !args.quiet {
        print!("{}", summary::ingest_text(&summary));
        next_step_hint(&summary);
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
