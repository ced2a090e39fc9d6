//! Where a report's rows come from: log files given as arguments (parsed on the fly,
//! nothing stored) or, without files, the dataset; and what reading the files found
//! ([`InputReport`]: bad lines, damage, the exit status they call for).

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use anyhow::bail;
use logscope_core::batch::Batch;
use logscope_core::classify::heavy::{SiteSeen, is_mediawiki_path};
use logscope_core::classify::{Filter, Needs};
use logscope_core::escape;
use logscope_core::number::thousands;
use logscope_core::parse::{Format, ParseOptions};
use logscope_core::pipeline::{self, PipelineOptions};
use logscope_core::source::{ReadOptions, SourceError};
use serde::Serialize;

use super::error::exit;
use super::inputs;
use crate::store::Dataset;
use crate::store::counts::Counted;
use crate::store::scan::{self, Columns};
use crate::store::slices::PartOrder;

/// Where a report's rows come from: the log files, when some are given, else the
/// dataset at `data`.
#[derive(Debug, Clone)]
pub struct RowSource {
    /// The dataset directory, read when `files` is empty.
    pub data: PathBuf,
    /// Log files (plain, gzip, zstd; glob patterns; `-` for stdin) read instead of the
    /// dataset.
    pub files: Vec<String>,
    /// The format of every file, else each file's is detected from its first lines.
    pub format: Option<Format>,
    /// How the files are parsed.
    pub parse: ParseOptions,
    /// A file whose share of bad lines is above this calls for exit status 3.
    pub max_bad: f64,
    /// Name the sources by their full paths rather than file names only.
    pub full_paths: bool,
    /// The files opened already ([`RowSource::site`] looked at their first lines), for
    /// the read that follows: standard input can be opened only once.
    pub opened: OpenedFiles,
    /// Say nothing on stderr of bad lines and damage (a command's second pass over
    /// files its first pass reported; the figures still count them).
    pub quiet: bool,
}

impl RowSource {
    /// The same source for another pass whose bad lines the first pass reported.
    pub fn quiet(&self) -> RowSource {
        RowSource {
            quiet: true,
            ..self.clone()
        }
    }
}

/// Inputs opened ahead of their read (see [`RowSource::opened`]).
#[derive(Clone, Default)]
pub struct OpenedFiles(std::sync::Arc<std::sync::Mutex<Vec<inputs::Opened>>>);

impl std::fmt::Debug for OpenedFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OpenedFiles")
    }
}

/// Records of each file's first lines that [`RowSource::site`] looks at.
const SITE_SAMPLE_LINES: usize = 10_000;

/// The last component of an input's name (`/var/log/nginx/access.log` → `access.log`);
/// `-` (standard input) and names without one stay as they are.
fn file_name(name: &str) -> String {
    Path::new(name)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| name.to_string())
}

/// What was read.
#[derive(Debug, Default, Clone)]
pub struct RowStats {
    /// Records delivered (before any filter the caller applies).
    pub records: u64,
    /// Bad lines skipped (files only).
    pub bad: u64,
    /// Where the rows came from, for the report header.
    pub origin: String,
    /// What the FILE arguments yielded; `None` over the dataset.
    pub input: Option<InputReport>,
    /// Rows of the whole dataset snapshot read (its time filters aside); `None` over
    /// files. `dataset_rows - records` rows lie outside `--since`/`--until`.
    pub dataset_rows: Option<u64>,
}

impl RowStats {
    /// The exit status the inputs call for (0 over the dataset).
    pub fn exit_code(&self) -> i32 {
        self.input.as_ref().map_or(exit::OK, InputReport::exit_code)
    }
}

/// What reading the FILE arguments of a report found: JSON reports carry it as their
/// top-level `input` object, text, Markdown and HTML show [`InputReport::notes`].
#[derive(Debug, Default, Clone, Serialize)]
pub struct InputReport {
    /// Lines read (records, bad lines, and blank lines or format directives).
    pub lines: u64,
    /// Records parsed.
    pub records: u64,
    /// Bad lines (skipped).
    pub bad: u64,
    /// Bad lines per reason.
    pub bad_reasons: BTreeMap<&'static str, u64>,
    /// The first bad line.
    pub first_bad: Option<BadRef>,
    /// Damaged compressed inputs: each was read up to the damage only.
    pub damage: Vec<DamageRef>,
    /// `--max-bad`.
    pub max_bad: f64,
    /// Per input, in input order.
    pub files: Vec<FileInput>,
}

