//! `--haproxy-cfg FILE`: a real haproxy.cfg read into a replay [`Policy`] that runs each
//! frontend's `http-request` rules in order over its stick tables, as HAProxy 2.6 does.
//!
//! Read: `stick-table type ip|ipv6|string|integer|binary [len N] size N [expire T]
//! [store http_req_rate(P),http_req_cnt,gpc0,…]` (a table is named after its section);
//! `acl NAME criterion [flags] values`; `http-request track-scN KEY [table T] [if|unless
//! COND]` with KEY `src`, `src,ipmask(N[,M])`, `str(CONST)`, `req.hdr(user-agent)`,
//! `req.hdr(referer)`, `path`, `url`; `http-request sc-inc-gpc0(N)`; `http-request deny
//! [deny_status N]` (also `tarpit`, `reject`, `silent-drop`: refused); `http-request
//! return|allow` (final, passed). Conditions: `{ sc_http_req_rate(N) gt X }`,
//! `sc0_http_req_rate`, `sc_get_gpc0(N)`, `sc0_get_gpc0` with `gt ge lt le eq`;
//! `path`, `path_beg`, `path_end`, `path_sub`, `path_reg`, `path_dir` (and `path -m …`,
//! `-i`), `method`, `src`, `hdr(user-agent)`/`hdr(referer)` forms, `TRUE`/`FALSE`,
//! named ACLs, `!`, `||`/`or`, `unless`.
//!
//! A statement that could change what is counted or refused but is not replayed is
//! listed ([`HaproxyCfg::unsupported`], with file:line) and left out; statements that
//! cannot (logging, headers, timeouts, binds, set-var…) are skipped silently. A
//! malformed statement is a [`HaproxyCfgError`] with file:line.
//!
//! Requests are sent to the frontend named by their `host` field (the HAProxy log
//! parser puts `%ft` there); with one frontend, every request goes to it.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use ipnet::IpNet;
use regex::bytes::Regex;

use crate::rate::Rate;
use crate::replay::{
    Action, Algorithm, Cmp, Cond, Dialect, Frontend, KeySpec, LimitRef, LimitSpec, Matcher, Policy,
    Program, StickTable, Term, Test, TrackKey, Zone, ZoneId,
};

/// A haproxy.cfg that could not be read: where and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HaproxyCfgError {
    /// The file as given.
    pub file: String,
    /// The line (1-based; 0 = the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl std::error::Error for HaproxyCfgError {}

impl fmt::Display for HaproxyCfgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

/// A statement read but not replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported {
    /// The file.
    pub file: String,
    /// The line (1-based).
    pub line: usize,
    /// The statement's first words.
    pub statement: String,
    /// Why it is left out and what that may change.
    pub why: String,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: not replayed: `{}`: {}",
            self.file, self.line, self.statement, self.why
        )
    }
}

/// A haproxy.cfg read into a policy.
pub struct HaproxyCfg {
    /// The candidate.
    pub policy: Policy,
    /// Statements left out (they may change decisions).
    pub unsupported: Vec<Unsupported>,
    /// Frontends with a replayed limiter, in file order.
    pub frontends: Vec<String>,
}

/// Reads `path`: a regular file of at most [`crate::conf_file::CONFIG_CAP`] (haproxy.cfg
/// has no includes; its statements are one line each, with no nesting).
pub fn read_file(path: &Path) -> Result<HaproxyCfg, HaproxyCfgError> {
    let shown = crate::escape::path(path);
    let text = crate::conf_file::read_text(path, crate::conf_file::CONFIG_CAP).map_err(|e| {
        HaproxyCfgError {
            file: shown.clone(),
            line: 0,
            message: e.problem(),
        }
    })?;
    let name = path
        .file_name()
        .map_or_else(|| shown.clone(), |n| n.to_string_lossy().into_owned());
    parse(&text, &shown, &name)
}

struct Stmt {
    line: usize,
    words: Vec<String>,
}

struct Section {
    kind: String,
    name: String,
    stmts: Vec<Stmt>,
}

/// Splits one line into words as HAProxy does: blanks separate, `"…"` (with `\`
/// escapes) and `'…'` quote, `\` escapes one character, `#` starts a comment.
fn words(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut has = false;
    let mut it = line.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            ' ' | '\t' => {
                if has {
                    out.push(std::mem::take(&mut cur));
                    has = false;
                }
            }
            '#' => break,
            '\\' => {
                has = true;
                if let Some(n) = it.next() {
                    cur.push(n);
                }
            }
            '"' => {
                has = true;
                loop {
                    match it.next() {
                        None => return Err("unterminated double quote".into()),
                        Some('"') => break,
                        Some('\\') => {
                            if let Some(n) = it.next() {
                                cur.push(n);
                            }
                        }
                        Some(x) => cur.push(x),
                    }
                }
            }
            '\'' => {
                has = true;
                loop {
                    match it.next() {
                        None => return Err("unterminated single quote".into()),
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                    }
                }
            }
            _ => {
                has = true;
                cur.push(c);
            }
        }
    }
    if has {
        out.push(cur);
    }
    Ok(out)
}

