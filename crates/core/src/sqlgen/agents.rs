//! The twin of `logscope agents`: devices, families, bots and bot kinds of the
//! selection beside all traffic of the period.

use super::{Script, Twin};

/// `logscope agents --top N` (no `--sample`).
pub fn script(t: &Twin<'_>, top: usize) -> Script {
    let d = t.dialect;
    let mut s = Script::default();
    s.notes.push(
        "logscope agents twin (the agent classes are the VALUES table logscope_agents).".into(),
    );
    t.base(&mut s);
    s.result(
        "summary",
        format!(
            "SELECT count(CASE WHEN selected THEN 1 END) AS selected, count(*) AS {all},\n  \
count(CASE WHEN selected AND agent_device IN ('ios', 'android') THEN 1 END) AS mobile_selected,\n  \
count(CASE WHEN agent_device IN ('ios', 'android') THEN 1 END) AS mobile_all,\n  \
count(DISTINCT CASE WHEN selected THEN agent_id END) AS distinct_classes_selected,\n  \
count(DISTINCT agent_family) AS families_total,\n  \
count(DISTINCT CASE WHEN agent_bot IS NOT NULL THEN agent_label END) AS bots_total\n  \
FROM logscope_rows",
            all = d.q("all")
        ),
    );
    let mix = |col: &str, cond: &str, order: &str, limit: usize| {
        format!(
            "SELECT m.name, m.selected, {} AS selected_share, m.{all}, {} AS all_share\n  \
FROM (SELECT {col} AS name, count(CASE WHEN selected THEN 1 END) AS selected, count(*) AS {all} FROM logscope_rows{cond} GROUP BY {col}) m\n  \
CROSS JOIN (SELECT count(CASE WHEN selected THEN 1 END) AS st, count(*) AS at FROM logscope_rows) t\n  \
ORDER BY {order}{}",
            d.share("m.selected", "t.st"),
            d.share(&format!("m.{}", d.q("all")), "t.at"),
            if limit == 0 {
                String::new()
            } else {
                format!(" LIMIT {limit}")
            },
            all = d.q("all"),
        )
    };
    let device_order = "CASE m.name WHEN 'ios' THEN 0 WHEN 'android' THEN 1 WHEN 'desktop' THEN 2 WHEN 'other' THEN 3 WHEN 'tool' THEN 4 WHEN 'bot' THEN 5 ELSE 6 END";
    s.result("devices", mix("agent_device", "", device_order, 0));
    let ranked = &format!("m.selected DESC, m.{} DESC, m.name", d.q("all"));
    s.result("families", mix("agent_family", "", ranked, top));
    s.result(
        "bots",
        mix("agent_label", " WHERE agent_bot IS NOT NULL", ranked, top),
    );
    let kind_order = "CASE m.name WHEN 'ai' THEN 0 WHEN 'search' THEN 1 WHEN 'seo' THEN 2 WHEN 'social' THEN 3 WHEN 'monitor' THEN 4 WHEN 'scanner' THEN 5 ELSE 6 END";
    s.result(
        "bot_kinds",
        mix("agent_bot", " WHERE agent_bot IS NOT NULL", kind_order, 0),
    );
    s
}
