//! Log line parsers: the supported formats ([`Format`]), user format strings in nginx
//! and Apache syntax, format detection ([`detect`]) and the [`LineParser`] trait that
//! turns one line into a [`Record`].
//!
//! Text formats (every format except Caddy JSON and W3C) compile into one small program
//! of literals and fields, run by one generic matcher; fields are sub-slices of the line
//! (raw bytes as logged: Apache `\"`/`\xhh` escapes and nginx `\x22` are *not*
//! unescaped), and parsing a line does not allocate.
//!
//! Conventions shared by all formats:
//! - a stray trailing `\r` is ignored;
//! - a line wrapped in an extra pair of double quotes (`"1.2.3.4 - - […] … "ua""`) is
//!   unwrapped first, unless the format itself starts with a quote;
//! - the `combined` family (`combined`, `vhost-combined`, `combined-xff`) accepts any
//!   number of extra trailing ` "…"` fields and ignores them (only `combined-xff` puts
//!   the first extra field in `xff`); every other format must match the whole line;
//! - a line that does not fit is an `Err` with a reason, never a guess.
//!
//! Timestamps: Apache `%t` stamps the arrival of the request. nginx (`$time_local`,
//! `$time_iso8601`, `$msec`) and Caddy (`ts`) stamp its completion, so when the format
//! also logs the request time, `ts_ms` = completion − request time. When a format has
//! several time fields, the most precise one wins (`$msec` over `$time_local`). An
//! arrival outside 1970-01-01T00:00:00Z ..= 2099-12-31T23:59:59.999Z is a bad line,
//! [`ParseError::TimestampOutOfRange`], in every format; arithmetic on parsed times is
//! done in `i128`, so no value a line can hold overflows it.

mod apache;
mod caddy;
mod captured;
mod cri;
mod fields;
mod haproxy;
mod json;
mod jsonlines;
mod layouts;
mod nginx;
mod npm;
mod program;
mod proxies;
mod registry;
pub mod settle;
mod w3c;

use std::fmt;
use std::sync::Arc;

use crate::record::Record;
pub use captured::{CaptureError, Captured, header_variable, normalise_field, request_header};
use fields::RtUnit;
pub use haproxy::HAPROXY_CLF_FORMAT;
pub use jsonlines::JsonMap;
pub use npm::NPM_DEFAULT_HOST_FORMAT;
use program::{Builder, FieldKind, Program, TextParser, TimeKind, Trailing};
pub use proxies::{INGRESS_NGINX_FORMAT, INGRESS_NGINX_LEGACY_FORMAT, ISTIO_FORMAT};
pub use registry::BUILTINS;

/// A client field (`%h`, `$remote_addr`, `c-ip`, …) as an address, `None` for a host
/// name: IPv4, `IPv4:port`, IPv6, `IPv6%zone`, `[IPv6]`, `[IPv6]:port`; zone and port
/// dropped, IPv4-mapped IPv6 (`::ffff:1.2.3.4`) as IPv4. Every parser fills
/// [`Record::ip`] with it; readers of stored `client` text should use it too, so that
/// a client is the same address (and /24) everywhere.
pub use fields::parse_ip as client_ip;
pub use layouts::{Layered, LayoutCounts};

/// Why a line could not be parsed. Cheap to create and copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParseError {
    /// A directive or comment line (W3C `#Fields:` etc.): not a record and not a bad
    /// line. See [`ParseError::is_skip`].
    Directive,
    /// An empty line (also a skip).
    Empty,
    /// The line ends before the format does.
    Truncated,
    /// The line's text differs from the format's literal text (spaces, brackets, quotes).
    Mismatch,
    /// A quoted field has no closing quote.
    UnterminatedQuote,
    /// The client field is empty.
    MissingClient,
    /// The timestamp is missing or invalid.
    BadTimestamp,
    /// The timestamp is valid but the arrival it gives lies outside the documented
    /// window 1970-01-01T00:00:00Z (inclusive) to 2100-01-01T00:00:00Z (exclusive)
    /// ([`crate::time::TS_MIN_MS`], [`crate::time::TS_END_MS`]). Reason (stable):
    /// `"timestamp out of range (1970–2099)"`.
    TimestampOutOfRange,
    /// The status field is empty.
    MissingStatus,
    /// The status is not three digits.
    BadStatus,
    /// The size is neither digits nor `-`.
    BadBytes,
    /// The request time is not a number in the expected unit.
    BadRequestTime,
    /// Unexpected text after the last field.
    TrailingData,
    /// Not valid JSON (Caddy).
    BadJson,
    /// A JSON log entry that is not an access-log entry (no `request`/`status`).
    NotAccessLog,
    /// W3C data before any `#Fields:` directive.
    NoFieldsDirective,
    /// A W3C line whose field count differs from `#Fields:`.
    FieldCount,
}

