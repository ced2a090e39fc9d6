//! The format flags of the commands that read log files (`--input-format`, `--log-format`,
//! `--json-map`, `--assume-offset`).

use clap::Args;
use logscope_core::parse::settle::{self, SettleError};
use logscope_core::parse::{self, Format};

use super::usage_error;

/// How the format of the inputs is chosen.
// The flags' help shows `<log_format>` as is.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, Clone, Args)]
pub struct FormatArgs {
    /// Log format, instead of detecting it per file: combined, common, vhost-combined,
    /// vhost-common, combined-xff, combined-rt, combined-us, nginx-msec, netnea,
    /// caddy-json, w3c, elb, alb, ingress-nginx, haproxy, traefik, traefik-json, envoy,
    /// nginx-json, or nginx:'<log_format>' / apache:'<LogFormat>' / json:'<map>'
    /// (`logscope detect FILE` shows which a file is in). `--format` elsewhere is a
    /// report's output format; `ingest --format` is still read as this.
    #[arg(long = "input-format", alias = "format", value_name = "NAME")]
    pub format: Option<String>,

    /// Your own format string, in nginx `log_format` syntax ('$remote_addr - …') or
    /// Apache `LogFormat` syntax ('%h %l %u %t "%r" …'); the syntax is recognised.
    #[arg(long, value_name = "FORMAT", conflicts_with = "format")]
    pub log_format: Option<String>,

    /// A JSON-lines access log read by a field map: NAME=KEY pairs, e.g.
    /// 'ts=time,client=remote_ip,method=verb,path=url,status=code,bytes=size,agent=ua'.
    /// Names: ts (arrival) or ts_end (completion), client, user, method, path, query,
    /// request, protocol, status, bytes, agent, referer, host, xff, request_time
    /// (seconds; request_time_ms/_us/_ns for other units), and field:NAME for a field
    /// `replay` can key on (key=field:NAME). ts and status are required.
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
                usage_error(format!(
                    "--input-format {name}: {e} (e.g. --input-format combined)"
                ))
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
