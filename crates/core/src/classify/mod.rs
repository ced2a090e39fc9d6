//! Request classification, done at report time so that rules can change without
//! re-ingesting: heavy or not (MediaWiki rules plus user classes), identity (anonymous,
//! identified, or unknown when the log cannot tell), user agent (family, device,
//! declared crawler), network prefix (/24 and /48 by default) and the real client behind
//! trusted proxies.
//!
//! A [`Classifier`] is built from a [`Config`] (a `logscope.toml` or `--rules FILE`, see
//! `fixtures/logscope.toml`) and command-line overrides, then asked about each row with
//! [`Classifier::classify`]. It keeps per-distinct-string caches (agents, host names),
//! so steady-state classification does not allocate.

pub mod agent;
pub mod config;
pub mod filter;
pub mod heavy;
pub mod net;

use std::fmt;
use std::net::IpAddr;

use rustc_hash::FxHashMap;
use serde::Serialize;

pub use agent::{AgentClassifier, AgentId, AgentInfo, AgentRule, BotKind, Device};
pub use config::{Config, ConfigError};
pub use filter::{AgentSelector, Filter, HostPattern, StatusSet};
pub use heavy::{HeavyClass, HeavyRule, HeavyRules};
pub use net::{ClientKey, TrustedProxies};

use crate::batch::Batch;

/// Whether a request came from a logged-in (identified) client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Identity {
    /// The log shows the client was not logged in.
    Anonymous,
    /// The log shows a user (authuser, Caddy `user_id`) or a session cookie.
    Identified,
    /// The log cannot tell.
    Unknown,
}

impl Identity {
    /// Every identity, in report order.
    pub const ALL: [Identity; 3] = [Identity::Anonymous, Identity::Identified, Identity::Unknown];

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Identity::Anonymous => "anonymous",
            Identity::Identified => "identified",
            Identity::Unknown => "unknown",
        }
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How identity is read from a log.
///
/// * A user name (`%u`, `$remote_user`, Caddy `user_id`) means **identified**.
/// * Where the log records whether a Cookie header was sent (Caddy): no Cookie header
///   means **anonymous** (no session can be logged in without one); a Cookie header
///   means **identified** when `session_cookie` is set — Caddy logs cookie values as
///   `REDACTED` by default, so the name itself cannot be checked and any Cookie header
///   counts — and **unknown** otherwise.
/// * Logs without cookie information (combined, common …): **unknown**, unless
///   `anonymous_without_user` says the site logs everybody in through HTTP auth, so that
///   `-` in the user field means anonymous.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IdentityRules {
    /// Name of the session cookie that marks a logged-in user (see above).
    pub session_cookie: Option<String>,
    /// The user field is authoritative: no user means anonymous.
    pub anonymous_without_user: bool,
}

impl IdentityRules {
    /// The identity of one request.
    #[inline]
    pub fn classify(&self, user: Option<&str>, has_cookie: Option<bool>) -> Identity {
        if user.is_some_and(|u| !u.is_empty() && u != "-") {
            return Identity::Identified;
        }
        match has_cookie {
            Some(false) => Identity::Anonymous,
            Some(true) if self.session_cookie.is_some() => Identity::Identified,
            Some(true) => Identity::Unknown,
            None if self.anonymous_without_user => Identity::Anonymous,
            None => Identity::Unknown,
        }
    }

    /// A one-line description for report notes.
    pub fn describe(&self) -> String {
        let mut s = String::from("identified = a user name");
        if let Some(c) = &self.session_cookie {
            s.push_str(&format!(" or a Cookie header (session cookie {c})"));
        }
        s.push_str("; anonymous = no Cookie header where the log records it");
        if self.anonymous_without_user {
            s.push_str(", or no user name");
        }
        s.push_str("; otherwise unknown");
        s
    }
}

/// Everything the reports know about one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowClass {
    /// The real client (behind trusted proxies), when it is an address.
    pub ip: Option<IpAddr>,
    /// The client: an address key, or a host name for logs that record names.
    pub client: ClientKey,
    /// The client's network (/24, /48 …); host names are their own group.
    pub prefix: ClientKey,
    /// Heavy class (0 = not heavy).
    pub heavy: HeavyClass,
    /// Identity.
    pub identity: Identity,
    /// User-agent classification id.
    pub agent: AgentId,
}