impl ParseError {
    /// A short reason, e.g. `"bad timestamp"`.
    pub fn reason(&self) -> &'static str {
        match self {
            ParseError::Directive => "directive line",
            ParseError::Empty => "empty line",
            ParseError::Truncated => "line ends early",
            ParseError::Mismatch => "format mismatch",
            ParseError::UnterminatedQuote => "unterminated quote",
            ParseError::MissingClient => "missing client",
            ParseError::BadTimestamp => "bad timestamp",
            ParseError::TimestampOutOfRange => "timestamp out of range (1970–2099)",
            ParseError::MissingStatus => "missing status",
            ParseError::BadStatus => "bad status",
            ParseError::BadBytes => "bad size",
            ParseError::BadRequestTime => "bad request time",
            ParseError::TrailingData => "unexpected trailing data",
            ParseError::BadJson => "invalid JSON",
            ParseError::NotAccessLog => "not an access-log entry",
            ParseError::NoFieldsDirective => "no #Fields directive before data",
            ParseError::FieldCount => "field count differs from #Fields",
        }
    }

    /// Whether the line is neither a record nor a bad line (directives, comments, blank
    /// lines): the reader should just skip it.
    pub fn is_skip(&self) -> bool {
        matches!(self, ParseError::Directive | ParseError::Empty)
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason())
    }
}

impl std::error::Error for ParseError {}

/// A problem in a format name or a user's format string. The message says where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// `--format` named no known format.
    #[error(
        "unknown format {name:?}; known formats: {known}, or nginx:'<log_format>' / apache:'<LogFormat>'"
    )]
    UnknownName {
        /// What was given.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// The format string is empty.
    #[error("the format string is empty")]
    Empty,
    /// Something at a position in the format string is wrong.
    #[error("column {col}: {token:?}: {reason}")]
    Invalid {
        /// 1-based column (in characters) in the string as given.
        col: usize,
        /// The offending text.
        token: String,
        /// What is wrong.
        reason: String,
    },
    /// An Apache `%` directive letter that does not exist.
    #[error(
        "column {col}: unknown Apache directive {token:?} (see https://httpd.apache.org/docs/current/mod/mod_log_config.html#formats)"
    )]
    UnknownDirective {
        /// 1-based column.
        col: usize,
        /// The directive as written.
        token: String,
    },
    /// Two fields with nothing between them: the end of the first cannot be found.
    #[error(
        "column {col}: {token:?} directly follows {prev:?} (column {prev_col}) with no text between them, so the end of {prev:?} cannot be found"
    )]
    Adjacent {
        /// 1-based column of the second field.
        col: usize,
        /// The second field.
        token: String,
        /// 1-based column of the first field.
        prev_col: usize,
        /// The first field.
        prev: String,
    },
    /// No timestamp field.
    #[error(
        "the format has no timestamp (nginx: $time_local, $time_iso8601 or $msec; Apache: %t, %{{sec}}t, %{{msec}}t or %{{…strftime…}}t)"
    )]
    NoTime,
}

/// Which syntax a user format string was written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Syntax {
    /// nginx `log_format` (`$remote_addr …`).
    Nginx,
    /// Apache `LogFormat` (`%h %l …`).
    Apache,
}

/// A user's format string, compiled.
#[derive(Clone, Debug)]
pub struct CustomFormat {
    syntax: Syntax,
    source: String,
    prog: Arc<Program>,
}

impl CustomFormat {
    /// The syntax it was written in.
    pub fn syntax(&self) -> Syntax {
        self.syntax
    }

    /// The format string as given.
    pub fn source(&self) -> &str {
        &self.source
    }
}

impl PartialEq for CustomFormat {
    fn eq(&self, other: &Self) -> bool {
        self.syntax == other.syntax && self.source == other.source
    }
}

