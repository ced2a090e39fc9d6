//! What an availability report counts: probe or dynamic mode, the status sets, the
//! cadence and thresholds ([`Config`]), and which paths are static.

use serde::Serialize;

use super::calendar::By;
use super::spec::{Grades, StatusSet};

/// How statuses in the policy set (403, 429 by default) count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyAs {
    /// Left out of the denominator: neither success nor failure.
    Exclude,
    /// Counted as successes (the service answered).
    Success,
    /// Counted as failures (the user was turned away).
    Failure,
}

impl PolicyAs {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            PolicyAs::Exclude => "exclude",
            PolicyAs::Success => "success",
            PolicyAs::Failure => "failure",
        }
    }
}

/// What an availability report measures and how.
#[derive(Clone, Debug, Serialize)]
pub struct Config {
    /// The probe's description (its regex), or `None` for dynamic requests.
    pub probe: Option<String>,
    /// Statuses that count as success.
    pub success: StatusSet,
    /// Statuses that are policy, not downtime.
    pub policy: StatusSet,
    /// How policy statuses count.
    pub policy_as: PolicyAs,
    /// The probe cadence, when given (else estimated).
    pub expect_every_ms: Option<i64>,
    /// The shortest silence that is a gap (listed as "no data"; without a probe, the
    /// shortest that counts as downtime). Default: with a probe, max(bucket, 2 ×
    /// cadence); without, 15 minutes.
    pub min_gap_ms: Option<i64>,
    /// Sub-bucket length for incidents (default 5 minutes).
    pub bucket_ms: i64,
    /// A sub-bucket whose availability is below this (percent) is bad (default 80).
    pub incident_below: f64,
    /// Bad sub-buckets this close (or closer) are one incident (default 15 minutes).
    pub merge_within_ms: i64,
    /// Grade thresholds.
    pub grades: Grades,
    /// Period length (for labels; the periods themselves are passed to `compute`).
    pub by: By,
    /// Time zone name (for labels).
    pub tz: String,
    /// Rows before this instant (UTC ms) are ignored; the span starts here.
    pub since_ms: Option<i64>,
    /// Rows at or after this instant are ignored; the span ends here.
    pub until_ms: Option<i64>,
}

impl Config {
    /// Defaults for a probe (`Some(regex text)`) or for dynamic requests (`None`).
    pub fn new(probe: Option<String>) -> Config {
        let success = if probe.is_some() {
            StatusSet::from_ranges(&[(200, 399)])
        } else {
            StatusSet::from_ranges(&[(100, 499)])
        };
        Config {
            probe,
            success,
            policy: StatusSet::from_ranges(&[(403, 403), (429, 429)]),
            policy_as: PolicyAs::Exclude,
            expect_every_ms: None,
            min_gap_ms: None,
            bucket_ms: 5 * 60_000,
            incident_below: 80.0,
            merge_within_ms: 15 * 60_000,
            grades: Grades::default(),
            by: By::Month,
            tz: "UTC".into(),
            since_ms: None,
            until_ms: None,
        }
    }

    /// Whether a probe is set (else dynamic requests are the probes).
    pub fn probe_mode(&self) -> bool {
        self.probe.is_some()
    }

    pub(super) fn outcome(&self, status: u16) -> Outcome {
        if self.policy.contains(status) {
            match self.policy_as {
                PolicyAs::Exclude => Outcome::Policy,
                PolicyAs::Success => Outcome::PolicyOk,
                PolicyAs::Failure => Outcome::PolicyFail,
            }
        } else if self.success.contains(status) {
            Outcome::Ok
        } else {
            Outcome::Fail
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    Ok,
    Fail,
    Policy,
    PolicyOk,
    PolicyFail,
}
