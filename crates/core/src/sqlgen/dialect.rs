//! The three SQL dialects a twin is written in (DuckDB, Spark SQL, ClickHouse): literals,
//! regex matching, bit arithmetic, epoch milliseconds, local time and the file source.

use std::fmt::Write as _;

/// An engine whose SQL a twin is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// DuckDB (RE2 regexes, `read_parquet`).
    DuckDb,
    /// Apache Spark SQL (Java regexes, ``parquet.`path` ``, backslash escapes in literals).
    Spark,
    /// ClickHouse (RE2 regexes, `file()`/`s3()` table functions, backslash escapes in
    /// literals; setup views inlined as `WITH`).
    ClickHouse,
}

impl Dialect {
    /// Parses `duckdb`, `spark`, `clickhouse`.
    pub fn parse(s: &str) -> Option<Dialect> {
        match s.trim().to_ascii_lowercase().as_str() {
            "duckdb" => Some(Dialect::DuckDb),
            "spark" | "sparksql" | "spark-sql" => Some(Dialect::Spark),
            "clickhouse" | "ch" | "chdb" => Some(Dialect::ClickHouse),
            _ => None,
        }
    }

    /// The engine's name.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::DuckDb => "duckdb",
            Dialect::Spark => "spark",
            Dialect::ClickHouse => "clickhouse",
        }
    }

    /// A string literal. Quotes and (for Spark and ClickHouse) backslashes are escaped;
    /// control and bidi characters (log text may hold them) are spliced in with `chr(n)`
    /// (ClickHouse: `unhex` of their UTF-8), so the query is safe to show on a terminal
    /// and means exactly the stored text.
    pub fn lit(self, s: &str) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut cur = String::new();
        for c in s.chars() {
            if unsafe_char(c) {
                parts.push(self.plain_lit(&cur));
                cur.clear();
                parts.push(self.char_expr(c));
            } else {
                cur.push(c);
            }
        }
        if parts.is_empty() {
            return self.plain_lit(&cur);
        }
        if !cur.is_empty() {
            parts.push(self.plain_lit(&cur));
        }
        format!("({})", parts.join(" || "))
    }

    fn char_expr(self, c: char) -> String {
        match self {
            Dialect::ClickHouse => {
                let mut b = [0u8; 4];
                let hex: String = c
                    .encode_utf8(&mut b)
                    .bytes()
                    .map(|x| format!("{x:02X}"))
                    .collect();
                format!("unhex('{hex}')")
            }
            _ => format!("chr({})", c as u32),
        }
    }

    fn plain_lit(self, s: &str) -> String {
        let mut out = String::with_capacity(s.len() + 2);
        out.push('\'');
        for c in s.chars() {
            match c {
                '\'' => out.push_str("''"),
                '\\' if self.backslash_escapes() => out.push_str("\\\\"),
                c => out.push(c),
            }
        }
        out.push('\'');
        out
    }

    /// Whether string literals take backslash escapes (Spark, ClickHouse).
    fn backslash_escapes(self) -> bool {
        matches!(self, Dialect::Spark | Dialect::ClickHouse)
    }

    /// A regex literal: a Rust `regex` pattern in the engine's flavour (named groups
    /// `(?P<n>` become `(?<n>` for Java).
    pub fn regex_lit(self, re: &str) -> String {
        match self {
            Dialect::Spark => self.lit(&re.replace("(?P<", "(?<")),
            _ => self.lit(re),
        }
    }

    /// Whether `expr` contains a match of the regex `re` (unanchored, like Rust's
    /// `is_match`).
    pub fn rx(self, expr: &str, re: &str) -> String {
        let p = self.regex_lit(re);
        match self {
            Dialect::DuckDb => format!("regexp_matches({expr}, {p})"),
            Dialect::Spark => format!("({expr} RLIKE {p})"),
            Dialect::ClickHouse => format!("match({expr}, {p})"),
        }
    }

    /// The first match of `re` in `expr` replaced by `with`, where `with` names groups
    /// as `$1` (rewritten to `\1` for DuckDB and ClickHouse).
    pub fn rx_replace_first(self, expr: &str, re: &str, with: &str) -> String {
        let p = self.regex_lit(re);
        let w = with.replace('$', "\\");
        match self {
            Dialect::DuckDb => format!("regexp_replace({expr}, {p}, {})", self.lit(&w)),
            Dialect::ClickHouse => format!("replaceRegexpOne({expr}, {p}, {})", self.lit(&w)),
            Dialect::Spark => format!("regexp_replace({expr}, {p}, {})", self.lit(with)),
        }
    }

    /// A quoted identifier (`"user"`; Spark: `` `user` ``).
    pub fn q(self, name: &str) -> String {
        match self {
            Dialect::Spark => format!("`{name}`"),
            _ => format!("\"{name}\""),
        }
    }

    /// Bitwise and of two bigints.
    pub fn band(self, a: &str, b: &str) -> String {
        match self {
            Dialect::ClickHouse => format!("bitAnd({a}, {b})"),
            _ => format!("({a} & {b})"),
        }
    }

    /// Arithmetic right shift of a bigint.
    pub fn shr(self, a: &str, n: u32) -> String {
        match self {
            Dialect::DuckDb => format!("({a} >> {n})"),
            Dialect::Spark => format!("shiftright({a}, {n})"),
            Dialect::ClickHouse => format!("bitShiftRight({a}, {n})"),
        }
    }

    /// Integer division of non-negative bigints.
    pub fn idiv(self, a: &str, b: i64) -> String {
        self.idiv_by(a, &b.to_string())
    }

    /// Integer division of non-negative bigints by an expression.
    pub fn idiv_by(self, a: &str, b: &str) -> String {
        match self {
            Dialect::DuckDb => format!("({a} // {b})"),
            Dialect::Spark => format!("({a} div {b})"),
            Dialect::ClickHouse => format!("intDiv({a}, {b})"),
        }
    }

    /// The start of the bucket `w` ms wide holding the local ms `a` (not before
    /// 1970-01-05), as [`crate::time::align`]: whole widths from Monday 1970-01-05,
    /// written `a // w * w` where that is the same (every width that divides four days).
    pub fn align(self, a: &str, w: i64) -> String {
        let m = crate::time::MONDAY_EPOCH_MS;
        let w = w.max(1);
        if m % w == 0 {
            format!("{} * {w}", self.idiv(a, w))
        } else {
            format!("({} * {w} + {m})", self.idiv(&format!("({a} - {m})"), w))
        }
    }

    /// A small non-negative integer as lower-case hex without leading zeros.
    pub fn hex(self, a: &str) -> String {
        match self {
            // hex() of an integer is whole bytes: 256 → '0100'.
            Dialect::ClickHouse => format!("replaceRegexpOne(lower(hex({a})), '^0+(.)', '\\\\1')"),
            _ => format!("lower(hex({a}))"),
        }
    }

    /// The text type's name.
    pub fn text(self) -> &'static str {
        match self {
            Dialect::Spark => "STRING",
            _ => "VARCHAR",
        }
    }

    /// `CAST(a AS text)` (NULL stays NULL).
    pub fn to_text(self, a: &str) -> String {
        match self {
            Dialect::ClickHouse => format!("toString({a})"),
            _ => format!("CAST({a} AS {})", self.text()),
        }
    }

    /// A comparison as a boolean column (ClickHouse's comparisons are 0/1 integers).
    pub fn boolean(self, cond: &str) -> String {
        match self {
            Dialect::ClickHouse => format!("CAST({cond} AS Bool)"),
            _ => format!("({cond})"),
        }
    }

    /// Rows `a..=b` of a bigint column, as a `SELECT` item (one row per value).
    pub fn explode_range(self, a: &str, b: &str) -> String {
        match self {
            Dialect::DuckDb => {
                format!("unnest(range(CAST({a} AS BIGINT), CAST({b} AS BIGINT) + 1))")
            }
            Dialect::Spark => {
                format!("explode(sequence(CAST({a} AS BIGINT), CAST({b} AS BIGINT)))")
            }
            Dialect::ClickHouse => format!("arrayJoin(range(toInt64({a}), toInt64({b}) + 1))"),
        }
    }

    /// The instant `ms` (a bigint expression, UTC ms) as a timestamp like `ts`.
    pub fn ts_of_ms(self, ms: &str) -> String {
        match self {
            Dialect::DuckDb => format!("timezone('UTC', epoch_ms(CAST({ms} AS BIGINT)))"),
            Dialect::Spark => format!("timestamp_millis(CAST({ms} AS BIGINT))"),
            Dialect::ClickHouse => format!("fromUnixTimestamp64Milli(toInt64({ms}), 'UTC')"),
        }
    }

    /// The UTC ms of the local wall-clock ms `local` in the IANA zone `zone`.
    pub fn utc_of_local(self, local: &str, zone: &str) -> String {
        let z = self.lit(zone);
        match self {
            Dialect::DuckDb => {
                format!("epoch_ms(timezone({z}, make_timestamp(CAST({local} AS BIGINT) * 1000)))")
            }
            Dialect::Spark => format!(
                "unix_millis(to_utc_timestamp(timestamp_millis(CAST({local} AS BIGINT)), {z}))"
            ),
            Dialect::ClickHouse => format!(
                "toUnixTimestamp64Milli(toDateTime64(formatDateTime(fromUnixTimestamp64Milli(toInt64({local}), 'UTC'), '%Y-%m-%d %H:%i:%S'), 3, {z}))"
            ),
        }
    }

    /// `CAST(a AS BIGINT)`, NULL staying NULL.
    pub fn to_bigint(self, a: &str) -> String {
        match self {
            Dialect::ClickHouse => format!("CAST({a} AS Nullable(Int64))"),
            _ => format!("CAST({a} AS BIGINT)"),
        }
    }

    /// A text NULL.
    pub fn null_text(self) -> String {
        match self {
            Dialect::ClickHouse => "CAST(NULL AS Nullable(String))".into(),
            _ => format!("CAST(NULL AS {})", self.text()),
        }
    }

    /// The value of `x` on the row with the least `by` (DuckDB and Spark `min_by`).
    pub fn min_by(self, x: &str, by: &str) -> String {
        match self {
            Dialect::ClickHouse => format!("argMin({x}, {by})"),
            _ => format!("min_by({x}, {by})"),
        }
    }

    /// `a / b` as a double, 0 when `b` is 0 (logscope's `share`).
    pub fn share(self, a: &str, b: &str) -> String {
        format!("CASE WHEN {b} = 0 THEN 0.0 ELSE CAST({a} AS DOUBLE) / CAST({b} AS DOUBLE) END")
    }

    /// A bigint literal (`i64::MIN` written so that every parser takes it).
    pub fn int(self, v: i64) -> String {
        if v == i64::MIN {
            "(-9223372036854775807 - 1)".into()
        } else {
            v.to_string()
        }
    }

    /// Milliseconds since the epoch of the `ts` column.
    pub fn epoch_ms(self, ts: &str) -> String {
        match self {
            Dialect::DuckDb => format!("epoch_ms({ts})"),
            Dialect::Spark => format!("unix_millis({ts})"),
            Dialect::ClickHouse => format!("toUnixTimestamp64Milli({ts})"),
        }
    }

    /// Local wall-clock milliseconds of `ts` in the IANA zone `zone`.
    pub fn local_ms(self, ts: &str, zone: &str) -> String {
        let z = self.lit(zone);
        match self {
            Dialect::DuckDb => format!("epoch_ms(timezone({z}, {ts}))"),
            Dialect::Spark => format!("unix_millis(from_utc_timestamp({ts}, {z}))"),
            Dialect::ClickHouse => format!(
                "({} + toInt64(timeZoneOffset(toTimeZone({ts}, {z}))) * 1000)",
                self.epoch_ms(ts)
            ),
        }
    }

    /// The instant `ms` (UTC) as a timestamp literal comparable with `ts`.
    pub fn instant(self, ms: i64) -> String {
        let t = crate::time::format_rfc3339_ms(ms);
        // 2026-09-25T05:00:00.000Z → 2026-09-25 05:00:00.000
        let plain = t.trim_end_matches('Z').replacen('T', " ", 1);
        match self {
            Dialect::DuckDb => format!("TIMESTAMPTZ '{plain}+00:00'"),
            Dialect::Spark => format!("timestamp_millis({ms})"),
            Dialect::ClickHouse => format!("toDateTime64('{plain}', 3, 'UTC')"),
        }
    }

    /// Local wall-clock ms as text in a chrono-like pattern: `month` (`2026-09`) or
    /// `day` (`2026-09-25`).
    pub fn local_label(self, local_ms: &str, day: bool) -> String {
        match self {
            Dialect::DuckDb => format!(
                "strftime(make_timestamp({local_ms} * 1000), '{}')",
                if day { "%Y-%m-%d" } else { "%Y-%m" }
            ),
            Dialect::Spark => format!(
                "date_format(timestamp_millis({local_ms}), '{}')",
                if day { "yyyy-MM-dd" } else { "yyyy-MM" }
            ),
            Dialect::ClickHouse => format!(
                "formatDateTime(fromUnixTimestamp64Milli(toInt64({local_ms}), 'UTC'), '{}')",
                if day { "%Y-%m-%d" } else { "%Y-%m" }
            ),
        }
    }

    /// The dataset's rows as a `FROM` item: `source` is the Parquet glob (a path, or an
    /// `s3://` or `http(s)://` URL).
    pub fn source(self, source: &str) -> String {
        match self {
            Dialect::DuckDb => format!("read_parquet({})", self.lit(source)),
            Dialect::Spark => {
                let mut s = String::from("parquet.`");
                for c in source.chars() {
                    if c == '`' {
                        s.push_str("``");
                    } else {
                        s.push(c);
                    }
                }
                s.push('`');
                s
            }
            Dialect::ClickHouse => {
                let lower = source.to_ascii_lowercase();
                if lower.starts_with("s3://")
                    || lower.starts_with("https://")
                    || lower.starts_with("http://")
                {
                    let url = match source.strip_prefix("s3://") {
                        // s3://bucket/key → the bucket's virtual-hosted URL.
                        Some(rest) => match rest.split_once('/') {
                            Some((bucket, key)) => {
                                format!("https://{bucket}.s3.amazonaws.com/{key}")
                            }
                            None => source.to_string(),
                        },
                        None => source.to_string(),
                    };
                    format!("s3({}, 'Parquet')", self.lit(&url))
                } else {
                    format!("file({}, 'Parquet')", self.lit(source))
                }
            }
        }
    }

    /// Comment lines that start the script: how to run it.
    pub fn header(self) -> String {
        let mut h = String::new();
        match self {
            Dialect::DuckDb => {
                let _ = writeln!(
                    h,
                    "-- DuckDB: duckdb < this.sql   (s3:// needs: INSTALL httpfs; LOAD httpfs;)"
                );
            }
            Dialect::Spark => {
                let _ = writeln!(
                    h,
                    "-- Spark SQL: spark-sql -f this.sql   (timestamps below are read in UTC)"
                );
            }
            Dialect::ClickHouse => {
                let _ = writeln!(
                    h,
                    "-- ClickHouse: clickhouse local --queries-file this.sql   (or chdb; a server reads file() under its user_files_path)"
                );
            }
        }
        h
    }

    /// Whether setup statements may create temporary views (ClickHouse has none: they
    /// are inlined as `WITH`).
    pub fn temp_views(self) -> bool {
        self != Dialect::ClickHouse
    }

    /// `CREATE … TEMP TABLE name AS`: rows computed once for the session (Spark: a
    /// Parquet table in the current database, dropped first).
    pub fn create_table(self, name: &str) -> String {
        match self {
            Dialect::DuckDb => format!("CREATE OR REPLACE TEMP TABLE {name} AS"),
            Dialect::Spark => format!("CREATE TABLE {name} USING parquet AS"),
            Dialect::ClickHouse => format!("CREATE TEMPORARY TABLE {name} ENGINE = Memory AS"),
        }
    }

    /// `CREATE … TEMP VIEW name AS`.
    pub fn create_view(self, name: &str) -> String {
        match self {
            Dialect::DuckDb => format!("CREATE OR REPLACE TEMP VIEW {name} AS"),
            _ => format!("CREATE OR REPLACE TEMPORARY VIEW {name} AS"),
        }
    }
}

/// Characters a literal does not carry as themselves (they could rewrite a terminal).
fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_safe() {
        assert_eq!(Dialect::DuckDb.lit("it's \\x"), "'it''s \\x'");
        assert_eq!(Dialect::Spark.lit("it's \\x"), "'it''s \\\\x'");
        assert_eq!(
            Dialect::DuckDb.lit("a\u{1b}[31m"),
            "('a' || chr(27) || '[31m')"
        );
        assert_eq!(
            Dialect::Spark.source("/d/requests/*.parquet"),
            "parquet.`/d/requests/*.parquet`"
        );
        assert_eq!(Dialect::DuckDb.int(i64::MIN), "(-9223372036854775807 - 1)");
        assert_eq!(Dialect::parse("Spark"), Some(Dialect::Spark));
        assert_eq!(Dialect::parse("mysql"), None);
        assert!(
            Dialect::DuckDb
                .instant(0)
                .contains("1970-01-01 00:00:00.000+00:00")
        );
    }
}
