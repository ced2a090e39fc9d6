//! `logscope sql QUERY`: one SQL statement (polars' SQL) over the dataset — the table
//! `requests` and the view `requests_x` with the reports' derived columns — written
//! through the one report output path (`--format text|md|csv|json|html`, `--out`).

use crate::engine::envelope::{Envelope, Inputs};
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use logscope_core::escape;
use logscope_core::forensics::doc::{Doc, Section};
use logscope_core::table::{Align, Cell, Table, fraction_data};
use polars::prelude::{AnyValue, DataFrame, TimeUnit};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};

use super::exit;
use super::filters::{FilterArgs, RULES_HELP};
use super::memlimit;
use super::output::{self, OutputArgs};
use super::usage_error;
use crate::store::Dataset;
use crate::store::sql::{self as store_sql, DERIVED, SqlError, TABLE, VIEW};

/// A query every dataset answers: the example in messages.
pub const EXAMPLE: &str = "logscope sql 'SELECT status, count(*) AS requests FROM requests GROUP BY status ORDER BY status'";

/// The help after the options: tables, columns with types, examples.
pub fn after_help() -> String {
    let mut s = String::from("Tables:\n");
    s.push_str(&format!(
        "  {TABLE}      the dataset as stored (the committed snapshot; text as the server wrote it,\n\
         \x20             a byte that is not UTF-8 as a character U+EF80-U+EFFF; a request that\n\
         \x20             is not HTTP in `request`, its path null; no status null):\n"
    ));
    for (name, dt) in store_sql::requests_schema().iter() {
        s.push_str(&format!(
            "    {:<16} {}\n",
            name.as_str(),
            store_sql::type_name(dt)
        ));
    }
    s.push_str(&format!(
        "  {VIEW}    every column of {TABLE}, then (classified once per distinct value,\n\
         \x20             with --rules, --prefix-v4/--prefix-v6, --trust-proxy, --session-cookie):\n"
    ));
    for (name, ty, what) in DERIVED {
        s.push_str(&format!("    {name:<16} {ty:<7} {what}\n"));
    }
    s.push_str(
        "\n`month` (YYYY-MM, UTC) is the partition: a WHERE on month, or comparing ts with a\n\
         constant (ts >= '2026-09-25 14:00:00'), opens only the parts that can match\n\
         (--explain shows how many). ip_hi/ip_lo hold the address as 128 bits (IPv4 as\n\
         ::ffff:a.b.c.d): prefer `prefix` and `real_client` of requests_x. Times are UTC.\n\
         \n\
         Examples:\n\
         \x20 logscope sql 'SELECT status, count(*) AS requests FROM requests\n\
         \x20   WHERE ts >= '\\''2026-09-25 14:00:00'\\'' AND ts < '\\''2026-09-25 15:00:00'\\''\n\
         \x20   GROUP BY status ORDER BY status'\n\
         \x20 logscope sql 'SELECT prefix, count(*) AS requests FROM requests_x\n\
         \x20   GROUP BY prefix ORDER BY requests DESC, prefix LIMIT 10'\n\
         \x20 logscope sql 'SELECT agent_family, count(*) AS heavy FROM requests_x WHERE heavy\n\
         \x20   GROUP BY 1 ORDER BY 2 DESC' --format csv\n\
         \x20 logscope sql - --format json < query.sql          # the query from standard input\n\
         \n\
         The dialect is polars' SQL (PostgreSQL-like: GROUP BY, ORDER BY, LIMIT, JOIN, WITH,\n\
         window functions, regexp_like, date_part, strftime(ts, '%Y-%m-%d %H') …) with\n\
         DuckDB's date_trunc('hour', ts) (second … year; weeks start on Monday),\n\
         epoch_ms(ts) and epoch(ts); now() and current_timestamp are refused (an answer\n\
         never depends on when it is asked). A column without a name is named by its\n\
         text, as DuckDB names it: count(*). Only the two tables above can be read:\n\
         table functions (read_parquet, read_csv, …) are refused. A query that\n\
         polars rejects exits 2 with its message, and so does one with an expression\n\
         nested more than {depth} levels deep (each operator of a chain such as 1+1+… or\n\
         a OR b OR …, each WHEN of a CASE is a level; write long ORs as IN (…)). A query\n\
         that needs more memory than --memory-limit stops with a message and exit 1.",
    );
    s.replace("{depth}", &store_sql::MAX_DEPTH.to_string())
}

