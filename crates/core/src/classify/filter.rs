//! The row filter shared by every report (and the replay and availability commands):
//! time range, heavy, identity, status, path regex, host, client network, agent class.

use std::fmt;

use ipnet::IpNet;
use regex::Regex;

use super::agent::{AgentInfo, BotKind, Device};
use super::{Classifier, Identity, RowClass};
use crate::batch::Batch;

/// Status codes: a union of single codes, classes (`5xx`) and ranges (`200-299`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusSet {
    ranges: Vec<(u16, u16)>,
    text: String,
}

impl StatusSet {
    /// Parses `5xx`, `429`, `200-299`, or a comma-separated list of these.
    pub fn parse(s: &str) -> Result<StatusSet, String> {
        let mut ranges = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let lower = part.to_ascii_lowercase();
            let r = if let Some(d) = lower.strip_suffix("xx") {
                let d: u16 = d
                    .parse()
                    .ok()
                    .filter(|d| (1..=9).contains(d))
                    .ok_or_else(|| format!("bad status class {part:?} (e.g. 5xx)"))?;
                (d * 100, d * 100 + 99)
            } else if let Some((a, b)) = lower.split_once('-') {
                let a: u16 = a
                    .trim()
                    .parse()
                    .map_err(|_| format!("bad status range {part:?}"))?;
                let b: u16 = b
                    .trim()
                    .parse()
                    .map_err(|_| format!("bad status range {part:?}"))?;
                if a > b {
                    return Err(format!("bad status range {part:?}: {a} > {b}"));
                }
                (a, b)
            } else {
                let c: u16 = lower
                    .parse()
                    .map_err(|_| format!("bad status {part:?} (e.g. 429, 5xx, 200-299)"))?;
                (c, c)
            };
            ranges.push(r);
        }
        if ranges.is_empty() {
            return Err("empty --status".into());
        }
        Ok(StatusSet {
            ranges,
            text: s.trim().to_string(),
        })
    }

    /// Whether `status` is in the set.
    #[inline]
    pub fn contains(&self, status: u16) -> bool {
        self.ranges.iter().any(|&(a, b)| status >= a && status <= b)
    }
}

impl fmt::Display for StatusSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A Host to match: exact (case-insensitive, any `:port` ignored) or `*.example.org`
/// (that domain and every name under it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPattern {
    name: String,
    wildcard: bool,
}

impl HostPattern {
    /// Parses `example.org`, `example.org:8080` or `*.example.org`.
    pub fn parse(s: &str) -> HostPattern {
        let s = s.trim().to_ascii_lowercase();
        match s.strip_prefix("*.") {
            Some(rest) => HostPattern {
                name: strip_port(rest).to_string(),
                wildcard: true,
            },
            None => HostPattern {
                name: strip_port(&s).to_string(),
                wildcard: false,
            },
        }
    }

    /// Whether a logged Host matches.
    pub fn matches(&self, host: Option<&str>) -> bool {
        let Some(h) = host else {
            return false;
        };
        let h = strip_port(h);
        if h.eq_ignore_ascii_case(&self.name) {
            return true;
        }
        self.wildcard
            && h.len() > self.name.len() + 1
            && h.as_bytes()[h.len() - self.name.len() - 1] == b'.'
            && h[h.len() - self.name.len()..].eq_ignore_ascii_case(&self.name)
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.wildcard {
            write!(f, "*.{}", self.name)
        } else {
            f.write_str(&self.name)
        }
    }
}

fn strip_port(h: &str) -> &str {
    if h.starts_with('[') {
        return h.split(']').next().map_or(h, |s| &s[1..]);
    }
    match h.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            name
        }
        _ => h,
    }
}

/// One term of `--agent`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum AgentTerm {
    Device(Device),
    Mobile,
    Browser,
    Declared,
    Kind(BotKind),
    Name(String),
}

/// `--agent CLASS[,CLASS…]`: a device (`ios`, `android`, `desktop`, `other`, `tool`, `bot`,
/// `unknown`), `mobile` (ios or android), `browser` (ios, android, desktop, other),
/// `crawler` (a known crawler by name), a bot kind (`ai`, `search`, `seo`, `social`,
/// `monitor`, `scanner`), or a name: a crawler, tool or browser family (`GPTBot`,
/// `curl`, `Chrome`), case-insensitive. An agent matches when any term does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentSelector {
    terms: Vec<AgentTerm>,
    text: String,
}

