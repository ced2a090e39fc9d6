//! The selected rows of a replay, held compactly (only the fields the candidates read)
//! and put in decision-time order ([`super::super::ReplayOrder`]) before they are fed.
//!
//! Inputs reach a report per file, in file order, not in one global time order (two
//! servers' logs, rotated files given newest first, dataset parts by month), so a
//! replay first collects what it needs from every selected row — about 90 bytes a row
//! plus any text field a matcher or key reads — then sorts once.

use std::net::IpAddr;

use ipnet::IpNet;
use regex::bytes::Regex;
use rustc_hash::FxHashMap;

use super::super::key::KeySpec;
use super::super::matcher::{Exempt, Matcher};
use super::super::policy::Policy;
use super::super::request::{ReplayOrder, Request};
use crate::batch::Batch;
use crate::classify::{AgentInfo, ClientKey, Device, Identity, RowClass};

const NONE: u32 = u32::MAX;
const NO_VALUE: u64 = u64::MAX;

const HEAVY: u8 = 1;
const IDENTIFIED: u8 = 2;
const COOKIE_KNOWN: u8 = 4;
const COOKIE: u8 = 8;
const SECOND: u8 = 16;
const LOGGED_REFUSAL: u8 = 32;

/// Which text fields the candidates read (matchers, exemptions, keys); the others are
/// not kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// Request method.
    pub method: bool,
    /// Path.
    pub path: bool,
    /// Query string.
    pub query: bool,
    /// Host.
    pub host: bool,
    /// User-Agent.
    pub agent: bool,
    /// Referer.
    pub referer: bool,
    /// Authenticated user.
    pub user: bool,
}

impl Needs {
    /// Every field.
    pub const ALL: Needs = Needs {
        method: true,
        path: true,
        query: true,
        host: true,
        agent: true,
        referer: true,
        user: true,
    };

    /// What `policies` read.
    pub fn of(policies: &[Policy]) -> Needs {
        let mut n = Needs::default();
        for p in policies {
            n.exempt(p.exempt());
            for r in p.rules() {
                n.matcher(&r.matcher);
                n.exempt(&r.exempt);
            }
            // Costs read numeric fields, which are always kept.
            for z in p.zones() {
                n.key(&z.spec().key);
            }
        }
        n
    }

    fn any(&self) -> bool {
        *self != Needs::default()
    }

    fn matcher(&mut self, m: &Matcher) {
        self.path |= !m.path_prefix.is_empty() || !m.path.is_empty() || m.path_regex.is_some();
        self.query |= m.query_regex.is_some();
        self.method |= !m.method.is_empty();
        self.host |= !m.host.is_empty();
        self.agent |= m.ua_regex.is_some();
        self.referer |= m.referer_regex.is_some() || m.has_referer.is_some();
        for n in &m.not {
            self.matcher(n);
        }
    }

    fn exempt(&mut self, e: &Exempt) {
        self.agent |= e.ua_regex.is_some();
        self.user |= !e.users.is_empty();
    }

    fn key(&mut self, k: &KeySpec) {
        match k {
            KeySpec::Site | KeySpec::Ip | KeySpec::Prefix { .. } | KeySpec::Status => {}
            KeySpec::Agent => self.agent = true,
            KeySpec::Host => self.host = true,
            KeySpec::User => self.user = true,
            KeySpec::Method => self.method = true,
            KeySpec::Path => self.path = true,
            KeySpec::Uri => {
                self.path = true;
                self.query = true;
            }
            KeySpec::Query => self.query = true,
            KeySpec::Referer => self.referer = true,
        }
    }
}

/// Who sent a request, for the "refused by class" table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Who {
    /// Your own services: an address, agent or user that a candidate exempts or that
    /// `--internal` names.
    Internal,
    /// Logged-in users (a user name, or a session cookie where configured).
    Identified,
    /// Crawlers and other bots that say so in their User-Agent.
    DeclaredBot,
    /// Browsers (phones, desktops, other devices) that are not identified.
    Browser,
    /// Tools, libraries and requests without a recognisable agent.
    Other,
}

impl Who {
    /// Every class, in report order.
    pub const ALL: [Who; 5] = [
        Who::Internal,
        Who::Identified,
        Who::DeclaredBot,
        Who::Browser,
        Who::Other,
    ];