/// `--memory-limit` when not given: 4 GiB, or half the physical memory when less.
pub fn default_memory_limit() -> u64 {
    let four = 4u64 << 30;
    memlimit::physical_memory().map_or(four, |m| four.min(m / 2).max(64 << 20))
}

/// A `--memory-limit` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryLimit {
    /// At most this many bytes.
    Bytes(u64),
    /// `none`: no limit.
    None,
}

fn parse_memory_limit(s: &str) -> Result<MemoryLimit, String> {
    if s.trim().eq_ignore_ascii_case("none") {
        return Ok(MemoryLimit::None);
    }
    memlimit::parse_size(s).map(MemoryLimit::Bytes)
}

/// Arguments of `logscope sql`.
#[derive(Debug, Args)]
#[command(after_help = after_help())]
pub struct SqlArgs {
    /// One SQL statement (polars' dialect) over the tables below; `-` reads it from
    /// standard input.
    #[arg(value_name = "QUERY")]
    pub query: String,

    /// Also print on standard error how many of the dataset's parts each scan of
    /// `requests` opened (and their months), and whether a GROUP BY was counted per
    /// dictionary code in the pages instead.
    #[arg(long)]
    pub explain: bool,

    /// The most memory the query may take: SIZE is a number and a unit (512MiB, 4GiB,
    /// 1.5G; K/M/G/T and KiB/MiB/GiB/TiB are powers of 1024, KB/MB/GB/TB of 1000), or
    /// `none`. Over it, the query stops with a message and exit status 1 (a cross join
    /// would otherwise take whatever the machine has). [default: 4GiB, or half the
    /// physical memory when less]
    #[arg(long, value_name = "SIZE", value_parser = parse_memory_limit)]
    pub memory_limit: Option<MemoryLimit>,

    /// Classification rules for requests_x (see [`RULES_HELP`]).
    #[arg(long, value_name = "FILE", help = RULES_HELP, help_heading = "Classification")]
    pub rules: Option<PathBuf>,

    /// The network database for requests_x's asn, as_name and country: iptoasn's TSV
    /// or a MaxMind-format .mmdb (GeoLite2, DB-IP, IPinfo lite); nothing is downloaded.
    #[arg(long, value_name = "FILE", help_heading = "Classification")]
    pub asn_db: Option<PathBuf>,

    /// IPv4 prefix length of requests_x.prefix [default: 24].
    #[arg(long, value_name = "BITS", value_parser = clap::value_parser!(u8).range(0..=32), help_heading = "Classification")]
    pub prefix_v4: Option<u8>,

    /// IPv6 prefix length of requests_x.prefix [default: 48].
    #[arg(long, value_name = "BITS", value_parser = clap::value_parser!(u8).range(0..=128), help_heading = "Classification")]
    pub prefix_v6: Option<u8>,

    /// Trusted proxy network: when the logged client is in it, requests_x's
    /// real_client (and prefix) is the right-most X-Forwarded-For address outside every
    /// trusted network. Repeat or comma-separate.
    #[arg(
        long,
        value_name = "CIDR",
        value_delimiter = ',',
        help_heading = "Classification"
    )]
    pub trust_proxy: Vec<String>,

    /// Session cookie that marks logged-in users (requests_x.identity; see `logscope
    /// heavy --help`).
    #[arg(long, value_name = "NAME", help_heading = "Classification")]
    pub session_cookie: Option<String>,

    /// Text output: one `column  value` line per cell, a record per row (as `psql \\x`).
    /// Without it (or --no-vertical) text is a table, and records only when a table
    /// would cut its cells below 12 characters (a `SELECT *`).
    #[arg(long, overrides_with = "no_vertical")]
    pub vertical: bool,

    /// Text output is always a table, its widest cells cut to fit.
    #[arg(long, overrides_with = "vertical")]
    pub no_vertical: bool,

    /// Where and how the result is written.
    #[command(flatten)]
    pub out: OutputArgs,
}

