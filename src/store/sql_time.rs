//! The time functions `logscope sql` adds to polars' SQL, as DuckDB spells them:
//! `date_trunc('hour', ts)` (ISO weeks from Monday, as every report's buckets),
//! `epoch_ms(ts)` and `epoch(ts)`; and the refusal of the wall clock (`now()`,
//! `current_timestamp`, …): an answer never depends on when it was asked.
//!
//! A query's syntax tree is rewritten before polars plans it ([`rewrite`]):
//! `date_trunc('<unit>', x)` becomes `logscope_date_trunc_<unit>(x)`, so the unit is
//! checked once, at planning, and polars calls [`TimeFunctions`] (its function
//! registry) for the rest.

use std::ops::ControlFlow;
use std::sync::Arc;

use logscope_core::time::align;
use polars::prelude::*;
use polars::sql::FunctionRegistry;
use sqlparser::ast::{
    Expr as SqlExpr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName,
    ObjectNamePart, Statement, Value as SqlValue, VisitMut, VisitorMut,
};

/// A query's time function that cannot run.
#[derive(Debug, thiserror::Error)]
pub enum TimeError {
    /// The wall clock (`now()`, `current_date`, …): refused.
    #[error(
        "sql answers from the log, not the clock: {0} is not allowed; compare ts with a constant instead (ts >= '2026-09-25 14:00:00')"
    )]
    WallClock(String),
    /// A time function used wrongly (`date_trunc` with a unit that is not a constant
    /// one of second … year).
    #[error("{0}")]
    Function(String),
}

/// What the messages list as the time functions that work.
pub const TIME_FUNCTIONS: &str = "date_trunc('second'|'minute'|'hour'|'day'|'week'|'month'|'quarter'|'year', ts) (weeks start on Monday), \
     date_part('hour', ts) / extract(hour FROM ts), strftime(ts, '%Y-%m-%d %H:%M'), date(ts), epoch_ms(ts), epoch(ts), \
     and comparisons with a constant (ts >= '2026-09-25 14:00:00'); times are UTC";

/// The names of the wall clock, refused.
const WALL_CLOCK: &[&str] = &[
    "now",
    "current_timestamp",
    "current_date",
    "current_time",
    "localtimestamp",
    "localtime",
    "today",
    "get_current_timestamp",
    "get_current_time",
    "transaction_timestamp",
    "statement_timestamp",
    "clock_timestamp",
    "sysdate",
    "getdate",
    "utc_timestamp",
];

/// A unit of `date_trunc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Whole seconds.
    Second,
    /// Whole minutes.
    Minute,
    /// Whole hours.
    Hour,
    /// Midnight UTC.
    Day,
    /// Monday 00:00 UTC (ISO 8601).
    Week,
    /// The first of the month.
    Month,
    /// The first of January, April, July or October.
    Quarter,
    /// The first of January.
    Year,
}

const UNITS: &[(&str, Unit)] = &[
    ("second", Unit::Second),
    ("minute", Unit::Minute),
    ("hour", Unit::Hour),
    ("day", Unit::Day),
    ("week", Unit::Week),
    ("month", Unit::Month),
    ("quarter", Unit::Quarter),
    ("year", Unit::Year),
];

const TRUNC_PREFIX: &str = "logscope_date_trunc_";

impl Unit {
    /// A unit by its name (case-insensitive; a trailing `s` allowed, as DuckDB allows).
    pub fn parse(s: &str) -> Option<Unit> {
        let s = s.trim().to_ascii_lowercase();
        let s = s.strip_suffix('s').unwrap_or(&s);
        UNITS.iter().find(|(n, _)| *n == s).map(|(_, u)| *u)
    }

    fn name(self) -> &'static str {
        UNITS
            .iter()
            .find(|(_, u)| *u == self)
            .map_or("", |(n, _)| n)
    }

    /// The start of the unit that holds `ms` (ms since the epoch, UTC).
    pub fn truncate(self, ms: i64) -> i64 {
        const DAY: i64 = 86_400_000;
        let months = |ms: i64, every: u32| {
            let (y, m, _) = logscope_core::time::civil_from_days(ms.div_euclid(DAY));
            let m = (m - 1) / every * every + 1;
            logscope_core::time::days_from_civil(y, m, 1) * DAY
        };
        match self {
            Unit::Second => align(ms, 1_000),
            Unit::Minute => align(ms, 60_000),
            Unit::Hour => align(ms, 3_600_000),
            Unit::Day => align(ms, DAY),
            Unit::Week => align(ms, 7 * DAY),
            Unit::Month => months(ms, 1),
            Unit::Quarter => months(ms, 3),
            Unit::Year => months(ms, 12),
        }
    }
}