    /// The class of a request: internal first, then identified, declared bot,
    /// browser-like, other.
    pub fn of(internal: bool, identity: Identity, agent: &AgentInfo) -> Who {
        if internal {
            Who::Internal
        } else if identity == Identity::Identified {
            Who::Identified
        } else if agent.bot.is_some() || agent.device == Device::Bot {
            Who::DeclaredBot
        } else if matches!(
            agent.device,
            Device::Ios | Device::Android | Device::Desktop | Device::Other
        ) {
            Who::Browser
        } else {
            Who::Other
        }
    }

    /// Position in [`Who::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The short name used in JSON and CSV.
    pub fn key(self) -> &'static str {
        match self {
            Who::Internal => "internal",
            Who::Identified => "identified",
            Who::DeclaredBot => "declared-bot",
            Who::Browser => "browser",
            Who::Other => "other",
        }
    }

    /// The name shown in reports.
    pub fn label(self) -> &'static str {
        match self {
            Who::Internal => "internal / exempt-listed",
            Who::Identified => "identified users",
            Who::DeclaredBot => "declared bots",
            Who::Browser => "anonymous browser-like",
            Who::Other => "other (tools, no agent)",
        }
    }
}

/// Requests that are your own services: every address, agent and user a candidate
/// exempts, plus those named on the command line (`--internal`). Exempting identified
/// users does not make them internal (they have their own class).
#[derive(Clone, Debug, Default)]
pub struct InternalMarks {
    /// Networks.
    pub cidr: Vec<IpNet>,
    /// User-Agent patterns.
    pub agents: Vec<Regex>,
    /// Authenticated users.
    pub users: Vec<Vec<u8>>,
}

impl InternalMarks {
    /// The exemptions of every candidate.
    pub fn from_policies(policies: &[Policy]) -> InternalMarks {
        let mut m = InternalMarks::default();
        for p in policies {
            m.add_exempt(p.exempt());
            for r in p.rules() {
                m.add_exempt(&r.exempt);
            }
        }
        m
    }

    /// Adds an exemption's networks, agents and users.
    pub fn add_exempt(&mut self, e: &Exempt) {
        for c in &e.cidr {
            if !self.cidr.contains(c) {
                self.cidr.push(*c);
            }
        }
        if let Some(re) = &e.ua_regex
            && !self.agents.iter().any(|r| r.as_str() == re.as_str())
        {
            self.agents.push(re.clone());
        }
        for u in &e.users {
            if !self.users.contains(u) {
                self.users.push(u.clone());
            }
        }
    }

    /// Whether nothing marks a request internal.
    pub fn is_empty(&self) -> bool {
        self.cidr.is_empty() && self.agents.is_empty() && self.users.is_empty()
    }

    /// Whether a request from `ip` with this agent and user is internal.
    pub fn covers(&self, ip: Option<IpAddr>, agent: Option<&str>, user: Option<&str>) -> bool {
        if let Some(ip) = ip
            && !self.cidr.is_empty()
        {
            let ip = super::super::canonical(ip);
            if self.cidr.iter().any(|n| n.contains(&ip)) {
                return true;
            }
        }
        if let Some(a) = agent
            && self.agents.iter().any(|re| re.is_match(a.as_bytes()))
        {
            return true;
        }
        if let Some(u) = user
            && self.users.iter().any(|x| x.as_slice() == u.as_bytes())
        {
            return true;
        }
        false
    }

    /// In words, for the report header.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.cidr.is_empty() {
            let n: Vec<String> = self.cidr.iter().map(|c| c.to_string()).collect();
            parts.push(format!("from {}", n.join(", ")));
        }
        for re in &self.agents {
            parts.push(format!("agent ~ {}", re.as_str()));
        }
        if !self.users.is_empty() {
            let u: Vec<String> = self
                .users
                .iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect();
            parts.push(format!("users {}", u.join(", ")));
        }
        parts.join("; ")
    }
}

/// Interned text: few distinct values (methods, hosts, agents, users).
#[derive(Default)]
struct Interned {
    ids: FxHashMap<Box<str>, u32>,
    vals: Vec<Box<str>>,
}

impl Interned {
    fn push(&mut self, v: Option<&str>) -> u32 {
        let Some(v) = v else { return NONE };
        if let Some(&i) = self.ids.get(v) {
            return i;
        }
        let i = self.vals.len() as u32;
        self.vals.push(v.into());
        self.ids.insert(v.into(), i);
        i
    }

    fn get(&self, i: u32) -> Option<&str> {
        self.vals.get(i as usize).map(|s| &**s)
    }
}

/// Text stored as it comes (paths, queries, referers: mostly distinct).
#[derive(Default)]
struct Arena {
    data: String,
    spans: Vec<(u64, u32)>,
}