/// The fewest characters a cut cell keeps before text output turns to records.
pub const MIN_CELL: usize = 12;

/// Runs `logscope sql`.
pub fn run(data: &Path, args: SqlArgs) -> anyhow::Result<i32> {
    if let Err(m) = args.out.check() {
        return Ok(output::usage(m));
    }
    let limit = match args.memory_limit {
        Some(MemoryLimit::None) => None,
        Some(MemoryLimit::Bytes(n)) => Some(n),
        None => Some(default_memory_limit()),
    };
    if let Some(n) = limit {
        // Armed before the query is read: a query on standard input counts too.
        memlimit::arm(
            n,
            &format!(
                "logscope: error: sql: the query needs more than {} of memory (--memory-limit); \
                 narrow it (a WHERE on month or ts, LIMIT, fewer joins) or raise --memory-limit",
                memlimit::size_label(n)
            ),
        );
    }
    let query = if args.query == "-" {
        let mut q = String::new();
        std::io::stdin()
            .read_to_string(&mut q)
            .context("sql: cannot read the query from standard input")?;
        q
    } else {
        args.query.clone()
    };
    if query.trim().is_empty() {
        return Err(usage_error(format!(
            "sql: the query is empty (e.g. {EXAMPLE})"
        )));
    }
    let filters = FilterArgs {
        tz: "UTC".into(),
        rules: args.rules.clone(),
        prefix_v4: args.prefix_v4,
        prefix_v6: args.prefix_v6,
        trust_proxy: args.trust_proxy.clone(),
        session_cookie: args.session_cookie.clone(),
        asn_db: args.asn_db.clone(),
        ..FilterArgs::default()
    };
    let mut sel = filters.build()?;
    let ds = Dataset::open_read(data);
    if !ds.exists() {
        bail!(
            "{}: no dataset here yet; run `logscope ingest FILE` first",
            escape::path(data)
        );
    }
    // `heavy_class` in the view: the rows decide what the rules file leaves open.
    if query.to_ascii_lowercase().contains("heavy") {
        sel.classifier.needs.heavy = true;
        let source = crate::engine::rows::RowSource {
            data: data.to_path_buf(),
            files: Vec::new(),
            format: None,
            parse: Default::default(),
            max_bad: 1.0,
            full_paths: false,
            opened: Default::default(),
            quiet: false,
        };
        sel.settle_heavy(&source)?;
    }
    let res = match store_sql::run(&ds, &query, sel.classifier, sel.networks.clone()) {
        Ok(r) => r,
        Err(SqlError::Query(m)) => {
            // polars says "unsupported function 'x'": say which dialect, and what works.
            let functions = if m.contains("unsupported function") {
                format!(
                    "\n(the dialect is polars' SQL, PostgreSQL-like; its time functions: {})",
                    crate::store::sql_time::TIME_FUNCTIONS
                )
            } else {
                String::new()
            };
            return Err(usage_error(format!(
                "sql: {m}{functions}\n(tables: {TABLE}, {VIEW}; see `logscope sql --help`; e.g. {EXAMPLE})"
            )));
        }
        Err(e @ SqlError::Time(_)) => {
            return Err(usage_error(format!("sql: {e}")));
        }
        Err(e @ SqlError::TooDeep) => return Err(usage_error(format!("sql: {e}"))),
        // "sql reads only the dataset's tables …"
        Err(e @ SqlError::TableFunction(_)) => return Err(usage_error(e.to_string())),
        Err(SqlError::Engine(m)) => bail!("sql: {m}"),
        Err(SqlError::Store(e)) => return Err(e.into()),
    };
    if args.explain {
        for r in &res.reads {
            eprintln!(
                "logscope: {TABLE}: opened {} of {} parts{}{}",
                r.parts,
                r.of,
                if r.months.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", r.months.join(", "))
                },
                if r.grouped {
                    "; grouped per dictionary code in the pages"
                } else {
                    ""
                }
            );
        }
    }
    let result = QueryResult::new(&res.frame)?;
    if args.out.format == output::OutputFormat::Text {
        let width = args.out.width();
        let table = result.table();
        let vertical = if args.vertical {
            true
        } else if args.no_vertical {
            false
        } else {
            !table.is_empty() && !table.fits(width, MIN_CELL)
        };
        if vertical {
            let mut text = result.title() + "\n\n";
            text.push_str(&table.to_records(width));
            args.out.emit(&text)?;
            return Ok(exit::OK);
        }
    }
    let mut env = Envelope::plain("sql", Inputs::dataset("dataset"));
    // Timestamps are UTC in SQL.
    env.tz = Some("UTC".into());
    args.out.emit_report(&result, &env)?;
    Ok(exit::OK)
}