/// Rewrites the time functions of `statements` for polars ([`TimeFunctions`]):
/// `date_trunc('unit', x)` becomes `logscope_date_trunc_unit(x)`. `Ok(true)` when
/// something was rewritten. A `date_trunc` whose unit is not a constant one of
/// [`Unit`]'s is a [`TimeError::Function`]; the wall clock (`now()`, `current_date`, …) a
/// [`TimeError::WallClock`].
pub fn rewrite(statements: &mut [Statement]) -> Result<bool, TimeError> {
    struct Rewriter {
        changed: bool,
    }
    impl VisitorMut for Rewriter {
        type Break = TimeError;
        fn post_visit_expr(&mut self, e: &mut SqlExpr) -> ControlFlow<TimeError> {
            let SqlExpr::Function(f) = e else {
                return ControlFlow::Continue(());
            };
            let name = f.name.to_string().to_ascii_lowercase();
            if WALL_CLOCK.contains(&name.as_str()) {
                return ControlFlow::Break(TimeError::WallClock(name));
            }
            if name != "date_trunc" {
                return ControlFlow::Continue(());
            }
            let FunctionArguments::List(list) = &mut f.args else {
                return ControlFlow::Break(usage("date_trunc needs two arguments"));
            };
            if list.args.len() != 2 {
                return ControlFlow::Break(usage("date_trunc needs two arguments"));
            }
            let unit = match &list.args[0] {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(SqlExpr::Value(v))) => match &v.value {
                    SqlValue::SingleQuotedString(s) | SqlValue::DoubleQuotedString(s) => {
                        Unit::parse(s).ok_or_else(|| s.clone())
                    }
                    other => Err(other.to_string()),
                },
                other => Err(other.to_string()),
            };
            let unit = match unit {
                Ok(u) => u,
                Err(given) => {
                    let given: String = given.chars().take(40).collect();
                    return ControlFlow::Break(usage(&format!(
                        "date_trunc: the unit must be one of {} in quotes (got {given})",
                        UNITS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                    )));
                }
            };
            list.args.remove(0);
            f.name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(format!(
                "{TRUNC_PREFIX}{}",
                unit.name()
            )))]);
            self.changed = true;
            ControlFlow::Continue(())
        }
    }
    fn usage(m: &str) -> TimeError {
        TimeError::Function(format!(
            "{m}; e.g. SELECT date_trunc('hour', ts) AS hour, count(*) FROM requests GROUP BY 1 ORDER BY 1"
        ))
    }
    let mut r = Rewriter { changed: false };
    for statement in statements.iter_mut() {
        if let ControlFlow::Break(e) = VisitMut::visit(statement, &mut r) {
            return Err(e);
        }
    }
    Ok(r.changed)
}

/// The function registry polars' SQL asks for the functions it does not know.
pub struct TimeFunctions;

#[derive(Clone, Copy, Debug)]
enum TimeFn {
    Trunc(Unit),
    EpochMs,
    Epoch,
}

impl TimeFn {
    fn named(name: &str) -> Option<TimeFn> {
        match name {
            "epoch_ms" => Some(TimeFn::EpochMs),
            "epoch" => Some(TimeFn::Epoch),
            _ => name
                .strip_prefix(TRUNC_PREFIX)
                .and_then(Unit::parse)
                .map(TimeFn::Trunc),
        }
    }

    fn name(self) -> &'static str {
        match self {
            TimeFn::Trunc(_) => "date_trunc",
            TimeFn::EpochMs => "epoch_ms",
            TimeFn::Epoch => "epoch",
        }
    }

    fn dtype(self) -> DataType {
        match self {
            TimeFn::Trunc(_) => DataType::Datetime(TimeUnit::Milliseconds, Some(TimeZone::UTC)),
            TimeFn::EpochMs => DataType::Int64,
            TimeFn::Epoch => DataType::Float64,
        }
    }
}

impl FunctionRegistry for TimeFunctions {
    fn register(&mut self, name: &str, _fun: UserDefinedFunction) -> PolarsResult<()> {
        polars_bail!(ComputeError: "cannot register {name}: logscope's functions are fixed")
    }

    fn get_udf(&self, name: &str) -> PolarsResult<Option<UserDefinedFunction>> {
        Ok(TimeFn::named(name).map(|f| UserDefinedFunction::new(f.name().into(), Udf(f))))
    }

    fn contains(&self, name: &str) -> bool {
        TimeFn::named(name).is_some()
    }
}

struct Udf(TimeFn);