impl Arena {
    fn push(&mut self, v: Option<&str>) -> u32 {
        let Some(v) = v else { return NONE };
        let start = self.data.len() as u64;
        self.data.push_str(v);
        self.spans.push((start, v.len() as u32));
        (self.spans.len() - 1) as u32
    }

    fn get(&self, i: u32) -> Option<&str> {
        let &(s, l) = self.spans.get(i as usize)?;
        self.data.get(s as usize..s as usize + l as usize)
    }
}

#[derive(Clone, Copy)]
struct Row {
    arrival: i64,
    line: u64,
    rt_us: u64,
    bytes: u64,
    ip: Option<IpAddr>,
    file: u32,
    /// Client as written, when it is not an address.
    client: u32,
    /// The classifier's name key, when the client is not an address.
    name_key: u32,
    agent: u32,
    /// Index into `texts`, when the candidates read text fields.
    text: u32,
    status: u16,
    flags: u8,
    who: u8,
}

/// One row's report-side facts (see [`RowStore::meta`]).
#[derive(Clone, Copy, Debug)]
pub struct RowMeta {
    /// Index of the input file ([`RowStore::file_name`]).
    pub file: u32,
    /// Line in that file.
    pub line: u64,
    /// Decision time, UTC ms.
    pub arrival_ms: i64,
    /// Status as logged.
    pub status: u16,
    /// The real client's address.
    pub ip: Option<IpAddr>,
    /// The classifier's key of a client that is not an address.
    pub name_key: Option<ClientKey>,
    /// The classifier's agent id.
    pub agent: u32,
    /// The class.
    pub who: Who,
    /// Refused by a limiter already (status in `--refusal-status`).
    pub logged_refusal: bool,
    /// The log stamps this row in whole seconds.
    pub second_resolution: bool,
}

/// Everything one row contributes, as the CLI classified it.
#[derive(Clone, Copy, Debug)]
pub struct RowInput<'a> {
    /// The batch.
    pub batch: &'a Batch,
    /// Row index in the batch.
    pub i: usize,
    /// The classification.
    pub class: &'a RowClass,
    /// The class for the report.
    pub who: Who,
    /// Status shows a deployed limiter refused it.
    pub logged_refusal: bool,
}

/// The selected rows, compact; [`RowStore::sort`] puts them in decision-time order.
#[derive(Default)]
pub struct RowStore {
    needs: Needs,
    rows: Vec<Row>,
    texts: Vec<[u32; 7]>,
    files: Vec<String>,
    file_ids: FxHashMap<String, u32>,
    clients: Interned,
    method: Interned,
    host: Interned,
    agent: Interned,
    user: Interned,
    path: Arena,
    query: Arena,
    referer: Arena,
    sorted: bool,
}

