//! The twin of `logscope availability`: per period (calendar month or day in the
//! report's zone) the probe requests — a `--probe` regex over `path?query`, else the
//! dynamic requests (not static files) — succeeded, failed, policy, the failures by
//! status, and availability without missing probes.

use super::{Script, Twin};
use crate::classify::StatusSet;

/// How policy statuses count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Left out.
    Exclude,
    /// As successes.
    Success,
    /// As failures.
    Failure,
}

/// The options of `logscope availability` a twin follows.
pub struct Options<'a> {
    /// `--probe REGEX` over `path?query`.
    pub probe: Option<&'a str>,
    /// `--by day` (else month).
    pub day: bool,
    /// `--success`.
    pub success: &'a StatusSet,
    /// `--policy-status`.
    pub policy: &'a StatusSet,
    /// `--policy`.
    pub policy_as: Policy,
}

fn status_cond(s: &StatusSet) -> String {
    let mut ranges = Vec::new();
    let mut start: Option<u16> = None;
    for code in 0..=1000u16 {
        let inside = code < 1000 && s.contains(code);
        match (inside, start) {
            (true, None) => start = Some(code),
            (false, Some(a)) => {
                ranges.push(format!("status BETWEEN {a} AND {}", code - 1));
                start = None;
            }
            _ => {}
        }
    }
    if ranges.is_empty() {
        "FALSE".into()
    } else {
        format!("({})", ranges.join(" OR "))
    }
}

/// The twin.
pub fn script(t: &Twin<'_>, o: &Options<'_>) -> Script {
    let d = t.dialect;
    let mut s = Script::default();
    s.notes.push(
        "logscope availability twin: counts per period; missing probes (the cadence, the site's rhythm), gaps and incidents are logscope's alone, so availability here is succeeded / (succeeded + failed)."
            .into(),
    );
    t.base(&mut s);
    let probe = match o.probe {
        Some(re) => d.rx(
            "(coalesce(path, '') || CASE WHEN query IS NULL THEN '' ELSE '?' || query END)",
            re,
        ),
        None => format!(
            "NOT {}",
            d.rx(
                "coalesce(path, '')",
                &crate::classify::static_files::static_path_regex()
            )
        ),
    };
    let pol = status_cond(o.policy);
    let ok = status_cond(o.success);
    // outcome: 0 ok, 1 fail, 2 policy (excluded), 3 policy ok, 4 policy fail
    let outcome = format!(
        "CASE WHEN {pol} THEN {} WHEN {ok} THEN 0 ELSE 1 END",
        match o.policy_as {
            Policy::Exclude => 2,
            Policy::Success => 3,
            Policy::Failure => 4,
        }
    );
    s.view(
        "logscope_probes",
        format!(
            "SELECT z.*, {} AS period, {outcome} AS outcome FROM logscope_rows z WHERE selected AND {probe}",
            d.local_label("local_ms", o.day)
        ),
    );
    s.result(
        "periods",
        "SELECT period AS label, count(*) AS requests,\n  \
count(CASE WHEN outcome IN (0, 3) THEN 1 END) AS succeeded,\n  \
count(CASE WHEN outcome IN (1, 4) THEN 1 END) AS failed,\n  \
count(CASE WHEN outcome IN (2, 3, 4) THEN 1 END) AS policy,\n  \
CASE WHEN count(CASE WHEN outcome <> 2 THEN 1 END) = 0 THEN NULL ELSE 100.0 * CAST(count(CASE WHEN outcome IN (0, 3) THEN 1 END) AS DOUBLE) / CAST(count(CASE WHEN outcome <> 2 THEN 1 END) AS DOUBLE) END AS availability\n  \
FROM logscope_probes GROUP BY period ORDER BY period"
            .to_string(),
    );
    s.result(
        "failures",
        "SELECT period AS label, status, count(*) AS n FROM logscope_probes WHERE outcome IN (1, 4)\n  \
GROUP BY period, status ORDER BY period, status"
            .into(),
    );
    s
}
