//! The replay report as a typed result: what `--format json` serializes and the
//! renderings read. Field names are the JSON's.

use serde::Serialize;

use super::rows::Who;
use crate::rate::Rate;

/// The replay report (`--format json` serializes this).
#[derive(Clone, Debug, Serialize)]
pub struct ReplayReport {
    /// Where the rows came from.
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub origin: String,
    /// The selection (filters, period).
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub selection: String,
    /// The report's time zone.
    /// (In the JSON envelope, not in the result.)
    #[serde(skip)]
    pub tz: String,
    /// Records read.
    pub records: u64,
    /// Requests replayed (selected, in decision-time order).
    pub requests: u64,
    /// First decision time.
    pub first: Option<String>,
    /// Last decision time.
    pub last: Option<String>,
    /// Requests whose log stamps whole seconds (decisions are then approximate).
    pub second_resolution: u64,
    /// Requests a deployed limiter already refused (status in `statuses`).
    pub logged_refusals: LoggedRefusals,
    /// The capacity, if given.
    pub capacity: Option<Rate>,
    /// Bucket width of `over_time`, ms.
    pub bucket_ms: i64,
    /// What marks a request internal (exemptions and `--internal`), if anything.
    pub internal: Option<String>,
    /// Selected requests per class.
    pub classes: Vec<ClassTotal>,
    /// One entry per candidate, in command-line order.
    pub candidates: Vec<CandidateReport>,
    /// Per bucket with requests: requests and, per candidate, covered / refused /
    /// passed.
    pub over_time: Vec<TimeRow>,
    /// Runs of buckets without a request between the first and the last bucket of
    /// `over_time`, in time order (absent from JSON when there is none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<TimeGap>,
    /// Warnings (approximate timestamps, identified users or internal services refused).
    pub warnings: Vec<String>,
    /// `--servers N`: what a fleet of servers with their own counters would have done,
    /// against one shared counter (absent from JSON without `--servers`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetReport>,
    /// `--workers C`: the queue replay's settings, the baseline `none` (every request
    /// admitted) and the waiting-factor table (absent from JSON without `--workers`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<super::Waiting>,
    /// `--sweep`: the trade-off over its candidates and the limit it names (absent from
    /// JSON without `--sweep`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<crate::replay::sweep::SweepReport>,
}

/// Requests already refused in the log.
#[derive(Clone, Debug, Serialize)]
pub struct LoggedRefusals {
    /// The statuses that count as refusals.
    pub statuses: Vec<u16>,
    /// How many were replayed.
    pub replayed: u64,
    /// How many were left out (`--drop-logged-refusals`).
    pub dropped: u64,
}

/// Selected requests of one class.
#[derive(Clone, Debug, Serialize)]
pub struct ClassTotal {
    /// The class.
    pub class: Who,
    /// Its name in reports.
    pub name: &'static str,
    /// Selected requests.
    pub requests: u64,
}

/// The `Retry-After` refused clients would have been told (whole seconds, as HTTP
/// says it), over the refused requests.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RetryAfter {
    /// Refused requests told a time.
    pub refused: u64,
    /// Median, s.
    pub p50_s: u64,
    /// 95th percentile, s.
    pub p95_s: u64,
    /// Longest, s.
    pub max_s: u64,
    /// Refused requests that could never pass (a ban for ever, a cost above the limit).
    pub never: u64,
}

/// What one candidate did.
#[derive(Clone, Debug, Serialize)]
pub struct CandidateReport {
    /// Column label in tables (`A`, `B`, …).
    pub label: String,
    /// The candidate's name (its spec, `name=`, or the config's name).
    pub name: String,
    /// The candidate in words: scope, algorithm, key, cost (zones and rules of a config).
    pub description: String,
    /// How several limits combine (`nginx` or `caddy`).
    pub dialect: &'static str,
    /// Requests fed.
    pub requests: u64,
    /// Requests a rule covered (in scope + exempt).
    pub covered: u64,
    /// Requests limited (admitted + delayed + refused).
    pub in_scope: u64,
    /// Passed at once.
    pub admitted: u64,
    /// Passed after a delay.
    pub delayed: u64,
    /// Refused.
    pub refused: u64,
    /// Passed but challenged (ban policies' `challenge=`).
    pub challenged: u64,
    /// Covered but exempt.
    pub exempt: u64,
    /// What the refused clients would have been told to wait (`Retry-After`, from the
    /// deciding zone's state); absent without refusals.
    pub retry_after: Option<RetryAfter>,
    /// Judged although they named exempt credentials: the server refused those
    /// credentials (a status in the exemption's credential refusals, 401/403/407).
    pub credentials_refused: u64,
    /// Not covered.
    pub out_of_scope: u64,
    /// `admitted / in_scope`.
    pub admitted_share: f64,
    /// `delayed / in_scope`.
    pub delayed_share: f64,
    /// `refused / in_scope`.
    pub refused_share: f64,
    /// Longest delay, ms.
    pub delay_ms_max: u32,
    /// Mean delay of the delayed requests, ms.
    pub delay_ms_mean: f64,
    /// nginx zones: decisions on a 1 ms boundary (a replay may differ from the server).
    pub boundary: u64,
    /// First refusal.
    pub first_refusal: Option<String>,
    /// Last refusal.
    pub last_refusal: Option<String>,
    /// What the candidate did with requests the log shows as refused already.
    pub logged_refusals: LoggedFate,
    /// The passed load against the capacity.
    pub load: Option<Load>,
    /// Per class: covered, exempt, refused, delayed.
    pub classes: Vec<ClassRow>,
    /// The most refused networks, addresses and agents.
    pub top_refused: TopRefused,
    /// Per rule (location, Caddy zone matcher).
    pub rules: Vec<RuleRow>,
    /// Per zone.
    pub zones: Vec<ZoneRow>,
    /// Ban policies: who was banned, when, for how long, what they lost (absent from
    /// JSON for other candidates).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bans: Option<BanSummary>,
    /// Warnings about this candidate.
    pub warnings: Vec<String>,
    /// `--workers C`: the waits of the requests it admits, in all and per class (absent
    /// from JSON without `--workers`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait: Option<super::Wait>,
}

