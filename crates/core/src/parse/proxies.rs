//! Text access logs of reverse proxies that run on the generic matcher: Kubernetes
//! ingress-nginx (`upstreaminfo`), Traefik's CLF and Envoy's default format.
//!
//! * **ingress-nginx**: [`INGRESS_NGINX_FORMAT`], compiled as an nginx `log_format`;
//!   the upstream fields (which may be lists, `10.0.0.1:80, 10.0.0.2:80`, or `-`) and
//!   `$request_length`/`$req_id` have no column and are dropped, so a list's spaces
//!   only shift text between dropped fields. Controllers before 0.24 logged
//!   [`INGRESS_NGINX_LEGACY_FORMAT`] (`- [$the_real_ip] -`, no alternative upstream);
//!   such lines are read too.
//! * **Traefik** CLF: combined + ` <count> "<router>" "<server URL>" <duration>ms`;
//!   the timestamp is the request's start; duration → request time; count, router and
//!   server URL dropped.
//! * **Envoy** default: `[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%
//!   %PROTOCOL%" %RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT%
//!   %DURATION% %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%"
//!   "%REQ(USER-AGENT)%" "%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%"`.
//!   It logs no client address: client = the first X-Forwarded-For address, else `-`;
//!   `xff` keeps the whole header, `:authority` → host, bytes = BYTES_SENT, request
//!   time = DURATION (ms). TCP-proxy entries (`"- - -" 0`) are skipped.

use super::program::{Builder, FieldKind, Program, TextParser, TimeKind};
use super::{LineParser, ParseError, ParseOptions, clf_prefix, combined_suffix};
use crate::parse::fields::{RtUnit, parse_ip};
use crate::record::Record;
use std::sync::Arc;

/// ingress-nginx's default `log-format-upstream` (controller 0.24 and later).
pub const INGRESS_NGINX_FORMAT: &str = r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_length $request_time [$proxy_upstream_name] [$proxy_alternative_upstream_name] $upstream_addr $upstream_response_length $upstream_response_time $upstream_status $req_id"#;

/// The default before controller 0.24 (the tail after `$upstream_addr` varied: with or
/// without `$req_id`; it is dropped).
pub const INGRESS_NGINX_LEGACY_FORMAT: &str = r#"$remote_addr - [$the_real_ip] - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_length $request_time [$proxy_upstream_name] $upstream_addr"#;

/// ingress-nginx lines: the current layout, else the legacy one.
pub(crate) struct IngressParser {
    current: TextParser,
    legacy: TextParser,
}

impl IngressParser {
    pub(crate) fn new(current: Arc<Program>, opts: &ParseOptions) -> IngressParser {
        let legacy = super::nginx::compile(INGRESS_NGINX_LEGACY_FORMAT).expect("builtin format");
        IngressParser {
            current: TextParser::new(current, opts),
            legacy: TextParser::new(Arc::new(legacy), opts),
        }
    }
}

impl LineParser for IngressParser {
    fn parse<'a>(&'a mut self, line: &'a [u8]) -> Result<Record<'a>, ParseError> {
        let IngressParser { current, legacy } = self;
        match current.parse(line) {
            Ok(r) => Ok(r),
            Err(e) if e.is_skip() => Err(e),
            Err(e) => legacy.parse(line).map_err(|_| e),
        }
    }
}

/// Traefik CLF after the combined prefix: ` <count> "<router>" "<url>" <ms>ms`.
pub(crate) fn traefik(b: &mut Builder) {
    clf_prefix(b, false);
    combined_suffix(b);
    b.lit(b" ");
    let mut f = |k: FieldKind, sep: &[u8]| {
        b.field(k, 0, "").expect("builtin");
        b.lit(sep);
    };
    f(FieldKind::Ignore, b" \""); // requests since start
    f(FieldKind::Ignore, b"\" \""); // router
    f(FieldKind::Ignore, b"\" "); // server URL
    f(FieldKind::ReqTime(RtUnit::Millis), b"ms");
}

