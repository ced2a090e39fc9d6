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
    /// The operating system the User-Agent claims (woothee: `Windows 10`, `Mac OSX`,
    /// `Android`, `iPhone`, …; `(crawler)` for bots, `(unknown)`).
    Os,
    /// The referring site: the host (and port) of the Referer URL (`www.google.com`); null
    /// without a Referer.
    Site,
    /// Static files (images, scripts, styles, fonts, …) or dynamic requests: the same
    /// test as the heavy default.
    Kind,
    /// The hour of the day on the --tz clock (`00` … `23`), in clock order.
    Hour,
    /// The country of the client address in the --asn-db database (`DE Germany`);
    /// null (`(unknown)`) where it has none or the client is a host name.
    Country,
    /// The autonomous system announcing the client address in the --asn-db database
    /// (`AS64496 EXAMPLE-HOSTING`); null (`(unknown)`) where it has none.
    Asn,
    /// The day on the --tz clock (`2026-09-25`), every day in date order; its clients
    /// are GoAccess's unique visitors: distinct address and User-Agent that day.
    Day,
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
            TopBy::Os => "os",
            TopBy::Site => "site",
            TopBy::Kind => "kind",
            TopBy::Hour => "hour",
            TopBy::Day => "day",
            TopBy::Country => "country",
            TopBy::Asn => "asn",
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
            TopBy::Os => "operating systems",
            TopBy::Site => "referring sites",
            TopBy::Kind => "kinds",
            TopBy::Hour => "hours of the day",
            TopBy::Day => "days",
            TopBy::Country => "countries",
            TopBy::Asn => "autonomous systems",
        }
    }

    /// The column header of the value (`user agent`).
    pub fn header(self) -> &'static str {
        match self {
            TopBy::Agent => "user agent",
            TopBy::Ip => "address",
            TopBy::Os => "operating system",
            TopBy::Site => "referring site",
            TopBy::Hour => "hour of day",
            other => other.name(),
        }
    }

    pub(super) fn text_column(self, b: &Batch) -> Option<&TextColumn> {
        match self {
            TopBy::Path | TopBy::Kind => Some(&b.path),
            TopBy::Referer | TopBy::Site => Some(&b.referer),
            TopBy::Agent | TopBy::Os => Some(&b.user_agent),
            TopBy::Host => Some(&b.host),
            TopBy::Method => Some(&b.method),
            TopBy::Status
            | TopBy::Ip
            | TopBy::Prefix
            | TopBy::Hour
            | TopBy::Day
            | TopBy::Country
            | TopBy::Asn => None,
        }
    }

    /// Whether its values are derived from another column's, each distinct one once
    /// when the breakdown is finished (the operating system from the User-Agent, the
    /// site from the Referer, the kind from the path).
    pub fn is_derived(self) -> bool {
        matches!(self, TopBy::Os | TopBy::Site | TopBy::Kind)
    }

    /// Whether its values are the arrival's on the report's clock (the hour of the
    /// day, the day): all of them, in clock order.
    pub fn is_clock(self) -> bool {
        matches!(self, TopBy::Hour | TopBy::Day)
    }

    /// Whether its values are the client's network in the --asn-db database (country,
    /// autonomous system), looked up once per distinct client.
    pub fn is_network(self) -> bool {
        matches!(self, TopBy::Country | TopBy::Asn)
    }

    /// How the rows without a value are shown: `(unknown)` for a country, `(none)`.
    pub fn null_label(self) -> &'static str {
        if self.is_network() {
            "(unknown)"
        } else {
            "(none)"
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
