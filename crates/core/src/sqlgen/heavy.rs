//! The twin of `logscope heavy`: totals, the largest prefix, the classes and one row
//! per non-empty bucket (requests, heavy, distinct addresses and prefixes of the heavy
//! ones, the largest prefix, the dominant agent class, the capacity peak).

use super::{Script, Twin, key_order};

/// `logscope heavy --by WIDTH [--capacity N/WINDOW]`: `width_ms`, and the capacity as
/// (count, window ms).
pub fn script(t: &Twin<'_>, width_ms: i64, capacity: Option<(u64, i64)>) -> Script {
    let d = t.dialect;
    let mut s = Script::default();
    s.notes.push(
        "logscope heavy twin: buckets without requests are not rows here (logscope shows them, and long runs as gaps)."
            .into(),
    );
    t.base(&mut s);
    let (v4, v6) = (t.classifier.v4_len, t.classifier.v6_len);
    s.view(
        "logscope_sel",
        format!(
            "SELECT z.*, {} AS bucket_local FROM logscope_rows z WHERE selected",
            d.align("local_ms", width_ms)
        ),
    );
    s.result(
        "summary",
        "SELECT count(*) AS requests, count(heavy_class) AS heavy,\n  \
count(DISTINCT CASE WHEN heavy_class IS NOT NULL THEN ckey END) AS distinct_ips,\n  \
count(DISTINCT CASE WHEN heavy_class IS NOT NULL THEN pkey END) AS distinct_prefixes\n  \
FROM logscope_sel"
            .into(),
    );
    let groups = "SELECT pfam, phi AS khi, plo AS klo, pname AS kname, count(*) AS n FROM logscope_sel WHERE heavy_class IS NOT NULL GROUP BY pfam, phi, plo, pname";
    s.result(
        "top_prefix",
        format!(
            "SELECT label AS top_prefix, n AS top_prefix_requests, {} AS top_prefix_share\n  \
FROM ({}) p CROSS JOIN (SELECT count(*) AS h FROM logscope_sel WHERE heavy_class IS NOT NULL) t\n  \
ORDER BY n DESC, {} LIMIT 1",
            d.share("n", "h"),
            t.labelled(groups, v4, v6),
            key_order("")
        ),
    );
    s.result(
        "classes",
        "SELECT heavy_class AS class, count(*) AS requests FROM logscope_sel WHERE heavy_class IS NOT NULL\n  \
GROUP BY heavy_class ORDER BY requests DESC, class"
            .into(),
    );
    let bucket_prefixes = "SELECT bucket_local, pfam, phi AS khi, plo AS klo, pname AS kname, count(*) AS n,\n    \
row_number() OVER (PARTITION BY bucket_local ORDER BY count(*) DESC, pfam, (phi < 0), phi, (plo < 0), plo, pname) AS rk\n    \
FROM logscope_sel WHERE heavy_class IS NOT NULL GROUP BY bucket_local, pfam, phi, plo, pname";
    let mut with = vec![
        format!(
            "b AS (SELECT bucket_local, {} AS off, count(*) AS requests, count(heavy_class) AS heavy,\n    \
count(DISTINCT CASE WHEN heavy_class IS NOT NULL THEN ckey END) AS distinct_ips,\n    \
count(DISTINCT CASE WHEN heavy_class IS NOT NULL THEN pkey END) AS distinct_prefixes\n    \
FROM logscope_sel GROUP BY bucket_local)",
            d.min_by("local_ms - ts_ms", "ts_ms")
        ),
        format!(
            "p AS (SELECT * FROM ({}) q WHERE rk = 1)",
            t.labelled(bucket_prefixes, v4, v6)
        ),
        "a AS (SELECT * FROM (SELECT bucket_local, agent_label, count(*) AS n,\n    \
row_number() OVER (PARTITION BY bucket_local ORDER BY count(*) DESC, agent_label) AS rk\n    \
FROM logscope_sel WHERE heavy_class IS NOT NULL GROUP BY bucket_local, agent_id, agent_label) q WHERE rk = 1)"
            .to_string(),
    ];
    let (peak_cols, peak_join) = match capacity {
        Some((count, cw)) => {
            with.push(format!(
                "w AS (SELECT {} AS ws, count(*) AS n FROM logscope_sel WHERE heavy_class IS NOT NULL GROUP BY 1)",
                d.align("local_ms", cw)
            ));
            with.push(format!(
                "pk AS (SELECT b.bucket_local, max(w.n) AS peak FROM b JOIN w ON w.ws >= {} AND w.ws < b.bucket_local + {width_ms} GROUP BY b.bucket_local)",
                d.align("b.bucket_local", cw)
            ));
            (
                format!(
                    ",\n  coalesce(pk.peak, 0) AS peak, {} AS over_capacity",
                    d.boolean(&format!("coalesce(pk.peak, 0) > {count}"))
                ),
                " LEFT JOIN pk ON pk.bucket_local = b.bucket_local".to_string(),
            )
        }
        None => (String::new(), String::new()),
    };
    s.result(
        "buckets",
        format!(
            "WITH {}\n\
SELECT b.bucket_local - b.off AS start_utc_ms, b.bucket_local AS start_local_ms, b.requests, b.heavy, b.distinct_ips, b.distinct_prefixes,\n  \
p.label AS top_prefix, coalesce(p.n, 0) AS top_prefix_requests, {} AS top_prefix_share,\n  \
a.agent_label AS agent, {} AS agent_share{peak_cols}\n  \
FROM b LEFT JOIN p ON p.bucket_local = b.bucket_local LEFT JOIN a ON a.bucket_local = b.bucket_local{peak_join}\n  \
ORDER BY b.bucket_local",
            with.join(",\n"),
            d.share("coalesce(p.n, 0)", "b.heavy"),
            d.share("coalesce(a.n, 0)", "b.heavy"),
        ),
    );
    if let Some((count, _)) = capacity {
        s.notes.push(format!(
            "capacity {count}: peak = the most heavy requests in one clock-aligned window overlapping the bucket."
        ));
    }
    s
}