/// One bad line, located.
#[derive(Debug, Clone, Serialize)]
pub struct BadRef {
    /// The input's name.
    pub file: String,
    /// 1-based line number.
    pub line: u64,
    /// Why it is bad.
    pub reason: &'static str,
}

/// A damaged input.
#[derive(Debug, Clone, Serialize)]
pub struct DamageRef {
    /// The input's name.
    pub file: String,
    /// What was wrong, as in the message on stderr.
    pub message: String,
    /// Where the damage was detected: a compressed byte offset (a content offset for
    /// a plain file that shrank), if known.
    pub detected_at: Option<u64>,
    /// Lines of the input delivered before the damage, if known.
    pub lines_before: Option<u64>,
}

/// What one input yielded.
#[derive(Debug, Clone, Serialize)]
pub struct FileInput {
    /// The input's name.
    pub file: String,
    /// Lines read.
    pub lines: u64,
    /// Records parsed.
    pub records: u64,
    /// Bad lines.
    pub bad: u64,
    /// Bad lines over lines parsed (blank lines and format directives left out).
    pub bad_share: f64,
    /// Whether `bad_share` is above `--max-bad`.
    pub too_many_bad: bool,
    /// Whether it was damaged (see `damage`).
    pub damaged: bool,
}

impl InputReport {
    /// 4 when an input was damaged, else 3 when an input's share of bad lines is above
    /// `--max-bad`, else 0 — ingest's statuses.
    pub fn exit_code(&self) -> i32 {
        if !self.damage.is_empty() {
            exit::DAMAGED
        } else if self.files.iter().any(|f| f.too_many_bad) {
            exit::TOO_MANY_BAD
        } else {
            exit::OK
        }
    }

    /// Lines for the report's header (raw text: each format escapes them); none when
    /// every line was read and parsed.
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.bad > 0 {
            let mut n = format!(
                "input: {} lines, {} bad",
                thousands(self.lines),
                thousands(self.bad)
            );
            if let Some(b) = &self.first_bad {
                n.push_str(&format!(" (first: {}:{}: {})", b.file, b.line, b.reason));
            }
            n.push_str(" — bad lines are left out of the figures");
            out.push(n);
        }
        for f in self.files.iter().filter(|f| f.too_many_bad) {
            out.push(format!(
                "input: {}: {} of its lines are bad, more than --max-bad {}: is the format right?",
                f.file,
                percent_of(f.bad_share),
                percent_of(self.max_bad)
            ));
        }
        for d in &self.damage {
            // The message says how much of the input was read.
            out.push(format!("input: {}", d.message));
        }
        out
    }
}

fn percent_of(share: f64) -> String {
    format!("{:.1}%", 100.0 * share)
}

/// The dataset columns a command needs: those behind the parts of a row's class it
/// uses (`needs`) and those its filter looks at. Sets the classifier to compute just
/// those parts.
pub fn columns_for(
    needs: Needs,
    filter: &Filter,
    classifier: &mut logscope_core::classify::Classifier,
) -> Columns {
    let needs = needs.or(filter.needs());
    classifier.needs = needs;
    Columns {
        // The method only where a heavy rule names methods.
        request: needs.heavy && classifier.heavy.uses_method(),
        path: needs.heavy || filter.path.is_some(),
        query: needs.heavy,
        identity: needs.identity,
        agent: needs.agent,
        host: filter.host.is_some(),
        xff: !classifier.trust.is_empty(),
        ..Columns::NONE
    }
}

impl RowSource {
    /// Calls `sink(file, batch)` for every batch of records, from the files when some are
    /// given, else from the dataset at `data`. Bad lines in files are counted, and the first
    /// few are reported on stderr as `file:line: reason: excerpt`.
    ///
    /// Rows are delivered per input in input order; `since`/`until` (UTC ms, half-open)
    /// prune the dataset's parts and rows (files are filtered by the caller's filter).
    pub fn for_each_batch(
        &self,
        cols: Columns,
        since: Option<i64>,
        until: Option<i64>,
        mut sink: impl FnMut(&str, &Batch),
    ) -> anyhow::Result<RowStats> {
        self.for_each_batch_with(cols, since, until, |_| (), |f, b, ()| sink(f, b))
    }