impl Udf {
    fn millis(&self, c: &Column) -> PolarsResult<Int64Chunked> {
        let ms = match c.dtype() {
            DataType::Datetime(_, _) => c.cast(&DataType::Datetime(
                TimeUnit::Milliseconds,
                Some(TimeZone::UTC),
            ))?,
            DataType::Date => c.cast(&DataType::Datetime(
                TimeUnit::Milliseconds,
                Some(TimeZone::UTC),
            ))?,
            other => polars_bail!(
                InvalidOperation: "{}() takes a timestamp (such as ts), not {other}",
                self.0.name()
            ),
        };
        Ok(ms.to_physical_repr().i64()?.clone())
    }
}

impl ColumnsUdf for Udf {
    fn call_udf(&self, s: &mut [Column]) -> PolarsResult<Column> {
        let [c] = s else {
            polars_bail!(InvalidOperation: "{}() takes one argument", self.0.name());
        };
        let name = c.name().clone();
        let ms = self.millis(c)?;
        let out = match self.0 {
            TimeFn::Trunc(unit) => ms
                .apply_values(|v| unit.truncate(v))
                .into_datetime(TimeUnit::Milliseconds, Some(TimeZone::UTC))
                .into_column(),
            TimeFn::EpochMs => ms.into_column(),
            TimeFn::Epoch => ms
                .cast(&DataType::Float64)?
                .f64()?
                .apply_values(|v| v / 1000.0)
                .into_column(),
        };
        Ok(out.with_name(name))
    }
}

impl AnonymousColumnsUdf for Udf {
    fn as_column_udf(self: Arc<Self>) -> Arc<dyn ColumnsUdf> {
        self
    }

    fn deep_clone(self: Arc<Self>) -> Arc<dyn AnonymousColumnsUdf> {
        Arc::new(Udf(self.0))
    }

    fn get_field(&self, _input_schema: &Schema, fields: &[Field]) -> PolarsResult<Field> {
        let name = fields
            .first()
            .map_or_else(|| self.0.name().into(), |f| f.name().clone());
        Ok(Field::new(name, self.0.dtype()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> i64 {
        logscope_core::time::parse_rfc3339_ms(s.as_bytes()).expect(s)
    }

    #[test]
    fn truncates_to_each_unit() {
        let t = ms("2024-08-14T13:47:29.512Z"); // a Wednesday
        let cases = [
            (Unit::Second, "2024-08-14T13:47:29.000Z"),
            (Unit::Minute, "2024-08-14T13:47:00.000Z"),
            (Unit::Hour, "2024-08-14T13:00:00.000Z"),
            (Unit::Day, "2024-08-14T00:00:00.000Z"),
            (Unit::Week, "2024-08-12T00:00:00.000Z"),
            (Unit::Month, "2024-08-01T00:00:00.000Z"),
            (Unit::Quarter, "2024-07-01T00:00:00.000Z"),
            (Unit::Year, "2024-01-01T00:00:00.000Z"),
        ];
        for (u, want) in cases {
            assert_eq!(Unit::truncate(u, t), ms(want), "{u:?}");
        }
        // Before 1970, and a Monday is its own week.
        assert_eq!(
            Unit::Week.truncate(ms("1969-12-31T23:00:00.000Z")),
            ms("1969-12-29T00:00:00.000Z")
        );
        assert_eq!(
            Unit::Week.truncate(ms("2024-08-12T00:00:00.000Z")),
            ms("2024-08-12T00:00:00.000Z")
        );
        assert_eq!(Unit::parse(" Hours"), Some(Unit::Hour));
        assert_eq!(Unit::parse("fortnight"), None);
    }

    fn rewritten(q: &str) -> Result<String, TimeError> {
        let dialect = sqlparser::dialect::GenericDialect {};
        let mut st = sqlparser::parser::Parser::parse_sql(&dialect, q).expect(q);
        rewrite(&mut st)?;
        Ok(st.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn rewrites_date_trunc_and_refuses_the_clock() {
        assert_eq!(
            rewritten("SELECT date_trunc('HOUR', ts) AS h FROM requests").unwrap(),
            "SELECT logscope_date_trunc_hour(ts) AS h FROM requests"
        );
        assert!(matches!(
            rewritten("SELECT date_trunc('fortnight', ts) FROM requests"),
            Err(TimeError::Function(m)) if m.contains("second, minute, hour")
        ));
        assert!(matches!(
            rewritten("SELECT date_trunc(path, ts) FROM requests"),
            Err(TimeError::Function(_))
        ));
        for q in [
            "SELECT now()",
            "SELECT * FROM requests WHERE ts > current_timestamp",
            "SELECT count(*) FROM requests WHERE ts > NOW() - INTERVAL '1 hour'",
        ] {
            assert!(matches!(rewritten(q), Err(TimeError::WallClock(_))), "{q}");
        }
        assert!(!rewrite(&mut []).unwrap());
    }
}
