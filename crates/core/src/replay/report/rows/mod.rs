//! The selected rows of a replay, held compactly (only the fields the candidates read)
//! and put in decision-time order ([`super::super::ReplayOrder`]) before they are fed.
//!
//! Inputs reach a report per file, in file order, not in one global time order (two
//! servers' logs, rotated files given newest first, dataset parts by month), so a
//! replay first collects what it needs from every selected row — about 80 bytes a row
//! plus any text field a matcher or key reads. In bounded memory: where the reader
//! knows that no older row is still to come (a dataset's recorded time ranges), the
//! rows before that time are taken in order and replayed at once
//! ([`RowStore::take_before`], their clients counted by [`clients`]);
//! otherwise, at a run size the rows held are sorted and written to a temporary file
//! ([`spill`]), and the runs are merged back when the replay reads them. Either way in
//! exactly the order of one sort of every row (decision time, then input order: a
//! total order, ties broken by run).

mod clients;
mod spill;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::collections::binary_heap::PeekMut;
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use ipnet::IpNet;
use regex::bytes::Regex;
use rustc_hash::FxHashMap;

use super::super::key::KeySpec;
use super::super::matcher::{Exempt, Matcher};
use super::super::request::{ReplayOrder, Request};
use super::super::spec::CostKind;
use crate::batch::Batch;
use crate::classify::{AgentInfo, ClientKey, Device, Identity, RowClass};
use crate::replay::Policy;
use clients::ClientLog;
use spill::{Run, RunReader, RunWriter};

const NONE: u32 = u32::MAX;
const NO_VALUE: u64 = u64::MAX;

const HEAVY: u8 = 1;
const IDENTIFIED: u8 = 2;
const COOKIE_KNOWN: u8 = 4;
const COOKIE: u8 = 8;
const SECOND: u8 = 16;
const LOGGED_REFUSAL: u8 = 32;
/// Fed in file order ([`RowStore::set_log_order`]): ordered by time and input only.
const LOG_ORDER: u8 = 64;

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
    /// The heavy class (a matcher's `heavy`): not a text field, so rows keep no text
    /// for it, but its columns (method, path, query) are read and classified.
    pub heavy: bool,
    /// The response size (a cost in bytes, or the log line a count filter rebuilds):
    /// not a text field either; without it the `bytes` column is not read.
    pub bytes: bool,
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
        heavy: true,
        bytes: true,
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
            // Costs read numeric fields: request time is always kept, the size where a
            // cost is in bytes.
            for z in p.zones() {
                n.key(&z.spec().key);
                n.bytes |= z.spec().cost == CostKind::Bytes;
                if let Some(f) = z.count_filter() {
                    n.matcher(&f.matcher);
                    if f.reads_line() {
                        n.bytes = true;
                        // The rebuilt log line reads every text field.
                        n.method = true;
                        n.path = true;
                        n.query = true;
                        n.agent = true;
                        n.referer = true;
                        n.user = true;
                    }
                }
            }
            if let Some(prog) = p.program() {
                prog.matchers.iter().for_each(|m| n.matcher(m));
                prog.keys.iter().for_each(|k| n.key(k));
            }
        }
        n
    }

    /// Whether any text field is kept.
    fn any(&self) -> bool {
        Needs {
            heavy: false,
            bytes: false,
            ..*self
        } != Needs::default()
    }

    fn matcher(&mut self, m: &Matcher) {
        self.path |= !m.path_prefix.is_empty() || !m.path.is_empty() || m.path_regex.is_some();
        self.query |= m.query_regex.is_some();
        self.method |= !m.method.is_empty();
        self.host |= !m.host.is_empty();
        self.agent |= m.ua_regex.is_some();
        self.referer |= m.referer_regex.is_some() || m.has_referer.is_some();
        self.heavy |= m.heavy.is_some();
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
}

/// Text stored as it comes (paths, queries, referers: mostly distinct), for one run.
#[derive(Default)]
struct Arena {
    data: Vec<u8>,
    spans: Vec<(u64, u32)>,
}

impl Arena {
    fn push(&mut self, v: Option<&str>) -> u32 {
        self.push_bytes(v.map(str::as_bytes))
    }

    fn push_bytes(&mut self, v: Option<&[u8]>) -> u32 {
        let Some(v) = v else { return NONE };
        let start = self.data.len() as u64;
        self.data.extend_from_slice(v);
        self.spans.push((start, v.len() as u32));
        (self.spans.len() - 1) as u32
    }

    #[inline]
    fn get(&self, i: u32) -> Option<&[u8]> {
        let &(s, l) = self.spans.get(i as usize)?;
        self.data.get(s as usize..s as usize + l as usize)
    }

    /// Bytes held.
    fn held(&self) -> usize {
        self.data.len() + self.spans.len() * std::mem::size_of::<(u64, u32)>()
    }

