//! `logscope detect`: which format a log is in, and how sure the detection is.

use crate::engine::envelope::{Envelope, Inputs};
use clap::Args;
use logscope_core::escape;
use logscope_core::source::ReadOptions;
use serde::Serialize;

/// Arguments of `logscope detect`.
#[derive(Debug, Args)]
pub struct DetectArgs {
    /// Log files (plain, gzip or zstd), or - for standard input.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<String>,

    /// Print one JSON object per file.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct DetectOut {
    file: String,
    compression: String,
    format: Option<String>,
    matched: usize,
    sampled: usize,
    confidence: f64,
    alternatives: Vec<(String, usize)>,
}

/// Runs `logscope detect`.
pub fn run(args: DetectArgs) -> anyhow::Result<i32> {
    let mut code = super::exit::OK;
    for input in crate::engine::inputs::expand(&args.files)? {
        let name = input.display_name();
        let mut reader = logscope_core::source::Reader::open(&input, ReadOptions::default())?;
        let sample = reader.sample(crate::engine::inputs::SAMPLE_LINES)?;
        let sample = sample.lines(crate::engine::inputs::SAMPLE_LINES);
        let det = logscope_core::parse::detect(&sample);
        let out = DetectOut {
            file: name.clone(),
            compression: reader.compression().name().to_string(),
            format: det.as_ref().map(|d| d.format.name()),
            matched: det.as_ref().map_or(0, |d| d.matched),
            sampled: sample.len(),
            confidence: det.as_ref().map_or(0.0, |d| d.confidence),
            alternatives: det
                .as_ref()
                .map(|d| d.alternatives.iter().map(|(f, n)| (f.name(), *n)).collect())
                .unwrap_or_default(),
        };
        if det.is_none() {
            code = super::exit::ERROR;
        }
        if args.json {
            let env = Envelope::plain("detect", Inputs::files(&name));
            println!("{}", escape::json(&serde_json::to_string(&env.wrap(&out))?));
            continue;
        }
        match &out.format {
            Some(f) => {
                println!(
                    "{}: {} ({}; {} of {} sampled lines match, confidence {:.1}%)",
                    escape::terminal_str(&name, 200),
                    escape::terminal_str(f, 200),
                    out.compression,
                    out.matched,
                    out.sampled,
                    100.0 * out.confidence
                );
                for (alt, n) in out.alternatives.iter().take(4) {
                    println!(
                        "  also matches: {} ({n} lines)",
                        escape::terminal_str(alt, 200)
                    );
                }
            }
            None => println!(
                "{}: unknown format ({}; none of {} sampled lines matches a known format); use --format or --log-format",
                escape::terminal_str(&name, 200),
                out.compression,
                out.sampled
            ),
        }
    }
    Ok(code)
}