/// Envoy's default access-log format.
pub(crate) fn envoy(b: &mut Builder) {
    b.lit(b"[");
    let mut f = |k: FieldKind, sep: &[u8]| {
        b.field(k, 0, "").expect("builtin");
        b.lit(sep);
    };
    f(
        FieldKind::Time {
            kind: TimeKind::Iso,
            completion: false,
        },
        b"] \"",
    );
    f(FieldKind::Request, b"\" ");
    f(FieldKind::Status, b" ");
    f(FieldKind::Ignore, b" "); // RESPONSE_FLAGS
    f(FieldKind::Ignore, b" "); // BYTES_RECEIVED
    f(FieldKind::Bytes, b" "); // BYTES_SENT
    f(FieldKind::ReqTime(RtUnit::Millis), b" "); // DURATION
    f(FieldKind::Ignore, b" \""); // X-ENVOY-UPSTREAM-SERVICE-TIME
    f(FieldKind::Xff, b"\" \"");
    f(FieldKind::UserAgent, b"\" \"");
    f(FieldKind::Ignore, b"\" \""); // X-REQUEST-ID
    f(FieldKind::Host, b"\" \""); // :AUTHORITY
    f(FieldKind::Ignore, b"\""); // UPSTREAM_HOST
}

/// Envoy lines: the client from X-Forwarded-For; TCP entries skipped. A line that
/// does not fit Envoy's default is tried as Istio's (the same proxy, more fields), so a
/// file that mixes both keeps every line; an all-Envoy file never pays for it.
/// (Detection uses each strictly, without the other's layout: `None` / `mixed: false`.)
pub(crate) struct EnvoyParser(pub(crate) TextParser, pub(crate) Option<IstioParser>);

impl LineParser for EnvoyParser {
    fn parse<'a>(&'a mut self, line: &'a [u8]) -> Result<Record<'a>, ParseError> {
        if memchr::memmem::find(line, b"] \"- - -\" 0 ").is_some() {
            return Err(ParseError::Directive);
        }
        let EnvoyParser(envoy, istio) = self;
        let mut rec = match envoy.parse(line) {
            Ok(r) => r,
            Err(e) if e.is_skip() => return Err(e),
            Err(e) => {
                return match istio {
                    Some(i) => i.istio(line).map_err(|_| e),
                    None => Err(e),
                };
            }
        };
        let first = rec
            .xff
            .map(|x| {
                let end = memchr::memchr(b',', x).unwrap_or(x.len());
                let c = x[..end].trim_ascii();
                // `[v6]` as Envoy logs a bracketed address.
                match c.strip_prefix(b"[").and_then(|c| c.strip_suffix(b"]")) {
                    Some(inner) if parse_ip(inner).is_some() => inner,
                    _ => c,
                }
            })
            .filter(|c| !c.is_empty());
        rec.client = first.unwrap_or(b"-");
        rec.ip = parse_ip(rec.client);
        Ok(rec)
    }
}

/// Two layouts of one proxy in one log (Envoy's text and JSON access logs): a line the
/// first does not parse is tried with the second; the first's error is kept when
/// neither parses. A file all in the first layout never pays for the second.
pub(crate) struct Fallback<A, B>(pub(crate) A, pub(crate) B);

impl<A: LineParser, B: LineParser> LineParser for Fallback<A, B> {
    fn parse<'a>(&'a mut self, line: &'a [u8]) -> Result<Record<'a>, ParseError> {
        let Fallback(first, second) = self;
        match first.parse(line) {
            Ok(r) => Ok(r),
            Err(e) if e.is_skip() => Err(e),
            Err(e) => match second.parse(line) {
                Ok(r) => Ok(r),
                Err(e2) if e2.is_skip() => Err(e2),
                Err(_) => Err(e),
            },
        }
    }
}