    fn clear(&mut self) {
        self.data.clear();
        self.spans.clear();
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

impl Row {
    const EMPTY: Row = Row {
        arrival: 0,
        line: 0,
        rt_us: NO_VALUE,
        bytes: NO_VALUE,
        ip: None,
        file: 0,
        client: NONE,
        name_key: NONE,
        agent: 0,
        text: NONE,
        status: 0,
        flags: 0,
        who: 0,
    };
}

/// One row's report-side facts (see [`RowStore::for_each_sorted`]).
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

/// When a [`RowStore`] writes a sorted run of rows to disk, and where.
#[derive(Clone, Debug)]
pub struct SpillOptions {
    /// Rows held in memory: at this many, they are sorted and written out as a run.
    pub run_rows: usize,
    /// Bytes of free text (paths, queries, referers a candidate reads) held in memory
    /// before the rows are written out.
    pub run_text_bytes: usize,
    /// Runs on disk at most: at this many, they are merged into one.
    pub max_runs: usize,
    /// Directory of the temporary files (default: [`std::env::temp_dir`]).
    pub dir: Option<PathBuf>,
}

impl Default for SpillOptions {
    /// 512 Ki rows (about 55 MB with their text ids), 32 MiB of text, 256 runs: two
    /// runs are in memory while one is written out ([`RowStore::push`]).
    fn default() -> Self {
        SpillOptions {
            run_rows: 1 << 19,
            run_text_bytes: 32 << 20,
            max_runs: 256,
            dir: None,
        }
    }
}

/// Rows stamped in whole seconds still to be spread over their second: a run of
/// consecutive rows of one file with the same second, from `start` in the rows held.
#[derive(Clone, Copy)]
struct Group {
    start: usize,
    file: u32,
    arrival: i64,
}

/// The selected rows, compact, put in decision-time order ([`RowStore::sort`]) in
/// bounded memory.
///
/// Rows are held until [`SpillOptions::run_rows`] of them (or
/// [`SpillOptions::run_text_bytes`] of their text); then they are handed to a writer
/// thread that sorts them and writes them to a temporary file as a run while the next
/// run is gathered (two runs in memory at most). [`RowStore::for_each_sorted`] merges
/// the runs (and the rows still held) on a reader thread, in exactly the order one sort
/// of every row gives: decision time, then input order. Memory grows with the run size
/// and with the distinct agents, hosts, methods, users and client names, not with the
/// log.
#[derive(Default)]
pub struct RowStore {
    needs: Needs,
    spill: SpillOptions,
    /// The run being gathered.
    cur: RunBuf,
    files: Vec<String>,
    file_ids: FxHashMap<String, u32>,
    clients: Interned,
    method: Interned,
    host: Interned,
    agent: Interned,
    user: Interned,
    group: Option<Group>,
    /// The runs on disk, once [`RowStore::sort`] has collected them from the writer.
    runs: Vec<Run>,
    /// The thread writing runs, from the first run written until [`RowStore::sort`].
    writer: Option<RunThread>,
    /// Rows handed to the writer.
    spilled: u64,
    /// Runs on disk once the writer is done (it merges them at `max_runs` into one).
    run_count: usize,
    /// Span of the rows written out.
    spilled_span: Option<(i64, i64)>,
    error: Option<io::Error>,
    sorted: bool,
    /// Per file, the latest arrival so far, when rows keep file order.
    log_order: Option<Vec<i64>>,
    /// Rows taken to be replayed while they were read ([`RowStore::take_before`]).
    fed: u64,
    /// Span of the rows fed.
    fed_span: Option<(i64, i64)>,
    /// The clients of the rows fed (for [`RowStore::fold_clients`]).
    fed_clients: Option<ClientLog>,
    /// The buffer [`RowStore::take_before`] gathers the rows it keeps in.
    spare: RunBuf,
    /// Rows taken and replayed already, given back for their buffers.
    feds: Vec<Fed>,
    /// Whether a row held (outside the open second) may be out of decision-time order:
    /// checked as rows are added, while they are in cache, so that rows read in order
    /// (a dataset's sorted parts) are taken without a sort.
    unsorted: bool,
    /// How many files and interned names the rows taken so far have handed over.
    sent: Sent,
}

/// Counts of names handed over with [`Fed`] rows.
#[derive(Default)]
struct Sent {
    files: usize,
    /// clients, methods, hosts, agents, users.
    tables: [usize; 5],
}

/// The names a [`Fed`] needs: the input files and the interned clients, methods,
/// hosts, agents and users, as the store had them when it was taken (each [`Fed`]
/// carries those added since the one before).
#[derive(Default)]
pub struct FedNames {
    files: Vec<String>,
    tables: [Vec<Box<str>>; 5],
}

/// Rows taken by [`RowStore::take_before`], in decision-time order, with their text
/// and the names interned since the rows taken before: replayable on another thread
/// (with one [`FedNames`] there, given every [`Fed`] in order).
#[derive(Default)]
pub struct Fed {
    /// Position of the first row in the whole order.
    first: u64,
    rows: RunBuf,
    names: FedNames,
}

impl Fed {
    /// Calls `f` with every row, in order: its request (`index` its position in the
    /// whole order), report-side facts and file name. `names` is the replaying side's
    /// copy of the store's names, brought up to date first.
    pub fn replay(
        &self,
        names: &mut FedNames,
        mut f: impl FnMut(&Request<'_>, &RowMeta, &str) -> io::Result<()>,
    ) -> io::Result<()> {
        names.files.extend_from_slice(&self.names.files);
        for (all, new) in names.tables.iter_mut().zip(&self.names.tables) {
            all.extend_from_slice(new);
        }
        let [clients, method, host, agent, user] = &names.tables;
        let tables = Tables {
            clients,
            method,
            host,
            agent,
            user,
        };
        for (k, r) in self.rows.rows.iter().enumerate() {
            let (t, fs) = self.rows.held_text(r);
            let req = tables.request(self.first + k as u64, r, &t, fs);
            let file = names.files.get(r.file as usize).map_or("", String::as_str);
            f(&req, &RowStore::meta(r), file)?;
        }
        Ok(())
    }
}

/// The interned names a [`Request`] is built from.
struct Tables<'a> {
    clients: &'a [Box<str>],
    method: &'a [Box<str>],
    host: &'a [Box<str>],
    agent: &'a [Box<str>],
    user: &'a [Box<str>],
}

impl<'a> Tables<'a> {
    /// The request of a row, for the replay.
    #[inline]
    fn request(&self, index: u64, r: &Row, t: &[u32; 7], f: [Option<&'a [u8]>; 3]) -> Request<'a> {
        let get = |v: &'a [Box<str>], i: u32| v.get(i as usize).map(|s| s.as_bytes());
        Request {
            index,
            arrival_ms: r.arrival,
            ip: r.ip,
            client: get(self.clients, r.client).unwrap_or(b""),
            method: get(self.method, t[0]),
            path: f[0],
            query: f[1],
            host: get(self.host, t[3]),
            user_agent: get(self.agent, t[4]),
            referer: f[2],
            user: get(self.user, t[6]),
            identified: r.flags & IDENTIFIED != 0,
            has_cookie: (r.flags & COOKIE_KNOWN != 0).then_some(r.flags & COOKIE != 0),
            heavy: r.flags & HEAVY != 0,
            status: r.status,
            request_time_us: (r.rt_us != NO_VALUE).then_some(r.rt_us),
            bytes: (r.bytes != NO_VALUE).then_some(r.bytes),
        }
    }
}

impl RowStore {
    /// An empty store keeping the text fields in `needs`, spilling with the default
    /// [`SpillOptions`].
    pub fn new(needs: Needs) -> RowStore {
        RowStore::with_spill(needs, SpillOptions::default())
    }

    /// An empty store keeping the text fields in `needs`, spilling as `spill` says.
    pub fn with_spill(needs: Needs, spill: SpillOptions) -> RowStore {
        RowStore {
            needs,
            spill: SpillOptions {
                run_rows: spill.run_rows.max(1),
                max_runs: spill.max_runs.max(2),
                ..spill
            },
            ..RowStore::default()
        }
    }

    /// Keeps each file's order: a row's decision time becomes the latest time of its
    /// file so far (a clock that never goes back), and rows of one millisecond are not
    /// reordered by request time or logged refusal. For logs written in decision order
    /// (HAProxy with one thread: its accept dates go back, its log order does not).
    /// Call before the first [`RowStore::push`].
    pub fn set_log_order(&mut self) {
        self.log_order = Some(Vec::new());
    }

    /// Number of rows (those fed already included).
    pub fn len(&self) -> usize {
        (self.fed + self.spilled) as usize + self.cur.rows.len()
    }

    /// Rows taken to be replayed while they were read ([`RowStore::take_before`]).
    pub fn fed(&self) -> u64 {
        self.fed
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sorted runs written to disk so far (0 when every row fits in memory).
    pub fn spilled_runs(&self) -> usize {
        self.run_count
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

    /// Adds one selected row of input file `file` (from [`RowStore::file_id`]). When
    /// the rows held reach the run size, they are handed to the writer thread first; an
    /// error writing a run is kept and returned by [`RowStore::sort`] (the rows after it
    /// are dropped).
    pub fn push(&mut self, file: u32, r: &RowInput<'_>) {
        if self.error.is_some() {
            return;
        }
        let (b, i, rc) = (r.batch, r.i, r.class);
        let mut arrival = b.ts_ms[i];
        if let Some(last) = &mut self.log_order {
            let f = file as usize;
            if last.len() <= f {
                last.resize(f + 1, i64::MIN);
            }
            arrival = arrival.max(last[f]);
            last[f] = arrival;
        }
        let second = b.precision.get(i).copied().unwrap_or(3) == 0;
        let continues = second
            && self
                .group
                .is_some_and(|g| g.file == file && g.arrival == arrival);
        if !continues {
            self.close_group();
            if (self.cur.rows.len() >= self.spill.run_rows
                || self.cur.text_bytes() >= self.spill.run_text_bytes)
                && let Err(e) = self.write_run()
            {
                self.error = Some(e);
                self.cur.clear();
                self.unsorted = false;
                return;
            }
            if second {
                self.group = Some(Group {
                    start: self.cur.rows.len(),
                    file,
                    arrival,
                });
            }
        }
        let mut flags = 0u8;
        if rc.heavy.is_heavy() {
            flags |= HEAVY;
        }
        if rc.identity == Identity::Identified {
            flags |= IDENTIFIED;
        }
        match b.cookie(i) {
            Some(true) => flags |= COOKIE_KNOWN | COOKIE,
            Some(false) => flags |= COOKIE_KNOWN,
            None => {}
        }
        if second {
            flags |= SECOND;
        }
        if r.logged_refusal {
            flags |= LOGGED_REFUSAL;
        }
        if self.log_order.is_some() {
            flags |= LOG_ORDER;
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
                    self.cur.path.push(b.path.get(i))
                } else {
                    NONE
                },
                if n.query {
                    self.cur.query.push(b.query.get(i))
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
                    self.cur.referer.push(b.referer.get(i))
                } else {
                    NONE
                },
                if n.user {
                    self.user.push(b.user.get(i))
                } else {
                    NONE
                },
            ];
            self.cur.texts.push(t);
            (self.cur.texts.len() - 1) as u32
        } else {
            NONE
        };
        let row = Row {
            arrival,
            line: b.line_no(i),
            rt_us: b.request_time(i).unwrap_or(NO_VALUE),
            bytes: b.size(i).unwrap_or(NO_VALUE),
            ip: rc.ip,
            file,
            client,
            name_key,
            agent: rc.agent,
            text,
            status: b.status[i],
            flags,
            who: r.who as u8,
        };
        // A row of an open second is checked when its second is spread.
        if !second
            && let Some(last) = self.cur.rows.last()
            && decision_order(last, &row).is_gt()
        {
            self.unsorted = true;
        }
        self.cur.rows.push(row);
        self.sorted = false;
    }

    /// Spreads the open group of 1-second rows evenly over its second, in log order,
    /// which matches a real limiter better than piling them all on the second's first
    /// millisecond.
    fn close_group(&mut self) {
        let Some(g) = self.group.take() else { return };
        let rows = &mut self.cur.rows[g.start..];
        let n = rows.len() as i64;
        if n > 1 {
            for (k, row) in rows.iter_mut().enumerate() {
                row.arrival += k as i64 * 1000 / n;
            }
        }
        // The second's rows, and the row before them, in order?
        let from = g.start.saturating_sub(1);
        if !self.unsorted
            && self.cur.rows[from..]
                .windows(2)
                .any(|w| decision_order(&w[0], &w[1]).is_gt())
        {
            self.unsorted = true;
        }
    }

    /// Hands the rows held to the writer thread (started on the first run), which sorts
    /// them and writes them out as a run while the next run is gathered; it merges the
    /// runs into one when there are [`SpillOptions::max_runs`]. At most two runs are in
    /// memory: the one being written and the one being gathered (the hand-over waits
    /// for the writer). An error of the writer's comes back here, or from
    /// [`RowStore::sort`].
    fn write_run(&mut self) -> io::Result<()> {
        if self.cur.rows.is_empty() {
            return Ok(());
        }
        if self.writer.is_none() {
            let dir = self.spill.dir.clone().unwrap_or_else(std::env::temp_dir);
            let runs = std::mem::take(&mut self.runs);
            self.writer = Some(RunThread::start(
                runs,
                self.spilled_span,
                self.needs,
                dir,
                self.spill.max_runs,
            )?);
        }
        let w = self.writer.as_mut().expect("started above");
        let rows = self.cur.rows.len() as u64;
        let next = w.back.try_recv().unwrap_or_default();
        let full = std::mem::replace(&mut self.cur, next);
        self.unsorted = false;
        if w.to.as_ref().is_none_or(|to| to.send(full).is_err()) {
            // The writer stopped: its error says why.
            return Err(self
                .join_writer()
                .err()
                .unwrap_or_else(|| io::Error::other("the thread writing sorted rows stopped")));
        }
        self.spilled += rows;
        self.run_count += 1;
        if self.run_count >= self.spill.max_runs {
            self.run_count = 1;
        }
        Ok(())
    }

    /// Waits for the writer thread to write every run handed to it and takes its runs.
    fn join_writer(&mut self) -> io::Result<()> {
        let Some(mut w) = self.writer.take() else {
            return Ok(());
        };
        drop(w.to.take());
        let done = w
            .thread
            .take()
            .map(|t| {
                t.join().unwrap_or_else(|_| {
                    Err(io::Error::other("the thread writing sorted rows failed"))
                })
            })
            .unwrap_or_else(|| Ok(Written::default()))?;
        self.runs = done.runs;
        self.spilled_span = done.span;
        Ok(())
    }

    /// Puts the rows in decision-time order: arrival, then (within a millisecond)
    /// served at once, delayed (shortest first), refused in the log; then input order.
    ///
    /// Rows stamped in whole seconds are first spread evenly over their second, in log
    /// order (a run of consecutive rows of one file with the same second), which
    /// matches a real limiter better than piling them all on the second's first
    /// millisecond.
    ///
    /// Fails if a run could not be written to disk while the rows were added.
    pub fn sort(&mut self) -> io::Result<()> {
        if let Some(e) = &self.error {
            return Err(io::Error::new(e.kind(), e.to_string()));
        }
        if self.sorted {
            return Ok(());
        }
        self.close_group();
        if let Some(log) = &mut self.fed_clients
            && let Err(e) = log.flush()
        {
            self.error = Some(io::Error::new(e.kind(), e.to_string()));
            return Err(e);
        }
        if let Err(e) = self.join_writer() {
            self.error = Some(io::Error::new(e.kind(), e.to_string()));
            return Err(e);
        }
        self.cur.sort();
        self.unsorted = false;
        self.sorted = true;
        Ok(())
    }

    /// Takes the rows held that are decided before `floor` (UTC ms: no row pushed later
    /// is older), in decision-time order, to be replayed now ([`Fed::replay`], on any
    /// thread): rows read in about time order (a dataset's parts, whose time ranges the
    /// manifest records) are replayed as they are read instead of being sorted on
    /// disk. The clients of the rows taken are counted (or kept on disk) for
    /// [`RowStore::fold_clients`]. `reuse` is a [`Fed`] replayed already, for its
    /// buffers (kept for a later take when none is made now).
    ///
    /// `None` once rows were written to disk as runs (those are merged by
    /// [`RowStore::for_each_sorted`], after every row is read), while the rows of one
    /// second still being gathered are older than `floor` (they are spread over their
    /// second only once complete), when no row is older than `floor`, or when fewer
    /// than a quarter of the rows held are older than `floor` and the rows held are
    /// fewer than half a run (those few are taken with the next call: a take copies
    /// every row kept). Fails if the clients cannot be written.
    pub fn take_before(&mut self, floor: i64, reuse: Option<Fed>) -> io::Result<Option<Fed>> {
        if self.error.is_some() || self.writer.is_some() || !self.runs.is_empty() {
            return Ok(None);
        }
        let limit = self.group.map_or(floor, |g| floor.min(g.arrival));
        // The rows of an open second are the last ones and no older than `limit`: the
        // others are sorted (among equal keys, positions stay in push order, which
        // the sorts after this one tie by) and those older than `limit` taken.
        let open = self.group.map_or(self.cur.rows.len(), |g| g.start);
        let rows = &mut self.cur.rows[..open];
        // A stable sort of rows already in order leaves them as they are.
        if self.unsorted {
            rows.sort_by(decision_order);
            self.unsorted = false;
        }
        debug_assert!(rows.is_sorted_by(|a, b| decision_order(a, b).is_le()));
        let n = rows.partition_point(|r| r.arrival < limit);
        let len = self.cur.rows.len();
        self.feds.extend(reuse);
        // A few rows out of many wait for the next batch (they would cost a copy of
        // every row kept), while the rows held stay well below a run.
        if n == 0 || (n * 4 < len && len < self.spill.run_rows / 2) {
            return Ok(None);
        }
        let mut fed = self.feds.pop().unwrap_or_default();
        fed.rows.clear();
        if self.needs.any() {
            // Rows with text: both parts are copied, so that the text of the rows
            // taken does not stay behind.
            let mut keep = std::mem::take(&mut self.spare);
            for (k, r) in self.cur.rows.iter().enumerate() {
                let dest = if k < n { &mut fed.rows } else { &mut keep };
                dest.copy_row(r, &self.cur);
            }
            let mut held = std::mem::replace(&mut self.cur, keep);
            held.clear();
            self.spare = held;
        } else {
            // Most rows are taken: the buffer goes, the few rows kept are copied back.
            std::mem::swap(&mut fed.rows.rows, &mut self.cur.rows);
            // Room for the rows kept and a batch like this one: buffers that go round
            // between the reader and the replay without growing.
            self.cur.rows.reserve(len);
            self.cur.rows.extend_from_slice(&fed.rows.rows[n..]);
            fed.rows.rows.truncate(n);
        }
        if let Some(g) = &mut self.group {
            g.start -= n;
        }
        fed.first = self.fed;
        // The names interned since the last rows taken, for the replaying side's copy.
        fed.names.files = self.files[self.sent.files..].to_vec();
        self.sent.files = self.files.len();
        let tables = [
            &self.clients,
            &self.method,
            &self.host,
            &self.agent,
            &self.user,
        ];
        for ((new, sent), t) in fed
            .names
            .tables
            .iter_mut()
            .zip(&mut self.sent.tables)
            .zip(tables)
        {
            new.clear();
            new.extend_from_slice(&t.vals[*sent..]);
            *sent = t.vals.len();
        }
        let rows = &fed.rows.rows;
        if let (Some(a), Some(b)) = (rows.first(), rows.last()) {
            let (a, b) = (a.arrival, b.arrival);
            self.fed_span = Some(self.fed_span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
        }
        self.fed += rows.len() as u64;
        let dir = self.spill.dir.clone().unwrap_or_else(std::env::temp_dir);
        let log = self
            .fed_clients
            .get_or_insert_with(|| ClientLog::new(&dir, clients::COUNTED));
        if let Err(e) = rows.iter().try_for_each(|r| log.push(r.ip, r.name_key)) {
            self.error = Some(io::Error::new(e.kind(), e.to_string()));
            return Err(e);
        }
        Ok(Some(fed))
    }

    /// First and last decision time, if any row.
    pub fn span(&self) -> Option<(i64, i64)> {
        let held = self.cur.rows.iter().map(|r| r.arrival);
        let min = held.clone().min();
        let max = held.max();
        [self.fed_span, self.spilled_span, min.zip(max)]
            .into_iter()
            .flatten()
            .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)))
    }

    /// The request of a row, for the replay.
    #[inline]
    fn request<'a>(
        &'a self,
        index: u64,
        r: &Row,
        t: &[u32; 7],
        f: [Option<&'a [u8]>; 3],
    ) -> Request<'a> {
        Tables {
            clients: &self.clients.vals,
            method: &self.method.vals,
            host: &self.host.vals,
            agent: &self.agent.vals,
            user: &self.user.vals,
        }
        .request(index, r, t, f)
    }

    /// The report-side facts of a row.
    #[inline]
    fn meta(r: &Row) -> RowMeta {
        RowMeta {
            file: r.file,
            line: r.line,
            arrival_ms: r.arrival,
            status: r.status,
            ip: r.ip,
            name_key: (r.name_key != NONE).then_some(ClientKey::Name(r.name_key)),
            agent: r.agent,
            who: Who::ALL.get(r.who as usize).copied().unwrap_or(Who::Other),
            logged_refusal: r.flags & LOGGED_REFUSAL != 0,
            second_resolution: r.flags & SECOND != 0,
        }
    }

    /// Calls `f` with every row not taken by [`RowStore::take_before`], in decision-time
    /// order ([`RowStore::sort`] first): the request for the replay (its `index` is its position in that order) and the row's
    /// report-side facts. Rows written to disk are merged back on a thread of their own,
    /// handed over in chunks of 4096 rows (a few chunks in flight), so reading and
    /// merging the runs overlaps the replay.
    pub fn for_each_sorted(
        &self,
        mut f: impl FnMut(&Request<'_>, &RowMeta) -> io::Result<()>,
    ) -> io::Result<()> {
        if !self.sorted {
            return Err(io::Error::other("replay rows fed before they were sorted"));
        }
        if self.runs.is_empty() {
            for (i, r) in self.cur.rows.iter().enumerate() {
                let (t, fs) = self.cur.held_text(r);
                f(
                    &self.request(self.fed + i as u64, r, &t, fs),
                    &Self::meta(r),
                )?;
            }
            return Ok(());
        }
        let (runs, needs, held) = (&self.runs, self.needs, &self.cur);
        let (to, from) = bounded::<io::Result<Chunk>>(4);
        let (back_tx, back) = unbounded::<Chunk>();
        std::thread::scope(|scope| {
            scope.spawn(move || {
                let mut chunk = Chunk::default();
                let res = merge(runs, needs, held, |src| {
                    let (r, t, fs) = current(src);
                    chunk.push(r, t, fs);
                    if chunk.rows.len() >= CHUNK_ROWS || chunk.text.len() >= CHUNK_TEXT {
                        let next = back.try_recv().unwrap_or_default();
                        let full = std::mem::replace(&mut chunk, next);
                        // The replay stopped (its own error): stop reading.
                        to.send(Ok(full))
                            .map_err(|_| io::Error::other("replay stopped"))?;
                    }
                    Ok(())
                });
                let last = match res {
                    Ok(()) => Ok(chunk),
                    Err(e) => Err(e),
                };
                let _ = to.send(last);
            });
            // Owned here, so that a replay that stops early drops it and the reader's
            // next hand-over fails instead of waiting for ever.
            let from = from;
            let mut i = self.fed;
            for chunk in &from {
                let chunk = chunk?;
                for k in 0..chunk.rows.len() {
                    let (r, t, fs) = chunk.row(k);
                    f(&self.request(i, r, &t, fs), &Self::meta(r))?;
                    i += 1;
                }
                let _ = back_tx.send(chunk.cleared());
            }
            Ok(())
        })
    }

    /// Folds the client of every row (its address, or the classifier's key of a client
    /// that is not one) with a number of rows (a client's rows are given at once where
    /// they were counted), in no particular order, on up to `threads` threads: each
    /// folds a share of the runs on disk into a state of its own from `init`, the rows
    /// held in memory and those counted go into the first. The states come back in
    /// thread order.
    pub fn fold_clients<S: Send>(
        &self,
        threads: usize,
        init: impl Fn() -> S + Sync,
        f: impl Fn(&mut S, Option<IpAddr>, Option<ClientKey>, u64) + Sync,
    ) -> io::Result<Vec<S>> {
        let name = |k: u32| (k != NONE).then_some(ClientKey::Name(k));
        let logged = self.fed_clients.as_ref().map_or(0, ClientLog::files);
        let n = threads.clamp(1, (self.runs.len() + logged).max(1));
        let share = |t: usize, s: &mut S| -> io::Result<()> {
            for run in self.runs.iter().skip(t).step_by(n) {
                let mut d = RunReader::new(run, self.needs)?;
                while let Some((ip, k)) = d.next_client()? {
                    f(s, ip, name(k), 1);
                }
            }
            if let Some(log) = &self.fed_clients {
                // Continue the runs' round: every thread gets a share of the files.
                let first = (n - self.runs.len() % n + t) % n;
                for k in (first..logged).step_by(n) {
                    log.fold(k, |ip, key| f(s, ip, name(key), 1))?;
                }
            }
            Ok(())
        };
        let mut states: Vec<S> = (0..n).map(|_| init()).collect();
        std::thread::scope(|scope| {
            let (first, rest) = states.split_first_mut().expect("n >= 1");
            let others: Vec<_> = rest
                .iter_mut()
                .enumerate()
                .map(|(t, s)| scope.spawn(move || share(t + 1, s)))
                .collect();
            let mut res = share(0, first);
            for h in others {
                let r = h.join().unwrap_or_else(|_| {
                    Err(io::Error::other("a thread reading sorted rows failed"))
                });
                res = res.and(r);
            }
            res
        })?;
        if let Some(s) = states.first_mut() {
            for r in &self.cur.rows {
                f(s, r.ip, name(r.name_key), 1);
            }
            if let Some(log) = &self.fed_clients {
                log.fold_counted(|ip, key, n| f(s, ip, name(key), n));
            }
        }
        Ok(states)
    }
}

/// One run's rows and their free text, while they are gathered (then sorted and
/// written out, or kept as the last run).
#[derive(Default)]
struct RunBuf {
    rows: Vec<Row>,
    texts: Vec<[u32; 7]>,
    path: Arena,
    query: Arena,
    referer: Arena,
}

impl RunBuf {
    /// Bytes of free text held.
    fn text_bytes(&self) -> usize {
        self.path.held() + self.query.held() + self.referer.held()
    }

    /// Appends row `r` of `from`, with its free text.
    fn copy_row(&mut self, r: &Row, from: &RunBuf) {
        let mut row = *r;
        if r.text != NONE {
            let mut t = from.texts[r.text as usize];
            t[1] = self.path.push_bytes(from.path.get(t[1]));
            t[2] = self.query.push_bytes(from.query.get(t[2]));
            t[5] = self.referer.push_bytes(from.referer.get(t[5]));
            row.text = self.texts.len() as u32;
            self.texts.push(t);
        }
        self.rows.push(row);
    }

    /// Sorts the rows (stable: equal keys keep input order).
    fn sort(&mut self) {
        self.rows.sort_by(decision_order);
    }

    fn clear(&mut self) {
        self.rows.clear();
        self.texts.clear();
        self.path.clear();
        self.query.clear();
        self.referer.clear();
    }

    /// The free text fields of a row: its interned ids and its path, query and referer.
    #[inline]
    fn held_text(&self, r: &Row) -> ([u32; 7], [Option<&[u8]>; 3]) {
        if r.text == NONE {
            return ([NONE; 7], [None; 3]);
        }
        let t = self.texts[r.text as usize];
        (
            t,
            [
                self.path.get(t[1]),
                self.query.get(t[2]),
                self.referer.get(t[5]),
            ],
        )
    }

    /// Sorts the rows and writes them to a new run under `dir`; their first and last
    /// decision time with the run.
    fn write(&mut self, dir: &Path, needs: Needs) -> io::Result<(Run, (i64, i64))> {
        self.sort();
        let mut w = RunWriter::create(dir, needs)?;
        for r in &self.rows {
            let (t, [p, q, f]) = self.held_text(r);
            w.put(r, &t, p, q, f)?;
        }
        let span = (
            self.rows.first().map_or(0, |r| r.arrival),
            self.rows.last().map_or(0, |r| r.arrival),
        );
        Ok((w.finish()?, span))
    }
}

/// Rows in a [`Chunk`] of merged rows.
const CHUNK_ROWS: usize = 4096;
/// Bytes of free text after which a [`Chunk`] is handed over with fewer rows.
const CHUNK_TEXT: usize = 8 << 20;

/// Merged rows on their way from the thread reading the runs to the replay: each row
/// with its interned ids and its free text (copied into one buffer).
#[derive(Default)]
struct Chunk {
    rows: Vec<Row>,
    ids: Vec<[u32; 7]>,
    /// Per row: the path, query and referer as (start, length) in `text`; length
    /// `u32::MAX` for none.
    spans: Vec<[(u32, u32); 3]>,
    text: Vec<u8>,
}

impl Chunk {
    #[inline]
    fn push(&mut self, r: &Row, t: [u32; 7], fs: [Option<&[u8]>; 3]) {
        self.rows.push(*r);
        self.ids.push(t);
        let text = &mut self.text;
        self.spans.push(fs.map(|f| match f {
            None => (0, u32::MAX),
            Some(b) => {
                let start = text.len() as u32;
                text.extend_from_slice(b);
                (start, b.len() as u32)
            }
        }));
    }

    #[inline]
    fn row(&self, k: usize) -> (&Row, [u32; 7], [Option<&[u8]>; 3]) {
        let fs = self.spans[k]
            .map(|(s, l)| (l != u32::MAX).then(|| &self.text[s as usize..s as usize + l as usize]));
        (&self.rows[k], self.ids[k], fs)
    }

    fn cleared(mut self) -> Chunk {
        self.rows.clear();
        self.ids.clear();
        self.spans.clear();
        self.text.clear();
        self
    }
}

/// What the writer thread leaves: the runs, and the span of their rows.
#[derive(Default)]
struct Written {
    runs: Vec<Run>,
    span: Option<(i64, i64)>,
}

/// The thread that sorts and writes runs while the next one is gathered.
struct RunThread {
    /// Full runs to write (a rendezvous: handing one over waits until the thread takes
    /// it, so at most one run waits besides the one being gathered).
    to: Option<Sender<RunBuf>>,
    /// Written runs' emptied buffers, to gather the next run in.
    back: Receiver<RunBuf>,
    thread: Option<std::thread::JoinHandle<io::Result<Written>>>,
}

impl RunThread {
    /// Starts the writer, continuing from `runs` already on disk.
    fn start(
        runs: Vec<Run>,
        span: Option<(i64, i64)>,
        needs: Needs,
        dir: PathBuf,
        max_runs: usize,
    ) -> io::Result<RunThread> {
        let (to, rx) = bounded::<RunBuf>(0);
        let (back_tx, back) = unbounded::<RunBuf>();
        let thread = std::thread::Builder::new()
            .name("replay-runs".into())
            .spawn(move || {
                let mut done = Written { runs, span };
                for mut buf in rx {
                    let (run, (first, last)) = buf.write(&dir, needs)?;
                    done.span = Some(match done.span {
                        None => (first, last),
                        Some((a, b)) => (a.min(first), b.max(last)),
                    });
                    done.runs.push(run);
                    if done.runs.len() >= max_runs {
                        let mut w = RunWriter::create(&dir, needs)?;
                        let none = RunBuf::default();
                        merge(&done.runs, needs, &none, |src| {
                            let (r, t, [p, q, f]) = current(src);
                            w.put(r, &t, p, q, f)
                        })?;
                        done.runs = vec![w.finish()?];
                    }
                    buf.clear();
                    // The store may be gone already (an error): nothing to hand back to.
                    let _ = back_tx.send(buf);
                }
                Ok(done)
            })?;
        Ok(RunThread {
            to: Some(to),
            back,
            thread: Some(thread),
        })
    }
}

/// The row a merge source is at, with its text.
#[inline]
fn current<'s>(src: &'s Source<'_>) -> (&'s Row, [u32; 7], [Option<&'s [u8]>; 3]) {
    match src {
        Source::Held { buf, pos } => {
            let r = &buf.rows[*pos];
            let (t, f) = buf.held_text(r);
            (r, t, f)
        }
        Source::Disk(d) => (&d.row, d.t, d.texts()),
    }
}

/// Calls `f` on every row of `runs`, then of `held` (sorted), in decision-time order
/// (ties: earlier run first), with the source the row is at.
fn merge<'a>(
    runs: &'a [Run],
    needs: Needs,
    held: &'a RunBuf,
    mut f: impl FnMut(&Source<'a>) -> io::Result<()>,
) -> io::Result<()> {
    let mut sources: Vec<Source<'a>> = Vec::with_capacity(runs.len() + 1);
    let mut heap = BinaryHeap::with_capacity(runs.len() + 1);
    for run in runs {
        let mut d = RunReader::new(run, needs)?;
        if d.next()? {
            heap.push(Reverse((packed_key(&d.row), sources.len() as u32)));
            sources.push(Source::Disk(d));
        }
    }
    if let Some(r) = held.rows.first() {
        heap.push(Reverse((packed_key(r), sources.len() as u32)));
        sources.push(Source::Held { buf: held, pos: 0 });
    }
    while let Some(mut top) = heap.peek_mut() {
        let s = top.0.1 as usize;
        f(&sources[s])?;
        let next = match &mut sources[s] {
            Source::Held { buf, pos } => {
                *pos += 1;
                buf.rows.get(*pos).map(packed_key)
            }
            Source::Disk(d) => d.next()?.then(|| packed_key(&d.row)),
        };
        match next {
            Some(k) => top.0.0 = k,
            None => {
                PeekMut::pop(top);
            }
        }
    }
    Ok(())
}

/// Where a merge takes its next row from (a few per merge: not boxed, to keep the
/// reader one load away).
#[allow(clippy::large_enum_variant)]
enum Source<'a> {
    /// The rows still in memory (the last run), sorted.
    Held { buf: &'a RunBuf, pos: usize },
    /// A run on disk.
    Disk(RunReader<'a>),
}

#[inline]
fn order_key(r: &Row) -> ReplayOrder {
    if r.flags & LOG_ORDER != 0 {
        return ReplayOrder::new(r.arrival, 0, false, 0);
    }
    let rt_ms = if r.rt_us == NO_VALUE {
        0
    } else {
        r.rt_us.div_ceil(1000)
    };
    ReplayOrder::new(r.arrival, rt_ms, r.flags & LOGGED_REFUSAL != 0, 0)
}

/// The order of [`order_key`], comparing the decision times first (most rows differ
/// there) and building the keys only for rows of one millisecond.
#[inline]
fn decision_order(a: &Row, b: &Row) -> std::cmp::Ordering {
    a.arrival
        .cmp(&b.arrival)
        .then_with(|| packed_key(a).cmp(&packed_key(b)))
}

/// [`order_key`] as one integer with the same order: decision time (sign bit flipped),
/// the 2-bit class, the request time in ms (below 2^62: it is at most u64::MAX / 1000).
#[inline]
fn packed_key(r: &Row) -> u128 {
    let k = order_key(r);
    (u128::from(k.arrival_ms as u64 ^ (1 << 63)) << 64)
        | (u128::from(k.class) << 62)
        | u128::from(k.request_time_ms)
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
        // The size only for a cost in bytes; no text is kept for it.
        let b = Needs::of(&[Policy::from_spec("10000000/m,cost=bytes").unwrap()]);
        assert!(b.bytes && !b.any());
        assert!(!Needs::of(&[Policy::from_spec("10/s,cost=request-time").unwrap()]).bytes);
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
        push_all(&mut s, &b);
        s.sort().unwrap();
        let mut got = Vec::new();
        s.for_each_sorted(|r, m| {
            got.push((m.line, r.arrival_ms, r.path.map(<[u8]>::to_vec), *m));
            Ok(())
        })
        .unwrap();
        let lines: Vec<u64> = got.iter().map(|g| g.0).collect();
        assert_eq!(lines, vec![4, 3, 1, 2, 5, 6, 7]);
        let t: Vec<i64> = got[4..7].iter().map(|g| g.1).collect();
        assert_eq!(t, vec![5000, 5333, 5666]);
        assert_eq!(got[0].2.as_deref(), Some(&b"/x"[..]));
        assert!(got[3].3.logged_refusal && got[4].3.second_resolution);
        assert_eq!(s.span(), Some((999, 5666)));
        assert_eq!(s.file_name(0), "a.log");
    }

    /// Rows taken as they are read ([`RowStore::take_before`] at every batch with the
    /// least time of the rows still to come), then the rest sorted (and spilled, with a
    /// small run size), come in exactly the order, with exactly the indexes, text and
    /// clients, of one sort of every row.
    #[test]
    fn rows_taken_as_read_come_as_one_sort_of_every_row() {
        let mut seed = 0x5eed_7a4eu64;
        let mut rnd = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for case in 0..24u64 {
            let needs = if case % 2 == 0 {
                Needs::ALL
            } else {
                Needs::default()
            };
            let run_rows = [1 << 19, 40, 7][(case % 3) as usize];
            // Batches of rows in about time order (late by up to 3 s), some stamped in
            // whole seconds, from two files.
            let mut batches = Vec::new();
            let mut t = 1_000_000i64;
            let mut line = 0u64;
            for _ in 0..(2 + rnd(12)) {
                let mut b = Batch::default();
                for _ in 0..rnd(60) {
                    t += rnd(700) as i64;
                    let second = rnd(3) == 0;
                    let late = t - rnd(3000) as i64 * (rnd(4) == 0) as i64;
                    let ts = if second { late / 1000 * 1000 } else { late };
                    let ip = format!("10.0.{}.{}", rnd(3), rnd(5));
                    let path = format!("/p/{line}");
                    b.push(
                        &Record {
                            ts_ms: ts,
                            precision: if second {
                                Precision::Second
                            } else {
                                Precision::Milli
                            },
                            client: ip.as_bytes(),
                            ip: Some(ip.parse().unwrap()),
                            path: Some(path.as_bytes()),
                            user_agent: Some(if rnd(2) == 0 { b"a" } else { b"b" }),
                            status: if rnd(9) == 0 { 429 } else { 200 },
                            request_time_us: Some(rnd(4000)),
                            ..Record::default()
                        },
                        line,
                    );
                    line += 1;
                }
                batches.push((rnd(2) as usize, b));
            }
            let floors: Vec<i64> = (0..batches.len())
                .map(|k| {
                    batches[k + 1..]
                        .iter()
                        .flat_map(|(_, b)| b.ts_ms.iter().copied())
                        .min()
                        .unwrap_or(i64::MAX)
                })
                .collect();
            let spill = SpillOptions {
                run_rows,
                max_runs: 3,
                ..SpillOptions::default()
            };
            type Seen = (
                u64,
                i64,
                u64,
                u32,
                Option<Vec<u8>>,
                Option<Vec<u8>>,
                Option<IpAddr>,
            );
            let seen = |r: &Request<'_>, m: &RowMeta, file: &str| -> Seen {
                assert_eq!(file, ["a.log", "b.log"][m.file as usize]);
                let path = r.path.map(<[u8]>::to_vec);
                (
                    r.index,
                    r.arrival_ms,
                    m.line,
                    m.file,
                    path,
                    r.user_agent.map(<[u8]>::to_vec),
                    m.ip,
                )
            };
            let run = |take: bool| {
                let mut s = RowStore::with_spill(needs, spill.clone());
                let ids = [s.file_id("a.log"), s.file_id("b.log")];
                let mut got: Vec<Seen> = Vec::new();
                let mut names = FedNames::default();
                let mut fed = None;
                for ((f, b), floor) in batches.iter().zip(&floors) {
                    for i in 0..b.len() {
                        let c = rc(b.client.get(i).unwrap());
                        s.push(
                            ids[*f],
                            &RowInput {
                                batch: b,
                                i,
                                class: &c,
                                who: Who::Other,
                                logged_refusal: b.status[i] == 429,
                            },
                        );
                    }
                    if take && let Some(f) = s.take_before(*floor, fed.take()).unwrap() {
                        f.replay(&mut names, |r, m, file| {
                            got.push(seen(r, m, file));
                            Ok(())
                        })
                        .unwrap();
                        fed = Some(f);
                    }
                }
                s.sort().unwrap();
                s.for_each_sorted(|r, m| {
                    got.push(seen(r, m, s.file_name(m.file)));
                    Ok(())
                })
                .unwrap();
                let mut clients = s
                    .fold_clients(2, Vec::new, |v, ip, _, n| {
                        v.extend(std::iter::repeat_n(ip, n as usize))
                    })
                    .unwrap()
                    .concat();
                clients.sort();
                (got, clients, s.len(), s.span(), s.fed())
            };
            let (want, want_clients, n, span, _) = run(false);
            let (got, clients, m, got_span, fed) = run(true);
            assert_eq!(got, want, "case {case}");
            assert_eq!(
                (clients, m, got_span),
                (want_clients, n, span),
                "case {case}"
            );
            assert!(
                run_rows < 100 || n == 0 || fed > 0,
                "case {case}: nothing taken"
            );
            let index: Vec<u64> = got.iter().map(|g| g.0).collect();
            assert_eq!(index, (0..n as u64).collect::<Vec<_>>(), "case {case}");
        }
    }

    /// A store spilling as `spill` says, holding `n` rows of one client at the times
    /// `ts(line)`, each with the path `/p`.
    fn store_of(n: u64, ts: impl Fn(u64) -> i64, needs: Needs, spill: SpillOptions) -> RowStore {
        let mut b = Batch::default();
        for l in 0..n {
            b.push(
                &Record {
                    ts_ms: ts(l),
                    client: b"10.0.0.1",
                    ip: Some("10.0.0.1".parse().unwrap()),
                    path: Some(b"/p"),
                    status: 200,
                    ..Record::default()
                },
                l,
            );
        }
        let mut s = RowStore::with_spill(needs, spill);
        push_all(&mut s, &b);
        s
    }

    /// Pushes every row of `b` as from file `a.log` and client 10.0.0.1; a 429 is a
    /// logged refusal.
    fn push_all(s: &mut RowStore, b: &Batch) {
        let f = s.file_id("a.log");
        let c = rc("10.0.0.1");
        for i in 0..b.len() {
            s.push(
                f,
                &RowInput {
                    batch: b,
                    i,
                    class: &c,
                    who: Who::Other,
                    logged_refusal: b.status[i] == 429,
                },
            );
        }
    }

    #[test]
    fn a_run_that_cannot_be_written_is_an_error_from_sort() {
        let mut s = store_of(
            20,
            |l| 1000 - l as i64,
            Needs::default(),
            SpillOptions {
                run_rows: 3,
                dir: Some(PathBuf::from("/nonexistent/logscope-spill")),
                ..SpillOptions::default()
            },
        );
        let e = s.sort().expect_err("the runs could not be written");
        assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
        // Asked again, the same error; never rows fed in a wrong order.
        assert!(s.sort().is_err());
        assert!(s.for_each_sorted(|_, _| Ok(())).is_err());
    }

    #[test]
    fn a_replay_that_stops_early_gets_its_error_back_from_the_merge() {
        let mut s = store_of(
            20_000,
            |l| (l as i64 * 7919) % 20_000,
            Needs::ALL,
            SpillOptions {
                run_rows: 3_000,
                ..SpillOptions::default()
            },
        );
        s.sort().unwrap();
        assert_eq!(s.spilled_runs(), 6);
        // In order, every row once, its text with it.
        let mut seen = Vec::new();
        s.for_each_sorted(|r, m| {
            assert_eq!(r.path, Some(&b"/p"[..]));
            seen.push((r.arrival_ms, m.line));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen.len(), 20_000);
        assert!(seen.windows(2).all(|w| w[0] <= w[1]));
        // Stopping after 5 000 rows (more than a chunk) returns at once with the error.
        let mut n = 0;
        let e = s
            .for_each_sorted(|_, _| {
                n += 1;
                if n == 5_000 {
                    return Err(io::Error::other("sink full"));
                }
                Ok(())
            })
            .unwrap_err();
        assert_eq!(e.to_string(), "sink full");
        assert_eq!(n, 5_000);
    }

    #[test]
    fn the_packed_merge_key_orders_like_replay_order() {
        let arrivals = [i64::MIN, -1_000, -1, 0, 1, 999, 1_790_312_400_000, i64::MAX];
        let rts = [NO_VALUE, 0, 1, 999, 1_000, 1_001, 5_000_000, NO_VALUE - 1];
        let mut rows = Vec::new();
        for &arrival in &arrivals {
            for &rt_us in &rts {
                for flags in [0, LOGGED_REFUSAL] {
                    rows.push(Row {
                        arrival,
                        rt_us,
                        flags,
                        ..Row::EMPTY
                    });
                }
            }
        }
        for a in &rows {
            for b in &rows {
                assert_eq!(
                    packed_key(a).cmp(&packed_key(b)),
                    order_key(a).cmp(&order_key(b)),
                    "{} {} / {} {}",
                    a.arrival,
                    a.rt_us,
                    b.arrival,
                    b.rt_us
                );
            }
        }
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
