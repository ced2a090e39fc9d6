//! HAProxy's fetches and values: stick-counter fetches, track keys, request criteria,
//! times and sizes, and what a condition reads of the tables.

use ipnet::IpNet;
use regex::bytes::Regex;

use super::error::NotReplayed;
use crate::replay::{Action, Cmp, Cond, KeySpec, Matcher, Test, TrackKey, ZoneId};

/// The zones a deny's condition reads (through the slots tracked before it).
pub(super) fn cond_tables(cond: &Cond, before: &[Action]) -> Vec<ZoneId> {
    let mut out = Vec::new();
    for t in cond.or.iter().flatten().flat_map(|t| &t.any) {
        if let Test::Rate { slot, .. } | Test::Gpc0 { slot, .. } = t {
            for a in before {
                if let Action::Track { slot: s, table, .. } = a
                    && s == slot
                    && !out.contains(table)
                {
                    out.push(*table);
                }
            }
        }
    }
    out
}

/// `(table, N)` for each `rate gt N` (or `ge N+1`) test of a condition.
pub(super) fn thresholds(cond: &Cond, before: &[Action]) -> Vec<(ZoneId, u64)> {
    let mut out = Vec::new();
    for t in cond.or.iter().flatten().flat_map(|t| &t.any) {
        if let Test::Rate { slot, cmp, value } = t {
            let v = match cmp {
                Cmp::Gt => *value,
                Cmp::Ge => value.saturating_sub(1),
                _ => continue,
            };
            for a in before {
                if let Action::Track { slot: s, table, .. } = a
                    && s == slot
                {
                    out.push((*table, v));
                }
            }
        }
    }
    out
}

pub(super) enum ScWhat {
    Rate,
    Gpc0,
}

/// `sc_http_req_rate(N)`, `scN_http_req_rate`, `sc_get_gpc0(N)`, `scN_get_gpc0`.
pub(super) fn sc_fetch(f: &str) -> Option<(Option<u8>, ScWhat)> {
    for (name, what) in [("http_req_rate", ScWhat::Rate), ("get_gpc0", ScWhat::Gpc0)] {
        if let Some(rest) = f.strip_prefix(&format!("sc_{name}")) {
            let arg = call_arg(rest)?;
            if arg.contains(',') {
                return None;
            }
            return Some((arg.trim().parse().ok(), what));
        }
        if let Some(rest) = f.strip_prefix("sc")
            && let Some((n, tail)) = rest.split_once('_')
            && tail == name
        {
            return Some((n.parse().ok(), what));
        }
    }
    None
}

/// `(x)` → `x`.
pub(super) fn call_arg(s: &str) -> Option<&str> {
    s.strip_prefix('(')?.strip_suffix(')')
}

/// `name(arg)` → (`name`, `Some(arg)`); `name` → (`name`, `None`).
pub(super) fn call(s: &str) -> (&str, Option<&str>) {
    match s.find('(') {
        Some(i) => (&s[..i], call_arg(&s[i..])),
        None => (s, None),
    }
}

