//! `--sql duckdb|spark|trino` of the reports: instead of running a report, print the SQL
//! that computes it over the dataset's Parquet files in that engine (its "twin", see
//! `logscope_core::sqlgen`), with the same selection and classification. The agent
//! classes are a `VALUES` table of the dataset's distinct User-Agent strings classified
//! here; flags SQL cannot follow are refused (exit 2), naming them.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::Context;
use clap::Args;
use logscope_core::classify::Config;
use logscope_core::sqlgen::{self, AgentRow, Dialect, Twin, Zone};

use super::filters::{ChronoZone, FilterArgs, Selection, read_rules, rules_lookup};
use super::rows::{RowArgs, for_each_batch};
use super::usage_error;
use crate::store::scan::Columns;

/// The `--sql` options every report flattens in.
#[derive(Debug, Clone, Default, Args)]
pub struct SqlArgs {
    /// Print the SQL that computes this report in DuckDB, Spark or Trino over the
    /// dataset's Parquet files (the report is not run): duckdb, spark, trino.
    #[arg(long, value_name = "ENGINE", value_parser = engine_arg, help_heading = "SQL twin")]
    pub sql: Option<Dialect>,

    /// With --sql: the Parquet files the query reads [default: DATA/requests/*.parquet],
    /// e.g. 's3://bucket/logs/requests/*.parquet'. The agent classes still come from the
    /// local dataset (--data).
    #[arg(long, value_name = "URL", requires = "sql", help_heading = "SQL twin")]
    pub sql_source: Option<String>,
}

fn engine_arg(s: &str) -> Result<Dialect, String> {
    Dialect::parse(s).ok_or_else(|| {
        format!("{s:?} is not an engine: duckdb, spark or trino (e.g. --sql duckdb)")
    })
}

/// What a twin is built from: the selection, the config and the agent table.
pub struct Parts {
    /// The engine.
    pub dialect: Dialect,
    /// The selection.
    pub sel: Selection,
    /// The classification config (heavy rules).
    pub config: Config,
    /// The distinct agents.
    pub agents: Vec<AgentRow>,
    /// The Parquet source.
    pub source: String,
    /// The zone.
    pub zone: Zone,
}

impl Parts {
    /// The twin's context.
    pub fn twin(&self) -> Twin<'_> {
        Twin {
            dialect: self.dialect,
            source: self.source.clone(),
            zone: self.zone.clone(),
            filter: &self.sel.filter,
            classifier: &self.sel.classifier,
            heavy: &self.config.heavy,
            agents: &self.agents,
        }
    }
}

/// A usage error naming flags a twin cannot follow.
pub fn refuse(flags: &[&str]) -> anyhow::Error {
    usage_error(format!(
        "--sql: {} cannot be written in SQL; leave {} out (e.g. logscope heavy --by 1h --sql duckdb)",
        flags.join(", "),
        if flags.len() == 1 { "it" } else { "them" }
    ))
}

/// Builds the parts of a twin; `agents`: whether the report needs the agent table.
pub fn parts(
    data: &Path,
    sql: &SqlArgs,
    filters: &FilterArgs,
    rows: &RowArgs,
    agents: bool,
) -> anyhow::Result<Parts> {
    let dialect = sql.sql.expect("--sql given");
    if !rows.files.is_empty() {
        return Err(usage_error(
            "--sql writes a query over the dataset, not over FILE arguments: ingest them first (logscope ingest FILE), then e.g. logscope heavy --sql duckdb",
        ));
    }
    let mut refused = Vec::new();
    if !filters.trust_proxy.is_empty() {
        refused.push("--trust-proxy");
    }
    let rules_file = match &filters.rules {
        Some(p) => Some(p.clone()),
        None => rules_lookup()?,
    };
    let config = match &rules_file {
        Some(p) => {
            let what = if filters.rules.is_some() {
                "--rules"
            } else {
                "rules"
            };
            let text = read_rules(p, what)?;
            Config::from_toml(&text).with_context(|| p.display().to_string())?
        }
        None => Config::default(),
    };
    if !config.trust_proxy.is_empty() {
        refused.push("trust_proxy (in the rules file)");
    }
    if !refused.is_empty() {
        return Err(refuse(&refused));
    }
    let mut sel = filters.build()?;
    let zone = match sel.clock.zone() {
        ChronoZone::Fixed(o) => Zone::Fixed(i64::from(o.local_minus_utc()) * 1000),
        ChronoZone::Tz(tz) => Zone::Named(tz.name().to_string()),
    };
    let text = data.to_string_lossy().to_string();
    let remote = text.contains("://");
    let source = match &sql.sql_source {
        Some(s) => s.clone(),
        None if remote => format!("{}/requests/*.parquet", text.trim_end_matches('/')),
        None => {
            let abs = std::fs::canonicalize(data).unwrap_or_else(|_| data.to_path_buf());
            format!(
                "{}/requests/*.parquet",
                abs.to_string_lossy().trim_end_matches('/')
            )
        }
    };
    let mut list = Vec::new();
    if agents && !remote {
        let mut distinct: BTreeSet<String> = BTreeSet::new();
        let cols = Columns {
            agent: true,
            status: false,
            line: false,
            client: false,
            ..Columns::NONE
        };
        for_each_batch(data, rows, cols, None, None, |_, b| {
            let ua = &b.user_agent;
            if ua.is_coded() {
                for k in 0..ua.slots() {
                    if let Some(v) = ua.value(k as u32)
                        && !distinct.contains(v)
                    {
                        distinct.insert(v.to_string());
                    }
                }
            } else {
                for v in ua.iter().flatten() {
                    if !distinct.contains(v) {
                        distinct.insert(v.to_string());
                    }
                }
            }
        })?;
        for ua in distinct {
            let id = sel.classifier.agents.id(Some(&ua));
            let info = sel.classifier.agents.info(id).clone();
            list.push(AgentRow { ua, id, info });
        }
    } else if agents {
        eprintln!(
            "logscope: note: --data is not a local directory, so the agent table is empty (every agent counts as unknown); give the local dataset as --data and the remote files as --sql-source"
        );
    }
    Ok(Parts {
        dialect,
        sel,
        config,
        agents: list,
        source,
        zone,
    })
}