    /// [`RowSource::for_each_batch`], with `prep` run on every batch before `sink` gets it with its
    /// result: on the threads that decode the dataset (so both cores share that work), on
    /// the caller's thread for log files.
    pub fn for_each_batch_with<P: Send>(
        &self,
        cols: Columns,
        since: Option<i64>,
        until: Option<i64>,
        prep: impl Fn(&Batch) -> P + Sync,
        mut sink: impl FnMut(&str, &Batch, P),
    ) -> anyhow::Result<RowStats> {
        let period = (since, until, PartOrder::Manifest);
        self.for_each_batch_ordered(cols, period, prep, |f, b, p, _| sink(f, b, p))
    }

    /// [`RowSource::for_each_batch_with`], the dataset's parts read in `order` (see [`PartOrder`]).
    /// `sink` also gets the batch's floor: no row delivered after it is older (UTC ms;
    /// from the dataset's recorded time ranges, `i64::MIN` for log files, whose order is
    /// not known).
    pub fn for_each_batch_ordered<P: Send>(
        &self,
        cols: Columns,
        (since, until, order): (Option<i64>, Option<i64>, PartOrder),
        prep: impl Fn(&Batch) -> P + Sync,
        mut sink: impl FnMut(&str, &Batch, P, i64),
    ) -> anyhow::Result<RowStats> {
        let mut stats = RowStats::default();
        if self.files.is_empty() {
            let ds = open_dataset(&self.data)?;
            stats.origin = dataset_origin(&self.data, self.full_paths);
            let scanned = scan::scan_with(&ds, cols, since, until, order, &prep, |fb, p| {
                sink(&fb.file, &fb.batch, p, fb.floor_ms);
                ControlFlow::Continue(())
            })?;
            stats.records = scanned.delivered;
            stats.dataset_rows = Some(scanned.rows);
            return Ok(stats);
        }
        let read = ReadOptions::default();
        let opened = self.open_files(&read)?;
        let names: Vec<String> = opened
            .iter()
            .map(|o| {
                if self.full_paths {
                    o.name.clone()
                } else {
                    file_name(&o.name)
                }
            })
            .collect();
        stats.origin = names.join(", ");
        let mut shown = 0;
        let mut input = InputReport {
            max_bad: self.max_bad,
            ..InputReport::default()
        };
        for o in opened {
            let opts = PipelineOptions {
                read: read.clone(),
                parse: self.parse.clone(),
                ..PipelineOptions::default()
            };
            let name = o.name.clone();
            let st = pipeline::run(o.reader, &o.format, &opts, |batch| {
                for bad in &batch.bad {
                    *input.bad_reasons.entry(bad.reason).or_default() += 1;
                    if input.first_bad.is_none() {
                        input.first_bad = Some(BadRef {
                            file: name.clone(),
                            line: bad.line,
                            reason: bad.reason,
                        });
                    }
                    if shown < 5 && !self.quiet {
                        shown += 1;
                        eprintln!(
                            "{}:{}: {}: {}",
                            escape::terminal_str(&name, 200),
                            bad.line,
                            bad.reason,
                            escape::terminal(&bad.raw, 160)
                        );
                    }
                }
                sink(&name, &batch, prep(&batch), i64::MIN);
                ControlFlow::Continue(())
            })?;
            if let Some(d) = &st.damage {
                if !self.quiet {
                    eprintln!("logscope: {}", escape::terminal_str(&d.to_string(), 1000));
                }
                input.damage.push(damage_ref(&name, d));
            }
            let parsed = st.lines.saturating_sub(st.skipped);
            let bad_share = st.bad as f64 / parsed.max(1) as f64;
            let too_many_bad = parsed > 0 && bad_share > self.max_bad;
            if too_many_bad && !self.quiet {
                eprintln!(
                    "logscope: {}: {} of {} lines are bad ({} > --max-bad {}): is the format right? (used {})",
                    escape::terminal_str(&name, 200),
                    st.bad,
                    parsed,
                    percent_of(bad_share),
                    percent_of(self.max_bad),
                    o.format.name()
                );
            }
            input.files.push(FileInput {
                file: name,
                lines: st.lines,
                records: st.records,
                bad: st.bad,
                bad_share,
                too_many_bad,
                damaged: st.damage.is_some(),
            });
            input.lines += st.lines;
            input.records += st.records;
            input.bad += st.bad;
            stats.records += st.records;
            stats.bad += st.bad;
        }
        if stats.bad > 0 && !self.quiet {
            eprintln!("logscope: skipped {} bad lines", stats.bad);
        }
        stats.input = Some(input);
        Ok(stats)
    }