/// A comma-separated list, commas inside parentheses kept.
pub(super) fn split_top(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if c == ',' && depth == 0 {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The key of a `track-scN`.
pub(super) fn track_key(k: &str) -> Result<TrackKey, NotReplayed> {
    let parts = split_top(k);
    let base = parts.first().map_or("", String::as_str);
    let convs = &parts[1.min(parts.len())..];
    let unsupported = || NotReplayed::TrackKey(k.to_string());
    let (name, arg) = call(base);
    let field = match (name, arg) {
        ("src", None) => KeySpec::Ip,
        ("str", Some(c)) if convs.is_empty() => return Ok(TrackKey::Const(c.as_bytes().to_vec())),
        ("req.hdr" | "hdr" | "req.fhdr" | "hdr_val", Some(h)) if convs.is_empty() => {
            match h.to_ascii_lowercase().as_str() {
                "user-agent" => KeySpec::Agent,
                "referer" => KeySpec::Referer,
                _ => {
                    return Err(NotReplayed::TrackHeader {
                        key: k.to_string(),
                        header: h.to_string(),
                    });
                }
            }
        }
        ("path", None) if convs.is_empty() => KeySpec::Path,
        ("url", None) if convs.is_empty() => KeySpec::Uri,
        _ => return Err(unsupported()),
    };
    match convs {
        [] => Ok(TrackKey::Field(field)),
        [c] if field == KeySpec::Ip => {
            let (cn, ca) = call(c);
            let Some(ca) = ca.filter(|_| cn == "ipmask") else {
                return Err(unsupported());
            };
            let (m4, m6) = match ca.split_once(',') {
                Some((a, b)) => (a.trim(), Some(b.trim())),
                None => (ca.trim(), None),
            };
            let v4 = m4
                .parse::<u8>()
                .ok()
                .filter(|&n| n <= 32)
                .ok_or_else(unsupported)?;
            let v6 = match m6 {
                Some(m) => m
                    .parse::<u8>()
                    .ok()
                    .filter(|&n| n <= 128)
                    .ok_or_else(unsupported)?,
                None => 128,
            };
            Ok(TrackKey::Field(KeySpec::Prefix { v4, v6 }))
        }
        _ => Err(unsupported()),
    }
}

/// A request-level ACL criterion as a matcher; `Ok(None)` when it has no value.
pub(super) fn fetch_match(
    fetch: &str,
    mtype: Option<&str>,
    icase: bool,
    vals: &[&str],
) -> Result<Option<Matcher>, NotReplayed> {
    let (name, arg) = call(fetch);
    let mut m = Matcher::default();
    if matches!(fetch, "always_true" | "always_false") {
        return Err(NotReplayed::Constant(fetch.to_string()));
    }
    let regex = |pat: String| -> Result<Regex, NotReplayed> {
        let pat = if icase { format!("(?i){pat}") } else { pat };
        Regex::new(&pat).map_err(|e| NotReplayed::BadRegex(e.to_string()))
    };
    let matching = |how: &str| NotReplayed::Match {
        fetch: fetch.to_string(),
        how: how.to_string(),
    };
    let alt = |vals: &[&str]| -> String {
        vals.iter()
            .map(|v| regex::escape(v))
            .collect::<Vec<_>>()
            .join("|")
    };
    let kind = |suffix: &str| -> Option<String> {
        match (suffix, mtype) {
            ("", None) => Some("str".into()),
            ("", Some(t)) => Some(t.to_string()),
            (s, _) => Some(s.to_string()),
        }
    };
    let is_path = name == "path" || name.starts_with("path_");
    let is_hdr = matches!(name, "hdr" | "req.hdr" | "req.fhdr")
        || name.starts_with("hdr_")
        || name.starts_with("req.hdr_");
    if vals.is_empty() {
        return Ok(None);
    }
    if is_path && arg.is_none() {
        let how = kind(
            name.strip_prefix("path")
                .unwrap_or("")
                .trim_start_matches('_'),
        )
        .unwrap_or_default();
        match how.as_str() {
            "str" if !icase => m.path = vals.iter().map(|v| v.as_bytes().to_vec()).collect(),
            "str" => m.path_regex = Some(regex(format!("^(?:{})$", alt(vals)))?),
            "beg" if !icase => m.path_prefix = vals.iter().map(|v| v.as_bytes().to_vec()).collect(),
            "beg" => m.path_regex = Some(regex(format!("^(?:{})", alt(vals)))?),
            "end" => m.path_regex = Some(regex(format!("(?:{})$", alt(vals)))?),
            "sub" => m.path_regex = Some(regex(format!("(?:{})", alt(vals)))?),
            "reg" => m.path_regex = Some(regex(format!("(?:{})", vals.join("|")))?),
            "dir" => m.path_regex = Some(regex(format!("(?:^|/)(?:{})(?:/|$)", alt(vals)))?),
            other => return Err(matching(other)),
        }
        return Ok(Some(m));
    }
    if name == "method" && arg.is_none() {
        m.method = vals.iter().map(|v| v.as_bytes().to_vec()).collect();
        return Ok(Some(m));
    }
    if name == "src" && arg.is_none() {
        for v in vals {
            let net = v
                .parse::<IpNet>()
                .or_else(|_| v.parse::<std::net::IpAddr>().map(IpNet::from))
                .map_err(|_| NotReplayed::NotAddress(v.to_string()))?;
            m.cidr.push(net);
        }
        return Ok(Some(m));
    }
    if is_hdr {
        let Some(h) = arg else {
            return Err(NotReplayed::NoHeaderName(fetch.to_string()));
        };
        let suffix = name.rsplit_once('_').map_or("", |(_, s)| s).to_string();
        let how = kind(if name.contains('_') { &suffix } else { "" }).unwrap_or_default();
        let pat = match how.as_str() {
            "str" => format!("^(?:{})$", alt(vals)),
            "beg" => format!("^(?:{})", alt(vals)),
            "end" => format!("(?:{})$", alt(vals)),
            "sub" => format!("(?:{})", alt(vals)),
            "reg" => format!("(?:{})", vals.join("|")),
            other => return Err(matching(other)),
        };
        match h.to_ascii_lowercase().as_str() {
            "user-agent" => m.ua_regex = Some(regex(pat)?),
            "referer" => m.referer_regex = Some(regex(pat)?),
            _ => {
                return Err(NotReplayed::HeaderNotLogged {
                    fetch: fetch.to_string(),
                    header: h.to_string(),
                });
            }
        }
        return Ok(Some(m));
    }
    Err(NotReplayed::Criterion(fetch.to_string()))
}

/// HAProxy times: a number with `us`, `ms`, `s`, `m`, `h` or `d` (default ms).
pub(super) fn time_ms(s: &str) -> Option<u64> {
    let i = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n: u64 = s[..i].parse().ok()?;
    let mul = match &s[i..] {
        "" | "ms" => 1,
        "us" => return Some(n / 1000),
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    n.checked_mul(mul)
}

/// `100k`, `1m`, `1g`, `5000`.
pub(super) fn size(s: &str) -> Option<u64> {
    let i = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n: u64 = s[..i].parse().ok()?;
    let mul = match &s[i..] {
        "" => 1,
        "k" | "K" => 1 << 10,
        "m" | "M" => 1 << 20,
        "g" | "G" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mul)
}

pub(super) fn base_name(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}
