//! Where a report's rows come from: log files given as arguments (parsed on the fly,
//! nothing stored) or, without files, the dataset.

use std::ops::ControlFlow;
use std::path::Path;

use anyhow::bail;
use clap::Args;
use logscope_core::batch::Batch;
use logscope_core::escape;
use logscope_core::pipeline::{self, PipelineOptions};
use logscope_core::source::ReadOptions;

use super::inputs::{self, FormatArgs};
use crate::store::Dataset;
use crate::store::scan::{self, Columns};

/// Log files to read instead of the dataset.
#[derive(Debug, Clone, Args)]
pub struct RowArgs {
    /// Log files (plain, gzip, zstd; patterns; - for stdin) to analyse directly
    /// instead of the dataset.
    #[arg(value_name = "FILE")]
    pub files: Vec<String>,

    /// Log format of FILE, instead of detecting it (see `logscope ingest --help`).
    #[arg(long, value_name = "NAME")]
    pub input_format: Option<String>,

    /// Your own format string for FILE, in nginx or Apache syntax.
    #[arg(long, value_name = "FORMAT", conflicts_with = "input_format")]
    pub log_format: Option<String>,

    /// UTC offset for timestamps in FILE that carry none (e.g. +0200).
    #[arg(long, value_name = "OFFSET", default_value = "+0000", value_parser = inputs::parse_offset)]
    pub assume_offset: i32,
}

impl RowArgs {
    fn format_args(&self) -> FormatArgs {
        FormatArgs {
            format: self.input_format.clone(),
            log_format: self.log_format.clone(),
            assume_offset: self.assume_offset,
        }
    }
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
}

/// Calls `sink(file, batch)` for every batch of records, from the files when some are
/// given, else from the dataset at `data`. Bad lines in files are counted, and the first
/// few are reported on stderr as `file:line: reason: excerpt`.
///
/// Rows are delivered per input in input order; `since`/`until` (UTC ms, half-open)
/// prune the dataset's parts and rows (files are filtered by the caller's filter).
pub fn for_each_batch(
    data: &Path,
    args: &RowArgs,
    cols: Columns,
    since: Option<i64>,
    until: Option<i64>,
    mut sink: impl FnMut(&str, &Batch),
) -> anyhow::Result<RowStats> {
    let mut stats = RowStats::default();
    if args.files.is_empty() {
        let ds = Dataset::open_read(data);
        if !ds.exists() {
            bail!(
                "{}: no dataset here yet; run `logscope ingest FILE` first, or give log files as arguments",
                data.display()
            );
        }
        stats.origin = format!("dataset {}", data.display());
        stats.records = scan::scan(&ds, cols, since, until, |fb| {
            sink(&fb.file, &fb.batch);
            ControlFlow::Continue(())
        })?;
        return Ok(stats);
    }
    let fargs = args.format_args();
    let forced = fargs.forced()?;
    let read = ReadOptions::default();
    let mut opened = Vec::new();
    for input in inputs::expand(&args.files)? {
        opened.push(inputs::open(input, forced.as_ref(), &read)?);
    }
    let names: Vec<String> = opened.iter().map(|o| o.name.clone()).collect();
    stats.origin = names.join(", ");
    let mut shown = 0;
    for o in opened {
        let opts = PipelineOptions {
            read: read.clone(),
            parse: fargs.parse_options(),
            ..PipelineOptions::default()
        };
        let name = o.name.clone();
        let st = pipeline::run(o.reader, &o.format, &opts, |batch| {
            for bad in &batch.bad {
                if shown < 5 {
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
            sink(&name, &batch);
            ControlFlow::Continue(())
        })?;
        if let Some(d) = &st.damage {
            eprintln!("logscope: {}", escape::terminal_str(&d.to_string(), 400));
        }
        stats.records += st.records;
        stats.bad += st.bad;
    }
    if stats.bad > 0 {
        eprintln!("logscope: skipped {} bad lines", stats.bad);
    }
    Ok(stats)
}
