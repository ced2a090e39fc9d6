//! Resolving input arguments (paths, globs, `-`), opening them, and choosing each
//! one's format (given, or detected from its first lines).

use std::path::Path;

use anyhow::{Context, bail};
use clap::Args;
use logscope_core::escape;
use logscope_core::parse::{self, Detection, Format};
use logscope_core::source::{Input, ReadOptions, Reader};

use super::usage_error;

/// How the format of the inputs is chosen.
#[derive(Debug, Clone, Args)]
pub struct FormatArgs {
    /// Log format, instead of detecting it per file: combined, common, vhost-combined,
    /// vhost-common, combined-xff, combined-rt, combined-us, nginx-msec, netnea,
    /// caddy-json, w3c, elb, alb, or nginx:'<log_format>' / apache:'<LogFormat>'
    /// (`logscope detect FILE` shows which a file is in).
    #[arg(long, value_name = "NAME")]
    pub format: Option<String>,

    /// Your own format string, in nginx `log_format` syntax ('$remote_addr - …') or
    /// Apache `LogFormat` syntax ('%h %l %u %t "%r" …'); the syntax is recognised.
    #[arg(long, value_name = "FORMAT", conflicts_with = "format")]
    pub log_format: Option<String>,

    /// UTC offset for timestamps that carry none (e.g. +0200); default UTC.
    #[arg(long, value_name = "OFFSET", default_value = "+0000", value_parser = parse_offset)]
    pub assume_offset: i32,
}

/// Parses `+0200`, `-04:00`, `Z`, `UTC` into seconds east of UTC.
pub fn parse_offset(s: &str) -> Result<i32, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("z") || t.eq_ignore_ascii_case("utc") {
        return Ok(0);
    }
    let (sign, rest) = match t.as_bytes().first() {
        Some(b'+') => (1, &t[1..]),
        Some(b'-') => (-1, &t[1..]),
        _ => {
            return Err(format!(
                "'{s}' is not a UTC offset; write it like +0200 or -04:00"
            ));
        }
    };
    let digits: String = rest.chars().filter(|c| *c != ':').collect();
    if digits.len() != 4 || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "'{s}' is not a UTC offset; write it like +0200 or -04:00"
        ));
    }
    let h: i32 = digits[..2].parse().map_err(|_| "bad hours".to_string())?;
    let m: i32 = digits[2..].parse().map_err(|_| "bad minutes".to_string())?;
    if h > 23 || m > 59 {
        return Err(format!("'{s}' is out of range"));
    }
    Ok(sign * (h * 3600 + m * 60))
}

impl FormatArgs {
    /// The format forced on every input, if any.
    pub fn forced(&self) -> anyhow::Result<Option<Format>> {
        if let Some(name) = &self.format {
            return Ok(Some(Format::from_name(name).map_err(|e| {
                usage_error(format!("--format {name}: {e} (e.g. --format combined)"))
            })?));
        }
        if let Some(f) = &self.log_format {
            let fmt = if f.contains('$') && !f.contains('%') {
                Format::nginx(f)
            } else if f.contains('%') && !f.contains('$') {
                Format::apache(f)
            } else if f.contains('$') {
                Format::nginx(f)
            } else {
                return Err(usage_error(format!(
                    "--log-format: '{f}' has no $variable (nginx log_format) and no %directive (Apache LogFormat); example: --log-format '$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent'"
                )));
            };
            return Ok(Some(
                fmt.map_err(|e| usage_error(format!("--log-format: {e}")))?,
            ));
        }
        Ok(None)
    }

    /// Parser options.
    pub fn parse_options(&self) -> parse::ParseOptions {
        parse::ParseOptions {
            default_offset_secs: self.assume_offset,
        }
    }
}

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

/// Opens an input and settles its format.
pub fn open(input: Input, forced: Option<&Format>, read: &ReadOptions) -> anyhow::Result<Opened> {
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
            if lines.is_empty() {
                if !sample.is_blank() && reader.head_damage().is_none() {
                    bail!(
                        "{}: cannot recognise the log format: its first {} bytes hold no complete line of at most {} bytes (--max-line). Name the format with --format (e.g. --format combined) or describe it with --log-format '…' (nginx or Apache syntax)",
                        escape::terminal_str(&name, 1000),
                        sample.len(),
                        read.max_line.max(logscope_core::source::SAMPLE_MIN_LINE)
                    );
                }
                // Empty input, or nothing came out of a damaged stream (reading it
                // reports the damage): nothing to parse, any format will do.
                (Format::Combined, None)
            } else {
                match parse::detect(&lines) {
                    Some(d) => (d.format.clone(), Some(d)),
                    None => {
                        // Too little came out of a damaged stream to tell its format.
                        if let Some(damage) = reader.head_damage() {
                            bail!(
                                "{damage}; too little came out before the damage to recognise the format"
                            );
                        }
                        bail!(
                            "{}: cannot recognise the log format: none of the known formats matches any of its first {} lines (first line: \"{}\"). Name the format with --format (e.g. --format combined) or describe it with --log-format '…' (nginx or Apache syntax)",
                            escape::terminal_str(&name, 1000),
                            lines.len(),
                            escape::terminal(lines[0], 120)
                        )
                    }
                }
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
