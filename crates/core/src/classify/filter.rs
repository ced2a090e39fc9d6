//! The row filter shared by every report (and the replay and availability commands):
//! time range, heavy, identity, status, path regex, host, client network, agent class.

use std::fmt;
use std::sync::Arc;

use ipnet::IpNet;
use regex::Regex;

use super::agent::{AgentInfo, BotKind, Device};
use super::{Classifier, Identity, RowClass};
use crate::batch::Batch;
use crate::forensics::crawlers::CrawlerRanges;
use crate::forensics::netdb::NetworkFilter;

/// Status codes: a union of single codes (0 to 999: logs hold 0 and 499 as well as
/// HTTP's 100 to 599), classes (`1xx` to `5xx`) and ranges (`200-299`). The one
/// grammar of `--status`, `availability --success` and `--policy-status`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct StatusSet {
    ranges: Vec<(u16, u16)>,
}

/// The highest status code a set may name.
pub const MAX_STATUS: u16 = 999;

/// Why a status set did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StatusError {
    /// Nothing given.
    #[error("no status given; e.g. 5xx, 429, 200-299 or 2xx,3xx")]
    Empty,
    /// Not a class of HTTP.
    #[error("'{0}' is not a status class: classes are 1xx to 5xx; e.g. 5xx")]
    Class(String),
    /// Not a code.
    #[error("'{0}' is not a status: codes are 0 to 999; e.g. 429, 5xx or 200-299")]
    Code(String),
    /// A range upside down or out of bounds.
    #[error("'{0}' is not a status range: write LOW-HIGH, both 0 to 999, LOW first; e.g. 200-299")]
    Range(String),
}

impl StatusSet {
    /// The empty set.
    pub fn none() -> StatusSet {
        StatusSet::default()
    }

    /// A set of inclusive ranges.
    pub fn from_ranges(ranges: &[(u16, u16)]) -> StatusSet {
        let mut s = StatusSet {
            ranges: ranges.to_vec(),
        };
        s.normalize();
        s
    }

    /// Parses `5xx`, `429`, `200-299`, or a comma-separated list of these (case and
    /// spaces ignored). The set must not be empty.
    pub fn parse(s: &str) -> Result<StatusSet, StatusError> {
        let mut ranges = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let code = |t: &str| {
                t.trim()
                    .parse::<u16>()
                    .ok()
                    .filter(|&c| c <= MAX_STATUS && t.trim().bytes().all(|b| b.is_ascii_digit()))
            };
            let b = part.as_bytes();
            let r = if b.len() >= 2 && b[b.len() - 2..].eq_ignore_ascii_case(b"xx") {
                match b {
                    [d @ b'1'..=b'5', _, _] => {
                        let c = u16::from(d - b'0') * 100;
                        (c, c + 99)
                    }
                    _ => return Err(StatusError::Class(part.to_string())),
                }
            } else if let Some((a, z)) = part.split_once('-') {
                match (code(a), code(z)) {
                    (Some(a), Some(z)) if a <= z => (a, z),
                    _ => return Err(StatusError::Range(part.to_string())),
                }
            } else {
                let c = code(part).ok_or_else(|| StatusError::Code(part.to_string()))?;
                (c, c)
            };
            ranges.push(r);
        }
        if ranges.is_empty() {
            return Err(StatusError::Empty);
        }
        Ok(StatusSet::from_ranges(&ranges))
    }

    /// Like [`StatusSet::parse`], but `none` (or nothing) is the empty set.
    pub fn parse_or_none(s: &str) -> Result<StatusSet, StatusError> {
        let t = s.trim();
        if t.is_empty() || t.eq_ignore_ascii_case("none") {
            return Ok(StatusSet::none());
        }
        StatusSet::parse(t)
    }

    fn normalize(&mut self) {
        self.ranges.sort_unstable();
        let mut out: Vec<(u16, u16)> = Vec::with_capacity(self.ranges.len());
        for &(a, z) in &self.ranges {
            match out.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(z),
                _ => out.push((a, z)),
            }
        }
        self.ranges = out;
    }

    /// Whether `status` is in the set.
    #[inline]
    pub fn contains(&self, status: u16) -> bool {
        self.ranges.iter().any(|&(a, z)| a <= status && status <= z)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

impl fmt::Display for StatusSet {
    /// Canonical text that [`StatusSet::parse_or_none`] reads back: whole classes 1xx to
    /// 5xx as `2xx`, other ranges as `a-b`, single codes; `none` for the empty set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ranges.is_empty() {
            return f.write_str("none");
        }
        let mut parts = Vec::new();
        for &(a, z) in &self.ranges {
            let (mut lo, z) = (u32::from(a), u32::from(z));
            while lo <= z {
                if (100..600).contains(&lo) && lo % 100 == 0 && lo + 99 <= z {
                    parts.push(format!("{}xx", lo / 100));
                    lo += 100;
                } else {
                    let end = z.min(lo - lo % 100 + 99);
                    if lo == end {
                        parts.push(lo.to_string());
                    } else {
                        parts.push(format!("{lo}-{end}"));
                    }
                    lo = end + 1;
                }
            }
        }
        f.write_str(&parts.join(","))
    }
}

