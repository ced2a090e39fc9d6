//! `--sql duckdb|spark|clickhouse` of the reports: instead of running a report, print the SQL
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

use super::filters::{FilterArgs, read_rules, rules_lookup};
use super::rows::RowArgs;
use super::usage_error;
use crate::engine::clock::ChronoZone;
use crate::engine::selection::Selection;
use crate::store::scan::Columns;

/// The `--sql` options every report flattens in.
#[derive(Debug, Clone, Default, Args)]
pub struct SqlArgs {
    /// Print the SQL that computes this report in DuckDB, Spark or ClickHouse over the
    /// dataset's Parquet files (the report is not run): duckdb, spark, clickhouse.
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
        format!("{s:?} is not an engine: duckdb, spark or clickhouse (e.g. --sql duckdb)")
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

fn text_is_remote(data: &Path) -> bool {
    data.to_string_lossy().contains("://")
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
    // The networks come from a database the SQL engine does not read.
    if !filters.asn.is_empty() {
        refused.push("--asn");
    }
    if !filters.country.is_empty() {
        refused.push("--country");
    }
    if filters.impostors {
        refused.push("--impostors");
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
    // A remote dataset's rows cannot be looked at: the MediaWiki rules stay on there
    // unless the rules file says.
    if !text_is_remote(data) {
        sel.classifier.needs.heavy = true;
        sel.settle_heavy(&rows.source(data)?)?;
    }
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
    if !remote && sql.sql_source.is_none() {
        // The twins read format 4's columns (`request`, a null status) and its text.
        let version = crate::store::Dataset::open_read(data).manifest()?.version;
        if version < crate::store::manifest::VERSION {
            return Err(usage_error(format!(
                "--sql: this dataset is format {version}; its SQL twin reads format {}: \
                 run `logscope --data {} migrate` once first",
                crate::store::manifest::VERSION,
                logscope_core::escape::path(data)
            )));
        }
    }
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
        rows.source(data)?
            .for_each_batch(cols, None, None, |_, b| {
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
    let text = script.render(p.dialect, &p.dialect.header());
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(super::exit::OK)
}
