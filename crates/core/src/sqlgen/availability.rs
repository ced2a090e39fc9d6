//! The twin of `logscope availability`: per period (calendar month or day in the
//! report's zone) the probe requests — a `--probe` regex over `path?query`, else the
//! dynamic requests (not static files) — succeeded, failed, policy, the failures by
//! status, the missing probes of the gaps, and availability with them, as
//! `crate::availability` computes it:
//!
//! * the cadence: given (`--expect-every`), the median interval between probes, or
//!   (without a probe) the mean interval shorter than the gap threshold;
//! * with a cadence, a silence holds `round(Δ / cadence) − 1` missing probes at the
//!   expected times (from the span's start, between probes, to the span's end);
//! * without a probe, the site's rhythm: per hour of the week (28 days or more) or of
//!   the day (4 or more), the median requests and busy minutes over the days with
//!   requests, smoothed ¼ ½ ¼; a silence of at least the gap threshold counts when
//!   `exp(−∫ busy minutes) < 10⁻³`, its missing requests `round(∫ requests)` spread
//!   evenly over it;
//! * every period of the span is a row; a run of more than 24 periods without a probe
//!   request is one row (`periods` says how many), as in the report.

use super::{Dialect, Script, Twin, Zone};
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
    /// `--expect-every` in ms.
    pub expect_every_ms: Option<i64>,
    /// `--min-gap` in ms.
    pub min_gap_ms: Option<i64>,
    /// `--bucket` in ms.
    pub bucket_ms: i64,
}