    /// The inputs, opened: those [`RowSource::site`] opened, else opened now.
    fn open_files(&self, read: &ReadOptions) -> anyhow::Result<Vec<inputs::Opened>> {
        let kept = std::mem::take(&mut *self.opened.0.lock().unwrap_or_else(|p| p.into_inner()));
        if !kept.is_empty() {
            return Ok(kept);
        }
        let mut opened = Vec::new();
        for input in inputs::expand(&self.files)? {
            opened.push(inputs::open(
                input,
                self.format.as_ref(),
                read,
                "--input-format",
            )?);
        }
        Ok(opened)
    }

    /// What the rows show of the site, for the heavy rules a rules file leaves open
    /// ([`logscope_core::classify::HeavyRules::settle`]): over the dataset, every row (counted at ingest, or
    /// from the path column of parts written before that); over log files, the
    /// records among the first lines of each (the ones read to detect its format, up to
    /// 10,000), so that standard input is read once.
    pub fn site(&self) -> anyhow::Result<SiteSeen> {
        if self.files.is_empty() {
            let ds = open_dataset(&self.data)?;
            let manifest = ds.manifest()?;
            let counted: Option<u64> = manifest.parts.iter().map(|p| p.mediawiki_rows).sum();
            if let Some(mediawiki_rows) = counted {
                return Ok(SiteSeen {
                    rows: manifest.rows(),
                    mediawiki_rows,
                });
            }
            let counted = crate::store::counts::value_counts(&ds, "path", None, None)?;
            let mut seen = SiteSeen::default();
            for (path, n) in counted.values {
                seen.rows += n;
                if path.as_deref().is_some_and(is_mediawiki_path) {
                    seen.mediawiki_rows += n;
                }
            }
            return Ok(seen);
        }
        let opened = self.open_files(&ReadOptions::default())?;
        let mut seen = SiteSeen::default();
        for o in &opened {
            let mut parser = o.format.parser(&self.parse);
            let lines = o.head.split(|&c| c == b'\n');
            // The last piece may be a line cut by the end of the head.
            let whole = o.head.iter().filter(|&&c| c == b'\n').count();
            for line in lines.take(whole.min(SITE_SAMPLE_LINES)) {
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if let Ok(r) = parser.parse(line) {
                    seen.rows += 1;
                    let path = r.path.and_then(|p| std::str::from_utf8(p).ok());
                    seen.mediawiki_rows += u64::from(path.is_some_and(is_mediawiki_path));
                }
            }
        }
        *self.opened.0.lock().unwrap_or_else(|p| p.into_inner()) = opened;
        Ok(seen)
    }

    /// Rows per distinct value of the text column `column` over the dataset, in order of
    /// first appearance, counted where the pages are decoded; `None` when FILE arguments
    /// are given (their rows go through [`RowSource::for_each_batch`]).
    pub fn value_counts(
        &self,
        column: &str,
        since: Option<i64>,
        until: Option<i64>,
    ) -> anyhow::Result<Option<(Counted, RowStats)>> {
        if !self.files.is_empty() {
            return Ok(None);
        }
        let ds = open_dataset(&self.data)?;
        let counted = crate::store::counts::value_counts(&ds, column, since, until)?;
        let stats = RowStats {
            records: counted.scanned.delivered,
            dataset_rows: Some(counted.scanned.rows),
            origin: dataset_origin(&self.data, self.full_paths),
            ..RowStats::default()
        };
        Ok(Some((counted.values, stats)))
    }
}

fn open_dataset(data: &Path) -> anyhow::Result<Dataset> {
    let ds = Dataset::open_read(data);
    if !ds.exists() {
        bail!(
            "{}: no dataset here yet; run `logscope ingest FILE` first, or give log files as arguments",
            escape::path(data)
        );
    }
    Ok(ds)
}

fn dataset_origin(data: &Path, full_paths: bool) -> String {
    if full_paths {
        format!("dataset {}", data.display())
    } else {
        "dataset".to_string()
    }
}

fn damage_ref(file: &str, d: &SourceError) -> DamageRef {
    let detail = d.damage();
    DamageRef {
        file: file.to_string(),
        message: d.to_string(),
        detected_at: detail.map(|x| x.detected_at),
        lines_before: detail.map(|x| x.lines_end),
    }
}
