//! A haproxy.cfg's sections built into a policy: stick tables, ACLs, `http-request`
//! rules and their conditions.

use std::collections::HashMap;

use super::error::{HaproxyCfgError, NotReplayed, Unsupported};
use super::fetch::{
    ScWhat, base_name, call, call_arg, cond_tables, fetch_match, sc_fetch, size, split_top,
    thresholds, time_ms, track_key,
};
use super::words::{Section, Stmt};
use crate::rate::Rate;
use crate::replay::{
    Action, Algorithm, Cmp, Cond, Dialect, Frontend, KeySpec, LimitRef, LimitSpec, Matcher, Policy,
    Program, StickTable, Term, Test, TrackKey, Zone, ZoneId,
};

/// A haproxy.cfg read into a policy.
pub struct HaproxyCfg {
    /// The candidate.
    pub policy: Policy,
    /// Statements left out (they may change decisions).
    pub unsupported: Vec<Unsupported>,
    /// Frontends with a replayed limiter, in file order.
    pub frontends: Vec<String>,
}

/// A frontend's name, the tables it tracks, and its deny lines with the tables each reads.
pub(super) type FrontendRules = (String, Vec<ZoneId>, Vec<(usize, Vec<ZoneId>)>);

/// A table as declared.
pub(super) struct TableDecl {
    pub(super) name: String,
    pub(super) period: Option<u32>,
    pub(super) counts: bool,
    pub(super) expire: u64,
}

pub(super) struct Builder {
    pub(super) file: String,
    pub(super) unsupported: Vec<Unsupported>,
}

/// Stream-level statements that cannot change what is counted or refused.
pub(super) const HARMLESS_HTTP_REQUEST: &[&str] = &[
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
    pub(super) fn err(&self, line: usize, message: impl Into<String>) -> HaproxyCfgError {
        HaproxyCfgError {
            file: self.file.clone(),
            line,
            message: message.into(),
        }
    }

    pub(super) fn skip(&mut self, s: &Stmt, why: impl Into<String>) {
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

    pub(super) fn build(
        mut self,
        sections: &[Section],
        name: &str,
    ) -> Result<HaproxyCfg, HaproxyCfgError> {
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
            let mut acls: HashMap<String, Result<Vec<Test>, NotReplayed>> = HashMap::new();
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

    pub(super) fn table(&mut self, s: &Stmt, name: &str) -> Result<TableDecl, HaproxyCfgError> {
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
    pub(super) fn http_request(
        &mut self,
        s: &Stmt,
        acls: &HashMap<String, Result<Vec<Test>, NotReplayed>>,
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
                    self.skip(s, why.to_string());
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
                    self.skip(s, why.to_string());
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
    pub(super) fn cond(
        &mut self,
        w: &[String],
        line: usize,
        acls: &HashMap<String, Result<Vec<Test>, NotReplayed>>,
        program: &mut Program,
    ) -> Result<Result<Cond, NotReplayed>, HaproxyCfgError> {
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
                            Some(Err(why)) => {
                                return Ok(Err(NotReplayed::Acl {
                                    name: n.to_string(),
                                    why: Box::new(why.clone()),
                                }));
                            }
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
    pub(super) fn test(
        &mut self,
        w: &[String],
        line: usize,
        program: &mut Program,
    ) -> Result<Result<Test, NotReplayed>, HaproxyCfgError> {
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
                        return Ok(Err(NotReplayed::FromFile {
                            fetch: fetch.to_string(),
                            flag: x.to_string(),
                        }));
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
                    return Ok(Err(NotReplayed::Range {
                        fetch: fetch.to_string(),
                        value: v.to_string(),
                    }));
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
            return Ok(Err(NotReplayed::OtherTable(fetch.to_string())));
        }
        if fetch.starts_with("sc") || fetch.starts_with("src_") || fetch.starts_with("table_") {
            return Ok(Err(NotReplayed::Fetch(fetch.to_string())));
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