/// Which parts of a [`RowClass`] a command uses; the others are left at their
/// defaults (not heavy, unknown identity, no agent) and their columns need not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs {
    /// Heavy class (method, path, query).
    pub heavy: bool,
    /// Identity (user, has_cookie).
    pub identity: bool,
    /// User-agent class (user_agent).
    pub agent: bool,
}

impl Needs {
    /// Every part.
    pub const ALL: Needs = Needs {
        heavy: true,
        identity: true,
        agent: true,
    };

    /// Either part needed.
    pub fn or(self, o: Needs) -> Needs {
        Needs {
            heavy: self.heavy || o.heavy,
            identity: self.identity || o.identity,
            agent: self.agent || o.agent,
        }
    }
}

/// Classifies rows; holds the rules and the caches.
#[derive(Debug)]
pub struct Classifier {
    /// Heavy-request rules.
    pub heavy: HeavyRules,
    /// Identity rules.
    pub identity: IdentityRules,
    /// User-agent classifier (with its cache).
    pub agents: AgentClassifier,
    /// IPv4 prefix length.
    pub v4_len: u8,
    /// IPv6 prefix length.
    pub v6_len: u8,
    /// Trusted proxies.
    pub trust: TrustedProxies,
    /// The parts rows are classified for (default: all).
    pub needs: Needs,
    names: Vec<Box<str>>,
    name_ids: FxHashMap<Box<str>, u32>,
    memo_agents: Vec<AgentId>,
    memo_heavy: Vec<u16>,
    memo_heavy_pairs: FxHashMap<(u32, u32), u16>,
}

const UNSET: AgentId = AgentId::MAX;
/// Heavy memo: not worked out yet / depends on the query; other values are the class.
const HEAVY_UNSET: u16 = u16::MAX;
const HEAVY_BY_QUERY: u16 = u16::MAX - 1;

impl Filter {
    /// The parts of a [`RowClass`] this filter looks at.
    pub fn needs(&self) -> Needs {
        Needs {
            heavy: self.heavy.is_some(),
            identity: self.identity.is_some(),
            agent: self.agent.is_some(),
        }
    }
}

/// The rows of one batch being classified ([`Classifier::batch`]): the agent class is
/// worked out once per distinct User-Agent slot, and the heavy class once per distinct
/// path (or method and path) of a coded batch where the rules say the query cannot
/// change it (row by row otherwise).
/// Give it back with [`Classifier::end_batch`] to reuse its buffers.
pub struct BatchClass<'b> {
    b: &'b Batch,
    coded_heavy: bool,
    by_pair: bool,
    agents: Vec<AgentId>,
    /// Per path slot (the last one for a null path).
    heavy: Vec<u16>,
    heavy_pairs: FxHashMap<(u32, u32), u16>,
}

impl BatchClass<'_> {
    /// Classifies row `i` of the batch: the same answer as [`Classifier::classify`].
    #[inline]
    pub fn classify(&mut self, cls: &mut Classifier, i: usize) -> RowClass {
        let b = self.b;
        let agent = if !cls.needs.agent {
            agent::NO_AGENT
        } else if self.agents.is_empty() {
            cls.agents.id(b.user_agent.get(i))
        } else {
            match b.user_agent.code(i) {
                None => cls.agents.id(None),
                Some(k) => {
                    let slot = &mut self.agents[k as usize];
                    if *slot == UNSET {
                        *slot = cls.agents.id(b.user_agent.value(k));
                    }
                    *slot
                }
            }
        };
        let heavy = if !cls.needs.heavy {
            HeavyClass::NONE
        } else if self.coded_heavy {
            let path_slot = b.path.code(i);
            let memo = if self.by_pair {
                let key = (
                    b.method.code(i).unwrap_or(crate::batch::NULL_CODE),
                    path_slot.unwrap_or(crate::batch::NULL_CODE),
                );
                self.heavy_pairs.entry(key).or_insert(HEAVY_UNSET)
            } else {
                let k = path_slot.map_or(self.heavy.len() - 1, |k| k as usize);
                &mut self.heavy[k]
            };
            if *memo == HEAVY_UNSET {
                *memo = match cls.heavy.without_query(b.method.get(i), b.path.get(i)) {
                    Some(c) => c.0,
                    None => HEAVY_BY_QUERY,
                };
            }
            if *memo == HEAVY_BY_QUERY {
                cls.heavy
                    .classify(b.method.get(i), b.path.get(i), b.query.get(i))
            } else {
                HeavyClass(*memo)
            }
        } else {
            cls.heavy
                .classify(b.method.get(i), b.path.get(i), b.query.get(i))
        };
        cls.finish(b, i, heavy, agent)
    }
}

