//! The twin of `logscope concentration`: requests per prefix (or address), the top
//! groups with their shares and dominant agent class, the groups that make 50 % and
//! 90 %, HHI and Gini, and what a per-group fixed-window limit would have refused.

use super::{Script, Twin, key_order};

/// `logscope concentration --by prefix|ip --top N [--per-prefix-limit N/WINDOW]`:
/// `by_ip`, `top`, and the limit as (count, window ms).
pub fn script(t: &Twin<'_>, by_ip: bool, top: usize, limit: Option<(u64, i64)>) -> Script {
    let d = t.dialect;
    let mut s = Script::default();
    s.notes.push("logscope concentration twin.".into());
    t.base(&mut s);
    let (khi, klo, v4, v6) = if by_ip {
        ("ip_hi", "ip_lo", 32, 128)
    } else {
        ("phi", "plo", t.classifier.v4_len, t.classifier.v6_len)
    };
    s.view(
        "logscope_sel",
        format!(
            "SELECT z.*, {khi} AS khi, {klo} AS klo, pname AS kname FROM logscope_rows z WHERE selected"
        ),
    );
    s.view(
        "logscope_groups",
        format!(
            "SELECT g.*, row_number() OVER (ORDER BY requests DESC, {order}) AS rk,\n  \
sum(requests) OVER (ORDER BY requests DESC, {order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cum,\n  \
row_number() OVER (ORDER BY requests, {order}) AS rk_up\n  \
FROM (SELECT pfam, khi, klo, kname, count(*) AS requests, count(DISTINCT ckey) AS distinct_ips FROM logscope_sel GROUP BY pfam, khi, klo, kname) g",
            order = key_order("")
        ),
    );
    let total = "(SELECT count(*) FROM logscope_sel)";
    s.result(
        "summary",
        format!(
            "SELECT t.requests, t.distinct_ips, t.requests_from_host_names, g.groups, {top_share} AS top_share,\n  \
g.groups_for_50, g.groups_for_90, g.hhi, CASE WHEN g.groups = 0 OR t.requests = 0 THEN 0.0 ELSE g.gini_acc / (CAST(g.groups AS DOUBLE) * CAST(t.requests AS DOUBLE)) END AS gini\n  \
FROM (SELECT count(*) AS requests, count(DISTINCT ckey) AS distinct_ips, count(CASE WHEN pfam = 2 THEN 1 END) AS requests_from_host_names FROM logscope_sel) t\n  \
CROSS JOIN (SELECT count(*) AS groups, max(requests) AS top_n,\n    \
coalesce(min(CASE WHEN cum >= 0.5 * {total} - 1e-9 THEN rk END), 0) AS groups_for_50,\n    \
coalesce(min(CASE WHEN cum >= 0.9 * {total} - 1e-9 THEN rk END), 0) AS groups_for_90,\n    \
coalesce(sum(POWER(CAST(requests AS DOUBLE) / {total}, 2)), 0.0) AS hhi,\n    \
coalesce(sum((2.0 * rk_up - (SELECT count(*) FROM logscope_groups) - 1.0) * requests), 0.0) AS gini_acc\n    \
FROM logscope_groups) g",
            top_share = d.share("coalesce(g.top_n, 0)", "t.requests"),
        ),
    );
    let top_groups = format!(
        "SELECT * FROM logscope_groups{}",
        if top == 0 {
            String::new()
        } else {
            format!(" WHERE rk <= {top}")
        }
    );
    s.result(
        "top",
        format!(
            "WITH a AS (SELECT * FROM (SELECT pfam, khi, klo, kname, agent_label, count(*) AS n,\n    \
row_number() OVER (PARTITION BY pfam, khi, klo, kname ORDER BY count(*) DESC, agent_label) AS ark\n    \
FROM logscope_sel GROUP BY pfam, khi, klo, kname, agent_id, agent_label) q WHERE ark = 1)\n\
SELECT g.rk AS rank, g.label AS {group}, g.requests, {share} AS share, {cum} AS cumulative_share, g.distinct_ips,\n  \
a.agent_label AS agent, {ashare} AS agent_share\n  \
FROM ({labelled}) g LEFT JOIN a ON a.pfam = g.pfam AND a.khi IS NOT DISTINCT FROM g.khi AND a.klo IS NOT DISTINCT FROM g.klo AND a.kname IS NOT DISTINCT FROM g.kname\n  \
ORDER BY g.rk",
            share = d.share("g.requests", total),
            cum = d.share("g.cum", total),
            ashare = d.share("a.n", "g.requests"),
            labelled = t.labelled(&top_groups, v4, v6),
            group = d.q("group"),
        ),
    );
    if let Some((count, window)) = limit {
        s.result(
            "limit",
            format!(
                "WITH w AS (SELECT pfam, khi, klo, kname, {} AS win, count(*) AS n FROM logscope_sel GROUP BY pfam, khi, klo, kname, {}),\n\
o AS (SELECT pfam, khi, klo, kname, sum(n - {count}) AS refused FROM w WHERE n > {count} GROUP BY pfam, khi, klo, kname)\n\
SELECT count(*) AS groups_over, coalesce(sum(g.requests), 0) AS requests_from_groups_over, {} AS share_from_groups_over,\n  \
coalesce(sum(o.refused), 0) AS requests_over_limit, {} AS share_over_limit\n  \
FROM o JOIN logscope_groups g ON g.pfam = o.pfam AND g.khi IS NOT DISTINCT FROM o.khi AND g.klo IS NOT DISTINCT FROM o.klo AND g.kname IS NOT DISTINCT FROM o.kname",
                d.idiv("ts_ms", window),
                d.idiv("ts_ms", window),
                d.share("coalesce(sum(g.requests), 0)", total),
                d.share("coalesce(sum(o.refused), 0)", total),
            ),
        );
    }
    s
}
