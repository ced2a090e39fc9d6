//! Weekly buckets start on Mondays (ISO 8601 weeks), not on Thursdays (1970-01-01, the
//! epoch): `heavy`, `timeline`, `capacity` and `replay`'s refusals over time at `--by
//! 1w` and `2w`, in UTC and in Asia/Seoul, over a log of seven weeks — from the log
//! files and from the dataset. Widths that divide a day are aligned as before.

use std::path::Path;

use chrono::{Datelike, NaiveDate, NaiveDateTime, Weekday};
use serde_json::Value;

use crate::common::*;

/// 2026-01-01 (a Thursday) 00:00 UTC, in seconds.
const START_S: i64 = 1_767_225_600;

/// Seven weeks of requests from 2026-01-01 (Thursday) to 2026-02-18: every 37 minutes
/// one of three clients, heavy searches and static files, some 5xx.
fn write_log(path: &Path) {
    let mut rng = Rng(0x5eed_0007);
    let mut out = String::new();
    let mut s = START_S + 1;
    while s < START_S + 49 * 86_400 {
        let t = chrono::DateTime::from_timestamp(s, 0).unwrap();
        let ip = ["203.0.113.7", "203.0.113.8", "198.51.100.1"][rng.below(3) as usize];
        let uri = if rng.below(3) == 0 {
            "/static/a.css".to_string()
        } else {
            format!("/index.php?search=w{}", rng.below(1000))
        };
        let status = if rng.below(20) == 0 { 503 } else { 200 };
        out.push_str(&format!(
            "{ip} - - [{}] \"GET {uri} HTTP/1.1\" {status} 512 \"-\" \"Mozilla/5.0 (X11; Linux x86_64) Firefox/127.0\"\n",
            t.format("%d/%b/%Y:%H:%M:%S +0000")
        ));
        s += 37 * 60 + rng.below(60) as i64;
    }
    std::fs::write(path, out).unwrap();
}

/// The local wall-clock time of an RFC 3339 start (`2026-01-05T00:00:00+09:00`) or a
/// label (`2026-01-05 00:00`).
fn local(start: &str) -> NaiveDateTime {
    let s = start.get(..16).unwrap_or(start).replacen('T', " ", 1);
    NaiveDateTime::parse_from_str(&s, "%Y-%m-%d %H:%M").unwrap_or_else(|e| panic!("{start}: {e}"))
}

/// Every start is a Monday at 00:00 local time, `days` days after the one before, and
/// the offset, when the start has one, is `offset`.
fn mondays(what: &str, starts: &[&str], days: i64, offset: &str) {
    assert!(starts.len() >= 3, "{what}: {starts:?}");
    for (i, s) in starts.iter().enumerate() {
        let t = local(s);
        assert_eq!(t.weekday(), Weekday::Mon, "{what}: {s} is not a Monday");
        assert_eq!(
            t.time(),
            chrono::NaiveTime::MIN,
            "{what}: {s} is not midnight"
        );
        if s.len() > 19 {
            assert!(s.ends_with(offset), "{what}: {s}");
        }
        if i > 0 {
            assert_eq!(
                (t - local(starts[i - 1])).num_days(),
                days,
                "{what}: {starts:?}"
            );
        }
    }
}

fn starts<'a>(v: &'a Value, rows: &str) -> Vec<&'a str> {
    v.pointer(rows)
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("no {rows} in {v}"))
        .iter()
        .map(|b| b["start"].as_str().unwrap())
        .collect()
}

#[test]
fn weekly_buckets_start_on_mondays_in_every_report_and_zone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let log = d.join("weeks.log");
    write_log(&log);
    let data = d.join("data");
    let (_, code) = ingest_json(&data, &[log.to_str().unwrap()]);
    assert_eq!(code, 0);
    let log = log.to_str().unwrap();
    for (tz, offset) in [("UTC", "Z"), ("Asia/Seoul", "+09:00")] {
        for (by, days) in [("1w", 7), ("2w", 14)] {
            // From the log file and from the dataset: the same buckets.
            for file in [Some(log), None] {
                let run = |args: &[&str]| {
                    let mut c = logscope(&data);
                    c.args(args)
                        .args(["--by", by, "--tz", tz, "--format", "json"])
                        .args(file);
                    ok_json(&mut c)
                };
                let what = |cmd: &str| format!("{cmd} --by {by} --tz {tz} ({file:?})");
                let hv = run(&["heavy", "--capacity", "5/1w"]);
                mondays(&what("heavy"), &starts(&hv, "/buckets"), days, offset);
                assert_eq!(
                    hv["requests"],
                    hv["buckets"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|b| b["requests"].as_u64().unwrap())
                        .sum::<u64>()
                );
                let tl = run(&["timeline", "--client", "203.0.113.0/24"]);
                mondays(&what("timeline"), &starts(&tl, "/buckets"), days, offset);
                let rp = run(&["replay", "--limit", "3/1h"]);
                mondays(&what("replay"), &starts(&rp, "/over_time"), days, offset);
                let cap = run(&["capacity"]);
                mondays(
                    &what("capacity"),
                    &starts(&cap, "/capacity/windows"),
                    days,
                    offset,
                );
            }
        }
    }
    // The first request (Thursday 2026-01-01 00:00:01 UTC) is in the week of Monday
    // 2025-12-29; in Seoul, 09:00 the same Thursday.
    let hv = ok_json(logscope(&data).args(["heavy", "--by", "1w", "--format", "json"]));
    assert_eq!(hv["buckets"][0]["start"], "2025-12-29T00:00:00.000Z");
    assert_eq!(hv["buckets"][1]["start"], "2026-01-05T00:00:00.000Z");
    assert_eq!(hv["buckets"].as_array().unwrap().len(), 8);
    let hv = ok_json(logscope(&data).args([
        "heavy",
        "--by",
        "1w",
        "--tz",
        "Asia/Seoul",
        "--format",
        "json",
    ]));
    assert_eq!(hv["buckets"][0]["start"], "2025-12-29T00:00:00.000+09:00");
    // Widths that divide a day are aligned as before: days at midnight, hours on the
    // hour, 90 minutes from midnight.
    for (by, step) in [("1d", 1440), ("1h", 60), ("1h30m", 90), ("6h", 360)] {
        let hv = ok_json(logscope(&data).args(["heavy", "--by", by, "--format", "json"]));
        let first = local(starts(&hv, "/buckets")[0]);
        let midnight = NaiveDate::from_ymd_opt(2026, 1, 1)
            .unwrap()
            .and_time(chrono::NaiveTime::MIN);
        assert_eq!(first, midnight, "--by {by}");
        for s in starts(&hv, "/buckets") {
            assert_eq!(
                (local(s) - midnight).num_minutes() % step,
                0,
                "--by {by}: {s}"
            );
        }
    }
}