/// A log format.
#[derive(Clone, Debug, PartialEq)]
pub enum Format {
    /// `combined`: `%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i"` (Apache and
    /// nginx), extra trailing ` "…"` fields accepted and ignored.
    Combined,
    /// `common` (NCSA CLF): `%h %l %u %t "%r" %>s %b`.
    Common,
    /// `vhost-combined`: `%v[:%p] ` + combined (Debian's `vhost_combined`).
    VhostCombined,
    /// `vhost-common`: `%v[:%p] ` + common.
    VhostCommon,
    /// `combined-xff`: combined + ` "%{X-Forwarded-For}i"` (nginx
    /// `"$http_x_forwarded_for"`); further trailing quoted fields ignored.
    CombinedXff,
    /// `combined-rt`: nginx combined + ` $request_time` (seconds with a fraction).
    CombinedRt,
    /// `combined-us`: Apache combined + ` %D` (microseconds).
    CombinedUs,
    /// `nginx-msec`: `$remote_addr $msec [$time_local] "$request" $status
    /// $body_bytes_sent "$http_referer" "$http_user_agent" $request_time`; arrival =
    /// `$msec` − `$request_time`, millisecond precision.
    NginxMsec,
    /// `netnea`: the netnea.com Apache tutorial's "extended" format (ISO time with
    /// microseconds and no zone, `%D`, ModSecurity fields); see [`NETNEA_FORMAT`].
    Netnea,
    /// `caddy-json`: Caddy v2's JSON access log.
    CaddyJson,
    /// `w3c`: W3C extended (IIS, CloudFront), columns from `#Fields:`.
    W3c,
    /// `elb`: AWS Classic Load Balancer access log (HTTP/HTTPS listeners).
    Elb,
    /// `alb`: AWS Application Load Balancer access log; arrival =
    /// `request_creation_time`; fields AWS appends at the end are ignored.
    Alb,
    /// `ingress-nginx`: Kubernetes ingress-nginx's default `upstreaminfo`
    /// ([`INGRESS_NGINX_FORMAT`]; also [`INGRESS_NGINX_LEGACY_FORMAT`] lines).
    IngressNginx,
    /// `haproxy`: HAProxy's HTTP log (`option httplog`), syslog prefix optional.
    Haproxy,
    /// `traefik`: Traefik's CLF access log (combined + count, router, URL, duration).
    Traefik,
    /// `traefik-json`: Traefik's JSON access log.
    TraefikJson,
    /// `envoy`: Envoy's default access-log format.
    Envoy,
    /// `istio`: Istio's default proxy access log (Envoy's fields + upstream cluster,
    /// upstream/downstream addresses, SNI, route; [`ISTIO_FORMAT`] and older layouts).
    Istio,
    /// `haproxy-clf`: HAProxy's `option httplog clf` ([`HAPROXY_CLF_FORMAT`]).
    HaproxyClf,
    /// `envoy-json`: Envoy's JSON access logs keyed by Envoy Gateway's and Istio's
    /// default JSON field names (`start_time`, `response_code`, `:authority`, …).
    EnvoyJson,
    /// `nginx-json`: nginx `log_format … escape=json` lines keyed by variable names.
    NginxJson,
    /// `nginx-proxy-manager`: Nginx Proxy Manager's `proxy` and `standard` access logs
    /// (and its default-server layout, [`NPM_DEFAULT_HOST_FORMAT`]).
    NginxProxyManager,
    /// A log of another format inside the CRI container-log prefix that Kubernetes
    /// nodes write (`2024-01-01T00:00:00.123456789Z stdout F <line>`): the prefix is
    /// stripped and the line parsed as the inner format; named `cri:<inner>`.
    Cri(Box<Format>),
    /// A user's JSON-lines field map (`json:'ts=time,status=code,…'`, `--json-map`).
    Json(JsonMap),
    /// A user format string.
    Custom(CustomFormat),
}

