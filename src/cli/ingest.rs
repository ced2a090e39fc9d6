//! `logscope ingest`: parse logs and add what is new to the dataset, atomically.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::net::IpAddr;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use logscope_core::batch::Batch;
use logscope_core::escape;
use logscope_core::pipeline::{self, PipelineOptions};
use logscope_core::source::{Compression, DamageKind, Input, ReadOptions, SourceError};
use rustc_hash::FxHashSet as HashSet;
use serde::Serialize;

use super::exit;
use super::inputs::{self, FormatArgs};
use crate::render::summary;
use crate::store::manifest::{FINGERPRINT_LEN, fingerprint};
use crate::store::writer::prepare;
use crate::store::{CompressedCopy, Dataset, LockWait, Manifest, SourceEntry, StagedWriter};

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

    /// A plain file's last line without a newline: `hold` it back until it is complete
    /// (the file may still be written; the next ingest reads it whole), or `take` it
    /// (the file is finished). Standard input and compressed files that end cleanly
    /// are always complete.
    #[arg(long, value_enum, default_value_t = FinalLine::Hold, value_name = "WHEN")]
    pub final_line: FinalLine,
}

/// What to do with a plain file's unterminated last line.
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

/// What happened to one input.
#[derive(Debug, Serialize, Clone)]
pub struct FileSummary {
    /// Input name.
    pub file: String,
    /// Format used.
    pub format: String,
    /// Detection confidence (matched/sampled), when detected.
    pub confidence: Option<f64>,
    /// Compression.
    pub compression: String,
    /// Lines read now.
    pub lines: u64,
    /// Records added now.
    pub added: u64,
    /// Lines skipped because already ingested.
    pub already_seen: u64,
    /// Bad lines now.
    pub bad: u64,
    /// Blank lines and directives.
    pub skipped: u64,
    /// Content bytes read now.
    pub bytes: u64,
    /// Damage found in a compressed input.
    pub damage: Option<String>,
    /// A compressed file already read to its end by an earlier ingest (same size and
    /// first bytes): skipped without decompressing it.
    pub unchanged: bool,
    /// Bytes of an unterminated last line held back (`--final-line hold`): read by the
    /// next ingest once complete.
    pub held_back_bytes: u64,
    /// Nothing from this input was stored: its content could not be trusted (corrupt
    /// compressed data, or the file changed while it was read).
    pub discarded: bool,
}

/// The whole summary (`--json` prints it).
#[derive(Debug, Serialize)]
pub struct IngestSummary {
    /// Dataset directory.
    pub dataset: String,
    /// Ingest number (0 when nothing was committed: nothing new, or `--dry-run`).
    pub ingest: u64,
    /// Inputs.
    pub files: Vec<FileSummary>,
    /// Lines read.
    pub lines: u64,
    /// Records added.
    pub added: u64,
    /// Lines already in the dataset.
    pub already_seen: u64,
    /// Bad lines.
    pub bad: u64,
    /// Blank lines and directives.
    pub skipped: u64,
    /// Bad lines by reason, most frequent first.
    pub bad_reasons: Vec<(String, u64)>,
    /// Earliest arrival added (RFC 3339 UTC).
    pub first: Option<String>,
    /// Latest arrival added.
    pub last: Option<String>,
    /// Distinct client addresses among added records.
    pub distinct_ips: u64,
    /// Distinct IPv4 /24 prefixes.
    pub distinct_v4_24: u64,
    /// Distinct IPv6 /48 prefixes.
    pub distinct_v6_48: u64,
    /// Distinct clients that are host names, not addresses.
    pub distinct_hostnames: u64,
    /// Content bytes read.
    pub bytes: u64,
    /// Wall time of the run in seconds.
    pub seconds: f64,
    /// Rows in the dataset after the ingest.
    pub dataset_rows: u64,
    /// Whether this was a `--dry-run` (nothing written).
    pub dry_run: bool,
}

#[derive(Default)]
struct Distinct {
    ips: HashSet<IpAddr>,
    v4: HashSet<u32>,
    v6: HashSet<u64>,
    hosts: HashSet<String>,
    first: Option<i64>,
    last: Option<i64>,
}