impl Default for Classifier {
    fn default() -> Self {
        Classifier::new(
            HeavyRules::default(),
            IdentityRules::default(),
            AgentClassifier::default(),
            24,
            48,
            TrustedProxies::default(),
        )
    }
}

impl Classifier {
    /// A classifier from its parts.
    pub fn new(
        heavy: HeavyRules,
        identity: IdentityRules,
        agents: AgentClassifier,
        v4_len: u8,
        v6_len: u8,
        trust: TrustedProxies,
    ) -> Classifier {
        Classifier {
            heavy,
            identity,
            agents,
            v4_len: v4_len.min(32),
            v6_len: v6_len.min(128),
            trust,
            needs: Needs::ALL,
            names: Vec::new(),
            name_ids: FxHashMap::default(),
            memo_agents: Vec::new(),
            memo_heavy: Vec::new(),
            memo_heavy_pairs: FxHashMap::default(),
        }
    }

    /// Classifies row `i` of `b`.
    #[inline]
    pub fn classify(&mut self, b: &Batch, i: usize) -> RowClass {
        let heavy = if self.needs.heavy {
            self.heavy
                .classify(b.method.get(i), b.path.get(i), b.query.get(i))
        } else {
            HeavyClass::NONE
        };
        let agent = if self.needs.agent {
            self.agents.id(b.user_agent.get(i))
        } else {
            agent::NO_AGENT
        };
        self.finish(b, i, heavy, agent)
    }