const SECTIONS: &[&str] = &[
    "global",
    "defaults",
    "frontend",
    "backend",
    "listen",
    "peers",
    "resolvers",
    "userlist",
    "mailers",
    "program",
    "http-errors",
    "ring",
    "cache",
    "fcgi-app",
    "crt-store",
    "traces",
];

/// Reads haproxy.cfg text; `file` names it in messages, `name` names the candidate.
pub fn parse(text: &str, file: &str, name: &str) -> Result<HaproxyCfg, HaproxyCfgError> {
    let err = |line: usize, message: String| HaproxyCfgError {
        file: file.to_string(),
        line,
        message,
    };
    let mut sections: Vec<Section> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let w = words(raw).map_err(|m| err(line, m))?;
        let Some(first) = w.first() else { continue };
        if SECTIONS.contains(&first.as_str()) {
            let sname = w.get(1).cloned().unwrap_or_default();
            if matches!(first.as_str(), "frontend" | "backend" | "listen") && sname.is_empty() {
                return Err(err(line, format!("`{first}` needs a name")));
            }
            sections.push(Section {
                kind: first.clone(),
                name: sname,
                stmts: Vec::new(),
            });
            continue;
        }
        let Some(sec) = sections.last_mut() else {
            return Err(err(
                line,
                format!(
                    "`{first}` outside any section (global, defaults, frontend, backend, listen)"
                ),
            ));
        };
        sec.stmts.push(Stmt { line, words: w });
    }
    Builder {
        file: file.to_string(),
        unsupported: Vec::new(),
    }
    .build(&sections, name)
}

/// A frontend's name, the tables it tracks, and its deny lines with the tables each reads.
type FrontendRules = (String, Vec<ZoneId>, Vec<(usize, Vec<ZoneId>)>);

/// A table as declared.
struct TableDecl {
    name: String,
    period: Option<u32>,
    counts: bool,
    expire: u64,
}

struct Builder {
    file: String,
    unsupported: Vec<Unsupported>,
}

/// Stream-level statements that cannot change what is counted or refused.
const HARMLESS_HTTP_REQUEST: &[&str] = &[
    "set-var",
    "unset-var",
    "set-header",
    "add-header",
    "del-header",
    "replace-header",
    "replace-value",
    "set-log-level",
    "capture",
    "set-mark",
    "set-tos",
    "set-nice",
    "early-hint",
    "set-priority-class",
    "set-priority-offset",
    "disable-l7-retry",
    "wait-for-body",
    "set-timeout",
    "set-src-port",
    "set-dst-port",
    "del-acl",
    "del-map",
    "set-map",
    "add-acl",
    "normalize-uri",
];

impl Builder {
    fn err(&self, line: usize, message: impl Into<String>) -> HaproxyCfgError {
        HaproxyCfgError {
            file: self.file.clone(),
            line,
            message: message.into(),
        }
    }

    fn skip(&mut self, s: &Stmt, why: impl Into<String>) {
        let statement: Vec<&str> = s.words.iter().take(6).map(String::as_str).collect();
        let mut statement = statement.join(" ");
        if s.words.len() > 6 {
            statement.push_str(" …");
        }
        self.unsupported.push(Unsupported {
            file: self.file.clone(),
            line: s.line,
            statement,
            why: why.into(),
        });
    }