/// Istio's default proxy access log (text encoding) since Istio 1.9. Older releases
/// logged the same fields with `"%DYNAMIC_METADATA(istio.mixer:status)%"` in place of
/// the response-code and termination details (1.3–1.8), also without
/// `"%UPSTREAM_TRANSPORT_FAILURE_REASON%"` (1.1–1.2), and without `%ROUTE_NAME%`
/// (before 1.9); the Istio parser reads all of them.
pub const ISTIO_FORMAT: &str = r#"[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %CONNECTION_TERMINATION_DETAILS% "%UPSTREAM_TRANSPORT_FAILURE_REASON%" %BYTES_RECEIVED% %BYTES_SENT% %DURATION% %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%" "%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%" %UPSTREAM_CLUSTER% %UPSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_REMOTE_ADDRESS% %REQUESTED_SERVER_NAME% %ROUTE_NAME%"#;

/// Most space-separated fields an Istio line has after the request (23 in the 1.9+
/// layout); a few spare for details that contain spaces.
const ISTIO_MAX_TOKENS: usize = 32;

/// Istio's proxy log: Envoy's default fields, then upstream cluster, upstream local,
/// downstream local and downstream remote addresses, SNI and (1.9+) the route name.
/// Mapping: arrival = `START_TIME`; client = the first X-Forwarded-For address, else
/// `DOWNSTREAM_REMOTE_ADDRESS` without its port; `xff` = the header; host =
/// `:authority`; bytes = `BYTES_SENT`; request time = `DURATION` (ms); status `0`
/// (no response sent) is kept as 0. TCP entries (`"- - -"`) are skipped. Upstream
/// cluster and addresses, flags, details and the request id have no column.
pub(crate) struct IstioParser {
    default_offset: i32,
    /// Envoy's default layout, for lines of a mixed file (built on first need).
    envoy: Option<Box<EnvoyParser>>,
    opts: ParseOptions,
    /// Whether Envoy's default layout is tried for a line that is not Istio's.
    mixed: bool,
}

impl IstioParser {
    pub(crate) fn new(opts: &ParseOptions, mixed: bool) -> IstioParser {
        IstioParser {
            default_offset: opts.default_offset_secs,
            envoy: None,
            opts: opts.clone(),
            mixed,
        }
    }
}

/// A field of an Istio line's tail: its text (quotes removed) and whether it was quoted.
#[derive(Clone, Copy, Default)]
struct Tok<'a> {
    text: &'a [u8],
    quoted: bool,
}

/// Splits `s` into space-separated fields, a `"…"` field running to the `"` that is
/// followed by a space or the end. `None` when there are more than `out.len()`.
fn istio_tokens<'a>(mut s: &'a [u8], out: &mut [Tok<'a>; ISTIO_MAX_TOKENS]) -> Option<usize> {
    let mut n = 0;
    while !s.is_empty() {
        if n == out.len() {
            return None;
        }
        if s[0] == b'"' {
            let body = &s[1..];
            let mut from = 0;
            let end = loop {
                let i = from + memchr::memchr(b'"', &body[from..])?;
                if i + 1 == body.len() || body[i + 1] == b' ' {
                    break i;
                }
                from = i + 1;
            };
            out[n] = Tok {
                text: &body[..end],
                quoted: true,
            };
            s = body.get(end + 2..).unwrap_or_default();
        } else {
            let end = memchr::memchr(b' ', s).unwrap_or(s.len());
            out[n] = Tok {
                text: &s[..end],
                quoted: false,
            };
            s = s.get(end + 1..).unwrap_or_default();
        }
        n += 1;
    }
    Some(n)
}

impl LineParser for IstioParser {
    /// An Istio line, else (a mixed file) Envoy's default.
    fn parse<'a>(&'a mut self, line: &'a [u8]) -> Result<Record<'a>, ParseError> {
        match self.istio(line) {
            Err(e) if self.mixed && !e.is_skip() && line.first() == Some(&b'[') => {
                let opts = &self.opts;
                let envoy = self.envoy.get_or_insert_with(|| {
                    Box::new(EnvoyParser(
                        TextParser::new(super::Format::Envoy.program().expect("text"), opts),
                        None,
                    ))
                });
                envoy.parse(line).map_err(|_| e)
            }
            r => r,
        }
    }
}

