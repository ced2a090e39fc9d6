//! Zones and rules from TOML: a whole limiter configuration (an nginx server with several
//! locations, a Caddy `rate_limit` handler with many zones) as one replay candidate.
//!
//! ```toml
//! name = "example"
//! dialect = "nginx"            # or "caddy"; see Dialect
//!
//! [exempt]                     # requests never limited (optional)
//! cidr = ["10.0.0.0/8"]
//! ua_regex = "^internal-agent/"
//! identified = true
//! users = ["svc-edge"]         # a service's credential...
//! credential_refusals = [401, 403, 407]   # ...only where the server accepted it (default)
//!
//! [[zones]]
//! name = "perip"
//! rate = "5r/s"                # or: events = 300, window = "10m"
//! algo = "nginx"               # default: the dialect's own algorithm
//! key = "ip"                   # site, ip, prefix, prefix/N, agent, host, user, …
//! burst = 10                   # nginx: default for the rules' limit_req
//! nodelay = true
//! # spec = "5r/s,algo=nginx,key=ip,burst=10,nodelay"   (the same, as one string)
//!
//! [[rules]]
//! name = "/ip/"
//! match = { path_prefix = ["/ip/"], method = ["GET"] }
//! limits = [{ zone = "perip", burst = 10, nodelay = true }]   # or ["perip"]
//! ```
//!
//! Matcher fields: `path_prefix`, `path`, `path_regex`, `query_regex`, `method`,
//! `status`, `host`, `ua_regex`, `user` (a tier list of user names), `user_regex`,
//! `referer_regex`, `has_referer`, `has_cookie`, `heavy`,
//! `identified`, `anonymous`, `cidr`, `not` (a matcher or a list; none may match).

use std::path::Path;

use ipnet::IpNet;
use regex::bytes::Regex;
use serde::Deserialize;

use super::key::KeySpec;
use super::matcher::{Exempt, Matcher};
use super::policy::{Dialect, LimitRef, Policy, PolicyError};
use super::spec::{Algorithm, CostKind, LimitSpec, NginxDelay, SpecError};
use super::zone::Zone;
use crate::rate::Rate;

