//! The typed result of `logscope top`: rows, the rest, a breakdown, the report.

use serde::Serialize;

use super::by::{TopBy, TopSort};

/// One value of a breakdown.
#[derive(Clone, Debug, Serialize)]
pub struct TopRow {
    /// 1 for the first row.
    pub rank: u64,
    /// The value (`null`: the request had none, e.g. no Referer).
    pub value: Option<String>,
    /// Requests.
    pub requests: u64,
    /// Share of all selected requests (0–1).
    pub share: f64,
    /// Body bytes sent.
    pub bytes: u64,
    /// Share of all body bytes (0–1).
    pub bytes_share: f64,
    /// Distinct clients (1 per address for `--by ip`).
    pub clients: u64,
    /// Whether `clients` is a HyperLogLog estimate (more than [`EXACT_CLIENTS`](super::EXACT_CLIENTS)).
    pub clients_estimated: bool,
    /// Requests with status ≥ 400.
    pub errors: u64,
    /// `errors` over `requests` (0–1).
    pub error_share: f64,
    /// First request, RFC 3339 in the report's zone.
    pub first_seen: String,
    /// Last request, RFC 3339 in the report's zone.
    pub last_seen: String,
    /// First request on the report's clock (ms), for tables.
    #[serde(skip)]
    pub first_local_ms: i64,
    /// Last request on the report's clock (ms), for tables.
    #[serde(skip)]
    pub last_local_ms: i64,
}

/// The values after the listed ones, added up.
#[derive(Clone, Debug, Serialize)]
pub struct TopRest {
    /// How many values.
    pub values: u64,
    /// Their requests.
    pub requests: u64,
    /// Share of all selected requests (0–1).
    pub share: f64,
    /// Their body bytes.
    pub bytes: u64,
    /// Their requests with status ≥ 400.
    pub errors: u64,
}

/// A finished breakdown.
#[derive(Clone, Debug, Serialize)]
pub struct Breakdown {
    /// What it is by.
    pub by: TopBy,
    /// The order of the rows.
    pub sort: TopSort,
    /// Distinct values seen.
    pub distinct_values: u64,
    /// The listed values, in order.
    pub rows: Vec<TopRow>,
    /// The others (absent when every value is listed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rest: Option<TopRest>,
}

/// The result of `logscope top`.
#[derive(Clone, Debug, Serialize)]
pub struct TopReport {
    /// Where the rows came from.
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub origin: String,
    /// The filter, described.
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub selection: String,
    /// The clock of the times.
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub zone: String,
    /// Selected requests.
    pub requests: u64,
    /// Their body bytes.
    pub bytes: u64,
    /// Their requests with status ≥ 400.
    pub errors: u64,
    /// `errors` over `requests`.
    pub error_share: f64,
    /// Distinct clients of all selected requests.
    pub clients: u64,
    /// Whether `clients` is an estimate.
    pub clients_estimated: bool,
    /// First selected request, RFC 3339 in the report's zone.
    pub first_seen: Option<String>,
    /// Last selected request.
    pub last_seen: Option<String>,
    /// A request counts as an error at or above this status.
    pub error_status: u16,
    /// Clients are counted exactly up to this many per value, then estimated.
    pub exact_clients_up_to: usize,
    /// The breakdown.
    #[serde(flatten)]
    pub breakdown: Breakdown,
}