/// Prints a script.
pub fn print(p: &Parts, script: &sqlgen::Script) -> anyhow::Result<i32> {
    use std::io::Write;
    let text = script.render(p.dialect, &p.dialect.header(&p.source));
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(super::exit::OK)
}

/// `logscope heavy --sql`.
pub fn heavy(data: &Path, a: &super::heavy::HeavyArgs) -> anyhow::Result<i32> {
    let p = parts(data, &a.sql, &a.filters, &a.rows, true)?;
    let cap = a.capacity.map(|c| (c.count(), c.window_ms() as i64));
    let s = sqlgen::heavy::script(&p.twin(), a.by.ms_i64(), cap);
    print(&p, &s)
}

/// `logscope concentration --sql`.
pub fn concentration(
    data: &Path,
    a: &super::concentration::ConcentrationArgs,
) -> anyhow::Result<i32> {
    use super::concentration::By;
    if a.asn_db.is_some() || a.by == By::Asn {
        return Err(refuse(&["--by asn / --asn-db"]));
    }
    let p = parts(data, &a.sql, &a.filters, &a.rows, true)?;
    let lim = a
        .per_prefix_limit
        .map(|c| (c.count(), c.window_ms() as i64));
    let s = sqlgen::concentration::script(&p.twin(), a.by == By::Ip, a.top, lim);
    print(&p, &s)
}

/// `logscope agents --sql`.
pub fn agents(data: &Path, a: &super::agents::AgentsArgs) -> anyhow::Result<i32> {
    if a.sample > 0 {
        return Err(refuse(&["--sample"]));
    }
    let p = parts(data, &a.sql, &a.filters, &a.rows, true)?;
    let s = sqlgen::agents::script(&p.twin(), a.top);
    print(&p, &s)
}

/// `logscope top --sql`.
pub fn top(data: &Path, a: &super::top::TopArgs) -> anyhow::Result<i32> {
    use super::top::{By, Sort};
    use sqlgen::top::{By as B, Sort as S};
    let p = parts(data, &a.sql, &a.filters, &a.rows, a.filters.agent.is_some())?;
    let by = match a.by {
        By::Path => B::Path,
        By::Status => B::Status,
        By::Referer => B::Referer,
        By::Agent => B::Agent,
        By::Ip => B::Ip,
        By::Prefix => B::Prefix,
        By::Host => B::Host,
        By::Method => B::Method,
    };
    let sort = match a.sort {
        Sort::Requests => S::Requests,
        Sort::Bytes => S::Bytes,
        Sort::Clients => S::Clients,
        Sort::Errors => S::Errors,
    };
    let s = sqlgen::top::script(&p.twin(), by, sort, a.top, a.errors);
    print(&p, &s)
}

/// `logscope availability --sql`.
pub fn availability(data: &Path, a: &super::availability::AvailabilityArgs) -> anyhow::Result<i32> {
    use super::availability::{ByArg, PolicyArg};
    use logscope_core::classify::StatusSet;
    use sqlgen::availability::{Options, Policy};
    let mut refused = Vec::new();
    if matches!(a.by, ByArg::Week | ByArg::Hour) {
        refused.push("--by week/hour (month and day only)");
    }
    if a.expect_every.is_some() {
        refused.push("--expect-every");
    }
    if a.min_gap.is_some() {
        refused.push("--min-gap");
    }
    if !refused.is_empty() {
        return Err(refuse(&refused));
    }
    if let Some(p) = &a.probe {
        regex::Regex::new(p).map_err(|e| {
            usage_error(format!(
                "--probe is not a valid regex: {} (e.g. 'Special:BlankPage' or '^/healthz$')",
                super::filters::regex_problem(&e)
            ))
        })?;
    }
    let success = match &a.success {
        Some(s) => StatusSet::parse(s).map_err(|e| usage_error(format!("--success: {e}")))?,
        None if a.probe.is_some() => StatusSet::from_ranges(&[(200, 399)]),
        None => StatusSet::from_ranges(&[(100, 499)]),
    };
    let policy = StatusSet::parse_or_none(&a.policy_status)
        .map_err(|e| usage_error(format!("--policy-status: {e} (or none)")))?;
    let p = parts(data, &a.sql, &a.filters, &a.rows, a.filters.agent.is_some())?;
    let o = Options {
        probe: a.probe.as_deref(),
        day: a.by == ByArg::Day,
        success: &success,
        policy: &policy,
        policy_as: match a.policy {
            PolicyArg::Exclude => Policy::Exclude,
            PolicyArg::Success => Policy::Success,
            PolicyArg::Failure => Policy::Failure,
        },
    };
    let s = sqlgen::availability::script(&p.twin(), &o);
    print(&p, &s)
}
