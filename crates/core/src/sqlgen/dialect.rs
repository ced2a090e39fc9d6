//! The three SQL dialects a twin is written in (DuckDB, Spark SQL, Trino): literals,
//! regex matching, bit arithmetic, epoch milliseconds, local time and the file source.

use std::fmt::Write as _;

/// An engine whose SQL a twin is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// DuckDB (RE2 regexes, `read_parquet`).
    DuckDb,
    /// Apache Spark SQL (Java regexes, ``parquet.`path` ``, backslash escapes in literals).
    Spark,
    /// Trino (Joni regexes; the dataset as a Hive table over the Parquet directory).
    Trino,
}

impl Dialect {
    /// Parses `duckdb`, `spark`, `trino`.
    pub fn parse(s: &str) -> Option<Dialect> {
        match s.trim().to_ascii_lowercase().as_str() {
            "duckdb" => Some(Dialect::DuckDb),
            "spark" | "sparksql" | "spark-sql" => Some(Dialect::Spark),
            "trino" | "presto" => Some(Dialect::Trino),
            _ => None,
        }
    }

    /// The engine's name.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::DuckDb => "duckdb",
            Dialect::Spark => "spark",
            Dialect::Trino => "trino",
        }
    }

    /// A string literal. Quotes and (for Spark) backslashes are escaped; control and
    /// bidi characters (log text may hold them) are spliced in with `chr(n)`, so the
    /// query is safe to show on a terminal and means exactly the stored text.
    pub fn lit(self, s: &str) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut cur = String::new();
        for c in s.chars() {
            if unsafe_char(c) {
                parts.push(self.plain_lit(&cur));
                cur.clear();
                parts.push(format!("chr({})", c as u32));
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

    fn plain_lit(self, s: &str) -> String {
        let mut out = String::with_capacity(s.len() + 2);
        out.push('\'');
        for c in s.chars() {
            match c {
                '\'' => out.push_str("''"),
                '\\' if self == Dialect::Spark => out.push_str("\\\\"),
                c => out.push(c),
            }
        }
        out.push('\'');
        out
    }

    /// A regex literal: a Rust `regex` pattern in the engine's flavour (named groups
    /// `(?P<n>` become `(?<n>` for Java and Joni).
    pub fn regex_lit(self, re: &str) -> String {
        match self {
            Dialect::DuckDb => self.lit(re),
            _ => self.lit(&re.replace("(?P<", "(?<")),
        }
    }

    /// Whether `expr` contains a match of the regex `re` (unanchored, like Rust's
    /// `is_match`).
    pub fn rx(self, expr: &str, re: &str) -> String {
        let p = self.regex_lit(re);
        match self {
            Dialect::DuckDb => format!("regexp_matches({expr}, {p})"),
            Dialect::Spark => format!("({expr} RLIKE {p})"),
            Dialect::Trino => format!("regexp_like({expr}, {p})"),
        }
    }

    /// The first match of `re` in `expr` replaced by `with`, where `with` names groups
    /// as `$1` (rewritten to `\1` for DuckDB).
    pub fn rx_replace_first(self, expr: &str, re: &str, with: &str) -> String {
        let p = self.regex_lit(re);
        match self {
            Dialect::DuckDb => {
                let w = with.replace('$', "\\");
                format!("regexp_replace({expr}, {p}, {})", self.lit(&w))
            }
            _ => format!("regexp_replace({expr}, {p}, {})", self.lit(with)),
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
            Dialect::Trino => format!("bitwise_and({a}, {b})"),
            _ => format!("({a} & {b})"),
        }
    }

    /// Arithmetic right shift of a bigint.
    pub fn shr(self, a: &str, n: u32) -> String {
        match self {
            Dialect::DuckDb => format!("({a} >> {n})"),
            Dialect::Spark => format!("shiftright({a}, {n})"),
            Dialect::Trino => format!("bitwise_right_shift_arithmetic({a}, {n})"),
        }
    }

    /// Integer division of non-negative bigints.
    pub fn idiv(self, a: &str, b: i64) -> String {
        match self {
            Dialect::DuckDb => format!("({a} // {b})"),
            Dialect::Spark => format!("({a} div {b})"),
            Dialect::Trino => format!("({a} / {b})"),
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
            Dialect::Trino => format!("to_base({a}, 16)"),
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

    /// `CAST(a AS text)`.
    pub fn to_text(self, a: &str) -> String {
        format!("CAST({a} AS {})", self.text())
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
            // The Hive connector reads the column as timestamp(3), the UTC wall clock.
            Dialect::Trino => format!(
                "date_diff('millisecond', TIMESTAMP '1970-01-01 00:00:00 UTC', with_timezone({ts}, 'UTC'))"
            ),
        }
    }

    /// Local wall-clock milliseconds of `ts` in the IANA zone `zone`.
    pub fn local_ms(self, ts: &str, zone: &str) -> String {
        let z = self.lit(zone);
        match self {
            Dialect::DuckDb => format!("epoch_ms(timezone({z}, {ts}))"),
            Dialect::Spark => format!("unix_millis(from_utc_timestamp({ts}, {z}))"),
            Dialect::Trino => format!(
                "({} + (timezone_hour(with_timezone({ts}, 'UTC') AT TIME ZONE {z}) * 60 + timezone_minute(with_timezone({ts}, 'UTC') AT TIME ZONE {z})) * 60000)",
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
            Dialect::Trino => format!("TIMESTAMP '{plain}'"),
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
            Dialect::Trino => format!(
                "format_datetime(from_unixtime({local_ms} / 1000, 'UTC'), '{}')",
                if day { "yyyy-MM-dd" } else { "yyyy-MM" }
            ),
        }
    }

    /// The dataset's rows as a `FROM` item: `source` is the Parquet glob (DuckDB,
    /// Spark) or ignored for Trino, which reads the `requests` table (see the header).
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
            Dialect::Trino => "requests".into(),
        }
    }

    /// Comment lines that start the script: how to run it.
    pub fn header(self, source: &str) -> String {
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
            Dialect::Trino => {
                let dir = source.trim_end_matches("*.parquet").trim_end_matches('/');
                let _ = writeln!(
                    h,
                    "-- Trino: the dataset as a Hive table first (once), e.g.\n--   CREATE TABLE hive.logs.requests (ts timestamp(3), ts_precision integer,\n--     client varchar, ip_hi bigint, ip_lo bigint, ident varchar, \"user\" varchar, method varchar,\n--     path varchar, query varchar, protocol varchar, status integer, bytes bigint, referer varchar,\n--     user_agent varchar, host varchar, request_time_us bigint, xff varchar, has_cookie boolean,\n--     client_list boolean, file varchar, line bigint)\n--   WITH (external_location = '{}', format = 'PARQUET');\n-- (ts: the UTC wall clock; the Parquet column is UTC-adjusted)\n-- then: trino --catalog hive --schema logs -f this.sql",
                    dir.replace('\'', "''").replace(['\n', '\r'], " ")
                );
            }
        }
        h
    }

    /// Whether setup statements may create temporary views (Trino: inlined as `WITH`).
    pub fn temp_views(self) -> bool {
        self != Dialect::Trino
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
