//! A `rate_limit` handler's zones: key, events, window and `match` sets.

use super::super::nginx::Note;
use super::super::syntax::ConfError;
use super::cond::{Cases, Cond, and, now, or};
use super::lexer::Node;
use super::matchers::{Unsupported, matcher_set};
use super::reader::{Reader, ZoneOut};
use crate::rate::Rate;
use crate::replay::key::KeySpec;

pub(super) fn rate_limit(
    n: &Node,
    guard: Cond,
    cases: &Cases,
    r: &mut Reader,
) -> Result<(), ConfError> {
    let Some(block) = &n.block else {
        return Err(n.err("rate_limit needs a block with at least one zone"));
    };
    r.handlers += 1;
    for d in block {
        match d.name.text.as_str() {
            "zone" => zone(d, &guard, cases, r)?,
            "distributed" => r.distributed.push(d.at()),
            "log_key" | "disable_metrics" | "jitter" | "sweep_interval" | "storage" => {}
            other => {
                return Err(d.err(format!(
                    "unrecognized rate_limit subdirective `{other}` (zone, distributed, log_key, disable_metrics, storage, jitter, sweep_interval)"
                )));
            }
        }
    }
    Ok(())
}

pub(super) fn zone(d: &Node, guard: &Cond, cases: &Cases, r: &mut Reader) -> Result<(), ConfError> {
    let [name] = d.arg_texts()[..] else {
        return Err(d.err("zone needs one name: zone <name> { … }"));
    };
    let Some(body) = &d.block else {
        return Err(d.err(format!(
            "zone {name} needs a block with key, events and window"
        )));
    };
    let (mut key, mut window, mut events) = (None::<&Node>, None::<(&Node, String)>, None::<u64>);
    let (mut v4, mut v6) = (0u8, 0u8);
    let mut sets: Vec<Cond> = Vec::new();
    let mut bad: Option<Unsupported> = None;
    for s in body {
        let one = |s: &Node| -> Result<String, ConfError> {
            match s.arg_texts()[..] {
                [v] => Ok(v.to_string()),
                _ => Err(s.err(format!("{} needs one value", s.name.text))),
            }
        };
        match s.name.text.as_str() {
            "key" => {
                if key.is_some() {
                    return Err(s.err("zone key already specified"));
                }
                one(s)?;
                key = Some(s);
            }
            "window" => {
                if window.is_some() {
                    return Err(s.err("zone window already specified"));
                }
                window = Some((s, one(s)?));
            }
            "events" => {
                if events.is_some() {
                    return Err(s.err("zone max events already specified"));
                }
                let v = one(s)?;
                let e: u64 = v
                    .parse()
                    .map_err(|_| s.err(format!("invalid max events integer '{v}'")))?;
                events = Some(e);
            }
            "ipv4_prefix" | "ipv6_prefix" => {
                let v = one(s)?;
                let max = if s.name.text == "ipv4_prefix" {
                    32
                } else {
                    128
                };
                let b: u8 = v
                    .parse()
                    .ok()
                    .filter(|b| *b <= max)
                    .ok_or_else(|| s.err(format!("invalid {} '{v}' (0–{max})", s.name.text)))?;
                if s.name.text == "ipv4_prefix" {
                    v4 = b;
                } else {
                    v6 = b;
                }
            }
            "match" => {
                let Some(b) = &s.block else {
                    return Err(s.err("match needs a block of matchers"));
                };
                match matcher_set(b, r)? {
                    Ok(c) => sets.push(c),
                    Err(u) => bad = bad.or(Some(u)),
                }
            }
            other => {
                return Err(s.err(format!(
                    "unrecognized zone subdirective `{other}` (key, window, events, ipv4_prefix, ipv6_prefix, match)"
                )));
            }
        }
    }
    let (Some((wnode, w)), Some(ev)) = (window, events) else {
        return Err(d.err(format!(
            "zone {name}: a rate limit zone requires both a window and maximum events"
        )));
    };
    if ev == 0 {
        return Err(d.err(format!("zone {name}: events must be above 0")));
    }
    let rate = Rate::parse(&format!("{ev}/{w}"))
        .map_err(|e| wnode.err(format!("invalid window duration '{w}': {e}")))?;
    if let Some(u) = bad {
        r.notes.push(Note {
            at: u.at,
            message: format!("zone {name} left out: {}", u.message),
        });
        return Ok(());
    }
    let key = match key {
        None => KeySpec::Site,
        Some(k) => match key_spec(&k.args[0].text, v4, v6) {
            Ok(ks) => ks,
            Err(why) => {
                r.notes.push(k.note(format!(
                    "zone {name} left out: key {}: {why}",
                    k.args[0].text
                )));
                return Ok(());
            }
        },
    };
    if (v4 != 0 || v6 != 0) && !matches!(key, KeySpec::Prefix { .. }) {
        r.notes.push(d.note(format!(
            "zone {name}: ipv4_prefix/ipv6_prefix apply only to a key that is an address"
        )));
    }
    let m = if sets.is_empty() {
        Cond::True
    } else {
        or(sets)
    };
    let cond = and(vec![guard.clone(), now(&m, cases)]);
    r.zones.push(ZoneOut {
        name: name.to_string(),
        rate,
        key,
        cond,
        at: d.at(),
    });
    Ok(())
}