impl RowStore {
    /// An empty store keeping the text fields in `needs`.
    pub fn new(needs: Needs) -> RowStore {
        RowStore {
            needs,
            ..RowStore::default()
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The id of an input file name (registered on first use).
    pub fn file_id(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.file_ids.get(name) {
            return i;
        }
        let i = self.files.len() as u32;
        self.files.push(name.to_string());
        self.file_ids.insert(name.to_string(), i);
        i
    }

    /// The name of input file `id`.
    pub fn file_name(&self, id: u32) -> &str {
        self.files.get(id as usize).map_or("", String::as_str)
    }

    /// Adds one selected row of input file `file` (from [`RowStore::file_id`]).
    pub fn push(&mut self, file: u32, r: &RowInput<'_>) {
        let (b, i, rc) = (r.batch, r.i, r.class);
        let mut flags = 0u8;
        if rc.heavy.is_heavy() {
            flags |= HEAVY;
        }
        if rc.identity == Identity::Identified {
            flags |= IDENTIFIED;
        }
        match b.has_cookie[i] {
            Some(true) => flags |= COOKIE_KNOWN | COOKIE,
            Some(false) => flags |= COOKIE_KNOWN,
            None => {}
        }
        if b.precision.get(i).copied().unwrap_or(3) == 0 {
            flags |= SECOND;
        }
        if r.logged_refusal {
            flags |= LOGGED_REFUSAL;
        }
        let (client, name_key) = match (rc.ip, rc.client) {
            (Some(_), _) => (NONE, NONE),
            (None, ClientKey::Name(k)) => (self.clients.push(b.client.get(i)), k),
            (None, _) => (self.clients.push(b.client.get(i)), NONE),
        };
        let text = if self.needs.any() {
            let n = self.needs;
            let t = [
                if n.method {
                    self.method.push(b.method.get(i))
                } else {
                    NONE
                },
                if n.path {
                    self.path.push(b.path.get(i))
                } else {
                    NONE
                },
                if n.query {
                    self.query.push(b.query.get(i))
                } else {
                    NONE
                },
                if n.host {
                    self.host.push(b.host.get(i))
                } else {
                    NONE
                },
                if n.agent {
                    self.agent.push(b.user_agent.get(i))
                } else {
                    NONE
                },
                if n.referer {
                    self.referer.push(b.referer.get(i))
                } else {
                    NONE
                },
                if n.user {
                    self.user.push(b.user.get(i))
                } else {
                    NONE
                },
            ];
            self.texts.push(t);
            (self.texts.len() - 1) as u32
        } else {
            NONE
        };
        self.rows.push(Row {
            arrival: b.ts_ms[i],
            line: b.line[i],
            rt_us: b.request_time_us[i].unwrap_or(NO_VALUE),
            bytes: b.bytes[i].unwrap_or(NO_VALUE),
            ip: rc.ip,
            file,
            client,
            name_key,
            agent: rc.agent,
            text,
            status: b.status[i],
            flags,
            who: r.who as u8,
        });
        self.sorted = false;
    }

    /// Puts the rows in decision-time order: arrival, then (within a millisecond)
    /// served at once, delayed (shortest first), refused in the log; then input order.
    ///
    /// Rows stamped in whole seconds are first spread evenly over their second, in log
    /// order (a run of consecutive rows of one file with the same second), which
    /// matches a real limiter better than piling them all on the second's first
    /// millisecond.
    pub fn sort(&mut self) {
        if self.sorted {
            return;
        }
        let mut s = 0;
        while s < self.rows.len() {
            let r = self.rows[s];
            let mut e = s + 1;
            if r.flags & SECOND != 0 {
                while e < self.rows.len()
                    && self.rows[e].flags & SECOND != 0
                    && self.rows[e].file == r.file
                    && self.rows[e].arrival == r.arrival
                {
                    e += 1;
                }
                let n = (e - s) as i64;
                if n > 1 {
                    for (k, row) in self.rows[s..e].iter_mut().enumerate() {
                        row.arrival += k as i64 * 1000 / n;
                    }
                }
            }
            s = e;
        }
        // Stable: equal keys keep input order.
        self.rows.sort_by_key(order_key);
        self.sorted = true;
    }

    /// First and last decision time, if any row.
    pub fn span(&self) -> Option<(i64, i64)> {
        let min = self.rows.iter().map(|r| r.arrival).min()?;
        let max = self.rows.iter().map(|r| r.arrival).max()?;
        Some((min, max))
    }
}

fn bytes(s: Option<&str>) -> Option<&[u8]> {
    s.map(str::as_bytes)
}

impl RowStore {
    /// The request of row `i`, for the replay.
    #[inline]
    pub fn request(&self, i: usize) -> Request<'_> {
        let r = &self.rows[i];
        let t = if r.text == NONE {
            [NONE; 7]
        } else {
            self.texts[r.text as usize]
        };
        Request {
            index: i as u64,
            arrival_ms: r.arrival,
            ip: r.ip,
            client: self.clients.get(r.client).map_or(&b""[..], str::as_bytes),
            method: bytes(self.method.get(t[0])),
            path: bytes(self.path.get(t[1])),
            query: bytes(self.query.get(t[2])),
            host: bytes(self.host.get(t[3])),
            user_agent: bytes(self.agent.get(t[4])),
            referer: bytes(self.referer.get(t[5])),
            user: bytes(self.user.get(t[6])),
            identified: r.flags & IDENTIFIED != 0,
            has_cookie: (r.flags & COOKIE_KNOWN != 0).then_some(r.flags & COOKIE != 0),
            heavy: r.flags & HEAVY != 0,
            status: r.status,
            request_time_us: (r.rt_us != NO_VALUE).then_some(r.rt_us),
            bytes: (r.bytes != NO_VALUE).then_some(r.bytes),
        }
    }

    /// The report-side facts of row `i`.
    #[inline]
    pub fn meta(&self, i: usize) -> RowMeta {
        let r = &self.rows[i];
        RowMeta {
            file: r.file,
            line: r.line,
            arrival_ms: r.arrival,
            status: r.status,
            ip: r.ip,
            name_key: (r.name_key != NONE).then_some(ClientKey::Name(r.name_key)),
            agent: r.agent,
            who: Who::ALL[r.who as usize],
            logged_refusal: r.flags & LOGGED_REFUSAL != 0,
            second_resolution: r.flags & SECOND != 0,
        }
    }
}

#[inline]
fn order_key(r: &Row) -> ReplayOrder {
    let rt_ms = if r.rt_us == NO_VALUE {
        0
    } else {
        r.rt_us.div_ceil(1000)
    };
    ReplayOrder::new(r.arrival, rt_ms, r.flags & LOGGED_REFUSAL != 0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Precision, Record};

    fn rc(ip: &str) -> RowClass {
        let ip: IpAddr = ip.parse().unwrap();
        RowClass {
            ip: Some(ip),
            client: ClientKey::addr(ip),
            prefix: ClientKey::prefix(ip, 24, 48),
            heavy: crate::classify::HeavyClass(0),
            identity: Identity::Unknown,
            agent: 0,
        }
    }

    #[test]
    fn needs_follow_the_candidates() {
        let p = Policy::from_spec("10/s,key=agent").unwrap();
        let n = Needs::of(&[p]);
        assert!(n.agent && !n.path && !n.query);
        let q = Policy::from_toml(
            "[[zones]]\nname='z'\nrate='1r/s'\nkey='ip'\n[[rules]]\nmatch={path_prefix='/a/', not={query_regex='x'}}\nzone='z'\n",
        )
        .unwrap();
        let n = Needs::of(&[q]);
        assert!(n.path && n.query && !n.agent);
        assert_eq!(
            Needs::of(&[Policy::from_spec("1/s").unwrap()]),
            Needs::default()
        );
    }

    #[test]
    fn sorts_into_decision_order_and_spreads_seconds() {
        let mut b = Batch::default();
        let mk = |ts: i64, rt: Option<u64>, status: u16, prec: Precision| Record {
            ts_ms: ts,
            precision: prec,
            client: b"10.0.0.1",
            ip: Some("10.0.0.1".parse().unwrap()),
            path: Some(b"/x"),
            status,
            request_time_us: rt,
            ..Record::default()
        };
        // Line 1 took 5 ms (arrived at 1000), line 2 refused at 1000, line 3 at 1000.
        b.push(&mk(1000, Some(5000), 200, Precision::Milli), 1);
        b.push(&mk(1000, Some(0), 429, Precision::Milli), 2);
        b.push(&mk(1000, Some(0), 200, Precision::Milli), 3);
        b.push(&mk(999, Some(0), 200, Precision::Milli), 4);
        // Three rows in one second.
        for l in 5..8 {
            b.push(&mk(5000, None, 200, Precision::Second), l);
        }
        let mut s = RowStore::new(Needs::ALL);
        let f = s.file_id("a.log");
        let c = rc("10.0.0.1");
        for i in 0..b.len() {
            s.push(
                f,
                &RowInput {
                    batch: &b,
                    i,
                    class: &c,
                    who: Who::Other,
                    logged_refusal: b.status[i] == 429,
                },
            );
        }
        s.sort();
        let lines: Vec<u64> = (0..s.len()).map(|i| s.meta(i).line).collect();
        assert_eq!(lines, vec![4, 3, 1, 2, 5, 6, 7]);
        let t: Vec<i64> = (4..7).map(|i| s.request(i).arrival_ms).collect();
        assert_eq!(t, vec![5000, 5333, 5666]);
        assert_eq!(s.request(0).path, Some(&b"/x"[..]));
        assert!(s.meta(3).logged_refusal && s.meta(4).second_resolution);
        assert_eq!(s.span(), Some((999, 5666)));
        assert_eq!(s.file_name(f), "a.log");
    }

    #[test]
    fn internal_marks_come_from_exemptions() {
        let p = Policy::from_toml(
            "[exempt]\ncidr=['10.9.0.0/16']\nidentified=true\n[[zones]]\nname='z'\nrate='1r/s'\n[[rules]]\nzone='z'\nexempt={users=['svc']}\n",
        )
        .unwrap();
        let m = InternalMarks::from_policies(&[p]);
        assert!(m.covers(Some("10.9.1.2".parse().unwrap()), None, None));
        assert!(m.covers(None, None, Some("svc")));
        assert!(!m.covers(Some("10.8.1.2".parse().unwrap()), None, Some("alice")));
        assert!(m.describe().contains("10.9.0.0/16"));
    }
}
