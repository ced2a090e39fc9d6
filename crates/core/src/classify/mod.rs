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
pub mod referrer;
pub mod static_files;

use std::fmt;
use std::net::IpAddr;

use rustc_hash::FxHashMap;
use serde::Serialize;

pub use agent::{AgentClassifier, AgentId, AgentInfo, AgentRule, BotKind, Device};
pub use config::{Config, ConfigError};
pub use filter::{AgentSelector, Filter, HostPattern, StatusSet};
pub use heavy::{ByPath, HeavyClass, HeavyRule, HeavyRules};
pub use net::{ClientKey, TrustedProxies};
pub use referrer::referring_site;

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

    /// No part: the row's client only.
    pub const NONE: Needs = Needs {
        heavy: false,
        identity: false,
        agent: false,
    };

    /// The User-Agent class.
    pub const AGENT: Needs = Needs {
        agent: true,
        ..Needs::NONE
    };

    /// The heavy class and the User-Agent class.
    pub const HEAVY_AND_AGENT: Needs = Needs {
        heavy: true,
        ..Needs::AGENT
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
    memo_heavy: HeavyMemo,
}

const UNSET: AgentId = AgentId::MAX;
/// Heavy memo: not worked out yet / depends on the query; other values are the class.
const HEAVY_UNSET: u16 = u16::MAX;
const HEAVY_BY_QUERY: u16 = u16::MAX - 1;
/// Heavy memo: decided by the query alone, by the MediaWiki rules.
const HEAVY_BY_MW_QUERY: u16 = u16::MAX - 2;

impl Filter {
    /// The parts of a [`RowClass`] this filter looks at.
    pub fn needs(&self) -> Needs {
        Needs {
            heavy: self.heavy.is_some(),
            identity: self.identity.is_some(),
            agent: self.agent.is_some() || self.impostors.is_some(),
        }
    }
}

/// The heavy class of the rows of one batch, worked out once per distinct path (or
/// method and path) of a coded batch where the rules say the query cannot change it,
/// row by row otherwise. Needs only the rules, so it also runs on the threads that
/// decode the dataset ([`heavy_classes`]).
#[derive(Debug, Default)]
struct HeavyMemo {
    coded: bool,
    by_pair: bool,
    /// Per path slot (the last one for a null path).
    per_path: Vec<u16>,
    pairs: FxHashMap<(u32, u32), u16>,
    /// Per query slot of a coded query column, for the rows whose class depends on the
    /// query: the (method, path) slots it was worked out for, and the class. A query
    /// value nearly always comes with one path, so this is a hit for every repeat.
    per_query: Vec<(u64, u16)>,
}

/// No (method, path) key in [`HeavyMemo::per_query`] yet.
const NO_PAIR: u64 = u64::MAX;

impl HeavyMemo {
    /// Readies `self` (its buffers reused) for the rows of `b`.
    fn start(&mut self, rules: &HeavyRules, b: &Batch) {
        self.per_path.clear();
        self.pairs.clear();
        self.per_query.clear();
        self.coded = b.method.is_coded() && b.path.is_coded();
        self.by_pair = rules.uses_method();
        if self.coded && !self.by_pair {
            self.per_path.resize(b.path.slots() + 1, HEAVY_UNSET);
        }
        if self.coded && b.query.is_coded() {
            self.per_query.resize(b.query.slots(), (NO_PAIR, 0));
        }
    }