/// Apache LogFormat of [`Format::Netnea`] (as the data has it, including `%X`).
pub const NETNEA_FORMAT: &str = r#"%h %{GEOIP_COUNTRY_CODE}e %u [%{%Y-%m-%d %H:%M:%S}t.%{usec_frac}t] "%r" %>s %b "%{Referer}i" "%{User-Agent}i" %v %A %p %R %{BALANCER_WORKER_ROUTE}e %X "%{cookie}n" %{UNIQUE_ID}e %{SSL_PROTOCOL}x %{SSL_CIPHER}x %I %O %{ratio}n%% %D %{ModSecTimeIn}e %{ApplicationTime}e %{ModSecTimeOut}e %{ModSecAnomalyScoreIn}e %{ModSecAnomalyScore}e"#;

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// `CLIENT IDENT USER [TIME] "REQUEST" STATUS BYTES`
fn clf_prefix(b: &mut Builder, completion: bool) {
    let f = |b: &mut Builder, k: FieldKind, t: &str| b.field(k, 0, t).expect("builtin");
    f(b, FieldKind::Client, "client");
    b.lit(b" ");
    f(b, FieldKind::Ident, "ident");
    b.lit(b" ");
    f(b, FieldKind::User, "user");
    b.lit(b" [");
    f(
        b,
        FieldKind::Time {
            kind: TimeKind::Clf,
            completion,
        },
        "time",
    );
    b.lit(b"] \"");
    f(b, FieldKind::Request, "request");
    b.lit(b"\" ");
    f(b, FieldKind::Status, "status");
    b.lit(b" ");
    f(b, FieldKind::Bytes, "bytes");
}

/// ` "REFERER" "USER_AGENT"`
fn combined_suffix(b: &mut Builder) {
    b.lit(b" \"");
    b.field(FieldKind::Referer, 0, "referer").expect("builtin");
    b.lit(b"\" \"");
    b.field(FieldKind::UserAgent, 0, "user_agent")
        .expect("builtin");
    b.lit(b"\"");
}

/// AWS Classic ELB / ALB layouts.
fn aws(b: &mut Builder, alb: bool) {
    let mut f = |k: FieldKind, sep: &[u8]| {
        b.field(k, 0, "").expect("builtin");
        b.lit(sep);
    };
    let iso = |completion| FieldKind::Time {
        kind: TimeKind::Iso,
        completion,
    };
    if alb {
        f(FieldKind::Ignore, b" "); // type
        f(FieldKind::Ignore, b" "); // time (response generated)
    } else {
        f(iso(false), b" "); // timestamp (request received)
    }
    f(FieldKind::Ignore, b" "); // elb
    f(FieldKind::ClientPort, b" ");
    f(FieldKind::Ignore, b" "); // backend:port
    f(FieldKind::Ignore, b" "); // request_processing_time
    f(FieldKind::ReqTime(RtUnit::SecsOrNeg), b" "); // backend/target_processing_time
    f(FieldKind::Ignore, b" "); // response_processing_time
    f(FieldKind::Status, b" "); // elb_status_code
    f(FieldKind::Ignore, b" "); // backend_status_code
    f(FieldKind::Ignore, b" "); // received_bytes
    f(FieldKind::Bytes, b" \""); // sent_bytes
    f(FieldKind::RequestAbs, b"\" \"");
    f(FieldKind::UserAgent, b"\" ");
    f(FieldKind::Ignore, b" "); // ssl_cipher
    if !alb {
        b.field(FieldKind::Ignore, 0, "").expect("builtin"); // ssl_protocol
        return;
    }
    f(FieldKind::Ignore, b" "); // ssl_protocol
    f(FieldKind::Ignore, b" \""); // target_group_arn
    f(FieldKind::Ignore, b"\" \""); // trace_id
    f(FieldKind::Host, b"\" \""); // domain_name (SNI)
    f(FieldKind::Ignore, b"\" "); // chosen_cert_arn
    f(FieldKind::Ignore, b" "); // matched_rule_priority
    b.field(iso(false), 0, "").expect("builtin"); // request_creation_time
}

impl Format {
    /// The format's name: `combined`, `caddy-json`, `nginx:'$remote_addr …'`, ….
    /// [`Format::from_name`] accepts it back.
    pub fn name(&self) -> String {
        match self {
            Format::Cri(inner) => format!("cri:{}", inner.name()),
            Format::Json(m) => format!("json:'{}'", m.source()),
            Format::Custom(c) => {
                let p = match c.syntax {
                    Syntax::Nginx => "nginx",
                    Syntax::Apache => "apache",
                };
                format!("{p}:'{}'", c.source)
            }
            f => f.row().expect("a built-in has a row").name.to_string(),
        }
    }

