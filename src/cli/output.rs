//! Report output options shared by every report command: `--format` and `--out`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};

/// How a report is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// A table for the terminal (colour only on a terminal, NO_COLOR honoured).
    Text,
    /// Markdown, ready to paste into an incident post.
    Md,
    /// CSV (one table; spreadsheet formulas defused).
    Csv,
    /// JSON: the typed result, not the table.
    Json,
    /// A self-contained HTML page (no network resources).
    Html,
}

impl OutputFormat {
    /// File extension.
    pub fn ext(self) -> &'static str {
        match self {
            OutputFormat::Text => "txt",
            OutputFormat::Md => "md",
            OutputFormat::Csv => "csv",
            OutputFormat::Json => "json",
            OutputFormat::Html => "html",
        }
    }
}

/// `--format` and `--out`.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,

    /// Write the report to FILE instead of standard output. A bare file name (no
    /// directory) is written under reports/.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

impl OutputArgs {
    /// Where `--out` points, with bare names placed under `reports/`.
    pub fn out_path(&self) -> Option<PathBuf> {
        self.out.as_ref().map(|p| {
            if p.components().count() == 1 && !p.is_absolute() {
                Path::new("reports").join(p)
            } else {
                p.clone()
            }
        })
    }

    /// Whether terminal colour applies (text to a terminal, NO_COLOR unset).
    pub fn color(&self) -> bool {
        self.format == OutputFormat::Text
            && self.out.is_none()
            && logscope_core::table::stdout_color()
    }

    /// Writes the rendered report to stdout or `--out` (atomically: temp file + rename).
    pub fn emit(&self, content: &str) -> anyhow::Result<()> {
        match self.out_path() {
            None => {
                let mut out = std::io::stdout().lock();
                out.write_all(content.as_bytes())?;
                out.flush()?;
            }
            Some(p) => {
                if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir)
                        .with_context(|| format!("--out: cannot create {}", dir.display()))?;
                }
                let tmp = p.with_extension("tmp");
                std::fs::write(&tmp, content)
                    .with_context(|| format!("--out: cannot write {}", tmp.display()))?;
                std::fs::rename(&tmp, &p)
                    .with_context(|| format!("--out: cannot write {}", p.display()))?;
                eprintln!("logscope: wrote {}", p.display());
            }
        }
        Ok(())
    }
}
