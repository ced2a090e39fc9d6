//! SQL twins of the reports: the SQL that computes a report over the dataset's Parquet
//! files in DuckDB, Spark or ClickHouse, with logscope's classification written out — heavy
//! rules as `CASE`/regex expressions, the prefix from `ip_hi`/`ip_lo` arithmetic, the
//! identity from `user`/`has_cookie`, and the agent classes (woothee and the crawler
//! lists, which SQL cannot express) as a `VALUES` table of the dataset's distinct
//! User-Agent strings, classified by logscope when the query is written.
//!
//! A [`Script`] is a list of statements, each after a marker line: `-- setup: NAME`
//! (temporary views; inlined as `WITH` for ClickHouse) or `-- result: NAME` (a result set
//! whose columns are named like the fields of the report's JSON).

pub mod agents;
pub mod availability;
pub mod concentration;
pub mod dialect;
pub mod heavy;
pub mod top;

use std::fmt::Write as _;

pub use dialect::Dialect;

use crate::classify::{AgentInfo, Classifier, Filter};

/// The time zone of buckets and periods.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Zone {
    /// A fixed offset from UTC in ms (UTC is 0).
    Fixed(i64),
    /// An IANA zone name.
    Named(String),
}

/// One distinct User-Agent string of the dataset and logscope's class of it.
#[derive(Clone, Debug)]
pub struct AgentRow {
    /// The string as stored.
    pub ua: String,
    /// logscope's id of the class (one per distinct [`AgentInfo`]; 0 = no agent).
    pub id: u32,
    /// The class.
    pub info: AgentInfo,
}

/// Everything a twin needs besides the report's own options.
pub struct Twin<'a> {
    /// The engine.
    pub dialect: Dialect,
    /// The Parquet files: a path or URL glob (`/data/requests/*.parquet`,
    /// `s3://bucket/logs/requests/*.parquet`).
    pub source: String,
    /// The zone of buckets and periods.
    pub zone: Zone,
    /// The row filter (period and selection), as `FilterArgs` built it.
    pub filter: &'a Filter,
    /// The classifier (prefix lengths, identity rules, the agent classes).
    pub classifier: &'a Classifier,
    /// The distinct User-Agent strings and their classes.
    pub agents: &'a [AgentRow],
}

/// A statement of a [`Script`].
#[derive(Clone, Debug)]
pub struct Statement {
    /// A result set (else a setup view).
    pub result: bool,
    /// A setup view materialised once (a temporary table: its rows are used many
    /// times, and recomputing them at each use is slow in every engine).
    pub table: bool,
    /// Its name.
    pub name: String,
    /// The SQL, without the final `;`.
    pub sql: String,
}

/// Statements to run in order.
#[derive(Clone, Debug, Default)]
pub struct Script {
    /// The statements.
    pub statements: Vec<Statement>,
    /// Comment lines for the top (what the twin does not do, how to run it).
    pub notes: Vec<String>,
}

impl Script {
    /// Adds a setup view.
    pub fn view(&mut self, name: &str, sql: String) {
        self.statements.push(Statement {
            result: false,
            table: false,
            name: name.into(),
            sql,
        });
    }

    /// Adds a setup view materialised as a temporary table.
    pub fn table(&mut self, name: &str, sql: String) {
        self.statements.push(Statement {
            result: false,
            table: true,
            name: name.into(),
            sql,
        });
    }

    /// Adds a result set.
    pub fn result(&mut self, name: &str, sql: String) {
        self.statements.push(Statement {
            result: true,
            table: false,
            name: name.into(),
            sql,
        });
    }

