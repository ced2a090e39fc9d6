//! SQL over the dataset with polars' SQL: the table `requests` (exactly the parts the
//! committed manifest lists, plus the partition column `month`) and the view
//! `requests_x` (the same rows with the derived columns every report uses, each
//! classified once per distinct value and joined back).
//!
//! `requests` is a polars anonymous scan that takes the pushed-down predicate and
//! projection: conjuncts that look only at `month`, or compare `ts` with a constant,
//! are evaluated on the manifest's per-part month and `[min_ts, max_ts]` first, and
//! only the parts they can match are opened (inside a part, Parquet row-group
//! statistics skip what `ts` rules out). The snapshot is resolved once, so an ingest
//! that commits meanwhile is not seen, and a part being written is never listed.
//!
//! Before polars sees a query, its syntax tree is checked ([`check`]): only the
//! dataset's tables may be read (no table function such as `read_parquet('/any/path')`
//! in FROM), and no expression may nest deeper than [`MAX_DEPTH`] (a chain of operators
//! `1+1+…` or `a OR b OR …` nests one level per operator). Parsing, planning and
//! running happen on a thread of their own with a [`STACK`]-byte stack, so that whatever
//! passes the check cannot overflow it.

use std::any::Any;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use logscope_core::classify::{Classifier, ClientKey};
use logscope_core::forensics::netdb::NetworkDb;
use polars::prelude::*;
use polars::sql::SQLContext;
use sqlparser::ast::{
    Expr as SqlExpr, Ident, Statement, TableFactor, Visit, VisitMut, Visitor, VisitorMut,
};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::{Parser, ParserOptions};

use super::checksum;
use super::frame::{Column as Stored, ip_of_halves, schema};
use super::groups::{By, Key, group_counts};
use super::slices::{check_part, part_sums};
use super::sql_time::{self, TimeError, TimeFunctions};
use super::{Dataset, PartEntry, StoreError};

/// The dataset table.
pub const TABLE: &str = "requests";
/// The view with the derived columns.
pub const VIEW: &str = "requests_x";

/// The derived columns of [`VIEW`], in order, with their type and meaning.
pub const DERIVED: &[(&str, &str, &str)] = &[
    (
        "prefix",
        "string",
        "the client's network: /24 (IPv4), /48 (IPv6) or --prefix-v4/--prefix-v6, e.g. 203.0.113.0/24, 2001:db8:1::/48; a host name as itself",
    ),
    (
        "real_client",
        "string",
        "the client address (behind --trust-proxy: the real client), e.g. 203.0.113.7",
    ),
    (
        "device",
        "string",
        "ios, android, desktop, other, tool, bot or unknown (what the User-Agent claims)",
    ),
    (
        "agent_family",
        "string",
        "Chrome, Safari, curl, GPTBot … ((none) without a User-Agent)",
    ),
    (
        "agent",
        "string",
        "the short class reports show: the crawler's or tool's name, else the device",
    ),
    (
        "bot_kind",
        "string",
        "for declared bots: ai, search, seo, social, monitor, scanner, other-bot; else NULL",
    ),
    ("heavy", "bool", "a heavy request under the rules (--rules)"),
    (
        "heavy_class",
        "string",
        "its heavy class (search, diff, oldid, history, info or a rule's name); else NULL",
    ),
    ("identity", "string", "anonymous, identified or unknown"),
    (
        "asn",
        "string",
        "the autonomous system of real_client in --asn-db, e.g. AS64496; NULL without one",
    ),
    (
        "as_name",
        "string",
        "that autonomous system's name in --asn-db, e.g. EXAMPLE-HOSTING",
    ),
    (
        "country",
        "string",
        "real_client's country in --asn-db (ISO 3166 code, e.g. DE)",
    ),
];

/// The deepest an expression of a query may nest: each operator of a chain (`1+1+…`,
/// `a OR b OR …`), each `WHEN` of a `CASE`, each parenthesis or function call around
/// an expression is one level. polars plans expressions by recursion, in time and
/// memory that grow with the square of the depth: an `OR` chain in WHERE took 1.6 s
/// and 230 MB at 200 terms, 10 s and 1.1 GB at 500, 40 s and 4.1 GB at 1,000 (release
/// build); on the query thread's [`STACK`] a debug build overflowed only between 5,000
/// and 10,000. The SQL parser itself refuses more than 50 nested parentheses,
/// subqueries or function calls.
pub const MAX_DEPTH: usize = 200;

/// The stack of the thread a query is parsed, planned and run on (reserved address
/// space; only what the recursion touches is ever committed).
pub const STACK: usize = 256 << 20;

/// Errors of a query.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// The query is not valid SQL, or names tables, columns or functions polars does
    /// not know, or applies them to the wrong types (polars' message).
    #[error("{0}")]
    Query(String),
    /// An expression of the query nests deeper than [`MAX_DEPTH`].
    #[error(
        "the query nests too deeply: an expression has more than {MAX_DEPTH} levels (each operator of a chain such as 1+1+… or a OR b OR …, each WHEN of a CASE, each parenthesis is one); write a long OR of equalities as `column IN (v1, v2, …)`, or split the query"
    )]
    TooDeep,
    /// The query reads something other than the dataset's tables: a table function
    /// (`read_parquet('…')`, `read_csv`, …) in FROM or JOIN.
    #[error(
        "sql reads only the dataset's tables ({TABLE}, {VIEW}); table functions such as read_parquet are not allowed (found {0})"
    )]
    TableFunction(String),
    /// The query's thread could not be started, or polars failed on the query without
    /// an error (it panicked: a polars bug).
    #[error("{0}")]
    Engine(String),
    /// The query reads the wall clock (`now()`, `current_timestamp`, …): an answer
    /// must not depend on when it is asked; or uses a time function wrongly.
    #[error(transparent)]
    Time(#[from] TimeError),
    /// The dataset could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What one scan of `requests` read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanRead {
    /// Parts opened.
    pub parts: usize,
    /// Parts in the snapshot.
    pub of: usize,
    /// Months of the parts opened (sorted, distinct).
    pub months: Vec<String>,
    /// Counted per dictionary code from the pages ([`group_counts`]): a plain GROUP BY
    /// over the table, answered without polars reading its rows.
    pub grouped: bool,
}

