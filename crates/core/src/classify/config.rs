//! The classification config file (`logscope.toml` or `--rules FILE`): prefix lengths,
//! trusted proxies, heavy classes, identity and agent rules. Sections other commands
//! use may sit in the same file; they are ignored here. See `fixtures/logscope.toml`.

use ipnet::IpNet;
use regex::Regex;
use serde::Deserialize;

use super::agent::{AgentClassifier, AgentRule, BotKind, Device};
use super::heavy::{HeavyRule, HeavyRules, MEDIAWIKI_PATHS};
use super::net::TrustedProxies;
use super::{Classifier, IdentityRules};

/// A problem with the config file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Not valid TOML, or an unknown key in a classification section.
    #[error("{0}")]
    Toml(String),
    /// A regex that does not compile.
    #[error("{what}: bad regex {regex:?}: {detail}")]
    Regex {
        /// Where it is.
        what: String,
        /// The regex.
        regex: String,
        /// Why.
        detail: String,
    },
    /// Any other bad value.
    #[error("{0}")]
    Value(String),
}

/// The file, as written.
#[derive(Debug, Default, Deserialize)]
pub struct Config {
    /// `[prefix]`.
    #[serde(default)]
    pub prefix: PrefixConfig,
    /// `trust_proxy = ["10.0.0.0/8", …]`.
    #[serde(default)]
    pub trust_proxy: Vec<String>,
    /// `[heavy]`.
    #[serde(default)]
    pub heavy: HeavyConfig,
    /// `[identity]`.
    #[serde(default)]
    pub identity: IdentityConfig,
    /// `[[agent]]`.
    #[serde(default)]
    pub agent: Vec<AgentConfig>,
}

/// `[prefix]`: network prefix lengths.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrefixConfig {
    /// IPv4 prefix length (default 24).
    #[serde(default = "d24")]
    pub v4: u8,
    /// IPv6 prefix length (default 48).
    #[serde(default = "d48")]
    pub v6: u8,
}

impl Default for PrefixConfig {
    fn default() -> Self {
        PrefixConfig { v4: 24, v6: 48 }
    }
}

fn d24() -> u8 {
    24
}
fn d48() -> u8 {
    48
}

/// `[heavy]`: the built-in MediaWiki rules and user classes.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeavyConfig {
    /// Use the MediaWiki rules; unset, the rows decide ([`HeavyRules::settle`]).
    #[serde(default)]
    pub mediawiki: Option<bool>,
    /// Paths of `index.php` (default `/index.php`, `/w/index.php`).
    #[serde(default)]
    pub mediawiki_paths: Option<Vec<String>>,
    /// `[[heavy.class]]`: user classes, tried before the MediaWiki rules, first match wins.
    #[serde(default)]
    pub class: Vec<ClassConfig>,
}

/// One `[[heavy.class]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassConfig {
    /// Class name.
    pub name: String,
    /// Regex on the path.
    pub path: Option<String>,
    /// Regex on the query string.
    pub query: Option<String>,
    /// Methods; empty = any.
    #[serde(default)]
    pub methods: Vec<String>,
    /// Matching requests are never heavy.
    #[serde(default)]
    pub exclude: bool,
}

/// `[identity]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityConfig {
    /// A Cookie header means identified (see [`IdentityRules`]).
    pub session_cookie: Option<String>,
    /// No user name means anonymous (sites behind HTTP auth).
    #[serde(default)]
    pub anonymous_without_user: bool,
}

/// One `[[agent]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Name shown in reports.
    pub name: String,
    /// Regex on the raw User-Agent.
    pub regex: String,
    /// `ios`, `android`, `desktop`, `other`, `tool`, `bot` (default), `unknown`.
    pub device: Option<String>,
    /// For bots: `ai`, `search`, `seo`, `social`, `monitor`, `scanner`, `other`.
    pub kind: Option<String>,
}

/// Command-line overrides of the file.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// `--prefix-v4`.
    pub v4: Option<u8>,
    /// `--prefix-v6`.
    pub v6: Option<u8>,
    /// `--trust-proxy` (added to the file's).
    pub trust_proxy: Vec<IpNet>,
    /// `--session-cookie`.
    pub session_cookie: Option<String>,
}

fn regex(what: &str, r: &str) -> Result<Regex, ConfigError> {
    Regex::new(r).map_err(|e| ConfigError::Regex {
        what: what.into(),
        regex: r.into(),
        detail: e.to_string(),
    })
}