    /// The script's text for `d` (`header`: the engine's run hint).
    pub fn render(&self, d: Dialect, header: &str) -> String {
        let mut out = String::new();
        out.push_str(header);
        for n in &self.notes {
            let _ = writeln!(out, "-- {}", n.replace(['\n', '\r'], " "));
        }
        match d {
            Dialect::Spark => {
                out.push_str("-- setup: zone\nSET spark.sql.session.timeZone = UTC;\n");
                // Spark plans a cached view's whole lineage at each use (a twin's steps
                // would be planned again and again): its tables are written once, as
                // Parquet tables of a database of their own.
                if self.statements.iter().any(|s| s.table) {
                    out.push_str("-- setup: database\nCREATE DATABASE IF NOT EXISTS logscope_twin;\n-- setup: use\nUSE logscope_twin;\n");
                }
            }
            // An outer join's missing side is NULL, as in SQL (ClickHouse's default fills
            // in zeros and empty strings), and a name is the column before an alias of
            // the same SELECT (`count(CASE WHEN selected …) AS selected`).
            Dialect::ClickHouse => out.push_str(
                "-- setup: joins\nSET join_use_nulls = 1;\n-- setup: names\nSET prefer_column_name_to_alias = 1;\n",
            ),
            Dialect::DuckDb => {}
        }
        // ClickHouse has no temporary views: the views so far are inlined as `WITH`.
        let mut views: Vec<&Statement> = Vec::new();
        let inline = |views: &[&Statement], sql: &str| -> String {
            if d.temp_views() || views.is_empty() {
                return sql.to_string();
            }
            let with: Vec<String> = views
                .iter()
                .map(|v| format!("{} AS ({})", v.name, v.sql))
                .collect();
            match sql.strip_prefix("WITH ") {
                Some(b) => format!("WITH {},\n{b}", with.join(",\n")),
                None => format!("WITH {}\n{sql}", with.join(",\n")),
            }
        };
        for s in &self.statements {
            if s.result {
                let _ = writeln!(out, "-- result: {}\n{};", s.name, inline(&views, &s.sql));
            } else if s.table {
                if d == Dialect::Spark {
                    let _ = writeln!(
                        out,
                        "-- setup: {n}_drop\nDROP TABLE IF EXISTS {n};",
                        n = s.name
                    );
                }
                let _ = writeln!(
                    out,
                    "-- setup: {}\n{} {};",
                    s.name,
                    d.create_table(&s.name),
                    inline(&views, &s.sql)
                );
            } else if d.temp_views() {
                let _ = writeln!(
                    out,
                    "-- setup: {}\n{} {};",
                    s.name,
                    d.create_view(&s.name),
                    s.sql
                );
            } else {
                views.push(s);
            }
        }
        out
    }
}

/// Special:Search in the forms the MediaWiki rules know (case-insensitive).
const SPECIAL_SEARCH: &str = "special:search|special%3asearch|특수:검색|%ed%8a%b9%ec%88%98:%ea%b2%80%ec%83%89|%ed%8a%b9%ec%88%98%3a%ea%b2%80%ec%83%89";

/// The sort order of keys (logscope's `key_cmp`): IPv4 then IPv6 numerically (the
/// halves as unsigned), then names.
pub fn key_order(p: &str) -> String {
    format!(
        "{p}pfam, ({p}khi < 0), {p}khi, ({p}klo < 0), {p}klo, {p}kname",
        p = p
    )
}