    /// All built-in formats (the candidates of [`detect`]).
    pub fn builtins() -> Vec<Format> {
        BUILTINS.to_vec()
    }

    /// Parses a `--format` value: a built-in name (`combined`, `common`, `vhost-combined`,
    /// `vhost-common`, `combined-xff`, `combined-rt`, `combined-us`, `nginx-msec`,
    /// `netnea`, `caddy-json`/`caddy`, `w3c`/`iis`, aliases `clf`, `ncsa`, …), or
    /// `nginx:<log_format>` / `apache:<LogFormat>` (optionally in single quotes).
    pub fn from_name(s: &str) -> Result<Format, FormatError> {
        let t = s.trim();
        if t.len() > 4 && t.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("cri:")) {
            return Ok(Format::Cri(Box::new(Format::from_name(&t[4..])?)));
        }
        if t.len() > 5 && t.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("json:")) {
            let body = &t[5..];
            let body = body
                .strip_prefix('\'')
                .and_then(|b| b.strip_suffix('\''))
                .unwrap_or(body);
            return Format::json_map(body);
        }
        for (prefix, nginx) in [("nginx:", true), ("apache:", false)] {
            if t.len() > prefix.len()
                && t.get(..prefix.len())
                    .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
            {
                let mut body = &t[prefix.len()..];
                if body.len() >= 2 && body.starts_with('\'') && body.ends_with('\'') && !nginx {
                    body = &body[1..body.len() - 1];
                }
                if nginx
                    && body.len() >= 2
                    && body.starts_with('\'')
                    && body.ends_with('\'')
                    && !body[1..body.len() - 1].contains('\'')
                {
                    body = &body[1..body.len() - 1];
                }
                return if nginx {
                    Format::nginx(body)
                } else {
                    Format::apache(body)
                };
            }
        }
        Format::builtin_named(&t.to_ascii_lowercase()).ok_or_else(|| FormatError::UnknownName {
            name: s.to_string(),
            known: Format::builtin_names(),
        })
    }

    /// A JSON-lines field map, e.g. `ts=time,client=remote_ip,status=code` (see
    /// [`JsonMap::parse`]).
    pub fn json_map(map: &str) -> Result<Format, FormatError> {
        Ok(Format::Json(JsonMap::parse(map)?))
    }

    /// Compiles an nginx `log_format` string, e.g. `$remote_addr - $remote_user
    /// [$time_local] "$request" $status $body_bytes_sent "$http_referer"
    /// "$http_user_agent" $request_time`. Also accepts the nginx.conf form
    /// (`log_format main '…' '…';`).
    pub fn nginx(log_format: &str) -> Result<Format, FormatError> {
        let prog = nginx::compile(log_format)?;
        Ok(Format::Custom(CustomFormat {
            syntax: Syntax::Nginx,
            source: log_format.trim().to_string(),
            prog: Arc::new(prog),
        }))
    }

    /// Compiles an Apache `LogFormat` string, e.g. `%h %l %u %t "%r" %>s %b
    /// "%{Referer}i" "%{User-Agent}i" %D`. Config escaping (`\"`) and a whole
    /// `LogFormat "…" nick` line are accepted.
    pub fn apache(log_format: &str) -> Result<Format, FormatError> {
        let prog = apache::compile(log_format)?;
        Ok(Format::Custom(CustomFormat {
            syntax: Syntax::Apache,
            source: log_format.trim().to_string(),
            prog: Arc::new(prog),
        }))
    }

    /// The compiled program of a text format (`None` for Caddy JSON and W3C).
    fn program(&self) -> Option<Arc<Program>> {
        let mut b = Builder::new();
        let trailing = match self {
            Format::Combined => {
                clf_prefix(&mut b, false);
                combined_suffix(&mut b);
                Trailing::Quoted
            }
            Format::Common => {
                clf_prefix(&mut b, false);
                Trailing::None
            }
            Format::VhostCombined | Format::VhostCommon => {
                b.field(FieldKind::HostPort, 0, "vhost").expect("builtin");
                b.lit(b" ");
                clf_prefix(&mut b, false);
                if *self == Format::VhostCombined {
                    combined_suffix(&mut b);
                    Trailing::Quoted
                } else {
                    Trailing::None
                }
            }
            Format::CombinedXff => {
                clf_prefix(&mut b, false);
                combined_suffix(&mut b);
                b.lit(b" \"");
                b.field(FieldKind::Xff, 0, "xff").expect("builtin");
                b.lit(b"\"");
                Trailing::Quoted
            }
            Format::CombinedRt | Format::CombinedUs => {
                let nginx = *self == Format::CombinedRt;
                clf_prefix(&mut b, nginx);
                combined_suffix(&mut b);
                b.lit(b" ");
                let unit = if nginx {
                    RtUnit::SecsFrac
                } else {
                    RtUnit::Micros
                };
                b.field(FieldKind::ReqTime(unit), 0, "request_time")
                    .expect("builtin");
                Trailing::None
            }
            Format::NginxMsec => {
                let f = |b: &mut Builder, k: FieldKind| b.field(k, 0, "").expect("builtin");
                f(&mut b, FieldKind::Client);
                b.lit(b" ");
                f(
                    &mut b,
                    FieldKind::Time {
                        kind: TimeKind::EpochSecs,
                        completion: true,
                    },
                );
                b.lit(b" [");
                f(
                    &mut b,
                    FieldKind::Time {
                        kind: TimeKind::Clf,
                        completion: true,
                    },
                );
                b.lit(b"] \"");
                f(&mut b, FieldKind::Request);
                b.lit(b"\" ");
                f(&mut b, FieldKind::Status);
                b.lit(b" ");
                f(&mut b, FieldKind::Bytes);
                combined_suffix(&mut b);
                b.lit(b" ");
                f(&mut b, FieldKind::ReqTime(RtUnit::SecsFrac));
                Trailing::None
            }
            Format::Netnea => {
                return Some(Arc::new(
                    apache::compile(NETNEA_FORMAT).expect("builtin netnea format"),
                ));
            }
            Format::Elb | Format::Alb => {
                aws(&mut b, *self == Format::Alb);
                if *self == Format::Alb {
                    Trailing::Any
                } else {
                    Trailing::None
                }
            }
            Format::IngressNginx => {
                return Some(Arc::new(
                    nginx::compile(INGRESS_NGINX_FORMAT).expect("builtin ingress-nginx format"),
                ));
            }
            Format::Traefik => {
                proxies::traefik(&mut b);
                Trailing::None
            }
            Format::Envoy => {
                proxies::envoy(&mut b);
                Trailing::None
            }
            Format::Haproxy
            | Format::HaproxyClf
            | Format::Istio
            | Format::TraefikJson
            | Format::NginxJson
            | Format::EnvoyJson
            | Format::NginxProxyManager
            | Format::Cri(_)
            | Format::Json(_) => {
                return None;
            }
            Format::CaddyJson | Format::W3c => return None,
            Format::Custom(c) => return Some(c.prog.clone()),
        };
        Some(Arc::new(b.finish(trailing).expect("builtin format")))
    }

    /// A fresh parser for this format.
    pub fn parser(&self, opts: &ParseOptions) -> Box<dyn LineParser> {
        match self {
            Format::CaddyJson => Box::new(caddy::CaddyParser::new()),
            Format::W3c => Box::new(w3c::W3cParser::new()),
            Format::IngressNginx => Box::new(proxies::IngressParser::new(
                self.program().expect("text format"),
                opts,
            )),
            Format::Haproxy => Box::new(haproxy::HaproxyParser::new(opts)),
            Format::HaproxyClf => Box::new(haproxy::HaproxyClfParser::new(opts)),
            Format::Istio => Box::new(proxies::IstioParser::new(opts, true)),
            // Envoy's text and JSON access logs fall back to each other line by line
            // (one proxy, both encodings in one log); an all-one file never pays.
            Format::Envoy => Box::new(proxies::Fallback(
                proxies::EnvoyParser(
                    TextParser::new(self.program().expect("text format"), opts),
                    Some(proxies::IstioParser::new(opts, false)),
                ),
                jsonlines::JsonParser::new(JsonMap::envoy(), opts),
            )),
            Format::EnvoyJson => Box::new(proxies::Fallback(
                jsonlines::JsonParser::new(JsonMap::envoy(), opts),
                proxies::EnvoyParser(
                    TextParser::new(Format::Envoy.program().expect("text format"), opts),
                    Some(proxies::IstioParser::new(opts, false)),
                ),
            )),
            Format::NginxProxyManager => Box::new(npm::NpmParser::new(opts)),
            Format::Cri(inner) => Box::new(cri::Cri(inner.parser(opts))),
            Format::NginxJson => Box::new(jsonlines::JsonParser::new(JsonMap::nginx(), opts)),
            Format::TraefikJson => Box::new(jsonlines::JsonParser::new(JsonMap::traefik(), opts)),
            Format::Json(m) => Box::new(jsonlines::JsonParser::new(m.clone(), opts)),
            Format::Elb | Format::Alb => Box::new(AwsParser(TextParser::new(
                self.program().expect("text format"),
                opts,
            ))),
            Format::Combined
            | Format::Common
            | Format::VhostCombined
            | Format::VhostCommon
            | Format::CombinedXff
            | Format::CombinedRt
            | Format::CombinedUs
            | Format::NginxMsec
            | Format::Netnea
            | Format::Traefik
            | Format::Custom(_) => {
                Box::new(TextParser::new(self.program().expect("text format"), opts))
            }
        }
    }

    /// A parser for [`detect`]: as [`Format::parser`], but Envoy and Istio without each
    /// other's layout, so that each file is named after what it mostly is.
    fn detect_parser(&self, opts: &ParseOptions) -> Box<dyn LineParser> {
        match self {
            Format::Envoy => Box::new(proxies::EnvoyParser(
                TextParser::new(self.program().expect("text format"), opts),
                None,
            )),
            Format::Istio => Box::new(proxies::IstioParser::new(opts, false)),
            Format::EnvoyJson => Box::new(jsonlines::JsonParser::new(JsonMap::envoy(), opts)),
            Format::Cri(inner) => Box::new(cri::Cri(inner.detect_parser(opts))),
            _ => self.parser(opts),
        }
    }

    /// Whether a parser carries state from line to line that a parallel reader cannot
    /// reconstruct (W3C's `#Fields:` columns): such formats must be parsed in order by
    /// one parser.
    pub fn is_stateful(&self) -> bool {
        match self {
            Format::Cri(inner) => inner.is_stateful(),
            f => matches!(f, Format::W3c),
        }
    }

    /// Whether every line carries a client field (Envoy's default format has none:
    /// its client comes from X-Forwarded-For, `-` when absent), so that a `-` client
    /// means a misreading in [`detect`].
    fn logs_client(&self) -> bool {
        match self {
            Format::Cri(inner) => inner.logs_client(),
            f => !matches!(f, Format::Envoy),
        }
    }

    /// Tie-break rank in detection: the more specific format wins.
    fn specificity(&self) -> u8 {
        match self {
            Format::Cri(inner) => inner.specificity(),
            Format::Custom(_) | Format::Json(_) => 8,
            f => f.row().expect("a built-in has a row").specificity,
        }
    }
}

