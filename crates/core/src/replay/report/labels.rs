//! How the replay report names things: instants as RFC 3339 in the report's zone,
//! bucket starts as short as the table allows, candidates as letters and agents by
//! family.

use crate::classify::Classifier;
use crate::time::{civil_from_days, local_rfc3339_ms};

/// A UTC instant as RFC 3339 with milliseconds (`2026-09-25T05:00:00.123Z`).
pub fn utc_ms_label(utc_ms: i64) -> String {
    stamp(utc_ms, 0)
}

/// An instant as RFC 3339 with milliseconds in a zone `offset_ms` from UTC.
pub fn stamp(utc_ms: i64, offset_ms: i64) -> String {
    local_rfc3339_ms(utc_ms + offset_ms, offset_ms)
}

/// A bucket start in local time, as short as the table allows: `HH:MM` (`HH:MM:SS`
/// below a minute) when every bucket is on one day, `MM-DD HH:MM` within one year,
/// else `YYYY-MM-DD HH:MM`; whole days as dates.
pub(super) fn bucket_label(local_ms: i64, width_ms: i64, scope: LabelScope) -> String {
    let days = local_ms.div_euclid(86_400_000);
    let rem = local_ms.rem_euclid(86_400_000) / 1000;
    let (y, m, d) = civil_from_days(days);
    let date = match scope {
        LabelScope::Day => String::new(),
        LabelScope::Year => format!("{m:02}-{d:02}"),
        LabelScope::Any => format!("{y:04}-{m:02}-{d:02}"),
    };
    if width_ms >= 86_400_000 && rem == 0 {
        return if date.is_empty() {
            format!("{y:04}-{m:02}-{d:02}")
        } else {
            date
        };
    }
    let mut t = format!("{:02}:{:02}", rem / 3600, rem % 3600 / 60);
    if width_ms < 60_000 {
        t.push_str(&format!(":{:02}", rem % 60));
    }
    if date.is_empty() {
        t
    } else {
        format!("{date} {t}")
    }
}

/// How much of the date bucket labels need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LabelScope {
    /// All buckets on one day.
    Day,
    /// All in one year.
    Year,
    /// Anything.
    Any,
}

impl LabelScope {
    pub(super) fn of(first_local: i64, last_local: i64) -> LabelScope {
        let (a, b) = (
            first_local.div_euclid(86_400_000),
            last_local.div_euclid(86_400_000),
        );
        if a == b {
            LabelScope::Day
        } else if civil_from_days(a).0 == civil_from_days(b).0 {
            LabelScope::Year
        } else {
            LabelScope::Any
        }
    }

    /// The day or year the labels leave out, for the title.
    pub(super) fn common(self, local: i64) -> Option<String> {
        let (y, m, d) = civil_from_days(local.div_euclid(86_400_000));
        match self {
            LabelScope::Day => Some(format!("{y:04}-{m:02}-{d:02}")),
            LabelScope::Year => Some(format!("{y:04}")),
            LabelScope::Any => None,
        }
    }
}

/// `A`, `B`, … `Z`, `AA`, `AB`, …
pub(super) fn letter(i: usize) -> String {
    let mut s = String::new();
    let mut n = i + 1;
    while n > 0 {
        n -= 1;
        s.insert(0, (b'A' + (n % 26) as u8) as char);
        n /= 26;
    }
    s
}

/// An agent's label for the top list: the crawler's or tool's name, else
/// `family (device)`.
pub fn agent_label(cls: &Classifier, id: u32) -> String {
    let a = cls.agents.info(id);
    if a.bot.is_some() || a.family == a.label {
        a.family.clone()
    } else {
        format!("{} ({})", a.family, a.device)
    }
}
