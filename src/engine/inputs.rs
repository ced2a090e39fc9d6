//! Resolving input arguments (paths, globs, `-`), opening them, and choosing each
//! one's format (given, or detected from its first lines).

use std::path::Path;

use anyhow::{Context, bail};
use logscope_core::escape;
use logscope_core::parse::settle::{self, Sampled, SettleError};
use logscope_core::parse::{Detection, Format};
use logscope_core::source::{Input, ReadOptions, Reader, SAMPLE_MIN_LINE};

/// Expands arguments into inputs: `-` is stdin, existing paths are kept, patterns with
/// `*`, `?` or `[` are globbed (sorted). A pattern matching nothing is an error.
pub fn expand(args: &[String]) -> anyhow::Result<Vec<Input>> {
    let mut out = Vec::new();
    for a in args {
        if a == "-" {
            out.push(Input::Stdin);
            continue;
        }
        if Path::new(a).exists() || !a.contains(['*', '?', '[']) {
            out.push(Input::Path(a.into()));
            continue;
        }
        let mut matched: Vec<_> = glob::glob(a)
            .with_context(|| format!("bad file pattern '{}'", escape::terminal_str(a, 1000)))?
            .filter_map(Result::ok)
            .filter(|p| p.is_file())
            .collect();
        if matched.is_empty() {
            bail!(
                "{}: no file matches this pattern",
                escape::terminal_str(a, 1000)
            );
        }
        matched.sort();
        out.extend(matched.into_iter().map(Input::Path));
    }
    if out.iter().filter(|i| **i == Input::Stdin).count() > 1 {
        bail!("'-' (standard input) can be given only once");
    }
    Ok(out)
}

/// An input opened and ready to parse.
pub struct Opened {
    /// The input.
    pub input: Input,
    /// Its name in messages and in the dataset's `file` column.
    pub name: String,
    /// The reader, positioned at the start.
    pub reader: Reader,
    /// First bytes of its content.
    pub head: Vec<u8>,
    /// The format to parse it with.
    pub format: Format,
    /// How the format was found, if detected.
    pub detection: Option<Detection>,
}

/// Lines sampled for format detection.
pub const SAMPLE_LINES: usize = 200;

/// Opens an input and settles its format; `format_flag` is the flag that names a
/// format for the command at hand (`--format` for ingest, `--input-format` for reports),
/// for the message when none is recognised.
pub fn open(
    input: Input,
    forced: Option<&Format>,
    read: &ReadOptions,
    format_flag: &str,
) -> anyhow::Result<Opened> {
    let name = input.display_name();
    let mut reader = Reader::open(&input, read.clone())?;
    let head = reader.peek_head()?;
    let (format, detection) = match forced {
        Some(f) => (f.clone(), None),
        None => {
            // Up to 200 lines from the first few MiB, over-long lines skipped: a long
            // junk first line does not hide the lines after it.
            let sample = reader.sample(SAMPLE_LINES)?;
            let lines = sample.lines(SAMPLE_LINES);
            let damage = reader.head_damage();
            let sampled = Sampled {
                lines: &lines,
                bytes: sample.len(),
                blank: sample.is_blank(),
                damaged: damage.is_some(),
                max_line: read.max_line.max(SAMPLE_MIN_LINE),
            };
            match settle::from_sample(&sampled) {
                Ok(settled) => settled,
                // Too little came out of a damaged stream to tell its format.
                Err(e @ SettleError::Damaged) => match damage {
                    Some(damage) => bail!("{damage}; {e}"),
                    None => bail!("{e}"),
                },
                Err(e) => bail!(
                    "{}: {e}. Name the format with {format_flag} (e.g. {format_flag} combined) or describe it with --log-format '…' (nginx or Apache syntax) or --json-map '…' (JSON lines)",
                    escape::terminal_str(&name, 1000)
                ),
            }
        }
    };
    Ok(Opened {
        input,
        name,
        reader,
        head,
        format,
        detection,
    })
}
