//! Resolving input arguments (paths, globs, `-`), opening them, and choosing each
//! one's format (given, or detected from its first lines).

use std::path::Path;

use anyhow::{Context, bail};
use clap::Args;
use logscope_core::escape;
use logscope_core::parse::settle::{self, Sampled, SettleError};
use logscope_core::parse::{self, Detection, Format};
use logscope_core::source::{Input, ReadOptions, Reader, SAMPLE_MIN_LINE};

use super::usage_error;

/// How the format of the inputs is chosen.
#[derive(Debug, Clone, Args)]
pub struct FormatArgs {
    /// Log format, instead of detecting it per file: combined, common, vhost-combined,
    /// vhost-common, combined-xff, combined-rt, combined-us, nginx-msec, netnea,
    /// caddy-json, w3c, elb, alb, ingress-nginx, haproxy, traefik, traefik-json, envoy,
    /// nginx-json, or nginx:'<log_format>' / apache:'<LogFormat>' / json:'<map>'
    /// (`logscope detect FILE` shows which a file is in).
    #[arg(long, value_name = "NAME")]
    pub format: Option<String>,

    /// Your own format string, in nginx `log_format` syntax ('$remote_addr - …') or
    /// Apache `LogFormat` syntax ('%h %l %u %t "%r" …'); the syntax is recognised.
    #[arg(long, value_name = "FORMAT", conflicts_with = "format")]
    pub log_format: Option<String>,

    /// A JSON-lines access log read by a field map: NAME=KEY pairs, e.g.
    /// 'ts=time,client=remote_ip,method=verb,path=url,status=code,bytes=size,agent=ua'.
    /// Names: ts (arrival) or ts_end (completion), client, user, method, path, query,
    /// request, protocol, status, bytes, agent, referer, host, xff, request_time
    /// (seconds; request_time_ms/_us/_ns for other units). ts and status are required.
    #[arg(long, value_name = "MAP", conflicts_with_all = ["format", "log_format"])]
    pub json_map: Option<String>,

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
            return Ok(Some(settle::log_format(f).map_err(|e| match e {
                SettleError::UnknownSyntax(_) => usage_error(format!(
                    "--log-format: {e}; example: --log-format '$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent'"
                )),
                e => usage_error(format!("--log-format: {e}")),
            })?));
        }
        if let Some(m) = &self.json_map {
            return Ok(Some(Format::json_map(m).map_err(|e| {
                usage_error(format!(
                    "--json-map: {e}; example: --json-map 'ts=time,client=remote_ip,status=status'"
                ))
            })?));
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
                    "{}: {e}. Name the format with --format (e.g. --format combined) or describe it with --log-format '…' (nginx or Apache syntax) or --json-map '…' (JSON lines)",
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