/// Why a zone key is not replayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum KeyNotReplayed {
    /// Several placeholders, or text and placeholders.
    Mixed,
    /// A prefix placeholder (Caddy has none).
    Prefix,
    /// A request header the log does not carry.
    Header,
    /// Any other placeholder.
    Placeholder,
}

impl std::fmt::Display for KeyNotReplayed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KeyNotReplayed::Mixed => {
                "a key of several placeholders or of text and placeholders is not replayed"
            }
            KeyNotReplayed::Prefix => {
                "Caddy has no prefix placeholder; use ipv4_prefix / ipv6_prefix in the zone"
            }
            KeyNotReplayed::Header => "a header the log does not carry",
            KeyNotReplayed::Placeholder => "a placeholder the log cannot supply",
        })
    }
}

/// A zone key: a static text (one bucket), or one placeholder the log supplies.
pub(super) fn key_spec(k: &str, v4: u8, v6: u8) -> Result<KeySpec, KeyNotReplayed> {
    if !k.contains('{') {
        return Ok(KeySpec::Site);
    }
    let inner = k
        .strip_prefix('{')
        .and_then(|x| x.strip_suffix('}'))
        .filter(|x| !x.contains('{') && !x.contains('}'))
        .ok_or(KeyNotReplayed::Mixed)?;
    let addr = |v4: u8, v6: u8| {
        if v4 == 0 && v6 == 0 {
            KeySpec::Ip
        } else {
            KeySpec::Prefix {
                v4: if v4 == 0 { 32 } else { v4 },
                v6: if v6 == 0 { 128 } else { v6 },
            }
        }
    };
    let lower = inner.to_ascii_lowercase();
    Ok(match lower.as_str() {
        "remote_host" | "http.request.remote.host" | "client_ip" | "http.vars.client_ip" => {
            addr(v4, v6)
        }
        "http.request.header.user-agent" => KeySpec::Agent,
        "http.request.header.referer" => KeySpec::Referer,
        "host" | "http.request.host" | "http.request.header.host" => KeySpec::Host,
        "method" | "http.request.method" => KeySpec::Method,
        "path" | "http.request.uri.path" => KeySpec::Path,
        "uri" | "http.request.uri" => KeySpec::Uri,
        "query" | "http.request.uri.query" => KeySpec::Query,
        "http.auth.user.id" => KeySpec::User,
        l if l.starts_with("http.request.remote.host/") || l.starts_with("remote_host/") => {
            return Err(KeyNotReplayed::Prefix);
        }
        l if l.starts_with("http.request.header.") => return Err(KeyNotReplayed::Header),
        _ => return Err(KeyNotReplayed::Placeholder),
    })
}