    fn build(mut self, sections: &[Section], name: &str) -> Result<HaproxyCfg, HaproxyCfgError> {
        // Tables first: a frontend may name a backend's table declared later.
        let mut tables: Vec<TableDecl> = Vec::new();
        for sec in sections {
            for s in &sec.stmts {
                if s.words[0] == "stick-table" {
                    if !matches!(sec.kind.as_str(), "frontend" | "backend" | "listen") {
                        self.skip(s, "a stick-table outside a proxy section");
                        continue;
                    }
                    if tables.iter().any(|t| t.name == sec.name) {
                        return Err(
                            self.err(s.line, format!("a second stick-table in `{}`", sec.name))
                        );
                    }
                    let t = self.table(s, &sec.name)?;
                    tables.push(t);
                }
            }
            if sec.kind == "global" {
                for s in &sec.stmts {
                    if s.words[0] == "nbthread" && s.words.get(1).is_some_and(|n| n != "1") {
                        self.skip(
                            s,
                            "several threads: log lines of different threads interleave, so file order is only roughly decision order",
                        );
                    }
                }
            }
        }
        let mut policy = Policy::new(name, Dialect::Nginx);
        let mut zone_of: HashMap<String, ZoneId> = HashMap::new();
        let mut zones: Vec<(String, Option<KeySpec>, Option<u64>)> = Vec::new();
        for t in &tables {
            zone_of.insert(t.name.clone(), zones.len() as ZoneId);
            zones.push((t.name.clone(), None, None));
        }
        let mut program = Program::default();
        let mut fe_rules: Vec<FrontendRules> = Vec::new();
        for sec in sections {
            let proxy = matches!(sec.kind.as_str(), "frontend" | "listen" | "backend");
            if !proxy {
                continue;
            }
            let mut acls: HashMap<String, Result<Vec<Test>, String>> = HashMap::new();
            let mut actions: Vec<Action> = Vec::new();
            let mut tracked: Vec<ZoneId> = Vec::new();
            let mut denies: Vec<(usize, Vec<ZoneId>)> = Vec::new();
            for s in &sec.stmts {
                let w = &s.words;
                match w[0].as_str() {
                    "acl" => {
                        let Some(an) = w.get(1) else {
                            return Err(self.err(s.line, "`acl` needs a name and a criterion"));
                        };
                        if w.len() < 3 {
                            return Err(self.err(s.line, format!("acl `{an}` needs a criterion")));
                        }
                        let t = self.test(&w[2..], s.line, &mut program)?;
                        let e = acls.entry(an.clone()).or_insert_with(|| Ok(Vec::new()));
                        match (t, e) {
                            (Ok(t), Ok(v)) => v.push(t),
                            (Err(why), e) => *e = Err(why),
                            (Ok(_), Err(_)) => {}
                        }
                    }
                    "http-request" => {
                        if sec.kind == "backend" {
                            if w.get(1).is_some_and(|a| {
                                a.starts_with("track-sc")
                                    || a.starts_with("sc-inc")
                                    || matches!(a.as_str(), "deny" | "tarpit" | "reject")
                            }) {
                                self.skip(s, "http-request rules in a backend (only frontends' rules are replayed)");
                            }
                            continue;
                        }
                        let Some(a) = self.http_request(
                            s,
                            &acls,
                            &zone_of,
                            &sec.name,
                            &mut program,
                            &mut zones,
                        )?
                        else {
                            continue;
                        };
                        match &a {
                            Action::Track { table, .. } if !tracked.contains(table) => {
                                tracked.push(*table);
                            }
                            Action::IncGpc0 { cond, .. } => {
                                for (z, v) in thresholds(cond, &actions) {
                                    let l = &mut zones[z as usize].2;
                                    *l = Some(l.map_or(v, |x| x.min(v)));
                                }
                            }
                            Action::Deny { cond, .. } => {
                                let zs = cond_tables(cond, &actions);
                                // The table's threshold, for its description.
                                for (z, v) in thresholds(cond, &actions) {
                                    let l = &mut zones[z as usize].2;
                                    *l = Some(l.map_or(v, |x| x.min(v)));
                                }
                                denies.push((s.line, zs));
                            }
                            _ => {}
                        }
                        actions.push(a);
                    }
                    "tcp-request" | "http-response" | "tcp-response" => {
                        let counts = w.iter().any(|x| {
                            x.starts_with("track-sc")
                                || x.starts_with("sc-inc")
                                || matches!(x.as_str(), "reject" | "deny" | "silent-drop")
                        });
                        if counts && w[0] == "tcp-request" {
                            self.skip(s, "tcp-request rules are not replayed (an HTTP log has no connection events)");
                        } else if counts {
                            self.skip(s, "response rules are not replayed");
                        }
                    }
                    "stick" | "stick-store" => self.skip(
                        s,
                        "stick persistence rules create entries that are not replayed",
                    ),
                    _ => {}
                }
            }
            if sec.kind != "backend" && (!tracked.is_empty() || !denies.is_empty()) {
                // Deny rules get their ids once every frontend is known; keep the order.
                program.frontends.push(Frontend {
                    name: sec.name.clone(),
                    rule: 0,
                    actions,
                });
                fe_rules.push((sec.name.clone(), tracked, denies));
            }
        }
        // Zones: every table a frontend uses, then the rest (kept for the listing).
        for (t, (zname, key, limit)) in tables.iter().zip(&zones) {
            let period = t.period.map_or(t.expire.max(1000), u64::from);
            let rate = Rate::new(limit.unwrap_or(1).max(1), period.max(1))
                .or_else(|| Rate::new(1, 1000))
                .expect("1/s is a rate");
            let mut spec = LimitSpec::new(Algorithm::Haproxy, rate);
            spec.key = key.clone().unwrap_or(KeySpec::Site);
            spec.expire = Some(t.expire);
            spec.name = Some(zname.clone());
            let table = StickTable::new(t.period, t.counts, t.expire);
            policy
                .add_zone(Zone::stick_table(zname.clone(), spec, table))
                .map_err(|e| self.err(0, e.to_string()))?;
        }
        let mut frontends = Vec::new();
        for (fi, (fname, tracked, denies)) in fe_rules.into_iter().enumerate() {
            let matcher = Matcher {
                host: vec![fname.as_bytes().to_vec()],
                ..Matcher::default()
            };
            let limits: Vec<LimitRef> = tracked
                .iter()
                .map(|&z| LimitRef {
                    zone: z,
                    burst: None,
                    delay: None,
                })
                .collect();
            let rid = policy
                .add_rule(fname.clone(), matcher.clone(), Default::default(), &limits)
                .map_err(|e| self.err(0, e.to_string()))?;
            program.frontends[fi].rule = rid;
            let mut ids = Vec::new();
            for (line, zs) in &denies {
                let limits: Vec<LimitRef> = zs
                    .iter()
                    .map(|&z| LimitRef {
                        zone: z,
                        burst: None,
                        delay: None,
                    })
                    .collect();
                let r = policy
                    .add_rule(
                        format!("{fname} deny ({}:{line})", base_name(&self.file)),
                        matcher.clone(),
                        Default::default(),
                        &limits,
                    )
                    .map_err(|e| self.err(*line, e.to_string()))?;
                ids.push(r);
            }
            let mut k = 0;
            for a in &mut program.frontends[fi].actions {
                if let Action::Deny { rule, .. } = a {
                    *rule = ids[k];
                    k += 1;
                }
            }
            frontends.push(fname);
        }
        program.matchers.extend(
            program
                .frontends
                .iter()
                .map(|f| Matcher {
                    host: vec![f.name.as_bytes().to_vec()],
                    ..Matcher::default()
                })
                .collect::<Vec<_>>(),
        );
        if frontends.is_empty() {
            return Err(self.err(
                0,
                "no frontend tracks a stick table or denies: nothing to replay (give a frontend with `http-request track-sc0 …` and `http-request deny … if { sc_http_req_rate(0) gt N }`)",
            ));
        }
        policy.set_description(format!(
            "read from {}: {} frontend(s) ({}), {} stick table(s){}",
            self.file,
            frontends.len(),
            frontends.join(", "),
            tables.len(),
            if self.unsupported.is_empty() {
                String::new()
            } else {
                format!("; {} statement(s) not replayed", self.unsupported.len())
            }
        ));
        policy.set_program(program);
        Ok(HaproxyCfg {
            policy,
            unsupported: self.unsupported,
            frontends,
        })
    }