impl serde::Serialize for StatusSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
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
/// `monitor`, `scanner`, `other-bot`), or a name: a crawler, tool or browser family the
/// classifier knows (`GPTBot`, `curl`, `Chrome`; see [`is_known_agent_name`]) or the
/// name of an `[[agent]]` rule, case-insensitive. An agent matches when any term does.
/// Anything else (`robots`) is refused: it would select nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentSelector {
    terms: Vec<AgentTerm>,
    text: String,
}

/// The `--agent` classes, as listed in messages.
pub const AGENT_CLASSES: &str = "ios, android, mobile, desktop, other, browser, tool, bot, \
crawler, ai, search, seo, social, monitor, scanner, other-bot, unknown";

/// Why an `--agent` value did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// Nothing given.
    #[error("no agent class given; e.g. ai, mobile or curl (classes: {AGENT_CLASSES})")]
    Empty,
    /// Neither a class nor a known name.
    #[error(
        "'{0}' is neither an agent class nor a known crawler, tool or browser name; \
         classes: {AGENT_CLASSES}; names: e.g. GPTBot, Googlebot, curl, Chrome \
         (or an [[agent]] rule's name from --rules)"
    )]
    Unknown(String),
}

/// Browser families the classifier reports besides woothee's names (it tells apart
/// brands woothee folds into Chrome or Safari), and iOS apps.
const REFINED_FAMILIES: &[&str] = &[
    "Edge",
    "Samsung Internet",
    "Opera",
    "Chrome",
    "Firefox",
    "Whale",
    "Yandex Browser",
    "Android WebView",
    "iOS app",
];

/// Whether the classifier can give an agent this family or label (case-insensitive):
/// a declared crawler ([`super::agent::CRAWLERS`]), a tool ([`super::agent::TOOLS`]),
/// a browser or crawler woothee knows, or a refined browser family.
pub fn is_known_agent_name(name: &str) -> bool {
    let eq = |n: &str| n.eq_ignore_ascii_case(name);
    super::agent::CRAWLERS.iter().any(|(_, n, _)| eq(n))
        || super::agent::TOOLS.iter().any(|(_, n)| eq(n))
        || REFINED_FAMILIES.iter().any(|n| eq(n))
        || woothee::dataset::DATASET
            .values()
            .any(|w| w.browser_type != "os" && eq(w.name))
}

impl AgentSelector {
    /// Parses a comma-separated list of classes and known names.
    pub fn parse(s: &str) -> Result<AgentSelector, AgentError> {
        AgentSelector::parse_with_names(s, &[])
    }