    /// [`HeavyMemo::class`] of every row of a batch whose path and query are coded and
    /// whose rules ignore the method: per row the memo of its path's slot, and for a
    /// MediaWiki entry point ([`ByPath::MediaWikiQuery`], where the class is the
    /// query's alone) a class per query slot, two bytes each. `None` for other batches.
    fn coded_classes(&mut self, rules: &HeavyRules, b: &Batch) -> Option<Vec<HeavyClass>> {
        if !self.coded || self.by_pair {
            return None;
        }
        let n = b.len();
        let paths = b.path.codes().filter(|c| c.len() == n)?;
        let queries = b.query.codes().filter(|c| c.len() == n)?;
        let null_path = self.per_path.len().checked_sub(1)?;
        let mut per_query = vec![HEAVY_UNSET; b.query.slots()];
        let mut out = Vec::with_capacity(n);
        for (i, (&p, &q)) in paths.iter().zip(queries).enumerate() {
            let k = if p == crate::batch::NULL_CODE {
                null_path
            } else {
                p as usize
            };
            let by = self.per_path.get(k).copied().unwrap_or(HEAVY_UNSET);
            let class = if by == HEAVY_BY_MW_QUERY {
                match per_query.get_mut(q as usize) {
                    Some(m) => {
                        if *m == HEAVY_UNSET {
                            *m = rules.mediawiki_query(b.query.value(q)).0;
                        }
                        HeavyClass(*m)
                    }
                    // A null query (or a code past the slots: as row by row).
                    None => self.class(rules, b, i),
                }
            } else if by == HEAVY_UNSET || by == HEAVY_BY_QUERY {
                self.class(rules, b, i)
            } else {
                HeavyClass(by)
            };
            out.push(class);
        }
        Some(out)
    }

    /// The heavy class of row `i` of `b` (the batch given to [`HeavyMemo::start`]).
    #[inline]
    fn class(&mut self, rules: &HeavyRules, b: &Batch, i: usize) -> HeavyClass {
        if !self.coded {
            return rules.classify(b.method.get(i), b.path.get(i), b.query.get(i));
        }
        let path_slot = b.path.code(i);
        let memo = if self.by_pair {
            let key = (
                b.method.code(i).unwrap_or(crate::batch::NULL_CODE),
                path_slot.unwrap_or(crate::batch::NULL_CODE),
            );
            self.pairs.entry(key).or_insert(HEAVY_UNSET)
        } else {
            let k = path_slot.map_or(self.per_path.len() - 1, |k| k as usize);
            &mut self.per_path[k]
        };
        if *memo == HEAVY_UNSET {
            *memo = match rules.by_path(b.method.get(i), b.path.get(i)) {
                ByPath::Class(c) => c.0,
                ByPath::Query => HEAVY_BY_QUERY,
                ByPath::MediaWikiQuery => HEAVY_BY_MW_QUERY,
            };
        }
        let by = *memo;
        if by != HEAVY_BY_QUERY && by != HEAVY_BY_MW_QUERY {
            return HeavyClass(by);
        }
        let query_slot = if self.per_query.is_empty() {
            None
        } else {
            b.query.code(i)
        };
        let Some(q) = query_slot else {
            if by == HEAVY_BY_MW_QUERY {
                return rules.mediawiki_query(b.query.get(i));
            }
            return rules.classify(b.method.get(i), b.path.get(i), b.query.get(i));
        };
        let method = if self.by_pair {
            b.method.code(i).unwrap_or(crate::batch::NULL_CODE)
        } else {
            crate::batch::NULL_CODE
        };
        let pair =
            (u64::from(method) << 32) | u64::from(path_slot.unwrap_or(crate::batch::NULL_CODE));
        let slot = &mut self.per_query[q as usize];
        if slot.0 != pair {
            let class = if by == HEAVY_BY_MW_QUERY {
                rules.mediawiki_query(b.query.value(q))
            } else {
                rules.classify(b.method.get(i), b.path.get(i), b.query.value(q))
            };
            *slot = (pair, class.0);
        }
        HeavyClass(slot.1)
    }
}

/// The heavy class of every row of `b`: what [`BatchClass::classify`] finds, worked out
/// without the [`Classifier`]'s state, so that the dataset's decoding threads can run it
/// (the query of a heavy candidate is parsed row by row: the costly part of `heavy`) and
/// hand the classes to [`Classifier::batch_with`].
pub fn heavy_classes(rules: &HeavyRules, b: &Batch) -> Vec<HeavyClass> {
    let mut memo = HeavyMemo::default();
    memo.start(rules, b);
    if let Some(classes) = memo.coded_classes(rules, b) {
        return classes;
    }
    (0..b.len()).map(|i| memo.class(rules, b, i)).collect()
}