/// A query's result and what it read.
pub struct SqlResult {
    /// The rows.
    pub frame: DataFrame,
    /// One entry per scan of `requests` (a self-join scans twice).
    pub reads: Vec<ScanRead>,
    /// Rows in the snapshot.
    pub dataset_rows: u64,
}

/// The schema of `requests` (the stored columns of format 3, then `month`). A format-2
/// dataset's parts get `client_list = false`.
pub fn requests_schema() -> Schema {
    let mut schema = schema();
    schema.with_column("month".into(), DataType::String);
    schema
}

/// A type as the help shows it.
pub fn type_name(dt: &DataType) -> String {
    match dt {
        DataType::Int32 => "int32".into(),
        DataType::Int64 => "int64".into(),
        DataType::UInt32 => "uint32".into(),
        DataType::UInt64 => "uint64".into(),
        DataType::Float64 => "float64".into(),
        DataType::Boolean => "bool".into(),
        DataType::String => "string".into(),
        DataType::Datetime(TimeUnit::Milliseconds, Some(_)) => "timestamp(ms, UTC)".into(),
        other => other.to_string(),
    }
}

/// Runs one SQL statement over the committed snapshot of `ds`, classifying with
/// `classifier` (the same rules, prefix lengths and proxies as the reports): checks it
/// ([`check`]), then plans and runs it, all on a thread with a [`STACK`]-byte stack.
pub fn run(
    ds: &Dataset,
    query: &str,
    classifier: Classifier,
    networks: Option<Arc<NetworkDb>>,
) -> Result<SqlResult, SqlError> {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("logscope-sql".into())
            .stack_size(STACK)
            .spawn_scoped(scope, move || {
                check(query)?;
                let prepared = prepare(query)?;
                run_here(
                    ds,
                    prepared.as_deref().unwrap_or(query),
                    classifier,
                    networks,
                )
            })
            .map_err(|e| SqlError::Engine(format!("cannot start the query's thread: {e}")))?;
        worker.join().unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(SqlError::Engine(format!(
                "polars failed on this query (an internal error: {what})"
            )))
        })
    })
}