/// Options for parsers.
#[derive(Clone, Debug, Default)]
pub struct ParseOptions {
    /// Offset east of UTC, in seconds, for timestamps written without a zone (netnea's
    /// `%{%Y-%m-%d %H:%M:%S}t`); 0 = UTC.
    pub default_offset_secs: i32,
}

/// Turns lines into records. One parser per thread; it may keep caches and scratch
/// buffers between lines.
pub trait LineParser: Send {
    /// Parses one line. `line` has no trailing `\n` and normally no trailing `\r`
    /// (a stray one is tolerated).
    fn parse<'a>(&'a mut self, line: &'a [u8]) -> Result<Record<'a>, ParseError>;
}

/// The result of [`detect`].
#[derive(Clone, Debug, PartialEq)]
pub struct Detection {
    /// The best format.
    pub format: Format,
    /// Sample lines it parsed.
    pub matched: usize,
    /// Sample lines considered (skipped lines — directives, blank lines — excluded).
    pub sampled: usize,
    /// `matched / sampled`.
    pub confidence: f64,
    /// Other formats that matched at least one line, with their counts, best first.
    pub alternatives: Vec<(Format, usize)>,
}

/// Detects a file's format from a sample of its first lines: every built-in format is
/// tried on every line; the one that parses the most lines wins, ties going to the more
/// specific format (combined over common, formats with timings over those without).
/// When no format parses any line as it is, a file of the CLF family that only the
/// per-line fallback layouts read (see [`Layered`]) is `combined`, with as many matched
/// lines as the fallback reads. `None` if nothing parses any line.
pub fn detect(sample: &[&[u8]]) -> Option<Detection> {
    // Container logs: when most lines carry the CRI prefix, the format is the inner
    // lines' format behind it.
    let cri = sample.iter().filter(|l| cri::strip(l).is_some()).count();
    if cri > 0 && cri * 2 > sample.len() {
        let inner: Vec<&[u8]> = sample.iter().map(|l| cri::strip(l).unwrap_or(l)).collect();
        let wrap = |f: Format| Format::Cri(Box::new(f));
        return detect_plain(&inner).map(|d| Detection {
            format: wrap(d.format),
            alternatives: d
                .alternatives
                .into_iter()
                .map(|(f, n)| (wrap(f), n))
                .collect(),
            ..d
        });
    }
    detect_plain(sample)
}