/// The rows of one batch being classified ([`Classifier::batch`]): the agent class is
/// worked out once per distinct User-Agent slot, the heavy class once per distinct
/// path where the query cannot change it (or taken from classes worked out
/// beforehand, [`Classifier::batch_with`]). Give it back with
/// [`Classifier::end_batch`] to reuse its buffers.
pub struct BatchClass<'b> {
    b: &'b Batch,
    agents: Vec<AgentId>,
    heavy: HeavyMemo,
    /// The heavy class of each row, when worked out beforehand.
    pre_heavy: Option<&'b [HeavyClass]>,
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
            self.agent_of_code(cls, b.user_agent.code(i))
        };
        let heavy = if !cls.needs.heavy {
            HeavyClass::NONE
        } else if let Some(pre) = self.pre_heavy {
            pre[i]
        } else {
            self.heavy.class(&cls.heavy, b, i)
        };
        cls.finish(b, i, heavy, agent)
    }
}

impl BatchClass<'_> {
    /// The agent class of User-Agent slot `code` of the batch (`None`: no User-Agent),
    /// worked out once per slot.
    pub fn agent_of_code(&mut self, cls: &mut Classifier, code: Option<u32>) -> AgentId {
        let Some(k) = code else {
            return cls.agents.id(None);
        };
        match self.agents.get_mut(k as usize) {
            Some(slot) => {
                if *slot == UNSET {
                    *slot = cls.agents.id(self.b.user_agent.value(k));
                }
                *slot
            }
            None => cls.agents.id(self.b.user_agent.value(k)),
        }
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
            memo_heavy: HeavyMemo::default(),
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
        self.batch_with(b, None)
    }

    /// [`Classifier::batch`] with the heavy class of each row worked out beforehand
    /// by [`heavy_classes`] with this classifier's rules ([`Classifier::heavy_rules`]).
    pub fn batch_with<'b>(
        &mut self,
        b: &'b Batch,
        pre_heavy: Option<&'b [HeavyClass]>,
    ) -> BatchClass<'b> {
        let mut agents = std::mem::take(&mut self.memo_agents);
        agents.clear();
        if self.needs.agent && b.user_agent.is_coded() {
            agents.resize(b.user_agent.slots(), UNSET);
        }
        let mut heavy = std::mem::take(&mut self.memo_heavy);
        let pre_heavy = pre_heavy.filter(|p| p.len() == b.len());
        if self.needs.heavy && pre_heavy.is_none() {
            heavy.start(&self.heavy, b);
        }
        BatchClass {
            b,
            agents,
            heavy,
            pre_heavy,
        }
    }

    /// The heavy rules, for [`heavy_classes`] on other threads.
    pub fn heavy_rules(&self) -> &HeavyRules {
        &self.heavy
    }

    /// Gives back the buffers of a finished [`BatchClass`] for the next batch.
    pub fn end_batch(&mut self, bc: BatchClass<'_>) {
        self.memo_agents = bc.agents;
        self.memo_heavy = bc.heavy;
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
            self.identity.classify(b.user.get(i), b.cookie(i))
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
    use crate::batch::TextColumn;
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

    /// The heavy classes worked out on the decoding threads ([`heavy_classes`], per
    /// distinct path of a coded batch) are the row-by-row classes, coded or not.
    #[test]
    fn heavy_classes_are_the_row_by_row_classes() {
        let paths: [&[u8]; 5] = [
            b"/w/index.php",
            b"/wiki/Main_Page",
            b"/w/api.php",
            b"/wiki/Special:Search",
            b"/load.php",
        ];
        let queries: [Option<&[u8]>; 5] = [
            None,
            Some(b"title=A&action=history"),
            Some(b"title=B&diff=12&oldid=3"),
            Some(b"search=x"),
            Some(b"title=C"),
        ];
        let methods: [&[u8]; 2] = [b"GET", b"POST"];
        let mut b = Batch::default();
        let (mut pc, mut mc) = (Vec::new(), Vec::new());
        for i in 0..200usize {
            let (p, m) = ((i * 7) % paths.len(), (i / 3) % methods.len());
            let r = Record {
                ts_ms: i as i64,
                client: b"10.0.0.1",
                method: Some(methods[m]),
                path: Some(paths[p]),
                query: queries[(i / 5) % queries.len()],
                ..Record::default()
            };
            b.push(&r, i as u64 + 1);
            pc.push(p as u32);
            mc.push(m as u32);
        }
        let mut coded = b.clone();
        let mut pv = TextColumn::default();
        paths.iter().for_each(|p| pv.push(Some(p)));
        let mut mv = TextColumn::default();
        methods.iter().for_each(|m| mv.push(Some(m)));
        coded.path = TextColumn::with_codes(pv, pc);
        coded.method = TextColumn::with_codes(mv, mc);
        assert!(coded.path.is_coded() && coded.method.is_coded());
        // The query coded too: a query value comes with several paths and methods here,
        // so its memo must be per (method, path) as well.
        let mut all_coded = coded.clone();
        let mut qv = TextColumn::default();
        queries.iter().for_each(|q| qv.push(*q));
        let qc = (0..200usize)
            .map(|i| match queries[(i / 5) % queries.len()] {
                None => crate::batch::NULL_CODE,
                Some(_) => ((i / 5) % queries.len()) as u32,
            })
            .collect();
        all_coded.query = TextColumn::with_codes(qv, qc);
        assert!(all_coded.query.is_coded());
        // The built-in rules, and a user rule on method, path and query (memo by pair).
        let by_method = HeavyRule {
            name: "posted history".into(),
            path: Some(regex::Regex::new("index").unwrap()),
            query: Some(regex::Regex::new("action=history").unwrap()),
            methods: vec!["POST".into()],
            exclude: false,
        };
        // A rule on path and query alone: rows decided by a rule's query pattern beside
        // rows decided by the MediaWiki query rules, one memo per query slot.
        let by_query = HeavyRule {
            name: "history".into(),
            methods: Vec::new(),
            ..by_method.clone()
        };
        let mediawiki = || {
            heavy::MEDIAWIKI_PATHS
                .iter()
                .map(|s| s.to_string())
                .collect()
        };
        let rule_sets = [
            HeavyRules::default(),
            HeavyRules::new(Some(true), mediawiki(), vec![by_method]),
            HeavyRules::new(Some(true), mediawiki(), vec![by_query]),
        ];
        for rules in rule_sets {
            let mut c = Classifier {
                heavy: rules,
                ..Classifier::default()
            };
            let row_by_row: Vec<HeavyClass> =
                (0..b.len()).map(|i| c.classify(&b, i).heavy).collect();
            assert!(row_by_row.iter().any(|h| h.is_heavy()));
            assert!(row_by_row.iter().any(|h| !h.is_heavy()));
            check_heavy_paths(&mut c, [&b, &coded, &all_coded], &row_by_row);
        }
    }

    fn check_heavy_paths(c: &mut Classifier, batches: [&Batch; 3], row_by_row: &[HeavyClass]) {
        for batch in batches {
            let pre = heavy_classes(c.heavy_rules(), batch);
            assert_eq!(pre, row_by_row);
            let mut bc = c.batch_with(batch, Some(&pre));
            let via: Vec<HeavyClass> = (0..batch.len()).map(|i| bc.classify(c, i).heavy).collect();
            c.end_batch(bc);
            assert_eq!(via, row_by_row);
            let mut bc = c.batch(batch);
            let memo: Vec<HeavyClass> = (0..batch.len()).map(|i| bc.classify(c, i).heavy).collect();
            c.end_batch(bc);
            assert_eq!(memo, row_by_row);
        }
    }
}