impl Distinct {
    fn add(&mut self, b: &Batch) {
        for (i, ip) in b.ip.iter().enumerate() {
            match ip {
                Some(ip) => {
                    if self.ips.insert(*ip) {
                        match ip {
                            IpAddr::V4(v4) => {
                                self.v4.insert(u32::from(*v4) >> 8);
                            }
                            IpAddr::V6(v6) => {
                                self.v6.insert((u128::from(*v6) >> 80) as u64);
                            }
                        }
                    }
                }
                None => {
                    if let Some(h) = b.client.get(i)
                        && !self.hosts.contains(h)
                    {
                        self.hosts.insert(h.to_string());
                    }
                }
            }
        }
        if let Some(&mn) = b.ts_ms.iter().min() {
            self.first = Some(self.first.map_or(mn, |f| f.min(mn)));
        }
        if let Some(&mx) = b.ts_ms.iter().max() {
            self.last = Some(self.last.map_or(mx, |f| f.max(mx)));
        }
    }
}

impl Distinct {
    fn merge(&mut self, other: Distinct) {
        self.ips.extend(other.ips);
        self.v4.extend(other.v4);
        self.v6.extend(other.v6);
        self.hosts.extend(other.hosts);
        for t in [other.first, other.last].into_iter().flatten() {
            self.first = Some(self.first.map_or(t, |f| f.min(t)));
            self.last = Some(self.last.map_or(t, |l| l.max(t)));
        }
    }
}

/// The file system identity of a path (device, inode).
fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Whether the plain file `id` (still at `path`) no longer starts with the bytes it
/// started with when opened.
fn head_changed(path: &Path, id: Option<(u64, u64)>, head: &[u8]) -> bool {
    use std::io::Read;
    if id.is_none() || file_id(path) != id {
        // Renamed away (logrotate's rename) and maybe replaced: what was read came
        // from the open file, which rotation does not change.
        return false;
    }
    let n = head.len().min(FINGERPRINT_LEN);
    let mut now = Vec::with_capacity(n);
    match File::open(path) {
        Ok(f) => {
            if f.take(n as u64).read_to_end(&mut now).is_err() {
                return true;
            }
            now != head[..n]
        }
        // Removed or renamed after reading (logrotate's rename): what was read was
        // read from the open file, intact.
        Err(_) => false,
    }
}