    /// Like [`AgentSelector::parse`], also accepting `names` (the config's `[[agent]]`
    /// rule names).
    pub fn parse_with_names(s: &str, names: &[&str]) -> Result<AgentSelector, AgentError> {
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
                    _ if is_known_agent_name(t)
                        || names.iter().any(|n| n.eq_ignore_ascii_case(t)) =>
                    {
                        AgentTerm::Name(l.to_string())
                    }
                    _ => return Err(AgentError::Unknown(t.to_string())),
                },
            };
            terms.push(term);
        }
        if terms.is_empty() {
            return Err(AgentError::Empty);
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
    /// Keep clients logged as one of these host names (no address: a log written with
    /// `HostnameLookups`), compared without regard to ASCII case.
    pub client_names: Vec<String>,
    /// Keep agents of these classes.
    pub agent: Option<AgentSelector>,
    /// Keep clients of these networks (`--asn`, `--country`).
    pub networks: Option<NetworkFilter>,
    /// Keep only impostors (`--impostors`): requests whose agent claims one of these
    /// crawlers from outside its published ranges.
    pub impostors: Option<Arc<CrawlerRanges>>,
    memo: Vec<u8>,
    /// Per agent id: 0 not worked out, 1 no crawler of `impostors`, 2 + k crawler k.
    claims: Vec<u16>,
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
            && self.client_names.is_empty()
            && self.agent.is_none()
            && self.networks.is_none()
            && self.impostors.is_none()
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
        if !self.clients.is_empty() || !self.client_names.is_empty() {
            let named = |c: &str| self.client_names.iter().any(|n| n.eq_ignore_ascii_case(c));
            let kept = match rc.ip {
                Some(ip) => {
                    let ip = crate::net::canonical(ip);
                    self.clients.iter().any(|n| n.contains(&ip))
                }
                None => b.client.get(i).is_some_and(named),
            };
            if !kept {
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
        if let Some(n) = &mut self.networks
            && !n.keeps(rc.ip.map(crate::net::canonical))
        {
            return false;
        }
        if let Some(ranges) = &self.impostors {
            let id = rc.agent as usize;
            if self.claims.len() <= id {
                self.claims.resize(id + 1, 0);
            }
            if self.claims[id] == 0 {
                let claim = ranges.claimed(&cls.agents.info(rc.agent).family);
                self.claims[id] = claim.map_or(1, |k| 2 + k as u16);
            }
            let claim = self.claims[id];
            if claim == 1
                || ranges.verified(usize::from(claim - 2), rc.ip.map(crate::net::canonical))
            {
                return false;
            }
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
        if !self.clients.is_empty() || !self.client_names.is_empty() {
            let c: Vec<String> = self
                .clients
                .iter()
                .map(|n| n.to_string())
                .chain(self.client_names.iter().cloned())
                .collect();
            parts.push(format!("client in {}", c.join(", ")));
        }
        if let Some(a) = &self.agent {
            parts.push(format!("agent {a}"));
        }
        if let Some(n) = &self.networks {
            parts.push(format!("network {}", n.describe()));
        }
        if let Some(r) = &self.impostors {
            let names: Vec<&str> = r.crawlers.iter().map(|c| c.name.as_str()).collect();
            parts.push(format!("impostors of {}", names.join(", ")));
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
        // Classes are 1xx to 5xx; codes 0 to 999 (`6xx` once selected nothing).
        for bad in [
            "6xx", "9xx", "10xx", "xx", "1000", "65535", "0-1000", "-1", "+5", "none",
        ] {
            assert!(StatusSet::parse(bad).is_err(), "{bad}");
        }
        let e = StatusSet::parse("6xx").unwrap_err().to_string();
        assert!(e.contains("1xx to 5xx") && e.contains("e.g."), "{e}");
        for ok in ["0", "499", "999", "0-99", "1XX"] {
            assert!(StatusSet::parse(ok).is_ok(), "{ok}");
        }
        assert!(StatusSet::parse_or_none("none").unwrap().is_empty());
        assert!(StatusSet::parse_or_none(" ").unwrap().is_empty());
        // The canonical text reads back.
        for (text, canon) in [
            ("2xx, 3xx", "2xx,3xx"),
            ("403,429", "403,429"),
            ("500-504,404,1xx", "1xx,404,500-504"),
            (
                "0-999",
                "0-99,1xx,2xx,3xx,4xx,5xx,600-699,700-799,800-899,900-999",
            ),
            ("150-420", "150-199,2xx,3xx,400-420"),
        ] {
            let set = StatusSet::parse(text).unwrap();
            assert_eq!(set.to_string(), canon);
            assert_eq!(StatusSet::parse(canon).unwrap(), set);
        }
        assert_eq!(StatusSet::none().to_string(), "none");
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
        // Unknown names select nothing: refused, naming the classes.
        let e = AgentSelector::parse("robots").unwrap_err().to_string();
        assert!(
            e.contains("'robots'") && e.contains("crawler") && e.contains("e.g."),
            "{e}"
        );
        assert!(AgentSelector::parse("mobile,robots").is_err());
        for ok in [
            "GPTBot",
            "googlebot",
            "CURL",
            "python-requests",
            "Firefox",
            "Edge",
            "other-bot",
            "bots",
        ] {
            assert!(AgentSelector::parse(ok).is_ok(), "{ok}");
        }
        assert!(AgentSelector::parse("Windows 10").is_err());
        assert!(AgentSelector::parse("wikibot").is_err());
        assert!(AgentSelector::parse_with_names("WikiBot", &["wikibot"]).is_ok());
    }
}
