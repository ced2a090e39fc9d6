//! What a breakdown is by ([`TopBy`]) and in which order its rows go ([`TopSort`]).

use serde::Serialize;

use crate::batch::{Batch, TextColumn};

/// What `logscope top` breaks the requests down by (`--by`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum TopBy {
    /// The path, without the query string.
    Path,
    /// The status code.
    Status,
    /// The Referer header as logged.
    Referer,
    /// The User-Agent header as logged (`logscope agents` for classes).
    Agent,
    /// The client address (the real client behind --trust-proxy).
    Ip,
    /// The client's network (/24 and /48; --prefix-v4/--prefix-v6).
    Prefix,
    /// The Host header (virtual host).
    Host,
    /// The request method.
    Method,
}

impl TopBy {
    /// The name on the command line and in JSON (`path`).
    pub fn name(self) -> &'static str {
        match self {
            TopBy::Path => "path",
            TopBy::Status => "status",
            TopBy::Referer => "referer",
            TopBy::Agent => "agent",
            TopBy::Ip => "ip",
            TopBy::Prefix => "prefix",
            TopBy::Host => "host",
            TopBy::Method => "method",
        }
    }

    /// The plural for titles (`paths`).
    pub fn plural(self) -> &'static str {
        match self {
            TopBy::Path => "paths",
            TopBy::Status => "statuses",
            TopBy::Referer => "referers",
            TopBy::Agent => "user agents",
            TopBy::Ip => "addresses",
            TopBy::Prefix => "networks",
            TopBy::Host => "hosts",
            TopBy::Method => "methods",
        }
    }

    /// The column header of the value (`user agent`).
    pub fn header(self) -> &'static str {
        match self {
            TopBy::Agent => "user agent",
            TopBy::Ip => "address",
            other => other.name(),
        }
    }

    pub(super) fn text_column(self, b: &Batch) -> Option<&TextColumn> {
        match self {
            TopBy::Path => Some(&b.path),
            TopBy::Referer => Some(&b.referer),
            TopBy::Agent => Some(&b.user_agent),
            TopBy::Host => Some(&b.host),
            TopBy::Method => Some(&b.method),
            TopBy::Status | TopBy::Ip | TopBy::Prefix => None,
        }
    }

    /// Whether the per-value distinct client count means anything (not per address).
    pub fn counts_clients(self) -> bool {
        self != TopBy::Ip
    }
}

/// The order of the rows (`--sort`): the largest first, ties by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum TopSort {
    /// Most requests first.
    Requests,
    /// Most body bytes first (bandwidth).
    Bytes,
    /// Most distinct clients first.
    Clients,
    /// Most requests with status ≥ 400 first.
    Errors,
}

impl TopSort {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            TopSort::Requests => "requests",
            TopSort::Bytes => "bytes",
            TopSort::Clients => "clients",
            TopSort::Errors => "errors",
        }
    }
}