/// Why a configuration did not load.
#[derive(Debug, thiserror::Error)]
pub enum LimitConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// Not a regular file, or larger than [`crate::conf_file::CONFIG_CAP`] (the message
    /// without the file name, which the caller gives).
    #[error("{}", .0.problem())]
    Refused(crate::conf_file::ReadError),
    /// Not valid TOML, or a field of the wrong type or name.
    #[error("{0}")]
    Toml(String),
    /// A zone's limit is invalid.
    #[error("zone `{zone}`: {source}")]
    Zone {
        /// The zone.
        zone: String,
        /// What is wrong.
        source: SpecError,
    },
    /// Something else about a zone or rule.
    #[error("{place}: {message}")]
    Invalid {
        /// `zone "x"`, `rule "y"`, `exempt`…
        place: String,
        /// What is wrong.
        message: String,
    },
    /// A rule does not fit its zones.
    #[error(transparent)]
    Policy(#[from] PolicyError),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCfg {
    name: Option<String>,
    description: Option<String>,
    dialect: Option<String>,
    exempt: Option<ExemptCfg>,
    #[serde(default)]
    zones: Vec<ZoneCfg>,
    #[serde(default)]
    rules: Vec<RuleCfg>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ZoneCfg {
    name: String,
    description: Option<String>,
    spec: Option<String>,
    rate: Option<String>,
    events: Option<u64>,
    window: Option<String>,
    algo: Option<String>,
    key: Option<String>,
    burst: Option<u64>,
    queue: Option<u64>,
    nodelay: Option<bool>,
    delay: Option<u64>,
    cost: Option<String>,
    max_keys: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleCfg {
    name: Option<String>,
    #[serde(rename = "match")]
    matcher: Option<MatchCfg>,
    exempt: Option<ExemptCfg>,
    zone: Option<String>,
    #[serde(default)]
    limits: Vec<LimitCfg>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum LimitCfg {
    Name(String),
    Table(LimitTable),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitTable {
    zone: String,
    burst: Option<u64>,
    nodelay: Option<bool>,
    delay: Option<u64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    fn into_vec(self) -> Vec<T> {
        match self {
            OneOrMany::One(t) => vec![t],
            OneOrMany::Many(v) => v,
        }
    }
}

fn many<T>(v: Option<OneOrMany<T>>) -> Vec<T> {
    v.map(OneOrMany::into_vec).unwrap_or_default()
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct MatchCfg {
    path_prefix: Option<OneOrMany<String>>,
    path: Option<OneOrMany<String>>,
    path_regex: Option<String>,
    query_regex: Option<String>,
    method: Option<OneOrMany<String>>,
    status: Option<OneOrMany<u16>>,
    host: Option<OneOrMany<String>>,
    ua_regex: Option<String>,
    user: Option<OneOrMany<String>>,
    user_regex: Option<String>,
    referer_regex: Option<String>,
    has_referer: Option<bool>,
    has_cookie: Option<bool>,
    heavy: Option<bool>,
    identified: Option<bool>,
    anonymous: Option<bool>,
    cidr: Option<OneOrMany<String>>,
    not: Option<OneOrMany<Box<MatchCfg>>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ExemptCfg {
    cidr: Option<OneOrMany<String>>,
    ua_regex: Option<String>,
    #[serde(default)]
    identified: bool,
    users: Option<OneOrMany<String>>,
    credential_refusals: Option<Vec<u16>>,
}

impl Policy {
    /// Reads a policy from TOML text (format in the module documentation of
    /// `replay::config` and the examples in `fixtures/limits/`).
    pub fn from_toml(text: &str) -> Result<Policy, LimitConfigError> {
        let cfg: FileCfg =
            toml::from_str(text).map_err(|e| LimitConfigError::Toml(e.to_string()))?;
        build(cfg)
    }

    /// Reads a policy from a TOML file (a regular file of at most
    /// [`crate::conf_file::CONFIG_CAP`]); the name defaults to the file stem.
    pub fn from_toml_file(path: impl AsRef<Path>) -> Result<Policy, LimitConfigError> {
        let path = path.as_ref();
        let bytes =
            crate::conf_file::read(path, crate::conf_file::CONFIG_CAP).map_err(|e| match e {
                crate::conf_file::ReadError::Io { source, .. } => LimitConfigError::Io {
                    path: crate::escape::path(path),
                    source,
                },
                e => LimitConfigError::Refused(e),
            })?;
        let text = String::from_utf8(bytes).map_err(|_| LimitConfigError::Io {
            path: crate::escape::path(path),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            ),
        })?;
        let cfg: FileCfg = toml::from_str(&text)
            .map_err(|e| LimitConfigError::Toml(format!("{}: {e}", path.display())))?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut p = build(cfg)?;
        if p.name().is_empty() {
            p.set_name(stem);
        }
        Ok(p)
    }
}

fn invalid(place: impl Into<String>, message: impl Into<String>) -> LimitConfigError {
    LimitConfigError::Invalid {
        place: place.into(),
        message: message.into(),
    }
}

fn build(cfg: FileCfg) -> Result<Policy, LimitConfigError> {
    let dialect = match cfg.dialect.as_deref() {
        None => Dialect::Nginx,
        Some(d) => Dialect::parse(d).ok_or_else(|| {
            invalid(
                "dialect",
                format!("unknown dialect `{d}`; use nginx or caddy"),
            )
        })?,
    };
    let mut p = Policy::new(cfg.name.unwrap_or_default(), dialect);
    if let Some(d) = cfg.description {
        p.set_description(d);
    }
    if let Some(e) = cfg.exempt {
        p.set_exempt(exempt(e, "exempt")?);
    }
    let mut names: Vec<String> = Vec::new();
    for z in cfg.zones {
        if names.contains(&z.name) {
            return Err(invalid(format!("zone `{}`", z.name), "defined twice"));
        }
        let name = z.name.clone();
        let max_keys = z.max_keys;
        let spec = zone_spec(z, dialect)?;
        let zone = Zone::with_max_keys(name.clone(), spec, max_keys).map_err(|source| {
            LimitConfigError::Zone {
                zone: name.clone(),
                source,
            }
        })?;
        p.add_zone(zone)?;
        names.push(name);
    }
    for (i, r) in cfg.rules.into_iter().enumerate() {
        let name = r.name.unwrap_or_else(|| format!("#{}", i + 1));
        let place = format!("rule `{name}`");
        let matcher = matcher(r.matcher.unwrap_or_default(), &place)?;
        let ex = match r.exempt {
            Some(e) => exempt(e, &place)?,
            None => Exempt::default(),
        };
        let mut limits = Vec::new();
        let mut entries: Vec<LimitCfg> = r.zone.map(LimitCfg::Name).into_iter().collect();
        entries.extend(r.limits);
        for l in entries {
            let (zname, burst, nodelay, delay) = match l {
                LimitCfg::Name(n) => (n, None, None, None),
                LimitCfg::Table(t) => (t.zone, t.burst, t.nodelay, t.delay),
            };
            let zi = names.iter().position(|n| *n == zname).ok_or_else(|| {
                invalid(
                    &place,
                    format!("no zone named `{zname}` (zones: {})", names.join(", ")),
                )
            })?;
            let delay = match (nodelay, delay) {
                (Some(true), Some(_)) => {
                    return Err(invalid(&place, "give either nodelay or delay, not both"));
                }
                (Some(true), None) => Some(NginxDelay::NoDelay),
                (_, Some(d)) => Some(NginxDelay::Delay(d)),
                (Some(false), None) => Some(NginxDelay::Default),
                (None, None) => None,
            };
            limits.push(LimitRef {
                zone: zi as u16,
                burst,
                delay,
            });
        }
        p.add_rule(name, matcher, ex, &limits)?;
    }
    Ok(p)
}

fn zone_spec(z: ZoneCfg, dialect: Dialect) -> Result<LimitSpec, LimitConfigError> {
    let place = format!("zone `{}`", z.name);
    let zerr = |source: SpecError| LimitConfigError::Zone {
        zone: z.name.clone(),
        source,
    };
    let mut spec = match &z.spec {
        Some(s) => {
            let mut spec = LimitSpec::parse(s).map_err(zerr)?;
            if z.algo.is_none() && !s.contains("algo") {
                spec.algorithm = default_algo(dialect);
            }
            spec
        }
        None => {
            let rate = match (&z.rate, z.events, &z.window) {
                (Some(r), None, None) => {
                    Rate::parse(r).map_err(|e| invalid(&place, format!("bad rate `{r}`: {e}")))?
                }
                (None, Some(n), Some(w)) => {
                    let r = format!("{n}/{w}");
                    Rate::parse(&r)
                        .map_err(|e| invalid(&place, format!("bad events/window: {e}")))?
                }
                _ => {
                    return Err(invalid(
                        &place,
                        "give `rate = \"5r/s\"`, or `events` and `window`, or `spec`",
                    ));
                }
            };
            LimitSpec::new(default_algo(dialect), rate)
        }
    };
    if let Some(a) = &z.algo {
        spec.algorithm = Algorithm::parse(a).ok_or_else(|| {
            invalid(
                &place,
                format!(
                    "unknown algorithm `{a}`; known: {}",
                    super::spec::algo_names()
                ),
            )
        })?;
    }
    if let Some(k) = &z.key {
        spec.key = KeySpec::parse(k).ok_or_else(|| {
            invalid(
                &place,
                format!("unknown key `{k}`; known: {}", super::key::KEY_NAMES),
            )
        })?;
    }
    if let Some(c) = &z.cost {
        spec.cost = CostKind::parse(c).ok_or_else(|| {
            invalid(
                &place,
                format!("unknown cost `{c}`; known: requests, request-time, bytes"),
            )
        })?;
    }
    if z.burst.is_some() && z.queue.is_some() {
        return Err(invalid(&place, "give burst or queue, not both"));
    }
    if let Some(b) = z.burst.or(z.queue) {
        spec.burst = Some(b);
    }
    match (z.nodelay, z.delay) {
        (Some(true), Some(_)) => return Err(invalid(&place, "give either nodelay or delay")),
        (Some(true), None) => spec.delay = NginxDelay::NoDelay,
        (_, Some(d)) => spec.delay = NginxDelay::Delay(d),
        _ => {}
    }
    if spec.name.is_none() {
        spec.name = Some(z.name.clone());
    }
    let _ = z.description;
    Ok(spec)
}

fn default_algo(d: Dialect) -> Algorithm {
    match d {
        Dialect::Nginx => Algorithm::Nginx,
        Dialect::Caddy => Algorithm::Caddy,
    }
}

fn regex(s: &str, place: &str, field: &str) -> Result<Regex, LimitConfigError> {
    Regex::new(s).map_err(|e| invalid(place, format!("{field}: {e}")))
}

fn cidrs(v: Vec<String>, place: &str) -> Result<Vec<IpNet>, LimitConfigError> {
    v.into_iter()
        .map(|s| {
            s.parse::<IpNet>()
                .or_else(|_| s.parse::<std::net::IpAddr>().map(IpNet::from))
                .map_err(|_| invalid(place, format!("`{s}` is not an address or CIDR network")))
        })
        .collect()
}

fn bytes(v: Vec<String>) -> Vec<Vec<u8>> {
    v.into_iter().map(String::into_bytes).collect()
}

fn matcher(m: MatchCfg, place: &str) -> Result<Matcher, LimitConfigError> {
    let identified = m.identified;
    let anonymous = m.anonymous;
    Ok(Matcher {
        path_prefix: bytes(many(m.path_prefix)),
        path: bytes(many(m.path)),
        path_regex: m
            .path_regex
            .map(|s| regex(&s, place, "path_regex"))
            .transpose()?,
        query_regex: m
            .query_regex
            .map(|s| regex(&s, place, "query_regex"))
            .transpose()?,
        method: bytes(many(m.method)),
        status: many(m.status),
        host: bytes(many(m.host)),
        ua_regex: m
            .ua_regex
            .map(|s| regex(&s, place, "ua_regex"))
            .transpose()?,
        user: bytes(many(m.user)),
        user_regex: m
            .user_regex
            .map(|s| regex(&s, place, "user_regex"))
            .transpose()?,
        referer_regex: m
            .referer_regex
            .map(|s| regex(&s, place, "referer_regex"))
            .transpose()?,
        has_referer: m.has_referer,
        has_cookie: m.has_cookie,
        heavy: m.heavy,
        identified,
        anonymous,
        cidr: cidrs(many(m.cidr), place)?,
        not: many(m.not)
            .into_iter()
            .map(|n| matcher(*n, place))
            .collect::<Result<_, _>>()?,
    })
}

fn exempt(e: ExemptCfg, place: &str) -> Result<Exempt, LimitConfigError> {
    Ok(Exempt {
        cidr: cidrs(many(e.cidr), place)?,
        ua_regex: e
            .ua_regex
            .map(|s| regex(&s, place, "ua_regex"))
            .transpose()?,
        identified: e.identified,
        users: bytes(many(e.users)),
        credential_refusals: e
            .credential_refusals
            .unwrap_or_else(|| super::matcher::CREDENTIAL_REFUSALS.to_vec()),
    })
}