    fn table(&mut self, s: &Stmt, name: &str) -> Result<TableDecl, HaproxyCfgError> {
        let w = &s.words;
        let mut t = TableDecl {
            name: name.to_string(),
            period: None,
            counts: false,
            expire: 0,
        };
        let mut i = 1;
        let mut typed = false;
        while i < w.len() {
            let k = w[i].as_str();
            let v = w.get(i + 1);
            let need = |what: &str| {
                v.ok_or_else(|| self.err(s.line, format!("stick-table: `{k}` needs {what}")))
            };
            match k {
                "type" => {
                    let ty = need("a type (ip, ipv6, integer, string, binary)")?;
                    if !matches!(ty.as_str(), "ip" | "ipv6" | "integer" | "string" | "binary") {
                        return Err(self.err(
                            s.line,
                            format!("stick-table: unknown type `{ty}` (ip, ipv6, integer, string, binary)"),
                        ));
                    }
                    typed = true;
                    i += 2;
                }
                "len" | "size" | "peers" | "srvkey" | "write-to" | "recv-only" => {
                    need("a value")?;
                    if k == "size" && size(v.map_or("", String::as_str)).is_none() {
                        return Err(self.err(
                            s.line,
                            format!("stick-table: bad size `{}`", v.map_or("", String::as_str)),
                        ));
                    }
                    i += 2;
                }
                "expire" => {
                    let e = need("a time")?;
                    t.expire = time_ms(e).ok_or_else(|| {
                        self.err(
                            s.line,
                            format!("stick-table: bad expire `{e}` (e.g. 10s, 30000ms, 1m)"),
                        )
                    })?;
                    i += 2;
                }
                "nopurge" => i += 1,
                "store" => {
                    let list = need("a list of data types")?;
                    for item in split_top(list) {
                        let (dt, arg) = call(&item);
                        match dt {
                            "http_req_rate" => {
                                let p = arg.and_then(time_ms).filter(|&p| p > 0 && p <= u64::from(u32::MAX));
                                let Some(p) = p else {
                                    return Err(self.err(s.line, format!("stick-table: `{item}` needs a period, e.g. http_req_rate(10s)")));
                                };
                                t.period = Some(p as u32);
                            }
                            "http_req_cnt" => t.counts = true,
                            "gpc0" => {}
                            "gpc0_rate" | "gpc1" | "gpc1_rate" | "gpt0" | "server_id" | "server_key"
                            | "server_name" | "http_err_cnt" | "http_err_rate" | "http_fail_cnt"
                            | "http_fail_rate" | "conn_cnt" | "conn_rate" | "sess_cnt"
                            | "sess_rate" => {}
                            "conn_cur" | "bytes_in_cnt" | "bytes_in_rate" | "bytes_out_cnt"
                            | "bytes_out_rate" => self.skip(
                                s,
                                format!("`{dt}` is updated when a stream ends, which touches the entry and extends its expiry; the replay expires entries after the last request"),
                            ),
                            _ if dt.starts_with("gpc") || dt.starts_with("gpt") => {}
                            _ => {
                                return Err(self.err(s.line, format!("stick-table: unknown data type `{dt}`")));
                            }
                        }
                    }
                    i += 2;
                }
                _ => {
                    return Err(self.err(s.line, format!("stick-table: unknown keyword `{k}`")));
                }
            }
        }
        if !typed {
            return Err(self.err(s.line, "stick-table: `type` is required (e.g. `stick-table type ip size 100k expire 10s store http_req_rate(10s)`)"));
        }
        Ok(t)
    }

