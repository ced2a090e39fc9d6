//! What a read of a Caddyfile carries along: Caddy's handler order, the notes, the zones.

use super::super::nginx::Note;
use super::cond::Cond;
use crate::rate::Rate;
use crate::replay::key::KeySpec;

/// Caddy's default directive order (httpcaddyfile directives.go, v2.8 and later), with
/// `rate_limit` where the module registers it (before `basic_auth`).
pub(super) const ORDER: &[&str] = &[
    "tracing",
    "map",
    "vars",
    "fs",
    "root",
    "log_append",
    "skip_log",
    "log_skip",
    "log_name",
    "header",
    "copy_response_headers",
    "request_body",
    "redir",
    "method",
    "rewrite",
    "uri",
    "try_files",
    "rate_limit",
    "basicauth",
    "basic_auth",
    "forward_auth",
    "request_header",
    "encode",
    "push",
    "intercept",
    "templates",
    "invoke",
    "handle",
    "handle_path",
    "route",
    "abort",
    "error",
    "copy_response",
    "respond",
    "metrics",
    "reverse_proxy",
    "php_fastcgi",
    "file_server",
    "acme_server",
];

/// Directives that end the request for what they match.
pub(super) const TERMINAL: &[&str] = &[
    "redir",
    "abort",
    "error",
    "copy_response",
    "respond",
    "metrics",
    "reverse_proxy",
    "php_fastcgi",
    "file_server",
    "acme_server",
    "static_response",
];

/// Directives that neither end a request nor change what a zone matches.
pub(super) const NEUTRAL: &[&str] = &[
    "tracing",
    "fs",
    "root",
    "log_append",
    "skip_log",
    "log_skip",
    "log_name",
    "header",
    "copy_response_headers",
    "request_body",
    "encode",
    "push",
    "intercept",
    "templates",
    "tls",
    "log",
    "bind",
    "handle_errors",
];

/// Site-level items that are not handlers.
pub(super) const NOT_HANDLERS: &[&str] = &["tls", "log", "bind", "handle_errors"];

pub(super) struct Reader {
    pub(super) notes: Vec<Note>,
    pub(super) once: Vec<&'static str>,
    pub(super) order: Vec<String>,
    pub(super) pending: Vec<Note>,
    pub(super) zones: Vec<ZoneOut>,
    pub(super) handlers: usize,
    pub(super) distributed: Vec<String>,
}

pub(super) struct ZoneOut {
    pub(super) name: String,
    pub(super) rate: Rate,
    pub(super) key: KeySpec,
    pub(super) cond: Cond,
    pub(super) at: String,
}

impl Reader {
    pub(super) fn note_once(&mut self, what: &'static str, n: Note) {
        if !self.once.contains(&what) {
            self.once.push(what);
            self.notes.push(n);
        }
    }

    pub(super) fn rank(&self, d: &str) -> usize {
        self.order
            .iter()
            .position(|o| o == d)
            .unwrap_or(self.order.len())
    }
}
