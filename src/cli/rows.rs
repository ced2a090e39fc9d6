//! The flags that say where a report's rows come from: log files given as arguments
//! (their format flags, `--max-bad`, `--full-paths`) or, without files, the dataset.

use std::path::Path;

use clap::Args;

use super::inputs::{self, FormatArgs};
use crate::engine::rows::RowSource;

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

    /// A field map for a JSON-lines FILE (see `logscope ingest --help`).
    #[arg(long, value_name = "MAP", conflicts_with_all = ["input_format", "log_format"])]
    pub json_map: Option<String>,

    /// UTC offset for timestamps in FILE that carry none (e.g. +0200).
    #[arg(long, value_name = "OFFSET", default_value = "+0000", value_parser = inputs::parse_offset)]
    pub assume_offset: i32,

    /// Exit with status 3 if a FILE's share of bad lines is above this (0..1), as
    /// ingest does; a damaged compressed FILE gives status 4. The report is written
    /// either way, with a note.
    #[arg(long, default_value_t = 0.5, value_name = "SHARE", value_parser = parse_share)]
    pub max_bad: f64,

    /// Name the sources in the report by their full paths (the dataset's directory, each
    /// FILE as given) instead of file names only, which keep local paths out of a post.
    #[arg(long)]
    pub full_paths: bool,
}

fn parse_share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not a share between 0 and 1 (e.g. 0.5)")),
    }
}

impl RowArgs {
    /// Where the rows of a command with these flags come from: the FILEs in their
    /// format, else the dataset at `data`. A bad format flag is a usage error (when FILEs
    /// are given: over the dataset the format flags are not used).
    pub fn source(&self, data: &Path) -> anyhow::Result<RowSource> {
        let fargs = FormatArgs {
            format: self.input_format.clone(),
            log_format: self.log_format.clone(),
            json_map: self.json_map.clone(),
            assume_offset: self.assume_offset,
        };
        let format = if self.files.is_empty() {
            None
        } else {
            fargs.forced()?
        };
        Ok(RowSource {
            data: data.to_path_buf(),
            files: self.files.clone(),
            format,
            parse: fargs.parse_options(),
            max_bad: self.max_bad,
            full_paths: self.full_paths,
            opened: Default::default(),
            quiet: false,
        })
    }
}