    #[allow(clippy::too_many_arguments)]
    fn http_request(
        &mut self,
        s: &Stmt,
        acls: &HashMap<String, Result<Vec<Test>, String>>,
        zone_of: &HashMap<String, ZoneId>,
        proxy: &str,
        program: &mut Program,
        zones: &mut [(String, Option<KeySpec>, Option<u64>)],
    ) -> Result<Option<Action>, HaproxyCfgError> {
        let w = &s.words;
        let Some(action) = w.get(1) else {
            return Err(self.err(s.line, "`http-request` needs an action"));
        };
        let ci = w.iter().position(|x| x == "if" || x == "unless");
        let (args, cond_words) = match ci {
            Some(c) => (&w[2..c], Some(&w[c..])),
            None => (&w[2..], None),
        };
        let a = action.as_str();
        if HARMLESS_HTTP_REQUEST.iter().any(|h| a.starts_with(h)) {
            return Ok(None);
        }
        let cond = match cond_words {
            None => Cond::default(),
            Some(cw) => match self.cond(cw, s.line, acls, program)? {
                Ok(c) => c,
                Err(why) => {
                    self.skip(s, why);
                    return Ok(None);
                }
            },
        };
        if let Some(n) = a.strip_prefix("track-sc") {
            let slot: u8 = n
                .parse()
                .ok()
                .filter(|&n: &u8| (n as usize) < crate::replay::HAPROXY_SLOTS)
                .ok_or_else(|| self.err(s.line, format!("`{a}`: bad sticky counter number")))?;
            let Some(kw) = args.first() else {
                return Err(self.err(s.line, format!("`{a}` needs a key, e.g. `{a} src`")));
            };
            let table = match args.get(1).map(String::as_str) {
                Some("table") => {
                    let Some(t) = args.get(2) else {
                        return Err(self.err(s.line, format!("`{a}`: `table` needs a name")));
                    };
                    t.clone()
                }
                None => proxy.to_string(),
                Some(x) => {
                    return Err(self.err(
                        s.line,
                        format!(
                            "`{a}`: unexpected `{x}` (expected `table NAME`, `if` or `unless`)"
                        ),
                    ));
                }
            };
            let Some(&zid) = zone_of.get(&table) else {
                return Err(self.err(s.line, format!("`{a}`: no stick-table `{table}` (declare `stick-table …` in a section named {table})")));
            };
            let key = match track_key(kw) {
                Ok(k) => k,
                Err(why) => {
                    self.skip(s, why);
                    return Ok(None);
                }
            };
            if let TrackKey::Field(k) = &key {
                program.keys.push(k.clone());
                zones[zid as usize].1.get_or_insert(k.clone());
            } else {
                zones[zid as usize].1.get_or_insert(KeySpec::Site);
            }
            return Ok(Some(Action::Track {
                slot,
                key,
                table: zid,
                cond,
            }));
        }
        if let Some(rest) = a.strip_prefix("sc-inc-gpc0") {
            let slot = match call_arg(rest) {
                Some(n) => n.trim().parse::<u8>().ok(),
                None if rest.is_empty() => Some(0),
                None => None,
            };
            let slot = slot
                .filter(|&n| (n as usize) < crate::replay::HAPROXY_SLOTS)
                .ok_or_else(|| {
                    self.err(
                        s.line,
                        format!("`{a}`: bad sticky counter, e.g. sc-inc-gpc0(0)"),
                    )
                })?;
            return Ok(Some(Action::IncGpc0 { slot, cond }));
        }
        match a {
            "deny" | "tarpit" | "reject" | "silent-drop" => {
                if let Some(i) = args
                    .iter()
                    .position(|x| x == "deny_status" || x == "status")
                    && args
                        .get(i + 1)
                        .and_then(|v| v.parse::<u16>().ok())
                        .is_none()
                {
                    return Err(
                        self.err(s.line, format!("`{a}`: `{}` needs a status code", args[i]))
                    );
                }
                Ok(Some(Action::Deny { rule: 0, cond }))
            }
            "return" | "allow" => Ok(Some(Action::Allow { cond })),
            "redirect" | "auth" | "set-path" | "set-uri" | "replace-path" | "replace-uri"
            | "set-query" | "set-pathq" | "set-method" | "do-resolve" | "use-service" => {
                self.skip(s, format!("`{a}` is not replayed (it may end the request or change what later rules see)"));
                Ok(None)
            }
            _ if a.starts_with("sc-") || a.starts_with("lua.") => {
                self.skip(s, format!("`{a}` is not replayed"));
                Ok(None)
            }
            _ => {
                self.skip(s, format!("unknown action `{a}`, not replayed"));
                Ok(None)
            }
        }
    }

