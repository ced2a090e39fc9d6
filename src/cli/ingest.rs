//! `logscope ingest`: parse logs and add what is new to the dataset, atomically.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use logscope_core::escape;
use logscope_core::pipeline::{self, PipelineOptions};
use logscope_core::source::{ReadOptions, SourceError};

use super::exit;
use super::inputs::FormatArgs;
use crate::engine::inputs;
use crate::render::summary;
use crate::store::ingest::{Distinct, FileSummary, IngestSummary, Ledger, Plan};
use crate::store::writer::prepare;
use crate::store::{Dataset, LockWait, Manifest, StagedWriter};

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

/// Runs `logscope ingest`.
pub fn run(data: &Path, args: IngestArgs) -> anyhow::Result<i32> {
    let started = Instant::now();
    let forced = args.format.forced()?;
    let read = ReadOptions {
        max_line: args.max_line,
        hold_unterminated: args.final_line == FinalLine::Hold,
        ..ReadOptions::default()
    };
    // Open everything first: a bad path or an unknown format stops the run before
    // anything is written.
    let mut opened = Vec::new();
    for input in inputs::expand(&args.files)? {
        opened.push(inputs::open(input, forced.as_ref(), &read)?);
    }

    let wait = if args.no_wait {
        LockWait::Fail
    } else {
        LockWait::Wait
    };
    let quiet = args.quiet;
    let ds = if args.dry_run {
        None
    } else {
        Some(Dataset::open_write(data, wait, || {
            if !quiet {
                eprintln!(
                    "logscope: another ingest is writing {}; waiting for it to finish…",
                    data.display()
                );
            }
        })?)
    };
    let mut ledger = Ledger::new(match &ds {
        Some(ds) => ds.manifest()?,
        None => Manifest::default(),
    });
    let ingest_id = ledger.next_ingest();
    // New parts go into a build directory, visible to no reader until the commit;
    // dropped on any error (its directory is removed at once).
    let build = match &ds {
        Some(ds) => Some(ds.begin(ingest_id)?),
        None => None,
    };
    let mut parts = Vec::new();

    let mut rejects = match &args.rejects {
        Some(p) => Some(BufWriter::new(
            File::create(p).with_context(|| format!("--rejects {}", p.display()))?,
        )),
        None => None,
    };

    let total_raw: u64 = opened
        .iter()
        .filter_map(|o| o.reader.content_len())
        .sum::<u64>()
        .max(1);
    let progress = Arc::new(AtomicU64::new(0));
    let show_progress = !args.quiet
        && !args.json
        && std::io::stderr().is_terminal()
        && std::env::var_os("CI").is_none();
    let bar = show_progress.then(|| {
        let pb = indicatif::ProgressBar::new(total_raw);
        pb.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
            )
            .expect("valid template"),
        );
        pb
    });
    let ticker_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ticker = bar.clone().map(|pb| {
        let p = progress.clone();
        let stop = ticker_stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                pb.set_position(p.load(Ordering::Relaxed));
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    });

    let mut files = Vec::new();
    let mut reasons: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut distinct = Distinct::default();
    let mut shown_bad = 0usize;
    let mut exit_code = exit::OK;
    let mut write_error: Option<anyhow::Error> = None;

    // The writer encodes a row group on its file thread, with half as many threads as
    // the parse (at least one): the caller keeps gathering rows meanwhile.
    let encode_threads = match args.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    for (input_no, mut o) in opened.into_iter().enumerate() {
        let mut writer = build
            .as_ref()
            .map(|b| StagedWriter::new(b.dir.clone(), ingest_id, input_no, encode_threads));
        let compression = o.reader.compression();
        let tracked = match ledger.plan(&o.input, &o.name, compression, &o.head) {
            Plan::Read(t) => t,
            // A compressed file already read to its end: skipped without decompressing.
            Plan::Unchanged { format, lines } => {
                files.push(FileSummary {
                    file: o.name,
                    format,
                    confidence: o.detection.as_ref().map(|d| d.confidence),
                    compression: compression.name().to_string(),
                    lines: 0,
                    added: 0,
                    already_seen: lines,
                    bad: 0,
                    skipped: 0,
                    bytes: 0,
                    damage: None,
                    unchanged: true,
                    held_back_bytes: 0,
                    layouts: Vec::new(),
                    discarded: false,
                });
                continue;
            }
        };
        // Resume where an earlier ingest of the same content stopped.
        let (skip_bytes, skip_lines) = (tracked.resume_bytes, tracked.resume_lines);
        if skip_bytes > 0 {
            o.reader.skip_to(skip_bytes, skip_lines);
        }
        let opts = PipelineOptions {
            threads: args.threads,
            read: read.clone(),
            parse: args.format.parse_options(),
            progress: Some(progress.clone()),
        };
        if let Some(len) = o.reader.content_len() {
            progress.fetch_add(skip_bytes.min(len), Ordering::Relaxed);
        }
        let name = o.name.clone();
        let convert = writer.is_some();
        let mut input_distinct = Distinct::default();
        let stats = pipeline::run_map(
            o.reader,
            &o.format,
            &opts,
            |mut batch| {
                // Runs on the parse workers: coding the text columns is parallel too.
                let prepared = convert.then(|| prepare(&mut batch));
                (batch, prepared)
            },
            |(batch, prepared)| {
                for bad in &batch.bad {
                    *reasons.entry(bad.reason).or_default() += 1;
                    if shown_bad < args.show_bad && !args.quiet {
                        shown_bad += 1;
                        let msg = format!(
                            "{}:{}: {}: {}",
                            escape::terminal_str(&name, 200),
                            bad.line,
                            bad.reason,
                            escape::terminal(&bad.raw, 160)
                        );
                        // Keep the progress bar intact around the message.
                        match &bar {
                            Some(pb) => pb.suspend(|| eprintln!("{msg}")),
                            None => eprintln!("{msg}"),
                        }
                    }
                    if let Some(w) = rejects.as_mut()
                        && let Err(e) = w.write_all(&bad.raw).and_then(|_| w.write_all(b"\n"))
                    {
                        write_error = Some(anyhow::Error::new(e).context("writing --rejects"));
                        return ControlFlow::Break(());
                    }
                }
                input_distinct.add(&batch);
                if let (Some(w), Some(p)) = (writer.as_mut(), prepared)
                    && let Err(e) = w.write_prepared(&batch, &name, p)
                {
                    write_error = Some(anyhow::Error::new(e));
                    return ControlFlow::Break(());
                }
                ControlFlow::Continue(())
            },
        )
        .map_err(|e: SourceError| anyhow::Error::new(e))?;
        if let Some(e) = write_error.take() {
            return Err(e);
        }
        // A plain file must still start as it did: one truncated and rewritten while
        // it was read (copytruncate) would have mixed two contents.
        let trust = tracked.trust(&stats, &o.head);
        let (changed, discard) = (trust.changed, trust.discard);
        let mut damage = stats.damage.as_ref().map(|d| d.to_string());
        if changed && damage.is_none() {
            damage = Some(format!(
                "{}: the file changed while it was read (rotated with copytruncate?)",
                o.name
            ));
        }
        if let Some(d) = &damage {
            if !args.quiet {
                let what = if discard {
                    "nothing from it was stored (it cannot be trusted) and its resume point was not moved: ingest an intact copy, or run again"
                } else {
                    "the complete lines before the damage were added"
                };
                eprintln!("logscope: {}; {what}", escape::terminal_str(d, 400));
            }
            exit_code = exit_code.max(exit::DAMAGED);
        }
        if let Some(w) = writer.take() {
            if discard {
                w.abandon()?;
            } else {
                parts.extend(w.finish()?);
            }
        }
        if !discard {
            distinct.merge(input_distinct);
        }
        if stats.held_back_bytes > 0 && !args.quiet {
            eprintln!(
                "logscope: {}: its last line has no newline yet ({} bytes): held back until it is complete (--final-line take if the input is finished)",
                escape::terminal_str(&o.name, 200),
                stats.held_back_bytes
            );
        }
        let parsed = stats.lines - stats.skipped;
        if parsed > 0 && stats.bad as f64 / parsed as f64 > args.max_bad {
            if !args.quiet {
                eprintln!(
                    "logscope: {}: {} of {} lines are bad ({:.1}% > --max-bad {:.1}%): is the format right? (used {})",
                    escape::terminal_str(&o.name, 200),
                    stats.bad,
                    parsed,
                    100.0 * stats.bad as f64 / parsed as f64,
                    100.0 * args.max_bad,
                    o.format.name()
                );
            }
            if exit_code == exit::OK {
                exit_code = exit::TOO_MANY_BAD;
            }
        }
        // Record how far this content has been consumed.
        let records = ledger.record(tracked, &o.name, o.format.name(), &o.head, &stats, trust);
        files.push(FileSummary {
            file: o.name,
            format: o.format.name(),
            confidence: o.detection.as_ref().map(|d| d.confidence),
            compression: compression.name().to_string(),
            lines: stats.lines,
            added: records,
            already_seen: skip_lines,
            bad: stats.bad,
            skipped: stats.skipped,
            bytes: stats.content_end - skip_bytes.min(stats.content_end),
            damage,
            unchanged: false,
            held_back_bytes: stats.held_back_bytes,
            discarded: discard,
            layouts: stats.layouts.named(&o.format.name(), stats.records),
        });
    }
    if let Some(w) = rejects.as_mut() {
        w.flush().context("writing --rejects")?;
    }

    let added: u64 = files.iter().map(|f| f.added).sum();
    let (ingest_id, dataset_rows) = match (ds, build) {
        (Some(ds), Some(build)) => {
            // Nothing new (no part, no source changed): the dataset is left untouched.
            let id = ds.finish_ingest(build, ledger, parts)?.unwrap_or(0);
            (id, ds.manifest()?.rows())
        }
        // --dry-run: nothing written.
        _ => (0, 0),
    };

    ticker_stop.store(true, Ordering::Relaxed);
    if let Some(t) = ticker {
        let _ = t.join();
    }
    if let Some(pb) = bar {
        pb.finish_and_clear();
    }

    let mut bad_reasons: Vec<(String, u64)> = reasons
        .into_iter()
        .map(|(r, n)| (r.to_string(), n))
        .collect();
    bad_reasons.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let (first, last) = distinct.range();
    let (v4_nets, v6_nets) = distinct.nets();
    let summary = IngestSummary {
        dataset: data.display().to_string(),
        ingest: ingest_id,
        lines: files.iter().map(|f| f.lines).sum(),
        added,
        already_seen: files.iter().map(|f| f.already_seen).sum(),
        bad: files.iter().map(|f| f.bad).sum(),
        skipped: files.iter().map(|f| f.skipped).sum(),
        bytes: files.iter().map(|f| f.bytes).sum(),
        files,
        bad_reasons,
        first: first.map(summary::rfc3339_ms),
        last: last.map(summary::rfc3339_ms),
        distinct_ips: distinct.ips(),
        distinct_v4_24: v4_nets,
        distinct_v6_48: v6_nets,
        distinct_hostnames: distinct.hosts(),
        seconds: started.elapsed().as_secs_f64(),
        dataset_rows,
        dry_run: args.dry_run,
    };
    if args.json {
        println!("{}", escape::json(&serde_json::to_string(&summary)?));
    } else if !args.quiet {
        print!("{}", summary::ingest_text(&summary));
        next_step_hint(&summary);
    }
    Ok(exit_code)
}

/// After the first ingest that put rows into an empty dataset (text mode only: the
/// caller skips it with --json and --quiet), what to run next, on stderr.
fn next_step_hint(s: &IngestSummary) {
    if s.dry_run || s.ingest == 0 || s.added == 0 || s.dataset_rows != s.added {
        return;
    }
    eprintln!(
        "next: logscope heavy --by 1h   (or: logscope agents, logscope concentration; logscope --help for all)"
    );
}
