//! The ingest: parse the inputs and add what is new to the dataset in one atomic commit,
//! telling the caller what happens as it goes ([`Event`]).

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::Context;
use logscope_core::parse::{Format, ParseOptions};
use logscope_core::pipeline::{self, PipelineOptions};
use logscope_core::source::{Input, ReadOptions, SourceError};
use logscope_core::time::format_rfc3339_ms;

use super::error::exit;
use super::inputs;
use crate::store::compact::Compacted;
use crate::store::ingest::{Distinct, FileSummary, IngestSummary, Ledger, Plan};
use crate::store::writer::prepare;
use crate::store::{Dataset, LockWait, Manifest, StagedWriter};

/// What to ingest, and how.
#[derive(Debug)]
pub struct IngestJob {
    /// Log files, shell patterns, or `-` for standard input.
    pub files: Vec<String>,
    /// The format every input is in, or `None` to detect it per input.
    pub format: Option<Format>,
    /// How inputs are read (line limit, unterminated last lines).
    pub read: ReadOptions,
    /// How lines are parsed.
    pub parse: ParseOptions,
    /// Parse threads (0: one per core).
    pub threads: usize,
    /// Wait for another ingest that holds the dataset, or fail at once.
    pub wait: LockWait,
    /// Parse and report, but write nothing.
    pub dry_run: bool,
    /// An input whose share of bad lines is above this makes the exit status 3.
    pub max_bad: f64,
    /// Write every bad line, verbatim, to this file.
    pub rejects: Option<PathBuf>,
    /// Add to the `rejects` file instead of starting it anew (a follow's later runs).
    pub append_rejects: bool,
    /// Files read under another name, before `files` (a followed file renamed or
    /// removed, read through its open descriptor under the name it was followed by).
    pub renamed: Vec<(PathBuf, String)>,
    /// An input that cannot be opened or whose format cannot be told yet is skipped
    /// ([`Event::Skipped`]) instead of stopping the run: a followed file may be
    /// removed at any time, or hold too little to tell its format.
    pub skip_unready: bool,
    /// After the commit, merge a month's small parts once they accumulate
    /// ([`Dataset::compact`]).
    pub compact: bool,
}

/// What happens during an ingest, in order, for the caller to show.
#[derive(Debug)]
pub enum Event<'a> {
    /// Another ingest is writing the dataset; this one waits for it.
    Waiting,
    /// Bytes read so far, of `total` (the sum of the inputs' sizes where known).
    Progress {
        /// Bytes read, the skipped already-ingested heads included.
        done: u64,
        /// All the inputs' bytes (at least 1).
        total: u64,
    },
    /// A line that could not be parsed.
    BadLine {
        /// The input's name.
        file: &'a str,
        /// 1-based line number in the input.
        line: u64,
        /// Why it was rejected.
        reason: &'static str,
        /// The line as read.
        raw: &'a [u8],
    },
    /// An input was damaged, or changed while it was read.
    Damaged {
        /// What happened, naming the input.
        message: &'a str,
        /// Nothing from it was stored (it cannot be trusted) and its resume point kept.
        discarded: bool,
    },
    /// An input's last line has no newline yet and was held back.
    HeldBack {
        /// The input's name.
        file: &'a str,
        /// The bytes held back.
        bytes: u64,
    },
    /// An input was left for a later run (`skip_unready`).
    Skipped {
        /// The input's name.
        file: &'a str,
        /// Why.
        reason: &'a str,
    },
    /// After the commit, small parts were merged into larger ones (one more commit).
    Compacted(&'a Compacted),
    /// An input's share of bad lines is above `max_bad`.
    TooManyBad {
        /// The input's name.
        file: &'a str,
        /// Its bad lines.
        bad: u64,
        /// Its parsed lines (bad included).
        parsed: u64,
        /// The format it was parsed with.
        format: String,
    },
}

/// The outcome of an ingest.
#[derive(Debug)]
pub struct Ingested {
    /// What was read and added.
    pub summary: IngestSummary,
    /// The exit status: [`exit::OK`], [`exit::TOO_MANY_BAD`] or [`exit::DAMAGED`].
    pub exit: i32,
}

