//! The dataset's schema, and the conversion of parsed [`Batch`]es to polars frames.

use logscope_core::batch::{Batch, TextColumn};
use polars::prelude::*;

/// Names of the columns, in file order.
pub const COLUMNS: &[&str] = &[
    "ts",
    "ts_precision",
    "client",
    "ident",
    "user",
    "method",
    "path",
    "query",
    "protocol",
    "status",
    "bytes",
    "referer",
    "user_agent",
    "host",
    "request_time_us",
    "xff",
    "has_cookie",
    "file",
    "line",
];

fn text(name: &str, col: &TextColumn) -> Column {
    StringChunked::from_iter_options(name.into(), col.iter()).into_column()
}

/// Converts a batch of records read from `file` into a frame with the dataset schema.
pub fn batch_to_frame(b: &Batch, file: &str) -> PolarsResult<DataFrame> {
    let n = b.len();
    let ts = Int64Chunked::from_vec("ts".into(), b.ts_ms.clone())
        .into_datetime(TimeUnit::Milliseconds, Some(TimeZone::UTC))
        .into_column();
    let columns = vec![
        ts,
        UInt8Chunked::from_vec("ts_precision".into(), b.precision.clone()).into_column(),
        text("client", &b.client),
        text("ident", &b.ident),
        text("user", &b.user),
        text("method", &b.method),
        text("path", &b.path),
        text("query", &b.query),
        text("protocol", &b.protocol),
        UInt16Chunked::from_vec("status".into(), b.status.clone()).into_column(),
        UInt64Chunked::from_iter_options("bytes".into(), b.bytes.iter().copied()).into_column(),
        text("referer", &b.referer),
        text("user_agent", &b.user_agent),
        text("host", &b.host),
        UInt64Chunked::from_iter_options(
            "request_time_us".into(),
            b.request_time_us.iter().copied(),
        )
        .into_column(),
        text("xff", &b.xff),
        BooleanChunked::from_iter_options("has_cookie".into(), b.has_cookie.iter().copied())
            .into_column(),
        StringChunked::full("file".into(), file, n).into_column(),
        UInt64Chunked::from_vec("line".into(), b.line.clone()).into_column(),
    ];
    DataFrame::new(n, columns)
}

/// A month partition key: `year * 12 + (month - 1)`, UTC.
pub type MonthKey = i32;

/// Maps timestamps to month keys, caching the last day seen.
#[derive(Default)]
pub struct MonthOf {
    last_day: Option<(i64, MonthKey)>,
}

impl MonthOf {
    /// The UTC month of a timestamp in ms.
    pub fn key(&mut self, ts_ms: i64) -> MonthKey {
        let day = ts_ms.div_euclid(86_400_000);
        if let Some((d, k)) = self.last_day
            && d == day
        {
            return k;
        }
        let date = chrono::DateTime::from_timestamp(day * 86_400, 0)
            .map(|t| t.date_naive())
            .unwrap_or_default();
        use chrono::Datelike;
        let k = date.year() * 12 + date.month0() as i32;
        self.last_day = Some((day, k));
        k
    }
}

/// `YYYY-MM` of a month key.
pub fn month_name(k: MonthKey) -> String {
    format!("{:04}-{:02}", k.div_euclid(12), k.rem_euclid(12) + 1)
}
