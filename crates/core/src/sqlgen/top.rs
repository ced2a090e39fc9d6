//! The twin of `logscope top`: per distinct value (path, status, referer, agent,
//! address, prefix, host, method) requests, bytes, distinct clients, errors and the
//! first and last time seen, largest first.

use super::{Script, Twin, key_order};

pub use crate::forensics::top::{TopBy as By, TopSort as Sort};

/// `logscope top --by BY --sort SORT --limit N` (0 = all); `errors`: `--errors`.
pub fn script(t: &Twin<'_>, by: By, sort: Sort, limit: usize, errors: bool) -> Script {
    let d = t.dialect;
    let mut s = Script::default();
    s.notes.push(
        "logscope top twin: distinct clients are exact here (logscope estimates them above 256 per value)."
            .into(),
    );
    t.base(&mut s);
    let cond = if errors {
        "selected AND status >= 400"
    } else {
        "selected"
    };
    s.view(
        "logscope_sel",
        format!("SELECT * FROM logscope_rows WHERE {cond}"),
    );
    s.result(
        "summary",
        format!(
            "SELECT count(*) AS requests, coalesce(sum(bytes), 0) AS bytes, count(CASE WHEN status >= 400 THEN 1 END) AS errors,\n  \
{} AS error_share, count(DISTINCT ckey) AS clients, min(ts_ms) AS first_seen_ms, max(ts_ms) AS last_seen_ms FROM logscope_sel",
            d.share("count(CASE WHEN status >= 400 THEN 1 END)", "count(*)")
        ),
    );
    let (key_cols, value, order_value) = match by {
        By::Ip | By::Prefix => {
            let (hi, lo) = if by == By::Ip {
                ("ip_hi", "ip_lo")
            } else {
                ("phi", "plo")
            };
            (
                format!("pfam, {hi} AS khi, {lo} AS klo, pname AS kname"),
                "r.label".to_string(),
                key_order(""),
            )
        }
        By::Status => (
            "NULLIF(status, 0) AS v".into(),
            d.to_text("r.v"),
            "v".to_string(),
        ),
        other => {
            let col = match other {
                By::Path => "path",
                By::Referer => "referer",
                By::Agent => "user_agent",
                By::Host => "host",
                _ => "method",
            };
            (format!("{col} AS v"), "r.v".into(), "(v IS NULL), v".into())
        }
    };
    let group_src: Vec<String> = key_cols
        .split(", ")
        .map(|c| c.split(' ').next().unwrap_or(c).to_string())
        .collect();
    let clients = if by == By::Ip {
        "1".to_string()
    } else {
        "count(DISTINCT ckey)".into()
    };
    let metric = match sort {
        Sort::Requests => "requests DESC",
        Sort::Bytes => "bytes DESC, requests DESC",
        Sort::Clients => "clients DESC, requests DESC",
        Sort::Errors => "errors DESC, requests DESC",
    };
    let grouped = format!(
        "SELECT {key_cols}, count(*) AS requests, coalesce(sum(bytes), 0) AS bytes, {clients} AS clients,\n    \
count(CASE WHEN status >= 400 THEN 1 END) AS errors, min(ts_ms) AS first_seen_ms, max(ts_ms) AS last_seen_ms\n    \
FROM logscope_sel GROUP BY {}",
        group_src.join(", ")
    );
    let ranked = format!(
        "SELECT g.*, row_number() OVER (ORDER BY {metric}, {order_value}) AS rk, count(*) OVER () AS distinct_values FROM ({grouped}) g"
    );
    let inner = match by {
        By::Ip => t.labelled(&ranked, 32, 128),
        By::Prefix => t.labelled(&ranked, t.classifier.v4_len, t.classifier.v6_len),
        _ => ranked,
    };
    let keep = if limit == 0 {
        String::new()
    } else {
        format!(" WHERE r.rk <= {limit}")
    };
    s.result(
        "rows",
        format!(
            "SELECT r.rk AS rank, {value} AS value, r.requests, {} AS share, r.bytes, {} AS bytes_share, r.clients,\n  \
r.errors, {} AS error_share, r.first_seen_ms, r.last_seen_ms, r.distinct_values\n  \
FROM ({inner}) r CROSS JOIN (SELECT count(*) AS tr, coalesce(sum(bytes), 0) AS tb FROM logscope_sel) t{keep}\n  \
ORDER BY r.rk",
            d.share("r.requests", "t.tr"),
            d.share("r.bytes", "t.tb"),
            d.share("r.errors", "r.requests"),
        ),
    );
    s
}