/// The identity of a compressed file on disk: its size and the fingerprint of its
/// first bytes. `None` if it cannot be read (the reader reports that).
fn compressed_copy(path: &Path) -> Option<CompressedCopy> {
    use std::io::Read;
    let mut f = File::open(path).ok()?;
    let size = f.metadata().ok()?.len();
    let mut head = Vec::with_capacity(FINGERPRINT_LEN);
    Read::by_ref(&mut f)
        .take(FINGERPRINT_LEN as u64)
        .read_to_end(&mut head)
        .ok()?;
    Some(CompressedCopy {
        size,
        fingerprint: fingerprint(&head),
    })
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
    let mut manifest = match &ds {
        Some(ds) => ds.manifest()?,
        None => Manifest::default(),
    };
    let sources_before = serde_json::to_string(&manifest.sources)?;
    let ingest_id = manifest.ingests + 1;
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

    for (input_no, mut o) in opened.into_iter().enumerate() {
        let mut writer = build
            .as_ref()
            .map(|b| StagedWriter::new(b.dir.clone(), ingest_id, input_no));
        let compression = o.reader.compression();
        // A compressed file already read to its end: skip it without decompressing.
        let copy = match &o.input {
            Input::Path(p) if compression != Compression::None => compressed_copy(p),
            _ => None,
        };
        if let Some(i) = copy.as_ref().and_then(|c| manifest.find_compressed(c)) {
            let s = &mut manifest.sources[i];
            if !s.names.contains(&o.name) {
                s.names.push(o.name.clone());
            }
            files.push(FileSummary {
                file: o.name,
                format: s.format.clone(),
                confidence: o.detection.as_ref().map(|d| d.confidence),
                compression: compression.name().to_string(),
                lines: 0,
                added: 0,
                already_seen: s.lines,
                bad: 0,
                skipped: 0,
                bytes: 0,
                damage: None,
                unchanged: true,
                held_back_bytes: 0,
                discarded: false,
            });
            continue;
        }
        let id = match &o.input {
            Input::Path(p) => file_id(p),
            _ => None,
        };
        // Resume where an earlier ingest of the same content stopped.
        let known = manifest.find_source(&o.head);
        let (skip_bytes, skip_lines) = match known {
            Some(i) => (manifest.sources[i].content_bytes, manifest.sources[i].lines),
            None => (0, 0),
        };
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
            |batch| {
                // Runs on the parse workers: the polars conversion is parallel too.
                let prepared = convert.then(|| prepare(&batch, &name));
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
                if let (Some(w), Some(p)) = (writer.as_mut(), prepared) {
                    let written = p
                        .map_err(|e| anyhow::anyhow!("converting records of {name}: {e}"))
                        .and_then(|p| w.write_prepared(p).map_err(anyhow::Error::new));
                    if let Err(e) = written {
                        write_error = Some(e);
                        return ControlFlow::Break(());
                    }
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
        let changed = match &o.input {
            Input::Path(p) if compression == Compression::None => head_changed(p, id, &o.head),
            _ => false,
        };
        let corrupt = stats
            .damage_info()
            .is_some_and(|d| d.kind == DamageKind::Corrupt);
        let discard = corrupt || changed;
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
                "logscope: {}: its last line has no newline yet ({} bytes): held back until it is complete (--final-line take if the file is finished)",
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
        // Remember a compressed copy only once it has been read to its end, intact.
        let copy = copy.filter(|_| stats.damage.is_none());
        let (records, bad) = if discard {
            (0, 0)
        } else {
            (stats.records, stats.bad)
        };
        // A discarded input keeps the resume point it had.
        let (content_end, lines_end) = if discard {
            (skip_bytes, skip_lines)
        } else {
            (stats.content_end, stats.lines_end)
        };
        let fp_len = o.head.len().min(FINGERPRINT_LEN);
        let fp = fingerprint(&o.head[..fp_len]);
        let display = o.name.clone();
        match known {
            // An empty input consumed nothing: no entry (one fingerprinting no bytes
            // would match every later input).
            None if fp_len == 0 || content_end == 0 => {}
            Some(i) => {
                let s = &mut manifest.sources[i];
                if !discard {
                    s.fingerprint = fp;
                    s.fingerprint_len = fp_len;
                }
                s.content_bytes = content_end;
                s.lines = lines_end;
                s.records += records;
                s.bad += bad;
                if !s.names.contains(&display) {
                    s.names.push(display);
                }
                if let Some(c) = copy
                    && !s.compressed.contains(&c)
                {
                    s.compressed.push(c);
                }
            }
            None => manifest.sources.push(SourceEntry {
                fingerprint: fp,
                fingerprint_len: fp_len,
                names: vec![display],
                format: o.format.name(),
                content_bytes: content_end,
                lines: lines_end,
                records,
                bad,
                compressed: copy.into_iter().collect(),
            }),
        }
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
        });
    }
    if let Some(w) = rejects.as_mut() {
        w.flush().context("writing --rejects")?;
    }

    let added: u64 = files.iter().map(|f| f.added).sum();
    let (ingest_id, dataset_rows) = match (ds, build) {
        (Some(ds), Some(build)) => {
            let changed =
                !parts.is_empty() || serde_json::to_string(&manifest.sources)? != sources_before;
            let id = if changed {
                ds.commit(build, manifest, parts)?;
                ingest_id
            } else {
                // Nothing new: leave the dataset untouched.
                ds.discard(build)?;
                0
            };
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
        first: distinct.first.map(summary::rfc3339_ms),
        last: distinct.last.map(summary::rfc3339_ms),
        distinct_ips: distinct.ips.len() as u64,
        distinct_v4_24: distinct.v4.len() as u64,
        distinct_v6_48: distinct.v6.len() as u64,
        distinct_hostnames: distinct.hosts.len() as u64,
        seconds: started.elapsed().as_secs_f64(),
        dataset_rows,
        dry_run: args.dry_run,
    };
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else if !args.quiet {
        print!("{}", summary::ingest_text(&summary));
    }
    Ok(exit_code)
}