    /// `if|unless TERMS`: `Ok(Err(why))` when a term is unsupported.
    fn cond(
        &mut self,
        w: &[String],
        line: usize,
        acls: &HashMap<String, Result<Vec<Test>, String>>,
        program: &mut Program,
    ) -> Result<Result<Cond, String>, HaproxyCfgError> {
        let mut c = Cond {
            or: vec![Vec::new()],
            unless: w[0] == "unless",
        };
        let mut i = 1;
        let mut neg = false;
        if w.len() < 2 {
            return Err(self.err(line, format!("`{}` needs a condition", w[0])));
        }
        while i < w.len() {
            let x = w[i].as_str();
            match x {
                "||" | "or" => {
                    if c.or.last().is_some_and(Vec::is_empty) {
                        return Err(self.err(line, "`||` with nothing before it"));
                    }
                    c.or.push(Vec::new());
                    i += 1;
                }
                "!" => {
                    neg = !neg;
                    i += 1;
                }
                "{" => {
                    let Some(end) = w[i..].iter().position(|t| t == "}") else {
                        return Err(self.err(line, "`{` without its `}`"));
                    };
                    let inner = &w[i + 1..i + end];
                    if inner.is_empty() {
                        return Err(self.err(line, "an empty `{ }`"));
                    }
                    match self.test(inner, line, program)? {
                        Ok(t) => {
                            c.or.last_mut()
                                .expect("one group")
                                .push(Term { neg, any: vec![t] })
                        }
                        Err(why) => return Ok(Err(why)),
                    }
                    neg = false;
                    i += end + 1;
                }
                "}" => return Err(self.err(line, "`}` without its `{`")),
                _ => {
                    let (n, bang) = match x.strip_prefix('!') {
                        Some(n) => (n, true),
                        None => (x, false),
                    };
                    let any = match n {
                        "TRUE" => vec![Test::Const(true)],
                        "FALSE" => vec![Test::Const(false)],
                        "HTTP" | "HTTP_1.1" | "HTTP_1.0" => vec![Test::Const(true)],
                        _ => match acls.get(n) {
                            Some(Ok(v)) => v.clone(),
                            Some(Err(why)) => return Ok(Err(format!("acl `{n}`: {why}"))),
                            None => {
                                return Err(self.err(line, format!("no ACL named `{n}` (declare it with `acl {n} …` before this line)")));
                            }
                        },
                    };
                    c.or.last_mut().expect("one group").push(Term {
                        neg: neg != bang,
                        any,
                    });
                    neg = false;
                    i += 1;
                }
            }
        }
        if c.or.last().is_some_and(Vec::is_empty) {
            return Err(self.err(line, "a condition ends with `||` or `!`"));
        }
        Ok(Ok(c))
    }