/// One value of a result, typed.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer (counts).
    UInt(u64),
    /// A float.
    Float(f64),
    /// Text (as stored: escaped only when rendered).
    Text(String),
    /// An instant, RFC 3339 in UTC (milliseconds when not whole seconds).
    Time(String),
}

impl Value {
    fn of(v: &AnyValue<'_>) -> Value {
        match v {
            AnyValue::Null => Value::Null,
            AnyValue::Boolean(b) => Value::Bool(*b),
            AnyValue::Int8(x) => Value::Int(i64::from(*x)),
            AnyValue::Int16(x) => Value::Int(i64::from(*x)),
            AnyValue::Int32(x) => Value::Int(i64::from(*x)),
            AnyValue::Int64(x) => Value::Int(*x),
            AnyValue::UInt8(x) => Value::UInt(u64::from(*x)),
            AnyValue::UInt16(x) => Value::UInt(u64::from(*x)),
            AnyValue::UInt32(x) => Value::UInt(u64::from(*x)),
            AnyValue::UInt64(x) => Value::UInt(*x),
            AnyValue::Float32(x) => Value::Float(f64::from(*x)),
            AnyValue::Float64(x) => Value::Float(*x),
            AnyValue::String(s) => Value::Text(s.to_string()),
            AnyValue::StringOwned(s) => Value::Text(s.to_string()),
            AnyValue::Datetime(x, unit, _) | AnyValue::DatetimeOwned(x, unit, _) => {
                let ms = match unit {
                    TimeUnit::Milliseconds => *x,
                    TimeUnit::Microseconds => x.div_euclid(1000),
                    TimeUnit::Nanoseconds => x.div_euclid(1_000_000),
                };
                // The one time representation: RFC 3339 with milliseconds.
                Value::Time(logscope_core::time::local_rfc3339_ms(ms, 0))
            }
            AnyValue::Date(days) => Value::Time(
                logscope_core::time::local_rfc3339(i64::from(*days) * 86_400_000, 0)
                    .chars()
                    .take(10)
                    .collect(),
            ),
            other => Value::Text(other.to_string()),
        }
    }

    fn cell(&self) -> Cell {
        match self {
            Value::Null => Cell::from("NULL").with_data(""),
            Value::Bool(b) => Cell::from(b.to_string()),
            Value::Int(x) => Cell::from(x.to_string()),
            Value::UInt(x) => Cell::from(x.to_string()),
            Value::Float(f) => {
                let shown = if f.is_finite() {
                    let s = format!("{f:.6}");
                    let s = s.trim_end_matches('0').trim_end_matches('.');
                    if s == "-0" {
                        "0".to_string()
                    } else {
                        s.to_string()
                    }
                } else {
                    f.to_string()
                };
                Cell::from(shown).with_data(fraction_data(*f))
            }
            Value::Text(s) | Value::Time(s) => Cell::from(s.as_str()),
        }
    }
}

impl serde::Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_none(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(x) => s.serialize_i64(*x),
            Value::UInt(x) => s.serialize_u64(*x),
            Value::Float(f) if f.is_finite() => s.serialize_f64(*f),
            Value::Float(_) => s.serialize_none(),
            Value::Text(t) | Value::Time(t) => s.serialize_str(t),
        }
    }
}