/// Ingests `job` into the dataset at `data` (nothing is written with `dry_run`). Every
/// input is opened first, so a bad path or an unknown format stops the run before
/// anything is written; new parts become visible to readers only at the commit.
pub fn run(
    data: &Path,
    job: &IngestJob,
    on: &mut dyn FnMut(Event<'_>),
) -> anyhow::Result<Ingested> {
    let started = Instant::now();
    let mut opened = Vec::new();
    let renamed = job
        .renamed
        .iter()
        .map(|(p, name)| (Input::Path(p.clone()), Some(name)));
    let given = inputs::expand(&job.files)?.into_iter().map(|i| (i, None));
    for (input, name) in renamed.chain(given) {
        let shown = name.cloned().unwrap_or_else(|| input.display_name());
        match inputs::open(input, job.format.as_ref(), &job.read, "--format") {
            Ok(mut o) => {
                o.name = shown;
                opened.push(o);
            }
            Err(e) if job.skip_unready => on(Event::Skipped {
                file: &shown,
                reason: &format!("{e:#}"),
            }),
            Err(e) => return Err(e),
        }
    }

    let ds = if job.dry_run {
        None
    } else {
        Some(Dataset::open_write(data, job.wait, || on(Event::Waiting))?)
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
    let mut rejects = match &job.rejects {
        Some(p) => Some(BufWriter::new(
            std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .append(job.append_rejects)
                .truncate(!job.append_rejects)
                .open(p)
                .with_context(|| format!("--rejects {}", p.display()))?,
        )),
        None => None,
    };

    let total: u64 = opened
        .iter()
        .filter_map(|o| o.reader.content_len())
        .sum::<u64>()
        .max(1);
    let progress = Arc::new(AtomicU64::new(0));
    let mut files = Vec::new();
    let mut reasons: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut distinct = Distinct::default();
    let mut exit_code = exit::OK;
    let mut write_error: Option<anyhow::Error> = None;

    // The writer encodes a row group on its file thread, with as many threads as the
    // parse: the caller keeps gathering rows meanwhile.
    let encode_threads = match job.threads {
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
            threads: job.threads,
            read: job.read.clone(),
            parse: job.parse.clone(),
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
                on(Event::Progress {
                    done: progress.load(Ordering::Relaxed),
                    total,
                });
                for bad in &batch.bad {
                    *reasons.entry(bad.reason).or_default() += 1;
                    on(Event::BadLine {
                        file: &name,
                        line: bad.line,
                        reason: bad.reason,
                        raw: &bad.raw,
                    });
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
            on(Event::Damaged {
                message: d,
                discarded: discard,
            });
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
        if stats.held_back_bytes > 0 {
            on(Event::HeldBack {
                file: &o.name,
                bytes: stats.held_back_bytes,
            });
        }
        let parsed = stats.lines - stats.skipped;
        if parsed > 0 && stats.bad as f64 / parsed as f64 > job.max_bad {
            on(Event::TooManyBad {
                file: &o.name,
                bad: stats.bad,
                parsed,
                format: o.format.name(),
            });
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
    on(Event::Progress {
        done: progress.load(Ordering::Relaxed),
        total,
    });

    let added: u64 = files.iter().map(|f| f.added).sum();
    let (ingest_id, dataset_rows) = match (ds, build) {
        (Some(ds), Some(build)) => {
            // Nothing new (no part, no source changed): the dataset is left untouched.
            let id = ds.finish_ingest(build, ledger, parts)?.unwrap_or(0);
            if id != 0
                && job.compact
                && let Some(c) = ds.compact(encode_threads)?
            {
                on(Event::Compacted(&c));
            }
            (id, ds.manifest()?.rows())
        }
        // --dry-run: nothing written.
        _ => (0, 0),
    };

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
        first: first.map(format_rfc3339_ms),
        last: last.map(format_rfc3339_ms),
        distinct_ips: distinct.ips(),
        distinct_v4_24: v4_nets,
        distinct_v6_48: v6_nets,
        distinct_hostnames: distinct.hosts(),
        seconds: started.elapsed().as_secs_f64(),
        dataset_rows,
        dry_run: job.dry_run,
    };
    Ok(Ingested {
        summary,
        exit: exit_code,
    })
}