/// [`detect`] over lines without a wrapper.
fn detect_plain(sample: &[&[u8]]) -> Option<Detection> {
    let opts = ParseOptions::default();
    let mut results: Vec<(Format, usize, usize)> = Vec::new();
    for f in Format::builtins() {
        let mut p = f.detect_parser(&opts);
        let (mut ok, mut skip) = (0, 0);
        for line in sample {
            match p.parse(line) {
                // A reading whose client is `-` (a line read one field off, e.g. as
                // vhost-combined) does not count: it must never beat a real address.
                Ok(r) if r.client != b"-" || !f.logs_client() => ok += 1,
                Ok(_) => {}
                Err(e) if e.is_skip() => skip += 1,
                Err(_) => {}
            }
        }
        results.push((f, ok, skip));
    }
    results.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| b.0.specificity().cmp(&a.0.specificity()))
    });
    let (format, matched, skip) = results.first()?.clone();
    if matched == 0 {
        // No format recognises any line as it is: lines of the CLF family with
        // something the built-ins do not take (a virtual host and a tail, unquoted
        // extra fields, unquoted `-` for referer and user agent) are still read by
        // the fallback layouts the ingest tries line by line (`layouts`).
        let (matched, skip) = layouts::detect_family(sample);
        if matched == 0 {
            return None;
        }
        let sampled = sample.len() - skip;
        return Some(Detection {
            format: Format::Combined,
            matched,
            sampled,
            confidence: matched as f64 / sampled.max(1) as f64,
            alternatives: Vec::new(),
        });
    }
    let sampled = sample.len() - skip;
    Some(Detection {
        format,
        matched,
        sampled,
        confidence: matched as f64 / sampled.max(1) as f64,
        alternatives: results[1..]
            .iter()
            .filter(|r| r.1 > 0)
            .map(|r| (r.0.clone(), r.1))
            .collect(),
    })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proxy_tests;