/// Checks a query's syntax tree before polars plans it: no expression nests deeper than
/// [`MAX_DEPTH`] ([`SqlError::TooDeep`]) and FROM and JOIN name only tables, no table
/// functions ([`SqlError::TableFunction`]). A query that does not parse passes (polars
/// reports the error in its words). Recurses at most [`MAX_DEPTH`] expression levels,
/// whatever the query.
pub fn check(query: &str) -> Result<(), SqlError> {
    let dialect = GenericDialect {};
    let parsed = Parser::new(&dialect)
        .with_options(ParserOptions {
            trailing_commas: true,
            ..ParserOptions::default()
        })
        .try_with_sql(query)
        .and_then(|mut p| p.parse_statements());
    let Ok(statements) = parsed else {
        return Ok(());
    };
    let mut checker = Checker { depth: 0 };
    let verdict = statements.visit(&mut checker);
    free_shallow(statements);
    match verdict {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// The query as polars reads it: each unnamed computed column of its outermost SELECT
/// named by its own text, as DuckDB names it (`count(*)`, `count(DISTINCT client)`),
/// where polars would call them `len` and `client`; the time functions rewritten
/// ([`sql_time::rewrite`]). `None` when nothing changes (or the query does not parse:
/// polars reads it as it is and says what is wrong).
fn prepare(query: &str) -> Result<Option<String>, SqlError> {
    use sqlparser::ast::{SelectItem, SetExpr};
    let dialect = GenericDialect {};
    let Ok(mut statements) = Parser::new(&dialect)
        .with_options(ParserOptions {
            trailing_commas: true,
            ..ParserOptions::default()
        })
        .try_with_sql(query)
        .and_then(|mut p| p.parse_statements())
    else {
        return Ok(None);
    };
    let mut renamed = false;
    if let [Statement::Query(q)] = statements.as_mut_slice()
        && let SetExpr::Select(select) = q.body.as_mut()
    {
        for item in select.projection.iter_mut() {
            if let SelectItem::UnnamedExpr(e) = item
                && !matches!(e, SqlExpr::Identifier(_) | SqlExpr::CompoundIdentifier(_))
            {
                let name = e.to_string();
                let expr = std::mem::replace(e, SqlExpr::Identifier(Ident::new("")));
                *item = SelectItem::ExprWithAlias {
                    expr,
                    alias: Ident::with_quote('"', name),
                };
                renamed = true;
            }
        }
    }
    let rewritten = sql_time::rewrite(&mut statements);
    let text = match rewritten {
        Ok(timed) => Ok((renamed || timed).then(|| {
            statements
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(";\n")
        })),
        Err(e) => Err(e),
    };
    free_shallow(statements);
    Ok(text?)
}

/// Walks a syntax tree: the nesting of expressions so far, and what FROM reads.
struct Checker {
    depth: usize,
}

/// How many levels an expression adds: a `CASE` one per `WHEN` (polars nests them).
fn levels(e: &SqlExpr) -> usize {
    match e {
        SqlExpr::Case { conditions, .. } => conditions.len().max(1),
        _ => 1,
    }
}

impl Visitor for Checker {
    type Break = SqlError;

    fn pre_visit_table_factor(&mut self, t: &TableFactor) -> ControlFlow<SqlError> {
        let name = match t {
            TableFactor::Table {
                name,
                args: Some(_),
                ..
            } => name.to_string(),
            TableFactor::Function { name, .. } => name.to_string(),
            TableFactor::TableFunction { .. } => "TABLE(…)".to_string(),
            _ => return ControlFlow::Continue(()),
        };
        let name: String = name.chars().take(60).collect();
        ControlFlow::Break(SqlError::TableFunction(name))
    }

    fn pre_visit_expr(&mut self, e: &SqlExpr) -> ControlFlow<SqlError> {
        self.depth += levels(e);
        if self.depth > MAX_DEPTH {
            return ControlFlow::Break(SqlError::TooDeep);
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &SqlExpr) -> ControlFlow<SqlError> {
        self.depth = self.depth.saturating_sub(levels(e));
        ControlFlow::Continue(())
    }
}

/// Frees a syntax tree of any depth without recursing deeper than [`MAX_DEPTH`]
/// expression levels (dropping recurses once per level): subtrees that deep are cut
/// off and freed the same way, one after the other.
fn free_shallow(mut statements: Vec<Statement>) {
    struct Cutter {
        depth: usize,
        cut: Vec<SqlExpr>,
    }
    impl VisitorMut for Cutter {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &mut SqlExpr) -> ControlFlow<()> {
            self.depth += 1;
            if self.depth >= MAX_DEPTH {
                self.cut
                    .push(std::mem::replace(e, SqlExpr::Identifier(Ident::new(""))));
            }
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, _: &mut SqlExpr) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
    }
    let mut cutter = Cutter {
        depth: 0,
        cut: Vec::new(),
    };
    let _ = VisitMut::visit(&mut statements, &mut cutter);
    drop(statements);
    while let Some(mut e) = cutter.cut.pop() {
        cutter.depth = 0;
        let _ = VisitMut::visit(&mut e, &mut cutter);
    }
}

/// [`run`] on the current thread.
fn run_here(
    ds: &Dataset,
    query: &str,
    classifier: Classifier,
    networks: Option<Arc<NetworkDb>>,
) -> Result<SqlResult, SqlError> {
    let (snapshot, manifest) = ds.read()?;
    let parts: Vec<(PathBuf, PartEntry)> = match &snapshot {
        Some(s) => manifest
            .parts
            .iter()
            .map(|p| (s.part_path(p), p.clone()))
            .collect(),
        None => Vec::new(),
    };
    let dataset_rows = manifest.rows();
    let reads = Arc::new(Mutex::new(Vec::new()));
    let failure = Arc::new(Mutex::new(None));
    let schema = Arc::new(requests_schema());
    let scan = PartsScan {
        parts: parts.clone(),
        synth_client_list: manifest.version < 3,
        synth_request: manifest.version < 4,
        schema: schema.clone(),
        reads: reads.clone(),
        failure: failure.clone(),
    };
    let requests = LazyFrame::anonymous_scan(
        Arc::new(scan),
        ScanArgsAnonymous {
            schema: Some(schema),
            name: "logscope requests",
            ..ScanArgsAnonymous::default()
        },
    )
    .map_err(|e| SqlError::Query(e.to_string()))?;
    let view = derived(requests.clone(), Arc::new(Mutex::new(classifier)), networks);
    let mut ctx = SQLContext::new().with_function_registry(Arc::new(TimeFunctions));
    ctx.register(TABLE, requests);
    ctx.register(VIEW, view);
    let mut lf = ctx
        .execute(query)
        .map_err(|e| SqlError::Query(polars_message(&e)))?;
    if let Some(plan) = grouped_from_pages(&lf.logical_plan, ds, &parts, &reads) {
        lf = LazyFrame::from(plan);
    }
    let collected = lf.collect();
    if let Some(e) = failure.lock().ok().and_then(|mut f| f.take()) {
        return Err(SqlError::Store(e));
    }
    let frame = collected.map_err(|e| match e {
        PolarsError::IO { .. } => SqlError::Store(StoreError::Parquet {
            path: ds.dir().to_path_buf(),
            detail: e.to_string(),
        }),
        other => SqlError::Query(polars_message(&other)),
    })?;
    let reads = reads.lock().map(|r| r.clone()).unwrap_or_default();
    Ok(SqlResult {
        frame,
        reads,
        dataset_rows,
    })
}

/// The query's plan with its `GROUP BY` answered from the pages ([`group_counts`]:
/// rows counted per dictionary code, no row decoded to a string or hashed), when it is
/// one polars would run straight over `requests`: keys that are stored columns or
/// `month`, no HAVING, only `count(*)` (or `count(key)`) per group, and above it only
/// the SELECT list, WHERE, ORDER BY, LIMIT or DISTINCT of this or an outer query, which
/// polars runs on the groups as always. The groups are those polars would make, with the
/// schema polars gives them (checked), in order of first appearance (polars' GROUP BY
/// keeps no order). `None`: the plan as it is (any other query, a chunk the page reader
/// does not decode, a damaged part: the general path answers or says what is wrong).
fn grouped_from_pages(
    plan: &DslPlan,
    ds: &Dataset,
    parts: &[(PathBuf, PartEntry)],
    reads: &Mutex<Vec<ScanRead>>,
) -> Option<DslPlan> {
    let inner = |input: &Arc<DslPlan>| grouped_from_pages(input, ds, parts, reads).map(Arc::new);
    Some(match plan {
        DslPlan::GroupBy { .. } => return group_by_from_pages(plan, ds, parts, reads),
        // A part polars has planned already (its schema asked for): the plan it came from,
        // rewritten below.
        DslPlan::IR { dsl, .. } => return grouped_from_pages(dsl, ds, parts, reads),
        DslPlan::Select {
            expr,
            input,
            options,
        } => DslPlan::Select {
            expr: expr.clone(),
            input: inner(input)?,
            options: *options,
        },
        DslPlan::HStack {
            input,
            exprs,
            options,
        } => DslPlan::HStack {
            input: inner(input)?,
            exprs: exprs.clone(),
            options: *options,
        },
        DslPlan::Filter { input, predicate } => DslPlan::Filter {
            input: inner(input)?,
            predicate: predicate.clone(),
        },
        DslPlan::Sort {
            input,
            by_column,
            slice,
            sort_options,
        } => DslPlan::Sort {
            input: inner(input)?,
            by_column: by_column.clone(),
            slice: *slice,
            sort_options: sort_options.clone(),
        },
        DslPlan::Slice { input, offset, len } => DslPlan::Slice {
            input: inner(input)?,
            offset: *offset,
            len: *len,
        },
        DslPlan::Distinct { input, options } => DslPlan::Distinct {
            input: inner(input)?,
            options: options.clone(),
        },
        _ => return None,
    })
}

/// What one aggregation of a GROUP BY answered from the pages counts.
enum Count {
    /// The group's rows (`count(*)`).
    Rows,
    /// Its rows where key `k` is not null (`count(key)`).
    NonNull(usize),
}

/// [`grouped_from_pages`] for one `GroupBy` node: the groups as a frame in its place.
fn group_by_from_pages(
    plan: &DslPlan,
    ds: &Dataset,
    parts: &[(PathBuf, PartEntry)],
    reads: &Mutex<Vec<ScanRead>>,
) -> Option<DslPlan> {
    let DslPlan::GroupBy {
        input,
        keys,
        predicates,
        aggs,
        maintain_order: _,
        options,
        apply: None,
    } = plan
    else {
        return None;
    };
    if !predicates.is_empty()
        || options.slice.is_some()
        || options.is_rolling()
        || options.is_dynamic()
        || parts.is_empty()
    {
        return None;
    }
    let mut input = input.as_ref();
    while let DslPlan::IR { dsl, .. } = input {
        input = dsl;
    }
    let DslPlan::Scan { scan_type, .. } = input else {
        return None;
    };
    let FileScanDsl::Anonymous { function, .. } = scan_type.as_ref() else {
        return None;
    };
    function.as_any().downcast_ref::<PartsScan>()?;
    let names: Vec<&PlSmallStr> = keys
        .iter()
        .map(|k| match k {
            Expr::Column(n) => Some(n),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let by: Vec<By> = names
        .iter()
        .map(|n| match n.as_str() {
            "month" => Some(By::Month),
            n => Stored::named(n).map(By::Stored),
        })
        .collect::<Option<_>>()?;
    let mut counts = Vec::with_capacity(aggs.len());
    for a in aggs {
        let a = match a {
            Expr::Alias(e, _) => e.as_ref(),
            e => e,
        };
        counts.push(match a {
            Expr::Len => Count::Rows,
            Expr::Agg(AggExpr::Count {
                input,
                include_nulls,
            }) => {
                let Expr::Column(n) = input.as_ref() else {
                    return None;
                };
                match names.iter().position(|k| *k == n)? {
                    _ if *include_nulls => Count::Rows,
                    k => Count::NonNull(k),
                }
            }
            _ => return None,
        });
    }
    // The schema polars gives the groups: what the frame must have, name for name.
    let schema = LazyFrame::from(plan.clone()).collect_schema().ok()?;
    if schema.len() != keys.len() + counts.len() {
        return None;
    }
    let grouped = group_counts(ds, &by).ok()??;
    // The snapshot the query's plan was made from, part for part.
    if grouped.parts.len() != parts.len()
        || grouped
            .parts
            .iter()
            .zip(parts)
            .any(|(a, (_, p))| *a != p.file)
    {
        return None;
    }
    let groups = &grouped.groups;
    let mut columns = Vec::with_capacity(schema.len());
    for (i, (name, dtype)) in schema.iter().enumerate() {
        let column = match counts.get(i.wrapping_sub(keys.len())) {
            None => key_column(name, dtype, groups.iter().map(|(k, _)| &k[i]))?,
            Some(count) => {
                let v: Vec<IdxSize> = groups
                    .iter()
                    .map(|(k, n)| match count {
                        Count::NonNull(j) if k[*j] == Key::Null => Some(0),
                        _ => IdxSize::try_from(*n).ok(),
                    })
                    .collect::<Option<_>>()?;
                IdxCa::from_vec(name.clone(), v).into_column()
            }
        };
        if column.name() != name || column.dtype() != dtype {
            return None;
        }
        columns.push(column);
    }
    let df = DataFrame::new(groups.len(), columns).ok()?;
    let mut months: Vec<String> = parts.iter().map(|(_, p)| p.month.clone()).collect();
    months.sort();
    months.dedup();
    if let Ok(mut r) = reads.lock() {
        r.push(ScanRead {
            parts: parts.len(),
            of: parts.len(),
            months,
            grouped: true,
        });
    }
    Some(DslPlan::DataFrameScan {
        df: Arc::new(df),
        schema,
    })
}

/// A key column of the groups, of the type polars gives it (`None`: a type or value
/// this does not build).
fn key_column<'a>(
    name: &PlSmallStr,
    dtype: &DataType,
    keys: impl Iterator<Item = &'a Key>,
) -> Option<Column> {
    Some(match dtype {
        DataType::String => {
            let v: Vec<Option<&str>> = keys
                .map(|k| match k {
                    Key::Text(s) => Some(Some(s.as_str())),
                    Key::Null => Some(None),
                    _ => None,
                })
                .collect::<Option<_>>()?;
            StringChunked::from_iter_options(name.clone(), v.into_iter()).into_column()
        }
        DataType::Boolean => {
            let v: Vec<Option<bool>> = keys
                .map(|k| match k {
                    Key::Bool(b) => Some(Some(*b)),
                    Key::Null => Some(None),
                    _ => None,
                })
                .collect::<Option<_>>()?;
            BooleanChunked::from_iter_options(name.clone(), v.into_iter()).into_column()
        }
        DataType::Int32 | DataType::Int64 | DataType::Datetime(..) => {
            let v: Vec<Option<i64>> = keys
                .map(|k| match k {
                    Key::Int(x) => Some(Some(*x)),
                    Key::Null => Some(None),
                    _ => None,
                })
                .collect::<Option<_>>()?;
            Int64Chunked::from_iter_options(name.clone(), v.into_iter())
                .into_column()
                .strict_cast(dtype)
                .ok()?
        }
        _ => return None,
    })
}

/// polars' message without its backtrace hints, on as few lines as it allows.
fn polars_message(e: &PolarsError) -> String {
    let s = e.to_string();
    let s = s.trim();
    s.strip_prefix("SQLInterface: ")
        .or_else(|| s.strip_prefix("SQLSyntax: "))
        .unwrap_or(s)
        .trim()
        .to_string()
}

/// The scan of `requests`: the committed parts, pruned by the pushed-down predicate.
struct PartsScan {
    parts: Vec<(PathBuf, PartEntry)>,
    /// A format-2 dataset: `client_list` is not stored (always false).
    synth_client_list: bool,
    /// Format 2 and 3 have no `request` column: it is null (their text is as they
    /// stored it; `logscope migrate` rewrites them).
    synth_request: bool,
    schema: SchemaRef,
    reads: Arc<Mutex<Vec<ScanRead>>>,
    failure: Arc<Mutex<Option<StoreError>>>,
}

impl PartsScan {
    fn fail(&self, e: StoreError) -> PolarsError {
        let msg = e.to_string();
        if let Ok(mut f) = self.failure.lock() {
            f.get_or_insert(e);
        }
        PolarsError::ComputeError(msg.into())
    }
}

impl AnonymousScan for PartsScan {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn schema(&self, _infer_schema_length: Option<usize>) -> PolarsResult<SchemaRef> {
        Ok(self.schema.clone())
    }

    fn allows_predicate_pushdown(&self) -> bool {
        true
    }

    fn allows_projection_pushdown(&self) -> bool {
        true
    }

    fn scan(&self, args: AnonymousScanArgs) -> PolarsResult<DataFrame> {
        let predicate = args.predicate.and_then(row_predicate);
        let keep = keep_parts(&self.parts, predicate.as_ref());
        let chosen: Vec<&(PathBuf, PartEntry)> = self
            .parts
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(p, _)| p)
            .collect();
        let mut months: Vec<String> = chosen.iter().map(|(_, p)| p.month.clone()).collect();
        months.sort();
        months.dedup();
        if let Ok(mut r) = self.reads.lock() {
            r.push(ScanRead {
                parts: chosen.len(),
                of: self.parts.len(),
                months,
                grouped: false,
            });
        }
        let names: Vec<PlSmallStr> = match &args.with_columns {
            Some(cols) => cols.iter().cloned().collect(),
            None => self.schema.iter_names().cloned().collect(),
        };
        let out_schema: Schema = names
            .iter()
            .filter_map(|n| self.schema.get(n).map(|dt| (n.clone(), dt.clone())))
            .collect();
        if chosen.is_empty() {
            return Ok(DataFrame::empty_with_schema(&out_schema));
        }
        // The columns polars will read: the projection and what the predicate looks at.
        let mut read: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        if let Some(p) = &predicate {
            read.extend(p.clone().meta().root_names().iter().map(|n| n.to_string()));
        }
        let mut frames = Vec::with_capacity(chosen.len());
        for (path, part) in chosen {
            check_part(path, part).map_err(|e| self.fail(e))?;
            // polars decodes without a checksum: check the chunks it will read first.
            if let Some(sums) = part_sums(path, part).map_err(|e| self.fail(e))? {
                checksum::verify(path, &sums, Some(&read)).map_err(|e| self.fail(e))?;
            }
            let Some(p) = path.to_str() else {
                return Err(self.fail(StoreError::Corrupt {
                    path: path.clone(),
                    detail: "the dataset's path is not UTF-8, which polars cannot open".into(),
                }));
            };
            let args = ScanArgsParquet {
                glob: false,
                cache: false,
                ..ScanArgsParquet::default()
            };
            let mut lf = LazyFrame::scan_parquet(PlRefPath::new(p), args)?;
            let mut extra = vec![lit(part.month.as_str()).alias("month")];
            if self.synth_client_list {
                extra.push(lit(false).alias("client_list"));
            }
            if self.synth_request {
                extra.push(lit(NULL).cast(DataType::String).alias("request"));
            }
            lf = lf.with_columns(extra);
            frames.push(lf);
        }
        let mut lf = concat(frames, UnionArgs::default())?;
        if let Some(p) = predicate {
            lf = lf.filter(p);
        }
        lf = lf.select(names.iter().map(|n| col(n.clone())).collect::<Vec<_>>());
        if let Some(n) = args.n_rows {
            lf = lf.limit(n as IdxSize);
        }
        lf.collect()
    }
}

/// Which parts a predicate can match: every conjunct that looks only at `month` is
/// evaluated on the parts' months, and every comparison of `ts` with a constant
/// (`<`, `<=`, `>`, `>=`) on their earliest and latest arrival. Anything else keeps
/// the part (the predicate is applied to its rows anyway).
fn keep_parts(parts: &[(PathBuf, PartEntry)], predicate: Option<&Expr>) -> Vec<bool> {
    let mut keep = vec![true; parts.len()];
    let Some(predicate) = predicate else {
        return keep;
    };
    if parts.is_empty() {
        return keep;
    }
    let mut conj = Vec::new();
    conjuncts(predicate, &mut conj);
    let ts_col = |v: Vec<i64>| {
        Int64Chunked::from_vec("ts".into(), v)
            .into_datetime(TimeUnit::Milliseconds, Some(TimeZone::UTC))
            .into_column()
    };
    for c in conj {
        let roots = c.clone().meta().root_names();
        if roots.is_empty() || !roots.iter().all(|r| r == roots[0].as_str()) {
            continue;
        }
        let verdict = if roots[0] == "month" {
            let months = StringChunked::from_iter_values(
                "month".into(),
                parts.iter().map(|(_, p)| p.month.as_str()),
            )
            .into_column();
            eval_bools(vec![months], &c)
        } else if roots[0] == "ts" && is_ts_range(&c) {
            let lo = eval_bools(
                vec![ts_col(parts.iter().map(|(_, p)| p.min_ts_ms).collect())],
                &c,
            );
            let hi = eval_bools(
                vec![ts_col(parts.iter().map(|(_, p)| p.max_ts_ms).collect())],
                &c,
            );
            match (lo, hi) {
                (Some(a), Some(b)) => Some(a.iter().zip(&b).map(|(x, y)| *x || *y).collect()),
                _ => None,
            }
        } else {
            None
        };
        if let Some(v) = verdict {
            for (k, v) in keep.iter_mut().zip(v) {
                *k &= v;
            }
        }
    }
    keep
}

/// The pushed-down predicate without the conjuncts polars cannot plan again: the
/// dynamic predicate of `ORDER BY … LIMIT n` (a top-k hint, which comes back from
/// polars' plan as a display-only expression; the sort and limit above still apply).
fn row_predicate(p: Expr) -> Option<Expr> {
    let mut conj = Vec::new();
    conjuncts(&p, &mut conj);
    conj.into_iter()
        .filter(|c| !c.into_iter().any(|e| matches!(e, Expr::Display { .. })))
        .reduce(|a, b| a.and(b))
}

fn conjuncts(e: &Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::BinaryExpr {
            left,
            op: Operator::And | Operator::LogicalAnd,
            right,
        } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        other => out.push(other.clone()),
    }
}

/// `ts OP constant` or `constant OP ts` with OP one of `<`, `<=`, `>`, `>=`: true at
/// neither end of a part's time range means true nowhere in it.
fn is_ts_range(e: &Expr) -> bool {
    let Expr::BinaryExpr { left, op, right } = e else {
        return false;
    };
    let is_ts = |x: &Expr| matches!(x, Expr::Column(n) if n == "ts");
    let constant = |x: &Expr| x.clone().meta().root_names().is_empty();
    matches!(
        op,
        Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq
    ) && ((is_ts(left) && constant(right)) || (is_ts(right) && constant(left)))
}

/// `e` evaluated on a frame of `columns`: true per row (null and false are false).
fn eval_bools(columns: Vec<Column>, e: &Expr) -> Option<Vec<bool>> {
    let n = columns.first()?.len();
    let df = DataFrame::new(n, columns).ok()?;
    let out = df.lazy().select([e.clone().alias("keep")]).collect().ok()?;
    let c = out.column("keep").ok()?.bool().ok()?.clone();
    let v: Vec<bool> = c.iter().map(|x| x == Some(true)).collect();
    match v.len() {
        l if l == n => Some(v),
        1 => Some(vec![v[0]; n]),
        _ => None,
    }
}

fn text<'a>(v: &'a AnyValue<'a>) -> Option<&'a str> {
    match v {
        AnyValue::String(s) => Some(s),
        AnyValue::StringOwned(s) => Some(s.as_str()),
        _ => None,
    }
}

fn int(v: &AnyValue<'_>) -> Option<i64> {
    match v {
        AnyValue::Int64(x) => Some(*x),
        _ => None,
    }
}

fn boolean(v: &AnyValue<'_>) -> Option<bool> {
    match v {
        AnyValue::Boolean(b) => Some(*b),
        _ => None,
    }
}

/// A string column computed from `inputs` once per distinct combination of their
/// values (`f`), then joined back onto the rows in their order.
fn per_distinct<F>(inputs: Vec<Expr>, name: &'static str, f: F) -> Expr
where
    F: Fn(&[AnyValue<'_>]) -> Option<String> + Send + Sync + 'static,
{
    map_multiple(
        move |cols: &mut [Column]| {
            let n = cols.first().map_or(0, Column::len);
            let keys: Vec<PlSmallStr> = (0..cols.len())
                .map(|i| PlSmallStr::from(format!("k{i}")))
                .collect();
            let renamed: Vec<Column> = cols
                .iter()
                .zip(&keys)
                .map(|(c, k)| c.clone().with_name(k.clone()))
                .collect();
            let df = DataFrame::new(n, renamed)?;
            let uniq = df
                .clone()
                .lazy()
                .unique(None, UniqueKeepStrategy::Any)
                .collect()?;
            let mut vals: Vec<AnyValue<'_>> = Vec::with_capacity(keys.len());
            let mut out: Vec<Option<String>> = Vec::with_capacity(uniq.height());
            for r in 0..uniq.height() {
                vals.clear();
                for c in uniq.columns() {
                    vals.push(c.get(r)?);
                }
                out.push(f(&vals));
            }
            let values = StringChunked::from_iter_options("v".into(), out.into_iter());
            let uniq = uniq.hstack(&[values.into_column()])?;
            let on: Vec<Expr> = keys.iter().map(|k| col(k.clone())).collect();
            let mut how = JoinArgs::new(JoinType::Left);
            how.nulls_equal = true;
            how.maintain_order = MaintainOrderJoin::Left;
            let joined = df
                .lazy()
                .join(uniq.lazy(), on.clone(), on, how)
                .select([col("v")])
                .collect()?;
            if joined.height() != n {
                return Err(PolarsError::ComputeError(
                    format!("{name}: the per-value join changed the row count").into(),
                ));
            }
            Ok(joined.column("v")?.clone().with_name(name.into()))
        },
        inputs,
        move |_, _| Ok(Field::new(name.into(), DataType::String)),
    )
    .alias(name)
}

/// `requests` with the derived columns ([`DERIVED`]).
fn derived(
    requests: LazyFrame,
    cls: Arc<Mutex<Classifier>>,
    networks: Option<Arc<NetworkDb>>,
) -> LazyFrame {
    let (trust, v4, v6) = match cls.lock() {
        Ok(c) => (c.trust.clone(), c.v4_len, c.v6_len),
        Err(_) => (Default::default(), 24, 48),
    };
    let mut addr = vec![col("ip_hi"), col("ip_lo"), col("client")];
    if !trust.is_empty() {
        addr.extend([col("xff"), col("client_list")]);
    }
    let trust = Arc::new(trust);
    // The real client of one row (Classifier::finish), or the name it is known by.
    let real = {
        let trust = trust.clone();
        move |v: &[AnyValue<'_>]| -> Result<std::net::IpAddr, String> {
            let ip = match (int(&v[0]), int(&v[1])) {
                (Some(hi), Some(lo)) => Some(ip_of_halves(hi, lo)),
                _ => None,
            };
            let real = if trust.is_empty() {
                ip
            } else if v.get(4).and_then(boolean).unwrap_or(false) {
                trust.real_client_of_list(v.get(3).and_then(text).unwrap_or(""))
            } else {
                trust.real_client(ip, v.get(3).and_then(text))
            };
            match real {
                Some(ip) => Ok(ip),
                None if ip.is_some() => Err("(unknown behind proxy)".into()),
                None => Err(text(&v[2]).unwrap_or("(none)").to_string()),
            }
        }
    };
    let real2 = real.clone();
    // The client's network in --asn-db, per distinct client (NULL without a database).
    let network_col =
        |name: &'static str, pick: fn(&NetworkDb, std::net::IpAddr) -> Option<String>| {
            let (real, db) = (real.clone(), networks.clone());
            per_distinct(addr.clone(), name, move |v| {
                pick(db.as_deref()?, real(v).ok()?)
            })
        };
    let asn = network_col("asn", |db, ip| {
        db.autonomous_system(ip).map(|(n, _)| format!("AS{n}"))
    });
    let as_name = network_col("as_name", |db, ip| {
        db.autonomous_system(ip)
            .map(|(_, name)| name)
            .filter(|n| !n.is_empty())
    });
    let country = network_col("country", |db, ip| {
        db.country(ip)
            .map(|c| c.split(' ').next().unwrap_or_default().to_string())
    });
    let prefix = per_distinct(addr.clone(), "prefix", move |v| {
        Some(match real(v) {
            Ok(ip) => ClientKey::prefix(ip, v4, v6).to_string(),
            Err(name) => name,
        })
    });
    let real_client = per_distinct(addr, "real_client", move |v| {
        Some(match real2(v) {
            Ok(ip) => ClientKey::addr(ip).to_string(),
            Err(name) => name,
        })
    });
    let agent_col =
        |name: &'static str, pick: fn(&logscope_core::classify::AgentInfo) -> Option<String>| {
            let cls = cls.clone();
            per_distinct(vec![col("user_agent")], name, move |v| {
                let mut c = cls.lock().ok()?;
                let id = c.agents.id(text(&v[0]));
                pick(c.agents.info(id))
            })
        };
    let device = agent_col("device", |i| Some(i.device.name().to_string()));
    let family = agent_col("agent_family", |i| Some(i.family.clone()));
    let label = agent_col("agent", |i| Some(i.label.clone()));
    let bot = agent_col("bot_kind", |i| i.bot.map(|b| b.name().to_string()));
    let heavy = {
        let cls = cls.clone();
        per_distinct(
            vec![col("method"), col("path"), col("query")],
            "heavy_class",
            move |v| {
                let c = cls.lock().ok()?;
                let h = c.heavy.classify(text(&v[0]), text(&v[1]), text(&v[2]));
                h.is_heavy().then(|| c.heavy.name(h).to_string())
            },
        )
    };
    let identity = per_distinct(vec![col("user"), col("has_cookie")], "identity", move |v| {
        let c = cls.lock().ok()?;
        Some(
            c.identity
                .classify(text(&v[0]), boolean(&v[1]))
                .name()
                .to_string(),
        )
    });
    requests
        .with_columns([
            prefix,
            real_client,
            device,
            family,
            label,
            bot,
            heavy,
            identity,
            asn,
            as_name,
            country,
        ])
        .with_columns([col("heavy_class").is_not_null().alias("heavy")])
        .select(view_order())
}

fn view_order() -> Vec<Expr> {
    let mut cols: Vec<Expr> = requests_schema()
        .iter_names()
        .map(|n| col(n.clone()))
        .collect();
    cols.extend(DERIVED.iter().map(|(n, _, _)| col(*n)));
    cols
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(month: &str, min: i64, max: i64) -> (PathBuf, PartEntry) {
        (
            PathBuf::from(format!("{month}.parquet")),
            PartEntry {
                file: format!("{month}.parquet"),
                month: month.into(),
                rows: 1,
                bytes: 1,
                min_ts_ms: min,
                max_ts_ms: max,
                ingest: 1,
                segments: Vec::new(),
                sums: None,
                mediawiki_rows: None,
            },
        )
    }

    #[test]
    fn prunes_by_month_and_time() {
        let parts = vec![part("2024-06", 0, 99), part("2024-07", 100, 199)];
        let m = col("month").eq(lit("2024-07"));
        assert_eq!(keep_parts(&parts, Some(&m)), vec![false, true]);
        let ts = |ms: i64| {
            lit(ms).cast(DataType::Datetime(
                TimeUnit::Milliseconds,
                Some(TimeZone::UTC),
            ))
        };
        let t = col("ts").gt_eq(ts(150)).and(col("status").eq(lit(200)));
        assert_eq!(keep_parts(&parts, Some(&t)), vec![false, true]);
        let t = col("ts").lt(ts(100));
        assert_eq!(keep_parts(&parts, Some(&t)), vec![true, false]);
        // Not a range comparison: nothing pruned.
        let t = col("ts").neq(ts(5));
        assert_eq!(keep_parts(&parts, Some(&t)), vec![true, true]);
        let or = col("month").eq(lit("2024-06")).or(col("status").eq(lit(1)));
        assert_eq!(keep_parts(&parts, Some(&or)), vec![true, true]);
    }

    #[test]
    fn check_refuses_deep_expressions_and_table_functions() {
        let ones = |n: usize| format!("SELECT {} AS x", vec!["1"; n].join("+"));
        assert!(check(&ones(MAX_DEPTH)).is_ok());
        assert!(matches!(
            check(&ones(MAX_DEPTH + 1)),
            Err(SqlError::TooDeep)
        ));
        // Far deeper than dropping could recurse on this (test) thread's stack: the
        // check stops at the limit and the tree is freed in pieces.
        assert!(matches!(check(&ones(200_000)), Err(SqlError::TooDeep)));
        let whens = (0..MAX_DEPTH)
            .map(|i| format!("WHEN status = {i} THEN 1"))
            .collect::<Vec<_>>()
            .join(" ");
        let case = format!("SELECT CASE {whens} END AS c FROM requests");
        assert!(matches!(check(&case), Err(SqlError::TooDeep)));
        for q in [
            "SELECT * FROM read_parquet('/etc/passwd')",
            "select * from requests, Read_Csv('x')",
            "SELECT * FROM \"read_parquet\"('x')",
            "SELECT * FROM requests WHERE path IN (SELECT path FROM read_ipc('x'))",
            "SELECT * FROM TABLE(f())",
        ] {
            assert!(matches!(check(q), Err(SqlError::TableFunction(_))), "{q}");
        }
        // Not a table function: a table, a function in SELECT, a string naming one.
        for q in [
            "SELECT * FROM requests r JOIN requests_x x ON r.line = x.line",
            "SELECT upper('read_parquet(x)') FROM requests /* read_parquet('x') */",
            "SELEC nonsense (((",
        ] {
            assert!(check(q).is_ok(), "{q}");
        }
    }

    #[test]
    fn schema_has_month_and_the_stored_columns() {
        let s = requests_schema();
        assert_eq!(s.len(), super::super::frame::COLUMNS.len() + 1);
        assert_eq!(s.get("month"), Some(&DataType::String));
        assert_eq!(type_name(s.get("ts").unwrap()), "timestamp(ms, UTC)");
    }
}