const HOUR: i64 = 3_600_000;
const DAY: i64 = 86_400_000;

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
        "logscope availability twin: periods with the missing probes of the gaps (cadence, or the site's rhythm without a probe), as the report counts them."
            .into(),
    );
    t.base(&mut s);
    let probe_mode = o.probe.is_some();
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
    let label = |local: &str| d.local_label(local, o.day);
    s.view(
        "logscope_lines",
        format!("SELECT ts_ms, local_ms, status, {probe} AS probe, {outcome} AS outcome FROM logscope_rows WHERE selected"),
    );
    s.table(
        "logscope_probes",
        format!(
            "SELECT ts_ms, status, outcome, {} AS period, ts_ms - lag(ts_ms) OVER (ORDER BY ts_ms) AS d FROM logscope_lines WHERE probe",
            label("local_ms")
        ),
    );
    // The cadence (one row, `c`; NULL when it cannot be estimated).
    let default_gap = 15 * 60_000;
    let cadence = match (o.expect_every_ms, probe_mode) {
        (Some(ms), _) => format!("SELECT CAST({} AS BIGINT) AS c", ms.max(1)),
        (None, true) => format!(
            "SELECT max(CASE WHEN rk = {} + 1 THEN dd END) AS c FROM (SELECT d AS dd, row_number() OVER (ORDER BY d) AS rk, count(*) OVER () AS n FROM logscope_probes WHERE d > 0) q",
            d.idiv("n", 2)
        ),
        (None, false) => format!(
            "SELECT {} AS c FROM logscope_probes WHERE d < {}",
            d.to_bigint(&format!(
                "CASE WHEN count(*) = 0 OR sum(d) = 0 THEN NULL ELSE greatest({}, 1) END",
                d.idiv_by(
                    &format!("(sum(d) + {})", d.idiv("CAST(count(*) AS BIGINT)", 2)),
                    "CAST(count(*) AS BIGINT)"
                )
            )),
            o.min_gap_ms.unwrap_or(default_gap)
        ),
    };
    s.view("logscope_cadence", cadence);
    let gap = match (o.min_gap_ms, probe_mode) {
        (Some(g), _) => g.to_string(),
        (None, true) => format!(
            "CASE WHEN max(k.c) IS NULL THEN {b} ELSE greatest({b}, 2 * max(k.c)) END",
            b = o.bucket_ms
        ),
        (None, false) => default_gap.to_string(),
    };
    let since = t.filter.since_ms.map(|v| d.int(v));
    let until = t.filter.until_ms.map(|v| d.int(v));
    s.table(
        "logscope_span",
        format!(
            "SELECT {} AS s, {} AS e, max(k.c) AS c, {gap} AS g FROM logscope_lines l CROSS JOIN logscope_cadence k",
            since.clone().unwrap_or_else(|| "min(l.ts_ms)".into()),
            until
                .clone()
                .unwrap_or_else(|| "max(l.ts_ms) + coalesce(max(k.c), 1)".into()),
        ),
    );
    // `counts(Δ)`: with a probe and no --min-gap every silence holds missing probes.
    let counts = |delta: &str| {
        if probe_mode && o.min_gap_ms.is_none() {
            "TRUE".to_string()
        } else {
            format!("{delta} >= x.g")
        }
    };
    let learn = !probe_mode && o.expect_every_ms.is_none();
    // Missing probes as runs: `m` at `first`, `first + step`, …
    let cadence_runs = format!(
        "SELECT ts_ms - {q} * x.c AS first, {q} AS m, x.c AS step FROM (SELECT min(ts_ms) AS ts_ms FROM logscope_probes) f CROSS JOIN logscope_span x WHERE f.ts_ms IS NOT NULL AND x.c > 0 AND {c0}\n  \
UNION ALL SELECT (ts_ms - d) + x.c, {qm} - 1, x.c FROM logscope_probes CROSS JOIN logscope_span x WHERE d > 0 AND x.c > 0 AND {c1}\n  \
UNION ALL SELECT f.ts_ms + x.c, {qe}, x.c FROM (SELECT max(ts_ms) AS ts_ms FROM logscope_probes) f CROSS JOIN logscope_span x WHERE f.ts_ms IS NOT NULL AND x.c > 0 AND {c2}\n  \
UNION ALL SELECT x.s, {qa}, x.c FROM (SELECT count(*) AS n FROM logscope_probes) f CROSS JOIN logscope_span x WHERE f.n = 0 AND x.c > 0",
        q = d.idiv_by("(f.ts_ms - x.s)", "x.c"),
        c0 = counts("f.ts_ms - x.s"),
        qm = d.idiv_by(&format!("(d + {})", d.idiv("x.c", 2)), "x.c"),
        c1 = counts("d"),
        qe = d.idiv_by("(x.e - f.ts_ms - 1)", "x.c"),
        c2 = counts("x.e - f.ts_ms"),
        qa = d.idiv_by("(x.e - x.s + x.c - 1)", "x.c"),
    );
    if learn {
        rhythm(&mut s, t);
        s.table(
            "logscope_runs",
            format!(
                "SELECT first, m, step FROM logscope_rhythm_runs CROSS JOIN logscope_days n WHERE n.days >= 4\n  \
UNION ALL SELECT first, m, step FROM ({cadence_runs}) r CROSS JOIN logscope_days n WHERE n.days < 4"
            ),
        );
    } else {
        s.table("logscope_runs", cadence_runs);
    }
    // The periods of the span, in the report's zone.
    let local_of = |ms: &str| match &t.zone {
        Zone::Fixed(0) => ms.to_string(),
        Zone::Fixed(off) => format!("({ms} + {off})"),
        Zone::Named(z) => d.local_ms(&d.ts_of_ms(ms), z),
    };
    let utc_of = |local: &str| match &t.zone {
        Zone::Fixed(0) => local.to_string(),
        Zone::Fixed(off) => format!("({local} - {off})"),
        Zone::Named(z) => d.utc_of_local(local, z),
    };
    let index = |local: &str| {
        if o.day {
            d.idiv(local, DAY)
        } else {
            let l = d.local_label(local, false);
            format!(
                "(CAST(substr({l}, 1, 4) AS BIGINT) * 12 + CAST(substr({l}, 6, 2) AS BIGINT) - 1)"
            )
        }
    };
    let start_local = |k: &str| {
        if o.day {
            format!("({k}) * {DAY}")
        } else {
            format!("{} * {DAY}", month_start_day(d, k))
        }
    };
    s.view(
        "logscope_bounds",
        format!(
            "SELECT {} AS k0, {} AS k1, s, e FROM logscope_span WHERE e > s",
            index(&local_of("s")),
            index(&local_of("(e - 1)"))
        ),
    );
    let sl = start_local("k");
    let el = start_local("k + 1");
    s.table(
        "logscope_periods",
        format!(
            "SELECT k, {} AS label, {} AS start_ms, {} AS end_ms, k0, k1, s, e FROM (SELECT {} AS k, k0, k1, s, e FROM logscope_bounds) q",
            label(&sl),
            utc_of(&sl),
            utc_of(&el),
            d.explode_range("k0", "k1"),
        ),
    );
    s.view(
        "logscope_counted",
        "SELECT period, count(*) AS requests,\n  \
count(CASE WHEN outcome IN (0, 3) THEN 1 END) AS succeeded,\n  \
count(CASE WHEN outcome IN (1, 4) THEN 1 END) AS failed,\n  \
count(CASE WHEN outcome IN (2, 3, 4) THEN 1 END) AS policy\n  \
FROM logscope_probes GROUP BY period"
            .into(),
    );
    let ceil_div = |a: &str, c: &str| {
        format!(
            "CASE WHEN {a} <= 0 THEN 0 ELSE {} END",
            d.idiv_by(&format!("({a} + {c} - 1)"), c)
        )
    };
    s.view(
        "logscope_missing",
        format!(
            "SELECT k, sum(CASE WHEN hi > lo THEN hi - lo ELSE 0 END) AS missing FROM (\n  \
SELECT p.k AS k, {} AS lo, least(r.m, {}) AS hi FROM logscope_periods p JOIN logscope_runs r\n  \
ON r.first < p.end_ms AND r.first + (r.m - 1) * r.step >= p.start_ms WHERE r.m > 0) q GROUP BY k",
            ceil_div("p.start_ms - r.first", "r.step"),
            ceil_div("p.end_ms - r.first", "r.step"),
        ),
    );
    // A period is a row of its own when it holds probes or is the first or the last;
    // the periods between are one row when there are more than 24 of them.
    s.table(
        "logscope_table",
        "SELECT p.k AS k, p.label AS label, p.start_ms AS start_ms, p.end_ms AS end_ms, p.k0 AS k0, p.k1 AS k1, p.s AS s, p.e AS e,\n  \
coalesce(c.requests, 0) AS requests, coalesce(c.succeeded, 0) AS succeeded,\n  \
coalesce(c.failed, 0) AS failed, coalesce(c.policy, 0) AS policy, coalesce(m.missing, 0) AS missing,\n  \
(c.requests IS NOT NULL OR p.k = p.k0 OR p.k = p.k1) AS anchor\n  \
FROM logscope_periods p LEFT JOIN logscope_counted c ON c.period = p.label LEFT JOIN logscope_missing m ON m.k = p.k"
            .into(),
    );
    s.view(
        "logscope_runs_of_empty",
        "SELECT z.*, count(*) OVER (PARTITION BY anchor, g) AS run FROM (\n  \
SELECT t.*, sum(CASE WHEN anchor THEN 1 ELSE 0 END) OVER (ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS g FROM logscope_table t) z"
            .into(),
    );
    s.result(
        "periods",
        "SELECT min(label) AS label, max(label) AS last_label, count(*) AS periods, min(start_ms) AS start_ms, max(end_ms) AS end_ms,\n  \
CAST(least(max(end_ms), max(e)) - greatest(min(start_ms), max(s)) AS DOUBLE) / 3600000.0 AS hours,\n  \
sum(requests) AS requests, sum(succeeded) AS succeeded, sum(failed) AS failed, sum(policy) AS policy, sum(missing) AS missing,\n  \
sum(succeeded) + sum(failed) + sum(missing) AS expected,\n  \
CASE WHEN sum(succeeded) + sum(failed) + sum(missing) = 0 THEN NULL ELSE 100.0 * CAST(sum(succeeded) AS DOUBLE) / CAST(sum(succeeded) + sum(failed) + sum(missing) AS DOUBLE) END AS availability\n  \
FROM logscope_runs_of_empty GROUP BY CASE WHEN anchor OR run <= 24 THEN k ELSE -1 - g END ORDER BY min(k)"
            .into(),
    );
    s.result(
        "summary",
        "SELECT x.s AS span_start_ms, x.e AS span_end_ms, x.c AS cadence_ms, x.g AS gap_ms, t.probe_requests,\n  \
t.requests, t.succeeded, t.failed, t.policy, t.missing, t.succeeded + t.failed + t.missing AS expected,\n  \
CASE WHEN t.succeeded + t.failed + t.missing = 0 THEN NULL ELSE 100.0 * CAST(t.succeeded AS DOUBLE) / CAST(t.succeeded + t.failed + t.missing AS DOUBLE) END AS availability\n  \
FROM logscope_span x CROSS JOIN (SELECT sum(requests) AS probe_requests, sum(requests) AS requests, sum(succeeded) AS succeeded, sum(failed) AS failed,\n    \
sum(policy) AS policy, sum(missing) AS missing FROM logscope_table) t WHERE x.e > x.s"
            .into(),
    );
    if learn {
        s.result(
            "rhythm",
            "SELECT n.days, CASE WHEN n.days >= 28 THEN 'hour_of_week' ELSE 'hour_of_day' END AS kind,\n  \
r.tot / 7.0 AS requests_per_day, j.checked AS silences_checked, j.counted AS silences_counted, j.counted_ms, j.expected_quiet,\n  \
CASE WHEN t.sf + j.loose = 0 THEN NULL ELSE 100.0 * CAST(t.succeeded AS DOUBLE) / CAST(t.sf + j.loose AS DOUBLE) END AS availability_loose,\n  \
CASE WHEN t.sf + j.strict = 0 THEN NULL ELSE 100.0 * CAST(t.succeeded AS DOUBLE) / CAST(t.sf + j.strict AS DOUBLE) END AS availability_strict\n  \
FROM logscope_days n CROSS JOIN (SELECT max(tot_req) AS tot FROM logscope_cum) r\n  \
CROSS JOIN (SELECT count(*) AS checked, count(CASE WHEN p < 0.001 THEN 1 END) AS counted,\n    \
coalesce(sum(CASE WHEN p < 0.001 THEN b - a END), 0) AS counted_ms, coalesce(sum(CASE WHEN p < 0.001 THEN p END), 0.0) AS expected_quiet,\n    \
coalesce(sum(CASE WHEN p < 0.01 THEN m END), 0) AS loose, coalesce(sum(CASE WHEN p < 0.000001 THEN m END), 0) AS strict\n    \
FROM (SELECT a, b, exp(-busy) AS p, greatest(CAST(floor(req + 0.5) AS BIGINT), 1) AS m FROM logscope_judged) q) j\n  \
CROSS JOIN (SELECT sum(succeeded) AS succeeded, sum(succeeded) + sum(failed) AS sf FROM logscope_table) t WHERE n.days >= 4"
                .into(),
        );
        s.result(
            "expected_per_hour",
            "SELECT c.k AS hour_of_week, c.req AS expected FROM logscope_cum c CROSS JOIN logscope_days n WHERE n.days >= 4 ORDER BY c.k"
                .into(),
        );
    }
    s.result(
        "failures",
        "SELECT period AS label, status, count(*) AS n FROM logscope_probes WHERE outcome IN (1, 4)\n  \
GROUP BY period, status ORDER BY period, status"
            .into(),
    );
    s
}