    /// One ACL criterion with its flags and values: `Ok(Err(why))` when unsupported.
    fn test(
        &mut self,
        w: &[String],
        line: usize,
        program: &mut Program,
    ) -> Result<Result<Test, String>, HaproxyCfgError> {
        let fetch = w[0].as_str();
        let mut icase = false;
        let mut mtype: Option<String> = None;
        let mut vals: Vec<&str> = Vec::new();
        let mut i = 1;
        let mut flags = true;
        while i < w.len() {
            let x = w[i].as_str();
            if flags
                && x.starts_with('-')
                && x.len() > 1
                && !x[1..].starts_with(|c: char| c.is_ascii_digit())
            {
                match x {
                    "-i" => icase = true,
                    "-m" => {
                        let Some(m) = w.get(i + 1) else {
                            return Err(self.err(line, "`-m` needs a match method"));
                        };
                        mtype = Some(m.clone());
                        i += 1;
                    }
                    "--" => flags = false,
                    "-n" | "-u" => {}
                    "-f" | "-M" => {
                        return Ok(Err(format!(
                            "`{fetch} {x}` reads values from a file, not replayed"
                        )));
                    }
                    _ => return Err(self.err(line, format!("unknown ACL flag `{x}`"))),
                }
                i += 1;
                continue;
            }
            flags = false;
            vals.push(x);
            i += 1;
        }
        // Counters.
        if let Some((slot, what)) = sc_fetch(fetch) {
            let slot = match slot {
                Some(s) if (s as usize) < crate::replay::HAPROXY_SLOTS => s,
                _ => return Err(self.err(line, format!("`{fetch}`: bad sticky counter number"))),
            };
            let (cmp, v) = match vals.as_slice() {
                [op, v] => (
                    Cmp::parse(op).ok_or_else(|| {
                        self.err(
                            line,
                            format!("`{fetch}`: unknown operator `{op}` (gt, ge, lt, le, eq)"),
                        )
                    })?,
                    *v,
                ),
                [v] if Cmp::parse(v).is_none() => (Cmp::Eq, *v),
                _ => {
                    return Err(
                        self.err(line, format!("`{fetch}` needs `gt N` (or ge, lt, le, eq)"))
                    );
                }
            };
            let Ok(value) = v.parse::<u64>() else {
                if v.contains(':') {
                    return Ok(Err(format!("`{fetch} {v}`: ranges are not replayed")));
                }
                return Err(self.err(line, format!("`{fetch}`: `{v}` is not a whole number")));
            };
            return Ok(Ok(match what {
                ScWhat::Rate => Test::Rate { slot, cmp, value },
                ScWhat::Gpc0 => Test::Gpc0 { slot, cmp, value },
            }));
        }
        if fetch.starts_with("sc")
            && (fetch.contains("_http_req_rate") || fetch.contains("_get_gpc0"))
        {
            return Ok(Err(format!(
                "`{fetch}`: a counter read from another table is not replayed"
            )));
        }
        if fetch.starts_with("sc") || fetch.starts_with("src_") || fetch.starts_with("table_") {
            return Ok(Err(format!("`{fetch}` is not replayed")));
        }
        let m = match fetch_match(fetch, mtype.as_deref(), icase, &vals) {
            Ok(m) => m,
            Err(why) => return Ok(Err(why)),
        };
        match m {
            Some(m) => {
                program.matchers.push(m.clone());
                Ok(Ok(Test::Req(Box::new(m))))
            }
            None => Err(self.err(line, format!("`{fetch}` needs a value to match"))),
        }
    }
}