/// What a ban candidate's bans did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct BanSummary {
    /// What counts toward a ban, in words (for a fail2ban jail: its failregex on the
    /// rebuilt line).
    pub counted_by: String,
    /// Requests that counted.
    pub counted: u64,
    /// Bans started.
    pub bans: u64,
    /// Distinct keys banned.
    pub banned_keys: u64,
    /// Requests refused because their key was banned.
    pub lost: u64,
    /// Requests challenged.
    pub challenged: u64,
    /// Bans whose triggering request came from an identified user.
    pub identified_bans: u64,
    /// Bans whose triggering request came from an internal service.
    pub internal_bans: u64,
    /// Requests of identified users lost to bans.
    pub lost_identified: u64,
    /// Requests of internal services lost to bans.
    pub lost_internal: u64,
    /// Every ban, in the order they started.
    pub list: Vec<BanRow>,
}

/// One ban.
#[derive(Clone, Debug, Serialize)]
pub struct BanRow {
    /// The zone (fail2ban: the jail).
    pub zone: String,
    /// The banned key (log-derived: escape before printing).
    pub key: String,
    /// When the ban started (the triggering request's decision time).
    pub start: String,
    /// When it ended (exclusive); `None`: never.
    pub end: Option<String>,
    /// Its length, ms; `None`: for ever.
    pub length_ms: Option<u64>,
    /// The key's ban number (1, 2, … with increments).
    pub nth: u32,
    /// Requests of the key refused during it.
    pub lost: u64,
    /// Requests that restarted it (`extend`).
    pub extended: u64,
    /// The class of the request that triggered it.
    pub trigger_class: Who,
    /// Its lost requests by class, in [`Who::ALL`] order.
    pub lost_by_class: [u64; 5],
}

/// Requests refused in the log, under a candidate.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct LoggedFate {
    /// Covered by the candidate.
    pub covered: u64,
    /// Refused by it too.
    pub refused: u64,
    /// Delayed by it.
    pub delayed: u64,
    /// Admitted at once by it.
    pub admitted: u64,
}

/// Passed load per capacity window.
#[derive(Clone, Debug, Serialize)]
pub struct Load {
    /// Windows (aligned on the report's clock) with covered requests.
    pub windows: u64,
    /// Of them, above the capacity without the limit.
    pub over_without: u64,
    /// Above the capacity with the limit (counting what it passes).
    pub over_with: u64,
    /// Most covered requests in any window of the capacity's length (sliding).
    pub peak_without: u64,
    /// When that window ended.
    pub peak_without_at: Option<String>,
    /// Most passed requests in any window of the capacity's length (sliding).
    pub peak_with: u64,
    /// When that window ended.
    pub peak_with_at: Option<String>,
}

/// One class under one candidate.
#[derive(Clone, Debug, Serialize)]
pub struct ClassRow {
    /// The class.
    pub class: Who,
    /// Selected requests of the class.
    pub requests: u64,
    /// Covered by a rule.
    pub covered: u64,
    /// Exempt.
    pub exempt: u64,
    /// Delayed.
    pub delayed: u64,
    /// Refused.
    pub refused: u64,
    /// Challenged (ban policies).
    pub challenged: u64,
    /// `refused / requests`.
    pub refused_share: f64,
}

/// The most refused keys of three kinds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TopRefused {
    /// Networks (/24, /48 by default).
    pub prefixes: Vec<KeyRow>,
    /// Addresses.
    pub ips: Vec<KeyRow>,
    /// Agent families.
    pub agents: Vec<KeyRow>,
}

/// One refused key.
#[derive(Clone, Debug, Serialize)]
pub struct KeyRow {
    /// The key as text (log-derived: escape before printing).
    pub key: String,
    /// Refused requests.
    pub refused: u64,
    /// All its selected requests.
    pub requests: u64,
    /// `refused / requests`: the share of its own traffic refused.
    pub refused_share: f64,
}