impl AgentSelector {
    /// Parses a comma-separated list of classes.
    pub fn parse(s: &str) -> Result<AgentSelector, String> {
        let mut terms = Vec::new();
        for t in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let term = match t.to_ascii_lowercase().as_str() {
                "mobile" => AgentTerm::Mobile,
                "browser" | "browsers" => AgentTerm::Browser,
                "crawler" | "crawlers" | "declared" => AgentTerm::Declared,
                "bots" => AgentTerm::Device(Device::Bot),
                l => match (Device::parse(l), BotKind::parse(l)) {
                    (Some(d), _) => AgentTerm::Device(d),
                    (None, Some(k)) if l != "other" => AgentTerm::Kind(k),
                    _ => AgentTerm::Name(l.to_string()),
                },
            };
            terms.push(term);
        }
        if terms.is_empty() {
            return Err("empty --agent".into());
        }
        Ok(AgentSelector {
            terms,
            text: s.trim().to_string(),
        })
    }

    /// Whether an agent belongs to the selected classes.
    pub fn matches(&self, a: &AgentInfo) -> bool {
        self.terms.iter().any(|t| match t {
            AgentTerm::Device(d) => a.device == *d,
            AgentTerm::Mobile => a.device.is_mobile(),
            AgentTerm::Browser => {
                matches!(
                    a.device,
                    Device::Ios | Device::Android | Device::Desktop | Device::Other
                )
            }
            AgentTerm::Declared => a.declared,
            AgentTerm::Kind(k) => a.bot == Some(*k),
            AgentTerm::Name(n) => {
                a.label.eq_ignore_ascii_case(n) || a.family.eq_ignore_ascii_case(n)
            }
        })
    }
}

impl fmt::Display for AgentSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Which rows a report looks at. Every part is optional; an empty filter keeps all.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Keep rows at or after this instant (UTC ms).
    pub since_ms: Option<i64>,
    /// Keep rows before this instant (UTC ms).
    pub until_ms: Option<i64>,
    /// Keep heavy (`Some(true)`) or not-heavy (`Some(false)`) requests.
    pub heavy: Option<bool>,
    /// Keep requests of this identity (`--anonymous` = `Some(Anonymous)`).
    pub identity: Option<Identity>,
    /// Keep these statuses.
    pub status: Option<StatusSet>,
    /// Keep paths (without query) matching this regex.
    pub path: Option<Regex>,
    /// Keep this Host.
    pub host: Option<HostPattern>,
    /// Keep real clients inside any of these networks.
    pub clients: Vec<IpNet>,
    /// Keep agents of these classes.
    pub agent: Option<AgentSelector>,
    memo: Vec<u8>,
}

impl Filter {
    /// A filter that keeps the period `since_ms..until_ms` (either end open) and
    /// nothing else yet; set the other fields to narrow it.
    pub fn with_period(since_ms: Option<i64>, until_ms: Option<i64>) -> Filter {
        Filter {
            since_ms,
            until_ms,
            ..Filter::default()
        }
    }

    /// Whether `ts_ms` is inside `--since`/`--until`.
    #[inline]
    pub fn in_period(&self, ts_ms: i64) -> bool {
        self.since_ms.is_none_or(|s| ts_ms >= s) && self.until_ms.is_none_or(|u| ts_ms < u)
    }

    /// Whether only the period is restricted (every row of the period is selected).
    pub fn selects_whole_period(&self) -> bool {
        self.heavy.is_none()
            && self.identity.is_none()
            && self.status.is_none()
            && self.path.is_none()
            && self.host.is_none()
            && self.clients.is_empty()
            && self.agent.is_none()
    }