impl Twin<'_> {
    /// The heavy class of a row (`NULL` = not heavy), from `path`, `query`, `method`.
    pub fn heavy_case(&self) -> String {
        let d = self.dialect;
        let mut arms = Vec::new();
        let heavy = &self.classifier.heavy;
        for c in heavy.rules() {
            let mut conds = Vec::new();
            if !c.methods.is_empty() {
                let ms: Vec<String> = c
                    .methods
                    .iter()
                    .map(|m| d.lit(&m.to_ascii_uppercase()))
                    .collect();
                conds.push(format!("upper(method) IN ({})", ms.join(", ")));
            }
            if let Some(p) = &c.path {
                conds.push(d.rx("coalesce(path, '')", p.as_str()));
            }
            if let Some(q) = &c.query {
                conds.push(d.rx("coalesce(query, '')", q.as_str()));
            }
            let cond = if conds.is_empty() {
                "TRUE".to_string()
            } else {
                conds.join(" AND ")
            };
            let then = if c.exclude {
                d.null_text()
            } else {
                d.lit(&c.name)
            };
            arms.push(format!("WHEN {cond} THEN {then}"));
        }
        if let Some(paths) = heavy.mediawiki_paths() {
            let paths: Vec<String> = paths.iter().map(|s| d.lit(s)).collect();
            arms.push(format!(
                "WHEN {} THEN 'search'",
                d.rx(
                    "coalesce(path, '')",
                    &format!("(^|/)(?i:{SPECIAL_SEARCH})(&[^/]*)?$")
                )
            ));
            let key = |k: &str| d.rx("query", &format!("(^|&){k}(=|&|$)"));
            let action = |v: &str| d.rx("query", &format!("(^|&)action=(?i:{v})(&|$)"));
            let title = d.rx(
                "query",
                &format!("(^|&)title=(?i:{SPECIAL_SEARCH})(/[^&]*)?(&|$)"),
            );
            if !paths.is_empty() {
                arms.push(format!(
                    "WHEN path IN ({}) AND query IS NOT NULL THEN CASE WHEN {} THEN 'diff' WHEN {} THEN 'oldid' WHEN {} THEN 'history' WHEN {} THEN 'info' WHEN {} OR {} THEN 'search' END",
                    paths.join(", "),
                    key("diff"),
                    key("oldid"),
                    action("history"),
                    action("info"),
                    key("search"),
                    title
                ));
            }
        }
        if arms.is_empty() {
            return d.null_text();
        }
        format!("CASE {} END", arms.join(" "))
    }

    /// The identity of a row (`anonymous`, `identified`, `unknown`).
    pub fn identity_case(&self) -> String {
        let r = &self.classifier.identity;
        let u = self.dialect.q("user");
        format!(
            "CASE WHEN {u} IS NOT NULL AND {u} <> '' AND {u} <> '-' THEN 'identified' WHEN has_cookie = FALSE THEN 'anonymous' WHEN has_cookie = TRUE THEN '{}' ELSE '{}' END",
            if r.session_cookie.is_some() {
                "identified"
            } else {
                "unknown"
            },
            if r.anonymous_without_user {
                "anonymous"
            } else {
                "unknown"
            }
        )
    }

    /// The agent table: (ua, agent_id, label, family, device, bot_kind, declared, sel).
    fn agents_values(&self) -> String {
        let d = self.dialect;
        let sel = |i: &AgentInfo| self.filter.agent.as_ref().is_none_or(|s| s.matches(i));
        let ch = d == Dialect::ClickHouse;
        // ClickHouse's `values()` table function takes the types once; the others a
        // typed first row.
        let null = if ch {
            "NULL".to_string()
        } else {
            d.null_text()
        };
        let mut rows = vec![format!(
            "({null}, {}, {null}, {null}, {null}, {null}, FALSE, FALSE)",
            if ch { "0" } else { "CAST(0 AS BIGINT)" }
        )];
        for a in self.agents {
            rows.push(format!(
                "({}, {}, {}, {}, {}, {}, {}, {})",
                d.lit(&a.ua),
                a.id,
                d.lit(&a.info.label),
                d.lit(&a.info.family),
                d.lit(a.info.device.name()),
                a.info.bot.map_or_else(|| null.clone(), |k| d.lit(k.name())),
                if a.info.declared { "TRUE" } else { "FALSE" },
                if sel(&a.info) { "TRUE" } else { "FALSE" }
            ));
        }
        if ch {
            return format!(
                "SELECT * FROM values('ua Nullable(String), agent_id Int64, label Nullable(String), family Nullable(String), device Nullable(String), bot_kind Nullable(String), declared Bool, sel Bool',\n  {}\n)",
                rows.join(",\n  ")
            );
        }
        format!(
            "SELECT * FROM (VALUES\n  {}\n) AS v(ua, agent_id, label, family, device, bot_kind, declared, sel)",
            rows.join(",\n  ")
        )
    }

    /// A prefix mask: the halves kept of a `len`-bit prefix of the 64-bit half `half`
    /// (0 = high, 1 = low) of a 128-bit address.
    fn mask(len: u32, half: u32) -> i64 {
        let keep = (len as i64 - 64 * half as i64).clamp(0, 64);
        if keep == 0 {
            0
        } else if keep == 64 {
            -1
        } else {
            (u64::MAX << (64 - keep)) as i64
        }
    }

    /// The selection (everything of the filter but the period) as a condition over the
    /// base rows; `Err` names what cannot be written in SQL.
    fn selection(&self) -> String {
        let d = self.dialect;
        let f = self.filter;
        let mut c = Vec::new();
        if let Some(h) = f.heavy {
            c.push(format!(
                "heavy_class IS {}NULL",
                if h { "NOT " } else { "" }
            ));
        }
        if let Some(i) = f.identity {
            c.push(format!("identity = '{}'", i.name()));
        }
        if let Some(s) = &f.status {
            let mut ranges = Vec::new();
            let mut start: Option<u16> = None;
            for code in 0..=1000u16 {
                let inside = code < 1000 && s.contains(code);
                match (inside, start) {
                    (true, None) => start = Some(code),
                    (false, Some(a)) => {
                        ranges.push(if a == code - 1 {
                            format!("status = {a}")
                        } else {
                            format!("status BETWEEN {a} AND {}", code - 1)
                        });
                        start = None;
                    }
                    _ => {}
                }
            }
            if ranges.is_empty() {
                c.push("FALSE".into());
            } else {
                c.push(format!("({})", ranges.join(" OR ")));
            }
        }
        if let Some(h) = &f.host {
            let text = h.to_string();
            let (wild, name) = match text.strip_prefix("*.") {
                Some(n) => (true, n.to_string()),
                None => (false, text.clone()),
            };
            let n = regex::escape(&name);
            let sub = if wild { "(.+\\.)?" } else { "" };
            c.push(d.rx(
                "host",
                &format!("(?i)^(\\[{sub}{n}\\].*|{sub}{n}(:[0-9]*)?)$"),
            ));
        }
        if !f.clients.is_empty() {
            let mut nets = Vec::new();
            for n in &f.clients {
                let (bits, len) = match n {
                    ipnet::IpNet::V4(v4) => (
                        u128::from(v4.network().to_ipv6_mapped()),
                        96 + u32::from(v4.prefix_len()),
                    ),
                    ipnet::IpNet::V6(v6) => (u128::from(v6.network()), u32::from(v6.prefix_len())),
                };
                let (hi, lo) = ((bits >> 64) as u64 as i64, bits as u64 as i64);
                let (mh, ml) = (Self::mask(len, 0), Self::mask(len, 1));
                nets.push(format!(
                    "({} = {} AND {} = {})",
                    d.band("ip_hi", &d.int(mh)),
                    d.int(hi & mh),
                    d.band("ip_lo", &d.int(ml)),
                    d.int(lo & ml)
                ));
            }
            c.push(format!("ip_hi IS NOT NULL AND ({})", nets.join(" OR ")));
        }
        if f.agent.is_some() {
            c.push("agent_sel".into());
        }
        if let Some(p) = &f.path {
            c.push(d.rx("coalesce(path, '')", p.as_str()));
        }
        if c.is_empty() {
            "TRUE".into()
        } else {
            c.join(" AND ")
        }
    }

    /// The base views: `logscope_agents` and `logscope_rows` (the period's rows with
    /// `ts_ms`, `local_ms`, the prefix key `pfam/phi/plo/pname` and its text key `pkey`,
    /// the client key `ckey`, `heavy_class`, `identity`, the agent's class columns and
    /// `selected`).
    pub fn base(&self, script: &mut Script) {
        let d = self.dialect;
        let cls = self.classifier;
        script.view("logscope_agents", self.agents_values());
        let epoch = d.epoch_ms("ts");
        let local = match &self.zone {
            Zone::Fixed(0) => epoch.clone(),
            Zone::Fixed(o) => format!("({epoch} + {o})"),
            Zone::Named(z) => d.local_ms("ts", z),
        };
        let v4 = format!("r.ip_hi = 0 AND {} = 65535", d.shr("r.ip_lo", 32));
        let (v4len, v6len) = (u32::from(cls.v4_len), u32::from(cls.v6_len));
        let m4 = Self::mask(96 + v4len, 1);
        let (m6h, m6l) = (Self::mask(v6len, 0), Self::mask(v6len, 1));
        let phi = format!(
            "CASE WHEN r.ip_hi IS NULL THEN NULL WHEN {v4} THEN 0 ELSE {} END",
            d.band("r.ip_hi", &d.int(m6h))
        );
        let plo = format!(
            "CASE WHEN r.ip_hi IS NULL THEN NULL WHEN {v4} THEN {} ELSE {} END",
            d.band("r.ip_lo", &d.int(m4)),
            d.band("r.ip_lo", &d.int(m6l))
        );
        let mut period = Vec::new();
        if let Some(s) = self.filter.since_ms {
            period.push(format!("r.ts >= {}", d.instant(s)));
        }
        if let Some(u) = self.filter.until_ms {
            period.push(format!("r.ts < {}", d.instant(u)));
        }
        let period = if period.is_empty() {
            String::new()
        } else {
            format!("\n  WHERE {}", period.join(" AND "))
        };
        let inner = format!(
            "SELECT {epoch} AS ts_ms, {local} AS local_ms, r.ts, coalesce(r.status, 0) AS status, coalesce(r.bytes, 0) AS bytes, \
r.method, coalesce(r.path, r.request) AS path, r.query, r.host, r.referer, r.user_agent, r.client, r.{user}, r.has_cookie, r.ip_hi, r.ip_lo,\n  \
CASE WHEN r.ip_hi IS NULL THEN 2 WHEN {v4} THEN 0 ELSE 1 END AS pfam, {phi} AS phi, {plo} AS plo,\n  \
CASE WHEN r.ip_hi IS NULL THEN coalesce(r.client, '(none)') END AS pname,\n  \
CASE WHEN a.ua IS NULL THEN 0 ELSE a.agent_id END AS agent_id,\n  \
coalesce(a.label, 'unknown') AS agent_label, coalesce(a.family, '(none)') AS agent_family,\n  \
coalesce(a.device, 'unknown') AS agent_device, a.bot_kind AS agent_bot, coalesce(a.declared, FALSE) AS agent_declared,\n  \
CASE WHEN a.ua IS NULL THEN {no_sel} ELSE a.sel END AS agent_sel\n  \
FROM {src} r LEFT JOIN logscope_agents a ON r.user_agent = a.ua{period}",
            no_sel = if no_agent_sel(self.filter) {
                "TRUE"
            } else {
                "FALSE"
            },
            src = d.source(&self.source),
            user = d.q("user"),
        );
        let mid = format!(
            "SELECT x.*, {} AS heavy_class, {} AS identity,\n  \
CASE WHEN pfam = 2 THEN 'n' || pname ELSE {} || ',' || {} || ',' || {} END AS pkey,\n  \
CASE WHEN pfam = 2 THEN 'n' || pname ELSE {} || ',' || {} END AS ckey\n  \
FROM ({inner}) x",
            self.heavy_case(),
            self.identity_case(),
            d.to_text("pfam"),
            d.to_text("phi"),
            d.to_text("plo"),
            d.to_text("ip_hi"),
            d.to_text("ip_lo"),
        );
        script.view(
            "logscope_rows",
            format!(
                "SELECT y.*, ({}) AS selected FROM ({mid}) y",
                self.selection()
            ),
        );
    }

    /// An outer query over `inner` (columns `pfam, khi, klo, kname` and others) adding
    /// `label`: the key as logscope prints it (`203.0.113.0/24`, `2001:db8::/48`, an
    /// address without a length at 32/128 bits, host names as logged).
    pub fn labelled(&self, inner: &str, v4len: u8, v6len: u8) -> String {
        let d = self.dialect;
        let oct = |k: u32| d.to_text(&d.band(&d.shr("klo", 8 * k), "255"));
        let v4 = format!(
            "{} || '.' || {} || '.' || {} || '.' || {}",
            oct(3),
            oct(2),
            oct(1),
            oct(0)
        );
        let grp = |half: &str, k: u32| d.hex(&d.band(&d.shr(half, 48 - 16 * k), "65535"));
        let groups: Vec<String> = (0..4)
            .map(|k| grp("khi", k))
            .chain((0..4).map(|k| grp("klo", k)))
            .collect();
        let full = groups.join(" || ':' || ");
        let mut arms = String::new();
        for run in (2..=8).rev() {
            let re = format!("^(.*?)(^|:)0(:0){{{}}}(:|$)(.*)$", run - 1);
            let _ = write!(
                arms,
                " WHEN {} THEN {}",
                d.rx("l1._v6", &re),
                d.rx_replace_first("l1._v6", &re, "$1::$5")
            );
        }
        let s4 = if v4len >= 32 {
            String::new()
        } else {
            format!(" || '/{v4len}'")
        };
        let s6 = if v6len >= 128 {
            String::new()
        } else {
            format!(" || '/{v6len}'")
        };
        format!(
            "SELECT l1.*, CASE WHEN l1.pfam = 2 THEN l1.kname WHEN l1.pfam = 0 THEN l1._v4{s4} ELSE (CASE{arms} ELSE l1._v6 END){s6} END AS label\n  \
FROM (SELECT l0.*, CASE WHEN pfam = 0 THEN {v4} END AS _v4, CASE WHEN pfam = 1 THEN {full} END AS _v6 FROM ({inner}) l0) l1"
        )
    }
}

/// Whether rows without a User-Agent pass `--agent`.
pub(crate) fn no_agent_sel(filter: &Filter) -> bool {
    filter
        .agent
        .as_ref()
        .is_none_or(|s| s.matches(crate::classify::AgentClassifier::default().info(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks() {
        assert_eq!(Twin::mask(48, 0), (u64::MAX << 16) as i64);
        assert_eq!(Twin::mask(48, 1), 0);
        assert_eq!(Twin::mask(120, 1), (u64::MAX << 8) as i64);
        assert_eq!(Twin::mask(128, 1), -1);
        assert_eq!(Twin::mask(0, 0), 0);
    }
}