/// The days from 1970-01-01 to the first of month `k` (months since year 0: `y * 12 +
/// m − 1`), in integer arithmetic (H. Hinnant's `days_from_civil`; years from 1970).
fn month_start_day(d: Dialect, k: &str) -> String {
    let yp = d.idiv_by(&format!("({k} - 2)"), "12");
    let mp = format!("(({k} - 2) - {yp} * 12)");
    let doy = d.idiv_by(&format!("(153 * {mp} + 2)"), "5");
    let era = d.idiv_by(&yp, "400");
    let yoe = format!("({yp} - {era} * 400)");
    let doe = format!(
        "({yoe} * 365 + {} - {} + {doy})",
        d.idiv_by(&yoe, "4"),
        d.idiv_by(&yoe, "100")
    );
    format!("({era} * 146097 + {doe} - 719468)")
}

/// The site's rhythm and the runs of missing requests it counts (without a probe):
/// views `logscope_days` (the days with requests) and `logscope_rhythm_runs`.
fn rhythm(s: &mut Script, t: &Twin<'_>) {
    let d = t.dialect;
    let idiv = |a: &str, b: i64| d.idiv(a, b);
    s.table(
        "logscope_dh",
        format!(
            "SELECT day, h, count(*) AS req, count(DISTINCT minute) AS mins FROM (\n  \
SELECT {} AS day, {} - {} * 24 AS h, {} AS minute FROM logscope_probes p CROSS JOIN logscope_span x WHERE p.ts_ms >= x.s AND p.ts_ms < x.e) q GROUP BY day, h",
            idiv("ts_ms", DAY),
            idiv("ts_ms", HOUR),
            idiv("ts_ms", DAY),
            idiv("ts_ms", 60_000)
        ),
    );
    s.view(
        "logscope_days",
        "SELECT count(DISTINCT day) AS days FROM logscope_dh".into(),
    );
    s.view(
        "logscope_hours",
        format!("SELECT {} AS h", d.explode_range("0", "23")),
    );
    s.table(
        "logscope_samples",
        format!(
            "SELECT y.day AS day, y.h AS h, {} AS w, coalesce(dh.req, 0) AS req, coalesce(dh.mins, 0) AS mins FROM (\n  \
SELECT dd.day AS day, hh.h AS h FROM (SELECT DISTINCT day FROM logscope_dh) dd CROSS JOIN logscope_hours hh) y\n  \
CROSS JOIN logscope_span x LEFT JOIN logscope_dh dh ON dh.day = y.day AND dh.h = y.h\n  \
WHERE y.day * {DAY} + y.h * {HOUR} >= x.s AND y.day * {DAY} + y.h * {HOUR} + {HOUR} <= x.e",
            "((y.day + 3) - ".to_string() + &idiv("(y.day + 3)", 7) + " * 7)"
        ),
    );
    // Medians: the middle value, or the mean of the two middle values.
    let median = |col: &str, part: &str| {
        format!(
            "SELECT {part}, max(n) AS n, avg(v) AS med FROM (SELECT {part}, {col} AS v, row_number() OVER (PARTITION BY {part} ORDER BY {col}) AS rk,\n    \
count(*) OVER (PARTITION BY {part}) AS n FROM logscope_samples) q WHERE rk = {} OR rk = {} + 1 GROUP BY {part}",
            d.idiv("(n + 1)", 2),
            d.idiv("n", 2)
        )
    };
    s.table(
        "logscope_raw",
        format!(
            "SELECT kk.k AS k, CASE WHEN n.days >= 28 AND wr.n >= 3 THEN wr.med ELSE coalesce(dr.med, 0.0) END AS req,\n  \
CASE WHEN n.days >= 28 AND wm.n >= 3 THEN wm.med ELSE coalesce(dm.med, 0.0) END AS mins,\n  \
CASE WHEN n.days >= 28 THEN 168 ELSE 24 END AS cyc\n  \
FROM (SELECT {} AS k) kk CROSS JOIN logscope_days n\n  \
LEFT JOIN ({}) wr ON wr.w * 24 + wr.h = kk.k LEFT JOIN ({}) wm ON wm.w * 24 + wm.h = kk.k\n  \
LEFT JOIN ({}) dr ON dr.h = kk.k - {} * 24 LEFT JOIN ({}) dm ON dm.h = kk.k - {} * 24",
            d.explode_range("0", "167"),
            median("req", "w, h"),
            median("mins", "w, h"),
            median("req", "h"),
            idiv("kk.k", 24),
            median("mins", "h"),
            idiv("kk.k", 24),
        ),
    );
    // Smoothed over the neighbouring hours of the cycle, then summed up to each hour.
    let nb = |k: &str, step: &str| {
        let base = format!("({k} - ({k} - {} * r.cyc))", d.idiv_by(k, "r.cyc"));
        let pos = format!("({k} - {} * r.cyc)", d.idiv_by(k, "r.cyc"));
        let shifted = format!("({pos} + r.cyc {step})");
        format!(
            "({base} + ({shifted} - {} * r.cyc))",
            d.idiv_by(&shifted, "r.cyc")
        )
    };
    s.view(
        "logscope_rate",
        format!(
            "SELECT r.k AS k, 0.25 * p.req + 0.5 * r.req + 0.25 * n.req AS req, 0.25 * p.mins + 0.5 * r.mins + 0.25 * n.mins AS mins\n  \
FROM logscope_raw r JOIN logscope_raw p ON p.k = {} JOIN logscope_raw n ON n.k = {}",
            nb("r.k", "- 1"),
            nb("r.k", "+ 1"),
        ),
    );
    s.table(
        "logscope_cum",
        "SELECT k, req, mins,\n  \
coalesce(sum(req) OVER (ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0.0) AS cum_req,\n  \
coalesce(sum(mins) OVER (ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0.0) AS cum_mins,\n  \
sum(req) OVER () AS tot_req, sum(mins) OVER () AS tot_mins FROM logscope_rate"
            .into(),
    );
    // The silences judged: from the span's start to the first request, between
    // requests, from the last to the span's end — each at least the gap threshold.
    s.view(
        "logscope_silences",
        "SELECT a, b FROM (\n  \
SELECT x.s AS a, f.ts_ms AS b, x.g FROM (SELECT min(ts_ms) AS ts_ms FROM logscope_probes) f CROSS JOIN logscope_span x WHERE f.ts_ms IS NOT NULL\n  \
UNION ALL SELECT ts_ms - d, ts_ms, x.g FROM logscope_probes CROSS JOIN logscope_span x WHERE d > 0\n  \
UNION ALL SELECT f.ts_ms, x.e, x.g FROM (SELECT max(ts_ms) AS ts_ms FROM logscope_probes) f CROSS JOIN logscope_span x WHERE f.ts_ms IS NOT NULL) q\n  \
WHERE b - a >= g"
            .into(),
    );
    let at = |t: &str| {
        let hh = format!("({} + 72)", idiv(t, HOUR));
        let week = d.idiv_by(&hh, "168");
        let k = format!("({hh} - {week} * 168)");
        let frac = format!(
            "CAST({t} - {} * {HOUR} AS DOUBLE) / 3600000.0",
            idiv(t, HOUR)
        );
        (week, k, frac)
    };
    let (wa, ka, fa) = at("a");
    let (wb, kb, fb) = at("b");
    s.table(
        "logscope_judged",
        format!(
            "SELECT a, b, greatest(CAST(wb - wa AS DOUBLE) * ca.tot_req + (cb.cum_req + cb.req * fb) - (ca.cum_req + ca.req * fa), 0.0) AS req,\n  \
greatest(CAST(wb - wa AS DOUBLE) * ca.tot_mins + (cb.cum_mins + cb.mins * fb) - (ca.cum_mins + ca.mins * fa), 0.0) AS busy\n  \
FROM (SELECT a, b, {wa} AS wa, {ka} AS ka, {fa} AS fa, {wb} AS wb, {kb} AS kb, {fb} AS fb FROM logscope_silences) q\n  \
JOIN logscope_cum ca ON ca.k = q.ka JOIN logscope_cum cb ON cb.k = q.kb"
        ),
    );
    s.view(
        "logscope_rhythm_runs",
        format!(
            "SELECT a + greatest({}, 1) AS first, m, greatest({}, 1) AS step FROM (\n  \
SELECT a, b, least(greatest(CAST(floor(req + 0.5) AS BIGINT), 1), b - a - 1) AS m FROM logscope_judged WHERE exp(-busy) < 0.001) q WHERE m > 0",
            d.idiv_by("(b - a)", "(m + 1)"),
            d.idiv_by("(b - a)", "(m + 1)"),
        ),
    );
}