    /// Whether row `i` of `b`, classified as `rc`, is selected (period included).
    #[inline]
    pub fn matches(&mut self, b: &Batch, i: usize, rc: &RowClass, cls: &Classifier) -> bool {
        if !self.in_period(b.ts_ms[i]) {
            return false;
        }
        if let Some(h) = self.heavy
            && rc.heavy.is_heavy() != h
        {
            return false;
        }
        if let Some(id) = self.identity
            && rc.identity != id
        {
            return false;
        }
        if let Some(s) = &self.status
            && !s.contains(b.status[i])
        {
            return false;
        }
        if let Some(h) = &self.host
            && !h.matches(b.host.get(i))
        {
            return false;
        }
        if !self.clients.is_empty() {
            let Some(ip) = rc.ip else {
                return false;
            };
            let ip = crate::replay::canonical(ip);
            if !self.clients.iter().any(|n| n.contains(&ip)) {
                return false;
            }
        }
        if let Some(sel) = &self.agent {
            let id = rc.agent as usize;
            if self.memo.len() <= id {
                self.memo.resize(id + 1, 0);
            }
            if self.memo[id] == 0 {
                self.memo[id] = if sel.matches(cls.agents.info(rc.agent)) {
                    2
                } else {
                    1
                };
            }
            if self.memo[id] != 2 {
                return false;
            }
        }
        if let Some(p) = &self.path
            && !p.is_match(b.path.get(i).unwrap_or(""))
        {
            return false;
        }
        true
    }

    /// The non-time parts, as a short description for report headers ("all requests"
    /// when there are none).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        match self.heavy {
            Some(true) => parts.push("heavy".to_string()),
            Some(false) => parts.push("not heavy".to_string()),
            None => {}
        }
        if let Some(id) = self.identity {
            parts.push(id.name().to_string());
        }
        if let Some(s) = &self.status {
            parts.push(format!("status {s}"));
        }
        if let Some(p) = &self.path {
            parts.push(format!("path ~ {}", p.as_str()));
        }
        if let Some(h) = &self.host {
            parts.push(format!("host {h}"));
        }
        if !self.clients.is_empty() {
            let c: Vec<String> = self.clients.iter().map(|n| n.to_string()).collect();
            parts.push(format!("client in {}", c.join(", ")));
        }
        if let Some(a) = &self.agent {
            parts.push(format!("agent {a}"));
        }
        if parts.is_empty() {
            "all requests".into()
        } else {
            parts.join(", ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_sets() {
        let s = StatusSet::parse("5xx,429, 200-204").unwrap();
        for (c, want) in [
            (500, true),
            (599, true),
            (429, true),
            (204, true),
            (205, false),
            (404, false),
        ] {
            assert_eq!(s.contains(c), want, "{c}");
        }
        assert!(StatusSet::parse("5x").is_err());
        assert!(StatusSet::parse("300-200").is_err());
        assert!(StatusSet::parse("").is_err());
        assert!(StatusSet::parse("0xx").is_err());
    }

    #[test]
    fn hosts() {
        let h = HostPattern::parse("Example.org");
        assert!(h.matches(Some("example.org:443")));
        assert!(!h.matches(Some("www.example.org")));
        assert!(!h.matches(None));
        let w = HostPattern::parse("*.example.org");
        assert!(w.matches(Some("www.EXAMPLE.org")));
        assert!(w.matches(Some("example.org")));
        assert!(!w.matches(Some("badexample.org")));
        assert!(HostPattern::parse("[::1]:8080").matches(Some("::1")));
    }

    #[test]
    fn agent_selectors() {
        let info = |device, bot, label: &str, declared| AgentInfo {
            family: label.into(),
            device,
            bot,
            declared,
            label: label.into(),
        };
        let gpt = info(Device::Bot, Some(BotKind::Ai), "GPTBot", true);
        let iphone = AgentInfo {
            family: "Safari".into(),
            ..info(Device::Ios, None, "ios", false)
        };
        let m = AgentSelector::parse("mobile").unwrap();
        assert!(m.matches(&iphone) && !m.matches(&gpt));
        assert!(AgentSelector::parse("ai").unwrap().matches(&gpt));
        assert!(AgentSelector::parse("gptbot").unwrap().matches(&gpt));
        assert!(AgentSelector::parse("crawler").unwrap().matches(&gpt));
        assert!(AgentSelector::parse("safari").unwrap().matches(&iphone));
        assert!(AgentSelector::parse("bot,ios").unwrap().matches(&iphone));
        assert!(!AgentSelector::parse("desktop").unwrap().matches(&iphone));
        assert!(AgentSelector::parse(" , ").is_err());
    }
}
