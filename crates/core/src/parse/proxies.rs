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

/// Envoy lines: the client from X-Forwarded-For; TCP entries skipped.
pub(crate) struct EnvoyParser(pub(crate) TextParser);

impl LineParser for EnvoyParser {
    fn parse<'a>(&'a mut self, line: &'a [u8]) -> Result<Record<'a>, ParseError> {
        if memchr::memmem::find(line, b"] \"- - -\" 0 ").is_some() {
            return Err(ParseError::Directive);
        }
        let mut rec = self.0.parse(line)?;
        let first = rec
            .xff
            .map(|x| {
                let end = memchr::memchr(b',', x).unwrap_or(x.len());
                x[..end].trim_ascii()
            })
            .filter(|c| !c.is_empty());
        rec.client = first.unwrap_or(b"-");
        rec.ip = parse_ip(rec.client);
        Ok(rec)
    }
}