impl Config {
    /// Parses a config file's text.
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Toml(e.to_string()))
    }

    /// The classifier this config (plus overrides) describes.
    pub fn classifier(&self, o: &Overrides) -> Result<Classifier, ConfigError> {
        let v4 = o.v4.unwrap_or(self.prefix.v4);
        let v6 = o.v6.unwrap_or(self.prefix.v6);
        if v4 > 32 || v6 > 128 {
            return Err(ConfigError::Value(format!(
                "prefix lengths must be at most 32 (IPv4) and 128 (IPv6), not /{v4} and /{v6}"
            )));
        }
        let mut trust = Vec::new();
        for t in &self.trust_proxy {
            trust.push(parse_cidr(t).map_err(|e| ConfigError::Value(e.to_string()))?);
        }
        trust.extend(o.trust_proxy.iter().copied());
        let mut classes = Vec::new();
        for (n, c) in self.heavy.class.iter().enumerate() {
            let what = format!("[[heavy.class]] #{} ({})", n + 1, c.name);
            if c.name.trim().is_empty() {
                return Err(ConfigError::Value(format!("{what}: empty name")));
            }
            classes.push(HeavyRule {
                name: c.name.clone(),
                path: c.path.as_deref().map(|r| regex(&what, r)).transpose()?,
                query: c.query.as_deref().map(|r| regex(&what, r)).transpose()?,
                methods: c.methods.iter().map(|m| m.to_ascii_uppercase()).collect(),
                exclude: c.exclude,
            });
        }
        let paths = self
            .heavy
            .mediawiki_paths
            .clone()
            .unwrap_or_else(|| MEDIAWIKI_PATHS.iter().map(|s| s.to_string()).collect());
        let heavy = HeavyRules::new(self.heavy.mediawiki, paths, classes);
        let identity = IdentityRules {
            session_cookie: o
                .session_cookie
                .clone()
                .or_else(|| self.identity.session_cookie.clone()),
            anonymous_without_user: self.identity.anonymous_without_user,
        };
        let mut rules = Vec::new();
        for (n, a) in self.agent.iter().enumerate() {
            let what = format!("[[agent]] #{} ({})", n + 1, a.name);
            let device = match &a.device {
                None => Device::Bot,
                Some(d) => Device::parse(d).ok_or_else(|| {
                    ConfigError::Value(format!(
                        "{what}: unknown device {d:?} (ios, android, desktop, other, tool, bot, unknown)"
                    ))
                })?,
            };
            let kind = match &a.kind {
                None => None,
                Some(k) => Some(BotKind::parse(k).ok_or_else(|| {
                    ConfigError::Value(format!(
                        "{what}: unknown kind {k:?} (ai, search, seo, social, monitor, scanner, other)"
                    ))
                })?),
            };
            rules.push(AgentRule {
                name: a.name.clone(),
                regex: regex(&what, &a.regex)?,
                device,
                kind,
            });
        }
        Ok(Classifier::new(
            heavy,
            identity,
            AgentClassifier::new(rules),
            v4,
            v6,
            TrustedProxies::new(trust),
        ))
    }
}

/// A network that did not parse (the text, trimmed).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad network {0:?} (e.g. 10.0.0.0/8, 2001:db8::/32, 192.0.2.7)")]
pub struct CidrError(pub String);

/// Parses `10.0.0.0/8`, `2001:db8::/32`, or a bare address (a /32 or /128).
pub fn parse_cidr(s: &str) -> Result<IpNet, CidrError> {
    let s = s.trim();
    if let Ok(n) = s.parse::<IpNet>() {
        return Ok(n.trunc());
    }
    s.parse::<std::net::IpAddr>()
        .map(IpNet::from)
        .map_err(|_| CidrError(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_config() {
        let c = Config::from_toml(
            r#"
trust_proxy = ["10.0.0.0/8"]
[prefix]
v4 = 16
[heavy]
mediawiki_paths = ["/w/index.php"]
[[heavy.class]]
name = "api-search"
path = '^/w/api\.php$'
query = '(^|&)list=search'
methods = ["get"]
[identity]
session_cookie = "wiki_session"
[[agent]]
name = "Monitor"
regex = "mon/"
kind = "monitor"
[replay]
whatever = 1
"#,
        )
        .unwrap();
        let cl = c
            .classifier(&Overrides {
                v6: Some(64),
                ..Overrides::default()
            })
            .unwrap();
        assert_eq!((cl.v4_len, cl.v6_len), (16, 64));
        assert_eq!(cl.trust.nets().len(), 1);
        assert!(cl.heavy.names().iter().any(|n| n == "api-search"));
        assert_eq!(cl.identity.session_cookie.as_deref(), Some("wiki_session"));
    }

    #[test]
    fn errors_are_named() {
        let e = Config::from_toml("[heavy]\nmediawik = true\n").unwrap_err();
        assert!(e.to_string().contains("mediawik"), "{e}");
        let c = Config::from_toml("[[heavy.class]]\nname = \"x\"\npath = \"(\"\n").unwrap();
        let e = c.classifier(&Overrides::default()).unwrap_err();
        assert!(e.to_string().contains("[[heavy.class]] #1 (x)"), "{e}");
        let c = Config::from_toml("[[agent]]\nname = \"x\"\nregex = \"x\"\ndevice = \"phone\"\n")
            .unwrap();
        assert!(c.classifier(&Overrides::default()).is_err());
        assert!(parse_cidr("10.1.2.3").unwrap().to_string() == "10.1.2.3/32");
        assert!(parse_cidr("10.1.2.3/8").unwrap().to_string() == "10.0.0.0/8");
        assert!(parse_cidr("nope").is_err());
    }
}