    /// Starts classifying the rows of `b`: work that depends on one column value only
    /// is then done once per distinct value of a coded column (see [`BatchClass`]).
    pub fn batch<'b>(&mut self, b: &'b Batch) -> BatchClass<'b> {
        let mut agents = std::mem::take(&mut self.memo_agents);
        agents.clear();
        if self.needs.agent && b.user_agent.is_coded() {
            agents.resize(b.user_agent.slots(), UNSET);
        }
        let mut heavy = std::mem::take(&mut self.memo_heavy);
        heavy.clear();
        let mut heavy_pairs = std::mem::take(&mut self.memo_heavy_pairs);
        heavy_pairs.clear();
        let coded_heavy = self.needs.heavy && b.method.is_coded() && b.path.is_coded();
        let by_pair = self.heavy.uses_method();
        if coded_heavy && !by_pair {
            heavy.resize(b.path.slots() + 1, HEAVY_UNSET);
        }
        BatchClass {
            b,
            coded_heavy,
            by_pair,
            agents,
            heavy,
            heavy_pairs,
        }
    }

    /// Gives back the buffers of a finished [`BatchClass`] for the next batch.
    pub fn end_batch(&mut self, bc: BatchClass<'_>) {
        self.memo_agents = bc.agents;
        self.memo_heavy = bc.heavy;
        self.memo_heavy_pairs = bc.heavy_pairs;
    }

    #[inline]
    fn finish(&mut self, b: &Batch, i: usize, heavy: HeavyClass, agent: AgentId) -> RowClass {
        let ip = if self.trust.is_empty() {
            b.ip[i]
        } else if b.client_list.get(i).copied().unwrap_or(false) {
            self.trust.real_client_of_list(b.xff.get(i).unwrap_or(""))
        } else {
            self.trust.real_client(b.ip[i], b.xff.get(i))
        };
        let (client, prefix) = match ip {
            Some(ip) => (
                ClientKey::addr(ip),
                ClientKey::prefix(ip, self.v4_len, self.v6_len),
            ),
            None => {
                let name = if b.ip[i].is_some() {
                    "(unknown behind proxy)"
                } else {
                    b.client.get(i).unwrap_or("(none)")
                };
                let k = ClientKey::Name(self.intern_name(name));
                (k, k)
            }
        };
        let identity = if self.needs.identity {
            self.identity.classify(b.user.get(i), b.has_cookie[i])
        } else {
            Identity::Unknown
        };
        RowClass {
            ip,
            client,
            prefix,
            heavy,
            identity,
            agent,
        }
    }

    fn intern_name(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.name_ids.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.into());
        self.name_ids.insert(name.into(), i);
        i
    }

    /// A key as text: addresses and networks in the usual notation, host names as
    /// written in the log (unescaped: escape before printing).
    pub fn key_label(&self, k: ClientKey) -> String {
        match k {
            ClientKey::Name(i) => self
                .names
                .get(i as usize)
                .map_or_else(|| "?".into(), |s| s.to_string()),
            other => other.to_string(),
        }
    }

    /// Ordering of keys for tie-breaks: IPv4 numerically, then IPv6, then names
    /// alphabetically.
    pub fn key_cmp(&self, a: ClientKey, b: ClientKey) -> std::cmp::Ordering {
        match (a, b) {
            (ClientKey::Name(x), ClientKey::Name(y)) => {
                self.names[x as usize].cmp(&self.names[y as usize])
            }
            _ => a.order().cmp(&b.order()),
        }
    }

    /// `/24` or `/24 and /48`-style name of the prefix lengths.
    pub fn prefix_name(&self) -> String {
        format!("/{} (IPv4), /{} (IPv6)", self.v4_len, self.v6_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;

    #[test]
    fn identity_never_assumes_anonymous() {
        let r = IdentityRules::default();
        assert_eq!(r.classify(Some("alice"), None), Identity::Identified);
        assert_eq!(r.classify(None, None), Identity::Unknown);
        assert_eq!(r.classify(Some("-"), None), Identity::Unknown);
        assert_eq!(r.classify(None, Some(false)), Identity::Anonymous);
        assert_eq!(r.classify(None, Some(true)), Identity::Unknown);
        let c = IdentityRules {
            session_cookie: Some("wiki_session".into()),
            anonymous_without_user: true,
        };
        assert_eq!(c.classify(None, Some(true)), Identity::Identified);
        assert_eq!(c.classify(None, None), Identity::Anonymous);
    }

    #[test]
    fn classify_rows() {
        let mut b = Batch::default();
        let mut r = Record {
            ts_ms: 1,
            client: b"10.0.0.1",
            ip: Some("10.0.0.1".parse().unwrap()),
            method: Some(b"GET"),
            path: Some(b"/index.php"),
            query: Some(b"search=x"),
            user_agent: Some(b"curl/8.0"),
            xff: Some(b"203.0.113.9, 10.0.0.2"),
            has_cookie: Some(false),
            ..Record::default()
        };
        b.push(&r, 1);
        r.client = b"host.example.net";
        r.ip = None;
        b.push(&r, 2);
        let mut c = Classifier::default();
        let rc = c.classify(&b, 0);
        assert_eq!(c.key_label(rc.prefix), "10.0.0.0/24");
        assert!(rc.heavy.is_heavy());
        assert_eq!(rc.identity, Identity::Anonymous);
        assert_eq!(c.agents.info(rc.agent).label, "curl");
        let rc2 = c.classify(&b, 1);
        assert_eq!(c.key_label(rc2.prefix), "host.example.net");
        assert_eq!(rc2.prefix, rc2.client);
        c.trust = TrustedProxies::new(vec!["10.0.0.0/8".parse().unwrap()]);
        let rc = c.classify(&b, 0);
        assert_eq!(c.key_label(rc.client), "203.0.113.9");
        assert_eq!(c.key_label(rc.prefix), "203.0.113.0/24");
    }
}