impl IstioParser {
    /// An Istio line only.
    pub(crate) fn istio<'a>(&mut self, line: &'a [u8]) -> Result<Record<'a>, ParseError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.trim_ascii().is_empty() {
            return Err(ParseError::Empty);
        }
        let rest = line.strip_prefix(b"[").ok_or(ParseError::Mismatch)?;
        let rb = memchr::memchr(b']', rest).ok_or(ParseError::Truncated)?;
        let t = crate::time::parse_iso8601(&rest[..rb]).ok_or(ParseError::BadTimestamp)?;
        let rest = rest[rb + 1..]
            .strip_prefix(b" \"")
            .ok_or(ParseError::Mismatch)?;
        let q = super::fields::find_quote(rest).ok_or(ParseError::UnterminatedQuote)?;
        let request = &rest[..q];
        let tail = rest[q + 1..]
            .strip_prefix(b" ")
            .ok_or(ParseError::Truncated)?;
        let mut toks = [Tok::default(); ISTIO_MAX_TOKENS];
        let n = istio_tokens(tail, &mut toks).ok_or(ParseError::TrailingData)?;
        let toks = &toks[..n];
        // From the end: 5 or 6 unquoted fields (cluster … SNI [route]) after the five
        // quoted ones (XFF, UA, request id, authority, upstream host).
        let h = toks
            .iter()
            .rposition(|t| t.quoted)
            .ok_or(ParseError::Mismatch)?;
        let after = n - 1 - h;
        if !(5..=6).contains(&after) || h < 10 {
            return Err(ParseError::Mismatch);
        }
        let quoted5 = &toks[h - 4..=h];
        let nums = &toks[h - 8..h - 4];
        if quoted5.iter().any(|t| !t.quoted) || nums.iter().any(|t| t.quoted) {
            return Err(ParseError::Mismatch);
        }
        if request == b"- - -" {
            return Err(ParseError::Directive); // a TCP connection, not an HTTP request
        }
        let status = match toks[0].text {
            b"0" => 0,
            s => super::fields::parse_status(s).ok_or(ParseError::BadStatus)?,
        };
        let num = |t: &[u8], e: ParseError| match t {
            b"-" => Ok(None),
            v => crate::time::parse_uint(v).map(Some).ok_or(e),
        };
        let bytes = num(nums[1].text, ParseError::BadBytes)?;
        let request_time_us = match num(nums[2].text, ParseError::BadRequestTime)? {
            Some(ms) => Some(
                ms.checked_mul(1000)
                    .filter(|us| *us <= crate::time::MAX_REQUEST_TIME_US)
                    .ok_or(ParseError::BadRequestTime)?,
            ),
            None => None,
        };
        let us = t.utc_us(self.default_offset) as i128;
        let mut rec = Record {
            ts_ms: crate::time::arrival_ms(us).ok_or(ParseError::TimestampOutOfRange)?,
            precision: crate::record::Precision::from_digits(t.frac_digits),
            status,
            bytes,
            request_time_us,
            ..Record::default()
        };
        super::fields::split_request(request, &mut rec);
        let xff = super::fields::dash_none(quoted5[0].text);
        rec.xff = xff;
        rec.user_agent = super::fields::dash_only(quoted5[1].text);
        rec.host = super::fields::dash_none(quoted5[3].text);
        let first_xff = xff
            .map(|x| x[..memchr::memchr(b',', x).unwrap_or(x.len())].trim_ascii())
            .filter(|c| !c.is_empty());
        let remote = super::fields::dash_none(toks[h + 4].text).map(super::fields::strip_port);
        rec.client = first_xff.or(remote).unwrap_or(b"-");
        rec.ip = parse_ip(rec.client);
        Ok(rec)
    }
}