/// One rule of a candidate.
#[derive(Clone, Debug, Serialize)]
pub struct RuleRow {
    /// The rule's name.
    pub name: String,
    /// Limited requests.
    pub in_scope: u64,
    /// Admitted.
    pub admitted: u64,
    /// Delayed.
    pub delayed: u64,
    /// Refused.
    pub refused: u64,
    /// Exempt.
    pub exempt: u64,
}

/// One zone of a candidate.
#[derive(Clone, Debug, Serialize)]
pub struct ZoneRow {
    /// The zone's name.
    pub name: String,
    /// Its limit as a spec.
    pub limit: String,
    /// Requests it judged.
    pub checked: u64,
    /// Let through (including delayed).
    pub passed: u64,
    /// Delayed.
    pub delayed: u64,
    /// Refused.
    pub refused: u64,
    /// Most keys held at once.
    pub peak_keys: usize,
}

/// One bucket of the refusals-over-time table.
#[derive(Clone, Debug, Serialize)]
pub struct TimeRow {
    /// Bucket start (RFC 3339, the report's zone).
    pub start: String,
    /// Bucket start on the report's wall clock, ms.
    #[serde(skip)]
    pub local_ms: i64,
    /// Selected requests.
    pub requests: u64,
    /// Per candidate.
    pub candidates: Vec<TimeCell>,
}

/// Buckets without a request between two of `over_time`: nothing in `[start, end)`.
#[derive(Clone, Debug, Serialize)]
pub struct TimeGap {
    /// Start of the first empty bucket (RFC 3339, the report's zone).
    pub start: String,
    /// End (exclusive): the start of the next bucket with requests.
    pub end: String,
    /// Empty buckets.
    pub buckets: u64,
    /// Start on the report's wall clock, ms.
    #[serde(skip)]
    pub local_ms: i64,
    /// End on the report's wall clock, ms.
    #[serde(skip)]
    pub end_local_ms: i64,
    /// Index in `over_time` of the bucket right after the gap.
    #[serde(skip)]
    pub before: usize,
}

/// One candidate in one bucket.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct TimeCell {
    /// Covered (the load without the limit).
    pub covered: u64,
    /// Refused.
    pub refused: u64,
    /// Passed (covered minus refused: the load with the limit).
    pub passed: u64,
}

/// `--servers N --balance RULE`: every candidate replayed once with one shared counter
/// and once per server with that server's own counters (each request on the server the
/// balance rule sends it to), compared request by request.
#[derive(Clone, Debug, Serialize)]
pub struct FleetReport {
    /// Servers.
    pub servers: usize,
    /// The balance rule (`round-robin`, `ip-hash`, `random:SEED`).
    pub balance: String,
    /// Requests routed to each server (every selected request goes to one).
    pub routed: Vec<u64>,
    /// One entry per candidate, in command-line order.
    pub candidates: Vec<FleetCandidate>,
}

/// Admitted, delayed and refused requests of one counter (shared, fleet, one server).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct FleetCounts {
    /// Requests limited (admitted + delayed + refused).
    pub in_scope: u64,
    /// Passed at once.
    pub admitted: u64,
    /// Passed after a delay.
    pub delayed: u64,
    /// Refused.
    pub refused: u64,
}

/// One candidate on a fleet.
#[derive(Clone, Debug, Serialize)]
pub struct FleetCandidate {
    /// Column label (`A`, `B`, …), as in the main report.
    pub label: String,
    /// The candidate's name.
    pub name: String,
    /// One counter shared by every server (what the candidate alone decides).
    pub shared: FleetCounts,
    /// Every server with its own counters, summed.
    pub fleet: FleetCounts,
    /// Requests the fleet let through (admitted or delayed) that the shared counter
    /// refused: admitted beyond the configured limit.
    pub admitted_beyond_limit: u64,
    /// Requests the fleet refused that the shared counter let through.
    pub refused_not_shared: u64,
    /// Per server, in server order.
    pub per_server: Vec<FleetCounts>,
    /// Per zone: the most requests one key had let through in one window of the zone's
    /// limit, fleet-wide and with the shared counter.
    pub peaks: Vec<FleetPeak>,
}

/// The peak of one zone: the most requests of one key let through in one window of
/// the limit's length (windows aligned on the epoch, UTC), against the limit.
#[derive(Clone, Debug, Serialize)]
pub struct FleetPeak {
    /// The zone's name.
    pub zone: String,
    /// Its limit as a spec (`10/1m,key=ip`).
    pub limit: String,
    /// The limit's count (N of N/WINDOW).
    pub limit_count: u64,
    /// The limit's window, ms.
    pub window_ms: u64,
    /// Fleet-wide: the most let through for one key in one window.
    pub fleet_peak: u64,
    /// Its key (log-derived: escape before printing).
    pub fleet_key: Option<String>,
    /// Its window's start (RFC 3339, UTC).
    pub fleet_at: Option<String>,
    /// (key, window) pairs the fleet let through more than the limit.
    pub fleet_windows_over: u64,
    /// With the shared counter: the most let through for one key in one window.
    pub shared_peak: u64,
    /// (key, window) pairs the shared counter let through more than the limit (a token
    /// bucket's burst or an nginx zone can exceed N in an aligned window on its own).
    pub shared_windows_over: u64,
}