/// A query's result: columns with their types, and the rows.
#[derive(Debug)]
pub struct QueryResult {
    /// Column names and types (as `logscope sql --help` names them).
    pub columns: Vec<(String, String)>,
    /// Whether each column is numeric (right-aligned).
    numeric: Vec<bool>,
    /// The rows.
    pub rows: Vec<Vec<Value>>,
}

impl QueryResult {
    /// The result of a collected frame.
    pub fn new(df: &DataFrame) -> anyhow::Result<QueryResult> {
        let cols = df.columns();
        let columns = cols
            .iter()
            .map(|c| (c.name().to_string(), store_sql::type_name(c.dtype())))
            .collect();
        let numeric = cols
            .iter()
            .map(|c| c.dtype().is_primitive_numeric())
            .collect();
        let mut rows = Vec::with_capacity(df.height());
        for r in 0..df.height() {
            let mut row = Vec::with_capacity(cols.len());
            for c in cols {
                row.push(Value::of(&c.get(r)?));
            }
            rows.push(row);
        }
        Ok(QueryResult {
            columns,
            numeric,
            rows,
        })
    }

    /// The title: the row count.
    fn title(&self) -> String {
        let n = self.rows.len();
        format!("{n} row{}", if n == 1 { "" } else { "s" })
    }

    /// The rows as a table.
    fn table(&self) -> Table {
        let heads: Vec<(&str, Align)> = self
            .columns
            .iter()
            .zip(&self.numeric)
            .map(|((n, _), num)| (n.as_str(), if *num { Align::Right } else { Align::Left }))
            .collect();
        let mut table = Table::new(&heads);
        for r in &self.rows {
            table.row(r.iter().map(Value::cell));
        }
        table
    }

    /// The result as a report: a title with the row count and one table.
    fn table_doc(&self) -> Doc {
        Doc {
            title: self.title(),
            sections: vec![Section {
                title: None,
                table: Some(self.table()),
                notes: Vec::new(),
            }],
            ..Doc::default()
        }
    }
}

/// JSON: `{"columns": [{"name", "type"}], "rows": [{column: value, …}], "row_count"}`,
/// the columns of each row in the query's order.
impl serde::Serialize for QueryResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Columns<'a>(&'a [(String, String)]);
        impl serde::Serialize for Columns<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.0.len()))?;
                for (name, ty) in self.0 {
                    let mut m = std::collections::BTreeMap::new();
                    m.insert("name", name.as_str());
                    m.insert("type", ty.as_str());
                    seq.serialize_element(&m)?;
                }
                seq.end()
            }
        }
        struct Row<'a>(&'a [(String, String)], &'a [Value]);
        impl serde::Serialize for Row<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(self.0.len()))?;
                for ((name, _), v) in self.0.iter().zip(self.1) {
                    m.serialize_entry(name, v)?;
                }
                m.end()
            }
        }
        struct Rows<'a>(&'a [(String, String)], &'a [Vec<Value>]);
        impl serde::Serialize for Rows<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.1.len()))?;
                for r in self.1 {
                    seq.serialize_element(&Row(self.0, r))?;
                }
                seq.end()
            }
        }
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("columns", &Columns(&self.columns))?;
        m.serialize_entry("rows", &Rows(&self.columns, &self.rows))?;
        m.serialize_entry("row_count", &self.rows.len())?;
        m.end()
    }
}

impl logscope_core::forensics::doc::Document for QueryResult {
    fn doc(&self, _width: usize) -> Doc {
        self.table_doc()
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn help_lists_every_column_with_its_type() {
        let mut cmd = crate::cli::Cli::command();
        let sql = cmd.find_subcommand_mut("sql").expect("sql");
        let help = sql.render_long_help().to_string();
        for (name, dt) in crate::store::sql::requests_schema().iter() {
            let ty = crate::store::sql::type_name(dt);
            assert!(
                help.lines()
                    .any(|l| l.split_whitespace().collect::<Vec<_>>()
                        == [name.as_str()]
                            .into_iter()
                            .chain(ty.split_whitespace())
                            .collect::<Vec<_>>()),
                "{name} {ty} not in help:\n{help}"
            );
        }
        for (name, _, _) in crate::store::sql::DERIVED {
            assert!(help.contains(&format!("    {name} ")), "{name}");
        }
    }
}