/// The zones a deny's condition reads (through the slots tracked before it).
fn cond_tables(cond: &Cond, before: &[Action]) -> Vec<ZoneId> {
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
fn thresholds(cond: &Cond, before: &[Action]) -> Vec<(ZoneId, u64)> {
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

enum ScWhat {
    Rate,
    Gpc0,
}

/// `sc_http_req_rate(N)`, `scN_http_req_rate`, `sc_get_gpc0(N)`, `scN_get_gpc0`.
fn sc_fetch(f: &str) -> Option<(Option<u8>, ScWhat)> {
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
fn call_arg(s: &str) -> Option<&str> {
    s.strip_prefix('(')?.strip_suffix(')')
}

/// `name(arg)` → (`name`, `Some(arg)`); `name` → (`name`, `None`).
fn call(s: &str) -> (&str, Option<&str>) {
    match s.find('(') {
        Some(i) => (&s[..i], call_arg(&s[i..])),
        None => (s, None),
    }
}

/// A comma-separated list, commas inside parentheses kept.
fn split_top(s: &str) -> Vec<String> {
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
fn track_key(k: &str) -> Result<TrackKey, String> {
    let parts = split_top(k);
    let base = parts.first().map_or("", String::as_str);
    let convs = &parts[1.min(parts.len())..];
    let unsupported = || {
        format!(
            "track key `{k}` is not replayed (supported: src, src,ipmask(N), str(…), req.hdr(user-agent), req.hdr(referer), path, url)"
        )
    };
    let (name, arg) = call(base);
    let field = match (name, arg) {
        ("src", None) => KeySpec::Ip,
        ("str", Some(c)) if convs.is_empty() => return Ok(TrackKey::Const(c.as_bytes().to_vec())),
        ("req.hdr" | "hdr" | "req.fhdr" | "hdr_val", Some(h)) if convs.is_empty() => {
            match h.to_ascii_lowercase().as_str() {
                "user-agent" => KeySpec::Agent,
                "referer" => KeySpec::Referer,
                _ => {
                    return Err(format!(
                        "track key `{k}`: the header `{h}` is not in the log (only User-Agent and Referer can be keys)"
                    ));
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
fn fetch_match(
    fetch: &str,
    mtype: Option<&str>,
    icase: bool,
    vals: &[&str],
) -> Result<Option<Matcher>, String> {
    let (name, arg) = call(fetch);
    let mut m = Matcher::default();
    if matches!(fetch, "always_true" | "always_false") {
        return Err(format!("`{fetch}` is written TRUE/FALSE here"));
    }
    let regex = |pat: String| -> Result<Regex, String> {
        let pat = if icase { format!("(?i){pat}") } else { pat };
        Regex::new(&pat).map_err(|e| format!("bad regex: {e}"))
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
            other => return Err(format!("`{fetch}` with match `{other}` is not replayed")),
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
                .map_err(|_| format!("`src {v}`: not an address or network"))?;
            m.cidr.push(net);
        }
        return Ok(Some(m));
    }
    if is_hdr {
        let Some(h) = arg else {
            return Err(format!("`{fetch}` without a header name is not replayed"));
        };
        let suffix = name.rsplit_once('_').map_or("", |(_, s)| s).to_string();
        let how = kind(if name.contains('_') { &suffix } else { "" }).unwrap_or_default();
        let pat = match how.as_str() {
            "str" => format!("^(?:{})$", alt(vals)),
            "beg" => format!("^(?:{})", alt(vals)),
            "end" => format!("(?:{})$", alt(vals)),
            "sub" => format!("(?:{})", alt(vals)),
            "reg" => format!("(?:{})", vals.join("|")),
            other => return Err(format!("`{fetch}` with match `{other}` is not replayed")),
        };
        match h.to_ascii_lowercase().as_str() {
            "user-agent" => m.ua_regex = Some(regex(pat)?),
            "referer" => m.referer_regex = Some(regex(pat)?),
            _ => {
                return Err(format!(
                    "`{fetch}`: the header `{h}` is not in the log (User-Agent and Referer are)"
                ));
            }
        }
        return Ok(Some(m));
    }
    Err(format!("the ACL criterion `{fetch}` is not replayed"))
}

/// HAProxy times: a number with `us`, `ms`, `s`, `m`, `h` or `d` (default ms).
fn time_ms(s: &str) -> Option<u64> {
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
fn size(s: &str) -> Option<u64> {
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

fn base_name(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_quotes_and_comments() {
        assert_eq!(
            words(r#"http-request deny string "rate limited" hdr X 'a b' # note"#).unwrap(),
            [
                "http-request",
                "deny",
                "string",
                "rate limited",
                "hdr",
                "X",
                "a b"
            ]
        );
        assert!(words("x \"open").is_err());
    }

    #[test]
    fn times_and_sizes() {
        assert_eq!(time_ms("10000"), Some(10_000));
        assert_eq!(time_ms("10s"), Some(10_000));
        assert_eq!(time_ms("1m"), Some(60_000));
        assert_eq!(time_ms("30000ms"), Some(30_000));
        assert_eq!(time_ms("x"), None);
        assert_eq!(size("100k"), Some(102_400));
    }

    const CFG: &str = "\
frontend fe
    bind :80
    acl api path_beg /api/
    http-request track-sc0 src table st
    http-request track-sc1 src,ipmask(24) table st24 if api
    http-request deny deny_status 429 if { sc_http_req_rate(0) gt 2 }
    http-request deny if api { sc1_http_req_rate gt 5 }
    http-request track-sc2 hdr(x-forwarded-for) table st
    tcp-request connection track-sc0 src
backend st
    stick-table type ip size 1m expire 10s store http_req_rate(10s)
backend st24
    stick-table type ip size 1m expire 10s store http_req_rate(10s),gpc0
";

    #[test]
    fn reads_tables_tracks_denies_and_lists_what_it_skips() {
        let c = parse(CFG, "t/haproxy.cfg", "haproxy.cfg").unwrap();
        assert_eq!(c.frontends, ["fe"]);
        let p = &c.policy;
        assert_eq!(p.zones().len(), 2);
        assert_eq!(p.zones()[1].spec().key, KeySpec::Prefix { v4: 24, v6: 128 });
        let names: Vec<&str> = p.rules().iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            ["fe", "fe deny (haproxy.cfg:6)", "fe deny (haproxy.cfg:7)"]
        );
        let lines: Vec<usize> = c.unsupported.iter().map(|u| u.line).collect();
        assert_eq!(lines, [8, 9], "{:?}", c.unsupported);
        assert!(
            c.unsupported[0]
                .to_string()
                .starts_with("t/haproxy.cfg:8: not replayed")
        );
        assert!(p.describe().contains("HAProxy"), "{}", p.describe());
    }

    #[test]
    fn syntax_errors_name_file_and_line() {
        for (text, line, want) in [
            (
                "frontend fe\n  http-request track-sc0 src table nope\n",
                2,
                "no stick-table `nope`",
            ),
            (
                "frontend fe\n  http-request deny if { sc_http_req_rate(0) gt }\n",
                2,
                "needs `gt N`",
            ),
            (
                "frontend fe\n  http-request deny if { path_beg /a\n",
                2,
                "without its `}`",
            ),
            (
                "frontend fe\n  http-request deny if nope\n",
                2,
                "no ACL named `nope`",
            ),
            (
                "backend b\n  stick-table size 1k\n",
                2,
                "`type` is required",
            ),
            (
                "backend b\n  stick-table type ip store http_req_rate\n",
                2,
                "needs a period",
            ),
            ("  bind :80\n", 1, "outside any section"),
            ("frontend fe\n  bind :80\n", 0, "nothing to replay"),
        ] {
            let e = parse(text, "h.cfg", "h")
                .err()
                .unwrap_or_else(|| panic!("{text}"));
            assert_eq!(e.line, line, "{text}: {e}");
            assert!(e.to_string().contains(want), "{text}: {e}");
        }
    }
}