/// AWS load-balancer logs: `#` comment lines and TCP-listener entries (request
/// `"- - - "`, no HTTP status) are not HTTP requests; they are skipped, neither records
/// nor bad lines.
struct AwsParser(TextParser);

impl LineParser for AwsParser {
    fn parse<'a>(&'a mut self, line: &'a [u8]) -> Result<Record<'a>, ParseError> {
        if line.first() == Some(&b'#') || memchr::memmem::find(line, b" \"- - - \" ").is_some() {
            return Err(ParseError::Directive);
        }
        self.0.parse(line)
    }
}

#[cfg(test)]
mod aws_tests {
    use super::*;

    #[test]
    fn elb_comments_and_tcp_entries_are_skipped_not_bad() {
        let mut p = Format::Elb.parser(&ParseOptions::default());
        assert_eq!(
            p.parse(b"# line below should be ignored").err(),
            Some(ParseError::Directive)
        );
        let tcp = b"2015-05-13T23:39:43.945958Z my-loadbalancer 192.168.131.39:2817 10.0.0.1:80 0.001069 0.000028 0.000041 - - 82 305 \"- - - \" \"-\" - -";
        assert_eq!(p.parse(tcp).err(), Some(ParseError::Directive));
        let http = b"2015-05-13T23:39:43.945958Z my-loadbalancer 1.2.3.4:2817 10.0.0.1:80 0.000086 0.001048 0.001337 200 200 0 57 \"GET https://www.example.com:443/path/index.html HTTP/1.1\" \"Mozilla/5.0\" DHE-RSA-AES128-SHA TLSv1.2";
        let r = p.parse(http).expect("an HTTP entry parses");
        assert_eq!(r.status, 200);
    }
}
